"""Shape and index-shuffling operators: TOPI's C++ include/tvm/topi/transform.h (and Relax's own
te functions in python/tvm/relax/transform/legalize_ops/manipulate.py, index.py, search.py).

Each is one compute over `ax0, ax1, ...` (C++ `te::compute`) named as TOPI names it, loading
the input at indices that TVM's simplifier prints in canonical form (`canonical.py`):

    reshape        T_reshape                 x[unravel(ravel(ax, new shape), old shape)]
    permute_dims   T_transpose (transpose)   x[ax permuted]
    expand_dims    expand_dims (i0, i1, ...) Relax's te_expand_dims: x[the kept axes]
    squeeze        T_squeeze                 x[ax with 0 at the squeezed dims]
    concat         T_concat (concatenate)    nested if_then_else(offset <= ax, x_k[ax - offset], ...)
    stack          T_stack                   nested if_then_else(ax == k, x_k[...], ...)
    split          T_split_sections / T_split, one compute per part (a PrimFunc with several outputs)
    strided_slice  T_strided_slice_with_axes x[ax * stride + begin]; symbolic bounds or shapes:
                   T_dynamic_strided_slice_with_axes
    take           T_take                    x[..., indices[...], ...] (mode fast / clip / wrap)
    gather_elements T_gather (gather)        x[..., indices[ax], ...]
    broadcast_to   T_broadcast_to            x[ax, or 0 on broadcast dims]
    tile           T_tile                    x[ax % dim]
    repeat         T_repeat                  x[ax // repeats] (after a T_reshape without an axis)
    where          T_where                   Select(0 < cast(int, c), x, y), broadcast
    one_hot        T_one_hot                 Select(indices[ax without axis] == ax[axis], on, off)
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..simplify import simplify
from . import register_legalize
from .broadcast import broadcast_shape
from .canonical import canonical_simplify, nonneg_condition, rewrite_bounds, simplify_index
from .rewrite_simplify import Analyzer

# ----------------------------------------------------------------------------- helpers


def _i64(v) -> tir.PrimExpr:
    return tb.as_expr(v, "int64") if not isinstance(v, tir.PrimExpr) else v


def _load(x: te.Tensor, indices) -> tir.PrimExpr:
    """x at `indices`, each in canonical form (as CreatePrimFunc's Simplify leaves them)."""
    return x(*[simplify_index(_i64(i)) for i in indices])


def _const(e) -> int | None:
    if isinstance(e, int):
        return e
    return e.value if isinstance(e, tir.IntImm) else None


def ravel_index(indices, shape) -> tir.PrimExpr:
    if not indices:  # a 0-d tensor's one element (reshape (1,) -> (), a scalar trip count)
        return tb.const(0, "int64")
    idx = indices[0]
    for i in range(1, len(indices)):
        idx = tb.add(tb.mul(idx, shape[i]), indices[i])
    return idx


def unravel_index(idx, shape) -> list:
    out = []
    for dim in reversed(shape):
        out.append(tb.floormod(idx, dim))
        idx = tb.floordiv(idx, dim)
    return out[::-1]


def _is_empty(shape) -> bool:
    return any(_const(d) == 0 for d in shape)


# ----------------------------------------------------------------------------- computes


def reshape(x: te.Tensor, newshape) -> te.Tensor:
    shape = [_i64(d) for d in newshape]
    if _is_empty(shape) or _is_empty(x.shape):
        return te.compute_ax(shape, lambda ax: tb.cast(x.dtype, 0), name="T_reshape", tag="injective")
    return te.compute_ax(shape, lambda ax: _load(x, unravel_index(ravel_index(ax, shape), x.shape)),
                         name="T_reshape", tag="injective")


def transpose(x: te.Tensor, axes=None) -> te.Tensor:
    ndim = len(x.shape)
    axes = list(range(ndim - 1, -1, -1)) if not axes else [a + ndim if a < 0 else a for a in axes]

    def element(ax):
        idx = [None] * ndim
        for i, a in enumerate(axes):
            idx[a] = ax[i]
        return x(*idx)

    return te.compute_ax([x.shape[a] for a in axes], element, name="T_transpose", tag="injective")


def expand_dims(x: te.Tensor, axis, out_shape) -> te.Tensor:
    ndim = len(out_shape)
    kept = [i for i in range(ndim) if i not in axis and (i - ndim) not in axis]
    return te.compute(out_shape, lambda *idx: x(*[idx[d] for d in kept]), name="expand_dims")


def squeeze(x: te.Tensor, axis=None) -> te.Tensor:
    ndim = len(x.shape)
    if axis is None:
        squeezed = [i for i in range(ndim) if _const(x.shape[i]) == 1]
    else:
        squeezed = []
        for a in axis:
            a = a + ndim if a < 0 else a
            if _const(x.shape[a]) in (1, None):
                squeezed.append(a)
    out_shape = [x.shape[i] for i in range(ndim) if i not in squeezed]

    def element(ax):
        it = iter(ax)
        return x(*[tb.const(0, "int64") if i in squeezed else next(it) for i in range(ndim)])

    return te.compute_ax(out_shape, element, name="T_squeeze", tag="injective")


def concatenate(inputs: list, axis: int = 0) -> te.Tensor:
    ndim = len(inputs[0].shape)
    axis = axis + ndim if axis < 0 else axis
    sizes = [t.shape[axis] for t in inputs]
    join = sizes[0]
    for s in sizes[1:]:
        join = tb.add(join, s)
    join = canonical_simplify(join)
    out_shape = [join if i == axis else d for i, d in enumerate(inputs[0].shape)]

    def element(ax):
        ret = inputs[0](*ax)
        offset = tb.const(0, "int64")
        for i in range(len(inputs) - 1):
            offset = tb.add(offset, sizes[i])
            idx = list(ax)
            idx[axis] = tb.sub(ax[axis], offset)
            ret = tb.if_then_else(nonneg_condition(idx[axis]), _load(inputs[i + 1], idx), ret)
        return ret

    return te.compute_ax(out_shape, element, name="T_concat", tag="injective")


def stack(inputs: list, axis: int = 0) -> te.Tensor:
    ndim = len(inputs[0].shape)
    axis = axis + ndim + 1 if axis < 0 else axis
    shape = list(inputs[0].shape)
    out_shape = shape[:axis] + [tb.const(len(inputs), "int64")] + shape[axis:]

    def element(ax):
        idx = [a for i, a in enumerate(ax) if i != axis]
        ret = inputs[0](*idx)
        for i in range(len(inputs) - 1):
            ret = tb.if_then_else(tb.eq(ax[axis], i + 1), inputs[i + 1](*idx), ret)
        return ret

    return te.compute_ax(out_shape, element, name="T_stack", tag="injective")


def split(x: te.Tensor, indices_or_sections, axis: int = 0) -> tuple:
    ndim = len(x.shape)
    axis = axis + ndim if axis < 0 else axis
    dim = x.shape[axis]
    if isinstance(indices_or_sections, int):
        name = "T_split_sections"
        seg = tb.floordiv(tb.add(dim, indices_or_sections - 1), indices_or_sections)
        bounds = [tb.mul(seg, i) for i in range(1, indices_or_sections)]
    else:
        name = "T_split"
        bounds = [_i64(b) for b in indices_or_sections]
    begins = [tb.const(0, "int64"), *bounds]
    outs = []
    for k, begin in enumerate(begins):
        size = tb.sub(dim, begin) if k == len(begins) - 1 else tb.sub(begins[k + 1], begin)
        shape = list(x.shape)
        shape[axis] = simplify(size)

        def element(ax, begin=begin):
            idx = list(ax)
            idx[axis] = tb.add(ax[axis], begin)
            return _load(x, idx)

        outs.append(te.compute_ax(shape, element, name=name, tag="injective"))
    return tuple(outs)


def _canonicalize_index(index: int, extent: int, stride: int) -> int:
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def strided_slice(x: te.Tensor, begin, end, strides, axes, assume_inbound: bool = False) -> te.Tensor:
    """TOPI's strided_slice with axes: static bounds on a static shape, else the dynamic form."""
    ndim = len(x.shape)
    axes = [a + ndim if a < 0 else a for a in axes]
    consts = [_const(v) for v in [*begin, *end, *strides, *x.shape]]
    if all(c is not None for c in consts):
        return _static_strided_slice(x, [_const(b) for b in begin], [_const(e) for e in end],
                                     [_const(s) for s in strides], axes)
    return _dynamic_strided_slice(x, [_i64(b) for b in begin], [_i64(e) for e in end],
                                  [_i64(s) for s in strides], axes, assume_inbound)


def _static_strided_slice(x, begin, end, strides, axes) -> te.Tensor:
    out_shape = list(x.shape)
    starts = []
    for b, e, s, a in zip(begin, end, strides, axes):
        dim = _const(x.shape[a])
        b = _canonicalize_index(b, dim, s)
        e = _canonicalize_index(e, dim, s)
        starts.append(b)
        out_shape[a] = tb.const((abs(e - b) + abs(s) - 1) // abs(s), "int64")

    def element(ax):
        idx = list(ax)
        for b, s, a in zip(starts, strides, axes):
            idx[a] = tb.add(tb.mul(ax[a], tb.const(s, "int64")), tb.const(b, "int64"))
        return _load(x, idx)

    return te.compute_ax(out_shape, element, name="T_strided_slice_with_axes", tag="injective")


def _ceildiv(a, b):
    return tb.floordiv(tb.sub(tb.add(a, b), 1), b)


def _dynamic_canonicalize(index, extent, stride):
    if isinstance(index, tir.Var) and isinstance(extent, tir.Var) and index.name == extent.name:
        return index
    begin_range = tb.if_then_else(tb.lt(stride, 0), -1, 0)
    end_range = tb.if_then_else(tb.lt(stride, 0), tb.sub(extent, 1), extent)
    if not (isinstance(index, tir.IntImm) and index.value >= 0):
        index = tb.if_then_else(tb.lt(index, 0), tb.add(index, extent), index)
    return tb.min_(tb.max_(index, begin_range), end_range)


def _canonical_bound(index, extent, stride):
    """CanonicalizeIndex: static when index, extent and stride are constants."""
    if all(_const(v) is not None for v in (index, extent, stride)):
        return tb.const(_canonicalize_index(_const(index), _const(extent), _const(stride)), "int64")
    return _dynamic_canonicalize(index, extent, stride)


def _dynamic_strided_slice(x, begin, end, strides, axes, assume_inbound) -> te.Tensor:
    """TOPI's dynamic_strided_slice_with_axes as TVM 0.27 runs it: without assume_inbound, begin
    and end are clamped into the dimension (DynamicCanonicalizeIndex) and the clamped begin
    indexes; the length is ceildiv(end - begin, stride), simplified as TOPI's analyzer does."""
    out_shape = list(x.shape)
    starts = []
    for b, e, s, a in zip(begin, end, strides, axes):
        extent = out_shape[a]
        raw_b, raw_e = b, e
        if assume_inbound:
            length = _ceildiv(tb.sub(e, b), s)
        else:
            b, e = (_canonical_bound(v, extent, s) for v in (b, e))
            length = tb.if_then_else(tb.lt(s, 0), _ceildiv(tb.sub(b, e), tb.neg(s)), _ceildiv(tb.sub(e, b), s))
        starts.append(rewrite_bounds(b))
        if isinstance(raw_b, tir.IntImm) and isinstance(raw_e, tir.IntImm) or assume_inbound:
            out_shape[a] = Analyzer().simplify(length)  # TOPI's analyzer->Simplify (no variable bounds)
        else:  # symbolic bounds: their if_then_else conditions need the comparison rules of rewrite_bounds
            out_shape[a] = rewrite_bounds(simplify(length))

    def element(ax):
        idx = list(ax)
        for b, s, a in zip(starts, strides, axes):
            idx[a] = tb.add(b, tb.mul(ax[a], s))
        return _load(x, idx)

    return te.compute_ax(out_shape, element, name="T_dynamic_strided_slice_with_axes", tag="injective")


def take(a: te.Tensor, indices: te.Tensor, axis=None, mode: str = "fast") -> te.Tensor:
    if axis is None:
        size = tb.const(1, "int64")
        for d in a.shape:
            size = tb.mul(size, d)

        def flat(ax):
            idx = indices(*ax)
            if mode == "clip":
                idx = tb.min_(tb.max_(0, idx), tb.sub(size, 1))
            elif mode == "wrap":
                idx = tb.truncmod(tb.add(tb.truncmod(idx, size), size), size)
            return _load(a, unravel_index(idx, a.shape))

        return te.compute_ax(indices.shape, flat, name="T_take", tag="injective")
    ndim = len(a.shape)
    axis = axis + ndim if axis < 0 else axis
    nidx = len(indices.shape)
    out_shape = list(a.shape[:axis]) + list(indices.shape) + list(a.shape[axis + 1:])
    dim = a.shape[axis]

    def element(ax):
        idx = indices(*ax[axis:axis + nidx])
        if mode == "clip":
            idx = tb.min_(tb.max_(0, idx), tb.sub(dim, 1))
        elif mode == "wrap":
            idx = tb.truncmod(tb.add(tb.truncmod(idx, dim), dim), dim)
        return a(*ax[:axis], idx, *ax[axis + nidx:])

    return te.compute_ax(out_shape, element, name="T_take", tag="injective")


def gather(data: te.Tensor, axis: int, indices: te.Tensor) -> te.Tensor:
    ndim = len(data.shape)
    axis = axis + ndim if axis < 0 else axis

    def element(ax):
        return data(*[indices(*ax) if i == axis else a for i, a in enumerate(ax)])

    return te.compute_ax(indices.shape, element, name="T_gather", tag="injective")


def broadcast_to(x: te.Tensor, shape) -> te.Tensor:
    shape = [_i64(d) for d in shape]
    common, _, uses = broadcast_shape(shape, x.shape)
    out_shape = [d if not isinstance(d, tir.IntImm) else c for d, c in zip(shape, common)]

    def element(ax):
        return x(*[a if use else tb.const(0, "int64") for a, use in zip(ax, uses) if use is not None])

    return te.compute_ax(out_shape, element, name="T_broadcast_to", tag="broadcast")


def tile(x: te.Tensor, reps) -> te.Tensor:
    ndim, rdim = len(x.shape), len(reps)
    reps = [tb.const(r, "int64") for r in reps]
    one = tb.const(1, "int32")
    if ndim > rdim:
        data_shape, reps = list(x.shape), [one] * (ndim - rdim) + reps
    else:
        data_shape = [one] * (rdim - ndim) + list(x.shape)
    new_shape = [tb.mul(d, r) for d, r in zip(data_shape, reps)]
    if _is_empty(new_shape):
        return te.compute_ax(new_shape, lambda ax: tb.cast(x.dtype, 0), name="T_tile", tag="broadcast")
    offset = max(rdim - ndim, 0)
    return te.compute_ax(new_shape, lambda ax: _load(x, [tb.floormod(ax[offset + i], x.shape[i]) for i in range(ndim)]),
                         name="T_tile", tag="broadcast")


def repeat(x: te.Tensor, repeats: int, axis) -> te.Tensor:
    if axis is None:
        size = x.shape[0]
        for d in x.shape[1:]:
            size = tb.mul(size, d)
        x, axis = reshape(x, [size]), 0
    ndim = len(x.shape)
    axis = axis + ndim if axis < 0 else axis
    out_shape = list(x.shape)
    out_shape[axis] = tb.mul(tb.const(repeats, "int32"), x.shape[axis])

    def element(ax):
        idx = list(ax)
        idx[axis] = tb.floordiv(ax[axis], repeats)
        return _load(x, idx)

    return te.compute_ax(out_shape, element, name="T_repeat", tag="broadcast")


def where(condition: te.Tensor, x: te.Tensor, y: te.Tensor) -> te.Tensor:
    common1, _, _ = broadcast_shape(x.shape, y.shape)
    oshape, _, _ = broadcast_shape(condition.shape, common1)
    _, _, c_uses = broadcast_shape(oshape, condition.shape)
    _, _, x_uses = broadcast_shape(oshape, x.shape)
    _, _, y_uses = broadcast_shape(oshape, y.shape)

    def index(ax, uses):
        return [a if use else tb.const(0, "int64") for a, use in zip(ax, uses) if use is not None]

    def element(ax):
        c = condition(*index(ax, c_uses))
        # `c != 0`; TVM's simplifier prints a bool (an int >= 0 once cast) as `0 < c`
        cond = tb.lt(0, tb.cast("int32", c)) if c.dtype == "bool" else tb.ne(c, 0)
        return tb.select(cond, x(*index(ax, x_uses)), y(*index(ax, y_uses)))

    return te.compute_ax(oshape, element, name="T_where", tag="broadcast")


# ----------------------------------------------------------------------------- legalizations


def _shape_values(call, arg) -> list | None:
    """The target shape of reshape/broadcast_to: the ShapeExpr's values (-1 resolved from the
    result's struct info)."""
    if isinstance(arg, rx.ShapeExpr) and not any(_const(v) == -1 for v in arg.values):
        return list(arg.values)
    sinfo = call.struct_info
    if isinstance(sinfo, rx.TensorStructInfo) and isinstance(sinfo.shape, tuple):
        return list(sinfo.shape)
    return None


def _tuple_fields(t, bb=None) -> list | None:
    """The fields of a tuple argument. With `bb`, as TVM's concat/stack/einsum/meshgrid
    legalizations: a tuple variable is followed through its bindings, and where they end
    in something else than a tuple expression (a split's result, a parameter), one
    TupleGetItem per field is emitted. None: not a tuple this can see."""
    n_fields = len(t.struct_info.fields_) if isinstance(t.struct_info, rx.TupleStructInfo) else None
    while isinstance(t, rx.Var) and bb is not None:
        bound = bb.lookup_binding(t)
        if not isinstance(bound, (rx.Tuple, rx.Var)):
            break
        t = bound
    if isinstance(t, rx.Tuple):
        return list(t.fields_)
    if isinstance(t, rx.Var) and bb is not None and n_fields is not None:
        return [bb.emit(rx.TupleGetItem(t, i)) for i in range(n_fields)]
    return None


def _prims(t) -> list | None:
    fields = _tuple_fields(t)
    if fields is None or not all(isinstance(f, rx.PrimValue) for f in fields):
        return None
    return [f.value for f in fields]


@register_legalize("relax.reshape")
def _reshape(bb, call):
    shape = _shape_values(call, call.args[1])
    if shape is None:
        return call
    return bb.call_te(reshape, call.args[0], rx.ShapeExpr(shape), primfunc_name_hint="reshape")


@register_legalize("relax.broadcast_to")
def _broadcast_to(bb, call):
    shape = _shape_values(call, call.args[1])
    if shape is None:
        return call
    return bb.call_te(broadcast_to, call.args[0], rx.ShapeExpr(shape), primfunc_name_hint="broadcast_to")


@register_legalize("relax.permute_dims")
def _permute_dims(bb, call):
    axes = call.attrs["axes"]
    return bb.call_te(transpose, call.args[0], list(axes) if axes is not None else None)


@register_legalize("relax.expand_dims")
def _expand_dims(bb, call):
    out_shape = rx.ShapeExpr(list(call.struct_info.shape))
    return bb.call_te(expand_dims, call.args[0], list(call.attrs["axis"]), out_shape,
                      primfunc_name_hint="expand_dims")


@register_legalize("relax.squeeze")
def _squeeze(bb, call):
    axis = call.attrs["axis"]
    return bb.call_te(squeeze, call.args[0], list(axis) if axis is not None else None)


@register_legalize("relax.concat")
def _concat(bb, call):
    fields = _tuple_fields(call.args[0], bb)
    axis = call.attrs["axis"]
    if fields is None or axis is None:
        return call
    return bb.call_te(concatenate, fields, axis)


@register_legalize("relax.stack")
def _stack(bb, call):
    fields = _tuple_fields(call.args[0], bb)
    if fields is None:
        return call
    return bb.call_te(stack, fields, call.attrs["axis"] or 0)


@register_legalize("relax.split")
def _split(bb, call):
    ios = call.attrs["indices_or_sections"]
    ios = ios if isinstance(ios, int) else list(ios)
    return bb.call_te(split, call.args[0], ios, call.attrs["axis"])


@register_legalize("relax.strided_slice")
def _strided_slice(bb, call):
    axes, begin, end = (_prims(a) for a in call.args[1:4])
    strides = _prims(call.args[4]) if len(call.args) > 4 else [tb.const(1, "int64")] * len(axes or [])
    if axes is None or begin is None or end is None or strides is None:
        return call
    return bb.call_te(strided_slice, call.args[0], begin, end, strides, [int(_const(a)) for a in axes],
                      assume_inbound=bool(call.attrs["assume_inbound"]))


@register_legalize("relax.take")
def _take(bb, call):
    return bb.call_te(take, call.args[0], call.args[1], call.attrs["axis"], mode=call.attrs.get("mode", "fast"))


@register_legalize("relax.gather_elements")
def _gather_elements(bb, call):
    return bb.call_te(gather, call.args[0], int(call.attrs["axis"]), call.args[1])


@register_legalize("relax.tile")
def _tile(bb, call):
    return bb.call_te(tile, call.args[0], list(call.attrs["repeats"]))


@register_legalize("relax.repeat")
def _repeat(bb, call):
    return bb.call_te(repeat, call.args[0], int(call.attrs["repeats"]), call.attrs["axis"],
                      primfunc_name_hint="repeat")


register_legalize("relax.where", lambda bb, call: bb.call_te(where, *call.args))


def one_hot(indices: te.Tensor, on_value, off_value, depth: int, axis: int, dtype: str) -> te.Tensor:
    """TOPI's one_hot: the output has `depth` inserted at `axis` (-1: last)."""
    true_axis = len(indices.shape) if axis == -1 else axis
    oshape = list(indices.shape)
    oshape.insert(true_axis, depth)
    on, off = tb.cast(dtype, on_value), tb.cast(dtype, off_value)

    def element(ax):
        index = indices(*[a for i, a in enumerate(ax) if i != true_axis])
        return tb.select(tb.eq(index, ax[true_axis]), on, off)

    return te.compute_ax(oshape, element, name="T_one_hot", tag="injective")


@register_legalize("relax.one_hot")
def _one_hot(bb, call):
    if int(call.attrs["axis"]) < -1:  # TOPI reads only -1 as "last" (TVM 0.27 builds a wrong shape)
        return call
    on, off = (a.value for a in call.args[1:3])
    return bb.call_te(one_hot, call.args[0], on, off, int(call.attrs["depth"]), int(call.attrs["axis"]), on.dtype)


@register_legalize("relax.nonzero")
def _nonzero(bb, call):
    # TVM 0.27: a packed runtime function (the result's length is known only at run time)
    from irtool.ir.expr import Op

    out = rx.Call(Op.get("relax.call_pure_packed"), [rx.ExternFunc("relax.run.nonzero"), call.args[0]], None,
                  [call.struct_info])
    out.struct_info = call.struct_info
    return out
