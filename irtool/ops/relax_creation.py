"""Relations, struct info and NumPy references of TVM 0.27's Relax creation and shape-collapsing
operators that have no Relay counterpart: tril, triu, eye, eye_like, outer, flatten, size,
meshgrid, collapse_sum_to, collapse_sum_like, hamming_window, bucketize. `irtool.ops.relax` declares them,
one line each; their struct info follows TVM 0.27's FInferType
(src/relax/op/{op.cc,tensor/{create,linear_algebra,manipulate,search}.cc}):

    tril / triu(x, k)           x's struct info; x of rank 2 or more (or unknown rank); k a
                                PrimValue (R.tril(x) is R.tril(x, 0), an int64 0)
    eye(n, m, k, dtype)         (n, m) as given (symbolic sizes too), dtype (float32 by default);
                                R.eye(n) is R.eye(n, n, 0)
    eye_like(x, k, dtype)       x's shape; dtype, or x's; x of rank 2 (or unknown rank)
    outer(x1, x2)               (len(x1), len(x2)), x1's dtype; both of rank 1
    flatten(x)                  (prod(shape),) as TVM's ComputeShapeProduct writes it (1 * d0 * d1
                                ..., constants folded); a 0-d tensor gives (1,), a 1-d one itself
    size(expr)                  (), int64
    meshgrid(tensors, indexing) a tuple of grids of shape (len0, len1, ...), whatever the indexing
                                (TVM's; the "xy" values are (len1, len0, ...)); 1-D inputs, one dtype
    collapse_sum_to(data, shape) / collapse_sum_like(data, collapse_target)
                                the target shape, data's dtype; from the last axis each target dim
                                equals the data's or is 1 (CheckCollapseShape's errors)
    hamming_window(window_size, periodic, alpha, beta, dtype)
                                (window_size,), dtype (float only; a size below 1 is an error)
    bucketize(input_tensor, boundaries, out_int32, right)
                                input_tensor's shape, int32 or int64; 1-D boundaries

The references are NumPy's tril, triu (on the last two axes), eye, outer, ravel, size, meshgrid,
sums over the collapsed axes, the window alpha - beta * cos(2 pi i / (N - 1)) in float64, and
NumPy's searchsorted (left, or right) for bucketize.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType, TupleType
from .common import np, tensor_arg
from .registry import TypeRelError
from .relax_scan_sort import _product


def _prim_value(sinfo):
    """The value of a PrimValue argument's struct info: an int, a TIR expression, or None."""
    from ..ir import tir
    from ..ir.relax import PrimStructInfo

    if not isinstance(sinfo, PrimStructInfo):
        raise TypeRelError(f"expects a PrimValue, got {type(sinfo).__name__}")
    value = sinfo.value
    return value.value if isinstance(value, tir.IntImm) else value


# ----------------------------------------------------------------------------- tril, triu


def _trilu_rel(args, attrs):
    x = tensor_arg(args, 0, "x")
    if len(x.shape) < 2:
        raise TypeRelError(f"needs a tensor of at least two dimensions, got one of {len(x.shape)}")
    return TensorType(x.shape, x.dtype)


def _trilu_deduce(args_sinfo: list, attrs: dict):
    """TVM's InferTypeTrilTriu: x's struct info unchanged (an unknown rank too)."""
    from ..ir.relax import TensorStructInfo

    x = args_sinfo[0]
    if not isinstance(x, TensorStructInfo):
        return None
    _prim_value(args_sinfo[1])
    if x.ndim != -1 and x.ndim < 2:
        raise TypeRelError(f"needs a tensor of at least two dimensions, got one of {x.ndim}")
    return TensorStructInfo(x.shape, x.dtype, x.ndim, vdevice=x.vdevice)


def _k_default(values: list, attrs: dict) -> tuple[list, dict]:
    """TVM's R.tril/R.triu(x, k=0) and R.eye_like(x, k=0, dtype=None): k is 0 when not given."""
    values = list(values) + [None] * (2 - len(values))
    if values[1] is None:
        values[1] = 0
    return values, attrs


def _tril(x, k):
    return np.tril(x, int(k))


def _triu(x, k):
    return np.triu(x, int(k))


# ----------------------------------------------------------------------------- eye, eye_like


def _eye_call(values: list, attrs: dict) -> tuple[list, dict]:
    """TVM's R.eye(n, m=None, k=0, dtype="float32"): m is n when not given."""
    n, m, k = (list(values) + [None, None, None])[:3]
    if n is None:
        raise ValueError("needs argument `n`")
    return [n, n if m is None else m, 0 if k is None else k], attrs


def _eye_rel(args, attrs):
    n, m = args[0], args[1]
    return TensorType((n, m), attrs["dtype"])


def _eye_deduce(args_sinfo: list, attrs: dict):
    """TVM's InferTypeEye: (n, m) as given, symbolic sizes included."""
    from ..ir.relax import TensorStructInfo

    n, m = _prim_value(args_sinfo[0]), _prim_value(args_sinfo[1])
    _prim_value(args_sinfo[2])
    if n is None or m is None:
        return TensorStructInfo(None, attrs["dtype"], 2)
    return TensorStructInfo((n, m), attrs["dtype"])


def _eye(n, m, k, dtype="float32"):
    return np.eye(int(n), int(m), int(k), dtype=dtype)


def _eye_like_rel(args, attrs):
    x = tensor_arg(args, 0, "x")
    if len(x.shape) != 2:
        raise TypeRelError(f"needs a 2-dimensional tensor, got one of {len(x.shape)} dimensions")
    return TensorType(x.shape, attrs["dtype"] or x.dtype)


def _eye_like_deduce(args_sinfo: list, attrs: dict):
    from ..ir.relax import TensorStructInfo

    x = args_sinfo[0]
    if not isinstance(x, TensorStructInfo):
        raise TypeRelError(f"expects the input `x` to be a tensor, got {type(x).__name__}")
    _prim_value(args_sinfo[1])
    if x.ndim not in (2, -1):
        raise TypeRelError(f"needs a 2-dimensional tensor, got one of {x.ndim} dimensions")
    return TensorStructInfo(x.shape, attrs["dtype"] or x.dtype, x.ndim, vdevice=x.vdevice)


def _eye_like(x, k, dtype=""):
    return np.eye(x.shape[0], x.shape[1], int(k), dtype=dtype or x.dtype)


# ----------------------------------------------------------------------------- outer, flatten


def _outer_rel(args, attrs):
    x1, x2 = tensor_arg(args, 0, "x1"), tensor_arg(args, 1, "x2")
    if len(x1.shape) != 1 or len(x2.shape) != 1:
        raise TypeRelError(f"needs two 1-D tensors, got ranks {len(x1.shape)} and {len(x2.shape)}")
    return TensorType((x1.shape[0], x2.shape[0]), x1.dtype)


def _outer(x1, x2):
    return np.multiply.outer(x1, x2.astype(x1.dtype))


def _flatten_rel(args, attrs):
    x = tensor_arg(args, 0, "x")
    n = 1
    for d in x.shape:
        n = ANY if n is ANY or d is ANY else n * d
    return TensorType((n,), x.dtype)


def _flatten_sym(args, attrs):
    """TVM's ComputeShapeProduct over symbolic dims; a 1-d tensor is returned as it is."""
    x = args[0]
    if len(x.shape) == 1:
        return TensorType(x.shape, x.dtype)
    return TensorType((_product(x.shape),), x.dtype)


def _flatten(x):
    return np.ravel(x).copy()


# ----------------------------------------------------------------------------- size, meshgrid


def _size_rel(args, attrs):
    tensor_arg(args, 0, "expr")
    return TensorType((), "int64")


def _size(expr):
    return np.asarray(np.size(expr), dtype="int64")


def _meshgrid_rel(args, attrs):
    """TVM 0.27's InferTypeMeshgrid: every grid has the inputs' lengths in input order, whatever
    the indexing (its struct info for "xy" is (len0, len1, ...) although the values, and the
    legalized call's, are (len1, len0, ...)); 1-D inputs of one dtype."""
    fields = args[0].fields if hasattr(args[0], "fields") else None
    if not fields:
        raise TypeRelError("meshgrid expects at least one 1-D tensor in the input tuple")
    dtypes = {f.dtype for f in fields if f.dtype}
    for i, f in enumerate(fields):
        if len(tensor_arg(fields, i, f"tensors[{i}]").shape) != 1:
            raise TypeRelError(f"meshgrid expects each input tensor to be 1-D, got rank {len(f.shape)} at index {i}")
    if len(dtypes) > 1:
        raise TypeRelError(f"meshgrid expects input tensors of one dtype, got {', '.join(sorted(dtypes))}")
    shape = tuple(f.shape[0] for f in fields)
    return TupleType([TensorType(shape, fields[0].dtype) for _ in fields])


def _meshgrid(tensors, indexing="ij"):
    return tuple(np.ascontiguousarray(g) for g in np.meshgrid(*tensors, indexing=indexing or "ij"))


# ----------------------------------------------------------------------------- collapse_sum


def _collapse_check(data_shape, target_shape) -> None:
    """TVM's CheckCollapseShape: from the last axis, each target dim equals the data's or is 1;
    a symbolic pair TVM cannot prove equal is an error (it asks for a match_cast)."""
    target_ax = len(target_shape) - 1
    for data_ax in range(len(data_shape) - 1, -1, -1):
        if target_ax < 0:
            continue
        d0, d1 = data_shape[data_ax], target_shape[target_ax]
        if d0 is not ANY and d1 is not ANY and d0 == d1 or d1 == 1:
            target_ax -= 1
        elif isinstance(d0, int) and isinstance(d1, int) and d0 is not ANY and d1 is not ANY:
            raise TypeRelError(f"the data shape at dim {data_ax} is {d0} and the target shape at dim {target_ax} "
                               f"is {d1}, which do not match the rule of collapse sum")
        else:
            raise TypeRelError(f"fails to match the axes because of an unknown or symbolic dim (data dim {data_ax}, "
                               f"target dim {target_ax}); consider a match_cast first")


def _collapse_sum_to_rel(args, attrs):
    x = tensor_arg(args, 0, "data")
    shape = tuple(args[1])
    _collapse_check(x.shape, shape)
    return TensorType(shape, x.dtype)


def _collapse_sum_like_rel(args, attrs):
    x, target = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "collapse_target")
    _collapse_check(x.shape, target.shape)
    return TensorType(target.shape, x.dtype)


def _collapse_sum_to(data, shape):
    """The sum over the leading axes the shape lacks and the axes where it has 1."""
    shape = tuple(int(d) for d in shape)
    lead = data.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and data.shape[lead + i] != 1)
    with np.errstate(all="ignore"):
        out = np.sum(data, axis=axes, keepdims=True, dtype=data.dtype) if axes else data.copy()
    return out.reshape(shape)


def _collapse_sum_like(data, collapse_target):
    return _collapse_sum_to(data, collapse_target.shape)


# ----------------------------------------------------------------------------- hamming_window


def _hamming_rel(args, attrs):
    dtype = attrs["dtype"]
    if dtype.startswith(("int", "uint")):
        raise TypeRelError(f"hamming_window expects a float dtype, got {dtype}")
    size = args[0]
    if isinstance(size, (int, np.integer)) and size is not ANY and size < 1:
        raise TypeRelError(f"hamming_window expects a window_size greater than zero, got {size}")
    return TensorType((size,), dtype)


def _hamming_window(window_size, periodic, alpha, beta, dtype):
    """alpha - beta * cos(2 pi i / (N - 1)) for i < window_size, N = window_size (+ 1 if
    periodic); a window of one is [1]."""
    size = int(window_size)
    if size == 1:
        return np.ones(1, dtype=dtype)
    n = size + 1 if periodic else size
    i = np.arange(size, dtype="float64")
    return (float(alpha) - float(beta) * np.cos(2 * np.pi * i / (n - 1))).astype(dtype)


# ----------------------------------------------------------------------------- bucketize


def _bucketize_rel(args, attrs):
    x, boundaries = tensor_arg(args, 0, "input_tensor"), tensor_arg(args, 1, "boundaries")
    if len(boundaries.shape) != 1:
        raise TypeRelError(f"bucketize requires 1-D boundaries, got rank {len(boundaries.shape)}")
    return TensorType(x.shape, "int32" if attrs["out_int32"] else "int64")


def _bucketize(input_tensor, boundaries, out_int32=False, right=False):
    """The bucket of each value: the number of boundaries below it (right: at or below it)."""
    side = "right" if right else "left"
    return np.searchsorted(boundaries, input_tensor, side=side).astype("int32" if out_int32 else "int64")
