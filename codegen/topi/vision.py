"""Vision operators as TOPI's python/tvm/topi/vision/roi_align.py, roi_pool.py and
multibox_transform_loc.py build them (the last: see its function).

roi_align: one `compute` over (roi, c, ph, pw) (NHWC: roi, ph, pw, c) reducing over a grid of
rh x rw bilinear samples per output bin (`te.sum` of sample / count for "avg", `te.max` for
"max"). With `sample_ratio > 0` the grid is constant; otherwise its size is
`ceil(roi size / pooled size)`, read from the rois, and CreatePrimFunc nests the sblock
(`compute_l1` around `compute`, see codegen/te.py). Each sample at (y, x):

    outside = y < -1 or x < -1 or y > H or x > W          (then 0)
    y, x    = clamped to [0, H - 1], [0, W - 1]
    value   = sum over the 4 neighbours (floor(y) + {0, 1}, floor(x) + {0, 1}) of
              weight * data[...] where the neighbour is inside the image (TOPI's C++
              detail::bilinear_sample_nchw), x-major

roi_pool: a `te.max` over the whole image (rh < H, rw < W) of the pixels inside the bin, -inf
elsewhere, into an intermediate `compute`, then a second `compute` giving 0 for an empty bin.

Both are legalized for float32 data and rois, constant or symbolic sizes (the forms checked
byte-identical with TVM 0.27, tests/test_legalize_roi.py); float16 and mixed dtypes stay Relax
calls (TVM's roi_align PrimFunc then writes float32 where the call says float16).
all_class_non_max_suppression is legalized in nms.py (TE computes and IR-builder externs),
get_valid_counts and non_max_suppression in nms_classic.py.
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .image import _index


def _float(e, dtype: str) -> tir.PrimExpr:
    return tb.cast(dtype, e)


def _widen(e):
    """An expression in an index position as TVM's IndexDataTypeNormalizer rewrites it: every
    integer cast and constant inside (even under float arithmetic) becomes int64."""
    if isinstance(e, tir.Cast) and tb.is_int(e.dtype) and tb.bits(e.dtype) >= 32:
        v = _widen(e.value)
        return v if v.dtype == "int64" else tir.Cast("int64", v)
    if isinstance(e, tir.IntImm) and tb.is_int(e.dtype) and tb.bits(e.dtype) >= 32:
        return tb.const(e.value, "int64")
    if isinstance(e, (tir.Var, tir.FloatImm, tir.StringImm)):
        return e
    if isinstance(e, tir.Node):
        changes = {}
        for f in type(e).fields:
            v = getattr(e, f)
            nv = _widen(v) if isinstance(v, tir.PrimExpr) else tuple(_widen(x) for x in v) \
                if isinstance(v, tuple) else v
            if nv is not v and not (isinstance(v, tuple) and all(a is b for a, b in zip(nv, v))):
                changes[f] = nv
        return e.replace(**changes) if changes else e
    return e


def _at_most(index, offset: int, last) -> tir.PrimExpr:
    """`index + offset <= last` as TVM's simplifier writes it: the offset moved right for a
    constant `last`; for a symbolic size (`last` = h - 1) `index < h` or `index + 2 <= h`."""
    if isinstance(last, tir.BinOp) and last.op == "sub" and isinstance(last.b, tir.IntImm) and last.b.value == 1:
        size = last.a
        return tb.lt(index, size) if offset == 0 else tb.le(tb.add(index, offset + 1), size)
    return tb.le(index, tb.sub(last, offset))


def _bilinear_sample(data: te.Tensor, layout: str, n, c, y, x, max_y, max_x) -> tir.PrimExpr:
    """TOPI's detail::bilinear_sample_nchw / _nhwc: the four neighbours, each guarded."""
    y_low = tb.cast("int32", tb.call("floor", y))
    x_low = tb.cast("int32", tb.call("floor", x))
    wy_h, wx_h = tb.sub(y, y_low), tb.sub(x, x_low)
    wy_l, wx_l = tb.sub(1, wy_h), tb.sub(1, wx_h)
    val = None
    for wx, (xb, xo) in ((wx_l, (x_low, 0)), (wx_h, (x_low, 1))):
        for wy, (yb, yo) in ((wy_l, (y_low, 0)), (wy_h, (y_low, 1))):
            yi, xi = _widen(_index(yb)), _widen(_index(xb))
            # `0 <= yp and yp <= max_y` with yp = low + offset, the offset moved right as
            # TVM's simplifier writes it
            inside = tb.all_(tb.le(tb.const(-yo, "int64"), yi), _at_most(yi, yo, max_y),
                             tb.le(tb.const(-xo, "int64"), xi), _at_most(xi, xo, max_x))
            yl, xl = _widen(_index(yb, yo)), _widen(_index(xb, xo))
            load = data(n, yl, xl, c) if layout == "NHWC" else data(n, c, yl, xl)
            term = tb.if_then_else(inside, tb.mul(tb.mul(wx, wy), load), 0)
            val = term if val is None else tb.add(val, term)
    return val


def roi_align(data: te.Tensor, rois: te.Tensor, pooled_size, spatial_scale: float, mode: str = "avg",
              sample_ratio: int = -1, aligned: bool = False, layout: str = "NCHW") -> te.Tensor:
    """TOPI's roi_align (NCHW or NHWC)."""
    if layout == "NHWC":
        _, height, width, channel = data.shape
    else:
        _, channel, height, width = data.shape
    num_roi = rois.shape[0]
    dtype = rois.dtype
    pooled_h, pooled_w = pooled_size
    height_f, width_f = _float(height, dtype), _float(width, dtype)
    zero = tb.const(0.0, data.dtype)

    def bilinear(n, c, y, x):
        outside = tb.logical_or(tb.logical_or(tb.logical_or(tb.lt(y, -1.0), tb.lt(x, -1.0)), tb.gt(y, height_f)),
                                tb.gt(x, width_f))
        y = tb.min_(tb.max_(y, 0.0), _float(tb.sub(height, 1), dtype))
        x = tb.min_(tb.max_(x, 0.0), _float(tb.sub(width, 1), dtype))
        val = _bilinear_sample(data, layout, n, c, y, x, tb.sub(height, 1), tb.sub(width, 1))
        return tb.if_then_else(outside, zero, val)

    def sample(i, c, ph, pw):
        batch_index = tb.cast("int64", rois(i, 0))  # TOPI's int32 cast, widened as an index
        start_w = tb.mul(rois(i, 1), spatial_scale)
        start_h = tb.mul(rois(i, 2), spatial_scale)
        end_w = tb.mul(rois(i, 3), spatial_scale)
        end_h = tb.mul(rois(i, 4), spatial_scale)
        if aligned:
            roi_h, roi_w = tb.sub(end_h, start_h), tb.sub(end_w, start_w)
        else:
            roi_h = tb.max_(tb.sub(end_h, start_h), tb.const(1.0, dtype))
            roi_w = tb.max_(tb.sub(end_w, start_w), tb.const(1.0, dtype))
        bin_h = tb.div(roi_h, tb.const(pooled_h, dtype))
        bin_w = tb.div(roi_w, tb.const(pooled_w, dtype))
        if sample_ratio > 0:  # TOPI's int32 constant; the loops are int64 after normalisation
            grid_h = grid_w = tb.const(sample_ratio, "int64")
        else:
            grid_h = tb.cast("int32", tb.call("ceil", tb.div(roi_h, tb.const(pooled_h, dtype))))
            grid_w = tb.cast("int32", tb.call("ceil", tb.div(roi_w, tb.const(pooled_w, dtype))))
        count = tb.mul(grid_h, grid_w)
        rh = te.reduce_axis((0, _widen(grid_h)), name="rh")
        rw = te.reduce_axis((0, _widen(grid_w)), name="rw")
        start_h = tb.add(start_h, tb.mul(_float(ph, dtype), bin_h))
        start_w = tb.add(start_w, tb.mul(_float(pw, dtype), bin_w))
        y = tb.add(start_h, tb.div(tb.mul(tb.add(_float(rh.var, dtype), tb.const(0.5, dtype)), bin_h),
                                   _float(grid_h, dtype)))
        x = tb.add(start_w, tb.div(tb.mul(tb.add(_float(rw.var, dtype), tb.const(0.5, dtype)), bin_w),
                                   _float(grid_w, dtype)))
        value = bilinear(batch_index, c, y, x)
        if mode == "avg":
            return te.sum(tb.div(value, _float(count, dtype)), axis=[rh, rw])
        return te.max(value, axis=[rh, rw])

    if layout == "NHWC":
        out = te.compute((num_roi, pooled_h, pooled_w, channel), lambda i, ph, pw, c: sample(i, c, ph, pw),
                         tag="pool,roi_align_nhwc")
        pooled_axes = out.op.axis[1:3]
    else:
        out = te.compute((num_roi, channel, pooled_h, pooled_w), lambda i, c, ph, pw: sample(i, c, ph, pw),
                         tag="pool,roi_align_nchw")
        pooled_axes = out.op.axis[2:4]
    out.op.narrow_axes = frozenset(id(iv.var) for iv in pooled_axes)  # sized by Python ints: int32 in TOPI
    return out


@register_legalize("relax.vision.roi_align")
def _roi_align(bb, call):
    at = call.attrs
    if at["layout"] not in ("NCHW", "NHWC") or at["mode"] not in ("avg", "max"):
        return call
    # TOPI's Python float literals make float16 arithmetic float32: TVM's PrimFunc then writes a
    # float32 result where the call's struct info says float16 (and mixed dtypes give the rois'
    # dtype): those forms stay Relax calls
    if call.args[0].struct_info.dtype != "float32" or call.args[1].struct_info.dtype != "float32":
        return call
    return bb.call_te(roi_align, call.args[0], call.args[1], pooled_size=[int(p) for p in at["pooled_size"]],
                      spatial_scale=float(at["spatial_scale"]), mode=at["mode"],
                      sample_ratio=int(at["sample_ratio"]), aligned=bool(at["aligned"]), layout=at["layout"])


# ----------------------------------------------------------------------------- roi_pool
# TVM's simplifier rewrites TOPI's clamped bin bounds `min(max(s + start, 0), H)` inside the
# comparisons (`min(a, H) <= x` -> `a <= x or H <= x`, `x < min(a, H)` -> `x < a and x < H`)
# and every integer in them is int64 (they are conditions): the bodies below are built in
# that printed form (`prebuilt`), for constant and symbolic sizes alike.


def _i64(e) -> tir.PrimExpr:
    return tir.Cast("int64", e)


def _bin_bounds(rois: te.Tensor, i, p, pooled: int, start_col: int, end_col: int, scale: float):
    """(start, end) of bin `p` along one axis before the clamp to the image: TOPI's
    `max(floor(p * bin) + roi_start, 0)` and `max(ceil((p + 1) * bin) + roi_start, 0)`."""
    def corner(col):
        return _i64(tb.call("floor", tb.add(tb.mul(rois(i, col), scale), 0.5)))

    start, end = corner(start_col), corner(end_col)
    size = tb.max_(tir.BinOp("sub", tir.BinOp("add", end, tb.const(1, "int64")), start), tb.const(1, "int64"))
    bin_size = tb.div(tir.Cast("float32", size), tb.const(float(pooled), "float32"))
    first = _i64(tb.call("floor", tir.BinOp("mul", tir.Cast("float32", p), bin_size)))
    last = _i64(tb.call("ceil", tir.BinOp("mul", tir.Cast("float32", tir.BinOp("add", p, tb.const(1, "int64"))),
                                          bin_size)))
    return (tb.max_(tir.BinOp("add", first, start), tb.const(0, "int64")),
            tb.max_(tir.BinOp("add", last, start), tb.const(0, "int64")))


def _and(*terms):
    out = terms[0]
    for t in terms[1:]:
        out = tir.BinOp("and", out, t)
    return out


def _or(*terms):
    out = terms[0]
    for t in terms[1:]:
        out = tir.BinOp("or", out, t)
    return out


def roi_pool(data: te.Tensor, rois: te.Tensor, pooled_size, spatial_scale: float, layout: str = "NCHW") -> te.Tensor:
    """TOPI's roi_pool_nchw: the max over each bin's pixels, 0 for an empty bin."""
    _, channel, height, width = data.shape
    num_roi = rois.shape[0]
    pooled_h, pooled_w = pooled_size
    rh = te.reduce_axis((0, height), name="rh")
    rw = te.reduce_axis((0, width), name="rw")

    def bounds(i, ph, pw):
        return (_bin_bounds(rois, i, ph, pooled_h, 2, 4, spatial_scale),
                _bin_bounds(rois, i, pw, pooled_w, 1, 3, spatial_scale))

    def sample(i, c, ph, pw):
        (hs, he), (ws, we) = bounds(i, ph, pw)
        valid = _and(_or(tir.BinOp("le", hs, rh.var), tir.BinOp("le", height, rh.var)),
                     tir.BinOp("lt", rh.var, he), tir.BinOp("lt", rh.var, height),
                     _or(tir.BinOp("le", ws, rw.var), tir.BinOp("le", width, rw.var)),
                     tir.BinOp("lt", rw.var, we), tir.BinOp("lt", rw.var, width))
        pixel = data(_i64(rois(i, 0)), c, rh.var, rw.var)
        return te.max(tb.if_then_else(valid, pixel, tb.const(float("-inf"), data.dtype)), axis=[rh, rw])

    pooled = te.compute((num_roi, channel, pooled_h, pooled_w), sample, tag="pool,roi_pool_nchw")
    pooled.op.prebuilt = True

    def empty_or_max(i, c, ph, pw):
        (hs, he), (ws, we) = bounds(i, ph, pw)
        empty = _or(tir.BinOp("le", he, hs), tir.BinOp("le", height, hs),
                    tir.BinOp("le", we, ws), tir.BinOp("le", width, ws))
        return tb.if_then_else(empty, tb.const(0.0, data.dtype), pooled(i, c, ph, pw))

    out = te.compute((num_roi, channel, pooled_h, pooled_w), empty_or_max)
    out.op.prebuilt = True
    return out


@register_legalize("relax.vision.roi_pool")
def _roi_pool(bb, call):
    at = call.attrs
    dtypes = {call.args[0].struct_info.dtype, call.args[1].struct_info.dtype}
    if at["layout"] != "NCHW" or dtypes != {"float32"}:  # other dtypes: forms not checked
        return call
    return bb.call_te(roi_pool, call.args[0], call.args[1], pooled_size=[int(p) for p in at["pooled_size"]],
                      spatial_scale=float(at["spatial_scale"]), layout=at["layout"])


# ----------------------------------------------------------------------------- multibox_transform_loc


def multibox_transform_loc(cls_pred: te.Tensor, loc_pred: te.Tensor, anchor: te.Tensor, variances, clip: bool,
                           threshold: float, keep_background: bool, apply_softmax: bool) -> list:
    """TOPI's vision/multibox_transform_loc.py: `multibox_boxes` (B, N, 4) decoded as a Select
    over the four corners, the scores a softmax (or cls_pred) times its `>= threshold` mask,
    `multibox_scores_bg` zeroing class 0 without keep_background. TOPI's constants keep the
    double (`topi_const`); `x * 1.0` folds, as TVM's operators fold it."""
    from .broadcast import topi_binary
    from .elemwise import cast
    from .nms_classic import topi_const
    from .norm import softmax
    from .transform import reshape

    dtype = cls_pred.dtype
    batch, _, num_anchors = cls_pred.shape
    loc = reshape(loc_pred, [batch, num_anchors, 4])
    vx, vy, vw, vh = (topi_const(v, dtype) for v in variances)
    half, zero, one = topi_const(0.5, dtype), topi_const(0.0, dtype), topi_const(1.0, dtype)

    def decode_bbox(b, a, k):
        left, top, right, bottom = (anchor(0, a, c) for c in range(4))
        ay, ax = tb.mul(tb.add(top, bottom), half), tb.mul(tb.add(left, right), half)
        ah, aw = tb.sub(bottom, top), tb.sub(right, left)
        ex, ey, ew, eh = (loc(b, a, c) for c in range(4))
        ycenter = tb.add(tb.mul(tb.mul(ey, vy), ah), ay)
        xcenter = tb.add(tb.mul(tb.mul(ex, vx), aw), ax)
        half_h = tb.mul(tb.mul(half, tb.call("exp", tb.mul(eh, vh))), ah)
        half_w = tb.mul(tb.mul(half, tb.call("exp", tb.mul(ew, vw))), aw)
        corners = [tb.sub(ycenter, half_h), tb.sub(xcenter, half_w), tb.add(ycenter, half_h), tb.add(xcenter, half_w)]
        if clip:
            corners = [tb.max_(zero, tb.min_(one, c)) for c in corners]
        ymin, xmin, ymax, xmax = corners
        return tir.Select(tb.eq(k, 0), ymin, tir.Select(tb.eq(k, 1), xmin, tir.Select(tb.eq(k, 2), ymax, xmax)))

    boxes = te.compute((batch, num_anchors, 4), decode_bbox, name="multibox_boxes")
    scores = softmax(cls_pred, axis=1) if apply_softmax else cls_pred
    mask = cast(topi_binary("greater_equal")(scores, topi_const(threshold, dtype)), dtype)
    scores = topi_binary("multiply")(scores, mask)
    if not keep_background:
        masked = scores
        scores = te.compute(masked.shape, lambda b, c, n: tb.if_then_else(tb.eq(c, 0), zero, masked(b, c, n)),
                            name="multibox_scores_bg")
    return [boxes, scores]


@register_legalize("relax.vision.multibox_transform_loc")
def _multibox_transform_loc(bb, call):
    """Left as a call where TVM 0.27's legalization raises: the softmax of signed integers
    (`exp / expsum` of two ints)."""
    at = call.attrs
    if at["apply_softmax"] and call.args[0].struct_info.dtype.startswith("int"):
        return call
    return bb.call_te(multibox_transform_loc, *call.args, tuple(float(v) for v in at["variances"]), at["clip"],
                      at["threshold"], at["keep_background"], at["apply_softmax"],
                      primfunc_name_hint="multibox_transform_loc")
