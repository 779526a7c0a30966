"""Numeric literals and type forms of the Relay text format, against TVM v0.19's tokenizer
(`src/relay/parser/tokenizer.h`, `ParseNumber`) and printer (`support::NDArrayScalarToString`,
C++ `ostream << value`, i.e. `%g` with 6 significant digits, widened here only when 6
digits would not read back to the same bits)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irtool.diagnostics import DiagnosticError
from irtool.ir import ANY, Constant, FuncType, IncompleteType, TensorType, TupleType
from irtool.text import parse_expr, to_text
from irtool.text.literals import LiteralError, format_float, format_scalar, parse_number

F32_MAX = float(np.finfo(np.float32).max)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

# --------------------------------------------------------------------------- parse_number


@pytest.mark.parametrize(("text", "value", "dtype"), [
    ("0", 0, "int32"),
    ("1", 1, "int32"),
    ("-7", -7, "int32"),
    ("2147483647", 2**31 - 1, "int32"),
    ("-2147483648", -(2**31), "int32"),
    ("2147483648", 2**31, "int64"),            # unsuffixed int32 overflow -> int64 (TVM's legacy rule)
    ("-2147483649", -(2**31) - 1, "int64"),
    ("9223372036854775807", I64_MAX, "int64"),
    ("-42i64", -42, "int64"),
    ("1i64", 1, "int64"),
    ("9223372036854775807i64", I64_MAX, "int64"),
    # TVM reads the digits without the sign with stoll, so it rejects this one; printing
    # an int64-min constant must read back, and irtool does.
    ("-9223372036854775808i64", I64_MIN, "int64"),
    ("1i16", 1, "int16"),
    ("32767i16", 32767, "int16"),
    ("-32768i16", -32768, "int16"),
    ("2147483647i32", 2**31 - 1, "int32"),
    ("-2147483648i32", -(2**31), "int32"),
    ("1i", 1, "int32"),                        # an empty suffix keeps width 32, as in TVM
    ("0.5f", 0.5, "float32"),
    ("1f", 1.0, "float32"),
    ("1f32", 1.0, "float32"),
    ("1e-1f", 0.1, "float32"),
    ("-2.5e3f", -2500.0, "float32"),
    ("3f16", 3.0, "float16"),
    ("65504f16", 65504.0, "float16"),          # float16 max
    ("-65504f16", -65504.0, "float16"),
    ("1f64", 1.0, "float64"),
    ("0.1f64", 0.1, "float64"),
    ("1e300f64", 1e300, "float64"),
    ("3.4028234663852886e38f", F32_MAX, "float32"),   # float32 max, exactly
    ("-3.4028234663852886e38f", -F32_MAX, "float32"),
    ("inff", math.inf, "float32"),
    ("-inff", -math.inf, "float32"),
    ("inff16", math.inf, "float16"),
    ("inff64", math.inf, "float64"),
])
def test_parse_number(text, value, dtype):
    got_value, got_dtype = parse_number(text)
    assert got_dtype == dtype
    assert got_value == value
    assert type(got_value) is (int if dtype.startswith("int") else float)


def test_parse_number_nan():
    value, dtype = parse_number("nanf")
    assert dtype == "float32" and math.isnan(value)
    value, dtype = parse_number("nanf64")
    assert dtype == "float64" and math.isnan(value)


@pytest.mark.parametrize(("text", "message"), [
    # TVM's diagnostics, word for word.
    ("32768i16", "integer number `32768` unrepresentable in width 16"),
    ("70000i16", "integer number `70000` unrepresentable in width 16"),
    ("2147483648i32", "integer number `2147483648` unrepresentable in width 32"),
    ("65505f16", "floating point number `65505` unrepresentable in width 16"),
    ("65520f16", "floating point number `65520` unrepresentable in width 16"),
    ("3.5e38f", "floating point number `3.5e38` unrepresentable in width 32"),
    ("1e39f", "floating point number `1e39` unrepresentable in width 32"),
    ("3.4028236e38f", "floating point number `3.4028236e38` unrepresentable in width 32"),
    ("0.5", "invalid integer number `0.5`"),        # a float needs its `f`
    ("1e5", "invalid integer number `1e5`"),
    ("1.5i64", "invalid integer number `1.5`"),
])
def test_parse_number_errors(text, message):
    with pytest.raises(LiteralError) as err:
        parse_number(text)
    assert str(err.value) == message


@pytest.mark.parametrize("text", ["1i8", "1i128", "1f8", "1f128"])
def test_parse_number_unsupported_width(text):
    with pytest.raises(LiteralError, match=r"\b(8|128)\b"):
        parse_number(text)


@pytest.mark.parametrize("text", ["9223372036854775808", "9223372036854775808i64", "99999999999999999999"])
def test_parse_number_beyond_int64_message(text):
    with pytest.raises(LiteralError) as err:
        parse_number(text)
    digits = text.removesuffix("i64")
    assert str(err.value) == f"invalid integer number `{digits}`"


@pytest.mark.parametrize("text", ["1e400f", "1e400f64", "-1e400f16"])
def test_parse_number_beyond_double_is_an_error(text):
    with pytest.raises(LiteralError) as err:
        parse_number(text)
    assert str(err.value) == "invalid floating point number `1e400`"


@pytest.mark.parametrize(("text", "message"), [
    ("-32769i16", "integer number `32769` unrepresentable in width 16"),
    ("-3.5e38f", "floating point number `3.5e38` unrepresentable in width 32"),
])
def test_parse_number_negative_overflow_message(text, message):
    with pytest.raises(LiteralError) as err:
        parse_number(text)
    assert str(err.value) == message


def test_literal_error_is_a_diagnostic_at_the_literal():
    with pytest.raises(DiagnosticError) as err:
        parse_expr("fn () {\n  70000i16\n}", "lit.ir")
    assert err.value.diagnostics[0].message == "integer number `70000` unrepresentable in width 16"
    span = err.value.span
    assert (span.line, span.col, span.end_col) == (2, 3, 11)
    assert err.value.render() == ("lit.ir:2:3: error: integer number `70000` unrepresentable in width 16\n"
                                  "  70000i16\n"
                                  "  ^~~~~~~~")


# --------------------------------------------------------------------------- printing


@pytest.mark.parametrize(("value", "dtype", "text"), [
    (1, "int32", "1"),
    (-2147483648, "int32", "-2147483648"),
    (2147483647, "int32", "2147483647"),
    (-1, "int16", "-1i16"),
    (-32768, "int16", "-32768i16"),
    (32767, "int16", "32767i16"),
    (-42, "int64", "-42i64"),
    (I64_MAX, "int64", "9223372036854775807i64"),
    (I64_MIN, "int64", "-9223372036854775808i64"),
    (True, "bool", "True"),
    (False, "bool", "False"),
    (0.5, "float32", "0.5f"),
    (1.0, "float32", "1f"),
    (float(np.float32(1e-5)), "float32", "1e-05f"),          # C++'s %g exponent form
    (float(np.float32(0.1)), "float32", "0.1f"),             # shortest: not 0.100000001
    (float(np.float32(3.14159274)), "float32", "3.1415927f"),  # 6 digits (3.14159) would lose bits
    (float(np.float32(16777217.0)), "float32", "16777216f"),
    (100000.0, "float32", "100000f"),
    (1e6, "float32", "1e+06f"),
    (-0.0, "float32", "-0f"),
    (float(np.float32(2**-149)), "float32", "1.4013e-45f"),
    (math.inf, "float32", "inff"),
    (-math.inf, "float64", "-inff64"),
    (math.nan, "float16", "nanf16"),
    (1.0, "float64", "1f64"),
    (0.1, "float64", "0.1f64"),
    (0.30000000000000004, "float64", "0.30000000000000004f64"),
    (123456789.0, "float64", "123456789f64"),
    (1e100, "float64", "1e+100f64"),
    (5e-324, "float64", "4.94066e-324f64"),
    (3.0, "float16", "3f16"),
    (65504.0, "float16", "65504f16"),
    (float(np.float16(0.1)), "float16", "0.0999756f16"),
    (float(np.float16(2**-24)), "float16", "5.96046e-08f16"),
])
def test_format_scalar(value, dtype, text):
    assert format_scalar(value, dtype) == text


def test_format_float_default_width_is_float32():
    assert format_float(float(np.float32(0.1))) == "0.1"
    assert format_float(0.1, 64) == "0.1"
    assert format_float(math.nextafter(0.1, 1), 64) == "0.10000000000000002"  # 17 digits when needed


def _f32_bits(v: float) -> bytes:
    return struct.pack("<f", v)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, min_value=-np.nextafter(np.float32(F32_MAX), np.float32(0)),
                 max_value=float(np.nextafter(np.float32(F32_MAX), np.float32(0)))))
def test_float32_text_reads_back_to_the_same_bits(v):
    text = format_scalar(v, "float32")
    value, dtype = parse_number(text)
    assert dtype == "float32"
    assert _f32_bits(value) == _f32_bits(v)
    # C++'s `%g` (6 significant digits) as TVM prints, widened to the fewest digits that
    # read back to the same bits.
    precision = next(p for p in range(6, 18) if _f32_bits(float(f"{v:.{p}g}")) == _f32_bits(v))
    assert text == f"{v:.{precision}g}f"


@settings(max_examples=200, deadline=None)
@given(st.floats(width=16, allow_nan=False))
def test_float16_text_reads_back_to_the_same_bits(v):
    value, dtype = parse_number(format_scalar(v, "float16"))
    assert dtype == "float16"
    assert np.float16(value).tobytes() == np.float16(v).tobytes()


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False))
def test_float64_text_reads_back_exactly(v):
    value, dtype = parse_number(format_scalar(v, "float64"))
    assert dtype == "float64"
    assert struct.pack("<d", value) == struct.pack("<d", v)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int16", "int32", "int64"]).flatmap(
    lambda dt: st.tuples(st.just(dt), st.integers(int(np.iinfo(dt).min), int(np.iinfo(dt).max)))))
def test_int_text_reads_back(dtype_value):
    dtype, v = dtype_value
    assert parse_number(format_scalar(v, dtype)) == (v, dtype)


def test_float32_max_prints_text_that_reads_back():
    # The shortest text for FLT_MAX's bits (`3.4028235e+38`) is above FLT_MAX as a double,
    # which TVM's range check rejects; the printer picks a longer text that passes and
    # still rounds to the same float32.
    for v in (F32_MAX, -F32_MAX):
        text = format_scalar(v, "float32")
        value, dtype = parse_number(text)
        assert dtype == "float32" and abs(value) <= F32_MAX
        assert np.float32(value) == np.float32(v), text


# --------------------------------------------------------------------------- literals in programs


@pytest.mark.parametrize(("text", "dtype", "value"), [
    ("True", "bool", True),
    ("False", "bool", False),
    ("inff", "float32", math.inf),
    ("-inff", "float32", -math.inf),
    ("inff64", "float64", math.inf),
    ("1i16", "int16", 1),
    ("2147483648", "int64", 2**31),
    ("0.5f", "float32", 0.5),
    ("3f16", "float16", 3.0),
])
def test_literal_expression(text, dtype, value):
    e = parse_expr(f"fn () {{ {text} }}").body
    assert type(e) is Constant
    assert e.data.shape == () and str(e.data.dtype) == dtype
    assert e.data.item() == value
    expected = {"2147483648": "2147483648i64"}.get(text, text)
    assert to_text(parse_expr(f"fn () {{ {text} }}")).splitlines()[1].strip() == expected


def test_literals_print_back_as_written():
    src = "(1, -2i16, 3i64, 0.5f, 1e-05f, 3f16, 1f64, 0.1f64, True, False, inff, -inff64)\n"
    assert to_text(parse_expr(src)) == src


# --------------------------------------------------------------------------- types


def _header(type_text: str) -> str:
    """The first printed line of `fn (%x: T) -> T { %x }` after parsing it."""
    return to_text(parse_expr(f"fn (%x: {type_text}) -> {type_text} {{ %x }}")).splitlines()[0]


CANONICAL_TYPES = [
    "Tensor[(1, ?, 3), float32]",
    "Tensor[(3), float32]",
    "Tensor[(0), float16]",
    "Tensor[(?), uint1]",
    "Tensor[(2147483648, 1099511627776), int64]",
    "Tensor[(1, 2, 3, 4, 5), bfloat16]",
    "float32",
    "int8x4",
    "bool",
    "handle",
    "(float32,)",
    "()",
    "((),)",
    "(float32, Tensor[(2, 2), int8])",
    "fn (float32, int8) -> bool",
    "fn () -> ()",
    "fn ((float32,)) -> fn (_) -> _",
    "_",
    "(_, fn (_) -> (bool,))",
]


@pytest.mark.parametrize("type_text", CANONICAL_TYPES)
def test_type_prints_back_as_written(type_text):
    assert _header(type_text) == f"fn (%x: {type_text}) -> {type_text} {{"


@pytest.mark.parametrize(("written", "printed"), [
    ("Tensor[(3,), float32]", "Tensor[(3), float32]"),     # TVM prints 1-d shapes without a comma
    ("Tensor[(), float32]", "float32"),                     # a 0-d tensor type is its dtype
    ("Tensor[(1,2),float32]", "Tensor[(1, 2), float32]"),
    ("(float32, int8,)", "(float32, int8)"),
    ("( float32 , )", "(float32,)"),
])
def test_type_canonical_spelling(written, printed):
    assert _header(written) == f"fn (%x: {printed}) -> {printed} {{"


@pytest.mark.parametrize(("type_text", "expected"), [
    ("Tensor[(1, ?, 3), float32]", TensorType((1, ANY, 3), "float32")),
    ("Tensor[(3), float32]", TensorType((3,), "float32")),
    ("float32", TensorType((), "float32")),
    ("int8x4", TensorType((), "int8x4")),
    ("bool", TensorType((), "bool")),
    ("(bool,)", TupleType([TensorType((), "bool")])),
    ("()", TupleType([])),
    ("fn (float32, int8) -> bool", FuncType([TensorType((), "float32"), TensorType((), "int8")],
                                            TensorType((), "bool"))),
    ("_", IncompleteType()),
])
def test_type_objects(type_text, expected):
    from irtool.ir import type_equal

    fn = parse_expr(f"fn (%x: {type_text}) {{ %x }}")
    got = fn.params[0].type_annotation
    assert type(got) is type(expected)
    assert type_equal(got, expected)
    if type(expected) is TensorType:
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert all((d is ANY) == (e is ANY) for d, e in zip(got.shape, expected.shape, strict=True))


def test_untyped_parameter_has_no_annotation():
    fn = parse_expr("fn (%x) { %x }")
    assert fn.params[0].type_annotation is None
    assert to_text(fn).splitlines()[0] == "fn (%x) {"


@pytest.mark.parametrize(("type_text", "message"), [
    ("Tensor[(-1), float32]", "a tensor dimension must be a non-negative integer or `?`, not `-1`"),
    ("Tensor[(1.5f), float32]", "a tensor dimension must be a non-negative integer or `?`, not `1.5f`"),
    ("Tensor[(1), floot32]", "unknown data type `floot32`"),
    ("floot32", "unknown data type `floot32`"),
    ("int7", "unknown data type `int7`"),
])
def test_type_errors(type_text, message):
    with pytest.raises(DiagnosticError) as err:
        parse_expr(f"fn (%x: {type_text}) {{ %x }}")
    assert err.value.diagnostics[0].message == message
    span = err.value.span
    bad = message.rsplit("`", 2)[-2]
    line = f"fn (%x: {type_text}) {{ %x }}"
    assert line[span.col - 1:span.end_col - 1] == bad
