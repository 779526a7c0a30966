"""What TVM's FuseTIR runs before fusing: ExpandTupleArguments (with its CanonicalizeBindings
and DeadCodeElimination) and RemoveUnusedParameters, as far as fuse-tir needs them.

- expand_tuple_arguments: TVM flattens tuple parameters of private functions; fuse-ops
  never makes one, so a private Relax function with a tuple parameter is reported as
  unsupported. The CanonicalizeBindings and DeadCodeElimination of TVM's Sequential run
  always, so trivial bindings in `main` disappear as they do in TVM.
- remove_unused_parameters: a private Relax function loses the parameters its body never
  uses, and its callers the matching arguments (then their unused bindings go). TVM
  re-adds a parameter for a symbolic variable only a removed parameter defined; that
  case is reported as unsupported.
"""

from __future__ import annotations

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir.expr import GlobalVar
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator, ExprVisitor


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


class _ArgumentDropper(ExprMutator):
    def __init__(self, mod: IRModule, masks: dict) -> None:
        super().__init__(mod)
        self.masks = masks

    def visit_call_(self, e: rx.Call):
        call = super().visit_call_(e)
        mask = self.masks.get(call.op.name_hint) if isinstance(call.op, GlobalVar) else None
        if mask is None:
            return call
        new = rx.Call(call.op, [a for a, keep in zip(call.args, mask) if keep], call.attrs, call.sinfo_args,
                      call.span)
        new.struct_info = call.struct_info
        return new


def remove_unused_parameters(mod: IRModule) -> IRModule:
    from irtool.passes.dead_code_elimination import remove_all_unused

    functions, masks = dict(mod.functions), {}
    for name, fn in mod.functions.items():
        if not isinstance(fn, rx.Function) or _is_exposed(fn):
            continue
        usage = _UsedVars()
        usage.visit_expr(fn.body)
        mask = [p in usage.used for p in fn.params]
        if all(mask):
            continue
        kept = [p for p, keep in zip(fn.params, mask) if keep]
        defined = {d for p in kept for d in rx.struct_info_dims(p.struct_info)}
        dropped_dims = {d for p, keep in zip(fn.params, mask) if not keep for d in rx.struct_info_dims(p.struct_info)
                        if not isinstance(d, int)}
        if dropped_dims - defined:
            raise DiagnosticError(f"fuse-tir: `{name}` has an unused parameter that alone defines a symbolic "
                                  "variable; TVM's RemoveUnusedParameters case is not supported", fn.span)
        functions[name] = rx.Function(kept, fn.body, fn.ret_struct_info, fn.is_pure, fn.attrs, fn.private, fn.span)
        masks[name] = mask
    if not masks:
        return mod
    new_mod = mod.with_functions(functions)
    dropper = _ArgumentDropper(new_mod, masks)
    for name, fn in list(functions.items()):
        if isinstance(fn, rx.Function):
            out = dropper.visit_expr(fn)
            functions[name] = remove_all_unused(out, new_mod) if out is not fn else fn
    out = mod.with_functions(functions)
    out.bare = mod.bare
    return out
