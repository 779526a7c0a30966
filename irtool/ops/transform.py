"""Transform operators: reshape, permute, join, split, slice, index, broadcast, and create
tensors, as TVM's src/relay/op/tensor/transform.cc defines them.

The relations give TVM's output shapes, including where a `?` dimension propagates. Where
TVM's relation crashes, or lets a call through that TOPI then rejects, ours raises a
TypeRelError that names the problem instead. The references follow TVM's semantics where
NumPy's differ: take's `clip` clamps a negative index to 0, strided_slice clamps begin/end
the TOPI way, and reshape understands the special values 0, -1, -2, -3 and -4.
"""

from __future__ import annotations

import math

from ..ir.types import ANY, TensorType, TupleType
from .common import broadcast_shapes, fmt_shape, fmt_type, np, numel, same_dtype, tensor_arg, tuple_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register

E, B, I, O = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE, OpPattern.OPAQUE

# TOPI's stand-in for an absent strided_slice bound: int64's largest value.
_MAX = 2**63 - 1


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _axis(axis: int, ndim: int, what: str) -> int:
    """An axis in [-ndim, ndim), made non-negative."""
    if not -ndim <= axis < ndim:
        raise TypeRelError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _static_shape(shape, op: str) -> tuple:
    """A shape attribute (full, zeros, broadcast_to): present, and no negative dimension."""
    if shape is None:
        raise TypeRelError(f"{op} needs a `shape`")
    if any(d < 0 for d in shape):
        raise TypeRelError(f"{op} shape {list(shape)} has a negative dimension")
    return tuple(shape)


# ------------------------------------------------------------------ reshape


def resolve_newshape(dims, newshape, allowzero: bool, merge, quotient) -> tuple:
    """Relay's newshape codes (see `reshape_shape`) resolved against dims of any kind, without
    checks: `merge(a, b)` is the product of two dims, `quotient(dims, known)` what
    prod(dims) / prod(known) leaves. An unknown code raises ValueError. The importer's and
    relay-to-relax's symbolic reshapes use it with their own kinds of symbolic size."""
    out, src, infer, i = [], 0, None, 0
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            out.append(dims[src])
            src += 1
        elif v == -1:
            infer = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(dims[src:])
            src = len(dims)
        elif v == -3:
            out.append(merge(dims[src], dims[src + 1]))
            src += 2
        elif v == -4:
            d1, d2 = newshape[i + 1], newshape[i + 2]
            if d1 == -1:
                d1 = quotient([dims[src]], [d2])
            elif d2 == -1:
                d2 = quotient([dims[src]], [d1])
            out += [d1, d2]
            src += 1
            i += 2
        else:
            raise ValueError(f"newshape {list(newshape)}: unsupported special value {v}")
        i += 1
    if infer is not None:
        out[infer] = quotient(list(dims), [d for k, d in enumerate(out) if k != infer])
    return tuple(out)


def reshape_shape(ishape: tuple, newshape: tuple, allowzero: bool) -> tuple:
    """TVM's InferNewShape. A positive value is taken as is; 0 copies the next input dim
    (unless `allowzero`: then it is a 0 dim); -1 is inferred from what is left; -2 copies
    all remaining input dims; -3 merges the next two; -4 splits the next input dim into the
    two values that follow it (one may be -1). Each value but -2 consumes one input dim."""
    shown = f"newshape {list(newshape)}"
    out, used_in, used_out = [], set(), set()
    src, infer, i = 0, None, 0
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            if src >= len(ishape):
                raise TypeRelError(f"{shown}: the 0 at position {i} copies input dimension {src}, "
                                   f"but the input shape {fmt_shape(ishape)} has rank {len(ishape)}")
            used_in.add(src)
            used_out.add(len(out))
            out.append(ishape[src])
            src += 1
        elif v == -1:
            if infer is not None:
                raise TypeRelError(f"{shown}: only one dimension can be -1")
            # TVM records the position in newshape, which is wrong once -2/-3/-4 moved the
            # output out of step with it; we record the output position.
            infer = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            while src < len(ishape):
                used_in.add(src)
                used_out.add(len(out))
                out.append(ishape[src])
                src += 1
        elif v == -3:
            if src + 1 >= len(ishape):
                raise TypeRelError(f"{shown}: the -3 at position {i} merges input dimensions {src} and "
                                   f"{src + 1}, but the input shape {fmt_shape(ishape)} has rank {len(ishape)}")
            d1, d2 = ishape[src], ishape[src + 1]
            used_in.update((src, src + 1))
            src += 2
            used_out.add(len(out))
            out.append(ANY if d1 is ANY or d2 is ANY else d1 * d2)
        elif v == -4:
            if i + 2 >= len(newshape):
                raise TypeRelError(f"{shown}: the -4 at position {i} must be followed by two dimensions")
            if src >= len(ishape):
                raise TypeRelError(f"{shown}: the -4 at position {i} splits input dimension {src}, "
                                   f"but the input shape {fmt_shape(ishape)} has rank {len(ishape)}")
            d0 = ishape[src]
            used_in.add(src)
            src += 1
            d1, d2 = newshape[i + 1], newshape[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise TypeRelError(f"{shown}: the two dimensions after -4 cannot both be -1")
            if not (d1 > 0 or d1 == -1) or not (d2 > 0 or d2 == -1):
                raise TypeRelError(f"{shown}: the two dimensions after -4 must be positive or -1, got {d1}, {d2}")
            if d1 == -1:
                d1 = ANY if d0 is ANY else d0 // d2
            elif d2 == -1:
                d2 = ANY if d0 is ANY else d0 // d1
            used_out.update((len(out), len(out) + 1))
            out += [d1, d2]
        else:
            raise TypeRelError(f"{shown}: unsupported special value {v} (allowed: 0, -1, -2, -3, -4)")
        i += 1
    if infer is not None:
        dim = 1
        for k, d in enumerate(ishape):
            if k not in used_in:
                if d is ANY:
                    dim = ANY
                    break
                dim *= d
        if dim is not ANY:
            for k, d in enumerate(out):
                if k in used_out:
                    continue
                if d is ANY:
                    dim = ANY
                    break
                if d == 0:
                    raise TypeRelError(f"{shown}: cannot infer the -1 dimension next to a 0 dimension")
                dim //= d
        out[infer] = dim
    return tuple(out)


def reshape_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    newshape = attrs["newshape"]
    out = reshape_shape(t.shape, newshape, attrs["allowzero"])
    n_in, n_out = numel(t.shape), numel(out)
    if n_in is not None and n_out is not None and n_in != n_out:
        raise TypeRelError(f"cannot reshape a tensor of shape {fmt_shape(t.shape)} ({n_in} elements) into "
                           f"{fmt_shape(out)} ({n_out} elements), from newshape {list(newshape)}")
    return TensorType(out, t.dtype)


def _reshape(x, newshape, allowzero=False):
    return x.reshape(reshape_shape(x.shape, newshape, allowzero))


def reshape_like_shape(lhs: tuple, rhs: tuple, attrs) -> tuple:
    """TVM's infer_reshape_like: lhs[:lhs_begin] + rhs[rhs_begin:rhs_end] + lhs[lhs_end:]
    (negative positions count from the end, an end of None is the rank)."""
    def position(value, rank, name):
        if value is None:
            return rank
        if not -rank <= value <= rank:
            raise TypeRelError(f"reshape_like {name} {value} is out of range for rank {rank}")
        return value + rank if value < 0 else value

    lb = position(attrs["lhs_begin"], len(lhs), "lhs_begin")
    le = position(attrs["lhs_end"], len(lhs), "lhs_end")
    rb = position(attrs["rhs_begin"], len(rhs), "rhs_begin")
    re = position(attrs["rhs_end"], len(rhs), "rhs_end")
    return tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])


def reshape_like_rel(args, attrs):
    data, like = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "shape_like")
    out = reshape_like_shape(data.shape, like.shape, attrs)
    n_in, n_out = numel(data.shape), numel(out)
    if n_in is not None and n_out is not None and n_in != n_out:
        raise TypeRelError(f"reshape_like cannot reshape a tensor of shape {fmt_shape(data.shape)} ({n_in} "
                           f"elements) into {fmt_shape(out)} ({n_out} elements)")
    return TensorType(out, data.dtype)


def _reshape_like(x, like, lhs_begin=0, lhs_end=None, rhs_begin=0, rhs_end=None):
    attrs = {"lhs_begin": lhs_begin, "lhs_end": lhs_end, "rhs_begin": rhs_begin, "rhs_end": rhs_end}
    return x.reshape(reshape_like_shape(x.shape, like.shape, attrs))


# ------------------------------------------------------------------ transpose, squeeze, expand_dims


def transpose_perm(ndim: int, axes) -> tuple:
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise TypeRelError(f"transpose axes {list(axes)} have {len(axes)} elements, but the data has rank {ndim}")
    perm = []
    for a in axes:
        b = _axis(a, ndim, f"axis in transpose axes {list(axes)}:")
        if b in perm:
            raise TypeRelError(f"transpose axes {list(axes)} name axis {b} twice")
        perm.append(b)
    return tuple(perm)


def transpose_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    return TensorType(tuple(t.shape[a] for a in transpose_perm(len(t.shape), attrs["axes"])), t.dtype)


def squeeze_axes(shape: tuple, axis) -> tuple:
    if axis is None:
        if any(d is ANY for d in shape):
            raise TypeRelError(f"squeeze without `axis` needs a static shape, got {fmt_shape(shape)}")
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = []
    for a in axis:
        b = _axis(a, len(shape), "squeeze axis")
        if shape[b] is not ANY and shape[b] != 1:
            raise TypeRelError(f"cannot squeeze axis {a} of shape {fmt_shape(shape)}: its dimension is "
                               f"{shape[b]}, not 1")
        axes.append(b)
    return tuple(sorted(set(axes)))


def squeeze_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    axes = squeeze_axes(t.shape, attrs["axis"])
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in axes), t.dtype)


def expand_dims_shape(shape: tuple, axis: int, num_newaxis: int) -> tuple:
    ndim = len(shape)
    if num_newaxis < 0:
        raise TypeRelError(f"expand_dims needs num_newaxis >= 0, got {num_newaxis}")
    if not -ndim - 1 <= axis <= ndim:
        raise TypeRelError(f"expand_dims axis {axis} is out of range [{-ndim - 1}, {ndim}] for a tensor of "
                           f"rank {ndim}")
    pivot = axis + ndim + 1 if axis < 0 else axis
    return shape[:pivot] + (1,) * num_newaxis + shape[pivot:]


def expand_dims_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    return TensorType(expand_dims_shape(t.shape, attrs["axis"], attrs["num_newaxis"]), t.dtype)


# ------------------------------------------------------------------ concatenate, stack, split


def _tuple_fields(args, op: str) -> tuple:
    fields = tuple_arg(args, 0, "data").fields
    if not fields:
        raise TypeRelError(f"{op} needs at least one tensor, got an empty tuple")
    ndim = len(fields[0].shape)
    for f in fields[1:]:
        if len(f.shape) != ndim:
            raise TypeRelError(f"{op} needs tensors of the same rank, got {fmt_type(fields[0])} and {fmt_type(f)}")
    same_dtype(op, *fields)
    return fields


def concatenate_rel(args, attrs):
    fields = _tuple_fields(args, "concatenate")
    ndim = len(fields[0].shape)
    axis = _axis(attrs["axis"], ndim, "concatenate axis")
    shapes = [f.shape for f in fields]
    along = [s[axis] for s in shapes]
    out = [ANY if any(d is ANY for d in along) else sum(along)]
    for i in range(ndim):
        if i == axis:
            continue
        known = [s[i] for s in shapes if s[i] is not ANY]
        if any(d != known[0] for d in known):
            listed = ", ".join(fmt_shape(s) for s in shapes)
            raise TypeRelError(f"concatenate along axis {axis} needs the same dimension {i} in all tensors, "
                               f"got shapes {listed}")
        # As TVM: a known size wins over `?` unless that would make a static result from
        # partly dynamic inputs (then the concatenated axis is static and `?` is kept).
        if len(known) == len(shapes) or (known and out[0] is ANY):
            out.append(known[0])
        else:
            out.append(ANY)
    out.insert(axis, out.pop(0))
    return TensorType(tuple(out), fields[0].dtype)


def stack_rel(args, attrs):
    fields = _tuple_fields(args, "stack")
    first = fields[0].shape
    ndim = len(first)
    axis = attrs["axis"]
    if not -ndim - 1 <= axis <= ndim:
        raise TypeRelError(f"stack axis {axis} is out of range [{-ndim - 1}, {ndim}] for tensors of rank {ndim}")
    axis = axis + ndim + 1 if axis < 0 else axis
    for f in fields[1:]:
        # TVM skips input dimension `axis` here (it mixes input and output positions); the
        # tensors must agree on every dimension.
        if any(a is not ANY and b is not ANY and a != b for a, b in zip(first, f.shape)):
            raise TypeRelError(f"stack needs tensors of the same shape, got {fmt_shape(first)} and "
                               f"{fmt_shape(f.shape)}")
    return TensorType(first[:axis] + (len(fields),) + first[axis:], fields[0].dtype)


def split_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    shape = t.shape
    if not shape:
        raise TypeRelError("cannot split a scalar")
    axis = _axis(attrs["axis"], len(shape), "split axis")
    dim = shape[axis]
    ios = attrs["indices_or_sections"]

    def part(d):
        return TensorType(shape[:axis] + (d,) + shape[axis + 1:], t.dtype)

    if isinstance(ios, int):
        if ios < 1:
            raise TypeRelError(f"split needs at least one section, got {ios}")
        if dim is not ANY and dim % ios:
            raise TypeRelError(f"cannot split dimension {axis} of shape {fmt_shape(shape)} into {ios} equal sections")
        return TupleType([part(ANY if dim is ANY else dim // ios)] * ios)
    fields, begin = [], 0
    for index in ios:
        # TVM asks for strictly ascending, positive indices below the dimension.
        if index <= begin:
            raise TypeRelError(f"split indices {list(ios)} must be positive and strictly ascending")
        fields.append(part(index - begin))
        begin = index
    if dim is not ANY and begin >= dim:
        raise TypeRelError(f"split indices {list(ios)} must be below dimension {axis} of shape {fmt_shape(shape)}")
    fields.append(part(ANY if dim is ANY else dim - begin))
    return TupleType(fields)


def _split(x, indices_or_sections, axis=0):
    ios = indices_or_sections
    return tuple(np.split(x, ios if isinstance(ios, int) else list(ios), axis=axis))


# ------------------------------------------------------------------ strided_slice


def _canonical(index: int, extent: int, stride: int) -> int:
    """TOPI's CanonicalizeIndex: negative counts from the end; then clamp to [0, extent]
    ([-1, extent - 1] for a negative stride)."""
    if index < 0:
        index += extent
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    return min(max(index, lo), hi)


def slice_plan(shape: tuple, attrs) -> list:
    """[(axis, begin, stride, size)] of a strided_slice on `shape`: begin canonicalised,
    size `?` where the dimension is. TVM's StridedSliceRel, ConvertToVec, StridedSliceOutputShape."""
    begin, end, strides, axes = attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"]
    mode = attrs["slice_mode"]
    for name, value in (("begin", begin), ("end", end), ("strides", strides)):
        if value is None:
            raise TypeRelError(f"strided_slice needs `{name}`")
    if mode not in ("end", "size"):
        raise TypeRelError(f"strided_slice slice_mode must be \"end\" or \"size\", got \"{mode}\"")
    ndim = len(shape)
    if axes is not None:
        if not len(axes) == len(begin) == len(end) == len(strides):
            raise TypeRelError(f"strided_slice axes {list(axes)}, begin {list(begin)}, end {list(end)} and "
                               f"strides {list(strides)} must have the same length")
        for a in axes:
            # TVM indexes the shape with the axis as given: a negative axis is an error there too.
            if not 0 <= a < ndim:
                raise TypeRelError(f"strided_slice axis {a} is out of range [0, {ndim}) for shape {fmt_shape(shape)}")
        if len(set(axes)) != len(axes):
            raise TypeRelError(f"strided_slice axes {list(axes)} name an axis twice")
    else:
        for name, value in (("begin", begin), ("end", end), ("strides", strides)):
            if len(value) > ndim:
                raise TypeRelError(f"strided_slice {name} {list(value)} has more values than the rank "
                                   f"{ndim} of shape {fmt_shape(shape)}")
        # Missing trailing values take the whole axis, in the direction of its stride.
        strides = tuple(strides) + (1,) * (ndim - len(strides))
        begin = tuple(begin) + tuple(0 if s > 0 else _MAX for s in strides[len(begin):])
        end = tuple(end) + tuple(0 if s < 0 else _MAX for s in strides[len(end):])
        axes = tuple(range(ndim))
    plan = []
    for ax, b, e, s in zip(axes, begin, end, strides):
        if mode == "size":
            # strides are ignored; end is a size, negative meaning "to the end".
            s = 1
            e = _MAX if e < 0 else b + e
        elif s == 0:
            raise TypeRelError(f"strided_slice stride for axis {ax} is 0")
        dim = shape[ax]
        if dim is ANY:
            plan.append((ax, b, s, ANY))
            continue
        cb, ce = _canonical(b, dim, s), _canonical(e, dim, s)
        if (ce > cb) if s < 0 else (cb > ce):
            raise TypeRelError(f"strided_slice begin {b} and end {e} with stride {s} are invalid for axis {ax} "
                               f"of shape {fmt_shape(shape)}")
        plan.append((ax, cb, s, (abs(ce - cb) + abs(s) - 1) // abs(s)))
    return plan


def strided_slice_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    shape = list(t.shape)
    for ax, _, _, size in slice_plan(t.shape, attrs):
        shape[ax] = size
    return TensorType(tuple(shape), t.dtype)


def _strided_slice(x, begin, end, strides, slice_mode="end", axes=None):
    attrs = {"begin": begin, "end": end, "strides": strides, "slice_mode": slice_mode, "axes": axes}
    for ax, b, s, size in slice_plan(x.shape, attrs):
        x = np.take(x, b + s * np.arange(size, dtype=np.int64), axis=ax)
    return x


# ------------------------------------------------------------------ take, gather


TAKE_MODES = ("clip", "wrap", "fast")


def _take_axes(data: tuple, indices: tuple, attrs) -> tuple[int, int]:
    ndim_d, ndim_i = len(data), len(indices)
    axis = _axis(attrs["axis"], ndim_d, "take axis")
    batch_dims = attrs["batch_dims"]
    # TVM's TakeRel adds ndim_i to the axis here instead of to batch_dims (a typo); TOPI
    # normalises batch_dims, as we do.
    if not -ndim_i <= batch_dims <= ndim_i:
        raise TypeRelError(f"take batch_dims {batch_dims} is out of range for indices of rank {ndim_i}")
    if batch_dims < 0:
        batch_dims += ndim_i
    if batch_dims > axis:
        raise TypeRelError(f"take batch_dims {batch_dims} must not exceed the axis {axis}")
    for i in range(batch_dims):
        if data[i] is not ANY and indices[i] is not ANY and data[i] != indices[i]:
            raise TypeRelError(f"take with batch_dims {batch_dims} needs the same leading dimensions, got data "
                               f"{fmt_shape(data)} and indices {fmt_shape(indices)}")
    return axis, batch_dims


def take_rel(args, attrs):
    data, indices = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "indices")
    if not _is_int(indices.dtype):
        raise TypeRelError(f"take needs integer indices, got dtype {indices.dtype}")
    if attrs["mode"] not in TAKE_MODES:  # TOPI would quietly take any other mode as "wrap"
        raise TypeRelError(f"take mode must be \"clip\", \"wrap\" or \"fast\", got \"{attrs['mode']}\"")
    if attrs["axis"] is None:
        return TensorType(indices.shape, data.dtype)
    axis, bd = _take_axes(data.shape, indices.shape, attrs)
    return TensorType(data.shape[:axis] + indices.shape[bd:] + data.shape[axis + 1:], data.dtype)


def _take_index(indices, n: int, mode: str):
    idx = indices.astype(np.int64)
    if mode == "clip":  # a negative index clamps to 0, unlike NumPy
        return np.clip(idx, 0, max(n - 1, 0))
    if mode == "wrap":
        return np.mod(idx, n)
    # "fast" leaves an out-of-range index undefined in TVM; NumPy's rules here (a negative
    # index counts from the end, beyond that is an IndexError).
    return idx


def _take(data, indices, batch_dims=0, axis=None, mode="clip"):
    if axis is None:
        flat = data.reshape(-1)
        return np.take(flat, _take_index(indices, flat.size, mode))
    attrs = {"axis": axis, "batch_dims": batch_dims}
    axis, bd = _take_axes(data.shape, indices.shape, attrs)
    idx = _take_index(indices, data.shape[axis], mode)
    if bd == 0:
        return np.take(data, idx, axis=axis)
    batch = data.shape[:bd]
    out = np.empty(data.shape[:axis] + indices.shape[bd:] + data.shape[axis + 1:], data.dtype)
    for b in np.ndindex(*batch):
        out[b] = np.take(data[b], idx[b], axis=axis - bd)
    return out


def gather_rel(args, attrs):
    data, indices = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "indices")
    if not indices.dtype.startswith("int"):
        raise TypeRelError(f"gather needs signed integer indices, got dtype {indices.dtype}")
    if attrs["axis"] is None:
        raise TypeRelError("gather needs an `axis`")
    if len(data.shape) != len(indices.shape):
        raise TypeRelError(f"gather needs data and indices of the same rank, got {fmt_shape(data.shape)} and "
                           f"{fmt_shape(indices.shape)}")
    axis = _axis(attrs["axis"], len(data.shape), "gather axis")
    for i, (d, k) in enumerate(zip(data.shape, indices.shape)):
        if i == axis:
            if k is not ANY and k < 1:
                raise TypeRelError(f"gather indices {fmt_shape(indices.shape)} are empty along axis {axis}")
        elif d is not ANY and k is not ANY and d != k:
            raise TypeRelError(f"gather needs indices {fmt_shape(indices.shape)} to match data "
                               f"{fmt_shape(data.shape)} except along axis {axis}")
    return TensorType(indices.shape, data.dtype)


def _gather(data, indices, axis=None):
    # A negative index is undefined in TVM; NumPy counts it from the end.
    return np.take_along_axis(data, indices.astype(np.int64), axis=axis)


# ------------------------------------------------------------------ broadcast_to, tile, repeat


def broadcast_to_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    shape = _static_shape(attrs["shape"], "broadcast_to")
    # TVM unifies broadcast(data, shape) with shape: the data must broadcast to exactly it.
    try:
        joint = broadcast_shapes(t.shape, shape)
    except TypeRelError:
        joint = None
    if joint is None or len(joint) != len(shape) or any(
            a is not ANY and b is not ANY and a != b for a, b in zip(joint, shape)):
        raise TypeRelError(f"cannot broadcast shape {fmt_shape(t.shape)} to {fmt_shape(shape)}")
    return TensorType(shape, t.dtype)


def tile_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    reps = attrs["reps"]
    if any(r <= 0 for r in reps):
        raise TypeRelError(f"tile reps {list(reps)} must all be positive")
    n = max(len(t.shape), len(reps))
    shape = (1,) * (n - len(t.shape)) + t.shape
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return TensorType(tuple(ANY if d is ANY else d * r for d, r in zip(shape, reps)), t.dtype)


def repeat_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    repeats, axis = attrs["repeats"], attrs["axis"]
    if repeats < 1:
        raise TypeRelError(f"repeat needs repeats >= 1, got {repeats}")
    if axis is None:
        raise TypeRelError("repeat needs an `axis`")
    axis = _axis(axis, len(t.shape), "repeat axis")
    d = t.shape[axis]
    return TensorType(t.shape[:axis] + (ANY if d is ANY else d * repeats,) + t.shape[axis + 1:], t.dtype)


# ------------------------------------------------------------------ full, zeros, ones, arange, shape_of


def full_rel(args, attrs):
    fill = tensor_arg(args, 0, "fill_value")
    if fill.shape:
        raise TypeRelError(f"full needs a scalar fill_value, got {fmt_type(fill)}")
    return TensorType(_static_shape(attrs["shape"], "full"), attrs["dtype"] or fill.dtype)


def _full(fill_value, shape=None, dtype=""):
    dtype = dtype or fill_value.dtype
    return np.full(shape, fill_value.astype(dtype), dtype=dtype)


def init_rel(op: str):
    def rel(args, attrs):
        if not attrs["dtype"]:
            raise TypeRelError(f"{op} needs a `dtype`")
        return TensorType(_static_shape(attrs["shape"], op), attrs["dtype"])
    return rel


ARANGE_ARGS = ("start", "end", "step")


def arange_rel(args, attrs, values):
    dtype = attrs["dtype"]
    if not dtype:
        raise TypeRelError("arange needs a `dtype`")
    for i, name in enumerate(ARANGE_ARGS):
        t = tensor_arg(args, i, name)
        if t.shape or t.dtype != dtype:
            raise TypeRelError(f"arange `{name}` must be a scalar of the dtype {dtype}, got {fmt_type(t)}")
    if any(v is None for v in values[:3]):
        return TensorType((ANY,), dtype)
    start, stop, step = (float(v) for v in values[:3])
    if step == 0:
        raise TypeRelError("arange step is 0")
    n = math.ceil((stop - start) / step)
    if n <= 0:
        raise TypeRelError(f"arange from {start:g} to {stop:g} by {step:g} is empty")
    return TensorType((n,), dtype)


def _arange(start, stop, step, dtype=""):
    dtype = dtype or start.dtype
    n = max(math.ceil((float(stop) - float(start)) / float(step)), 0)
    # TVM computes start + step * i in the dtype (integers at least 32 bits wide), then casts.
    work = dtype if not _is_int(dtype) else "int64"
    i = np.arange(n).astype(work)
    return (start.astype(work) + step.astype(work) * i).astype(dtype)


def shape_of_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    # TVM types shape_of of a scalar as a scalar (RankShape); its compute and ours give (0,).
    return TensorType((len(t.shape),), attrs["dtype"] or "int32")


# ------------------------------------------------------------------ registration


INIT_ATTRS = (AttrSpec("shape", "ints?"), AttrSpec("dtype", "dtype", ""))

register(
    OpDef("reshape", ("data",), reshape_rel, I, _reshape,
          attrs=(AttrSpec("newshape", "ints"), AttrSpec("allowzero", "bool", False)), reshape_op=True),
    # kInjective in TVM, not a TReshapeOp
    OpDef("reshape_like", ("data", "shape_like"), reshape_like_rel, I, _reshape_like,
          attrs=(AttrSpec("lhs_begin", "int", 0), AttrSpec("lhs_end", "int?", None), AttrSpec("rhs_begin", "int", 0),
                 AttrSpec("rhs_end", "int?", None))),
    OpDef("transpose", ("data",), transpose_rel, I,
          lambda x, axes: np.transpose(x, transpose_perm(x.ndim, axes)),
          attrs=(AttrSpec("axes", "ints?"),), relax_name="relax.permute_dims"),
    OpDef("squeeze", ("data",), squeeze_rel, I,
          lambda x, axis=None: np.squeeze(x, axis=squeeze_axes(x.shape, axis)),
          attrs=(AttrSpec("axis", "ints?", None),), reshape_op=True),
    OpDef("expand_dims", ("data",), expand_dims_rel, B,
          lambda x, axis, num_newaxis=1: x.reshape(expand_dims_shape(x.shape, axis, num_newaxis)),
          attrs=(AttrSpec("axis", "int"), AttrSpec("num_newaxis", "int", 1)), reshape_op=True),
    OpDef("concatenate", ("data",), concatenate_rel, I,
          lambda data, axis=0: np.concatenate(data, axis=axis),
          attrs=(AttrSpec("axis", "int", 0),), relax_name="relax.concat"),
    OpDef("stack", ("data",), stack_rel, I, lambda data, axis=0: np.stack(data, axis=axis),
          attrs=(AttrSpec("axis", "int", 0),)),
    OpDef("split", ("data",), split_rel, I, _split,
          attrs=(AttrSpec("indices_or_sections", "int_or_ints"), AttrSpec("axis", "int", 0))),
    OpDef("strided_slice", ("data",), strided_slice_rel, I, _strided_slice,
          attrs=(AttrSpec("begin", "ints?"), AttrSpec("end", "ints?"), AttrSpec("strides", "ints?"),
                 AttrSpec("slice_mode", "str", "end"), AttrSpec("axes", "ints?"))),
    OpDef("take", ("data", "indices"), take_rel, I, _take,
          attrs=(AttrSpec("batch_dims", "int", 0), AttrSpec("axis", "int?", None), AttrSpec("mode", "str", "clip"))),
    OpDef("gather", ("data", "indices"), gather_rel, I, _gather,
          attrs=(AttrSpec("axis", "int?", None),), relax_name="relax.gather_elements"),
    OpDef("broadcast_to", ("data",), broadcast_to_rel, B,
          lambda x, shape, dtype="": np.broadcast_to(x, shape).copy(), attrs=INIT_ATTRS,
          shape_data_dependent=True),
    OpDef("tile", ("data",), tile_rel, B, lambda x, reps: np.tile(x, reps), attrs=(AttrSpec("reps", "ints"),)),
    OpDef("repeat", ("data",), repeat_rel, B, lambda x, repeats, axis=None: np.repeat(x, repeats, axis=axis),
          attrs=(AttrSpec("repeats", "int"), AttrSpec("axis", "int?", None))),
    # full is kElemWise in C++; zeros and ones get ELEMWISE from Python's register_pattern.
    OpDef("full", ("fill_value",), full_rel, E, _full, attrs=INIT_ATTRS),
    OpDef("zeros", (), init_rel("zeros"), E, lambda shape, dtype: np.zeros(shape, dtype), attrs=INIT_ATTRS),
    OpDef("ones", (), init_rel("ones"), E, lambda shape, dtype: np.ones(shape, dtype), attrs=INIT_ATTRS),
    # kOpaque in TVM: the output length depends on the argument values.
    OpDef("arange", ARANGE_ARGS, arange_rel, O, _arange, attrs=(AttrSpec("dtype", "dtype"),), needs_values=True,
          shape_data_dependent=True),
    OpDef("shape_of", ("data",), shape_of_rel, O,
          lambda x, dtype="": np.array(x.shape, dtype=dtype or "int32"),
          attrs=(AttrSpec("dtype", "dtype", ""),)),
)
