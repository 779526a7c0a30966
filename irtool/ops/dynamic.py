"""Dynamic-shape operators (`dyn.*`), as TVM v0.19's src/relay/op/dyn/tensor/transform.cc
defines them: the shape (or begin/end/strides, or repeats) is a tensor argument instead
of an attribute, so the output shape is known only when the program runs.

The relations give TVM's types: the rank comes from the static length of the shape
argument, every dimension is `?`. A call whose shape arguments are constants is the
static op's job (importers and constant folding produce that instead, as TVM's
DynamicToStatic does). The references run the static ops' NumPy code on the values.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType
from .common import fmt_type, np, tensor_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register
from .transform import _reshape, _strided_slice

I, B, E = OpPattern.INJECTIVE, OpPattern.BROADCAST, OpPattern.ELEMWISE


def _shape_arg(args: list, i: int, name: str) -> int:
    """The static length of a 1-D integer shape argument: the output's rank."""
    t = tensor_arg(args, i, name)
    if len(t.shape) != 1 or not t.dtype.startswith(("int", "uint")):
        raise TypeRelError(f"`{name}` must be a 1-D integer tensor, got {fmt_type(t)}")
    if t.shape[0] is ANY:
        raise TypeRelError(f"`{name}` must have a static length (it gives the output's rank)")
    return int(t.shape[0])


def _unknown(rank: int, dtype: str) -> TensorType:
    return TensorType((ANY,) * rank, dtype)


def reshape_rel(args, attrs):
    return _unknown(_shape_arg(args, 1, "newshape"), tensor_arg(args, 0, "data").dtype)


def broadcast_to_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    rank = _shape_arg(args, 1, "shape")
    if rank < len(data.shape):
        raise TypeRelError(f"cannot broadcast {fmt_type(data)} to a shape of rank {rank}")
    return _unknown(rank, data.dtype)


def full_rel(args, attrs):
    fill = tensor_arg(args, 0, "fill_value")
    if fill.shape:
        raise TypeRelError(f"full needs a scalar fill_value, got {fmt_type(fill)}")
    return _unknown(_shape_arg(args, 1, "shape"), attrs["dtype"] or fill.dtype)


def init_rel(args, attrs):
    if not attrs["dtype"]:
        raise TypeRelError("needs a `dtype`")
    return _unknown(_shape_arg(args, 0, "shape"), attrs["dtype"])


def strided_slice_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    for i, name in ((1, "begin"), (2, "end"), (3, "strides")):
        _shape_arg(args, i, name)
    return _unknown(len(data.shape), data.dtype)


def tile_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    return _unknown(max(len(data.shape), _shape_arg(args, 1, "reps")), data.dtype)


def argwhere_rel(args, attrs):
    """TVM's ArgWhereRel: one row per non-zero element (how many, only the values say)."""
    return TensorType((ANY, len(tensor_arg(args, 0, "condition").shape)), "int32")


def _ints(value) -> tuple:
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _dyn_reshape(x, newshape, allowzero=False):
    return _reshape(x, _ints(newshape), allowzero)


def _dyn_strided_slice(x, begin, end, strides, slice_mode="end"):
    return _strided_slice(x, _ints(begin), _ints(end), _ints(strides), slice_mode)


def _dyn_broadcast_to(x, shape):
    return np.broadcast_to(x, _ints(shape)).copy()


def _dyn_full(fill_value, shape, dtype=""):
    dtype = dtype or fill_value.dtype
    return np.full(_ints(shape), fill_value.astype(dtype), dtype=dtype)


DTYPE = (AttrSpec("dtype", "dtype", ""),)

# argwhere (src/relay/op/tensor/transform.cc) is here too: its output length depends on the
# values, so its type has a `?` dimension, as the dyn.* ops' have.

# one line per op: name, arguments, relation, pattern, reference, attributes
register(
    OpDef("dyn.reshape", ("data", "newshape"), reshape_rel, I, _dyn_reshape,
          attrs=(AttrSpec("allowzero", "bool", False),), reshape_op=True, shape_data_dependent=True),
    OpDef("dyn.broadcast_to", ("data", "shape"), broadcast_to_rel, B, _dyn_broadcast_to, shape_data_dependent=True),
    OpDef("dyn.full", ("fill_value", "shape"), full_rel, E, _dyn_full, attrs=DTYPE, shape_data_dependent=True),
    OpDef("dyn.zeros", ("shape",), init_rel, E, lambda shape, dtype: np.zeros(_ints(shape), dtype), attrs=DTYPE,
          shape_data_dependent=True),
    OpDef("dyn.ones", ("shape",), init_rel, E, lambda shape, dtype: np.ones(_ints(shape), dtype), attrs=DTYPE,
          shape_data_dependent=True),
    OpDef("dyn.strided_slice", ("data", "begin", "end", "strides"), strided_slice_rel, I, _dyn_strided_slice,
          attrs=(AttrSpec("slice_mode", "str", "end"),), shape_data_dependent=True),
    OpDef("dyn.tile", ("data", "reps"), tile_rel, B, lambda x, reps: np.tile(x, _ints(reps)),
          shape_data_dependent=True),
    # the indices of the non-zero elements, row-major: NumPy's argwhere (TOPI's order too)
    OpDef("argwhere", ("condition",), argwhere_rel, OpPattern.OPAQUE,
          lambda x: np.argwhere(x).astype("int32").reshape(-1, x.ndim), shape_data_dependent=True),
)
