"""ONNX quantisation and rounding: QuantizeLinear, DequantizeLinear, Round.

TVM v0.19 converts QuantizeLinear/DequantizeLinear to its `qnn.quantize`/`qnn.dequantize`
ops; here they are composed from plain Relay ops with the arithmetic the onnx spec
defines, which the backend tests check:

    DequantizeLinear   y = (float(x) - float(zero_point)) * scale
    QuantizeLinear     y = saturate(round_half_to_even(x / scale) + zero_point)

`scale`/`zero_point` are a scalar (per tensor), a vector along `axis` (per axis), or, with
`block_size`, `x`'s shape with `axis` divided into blocks (each scale repeated over its
block). Relay's `round` rounds halves away from zero (TVM's `tir.round`); ONNX rounds them
to even, so ties are fixed up: where x is exactly k + 0.5, the result is 2 * round(x / 2).
The float8/int4/int2 types have no irtool dtype.
"""

from __future__ import annotations

import numpy as np

from ...ir.types import ANY
from . import ONNX_DTYPES, converter

_RANGES = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in ("int8", "uint8", "int16", "uint16", "int32")}


def round_half_to_even(ctx, x):
    rounded = ctx.call("round", x)
    dtype = ctx.type_of(x).dtype
    fraction = ctx.call("abs", ctx.call("subtract", x, ctx.call("trunc", x)))
    tie = ctx.call("equal", fraction, ctx.const(0.5, dtype))
    even = ctx.call("multiply", ctx.call("round", ctx.call("multiply", x, ctx.const(0.5, dtype))), ctx.const(2, dtype))
    return ctx.call("where", tie, even, rounded)


@converter("Round", 11)
def _round(ctx, inputs, attrs):
    return round_half_to_even(ctx, inputs[0])


def _along_axis(ctx, param, x, attrs):
    """`param` (scale or zero point) shaped to broadcast against `x`."""
    shape, pshape = ctx.shape_of(x), ctx.shape_of(param)
    if not pshape or all(d == 1 for d in pshape) and len(pshape) <= 1:
        return param
    rank = len(shape)
    axis = int(attrs.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {attrs.get('axis')} is out of range for rank {rank}")
    block = int(attrs.get("block_size", 0))
    if block:
        if len(pshape) != rank or ANY in shape:
            raise ctx.error("blocked quantisation needs a static input and a scale of the input's rank")
        param = ctx.call("repeat", param, repeats=block, axis=axis)
        if ctx.shape_of(param)[axis] != shape[axis]:
            param = ctx.call("strided_slice", param, begin=(0,), end=(shape[axis],), strides=(1,), axes=(axis,))
        return param
    if len(pshape) != 1:
        raise ctx.error(f"a per-axis scale must be 1-D, got shape {list(pshape)}")
    return ctx.call("reshape", param, newshape=tuple(-1 if i == axis else 1 for i in range(rank)))


@converter("DequantizeLinear", 10, 13, 19, 21)
def _dequantize_linear(ctx, inputs, attrs):
    x, scale = inputs[0], inputs[1]
    zero_point = inputs[2] if len(inputs) > 2 else None
    out = ctx.type_of(scale).dtype
    y = ctx.call("cast", x, dtype="float32")
    if zero_point is not None:
        y = ctx.call("subtract", y, _along_axis(ctx, ctx.call("cast", zero_point, dtype="float32"), x, attrs))
    y = ctx.call("multiply", y, _along_axis(ctx, ctx.call("cast", scale, dtype="float32"), x, attrs))
    return y if out == "float32" else ctx.call("cast", y, dtype=out)


@converter("QuantizeLinear", 10, 13, 19, 21)
def _quantize_linear(ctx, inputs, attrs):
    x, scale = inputs[0], inputs[1]
    zero_point = inputs[2] if len(inputs) > 2 else None
    if zero_point is not None:
        out = ctx.type_of(zero_point).dtype
    elif attrs.get("output_dtype"):
        out = ONNX_DTYPES.get(int(attrs["output_dtype"]))
    else:
        out = "uint8"
    if out not in _RANGES:
        raise ctx.error(f"QuantizeLinear to {out} is not supported")
    y = ctx.call("divide", ctx.call("cast", x, dtype="float32"),
                 _along_axis(ctx, ctx.call("cast", scale, dtype="float32"), x, attrs))
    y = round_half_to_even(ctx, y)
    if zero_point is not None:
        y = ctx.call("add", y, _along_axis(ctx, ctx.call("cast", zero_point, dtype="float32"), x, attrs))
    lo, hi = _RANGES[out]
    return ctx.call("cast", ctx.call("clip", y, a_min=float(lo), a_max=float(hi)), dtype=out)
