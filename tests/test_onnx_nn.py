"""ONNX neural-network converters (irtool/frontend/onnx/nn.py), checked against onnxruntime:
each test builds a one-node model with onnx.helper, imports it with `from_onnx`, runs it with
irtool's interpreter and compares with onnxruntime's CPU provider."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from irtool import interpret  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.frontend.onnx import OnnxImportError  # noqa: E402
from irtool.text.relay_printer import print_relay  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def check(op_type, inputs, attrs=None, opset=17, consts=(), outputs=1, out_dtypes=None, compare=None, rtol=1e-4,
          atol=1e-5):
    """Run one `op_type` node both ways. `inputs`: arrays (None: an omitted optional input);
    those whose index is in `consts` become initializers."""
    names, value_infos, inits, feeds = [], [], [], {}
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        if i in consts:
            inits.append(numpy_helper.from_array(x, name))
        else:
            value_infos.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(x.dtype),
                                                             x.shape))
            feeds[name] = x
    out_names = [f"out{i}" for i in range(outputs)]
    out_dtypes = out_dtypes or [inputs[0].dtype] * outputs
    outs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
            for n, d in zip(out_names, out_dtypes, strict=True)]
    node = helper.make_node(op_type, names, out_names, **(attrs or {}))
    graph = helper.make_graph([node], "g", value_infos, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    mod, _ = from_onnx(model)
    got = interpret(mod, feeds)
    got = list(got) if outputs > 1 else [got]
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if compare is not None and i not in compare:
            continue
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return mod if compare is None else (mod, got)


# ----------------------------------------------------------------------------- Conv, ConvTranspose


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1], "strides": [2, 1]},
    {"dilations": [2, 2], "pads": [2, 1, 2, 1]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
    {"auto_pad": "SAME_UPPER", "kernel_shape": [3, 3]},
    {"auto_pad": "VALID", "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [3, 2]},
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv(attrs, bias):
    x, w = rand(1, 3, 7, 8), rand(4, 3, 3, 3)
    check("Conv", [x, w] + ([rand(4)] if bias else []), attrs, opset=11, consts=(1, 2))


def test_conv_groups_and_depthwise():
    check("Conv", [rand(2, 4, 6, 6), rand(6, 2, 3, 3), rand(6)], {"group": 2, "pads": [1, 1, 1, 1]}, consts=(1,))
    check("Conv", [rand(1, 4, 6, 5), rand(4, 1, 3, 3)], {"group": 4, "auto_pad": "SAME_LOWER"}, opset=1)


def test_conv_1d():
    check("Conv", [rand(2, 3, 10), rand(4, 3, 3), rand(4)], {"pads": [1, 2], "strides": [2]}, consts=(1,))
    check("Conv", [rand(1, 2, 9), rand(2, 2, 2)], {"auto_pad": "SAME_UPPER"})


def test_conv_4d_is_an_error():  # 3-D windows: tests/test_onnx_nn_3d.py
    with pytest.raises(OnnxImportError, match="only 1-D, 2-D and 3-D windows"):
        check("Conv", [rand(1, 1, 3, 3, 3, 3), rand(1, 1, 1, 1, 1, 1)])


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 2]},
    {"strides": [2, 2], "pads": [1, 0, 1, 1], "output_padding": [1, 1]},
    {"strides": [3, 2], "dilations": [2, 1], "output_padding": [2, 0]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "auto_pad": "VALID"},
    {"strides": [2, 2], "output_shape": [10, 9]},
    {"strides": [2, 2], "output_shape": [11, 8], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "output_shape": [10, 9], "auto_pad": "SAME_LOWER"},
])
def test_conv_transpose(attrs):
    check("ConvTranspose", [rand(1, 3, 5, 4), rand(3, 2, 3, 3), rand(2)], attrs, opset=11, consts=(1, 2))


def test_conv_transpose_groups_and_1d():
    check("ConvTranspose", [rand(2, 4, 3, 3), rand(4, 3, 2, 2)], {"group": 2, "strides": [2, 2]})
    check("ConvTranspose", [rand(1, 2, 5), rand(2, 3, 3), rand(3)], {"strides": [2], "pads": [1, 0]})


# ----------------------------------------------------------------------------- Gemm, MatMul


@pytest.mark.parametrize("attrs", [
    {}, {"transA": 1}, {"transB": 1}, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, {"beta": 0.0},
])
@pytest.mark.parametrize("c_shape", [None, (5,), (3, 5), (1, 1)])
def test_gemm(attrs, c_shape):
    a = rand(4, 3) if attrs.get("transA") else rand(3, 4)
    b = rand(5, 4) if attrs.get("transB") else rand(4, 5)
    inputs = [a, b] + ([rand(*c_shape)] if c_shape else [])
    check("Gemm", inputs, attrs, opset=13, consts=(1, 2))


def test_gemm_old_opset():
    check("Gemm", [rand(2, 3), rand(3, 4), rand(2, 4)], {"alpha": 2.0}, opset=9)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4,)),
    ((5,), (2, 5, 3)), ((1, 3, 4), (2, 4, 5)),
])
def test_matmul(a_shape, b_shape):
    check("MatMul", [rand(*a_shape), rand(*b_shape)], opset=13)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (2, 4, 4), (2, 3, 5, 5)])
def test_det(shape):
    # Leibniz's formula over the permutations (orders 1 to 5), batched over the leading axes;
    # float64 against NumPy (onnxruntime's Det is float32 only)
    check("Det", [rand(*shape)], opset=11, rtol=1e-4, atol=1e-4)
    x = rand(*shape, dtype="float64")
    node = helper.make_node("Det", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)])
    mod, _ = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]))
    np.testing.assert_allclose(interpret(mod, {"x": x}), np.linalg.det(x), rtol=1e-10, atol=1e-12)


def test_det_of_a_large_or_non_square_matrix_is_a_diagnostic():
    for shape, message in (((6, 6), "order 6 is not supported"), ((2, 3), "square matrices")):
        node = helper.make_node("Det", ["x"], ["y"])
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
        with pytest.raises(OnnxImportError, match=message):
            from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]))


def test_matmul_constant_weight():
    mod = check("MatMul", [rand(2, 3, 4), rand(4, 6)], consts=(1,))
    text = print_relay(mod)
    assert "nn.dense" in text and "transpose" not in text  # the weight's transpose is folded


# ----------------------------------------------------------------------------- pooling


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 0, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [3, 3], "auto_pad": "VALID"},
])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool(op, attrs):
    check(op, [rand(2, 3, 7, 8)], attrs, opset=11)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [0, 1, 1, 0]},
])
def test_average_pool_count_include_pad(attrs):
    check("AveragePool", [rand(1, 2, 6, 7)], attrs, opset=11)


def test_max_pool_dilations_and_1d():
    check("MaxPool", [rand(1, 2, 9, 9)], {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]}, opset=12)
    check("MaxPool", [rand(2, 3, 10)], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, opset=12)
    check("AveragePool", [rand(2, 3, 10)], {"kernel_shape": [2], "auto_pad": "SAME_UPPER"}, opset=11)


def test_max_pool_old_opset_and_int8():
    check("MaxPool", [rand(1, 1, 5, 5)], {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=7)
    x = RNG.integers(-100, 100, (1, 2, 5, 5)).astype("int8")
    check("MaxPool", [x], {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]}, opset=12)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 3, 6), (1, 2, 3, 4, 2)])
def test_global_pool(op, shape):
    check(op, [rand(*shape)])


# ----------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize("opset", [9, 15])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (2, 3, 6)])
def test_batch_norm(opset, shape):
    c = shape[1]
    var = np.abs(rand(c)) + 0.1
    check("BatchNormalization", [rand(*shape), rand(c), rand(c), rand(c), var], {"epsilon": 1e-3}, opset=opset,
          consts=(1, 2, 3, 4))


@pytest.mark.parametrize("axis", [-1, 1, 2, -2])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm(axis, bias):
    shape = (2, 3, 4, 5)
    norm = shape[axis:]
    inputs = [rand(*shape), rand(*norm)] + ([rand(*norm)] if bias else [])
    check("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=17, consts=(1, 2))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 7), (1, 2, 3, 2, 2)])
def test_instance_norm(shape):
    c = shape[1]
    check("InstanceNormalization", [rand(*shape), rand(c), rand(c)], {"epsilon": 1e-4}, opset=6)


@pytest.mark.parametrize("attrs", [{"size": 3}, {"size": 5, "alpha": 1e-3, "beta": 0.5, "bias": 2.0}, {"size": 1}])
def test_lrn(attrs):
    check("LRN", [rand(2, 6, 3, 3)], attrs, opset=13)


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_size(size):
    """onnxruntime rejects even sizes; compare with the spec's formula (onnx's backend test)."""
    x = rand(2, 5, 3, 2)
    alpha, beta, bias = 0.1, 0.75, 1.5
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + size // 2)
        square_sum[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    want = x / (bias + alpha / size * square_sum) ** beta
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    mod, _ = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    np.testing.assert_allclose(interpret(mod, {"x": x}), want, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- softmax, dropout


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,attrs", [
    (11, {}), (11, {"axis": 0}), (11, {"axis": 2}), (11, {"axis": -1}), (11, {"axis": -2}),
    (13, {}), (13, {"axis": 1}), (13, {"axis": 0}), (13, {"axis": -3}),
])
def test_softmax(op, opset, attrs):
    check(op, [rand(2, 3, 4)], attrs, opset=opset)


def test_softmax_old_opset_differs_from_new():
    x = rand(2, 3, 4)
    old = interpret(from_onnx(_softmax_model(11))[0], {"x": x})
    new = interpret(from_onnx(_softmax_model(13))[0], {"x": x})
    np.testing.assert_allclose(np.asarray(old).sum(axis=(1, 2)), 1, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(new).sum(axis=-1), 1, rtol=1e-5)


def _softmax_model(opset):
    node = helper.make_node("Softmax", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [7, 10, 13])
@pytest.mark.parametrize("outputs", [1, 2])
def test_dropout(opset, outputs):
    dtypes = ["float32", "bool" if opset >= 10 else "float32"][:outputs]
    # onnxruntime's Dropout before opset 12 zero-fills the mask; the ONNX reference
    # implementation (and irtool) give all ones: nothing is dropped at inference.
    _, got = check("Dropout", [rand(2, 3, 4)], {} if opset >= 12 else {"ratio": 0.3}, opset=opset,
                   outputs=outputs, out_dtypes=dtypes, compare=[0])
    if outputs == 2:
        mask = np.asarray(got[1])
        assert mask.dtype == dtypes[1] and mask.shape == (2, 3, 4) and mask.all()


def test_dropout_ratio_input_and_training_mode():
    check("Dropout", [rand(3, 4), np.array(0.2, "float32")], opset=13, outputs=2, consts=(1,),
          out_dtypes=["float32", "bool"])
    check("Dropout", [rand(3, 4), np.array(0.2, "float32"), np.array(False)], opset=13, outputs=2,
          consts=(1, 2), out_dtypes=["float32", "bool"])
    with pytest.raises(OnnxImportError, match="training"):
        model = _dropout_training_model()
        from_onnx(model)
    # training with a ratio of 0 drops nothing: the input and a mask of ones
    check("Dropout", [rand(3, 4), np.array(0.0, "float32"), np.array(True)], opset=13, outputs=2,
          consts=(1, 2), out_dtypes=["float32", "bool"])


def _dropout_training_model():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"])
    inits = [numpy_helper.from_array(np.array(0.5, "float32"), "r"), numpy_helper.from_array(np.array(True), "t")]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("x_shape, w_shape, attrs, with_bias, with_mask", [
    ((1, 2, 5, 6), (3, 2, 2, 2), {}, False, False),
    ((2, 4, 6, 6), (4, 2, 3, 3), {"group": 2, "offset_group": 2, "pads": [1, 1, 1, 1]}, True, True),
    ((1, 3, 7, 8), (2, 3, 3, 2), {"strides": [2, 1], "dilations": [1, 2], "pads": [0, 1, 2, 0]}, True, False),
    ((1, 4, 5, 5), (2, 4, 2, 2), {"offset_group": 4}, False, True),
])
def test_deform_conv(x_shape, w_shape, attrs, with_bias, with_mask):
    # each tap samples bilinearly at its offset position (outside the image: 0), times the mask
    n, _, height, width = x_shape
    kh, kw = w_shape[2:]
    s, d, p = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1]), attrs.get("pads", [0, 0, 0, 0])
    oh = (height + p[0] + p[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (width + p[1] + p[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    groups = attrs.get("offset_group", 1)
    inputs = [rand(*x_shape), rand(*w_shape), rand(n, 2 * groups * kh * kw, oh, ow) * 2,
              rand(w_shape[0]) if with_bias else None]
    if with_mask:
        inputs.append(RNG.uniform(0, 1, (n, groups * kh * kw, oh, ow)).astype("float32"))
    check("DeformConv", inputs, attrs, opset=19)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [0, 1, 1, 0], "count_include_pad": 1},
])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_ceil_mode_with_pads(op, attrs):
    if op == "MaxPool":
        attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    check(op, [rand(1, 2, 6, 7)], attrs, opset=11)


def test_average_pool_versions():
    check("AveragePool", [rand(1, 2, 5, 5)], {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]}, opset=7)
    check("AveragePool", [rand(1, 2, 8, 8)], {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]},
          opset=19)


def test_conv_with_unknown_batch():
    node = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])
    w = numpy_helper.from_array(rand(2, 3, 3, 3), "w")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 3, 5, 6])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.warns(UserWarning, match="unknown dimension"):
        mod, _ = from_onnx(model)
    x = rand(3, 3, 5, 6)
    model.ir_version = 8
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(interpret(mod, {"x": x}), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape, attrs", [
    ((2, 3, 6, 7), {"kernel_shape": [2, 2]}),
    ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "storage_order": 1}),
    ((1, 2, 8, 9), {"kernel_shape": [3, 2], "dilations": [2, 2], "strides": [1, 2]}),
    ((1, 1, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 6, 5), {"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER"}),
    ((2, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 3], "strides": [2, 1, 2]}),
])
def test_max_pool_indices(shape, attrs):
    # the flat index of each window's first largest element over the whole input (storage_order
    # 1: the spatial axes column-major); ties (a coarse input) resolved as onnxruntime does
    x = np.round(rand(*shape) * 2).astype("float32")
    check("MaxPool", [x], attrs, opset=12, outputs=2, out_dtypes=["float32", "int64"])


def test_unsupported_forms_are_errors():
    # opset 9's training form: the running statistics as outputs 2 and 3
    node = helper.make_node("BatchNormalization", ["x", "c", "c", "c", "c"], ["y", "m", "v"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.ones(2, "float32"), "c")])
    with pytest.raises(OnnxImportError, match="inference-mode"):
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 6)])
@pytest.mark.parametrize("attrs", [{}, {"momentum": 0.6, "epsilon": 1e-2}])
def test_batch_norm_training_mode(shape, attrs):
    # opset 14: normalised by the batch's statistics, the running ones moved towards them
    c = shape[1]
    var = np.abs(rand(c)) + 0.1
    check("BatchNormalization", [rand(*shape) * 3 + 1, rand(c), rand(c), rand(c), var],
          {"training_mode": 1, **attrs}, opset=15, outputs=3)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("shape,attrs", [
    # the last ceil_mode window would start in the padding: ONNX drops it
    ((1, 1, 3, 3), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    # one axis keeps its extra window, the other drops it
    ((1, 2, 7, 3), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 1, 0, 1], "ceil_mode": 1}),
])
def test_pool_ceil_mode_last_window_in_padding(op, shape, attrs):
    check(op, [rand(*shape)], attrs, opset=11)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_mean_and_inv_std_outputs(axis):
    x = rand(2, 3, 4)
    check("LayerNormalization", [x, rand(*x.shape[axis:]), rand(*x.shape[axis:])], {"axis": axis}, opset=17,
          outputs=3, consts=(1, 2))
