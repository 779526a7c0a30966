"""vision.roi_align and vision.all_class_non_max_suppression (irtool/ops/vision.py): declarations
against TVM v0.19, relations, and the references against onnxruntime's RoiAlign (opset 10,
TOPI's coordinates) and NonMaxSuppression (where TOPI and ONNX agree), and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import T, assert_type, rel, rel_error

from irtool.ir.types import ANY, TupleType
from irtool.ops import REQUIRED, OpPattern, lookup

onnx_helper = pytest.importorskip("onnx.helper")
ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(5)


def test_declarations_match_tvm():
    roi = lookup("vision.roi_align")
    assert roi.args == ("data", "rois")
    assert [(a.name, a.kind, a.default) for a in roi.attrs] == [
        ("pooled_size", "ints", REQUIRED), ("spatial_scale", "float", REQUIRED), ("sample_ratio", "int", -1),
        ("layout", "str", "NCHW"), ("mode", "str", "avg")]
    assert roi.pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    nms = lookup("vision.all_class_non_max_suppression")
    assert nms.args == ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")
    assert [(a.name, a.default) for a in nms.attrs] == [("output_format", "onnx")]
    assert nms.pattern == OpPattern.OPAQUE


def _ort(op, inputs, outputs, opset=10, **attrs):
    names = [f"in{i}" for i in range(len(inputs))]
    ins = [onnx_helper.make_tensor_value_info(n, onnx_helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
           for n, x in zip(names, inputs)]
    outs = [onnx_helper.make_tensor_value_info(f"out{i}", onnx_helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
            for i, d in enumerate(outputs)]
    graph = onnx_helper.make_graph([onnx_helper.make_node(op, names, [o.name for o in outs], **attrs)], "g", ins,
                                   outs)
    model = onnx_helper.make_model(graph, opset_imports=[onnx_helper.make_opsetid("", opset)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))


# ------------------------------------------------------------------ roi_align


def test_roi_align_relation():
    assert_type(rel("vision.roi_align", T((2, 3, 8, 8)), T((ANY, 5)), pooled_size=(2, 3), spatial_scale=1.0),
                (ANY, 3, 2, 3), "float32")
    assert_type(rel("vision.roi_align", T((2, 8, 8, 3)), T((4, 5)), pooled_size=(2, 2), spatial_scale=1.0,
                    layout="NHWC"), (4, 2, 2, 3), "float32")
    assert "4-D data" in rel_error("vision.roi_align", T((3, 8, 8)), T((4, 5)), pooled_size=(2, 2), spatial_scale=1.0)
    assert "(R, 5)" in rel_error("vision.roi_align", T((1, 3, 8, 8)), T((4, 4)), pooled_size=(2, 2),
                                 spatial_scale=1.0)
    assert "mode" in rel_error("vision.roi_align", T((1, 3, 8, 8)), T((4, 5)), pooled_size=(2, 2),
                               spatial_scale=1.0, mode="sum")


def test_roi_align_by_hand():
    # a 2x2 image, one bin over the whole 2x2 roi, one sample at its centre (1, 1): the
    # clamped bilinear sample there is the bottom-right pixel
    data = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], "float32")
    out = lookup("vision.roi_align").ref(data, np.array([[0, 0, 0, 2, 2]], "float32"), pooled_size=(1, 1),
                                         spatial_scale=1.0, sample_ratio=1)
    assert out.tolist() == [[[[4.0]]]]
    # a sample at (0.5, 0.5) averages the four pixels
    out = lookup("vision.roi_align").ref(data, np.array([[0, 0, 0, 1, 1]], "float32"), pooled_size=(1, 1),
                                         spatial_scale=1.0, sample_ratio=1)
    assert out.tolist() == [[[[2.5]]]]


@pytest.mark.parametrize("pooled, scale, ratio", [((2, 2), 1.0, 0), ((3, 2), 0.5, 2), ((1, 4), 0.25, 0)])
def test_roi_align_avg_against_onnxruntime(pooled, scale, ratio):
    data = RNG.standard_normal((2, 3, 10, 12)).astype("float32")
    corners = RNG.uniform(-2, 14 / scale, size=(5, 4)).astype("float32")
    rois = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])],
                          axis=1)
    batch = RNG.integers(0, 2, size=5).astype("int64")
    (want,) = _ort("RoiAlign", [data, rois, batch], ["float32"], output_height=pooled[0], output_width=pooled[1],
                   spatial_scale=scale, sampling_ratio=ratio)
    full = np.concatenate([batch[:, None].astype("float32"), rois], axis=1)
    got = lookup("vision.roi_align").ref(data, full, pooled_size=pooled, spatial_scale=scale,
                                         sample_ratio=ratio if ratio else -1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    nhwc = lookup("vision.roi_align").ref(data.transpose(0, 2, 3, 1), full, pooled_size=pooled, spatial_scale=scale,
                                          sample_ratio=ratio if ratio else -1, layout="NHWC")
    np.testing.assert_allclose(nhwc, got.transpose(0, 2, 3, 1), rtol=1e-6)


# ------------------------------------------------------------------ roi_pool


def test_roi_pool_declaration_and_relation():
    pool = lookup("vision.roi_pool")
    assert pool.args == ("data", "rois")
    assert [(a.name, a.kind, a.default) for a in pool.attrs] == [
        ("pooled_size", "ints", REQUIRED), ("spatial_scale", "float", REQUIRED), ("layout", "str", "NCHW")]
    assert pool.pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert_type(rel("vision.roi_pool", T((2, 3, 8, 8)), T((ANY, 5)), pooled_size=(2, 3), spatial_scale=1.0),
                (ANY, 3, 2, 3), "float32")
    assert_type(rel("vision.roi_pool", T((2, 8, 8, 3)), T((4, 5)), pooled_size=(2, 2), spatial_scale=0.5,
                    layout="NHWC"), (4, 2, 2, 3), "float32")
    assert "(R, 5)" in rel_error("vision.roi_pool", T((1, 3, 8, 8)), T((4, 4)), pooled_size=(2, 2), spatial_scale=1.0)


def test_roi_pool_by_hand():
    data = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    # roi (0,0)-(2,2) inclusive is 3x3 pixels; 2x2 bins of 1.5 pixels: [0,2) and [1,3) per side
    out = lookup("vision.roi_pool").ref(data, np.array([[0, 0, 0, 2, 2]], "float32"), pooled_size=(2, 2),
                                        spatial_scale=1.0)
    np.testing.assert_array_equal(out[0, 0], [[5, 6], [9, 10]])
    # a roi wholly outside the image: every bin is empty, so 0
    out = lookup("vision.roi_pool").ref(data, np.array([[0, 9, 9, 12, 12]], "float32"), pooled_size=(1, 1),
                                        spatial_scale=1.0)
    assert out[0, 0, 0, 0] == 0


@pytest.mark.parametrize("pooled, scale", [((2, 2), 1.0), ((3, 2), 0.5), ((1, 4), 0.25)])
def test_roi_pool_against_onnxruntime(pooled, scale):
    data = RNG.standard_normal((2, 3, 10, 12)).astype("float32")
    corners = RNG.uniform(0, 11 / scale, size=(5, 4)).astype("float32")
    rois = np.concatenate([RNG.integers(0, 2, (5, 1)).astype("float32"),
                           np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])],
                          axis=1)
    (want,) = _ort("MaxRoiPool", [data, rois], ["float32"], pooled_shape=list(pooled), spatial_scale=scale)
    got = lookup("vision.roi_pool").ref(data, rois, pooled_size=pooled, spatial_scale=scale)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    nhwc = lookup("vision.roi_pool").ref(data.transpose(0, 2, 3, 1), rois, pooled_size=pooled, spatial_scale=scale,
                                         layout="NHWC")
    np.testing.assert_allclose(nhwc, got.transpose(0, 2, 3, 1), rtol=1e-6)


# ------------------------------------------------------------------ all_class_non_max_suppression


def test_nms_relation():
    t = rel("vision.all_class_non_max_suppression", T((2, 6, 4)), T((2, 3, 6)), T((), "int64"), T(()), T(()))
    assert isinstance(t, TupleType)
    assert_type(t.fields[0], (36, 3), "int64")
    assert_type(t.fields[1], (1,), "int64")
    t = rel("vision.all_class_non_max_suppression", T((ANY, 6, 4)), T((ANY, 3, 6)), T((), "int64"), T(()), T(()))
    assert_type(t.fields[0], (ANY, 3), "int64")
    assert "must be a scalar" in rel_error("vision.all_class_non_max_suppression", T((2, 6, 4)), T((2, 3, 6)),
                                           T((1,), "int64"), T(()), T(()))
    assert "(B, N, 4)" in rel_error("vision.all_class_non_max_suppression", T((2, 6, 5)), T((2, 3, 6)),
                                    T((), "int64"), T(()), T(()))


def _nms(boxes, scores, limit, iou, score):
    rows, count = lookup("vision.all_class_non_max_suppression").ref(
        boxes, scores, np.array(limit, "int64"), np.array(iou, "float32"), np.array(score, "float32"))
    return rows[:int(count[0])]


@pytest.mark.parametrize("limit, iou, score", [(3, 0.5, 0.2), (10, 0.3, 0.0), (1, 0.7, 0.5)])
def test_nms_against_onnxruntime(limit, iou, score):
    corners = RNG.uniform(0, 10, size=(2, 12, 4)).astype("float32")
    boxes = np.concatenate([corners[..., :2], corners[..., :2] + RNG.uniform(1, 5, size=(2, 12, 2))], axis=-1)
    boxes = boxes.astype("float32")
    scores = RNG.uniform(0.01, 1, size=(2, 3, 12)).astype("float32")
    (want,) = _ort("NonMaxSuppression", [boxes, scores, np.array([limit], "int64"), np.array([iou], "float32"),
                                         np.array([score], "float32")], ["int64"])
    np.testing.assert_array_equal(_nms(boxes, scores, limit, iou, score), want)


def test_nms_topi_rules():
    boxes = np.array([[[0, 0, 2, 2], [2, 2, 0, 0.2], [0, 0, 2, 2.1], [5, 5, 6, 6]]], "float32")  # box 1 flipped
    scores = np.array([[[0.9, 0.8, 0.7, 0.6]]], "float32")
    # corners in any order: box 1 overlaps box 0 by 0.9
    assert _nms(boxes, scores, 0, 0.5, 0.0).tolist() == [[0, 0, 0], [0, 0, 3]]  # limit 0: no limit
    assert _nms(boxes, scores, 1, 0.5, 0.0).tolist() == [[0, 0, 0]]
    assert _nms(boxes, scores, 5, 0.0, 0.0).tolist() == []  # TOPI: iou_threshold <= 0 selects nothing
    assert _nms(boxes, scores, 5, 0.5, 0.65).tolist() == [[0, 0, 0]]  # scores above the threshold only
    # an IoU of exactly 0.5 (4 / 8) suppresses at iou_threshold 0.5 (TOPI's >=; ONNX keeps it)
    pair = np.array([[[0, 0, 2, 2], [0, 0, 2, 4]]], "float32")
    assert _nms(pair, np.array([[[0.9, 0.8]]], "float32"), 5, 0.5, 0.0).tolist() == [[0, 0, 0]]
    assert _nms(pair, np.array([[[0.9, 0.8]]], "float32"), 5, 0.51, 0.0).tolist() == [[0, 0, 0], [0, 0, 1]]


# ------------------------------------------------------------------ image.grid_sample


def test_grid_sample_declaration_and_relation():
    gs = lookup("image.grid_sample")
    assert gs.args == ("data", "grid")
    assert [(a.name, a.default) for a in gs.attrs] == [("method", "bilinear"), ("layout", "NCHW"),
                                                       ("padding_mode", "zeros"), ("align_corners", True)]
    assert gs.pattern == OpPattern.INJECTIVE
    assert_type(rel("image.grid_sample", T((2, 3, 8, 9)), T((2, 2, 4, ANY))), (2, 3, 4, ANY), "float32")
    assert "(N, 2, H, W)" in rel_error("image.grid_sample", T((2, 3, 8, 9)), T((2, 3, 4, 4)))
    assert "method" in rel_error("image.grid_sample", T((2, 3, 8, 9)), T((2, 2, 4, 4)), method="area")


def test_grid_sample_by_hand():
    data = np.arange(12, dtype="float32").reshape(1, 1, 3, 4)
    ref = lookup("image.grid_sample").ref
    corners = np.array([-1.0, 1.0], "float32")
    grid = np.stack(np.meshgrid(corners, corners)[::1], axis=0)[None]  # x then y
    # align_corners: the extremes are the corner pixels' centres
    np.testing.assert_array_equal(ref(data, grid, align_corners=True)[0, 0], [[0, 3], [8, 11]])
    # not aligned: they are the corners' outer edges, half zeros in bilinear with zero padding
    np.testing.assert_allclose(ref(data, grid, align_corners=False)[0, 0], [[0, 0.75], [2, 11 / 4]])
    np.testing.assert_array_equal(ref(data, grid, align_corners=False, padding_mode="border")[0, 0], [[0, 3], [8, 11]])


@pytest.mark.parametrize("method, onnx_mode", [("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_against_onnxruntime(method, onnx_mode, padding_mode):
    data = RNG.standard_normal((2, 3, 6, 5)).astype("float32")
    grid = RNG.uniform(-1.5, 1.5, (2, 4, 3, 2)).astype("float32")
    for align in (0, 1):
        (want,) = _ort("GridSample", [data, grid], ["float32"], opset=20, mode=onnx_mode, padding_mode=padding_mode,
                       align_corners=align)
        got = lookup("image.grid_sample").ref(data, grid.transpose(0, 3, 1, 2), method=method,
                                              padding_mode=padding_mode, align_corners=bool(align))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
