"""exp on float32 computed inline in float64 (codegen/llvm_expr.py `call_exp`), so that a
vectorised loop stays vector code instead of calling libm's expf lane by lane: within an ULP
of the exact value over the whole float32 range (NumPy's is within 2), IEEE specials exact,
and the scalar tail of a vector loop computes the same bits as its vector body."""

from __future__ import annotations

import numpy as np
import pytest
from test_native import _same

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
SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72283, 88.72284, -87.33654, -103.97, -103.98, -104.5, 1e-8,
            -1e-8, 1e-30, -1e-30, 1e-45, 89.5, -1000.0]


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ordered = [np.where(v.view(np.int32) < 0, np.iinfo(np.int32).min - v.view(np.int32), v.view(np.int32))
               .astype(np.int64) for v in (a, b)]
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ordered[0] - ordered[1]))


def _exp(x: np.ndarray) -> tuple[np.ndarray, str]:
    lib = compile_tir(parse(EXP_LOOP.format(n=x.size, dtype="float32", fn="exp"), "exp_loop"))
    y = np.zeros_like(x)
    lib["main"](x, y)
    return y, lib.optimized_ir


def test_exp_is_within_an_ulp_of_the_exact_value_and_stays_vector_code():
    x = np.random.default_rng(0).uniform(-110, 95, 1 << 20).astype("float32")
    x[:len(SPECIALS)] = SPECIALS
    got, optimized = _exp(x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype("float64")).astype("float32")
    assert _ulps(got, exact).max() <= 1
    assert "call float @expf" not in optimized and "x double>" in optimized  # no libm call per lane


def test_exp_specials():
    got, _ = _exp(np.array(SPECIALS, "float32"))
    with np.errstate(over="ignore"):
        want = np.exp(np.array(SPECIALS, "float32").astype("float64")).astype("float32")
    assert got[0] == np.inf and got[1] == 0.0 and np.isnan(got[2]) and got[3] == 1.0 and got[4] == 1.0
    assert np.array_equal(got[3:], want[3:])  # overflow to inf, underflow to 0 and to subnormals


@pytest.mark.parametrize("n", [1, 3, 17, 1003])
def test_the_scalar_tail_computes_what_the_vector_body_does(n):
    x = np.random.default_rng(n).uniform(-20, 20, 1024).astype("float32")
    whole, _ = _exp(x)
    part, _ = _exp(x[:n].copy())  # all or most of it in the scalar remainder loop
    assert np.array_equal(whole[:n], part)


@pytest.mark.parametrize("fn", ["exp", "sigmoid"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_and_sigmoid_match_the_interpreter(fn, dtype):
    n = 1000 + 7
    mod = parse(EXP_LOOP.format(n=n, dtype=dtype, fn=fn), "exp_loop")
    x = np.random.default_rng(1).uniform(-100, 100, n).astype(dtype)
    x[:len(SPECIALS)] = np.array(SPECIALS).astype(dtype)
    want = [x.copy(), np.zeros(n, dtype)]
    run_prim_func(mod.functions["main"], want)
    got = np.zeros(n, dtype)
    compile_tir(mod)["main"](x.copy(), got)
    assert _same(want[1], got)
