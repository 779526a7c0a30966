"""Helpers shared by the legalizations (TVM's legalize_ops/common.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import tir_build as tb


def try_convert_to_scalar_const(expr):
    """A 0-d Relax constant as a TIR constant of its dtype; anything else unchanged."""
    if isinstance(expr, rx.Constant) and expr.data is not None and np.ndim(expr.data) == 0:
        return tb.const(np.asarray(expr.data).item(), str(expr.data.dtype))
    return expr


def is_relax_expr(e) -> bool:
    return isinstance(e, rx.Expr)


def call_topi_without_attr(te_func: Callable, primfunc_name: str | None = None) -> Callable:
    """A legalization passing the call's arguments to `te_func` (TVM's _call_topi_without_attr)."""
    name = primfunc_name or te_func.__name__
    return lambda bb, call: bb.call_te(te_func, *call.args, primfunc_name_hint=name)


def prim_value(e):
    """The TIR value of an `R.prim_value(...)` argument (clip's bounds)."""
    return e.value if isinstance(e, rx.PrimValue) else e


def const_int(e) -> int | None:
    if isinstance(e, int):
        return e
    if isinstance(e, (tir.IntImm, np.integer)):
        return int(getattr(e, "value", e))
    return None
