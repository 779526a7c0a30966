"""ONNX to fused TIR end to end: irtool-import, then irtool-opt -p relay-to-relax,zero-pipeline.

Each model of tests/test_onnx_e2e.py (an MLP, conv+batchnorm+relu blocks, a residual
block, an attention block; built with onnx.helper) is imported to Relay text, lowered
by relay-to-relax and the zero pipeline through the command line, and the result must
be fully lowered (main calls only PrimFuncs), pass the Relax and TIR verifiers, and
compute onnxruntime's outputs in the Relax interpreter (call_tir through the TIR
interpreter). The same pipeline with --verify-numerics checks every stage against the
input. With TVM (tvm-marked): TVM's own zero pipeline on our relay-to-relax output
prints what ours prints.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, os.path.dirname(__file__))
from test_onnx_e2e import MODELS, _inputs, _reference  # noqa: E402

from irtool.analysis.relax_verifier import verify_module  # noqa: E402
from irtool.analysis.tir_verifier import verify_prim_func  # noqa: E402
from irtool.cli.import_onnx import run as irtool_import  # noqa: E402
from irtool.cli.opt import run as irtool_opt  # noqa: E402
from irtool.exec.relax import run_relax  # noqa: E402
from irtool.frontend.onnx import supported_ops  # noqa: E402
from irtool.ir import relax as rx  # noqa: E402
from irtool.ir import tir  # noqa: E402
from irtool.text import parse  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(params=sorted(MODELS))
def model(request):
    m = MODELS[request.param]()
    missing = sorted({n.op_type for n in m.graph.node} - set(supported_ops()))
    if missing:
        pytest.skip(f"{request.param}: not supported yet: {', '.join(missing)}")
    return request.param, m


def _opt(args: list[str], tmp_path) -> tuple[int, str]:
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr, open(tmp_path / "stdout.txt", "w") as stdout:
        code = irtool_opt(args, stdout=stdout, stderr=stderr)
    return code, err.read_text()


def _import(m, tmp_path) -> str:
    onnx_path, relay_path = tmp_path / "model.onnx", tmp_path / "model.ir"
    onnx.save(m, str(onnx_path))
    assert irtool_import([str(onnx_path), "-o", str(relay_path)]) == 0
    return str(relay_path)


def _lower(m, tmp_path) -> str:
    relay_path, lowered = _import(m, tmp_path), tmp_path / "model.zero.py"
    code, err = _opt([relay_path, "-p", "relay-to-relax,zero-pipeline", "-o", str(lowered)], tmp_path)
    assert code == 0, err
    return str(lowered)


def test_lowered_model_verifies_and_computes_onnxruntimes_outputs(model, tmp_path):
    name, m = model
    path = _lower(m, tmp_path)
    mod = parse(open(path).read(), path)
    verify_module(mod)
    prim_funcs = {n: f for n, f in mod.functions.items() if isinstance(f, tir.PrimFunc)}
    for n, f in prim_funcs.items():
        verify_prim_func(f, n)
    main = mod["main"]
    ops = {b.value.op.name for block in main.body.blocks for b in block.bindings
           if isinstance(b.value, rx.Call) and hasattr(b.value.op, "name") and isinstance(b.value.op.name, str)}
    assert ops <= {"relax.call_tir"}, ops  # everything became a PrimFunc
    assert any(n.startswith("fused_") for n in prim_funcs), f"{name}: nothing fused"
    inputs = _inputs(m)
    expected = _reference(m, inputs)
    got = run_relax(mod, [inputs[p.name_hint] for p in main.params])
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


def test_cli_verify_numerics_accepts_every_stage(model, tmp_path):
    _, m = model
    relay_path = _import(m, tmp_path)
    code, err = _opt([relay_path, "-p", "relay-to-relax,zero-pipeline", "--verify-numerics",
                      "-o", str(tmp_path / "out.py")], tmp_path)
    assert code == 0, err


def test_cli_subprocess_pipeline(tmp_path):
    """The installed commands chained as a user would: irtool-import | irtool-opt."""
    m = MODELS["residual"]()
    bindir = os.path.dirname(sys.executable)
    onnx.save(m, str(tmp_path / "m.onnx"))
    imported = subprocess.run([os.path.join(bindir, "irtool-import"), str(tmp_path / "m.onnx")],
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr
    lowered = subprocess.run([os.path.join(bindir, "irtool-opt"), "-", "-p", "relay-to-relax,zero-pipeline"],
                             input=imported.stdout, capture_output=True, text=True, timeout=300)
    assert lowered.returncode == 0, lowered.stderr
    assert "fused_" in lowered.stdout and "R.nn." not in lowered.stdout


_TVM_ZERO = r'''
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    open(path + ".tvm", "w").write(relax.get_pipeline("zero")(mod).script())
'''


@pytest.mark.tvm
def test_tvm_zero_pipeline_on_our_relax_prints_what_ours_prints(tvm_python, tmp_path):
    from irtool.text import to_text
    from irtool.transform import PassContext, get_pass

    paths = {}
    for name, build in sorted(MODELS.items()):
        m = build()
        if {n.op_type for n in m.graph.node} - set(supported_ops()):
            continue
        work = tmp_path / name
        work.mkdir()
        relax_path = work / "model.relax.py"
        code, err = _opt([_import(m, work), "-p", "relay-to-relax", "-o", str(relax_path)], work)
        assert code == 0, err
        paths[name] = str(relax_path)
    runner = tmp_path / "tvm_zero.py"
    runner.write_text(_TVM_ZERO)
    proc = subprocess.run([tvm_python, str(runner), *paths.values()], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, path in paths.items():
        with PassContext():
            ours = get_pass("zero-pipeline")()(parse(open(path).read(), path))
        assert to_text(ours, show_meta_data=False).rstrip("\n") == open(path + ".tvm").read().rstrip("\n"), name


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
