"""ONNX control flow: If as Relay's `if`; Loop and Scan unrolled at import, or recursive functions.

    If     a condition known at import picks its branch; otherwise both branches are
           converted (in a scope over the enclosing graph, as ONNX's subgraphs see it) and
           become `if (cond) { then } else { else }`, several outputs as tuples.
    Scan   a static sequence: the body is converted once per step on the slices of the
           scan inputs, the states threaded through, the per-step outputs stacked (both
           directions, any axes; opset 8's batch axis is unrolled too). A sequence of
           run-time length (a `?` dim) or longer than MAX_UNROLL: a recursive function.
    Loop   a trip count known at import and a condition that folds to a constant at every
           step: unrolled, scan outputs stacked on a new first axis. Otherwise (a trip
           count or a stop computed at run time, or more than MAX_UNROLL steps) a
           recursive function, as TVM v0.19 builds it (`_while`).

The recursive form is TVM's `while_loop`: a let-bound function that tests the condition
and either calls itself on the body's results or returns the loop-carried values, the
scan outputs concatenated so far riding along (`?` iterations). It runs in the
interpreter (tail calls reuse the frame) but has no Relax counterpart, so loops that can
be unrolled are: the result keeps static shapes and lowers to TIR on every backend, at
the price of graph size proportional to the trip count.
"""

from __future__ import annotations

import numpy as np

from ...analysis.type_infer import types_match
from ...ir.expr import Call, Function, If, Let, Tuple, TupleGetItem, Var
from ...ir.types import ANY, FuncType, TensorType, TupleType, type_equal
from ...text.relay_printer import format_type
from . import converter
from .tensor import _call, _static

MAX_UNROLL = 4096
MAX_WIDENING = 8  # rounds of widening a recursive loop's parameter types (each makes a dim `?`)


def _as_condition(ctx, cond):
    """A Relay `if` needs a 0-d bool."""
    if ctx.type_of(cond).dtype != "bool":
        cond = _call(ctx, "not_equal", cond, ctx.const(0, ctx.type_of(cond).dtype))
    if ctx.shape_of(cond):
        cond = _call(ctx, "reshape", cond, newshape=())
    return cond


def _packed(ctx, values: list):
    return values[0] if len(values) == 1 else ctx.typed(Tuple(values))


@converter("If", 1)
def _if(ctx, inputs, attrs):
    cond = inputs[0]
    known = ctx.value(cond)
    if known is not None:
        branch = attrs["then_branch"] if bool(np.asarray(known).reshape(-1)[0]) else attrs["else_branch"]
        return ctx.subgraph(branch, {})
    then_values = ctx.subgraph(attrs["then_branch"], {})
    else_values = ctx.subgraph(attrs["else_branch"], {})
    if len(then_values) != len(else_values):
        raise ctx.error(f"If branches give {len(then_values)} and {len(else_values)} outputs")
    then_values = [_loosened(ctx, t, e) for t, e in zip(then_values, else_values, strict=True)]
    else_values = [_loosened(ctx, e, t) for t, e in zip(then_values, else_values, strict=True)]
    out = ctx.typed(If(_as_condition(ctx, cond), _packed(ctx, then_values), _packed(ctx, else_values)))
    return out if len(then_values) > 1 else [out]


def _loosened(ctx, value, other):
    """`value` typed so that an `if` can join it with `other`: tensors of one rank and
    dtype whose static dims differ (ONNX lets branch outputs differ in shape) get a
    run-time shape (`dyn.reshape` to their own shape: `?` dims)."""
    a, b = ctx.type_of(value), ctx.type_of(other)
    if types_match(a, b):
        return value
    if isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype and len(a.shape) == len(b.shape):
        return _call(ctx, "dyn.reshape", value, _call(ctx, "shape_of", value, dtype="int64"))
    raise ctx.error(f"If branches give values of different types ({format_type(a)} and {format_type(b)}): "
                    "the condition must be known at import time")


def _step(ctx, x, axis: int, index: int):
    """x's slice `index` along `axis`, that axis removed."""
    part = _call(ctx, "strided_slice", x, begin=[index], end=[index + 1], strides=[1], axes=[axis])
    return _call(ctx, "squeeze", part, axis=[axis])


def _stack(ctx, values: list, axis: int):
    rank = len(ctx.shape_of(values[0])) + 1
    axis = axis + rank if axis < 0 else axis
    return _call(ctx, "concatenate", Tuple([_call(ctx, "expand_dims", v, axis=axis) for v in values]), axis=axis)


def _scan(ctx, body, states: list, scans: list, attrs) -> tuple[list, list]:
    """A Scan body (opset 9+ semantics): unrolled over a static sequence, else a
    recursive function over the run-time length."""
    m = len(scans)
    in_axes = [a % len(ctx.shape_of(x)) for x, a in zip(scans, attrs.get("scan_input_axes", [0] * m), strict=True)]
    in_dirs = list(attrs.get("scan_input_directions", [0] * m))
    steps = {ctx.shape_of(x)[a] for x, a in zip(scans, in_axes, strict=True)}
    static = [s for s in steps if s is not ANY]
    if len(static) > 1:
        raise ctx.error(f"Scan inputs have different sequence lengths {sorted(static)}")
    if ANY in steps or static[0] > MAX_UNROLL:
        states, collected = _recursive_scan(ctx, body, states, scans, in_axes, in_dirs)
    else:
        states, collected = _unrolled_scan(ctx, body, states, scans, in_axes, in_dirs, static[0])
    k = len(collected)
    out_axes = list(attrs.get("scan_output_axes", [0] * k))
    out_dirs = list(attrs.get("scan_output_directions", [0] * k))
    stacked = []
    for y, axis, backwards in zip(collected, out_axes, out_dirs, strict=True):
        if backwards:
            y = _call(ctx, "reverse", y, axis=0)
        rank = len(ctx.shape_of(y))
        axis = axis + rank if axis < 0 else axis
        if axis:
            order = list(range(1, rank))
            y = _call(ctx, "transpose", y, axes=order[:axis] + [0] + order[axis:])
        stacked.append(y)
    return states, stacked


def _unrolled_scan(ctx, body, states, scans, in_axes, in_dirs, length: int) -> tuple[list, list]:
    names = [i.name for i in body.input]
    collected: list[list] = []
    for t in range(length):
        slices = [_step(ctx, x, a, length - 1 - t if d else t) for x, a, d in zip(scans, in_axes, in_dirs, strict=True)]
        outs = ctx.subgraph(body, dict(zip(names, states + slices, strict=True)))
        states = outs[:len(states)]
        collected.append(outs[len(states):])
    k = len(body.output) - len(states)
    if not collected:
        raise ctx.error("a Scan over an empty sequence has outputs of unknown shape")
    return states, [_stack(ctx, [step[j] for step in collected], 0) for j in range(k)]


def _recursive_scan(ctx, body, states, scans, in_axes, in_dirs) -> tuple[list, list]:
    """The scan as a recursive function of the step number and the states; slice t of
    each input is `take(x, t)` (or `take(x, length - 1 - t)` backwards)."""
    names = [i.name for i in body.input]
    length = _call(ctx, "take", _call(ctx, "shape_of", scans[0], dtype="int64"), ctx.const(in_axes[0], "int64"))
    last = _call(ctx, "subtract", length, ctx.const(1, "int64"))

    def step(params):
        t, carried = params[0], params[1:]
        slices = [_call(ctx, "take", x, _call(ctx, "subtract", last, t) if d else t, axis=a)
                  for x, a, d in zip(scans, in_axes, in_dirs, strict=True)]
        outs = ctx.subgraph(body, dict(zip(names, [*carried, *slices], strict=True)))
        return (_call(ctx, "less", t, length), [_call(ctx, "add", t, ctx.const(1, "int64")), *outs[:len(carried)]],
                outs[len(carried):])

    final, collected = _while(ctx, [ctx.const(np.array(0, "int64")), *states], step)
    return final[1:], collected


def _num_scan_inputs(ctx, attrs, available: int) -> int:
    n = int(attrs["num_scan_inputs"])
    if not 1 <= n <= available:
        raise ctx.error(f"num_scan_inputs is {n}, but the Scan has {available} inputs to scan")
    return n


@converter("Scan", 9)
def _scan_9(ctx, inputs, attrs):
    body = attrs["body"]
    n_scan = _num_scan_inputs(ctx, attrs, len(inputs))
    states, scans = list(inputs[: len(inputs) - n_scan]), list(inputs[len(inputs) - n_scan:])
    final, stacked = _scan(ctx, body, states, scans, attrs)
    return final + stacked


@converter("Scan", 8)
def _scan_8(ctx, inputs, attrs):
    """Opset 8: every input has a batch axis first and the sequence axis second; each batch
    entry is scanned on its own (all of `sequence_lens` must be the full length)."""
    body = attrs["body"]
    n_scan = _num_scan_inputs(ctx, attrs, len(inputs) - 1)
    lens, rest = inputs[0], list(inputs[1:])
    states, scans = rest[: len(rest) - n_scan], rest[len(rest) - n_scan:]
    batch = _static(ctx, scans[0], "Scan")[0]
    if lens is not None:
        full = _static(ctx, scans[0], "Scan")[1]
        if not np.all(np.asarray(ctx.required_value(lens, "Scan's sequence_lens")) == full):
            raise ctx.error("Scan with sequence_lens shorter than the sequence is not supported")
    directions = attrs.get("directions", [0] * n_scan)
    per_batch = []
    for b in range(batch):
        final, stacked = _scan(ctx, body, [_step(ctx, s, 0, b) for s in states], [_step(ctx, x, 0, b) for x in scans],
                               {"scan_input_directions": directions})
        per_batch.append(final + stacked)
    return [_stack(ctx, [outs[j] for outs in per_batch], 0) for j in range(len(per_batch[0]))]


@converter("Loop", 1)
def _loop(ctx, inputs, attrs):
    body = attrs["body"]
    trip, cond = inputs[0], inputs[1] if len(inputs) > 1 else None
    states = list(inputs[2:])
    if trip is None and cond is None:
        raise ctx.error("a Loop with neither a trip count nor a condition never ends")
    unrolled = _unrolled_loop(ctx, body, trip, cond, states)
    return unrolled if unrolled is not None else _recursive_loop(ctx, body, trip, cond, states)


def _unrolled_loop(ctx, body, trip, cond, states: list) -> list | None:
    """The Loop unrolled, when its trip count and every condition it computes fold at
    import (and it runs at most MAX_UNROLL steps); None otherwise."""
    count = None
    if trip is not None:
        known = ctx.value(trip)
        if known is None:
            return None
        count = int(np.asarray(known).reshape(()))
        if count > MAX_UNROLL:
            return None
    running = True if cond is None else _known_bool(ctx, cond)
    if running is None:
        return None
    names = [i.name for i in body.input]
    collected: list[list] = []
    i = 0
    while running and (count is None or i < count):
        if i >= MAX_UNROLL:
            return None
        cond_in = ctx.const(np.array(True))
        outs = ctx.subgraph(body, dict(zip(names, [ctx.const(np.array(i, "int64")), cond_in] + states, strict=False)))
        running = _known_bool(ctx, outs[0])
        if running is None:
            return None
        states = outs[1: 1 + len(states)]
        collected.append(outs[1 + len(states):])
        i += 1
    n_scan = len(body.output) - 1 - len(states)
    if n_scan and not collected:
        return None  # no iteration: the scan outputs' element shapes come from the body's types
    return states + [_stack(ctx, [step[j] for step in collected], 0) for j in range(n_scan)]


def _known_bool(ctx, cond) -> bool | None:
    value = ctx.value(cond)
    return None if value is None else bool(np.asarray(value).reshape(-1)[0])


def _recursive_loop(ctx, body, trip, cond, states: list) -> list:
    """The Loop as TVM's `while_loop`: a let-bound recursive function of the iteration
    number, the condition, the loop-carried values and the scan outputs so far."""
    names = [i.name for i in body.input]
    n_states = len(states)
    limit = None if trip is None else _scalar(ctx, trip, "int64")

    def step(params):
        i, running, carried = params[0], params[1], params[2:]
        go = running if limit is None else _call(ctx, "less", i, limit)
        if trip is not None and cond is not None:
            go = _call(ctx, "logical_and", go, running)
        outs = ctx.subgraph(body, dict(zip(names, [i, running, *carried], strict=False)))
        if len(outs) < 1 + n_states:
            raise ctx.error(f"the Loop body gives {len(outs)} outputs, fewer than 1 + {n_states} loop-carried values")
        nxt = [_call(ctx, "add", i, ctx.const(1, "int64")), _as_condition(ctx, outs[0]), *outs[1:1 + n_states]]
        return go, nxt, outs[1 + n_states:]

    first = [ctx.const(np.array(0, "int64")), ctx.const(np.array(True)) if cond is None else _as_condition(ctx, cond)]
    final, scans = _while(ctx, first + states, step)
    return final[2:] + scans


def _scalar(ctx, x, dtype: str):
    """A 0-d `dtype` value of a one-element tensor (ONNX's M is a scalar or a [1])."""
    if ctx.shape_of(x):
        x = _call(ctx, "reshape", x, newshape=())
    return x if ctx.type_of(x).dtype == dtype else _call(ctx, "cast", x, dtype=dtype)


def _join(ctx, a, b, what: str):
    """The least general type of both `a` and `b`: dims that differ become `?`."""
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.fields) == len(b.fields):
        return TupleType([_join(ctx, x, y, what) for x, y in zip(a.fields, b.fields, strict=True)])
    if not (isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype
            and len(a.shape) == len(b.shape)):
        raise ctx.error(f"{what} changes type across iterations ({format_type(a)}, then {format_type(b)})")
    return TensorType([x if x == y and x is not ANY else ANY for x, y in zip(a.shape, b.shape, strict=True)], a.dtype)


def _while(ctx, initial: list, step) -> tuple[list, list]:
    """A loop as a let-bound recursive Relay function (TVM's `while_loop`):

        let %while_loop: fn (T...) -> (T..., S...) = fn (%v: T..., %scan: S...) {
          if (go) { %while_loop(next..., concatenate((%scan, expand_dims(y)))...) }
          else { (%v..., %scan...) }
        };
        %while_loop(initial..., empty...)

    `step(params)` converts the body once for parameters `params` (one per initial value)
    and gives (go, next values, per-iteration outputs y). The parameter types start as
    the initial values' and widen (differing dims become `?`) until the body gives back
    what it takes: a value that grows per iteration gets a `?` dim. Returns the final
    values and the stacked per-iteration outputs (iterations on a new first axis)."""
    types = [ctx.type_of(v) for v in initial]
    elems = None
    for _ in range(MAX_WIDENING):
        params = [_param(f"loop_value{k}", t) for k, t in enumerate(types)]
        go, nxt, ys = step(params)
        go = _as_condition(ctx, go)
        widened = [_join(ctx, t, ctx.type_of(v), "a loop-carried value") for t, v in zip(types, nxt, strict=True)]
        seen = [ctx.type_of(y) for y in ys]
        new_elems = seen if elems is None else [_join(ctx, e, s, "a scan output")
                                                for e, s in zip(elems, seen, strict=True)]
        if all(map(type_equal, widened, types)) and (elems is None or all(map(type_equal, new_elems, elems))):
            elems = new_elems
            break
        types, elems = widened, new_elems
    else:
        raise ctx.error("the loop's value types do not settle")
    for e in elems:
        if not isinstance(e, TensorType):
            raise ctx.error(f"a scan output must be a tensor, got {format_type(e)}")
    accs = [_param(f"loop_scan{k}", TensorType((ANY, *e.shape), e.dtype)) for k, e in enumerate(elems)]
    grown = [_append(ctx, acc, y, params[0]) for acc, y in zip(accs, ys, strict=True)]
    everything = params + accs
    result_type = TupleType([p.checked_type for p in everything])
    loop_var = Var("while_loop", FuncType([p.checked_type for p in everything], result_type))
    loop_var.checked_type = loop_var.type_annotation
    branch = If(go, ctx.typed(Call(loop_var, nxt + grown)), ctx.typed(Tuple(everything)))
    fn = Function(everything, ctx.typed(branch), result_type)
    fn.checked_type = loop_var.type_annotation
    empties = [ctx.const(np.zeros((0, *(0 if d is ANY else d for d in e.shape)), e.dtype)) for e in elems]
    out = ctx.typed(Let(loop_var, fn, ctx.typed(Call(loop_var, initial + empties))))
    values = [ctx.typed(TupleGetItem(out, k)) for k in range(len(everything))]
    return values[:len(params)], values[len(params):]


def _param(name: str, t) -> Var:
    var = Var(name, t)
    var.checked_type = t
    return var


def _append(ctx, acc, y, counter):
    """`acc` (the outputs so far, on axis 0) with `y` after them. When y's shape is not
    static, the empty start has 0 for the unknown sizes (as onnxruntime gives a loop that
    runs no iteration) and the first iteration starts afresh from y."""
    row = _call(ctx, "expand_dims", y, axis=0)
    grown = _call(ctx, "concatenate", Tuple([acc, row]), axis=0)
    if ANY not in ctx.shape_of(y):
        return grown
    first = _call(ctx, "equal", counter, ctx.const(0, ctx.type_of(counter).dtype))
    return ctx.typed(If(first, row, grown))
