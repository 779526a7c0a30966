"""What TVM's FuseTIR runs before fusing: ExpandTupleArguments (with its CanonicalizeBindings
and DeadCodeElimination) and RemoveUnusedParameters, as far as fuse-tir needs them.

- expand_tuple_arguments: TVM flattens tuple parameters of private functions; fuse-ops
  never makes one, so a private Relax function with a tuple parameter is reported as
  unsupported. The CanonicalizeBindings and DeadCodeElimination of TVM's Sequential run
  always, so trivial bindings in `main` disappear as they do in TVM.
- remove_unused_parameters: a private Relax function loses the parameters its body never
  uses, and its callers the matching arguments (then their unused bindings go). A
  symbolic variable the body uses that no kept parameter defines becomes a new last
  parameter `param_<var>: R.Shape([var])`, which callers pass as `R.shape([value])`,
  the value read off the old arguments' struct info (TVM's InferSymbolicVarMap).
"""

from __future__ import annotations

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import GlobalVar
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator, ExprVisitor
from irtool.ir.tir_visitor import StmtExprVisitor


def _is_exposed(fn: rx.Function) -> bool:
    return not fn.private or fn.attr("global_symbol") is not None


def expand_tuple_arguments(mod: IRModule, ctx) -> IRModule:
    from irtool.passes.canonicalize_bindings import CanonicalizeBindings
    from irtool.passes.dead_code_elimination import DeadCodeElimination

    for name, fn in mod.functions.items():
        if isinstance(fn, rx.Function) and not _is_exposed(fn) and \
                any(isinstance(p.struct_info, rx.TupleStructInfo) for p in fn.params):
            raise DiagnosticError(f"fuse-tir: `{name}` has a tuple parameter; expanding tuple parameters "
                                  "(TVM's ExpandTupleArguments) is not supported", fn.span)
    mod = CanonicalizeBindings().transform_module(mod, ctx)
    return DeadCodeElimination().transform_module(mod, ctx)


class _UsedVars(ExprVisitor):
    def __init__(self) -> None:
        self.used: set = set()

    def visit_var_(self, v: rx.Var) -> None:
        self.used.add(v)


class _SymbolicVars(ExprVisitor):
    """The TIR variables a function body mentions (struct info and values), first seen first."""

    def __init__(self) -> None:
        self.vars: dict = {}

    def visit_prim_expr(self, e) -> None:
        _tir_vars(e, self.vars)

    def visit_struct_info(self, s) -> None:
        for d in rx.struct_info_dims(s):
            if not isinstance(d, int):
                _tir_vars(d, self.vars)
        if isinstance(s, rx.TupleStructInfo):
            for f in s.fields_:
                self.visit_struct_info(f)


def _tir_vars(e, out: dict) -> dict:
    class _Collect(StmtExprVisitor):
        def visit_Var(self, v) -> None:
            out.setdefault(v, None)

    _Collect().visit(e)
    return out


def _bind_symbolic(sinfo, arg_sinfo, out: dict) -> None:
    """Symbolic variables of a parameter's struct info, bound to what the argument has there."""
    if isinstance(sinfo, rx.TupleStructInfo) and isinstance(arg_sinfo, rx.TupleStructInfo):
        for a, b in zip(sinfo.fields_, arg_sinfo.fields_):
            _bind_symbolic(a, b, out)
        return
    if type(sinfo) is not type(arg_sinfo):
        return
    for d, v in zip(rx.struct_info_dims(sinfo), rx.struct_info_dims(arg_sinfo)):
        if isinstance(d, tir.Var):
            out.setdefault(d, tir.IntImm(v, "int64") if isinstance(v, int) else v)


class _ArgumentDropper(ExprMutator):
    def __init__(self, mod: IRModule, plans: dict) -> None:
        super().__init__(mod)
        self.plans = plans

    def visit_call_(self, e: rx.Call):
        call = super().visit_call_(e)
        plan = self.plans.get(call.op.name_hint) if isinstance(call.op, GlobalVar) else None
        if plan is None:
            return call
        old_params, mask, promoted = plan
        args = [a for a, keep in zip(call.args, mask) if keep]
        if promoted:
            binding: dict = {}
            for p, a in zip(old_params, call.args):
                _bind_symbolic(p.struct_info, a.struct_info, binding)
            for var in promoted:
                if var not in binding:
                    raise DiagnosticError(f"fuse-tir: cannot infer `{var.name}` at a call of `{call.op.name_hint}`",
                                          call.span)
                args.append(rx.ShapeExpr([binding[var]]))
        new = rx.Call(call.op, args, call.attrs, call.sinfo_args, call.span)
        new.struct_info = call.struct_info
        return new


def remove_unused_parameters(mod: IRModule) -> IRModule:
    """TVM's RemoveUnusedParameters (see the module docstring)."""
    from irtool.passes.dead_code_elimination import remove_all_unused

    functions, plans = dict(mod.functions), {}
    for name, fn in mod.functions.items():
        if not isinstance(fn, rx.Function) or _is_exposed(fn):
            continue
        usage = _UsedVars()
        usage.visit_expr(fn.body)
        mask = [p in usage.used for p in fn.params]
        if all(mask):
            continue
        kept = [p for p, keep in zip(fn.params, mask) if keep]
        # TVM's DefinableTIRVarsInType: a variable standing alone as a dimension
        defined = {d for p in kept for d in rx.struct_info_dims(p.struct_info) if isinstance(d, tir.Var)}
        used = _SymbolicVars()
        used.visit_expr(fn.body)
        # FreeSymbolicVars: an unordered_set keyed by address, which TVM lists newest first
        promoted = [v for v in reversed(used.vars) if v not in defined]
        params = kept + [rx.Var(f"param_{v.name}", rx.ShapeStructInfo([v])) for v in promoted]
        functions[name] = rx.Function(params, fn.body, fn.ret_struct_info, fn.is_pure, fn.attrs, fn.private,
                                      fn.span)
        plans[name] = (fn.params, mask, promoted)
    if not plans:
        return mod
    new_mod = mod.with_functions(functions)
    dropper = _ArgumentDropper(new_mod, plans)
    for name, fn in list(functions.items()):
        if isinstance(fn, rx.Function):
            out = dropper.visit_expr(fn)
            functions[name] = remove_all_unused(out, new_mod) if out is not fn else fn
    out = mod.with_functions(functions)
    out.bare = mod.bare
    return out
