"""leaky_relu, prelu, dropout and batch_flatten: TOPI's python/tvm/topi/nn/elemwise.py and TVM's
legalizations of dropout (inference: the input unchanged and an all-ones mask) and batch_flatten.

    leaky_relu(x, alpha)  `compute`: Select(0 < x, x, x * alpha)         axes i0, i1, ...
    prelu(x, slope, axis) `compute`: Select(0 < x, x, x * slope[i_axis]) (a 1-element slope is
                          first broadcast by `slope_broadcasted`)
    dropout(x)            `compute` (identity) and `T_full_like` (1.0): one PrimFunc, two outputs
    batch_flatten(x)      TOPI's reshape to the result shape (N, product of the rest): `T_reshape`
"""

from __future__ import annotations

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import const_int
from .norm import float_const


def leaky_relu(x: te.Tensor, alpha: float) -> te.Tensor:
    def element(*i):
        value = x(*i)
        return tb.select(tb.gt(value, 0), value, tb.mul(value, float_const(alpha, value.dtype)))

    return te.compute(x.shape, element)


def prelu(x: te.Tensor, slope: te.Tensor, axis: int = 1) -> te.Tensor:
    if const_int(slope.shape[0]) == 1:
        one = slope
        slope = te.compute((const_int(x.shape[axis]),), lambda c: one(0), name="slope_broadcasted")

    def element(*i):
        value = x(*i)
        return tb.select(tb.gt(value, 0), value, tb.mul(value, slope(i[axis])))

    return te.compute(x.shape, element)


def identity(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: x(*i))


def full_like(x: te.Tensor, fill_value: float) -> te.Tensor:
    value = tb.const(fill_value, x.dtype)
    return te.compute_ax(x.shape, lambda ax: value, name="T_full_like", tag="elemwise")


register_legalize("relax.nn.leakyrelu", lambda bb, call: bb.call_te(leaky_relu, call.args[0], call.attrs["alpha"],
                                                                    primfunc_name_hint="leaky_relu"))
register_legalize("relax.nn.prelu", lambda bb, call: bb.call_te(prelu, call.args[0], call.args[1],
                                                                call.attrs["axis"], primfunc_name_hint="prelu"))
register_legalize("relax.nn.dropout", lambda bb, call: bb.call_te(lambda x: [identity(x), full_like(x, 1.0)],
                                                                  call.args[0], primfunc_name_hint="dropout"))


@register_legalize("relax.nn.batch_flatten")
def _batch_flatten(bb, call):
    from .transform import reshape  # the shape/transform family

    return bb.call_te(reshape, call.args[0], list(call.struct_info.shape), primfunc_name_hint="reshape")
