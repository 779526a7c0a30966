"""The bounds TVM's IntSet evaluation gives an index that holds a call (a value it cannot
follow): only clamps bound it (codegen/te.py's read and write regions use them)."""

from __future__ import annotations

import builtins

from irtool.ir import tir

from . import tir_build as tb
from .simplify import simplify


def _has_call(e) -> bool:
    """Whether TVM's IntSet evaluation gives up on `e`: a call, or a load of a float buffer
    (roi_align's batch index `T.Cast("int64", rois[i, 0])`)."""
    if isinstance(e, tir.Call):
        return True
    if isinstance(e, tir.BufferLoad):
        return not (e.dtype.startswith("int") or e.dtype.startswith("uint"))
    if isinstance(e, tir.Node):
        return any(_has_call(getattr(e, f)) for f in type(e).fields)
    return isinstance(e, tuple) and any(_has_call(x) for x in e)


def _call_bounds(e) -> tuple:
    """Bounds (lo, hi; None: unbounded) of an index holding a call, as TVM's IntSet evaluation
    finds them: only clamps bound it, by constants (`T.max(T.min(call, 3), 0)`) or by a
    symbolic size (`T.max(T.min(call, d - 1), 0)`: hi is the expression `max(d - 1, 0)`)."""
    if isinstance(e, tir.IntImm):
        return e.value, e.value
    if isinstance(e, tir.Cast):
        return _call_bounds(e.value)
    if isinstance(e, tir.BinOp) and e.op in ("min", "max"):
        if isinstance(e.b, tir.IntImm):
            c = e.b.value
        elif not _has_call(e.b) and not isinstance(e.b, tir.BufferLoad):
            c = e.b
        else:
            return None, None
        lo, hi = _call_bounds(e.a)
        pick = builtins.min if e.op == "min" else builtins.max

        def both(a, b):  # the clamp of a bound: folded when both are numbers
            if isinstance(a, int) and isinstance(b, int):
                return pick(a, b)
            dtype = next(v.dtype for v in (a, b) if isinstance(v, tir.PrimExpr))
            return tir.BinOp(e.op, *(tb.const(v, dtype) if isinstance(v, int) else v for v in (a, b)))
        if e.op == "min":
            return (None if lo is None else both(lo, c)), (c if hi is None else both(hi, c))
        return (c if lo is None else both(lo, c)), (None if hi is None else both(hi, c))
    return None, None


def _symbolic_call_range(lo: list, hi: list, extent) -> tir.Range | None:
    """The range [lo, hi] of one clamped index whose upper bound is symbolic: TVM's extent
    `hi - lo + 1` simplified, `max(d - 1, 0) + 1` to `max(d, 1)` (its rewrite rule
    `max(x + c1, c2) + c3 -> max(x + (c1 + c3), c2 + c3)`)."""
    from irtool.ir.node_structural import node_equal

    from .te import _split_offset  # te imports this module

    if any(not (a is lo[0] or node_equal(a, lo[0])) for a in lo) or \
            any(not (b is hi[0] or node_equal(b, hi[0])) for b in hi) or lo[0] != 0:
        return None
    top = hi[0]
    if isinstance(top, tir.BinOp) and top.op in ("max", "min") and isinstance(top.b, tir.IntImm):
        base, c1 = _split_offset(top.a)
        if base is not None:
            inner = base if c1 + 1 == 0 else tb.add(base, tb.const(c1 + 1, top.dtype))
            return tir.Range(tb.const(0, extent.dtype), tir.BinOp(top.op, inner, tb.const(top.b.value + 1, top.dtype)))
    return tir.Range(tb.const(0, extent.dtype), simplify(tb.add(top, tb.const(1, top.dtype))))
