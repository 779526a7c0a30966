"""The part of TVM's arithmetic simplifier (`arith::Analyzer::Simplify`) that CreatePrimFunc's
results show, and its IndexDataTypeNormalizer for conditions.

`simplify(e)` rebuilds `e` bottom-up with the folding constructors of `tir_build` and
applies TVM's RewriteSimplifier rules that change what compute bodies print:

    a >= b  ->  b <= a          a > b  ->  b < a          (TVM keeps only < and <=)
    a >= x - c  ->  x <= a + c  and the other merges of two sides' constant offsets (of a >=)
    not (a < b) -> b <= a       not (a <= b) -> b < a     not (a == b) -> a != b
    x - c < y -> x < y + c      x < y - c -> x + c < y    x < y + 1 -> x <= y   (indices;
    a <= b as not (b < a): x - c <= y -> x <= y + c, x <= y - c -> x + c <= y, x + 1 <= y -> x < y)
    (x + c1) + c2 -> x + (c1 + c2)   (x - c1) + c2 -> x + (c2 - c1)   (integers)
    c * x -> x * c    x * c1 * c2 -> x * (c1 * c2)    x * c * y -> x * y * c   (integers)
    (x + c1) // c2 -> x // c2 + c1 / c2   where c2 > 0 divides c1
    truncmod(x, -c) -> truncmod(x, c)                               (int32/int64, c > 0)
    select / if_then_else of a constant condition -> the chosen branch
    cast to the operand's own dtype -> the operand

It knows nothing of variable bounds (TVM's analyzer in CreatePrimFunc has none either).

`normalize_index_dtype(e, "int64")`: inside the condition of a Select or if_then_else,
comparisons between integers are done in the index dtype: int constants of 32+ bits are
re-typed and narrower integer operands cast (`T.int64(0) <= T.Cast("int64", x[i])`).
"""

from __future__ import annotations

from irtool.ir import tir

from . import tir_build as tb

_FOLD = {"add": tb.add, "sub": tb.sub, "mul": tb.mul, "div": tb.div, "floordiv": tb.floordiv,
         "floormod": tb.floormod, "truncmod": tb.truncmod, "min": tb.min_, "max": tb.max_, "eq": tb.eq,
         "ne": tb.ne, "lt": tb.lt, "le": tb.le, "gt": tb.gt, "ge": tb.ge,
         "and": tb.logical_and, "or": tb.logical_or}

_NEGATED = {"lt": ("le", True), "le": ("lt", True), "eq": ("ne", False), "ne": ("eq", False)}


def simplify(e: tir.PrimExpr) -> tir.PrimExpr:
    """`e` as TVM's Simplify leaves it (see the module docstring)."""
    if isinstance(e, (tir.IntImm, tir.FloatImm, tir.Var, tir.StringImm)):
        return e
    if isinstance(e, tir.BinOp):
        a, b = simplify(e.a), simplify(e.b)
        if e.op == "ge":  # TVM visits b <= a, which merges the two sides' constant offsets
            merged = _merged_le(b, a)
            return merged if merged is not None else simplify_cmp("le", b, a)
        if e.op == "gt":
            return simplify_cmp("lt", b, a)
        if e.op in ("add", "sub") and tb.is_int(e.dtype):
            folded = _fold_offsets(e.op, a, b)
            if folded is not None:
                return folded
        if e.op in ("add", "sub") and e.dtype in _INDEX_DTYPES:
            signed = _signed_constant(e.op, a, b)
            if signed is not None:
                return signed
        if e.op in ("lt", "le"):  # TVM's rewrite rules of comparisons (`x < y + 1` -> `x <= y` ...)
            return simplify_cmp(e.op, a, b)
        if e.op == "floordiv" and tb.is_int(e.dtype) and isinstance(b, tir.IntImm) and b.value > 0 and \
                isinstance(a, tir.BinOp) and a.op in ("add", "sub") and isinstance(a.b, tir.IntImm) and \
                not isinstance(a.a, tir.IntImm) and a.b.value % b.value == 0:
            # TVM's rule `(x + c1) // c2` -> `x // c2 + c1 / c2` where c2 divides c1 (a conv's
            # pooled size over a size variable: `(n - 3) // 3 + 1` is `n // 3`)
            shift = (a.b.value if a.op == "add" else -a.b.value) // b.value
            return simplify(tb.add(tb.floordiv(a.a, b), shift))
        if e.op == "truncmod" and e.dtype in _INDEX_DTYPES and isinstance(b, tir.IntImm) and \
                -(2 ** (tb.bits(e.dtype) - 1)) < b.value < 0:
            return _FOLD["truncmod"](a, tb.const(-b.value, e.dtype))  # the sign of a truncmod is the dividend's
        if e.op == "mul" and tb.is_int(e.dtype) and isinstance(a, tir.IntImm) and not isinstance(b, tir.IntImm):
            return simplify(tb.mul(b, a))  # canonical form puts the constant scale last: `2 * n` -> `n * 2`
        if e.op == "mul" and tb.is_int(e.dtype) and isinstance(b, tir.IntImm) and isinstance(a, tir.BinOp) and \
                a.op == "mul" and isinstance(a.b, tir.IntImm):
            return tb.mul(a.a, a.b.value * b.value)  # scales multiply: `n * 3 * 2` -> `n * 6`
        if e.op == "mul" and tb.is_int(e.dtype) and not isinstance(b, tir.IntImm) and isinstance(a, tir.BinOp) and \
                a.op == "mul" and isinstance(a.b, tir.IntImm):
            return tb.mul(tb.mul(a.a, b), a.b)  # the scale moves out: `n * 2 * m` -> `n * m * 2` (flatten)
        return _FOLD[e.op](a, b)
    if isinstance(e, tir.Not):
        a = simplify(e.a)
        if isinstance(a, tir.Not):
            return a.a
        if isinstance(a, tir.BinOp) and a.op in _NEGATED:
            op, swap = _NEGATED[a.op]
            return simplify_cmp(op, a.b, a.a) if swap else simplify_cmp(op, a.a, a.b)
        return tb.logical_not(a)
    if isinstance(e, tir.Cast):
        v = simplify(e.value)
        return tb.cast(e.dtype, v)
    if isinstance(e, tir.Select):
        c, t, f = simplify(e.condition), simplify(e.true_value), simplify(e.false_value)
        if isinstance(c, tir.IntImm):
            return t if c.value else f
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return tir.Select(c, t, f)
    if isinstance(e, tir.Call):
        return call_with_args(e, tuple(simplify(a) if isinstance(a, tir.PrimExpr) else a for a in e.args))
    if isinstance(e, tir.BufferLoad):
        indices = tuple(simplify(i) for i in e.indices)
        return e if all(a is b for a, b in zip(indices, e.indices)) else tir.BufferLoad(e.buffer, indices)
    return e


def simplify_cmp(op: str, a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    if op in ("lt", "le") and a.dtype in _INDEX_DTYPES and b.dtype == a.dtype:
        if op == "lt":
            return _simplify_lt(a, b)
        flipped = _simplify_lt(b, a)  # TVM rewrites `a <= b` as `not (b < a)`
        if isinstance(flipped, tir.BinOp) and flipped.op in ("lt", "le"):
            return (tb.le if flipped.op == "lt" else tb.lt)(flipped.b, flipped.a)
    if op == "lt" and tb.is_int(a.dtype):
        return _plus_one(a, b)
    return _FOLD[op](a, b)


def _offset(e) -> int | None:
    """c of `x - c` (c > 0), the form an index minus a constant takes."""
    if isinstance(e, tir.BinOp) and e.op == "sub" and isinstance(e.b, tir.IntImm) and e.b.value > 0 \
            and not isinstance(e.a, tir.IntImm):
        return e.b.value
    return None


def _simplify_lt(a, b):
    """TVM's RewriteSimplifier on an index `<`: a constant subtracted moves to the other side as
    an addition, `x - c < y` -> `x < y + c`, `x < y - c` -> `x + c < y`, then `x < y + 1` ->
    `x <= y` (tril/triu's `row >= col - k`)."""
    if _offset(a) is not None:
        a, b = a.a, _fold_offsets("add", b, a.b) or tb.add(b, a.b)
    elif _offset(b) is not None:
        a, b = _fold_offsets("add", a, b.b) or tb.add(a, b.b), b.a
    return _plus_one(a, b)


def _plus_one(a, b):
    """`x < y + 1` -> `x <= y` (symbolic pad bounds)."""
    if isinstance(b, tir.BinOp) and b.op == "add" and isinstance(b.b, tir.IntImm) and b.b.value == 1 \
            and not isinstance(b.a, tir.IntImm):
        return tb.le(a, b.a)
    return tb.lt(a, b)


def _constant_offset(e) -> tuple:
    """TVM's ExtractConstantOffset for `x + c` and `x - c`: (x, c or -c); else (e, 0)."""
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub") and isinstance(e.b, tir.IntImm):
        return e.a, e.b.value if e.op == "add" else -e.b.value
    return e, 0


def _merged_le(a, b):
    """`a <= b` of two non-constant integers as TVM writes it, `!(b < a)` with the constant
    offsets of the two sides merged (merge_constants among RewriteSimplifier's LT rules):
    `v_i2 - 2 <= v_i1` -> `v_i2 <= v_i1 + 2` (a causal mask's trilu). None: unchanged."""
    if not tb.is_int(a.dtype) or isinstance(a, tir.IntImm) or isinstance(b, tir.IntImm):
        return None
    (lhs, lhs_offset), (rhs, rhs_offset) = _constant_offset(b), _constant_offset(a)  # the offsets of b < a
    if lhs_offset == 0 and rhs_offset == 0:
        return None
    diff = rhs_offset - lhs_offset
    if diff == 0:  # !(lhs < rhs)
        return tb.le(rhs, lhs)
    if diff == 1:  # !(lhs <= rhs)
        return tb.lt(rhs, lhs)
    if diff < 0 and rhs_offset != 0:  # !(lhs + -diff < rhs)
        return tb.le(rhs, tb.add(lhs, -diff))
    if diff > 0 and lhs_offset != 0:  # !(lhs < rhs + diff)
        return tb.le(tb.add(rhs, diff), lhs)
    return None


_INDEX_DTYPES = ("int32", "int64")


def _signed_constant(op: str, a, b):
    """TVM's canonical form of a sum with one constant term (int32/int64 only; narrower
    integers are left alone): the constant last, its sign in the operator.
        x - (-2) -> x + 2    x + (-2) -> x - 2    2 + x -> x + 2    -2 + x -> x - 2
        -2 - x -> 0 - x - 2  (2 - x stays)
    """
    a_const, b_const = isinstance(a, tir.IntImm), isinstance(b, tir.IntImm)
    if a_const == b_const:
        return None
    limit = -(2 ** (int(a.dtype[3:]) - 1))  # the most negative value has no positive counterpart
    if op == "add" and a_const:
        a, b = b, a
    if op == "add":
        return tb.sub(a, -b.value) if limit < b.value < 0 else (tb.add(a, b) if a_const else None)
    if b_const:
        return tb.add(a, -b.value) if limit < b.value < 0 else None
    if limit < a.value < 0:
        return tb.sub(tb.sub(tir.IntImm(0, a.dtype), b), -a.value)
    return None


def _fold_offsets(op: str, a, b):
    """(x + c1) + c2 and friends: constants gathered into one, as TVM's canonical form."""
    if not isinstance(b, tir.IntImm) or not isinstance(a, tir.BinOp) or a.op not in ("add", "sub") \
            or not isinstance(a.b, tir.IntImm):
        return None
    inner = a.b.value if a.op == "add" else -a.b.value
    total = inner + (b.value if op == "add" else -b.value)
    if total == 0:
        return a.a
    return tb.add(a.a, total) if total > 0 else tb.sub(a.a, -total)


# ----------------------------------------------------------------------------- index dtypes

_CMP = ("eq", "ne", "lt", "le", "gt", "ge")


def normalize_index_dtype(e: tir.PrimExpr, index_dtype: str = "int64", in_condition: bool = False) -> tir.PrimExpr:
    """TVM's IndexDataTypeNormalizer on an expression of a compute body (module docstring)."""
    if isinstance(e, tir.Select):
        c = normalize_index_dtype(e.condition, index_dtype, True)
        t = normalize_index_dtype(e.true_value, index_dtype, in_condition)
        f = normalize_index_dtype(e.false_value, index_dtype, in_condition)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return tir.Select(c, t, f)
    if isinstance(e, tir.Call) and e.op == "tirx.if_then_else":
        c = normalize_index_dtype(e.args[0], index_dtype, True)
        t = normalize_index_dtype(e.args[1], index_dtype, in_condition)
        f = normalize_index_dtype(e.args[2], index_dtype, in_condition)
        if c is e.args[0] and t is e.args[1] and f is e.args[2]:
            return e
        return tir.Call(e.dtype, e.op, (c, t, f))
    if isinstance(e, tir.BinOp) and e.op in _CMP and in_condition and _int(e.a.dtype) and _int(e.b.dtype):
        a, b = _to_index(e.a, index_dtype), _to_index(e.b, index_dtype)
        if a.dtype != b.dtype:
            a, b = tb.match_types(a, b)
        return e if a is e.a and b is e.b else tir.BinOp(e.op, a, b)
    if isinstance(e, tir.BinOp):
        a = normalize_index_dtype(e.a, index_dtype, in_condition)
        b = normalize_index_dtype(e.b, index_dtype, in_condition)
        return e if a is e.a and b is e.b else tir.BinOp(e.op, a, b)
    if isinstance(e, tir.Not):
        a = normalize_index_dtype(e.a, index_dtype, in_condition)
        return e if a is e.a else tir.Not(a)
    if isinstance(e, tir.Cast):
        v = normalize_index_dtype(e.value, index_dtype, in_condition)
        return e if v is e.value else tir.Cast(e.dtype, v)
    if isinstance(e, tir.Call):
        args = tuple(normalize_index_dtype(a, index_dtype, in_condition) if isinstance(a, tir.PrimExpr) else a
                     for a in e.args)
        return e if all(a is b for a, b in zip(args, e.args)) else tir.Call(e.dtype, e.op, args,
                                                                         type_annotation=e.type_annotation)
    return e


def _int(dtype: str) -> bool:
    return tb.is_int(dtype)


def _to_index(e: tir.PrimExpr, index_dtype: str) -> tir.PrimExpr:
    """An integer operand of a condition in the index dtype (constants and casts re-typed,
    arithmetic rebuilt; loads keep their dtype and are cast by the comparison)."""
    if isinstance(e, tir.IntImm) and tb.bits(e.dtype) >= 32:
        return tb.const(e.value, index_dtype)
    if isinstance(e, tir.Cast) and tb.is_int(e.dtype) and tb.bits(e.dtype) >= 32:
        v = _to_index(e.value, index_dtype)
        return v if v.dtype == index_dtype else tir.Cast(index_dtype, v)
    if isinstance(e, tir.BinOp) and not tir.BINARY_OPS[e.op][2]:
        a, b = _to_index(e.a, index_dtype), _to_index(e.b, index_dtype)
        if a.dtype != b.dtype:
            a, b = tb.match_types(a, b)
        return e if a is e.a and b is e.b else tir.BinOp(e.op, a, b)
    return e


def call_with_args(e: tir.Call, args: tuple) -> tir.PrimExpr:
    """`e` with its arguments simplified to `args` (itself when none changed); an
    if_then_else of a constant condition is the branch it picks."""
    if e.op == "tirx.if_then_else" and isinstance(args[0], tir.IntImm):
        return args[1] if args[0].value else args[2]
    if all(a is b for a, b in zip(args, e.args)):
        return e
    return tir.Call(e.dtype, e.op, args, type_annotation=e.type_annotation)
