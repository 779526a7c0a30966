"""The verifier: is a module well formed? Run after parsing and after every pass.

    scoping            a variable bound by a parameter or a let is used only inside the
                       function or let body that binds it (free variables are fine)
    single definition  each variable is bound once in the whole module
    calls              the operator exists, takes that many arguments, and the attributes
                       fit its declaration
    primitive fns      `Primitive=1` functions are closed, typed, and contain only
                       operator calls, tuples and projections (what a fused kernel can be)
    types              once types have been inferred, they are re-checked

Each problem is a DiagnosticError. Free-variable sets are computed bottom-up once per
node (iteratively), so the check is linear in practice.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir.expr import Call, Constant, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.visitor import post_order, sub_exprs
from ..ops.registry import AttrError, lookup

_EMPTY: frozenset = frozenset()


def _where(fn_name: str) -> str:
    return f"in `@{fn_name}`: " if fn_name else ""


def verify(mod: IRModule, check_types: bool | None = None) -> None:
    binders: dict[Var, object] = {}
    checked_attrs: dict[tuple[str, int], object] = {}  # parsed calls share their attrs: check each once
    typed = False
    for name, fn in mod.items():
        nodes = post_order(fn)
        for node in nodes:
            cls = type(node)
            if cls is Function:
                for p in node.params:
                    _bind_once(binders, p, name)
                if node.is_primitive:
                    _check_primitive(node, name)
            elif cls is Let:
                _bind_once(binders, node.var, name)
            elif cls is Call:
                _check_call(node, name, checked_attrs)
            elif cls is GlobalVar and node.name_hint not in mod.functions:
                raise DiagnosticError(f"{_where(name)}call of undefined global function `@{node.name_hint}`",
                                      node.span)
            if not typed and node.checked_type is not None and cls is not Op:
                typed = True
        escaped = [v for v in _free_vars(nodes, fn) if v in binders]
        if escaped:
            v = escaped[0]
            raise DiagnosticError(f"{_where(name)}variable `%{v.name_hint}` is used outside the scope that binds it",
                                  v.span or fn.span)
    if check_types if check_types is not None else typed:
        from .type_infer import infer_types

        infer_types(mod)


def _bind_once(binders: dict, var: Var, fn_name: str) -> None:
    if var in binders:
        raise DiagnosticError(f"{_where(fn_name)}variable `%{var.name_hint}` is bound more than once", var.span)
    binders[var] = True


def _check_call(call: Call, fn_name: str, checked_attrs: dict) -> None:
    if type(call.op) is not Op:
        if call.attrs:
            raise DiagnosticError(f"{_where(fn_name)}only operator calls take attributes", call.span)
        return
    opdef = lookup(call.op.name)
    if opdef is None:
        raise DiagnosticError(f"{_where(fn_name)}unknown operator `{call.op.name}`", call.span)
    if len(call.args) != len(opdef.args):
        raise DiagnosticError(f"{_where(fn_name)}`{opdef.name}` takes {len(opdef.args)} arguments "
                              f"({', '.join(opdef.args)}), got {len(call.args)}", call.span)
    key = (opdef.name, id(call.attrs))
    if key in checked_attrs:
        return
    try:
        opdef.make_attrs(call.attrs)
    except AttrError as err:
        raise DiagnosticError(f"{_where(fn_name)}{err}", call.span) from None
    checked_attrs[key] = call.attrs  # held, so that its id is not reused for other attrs


def _free_vars(nodes: list, root) -> frozenset:
    """Variables used under `root` and not bound there (nodes: its post order)."""
    free: dict[int, frozenset] = {}
    for node in nodes:
        cls = type(node)
        if cls is Var:
            free[id(node)] = frozenset((node,))
            continue
        if cls in (Constant, Op, GlobalVar):
            free[id(node)] = _EMPTY
            continue
        if cls is Let:
            inner = (free[id(node.value)] | free[id(node.body)]) - {node.var}
        elif cls is Function:
            inner = free[id(node.body)] - set(node.params)
        else:
            inner = _EMPTY
            for child in sub_exprs(node):
                f = free[id(child)]
                if f:
                    inner = inner | f if inner else f
        free[id(node)] = inner
    return free[id(root)]


def _check_primitive(fn: Function, fn_name: str) -> None:
    where = _where(fn_name) + "primitive function: "
    for p in fn.params:
        if p.type_annotation is None:
            raise DiagnosticError(f"{where}parameter `%{p.name_hint}` needs a type", p.span or fn.span)
    nodes = post_order(fn.body)
    for node in nodes:
        cls = type(node)
        if cls in (If, Let, Function):
            kind = {If: "an `if`", Let: "a `let`", Function: "a nested function"}[cls]
            raise DiagnosticError(f"{where}contains {kind}; a fused kernel holds only operator calls", fn.span)
        if cls is Call and type(node.op) is not Op:
            raise DiagnosticError(f"{where}calls a function, not an operator", node.span or fn.span)
        if cls in (Tuple, TupleGetItem, Call, Var, Constant, Op):
            continue
        if cls is GlobalVar:
            raise DiagnosticError(f"{where}refers to `@{node.name_hint}`", fn.span)
    loose = _free_vars(post_order(fn), fn)
    if loose:
        v = next(iter(loose))
        raise DiagnosticError(f"{where}uses `%{v.name_hint}`, which is not one of its parameters", fn.span)
