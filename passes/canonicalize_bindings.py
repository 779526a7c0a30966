"""canonicalize-bindings: fold trivial bindings and redundant match_casts in Relax functions.

TVM 0.27's CanonicalizeBindings (relax/transform/canonicalize_bindings.cc): two rewrites of
every Relax function, run as TVM's pass does: 1, then 1 again and 2.

  1. Symbolic variables (CanonicalizeTIRVariables). A match_cast whose pattern's TIR
     variables are determined by its value's struct info records them:
         z = R.match_cast(x: R.Tensor((m, n)), R.Tensor((o, p)))     knows o = m, p = n
     and struct info and shape values later in scope use the known values (folded).
     A match_cast defining a variable used at run time (in an R.prim_value) keeps its
     own pattern. Conflicting definitions are an error; each if-branch has its own
     knowledge, and a branch whose struct info became more specific ends in a match_cast
     back to the if's struct info.
  2. Bindings (CanonicalizeRelaxBindings): a plan, then a rewrite.
         y = x   (a var, or a match_cast that changes no struct info): uses of y become
                 x and the binding goes; but for `gv = lv` (gv used after lv's dataflow
                 block) lv's binding becomes gv's instead, so no DataflowVar escapes;
         y = t[i] of a known tuple t = (..): a trivial binding of the field;
         y = (t[0], .., t[n-1]) of a whole n-tuple t: a trivial binding of t;
         y bound to a constant (directly or so): uses of y become the constant;
         a Var bound in a dataflow block and used only there becomes a DataflowVar
                 (it stops being a block output);
     then, per dataflow block, `gv = lv` where lv is used nowhere else becomes gv bound
     to lv's value.
     As in TVM's ExprMutator, a value whose operands changed gets its struct info
     deduced again, and its variable takes that struct info when it differs; SeqExprs
     lose empty blocks and merge neighbouring ones.

Bindings left unused stay: removing them is dead-code-elimination's job. Like TVM's, the
pass is not idempotent: a second run may drop outputs that only a folded binding used
and inline constants bound to outputs (tests/test_pass_relax.py compares both runs with
TVM's on random programs).

Deviations: where TVM 0.27 would fold `a = t[0]` (t an earlier dataflow block's output)
into that block's DataflowVar and so use it outside its block (ill-formed; TVM's own
well_formed rejects it), the trivial binding closest to the crossing is kept. TVM simplifies
substituted symbolic expressions with its arithmetic analyzer; here constants fold and
`x + 0`, `x * 1` and the like simplify, but e.g. `(a + b) - a` stays. Two definitions of a
symbolic variable conflict only if both are constants. Struct info of rebuilt SeqExprs and
ifs is not erased to the variables defined in scope.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.analysis import struct_info as si
from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import GlobalVar
from irtool.ir.module import IRModule
from irtool.ir.node import Node
from irtool.transform import ModulePass, register

# ----------------------------------------------------------------------------- struct info


def _same(a, b) -> bool:
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
        return all(_same(getattr(a, f), getattr(b, f)) for f in type(a).fields)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _all_same(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _sinfo(e, mod: IRModule):
    """The struct info of an expression (a GlobalVar's is its function's signature)."""
    if isinstance(e, GlobalVar):
        fn = mod.functions.get(e.name_hint)
        return fn.struct_info if isinstance(fn, rx.Function) else rx.ObjectStructInfo()
    return e.struct_info


def _deduce(e, mod: IRModule, fallback):
    """The struct info TVM's normaliser gives a rebuilt expression; `fallback` (the old
    struct info) if it cannot be deduced."""
    try:
        if isinstance(e, rx.Tuple):
            return rx.TupleStructInfo([_sinfo(f, mod) for f in e.fields_])
        if isinstance(e, rx.TupleGetItem):
            t = _sinfo(e.tuple_value, mod)
            return t.fields_[e.index] if isinstance(t, rx.TupleStructInfo) else rx.ObjectStructInfo()
        if isinstance(e, rx.SeqExpr):
            return _sinfo(e.body, mod)
        if isinstance(e, rx.If):
            return si.lca(_sinfo(e.true_branch, mod), _sinfo(e.false_branch, mod))
        if isinstance(e, rx.Call):
            args = [_sinfo(a, mod) for a in e.args]
            if isinstance(e.op, (rx.Var, rx.Function, rx.ExternFunc, GlobalVar)):
                return si.deduce_func_call(_sinfo(e.op, mod), args)
            return si.deduce_call(e.op.name, args, e.attrs, list(e.args), list(e.sinfo_args))
    except si.StructInfoError:
        pass
    return fallback


def _tir_vars(e, out: set) -> set:
    if isinstance(e, tir.Var):
        out.add(e)
    elif isinstance(e, Node):
        for f in type(e).fields:
            _tir_vars(getattr(e, f), out)
    elif isinstance(e, (tuple, list)):
        for x in e:
            _tir_vars(x, out)
    return out


def _shape_values(sinfo):
    """The dimensions of a tensor or shape struct info, when known."""
    if isinstance(sinfo, rx.TensorStructInfo):
        if isinstance(sinfo.shape, tuple):
            return sinfo.shape
        if isinstance(sinfo.shape, rx.Var):
            return _shape_values(sinfo.shape.struct_info)
        return None
    if isinstance(sinfo, rx.ShapeStructInfo):
        return sinfo.values
    return None


def _infer_symbolic_var_map(pattern, value) -> dict:
    """TVM's InferSymbolicVarMap for `var: pattern = value`: the TIR variables of the
    pattern's tensor and shape dimensions (through tuples), mapped to the value's."""
    out: dict = {}

    def bind(p, v) -> None:
        if isinstance(p, rx.TensorStructInfo) and isinstance(v, rx.TensorStructInfo) or (
                isinstance(p, rx.ShapeStructInfo) and isinstance(v, rx.ShapeStructInfo)):
            pd, vd = _shape_values(p), _shape_values(v)
            if pd is not None and vd is not None and len(pd) == len(vd):
                for x, y in zip(pd, vd, strict=True):
                    if isinstance(x, tir.Var):
                        out[x] = y
        elif isinstance(p, rx.TupleStructInfo) and isinstance(v, rx.TupleStructInfo) and len(p) == len(v):
            for x, y in zip(p.fields_, v.fields_, strict=True):
                bind(x, y)

    bind(pattern, value)
    return out


# ----------------------------------------------------------------------------- symbolic arithmetic

_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b if b else None, "floormod": lambda a, b: a % b if b else None,
    "div": lambda a, b: int(a / b) if b else None, "truncdiv": lambda a, b: int(a / b) if b else None,
    "truncmod": lambda a, b: a - b * int(a / b) if b else None, "min": min, "max": max,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


def _int_of(e):
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return e
    if isinstance(e, tir.IntImm) and e.dtype.startswith(("int", "uint")):
        return e.value
    return None


def _as_prim(v, dtype: str) -> tir.PrimExpr:
    return tir.IntImm(v, dtype) if isinstance(v, int) else v


def _dtype_of(e) -> str:
    return "int64" if isinstance(e, int) else e.dtype


def _simplify(e):
    """Constant folding and the identities of 0 and 1, bottom-up; an integer result is a
    Python int, as dimensions are."""
    if isinstance(e, tir.BinOp):
        a, b = _simplify(e.a), _simplify(e.b)
        ia, ib = _int_of(a), _int_of(b)
        if ia is not None and ib is not None and e.op in _FOLD:
            value = _FOLD[e.op](ia, ib)
            if value is not None:
                return tir.IntImm(int(value), "bool") if isinstance(value, bool) else value
        if e.op == "add" and ib == 0 or e.op in ("sub",) and ib == 0:
            return a
        if e.op == "add" and ia == 0:
            return b
        if e.op == "mul" and (ib == 1 or ia == 1):
            return a if ib == 1 else b
        if e.op == "mul" and (ia == 0 or ib == 0):
            return 0
        if e.op in ("floordiv", "div", "truncdiv") and ib == 1:
            return a
        if a is e.a and b is e.b:
            return e
        dtype = _dtype_of(e.a) if not isinstance(e.a, int) else _dtype_of(e.b)
        return tir.BinOp(e.op, _as_prim(a, dtype), _as_prim(b, dtype), e.span)
    if isinstance(e, tir.IntImm) and e.dtype == "int64":
        return e.value
    return e


def _substitute(e, known: dict):
    """`e` with the known TIR variables replaced (the same object if none occurs)."""
    if isinstance(e, tir.Var):
        return known.get(e, e)
    if isinstance(e, tir.BinOp):
        a, b = _substitute(e.a, known), _substitute(e.b, known)
        if a is e.a and b is e.b:
            return e
        dtype = e.a.dtype
        return tir.BinOp(e.op, _as_prim(a, dtype), _as_prim(b, dtype), e.span)
    if isinstance(e, tir.PrimExpr) and type(e).fields:
        changes = {}
        for f in type(e).fields:
            v = getattr(e, f)
            if isinstance(v, tir.PrimExpr):
                nv = _substitute(v, known)
                if nv is not v:
                    changes[f] = _as_prim(nv, v.dtype)
            elif isinstance(v, tuple) and any(isinstance(x, tir.PrimExpr) for x in v):
                nv = tuple(_as_prim(_substitute(x, known), x.dtype) if isinstance(x, tir.PrimExpr) else x for x in v)
                if not _all_same(nv, v):
                    changes[f] = nv
        return e.replace(**changes) if changes else e
    return e


def _prim_text(e) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, tir.IntImm):
        return str(e.value)
    if isinstance(e, tir.Var):
        return e.name
    if isinstance(e, tir.BinOp):
        token, infix, _ = tir.BINARY_OPS[e.op]
        if infix:
            return f"({_prim_text(e.a)} {token} {_prim_text(e.b)})"
        return f"{token}({_prim_text(e.a)}, {_prim_text(e.b)})"
    return repr(e)


def _provably_different(a, b) -> bool:
    ia, ib = _int_of(_simplify(a)), _int_of(_simplify(b))
    return ia is not None and ib is not None and ia != ib


# ----------------------------------------------------------------------------- variables of expressions


def _walk_vars(expr, bound: dict, used: dict) -> None:
    """Relax variables bound inside `expr` and used by it (struct info shape variables
    count as uses, as TVM's visitors see them)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, rx.Var):
            used[e] = None
            if isinstance(e.struct_info, rx.TensorStructInfo) and isinstance(e.struct_info.shape, rx.Var):
                stack.append(e.struct_info.shape)
            continue
        if isinstance(e, rx.SeqExpr):
            bound.update((b.var, None) for block in e.blocks for b in block.bindings)
        elif isinstance(e, rx.Function):
            bound.update(dict.fromkeys(e.params))
        stack.extend(rx.sub_exprs(e))


def free_vars(expr) -> list:
    bound: dict = {}
    used: dict = {}
    _walk_vars(expr, bound, used)
    return [v for v in used if v not in bound]


def all_vars(expr) -> list:
    bound: dict = {}
    used: dict = {}
    _walk_vars(expr, bound, used)
    return list(dict.fromkeys([*bound, *used]))


def _normalize_blocks(blocks) -> list:
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
        flat.append(block if len(current) == len(block.bindings) and all(
            x is y for x, y in zip(current, block.bindings, strict=True)) else type(block)(current, block.span))
    return rx.merge_blocks(flat)


# ----------------------------------------------------------------------------- the mutator


class _Mutator:
    """TVM's relax ExprMutator with the BlockBuilder's normalisation: a rebuilt expression
    gets its struct info deduced, a binding whose value changed struct info gets a new
    variable (later uses are remapped), SeqExprs lose empty blocks and merge neighbours.
    Unchanged parts are returned as the same objects."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.var_remap: dict = {}
        self.in_dataflow = False

    # -- hooks
    def visit_prim_field(self, e):
        return e

    def visit_shape_expr(self, e: rx.ShapeExpr):
        return e

    def visit_var_use(self, v: rx.Var):
        return self.var_remap.get(v, v)

    def visit_var_def(self, v: rx.Var) -> rx.Var:
        s = self.visit_sinfo(v.struct_info)
        return v if s is v.struct_info else type(v)(v.name_hint, s, v.span)

    def visit_sinfo(self, s):
        if isinstance(s, rx.TensorStructInfo):
            if isinstance(s.shape, tuple):
                dims = tuple(self.visit_prim_field(d) for d in s.shape)
                return s if _all_same(dims, s.shape) else s.replace(shape=dims)
            if isinstance(s.shape, rx.Var):
                shape = self.visit_expr(s.shape)
                if shape is s.shape:
                    return s
                return s.replace(shape=shape.values if isinstance(shape, rx.ShapeExpr) else shape)
            return s
        if isinstance(s, rx.ShapeStructInfo) and s.values is not None:
            values = tuple(self.visit_prim_field(d) for d in s.values)
            return s if _all_same(values, s.values) else rx.ShapeStructInfo(values, span=s.span)
        if isinstance(s, rx.PrimStructInfo) and s.value is not None:
            value = self.visit_prim_field(s.value)
            return s if value is s.value else rx.PrimStructInfo(s.dtype, value, s.span)
        if isinstance(s, rx.TupleStructInfo):
            fields = tuple(self.visit_sinfo(f) for f in s.fields_)
            return s if _all_same(fields, s.fields_) else rx.TupleStructInfo(fields, s.span)
        return s  # function struct info does not depend on values in scope

    def with_sinfo(self, var: rx.Var, s) -> rx.Var:
        if s is None or var.struct_info is s or _same(var.struct_info, s):
            return var
        return type(var)(var.name_hint, s, var.span)

    # -- expressions
    def visit_expr(self, e):
        if isinstance(e, rx.Var):
            return self.visit_var_use(e)
        if isinstance(e, rx.Call):
            return self.visit_call(e)
        if isinstance(e, rx.Tuple):
            fields = tuple(self.visit_expr(f) for f in e.fields_)
            if _all_same(fields, e.fields_):
                return e
            return self._new(rx.Tuple(fields, e.span), e.struct_info)
        if isinstance(e, rx.TupleGetItem):
            t = self.visit_expr(e.tuple_value)
            return e if t is e.tuple_value else self._new(rx.TupleGetItem(t, e.index, e.span), e.struct_info)
        if isinstance(e, rx.SeqExpr):
            return self.visit_seq(e)
        if isinstance(e, rx.If):
            return self.visit_if(e)
        if isinstance(e, rx.Function):
            return self.visit_function(e)
        if isinstance(e, rx.ShapeExpr):
            return self.visit_shape_expr(e)
        return e

    def _new(self, e, fallback):
        e.struct_info = _deduce(e, self.mod, fallback)
        return e

    def visit_call(self, e: rx.Call):
        op = self.visit_expr(e.op) if isinstance(e.op, rx.Expr) else e.op
        sinfo_args = tuple(self.visit_sinfo(s) for s in e.sinfo_args)
        args = tuple(self.visit_expr(a) for a in e.args)
        unchanged = op is e.op and _all_same(sinfo_args, e.sinfo_args) and _all_same(args, e.args)
        ret = self.visit_sinfo(e.struct_info)
        if unchanged and ret is e.struct_info:
            return e
        call = rx.Call(op, args, e.attrs, sinfo_args, e.span)
        if unchanged:  # only the result's struct info changed: it is authoritative
            call.struct_info = ret
            return call
        return self._new(call, ret)

    def visit_if(self, e: rx.If):
        cond = self.visit_expr(e.cond)
        t, f = self.visit_expr(e.true_branch), self.visit_expr(e.false_branch)
        s = self.visit_sinfo(e.struct_info)
        if cond is e.cond and t is e.true_branch and f is e.false_branch and s is e.struct_info:
            return e
        return self._new(rx.If(cond, t, f, e.span), e.struct_info)

    def visit_seq(self, seq: rx.SeqExpr):
        blocks = [self.visit_block(b) for b in seq.blocks]
        body = self.visit_expr(seq.body)
        s = self.visit_sinfo(seq.struct_info)
        new_blocks = _normalize_blocks(blocks)
        if body is seq.body and s is seq.struct_info and _all_same(new_blocks, seq.blocks):
            return seq
        return self._new(rx.SeqExpr(new_blocks, body, seq.span), s)

    def visit_function(self, fn: rx.Function):
        params, changed = [], False
        for p in fn.params:
            new = self.visit_var_def(p)
            if new is not p:
                self.var_remap[p] = new
                changed = True
            params.append(new)
        ret = self.visit_sinfo(fn.ret_struct_info) if changed else fn.ret_struct_info
        body = self.visit_expr(fn.body)
        if not changed and body is fn.body:
            return fn
        body_sinfo = _sinfo(body, self.mod) if body.struct_info is not None else _sinfo(body.body, self.mod)
        if ret is None or body_sinfo is not None and not si.is_base_of(body_sinfo, ret):
            # the body became more specific than (or incompatible with) the old result
            defined = _tir_vars([p.struct_info for p in params], set())
            ret = si.erase_to_well_defined(body_sinfo, defined) if body_sinfo is not None else ret
        return rx.Function(params, body, ret, fn.is_pure, fn.attrs, fn.private, fn.span)

    # -- bindings
    def visit_block(self, block):
        out: list = []
        saved, self.in_dataflow = self.in_dataflow, isinstance(block, rx.DataflowBlock)
        for b in block.bindings:
            self.visit_binding(b, out)
        self.in_dataflow = saved
        return block if _all_same(out, block.bindings) else type(block)(out, block.span)

    def visit_value(self, e):
        """The value of a binding (a hook: TVM binds every other non-leaf expression)."""
        return self.visit_expr(e)

    def visit_binding(self, b, out: list) -> None:
        if isinstance(b, rx.MatchCast):
            self.visit_match_cast(b, out)
        else:
            self.re_emit(b, self.visit_value(b.value), out)

    def re_emit(self, b: rx.VarBinding, value, out: list) -> None:
        new_var = self.visit_var_def(b.var)
        if new_var is b.var and value is b.value:
            out.append(b)
            return
        visited = new_var
        new_var = self.with_sinfo(new_var, _sinfo(value, self.mod))
        self.var_remap[b.var] = self.var_remap[visited] = self.var_remap[new_var] = new_var
        out.append(rx.VarBinding(new_var, value, b.span))

    def visit_match_cast(self, b: rx.MatchCast, out: list) -> None:
        value = self.visit_value(b.value)
        sinfo = self.visit_sinfo(b.struct_info)
        new_var = self.visit_var_def(b.var)
        if new_var is b.var and value is b.value and sinfo is b.struct_info:
            out.append(b)
            return
        visited = new_var
        new_var = self.with_sinfo(new_var, sinfo)
        self.var_remap[b.var] = self.var_remap[visited] = self.var_remap[new_var] = new_var
        if isinstance(value, (rx.Call, rx.TupleGetItem, rx.If, rx.SeqExpr, rx.Function)):
            # TVM's NormalizeArgument: a match_cast re-emitted with a compound value (left
            # by the output folding below) casts a variable bound to it just before
            lv = (rx.DataflowVar if self.in_dataflow else rx.Var)("lv", _sinfo(value, self.mod))
            out.append(rx.VarBinding(lv, value))
            value = lv
        out.append(rx.MatchCast(new_var, value, sinfo, b.span))


# ----------------------------------------------------------------------------- 1. symbolic variables


def _runtime_prim_vars(body) -> set:
    """TIR variables used by the computation itself (in R.prim_value), not only in struct
    info or shape values (TVM's RuntimePrimVarCollector)."""
    out: set = set()
    stack = [body]
    while stack:
        e = stack.pop()
        if isinstance(e, rx.PrimValue):
            _tir_vars(e.value, out)
        stack.extend(rx.sub_exprs(e))
    return out


class _SymbolicVarCanonicalizer(_Mutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.known: dict = {}  # tir.Var -> (value, the MatchCast that implied it)
        self.runtime_uses: set = set()
        self.canonicalize = True

    def canonical(self, e):
        out = _substitute(e, {v: value for v, (value, _) in self.known.items()})
        return e if out is e else _simplify(out)

    def visit_prim_field(self, e):
        return self.canonical(e) if self.canonicalize else e

    def visit_shape_expr(self, e: rx.ShapeExpr):
        if not self.canonicalize:
            return e
        values = tuple(self.canonical(v) for v in e.values)
        return e if _all_same(values, e.values) else rx.ShapeExpr(values, e.span)

    def visit_function(self, fn: rx.Function):
        saved = dict(self.known), self.runtime_uses
        self.runtime_uses = _runtime_prim_vars(fn.body)
        try:
            return super().visit_function(fn)
        finally:
            self.known, self.runtime_uses = saved

    def visit_match_cast(self, b: rx.MatchCast, out: list) -> None:
        runtime_use = False
        for var, value in _infer_symbolic_var_map(b.var.struct_info, _sinfo(b.value, self.mod)).items():
            runtime_use = runtime_use or var in self.runtime_uses
            if var in self.known:
                old, source = self.known[var]
                if _provably_different(old, value):
                    raise DiagnosticError(
                        "MatchCast statements must be consistent.  However, the definition of Relax variable "
                        f"`{source.var.name_hint}` implies that TIR variable `{var.name}` is {_prim_text(old)}, "
                        f"while the later definition of Relax variable `{b.var.name_hint}` instead implies that "
                        f"TIR variable `{var.name}` is {_prim_text(value)}", b.span)
            else:
                self.known[var] = (value, b)
        # a match_cast defining a symbol the computation uses keeps its own pattern
        saved, self.canonicalize = self.canonicalize, not runtime_use
        try:
            super().visit_match_cast(b, out)
        finally:
            self.canonicalize = saved

    def visit_if(self, e: rx.If):
        cond = self.visit_expr(e.cond)
        saved = dict(self.known)
        t = self.visit_expr(e.true_branch)
        self.known = dict(saved)
        f = self.visit_expr(e.false_branch)
        self.known = saved
        if cond is e.cond and t is e.true_branch and f is e.false_branch:
            return e
        # The branches may know different values of a symbol (one is specialised for
        # N == 16): each ends in a match_cast back to the if's struct info, which the
        # generic LCA would otherwise reduce to `ndim` only.
        s = self.visit_sinfo(e.struct_info)
        if s is not None:
            t = self._cast_branch(t, "then_branch_with_dyn", s)
            f = self._cast_branch(f, "else_branch_with_dyn", s)
        return self._new(rx.If(cond, t, f, e.span), s)

    def _cast_branch(self, branch: rx.SeqExpr, name: str, s) -> rx.SeqExpr:
        if _same(s, _sinfo(branch, self.mod)):
            return branch
        var = rx.Var(name, s)
        blocks = _normalize_blocks([rx.BindingBlock([rx.MatchCast(var, branch, s)])])
        out = rx.SeqExpr(blocks, var, branch.span)
        out.struct_info = s
        return out


# ----------------------------------------------------------------------------- 2. bindings


@dataclass
class _Plan:
    replace_usage: dict
    replace_binding: dict
    remove: set
    inline_constant: dict


def _chain_end(v, trivial: dict, root: dict):
    """The end of the chain of trivial bindings from `v` (TVM's unwrapping loop); the chain's
    nodes are remembered in `root`, so that long alias chains stay linear."""
    chain = []
    while v in trivial:
        if v in root:
            v = root[v]
            break
        chain.append(v)
        v = trivial[v]
    for c in chain:
        root[c] = v
    return v


class _Planner:
    """TVM's CanonicalizePlanner: finds the trivial bindings, the bindings of constants and
    known tuples, and the variables used outside their dataflow block."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.block = None
        self.def_blocks: dict = {}
        self.trivial: dict = {}
        self.known_bindings: dict = {}
        self.unwrapped: dict = {}
        self.known_constant: dict = {}
        self.defined_in_dataflow: dict = {}
        self.used_outside: set = set()
        self.use_sites: list = []  # (variable, block, binding whose value uses it)
        self.user = None
        self.in_function = 0
        self.new_var_blocks: dict = {}

    def plan(self, fn) -> _Plan:
        self.expr(fn)
        # Deviation from TVM 0.27: through a projection of an earlier block's output tuple
        # (`a = t[0]`, t = (f, ..) an output of the block defining the DataflowVar f) TVM
        # may use f outside its block, which is ill-formed (TVM's own well_formed says so).
        # Such a use keeps the trivial binding that led to it ("pinned"); the plan is TVM's
        # whenever TVM's result is well-formed.
        pinned: set = set()
        while True:
            plan = self.make_plan(pinned)
            bad = self.foreign_uses(plan, pinned) - pinned
            if not bad:
                return plan
            pinned |= bad

    def make_plan(self, pinned: set) -> _Plan:
        """TVM's plan, the pinned variables' bindings not counting as trivial."""
        trivial = {v: t for v, t in self.trivial.items() if v not in pinned}
        replace_usage: dict = {}
        replace_binding: dict = {}
        remove: set = set()
        self.new_var_blocks: dict = {}
        # a Var bound in a dataflow block and used only there can be a DataflowVar
        for var in self.defined_in_dataflow:
            if not isinstance(var, rx.DataflowVar) and var not in self.used_outside:
                new = rx.DataflowVar(var.name_hint, var.struct_info, var.span)
                replace_binding[var] = replace_usage[var] = new
                self.new_var_blocks[new] = self.def_blocks.get(var)
        root: dict = {}  # the end of each chain of trivial bindings (path-compressed)
        for bound_var, bound_to in trivial.items():
            bound_to = _chain_end(bound_to, trivial, root)  # a trivial binding of a trivial one
            while bound_to in replace_binding:  # already replaced (Var = DataflowVar)
                bound_to = replace_binding[bound_to]
            if (isinstance(bound_var, rx.DataflowVar) or not isinstance(bound_to, rx.DataflowVar)
                    or bound_var not in self.used_outside):
                # Var = Var, DataflowVar = Var or DataflowVar, or Var = DataflowVar with
                # the Var used only inside the block: use the bound variable directly
                replace_usage[bound_var] = bound_to
            else:
                # Var = DataflowVar, the Var used after the block: bind the Var instead
                replace_binding[bound_to] = replace_usage[bound_to] = bound_var
            remove.add(bound_var)
        return _Plan(replace_usage, replace_binding, remove, dict(self.known_constant))

    def foreign_uses(self, plan: _Plan, pinned: set) -> set:
        """For each (surviving) use the plan would turn into a DataflowVar of another block:
        the binding to pin, the last of the chain of trivial bindings that is not in that
        DataflowVar's block."""
        bad = set()
        for var, block, user in self.use_sites:
            if user in plan.remove:
                continue  # the use goes with its binding
            final = var
            while final in plan.replace_usage:
                final = plan.replace_usage[final]
            if final in plan.inline_constant or not isinstance(final, rx.DataflowVar):
                continue
            home = self.new_var_blocks[final] if final in self.new_var_blocks else self.def_blocks.get(final)
            if home is block or var not in self.trivial:
                continue
            chain = [var]
            while chain[-1] in self.trivial and chain[-1] not in pinned and chain[-1] is not final:
                chain.append(self.trivial[chain[-1]])
            outside = [v for v in chain if v in self.trivial and self.def_blocks.get(v) is not home]
            bad.add(outside[-1] if outside else var)
        return bad

    def inside_dataflow(self) -> bool:
        return isinstance(self.block, rx.DataflowBlock)

    def use(self, v: rx.Var) -> None:
        if not self.inside_dataflow() or (v in self.def_blocks and self.block is not None
                                          and self.block is not self.def_blocks[v]):
            self.used_outside.add(v)
        if self.in_function <= 1:  # not inside a nested function
            self.use_sites.append((v, self.block, self.user))
        self.sinfo(v.struct_info)

    def sinfo(self, s) -> None:
        if isinstance(s, rx.TensorStructInfo) and isinstance(s.shape, rx.Var):
            self.use(s.shape)
        elif isinstance(s, rx.TupleStructInfo):
            for f in s.fields_:
                self.sinfo(f)

    def expr(self, e) -> None:
        if isinstance(e, rx.Var):
            self.use(e)
        elif isinstance(e, rx.Call):
            if isinstance(e.op, rx.Expr):
                self.expr(e.op)
            for s in e.sinfo_args:
                self.sinfo(s)
            for a in e.args:
                self.expr(a)
        elif isinstance(e, rx.Tuple):
            for f in e.fields_:
                self.expr(f)
        elif isinstance(e, rx.TupleGetItem):
            self.expr(e.tuple_value)
        elif isinstance(e, rx.If):
            self.expr(e.cond)
            self.expr(e.true_branch)
            self.expr(e.false_branch)
        elif isinstance(e, rx.SeqExpr):
            saved, self.block = self.block, None  # nested scopes (if-branches) start afresh
            for block in e.blocks:
                self.block = block
                for b in block.bindings:
                    self.binding(b)
                self.block = None
            self.expr(e.body)
            self.block = saved
        elif isinstance(e, rx.Function):
            saved, self.block = self.block, None
            self.used_outside.update(free_vars(e))  # what a closure captures escapes
            for p in e.params:
                self.var_def(p)
            self.in_function += 1
            self.expr(e.body)
            self.in_function -= 1
            self.block = saved

    def var_def(self, v: rx.Var) -> None:
        if self.inside_dataflow():
            self.defined_in_dataflow[v] = None

    def unwrap(self, x):
        """A variable's value through chains of known bindings (memoised: each variable is
        bound once, so its answer never changes, and long alias chains stay linear)."""
        chain = []
        while isinstance(x, rx.Var) and x in self.known_bindings:
            if x in self.unwrapped:
                x = self.unwrapped[x]
                break
            chain.append(x)
            x = self.known_bindings[x]
        for v in chain:
            self.unwrapped[v] = x
        return x

    def unwrap_known_value(self, e):
        unwrap = self.unwrap
        if isinstance(e, rx.TupleGetItem):
            t = unwrap(e.tuple_value)
            if isinstance(t, rx.Tuple):
                return t.fields_[e.index]
        if isinstance(e, rx.Tuple) and e.fields_:
            first = unwrap(e.fields_[0])
            if not isinstance(first, rx.TupleGetItem):
                return None
            tuple_sinfo = _sinfo(first.tuple_value, self.mod)
            if not isinstance(tuple_sinfo, rx.TupleStructInfo) or len(tuple_sinfo) != len(e.fields_):
                return None
            earlier = unwrap(first.tuple_value)
            for i, f in enumerate(e.fields_):
                element = unwrap(f)
                if not isinstance(element, rx.TupleGetItem) or element.index != i:
                    return None
                if unwrap(element.tuple_value) is not earlier:
                    return None
            return earlier
        return None

    def binding(self, b) -> None:
        same_sinfo = isinstance(b, rx.VarBinding) or _same(b.var.struct_info, _sinfo(b.value, self.mod))
        value = b.value
        unwrapped = self.unwrap_known_value(value)
        if unwrapped is not None:
            value = unwrapped
        if isinstance(value, rx.Var) and same_sinfo:
            self.trivial[b.var] = value
        if isinstance(value, rx.Constant):
            self.known_constant[b.var] = value
        self.known_bindings[b.var] = value
        self.def_blocks[b.var] = self.block
        saved, self.user = self.user, b.var
        self.expr(b.value)
        self.user = saved
        if isinstance(b, rx.MatchCast):
            self.sinfo(b.struct_info)
        self.var_def(b.var)


class _BindingCanonicalizer(_Mutator):
    def __init__(self, mod: IRModule, planner: _Planner, fn: rx.Function) -> None:
        super().__init__(mod)
        self.plan = planner.plan(fn)
        self.planner = planner
        self.block = None  # the (input) block being rewritten

    def visit_expr(self, e):
        # A projection inside another expression is, in TVM's normal form, a binding of
        # its own (`lv = t[0]`), which the plan would fold: a projection of a known tuple
        # becomes the field.
        if isinstance(e, rx.TupleGetItem):
            field = self.planner.unwrap_known_value(e)
            if field is not None and not self.foreign(field):
                return self.visit_expr(field)
        return super().visit_expr(e)

    def foreign(self, v) -> bool:
        """Is `v`, once replaced, a DataflowVar of another block than the one rewritten?"""
        final = v
        while final in self.plan.replace_usage:
            final = self.plan.replace_usage[final]
        return isinstance(final, rx.DataflowVar) and self.planner.def_blocks.get(v) is not self.block

    def visit_value(self, e):
        if isinstance(e, rx.TupleGetItem):  # a binding's own value is left to the plan
            return super().visit_expr(e)
        return self.visit_expr(e)

    def visit_binding(self, b, out: list) -> None:
        if b.var not in self.plan.remove:
            super().visit_binding(b, out)

    def visit_var_def(self, v: rx.Var) -> rx.Var:
        while v in self.plan.replace_binding:
            v = self.plan.replace_binding[v]
        return super().visit_var_def(v)

    def visit_var_use(self, v: rx.Var):
        while v in self.plan.replace_usage:
            v = self.plan.replace_usage[v]
        if v in self.plan.inline_constant:
            return self.visit_expr(self.plan.inline_constant[v])
        return super().visit_var_use(v)

    def visit_block(self, block):
        saved, self.block = self.block, block
        new = super().visit_block(block)
        self.block = saved
        return self.fold_outputs(new) if isinstance(new, rx.DataflowBlock) else new

    @staticmethod
    def fold_outputs(block: rx.DataflowBlock) -> rx.DataflowBlock:
        """`lv = value; gv = lv` with lv used nowhere else becomes `gv = value`."""
        disqualified: set = set()
        outputs: set = set()
        candidates: dict = {}
        for b in reversed(block.bindings):
            var, value = b.var, b.value
            if isinstance(var, rx.DataflowVar):
                rhs = all_vars(value) if isinstance(value, rx.Function) else free_vars(value)
                disqualified.update(v for v in rhs if isinstance(v, rx.DataflowVar))
                if var not in disqualified and var in outputs:
                    candidates[var] = value
            elif isinstance(value, rx.DataflowVar):
                if value in outputs:
                    disqualified.add(value)
                outputs.add(value)
            else:
                rhs = free_vars(value) if isinstance(value, rx.Function) else all_vars(value)
                disqualified.update(v for v in rhs if isinstance(v, rx.DataflowVar))
        if not candidates:
            return block
        bindings = []
        for b in block.bindings:
            if isinstance(b.var, rx.DataflowVar) and b.var in candidates:
                continue
            if not isinstance(b.var, rx.DataflowVar) and isinstance(b.value, rx.DataflowVar) \
                    and b.value in candidates:
                b = b.replace(value=candidates[b.value])
            bindings.append(b)
        return rx.DataflowBlock(bindings, block.span)


def canonicalize_tir_variables(fn: rx.Function, mod: IRModule) -> rx.Function:
    return _SymbolicVarCanonicalizer(mod).visit_expr(fn)


def canonicalize_relax_bindings(fn: rx.Function, mod: IRModule) -> rx.Function:
    return _BindingCanonicalizer(mod, _Planner(mod), fn).visit_expr(fn)


def canonicalize_bindings(fn: rx.Function, mod: IRModule) -> rx.Function:
    """TVM's CanonicalizeBindings(expr) on one function."""
    return canonicalize_relax_bindings(canonicalize_tir_variables(fn, mod), mod)


def _each_relax_function(mod: IRModule, rewrite) -> IRModule:
    functions, changed = {}, False
    for name, fn in mod.functions.items():
        new = rewrite(fn, mod) if isinstance(fn, rx.Function) else fn
        changed |= new is not fn
        functions[name] = new
    if not changed:
        return mod
    out = mod.with_functions(functions)
    out.bare = mod.bare
    return out


@register
@dataclass(frozen=True)
class CanonicalizeBindings(ModulePass):
    name = "canonicalize-bindings"
    tvm_name = "CanonicalizeBindings"
    opt_level = 0  # TVM's Sequential is registered at 0 (its two function passes at 1)
    summary = "Fold trivial Relax bindings and match_casts, canonicalise dataflow outputs"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        # TVM's Sequential: CanonicalizeTIRVariables, then CanonicalizeRelaxBindings, whose
        # function is CanonicalizeBindings(f): the symbolic rewrite once more, then bindings
        mod = _each_relax_function(mod, canonicalize_tir_variables)
        return _each_relax_function(mod, canonicalize_bindings)
