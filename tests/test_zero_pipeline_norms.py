"""The zero pipeline over the norm, statistics and loss ops (codegen/topi/norms_losses.py) among
elementwise ops: they legalize, get TVM's op patterns and fuse as TVM's FuseOps fuses them (the
group/instance norms' tuple-sum reductions, median's extern argsort, nll_loss's gathers); the result
computes what the input computes (interpreters), and (tvm-marked) prints exactly what TVM 0.27's
`relax.get_pipeline("zero")` prints."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from test_zero_pipeline_indexing import _TVM_RUNNER, _module, _t, zero

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text

MODULES = {
    # a norm between elementwise ops: its reshapes, casts and reductions fuse as TVM's
    "group_norm_chain": _module(f"x: {_t((2, 4, 3))}, g: {_t((4,))}, b: {_t((4,))}",
                                ["a = R.exp(x)", "c = R.nn.group_norm(a, g, b, num_groups=2, channel_axis=1, axes=[2])",
                                 "gv = R.nn.softplus(c, beta=2.0)"]),
    "group_norm_f16": _module(f"x: {_t((2, 6, 2, 2), 'float16')}, g: {_t((6,), 'float16')}, b: {_t((6,), 'float16')}",
                              ["c = R.nn.group_norm(x, g, b, num_groups=3, channel_axis=1, axes=[2, 3])",
                               "gv = R.nn.relu(c)"]),
    "instance_norm_chain": _module(f"x: {_t((2, 3, 5))}, g: {_t((3,))}, b: {_t((3,))}, y: {_t((5,))}",
                                   ["a = R.atan2(x, y)", "c = R.nn.instance_norm(a, g, b, channel_axis=1, axes=[2])",
                                    "gv = R.log_add_exp(c, y)"]),
    # PyTorch's cross entropy as the importers write it: log_softmax, then nll_loss
    "log_softmax_nll": _module(f"x: {_t((4, 5))}, t: {_t((4,), 'int64')}, w: {_t((5,))}",
                               ["a = R.nn.log_softmax(x)", 'gv = R.nn.nll_loss(a, t, w, reduction="mean")']),
    "cross_entropy_chain": _module(f"x: {_t((3, 4))}, y: {_t((3, 4))}",
                                   ["a = R.nn.log_softmax(x)", "gv = R.nn.cross_entropy_with_logits(a, y)"]),
    "std_median": _module(f"x: {_t((3, 5))}",
                          ["a = R.std(x, axis=[1], keepdims=True)", "c = R.divide(x, a)",
                           "gv = R.median(c)"]),
    "median_axis": _module(f"x: {_t((4, 3))}",
                           ["a = R.negative(x)", "c = R.median(a, axis=[0])", "d = c[0]", "gv = R.exp(d)"]),
}


def _inputs(fn, rng) -> list:
    out = []
    for p in fn.params:
        s = p.struct_info
        shape = tuple(s.shape)
        if s.dtype == "int64":
            out.append(rng.integers(0, 3, size=shape).astype("int64"))  # class indices below every C here
        else:
            out.append((rng.standard_normal(shape) + (2.0 if p.name_hint == "w" else 0.0)).astype(s.dtype))
    return out


def _close(got, expected, tol: float) -> None:
    for g, e in zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]:
        np.testing.assert_allclose(np.asarray(g, "float64"), np.asarray(e, "float64"), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(MODULES))
def test_zero_pipeline_computes_the_same(name):
    mod = parse(MODULES[name])
    out = zero(mod)
    text = to_text(out)
    for op in ("R.nn.group_norm", "R.nn.instance_norm", "R.median", "R.std", "R.nn.nll_loss", "R.nn.cross_entropy"):
        assert op not in text, f"{op} left in\n{text}"
    inputs = _inputs(mod.functions["main"], np.random.default_rng(3))
    _close(run_relax(out, inputs), run_relax(mod, inputs), 4e-3 if "f16" in name else 1e-5)


@pytest.mark.tvm
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    paths = []
    for name, text in MODULES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    failures = []
    for path in paths:
        ours = to_text(zero(parse(open(path).read()))).rstrip("\n")
        theirs = open(path + ".tvm").read().rstrip("\n")
        if ours != theirs:
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(paths)} differ:\n" + "\n\n".join(failures[:2])
