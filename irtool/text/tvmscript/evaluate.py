"""What the TIR and Relax builders share: scopes, and the evaluation of Python
expressions over the syntax tree (names, literals, attributes, subscripts, calls)."""

from __future__ import annotations

import keyword
import re
from typing import TYPE_CHECKING

from lark import Token, Tree

from ...diagnostics import DiagnosticError, Span
from .coarse import expand as expand_coarse
from .coarse import int_list, static_tensor_parts

if TYPE_CHECKING:
    from .parser import _ModuleBuilder


# ----------------------------------------------------------------------------- shared evaluation


class _Dotted:
    """A dotted name rooted at a module alias (`R.nn.conv2d`), resolved when called."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Module:
    """`cls` / `Module` inside the module: attribute access gives a GlobalVar."""


class _Metadata:
    """The `metadata` name: `metadata["ir.GenericConst"][i]`."""


class _MetaList:
    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


_ALIASES = {"R": "R", "T": "T", "I": "I", "tvm": "tvm", "relax": "R", "tir": "T", "tirx": "T"}
_PY_CONSTS = {"none": None, "true": True, "false": False}


class _Builder:
    """Expression evaluation shared by the Relax and TIR builders."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        self.mb = mb
        self.scopes: list[dict[str, object]] = [{}]

    # -- scopes
    def span(self, node) -> Span:
        return self.mb.span(node)

    def error(self, message: str, node):
        raise DiagnosticError(message, self.span(node))

    def lookup(self, name: str, node):
        if keyword.iskeyword(name):  # a keyword where the contextual lexer wanted a name (Python rejects it)
            self.error(f"`{name}` is a Python keyword, not a name", node)
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.mb.globals_scope:
            return self.mb.globals_scope[name]
        if name in _ALIASES:
            return _Dotted(_ALIASES[name])
        if name == "metadata":
            return _Metadata()
        if name in ("range",):
            return _Dotted(name)
        return self.undefined(name, node)

    def undefined(self, name: str, node):
        self.error(f"undefined name `{name}`", node)

    def define(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    # -- expressions
    def eval(self, node):
        if isinstance(node, Token):
            if node.type == "NAME":
                return self.lookup(str(node), node)
            self.error(f"unexpected `{node}`", node)
        method = getattr(self, "e_" + node.data, None)
        if method is None:
            self.error("this kind of expression is not part of TVMScript", node)
        try:
            return method(node)
        except NotPrimError as err:  # located at the innermost expression that needed a TIR value
            self.error(str(err), node)

    def e_name(self, node):
        return self.lookup(str(node.children[0]), node)

    def e_number(self, node):
        text = str(node.children[0])
        if re.fullmatch(r"\d+", text):
            return int(text)
        return float(text)

    def e_string(self, node):
        parts = [str(t) for t in node.children]
        if not any(_NEEDS_LITERAL_EVAL.search(p) for p in parts):
            return "".join(p[1:-1] for p in parts)  # the common case; literal_eval compiles each one
        import ast

        try:
            return "".join(ast.literal_eval(p) for p in parts)
        except (SyntaxError, ValueError) as err:  # e.g. a NUL byte or a bad escape inside the string
            self.error(f"invalid string literal ({_plain(err)})", node)

    def e_int_list(self, node):
        return int_list(node.children[0].value)

    def e_static_tensor(self, node):
        """`R.Tensor((1, 2), dtype="float32")` lexed as one token: the R.Tensor handler called
        directly when `R` is Relax and the builder has one, else the token-by-token tree."""
        handler = self.CALLS.get("R.Tensor")
        head = self.lookup("R", node)
        if handler is None or not (isinstance(head, _Dotted) and head.name == "R"):
            return self.eval(expand_coarse(node))
        dims, dtype = static_tensor_parts(node.children[0].value)
        return handler(self, node, [dims], {"dtype": dtype})

    def e_none(self, node):
        return None

    def e_true(self, node):
        return True

    def e_false(self, node):
        return False

    def e_tuple(self, node):
        return tuple(self.eval(c) for c in node.children)

    def e_empty_tuple(self, node):
        return ()

    def e_list(self, node):
        return [self.eval(c) for c in node.children if c is not None]

    def e_dict(self, node):
        out = {}
        for item in node.children:
            if item is None:
                continue
            out[self.eval(item.children[0])] = self.eval(item.children[1])
        return out

    def e_attribute(self, node):
        base_node, attr = node.children
        base = self.eval(base_node)
        name = str(attr)
        if isinstance(base, _Dotted):
            return _Dotted(f"{base.name}.{name}")
        if isinstance(base, _Module):
            return self.mb.global_var(name, node)
        return self.attribute(base, name, node)

    def attribute(self, base, name: str, node):
        self.error(f"`{name}` is not an attribute of this value", node)

    def e_subscript(self, node):
        base_node, subs = node.children
        base = self.eval(base_node)
        if isinstance(base, _Metadata):
            key = self.eval(subs.children[0])
            return _MetaList(key)
        if isinstance(base, _MetaList):
            return self.mb.metadata_ref(base.key, self.eval(subs.children[0]), node)
        return self.subscript(base, subs, node)

    def subscript(self, base, subs, node):
        self.error("this value cannot be subscripted", node)

    def call_args(self, node) -> tuple[list, dict, list]:
        """(positional values, keyword values, positional syntax nodes) of a call."""
        args_node = node.children[1]
        pos, kw, pos_nodes = [], {}, []
        if args_node is None:
            return pos, kw, pos_nodes
        as_written = self.keeps_arguments(node)
        for a in args_node.children:
            if isinstance(a, Tree) and a.data == "kwarg":
                kw[str(a.children[0])] = self.eval(a.children[1])
            elif isinstance(a, Tree) and a.data == "star_arg":
                value = self.eval(a.children[0])
                pos.extend(value)
                pos_nodes.extend([a] * len(value))
            else:
                value = self.eval(a)
                pos.append(value if as_written else self.argument(value, a))
                pos_nodes.append(a)
        return pos, kw, pos_nodes

    def keeps_arguments(self, node) -> bool:
        return True

    def argument(self, value, node):
        """A positional argument as the call takes it, right after it is evaluated."""
        return value

    def e_call(self, node):
        callee = self.eval(node.children[0])
        if isinstance(callee, _Dotted):
            handler = self.CALLS.get(callee.name)
            if handler is None:
                self.error(f"unknown name `{callee.name}`", node.children[0])
            pos, kw, pos_nodes = self.call_args(node)
            try:
                return handler(self, node, pos, kw)
            except TypeError as err:
                if "positional argument" in str(err) or "keyword argument" in str(err):
                    self.error(f"`{callee.name}`: {str(err).split(') ', 1)[-1]}", node)
                self.error(f"`{callee.name}`: invalid arguments ({_plain(err)})", node)
            except (ValueError, OverflowError) as err:  # a value the construct cannot hold (1e400 as int32...)
                self.error(f"`{callee.name}`: invalid value ({_plain(err)})", node)
        return self.call_value(callee, node)

    def call_value(self, callee, node):
        self.error("this value cannot be called", node)

    CALLS: dict = {}


# What a quoted string must not contain for its value to be the text between the quotes:
# escapes, and what Python's compiler rejects or rewrites (NUL, carriage return, lone surrogates).
_NEEDS_LITERAL_EVAL = re.compile(r"[\\\x00\r\ud800-\udfff]")


class NotPrimError(TypeError):
    """A value used where TIR needs an expression; the parser turns it into a located diagnostic."""


def _plain(err: Exception) -> str:
    """An exception's message for a diagnostic (Python's wording, without internals)."""
    text = str(err).split("\n")[0]
    return text[:200] or type(err).__name__
