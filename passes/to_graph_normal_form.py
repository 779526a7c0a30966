"""to-graph-normal-form: replace let-bound variables by the expressions they name.

TVM's ToGraphNormalForm: `let %x = e; body` becomes `body` with every `%x` pointing at
the node `e` itself, so a variable used twice becomes a shared node of the dataflow
graph (printed once as `%n = e;`). Unused bindings disappear with their variable.
Function parameters and free variables are untouched. A let-bound function that calls
itself keeps its let (TVM wraps it the same way), since its name is how it recurses.

Let chains are rewritten with a loop (ExprMutator's pre/post let hooks), so a 100k-long
A-normal-form program converts without recursion.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir.expr import Function, Let
from irtool.ir.visitor import ExprMutator, free_vars
from irtool.transform import FunctionPass, register


class _ToGraph(ExprMutator):
    def visit_function(self, e: Function):
        return e if e.is_primitive else super().visit_function(e)
    def pre_visit_let(self, e: Let) -> None:
        if _recursive(e):
            self.visit(e.value)
        else:
            self.memo[e.var] = self.visit(e.value)

    def post_visit_let(self, e: Let, body):
        if _recursive(e):  # a function that calls itself needs its name: keep the let (TVM's WrapRec)
            value = self.visit(e.value)
            return e if value is e.value and body is e.body else Let(e.var, value, body, e.span)
        return body


def _recursive(let: Let) -> bool:
    return type(let.value) is Function and let.var in free_vars(let.value)


@register
@dataclass(frozen=True)
class ToGraphNormalForm(FunctionPass):
    name = "to-graph-normal-form"
    tvm_name = "ToGraphNormalForm"
    opt_level = 1
    summary = "Turn let bindings into shared dataflow nodes"

    def transform_function(self, fn, mod, ctx):
        if fn.is_primitive:  # fused kernels are left as they are
            return fn
        return _ToGraph().visit(fn)
