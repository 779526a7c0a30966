"""Sorting and scanning operators: sort, argsort, topk (src/relay/op/algorithm/*.cc of TVM
v0.19), cumsum (ScanopAttrs, src/relay/op/tensor/transform.cc) and unique (UniqueAttrs,
src/relay/op/tensor/transform.cc).

unique(data, sorted=True, return_counts=False) of a 1-D tensor of N elements gives
(unique, indices, inverse_indices, num_unique[, counts]), all N long but for num_unique
(1,): only the first num_unique elements of unique/indices/counts are meaningful (here
0s follow). `unique` is in ascending order (sorted) or in order of first occurrence,
`indices` the first occurrence of each, `inverse_indices` each element's position in
`unique`; the index outputs are int32.

The references sort stably, as TOPI's CPU sort (std::stable_sort): equal elements keep
their order, in descending order too (what ONNX's TopK asks: the lower index first). The
relations check what TVM's ICHECKs or TOPI would reject later: the axis is in range, and
topk's `k` is not above the dimension (TVM types such a call with `k` and TOPI then
returns fewer elements). All four are kOpaque in TVM.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType, TupleType
from .common import normalize_axis, np, tensor_arg
from .registry import REQUIRED, AttrSpec, OpDef, OpPattern, TypeRelError, register
from .relax_scan_sort import _cumprod, _cumsum, _scan_rel, _stable_argsort

O = OpPattern.OPAQUE


def _axis_of(t: TensorType, axis: int, op: str) -> int:
    if not t.shape:
        raise TypeRelError(f"{op} needs a tensor of rank 1 or more, got a scalar")
    return normalize_axis(axis, len(t.shape), f"{op} axis")


def sort_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    _axis_of(t, attrs["axis"], "sort")
    return t


def argsort_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    _axis_of(t, attrs["axis"], "argsort")
    return TensorType(t.shape, attrs["dtype"])


def _order(data, axis: int, is_ascend: bool):
    return _stable_argsort(data, axis % data.ndim, not is_ascend)


def _sort(data, axis=-1, is_ascend=True):
    return np.take_along_axis(data, _order(data, axis, is_ascend), axis % data.ndim)


def _argsort(data, axis=-1, is_ascend=True, dtype="int32"):
    return _order(data, axis, is_ascend).astype(dtype)


_RET_TYPES = ("both", "values", "indices")


def topk_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    axis = _axis_of(t, attrs["axis"], "topk")
    k, ret = attrs["k"], attrs["ret_type"]
    if ret not in _RET_TYPES:
        raise TypeRelError(f"topk ret_type must be \"both\", \"values\" or \"indices\", got \"{ret}\"")
    dim = t.shape[axis]
    if k >= 1 and dim is not ANY and k > dim:
        raise TypeRelError(f"topk k={k} is larger than dimension {axis} of the data, {dim}")
    shape = t.shape[:axis] + ((k if k >= 1 else dim),) + t.shape[axis + 1:]
    values, indices = TensorType(shape, t.dtype), TensorType(shape, attrs["dtype"])
    return {"both": TupleType([values, indices]), "values": values, "indices": indices}[ret]


def _topk(data, k, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    axis %= data.ndim
    order = _order(data, axis, is_ascend)
    if k >= 1:
        order = np.take(order, np.arange(k), axis=axis)
    values, indices = np.take_along_axis(data, order, axis), order.astype(dtype)
    return {"both": (values, indices), "values": values, "indices": indices}[ret_type]


def _scan_op_rel(name: str):
    """TVM's ScanopRel (cumsum, cumprod): the input's shape, or its size flattened without an axis."""
    def rel(args, attrs):
        t = tensor_arg(args, 0, "data")
        if attrs["axis"] is not None:
            _axis_of(t, attrs["axis"], name)
        return _scan_rel(args, attrs)
    return rel


def _scan_op_ref(scan):
    def ref(data, axis=None, dtype="", exclusive=False):
        return scan(data, axis, dtype, bool(exclusive))
    return ref


def unique_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if len(t.shape) != 1:
        raise TypeRelError(f"unique needs a 1-D tensor, got rank {len(t.shape)}")
    n = t.shape[0]
    fields = [TensorType((n,), t.dtype), TensorType((n,), "int32"), TensorType((n,), "int32"),
              TensorType((1,), "int32")]
    if attrs["return_counts"]:
        fields.append(TensorType((n,), "int32"))
    return TupleType(fields)


def _unique(data, sorted=True, return_counts=False):  # noqa: A002 - TVM's attribute name
    values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if not sorted:  # order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values, first, counts, inverse = values[order], first[order], counts[order], rank[inverse]
    n, k = len(data), len(values)

    def padded(a, dtype):
        out = np.zeros(n, dtype)
        out[:k] = a
        return out

    result = (padded(values, data.dtype), padded(first, "int32"), inverse.astype("int32"),
              np.array([k], "int32"))
    return result + (padded(counts, "int32"),) if return_counts else result


SORT = (AttrSpec("axis", "int", -1), AttrSpec("is_ascend", "bool", True))
SCAN = (AttrSpec("axis", "int?", None), AttrSpec("dtype", "dtype", ""), AttrSpec("exclusive", "bool", False))

# one line per op: name, arguments, relation, pattern, reference, attributes
register(
    OpDef("sort", ("data",), sort_rel, O, _sort, attrs=SORT),
    OpDef("argsort", ("data",), argsort_rel, O, _argsort, attrs=SORT + (AttrSpec("dtype", "dtype", "int32"),)),
    OpDef("topk", ("data",), topk_rel, O, _topk,
          attrs=(AttrSpec("k", "int", REQUIRED), AttrSpec("axis", "int", -1), AttrSpec("ret_type", "str", "both"),
                 AttrSpec("is_ascend", "bool", False), AttrSpec("dtype", "dtype", "int32"))),
    *(OpDef(name, ("data",), _scan_op_rel(name), O, _scan_op_ref(scan), attrs=SCAN)
      for name, scan in (("cumsum", _cumsum), ("cumprod", _cumprod))),
    OpDef("unique", ("data",), unique_rel, O, _unique,
          attrs=(AttrSpec("sorted", "bool", True), AttrSpec("return_counts", "bool", False))),
)
