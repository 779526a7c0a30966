"""dead-code-elimination: drop let bindings whose variable is never used.

TVM's DeadCodeElimination (relay/transforms/dead_code.cc), on the let-bound form:

    let %a = exp(%x);       used by %c: kept
    let %b = log(%a);       never used: dropped
    let %c = add(%a, 1f);   used once: with inline-once, substituted into its use
    negative(%c)

Uses are counted from the body outwards: each Let chain is walked innermost-first and
the uses inside a value are counted only when its variable is live, so a binding used
only by dead bindings dies in the same pass. A use inside a nested function counts as
many (the function may run many times), so inline-once never moves work into a loop
body or closure. In graph form there is nothing to remove: a node that nothing uses is
not part of the program (the parser already drops unused `%n = ...;` bindings).

Every Relay operator here is pure (no op of the registry has side effects), so an
unused binding can always be dropped.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from irtool.ir.expr import Function, Let, Var
from irtool.ir.visitor import ExprMutator, ExprVisitor
from irtool.transform import FunctionPass, register


class _UseCounter(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.uses: dict[Var, int] = defaultdict(int)
        self.depth = 0
        self.bound_at: dict[Var, int] = {}

    def visit(self, e):
        if type(e) is Var:
            self.uses[e] += 1 if self.depth <= self.bound_at.get(e, self.depth) else 2
            return None
        return super().visit(e)

    def visit_function(self, e: Function) -> None:
        for p in e.params:
            self.bound_at[p] = self.depth + 1
        self.depth += 1
        self.visit(e.body)
        self.depth -= 1

    def visit_let(self, e: Let) -> None:
        chain = []
        while type(e) is Let and e not in self.memo:
            chain.append(e)
            self.bound_at[e.var] = self.depth
            e = e.body
        self.visit(e)
        for let in reversed(chain):
            self.memo[let] = None
            if self.uses[let.var] > 0:
                self.visit(let.value)


class _Eliminator(ExprMutator):
    def __init__(self, uses: dict[Var, int], inline_once: bool) -> None:
        super().__init__()
        self.uses = uses
        self.inline_once = inline_once

    def visit_function(self, e: Function):
        return e if e.is_primitive else super().visit_function(e)

    def _fate(self, var: Var) -> str:
        n = self.uses.get(var, 0)
        if n == 0:
            return "drop"
        return "inline" if self.inline_once and n == 1 else "keep"

    def pre_visit_let(self, e: Let) -> None:
        fate = self._fate(e.var)
        if fate == "inline":
            self.memo[e.var] = self.visit(e.value)  # later uses of the var read its value
        elif fate == "keep":
            self.visit(e.value)

    def post_visit_let(self, e: Let, body):
        if self._fate(e.var) != "keep":
            return body
        value = self.visit(e.value)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, e.span)


@register
@dataclass(frozen=True)
class DeadCodeElimination(FunctionPass):
    name = "dead-code-elimination"
    tvm_name = "DeadCodeElimination"
    opt_level = 1
    tvm_module_pass = True  # TVM registers DeadCodeElimination as a module pass
    summary = "Remove unused let bindings (optionally inline bindings used once)"

    inline_once: bool = False

    def transform_function(self, fn, mod, ctx):
        if fn.is_primitive:  # a fused kernel is left as it is (TVM skips primitive functions)
            return fn
        counter = _UseCounter()
        counter.visit(fn)
        return _Eliminator(counter.uses, self.inline_once).visit(fn)
