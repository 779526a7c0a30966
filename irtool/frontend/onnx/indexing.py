"""ONNX search, scan and index ops: TopK, CumSum, CumProd, OneHot, NonZero, IsNaN/IsInf,
GatherElements, GatherND, ScatterElements (and the deprecated Scatter), ScatterND, Einsum,
TensorScatter.

Each is converted as TVM v0.19's `relay.frontend.onnx` converts it:

- TopK: `topk` (largest=1), or `sort` + `argsort` + `strided_slice` (largest=0); a `k` known
  only at run time makes `dyn.topk` / `dyn.strided_slice` (the slice's end: `k` on the axis, the
  int64 maximum elsewhere), as TVM does; the indices are int64;
- CumSum: `cumsum`; `reverse=1` reverses the axis before and after; the axis must be
  known at import (TVM's too);
- OneHot: `one_hot` with off/on taken from `values`, negative indices first moved up by
  `depth`, the result in the dtype of `values`; a depth known only at run time (cast to
  int64) makes `dyn.one_hot`;
- Unique: Relay's `unique` of the flattened (or 1-D) input, trimmed to its `num_unique`
  elements by `dyn.strided_slice` (`?` long, like NonZero's columns);
- NonZero: `transpose(cast(argwhere(x), int64))`: the number of columns is `?` until the
  program runs;
- IsInf: `isinf`, multiplied by `x > 0` / `x < 0` when one sign is not detected;
- GatherElements: `gather` with negative indices moved up by the axis size;
- GatherND / ScatterND: `gather_nd` / `scatter_nd` with the index tuples moved to the
  first axis (`transpose`), as Relay wants them;
- ScatterElements / Scatter: `scatter_elements` (reduction "none" is Relay's "update");
- Einsum: `einsum` of the inputs, the equation as the attribute;
- CumProd (opset 26) and TensorScatter (opset 24), which TVM v0.19 does not convert:
  `cumprod` as CumSum's `cumsum`; a `scatter_elements` from each batch row's write index.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Tuple, TupleGetItem
from ...ir.types import ANY
from . import converter


def _dtype(ctx, x) -> str:
    return ctx.type_of(x).dtype


def _rank(ctx, x) -> int:
    return len(ctx.shape_of(x))


def _axis(ctx, axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ctx.error(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _scalar_int(ctx, expr, what: str) -> int:
    value = np.asarray(ctx.required_value(expr, what)).reshape(-1)
    if value.size != 1:
        raise ctx.error(f"{what} must hold one value, got {value.size}")
    return int(value[0])


# ----------------------------------------------------------------------------- TopK, CumSum


def _topk(ctx, data, k: int, axis: int, largest: bool):
    shape = ctx.shape_of(data)
    axis = _axis(ctx, axis, len(shape))
    if k < 0 or (shape[axis] is not ANY and k > shape[axis]):
        raise ctx.error(f"TopK k={k} is out of range for dimension {axis} of size {shape[axis]}")
    if largest:
        out = ctx.call("topk", data, k=k, axis=axis, dtype="int64")
        return [ctx.typed(TupleGetItem(out, i)) for i in range(2)]
    # TVM: TOPI's topk has no "smallest"; sort ascending and keep the first k
    values = ctx.call("sort", data, axis=axis)
    indices = ctx.call("argsort", data, axis=axis, dtype="int64")
    return [ctx.call("strided_slice", x, begin=(0,), end=(k,), strides=(1,), axes=(axis,))
            for x in (values, indices)]


@converter("TopK", 1)
def _topk_v1(ctx, inputs, attrs):
    return _topk(ctx, inputs[0], int(attrs["k"]), attrs.get("axis", -1), True)


def _run_time_scalar(ctx, x, what: str):
    """An integer scalar input known only at run time, as an int64 tensor of shape (1,)."""
    shape = ctx.shape_of(x)
    if shape not in ((), (1,)):
        raise ctx.error(f"{what} must hold one value, got shape {list(shape)}")
    if _dtype(ctx, x) != "int64":
        x = ctx.call("cast", x, dtype="int64")
    return ctx.call("reshape", x, newshape=(1,)) if shape == () else x


def _dynamic_topk(ctx, data, k, axis: int, largest: bool):
    """TVM's TopK of a run-time k: `dyn.topk`, or the sorted tensors cut by `dyn.strided_slice`."""
    ndim = _rank(ctx, data)
    axis = _axis(ctx, axis, ndim)
    k = _run_time_scalar(ctx, k, "TopK's k")
    if largest:
        out = ctx.call("dyn.topk", data, k, axis=axis, dtype="int64")
        return [ctx.typed(TupleGetItem(out, i)) for i in range(2)]
    whole = np.iinfo(np.int64).max
    pieces = [ctx.const([whole] * n, "int64") for n in (axis, ndim - axis - 1)]
    end = ctx.call("concatenate", Tuple([p for p in (pieces[0], k, pieces[1]) if ctx.shape_of(p) != (0,)]), axis=0)
    begin, strides = ctx.const([0] * ndim, "int64"), ctx.const([1] * ndim, "int64")
    return [ctx.call("dyn.strided_slice", x, begin, end, strides)
            for x in (ctx.call("sort", data, axis=axis), ctx.call("argsort", data, axis=axis, dtype="int64"))]


@converter("TopK", 10, 11)
def _topk_v10(ctx, inputs, attrs):
    axis, largest = attrs.get("axis", -1), bool(attrs.get("largest", 1))
    if ctx.value(inputs[1]) is None:
        return _dynamic_topk(ctx, inputs[0], inputs[1], axis, largest)
    k = _scalar_int(ctx, inputs[1], "TopK's k")
    return _topk(ctx, inputs[0], k, axis, largest)


def _scan(relay_op: str):
    """CumSum / CumProd: Relay's scan along the axis; `reverse` reverses the axis before
    and after it (TVM v0.19's CumSum; it has no CumProd converter, Relay has the op)."""
    def convert(ctx, inputs, attrs):
        data = inputs[0]
        axis = _axis(ctx, _scalar_int(ctx, inputs[1], f"{ctx.node.op_type}'s axis"), _rank(ctx, data))
        exclusive = bool(attrs.get("exclusive", 0))
        if attrs.get("reverse", 0):
            flipped = ctx.call("reverse", data, axis=axis)
            return ctx.call("reverse", ctx.call(relay_op, flipped, axis=axis, exclusive=exclusive), axis=axis)
        return ctx.call(relay_op, data, axis=axis, exclusive=exclusive)
    return convert


converter("CumSum", 11, 14)(_scan("cumsum"))
converter("CumProd", 26)(_scan("cumprod"))


# ----------------------------------------------------------------------------- OneHot, NonZero, IsNaN, IsInf


@converter("OneHot", 9, 11)
def _one_hot(ctx, inputs, attrs):
    indices, depth, values = inputs
    run_time = ctx.value(depth) is None
    if run_time:  # ONNX casts a depth of another type to int64
        depth = ctx.call("reshape", _run_time_scalar(ctx, depth, "OneHot's depth"), newshape=())
    else:
        depth = _scalar_int(ctx, depth, "OneHot's depth")
    ndim = _rank(ctx, indices)
    axis = attrs.get("axis", -1)
    if not -ndim - 1 <= axis <= ndim:
        raise ctx.error(f"OneHot axis {axis} is out of range for indices of rank {ndim}")
    axis = axis + ndim + 1 if axis < 0 else axis
    if tuple(ctx.shape_of(values)) != (2,):
        raise ctx.error(f"OneHot's values must be a tensor of 2 elements (off, on), got shape "
                        f"{list(ctx.shape_of(values))}")
    off, on = (ctx.call("take", values, ctx.const(i, "int64")) for i in (0, 1))
    ind = _dtype(ctx, indices)
    size = ctx.call("cast", depth, dtype=ind) if run_time else ctx.const(depth, ind)
    indices = ctx.call("where", ctx.call("less", indices, ctx.const(0, ind)), ctx.call("add", indices, size), indices)
    if run_time:
        return ctx.call("dyn.one_hot", indices, on, off, depth, axis=axis, dtype=_dtype(ctx, values))
    return ctx.call("one_hot", indices, on, off, depth=depth, axis=axis, dtype=_dtype(ctx, values))


@converter("NonZero", 9, 13)
def _non_zero(ctx, inputs, attrs):
    found = ctx.call("cast", ctx.call("argwhere", inputs[0]), dtype="int64")
    return ctx.call("transpose", found, axes=(1, 0))


@converter("Unique", 11)
def _unique(ctx, inputs, attrs):
    """Relay's `unique` (1-D, with counts) of the flattened input, its unique values, first
    indices and counts cut to their first `num_unique` elements by `dyn.strided_slice`
    (`?` long until the program runs), every index output cast to int64, as TVM v0.19
    converts it. Like TVM, `axis` is supported only on 1-D input."""
    x = inputs[0]
    shape = ctx.shape_of(x)
    axis = attrs.get("axis")
    if axis is not None and (len(shape) != 1 or int(axis) not in (0, -1)):
        raise ctx.error(f"Unique along an axis is supported for 1-D input only, got shape {list(shape)} "
                        f"and axis {axis}")
    if len(shape) != 1:
        x = ctx.call("reshape", x, newshape=(-1,))
    found = ctx.call("unique", x, sorted=bool(attrs.get("sorted", 1)), return_counts=True)
    values, first, inverse, count, counts = (ctx.typed(TupleGetItem(found, i)) for i in range(5))

    def cut(t):
        return ctx.call("dyn.strided_slice", t, ctx.const([0], "int32"), count, ctx.const([1], "int32"))

    return [cut(values), ctx.call("cast", cut(first), dtype="int64"), ctx.call("cast", inverse, dtype="int64"),
            ctx.call("cast", cut(counts), dtype="int64")]


@converter("IsNaN", 9, 13, 20)
def _is_nan(ctx, inputs, attrs):
    return ctx.call("isnan", inputs[0])


@converter("IsInf", 10, 20)
def _is_inf(ctx, inputs, attrs):
    x = inputs[0]
    zero = ctx.const(0, _dtype(ctx, x))
    out = ctx.call("isinf", x)
    if not attrs.get("detect_negative", 1):
        out = ctx.call("multiply", out, ctx.call("greater", x, zero))
    if not attrs.get("detect_positive", 1):
        out = ctx.call("multiply", out, ctx.call("less", x, zero))
    return out


# ----------------------------------------------------------------------------- gathers and scatters


def _non_negative(ctx, data, indices, axis: int):
    """Negative indices moved up by the size of `axis` (TVM's normalize_gather_indices)."""
    dtype = _dtype(ctx, indices)
    dim = ctx.shape_of(data)[axis]
    size = (ctx.const(dim, dtype) if dim is not ANY else
            ctx.call("take", ctx.call("shape_of", data, dtype=dtype), ctx.const(axis, "int64")))
    return ctx.call("where", ctx.call("less", indices, ctx.const(0, dtype)), ctx.call("add", indices, size), indices)


@converter("GatherElements", 11, 13)
def _gather_elements(ctx, inputs, attrs):
    data, indices = inputs
    axis = _axis(ctx, attrs.get("axis", 0), _rank(ctx, data))
    return ctx.call("gather", data, _non_negative(ctx, data, indices, axis), axis=axis)


def _index_tuples_first(ctx, indices):
    """ONNX puts an index tuple on the last axis of `indices`, Relay on the first."""
    n = _rank(ctx, indices)
    if n == 0:
        raise ctx.error("the indices must have rank 1 or more")
    return ctx.call("transpose", indices, axes=(n - 1, *range(n - 1)))


@converter("GatherND", 11, 12, 13)
def _gather_nd(ctx, inputs, attrs):
    data, indices = inputs
    index_rank = ctx.shape_of(indices)[-1] if _rank(ctx, indices) else None
    if index_rank is ANY:
        raise ctx.error("GatherND needs the last dimension of the indices (the index length) to be static")
    return ctx.call("gather_nd", data, _index_tuples_first(ctx, indices), batch_dims=attrs.get("batch_dims", 0),
                    index_rank=index_rank)


_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _reduction(ctx, attrs) -> str:
    given = attrs.get("reduction", "none")
    if given not in _REDUCTIONS:
        raise ctx.error(f"reduction \"{given}\" is not supported (none, add, mul, min, max are)")
    return _REDUCTIONS[given]


@converter("ScatterElements", 11, 13, 16, 18)
def _scatter_elements(ctx, inputs, attrs):
    data, indices, updates = inputs
    axis = _axis(ctx, attrs.get("axis", 0), _rank(ctx, data))
    return ctx.call("scatter_elements", data, indices, updates, axis=axis, reduction=_reduction(ctx, attrs))


@converter("Scatter", 9)
def _scatter(ctx, inputs, attrs):
    """The deprecated name of ScatterElements (opsets 9 and 10), without reductions."""
    data, indices, updates = inputs
    axis = _axis(ctx, attrs.get("axis", 0), _rank(ctx, data))
    return ctx.call("scatter_elements", data, indices, updates, axis=axis)


@converter("ScatterND", 11, 13, 16, 18)
def _scatter_nd(ctx, inputs, attrs):
    data, indices, updates = inputs
    return ctx.call("scatter_nd", data, _index_tuples_first(ctx, indices), updates, mode=_reduction(ctx, attrs))


# ----------------------------------------------------------------------------- Einsum


@converter("Einsum", 12)
def _einsum(ctx, inputs, attrs):
    return ctx.call("einsum", Tuple([x for x in inputs if x is not None]), equation=attrs["equation"])


@converter("TensorScatter", 24)
def _tensor_scatter(ctx, inputs, attrs):
    """Opset 24's KV-cache update: `update` written into `past_cache` along `axis` (default
    -2) from each batch row's write index (0 without `write_indices`; modulo the cache's
    length in "circular" mode), as one `scatter_elements` whose indices are the write index
    plus the position in the update."""
    cache, update = inputs[0], inputs[1]
    write = inputs[2] if len(inputs) > 2 else None
    rank = _rank(ctx, cache)
    axis = _axis(ctx, int(attrs.get("axis", -2)), rank)
    mode = attrs.get("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.error(f"TensorScatter mode must be linear or circular, got {mode!r}")
    if axis == 0:
        raise ctx.error("TensorScatter's axis cannot be the batch axis 0")
    shape = ctx.shape_of(update)
    if ANY in shape or len(shape) != rank:
        raise ctx.error(f"TensorScatter needs an update of static shape and the cache's rank, got {list(shape)}")
    steps = np.arange(shape[axis], dtype="int64").reshape([-1 if a == axis else 1 for a in range(rank)])
    index = ctx.const(steps)
    if write is not None:
        rows = ctx.call("reshape", ctx.call("cast", write, dtype="int64"), newshape=(-1,) + (1,) * (rank - 1))
        index = ctx.call("add", rows, index)
    if mode == "circular":
        length = ctx.shape_of(cache)[axis]
        if length is ANY:
            raise ctx.error("circular TensorScatter needs the cache's sequence length static")
        index = ctx.call("floor_mod", index, ctx.const(length, "int64"))
    index = ctx.call("broadcast_to", index, shape=tuple(shape))
    return ctx.call("scatter_elements", cache, index, update, axis=axis)


@converter("Col2Im", 18)
def _col2im(ctx, inputs, attrs):
    """The blocks (N, C * prod(block_shape), L) summed back into (N, C, *image_shape), the
    adjoint of im2col: one `scatter_elements` (reduction "add") into the padded image at
    positions computed at import (image_shape and block_shape must be known then), then
    the pads cropped. TVM v0.19 does not convert Col2Im."""
    x = inputs[0]
    image = [int(v) for v in np.asarray(ctx.required_value(inputs[1], "Col2Im's image_shape")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.required_value(inputs[2], "Col2Im's block_shape")).reshape(-1)]
    nd = len(image)
    strides = [int(v) for v in attrs.get("strides", [1] * nd)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * nd)]
    pads = [int(v) for v in attrs.get("pads", [0] * 2 * nd)]
    if len(block) != nd or len(strides) != nd or len(dilations) != nd or len(pads) != 2 * nd:
        raise ctx.error(f"Col2Im: image_shape {image}, block_shape {block}, strides {strides}, dilations "
                        f"{dilations} and pads {pads} disagree on the number of spatial axes")
    padded = [image[d] + pads[d] + pads[d + nd] for d in range(nd)]
    counts = [(padded[d] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    shape = ctx.shape_of(x)
    kernel, blocks = int(np.prod(block)), int(np.prod(counts))
    if (len(shape) != 3 or ANY in shape or min(counts) < 1 or shape[1] % kernel or shape[2] != blocks):
        raise ctx.error(f"Col2Im needs a static input (N, C * {kernel}, {blocks}) for image_shape {image} and "
                        f"block_shape {block}, got {list(shape)}")
    batch, channels = shape[0], shape[1] // kernel
    offsets = np.stack(np.meshgrid(*[np.arange(b) for b in block], indexing="ij"), -1).reshape(-1, nd)
    starts = np.stack(np.meshgrid(*[np.arange(c) for c in counts], indexing="ij"), -1).reshape(-1, nd)
    positions = starts[None, :, :] * strides + offsets[:, None, :] * dilations  # (kernel, blocks, nd)
    flat = np.ravel_multi_index(tuple(positions[..., d] for d in range(nd)), padded).reshape(1, 1, -1)
    index = ctx.call("broadcast_to", ctx.const(flat.astype("int64")), shape=(batch, channels, kernel * blocks))
    values = ctx.call("reshape", x, newshape=(batch, channels, kernel * blocks))
    canvas = ctx.call("zeros", shape=(batch, channels, int(np.prod(padded))), dtype=_dtype(ctx, x))
    summed = ctx.call("scatter_elements", canvas, index, values, axis=2, reduction="add")
    summed = ctx.call("reshape", summed, newshape=(batch, channels, *padded))
    return ctx.call("strided_slice", summed, begin=tuple(pads[:nd]), end=tuple(p + s for p, s in zip(pads, image)),
                    strides=(1,) * nd, axes=tuple(range(2, 2 + nd)))
