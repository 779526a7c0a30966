"""Sizes that are products of symbols (`d * 2`, `d * d_1`) through the zero pipeline and the
native build. A PrimFunc whose buffers have only `d * 2` as a dimension takes `d` as a scalar
parameter before its outputs, and `R.call_tir` passes it as a PrimValue after the tensors,
`R.call_tir(f, (x, y, d), ...)`, as TVM 0.27's LegalizeOps writes it; FuseOps leaves it in the
inner calls and gives the fused function a `tir_vars` shape parameter, FuseTIR merges it.
Regressions: legalize-ops passed it as `tir_vars` after the outputs (the interpreter gave the
scalar an output array, fuse-tir refused it), and the batched matmul's batch was
`T.max(d * 2, d * 2)`."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.codegen.export import find_c_compiler
from irtool.exec.relax import run_relax
from irtool.text import parse, to_text
from irtool.transform import get_pass

MODULE = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("d", 2, "e", 8), dtype="float32"), b: R.Tensor(("d", 2, 8, "e"), dtype="float32")):
        d = T.int64()
        e = T.int64()
        with R.dataflow():
            a1 = R.reshape(a, R.shape([d * 2, e, 8]))
            b1 = R.reshape(b, R.shape([d * 2, 8, e]))
            lv = R.matmul(a1, b1)
            gv = R.exp(lv)
            R.output(gv)
        return gv
"""
SIZES = [(1, 3), (3, 2)]


def _inputs(d: int, e: int):
    rng = np.random.default_rng(d * 10 + e)
    return [rng.standard_normal((d, 2, e, 8)).astype("float32") / 4,
            rng.standard_normal((d, 2, 8, e)).astype("float32") / 4]


def _zero(mod):
    return get_pass("zero-pipeline")()(mod)


def test_zero_pipeline_passes_the_size_as_a_prim_value():
    text = to_text(_zero(parse(MODULE)))
    assert "gv = R.call_tir(cls.fused_matmul_tir_exp, (a1, b1, d), out_ty=R.Tensor((d * 2, e, e)" in text
    assert 'd: T.int64, compute_intermediate: T.Buffer((d * T.int64(2), e, e), "float32")' in text
    assert "tir_vars" not in text and "T.max" not in text
    assert to_text(parse(text)) == text


def test_legalized_call_runs_in_the_interpreter():
    mod = parse(MODULE)
    legal = get_pass("legalize-ops")()(mod)
    assert "R.call_tir(cls.matmul, (a1, b1, d)" in to_text(legal)
    for d, e in SIZES:
        args = _inputs(d, e)
        np.testing.assert_allclose(run_relax(legal, args), run_relax(mod, args), rtol=1e-5, atol=1e-6)


def test_fused_product_sizes_run_in_the_interpreter_and_natively():
    from irtool.codegen.executable import build

    mod = parse(MODULE)
    lowered = _zero(mod)
    exe = build(mod)
    for d, e in SIZES:
        args = _inputs(d, e)
        want = run_relax(mod, args)
        assert want.shape == (d * 2, e, e)
        np.testing.assert_allclose(run_relax(lowered, args), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(exe(*args)), want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler")
def test_irtool_build_takes_a_product_of_sizes(tmp_path):
    src, so = tmp_path / "m.py", tmp_path / "m.so"
    src.write_text(MODULE)
    proc = subprocess.run([Path(sys.executable).parent / "irtool-build", src, "-o", so], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "m.h").read_text()
    assert "args[2]  output 0: float32[d * 2, e, e]" in header and "args[3]  size d" in header
    lib = ctypes.CDLL(str(so))
    for d, e in SIZES:
        a, b = _inputs(d, e)
        out = np.zeros((d * 2, e, e), "float32")
        sizes = [ctypes.c_int64(d), ctypes.c_int64(e)]
        ptrs = [a.ctypes.data, b.ctypes.data, out.ctypes.data] + [ctypes.addressof(s) for s in sizes]
        assert lib.irtool_main((ctypes.c_void_p * 5)(*ptrs)) == 0
        np.testing.assert_allclose(out, run_relax(parse(MODULE), [a, b]), rtol=1e-4, atol=1e-5)


@pytest.mark.tvm
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path):
    assert_zero_pipeline_matches_tvm(tvm_python, tmp_path, MODULE)


def assert_zero_pipeline_matches_tvm(tvm_python: str, tmp_path, text: str) -> None:
    """Our zero pipeline on `text` prints what TVM's relax.get_pipeline("zero") prints."""
    src = tmp_path / "m.py"
    src.write_text(text)
    script = ("import sys, tvm\nfrom tvm import relax\n"
              "mod = tvm.script.from_source(open(sys.argv[1]).read())\n"
              "print(relax.get_pipeline('zero')(mod).script(show_meta=False))\n")
    proc = subprocess.run([tvm_python, "-c", script, str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert to_text(_zero(parse(text))).rstrip("\n") == proc.stdout.rstrip("\n")
