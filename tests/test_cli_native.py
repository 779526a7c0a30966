"""irtool-translate and irtool-build: the command-line face of the native backend."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irtool
from irtool.codegen.export import find_c_compiler

BIN = Path(sys.executable).parent
ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "tvm-0.27"
SEED = ROOT / "examples" / "seed000.ir"


def _run(tool: str, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([BIN / tool, *map(str, args)], capture_output=True, text=True, timeout=300, **kw)


def test_emit_tir_is_the_lowered_module_as_tvmscript():
    proc = _run("irtool-translate", SEED, "--emit=tir")
    assert proc.returncode == 0, proc.stderr
    # fused, scheduled PrimFuncs; main after TVM's memory planning calls them in destination-passing style
    assert "@T.prim_func" in proc.stdout and "T.vectorized" in proc.stdout and "cls.fused_" in proc.stdout
    assert "R.builtin.alloc_tensor" in proc.stdout and "R.call_tir" not in proc.stdout
    mod = irtool.parse(proc.stdout, "lowered.py")  # it parses back
    assert "main" in mod.functions


@pytest.mark.parametrize(("emit", "expect"), [("llvm", "i32 @irtool_main(ptr"), ("asm", "irtool_main:")])
def test_emit_llvm_and_asm(emit, expect):
    proc = _run("irtool-translate", SEED, f"--emit={emit}")
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout


def test_emit_obj_needs_an_output_file_and_writes_an_elf_object(tmp_path):
    proc = _run("irtool-translate", SEED, "--emit=obj")
    assert proc.returncode == 1 and "give -o FILE" in proc.stderr
    out = tmp_path / "m.o"
    proc = _run("irtool-translate", SEED, "--emit=obj", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"


def test_translate_errors_are_located_and_keep_the_output_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n'
                   '    for i in T.thread_binding(4, thread="threadIdx.x"):\n        A[i] = T.float32(0)\n')
    out = tmp_path / "out.ll"
    out.write_text("keep")
    proc = _run("irtool-translate", bad, "-o", out)
    assert proc.returncode == 1 and f"{bad}:3:" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_text() == "keep"


@pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler")
def test_build_writes_a_library_and_header_that_c_programs_use(tmp_path):
    so = tmp_path / "model.so"
    proc = _run("irtool-build", DATA / "seed_conv_add_relu" / "5_FuseTIR_show_meta.py", "-o", so)
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "model.h").read_text()
    assert "int irtool_main(void **args);" in header and "args[0]  input  x: float32[1, 3, 16, 16]" in header
    # a C program compiled against the header
    (tmp_path / "use.c").write_text('''
#include <stdio.h>
#include "model.h"
int main(void) {
    static float x[1*3*16*16], w[3*3*3*3], y[1*3*14*14];
    for (int i = 0; i < 1*3*16*16; i++) x[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 3*3*3*3; i++) w[i] = (float)(i % 5) * 0.25f;
    void *args[IRTOOL_NUM_ARGS] = {x, w, y};
    irtool_set_num_threads(2);
    if (irtool_main(args) != 0) { printf("error %s\\n", irtool_last_error()); return 1; }
    for (int i = 0; i < 1*3*14*14; i++) printf("%.6g\\n", y[i]);
    return 0;
}
''')
    exe_path = tmp_path / "use"
    cc = find_c_compiler()
    subprocess.run([cc, "-o", exe_path, tmp_path / "use.c", so, f"-Wl,-rpath,{tmp_path}"], check=True, timeout=120)
    out = subprocess.run([exe_path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout
    y = np.array([float(v) for v in out.stdout.split()], "float32").reshape(1, 3, 14, 14)
    x = ((np.arange(1 * 3 * 16 * 16) % 7) - 3).astype("float32").reshape(1, 3, 16, 16)
    w = ((np.arange(81) % 5) * 0.25).astype("float32").reshape(3, 3, 3, 3)
    mod = irtool.parse((DATA / "seed_conv_add_relu" / "5_FuseTIR_show_meta.py").read_text())
    from irtool.exec.relax import run_relax

    np.testing.assert_allclose(y, run_relax(mod, [x, w]), rtol=1e-5, atol=1e-5)
    # and from Python, through ctypes
    lib = ctypes.CDLL(str(so))
    out_arr = np.zeros((1, 3, 14, 14), "float32")
    args = (ctypes.c_void_p * 3)(x.ctypes.data, w.ctypes.data, out_arr.ctypes.data)
    assert lib.irtool_main(args) == 0
    np.testing.assert_array_equal(out_arr, y)


def test_build_without_a_c_compiler_says_so(tmp_path):
    env = {"PATH": str(tmp_path), "CC": "no-such-compiler"}
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.build", str(SEED), "-o", str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1 and "no C compiler found" in proc.stderr
    assert not (tmp_path / "m.so").exists()


def test_build_of_libm_calls_in_vectorised_loops_prints_nothing(tmp_path):
    # tanh and erf are libm calls, which LLVM does not vectorise in the loops the schedule marks
    # vectorised: its "loop not vectorized" reports stay off stderr (regression: the GRU's gates)
    src = tmp_path / "m.ir"
    src.write_text("""
def @main(%x: Tensor[(16, 64), float32]) {
  add(tanh(%x), erf(%x))
}""")
    proc = _run("irtool-build", src, "-o", tmp_path / "m.so")
    assert proc.returncode == 0, proc.stderr
    assert "not vectorized" not in proc.stderr and "warning" not in proc.stderr, proc.stderr
