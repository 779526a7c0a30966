"""ONNX elementwise, activation, comparison and reduction converters, compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.frontend.onnx import OnnxImportError  # noqa: E402

_NP_TO_ONNX = {np.dtype(v): k for k, v in {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
                                            9: "bool", 10: "float16", 11: "float64"}.items()}
RNG = np.random.default_rng(0)


def _model(op_type, inputs: dict, consts: dict, attrs: dict, opset: int, n_out: int = 1):
    """A one-node model: `inputs` are graph inputs, `consts` initializers ("" skips an input)."""
    names = []
    for name in list(inputs) + list(consts):
        names.append(name)
    order = attrs.pop("_order", names)
    node = helper.make_node(op_type, order, [f"out{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, _NP_TO_ONNX[v.dtype], v.shape) for k, v in inputs.items()],
        [onnx.ValueInfoProto(name=f"out{i}") for i in range(n_out)],
        initializer=[onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _irtool(model, inputs):
    mod, _ = from_onnx(model)
    out = irtool.interpret(mod, dict(inputs))
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else [np.asarray(out)]


def check(op_type, inputs: dict, attrs=None, opset=13, consts=None, rtol=1e-5, atol=1e-6):
    """Import, interpret and compare with onnxruntime (values and dtypes)."""
    model = _model(op_type, inputs, consts or {}, dict(attrs or {}), opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, inputs)
    got = _irtool(model, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape, (g.shape, e.shape)
        if np.issubdtype(e.dtype, np.floating):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)


def f32(*shape, scale=1.0, positive=False):
    x = RNG.standard_normal(shape).astype(np.float32) * scale
    return np.abs(x) + np.float32(0.1) if positive else x


def ints(*shape, dtype=np.int32, low=-9, high=10):
    return RNG.integers(low, high, shape).astype(dtype)


# ----------------------------------------------------------------------------- unary


@pytest.mark.parametrize("op", ["Neg", "Abs", "Exp", "Tanh", "Sigmoid", "Relu", "Floor", "Ceil", "Softplus"])
@pytest.mark.parametrize("opset", [6, 13])
def test_unary(op, opset):
    check(op, {"x": f32(2, 3, 4, scale=3)}, opset=opset)


@pytest.mark.parametrize("op", ["Sqrt", "Log", "Reciprocal"])
def test_unary_positive(op):
    check(op, {"x": f32(3, 4, positive=True)})


def test_erf():
    check("Erf", {"x": f32(3, 5, scale=2)}, opset=9)
    check("Erf", {"x": f32(3, 5, scale=2)}, opset=13)


def test_softplus_large():
    check("Softplus", {"x": np.array([-100, -20, -1, 0, 1, 20, 100], np.float32)})


@pytest.mark.parametrize("op", ["Neg", "Abs", "Relu"])
def test_unary_int(op):
    check(op, {"x": ints(3, 4)}, opset=14)


def test_not():
    check("Not", {"x": RNG.random((3, 4)) > 0.5}, opset=1)


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.3, "beta": 0.4}])
def test_hard_sigmoid(attrs):
    check("HardSigmoid", {"x": f32(4, 5, scale=4)}, attrs, opset=6)


def test_hard_swish():
    check("HardSwish", {"x": np.linspace(-5, 5, 41, dtype=np.float32)}, opset=14)


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.2}])
def test_leaky_relu(attrs):
    check("LeakyRelu", {"x": f32(3, 4)}, attrs, opset=16)


@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.5}])
def test_elu(attrs):
    check("Elu", {"x": f32(3, 4, scale=2)}, attrs, opset=6)


@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (4,), (2, 3, 4, 4)[1:]])
def test_prelu(slope_shape):
    check("PRelu", {"x": f32(2, 3, 4, 4), "s": f32(*slope_shape)}, opset=9)
    check("PRelu", {"x": f32(2, 3, 4, 4)}, consts={"s": f32(*slope_shape)}, opset=16)


# ----------------------------------------------------------------------------- binary


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("opset", [7, 13, 14])
def test_arith(op, opset):
    check(op, {"a": f32(2, 3, 4), "b": f32(3, 1, positive=True)}, opset=opset)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_arith_int(op):
    b = ints(3, 4, low=1, high=5) * np.where(RNG.random((3, 4)) > 0.5, 1, -1).astype(np.int32)
    check(op, {"a": ints(2, 3, 4, low=-20, high=21), "b": b}, opset=14)
    check(op, {"a": ints(3, 4, dtype=np.int64, low=-20, high=21), "b": b.astype(np.int64)}, opset=14)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_mod(fmod, dtype):
    """fmod=0: the divisor's sign (floats too, which opset 28 allows and onnxruntime computes
    as NumPy's mod, infinities and signed zeros included); fmod=1: the dividend's;
    broadcasting."""
    if dtype.startswith("int"):
        if not fmod and dtype == "int64":  # torch's transformer: positions modulo a length
            check("Mod", {"a": np.arange(-6, 6, dtype=dtype).reshape(3, 4)}, {"fmod": fmod},
                  consts={"b": np.array([4, -3, 5, 1], dtype)})
        a, b = ints(4, 5, dtype=dtype), ints(5, dtype=dtype, low=1, high=6) * np.array([1, -1, 1, -1, 1], dtype)
    else:
        a = np.array([[7.5, -7.5, 0.0, -0.0, 3.0], [-1.0, 1.0, 2.5, -2.5, 1e-3]], dtype)
        b = np.array([2.0, 2.0, -3.0, 3.0, -np.inf], dtype)
        if not fmod:
            a[1, 4] = -1e-3  # -1e-3 mod -inf is -1e-3; 1e-3 mod -inf is -inf
    check("Mod", {"a": a, "b": b}, {"fmod": fmod}, opset=28 if dtype.startswith("float") and not fmod else 13)


def test_div_int_truncates():
    a = np.array([7, -7, 7, -7, 6, -1], np.int32)
    b = np.array([2, 2, -2, -2, 4, 3], np.int32)
    check("Div", {"a": a, "b": b}, opset=13)


def test_pow():
    check("Pow", {"a": f32(3, 4, positive=True), "b": f32(4)}, opset=7)
    check("Pow", {"a": f32(3, 4)}, consts={"b": np.float32(2)}, opset=13)
    check("Pow", {"a": f32(3, 4)}, consts={"b": np.int64(3)}, opset=15)
    check("Pow", {"a": ints(3, 4, low=-4, high=5)}, consts={"b": np.int32(3)}, opset=15)
    check("Pow", {"a": ints(3, 4, dtype=np.int64, low=0, high=9)}, consts={"b": np.float32(0.5)}, opset=15)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater"])
@pytest.mark.parametrize("opset", [7, 13])
def test_compare(op, opset):
    a = ints(2, 3, 4, low=-2, high=3)
    float_opset = max(opset, 11) if op == "Equal" else opset  # float Equal from opset 11
    check(op, {"a": a.astype(np.float32), "b": ints(4, low=-2, high=3).astype(np.float32)}, opset=float_opset)
    check(op, {"a": a, "b": ints(3, 1, low=-2, high=3)}, opset=max(opset, 9))  # integer Less/Greater from 9


@pytest.mark.parametrize("op", ["And", "Or"])
def test_logical(op):
    check(op, {"a": RNG.random((2, 3, 4)) > 0.5, "b": RNG.random((3, 4)) > 0.5}, opset=7)


@pytest.mark.parametrize("op,fn", [("Add", np.add), ("Mul", np.multiply), ("Sub", np.subtract),
                                   ("Equal", np.equal)])
def test_legacy_broadcast(op, fn):
    # opset < 7 (onnxruntime has no kernels for it): `broadcast=1` aligns `b` at `axis`
    a = ints(2, 3, 4, 5).astype(np.float32)
    b = ints(3, 4).astype(np.float32)
    model = _model(op, {"a": a, "b": b}, {}, {"broadcast": 1, "axis": 1}, opset=6 if op != "Equal" else 1)
    np.testing.assert_array_equal(_irtool(model, {"a": a, "b": b})[0], fn(a, b[None, :, :, None]))
    c = ints(5).astype(np.float32)
    model = _model(op, {"a": a, "c": c}, {}, {"broadcast": 1}, opset=6 if op != "Equal" else 1)
    np.testing.assert_array_equal(_irtool(model, {"a": a, "c": c})[0], fn(a, c))
    model = _model(op, {"a": a, "c": c}, {}, {"broadcast": 1, "axis": 3}, opset=6 if op != "Equal" else 1)
    np.testing.assert_array_equal(_irtool(model, {"a": a, "c": c})[0], fn(a, c))


def test_legacy_broadcast_bad_axis():
    a, b = f32(2, 3), f32(3, 4)
    with pytest.raises(OnnxImportError, match="cannot broadcast"):
        from_onnx(_model("Add", {"a": a, "b": b}, {}, {"broadcast": 1, "axis": 1}, opset=6))


# ----------------------------------------------------------------------------- Clip


def test_clip_attrs():
    check("Clip", {"x": f32(3, 4, scale=3)}, {"min": -1.0, "max": 0.5}, opset=6)
    check("Clip", {"x": f32(3, 4, scale=3)}, {"max": 0.5}, opset=6)
    check("Clip", {"x": f32(3, 4, scale=3)}, {}, opset=6)


def test_clip_inputs():
    x = f32(3, 4, scale=3)
    check("Clip", {"x": x}, opset=11, consts={"lo": np.float32(-1), "hi": np.float32(0.5)})
    check("Clip", {"x": x}, {"_order": ["x", "", "hi"]}, opset=11, consts={"hi": np.float32(0.5)})
    check("Clip", {"x": x}, opset=13, consts={"lo": np.float32(-1)})
    check("Clip", {"x": x}, opset=13)
    # bounds that are graph inputs, and min > max (everything becomes max)
    check("Clip", {"x": x, "lo": np.array(-0.5, np.float32), "hi": np.array(1, np.float32)}, opset=13)
    check("Clip", {"x": x}, opset=13, consts={"lo": np.float32(1), "hi": np.float32(-1)})


def test_clip_int():
    x = ints(3, 4, dtype=np.int64, low=-100, high=100)
    check("Clip", {"x": x}, opset=12, consts={"lo": np.int64(-10), "hi": np.int64(20)})
    check("Clip", {"x": ints(3, 4)}, {"_order": ["x", "lo"]}, opset=13, consts={"lo": np.int32(0)})


# ----------------------------------------------------------------------------- Cast, Where


@pytest.mark.parametrize("to", [TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL,
                                TensorProto.DOUBLE, TensorProto.INT8, TensorProto.UINT8])
def test_cast(to):
    check("Cast", {"x": f32(3, 4, scale=5)}, {"to": to}, opset=13)
    check("Cast", {"x": ints(3, 4)}, {"to": to}, opset=6)


def test_cast_unsupported():
    with pytest.raises(OnnxImportError, match="Cast"):
        from_onnx(_model("Cast", {"x": f32(2)}, {}, {"to": TensorProto.STRING}, opset=13))


def test_where():
    check("Where", {"c": RNG.random((3, 1)) > 0.5, "x": f32(2, 3, 4), "y": f32(4)}, opset=9)
    check("Where", {"c": RNG.random((3, 4)) > 0.5, "x": ints(3, 4), "y": ints(1)}, opset=16)


# ----------------------------------------------------------------------------- variadic


@pytest.mark.parametrize("op", ["Sum", "Max", "Min", "Mean"])
def test_variadic(op):
    check(op, {"a": f32(2, 3, 4)}, opset=13)
    check(op, {"a": f32(2, 3, 4), "b": f32(3, 1), "c": f32(4)}, opset=8)
    check(op, {"a": f32(3, 4), "b": f32(3, 4)}, opset=6)


@pytest.mark.parametrize("op", ["Max", "Min"])  # onnxruntime's Sum is float-only
def test_variadic_int(op):
    check(op, {"a": ints(3, 4), "b": ints(4), "c": ints(3, 1)}, opset=13)


# ----------------------------------------------------------------------------- reductions

REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]
_AXES_INPUT_FROM = {"ReduceSum": 13}


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("attrs", [{}, {"axes": [1]}, {"axes": [0, -1], "keepdims": 0}, {"keepdims": 0},
                                   {"axes": [-2], "keepdims": 1}])
def test_reduce_axes_attribute(op, attrs):
    opset = 11 if op == "ReduceSum" else 13
    check(op, {"x": f32(2, 3, 4, positive=op == "ReduceProd")}, dict(attrs), opset=opset)
    check(op, {"x": f32(2, 3, 4, positive=op == "ReduceProd")}, dict(attrs), opset=1)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("case", [
    ({}, None), ({}, [1]), ({"keepdims": 0}, [0, -1]), ({}, []), ({"noop_with_empty_axes": 1}, []),
    ({"noop_with_empty_axes": 1}, None), ({"keepdims": 0, "noop_with_empty_axes": 1}, [2]),
])
def test_reduce_axes_input(op, case):
    attrs, axes = case
    opset = _AXES_INPUT_FROM.get(op, 18)
    x = f32(2, 3, 4, positive=op == "ReduceProd")
    consts = {} if axes is None else {"axes": np.array(axes, np.int64)}
    check(op, {"x": x}, attrs, opset=opset, consts=consts)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_reduce_int(op):
    check(op, {"x": ints(2, 3, 4, low=-3, high=4)}, {"axes": [1]}, opset=13 if op != "ReduceSum" else 11)


def test_reduce_axes_not_constant():
    model = _model("ReduceSum", {"x": f32(2, 3), "axes": np.array([1], np.int64)}, {}, {}, opset=13)
    with pytest.raises(OnnxImportError, match="axes"):
        from_onnx(model)


@pytest.mark.parametrize("opset", [1, 11, 12, 13])
@pytest.mark.parametrize("attrs", [{}, {"axis": 1}, {"axis": -1, "keepdims": 0}])
def test_argmax(opset, attrs):
    check("ArgMax", {"x": f32(3, 4, 5)}, attrs, opset=opset)


@pytest.mark.parametrize("select_last_index", [0, 1])
def test_argmax_ties(select_last_index):
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [0, 5, 1, 5]], np.float32)
    check("ArgMax", {"x": x}, {"axis": 1, "select_last_index": select_last_index}, opset=12)
    check("ArgMax", {"x": x}, {"axis": 0, "keepdims": 0, "select_last_index": select_last_index}, opset=13)


def test_float64():
    x = RNG.standard_normal((3, 4))
    check("Div", {"a": x, "b": np.abs(x[:1]) + 0.5})
    check("Reciprocal", {"x": np.abs(x) + 0.5})
    check("Clip", {"x": x}, opset=13, consts={"lo": np.float64(-0.5), "hi": np.float64(0.5)})
    # onnxruntime has float-only kernels for these: compare with their formulas
    # (float attributes are float32 in the proto)
    a07, a03 = float(np.float32(0.7)), float(np.float32(0.3))
    for op, attrs, want in [
        ("HardSwish", {}, x * np.clip(x / 6 + 0.5, 0, 1)),
        ("Softplus", {}, np.log1p(np.exp(x))),
        ("Elu", {"alpha": 0.7}, np.where(x > 0, x, a07 * np.expm1(x))),
        ("HardSigmoid", {"alpha": 0.3}, np.clip(a03 * x + 0.5, 0, 1)),
        ("Mean", {}, x),
    ]:
        got = _irtool(_model(op, {"x": x}, {}, attrs, opset=14), {"x": x})[0]
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_extremum_empty_set(op, dtype, keepdims):
    """Reducing a statically empty axis gives onnx's identity value (-inf/+inf for floats,
    the type's extremes for integers), folded to a constant of the output shape."""
    x = np.zeros((2, 0, 4), dtype)
    check(op, {"x": x}, {"keepdims": keepdims}, opset=18, consts={"axes": np.asarray([1], "int64")})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_extremum_of_infinities(op, dtype, keepdims):
    """A set of only -inf has the max -inf (ONNX, onnxruntime), where Relay's max (TOPI's)
    starts from the lowest finite float and gives -3.4e38; min likewise with +inf. A row that
    also holds the lowest finite value or +inf keeps the plain reduction's result."""
    inf = np.inf if op == "ReduceMax" else -np.inf
    lowest = np.finfo(dtype).min if op == "ReduceMax" else np.finfo(dtype).max
    x = np.array([[-inf, -inf, -inf], [-inf, lowest, -inf], [1.0, -inf, 2.0], [-inf, inf, -inf]], dtype)
    for axes in ([1], [0, 1]):
        check(op, {"x": x}, {"keepdims": keepdims}, opset=18, consts={"axes": np.asarray(axes, "int64")})


# ----------------------------------------------------------------------------- quantisation and rounding


def test_round_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -3.7, 4.2, 1e10 + 0.5], np.float32)
    check("Round", {"x": x}, opset=11)


@pytest.mark.parametrize("zp_dtype", [np.uint8, np.int8, np.int16])
def test_quantize_linear_per_tensor_saturates_and_rounds_to_even(zp_dtype):
    x = np.array([[-1000.0, -2.5, -1.5, -0.5, 0.5, 1.5], [2.5, 3.49, 100.0, 254.5, 255.5, 1e6]], np.float32)
    opset = 21 if zp_dtype == np.int16 else 13  # 16-bit types from opset 21
    check("QuantizeLinear", {"x": x}, consts={"scale": np.float32(1.0), "zp": np.array(3, zp_dtype)}, opset=opset)


def test_quantize_and_dequantize_per_axis():
    x = f32(2, 3, 4, scale=20)
    scale = np.array([0.5, 1.0, 2.0], np.float32)
    zp = np.array([0, 10, 250], np.uint8)
    check("QuantizeLinear", {"x": x}, consts={"scale": scale, "zp": zp}, attrs={"axis": 1}, opset=13)
    q = RNG.integers(0, 256, size=(2, 3, 4)).astype(np.uint8)
    check("DequantizeLinear", {"q": q}, consts={"scale": scale, "zp": zp}, attrs={"axis": 1}, opset=13)


def test_dequantize_without_zero_point_and_int32():
    q = RNG.integers(-1000, 1000, size=(5,)).astype(np.int32)
    check("DequantizeLinear", {"q": q}, consts={"scale": np.float32(0.25)}, opset=13)


def test_qlinear_matmul_and_conv():
    a = RNG.integers(0, 256, size=(3, 5)).astype(np.uint8)
    consts = {"a_scale": np.float32(0.05), "a_zp": np.uint8(120), "b": RNG.integers(0, 256, size=(5, 4)).astype(np.uint8),
              "b_scale": np.float32(0.02), "b_zp": np.uint8(130), "y_scale": np.float32(0.1), "y_zp": np.uint8(128)}
    check("QLinearMatMul", {"a": a}, consts=consts, opset=13)
    x = RNG.integers(0, 256, size=(1, 2, 6, 6)).astype(np.uint8)
    consts = {"x_scale": np.float32(0.03), "x_zp": np.uint8(100), "w": RNG.integers(0, 256, size=(3, 2, 3, 3)).astype(np.uint8),
              "w_scale": np.array([0.01, 0.02, 0.04], np.float32), "w_zp": np.array([128, 128, 128], np.uint8),
              "y_scale": np.float32(0.5), "y_zp": np.uint8(10), "bias": np.array([100, -50, 7], np.int32)}
    check("QLinearConv", {"x": x}, consts=consts, attrs={"pads": [1, 1, 1, 1]}, opset=13)


# ----------------------------------------------------------------------------- DFT


@pytest.mark.parametrize("inverse,onesided,complex_in,length", [
    (0, 0, False, None), (0, 1, False, None), (0, 0, True, 12), (1, 0, True, None), (0, 1, True, 7), (0, 0, False, 5)])
def test_dft_matches_numpy(inverse, onesided, complex_in, length):
    from onnx.reference import ReferenceEvaluator

    x = f32(2, 8, 3, 2 if complex_in else 1)
    inputs = ["x"] + (["len"] if length else [])
    inits = [onnx.numpy_helper.from_array(np.array(length, np.int64), "len")] if length else []
    node = helper.make_node("DFT", inputs, ["y"], axis=1, inverse=inverse, onesided=onesided)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [onnx.ValueInfoProto(name="y")], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = _irtool(model, {"x": x})[0]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("frame_step,frame_length,window,onesided,complex_in", [
    (8, 16, False, 1, False), (5, None, True, 1, False), (4, 12, True, 0, False), (6, 10, False, 0, True)])
def test_stft_matches_onnxruntime(frame_step, frame_length, window, onesided, complex_in):
    """Frames every frame_step samples, windowed, then the DFT; the lengths must be known at import."""
    x = f32(2, 40, 2 if complex_in else 1)
    consts = {"step": np.array(frame_step, np.int64)}
    order = ["x", "step"]
    if window:
        consts["window"] = np.hanning(10 if frame_length is None else frame_length).astype(np.float32)
    order.append("window" if window else "")
    if frame_length is not None:
        consts["length"] = np.array(frame_length, np.int64)
        order.append("length")
    check("STFT", {"x": x}, {"onesided": onesided, "_order": order}, opset=17, consts=consts, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bins,length,rate,low,high,dtype", [
    (8, 16, 8192, 0.0, 4096.0, None), (10, 64, 16000, 20.0, 7600.0, TensorProto.DOUBLE),
    (4, 9, 1000, 100.0, 450.0, None)])
def test_mel_weight_matrix_matches_onnxruntime(bins, length, rate, low, high, dtype):
    consts = {"bins": np.array(bins, np.int32), "length": np.array(length, np.int32), "rate": np.array(rate, np.int32),
              "low": np.array(low, np.float32), "high": np.array(high, np.float32)}
    check("MelWeightMatrix", {}, {} if dtype is None else {"output_datatype": dtype}, opset=17, consts=consts)
