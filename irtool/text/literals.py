"""Literals of the Relay text format, read and written as TVM v0.19 does: numbers, and
attribute values (numbers, strings, lists), which the printer and the op registry's
messages both write.

    1        int32          2147483648  int64 (an unsuffixed int that does not fit int32)
    -42i64   int64          1i16        int16
    0.5f     float32        3f16        float16       1f64   float64
    True     bool

A float literal needs its `f` suffix (`0.5` is an invalid integer, as in TVM); a value
that does not fit its width is an error. TVM prints floats with C++'s default stream
precision (6 significant digits); we do the same whenever that reads back to the same
bits, and otherwise print as many digits as it takes, so printing never loses data.
"""

from __future__ import annotations

import math
import struct

from ..ir.expr import TypedScalar

_INT_RANGE = {16: (-(2**15), 2**15 - 1), 32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}
_FLOAT_WIDTHS = (16, 32, 64)


class LiteralError(ValueError):
    pass


def parse_number(text: str) -> tuple[int | float, str]:
    """`'-42i64'` -> `(-42, 'int64')`; raises LiteralError with TVM's wording."""
    is_float = "f" in text
    suffix_pos = text.rfind("f" if is_float else "i")
    if suffix_pos < 0:
        suffix_pos = len(text)
    literal, suffix = text[:suffix_pos], text[suffix_pos + 1:]
    width = 32
    if suffix:
        if not suffix.isdigit():
            raise LiteralError(f"invalid numeric suffix `{suffix}`")
        width = int(suffix)
    if is_float:
        if width not in _FLOAT_WIDTHS:
            raise LiteralError(f"invalid numeric suffix `{suffix}`")
        try:
            value = float(literal)
        except ValueError:
            raise LiteralError(f"invalid floating point number `{literal}`") from None
        if math.isinf(value) and "inf" not in literal:  # beyond double, as C++'s stod reports it
            raise LiteralError(f"invalid floating point number `{literal.lstrip('-')}`")
        if not math.isinf(value) and not _fits(value, width):
            raise LiteralError(f"floating point number `{literal.lstrip('-')}` unrepresentable in width {width}")
        return value, f"float{width}"
    if width not in _INT_RANGE:
        raise LiteralError(f"invalid numeric suffix `{suffix}`")
    try:
        value = int(literal, 10)
    except ValueError:
        raise LiteralError(f"invalid integer number `{literal}`") from None
    lo, hi = _INT_RANGE[width]
    lo64, hi64 = _INT_RANGE[64]
    if not lo64 <= value <= hi64:  # beyond int64: C++'s stoll fails first
        raise LiteralError(f"invalid integer number `{literal}`")
    if not lo <= value <= hi:
        if not suffix:
            return value, "int64"  # TVM: an unsuffixed int32 overflow becomes int64
        # TVM's tokenizer reads the sign apart from the digits and quotes the digits only
        raise LiteralError(f"integer number `{literal.lstrip('-')}` unrepresentable in width {width}")
    return value, f"int{width}"


_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: math.inf}


def _fits(value: float, width: int) -> bool:
    """TVM's rule (support/scalars.cc): the double itself must not exceed the width's max."""
    return not abs(value) > _FLOAT_MAX[width]  # (NaN fits)


def _round_trips(text: str, value: float, bits: int) -> bool:
    parsed = float(text)
    if not _fits(parsed, bits):  # e.g. `3.4028235e+38` rounds to FLT_MAX but TVM rejects it
        return False
    if bits == 64:
        return parsed == value
    fmt = "<e" if bits == 16 else "<f"
    try:
        return struct.pack(fmt, parsed) == struct.pack(fmt, value)
    except OverflowError:
        return False


def format_float(value: float, bits: int = 32) -> str:
    """C++ `ostream << value` (i.e. `%g`), widened until the text reads back exactly."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    for precision in range(6, 18):
        text = f"{value:.{precision}g}"
        if _round_trips(text, value, bits):
            return text
    return repr(value)


_FLOAT_SUFFIX = {"float16": "f16", "float32": "f", "float64": "f64"}
_INT_SUFFIX = {"int16": "i16", "int32": "", "int64": "i64"}
SIMPLE_SCALAR_DTYPES = frozenset(("int16", "int32", "int64", "float16", "float32", "float64", "bool"))


def format_scalar(value, dtype: str) -> str:
    """A scalar of a simple dtype as a literal: `1`, `-42i64`, `0.5f`, `1f64`, `True`."""
    if dtype == "bool":
        return "True" if value else "False"
    if dtype in _INT_SUFFIX:
        return f"{int(value)}{_INT_SUFFIX[dtype]}"
    return format_float(float(value), int(dtype[5:])) + _FLOAT_SUFFIX[dtype]


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def format_string(value: str) -> str:
    return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'


_FLOAT32_MAX = 3.4028234663852886e38


def format_attr_value(value) -> str:
    cls = type(value)
    if cls is bool:
        return "True" if value else "False"
    if cls is int:
        return str(value)
    if cls is float:
        # TVM writes a double attribute with an `f` suffix; one beyond float32's range needs f64
        # to read back (the parser rejects a float32 literal it cannot represent)
        return format_float(value, 64) + ("f64" if math.isfinite(value) and abs(value) > _FLOAT32_MAX else "f")
    if cls is str:
        return format_string(value)
    if value is None:
        return "None"
    if cls is tuple or cls is list:
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if cls is TypedScalar:
        return format_scalar(value.value, value.dtype)
    raise TypeError(f"cannot print attribute value {value!r}")
