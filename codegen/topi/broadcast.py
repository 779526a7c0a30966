"""Binary broadcast operators: TOPI's C++ `TOPI_DEFINE_BCAST_OP` (include/tvm/topi/broadcast.h).

`T_<name>` blocks over axes `ax0, ax1, ...` of the broadcast shape (detail/broadcast.h:
equal dims index both sides, a 1 is indexed by 0, two different symbolic dims give
`max(n, m)`); a scalar operand (a TIR expression: the legalization inlines 0-d constants)
is used as it is. BINARY is the table: Relax name -> element rule.
"""

from __future__ import annotations

from collections.abc import Callable

from irtool.analysis.struct_info_fit import prim_equal
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import is_relax_expr, try_convert_to_scalar_const


def _floor_divide(a, b):
    if not tb.is_float(a.dtype):
        return tb.floordiv(a, b)
    return tb.call("floor", tb.div(a, b))


def _floor_mod(a, b):
    if not tb.is_float(a.dtype):
        return tb.floormod(a, b)
    return tb.sub(a, tb.mul(_floor_divide(a, b), b))


def _tir_call(op: str) -> Callable:
    """An element rule that is TIR's bitwise intrinsic `op` (`a & b`, `a << b` ...)."""
    return lambda a, b: tir.Call(a.dtype, f"tirx.{op}", [a, b])


# relax name -> element rule (a, b) -> PrimExpr
BINARY: dict[str, Callable] = {
    "add":           tb.add,
    "subtract":      tb.sub,
    "multiply":      tb.mul,
    "divide":        tb.div,
    "floor_divide":  _floor_divide,
    "mod":           tb.truncmod,
    "floor_mod":     _floor_mod,
    "power":         lambda a, b: tb.call("pow", a, b),
    "maximum":       tb.max_,
    "minimum":       tb.min_,
    "equal":         tb.eq,
    "not_equal":     tb.ne,
    "less":          tb.lt,
    "less_equal":    tb.le,
    "greater":       tb.gt,
    "greater_equal": tb.ge,
    "logical_and":   tb.logical_and,
    "logical_or":    tb.logical_or,
    "logical_xor":   _tir_call("bitwise_xor"),
    "bitwise_and":   _tir_call("bitwise_and"),
    "bitwise_or":    _tir_call("bitwise_or"),
    "bitwise_xor":   _tir_call("bitwise_xor"),
    "left_shift":    _tir_call("shift_left"),
    "right_shift":   _tir_call("shift_right"),
}


def _equal_dims(a, b) -> bool:
    # TOPI's EqualCheck (deep equality, then the analyzer): two buffers' `d * 2` are one size,
    # not max(d * 2, d * 2)
    if isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm):
        return a.value == b.value
    return a is b or prim_equal(a, b)


def _is_one(d) -> bool:
    return isinstance(d, tir.IntImm) and d.value == 1


def broadcast_shape(shape1, shape2):
    """TOPI's BroadcastShape: (common shape, which output dims index each side)."""
    n1, n2 = len(shape1), len(shape2)
    common, uses1, uses2 = [], [], []
    for i in range(1, min(n1, n2) + 1):
        d1, d2 = shape1[n1 - i], shape2[n2 - i]
        static1, static2 = isinstance(d1, tir.IntImm), isinstance(d2, tir.IntImm)
        if _equal_dims(d1, d2):
            common.append(d1), uses1.append(True), uses2.append(True)
        elif _is_one(d1):
            common.append(d2), uses1.append(False), uses2.append(True)
        elif _is_one(d2):
            common.append(d1), uses1.append(True), uses2.append(False)
        elif not static1 and not static2:
            common.append(tb.max_(d1, d2)), uses1.append(True), uses2.append(True)
        elif not static1:
            common.append(d2), uses1.append(True), uses2.append(True)
        elif not static2:
            common.append(d1), uses1.append(True), uses2.append(True)
        else:
            raise ValueError(f"incompatible broadcast dims {d1.value} and {d2.value}")
    longer = shape1 if n1 > n2 else shape2
    for i in range(min(n1, n2) + 1, max(n1, n2) + 1):
        common.append(longer[max(n1, n2) - i])
        (uses1 if n1 > n2 else uses2).append(True)
        (uses2 if n1 > n2 else uses1).append(None)
    return common[::-1], uses1[::-1], uses2[::-1]


def _index(axes, uses):
    """InputIndexFromBroadcast: the axis where the side has the dim, 0 where it is 1."""
    return [ax if use else tb.const(0, ax.dtype) for ax, use in zip(axes, uses) if use is not None]


def with_broadcast(rule: Callable, a, b, name: str) -> te.Tensor:
    if isinstance(a, te.Tensor) and isinstance(b, te.Tensor):
        shape, uses1, uses2 = broadcast_shape(a.shape, b.shape)
        return te.compute_ax(shape, lambda ax: rule(a(_index(ax, uses1)), b(_index(ax, uses2))), name,
                             tag="broadcast")
    if isinstance(a, te.Tensor):
        return te.compute_ax(a.shape, lambda ax: rule(a(ax), b), name, tag="elemwise")
    return te.compute_ax(b.shape, lambda ax: rule(a, b(ax)), name, tag="elemwise")


def topi_binary(relax_name: str) -> Callable:
    """The TOPI function of a table entry: `add(lhs, rhs)` making `T_add`."""
    rule = BINARY[relax_name]

    def fn(lhs, rhs):
        return with_broadcast(rule, lhs, rhs, f"T_{relax_name}")

    fn.__name__ = relax_name
    return fn


def _legalize_binary(te_func: Callable) -> Callable:
    """TVM's `_binary`: a 0-d constant operand (the right one first) is inlined as a scalar."""
    def legalize(bb, call):
        arg0, arg1 = call.args[0], try_convert_to_scalar_const(call.args[1])
        if is_relax_expr(arg1):
            arg0 = try_convert_to_scalar_const(arg0)
        return bb.call_te(te_func, arg0, arg1)

    return legalize


for _name in BINARY:
    register_legalize(f"relax.{_name}", _legalize_binary(topi_binary(_name)))
