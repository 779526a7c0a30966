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


def _centered(ctx, q, zero_point, per_axis_at=None):
    """int32(q) - int32(zero_point); a per-channel zero point is laid along `per_axis_at`."""
    centered = ctx.call("cast", q, dtype="int32")
    if zero_point is None:
        return centered
    zp = ctx.call("cast", zero_point, dtype="int32")
    shape = ctx.shape_of(zp)
    if per_axis_at is not None and shape and shape[0] != 1:
        rank = len(ctx.shape_of(q))
        zp = ctx.call("reshape", zp, newshape=tuple(-1 if i == per_axis_at else 1 for i in range(rank)))
    elif shape:
        zp = ctx.call("reshape", zp, newshape=())
    return ctx.call("subtract", centered, zp)


def _requantize(ctx, acc, scale, y_scale, y_zero_point, out_dtype: str):
    """onnx's requantisation of an int32 accumulator: round_half_to_even(acc * scale / y_scale)
    + zero point, saturated to the output type."""
    factor = ctx.call("divide", ctx.call("cast", scale, dtype="float32"), ctx.call("cast", y_scale, dtype="float32"))
    y = round_half_to_even(ctx, ctx.call("multiply", ctx.call("cast", acc, dtype="float32"), factor))
    if y_zero_point is not None:
        y = ctx.call("add", y, ctx.call("cast", y_zero_point, dtype="float32"))
    lo, hi = _RANGES[out_dtype]
    return ctx.call("cast", ctx.call("clip", y, a_min=float(lo), a_max=float(hi)), dtype=out_dtype)


def _scalar_or_row(ctx, x):
    shape = ctx.shape_of(x)
    return ctx.call("reshape", x, newshape=()) if shape and all(d == 1 for d in shape) else x


@converter("QLinearMatMul", 10, 21)
def _qlinear_matmul(ctx, inputs, attrs):
    """int32 matmul of the centred operands, requantised (onnx's reference arithmetic)."""
    from .nn import _matmul

    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = inputs
    acc = _matmul(ctx, [_centered(ctx, a, a_zp), _centered(ctx, b, b_zp)], {})
    scale = ctx.call("multiply", _scalar_or_row(ctx, ctx.call("cast", a_scale, dtype="float32")),
                     _scalar_or_row(ctx, ctx.call("cast", b_scale, dtype="float32")))
    return _requantize(ctx, acc, scale, _scalar_or_row(ctx, y_scale), y_zp, ctx.type_of(y_zp).dtype)


@converter("QLinearConv", 10)
def _qlinear_conv(ctx, inputs, attrs):
    """int32 convolution of the centred input and weights (+ the int32 bias), requantised."""
    from .nn import _conv

    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = inputs[:8]
    bias = inputs[8] if len(inputs) > 8 else None
    acc = _conv(ctx, [_centered(ctx, x, x_zp), _centered(ctx, w, w_zp, per_axis_at=0), bias], attrs)
    w_scale = ctx.call("cast", w_scale, dtype="float32")
    if ctx.shape_of(w_scale) and ctx.shape_of(w_scale)[0] != 1:  # per output channel (axis 1 of any rank)
        w_scale = ctx.call("reshape", w_scale, newshape=(-1,) + (1,) * (len(ctx.shape_of(acc)) - 2))
    scale = ctx.call("multiply", _scalar_or_row(ctx, ctx.call("cast", x_scale, dtype="float32")),
                     _scalar_or_row(ctx, w_scale))
    return _requantize(ctx, acc, scale, _scalar_or_row(ctx, y_scale), y_zp, ctx.type_of(y_zp).dtype)


@converter("ConvInteger", 10)
def _conv_integer(ctx, inputs, attrs):
    """The int32 convolution of the centred input and weights."""
    from .nn import _conv

    x, w = inputs[0], inputs[1]
    x_zp = inputs[2] if len(inputs) > 2 else None
    w_zp = inputs[3] if len(inputs) > 3 else None
    return _conv(ctx, [_centered(ctx, x, x_zp), _centered(ctx, w, w_zp, per_axis_at=0)], attrs)
