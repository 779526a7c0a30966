"""dead-code-elimination: drop bindings whose variable is never used.

Relay — TVM's DeadCodeElimination (relay/transforms/dead_code.cc), on the let-bound form:

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

Relax — TVM 0.27's relax.transform.DeadCodeElimination(entry_functions), module level:

    S1  drop the functions (Relax and TIR) not reachable from the entry functions:
        the given ones plus every externally visible one (not private, or with a
        `global_symbol`); calls are every GlobalVar a function mentions. If some
        reachable reference names no function of the module, nothing is dropped.
    S2  in every Relax function, RemoveAllUnused: a variable is live if the function
        (or a nested function, or a match_cast outside any binding) returns or uses it,
        or if its value contains an impure call; the variables a live binding uses are
        live (a use-def fixed point). Unused VarBindings are removed in dataflow and
        ordinary blocks alike, nested functions and if-branches included; match_casts
        stay (they check at run time). Blocks left empty disappear and neighbouring
        blocks of the same kind merge, as TVM's normaliser does.
    S3  S1 again: S2 may have removed the last call of a private function.
The use-def collection and the impure-call and callee searches are ExprVisitors of the
shared Relax visitor (irtool.ir.relax_visitor), the remover an ExprMutator, as in TVM.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Function, GlobalVar, Let, Op, Var
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator as RelaxExprMutator
from irtool.ir.relax_visitor import ExprVisitor
from irtool.ir.visitor import ExprMutator
from irtool.ir.visitor import ExprVisitor as RelayExprVisitor
from irtool.transform import FunctionPass, register


class _UseCounter(RelayExprVisitor):
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


# --------------------------------------------------------------------------- Relax

# Relax operators TVM 0.27 registers with FPurity=false; every other operator is pure.
IMPURE_RELAX_OPS = frozenset({
    "relax.call_builtin_with_ctx", "relax.print", "relax.assert_op", "relax.invoke_closure",
    "relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.kill_object", "relax.vm.call_tir_dyn",
})


def is_impure_call(call: rx.Call, mod: IRModule | None) -> bool:
    """TVM's IsImpureCall: an impure operator, or a callee whose struct info says impure
    (a GlobalVar's is its function's; a callee whose purity is unknown counts as impure)."""
    op = call.op
    if isinstance(op, Op):
        return op.name in IMPURE_RELAX_OPS
    if isinstance(op, GlobalVar):
        fn = mod.functions.get(op.name_hint) if mod is not None else None
        sinfo = fn.struct_info if isinstance(fn, rx.Function) else None
    else:
        sinfo = getattr(op, "struct_info", None)
    return not (isinstance(sinfo, rx.FuncStructInfo) and sinfo.purity)


class _ImpureCallSearch(ExprVisitor):
    def __init__(self, mod: IRModule | None) -> None:
        self.mod = mod
        self.found = False

    def visit_call_(self, e: rx.Call) -> None:
        self.found = self.found or is_impure_call(e, self.mod)
        if not self.found:
            super().visit_call_(e)

    def visit_function_(self, fn: rx.Function) -> None:
        pass  # a nested function's calls do not run here


def contains_impure_call(expr, mod: IRModule | None) -> bool:
    """TVM's ContainsImpureCall: an impure call anywhere in `expr` (in the body of `expr`
    if it is a function), not counting the calls inside nested functions."""
    search = _ImpureCallSearch(mod)
    search.visit_expr(expr.body if isinstance(expr, rx.Function) else expr)
    return search.found


class _VarUsage(ExprVisitor):
    """TVM's UDChain (CollectVarUsage): for every variable, the variables whose bindings use
    it; the variables used outside any binding (returned, or used in a nested function or
    a top-level match_cast) are outputs. Bound values are recorded for the purity check.
    As TVM's visitor, it sees the shape variables in the struct info of every use and
    compound expression, but not of definitions."""

    def __init__(self) -> None:
        self.users: dict[rx.Var, dict[rx.Var, None]] = {}
        self.outputs: dict[rx.Var, None] = {}
        self.bound_values: dict[rx.Var, rx.Expr] = {}
        self.user: rx.Var | None = None
        self.forward: set[rx.Var] = set()

    def visit_var_def(self, var: rx.Var) -> None:
        self.users.setdefault(var, {})

    def visit_var_(self, var: rx.Var) -> None:
        if self.user is not None:
            self.users.setdefault(var, {})[self.user] = None
        else:
            self.outputs[var] = None
        super().visit_var_(var)

    def visit_expr_struct_info(self, e) -> None:
        self.visit_struct_info(e.struct_info)

    def visit_function_(self, fn: rx.Function) -> None:
        self.user = None  # as in TVM, not restored until the enclosing binding ends
        super().visit_function_(fn)

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        self.bound_values[b.var] = b.value
        saved, self.user = self.user, b.var
        if isinstance(b.value, rx.Function):  # a local function may call itself
            self.visit_var_def(b.var)
            self.forward.add(b.var)
        self.visit_expr(b.value)
        if b.var in self.forward:
            self.forward.discard(b.var)
        else:
            self.visit_var_def(b.var)
        self.user = saved


def _unused_vars(usage: _VarUsage, exposed) -> set:
    """TVM's GetUnusedVars: a variable no live variable uses and that is not exposed is
    unused, and then its own uses no longer count (a worklist over the user counts)."""
    remaining = {v: len(users) for v, users in usage.users.items()}
    uses_of: dict[rx.Var, list] = {}
    for v, users in usage.users.items():
        for u in users:
            uses_of.setdefault(u, []).append(v)
    unused = set()
    work = [v for v, n in remaining.items() if n == 0 and v not in exposed]
    while work:
        v = work.pop()
        if v in unused:
            continue
        unused.add(v)
        for used in uses_of.get(v, ()):
            remaining[used] -= 1
            if remaining[used] == 0 and used not in exposed:
                work.append(used)
    return unused


class _UnusedRemover(RelaxExprMutator):
    """TVM's RemoveUnusedVars: drops the VarBindings of unused variables everywhere,
    keeping those with an impure value outside dataflow blocks."""

    normalize_all_blocks = True  # as TVM's ExprMutator (see relax_visitor)

    def __init__(self, unused: set, mod: IRModule | None) -> None:
        super().__init__(mod)
        self.unused = unused
        self.in_dataflow = False  # inside a dataflow block, nested functions included

    def normalize(self, new, old=None, fallback=None):
        if old is not None and new is not old:
            new.struct_info = old.struct_info  # removing bindings changes no struct info
        return new

    def visit_binding_block(self, block: rx.BindingBlock):
        saved, self.in_dataflow = self.in_dataflow, self.in_dataflow or isinstance(block, rx.DataflowBlock)
        try:
            return super().visit_binding_block(block)
        finally:
            self.in_dataflow = saved

    def visit_binding(self, b) -> None:
        if isinstance(b, rx.VarBinding) and b.var in self.unused and (
                self.in_dataflow or not contains_impure_call(b.value, self.mod)):
            return
        value = self.visit_expr(b.value)
        self.emit(b if value is b.value else b.replace(value=value))  # the variable stays as it is


def remove_all_unused(fn: rx.Function, mod: IRModule | None = None) -> rx.Function:
    """TVM's relax.analysis.remove_all_unused on one function."""
    usage = _VarUsage()
    usage.visit_expr(fn)
    exposed = set(usage.outputs)
    exposed.update(v for v, value in usage.bound_values.items() if contains_impure_call(value, mod))
    unused = _unused_vars(usage, exposed)
    return _UnusedRemover(unused, mod).visit_expr(fn)


class _GlobalVarCollector(ExprVisitor):
    def __init__(self) -> None:
        self.names: dict[str, None] = {}

    def visit_global_var_(self, gv: GlobalVar) -> None:
        self.names[gv.name_hint] = None


def _callees(fn) -> list[str]:
    """The names of the GlobalVars a function mentions, in first-seen order (TVM's
    CollectCallees); a PrimFunc calls no function of the module."""
    if not isinstance(fn, rx.Function):
        return []
    collector = _GlobalVarCollector()
    collector.visit_expr(fn)
    return list(collector.names)


def is_externally_visible(fn) -> bool:
    """TVM's LinkageType::kExternal: a function with a global symbol (not private); Relay
    functions and extern functions count as entry points too."""
    if isinstance(fn, (rx.Function, tir.PrimFunc)):
        return not fn.private or fn.attr("global_symbol") is not None
    return True


def remove_unused_functions(mod: IRModule, entries) -> IRModule:
    """TVM's RemoveUnusedFunctions: keep what the entry functions reach."""
    call_map = {name: _callees(fn) for name, fn in mod.functions.items()}
    reachable = set(entries)
    stack = list(entries)
    while stack:
        callees = call_map.get(stack.pop())
        if callees is None:
            return mod  # a reference to a function outside the module: keep everything
        for callee in callees:
            if callee not in reachable:
                reachable.add(callee)
                stack.append(callee)
    if all(name in reachable for name in mod.functions):
        return mod
    out = mod.with_functions({n: fn for n, fn in mod.functions.items() if n in reachable})
    out.bare = mod.bare
    return out


@register
@dataclass(frozen=True, init=False)
class DeadCodeElimination(FunctionPass):
    name = "dead-code-elimination"
    tvm_name = "DeadCodeElimination"
    opt_level = 1
    tvm_module_pass = True  # TVM registers DeadCodeElimination as a module pass
    summary = "Remove unused bindings (Relay: optionally inline those used once; Relax: and unreachable functions)"

    inline_once: bool = False

    def __init__(self, inline_once: bool = False, entry_functions=()) -> None:
        """`entry_functions` (Relax; TVM's keyword, a name or a list of names): entry points
        besides the externally visible functions. It is a Python-only argument, not a
        pipeline option."""
        object.__setattr__(self, "inline_once", inline_once)
        names = (entry_functions,) if isinstance(entry_functions, str) else tuple(entry_functions or ())
        object.__setattr__(self, "entry_functions", names)

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        if not any(isinstance(fn, (rx.Function, tir.PrimFunc)) for fn in mod.functions.values()):
            return super().transform_module(mod, ctx)  # a Relay module: the let-binding DCE only
        entries = [n for n, fn in mod.functions.items() if is_externally_visible(fn)]
        for name in self.entry_functions:
            if name not in mod.functions:
                raise DiagnosticError(f"dead-code-elimination: the module has no entry function `{name}`")
            entries.append(name)
        mod = remove_unused_functions(mod, entries)
        out = super().transform_module(mod, ctx)
        if out is not mod:
            out.bare = mod.bare
        return remove_unused_functions(out, entries)

    def transform_function(self, fn, mod, ctx):
        if fn.is_primitive:  # a fused kernel is left as it is (TVM skips primitive functions)
            return fn
        counter = _UseCounter()
        counter.visit(fn)
        return _Eliminator(counter.uses, self.inline_once).visit(fn)

    def transform_relax_function(self, fn, mod, ctx):
        return remove_all_unused(fn, mod)
