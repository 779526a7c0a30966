"""Index-driven operators: one_hot, reverse, gather_nd, scatter_elements, scatter_nd and
einsum, as TVM v0.19 defines them (src/relay/op/tensor/transform.cc, math.cc).

    one_hot(indices, on_value, off_value, depth, axis=-1, dtype)
        a new axis of `depth` at `axis`: on_value where the index equals the position,
        off_value elsewhere (an index outside [0, depth) matches nothing, as TOPI compares)
    gather_nd(data, indices, batch_dims=0, index_rank)
        indices (M, Y_0..Y_K-1) -> (Y_0..Y_K-1, X_M+B..): each column indexes the first
        M dimensions after the B batch dimensions
    scatter_elements(data, indices, updates, axis=0, reduction="update")
        data with updates written (or added, multiplied, min-ed, max-ed) at the
        positions indices give along `axis`; a negative index counts from the end (TOPI
        normalises it); repeated positions are applied in order
    scatter_nd(data, indices, updates, mode="update")
        indices (M, Y_0..Y_K-1), updates (Y_0..Y_K-1, X_M..): each column addresses a
        slice of data's first M dimensions
    einsum(data, equation)
        NumPy's einsum of the tuple `data`; the relation parses the equation (explicit
        `->` or implicit output, `...` broadcast)

References are written for clarity over speed: the scatters loop over the index
positions, which is what their sequential semantics (repeated indices) needs.
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType
from .common import broadcast_shapes, fmt_shape, normalize_axis, np, same_dtype, tensor_arg, tuple_arg
from .registry import REQUIRED, AttrSpec, OpDef, OpPattern, TypeRelError, register

I, O = OpPattern.INJECTIVE, OpPattern.OPAQUE


def _int_indices(t: TensorType, op: str) -> None:
    if not t.dtype.startswith(("int", "uint")):
        raise TypeRelError(f"{op} needs integer indices, got dtype {t.dtype}")


def _same_dims(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is ANY or y is ANY or x == y for x, y in zip(a, b))


# ------------------------------------------------------------------ one_hot, reverse


def one_hot_rel(args, attrs):
    indices = tensor_arg(args, 0, "indices")
    for i, name in ((1, "on_value"), (2, "off_value")):
        if tensor_arg(args, i, name).shape:
            raise TypeRelError(f"one_hot `{name}` must be a scalar, got shape {fmt_shape(args[i].shape)}")
    depth, axis = attrs["depth"], attrs["axis"]
    if depth < 1:
        raise TypeRelError(f"one_hot depth must be positive, got {depth}")
    ndim = len(indices.shape) + 1
    if not -1 <= axis < ndim:  # TVM reads only -1 as "last"; other negative axes are errors
        raise TypeRelError(f"one_hot axis {axis} is out of range [-1, {ndim - 1}]")
    axis = ndim - 1 if axis == -1 else axis
    shape = indices.shape[:axis] + (depth,) + indices.shape[axis:]
    return TensorType(shape, attrs["dtype"] or args[1].dtype)


def _one_hot(indices, on_value, off_value, depth, axis=-1, dtype=""):
    dtype = dtype or on_value.dtype
    axis = indices.ndim if axis == -1 else axis
    hit = np.expand_dims(indices, axis) == np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    return np.where(hit, on_value.astype(dtype), off_value.astype(dtype))


def reverse_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if attrs["axis"] is None:
        raise TypeRelError("reverse needs an `axis`")
    normalize_axis(attrs["axis"], len(t.shape), "reverse axis")
    return t


# ------------------------------------------------------------------ gather_nd


def _nd_plan(data: tuple, indices: tuple, batch_dims: int, op: str) -> int:
    """Check a gather_nd / scatter_nd index tensor (M, Y...) against data; returns M."""
    if not indices:
        raise TypeRelError(f"{op} needs indices of rank 1 or more (M, ...), got a scalar")
    m = indices[0]
    if m is ANY:
        raise TypeRelError(f"{op} needs a static first dimension of indices (the index length), "
                           f"got {fmt_shape(indices)}")
    if batch_dims < 0 or m + batch_dims > len(data):
        raise TypeRelError(f"{op}: {m} indices after {batch_dims} batch dimensions exceed the rank "
                           f"{len(data)} of data {fmt_shape(data)}")
    if batch_dims > len(indices) - 1 or not _same_dims(data[:batch_dims], indices[1:1 + batch_dims]):
        raise TypeRelError(f"{op} with batch_dims {batch_dims} needs the same leading dimensions in data "
                           f"{fmt_shape(data)} and indices {fmt_shape(indices)} (after its first)")
    return m


def gather_nd_rel(args, attrs):
    data, indices = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "indices")
    _int_indices(indices, "gather_nd")
    bd = attrs["batch_dims"]
    m = _nd_plan(data.shape, indices.shape, bd, "gather_nd")
    if attrs["index_rank"] is not None and attrs["index_rank"] != m:
        raise TypeRelError(f"gather_nd index_rank {attrs['index_rank']} differs from the first dimension "
                           f"{m} of indices {fmt_shape(indices.shape)}")
    return TensorType(indices.shape[1:] + data.shape[m + bd:], data.dtype)


def _gather_nd(data, indices, batch_dims=0, index_rank=None):
    m = indices.shape[0]
    out = np.empty(indices.shape[1:] + data.shape[m + batch_dims:], data.dtype)
    for pos in np.ndindex(*indices.shape[1:]):
        where = tuple(int(i) for i in indices[(slice(None),) + pos])
        out[pos] = data[pos[:batch_dims] + where]
    return out


# ------------------------------------------------------------------ scatter_elements, scatter_nd


# lambdas, so that loading the table does not load NumPy (the parser consults it)
_COMBINE = {"update": lambda old, new: new, "add": lambda a, b: np.add(a, b), "mul": lambda a, b: np.multiply(a, b),
            "min": lambda a, b: np.minimum(a, b), "max": lambda a, b: np.maximum(a, b)}


def scatter_elements_rel(args, attrs):
    data, indices, updates = (tensor_arg(args, i, n) for i, n in enumerate(("data", "indices", "updates")))
    _int_indices(indices, "scatter_elements")
    same_dtype("scatter_elements", data, updates)
    if attrs["reduction"] not in _COMBINE:  # TVM also has "mean", which ONNX does not use
        raise TypeRelError(f"scatter_elements reduction must be one of {', '.join(_COMBINE)}, "
                           f"got \"{attrs['reduction']}\"")
    if not data.shape:
        raise TypeRelError("scatter_elements needs data of rank 1 or more")
    normalize_axis(attrs["axis"], len(data.shape), "scatter_elements axis")
    if not _same_dims(indices.shape, updates.shape) or len(indices.shape) != len(data.shape):
        raise TypeRelError(f"scatter_elements needs indices {fmt_shape(indices.shape)} and updates "
                           f"{fmt_shape(updates.shape)} of one shape, of the rank of data {fmt_shape(data.shape)}")
    return data


def _scatter_elements(data, indices, updates, axis=0, reduction="update"):
    out = data.copy()
    axis %= data.ndim
    dim = data.shape[axis]
    combine = _COMBINE[reduction]
    for pos in np.ndindex(*indices.shape):
        i = int(indices[pos])
        target = pos[:axis] + (i + dim if i < 0 else i,) + pos[axis + 1:]
        out[target] = combine(out[target], updates[pos])
    return out


def scatter_nd_rel(args, attrs):
    data, indices, updates = (tensor_arg(args, i, n) for i, n in enumerate(("data", "indices", "updates")))
    _int_indices(indices, "scatter_nd")
    same_dtype("scatter_nd", data, updates)
    if attrs["mode"] not in _COMBINE:
        raise TypeRelError(f"scatter_nd mode must be one of {', '.join(_COMBINE)}, got \"{attrs['mode']}\"")
    m = _nd_plan(data.shape, indices.shape, 0, "scatter_nd")
    want = indices.shape[1:] + data.shape[m:]
    if not _same_dims(updates.shape, want):
        raise TypeRelError(f"scatter_nd needs updates of shape {fmt_shape(want)} (indices {fmt_shape(indices.shape)}"
                           f" after the first dimension, then data {fmt_shape(data.shape)} after {m}), got "
                           f"{fmt_shape(updates.shape)}")
    return data


def _scatter_nd(data, indices, updates, mode="update"):
    out = data.copy()
    combine = _COMBINE[mode]
    for pos in np.ndindex(*indices.shape[1:]):
        where = tuple(int(i) for i in indices[(slice(None),) + pos])
        out[where] = combine(out[where], updates[pos])
    return out


# ------------------------------------------------------------------ einsum


def parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The subscripts of each operand (`...` as one `.` per broadcast dimension, right-aligned
    as NumPy does) and of the output (implicit: `...` then the letters used once, sorted)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise TypeRelError(f"einsum equation \"{equation}\" has {len(terms)} operands, got {len(ranks)} tensors")
    ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    out_terms = []
    for t, r in zip(terms, ranks):
        letters = t.replace("...", "")
        if not all(c.isalpha() for c in letters) or t.count("...") > 1:
            raise TypeRelError(f"einsum equation \"{equation}\": bad operand subscripts \"{t}\"")
        n_ell = r - len(letters)
        if n_ell < 0 or (n_ell and "..." not in t):
            raise TypeRelError(f"einsum equation \"{equation}\": subscripts \"{t}\" do not fit a tensor of rank {r}")
        # broadcast dims are named by their position from the right among all `...` dims
        out_terms.append(t.replace("...", "".join(chr(0x2460 + ell - n_ell + i) for i in range(n_ell))))
    ell_names = "".join(chr(0x2460 + i) for i in range(ell))
    if arrow:
        out = rhs.replace("...", ell_names)
    else:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell_names + "".join(sorted(c for c, n in counts.items() if n == 1 and c.isascii()))
    return out_terms, out


def einsum_rel(args, attrs):
    fields = tuple_arg(args, 0, "data").fields
    if not fields:
        raise TypeRelError("einsum needs at least one tensor")
    dtype = same_dtype("einsum", *fields)
    terms, out = parse_einsum(attrs["equation"], [len(f.shape) for f in fields])
    sizes: dict = {}
    for t, f in zip(terms, fields):
        for c, d in zip(t, f.shape):
            if c in sizes and (not c.isascii() or 1 in (sizes[c], d)):  # broadcast (TOPI's InferEinsumShape)
                sizes[c] = broadcast_shapes((sizes[c],), (d,))[0]
            elif c in sizes and sizes[c] is not ANY and d is not ANY and sizes[c] != d:
                raise TypeRelError(f"einsum \"{attrs['equation']}\": subscript {c} is {sizes[c]} in one operand "
                                   f"and {d} in another")
            elif c not in sizes or sizes[c] is ANY:
                sizes[c] = d
    missing = [c for c in out if c not in sizes]
    if missing or len(set(out)) != len(out):
        raise TypeRelError(f"einsum \"{attrs['equation']}\": the output subscripts must be distinct input subscripts")
    return TensorType(tuple(sizes[c] for c in out), dtype)


def _einsum(data, equation):
    dtype = data[0].dtype
    if dtype.kind == "V" or str(dtype) == "bfloat16":  # NumPy's einsum has no bfloat16 loop: float32, rounded once
        data = [x.astype("float32") for x in data]
    return np.asarray(np.einsum(equation, *data)).astype(dtype)


# ------------------------------------------------------------------ registration

register(
    # kOutEWiseFusable in TVM: an elementwise consumer may fuse into it
    OpDef("one_hot", ("indices", "on_value", "off_value"), one_hot_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _one_hot,
          attrs=(AttrSpec("depth", "int", 1), AttrSpec("axis", "int", -1), AttrSpec("dtype", "dtype", ""))),
    OpDef("reverse", ("data",), reverse_rel, I, lambda x, axis: np.flip(x, axis).copy(),
          attrs=(AttrSpec("axis", "int?", None),), relax_name="relax.flip"),
    OpDef("gather_nd", ("data", "indices"), gather_nd_rel, I, _gather_nd,
          attrs=(AttrSpec("batch_dims", "int", 0), AttrSpec("index_rank", "int?", None))),
    OpDef("scatter_elements", ("data", "indices", "updates"), scatter_elements_rel, O, _scatter_elements,
          attrs=(AttrSpec("axis", "int", 0), AttrSpec("reduction", "str", "update"))),
    OpDef("scatter_nd", ("data", "indices", "updates"), scatter_nd_rel, O, _scatter_nd,
          attrs=(AttrSpec("mode", "str", "update"),)),
    OpDef("einsum", ("data",), einsum_rel, I, _einsum, attrs=(AttrSpec("equation", "str", REQUIRED),)),
)
