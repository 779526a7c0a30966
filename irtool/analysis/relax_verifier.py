"""Well-formedness of modules holding Relax functions and TIR PrimFuncs (TVM's
`relax.analysis.well_formed` for the rules below, and the TIR verifier for PrimFuncs).

Relax rules checked, per function:
  - every variable is bound before it is used, and bound once;
  - a DataflowVar is bound only in a dataflow block and used only inside that block;
  - a global reference names a function of the module; `R.call_tir` calls a PrimFunc,
    a plain call of a global calls a Relax function;
  - symbolic dimensions are defined by the signature or a match_cast before use.
The walk is the shared Relax ExprVisitor; the bodies of nested (local) functions are not
checked yet.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule
from ..ir.relax_visitor import ExprVisitor, tir_vars


def verify_module(mod: IRModule) -> None:
    for name, fn in mod.functions.items():
        if isinstance(fn, rx.Function):
            _RelaxChecker(mod, name).check(fn)
        elif isinstance(fn, tir.PrimFunc):
            from .tir_verifier import verify_prim_func

            verify_prim_func(fn, name)


class _RelaxChecker(ExprVisitor):
    """Walks one function in order, binding variables and symbols as it goes."""

    def __init__(self, mod: IRModule, name: str) -> None:
        self.mod = mod
        self.name = name
        self.bound: set[int] = set()
        self.live_dataflow: set[int] = set()
        self.symbols: set[int] = set()
        self.in_dataflow = False

    def fail(self, message: str, node) -> None:
        raise DiagnosticError(f"in `{self.name}`: {message}", getattr(node, "span", None))

    def check(self, fn: rx.Function) -> None:
        for p in fn.params:
            self.visit_var_def(p)
            self.define_symbols(p.struct_info)
        self.visit_expr(fn.body)

    def define_symbols(self, sinfo) -> None:
        for d in rx.struct_info_dims(sinfo):
            if isinstance(d, tir.Var):
                self.symbols.add(id(d))

    def check_symbols(self, sinfo, node) -> None:
        for d in rx.struct_info_dims(sinfo):
            for v in tir_vars(d):
                if id(v) not in self.symbols:
                    self.fail(f"symbolic variable `{v.name}` is used before it is defined", node)

    # ----------------------------------------------------------------- definitions
    def visit_var_def(self, var: rx.Var) -> None:
        if id(var) in self.bound:
            self.fail(f"`{var.name_hint}` is bound twice", var)
        if isinstance(var, rx.DataflowVar) and not self.in_dataflow:
            self.fail(f"dataflow variable `{var.name_hint}` is bound outside a dataflow block", var)
        self.bound.add(id(var))
        if isinstance(var, rx.DataflowVar):
            self.live_dataflow.add(id(var))

    def visit_binding_block(self, block: rx.BindingBlock) -> None:
        saved, self.in_dataflow = self.in_dataflow, isinstance(block, rx.DataflowBlock)
        super().visit_binding_block(block)
        if self.in_dataflow:
            self.live_dataflow.clear()
        self.in_dataflow = saved

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        self.visit_expr(b.value)
        self.check_symbols(b.var.struct_info, b)
        self.visit_var_def(b.var)

    def visit_match_cast(self, b: rx.MatchCast) -> None:
        self.visit_expr(b.value)
        self.define_symbols(b.struct_info)
        self.visit_var_def(b.var)

    def visit_function_(self, fn: rx.Function) -> None:
        pass  # nested functions are not checked

    # ----------------------------------------------------------------- uses
    def visit_var_(self, e: rx.Var) -> None:
        if id(e) not in self.bound:
            self.fail(f"`{e.name_hint}` is used before it is bound", e)
        if isinstance(e, rx.DataflowVar) and id(e) not in self.live_dataflow:
            self.fail(f"dataflow variable `{e.name_hint}` is used outside its dataflow block", e)

    def visit_global_var_(self, e: GlobalVar) -> None:
        if e.name_hint not in self.mod.functions:
            self.fail(f"the module has no function `{e.name_hint}`", e)

    def visit_call_(self, call: rx.Call) -> None:
        op = call.op
        if isinstance(op, Op) and op.name == "relax.call_tir":
            gv = call.args[0]
            if not isinstance(self.mod.functions.get(getattr(gv, "name_hint", None)), tir.PrimFunc):
                self.fail("the first argument of `R.call_tir` must be a PrimFunc of the module", call)
            for a in call.args[1:]:
                self.visit_expr(a)
            return
        if isinstance(op, GlobalVar):
            callee = self.mod.functions.get(op.name_hint)
            if callee is None:
                self.fail(f"the module has no function `{op.name_hint}`", call)
            if isinstance(callee, tir.PrimFunc) and len(call.args) != len(callee.params):
                # a direct call is destination passing (CallTIRRewrite's form): every buffer is passed
                self.fail(f"`{op.name_hint}` is a PrimFunc of {len(callee.params)} parameters (inputs, then "
                          f"outputs), called with {len(call.args)} arguments", call)
        else:
            self.visit_expr(op)
        for a in call.args:
            self.visit_expr(a)
