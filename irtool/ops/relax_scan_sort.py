"""Relations and NumPy references of Relax operators whose attributes or struct info differ
from a Relay counterpart's (or that have none): TVM 0.27's square, full_like, cumprod (no
Relay counterpart), cumsum (ScanopAttrs), sort, argsort and topk (Relay's sort, argsort,
topk say `is_ascend` where Relax says `descending` / `largest`; irtool.ops.algorithm reuses
the stable argsort and the scan here). `irtool.ops.relax` declares them, one line each;
their struct info follows TVM 0.27's
FInferType (src/relax/op/tensor/{unary,create,statistical,sorting}.cc):

    square(x)                                  x's shape and dtype
    nn.gelu / nn.gelu_tanh / nn.silu / nn.selu (data)
                                               data's shape and dtype (float only)
    isfinite(x)                                x's shape, bool (integers: all true)
    full_like(x, fill_value, dtype)            x's shape; dtype, or x's; fill_value must be 0-d
    cumsum/cumprod(data, axis, dtype, exclusive)
                                               axis None: the flattened (prod(shape),); else
                                               data's shape; dtype, or data's. The axis is not
                                               checked (as TVM's relation does not)
    sort(x, axis, descending)                  x's shape and dtype (axis unchecked, as TVM)
    argsort(data, axis, descending, dtype)     data's shape, dtype (int32 by default)
    topk(data, k, axis, ret_type, largest, dtype)
                                               the axis dimension becomes k when 0 < k < dim (or
                                               the dimension is symbolic); ret_type "both" gives
                                               (values, indices), "values" / "indices" one of them

The references sort stably, as TOPI's CPU sort (std::stable_sort): equal elements keep their
order, also in descending order; topk is argsort's first k. Scans accumulate in the result
dtype, in order, as TOPI's cumsum/cumprod (casting first); `exclusive` shifts by one.
TVM 0.27's LegalizeOps lowers square, full_like, isfinite, gelu, gelu_tanh, silu and selu only;
the others stay as Relax calls.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.types import ANY, TensorType, TupleType
from .common import np, tensor_arg
from .registry import TypeRelError


def _same(args, attrs):
    t = tensor_arg(args, 0, "x")
    return TensorType(t.shape, t.dtype)


def _square(x):
    return np.multiply(x, x)


# TVM 0.27's R.nn.gelu, gelu_tanh and silu (nn.cc's unary nn ops: float only, x's struct info),
# computed in float64 and rounded to x's dtype
def _gelu(x):
    import math

    erf = np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, np.float64) * 0.5 ** 0.5)
    return (np.asarray(x, np.float64) * (0.5 + erf * 0.5)).astype(x.dtype)


def _gelu_tanh(x):
    x64 = np.asarray(x, np.float64)
    return (0.5 * x64 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * x64 * (1.0 + 0.044715 * x64 * x64)))).astype(x.dtype)


def _selu(x):
    x64 = np.asarray(x, np.float64)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return (scale * (np.maximum(x64, 0.0) + np.minimum(0.0, alpha * (np.exp(x64) - 1.0)))).astype(x.dtype)


def _bool_same_shape(args, attrs):
    return TensorType(tensor_arg(args, 0, "x").shape, "bool")


def _isfinite(x):
    return np.isfinite(x) if np.asarray(x).dtype.kind == "f" else np.ones(np.shape(x), bool)


def _silu(x):
    x64 = np.asarray(x, np.float64)
    return (x64 / (1.0 + np.exp(-x64))).astype(x.dtype)


def _full_like_rel(args, attrs):
    x, fill = tensor_arg(args, 0, "x"), tensor_arg(args, 1, "fill_value")
    if len(fill.shape) != 0:
        raise TypeRelError(f"full_like needs a 0-d fill value, got one of rank {len(fill.shape)}")
    return TensorType(x.shape, attrs["dtype"] or x.dtype)


def _full_like(x, fill_value, dtype=""):
    with np.errstate(all="ignore"):
        return np.full(x.shape, fill_value, dtype=dtype or x.dtype)


def _scan_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    dtype = attrs["dtype"] or t.dtype
    if attrs["axis"] is None:
        n = 1
        for d in t.shape:
            n = ANY if n is ANY or d is ANY else n * d
        return TensorType((n,), dtype)
    return TensorType(t.shape, dtype)


def _product(dims):
    """TVM's `flattened_d = 1; flattened_d *= v` on int64 dims (constants folded)."""
    out = 1
    for d in dims:
        if isinstance(out, int) and isinstance(d, int):
            out *= d
        elif out == 1:
            out = d
        else:
            out = tir.BinOp("mul", out if not isinstance(out, int) else tir.IntImm(out, "int64"),
                            d if not isinstance(d, int) else tir.IntImm(d, "int64"))
    return out


def _scan_sym(args, attrs):
    if attrs["axis"] is not None:
        return None
    t = args[0]
    return TensorType((_product(t.shape),), attrs["dtype"] or t.dtype)


def _axis(x, axis: int) -> int:
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise TypeRelError(f"axis {axis} is out of range for a tensor of rank {x.ndim}")
    return axis % max(x.ndim, 1)


def _scan(ufunc_name: str, identity):
    def ref(data, axis=None, dtype="", exclusive=False):
        ufunc = getattr(np, ufunc_name)  # looked up when run: importing the op table must not load NumPy
        x = data.reshape(-1) if axis is None else data
        axis = 0 if axis is None else _axis(x, axis)
        x = x.astype(dtype or x.dtype)
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(x, axis=axis, dtype=x.dtype) if x.ndim else x.copy()
            if exclusive and x.ndim:
                shifted = np.full_like(out, identity)
                dst = [slice(None)] * x.ndim
                src = [slice(None)] * x.ndim
                dst[axis], src[axis] = slice(1, None), slice(None, -1)
                shifted[tuple(dst)] = out[tuple(src)]
                out = shifted
        return out
    return ref


_cumsum, _cumprod = _scan("add", 0), _scan("multiply", 1)


def _stable_argsort(x, axis: int, descending: bool):
    """Indices sorting `x` along `axis`, equal elements in their original order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(flipped, axis)


def _sort(x, axis=-1, descending=False):
    if x.ndim == 0:
        return x.copy()
    return np.take_along_axis(x, _stable_argsort(x, _axis(x, axis), descending), _axis(x, axis))


def _argsort_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    return TensorType(t.shape, attrs["dtype"] or t.dtype)


def _argsort(data, axis=-1, descending=False, dtype="int32"):
    if data.ndim == 0:
        return np.zeros((), dtype=dtype or data.dtype)
    return _stable_argsort(data, _axis(data, axis), descending).astype(dtype or data.dtype)


_RET_TYPES = ("both", "values", "indices")


def _topk_dim(dim, k: int):
    """TVM: the dimension becomes k when k > 0 and k is below it (or it is symbolic)."""
    if k > 0 and (not isinstance(dim, int) or dim is ANY or k < dim):
        return k
    return dim


def _topk_result(t, attrs, shape_of):
    if attrs["ret_type"] not in _RET_TYPES:
        raise TypeRelError(f"topk's ret_type must be one of {', '.join(_RET_TYPES)}, got \"{attrs['ret_type']}\"")
    ndim = len(t.shape)
    axis = attrs["axis"] + ndim if attrs["axis"] < 0 and ndim > 0 else attrs["axis"]
    if not 0 <= axis < ndim:
        raise TypeRelError(f"topk axis {attrs['axis']} is out of range for a tensor of rank {ndim}")
    shape = list(t.shape)
    shape[axis] = shape_of(shape[axis], attrs["k"])
    values = TensorType(tuple(shape), t.dtype)
    indices = TensorType(tuple(shape), attrs["dtype"] or t.dtype)
    return {"both": TupleType([values, indices]), "values": values, "indices": indices}[attrs["ret_type"]]


def _topk_rel(args, attrs):
    return _topk_result(tensor_arg(args, 0, "data"), attrs, _topk_dim)


def _topk_sym(args, attrs):
    return _topk_result(args[0], attrs, _topk_dim)


def _topk(data, k=1, axis=-1, ret_type="both", largest=True, dtype="int32"):
    axis = _axis(data, axis)
    order = _stable_argsort(data, axis, largest)
    if 0 < k < data.shape[axis]:
        order = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(data, order, axis)
    indices = order.astype(dtype or data.dtype)
    return {"both": (values, indices), "values": values, "indices": indices}[ret_type]
