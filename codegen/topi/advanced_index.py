"""TVM 0.27's Relax index operators as its LegalizeOps builds them (python/tvm/relax/transform/
legalize_ops/manipulate.py, TOPI's computes):

    index_tensor   `index_tensor`: each field of the index tuple bound to a variable first
                   (`gv = (i0, i1)[0]`, TVM's bb.emit of a TupleGetItem), then TOPI's adv_index:
                   the indices broadcast to their common shape (`T_broadcast_to`, `_1` ...; not
                   for a single index) and `advanced_index[b..., rest...] = data[I0[b], I1[b], ..., rest]`
    reverse_sequence  `reverse_sequence` (TOPI's C++ `T_reverse_sequence`): along seq_axis
                   `len <= 1 or len <= i ? i : (len > n ? n - 1 - i : len - 1 - i)`, len the
                   batch's length; where one of seq_lengths' length and the batch axis is a
                   constant and the other not, TOPI's check fails in TVM and the call stays
    slice_scatter  `slice_scatter` (TOPI's python slice_scatter): a bool mask of the slice's
                   positions along the axis (`T_full`, `T_arange`, comparisons joined by
                   `T_logical_and`), reshaped and broadcast; src taken at the clipped slice index
                   `(i - start + step - 1) // step`; `T_where(mask, taken, data)`. A slice of the
                   whole axis is topi.identity of src (`compute`). Constant bounds and axis extent
                   only (TOPI compares them as Python values); otherwise the call stays, as it does
                   where TVM's PrimFunc would read src out of bounds (a slice ending before the
                   axis does, see SLICE_SCATTER_READS_OUT_OF_BOUNDS)
    index_put      `index_put` (TOPI's python index_put, an ir_builder program as scatter.py's):
                   one opaque `index_put_generic` sblock copying data, then for each k of the
                   indices' broadcast shape (parallel) out[flat(I0[k] + (I0[k] < 0) * d0, ...)]
                   = values[k] (`+=` with accumulate); the indices a tuple literal or one tensor,
                   index shapes TOPI broadcasts (not two size variables: TVM's TOPI raises there)
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..call_te import gen_call_tir_inputs, make_call_tir
from . import register_legalize
from .broadcast import broadcast_shape, topi_binary
from .common import const_int
from .creation import full
from .elemwise import clip
from .scatter import _load as _load_flat
from .scatter import _loop, _mul, _product, _seq_scope
from .scatter import _store as _store_flat
from .transform import _load, broadcast_to, reshape, take, where

# ----------------------------------------------------------------------------- index_tensor


def index_tensor(data: te.Tensor, indices: list) -> te.Tensor:
    """TOPI's adv_index (include/tvm/topi/transform.h)."""
    common = list(indices[0].shape)
    for index in indices[1:]:
        common = broadcast_shape(common, list(index.shape))[0]
    spread = indices if len(indices) == 1 else [broadcast_to(i, common) for i in indices]
    out_shape = common + list(data.shape[len(indices):])

    def element(ax):
        return data(*[i(*ax[:len(common)]) for i in spread], *ax[len(common):])

    return te.compute_ax(out_shape, element, name="advanced_index", tag="injective")


@register_legalize("relax.index_tensor")
def _index_tensor(bb, call):
    if not isinstance(call.struct_info, rx.TensorStructInfo) or not isinstance(call.struct_info.shape, tuple):
        return call
    indices = call.args[1]
    fields = [bb.emit(rx.TupleGetItem(indices, i)) for i in range(len(indices.struct_info))]
    return bb.call_te(index_tensor, call.args[0], fields)


# ----------------------------------------------------------------------------- reverse_sequence


def reverse_sequence(x: te.Tensor, seq_lengths: te.Tensor, seq_axis: int, batch_axis: int) -> te.Tensor:
    """TOPI's reverse_sequence (include/tvm/topi/transform.h) with sequence lengths."""
    ndim = len(x.shape)
    seq, batch = seq_axis % ndim, batch_axis % ndim

    def element(ax):
        length = tb.cast("int64", seq_lengths(ax[batch]))  # CreatePrimFunc's int64 index normalisation
        i, n = ax[seq], x.shape[seq]
        keep = tb.logical_or(tb.le(length, 1), tb.le(length, i))
        flipped = tb.if_then_else(tb.gt(length, n), tb.sub(tb.sub(n, 1), i), tb.sub(tb.sub(length, 1), i))
        return _load(x, [tb.if_then_else(keep, i, flipped) if k == seq else a for k, a in enumerate(ax)])

    return te.compute_ax(x.shape, element, name="T_reverse_sequence", tag="injective")


@register_legalize("relax.reverse_sequence")
def _reverse_sequence(bb, call):
    data, lengths = (a.struct_info for a in call.args)
    if not isinstance(data.shape, tuple) or not isinstance(lengths.shape, tuple):
        return call
    batch = call.attrs["batch_axis"] % len(data.shape)
    if (const_int(lengths.shape[0]) is None) != (const_int(data.shape[batch]) is None):
        return call  # TOPI compares the two as constants (GetConstInt): TVM's legalization fails
    return bb.call_te(reverse_sequence, *call.args, int(call.attrs["seq_axis"]), int(call.attrs["batch_axis"]),
                      primfunc_name_hint="reverse_sequence")


# ----------------------------------------------------------------------------- slice_scatter

# TOPI takes src at every position of the axis, the clipped slice index of those past the slice's
# end beyond src's extent (the where discards them): TVM's PrimFunc then reads src out of bounds.
# We leave such a call (as an out-of-range reflect pad, docs/passes.md); the tests lift this guard
# to compare the text with TVM's.
SLICE_SCATTER_READS_OUT_OF_BOUNDS = False

_and, _ge, _lt, _eq = (topi_binary(n) for n in ("logical_and", "greater_equal", "less", "equal"))
_sub, _add, _floor_div, _floor_mod = (topi_binary(n) for n in ("subtract", "add", "floor_divide", "floor_mod"))


def slice_scatter(data: te.Tensor, src: te.Tensor, start: int, end: int, step: int, axis: int) -> te.Tensor:
    """TOPI's slice_scatter (python/tvm/topi/slice_scatter.py)."""
    axis %= len(data.shape)
    dim = const_int(data.shape[axis])
    if start == 0 and end == dim and step == 1:
        return te.compute(src.shape, lambda *i: src(*i))  # topi.identity
    i64 = [tb.const(v, "int64") for v in (start, end, step)]
    mask = full((dim,), "bool", True)
    idx = te.compute_ax((dim,), lambda ax: ax[0], name="T_arange", tag="injective")  # the cast: _cast_arange
    if start != 0:
        mask = _and(mask, _ge(idx, i64[0]))
    if end != dim:
        mask = _and(mask, _lt(idx, i64[1]))
    if step != 1:
        mask = _and(mask, _eq(_floor_mod(_sub(idx, i64[0]), i64[2]), tb.const(0, "int64")))
    mask = reshape(mask, [dim if k == axis else 1 for k in range(len(data.shape))])
    index = _floor_div(_add(_sub(idx, i64[0]), tb.const(step - 1, "int64")), i64[2])
    taken = take(src, clip(index, 0, dim - 1), axis=axis)
    return where(broadcast_to(mask, data.shape), taken, data)


@register_legalize("relax.slice_scatter")
def _slice_scatter(bb, call):
    data = call.args[0].struct_info
    bounds = [const_int(a.value) if isinstance(a, rx.PrimValue) else None for a in call.args[2:]]
    if None in bounds or not isinstance(data.shape, tuple) or const_int(data.shape[call.attrs["axis"]]) is None:
        return call
    start, end, step = bounds
    dim = const_int(data.shape[call.attrs["axis"]])
    if min(max((dim - start + step - 2) // step, 0), dim - 1) >= (end - start + step - 1) // step \
            and not SLICE_SCATTER_READS_OUT_OF_BOUNDS:
        return call
    func, args, out_sinfo, _ = gen_call_tir_inputs(slice_scatter, call.args[0], call.args[1], *bounds,
                                                   int(call.attrs["axis"]))
    return make_call_tir(bb.add_function(func.replace(body=_as_tvm_prints(func.body)), "slice_scatter"), args,
                         out_sinfo)


def _as_tvm_prints(stmt):
    """Two of TVM's forms: TOPI's `arange(0, n)` counts in int32 and casts to int64, and
    CreatePrimFunc's index normaliser makes the counter int64 but keeps the cast
    (`T_arange[v] = T.Cast("int64", v)`); the clip to [0, 0] of an axis of extent 1 is folded to
    0 by its simplifier (`compute[v] = T.int64(0)`, reading nothing)."""
    if isinstance(stmt, tir.SeqStmt):
        return tir.SeqStmt([_as_tvm_prints(s) for s in stmt.seq])
    if isinstance(stmt, (tir.SBlockRealize, tir.For)):
        return stmt.replace(**{f: _as_tvm_prints(getattr(stmt, f)) for f in ("block", "body") if hasattr(stmt, f)})
    if isinstance(stmt, tir.SBlock):
        body = stmt.body
        if stmt.name == "T_arange" and isinstance(body, tir.BufferStore) and isinstance(body.value, tir.Var):
            return stmt.replace(body=body.replace(value=tir.Cast("int64", body.value)))
        value = getattr(body, "value", None)
        if stmt.name == "compute" and isinstance(value, tir.BinOp) and value.op == "max" \
                and const_int(value.b) == 0 and isinstance(value.a, tir.BinOp) and const_int(value.a.b) == 0:
            return stmt.replace(body=body.replace(value=tb.const(0, "int64")), reads=())
        return stmt.replace(body=_as_tvm_prints(body))
    return stmt


# ----------------------------------------------------------------------------- index_put


def index_put(data: te.Tensor, indices: list, values: te.Tensor, accumulate: bool) -> te.Tensor:
    """TOPI's index_put (python/tvm/topi/index_put.py)."""
    shape = list(data.shape)
    full_range = _product(shape)
    index_shapes = [list(i.shape) for i in indices]
    rank = max(len(sh) for sh in index_shapes)
    common = _index_put_broadcast(index_shapes)
    index_len = _product(common)

    def body(ins, out):
        data_b, index_bs, values_b = ins[0], ins[1:-1], ins[-1]

        def element(k):
            rest, spread = k, []
            for a in reversed(range(rank)):
                spread.insert(0, tb.floormod(rest, common[a]))
                rest = tb.floordiv(rest, common[a])
            flat, stride = 0, 1
            for dim in reversed(range(len(shape))):
                offset, index_stride = 0, 1
                for a in reversed(range(rank)):
                    k_dim = len(index_shapes[dim]) - rank + a
                    if k_dim >= 0:
                        size = index_shapes[dim][k_dim]
                        offset = _add_int(offset, _mul(0 if const_int(size) == 1 else spread[a], index_stride))
                        index_stride = _mul(index_stride, size)
                value = _load_flat(index_bs[dim], tb.const(offset, "int64") if isinstance(offset, int) else offset)
                shifted = tb.add(value, tb.mul(tb.lt(value, 0), shape[dim]))
                flat = _add_int(flat, _mul(shifted, stride))
                stride = _mul(stride, shape[dim])
            update = _load_flat(values_b, k)
            if accumulate:
                update = tb.add(_load_flat(out, flat), update)
            return _store_flat(out, flat, update)

        return _seq_scope(_loop(full_range, "parallel", lambda v: _store_flat(out, v, _load_flat(data_b, v))),
                          _loop(index_len, "parallel", element))

    out_buf = tir.Buffer("out_buf", data.shape, data.dtype)
    return te.extern(out_buf, [data, *indices, values], body, name="index_put.generic")


def _index_put_broadcast(index_shapes: list) -> list | None:
    """TOPI's broadcast of the index shapes: a dim other than 1 must equal the one before it as
    a constant (two size variables fail, even the same one); None where TOPI raises."""
    rank = max(len(sh) for sh in index_shapes)
    common = []
    for a in range(rank):
        size = 1
        for sh in index_shapes:
            k = len(sh) - rank + a
            if k >= 0 and const_int(sh[k]) != 1:
                if const_int(size) == 1:
                    size = sh[k]
                elif const_int(sh[k]) is None or const_int(sh[k]) != const_int(size):
                    return None
        common.append(size)
    return common


def _add_int(a, b):
    """`a + b` with TOPI's Python 0 start folded away."""
    if isinstance(a, int) and a == 0:
        return b
    return a + b if isinstance(a, int) and isinstance(b, int) else tb.add(a, b)


@register_legalize("relax.index_put")
def _index_put(bb, call):
    indices = call.args[1]
    if isinstance(indices, rx.Tuple):
        fields = list(indices.fields_)
    elif isinstance(indices.struct_info, rx.TensorStructInfo):  # one index tensor, as TVM takes it
        fields = [indices]
    else:
        return call
    if not isinstance(call.struct_info.shape, tuple):
        return call
    shapes = [f.struct_info.shape for f in fields]
    if any(not isinstance(sh, tuple) for sh in shapes) or _index_put_broadcast(
            [[tb.const(d, "int64") if isinstance(d, int) else d for d in sh] for sh in shapes]) is None:
        return call  # TOPI's broadcast raises in TVM
    return bb.call_te(index_put, call.args[0], fields, call.args[2],
                      bool(call.attrs["accumulate"]), primfunc_name_hint="index_put")
