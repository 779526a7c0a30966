"""onnxruntime's quantised contrib ops (domain `com.microsoft`): QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearAveragePool,
QLinearGlobalAveragePool, QLinearConcat, QGemm and QAttention.

As TVM v0.19 converts them (and as onnxruntime documents their arithmetic), each operand
is dequantised to float32 (`(x - zero_point) * scale`), the float op is computed, and the
result quantised again (`saturate(round_half_to_even(y / y_scale) + y_zero_point)`), with
the plain Relay arithmetic of `quantize.py` rather than TVM's `qnn` dialect. QGemm is the
int32 product of the centred operands (+ the int32 bias C), scaled by
`alpha * a_scale * b_scale` and requantised, or returned as float32 without `y_scale`.
The output type is the first operand's (QGemm: `y_zero_point`'s).
"""

from __future__ import annotations

from ...ir.expr import Tuple
from . import converter
from .quantize import _dequantize_linear, _quantize_linear, _requantize, _scalar_or_row

_MS = "com.microsoft"


def _dequant(ctx, x, scale, zero_point):
    return _dequantize_linear(ctx, [x, ctx.call("cast", scale, dtype="float32"), zero_point], {})


def _quant(ctx, y, scale, zero_point, like):
    """`y` quantised to `like`'s type (the zero point given in that type, if absent 0)."""
    dtype = ctx.type_of(like).dtype
    if zero_point is None:
        zero_point = ctx.const(0, dtype)
    elif ctx.type_of(zero_point).dtype != dtype:
        zero_point = ctx.call("cast", zero_point, dtype=dtype)
    return _quantize_linear(ctx, [y, ctx.call("cast", scale, dtype="float32"), zero_point], {})


def _optional(inputs, i):
    return inputs[i] if len(inputs) > i else None


def _binary(relay_op: str):
    def convert(ctx, inputs, attrs):
        a = _dequant(ctx, inputs[0], inputs[1], _optional(inputs, 2))
        b = _dequant(ctx, inputs[3], inputs[4], _optional(inputs, 5))
        return _quant(ctx, ctx.call(relay_op, a, b), inputs[6], _optional(inputs, 7), inputs[0])
    return convert


_BINARY_INPUTS = ("A", "A_scale", None, "B", "B_scale", None, "C_scale")
_UNARY_INPUTS = ("X", "X_scale", None, "Y_scale")
converter("QLinearAdd", 1, domain=_MS, inputs=_BINARY_INPUTS)(_binary("add"))
converter("QLinearMul", 1, domain=_MS, inputs=_BINARY_INPUTS)(_binary("multiply"))


def _unary(compute):
    def convert(ctx, inputs, attrs):
        x = _dequant(ctx, inputs[0], inputs[1], _optional(inputs, 2))
        return _quant(ctx, compute(ctx, x, attrs), inputs[3], _optional(inputs, 4), inputs[0])
    return convert


def _leaky_relu(ctx, x, attrs):
    return ctx.call("nn.leaky_relu", x, alpha=float(attrs.get("alpha", 0.01)))


def _softmax(ctx, x, attrs):
    """Softmax at onnx opset `opset` (the attribute): before 13 the input is flattened to
    2-D at `axis` (default 1), from 13 the softmax is along `axis` (default -1)."""
    from .nn import _softmax as softmax_versions

    old, new = softmax_versions("nn.softmax")
    if int(attrs.get("opset", 13)) < 13:
        return old(ctx, [x], {"axis": attrs.get("axis", 1)})
    return new(ctx, [x], {"axis": attrs.get("axis", -1)})


converter("QLinearSigmoid", 1, domain=_MS, inputs=_UNARY_INPUTS)(_unary(lambda ctx, x, _: ctx.call("sigmoid", x)))
converter("QLinearLeakyRelu", 1, domain=_MS, inputs=_UNARY_INPUTS)(_unary(_leaky_relu))
converter("QLinearSoftmax", 1, domain=_MS, inputs=_UNARY_INPUTS)(_unary(_softmax))


def _channels_first(ctx, x, attrs, compute):
    """`compute` on NC... data; `channels_last=1` inputs are N...C, transposed around it."""
    if not int(attrs.get("channels_last", 0)):
        return compute(x)
    rank = len(ctx.shape_of(x))
    to_first = (0, rank - 1, *range(1, rank - 1))
    to_last = (0, *range(2, rank), 1)
    y = compute(ctx.call("transpose", x, axes=to_first))
    return ctx.call("transpose", y, axes=to_last)


@converter("QLinearAveragePool", 1, domain=_MS, inputs=_UNARY_INPUTS)
def _qlinear_average_pool(ctx, inputs, attrs):
    from .nn import _pool

    pool_attrs = {k: v for k, v in attrs.items() if k != "channels_last"}
    x = _dequant(ctx, inputs[0], inputs[1], _optional(inputs, 2))
    y = _channels_first(ctx, x, attrs, lambda t: _pool(ctx, [t], pool_attrs, "avg"))
    return _quant(ctx, y, inputs[3], _optional(inputs, 4), inputs[0])


@converter("QLinearGlobalAveragePool", 1, domain=_MS, inputs=_UNARY_INPUTS)
def _qlinear_global_average_pool(ctx, inputs, attrs):
    x = _dequant(ctx, inputs[0], inputs[1], _optional(inputs, 2))

    def pool(t):
        rank = len(ctx.shape_of(t))
        if rank < 3:
            raise ctx.error(f"the input must have rank >= 3, got {rank}")
        return ctx.call("mean", t, axis=tuple(range(2, rank)), keepdims=True)

    y = _channels_first(ctx, x, attrs, pool)
    return _quant(ctx, y, inputs[3], _optional(inputs, 4), inputs[0])


@converter("QLinearConcat", 1, domain=_MS, inputs=("Y_scale", None, "X1", "X1_scale"))
def _qlinear_concat(ctx, inputs, attrs):
    if len(inputs) < 5 or (len(inputs) - 2) % 3:
        raise ctx.error("QLinearConcat takes Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples")
    parts = [_dequant(ctx, inputs[i], inputs[i + 1], inputs[i + 2]) for i in range(2, len(inputs), 3)]
    rank = len(ctx.shape_of(parts[0]))
    axis = int(attrs["axis"])
    y = ctx.call("concatenate", ctx.typed(Tuple(parts)), axis=axis + rank if axis < 0 else axis)
    return _quant(ctx, y, inputs[0], inputs[1], inputs[2])


@converter("QGemm", 1, domain=_MS, inputs=("A", "a_scale", None, "B", "b_scale"))
def _qgemm(ctx, inputs, attrs):
    a, a_scale, a_zp, b, b_scale = inputs[:5]
    b_zp = _optional(inputs, 5)
    c, y_scale, y_zp = _optional(inputs, 6), _optional(inputs, 7), _optional(inputs, 8)
    for name, t in (("A", a), ("B", b)):
        if len(ctx.shape_of(t)) != 2:
            raise ctx.error(f"input {name} must be 2-D, got shape {list(ctx.shape_of(t))}")
    if int(attrs.get("transA", 0)):
        a = ctx.call("transpose", a, axes=(1, 0))
    if int(attrs.get("transB", 0)):
        b = ctx.call("transpose", b, axes=(1, 0))
    from .nn import _matmul

    def centred(q, zp):  # a 1-D zero point of B is per column, B's last axis
        y = ctx.call("cast", q, dtype="int32")
        return y if zp is None else ctx.call("subtract", y, _scalar_or_row(ctx, ctx.call("cast", zp, dtype="int32")))

    acc = _matmul(ctx, [centred(a, a_zp), centred(b, b_zp)], {})
    if c is not None:
        acc = ctx.call("add", acc, ctx.call("cast", c, dtype="int32"))
    scale = ctx.call("multiply", _scalar_or_row(ctx, ctx.call("cast", a_scale, dtype="float32")),
                     _scalar_or_row(ctx, ctx.call("cast", b_scale, dtype="float32")))
    alpha = float(attrs.get("alpha", 1.0))
    if alpha != 1.0:
        scale = ctx.call("multiply", scale, ctx.const(alpha, "float32"))
    if y_scale is None:
        return ctx.call("multiply", ctx.call("cast", acc, dtype="float32"), scale)
    out = ctx.type_of(y_zp if y_zp is not None else inputs[0]).dtype
    return _requantize(ctx, acc, scale, _scalar_or_row(ctx, y_scale), y_zp, out)


@converter("QAttention", 1, domain=_MS, inputs=("input", "weight", "bias", "input_scale", "weight_scale"),
           attributes=("num_heads",))
def _qattention(ctx, inputs, attrs):
    """onnxruntime's quantised self-attention: Q, K, V = dequantised (input - zp) (weight - zp)
    + bias, then the float Attention's heads, past, mask and softmax (contrib.py's
    `self_attention`; TVM v0.19 also multiplies the scores by the causal mask)."""
    from .contrib import self_attention
    from .nn import _matmul

    x, weight, bias, x_scale, w_scale = inputs[:5]
    mask, x_zp, w_zp, past = (_optional(inputs, i) for i in (5, 6, 7, 8))

    def centred(q, zp):
        y = ctx.call("cast", q, dtype="int32")
        return y if zp is None else ctx.call("subtract", y, _scalar_or_row(ctx, ctx.call("cast", zp, dtype="int32")))

    shape, wshape = ctx.shape_of(x), ctx.shape_of(weight)
    if len(shape) != 3 or not all(isinstance(d, int) for d in shape) or len(wshape) != 2:
        raise ctx.error(f"QAttention needs a static (batch, sequence, hidden) input and a 2-D weight, "
                        f"got {list(shape)} and {list(wshape)}")
    acc = _matmul(ctx, [centred(x, x_zp), centred(weight, w_zp)], {})
    scale = ctx.call("multiply", _scalar_or_row(ctx, ctx.call("cast", x_scale, dtype="float32")),
                     _scalar_or_row(ctx, ctx.call("cast", w_scale, dtype="float32")))
    qkv = ctx.call("add", ctx.call("multiply", ctx.call("cast", acc, dtype="float32"), scale), bias)
    return self_attention(ctx, qkv, int(attrs["num_heads"]), mask=mask, past=past,
                          unidirectional=bool(attrs.get("unidirectional", 0)))
