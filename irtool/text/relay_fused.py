"""The Relay parser's fused tokens: whole calls and bindings read as one token.

`grammar/relay.lark` has three terminals (marked `// fused`) that read the commonest lines
of printed Relay whole: ATOMIC_CALL (`add(%a, %0)`), ATOMIC_BINDING (`%3 = add(%a, %0)`)
and FUSED_BINDING (a graph binding as an importer prints it, with constants, attributes,
projections and `/* ty=... */` comments). One token instead of thirty is most of the
parser's speed. The callbacks here decode the token text and build exactly what the
general rules would build, spans included.

They never report errors of their own: on anything a general rule would report (an
unknown operator, a bad attribute, an undefined variable), they raise `Unfused`, and the
parser re-reads the input with the reference grammar (the same grammar without the fused
lines), whose diagnostic is the one the user sees.
"""

from __future__ import annotations

import re

from ..diagnostics import Span
from ..ir.expr import Attrs, Call, Constant, TupleGetItem, TypedScalar
from .literals import LiteralError, parse_number


class Unfused(Exception):
    """A fused token the fast path does not decode: read the input with the reference grammar."""


# An attribute list, already checked by the token's regex: names, `[`, `]`, strings, scalars.
_ATTR_PIECE = re.compile(r'[ ,]*(?:([A-Za-z_][A-Za-z0-9_]*)=|(\[)|(\])|"([^"]*)"|([^ ,\[\]]+))')
_ATTRS_START = re.compile(r"(?:^|, ?)[A-Za-z_][A-Za-z0-9_]*=")
_COMMENT = re.compile(r"[ \t]*/\*[^*/\n]*\*/")
_META = "meta[relay.Constant]["
# A FUSED_STATEMENT token, whose shape the grammar's regex has checked: the bound number, then
# a variable or the operator and the text between the call's parentheses, then projections.
_STATEMENT = re.compile(r"%([0-9]+)[ \t]*=[ \t]*(?:(%[^.]+)|([^(]+)\((.*)\))((?:\.[0-9]+)*)"
                        r"(?:[ \t]*/\*[^*/\n]*\*/)?[ \t]*;", re.S)


def _attr_scalar(text: str):
    """The value the general rules give an attribute scalar (`number_attr` and friends)."""
    if text == "True":
        return True
    if text == "False":
        return False
    if text == "None":
        return None
    try:
        value, dtype = parse_number(text)
    except LiteralError:
        raise Unfused from None
    if dtype == "float32" or (dtype == "int32" and "i" not in text):
        return value
    return TypedScalar(value, dtype)


def decode_attrs(text: str) -> Attrs:
    """`padding=[1, 1, 1, 1], channels=64` -> Attrs, as `call_args` and `attr` build it."""
    pairs: list = []
    stack: list[list] = []
    key = None
    for name, open_list, close_list, string, scalar in _ATTR_PIECE.findall(text):
        if name:
            key = name
            continue
        if open_list:
            stack.append([])
            continue
        if close_list:
            value = tuple(stack.pop())
        elif scalar:
            value = _attr_scalar(scalar)
        else:
            value = string
        if stack:
            stack[-1].append(value)
        else:
            pairs.append((key, value))
    return Attrs(pairs)


class FusedTokens:
    """Callbacks of the fused terminals, mixed into the parser's builder (`_Builder`)."""

    def atomic_call(self, children, offset: int = 0):
        """`op(%a, %0, ...)` read as one token: look the operands up, build the Call."""
        tok = children[0]
        text = tok.value
        open_paren = text.index("(", offset)
        args = []
        if open_paren + 2 < len(text):
            for name in text[open_paren + 1:-1].replace(" ", "").split(","):
                args.append(self._operand(name))
        line, col = tok.line, tok.column
        name = text[offset:open_paren]
        span = Span(self.source, line, col + offset, line, col + open_paren)
        return Call(self._fused_op(name, span), args, self._fused_attrs(name, None, span), span)

    def fused_statement(self, tok) -> None:
        """`%3 = op(operands, attrs).0 /* ty=... */;` or `%3 = %2.0 /* ... */;` read as one token."""
        m = _STATEMENT.match(tok.value)
        line, col = tok.line, tok.column
        name = m.group(3)
        if name is None:  # `%2.0`: a projection of a variable
            value = self._operand(m.group(2))
        else:
            start = m.start(3)
            span = Span(self.source, line, col + start, line, col + start + len(name))
            inner = m.group(4)
            if "/*" in inner:  # type comments of operands
                inner = _COMMENT.sub("", inner)
            equal = inner.find("=")
            if equal < 0:
                operands, attrs = inner, self._fused_attrs(name, None, span)
            else:
                cut = inner.rfind(",", 0, equal)
                operands, attrs_text = (inner[:cut], inner[cut + 1:].lstrip()) if cut >= 0 else ("", inner)
                key = (name, attrs_text)
                attrs = self.fused_attr_cache.get(key)
                if attrs is None:
                    attrs = self.fused_attr_cache[key] = self._fused_attrs(name, decode_attrs(attrs_text), span)
            args = []
            if operands:
                graph = self.scopes[-1].graph
                position = m.start(4)
                for operand in operands.replace(" ", "").split(","):
                    if operand[0] != "%":  # meta[relay.Constant][i]: its span is its place in the line
                        position = tok.value.index(operand, position)
                        args.append(self._meta_constant(operand, Span(self.source, line, col + position, line,
                                                                         col + position + len(operand))))
                    elif operand[1].isdigit():
                        value = graph.get(int(operand[1:]))
                        args.append(value if value is not None else self._operand(operand))
                    else:
                        args.append(self._operand(operand))
            value = Call(self.op_cache.get(name) or self._fused_op(name, span), args, attrs, span)
        projections = m.group(5)
        if projections:  # `.0.1` is one NUMBER token of the general rules: one span for all
            start = m.start(5) + 1
            number = Span(self.source, line, col + start, line, col + m.end(5))
            for index in projections[1:].split("."):
                value = TupleGetItem(value, int(index), number)
        graph = self.scopes[-1].graph
        index = int(m.group(1))
        if index in graph:
            raise Unfused
        graph[index] = value
        return None

    # ------------------------------------------------------------------ helpers

    def _operand(self, name: str):
        """A variable operand, looked up as `graph_ref` / `local_ref` would."""
        scopes = self.scopes
        if name[1].isdigit():
            index = int(name[1:])
            value = scopes[-1].graph.get(index)
            if value is None:
                for scope in reversed(scopes):
                    value = scope.graph.get(index)
                    if value is not None:
                        return value
                raise Unfused
            return value
        key = name[1:]
        for scope in reversed(scopes):
            value = scope.names.get(key)
            if value is not None:
                return value
        raise Unfused

    def _meta_constant(self, text: str, span: Span) -> Constant:
        """`meta[relay.Constant][i]`, shared with every other reference to it (`meta_ref`)."""
        key = ("relay.Constant", int(text[len(_META):-1]))
        const = self.meta.get(key)
        if const is None:
            const = self.meta[key] = Constant(None, span)
            self.meta_spans[key] = span
        return const

    def _fused_op(self, name: str, span: Span):
        try:
            op = self.op_cache[name] = self.op(name, span)
        except Exception:
            raise Unfused from None
        return op

    def _fused_attrs(self, name: str, attrs, span: Span):
        try:
            return self.op_attrs(name, attrs, span)
        except Exception:
            raise Unfused from None
