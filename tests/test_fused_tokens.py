"""The fused terminals of grammar/relay.lark (whole calls and graph bindings read as one
token, relay_fused.py) build exactly what the general rules build, spans included, and
never change a diagnostic: every Relay text of the lit suite, the examples and the
benchmark is parsed with the fused grammar and with the reference grammar (the same without
the fused terminals) and the results compared node by node."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from irtool.diagnostics import DiagnosticError
from irtool.ir.structural import structural_equal
from irtool.ir.visitor import post_order
from irtool.text import detect_syntax, to_text
from irtool.text.relay_parser import parse_relay

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from text_throughput import relay_cnn_module  # noqa: E402


def _relay_texts() -> list[tuple[str, str]]:
    texts = []
    for path in sorted([*ROOT.glob("lit_tests/relay/*.ir"), *ROOT.glob("examples/*.ir")]):
        for k, part in enumerate(path.read_text().split("// -----")):
            if detect_syntax(part) == "relay" and part.strip():
                texts.append((f"{path.name}#{k}", part))
    texts.append(("cnn", relay_cnn_module(200)))
    return texts


TEXTS = _relay_texts()

# Hand-written lines around the fused shapes: spacing, comments, keywords, bad literals,
# names that only start like a variable, strings with comment markers, redefinitions.
EDGES = [
    "%0 = nn.conv2d(%x, %w, padding=[1, 1], channels=2, kernel_size=[1, 1]) /* ty=T */;\n%0",
    "%0 = nn.conv2d(%x, %w,padding=[1,1],channels=2, kernel_size=[1, 1]);\n%0",
    "%0 = add(%x /* a, b=1 */, %x);\n%0",
    "%0 = add(%x/* c */, %x);\n%0",
    "%0 = add(%x, %x) /* c */ /* d */;\n%0",
    "%0 = add(%x, %x) /* c */ + %x;\n%0",
    "%0 = clip(%x, a_min=1.2.3f, a_max=6f);\n%0",
    "%0 = clip(%x, a_min=0f, a_max=6f, a_max=7f);\n%0",
    "%0 = clip(%x, a_min=0f);\n%0",
    "%0 = clip(%x, a_min=0f, a_max=6f, bogus=1);\n%0",
    "%0 = nn.relu(%x);\n%0 = nn.relu(%x);\n%0",
    "%0 = nn.relu(%1);\n%0",
    "%0 = nn.relu(%y);\n%0",
    "%0 = nope(%x);\n%0",
    "%0 = Tensor(%x);\n%0",
    "%0 = _(%x);\n%0",
    "%0 = (%x, %x);\n%1 = %0.1;\n%2 = %0.0.0;\n%1",
    "%0 = (%x, (%x, %x));\n%1 = %0.1.0 /* ty=T */;\n%1",
    "%0 = (%x, (%x, %x));\n%1 = %0.1.0e1;\n%1",
    '%0 = nn.conv2d(%x, %w, padding=[1, 1], channels=2, kernel_size=[1, 1], data_layout="NCHW");\n%0',
    '%0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1], data_layout="/*");\n%0',
    "%0 = nn.pad(%x, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);\n%0",
    "%0 = reshape(%x, newshape=[-1, 4i64]);\n%0",
    "%0 = reshape(%x, newshape=[-1, 99999999999]);\n%0",
    "%0 = reshape(%x, newshape=[]);\n%0",
    "%0 = add(meta[relay.Constant][0] /* ty=T */, %x);\n%0",
    "%0 = add(meta[relay.Constant][0], %x);\n%1 = add(%0, meta[relay.Constant][0]);\n%1",
    "%0 = add(meta[relay.Other][0], %x);\n%0",
    "%0 = nn.batch_norm(%x, %g, %g, %g, %g).0;\n%1 = nn.batch_norm(%0, %g, %g, %g, %g, epsilon=1e-05f).2;\n%1",
    "%0 = zeros(shape=[1, 2], dtype=\"float32\");\n%0",
    "%0=add(%x,%x);\n%0",
    "%0 = add(%x, %x);%1 = add(%0, %0);  %1",
    "%0 = add(%x, %x)\n;\n%0",
    "%0 = add(%x, %x);\n%0 == %x",
    "%0 = add(%x, %x);\n%1 = %0;\n%1",
]


def _wrap(body: str) -> str:
    return ('#[version = "0.0.5"]\ndef @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], '
            "%g: Tensor[(2), float32]) {\n" + body + "\n}\n")


def _parse(text: str, engine: str, monkeypatch):
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", engine)
    try:
        return parse_relay(text, "case.ir"), None
    except DiagnosticError as err:
        return None, err.render()


def _spans(result) -> list:
    mod, expr = result
    roots = [expr] if mod is None else list(mod.functions.values())
    spans = []
    for root in roots:
        for node in post_order(root):
            span = getattr(node, "span", None)
            spans.append((type(node).__name__, None if span is None else
                          (span.line, span.col, span.end_line, span.end_col)))
    return spans


def _same(text: str, monkeypatch) -> None:
    fused, fused_error = _parse(text, "python", monkeypatch)
    compiled, compiled_error = _parse(text, "compiled", monkeypatch)
    reference, reference_error = _parse(text, "reference", monkeypatch)
    assert fused_error == compiled_error == reference_error
    if reference is None:
        return
    for result in (fused, compiled):
        ours, theirs = (result[0] or result[1]), (reference[0] or reference[1])
        assert structural_equal(ours, theirs, map_free_vars=True)
        assert to_text(ours) == to_text(theirs)
        assert _spans(result) == _spans(reference)


@pytest.mark.parametrize("name,text", TEXTS, ids=[name for name, _ in TEXTS])
def test_corpus_parses_the_same_with_and_without_fused_tokens(name, text, monkeypatch):
    _same(text, monkeypatch)


@pytest.mark.parametrize("body", EDGES)
def test_edge_cases_parse_the_same_with_and_without_fused_tokens(body, monkeypatch):
    _same(_wrap(body), monkeypatch)


def test_fused_tokens_are_taken_for_imported_lines():
    """The benchmark's lines are read whole (else the fast path silently stopped applying)."""
    from irtool.text.relay_parser import _parser

    text = relay_cnn_module(50)
    kinds = [tok.type for tok in _parser().python_engine().lex(text)]
    assert kinds.count("FUSED_STATEMENT") == 50
