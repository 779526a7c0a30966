"""ONNX search, scan and index converters (irtool/frontend/onnx/indexing.py) against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import from_onnx
from irtool.ir.types import ANY

DTYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
          "bool": TensorProto.BOOL}
RNG = np.random.default_rng(3)


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, DTYPES[str(a.dtype)], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, DTYPES[d], None) for n, d in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def check(nodes, inputs, outputs=(("y", "float32"),), inits=(), opset=18):
    """Import, run in the interpreter, compare with onnxruntime; also through the printed text."""
    model = _model(nodes, inputs, list(outputs), inits, opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, dict(inputs))
    mod, _ = from_onnx(model)
    for m in (mod, irtool.parse(irtool.to_text(mod), "reparsed.ir")):
        got = irtool.interpret(m, dict(inputs))
        got = list(got) if len(expected) > 1 else [got]
        for e, g in zip(expected, got, strict=True):
            g = np.asarray(g)
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    return mod


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


TIES = RNG.integers(0, 4, size=(3, 6)).astype("float32")  # ties: the lower index comes first


@pytest.mark.parametrize("k, axis, largest", [(2, -1, 1), (3, 1, 0), (2, 0, 1), (6, 1, 0), (1, 0, 0)])
def test_topk(k, axis, largest):
    check([node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)], {"x": TIES},
          [("v", "float32"), ("i", "int64")], inits={"k": np.array([k], "int64")})


def test_topk_opset1_attribute():
    check([node("TopK", ["x"], ["v", "i"], k=2)], {"x": TIES}, [("v", "float32"), ("i", "int64")], opset=9)


@pytest.mark.parametrize("k, axis, largest", [(2, -1, 1), (3, 1, 0), (3, 0, 1), (1, 0, 0)])
def test_topk_of_a_runtime_k_is_dyn_topk(k, axis, largest):
    # k a graph input: dyn.topk (largest) or the sorted tensors cut by dyn.strided_slice, ties as
    # the static op breaks them
    mod = check([node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
                {"x": TIES, "k": np.array([k], "int64")}, [("v", "float32"), ("i", "int64")])
    assert ("dyn.topk(" if largest else "dyn.strided_slice(") in irtool.to_text(mod)


@pytest.mark.parametrize("exclusive, reverse, axis", [(0, 0, 1), (1, 0, 0), (0, 1, -1), (1, 1, 1)])
def test_cumsum(exclusive, reverse, axis):
    x = RNG.standard_normal((3, 4)).astype("float32")
    check([node("CumSum", ["x", "a"], exclusive=exclusive, reverse=reverse)], {"x": x},
          inits={"a": np.array(axis, "int64")})


@pytest.mark.parametrize("exclusive, reverse, axis", [(0, 0, 1), (1, 0, 0), (0, 1, -1), (1, 1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumprod(exclusive, reverse, axis, dtype):
    # opset 26's CumProd (not in TVM v0.19's convert map): Relay's cumprod, as CumSum's cumsum
    x = RNG.uniform(0.5, 2.0, (3, 4)).astype(dtype) if dtype == "float32" else RNG.integers(-3, 4, (3, 4), dtype)
    mod = check([node("CumProd", ["x", "a"], exclusive=exclusive, reverse=reverse)], {"x": x}, [("y", dtype)],
                inits={"a": np.array(axis, "int64")}, opset=26)
    assert "cumprod(" in irtool.to_text(mod)


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("cache_shape, update_len, axis", [((2, 3, 6, 4), 2, -2), ((3, 6, 5), 3, 1),
                                                           ((2, 4, 5, 7), 4, -1)])
@pytest.mark.parametrize("with_indices", [True, False])
def test_tensor_scatter(mode, cache_shape, update_len, axis, with_indices):
    # opset 24's KV-cache update: each batch row written from its own index (wrapping in circular mode)
    cache = RNG.standard_normal(cache_shape).astype("float32")
    ax = axis % len(cache_shape)
    update = RNG.standard_normal(cache_shape[:ax] + (update_len,) + cache_shape[ax + 1:]).astype("float32")
    length = cache_shape[ax]
    starts = np.arange(cache_shape[0], dtype="int64") * 2 % (length if mode == "circular" else length - update_len + 1)
    inputs, names = {"c": cache, "u": update}, ["c", "u"]
    if with_indices:
        inputs["w"] = starts + (length - update_len if mode == "circular" else 0)  # wraps past the end
        names.append("w")
    check([node("TensorScatter", names, axis=axis, mode=mode)], inputs, opset=24)


@pytest.mark.parametrize("image, block, attrs", [
    ((5, 6), (2, 3), {}), ((7, 7), (3, 3), {"strides": [2, 2], "pads": [1, 0, 1, 2]}),
    ((6, 9), (2, 2), {"dilations": [2, 3], "strides": [1, 2]}), ((3, 4, 5), (2, 1, 3), {"pads": [0, 1, 0, 0, 1, 1]})])
def test_col2im(image, block, attrs):
    # opset 18's Col2Im (not in TVM v0.19's map): overlapping blocks summed into the image
    nd = len(image)
    strides, dilations = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
    pads = attrs.get("pads", [0] * 2 * nd)
    counts = [(image[d] + pads[d] + pads[d + nd] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1
              for d in range(nd)]
    x = RNG.standard_normal((2, 3 * int(np.prod(block)), int(np.prod(counts)))).astype("float32")
    check([node("Col2Im", ["x", "i", "b"], **attrs)], {"x": x},
          inits={"i": np.array(image, "int64"), "b": np.array(block, "int64")})


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
def test_one_hot_moves_negative_indices_up_by_depth(axis):
    indices = np.array([[0, -1, 3], [-4, 2, 1]], "int64")
    check([node("OneHot", ["i", "d", "v"], axis=axis)], {"i": indices},
          inits={"d": np.array(4, "int64"), "v": np.array([-2.0, 5.0], "float32")})


def test_non_zero_has_a_run_time_length():
    x = np.array([[1, 0, 2], [0, 0, 3]], "int32")
    mod = check([node("NonZero", ["x"])], {"x": x}, [("y", "int64")])
    assert mod["main"].body.checked_type.shape == (2, ANY)
    # the same module, other values: another number of columns
    out = irtool.interpret(mod, {"x": np.ones((2, 3), "int32")})
    assert out.shape == (2, 6)


def test_isnan_and_isinf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], "float32")
    check([node("IsNaN", ["x"])], {"x": x}, [("y", "bool")])
    for neg, pos in [(1, 1), (0, 1), (1, 0)]:
        check([node("IsInf", ["x"], detect_negative=neg, detect_positive=pos)], {"x": x}, [("y", "bool")])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_with_negative_indices(axis):
    data = RNG.standard_normal((3, 4)).astype("float32")
    dim = data.shape[axis]
    indices = RNG.integers(-dim, dim, size=(3, 4) if axis else (2, 4)).astype("int64")
    check([node("GatherElements", ["x", "i"], axis=axis)], {"x": data}, inits={"i": indices})
    check([node("GatherElements", ["x", "i"], axis=axis)], {"x": data, "i": indices})  # indices at run time


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd(batch_dims):
    data = RNG.standard_normal((2, 3, 4)).astype("float32")
    if batch_dims:
        indices = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 2]]], "int64")  # (2, 2, 2): batch, count, tuple
    else:
        indices = np.array([[0, 2], [1, 1], [0, 0]], "int64")
    check([node("GatherND", ["x", "i"], batch_dims=batch_dims)], {"x": data, "i": indices})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatter_elements(reduction):
    data = RNG.standard_normal((3, 4)).astype("float32")
    indices = np.array([[1, -1], [0, 2], [3, 3]], "int64")
    updates = RNG.standard_normal((3, 2)).astype("float32")
    if reduction == "none":
        indices = np.array([[1, -1], [0, 2], [3, 1]], "int64")  # ONNX leaves repeated updates undefined
    check([node("ScatterElements", ["x", "i", "u"], axis=1, reduction=reduction)],
          {"x": data, "i": indices, "u": updates})


def test_scatter_is_scatter_elements():
    data = np.zeros((3, 3), "float32")
    check([node("Scatter", ["x", "i", "u"], axis=0)], {"x": data, "i": np.array([[1, 0, 2]], "int64"),
                                                          "u": np.array([[1.0, 2.0, 3.0]], "float32")}, opset=9)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
def test_scatter_nd(reduction):
    data = RNG.standard_normal((4, 3, 2)).astype("float32")
    indices = np.array([[1, 0], [3, 2], [0, 1]], "int64")
    updates = RNG.standard_normal((3, 2)).astype("float32")
    check([node("ScatterND", ["x", "i", "u"], reduction=reduction)], {"x": data, "i": indices, "u": updates})


@pytest.mark.parametrize("equation, shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
                                              ("...ii->...i", [(2, 3, 3)]), ("i,i", [(4,), (4,)]), ("ij->", [(2, 3)])])
def test_einsum(equation, shapes):
    inputs = {f"x{n}": RNG.standard_normal(s).astype("float32") for n, s in enumerate(shapes)}
    check([node("Einsum", list(inputs), equation=equation)], inputs)


# ----------------------------------------------------------------------------- RoiAlign, NonMaxSuppression


ROI_DATA = RNG.standard_normal((2, 3, 8, 10)).astype("float32")
ROIS = np.array([[0.5, 1.0, 6.0, 7.5], [2.0, 0.0, 9.0, 3.0], [0.0, 0.0, 10.0, 8.0]], "float32")
BATCH = np.array([1, 0, 1], "int64")


@pytest.mark.parametrize("opset, attrs", [(10, {}), (16, {}), (16, {"coordinate_transformation_mode": "output_half_pixel"}),
                                          (16, {"sampling_ratio": 2, "spatial_scale": 0.5})])
def test_roi_align(opset, attrs):
    check([node("RoiAlign", ["x", "r", "b"], output_height=3, output_width=2, **attrs)],
          {"x": ROI_DATA, "r": ROIS, "b": BATCH}, opset=opset)


BOXES = np.array([[[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, -0.1, 1.0, 0.9], [0.0, 10.0, 1.0, 11.0],
                   [0.0, 10.1, 1.0, 11.1], [0.0, 100.0, 1.0, 101.0]]], "float32")
SCORES = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.8, 0.7, 0.2, 0.9, 0.4]]], "float32")


@pytest.mark.parametrize("limit, center", [(3, 0), (2, 0), (3, 1)])
def test_non_max_suppression_has_a_run_time_row_count(limit, center):
    boxes = BOXES
    if center:  # the same boxes as centre, size
        boxes = np.concatenate([(BOXES[..., 2:] + BOXES[..., :2]) / 2, BOXES[..., 2:] - BOXES[..., :2]], axis=-1)
        boxes = boxes[..., [1, 0, 3, 2]].astype("float32")  # [x_c, y_c, w, h]
    mod = check([node("NonMaxSuppression", ["b", "s", "m", "i", "t"], center_point_box=center)],
                {"b": boxes, "s": SCORES}, [("y", "int64")],
                inits={"m": np.array([limit], "int64"), "i": np.array([0.5], "float32"),
                       "t": np.array([0.0], "float32")})
    assert mod["main"].body.checked_type.shape[0] is ANY


def test_non_max_suppression_without_a_limit_selects_nothing():
    check([node("NonMaxSuppression", ["b", "s"])], {"b": BOXES, "s": SCORES}, [("y", "int64")])
