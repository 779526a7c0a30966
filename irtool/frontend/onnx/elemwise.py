"""ONNX elementwise, activation, comparison and reduction ops: tables, one line per op,
and small converters for the ops with attributes or no single Relay op.

Semantics follow the ONNX specs (and onnxruntime, the reference tests compare with):

- before opset 7 the binary ops broadcast only with `broadcast=1`, aligning the second
  input at `axis` of the first (legacy unidirectional broadcasting); from 7 on NumPy's;
- constants the converters add (HardSigmoid's alpha, Elu's 1, ...) take the input's dtype;
- Clip: `min`/`max` attributes before 11 (default -/+FLT_MAX), optional inputs from 11;
  the result is `min(max(x, lo), hi)`, so `lo > hi` gives `hi` as ONNX says;
- Reduce*: `axes` attribute, or (ReduceSum from 13, the others from 18) an optional input
  with `noop_with_empty_axes`; `keepdims` defaults to 1;
- ArgMax/ArgMin return int64 (Relay's argmax/argmin give int32, so they are cast);
- Xor is `logical_xor` (legacy broadcasting before 7, like And/Or); BitShift is
  `left_shift`/`right_shift` by `direction`; the Bitwise* ops map one to one.
"""

from __future__ import annotations

import numpy as np

from ...ir.types import ANY
from . import converter

# ONNX op -> (Relay op, the opset the ONNX op starts at), for ops that map one to one
_UNARY = {"Relu": ("nn.relu", 1), "Sigmoid": ("sigmoid", 1), "Tanh": ("tanh", 1), "Exp": ("exp", 1),
          "Log": ("log", 1), "Sqrt": ("sqrt", 1), "Neg": ("negative", 1), "Abs": ("abs", 1), "Erf": ("erf", 9),
          "Not": ("logical_not", 1), "Floor": ("floor", 1), "Ceil": ("ceil", 1), "Sin": ("sin", 7),
          "Cos": ("cos", 7), "Tan": ("tan", 7), "Asin": ("asin", 7), "Acos": ("acos", 7), "Atan": ("atan", 7),
          "Sinh": ("sinh", 9), "Cosh": ("cosh", 9), "Asinh": ("asinh", 9), "Acosh": ("acosh", 9),
          "Atanh": ("atanh", 9), "BitwiseNot": ("bitwise_not", 18)}
# binary ops: legacy `broadcast`/`axis` attributes before opset 7, NumPy broadcasting from 7
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide",
           "Equal": "equal", "Less": "less", "Greater": "greater", "And": "logical_and", "Or": "logical_or",
           "Xor": "logical_xor"}
# ops from a later opset on, NumPy broadcasting only: ONNX op -> (Relay op, first opset)
_BINARY_LATER = {"GreaterOrEqual": ("greater_equal", 12), "LessOrEqual": ("less_equal", 12),
                 "BitwiseAnd": ("bitwise_and", 18), "BitwiseOr": ("bitwise_or", 18),
                 "BitwiseXor": ("bitwise_xor", 18)}
# variadic ops folded pairwise (NumPy broadcasting from opset 8, equal shapes before)
_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum"}
# ONNX reduction -> (Relay op, the opset from which `axes` is an input)
_REDUCE = {"ReduceSum": ("sum", 13), "ReduceMean": ("mean", 18), "ReduceMax": ("max", 18),
           "ReduceMin": ("min", 18), "ReduceProd": ("prod", 18)}

_FLT_MAX = 3.4028234663852886e38


# ----------------------------------------------------------------------------- helpers


def _dtype(ctx, x) -> str:
    return ctx.type_of(x).dtype


def _scalar(ctx, value, like):
    """A scalar constant in `like`'s dtype."""
    return ctx.const(value, _dtype(ctx, like))


def _legacy_broadcast(ctx, a, b, attrs):
    """Before opset 7: with `broadcast=1`, `b`'s dimensions line up with `a`'s from `axis`
    (default: the trailing ones), so `b` gets trailing 1s to broadcast the NumPy way."""
    if not attrs.get("broadcast", 0):
        return b
    rank_a, shape_b = len(ctx.shape_of(a)), ctx.shape_of(b)
    axis = attrs.get("axis", rank_a - len(shape_b))
    if axis < 0:
        axis += rank_a
    trailing = rank_a - axis - len(shape_b)
    if axis < 0 or trailing < 0:
        raise ctx.error(f"cannot broadcast a rank-{len(shape_b)} tensor at axis {attrs.get('axis')} "
                        f"of a rank-{rank_a} tensor")
    if trailing == 0 or not shape_b:
        return b
    return ctx.call("expand_dims", b, axis=len(shape_b), num_newaxis=trailing)


def _unary(relay_op: str):
    return lambda ctx, inputs, attrs: ctx.call(relay_op, inputs[0])


def _binary_legacy(relay_op: str):
    def convert(ctx, inputs, attrs):
        a, b = inputs[0], inputs[1]
        return ctx.call(relay_op, a, _legacy_broadcast(ctx, a, b, attrs))
    return convert


def _binary(relay_op: str):
    return lambda ctx, inputs, attrs: ctx.call(relay_op, inputs[0], inputs[1])


def _variadic(relay_op: str):
    def convert(ctx, inputs, attrs):
        args = [x for x in inputs if x is not None]
        if not args:
            raise ctx.error("needs at least one input")
        out = args[0]
        for x in args[1:]:
            out = ctx.call(relay_op, out, x)
        return out
    return convert


for _onnx, (_relay, _since) in _UNARY.items():
    converter(_onnx, _since)(_unary(_relay))
for _onnx, _relay in _BINARY.items():
    converter(_onnx, 1)(_binary_legacy(_relay))
    converter(_onnx, 7)(_binary(_relay))
for _onnx, (_relay, _since) in _BINARY_LATER.items():
    converter(_onnx, _since)(_binary(_relay))
for _onnx, _relay in _VARIADIC.items():
    converter(_onnx, 1)(_variadic(_relay))


# ----------------------------------------------------------------------------- arithmetic


@converter("Mod", 10)
def _mod(ctx, inputs, attrs):
    """`fmod=0`: the sign of the divisor (Relay's floor_mod, NumPy's mod); `fmod=1`: the
    sign of the dividend (Relay's mod, C's fmod), as TVM's converter maps them. Floats with
    fmod=0 (which the spec forbids, onnxruntime and onnx's tests compute as NumPy's mod):
    C's fmod moved into the divisor's sign, where TVM's floor_mod, a - floor(a / b) * b,
    gives nan for an infinite divisor and loses the sign of a zero."""
    a, b = inputs
    if attrs.get("fmod", 0):
        return ctx.call("mod", a, b)
    if not _dtype(ctx, a).startswith("float"):
        return ctx.call("floor_mod", a, b)
    r = ctx.call("mod", a, b)
    zero = ctx.const(0, _dtype(ctx, a))
    signs_differ = ctx.call("not_equal", ctx.call("less", r, zero), ctx.call("less", b, zero))
    move = ctx.call("logical_and", ctx.call("not_equal", r, zero), signs_differ)
    return ctx.call("where", move, ctx.call("add", r, b), r)


def _pow(ctx, base, exponent):
    """The result has the base's dtype; an exponent of another dtype (allowed from opset
    12) is cast, or for an integer base and a float exponent the power is computed in the
    exponent's float dtype and cast back, as onnxruntime does."""
    bt, et = _dtype(ctx, base), _dtype(ctx, exponent)
    if bt == et:
        return ctx.call("power", base, exponent)
    if et.startswith(("float", "bfloat")) and not bt.startswith(("float", "bfloat")):
        out = ctx.call("power", ctx.call("cast", base, dtype=et), exponent)
        return ctx.call("cast", out, dtype=bt)
    return ctx.call("power", base, ctx.call("cast", exponent, dtype=bt))


@converter("Pow", 1)
def _pow_v1(ctx, inputs, attrs):
    return _pow(ctx, inputs[0], _legacy_broadcast(ctx, inputs[0], inputs[1], attrs))


@converter("Pow", 7)
def _pow_v7(ctx, inputs, attrs):
    return _pow(ctx, inputs[0], inputs[1])


@converter("Reciprocal", 1)
def _reciprocal(ctx, inputs, attrs):
    x = inputs[0]
    return ctx.call("divide", _scalar(ctx, 1, x), x)


@converter("Mean", 1)
def _mean(ctx, inputs, attrs):
    args = [x for x in inputs if x is not None]
    total = _variadic("add")(ctx, args, attrs)
    if len(args) == 1:
        return total
    return ctx.call("divide", total, _scalar(ctx, len(args), total))


# ----------------------------------------------------------------------------- activations


def _hard_sigmoid(ctx, x, alpha: float, beta: float):
    y = ctx.call("add", ctx.call("multiply", x, _scalar(ctx, alpha, x)), _scalar(ctx, beta, x))
    return ctx.call("clip", y, a_min=0.0, a_max=1.0)


@converter("HardSigmoid", 1)
def _hardsigmoid(ctx, inputs, attrs):
    return _hard_sigmoid(ctx, inputs[0], attrs.get("alpha", 0.2), attrs.get("beta", 0.5))


@converter("HardSwish", 14)
def _hardswish(ctx, inputs, attrs):
    x = inputs[0]
    return ctx.call("multiply", x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))


@converter("LeakyRelu", 1)
def _leaky_relu(ctx, inputs, attrs):
    return ctx.call("nn.leaky_relu", inputs[0], alpha=float(attrs.get("alpha", 0.01)))


@converter("PRelu", 1)
def _prelu(ctx, inputs, attrs):
    """`x < 0 ? slope * x : x`, `slope` broadcasting to `x` (unidirectionally from opset 7)."""
    x, slope = inputs
    zero = _scalar(ctx, 0, x)
    return ctx.call("where", ctx.call("less", x, zero), ctx.call("multiply", x, slope), x)


@converter("Elu", 1)
def _elu(ctx, inputs, attrs):
    x = inputs[0]
    alpha = _scalar(ctx, attrs.get("alpha", 1.0), x)
    negative = ctx.call("multiply", alpha, ctx.call("subtract", ctx.call("exp", x), _scalar(ctx, 1, x)))
    return ctx.call("where", ctx.call("less", x, _scalar(ctx, 0, x)), negative, x)


@converter("Softplus", 1)
def _softplus(ctx, inputs, attrs):
    """`log(exp(x) + 1)`, computed as `relu(x) + log(exp(-|x|) + 1)` so large `x` does
    not overflow (onnxruntime's kernel splits on the sign the same way)."""
    x = inputs[0]
    tail = ctx.call("log", ctx.call("add", ctx.call("exp", ctx.call("negative", ctx.call("abs", x))),
                                    _scalar(ctx, 1, x)))
    return ctx.call("add", ctx.call("nn.relu", x), tail)


def _clip(ctx, x, lo, hi):
    """`min(max(x, lo), hi)`; `lo`/`hi` are Python numbers, tensors, or None (no bound).
    Float data with constant bounds `lo <= hi` is Relay's `clip`."""
    import numpy as np

    dtype = _dtype(ctx, x)
    lo_v = lo if lo is None or isinstance(lo, float | int) else ctx.value(lo)
    hi_v = hi if hi is None or isinstance(hi, float | int) else ctx.value(hi)
    is_float = dtype.startswith(("float", "bfloat"))
    if is_float and (lo is None or lo_v is not None) and (hi is None or hi_v is not None):
        a_min = -np.inf if lo is None else float(np.asarray(lo_v).reshape(()))
        a_max = np.inf if hi is None else float(np.asarray(hi_v).reshape(()))
        if a_min <= a_max:
            return ctx.call("clip", x, a_min=a_min, a_max=a_max)
    out = x
    if lo is not None:
        out = ctx.call("maximum", out, _scalar(ctx, lo, x) if lo_v is lo else _as(ctx, lo, dtype))
    if hi is not None:
        out = ctx.call("minimum", out, _scalar(ctx, hi, x) if hi_v is hi else _as(ctx, hi, dtype))
    return out


def _as(ctx, x, dtype: str):
    return x if _dtype(ctx, x) == dtype else ctx.call("cast", x, dtype=dtype)


@converter("Clip", 1, 6)
def _clip_v1(ctx, inputs, attrs):
    return _clip(ctx, inputs[0], float(attrs.get("min", -_FLT_MAX)), float(attrs.get("max", _FLT_MAX)))


@converter("Clip", 11)
def _clip_v11(ctx, inputs, attrs):
    lo = inputs[1] if len(inputs) > 1 else None
    hi = inputs[2] if len(inputs) > 2 else None
    for bound in (lo, hi):
        if bound is not None and ctx.shape_of(bound) not in ((), (1,)):
            raise ctx.error(f"Clip bounds must be scalars, got shape {ctx.shape_of(bound)}")
    return _clip(ctx, inputs[0], lo, hi)


# ----------------------------------------------------------------------------- selection
# (Cast lives in `tensor`)


@converter("Where", 9)
def _where(ctx, inputs, attrs):
    return ctx.call("where", *inputs)


# ----------------------------------------------------------------------------- reductions


def _reduce(ctx, relay_op: str, x, axes, keepdims: int, noop_with_empty_axes: int = 0):
    if not axes:
        if noop_with_empty_axes:
            return x
        axes = None
    else:
        axes = tuple(int(a) for a in axes)
    if relay_op in ("max", "min"):
        empty = _empty_extremum(ctx, relay_op, x, axes, keepdims)
        if empty is not None:
            return empty
    y = ctx.call(relay_op, x, axis=axes, keepdims=bool(keepdims))
    dtype = ctx.type_of(x).dtype
    if relay_op in ("max", "min") and dtype in ("float16", "float32", "float64"):
        # Relay's max (TOPI's) starts from the lowest finite float, so a set of -inf has the
        # max -3.4e38 where ONNX's is -inf (Attention's expansion finds a fully masked row by
        # it); min likewise with +inf
        inf = ctx.const(-np.inf if relay_op == "max" else np.inf, dtype)
        other = ctx.call("cast", ctx.call("not_equal", x, inf), dtype="int8")
        any_other = ctx.call("cast", ctx.call("max", other, axis=axes, keepdims=bool(keepdims)), dtype="bool")
        y = ctx.call("where", any_other, y, inf)
    return y


def _empty_extremum(ctx, relay_op: str, x, axes, keepdims: int):
    """ReduceMax/ReduceMin over a statically empty set: onnx's identity value (-inf/+inf
    for floats, the type's lowest/highest value for integers, False/True for bool) in the
    output shape, as a constant; None when the reduced set is not known to be empty."""
    shape = ctx.shape_of(x)
    ndim = len(shape)
    reduced = set(range(ndim)) if axes is None else {a + ndim if a < 0 else a for a in axes}
    if ANY in shape or not any(shape[a] == 0 for a in reduced):
        return None
    out = [1 if a in reduced else d for a, d in enumerate(shape) if keepdims or a not in reduced]
    dtype = ctx.type_of(x).dtype
    if dtype == "bool":
        value = relay_op == "min"
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        value = info.min if relay_op == "max" else info.max
    elif dtype in ("float16", "float32", "float64"):
        value = -np.inf if relay_op == "max" else np.inf
    else:
        return None
    return ctx.const(np.full(out, value, dtype=dtype), dtype)


def _reduce_attr(relay_op: str):
    def convert(ctx, inputs, attrs):
        return _reduce(ctx, relay_op, inputs[0], attrs.get("axes"), attrs.get("keepdims", 1))
    return convert


def _reduce_input(relay_op: str):
    def convert(ctx, inputs, attrs):
        axes_input = inputs[1] if len(inputs) > 1 else None
        axes = None if axes_input is None else ctx.required_value(axes_input, "the `axes` input").reshape(-1)
        return _reduce(ctx, relay_op, inputs[0], None if axes is None else axes.tolist(),
                       attrs.get("keepdims", 1), attrs.get("noop_with_empty_axes", 0))
    return convert


for _onnx, (_relay, _since) in _REDUCE.items():
    converter(_onnx, 1)(_reduce_attr(_relay))
    converter(_onnx, _since)(_reduce_input(_relay))


def _logsumexp(ctx, x, axes, keepdims: int, noop_with_empty_axes: int = 0):
    """log(sum(exp(x - max))) + max, as TOPI's logsumexp keeps exp from overflowing."""
    if not axes and noop_with_empty_axes:
        return x
    axes = tuple(int(a) for a in axes) if axes else None
    peak = ctx.call("max", x, axis=axes, keepdims=True)
    total = ctx.call("sum", ctx.call("exp", ctx.call("subtract", x, peak)), axis=axes, keepdims=bool(keepdims))
    return ctx.call("add", ctx.call("log", total), peak if keepdims else ctx.call("max", x, axis=axes))


# ONNX reductions that TVM's converter composes: (before the sum, after it), as v0.19 does
_SUM_COMPOSED = {
    "ReduceL1": (lambda ctx, x: ctx.call("abs", x), None),
    "ReduceL2": (lambda ctx, x: ctx.call("multiply", x, x), lambda ctx, y: ctx.call("sqrt", y)),
    "ReduceSumSquare": (lambda ctx, x: ctx.call("multiply", x, x), None),
    "ReduceLogSum": (None, lambda ctx, y: ctx.call("log", y)),
}


def _composed(before, after, from_input: bool):
    def convert(ctx, inputs, attrs):
        x = inputs[0]
        if not ctx.shape_of(x):  # a scalar: as TVM, promoted to 1-D
            x = ctx.call("expand_dims", x, axis=0)
        if from_input:
            axes_input = inputs[1] if len(inputs) > 1 else None
            axes = None if axes_input is None else ctx.required_value(axes_input, "the `axes` input").reshape(-1)
            axes, noop = (None if axes is None else axes.tolist()), attrs.get("noop_with_empty_axes", 0)
        else:
            axes, noop = attrs.get("axes"), 0
        if before is None and after is None:
            return _logsumexp(ctx, x, axes, attrs.get("keepdims", 1), noop)
        y = _reduce(ctx, "sum", before(ctx, x) if before else x, axes, attrs.get("keepdims", 1), noop)
        return after(ctx, y) if after else y
    return convert


for _onnx, (_before, _after) in {**_SUM_COMPOSED, "ReduceLogSumExp": (None, None)}.items():
    converter(_onnx, 1)(_composed(_before, _after, from_input=False))
    converter(_onnx, 18)(_composed(_before, _after, from_input=True))


@converter("Selu", 1, 6)
def _selu(ctx, inputs, attrs):
    """gamma * (relu(x) - alpha * relu(1 - exp(x))), TVM's composition."""
    x = inputs[0]
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    negative = ctx.call("multiply", _scalar(ctx, -alpha, x),
                        ctx.call("nn.relu", ctx.call("subtract", _scalar(ctx, 1, x), ctx.call("exp", x))))
    return ctx.call("multiply", _scalar(ctx, gamma, x), ctx.call("add", negative, ctx.call("nn.relu", x)))


@converter("Celu", 12)
def _celu(ctx, inputs, attrs):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = inputs[0]
    alpha, zero = _scalar(ctx, attrs.get("alpha", 1.0), x), _scalar(ctx, 0, x)
    tail = ctx.call("multiply", alpha, ctx.call("subtract", ctx.call("exp", ctx.call("divide", x, alpha)),
                                                _scalar(ctx, 1, x)))
    return ctx.call("add", ctx.call("maximum", zero, x), ctx.call("minimum", zero, tail))


@converter("ThresholdedRelu", 10)
def _thresholded_relu(ctx, inputs, attrs):
    """x where x > alpha, else 0."""
    x = inputs[0]
    mask = ctx.call("cast", ctx.call("greater", x, _scalar(ctx, attrs.get("alpha", 1.0), x)), dtype=_dtype(ctx, x))
    return ctx.call("multiply", x, mask)


@converter("Softsign", 1)
def _softsign(ctx, inputs, attrs):
    x = inputs[0]
    return ctx.call("divide", x, ctx.call("add", _scalar(ctx, 1, x), ctx.call("abs", x)))


@converter("Shrink", 9)
def _shrink(ctx, inputs, attrs):
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    x = inputs[0]
    lambd, bias = _scalar(ctx, attrs.get("lambd", 0.5), x), _scalar(ctx, attrs.get("bias", 0.0), x)
    zeros = ctx.call("zeros_like", x)
    below = ctx.call("where", ctx.call("less", x, ctx.call("negative", lambd)), ctx.call("add", x, bias), zeros)
    above = ctx.call("where", ctx.call("greater", x, lambd), ctx.call("subtract", x, bias), zeros)
    return ctx.call("add", below, above)


@converter("Sign", 9)
def _sign(ctx, inputs, attrs):
    return ctx.call("sign", inputs[0])


def _arg_reduce(relay_op: str):
    def convert(ctx, inputs, attrs):
        out = ctx.call(relay_op, inputs[0], axis=(int(attrs.get("axis", 0)),), keepdims=bool(attrs.get("keepdims", 1)),
                       select_last_index=bool(attrs.get("select_last_index", 0)))
        return ctx.call("cast", out, dtype="int64")
    return convert


converter("ArgMax", 1)(_arg_reduce("argmax"))
converter("ArgMin", 1)(_arg_reduce("argmin"))


@converter("BitShift", 11)
def _bit_shift(ctx, inputs, attrs):
    direction = attrs.get("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"BitShift direction must be LEFT or RIGHT, got {direction!r}")
    return ctx.call("left_shift" if direction == "LEFT" else "right_shift", inputs[0], inputs[1])


@converter("Mish", 18)
def _mish(ctx, inputs, attrs):
    """x * tanh(log(1 + exp(x))), as TVM's converter computes it."""
    x = inputs[0]
    return ctx.call("multiply", x, ctx.call("tanh", ctx.call("log", ctx.call("add", _scalar(ctx, 1, x),
                                                                             ctx.call("exp", x)))))


@converter("Gelu", 20)
def _gelu(ctx, inputs, attrs):
    """0.5 x (1 + erf(x / sqrt 2)); `approximate="tanh"`: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    x = inputs[0]
    if attrs.get("approximate", "none") == "tanh":
        cube = ctx.call("multiply", ctx.call("multiply", x, x), x)
        inner = ctx.call("multiply", _scalar(ctx, (2 / np.pi) ** 0.5, x),
                         ctx.call("add", x, ctx.call("multiply", _scalar(ctx, 0.044715, x), cube)))
        shape = ctx.call("tanh", inner)
    else:
        shape = ctx.call("erf", ctx.call("divide", x, _scalar(ctx, 2 ** 0.5, x)))
    return ctx.call("multiply", ctx.call("multiply", _scalar(ctx, 0.5, x), x),
                    ctx.call("add", _scalar(ctx, 1, x), shape))


@converter("LpNormalization", 1)
def _lp_normalization(ctx, inputs, attrs):
    """x / ||x||_p along `axis` (p = 1 or 2); 0 where the norm is 0, as onnx defines it."""
    x, p = inputs[0], int(attrs.get("p", 2))
    axis = (int(attrs.get("axis", -1)),)
    if p == 1:
        norm = ctx.call("sum", ctx.call("abs", x), axis=axis, keepdims=True)
    elif p == 2:
        norm = ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=axis, keepdims=True))
    else:
        raise ctx.error(f"LpNormalization p must be 1 or 2, got {p}")
    zero = _scalar(ctx, 0, x)
    return ctx.call("where", ctx.call("equal", norm, zero), ctx.call("zeros_like", x), ctx.call("divide", x, norm))


def _hardmax_along(ctx, x, axis: int):
    """1 at the first maximum along `axis`, 0 elsewhere: argmax compared with the indices."""
    shape = ctx.shape_of(x)
    if shape[axis] is ANY:
        raise ctx.error("Hardmax needs a static size along its axis")
    first = ctx.call("argmax", x, axis=(axis,), keepdims=True)  # int32, ties: the first index
    positions = np.arange(shape[axis], dtype="int32").reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return ctx.call("cast", ctx.call("equal", first, ctx.const(positions, "int32")), dtype=_dtype(ctx, x))


@converter("Hardmax", 1, 13)
def _hardmax(ctx, inputs, attrs):
    """Before opset 13 the input is coerced to 2-D at `axis` (default 1), as TVM v0.19 does;
    from 13 on, the maximum is taken along `axis` alone (default -1), as onnx defines it."""
    x = inputs[0]
    shape = ctx.shape_of(x)
    rank = len(shape)
    axis = int(attrs.get("axis", -1 if ctx.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {attrs.get('axis')} is out of range for rank {rank}")
    if ctx.opset >= 13:
        return _hardmax_along(ctx, x, axis)
    if ANY in shape:
        raise ctx.error("Hardmax before opset 13 needs a static shape")
    rows = int(np.prod(shape[:axis], dtype=np.int64))
    flat = ctx.call("reshape", x, newshape=(rows, -1))
    return ctx.call("reshape", _hardmax_along(ctx, flat, 1), newshape=tuple(shape))


@converter("Swish", 24)
def _swish(ctx, inputs, attrs):
    """x * sigmoid(alpha * x)."""
    x = inputs[0]
    alpha = float(attrs.get("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.call("multiply", _scalar(ctx, alpha, x), x)
    return ctx.call("multiply", x, ctx.call("sigmoid", scaled))
