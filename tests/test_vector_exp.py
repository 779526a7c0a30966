"""exp in vectorised loops: libm's expf/exp with glibc's vector variants (libmvec) declared,
so that LLVM's loop vectoriser calls `_ZGVeN16v_expf` & co. instead of expf lane by lane
(codegen/llvm_expr.py `call_exp`); results within 4 ULP of the interpreter (NumPy), IEEE
specials exact; shared libraries link libmvec."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from test_native import _same

import irtool
from irtool.codegen.export import find_c_compiler
from irtool.codegen.llvm_expr import vector_libm_variants
from irtool.codegen.native import compile_tir
from irtool.exec.tir import run_prim_func
from irtool.text import parse

EXP_LOOP = """@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64({n}),), "{dtype}"), y: T.Buffer((T.int64({n}),), "{dtype}")):
        T.func_attr({{"tirx.noalias": True}})
        for i in T.vectorized(T.int64({n})):
            with T.sblock("e"):
                v = T.axis.spatial(T.int64({n}), i)
                y[v] = T.{fn}(x[v])
"""

needs_libmvec = pytest.mark.skipif(not vector_libm_variants(), reason="no libmvec (glibc, x86-64) on this host")


def _inputs(n: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.uniform(-100, 100, n).astype(dtype)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.7, 88.8, -87.3, -103.0, -104.0, 709.7, -745.2, 1e-8, -1e-8]
    x[:len(specials)] = np.array(specials).astype(dtype)
    return x


@needs_libmvec
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["exp", "sigmoid"])
def test_vectorised_exp_calls_libmvec_and_matches_the_interpreter(dtype, fn):
    n = 1000 + 7  # a vector tail too
    mod = parse(EXP_LOOP.format(n=n, dtype=dtype, fn=fn), "exp_loop")
    lib = compile_tir(mod)
    assert "@_ZGV" in lib.optimized_ir and "call <" in lib.optimized_ir, "exp stayed a scalar call per lane"
    x = _inputs(n, dtype)
    want = [x.copy(), np.zeros(n, dtype)]
    run_prim_func(mod.functions["main"], want)
    got = np.zeros(n, dtype)
    lib["main"](x.copy(), got)
    assert _same(want[1], got)
    if fn == "exp":
        assert np.isnan(got[2]) and got[0] == np.inf and got[1] == 0.0 and got[3] == 1.0


SOFTMAX = """@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 37), dtype="float32")):
        with R.dataflow():
            gv = R.nn.softmax(x)
            R.output(gv)
        return gv
"""


@needs_libmvec
@pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler")
def test_a_shared_library_links_libmvec(tmp_path):
    exe = irtool.build(parse(SOFTMAX, "softmax"))
    so = tmp_path / "softmax.so"
    exe.export_library(str(so))
    x = np.random.default_rng(1).standard_normal((3, 37)).astype("float32")
    out = np.zeros((3, 37), "float32")
    lib = ctypes.CDLL(str(so))
    args = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
    assert lib.irtool_main(args) == 0
    np.testing.assert_array_equal(out, exe(x))
