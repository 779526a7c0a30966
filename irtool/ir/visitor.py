"""Memoised visitors and mutators that never hit Python's recursion limit.

As in TVM's MixedModeVisitor, the long chains of a program are walked with loops, not
recursion: dataflow nodes (Call, Tuple, TupleGetItem) are expanded with an explicit
stack and dispatched in post order (children first), and a chain of Lets is walked
binding by binding (TVM's ExpandANormalForm: `pre_visit_let` on the way in, in program
order, `post_visit_let` on the way out). Function and If are visited by recursion,
whose depth is the nesting depth of the program, not its length.

    visit(root)
      stack ← [root]
      while stack: pop n
        children of n not yet visited? push n back, then the children
        else dispatch visit_<kind>(n) once, memoise the result
"""

from __future__ import annotations

from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var

_CHAINED = (Call, Tuple, TupleGetItem)


def sub_exprs(e: Expr) -> tuple:
    """The direct sub-expressions of `e`, in evaluation order."""
    cls = type(e)
    if cls is Call:
        return (e.op, *e.args)
    if cls is Tuple:
        return e.fields
    if cls is TupleGetItem:
        return (e.tuple_value,)
    if cls is Let:
        return (e.var, e.value, e.body)
    if cls is If:
        return (e.cond, e.true_branch, e.false_branch)
    if cls is Function:
        return (*e.params, e.body)
    return ()


def post_order(root: Expr, enter_functions=True) -> list[Expr]:
    """Every node reachable from `root` once, children before parents (iteratively).
    `enter_functions` is a bool or a predicate saying which functions to look into
    (the others are leaves)."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list = [(root, False)]
    push, pop = stack.append, stack.pop
    while stack:
        node, expanded = pop()
        if expanded:
            order.append(node)
            continue
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        push((node, True))
        if type(node) is Function and not (enter_functions(node) if callable(enter_functions) else enter_functions):
            continue
        for child in reversed(sub_exprs(node)):
            if id(child) not in seen:
                push((child, False))
    return order


def evaluation_order(root: Expr, enter_primitive: bool = True) -> list:
    """Nodes in evaluation order, children first, each once, with binder markers for
    analyses that need variables bound before their uses are visited:
    ('bind', let) sits between a let's value and its body, ('enter', fn) before a
    function's body. Primitive function bodies are skipped unless `enter_primitive`."""
    order, seen = [], set()
    stack: list = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded or type(node) is tuple:  # a finished node, or a marker
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        cls = type(node)
        if cls is Let:
            stack += [(node.body, False), (("bind", node), False), (node.value, False)]
        elif cls is Function:
            if enter_primitive or not node.is_primitive:
                stack += [(node.body, False), (("enter", node), False)]
        else:
            for child in reversed(sub_exprs(node)):
                if id(child) not in seen:
                    stack.append((child, False))
    return order


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in `expr` but bound nowhere in it, in order of first use."""
    nodes = post_order(expr)
    bound = set()
    for node in nodes:
        if type(node) is Function:
            bound.update(node.params)
        elif type(node) is Let:
            bound.add(node.var)
    return [n for n in nodes if type(n) is Var and n not in bound]


class _Dispatcher:
    """Shared driver: iterative expansion of chains, memoised dispatch by node class."""

    def __init__(self) -> None:
        self.memo: dict[Expr, object] = {}
        cls = type(self)
        self._table = {
            Var: cls.visit_var, GlobalVar: cls.visit_global_var, Constant: cls.visit_constant,
            Op: cls.visit_op, Call: cls.visit_call, Tuple: cls.visit_tuple,
            TupleGetItem: cls.visit_tuple_get_item, Let: cls.visit_let, If: cls.visit_if,
            Function: cls.visit_function,
        }

    def visit(self, expr: Expr):
        memo = self.memo
        if expr in memo:
            return memo[expr]
        table = self._table
        if type(expr) not in _CHAINED:
            result = memo[expr] = table[type(expr)](self, expr)
            return result
        stack = [expr]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            pending = False
            if type(node) in _CHAINED:
                for child in sub_exprs(node):
                    if child not in memo and type(child) in _CHAINED:
                        stack.append(child)
                        pending = True
            if not pending:
                stack.pop()
                memo[node] = table[type(node)](self, node)
        return memo[expr]


class ExprVisitor(_Dispatcher):
    """Visits each node once. Override `visit_<kind>`; call `super()` to keep walking."""

    def visit_var(self, e: Var) -> None:
        if e.type_annotation is not None:
            self.visit_type(e.type_annotation)

    def visit_type(self, t) -> None:
        pass

    def visit_global_var(self, e: GlobalVar) -> None:
        pass

    def visit_constant(self, e: Constant) -> None:
        pass

    def visit_op(self, e: Op) -> None:
        pass

    def visit_call(self, e: Call) -> None:
        self.visit(e.op)
        for a in e.args:
            self.visit(a)

    def visit_tuple(self, e: Tuple) -> None:
        for f in e.fields:
            self.visit(f)

    def visit_tuple_get_item(self, e: TupleGetItem) -> None:
        self.visit(e.tuple_value)

    def visit_let(self, e: Let) -> None:
        chain = []
        while type(e) is Let and e not in self.memo:
            chain.append(e)
            self.pre_visit_let(e)
            e = e.body
        self.visit(e)
        for let in reversed(chain):
            self.memo[let] = None

    def pre_visit_let(self, e: Let) -> None:
        self.visit(e.var)
        self.visit(e.value)

    def visit_if(self, e: If) -> None:
        self.visit(e.cond)
        self.visit(e.true_branch)
        self.visit(e.false_branch)

    def visit_function(self, e: Function) -> None:
        for p in e.params:
            self.visit(p)
        self.visit(e.body)


class ExprMutator(_Dispatcher):
    """Rebuilds an expression bottom-up; a node whose children did not change is kept
    (so an identity mutation returns the very same object)."""

    def visit_var(self, e: Var) -> Expr:
        return e

    def visit_global_var(self, e: GlobalVar) -> Expr:
        return e

    def visit_constant(self, e: Constant) -> Expr:
        return e

    def visit_op(self, e: Op) -> Expr:
        return e

    def visit_call(self, e: Call) -> Expr:
        op = self.visit(e.op)
        args = [self.visit(a) for a in e.args]
        if op is e.op and all(a is b for a, b in zip(args, e.args, strict=False)):
            return e
        return Call(op, args, e.attrs, e.span)

    def visit_tuple(self, e: Tuple) -> Expr:
        fields = [self.visit(f) for f in e.fields]
        if all(a is b for a, b in zip(fields, e.fields, strict=False)):
            return e
        return Tuple(fields, e.span)

    def visit_tuple_get_item(self, e: TupleGetItem) -> Expr:
        t = self.visit(e.tuple_value)
        return e if t is e.tuple_value else TupleGetItem(t, e.index, e.span)

    def visit_let(self, e: Let) -> Expr:
        chain = []
        while type(e) is Let and e not in self.memo:
            chain.append(e)
            self.pre_visit_let(e)
            e = e.body
        body = self.visit(e)
        for let in reversed(chain):
            body = self.memo[let] = self.post_visit_let(let, body)
        return body

    def pre_visit_let(self, e: Let) -> None:
        """Called for each binding of a Let chain in program order, before the body."""
        self.visit(e.var)
        self.visit(e.value)

    def post_visit_let(self, e: Let, body: Expr) -> Expr:
        """Rebuilds one binding around the already rewritten `body` (innermost first)."""
        var, value = self.visit(e.var), self.visit(e.value)
        if var is e.var and value is e.value and body is e.body:
            return e
        return Let(var, value, body, e.span)

    def visit_if(self, e: If) -> Expr:
        c, t, f = self.visit(e.cond), self.visit(e.true_branch), self.visit(e.false_branch)
        if c is e.cond and t is e.true_branch and f is e.false_branch:
            return e
        return If(c, t, f, e.span)

    def visit_function(self, e: Function) -> Expr:
        params = [self.visit(p) for p in e.params]
        body = self.visit(e.body)
        if body is e.body and all(a is b for a, b in zip(params, e.params, strict=False)):
            return e
        return Function(params, body, e.ret_type, e.attrs, e.span)
