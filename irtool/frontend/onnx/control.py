"""ONNX control flow: If as Relay's `if`; Loop and Scan unrolled at import.

    If     a condition known at import picks its branch; otherwise both branches are
           converted (in a scope over the enclosing graph, as ONNX's subgraphs see it) and
           become `if (cond) { then } else { else }`, several outputs as tuples.
    Scan   the body is converted once per step on the slices of the scan inputs, the
           states threaded through, the per-step outputs stacked (both directions, any
           axes; opset 8's batch axis is unrolled too). The sequence length must be static.
    Loop   unrolled for a trip count known at import; the condition the body computes must
           fold to a constant at every step (a loop that stops on a value computed at run
           time is a diagnostic). Scan outputs are stacked on a new first axis.

TVM v0.19 builds Loop and Scan as recursive Relay functions, whose loop-carried tensors
get `?` dims; unrolled, the result keeps static shapes and runs on every backend here,
at the price of graph size proportional to the trip count (capped at MAX_UNROLL steps).
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import If, Tuple
from ...ir.types import type_equal
from . import converter
from .tensor import _call, _static

MAX_UNROLL = 4096


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
    for t, e in zip(then_values, else_values, strict=True):
        if not type_equal(ctx.type_of(t), ctx.type_of(e)):
            raise ctx.error(f"If branches give values of different types ({ctx.type_of(t)} and {ctx.type_of(e)}): "
                            "the condition must be known at import time")
    out = ctx.typed(If(_as_condition(ctx, cond), _packed(ctx, then_values), _packed(ctx, else_values)))
    return out if len(then_values) > 1 else [out]


def _step(ctx, x, axis: int, index: int):
    """x's slice `index` along `axis`, that axis removed."""
    part = _call(ctx, "strided_slice", x, begin=[index], end=[index + 1], strides=[1], axes=[axis])
    return _call(ctx, "squeeze", part, axis=[axis])


def _stack(ctx, values: list, axis: int):
    rank = len(ctx.shape_of(values[0])) + 1
    axis = axis + rank if axis < 0 else axis
    return _call(ctx, "concatenate", Tuple([_call(ctx, "expand_dims", v, axis=axis) for v in values]), axis=axis)


def _scan(ctx, body, states: list, scans: list, attrs) -> tuple[list, list]:
    """Unroll a Scan body (opset 9+ semantics) over static sequences."""
    m = len(scans)
    in_axes = list(attrs.get("scan_input_axes", [0] * m))
    in_dirs = list(attrs.get("scan_input_directions", [0] * m))
    steps = {_static(ctx, x, "Scan")[a % len(ctx.shape_of(x))] for x, a in zip(scans, in_axes, strict=True)}
    if len(steps) != 1:
        raise ctx.error(f"Scan inputs have different sequence lengths {sorted(steps)}")
    (length,) = steps
    if length > MAX_UNROLL:
        raise ctx.error(f"Scan of {length} steps is longer than irtool unrolls ({MAX_UNROLL})")
    names = [i.name for i in body.input]
    collected: list[list] = []
    for t in range(length):
        slices = [_step(ctx, x, a % len(ctx.shape_of(x)), length - 1 - t if d else t)
                  for x, a, d in zip(scans, in_axes, in_dirs, strict=True)]
        outs = ctx.subgraph(body, dict(zip(names, states + slices, strict=True)))
        states = outs[:len(states)]
        collected.append(outs[len(states):])
    k = len(collected[0]) if collected else 0
    out_axes = list(attrs.get("scan_output_axes", [0] * k))
    out_dirs = list(attrs.get("scan_output_directions", [0] * k))
    stacked = []
    for j in range(k):
        values = [step[j] for step in collected]
        stacked.append(_stack(ctx, values[::-1] if out_dirs[j] else values, out_axes[j]))
    return states, stacked


@converter("Scan", 9)
def _scan_9(ctx, inputs, attrs):
    body = attrs["body"]
    n_scan = int(attrs["num_scan_inputs"])
    states, scans = list(inputs[: len(inputs) - n_scan]), list(inputs[len(inputs) - n_scan:])
    final, stacked = _scan(ctx, body, states, scans, attrs)
    return final + stacked


@converter("Scan", 8)
def _scan_8(ctx, inputs, attrs):
    """Opset 8: every input has a batch axis first and the sequence axis second; each batch
    entry is scanned on its own (all of `sequence_lens` must be the full length)."""
    body = attrs["body"]
    n_scan = int(attrs["num_scan_inputs"])
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
    count = None if trip is None else int(np.asarray(ctx.required_value(trip, "Loop's trip count")).reshape(()))
    running = True if cond is None else _known_bool(ctx, cond)
    names = [i.name for i in body.input]
    collected: list[list] = []
    i = 0
    while running and (count is None or i < count):
        if i >= MAX_UNROLL:
            raise ctx.error(f"Loop runs longer than irtool unrolls ({MAX_UNROLL} steps)")
        cond_in = ctx.const(np.array(True))
        outs = ctx.subgraph(body, dict(zip(names, [ctx.const(np.array(i, "int64")), cond_in] + states, strict=False)))
        running = _known_bool(ctx, outs[0])
        states = outs[1: 1 + len(states)]
        collected.append(outs[1 + len(states):])
        i += 1
    n_scan = len(body.output) - 1 - len(states)
    if n_scan and not collected:
        raise ctx.error("a Loop that runs no iteration has scan outputs of unknown shape")
    return states + [_stack(ctx, [step[j] for step in collected], 0) for j in range(n_scan)]


def _known_bool(ctx, cond) -> bool:
    value = ctx.value(cond)
    if value is None:
        raise ctx.error("Loop's condition must be known at import time (a loop that stops on a value computed "
                        "at run time is not supported)")
    return bool(np.asarray(value).reshape(-1)[0])
