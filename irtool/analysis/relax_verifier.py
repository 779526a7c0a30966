"""Well-formedness of modules holding Relax functions and TIR PrimFuncs (TVM's
`relax.analysis.well_formed` for the rules below, and the TIR verifier for PrimFuncs).

Relax rules checked, per function:
  - every variable is bound before it is used, and bound once;
  - a DataflowVar is bound only in a dataflow block and used only inside that block;
  - a global reference names a function of the module; `R.call_tir` calls a PrimFunc,
    a plain call of a global calls a Relax function;
  - symbolic dimensions are defined by the signature or a match_cast before use.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule


def verify_module(mod: IRModule) -> None:
    for name, fn in mod.functions.items():
        if isinstance(fn, rx.Function):
            _RelaxChecker(mod, name).function(fn)
        elif isinstance(fn, tir.PrimFunc):
            from .tir_verifier import verify_prim_func

            verify_prim_func(fn, name)


class _RelaxChecker:
    def __init__(self, mod: IRModule, name: str) -> None:
        self.mod = mod
        self.name = name
        self.bound: set[int] = set()
        self.live_dataflow: set[int] = set()
        self.symbols: set[int] = set()

    def fail(self, message: str, node) -> None:
        raise DiagnosticError(f"in `{self.name}`: {message}", getattr(node, "span", None))

    def function(self, fn: rx.Function) -> None:
        for p in fn.params:
            self.bind(p, dataflow=False)
            self.define_symbols(p.struct_info)
        self.seq(fn.body)

    def define_symbols(self, sinfo) -> None:
        for d in rx.struct_info_dims(sinfo):
            if isinstance(d, tir.Var):
                self.symbols.add(id(d))

    def check_symbols(self, sinfo, node) -> None:
        for d in rx.struct_info_dims(sinfo):
            for v in _tir_vars(d):
                if id(v) not in self.symbols:
                    self.fail(f"symbolic variable `{v.name}` is used before it is defined", node)

    def bind(self, var: rx.Var, dataflow: bool) -> None:
        if id(var) in self.bound:
            self.fail(f"`{var.name_hint}` is bound twice", var)
        if isinstance(var, rx.DataflowVar) and not dataflow:
            self.fail(f"dataflow variable `{var.name_hint}` is bound outside a dataflow block", var)
        self.bound.add(id(var))
        if isinstance(var, rx.DataflowVar):
            self.live_dataflow.add(id(var))

    def seq(self, seq: rx.SeqExpr) -> None:
        for block in seq.blocks:
            dataflow = isinstance(block, rx.DataflowBlock)
            for b in block.bindings:
                self.expr(b.value)
                if isinstance(b, rx.MatchCast):
                    self.define_symbols(b.struct_info)
                else:
                    self.check_symbols(b.var.struct_info, b)
                self.bind(b.var, dataflow)
            if dataflow:
                self.live_dataflow.clear()
        self.expr(seq.body)

    def expr(self, e) -> None:
        if isinstance(e, rx.Var):
            if id(e) not in self.bound:
                self.fail(f"`{e.name_hint}` is used before it is bound", e)
            if isinstance(e, rx.DataflowVar) and id(e) not in self.live_dataflow:
                self.fail(f"dataflow variable `{e.name_hint}` is used outside its dataflow block", e)
        elif isinstance(e, GlobalVar):
            if e.name_hint not in self.mod.functions:
                self.fail(f"the module has no function `{e.name_hint}`", e)
        elif isinstance(e, rx.Tuple):
            for f in e.fields_:
                self.expr(f)
        elif isinstance(e, rx.TupleGetItem):
            self.expr(e.tuple_value)
        elif isinstance(e, rx.If):
            self.expr(e.cond)
            self.seq(e.true_branch)
            self.seq(e.false_branch)
        elif isinstance(e, rx.SeqExpr):
            self.seq(e)
        elif isinstance(e, rx.Call):
            self.call(e)

    def call(self, call: rx.Call) -> None:
        op = call.op
        if isinstance(op, Op) and op.name == "relax.call_tir":
            gv = call.args[0]
            if not isinstance(self.mod.functions.get(getattr(gv, "name_hint", None)), tir.PrimFunc):
                self.fail("the first argument of `R.call_tir` must be a PrimFunc of the module", call)
            for a in call.args[1:]:
                self.expr(a)
            return
        if isinstance(op, GlobalVar):
            callee = self.mod.functions.get(op.name_hint)
            if callee is None:
                self.fail(f"the module has no function `{op.name_hint}`", call)
            if isinstance(callee, tir.PrimFunc):
                self.fail(f"`{op.name_hint}` is a PrimFunc; call it with `R.call_tir`", call)
        elif not isinstance(op, (Op, rx.ExternFunc)):
            self.expr(op)
        for a in call.args:
            self.expr(a)


def _tir_vars(e):
    if isinstance(e, tir.Var):
        yield e
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            v = getattr(e, f)
            if isinstance(v, tir.PrimExpr):
                yield from _tir_vars(v)
