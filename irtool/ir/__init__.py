"""The IR core: Relay expressions and types, the module, structural equality, visitors.

Names are loaded on first use (`from irtool.ir import Call` works as usual) so that
importing one submodule does not import them all.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "expr": ("Attrs", "Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let", "Op", "Tuple",
             "TupleGetItem", "TypedScalar", "Var"),
    "module": ("IRModule",),
    "structural": ("structural_equal", "structural_hash"),
    "types": ("ANY", "FuncType", "IncompleteType", "TensorType", "TupleType", "Type", "type_equal"),
    "visitor": ("ExprMutator", "ExprVisitor", "post_order", "sub_exprs"),
}
_LAZY = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'irtool.ir' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"irtool.ir.{module}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
