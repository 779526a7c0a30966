"""The TIR interpreter's runtime: dtypes, the operator templates the generated code is
written from (one table per kind of value, one line per operator), and the helpers the
generated code calls (`_RUNTIME`, its namespace). `tir.py` says how values are represented.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np

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
    "bitwise_not": "(~{0})",  # raw
    "shift_left": "({0} << {1})",  # raw
    "shift_right": "({0} >> {1})",  # arithmetic for signed, logical for unsigned (non-negative)
    "pow": "ipow({0}, {1})",  # raw
    "popcount": "({0} & {mask}).bit_count()",
    "clz": "({bits} - ({0} & {mask}).bit_length())",
}
_INT_RAW_INTRINSICS = frozenset(("abs", "fabs", "shift_left", "pow", "bitwise_not"))  # ~ of an unsigned wraps

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
    "assert_fail": _assert_fail, "NORET": _NORET, "zeros": np.zeros,
}

