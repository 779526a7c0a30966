"""The elementwise operator family (irtool/ops/elemwise.py) against TVM v0.19.

Declarations (name, arguments, attributes, TOpPattern) are checked against what TVM registers:
RELAY_REGISTER_UNARY_OP / BINARY_OP / CMP_OP in src/relay/op/op_common.h, unary.cc, binary.cc,
transform.cc (cast, where), nn.cc (relu, leaky_relu). The type relations are checked against
IdentityRel / BroadcastRel / BroadcastCompRel / CastRel / WhereRel, every error path included.

The NumPy references are checked against formulas that share no code with them: Python's
`math`/`decimal`/`struct` on scalars in an explicit loop, following TVM's TOPI computes
(topi/broadcast.h, topi/elemwise.h, topi/nn.h) and their lowering on LLVM. Where ONNX has the
same operator the reference is also run against onnxruntime, on the inputs where ONNX and TVM
agree (ONNX rounds half to even, and propagates NaN through Sign/Relu/Max/Min/Clip).
Every reference result must have exactly the shape and dtype the type relation gives.
"""

from __future__ import annotations

import decimal
import math
import operator
import struct

import numpy as np
import pytest
from onnx import helper

from irtool.ir import ANY, TupleType
from irtool.ir.types import TensorType
from irtool.ops import REQUIRED, AttrError, OpPattern, all_ops, lookup

INF, NAN = math.inf, math.nan
E, B, O = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.OPAQUE
FLOATS = ("float32", "float64")
INTS = ("int32", "int64")


# ------------------------------------------------------------------ helpers

from op_helpers import T, assert_type, attrs_of, onnx_run, rel, rel_error  # noqa: E402


def run(name, *arrays, **attrs):
    """The registry's reference, checked to have exactly the type the relation gives."""
    op = lookup(name)
    a = attrs_of(name, attrs)
    with np.errstate(all="ignore"):
        out = op.ref(*arrays, **(dict(a.items()) if a else {}))
    t = op.type_rel([T(x.shape, x.dtype.name) for x in arrays], a)
    assert isinstance(out, np.ndarray)
    assert out.shape == t.shape and out.dtype.name == t.dtype, (out.shape, out.dtype, t)
    return out


def pymap(fn, otype, *arrays):
    """fn applied to Python scalars (`.item()`) in an explicit loop over the broadcast shape."""
    b = np.broadcast_arrays(*arrays)
    shape = b[0].shape if b else ()
    values = [fn(*(x[idx].item() for x in b)) for idx in np.ndindex(*shape)]
    with np.errstate(all="ignore"):
        return np.array(values, dtype=otype).reshape(shape)


def check(actual, expected, rtol=0.0, atol=0.0, signed_zero=True):
    """Same dtype and shape, same NaN positions, values within tolerance (exact by default),
    and -0.0 told apart from +0.0 where the expected value is a zero."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, expected.dtype)
    if actual.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        if signed_zero:
            zero = expected == 0
            np.testing.assert_array_equal(np.signbit(actual[zero]), np.signbit(expected[zero]))
    else:
        np.testing.assert_array_equal(actual, expected)


def tol(dtype, f32=2e-7, f64=1e-15):
    return f32 if dtype == "float32" else f64


F32_JUST_BELOW_HALF, F64_JUST_BELOW_HALF = 0.4999999701976776, 0.49999999999999994
FLOAT_EDGES = [0.0, -0.0, 0.25, -0.25, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.7, -3.7, 12.5, -12.5, 1e-30, -1e-30,
               F32_JUST_BELOW_HALF, -F32_JUST_BELOW_HALF, F64_JUST_BELOW_HALF, 100.0, -100.0, INF, -INF, NAN]
INT_EDGES = [0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 12345, -12345]


def data(dtype):
    if dtype in FLOATS:
        return np.array(FLOAT_EDGES, dtype=dtype).reshape(4, 6)
    if dtype == "bool":
        return np.array([[True, False], [False, True]])
    return np.array(INT_EDGES[:12], dtype=dtype).reshape(3, 4)


def pairs(dtype, nonzero_rhs=False):
    """All pairs of edge values as an (n, 1) x (1, n) broadcast."""
    values = np.array(FLOAT_EDGES if dtype in FLOATS else INT_EDGES, dtype=dtype)
    rhs = values[values != 0] if nonzero_rhs else values
    return values[:, None], rhs[None, :]


# ------------------------------------------------------------------ declarations vs TVM

UNARY_NAMES = ["negative", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "floor", "ceil", "round",
               "trunc", "sign", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
               "nn.relu", "copy", "zeros_like", "ones_like", "logical_not", "annotation.stop_fusion"]
BINARY_NAMES = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power", "maximum",
                "minimum", "logical_and", "logical_or", "logical_xor"]
BITWISE_NAMES = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
COMPARE_NAMES = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]

# name -> (arguments, [(attribute, kind, default)], TOpPattern, relax name); TVM v0.19 has no
# relax.trunc and no relax.copy, so their relax names are not checked.
DECLS = {
    **{n: (("data",), [], E, None if n in ("trunc", "copy") else "relax." + n) for n in UNARY_NAMES},
    "annotation.stop_fusion": (("data",), [], O, None),  # kOpaque: fuse-ops never fuses across it
    **{n: (("lhs", "rhs"), [], B, "relax." + n) for n in BINARY_NAMES + COMPARE_NAMES + BITWISE_NAMES},
    "bitwise_not": (("data",), [], E, "relax.bitwise_not"),
    "nn.leaky_relu": (("data",), [("alpha", "float", 0.25)], E, "relax.nn.leakyrelu"),
    "clip": (("data",), [("a_min", "float", REQUIRED), ("a_max", "float", REQUIRED)], E, "relax.clip"),
    "cast": (("data",), [("dtype", "dtype", REQUIRED)], E, "relax.astype"),
    "reinterpret": (("data",), [("dtype", "dtype", REQUIRED)], E, None),
    "where": (("condition", "x", "y"), [], B, "relax.where"),
    "isnan": (("data",), [], E, "relax.isnan"),
    "isinf": (("data",), [], E, "relax.isinf"),
}


def test_family_is_exactly_the_tested_ops():
    mine = {n for n, op in all_ops().items() if op.type_rel.__module__ == "irtool.ops.elemwise"}
    assert mine == set(DECLS)


@pytest.mark.parametrize("name", sorted(DECLS))
def test_declaration_matches_tvm(name):
    op = lookup(name)
    args, attrs, pattern, relax = DECLS[name]
    assert op.name == name and op.args == args
    assert [(a.name, a.kind, a.default) for a in op.attrs] == attrs
    assert op.pattern == pattern, OpPattern.NAMES[op.pattern]
    assert relax is None or op.relax_name == relax
    assert op.ref is not None


def test_attribute_defaults_and_errors():
    assert dict(attrs_of("nn.leaky_relu", {}).items()) == {"alpha": 0.25}
    assert lookup("nn.leaky_relu").non_default_attrs(attrs_of("nn.leaky_relu", {})) == []
    assert lookup("nn.leaky_relu").non_default_attrs(attrs_of("nn.leaky_relu", {"alpha": 0.1})) == [("alpha", 0.1)]
    assert dict(attrs_of("clip", {"a_min": 0, "a_max": 6}).items()) == {"a_min": 0.0, "a_max": 6.0}
    with pytest.raises(AttrError, match="requires attribute `a_max`"):
        attrs_of("clip", {"a_min": 0.0})
    with pytest.raises(AttrError, match="requires attribute `dtype`"):
        attrs_of("cast", {})
    with pytest.raises(AttrError, match="must be a data type"):
        attrs_of("cast", {"dtype": "floaty"})
    with pytest.raises(AttrError, match="has no attribute `axis`"):
        attrs_of("add", {"axis": 1})


# ------------------------------------------------------------------ type relations


@pytest.mark.parametrize("name", UNARY_NAMES + ["nn.leaky_relu"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_unary_relation_is_identity(name, dtype):
    # IdentityRel: logical_not too keeps its input dtype (RELAY_REGISTER_UNARY_OP, unary.cc).
    for shape in [(), (0,), (2, ANY, 3)]:
        assert_type(rel(name, T(shape, dtype)), shape, dtype)


@pytest.mark.parametrize("name", UNARY_NAMES + ["nn.leaky_relu", "cast", "clip"])
def test_unary_relation_rejects_non_tensor(name):
    attrs = {"cast": {"dtype": "int8"}, "clip": {"a_min": 0.0, "a_max": 1.0}}.get(name, {})
    msg = rel_error(name, TupleType([T((2,))]), **attrs)
    assert msg == "argument `data` must be a tensor, got (Tensor[(2), float32],)"


BROADCASTS = [
    ((2, 3), (3,), (2, 3)),
    ((3,), (2, 3), (2, 3)),
    ((1, 3), (2, 1), (2, 3)),
    ((4, 1, 3), (2, 1), (4, 2, 3)),
    ((), (2, 3), (2, 3)),
    ((2, 3), (), (2, 3)),
    ((0, 3), (1, 3), (0, 3)),
    ((ANY, 3), (2, 1), (2, 3)),
    ((2, 1), (ANY, 3), (2, 3)),
    ((ANY,), (1,), (ANY,)),
    ((1,), (ANY,), (ANY,)),
    ((ANY,), (ANY,), (ANY,)),
    ((ANY,), (5,), (5,)),
    ((5, ANY), (ANY,), (5, ANY)),
    ((ANY, 1), (1, 4), (ANY, 4)),
]


@pytest.mark.parametrize("name", BINARY_NAMES + COMPARE_NAMES)
def test_binary_relation_broadcasts(name):
    # BroadcastRel / BroadcastCompRel via ConcreteBroadcast (type_relations.cc).
    compare = name in COMPARE_NAMES
    for dtype in ["float32", "int64", "bool"]:
        for a, b, out in BROADCASTS:
            assert_type(rel(name, T(a, dtype), T(b, dtype)), out, "bool" if compare else dtype)


@pytest.mark.parametrize("name", BINARY_NAMES + COMPARE_NAMES)
def test_binary_relation_errors(name):
    assert rel_error(name, T((2, 3)), T((4,))) == "incompatible broadcast shapes (2, 3) and (4,)"
    assert rel_error(name, T((2, 3)), T((3, 3))) == "incompatible broadcast shapes (2, 3) and (3, 3)"
    assert rel_error(name, T((2, 3)), T((3,), "int32")) == "data types float32 and int32 do not match"
    assert rel_error(name, T((3,), "bool"), T((3,), "float64")) == "data types bool and float64 do not match"
    assert rel_error(name, T((2,)), TupleType([])) == "argument `rhs` must be a tensor, got ()"
    assert rel_error(name, TupleType([]), T((2,))) == "argument `lhs` must be a tensor, got ()"


def test_logical_binary_keeps_dtype():
    # logical_and/logical_or are RELAY_REGISTER_BINARY_OP (BroadcastRel), not CMP_OP (binary.cc).
    for name in ["logical_and", "logical_or", "logical_xor"]:
        assert_type(rel(name, T((2, 1), "bool"), T((3,), "bool")), (2, 3), "bool")
        assert_type(rel(name, T((2,), "int32"), T((2,), "int32")), (2,), "int32")


@pytest.mark.parametrize("dtype", ["bool", "float32", "int64", "uint8", "int8x4", "float16"])
def test_cast_relation(dtype):
    assert_type(rel("cast", T((2, ANY), "float32"), dtype=dtype), (2, ANY), dtype)
    assert_type(rel("cast", T((), "bool"), dtype=dtype), (), dtype)


def test_cast_relation_without_dtype():
    assert rel_error("cast", T((2,)), dtype="") == "cast needs a target `dtype`"


def test_clip_leaky_relu_relations():
    assert_type(rel("clip", T((2, ANY), "int32"), a_min=-1.0, a_max=1.0), (2, ANY), "int32")
    assert_type(rel("nn.leaky_relu", T((ANY,), "float64"), alpha=0.1), (ANY,), "float64")


def test_where_relation():
    # WhereRel (transform.cc): broadcast(x, y), then with the condition; dtype of x.
    assert_type(rel("where", T((2, 1, 1), "bool"), T((1, 3, 1)), T((4,))), (2, 3, 4), "float32")
    assert_type(rel("where", T((), "bool"), T((3,), "int64"), T((2, 1), "int64")), (2, 3), "int64")
    assert_type(rel("where", T((ANY, 1), "bool"), T((1, 3)), T((1,))), (ANY, 3), "float32")
    assert_type(rel("where", T((5, 1, 1), "bool"), T((ANY,), "bool"), T((2, 1), "bool")), (5, 2, ANY), "bool")
    # Any condition dtype: TVM's where selects on `condition != 0` (topi::where).
    for cond in ["int32", "float32", "uint8"]:
        assert_type(rel("where", T((3,), cond), T((3,), "float64"), T((3,), "float64")), (3,), "float64")


def test_where_relation_errors():
    assert rel_error("where", T((3,), "bool"), T((3,)), T((3,), "int32")) == "data types float32 and int32 do not match"
    assert rel_error("where", T((3,), "bool"), T((2, 3)), T((4,))) == "incompatible broadcast shapes (2, 3) and (4,)"
    assert rel_error("where", T((5,), "bool"), T((3,)), T((1,))) == "incompatible broadcast shapes (5,) and (3,)"
    assert rel_error("where", TupleType([]), T((3,)), T((3,))) == "argument `condition` must be a tensor, got ()"
    assert rel_error("where", T((3,), "bool"), TupleType([]), T((3,))) == "argument `x` must be a tensor, got ()"
    assert rel_error("where", T((3,), "bool"), T((3,)), TupleType([])) == "argument `y` must be a tensor, got ()"


# ------------------------------------------------------------------ unary references


def _nonfinite_passthrough(fn):
    def f(v):
        if isinstance(v, (int, bool)) or not math.isfinite(v):
            return v
        r = float(fn(v))
        return math.copysign(r, v) if r == 0 else r  # floor/ceil/trunc/round keep the sign of zero
    return f


def _py_round(v):
    return decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)  # ties away from 0


def _safe(fn, on_error):
    def f(v):
        try:
            return fn(v)
        except (OverflowError, ValueError, ZeroDivisionError):
            return on_error(v)
    return f


def _py_log(v):
    return -INF if v == 0 else NAN if v < 0 else math.log(v)


def _py_rsqrt(v):
    return math.copysign(INF, v) if v == 0 else NAN if v < 0 else 1.0 / math.sqrt(v)


def _py_sigmoid(v):
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)  # the other side in the form that cannot overflow
    return e / (1.0 + e)


def _py_sign(v):
    return 1 if v > 0 else -1 if v < 0 else 0  # topi::sign's two selects: NaN -> 0, -0.0 -> +0.0


def _py_relu(v):
    return v if v > 0 else 0  # TIR Max(x, 0) is `x > 0 ? x : 0` on LLVM


# name -> (Python formula, dtypes, (f32, f64) relative tolerance, ONNX op, domain restriction for ONNX);
# erf is checked as 1 - erfc(x), which loses everything below ~1e-16 absolute.
UNARY = {
    "negative": (operator.neg, FLOATS + INTS, (0, 0), "Neg", None),
    "abs": (abs, FLOATS + INTS, (0, 0), "Abs", None),
    "exp": (_safe(math.exp, lambda v: INF), FLOATS, (2e-7, 1e-15), "Exp", None),
    "log": (_py_log, FLOATS, (2e-7, 1e-15), "Log", None),
    "sqrt": (lambda v: NAN if v < 0 else math.sqrt(v), FLOATS, (0, 0), "Sqrt", None),
    "rsqrt": (_py_rsqrt, FLOATS, (2e-7, 1e-15), None, None),
    "sigmoid": (_py_sigmoid, FLOATS, (5e-7, 1e-15), "Sigmoid", None),
    "tanh": (math.tanh, FLOATS, (2e-7, 1e-15), "Tanh", None),
    "erf": (lambda v: 1.0 - math.erfc(v), FLOATS, (2e-7, 1e-15), "Erf", None),
    "floor": (_nonfinite_passthrough(math.floor), FLOATS + INTS, (0, 0), "Floor", None),
    "ceil": (_nonfinite_passthrough(math.ceil), FLOATS + INTS, (0, 0), "Ceil", None),
    "round": (_nonfinite_passthrough(_py_round), FLOATS + INTS, (0, 0), "Round",
              lambda x: np.abs(np.nan_to_num(x) % 1) != 0.5),  # ONNX rounds ties to even
    "trunc": (_nonfinite_passthrough(math.trunc), FLOATS + INTS, (0, 0), None, None),
    "sign": (_py_sign, FLOATS + INTS, (0, 0), "Sign", lambda x: ~np.isnan(x)),
    "sin": (_safe(math.sin, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Sin", None),
    "cos": (_safe(math.cos, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Cos", None),
    # math.* on the float64 value, then rounded: NaN outside the domain, inf where it overflows
    "tan": (_safe(math.tan, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Tan", None),
    "asin": (_safe(math.asin, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Asin", None),
    "acos": (_safe(math.acos, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Acos", None),
    "atan": (_safe(math.atan, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Atan", None),
    "sinh": (_safe(math.sinh, lambda v: math.copysign(INF, v)), FLOATS, (2e-7, 1e-15), "Sinh", None),
    "cosh": (_safe(math.cosh, lambda v: INF), FLOATS, (2e-7, 1e-15), "Cosh", None),
    "asinh": (_safe(math.asinh, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Asinh", None),
    "acosh": (_safe(math.acosh, lambda v: NAN), FLOATS, (2e-7, 1e-15), "Acosh", None),
    "atanh": (_safe(math.atanh, lambda v: NAN if abs(v) > 1 else math.copysign(INF, v)), FLOATS, (2e-7, 1e-15),
              "Atanh", None),
    "nn.relu": (_py_relu, FLOATS + INTS, (0, 0), "Relu", lambda x: ~np.isnan(x)),
    "copy": (lambda v: v, FLOATS + INTS + ("bool",), (0, 0), "Identity", None),
    "zeros_like": (lambda v: 0, FLOATS + INTS + ("bool",), (0, 0), None, None),
    "ones_like": (lambda v: 1, FLOATS + INTS + ("bool",), (0, 0), None, None),
    "logical_not": (operator.not_, ("bool",), (0, 0), "Not", None),
    "annotation.stop_fusion": (lambda v: v, FLOATS + INTS + ("bool",), (0, 0), "Identity", None),
}
ONNX_UNARY_DTYPES = {"Erf": ("float32",), "Floor": FLOATS, "Ceil": FLOATS, "Round": FLOATS,
                     # onnxruntime implements these for float only
                     **{op: ("float32",) for op in ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                                                    "Atanh")}}


def test_unary_table_covers_every_unary_op():
    assert set(UNARY) == set(UNARY_NAMES)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, spec in UNARY.items() for d in spec[1]])
def test_unary_reference(name, dtype):
    fn, _, (t32, t64), _, _ = UNARY[name]
    x = data(dtype)
    rtol = t32 if dtype == "float32" else t64
    atol = 1e-16 if name == "erf" else 0.0
    check(run(name, x), pymap(fn, dtype, x), rtol=rtol, atol=atol, signed_zero=rtol == 0)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, spec in UNARY.items() if spec[3]
                                        for d in spec[1] if d in ONNX_UNARY_DTYPES.get(spec[3], d)])
def test_unary_vs_onnxruntime(name, dtype):
    _, _, (t32, t64), onnx_op, domain = UNARY[name]
    x = data(dtype).ravel()
    if domain is not None:
        x = x[domain(x)]
    rtol = max(t32 if dtype == "float32" else t64, 1e-6 if dtype == "float32" else 1e-14)
    atol = (1e-8 if dtype == "float32" else 1e-15) if name == "sigmoid" else 0.0  # onnxruntime's sigmoid tail
    np.testing.assert_allclose(run(name, x), onnx_run(onnx_op, [x], dtype), rtol=rtol, atol=atol, equal_nan=True)


def test_round_half_away_from_zero():
    # relay `round` -> topi::round -> tir.round -> llvm.round (intrin_rule_llvm.cc): ties away from zero,
    # unlike NumPy's and ONNX's half-to-even.
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.3, 4503599627370495.5], dtype="float64")
    check(run("round", x), np.array([1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.0, -0.0, 4503599627370496.0]))
    x32 = np.array([0.5, 2.5, -2.5, F32_JUST_BELOW_HALF, 8388607.5], dtype="float32")
    check(run("round", x32), np.array([1.0, 3.0, -3.0, 0.0, 8388608.0], dtype="float32"))


def test_sign_and_relu_of_nan_and_negative_zero():
    x = np.array([NAN, -0.0, 0.0, -INF], dtype="float32")
    check(run("sign", x), np.array([0.0, 0.0, 0.0, -1.0], dtype="float32"))
    check(run("nn.relu", x), np.array([0.0, 0.0, 0.0, 0.0], dtype="float32"))


def test_integer_rounding_ops_are_identity():
    x = np.array([2**62 + 1, -(2**62) - 1, 7], dtype="int64")  # not exact in float64
    for name in ["floor", "ceil", "round", "trunc"]:
        check(run(name, x), x)


# ------------------------------------------------------------------ binary references


def _int_trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_trunc_mod(a, b):
    return a - b * _int_trunc_div(a, b)


def f32(v):
    """Round a Python float to float32 (struct packs with round-to-nearest-even)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(INF, v)


def _float_div(a, b, rnd):
    if b == 0:
        return NAN if a == 0 or a != a else math.copysign(INF, a) * math.copysign(1.0, b)
    return rnd(a / b)


def _floor(q):
    if not math.isfinite(q):
        return q
    r = float(math.floor(q))
    return math.copysign(r, q) if r == 0 else r


def _float_floor_div(a, b, rnd):  # topi floor_divide for floats: floor(a / b), each step in the dtype
    return _floor(_float_div(a, b, rnd))


def _float_floor_mod(a, b, rnd):  # topi floor_mod for floats: a - floor(a / b) * b
    return a - rnd(_float_floor_div(a, b, rnd) * b)


def _is_odd_integer(b):
    return math.isfinite(b) and float(b).is_integer() and int(b) % 2 == 1


def _pow(a, b, rnd):
    if a == 0 and b < 0:
        return math.copysign(INF, a) if _is_odd_integer(b) else INF
    try:
        return math.pow(a, b)
    except ValueError:
        return NAN
    except OverflowError:
        return -INF if a < 0 and _is_odd_integer(b) else INF


def _fmod(a, b, rnd):
    try:
        return math.fmod(a, b)
    except ValueError:
        return NAN


# name -> (float formula (a, b, rounding to the dtype), int formula, ONNX op and attributes, ONNX dtypes)
BINARY = {
    "add": (lambda a, b, r: a + b, operator.add, ("Add", {}), FLOATS + INTS),
    "subtract": (lambda a, b, r: a - b, operator.sub, ("Sub", {}), FLOATS + INTS),
    "multiply": (lambda a, b, r: a * b, operator.mul, ("Mul", {}), FLOATS + INTS),
    "divide": (_float_div, _int_trunc_div, ("Div", {}), FLOATS + INTS),
    "floor_divide": (_float_floor_div, operator.floordiv, None, ()),
    "mod": (_fmod, _int_trunc_mod, ("Mod", {"fmod": 1}), FLOATS + INTS),
    "floor_mod": (_float_floor_mod, operator.mod, ("Mod", {"fmod": 0}), INTS),
    "power": (_pow, None, ("Pow", {}), FLOATS),
    "maximum": (lambda a, b, r: a if a > b else b, lambda a, b: a if a > b else b, ("Max", {}), FLOATS + INTS),
    "minimum": (lambda a, b, r: a if a < b else b, lambda a, b: a if a < b else b, ("Min", {}), FLOATS + INTS),
}
NEEDS_NONZERO = {"divide", "floor_divide", "mod", "floor_mod"}


def _binary_formula(name, dtype):
    f_float, f_int = BINARY[name][:2]
    if dtype in INTS:
        return f_int
    rnd = f32 if dtype == "float32" else float
    return lambda a, b: f_float(a, b, rnd)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, spec in BINARY.items() for d in FLOATS + INTS
                                        if d in FLOATS or spec[1] is not None])
def test_binary_reference(name, dtype):
    a, b = pairs(dtype, nonzero_rhs=dtype in INTS and name in NEEDS_NONZERO)
    out = run(name, a, b)
    assert out.shape == (a.shape[0], b.shape[1])
    rtol = (3e-7 if dtype == "float32" else 1e-15) if name == "power" else 0  # powf vs pow rounded to float
    check(out, pymap(_binary_formula(name, dtype), dtype, a, b), rtol=rtol)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, spec in BINARY.items() if spec[2] for d in spec[3]])
def test_binary_vs_onnxruntime(name, dtype):
    onnx_op, onnx_attrs = BINARY[name][2]
    a, b = pairs(dtype, nonzero_rhs=name in NEEDS_NONZERO)
    a, b = np.broadcast_arrays(a, b)
    keep = np.ones(a.shape, bool)
    if dtype in FLOATS and name in ("maximum", "minimum"):
        keep = ~(np.isnan(a) | np.isnan(b))  # ONNX propagates NaN; TVM's select does not
    a, b = np.ascontiguousarray(a[keep]), np.ascontiguousarray(b[keep])
    expected = onnx_run(onnx_op, [a, b], dtype, **onnx_attrs)
    np.testing.assert_allclose(run(name, a, b), expected, rtol=1e-6 if dtype == "float32" else 1e-15,
                               equal_nan=True)


def test_integer_division_and_modulo_signs():
    a = np.array([7, -7, 7, -7, 0, 1, -1], dtype="int32")
    b = np.array([2, 2, -2, -2, 3, -3, 3], dtype="int32")
    check(run("divide", a, b), np.array([3, -3, -3, 3, 0, 0, 0], dtype="int32"))        # truncdiv
    check(run("mod", a, b), np.array([1, -1, 1, -1, 0, 1, -1], dtype="int32"))          # truncmod
    check(run("floor_divide", a, b), np.array([3, -4, -4, 3, 0, -1, -1], dtype="int32"))  # floordiv
    check(run("floor_mod", a, b), np.array([1, 1, -1, -1, 0, -2, 2], dtype="int32"))    # floormod


def test_float_floor_divide_and_mod_use_floor_of_quotient():
    # topi: floor_divide = floor(a / b), floor_mod = a - floor(a / b) * b for floats; NumPy's
    # np.floor_divide(1, 0.1) is 9.0 and np.mod(1, 0.1) is 0.09999999999999995.
    a = np.array([1.0, -7.5, 7.5, -0.0, 5.0], dtype="float64")
    b = np.array([0.1, 2.0, -2.0, 3.0, INF], dtype="float64")
    check(run("floor_divide", a, b), np.array([10.0, -4.0, -4.0, -0.0, 0.0]))
    check(run("floor_mod", a, b), np.array([0.0, 0.5, -0.5, 0.0, NAN]))
    check(run("mod", a, b), np.array([math.fmod(1.0, 0.1), -1.5, 1.5, -0.0, 5.0]))
    check(run("divide", np.array([1.0, -1.0, 0.0], "float32"), np.array([0.0, 0.0, 0.0], "float32")),
          np.array([INF, -INF, NAN], "float32"))


def test_maximum_minimum_follow_tir_select():
    # TIR Max/Min lower to `a > b ? a : b` / `a < b ? a : b` (codegen_llvm.cc).
    a = np.array([NAN, 1.0, 0.0, -0.0], dtype="float32")
    b = np.array([1.0, NAN, -0.0, 0.0], dtype="float32")
    check(run("maximum", a, b), np.array([1.0, NAN, -0.0, 0.0], dtype="float32"))
    check(run("minimum", a, b), np.array([1.0, NAN, -0.0, 0.0], dtype="float32"))


@pytest.mark.parametrize("name", ["logical_and", "logical_or"])
def test_logical_binary_reference(name):
    a, b = np.array([[True], [False]]), np.array([[True, False]])
    fn = (lambda p, q: p and q) if name == "logical_and" else (lambda p, q: p or q)
    check(run(name, a, b), pymap(fn, "bool", a, b))
    np.testing.assert_array_equal(run(name, a, b), onnx_run({"logical_and": "And"}.get(name, "Or"),
                                                            list(np.broadcast_arrays(a, b)), "bool"))


def test_logical_not_reference():
    x = np.array([True, False])
    check(run("logical_not", x), np.array([False, True]))


COMPARE = {"equal": ("Equal", operator.eq), "not_equal": (None, operator.ne), "less": ("Less", operator.lt),
           "less_equal": ("LessOrEqual", operator.le), "greater": ("Greater", operator.gt),
           "greater_equal": ("GreaterOrEqual", operator.ge)}


@pytest.mark.parametrize("name", COMPARE_NAMES)
@pytest.mark.parametrize("dtype", FLOATS + INTS + ("bool",))
def test_compare_reference(name, dtype):
    onnx_op, fn = COMPARE[name]
    if dtype == "bool":
        a, b = np.array([[True], [False]]), np.array([[True, False]])
    else:
        a, b = pairs(dtype)
    if dtype == "int64":
        a = np.concatenate([a, [[2**63 - 1], [-(2**63)]]]).astype(dtype)  # not exact in float64
        b = np.concatenate([b, [[2**63 - 2]]], axis=1).astype(dtype)
    out = run(name, a, b)
    check(out, pymap(fn, "bool", a, b))
    if onnx_op and (dtype != "bool" or name == "equal"):
        np.testing.assert_array_equal(out, onnx_run(onnx_op, list(np.broadcast_arrays(a, b)), "bool"))


# ------------------------------------------------------------------ attributes, cast, where


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_clip_reference(dtype):
    x = data(dtype)
    for lo, hi in [(-1.5, 2.5), (0.0, 6.0), (-INF, 3.0), (-1e30, 1e30), (3.0, 1.0)]:
        def cast(v):
            if dtype in INTS:  # tvm::cast of the bound to the data's dtype; saturate what C++ leaves undefined
                info = np.iinfo(dtype)
                return min(max(math.trunc(v) if math.isfinite(v) else v, info.min), info.max)
            return f32(v) if dtype == "float32" else v
        c_lo, c_hi = cast(lo), cast(hi)

        def py_clip(v, c_lo=c_lo, c_hi=c_hi):  # topi::clip: max(min(x, a_max), a_min) as TIR selects
            t = v if v < c_hi else c_hi
            return t if t > c_lo else c_lo

        out = run("clip", x, a_min=lo, a_max=hi)
        check(out, pymap(py_clip, dtype, x))
        if lo <= hi and abs(lo) < 1e30 and (dtype in FLOATS or math.isfinite(lo)):
            keep = ~np.isnan(x) if dtype in FLOATS else np.ones(x.shape, bool)
            xs = x[keep]
            bounds = [np.array(lo, dtype), np.array(hi, dtype)]
            np.testing.assert_array_equal(run("clip", xs, a_min=lo, a_max=hi), onnx_run("Clip", [xs, *bounds], dtype))


def test_clip_nan_and_inverted_bounds():
    x = np.array([NAN, -5.0, 5.0], dtype="float32")
    check(run("clip", x, a_min=-1.0, a_max=1.0), np.array([1.0, -1.0, 1.0], dtype="float32"))
    check(run("clip", x, a_min=3.0, a_max=1.0), np.array([3.0, 3.0, 3.0], dtype="float32"))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_leaky_relu_reference(dtype):
    x = data(dtype)
    for alpha in [0.25, 0.1, 2.0]:
        # topi::leaky_relu: x > 0 ? x : x * cast(dtype, alpha)
        a = (f32(alpha) if dtype == "float32" else alpha) if dtype in FLOATS else math.trunc(alpha)
        check(run("nn.leaky_relu", x, alpha=alpha), pymap(lambda v, a=a: v if v > 0 else v * a, dtype, x))
        if dtype in FLOATS:  # an ONNX float attribute is a float32, also for a float64 LeakyRelu
            expected = onnx_run("LeakyRelu", [x], dtype, alpha=alpha)
            np.testing.assert_allclose(run("nn.leaky_relu", x, alpha=alpha), expected,
                                       rtol=0 if dtype == "float32" else 1e-7, equal_nan=True)
    assert run("nn.leaky_relu", np.array([-3.0, 3.0], dtype)).tolist() == ([-0.75, 3.0] if dtype in FLOATS
                                                                           else [0, 3])


def _wrap(v, bits):
    return (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


CASTS = [
    ("float32", "int32", lambda v: math.trunc(v)),
    ("float64", "int64", lambda v: math.trunc(v)),
    ("float64", "float32", f32),
    ("float32", "float64", lambda v: v),
    ("int32", "float32", lambda v: f32(float(v))),
    ("int64", "float64", float),
    ("int64", "int32", lambda v: _wrap(v, 32)),
    ("int32", "int64", lambda v: v),
    ("int32", "bool", lambda v: v != 0),
    ("float32", "bool", lambda v: v != 0),
    ("bool", "float32", lambda v: 1.0 if v else 0.0),
    ("bool", "int32", lambda v: 1 if v else 0),
    ("float64", "uint8", lambda v: math.trunc(v)),
]


@pytest.mark.parametrize("src,dst,fn", CASTS)
def test_cast_reference(src, dst, fn):
    if src == "bool":
        x = np.array([True, False, True])
    elif src in FLOATS:
        x = np.array([0.0, -0.0, 0.7, -0.7, 1.5, -2.5, 100.9, 3.0000001, 16777217.0, 1e-40], dtype=src)
        if dst == "uint8":
            x = np.abs(x[np.abs(x) < 256])  # fptoui of anything outside [0, 256) is undefined
    else:
        x = np.array([0, 1, -1, 16777217, -(2**31), 2**31 - 1] + ([2**40 + 5, -(2**40) - 7] if src == "int64" else []),
                     dtype=src)
    out = run("cast", x, dtype=dst)
    check(out, pymap(fn, dst, x))
    np.testing.assert_array_equal(out, onnx_run("Cast", [x], dst, to=helper.np_dtype_to_tensor_dtype(np.dtype(dst))))


def test_where_reference():
    cond = np.array([True, False]).reshape(2, 1, 1)
    x = np.arange(3, dtype="float32").reshape(1, 3, 1)
    y = np.array([-1.0, -2.0, NAN, -0.0], dtype="float32")
    out = run("where", cond, x, y)
    expected = np.empty((2, 3, 4), dtype="float32")
    for i in range(2):
        for j in range(3):
            for k in range(4):
                expected[i, j, k] = x[0, j, 0] if cond[i, 0, 0] else y[k]
    check(out, expected)
    np.testing.assert_array_equal(out, onnx_run("Where", [cond, x, y], "float32"))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64", "bool"])
def test_where_reference_dtypes(dtype):
    cond = np.array([[1, 0, -3]], dtype="int32")  # a non-bool condition: non-zero selects x
    x = np.array([[1], [0]], dtype=dtype)
    y = np.array([0, 1, 1], dtype=dtype)
    out = run("where", cond, x, y)
    check(out, pymap(lambda c, a, b: a if c != 0 else b, dtype, cond, x, y))
    if dtype != "bool":
        bcond = (cond != 0)
        np.testing.assert_array_equal(out, onnx_run("Where", [bcond, x, y], dtype))


# ------------------------------------------------------------------ bitwise operators and shifts

UINTS = ("uint8", "uint16", "uint32", "uint64")
BITWISE = {  # name -> (Python formula on the element values, ONNX op and attributes)
    "bitwise_and": (operator.and_, ("BitwiseAnd", {})),
    "bitwise_or": (operator.or_, ("BitwiseOr", {})),
    "bitwise_xor": (operator.xor, ("BitwiseXor", {})),
    "left_shift": (operator.lshift, ("BitShift", {"direction": "LEFT"})),
    "right_shift": (operator.rshift, ("BitShift", {"direction": "RIGHT"})),
}


def _bit_pairs(name, dtype):
    info = np.iinfo(dtype)
    lhs = np.array(sorted({0, 1, 2, 3, 5, 100, info.max, info.max // 3, info.min, info.min + 1}), dtype=dtype)
    if name.endswith("shift"):  # shift amounts within the width (LLVM leaves wider ones undefined)
        rhs = np.array([0, 1, 3, info.bits - 1], dtype=dtype)
    else:
        rhs = lhs
    return lhs[:, None], rhs[None, :]


@pytest.mark.parametrize("name,dtype", [(n, d) for n in BITWISE for d in INTS + UINTS + ("int8",)])
def test_bitwise_reference(name, dtype):
    a, b = _bit_pairs(name, dtype)
    bits = np.iinfo(dtype).bits

    def wrap(v):  # the result in the element type (two's complement for the signed types)
        v &= (1 << bits) - 1
        return v - (1 << bits) if dtype.startswith("int") and v >= 1 << (bits - 1) else v

    check(run(name, a, b), pymap(lambda x, y: wrap(BITWISE[name][0](x, y)), dtype, a, b))


@pytest.mark.parametrize("name,dtype", [(n, d) for n in BITWISE for d in ("uint8", "uint32", "int32")
                                        if not (n.endswith("shift") and d == "int32")])  # BitShift: uint only
def test_bitwise_vs_onnxruntime(name, dtype):
    onnx_op, attrs = BITWISE[name][1]
    a, b = np.broadcast_arrays(*_bit_pairs(name, dtype))
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    check(run(name, a, b), onnx_run(onnx_op, [a, b], dtype, **attrs))


def test_bitwise_not_and_logical_xor():
    x = np.array([0, 1, -1, 127, -128], "int8")
    check(run("bitwise_not", x), np.array([-1, -2, 0, -128, 127], "int8"))
    check(run("bitwise_not", x.view("uint8")), np.array([255, 254, 0, 128, 127], "uint8"))
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    check(run("logical_xor", a, b), np.array([False, True, True, False]))


@pytest.mark.parametrize("name", [*BITWISE, "bitwise_not"])
def test_bitwise_relation_rejects_floats(name):
    args = [T((2,), "float32")] * (1 if name == "bitwise_not" else 2)
    assert "integer" in rel_error(name, *args)
    if name != "bitwise_not":
        assert_type(rel(name, T((2, 1), "uint8"), T((3,), "uint8")), (2, 3), "uint8")


def test_reinterpret():
    x = np.array([1.0, -0.0, np.inf], "float32")
    check(run("reinterpret", x, dtype="int32"), x.view("int32"))
    check(run("reinterpret", np.array(1.5, "float32"), dtype="uint32"), np.array(0x3FC00000, "uint32"))
    check(run("reinterpret", np.array([True, False]), dtype="uint8"), np.array([1, 0], "uint8"))
    assert "widths differ" in rel_error("reinterpret", T((2,), "float32"), dtype="int64")
@pytest.mark.parametrize("name, expected", [("isnan", [False, False, True, False, False]),
                                            ("isinf", [False, True, False, True, False])])
def test_isnan_isinf_give_bool_of_the_input_shape(name, expected):
    op = lookup(name)
    x = np.array([1.0, np.inf, np.nan, -np.inf, -0.0], "float32")
    t = op.type_rel([TensorType((5,), "float32")], None)
    assert (t.shape, t.dtype) == ((5,), "bool")
    out = op.ref(x)
    assert out.dtype == np.bool_ and out.tolist() == expected
    # integers are never NaN or infinite (TOPI gives a constant false)
    assert not op.ref(np.arange(4, dtype="int32")).any()
