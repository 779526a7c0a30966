"""Image operators: `image.resize2d`, typed as TVM's src/relay/op/image/resize.cc types it and
computed as python/tvm/topi/image/resize.py computes it: coordinates and interpolation in
float32, the result cast to `out_dtype` (the input's dtype when unset) by truncation."""

from __future__ import annotations

from ..ir.types import ANY, TensorType
from .common import fmt_type, np, tensor_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                    "tf_crop_and_resize")
# "" picks TOPI's default: round for align_corners, floor otherwise.
ROUNDING_METHODS = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
# TVM's relation takes any layout convertible to NCHW, but TOPI computes only these two.
LAYOUTS = ("NCHW", "NHWC")


def _choice(attrs, key: str, allowed: tuple) -> str:
    value = attrs[key]
    if value not in allowed:
        listed = ", ".join(f'"{a}"' for a in allowed if a)
        raise TypeRelError(f'image.resize2d {key} must be one of {listed}, got "{value}"')
    return value


def resize2d_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    size, roi = attrs["size"], attrs["roi"]
    if size is None or len(size) != 2 or any(d < 0 for d in size):
        raise TypeRelError(f"image.resize2d needs `size` as 2 non-negative values (height, width), got "
                           f"{None if size is None else list(size)}")
    if roi is None or len(roi) != 4:
        raise TypeRelError(f"image.resize2d needs `roi` as 4 values (start_h, start_w, end_h, end_w), got "
                           f"{None if roi is None else list(roi)}")
    layout = _choice(attrs, "layout", LAYOUTS)
    if _choice(attrs, "method", METHODS) == "nearest_neighbor":
        _choice(attrs, "rounding_method", ROUNDING_METHODS)
    _choice(attrs, "coordinate_transformation_mode", COORDINATE_MODES)
    if len(data.shape) != 4:
        raise TypeRelError(f"image.resize2d with layout {layout} needs a 4-D tensor, got {fmt_type(data)}")
    shape = list(data.shape)
    shape[layout.index("H")], shape[layout.index("W")] = size
    return TensorType(tuple(shape), attrs["out_dtype"] or data.dtype)


# ------------------------------------------------------------------ reference

F32 = "float32"


def _int_div_ok(in_size: int, out_size: int) -> bool:
    """TOPI's can_convert_multiply_to_intdiv: nearest + asymmetric upscaling by a whole
    factor indexes with an integer division (and ignores the rounding method)."""
    if in_size == 0:
        return False
    ratio = out_size / float(in_size)
    return ratio % 1 == 0 and ratio <= 1 / (1e-5 * in_size + 1e-5)


def _source_coords(out_size: int, in_size: int, mode: str, start: float, end: float):
    """TOPI's get_inx: the input coordinate of each output position along one axis, float32."""
    f = np.float32
    x = np.arange(out_size).astype(F32)
    scale = f(in_size / out_size) if out_size else f(0)  # TVM folds the constant in double
    if mode == "half_pixel":
        return (x + f(0.5)) * scale - f(0.5)
    if mode == "align_corners":
        # TOPI divides by out_size - 1 = 0 for a 1-pixel output; we map it to 0, as ONNX does.
        step = f((in_size - 1) / (out_size - 1)) if out_size > 1 else f(0)
        return step * x
    if mode == "asymmetric":
        return scale * x
    if mode == "pytorch_half_pixel":
        return (x + f(0.5)) * scale - f(0.5) if out_size > 1 else np.zeros_like(x)
    if mode == "tf_half_pixel_for_nn":
        return (x + f(0.5)) * scale
    # tf_crop_and_resize: the roi (fractions of the image) is resized to the output.
    if out_size > 1:
        return f(start * (in_size - 1)) + x * f(end - start) * f(in_size - 1) / f(out_size - 1)
    return np.full_like(x, f(0.5 * (start + end) * (in_size - 1)))


def _nearest(coord, rounding: str):
    f = np.float32
    if rounding == "round":
        near = np.round(coord)  # half to even, as LLVM's nearbyint
    elif rounding == "round_prefer_floor":
        near = np.ceil(coord - f(0.5))
    elif rounding == "round_prefer_ceil":
        near = np.floor(coord + f(0.5))
    elif rounding == "floor":
        near = np.floor(coord + f(1e-5))  # TOPI's epsilons
    else:
        near = np.ceil(coord - f(1e-5))
    return near.astype(np.int64)


def _cubic_weights(t, alpha: float, base, size: int, exclude: bool) -> list:
    """Keys' cubic convolution weights of the taps base-1 .. base+2, TOPI's formulation."""
    a = np.float32(alpha)
    t2, t3 = t * t, t * t * t
    w = [a * (t3 - 2 * t2 + t),
         (a + 2) * t3 - (3 + a) * t2 + 1,
         -(a + 2) * t3 + (3 + 2 * a) * t2 - a * t,
         -a * t3 + a * t2]
    if exclude:
        w = [np.where((base - 1 + i < 0) | (base + i > size), np.float32(0), wi) for i, wi in enumerate(w)]
        total = w[0] + w[1] + w[2] + w[3]
        w = [wi / total for wi in w]
    return w


def _resize2d(data, size, roi, layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel",
              rounding_method="round", cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype="",
              int_div_floor_only=False):
    mode = coordinate_transformation_mode
    x = data.astype(F32)  # TOPI reads every pixel as float32
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    in_h, in_w = x.shape[2], x.shape[3]
    out_h, out_w = size
    cy = _source_coords(out_h, in_h, mode, roi[0], roi[2])
    cx = _source_coords(out_w, in_w, mode, roi[1], roi[3])

    def pixels(iy, ix):  # clamped to the image, as TOPI's get_2d_pixel
        iy, ix = np.clip(iy, 0, in_h - 1), np.clip(ix, 0, in_w - 1)
        return x[:, :, iy[:, None], ix[None, :]]

    if method == "nearest_neighbor":
        rounding = rounding_method or ("round" if mode == "align_corners" else "floor")
        # an integer asymmetric upscale divides integers: whatever the rounding in TOPI v0.19
        # (Relay), only where it would floor anyway in TVM 0.27 (Relax: int_div_floor_only)
        int_div = mode == "asymmetric" and (rounding == "floor" or not int_div_floor_only)
        if int_div and _int_div_ok(in_h, out_h):
            iy = np.arange(out_h) // (out_h // in_h)
        else:
            iy = _nearest(cy, rounding)
        if int_div and _int_div_ok(in_w, out_w):
            ix = np.arange(out_w) // (out_w // in_w)
        else:
            ix = _nearest(cx, rounding)
        value = pixels(iy, ix)
    elif method == "linear":
        y0, x0 = np.floor(cy).astype(np.int64), np.floor(cx).astype(np.int64)
        ty, tx = (cy - y0.astype(F32))[:, None], (cx - x0.astype(F32))[None, :]
        one = np.float32(1)
        top = pixels(y0, x0) * (one - tx) + pixels(y0, x0 + 1) * tx
        bottom = pixels(y0 + 1, x0) * (one - tx) + pixels(y0 + 1, x0 + 1) * tx
        value = top * (one - ty) + bottom * ty
    else:
        y0, x0 = np.floor(cy), np.floor(cx)
        wy = _cubic_weights(cy - y0, cubic_alpha, y0.astype(np.int64), in_h, bool(cubic_exclude))
        wx = _cubic_weights(cx - x0, cubic_alpha, x0.astype(np.int64), in_w, bool(cubic_exclude))
        y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
        value = np.float32(0)
        for j in range(4):
            row = np.float32(0)
            for i in range(4):
                row = row + pixels(y0 + j - 1, x0 + i - 1) * wx[i][None, :]
            value = value + row * wy[j][:, None]
    if mode == "tf_crop_and_resize":
        outside = ((cy < 0) | (cy > in_h - 1))[:, None] | ((cx < 0) | (cx > in_w - 1))[None, :]
        value = np.where(outside, np.float32(extrapolation_value), value)
    value = np.broadcast_to(value, x.shape[:2] + (out_h, out_w))
    if layout == "NHWC":
        value = value.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(value).astype(out_dtype or data.dtype)


register(
    OpDef("image.resize2d", ("data",), resize2d_rel, OpPattern.INJECTIVE, _resize2d,
          attrs=(AttrSpec("size", "ints?", None), AttrSpec("roi", "floats?", None),
                 AttrSpec("layout", "str", "NCHW"), AttrSpec("method", "str", "linear"),
                 AttrSpec("coordinate_transformation_mode", "str", "half_pixel"),
                 AttrSpec("rounding_method", "str", "round"), AttrSpec("cubic_alpha", "float", -0.5),
                 AttrSpec("cubic_exclude", "int", 0), AttrSpec("extrapolation_value", "float", 0.0),
                 AttrSpec("out_dtype", "dtype", ""))),
)


# ----------------------------------------------------------------------------- grid_sample

GRID_METHODS = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def grid_sample_rel(args, attrs):
    """TVM's GridSampleRel (2-D): data (N, C, H, W), grid (N, 2, oH, oW) -> (N, C, oH, oW)."""
    data, grid = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "grid")
    if len(data.shape) != 4 or len(grid.shape) != 4:
        raise TypeRelError(f"image.grid_sample needs 4-D data and grid, got {fmt_type(data)} and {fmt_type(grid)}")
    if grid.shape[1] not in (2, ANY):
        raise TypeRelError(f"image.grid_sample needs a grid of shape (N, 2, H, W), got {fmt_type(grid)}")
    if attrs["layout"] != "NCHW":
        raise TypeRelError(f'image.grid_sample layout must be "NCHW", got "{attrs["layout"]}"')
    for key, allowed in (("method", GRID_METHODS), ("padding_mode", PADDING_MODES)):
        if attrs[key] not in allowed:
            listed = ", ".join(f'"{a}"' for a in allowed)
            raise TypeRelError(f'image.grid_sample {key} must be one of {listed}, got "{attrs[key]}"')
    return TensorType((data.shape[0], data.shape[1], grid.shape[2], grid.shape[3]), data.dtype)


def _reflect(x, size: int, align_corners: bool):
    """TOPI's _reflect_coordinates: fold x into [start, start + span] by mirroring."""
    span, start = (size - 1, 0.0) if align_corners else (size, -0.5)
    if span <= 0:
        return np.zeros_like(x)
    dist = np.abs(x - start)
    flips = np.trunc(dist / span)
    extra = dist - flips * span
    mirrored = np.where(flips % 2 == 0, extra + start, span - extra + start)
    return np.where((x >= start) & (x <= span + start), x, mirrored)


def _grid_sample(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """TOPI's _grid_sample_2d: the grid's (x, y) in [-1, 1] unnormalised to pixels, moved
    inside by `padding_mode` (bicubic: its taps), then sampled; pixels outside are 0."""
    n, c, h, w = data.shape
    img = data.astype(np.float64)
    gx, gy = grid[:, 0].astype(np.float64), grid[:, 1].astype(np.float64)  # (N, oH, oW)
    if align_corners:
        y, x = (gy + 1) * (h - 1) / 2, (gx + 1) * (w - 1) / 2
    else:
        y, x = -0.5 + (gy + 1) * h / 2, -0.5 + (gx + 1) * w / 2
    batch = np.arange(n)[:, None, None]

    def pixel(yi, xi):  # (N, C, oH, oW), 0 outside the image
        yi, xi = yi.astype(np.int64), xi.astype(np.int64)
        inside = (yi >= 0) & (xi >= 0) & (yi < h) & (xi < w)
        v = img[batch, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]  # (N, oH, oW, C)
        return np.where(inside[..., None], v, 0.0).transpose(0, 3, 1, 2)

    def inside(v, size):
        if padding_mode == "reflection":
            v = _reflect(v, size, align_corners)
        return np.clip(v, 0, size - 1) if padding_mode in ("border", "reflection") else v

    if method == "bicubic":
        a = -0.75
        fy, fx = np.floor(y), np.floor(x)
        ty, tx = (y - fy)[:, None], (x - fx)[:, None]

        def weights(t):
            near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1  # noqa: E731
            far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a  # noqa: E731
            return far(t + 1), near(t), near(1 - t), far(2 - t)

        wy, wx = weights(ty), weights(tx)
        out = 0.0
        for i in range(4):
            yi = inside(fy - 1 + i, h)
            row = sum(pixel(yi, inside(fx - 1 + j, w)) * wx[j] for j in range(4))
            out = out + row * wy[i]
    else:
        y, x = inside(y, h), inside(x, w)
        if method == "nearest":
            out = pixel(np.rint(y), np.rint(x))
        else:
            y0, x0 = np.floor(y), np.floor(x)
            ly, lx = (y - y0)[:, None], (x - x0)[:, None]
            out = (pixel(y0, x0) * (1 - ly) * (1 - lx) + pixel(y0, x0 + 1) * (1 - ly) * lx
                   + pixel(y0 + 1, x0) * ly * (1 - lx) + pixel(y0 + 1, x0 + 1) * ly * lx)
    return np.asarray(out).astype(data.dtype).reshape(n, c, *grid.shape[2:])


register(
    OpDef("image.grid_sample", ("data", "grid"), grid_sample_rel, OpPattern.INJECTIVE, _grid_sample,
          attrs=(AttrSpec("method", "str", "bilinear"), AttrSpec("layout", "str", "NCHW"),
                 AttrSpec("padding_mode", "str", "zeros"), AttrSpec("align_corners", "bool", True))),
)
