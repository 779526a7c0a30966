"""The TIR interpreter: runs a `PrimFunc` on NumPy arrays, in place.

    run_prim_func(func, [a, b, c])      # a, b inputs, c filled (destination-passing style)

It is the oracle that lowered and compiled TIR is tested against, so it must follow TVM's
semantics exactly, and it must be fast enough to run real kernels (a 64x64x64 matmul in
a fraction of a second). It does not walk the tree per element: each PrimFunc is
translated once into a Python function whose nested `for` loops mirror the TIR, then
`compile()`d and cached. `prim_func_source(func)` shows the generated code:

    for v_i in range(64):                          for i, k in T.grid(64, 64):
        for v_k in range(64):                          with T.sblock("C"):
                                                           vi, vk = T.axis.remap("SR", [i, k])
            if v_k == 0:                                   with T.init():
                b_C[v_i] = K0                                  C[vi] = T.float32(0)
            b_C[v_i] = (b_C[v_i] + b_A[v_i, v_k])          C[vi] = C[vi] + A[vi, vk]

(block iterators bound to a loop variable are aliased to it; K0 is np.float32(0)).

Values, by dtype (one table of templates per kind below, one line per operator):

    intN / uintN   Python ints. +, -, * may leave the dtype's range; a value is wrapped
                   (two's complement) only where that is observable: before a division,
                   comparison, store, cast, index... An interval is tracked for every
                   integer expression, so loop indices (known small) are never wrapped
                   and are bounds-checked only when they might be negative.
    floatN         NumPy scalars (np.float32...), so float32 math rounds as float32.
    bool           Python or NumPy bools.
    vectors        (`float32x4`, from Ramp/Broadcast) NumPy arrays of the lanes.

Semantics: floordiv/floormod round toward -inf, truncdiv/truncmod and integer `div`
toward zero; `if_then_else`, Select and `and`/`or` evaluate only what they need; a
block's `T.init()` runs when every reduction iterator is at the minimum of its domain;
all loop kinds run serially. Buffers without explicit strides are NumPy arrays indexed
by their indices; a buffer with explicit strides (or a buffer viewing an `Allocate`d
data pointer) is a flat view of its storage.
"""

from __future__ import annotations

import functools
import itertools
import keyword
import linecache
import math
import re
from collections import OrderedDict

import numpy as np

from ..ir import tir
from . import InterpreterError as _BaseInterpreterError

try:  # bfloat16 and the float8 types, when available
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover
    _ml_dtypes = None


class InterpreterError(_BaseInterpreterError):
    """A TIR program cannot run: bad arguments, an unknown intrinsic, a failed assertion,
    an out-of-bounds access, a division by zero..."""


# ----------------------------------------------------------------------------- dtypes


class _DType:
    __slots__ = ("name", "kind", "bits", "lanes", "elem", "np", "lo", "hi")

    def __init__(self, name: str) -> None:
        self.name = name
        elem, lanes = name, 1
        m = re.fullmatch(r"(.+?)x(\d+)", name)
        if m:
            elem, lanes = m.group(1), int(m.group(2))
        self.elem, self.lanes = elem, lanes
        self.lo = self.hi = None
        self.np = None
        if elem == "bool":
            self.kind, self.bits = "bool", 1
        elif elem in ("handle", "void", ""):
            self.kind, self.bits = "handle", 64
            return
        else:
            m = re.fullmatch(r"(u?int|float|bfloat)(\d+)(.*)", elem)
            if not m:
                raise InterpreterError(f"unsupported dtype `{name}`")
            self.kind = {"int": "int", "uint": "uint"}.get(m.group(1), "float")
            self.bits = int(m.group(2))
            if self.kind == "int":
                self.lo, self.hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
            elif self.kind == "uint":
                self.lo, self.hi = 0, (1 << self.bits) - 1
        self.np = _numpy_dtype(elem)

    @property
    def is_int(self) -> bool:  # a scalar integer: a Python int in the generated code
        return self.kind in ("int", "uint") and self.lanes == 1


def _numpy_dtype(elem: str):
    if elem == "bool":
        return np.dtype(bool)
    try:
        return np.dtype(elem)
    except TypeError:
        if _ml_dtypes is not None and hasattr(_ml_dtypes, elem):
            return np.dtype(getattr(_ml_dtypes, elem))
        raise InterpreterError(f"unsupported dtype `{elem}`") from None


@functools.cache
def _dtype(name: str) -> _DType:
    return _DType(name)


def _wrap_code(code: str, dt: _DType) -> str:
    """Python code for `code` reduced to the range of integer dtype `dt` (two's complement)."""
    mask = (1 << dt.bits) - 1
    if dt.kind == "uint":
        return f"({code} & {mask})"
    half = 1 << (dt.bits - 1)
    return f"((({code}) + {half} & {mask}) - {half})"


def _wrap_value(value: int, dt: _DType) -> int:
    value &= (1 << dt.bits) - 1
    if dt.kind == "int" and value > dt.hi:
        value -= 1 << dt.bits
    return value


# ----------------------------------------------------------------------------- templates
#
# {a}, {b}: the operands' code; {t0}, {t1}: fresh temporaries; {T}: the result's NumPy
# scalar type. Integer operands are already wrapped to their dtype, except for the ring
# operations (+, -, *), which work modulo 2**bits on any representative.

_INT_BINOPS = {
    "add": "({a} + {b})",
    "sub": "({a} - {b})",
    "mul": "({a} * {b})",
    "div": "tdiv({a}, {b})",  # integer division truncates, as in C
    "floordiv": "({a} // {b})",
    "floormod": "({a} % {b})",
    "truncdiv": "tdiv({a}, {b})",
    "truncmod": "tmod({a}, {b})",
    "min": "({t0} if ({t0} := {a}) < ({t1} := {b}) else {t1})",  # select(a < b, a, b), as TVM's codegen
    "max": "({t0} if ({t0} := {a}) > ({t1} := {b}) else {t1})",
    "eq": "({a} == {b})",
    "ne": "({a} != {b})",
    "lt": "({a} < {b})",
    "le": "({a} <= {b})",
    "gt": "({a} > {b})",
    "ge": "({a} >= {b})",
    "and": "({a} and {b})",
    "or": "({a} or {b})",
}
_RING_OPS = frozenset(("add", "sub", "mul"))

_FLOAT_BINOPS = {
    **_INT_BINOPS,
    "div": "({a} / {b})",
    "ne": "(({t0} := {a}) < ({t1} := {b}) or {t0} > {t1})",  # ordered, as TVM's FCmpONE: NaN != x is false
    "floordiv": "np.floor({a} / {b})",
    "floormod": "ffloormod({a}, {b})",
    "truncdiv": "np.trunc({a} / {b})",
    "truncmod": "np.fmod({a}, {b})",
}

_VECTOR_BINOPS = {
    **_FLOAT_BINOPS,
    "div": "vdiv({a}, {b})",
    "floordiv": "vfloordiv({a}, {b})",
    "floormod": "vfloormod({a}, {b})",
    "truncdiv": "vtdiv({a}, {b})",
    "truncmod": "vtmod({a}, {b})",
    "min": "vmin({a}, {b})",
    "max": "vmax({a}, {b})",
    "and": "np.logical_and({a}, {b})",
    "or": "np.logical_or({a}, {b})",
    "ne": "np.logical_or(({t0} := {a}) < ({t1} := {b}), {t0} > {t1})",
}

# Intrinsics on floats (scalars or vectors): `tirx.NAME` -> template of {0}, {1}, {T}
_FLOAT_INTRINSICS = {
    "exp": "np.exp({0})",
    "exp2": "np.exp2({0})",
    "exp10": "np.power({T}(10), {0})",
    "expm1": "np.expm1({0})",
    "log": "np.log({0})",
    "log2": "np.log2({0})",
    "log10": "np.log10({0})",
    "log1p": "np.log1p({0})",
    "sqrt": "np.sqrt({0})",
    "rsqrt": "({T}(1) / np.sqrt({0}))",
    "sigmoid": "({T}(1) / ({T}(1) + np.exp(-{0})))",
    "tanh": "np.tanh({0})",
    "erf": "erf({0})",
    "floor": "np.floor({0})",
    "ceil": "np.ceil({0})",
    "round": "np.rint({0})",  # TVM lowers tirx.round to llvm.nearbyint: halves to even
    "nearbyint": "np.rint({0})",  # llvm.nearbyint: halves to even
    "trunc": "np.trunc({0})",
    "fabs": "np.abs({0})",
    "abs": "np.abs({0})",
    "pow": "np.power({0}, {1})",
    "fmod": "np.fmod({0}, {1})",
    "sin": "np.sin({0})",
    "cos": "np.cos({0})",
    "tan": "np.tan({0})",
    "asin": "np.arcsin({0})",
    "acos": "np.arccos({0})",
    "atan": "np.arctan({0})",
    "atan2": "np.arctan2({0}, {1})",
    "sinh": "np.sinh({0})",
    "cosh": "np.cosh({0})",
    "asinh": "np.arcsinh({0})",
    "acosh": "np.arccosh({0})",
    "atanh": "np.arctanh({0})",
    "hypot": "np.hypot({0}, {1})",
    "copysign": "np.copysign({0}, {1})",
    "nextafter": "np.nextafter({0}, {1})",
    "ldexp": "np.ldexp({0}, {1})",
}

# Intrinsics on scalar integers (operands wrapped); `raw` results are wrapped when observed
_INT_INTRINSICS = {
    "abs": "abs({0})",  # raw: abs(INT_MIN) wraps
    "fabs": "abs({0})",  # raw (T.abs of an integer)
    "floor": "{0}",
    "ceil": "{0}",
    "round": "{0}",
    "nearbyint": "{0}",
    "trunc": "{0}",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
    "bitwise_not": "(~{0})",
    "shift_left": "({0} << {1})",  # raw
    "shift_right": "({0} >> {1})",  # arithmetic for signed, logical for unsigned (non-negative)
    "pow": "ipow({0}, {1})",  # raw
    "popcount": "({0} & {mask}).bit_count()",
    "clz": "({bits} - ({0} & {mask}).bit_length())",
}
_INT_RAW_INTRINSICS = frozenset(("abs", "fabs", "shift_left", "pow"))

# ----------------------------------------------------------------------------- runtime helpers


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _tmod(a, b):
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _ipow(a, b):
    if b < 0:
        raise InterpreterError(f"integer power with a negative exponent ({a} ** {b})")
    return a**b


def _ffloormod(a, b):
    return a - np.floor(a / b) * b


def _fround(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)[()]  # x - t is exact


def _erf(x):
    if isinstance(x, np.ndarray):
        return np.array([math.erf(float(v)) for v in x], x.dtype)
    return type(x)(math.erf(float(x)))


def _vdiv(a, b):
    return a / b if a.dtype.kind == "f" else _vtdiv(a, b)


def _vfloordiv(a, b):
    return np.floor(a / b).astype(a.dtype) if a.dtype.kind == "f" else np.floor_divide(a, b)


def _vfloormod(a, b):
    return _ffloormod(a, b) if a.dtype.kind == "f" else np.remainder(a, b)


def _vtdiv(a, b):
    if a.dtype.kind == "f":
        return np.trunc(a / b)
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _vtmod(a, b):
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    return np.fmod(a, b).astype(a.dtype)  # integer fmod truncates, as C's %


def _vmin(a, b):
    return np.where(a < b, a, b)


def _vmax(a, b):
    return np.where(a > b, a, b)


def _ramp(base, stride, lanes, dtype):
    return (base + stride * np.arange(lanes, dtype=np.int64)).astype(dtype)


def _vcheck(idx, buf):
    if idx.size and idx.min() < 0:
        raise InterpreterError(f"negative index {int(idx.min())} into buffer `{buf}`")
    return idx


def _oob(value, buf):
    raise InterpreterError(f"negative index {value} into buffer `{buf}`")


def _check_array(value, name: str, ndim: int, dtype: str):
    if not isinstance(value, np.ndarray):
        raise InterpreterError(f"argument for buffer `{name}` must be a NumPy array, got {type(value).__name__}")
    if value.ndim != ndim:
        raise InterpreterError(f"buffer `{name}` has {ndim} dimensions, the array has shape {value.shape}")
    if str(value.dtype) != dtype:
        raise InterpreterError(f"buffer `{name}` holds {dtype}, the array is {value.dtype}")
    return value


def _mismatch(what: str, expected, got):
    raise InterpreterError(f"{what}: expected {expected}, got {got}")


def _int_arg(value, name: str, lo: int, hi: int):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InterpreterError(f"argument `{name}` must be an integer, got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise InterpreterError(f"argument `{name}` = {value} is out of range [{lo}, {hi}]")
    return value


def _float_arg(value, name: str, t):
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise InterpreterError(f"argument `{name}` must be a number, got {value!r}")
    return t(value)


def _flat(arr, name: str):
    """The 1-D storage behind `arr` (a view), for buffers that alias its data."""
    if not arr.flags.c_contiguous:
        raise InterpreterError(f"buffer `{name}` is aliased by another buffer, so its array must be contiguous")
    return arr.reshape(-1)


def _view(storage, offset: int, shape: tuple, dtype, name: str):
    """Buffer `name` of `shape` at element `offset` of a flat storage array."""
    if storage.dtype != dtype:
        storage = storage.view(dtype) if storage.dtype.itemsize == np.dtype(dtype).itemsize else storage
    size = math.prod(shape)
    if offset < 0 or offset + size > storage.size:
        raise InterpreterError(f"buffer `{name}` of shape {list(shape)} at offset {offset} does not fit in "
                               f"its storage of {storage.size} elements")
    return storage[offset:offset + size].reshape(shape)


def _match(region, shape: tuple, name: str):
    """`T.match_buffer`: `region` (a slice of the source buffer) seen with `shape`."""
    if region.shape == shape:
        return region
    view = region.view()
    try:
        view.shape = shape
    except (AttributeError, ValueError):
        raise InterpreterError(f"match_buffer `{name}` of shape {list(shape)} cannot view a region of shape "
                               f"{list(region.shape)}") from None
    return view


def _assert_fail(kind, parts):
    text = "".join(str(p) for p in parts)
    raise InterpreterError(f"{kind}: {text}" if kind else text)


def _call_global(mod, name: str, args):
    funcs = getattr(mod, "functions", mod) if mod is not None else None
    fn = funcs.get(name) if funcs is not None else None
    if not isinstance(fn, tir.PrimFunc):
        raise InterpreterError(f"unknown TIR intrinsic or function `{name}`")
    return run_prim_func(fn, list(args), mod)


_NORET = object()


def _nothing() -> None:
    pass

_RUNTIME = {
    "np": np, "math": math, "tdiv": _tdiv, "tmod": _tmod, "ipow": _ipow, "ffloormod": _ffloormod, "erf": _erf,
    "fround": _fround,
    "vdiv": _vdiv, "vfloordiv": _vfloordiv, "vfloormod": _vfloormod, "vtdiv": _vtdiv, "vtmod": _vtmod,
    "vmin": _vmin, "vmax": _vmax,
    "ramp": _ramp, "vcheck": _vcheck, "oob": _oob, "check_array": _check_array, "mismatch": _mismatch,
    "int_arg": _int_arg, "float_arg": _float_arg, "flat": _flat, "view": _view, "match": _match,
    "assert_fail": _assert_fail, "call_global": _call_global, "NORET": _NORET, "zeros": np.zeros,
}


# ----------------------------------------------------------------------------- code generation


class _V:
    """A compiled expression: Python code, its dtype and, for integers, an interval
    [lo, hi] holding its exact value (None: unknown, the code may need wrapping)."""

    __slots__ = ("code", "dt", "lo", "hi")

    def __init__(self, code: str, dt: _DType, lo=None, hi=None) -> None:
        self.code, self.dt, self.lo, self.hi = code, dt, lo, hi

    @property
    def in_range(self) -> bool:
        return self.lo is not None and self.dt.lo <= self.lo and self.hi <= self.dt.hi


class _Buf:
    """How the generated code reaches a buffer: `nd` — a NumPy array `name` indexed by the
    indices; `flat` — a 1-D storage `name` indexed by elem_offset + sum(index * stride)."""

    __slots__ = ("buffer", "mode", "name")

    def __init__(self, buffer: tir.Buffer, mode: str, name: str) -> None:
        self.buffer, self.mode, self.name = buffer, mode, name


_MAX_LOOP_NESTING = 16  # CPython allows 20 nested loops per function; deeper ones go in a nested def
_SPILL_DEPTH = 32  # expressions nested deeper are split into temporaries (the parser's limit is 200)


class _Codegen:
    def __init__(self, func: tir.PrimFunc, name: str) -> None:
        self.func = func
        self.fname = name
        self.lines: list[str] = []
        self.where: list[str] = []  # per line: the TIR construct it comes from
        self.ctx = f"`{name}`"
        self.indent = 1
        self.ns = dict(_RUNTIME)
        self.consts: dict[tuple, str] = {}
        self.counter = itertools.count()
        self.env: dict[tir.Var, tuple[str, object, object]] = {}  # var -> (python name, lo, hi)
        self.var_names: dict[tir.Var, str] = {}
        self.used_names: set[str] = set()
        self.bufs: dict[tir.Buffer, _Buf] = {}
        self.storage: dict[tir.Var, tuple[str, bool]] = {}  # data var -> (python name, is flat)
        self.loop_depth = 0
        self.lazy = 0  # > 0 while compiling code that is not always evaluated
        self.depth = 0
        self._collect_buffers()

    # ------------------------------------------------------------------ helpers

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        self.where.append(self.ctx)

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def pyname(self, prefix: str, name: str) -> str:
        base = prefix + (re.sub(r"\W", "_", name) or "x")
        if keyword.iskeyword(base) or base in self.used_names or base in self.ns:
            base = f"{base}_{next(self.counter)}"
        self.used_names.add(base)
        return base

    def const(self, value, dt: _DType) -> str:
        key = (dt.name, repr(value))
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"K{len(self.consts)}"
            self.ns[name] = np.array(value, dt.np)[()] if dt.lanes == 1 else np.full(dt.lanes, value, dt.np)
        return name

    def type_name(self, dt: _DType) -> str:
        """A name bound to the NumPy scalar type of `dt` in the generated code's namespace."""
        name = "T_" + re.sub(r"\W", "_", dt.elem)
        self.ns.setdefault(name, dt.np.type)
        return name

    def error(self, msg: str):
        return InterpreterError(f"in {self.ctx}: {msg}")

    def bind(self, var: tir.Var, lo=None, hi=None, name: str | None = None):
        """Bring `var` into scope; returns its Python name and the previous binding."""
        prev = self.env.get(var)
        if name is None:
            name = self.var_names.get(var)
            if name is None or prev is not None:  # a fresh name when re-bound inside its own scope
                name = self.pyname("v_", var.name)
                self.var_names.setdefault(var, name)
        dt = _dtype(var.dtype)
        if dt.is_int and (lo is None or lo < dt.lo or hi > dt.hi):
            lo, hi = dt.lo, dt.hi
        self.env[var] = (name, lo, hi)
        return name, prev

    def unbind(self, var: tir.Var, prev) -> None:
        if prev is None:
            self.env.pop(var, None)
        else:
            self.env[var] = prev

    # ------------------------------------------------------------------ expressions

    def expr(self, e: tir.PrimExpr) -> _V:
        self.depth += 1
        try:
            method = getattr(self, "e_" + type(e).__name__, None)
            if method is None:
                raise self.error(f"cannot evaluate {type(e).__name__}")
            v = method(e)
        finally:
            self.depth -= 1
        if self.depth and self.depth % _SPILL_DEPTH == 0 and not self.lazy and not v.code.isidentifier():
            name = self.fresh("s")
            self.emit(f"{name} = {v.code}")
            v = _V(name, v.dt, v.lo, v.hi)
        return v

    def value(self, e: tir.PrimExpr) -> str:
        """Code for `e`'s value, integers wrapped to their dtype."""
        return self.norm(self.expr(e))

    def norm(self, v: _V) -> str:
        if v.dt.is_int and not v.in_range:
            return _wrap_code(v.code, v.dt)
        return v.code

    def lazily(self, e: tir.PrimExpr) -> str:
        self.lazy += 1
        try:
            return self.value(e)
        finally:
            self.lazy -= 1

    def e_IntImm(self, e: tir.IntImm) -> _V:
        dt = _dtype(e.dtype)
        if dt.kind == "bool":
            return _V("True" if e.value else "False", dt)
        if dt.kind == "float":
            return _V(self.const(float(e.value), dt), dt)
        v = _wrap_value(e.value, dt)
        return _V(repr(v) if v >= 0 else f"({v})", dt, v, v)

    def e_FloatImm(self, e: tir.FloatImm) -> _V:
        return _V(self.const(e.value, _dtype(e.dtype)), _dtype(e.dtype))

    def e_StringImm(self, e: tir.StringImm) -> _V:
        return _V(repr(e.value), _dtype("handle"))

    def e_Var(self, e: tir.Var) -> _V:
        bound = self.env.get(e)
        if bound is not None:
            return _V(bound[0], _dtype(e.dtype), bound[1], bound[2])
        if e in self.storage:
            return _V(self.storage[e][0], _dtype("handle"))
        raise self.error(f"variable `{e.name}` is used but not defined")

    def e_BinOp(self, e: tir.BinOp) -> _V:
        # A left-deep chain ((a + b) + c) + ... (an unrolled reduction) is compiled in a
        # loop, not by recursion, and split into temporaries every _SPILL_DEPTH levels.
        spine = [e]
        while type(spine[-1].a) is tir.BinOp:
            spine.append(spine[-1].a)
        acc = self.expr(spine[-1].a)
        for level, node in enumerate(reversed(spine)):
            if node.op in ("and", "or"):  # the right operand is evaluated only when needed
                self.lazy += 1
                try:
                    b = self.expr(node.b)
                finally:
                    self.lazy -= 1
            else:
                b = self.expr(node.b)
            acc = self.binop(node, acc, b)
            if level % _SPILL_DEPTH == _SPILL_DEPTH - 1 and node is not e and not self.lazy:
                name = self.fresh("s")
                self.emit(f"{name} = {acc.code}")
                acc = _V(name, acc.dt, acc.lo, acc.hi)
        return acc

    def binop(self, e: tir.BinOp, a: _V, b: _V) -> _V:
        dt, op = _dtype(e.dtype), e.op
        if a.dt.lanes > 1 or b.dt.lanes > 1:
            table = _VECTOR_BINOPS
        elif a.dt.is_int:
            table = _INT_BINOPS
        else:
            table = _FLOAT_BINOPS
        ring = table is _INT_BINOPS and op in _RING_OPS
        ac = a.code if ring else self.norm(a)
        bc = b.code if ring else self.norm(b)
        code = table[op].format(a=ac, b=bc, t0=self.fresh("t"), t1=self.fresh("t"))
        if table is not _INT_BINOPS or dt.kind == "bool":
            return _V(code, dt)
        lo, hi = _interval(op, a, b, a.dt)
        return _V(code, dt, lo, hi)

    def e_Not(self, e: tir.Not) -> _V:
        a = self.expr(e.a)
        if a.dt.lanes > 1:
            return _V(f"np.logical_not({a.code})", a.dt)
        return _V(f"(not {self.norm(a)})", _dtype("bool"))

    def e_Cast(self, e: tir.Cast) -> _V:
        dt, a = _dtype(e.dtype), self.expr(e.value)
        src = a.dt
        if dt.lanes > 1 or src.lanes > 1:
            return _V(f"np.asarray({a.code}).astype({self.type_name(dt)})", dt)
        code = self.norm(a)
        if dt.kind == "handle" or src.kind == "handle":
            return _V(code, dt)
        if dt.kind == "bool":
            return _V(code if src.kind == "bool" else f"({code} != 0)", dt)
        if dt.is_int:
            if src.kind == "bool":
                return _V(f"int({code})", dt, 0, 1)
            if src.is_int:  # the value is in a's interval if known, else in the source dtype's range
                return _V(code, dt, a.lo, a.hi) if a.in_range else _V(code, dt, src.lo, src.hi)
            return _V(f"int({code})", dt)  # float -> int truncates toward zero
        return _V(f"{self.type_name(dt)}({code})", dt)

    def e_Select(self, e: tir.Select) -> _V:
        c = self.expr(e.condition)
        self.lazy += 1  # TVM evaluates both sides; we need only one, and hoist neither
        try:
            t, f = self.expr(e.true_value), self.expr(e.false_value)
        finally:
            self.lazy -= 1
        dt = _dtype(e.dtype)
        if c.dt.lanes > 1:
            return _V(f"np.where({c.code}, {t.code}, {f.code})", dt)
        return self._choice(self.norm(c), t, f, dt)

    def _choice(self, cond: str, t: _V, f: _V, dt: _DType) -> _V:
        code = f"({self.norm(t)} if {cond} else {self.norm(f)})"
        if dt.is_int and t.in_range and f.in_range:
            return _V(code, dt, min(t.lo, f.lo), max(t.hi, f.hi))
        return _V(code, dt)

    def e_Let(self, e: tir.Let) -> _V:
        value = self.expr(e.value)
        if not self.lazy:  # evaluated unconditionally: a statement before the one being compiled
            name, prev = self.bind(e.var, value.lo, value.hi)
            self.emit(f"{name} = {self.norm(value)}")
            try:
                return self.expr(e.body)
            finally:
                self.unbind(e.var, prev)
        name, prev = self.bind(e.var, value.lo, value.hi)
        try:
            body = self.expr(e.body)
        finally:
            self.unbind(e.var, prev)
        return _V(f"(({name} := {self.norm(value)}), {body.code})[1]", body.dt, body.lo, body.hi)

    def e_Ramp(self, e: tir.Ramp) -> _V:
        base, stride = self.value(e.base), self.value(e.stride)
        dt = _dtype(e.dtype)
        return _V(f"ramp({base}, {stride}, {e.lanes}, {self.type_name(dt)})", dt)

    def e_Broadcast(self, e: tir.Broadcast) -> _V:
        dt = _dtype(e.dtype)
        return _V(f"np.full({e.lanes}, {self.value(e.value)}, {self.type_name(dt)})", dt)

    def e_BufferLoad(self, e: tir.BufferLoad) -> _V:
        b = self.buffer(e.buffer)
        index, lanes = self.index(b, e.indices)
        dt = _dtype(e.buffer.dtype)
        if lanes > 1:
            return _V(f"{b.name}[{index}]", _dtype(f"{dt.elem}x{lanes}"))
        if dt.is_int or dt.kind == "bool":  # .item() gives a Python int / bool
            return _V(f"{b.name}.item({'' if index == '()' else index})", dt, dt.lo, dt.hi)
        return _V(f"{b.name}[{index}]", dt)

    def e_Call(self, e: tir.Call) -> _V:
        dt = _dtype(e.dtype)
        op = e.op
        short = op.split(".", 1)[1] if op.startswith(("tirx.", "tir.")) else None
        if short is None:  # a call of another PrimFunc of the module
            args = ", ".join(self.value(a) for a in e.args)
            return _V(f"call_global(mod, {op.lstrip('@')!r}, [{args}])", dt)
        if short == "if_then_else":
            if len(e.args) != 3:
                raise self.error(f"`{op}` takes 3 arguments, got {len(e.args)}")
            cond = self.value(e.args[0])
            self.lazy += 1
            try:
                t, f = self.expr(e.args[1]), self.expr(e.args[2])
            finally:
                self.lazy -= 1
            return self._choice(cond, t, f, dt)
        if short == "likely":
            return self.expr(e.args[0])
        if short in ("max_value", "min_value"):
            if dt.kind in ("int", "uint"):
                v = dt.hi if short == "max_value" else dt.lo
                return _V(repr(v) if v >= 0 else f"({v})", dt, v, v)
            if dt.kind == "bool":
                return _V("True" if short == "max_value" else "False", dt)
            info = np.finfo(dt.np)
            return _V(self.const(float(info.max if short == "max_value" else info.min), dt), dt)
        args = [self.expr(a) if isinstance(a, tir.PrimExpr) else None for a in e.args]
        codes = [self.norm(a) if a is not None else repr(x) for a, x in zip(args, e.args)]
        if short == "isnullptr":
            return _V(f"({codes[0]} is None)", dt)
        if short in ("isnan", "isinf", "isfinite"):
            if args[0].dt.kind != "float":
                return _V({"isfinite": "True"}.get(short, "False"), dt)
            return _V(f"np.{short}({codes[0]})", dt)
        if short == "reinterpret":
            src = args[0].dt
            if dt.kind == "handle" or src.kind == "handle":
                return _V(codes[0], dt)
            return _V(f"np.array({codes[0]}, {self.type_name(src)}).view({self.type_name(dt)})[()]"
                      + (".item()" if dt.is_int else ""), dt, dt.lo, dt.hi)
        if dt.is_int:
            template = _INT_INTRINSICS.get(short)
            if template is None:
                raise self.error(f"unknown TIR intrinsic `{op}` for {dt.name}")
            code = template.format(*codes, bits=dt.bits, mask=(1 << dt.bits) - 1)
            if short in _INT_RAW_INTRINSICS:
                return _V(code, dt)
            identity = short in ("floor", "ceil", "round", "nearbyint", "trunc") and args[0].in_range
            return _V(code, dt, args[0].lo, args[0].hi) if identity else _V(code, dt, dt.lo, dt.hi)
        template = _FLOAT_INTRINSICS.get(short)
        if template is None:
            raise self.error(f"unknown TIR intrinsic `{op}`")
        code = template.format(*codes, T=self.type_name(dt))
        if any(a is not None and a.dt.name != dt.name for a in args):
            code = f"{self.type_name(dt)}({code})" if dt.lanes == 1 else code
        return _V(code, dt)

    # ------------------------------------------------------------------ buffers

    def _collect_buffers(self) -> None:
        """Which buffers are declared (params, alloc_buffers, match_buffers, DeclBuffer), and
        which data pointers are shared by several buffers (those need a flat storage)."""
        self.declared: set[tir.Buffer] = {b for _, b in self.func.buffer_map}
        by_data: dict[tir.Var, dict[tir.Buffer, None]] = {}  # (dicts: ordered, so the code is stable)
        self.allocated: set[tir.Var] = set()
        stack: list = [self.func.body]
        while stack:
            node = stack.pop()
            if isinstance(node, tir.Buffer):
                by_data.setdefault(node.data, {})[node] = None
                continue
            if isinstance(node, tir.SBlock):
                self.declared.update(node.alloc_buffers)
                self.declared.update(m.buffer for m in node.match_buffers)
            elif isinstance(node, tir.DeclBuffer):
                self.declared.add(node.buffer)
            elif isinstance(node, tir.Allocate):
                self.allocated.add(node.buffer_var)
            if isinstance(node, tir.Node):
                stack.extend(c for c in node.children() if c is not None)
            elif isinstance(node, (tuple, list)):
                stack.extend(node)
        for _, b in self.func.buffer_map:
            by_data.setdefault(b.data, {})[b] = None
        self.shared_data = {d for d, bs in by_data.items() if len(bs) > 1} | self.allocated
        self.implicit: dict[tir.Var, list[tir.Buffer]] = {}
        for d, bs in by_data.items():
            for b in bs:
                if b not in self.declared:
                    self.implicit.setdefault(d, []).append(b)

    def buffer(self, buffer: tir.Buffer) -> _Buf:
        b = self.bufs.get(buffer)
        if b is None:
            raise self.error(f"buffer `{buffer.name}` is used but not declared")
        return b

    def index(self, b: _Buf, indices) -> tuple[str, int]:
        """Code for the subscript of `b` at `indices`, and the number of lanes."""
        buffer = b.buffer
        if b.mode == "flat":
            if len(indices) != len(buffer.strides):
                raise self.error(f"buffer `{buffer.name}` has {len(buffer.strides)} dimensions, "
                                 f"accessed with {len(indices)} indices")
            terms = [i if _is_const(s, 1) else tir.BinOp("mul", i, s) for i, s in zip(indices, buffer.strides)]
            if buffer.elem_offset is not None and not _is_const(buffer.elem_offset, 0):
                terms.insert(0, buffer.elem_offset)
            flat = terms[0] if terms else tir.IntImm(0)
            for t in terms[1:]:
                flat = tir.BinOp("add", flat, t)
            indices = (flat,)
        elif len(indices) != len(buffer.shape):
            raise self.error(f"buffer `{buffer.name}` has {len(buffer.shape)} dimensions, "
                             f"accessed with {len(indices)} indices")
        if not indices:
            return "()", 1
        codes, lanes = [], 1
        for i in indices:
            v = self.expr(i)
            if v.dt.lanes > 1:
                lanes = max(lanes, v.dt.lanes)
                codes.append(f"vcheck({v.code}, {buffer.name!r})")
                continue
            code = self.norm(v)
            if not v.in_range or v.lo < 0:
                t = self.fresh("t")
                code = f"({t} if ({t} := {code}) >= 0 else oob({t}, {buffer.name!r}))"
            codes.append(code)
        return ", ".join(codes), lanes

    def declare_array(self, buffer: tir.Buffer, code: str) -> str:
        """Bind `buffer` to the NumPy array computed by `code` (nd mode)."""
        name = self.pyname("b_", buffer.name)
        self.emit(f"{name} = {code}")
        self.bufs[buffer] = _Buf(buffer, "nd", name)
        return name

    def provide_storage(self, data: tir.Var, name: str, flat: bool, owner: tir.Buffer | None = None) -> None:
        """`data` now points at array `name`: buffers aliasing it get their views here."""
        if data in self.shared_data and not flat:
            flat_name = self.pyname("d_", data.name)
            self.emit(f"{flat_name} = flat({name}, {data.name!r})")
            name, flat = flat_name, True
        self.storage[data] = (name, flat)
        for other in self.implicit.get(data, ()):
            if other is not owner and other not in self.bufs:
                self.declare_view(other)

    def declare_view(self, buffer: tir.Buffer) -> None:
        """A buffer over the storage of its data pointer: nd (a reshaped slice) without
        strides, flat (indexed by elem_offset + sum(index * stride)) with them."""
        storage, flat = self.storage[buffer.data]
        if not flat:
            name = self.pyname("d_", buffer.data.name)
            self.emit(f"{name} = flat({storage}, {buffer.name!r})")
            storage = name
        name = self.pyname("b_", buffer.name)
        dt = self.type_name(_dtype(buffer.dtype))
        if buffer.strides:
            self.emit(f"{name} = view({storage}, 0, ({storage}.size,), {dt}, {buffer.name!r})")
            self.bufs[buffer] = _Buf(buffer, "flat", name)
            return
        offset = self.value(buffer.elem_offset) if buffer.elem_offset is not None else "0"
        self.emit(f"{name} = view({storage}, {offset}, {self.shape_code(buffer)}, {dt}, {buffer.name!r})")
        self.bufs[buffer] = _Buf(buffer, "nd", name)

    def shape_code(self, buffer: tir.Buffer) -> str:
        dims = [self.value(d) for d in buffer.shape]
        return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"

    def allocate(self, buffer: tir.Buffer) -> None:
        """A fresh zero-filled array for `buffer` (alloc_buffers, a DeclBuffer of new memory)."""
        name = self.declare_array(buffer, f"zeros({self.shape_code(buffer)}, {self.type_name(_dtype(buffer.dtype))})")
        self.provide_storage(buffer.data, name, flat=False, owner=buffer)

    def bind_dims(self, array: str, buffer: tir.Buffer, what: str, deferred: list, shape: bool = True) -> None:
        """Bind the still unbound variables among `buffer`'s shape, strides and elem_offset
        from NumPy array `array`; the other entries are checked later (`deferred`)."""

        def bind_or_check(expr, actual: str, label: str, guard: str | None = None) -> None:
            if isinstance(expr, tir.Var) and expr not in self.env:
                name, _ = self.bind(expr, 0, _dtype(expr.dtype).hi)
                self.emit(f"{name} = {actual}")
            else:
                deferred.append((expr, actual, f"{what}, {label}", guard))

        if shape:
            for i, d in enumerate(buffer.shape):
                bind_or_check(d, f"{array}.shape[{i}]", f"dimension {i}")
        itemsize = _dtype(buffer.dtype).np.itemsize
        for i, s in enumerate(buffer.strides):  # a stride only matters along a dimension longer than 1
            bind_or_check(s, f"{array}.strides[{i}] // {itemsize}", f"stride {i}", f"{array}.shape[{i}] > 1")
        if isinstance(buffer.elem_offset, tir.Var) and buffer.elem_offset not in self.env:
            name, _ = self.bind(buffer.elem_offset, 0, 0)
            self.emit(f"{name} = 0")

    def check_deferred(self, deferred: list) -> None:
        for expr, actual, label, guard in deferred:
            expected = self.value(expr)
            cond = f"{actual} != {expected}" if guard is None else f"{guard} and {actual} != {expected}"
            self.emit(f"if {cond}: mismatch({label!r}, {expected}, {actual})")

    # ------------------------------------------------------------------ statements

    def stmt(self, s: tir.Stmt) -> None:
        # Statements scoped over "the rest of the block" (LetStmt, AttrStmt, AssertStmt,
        # Allocate, DeclBuffer) nest deeply in lowered code: they are entered in a loop.
        exits = []
        while True:
            enter = getattr(self, "enter_" + type(s).__name__, None)
            if enter is None:
                break
            s, leave = enter(s)
            exits.append(leave)
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise self.error(f"cannot run {type(s).__name__}")
        method(s)
        for leave in reversed(exits):
            leave()

    def block(self, s: tir.Stmt | None) -> None:
        """An indented suite."""
        self.indent += 1
        start = len(self.lines)
        if s is not None:
            self.stmt(s)
        if len(self.lines) == start:
            self.emit("pass")
        self.indent -= 1

    def s_SeqStmt(self, s: tir.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_BufferStore(self, s: tir.BufferStore) -> None:
        b = self.buffer(s.buffer)
        value = self.value(s.value)
        index, _ = self.index(b, s.indices)
        self.emit(f"{b.name}[{index}] = {value}")

    def s_For(self, s: tir.For) -> None:
        if self.loop_depth >= _MAX_LOOP_NESTING:
            self.subfunction(s)
            return
        lo, ext = self.expr(s.min), self.expr(s.extent)
        lo_code, ext_code = self.norm(lo), self.norm(ext)
        end = f"{lo_code} + {ext_code}" if lo_code != "0" else ext_code
        rng = f"range({ext_code})" if lo_code == "0" else f"range({lo_code}, {end})"
        vlo = vhi = None
        if lo.in_range and ext.in_range:
            vlo, vhi = lo.lo, max(lo.lo, lo.hi + ext.hi - 1)
        name, prev = self.bind(s.loop_var, vlo, vhi)
        saved, self.ctx = self.ctx, f"{self.ctx}, loop `{s.loop_var.name}`"
        self.emit(f"for {name} in {rng}:")
        self.loop_depth += 1
        self.block(s.body)
        self.loop_depth -= 1
        self.ctx = saved
        self.unbind(s.loop_var, prev)

    def s_While(self, s: tir.While) -> None:
        if self.loop_depth >= _MAX_LOOP_NESTING:
            self.subfunction(s)
            return
        self.emit(f"while {self.lazily(s.condition)}:")
        self.loop_depth += 1
        self.block(s.body)
        self.loop_depth -= 1

    def subfunction(self, s: tir.Stmt) -> None:
        """Run `s` in a nested function (CPython limits how many loops nest in one)."""
        name = self.fresh("_nest")
        self.emit(f"def {name}():")
        self.indent += 1
        depth, self.loop_depth = self.loop_depth, 0
        self.stmt(s)
        self.emit("return NORET")
        self.loop_depth = depth
        self.indent -= 1
        r = self.fresh("r")
        self.emit(f"{r} = {name}()")
        self.emit(f"if {r} is not NORET: return {r}")

    def s_IfThenElse(self, s: tir.IfThenElse) -> None:
        self.emit(f"if {self.value(s.condition)}:")
        self.block(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.block(s.else_case)

    def s_Evaluate(self, s: tir.Evaluate) -> None:
        if isinstance(s.value, (tir.IntImm, tir.FloatImm, tir.StringImm, tir.Var)):
            return
        self.emit(self.value(s.value))

    def s_Return(self, s: tir.Return) -> None:
        self.emit(f"return {self.value(s.value)}")

    def enter_LetStmt(self, s: tir.LetStmt):
        v = self.expr(s.value)
        name, prev = self.bind(s.var, v.lo, v.hi)
        self.emit(f"{name} = {self.norm(v)}")
        return s.body, lambda: self.unbind(s.var, prev)

    def enter_AttrStmt(self, s: tir.AttrStmt):
        return s.body, _nothing

    def enter_AssertStmt(self, s: tir.AssertStmt):
        cond = self.value(s.condition)
        parts = [p.value if isinstance(p, tir.StringImm) else p for p in s.message_parts]
        codes = [repr(p) if isinstance(p, str) else self.lazily(p) for p in parts]
        self.emit(f"if not {cond}:")
        self.indent += 1
        self.emit(f"assert_fail({s.error_kind!r}, [{', '.join(codes)}])")
        self.indent -= 1
        return s.body, _nothing

    def enter_Allocate(self, s: tir.Allocate):
        saved = dict(self.bufs), dict(self.storage)
        size = " * ".join(f"({self.value(x)})" for x in s.extents) or "1"
        name = self.pyname("d_", s.buffer_var.name)
        self.emit(f"{name} = zeros({size}, {self.type_name(_dtype(s.dtype))})")
        self.provide_storage(s.buffer_var, name, flat=True)
        return s.body, lambda: self.restore(saved)

    def enter_DeclBuffer(self, s: tir.DeclBuffer):
        saved = dict(self.bufs), dict(self.storage)
        data = s.buffer.data
        if data in self.storage:
            self.declare_view(s.buffer)
        elif not isinstance(data, tir.Var):  # data given by an expression (TVM 0.27): an array
            name = self.pyname("d_", s.buffer.name)
            self.emit(f"{name} = flat({self.value(data)}, {s.buffer.name!r})")
            self.provide_storage(data, name, flat=True)
            self.declare_view(s.buffer)
        else:  # new memory
            self.allocate(s.buffer)
        return s.body, lambda: self.restore(saved)

    def restore(self, saved) -> None:
        self.bufs, self.storage = saved

    def s_SBlockRealize(self, s: tir.SBlockRealize) -> None:
        block = s.block
        if len(s.iter_values) != len(block.iter_vars):
            raise self.error(f"block `{block.name}` has {len(block.iter_vars)} iterators but "
                             f"{len(s.iter_values)} values")
        saved_ctx, self.ctx = self.ctx, f"`{self.fname}`, block `{block.name}`"
        saved = dict(self.bufs), dict(self.storage)
        pred = s.predicate
        guarded = not (isinstance(pred, tir.IntImm) and pred.value)
        if guarded:  # a false predicate skips the block
            self.emit(f"if {self.value(pred)}:")
            self.indent += 1
        start = len(self.lines)
        bound = []
        for iv, value in zip(block.iter_vars, s.iter_values):
            v = self.expr(value)
            code = self.norm(v)
            if any(code == entry[0] for entry in self.env.values()):  # a variable: alias it
                bound.append((iv.var, self.bind(iv.var, v.lo, v.hi, name=code)[1]))
            else:
                name, prev = self.bind(iv.var, v.lo, v.hi)
                self.emit(f"{name} = {code}")
                bound.append((iv.var, prev))
        for buf in block.alloc_buffers:
            self.allocate(buf)
        deferred: list = []
        for m in block.match_buffers:
            self.match_buffer(m, deferred)
        self.check_deferred(deferred)
        if block.init is not None:  # T.init(): at the first iteration of every reduction iterator
            conds = [f"{self.env[iv.var][0]} == {self.value(iv.dom.min) if iv.dom is not None else '0'}"
                     for iv in block.iter_vars if iv.iter_type == tir.COMM_REDUCE]
            if conds:
                self.emit(f"if {' and '.join(conds)}:")
                self.block(block.init)
            else:
                self.stmt(block.init)
        self.stmt(block.body)
        for var, prev in reversed(bound):
            self.unbind(var, prev)
        if guarded:
            if len(self.lines) == start:
                self.emit("pass")
            self.indent -= 1
        self.bufs, self.storage = saved
        self.ctx = saved_ctx

    def s_SBlock(self, s: tir.SBlock) -> None:  # a block outside a realize: no iterators to bind
        self.s_SBlockRealize(tir.SBlockRealize([], tir.IntImm(1, "bool"), s))

    def match_buffer(self, m: tir.MatchBufferRegion, deferred: list) -> None:
        """`T.match_buffer(A[region], shape)`: a NumPy view of the region."""
        src = self.buffer(m.source.buffer)
        buf = m.buffer
        if src.mode != "nd":
            raise self.error(f"match_buffer `{buf.name}` views buffer `{src.buffer.name}`, which has "
                             "explicit strides")
        if len(m.source.region) != len(src.buffer.shape):
            raise self.error(f"region of buffer `{src.buffer.name}` has {len(m.source.region)} ranges, "
                             f"the buffer has {len(src.buffer.shape)} dimensions")
        slices = []
        for r in m.source.region:
            lo = self.value(r.min)
            slices.append(f"{lo}:{lo} + {self.value(r.extent)}")
        region = self.fresh("region")
        self.emit(f"{region} = {src.name}[{', '.join(slices)}]")
        same_rank = len(buf.shape) == len(m.source.region)
        dims = []
        for i, d in enumerate(buf.shape):  # the buffer's shape variables come from the region
            if isinstance(d, tir.Var) and d not in self.env:
                name, _ = self.bind(d, 0, _dtype(d.dtype).hi)
                self.emit(f"{name} = {region}.shape[{i}]" if same_rank else f"{name} = {region}.size")
                dims.append(name)
            else:
                dims.append(self.value(d))
        shape = f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"
        name = self.declare_array(buf, f"match({region}, {shape}, {buf.name!r})")
        self.bind_dims(name, buf, f"match_buffer `{buf.name}`", deferred, shape=False)
        self.provide_storage(buf.data, name, flat=False, owner=buf)

    # ------------------------------------------------------------------ the function

    def function(self) -> str:
        func = self.func
        self.emit("nargs = len(args)")
        self.emit(f"if nargs != {len(func.params)}: mismatch('number of arguments', {len(func.params)}, nargs)")
        buffers = []
        for i, p in enumerate(func.params):  # scalars first: buffer shapes may use them
            buf = func.buffer_of(p)
            if buf is not None:
                buffers.append((i, p, buf))
                continue
            dt = _dtype(p.dtype)
            name, _ = self.bind(p)
            if dt.is_int:
                self.emit(f"{name} = int_arg(args[{i}], {p.name!r}, {dt.lo}, {dt.hi})")
            elif dt.kind == "float" and dt.lanes == 1:
                self.emit(f"{name} = float_arg(args[{i}], {p.name!r}, {self.type_name(dt)})")
            elif dt.kind == "bool":
                self.emit(f"{name} = bool(args[{i}])")
            else:
                self.emit(f"{name} = args[{i}]")
                self.storage[p] = (name, False)
        deferred: list = []
        for i, p, buf in buffers:
            name = self.declare_array(buf, f"check_array(args[{i}], {buf.name!r}, {len(buf.shape)}, {buf.dtype!r})")
            self.bind(p, name=name)
            self.storage[p] = (name, False)
            self.bind_dims(name, buf, f"buffer `{buf.name}`", deferred)
        self.check_deferred(deferred)
        for _, _, buf in buffers:
            self.provide_storage(buf.data, self.bufs[buf].name, flat=False, owner=buf)
        self.stmt(func.body)
        self.emit("return None")
        return "\n".join(["def prim_func(args, mod):", *self.lines]) + "\n"


def _is_const(e, value) -> bool:
    return isinstance(e, tir.IntImm) and e.value == value


def _interval(op: str, a: _V, b: _V, dt: _DType):
    """The exact range of `a op b` on integers (operands wrapped unless op is a ring op),
    or (None, None) when unknown. Wrapped operands lie in the dtype's range."""
    if op in _RING_OPS:
        if a.lo is None or b.lo is None:
            return None, None
        if op == "add":
            return a.lo + b.lo, a.hi + b.hi
        if op == "sub":
            return a.lo - b.hi, a.hi - b.lo
        corners = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
        return min(corners), max(corners)
    alo, ahi = (a.lo, a.hi) if a.in_range else (a.dt.lo, a.dt.hi)
    blo, bhi = (b.lo, b.hi) if b.in_range else (b.dt.lo, b.dt.hi)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return f(alo, blo), f(ahi, bhi)
    if op in ("floordiv", "div", "truncdiv"):
        if blo > 0:  # dividing by a positive number: monotonic in a, no overflow
            if op == "floordiv":
                return min(alo // blo, alo // bhi), max(ahi // blo, ahi // bhi)
            if alo >= 0:
                return alo // bhi, ahi // blo
            return -(-alo // blo), ahi // blo if ahi >= 0 else -(-ahi // bhi)
        return (None, None) if blo <= -1 <= bhi and alo <= dt.lo else (dt.lo, dt.hi)
    if op == "floormod":
        if blo > 0:
            if alo >= 0 and ahi < blo:
                return alo, ahi
            return 0, bhi - 1
        return dt.lo, dt.hi
    if op == "truncmod":
        if blo > 0:
            if alo >= 0:
                return (alo, ahi) if ahi < blo else (0, min(ahi, bhi - 1))
            return -(bhi - 1), bhi - 1
        return dt.lo, dt.hi
    return dt.lo, dt.hi


# ----------------------------------------------------------------------------- compile + run


class _Compiled:
    __slots__ = ("fn", "source", "filename", "where", "name")

    def __init__(self, fn, source: str, filename: str, where: list[str], name: str) -> None:
        self.fn, self.source, self.filename, self.where, self.name = fn, source, filename, where, name


_CACHE: OrderedDict[int, tuple[tir.PrimFunc, _Compiled]] = OrderedDict()
_CACHE_SIZE = 1024
_ids = itertools.count()


def _func_name(func: tir.PrimFunc) -> str:
    return func.attr("global_symbol") or "prim_func"


def _compile(func: tir.PrimFunc) -> _Compiled:
    entry = _CACHE.get(id(func))
    if entry is not None and entry[0] is func:
        _CACHE.move_to_end(id(func))
        return entry[1]
    name = str(_func_name(func))
    gen = _Codegen(func, name)
    source = gen.function()
    filename = f"<tir {name} #{next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(gen.ns)
    namespace["run_prim_func"] = run_prim_func
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 — our own generated code
    compiled = _Compiled(namespace["prim_func"], source, filename, ["", *gen.where], name)
    _CACHE[id(func)] = (func, compiled)
    if len(_CACHE) > _CACHE_SIZE:
        old = _CACHE.popitem(last=False)[1][1]
        linecache.cache.pop(old.filename, None)
    return compiled


def prim_func_source(func: tir.PrimFunc) -> str:
    """The Python code that `run_prim_func` executes for `func` (for debugging)."""
    return _compile(func).source


def run_prim_func(func: tir.PrimFunc, args: list, mod=None) -> object:
    """Run `func` on `args` (NumPy arrays for buffer parameters, Python numbers for scalar
    ones); buffers are read and written in place. Returns the value of a `Return`, or None."""
    compiled = _compile(func)
    try:
        with np.errstate(all="ignore"):  # inf and nan are values, as on the device
            return compiled.fn(list(args), mod)
    except InterpreterError:
        raise
    except (ZeroDivisionError, IndexError, OverflowError, ValueError, TypeError) as err:
        where = _locate(compiled, err)
        message = "division by zero" if isinstance(err, ZeroDivisionError) else str(err)
        if isinstance(err, IndexError):
            message = f"out-of-bounds access: {message}"
        raise InterpreterError(f"in {where}: {message}") from err


def _locate(compiled: _Compiled, err: BaseException) -> str:
    """The TIR construct (and generated line) that raised `err`."""
    tb, line = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == compiled.filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None or line > len(compiled.where):
        return f"`{compiled.name}`"
    text = compiled.source.splitlines()[line - 1].strip()
    return f"{compiled.where[line - 1]} (at `{text}`)"


__all__ = ["InterpreterError", "prim_func_source", "run_prim_func"]
