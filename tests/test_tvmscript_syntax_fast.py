"""The TVMScript grammar's speed-ups give the trees and diagnostics of the plain grammar.

grammar/tvmscript.lark parses operators below `not` as one flat `op_seq` (rebuilt into the
nested nodes in syntax.py) and lexes TVM's spelling of `R.Tensor((1, 2), dtype="float32")`
and of `[1, 2]` as one token each (coarse.py). Here a reference parser is built from the
same grammar with those speed-ups undone (Python's level-per-rule precedence grammar, no
coarse terminals), and both parse the lit corpus, hand-written operator expressions and
mutants of them: the trees (node names, tokens, positions) and the syntax errors must agree.
"""

from __future__ import annotations

import importlib.resources
import random
import sys
import threading

import pytest
from fuzzing import corpus, mutate
from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedToken

from irtool.diagnostics import DiagnosticError
from irtool.ir.structural import structural_equal
from irtool.text import detect_syntax, parse, to_text
from irtool.text.tvmscript import syntax
from irtool.text.tvmscript.coarse import COARSE_TYPES, expand, first_token_of

# The expression rules as they were before the speed-ups: one rule per precedence level,
# atoms one reduction below atom_expr, a unit `arg` rule, no coarse tokens
_LEVELS = '''?test: or_test | lambdef
lambdef: "lambda" [NAME ("," NAME)*] ":" test
?or_test: and_test | and_test ("or" and_test)+ -> or_chain
?and_test: not_test | not_test ("and" not_test)+ -> and_chain
?not_test: "not" not_test -> not_
         | comparison
?comparison: bit_or (COMP_OP bit_or)*
?bit_or: bit_xor | bit_xor ("|" bit_xor)+ -> bitor_chain
?bit_xor: bit_and | bit_and ("^" bit_and)+ -> bitxor_chain
?bit_and: shift | shift ("&" shift)+ -> bitand_chain
?shift: arith (SHIFT_OP arith)*
?arith: term (ADD_OP term)*
?term: factor (MUL_OP factor)*
?factor: ADD_OP factor -> unary
       | "~" factor -> invert
       | power
?power: atom_expr | atom_expr _POW factor
_POW.2: "**"

?atom_expr: atom_expr "(" [args] ")" -> call
          | atom_expr "[" subscripts "]" -> subscript
          | atom_expr "." NAME -> attribute
          | atom

?atom: "(" test ")"
     | "(" ")" -> empty_tuple
     | "(" test "," ")" -> tuple
     | "(" test ("," test)+ ","? ")" -> tuple
     | "[" [test ("," test)* ","?] "]" -> list
     | "{" [dict_item ("," dict_item)* ","?] "}" -> dict
     | NAME -> name
     | NUMBER -> number
     | STRING+ -> string
     | "None" -> none
     | "True" -> true
     | "False" -> false

dict_item: test ":" test
args: arg ("," arg)* ","?
?arg: test | kwarg | "*" test -> star_arg
kwarg: NAME "=" test
'''

EXPRESSIONS = [
    "a + b * c - d", "-a ** -b ** c", "~a & b | c ^ d << 2 >> e", "a < b <= c == d", "not a < b or c and not d",
    "(a + b) * (c)", "x[i + 1, j * 2] // 3 % 4 / 5", "-(a)", "f(a + b, k=-1)", "+ - ~ a", "a ** b ** c", "a * -b",
    "(a) ** 2", "T.max(a, b) + (c * d)", "((a + b))", "a | b | c", "a & (b & c)", "a - - b", "a + not b", "a ** not b",
    "a <", "- ", "a ~ b", "[1, 2, 3]", "[1, 2][0]", "x[[1, 2]]", "R.Tensor((), dtype=\"float32\")",
    "R.Tensor((5,), dtype=\"int8\")", "R.Tensor((1, 2), dtype=\"float32\").shape", "def [1, 2]",
    "def R.Tensor((1,), dtype=\"f\")", "x R.Tensor((1,), dtype=\"f\")", "x [1]", "f(*[1, 2], [3])",
    "a and b or c", "not not a", "a or b or c", "a and (b or c)", "f(*a, b=1)", "f(a, *b,)", "not a and b", "a or",
    "(not a)", "f(not a, b and c)", "a and not", "-(a or b)",
]


def _reference() -> Lark:
    grammar = importlib.resources.files("irtool.grammar").joinpath("tvmscript.lark").read_text()
    grammar = syntax.reference_grammar(grammar)  # without fused bindings (fused.py)
    start = grammar.index("\n?test: ") + 1
    end = grammar.index("subscripts:")
    grammar = grammar[:start] + _LEVELS + grammar[end:]
    return Lark(grammar, parser="lalr", postlex=syntax._ScriptIndenter(), propagate_positions=True,
                maybe_placeholders=True)


def _shape(t):
    """A tree as nested tuples: names, token types and texts, positions."""
    if isinstance(t, Tree) and t.data in ("static_tensor", "int_list"):
        t = expand(t)
    if isinstance(t, Tree):
        m = t.meta
        pos = None if m.empty else (m.line, m.column, m.end_line, m.end_column, m.start_pos, m.end_pos)
        return t.data, pos, [_shape(c) for c in t.children]
    if isinstance(t, Token):
        # one-character operators are anonymous in one grammar and named in the other
        kind = "op" if len(t) <= 2 and not t.isalnum() else t.type
        return kind, str(t), t.line, t.column
    return t


def _outcome(parser: Lark, text: str):
    try:
        return _shape(parser.parse(text))
    except UnexpectedToken as err:
        tok = err.token
        value = first_token_of(tok)[0] if tok.type in COARSE_TYPES else str(tok)
        return "token", value, tok.line, tok.column, "_INDENT" in (err.expected or ())
    except UnexpectedCharacters as err:
        return "character", err.line, err.column
    except LarkError as err:  # an unexpected end of input, a bad dedent
        return "input", type(err).__name__


@pytest.fixture(scope="module")
def parsers():
    # the plain grammar's trees are a dozen levels per operator: the scheduled TIR in the lit
    # corpus (vector slices of sums of products) nests deeper than Python's default limit
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    return syntax._lark()[0], _reference()


def _texts(count: int) -> list[str]:
    seeds = [s for s in corpus() if detect_syntax(s) == "tvmscript"]
    rng = random.Random(11)
    texts = seeds + [f"x = {e}\n" for e in EXPRESSIONS] + [f"{e}\n" for e in EXPRESSIONS]
    texts += [mutate(rng, seeds).decode("utf-8", "replace") for _ in range(count)]
    out = []
    for text in texts:
        text, _ = syntax._split_metadata(text)
        out.append(text if text.endswith("\n") else text + "\n")
    return out


def test_same_trees_and_errors_as_the_plain_grammar(parsers):
    fast, reference = parsers
    texts = _texts(600)
    results: list = []

    def compare() -> None:
        for text in texts:
            ours, theirs = _outcome(fast, text), _outcome(reference, text)
            results.append((ours == theirs, text, not isinstance(ours, tuple) or
                            ours[0] not in ("token", "character", "input")))

    # a mutated seed may parse to a tree thousands of levels deep (the parsers are iterative;
    # _shape and tuple comparison recurse), how deep depending on the lit corpus: compare in a
    # thread whose stack holds a recursion limit of 200,000
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(limit, 200000))
    threading.stack_size(1 << 29)
    try:
        worker = threading.Thread(target=compare)
        worker.start()
        worker.join()
    finally:
        sys.setrecursionlimit(limit)
        threading.stack_size(stack)
    assert len(results) == len(texts)
    for equal, text, _ in results:
        assert equal, text
    assert sum(parsed for *_, parsed in results) > 150  # most seeds parse: real trees, not just errors


def test_operator_precedence_in_tir_values():
    # regression: `**` used to lex as two `*` (a syntax error); -a ** 2 is -(a ** 2)
    def module(expr: str):
        return parse(f"@T.prim_func\ndef f(a: T.int32, b: T.int32):\n    T.evaluate({expr})\n", "p.py")

    flat = module("a + b * 2 - -a ** 2 // 3 << 1 | a & b ^ 1")
    nested = module("((((a + (b * 2)) - ((-(a ** 2)) // 3)) << 1) | ((a & b) ^ 1))")
    assert structural_equal(flat, nested)
    assert not structural_equal(flat, module("(((a + (b * 2)) - ((-(a ** 2)) // 3)) << 1) | (a & (b ^ 1))"))
    assert "T.pow(a, 2) * -1 // 3 << 1 | a & b ^ 1" in to_text(flat)


def test_coarse_tokens_in_errors():
    with pytest.raises(DiagnosticError) as err:
        parse('@R.function\ndef f(x R.Tensor((1,), dtype="float32")):\n    return x\n', "e.py")
    d = err.value
    assert d.args[0] == "unexpected `R`"
    assert (d.span.line, d.span.col, d.span.end_col) == (2, 9, 10)
    with pytest.raises(DiagnosticError) as err:
        parse('@R.function\ndef f(x [1, 2]):\n    return x\n', "e.py")
    assert err.value.args[0] == "unexpected `[`"
    assert (err.value.span.line, err.value.span.col, err.value.span.end_col) == (2, 9, 10)


def test_static_tensor_with_a_shadowed_r_takes_the_plain_path():
    # `R` bound to a parameter: `R.Tensor` is then an attribute of a Relax variable
    text = ('@R.function\ndef f(R: R.Tensor((2,), dtype="float32")):\n'
            '    y: R.Tensor((2,), dtype="float32") = R\n    return y\n')
    with pytest.raises(DiagnosticError) as err:
        parse(text, "s.py")
    assert "`Tensor` is not an attribute" in err.value.args[0]
    assert (err.value.span.line, err.value.span.col, err.value.span.end_col) == (3, 8, 16)


def test_bad_dtype_in_a_static_tensor_is_located_at_the_annotation():
    text = '@R.function\ndef f(x: R.Tensor((2,), dtype="float3")):\n    return x\n'
    with pytest.raises(DiagnosticError) as err:
        parse(text, "d.py")
    assert err.value.args[0] == "unknown data type `float3`"
    assert (err.value.span.line, err.value.span.col, err.value.span.end_col) == (2, 10, 40)


def test_parsing_and_printing_tvmscript_does_not_load_numpy(tmp_path):
    # NumPy's import is a large part of a short run's start-up; only the interpreters need it
    import subprocess
    import sys

    path = tmp_path / "m.py"
    path.write_text('@R.function\ndef f(x: R.Tensor((2, 3), dtype="float32")):\n'
                    '    y: R.Tensor((3,), dtype="float32") = R.sum(x, axis=[0])\n    return y\n')
    code = ("import sys\nfrom irtool.text import parse, to_text\n"
            f"to_text(parse(open({str(path)!r}).read(), 'm.py'))\n"
            "print(not any(m.startswith('numpy.') for m in sys.modules))  # a lazy `numpy` has no submodules yet")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True", out.stderr
