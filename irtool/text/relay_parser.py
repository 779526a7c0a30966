"""Relay text -> IRModule, with Lark's LALR parser and `grammar/relay.lark`.

No parse tree is built: Lark calls the `_Builder` callbacks as it reduces, in source
order, so the builder keeps the scopes as it goes:

    open_block / def_head / fn_head   push a scope (binding parameters)
    let_binding / free_var            bind a name in the innermost scope
    graph_binding                     `%0 = e;` names e in the enclosing function
    local_ref / graph_ref             look the name up (use before definition is an error)
    block / fn_expr / definition      pop the scope

`meta[relay.Constant][i]` references are shared placeholders until the `#[metadata]`
section at the end of the file fills in their data.
"""

from __future__ import annotations

import functools
import os
import threading

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .._util import gc_paused
from ..diagnostics import DiagnosticError, SourceFile, Span
from ..ir.expr import Attrs, Call, Constant, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, TypedScalar, Var
from ..ir.module import IRModule
from ..ir.types import ANY, FuncType, IncompleteType, TensorType, TupleType, is_valid_dtype
from ..ops.registry import AttrError, lookup
from .literals import LiteralError, parse_number
from .relay_fused import FusedTokens, Unfused

_np = None


def _numpy():
    global _np
    if _np is None:
        import numpy

        _np = numpy
    return _np


def _is_metadata(child) -> bool:
    # Lark's Token is a str subclass; lark_cython's is not, so test the type name, not the class.
    return getattr(child, "type", None) == "METADATA" and hasattr(child, "value")


MAX_BLOCK_NESTING = 256  # `{ ... }` of functions, lets and ifs; Python allows ~200 nested blocks


class _Scope:
    __slots__ = ("names", "graph")

    def __init__(self, graph: dict | None) -> None:
        self.names: dict[str, Var] = {}
        self.graph = graph  # the graph-binding table of the enclosing function (shared by its blocks)


class _Builder(FusedTokens, Transformer):
    """Lark callbacks: each method is named after a grammar rule or alias."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.scopes: list[_Scope] = [_Scope({})]
        self.block_depth = 0
        self.global_vars: dict[str, GlobalVar] = {}
        self.global_refs: dict[str, Span] = {}
        self.meta: dict[tuple[str, int], Constant] = {}
        self.known_ops: set[str] = set()
        self.default_attrs: dict = {}
        self.meta_spans: dict[tuple[str, int], Span] = {}
        self.fused_attr_cache: dict[tuple[str, str], Attrs | None] = {}  # (op, attribute text) -> checked attrs
        self.op_cache: dict[str, Op] = {}  # operators known to exist

    # ------------------------------------------------------------------ helpers

    def span(self, tok: Token) -> Span:
        return Span(self.source, tok.line, tok.column, tok.end_line, tok.end_column)

    def error(self, message: str, tok: Token):
        raise DiagnosticError(message, self.span(tok))

    def global_var(self, name: str) -> GlobalVar:
        gv = self.global_vars.get(name)
        if gv is None:
            gv = self.global_vars[name] = GlobalVar(name)
        return gv

    def bind(self, tok: Token, type_annotation) -> Var:
        var = Var(tok.value[1:], type_annotation, self.span(tok))
        self.scopes[-1].names[var.name_hint] = var
        return var

    def push_function_scope(self, params) -> None:
        scope = _Scope({})
        for p in params:
            if p.name_hint in scope.names:
                raise DiagnosticError(f"duplicate parameter `%{p.name_hint}`", p.span)
            scope.names[p.name_hint] = p
        self.scopes.append(scope)

    # ------------------------------------------------------------------ module

    def module(self, children) -> tuple:
        metadata = children[-1] if children and _is_metadata(children[-1]) else None
        functions: dict[str, Function] = {}
        for child in children:
            if isinstance(child, tuple):
                name, fn, tok = child
                if name in functions:
                    self.error(f"duplicate definition of `@{name}`", tok)
                functions[name] = fn
        for name, span in self.global_refs.items():
            if name not in functions:
                raise DiagnosticError(f"undefined global function `@{name}`", span)
        self.fill_metadata(metadata)
        return IRModule(functions, self.global_vars), None

    def bare_expr(self, children) -> tuple:
        metadata = children[-1] if _is_metadata(children[-1]) else None
        body = children[-2] if metadata is not None else children[-1]
        self.fill_metadata(metadata)
        return None, body

    def fill_metadata(self, tok: Token | None) -> None:
        tables: dict[str, list] = {}
        if tok is not None:
            from .metadata import MetadataError, load_metadata

            text = tok.value[tok.value.index("]") + 1:]
            try:
                tables = load_metadata(text)
            except MetadataError as err:
                self.error(str(err), tok)
        for (kind, index), const in self.meta.items():
            if tok is None:
                continue  # no section: the constants stay placeholders without data
            entries = tables.get(kind)
            if entries is None or index >= len(entries):
                raise DiagnosticError(f"meta[{kind}][{index}] is not in the metadata section",
                                      self.meta_spans[(kind, index)])
            const.data = entries[index]

    def def_head(self, children):
        name_tok, params, *rest = children
        self.push_function_scope(params[0])
        return name_tok, params, rest[0] if rest else None

    def definition(self, children):
        (name_tok, (params, attrs), ret_type), body = children
        self.scopes.pop()
        span = self.span(name_tok)
        return name_tok.value[1:], Function(params, body, ret_type, attrs, span), name_tok

    # ------------------------------------------------------------------ blocks

    def open_block(self, children) -> None:
        self.block_depth += 1
        if self.block_depth > MAX_BLOCK_NESTING:  # printing indents each level again: bound the cost
            self.error(f"blocks nested more than {MAX_BLOCK_NESTING} deep are not supported", children[0])
        self.scopes.append(_Scope(self.scopes[-1].graph))

    def block(self, children):
        self.block_depth -= 1
        self.scopes.pop()
        return children[1]

    def body(self, children):
        if len(children) == 1:
            return children[0]
        stmts, result = children
        for stmt in reversed(stmts):
            if type(stmt) is tuple:  # (var, value) of a let binding
                result = Let(stmt[0], stmt[1], result, stmt[0].span)
            else:  # `e1; e2` evaluates e1 for effect: a let of an anonymous variable
                result = Let(Var("", IncompleteType()), stmt, result, getattr(stmt, "span", None))
        return result

    # statements: a graph binding or a free_var gives None, and is left out of the list
    def first_stmt(self, children) -> list:
        return [] if children[0] is None else [children[0]]

    def next_stmt(self, children) -> list:
        if children[1] is not None:
            children[0].append(children[1])
        return children[0]

    def first_fused(self, children) -> list:
        self.fused_statement(children[0])
        return []

    def next_fused(self, children) -> list:
        self.fused_statement(children[1])
        return children[0]

    def expr_stmt(self, children):
        return children[0]

    def graph_binding(self, children) -> None:
        tok, value = children
        graph = self.scopes[-1].graph
        index = int(tok.value[1:])
        if index in graph:
            self.error(f"graph variable `{tok.value}` is already defined", tok)
        graph[index] = value
        return None

    def let_head(self, children) -> Var:
        return self.bind(children[0], children[1] if len(children) == 2 else None)

    def let_binding(self, children):
        return children[0], children[1]

    def free_var(self, children) -> None:
        tok = children[0]
        self.bind(tok, children[1] if len(children) == 2 else None)
        return None

    # ------------------------------------------------------------------ functions

    def param(self, children):
        tok = children[0]
        return Var(tok.value[1:], children[1] if len(children) == 2 else None, self.span(tok))

    def param_list(self, children):
        params, attrs = [], []
        for c in children:
            (attrs if type(c) is tuple else params).append(c)
        return params, (Attrs(attrs) if attrs else None)

    def ret_type(self, children):
        return children[0]

    def fn_head(self, children):
        params = children[0]
        self.push_function_scope(params[0])
        return params, children[1] if len(children) == 2 else None

    def fn_expr(self, children):
        ((params, attrs), ret_type), body = children
        inner = self.scopes.pop().graph
        outer = self.scopes[-1].graph
        for index, node in inner.items():  # TVM's graph bindings are module-wide: keep them visible
            outer.setdefault(index, node)
        return Function(params, body, ret_type, attrs, params[0].span if params else body.span)

    def if_expr(self, children):
        if_tok, cond, true_branch, false_branch = children
        return If(cond, true_branch, false_branch, self.span(if_tok))

    # ------------------------------------------------------------------ calls and atoms

    def call(self, children):
        callee, lpar = children[0], children[1]
        args, attrs = children[2] if len(children) == 3 else ((), None)
        # Variables are shared nodes without a position of their own: locate the call by
        # its callee's name, which ends right before the `(`.
        name = {GlobalVar: "@", Var: "%"}.get(type(callee))
        width = len(name + callee.name_hint) if name is not None else 1
        start = lpar.column - width if name is not None and lpar.column > width else lpar.column
        return Call(callee, args, attrs, Span(self.source, lpar.line, start, lpar.line, start + width))

    def op_call(self, children):
        tok = children[0]
        span = self.span(tok)
        if len(children) == 1:
            args, attrs = (), None
        else:
            args, attrs = children[1]
        return Call(self.op(tok.value, span), args, self.op_attrs(tok.value, attrs, span), span)

    def binop_chain(self, children):
        """`a * b + c`: TVM's ParseExprBinOp (operator-precedence parsing, every operator
        left-associative) over the flat list [operand, op, operand, ...]."""
        exprs, ops = [children[0]], []

        def reduce() -> None:
            tok = ops.pop()
            right, left = exprs.pop(), exprs.pop()
            name, _ = _BINARY_OPERATORS[tok.value]
            span = self.span(tok)
            exprs.append(Call(self.op(name, span), (left, right), self.op_attrs(name, None, span), span))

        for k in range(1, len(children), 2):
            tok, right = children[k], children[k + 1]
            precedence = _BINARY_OPERATORS[tok.value][1]
            while ops and precedence <= _BINARY_OPERATORS[ops[-1].value][1]:
                reduce()
            ops.append(tok)
            exprs.append(right)
        while ops:
            reduce()
        return exprs[0]

    def op(self, name: str, span: Span) -> Op:
        """The operator called `name`; unknown operators are an error, as in TVM."""
        op = Op.get(name)
        if name not in self.known_ops:
            if lookup(name) is None:
                raise DiagnosticError(f"unknown operator `{name}`", span)
            self.known_ops.add(name)
        return op

    def op_attrs(self, name: str, attrs, span: Span):
        """Check the attributes against the op's declaration; normalise; fill defaults."""
        if attrs is None:
            cached = self.default_attrs.get(name, self)
            if cached is not self:
                return cached
        try:
            result = lookup(name).make_attrs(attrs)
        except AttrError as err:
            raise DiagnosticError(str(err), span) from None
        if attrs is None:
            self.default_attrs[name] = result
        return result

    def call_args(self, children):
        if type(children[-1]) is not tuple:
            return children, None
        args = [c for c in children if type(c) is not tuple]
        return args, Attrs(c for c in children if type(c) is tuple)

    def tuple_get_item(self, children):
        value, tok = children
        # `%t.0.1` lexes as `%t` `.` `0.1` (one number token, as in TVM): read it as two projections.
        for index in tok.value.split("."):
            if not index.isdigit():
                self.error(f"expected a tuple index, got `{tok.value}`", tok)
            value = TupleGetItem(value, int(index), self.span(tok))
        return value

    def local_ref(self, children):
        tok = children[0]
        name = tok.value[1:]
        for scope in reversed(self.scopes):
            var = scope.names.get(name)
            if var is not None:
                return var
        self.error(f"undefined variable `%{name}`", tok)

    def graph_ref(self, children):
        tok = children[0]
        index = int(tok.value[1:])
        seen = None
        for scope in reversed(self.scopes):
            if scope.graph is not seen:
                seen = scope.graph
                value = seen.get(index)
                if value is not None:
                    return value
        self.error(f"graph variable `{tok.value}` used before its definition", tok)

    def global_ref(self, children):
        tok = children[0]
        name = tok.value[1:]
        self.global_refs.setdefault(name, self.span(tok))
        return self.global_var(name)

    def op_ref(self, children):
        return self.op(children[0].value, self.span(children[0]))

    def number(self, children):
        tok = children[0]
        value, dtype = self.literal(tok)
        return Constant(_numpy().array(value, dtype=dtype), self.span(tok))

    def literal(self, tok: Token):
        try:
            return parse_number(tok.value)
        except LiteralError as err:
            self.error(str(err), tok)

    def true(self, _children):
        return Constant(_numpy().array(True), None)

    def false(self, _children):
        return Constant(_numpy().array(False), None)

    def meta_ref(self, children):
        tok = children[0]
        kind, _, index = tok.value[5:-1].partition("][")
        if kind != "relay.Constant":
            self.error(f"unsupported metadata reference `meta[{kind}]` (only relay.Constant)", tok)
        key = (kind, int(index))
        const = self.meta.get(key)
        if const is None:
            const = self.meta[key] = Constant(None, self.span(tok))
            self.meta_spans[key] = self.span(tok)
        return const

    def open_paren(self, _children) -> None:
        self.scopes.append(_Scope(self.scopes[-1].graph))

    def empty_tuple(self, _children):
        self.scopes.pop()
        return Tuple(())

    def paren(self, children):
        self.scopes.pop()
        return children[1]

    def tuple(self, children):
        self.scopes.pop()
        fields = children[1:]
        return Tuple(fields, getattr(fields[0], "span", None))

    # ------------------------------------------------------------------ attributes

    def attr(self, children):
        return children[0].value, children[1]

    def number_attr(self, children):
        tok = children[0]
        value, dtype = self.literal(tok)
        if dtype == "int32" and "i" not in tok.value:
            return value
        if dtype == "float32":
            return value
        return TypedScalar(value, dtype)

    def string_attr(self, children):
        return _unescape(children[0].value[1:-1])

    def true_attr(self, _children):
        return True

    def false_attr(self, _children):
        return False

    def version(self, children):
        tok = children[0]
        version = tok.value.split("=", 1)[1].strip().rstrip("]").strip().strip('"')
        if version != "0.0.5":
            self.error(f'invalid semantic version "{version}": only text format "0.0.5" is supported', tok)

    def none(self, _children):
        return None

    def list_attr(self, children):
        return tuple(children)

    def meta_attr(self, children):
        self.error("metadata references are not supported as attribute values", children[0])

    # ------------------------------------------------------------------ types

    def tensor_type(self, children):
        *dims, dtype_tok = children
        return TensorType(tuple(self.dim(d) for d in dims), self.dtype(dtype_tok))

    def dim(self, d):
        if d is ANY:
            return ANY
        value, dtype = self.literal(d)
        if not dtype.startswith("int") or value < 0:
            self.error(f"a tensor dimension must be a non-negative integer or `?`, not `{d.value}`", d)
        return value

    def any_dim(self, _children):
        return ANY

    def dtype(self, tok: Token) -> str:
        if not is_valid_dtype(tok.value):
            self.error(f"unknown data type `{tok.value}`", tok)
        return tok.value

    def scalar_type(self, children):
        return TensorType((), self.dtype(children[0]))

    def tuple_type(self, children):
        return TupleType(children)

    def func_type(self, children):
        return FuncType(children[:-1], children[-1])

    def incomplete_type(self, _children):
        return IncompleteType()


# TVM's DefaultOpTable (src/relay/parser/op_table.h): operator -> (Relay op, precedence)
_BINARY_OPERATORS = {
    "*": ("multiply", 12), "/": ("divide", 12), "+": ("add", 10), "-": ("subtract", 10),
    "<": ("less", 8), "<=": ("less_equal", 8), ">": ("greater", 8), ">=": ("greater_equal", 8),
    "==": ("equal", 7), "!=": ("not_equal", 7),
}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------- the parser


_TOKEN_NAMES = {
    "LOCAL": "a local variable (`%x`)", "GRAPH_VAR": "a graph variable (`%0`)",
    "GLOBAL": "a global name (`@f`)", "NAME": "a name", "NUMBER": "a number",
    "STRING": "a string", "META_REF": "a `meta[...]` reference",
    "LBRACE": "`{`", "METADATA": "`#[metadata]`", "VERSION": "`#[version = ...]`", "$END": "end of input",
    "ATOMIC_CALL": None, "FUSED_STATEMENT": None,  # fast-path spellings of calls and bindings
    **{f"OP_{k}": None for k in ("MUL", "DIV", "ADD", "SUB", "LT", "LE", "GT", "GE", "EQ", "NE")},
}


class _Parser:
    """Lark LALR parsers for the grammar, all calling one reusable builder.

    Every input is first read with the fused grammar (`grammar/relay.lark`, whose fused
    terminals read whole lines; relay_fused.py), by Lark's compiled engine from
    `lark_cython` when it is installed (same tables, same callbacks, about twice as fast
    per token) and by pure-Python Lark otherwise. An input on which that reports any error
    is read again by pure-Python Lark with the reference grammar (the same without its
    `// fused` lines): its diagnostic is the one the user sees, with the acceptable tokens
    listed (lark_cython's syntax errors cannot list them).

    `IRTOOL_PARSER_ENGINE=python`, `=compiled` or `=reference` forces one engine for every
    input, so that tests can run everything through each of them."""

    def __init__(self) -> None:
        from .. import grammar  # a plain read: importlib.resources costs start-up time

        with open(os.path.join(os.path.dirname(grammar.__file__), "relay.lark"), encoding="utf-8") as f:
            self.grammar = f.read()
        self.builder = _Builder(SourceFile("<input>", ""))
        self.lock = threading.Lock()
        self._python: Lark | None = None
        self._compiled: Lark | None = None
        self._reference: Lark | None = None

    def _make(self, grammar: str, **extra) -> Lark:
        return Lark(grammar, parser="lalr", lexer="basic", maybe_placeholders=False, cache=True,
                    transformer=self.builder, **extra)

    def python_engine(self) -> Lark:
        if self._python is None:
            self._python = self._make(self.grammar)
        return self._python

    def reference_engine(self) -> Lark:
        if self._reference is None:
            lines = [line.removeprefix("// reference: ") for line in self.grammar.split("\n")
                     if not line.endswith("// fused")]
            self._reference = self._make("\n".join(lines))
        return self._reference

    def compiled_engine(self) -> Lark | None:
        if self._compiled is None:
            try:
                import lark_cython
            except ImportError:
                return None
            self._compiled = self._make(self.grammar, _plugins=lark_cython.plugins)
        return self._compiled

    def first_engine(self) -> Lark:
        engine = os.environ.get("IRTOOL_PARSER_ENGINE", "auto")
        if engine == "reference":
            return self.reference_engine()
        if engine == "python":
            return self.python_engine()
        return self.compiled_engine() or self.python_engine()


@functools.lru_cache(maxsize=1)
def _parser() -> _Parser:
    return _Parser()


def _describe_expected(parser: Lark, names) -> str:
    shown = []
    for name in sorted(set(names)):
        if name in _TOKEN_NAMES:
            if _TOKEN_NAMES[name]:
                shown.append(_TOKEN_NAMES[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            continue
        shown.append(f"`{pattern.value}`" if pattern.type == "str" else name.lower())
    if len(shown) > 8:
        shown = shown[:8] + ["…"]
    return ", ".join(shown)


def _convert_error(err: UnexpectedInput, source: SourceFile, parser: Lark) -> DiagnosticError:
    if isinstance(err, UnexpectedCharacters):
        char = source.text[err.pos_in_stream] if err.pos_in_stream < len(source.text) else ""
        if source.text.startswith("/*", err.pos_in_stream):
            message = "unterminated or too deeply nested `/* */` comment"
        elif char == '"':
            message = "unterminated string literal"
        else:
            message = f"unexpected character `{char}`"
        return DiagnosticError(message, Span(source, err.line, err.column))
    if isinstance(err, UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            lines = source.text.rstrip().split("\n")
            span = Span(source, len(lines), max(1, len(lines[-1]) + 1))
            return DiagnosticError(f"unexpected end of input; expected {_describe_expected(parser, err.expected)}",
                                   span)
        if tok.type == "OP_DIV" and source.text.startswith("/*", tok.start_pos):
            # `/*` that the comment terminal could not close: the division operator is what is left
            return DiagnosticError("unterminated or too deeply nested `/* */` comment",
                                   Span(source, tok.line, tok.column))
        expected = _describe_expected(parser, err.accepts or err.expected)
        return DiagnosticError(f"unexpected `{tok.value}`; expected {expected}",
                               Span(source, tok.line, tok.column, tok.end_line, tok.end_column))
    if isinstance(err, UnexpectedEOF):
        lines = source.text.rstrip().split("\n")
        return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
    return DiagnosticError(str(err))


def parse_relay(text: str, source_name: str = "<input>"):
    """Parse Relay text. Returns `(module, None)` for a module of `def`s, or `(None, expr)`
    for a bare expression such as `fn (%x) { %x }`."""
    source = SourceFile(source_name, text)
    parser = _parser()
    with parser.lock, gc_paused():
        lark = parser.first_engine()
        try:
            try:
                parser.builder.__init__(source)
                return lark.parse(text)
            except (UnexpectedInput, DiagnosticError, Unfused):
                if lark is parser.reference_engine():
                    raise
            # the reference grammar's diagnostic, for an input the fused grammar found an error in
            parser.builder.__init__(source)
            lark = parser.reference_engine()
            return lark.parse(text)
        except UnexpectedInput as err:
            raise _convert_error(err, source, lark) from None
        finally:
            parser.builder.__init__(SourceFile("<input>", ""))
