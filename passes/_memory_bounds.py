"""Size arithmetic for static-plan-block-memory: TVM's constant-folding multiply, upper
bounds of shapes from `tir_var_upper_bound` (the part of arith::Analyzer's const_int_bound
the planner uses: intervals through + - * // % min max), and a proof of equality of two
symbolic sizes (both sides as polynomials over the variables, as CanProveEqual decides
the products of dimensions the planner compares)."""

from __future__ import annotations

import math

from irtool.ir import tir

INF = math.inf


def _const(x):
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    return x.value if isinstance(x, tir.IntImm) else None


def _expr(x) -> tir.PrimExpr:
    return tir.IntImm(x, "int64") if isinstance(x, int) else x


def mul(a, b):
    """`a * b` as TVM's operator* builds it (arith TryConstFold: constants fold, 1 and 0
    absorb); constants come back as Python ints."""
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return ca * cb
    if ca == 1 or cb == 0:
        return b if ca == 1 else cb
    if cb == 1 or ca == 0:
        return a if cb == 1 else ca
    return tir.BinOp("mul", _expr(a), _expr(b))


class VarBounds:
    """Integer ranges of TIR variables (by identity)."""

    def __init__(self) -> None:
        self.ranges: dict[int, tuple[int, int]] = {}

    def bind(self, var: tir.Var, lower: int, upper: int) -> None:
        self.ranges[id(var)] = (lower, upper)

    def interval(self, e) -> tuple[float, float]:
        c = _const(e)
        if c is not None:
            return c, c
        if isinstance(e, tir.Var):
            return self.ranges.get(id(e), (-INF, INF))
        if isinstance(e, tir.Cast):
            return self.interval(e.value)
        if isinstance(e, tir.BinOp) and e.op in _INTERVAL_OPS:
            return _INTERVAL_OPS[e.op](self.interval(e.a), self.interval(e.b))
        return -INF, INF


def _products(a, b):
    values = []
    for x in a:
        for y in b:
            if (x == 0 and math.isinf(y)) or (y == 0 and math.isinf(x)):
                values.append(0)
            else:
                values.append(x * y)
    return min(values), max(values)


def _floordiv(a, b):
    if b[0] <= 0 <= b[1] or math.isinf(b[0]) or math.isinf(b[1]):
        return -INF, INF
    q = [x // y if not math.isinf(x) else x / y for x in a for y in b]
    return min(q), max(q)


def _floormod(a, b):
    if b[0] > 0 and not math.isinf(b[1]):
        return 0, b[1] - 1
    return -INF, INF


# interval arithmetic, one line per operator
_INTERVAL_OPS = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "mul": _products,
    "floordiv": _floordiv,
    "floormod": _floormod,
    "min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
}


def upper_bound_shape(shape, bounds: VarBounds) -> tuple:
    """TVM's GetUpperBoundShape: each dimension with a finite upper bound becomes that
    bound; the others stay as they are."""
    out = []
    for d in shape:
        c = _const(d)
        if c is not None:
            out.append(c)
            continue
        high = bounds.interval(d)[1]
        out.append(int(high) if not math.isinf(high) else d)
    return tuple(out)


def _poly(e):
    """A polynomial {monomial (sorted variable ids): coefficient}, or None."""
    c = _const(e)
    if c is not None:
        return {(): c} if c else {}
    if isinstance(e, tir.Var):
        return {(id(e),): 1}
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub", "mul"):
        a, b = _poly(e.a), _poly(e.b)
        if a is None or b is None:
            return None
        out: dict = {}
        if e.op == "mul":
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb))
                    out[m] = out.get(m, 0) + ca * cb
        else:
            sign = 1 if e.op == "add" else -1
            out = dict(a)
            for m, cb in b.items():
                out[m] = out.get(m, 0) + sign * cb
        return {m: c for m, c in out.items() if c}
    return None


def can_prove_equal(a, b) -> bool:
    pa, pb = _poly(a), _poly(b)
    if pa is not None and pb is not None:
        return pa == pb
    from irtool.ir.relax_visitor import same_struct_info  # variables equal only to themselves

    return same_struct_info(a, b)
