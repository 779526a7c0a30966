"""leaky_relu, prelu, dropout and batch_flatten: TOPI's python/tvm/topi/nn/elemwise.py and TVM's
legalizations of dropout (inference: the input unchanged and an all-ones mask) and batch_flatten.

    leaky_relu(x, alpha)  `compute`: Select(0 < x, x, x * alpha)         axes i0, i1, ...
    prelu(x, slope, axis) `compute`: Select(0 < x, x, x * slope[i_axis]) (a 1-element slope is
                          first broadcast by `slope_broadcasted`)
    dropout(x)            `compute` (identity) and `T_full_like` (1.0): one PrimFunc, two outputs
    batch_flatten(x)      TOPI's reshape to the result shape (N, product of the rest): `T_reshape`
    gelu(x)               TVM's te_gelu of topi ops: x * (0.5 + erf(x * 0.5 ** 0.5) * 0.5), each op a
                          block (`T_multiply`, `compute`, `T_multiply_1`, `T_add`, `T_multiply_2`);
                          float16 takes erf in float32 between two casts
    gelu_tanh(x)          0.5 * x * (1 + tanh(sqrt(2 / pi) * x * (1 + 0.044715 * x * x))), in
                          Python's evaluation order (left operand first)
    silu(x)               x * sigmoid(x): `compute` (sigmoid), `T_multiply`
    selu(x)               scale * (max(x, 0) + min(0, alpha * (exp(x) - 1))), TVM's te_selu
"""

from __future__ import annotations

import math

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import topi_binary
from .common import const_int
from .elemwise import cast, erf_compute
from .norm import float_const

_multiply, _add, _subtract = topi_binary("multiply"), topi_binary("add"), topi_binary("subtract")
_maximum, _minimum = topi_binary("maximum"), topi_binary("minimum")


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


def gelu(x: te.Tensor) -> te.Tensor:
    dtype = x.dtype
    erf_input = _multiply(x, float_const(0.5 ** 0.5, dtype))
    if dtype == "float16":
        erf = cast(erf_compute(cast(erf_input, "float32")), "float16")
    else:
        erf = erf_compute(erf_input)
    return _multiply(x, _add(float_const(0.5, dtype), _multiply(erf, float_const(0.5, dtype))))


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    dtype = x.dtype
    half_x = _multiply(float_const(0.5, dtype), x)
    scaled = _multiply(float_const(math.sqrt(2.0 / math.pi), dtype), x)
    cubic = _add(float_const(1.0, dtype), _multiply(_multiply(float_const(0.044715, dtype), x), x))
    product = _multiply(scaled, cubic)
    inner = te.compute(x.shape, lambda *i: tb.call("tanh", product(*i)))
    return _multiply(half_x, _add(float_const(1.0, dtype), inner))


def silu(x: te.Tensor) -> te.Tensor:
    return _multiply(x, te.compute(x.shape, lambda *i: tb.call("sigmoid", x(*i))))


def selu(x: te.Tensor) -> te.Tensor:
    dtype = x.dtype
    alpha, scale = float_const(1.6732632423543772848170429916717, dtype), float_const(1.0507009873554804934193349852946,
                                                                                     dtype)
    positive = _maximum(x, float_const(0.0, dtype))
    exp = te.compute(x.shape, lambda *i: tb.call("exp", x(*i)))
    negative = _minimum(float_const(0.0, dtype), _multiply(alpha, _subtract(exp, float_const(1.0, dtype))))
    return _multiply(scale, _add(positive, negative))


for _name, _fn in (("gelu", gelu), ("gelu_tanh", gelu_tanh), ("silu", silu), ("selu", selu)):
    register_legalize(f"relax.nn.{_name}", lambda bb, call, fn=_fn, name=_name: bb.call_te(fn, call.args[0],
                                                                                        primfunc_name_hint=name))
