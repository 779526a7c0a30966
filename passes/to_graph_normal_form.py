"""to-graph-normal-form: replace let-bound variables by the expressions they name.

TVM's ToGraphNormalForm: `let %x = e; body` becomes `body` with every `%x` pointing at
the node `e` itself, so a variable used twice becomes a shared node of the dataflow
graph (printed once as `%n = e;`). Unused bindings disappear with their variable.
Function parameters and free variables are untouched.

Let chains are rewritten with a loop (ExprMutator's pre/post let hooks), so a 100k-long
A-normal-form program converts without recursion.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir.expr import Let
from irtool.ir.visitor import ExprMutator
from irtool.transform import FunctionPass, register


class _ToGraph(ExprMutator):
    def pre_visit_let(self, e: Let) -> None:
        self.memo[e.var] = self.visit(e.value)

    def post_visit_let(self, e: Let, body):
        return body


@register
@dataclass(frozen=True)
class ToGraphNormalForm(FunctionPass):
    name = "to-graph-normal-form"
    tvm_name = "ToGraphNormalForm"
    opt_level = 1
    summary = "Turn let bindings into shared dataflow nodes"

    def transform_function(self, fn, mod, ctx):
        return _ToGraph().visit(fn)
