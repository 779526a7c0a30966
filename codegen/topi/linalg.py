"""R.matmul: TVM's te_matmul (python/tvm/relax/transform/legalize_ops/linear_algebra.py).

A `matmul` block over `i0, i1, ...` of the broadcast batch shape and the reduce axis `k`:
`matmul[i..] += a[batch.., i, k] * b[batch.., k, j]` (1-d operands are not indexed on the
missing dim; a batch dim of 1 is indexed by 0 when the other side's differs), operands cast
to `out_dtype` when one is given; an empty `k` gives zeros.
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import broadcast_shape


def _is_one(d) -> bool:
    return isinstance(d, tir.IntImm) and d.value == 1


def matmul(a: te.Tensor, b: te.Tensor, out_dtype: str = "") -> te.Tensor:
    a_shape, b_shape = list(a.shape), list(b.shape)
    a_prepended, b_appended = len(a_shape) == 1, len(b_shape) == 1
    if a_prepended:
        a_shape.insert(0, tb.const(1, "int64"))
    if b_appended:
        b_shape.append(tb.const(1, "int64"))
    a_larger = len(a_shape) > len(b_shape)
    offset = abs(len(a_shape) - len(b_shape))
    batch, _, _ = broadcast_shape(a_shape[:-2], b_shape[:-2])
    output_shape = list(batch)
    if not a_prepended:
        output_shape.append(a_shape[-2])
    if not b_appended:
        output_shape.append(b_shape[-1])
    dtype = out_dtype or a.dtype
    if isinstance(a_shape[-1], tir.IntImm) and a_shape[-1].value == 0:
        return te.compute(output_shape, lambda *_: tb.const(0, dtype), name="matmul")

    def element(*idx):
        k = te.reduce_axis((0, a_shape[-1]), name="k")
        a_idx, b_idx = [], []
        for i in range(offset):
            (a_idx if a_larger else b_idx).append(idx[i])
        for i in range(offset, len(output_shape) - (2 - a_prepended - b_appended)):
            a_dim = a_shape[i if a_larger else i - offset]
            b_dim = b_shape[i if not a_larger else i - offset]
            equal = isinstance(a_dim, tir.IntImm) and isinstance(b_dim, tir.IntImm) and a_dim.value == b_dim.value \
                or a_dim is b_dim
            if not equal:
                a_idx.append(tb.const(0, "int64") if _is_one(a_dim) else idx[i])
                b_idx.append(tb.const(0, "int64") if _is_one(b_dim) else idx[i])
            else:
                a_idx.append(idx[i])
                b_idx.append(idx[i])
        if not a_prepended:
            a_idx.append(idx[-2 + b_appended])
        a_idx.append(k.var)
        b_idx.append(k.var)
        if not b_appended:
            b_idx.append(idx[-1])
        lhs, rhs = a(*a_idx), b(*b_idx)
        if out_dtype:
            lhs, rhs = tb.cast(out_dtype, lhs), tb.cast(out_dtype, rhs)
        return te.sum(tb.mul(lhs, rhs), axis=k)

    return te.compute(output_shape, lambda *idx: element(*idx), name="matmul")


@register_legalize("relax.matmul")
def _matmul(bb, call):
    out_dtype = call.attrs["out_dtype"] if call.attrs is not None else ""
    if out_dtype:
        return bb.call_te(lambda a, b: matmul(a, b, out_dtype), call.args[0], call.args[1],
                          primfunc_name_hint="matmul")
    return bb.call_te(matmul, call.args[0], call.args[1], primfunc_name_hint="matmul")
