"""remove-purity-checking: TVM 0.27's relax.transform.RemovePurityChecking
(remove_purity_checking.cc).

Each pure Relax function (nested ones too) gets `R.func_attr({"relax.force_pure": True})`,
so that the impure calls later passes introduce (CallTIRRewrite's destination-passing
calls, the memory operators) do not make it ill-formed. The purity overrides are
unwrapped: `R.call_pure_packed(f, args...)` and `R.call_inplace_packed(f, args...)` become
`R.call_packed(f, args...)` (a call of the packed function itself), `invoke_pure_closure`
becomes `invoke_closure`. Impure functions are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.transform import ModulePass, register

FORCE_PURE = "relax.force_pure"


def with_attr(fn: rx.Function, key: str, value) -> rx.Function:
    """TVM's WithAttr: the attribute set (replaced if present). TVM's attributes are a map,
    printed sorted by key; they are kept sorted here so the printed text reads back equal."""
    attrs = dict(fn.attrs)
    attrs[key] = value
    return rx.Function(fn.params, fn.body, fn.ret_struct_info, fn.is_pure, tuple(sorted(attrs.items())),
                       fn.private, fn.span)


class _PurityRemover(ExprMutator):
    def remove_purity(self, fn: rx.Function) -> rx.Function:
        out = with_attr(fn, FORCE_PURE, True) if fn.is_pure else fn
        body = self.visit_expr(out.body)
        if body is out.body:
            return out
        return rx.Function(out.params, body, out.ret_struct_info, out.is_pure, out.attrs, out.private, out.span)

    def visit_function_(self, fn: rx.Function):
        return self.remove_purity(fn)

    def visit_call_(self, e: rx.Call):
        op = e.op
        if isinstance(op, Op) and op.name in ("relax.call_pure_packed", "relax.call_inplace_packed"):
            attrs = e.attrs if op.name == "relax.call_pure_packed" else None
            call = rx.Call(e.args[0], e.args[1:], attrs, e.sinfo_args, e.span)
            call.struct_info = e.sinfo_args[0] if e.sinfo_args else e.struct_info
            return self.visit_expr(call)
        if isinstance(op, Op) and op.name == "relax.invoke_pure_closure":
            call = rx.Call(Op.get("relax.invoke_closure"), e.args, e.attrs, e.sinfo_args, e.span)
            call.struct_info = e.struct_info
            return self.visit_expr(call)
        return super().visit_call_(e)


@register
@dataclass(frozen=True)
class RemovePurityChecking(ModulePass):
    name = "remove-purity-checking"
    tvm_name = "RemovePurityChecking"
    opt_level = 0
    summary = "Mark pure Relax functions relax.force_pure and unwrap call_pure_packed"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        return mod.with_functions({name: _PurityRemover(mod).remove_purity(fn) if isinstance(fn, rx.Function) else fn
                                   for name, fn in mod.functions.items()})
