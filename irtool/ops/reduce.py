"""Reductions: `axis` (None or [] = all axes), `keepdims`, `exclude` (reduce every axis
but the listed ones), as TVM's `GetReduceAxes` / `ReduceShapeImpl` define them.

The references follow TVM's compute: integer `mean` is the integer sum truncation-divided by
the count; `max`/`min` start from the dtype's lowest/highest finite value (`min_value` /
`max_value`), so an empty reduction gives that value and max of all -inf is the lowest
finite float, as in TVM. Duplicate axes are an error here; TVM does not check them.
"""

from __future__ import annotations

import math

from ..ir.types import TensorType
from .common import fmt_type, np, same_dtype, tensor_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register


def reduce_axes(ndim: int, axis, exclude: bool) -> tuple[int, ...]:
    if not axis:
        return tuple(range(ndim))
    axes = []
    for a in axis:
        b = a + ndim if a < 0 else a
        if not 0 <= b < ndim:
            raise TypeRelError(f"axis {a} is out of bounds for a tensor of rank {ndim}")
        axes.append(b)
    axes.sort()
    if len(set(axes)) != len(axes):
        raise TypeRelError(f"duplicate axes in {list(axis)}")
    if exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(axes)


def reduced_shape(shape: tuple, attrs) -> tuple:
    axes = reduce_axes(len(shape), attrs["axis"], attrs["exclude"])
    if attrs["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduce_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    return TensorType(reduced_shape(t.shape, attrs), t.dtype)


def arg_reduce_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if not t.shape:
        raise TypeRelError(f"cannot reduce a rank-0 tensor {fmt_type(t)} to an index")
    return TensorType(reduced_shape(t.shape, attrs), "int32")


def variance_rel(args, attrs):
    data, mean = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "mean")
    if not data.shape:
        raise TypeRelError(f"variance needs data of rank >= 1, got {fmt_type(data)}")
    if len(mean.shape) != len(data.shape):
        raise TypeRelError(f"mean must have the rank of data ({len(data.shape)}), got {fmt_type(mean)}")
    same_dtype("", data, mean)
    return TensorType(reduced_shape(data.shape, attrs), data.dtype)


def _axes(x, axis, exclude):
    return reduce_axes(x.ndim, axis, exclude)


def _reducer(fn):
    def ref(x, axis=None, keepdims=False, exclude=False):
        out = fn(x, axis=_axes(x, axis, exclude), keepdims=keepdims)
        return np.asarray(out).astype(x.dtype, copy=False)
    return ref


def _mean(x, axis, keepdims):
    if np.issubdtype(x.dtype, np.integer):
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        count = math.prod(x.shape[a] for a in axis)
        return np.sign(total) * (np.abs(total) // count)
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float64)


def _limits(dtype):
    """finfo/iinfo of a dtype, bfloat16 and the float8 types (ml_dtypes) included."""
    if np.dtype(dtype).kind in "iu":
        return np.iinfo(dtype)
    if np.issubdtype(dtype, np.floating):
        return np.finfo(dtype)
    import ml_dtypes

    return ml_dtypes.finfo(dtype)


def _lowest(dtype):
    return False if dtype == np.bool_ else _limits(dtype).min


def _highest(dtype):
    return True if dtype == np.bool_ else _limits(dtype).max


def _arg_reducer(fn):
    def ref(x, axis=None, keepdims=False, exclude=False, select_last_index=False):
        axes = _axes(x, axis, exclude)
        kept = [i for i in range(x.ndim) if i not in axes]
        # Bring the reduced axes to the back and flatten them, as TVM's argmax does.
        moved = np.transpose(x, kept + list(axes)).reshape([x.shape[i] for i in kept] + [-1])
        if select_last_index:
            flipped = moved[..., ::-1]
            out = moved.shape[-1] - 1 - fn(flipped, axis=-1)
        else:
            out = fn(moved, axis=-1)
        if keepdims:
            out = out.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])
        return np.asarray(out).astype("int32")
    return ref


def _variance(x, mean, axis=None, keepdims=False, exclude=False, unbiased=False):
    axes = _axes(x, axis, exclude)
    count = 1
    for a in axes:
        count *= x.shape[a]
    diff = x.astype(np.float64) - mean.astype(np.float64)
    out = np.sum(diff * diff, axis=axes, keepdims=keepdims) / (count - 1 if unbiased else count)
    return np.asarray(out).astype(x.dtype)


REDUCE_ATTRS = (AttrSpec("axis", "ints?", None), AttrSpec("keepdims", "bool", False),
                AttrSpec("exclude", "bool", False))
ARG_REDUCE_ATTRS = (AttrSpec("axis", "ints?", None), AttrSpec("keepdims", "bool", False),
                    AttrSpec("select_last_index", "bool", False), AttrSpec("exclude", "bool", False))
R = OpPattern.COMM_REDUCE

REDUCERS = [
    # name   reference
    ("sum",  _reducer(lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype))),
    ("mean", _reducer(_mean)),
    ("max",  _reducer(lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims, initial=_lowest(x.dtype)))),
    ("min",  _reducer(lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims, initial=_highest(x.dtype)))),
    ("prod", _reducer(lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype))),
]

register(*(OpDef(name, ("data",), reduce_rel, R, ref, attrs=REDUCE_ATTRS) for name, ref in REDUCERS))
register(
    OpDef("argmax", ("data",), arg_reduce_rel, R, _arg_reducer(lambda x, axis: np.argmax(x, axis=axis)),
          attrs=ARG_REDUCE_ATTRS),
    OpDef("argmin", ("data",), arg_reduce_rel, R, _arg_reducer(lambda x, axis: np.argmin(x, axis=axis)),
          attrs=ARG_REDUCE_ATTRS),
    OpDef("variance", ("data", "mean"), variance_rel, R, _variance,
          attrs=REDUCE_ATTRS + (AttrSpec("unbiased", "bool", False),)),
)
