"""Sizes a call_tir passes as scalars (`R.size` of a symbolic tensor legalizes to
`R.call_tir(cls.shape_to_tensor, (n,))`) through fuse-ops and fuse-tir, as TVM 0.27 does:
the fused function takes `n: T.int64` (not a `tir_vars` shape) when no struct info of the
group mentions `n`, the fused PrimFunc takes it as a scalar, and the caller passes `n`.
Regression: fuse-ops gave `tir_vars: R.Shape([n])` and fuse-tir refused the scalar
parameter (random module 300023 of run 11). Also the order of several sizes a fused
function gets through `tir_vars` (and fuse-tir's RemoveUnusedParameters through
`param_<var>`): TVM's FreeSymbolicVars lists them newest first."""

from __future__ import annotations

import numpy as np
import pytest
from test_fuse_ops_relax import hand_cases
from test_symbolic_products import assert_zero_pipeline_matches_tvm

from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.ir.relax_visitor import tir_vars
from irtool.text import parse, to_text
from irtool.transform import get_pass

MODULE = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("m", 3), dtype="float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            a = R.size(x)
            b = R.add(a, a)
            c = R.size(y)
            d = R.multiply(b, c)
            e = R.exp(y)
            f = R.size(e)
            R.output(d, f, e)
        return (d, f, e)
"""
SIZES = [(1, 2), (3, 5)]

# ONNX Tile's lowering (the issue-12 review's reproducer, two sizes instead of four)
TILE = """# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2,), dtype="int64")) -> R.Tensor(dtype="float32", ndim=2):
        d = T.int64()
        d_1 = T.int64()
        with R.dataflow():
            lv: R.Shape(ndim=2) = R.tensor_to_shape(y)
            lv1: R.Shape([d, d_1]) = R.match_cast(lv, R.Shape([d, d_1]))
            lv2: R.Tensor((1, 2, 1, 3), dtype="float32") = R.reshape(x, R.shape([1, 2, 1, 3]))
            lv3: R.Tensor((d, 2, d_1, 3), dtype="float32") = R.broadcast_to(lv2, R.shape([d, 2, d_1, 3]))
            gv: R.Tensor((d * 2, d_1 * 3), dtype="float32") = R.reshape(lv3, R.shape([d * 2, d_1 * 3]))
            R.output(gv)
        return gv
"""


def _zero(mod):
    return get_pass("zero-pipeline")()(mod)


def _inputs(n: int, m: int) -> list:
    rng = np.random.default_rng(n * 10 + m)
    return [rng.standard_normal((n, 4)).astype("float32"), rng.standard_normal((m, 3)).astype("float32")]


def test_fused_functions_take_the_size_as_a_scalar():
    mod = parse(MODULE)
    for name in ("legalize-ops", "annotate-tir-op-pattern", "fuse-ops"):
        mod = get_pass(name)()(mod)
    fn = mod.functions["fused_shape_to_tensor_prod"]
    [param] = fn.params
    assert param.name_hint == "n" and isinstance(param.struct_info, rx.PrimStructInfo)
    assert param.struct_info.value is None
    text = to_text(_zero(parse(MODULE)))
    assert 'def fused_shape_to_tensor_prod(n: T.int64, lv1_red_intermediate: T.Buffer((), "int64")):' in text
    assert "R.call_tir(cls.fused_shape_to_tensor_prod, (n,)" in text and "tir_vars" not in text


def test_lowered_sizes_run_in_the_interpreter_and_natively():
    from irtool.codegen.executable import build

    mod = parse(MODULE)
    lowered = _zero(mod)
    exe = build(mod)
    for n, m in SIZES:
        args = _inputs(n, m)
        want = run_relax(mod, args)
        assert int(want[0]) == 2 * (n * 4) * (m * 3) and int(want[1]) == m * 3
        for got in (run_relax(lowered, args), exe(*args)):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_several_free_sizes_come_newest_first():
    mod = parse(TILE)
    for name in ("legalize-ops", "annotate-tir-op-pattern", "fuse-ops"):
        mod = get_pass(name)()(mod)
    assert "tir_vars: R.Shape([d_1, d])" in to_text(mod)
    text = to_text(get_pass("fuse-tir")()(mod))
    assert 'def fused_reshape_broadcast_to(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), d_1: T.int64, d: T.int64,' in text
    lowered = _zero(parse(TILE))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for reps in ([1, 1], [2, 3]):
        np.testing.assert_array_equal(run_relax(lowered, [x, np.array(reps, "int64")]), np.tile(x, reps))


def _prim_args(fn: rx.Function) -> list:
    return [a for block in fn.body.blocks for b in block.bindings if isinstance(b.value, rx.Call)
            for a in (b.value.args[1].fields_ if isinstance(b.value.args[1], rx.Tuple) else ())
            if isinstance(a, rx.PrimValue)]


def test_sizes_kept_in_calls_are_known_to_the_struct_info():
    """The rule TVM follows: a size stays in the inner call only when each of its variables
    occurs in the struct info of the group's parameters or bindings; every other size is a
    parameter."""
    checked = 0
    for case in hand_cases():
        fused = get_pass("fuse-ops")()(parse(case, "fuse-ops.ir"))
        for fn in fused.functions.values():
            if not (isinstance(fn, rx.Function) and dict(fn.attrs or ()).get("Primitive")):
                continue
            sinfos = [p.struct_info for p in fn.params if not isinstance(p.struct_info, rx.ShapeStructInfo)]
            sinfos += [b.var.struct_info for block in fn.body.blocks for b in block.bindings]
            known = set(tir_vars(sinfos))
            for arg in _prim_args(fn):
                assert set(tir_vars(arg.value)) <= known, to_text(fn)
                checked += 1
            scalar_params = [p for p in fn.params if isinstance(p.struct_info, rx.PrimStructInfo)]
            for p in scalar_params:
                checked += 1
                assert p.struct_info.value is None
    assert checked >= 6


@pytest.mark.tvm
@pytest.mark.parametrize("module", [MODULE, TILE], ids=["size", "tile"])
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path, module):
    assert_zero_pipeline_matches_tvm(tvm_python, tmp_path, module)
