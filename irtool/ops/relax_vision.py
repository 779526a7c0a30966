"""TVM 0.27's Relax-only vision operators (no Relay counterpart in our registry): struct info as
src/relax/op/vision/nms.cc and multibox_transform_loc.cc infer it, NumPy references of TOPI's
semantics (python/tvm/topi/vision/nms.py, multibox_transform_loc.py), which LegalizeOps calls.

    get_valid_counts(data, score_threshold=0, id_index=0, score_index=1)
        data (B, N, K); per batch the rows whose score (column score_index) exceeds
        score_threshold, and whose class id (column id_index) is >= 0 unless id_index is -1,
        moved to the top in order: (valid_count (B,) int32, out_tensor (B, N, K) with -1 rows
        after the valid ones, out_indices (B, N) int32 the rows' input indices, then -1)
    non_max_suppression(data, valid_count, indices, max_output_size=-1, iou_threshold=0.5,
                        force_suppress=False, top_k=-1, coord_start=2, score_index=1,
                        id_index=0, return_indices=True, invalid_to_bottom=False,
                        soft_nms_sigma=0.0, score_threshold=0.0)
        per batch the first valid_count rows sorted by score (descending, stable), the first
        top_k (> 0) of them kept as candidates, the others -1 rows; hard NMS (sigma 0): a
        candidate of positive score is kept (at most max_output_size > 0) and suppresses (score
        and index -1) each later one of its class (any class with force_suppress or id_index
        -1) whose IoU with it (corners coord_start .. + 3, in any order) is >= iou_threshold; a
        candidate not kept becomes a -1 row. Soft NMS (sigma > 0): repeatedly the candidate of
        highest score above score_threshold is kept, moved up, and each later one of its class
        is dropped (IoU >= iou_threshold) or has its score multiplied by exp(-0.5 / sigma *
        IoU^2), dropped once no more above score_threshold. With return_indices: the kept boxes'
        `indices` values compacted (B, N) int32 (-1 after), their count (B, 1) int32 (soft NMS:
        the decayed data first, -1 rows after the kept ones); without: the data (hard NMS: the
        suppressed rows' score -1, the others as sorted; with invalid_to_bottom the rows of
        non-negative score moved to the top, -1 rows after)
    multibox_transform_loc(cls_pred, loc_pred, anchor, clip=False, threshold=0.0,
                           variances=(1.0, 1.0, 1.0, 1.0), keep_background=True, apply_softmax=True)
        cls_pred (B, C, N), loc_pred (B, 4 * N) as (x, y, w, h) per anchor, anchor (1, N, 4)
        as (left, top, right, bottom): the boxes (B, N, 4) (ymin, xmin, ymax, xmax) decoded
        TFLite's way (centre + encoding * variance * anchor size, half size
        exp(encoding * variance) * anchor size / 2; clipped to [0, 1] with clip), the scores
        (B, C, N) the softmax over classes (or cls_pred), 0 where below threshold, class 0
        zeroed without keep_background

The arithmetic is the data's dtype's, in TOPI's order, so that thresholds compare as TVM's
code compares them.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType, TupleType
from .common import np
from .registry import AttrSpec, TypeRelError

# TVM 0.27's attributes in print order, with the Python API's defaults
GET_VALID_COUNTS_ATTRS = (AttrSpec("score_threshold", "float", 0.0), AttrSpec("id_index", "int", 0),
                          AttrSpec("score_index", "int", 1))
NMS_ATTRS = (AttrSpec("max_output_size", "int", -1), AttrSpec("iou_threshold", "float", 0.5),
             AttrSpec("force_suppress", "bool", False), AttrSpec("top_k", "int", -1),
             AttrSpec("coord_start", "int", 2), AttrSpec("score_index", "int", 1), AttrSpec("id_index", "int", 0),
             AttrSpec("return_indices", "bool", True), AttrSpec("invalid_to_bottom", "bool", False),
             AttrSpec("soft_nms_sigma", "float", 0.0), AttrSpec("score_threshold", "float", 0.0))
MULTIBOX_ATTRS = (AttrSpec("clip", "bool", False), AttrSpec("threshold", "float", 0.0),
                  AttrSpec("variances", "doubles", (1.0, 1.0, 1.0, 1.0)), AttrSpec("keep_background", "bool", True),
                  AttrSpec("apply_softmax", "bool", True))

# ----------------------------------------------------------------------------- struct info
# Each op's checks work on (dims or None, rank, dtype) per argument: dims ints or TIR expressions
# (symbolic sizes; ANY from a Relay type), None where TVM's struct info has no shape.


def _static(d):
    from ..ir import tir

    if isinstance(d, int) and d is not ANY:
        return d
    return d.value if isinstance(d, tir.IntImm) else None


def _operand(a):
    """(dims or None, ndim, dtype) of a Relay TensorType or a Relax TensorStructInfo."""
    shape = getattr(a, "shape", None)
    if isinstance(shape, (tuple, list)):
        return tuple(shape), len(shape), a.dtype
    return None, getattr(a, "ndim", -1), a.dtype


def _tensor(dims, dtype, ndim, relay: bool):
    from ..ir.relax import TensorStructInfo

    if relay:
        return TensorType(tuple(ANY if d is None else d for d in dims) if dims is not None else (ANY,) * ndim, dtype)
    return TensorStructInfo(tuple(dims), dtype) if dims is not None else TensorStructInfo(None, dtype, ndim)


def _tuple(fields, relay: bool):
    from ..ir.relax import TupleStructInfo

    return TupleType(fields) if relay else TupleStructInfo(fields)


def _check_rank(op: str, what: str, ndim: int, want: int) -> None:
    """TVM's messages: "expects 3-D input" for data, "expects indices to be 2-D" for the others."""
    if ndim not in (-1, want):
        expects = f"{want}-D input" if what == "input" else f"{what} to be {want}-D"
        raise TypeRelError(f"{op} expects {expects}, got ndim {ndim}")


def _get_valid_counts(args, attrs, relay: bool):
    dims, ndim, dtype = _operand(args[0])
    _check_rank("get_valid_counts", "input", ndim, 3)
    if dims is None:
        return _tuple([_tensor(None, "int32", 1, relay), _tensor(None, dtype, 3, relay),
                       _tensor(None, "int32", 2, relay)], relay)
    batch, anchors, length = dims
    k = _static(length)
    if k is not None:
        if not 0 <= attrs["score_index"] < k:
            raise TypeRelError(f"get_valid_counts expects score_index to be in range [0, {k}), but got "
                               f"{attrs['score_index']}")
        if not -1 <= attrs["id_index"] < k:
            raise TypeRelError(f"get_valid_counts expects id_index to be in range [-1, {k}), but got "
                               f"{attrs['id_index']}")
    return _tuple([_tensor((batch,), "int32", 1, relay), _tensor(dims, dtype, 3, relay),
                   _tensor((batch, anchors), "int32", 2, relay)], relay)


def get_valid_counts_rel(args, attrs):
    return _get_valid_counts(args, attrs, relay=True)


def get_valid_counts_deduce(args_sinfo, attrs):
    return _get_valid_counts(args_sinfo, attrs, relay=False)


def _provably_equal(a, b) -> bool:
    from ..analysis.struct_info_fit import prim_equal

    if a is ANY or b is ANY:
        return True  # a Relay type's unknown size: nothing to prove against
    return prim_equal(a, b)


def _fmt(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _non_max_suppression(args, attrs, relay: bool):
    (dims, ndim, dtype), (vc_dims, vc_ndim, vc_dtype), (ix_dims, ix_ndim, ix_dtype) = map(_operand, args)
    _check_rank("non_max_suppression", "input", ndim, 3)
    _check_rank("non_max_suppression", "valid_count", vc_ndim, 1)
    _check_rank("non_max_suppression", "indices", ix_ndim, 2)
    for name, dt in (("valid_count", vc_dtype), ("indices", ix_dtype)):
        if dt not in ("", "int32"):
            raise TypeRelError(f"non_max_suppression expects {name} to have dtype int32, got {dt}")
    if dims is not None:
        batch, anchors, length = dims
        if vc_dims is not None and not _provably_equal(vc_dims[0], batch):
            raise TypeRelError(f"non_max_suppression expects valid_count to have shape [batch_size]. However, the "
                               f"given data tensor has batch size `{batch}` and the given valid_count tensor has "
                               f"shape {_fmt(vc_dims)}")
        if ix_dims is not None and not (_provably_equal(ix_dims[0], batch) and _provably_equal(ix_dims[1], anchors)):
            raise TypeRelError(f"non_max_suppression expects indices to have shape [batch_size, num_anchors]. "
                               f"However, the given data tensor has shape {_fmt(dims)} and the given indices tensor "
                               f"has shape {_fmt(ix_dims)}")
        k = _static(length)
        if k is not None:
            if not 0 <= attrs["score_index"] < k:
                raise TypeRelError(f"non_max_suppression expects score_index to be in range [0, {k}), but got "
                                   f"{attrs['score_index']}")
            if attrs["coord_start"] < 0 or attrs["coord_start"] + 3 >= k:
                raise TypeRelError(f"non_max_suppression expects coord_start to reference four consecutive box "
                                   f"coordinates within elem_length {k}, but got {attrs['coord_start']}")
            if not -1 <= attrs["id_index"] < k:
                raise TypeRelError(f"non_max_suppression expects id_index to be in range [-1, {k}), but got "
                                   f"{attrs['id_index']}")
    pair = None if dims is None else (dims[0], dims[1])
    count = None if dims is None else (dims[0], 1)
    data = _tensor(dims, dtype, 3, relay)
    if not attrs["return_indices"]:
        return data
    fields = [_tensor(pair, "int32", 2, relay), _tensor(count, "int32", 2, relay)]
    return _tuple(([data] if attrs["soft_nms_sigma"] > 0.0 else []) + fields, relay)


def non_max_suppression_rel(args, attrs):
    return _non_max_suppression(args, attrs, relay=True)


def non_max_suppression_deduce(args_sinfo, attrs):
    return _non_max_suppression(args_sinfo, attrs, relay=False)


def _multibox_transform_loc(args, attrs, relay: bool):
    (cls_dims, cls_ndim, dtype), (loc_dims, loc_ndim, loc_dtype), (an_dims, an_ndim, an_dtype) = map(_operand, args)
    op = "multibox_transform_loc"
    if len(attrs["variances"]) != 4:
        raise TypeRelError(f"{op}: variances must be length 4 (x,y,w,h), got {len(attrs['variances'])}")
    if cls_ndim not in (-1, 3):
        raise TypeRelError(f"{op}: cls_pred must be 3-D [B, num_classes, N], got ndim {cls_ndim}")
    if loc_ndim not in (-1, 2):
        raise TypeRelError(f"{op}: loc_pred must be 2-D [B, 4*N], got ndim {loc_ndim}")
    if an_ndim not in (-1, 3):
        raise TypeRelError(f"{op}: anchor must be 3-D [1, N, 4] ltrb, got ndim {an_ndim}")
    for name, dt in (("loc_pred", loc_dtype), ("anchor", an_dtype)):
        if dtype and dt and dt != dtype:
            raise TypeRelError(f"{op}: cls_pred and {name} dtype must match, got {dtype} vs {dt}")
    loc_len = _static(loc_dims[1]) if loc_dims is not None else None
    if loc_len is not None and loc_len % 4 != 0:
        raise TypeRelError(f"{op}: loc_pred.shape[1] must be divisible by 4, got {loc_len}")
    if cls_dims is not None and loc_dims is not None:
        cls_b, loc_b = _static(cls_dims[0]), _static(loc_dims[0])
        if cls_b is not None and loc_b is not None and cls_b != loc_b:
            raise TypeRelError(f"{op}: cls_pred.shape[0] must match loc_pred.shape[0], got B={cls_b} vs {loc_b}")
    if an_dims is not None:
        if _static(an_dims[0]) not in (None, 1):
            raise TypeRelError(f"{op}: anchor.shape[0] must be 1, got {_static(an_dims[0])}")
        if _static(an_dims[2]) not in (None, 4):
            raise TypeRelError(f"{op}: anchor.shape[2] must be 4 (ltrb), got {_static(an_dims[2])}")
    if cls_dims is None:
        return _tuple([_tensor(None, dtype, 3, relay), _tensor(None, dtype, 3, relay)], relay)
    batch, classes, anchors = cls_dims
    n = _static(anchors)
    if n is not None and loc_len is not None and loc_len != n * 4:
        raise TypeRelError(f"{op}: loc_pred.shape[1] must equal 4*N with N=cls_pred.shape[2], got loc_dim={loc_len}, "
                           f"N={n}")
    if n is not None and an_dims is not None and _static(an_dims[1]) not in (None, n):
        raise TypeRelError(f"{op}: anchor.shape[1] must equal N=cls_pred.shape[2], got anchor_N={_static(an_dims[1])}, "
                           f"N={n}")
    return _tuple([_tensor((batch, anchors, 4), dtype, 3, relay), _tensor(cls_dims, dtype, 3, relay)], relay)


def multibox_transform_loc_rel(args, attrs):
    return _multibox_transform_loc(args, attrs, relay=True)


def multibox_transform_loc_deduce(args_sinfo, attrs):
    return _multibox_transform_loc(args_sinfo, attrs, relay=False)


# ----------------------------------------------------------------------------- references


def _const(value: float, dtype):
    """TOPI's `tirx.const(value, dtype)`: an integer type truncates the float (0.25 is 0)."""
    dtype = np.dtype(dtype)
    return np.asarray(value if dtype.kind == "f" or dtype.name == "bfloat16" else int(value)).astype(dtype)[()]


def _cast_f32(value: float, dtype):
    """TOPI's `tvm.tirx.Cast(dtype, T.float32(value))`: the float32 value converted (-1.0 to an
    unsigned type wraps as the x86 conversion does)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(value, np.float32).astype(dtype)[()]


def _get_valid_counts_ref(data, score_threshold=0.0, id_index=0, score_index=1):
    batch, anchors, _ = data.shape
    threshold = _const(score_threshold, data.dtype)
    counts = np.zeros((batch,), np.int32)
    out = np.full(data.shape, _cast_f32(-1.0, data.dtype), data.dtype)
    out_indices = np.full((batch, anchors), -1, np.int32)
    for b in range(batch):
        for j in range(anchors):
            if data[b, j, score_index] > threshold and (id_index < 0 or data[b, j, id_index] >= 0):
                out[b, counts[b]] = data[b, j]
                out_indices[b, counts[b]] = j
                counts[b] += 1
    return counts, out, out_indices


def _iou(a, b, zero):
    """TOPI's IoU of two boxes (corners in any order), in their dtype."""
    a_l, a_t, a_r, a_b = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    b_l, b_t, b_r, b_b = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    width = max(zero, min(a_r, b_r) - max(a_l, b_l))
    height = max(zero, min(a_b, b_b) - max(a_t, b_t))
    inter = height * width
    union = (a_r - a_l) * (a_b - a_t) + (b_r - b_l) * (b_b - b_t) - inter
    return zero if union <= zero else inter / union


def _sorted_rows(scores, count: int):
    """The runtime's argsort_nms of one batch: the first `count` scores sorted (descending,
    stable), the other positions themselves."""
    n = len(scores)
    count = max(0, min(count, n))
    order = np.argsort(-scores[:count].astype(np.float64), kind="stable")
    return np.concatenate([order, np.arange(count, n)]).astype(np.int64)


def _non_max_suppression_ref(data, valid_count, indices, max_output_size=-1, iou_threshold=0.5,
                             force_suppress=False, top_k=-1, coord_start=2, score_index=1, id_index=0,
                             return_indices=True, invalid_to_bottom=False, soft_nms_sigma=0.0, score_threshold=0.0):
    batch, anchors, _ = data.shape
    soft = soft_nms_sigma > 0.0
    thresh, zero = _cast_f32(score_threshold if soft else 0.0, data.dtype), _cast_f32(0.0, data.dtype)
    iou_t, minus_one = _const(iou_threshold, data.dtype), _cast_f32(-1.0, data.dtype)
    out = np.empty_like(data)
    box_indices = np.empty((batch, anchors), np.int32)
    counts = np.zeros((batch, 1), np.int32)

    def same_class(j, k):
        return force_suppress or id_index < 0 or out[b, j, id_index] == out[b, k, id_index]

    def iou(j, k):
        return _iou(out[b, j, coord_start:coord_start + 4], out[b, k, coord_start:coord_start + 4], zero)

    def below_limit(kept):
        return kept < max_output_size if max_output_size > 0 else True

    for b in range(batch):
        nkeep = int(valid_count[b])
        if 0 < top_k < nkeep:
            nkeep = top_k
        order = _sorted_rows(data[b, :, score_index], int(valid_count[b]))
        for j in range(anchors):
            if j < nkeep:
                out[b, j], box_indices[b, j] = data[b, order[j]], order[j]
            else:
                out[b, j], box_indices[b, j] = minus_one, -1
        kept = 0
        if soft:
            scale = _cast_f32(-0.5 / soft_nms_sigma, data.dtype)
            for _ in range(nkeep):
                if not below_limit(kept):
                    continue
                best, best_score = -1, thresh
                for j in range(nkeep):
                    if j >= kept and box_indices[b, j] >= 0 and out[b, j, score_index] > best_score:
                        best, best_score = j, out[b, j, score_index]
                if best < 0:
                    continue
                if best != kept:
                    box_indices[b, [kept, best]] = box_indices[b, [best, kept]]
                    out[b, [kept, best]] = out[b, [best, kept]]
                for j in range(nkeep):
                    if j > kept and box_indices[b, j] >= 0 and out[b, j, score_index] > thresh and same_class(kept, j):
                        overlap = iou(kept, j)
                        if overlap >= iou_t:
                            box_indices[b, j] = -1
                        if overlap < iou_t:
                            out[b, j, score_index] = out[b, j, score_index] * np.exp(scale * overlap * overlap)
                            if out[b, j, score_index] <= thresh:
                                box_indices[b, j] = -1
                kept += 1
            if return_indices:
                counts[b, 0] = kept
                for j in range(anchors):
                    if j < kept:
                        box_indices[b, j] = indices[b, box_indices[b, j]]
                    else:
                        out[b, j], box_indices[b, j] = minus_one, -1
            else:
                out[b, kept:] = minus_one
            continue
        for j in range(max(nkeep, 0)):
            if out[b, j, score_index] > thresh and below_limit(kept):
                kept += 1
                for k in range(j + 1, nkeep):
                    if out[b, k, score_index] > thresh and same_class(j, k) and iou(j, k) >= iou_t:
                        out[b, k, score_index], box_indices[b, k] = minus_one, -1
            else:
                out[b, j], box_indices[b, j] = minus_one, -1
        if return_indices:
            valid = 0
            for j in range(anchors):
                if box_indices[b, j] >= 0:
                    box_indices[b, valid] = indices[b, box_indices[b, j]]
                    valid += 1
            counts[b, 0] = valid
            box_indices[b, valid:] = -1
    if return_indices:
        return (out, box_indices, counts) if soft else (box_indices, counts)
    if invalid_to_bottom:
        moved = np.full_like(out, minus_one)
        for b in range(batch):
            rows = out[b][out[b, :, score_index] >= zero]
            moved[b, :len(rows)] = rows
        return moved
    return out


def _multibox_transform_loc_ref(cls_pred, loc_pred, anchor, clip=False, threshold=0.0,
                                variances=(1.0, 1.0, 1.0, 1.0), keep_background=True, apply_softmax=True):
    dtype = cls_pred.dtype
    batch, _, anchors = cls_pred.shape
    loc = loc_pred.reshape(batch, anchors, 4)
    vx, vy, vw, vh = (_const(v, dtype) for v in variances)
    half = _const(0.5, dtype)
    left, top, right, bottom = (anchor[0, :, k] for k in range(4))
    ay, ax, ah, aw = (top + bottom) * half, (left + right) * half, bottom - top, right - left
    ycenter = loc[..., 1] * vy * ah + ay
    xcenter = loc[..., 0] * vx * aw + ax
    half_h = half * np.exp(loc[..., 3] * vh) * ah
    half_w = half * np.exp(loc[..., 2] * vw) * aw
    boxes = np.stack([ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w], axis=-1)
    if clip:
        boxes = np.maximum(_const(0.0, dtype), np.minimum(_const(1.0, dtype), boxes))
    scores = cls_pred
    if apply_softmax:
        exp = np.exp(cls_pred - cls_pred.max(axis=1, keepdims=True))
        scores = exp / exp.sum(axis=1, keepdims=True)
    scores = scores * (scores >= _const(threshold, dtype)).astype(dtype)
    if not keep_background:
        scores = scores.copy()
        scores[:, 0, :] = 0
    return boxes.astype(cls_pred.dtype), scores.astype(cls_pred.dtype)
