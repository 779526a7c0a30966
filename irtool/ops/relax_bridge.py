"""What the Relax table (`relax.py`) needs beyond the Relay registry: conversions of Relax
arguments and attributes onto the Relay operator an op reuses (`convert`, where the semantics
differ, as `relax.py` lists), and the relations and references of ops with no Relay
counterpart to reuse (matmul, expand_dims, split, variance, layer_norm, batch_norm, shape_of)."""

from __future__ import annotations

from ..ir import tir
from ..ir.expr import Attrs
from ..ir.types import ANY, TensorType, TupleType
from . import registry
from .common import broadcast_shapes, fmt_shape, fmt_type, np, same_dtype, tensor_arg
from .registry import TypeRelError

# ----------------------------------------------------------------------------- contexts
# `convert` and `post` run on types (inference) and on arrays (evaluation) alike.


class _ScalarType(TensorType):
    """A 0-d tensor type made from a known scalar (arange's start/end/step): keeps the value
    for the relations that read argument values (`needs_values`)."""

    __slots__ = ("value",)

    def __init__(self, value, dtype: str) -> None:
        super().__init__((), dtype)
        self.value = value


class _TypeCtx:
    types = True

    @staticmethod
    def shape(t) -> tuple:
        return tensor_arg([t], 0).shape

    @staticmethod
    def dtype(t) -> str:
        return t.dtype

    @staticmethod
    def scalar(value, dtype: str):
        return _ScalarType(value, dtype)

    @staticmethod
    def reshape(t, shape):
        return TensorType(shape, t.dtype)

    @staticmethod
    def cast(t, dtype: str):
        if isinstance(t, TupleType):
            return TupleType([_TypeCtx.cast(f, dtype) for f in t.fields])
        return TensorType(t.shape, dtype)


class _ValueCtx:
    types = False

    @staticmethod
    def shape(a) -> tuple:
        return tuple(a.shape)

    @staticmethod
    def dtype(a) -> str:
        return str(a.dtype)

    @staticmethod
    def scalar(value, dtype: str):
        with np.errstate(all="ignore"):
            return np.asarray(value).astype(dtype)

    @staticmethod
    def reshape(a, shape):
        return a.reshape(shape)

    @staticmethod
    def cast(a, dtype: str):
        if isinstance(a, tuple):
            return tuple(_ValueCtx.cast(x, dtype) for x in a)
        return a.astype(dtype)


TYPES, VALUES = _TypeCtx(), _ValueCtx()


class ShapeResult:
    """The result type of an operator that returns a shape value (R.shape_of): its values."""

    __slots__ = ("values",)

    def __init__(self, values) -> None:
        self.values = tuple(values)

    def __repr__(self) -> str:
        return f"ShapeResult({list(self.values)})"


# ----------------------------------------------------------------------------- conversions


def _ndim(args, ctx, i: int = 0) -> int:
    return len(ctx.shape(args[i]))


def _reduce(args, at, ctx):
    axis = at["axis"]
    if axis is not None and len(axis) == 0:  # Relax: an empty axis list reduces nothing
        return [args[0]], {"axis": tuple(range(_ndim(args, ctx))) or None, "keepdims": at["keepdims"],
                           "exclude": True}
    return [args[0]], {"axis": axis, "keepdims": at["keepdims"]}


def _arg_reduce(args, at, ctx):
    return [args[0]], {"axis": None if at["axis"] is None else (at["axis"],), "keepdims": at["keepdims"]}


def _to_int64(out, at, ctx):
    return ctx.cast(out, "int64")


def _cast_to_attr(out, at, ctx):
    return ctx.cast(out, at["dtype"]) if at["dtype"] else out


def _output_padding_below_strides(out, at, ctx):
    """TVM 0.27's Relax conv transposes reject an output padding of a stride or more on any
    axis (src/relax/op/nn/convolution.cc); Relay's relation did not check it."""
    if any(p >= s for p, s in zip(at["output_padding"], at["strides"])):
        raise TypeRelError(f"`output_padding` {list(at['output_padding'])} must be less than `strides` "
                           f"{list(at['strides'])} on every axis")
    return out


def _first(args, at, ctx):
    return [args[0]], {}


def _tile(args, at, ctx):
    return [args[0]], {"reps": at["repeats"]}


def _clip(args, at, ctx):
    return [args[0]], {"a_min": float(args[1]), "a_max": float(args[2])}


def _where(args, at, ctx):
    dtype = ctx.dtype(args[0])
    if dtype and dtype != "bool":
        raise TypeRelError(f"the condition must be a bool tensor, got dtype {dtype}")
    return list(args), {}


def _reshape(args, at, ctx):
    return [args[0]], {"newshape": tuple(args[1])}


def _reshape_settle(args: list, sinfo) -> list | None:
    """TVM's ConvertNewShapeToExpr: in a literal new shape (`R.reshape(x, [4, -1])`), -1 and 0
    are stored as the sizes they stand for, which are the result's."""
    from ..ir import relax as rx

    shape = args[1]
    if not isinstance(shape, rx.ShapeExpr) or getattr(sinfo, "shape", None) is None \
            or not isinstance(sinfo.shape, tuple):
        return None
    if not any(getattr(v, "value", v) in (-1, 0) for v in shape.values if isinstance(v, (int, tir.IntImm))):
        return None
    return [args[0], rx.ShapeExpr(sinfo.shape, span=shape.span)]


def _concat(args, at, ctx):
    if at["axis"] is None:
        # TVM: without an axis, every tensor must be 1-D (they are joined along it)
        for t in args[0].fields if isinstance(args[0], TupleType) else args[0]:
            if len(ctx.shape(t)) != 1:
                raise TypeRelError(f"without an axis, concat needs 1-D tensors, got rank {len(ctx.shape(t))}")
        return [args[0]], {"axis": 0}
    return [args[0]], {"axis": at["axis"]}


def _strided_slice(args, at, ctx):
    axes, begin, end = (tuple(int(v) for v in a) for a in args[1:4])
    strides = tuple(int(v) for v in args[4]) if len(args) > 4 and args[4] is not None else (1,) * len(axes)
    ndim = len(args[0].shape)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise TypeRelError(f"strided_slice axes {list(axes)}, begin {list(begin)}, end {list(end)} and "
                           f"strides {list(strides)} must have the same length")
    norm = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise TypeRelError(f"strided_slice axis {a} is out of range for a tensor of rank {ndim}")
        norm.append(a + ndim if a < 0 else a)
    return [args[0]], {"begin": begin, "end": end, "strides": strides, "axes": tuple(norm), "slice_mode": "end"}


def _take(args, at, ctx):
    if at["axis"] is None and _ndim(args, ctx) != 1:
        raise TypeRelError(f"without an axis, take needs a 1-D tensor, got rank {_ndim(args, ctx)}")
    dtype = ctx.dtype(args[1])
    if dtype and not dtype.startswith(("int", "uint")):
        raise TypeRelError(f"take needs integer indices, got dtype {dtype}")
    return list(args), {"axis": at["axis"], "mode": at["mode"]}


def _tuples_first(indices, ctx):
    """Relax (as ONNX) puts an index tuple on the last axis of gather_nd's / scatter_nd's
    indices, Relay on the first."""
    shape = ctx.shape(indices)
    if not shape:
        raise TypeRelError("the indices must have rank 1 or more")
    if ctx.types:
        return TensorType(shape[-1:] + shape[:-1], indices.dtype)
    return np.moveaxis(indices, -1, 0)


def _gather_nd(args, at, ctx):
    return [args[0], _tuples_first(args[1], ctx)], {"batch_dims": at["batch_dims"]}


def _scatter_nd(args, at, ctx):
    return [args[0], _tuples_first(args[1], ctx), args[2]], {"mode": at["reduction"]}


def _broadcast_to(args, at, ctx):
    return [args[0]], {"shape": tuple(args[1])}


def _repeat(args, at, ctx):
    x, axis = args[0], at["axis"]
    if axis is None:  # Relax flattens first
        n = 1
        for d in ctx.shape(x):
            n = ANY if n is ANY or d is ANY else n * d
        x, axis = ctx.reshape(x, (n,)), 0
    return [x], {"repeats": at["repeats"], "axis": axis}


def _full(args, at, ctx):
    return [args[1]], {"shape": tuple(args[0]), "dtype": at["dtype"]}


def _init(args, at, ctx):
    return [], {"shape": tuple(args[0]), "dtype": at["dtype"]}


def _arange_call(values: list, attrs: dict) -> tuple[list, dict]:
    """TVM's relax.op.arange(start, end=None, step=1, dtype=None) before it builds the call:
    `R.arange(n)` is `R.arange(0, n, 1)`; without a dtype, int64 when every bound is an integer
    (a Python int or an integer PrimExpr), else float32. `values` are the parser's values of
    the arguments given, `attrs` of the attributes."""
    if not values or values[0] is None:
        raise ValueError("needs argument `start`")
    start, end, step = (list(values) + [None, None])[:3]
    if end is None:
        start, end = 0, start
    bounds = [start, end, 1 if step is None else step]
    if attrs.get("dtype") is None:
        integer = all(isinstance(v, int) or isinstance(v, tir.PrimExpr) and v.dtype.startswith("int") for v in bounds)
        attrs["dtype"] = "int64" if integer else "float32"
    return bounds, attrs


def _resize_call(spatial: int):
    """TVM's relax.op.image.resize2d/resize3d (`spatial` axes) before it builds the call: a size
    `s` or `[s]` is `s` on every axis; a float roi is the same on every side, None is zeros."""
    def python_call(values: list, attrs: dict) -> tuple[list, dict]:
        if len(values) > 1:
            size = values[1]
            if isinstance(size, int) or isinstance(size, tir.PrimExpr):
                size = (size,) * spatial
            if isinstance(size, (tuple, list)) and len(size) == 1:
                size = (size[0],) * spatial
            values = [values[0], size, *values[2:]]
        roi = attrs.get("roi")
        if isinstance(roi, float):
            attrs["roi"] = (roi,) * (2 * spatial)
        elif roi is None and "roi" in attrs:
            del attrs["roi"]
        return values, attrs
    return python_call


def _arange(args, at, ctx):
    values = args[:3]
    dtype = at["dtype"] or ("int64" if all(isinstance(v, int) or np.asarray(v).dtype.kind in "iu" for v in values)
                            else "float32")
    return [ctx.scalar(v, dtype) for v in values], {"dtype": dtype}


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad(args, at, ctx):
    width, mode = at["pad_width"], at["pad_mode"]
    if len(width) % 2:
        raise TypeRelError(f"pad_width must be (before, after) pairs, got {len(width)} values")
    if mode not in _PAD_MODES:
        raise TypeRelError(f"pad_mode must be one of {', '.join(_PAD_MODES)}, got \"{mode}\"")
    relay_mode = _PAD_MODES[mode]
    if ctx.types and relay_mode == "wrap":  # same shape as constant padding; the relation knows no "wrap"
        relay_mode = "constant"
    pairs = tuple(tuple(width[i:i + 2]) for i in range(0, len(width), 2))
    return [args[0], ctx.scalar(at["pad_value"], ctx.dtype(args[0]))], {"pad_width": pairs, "pad_mode": relay_mode}


def _to_out_layout(out, at, ctx):
    """A Relax pool's result in its `out_layout` (TVM 0.27 infers the pooled shape in `layout`
    and permutes it; Relay's pools ignored out_layout)."""
    layout, out_layout = at["layout"], at["out_layout"] or at["layout"]
    if out_layout == layout:
        return out
    if sorted(out_layout) != sorted(layout) or not layout.isupper():
        raise TypeRelError(f"out_layout \"{out_layout}\" is not a permutation of layout \"{layout}\"")
    perm = [layout.index(axis) for axis in out_layout]
    if ctx.types:
        return TensorType(tuple(out.shape[i] for i in perm), out.dtype)
    return np.transpose(out, perm)


def _adaptive_pool(args, at, ctx):
    return [args[0]], {"output_size": at["output_size"] or (), "layout": at["layout"], "out_layout": at["out_layout"]}


def _resize2d(args, at, ctx):
    attrs = {k: v for k, v in at.items()}
    attrs["size"] = tuple(args[1])
    return [args[0]], attrs


# ----------------------------------------------------------------------------- own relations / references


def _matmul_rel(args, attrs):
    """numpy.matmul: 1-D operands get a 1 prepended/appended (then dropped), batch dims broadcast."""
    a, b = tensor_arg(args, 0, "x1"), tensor_arg(args, 1, "x2")
    for name, t in (("x1", a), ("x2", b)):
        if not t.shape:
            raise TypeRelError(f"matmul needs tensors of rank >= 1, `{name}` is {fmt_type(t)}")
    sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
    sb = b.shape + (1,) if len(b.shape) == 1 else b.shape
    ka, kb = sa[-1], sb[-2]
    if ka is not ANY and kb is not ANY and ka != kb:
        raise TypeRelError(f"matmul reduction lengths differ: {ka} in {fmt_type(a)}, {kb} in {fmt_type(b)}")
    try:
        batch = broadcast_shapes(sa[:-2], sb[:-2])
    except TypeRelError:
        raise TypeRelError(f"matmul batch dimensions {fmt_shape(sa[:-2])} and {fmt_shape(sb[:-2])} do "
                           f"not broadcast: {fmt_type(a)}, {fmt_type(b)}") from None
    out = batch + ((sa[-2],) if len(a.shape) > 1 else ()) + ((sb[-1],) if len(b.shape) > 1 else ())
    dtype = attrs["out_dtype"] or same_dtype("matmul", a, b)
    return TensorType(out, dtype)


def _matmul_sym(args, attrs):
    """TVM 0.27 accepts reduction lengths it cannot prove different ((d_2, d_3) x (12, 36) is
    (d_2, 36), d_3 taken to be 12); the sentinel fit would see two different sizes. Only for
    such lengths and batch dims that are absent on one side or the same: else None."""
    from ..analysis.struct_info_fit import prim_equal

    a, b = args
    if not a.shape or not b.shape:
        return None
    sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
    sb = b.shape + (1,) if len(b.shape) == 1 else b.shape
    ka, kb = sa[-1], sb[-2]
    if isinstance(ka, int) and isinstance(kb, int) or prim_equal(ka, kb):
        return None
    ba, bb = sa[:-2], sb[:-2]
    if ba and bb and (len(ba) != len(bb) or not all(prim_equal(x, y) for x, y in zip(ba, bb))):
        return None
    out = (ba or bb) + ((sa[-2],) if len(a.shape) > 1 else ()) + ((sb[-1],) if len(b.shape) > 1 else ())
    return TensorType(out, attrs["out_dtype"] or same_dtype("matmul", a, b))


def _matmul(a, b, out_dtype=""):
    from .nn import _matmul as relay_matmul  # accumulates wide, rounds once, as nn.matmul

    return relay_matmul(a, b, units=None, out_dtype=out_dtype, transpose_a=False, transpose_b=False)


def _distinct_axes(axes, ndim: int, op: str, of: str) -> tuple:
    """`axes` made non-negative for rank `ndim`; each in range and named once."""
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise TypeRelError(f"{op} axis {a} is out of range for {of} of rank {ndim}")
        out.append(a + ndim if a < 0 else a)
    if len(set(out)) != len(out):
        raise TypeRelError(f"{op} axes {list(axes)} name an axis twice")
    return tuple(out)


def _expand_dims_shape(shape: tuple, axes) -> tuple:
    ndim = len(shape) + len(axes)
    pos = _distinct_axes(axes, ndim, "expand_dims", "a result")
    rest = iter(shape)
    return tuple(1 if i in pos else next(rest) for i in range(ndim))


def _expand_dims(x, axis):
    return x.reshape(_expand_dims_shape(x.shape, axis))


def _expand_dims_rel(args, attrs):
    t = tensor_arg(args, 0, "x")
    return TensorType(_expand_dims_shape(t.shape, attrs["axis"]), t.dtype)


def _split_bounds(dim, ios) -> list:
    """[(begin, end)] of Relax's split: n sections of ceil(dim / n) (the last ones shorter, maybe
    empty), or the parts between ascending indices, clamped to the dimension."""
    if isinstance(ios, int):
        if ios < 1:
            raise TypeRelError(f"split needs at least one section, got {ios}")
        if dim is ANY:
            return [None] * ios
        k = -(-dim // ios)
        cuts = [k * i for i in range(1, ios)]
    else:
        cuts = list(ios)
        if any(b < a for a, b in zip(cuts, cuts[1:])) or any(c < 0 for c in cuts):
            raise TypeRelError(f"split indices {list(ios)} must be non-negative and ascending")
        if dim is ANY:
            return [None] * (len(cuts) + 1)
    edges = [0] + [min(c, dim) for c in cuts] + [dim]
    return list(zip(edges, edges[1:]))


def _split_rel(args, attrs):
    t = tensor_arg(args, 0, "x")
    if not t.shape:
        raise TypeRelError("cannot split a 0-d tensor")
    from .transform import _axis

    axis = _axis(attrs["axis"], len(t.shape), "split axis")
    fields = []
    for be in _split_bounds(t.shape[axis], attrs["indices_or_sections"]):
        size = ANY if be is None else max(0, be[1] - be[0])
        fields.append(TensorType(t.shape[:axis] + (size,) + t.shape[axis + 1:], t.dtype))
    return fields[0] if len(fields) == 1 else TupleType(fields)  # one part: the tensor (TVM 0.27)


def _split(x, indices_or_sections, axis=0):
    axis = axis + x.ndim if axis < 0 else axis
    parts = tuple(np.take(x, np.arange(b, e), axis=axis) for b, e in _split_bounds(x.shape[axis], indices_or_sections))
    return parts[0] if len(parts) == 1 else parts


def _variance_rel(args, attrs):
    from .reduce import reduce_rel

    return reduce_rel(args, {"exclude": False} | _reduce(args, attrs, TYPES)[1])


def _variance(x, axis=None, keepdims=False):
    relay = _reduce([x], {"axis": axis, "keepdims": keepdims}, VALUES)[1]
    relay.setdefault("exclude", False)
    mean = registry.get("mean").ref(x, axis=relay["axis"], keepdims=True, exclude=relay["exclude"])
    return registry.get("variance").ref(x, mean, **relay)


def _layer_norm_axes(ndim: int, axes) -> tuple:
    return _distinct_axes(axes, ndim, "layer_norm", "a tensor")


def _layer_norm_rel(args, attrs, params=((1, "gamma"), (2, "beta")), op="layer_norm"):
    data = tensor_arg(args, 0, "data")
    axes = _layer_norm_axes(len(data.shape), attrs["axes"])
    want = tuple(data.shape[a] for a in axes)
    for i, name in params:
        t = tensor_arg(args, i, name)
        if len(t.shape) != len(want) or any(a is not ANY and b is not ANY and a != b for a, b in zip(t.shape, want)):
            raise TypeRelError(f"{op} `{name}` must have shape {fmt_shape(want)} (the data's axes "
                               f"{list(axes)}), got {fmt_type(t)}")
        same_dtype(op, data, t)
    return data


def _rms_norm_rel(args, attrs):
    """TVM 0.27's R.nn.rms_norm(data, weight, axes, epsilon): weight has the data's `axes` dims."""
    return _layer_norm_rel(args, attrs, ((1, "weight"),), "rms_norm")


def _rms_norm(data, weight, axes, epsilon=1e-5):
    """x / sqrt(mean(x^2 over axes) + epsilon) * weight, in float64 (TOPI computes in float32)."""
    axes = _layer_norm_axes(data.ndim, axes)
    x = data.astype(np.float64)
    shape = [data.shape[i] if i in axes else 1 for i in range(data.ndim)]
    out = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + epsilon)
    return (out * weight.astype(np.float64).reshape(shape)).astype(data.dtype)


def _layer_norm(data, gamma, beta, axes, epsilon=1e-5, center=True, scale=True):
    axes = _layer_norm_axes(data.ndim, axes)
    x = data.astype(np.float64)
    shape = [data.shape[i] if i in axes else 1 for i in range(data.ndim)]
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + epsilon)
    if scale:
        out = out * gamma.astype(np.float64).reshape(shape)
    if center:
        out = out + beta.astype(np.float64).reshape(shape)
    return out.astype(data.dtype)


def _batch_norm(data, gamma, beta, moving_mean, moving_var, axis, epsilon=1e-5, center=True, scale=True,
                momentum=0.1, training=True):
    relay = registry.get("nn.batch_norm").ref
    if not training:
        return relay(data, gamma, beta, moving_mean, moving_var, axis=axis, epsilon=epsilon, center=center,
                     scale=scale)
    # TOPI's training mode: normalise with the batch statistics, update the moving ones.
    axis = axis % data.ndim
    others = tuple(i for i in range(data.ndim) if i != axis)
    x = data.astype(np.float64)
    mean, var = x.mean(axis=others), x.var(axis=others)
    out = relay(data, gamma, beta, mean.astype(data.dtype), var.astype(data.dtype), axis=axis, epsilon=epsilon,
                center=center, scale=scale)[0]
    new_mean = (1 - momentum) * moving_mean.astype(np.float64) + momentum * mean
    new_var = (1 - momentum) * moving_var.astype(np.float64) + momentum * var
    return out, new_mean.astype(moving_mean.dtype), new_var.astype(moving_var.dtype)


def _shape_of_rel(args, attrs):
    return ShapeResult(tensor_arg(args, 0, "x").shape)


def _shape_of(x):
    return ShapeResult(tuple(int(d) for d in x.shape))


# R.tensor_to_shape / R.shape_to_tensor: a run-time shape (a reshape target computed in a
# tensor) as a shape value, and back. The shape value's length is the tensor's static length.


def _tensor_to_shape_rel(args, attrs):
    x = tensor_arg(args, 0, "x")
    if len(x.shape) != 1:
        raise TypeRelError(f"R.tensor_to_shape expects a 1-d tensor, got one of rank {len(x.shape)}")
    if x.shape[0] is ANY or not 0 <= x.shape[0] <= 64:
        raise TypeRelError("R.tensor_to_shape needs the tensor's length (at most 64)")
    return ShapeResult([ANY] * x.shape[0])


def _tensor_to_shape(x):
    if x.ndim != 1:
        raise ValueError(f"R.tensor_to_shape expects a 1-d tensor, got shape {x.shape}")
    return ShapeResult(tuple(int(v) for v in x))


def _tensor_to_shape_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27: R.Shape(ndim=k) of a 1-d tensor of static length k (any dtype), ndim=-1 if the
    length is not static; an error for another rank."""
    from ..ir.relax import ShapeStructInfo, TensorStructInfo

    x = args_sinfo[0]
    if not isinstance(x, TensorStructInfo):
        raise TypeRelError(f"R.tensor_to_shape expects a tensor, got {type(x).__name__}")
    if x.ndim != 1:
        raise TypeRelError(f"R.tensor_to_shape expects a 1-d tensor, got one of ndim {x.ndim}")
    length = x.shape[0] if isinstance(x.shape, tuple) else None
    return ShapeStructInfo(ndim=length if isinstance(length, int) else -1)


def _dynamic_strided_slice_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's InferTypeDynStridedSlice: the data's dtype and rank, the shape unknown (the
    run-time begin/end/strides decide it); begin, end and strides 1-d int64 tensors with one
    entry per axis."""
    from ..ir.relax import TensorStructInfo

    x = args_sinfo[0]
    if not isinstance(x, TensorStructInfo):
        raise TypeRelError(f"R.dynamic_strided_slice expects a tensor, got {type(x).__name__}")
    if x.ndim >= 0:
        for name, arg in zip(("begin", "end", "strides"), args_sinfo[1:]):
            length = arg.shape[0] if isinstance(arg, TensorStructInfo) and isinstance(arg.shape, tuple) \
                and arg.ndim == 1 else None
            if length != x.ndim or arg.dtype not in ("int64", ""):
                raise TypeRelError(f"R.dynamic_strided_slice needs `{name}` to be a 1-d int64 tensor of "
                                   f"{x.ndim} values, one per axis")
    return TensorStructInfo(None, x.dtype, x.ndim)


def _dynamic_strided_slice(x, begin, end, strides):
    """topi.dynamic_strided_slice: begin/end clamped as NumPy slices clamp them."""
    slices = tuple(slice(int(b), int(e), int(s)) for b, e, s in zip(begin, end, strides))
    return np.ascontiguousarray(x[slices])


def _broadcast_to_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's BroadcastTo: the target shape as written; an error only for fewer target dims
    or two static sizes that differ (the input's not 1). None: the generic way (a shape
    variable, arguments that are not a tensor and a shape of known values)."""
    from ..ir.relax import ShapeStructInfo, TensorStructInfo

    x, shape = args_sinfo
    if not isinstance(x, TensorStructInfo) or not isinstance(shape, ShapeStructInfo) or shape.values is None \
            or x.shape is not None and not isinstance(x.shape, tuple):
        return None
    target = shape.values
    if x.ndim > len(target):
        raise TypeRelError(f"broadcast_to needs a target shape of at least the tensor's {x.ndim} dims, "
                           f"got {len(target)}")
    for i, d in enumerate(x.shape or ()):
        want = target[len(target) - x.ndim + i]
        have, want = _static_size(d), _static_size(want)
        if have is not None and want is not None and have != 1 and have != want:
            raise TypeRelError(f"cannot broadcast size {have} to {want} (dim {i})")
    return TensorStructInfo(tuple(target), x.dtype, vdevice=x.vdevice)


def _gather_nd_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's InferStructInfoGatherND where the index length (the indices' last dim) is not
    a constant, or a rank or the indices' shape is unknown: data's dtype, rank unknown (after
    its dtype and batch_dims checks). Otherwise None: the generic way."""
    from ..ir.relax import TensorStructInfo

    data, indices = args_sinfo
    if not isinstance(data, TensorStructInfo) or not isinstance(indices, TensorStructInfo):
        return None
    if indices.dtype not in ("", "int64"):
        raise TypeRelError(f"gather_nd needs int64 indices, got {indices.dtype}")
    unknown = TensorStructInfo(None, data.dtype, vdevice=data.vdevice)
    if data.ndim == -1 or indices.ndim == -1:
        return unknown
    batch_dims = attrs.get("batch_dims", 0)
    if not 0 <= batch_dims <= data.ndim:
        raise TypeRelError(f"gather_nd batch_dims must be in [0, {data.ndim}] (data's rank), got {batch_dims}")
    if batch_dims > indices.ndim - 1:
        raise TypeRelError(f"gather_nd batch_dims {batch_dims} exceeds the indices' rank {indices.ndim} less 1")
    if not isinstance(indices.shape, tuple) or _static_size(indices.shape[-1]) is None:
        return unknown
    return None


def _squeeze_deduce(args_sinfo: list, attrs: dict):
    """TVM 0.27's Squeeze with axes given: the other dims (a symbolic size squeezed is taken to
    be 1; a static one must be). Without axes, or without a shape: the generic way."""
    from ..ir.relax import TensorStructInfo

    x, axes = args_sinfo[0], attrs.get("axis")
    if axes is None or not isinstance(x, TensorStructInfo) or not isinstance(x.shape, tuple):
        return None
    ndim = len(x.shape)
    picked = set()
    for a in axes:
        if not -ndim <= a < ndim:
            raise TypeRelError(f"squeeze axis {a} is out of range for a tensor of rank {ndim}")
        picked.add(a % ndim)
    for a in picked:
        if _static_size(x.shape[a]) not in (None, 1):
            raise TypeRelError(f"squeeze axis {a} has size {_static_size(x.shape[a])}, not 1")
    return TensorStructInfo(tuple(d for i, d in enumerate(x.shape) if i not in picked), x.dtype, vdevice=x.vdevice)


def _static_size(d):
    if isinstance(d, int):
        return d
    return d.value if isinstance(d, tir.IntImm) else None


def _shape_to_tensor_rel(args, attrs):
    return TensorType((len(args[0]),), "int64")


def _shape_to_tensor(shape):
    return np.array(shape, dtype="int64")


# ----------------------------------------------------------------------------- one_hot, nonzero


def _one_hot(args, at, ctx):
    """R.one_hot's on/off PrimValues as Relay's scalar tensors: in evaluation they come as 0-d
    arrays of their dtype; in inference as numbers, typed float32 until `dtype_from_prim` sets
    the result's dtype from the on_value's struct info."""
    def scalar(v):
        return v if isinstance(v, (np.ndarray, TensorType)) else ctx.scalar(v, "float32")
    dtype = ctx.dtype(args[0])
    if dtype and not dtype.startswith(("int", "uint")):
        raise TypeRelError(f"one_hot needs integer indices, got dtype {dtype}")
    ndim = len(ctx.shape(args[0])) + 1
    axis = at["axis"]
    if -ndim <= axis < -1:  # Relax counts any negative axis from the end (Relay only -1)
        axis += ndim
    return [args[0], scalar(args[1]), scalar(args[2])], {"depth": at["depth"], "axis": axis, "dtype": ""}


def _roi_pool_rel(args, at):
    """TVM 0.27's InferTypeROIPool: NCHW only (Relay's roi_pool takes NHWC too)."""
    if at["layout"] != "NCHW":
        raise TypeRelError(f'ROIPool only supports NCHW layout, got "{at["layout"]}"')
    relay_def = registry.get("vision.roi_pool")
    return relay_def.type_rel(args, relay_def.make_attrs(Attrs(dict(at))))


def _nonzero_rel(args, at):
    """TVM's InferStructInfoNonzero: int64, (ndim, count), the count known only at run time."""
    x = tensor_arg(args, 0, "x")
    return TensorType((len(x.shape), ANY), "int64")


def _nonzero(x):
    """NumPy's nonzero stacked: one row per axis (argwhere transposed), int64."""
    x = np.asarray(x)
    if x.ndim == 0:
        return np.zeros((0, int(bool(x))), np.int64)
    return np.stack(np.nonzero(x)).astype(np.int64).reshape(x.ndim, -1)


def _gather_elements_rel(args, at):
    """TVM 0.27's InferStructInfoGatherElements: indices of the data's rank, of any extent on
    every axis (Relay's gather wants the data's extents off the axis); the result is shaped
    as the indices."""
    from .transform import _axis

    data, indices = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "indices")
    if not indices.dtype.startswith("int"):
        raise TypeRelError(f"gather_elements needs signed integer indices, got dtype {indices.dtype}")
    _axis(at["axis"], len(data.shape), "gather_elements axis")
    if len(data.shape) != len(indices.shape):
        raise TypeRelError(f"gather_elements needs data and indices of the same rank, got "
                           f"{fmt_shape(data.shape)} and {fmt_shape(indices.shape)}")
    return TensorType(indices.shape, data.dtype)


def _gather_elements(data, indices, axis=0):
    """out[i...] = data[i... with indices[i...] on `axis`] (TOPI's gather), over the indices'
    extents."""
    axis %= data.ndim
    index = list(np.indices(indices.shape, sparse=True))
    index[axis] = indices.astype(np.int64)
    return data[tuple(index)]
