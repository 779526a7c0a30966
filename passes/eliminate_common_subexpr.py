"""eliminate-common-subexpr (cse): compute each operator call once.

TVM's EliminateCommonSubexpr (relay/transforms/eliminate_common_subexpr.cc), one
post-order rewrite over the dataflow graph; a node sees its operands already merged:

    %0 = nn.relu(%x);                        %0 = nn.relu(%x);
    %1 = nn.relu(%x);           ->           %1 = add(%0, 1f);
    %2 = add(%0, 1f);                        add(%1, %1)
    %3 = add(%1, 1f);
    add(%2, %3)

Two calls are the same when they call the same operator with structurally equal
attributes and, position by position, the same argument node, or equal scalar
constants (TVM's IsEqualScalar: same dtype and bits, so `1f` and `1f` written twice
match, `0f` and `-0f` do not), or tuples whose fields are so pairwise. The first call
seen stands for all later ones. Projections `%t.i` of the same tuple node and index
merge likewise. Calls with no arguments, calls of functions or globals and stateful
operators (`nn.dropout`) are never merged. The table is global to the function, as in
TVM: a call in a let value, an if branch or a nested function (primitive ones included)
can stand for a later one elsewhere; a let-bound variable is never replaced, so
`let %a = f(%x); let %b = f(%x);` keeps both variables bound to one shared call.

A table keyed by (operator, argument keys) finds the candidates in constant time, so a
100k-call chain is linear; within a key, attributes are compared in order of first
appearance, which is TVM's candidate order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from irtool.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem
from irtool.ir.module import IRModule
from irtool.ir.structural import attrs_equal
from irtool.ir.visitor import ExprMutator
from irtool.ops.registry import get
from irtool.transform import FunctionPass, register


def _scalar_key(e: Expr):
    """The node itself, or for a scalar constant its dtype and bits (IsEqualScalar)."""
    if type(e) is Constant and e.is_scalar:
        return ("scalar", str(e.data.dtype), e.data.tobytes())
    return e


def _arg_key(e: Expr):
    # TVM compares tuple arguments one level deep: fields by identity or as scalars.
    if type(e) is Tuple:
        return ("tuple", tuple(_scalar_key(f) for f in e.fields))
    return _scalar_key(e)


class _Eliminator(ExprMutator):
    def __init__(self, fskip: Callable[[Expr], bool] | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.calls: dict[tuple, list[Call]] = {}
        self.projections: dict[tuple, TupleGetItem] = {}

    def visit_call(self, e: Call) -> Expr:
        post = super().visit_call(e)
        op = post.op
        if not post.args or type(op) is not Op or get(op.name).stateful:
            return post
        if self.fskip is not None and self.fskip(post):
            return post
        candidates = self.calls.setdefault((op, *map(_arg_key, post.args)), [])
        for candidate in candidates:
            if attrs_equal(post.attrs, candidate.attrs):
                return candidate
        candidates.append(post)
        return post

    def visit_tuple_get_item(self, e: TupleGetItem) -> Expr:
        post = super().visit_tuple_get_item(e)
        if self.fskip is not None and self.fskip(post):
            return post
        return self.projections.setdefault((post.tuple_value, post.index), post)


def eliminate_common_subexpr(expr: Expr, fskip: Callable[[Expr], bool] | None = None) -> Expr:
    """TVM's `EliminateCommonSubexpr(expr, fskip)`: merge the common subexpressions of
    `expr`; `fskip(call_or_projection)` returning True keeps that node out of it."""
    return _Eliminator(fskip).visit(expr)


@register
@dataclass(frozen=True)
class EliminateCommonSubexpr(FunctionPass):
    name = "eliminate-common-subexpr"
    tvm_name = "EliminateCommonSubexpr"
    opt_level = 3
    required = ("infer-type",)
    summary = "Merge calls of one operator on the same arguments with equal attributes"

    def transform_function(self, fn: Function, mod: IRModule, ctx) -> Function:
        return _Eliminator(None).visit(fn)
