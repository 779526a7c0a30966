"""Coarse tokens: the two spellings TVM prints most, lexed as one token each.

A printed Relax binding is mostly `R.Tensor((1, 64, 56, 56), dtype="float32")` and
lists of integers (`padding=[1, 1, 1, 1]`, `R.shape([1, 64, 3136])`). Token by token
these are 10 to 20 lexer matches and as many LALR reductions; as one token (grammar
terminals STATIC_TENSOR and INT_LIST, only in TVM's exact spelling, so anything else
takes the ordinary path) they are one match and one reduction, decoded here by a regex.

Each coarse node can also be expanded into exactly the tree the token-by-token grammar
builds (same node names, tokens and positions), for the builder's rare cases that need
more than the literal value (a shadowed `R`, `R.Tensor` outside a Relax function)."""

from __future__ import annotations

import re

from lark import Token, Tree

from .positions import Positions

_DIM = re.compile(r"\d+")
_DTYPE = re.compile(r'dtype="([^"]*)"')


def static_tensor_parts(text: str) -> tuple[tuple[int, ...], str]:
    """The dimensions and dtype of `R.Tensor((d0, d1, ...), dtype="x")`."""
    shape, _, dtype = text.partition("), dtype=")
    return tuple(int(d) for d in _DIM.findall(shape)), dtype[1:-2]


def int_list(text: str) -> list[int]:
    """The values of `[i0, i1, ...]`."""
    return [int(d) for d in _DIM.findall(text)]


COARSE_TYPES = ("STATIC_TENSOR", "INT_LIST", "FUSED_BINDING", "FUSED_RUN")
FUSED_TYPES = COARSE_TYPES[2:]


def first_token_of(tok: Token) -> tuple[str, int]:
    """The text and width of the ordinary token a coarse one starts with (`R` or `[`), for
    a syntax error at it to read as it does without coarse tokens; a fused binding (fused.py)
    starts with its variable's name."""
    if tok.type in FUSED_TYPES:
        name = re.match(r"\w+", tok.value).group(0)
        return name, len(name)
    return ("R", 1) if tok.type == "STATIC_TENSOR" else ("[", 1)


# ----------------------------------------------------------------------------- expansion


def _tok(kind: str, value: str, tok: Token, offset: int) -> Token:
    col = tok.column + offset
    return Token(kind, value, tok.start_pos + offset, tok.line, col, tok.line, col + len(value),
                 tok.start_pos + offset + len(value))


def _tree(data: str, children: list, tok: Token, start: int, end: int) -> Tree:
    return Tree(data, children, Positions((tok.line, tok.column + start, tok.start_pos + start),
                                          (tok.line, tok.column + end, tok.start_pos + end)))


def _numbers(tok: Token, open_at: int, close_at: int) -> list[Tree]:
    """`number` nodes for the integers between the brackets at offsets open_at, close_at."""
    out = []
    for m in _DIM.finditer(tok.value, open_at, close_at):
        out.append(_tree("number", [_tok("NUMBER", m.group(), tok, m.start())], tok, m.start(), m.end()))
    return out


def expand(node: Tree) -> Tree:
    """The token-by-token tree of a `static_tensor` or `int_list` node."""
    tok = node.children[0]
    text = tok.value
    if tok.type == "INT_LIST":
        return _tree("list", _numbers(tok, 0, len(text)), tok, 0, len(text))
    # R.Tensor((d, ...), dtype="x"): call(attribute(name(R), Tensor), args(shape, kwarg(dtype, string)))
    head = _tree("attribute", [_tree("name", [_tok("NAME", "R", tok, 0)], tok, 0, 1), _tok("NAME", "Tensor", tok, 2)],
                 tok, 0, 8)
    close = text.index(")", 9) + 1  # the shape tuple is text[9:close]
    dims = _numbers(tok, 9, close)
    if not dims:
        shape = _tree("empty_tuple", [], tok, 9, close)
    else:
        shape = _tree("tuple", dims, tok, 9, close)
    kw_at = close + 2
    string = _tree("string", [_tok("STRING", text[kw_at + 6:-1], tok, kw_at + 6)], tok, kw_at + 6, len(text) - 1)
    kwarg = _tree("kwarg", [_tok("NAME", "dtype", tok, kw_at), string], tok, kw_at, len(text) - 1)
    args = _tree("args", [shape, kwarg], tok, 9, len(text) - 1)
    return _tree("call", [head, args], tok, 0, len(text))
