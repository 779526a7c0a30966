"""ONNX tensor ops: shapes, reshapes, indexing, concatenation, casts, constants."""

from __future__ import annotations

from . import converter


@converter("Identity", 1)
def _identity(ctx, inputs, attrs):
    return inputs[0]
