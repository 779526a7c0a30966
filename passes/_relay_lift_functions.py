"""relay-to-relax's lambda lifting: each let-bound function of a Relay function becomes a
global function of the module (Relax has no closures), as TVM's LambdaLift does.

An ONNX Loop or Scan of run-time length imports as a let-bound recursive function (TVM v0.19's
`while_loop`, frontend/onnx/control.py) that reads values of the enclosing graph:

    let %while_loop = fn (%i, %cond, %v) {            def @while_loop(%i, %cond, %v, %M) {
      if (less(%i, %M)) {                       ==>     if (less(%i, %M)) { @while_loop(..., %M) }
        %while_loop(add(%i, 1i64), ...)                 else { (%i, %cond, %v) }
      } else { (%i, %cond, %v) }                      }
    };                                                ... @while_loop(0i64, %c0, %v0, %M) ...
    %while_loop(0i64, %c0, %v0)

The function's free variables become extra parameters after its own, passed unchanged by its
recursive calls and by the enclosing function's calls; the global takes the let variable's
name (made unique in the module). relay-to-relax then writes it as a Relax function whose
`R.If` calls itself, as TVM's Relax writes a while loop.
"""

from __future__ import annotations

from irtool.ir import expr as relay
from irtool.ir.module import IRModule
from irtool.ir.visitor import ExprMutator, free_vars


class _Lifter(ExprMutator):
    def __init__(self, taken: set, lifted: dict, calls: dict | None = None, subst: dict | None = None) -> None:
        super().__init__()
        self.taken = taken        # global names in use
        self.lifted = lifted      # name -> lifted Relay function (shared by nested lifters)
        self.calls = dict(calls or {})  # let variable -> (its global, the extra arguments)
        self.subst = dict(subst or {})  # free variable -> the lifted function's parameter

    def visit_var(self, e: relay.Var):
        return self.subst.get(e, e)

    def visit_call(self, e: relay.Call):
        target = self.calls.get(e.op) if type(e.op) is relay.Var else None
        if target is None:
            return super().visit_call(e)
        gv, extra = target
        return relay.Call(gv, [self.visit(a) for a in e.args] + [self.visit(x) for x in extra], None, e.span)

    def pre_visit_let(self, e: relay.Let) -> None:
        if type(e.value) is not relay.Function:
            return super().pre_visit_let(e)
        fn, var = e.value, e.var
        free = [v for v in dict.fromkeys(free_vars(fn)) if v is not var and v not in self.calls]
        # free variables that are themselves lifted functions' let variables are calls, not values
        name, k = var.name_hint, 1
        while name in self.taken:
            name, k = f"{var.name_hint}_{k}", k + 1
        self.taken.add(name)
        gv = relay.GlobalVar(name)
        params = [relay.Var(v.name_hint, v.type_annotation or v.checked_type) for v in free]
        inner = _Lifter(self.taken, self.lifted, {**self.calls, var: (gv, params)}, dict(zip(free, params)))
        body = inner.visit(fn.body)
        self.lifted[name] = relay.Function(list(fn.params) + params, body, fn.ret_type, fn.attrs, fn.span)
        self.calls[var] = (gv, free)
        return None

    def post_visit_let(self, e: relay.Let, body):
        if type(e.value) is relay.Function:
            return body
        return super().post_visit_let(e, body)


def lift_local_functions(mod: IRModule) -> IRModule:
    """The module with every let-bound function of its Relay functions lifted to a global
    (the module itself when there is none)."""
    from irtool.ir.visitor import post_order

    relay_fns = {n: f for n, f in mod.functions.items() if isinstance(f, relay.Function)}
    if not any(isinstance(node, relay.Let) and isinstance(node.value, relay.Function)
               for f in relay_fns.values() for node in post_order(f.body, enter_functions=False)):
        return mod
    taken, lifted = set(mod.functions), {}
    functions = dict(mod.functions)
    for name, fn in relay_fns.items():
        body = _Lifter(taken, lifted).visit(fn.body)
        if body is not fn.body:
            functions[name] = relay.Function(fn.params, body, fn.ret_type, fn.attrs, fn.span)
    functions.update(lifted)
    return mod.with_functions(functions)
