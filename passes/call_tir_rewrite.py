"""call-tir-rewrite: TVM 0.27's relax.transform.CallTIRRewrite (call_tir_rewrite.cc).

Every destination-passing call becomes an explicit allocation of its outputs and a call
of the callee on inputs and outputs; the binding then names the allocated tensor(s):

    lv = R.call_tir(cls.f, (x, y), out_ty=R.Tensor((2, 3), "float32"))
    -->
    alloc: R.Tensor((2, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([2, 3]),
        R.dtype("float32"), 0, R.str("global"), ty_args=(R.Tensor((2, 3), dtype="float32"),))
    cls.f(x, y, alloc)                       # bound to `_`, void: printed as a statement
    lv: R.Tensor((2, 3), dtype="float32") = alloc

    R.call_tir          one `alloc` per output tensor (a tuple output: one per field, in order,
                        nested tuples flattened and rebuilt), appended after the inputs
    R.call_tir_inplace  an output with an in-place index is that input, not allocated; only
                        the others (index -1) are appended
    R.call_dps_packed   as call_tir, the callee is the packed function (`R.call_packed`)

A single non-tuple argument (`R.call_tir(f, t)` with a tuple variable) is passed as one
argument, as TVM does. The device index is 0 and the scope "global" (irtool modules carry
no vdevices). New variables get TVM's BlockBuilder names, unique across the pass run
(`alloc`, `alloc1`, ...; `_` for the calls); inside a dataflow block they are dataflow
variables, as TVM emits them. Nothing else changes: the output is TVM's structurally and
prints the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.ops import relax_memory
from irtool.transform import ModulePass, register

DPS_OPS = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed")


class NameSupply:
    """TVM's NameSupply as a BlockBuilder uses it: the first request of a name gets it,
    later ones a counter suffix (`alloc`, `alloc1`, `alloc2`, ...)."""

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}

    def fresh(self, name: str) -> str:
        name = name.replace(".", "_")
        if name not in self.counters:
            self.counters[name] = 0
            return name
        new = name
        while new in self.counters:
            self.counters[name] += 1
            new = f"{name}{self.counters[name]}"
        self.counters[new] = 0
        return new


class _CallTIRMutator(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.names = NameSupply()

    def emit_value(self, value: rx.Expr, name: str) -> rx.Var:
        var = (rx.DataflowVar if self.in_dataflow_block else rx.Var)(self.names.fresh(name), value.struct_info)
        self.emit(rx.VarBinding(var, value))
        return var

    def visit_call_(self, e: rx.Call):
        call = super().visit_call_(e)  # post-order, as TVM's VisitExprPostOrder_
        if not (isinstance(call.op, Op) and call.op.name in DPS_OPS):
            return call
        is_inplace = call.op.name == "relax.call_tir_inplace"
        inplace = tuple(call.attrs.get("inplace_indices", ())) if is_inplace and call.attrs is not None else ()
        arg_tuple = call.args[1]
        fields = arg_tuple.fields_ if isinstance(arg_tuple, rx.Tuple) else None
        sinfo = call.struct_info
        outs: list = []
        if isinstance(sinfo, rx.TensorStructInfo):
            outs.append(fields[inplace[0]] if is_inplace else self.allocate(sinfo, call))
        elif isinstance(sinfo, rx.TupleStructInfo):
            if any(isinstance(f, rx.TupleStructInfo) for f in sinfo.fields_):
                self.flatten_and_allocate(sinfo, outs, call)
            else:
                for i, f in enumerate(sinfo.fields_):
                    if not isinstance(f, rx.TensorStructInfo):
                        raise DiagnosticError("call_tir expects a tuple of tensors as its output", call.span)
                    outs.append(fields[inplace[i]] if is_inplace and inplace[i] != -1 else self.allocate(f, call))
        else:
            raise DiagnosticError("the output of call_tir must be a tensor or a tuple of tensors", call.span)
        if fields is not None:
            args = list(fields)
            args += outs if not is_inplace else [o for o, i in zip(outs, inplace, strict=False) if i == -1]
        else:
            args = [arg_tuple] + (outs if not is_inplace else [])
        dps = rx.Call(call.args[0], args, span=call.span)
        dps.struct_info = _callee_result(call.args[0], self.mod)
        self.emit_value(dps, "_")
        if isinstance(sinfo, rx.TupleStructInfo):
            it = iter(outs)
            return _rebuild_tuple(sinfo, it)
        return outs[0]

    def allocate(self, sinfo: rx.TensorStructInfo, call: rx.Call) -> rx.Var:
        if not isinstance(sinfo.shape, tuple) or not sinfo.dtype:
            raise DiagnosticError("call_tir needs every output's shape and dtype to allocate it", call.span)
        alloc = relax_memory.make_call("relax.builtin.alloc_tensor",
                                       [rx.ShapeExpr(sinfo.shape), sinfo.dtype, 0, "global"], [sinfo])
        return self.emit_value(alloc, "alloc")

    def flatten_and_allocate(self, sinfo, outs: list, call: rx.Call) -> None:
        if isinstance(sinfo, rx.TensorStructInfo):
            outs.append(self.allocate(sinfo, call))
        elif isinstance(sinfo, rx.TupleStructInfo):
            for f in sinfo.fields_:
                self.flatten_and_allocate(f, outs, call)
        else:
            raise DiagnosticError("call_tir expects nested tuple outputs of tensors only", call.span)


def _rebuild_tuple(sinfo, outs):
    if isinstance(sinfo, rx.TupleStructInfo):
        t = rx.Tuple([_rebuild_tuple(f, outs) for f in sinfo.fields_])
        t.struct_info = rx.TupleStructInfo([f.struct_info for f in t.fields_])
        return t
    return next(outs)


def _callee_result(callee, mod: IRModule) -> rx.StructInfo:
    """What calling the callee directly gives: a PrimFunc nothing (void), a packed function
    an object (its opaque struct info's result)."""
    from irtool.ir.relax_visitor import struct_info_of

    fsinfo = struct_info_of(callee, mod)
    return fsinfo.ret if isinstance(fsinfo, rx.FuncStructInfo) else rx.ObjectStructInfo()


def call_tir_rewrite(mod: IRModule) -> IRModule:
    mutator = _CallTIRMutator(mod)  # one builder for the module: names are unique across functions
    functions = {name: mutator.visit_expr(fn) if isinstance(fn, rx.Function) else fn
                 for name, fn in mod.functions.items()}
    return mod.with_functions(functions)


@register
@dataclass(frozen=True)
class CallTIRRewrite(ModulePass):
    name = "call-tir-rewrite"
    tvm_name = "CallTIRRewrite"
    opt_level = 0
    summary = "Explicit output allocations (R.builtin.alloc_tensor) and destination-passing calls"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        return call_tir_rewrite(mod)
