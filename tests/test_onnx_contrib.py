"""The deprecated/experimental ops (legacy.py), onnxruntime's quantised ops (qlinear.py),
transformer contrib ops (contrib.py), MaxRoiPool and MaxUnpool (vision.py), against
onnxruntime; the experimental ops that no runtime has any more against NumPy formulas of
their definitions."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import OnnxImportError, from_onnx, supported_ops
from irtool.ir.types import ANY

DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
          "uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
          "uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32}
RNG = np.random.default_rng(15)
MS = "com.microsoft"


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, DTYPES[str(a.dtype)], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, DTYPES[d], None) for n, d in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
                             ir_version=7)


def _ours(model, inputs):
    mod, _ = from_onnx(model)
    results = []
    for m in (mod, irtool.parse(irtool.to_text(mod), "reparsed.ir")):
        got = irtool.interpret(m, dict(inputs))
        results.append([np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])])
    return results


def check(nodes, inputs, outputs=(("y", "float32"),), inits=(), opset=13, atol=1e-5):
    """Import, run in the interpreter (also through the printed text), compare with
    onnxruntime. Quantised outputs are compared exactly unless `atol` allows one step."""
    model = _model(nodes, inputs, list(outputs), inits, opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, dict(inputs))
    for got in _ours(model, inputs):
        assert len(got) == len(expected)
        for e, g in zip(expected, got, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
            np.testing.assert_allclose(g.astype("float64"), e.astype("float64"), rtol=1e-5, atol=atol)


def check_numpy(nodes, inputs, expected, outputs=(("y", "float32"),), inits=(), opset=13):
    model = _model(nodes, inputs, list(outputs), inits, opset)
    for got in _ours(model, inputs):
        np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)


def node(op, ins, outs=("y",), domain="", **attrs):
    return helper.make_node(op, list(ins), list(outs), domain=domain, **attrs)


X = RNG.standard_normal((2, 3, 4, 5)).astype("float32")

# ----------------------------------------------------------------------------- legacy.py


def test_experimental_elementwise_ops_follow_their_definitions():
    check_numpy([node("Affine", ["x"], alpha=2.0, beta=-0.5)], {"x": X}, 2.0 * X - 0.5, opset=1)
    check_numpy([node("Scale", ["x"], scale=3.0)], {"x": X}, 3.0 * X, opset=1)
    check_numpy([node("ScaledTanh", ["x"], alpha=1.5, beta=0.5)], {"x": X}, 1.5 * np.tanh(0.5 * X), opset=1)
    check_numpy([node("ParametricSoftplus", ["x"], alpha=2.0, beta=0.5)], {"x": X},
                2.0 * np.log1p(np.exp(0.5 * X)), opset=1)


def test_fc_flattens_and_adds_the_bias():
    w = RNG.standard_normal((6, 60)).astype("float32")
    b = RNG.standard_normal(6).astype("float32")
    check_numpy([node("FC", ["x", "w", "b"])], {"x": X}, X.reshape(2, 60) @ w.T + b,
                inits={"w": w, "b": b}, opset=1)
    w3 = RNG.standard_normal((7, 4, 5)).astype("float32")  # axis_w=1 flattens W to (7, 20)
    check_numpy([node("FC", ["x", "w"], axis=2)], {"x": X}, X.reshape(6, 20) @ w3.reshape(7, 20).T,
                inits={"w": w3}, opset=1)


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_spatial_bn(order):
    c = 3 if order == "NCHW" else 5
    scale, bias, mean = (RNG.standard_normal(c).astype("float32") for _ in range(3))
    var = RNG.uniform(0.5, 2, c).astype("float32")
    shape = (1, c, 1, 1) if order == "NCHW" else (1, 1, 1, c)
    expected = (X - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * scale.reshape(shape) + \
        bias.reshape(shape)
    check_numpy([node("SpatialBN", ["x", "s", "b", "m", "v"], epsilon=1e-3, order=order, is_test=1)], {"x": X},
                expected, inits={"s": scale, "b": bias, "m": mean, "v": var}, opset=1)


@pytest.mark.parametrize("mode, scales", [("nearest", [1, 1, 2, 3]), ("nearest", [1, 1, 1.5, 2.5]),
                                          ("linear", [1, 1, 2, 2]), ("linear", [1, 1, 1.5, 2.5])])
def test_upsample_opset9(mode, scales):
    check([node("Upsample", ["x", "s"], mode=mode)], {"x": X}, inits={"s": np.array(scales, "float32")}, opset=9)


def test_upsample_opset7_attribute():
    check([node("Upsample", ["x"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0])], {"x": X}, opset=7)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):
    check([node("GlobalLpPool", ["x"], p=p)], {"x": X})


def test_matmul_integer_with_per_row_and_per_column_zero_points():
    a = RNG.integers(0, 255, (4, 6)).astype("uint8")
    b = RNG.integers(-128, 127, (6, 3)).astype("int8")
    az, bz = np.array([3, 100, 0, 255], "uint8"), np.array([-1, 5, 0], "int8")
    check([node("MatMulInteger", ["a", "b", "az", "bz"])], {"a": a, "b": b}, [("y", "int32")],
          inits={"az": np.array(7, "uint8"), "bz": bz})
    # onnxruntime takes only a scalar a_zero_point; the spec allows one per row of A
    expected = (a.astype("int32") - az.astype("int32")[:, None]) @ (b.astype("int32") - bz.astype("int32"))
    check_numpy([node("MatMulInteger", ["a", "b", "az", "bz"])], {"a": a, "b": b}, expected, [("y", "int32")],
                inits={"az": az, "bz": bz})
    check([node("MatMulInteger", ["a", "b", "az"])], {"a": a, "b": b}, [("y", "int32")],
          inits={"az": np.array(12, "uint8")})
    a3 = RNG.integers(0, 255, (2, 4, 6)).astype("uint8")
    check([node("MatMulInteger", ["a", "b"])], {"a": a3, "b": b}, [("y", "int32")])


def test_matmul_integer16():
    a = RNG.integers(-32768, 32767, (3, 5)).astype("int16")
    b = RNG.integers(-32768, 32767, (5, 2)).astype("int16")
    check([node("MatMulInteger16", ["a", "b"], domain=MS)], {"a": a, "b": b}, [("y", "int32")])
    # onnxruntime's kernel is int16 only; two uint16 operands give uint32 (modulo 2^32)
    a, b = a.view("uint16"), b.view("uint16")
    expected = (a.astype("int64") @ b.astype("int64")).astype("uint32")
    check_numpy([node("MatMulInteger16", ["a", "b"], domain=MS)], {"a": a, "b": b}, expected, [("y", "uint32")])


# ----------------------------------------------------------------------------- qlinear.py

QX = RNG.integers(0, 255, (2, 3, 4, 5)).astype("uint8")
QX_I8 = RNG.integers(-128, 127, (2, 3, 4, 5)).astype("int8")


def _q(scale, zp, dtype="uint8"):
    return np.array(scale, "float32"), np.array(zp, dtype)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("x", [QX, QX_I8], ids=["uint8", "int8"])
def test_qlinear_binary(op, x):
    d = str(x.dtype)
    other = np.roll(x, 7)[:1, :, :1]  # broadcasts
    (as_, az), (bs, bz), (ys, yz) = _q(0.05, 7, d), _q(0.02, -3 if d == "int8" else 200, d), _q(0.1, 11, d)
    check([node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], domain=MS)], {"a": x, "b": other}, [("y", d)],
          inits={"as": as_, "az": az, "bs": bs, "bz": bz, "ys": ys if op == "QLinearAdd" else np.float32(0.3),
                 "yz": yz}, atol=1)


@pytest.mark.parametrize("op, attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.2})])
@pytest.mark.parametrize("x", [QX, QX_I8], ids=["uint8", "int8"])
def test_qlinear_unary(op, attrs, x):
    d = str(x.dtype)
    (xs, xz), (ys, yz) = _q(0.05, 5, d), _q(1 / 256 if op == "QLinearSigmoid" else 0.04, 0 if d == "uint8" else -100, d)
    check([node(op, ["x", "xs", "xz", "ys", "yz"], domain=MS, **attrs)], {"x": x}, [("y", d)],
          inits={"xs": xs, "xz": xz, "ys": ys, "yz": yz})


@pytest.mark.parametrize("opset_attr, axis", [(13, -1), (13, 1), (12, 1), (12, 3)])
def test_qlinear_softmax(opset_attr, axis):
    (xs, xz), (ys, yz) = _q(0.08, 128), _q(1 / 256, 0)
    check([node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], domain=MS, axis=axis, opset=opset_attr)],
          {"x": QX}, [("y", "uint8")], inits={"xs": xs, "xz": xz, "ys": ys, "yz": yz}, atol=1)


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("attrs", [{"kernel_shape": [2, 2]},
                                   {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
                                   {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "count_include_pad": 1}])
def test_qlinear_average_pool(channels_last, attrs):
    (xs, xz), (ys, yz) = _q(0.05, 10), _q(0.04, 3)
    check([node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], domain=MS, channels_last=channels_last,
                **attrs)], {"x": QX}, [("y", "uint8")], inits={"xs": xs, "xz": xz, "ys": ys, "yz": yz}, atol=1)


@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(channels_last):
    (xs, xz), (ys, yz) = _q(0.05, 10), _q(0.03, 3)
    check([node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], domain=MS, channels_last=channels_last)],
          {"x": QX}, [("y", "uint8")], inits={"xs": xs, "xz": xz, "ys": ys, "yz": yz}, atol=1)


def test_qlinear_concat():
    a, b = QX, np.flip(QX[:, :2], axis=3).copy()
    check([node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], domain=MS, axis=1)],
          {"a": a, "b": b}, [("y", "uint8")],
          inits={"ys": np.float32(0.07), "yz": np.uint8(9), "as": np.float32(0.05), "az": np.uint8(10),
                 "bs": np.float32(0.11), "bz": np.uint8(128)}, atol=1)


@pytest.mark.parametrize("trans_a, trans_b, alpha", [(0, 0, 1.0), (1, 0, 0.5), (0, 1, 2.0)])
@pytest.mark.parametrize("quantised_out", [True, False])
def test_qgemm(trans_a, trans_b, alpha, quantised_out):
    a = RNG.integers(0, 255, (6, 4) if trans_a else (4, 6)).astype("uint8")
    b = RNG.integers(-128, 127, (3, 6) if trans_b else (6, 3)).astype("int8")
    c = RNG.integers(-500, 500, (3,)).astype("int32")
    inits = {"as": np.float32(0.02), "az": np.uint8(120), "bs": np.array([0.01, 0.03, 0.02], "float32"),
             "bz": np.zeros(3, "int8"), "c": c}
    ins = ["a", "as", "az", "b", "bs", "bz", "c"]
    out = "float32"
    if quantised_out:
        inits.update(ys=np.float32(0.05), yz=np.uint8(100))
        ins += ["ys", "yz"]
        out = "uint8"
    check([node("QGemm", ins, domain=MS, transA=trans_a, transB=trans_b, alpha=alpha)], {"a": a, "b": b},
          [("y", out)], inits=inits, atol=1 if quantised_out else 1e-4)


# ----------------------------------------------------------------------------- contrib.py


def test_fast_gelu_and_bias_gelu():
    x = RNG.standard_normal((2, 3, 8)).astype("float32")
    bias = RNG.standard_normal(8).astype("float32")
    check([node("FastGelu", ["x", "b"], domain=MS)], {"x": x}, inits={"b": bias})
    check([node("FastGelu", ["x"], domain=MS)], {"x": x})
    check([node("BiasGelu", ["x", "b"], domain=MS)], {"x": x}, inits={"b": bias})


def test_skip_layer_normalization_with_the_sum_output():
    x, skip = (RNG.standard_normal((2, 3, 8)).astype("float32") for _ in range(2))
    gamma, beta, bias = (RNG.standard_normal(8).astype("float32") for _ in range(3))
    check([node("SkipLayerNormalization", ["x", "s", "g", "b", "bias"], ["y", "", "", "sum"], domain=MS,
                epsilon=1e-5)], {"x": x, "s": skip}, [("y", "float32"), ("sum", "float32")],
          inits={"g": gamma, "b": beta, "bias": bias})
    check([node("SkipLayerNormalization", ["x", "s", "g"], domain=MS)], {"x": x, "s": skip}, inits={"g": gamma})


@pytest.mark.parametrize("with_segments", [True, False])
def test_embed_layer_normalization(with_segments):
    ids = RNG.integers(0, 20, (2, 5)).astype("int32")
    segs = RNG.integers(0, 2, (2, 5)).astype("int32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")
    inits = {"we": RNG.standard_normal((20, 8)).astype("float32"),
             "pe": RNG.standard_normal((5, 8)).astype("float32"),
             "se": RNG.standard_normal((2, 8)).astype("float32"),
             "g": RNG.standard_normal(8).astype("float32"), "b": RNG.standard_normal(8).astype("float32")}
    inputs = {"ids": ids, "mask": mask}
    names = ["ids", "", "we", "pe", "", "g", "b", "mask"]
    if with_segments:
        inputs["segs"] = segs
        names[1], names[4] = "segs", "se"
    else:
        del inits["se"]
    check([node("EmbedLayerNormalization", names, ["y", "mi"], domain=MS, epsilon=1e-5)], inputs,
          [("y", "float32"), ("mi", "int32")], inits=inits)


def test_contrib_ops_are_keyed_by_domain():
    assert "com.microsoft.QLinearAdd" in supported_ops() and "QLinearAdd" not in supported_ops()
    # a contrib op in the default domain is not accepted (nor the reverse)
    model = _model([node("FastGelu", ["x"])], {"x": X}, [("y", "float32")])
    with pytest.raises(OnnxImportError, match="FastGelu"):
        from_onnx(model)
    model = _model([node("Relu", ["x"], domain=MS)], {"x": X}, [("y", "float32")])
    with pytest.raises(OnnxImportError, match="com.microsoft.Relu"):
        from_onnx(model)


# ----------------------------------------------------------------------------- vision.py: MaxRoiPool, MaxUnpool


def test_max_roi_pool():
    rois = np.array([[0, 0, 0, 4, 3], [1, 1.4, 2.6, 7, 5], [0, 3, 1, 3.2, 1], [1, -2, -2, 20, 20]], "float32")
    check([node("MaxRoiPool", ["x", "r"], pooled_shape=[2, 3], spatial_scale=0.5)], {"x": X, "r": rois})


def _maxpool_indices(x, **attrs):
    model = _model([node("MaxPool", ["x"], ["v", "i"], **attrs)], {"x": x}, [("v", "float32"), ("i", "int64")])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})


@pytest.mark.parametrize("attrs", [{"kernel_shape": [2, 2], "strides": [2, 2]},
                                   {"kernel_shape": [3, 3], "strides": [1, 1]},
                                   {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1]}])
def test_max_unpool(attrs):
    x = RNG.standard_normal((2, 3, 6, 6)).astype("float32")  # the unpooled shape is the pooled input's
    values, indices = _maxpool_indices(x, **attrs)
    check([node("MaxUnpool", ["v", "i"], **attrs)], {"v": values, "i": indices}, opset=11)


def test_max_unpool_to_a_given_output_shape_pads_at_the_end():
    """onnx's reference: the indices address the unpooled shape, zeros pad it to
    output_shape (onnxruntime, like TVM, reads them as addressing output_shape)."""
    from onnx.reference import ReferenceEvaluator

    x = RNG.standard_normal((1, 2, 4, 4)).astype("float32")
    values, indices = _maxpool_indices(x, kernel_shape=[2, 2], strides=[2, 2])
    nodes = [node("MaxUnpool", ["v", "i", "s"], kernel_shape=[2, 2], strides=[2, 2])]
    inits = {"s": np.array([1, 2, 5, 6], "int64")}
    model = _model(nodes, {"v": values, "i": indices}, [("y", "float32")], inits, opset=11)
    (expected,) = ReferenceEvaluator(model).run(None, {"v": values, "i": indices})
    check_numpy(nodes, {"v": values, "i": indices}, expected, inits=inits, opset=11)
    assert expected[0, :, :4, :4].any() and not expected[0, :, 4:].any() and not expected[0, :, :, 4:].any()


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample(mode, padding_mode, align_corners):
    x = RNG.standard_normal((2, 3, 5, 6)).astype("float32")
    grid = RNG.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype("float32")  # some points outside the image
    check([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding_mode, align_corners=align_corners)],
          {"x": x, "g": grid}, opset=16, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_grid_sample_opset20_names(mode):
    x = RNG.standard_normal((1, 2, 4, 4)).astype("float32")
    grid = RNG.uniform(-1.2, 1.2, (1, 3, 5, 2)).astype("float32")
    check([node("GridSample", ["x", "g"], mode=mode)], {"x": x, "g": grid}, opset=20)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_volumetric(mode, padding_mode, align_corners):
    # composed (trilinear, or nearest with halves to even), as onnx and onnxruntime compute it
    x = RNG.standard_normal((2, 3, 4, 5, 6)).astype("float32")
    grid = RNG.uniform(-1.4, 1.4, (2, 3, 2, 4, 3)).astype("float32")  # some points outside the volume
    grid[0, 0, 0, :2] = [[0.0, 0.0, 0.0], [-0.6, 0.2, 1.0 / 3]]  # voxel centres and halves between them
    check([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding_mode, align_corners=align_corners)],
          {"x": x, "g": grid}, opset=20, atol=1e-5)


def test_grid_sample_volumetric_unsupported_forms_are_diagnostics():
    x = np.zeros((1, 1, 2, 2, 2), "float32")
    for attrs, message in (({"mode": "cubic"}, "nearest and linear modes"),
                           ({"padding_mode": "reflection"}, "zeros or border")):
        model = _model([node("GridSample", ["x", "g"], **attrs)], {"x": x, "g": np.zeros((1, 2, 2, 2, 3), "float32")},
                       [("y", "float32")], opset=20)
        with pytest.raises(OnnxImportError, match=message):
            from_onnx(model)


# ----------------------------------------------------------------------------- indexing.py: Unique


@pytest.mark.parametrize("is_sorted", [1, 0])
@pytest.mark.parametrize("shape, axis", [((12,), None), ((3, 4), None), ((9,), 0), ((9,), -1)])
def test_unique(is_sorted, shape, axis):
    x = RNG.integers(0, 5, size=shape).astype("float32")
    attrs = {"sorted": is_sorted} if axis is None else {"sorted": is_sorted, "axis": axis}
    outs = [("y", "float32"), ("i", "int64"), ("inv", "int64"), ("c", "int64")]
    check([node("Unique", ["x"], ["y", "i", "inv", "c"], **attrs)], {"x": x}, outs, opset=11)
    mod, _ = from_onnx(_model([node("Unique", ["x"], ["y", "i", "inv", "c"], **attrs)], {"x": x}, outs, opset=11))
    body = mod["main"].body  # the unique count is known only when the program runs: `?` long
    assert [f.checked_type.shape[0] is ANY for f in body.fields] == [True, True, False, True]


def test_unique_along_an_axis_of_a_matrix_is_a_diagnostic():
    model = _model([node("Unique", ["x"], axis=0)], {"x": np.zeros((2, 3), "float32")}, [("y", "float32")], opset=11)
    with pytest.raises(OnnxImportError, match="1-D input only"):
        from_onnx(model)


# ----------------------------------------------------------------------------- legacy.py: LinearRegressor (ai.onnx.ml)


@pytest.mark.parametrize("targets, intercepts", [(1, [0.5]), (3, [1.0, -2.0, 0.25]), (2, None)])
def test_linear_regressor(targets, intercepts):
    x = RNG.standard_normal((4, 5)).astype("float32")
    attrs = {"coefficients": RNG.standard_normal(5 * targets).astype("float32").tolist(), "targets": targets}
    if intercepts:
        attrs["intercepts"] = intercepts
    graph = helper.make_graph([node("LinearRegressor", ["x"], domain="ai.onnx.ml", **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)],
                              ir_version=7)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = sess.run(None, {"x": x})
    for got in _ours(model, {"x": x}):
        np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-6)


def _ml_model(ml_node, x):
    graph = helper.make_graph([ml_node], "g", [helper.make_tensor_value_info("x", DTYPES[str(x.dtype)], x.shape)],
                              [helper.make_tensor_value_info("y", DTYPES[str(x.dtype)], None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)],
                             ir_version=7)


def _check_ml(model, x):
    (expected,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for got in _ours(model, {"x": x}):
        assert got[0].shape == expected.shape and got[0].dtype == expected.dtype
        np.testing.assert_array_equal(got[0], expected)


@pytest.mark.parametrize("dtype, threshold", [("float32", 0.25), ("float32", None), ("float32", -1.0)])  # onnxruntime: float only
def test_binarizer(dtype, threshold):
    x = (RNG.standard_normal((3, 4, 5)) * 3).astype(dtype)
    attrs = {} if threshold is None else {"threshold": threshold}
    _check_ml(_ml_model(node("Binarizer", ["x"], domain="ai.onnx.ml", **attrs), x), x)


@pytest.mark.parametrize("shape, indices", [((3, 4), [0, 3, 1]), ((2, 3, 5), [[4, 0]]), ((6,), [5, 5, 2])])
def test_array_feature_extractor(shape, indices):
    # the indices along the last axis; a 1-D input gives a (1, n) row, as onnxruntime shapes it
    x = RNG.standard_normal(shape).astype("float32")
    model = _ml_model(node("ArrayFeatureExtractor", ["x", "i"], domain="ai.onnx.ml"), x)
    model.graph.initializer.append(numpy_helper.from_array(np.array(indices, "int64"), "i"))
    _check_ml(model, x)


def _random_trees(rng, trees, depth, features, n_targets, member):
    """Complete binary trees of `depth` tests: nodes_* and leaf_* attributes of TreeEnsemble."""
    nodes = {k: [] for k in ("featureids", "modes", "splits", "truenodeids", "falsenodeids", "trueleafs",
                             "falseleafs", "missing_value_tracks_true")}
    leaves, targets, roots, members = [], [], [], []

    def grow(level):
        node = len(nodes["modes"])
        mode = int(rng.integers(0, 7 if member else 6))
        for key, value in (("featureids", int(rng.integers(features))), ("modes", mode),
                           ("splits", float(rng.normal())), ("missing_value_tracks_true", int(rng.integers(2)))):
            nodes[key].append(value)
        if mode == 6:
            # onnxruntime takes integer members only; onnx's reference stops a set at a member 0
            members.extend([*rng.choice([-1.0, 1.0, 2.0], size=2), np.nan])
        for branch in ("true", "false"):
            nodes[f"{branch}nodeids"].append(0)
            nodes[f"{branch}leafs"].append(0)
        for branch in ("true", "false"):
            if level + 1 == depth:
                nodes[f"{branch}leafs"][node] = 1
                nodes[f"{branch}nodeids"][node] = len(leaves)
                leaves.append(float(rng.normal()))
                targets.append(int(rng.integers(n_targets)))
            else:
                nodes[f"{branch}nodeids"][node] = grow(level + 1)
        return node

    for _ in range(trees):
        roots.append(grow(0))
    attrs = {f"nodes_{k}": v for k, v in nodes.items() if k not in ("modes", "splits")}
    attrs["nodes_modes"] = numpy_helper.from_array(np.array(nodes["modes"], "uint8"), "modes")
    attrs["nodes_splits"] = numpy_helper.from_array(np.array(nodes["splits"], "float32"), "splits")
    attrs["leaf_weights"] = numpy_helper.from_array(np.array(leaves, "float32"), "weights")
    attrs.update(leaf_targetids=targets, tree_roots=roots, n_targets=n_targets)
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, "float32"), "members")
    return attrs


@pytest.mark.parametrize("aggregate", [0, 1])
@pytest.mark.parametrize("member", [False, True])
def test_tree_ensemble(aggregate, member):
    # random trees over every comparison mode (and set membership), NaN inputs following
    # missing_value_tracks_true, SUM and AVERAGE over two targets
    rng = np.random.default_rng(5 + aggregate + 2 * member)
    x = rng.normal(size=(40, 3)).round(1).astype("float32")  # rounded: ties with the splits and members
    if member:  # onnxruntime tests the membership of the value truncated to an integer; the spec, of the value
        x = (x * 2).round().astype("float32")
    x[::7, 1] = np.nan
    attrs = _random_trees(rng, trees=3, depth=3, features=3, n_targets=2, member=member)
    model = _ml_model(node("TreeEnsemble", ["x"], domain="ai.onnx.ml", aggregate_function=aggregate, **attrs), x)
    model.opset_import[1].version = 5
    (expected,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for got in _ours(model, {"x": x}):
        assert got[0].shape == expected.shape and got[0].dtype == expected.dtype
        np.testing.assert_allclose(got[0], expected, rtol=1e-6, atol=1e-6)
    # non-integer values against onnx's reference evaluator (membership of the value itself)
    from onnx.reference import ReferenceEvaluator

    x = x + np.float32(0.3)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(_ours(model, {"x": x})[0][0], expected, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- training.py (ai.onnx.preview.training)


@pytest.mark.parametrize("op, states, attrs", [
    ("Adagrad", 1, {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01}),
    ("Momentum", 1, {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.01}),
    ("Momentum", 1, {"alpha": 0.9, "beta": 0.5, "mode": "nesterov", "norm_coefficient": 0.0}),
    ("Adam", 2, {"alpha": 0.8, "beta": 0.95, "epsilon": 1e-4, "norm_coefficient": 0.01,
                 "norm_coefficient_post": 0.02})])
@pytest.mark.parametrize("step", [0, 3])
def test_optimiser_step_against_onnx_reference(op, states, attrs, step):
    """Two tensors, the step count a graph input (so `T > 0` is decided at run time)."""
    from onnx.reference import ReferenceEvaluator

    shapes = [(3, 4), (5,)]
    inputs = {"r": np.array(0.1, "float32"), "t": np.array(step, "int64")}
    names = {"x": [], "g": [], **{f"s{k}": [] for k in range(states)}}
    for kind in names:
        for i, shape in enumerate(shapes):
            value = RNG.standard_normal(shape).astype("float32")
            inputs[f"{kind}{i}"] = np.abs(value) if kind == "s1" or (op == "Adagrad" and kind == "s0") else value
            names[kind].append(f"{kind}{i}")
    outs = [f"{kind}{i}_new" for kind in ["x", *[f"s{k}" for k in range(states)]] for i in range(len(shapes))]
    nodes = [node(op, ["r", "t", *[n for kind in names.values() for n in kind]], outs,
                  domain="ai.onnx.preview.training", **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, DTYPES[str(a.dtype)], a.shape)
                                           for n, a in inputs.items()],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("ai.onnx.preview.training", 1)], ir_version=7)
    expected = ReferenceEvaluator(model).run(None, inputs)
    for got in _ours(model, inputs):
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- qlinear.py: QAttention


@pytest.mark.parametrize("mask_kind", ["2d", "1d", None])
@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("past_len", [0, 2])
def test_qattention(mask_kind, unidirectional, past_len):
    batch, seq, hidden, heads = 2, 3, 8, 2
    x = RNG.integers(0, 255, (batch, seq, hidden)).astype("uint8")
    inits = {"w": RNG.integers(-128, 127, (hidden, 3 * hidden)).astype("int8"),
             "b": RNG.standard_normal(3 * hidden).astype("float32"),
             "xs": np.float32(0.02), "ws": np.float32(0.01), "xz": np.uint8(128), "wz": np.int8(0)}
    inputs = {"x": x}
    names = ["x", "w", "b", "xs", "ws", "", "xz", "wz"]
    if mask_kind == "2d":
        inputs["m"] = np.array([[1] * (past_len + seq), [1] * (past_len + 1) + [0] * (seq - 1)], "int32")
    elif mask_kind == "1d":
        inputs["m"] = np.array([past_len + seq, past_len + 2], "int32")
    if mask_kind:
        names[5] = "m"
    outs = [("y", "float32"), ("present", "float32")]
    if past_len:
        inputs["p"] = RNG.standard_normal((2, batch, heads, past_len, hidden // heads)).astype("float32")
        names.append("p")
    check([node("QAttention", names, [o for o, _ in outs], domain=MS, num_heads=heads, unidirectional=unidirectional)],
          inputs, outs, inits=inits, atol=1e-4)


# ----------------------------------------------------------------------------- contrib.py: Attention


@pytest.mark.parametrize("mask_kind", ["2d", "1d", "3d", None])
@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("past_len", [0, 2])
def test_attention(mask_kind, unidirectional, past_len):
    """onnxruntime's float Attention (TVM v0.19 converts it): the projection, heads, past and
    present, each mask form and the causal mask."""
    batch, seq, din, hidden, heads = 2, 3, 5, 8, 2
    total = past_len + seq
    inits = {"w": RNG.standard_normal((din, 3 * hidden)).astype("float32"),
             "b": RNG.standard_normal(3 * hidden).astype("float32")}
    inputs = {"x": RNG.standard_normal((batch, seq, din)).astype("float32")}
    names = ["x", "w", "b"]
    if mask_kind == "2d":
        inputs["m"] = np.array([[1] * total, [1] * (past_len + 1) + [0] * (seq - 1)], "int32")
    elif mask_kind == "1d":
        inputs["m"] = np.array([total, past_len + 2], "int32")
    elif mask_kind == "3d":
        inputs["m"] = RNG.integers(0, 2, (batch, seq, total)).astype("int32")
        inputs["m"][:, :, 0] = 1  # every query sees a key
    names.append("m" if mask_kind else "")
    if past_len:
        inputs["p"] = RNG.standard_normal((2, batch, heads, past_len, hidden // heads)).astype("float32")
        names.append("p")
    outs = [("y", "float32"), ("present", "float32")]
    check([node("Attention", names, [o for o, _ in outs], domain=MS, num_heads=heads, unidirectional=unidirectional)],
          inputs, outs, inits=inits, atol=1e-4)


def test_attention_bias_scale_and_mask_filter_value():
    batch, seq, hidden, heads = 1, 4, 6, 3
    inits = {"w": RNG.standard_normal((hidden, 3 * hidden)).astype("float32"),
             "b": RNG.standard_normal(3 * hidden).astype("float32")}
    inputs = {"x": RNG.standard_normal((batch, seq, hidden)).astype("float32"),
              "m": np.array([[1, 1, 0, 1]], "int32"),
              "ab": RNG.standard_normal((batch, heads, seq, seq)).astype("float32")}
    check([node("Attention", ["x", "w", "b", "m", "", "ab"], domain=MS, num_heads=heads, scale=0.3,
                mask_filter_value=-50.0)], inputs, inits=inits, atol=1e-4)


@pytest.mark.parametrize("attrs, message", [
    ({"qkv_hidden_sizes": [4, 4, 8]}, "only equal sizes"),
    ({"do_rotary": 1}, "`do_rotary` is not supported"),
])
def test_attention_unsupported_forms_are_diagnostics(attrs, message):
    inits = {"w": np.zeros((4, 16), "float32"), "b": np.zeros(16, "float32")}
    model = _model([node("Attention", ["x", "w", "b"], domain=MS, num_heads=2, **attrs)],
                   {"x": np.zeros((1, 2, 4), "float32")}, [("y", "float32")], inits)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model)
