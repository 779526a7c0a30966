"""TIR expressions -> LLVM values: the expression half of the PrimFunc code generator.

`ExprCodegen` is mixed into llvm_codegen's function builder, which provides `builder`,
`vars`, `data`, `mb`, `fp_contract`, `address`, `fail`, `new_block` and `error`. Semantics are TVM's and
the TIR interpreter's: integer `/` and truncdiv truncate, floordiv/floormod round toward
-inf (integer division by zero fails the call, INT_MIN / -1 wraps), min/max are selects,
`!=` on floats is unordered; `if_then_else` and `and`/`or` branch when an operand may fault.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from ..ir import tir
from .llvm_types import I1, I32, _fwidth, _intrinsic_suffix, _kind, _split, _width, llvm_type, scalar_type

# LLVM intrinsics over floats (scalar or vector), by TIR intrinsic name
_LLVM_FLOAT_INTRINSICS = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "exp10": "llvm.exp10", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sqrt": "llvm.sqrt", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "round": "llvm.nearbyint", "nearbyint": "llvm.nearbyint", "trunc": "llvm.trunc", "fabs": "llvm.fabs",
    "abs": "llvm.fabs", "pow": "llvm.pow", "sin": "llvm.sin", "cos": "llvm.cos", "tan": "llvm.tan",
    "copysign": "llvm.copysign", "asin": "llvm.asin", "acos": "llvm.acos", "atan": "llvm.atan",
    "sinh": "llvm.sinh", "cosh": "llvm.cosh", "tanh": "llvm.tanh", "atan2": "llvm.atan2",
    "ldexp": "llvm.ldexp",
}
# libm functions (float32 name, float64 name), called lane by lane on vectors
_LIBM = {
    "erf": ("erff", "erf"), "expm1": ("expm1f", "expm1"), "log1p": ("log1pf", "log1p"),
    "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
    "hypot": ("hypotf", "hypot"), "fmod": ("fmodf", "fmod"), "nextafter": ("nextafterf", "nextafter"),
}
# exp on float32, computed inline in float64 (ExprCodegen.call_exp): 2^k * e^r, |r| <= ln2 / 2,
# e^r by its Taylor polynomial to degree 9 (truncation < 1e-11 relative: the float32 result is
# the exact value rounded but for a few in a million, those an ULP off)
_EXP_TAYLOR_DEGREE = 9
_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
# float32 inputs beyond these give 0 and inf once rounded to float32 (and keep 2^k a normal double)
_EXP_F32_LOW, _EXP_F32_HIGH = -104.0, 89.0
_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def element_bytes(t: ir.Type) -> int:
    """The size (and the alignment a vector access may assume) of one element of memory type `t`."""
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return {"half": 2, "float": 4, "double": 8}[str(t)]


class ExprCodegen:
    """The `e_<Node>` methods and their helpers."""

    def broadcast_to(self, v: ir.Value, dtype: str, lanes: int) -> ir.Value:
        if _split(dtype)[1] == lanes:
            return v
        b = self.builder
        vt = ir.VectorType(v.type, lanes)
        undef = ir.Constant(vt, ir.Undefined)
        one = b.insert_element(undef, v, I32(0))
        return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))

    # -------------------------------------------------------------- expressions
    def expr(self, e) -> ir.Value:
        method = getattr(self, f"e_{type(e).__name__}", None)
        if method is None:
            raise self.error(f"unsupported expression `{type(e).__name__}`", e)
        return method(e)

    def e_IntImm(self, e: tir.IntImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def e_FloatImm(self, e: tir.FloatImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def e_StringImm(self, e: tir.StringImm) -> ir.Value:
        return self.mb.string(e.value or "")

    def e_Var(self, e: tir.Var) -> ir.Value:
        v = self.vars.get(e)
        if v is None:
            v = self.data.get(e)
        if v is None:
            raise self.error(f"variable `{e.name}` is not defined", e)
        return v

    def e_Let(self, e: tir.Let) -> ir.Value:
        self.vars[e.var] = self.expr(e.value)
        return self.expr(e.body)

    def e_Cast(self, e: tir.Cast) -> ir.Value:
        return self.cast_to(self.expr(e.value), e.value.dtype, e.dtype)

    def e_Not(self, e: tir.Not) -> ir.Value:
        return self.builder.not_(self.as_bool(self.expr(e.a)))

    def e_Ramp(self, e: tir.Ramp) -> ir.Value:
        b = self.builder
        base, stride = self.expr(e.base), self.expr(e.stride)
        out = ir.Constant(ir.VectorType(base.type, e.lanes), ir.Undefined)
        for k in range(e.lanes):
            lane = b.add(base, b.mul(stride, ir.Constant(base.type, k))) if k else base
            out = b.insert_element(out, lane, I32(k))
        return out

    def e_Broadcast(self, e: tir.Broadcast) -> ir.Value:
        return self.broadcast_to(self.expr(e.value), e.value.dtype, e.lanes)

    def e_Select(self, e: tir.Select) -> ir.Value:
        cond = self.expr(e.condition)
        a, c = self.expr(e.true_value), self.expr(e.false_value)
        return self.builder.select(self.as_bool(cond), a, c)

    def e_BufferLoad(self, e: tir.BufferLoad) -> ir.Value:
        b = self.builder
        ptr, lanes, index = self.address(e.buffer, e.indices, e)
        etype = self.mem_type(e.buffer.dtype)
        if lanes == 1:
            return self.from_memory(b.load(ptr, typ=etype), e.buffer.dtype)
        if index is None:  # aligned to an element only: <4 x float> at A + 3 is not 16-byte aligned
            return self.from_memory(b.load(ptr, typ=ir.VectorType(etype, lanes), align=element_bytes(etype)),
                                    e.buffer.dtype)
        out = ir.Constant(ir.VectorType(etype, lanes), ir.Undefined)
        for k in range(lanes):
            p = b.gep(ptr, [b.extract_element(index, I32(k))], source_etype=etype)
            out = b.insert_element(out, b.load(p, typ=etype), I32(k))
        return self.from_memory(out, e.buffer.dtype)

    def e_BinOp(self, e: tir.BinOp) -> ir.Value:
        b = self.builder
        if e.op in ("and", "or"):
            return self.logical(e)
        if e.op == "add" and self.fp_contract and _kind(e.a.dtype) == "float":
            fused = self.multiply_add(e)
            if fused is not None:
                return fused
        a, c = self.expr(e.a), self.expr(e.b)
        kind = _kind(e.a.dtype)
        op = e.op
        if kind == "float":
            if op in _FCMP:
                # every comparison ordered, `!=` too: TVM's codegen emits FCmpONE, so NaN != x is false
                return b.fcmp_ordered(_FCMP[op], a, c)
            if op == "add":
                return b.fadd(a, c)
            if op == "sub":
                return b.fsub(a, c)
            if op == "mul":
                return b.fmul(a, c)
            if op == "div":
                return b.fdiv(a, c)
            if op in ("min", "max"):
                return b.select(b.fcmp_ordered("<" if op == "min" else ">", a, c), a, c)
            if op == "floordiv":
                return self.call_intrinsic("llvm.floor", [b.fdiv(a, c)])
            if op == "floormod":
                return b.fsub(a, b.fmul(self.call_intrinsic("llvm.floor", [b.fdiv(a, c)]), c))
            if op == "truncdiv":
                return self.call_intrinsic("llvm.trunc", [b.fdiv(a, c)])
            if op == "truncmod":
                return b.frem(a, c)
            raise self.error(f"operator `{op}` on floats", e)
        signed = kind == "int"
        if op in _ICMP:
            return b.icmp_signed(_ICMP[op], a, c) if signed else b.icmp_unsigned(_ICMP[op], a, c)
        if op == "add":
            return b.add(a, c)
        if op == "sub":
            return b.sub(a, c)
        if op == "mul":
            return b.mul(a, c)
        if op in ("min", "max"):
            cmp = b.icmp_signed if signed else b.icmp_unsigned
            return b.select(cmp("<" if op == "min" else ">", a, c), a, c)
        if op in ("div", "truncdiv", "truncmod", "floordiv", "floormod"):
            c = self.checked_divisor(c, e)
        if op in ("div", "truncdiv"):
            return self.safe_div(a, c, b.sdiv, negate=True) if signed else b.udiv(a, c)
        if op == "truncmod":
            return self.safe_div(a, c, b.srem, negate=False) if signed else b.urem(a, c)
        if op in ("floordiv", "floormod"):
            if not signed:
                return b.udiv(a, c) if op == "floordiv" else b.urem(a, c)
            q, r = self.safe_div(a, c, b.sdiv, negate=True), self.safe_div(a, c, b.srem, negate=False)
            zero = ir.Constant(a.type, 0) if not isinstance(a.type, ir.VectorType) else \
                self.broadcast_to(ir.Constant(a.type.element, 0), "int", a.type.count)
            # the remainder's sign differs from the divisor's: round toward -inf
            adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                                                          b.icmp_signed("<", c, zero)))
            if op == "floordiv":
                return b.sub(q, b.zext(adjust, a.type))
            return b.select(adjust, b.add(r, c), r)
        raise self.error(f"operator `{op}` on integers", e)

    def checked_divisor(self, c: ir.Value, node) -> ir.Value:
        """Integer division by zero traps on the CPU: it fails the call with a message instead."""
        if isinstance(c, ir.Constant) or isinstance(c.type, ir.VectorType):
            if isinstance(c, ir.Constant) and not isinstance(c.type, ir.VectorType) and c.constant == 0:
                raise self.error("integer division by the constant zero", node)
            return c
        b = self.builder
        ok, bad = self.new_block("div_ok"), self.new_block("div_by_zero")
        b.cbranch(b.icmp_signed("!=", c, ir.Constant(c.type, 0)), ok, bad)
        b.position_at_end(bad)
        self.fail("division by zero")
        b.position_at_end(ok)
        return c

    def safe_div(self, a: ir.Value, c: ir.Value, divide, negate: bool) -> ir.Value:
        """Signed division or remainder where INT_MIN / -1 (which traps) wraps, as TVM's semantics say."""
        b = self.builder
        if isinstance(c, ir.Constant) and not isinstance(c.type, ir.VectorType) and c.constant != -1:
            return divide(a, c)
        minus_one = ir.Constant(c.type, -1) if not isinstance(c.type, ir.VectorType) else \
            ir.Constant(c.type, [-1] * c.type.count)
        one = ir.Constant(c.type, 1) if not isinstance(c.type, ir.VectorType) else \
            ir.Constant(c.type, [1] * c.type.count)
        is_minus_one = b.icmp_signed("==", c, minus_one)
        result = divide(a, b.select(is_minus_one, one, c))
        fallback = b.neg(a) if negate else ir.Constant(a.type, None)
        return b.select(is_minus_one, fallback, result)

    def logical(self, e: tir.BinOp) -> ir.Value:
        """`and`/`or`, evaluating the right operand only when needed (it may load)."""
        b = self.builder
        a = self.as_bool(self.expr(e.a))
        if isinstance(a.type, ir.VectorType) or not _may_trap(e.b):
            c = self.as_bool(self.expr(e.b))
            return b.and_(a, c) if e.op == "and" else b.or_(a, c)
        start = b.block
        rhs, end = self.new_block("rhs"), self.new_block("logic_end")
        if e.op == "and":
            b.cbranch(a, rhs, end)
        else:
            b.cbranch(a, end, rhs)
        b.position_at_end(rhs)
        c = self.as_bool(self.expr(e.b))
        rhs_end = b.block
        b.branch(end)
        b.position_at_end(end)
        phi = b.phi(I1)
        phi.add_incoming(I1(0 if e.op == "and" else 1), start)
        phi.add_incoming(c, rhs_end)
        return phi

    def as_bool(self, v: ir.Value) -> ir.Value:
        t = v.type.element if isinstance(v.type, ir.VectorType) else v.type
        if t == I1:
            return v
        zero = ir.Constant(v.type, None)
        if isinstance(t, ir.IntType):
            return self.builder.icmp_unsigned("!=", v, zero)
        return self.builder.fcmp_unordered("!=", v, zero)

    def cast_to(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        b = self.builder
        sk, dk = _kind(src), _kind(dst)
        st, dt = llvm_type(src), llvm_type(dst)
        if str(st) == str(dt) and sk == dk:
            return v
        if dk == "bool":
            return self.as_bool(v)
        if sk == "bool":
            return b.uitofp(v, dt) if dk == "float" else b.zext(v, dt)
        if sk in ("int", "uint") and dk in ("int", "uint"):
            sw, dw = _width(st), _width(dt)
            if sw == dw:
                return v
            if sw > dw:
                return b.trunc(v, dt)
            return b.sext(v, dt) if sk == "int" else b.zext(v, dt)
        if sk in ("int", "uint") and dk == "float":
            return b.sitofp(v, dt) if sk == "int" else b.uitofp(v, dt)
        if sk == "float" and dk in ("int", "uint"):
            return b.fptosi(v, dt) if dk == "int" else b.fptoui(v, dt)
        if sk == "float" and dk == "float":
            if _fwidth(st) < _fwidth(dt):
                return b.fpext(v, dt)
            if _fwidth(st) == 64 and _fwidth(dt) == 16:
                return b.fptrunc(self.double_to_float_round_to_odd(v), dt)
            return b.fptrunc(v, dt)
        if sk == "handle" or dk == "handle":
            return v
        raise self.error(f"cast from {src} to {dst}")

    def double_to_float_round_to_odd(self, v: ir.Value) -> ir.Value:
        """float64 -> float32 rounded to odd: then float32 -> float16 (to nearest even) is the
        float64 value correctly rounded to float16 (float32 has more than 11 + 2 bits), with no
        call of libgcc's `__truncdfhf2`, which x86 needs for a direct fptrunc and which the JIT's
        process may not have loaded."""
        b = self.builder
        lanes = v.type.count if isinstance(v.type, ir.VectorType) else 1
        f32 = ir.FloatType() if lanes == 1 else ir.VectorType(ir.FloatType(), lanes)
        i32 = ir.IntType(32) if lanes == 1 else ir.VectorType(ir.IntType(32), lanes)

        def int32(value: int) -> ir.Constant:
            return ir.Constant(i32, value if lanes == 1 else [value] * lanes)

        nearest = b.fptrunc(v, f32)
        back = b.fpext(nearest, v.type)
        inexact = b.fcmp_ordered("!=", back, v)  # false for NaN: kept as it is
        bits = b.bitcast(nearest, i32)
        even = b.icmp_unsigned("==", b.and_(bits, int32(1)), int32(0))
        # the odd neighbour lies towards v: one step up in magnitude if |v| > |nearest|
        away = b.fcmp_ordered(">", self.call_intrinsic("llvm.fabs", [v]), self.call_intrinsic("llvm.fabs", [back]))
        odd = b.add(bits, b.select(away, int32(1), int32(-1)))
        return b.bitcast(b.select(b.and_(inexact, even), odd, bits), f32)

    def multiply_add(self, e: tir.BinOp) -> ir.Value | None:
        """`acc + x * y` as `llvm.fmuladd` (one rounding where the target has FMA), inside a
        block the schedule marked `irtool.fp_contract`, as TVM's LLVM target contracts
        (AllowFPOpFusion = Fast)."""
        for acc, product in ((e.a, e.b), (e.b, e.a)):
            if isinstance(product, tir.BinOp) and product.op == "mul" and product.dtype == e.dtype:
                return self.call_intrinsic("llvm.fmuladd",
                                           [self.expr(product.a), self.expr(product.b), self.expr(acc)])
        return None

    def call_intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        t = args[0].type
        suffix = _intrinsic_suffix(t)
        arg_types = [a.type for a in args]
        fn = self.mb.declare(f"{name}.{suffix}", t, arg_types)
        return self.builder.call(fn, args)

    def call_exp(self, x: ir.Value, dtype: str) -> ir.Value:
        """exp. A float32 scalar is computed inline in float64 (2^k * e^r, the polynomial below),
        so that a vectorised loop stays vector code instead of calling libm's expf lane by lane
        (softmax 0.20 -> 0.08 ms with the row reductions); rounded once to float32, the result
        is within an ULP of the exact value (tests/test_vector_exp.py: a million inputs, and
        the specials).
        Other types, and float32 where the module builder asks for libm's rounding: `llvm.exp`
        (libm's expf / exp, whose float32 results are not always the correctly rounded ones)."""
        if dtype != "float32" or self.mb.libm_exp:
            return self.call_intrinsic("llvm.exp", [x])
        b = self.builder
        f64 = ir.DoubleType()

        def c(v: float) -> ir.Constant:
            return ir.Constant(f64, v)

        is_nan = b.fcmp_unordered("uno", x, x)
        xd = b.fpext(x, f64)
        xd = b.select(is_nan, c(0.0), xd)  # NaN is returned as is below; 0 keeps k defined
        xd = b.select(b.fcmp_ordered("<", xd, c(_EXP_F32_LOW)), c(_EXP_F32_LOW), xd)
        xd = b.select(b.fcmp_ordered(">", xd, c(_EXP_F32_HIGH)), c(_EXP_F32_HIGH), xd)
        k = self.call_intrinsic("llvm.nearbyint", [b.fmul(xd, c(_LOG2E))])
        r = b.fsub(xd, b.fmul(k, c(_LN2)))
        poly = c(1.0 / math.factorial(_EXP_TAYLOR_DEGREE))
        for n in range(_EXP_TAYLOR_DEGREE - 1, -1, -1):
            poly = b.fadd(b.fmul(poly, r), c(1.0 / math.factorial(n)))
        i64 = ir.IntType(64)
        exponent = b.shl(b.add(b.fptosi(k, i64), ir.Constant(i64, 1023)), ir.Constant(i64, 52))
        result = b.fptrunc(b.fmul(poly, b.bitcast(exponent, f64)), x.type)
        return b.select(is_nan, x, result)

    def call_libm(self, names: tuple[str, str], args: list[ir.Value], dtype: str) -> ir.Value:
        b = self.builder
        base, lanes = _split(dtype)
        if base not in ("float32", "float64"):  # float16: compute in float32
            wide = [b.fpext(a, ir.FloatType() if lanes == 1 else ir.VectorType(ir.FloatType(), lanes)) for a in args]
            return b.fptrunc(self.call_libm(names, wide, "float32" if lanes == 1 else f"float32x{lanes}"),
                             llvm_type(dtype))
        name = names[0] if base == "float32" else names[1]
        st = scalar_type(base)
        fn = self.mb.declare(name, st, [st] * len(args))
        if lanes == 1:
            return b.call(fn, args)
        out = ir.Constant(ir.VectorType(st, lanes), ir.Undefined)
        for k in range(lanes):
            out = b.insert_element(out, b.call(fn, [b.extract_element(a, I32(k)) for a in args]), I32(k))
        return out

    def e_Call(self, e: tir.Call) -> ir.Value:
        b = self.builder
        op = e.op
        short = op.split(".", 1)[1] if op.startswith(("tirx.", "tir.")) else op
        if short == "if_then_else":
            return self.if_then_else(e)
        if short == "likely":
            return self.expr(e.args[0])
        if short in ("max_value", "min_value"):
            return self.limit(e.dtype, short == "max_value")
        if short == "reinterpret":
            return b.bitcast(self.expr(e.args[0]), llvm_type(e.dtype))
        if short in ("isnan", "isinf", "isfinite"):
            x = self.expr(e.args[0])
            if _kind(e.args[0].dtype) != "float":
                return I1(1 if short == "isfinite" else 0)
            if short == "isnan":
                return b.fcmp_unordered("uno", x, x)
            inf = ir.Constant(x.type, float("inf"))
            mag = self.call_intrinsic("llvm.fabs", [x])
            return b.fcmp_ordered("==", mag, inf) if short == "isinf" else b.fcmp_ordered("<", mag, inf)
        args = [self.expr(a) for a in e.args if not isinstance(a, str)]
        kind = _kind(e.dtype)
        if kind == "float":
            if short == "sigmoid":
                one = self.constant(1.0, e.dtype)
                return b.fdiv(one, b.fadd(one, self.call_exp(b.fneg(args[0]), e.dtype)))
            if short == "rsqrt":
                return b.fdiv(self.constant(1.0, e.dtype), self.call_intrinsic("llvm.sqrt", args))
            if short in _LIBM:
                return self.call_libm(_LIBM[short], args, e.dtype)
            if short in _LLVM_FLOAT_INTRINSICS:
                if short in ("tanh", "sinh", "cosh", "tan", "asin", "acos", "atan", "atan2", "exp10"):
                    return self.call_libm((short + "f", short), args, e.dtype)  # not every LLVM lowers these
                if short == "exp":
                    return self.call_exp(args[0], e.dtype)
                return self.call_intrinsic(_LLVM_FLOAT_INTRINSICS[short], args)
        elif kind == "bool" and short in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            return {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor}[short](args[0], args[1])
        elif kind in ("int", "uint"):
            signed = kind == "int"
            simple = {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor, "shift_left": b.shl}
            if short in simple:
                return simple[short](args[0], args[1])
            if short == "bitwise_not":
                return b.not_(args[0])
            if short == "shift_right":
                return b.ashr(args[0], args[1]) if signed else b.lshr(args[0], args[1])
            if short in ("abs", "fabs"):
                neg = b.icmp_signed("<", args[0], ir.Constant(args[0].type, 0))
                return b.select(neg, b.neg(args[0]), args[0]) if signed else args[0]
            if short in ("floor", "ceil", "round", "nearbyint", "trunc"):
                return args[0]
            if short == "popcount":
                return self.call_intrinsic("llvm.ctpop", args)
        raise self.error(f"intrinsic `{op}` returning {e.dtype}", e)

    def constant(self, value: float, dtype: str) -> ir.Value:
        base, lanes = _split(dtype)
        c = ir.Constant(scalar_type(base), value)
        return c if lanes == 1 else ir.Constant(ir.VectorType(scalar_type(base), lanes), [value] * lanes)

    def limit(self, dtype: str, maximum: bool) -> ir.Value:
        kind, (base, _) = _kind(dtype), _split(dtype)
        t = scalar_type(base)
        if kind == "float":
            import numpy as np

            info = np.finfo(base)
            return ir.Constant(t, float(info.max if maximum else info.min))
        if kind == "bool":
            return I1(int(maximum))
        bits = t.width
        if kind == "uint":
            return ir.Constant(t, (1 << bits) - 1 if maximum else 0)
        return ir.Constant(t, (1 << (bits - 1)) - 1 if maximum else -(1 << (bits - 1)))

    def if_then_else(self, e: tir.Call) -> ir.Value:
        b = self.builder
        cond_e, then_e, else_e = e.args
        if _split(cond_e.dtype)[1] > 1 or not (_may_trap(then_e) or _may_trap(else_e)):
            return b.select(self.as_bool(self.expr(cond_e)), self.expr(then_e), self.expr(else_e))
        cond = self.as_bool(self.expr(cond_e))
        then, other, end = self.new_block("ite_then"), self.new_block("ite_else"), self.new_block("ite_end")
        b.cbranch(cond, then, other)
        b.position_at_end(then)
        tv = self.expr(then_e)
        then_end = b.block
        b.branch(end)
        b.position_at_end(other)
        ev = self.expr(else_e)
        else_end = b.block
        b.branch(end)
        b.position_at_end(end)
        phi = b.phi(tv.type)
        phi.add_incoming(tv, then_end)
        phi.add_incoming(ev, else_end)
        return phi


# ----------------------------------------------------------------------------- small helpers


def _may_trap(e) -> bool:
    """Whether evaluating `e` may fault (it loads memory or divides): then it is not speculated."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, tir.BufferLoad):
            return True
        if isinstance(x, tir.BinOp):
            if x.op in ("div", "floordiv", "floormod", "truncdiv", "truncmod") and _kind(x.dtype) != "float":
                return True
            stack += [x.a, x.b]
        elif isinstance(x, tir.Node):
            stack += [c for c in x.children() if isinstance(c, tir.PrimExpr)]
            stack += [c for f in x.children() if isinstance(f, tuple) for c in f if isinstance(c, tir.PrimExpr)]
    return False
