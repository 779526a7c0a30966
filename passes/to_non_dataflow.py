"""to-non-dataflow: TVM 0.27's relax.transform.ToNonDataflow (to_non_dataflow.cc).

Every dataflow block becomes an ordinary binding block and every dataflow variable an
ordinary variable of the same name and struct info; neighbouring binding blocks then merge
(TVM's normaliser), so a function of one dataflow block and its return is one block:

    with R.dataflow():              lv = R.call_tir(...)
        lv = R.call_tir(...)   -->  gv = R.call_tir(...)
        gv = R.call_tir(...)        return gv
        R.output(gv)
    return gv

The default build pipeline runs it before CallTIRRewrite and StaticPlanBlockMemory, which
then see one block per function body: the memory plan is per block.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir import relax as rx
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.transform import ModulePass, register


class _ToNonDataflow(ExprMutator):
    def visit_var_def(self, v: rx.Var) -> rx.Var:
        if isinstance(v, rx.DataflowVar) and v not in self.var_remap:
            new = rx.Var(v.name_hint, v.struct_info, v.span)
            self.var_remap[v] = new
            return new
        return super().visit_var_def(v)

    def visit_binding_block(self, block: rx.BindingBlock):
        out = super().visit_binding_block(block)
        return rx.BindingBlock(out.bindings, out.span) if isinstance(out, rx.DataflowBlock) else out


def to_non_dataflow(fn: rx.Function, mod: IRModule | None = None) -> rx.Function:
    return _ToNonDataflow(mod).visit_expr(fn)


@register
@dataclass(frozen=True)
class ToNonDataflow(ModulePass):
    name = "to-non-dataflow"
    tvm_name = "ToNonDataflow"
    opt_level = 0
    summary = "Turn dataflow blocks into ordinary binding blocks (and dataflow variables into variables)"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        return mod.with_functions({name: to_non_dataflow(fn, mod) if isinstance(fn, rx.Function) else fn
                                   for name, fn in mod.functions.items()})
