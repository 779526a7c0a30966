"""Vision operators: `vision.roi_align`, `vision.roi_pool` and `vision.all_class_non_max_suppression`, as TVM
v0.19 defines them (src/relay/op/vision/rcnn_op.cc, nms.cc) and TOPI computes them
(python/tvm/topi/vision/rcnn/roi_align.py, vision/nms.py).

    roi_align(data, rois, pooled_size, spatial_scale, sample_ratio=-1, layout, mode)
        rois (R, 5) rows [batch index, x1, y1, x2, y2]; each output bin (R, C, ph, pw) the
        average (or max) of a grid of bilinear samples: TOPI scales the roi, makes it at
        least 1x1, samples `sample_ratio` (or ceil(roi size / pooled size)) points per bin
        side at the sub-bin centres; a sample beyond one pixel outside the image is 0, else
        it is clamped to the image
    roi_pool(data, rois, pooled_size, spatial_scale, layout)
        rois (R, 5) as for roi_align; TOPI (rcnn/roi_pool.py) rounds the scaled corners to
        whole pixels, makes the roi at least 1x1 (end inclusive), splits it into
        pooled_size bins of [floor(i * bin), ceil((i + 1) * bin)) pixels, clipped to the
        image; each output the max of its bin, 0 for an empty bin
    all_class_non_max_suppression(boxes, scores, max_output_boxes_per_class,
                                  iou_threshold, score_threshold, output_format="onnx")
        boxes (B, N, 4) as two corners, scores (B, C, N); per batch and class the boxes
        scoring above score_threshold in descending (stable) score order, each kept box
        suppressing the later ones of IoU >= iou_threshold, at most max_output (0: no
        limit); the result ((B*C*N, 3) int64 rows [batch, class, box], the count (1,)):
        only the first `count` rows are meaningful. TOPI selects nothing when
        iou_threshold <= 0, and only a box of positive score can be suppressed. Relax (TVM
        0.27) also has output_format="tensorflow": per batch the kept boxes' [class, box]
        rows (B, C*N, 2), their scores (B, C*N) and counts (B,), zeros after the count; its boxes
        may be (B, N, K) of any K (`_topi_boxes`).

legalize-ops lowers the Relax roi_align and roi_pool with TOPI 0.27's computes
(codegen/topi/vision.py); all_class_non_max_suppression with TOPI 0.27's IR-builder programs (codegen/topi/nms.py).
"""

from __future__ import annotations

import math

from ..ir import tir
from ..ir.types import ANY, TensorType, TupleType
from .common import fmt_shape, np, tensor_arg
from .registry import REQUIRED, AttrSpec, OpDef, OpPattern, TypeRelError, register


def roi_align_rel(args, attrs):
    data, rois = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "rois")
    if len(data.shape) != 4:
        raise TypeRelError(f"roi_align needs 4-D data, got shape {fmt_shape(data.shape)}")
    if len(rois.shape) != 2 or rois.shape[1] not in (5, ANY):
        raise TypeRelError(f"roi_align needs rois of shape (R, 5), got {fmt_shape(rois.shape)}")
    pooled, layout, mode = attrs["pooled_size"], attrs["layout"], attrs["mode"]
    if len(pooled) != 2 or min(pooled) < 1:
        raise TypeRelError(f"roi_align pooled_size must be two positive sizes, got {list(pooled)}")
    if mode not in ("avg", "max"):
        raise TypeRelError(f"roi_align mode must be \"avg\" or \"max\", got \"{mode}\"")
    if layout == "NCHW":
        return TensorType((rois.shape[0], data.shape[1], *pooled), data.dtype)
    if layout == "NHWC":
        return TensorType((rois.shape[0], *pooled, data.shape[3]), data.dtype)
    raise TypeRelError(f"roi_align layout must be \"NCHW\" or \"NHWC\", got \"{layout}\"")


def _bilinear(image, ys, xs):
    """TOPI's `_bilinear`: image (C, H, W), samples ys (gh,) x xs (gw,) -> (C, gh, gw)."""
    _, h, w = image.shape
    y, x = ys[:, None], xs[None, :]
    outside = (y < -1.0) | (x < -1.0) | (y > h) | (x > w)
    y, x = np.clip(y, 0.0, h - 1), np.clip(x, 0.0, w - 1)
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y1, x1 = np.ceil(y).astype(np.int64), np.ceil(x).astype(np.int64)
    ly, lx = y - y0, x - x0
    bottom = (1 - lx) * image[:, y0, x0] + lx * image[:, y0, x1]
    top = (1 - lx) * image[:, y1, x0] + lx * image[:, y1, x1]
    return np.where(outside, 0.0, (1 - ly) * bottom + ly * top)


def _roi_align(data, rois, pooled_size, spatial_scale, sample_ratio=-1, layout="NCHW", mode="avg", aligned=False):
    """`aligned` is Relax's (TVM 0.27's TOPI): the roi keeps its size, even below one pixel (no
    half-pixel shift); a bin without samples is 0 (avg) or the dtype's lowest value (max)."""
    image = data.transpose(0, 3, 1, 2) if layout == "NHWC" else data
    ph, pw = pooled_size
    out = np.zeros((rois.shape[0], image.shape[1], ph, pw), np.float64)
    for r, roi in enumerate(rois.astype(np.float64)):
        x0, y0, x1, y1 = roi[1:5] * spatial_scale
        roi_h, roi_w = y1 - y0, x1 - x0
        if not aligned:  # malformed rois become 1x1
            roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
        bin_h, bin_w = roi_h / ph, roi_w / pw
        gh = sample_ratio if sample_ratio > 0 else math.ceil(roi_h / ph)
        gw = sample_ratio if sample_ratio > 0 else math.ceil(roi_w / pw)
        if gh <= 0 or gw <= 0:
            out[r] = 0.0 if mode == "avg" else np.finfo(data.dtype).min
            continue
        sub_y, sub_x = (np.arange(gh) + 0.5) * bin_h / gh, (np.arange(gw) + 0.5) * bin_w / gw
        for i in range(ph):
            for j in range(pw):
                samples = _bilinear(image[int(roi[0])].astype(np.float64), y0 + i * bin_h + sub_y,
                                    x0 + j * bin_w + sub_x)
                out[r, :, i, j] = samples.mean(axis=(1, 2)) if mode == "avg" else samples.max(axis=(1, 2))
    out = out.astype(data.dtype)
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


def roi_pool_rel(args, attrs):
    return roi_align_rel(args, {"pooled_size": attrs["pooled_size"], "layout": attrs["layout"], "mode": "max"})


def _round_half_away(x: float) -> int:
    """TOPI's `te.round` of a roi corner (std::round: halves away from zero)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _roi_pool(data, rois, pooled_size, spatial_scale, layout="NCHW", round_half_up=False):
    """`round_half_up`: the corners rounded as TOPI 0.27 (Relax) does, floor(x + 0.5), in
    float32; otherwise halves away from zero (Relay v0.19's te.round)."""
    image = data.transpose(0, 3, 1, 2) if layout == "NHWC" else data
    _, channels, height, width = image.shape
    ph, pw = pooled_size
    out = np.zeros((rois.shape[0], channels, ph, pw), data.dtype)
    for r, roi in enumerate(rois.astype(np.float64)):
        if round_half_up:
            x0, y0, x1, y1 = (int(np.floor(np.float32(v) * np.float32(spatial_scale) + np.float32(0.5)))
                              for v in roi[1:5])
        else:
            x0, y0, x1, y1 = (_round_half_away(v * spatial_scale) for v in roi[1:5])
        real = np.float32 if round_half_up else float  # TOPI 0.27's bin arithmetic is float32
        bin_h = real(max(y1 - y0 + 1, 1)) / real(ph)
        bin_w = real(max(x1 - x0 + 1, 1)) / real(pw)
        for i in range(ph):
            hs = min(max(math.floor(real(i) * bin_h) + y0, 0), height)
            he = min(max(math.ceil(real(i + 1) * bin_h) + y0, 0), height)
            for j in range(pw):
                ws = min(max(math.floor(real(j) * bin_w) + x0, 0), width)
                we = min(max(math.ceil(real(j + 1) * bin_w) + x0, 0), width)
                if he > hs and we > ws:
                    out[r, :, i, j] = image[int(roi[0]), :, hs:he, ws:we].max(axis=(1, 2))
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


def _nms_operands(args, scalars: bool) -> None:
    """The operands' checks: boxes (B, N, 4), scores (B, C, N); the limit and thresholds scalars
    for Relay (`scalars`); TVM 0.27's Relax op checks only the ranks of boxes and scores (boxes
    (B, N, K) of any K)."""
    boxes, scores = tensor_arg(args, 0, "boxes"), tensor_arg(args, 1, "scores")
    for i, name in ((2, "max_output_boxes_per_class"), (3, "iou_threshold"), (4, "score_threshold")):
        if tensor_arg(args, i, name).shape and scalars:
            raise TypeRelError(f"all_class_non_max_suppression `{name}` must be a scalar, got shape "
                               f"{fmt_shape(args[i].shape)}")
    if len(boxes.shape) != 3 or scalars and boxes.shape[2] not in (4, ANY):
        raise TypeRelError(f"all_class_non_max_suppression needs boxes of shape (B, N, 4), got "
                           f"{fmt_shape(boxes.shape)}")
    if len(scores.shape) != 3:
        raise TypeRelError(f"all_class_non_max_suppression needs scores of shape (B, C, N), got "
                           f"{fmt_shape(scores.shape)}")


def nms_rel(args, attrs):
    _nms_operands(args, scalars=True)
    boxes, scores = args[0], args[1]
    if attrs["output_format"] != "onnx":
        raise TypeRelError(f"all_class_non_max_suppression output_format \"{attrs['output_format']}\" is not "
                           "supported (only \"onnx\")")
    b, c, n = boxes.shape[0], scores.shape[1], boxes.shape[1]
    rows = ANY if ANY in (b, c, n) else b * c * n
    return TupleType([TensorType((rows, 3), "int64"), TensorType((1,), "int64")])


def nms_relax_rel(args, attrs):
    """TVM 0.27's Relax all_class_non_max_suppression: also the "tensorflow" format, per batch
    (B, C * N, 2) int64 [class, box] rows, (B, C * N) float32 scores and (B,) int64 counts."""
    _nms_operands(args, scalars=False)
    if attrs["output_format"] not in ("onnx", "tensorflow"):
        raise TypeRelError(f"all_class_non_max_suppression output_format \"{attrs['output_format']}\" is not "
                           "supported (\"onnx\" or \"tensorflow\")")
    b, c, n = args[0].shape[0], args[1].shape[1], args[0].shape[1]
    if attrs["output_format"] == "onnx":
        return TupleType([TensorType((ANY if ANY in (b, c, n) else b * c * n, 3), "int64"), TensorType((1,), "int64")])
    rows = ANY if ANY in (c, n) else c * n
    return TupleType([TensorType((b, rows, 2), "int64"), TensorType((b, rows), "float32"), TensorType((b,), "int64")])


def _dim_mul(a, b):
    """TVM's PrimExpr `a * b` on int64 dims: constants folded, `1 * x` is x, no reassociation
    (`nb * 2 * 5` stays, `2 * n` stays)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1 or isinstance(b, int) and b == 1:
        return b if isinstance(a, int) and a == 1 else a
    return tir.BinOp("mul", tir.IntImm(a, "int64") if isinstance(a, int) else a,
                     tir.IntImm(b, "int64") if isinstance(b, int) else b)


def nms_relax_sym(args, attrs):
    """nms_relax_rel on symbolic dims, as TVM's InferTypeAllClassNMS writes them: ONNX rows
    `batch * num_classes * num_boxes`, TensorFlow `num_classes * num_boxes` per batch."""
    _nms_operands([TensorType(tuple(d if isinstance(d, int) else ANY for d in a.shape), a.dtype) for a in args],
                  scalars=False)
    b, c, n = args[0].shape[0], args[1].shape[1], args[0].shape[1]
    if attrs["output_format"] == "onnx":
        return TupleType([TensorType((_dim_mul(_dim_mul(b, c), n), 3), "int64"), TensorType((1,), "int64")])
    rows = _dim_mul(c, n)
    return TupleType([TensorType((b, rows, 2), "int64"), TensorType((b, rows), "float32"), TensorType((b,), "int64")])


def _iou(a, b) -> float:
    """TOPI's calculate_overlap: corners in any order."""
    al, at, ar, ab = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    bl, bt, br, bb = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    area = max(0.0, min(ab, bb) - max(at, bt)) * max(0.0, min(ar, br) - max(al, bl))
    union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - area
    return 0.0 if union <= 0 else area / union


def _first(x, name: str):
    flat = np.asarray(x).reshape(-1)
    if flat.size == 0:
        raise ValueError(f"all_class_non_max_suppression `{name}` has no elements")
    return flat[0]


def _topi_boxes(boxes):
    """The boxes TVM 0.27's legalized code reads: box j of batch b the four values at flat offset
    (b * N + j) * 4, whatever the last dimension K (its struct info accepts any); K < 4 reads past
    the buffer's end."""
    batch, n, width = boxes.shape
    if width == 4:
        return boxes
    if width < 4:
        raise ValueError(f"all_class_non_max_suppression boxes of shape {boxes.shape}: TVM's legalized code reads "
                         "4 values per box, past the end of boxes with fewer")
    return boxes.reshape(-1)[:batch * n * 4].reshape(batch, n, 4)


def _all_class_nms(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold,
                   output_format="onnx", topi_027=False):
    """The op's reference: Relay's scalar operands, a limit <= 0 no limit. With `topi_027` (the
    Relax op, as TVM 0.27's TOPI legalizes it): a limit <= 0 selects nothing (a box is kept while
    `count < max_output_size`); an iou_threshold of shape (1,) is its element, of another non-0-d
    shape TOPI's 0.5 (not read); a 1-element limit or score_threshold its element; a limit of no
    elements is N (TVM legalizes a limit that is not a constant as N per class; a constant one of
    no elements it cannot legalize); boxes (B, N, K) read as `_topi_boxes` does."""
    batch, classes, n = scores.shape
    if topi_027:
        iou = np.asarray(iou_threshold)
        iou_t = float(iou) if iou.ndim == 0 else float(iou[0]) if iou.shape == (1,) else 0.5
        limit = (n if np.size(max_output_boxes_per_class) == 0 else
                 int(_first(max_output_boxes_per_class, "max_output_boxes_per_class")))
        score_t = float(_first(score_threshold, "score_threshold"))
        boxes = _topi_boxes(boxes)
    else:
        limit, iou_t, score_t = int(max_output_boxes_per_class), float(iou_threshold), float(score_threshold)
    rows = []
    for b in range(batch):
        for c in range(classes):
            order = np.argsort(-scores[b, c].astype(np.float64), kind="stable")
            work = scores[b, c][order].astype(np.float64)  # TOPI's out_scores: -1 once suppressed
            valid = int(np.sum(work > score_t))
            if iou_t <= 0 or valid == 0:
                continue
            cap, kept = (limit if limit > 0 or topi_027 else valid), 0
            for j in range(valid):
                if kept >= cap:
                    break
                if work[j] <= -1.0:
                    continue
                rows.append((b, c, int(order[j])))
                kept += 1
                for k in range(j + 1, valid):
                    if work[k] > 0 and _iou(boxes[b, order[j]], boxes[b, order[k]]) >= iou_t:
                        work[k] = -1.0
    if output_format == "tensorflow":  # per batch, classes one after the other, zeros after the count
        indices = np.zeros((batch, classes * n, 2), np.int64)
        kept_scores = np.zeros((batch, classes * n), np.float32)
        counts = np.zeros((batch,), np.int64)
        for b, c, box in rows:
            indices[b, counts[b]] = (c, box)
            kept_scores[b, counts[b]] = scores[b, c, box]
            counts[b] += 1
        return indices, kept_scores, counts
    selected = np.zeros((batch * classes * n, 3), np.int64)
    if rows:
        selected[:len(rows)] = rows
    return selected, np.array([len(rows)], np.int64)


register(
    OpDef("vision.roi_align", ("data", "rois"), roi_align_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _roi_align,
          attrs=(AttrSpec("pooled_size", "ints", REQUIRED), AttrSpec("spatial_scale", "float", REQUIRED),
                 AttrSpec("sample_ratio", "int", -1), AttrSpec("layout", "str", "NCHW"),
                 AttrSpec("mode", "str", "avg"))),
    OpDef("vision.roi_pool", ("data", "rois"), roi_pool_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _roi_pool,
          attrs=(AttrSpec("pooled_size", "ints", REQUIRED), AttrSpec("spatial_scale", "float", REQUIRED),
                 AttrSpec("layout", "str", "NCHW"))),
    OpDef("vision.all_class_non_max_suppression",
          ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"), nms_rel,
          OpPattern.OPAQUE, _all_class_nms, attrs=(AttrSpec("output_format", "str", "onnx"),)),
)
