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
"""

from __future__ import annotations

from irtool.ir import relax as rx

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import broadcast_shape
from .common import const_int
from .transform import _load, broadcast_to

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
