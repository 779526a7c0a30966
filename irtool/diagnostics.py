"""Source files, spans and user-facing diagnostics.

Every user error (bad text, unknown pass, bad option, ill-formed IR) is raised as a
`DiagnosticError`; the command-line tools render it as

    file:line:col: error: message
    <the source line>
            ^~~~

and exit with status 1. Internal errors are ordinary exceptions.
"""

from __future__ import annotations


class SourceFile:
    """A named text buffer; spans point into it."""

    __slots__ = ("name", "text", "_lines")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self._lines: list[str] | None = None

    def line(self, lineno: int) -> str:
        if self._lines is None:
            self._lines = self.text.split("\n")
        if 1 <= lineno <= len(self._lines):
            return self._lines[lineno - 1].rstrip("\r")
        return ""


class Span:
    """A source range: 1-based line and column; `end_col` is exclusive and on `line`
    unless `end_line` says otherwise."""

    __slots__ = ("source", "line", "col", "end_line", "end_col")

    def __init__(
        self, source: SourceFile | None, line: int, col: int, end_line: int = 0, end_col: int = 0
    ) -> None:
        self.source = source
        self.line = line
        self.col = col
        self.end_line = end_line or line
        self.end_col = end_col or col + 1

    def __repr__(self) -> str:
        name = self.source.name if self.source else "<unknown>"
        return f"{name}:{self.line}:{self.col}"


class Diagnostic:
    """One message, optionally located at a span."""

    __slots__ = ("message", "span", "severity")

    def __init__(self, message: str, span: Span | None = None, severity: str = "error") -> None:
        self.message = message
        self.span = span
        self.severity = severity

    def render(self, default_name: str = "<input>") -> str:
        span = self.span
        if span is None:
            return f"{default_name}: {self.severity}: {self.message}"
        name = span.source.name if span.source is not None else default_name
        head = f"{name}:{span.line}:{span.col}: {self.severity}: {self.message}"
        if span.source is None:
            return head
        text = span.source.line(span.line)
        width = span.end_col - span.col if span.end_line == span.line else len(text) - span.col + 1
        width = max(1, min(width, len(text) - span.col + 1))
        pad = "".join(c if c == "\t" else " " for c in text[: span.col - 1])
        return f"{head}\n{text}\n{pad}^{'~' * (width - 1)}"


class DiagnosticError(Exception):
    """A user error: carries one or more diagnostics."""

    def __init__(self, message: str | list[Diagnostic], span: Span | None = None) -> None:
        if isinstance(message, list):
            self.diagnostics = message
        else:
            self.diagnostics = [Diagnostic(message, span)]
        super().__init__(self.diagnostics[0].message)

    @property
    def span(self) -> Span | None:
        return self.diagnostics[0].span

    def render(self, default_name: str = "<input>") -> str:
        return "\n".join(d.render(default_name) for d in self.diagnostics)
