"""Relay's infix operators (`%x * %y + %x`): parsed as TVM's parser groups them.

The property test writes random operator chains and compares the parse with a tree built
by an independent recursive-descent reading of TVM's operator table (op_table.h)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import irtool
from irtool.ir.expr import Call, Var
from irtool.text import relay_parser

# TVM v0.19 DefaultOpTable: (token, op, precedence); every rule is left-associative
TABLE = [("*", "multiply", 12), ("/", "divide", 12), ("+", "add", 10), ("-", "subtract", 10),
         ("<", "less", 8), ("<=", "less_equal", 8), (">", "greater", 8), (">=", "greater_equal", 8),
         ("==", "equal", 7), ("!=", "not_equal", 7)]
LEVELS = sorted({p for _, _, p in TABLE})


def expected_tree(operands: list[str], ops: list[str]):
    """Recursive descent, one level per precedence (loosest first), each loop left-associative."""
    tokens = [operands[0]]
    for op, x in zip(ops, operands[1:]):
        tokens += [op, x]
    pos = 0

    def parse(k: int):
        nonlocal pos
        if k == len(LEVELS):
            pos += 1
            return tokens[pos - 1]
        left = parse(k + 1)
        while pos < len(tokens) and _prec(tokens[pos]) == LEVELS[k]:
            op = tokens[pos]
            pos += 1
            left = (_name(op), left, parse(k + 1))
        return left

    return parse(0)


def _prec(token: str) -> int:
    return next(p for t, _, p in TABLE if t == token)


def _name(token: str) -> str:
    return next(n for t, n, _ in TABLE if t == token)


def _tree(e):
    if isinstance(e, Var):
        return e.name_hint
    assert isinstance(e, Call)
    return (e.op.name, _tree(e.args[0]), _tree(e.args[1]))


NAMES = ["a", "b", "c", "d"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([t for t, _, _ in TABLE]), min_size=1, max_size=8), st.data())
def test_operator_chains_group_as_tvm_does(ops, data):
    operands = [data.draw(st.sampled_from(NAMES)) for _ in range(len(ops) + 1)]
    text = " ".join(x for pair in zip(["%" + o for o in operands], ops + [""]) for x in pair).strip()
    src = f"def @main(%a: float32, %b: float32, %c: float32, %d: float32) {{\n  {text}\n}}\n"
    mod = irtool.parse(src, "chain.ir")
    assert _tree(mod.functions["main"].body) == expected_tree(operands, ops), text


def test_a_chain_prints_as_calls_and_parses_back_equal():
    mod = irtool.parse("def @main(%x: float32, %y: float32) {\n  %x * %y + %x <= %y\n}\n")
    text = irtool.to_text(mod)
    assert "less_equal(%1, %y)" in text and "add(%0, %x)" in text and "multiply(%x, %y)" in text
    assert irtool.structural_equal(irtool.parse(text), mod)


def test_the_operator_table_is_tvms():
    assert {t: (n, p) for t, n, p in TABLE} == relay_parser._BINARY_OPERATORS
