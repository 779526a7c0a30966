"""simplify-expr: TVM's SimplifyExpr, a fixed point of small dataflow-pattern rewrites.

TVM (relay/transforms/simplify_expr.cc) writes each rewrite as a dataflow pattern and a
callback, and runs them with its pattern rewriter; this module ports both. One round
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

The rewrites of TVM v0.19's SimplifyExpr, in its order (✓ implemented):

    ✓ ConcretizeZerosLike / ConcretizeOnesLike   zeros_like(x) -> zeros(shape, dtype) for a static shape
    - ConcretizeFullLike, ReshapeLike, CollapseSumLike, BroadcastToLike, CastLike
                                            not implemented: full_like, reshape_like,
                                            collapse_sum_like/to, broadcast_to_like and
                                            cast_like are not in the operator registry
    ✓ SimplifyAdd                 x + x -> x * 2
    ✓ SimplifyRSqrt               a / sqrt(x) -> a * rsqrt(x)   (then 1 * r -> r below)
    ✓ EliminateIdentity           x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x, where 0 / 1
                                  is a scalar constant (all dimensions 1), zeros()/ones() or
                                  zeros_like/ones_like, and only when x has the result's type
    ✓ SimplifyReshape             reshape(reshape(x)) -> one reshape to the static result shape
                                  (contrib_reverse_reshape is not in the registry)
    ✓ SimplifyTranspose           transpose(transpose(x)) -> one transpose of the composed axes
                                  (the layout_transform cases: no layout_transform op here)
    ✓ SimplifyNoOpTranspose       transpose(x) with the identity order -> x
    ✓ SimplifySameCast            cast(x) to x's own dtype -> x
    ✓ SimplifyConsecutiveCast     cast(cast(x, t1), t2) -> cast(x, t2) if t1 widens x's dtype
    ✓ FullElementwise             op(x, full/ones/zeros(...)) -> op(x, scalar) for a broadcast
                                  op, when x already has the result's type
    ✓ SwitchAddMultiply           (x + c1) * c2 -> x * c2 + (c1 * c2), constants folded
    ✓ SimplifyAdjacentMultiplyOrAdd   (x * c1) * c2 -> x * (c1 * c2), same for +
    - SimplifyDQArgMax/ArgMin/ArgSort   not implemented: no qnn.dequantize (nor argsort)
    ✓ SimplifyClipAndConsecutiveCast    clip -> cast -> ... -> cast: drop casts whose dtype
                                  holds the clip range
    ✓ SimplifyClip                clip(x) whose range covers x's dtype -> x
    ✓ SimplifyBinomial            a*x*x + b*x*y + c*y*y -> a * (x + p*y) * (x + q*y)

Deviations from TVM, all where TVM's rewrite would change values or types:
  * every replacement is type-checked; one whose type differs from the node it replaces
    is declined (TVM would build it and fail later, e.g. FullElementwise on a full whose
    fill value has another dtype, or a bias_add/prelu broadcast argument);
  * SimplifyConsecutiveCast: TVM counts int -> uint of at least the width as widening,
    which changes negative values (cast(cast(-1i8, uint16), int32) is 65535); here
    signed -> unsigned never widens;
  * SimplifyClipAndConsecutiveCast: when the chain rounds a float clip to an integer
    and the rewritten chain would not, the chain is kept (TVM drops the rounding);
  * SimplifyBinomial: declined when a coefficient is not a one-element constant (TVM
    reads its first element), when its dtype is other than int32/float32/float64 (TVM
    then takes every coefficient as 1), or for integer dtypes whose roots p, q are not
    integers (TVM truncates them); with a negative discriminant the rebuilt node is
    kept, not the original (TVM returns the original node, discarding rewrites below);
  * TVM gives up (fatal error) after 100 rewrite sweeps; here the rounds continue to the
    fixed point (up to 1000 rounds).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from irtool.analysis.type_infer import TypeInferencer
from irtool.diagnostics import DiagnosticError
from irtool.ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem
from irtool.ir.module import IRModule
from irtool.ir.types import ANY, TensorType, type_equal
from irtool.ir.visitor import ExprMutator, post_order, sub_exprs
from irtool.ops.common import np
from irtool.ops.registry import AttrError, OpPattern, TypeRelError, lookup, make_call
from irtool.transform import FunctionPass, register

from ._pattern_utils import const_scalar

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


# --------------------------------------------------------------------------- the rewrites


def _is_op(name: str) -> OpNamePattern:
    return OpNamePattern(name)


def _dtype(e: Expr) -> str:
    return e.checked_type.dtype


class ConcretizeLike(Rewrite):
    """zeros_like(x) / ones_like(x) -> zeros / ones of x's static shape and dtype."""

    def __init__(self, like_op: str, op: str) -> None:
        self.like = Wildcard()
        self.pattern = _is_op(like_op)(self.like)
        self.op = op

    def callback(self, pre, post, m):
        t = tensor_type(pre)
        shape = static_shape(t)
        if shape is None:
            return post
        return make_call(self.op, shape=shape, dtype=t.dtype)


class SimplifyAdd(Rewrite):
    """x + x -> x * 2."""

    def __init__(self) -> None:
        self.x, self.y = Wildcard(), Wildcard()
        self.pattern = _is_op("add")(self.x, self.y)

    def hopeless(self, call):
        return call.args[0] is not call.args[1]

    def callback(self, pre, post, m):
        x = m[self.x]
        if x is not m[self.y]:
            return post
        return make_call("multiply", x, const_scalar(_dtype(pre), 2))


class SimplifyRSqrt(Rewrite):
    """a / sqrt(x) -> a * rsqrt(x)."""

    def __init__(self) -> None:
        self.x, self.num = Wildcard(), Wildcard()
        self.pattern = _is_op("divide")(self.num, _is_op("sqrt")(self.x))

    def callback(self, pre, post, m):
        return make_call("multiply", m[self.num], make_call("rsqrt", m[self.x]))


def _scalar_value(c: Constant):
    """TVM's IsScalar + TryToScalar: the value of a constant whose dimensions are all 1."""
    data = c.data
    if data is None or any(d != 1 for d in data.shape) or data.dtype.kind not in "iufb":
        return None
    return data.reshape(-1)[0].item()


class EliminateIdentity(Rewrite):
    """x + 0, x - 0, x * 1, x / 1 (and 0 + x, 1 * x) -> x when x has the result's type."""

    def __init__(self) -> None:
        self.x, self.const = Wildcard(), ConstantPattern()
        zeros = _is_op("zeros")() | _is_op("zeros_like")(Wildcard()) | self.const
        ones = _is_op("ones")() | _is_op("ones_like")(Wildcard()) | self.const
        self.pattern = (_is_op("add")(self.x, zeros) | _is_op("multiply")(self.x, ones)
                        | _is_op("subtract")(self.x, zeros) | _is_op("divide")(self.x, ones))

    def callback(self, pre, post, m):
        x = m[self.x]
        x_type = pre.args[1].checked_type if post.args[1] is x else pre.args[0].checked_type
        if self.const in m:
            value = _scalar_value(m[self.const])
            identity = 0 if pre.op.name in ("add", "subtract") else 1
            if value is None or value != identity:
                return post
        return x if type_equal(x_type, pre.checked_type) else post


class SimplifyReshape(Rewrite):
    """reshape(reshape(x)) -> reshape(x) to the (static) result shape."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("reshape")(_is_op("reshape")(self.x))

    def callback(self, pre, post, m):
        shape = static_shape(tensor_type(pre))
        if shape is None:
            return post
        return make_call("reshape", m[self.x], newshape=shape)


def _axis_order(call: Call, ndim: int) -> list[int]:
    axes = call.attrs["axes"] if call.attrs is not None else None
    if not axes:  # no axes: reverse
        return list(range(ndim - 1, -1, -1))
    return [a + ndim if a < 0 else a for a in axes]


class SimplifyTranspose(Rewrite):
    """transpose(transpose(x, p), q) -> transpose(x, p composed with q)."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("transpose")(_is_op("transpose")(self.x))

    def callback(self, pre, post, m):
        ndim = len(pre.checked_type.shape)
        axes = list(range(ndim))
        for order in (_axis_order(post.args[0], ndim), _axis_order(post, ndim)):  # inner first
            axes = [axes[order[i]] for i in range(ndim)]
        return make_call("transpose", m[self.x], axes=tuple(axes))


class SimplifyNoOpTranspose(Rewrite):
    """transpose(x) that keeps every axis in place -> x."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("transpose")(self.x)

    def callback(self, pre, post, m):
        ndim = len(pre.checked_type.shape)
        return m[self.x] if _axis_order(post, ndim) == list(range(ndim)) else post


class SimplifySameCast(Rewrite):
    """cast(x, dtype) where x already has that dtype -> x."""

    def __init__(self) -> None:
        self.data = Wildcard()
        self.pattern = _is_op("cast")(self.data)

    def callback(self, pre, post, m):
        return m[self.data] if _dtype(pre) == _dtype(pre.args[0]) else post


_CODE = {"int": 0, "uint": 1, "float": 2, "bfloat": 4}


def _code_bits(dtype: str) -> tuple[int, int]:
    """TVM's DataType (code, bits): int 0, uint 1 (bool is uint1), float 2, bfloat 4."""
    if dtype == "bool":
        return 1, 1
    base = dtype.split("x")[0]
    kind = base.rstrip("0123456789")
    return _CODE.get(kind, 3), int(base[len(kind):] or 0)


def is_widen_cast(origin: str, cast: str) -> bool:
    """Does casting `origin` to `cast` keep every value? TVM's IsWidenCast, except that
    signed -> unsigned is never widening here (TVM says it is when the width allows,
    though it changes negative values)."""
    (oc, ob), (cc, cb) = _code_bits(origin), _code_bits(cast)
    if oc == cc and ob <= cb:
        return True
    if oc == 4 or cc == 4:  # a bfloat cast cannot be dropped
        return False
    if oc == 0 and cc == 1:
        return False
    return oc < cc and ob <= cb


class SimplifyConsecutiveCast(Rewrite):
    """cast(cast(x, t1), t2) -> cast(x, t2) when t1 loses nothing of x."""

    def __init__(self) -> None:
        self.data = Wildcard()
        self.cast1 = _is_op("cast")(self.data)
        self.pattern = _is_op("cast")(self.cast1)

    def callback(self, pre, post, m):
        if not is_widen_cast(_dtype(m[self.data]), _dtype(m[self.cast1])):
            return post
        return make_call("cast", m[self.data], dtype=_dtype(pre))


class FullElementwise(Rewrite):
    """op(x, full(v)) / op(x, ones()) / op(x, zeros()) (either side) -> op(x, scalar), for
    a broadcast op whose result has x's type: the filled tensor adds nothing."""

    def __init__(self) -> None:
        self.x, self.data, self.value = Wildcard(), Wildcard(), ConstantPattern()
        self.full = _is_op("full")(self.value)
        self.ones = _is_op("ones")() | _is_op("ones_like")(self.data)
        self.zeros = _is_op("zeros")() | _is_op("zeros_like")(self.data)
        op = OpKindPattern(OpPattern.BROADCAST)
        filled = self.full | self.ones | self.zeros
        self.pattern = op(filled, self.x) | op(self.x, filled)

    def callback(self, pre, post, m):
        x = m[self.x]
        is_left = post.args[1] is x
        x_type = pre.args[1].checked_type if is_left else pre.args[0].checked_type
        if not type_equal(x_type, pre.checked_type):
            return post
        if self.full in m:
            value = m[self.value]
        elif self.ones in m:
            value = const_scalar(_dtype(pre), 1)
        else:
            value = const_scalar(_dtype(pre), 0)
        args = (value, x) if is_left else (x, value)
        return Call(post.op, args, post.attrs, post.span)


def fold(op: str, *args: Constant) -> Constant:
    """The constant `op(args)` evaluates to (TVM's FoldConstantExpr on a call of constants)."""
    opdef = lookup(op)
    return Constant(np.asarray(opdef.ref(*(a.data for a in args))))


class SwitchAddMultiply(Rewrite):
    """(x + c1) * c2 -> x * c2 + (c1 * c2): the mul-add order FoldScaleAxis handles."""

    def __init__(self) -> None:
        self.x, self.c1, self.c2 = Wildcard(), ConstantPattern(), ConstantPattern()
        self.pattern = (self.x + self.c1) * self.c2

    def callback(self, pre, post, m):
        x, c1, c2 = m[self.x], m[self.c1], m[self.c2]
        if type(x) is Constant:
            return post
        return make_call("add", make_call("multiply", x, c2), fold("multiply", c1, c2))


class SimplifyAdjacentMultiplyOrAdd(Rewrite):
    """(x * c1) * c2 -> x * (c1 * c2) and (x + c1) + c2 -> x + (c1 + c2)."""

    def __init__(self) -> None:
        self.x, self.c1, self.c2 = Wildcard(), ConstantPattern(), ConstantPattern()
        self.pattern = (self.x * self.c1 * self.c2) | (self.x + self.c1 + self.c2)

    def callback(self, pre, post, m):
        x, c1, c2 = m[self.x], m[self.c1], m[self.c2]
        if type(x) is Constant:
            return post
        return make_call(pre.op.name, x, fold(pre.op.name, c1, c2))


def _dtype_range(dtype: str) -> tuple[float, float]:
    code, bits = _code_bits(dtype)
    if code == 0:
        return -(2.0 ** (bits - 1)), 2.0 ** (bits - 1) - 1
    if code == 1:
        return 0.0, 2.0 ** bits - 1
    if code in (2, 4):
        fmax = {16: 65504.0, 32: float(np.finfo(np.float32).max), 64: float(np.finfo(np.float64).max)}
        top = 3.3895313892515355e38 if code == 4 else fmax.get(bits, math.inf)
        return -top, top
    return 0.0, 0.0


def _range_covers_dtype(dtype: str, lo: float, hi: float) -> bool:
    """[lo, hi] contains every value of `dtype` (TVM's CheckDataTypeMaxMinValue mode 0)."""
    dlo, dhi = _dtype_range(dtype)
    return hi >= dhi and lo <= dlo


def _dtype_covers_range(dtype: str, lo: float, hi: float) -> bool:
    """`dtype` holds every value of [lo, hi] (mode 1)."""
    dlo, dhi = _dtype_range(dtype)
    return hi <= dhi and lo >= dlo


def _is_int(dtype: str) -> bool:
    return _code_bits(dtype)[0] in (0, 1)


class SimplifyClipAndConsecutiveCast(Rewrite):
    """clip(x, lo, hi) -> cast -> ... -> cast: a cast to a dtype that holds [lo, hi]
    cannot change a clipped value, so it goes; one cast to the final dtype is added if
    the remaining chain ends elsewhere."""

    def __init__(self) -> None:
        self.clip = _is_op("clip")(Wildcard())
        cast = CallPattern(_is_op("cast"), ())
        cast.args = (AltPattern(cast, self.clip),)  # cast(cast(...cast(clip(x))))
        self.pattern = cast

    def callback(self, pre, post, m):
        clip = m[self.clip]
        lo, hi = clip.attrs["a_min"], clip.attrs["a_max"]
        chain, node = [], post  # outermost first
        while node is not clip:
            chain.append(node)
            node = node.args[0]
        remaining = [c for c in chain if not _dtype_covers_range(_dtype(c), lo, hi)]
        if len(remaining) == len(chain):
            return post
        last = remaining[0] if remaining else clip
        dtypes = [_dtype(c) for c in reversed(remaining)]
        if _dtype(last) != _dtype(post):
            dtypes.append(_dtype(post))
        if dtypes == [_dtype(c) for c in reversed(chain)]:
            return post  # the same chain again (TVM sees it is structurally equal)
        out = clip
        for dtype in dtypes:
            out = make_call("cast", out, dtype=dtype)
        rounds = not _is_int(_dtype(clip)) and any(_is_int(_dtype(c)) for c in chain)
        if rounds and not any(_is_int(_dtype(c)) for c in remaining) and not _is_int(_dtype(post)):
            return post  # the chain rounds the clipped floats to integers; keep that
        return out


class SimplifyClip(Rewrite):
    """clip(x, lo, hi) where [lo, hi] covers x's whole dtype -> x."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("clip")(self.x)

    def callback(self, pre, post, m):
        return m[self.x] if _range_covers_dtype(_dtype(pre), post.attrs["a_min"], post.attrs["a_max"]) else post


class SimplifyBinomial(Rewrite):
    """a*x*x + b*x*y + c*y*y -> a * (x + p*y) * (x + q*y), p and q the roots of
    a*t*t - b*t + c (real roots only)."""

    def __init__(self) -> None:
        x, y = self.x, self.y = Wildcard(), Wildcard()
        a, b, c = self.a, self.b, self.c = ConstantPattern(), ConstantPattern(), ConstantPattern()
        add, mul = _is_op("add"), _is_op("multiply")
        x_sq = mul(a, mul(x, x)) | mul(x, mul(a, x)) | mul(x, x)
        xy = mul(b, mul(x, y)) | mul(x, mul(b, y)) | mul(y, mul(b, x)) | mul(x, y)
        y_sq = mul(c, mul(y, y)) | mul(y, mul(c, y)) | mul(y, y)
        self.pattern = add(add(xy, x_sq), y_sq) | add(add(xy, y_sq), x_sq) | add(add(x_sq, y_sq), xy)

    def callback(self, pre, post, m):
        dtype = _dtype(pre)
        x, y = m[self.x], m[self.y]
        vals = []
        for p in (self.a, self.b, self.c):
            if p not in m:
                vals.append(1.0)
                continue
            data = m[p].data
            if data is None or data.size != 1 or dtype not in ("int32", "float32", "float64"):
                return post
            vals.append(float(data.reshape(-1)[0]))
        a, b, c = vals
        if c == 1 and a > 1:
            x, y = y, x
            a, c = c, float(np.float32(a))  # TVM keeps the swapped value in a float
        disc = b * b - 4 * a * c
        if disc < 0:
            return post
        same = disc < 10e-5
        root = math.sqrt(disc)
        p_val, q_val = (b + root) / (2 * a), (b - root) / (2 * a)
        if _is_int(dtype) and not (p_val.is_integer() and q_val.is_integer()):
            return post
        first = const_scalar(dtype, p_val)
        second = first if same else const_scalar(dtype, q_val)
        fm = make_call("add", x, make_call("multiply", y, first))
        sm = fm if same else make_call("add", x, make_call("multiply", y, second))
        return make_call("multiply", const_scalar(dtype, a), make_call("multiply", fm, sm))


def simplify_expr_rewrites() -> list[Rewrite]:
    """The rewrites of TVM v0.19's SimplifyExpr that apply to this operator set, in its order."""
    return [
        ConcretizeLike("zeros_like", "zeros"),
        ConcretizeLike("ones_like", "ones"),
        SimplifyAdd(),
        SimplifyRSqrt(),
        EliminateIdentity(),
        SimplifyReshape(),
        SimplifyTranspose(),
        SimplifyNoOpTranspose(),
        SimplifySameCast(),
        SimplifyConsecutiveCast(),
        FullElementwise(),
        SwitchAddMultiply(),
        SimplifyAdjacentMultiplyOrAdd(),
        SimplifyClipAndConsecutiveCast(),
        SimplifyClip(),
        SimplifyBinomial(),
    ]


@register
@dataclass(frozen=True)
class SimplifyExpr(FunctionPass):
    name = "simplify-expr"
    tvm_name = "SimplifyExpr"
    opt_level = 0
    required = ("infer-type",)
    summary = "Simplify reshape/transpose/cast chains, identities and constant arithmetic"

    def transform_function(self, fn, mod, ctx):
        return rewrite_patterns(simplify_expr_rewrites(), fn, mod)
