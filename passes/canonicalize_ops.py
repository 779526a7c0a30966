"""canonicalize-ops: rewrite nn.bias_add as a broadcast add (TVM's CanonicalizeOps).

    nn.bias_add(x, b, axis=a)  ->  add(x, expand_dims(b, axis=1, num_newaxis=ndim - a - 1))

with a negative `a` counted from the end, and no expand_dims when the bias already lies
along the last axis (num_newaxis would be 0). Later passes then see one elementwise
operator family instead of a special case (relay/transforms/canonicalize_ops.cc).
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir.expr import Call, Expr, Op
from irtool.ir.visitor import ExprMutator
from irtool.ops.registry import make_call
from irtool.transform import FunctionPass, register

from ._pattern_utils import expand_bias_to_match_axis

_BIAS_ADD = Op.get("nn.bias_add")


class _BiasAddSimplifier(ExprMutator):
    def visit_call(self, e: Call) -> Expr:
        post = super().visit_call(e)
        if e.op is not _BIAS_ADD:
            return post
        ndim = len(e.args[0].checked_type.shape)
        axis = post.attrs["axis"]
        if axis < 0:
            axis += ndim
        return make_call("add", post.args[0], expand_bias_to_match_axis(post.args[1], ndim, [axis]))


@register
@dataclass(frozen=True)
class CanonicalizeOps(FunctionPass):
    name = "canonicalize-ops"
    tvm_name = "CanonicalizeOps"
    opt_level = 3
    required = ("infer-type",)
    summary = "Rewrite nn.bias_add as add with an expand_dims'd bias"

    def transform_function(self, fn, mod, ctx):
        return _BiasAddSimplifier().visit(fn)
