"""Relax visitors and mutators, written once for every pass (TVM's relax::ExprVisitor /
ExprMutator, with the same hooks in snake case).

    visit_expr(e)            dispatch on the node class (visit_call_, visit_seq_expr_, ...)
    visit_binding_block(b)   each binding in order: visit_var_binding / visit_match_cast
    visit_var_def(v)         a variable where it is bound (parameters, bindings)
    visit_struct_info(s)     the size expressions a definition's struct info mentions

Blocks are walked with loops, so a block of any length costs no recursion; recursion
follows only the nesting of one expression (a call's arguments, an if's branches), which
Relax's normal form keeps shallow.

`ExprVisitor` visits every occurrence (TVM's does not memoise: a use counter sees each
use). `ExprMutator` memoises the result per node, keeps a node whose children did not
change (so `out is fn` means nothing changed), maps re-defined variables through
`var_remap`, and deduces the struct info of every expression it rebuilds, as TVM's
BlockBuilder normaliser does; a binding whose value's struct info changed gets a new
variable carrying it (TVM's ReEmitBinding).
"""

from __future__ import annotations

from ..analysis import struct_info as si
from . import relax as rx
from . import tir
from .expr import GlobalVar, Op
from .module import IRModule

_EXPR_METHODS = {
    rx.DataflowVar: "visit_dataflow_var_", rx.Var: "visit_var_", rx.Constant: "visit_constant_",
    rx.Tuple: "visit_tuple_", rx.TupleGetItem: "visit_tuple_getitem_", rx.Call: "visit_call_",
    rx.If: "visit_if_", rx.SeqExpr: "visit_seq_expr_", rx.Function: "visit_function_",
    rx.ShapeExpr: "visit_shape_expr_", rx.PrimValue: "visit_prim_value_", rx.DataTypeImm: "visit_leaf_",
    rx.StringImm: "visit_leaf_", rx.ExternFunc: "visit_leaf_", GlobalVar: "visit_global_var_",
    Op: "visit_leaf_", rx.MetadataRef: "visit_leaf_",
}


def _method(visitor, e) -> str:
    name = _EXPR_METHODS.get(type(e))
    if name is None:
        for cls in type(e).__mro__:
            if cls in _EXPR_METHODS:
                name = _EXPR_METHODS[cls]
                break
        else:
            raise TypeError(f"{type(visitor).__name__}: not a Relax expression: {type(e).__name__}")
    return name


def struct_info_of(e, mod: IRModule | None):
    """An expression's struct info; a GlobalVar's is its function's signature."""
    if isinstance(e, GlobalVar):
        fn = mod.functions.get(e.name_hint) if mod is not None else None
        if isinstance(fn, rx.Function):
            return fn.struct_info
        return rx.ObjectStructInfo() if fn is None or not isinstance(fn, tir.PrimFunc) else \
            rx.FuncStructInfo(None, rx.ObjectStructInfo())
    return e.struct_info


def deduce_struct_info(e, mod: IRModule | None, fallback=None):
    """The struct info TVM's normaliser gives a (re)built expression, or `fallback` when it
    cannot be deduced."""
    try:
        if isinstance(e, rx.Tuple):
            return rx.TupleStructInfo([struct_info_of(f, mod) for f in e.fields_])
        if isinstance(e, rx.TupleGetItem):
            t = struct_info_of(e.tuple_value, mod)
            return t.fields_[e.index] if isinstance(t, rx.TupleStructInfo) else rx.ObjectStructInfo()
        if isinstance(e, rx.SeqExpr):
            return struct_info_of(e.body, mod)
        if isinstance(e, rx.If):
            return si.lca(struct_info_of(e.true_branch, mod), struct_info_of(e.false_branch, mod))
        if isinstance(e, rx.Call):
            args = [struct_info_of(a, mod) for a in e.args]
            if isinstance(e.op, (rx.Var, rx.Function, rx.ExternFunc, GlobalVar)):
                return si.deduce_func_call(struct_info_of(e.op, mod), args)
            return si.deduce_call(e.op.name, args, e.attrs, list(e.args), list(e.sinfo_args))
    except si.StructInfoError:
        pass
    return fallback


class ExprVisitor:
    """Visits every expression, binding and variable definition of a Relax function."""

    def visit_expr(self, e) -> None:
        getattr(self, _method(self, e))(e)

    # ----------------------------------------------------------------- leaves and uses
    def visit_leaf_(self, e) -> None:
        pass

    def visit_var_(self, v: rx.Var) -> None:
        pass

    def visit_dataflow_var_(self, v: rx.DataflowVar) -> None:
        self.visit_var_(v)

    def visit_global_var_(self, gv: GlobalVar) -> None:
        pass

    def visit_constant_(self, c: rx.Constant) -> None:
        pass

    def visit_shape_expr_(self, e: rx.ShapeExpr) -> None:
        for value in e.values:
            self.visit_prim_expr(value)

    def visit_prim_value_(self, e: rx.PrimValue) -> None:
        self.visit_prim_expr(e.value)

    def visit_prim_expr(self, e) -> None:
        """A TIR size expression (a shape dimension, a prim value); nothing by default."""

    # ----------------------------------------------------------------- compound expressions
    def visit_tuple_(self, e: rx.Tuple) -> None:
        for f in e.fields_:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, e: rx.TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)

    def visit_call_(self, e: rx.Call) -> None:
        self.visit_expr(e.op)
        for a in e.args:
            self.visit_expr(a)
        for s in e.sinfo_args:
            self.visit_struct_info(s)

    def visit_if_(self, e: rx.If) -> None:
        self.visit_expr(e.cond)
        self.visit_expr(e.true_branch)
        self.visit_expr(e.false_branch)

    def visit_seq_expr_(self, e: rx.SeqExpr) -> None:
        for block in e.blocks:
            self.visit_binding_block(block)
        self.visit_expr(e.body)

    def visit_function_(self, fn: rx.Function) -> None:
        for p in fn.params:
            self.visit_var_def(p)
        self.visit_expr(fn.body)

    # ----------------------------------------------------------------- bindings
    def visit_binding_block(self, block: rx.BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_binding(self, b) -> None:
        if isinstance(b, rx.MatchCast):
            self.visit_match_cast(b)
        else:
            self.visit_var_binding(b)

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        self.visit_expr(b.value)
        self.visit_var_def(b.var)

    def visit_match_cast(self, b: rx.MatchCast) -> None:
        self.visit_expr(b.value)
        self.visit_struct_info(b.struct_info)
        self.visit_var_def(b.var)

    def visit_var_def(self, v: rx.Var) -> None:
        if v.struct_info is not None:
            self.visit_struct_info(v.struct_info)

    def visit_struct_info(self, s) -> None:
        """The size expressions (and shape variables) struct info mentions."""
        if isinstance(s, rx.TensorStructInfo) and isinstance(s.shape, rx.Var):
            self.visit_expr(s.shape)
            return
        for dim in rx.struct_info_dims(s):
            if not isinstance(dim, int):
                self.visit_prim_expr(dim)
        if isinstance(s, rx.FuncStructInfo):
            for p in s.params or ():
                self.visit_struct_info(p)
            self.visit_struct_info(s.ret)


class ExprMutator:
    """Rebuilds what changed; see the module docstring. `mod` (optional) gives the struct
    info of called globals when a rebuilt call's struct info is deduced."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod
        self.memo: dict = {}
        self.var_remap: dict = {}
        self._emitted: list | None = None

    def visit_expr(self, e):
        out = self.memo.get(e)
        if out is None:
            out = getattr(self, _method(self, e))(e)
            self.memo[e] = out
        return out

    def normalize(self, new, old=None):
        """Give a rebuilt expression its struct info (the old one if it cannot be deduced)."""
        if new is not old and not isinstance(new, (rx.Var, GlobalVar, Op)) and new.struct_info is None:
            new.struct_info = deduce_struct_info(new, self.mod, old.struct_info if old is not None else None)
        return new

    # ----------------------------------------------------------------- leaves and uses
    def visit_leaf_(self, e):
        return e

    def visit_var_(self, v: rx.Var):
        return self.var_remap.get(v, v)

    def visit_dataflow_var_(self, v: rx.DataflowVar):
        return self.visit_var_(v)

    def visit_global_var_(self, gv: GlobalVar):
        return gv

    def visit_constant_(self, c: rx.Constant):
        return c

    def visit_shape_expr_(self, e: rx.ShapeExpr):
        values = tuple(self.visit_prim_expr(v) for v in e.values)
        return e if all(a is b for a, b in zip(values, e.values)) else rx.ShapeExpr(values, e.span)

    def visit_prim_value_(self, e: rx.PrimValue):
        value = self.visit_prim_expr(e.value)
        return e if value is e.value else rx.PrimValue(value, e.span)

    def visit_prim_expr(self, e):
        """A TIR size expression; unchanged by default."""
        return e

    # ----------------------------------------------------------------- compound expressions
    def visit_tuple_(self, e: rx.Tuple):
        fields = [self.visit_expr(f) for f in e.fields_]
        if all(a is b for a, b in zip(fields, e.fields_)):
            return e
        return self.normalize(rx.Tuple(fields, e.span), e)

    def visit_tuple_getitem_(self, e: rx.TupleGetItem):
        value = self.visit_expr(e.tuple_value)
        return e if value is e.tuple_value else self.normalize(rx.TupleGetItem(value, e.index, e.span), e)

    def visit_call_(self, e: rx.Call):
        op = self.visit_expr(e.op)
        args = [self.visit_expr(a) for a in e.args]
        sinfo_args = [self.visit_struct_info(s) for s in e.sinfo_args]
        if op is e.op and all(a is b for a, b in zip(args, e.args)) and \
                all(a is b for a, b in zip(sinfo_args, e.sinfo_args)):
            return e
        return self.normalize(rx.Call(op, args, e.attrs, sinfo_args, e.span), e)

    def visit_if_(self, e: rx.If):
        cond = self.visit_expr(e.cond)
        then, other = self.visit_expr(e.true_branch), self.visit_expr(e.false_branch)
        if cond is e.cond and then is e.true_branch and other is e.false_branch:
            return e
        return self.normalize(rx.If(cond, then, other, e.span), e)

    def visit_seq_expr_(self, e: rx.SeqExpr):
        blocks = [self.visit_binding_block(b) for b in e.blocks]
        body = self.visit_expr(e.body)
        if body is e.body and all(a is b for a, b in zip(blocks, e.blocks)) and len(blocks) == len(e.blocks):
            return e
        return self.normalize(rx.SeqExpr(rx.merge_blocks(blocks), body, e.span), e)

    def visit_function_(self, fn: rx.Function):
        params = [self.visit_var_def(p) for p in fn.params]
        body = self.visit_expr(fn.body)
        if body is fn.body and all(a is b for a, b in zip(params, fn.params)):
            return fn
        return rx.Function(params, body, fn.ret_struct_info, fn.is_pure, fn.attrs, fn.private, fn.span)

    # ----------------------------------------------------------------- bindings
    def visit_binding_block(self, block: rx.BindingBlock):
        outer, self._emitted = self._emitted, []
        try:
            for b in block.bindings:
                self.visit_binding(b)
            emitted = self._emitted
        finally:
            self._emitted = outer
        if len(emitted) == len(block.bindings) and all(a is b for a, b in zip(emitted, block.bindings)):
            return block
        return type(block)(emitted, block.span)

    def emit(self, binding) -> None:
        """Append a binding to the block being rebuilt (a pass may emit several per binding)."""
        self._emitted.append(binding)

    def visit_binding(self, b) -> None:
        if isinstance(b, rx.MatchCast):
            self.visit_match_cast(b)
        else:
            self.visit_var_binding(b)

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        value = self.visit_expr(b.value)
        self.reemit(b, value)

    def reemit(self, b: rx.VarBinding, value) -> None:
        """Emit `b` with a new value; its variable changes if the value's struct info does."""
        var = self.visit_var_def(b.var)
        if value is not b.value and value.struct_info is not None and var.struct_info is not None and \
                not si.struct_info_equal(value.struct_info, var.struct_info):
            new = type(var)(var.name_hint, value.struct_info, var.span)
            self.var_remap[b.var] = var = new
        self.emit(b if var is b.var and value is b.value else rx.VarBinding(var, value, b.span))

    def visit_match_cast(self, b: rx.MatchCast) -> None:
        value = self.visit_expr(b.value)
        sinfo = self.visit_struct_info(b.struct_info)
        var = self.visit_var_def(b.var)
        self.emit(b if value is b.value and sinfo is b.struct_info and var is b.var
                  else rx.MatchCast(var, value, sinfo, b.span))

    def visit_var_def(self, v: rx.Var) -> rx.Var:
        if v in self.var_remap:
            return self.var_remap[v]
        sinfo = self.visit_struct_info(v.struct_info) if v.struct_info is not None else None
        if sinfo is v.struct_info:
            return v
        new = type(v)(v.name_hint, sinfo, v.span)
        self.var_remap[v] = new
        return new

    def visit_struct_info(self, s):
        """Struct info with its size expressions mapped by `visit_prim_expr` (unchanged by default)."""
        return s
