"""to-a-normal-form: give every intermediate value a name with `let`.

TVM's ToANormalForm (relay/transforms/to_a_normal_form.cc). Every compound expression
(call, tuple, projection, constant, if, function) is bound to a fresh variable `%x` in
the innermost scope that encloses all of its uses:

    fn (%a) {                           fn (%a) {
      %0 = exp(%a);                       let %x = exp(%a);
      if (%c) {                           let %x1 = if (%c) {
        add(%0, %0)          ==>            let %x2 = add(%x, %x);
      } else {                              %x2
        %0                                } else { %x };
      }                                   %x1
    }                                   }

Scopes are the function body and each if-branch (a non-primitive function literal opens
its own). A node's scope is the lowest common ancestor of the scopes of its users, found
in one pass over the nodes in reverse post order (users before the values they use);
the bindings are then emitted in post order, so every value is bound before its first
use. An existing `let %v = e` keeps its variable: `e` is bound to `%v` directly.
Primitive functions are left as they are (their bodies belong to the fused kernel).
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir.expr import Call, Constant, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from irtool.ir.visitor import evaluation_order
from irtool.transform import FunctionPass, register

_ATOMIC = (Var, GlobalVar, Op)


class _Scope:
    __slots__ = ("parent", "depth", "bindings")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.bindings: list[tuple[Var, object]] = []

    def wrap(self, body):
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        return body


def _lca(a: _Scope, b: _Scope) -> _Scope:
    while a.depth > b.depth:
        a = a.parent
    while b.depth > a.depth:
        b = b.parent
    while a is not b:
        a, b = a.parent, b.parent
    return a


def _children(e) -> tuple:
    """(child, role) pairs; role is None, or the index of the sub-scope the child opens."""
    cls = type(e)
    if cls is Call:
        return ((e.op, None), *((a, None) for a in e.args))
    if cls is Tuple:
        return tuple((f, None) for f in e.fields)
    if cls is TupleGetItem:
        return ((e.tuple_value, None),)
    if cls is If:
        return ((e.cond, None), (e.true_branch, 1), (e.false_branch, 2))
    if cls is Function:
        return () if e.is_primitive else ((e.body, 0),)
    if cls is Let:
        return ((e.value, None), (e.body, None))
    return ()


def to_a_normal_form(fn: Function) -> Function:
    order = [n for n in evaluation_order(fn.body, enter_primitive=False) if not (type(n) is tuple and n[0] == "enter")]
    nodes = [n for n in order if type(n) is not tuple]
    root = _Scope(None)
    scope: dict[int, _Scope] = {id(fn.body): root}
    sub_scopes: dict[tuple[int, int], _Scope] = {}
    users: dict[int, int] = {}
    for node in reversed(nodes):  # users before the values they use
        here = scope[id(node)]
        for child, role in _children(node):
            users[id(child)] = users.get(id(child), 0) + 1
            if role is not None:
                key = (id(node), role)
                target = sub_scopes.get(key)
                if target is None:
                    target = sub_scopes[key] = _Scope(here)
            else:
                target = here
            prev = scope.get(id(child))
            scope[id(child)] = target if prev is None else _lca(prev, target)

    # `let %v = e` binds e to %v itself when the let is e's only user.
    named: dict[int, Var] = {}
    for node in nodes:
        if type(node) is Let and not isinstance(node.value, _ATOMIC) and users.get(id(node.value)) == 1:
            named[id(node.value)] = node.var

    new: dict[int, object] = {}

    def bind(node, value):
        var = named.pop(id(node), None) or Var("x")
        scope[id(node)].bindings.append((var, value))
        return var

    for node in order:
        if type(node) is tuple:
            let = node[1]
            value = new[id(let.value)]
            if value is not let.var:
                scope[id(let)].bindings.append((let.var, value))
            continue
        cls = type(node)
        if cls in _ATOMIC:
            new[id(node)] = node
        elif cls is Constant:
            new[id(node)] = bind(node, node)
        elif cls is Call:
            new[id(node)] = bind(node, Call(new[id(node.op)], [new[id(a)] for a in node.args], node.attrs, node.span))
        elif cls is Tuple:
            new[id(node)] = bind(node, Tuple([new[id(f)] for f in node.fields], node.span))
        elif cls is TupleGetItem:
            new[id(node)] = bind(node, TupleGetItem(new[id(node.tuple_value)], node.index, node.span))
        elif cls is If:
            branches = [sub_scopes[(id(node), i)].wrap(new[id(b)])
                        for i, b in ((1, node.true_branch), (2, node.false_branch))]
            new[id(node)] = bind(node, If(new[id(node.cond)], *branches, node.span))
        elif cls is Function:
            if node.is_primitive:
                new[id(node)] = bind(node, node)
            else:
                body = sub_scopes[(id(node), 0)].wrap(new[id(node.body)])
                new[id(node)] = bind(node, Function(node.params, body, node.ret_type, node.attrs, node.span))
        elif cls is Let:
            new[id(node)] = new[id(node.body)]
        else:
            raise TypeError(f"to-a-normal-form: unsupported node {node!r}")
    body = root.wrap(new[id(fn.body)])
    return Function(fn.params, body, fn.ret_type, fn.attrs, fn.span)


@register
@dataclass(frozen=True)
class ToANormalForm(FunctionPass):
    name = "to-a-normal-form"
    tvm_name = "ToANormalForm"
    opt_level = 1
    tvm_module_pass = True  # TVM registers ToANormalForm as a module pass
    summary = "Bind every intermediate value to a let variable in its innermost common scope"

    def transform_function(self, fn, mod, ctx):
        if fn.is_primitive:
            return fn
        return to_a_normal_form(fn)
