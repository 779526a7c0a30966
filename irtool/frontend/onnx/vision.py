"""ONNX detection ops: RoiAlign, MaxRoiPool, NonMaxSuppression and MaxUnpool, as TVM
v0.19's frontend converts them.

- RoiAlign: the batch indices become the first column of the rois (cast to their dtype)
  for `vision.roi_align`. TVM v0.19 ignores opset 16's `coordinate_transformation_mode`
  (its TOPI is opset 10's "output_half_pixel"); the default "half_pixel" shifts the
  sampling grid by half a pixel, which here is the rois moved by -0.5 / spatial_scale.
  (TOPI still makes a roi smaller than a pixel 1x1, which ONNX's half_pixel does not.)
- NonMaxSuppression: `center_point_box=1` boxes become corners; the thresholds and the
  box limit are squeezed to scalars (absent thresholds are 0, as TVM makes them); then
  `vision.all_class_non_max_suppression` and a `dyn.strided_slice` of its first
  `count` rows: the result has `?` rows until the program runs. Where TOPI departs from
  ONNX: a box limit of 0 means "no limit" to TOPI and "select nothing" to ONNX, so an
  absent or constant-0 limit gives the empty (0, 3) result here (a run-time 0 still means
  no limit); TOPI selects nothing when iou_threshold <= 0 (ONNX then suppresses any
  overlap) and suppresses at IoU == iou_threshold (ONNX only above it).
- MaxRoiPool: `vision.roi_pool` (TOPI's: corners rounded to whole pixels, max per bin).
- MaxUnpool: a `scatter_elements` of the flattened values into flat zeros, reshaped.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...ir.expr import Tuple, TupleGetItem
from ...ir.types import ANY
from . import converter


def _dtype(ctx, x) -> str:
    return ctx.type_of(x).dtype


@converter("RoiAlign", 10, 16)
def _roi_align(ctx, inputs, attrs):
    data, rois, batch_indices = inputs
    mode = attrs.get("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.error(f"RoiAlign mode \"{mode}\" is not supported (avg, max are)")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if coord not in ("half_pixel", "output_half_pixel"):
        raise ctx.error(f"RoiAlign coordinate_transformation_mode \"{coord}\" is not supported")
    scale = float(attrs.get("spatial_scale", 1.0))
    dtype = _dtype(ctx, rois)
    if coord == "half_pixel":
        rois = ctx.call("subtract", rois, ctx.const(0.5 / scale, dtype))
    column = ctx.call("cast", ctx.call("expand_dims", batch_indices, axis=1), dtype=dtype)
    rois = ctx.call("concatenate", Tuple([column, rois]), axis=1)
    return ctx.call("vision.roi_align", data, rois, pooled_size=(int(attrs.get("output_height", 1)),
                                                                 int(attrs.get("output_width", 1))),
                    spatial_scale=scale, sample_ratio=int(attrs.get("sampling_ratio", 0)), mode=mode)


def _scalar(ctx, x, default, dtype: str):
    if x is None:
        return ctx.const(default, dtype)
    rank = len(ctx.shape_of(x))
    if rank > 1:
        raise ctx.error("NonMaxSuppression's limits and thresholds must be scalars")
    return ctx.call("squeeze", x, axis=(0,)) if rank == 1 else x


@converter("NonMaxSuppression", 10, 11)
def _non_max_suppression(ctx, inputs, attrs):
    boxes, scores = inputs[0], inputs[1]
    rest = list(inputs[2:]) + [None] * (5 - len(inputs))
    dtype = _dtype(ctx, boxes)
    if attrs.get("center_point_box", 0):
        parts = ctx.call("split", boxes, indices_or_sections=4, axis=2)
        xc, yc, w, h = (ctx.typed(TupleGetItem(parts, i)) for i in range(4))
        half_w = ctx.call("divide", w, ctx.const(2.0, dtype))
        half_h = ctx.call("divide", h, ctx.const(2.0, dtype))
        corners = [ctx.call("subtract", yc, half_h), ctx.call("subtract", xc, half_w),
                   ctx.call("add", yc, half_h), ctx.call("add", xc, half_w)]
        boxes = ctx.call("concatenate", Tuple(corners), axis=2)
    box_shape, score_shape = ctx.shape_of(boxes), ctx.shape_of(scores)
    if len(box_shape) == 3 and len(score_shape) == 3:
        for what, a, b in (("batch", box_shape[0], score_shape[0]), ("box count", box_shape[1], score_shape[2])):
            if ANY not in (a, b) and a != b:
                raise ctx.error(f"NonMaxSuppression: the boxes' {what} {a} differs from the scores' {b} "
                                f"(boxes {list(box_shape)}, scores {list(score_shape)})")
    limit = _scalar(ctx, rest[0], 0, "int64")
    iou = _scalar(ctx, rest[1], 0.0, "float32")
    score = _scalar(ctx, rest[2], 0.0, "float32")
    out = ctx.call("vision.all_class_non_max_suppression", boxes, scores, limit, iou, score)  # checks the shapes
    given = np.zeros(1) if rest[0] is None else ctx.value(rest[0])
    if given is not None and given.size and int(np.asarray(given).reshape(-1)[0]) == 0:
        return ctx.const(np.zeros((0, 3), "int64"))  # ONNX: no box may be selected
    rows, count = (ctx.typed(TupleGetItem(out, i)) for i in range(2))
    return ctx.call("dyn.strided_slice", rows, ctx.const([0], "int64"), count, ctx.const([1], "int64"))


@converter("MaxRoiPool", 1)
def _max_roi_pool(ctx, inputs, attrs):
    """`vision.roi_pool`: ONNX's rois already carry the batch index in their first column."""
    pooled = attrs.get("pooled_shape")
    if not pooled or len(pooled) != 2:
        raise ctx.error("MaxRoiPool needs a two-element pooled_shape")
    return ctx.call("vision.roi_pool", inputs[0], inputs[1], pooled_size=tuple(int(p) for p in pooled),
                    spatial_scale=float(attrs.get("spatial_scale", 1.0)))


@converter("MaxUnpool", 9, 11)
def _max_unpool(ctx, inputs, attrs):
    """The values scattered at their (whole-tensor flat) indices into zeros of the unpooled
    shape, per spatial axis (in - 1) * stride + kernel - pad_begin - pad_end, then, with an
    `output_shape` input (a constant), padded with zeros at the end of each axis up to it.
    That is onnx's reference and backend test; TVM v0.19 (and onnxruntime) instead read
    the indices as addressing `output_shape`, which places the values elsewhere."""
    x, indices = inputs[0], inputs[1]
    shape = ctx.shape_of(x)
    if not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"MaxUnpool needs a static input shape, got {list(shape)}")
    kernel = [int(k) for k in attrs["kernel_shape"]]
    spatial = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * spatial)]
    pads = [int(p) for p in attrs.get("pads", [0] * 2 * spatial)]
    unpooled = list(shape[:2]) + [(shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[spatial + i]
                                  for i in range(spatial)]
    zeros = ctx.const(np.zeros(int(np.prod(unpooled)), ctx.type_of(x).dtype))
    flat = ctx.call("scatter_elements", zeros, ctx.call("reshape", indices, newshape=(-1,)),
                    ctx.call("reshape", x, newshape=(-1,)), axis=0)
    y = ctx.call("reshape", flat, newshape=tuple(unpooled))
    given = inputs[2] if len(inputs) > 2 else None
    if given is None:
        return y
    out_shape = [int(d) for d in ctx.required_value(given, "MaxUnpool's output_shape")]
    if len(out_shape) != len(unpooled) or any(o < u for o, u in zip(out_shape, unpooled)):
        raise ctx.error(f"MaxUnpool output_shape {out_shape} is smaller than the unpooled shape {unpooled}")
    if out_shape == unpooled:
        return y
    return ctx.call("nn.pad", y, ctx.const(0, ctx.type_of(x).dtype),
                    pad_width=tuple((0, o - u) for o, u in zip(out_shape, unpooled)))


_GRID_MODES = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
               "cubic": "bicubic"}


@converter("GridSample", 16, 20)
def _grid_sample(ctx, inputs, attrs):
    """`image.grid_sample` of the grid moved from ONNX's (N, H, W, 2) to (N, 2, H, W), as
    TVM v0.19 converts it; opset 20's names `linear`/`cubic` are bilinear/bicubic. 2-D only
    (TVM's 3-D grid_sample has no bicubic and irtool does not declare it)."""
    data, grid = inputs
    mode = attrs.get("mode", "bilinear" if ctx.opset < 20 else "linear")
    if mode not in _GRID_MODES:
        raise ctx.error(f"GridSample mode \"{mode}\" is not supported")
    if len(ctx.shape_of(data)) == 5:
        return _grid_sample_volumetric(ctx, data, grid, _GRID_MODES[mode], attrs.get("padding_mode", "zeros"),
                                       bool(attrs.get("align_corners", 0)))
    if len(ctx.shape_of(data)) != 4:
        raise ctx.error(f"GridSample supports 2-D and 3-D spatial input only, got shape {list(ctx.shape_of(data))}")
    return ctx.call("image.grid_sample", data, ctx.call("transpose", grid, axes=(0, 3, 1, 2)),
                    method=_GRID_MODES[mode], padding_mode=attrs.get("padding_mode", "zeros"),
                    align_corners=bool(attrs.get("align_corners", 0)))


def _grid_sample_volumetric(ctx, data, grid, method: str, padding_mode: str, align_corners: bool):
    """3-D GridSample as onnx defines it, composed (TVM v0.19 converts 2-D only): each output
    point's (x, y, z) is denormalised per axis (align_corners: -1..1 spans the first to the
    last voxel centre, else the volume's edges); nearest rounds halves to even, trilinear
    weighs the 8 neighbours; a voxel outside reads 0 ("zeros") or the nearest edge voxel
    ("border"). One `gather` per neighbour from the flattened volume."""
    if method not in ("nearest", "bilinear") or padding_mode not in ("zeros", "border"):
        raise ctx.error(f"3-D GridSample supports the nearest and linear modes with zeros or border padding, "
                        f"got {method} with {padding_mode}")
    shape, gshape = ctx.shape_of(data), ctx.shape_of(grid)
    if ANY in shape or ANY in gshape or len(gshape) != 5 or gshape[-1] != 3 or gshape[0] != shape[0]:
        raise ctx.error(f"3-D GridSample needs static (N, C, D, H, W) data and an (N, D', H', W', 3) grid, got "
                        f"{list(shape)} and {list(gshape)}")
    n, c, dims = shape[0], shape[1], shape[2:]
    points = gshape[1] * gshape[2] * gshape[3]
    dtype = ctx.type_of(data).dtype

    def const(v):
        return ctx.const(np.asarray(v, dtype), dtype)

    coords = []
    for axis, size in enumerate(dims):  # the grid's last axis holds (x, y, z): W, H, D
        g = ctx.call("take", grid, ctx.const(2 - axis, "int64"), axis=4)
        if align_corners:
            x = ctx.call("multiply", ctx.call("add", g, const(1)), const((size - 1) / 2))
        else:
            x = ctx.call("divide", ctx.call("subtract", ctx.call("multiply", ctx.call("add", g, const(1)),
                                                                 const(size)), const(1)), const(2))
        if padding_mode == "border":
            x = ctx.call("clip", x, a_min=0.0, a_max=float(size - 1))
        coords.append(ctx.call("reshape", x, newshape=(n, 1, points)))
    volume = ctx.call("reshape", data, newshape=(n, c, int(np.prod(dims))))

    def sample(indices):  # float voxel indices per axis -> (N, C, points), 0 outside
        inside, flat = None, None
        for index, size in zip(indices, dims):
            ok = ctx.call("logical_and", ctx.call("greater_equal", index, const(0)),
                          ctx.call("less", index, const(size)))
            inside = ok if inside is None else ctx.call("logical_and", inside, ok)
            clamped = ctx.call("clip", index, a_min=0.0, a_max=float(size - 1))
            flat = clamped if flat is None else ctx.call("add", ctx.call("multiply", flat, const(size)), clamped)
        flat = ctx.call("broadcast_to", ctx.call("cast", flat, dtype="int64"), shape=(n, c, points))
        return ctx.call("where", inside, ctx.call("gather", volume, flat, axis=2), const(0))

    if method == "nearest":
        rounded = []
        for x in coords:  # halves to even: floor, then up past .5 or at .5 from an odd floor
            f = ctx.call("floor", x)
            frac = ctx.call("subtract", x, f)
            up = ctx.call("logical_or", ctx.call("greater", frac, const(0.5)),
                          ctx.call("logical_and", ctx.call("equal", frac, const(0.5)),
                                   ctx.call("equal", ctx.call("floor_mod", f, const(2)), const(1))))
            rounded.append(ctx.call("where", up, ctx.call("add", f, const(1)), f))
        out = sample(rounded)
    else:
        floors = [ctx.call("floor", x) for x in coords]
        fracs = [ctx.call("subtract", x, f) for x, f in zip(coords, floors)]
        out = None
        for corner in itertools.product((0, 1), repeat=len(dims)):
            weight, indices = None, []
            for b, f, frac in zip(corner, floors, fracs):
                w = frac if b else ctx.call("subtract", const(1), frac)
                weight = w if weight is None else ctx.call("multiply", weight, w)
                indices.append(ctx.call("add", f, const(1)) if b else f)
            term = ctx.call("multiply", sample(indices), weight)
            out = term if out is None else ctx.call("add", out, term)
    return ctx.call("reshape", out, newshape=(n, c, *gshape[1:4]))
