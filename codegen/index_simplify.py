"""Bound-aware simplification of the index expressions schedule primitives create.

Splitting and fusing loops rewrites a block's iterator bindings (`v = (i_0 * 8 + i_1) // 13`);
TVM's analyzer then simplifies them knowing each loop variable's range `[0, extent)`. This
module does the part of that rewriting the schedules here produce, with the same results:

    x * 1 -> x        x + 0 -> x                      (constant folding of tir_build)
    (q * c + r) // c  ->  q + r // c                  always exact for floor division
    (q * c + r) %  c  ->  r % c
    r // c -> 0,  r % c -> r                          when 0 <= r < c is proven from the bounds
    x // c, x % c -> a constant                       when x has one value (a unit loop)
    x % (k * c) % c   ->  x % c
    (x // a + b) // c ->  (x + a * b) // (a * c)      (a, c > 0; split of a symbolic extent)
    a < b  ->  true                                   when max(a) < min(b)

Only a rule that applies changes the expression: anything else keeps the exact form it was
built with (TVM prints `(i_0 * 8 + i_1) // 39` as it is), so the output prints like TVM's.
Bounds are intervals of Python ints, None for unknown (symbolic extents).
"""

from __future__ import annotations

from irtool.ir import tir

from . import tir_build as tb

Bounds = dict  # loop Var -> (lo, hi) inclusive, ints


def bound(e: tir.PrimExpr, bounds: Bounds) -> tuple[int, int] | None:
    """An inclusive interval holding every value of integer expression `e`, or None."""
    if isinstance(e, tir.IntImm):
        return e.value, e.value
    if isinstance(e, tir.Var):
        return bounds.get(e)
    if isinstance(e, tir.Cast) and e.dtype.startswith("int") and e.value.dtype.startswith("int"):
        return bound(e.value, bounds)
    if not isinstance(e, tir.BinOp):
        return None
    a, b = bound(e.a, bounds), bound(e.b, bounds)
    if a is None or b is None:
        return None
    if e.op == "add":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if e.op == "mul":
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if e.op == "floordiv" and b[0] == b[1] and b[0] > 0:
        return a[0] // b[0], a[1] // b[0]
    if e.op == "floormod" and b[0] == b[1] and b[0] > 0:
        return (a[0], a[1]) if 0 <= a[0] and a[1] < b[0] else (0, b[0] - 1)
    if e.op in ("min", "max"):
        pick = min if e.op == "min" else max
        return pick(a[0], b[0]), pick(a[1], b[1])
    return None


def _terms(e: tir.PrimExpr) -> list[tuple[int, tir.PrimExpr | None]]:
    """`e` as a sum of (coefficient, atom) pairs; atom None is the constant term. Products of
    sums are distributed so that `(a * 4 + b) * 6` gives a*24 and b*6."""
    if isinstance(e, tir.IntImm):
        return [(e.value, None)]
    if isinstance(e, tir.BinOp) and e.op == "add":
        return _terms(e.a) + _terms(e.b)
    if isinstance(e, tir.BinOp) and e.op == "sub":
        return _terms(e.a) + [(-c, atom) for c, atom in _terms(e.b)]
    if isinstance(e, tir.BinOp) and e.op == "mul" and isinstance(e.b, tir.IntImm):
        return [(c * e.b.value, atom) for c, atom in _terms(e.a)]
    return [(1, e)]


def _rebuild(terms: list[tuple[int, tir.PrimExpr | None]], dtype: str) -> tir.PrimExpr:
    out: tir.PrimExpr | None = None
    for c, atom in terms:
        term = tb.const(c, dtype) if atom is None else (atom if c == 1 else tb.mul(atom, tb.const(c, dtype)))
        out = term if out is None else tb.add(out, term)
    return out if out is not None else tb.const(0, dtype)


def _divmod(op: str, x: tir.PrimExpr, c: int, bounds: Bounds) -> tir.PrimExpr | None:
    """`x // c` or `x % c` simplified, or None when no rule applies."""
    rx = bound(x, bounds)
    if rx is not None and rx[0] == rx[1]:  # a unit loop: its only value
        return tb.const(rx[0] // c if op == "floordiv" else rx[0] % c, x.dtype)
    if rx is not None and 0 <= rx[0] and rx[1] < c:
        return tb.const(0, x.dtype) if op == "floordiv" else x
    if op == "floormod" and isinstance(x, tir.BinOp) and x.op == "floormod" and isinstance(x.b, tir.IntImm) \
            and x.b.value % c == 0:
        return simplify_index(tir.BinOp("floormod", x.a, tb.const(c, x.dtype)), bounds)
    if op == "floordiv" and isinstance(x, tir.BinOp) and x.op == "add" and isinstance(x.b, tir.IntImm) \
            and isinstance(x.a, tir.BinOp) and x.a.op == "floordiv" and isinstance(x.a.b, tir.IntImm) \
            and x.a.b.value > 0:
        a, inner = x.a.b.value, x.a.a
        shifted = a * x.b.value
        if isinstance(inner, tir.BinOp) and inner.op == "add" and isinstance(inner.b, tir.IntImm):
            inner, shifted = inner.a, shifted + inner.b.value
        return tir.BinOp("floordiv", tb.add(inner, tb.const(shifted, x.dtype)), tb.const(a * c, x.dtype))
    terms = _terms(x)
    whole = [(k // c, atom) for k, atom in terms if k % c == 0]
    rest = [(k, atom) for k, atom in terms if k % c != 0]
    if not whole or all(k == 0 for k, _ in whole):
        return None
    cdt = tb.const(c, x.dtype)
    rest_expr = _rebuild(rest, x.dtype) if rest else None
    if op == "floormod":
        return tb.const(0, x.dtype) if rest_expr is None else simplify_index(tir.BinOp("floormod", rest_expr, cdt),
                                                                            bounds)
    quotient = _rebuild([t for t in whole if t[0] != 0], x.dtype)
    if rest_expr is None:
        return quotient
    return tb.add(quotient, simplify_index(tir.BinOp("floordiv", rest_expr, cdt), bounds))


def simplify_index(e: tir.PrimExpr, bounds: Bounds) -> tir.PrimExpr:
    """`e` with the rules of the module docstring applied bottom-up."""
    if not isinstance(e, tir.BinOp):
        return e
    a, b = simplify_index(e.a, bounds), simplify_index(e.b, bounds)
    if e.op in ("floordiv", "floormod") and isinstance(b, tir.IntImm) and b.value > 0 and a.dtype.startswith("int"):
        done = _divmod(e.op, a, b.value, bounds)
        if done is not None:
            return done
    if e.op == "lt" and a.dtype.startswith("int"):
        ra, rb = bound(a, bounds), bound(b, bounds)
        if ra is not None and rb is not None and ra[1] < rb[0]:
            return tir.IntImm(1, "bool")
    if e.op == "and":
        if _is_true(a):
            return b
        if _is_true(b):
            return a
    if a is e.a and b is e.b:
        return e
    folder = {"add": tb.add, "sub": tb.sub, "mul": tb.mul}.get(e.op)
    return folder(a, b) if folder else tir.BinOp(e.op, a, b)


def _is_true(e) -> bool:
    return isinstance(e, tir.IntImm) and e.dtype == "bool" and e.value == 1
