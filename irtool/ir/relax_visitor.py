"""Relax visitors and mutators, written once for every pass (TVM's relax::ExprVisitor /
ExprMutator, with the same hooks in snake case).

    visit_expr(e)            dispatch on the node class (visit_call_, visit_seq_expr_, ...)
    visit_binding_block(b)   each binding in order: visit_var_binding / visit_match_cast
    visit_var_def(v)         a variable where it is bound (parameters, bindings)
    visit_struct_info(s)     the size expressions and shape variables struct info mentions
                             (through tuples, not into function struct info, as TVM's)
    visit_struct_info_prim_field(e)   one such size expression (default: visit_prim_expr)
    visit_expr_struct_info(e)         a use's or a compound expression's own struct info,
                             where TVM visits it (nothing by default)

Blocks are walked with loops, so a block of any length costs no recursion; recursion
follows only the nesting of one expression (a call's arguments, an if's branches), which
Relax's normal form keeps shallow.

`ExprVisitor` visits every occurrence (TVM's does not memoise: a use counter sees each
use). `ExprMutator` memoises the result per node (not per variable use: `var_remap`
grows during the walk), keeps a node whose children did not change (so `out is fn`
means nothing changed), maps re-defined variables through `var_remap`, and deduces the
struct info of every expression it rebuilds, as TVM's BlockBuilder normaliser does. As
TVM's ExprMutator, it maps struct info (a call's result, an if's, a SeqExpr's, a
function's result when a parameter changed) through `visit_struct_info`; a rebuilt
binding takes its value's struct info (TVM's ReEmitBinding / WithStructInfo), and a
rebuilt match_cast of a compound value casts a fresh variable bound to it
(NormalizeArgument).
"""

from __future__ import annotations

from ..analysis import struct_info as si
from . import relax as rx
from . import tir
from .expr import GlobalVar, Op
from .module import IRModule
from .node import Node

_EXPR_METHODS = {
    rx.DataflowVar: "visit_dataflow_var_", rx.Var: "visit_var_", rx.Constant: "visit_constant_",
    rx.Tuple: "visit_tuple_", rx.TupleGetItem: "visit_tuple_getitem_", rx.Call: "visit_call_",
    rx.If: "visit_if_", rx.SeqExpr: "visit_seq_expr_", rx.Function: "visit_function_",
    rx.ShapeExpr: "visit_shape_expr_", rx.PrimValue: "visit_prim_value_", rx.DataTypeImm: "visit_leaf_",
    rx.StringImm: "visit_leaf_", rx.ExternFunc: "visit_leaf_", GlobalVar: "visit_global_var_",
    Op: "visit_leaf_", rx.MetadataRef: "visit_leaf_",
}


def _all_same(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def same_struct_info(a, b) -> bool:
    """TVM's StructuralEqual on struct info: variables (TIR and Relax) are equal only to
    themselves, so `(m, n)` is not `(o, p)`."""
    if a is b:
        return True
    if isinstance(a, tir.IntImm) and isinstance(b, int) or isinstance(a, int) and isinstance(b, tir.IntImm):
        return int(getattr(a, "value", a)) == int(getattr(b, "value", b))
    if type(a) is not type(b):
        return False
    if isinstance(a, (tir.Var, rx.Var)):
        return False
    if isinstance(a, Node):
        return all(same_struct_info(getattr(a, f), getattr(b, f)) for f in type(a).fields)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_struct_info(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def tir_vars(e) -> list:
    """The TIR variables in a size expression (or struct info, or a tuple of them), in
    first-seen order."""
    out: dict = {}
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, tir.Var):
            out[x] = None
        elif isinstance(x, Node):
            stack.extend(getattr(x, f) for f in reversed(type(x).fields))
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
    return list(out)


def normalize_blocks(blocks) -> list:
    """TVM's NormalizeBlocks: a binding to a SeqExpr is flattened into the blocks, empty
    blocks go and neighbouring blocks of the same kind merge."""
    flat: list = []
    for block in blocks:
        current: list = []
        for b in block.bindings:
            if isinstance(b.value, rx.SeqExpr):
                flat.append(type(block)(current))
                flat.extend(b.value.blocks)
                current = [b.replace(value=b.value.body)]
            else:
                current.append(b)
        flat.append(block if _all_same(current, block.bindings) else type(block)(current, block.span))
    return rx.merge_blocks(flat)


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
        # a PrimFunc called directly (destination passing) returns nothing and is impure, as in TVM
        return rx.ObjectStructInfo() if fn is None or not isinstance(fn, tir.PrimFunc) else \
            rx.FuncStructInfo(None, rx.TupleStructInfo([]), purity=False)
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
        self.visit_expr_struct_info(v)

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

    def visit_expr_struct_info(self, e) -> None:
        """The struct info of a variable at its use, and of a tuple, projection, call, if
        or SeqExpr after its parts: where TVM's ExprVisitor visits it. Nothing by default;
        `self.visit_struct_info(e.struct_info)` is TVM's walk."""

    # ----------------------------------------------------------------- compound expressions
    def visit_tuple_(self, e: rx.Tuple) -> None:
        for f in e.fields_:
            self.visit_expr(f)
        self.visit_expr_struct_info(e)

    def visit_tuple_getitem_(self, e: rx.TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)
        self.visit_expr_struct_info(e)

    def visit_call_(self, e: rx.Call) -> None:
        self.visit_expr(e.op)
        for s in e.sinfo_args:
            self.visit_struct_info(s)
        for a in e.args:
            self.visit_expr(a)
        self.visit_expr_struct_info(e)

    def visit_if_(self, e: rx.If) -> None:
        self.visit_expr(e.cond)
        self.visit_expr(e.true_branch)
        self.visit_expr(e.false_branch)
        self.visit_expr_struct_info(e)

    def visit_seq_expr_(self, e: rx.SeqExpr) -> None:
        for block in e.blocks:
            self.visit_binding_block(block)
        self.visit_expr(e.body)
        self.visit_expr_struct_info(e)

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
        """The size expressions and shape variables struct info mentions, through tuples;
        a function's struct info mentions nothing of the scope (TVM's default walk)."""
        if isinstance(s, rx.TensorStructInfo) and isinstance(s.shape, rx.Var):
            self.visit_expr(s.shape)
        elif isinstance(s, rx.TupleStructInfo):
            for f in s.fields_:
                self.visit_struct_info(f)
        elif not isinstance(s, rx.FuncStructInfo):
            for dim in rx.struct_info_dims(s):
                if not isinstance(dim, int):
                    self.visit_struct_info_prim_field(dim)

    def visit_struct_info_prim_field(self, e) -> None:
        """A size expression of struct info (TVM's VisitStructInfoExprField)."""
        self.visit_prim_expr(e)


class ExprMutator:
    """Rebuilds what changed; see the module docstring. `mod` (optional) gives the struct
    info of called globals when a rebuilt call's struct info is deduced."""

    # TVM's ExprMutator rebuilds every binding block, so its SeqExprs come out normal (no
    # empty blocks, no neighbouring blocks of one kind) even where nothing changed. A pass
    # that must match that sets this; by default an unchanged SeqExpr is kept as it is.
    normalize_all_blocks = False

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod
        self.memo: dict = {}
        self.var_remap: dict = {}
        self.in_dataflow_block = False  # is the block being rebuilt a dataflow block?
        self._emitted: list | None = None

    def visit_expr(self, e):
        if isinstance(e, rx.Var):  # not memoised: var_remap grows during the walk
            return getattr(self, _method(self, e))(e)
        out = self.memo.get(e)
        if out is None:
            out = getattr(self, _method(self, e))(e)
            self.memo[e] = out
        return out

    def normalize(self, new, old=None, fallback=None):
        """Give a rebuilt expression (`new`, rebuilt from `old`) its struct info: deduced, or
        `fallback` (default: the old one) if it cannot be."""
        if new is not old and not isinstance(new, (rx.Var, GlobalVar, Op)) and new.struct_info is None:
            if fallback is None and old is not None:
                fallback = old.struct_info
            new.struct_info = deduce_struct_info(new, self.mod, fallback)
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
        sinfo_args = [self.visit_struct_info(s) for s in e.sinfo_args]
        args = [self.visit_expr(a) for a in e.args]
        unchanged = op is e.op and _all_same(args, e.args) and _all_same(sinfo_args, e.sinfo_args)
        ret = self.visit_struct_info(e.struct_info)
        if unchanged and ret is e.struct_info:
            return e
        call = rx.Call(op, args, e.attrs, sinfo_args, e.span)
        if unchanged:  # only the result's struct info changed: it is authoritative
            call.struct_info = ret
        return self.normalize(call, e, ret)

    def visit_if_(self, e: rx.If):
        cond = self.visit_expr(e.cond)
        then, other = self.visit_expr(e.true_branch), self.visit_expr(e.false_branch)
        sinfo = self.visit_struct_info(e.struct_info)
        if cond is e.cond and then is e.true_branch and other is e.false_branch and sinfo is e.struct_info:
            return e
        return self.normalize(rx.If(cond, then, other, e.span), e)

    def visit_seq_expr_(self, e: rx.SeqExpr):
        blocks = [self.visit_binding_block(b) for b in e.blocks]
        body = self.visit_expr(e.body)
        sinfo = self.visit_struct_info(e.struct_info)
        new_blocks = normalize_blocks(blocks)
        if body is e.body and sinfo is e.struct_info and \
                _all_same(new_blocks if self.normalize_all_blocks else blocks, e.blocks):
            return e
        return self.normalize(rx.SeqExpr(new_blocks, body, e.span), e, sinfo)

    def visit_function_(self, fn: rx.Function):
        params, changed = [], False
        for p in fn.params:
            new = self.visit_var_def(p)
            if new is not p:
                self.var_remap[p] = new
                changed = True
            params.append(new)
        ret = self.visit_struct_info(fn.ret_struct_info) if changed else fn.ret_struct_info
        body = self.visit_expr(fn.body)
        if not changed and body is fn.body:
            return fn
        # TVM keeps the declared result if the body's struct info is a base of it; else
        # the result is the body's, with the variables only the body defines erased
        body_sinfo = struct_info_of(body if body.struct_info is not None else body.body, self.mod)
        if ret is None or body_sinfo is not None and not si.is_base_of(body_sinfo, ret):
            defined = tir_vars([p.struct_info for p in params])
            ret = si.erase_to_well_defined(body_sinfo, defined) if body_sinfo is not None else ret
        return rx.Function(params, body, ret, fn.is_pure, fn.attrs, fn.private, fn.span)

    # ----------------------------------------------------------------- bindings
    def visit_binding_block(self, block: rx.BindingBlock):
        outer = self._emitted, self.in_dataflow_block
        self._emitted, self.in_dataflow_block = [], isinstance(block, rx.DataflowBlock)
        try:
            for b in block.bindings:
                self.visit_binding(b)
            emitted = self._emitted
        finally:
            self._emitted, self.in_dataflow_block = outer
        return block if _all_same(emitted, block.bindings) else type(block)(emitted, block.span)

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

    def with_struct_info(self, var: rx.Var, sinfo) -> rx.Var:
        """TVM's WithStructInfo: `var`, or a variable of the same name carrying `sinfo`."""
        if sinfo is None or var.struct_info is sinfo or same_struct_info(var.struct_info, sinfo):
            return var
        return type(var)(var.name_hint, sinfo, var.span)

    def _redefine(self, b, visited: rx.Var, new: rx.Var) -> None:
        self.var_remap[b.var] = self.var_remap[visited] = self.var_remap[new] = new

    def reemit(self, b: rx.VarBinding, value) -> None:
        """Emit `b` with a new value (TVM's ReEmitBinding); if anything changed, its variable
        takes the value's struct info, and later uses follow the new variable."""
        visited = self.visit_var_def(b.var)
        if visited is b.var and value is b.value:
            self.emit(b)
            return
        var = self.with_struct_info(visited, struct_info_of(value, self.mod))
        self._redefine(b, visited, var)
        self.emit(rx.VarBinding(var, value, b.span))

    def visit_match_cast(self, b: rx.MatchCast) -> None:
        value = self.visit_expr(b.value)
        sinfo = self.visit_struct_info(b.struct_info)
        visited = self.visit_var_def(b.var)
        if value is b.value and sinfo is b.struct_info and visited is b.var:
            self.emit(b)
            return
        var = self.with_struct_info(visited, sinfo)
        self._redefine(b, visited, var)
        if isinstance(value, (rx.Call, rx.TupleGetItem, rx.If, rx.SeqExpr, rx.Function)):
            # TVM's NormalizeArgument: a compound value is bound to a variable, which is cast
            # outside a dataflow block named as TVM 0.27's LegalizeOps names it: a fresh name of
            # the mutator's run, `gv`, `gv1`, ... (shared with the legalizations' own bindings).
            # Inside one TVM's names mix `lv1` and a repeated `lv` in a way not worked out yet
            # (lv, lv1, lv, lv2 for four casts in a row); `lv` is the first of them
            name = "lv" if self.in_dataflow_block else self.fresh_var_name("gv")
            lv = (rx.DataflowVar if self.in_dataflow_block else rx.Var)(name, struct_info_of(value, self.mod))
            self.emit(rx.VarBinding(lv, value))
            value = lv
        self.emit(rx.MatchCast(var, value, sinfo, b.span))

    def fresh_var_name(self, hint: str) -> str:
        """FreshName of TVM's BlockBuilder for a variable the mutator emits: `gv`, `gv1`, ...
        (`lv`, `lv1`, ... in a dataflow block), one supply for the mutator's whole run."""
        names = self.__dict__.setdefault("_fresh_names", {})
        count = names.get(hint, -1) + 1
        names[hint] = count
        return f"{hint}{count}" if count else hint

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
        """Struct info with its size expressions mapped by `visit_struct_info_prim_field` and
        its shape variables by `visit_expr`, through tuples (the same object if nothing
        changed; function struct info is left alone, as TVM does)."""
        if isinstance(s, rx.TensorStructInfo):
            if isinstance(s.shape, tuple):
                dims = tuple(d if isinstance(d, int) else self.visit_struct_info_prim_field(d) for d in s.shape)
                return s if _all_same(dims, s.shape) else s.replace(shape=dims)
            if isinstance(s.shape, rx.Var):
                shape = self.visit_expr(s.shape)
                if shape is s.shape:
                    return s
                return s.replace(shape=shape.values if isinstance(shape, rx.ShapeExpr) else shape)
            return s
        if isinstance(s, rx.ShapeStructInfo) and s.values is not None:
            values = tuple(d if isinstance(d, int) else self.visit_struct_info_prim_field(d) for d in s.values)
            return s if _all_same(values, s.values) else rx.ShapeStructInfo(values, span=s.span)
        if isinstance(s, rx.PrimStructInfo) and s.value is not None and not isinstance(s.value, int):
            value = self.visit_struct_info_prim_field(s.value)
            return s if value is s.value else rx.PrimStructInfo(s.dtype, value, s.span)
        if isinstance(s, rx.TupleStructInfo):
            fields = tuple(self.visit_struct_info(f) for f in s.fields_)
            return s if _all_same(fields, s.fields_) else rx.TupleStructInfo(fields, s.span)
        return s

    def visit_struct_info_prim_field(self, e):
        """A size expression of struct info (TVM's VisitStructInfoExprField); by default
        `visit_prim_expr`'s."""
        return self.visit_prim_expr(e)
