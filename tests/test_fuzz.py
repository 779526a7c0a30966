"""Fuzzing the text front end (issue 11 §3): no input gets anything but a diagnostic.

`test_mutants_get_diagnostics` runs 2,000 deterministic mutants of the lit corpus through
`irtool-opt` in-process (tests/fuzzing.py says how they are made and what is checked);
`benchmarks/fuzz.py` runs the same fuzzer for as long as wanted. The other tests are the
inputs earlier fuzzing runs found, reduced by hand, each once an internal error."""

from __future__ import annotations

import io

import pytest
from fuzzing import fuzz

from irtool.cli import with_deep_stack
from irtool.cli.opt import run

MUTANTS = 2000


def test_mutants_get_diagnostics(tmp_path):
    report = fuzz(MUTANTS, seed=20261124, tmp=tmp_path)
    assert report.runs == MUTANTS
    assert report.ok > 200 and report.diagnosed > 200  # the mutants exercise both outcomes
    assert not report.failures, "\n".join(f"{f.kind}: {f.detail}" for f in report.failures[:10])


TVMSCRIPT_HEAD = "@I.ir_module\nclass Module:\n"


@pytest.mark.parametrize(("text", "message"), [
    # the one-token fast path read `%2147483648i32` as a graph variable
    ('def @main(%x: int32) {\n  less(%x, %2147483648i32)\n}\n', "2:23: error: unexpected `i32`"),
    # a TVMScript name where TIR needs a value
    ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    ex = T.sblock\n', "3:5: error: expected a TIR expression"),
    ('@R.function\ndef f(x: ~((2, 3), "float32")):\n    return x\n', "2:10: error: expected a TIR expression, got a tuple"),
    # values no attribute or dtype can hold
    ('@R.function\ndef f(x: R.Tensor((4, 4), "float32")):\n'
     '    gv = R.strided_slice(x, axes=[1], begin=[5], end=[T.float32(1e400)], strides=[-1])\n    return gv\n',
     "3:10: error: `R.strided_slice`: invalid attribute value"),
    ('@R.function\ndef f(x: R.Tensor((4,), "float32")):\n    b = R.prim_value(T.int64(R.const(1.0)))\n    return x\n',
     "3:22: error: `T.int64`: invalid arguments"),
    ('@R.function\ndef f(x: R.Tensor((4,), "float32")):\n    d = R.const(1e99999, "int64")\n    return x\n',
     "3:9: error: `R.const`: invalid value"),
    # a NUL byte inside a string literal
    ('@T.prim_func\ndef f(A: T.Buffer((4,), "flo\x00at32")):\n    T.evaluate(0)\n', "2:25: error: invalid string literal"),
])
def test_inputs_fuzzing_found(text, message, tmp_path):
    path = tmp_path / "found.ir"
    path.write_text(text)
    out = tmp_path / "out.ir"
    out.write_text("keep")
    stderr = io.StringIO()
    code = run([str(path), "-o", str(out)], stdout=io.StringIO(), stderr=stderr)
    assert code == 1, stderr.getvalue()
    assert f"{path}:{message}" in stderr.getvalue(), stderr.getvalue()
    assert "internal error" not in stderr.getvalue()
    assert out.read_text() == "keep"


def test_ndim_must_be_an_integer(tmp_path):
    path = tmp_path / "ndim.py"
    path.write_text('@R.function\ndef f(x: R.Tensor(ndim=-inff, dtype="float32")):\n    return x\n')
    stderr = io.StringIO()
    assert run([str(path)], stdout=io.StringIO(), stderr=stderr) == 1
    assert f"{path}:2:10: error: `ndim` must be an integer" in stderr.getvalue()


@pytest.mark.parametrize(("text", "message"), [
    # `T.axis.remap` with arguments of the wrong shape
    ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    for i in range(4):\n        with T.sblock("b"):\n'
     '            vi, vj = T.axis.remap("S")\n            A[vi] = T.float32(0)\n',
     "5:22: error: `T.axis.remap` takes the kind letters and a list of loop variables"),
    # an R.Prim dtype that is no dtype (it printed back as text the parser then rejected)
    ('@R.function\ndef f(k: R.Prim("int\uff0564")):\n    return k\n', "2:10: error: unknown data type"),
    # a Python keyword read as a symbolic size (it printed back as `with = TypeVar("with")`)
    ('@R.function\ndef f(x: R.Tensor((with, 3), "float32")):\n    return x\n', "2:20: error: `with` is a Python keyword"),
    # one-name T.axis.remap with a missing argument
    ('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    for i in range(4):\n        with T.sblock("b"):\n'
     '            vi = T.axis.remap("S")\n            A[vi] = T.float32(0)\n',
     "5:18: error: `T.axis.remap` takes the kind letters and a list of loop variables"),
])


def test_more_inputs_fuzzing_found(text, message, tmp_path):
    test_inputs_fuzzing_found(text, message, tmp_path)


def test_double_attributes_beyond_float32_print_so_they_parse_back(tmp_path):
    """Regression: `clip(%x, a_min=1.5e308f64)` printed `a_min=1.5e+308f`, a float32 literal
    the parser rejects; such a value now prints with `f64`."""
    path = tmp_path / "clip.ir"
    path.write_text("def @main(%x: Tensor[(4), float32]) {\n  clip(%x, a_min=0f, a_max=1.5e308f64)\n}\n")
    out = io.StringIO()
    assert run([str(path)], stdout=out, stderr=io.StringIO()) == 0
    assert "a_max=1.5e+308f64" in out.getvalue()
    again = tmp_path / "again.ir"
    again.write_text(out.getvalue())
    out2 = io.StringIO()
    assert run([str(again)], stdout=out2, stderr=io.StringIO()) == 0 and out2.getvalue() == out.getvalue()


def _nested_functions(depth: int) -> str:
    return "def @main(%x: float32) {\n  " + "fn () {" * depth + "%x" + "}" * depth + "\n}\n"


def test_deeply_nested_blocks_are_a_diagnostic_not_a_hang(tmp_path):
    """Printing indents each nested block again, so 5,000 nested functions took minutes and
    gigabytes; blocks nest up to MAX_BLOCK_NESTING, deeper is a diagnostic."""
    from irtool.text.relay_parser import MAX_BLOCK_NESTING

    ok, deep = tmp_path / "ok.ir", tmp_path / "deep.ir"
    ok.write_text(_nested_functions(MAX_BLOCK_NESTING - 1))
    deep.write_text(_nested_functions(MAX_BLOCK_NESTING))
    out, stderr = io.StringIO(), io.StringIO()
    assert with_deep_stack(lambda: run([str(ok)], stdout=out, stderr=stderr)) == 0, stderr.getvalue()
    assert out.getvalue().count("fn () {") == MAX_BLOCK_NESTING - 1
    stderr = io.StringIO()
    assert with_deep_stack(lambda: run([str(deep)], stdout=io.StringIO(), stderr=stderr)) == 1
    assert f"blocks nested more than {MAX_BLOCK_NESTING} deep are not supported" in stderr.getvalue()


def test_deep_expressions_through_the_command_line(tmp_path):
    """The console script runs on a deep stack: 20,000 nested calls parse and print."""
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "deep.ir"
    path.write_text("def @main(%x: float32) {\n  " + "negative(" * 20000 + "%x" + ")" * 20000 + "\n}\n")
    proc = subprocess.run([Path(sys.executable).parent / "irtool-opt", path], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.count("negative(") == 20000
