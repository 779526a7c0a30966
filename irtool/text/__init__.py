"""Text formats: parse and print Relay (TVMScript for Relax/TIR comes with issue 5)."""

from __future__ import annotations

import re

from ..diagnostics import DiagnosticError, SourceFile, Span
from ..ir.module import IRModule

_COMMENT_OR_SPACE = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.S)


def detect_syntax(text: str) -> str:
    """`relay` or `tvmscript`, from the first significant token (DESIGN §2)."""
    pos = 0
    while True:
        m = _COMMENT_OR_SPACE.match(text, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
    rest = text[pos:pos + 40]
    if rest.startswith(("@I.", "@R.", "@T.", "# from tvm.script", "from tvm.script", "import tvm")):
        return "tvmscript"
    if rest.startswith("#") and not rest.startswith("#["):
        return "tvmscript"
    return "relay"


def parse(text: str, source_name: str = "<input>", syntax: str | None = None) -> IRModule:
    """Parse a module from text. A bare Relay expression becomes the module's `@main`."""
    syntax = syntax or detect_syntax(text)
    if syntax == "tvmscript":
        source = SourceFile(source_name, text)
        line = text[: len(text) - len(text.lstrip())].count("\n") + 1
        raise DiagnosticError("TVMScript (Relax/TIR) input is not supported yet; only Relay text is",
                              Span(source, line, 1))
    from .relay_parser import parse_relay

    mod, expr = parse_relay(text, source_name)
    return mod if mod is not None else IRModule.from_expr(expr)


def parse_expr(text: str, source_name: str = "<input>"):
    """Parse a Relay expression (e.g. `fn (%x) { %x }`)."""
    from .relay_parser import parse_relay

    mod, expr = parse_relay(text, source_name)
    if expr is None:
        raise DiagnosticError("expected an expression, found a module of definitions")
    return expr


def to_text(node, show_types: bool = False, show_meta_data: bool = True) -> str:
    """Print a module (or expression) as Relay text in TVM's layout."""
    from .relay_printer import print_relay

    return print_relay(node, show_types=show_types, show_meta_data=show_meta_data)


__all__ = ["detect_syntax", "parse", "parse_expr", "to_text"]
