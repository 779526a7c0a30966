"""Unary elementwise operators, clip and cast: TOPI's python/tvm/topi/math.py.

Each is `te.compute(x.shape, lambda *i: f(x(*i)))`: a `compute` block over `i0, i1, ...`
(sign and logical_not are TOPI's C++ ops: `T_sign` over `ax0, ...`; CPP_UNARY). UNARY is the table: Relax name ->
(PrimFunc name as TVM's legalization names it, element rule).
"""

from __future__ import annotations

from collections.abc import Callable

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import call_topi_without_attr, prim_value, try_convert_to_scalar_const


def _intrin(name: str) -> Callable:
    return lambda v: tb.call(name, v)


def _abs(v):
    """TVM's `tirx.abs`: Select on signed ints, fabs on floats, identity on unsigned."""
    if tb.is_int(v.dtype):
        return tb.select(tb.ge(v, tb.const(0, v.dtype)), v, tb.neg(v))
    if tb.is_float(v.dtype):
        return tb.call("fabs", v)
    return v


def _isnan(v):
    """TVM's `tirx.isnan`: false for integers, float16 tested in float32."""
    if not tb.is_float(v.dtype):
        return tb.const(False, "bool")
    if tb.bits(v.dtype) == 16:
        v = tb.cast("float32", v)
    return tb.call("isnan", v, dtype="bool")


def _isinf(v):
    """TVM's `tirx.isinf`: `abs(x) == inf and not isnan(x)` (false for integers)."""
    if not tb.is_float(v.dtype):
        return tb.const(False, "bool")
    return tb.logical_and(tb.eq(_abs(v), tb.const(float("inf"), v.dtype)), tb.logical_not(_isnan(v)))


def _isfinite(v):
    """TVM's `tirx.isfinite`, `not isinf(x) and not isnan(x)`, as Simplify leaves it: the
    negated conjunction becomes `abs(x) != inf or isnan(x)` (true for integers)."""
    if not tb.is_float(v.dtype):
        return tb.const(True, "bool")
    nan = _isnan(v)
    return tb.logical_and(tb.logical_or(tb.ne(_abs(v), tb.const(float("inf"), v.dtype)), nan), tb.logical_not(nan))


def _negative(v):
    """Python's `-x` on a TIR expression: `x * -1` of its dtype."""
    return tb.mul(v, tb.const(-1, v.dtype))


def _sign(v):
    zero, one, minus_one = (tb.const(c, v.dtype) for c in (0, 1, -1))
    return tb.select(tb.gt(v, zero), one, tb.select(tb.lt(v, zero), minus_one, zero))


# relax name -> (PrimFunc name, element rule); TVM prefixes "tir_" to avoid libc names
UNARY: dict[str, tuple[str, Callable]] = {
    "relax.abs":         ("tir_abs",         _abs),
    "relax.acos":        ("tir_acos",        _intrin("acos")),
    "relax.acosh":       ("tir_acosh",       _intrin("acosh")),
    "relax.asin":        ("tir_asin",        _intrin("asin")),
    "relax.asinh":       ("tir_asinh",       _intrin("asinh")),
    "relax.atan":        ("tir_atan",        _intrin("atan")),
    "relax.atanh":       ("tir_atanh",       _intrin("atanh")),
    "relax.bitwise_not": ("tir_bitwise_not", lambda v: tir.Call(v.dtype, "tirx.bitwise_not", [v])),
    "relax.ceil":        ("tir_ceil",        _intrin("ceil")),
    "relax.cos":         ("tir_cos",         _intrin("cos")),
    "relax.cosh":        ("tir_cosh",        _intrin("cosh")),
    "relax.exp":         ("tir_exp",         _intrin("exp")),
    "relax.floor":       ("tir_floor",       _intrin("floor")),
    "relax.isfinite":    ("tir_isfinite",    _isfinite),
    "relax.isinf":       ("tir_isinf",       _isinf),
    "relax.isnan":       ("tir_isnan",       _isnan),
    "relax.logical_not": ("tir_logical_not", tb.logical_not),
    "relax.negative":    ("tir_negative",    _negative),
    "relax.round":       ("tir_round",       _intrin("nearbyint")),
    "relax.rsqrt":       ("tir_rsqrt",       _intrin("rsqrt")),
    "relax.sigmoid":     ("tir_sigmoid",     _intrin("sigmoid")),
    "relax.sin":         ("tir_sin",         _intrin("sin")),
    "relax.sinh":        ("tir_sinh",        _intrin("sinh")),
    "relax.square":      ("tir_square",      lambda v: tb.mul(v, v)),
    "relax.sqrt":        ("tir_sqrt",        _intrin("sqrt")),
    "relax.tan":         ("tir_tan",         _intrin("tan")),
    "relax.tanh":        ("tir_tanh",        _intrin("tanh")),
    "relax.trunc":       ("tir_trunc",       _intrin("trunc")),
}


# the ones TOPI implements in C++: a `T_<name>` block over ax0, ax1, ...
CPP_UNARY = {"relax.logical_not": "T_logical_not", "relax.bitwise_not": "T_bitwise_not",
             "relax.square": "T_multiply"}  # TVM legalizes square as `x * x` of te tensors: topi.multiply


def unary(rule: Callable, cpp_name: str | None = None) -> Callable:
    """The TOPI function `f(x)` of an element rule."""
    def fn(x: te.Tensor) -> te.Tensor:
        if cpp_name is not None:
            return te.compute_ax(x.shape, lambda i: rule(x(i)), name=cpp_name)
        return te.compute(x.shape, lambda *i: rule(x(*i)))

    return fn


def log(x: te.Tensor) -> te.Tensor:
    """topi.log: integer inputs are first cast to float32 (a second compute)."""
    if tb.is_int(x.dtype):
        x = te.compute(x.shape, lambda *i: tb.cast("float32", x(*i)))
    return te.compute(x.shape, lambda *i: tb.call("log", x(*i)))


def sign(x: te.Tensor) -> te.Tensor:
    return te.compute_ax(x.shape, lambda i: _sign(x(i)), name="T_sign")


def erf_compute(x: te.Tensor) -> te.Tensor:
    """topi.erf: one `compute` block in x's dtype."""
    return te.compute(x.shape, lambda *i: tb.call("erf", x(*i)))


def erf(x: te.Tensor) -> te.Tensor:
    """TVM's te_erf: float16 is computed in float32."""
    if x.dtype == "float16":
        return cast(erf_compute(cast(x, "float32")), "float16")
    return erf_compute(x)


def clip(x: te.Tensor, a_min, a_max) -> te.Tensor:
    def element(*i):
        v = x(*i)
        lo = tb.cast(v.dtype, a_min) if not isinstance(a_min, (int, float)) else tb.const(a_min, v.dtype)
        hi = tb.cast(v.dtype, a_max) if not isinstance(a_max, (int, float)) else tb.const(a_max, v.dtype)
        return tb.max_(tb.min_(v, hi), lo)

    return te.compute(x.shape, element)


def cast(x: te.Tensor, dtype: str) -> te.Tensor:
    return te.compute(x.shape, lambda *i: tb.cast(dtype, x(*i)))


for _relax, (_fname, _rule) in UNARY.items():
    register_legalize(_relax, call_topi_without_attr(unary(_rule, CPP_UNARY.get(_relax)), _fname))
register_legalize("relax.log", lambda bb, call: bb.call_te(log, call.args[0], primfunc_name_hint="tir_log"))
register_legalize("relax.sign", lambda bb, call: bb.call_te(sign, call.args[0], primfunc_name_hint="tir_sign"))
register_legalize("relax.erf", lambda bb, call: bb.call_te(erf, call.args[0], primfunc_name_hint="erf"))
register_legalize("relax.clip", lambda bb, call: bb.call_te(clip, call.args[0], prim_value(call.args[1]),
                                                             prim_value(call.args[2]), primfunc_name_hint="tir_clip"))


@register_legalize("relax.astype")
def _astype(bb, call):
    arg = try_convert_to_scalar_const(call.args[0])
    dtype = call.attrs["dtype"]
    if arg is not call.args[0]:  # a 0-d constant folds to a constant of the new dtype
        import numpy as np

        from irtool.ir import relax as rx
        return rx.Constant(np.asarray(call.args[0].data).astype(dtype))
    return bb.call_te(cast, arg, dtype)
