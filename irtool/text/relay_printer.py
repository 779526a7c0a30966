"""IRModule -> Relay text, in TVM v0.19's layout (`relay_text_printer.cc`).

TVM prints a function in graph normal form:

    def @main(%x: Tensor[(1, 3), float32]) {     params and attributes on one line
      %0 = exp(%x);                                every non-atomic node used as an operand
      %1 = add(%0, 1f);                            gets a temporary, numbered in the order
      multiply(%1, %0)                             its first user prints it; the last
    }                                              expression of a scope is inline if used once

The walk matches TVM's, so the numbering matches too: nodes are visited in post order
(a call's arguments left to right, then its callee, as TVM lifts arguments before the
op), and a node is bound to `%n` as soon as its text is complete. One deliberate difference: a node used
both inside a block (if-branch, local function, parenthesised let) and outside it is
bound before the block (`prebind`), where TVM would bind it inside the block and use it
outside — text that can refer to a binding before it. Temporaries and variable
names are numbered across the whole module, as TVM does (a second `%x` prints `%x1`).
Atoms (variables, globals, operators, constants) are always inline; scalar constants
print as literals, tensors as `meta[relay.Constant][i]` with a `#[metadata]` section.
"""

from __future__ import annotations

from .._util import gc_paused
from ..ir.expr import (
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.types import ANY, FuncType, IncompleteType, TensorType, TupleType, Type
from .literals import SIMPLE_SCALAR_DTYPES, format_attr_value, format_scalar

VERSION_HEADER = '#[version = "0.0.5"]'

def format_type(t: Type | None) -> str:
    cls = type(t)
    if cls is TensorType:
        if not t.shape:
            return t.dtype
        dims = ", ".join("?" if d is ANY else str(d) for d in t.shape)
        return f"Tensor[({dims}), {t.dtype}]"
    if cls is TupleType:
        fields = ", ".join(format_type(f) for f in t.fields)
        return f"({fields},)" if len(t.fields) == 1 else f"({fields})"
    if cls is FuncType:
        return f"fn ({', '.join(format_type(a) for a in t.arg_types)}) -> {format_type(t.ret_type)}"
    if cls is IncompleteType or t is None:
        return "_"
    raise TypeError(f"cannot print type {t!r}")


def format_attrs(attrs: Attrs | None) -> list[str]:
    if not attrs:
        return []
    return [f"{k}={format_attr_value(v)}" for k, v in attrs.items()]


def format_call_attrs(op, attrs: Attrs | None) -> list[str]:
    """A call's attributes as TVM prints them: for an operator, only those that differ
    from their declared defaults, in declaration order."""
    if not attrs:
        return []
    if type(op) is Op:
        from ..ops.registry import lookup

        opdef = lookup(op.name)
        if opdef is not None:
            return [f"{k}={format_attr_value(v)}" for k, v in opdef.non_default_attrs(attrs)]
    return format_attrs(attrs)


_ANNOTATED = (Var, Constant, Call, Tuple, TupleGetItem, Function)
_VISITED = (Call, Tuple, TupleGetItem, Function, If, Let, Var)
_CANONICAL_NAN = {"float16": b"\x00\x7e", "float32": b"\x00\x00\xc0\x7f", "float64": b"\x00" * 6 + b"\xf8\x7f"}


def _odd_nan(data) -> bool:
    """A NaN whose sign or payload `nanf` cannot carry: it goes to the metadata instead."""
    return data.dtype.kind == "f" and data != data and data.astype(data.dtype.newbyteorder("<")).tobytes() \
        != _CANONICAL_NAN[str(data.dtype)]


def _is_temp(text: str) -> bool:
    return text.startswith("%") and text[1:].isdigit()


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


class RelayPrinter:
    def __init__(self, show_types: bool = False, show_meta_data: bool = True) -> None:
        self.show_types = show_types
        self.show_meta_data = show_meta_data
        self.temp_counter = 0
        self.name_counts: dict[str, int] = {}
        self.var_names: dict[Var, str] = {}
        self.text: dict[Expr, str] = {}      # printed form of a visited node
        self.bound: dict[Expr, str] = {}     # node -> `%n` once bound, or its inline text
        self.uses: dict[int, int] = {}       # id(node) -> number of parents, per global function
        self.meta: list[Constant] = []
        self.meta_index: dict[Constant, int] = {}
        self.lines: list[list[str]] = [[]]   # one list of emitted lines per open scope
        self.annotated: set[Expr] = set()    # constants already printed with their type
        # (op, id(attrs)) -> (attrs, their text): parsed calls share attrs objects (held here,
        # so that an id is not reused while the printer lives)
        self.attr_texts: dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ entry points

    def print_module(self, mod: IRModule) -> str:
        parts = []
        for name, fn in mod.items():
            self.count_uses(fn)
            parts.append(self.print_function(f"def @{name}", fn) + "\n")
        return self.finish(VERSION_HEADER + "\n" + "\n".join(parts))

    def print_expr(self, expr: Expr) -> str:
        self.count_uses(expr)
        return self.finish(self.scope(expr) + "\n")

    def finish(self, text: str) -> str:
        if self.show_meta_data and any(c.data is not None for c in self.meta):
            from .metadata import dump_metadata

            text += "\n#[metadata]\n" + dump_metadata(self.meta) + "\n"
        return text

    def count_uses(self, root: Expr) -> None:
        """Number of users of each compound node (TVM's DependencyGraph parent count)."""
        uses: dict[int, int] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            cls = type(node)
            if cls is Call:
                children = (node.op, *node.args)
            elif cls is Tuple:
                children = node.fields
            elif cls is TupleGetItem:
                children = (node.tuple_value,)
            elif cls is Let:
                children = (node.value, node.body)
            elif cls is If:
                children = (node.cond, node.true_branch, node.false_branch)
            elif cls is Function:
                children = (node.body,)
            else:
                continue
            for child in children:
                key = id(child)
                if key in uses:
                    uses[key] += 1
                else:
                    uses[key] = 1
                    stack.append(child)
        self.uses = uses
        self._shared_below: dict[int, bool] = {}

    # ------------------------------------------------------------------ names

    def unique_name(self, prefix: str) -> str:
        counts = self.name_counts
        if prefix in counts:
            while True:
                counts[prefix] += 1
                name = f"{prefix}{counts[prefix]}"
                if name not in counts:
                    prefix = name
                    break
        counts[prefix] = 0
        return prefix

    def declare_var(self, var: Var) -> str:
        """Allocate a name for a binding occurrence; returns `%x: T` (the declaration)."""
        name = var.name_hint
        if not name or not name[0].isalpha():
            name = "v" + name
        ref = self.unique_name("%" + name)
        self.var_names[var] = ref
        self.bound[var] = ref
        decl = ref if var.type_annotation is None else f"{ref}: {format_type(var.type_annotation)}"
        return decl + self.type_info(var)

    def type_info(self, e: Expr) -> str:
        """` /* ty=T */` where TVM prints it: on variable declarations, constants, calls,
        tuples, projections and function literals (not on let, if, ops or globals)."""
        if self.show_types and e.checked_type is not None and type(e) in _ANNOTATED:
            return f" /* ty={format_type(e.checked_type)} */"
        return ""

    # ------------------------------------------------------------------ scopes and functions

    def scope(self, expr: Expr) -> str:
        """The lines of a new scope ending in `expr` (TVM's PrintScope)."""
        self.lines.append([])
        last = self.ref(expr, try_inline=True)
        lines = self.lines.pop()
        lines.append(last)
        return "\n".join(lines)

    def block(self, expr: Expr) -> str:
        return "{" + _indent("\n" + self.scope(expr)) + "\n}"

    def print_function(self, prefix: str, fn: Function) -> str:
        params = [self.declare_var(p) for p in fn.params]
        params += format_attrs(fn.attrs)
        head = f"{prefix}({', '.join(params)}) "
        if fn.ret_type is not None:
            head += f"-> {format_type(fn.ret_type)} "
        return head + self.block(fn.body)

    # ------------------------------------------------------------------ expressions

    def ref(self, e: Expr, try_inline: bool = False) -> str:
        """How a parent refers to `e`: inline text or a temporary bound on first use."""
        done = self.bound.get(e)
        if done is not None:
            return done
        cls = type(e)
        if cls is Var:  # first sight of an unbound variable: it is free
            decl = self.declare_var(e)
            self.lines[-1].append(f"free_var {decl};")
            return self.bound[e]
        if cls is GlobalVar:
            return "@" + e.name_hint
        if cls is Op:
            return e.name
        if cls is Constant:
            text = self.constant(e)
            if self.show_types and e not in self.annotated:  # TVM annotates a node once
                self.annotated.add(e)
                text += self.type_info(e)
            return text
        text = self.text.get(e)
        if text is None:
            self.visit(e)
            text = self.text[e]
        text += self.type_info(e)
        if try_inline and self.uses.get(id(e), 0) <= 1:
            self.bound[e] = text
            return text
        if cls is Let:
            text = "(" + _indent("\n" + text) + "\n)"
        temp = f"%{self.temp_counter}"
        self.temp_counter += 1
        self.lines[-1].append(f"{temp} = {text};")
        self.bound[e] = temp
        return temp

    def prebind(self, root: Expr, include_root: bool = True) -> None:
        """Before a block (if-branch, function body, let) is printed, bind in the current
        scope every node under it that is also used outside it, so that no binding inside
        the block is referred to from outside. (TVM binds such a node inside the first block
        that uses it, which yields text whose `%n` is used before or outside its binding.)"""
        if type(root) in (GlobalVar, Op, Constant):
            return
        if type(root) is Var:
            if include_root and root not in self.bound and self.uses.get(id(root), 0) > 1:
                self.ref(root)  # a free variable also used outside the block: declare it here
            return
        from ..ir.visitor import sub_exprs

        uses = self.uses
        shared = self.shared_below(root)
        # Only nodes with several users can need binding here, and every parent of such a
        # node has it below: subtrees without one are skipped (nested blocks stay linear).
        nodes, inner, seen, stack = [], {}, {id(root)}, [root]
        while stack:
            node = stack.pop()
            nodes.append(node)
            for child in sub_exprs(node):
                key = id(child)
                inner[key] = inner.get(key, 0) + 1
                if key not in seen and (uses.get(key, 0) > 1 or shared.get(key)):
                    seen.add(key)
                    stack.append(child)
        for node in nodes:
            cls = type(node)
            if cls in (GlobalVar, Op, Constant) or node in self.bound:
                continue
            if node is root:  # the block's last expression: its owner is one user, any other is outside
                if include_root and uses.get(id(node), 0) > 1:
                    self.ref(node)
            elif uses.get(id(node), 0) > inner.get(id(node), 0):
                self.ref(node)

    def shared_below(self, root: Expr) -> dict[int, bool]:
        """id(node) -> whether a node with several users is strictly below it (memoised
        over the function being printed)."""
        from ..ir.visitor import sub_exprs

        memo = self._shared_below
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if key in memo:
                continue
            children = sub_exprs(node)
            if not expanded:
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in memo)
                continue
            uses = self.uses
            memo[key] = any(uses.get(id(c), 0) > 1 or memo.get(id(c), False) for c in children)
        return memo

    def visit(self, root: Expr) -> None:
        """Compute the text of `root` and of every unvisited node under it, in TVM's
        order: a call's arguments left to right, then its callee; each node is bound to
        its temporary as soon as its text is done (TVM's PrintExpr), the root excepted,
        whose binding is up to the caller."""
        text, bound = self.text, self.bound
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in text or node in bound:
                continue
            cls = type(node)
            if cls is Var:  # a free variable, declared where TVM first prints it
                self.ref(node)
                continue
            if not expanded and (cls is Call or cls is Tuple or cls is TupleGetItem):
                stack.append((node, True))
                if cls is Call:
                    children = (*node.args, node.op)
                elif cls is Tuple:
                    children = node.fields
                else:
                    children = (node.tuple_value,)
                for child in reversed(children):
                    if type(child) in _VISITED and child not in text and child not in bound:
                        stack.append((child, False))
                continue
            text[node] = self.node_text(node)
            if node is not root:
                self.ref(node)

    def node_text(self, e: Expr) -> str:
        cls = type(e)
        ref = self.ref
        if cls is Call:
            args = [ref(a) for a in e.args]  # arguments before the callee, as TVM prints
            if e.attrs:
                key = (e.op, id(e.attrs))
                cached = self.attr_texts.get(key)
                if cached is None:
                    cached = self.attr_texts[key] = (e.attrs, format_call_attrs(e.op, e.attrs))
                args += cached[1]
            return f"{ref(e.op)}({', '.join(args)})"
        if cls is Tuple:
            fields = [ref(f) for f in e.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if cls is TupleGetItem:
            if type(e.tuple_value) is GlobalVar:  # `@f.0` would read back as a global named `f.0`
                return f"({ref(e.tuple_value)}).{e.index}"
            return f"{ref(e.tuple_value)}.{e.index}"
        if cls is Function:
            self.prebind(e.body)
            return self.print_function("fn ", e)
        if cls is If:
            cond = ref(e.cond)
            self.prebind(e.true_branch)
            self.prebind(e.false_branch)
            return f"if ({cond}) {self.block(e.true_branch)} else {self.block(e.false_branch)}"
        if cls is Let:
            self.prebind(e, include_root=False)
            self.lines.append([])
            while type(e) is Let:
                decl = self.declare_var(e.var)
                value = ref(e.value, try_inline=True)
                if type(e.value) is Let and not _is_temp(value):
                    value = "(" + _indent("\n" + value) + "\n)"  # TVM prints it bare, which does not parse
                self.lines[-1].append(f"let {decl} = {value};")
                e = e.body
            last = ref(e, try_inline=True)
            lines = self.lines.pop()
            lines.append(last)
            return "\n".join(lines)
        raise TypeError(f"cannot print {e!r}")

    def constant(self, c: Constant) -> str:
        data = c.data
        if data is not None and data.ndim == 0 and str(data.dtype) in SIMPLE_SCALAR_DTYPES \
                and not _odd_nan(data):
            return format_scalar(data.item(), str(data.dtype))
        index = self.meta_index.get(c)
        if index is None:
            index = self.meta_index[c] = len(self.meta)
            self.meta.append(c)
        return f"meta[relay.Constant][{index}]"


def print_relay(node: IRModule | Expr, show_types: bool = False, show_meta_data: bool = True) -> str:
    """Relay text for a module (with the `#[version]` header) or an expression."""
    printer = RelayPrinter(show_types, show_meta_data)
    with gc_paused():
        if isinstance(node, IRModule):
            return printer.print_module(node)
        return printer.print_expr(node)
