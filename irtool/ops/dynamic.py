"""Dynamic-shape operators (`dyn.*`), as TVM v0.19's src/relay/op/dyn/ defines them
(tensor/transform.cc, algorithm/topk.cc, nn/pad.cc, image/resize.cc): the shape (or
begin/end/strides, repeats, topk's k, one_hot's depth, pad's widths, resize2d's size and roi) is
a tensor argument instead of an attribute, so the output shape is known only when the program runs.

The relations give TVM's types: the rank comes from the static length of the shape
argument, every dimension is `?` (dyn.topk: the axis's; dyn.one_hot: the new depth axis;
dyn.image.resize2d: height and width; the other dims are the data's). Their other attributes,
and their checks, are the static op's. A call whose shape arguments are constants is the static
op's job (importers and constant folding produce that instead, as TVM's DynamicToStatic does).
The references run the static ops' NumPy code on the values.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType, TupleType
from . import registry
from .algorithm import _topk, topk_rel
from .common import fmt_shape, fmt_type, normalize_axis, np, tensor_arg
from .image import _resize2d, resize2d_rel
from .indexing import _one_hot, one_hot_rel
from .nn import _pad, pad_rel
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


def _scalar_arg(args: list, i: int, name: str) -> TensorType:
    """An integer scalar, or a tensor of shape (1,) (TVM's dyn.topk's k)."""
    t = tensor_arg(args, i, name)
    if t.shape not in ((), (1,)) or not t.dtype.startswith(("int", "uint")):
        raise TypeRelError(f"`{name}` must be an integer scalar or a tensor of shape (1,), got {fmt_type(t)}")
    return t


def _static_attrs(attrs, **fixed) -> dict:
    """The dyn op's attributes plus a stand-in for the one it takes as a tensor."""
    return {**dict(attrs.items()), **fixed} if attrs is not None else dict(fixed)


def dyn_topk_rel(args, attrs):
    """TVM's DynTopK: the static relation's type with the axis's size `?`."""
    data = tensor_arg(args, 0, "data")
    _scalar_arg(args, 1, "k")
    out = topk_rel([data], _static_attrs(attrs, k=0))
    axis = normalize_axis(attrs["axis"], len(data.shape), "topk axis")

    def unknown(t):
        return TensorType(t.shape[:axis] + (ANY,) + t.shape[axis + 1:], t.dtype)
    return TupleType([unknown(f) for f in out.fields]) if isinstance(out, TupleType) else unknown(out)


def dyn_one_hot_rel(args, attrs):
    """TVM's DynOneHot: the static relation's type with the depth axis `?`."""
    indices = tensor_arg(args, 0, "indices")
    _scalar_arg(args, 3, "depth")
    out = one_hot_rel(args[:3], _static_attrs(attrs, depth=1))
    axis = len(indices.shape) if attrs["axis"] == -1 else attrs["axis"]
    return TensorType(out.shape[:axis] + (ANY,) + out.shape[axis + 1:], out.dtype)


def dyn_pad_rel(args, attrs):
    """TVM's DynamicPad: pad_width a (rank, 2) integer tensor; every dimension `?`."""
    data = tensor_arg(args, 0, "data")
    width = tensor_arg(args, 1, "pad_width")
    rank = len(data.shape)
    if len(width.shape) != 2 or width.shape[0] not in (rank, ANY) or width.shape[1] not in (2, ANY) or \
            not width.dtype.startswith(("int", "uint")):
        raise TypeRelError(f"`pad_width` must be an integer tensor of shape ({rank}, 2), got {fmt_type(width)}")
    pad_rel([data, tensor_arg(args, 2, "pad_value")],
            _static_attrs(attrs, pad_width=((0, 0),) * rank))
    return _unknown(rank, data.dtype)


def dyn_resize2d_rel(args, attrs):
    """TVM's DynResize2D: the static relation's type with height and width `?`; size holds
    (height, width), roi (start_h, start_w, end_h, end_w)."""
    data = tensor_arg(args, 0, "data")
    for i, name, n in ((1, "size", 2), (2, "roi", 4)):
        t = tensor_arg(args, i, name)
        if t.shape != (n,):
            raise TypeRelError(f"`{name}` must be a tensor of shape ({n},), got {fmt_type(t)}")
    out = resize2d_rel([data], _static_attrs(attrs, size=(0, 0), roi=(0.0,) * 4))
    shape = list(out.shape)
    for axis in (attrs["layout"].index("H"), attrs["layout"].index("W")):
        shape[axis] = ANY
    return TensorType(tuple(shape), out.dtype)


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


def _dyn_topk(data, k, **attrs):
    return _topk(data, int(np.asarray(k).reshape(-1)[0]), **attrs)


def _dyn_one_hot(indices, on_value, off_value, depth, **attrs):
    depth = int(np.asarray(depth).reshape(-1)[0])
    if depth < 1:
        raise ValueError(f"one_hot depth must be positive, got {depth}")
    return _one_hot(indices, on_value, off_value, depth, **attrs)


def _dyn_pad(data, pad_width, pad_value, pad_mode="constant"):
    width = np.asarray(pad_width)
    if width.shape != (data.ndim, 2):
        raise ValueError(f"pad_width has shape {fmt_shape(width.shape)}, not ({data.ndim}, 2)")
    return _pad(data, pad_value, pad_width=tuple(map(tuple, width.tolist())), pad_mode=pad_mode)


def _dyn_resize2d(data, size, roi, **attrs):
    # the size read as TVM's shape function reads it: int64 of each value (a float truncates)
    return _resize2d(data, _ints(np.asarray(size).astype("int64")), tuple(float(v) for v in np.asarray(roi)),
                     **attrs)


def _attrs_but(op: str, *names: str) -> tuple:
    """The static op's attributes without those the dyn op takes as tensors."""
    return tuple(a for a in registry.get(op).attrs if a.name not in names)


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
    # injective where the static tile is broadcast: TVM v0.19 registers them so
    OpDef("dyn.tile", ("data", "reps"), tile_rel, I, lambda x, reps: np.tile(x, _ints(reps)),
          shape_data_dependent=True),
    # k, depth, the pad widths and the resized size as tensors (TVM v0.19's ONNX frontend makes
    # these when they are only known at run time); the static op's other attributes
    OpDef("dyn.topk", ("data", "k"), dyn_topk_rel, OpPattern.OPAQUE, _dyn_topk, attrs=_attrs_but("topk", "k"),
          shape_data_dependent=True),
    OpDef("dyn.one_hot", ("indices", "on_value", "off_value", "depth"), dyn_one_hot_rel,
          OpPattern.OUT_ELEMWISE_FUSABLE, _dyn_one_hot, attrs=_attrs_but("one_hot", "depth"),
          shape_data_dependent=True),
    OpDef("dyn.nn.pad", ("data", "pad_width", "pad_val"), dyn_pad_rel, I, _dyn_pad,
          attrs=_attrs_but("nn.pad", "pad_width"), shape_data_dependent=True),
    OpDef("dyn.image.resize2d", ("data", "size", "roi"), dyn_resize2d_rel, I, _dyn_resize2d,
          attrs=_attrs_but("image.resize2d", "size", "roi"), shape_data_dependent=True),
    # the indices of the non-zero elements, row-major: NumPy's argwhere (TOPI's order too)
    OpDef("argwhere", ("condition",), argwhere_rel, OpPattern.OPAQUE,
          lambda x: np.argwhere(x).astype("int32").reshape(-1, x.ndim), shape_data_dependent=True),
)
