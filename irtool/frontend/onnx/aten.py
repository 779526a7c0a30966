"""PyTorch's `ATen` fallback op (domain `org.pytorch.aten`, or the default one as older
exporters wrote it): the ATen operators TVM v0.19 converts, picked by the `operator`
attribute.

- embedding_bag(weight, indices, offsets, ...; attribute mode 0 sum / 1 mean / 2 max): the
  embedding rows of each bag reduced. With constant offsets the bags are exactly those
  (`indices[offsets[i]:offsets[i + 1]]`, the last to the end, an empty bag 0); otherwise all
  bags must be equally long, which TVM v0.19 assumes always. Outputs 2-4 (offset2bag, bag
  sizes, max indices) are not computed; TVM fills them with a constant 0, here asking for
  them is a diagnostic;
- arange(start, end, step): int64 `arange`;
- reshape(x, shape): Reshape;
- index_put(x, indices..., values, accumulate): `scatter_nd` of the values at the index
  tuples (added when accumulate), the indices broadcast against each other as PyTorch
  does;
- size(x, dim): dimension `dim` (a constant) of x, as an int64 scalar (TVM v0.19 returns
  the last dimension whatever `dim` is).
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Tuple
from . import converter


def _embedding_bag(ctx, inputs, attrs):
    if any(name for name in ctx.node.output[1:]):
        raise ctx.error("ATen embedding_bag: only the first output (the bags) is supported")
    weight, indices, offsets = inputs[:3]
    mode = int(attrs.get("mode", 1))
    reduce = {0: "sum", 1: "mean", 2: "max"}.get(mode)
    if reduce is None:
        raise ctx.error(f"ATen embedding_bag mode {mode} is not supported")
    indices = ctx.call("cast", indices, dtype="int64")
    starts = ctx.value(offsets)
    if starts is None:  # TVM's reading: equally long bags
        bags = ctx.call("reshape", indices, newshape=(ctx.shape_of(offsets)[0], -1))
        return ctx.call(reduce, ctx.call("take", weight, bags, axis=0), axis=(1,))
    starts = [int(s) for s in starts.reshape(-1)]
    n = ctx.shape_of(indices)[0]
    if attrs.get("include_last_offset", 0):
        bounds = list(zip(starts[:-1], starts[1:]))
    else:
        bounds = list(zip(starts, starts[1:] + [n]))
    rows = []
    for begin, end in bounds:
        if end <= begin:
            rows.append(ctx.const(np.zeros(ctx.shape_of(weight)[1:], ctx.type_of(weight).dtype)))
            continue
        bag = ctx.call("strided_slice", indices, begin=(begin,), end=(end,), strides=(1,), axes=(0,))
        rows.append(ctx.call(reduce, ctx.call("take", weight, bag, axis=0), axis=(0,)))
    return ctx.call("stack", ctx.typed(Tuple(rows)), axis=0)


def _index_put(ctx, inputs, attrs):
    x, index_list, values, accumulate = inputs[0], inputs[1:-2], inputs[-2], inputs[-1]
    acc = ctx.required_value(accumulate, "index_put's accumulate") if accumulate is not None else 0
    shapes = [ctx.shape_of(i) for i in index_list]
    common = np.broadcast_shapes(*shapes)
    tuples = [ctx.call("broadcast_to", ctx.call("cast", i, dtype="int64"), shape=tuple(common)) for i in index_list]
    stacked = ctx.call("stack", ctx.typed(Tuple(tuples)), axis=0)
    target = tuple(common) + tuple(ctx.shape_of(x)[len(index_list):])
    values = ctx.call("broadcast_to", values, shape=target)
    return ctx.call("scatter_nd", x, stacked, values, mode="add" if bool(np.asarray(acc)) else "update")


def _size(ctx, inputs, attrs):
    shape = ctx.shape_of(inputs[0])
    dim = int(ctx.required_value(inputs[1], "size's dim")) if len(inputs) > 1 else None
    if dim is None:
        return ctx.call("shape_of", inputs[0], dtype="int64")
    return ctx.call("take", ctx.call("shape_of", inputs[0], dtype="int64"), ctx.const(dim % len(shape), "int64"))


def _arange(ctx, inputs, attrs):
    from .tensor import _range

    return _range(ctx, [ctx.call("cast", i, dtype="int64") for i in inputs[:3]], {})


def _reshape(ctx, inputs, attrs):
    return ctx.reshape_to(inputs[0], ctx.call("cast", inputs[1], dtype="int64"))


_OPERATORS = {"embedding_bag": _embedding_bag, "index_put": _index_put, "size": _size, "arange": _arange,
              "reshape": _reshape}


def _aten(ctx, inputs, attrs):
    operator = attrs.get("operator")
    convert = _OPERATORS.get(operator)
    if convert is None:
        raise ctx.error(f"ATen operator {operator!r} is not supported (only {', '.join(sorted(_OPERATORS))})")
    return convert(ctx, inputs, attrs)


converter("ATen", 1)(_aten)
converter("ATen", 1, domain="org.pytorch.aten")(_aten)
