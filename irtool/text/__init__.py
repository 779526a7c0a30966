"""Text formats: Relay text, and TVMScript for Relax and TIR (DESIGN §2).

`parse` detects the syntax from the first significant token; `to_text` prints a module
in the syntax of its functions (TVMScript as soon as one is Relax or TIR)."""

from __future__ import annotations

import re

from ..diagnostics import DiagnosticError
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
    if rest.startswith(("@I.", "@R.", "@T.", "# from tvm.script", "from tvm.script", "import tvm", "metadata = tvm")):
        return "tvmscript"
    if rest.startswith("#") and not rest.startswith("#["):
        return "tvmscript"
    if re.match(r"[A-Za-z_]\w*\s*=\s*TypeVar\(", rest):  # TVM's symbolic-size header line
        return "tvmscript"
    return "relay"


def parse(text: str, source_name: str = "<input>", syntax: str | None = None) -> IRModule:
    """Parse a module from text. A bare Relay expression becomes the module's `@main`."""
    syntax = syntax or detect_syntax(text)
    if syntax == "tvmscript":
        from .tvmscript.parser import parse_tvmscript

        return parse_tvmscript(text, source_name)
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


def is_tvmscript_module(node) -> bool:
    """True for a module (or function) of Relax/TIR: it prints as TVMScript."""
    from ..ir.node import Node

    if isinstance(node, IRModule):
        return any(isinstance(f, Node) for f in node.functions.values())
    return isinstance(node, Node)


def to_text(node, show_types: bool = False, show_meta_data: bool = True) -> str:
    """Print a module (or expression) in TVM's layout: Relay text, or TVMScript for
    Relax/TIR (metadata shown when `show_meta_data`)."""
    if is_tvmscript_module(node):
        from .tvmscript.printer import print_tvmscript

        if isinstance(node, IRModule) and node.bare and len(node.functions) == 1:
            (name, fn), = node.functions.items()
            return print_tvmscript(fn, show_meta=show_meta_data, name=name)
        return print_tvmscript(node, show_meta=show_meta_data)
    from .relay_printer import print_relay

    return print_relay(node, show_types=show_types, show_meta_data=show_meta_data)


__all__ = ["detect_syntax", "is_tvmscript_module", "parse", "parse_expr", "to_text"]
