"""ONNX sequence and optional ops as TVM v0.19 converts them: a sequence is a Relay tuple of
tensors, so its length and every position must be known at import; an optional is a tuple
of no or one element (Optional, OptionalHasElement: a constant, OptionalGetElement), and a
graph output that is an optional is its element.

- SequenceConstruct / SequenceEmpty build the tuple; SequenceInsert / SequenceErase build
  a new one (position: a constant, default the end, negative from the end);
  SequenceAt takes a field; SequenceLength is a constant int64 scalar;
- SplitToSequence: without `split`, pieces of size 1 along `axis` (squeezed when
  keepdims=0); a 1-D `split` gives those sizes; a scalar `split` gives pieces of that
  size, the last one smaller, as the ONNX spec says (TVM v0.19 reads the scalar as the
  number of pieces);
- ConcatFromSequence: `concatenate`, or `stack` with new_axis=1.

A graph input of a sequence or optional type has no length, so such models are not imported.
"""

from __future__ import annotations

from ...ir.expr import Tuple, TupleGetItem
from ...ir.types import ANY, TupleType
from . import converter


def _fields(ctx, seq) -> list:
    t = ctx.type_of(seq)
    if not isinstance(t, TupleType):
        raise ctx.error("expected a sequence")
    if isinstance(seq, Tuple):
        return list(seq.fields)
    return [ctx.typed(TupleGetItem(seq, i)) for i in range(len(t.fields))]


def _sequence(ctx, items) -> Tuple:
    return ctx.typed(Tuple(list(items)))


def _position(ctx, expr, length: int, default: int, inserting: bool = False) -> int:
    if expr is None:
        return default
    value = ctx.required_value(expr, "the sequence position")
    pos = int(value.reshape(-1)[0])
    limit = length + 1 if inserting else length
    if not -limit <= pos < limit:
        raise ctx.error(f"sequence position {pos} is out of range for a sequence of {length}")
    return pos + limit if pos < 0 else pos


@converter("SequenceConstruct", 11)
def _sequence_construct(ctx, inputs, attrs):
    return _sequence(ctx, inputs)


@converter("SequenceEmpty", 11)
def _sequence_empty(ctx, inputs, attrs):
    return _sequence(ctx, [])


@converter("SequenceAt", 11)
def _sequence_at(ctx, inputs, attrs):
    items = _fields(ctx, inputs[0])
    return items[_position(ctx, inputs[1], len(items), 0)]


@converter("SequenceInsert", 11)
def _sequence_insert(ctx, inputs, attrs):
    items = _fields(ctx, inputs[0])
    pos = _position(ctx, inputs[2] if len(inputs) > 2 else None, len(items), len(items), inserting=True)
    return _sequence(ctx, items[:pos] + [inputs[1]] + items[pos:])


@converter("SequenceErase", 11)
def _sequence_erase(ctx, inputs, attrs):
    items = _fields(ctx, inputs[0])
    if not items:
        raise ctx.error("SequenceErase of an empty sequence")
    pos = _position(ctx, inputs[1] if len(inputs) > 1 else None, len(items), len(items) - 1)
    return _sequence(ctx, items[:pos] + items[pos + 1:])


@converter("SequenceLength", 11)
def _sequence_length(ctx, inputs, attrs):
    return ctx.const(len(_fields(ctx, inputs[0])), "int64")


@converter("SplitToSequence", 11)
def _split_to_sequence(ctx, inputs, attrs):
    x = inputs[0]
    shape = ctx.shape_of(x)
    axis = int(attrs.get("axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape) or shape[axis] is ANY:
        raise ctx.error(f"SplitToSequence needs a static axis {attrs.get('axis', 0)} of shape {list(shape)}")
    n = shape[axis]
    split = inputs[1] if len(inputs) > 1 else None
    keepdims = True
    if split is None:
        sizes = [1] * n
        keepdims = bool(attrs.get("keepdims", 1))
    else:
        value = ctx.required_value(split, "SplitToSequence's split")
        if value.ndim == 0:
            chunk = int(value)
            if chunk <= 0:
                raise ctx.error(f"SplitToSequence split {chunk} must be positive")
            sizes = [min(chunk, n - start) for start in range(0, n, chunk)]
        else:
            sizes = [int(s) for s in value.reshape(-1)]
            if sum(sizes) != n or min(sizes, default=0) < 0:
                raise ctx.error(f"SplitToSequence split {sizes} does not add up to {n}")
    pieces, start = [], 0
    for size in sizes:
        piece = ctx.call("strided_slice", x, begin=(start,), end=(start + size,), strides=(1,), axes=(axis,))
        pieces.append(piece if keepdims else ctx.call("squeeze", piece, axis=(axis,)))
        start += size
    return _sequence(ctx, pieces)


@converter("ConcatFromSequence", 11)
def _concat_from_sequence(ctx, inputs, attrs):
    items = _fields(ctx, inputs[0])
    if not items:
        raise ctx.error("ConcatFromSequence of an empty sequence")
    rank = len(ctx.shape_of(items[0]))
    axis = int(attrs.get("axis"))
    if int(attrs.get("new_axis", 0)):
        axis = axis + rank + 1 if axis < 0 else axis
        return ctx.call("stack", _sequence(ctx, items), axis=axis)
    axis = axis + rank if axis < 0 else axis
    return ctx.call("concatenate", _sequence(ctx, items), axis=axis)


# ----------------------------------------------------------------------------- optionals
# An optional is a tuple of no or one element (TVM v0.19 makes Optional a SequenceConstruct);
# the context remembers which tuples are optionals, so a one-element sequence is not read as one.


def is_optional(ctx, expr) -> bool:
    return id(expr) in ctx.optionals


def _optional(ctx, items) -> Tuple:
    opt = _sequence(ctx, items)
    ctx.optionals[id(opt)] = opt  # the value keeps its id unique while it is remembered
    return opt


@converter("Optional", 15)
def _optional_op(ctx, inputs, attrs):
    return _optional(ctx, [inputs[0]] if inputs and inputs[0] is not None else [])


@converter("OptionalHasElement", 15, 18)
def _optional_has_element(ctx, inputs, attrs):
    value = inputs[0] if inputs else None
    present = value is not None and (not is_optional(ctx, value) or len(_fields(ctx, value)) == 1)
    return ctx.const(present, "bool")


@converter("OptionalGetElement", 15, 18)
def _optional_get_element(ctx, inputs, attrs):
    value = inputs[0]
    if not is_optional(ctx, value):  # opset 18: a tensor or sequence is its own element
        return value
    items = _fields(ctx, value)
    if not items:
        raise ctx.error("OptionalGetElement of an empty optional")
    return items[0]
