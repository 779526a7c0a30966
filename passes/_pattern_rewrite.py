"""TVM's dataflow-pattern matcher and pattern rewriter (relay/ir/dataflow_matcher.cc), as
the rewriting passes (simplify-expr) use them: `Pattern`s, a `Matcher`, and
`rewrite_patterns(rewrites, fn)`, which applies `Rewrite`s (a pattern and a callback).
One round
applies the rewrites in TVM's order, each as one sweep over the function; rounds repeat
until a round changes nothing:

    for each rewrite, in order:
        group: walk the nodes from the output back to the inputs; a node that matches
               the pattern roots a group, unless the group would overlap an earlier one,
               or a matched inner node has a user outside the group that the root does
               not post-dominate (the rewrite would then duplicate or orphan it)
        rewrite: rebuild the graph children first; at a group root, the callback sees
               the old node, the rebuilt one and the rebuilt matched nodes, and returns
               the replacement (or the rebuilt node to decline)

The matcher is TVM's: patterns match in order, `add`/`multiply` calls also match with
their arguments swapped, an alternative `a | b` tries `a` first, a pattern used twice
must match the same node twice, and a failed branch forgets what it bound.
"""

from __future__ import annotations

from collections import defaultdict

from irtool.analysis.type_infer import TypeInferencer
from irtool.diagnostics import DiagnosticError
from irtool.ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem
from irtool.ir.module import IRModule
from irtool.ir.types import ANY, TensorType, type_equal
from irtool.ir.visitor import ExprMutator, post_order, sub_exprs
from irtool.ops.registry import AttrError, TypeRelError, lookup

# --------------------------------------------------------------------------- helpers shared by the
# simplification passes (simplify-inference, canonicalize-ops and fold-scale-axis import them)


def type_new_nodes(expr: Expr, inferencer: TypeInferencer) -> None:
    """Fill `checked_type` on the nodes of `expr` that have none (those a rewrite just
    built), children first; existing nodes keep their types. Raises DiagnosticError if a
    new node does not type-check."""
    stack = [(expr, False)]
    seen = set()
    while stack:
        node, expanded = stack.pop()
        if expanded:
            node.checked_type = inferencer.type_of(node)
            continue
        if node.checked_type is not None or type(node) is Op or id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(sub_exprs(node)))


def tensor_type(e: Expr) -> TensorType | None:
    t = e.checked_type
    return t if type(t) is TensorType else None


def static_shape(t: TensorType | None) -> tuple[int, ...] | None:
    if t is None or any(d is ANY for d in t.shape):
        return None
    return t.shape


# --------------------------------------------------------------------------- patterns


class Pattern:
    """A dataflow pattern (TVM's DFPattern). Patterns compare by identity: the matcher
    binds each pattern object to at most one expression."""

    def __or__(self, other: Pattern) -> Pattern:
        return AltPattern(self, other)

    def __add__(self, other: Pattern) -> Pattern:
        return CallPattern(OpNamePattern("add"), (self, other))

    def __mul__(self, other: Pattern) -> Pattern:
        return CallPattern(OpNamePattern("multiply"), (self, other))


class Wildcard(Pattern):
    """Matches any expression (TVM's IsWildcard)."""


class ConstantPattern(Pattern):
    """Matches a Constant (TVM's IsConstant)."""


class OpNamePattern(Pattern):
    """Matches the operator `name` (TVM's IsOp); called, it makes a call pattern."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Pattern) -> CallPattern:
        return CallPattern(self, args)


class OpKindPattern(Pattern):
    """Matches an operator whose fusion pattern is `kind` (TVM's
    `IsWildcard().HasAttr({"TOpPattern": kind})`)."""

    def __init__(self, kind: int) -> None:
        self.kind = kind

    def __call__(self, *args: Pattern) -> CallPattern:
        return CallPattern(self, args)


class CallPattern(Pattern):
    def __init__(self, op: Pattern, args: tuple) -> None:
        self.op = op
        self.args = tuple(args)


class AltPattern(Pattern):
    def __init__(self, left: Pattern, right: Pattern) -> None:
        self.left = left
        self.right = right


_COMMUTATIVE = ("add", "multiply")


class Matcher:
    """TVM's DFPatternMatcher (the parts the rewrites here use). `memo` maps each
    pattern bound by the last successful match to its expression."""

    def __init__(self) -> None:
        self.memo: dict[Pattern, Expr] = {}
        self._bound: list[Pattern] = []

    def match(self, pattern: Pattern, expr: Expr) -> bool:
        self.memo.clear()
        self._bound.clear()
        return self._visit(pattern, expr)

    def _forget(self, mark: int) -> None:
        for p in self._bound[mark:]:
            self.memo.pop(p, None)  # a recursive pattern binds more than once
        del self._bound[mark:]

    def _visit(self, p: Pattern, e: Expr) -> bool:
        if p in self.memo:
            return self.memo[p] is e
        mark = len(self._bound)
        ok = self._dispatch(p, e)
        if ok:
            self.memo[p] = e
            self._bound.append(p)
        else:
            self._forget(mark)
        return ok

    def _dispatch(self, p: Pattern, e: Expr) -> bool:
        cls = type(p)
        if cls is Wildcard:
            return True
        if cls is ConstantPattern:
            return type(e) is Constant
        if cls is OpNamePattern:
            return type(e) is Op and e.name == p.name
        if cls is OpKindPattern:
            if type(e) is not Op:
                return False
            opdef = lookup(e.name)
            return opdef is not None and opdef.pattern == p.kind
        if cls is AltPattern:
            return self._visit(p.left, e) or self._visit(p.right, e)
        if cls is CallPattern:
            if type(e) is not Call or not self._visit(p.op, e.op):
                return False
            if self._args(p.args, e.args):
                return True
            return (type(p.op) is OpNamePattern and p.op.name in _COMMUTATIVE
                    and self._args(p.args[::-1], e.args))
        raise TypeError(f"unknown pattern {p!r}")

    def _args(self, pats: tuple, args: tuple) -> bool:
        if len(pats) != len(args):
            return False
        mark = len(self._bound)
        for p, a in zip(pats, args):
            if not self._visit(p, a):
                self._forget(mark)
                return False
        return True


def _arg_kinds(p: Pattern) -> frozenset | None:
    """What an argument matched by `p` can be: operator names and "#const", or None for
    anything. A necessary condition only (bindings are not checked)."""
    if type(p) is AltPattern:
        left, right = _arg_kinds(p.left), _arg_kinds(p.right)
        return None if left is None or right is None else left | right
    if type(p) is ConstantPattern:
        return frozenset(["#const"])
    if type(p) is CallPattern and type(p.op) is OpNamePattern:
        return frozenset([p.op.name])
    return None


def _branches(p: Pattern) -> list[tuple]:
    """The alternatives of a rewrite's top pattern: (op name or kind, argument kinds, commutative)."""
    if type(p) is AltPattern:
        return _branches(p.left) + _branches(p.right)
    if type(p) is CallPattern and type(p.op) in (OpNamePattern, OpKindPattern):
        op = p.op.name if type(p.op) is OpNamePattern else p.op.kind
        commutative = type(p.op) is OpNamePattern and op in _COMMUTATIVE
        return [(op, tuple(_arg_kinds(a) for a in p.args), commutative)]
    raise ValueError("a rewrite pattern must be rooted at a call of a named operator or operator kind")


def _kind(e: Expr) -> str:
    if type(e) is Call and type(e.op) is Op:
        return e.op.name
    return "#const" if type(e) is Constant else "#other"


class _Prefilter:
    """A quick necessary condition for a match at a call, from the operators (or constants)
    the pattern needs at the top and one level down: most candidates fail it, and the
    full matcher then runs on few."""

    def __init__(self, pattern: Pattern) -> None:
        self.by_op: dict = defaultdict(list)
        for op, specs, commutative in _branches(pattern):
            self.by_op[op].append((specs, commutative))
        self.names = {op for op in self.by_op if isinstance(op, str)}
        self.kinds = {op for op in self.by_op if not isinstance(op, str)}

    def __call__(self, call: Call) -> bool:
        name = call.op.name
        branches = self.by_op.get(name) or self.by_op.get(lookup(name).pattern, ())
        if not branches:
            return False
        kinds = [_kind(a) for a in call.args]
        for specs, commutative in branches:
            if len(specs) != len(kinds):
                continue
            if all(s is None or k in s for s, k in zip(specs, kinds)):
                return True
            if commutative and all(s is None or k in s for s, k in zip(specs, reversed(kinds))):
                return True
        return False


class Rewrite:
    """One of SimplifyExpr's rewrites: a pattern and what a match becomes.

    `callback(pre, post, m)` gets the matched node as it was (`pre`, typed), rebuilt with
    its rewritten children (`post`), and `m`: pattern -> rebuilt matched expression. It
    returns the replacement, or `post` to leave the node as it is."""

    pattern: Pattern

    def callback(self, pre: Call, post: Call, m: dict) -> Expr:
        raise NotImplementedError

    def hopeless(self, call: Call) -> bool:
        """True if a match rooted at `call` would surely be declined. Only a rewrite
        whose matches contain no node but the root may say so: skipping a match then
        cannot let another match take nodes TVM's would have claimed."""
        return False


# --------------------------------------------------------------------------- the rewriter


class _Graph:
    """The nodes of a function, children first, with users and the post-dominator tree
    computed on demand (TVM's IndexedGraph)."""

    def __init__(self, root: Expr) -> None:
        self.root = root
        self.nodes = post_order(root)
        self._by_op: dict | None = None
        self._users: dict | None = None
        self._dom: dict | None = None

    def candidates(self, names: set, kinds: set) -> list:
        """Calls of the given operators (or operator kinds), outputs first."""
        if self._by_op is None:
            by_op = defaultdict(list)
            for i, n in enumerate(self.nodes):
                if type(n) is Call and type(n.op) is Op:
                    by_op[n.op.name].append((i, n))
            self._by_op = by_op
        found = []
        for name, calls in self._by_op.items():
            if name in names or (kinds and (lookup(name) is not None and lookup(name).pattern in kinds)):
                found += calls
        found.sort(key=lambda item: -item[0])
        return [n for _, n in found]

    def users(self, node: Expr) -> list:
        if self._users is None:
            users = defaultdict(list)
            for n in self.nodes:
                for c in sub_exprs(n):
                    users[id(c)].append(n)
            self._users = users
        return self._users.get(id(node), [])

    def post_dominates(self, a: Expr, b: Expr) -> bool:
        """Does every path from `b` to the function's result pass through `a` (a != b)?"""
        if self._dom is None:
            self._build_dominators()
        parent, depth = self._dom
        node = parent.get(id(b))
        while node is not None and depth[id(node)] >= depth[id(a)]:
            if node is a:
                return True
            node = parent.get(id(node))
        return False

    def _build_dominators(self) -> None:
        parent: dict = {}
        depth: dict = {}
        for n in reversed(self.nodes):  # users before the nodes they use
            users = self.users(n)
            if not users:
                depth[id(n)] = 0
                continue
            p = users[0]
            for u in users[1:]:
                p = self._lca(p, u, parent, depth)
            parent[id(n)] = p
            depth[id(n)] = depth[id(p)] + 1
        self._dom = (parent, depth)

    @staticmethod
    def _lca(a, b, parent, depth):
        while a is not b:
            if depth[id(a)] > depth[id(b)]:
                a = parent[id(a)]
            elif depth[id(b)] > depth[id(a)]:
                b = parent[id(b)]
            else:
                a, b = parent[id(a)], parent[id(b)]
        return a


def _inputs_and_inner(pattern_memo: dict, root: Expr) -> tuple[set, list]:
    """A group's inputs (what its wildcards matched) and inner nodes (the rest of the
    matched subgraph, root included: TVM's MatchExtractor memo)."""
    inputs = {id(e) for p, e in pattern_memo.items()
              if type(p) is Wildcard and type(e) not in (Op, Function)}
    inner, seen, stack = [], set(), [root]
    while stack:
        n = stack.pop()
        if id(n) in seen or id(n) in inputs:
            continue
        seen.add(id(n))
        inner.append(n)
        stack.extend(sub_exprs(n))
    return inputs, inner


def _group(rewrite: Rewrite, graph: _Graph, prefilter: _Prefilter) -> dict:
    """TVM's PatternGrouper: root id -> (root, pattern memo) of each accepted match."""
    matcher = Matcher()
    groups: dict[int, tuple] = {}
    assigned: set[int] = set()
    for node in graph.candidates(prefilter.names, prefilter.kinds):
        if (id(node) in assigned or not prefilter(node) or rewrite.hopeless(node)
                or not matcher.match(rewrite.pattern, node)):
            continue
        _, inner = _inputs_and_inner(matcher.memo, node)
        inner_ids = {id(n) for n in inner}
        ok = True
        for n in inner:
            if type(n) in (Op, Function, Constant):
                continue
            if id(n) in assigned:  # overlaps an earlier group
                ok = False
                break
            if n is not node and any(id(u) not in inner_ids and not graph.post_dominates(node, u)
                                     for u in graph.users(n)):
                ok = False  # an inner value escapes the group: rewriting would lose or duplicate it
                break
        if ok:
            assigned.update(inner_ids)
            groups[id(node)] = (node, dict(matcher.memo))
    return groups


class _Rewriter(ExprMutator):
    """Rebuilds the function, running the callback at each group root. Rebuilt nodes
    keep the type of the node they rebuild (the rewrites preserve types), so the next
    rewrite sees a fully typed function without re-running inference."""

    def __init__(self, rewrite: Rewrite, groups: dict, inferencer: TypeInferencer) -> None:
        super().__init__()
        self.rewrite = rewrite
        self.groups = groups
        self.inferencer = inferencer

    @staticmethod
    def _typed(new: Expr, old: Expr) -> Expr:
        if new is not old and new.checked_type is None:
            new.checked_type = old.checked_type
        return new

    def visit_call(self, e: Call) -> Expr:
        post = self._typed(super().visit_call(e), e)
        group = self.groups.get(id(e))
        if group is None:
            return post
        m = {p: self.memo.get(x, x) for p, x in group[1].items()}
        return apply_callback(self.rewrite, e, post, m, self.inferencer)

    def visit_tuple(self, e: Tuple) -> Expr:
        return self._typed(super().visit_tuple(e), e)

    def visit_tuple_get_item(self, e: TupleGetItem) -> Expr:
        return self._typed(super().visit_tuple_get_item(e), e)

    def post_visit_let(self, e: Let, body: Expr) -> Expr:
        return self._typed(super().post_visit_let(e, body), e)

    def visit_if(self, e: If) -> Expr:
        return self._typed(super().visit_if(e), e)

    def visit_function(self, e: Function) -> Expr:
        return self._typed(super().visit_function(e), e)


def apply_callback(rewrite: Rewrite, pre: Call, post: Call, m: dict, inferencer: TypeInferencer) -> Expr:
    """The callback's replacement for `pre`, or `post` if it declines or the replacement
    would not have `pre`'s type."""
    try:
        out = rewrite.callback(pre, post, m)
        if out is post:
            return post
        type_new_nodes(out, inferencer)
    except (DiagnosticError, TypeRelError, AttrError):
        return post
    return out if type_equal(out.checked_type, pre.checked_type) else post


def _changes(rewrite: Rewrite, groups: dict, graph: _Graph, inferencer: TypeInferencer) -> bool:
    """Would any group change? With nothing rewritten below it, a root's rebuilt node is
    the node itself, so the callbacks can be asked on the graph as it is."""
    for root, memo in groups.values():
        if apply_callback(rewrite, root, root, memo, inferencer) is not root:
            return True
    return False


def rewrite_patterns(rewrites: list[Rewrite], fn: Function, mod: IRModule | None = None,
                     max_rounds: int = 1000) -> Function:
    """Apply `rewrites` in order, sweep by sweep, until a round changes nothing (TVM's
    RewritePatterns). `fn` must be typed."""
    inferencer = TypeInferencer(mod)
    filters = [_Prefilter(r.pattern) for r in rewrites]
    graph = _Graph(fn)
    for _ in range(max_rounds):
        changed = False
        for rewrite, prefilter in zip(rewrites, filters):
            groups = _group(rewrite, graph, prefilter)
            if not _changes(rewrite, groups, graph, inferencer):
                continue
            new = _Rewriter(rewrite, groups, inferencer).visit(graph.root)
            if new is not graph.root:
                graph = _Graph(new)
                changed = True
        if not changed:
            return graph.root
    raise RuntimeError(f"simplify-expr did not reach a fixed point in {max_rounds} rounds")
