"""`irtool.build`: whole models as one native entry point, against the interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irtool
from irtool.codegen.executable import BuildError, plan_storage
from irtool.codegen.native import NativeError
from irtool.exec.relax import run_relax
from irtool.ir import relax as rx

DATA = Path(__file__).parent / "data" / "tvm-0.27"
BIN = Path(sys.executable).parent
ROOT = Path(__file__).parent.parent


def _random_inputs(fn: rx.Function, sizes: dict | None = None, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for p in fn.params:
        s = p.struct_info
        shape = [d if isinstance(d, int) else (sizes or {}).get(d.name, 5) for d in s.shape]
        out.append(rng.standard_normal(shape).astype(s.dtype))
    return out


@pytest.mark.parametrize("path", ["seed_conv_add_relu/5_FuseTIR_show_meta.py", "seed_two_conv_branches/5_FuseTIR.py",
                                  "seed_two_conv_branches/0_input.py"])
def test_reference_models_match_the_interpreter(path):
    mod = irtool.parse((DATA / path).read_text(), path)
    exe = irtool.build(mod)
    args = _random_inputs(mod.functions["main"])
    np.testing.assert_allclose(exe(*args), run_relax(mod, args), rtol=1e-4, atol=1e-3)
    assert exe.run({p.name_hint: a for p, a in zip(mod.functions["main"].params, args)}).shape == exe(*args).shape


def test_symbolic_batch_is_bound_at_each_call():
    mod = irtool.parse((DATA / "syntax/dynamic_shape_after_zero.py").read_text())
    exe = irtool.build(mod)
    for n in (1, 4, 13):
        args = _random_inputs(mod.functions["main"], {"n": n}, seed=n)
        y = exe(*args)
        assert y.shape == (n, 4)
        np.testing.assert_allclose(y, run_relax(mod, args), rtol=1e-5, atol=1e-5)
    with pytest.raises(NativeError, match="dimension 1 is 7, expected 8"):
        exe(np.zeros((3, 7), "float32"), np.zeros((8, 4), "float32"))


def test_relay_input_goes_through_relay_to_relax_and_the_zero_pipeline():
    mod = irtool.parse((ROOT / "examples" / "seed000.ir").read_text(), "seed000.ir")
    exe = irtool.build(mod)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 16, 16)).astype("float32")
    w = rng.standard_normal((3, 3, 3, 3)).astype("float32")
    np.testing.assert_allclose(exe(x, w), irtool.interpret(mod, {"x": x, "weight": w}), rtol=1e-4, atol=1e-4)
    # what ran is TIR: a fused PrimFunc per group, no Relax op left
    assert all(not isinstance(f, rx.Function) or name == "main" for name, f in exe.mod.functions.items())


TUPLES = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def twice(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(2)
                C[vi] = A[vi] + T.float32(1)

    @T.prim_func(private=True)
    def neg(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.float32(0) - A[vi]

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        cls = Module
        with R.dataflow():
            t = R.call_tir(cls.twice, (x,), out_ty=[R.Tensor((4,), dtype="float32"), R.Tensor((4,), dtype="float32")])
            a = t[0]
            b = R.call_tir(cls.neg, (t[1],), out_ty=R.Tensor((4,), dtype="float32"))
            c = R.call_tir(cls.neg, (b,), out_ty=R.Tensor((4,), dtype="float32"))
            gv = (a, c, x, c)
            R.output(gv)
        return gv
'''


def test_tuple_outputs_inputs_returned_and_values_returned_twice():
    mod = irtool.parse(TUPLES, "tuples.py")
    exe = irtool.build(mod)
    x = np.arange(4, dtype="float32")
    out = exe(x)
    expected = run_relax(mod, [x])
    assert isinstance(out, tuple) and len(out) == 4
    for a, b in zip(out, expected):
        np.testing.assert_array_equal(a, b)
    assert out[2] is not x and out[1] is not out[3]


def test_an_op_without_legalization_is_a_located_diagnostic():
    text = '''
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        gv: R.Tensor((4,), dtype="float32") = R.call_pure_packed("my_op", x, sinfo_args=(R.Tensor((4,), dtype="float32"),))
        R.output(gv)
    return gv
'''
    mod = irtool.parse(text, "opaque.py")
    with pytest.raises(BuildError) as err:
        irtool.build(mod)
    assert "opaque.py:5:" in err.value.render()


def test_a_constant_without_data_is_a_diagnostic():
    mod = irtool.parse((DATA / "seed_conv_add_relu/5_FuseTIR.py").read_text(), "nometa.py")
    with pytest.raises(BuildError, match="constant without data"):
        irtool.build(mod)


# ----------------------------------------------------------------------------- the storage plan


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(1, 5000)), min_size=1, max_size=25))
def test_planned_storage_never_overlaps_live_tensors(tensors):
    first = [f for f, _, _ in tensors]
    last = [f + span for f, span, _ in tensors]
    sizes = [size for _, _, size in tensors]
    offsets, total = plan_storage(sizes, first, last)
    for i in range(len(tensors)):
        assert offsets[i] % 64 == 0 and offsets[i] + sizes[i] <= total
        for j in range(i):
            live_together = first[i] <= last[j] and first[j] <= last[i]
            disjoint = offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
            assert not live_together or disjoint, (i, j)
    assert total <= sum((s + 63) // 64 * 64 for s in sizes)


def test_a_chain_reuses_storage_and_stays_correct():
    """A chain of 8 elementwise steps needs two buffers, not seven; every step reads what
    the previous one wrote, so any wrong reuse shows in the result."""
    lines = ["@R.function",
             'def main(x: R.Tensor((64, 64), dtype="float32")) -> R.Tensor((64, 64), dtype="float32"):',
             "    with R.dataflow():", "        v0 = R.exp(x)"]
    lines += [f"        v{i} = R.add(v{i - 1}, R.multiply(v{i - 1}, x))" for i in range(1, 8)]
    lines += ["        gv = R.tanh(v7)", "        R.output(gv)", "    return gv"]
    mod = irtool.parse("\n".join(lines) + "\n", "chain.py")
    from irtool.transform import PassContext, get_pass

    with PassContext(opt_level=0):  # no fusion: every intermediate is a tensor in main
        lowered = get_pass("legalize-ops")()(mod)
    exe = irtool.build(lowered)
    x = np.random.default_rng(0).uniform(-0.1, 0.1, (64, 64)).astype("float32")
    np.testing.assert_allclose(exe(x), run_relax(mod, [x]), rtol=1e-5, atol=1e-6)
    assert exe.plan.arena_bytes < exe.plan.naive_bytes / 2


# ----------------------------------------------------------------------------- command line


def test_irtool_run_native_matches_the_interpreter(tmp_path):
    path = ROOT / "examples" / "seed000.ir"
    common = [BIN / "irtool-run", path, "--random-inputs", "--seed", "3"]
    interp = subprocess.run([*common, "-o", tmp_path / "i.npy"], capture_output=True, text=True, timeout=300)
    native = subprocess.run([*common, "--backend", "native", "--repeat", "3", "--threads", "2", "-o",
                             tmp_path / "n.npy"], capture_output=True, text=True, timeout=300,
                            env={**os.environ})
    assert interp.returncode == 0 and native.returncode == 0, native.stderr
    assert "compile: " in native.stderr and "time: median " in native.stderr and "over 3 runs" in native.stderr
    np.testing.assert_allclose(np.load(tmp_path / "n.npy"), np.load(tmp_path / "i.npy"), rtol=1e-4, atol=1e-4)


def test_irtool_run_flags_need_the_native_backend():
    proc = subprocess.run([BIN / "irtool-run", ROOT / "examples" / "seed000.ir", "--random-inputs", "--repeat", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "need --backend native" in proc.stderr


def test_models_are_built_from_tvms_memory_plan():
    """irtool.build runs TVM's memory planning; the entry point allocates its storages, and a
    module already in the planned form (TVM's printed StaticPlanBlockMemory output) builds too."""
    from irtool.transform import get_pass

    mod = irtool.parse((DATA / "seed_two_conv_branches/5_FuseTIR.py").read_text())
    exe = irtool.build(mod)
    text = irtool.to_text(exe.mod)
    assert text.count("R.memory.alloc_storage") == 2 and "R.call_tir" not in text
    assert exe.plan.arena_bytes == 2 * 262144 < exe.plan.naive_bytes
    args = _random_inputs(mod.functions["main"])
    # (the convolutions' fused multiply-adds round differently from the interpreter)
    np.testing.assert_allclose(exe(*args), run_relax(mod, args), rtol=1e-4, atol=1e-3)
    planned = mod
    for name in ("to-non-dataflow", "remove-purity-checking", "call-tir-rewrite", "static-plan-block-memory"):
        planned = get_pass(name)()(planned)
    again = irtool.build(irtool.parse(irtool.to_text(planned), "planned.py"), schedule=False)
    np.testing.assert_allclose(again(*args), run_relax(mod, args), rtol=1e-5, atol=1e-5)
