"""relay-to-relax on Relay `if`: the function in A-normal form, its top-level bindings in
dataflow blocks, each `if` an R.If in a block of its own (branches outside dataflow), values
used across blocks as outputs. Checked: the Relax interpreter agrees with the Relay one on both
branches; the zero pipeline lowers the result and it still computes the same; (tvm-marked) TVM
parses our printout and prints it back identically, and its zero pipeline prints what ours does."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import irtool
from irtool.ir import relax as rx
from irtool.transform import PassContext, get_pass

PROGRAMS = {
    "shared-values": """
def @main(%c: bool, %x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = exp(%x);
  %1 = add(%0, %y);
  %2 = if (%c) {
    %3 = negative(%1);
    nn.relu(%3)
  } else {
    multiply(%1, %0)
  };
  %4 = add(%2, %0);
  (%4, %1)
}""",
    "tail-if": """
def @main(%c: bool, %x: Tensor[(4), float32]) {
  if (%c) { exp(%x) } else { %x }
}""",
    "computed-condition-nested": """
def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
  %0 = sum(%x);
  %1 = sum(%y);
  %2 = less(%0, %1);
  %3 = greater(%0, 0f);
  %4 = if (%2) {
    if (%3) { subtract(%y, %x) } else { multiply(%x, 2f) }
  } else {
    %5 = nn.relu(%x);
    add(%5, %y)
  };
  nn.softmax(%4)
}""",
    "two-ifs": """
def @main(%c: bool, %d: bool, %x: Tensor[(2, 2), float32]) {
  %0 = if (%c) { transpose(%x, axes=[1, 0]) } else { negative(%x) };
  %1 = if (%d) { add(%0, %x) } else { %0 };
  %2 = sigmoid(%1);
  (%2, %0)
}""",
}

_CONDITIONS = [(True, True), (True, False), (False, True), (False, False)]


def _module(name: str):
    return irtool.parse('#[version = "0.0.5"]' + PROGRAMS[name] + "\n", f"{name}.ir")


def _inputs(fn, rng, conditions):
    out, k = [], 0
    for p in fn.params:
        t = p.type_annotation
        if t.dtype == "bool":
            out.append(np.array(conditions[k % 2]))
            k += 1
        else:
            out.append(rng.standard_normal(tuple(int(d) for d in t.shape)).astype(t.dtype))
    return out


def _same(a, b):
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _translate(mod):
    return get_pass("relay-to-relax")()(mod)


def _zero(mod):
    with PassContext():
        return get_pass("zero-pipeline")()(mod)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_if_translates_and_runs_like_relay(name):
    relay_mod = _module(name)
    relax_mod = _translate(relay_mod)
    fn = relax_mod["main"]
    assert any(isinstance(b.value, rx.If) for blk in fn.body.blocks for b in blk.bindings) or \
        isinstance(fn.body.body, rx.If) or "if " in irtool.to_text(relax_mod)
    lowered = _zero(relax_mod)
    rng = np.random.default_rng(5)
    for conditions in _CONDITIONS:
        inputs = _inputs(relay_mod["main"], rng, conditions)
        expected = irtool.interpret(relay_mod, inputs)
        _same(irtool.interpret(relax_mod, inputs), expected)
        _same(irtool.interpret(lowered, inputs), expected)
    text = irtool.to_text(relax_mod)
    assert irtool.structural_equal(irtool.parse(text, "again.py"), relax_mod)


def test_dataflow_variables_stay_in_their_block():
    text = irtool.to_text(_translate(_module("shared-values")))
    # exp and add are used by the branches and after the `if`: outputs of the first block
    assert "R.output(gv, gv1)" in text
    assert "lv" not in text.split("if c:")[1].split("with R.dataflow():")[0]


def test_lowered_if_keeps_its_branches():
    lowered = irtool.to_text(_zero(_translate(_module("shared-values"))))
    assert "if c:" in lowered and "R.call_tir(cls.tir_negative" in lowered


def test_verify_numerics_runs_a_bool_condition_through_the_pipeline(tmp_path):
    """Regression: --verify-numerics drew the Relay bool parameter as a NumPy scalar, which the
    Relax interpreter rejected as no tensor."""
    import sys

    path = tmp_path / "branches.ir"
    path.write_text('#[version = "0.0.5"]' + PROGRAMS["shared-values"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.opt", str(path), "-p", "relay-to-relax,zero-pipeline",
                           "--verify-numerics"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "if c:" in proc.stdout


_TVM_SCRIPT = r'''
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    with open(path + ".parsed", "w") as f:
        f.write(mod.script())
    with open(path + ".zero", "w") as f:
        f.write(relax.get_pipeline("zero")(mod).script())
'''


@pytest.mark.tvm
def test_tvm_parses_the_translation_and_lowers_it_as_we_do(tvm_python, tmp_path):
    paths = []
    for name in PROGRAMS:
        path = tmp_path / f"{name}.py"
        path.write_text(irtool.to_text(_translate(_module(name))))
        paths.append(path)
    proc = subprocess.run([tvm_python, "-c", _TVM_SCRIPT, *map(str, paths)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in paths:
        ours = path.read_text()
        assert (tmp_path / (path.name + ".parsed")).read_text().rstrip("\n") == ours.rstrip("\n"), path.name
        zero = irtool.to_text(_zero(irtool.parse(ours, path.name)))
        assert (tmp_path / (path.name + ".zero")).read_text().rstrip("\n") == zero.rstrip("\n"), path.name
