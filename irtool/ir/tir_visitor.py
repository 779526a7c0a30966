"""TIR visitors and mutators, generic over the node classes' `fields` (TVM's
StmtExprVisitor / StmtExprMutator).

Both walk a PrimFunc, statement or expression with an explicit stack, so a 10,000-term
sum or a deep loop nest costs no Python recursion. Children are the Node values of a
node's fields, looked into through tuples (`SBlock.reads`, `PrimFunc.buffer_map` pairs,
annotation pairs); everything else (names, dtypes, numbers) is data. `VISIT_ORDER`
overrides the field order where TVM's functors visit in another order than the fields
are declared (an SBlock's `init` before its `body`).

    StmtExprVisitor().visit(node)    pre-order; calls `visit_<Class>(node)` when defined,
                                     which returns False to skip the node's children
    StmtExprMutator().mutate(node)   post-order rebuild; `pre_mutate(node)` may return a
                                     replacement (its children are then not visited);
                                     `mutate_<Class>(old, new)` sees each rebuilt node

The mutator memoises by identity, so a node shared by many parents (a Var, a Buffer) is
rebuilt once and every parent gets the same new object: substituting a buffer's shape
variable gives one new Buffer wherever the old one was used. A node whose children did
not change is kept (`out is node` means nothing changed).
"""

from __future__ import annotations

from .node import Node

# TVM's functor order where it differs from the declared field order
VISIT_ORDER: dict[str, tuple[str, ...]] = {
    "SBlock": ("iter_vars", "reads", "writes", "match_buffers", "alloc_buffers", "annotations", "init", "body",
               "name"),
}


def _fields(node: Node) -> tuple[str, ...]:
    return VISIT_ORDER.get(type(node).__name__, type(node).fields)


def _child_nodes(value, out: list) -> None:
    """The Nodes inside a field value (a Node, or tuples of them), in order."""
    if isinstance(value, Node):
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _child_nodes(item, out)


def children(node: Node) -> list[Node]:
    """The Nodes directly inside `node`, in visiting order."""
    out: list[Node] = []
    for f in _fields(node):
        _child_nodes(getattr(node, f), out)
    return out


class StmtExprVisitor:
    """Pre-order walk over every node reachable from a root (each occurrence; shared
    nodes are visited once per parent unless `once` is set)."""

    def __init__(self, once: bool = False) -> None:
        self.once = once
        self._seen: set[int] = set()

    def visit(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if self.once:
                if id(node) in self._seen:
                    continue
                self._seen.add(id(node))
            hook = getattr(self, "visit_" + type(node).__name__, None)
            if hook is not None and hook(node) is False:
                continue
            stack.extend(reversed(children(node)))


class StmtExprMutator:
    """Post-order, memoised rebuild of a TIR tree (see the module docstring)."""

    def __init__(self) -> None:
        self.memo: dict[Node, Node] = {}

    def pre_mutate(self, node: Node) -> Node | None:
        """A replacement for `node` taken as it is, or None to rebuild it from its children."""
        return None

    def mutate(self, root):
        """`root` rebuilt (a Node, or a tuple of them)."""
        if isinstance(root, tuple):
            return tuple(self.mutate(x) for x in root)
        if not isinstance(root, Node):
            return root
        memo = self.memo
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in memo:
                continue
            if not expanded:
                replacement = self.pre_mutate(node)
                if replacement is not None:
                    memo[node] = replacement
                    continue
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(children(node)) if c not in memo)
                continue
            new = self._rebuild(node)
            hook = getattr(self, "mutate_" + type(node).__name__, None)
            memo[node] = hook(node, new) if hook is not None else new
        return memo[root]

    def _rebuild(self, node: Node) -> Node:
        changes = {}
        for f in type(node).fields:
            value = getattr(node, f)
            new = self._map(value)
            if new is not value:
                changes[f] = new
        return node.replace(**changes) if changes else node

    def _map(self, value):
        if isinstance(value, Node):
            return self.memo.get(value, value)
        if isinstance(value, tuple):
            items = tuple(self._map(x) for x in value)
            return value if all(a is b for a, b in zip(items, value)) else items
        return value


class Substitutor(StmtExprMutator):
    """Replaces variables and buffers by identity: `var_map` maps Vars to PrimExprs,
    `buffer_map` Buffers to Buffers. Buffers not in the map whose shape, strides or
    data mention a substituted variable are rebuilt (once, shared by every use)."""

    def __init__(self, var_map: dict | None = None, buffer_map: dict | None = None) -> None:
        super().__init__()
        self.var_map = dict(var_map or {})
        self.buffer_map = dict(buffer_map or {})

    def pre_mutate(self, node: Node):
        if node in self.buffer_map:
            return self.buffer_map[node]
        return self.var_map.get(node)


def substitute(node, var_map: dict | None = None, buffer_map: dict | None = None):
    """`node` with variables and buffers replaced (see `Substitutor`)."""
    return Substitutor(var_map, buffer_map).mutate(node)
