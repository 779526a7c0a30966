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

As in TVM, each rewrite is a mutator overriding a few hooks of the shared Relax
ExprMutator (irtool.ir.relax_visitor), and the plan is an ExprVisitor.

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

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import (
    ExprMutator,
    ExprVisitor,
    normalize_blocks,
    same_struct_info,
    struct_info_of,
    tir_vars,
)
from irtool.transform import ModulePass, register

# ----------------------------------------------------------------------------- struct info


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
                if any(a is not b for a, b in zip(nv, v)):
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


class _VarCollector(ExprVisitor):
    """The Relax variables an expression binds and uses (TVM's VarVisitor, which visits no
    struct info; a shape variable in a use's struct info counts as used, too)."""

    def __init__(self) -> None:
        self.bound: dict = {}
        self.used: dict = {}

    def visit_var_(self, v: rx.Var) -> None:
        self.used[v] = None
        if isinstance(v.struct_info, rx.TensorStructInfo) and isinstance(v.struct_info.shape, rx.Var):
            self.visit_expr(v.struct_info.shape)

    def visit_var_def(self, v: rx.Var) -> None:
        self.bound[v] = None

    def visit_struct_info(self, s) -> None:
        pass


def _collect_vars(expr) -> _VarCollector:
    collector = _VarCollector()
    collector.visit_expr(expr)
    return collector


def free_vars(expr) -> list:
    c = _collect_vars(expr)
    return [v for v in c.used if v not in c.bound]


def all_vars(expr) -> list:
    c = _collect_vars(expr)
    return list(dict.fromkeys([*c.bound, *c.used]))


# ----------------------------------------------------------------------------- 1. symbolic variables


class _RuntimePrimVars(ExprVisitor):
    """TIR variables used by the computation itself (in R.prim_value), not only in struct
    info or shape values (TVM's RuntimePrimVarCollector)."""

    def __init__(self) -> None:
        self.vars: set = set()

    def visit_prim_value_(self, e: rx.PrimValue) -> None:
        self.vars.update(tir_vars(e.value))

    def visit_struct_info(self, s) -> None:
        pass


def _runtime_prim_vars(body) -> set:
    collector = _RuntimePrimVars()
    collector.visit_expr(body)
    return collector.vars


class _SymbolicVarCanonicalizer(ExprMutator):
    """TVM's SymbolicVarCanonicalizer: struct info size fields and shape values are
    rewritten with the values match_casts imply (scoped per function and if-branch)."""

    normalize_all_blocks = True  # as TVM's ExprMutator (see relax_visitor)

    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.known: dict = {}  # tir.Var -> (value, the MatchCast that implied it)
        self.runtime_uses: set = set()
        self.canonicalize = True

    def canonical(self, e):
        out = _substitute(e, {v: value for v, (value, _) in self.known.items()})
        return e if out is e else _simplify(out)

    def visit_struct_info_prim_field(self, e):
        return self.canonical(e) if self.canonicalize else e

    def visit_shape_expr_(self, e: rx.ShapeExpr):
        if not self.canonicalize:
            return e
        values = tuple(self.canonical(v) for v in e.values)
        return e if all(a is b for a, b in zip(values, e.values)) else rx.ShapeExpr(values, e.span)

    def visit_function_(self, fn: rx.Function):
        saved = dict(self.known), self.runtime_uses
        self.runtime_uses = _runtime_prim_vars(fn.body)
        try:
            return super().visit_function_(fn)
        finally:
            self.known, self.runtime_uses = saved

    def visit_match_cast(self, b: rx.MatchCast) -> None:
        runtime_use = False
        for var, value in _infer_symbolic_var_map(b.var.struct_info, struct_info_of(b.value, self.mod)).items():
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
            super().visit_match_cast(b)
        finally:
            self.canonicalize = saved

    def visit_if_(self, e: rx.If):
        cond = self.visit_expr(e.cond)
        saved = dict(self.known)
        t = self.visit_expr(e.true_branch)
        self.known = dict(saved)
        f = self.visit_expr(e.false_branch)
        self.known = saved
        # The branches may know different values of a symbol (one is specialised for
        # N == 16): each ends in a match_cast back to the if's struct info, which the
        # generic LCA would otherwise reduce to `ndim` only. TVM's mutator rebuilds every
        # branch, so this applies to unchanged branches too (a loop's else branch returning
        # its (d, 2) parameter where the if is ndim=2).
        s = self.visit_struct_info(e.struct_info)
        if cond is e.cond and t is e.true_branch and f is e.false_branch and (
                s is None or (same_struct_info(s, struct_info_of(t, self.mod))
                              and same_struct_info(s, struct_info_of(f, self.mod)))):
            return e
        if s is not None:
            t = self._cast_branch(t, "then_branch_with_dyn", s)
            f = self._cast_branch(f, "else_branch_with_dyn", s)
        return self.normalize(rx.If(cond, t, f, e.span), e, s)

    def _cast_branch(self, branch: rx.SeqExpr, name: str, s) -> rx.SeqExpr:
        if same_struct_info(s, struct_info_of(branch, self.mod)):
            return branch
        var = rx.Var(name, s)
        blocks = normalize_blocks([rx.BindingBlock([rx.MatchCast(var, branch, s)])])
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


class _Planner(ExprVisitor):
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
        self.visit_expr(fn)
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

    def visit_var_(self, v: rx.Var) -> None:
        if not self.inside_dataflow() or (v in self.def_blocks and self.block is not None
                                          and self.block is not self.def_blocks[v]):
            self.used_outside.add(v)
        if self.in_function <= 1:  # not inside a nested function
            self.use_sites.append((v, self.block, self.user))
        self.visit_struct_info(v.struct_info)

    def visit_seq_expr_(self, e: rx.SeqExpr) -> None:
        saved, self.block = self.block, None  # nested scopes (if-branches) start afresh
        super().visit_seq_expr_(e)
        self.block = saved

    def visit_binding_block(self, block: rx.BindingBlock) -> None:
        self.block = block
        super().visit_binding_block(block)
        self.block = None

    def visit_function_(self, fn: rx.Function) -> None:
        saved, self.block = self.block, None
        self.used_outside.update(free_vars(fn))  # what a closure captures escapes
        for p in fn.params:
            self.visit_var_def(p)
        self.in_function += 1
        self.visit_expr(fn.body)
        self.in_function -= 1
        self.block = saved

    def visit_var_def(self, v: rx.Var) -> None:
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
            tuple_sinfo = struct_info_of(first.tuple_value, self.mod)
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

    def visit_binding(self, b) -> None:
        same_sinfo = isinstance(b, rx.VarBinding) or same_struct_info(b.var.struct_info,
                                                                      struct_info_of(b.value, self.mod))
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
        self.visit_expr(b.value)
        self.user = saved
        if isinstance(b, rx.MatchCast):
            self.visit_struct_info(b.struct_info)
        self.visit_var_def(b.var)


class _BindingCanonicalizer(ExprMutator):
    """TVM's BindingCanonicalizer: carries out the plan (removed bindings, replaced uses
    and definitions, inlined constants), then folds dataflow outputs."""

    normalize_all_blocks = True  # as TVM's ExprMutator (see relax_visitor)

    def __init__(self, mod: IRModule, planner: _Planner, fn: rx.Function) -> None:
        super().__init__(mod)
        self.plan = planner.plan(fn)
        self.planner = planner
        self.block = None  # the (input) block being rewritten
        self.bound_value = None  # the value of the binding being rewritten

    def visit_tuple_getitem_(self, e: rx.TupleGetItem):
        # A projection inside another expression is, in TVM's normal form, a binding of
        # its own (`lv = t[0]`), which the plan would fold: a projection of a known tuple
        # becomes the field. A binding's own value is left to the plan.
        if e is not self.bound_value:
            field = self.planner.unwrap_known_value(e)
            if field is not None and not self.foreign(field):
                return self.visit_expr(field)
        return super().visit_tuple_getitem_(e)

    def foreign(self, v) -> bool:
        """Is `v`, once replaced, a DataflowVar of another block than the one rewritten?"""
        final = v
        while final in self.plan.replace_usage:
            final = self.plan.replace_usage[final]
        return isinstance(final, rx.DataflowVar) and self.planner.def_blocks.get(v) is not self.block

    def visit_binding(self, b) -> None:
        if b.var not in self.plan.remove:
            self.bound_value = b.value
            super().visit_binding(b)

    def visit_var_def(self, v: rx.Var) -> rx.Var:
        while v in self.plan.replace_binding:
            v = self.plan.replace_binding[v]
        return super().visit_var_def(v)

    def visit_var_(self, v: rx.Var):
        while v in self.plan.replace_usage:
            v = self.plan.replace_usage[v]
        if v in self.plan.inline_constant:
            return self.visit_expr(self.plan.inline_constant[v])
        return super().visit_var_(v)

    def visit_binding_block(self, block):
        saved, self.block = self.block, block
        new = super().visit_binding_block(block)
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
