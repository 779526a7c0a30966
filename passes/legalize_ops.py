"""legalize-ops: every Relax operator call with a legalization becomes `R.call_tir` of a PrimFunc.

TVM 0.27's relax.transform.LegalizeOps (src/relax/transform/legalize_ops.cc), default table:

    lv1 = R.add(lv, metadata[...][0])          lv1 = R.call_tir(cls.add, (lv, metadata[...][0]),
                                          ->                      out_ty=R.Tensor((1, 3), "float32"))
                                               @T.prim_func(private=True, s_tir=True)
                                               def add(lv: T.Buffer(...), B: T.Buffer(...), T_add: ...)

  1. The Relax functions are visited in module order with one mutator (TVM's ExprMutator):
     each call is rebuilt from its visited arguments, then, if its operator has an entry in
     `irtool.codegen.topi.LEGALIZE` and the shapes of its arguments and result are known
     (TVM's KnowAllShapeValues: tensors with a shape expression, not just a rank), replaced
     by what the legalization returns, normally `bb.call_te(compute, *args)`
     (`irtool.codegen.call_te`): a PrimFunc built by `te.create_prim_func` from TOPI-like
     compute definitions, added to the module under TVM's name (`add`, `add1`, ...; a
     PrimFunc structurally equal to one already there is shared), and called with the
     call's arguments and `out_ty` the computed shape. `CALL_PACKED` operators (R.nonzero)
     become `R.call_pure_packed` of TVM's runtime function whatever the shapes (FCallPacked).
     A legalization may emit bindings before the call (`bb.emit`, `bb.match_cast`: TVM's
     prologue, variables `gv`, `gv1`, ... or `lv`, ... in a dataflow block); they are visited
     in turn, so an op emitted there is legalized too (all_class_non_max_suppression's
     R.dynamic_strided_slice), as is what it returns. A data-dependent op (TVM's
     FDataDependent: R.dynamic_strided_slice) needs only its arguments' shapes known.
  2. Calls of operators without a legalization (R.call_tir itself, R.shape_of, ...) or with
     unknown shapes stay as they are; bindings keep their variables (a variable changes only
     if its value's struct info does, TVM's ReEmitBinding).

The PrimFuncs are TVM 0.27's: loop and block names, `T.int64` indices, reads/writes,
`T.init()` of reductions, `tirx.noalias` (see codegen/te.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.codegen.call_te import BlockBuilder
from irtool.codegen.topi import legalization
from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.transform import ModulePass, register

# Operators TVM 0.27 legalizes to `R.call_pure_packed` of a runtime function (FCallPacked), which
# needs no known shapes (R.nonzero's result has a data-dependent length).
CALL_PACKED = frozenset({"relax.nonzero"})
# Data-dependent operators (TVM's FDataDependent): the result's shape is only known at run time,
# so only the arguments' shapes need to be known (their legalization computes the shape).
DATA_DEPENDENT = frozenset({"relax.dynamic_strided_slice"})


def know_all_shape_values(sinfo) -> bool:
    """TVM's KnowAllShapeValues: tensors have a shape expression, shapes their values."""
    if isinstance(sinfo, rx.TensorStructInfo):
        return isinstance(sinfo.shape, tuple) and bool(sinfo.dtype)
    if isinstance(sinfo, rx.ShapeStructInfo):
        return sinfo.values is not None
    if isinstance(sinfo, rx.TupleStructInfo):
        return all(know_all_shape_values(f) for f in sinfo.fields_)
    return isinstance(sinfo, rx.PrimStructInfo)


def _elementwise(op_name: str) -> bool:
    from irtool.codegen.topi import broadcast, elemwise

    short = op_name.removeprefix("relax.")
    return short in broadcast.BINARY or op_name in elemwise.UNARY


class _Legalizer(ExprMutator):
    def __init__(self, mod: IRModule, bb: BlockBuilder) -> None:
        super().__init__(mod)
        self.bb = bb
        self.bound_sinfo = None  # the struct info of the variable being bound

    def fresh_var_name(self, hint: str) -> str:
        return self.bb._fresh_var_name(hint)  # one name supply, as TVM's LegalizeMutator's builder

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        self.bound_sinfo = b.var.struct_info
        super().visit_var_binding(b)
        if isinstance(b.value, (rx.Tuple, rx.Var)):  # for bb.lookup_binding (TVM's concat, stack)
            self.bb.bindings[self.var_remap.get(b.var, b.var)] = self.visit_expr(b.value)

    def visit_call_(self, e: rx.Call):
        call = super().visit_call_(e)
        if not isinstance(call.op, Op):
            return call
        legalize = legalization(call.op.name)
        if legalize is None:
            return call
        call = self._complete_metadata_constants(call)
        if call.op.name in CALL_PACKED:  # TVM's FCallPacked: a runtime function, whatever the shapes
            return legalize(self.bb, call)
        if not all(know_all_shape_values(a.struct_info) for a in call.args if not isinstance(a, Op)) or \
                not (call.op.name in DATA_DEPENDENT or know_all_shape_values(call.struct_info)):
            return call
        return self._legalize(legalize, call)

    def _legalize(self, legalize, call: rx.Call):
        """As TVM's LegalizeOps: what the legalization emits (`bb.emit`) is collected in a
        prologue, whose bindings are then visited in turn (an op emitted there is legalized
        too), and so is the expression it returns."""
        outer = self.bb.prologue, self.bb.in_dataflow
        self.bb.prologue, self.bb.in_dataflow = [], self.in_dataflow_block
        try:
            out = legalize(self.bb, call)
            prologue = self.bb.prologue
        finally:
            self.bb.prologue, self.bb.in_dataflow = outer
        for binding in prologue:
            self.visit_binding(binding)
        if out is None or out is call:
            return call
        return self.visit_expr(out) if prologue else out

    def _complete_metadata_constants(self, call: rx.Call) -> rx.Call:
        """A `metadata[...]` constant read without its metadata section has no known shape;
        as an operand of an elementwise op it is given the result's (the bound variable's)."""
        result = call.struct_info if know_all_shape_values(call.struct_info) else self.bound_sinfo
        if not isinstance(result, rx.TensorStructInfo) or not know_all_shape_values(result) or \
                not _elementwise(call.op.name):
            return call
        args = [rx.Constant(None, result, a.meta_index, a.span)
                if isinstance(a, rx.Constant) and a.data is None and not know_all_shape_values(a.struct_info)
                else a for a in call.args]
        if all(a is b for a, b in zip(args, call.args)) and call.struct_info is result:
            return call
        new = rx.Call(call.op, args, call.attrs, call.sinfo_args, call.span)
        new.struct_info = result
        return new


@register
@dataclass(frozen=True)
class LegalizeOps(ModulePass):
    name = "legalize-ops"
    tvm_name = "LegalizeOps"
    opt_level = 0
    summary = "Lower Relax operator calls to R.call_tir of PrimFuncs built from their compute definitions"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        return legalize_ops(mod)


def legalize_ops(mod: IRModule) -> IRModule:
    """LegalizeOps on a module (see the module docstring)."""
    bb = BlockBuilder(mod)
    for name, fn in list(mod.functions.items()):
        if isinstance(fn, rx.Function):
            legalizer = _Legalizer(bb.module(), bb)
            new = legalizer.visit_expr(fn)
            if new is not fn:
                bb.update_function(name, new)
    return bb.module()
