"""Relax image operators with no Relay counterpart (TVM 0.27's src/relax/op/image/resize.cc).

    affine_grid(data, size)  the sampling grid of an affine transform: data is (batch, k, k + 1)
                             for a k-D grid (k = len(size), 2 or 3), the result
                             (batch, k, *size); coordinate r of output point p is
                             data[n, r, k] + sum_j data[n, r, k - 1 - j] * g_j(p_j), with g the
                             normalised grid along axis j: -1 .. 1 over the corners
                             (align_corners) or over the pixel centres ((2 p + 1) / s - 1)
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
