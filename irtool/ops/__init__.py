"""The operator registry (DESIGN §4). `lookup("nn.conv2d")` returns the `OpDef`."""

from .registry import (
                       REQUIRED,
                       AttrError,
                       AttrSpec,
                       OpDef,
                       OpPattern,
                       TypeRelError,
                       all_ops,
                       get,
                       lookup,
                       make_call,
                       register,
)

__all__ = ["REQUIRED", "AttrError", "AttrSpec", "OpDef", "OpPattern", "TypeRelError", "all_ops", "get", "lookup",
           "make_call", "register"]
