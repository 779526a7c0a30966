"""Frontends: importers from other formats into irtool's IR."""

from __future__ import annotations


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True):
    """TVM's `relay.frontend.from_onnx`: an ONNX model -> `(IRModule, params)`."""
    from .onnx import from_onnx as _from_onnx

    return _from_onnx(model, shape=shape, dtype=dtype, opset=opset, freeze_params=freeze_params)


__all__ = ["from_onnx"]
