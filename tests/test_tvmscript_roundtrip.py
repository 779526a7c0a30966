"""TVMScript round trips: the TVM 0.27 reference files, a corpus of hand-written modules,
random modules (Hypothesis), and — where TVM is installed — TVM's own parser and printer
as the judge (`tvm` marker)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import irtool
from irtool.diagnostics import DiagnosticError
from irtool.ir.structural import structural_equal, structural_hash
from irtool.text import parse, to_text

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "tvm-0.27")
REFERENCE_FILES = sorted(glob.glob(f"{REFERENCE}/**/*.py", recursive=True))


def _has_metadata(text: str) -> bool:
    return text.startswith("metadata = tvm.ir.load_json(")


def roundtrip(text: str, name: str = "<test>"):
    """parse -> print -> parse -> print: returns (module, printed, module again)."""
    mod = parse(text, name)
    printed = to_text(mod, show_meta_data=_has_metadata(text))
    again = parse(printed, f"{name} (printed)")
    assert structural_equal(mod, again), "re-parsed module differs"
    assert structural_hash(mod) == structural_hash(again)
    assert to_text(again, show_meta_data=_has_metadata(text)) == printed, "printing is not a fixed point"
    return mod, printed, again


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: os.path.relpath(p, REFERENCE))
def test_reference_file_prints_back_identically(path):
    text = open(path).read()
    _, printed, _ = roundtrip(text, path)
    assert printed == text


# Hand-written modules covering what the reference files do not: if/else, match_cast,
# tuples, shapes, prim values, packed calls, loops of every kind, let, select, while-free
# control flow, int64 arithmetic.
CORPUS = {
    "relax_if_tuple_match_cast": """
        # from tvm.script import ir as I
        # from tvm.script import relax as R

        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((3, 2), dtype="float32")):
                if c:
                    y: R.Tensor((2, 3), dtype="float32") = R.nn.relu(x)
                    z: R.Tensor((2, 3), dtype="float32") = y
                else:
                    z: R.Tensor((2, 3), dtype="float32") = R.negative(x)
                t: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((3, 2), dtype="float32")) = (z, R.permute_dims(z, axes=None))
                u: R.Tensor((2, 3), dtype="float32") = t[0]
                v = R.match_cast(u, R.Tensor((2, 3), dtype="float32"))
                return (v, t[1])
    """,
    "relax_symbolic_reshape": """
        # from tvm.script import ir as I
        # from tvm.script import relax as R

        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor((n * 4,), dtype="float32"):
                with R.dataflow():
                    y: R.Tensor((n * 4,), dtype="float32") = R.reshape(x, R.shape([n * 4]))
                    z: R.Tensor((n * 4,), dtype="float32") = R.exp(y)
                    R.output(z)
                return z
    """,
    "tir_loops_and_exprs": """
        # from tvm.script import ir as I
        # from tvm.script import tirx as T

        @I.ir_module
        class Module:
            @T.prim_func(s_tir=True)
            def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "int32"), n: T.int32):
                T.func_attr({"tirx.noalias": True})
                for i in T.parallel(16):
                    for j in T.vectorized(8):
                        A[i, j] = T.Select(i < n, T.exp(A[i, j]), T.float32(0.0))
                for i in T.unroll(4):
                    B[i] = T.truncdiv(i * 7 - 3, 2) + T.floordiv(i, 3) % 5
                for i in range(4, 16):
                    x: T.let[T.int32] = T.max(i, n)
                    if x > 8:
                        B[i] = x
                    else:
                        B[i] = T.Cast("int32", A[i, 0])
    """,
    "tir_match_buffer_while_forward_size": """
        @T.prim_func
        def main(a: T.handle, B: T.Buffer(("n",), "int32"), n: T.int32):
            A = T.match_buffer(a, (n, 4))
            i: T.let[T.int32] = 0
            while i < n:
                B[i] = T.Cast("int32", A[i, 0])
    """,
    "relax_prim_any_packed": """
        @R.function(pure=False)
        def main(x: R.Tensor((2,), dtype="float32"), o: R.Any, p: T.int64) -> T.int64:
            e: T.int64 = 3
            g = R.call_pure_packed("my.func", x, ty_args=(R.Tensor((2,), dtype="float32"),))
            return p
    """,
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_round_trips(name):
    roundtrip(textwrap.dedent(CORPUS[name]).lstrip("\n"), name)


# ----------------------------------------------------------------------------- random modules

_UNARY = ("R.nn.relu", "R.exp", "R.negative", "R.sigmoid", "R.tanh", "R.abs")
_BINARY = ("R.add", "R.multiply", "R.subtract", "R.maximum")


@st.composite
def relax_modules(draw):
    """A random dataflow block of elementwise and broadcast ops, possibly symbolic."""
    symbolic = draw(st.booleans())
    rows = "n" if symbolic else str(draw(st.integers(1, 4)))
    cols = draw(st.integers(1, 5))
    shape = f"({rows}, {cols})"
    lines = []
    names = ["x", "y"]
    for i in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(_UNARY))
            expr = f"{op}({draw(st.sampled_from(names))})"
        else:
            op = draw(st.sampled_from(_BINARY))
            expr = f"{op}({draw(st.sampled_from(names))}, {draw(st.sampled_from(names))})"
        annotate = draw(st.booleans())
        ann = f': R.Tensor({shape}, dtype="float32")' if annotate else ""
        lines.append(f"lv{i}{ann} = {expr}")
        names.append(f"lv{i}")
    dims = f'("n", {cols})' if symbolic else shape
    return _render(dims, symbolic, lines, names[-1])


def _render(dims, sym, lines, out) -> str:
    head = f'@R.function\ndef main(x: R.Tensor({dims}, dtype="float32"), y: R.Tensor({dims}, dtype="float32")):\n'
    body = ("    n = T.int64()\n" if sym else "") + "    with R.dataflow():\n"
    body += "".join(f"        {line}\n" for line in lines)
    body += f"        R.output({out})\n    return {out}\n"
    return head + body


@settings(max_examples=60, deadline=None)
@given(relax_modules())
def test_random_relax_modules_round_trip(text):
    roundtrip(text)


_TIR_BIN = ("+", "-", "*", "//", "%")


@st.composite
def tir_exprs(draw, depth=0):
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["vi", "vj", "n", "1", "7", "T.int32(-3)"]))
    kind = draw(st.integers(0, 3))
    a = draw(tir_exprs(depth + 1))
    b = draw(tir_exprs(depth + 1))
    if kind == 0:
        return f"({a}) {draw(st.sampled_from(_TIR_BIN))} ({b})"
    if kind == 1:
        return f"T.{draw(st.sampled_from(['max', 'min', 'truncdiv', 'truncmod']))}({a}, {b})"
    if kind == 2:
        return f"T.Select(({a}) < ({b}), {a}, {b})"
    return f"T.if_then_else(({a}) == ({b}), {a}, {b})"


@settings(max_examples=60, deadline=None)
@given(tir_exprs())
def test_random_tir_expressions_round_trip(expr):
    text = (
        "@T.prim_func(s_tir=True)\n"
        'def main(B: T.Buffer((4, 4), "int32"), n: T.int32):\n'
        "    for i, j in T.grid(4, 4):\n"
        '        with T.sblock("B"):\n'
        '            vi, vj = T.axis.remap("SS", [i, j])\n'
        f"            B[vi, vj] = {expr}\n"
    )
    try:
        irtool.parse(text, "expr.py")
    except DiagnosticError as err:
        # constants fold as TVM folds them, and TVM rejects a division by a constant zero too
        assume("division by zero" not in str(err))
        raise
    roundtrip(text)


# ----------------------------------------------------------------------------- TVM as the judge

_TVM_JUDGE = r"""
import json, sys
import tvm
from tvm.script import from_source
cases = json.load(sys.stdin)
results = {}
for name, case in cases.items():
    try:
        ours = from_source(case["ours"])
    except Exception as err:
        results[name] = "TVM rejects our output: " + str(err).splitlines()[0][:300]
        continue
    if case.get("reference") is not None:
        try:
            ref = from_source(case["reference"])
        except Exception:
            ref = None
        if ref is not None:
            try:
                tvm.ir.assert_structural_equal(ours, ref, map_free_vars=True)
            except Exception as err:
                results[name] = "not structurally equal to TVM's parse of the reference: " + str(err)[:300]
                continue
    printed = ours.script()  # metadata omitted: TVM's re-serialised spans would differ
    if printed.strip() != case["ours_no_meta"].strip():
        import difflib
        diff = list(difflib.unified_diff(case["ours_no_meta"].splitlines(), printed.splitlines(), lineterm="",
                                         n=0))
        results[name] = "TVM prints our module differently:\n" + "\n".join(diff[:12])
        continue
    results[name] = "ok"
json.dump(results, sys.stdout)
"""


def _tvm_cases() -> dict:
    cases = {}
    for path in REFERENCE_FILES:
        text = open(path).read()
        if "metadata[" in text and not _has_metadata(text):
            continue  # TVM cannot parse a file whose metadata was omitted either
        mod = parse(text, path)
        cases[os.path.relpath(path, REFERENCE)] = {
            "ours": to_text(mod, show_meta_data=_has_metadata(text)), "reference": text,
            "ours_no_meta": to_text(mod, show_meta_data=False)}
    for name, text in CORPUS.items():
        mod = parse(textwrap.dedent(text).lstrip("\n"), name)
        cases[name] = {"ours": to_text(mod, show_meta_data=False), "reference": textwrap.dedent(text)}
        cases[name]["ours_no_meta"] = cases[name]["ours"]
    from tests.test_tvmscript_parser import HANDWRITTEN

    # the hand-written text itself is the reference: TVM's parse of it (reads and writes
    # detected by TVM) must equal ours
    printed = to_text(parse(HANDWRITTEN), show_meta_data=False)
    cases["handwritten_call_tir"] = {"ours": printed, "reference": HANDWRITTEN, "ours_no_meta": printed}
    return cases


@pytest.mark.tvm
def test_tvm_accepts_our_output(tvm_python):
    cases = _tvm_cases()
    proc = subprocess.run([tvm_python, "-c", _TVM_JUDGE], input=json.dumps(cases), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    failures = {k: v for k, v in results.items() if v != "ok"}
    assert not failures, "\n\n".join(f"{k}: {v}" for k, v in failures.items())
    assert len(results) == len(cases) >= 10
