"""TVM's canonical simplifier (src/arith/canonical_simplify.cc) on integer index expressions.

TOPI's index-shuffling operators (reshape's ravel/unravel, tile, repeat, strided_slice) build
indices such as `((ax0 * 4 + ax1) // 6) % 2`; CreatePrimFunc's `Analyzer::Simplify` prints them
in canonical form, `(ax0 * 4 + ax1) % 12 // 6`. `canonical_simplify(e)` reproduces that form:

    SplitExpr  ((index % upper) // lower) * scale     one term
    SumExpr    sum(terms) + base                      terms of one index kept together,
                                                      larger lower factor first
  - `+`, `-` and `* constant` gather terms into a SumExpr (same index and factors: scales add);
  - `// c` splits a sum into its part divisible by c (divided exactly) and the rest (one
    term `rest // c`); `% c` keeps the non-divisible rest and narrows its upper factor;
    `(x % (c*s)) // c` and `(x // c) % s` are the same term (TVM's SplitDivConst/ModConst,
    with the floordiv(floormod) identity of TVM 0.27);
  - a sum prints as its positive terms by descending scale, then + base, then the negative
    terms and base subtracted (SumExprNode::Normalize).

Bounds: like the analyzer of CreatePrimFunc, nothing is known of variables; constant bounds
come only from `x % c` (in [0, c)), constants and interval arithmetic over them.
Non-index expressions are rebuilt from their simplified operands with TVM's folding operators.
"""

from __future__ import annotations

from contextlib import contextmanager

from irtool.ir import tir

from .. import te
from .. import tir_build as tb

POS_INF = (1 << 63) - 1
NEG_INF = -(1 << 63)
FLOOR, TRUNC = "floor", "trunc"


def _is_index(dtype: str) -> bool:
    return dtype in ("int32", "int64")


def _index_equal(a, b) -> bool:
    """TVM's ExprDeepEqual: same structure, variables by identity."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, tir.Var):
        return False
    if isinstance(a, te.ProducerLoad) and a.tensor is not b.tensor:  # its fields leave the tensor out
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_index_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, tir.Node):
        return all(_index_equal(getattr(a, f), getattr(b, f)) for f in type(a).fields)
    return a == b


class Split:
    """((index % upper) // lower) * scale"""

    __slots__ = ("index", "lower", "upper", "scale", "mode", "dtype")

    def __init__(self, index, lower=1, upper=POS_INF, scale=1, mode=TRUNC, dtype=None) -> None:
        self.index, self.lower, self.upper, self.scale, self.mode = index, lower, upper, scale, mode
        self.dtype = dtype or index.dtype

    def copy(self) -> Split:
        return Split(self.index, self.lower, self.upper, self.scale, self.mode, self.dtype)

    def compatible(self, mode: str) -> bool:
        return self.mode == mode or (self.lower == 1 and self.upper == POS_INF)

    def normalize_with_scale(self, sscale: int) -> tir.PrimExpr:
        if self.scale == 0:
            return tb.const(0, self.dtype)
        res = self.index
        if self.upper != POS_INF:
            res = _mod(res, tb.const(self.upper, self.dtype), self.mode)
        if self.lower != 1:
            res = _div(res, tb.const(self.lower, self.dtype), self.mode)
        sscale *= self.scale
        if sscale != 1:
            res = tb.mul(res, tb.const(sscale, self.dtype))
        return res

    def normalize(self) -> tir.PrimExpr:
        return self.normalize_with_scale(1)


class Sum:
    """sum(args) + base"""

    __slots__ = ("args", "base", "dtype")

    def __init__(self, dtype: str, args=None, base: int = 0) -> None:
        self.args: list[Split] = list(args or [])
        self.base, self.dtype = base, dtype

    def copy(self) -> Sum:
        return Sum(self.dtype, [a.copy() for a in self.args], self.base)

    def is_zero(self) -> bool:
        return self.base == 0 and not self.args

    def divide_by(self, c: int) -> None:
        self.base //= c
        for a in self.args:
            a.scale //= c

    def mul_to_self(self, c: int) -> None:
        self.base *= c
        for a in self.args:
            a.scale *= c

    def add_split(self, other: Split, scale: int) -> None:
        if other.scale == 0:
            return
        other = other.copy()
        start = 0
        while start < len(self.args) and not _index_equal(self.args[start].index, other.index):
            start += 1
        for j in range(start, len(self.args)):
            a = self.args[j]
            if not _index_equal(a.index, other.index) or other.lower > a.lower:
                other.scale *= scale
                self.args.insert(j, other)
                return
            if other.lower == a.lower and other.upper == a.upper and other.compatible(a.mode):
                a.scale += other.scale * scale
                return
        other.scale *= scale
        self.args.append(other)

    def add_sum(self, other: Sum, scale: int) -> None:
        for a in other.args:
            self.add_split(a, scale)
        self.base += other.base * scale

    def normalize(self) -> tir.PrimExpr:
        if not self.args:
            return tb.const(self.base, self.dtype)
        args = _simplify_splits([a.copy() for a in self.args])
        res = tb.const(0, self.dtype)
        # the dtype's least value has no negation: added as it is (`n + T.int64(-9223372036854775808)`)
        is_min_value = self.base == -(1 << (tb.bits(self.dtype) - 1))
        for a in args:
            if a.scale > 0:
                res = tb.add(res, a.normalize())
        if self.base > 0 or is_min_value:
            res = tb.add(res, tb.const(self.base, self.dtype))
        for a in args:
            if a.scale < 0:
                res = tb.sub(res, a.normalize_with_scale(-1))
        if self.base < 0 and not is_min_value:
            res = tb.sub(res, tb.const(-self.base, self.dtype))
        return res


def _simplify_splits(args: list[Split]) -> list[Split]:
    """SumExprNode::SimplifySplitExprs: merge terms of one index, then sort by scale and factors."""
    for i in range(len(args)):
        if args[i].scale == 0:
            continue
        for j in range(i + 1, len(args)):
            lhs, rhs = args[i], args[j]
            if not _index_equal(lhs.index, rhs.index) or lhs.upper < rhs.lower:
                break
            if lhs.upper == rhs.upper and lhs.lower == rhs.lower and lhs.compatible(rhs.mode):
                rhs.scale += lhs.scale
                lhs.scale = 0
            elif lhs.lower == rhs.upper and rhs.scale != 0 and lhs.scale % rhs.scale == 0 and \
                    lhs.lower == (lhs.scale // rhs.scale) * rhs.lower and lhs.compatible(rhs.mode):
                rhs.upper = lhs.upper
                lhs.scale = 0
                break
    order = sorted(range(len(args)), key=lambda k: (-args[k].scale, -args[k].lower, -args[k].upper,
                                                    0 if args[k].mode == TRUNC else -1, k))
    return [args[k] for k in order]


def _mod(a, b, mode):
    return tb.floormod(a, b) if mode == FLOOR else tb.truncmod(a, b)


def _div(a, b, mode):
    return tb.floordiv(a, b) if mode == FLOOR else tb.div(a, b)


def _normalize(e):
    return e.normalize() if isinstance(e, (Sum, Split)) else e


def _to_split(e) -> Split:
    if isinstance(e, Split):
        return e.copy()
    if isinstance(e, Sum) and e.base == 0 and len(e.args) == 1:
        return e.args[0].copy()
    e = _normalize(e)
    return Split(e, dtype=e.dtype)


def _to_sum(e) -> Sum:
    if isinstance(e, Sum):
        return e.copy()
    if isinstance(e, tir.IntImm):
        return Sum(e.dtype, base=e.value)
    s = _to_split(e)
    return Sum(s.dtype, [s])


def _convert_mode(s: Split, mode: str) -> Split:
    if s.mode == mode:
        return s
    if s.compatible(mode):
        s.mode = mode
        return s
    s = _to_split(s.normalize())
    s.mode = mode
    return s


# ----------------------------------------------------------------------------- bounds


def _clamp(v: int) -> int:
    return max(NEG_INF, min(POS_INF, v))


# An analyzer with variable bounds (rewrite_simplify.Analyzer) while `using` one: struct info
# over size variables, whose analyzer knows them non-negative and visits min/max with its rules.
_ANALYZER = None


@contextmanager
def using(analyzer):
    global _ANALYZER
    outer, _ANALYZER = _ANALYZER, analyzer
    try:
        yield
    finally:
        _ANALYZER = outer


def const_int_bound(e) -> tuple[int, int]:
    """A constant interval holding `e` (TVM's ConstIntBound, with unbounded variables)."""
    if _ANALYZER is not None:
        return _ANALYZER.const_int_bound(e)
    e = _normalize(e)
    if isinstance(e, tir.IntImm):
        return e.value, e.value
    if isinstance(e, tir.BinOp) and _is_index(e.dtype):
        (a0, a1), (b0, b1) = const_int_bound(e.a), const_int_bound(e.b)
        if e.op == "add":
            return (NEG_INF if NEG_INF in (a0, b0) else _clamp(a0 + b0),
                    POS_INF if POS_INF in (a1, b1) else _clamp(a1 + b1))
        if e.op == "sub":
            return (NEG_INF if a0 == NEG_INF or b1 == POS_INF else _clamp(a0 - b1),
                    POS_INF if a1 == POS_INF or b0 == NEG_INF else _clamp(a1 - b0))
        if e.op == "mul" and b0 == b1 and a0 not in (NEG_INF,) and a1 != POS_INF:
            lo, hi = sorted((a0 * b0, a1 * b0))
            return _clamp(lo), _clamp(hi)
        if e.op == "floormod" and b0 == b1 and b0 > 0:
            if a0 >= 0:
                return 0, min(a1, b0 - 1)
            return 0, b0 - 1
        if e.op == "floordiv" and b0 == b1 and b0 > 0:
            return (NEG_INF if a0 == NEG_INF else a0 // b0), (POS_INF if a1 == POS_INF else a1 // b0)
    return NEG_INF, POS_INF


def _provably_nonneg(e) -> bool:
    return const_int_bound(e)[0] >= 0


def _provably_less(e, c: int) -> bool:
    return const_int_bound(e)[1] < c


# ----------------------------------------------------------------------------- the visitor


def canonical_simplify(e: tir.PrimExpr) -> tir.PrimExpr:
    """`e` in TVM's canonical form (see the module docstring)."""
    return _normalize(_mutate(e))


def nonneg_condition(e: tir.PrimExpr) -> tir.PrimExpr:
    """`e >= 0` as the simplifier prints it: the constant moved left, `c <= rest`."""
    s = _mutate(e)
    if isinstance(s, tir.IntImm):
        return tb.const(s.value >= 0, "bool")
    s = _to_sum(s)
    base, s.base = s.base, 0
    return tb.le(tb.const(-base, s.dtype), s.normalize())


def simplify_index(e: tir.PrimExpr) -> tir.PrimExpr:
    """Analyzer::Simplify: canonical, rewrite, canonical; of the rewrite simplifier only the
    division rules that index expressions need (`x // 2 // 3` is `x // 6`)."""
    return canonical_simplify(_rewrite_divisions(canonical_simplify(e)))


def _rewrite_divisions(e):
    """RewriteSimplifier's `(x // c1) // c2 -> x // (c1 * c2)` and `(x % c1) % c2 -> x % c2`
    (c2 dividing c1), positive constants, applied bottom-up."""
    if not isinstance(e, tir.BinOp):
        return e
    a, b = _rewrite_divisions(e.a), _rewrite_divisions(e.b)
    if _is_index(e.dtype) and isinstance(b, tir.IntImm) and b.value > 0 and isinstance(a, tir.BinOp) \
            and a.op == e.op and isinstance(a.b, tir.IntImm) and a.b.value > 0:
        if e.op == "floordiv":
            return tb.floordiv(a.a, tb.const(a.b.value * b.value, e.dtype))
        if e.op == "floormod" and a.b.value % b.value == 0:
            return tb.floormod(a.a, b)
    if a is e.a and b is e.b:
        return e
    return tir.BinOp(e.op, a, b)


def _mutate(e):
    """CanonicalMutate: a PrimExpr, or a Sum/Split still open to further folding."""
    if isinstance(e, tir.BinOp) and _is_index(e.dtype):
        handler = _HANDLERS.get(e.op)
        if handler is not None:
            return handler(e)
    return _rebuild(e)


def _rebuild(e):
    """Any other node: its operands simplified, rebuilt with the folding operators."""
    if isinstance(e, tir.BinOp):
        a, b = canonical_simplify(e.a), canonical_simplify(e.b)
        node = e if a is e.a and b is e.b else _FOLD[e.op](a, b)
        if _ANALYZER is not None and e.op in ("min", "max") and _is_index(e.dtype):
            return _ANALYZER.minmax_in_canonical(node)
        return node
    if isinstance(e, tir.Cast):
        v = canonical_simplify(e.value)
        return e if v is e.value else tb.cast(e.dtype, v)
    if isinstance(e, tir.Select):
        c, t, f = (canonical_simplify(x) for x in (e.condition, e.true_value, e.false_value))
        return tb.select(c, t, f)
    if isinstance(e, tir.Call):
        args = tuple(canonical_simplify(a) if isinstance(a, tir.PrimExpr) else a for a in e.args)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        return tir.Call(e.dtype, e.op, args, type_annotation=e.type_annotation)
    if isinstance(e, tir.Not):
        return tb.logical_not(canonical_simplify(e.a))
    return e


_FOLD = {"add": tb.add, "sub": tb.sub, "mul": tb.mul, "div": tb.div, "floordiv": tb.floordiv,
         "floormod": tb.floormod, "truncmod": tb.truncmod, "min": tb.min_, "max": tb.max_, "eq": tb.eq,
         "ne": tb.ne, "lt": tb.lt, "le": tb.le, "gt": tb.gt, "ge": tb.ge,
         "and": tb.logical_and, "or": tb.logical_or}


def _const(e) -> int | None:
    return e.value if isinstance(e, tir.IntImm) else None


def _add_sub(e: tir.BinOp, sign: int):
    a, b = _mutate(e.a), _mutate(e.b)
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return tb.const(ca + sign * cb, e.dtype)
    if cb == 0:
        return a
    if ca == 0 and sign == 1:
        return b
    ret = _to_sum(a)
    if cb is not None:
        ret.base += sign * cb
    elif isinstance(b, Sum):
        ret.add_sum(b, sign)
    else:
        ret.add_split(_to_split(b), sign)
    return ret


def _mul(e: tir.BinOp):
    a, b = _mutate(e.a), _mutate(e.b)
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return tb.const(ca * cb, e.dtype)
    if ca == 1 or cb == 0:
        return b
    if cb == 1 or ca == 0:
        return a
    if ca is not None:
        a, b, cb = b, a, ca
    if cb is not None:
        if isinstance(a, Sum):
            ret = a.copy()
            ret.mul_to_self(cb)
            return ret
        ret = _to_split(a)
        ret.scale *= cb
        return ret
    a, b = _normalize(a), _normalize(b)
    for x, y in ((a, b), (b, a)):
        # the rewrite rule `x * (y * c) -> (x * y) * c` ahead: one term of index x * y
        if isinstance(y, tir.BinOp) and y.op == "mul" and isinstance(y.b, tir.IntImm) and _const(y.a) is None:
            ret = _to_split(_left_assoc(x, y.a) if x is a else _left_assoc(y.a, x))
            ret.scale *= y.b.value
            return ret
    return _left_assoc(a, b)


def _left_assoc(a, b) -> tir.PrimExpr:
    """`a * (y * z)` as TVM's rewrite rules leave a product of symbols: `a * y * z`."""
    if isinstance(b, tir.BinOp) and b.op == "mul":
        return tb.mul(_left_assoc(a, b.a), b.b)
    return tb.mul(a, b)


def _separate(psum: Sum, c: int) -> tuple[Sum, Sum]:
    divisible, rest = Sum(psum.dtype), Sum(psum.dtype)
    if psum.base % c == 0:
        divisible.base = psum.base
    else:
        rest.base = psum.base
    for a in psum.args:
        (divisible if a.scale % c == 0 else rest).args.append(a.copy())
    return divisible, rest


def _split_div_const(lhs: Split, c: int, mode: str) -> Split:
    lhs = _convert_mode(lhs.copy(), mode)
    if lhs.scale % c == 0:
        lhs.scale //= c
        return lhs
    if lhs.scale > 0 and c % lhs.scale == 0:  # (a negative scale takes the general path below)
        scaled = c // lhs.scale
        if lhs.upper == POS_INF or lhs.upper % (lhs.lower * scaled) == 0:
            lhs.scale = 1
            lhs.lower *= scaled
            return lhs
        if lhs.upper <= lhs.lower * scaled:
            return _to_split(tb.const(0, lhs.dtype))
        lhs.index = _mod(lhs.index, tb.const(lhs.upper, lhs.dtype), mode)
        lhs.upper = POS_INF
        lhs.scale = 1
        lhs.lower *= scaled
        return lhs
    lhs = _to_split(lhs.normalize())
    lhs.lower *= c
    lhs.mode = mode
    return lhs


def _split_mod_const(lhs: Split, c: int, mode: str) -> Split:
    lhs = _convert_mode(lhs.copy(), mode)
    if lhs.scale % c == 0:
        lhs.scale = 0
        return lhs
    if lhs.scale > 0 and c % lhs.scale == 0:
        scaled = c // lhs.scale
        new_upper = lhs.lower * scaled
        if lhs.upper == POS_INF or lhs.upper % new_upper == 0:
            if new_upper < lhs.upper and lhs.upper != POS_INF:
                updated = _to_split(_mutate(_mod(lhs.index, tb.const(new_upper, lhs.dtype), mode)))
                if lhs.lower != 1:
                    ret = _split_div_const(updated, lhs.lower, mode)
                    ret.scale *= lhs.scale
                    return ret
                updated.scale *= lhs.scale
                return updated
            lhs.upper = new_upper
            return lhs
        if new_upper % lhs.upper == 0:
            return lhs
    lhs = _to_split(lhs.normalize())
    lhs.mode = mode
    lhs.upper = c
    return lhs


def _floordiv_of_sum(psum: Sum, c: int) -> Sum:
    lhs, extra = _separate(psum, c)
    lhs.divide_by(c)
    if extra.is_zero():
        return lhs
    temp = extra.normalize()
    if isinstance(temp, tir.IntImm):
        lhs.base += temp.value // c
    elif not (_provably_less(temp, c) and _provably_nonneg(temp)):
        lhs.add_split(_split_div_const(_to_split(temp), c, FLOOR), 1)
    return lhs


def _floordiv(e: tir.BinOp):
    a, b = _mutate(e.a), _mutate(e.b)
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None and cb != 0:
        return tb.const(ca // cb, e.dtype)
    if cb is not None and cb > 0:
        if cb == 1:
            return a
        if isinstance(a, Sum):
            return _floordiv_of_sum(a, cb)
        lo, hi = const_int_bound(a)
        if lo >= 0 and hi < cb:
            return tb.const(0, e.dtype)
        if isinstance(a, Split) and a.lower == 1 and a.scale == 1 and a.upper != POS_INF and \
                a.upper % cb == 0 and a.compatible(FLOOR):
            raw = _mutate(a.index)
            if isinstance(raw, Sum) and not _separate(raw, cb)[0].is_zero():
                div = _floordiv_of_sum(raw, cb).normalize()
                return _mutate(tb.floormod(div, tb.const(a.upper // cb, e.dtype)))
        return _split_div_const(_to_split(a), cb, FLOOR)
    a, b = _normalize(a), _normalize(b)
    simplified = _prod_div(a, b)
    if simplified is not None:
        return tb.floordiv(simplified[0], simplified[1])
    return e if a is e.a and b is e.b else tir.BinOp("floordiv", a, b)


def _floormod(e: tir.BinOp):
    a, b = _mutate(e.a), _mutate(e.b)
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None and cb != 0:
        return tb.const(ca % cb, e.dtype)
    if cb is not None and cb > 0:
        if isinstance(a, Sum):
            _, extra = _separate(a, cb)
            temp = extra.normalize()
            if isinstance(temp, tir.IntImm):
                return tb.const(temp.value % cb, e.dtype)
            if _provably_less(temp, cb) and _provably_nonneg(temp):
                return temp
            extra.base %= cb
            return _split_mod_const(_to_split(extra), cb, FLOOR)
        lo, hi = const_int_bound(a)
        if lo >= 0 and hi < cb:
            return a
        return _split_mod_const(_to_split(a), cb, FLOOR)
    a, b = _normalize(a), _normalize(b)
    simplified = _prod_div(a, b)
    if simplified is not None:
        return tb.mul(tb.floormod(simplified[0], simplified[1]), simplified[2])
    return e if a is e.a and b is e.b else tir.BinOp("floormod", a, b)


def _unpack_mul(e, out: list) -> None:
    if isinstance(e, tir.BinOp) and e.op == "mul":
        _unpack_mul(e.a, out)
        _unpack_mul(e.b, out)
    else:
        out.append(e)


def _prod_div(lhs, rhs):
    """ProdDivSimplify: common factors of two products cancelled; None when there are none."""
    import math

    if isinstance(rhs, tir.IntImm):
        return None
    lhs_prods: list = []
    _unpack_mul(lhs, lhs_prods)
    lscale = 1
    kept: list = []
    for v in lhs_prods:
        if isinstance(v, tir.IntImm):
            lscale *= v.value
        else:
            kept.append(v)
    rhs_prods: list = []
    _unpack_mul(rhs, rhs_prods)
    rscale, eliminated = 1, 0
    new_rhs = tb.const(1, rhs.dtype)
    common = tb.const(1, rhs.dtype)
    for v in rhs_prods:
        if isinstance(v, tir.IntImm):
            rscale *= v.value
            continue
        for i, w in enumerate(kept):
            if w is not None and _index_equal(v, w):
                kept[i] = None
                eliminated += 1
                common = tb.mul(common, v)
                break
        else:
            new_rhs = tb.mul(new_rhs, v)
    g = math.gcd(lscale, rscale) or 1
    if eliminated == 0 and g == 1:
        return None
    new_lhs = tb.const(1, lhs.dtype)
    for w in kept:
        if w is not None:
            new_lhs = tb.mul(new_lhs, w)
    return (tb.mul(new_lhs, lscale // g), tb.mul(new_rhs, rscale // g), tb.mul(common, g))


_HANDLERS = {"add": lambda e: _add_sub(e, 1), "sub": lambda e: _add_sub(e, -1), "mul": _mul,
             "floordiv": _floordiv, "floormod": _floormod}


# ----------------------------------------------------------------------------- rewrite rules


def rewrite_bounds(e):
    """The RewriteSimplifier rules that a dynamic strided_slice's clamped bounds need, bottom-up
    then canonical form:  x // c < 0 -> x < 0;  x + c < 0 -> x < -c;  min(max(x, y), x) -> x;
    x - min(y, x) and x - min(x, y) -> max(x - y, 0)."""
    return canonical_simplify(_rewrite(e))


def _rewrite(e):
    if isinstance(e, tir.Call) and e.op == "tirx.if_then_else":
        c, t, f = (_rewrite(a) for a in e.args)
        return tb.if_then_else(c, t, f)
    if not isinstance(e, tir.BinOp):
        return e
    a, b = _rewrite(e.a), _rewrite(e.b)
    if e.op in ("min", "max", "sub") and _is_index(e.dtype):
        a, b = canonical_simplify(a), canonical_simplify(b)
    if e.op == "lt" and _const(b) == 0 and _is_index(a.dtype):
        if isinstance(a, tir.BinOp) and a.op == "floordiv" and _const(a.b) is not None and a.b.value > 0:
            return _rewrite(tb.lt(a.a, 0))
        s = _to_sum(_mutate(a))
        if s.base != 0 and s.args:
            base, s.base = s.base, 0
            return tb.lt(s.normalize(), tb.const(-base, s.dtype))
    if e.op == "min" and isinstance(a, tir.BinOp) and a.op == "max" and _index_equal(a.a, b):
        return b
    if e.op == "sub" and isinstance(b, tir.BinOp) and b.op == "min":
        other = b.a if _index_equal(b.b, a) else b.b if _index_equal(b.a, a) else None
        if other is not None:
            return tb.max_(canonical_simplify(tb.sub(a, other)), 0)
    if a is e.a and b is e.b:
        return e
    return _FOLD[e.op](a, b)
