"""TVMScript syntax: the Lark LALR grammar (grammar/tvmscript.lark) with Python's indentation
rules, the metadata section split off, and syntax errors as diagnostics."""

from __future__ import annotations

import functools
import os
import re
import threading

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import DedentError, Indenter

from ...diagnostics import DiagnosticError, SourceFile, Span
from .coarse import COARSE_TYPES, first_token_of
from .fused import FusedBinding, fused_run, run_indents, split_run
from .positions import Positions, end_of, install, start_of

# ----------------------------------------------------------------------------- syntax


class _ScriptIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token):  # noqa: N802 (lark's name)
        self.last_newline = token
        yield from super().handle_NL(token)

    def _process(self, stream):
        return super()._process(self._runs(stream))

    def _runs(self, stream):
        """A run of fused lines (FUSED_RUN) stays one token when its lines are all at the
        current indentation, as the lines of a block are; otherwise it becomes the tokens the
        lexer reads line by line, whose newlines then indent and dedent as usual."""
        for tok in stream:
            if tok.type == "FUSED_RUN":
                level = self.indent_level[-1]
                if any(i.count(" ") + i.count("\t") * self.tab_len != level for i in run_indents(tok)):
                    for binding, newline in split_run(tok):
                        yield binding
                        if newline is not None:
                            yield newline
                    continue
            yield tok


# ----------------------------------------------------------------------------- operators
#
# The grammar parses an operator expression below `not` as one flat `op_seq` (fewer LALR
# reductions per operand); here it becomes the tree the level-per-rule grammar made, level
# by level, from the loosest: each entry is (terminal type, node name, keeps the operator).
_LEVELS = (("COMP_OP", "comparison", True), ("BITOR", "bitor_chain", False),
           ("BITXOR", "bitxor_chain", False), ("BITAND", "bitand_chain", False),
           ("SHIFT_OP", "shift", True), ("ADD_OP", "arith", True), ("MUL_OP", "term", True))


def _node(data: str, children: list, first, last) -> Tree:
    return Tree(data, children, Positions(start_of(first), end_of(last)))


class _OperatorTree:
    """Rebuilds one `op_seq`: a recursive descent over its flat items, one function per level."""

    def __init__(self, items: list) -> None:
        self.items, self.pos = items, 0

    def level(self, depth: int):
        if depth == len(_LEVELS):
            return self.factor()
        kind, data, keep = _LEVELS[depth]
        first = self.items[self.pos]
        children = [self.level(depth + 1)]
        while self.pos < len(self.items) and getattr(self.items[self.pos], "type", None) == kind:
            op = self.items[self.pos]
            self.pos += 1
            if keep:
                children.append(op)
            children.append(self.level(depth + 1))
        if len(children) == 1:
            return children[0]
        return _node(data, children, first, self.items[self.pos - 1])

    def factor(self):
        item = self.items[self.pos]
        if isinstance(item, Token) and item.type in ("ADD_OP", "TILDE"):
            self.pos += 1
            operand = self.factor()
            if item.type == "TILDE":
                return _node("invert", [operand], item, self.items[self.pos - 1])
            return _node("unary", [item, operand], item, self.items[self.pos - 1])
        self.pos += 1  # an atom_expr
        if self.pos < len(self.items) and getattr(self.items[self.pos], "type", None) == "POW":
            self.pos += 1
            exponent = self.factor()
            return _node("power", [item, exponent], item, self.items[self.pos - 1])
        return item


class _Callbacks:
    """What lark calls instead of building a plain node, for the rules named here."""

    @staticmethod
    def op_seq(children: list):
        return _OperatorTree(children).level(0)

    @staticmethod
    def fused_binding(children: list):
        return FusedBinding(children[0])


_LOCK = threading.Lock()


def _grammar() -> str:
    from ... import grammar  # a plain read: importlib.resources costs start-up time

    with open(os.path.join(os.path.dirname(grammar.__file__), "tvmscript.lark"), encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=2)
def _lark(fused: bool = True) -> tuple[Lark, _ScriptIndenter]:
    """The parser of the grammar with its fused bindings (fused.py), or of the reference
    grammar without its `// fused` lines."""
    grammar = _grammar() if fused else reference_grammar(_grammar())
    indenter = _ScriptIndenter()
    parser = Lark(grammar, parser="lalr", postlex=indenter, propagate_positions=False,
                  maybe_placeholders=True, cache=True, transformer=_Callbacks())
    install(parser, {"_fused_run": fused_run})  # positions as lark's propagate_positions=True sets them
    return parser, indenter


def reference_grammar(grammar: str) -> str:
    """The grammar without its fused bindings: no `// fused` lines, `// reference: ` lines in use."""
    return "\n".join(line.removeprefix("// reference: ") for line in grammar.split("\n")
                     if not line.endswith("// fused"))


_METADATA = re.compile(r'^metadata\s*=\s*tvm\.ir\.load_json\("""(.*?)"""\)[ \t]*$', re.S | re.M)


def _split_metadata(text: str) -> tuple[str, str | None]:
    """Cut out the `metadata = tvm.ir.load_json(\"\"\"…\"\"\")` block (blanked, so line
    numbers stay), returning the remaining script and the JSON text."""
    m = _METADATA.search(text)
    if m is None:
        return text, None
    blank = "\n" * m.group(0).count("\n")
    return text[: m.start()] + blank + text[m.end():], m.group(1)


def _syntax_tree(text: str, source: SourceFile) -> Tree:
    """The syntax tree of `text`: read with the fused grammar, unless IRTOOL_PARSER_ENGINE is
    `reference`; a syntax error is always the reference grammar's."""
    if not text.endswith("\n"):
        text += "\n"
    with _LOCK:
        if os.environ.get("IRTOOL_PARSER_ENGINE") != "reference":
            parser, indenter = _lark(True)
            indenter.last_newline = None
            try:
                return parser.parse(text)
            except (DedentError, UnexpectedInput):
                pass
        return _reference_tree(text, source)


def _reference_tree(text: str, source: SourceFile) -> Tree:
    parser, indenter = _lark(False)
    indenter.last_newline = None
    try:
        return parser.parse(text)
    except DedentError:
        tok = indenter.last_newline
        line = tok.end_line if tok is not None else 1
        col = len(tok.value.rsplit("\n", 1)[-1]) + 1 if tok is not None else 1
        raise DiagnosticError("unindent does not match any outer indentation level",
                              Span(source, line, col)) from None
    except UnexpectedInput as err:
        raise _syntax_error(err, source) from None


def _syntax_error(err: UnexpectedInput, source: SourceFile) -> DiagnosticError:
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream
        char = source.text[pos] if pos < len(source.text) else ""
        message = "unterminated string literal" if char in "\"'" else f"unexpected character `{char}`"
        return DiagnosticError(message, Span(source, err.line, err.column))
    if isinstance(err, UnexpectedToken):
        tok = err.token
        if tok.type == "_INDENT":
            return DiagnosticError("unexpected indent", Span(source, tok.end_line, tok.end_column))
        if tok.type in ("$END", "_DEDENT") or tok.line is None:
            lines = source.text.rstrip().split("\n")
            return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
        if tok.type == "_NL":
            return DiagnosticError("unexpected end of line", Span(source, tok.line, tok.column))
        if "_INDENT" in (err.expected or ()):
            return DiagnosticError("expected an indented block", Span(source, tok.line, tok.column))
        if tok.type in COARSE_TYPES:  # reported at its first ordinary token
            first, width = first_token_of(tok)
            return DiagnosticError(f"unexpected `{first}`", Span(source, tok.line, tok.column, tok.line,
                                                                tok.column + width))
        return DiagnosticError(f"unexpected `{tok.value}`",
                               Span(source, tok.line, tok.column, tok.end_line, tok.end_column))
    if isinstance(err, UnexpectedEOF):
        lines = source.text.rstrip().split("\n")
        return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
    return DiagnosticError(str(err))


def suite_stmts(suite) -> list:
    """The statements of an indented block (its tokens and placeholders dropped)."""
    return [s for s in suite.children if s is not None and not isinstance(s, Token)]
