"""Fused Relax bindings (irtool/text/tvmscript/fused.py) give what the general rules give.

A line such as `lv: R.Tensor((1, 4), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1])` is
one FUSED_BINDING token, built directly by the Relax builder. Here every such line shape,
and mutants of them, is read with the fused grammar and with the reference grammar
(`IRTOOL_PARSER_ENGINE=reference`, the grammar without its `// fused` lines): the syntax
trees (nodes, tokens, positions), the modules (structurally, as printed text and in every
span) and the diagnostics `irtool-opt` prints (file:line:col, source line, caret) must agree.
"""

from __future__ import annotations

import io
import random
import re

import pytest
from fuzzing import corpus, mutate
from test_tvmscript_syntax_fast import _outcome, _reference

from irtool.cli.opt import run
from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir.structural import structural_equal
from irtool.text import detect_syntax, parse, to_text
from irtool.text.tvmscript import syntax
from irtool.text.tvmscript.fused import FUSED_BINDING_PATTERN, FusedBinding

ACT = 'R.Tensor((1, 4, 8, 8), dtype="float32")'
CONV = ('strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", '
        'kernel_layout="OIHW", out_layout="NCHW", out_dtype=None')
# (annotation, value) with {p} the previous variable: every kind of argument the token reads
BINDINGS = [
    (ACT, "R.nn.conv2d({p}, w, " + CONV + ")"),
    (ACT, "R.add({p}, b)"),
    (ACT, "R.nn.relu({p})"),
    ('R.Tensor((1, 256), dtype="float32")', "R.reshape({p}, R.shape([1, 256]))"),
    ('R.Tensor((256, 1), dtype="float32")', "R.permute_dims({p}, axes=[1, 0])"),
    ('R.Tensor((1, 256), dtype="float32")', "R.permute_dims({p}, axes=None)"),
    ('R.Tensor((1,), dtype="float32")', "R.sum({p}, axis=[1], keepdims=False)"),
    ('R.Tensor((1,), dtype="float32")', "R.mean({p}, axis=[0], keepdims=True)"),
    ('R.Tensor((1,), dtype="float16")', 'R.astype({p}, dtype="float16")'),
    ('R.Tensor((1,), dtype="float16")', "R.nn.softmax({p}, axis=-1)"),
    ('R.Tensor((1,), dtype="float16")', "R.nn.leakyrelu({p}, alpha=0.01)"),
    ('R.Tensor((1,), dtype="float16")', "R.clip({p}, min=-1.5e-2, max=.5)"),
    ('R.Tensor((1,), dtype="float16")', 'R.add({p}, metadata["ir.GenericConst"][0])'),
    ('R.Tensor((), dtype="float16")', "R.sum({p})"),
]


def relax_function(bindings=BINDINGS, dataflow: bool = True) -> str:
    lines = ["@R.function",
             f"def main(x: {ACT}, w: R.Tensor((4, 4, 3, 3), dtype=\"float32\"), "
             f"b: R.Tensor((1, 4, 1, 1), dtype=\"float32\")) -> {bindings[-1][0]}:"]
    indent = "    "
    if dataflow:
        lines.append("    with R.dataflow():")
        indent = "        "
    prev = "x"
    for i, (ann, value) in enumerate(bindings):
        name = "gv" if i == len(bindings) - 1 else f"lv{i}"
        lines.append(f"{indent}{name}: {ann} = {value.format(p=prev)}")
        prev = name
    if dataflow:
        lines.append("        R.output(gv)")
    lines.append("    return gv")
    return "\n".join(lines) + "\n"


def _spans(mod) -> list:
    """Every binding's variable, value and binding span, and its call's argument spans."""
    out = []
    for func in mod.functions.values():
        for block in func.body.blocks:
            for b in block.bindings:
                for node in (b, b.var, b.value, *getattr(b.value, "args", ())):
                    s = node.span
                    out.append(None if s is None else (s.line, s.col, s.end_line, s.end_col))
    return out


def _read(text: str, engine: str, monkeypatch):
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", engine)
    try:
        mod = parse(text, "f.py")
    except DiagnosticError as err:
        return "error", err.args[0], (err.span.line, err.span.col, err.span.end_line, err.span.end_col)
    return mod


def test_the_grammar_holds_the_composed_pattern():
    grammar = syntax._grammar()
    line = next(line for line in grammar.split("\n") if line.startswith("FUSED_BINDING"))
    assert line == f"FUSED_BINDING.4: /{FUSED_BINDING_PATTERN}/  // fused"


def test_fused_lines_are_built_directly_and_equal_the_general_rules(monkeypatch):
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", "python")
    text = relax_function()
    tree = syntax._syntax_tree(text, None)
    fused = [n for n in tree.iter_subtrees_topdown() if isinstance(n, FusedBinding)]
    assert len(fused) == len(BINDINGS)  # every line above is one token
    fast = _read(text, "python", monkeypatch)
    reference = _read(text, "reference", monkeypatch)
    assert structural_equal(fast, reference)
    assert to_text(fast) == to_text(reference)
    assert _spans(fast) == _spans(reference)
    # the builder took the fast path: no line was expanded into its syntax nodes
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", "python")
    from irtool.text.tvmscript.parser import _ModuleBuilder

    tree = syntax._syntax_tree(text, None)
    _ModuleBuilder(None, None).build(tree)
    assert all(n._children is None for n in tree.iter_subtrees_topdown() if isinstance(n, FusedBinding))


def test_outside_a_dataflow_block_too(monkeypatch):
    text = relax_function(dataflow=False)
    fast, reference = _read(text, "python", monkeypatch), _read(text, "reference", monkeypatch)
    assert structural_equal(fast, reference) and _spans(fast) == _spans(reference)
    assert isinstance(fast.functions[next(iter(fast.functions))].body.blocks[0].bindings[0].var, rx.Var)


# Lines the token reads whose meaning the general rules reject, or that the fast path hands
# back to them: each must give the general rules' diagnostic (or module), at the same place.
EDITS = [
    ("R.add({p}, b)", "R.add({p}, nothere)"),  # undefined name
    ("R.add({p}, b)", "R.ad({p}, b)"),  # unknown operator
    ("R.add({p}, b)", "R.add({p}, b, c=1)"),  # unknown attribute
    ("R.add({p}, b)", "R.add({p})"),  # missing argument
    ("R.add({p}, b)", "R.add({p}, b, b, b)"),  # too many
    ("R.add({p}, b)", "R.add({p}, R)"),  # a module where a value goes
    ("R.add({p}, b)", "R.add({p}, main)"),  # a global function as an argument
    ("R.add({p}, b)", "R.add({p}, {p}, {p})"),
    ("R.nn.relu({p})", "R.nn.relu({p}, {p})"),
    ("R.nn.relu({p})", "R.shape([1, 2])"),  # a special form
    ("R.nn.relu({p})", "R.const(1)"),
    ("R.nn.relu({p})", "R.nn.relu(lv99)"),
    ("R.nn.relu({p})", "R.memory.kill_tensor({p})"),
    ("R.sum({p}, axis=[1], keepdims=False)", "R.sum({p}, axis=[1], keepdims=7)"),
    ("R.sum({p}, axis=[1], keepdims=False)", "R.sum({p}, axis=[9], keepdims=False)"),
    ("R.sum({p}, axis=[1], keepdims=False)", "R.sum({p}, axis=1, axis=[1])"),
    ("R.sum({p}, axis=[1], keepdims=False)", 'R.sum({p}, axis="1")'),
    ('R.astype({p}, dtype="float16")', 'R.astype({p}, dtype="float99")'),
    ('R.astype({p}, dtype="float16")', "R.astype({p}, dtype=None)"),
    ("R.reshape({p}, R.shape([1, 256]))", "R.reshape({p}, R.shape([1, 255]))"),
    ("R.reshape({p}, R.shape([1, 256]))", "R.reshape({p}, R.shape([1, 256]), 3)"),
    ("R.nn.leakyrelu({p}, alpha=0.01)", "R.nn.leakyrelu({p}, alpha=1e999)"),
    ("R.nn.leakyrelu({p}, alpha=0.01)", "R.nn.leakyrelu({p}, alpha=1.)"),
    ("R.nn.leakyrelu({p}, alpha=0.01)", "R.nn.leakyrelu({p}, alpha=-0)"),
    ('R.add({p}, metadata["ir.GenericConst"][0])', 'R.add({p}, metadata["ir.GenericConst"][7])'),
    ('R.add({p}, metadata["ir.GenericConst"][0])', 'R.add({p}, metadata["relax.expr.Constant"][0])'),
    ('R.add({p}, metadata["ir.GenericConst"][0])', 'R.add(metadata["ir.GenericConst"][0], {p})'),
    ('R.add({p}, metadata["ir.GenericConst"][0])', 'R.add({p}, metadata["ir.GenericConst"][00])'),
    ('R.add({p}, metadata["ir.GenericConst"][0])', 'R.add({p}, metadata["ir.GenericConst"][0], metadata["ir.GenericConst"][0])'),
]
ANNOTATION_EDITS = [
    ('R.Tensor((1, 256), dtype="float32") = R.reshape', 'R.Tensor((1, 256), dtype="float31") = R.reshape'),
    ('R.Tensor((1, 256), dtype="float32") = R.reshape', 'R.Tensor((2, 256), dtype="float32") = R.reshape'),
    ('R.Tensor((1, 256), dtype="float32") = R.reshape', 'R.Tensor((1,), dtype="float32") = R.reshape'),
    ("def main(x:", "def main(R:"),  # `R` shadowed: nothing is fused-built
    ("def main(x:", "def main(metadata: R.Tensor((1, 4, 8, 8), dtype=\"float32\"), x:"),  # `metadata` shadowed
    ("lv1: ", "R: "),
    ("lv1: ", "None: "),  # keywords are never names of the token
    ("lv1: ", "lambda: "),
    ("lv1: ", "lv0: "),  # bound twice
    ("gv: ", "out: "),  # R.output names what is not bound
    ("R.nn.relu(lv1)", "R.nn.relu(lv1)(x)"),  # not a whole line
    ("R.nn.relu(lv1)", "R.nn.relu(lv1) + x"),
    ("R.nn.relu(lv1)", "R.nn.relu(lv1)  # a comment"),
    ("R.nn.relu(lv1)", "R.nn.relu(lv1) \\\n            "),
    ("R.nn.relu(lv1)", "R.nn.relu(if)"),
    ("R.nn.relu(lv1)", "R.nn.relu(None)"),
    ("R.nn.relu(lv1)", "R.if.relu(lv1)"),
    ("R.add(lv0, b)", "R.add(lv0, b, alpha=True)"),
]


LINE = 'y: R.Tensor((2,), dtype="float32") = R.nn.relu(x)'
# a fused line where the Relax builder's r_assign does not read it: the general rules decide
ELSEWHERE = [
    f"{LINE}\n",  # at top level
    f"@I.ir_module\nclass Module:\n    {LINE}\n",  # in the module class
    f'@T.prim_func\ndef f(x: T.Buffer((2,), "float32")):\n    {LINE}\n',  # in a PrimFunc
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32"), c: R.Tensor((), dtype="bool")):\n'
    f"    if c:\n        {LINE}\n    else:\n        {LINE}\n    return y\n",  # both branches of an if
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32"), c: R.Tensor((), dtype="bool")):\n'
    f"    if c:\n        {LINE}\n        z = y\n    else:\n        {LINE}\n    return y\n",
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    with R.dataflow():\n        {LINE}\n'
    f"        R.output(y)\n    return y\n",
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    R.func_attr({{"a": 1}})\n    {LINE}\n    return y\n',
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    with R.dataflow():\n        {LINE}\n'
    f"        {LINE}\n        R.output(y)\n    return y\n",  # bound twice
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    {LINE}; z = y\n    return y\n',
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n  {LINE}\n    return y\n',  # indentation
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    {LINE}\n  return y\n',
    f'@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n    return y\n    {LINE}\n',
]


def _cases() -> list[str]:
    base = relax_function()
    out = []
    for old, new in EDITS:
        bindings = [(a, new if v == old else v) for a, v in BINDINGS]
        out.append(relax_function(bindings))
        out.append(relax_function(bindings, dataflow=False))
    for old, new in ANNOTATION_EDITS:
        assert old in base, old
        out.append(base.replace(old, new, 1))
    return out + ELSEWHERE


def _opt(text: str, engine: str, tmp_path, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", engine)
    path = tmp_path / "f.py"
    path.write_text(text)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = run([str(path)], stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("text", _cases())
def test_same_module_or_diagnostic_as_the_general_rules(text, tmp_path, monkeypatch):
    fast = _opt(text, "python", tmp_path, monkeypatch)
    reference = _opt(text, "reference", tmp_path, monkeypatch)
    assert fast == reference
    assert "internal error" not in fast[2] and "Traceback" not in fast[2]
    a, b = _read(text, "python", monkeypatch), _read(text, "reference", monkeypatch)
    if isinstance(a, tuple):
        assert a == b
    else:
        assert structural_equal(a, b) and _spans(a) == _spans(b)


def test_some_cases_are_errors_and_some_are_modules(tmp_path, monkeypatch):
    codes = [_opt(t, "python", tmp_path, monkeypatch)[0] for t in _cases()]
    assert codes.count(1) > 15 and codes.count(0) >= 4


def _mutants(count: int) -> list[str]:
    """Single-line edits of fused lines: characters deleted, doubled, replaced."""
    rng = random.Random(2026)
    base = relax_function()
    lines = base.split("\n")
    fused_rows = [i for i, line in enumerate(lines) if re.search(r"= R\.", line)]
    alphabet = ' ,()[]=:."-_#\\1aRN\t'
    out = []
    for _ in range(count):
        row = rng.choice(fused_rows)
        line = lines[row]
        at = rng.randrange(len(line))
        kind = rng.randrange(3)
        if kind == 0:
            line = line[:at] + line[at + 1:]
        elif kind == 1:
            line = line[:at] + line[at] + line[at:]
        else:
            line = line[:at] + rng.choice(alphabet) + line[at + 1:]
        out.append("\n".join(lines[:row] + [line] + lines[row + 1:]))
    return out


def test_mutants_same_trees_and_syntax_errors():
    # what the fused grammar accepts, the reference accepts with the same tree; where the
    # fused grammar finds an error, the reference grammar re-reads the input (syntax.py)
    fast, reference = syntax._lark()[0], _reference()
    accepted = 0
    for text in _mutants(400):
        ours = _outcome(fast, text)
        if ours[0] not in ("token", "character", "input"):
            accepted += 1
            assert ours == _outcome(reference, text), text
    assert accepted > 50


def test_mutants_same_modules_and_diagnostics(tmp_path, monkeypatch):
    for text in _mutants(150):
        assert _opt(text, "python", tmp_path, monkeypatch) == _opt(text, "reference", tmp_path, monkeypatch), text


def test_corpus_mutants_same_output_or_diagnostic(tmp_path, monkeypatch):
    # mutants of the TVMScript lit corpus, whose printed Relax lines are mostly fused
    seeds = [t for t in corpus() if detect_syntax(t) == "tvmscript" and "R.function" in t]
    assert any(re.search(FUSED_BINDING_PATTERN, t, re.M) for t in seeds)
    rng = random.Random(7)
    for _ in range(200):
        text = mutate(rng, seeds).decode("utf-8", "replace")
        assert _opt(text, "python", tmp_path, monkeypatch) == _opt(text, "reference", tmp_path, monkeypatch), text


# Runs of fused lines (FUSED_RUN): one token while the lines are at the block's indentation,
# split into lines again by the indenter when they are not.
_L1 = 'a: R.Tensor((2,), dtype="float32") = R.nn.relu(x)'
_L2 = 'b: R.Tensor((2,), dtype="float32") = R.add(a, x)'
_HEAD_F = '@R.function\ndef f(x: R.Tensor((2,), dtype="float32")):\n'
RUNS = [
    _HEAD_F + f"    {_L1}\n    {_L2}\n    return b\n",  # one run
    _HEAD_F + f"    with R.dataflow():\n        {_L1}\n        {_L2}\n        R.output(b)\n    return b\n",
    _HEAD_F + f"    with R.dataflow():\n        {_L1}\n        R.output(a)\n    {_L2}\n    return b\n",
    _HEAD_F + f"    with R.dataflow():\n        {_L1}\n        R.output(a)\n    {_L2}\n    {_L2}\n    return b\n",
    _HEAD_F + f"    with R.dataflow():\n        {_L1}\n    {_L2}\n    return b\n",  # a dedent inside the run
    _HEAD_F + f"    {_L1}\n        {_L2}\n    return b\n",  # an indent inside the run
    _HEAD_F + f"    {_L1}\n  {_L2}\n    return b\n",  # a dedent to no level
    _HEAD_F + f"\t{_L1}\n        {_L2}\n        return b\n",  # a tab is eight columns
    _HEAD_F + f"\t{_L1}\n    {_L2}\n    return b\n",
    _HEAD_F + f"    {_L1}\r\n    {_L2}\r\n    return b\r\n",
    _HEAD_F + f"    {_L1}\n    {_L2}  # the end\n    # more\n\n    return b\n",
    _HEAD_F + f"    {_L1}\n    {_L2}\n    {_L1}\n    {_L2}\n    return b\n",
    f"{_L1}\n{_L2}\n",  # at top level
    f"@I.ir_module\nclass Module:\n    {_L1}\n    {_L2}\n",
    "@R.function\ndef f(x: R.Tensor((2,), dtype=\"float32\")): " + f"{_L1}\n{_L2}\n",  # after a one-line suite
    _HEAD_F + f"    if x:\n        {_L1}\n        {_L2}\n    else:\n        {_L1}\n        {_L2}\n    return b\n",
    _HEAD_F + f"    (x,\n    {_L1}\n    {_L2})\n    return x\n",  # inside brackets
]


@pytest.mark.parametrize("text", RUNS)
def test_runs_of_fused_lines_as_the_general_rules_read_them(text, tmp_path, monkeypatch):
    reference = _reference()
    fast = syntax._lark()[0]
    ours = _outcome(fast, text)
    if ours[0] not in ("token", "character", "input"):
        assert ours == _outcome(reference, text)
    assert _opt(text, "python", tmp_path, monkeypatch) == _opt(text, "reference", tmp_path, monkeypatch)


def test_a_run_is_one_token_and_its_lines_are_statements():
    from irtool.text.tvmscript.fused import FUSED_RUN_PATTERN

    grammar = syntax._grammar()
    line = next(line for line in grammar.split("\n") if line.startswith("FUSED_RUN"))
    assert line == f"FUSED_RUN.5: /{FUSED_RUN_PATTERN}/  // fused"
    text = RUNS[0]
    tokens = [t.type for t in syntax._lark()[0].lex(text)]
    assert "FUSED_RUN" in tokens and "FUSED_BINDING" not in tokens
    body = syntax._syntax_tree(text, None).children[0].children[-1].children[-1]
    assert [s.data for s in syntax.suite_stmts(body)] == ["simple_stmt"] * 3


def test_the_benchmark_module_reads_the_same_on_both_grammars(monkeypatch):
    # the text benchmarks/text_throughput.py times: one run token for the whole dataflow block
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from text_throughput import make_relax_module

    text = make_relax_module(600)
    fast, reference = _read(text, "python", monkeypatch), _read(text, "reference", monkeypatch)
    assert structural_equal(fast, reference)
    assert to_text(fast) == to_text(reference) == text.rstrip("\n")
    assert _spans(fast) == _spans(reference)
    tokens = [t.type for t in syntax._lark()[0].lex(text)]
    assert tokens.count("FUSED_RUN") == 1 and "FUSED_BINDING" not in tokens
