"""Legalizations of TVM 0.27's Relax tril, triu, eye, eye_like, outer and flatten
(legalize_ops/{create,linear_algebra,manipulate}.py and the TOPI computes they call):

    tril / triu    TOPI's trilu: `trilu` over i0, i1, ...: Select(row >= col - k (tril) or
                   row <= col - k (triu), x[...], 0), k cast to int32 first (TOPI's "make sure
                   the datatype is consistent"), as CreatePrimFunc's simplifier prints it
                   (`v_i1 <= v_i0`, `v_i0 < v_i1`); PrimFunc names tril / triu
    eye            TOPI's eye: `eye` over i, j: if_then_else(i == j - k, 1, 0) in the dtype;
                   the sizes and k are Python numbers where constant (TVM's python_native
                   scalar conversion), else the TIR expressions (symbolic sizes)
    eye_like       the same over x's shape, in x's dtype: TVM 0.27's legalization ignores the
                   dtype attribute (`R.eye_like(x, 0, "int8")` of a float32 x becomes a float32
                   eye, its struct info no longer the call's), as we do
    outer          Relax's te_outer: `outer` over i, j: x1[i] * x2[j]
    flatten        TOPI's reshape to the call's (prod(shape),): `T_reshape`, PrimFunc `reshape`
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import prim_value
from .transform import reshape


def trilu(data: te.Tensor, k, upper: bool) -> te.Tensor:
    if k.dtype != "int32":
        k = tir.Cast("int32", k)  # TOPI builds the node itself: no folding until the simplifier

    def element(*idx):
        row, col = idx[-2], idx[-1]
        check = (tb.le if upper else tb.ge)(row, tb.sub(col, k))
        return tir.Select(check, data(*idx), tb.const(0, data.dtype))

    return te.compute(data.shape, element, name="trilu", tag="elemwise")


def _trilu(upper: bool, name: str):
    def legalize(bb, call):
        return bb.call_te(trilu, call.args[0], prim_value(call.args[1]), upper, primfunc_name_hint=name)
    return legalize


register_legalize("relax.tril", _trilu(False, "tril"))
register_legalize("relax.triu", _trilu(True, "triu"))


def _python_native(e):
    """TVM's _try_convert_to_scalar_const(python_native=True) of a PrimValue: a constant as a
    Python number, anything else as its TIR expression."""
    value = prim_value(e)
    return value.value if isinstance(value, (tir.IntImm, tir.FloatImm)) else value


def eye(n, m, k, dtype: str) -> te.Tensor:
    return te.compute((n, m), lambda i, j: tb.if_then_else(tb.eq(i, tb.sub(j, k)), tb.const(1, dtype),
                                                           tb.const(0, dtype)), name="eye")


@register_legalize("relax.eye")
def _eye(bb, call):
    n, m, k = (_python_native(a) for a in call.args)
    return bb.call_te(eye, n, m, k, call.attrs["dtype"], primfunc_name_hint="eye")


@register_legalize("relax.eye_like")
def _eye_like(bb, call):
    sinfo = call.args[0].struct_info
    if not isinstance(sinfo.shape, tuple):
        return call
    n, m = sinfo.shape
    return bb.call_te(eye, n, m, _python_native(call.args[1]), sinfo.dtype, primfunc_name_hint="eye_like")


def outer(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return te.compute((a.shape[0], b.shape[0]), lambda i, j: tb.mul(a(i), b(j)), name="outer")


register_legalize("relax.outer", lambda bb, call: bb.call_te(outer, *call.args, primfunc_name_hint="outer"))


@register_legalize("relax.flatten")
def _flatten(bb, call):
    shape = call.struct_info.shape
    if not isinstance(shape, tuple):
        return call
    return bb.call_te(reshape, call.args[0], rx.ShapeExpr(list(shape)), primfunc_name_hint="reshape")
