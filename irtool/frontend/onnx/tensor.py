"""ONNX tensor ops: shapes, reshapes, indexing, concatenation, casts, constants.

Inputs that decide a shape (Reshape's shape, Slice's starts, Expand's shape, ...) must be
known at import (`ctx.required_value`): constants, or computed from static shapes, which
`ctx.call` folds as it goes.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.expr import Tuple, TupleGetItem
from ...ir.types import ANY
from . import ONNX_DTYPES, converter

# ----------------------------------------------------------------------------- helpers


def _tuples(value):
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return int(value) if isinstance(value, np.integer) else value


def _call(ctx, op: str, *args, **attrs):
    """`ctx.call` with list attributes as the tuples the op registry takes."""
    return ctx.call(op, *args, **{k: _tuples(v) for k, v in attrs.items()})


def _ints(ctx, expr, what: str) -> list[int]:
    return [int(v) for v in np.asarray(ctx.required_value(expr, what)).reshape(-1)]


def _optional(inputs, i: int):
    return inputs[i] if len(inputs) > i else None


def _axis(ctx, axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ctx.error(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _axes(ctx, axes, ndim: int, what: str = "axes") -> list[int]:
    out = [_axis(ctx, int(a), ndim, what) for a in axes]
    if len(set(out)) != len(out):
        raise ctx.error(f"{what} {list(axes)} name an axis twice")
    return out


def _static(ctx, expr, what: str) -> tuple:
    shape = ctx.shape_of(expr)
    if ANY in shape:
        raise ctx.error(f"{what} needs a static input shape, got {shape}")
    return tuple(int(d) for d in shape)


def _dtype(ctx, expr) -> str:
    return ctx.type_of(expr).dtype


# ----------------------------------------------------------------------------- constants


@converter("Identity", 1)
def _identity(ctx, inputs, attrs):
    return inputs[0]


@converter("Constant", 1)
def _constant(ctx, inputs, attrs):
    if "value" in attrs:
        return ctx.const(np.array(attrs["value"]))
    if "value_float" in attrs:
        return ctx.const(attrs["value_float"], "float32")
    if "value_floats" in attrs:
        return ctx.const(list(attrs["value_floats"]), "float32")
    if "value_int" in attrs:
        return ctx.const(attrs["value_int"], "int64")
    if "value_ints" in attrs:
        return ctx.const(list(attrs["value_ints"]), "int64")
    raise ctx.error(f"unsupported Constant attribute(s): {', '.join(sorted(attrs)) or 'none'}")


@converter("ConstantOfShape", 9)
def _constant_of_shape(ctx, inputs, attrs):
    value = np.asarray(attrs.get("value", np.zeros((1,), "float32"))).reshape(-1)
    if value.size != 1:
        raise ctx.error("ConstantOfShape `value` must hold one element")
    if ctx.value(inputs[0]) is None:  # a shape known at run time: TVM's dyn.full
        return _call(ctx, "dyn.full", ctx.const(value[0], str(value.dtype)), inputs[0], dtype=str(value.dtype))
    shape = _ints(ctx, inputs[0], "the shape")
    return ctx.const(np.full(shape, value[0], dtype=value.dtype))


@converter("Range", 11)
def _range(ctx, inputs, attrs):
    dtype = _dtype(ctx, inputs[0])
    if any(ctx.value(x) is None for x in inputs[:3]):  # bounds known at run time: arange of `?` elements
        bounds = [x if not ctx.shape_of(x) else _call(ctx, "reshape", x, newshape=()) for x in inputs[:3]]
        return _call(ctx, "arange", *bounds, dtype=dtype)
    # scalars by the spec; one-element tensors (as onnx's own function bodies pass) are taken too
    start, limit, delta = (np.asarray(ctx.required_value(x, name)).reshape(-1)[0]
                           for x, name in zip(inputs, ("start", "limit", "delta")))
    if float(delta) == 0:
        raise ctx.error("Range delta is 0")
    n = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    return ctx.const(np.asarray(start) + np.asarray(delta) * np.arange(n).astype(dtype), dtype)


@converter("Size", 1)
def _size(ctx, inputs, attrs):
    """The element count, an int64 scalar: a constant (static shapes only: Relay's
    ndarray_size, which TVM uses otherwise, is not in the registry)."""
    return ctx.const(math.prod(_static(ctx, inputs[0], "Size")), "int64")


@converter("Cast", 1)
def _cast(ctx, inputs, attrs):
    to = attrs.get("to")
    dtype = ONNX_DTYPES.get(to) if isinstance(to, int) else to
    if dtype is None:
        raise ctx.error(f"Cast to unsupported element type {to}")
    return _call(ctx, "cast", inputs[0], dtype=dtype)


@converter("CastLike", 15)
def _cast_like(ctx, inputs, attrs):
    """Cast to the second input's element type (as TVM's converter does)."""
    return _call(ctx, "cast", inputs[0], dtype=ctx.type_of(inputs[1]).dtype)


# ----------------------------------------------------------------------------- shapes


@converter("Shape", 1, 15)
def _shape(ctx, inputs, attrs):
    out = _call(ctx, "shape_of", inputs[0], dtype="int64")
    ndim = len(ctx.shape_of(inputs[0]))
    start, end = attrs.get("start", 0), attrs.get("end", ndim)
    start, end = (min(max(v + ndim if v < 0 else v, 0), ndim) for v in (start, end))
    if (start, end) == (0, ndim):
        return out
    if end <= start:
        return ctx.const(np.zeros((0,), "int64"))
    return _call(ctx, "strided_slice", out, begin=[start], end=[end], strides=[1], axes=[0])


@converter("Reshape", 1, 5, 14)
def _reshape(ctx, inputs, attrs):
    allowzero = bool(attrs.get("allowzero", 0))
    if ctx.opset < 5:
        newshape = [int(v) for v in attrs["shape"]]
    elif ctx.value(inputs[1]) is None:
        return ctx.reshape_to(inputs[0], inputs[1], allowzero)
    else:
        newshape = _ints(ctx, inputs[1], "the shape")
    if any(v < -1 for v in newshape) or newshape.count(-1) > 1:
        raise ctx.error(f"invalid Reshape shape {newshape}")
    if allowzero and 0 in newshape and -1 in newshape:
        raise ctx.error("Reshape with allowzero cannot hold both 0 and -1")
    shape = ctx.shape_of(inputs[0])
    if ANY not in shape:
        # Spell the result out: every dimension known, as TVM's importer folds it.
        size = math.prod(shape)
        dims = [shape[i] if v == 0 and not allowzero else v for i, v in enumerate(newshape)]
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or size % known:
                raise ctx.error(f"cannot reshape {list(shape)} to {newshape}")
            dims[dims.index(-1)] = size // known
        newshape = dims
    return _call(ctx, "reshape", inputs[0], newshape=newshape, allowzero=allowzero)


@converter("Flatten", 1, 11)
def _flatten(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    ndim = len(shape)
    axis = attrs.get("axis", 1)
    if not -ndim <= axis <= ndim:
        raise ctx.error(f"Flatten axis {axis} is out of range for a tensor of rank {ndim}")
    axis = axis + ndim if axis < 0 else axis
    if ANY not in shape:
        return _call(ctx, "reshape", inputs[0], newshape=[math.prod(shape[:axis]), math.prod(shape[axis:])])
    if axis == 1:
        return _call(ctx, "nn.batch_flatten", inputs[0])
    if axis == 0:
        return _call(ctx, "reshape", inputs[0], newshape=[1, -1])
    if ANY not in shape[:axis]:
        return _call(ctx, "reshape", inputs[0], newshape=[math.prod(shape[:axis]), -1])
    if ANY not in shape[axis:]:
        return _call(ctx, "reshape", inputs[0], newshape=[-1, math.prod(shape[axis:])])
    raise ctx.error(f"Flatten at axis {axis} of shape {shape} needs more static dimensions")


@converter("Transpose", 1)
def _transpose(ctx, inputs, attrs):
    ndim = len(ctx.shape_of(inputs[0]))
    perm = attrs.get("perm")
    perm = list(range(ndim))[::-1] if perm is None else _axes(ctx, perm, ndim, "perm")
    return _call(ctx, "transpose", inputs[0], axes=perm)


def _squeeze_axes(ctx, inputs, attrs):
    if ctx.opset >= 13:
        return None if _optional(inputs, 1) is None else _ints(ctx, inputs[1], "the axes")
    return attrs.get("axes")


@converter("Squeeze", 1, 13)
def _squeeze(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    axes = _squeeze_axes(ctx, inputs, attrs)
    if axes is None:
        if ANY in shape:
            raise ctx.error("Squeeze without axes needs a static input shape")
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = _axes(ctx, axes, len(shape))
        for a in axes:
            if shape[a] is not ANY and shape[a] != 1:
                raise ctx.error(f"cannot squeeze axis {a} of size {shape[a]}")
    return _call(ctx, "squeeze", inputs[0], axis=sorted(axes))


@converter("Unsqueeze", 1, 13)
def _unsqueeze(ctx, inputs, attrs):
    axes = _squeeze_axes(ctx, inputs, attrs)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    ndim = len(ctx.shape_of(inputs[0])) + len(axes)
    out = inputs[0]
    for a in sorted(_axes(ctx, axes, ndim)):
        out = _call(ctx, "expand_dims", out, axis=a)
    return out


@converter("Expand", 8)
def _expand(ctx, inputs, attrs):
    if ctx.value(inputs[1]) is None:
        return ctx.broadcast_to(inputs[0], _expand_shape(ctx, inputs[0], inputs[1]))
    target = _ints(ctx, inputs[1], "the shape")
    shape = ctx.shape_of(inputs[0])
    n = max(len(shape), len(target))
    a = (1,) * (n - len(shape)) + tuple(shape)
    b = (1,) * (n - len(target)) + tuple(target)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x is ANY:
            if y == 1:
                raise ctx.error(f"Expand keeps dimension {i}, which is unknown (`?`)")
            out.append(y)
        elif x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ctx.error(f"cannot broadcast shape {list(shape)} with {target}")
    return _call(ctx, "broadcast_to", inputs[0], shape=out)


def _expand_shape(ctx, data, shape):
    """ONNX's two-way broadcast of `data` with a run-time `shape`, as TVM's Expand builds
    it: both padded with 1s to one rank, then their elementwise maximum."""
    dtype = _dtype(ctx, shape)
    have = _call(ctx, "shape_of", data, dtype=dtype)
    n_have, n_want = len(ctx.shape_of(data)), ctx.shape_of(shape)[0]
    if n_want is ANY:
        raise ctx.error("Expand needs a shape of static length")
    if n_have < n_want:
        have = _call(ctx, "concatenate", Tuple([ctx.const(np.ones(n_want - n_have, dtype)), have]), axis=0)
    elif n_want < n_have:
        shape = _call(ctx, "concatenate", Tuple([ctx.const(np.ones(n_have - n_want, dtype)), shape]), axis=0)
    return _call(ctx, "maximum", have, shape)


@converter("Tile", 6)
def _tile(ctx, inputs, attrs):
    if ctx.value(inputs[1]) is None:
        return _call(ctx, "dyn.tile", inputs[0], inputs[1])
    reps = _ints(ctx, inputs[1], "the repeats")
    if len(reps) != len(ctx.shape_of(inputs[0])):
        raise ctx.error(f"Tile repeats {reps} must have one value per input dimension")
    if any(r < 0 for r in reps):
        raise ctx.error(f"Tile repeats {reps} must not be negative")
    return _call(ctx, "tile", inputs[0], reps=reps)


# ----------------------------------------------------------------------------- joining and splitting


@converter("Concat", 1, 4)
def _concat(ctx, inputs, attrs):
    parts = [x for x in inputs if x is not None]
    ndim = len(ctx.shape_of(parts[0]))
    axis = _axis(ctx, attrs.get("axis", 1 if ctx.opset < 4 else 0), ndim)
    values = [ctx.value(x) for x in parts]
    if all(v is not None for v in values):  # shape arithmetic: fold (concatenate takes a tuple)
        return ctx.const(np.concatenate(values, axis=axis), _dtype(ctx, parts[0]))
    if len(parts) == 1:
        return parts[0]
    return _call(ctx, "concatenate", Tuple(parts), axis=axis)


@converter("Split", 1, 2, 13, 18)
def _split(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    axis = _axis(ctx, attrs.get("axis", 0), len(shape))
    dim = shape[axis]
    count = len(ctx.node.output)
    if ctx.opset >= 13:
        sizes = None if _optional(inputs, 1) is None else _ints(ctx, inputs[1], "the split sizes")
    elif ctx.opset < 2 and _optional(inputs, 1) is not None:
        sizes = _ints(ctx, inputs[1], "the split sizes")
    else:
        sizes = attrs.get("split")
    if sizes is None and ctx.opset >= 18 and "num_outputs" in attrs:
        n = attrs["num_outputs"]
        if n != count:
            raise ctx.error(f"Split's num_outputs is {n} but the node has {count} outputs")
        if dim is ANY:
            raise ctx.error("Split by num_outputs: the split dimension must be known at import time")
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if sizes is None:
        if dim is not ANY and dim % count:
            raise ctx.error(f"cannot split dimension {axis} of size {dim} into {count} equal parts")
        if count == 1:
            return [inputs[0]]
        indices = count
    else:
        sizes = [int(s) for s in sizes]
        if dim is not ANY and sum(sizes) != dim:
            raise ctx.error(f"split sizes {sizes} do not add up to dimension {axis} of size {dim}")
        if len(sizes) == 1:
            return [inputs[0]]
        indices = list(np.cumsum(sizes[:-1]).tolist())
    value = ctx.value(inputs[0])
    if value is not None:
        return [ctx.const(v) for v in np.split(value, indices, axis=axis)]
    if sizes is not None and 0 in sizes:
        # the split op rejects empty parts: slice each part out (an empty one is begin == end)
        bounds = [0, *np.cumsum(sizes).tolist()]
        return [_call(ctx, "strided_slice", inputs[0], begin=[b], end=[e], strides=[1], axes=[axis])
                for b, e in zip(bounds[:-1], bounds[1:])]
    out = _call(ctx, "split", inputs[0], indices_or_sections=indices, axis=axis)
    n = indices if isinstance(indices, int) else len(indices) + 1
    return [ctx.typed(TupleGetItem(out, i)) for i in range(n)]


# ----------------------------------------------------------------------------- indexing


@converter("Slice", 1, 10)
def _slice(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes, steps = attrs.get("axes"), None
    elif any(ctx.value(x) is None for x in inputs[1:3] + inputs[4:5] if x is not None):
        return _dynamic_slice(ctx, inputs)
    else:
        starts = _ints(ctx, inputs[1], "the starts")
        ends = _ints(ctx, inputs[2], "the ends")
        axes = None if _optional(inputs, 3) is None else _ints(ctx, inputs[3], "the axes")
        steps = None if _optional(inputs, 4) is None else _ints(ctx, inputs[4], "the steps")
    axes = list(range(len(starts))) if axes is None else _axes(ctx, axes, len(shape))
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("Slice starts, ends, axes and steps must have the same length")
    if 0 in steps:
        raise ctx.error("Slice step 0")
    begin, end = [], []
    for a, b, e, s in zip(axes, starts, ends, steps):
        dim = shape[a]
        if dim is ANY:
            begin.append(b)
            end.append(e)
            continue
        # ONNX clamps: starts to [0, dim] ([0, dim-1] stepping back), ends to [0, dim] ([-1, dim-1]).
        b, e = (v + dim if v < 0 else v for v in (b, e))
        if s > 0:
            b, e = min(max(b, 0), dim), min(max(e, 0), dim)
            e = max(e, b)  # empty slices: strided_slice wants begin <= end
        else:
            b, e = min(max(b, 0), dim - 1), min(max(e, -1), dim - 1)
            e = min(e, b)
            if e == -1:  # "before the first element": strided_slice would read -1 as the last
                e = -dim - 1
        begin.append(b)
        end.append(e)
    return _call(ctx, "strided_slice", inputs[0], begin=begin, end=end, strides=steps, axes=axes)


def _dynamic_slice(ctx, inputs):
    """Slice with bounds known at run time: `dyn.strided_slice` over every axis, the
    sliced axes (static `axes`) taking their bounds from the inputs, as TVM scatters them."""
    data, starts, ends = inputs[:3]
    ndim = len(ctx.shape_of(data))
    axes_in, steps = _optional(inputs, 3), _optional(inputs, 4)
    count = ctx.shape_of(starts)[0]
    if count is ANY:
        raise ctx.error("Slice needs starts of static length")
    axes = list(range(count)) if axes_in is None else _axes(ctx, _ints(ctx, axes_in, "the axes"), ndim)
    dtype = _dtype(ctx, starts)
    shape = _call(ctx, "cast", _call(ctx, "shape_of", data, dtype="int64"), dtype=dtype)

    def element(vector, k):
        return _call(ctx, "expand_dims", _call(ctx, "take", _call(ctx, "cast", vector, dtype=dtype),
                                               ctx.const(k, "int32"), axis=0), axis=0)

    def full(given, default):
        pieces = [element(given, axes.index(d)) if given is not None and d in axes else default(d) for d in range(ndim)]
        return _call(ctx, "concatenate", Tuple(pieces), axis=0)

    begin = full(starts, lambda d: ctx.const([0], dtype))
    end = full(ends, lambda d: element(shape, d))
    strides = full(steps, lambda d: ctx.const([1], dtype))
    return _call(ctx, "dyn.strided_slice", data, begin, end, strides)


@converter("Gather", 1, 11, 13)
def _gather(ctx, inputs, attrs):
    data, indices = inputs
    shape = ctx.shape_of(data)
    axis = _axis(ctx, attrs.get("axis", 0), len(shape))
    dim = shape[axis]
    idx = ctx.value(indices)
    if idx is not None:
        if dim is not ANY:
            if np.any((idx < -dim) | (idx >= dim)):
                raise ctx.error(f"Gather indices out of range for axis {axis} of size {dim}")
            indices = ctx.const(np.where(idx < 0, idx + dim, idx), str(idx.dtype))
    elif dim is not ANY:
        dtype = _dtype(ctx, indices)
        zero, size = ctx.const(0, dtype), ctx.const(dim, dtype)
        indices = _call(ctx, "where", _call(ctx, "less", indices, zero), _call(ctx, "add", indices, size), indices)
    return _call(ctx, "take", data, indices, axis=axis)


# ----------------------------------------------------------------------------- padding, resizing


@converter("Pad", 1, 2, 11)
def _pad(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    ndim = len(shape)
    dtype = _dtype(ctx, inputs[0])
    mode = attrs.get("mode", "constant")
    if ctx.opset < 11:
        pads = list(attrs["pads"] if "pads" in attrs else attrs["paddings"])
        pad_val = ctx.const(attrs.get("value", 0.0), dtype)
        axes = list(range(ndim))
    else:
        value = _optional(inputs, 2)
        pad_val = ctx.const(0, dtype) if value is None else value
        if ctx.type_of(pad_val).shape:
            pad_val = _call(ctx, "reshape", pad_val, newshape=[])
        if ctx.value(inputs[1]) is None:
            return _dynamic_pad(ctx, inputs, pad_val, mode)
        pads = _ints(ctx, inputs[1], "the pads")
        axes = (list(range(ndim)) if _optional(inputs, 3) is None
                else _axes(ctx, _ints(ctx, inputs[3], "the axes"), ndim))
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"Pad needs {2 * len(axes)} pads, got {len(pads)}")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ctx.error(f"Pad mode \"{mode}\" is not supported (constant, edge, reflect, wrap are)")
    width = [[0, 0] for _ in range(ndim)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + len(axes)]]
    grow = [[max(b, 0), max(e, 0)] for b, e in width]
    out = inputs[0]
    if mode == "wrap":
        for a, (b, e) in enumerate(grow):
            if b or e:
                out = _wrap_axis(ctx, out, a, b, e)
    elif any(v for pair in grow for v in pair):
        out = _call(ctx, "nn.pad", out, pad_val, pad_width=grow, pad_mode=mode)
    if any(b < 0 or e < 0 for b, e in width):  # negative pads crop
        padded = ctx.shape_of(out)
        cut = [(a, -min(b, 0), padded[a] + min(e, 0)) for a, (b, e) in enumerate(width) if b < 0 or e < 0]
        if any(padded[a] is ANY for a, _, _ in cut):
            raise ctx.error("negative pads need static dimensions")
        out = _call(ctx, "strided_slice", out, begin=[b for _, b, _ in cut], end=[e for _, _, e in cut],
                       strides=[1] * len(cut), axes=[a for a, _, _ in cut])
    return out


def _dynamic_pad(ctx, inputs, pad_val, mode: str):
    """Pads known only at run time: `dyn.nn.pad` of the (begins, ends) vector read as (2, rank)
    and transposed, as TVM does; every axis, so no `axes` input, and no mode "wrap" (a
    concatenation of pieces whose sizes the pads give)."""
    data, pads = inputs[0], inputs[1]
    ndim = len(ctx.shape_of(data))
    if _optional(inputs, 3) is not None:
        raise ctx.error("Pad with `axes`: the pads must be known at import time (a constant, or computed "
                        "from static shapes)")
    if mode == "wrap":
        raise ctx.error('Pad mode "wrap": the pads must be known at import time (a constant, or computed '
                        'from static shapes)')
    if mode not in ("constant", "edge", "reflect"):
        raise ctx.error(f"Pad mode \"{mode}\" is not supported (constant, edge, reflect, wrap are)")
    if ctx.shape_of(pads) != (2 * ndim,):
        raise ctx.error(f"Pad needs {2 * ndim} pads, got shape {list(ctx.shape_of(pads))}")
    width = _call(ctx, "transpose", _call(ctx, "reshape", pads, newshape=(2, ndim)), axes=(1, 0))
    return _call(ctx, "dyn.nn.pad", data, width, pad_val, pad_mode=mode)


def _wrap_axis(ctx, x, axis: int, before: int, after: int):
    """Pad "wrap" along one axis: the input repeated cyclically, `before` elements ahead of
    it and `after` behind, as a concatenation of the contiguous runs (strided slices)."""
    dim = ctx.shape_of(x)[axis]
    if dim is ANY:
        raise ctx.error("Pad mode \"wrap\" needs static dimensions on the padded axes")
    if dim == 0:
        raise ctx.error("Pad mode \"wrap\" cannot pad an empty axis")
    index = np.arange(-before, dim + after) % dim
    cuts = np.flatnonzero(np.diff(index) != 1) + 1  # where a run restarts at 0
    parts = []
    for run in np.split(index, cuts):
        b, e = int(run[0]), int(run[-1]) + 1
        parts.append(x if (b, e) == (0, dim) else
                     _call(ctx, "strided_slice", x, begin=[b], end=[e], strides=[1], axes=[axis]))
    return parts[0] if len(parts) == 1 else _call(ctx, "concatenate", Tuple(parts), axis=axis)


_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")


def _source_coords(coord: str, n_in: int, n_out: int, scale: float, roi) -> np.ndarray:
    """ONNX's mapping of output positions 0..n_out-1 to (fractional) input positions."""
    y = np.arange(n_out, dtype="float64")
    width = scale * n_in  # the "real" output width, whole or not
    if coord == "align_corners":
        return np.zeros(n_out) if width == 1 else y * (n_in - 1) / (width - 1)
    if coord == "asymmetric":
        return y / scale
    if coord == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(n_out, (hi - lo) * (n_in - 1) / 2) if width == 1 else y * (hi - lo) * (n_in - 1) / (width - 1)
        return x + lo * (n_in - 1)
    if coord == "pytorch_half_pixel":
        return np.full(n_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    x = (y + 0.5) / scale - 0.5
    if coord == "half_pixel_symmetric":  # keeps the centre of the input on the centre of the output
        x = x + n_in / 2 * (1 - n_out / width)
    return x


def _cubic_kernel(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _resize_taps(mode: str, coord: str, nearest: str, n_in: int, n_out: int, scale: float, roi,
                 cubic_a: float, exclude_outside: bool, antialias: bool):
    """Per output position along one axis: the input indices it reads (n_out, k), their
    weights (n_out, k), and which positions are outside the roi (extrapolated) or None.

    ONNX resizes one axis at a time, each output a weighted sum of the nearest input
    samples (edge-clamped), so these constants give the exact reference result."""
    x = _source_coords(coord, n_in, n_out, scale, roi)
    outside = ((x < 0) | (x > n_in - 1)) if coord == "tf_crop_and_resize" else None
    base = np.floor(x)
    whole = x == base
    # onnx takes the neighbours left of x: a whole x is read as `x - 1` with ratio 1
    left = np.where(whole, base - 1, base).astype("int64")
    ratio = np.where(whole, 1.0, x - base)
    if mode == "nearest":
        if nearest == "round_prefer_floor":
            up = ratio > 0.5
        elif nearest == "round_prefer_ceil":
            up = ratio >= 0.5
        else:
            up = np.full(n_out, nearest == "ceil")
        up = up | whole
        idx = (left + up)[:, None]
        weights = np.ones((n_out, 1))
    else:
        s = min(scale, 1.0) if antialias else 1.0
        reach = 1.0 if mode == "linear" else 2.0  # the kernel's support, in output samples
        start = int(np.floor(-reach / s) + 1)
        offsets = np.arange(start, 2 - start)  # linear [0, 1], cubic [-1, 0, 1, 2] without antialias
        idx = left[:, None] + offsets[None, :]
        dist = (offsets[None, :] - ratio[:, None]) * s
        if mode == "linear":
            weights = np.clip(1 - np.abs(dist), 0, 1)
        else:
            weights = _cubic_kernel(dist, cubic_a)
        if antialias:
            weights = weights / weights.sum(axis=1, keepdims=True)
    if exclude_outside:
        weights = np.where((idx < 0) | (idx >= n_in), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), weights, outside


def _resize_axis(ctx, data, axis: int, idx: np.ndarray, weights: np.ndarray, outside, fill: float, dtype: str):
    ndim = len(ctx.shape_of(data))
    trail = (1,) * (ndim - axis - 1)
    if np.all((weights == 0) | (weights == 1)) and np.all(weights.sum(axis=1) == 1):  # one sample each
        pick = idx[np.arange(len(idx)), weights.argmax(axis=1)]
        out = _call(ctx, "take", data, ctx.const(pick, "int64"), axis=axis)
    else:
        taken = _call(ctx, "take", data, ctx.const(idx, "int64"), axis=axis)  # [..., n_out, k, ...]
        scaled = _call(ctx, "multiply", taken, ctx.const(weights.reshape(weights.shape + trail), dtype))
        out = _call(ctx, "sum", scaled, axis=[axis + 1], keepdims=False)
    if outside is not None and outside.any():
        out = _call(ctx, "where", ctx.const(outside.reshape(outside.shape + trail)), ctx.const(fill, dtype), out)
    return out


@converter("Resize", 10, 11, 13, 18, 19)
def _resize(ctx, inputs, attrs):
    data = inputs[0]
    shape = ctx.shape_of(data)
    ndim = len(shape)
    dtype = _dtype(ctx, data)
    mode = attrs.get("mode", "nearest")
    if mode not in _RESIZE_METHODS:
        raise ctx.error(f"Resize mode \"{mode}\" is not supported")
    antialias = bool(attrs.get("antialias", 0))
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"Resize keep_aspect_ratio_policy \"{policy}\" is not supported")
    axes = list(range(ndim)) if attrs.get("axes") is None else _axes(ctx, attrs["axes"], ndim)
    if ctx.opset < 11:
        roi, scales, sizes = None, inputs[1], None
        coord, rounding = "asymmetric", "floor"
    else:
        roi, scales, sizes = _optional(inputs, 1), _optional(inputs, 2), _optional(inputs, 3)
        coord = attrs.get("coordinate_transformation_mode", "half_pixel")
        rounding = attrs.get("nearest_mode", "round_prefer_floor")
    if coord not in _COORD_MODES:
        raise ctx.error(f"Resize coordinate_transformation_mode \"{coord}\" is not supported")
    if mode == "nearest" and rounding not in _NEAREST_MODES:
        raise ctx.error(f"Resize nearest_mode \"{rounding}\" is not supported")
    if mode == "nearest" and antialias:
        raise ctx.error("Resize antialias needs mode linear or cubic")
    if sizes is not None and ctx.value(sizes) is None:
        return _dynamic_resize(ctx, inputs, sizes, roi, attrs, coord, rounding, axes)
    scale_v = None if scales is None else np.asarray(ctx.required_value(scales, "the scales"), "float64").reshape(-1)
    size_v = None if sizes is None else _ints(ctx, sizes, "the sizes")
    dims = [shape[a] for a in axes]
    kept = scale_v is not None and scale_v.size == len(axes) and not size_v and coord != "tf_crop_and_resize"
    for d, i in zip(dims, range(len(axes))):
        if d is ANY and not (kept and scale_v[i] == 1):
            raise ctx.error(f"Resize needs static dimensions on the resized axes, got {list(shape)}")
    if size_v:
        if len(size_v) != len(axes):
            raise ctx.error(f"Resize sizes {size_v} must have {len(axes)} values")
        factors = [o / i if i else 1.0 for o, i in zip(size_v, dims)]
        out = list(size_v)
        if policy != "stretch":
            pick = min(factors) if policy == "not_larger" else max(factors)
            factors = [pick] * len(axes)
            out = [int(pick * d + 0.5) for d in dims]
    elif scale_v is not None and scale_v.size:
        if scale_v.size != len(axes):
            raise ctx.error(f"Resize scales {scale_v.tolist()} must have {len(axes)} values")
        if np.any(scale_v <= 0):
            raise ctx.error(f"Resize scales {scale_v.tolist()} must be positive")
        factors = [float(s) for s in scale_v]
        out = [d if d is ANY else int(math.floor(d * s)) for d, s in zip(dims, factors)]
    else:
        raise ctx.error("Resize needs scales or sizes")
    roi_v = [(0.0, 1.0)] * len(axes)
    if coord == "tf_crop_and_resize":
        r = np.asarray(ctx.required_value(roi, "the roi"), "float64").reshape(-1)
        if r.size != 2 * len(axes):
            raise ctx.error(f"Resize roi must have {2 * len(axes)} values")
        roi_v = [(float(r[i]), float(r[i + len(axes)])) for i in range(len(axes))]
    if mode != "nearest" and not dtype.startswith(("float", "bfloat")):
        raise ctx.error(f"Resize mode \"{mode}\" needs a floating-point input, got {dtype}")
    fill = float(attrs.get("extrapolation_value", 0.0))
    result = data
    for a, n_in, n_out, factor, r in zip(axes, dims, out, factors, roi_v):
        if n_in is ANY or n_out == n_in and factor == 1.0 and (coord != "tf_crop_and_resize" or r == (0.0, 1.0)):
            continue  # the identity along this axis
        if n_out == 0 or n_in == 0:
            raise ctx.error("Resize to or from an empty axis is not supported")
        idx, weights, outside = _resize_taps(mode, coord, rounding, n_in, n_out, factor, r,
                                             float(attrs.get("cubic_coeff_a", -0.75)),
                                             bool(attrs.get("exclude_outside", 0)), antialias)
        result = _resize_axis(ctx, result, a, idx, weights, outside, fill, dtype)
    return result


def _dynamic_resize(ctx, inputs, sizes, roi, attrs, coord: str, rounding: str, axes: list):
    """Sizes known only at run time: TVM's `dyn.image.resize2d` (NCHW) to the last two sizes; the
    other axes are taken to keep their size, as TVM takes them. TOPI maps output to input
    coordinates by the ratio of the sizes, which for given sizes is ONNX's scale. Run-time
    scales stay an import error: a fractional scaled size would make the ratio differ from ONNX's
    scale (TVM converts them so, and differs). So does nearest with asymmetric coordinates and a
    rounding other than floor: Relay's TOPI indexes a whole upscaling by integer division,
    flooring whatever the rounding."""
    data = inputs[0]
    ndim = len(ctx.shape_of(data))
    mode = attrs.get("mode", "nearest")
    why = None
    if ndim != 4 or axes not in (list(range(4)), [2, 3]):
        why = "an input that is not 4-D (NCHW) resized on its last two axes"
    elif attrs.get("antialias", 0) or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        why = "antialias or a keep_aspect_ratio_policy"
    elif coord == "half_pixel_symmetric":
        why = 'coordinate_transformation_mode "half_pixel_symmetric"'
    elif mode == "nearest" and coord == "asymmetric" and rounding != "floor":
        why = f'nearest_mode "{rounding}" and asymmetric coordinates'
    if why is not None:  # TOPI's resize2d (TVM's dyn.image.resize2d) differs from ONNX there
        raise ctx.error(f"Resize with {why}: the sizes must be known at import time (a constant, or computed "
                        "from static shapes)")
    dtype = _dtype(ctx, data)
    if mode != "nearest" and not dtype.startswith(("float", "bfloat")):
        raise ctx.error(f"Resize mode \"{mode}\" needs a floating-point input, got {dtype}")
    size = sizes
    if axes != [2, 3]:
        size = _call(ctx, "strided_slice", size, begin=[2], end=[4], strides=[1], axes=[0])
    roi_v = [0.0] * 4
    if coord == "tf_crop_and_resize":
        r = np.asarray(ctx.required_value(roi, "the roi"), "float64").reshape(-1)
        if r.size != 2 * len(axes):
            raise ctx.error(f"Resize roi must have {2 * len(axes)} values")
        k = len(axes)
        roi_v = [float(v) for v in (r[k - 2], r[k - 1], r[2 * k - 2], r[2 * k - 1])]
    return _call(ctx, "dyn.image.resize2d", data, size, ctx.const(roi_v, "float32"),
                 method=_RESIZE_METHODS[mode], coordinate_transformation_mode=coord, rounding_method=rounding,
                 cubic_alpha=float(attrs.get("cubic_coeff_a", -0.75)),
                 cubic_exclude=int(attrs.get("exclude_outside", 0)),
                 extrapolation_value=float(attrs.get("extrapolation_value", 0.0)))


# ----------------------------------------------------------------------------- depth <-> space


def _block_shuffle(ctx, x, split: list, perm: list, out: list):
    """reshape -> transpose -> reshape: TVM's nn.depth_to_space / nn.space_to_depth as the
    data movement they are (static shapes)."""
    y = _call(ctx, "reshape", x, newshape=split)
    return _call(ctx, "reshape", _call(ctx, "transpose", y, axes=perm), newshape=out)


@converter("DepthToSpace", 1, 11)
def _depth_to_space(ctx, inputs, attrs):
    n, c, h, w = _static(ctx, inputs[0], "DepthToSpace")
    b = int(attrs["blocksize"])
    if c % (b * b):
        raise ctx.error(f"DepthToSpace: {c} channels do not split into blocks of {b}x{b}")
    out = [n, c // (b * b), h * b, w * b]
    if attrs.get("mode", "DCR") == "CRD":
        return _block_shuffle(ctx, inputs[0], [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3], out)
    return _block_shuffle(ctx, inputs[0], [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2], out)


@converter("SpaceToDepth", 1, 13)
def _space_to_depth(ctx, inputs, attrs):
    n, c, h, w = _static(ctx, inputs[0], "SpaceToDepth")
    b = int(attrs["blocksize"])
    if h % b or w % b:
        raise ctx.error(f"SpaceToDepth: {h}x{w} does not split into blocks of {b}x{b}")
    # DCR (the default): the block offsets outermost in the channels; CRD (a newer `mode`): innermost
    perm = [0, 1, 3, 5, 2, 4] if attrs.get("mode", "DCR") == "CRD" else [0, 3, 5, 1, 2, 4]
    return _block_shuffle(ctx, inputs[0], [n, c, h // b, b, w // b, b], perm, [n, c * b * b, h // b, w // b])


@converter("BitCast", 26)
def _bit_cast(ctx, inputs, attrs):
    """The same bits as another type of the same width (Relay's reinterpret)."""
    return _call(ctx, "reinterpret", inputs[0], dtype=ctx.element_type(attrs.get("to")))
