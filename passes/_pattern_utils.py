"""Helpers shared by the rewriting passes (TVM's transforms/pattern_utils.h)."""

from __future__ import annotations

from irtool.ir.expr import Constant, Expr
from irtool.ops.common import np
from irtool.ops.registry import make_call


def const_scalar(dtype: str, value) -> Constant:
    """TVM's MakeConstantScalar: a rank-0 constant of `dtype` (C++ conversion rules:
    floats truncate towards zero into integers, anything non-zero is a true bool)."""
    return Constant(np.asarray(np.asarray(value).astype(dtype)))


def expand_bias_to_match_axis(bias: Expr, target_ndim: int, axes: list[int]) -> Expr:
    """TVM's ExpandBiasToMatchAxis: expand_dims so that a vector laid along `axes` (sorted,
    non-negative) of a `target_ndim`-D tensor broadcasts against it."""
    for i in range(len(axes), 0, -1):
        if i == len(axes):
            pad = target_ndim - axes[i - 1] - 1
        else:
            pad = axes[i] - axes[i - 1]
        if pad > 0:
            bias = make_call("expand_dims", bias, axis=i, num_newaxis=pad)
    return bias
