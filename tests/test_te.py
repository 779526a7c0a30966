"""The TE-like compute layer and create_prim_func: PrimFuncs equal (printed) to TVM 0.27's
`te.create_prim_func` on the same compute definitions, and correct when run."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from irtool.codegen import te
from irtool.codegen import tir_build as tb
from irtool.exec.tir import run_prim_func
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.text import parse, to_text


def two_stage():
    a = te.placeholder((4, 3), "float32", name="A")
    b = te.compute(a.shape, lambda i, j: tb.call("exp", a(i, j)), name="B")
    k = te.reduce_axis((0, 3), name="k")
    c = te.compute((4,), lambda i: te.sum(b(i, k), axis=[k]), name="C")
    return [a, c]


def max_reduce():
    a = te.placeholder((4, 3), "float32", name="A")
    k = te.reduce_axis((0, 3), name="k")
    return [a, te.compute((4,), lambda i: te.max(a(i, k), axis=k), name="M")]


def shifted_reads():
    a = te.placeholder((5,), "float32", name="A")
    return [a, te.compute((4,), lambda i: tb.add(a(i), a(tb.add(i, 1))), name="S")]


def same_names():
    a = te.placeholder((3,), "int32", name="A")
    b = te.compute(a.shape, lambda *i: tb.mul(a(*i), 2))
    return [a, te.compute(b.shape, lambda *i: tb.select(tb.gt(b(*i), 3), b(*i), 0))]


# each case: our builder, and the same definition in TVM's Python API
CASES = {
    "two_stage": (two_stage, """
a = te.placeholder((4, 3), "float32", name="A")
b = te.compute(a.shape, lambda i, j: te.exp(a[i, j]), name="B")
k = te.reduce_axis((0, 3), name="k")
args = [a, te.compute((4,), lambda i: te.sum(b[i, k], axis=[k]), name="C")]"""),
    "max_reduce": (max_reduce, """
a = te.placeholder((4, 3), "float32", name="A")
k = te.reduce_axis((0, 3), name="k")
args = [a, te.compute((4,), lambda i: te.max(a[i, k], axis=k), name="M")]"""),
    "shifted_reads": (shifted_reads, """
a = te.placeholder((5,), "float32", name="A")
args = [a, te.compute((4,), lambda i: a[i] + a[i + 1], name="S")]"""),
    "same_names": (same_names, """
a = te.placeholder((3,), "int32", name="A")
b = te.compute(a.shape, lambda *i: a(*i) * 2)
args = [a, te.compute(b.shape, lambda *i: tvm.tirx.Select(b(*i) > 3, b(*i), 0))]"""),
}


def _text(func: tir.PrimFunc) -> str:
    return to_text(IRModule({"main": func}))


def test_two_stage_structure():
    func = te.create_prim_func(two_stage())
    root = func.body.block
    assert root.name == "root" and [b.name for b in root.alloc_buffers] == ["B"]
    text = _text(func)
    assert 'with T.sblock("C"):' in text and "with T.init():" in text
    assert "T.reads(B[v_i, v_k])" in text


def test_results_run():
    a = np.arange(12, dtype="float32").reshape(4, 3) / 10
    out = np.zeros(4, "float32")
    run_prim_func(te.create_prim_func(two_stage()), [a, out])
    np.testing.assert_allclose(out, np.exp(a).sum(1), rtol=1e-6)
    run_prim_func(te.create_prim_func(max_reduce()), [a, out])
    np.testing.assert_allclose(out, a.max(1))
    s = np.zeros(4, "float32")
    run_prim_func(te.create_prim_func(shifted_reads()), [np.arange(5, dtype="float32"), s])
    np.testing.assert_allclose(s, [1, 3, 5, 7])


def test_printed_prim_func_parses_back():
    for build, _ in CASES.values():
        text = _text(te.create_prim_func(build()))
        assert _text(parse(text).functions["main"]) == text


def test_axis_names_follow_fcompute():
    a = te.placeholder((2, 3), "float32", name="A")
    assert [iv.var.name for iv in te.compute(a.shape, lambda i, j: a(i, j)).op.axis] == ["i", "j"]
    assert [iv.var.name for iv in te.compute(a.shape, lambda *i: a(*i)).op.axis] == ["i0", "i1"]
    assert [iv.var.name for iv in te.compute_ax(a.shape, lambda ax: a(ax)).op.axis] == ["ax0", "ax1"]
    with pytest.raises(ValueError):
        te.compute(a.shape, lambda i: a(i, i))


_RUNNER = """
import sys, tvm
from tvm import te
for path in sys.argv[1:]:
    ns = {"te": te, "tvm": tvm}
    exec(open(path).read(), ns)
    func = te.create_prim_func(ns["args"], "int64").without_attr("global_symbol")
    open(path + ".tvm", "w").write(tvm.IRModule({"main": func}).script())
"""


@pytest.mark.tvm
def test_create_prim_func_matches_tvm(tvm_python, tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text(_RUNNER)
    paths = []
    for name, (_, source) in CASES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, (build, _) in CASES.items():
        theirs = open(str(tmp_path / f"{name}.py") + ".tvm").read().rstrip("\n")
        assert _text(te.create_prim_func(build())).rstrip("\n") == theirs, name
