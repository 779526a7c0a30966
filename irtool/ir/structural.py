"""Structural equality and hashing, as TVM's `StructuralEqual` / `StructuralHash`.

Two programs are equal when they have the same shape, the same operators, attributes,
types and constant bits, and their bound variables correspond one to one (alpha
equivalence: `fn (%x) { %x }` equals `fn (%y) { %y }`). Free variables are equal only
to themselves unless `map_free_vars=True`. Sharing is not observed: a DAG equals the
tree it unfolds to. Both functions are iterative, so 100k-node programs are fine.
"""

from __future__ import annotations

from .expr import Attrs, Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from .module import IRModule
from .node import Node
from .types import Type, type_key
from .visitor import post_order


def attr_value_equal(a, b) -> bool:
    """Attribute values compare by type as well as value (`True` is not `1`), NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(attr_value_equal(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def attrs_equal(a: Attrs | None, b: Attrs | None) -> bool:
    a_items = a.items() if a is not None else ()
    b_items = b.items() if b is not None else ()
    if len(a_items) != len(b_items):
        return False
    b_map = dict(b_items)
    return all(k in b_map and attr_value_equal(v, b_map[k]) for k, v in a_items)


def constant_equal(a: Constant, b: Constant) -> bool:
    if a.data is None or b.data is None:
        return a.data is None and b.data is None
    return (a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
            and a.data.tobytes() == b.data.tobytes())


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Structural equality of modules, expressions or types."""
    if isinstance(lhs, IRModule) or isinstance(rhs, IRModule):
        if not (isinstance(lhs, IRModule) and isinstance(rhs, IRModule)):
            return False
        if sorted(lhs.functions) != sorted(rhs.functions):
            return False
        return all(structural_equal(lhs.functions[k], rhs.functions[k], map_free_vars)
                   for k in lhs.functions)
    if isinstance(lhs, Node) or isinstance(rhs, Node):
        from .node_structural import node_equal

        return node_equal(lhs, rhs)
    if isinstance(lhs, Type) or isinstance(rhs, Type):
        return type_key(lhs) == type_key(rhs)
    return _ExprEqual(map_free_vars).run(lhs, rhs)


class _ExprEqual:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.lhs_to_rhs: dict[Var, Var] = {}
        self.rhs_to_lhs: dict[Var, Var] = {}

    def bind(self, a: Var, b: Var) -> bool:
        if type_key(a.type_annotation) != type_key(b.type_annotation):
            return False
        if a in self.lhs_to_rhs or b in self.rhs_to_lhs:
            return self.lhs_to_rhs.get(a) is b
        self.lhs_to_rhs[a] = b
        self.rhs_to_lhs[b] = a
        return True

    def run(self, lhs: Expr, rhs: Expr) -> bool:
        stack = [(lhs, rhs)]
        done: set[tuple[int, int]] = set()
        while stack:
            a, b = stack.pop()
            if type(a) is not type(b):
                return False
            cls = type(a)
            if cls is Var:
                if a in self.lhs_to_rhs:
                    if self.lhs_to_rhs[a] is not b:
                        return False
                elif b in self.rhs_to_lhs:
                    return False
                elif a is not b:
                    if not (self.map_free_vars and self.bind(a, b)):
                        return False
                continue
            if a is b:
                continue
            key = (id(a), id(b))
            if key in done:
                continue
            done.add(key)
            if cls is Call:
                if len(a.args) != len(b.args) or not attrs_equal(a.attrs, b.attrs):
                    return False
                stack.append((a.op, b.op))
                stack.extend(zip(a.args, b.args, strict=False))
            elif cls is Op:
                if a.name != b.name:
                    return False
            elif cls is GlobalVar:
                if a.name_hint != b.name_hint:
                    return False
            elif cls is Constant:
                if not constant_equal(a, b):
                    return False
            elif cls is Tuple:
                if len(a.fields) != len(b.fields):
                    return False
                stack.extend(zip(a.fields, b.fields, strict=False))
            elif cls is TupleGetItem:
                if a.index != b.index:
                    return False
                stack.append((a.tuple_value, b.tuple_value))
            elif cls is Let:
                if not self.bind(a.var, b.var):
                    return False
                stack.append((a.body, b.body))
                stack.append((a.value, b.value))
            elif cls is If:
                stack.extend(((a.false_branch, b.false_branch), (a.true_branch, b.true_branch),
                              (a.cond, b.cond)))
            elif cls is Function:
                if (len(a.params) != len(b.params) or not attrs_equal(a.attrs, b.attrs)
                        or type_key(a.ret_type) != type_key(b.ret_type)):
                    return False
                for pa, pb in zip(a.params, b.params, strict=False):
                    if not self.bind(pa, pb):
                        return False
                stack.append((a.body, b.body))
            else:
                raise TypeError(f"structural_equal: unsupported node {a!r}")
        return True


def _attr_hash(value) -> int:
    if isinstance(value, tuple):
        return hash(tuple(_attr_hash(v) for v in value))
    if isinstance(value, float) and value != value:
        return hash(("nan",))
    return hash((type(value).__name__, value))


def _attrs_hash(attrs: Attrs | None) -> int:
    if not attrs:  # None and {} are equal
        return 0
    return hash(tuple(sorted((k, _attr_hash(v)) for k, v in attrs.items())))


def structural_hash(node) -> int:
    """A hash consistent with `structural_equal` (equal programs hash equal)."""
    if isinstance(node, IRModule):
        return hash(tuple((k, structural_hash(f)) for k, f in node.items()))
    if isinstance(node, Node):
        from .node_structural import node_hash

        return node_hash(node)
    if isinstance(node, Type):
        return hash(type_key(node))
    h: dict[int, int] = {}
    for e in post_order(node):
        cls = type(e)
        if cls is Var:
            # Bound variables are only known up to renaming: hash what renaming keeps.
            v = hash(("Var", type_key(e.type_annotation)))
        elif cls is Call:
            v = hash(("Call", h[id(e.op)], tuple(h[id(a)] for a in e.args), _attrs_hash(e.attrs)))
        elif cls is Op:
            v = hash(("Op", e.name))
        elif cls is GlobalVar:
            v = hash(("GlobalVar", e.name_hint))
        elif cls is Constant:
            v = hash(("Constant",) if e.data is None else
                     ("Constant", str(e.data.dtype), e.data.shape, e.data.tobytes()))
        elif cls is Tuple:
            v = hash(("Tuple", tuple(h[id(f)] for f in e.fields)))
        elif cls is TupleGetItem:
            v = hash(("TupleGetItem", h[id(e.tuple_value)], e.index))
        elif cls is Let:
            v = hash(("Let", h[id(e.var)], h[id(e.value)], h[id(e.body)]))
        elif cls is If:
            v = hash(("If", h[id(e.cond)], h[id(e.true_branch)], h[id(e.false_branch)]))
        elif cls is Function:
            v = hash(("Function", tuple(h[id(p)] for p in e.params), h[id(e.body)],
                      type_key(e.ret_type), _attrs_hash(e.attrs)))
        else:
            raise TypeError(f"structural_hash: unsupported node {e!r}")
        h[id(e)] = v
    return h[id(node)]

