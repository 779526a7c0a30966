"""Image operators: resize2d as TOPI's python/tvm/topi/image/resize.py builds it (grid_sample and
affine_grid as its grid_sample.py, at the end).

One `resize` compute over i0..i3 (layouts NCHW and NHWC). Per output pixel:

    in_x = coordinate transform of x (half_pixel: (x + 0.5) * scale - 0.5, align_corners,
           asymmetric (an exact integer upscale divides: T.Div(x, factor)), pytorch_half_pixel,
           tf_half_pixel_for_nn); scale = in_w / out_w folded to a float32 constant
    nearest_neighbor  x[clamp(cast(int32, round / floor(+1e-5) / ceil(-1e-5) of in_x))]
    linear            lerp of the 4 neighbours at floor(in_x) + {0, 1}, weights in_x - that
    cubic             the 16 neighbours at floor(in_x) + {-1, 0, 1, 2}, Keys' spline weights

Neighbour indices are clamped `T.max(T.min(i, dim - 1), 0)`; TVM's simplifier folds the
int32 cast inside the int64 index (`T.Cast("int64", T.floor(...))`), the weights keep it.
tf_crop_and_resize maps x to `start * (in - 1) + x * (end - start) * (in - 1) / (out - 1)` (the
roi's float32 values folded in float32, as TOPI's arithmetic on TVM's Array<FloatImm> folds) and
gives the extrapolation value outside the image; cubic's exclude_outside zeroes the taps outside
the image (conditions `i < 1 - k or in - k < i` as TVM simplifies them) and divides by their sum.

An axis of input size 1 clamps to index 0, as TVM's simplifier folds `max(min(i, 0), 0)`. Where
every output pixel of an axis samples one constant coordinate (align_corners or
tf_crop_and_resize from an input of size 1, pytorch_half_pixel to an output of size 1, a roi
with start == end) TVM's simplifier folds the interpolation itself away; where align_corners
or tf_crop_and_resize resize to an output of size 1, TVM fails dividing by `out - 1`: those
calls stay unlegalized (`_constant_coordinate`).
"""

from __future__ import annotations

import math

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import const_int


def _float(e) -> tir.PrimExpr:
    return tb.cast("float32", e)


def _literal(v: float) -> tir.FloatImm:
    """A float32 constant written in TOPI's source (`1e-5`): TVM keeps the double unrounded."""
    return tir.FloatImm(v, "float32")


def _can_convert_to_intdiv(origin, scaled) -> bool:
    if not isinstance(scaled, tir.IntImm) or not isinstance(origin, tir.IntImm):
        return False
    div = scaled.value / float(origin.value)
    return div % 1 == 0 and div <= 1 / (1e-5 * origin.value + 1e-5)


def _in_coordinate(x, image, target, mode: str, use_int_div: bool, start=None, end=None):
    scale = tb.div(_float(image), _float(target))
    if mode in ("half_pixel", "pytorch_half_pixel") and isinstance(scale, tir.FloatImm) and scale.value == 1.0:
        # the same size: TVM's simplifier folds `(x + 0.5) * 1.0 - 0.5` to x
        half_pixel = _float(x)
    else:
        half_pixel = tb.sub(tb.mul(tb.add(x, 0.5), scale), 0.5)
    if mode == "half_pixel":
        return half_pixel
    if mode == "align_corners":
        return tb.mul(tb.div(_float(tb.sub(image, 1)), tb.sub(target, 1)), x)
    if mode == "asymmetric":
        return tb.div(x, tb.div(target, image)) if use_int_div else tb.mul(scale, x)
    if mode == "pytorch_half_pixel":
        return tb.if_then_else(tb.gt(target, 1), half_pixel, 0.0)
    if mode == "tf_half_pixel_for_nn":
        return tb.mul(tb.add(x, 0.5), scale)
    if mode == "tf_crop_and_resize":
        last = tb.sub(image, 1)
        inside = tb.add(tb.mul(start, last),
                        tb.div(tb.mul(tb.mul(x, tb.sub(end, start)), _float(last)), tb.sub(target, 1)))
        return tb.if_then_else(tb.gt(target, 1), inside, tb.mul(tb.mul(0.5, tb.add(start, end)), last))
    raise ValueError(f"unsupported coordinate_transformation_mode {mode}")


_CONST_FOLDS = {"round": lambda v: float(np.round(v)), "nearbyint": lambda v: float(np.round(v)), "floor": math.floor,
                "ceil": math.ceil}


def _fold_call(name: str, x):
    """round / floor / ceil of a float constant folded as TVM's simplifier folds them (round
    is nearbyint: half to even), else the call."""
    if isinstance(x, tir.FloatImm):
        return tb.const(float(_CONST_FOLDS[name](x.value)), x.dtype)
    return tb.call(name, x)


def _closest(in_x, rounding: str, use_int_div: bool):
    if use_int_div:
        return tb.cast("int32", in_x)
    if rounding == "round":
        return tb.cast("int32", _fold_call("round", in_x))
    if rounding == "round_prefer_floor":
        if isinstance(in_x, tir.BinOp) and in_x.op == "add" and isinstance(in_x.b, tir.FloatImm) and \
                in_x.b.value == 0.5:
            return tb.cast("int32", _fold_call("ceil", in_x.a))  # TVM's rewrite `(x + y) - y` -> x
        return tb.cast("int32", _fold_call("ceil", tb.sub(in_x, 0.5)))
    if rounding == "round_prefer_ceil":
        return tb.cast("int32", _fold_call("floor", tb.add(in_x, 0.5)))
    if rounding == "floor":
        return tb.cast("int32", _fold_call("floor", tb.add(in_x, _literal(1e-5))))
    if rounding == "ceil":
        return tb.cast("int32", _fold_call("ceil", tb.sub(in_x, _literal(1e-5))))
    raise ValueError(f"unknown rounding method {rounding}")


def _index(i32, offset: int = 0) -> tir.PrimExpr:
    """`i32 + offset` as an int64 index after TVM's simplifier: the cast pushed inside the sum
    and `cast(int64, cast(int32, v))` folded to `cast(int64, v)`."""
    inner = i32.value if isinstance(i32, tir.Cast) and i32.dtype == "int32" else i32
    base = tb.cast("int64", inner)
    return tb.add(base, offset) if offset > 0 else tb.sub(base, -offset) if offset < 0 else base


def _border_index(i32, offset: int, dim) -> tir.PrimExpr:
    """TOPI's clipped bicubic index `int32(min(max(i + offset, 0), dim - 1))` as TVM's simplifier
    leaves it: int64 throughout (the clip bounds the int32 cast), 0 along an axis of size 1."""
    if isinstance(dim, tir.IntImm) and dim.value == 1:
        return tb.const(0, "int64")
    return tb.min_(tb.max_(_index(i32, offset), tb.const(0, "int64")), tb.sub(dim, 1))


def _reflected_index(i32, offset: int, dim) -> tir.PrimExpr:
    """TOPI's bicubic reflection of the integer pixel index p = i + offset with align_corners
    (span s = dim - 1), clipped, as TVM's simplifier leaves it in int64: the int `abs` a Select,
    `if 0 <= p <= s: p else (truncdiv(a, s) even ? a - truncdiv(a, s) * s : truncdiv(a, s) * s + s - a)`
    with a = |p|, the bounds test on i itself; an `a - a` of span 1 is not folded."""
    span = const_int(dim) - 1
    base, p = _index(i32), _index(i32, offset)
    negated = tb.sub(tb.const(-offset, "int64"), base) if offset <= 0 else \
        tb.sub(tb.sub(tb.const(0, "int64"), base), offset)
    a = tir.Select(tb.le(base, tb.const(-offset, "int64")), negated, p)
    q = tb.div(a, span)
    extra = tb.sub(a, tb.mul(q, span))
    other = tb.sub(tb.add(tb.mul(q, span), span), a)
    reflected = tb.if_then_else(tb.eq(tb.truncmod(q, 2), tb.const(0, "int64")), extra, other)
    inside = tb.all_(tb.le(tb.const(-offset, "int64"), base), tb.le(base, tb.const(span - offset, "int64")))
    return tb.min_(tb.max_(tb.if_then_else(inside, p, reflected), tb.const(0, "int64")), tb.const(span, "int64"))


def _clamp(i, dim) -> tir.PrimExpr:
    if isinstance(dim, tir.IntImm) and dim.value == 1:  # max(min(i, 0), 0): TVM's simplifier gives 0
        return tb.const(0, i.dtype)
    return tb.max_(tb.min_(i, tb.sub(dim, 1)), 0)


def _lerp(a, b, t):
    return tb.add(tb.mul(a, tb.sub(1.0, t)), tb.mul(b, t))


def _cubic_weights(t, alpha: float) -> list:
    t2 = tb.mul(t, t)
    t3 = tb.mul(tb.mul(t, t), t)
    w1 = tb.mul(alpha, tb.add(tb.sub(t3, tb.mul(2, t2)), t))
    w2 = tb.add(tb.sub(tb.mul(alpha + 2, t3), tb.mul(3 + alpha, t2)), 1)
    w3 = tb.sub(tb.add(tb.mul(-(alpha + 2), t3), tb.mul(3 + 2 * alpha, t2)), tb.mul(alpha, t))
    w4 = tb.add(tb.mul(-alpha, t3), tb.mul(alpha, t2))
    return [w1, w2, w3, w4]


class _TvmFails(Exception):
    """A resize whose legalization TVM 0.27 fails on when constants fold: exclude_outside
    dividing by a constant total weight of 0 (a constant coordinate whose taps are all outside
    the image or weigh 0), a negative constant extrapolation value cast to an unsigned type."""


def _exclude_outside(weights: list, base, dim) -> list:
    """cubic's exclude_outside: a neighbour outside the image weighs 0, the rest renormalised."""
    # `base - 1 + i < 0 or base + i > dim` with the constants moved right, as TVM simplifies it
    index = _index(base)
    kept = [tb.if_then_else(tb.logical_or(tb.lt(index, tb.const(1 - i, index.dtype)),
                                          tb.lt(tb.sub(dim, i), index)), 0.0, w) for i, w in enumerate(weights)]
    total = tb.const(0, "int32")
    for w in kept:
        total = tb.add(total, w)
    if isinstance(total, (tir.IntImm, tir.FloatImm)) and total.value == 0:
        raise _TvmFails("exclude_outside divides by a constant 0")
    return [tb.div(w, total) for w in kept]


def _cubic_kernel(inputs, w):
    out = tb.const(0, "float32")
    for a, b in zip(inputs, w):
        out = tb.add(out, tb.mul(a, b))
    return out


def resize2d(data: te.Tensor, roi, size, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             bicubic_alpha: float = -0.5, bicubic_exclude: int = 0, extrapolation_value: float = 0.0,
             out_dtype: str | None = None) -> te.Tensor:
    if layout == "NHWC":
        in_n, in_h, in_w, in_c = data.shape
        out_shape = [in_n, size[0], size[1], in_c]
    else:
        in_n, in_c, in_h, in_w = data.shape
        out_shape = [in_n, in_c, size[0], size[1]]
    mode = coordinate_transformation_mode
    int_div_h = int_div_w = False
    if method == "nearest_neighbor" and mode == "asymmetric" and rounding_method in ("floor", ""):
        int_div_h = _can_convert_to_intdiv(in_h, size[0])
        int_div_w = _can_convert_to_intdiv(in_w, size[1])

    # the roi attribute holds float32 values: TOPI's arithmetic on them folds in float32
    box = [tb.const(float(r), "float32") for r in roi] if roi else [tb.const(v, "float32") for v in (0, 0, -1, -1)]

    def pixel(n, c, y, x):
        y, x = _clamp(y, in_h), _clamp(x, in_w)
        load = data(n, y, x, c) if layout == "NHWC" else data(n, c, y, x)
        return _float(load)

    def compute(*indices):
        if layout == "NHWC":
            n, y, x, c = indices
        else:
            n, c, y, x = indices
        in_x = _in_coordinate(x, in_w, size[1], mode, int_div_w, box[1], box[3])
        in_y = _in_coordinate(y, in_h, size[0], mode, int_div_h, box[0], box[2])
        if method == "nearest_neighbor":
            rounding = rounding_method or ("round" if mode == "align_corners" else "floor")
            value = pixel(n, c, _index(_closest(in_y, rounding, int_div_h)),
                          _index(_closest(in_x, rounding, int_div_w)))
        elif method == "linear":
            y_int = tb.cast("int32", _fold_call("floor", in_y))
            x_int = tb.cast("int32", _fold_call("floor", in_x))
            y_lerp, x_lerp = tb.sub(in_y, y_int), tb.sub(in_x, x_int)
            p = [[pixel(n, c, _index(y_int, j), _index(x_int, i)) for i in range(2)] for j in range(2)]
            value = _lerp(_lerp(*p[0], x_lerp), _lerp(*p[1], x_lerp), y_lerp)
        else:  # cubic
            x_int = tb.cast("int32", _fold_call("floor", in_x))
            x_fract = tb.sub(in_x, _fold_call("floor", in_x))
            y_int = tb.cast("int32", _fold_call("floor", in_y))
            y_fract = tb.sub(in_y, _fold_call("floor", in_y))
            p = [[pixel(n, c, _index(y_int, j - 1), _index(x_int, i - 1)) for i in range(4)] for j in range(4)]
            wx, wy = _cubic_weights(x_fract, bicubic_alpha), _cubic_weights(y_fract, bicubic_alpha)
            if bicubic_exclude:
                wx, wy = _exclude_outside(wx, x_int, in_w), _exclude_outside(wy, y_int, in_h)
            value = _cubic_kernel([_cubic_kernel(row, wx) for row in p], wy)
        if mode == "tf_crop_and_resize":  # outside the image: the extrapolation value
            ext = extrapolation_value
            out = tb.if_then_else(tb.lt(in_y, 0), ext, tb.if_then_else(tb.gt(in_y, tb.sub(in_h, 1)), ext, value))
            value = tb.if_then_else(tb.lt(in_x, 0), ext, tb.if_then_else(tb.gt(in_x, tb.sub(in_w, 1)), ext, out))
        dtype = out_dtype or data.dtype
        if dtype.startswith("uint") and isinstance(value, (tir.IntImm, tir.FloatImm)) and value.value < 0:
            raise _TvmFails(f"a negative constant cast to {dtype}")
        return tb.cast(dtype, value)

    return te.compute(out_shape, compute, name="resize", tag="injective")


_MODES = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
          "tf_crop_and_resize"}


def _tvm_fails(call) -> bool:
    """align_corners and tf_crop_and_resize to an output of size 1: TVM 0.27 fails dividing
    by `out - 1` (even where TOPI selects another branch); such a resize stays unlegalized."""
    at = call.attrs
    sizes = getattr(call.args[1], "values", None) or ()
    return at["coordinate_transformation_mode"] in ("align_corners", "tf_crop_and_resize") and \
        any(const_int(o) == 1 for o in sizes)


def _legalize_resize(compute, layouts: tuple[str, ...]):
    """resize2d's and resize3d's legalization: the TOPI compute for the layouts TVM's takes."""
    def legalize(bb, call):
        at = call.attrs
        if at["layout"] not in layouts or at["coordinate_transformation_mode"] not in _MODES or \
                at["method"] not in ("nearest_neighbor", "linear", "cubic") or _tvm_fails(call):
            return call
        try:
            return bb.call_te(compute, call.args[0], roi=list(at["roi"]), size=call.args[1], layout=at["layout"],
                              method=at["method"],
                              coordinate_transformation_mode=at["coordinate_transformation_mode"],
                              rounding_method=at["rounding_method"], bicubic_alpha=at["cubic_alpha"],
                              bicubic_exclude=at["cubic_exclude"], extrapolation_value=at["extrapolation_value"])
            # (TVM 0.27 passes no out_dtype: the result keeps the data's dtype, whatever the call says)
        except _TvmFails:
            return call  # as TVM cannot legalize it, the call stays
    return legalize


def resize3d(data: te.Tensor, roi, size, layout: str = "NCDHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             bicubic_alpha: float = -0.75, bicubic_exclude: int = 0, extrapolation_value: float = 0.0,
             out_dtype: str | None = None) -> te.Tensor:
    """TOPI's resize3d (_resize_3d): resize2d's per-axis pieces over D, H, W, without the integer
    division of nearest asymmetric upscales, and with TOPI 0.27's quirks: the roi read as
    (x, y, z) starts then ends; cubic's exclude_outside gives the depth the width's weights
    tested against the height; tf_crop_and_resize tests the height and width only."""
    if layout == "NDHWC":
        in_n, in_d, in_h, in_w, in_c = data.shape
        out_shape = [in_n, size[0], size[1], size[2], in_c]
    else:
        in_n, in_c, in_d, in_h, in_w = data.shape
        out_shape = [in_n, in_c, size[0], size[1], size[2]]
    mode = coordinate_transformation_mode
    box = [tb.const(float(r), "float32") for r in roi]

    def pixel(n, c, z, y, x):
        z, y, x = _clamp(z, in_d), _clamp(y, in_h), _clamp(x, in_w)
        return _float(data(n, z, y, x, c) if layout == "NDHWC" else data(n, c, z, y, x))

    def compute(*indices):
        n, z, y, x, c = indices if layout == "NDHWC" else (indices[0], *indices[2:], indices[1])
        in_z = _in_coordinate(z, in_d, size[0], mode, False, box[2], box[5])
        in_y = _in_coordinate(y, in_h, size[1], mode, False, box[1], box[4])
        in_x = _in_coordinate(x, in_w, size[2], mode, False, box[0], box[3])
        if method == "nearest_neighbor":
            rounding = rounding_method or ("round" if mode == "align_corners" else "floor")
            value = pixel(n, c, *(_index(_closest(v, rounding, False)) for v in (in_z, in_y, in_x)))
        elif method == "linear":
            z_int, y_int, x_int = (tb.cast("int32", _fold_call("floor", v)) for v in (in_z, in_y, in_x))
            z_lerp, y_lerp, x_lerp = tb.sub(in_z, z_int), tb.sub(in_y, y_int), tb.sub(in_x, x_int)
            p = [[[pixel(n, c, _index(z_int, k), _index(y_int, j), _index(x_int, i)) for i in range(2)]
                  for j in range(2)] for k in range(2)]
            planes = [_lerp(_lerp(*p[k][0], x_lerp), _lerp(*p[k][1], x_lerp), y_lerp) for k in range(2)]
            value = _lerp(*planes, z_lerp)
        else:  # cubic
            ints = [tb.cast("int32", _fold_call("floor", v)) for v in (in_z, in_y, in_x)]
            fracts = [tb.sub(v, _fold_call("floor", v)) for v in (in_z, in_y, in_x)]
            p = [[[pixel(n, c, _index(ints[0], k - 1), _index(ints[1], j - 1), _index(ints[2], i - 1))
                   for i in range(4)] for j in range(4)] for k in range(4)]
            wz, wy, wx = (_cubic_weights(t, bicubic_alpha) for t in fracts)
            if bicubic_exclude:
                wz = _exclude_outside(wx, ints[2], in_h)
                wy, wx = _exclude_outside(wy, ints[1], in_h), _exclude_outside(wx, ints[2], in_w)
            value = _cubic_kernel([_cubic_kernel([_cubic_kernel(row, wx) for row in plane], wy) for plane in p], wz)
        if mode == "tf_crop_and_resize":  # outside the height or width: the extrapolation value
            ext = extrapolation_value
            out = tb.if_then_else(tb.lt(in_y, 0), ext, tb.if_then_else(tb.gt(in_y, tb.sub(in_h, 1)), ext, value))
            value = tb.if_then_else(tb.lt(in_x, 0), ext, tb.if_then_else(tb.gt(in_x, tb.sub(in_w, 1)), ext, out))
        dtype = out_dtype or data.dtype
        if dtype.startswith("uint") and isinstance(value, (tir.IntImm, tir.FloatImm)) and value.value < 0:
            raise _TvmFails(f"a negative constant cast to {dtype}")
        return tb.cast(dtype, value)

    return te.compute(out_shape, compute, name="resize", tag="injective")




register_legalize("relax.image.resize2d", _legalize_resize(resize2d, ("NCHW", "NHWC")))
register_legalize("relax.image.resize3d", _legalize_resize(resize3d, ("NCDHW", "NDHWC")))


# ----------------------------------------------------------------------------- grid_sample


def grid_sample(data: te.Tensor, grid: te.Tensor, method: str = "bilinear", layout: str = "NCHW",
                padding_mode: str = "zeros", align_corners: bool = True) -> te.Tensor:
    """TOPI's _grid_sample_2d (python/tvm/topi/image/grid_sample.py), NCHW: one `compute` over
    n, c, h, w sampling data at the grid's (x, y) in [-1, 1], unnormalised to pixels; padding
    "zeros", "border" or "reflection" (see _GRID_SAMPLE_FORMS)."""
    _, _, in_height, in_width = data.shape
    out_shape = (data.shape[0], data.shape[1], grid.shape[2], grid.shape[3])
    zero = tb.const(0.0, data.dtype)
    clamp_pixels = method == "bicubic" and padding_mode == "border"
    reflect_pixels = method == "bicubic" and padding_mode == "reflection"

    def pixel(n, c, h, w):
        """data[n, c, h, w] or 0 outside: h and w are (int32 index, constant offset) pairs; the
        index becomes int64 and the bounds take the offset, as TVM's simplifier writes them."""
        (hb, ho), (wb, wo) = h, w
        if clamp_pixels:  # bicubic "border": indices clipped, so TVM's simplifier drops the bounds test
            return data(n, c, _border_index(hb, ho, in_height), _border_index(wb, wo, in_width))
        if reflect_pixels and align_corners:  # bicubic "reflection": reflected, then clipped, likewise
            return data(n, c, _reflected_index(hb, ho, in_height), _reflected_index(wb, wo, in_width))
        if reflect_pixels:  # reflected and clipped in float: the bounds test stays
            hi, wi = reflected_pixel(hb, ho, in_height), reflected_pixel(wb, wo, in_width)
            inside = tb.all_(tb.le(tb.const(0, "int64"), hi), tb.le(tb.const(0, "int64"), wi),
                             tb.lt(hi, in_height), tb.lt(wi, in_width))
            return tb.if_then_else(inside, data(n, c, hi, wi), zero)
        hi, wi = _index(hb), _index(wb)
        inside = tb.all_(tb.le(tb.const(-ho, "int64"), hi), tb.le(tb.const(-wo, "int64"), wi),
                         tb.lt(hi, tb.sub(in_height, ho)), tb.lt(wi, tb.sub(in_width, wo)))
        return tb.if_then_else(inside, data(n, c, _index(hb, ho), _index(wb, wo)), zero)

    def unnormalize(h, w):
        if align_corners:
            return (tb.div(tb.mul(tb.add(h, 1), tb.sub(in_height, 1)), 2),
                    tb.div(tb.mul(tb.add(w, 1), tb.sub(in_width, 1)), 2))
        return (tb.add(-0.5, tb.div(tb.mul(tb.add(h, 1), in_height), 2)),
                tb.add(-0.5, tb.div(tb.mul(tb.add(w, 1), in_width), 2)))

    def clip(x, size):
        return tb.min_(tb.max_(x, 0), tb.sub(size, 1))

    def reflect(x, size, index: bool, x_test=None):
        """TOPI's _reflect_coordinates as TVM's CreatePrimFunc leaves it: the parity test
        `truncmod(truncdiv(f, s), 2) == 0` rewritten `truncdiv(truncmod(f, 2s), s) == 0` in int64;
        where the coordinate ends in an index (`index`), the int32 casts of `f` fold away, where
        it is a value they stay and the int64 cast moves inside the division. `x_test` is x as
        the bounds test sees it (where it differs: an int32 pixel index kept int32 there)."""
        span, corner = (tb.sub(size, 1), 0) if align_corners else (size, -0.5)
        x_test = x if x_test is None else x_test
        offset = tb.sub(corner, x)
        if corner and isinstance(x, tir.BinOp) and x.op == "add" and isinstance(x.a, tir.FloatImm) and \
                x.a.value == corner:  # -0.5 - (-0.5 + e): TVM's simplifier gives 0 - e
            offset = tb.sub(tb.const(0.0, x.dtype), x.b)
        distance = tb.call("fabs", offset)
        whole = tb.cast("int64", distance)
        parity = tb.truncmod(whole, 2) if const_int(span) == 1 else \
            tb.div(tb.truncmod(whole, tb.mul(span, 2)), span)
        if not index:
            whole = tb.cast("int64", tb.cast("int32", tb.cast("int64", tb.cast("int32", distance))))
        extra = tb.sub(distance, tb.cast(x.dtype, tb.mul(tb.div(whole, span), span)))
        reflected = tb.if_then_else(tb.eq(parity, tb.const(0, "int64")), tb.add(extra, corner),
                                    tb.add(tb.sub(span, extra), corner))
        return tb.if_then_else(tb.all_(tb.ge(x_test, corner), tb.le(x_test, tb.add(span, corner))), x, reflected)

    def reflected_pixel(i32, offset: int, size) -> tir.PrimExpr:
        """Bicubic reflection without align_corners: TOPI reflects the int32 pixel index
        p = i + offset about -0.5 in float32 and clips it, then casts to int32. TVM's index
        normalisation makes p int64 where it is a value (`int64(floor(y)) + 2`) and leaves it
        int32 in the bounds test (`float32(int32(floor(y)) + 2)`); the int32 cast of the clipped
        float becomes an int64 one."""
        as_value = tb.cast("float32", _index(i32, offset))
        as_test = tb.cast("float32", tb.add(i32, offset) if offset >= 0 else tb.sub(i32, -offset))
        return tb.cast("int64", clip(reflect(as_value, size, True, as_test), size))

    def source(n, h, w, index: bool = False):
        y, x = unnormalize(grid(n, 1, h, w), grid(n, 0, h, w))
        if padding_mode == "reflection":
            y, x = reflect(y, in_height, index), reflect(x, in_width, index)
        if padding_mode in ("border", "reflection"):
            y, x = clip(y, in_height), clip(x, in_width)
        return y, x

    def bilinear(n, c, h, w):
        y, x = source(n, h, w)
        dy = tb.sub(y, tb.cast("int32", _fold_call("floor", y)))
        dx = tb.sub(x, tb.cast("int32", _fold_call("floor", x)))
        if padding_mode == "reflection":  # the pixel indices see the coordinate in index form
            y, x = source(n, h, w, index=True)
        y0, x0 = tb.cast("int32", _fold_call("floor", y)), tb.cast("int32", _fold_call("floor", x))
        return tb.add(tb.add(tb.add(
            tb.mul(tb.mul(pixel(n, c, (y0, 0), (x0, 0)), tb.sub(1.0, dy)), tb.sub(1.0, dx)),
            tb.mul(tb.mul(pixel(n, c, (y0, 0), (x0, 1)), tb.sub(1.0, dy)), dx)),
            tb.mul(tb.mul(pixel(n, c, (y0, 1), (x0, 0)), dy), tb.sub(1.0, dx))),
            tb.mul(tb.mul(pixel(n, c, (y0, 1), (x0, 1)), dy), dx))

    def bicubic(n, c, h, w):
        a = -0.75

        def weight1(f):
            return tb.add(tb.mul(tb.mul(tb.sub(tb.mul(a + 2, f), a + 3), f), f), 1)

        def weight2(f):
            return tb.sub(tb.mul(tb.add(tb.mul(tb.sub(tb.mul(a, f), 5 * a), f), 8 * a), f), 4 * a)

        def interp(p, f):
            ws = [weight2(tb.add(f, 1)), weight1(f), weight1(tb.sub(1, f)), weight2(tb.sub(2, f))]
            return tb.add(tb.add(tb.add(tb.mul(p[0], ws[0]), tb.mul(p[1], ws[1])), tb.mul(p[2], ws[2])),
                          tb.mul(p[3], ws[3]))

        y, x = unnormalize(grid(n, 1, h, w), grid(n, 0, h, w))
        y_floor, x_floor = tb.cast("int32", _fold_call("floor", y)), tb.cast("int32", _fold_call("floor", x))
        fy, fx = tb.sub(y, y_floor), tb.sub(x, x_floor)
        rows = []
        for i in range(4):
            yi, xs = (y_floor, i - 1), [(x_floor, k - 1) for k in range(4)]
            rows.append(interp([pixel(n, c, yi, v) for v in xs], fx))
        return interp(rows, fy)

    def nearest(n, c, h, w):
        y, x = source(n, h, w, index=True)
        return pixel(n, c, (tb.cast("int32", _fold_call("nearbyint", y)), 0),
                     (tb.cast("int32", _fold_call("nearbyint", x)), 0))

    sample = {"bilinear": bilinear, "bicubic": bicubic, "nearest": nearest}[method]

    def compute(n, c, h, w):
        return sample(n, c, h, w)

    return te.compute(out_shape, compute, tag="grid_sample")


# The forms checked byte-identical with TVM 0.27.
_GRID_SAMPLE_FORMS = {(method, padding) for method in ("bilinear", "bicubic", "nearest")
                      for padding in ("zeros", "border", "reflection")}

# float16 stays a call: TOPI's Python float literals are float32 constants, so TVM 0.27's PrimFunc
# computes in float32 and returns a float32 tensor where the op's struct info says float16 (a
# wrong legalization, as TVM's own printout of `main` shows).
_GRID_SAMPLE_DTYPES = {"float32", "float64"}


@register_legalize("relax.image.grid_sample")
def _grid_sample(bb, call):
    at = call.attrs
    # only NCHW exists in TOPI
    shape = call.args[0].struct_info.shape
    if (at["method"], at["padding_mode"]) not in _GRID_SAMPLE_FORMS or at["layout"] != "NCHW" or shape is None or \
            any(const_int(d) is None for d in shape[2:]):  # symbolic image sizes: forms not checked
        return call
    if at["padding_mode"] == "reflection" and at["align_corners"] and 1 in (const_int(shape[2]), const_int(shape[3])):
        return call  # TVM 0.27 fails: the reflection span is size - 1 = 0 (a division by zero)
    if call.args[0].struct_info.dtype not in _GRID_SAMPLE_DTYPES or \
            call.args[1].struct_info.dtype not in _GRID_SAMPLE_DTYPES:
        return call
    return bb.call_te(grid_sample, call.args[0], call.args[1], method=at["method"], layout=at["layout"],
                      padding_mode=at["padding_mode"], align_corners=bool(at["align_corners"]))


def affine_grid(data: te.Tensor, target_shape: list[int], align_corners: bool = True) -> te.Tensor:
    """TOPI's affine_grid (python/tvm/topi/image/grid_sample.py): `compute` over n, dim, i0..
    of the translation column plus each axis's normalised coordinate times its matrix column
    (the fastest axis takes column 0). The grid constants are TOPI's unrounded doubles."""
    k, dtype = len(target_shape), data.dtype
    if align_corners:
        starts, steps = [-1.0] * k, [(2.0 - 1e-7) / (s - 1) for s in target_shape]
    else:
        starts, steps = [-1.0 + 1.0 / s for s in target_shape], [2.0 / s for s in target_shape]

    def element(n, dim, *coords):
        value = data(n, dim, tb.const(k, "int64"))
        for r in range(k):
            coord = tb.add(tir.FloatImm(starts[r], dtype), tb.mul(coords[r], tir.FloatImm(steps[r], dtype)))
            value = tb.add(value, tb.mul(data(n, dim, tb.const(k - 1 - r, "int64")), coord))
        return value

    return te.compute((data.shape[0], k, *target_shape), element, tag="affine_grid")


@register_legalize("relax.image.affine_grid")
def _affine_grid(bb, call):
    size = [const_int(v) for v in call.args[1].values] if isinstance(call.args[1], rx.ShapeExpr) else [None]
    align_corners = bool(call.attrs["align_corners"])
    # TVM 0.27 raises on a symbolic size, and (TOPI's assertion) on a size of 1 with align_corners;
    # integer matrices make TOPI's float grid constants integers: not legalized here
    if None in size or (align_corners and min(size) <= 1) or not tb.is_float(call.args[0].struct_info.dtype):
        return call
    return bb.call_te(affine_grid, call.args[0], target_shape=size, align_corners=align_corners)
