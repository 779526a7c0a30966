"""TVM's `Analyzer::Simplify` with variable bounds, for struct info over size variables.

TVM 0.27's BlockBuilder marks every size variable of a function's parameters non-negative
(`MarkGlobalNonNegValue`), and an op's InferStructInfo simplifies its result dims with that
analyzer: `Simplify(e)` is canonical simplification, then RewriteSimplifier (up to two passes
to a fixed point), then canonical simplification again (src/arith/analyzer.cc). The canonical
simplifier of `canonical.py` visits min/max nodes with the rewrite rules below and reads
variable bounds from the analyzer in effect (`canonical.using(analyzer)`), as TVM's
CanonicalSimplifier inherits RewriteSimplifier's Min/Max visitors.

The rules are those of src/arith/rewrite_simplify.cc for index-typed Add, Sub, Mul, FloorDiv,
Min and Max, in TVM's order, written as TVM writes them (`x - min(y, x)` -> `max(x - y, 0)`)
and matched as TVM's pattern language matches them: `x, y, z, s1, s2, b1, b2` any expression
(a repeated name the same expression, ExprDeepEqual), `c1, c2, c3` an integer constant, a
number that constant. Rules over vectors, truncdiv/truncmod, floormod and conditions are left
out (struct info of strided_slice, arange and the windows never builds them); a node without a
rule is rebuilt from its simplified operands with TVM's folding operators.
"""

from __future__ import annotations

import ast

from irtool.ir import tir

from .. import tir_build as tb
from ..simplify import call_with_args
from . import canonical

# ConstIntBound's infinities: kPosInf is INT64_MAX, kNegInf its negation (not INT64_MIN)
POS_INF = (1 << 63) - 1
NEG_INF = -POS_INF
_INDEX = ("int32", "int64")
_ANY = frozenset({"x", "y", "z", "s1", "s2", "b1", "b2"})
_CONST = frozenset({"c1", "c2", "c3"})
_PY_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
_CALLS = {"min": "min", "max": "max", "floordiv": "floordiv", "floormod": "floormod"}
_BUILD = {"add": tb.add, "sub": tb.sub, "mul": tb.mul, "floordiv": tb.floordiv, "floormod": tb.floormod,
          "min": tb.min_, "max": tb.max_}


def _parse(text: str):
    return ast.parse(text, mode="eval").body


def _match(p, e, env: dict) -> bool:
    if isinstance(p, ast.Name):
        if p.id in _CONST and not isinstance(e, tir.IntImm):
            return False
        if p.id in env:
            return canonical._index_equal(env[p.id], e)
        env[p.id] = e
        return True
    if isinstance(p, ast.Constant):
        return isinstance(e, tir.IntImm) and e.value == p.value
    if isinstance(p, ast.UnaryOp):  # a negative literal
        return isinstance(e, tir.IntImm) and e.value == -p.operand.value
    if isinstance(p, ast.BinOp):
        op, pa, pb = _PY_OPS[type(p.op)], p.left, p.right
    else:
        op, (pa, pb) = _CALLS[p.func.id], p.args
    return isinstance(e, tir.BinOp) and e.op == op and _match(pa, e.a, env) and _match(pb, e.b, env)


def _eval(p, env: dict, dtype: str):
    """A rule's result built with TVM's folding operators (PatternExpr::Eval)."""
    if isinstance(p, ast.Name):
        return env[p.id]
    if isinstance(p, ast.Constant):
        return tb.const(p.value, dtype)
    if isinstance(p, ast.UnaryOp):
        return tb.const(-p.operand.value, dtype)
    if isinstance(p, ast.BinOp):
        return _BUILD[_PY_OPS[type(p.op)]](_eval(p.left, env, dtype), _eval(p.right, env, dtype))
    return _BUILD[_CALLS[p.func.id]](_eval(p.args[0], env, dtype), _eval(p.args[1], env, dtype))


class _Rule:
    """TVM_TRY_REWRITE[_IF] / TVM_TRY_RECURSIVE_REWRITE[_IF]: the first pattern that matches
    (and whose condition holds) gives the result."""

    __slots__ = ("patterns", "result", "cond", "recursive")

    def __init__(self, patterns: str | tuple, result: str, cond=None, recursive: bool = False) -> None:
        self.patterns = [_parse(p) for p in ((patterns,) if isinstance(patterns, str) else patterns)]
        self.result, self.cond, self.recursive = _parse(result), cond, recursive

    def apply(self, e, an: Analyzer):
        for p in self.patterns:
            env: dict = {}
            if _match(p, e, env) and (self.cond is None or self.cond(_Bound(env, an))):
                return _eval(self.result, env, e.dtype), self.recursive
        return None


class _Bound:
    """A rule condition's view of its match: `m.c1` the constant's value, `m["x"]` the expression."""

    def __init__(self, env: dict, an: Analyzer) -> None:
        self.env, self.an = env, an

    def __getattr__(self, name: str) -> int:
        return self.env[name].value

    def __getitem__(self, name: str):
        return self.env[name]


def R(patterns, result, cond=None):
    return _Rule(patterns, result, cond)


def RR(patterns, result, cond=None):
    return _Rule(patterns, result, cond, recursive=True)


def _ge(m: _Bound, name: str, value: int) -> bool:
    return m.an.can_prove_ge(m[name], value)


# ----------------------------------------------------------------------------- the rules

_ADD = [
    R("(x - y) + y", "x"), R("x + (y - x)", "y"),
    R("(x - y) + (y - z)", "x - z"), R("(x - y) + (z - x)", "z - y"),
    R("min(x, y - z) + z", "min(x + z, y)"), R("min(x - z, y) + z", "min(x, y + z)"),
    R("max(x, y - z) + z", "max(x + z, y)"), R("max(x - z, y) + z", "max(x, y + z)"),
    R("min(x, y + z * c1) + z * c2", "min(x + z * c2, y)", lambda m: m.c1 == -m.c2),
    R("max(x, y + z * c1) + z * c2", "max(x + z * c2, y)", lambda m: m.c1 == -m.c2),
    R("min(y + z * c1, x) + z * c2", "min(x + z * c2, y)", lambda m: m.c1 == -m.c2),
    R("max(y + z * c1, x) + z * c2", "max(x + z * c2, y)", lambda m: m.c1 == -m.c2),
    R(("max(x, y) + min(x, y)", "min(x, y) + max(x, y)", "max(x, y) + min(y, x)", "min(x, y) + max(y, x)"), "x + y"),
    R("min(x, y + c1) + c2", "min(x + c2, y)", lambda m: m.c1 == -m.c2),
    R("min(x + c1, y) + c2", "min(x, y + c2)", lambda m: m.c1 == -m.c2),
    R("max(x, y + c1) + c2", "max(x + c2, y)", lambda m: m.c1 == -m.c2),
    R("max(x + c1, y) + c2", "max(x, y + c2)", lambda m: m.c1 == -m.c2),
    R("(x + c1) + c2", "x + (c1 + c2)"),
    R("x + x", "x * 2"),
    R(("x * y + x", "y * x + x", "x + y * x", "x + x * y"), "(y + 1) * x"),
    R(("x * y + x * z", "y * x + x * z", "x * y + z * x", "y * x + z * x"), "(y + z) * x"),
    R(("floordiv(x, y) * y + floormod(x, y)", "y * floordiv(x, y) + floormod(x, y)",
       "floormod(x, y) + floordiv(x, y) * y", "floormod(x, y) + y * floordiv(x, y)"), "x"),
    R("floordiv(floormod(x, c2) + c1, c2) + floordiv(x, c2)", "floordiv(x + c1, c2)", lambda m: m.c2 > 0),
    RR("floordiv(x, 2) + floormod(x, 2)", "floordiv(x + 1, 2)"),
    RR(("x + (c1 - y)", "(c1 - y) + x"), "(x - y) + c1"),
    RR(("(x + c1) + y", "x + (c1 + y)", "x + (y + c1)"), "(x + y) + c1"),
    RR("x + max(y, z)", "max(y, z) + x"),
    RR("x + min(y, z)", "min(y, z) + x"),
    RR("floormod(y, c1) + x * c1", "x * c1 + floormod(y, c1)"),
]

_SUB = [
    R(("(x + y) - y", "(y + x) - y"), "x"),
    R(("x - (y + x)", "x - (x + y)"), "0 - y"),
    R(("min(x, y) - y", "x - max(y, x)"), "min(x - y, 0)"),
    R(("x - max(x, y)", "min(y, x) - y"), "min(0, x - y)"),
    R(("max(x, y) - y", "x - min(y, x)"), "max(x - y, 0)"),
    R(("x - min(x, y)", "max(y, x) - y"), "max(0, x - y)"),
    R("x - x", "0"),
    R(("x * y - x", "y * x - x"), "(y - 1) * x"),
    R(("x - y * x", "x - x * y"), "(1 - y) * x"),
    R(("x * y - x * z", "y * x - x * z", "x * y - z * x", "y * x - z * x"), "(y - z) * x"),
    R("(x + c1) - c2", "x + (c1 - c2)"),
    R("(c1 - x) - (c2 - y)", "(y - x) + (c1 - c2)"),
    R(("(x + y) - (x + z)", "(x + y) - (z + x)", "(y + x) - (z + x)", "(y + x) - (x + z)"), "y - z"),
    R(("min(x + y, z) - x", "min(y + x, z) - x"), "min(y, z - x)"),
    R(("min(z, x + y) - x", "min(z, y + x) - x"), "min(z - x, y)"),
    R(("max(x + y, z) - x", "max(y + x, z) - x"), "max(y, z - x)"),
    R(("max(z, x + y) - x", "max(z, y + x) - x"), "max(z - x, y)"),
    R(("x - min(x + y, z)", "x - min(y + x, z)"), "max(0 - y, x - z)"),
    R(("x - min(z, x + y)", "x - min(z, y + x)"), "max(x - z, 0 - y)"),
    R(("x - max(x + y, z)", "x - max(y + x, z)"), "min(0 - y, x - z)"),
    R(("x - max(z, x + y)", "x - max(z, y + x)"), "min(x - z, 0 - y)"),
    R("min(x, y) - min(y, x)", "0"),
    R("max(x, y) - max(y, x)", "0"),
    R(("min(b1, b2) - min(s1, s2)", "min(b1, b2) - min(s2, s1)"), "b1 - s1",
      lambda m: m.an.can_prove_equal(tb.sub(tb.sub(m["b1"], m["s1"]), tb.sub(m["b2"], m["s2"])), 0)),
    R(("max(b1, b2) - max(s1, s2)", "max(b1, b2) - max(s2, s1)"), "b1 - s1",
      lambda m: m.an.can_prove_equal(tb.sub(tb.sub(m["b1"], m["s1"]), tb.sub(m["b2"], m["s2"])), 0)),
    R("x - floordiv(x, c1) * c1", "floormod(x, c1)", lambda m: m.c1 != 0),
    R("floordiv(x, c1) * c1 - x", "0 - floormod(x, c1)", lambda m: m.c1 != 0),
    R("x - floordiv(x + y, c1) * c1", "floormod(x + y, c1) - y", lambda m: m.c1 != 0),
    R("floordiv(x + y, c1) * c1 - x", "y - floormod(x + y, c1)", lambda m: m.c1 != 0),
    R("x - floordiv(x - y, c1) * c1", "floormod(x - y, c1) + y", lambda m: m.c1 != 0),
    R("floordiv(x - y, c1) * c1 - x", "0 - floormod(x - y, c1) - y", lambda m: m.c1 != 0),
    RR("floordiv(x + c1, 2) - floordiv(x + c2, 2)",
       "floormod(x, 2) * (floormod(c1, 2) - floormod(c2, 2)) + (floordiv(c1, 2) - floordiv(c2, 2))"),
    RR("floordiv(x, 2) - floordiv(x + c2, 2)", "floormod(x, 2) * (0 - floormod(c2, 2)) - floordiv(c2, 2)"),
    RR("floordiv(x + c1, 2) - floordiv(x, 2)", "floormod(x, 2) * floormod(c1, 2) + floordiv(c1, 2)"),
    R("x * c2 - floordiv(x, c1) * c3", "floormod(x, c1) * c2", lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    R("floordiv(x, c1) * c3 - x * c2", "0 - floormod(x, c1) * c2", lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    R("x * c2 - floordiv(x + y, c1) * c3", "(floormod(x + y, c1) - y) * c2",
      lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    R("floordiv(x + y, c1) * c3 - x * c2", "(y - floormod(x + y, c1)) * c2",
      lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    R("x * c2 - floordiv(x - y, c1) * c3", "(floormod(x - y, c1) + y) * c2",
      lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    R("floordiv(x - y, c1) * c3 - x * c2", "(0 - floormod(x - y, c1) - y) * c2",
      lambda m: m.c1 != 0 and m.c3 == m.c1 * m.c2),
    RR("floordiv(x + 1, 2) - floormod(x, 2)", "floordiv(x, 2)"),
    R("floordiv(x + c1, c3) - floordiv(x + c2, c3)", "floordiv(floormod(x + floormod(c2, c3), c3) + (c1 - c2), c3)",
      lambda m: m.c3 > 0),
    R("floordiv(x + c1, c3) - floordiv(x, c3)", "floordiv(floormod(x, c3) + c1, c3)", lambda m: m.c3 > 0),
    R("x - c1", "x + (0 - c1)"),
    RR("(x + c1) - y", "(x - y) + c1"),
    RR("x - (y + c1)", "(x - y) + (0 - c1)"),
    RR("x - (y - z)", "(x + z) - y"),
    RR("x - y * c1", "x + y * (0 - c1)"),
]

_MUL = [
    R("(x + c1) * c2", "x * c2 + c1 * c2"),
    R("(x * c1) * c2", "x * (c1 * c2)"),
    R(("min(x, y) * max(x, y)", "max(x, y) * min(x, y)"), "x * y"),
    R("floordiv(x - floormod(x, c2), c1) * c1", "x - floormod(x, c2)", lambda m: m.c1 == -m.c2),
    RR("x * (c1 * y)", "(x * y) * c1"),
    RR("c1 * x", "x * c1"),
    RR("(x - y) * c1", "(y - x) * (0 - c1)", lambda m: m.c1 < 0),
]


def _floordiv_residue(e, an: Analyzer):
    """The floordiv(x * c1 + y, c2) block: the residue eliminated, or the divisor simplified."""
    for p in _FLOORDIV_LINEAR:
        env: dict = {}
        if _match(p, e, env):
            x, c1, c2 = env["x"], env["c1"].value, env["c2"].value
            y = env.get("y", tb.const(0, e.dtype))
            if c2 == 0:
                return e, False
            residue = tb.floordiv(tb.add(tb.mul(x, c1 % c2), tb.floormod(y, c2)), c2)
            y_div = tb.floordiv(y, c2)
            if an.can_prove_equal(y_div, 0):
                y_div = tb.const(0, e.dtype)
            lo, hi = an.const_int_bound(residue)
            if lo == hi:
                return tb.add(tb.mul(x, tb.floordiv(env["c1"], env["c2"])), tb.add(y_div, tb.const(hi, e.dtype))), False
            if c1 > 0 and c2 > 0 and c2 % c1 == 0 and an.const_int_bound(tb.floormod(y, c2))[1] < c1:
                return tb.add(tb.floordiv(x, c2 // c1), y_div), False
            return None
    return None


_FLOORDIV_LINEAR = [_parse(p) for p in ("floordiv(x * c1 + y, c2)", "floordiv(x * c1, c2)", "floordiv(y + x * c1, c2)")]

_FLOORDIV = [
    R("floordiv(floordiv(x, c1), c2)", "floordiv(x, c1 * c2)", lambda m: m.c1 > 0 and m.c2 > 0),
    R("floordiv(floordiv(x, c1) + c2, c3)", "floordiv(x + c1 * c2, c1 * c3)", lambda m: m.c1 > 0 and m.c3 > 0),
    _floordiv_residue,
    R("floordiv(x, x)", "1"),
    R(("floordiv(x * c1, x)", "floordiv(c1 * x, x)"), "c1"),
    R("floordiv(floormod(x, 2) + 1, 2)", "floormod(x, 2)"),
    R("floordiv(min(x * c1, y), c2)", "min(x * floordiv(c1, c2), floordiv(y, c2))",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(max(x * c1, y), c2)", "max(x * floordiv(c1, c2), floordiv(y, c2))",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(min(y, x * c1), c2)", "min(floordiv(y, c2), x * floordiv(c1, c2))",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(max(y, x * c1), c2)", "max(floordiv(y, c2), x * floordiv(c1, c2))",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(x * c1 + y + z, c2)", "x * floordiv(c1, c2) + floordiv(y + z, c2)",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(x * c1 + y + z, c2)", "floordiv(x, floordiv(c2, c1))",
      lambda m: m.c1 > 0 and m.c2 > 0 and m.c2 % m.c1 == 0 and
      m.an.can_prove_equal(tb.floordiv(tb.add(m["y"], m["z"]), m["c1"]), 0)),
    R(("floordiv(x * c1 - y + z, c2)", "floordiv(x * c1 + z - y, c2)"), "x * floordiv(c1, c2) + floordiv(z - y, c2)",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(y + x * c1 + z, c2)", "x * floordiv(c1, c2) + floordiv(y + z, c2)",
      lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(x + c1, c2)", "floordiv(x, c2) + floordiv(c1, c2)", lambda m: m.c2 > 0 and m.c1 % m.c2 == 0),
    R("floordiv(x + c1, c2)", "floordiv(c1, c2)",
      lambda m: m.c1 > 0 and m.c2 > 0 and _ge(m, "x", -(m.c1 % m.c2)) and
      m.an.const_int_bound(m["x"])[1] < m.c2 - m.c1 % m.c2),
    R("floordiv(x * c1, x * c2)", "floordiv(c1, c2)", lambda m: m.c2 > 0),
    R(("floordiv(x + y, x)", "floordiv(y + x, x)"), "floordiv(y, x) + 1", lambda m: _ge(m, "x", 0)),
    R(("floordiv((x + y) + z, x)", "floordiv((y + x) + z, x)", "floordiv(y + (z + x), x)", "floordiv(y + (x + z), x)"),
      "floordiv(y + z, x) + 1", lambda m: _ge(m, "x", 0)),
    R(("floordiv(x * y, y)", "floordiv(y * x, y)"), "x", lambda m: _ge(m, "y", 0)),
    R(("floordiv(x * z + y, z)", "floordiv(z * x + y, z)"), "x + floordiv(y, z)", lambda m: _ge(m, "z", 0)),
    R(("floordiv(y + x * z, z)", "floordiv(y + z * x, z)"), "floordiv(y, z) + x", lambda m: _ge(m, "z", 0)),
    R("floordiv(x - floormod(x, c1), c1)", "floordiv(x, c1)", lambda m: m.c1 != 0),
]


def _pick_const(pattern: str, smaller: bool):
    """min/max(x + c1, x + c2) and the like: the operand with the smaller (larger) constant."""
    p = _parse(pattern)

    def rule(e, an):
        env: dict = {}
        if not _match(p, e, env):
            return None
        a, b = (e.a, e.b)
        ca = env["c1"].value
        cb = env["c2"].value if "c2" in env else 0
        first = ca < cb if smaller else ca > cb
        return (a if first else b), False
    return rule


def _min_const_rules(op: str):
    smaller = op == "min"

    def with_offset(e, an):  # min(x + c1, x) / min(x, x + c1)
        for text in (f"{op}(x + c1, x)", f"{op}(x, x + c1)"):
            env: dict = {}
            if _match(_parse(text), e, env):
                c = env["c1"].value
                take_offset = c < 0 if smaller else c > 0
                return (tb.add(env["x"], env["c1"]) if take_offset else env["x"]), False
        return None

    def sub_pair(e, an):  # min(c1 - x, c2 - x)
        env: dict = {}
        if _match(_parse(f"{op}(c1 - x, c2 - x)"), e, env):
            first = env["c1"].value < env["c2"].value if smaller else env["c1"].value > env["c2"].value
            return (e.a if first else e.b), False
        return None
    return [_pick_const(f"{op}(x + c1, x + c2)", smaller), with_offset, sub_pair]


def _scaling(op: str):
    other = "max" if op == "min" else "min"

    def rule(e, an):
        for div in ("floordiv",):
            env: dict = {}
            if _match(_parse(f"{op}({div}(x, c1), {div}(y, c1))"), e, env):
                inner = tb.min_ if (op == "min") == (env["c1"].value > 0) else tb.max_
                return tb.floordiv(inner(env["x"], env["y"]), env["c1"]), False
        env = {}
        if _match(_parse(f"{op}(x * c1, y * c1)"), e, env):
            inner = tb.min_ if (op == "min") == (env["c1"].value > 0) else tb.max_
            return tb.mul(inner(env["x"], env["y"]), env["c1"]), False
        env = {}
        if _match(_parse(f"{op}(x * c1, c2)"), e, env):
            c1, c2 = env["c1"].value, env["c2"].value
            if c1 == 0:
                keep_c2 = c2 < 0 if op == "min" else c2 > 0
                return (env["c2"] if keep_c2 else env["c1"]), False
            if c2 % c1 == 0:
                inner = _BUILD[op] if c1 > 0 else _BUILD[other]
                return tb.mul(inner(env["x"], tb.const(int(c2 / c1), e.dtype)), env["c1"]), False
        return None
    return rule


_MIN = [
    R("min(x, x)", "x"),
    "bounds",
    *_min_const_rules("min"),
    R(("min(floordiv(x + c1, c2) * c2, x)", "min(x, floordiv(x + c1, c2) * c2)"), "x",
      lambda m: m.c2 > 0 and m.c1 + 1 == m.c2),
    R(("min(floordiv(x + c1, c2) * c2, max(x, c2))", "min(max(x, c2), floordiv(x + c1, c2) * c2)"), "max(x, c2)",
      lambda m: m.c2 > 0 and m.c1 + 1 == m.c2 and _ge(m, "x", 1)),
    R(("min(x, floordiv(x, c2) * c2)", "min(floordiv(x, c2) * c2, x)"), "floordiv(x, c2) * c2", lambda m: m.c2 > 0),
    R(("min(max(x, y), min(x, y))", "min(max(x, y), min(y, x))", "min(min(x, y), max(x, y))",
       "min(min(x, y), max(y, x))", "min(min(x, y), x)", "min(min(x, y), y)", "min(x, min(x, y))",
       "min(y, min(x, y))"), "min(x, y)"),
    R(("min(max(x, y), x)", "min(max(y, x), x)", "min(x, max(x, y))", "min(x, max(y, x))"), "x"),
    R("min(min(min(x, y), z), y)", "min(min(x, y), z)"),
    R("min(min(min(min(x, y), z), s1), y)", "min(min(min(x, y), z), s1)"),
    R("min(min(min(min(min(x, y), z), s1), s2), y)", "min(min(min(min(x, y), z), s1), s2)"),
    R(("min(max(x, y), max(x, z))", "min(max(x, y), max(z, x))", "min(max(y, x), max(x, z))",
       "min(max(y, x), max(z, x))"), "max(min(y, z), x)"),
    R(("min(min(x, y), min(x, z))", "min(min(x, y), min(z, x))", "min(min(y, x), min(x, z))",
       "min(min(y, x), min(z, x))"), "min(min(y, z), x)"),
    R(("min(y + x, z + x)", "min(y + x, x + z)", "min(x + y, x + z)", "min(x + y, z + x)"), "min(y, z) + x"),
    R("min(y - x, z - x)", "min(y, z) - x"),
    R("min(x - y, x - z)", "x - max(y, z)"),
    R("min(min(x, c1), c2)", "min(x, min(c1, c2))"),
    _scaling("min"),
    RR("min(min(x, c1), y)", "min(min(x, y), c1)"),
    RR("min(c1 - x, c2)", "c1 - max(x, c1 - c2)", lambda m: m.c2 != 0),
]

_MAX = [
    R("max(x, x)", "x"),
    "bounds",
    *_min_const_rules("max"),
    R(("max(floordiv(x + c1, c2) * c2, x)", "max(x, floordiv(x + c1, c2) * c2)"), "floordiv(x + c1, c2) * c2",
      lambda m: m.c2 > 0 and m.c1 + 1 == m.c2),
    R(("max(floordiv(x, c2) * c2, x)", "max(x, floordiv(x, c2) * c2)"), "x", lambda m: m.c2 > 0),
    R(("max(min(x, y), x)", "max(min(y, x), x)", "max(x, min(x, y))", "max(x, min(y, x))"), "x"),
    R(("max(min(x, y), max(x, y))", "max(min(x, y), max(y, x))", "max(max(x, y), min(x, y))",
       "max(max(x, y), min(y, x))", "max(max(x, y), x)", "max(max(x, y), y)", "max(x, max(x, y))",
       "max(y, max(x, y))"), "max(x, y)"),
    R("max(max(max(x, y), z), y)", "max(max(x, y), z)"),
    R("max(max(max(max(x, y), z), s1), y)", "max(max(max(x, y), z), s1)"),
    R("max(max(max(max(max(x, y), z), s1), s2), y)", "max(max(max(max(x, y), z), s1), s2)"),
    R(("max(max(x, y), max(x, z))", "max(max(x, y), max(z, x))", "max(max(y, x), max(x, z))",
       "max(max(y, x), max(z, x))"), "max(max(y, z), x)"),
    R(("max(min(x, y), min(x, z))", "max(min(x, y), min(z, x))", "max(min(y, x), min(x, z))",
       "max(min(y, x), min(z, x))"), "min(max(y, z), x)"),
    R(("max(y + x, z + x)", "max(y + x, x + z)", "max(x + y, x + z)", "max(x + y, z + x)"), "max(y, z) + x"),
    R("max(y - x, z - x)", "max(y, z) - x"),
    R("max(x - y, x - z)", "x - min(y, z)"),
    R("max(max(x, c1), c2)", "max(x, max(c1, c2))"),
    _scaling("max"),
    RR("max(max(x, c1), y)", "max(max(x, y), c1)"),
    RR("max(c1 - x, c2)", "c1 - min(x, c1 - c2)", lambda m: m.c2 != 0),
]

_RULES = {"add": _ADD, "sub": _SUB, "mul": _MUL, "floordiv": _FLOORDIV, "min": _MIN, "max": _MAX}


# ----------------------------------------------------------------------------- the analyzer


def _add_bound(x: int, y: int) -> int:
    """InfAwareAdd: +-inf absorb, an overflow of [NEG_INF, POS_INF] saturates."""
    if x in (NEG_INF, POS_INF):
        return x
    if y in (NEG_INF, POS_INF):
        return y
    return POS_INF if x + y > POS_INF else NEG_INF if x + y < NEG_INF else x + y


def _mul_bound(x: int, y: int) -> int:
    """InfAwareMul."""
    p = x * y
    if NEG_INF <= p <= POS_INF:
        return p
    return POS_INF if (x > 0) == (y > 0) else NEG_INF


def _neg(v: int) -> int:
    return -v  # the infinities are symmetric: NEG_INF == -POS_INF


def _imm_bound(v: int) -> tuple[int, int]:
    """ConstIntBound of a constant: clamped to [NEG_INF, POS_INF], and as MakeBound makes it, a
    minimum of +inf (a maximum of -inf) moved one inwards."""
    v = max(NEG_INF, min(POS_INF, v))
    return (v - 1 if v == POS_INF else v), (v + 1 if v == NEG_INF else v)


class Analyzer:
    """Variable bounds (`nonneg`: variables known to be >= 0) and TVM's Simplify over them."""

    def __init__(self, nonneg=()) -> None:
        self.bounds = {id(v): (0, POS_INF) for v in nonneg}
        self._depth = {"rewrite": 0, "canonical": 0}  # RecursiveRewrite's depth, per simplifier

    def _recursive(self, which: str, visit):
        """RecursiveRewrite: the result simplified again, at most kMaxRecurDepth = 5 deep."""
        def revisit(e):
            if self._depth[which] >= 5:
                return e
            self._depth[which] += 1
            try:
                return visit(e)
            finally:
                self._depth[which] -= 1
        return revisit

    # TVM's ConstIntBoundAnalyzer (the operators struct info builds)
    def const_int_bound(self, e) -> tuple[int, int]:
        e = canonical._normalize(e)
        if isinstance(e, tir.IntImm):
            return _imm_bound(e.value)
        if isinstance(e, tir.Var):
            return self.bounds.get(id(e), (NEG_INF, POS_INF))
        if isinstance(e, tir.BinOp) and e.dtype in _INDEX:
            (a0, a1), (b0, b1) = self.const_int_bound(e.a), self.const_int_bound(e.b)
            if e.op == "add":
                return _add_bound(a0, b0), _add_bound(a1, b1)
            if e.op == "sub":
                return _add_bound(a0, _neg(b1)), _add_bound(a1, _neg(b0))
            if e.op == "mul":
                products = [_mul_bound(x, y) for x in (a0, a1) for y in (b0, b1)]
                return min(products), max(products)
            if e.op == "min":
                return min(a0, b0), min(a1, b1)
            if e.op == "max":
                return max(a0, b0), max(a1, b1)
            if e.op == "floordiv" and b0 > 0:
                quotients = [x if x in (NEG_INF, POS_INF) else x // y for x in (a0, a1) for y in (b0, b1)]
                return min(quotients), max(quotients)
            if e.op == "floormod" and b0 > 0:
                return (0, min(a1, b1 - 1)) if a0 >= 0 else (0, b1 - 1)
        if isinstance(e, tir.Call) and e.op == "tirx.if_then_else":
            (t0, t1), (f0, f1) = self.const_int_bound(e.args[1]), self.const_int_bound(e.args[2])
            return min(t0, f0), max(t1, f1)
        return NEG_INF, POS_INF

    def can_prove_ge(self, e, value: int) -> bool:
        if isinstance(e, tir.IntImm):
            return e.value >= value
        return self.const_int_bound(self.rewrite(e))[0] >= value

    def can_prove_equal(self, e, value: int) -> bool:
        s = self.simplify(e)
        return isinstance(s, tir.IntImm) and s.value == value

    # RewriteSimplifier
    def rewrite(self, e):
        """RewriteSimplifier::operator(): post-order passes until nothing changes (at most 2)."""
        for _ in range(2):
            new = self._visit(e)
            if new is e or canonical._index_equal(new, e):
                return e
            e = new
        return e

    def _visit(self, e):
        if isinstance(e, tir.BinOp):
            a, b = self._visit(e.a), self._visit(e.b)
            node = e if a is e.a and b is e.b else canonical._FOLD[e.op](a, b)
            if isinstance(node, tir.BinOp) and node.op in _RULES and node.dtype in _INDEX:
                return self.apply_rules(node, self._recursive("rewrite", self._visit))
            return node
        if isinstance(e, tir.Call):
            return call_with_args(e, tuple(self._visit(a) if isinstance(a, tir.PrimExpr) else a for a in e.args))
        if isinstance(e, tir.Cast):
            v = self._visit(e.value)
            return e if v is e.value else tb.cast(e.dtype, v)
        if isinstance(e, tir.Not):
            return tb.logical_not(self._visit(e.a))
        return e

    def apply_rules(self, node, revisit):
        """One visitor's rules on `node` (its operands already simplified); `revisit` simplifies
        the result of a recursive rule (the rewrite or the canonical visitor, as in TVM)."""
        for rule in _RULES[node.op]:
            if rule == "bounds":
                (a0, a1), (b0, b1) = self.const_int_bound(node.a), self.const_int_bound(node.b)
                if node.op == "min":
                    if a1 <= b0:
                        return node.a
                    if b1 <= a0:
                        return node.b
                else:
                    if a0 >= b1:
                        return node.a
                    if b0 >= a1:
                        return node.b
                continue
            done = rule.apply(node, self) if isinstance(rule, _Rule) else rule(node, self)
            if done is not None:
                result, recursive = done
                return revisit(result) if recursive else result
        return node

    def minmax_in_canonical(self, node):
        """A min/max node met by the canonical simplifier (operands canonical)."""
        if not isinstance(node, tir.BinOp) or node.op not in ("min", "max"):
            return node
        return self.apply_rules(node, self._recursive("canonical", canonical.canonical_simplify))

    def simplify(self, e):
        """Analyzer::Simplify(e, steps=2): canonical, rewrite, canonical."""
        with canonical.using(self):
            e = canonical.canonical_simplify(e)
            if isinstance(e, tir.IntImm):
                return e
            e = self.rewrite(e)
            if isinstance(e, tir.IntImm):
                return e
            return canonical.canonical_simplify(e)

