"""ONNX elementwise, activation and comparison ops: tables, one line per op."""

from __future__ import annotations

from . import converter

# ONNX op -> Relay op, for ops that map one to one (same inputs, no attributes)
_UNARY = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Neg": "negative", "Abs": "abs", "Erf": "erf", "Not": "logical_not", "Floor": "floor", "Ceil": "ceil"}
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power",
           "Equal": "equal", "Less": "less", "Greater": "greater", "And": "logical_and", "Or": "logical_or"}


def _unary(relay_op: str):
    return lambda ctx, inputs, attrs: ctx.call(relay_op, inputs[0])


def _binary(relay_op: str):
    return lambda ctx, inputs, attrs: ctx.call(relay_op, inputs[0], inputs[1])


for _onnx, _relay in _UNARY.items():
    converter(_onnx, 1)(_unary(_relay))
for _onnx, _relay in _BINARY.items():
    converter(_onnx, 1)(_binary(_relay))
