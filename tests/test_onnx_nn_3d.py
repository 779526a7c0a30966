"""3-D windows (rank-5 NCDHW inputs) in the ONNX importer: Conv, ConvTranspose, MaxPool,
AveragePool, LpPool become nn.conv3d / nn.conv3d_transpose / nn.max_pool3d / nn.avg_pool3d, as
TVM v0.19's Relay frontend converts them;
each checked against onnxruntime (one-node models, and a small 3-D CNN)."""

from __future__ import annotations

import numpy as np
import pytest
from test_onnx_nn import check, rand

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irtool import interpret  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.frontend.onnx import OnnxImportError  # noqa: E402
from irtool.text.relay_printer import print_relay  # noqa: E402


def _ops(mod) -> str:
    return print_relay(mod)


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 1, 1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1, 0, 1], "strides": [2, 1, 2]},
    {"dilations": [2, 1, 2], "pads": [2, 1, 0, 1, 1, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2, 1]},
    {"auto_pad": "SAME_LOWER", "strides": [1, 2, 2]},
    {"auto_pad": "VALID", "strides": [2, 2, 2]},
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_3d(attrs, bias):
    x, w = rand(1, 3, 5, 6, 7), rand(4, 3, 3, 2, 3)
    mod = check("Conv", [x, w] + ([rand(4)] if bias else []), attrs, opset=11, consts=(1, 2))
    assert "nn.conv3d(" in _ops(mod)


def test_conv_3d_groups_and_depthwise():
    check("Conv", [rand(2, 4, 4, 5, 5), rand(6, 2, 3, 3, 3), rand(6)], {"group": 2, "pads": [1] * 6}, consts=(1,))
    check("Conv", [rand(1, 3, 4, 5, 4), rand(3, 1, 2, 3, 3)], {"group": 3, "auto_pad": "SAME_LOWER"}, opset=1)


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 2, 1]},
    {"strides": [2, 1, 2], "pads": [1, 0, 1, 1, 0, 0], "output_padding": [1, 0, 1]},
    {"strides": [3, 2, 1], "dilations": [2, 1, 2], "output_padding": [2, 0, 0]},
    {"strides": [2, 2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 1, 2], "auto_pad": "SAME_LOWER"},
    {"strides": [2, 2, 2], "auto_pad": "VALID"},
    {"strides": [2, 2, 2], "output_shape": [8, 9, 7]},
])
def test_conv_transpose_3d(attrs):
    mod = check("ConvTranspose", [rand(1, 3, 4, 4, 3), rand(3, 2, 3, 2, 3), rand(2)], attrs, opset=11, consts=(1, 2))
    assert "nn.conv3d_transpose(" in _ops(mod)


def test_conv_transpose_3d_groups():
    check("ConvTranspose", [rand(2, 4, 3, 2, 3), rand(4, 3, 2, 2, 2)], {"group": 2, "strides": [2, 1, 2]})


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 3, 2], "strides": [2, 2, 1], "pads": [1, 1, 0, 1, 1, 1]},
    {"kernel_shape": [2, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2, 3], "dilations": [2, 1, 2], "strides": [1, 2, 1]},
    # one axis keeps its extra ceil_mode window, the others drop theirs (it would start in the padding)
    {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "pads": [0, 1, 0, 0, 1, 0], "ceil_mode": 1},
])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_3d(op, attrs):
    if op == "AveragePool" and "dilations" in attrs:
        opset = 19
    else:
        opset = 12
    mod = check(op, [rand(2, 3, 7, 6, 8)], attrs, opset=opset)
    assert ("nn.max_pool3d(" if op == "MaxPool" else "nn.avg_pool3d(") in _ops(mod)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3, 3], "pads": [1] * 6, "count_include_pad": 1},
    {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "pads": [1, 0, 1, 1, 1, 0], "count_include_pad": 1},
    {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1] * 6, "ceil_mode": 1, "count_include_pad": 1},
])
def test_average_pool_3d_count_include_pad(attrs):
    check("AveragePool", [rand(1, 2, 6, 7, 5)], attrs, opset=11)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 2], "p": 3, "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
])
def test_lp_pool_3d(attrs):
    mod = check("LpPool", [rand(1, 2, 5, 4, 6)], attrs, opset=18, rtol=1e-4, atol=1e-4)
    assert "nn.avg_pool3d(" in _ops(mod)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool_3d(op):
    check(op, [rand(2, 3, 4, 5, 3)])


def _import(op_type, shapes, **attrs):
    """Import a one-node model (no onnxruntime run: these models are ones it rejects too)."""
    names = [f"in{i}" for i in range(len(shapes))]
    graph = helper.make_graph([helper.make_node(op_type, names, ["out"], **attrs)], "g",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    return from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_pads_of_the_wrong_length_are_an_error():
    with pytest.raises(OnnxImportError, match="`pads` must have 6 values"):
        _import("MaxPool", [(1, 1, 4, 4, 4)], kernel_shape=[2, 2, 2], pads=[1, 1, 1, 1])
    with pytest.raises(OnnxImportError, match="expected 3 window values"):
        _import("Conv", [(1, 1, 4, 4, 4), (1, 1, 2, 2, 2)], strides=[1, 1])


def _cnn3d():
    """Conv(+bias) -> Relu -> MaxPool -> grouped Conv (SAME_UPPER) -> AveragePool (ceil_mode)
    -> ConvTranspose (stride 2) -> GlobalAveragePool -> Flatten -> Gemm, over a batch of 2
    NCDHW volumes."""
    rng = np.random.default_rng(3)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype("float32"), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], group=2, strides=[1, 2, 1], auto_pad="SAME_UPPER"),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("AveragePool", ["r2"], ["p2"], kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1),
        helper.make_node("ConvTranspose", ["p2", "w4", "b4"], ["u"], strides=[2, 2, 2], pads=[0, 1, 0, 1, 0, 0]),
        helper.make_node("GlobalAveragePool", ["u"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    inits = [init("w1", 4, 2, 3, 3, 3), init("b1", 4), init("w2", 6, 2, 3, 3, 3), init("w3", 5, 3), init("b3", 5),
             init("w4", 6, 3, 2, 3, 2), init("b4", 3)]
    graph = helper.make_graph(nodes, "cnn3d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 8, 9, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_small_3d_cnn_runs_like_onnxruntime():
    model = _cnn3d()
    x = np.random.default_rng(4).standard_normal((2, 2, 8, 9, 10)).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    mod, _ = from_onnx(model)
    text = _ops(mod)
    assert text.count("nn.conv3d(") == 2 and "nn.max_pool3d(" in text and "nn.avg_pool3d(" in text
    assert "nn.conv3d_transpose(" in text
    got = np.asarray(interpret(mod, {"x": x}))
    assert got.shape == want.shape == (2, 5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_qlinear_conv_3d_per_channel_scale():
    """The per-output-channel weight scale broadcasts along the channel axis of a 5-D result."""
    from test_onnx_elemwise import check as check_quantized

    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, size=(1, 2, 4, 5, 4)).astype(np.uint8)
    consts = {"x_scale": np.float32(0.03), "x_zp": np.uint8(100),
              "w": rng.integers(0, 256, size=(3, 2, 2, 3, 2)).astype(np.uint8),
              "w_scale": np.array([0.01, 0.02, 0.04], np.float32), "w_zp": np.array([128, 128, 128], np.uint8),
              "y_scale": np.float32(0.5), "y_zp": np.uint8(10), "bias": np.array([100, -50, 7], np.int32)}
    check_quantized("QLinearConv", {"x": x}, consts=consts, attrs={"pads": [1, 0, 1, 0, 1, 1]}, opset=13)
    # ... and of a 3-D one (a 1-D window), which the fixed (-1, 1, 1) reshape broke as well
    consts["w"] = rng.integers(0, 256, size=(3, 2, 3)).astype(np.uint8)
    x = rng.integers(0, 256, size=(1, 2, 7)).astype(np.uint8)
    check_quantized("QLinearConv", {"x": x}, consts=consts, attrs={"pads": [1, 0]}, opset=13)
