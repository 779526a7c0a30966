"""The Relax operator table: TVM 0.27's `relax.*` operators, one line per operator.

Each `RelaxOp` says how a Relax call is written and what it means:

    name        `relax.nn.conv2d` (printed `R.nn.conv2d`)
    args        argument names and kinds, in order:
                  tensor    a tensor                        `x`
                  tensors   a tuple of tensors              `(x, y)` of R.concat
                  shape     a shape value                   `R.shape([2, -1])` of R.reshape
                  prim      a scalar (PrimValue)            `T.float32(0.0)` of R.clip, `n` of R.arange
                  prims     a tuple of scalars              `(1,)` of R.strided_slice
                a trailing "?" marks an optional argument (strides of R.strided_slice).
    attrs       TVM 0.27's attributes in TVM's PRINT order, with TVM's Python-API defaults,
                as `registry.AttrSpec`s (the same kinds and normalisers as the Relay registry).
                A dtype attribute "" is TVM's void dtype, printed `None` (`out_dtype=None`).
                `derived` attributes default to another one (conv2d's out_layout is its
                data_layout), as TVM fills them in when the call is made.
    relay       the Relay counterpart, whose type relation and NumPy reference it reuses, and
    convert     how a call's arguments and attributes become that Relay operator's: the
                same function serves type inference (arguments are Relay `TensorType`s, shape
                and prim arguments plain numbers) and evaluation (NumPy arrays), through a small
                context object `ctx` (`ctx.shape`, `ctx.dtype`, `ctx.scalar`, `ctx.reshape`).
    rel / ref   a relation / reference of its own where the Relay one does not fit (relax.matmul's
                batch broadcasting, layer_norm over several axes, split's uneven sections ...);
                they take the converted arguments and the Relax attributes.
    post        a fix-up of the result (argmax gives int64 in Relax, int32 in Relay)
    float_only  Relax rejects non-float inputs (exp, sqrt, softmax ...), Relay does not.
    rank_depends  attrs -> True when the result's rank depends on which dimensions are 1
                (squeeze without an axis): a symbolic input dimension then leaves the rank unknown.
    positional_attrs  attributes TVM's Python API also takes positionally after the arguments,
                in its parameter order (`R.astype(x, "float16")`, `R.cumsum(x, 1)`).
    sym_rel     a relation on symbolic values, for results no sentinel fit can express: it
                takes dims and prim values as ints or TIR expressions (None: unknown) and returns
                the result type with TIR dims, or None to leave the call to the generic way.
                strided_slice has one: its clamping is TVM's min/max/if_then_else expression.

`irtool.analysis.struct_info.deduce_call` turns struct info into the Relay types this table
works on and back (symbolic dimensions included); `evaluate` runs the reference for the Relax
interpreter.

Registry (Relay) operators with no Relax counterpart in TVM 0.27, Relay-only:
    copy, annotation.stop_fusion, nn.bias_add, nn.dense, nn.matmul, nn.batch_matmul,
    nn.global_avg_pool2d, nn.global_max_pool2d, nn.lrn,
    dyn.reshape, dyn.broadcast_to, dyn.full, dyn.zeros, dyn.ones, dyn.strided_slice, dyn.tile
(Relax writes them as R.add + R.expand_dims, R.matmul + R.permute_dims, R.nn.adaptive_avg_pool2d,
R.max over the spatial axes ...; the dyn.* ops' shapes would be R.tensor_to_shape values).
`RELAY_ONLY` lists them; a test keeps it in step with the registry.

Where Relax's semantics differ from the Relay operator it maps to, `convert` bridges them:
reductions with `axis=[]` reduce nothing (Relay: everything); argmax/argmin give int64; split
into sections makes ceil-sized parts, the last one shorter (Relay requires equal parts);
split indices past the end give empty parts; expand_dims takes several axes; repeat without
an axis flattens first; take without an axis needs a 1-D tensor; where needs a bool condition;
pad's width is flat (before, after per axis) and its value an attribute, "replicate" and
"circular" are NumPy's "edge" and "wrap"; batch_norm with training=True normalises with the
batch statistics and returns the updated moving statistics (TOPI's batch_norm); variance takes
no mean argument; clip's bounds are PrimValue arguments; reshape/broadcast_to/full/zeros/ones/
resize2d take their shape as an argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..ir import tir
from ..ir.expr import Attrs, TypedScalar
from ..ir.types import ANY, TensorType, TupleType
from . import registry
from . import relax_scan_sort as scan_sort
from .common import broadcast_shapes, fmt_shape, fmt_type, np, same_dtype, tensor_arg
from .nn import _pad4, _pair
from .registry import REQUIRED, AttrError, AttrSpec, TypeRelError

ARG_KINDS = ("tensor", "tensors", "shape", "prim", "prims")

RELAY_ONLY = ("copy", "annotation.stop_fusion", "nn.bias_add", "nn.dense", "nn.matmul", "nn.batch_matmul",
              "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.lrn",
              "dyn.reshape", "dyn.broadcast_to", "dyn.full", "dyn.zeros", "dyn.ones", "dyn.strided_slice", "dyn.tile")


class ShapeResult:
    """The result type of an operator that returns a shape value (R.shape_of): its values."""

    __slots__ = ("values",)

    def __init__(self, values) -> None:
        self.values = tuple(values)

    def __repr__(self) -> str:
        return f"ShapeResult({list(self.values)})"


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


# ----------------------------------------------------------------------------- the declaration


@dataclass(frozen=True)
class RelaxOp:
    name: str
    args: tuple[tuple[str, str], ...]
    attrs: tuple[AttrSpec, ...] = ()
    relay: str | None = None
    convert: Callable | None = None
    rel: Callable | None = None
    ref: Callable | None = None
    post: Callable | None = None
    float_only: bool = False
    derived: tuple[tuple[str, str], ...] = ()
    rank_depends: Callable | None = None
    sym_rel: Callable | None = None
    positional_attrs: tuple[str, ...] = ()
    _specs: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for _, kind in self.args:
            if kind.rstrip("?") not in ARG_KINDS:
                raise ValueError(f"{self.name}: unknown argument kind {kind!r}")
        if self.relay is None and (self.rel is None or self.ref is None):
            raise ValueError(f"{self.name}: needs a Relay operator or its own rel and ref")
        self._specs.update((a.name, a) for a in self.attrs)

    @property
    def relay_def(self) -> registry.OpDef | None:
        return registry.get(self.relay) if self.relay else None

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.args)

    @property
    def arg_kinds(self) -> tuple[str, ...]:
        return tuple(k.rstrip("?") for _, k in self.args)

    @property
    def min_args(self) -> int:
        return sum(1 for _, k in self.args if not k.endswith("?"))

    def attr_spec(self, name: str) -> AttrSpec | None:
        return self._specs.get(name)

    # -- running the relation / the reference

    def _to_relay(self, args: list, attrs: dict, ctx):
        if self.convert is not None:
            return self.convert(args, attrs, ctx)
        relay_def = self.relay_def
        known = {a.name for a in relay_def.attrs} if relay_def else set()
        return list(args), {k: v for k, v in attrs.items() if k in known} if relay_def else dict(attrs)

    def _check_float(self, args: list, ctx) -> None:
        if not self.float_only:
            return
        for i, a in enumerate(args):
            if self.arg_kinds[i] != "tensor":
                continue
            dtype = ctx.dtype(a)
            if dtype and not dtype.startswith(("float", "bfloat")):
                raise TypeRelError(f"the data type must be floating-point, got {dtype}")

    def infer(self, args: list, attrs: dict):
        """The result type for argument types: TensorType / TupleType / ShapeResult. Tensor
        arguments are TensorTypes, shape arguments tuples of ints, prims numbers. Raises
        TypeRelError (or AttrError for attributes the Relay operator rejects)."""
        self._check_float(args, TYPES)
        rargs, rattrs = self._to_relay(args, attrs, TYPES)
        if self.rel is not None:  # an own relation reads the Relax attributes
            out = self.rel(rargs, attrs)
        else:
            relay_def = self.relay_def
            ra = relay_def.make_attrs(Attrs(rattrs) if rattrs else None)
            if relay_def.needs_values:
                out = relay_def.type_rel(rargs, ra, [getattr(a, "value", None) for a in rargs])
            else:
                out = relay_def.type_rel(rargs, ra)
        return self.post(out, attrs, TYPES) if self.post is not None else out

    def run(self, args: list, attrs: dict):
        """The reference: arrays (tuples of arrays, shape tuples, numbers) in, array out."""
        self._check_float(args, VALUES)
        rargs, rattrs = self._to_relay(args, attrs, VALUES)
        if self.ref is not None:
            out = self.ref(*rargs, **attrs)
        else:
            relay_def = self.relay_def
            ra = relay_def.make_attrs(Attrs(rattrs) if rattrs else None)
            out = relay_def.ref(*rargs, **(dict(ra.items()) if ra else {}))
        if isinstance(out, tuple):
            out = tuple(np.asarray(o) for o in out)
        elif not isinstance(out, ShapeResult):
            out = np.asarray(out)
        out = self.post(out, attrs, VALUES) if self.post is not None else out
        return out.values if isinstance(out, ShapeResult) else out


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


_INT64_MAX = 2**63 - 1


def _imm(v):
    return tir.IntImm(v, "int64") if isinstance(v, int) else v


def _fold(op: str, a, b):
    """A TIR binary operation on ints or expressions, folded when both are ints."""
    if isinstance(a, int) and isinstance(b, int):
        return {"add": int.__add__, "sub": int.__sub__, "min": min, "max": max, "floordiv": int.__floordiv__}[op](a, b)
    if op in ("add", "sub") and b == 0:
        return a
    return tir.BinOp(op, _imm(a), _imm(b))


def _canonical_sym(i, d, stride: int):
    """TOPI's index canonicalisation (negative from the end, clamped) on expressions, as TVM
    0.27's StridedSlice struct info writes it: min(max(i < 0 ? i + d : i, lo), hi)."""
    lo, hi = (-1, _fold("sub", d, 1)) if stride < 0 else (0, d)
    if isinstance(i, int):
        if isinstance(d, int):
            from .transform import _canonical

            return _canonical(i, d, stride)
        if i >= _INT64_MAX // 2:  # "to the end"
            return hi
        if i <= -_INT64_MAX // 2:
            return lo
        if i < 0:
            return _fold("max", _fold("add", d, i), lo)
        return _fold("min", i, hi) if stride > 0 else _fold("max", _fold("min", i, hi), lo)
    picked = tir.Call("int64", "tirx.if_then_else", [tir.BinOp("lt", i, _imm(0)), tir.BinOp("add", i, _imm(d)), i])
    return _fold("min", _fold("max", picked, lo), hi)


def _strided_slice_sym(args, at):
    """relax.strided_slice on symbolic bounds or dimensions (TVM's formula; with assume_inbound,
    the plain difference)."""
    x = args[0]
    axes, begin, end = args[1:4]
    strides = args[4] if len(args) > 4 and args[4] is not None else (1,) * len(axes)
    if not all(isinstance(v, int) for v in tuple(axes) + tuple(strides)):
        return None
    ndim = len(x.shape)
    _strided_slice([x, axes, begin if all(isinstance(v, int) for v in begin) else (0,) * len(begin),
                    end if all(isinstance(v, int) for v in end) else (0,) * len(end), strides], at, None)
    shape = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        a = a + ndim if a < 0 else a
        d = shape[a]
        if s == 0:
            raise TypeRelError(f"strided_slice stride for axis {a} is 0")
        if d is None or b is None or e is None:
            shape[a] = None
            continue
        if at["assume_inbound"]:
            cb = _fold("add", d, b) if isinstance(b, int) and b < 0 else b
            ce = _fold("add", d, e) if isinstance(e, int) and e < 0 else e
        else:
            cb, ce = _canonical_sym(b, d, s), _canonical_sym(e, d, s)
        diff = _fold("sub", ce, cb) if s > 0 else _fold("sub", cb, ce)
        step = abs(s)
        if isinstance(diff, int):
            shape[a] = max(0, -(-diff // step))
        else:
            shape[a] = diff if step == 1 else _fold("floordiv", _fold("add", diff, step - 1), step)
    return TensorType(tuple(shape), x.dtype)


def _take(args, at, ctx):
    if at["axis"] is None and _ndim(args, ctx) != 1:
        raise TypeRelError(f"without an axis, take needs a 1-D tensor, got rank {_ndim(args, ctx)}")
    dtype = ctx.dtype(args[1])
    if dtype and not dtype.startswith(("int", "uint")):
        raise TypeRelError(f"take needs integer indices, got dtype {dtype}")
    return list(args), {"axis": at["axis"], "mode": at["mode"]}


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


def _matmul(a, b, out_dtype=""):
    from .nn import _matmul as relay_matmul  # accumulates wide, rounds once, as nn.matmul

    return relay_matmul(a, b, units=None, out_dtype=out_dtype, transpose_a=False, transpose_b=False)


def _expand_dims_shape(shape: tuple, axes) -> tuple:
    ndim = len(shape) + len(axes)
    pos = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise TypeRelError(f"expand_dims axis {a} is out of range for a result of rank {ndim}")
        pos.append(a + ndim if a < 0 else a)
    if len(set(pos)) != len(pos):
        raise TypeRelError(f"expand_dims axes {list(axes)} name an axis twice")
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
    return TupleType(fields)


def _split(x, indices_or_sections, axis=0):
    axis = axis + x.ndim if axis < 0 else axis
    return tuple(np.take(x, np.arange(b, e), axis=axis) for b, e in _split_bounds(x.shape[axis], indices_or_sections))


def _variance_rel(args, attrs):
    from .reduce import reduce_rel

    return reduce_rel(args, {"exclude": False} | _reduce(args, attrs, TYPES)[1])


def _variance(x, axis=None, keepdims=False):
    relay = _reduce([x], {"axis": axis, "keepdims": keepdims}, VALUES)[1]
    relay.setdefault("exclude", False)
    mean = registry.get("mean").ref(x, axis=relay["axis"], keepdims=True, exclude=relay["exclude"])
    return registry.get("variance").ref(x, mean, **relay)


def _layer_norm_axes(ndim: int, axes) -> tuple:
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise TypeRelError(f"layer_norm axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a + ndim if a < 0 else a)
    if len(set(out)) != len(out):
        raise TypeRelError(f"layer_norm axes {list(axes)} name an axis twice")
    return tuple(out)


def _layer_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    axes = _layer_norm_axes(len(data.shape), attrs["axes"])
    want = tuple(data.shape[a] for a in axes)
    for i, name in ((1, "gamma"), (2, "beta")):
        t = tensor_arg(args, i, name)
        if len(t.shape) != len(want) or any(a is not ANY and b is not ANY and a != b for a, b in zip(t.shape, want)):
            raise TypeRelError(f"layer_norm `{name}` must have shape {fmt_shape(want)} (the data's axes "
                               f"{list(axes)}), got {fmt_type(t)}")
        same_dtype("layer_norm", data, t)
    return data


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


# ----------------------------------------------------------------------------- the table


def _A(name, kind, default=REQUIRED, normalize=None):
    return AttrSpec(name, kind, default, normalize)


def _args(spec: str) -> tuple:
    """"x shape:shape" -> (("x", "tensor"), ("shape", "shape"))."""
    out = []
    for item in spec.split():
        name, _, kind = item.partition(":")
        out.append((name, kind or "tensor"))
    return tuple(out)


_OPS: dict[str, RelaxOp] = {}


def _ceil_pool(relay_name: str) -> dict:
    """rel and ref of a Relax 2-D pool: the Relay operator's, except that with ceil_mode
    TVM 0.27's Relax drops a last window that would start in the tail padding
    (`(out - 1) * stride >= size + pad_head`, src/relax/op/nn/pooling.cc), where Relay
    (v0.19) keeps it."""
    def relay_attrs(at: dict):
        relay_def = registry.get(relay_name)
        known = {a.name for a in relay_def.attrs}
        return relay_def, relay_def.make_attrs(Attrs({k: v for k, v in at.items() if k in known}))

    def dropped(in_shape, at) -> list[int]:
        """The spatial axes whose last window is dropped."""
        layout = at["layout"]
        if not at["ceil_mode"] or "H" not in layout or "W" not in layout:
            return []
        out = []
        for i, axis in enumerate((layout.index("H"), layout.index("W"))):
            n, k, s, d = in_shape[axis], at["pool_size"][i], at["strides"][i], at["dilation"][i]
            if n is ANY:
                continue
            raw = (n + at["padding"][i] + at["padding"][i + 2] - (k - 1) * d - 1 + s - 1) // s + 1
            if (raw - 1) * s >= n + at["padding"][i]:
                out.append(axis)
        return out

    def rel(args, at):
        relay_def, ra = relay_attrs(at)
        t = relay_def.type_rel(args, ra)
        shape = list(t.shape)
        for axis in dropped(tensor_arg(args, 0, "data").shape, at):
            shape[axis] = shape[axis] - 1 if shape[axis] is not ANY else ANY
        return TensorType(tuple(shape), t.dtype)

    def ref(data, **at):
        relay_def, ra = relay_attrs(at)
        out = np.asarray(relay_def.ref(data, **dict(ra.items())))
        index = [slice(None)] * out.ndim
        for axis in dropped(data.shape, at):
            index[axis] = slice(0, out.shape[axis] - 1)
        return out[tuple(index)]
    return {"rel": rel, "ref": ref}


def _op(name: str, args: str, attrs=(), relay: str | None = None, **kw) -> None:
    if name in _OPS:
        raise ValueError(f"Relax operator {name} declared twice")
    _OPS[name] = RelaxOp(name, _args(args), tuple(attrs), relay, **kw)


UNARY = [
    # relax name          relay name     float only
    ("relax.negative",    "negative",    False),
    ("relax.abs",         "abs",         False),
    ("relax.exp",         "exp",         True),
    ("relax.log",         "log",         True),
    ("relax.sqrt",        "sqrt",        True),
    ("relax.rsqrt",       "rsqrt",       True),
    ("relax.sigmoid",     "sigmoid",     True),
    ("relax.tanh",        "tanh",        True),
    ("relax.erf",         "erf",         True),
    ("relax.floor",       "floor",       False),
    ("relax.ceil",        "ceil",        False),
    ("relax.round",       "round",       False),
    ("relax.trunc",       "trunc",       False),
    ("relax.sign",        "sign",        False),
    ("relax.sin",         "sin",         True),
    ("relax.cos",         "cos",         True),
    ("relax.tan",         "tan",         True),
    ("relax.asin",        "asin",        True),
    ("relax.acos",        "acos",        True),
    ("relax.atan",        "atan",        True),
    ("relax.sinh",        "sinh",        True),
    ("relax.cosh",        "cosh",        True),
    ("relax.asinh",       "asinh",       True),
    ("relax.acosh",       "acosh",       True),
    ("relax.atanh",       "atanh",       True),
    ("relax.nn.relu",     "nn.relu",     False),
    ("relax.logical_not", "logical_not", False),
]

BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power", "maximum",
          "minimum", "logical_and", "logical_or", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal"]

REDUCE = ["sum", "mean", "max", "min", "prod"]

# Attribute lists, in TVM 0.27's print order, with its Python API's defaults.
AXES = (_A("axis", "ints?", None), _A("keepdims", "bool", False))
ARG_AXIS = (_A("axis", "int?", None), _A("keepdims", "bool", False))
DTYPE_OPT = (_A("dtype", "dtype", ""),)
DTYPE = (_A("dtype", "dtype"),)
_WINDOW = (_A("strides", "ints", (1, 1), _pair), _A("padding", "ints", (0, 0, 0, 0), _pad4))
_DILATE = (_A("dilation", "ints", (1, 1), _pair), _A("groups", "int", 1))
OUT_DTYPE = (_A("out_dtype", "dtype", ""),)
_OUT = (_A("out_layout", "str", ""),) + OUT_DTYPE
CONV2D = _WINDOW + _DILATE + (_A("data_layout", "str", "NCHW"), _A("kernel_layout", "str", "OIHW")) + _OUT
CONV2D_T = (_WINDOW + (_A("output_padding", "ints", (0, 0), _pair),) + _DILATE
            + (_A("data_layout", "str", "NCHW"), _A("kernel_layout", "str", "IOHW")) + _OUT)
POOL2D = (_A("pool_size", "ints", (1, 1), _pair), _A("strides", "ints", (1, 1), _pair),
          _A("dilation", "ints", (1, 1), _pair), _A("padding", "ints", (0, 0, 0, 0), _pad4),
          _A("ceil_mode", "bool", False), _A("count_include_pad", "bool", False), _A("layout", "str", "NCHW"),
          _A("out_layout", "str", ""))
ADAPTIVE_POOL2D = (_A("output_size", "ints?", None, _pair), _A("layout", "str", "NCHW"), _A("out_layout", "str", ""))
BATCH_NORM = (_A("axis", "int"), _A("epsilon", "float", 1e-5), _A("center", "bool", True),
              _A("scale", "bool", True), _A("momentum", "float", 0.1), _A("training", "bool", True))
LAYER_NORM = (_A("axes", "ints"), _A("epsilon", "float", 1e-5), _A("center", "bool", True), _A("scale", "bool", True))
PAD = (_A("pad_width", "ints"), _A("pad_value", "float", 0.0), _A("pad_mode", "str", "constant"))
SPLIT = (_A("indices_or_sections", "int_or_ints"), _A("axis", "int", 0))
TAKE = (_A("axis", "int?", None), _A("mode", "str", "fast"))
REPEAT = (_A("repeats", "int"), _A("axis", "int?", None))
RESIZE2D = (_A("roi", "floats", (0.0, 0.0, 0.0, 0.0)), _A("layout", "str", "NCHW"), _A("method", "str", "linear"),
            _A("coordinate_transformation_mode", "str", "half_pixel"), _A("rounding_method", "str", "round"),
            _A("cubic_alpha", "float", -0.75), _A("cubic_exclude", "int", 0),
            _A("extrapolation_value", "float", 0.0), _A("out_dtype", "dtype", ""))
OUT_LAYOUT = (("out_layout", "data_layout"),)
POOL_OUT = (("out_layout", "layout"),)

for _name, _relay, _float in UNARY:
    _op(_name, "x", relay=_relay, float_only=_float)
# TVM 0.27 lowers tirx.round to llvm.nearbyint (halves to even, as its VM computes R.round);
# the Relay reference rounds them away from zero (v0.19's llvm.round)
_OPS["relax.round"] = replace(_OPS["relax.round"], ref=lambda x: np.rint(x) if np.asarray(x).dtype.kind == "f" else x)
for _name in BINARY:
    _op(f"relax.{_name}", "x1 x2", relay=_name)
for _name in REDUCE:
    _op(f"relax.{_name}", "x", AXES, _name, convert=_reduce)

# name                          args                             attributes    relay               extras
_op("relax.zeros_like",         "x",                             DTYPE_OPT,    "zeros_like",       convert=_first,
    post=_cast_to_attr)
_op("relax.ones_like",          "x",                             DTYPE_OPT,    "ones_like",        convert=_first,
    post=_cast_to_attr)
_op("relax.astype",             "x",                             DTYPE,        "cast",
    positional_attrs=("dtype",))
_op("relax.clip",               "x min:prim max:prim",           (),           "clip",             convert=_clip)
_op("relax.where",              "condition x1 x2",               (),           "where",            convert=_where)
_op("relax.nn.leakyrelu",       "data",                          (_A("alpha", "float", 0.01),), "nn.leaky_relu",
    float_only=True)
_op("relax.argmax",             "x",                             ARG_AXIS,     "argmax",           convert=_arg_reduce,
    post=_to_int64)
_op("relax.argmin",             "x",                             ARG_AXIS,     "argmin",           convert=_arg_reduce,
    post=_to_int64)
_op("relax.variance",           "x",                             AXES,         "variance",         rel=_variance_rel,
    ref=_variance)
_op("relax.reshape",            "x shape:shape",                 (),           "reshape",          convert=_reshape)
_op("relax.permute_dims",       "x",                             (_A("axes", "ints?", None),), "transpose")
_op("relax.squeeze",            "x",                             (_A("axis", "ints?", None),), "squeeze",
    rank_depends=lambda at: at["axis"] is None)
_op("relax.expand_dims",        "x",                             (_A("axis", "ints"),), "expand_dims",
    rel=_expand_dims_rel, ref=_expand_dims)
_op("relax.concat",             "tensors:tensors",               (_A("axis", "int?", 0),), "concatenate",
    convert=_concat)
_op("relax.stack",              "tensors:tensors",               (_A("axis", "int", 0),), "stack")
_op("relax.split",              "x",                             SPLIT,        "split",            rel=_split_rel,
    ref=_split)
_op("relax.strided_slice",      "x axes:prims begin:prims end:prims strides:prims?",
    (_A("assume_inbound", "bool", False),),                    "strided_slice",    convert=_strided_slice,
    sym_rel=_strided_slice_sym)
_op("relax.take",               "x indices",                     TAKE,         "take",             convert=_take)
_op("relax.gather_elements",    "data indices",                  (_A("axis", "int", 0),), "gather")
_op("relax.broadcast_to",       "x shape:shape",                 (),           "broadcast_to",
    convert=_broadcast_to)
_op("relax.tile",               "data",                          (_A("repeats", "ints"),), "tile", convert=_tile)
_op("relax.repeat",             "data",                          REPEAT,       "repeat",           convert=_repeat)
_op("relax.full",               "shape:shape fill_value",        DTYPE_OPT,    "full",             convert=_full)
_op("relax.zeros",              "shape:shape",                   DTYPE,        "zeros",            convert=_init)
_op("relax.ones",               "shape:shape",                   DTYPE,        "ones",             convert=_init)
_op("relax.arange",             "start:prim end:prim step:prim", DTYPE_OPT,    "arange",           convert=_arange)
_op("relax.shape_of",           "x",                             (),           "shape_of",         rel=_shape_of_rel,
    ref=_shape_of)
_op("relax.matmul",             "x1 x2",                         OUT_DTYPE,    None,               rel=_matmul_rel,
    ref=_matmul)
_op("relax.nn.conv2d",          "data weight",                   CONV2D,       "nn.conv2d",        derived=OUT_LAYOUT)
_op("relax.nn.conv2d_transpose", "data weight",                  CONV2D_T,     "nn.conv2d_transpose",
    derived=OUT_LAYOUT)
_op("relax.nn.max_pool2d",      "data",                          POOL2D,       "nn.max_pool2d",    derived=POOL_OUT,
    **_ceil_pool("nn.max_pool2d"))
_op("relax.nn.avg_pool2d",      "data",                          POOL2D,       "nn.avg_pool2d",    derived=POOL_OUT,
    **_ceil_pool("nn.avg_pool2d"))
_op("relax.nn.adaptive_avg_pool2d", "data",                      ADAPTIVE_POOL2D, "nn.adaptive_avg_pool2d",
    convert=_adaptive_pool, derived=POOL_OUT)
_op("relax.nn.batch_norm",      "data gamma beta moving_mean moving_var", BATCH_NORM, "nn.batch_norm",
    ref=_batch_norm)
_op("relax.nn.layer_norm",      "data gamma beta",               LAYER_NORM,   "nn.layer_norm",    rel=_layer_norm_rel,
    ref=_layer_norm)
_op("relax.nn.softmax",         "data",                          (_A("axis", "int", -1),), "nn.softmax",
    float_only=True)
_op("relax.nn.log_softmax",     "data",                          (_A("axis", "int", -1),), "nn.log_softmax",
    float_only=True)
_op("relax.nn.dropout",         "data",                          (_A("rate", "float", 0.5),), "nn.dropout")
_op("relax.nn.pad",             "data",                          PAD,          "nn.pad",           convert=_pad)
_op("relax.nn.prelu",           "data alpha",                    (_A("axis", "int", 1),), "nn.prelu")
_op("relax.nn.batch_flatten",   "data",                          (),           "nn.batch_flatten")
_op("relax.image.resize2d",     "data size:shape",               RESIZE2D,     "image.resize2d",   convert=_resize2d)
# TVM 0.27 operators with no Relay counterpart here: relations and references in relax_scan_sort
SCAN = (_A("axis", "int?", None), _A("dtype", "dtype", ""), _A("exclusive", "bool", False))
SORT = (_A("axis", "int", -1), _A("descending", "bool", False))
TOPK = (_A("k", "int", 1), _A("axis", "int", -1), _A("ret_type", "str", "both"), _A("largest", "bool", True),
        _A("dtype", "dtype", "int32"))
_op("relax.square",             "x",                             (),           None,  rel=scan_sort._same,
    ref=scan_sort._square)
_op("relax.full_like",          "x fill_value",                  DTYPE_OPT,    None,  rel=scan_sort._full_like_rel,
    ref=scan_sort._full_like, positional_attrs=("dtype",))
_op("relax.cumsum",             "data",                          SCAN,         None,  rel=scan_sort._scan_rel,
    ref=scan_sort._cumsum, sym_rel=scan_sort._scan_sym, positional_attrs=("axis", "dtype", "exclusive"))
_op("relax.cumprod",            "data",                          SCAN,         None,  rel=scan_sort._scan_rel,
    ref=scan_sort._cumprod, sym_rel=scan_sort._scan_sym, positional_attrs=("axis", "dtype", "exclusive"))
_op("relax.sort",               "x",                             SORT,         None,  rel=scan_sort._same,
    ref=scan_sort._sort, positional_attrs=("axis", "descending"))
_op("relax.argsort",            "data",                          SORT + (_A("dtype", "dtype", "int32"),), None,
    rel=scan_sort._argsort_rel, ref=scan_sort._argsort, positional_attrs=("axis", "descending", "dtype"))
_op("relax.topk",               "data",                          TOPK,         None,  rel=scan_sort._topk_rel,
    ref=scan_sort._topk, sym_rel=scan_sort._topk_sym,
    positional_attrs=("k", "axis", "ret_type", "largest", "dtype"))


# ----------------------------------------------------------------------------- API


def lookup(relax_name: str) -> RelaxOp | None:
    return _OPS.get(relax_name)


def get(relax_name: str) -> RelaxOp:
    op = _OPS.get(relax_name)
    if op is None:
        raise KeyError(f"unknown Relax operator `{relax_name}`")
    return op


def relax_ops() -> dict[str, RelaxOp]:
    return dict(sorted(_OPS.items()))


def relay_only_ops() -> list[str]:
    """Registry operators that no Relax operator maps to."""
    mapped = {op.relay for op in _OPS.values()}
    return [name for name in registry.all_ops() if name not in mapped]


def _tuples(value):
    """Lists (as Python callers write them) are tuples in Attrs."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def make_call_attrs(op: RelaxOp, given) -> Attrs | None:
    """All attributes of a call of `op` (a dict or Attrs of the given ones), checked, normalised,
    with the defaults filled in, in TVM's print order. None for an operator without attributes
    (TVM's call.attrs is then null). Raises AttrError naming the first offending attribute."""
    values = dict(given.items()) if given else {}
    if not op.attrs:
        if values:
            raise AttrError(f"operator `{op.name}` has no attribute `{next(iter(values))}`")
        return None
    for key in values:
        if key not in op._specs:
            known = ", ".join(a.name for a in op.attrs)
            raise AttrError(f"operator `{op.name}` has no attribute `{key}` (attributes: {known})")
    items = {}
    for spec in op.attrs:
        if spec.name in values:
            value = values[spec.name]
            if value is None and spec.kind == "dtype":  # `out_dtype=None`: TVM's void dtype
                value = ""
            value = _tuples(value)
            if isinstance(value, TypedScalar) and spec.kind in ("float", "floats"):
                value = value.value
            value = registry._convert(spec.kind, value, f"attribute `{spec.name}` of `{op.name}`")
            if spec.normalize is not None and value is not None:
                value = spec.normalize(value)
        elif spec.default is REQUIRED:
            raise AttrError(f"operator `{op.name}` requires attribute `{spec.name}`")
        else:
            value = spec.default
        items[spec.name] = value
    for name, source in op.derived:
        if not items[name]:
            items[name] = items[source]
    return Attrs(list(items.items()))


def _attr_dict(op: RelaxOp, attrs) -> dict:
    full = make_call_attrs(op, attrs)
    return dict(full.items()) if full is not None else {}


def infer(op_name: str, args: list, attrs):
    """The Relay-level result type of a call, for argument types (see `RelaxOp.infer`)."""
    op = get(op_name)
    return op.infer(list(args), _attr_dict(op, attrs))


def _as_number(v):
    if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic):
        return v.item()
    return v


def evaluate(call_op_name: str, arg_values: list, attrs) -> Any:
    """Run the reference of a Relax call: tensors are NumPy arrays, tuples of tensors tuples of
    arrays, shapes tuples of ints, prim values numbers. Returns an array, a tuple of arrays,
    or (R.shape_of) a tuple of ints."""
    op = get(call_op_name)
    args = []
    for kind, v in zip(op.arg_kinds, arg_values):
        if kind == "tensor":
            v = np.asarray(v)
        elif kind == "tensors":
            v = tuple(np.asarray(x) for x in v)
        elif kind in ("shape", "prims"):
            v = tuple(int(_as_number(x)) for x in v)
        elif kind == "prim":
            v = _as_number(v)
        args.append(v)
    with np.errstate(all="ignore"):
        return op.run(args, _attr_dict(op, attrs))
