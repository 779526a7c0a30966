"""Source positions of syntax-tree nodes, set while lark builds the tree.

Lark's own `propagate_positions=True` did this in about 40% of the parse time (a generic
wrapper: `getattr` with defaults and `hasattr` for each of twelve fields, on every reduction).
This module does the same job with the same rules, cheaper: lark is built without it, and
`install` wraps each rule's tree-building callback.

The rules (lark's PropagatePositions): a new node starts where its first child that has a
position starts and ends where its last one ends, counting the tokens the tree leaves out
(`(` and `)`, keywords). Those outer limits are kept as `container_*`: when a `?rule`
passes a child through (`"(" test ")"`), only the child's container grows, so a parent
starting with `(a + b)` starts at the `(`, while `a + b` keeps its own span.
"""

from __future__ import annotations

from lark import Lark, Token, Tree
from lark.grammar import Rule


class Positions:
    """A node's `meta`: line/column/offset of its start and end (1-based lines and columns,
    end column exclusive, as lark's), and the container limits (see the module docstring)."""

    __slots__ = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
                 "container_line", "container_column", "container_start_pos",
                 "container_end_line", "container_end_column", "container_end_pos")

    def __init__(self, start: tuple, end: tuple) -> None:
        self.empty = False
        self.line, self.column, self.start_pos = start
        self.container_line, self.container_column, self.container_start_pos = start
        self.end_line, self.end_column, self.end_pos = end
        self.container_end_line, self.container_end_column, self.container_end_pos = end


def start_of(item) -> tuple | None:
    """(line, column, offset) where a token or node begins, its container included; None
    for a node without a position."""
    if isinstance(item, Token):
        return item.line, item.column, item.start_pos
    if isinstance(item, Tree):
        m = item._meta
        if m is None or m.empty:
            return None
        if type(m) is Positions:
            return m.container_line, m.container_column, m.container_start_pos
        return (getattr(m, "container_line", m.line), getattr(m, "container_column", m.column),
                getattr(m, "container_start_pos", m.start_pos))
    return None


def end_of(item) -> tuple | None:
    """(line, column, offset) just past the end of a token or node, its container included."""
    if isinstance(item, Token):
        return item.end_line, item.end_column, item.end_pos
    if isinstance(item, Tree):
        m = item._meta
        if m is None or m.empty:
            return None
        if type(m) is Positions:
            return m.container_end_line, m.container_end_column, m.container_end_pos
        return (getattr(m, "container_end_line", m.end_line), getattr(m, "container_end_column", m.end_column),
                getattr(m, "container_end_pos", m.end_pos))
    return None


def _with_positions(build):
    def callback(children):
        res = build(children)
        if not isinstance(res, Tree) or (len(children) == 1 and res is children[0]):
            return res  # a `?rule` passing its only child through: the child's container is its own
        start = end = None
        for c in children:
            start = start_of(c)
            if start is not None:
                break
        if start is None:
            return res  # nothing with a position: lark leaves the node's meta empty too
        for c in reversed(children):
            end = end_of(c)
            if end is not None:
                break
        m = res._meta
        if m is None or m.empty:
            res._meta = Positions(start, end)
        else:  # a child passed through: its container grows
            m.container_line, m.container_column, m.container_start_pos = start
            m.container_end_line, m.container_end_column, m.container_end_pos = end
        return res
    return callback


def install(parser: Lark, own: dict | None = None) -> None:
    """Wrap the tree-building callback of every grammar rule of `parser` (built with
    `propagate_positions=False`). Lark's parser holds this same dict of callbacks. `own`
    maps rule names to callbacks that take the rule's raw children (tokens the tree leaves
    out included) and set positions themselves."""
    callbacks = parser._callbacks
    for key, build in list(callbacks.items()):
        if not isinstance(key, Rule):
            continue
        if own and key.origin.name in own:
            callbacks[key] = own[key.origin.name]
        elif key.origin.name not in _OWN_POSITIONS:
            callbacks[key] = _with_positions(build)


# rules whose callback sets the positions these rules would: a fused binding spans its token
_OWN_POSITIONS = {"fused_binding"}
