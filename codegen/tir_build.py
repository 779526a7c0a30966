"""Building TIR expressions as TVM's operator functions do (`tvm.tirx.op`, `src/tirx/op/op.cc`).

TOPI-like compute definitions (`irtool.codegen.topi`) build their bodies with these
functions, never with the node constructors, because TVM's constructors already do work
that shows in the printed result:

    type matching    (BinaryOpMatchTypes) int meets float: the int is cast; two ints or two
                     floats of different widths: the narrower is widened; a Python number
                     takes the dtype of the other operand
    constant folding (arith::TryConstFold) `1 + 2` is `3`, `x + 0` is `x`, `x * 1` is `x`,
                     `cast("int64", 3)` is `T.int64(3)`; float32 folds round to float32

    add(a, b) sub mul div floordiv floormod min_ max_    arithmetic (div: `/`)
    eq ne lt le gt ge logical_and logical_or logical_not  comparisons and logic (bool)
    cast(dtype, x)  select(c, t, f)  if_then_else(c, t, f)  call(name, x, ...)  const(v, dtype)
    all_(*conds)    min_value(dtype) max_value(dtype)

Operands may be PrimExprs or Python numbers.
"""

from __future__ import annotations

import math

from irtool._util import lazy_import
from irtool.ir import tir

np = lazy_import("numpy")  # loaded when a constant needs it: the Relax table's struct info imports this module

Operand = tir.PrimExpr | int | float | bool


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def is_int(dtype: str) -> bool:
    return dtype.startswith("int")


def is_uint(dtype: str) -> bool:
    return dtype.startswith("uint")


def bits(dtype: str) -> int:
    if dtype == "bool":
        return 1
    digits = "".join(ch for ch in dtype.split("x")[0] if ch.isdigit())
    return int(digits) if digits else 32


def const(value, dtype: str) -> tir.PrimExpr:
    """TVM's make_const: an IntImm (bool included) or FloatImm, rounded to the dtype."""
    if is_float(dtype):
        return tir.FloatImm(_round_float(float(value), dtype), dtype)
    if dtype == "bool":
        return tir.IntImm(int(bool(value)), "bool")
    return tir.IntImm(_wrap_int(int(value), dtype), dtype)


def _round_float(v: float, dtype: str) -> float:
    if dtype == "float32":
        return float(np.float32(v))
    if dtype == "float16":
        return float(np.float16(v))
    return v


def _wrap_int(v: int, dtype: str) -> int:
    n = bits(dtype)
    if is_uint(dtype):
        return v % (1 << n)
    v %= 1 << n
    return v - (1 << n) if v >= 1 << (n - 1) else v


def _is_const(e) -> bool:
    return isinstance(e, (tir.IntImm, tir.FloatImm))


def _value(e):
    return e.value


def as_expr(v: Operand, like: str | None = None) -> tir.PrimExpr:
    """A Python number as a constant (of `like`'s dtype when the kinds agree)."""
    if isinstance(v, tir.PrimExpr):
        return v
    if isinstance(v, bool):
        return tir.IntImm(int(v), "bool")
    if isinstance(v, int):
        if like is not None and (is_int(like) or is_uint(like) or is_float(like)):
            return const(v, like)
        return tir.IntImm(v, "int32" if -(2**31) <= v < 2**31 else "int64")
    if isinstance(v, float):
        return const(v, like if like is not None and is_float(like) else "float32")
    raise TypeError(f"not a TIR operand: {v!r}")


def cast(dtype: str, value: Operand) -> tir.PrimExpr:
    """TVM's `tirx.cast`: no-op on the same dtype, folded on constants."""
    value = as_expr(value, dtype)
    if value.dtype == dtype:
        return value
    if _is_const(value):
        v = value.value
        if not is_float(dtype) and isinstance(v, float):
            v = math.trunc(v) if math.isfinite(v) else 0
        return const(v, dtype)
    return tir.Cast(dtype, value)


def match_types(a: Operand, b: Operand) -> tuple[tir.PrimExpr, tir.PrimExpr]:
    """TVM's BinaryOpMatchTypes (Python numbers take the other side's dtype first)."""
    if not isinstance(a, tir.PrimExpr) and isinstance(b, tir.PrimExpr):
        a = as_expr(a, b.dtype)
    elif not isinstance(b, tir.PrimExpr) and isinstance(a, tir.PrimExpr):
        b = as_expr(b, a.dtype)
    a, b = as_expr(a), as_expr(b)
    ta, tb = a.dtype, b.dtype
    if ta == tb:
        return a, b
    if is_float(ta) and is_float(tb) and ta.startswith("bfloat") != tb.startswith("bfloat"):
        # PromoteBinaryOpType: bfloat is not a float type there; the float side wins (float16 too)
        return (cast(tb, a), b) if ta.startswith("bfloat") else (a, cast(ta, b))
    if is_float(ta) and is_float(tb):
        return (cast(tb, a), b) if bits(ta) < bits(tb) else (a, cast(ta, b))
    if not is_float(ta) and is_float(tb):
        return cast(tb, a), b
    if is_float(ta) and not is_float(tb):
        return a, cast(ta, b)
    if (is_int(ta) and is_int(tb)) or (is_uint(ta) and is_uint(tb)):
        return (cast(tb, a), b) if bits(ta) < bits(tb) else (a, cast(ta, b))
    if ta == "bool" or tb == "bool":
        return (cast(tb, a), b) if ta == "bool" else (a, cast(ta, b))
    # signed meets unsigned: the wider wins, the signed one on a tie
    if bits(ta) != bits(tb):
        return (cast(tb, a), b) if bits(ta) < bits(tb) else (a, cast(ta, b))
    return (a, cast(ta, b)) if is_int(ta) else (cast(tb, a), b)


def _fold_float(dtype: str, v: float) -> tir.PrimExpr:
    return const(v, dtype)


def _binary(op: str, a: Operand, b: Operand) -> tir.PrimExpr:
    a, b = match_types(a, b)
    folded = _try_fold(op, a, b)
    return folded if folded is not None else tir.BinOp(op, a, b)


def _try_fold(op: str, a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr | None:
    """arith::TryConstFold for the arithmetic operators."""
    ca, cb = _is_const(a), _is_const(b)
    dtype = a.dtype
    fl = is_float(dtype)
    # TVM folds two float constants under +, -, *, /, // only for 32 and 64 bits (float16:
    # the zero and one rules only)
    both = ca and cb and not (fl and op in ("add", "sub", "mul", "div", "floordiv") and
                              not dtype.endswith(("32", "64")))
    va = a.value if ca else None
    vb = b.value if cb else None
    if op == "add":
        if both:
            return const(va + vb, dtype)
        if ca and va == 0:
            return b
        if cb and vb == 0:
            return a
    elif op == "sub":
        if both:
            return const(va - vb, dtype)
        if cb and vb == 0:
            return a
    elif op == "mul":
        if both:
            return const(va * vb, dtype)
        if ca and va == 1:
            return b
        if ca and va == 0:
            return a
        if cb and vb == 1:
            return a
        if cb and vb == 0:
            return b
    elif op == "div":
        if both and vb != 0:
            return const(va / vb if fl else int(va / vb), dtype)
        if ca and va == 0:
            return a
        if cb and vb == 1:
            return a
    elif op in ("floordiv", "floormod"):
        if both and vb != 0:
            if op == "floordiv":
                return const(math.floor(va / vb) if fl else va // vb, dtype)
            return const(va - math.floor(va / vb) * vb if fl else va % vb, dtype)
        if op == "floordiv" and ca and va == 0:
            return a
        if op == "floordiv" and cb and vb == 1:
            return a
        if op == "floormod" and cb and vb == 1 and not fl:
            return const(0, dtype)
    elif op in ("min", "max"):
        if ca and cb:
            return const(min(va, vb) if op == "min" else max(va, vb), dtype)
        if a is b:  # TryConstFold's `a.same_as(b)`: einsum's extent of a label two operands share
            return a
    elif op in ("eq", "ne", "lt", "le", "gt", "ge"):
        if ca and cb:
            result = {"eq": va == vb, "ne": va != vb, "lt": va < vb, "le": va <= vb, "gt": va > vb,
                      "ge": va >= vb}[op]
            return const(result, "bool")
    elif op == "and":
        if ca:
            return b if va else a
        if cb:
            return a if vb else b
    elif op == "or":
        if ca:
            return a if va else b
        if cb:
            return b if vb else a
    return None


def add(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("add", a, b)


def sub(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("sub", a, b)


def mul(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("mul", a, b)


def div(a: Operand, b: Operand) -> tir.PrimExpr:
    """TVM's `tirx.Div` (`/`): true division on floats, truncation on integers."""
    return _binary("div", a, b)


def floordiv(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("floordiv", a, b)


def floormod(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("floormod", a, b)


def truncmod(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("truncmod", a, b)


def min_(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("min", a, b)


def max_(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("max", a, b)


def eq(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("eq", a, b)


def ne(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("ne", a, b)


def lt(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("lt", a, b)


def le(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("le", a, b)


def gt(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("gt", a, b)


def ge(a: Operand, b: Operand) -> tir.PrimExpr:
    return _binary("ge", a, b)


def _as_bool(x: Operand) -> tir.PrimExpr:
    x = as_expr(x)
    return x if x.dtype == "bool" else ne(x, 0)


def logical_and(a: Operand, b: Operand) -> tir.PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    folded = _try_fold("and", a, b)
    return folded if folded is not None else tir.BinOp("and", a, b)


def logical_or(a: Operand, b: Operand) -> tir.PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    folded = _try_fold("or", a, b)
    return folded if folded is not None else tir.BinOp("or", a, b)


def logical_not(a: Operand) -> tir.PrimExpr:
    a = _as_bool(a)
    if isinstance(a, tir.IntImm):
        return const(not a.value, "bool")
    return tir.Not(a)


def all_(*conds: Operand) -> tir.PrimExpr:
    """`tvm.tirx.all`: the conjunction, left to right (True for none)."""
    if not conds:
        return const(True, "bool")
    out = _as_bool(conds[0])
    for c in conds[1:]:
        out = logical_and(out, c)
    return out


def neg(a: tir.PrimExpr) -> tir.PrimExpr:
    """TVM's unary minus: `0 - a` on integers folded when constant (`operator-`)."""
    if _is_const(a):
        return const(-a.value, a.dtype)
    return sub(const(0, a.dtype), a)


def select(cond: Operand, t: Operand, f: Operand) -> tir.PrimExpr:
    t, f = match_types(t, f)
    cond = as_expr(cond)
    if isinstance(cond, tir.IntImm):
        return t if cond.value else f
    return tir.Select(cond, t, f)


def if_then_else(cond: Operand, t: Operand, f: Operand) -> tir.PrimExpr:
    t, f = match_types(t, f)
    cond = as_expr(cond)
    if isinstance(cond, tir.IntImm):
        return t if cond.value else f
    return tir.Call(t.dtype, "tirx.if_then_else", [cond, t, f])


def call(name: str, *args: Operand, dtype: str | None = None) -> tir.PrimExpr:
    """An intrinsic call `T.<name>(args)` (`tirx.<name>`), of its first argument's dtype."""
    exprs = [as_expr(a) for a in args]
    if len(exprs) == 2:
        exprs = list(match_types(*exprs))
    return tir.Call(dtype or exprs[0].dtype, f"tirx.{name}", exprs)


def _finfo(dtype: str):
    """NumPy's float limits; bfloat16's are float32's, as TVM's min_value/max_value give them."""
    return np.finfo("float32" if dtype == "bfloat16" else dtype)


def min_value(dtype: str) -> tir.PrimExpr:
    if is_float(dtype):
        return const(float(_finfo(dtype).min), dtype)
    if dtype == "bool":
        return const(False, "bool")
    return const(int(np.iinfo(dtype).min), dtype)


def max_value(dtype: str) -> tir.PrimExpr:
    if is_float(dtype):
        return const(float(_finfo(dtype).max), dtype)
    if dtype == "bool":
        return const(True, "bool")
    return const(int(np.iinfo(dtype).max), dtype)
