"""ONNX ops that pick or place elements by position: Trilu, EyeLike, Compress,
ReverseSequence. Where TVM v0.19 builds a dedicated op (trilu, eye_like, argwhere + take,
reverse_sequence), these are composed from constants computed at import and `where`,
`take`, `gather`: the same values, static shapes."""

from __future__ import annotations

import numpy as np

from . import converter
from .tensor import _call, _static


@converter("Trilu", 14)
def _trilu(ctx, inputs, attrs):
    """The upper (or lower) triangle of the last two axes from diagonal k, zeros elsewhere:
    `where` with a constant mask (TVM builds its `trilu` op; same values). k must be known."""
    x = inputs[0]
    k = 0 if len(inputs) < 2 or inputs[1] is None else int(ctx.required_value(inputs[1], "Trilu's k"))
    shape = _static(ctx, inputs[0], "Trilu")
    if len(shape) < 2:
        raise ctx.error(f"Trilu needs a tensor of rank 2 or more, got rank {len(shape)}")
    rows, cols = shape[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if attrs.get("upper", 1) else np.tril(np.ones((rows, cols), bool), k)
    return ctx.call("where", ctx.const(keep, "bool"), x, ctx.call("zeros_like", x))

@converter("Compress", 9, 11)
def _compress(ctx, inputs, attrs):
    """The slices where `condition` is true, along `axis` (of the flattened input without
    one): `take` at the true positions. TVM finds them at run time with argwhere; here the
    condition must be known at import, so the result keeps a static shape."""
    x = inputs[0]
    condition = np.asarray(ctx.required_value(inputs[1], "Compress's condition")).astype(bool).reshape(-1)
    axis = attrs.get("axis")
    if axis is None:
        x, axis = _call(ctx, "reshape", x, newshape=[-1]), 0
    size = _static(ctx, x, "Compress")[int(axis)]
    if condition.size > size:
        raise ctx.error(f"Compress's condition has {condition.size} elements, the axis only {size}")
    positions = np.flatnonzero(condition).astype("int64")
    return _call(ctx, "take", x, ctx.const(positions, "int64"), axis=int(axis))


@converter("EyeLike", 9)
def _eye_like(ctx, inputs, attrs):
    """Ones on diagonal k of a 2-D shape like the input's: a constant (only the shape matters)."""
    rows, cols = _static(ctx, inputs[0], "EyeLike")
    dtype = ctx.element_type(attrs["dtype"]) if "dtype" in attrs else ctx.type_of(inputs[0]).dtype
    return ctx.const(np.eye(rows, cols, int(attrs.get("k", 0)), dtype=dtype), dtype)

@converter("ReverseSequence", 10)
def _reverse_sequence(ctx, inputs, attrs):
    """Per batch entry b, the first sequence_lens[b] steps along time_axis reversed: a gather
    at index len[b] - 1 - t for t < len[b], else t (TVM builds reverse_sequence)."""
    x, lens = inputs[0], inputs[1]
    shape = _static(ctx, x, "ReverseSequence")
    time_axis, batch_axis = int(attrs.get("time_axis", 0)), int(attrs.get("batch_axis", 1))
    if sorted((time_axis, batch_axis)) != [0, 1]:
        raise ctx.error("ReverseSequence needs time_axis and batch_axis to be 0 and 1")
    steps = shape[time_axis]
    t = ctx.const(np.arange(steps, dtype="int64").reshape((-1, 1) if time_axis == 0 else (1, -1)), "int64")
    lens = _call(ctx, "reshape", _call(ctx, "cast", lens, dtype="int64"),
                 newshape=(1, -1) if time_axis == 0 else (-1, 1))
    reversed_t = _call(ctx, "subtract", _call(ctx, "subtract", lens, ctx.const(1, "int64")), t)
    index = _call(ctx, "where", _call(ctx, "less", t, lens), reversed_t, t)  # (time, batch) or (batch, time)
    index = _call(ctx, "reshape", index, newshape=shape[:2] + (1,) * (len(shape) - 2))
    return _call(ctx, "gather", x, _call(ctx, "broadcast_to", index, shape=shape), axis=time_axis)
