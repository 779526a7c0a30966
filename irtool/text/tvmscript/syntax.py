"""TVMScript syntax: the Lark LALR grammar (grammar/tvmscript.lark) with Python's indentation
rules, the metadata section split off, and syntax errors as diagnostics."""

from __future__ import annotations

import functools
import importlib.resources
import re
import threading

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import DedentError, Indenter

from ...diagnostics import DiagnosticError, SourceFile, Span

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


@functools.lru_cache(maxsize=1)
def _lark() -> tuple[Lark, _ScriptIndenter, threading.Lock]:
    grammar = importlib.resources.files("irtool.grammar").joinpath("tvmscript.lark").read_text()
    indenter = _ScriptIndenter()
    parser = Lark(grammar, parser="lalr", postlex=indenter, propagate_positions=True,
                  maybe_placeholders=True, cache=True)
    return parser, indenter, threading.Lock()


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
    parser, indenter, lock = _lark()
    with lock:
        indenter.last_newline = None
        try:
            return parser.parse(text if text.endswith("\n") else text + "\n")
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
        return DiagnosticError(f"unexpected `{tok.value}`",
                               Span(source, tok.line, tok.column, tok.end_line, tok.end_column))
    if isinstance(err, UnexpectedEOF):
        lines = source.text.rstrip().split("\n")
        return DiagnosticError("unexpected end of input", Span(source, len(lines), len(lines[-1]) + 1))
    return DiagnosticError(str(err))


def suite_stmts(suite) -> list:
    """The statements of an indented block (its tokens and placeholders dropped)."""
    return [s for s in suite.children if s is not None and not isinstance(s, Token)]
