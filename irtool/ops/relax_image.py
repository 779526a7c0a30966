"""Relax image operators with no Relay counterpart (TVM 0.27's src/relax/op/image/resize.cc).

    affine_grid(data, size)  the sampling grid of an affine transform: data is (batch, k, k + 1)
                             for a k-D grid (k = len(size), 2 or 3), the result
                             (batch, k, *size); coordinate r of output point p is
                             data[n, r, k] + sum_j data[n, r, k - 1 - j] * g_j(p_j), with g the
                             normalised grid along axis j: -1 .. 1 over the corners
                             (align_corners) or over the pixel centres ((2 p + 1) / s - 1)
    resize3d(data, size)     image.resize2d's interpolation over D, H, W (NCDHW or NDHWC), as
                             TOPI 0.27 computes it (quirks included: `resize3d_ref`)
"""

from __future__ import annotations

from ..ir import tir
from ..ir.types import ANY, TensorType
from .common import fmt_type, np, tensor_arg
from .registry import AttrSpec, TypeRelError

AFFINE_GRID = (AttrSpec("align_corners", "bool", True),)


def affine_grid_call(values: list, attrs: dict) -> tuple[list, dict]:
    """TVM's relax.op.image.affine_grid before it builds the call: a size `s` is `(s, s)`."""
    if len(values) > 1 and (isinstance(values[1], int) or isinstance(values[1], tir.PrimExpr)):
        values = [values[0], (values[1], values[1]), *values[2:]]
    return values, attrs


def affine_grid_rel(args, at):
    data, size = tensor_arg(args, 0, "data"), tuple(args[1])
    if len(size) not in (2, 3):
        raise TypeRelError(f"the target size must have 2 or 3 values, got {len(size)}")
    k = len(size)
    if len(data.shape) != 3:
        raise TypeRelError(f"`data` must be 3-D (batch, {k}, {k + 1}), got {fmt_type(data)}")
    for axis, want in ((1, k), (2, k + 1)):
        if data.shape[axis] is not ANY and data.shape[axis] != want:
            raise TypeRelError(f"`data` must be (batch, {k}, {k + 1}) for a {k}-D size, got {fmt_type(data)}")
    return TensorType((data.shape[0], k, *size), data.dtype)


def affine_grid_ref(data, size, *, align_corners):
    k = len(size)
    grids = [np.linspace(-1.0, 1.0, s) if align_corners else (2 * np.arange(s) + 1) / s - 1 for s in size]
    points = np.meshgrid(*grids, indexing="ij")  # slowest axis first; the matrix's columns are x, y(, z)
    theta = data.astype(np.float64)
    out = theta[:, :, k, None].reshape(theta.shape[0], k, *([1] * k)) + sum(
        theta[:, :, k - 1 - j].reshape(theta.shape[0], k, *([1] * k)) * points[j] for j in range(k))
    return np.broadcast_to(out, (theta.shape[0], k, *size)).astype(data.dtype)


# ----------------------------------------------------------------------------- resize3d

RESIZE3D = (AttrSpec("roi", "floats", (0.0,) * 6), AttrSpec("layout", "str", "NCDHW"),
            AttrSpec("method", "str", "linear"), AttrSpec("coordinate_transformation_mode", "str", "half_pixel"),
            AttrSpec("rounding_method", "str", ""), AttrSpec("cubic_alpha", "float", -0.75),
            AttrSpec("cubic_exclude", "int", 0), AttrSpec("extrapolation_value", "float", 0.0),
            AttrSpec("out_dtype", "dtype", ""))


def resize3d_rel(args, at):
    data, size = tensor_arg(args, 0, "data"), tuple(args[1])
    if len(size) != 3:
        raise TypeRelError(f"the output size must have 3 values (depth, height, width), got {len(size)}")
    layout = at["layout"]
    if sorted(layout) != sorted("NCDHW"):
        raise TypeRelError(f"`layout` must order the axes N, C, D, H and W, got {layout!r}")
    if len(data.shape) != 5:
        raise TypeRelError(f"`data` must have rank 5 (layout {layout}), got {fmt_type(data)}")
    shape = list(data.shape)
    for axis, value in zip("DHW", size):
        shape[layout.index(axis)] = value
    return TensorType(tuple(shape), at["out_dtype"] or data.dtype)


def resize3d_ref(data, size, *, roi, layout, method, coordinate_transformation_mode, rounding_method,
                 cubic_alpha, cubic_exclude, extrapolation_value, out_dtype):
    """TOPI 0.27's _resize_3d in float32 (irtool/ops/image.py's 2-D helpers per axis), with its
    quirks: the roi is read as (x, y, z) starts then ends, cubic's exclude_outside weighs the
    depth taps by the width's weights and the width's index against the height, and
    tf_crop_and_resize extrapolates outside the height and width only."""
    from .image import _cubic_weights, _nearest, _source_coords

    mode, f32 = coordinate_transformation_mode, np.float32
    x = data.astype(f32)
    if layout == "NDHWC":
        x = x.transpose(0, 4, 1, 2, 3)
    (in_d, in_h, in_w), (out_d, out_h, out_w) = x.shape[2:], tuple(size)
    cz = _source_coords(out_d, in_d, mode, roi[2], roi[5])[:, None, None]
    cy = _source_coords(out_h, in_h, mode, roi[1], roi[4])[None, :, None]
    cx = _source_coords(out_w, in_w, mode, roi[0], roi[3])[None, None, :]

    def pixels(iz, iy, ix):  # clamped to the volume, as TOPI's get_3d_pixel
        return x[:, :, np.clip(iz, 0, in_d - 1), np.clip(iy, 0, in_h - 1), np.clip(ix, 0, in_w - 1)]

    if method == "nearest_neighbor":
        rounding = rounding_method or ("round" if mode == "align_corners" else "floor")
        value = pixels(_nearest(cz, rounding), _nearest(cy, rounding), _nearest(cx, rounding))
    elif method == "linear":
        (z0, tz), (y0, ty), (x0, tx) = ((np.floor(c).astype(np.int64), c - np.floor(c)) for c in (cz, cy, cx))
        one = f32(1)

        def lerp(a, b, t):
            return a * (one - t) + b * t

        def plane(k):
            rows = [lerp(pixels(z0 + k, y0 + j, x0), pixels(z0 + k, y0 + j, x0 + 1), tx) for j in range(2)]
            return lerp(*rows, ty)
        value = lerp(plane(0), plane(1), tz)
    else:
        (z0, tz), (y0, ty), (x0, tx) = ((np.floor(c), c - np.floor(c)) for c in (cz, cy, cx))
        z0, y0, x0 = (b.astype(np.int64) for b in (z0, y0, x0))
        exclude = bool(cubic_exclude)
        wz = _cubic_weights(tx, cubic_alpha, x0, in_h, True) if exclude else _cubic_weights(tz, cubic_alpha, z0, 0,
                                                                                            False)
        wy = _cubic_weights(ty, cubic_alpha, y0, in_h, exclude)
        wx = _cubic_weights(tx, cubic_alpha, x0, in_w, exclude)
        value = f32(0)
        for k in range(4):
            column = f32(0)
            for j in range(4):
                row = f32(0)
                for i in range(4):
                    row = row + pixels(z0 + k - 1, y0 + j - 1, x0 + i - 1) * wx[i]
                column = column + row * wy[j]
            value = value + column * wz[k]
    if mode == "tf_crop_and_resize":
        outside = (cy < 0) | (cy > in_h - 1) | (cx < 0) | (cx > in_w - 1)
        value = np.where(outside, f32(extrapolation_value), value)
    value = np.broadcast_to(value, x.shape[:2] + (out_d, out_h, out_w))
    if layout == "NDHWC":
        value = value.transpose(0, 2, 3, 4, 1)
    return np.ascontiguousarray(value).astype(out_dtype or data.dtype)
