"""default-cpu-schedule's contraction tiles (passes/_contraction_tiles.py): accumulators in
registers, constant weights packed at compile time, the elementwise consumer absorbed.

Every case runs natively twice against the zero pipeline's unscheduled PrimFuncs run by the
interpreter: with `fp_contract=0` bit-identical (the tile keeps each output's order of
accumulation), and by default (fused multiply-adds where the host has FMA) within rounding.
Sizes include 1, primes and vector tails."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import irtool
from irtool.codegen.executable import prepare
from irtool.exec.relax import run_relax
from irtool.frontend.onnx import from_onnx
from irtool.ir import tir
from irtool.text import to_text

RNG = np.random.default_rng(7)


def _model(nodes, inputs, output_shape, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weights(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _dense(m: int, k: int, n: int, epilogue: bool) -> tuple[onnx.ModelProto, list]:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if epilogue else "y"])]
    inits = {"w": _weights(k, n)}
    if epilogue:
        nodes += [helper.make_node("Add", ["mm", "b"], ["biased"]), helper.make_node("Relu", ["biased"], ["y"])]
        inits["b"] = _weights(n)
    return _model(nodes, [("x", [m, k])], [m, n], inits), [_weights(m, k)]


def _conv(c: int, size: int, oc: int, kernel: int, stride: int, pad: int) -> tuple[onnx.ModelProto, list]:
    out = (size + 2 * pad - kernel) // stride + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], pads=[pad] * 4, strides=[stride] * 2,
                              kernel_shape=[kernel] * 2),
             helper.make_node("Relu", ["conv"], ["y"])]
    inits = {"w": _weights(oc, c, kernel, kernel), "b": _weights(oc)}
    return _model(nodes, [("x", [1, c, size, size])], [1, oc, out, out], inits), [_weights(1, c, size, size)]


def _check(model: onnx.ModelProto, inputs: list, tolerance: float) -> irtool.Executable:
    mod = from_onnx(model)[0]
    reference = run_relax(prepare(mod, schedule=False, plan_memory=False), inputs)
    exact = irtool.build(mod, schedule={"fp_contract": 0})
    np.testing.assert_array_equal(exact(*inputs), reference)
    fused = irtool.build(mod)
    np.testing.assert_allclose(fused(*inputs), reference, rtol=tolerance, atol=tolerance)
    return fused


def _tiles(exe) -> list[tir.SBlock]:
    from irtool.codegen.schedule import _stmts

    return [n for f in exe.mod.functions.values() if isinstance(f, tir.PrimFunc)
            for n in _stmts(f.body) if isinstance(n, tir.SBlock) and n.name.endswith("_tile")]


@pytest.mark.parametrize("m,k,n", [(1, 7, 1), (1, 64, 10), (1, 31, 33), (3, 17, 20), (13, 5, 16), (8, 24, 64),
                                   (29, 19, 47)])
@pytest.mark.parametrize("epilogue", [False, True])
def test_dense_tiles_match_the_interpreter(m, k, n, epilogue):
    exe = _check(*_dense(m, k, n, epilogue), tolerance=1e-5)
    if n >= 16 or m >= 2:  # (fewer outputs than a vector: nothing to tile)
        assert _tiles(exe), "the matmul got no register tile"


@pytest.mark.parametrize("c,size,oc,kernel,stride,pad", [
    (3, 9, 16, 3, 1, 1), (4, 7, 20, 3, 1, 1), (5, 13, 33, 3, 2, 1), (8, 14, 16, 1, 1, 0), (2, 11, 7, 5, 2, 2),
    (1, 1, 1, 1, 1, 0), (6, 8, 17, 3, 1, 0),
])
def test_conv_tiles_match_the_interpreter(c, size, oc, kernel, stride, pad):
    exe = _check(*_conv(c, size, oc, kernel, stride, pad), tolerance=1e-5)
    if oc >= 8:
        assert _tiles(exe), "the conv got no register tile"


def test_constant_weights_are_packed_into_panels_once():
    model, inputs = _conv(4, 7, 20, 3, 1, 1)
    exe = irtool.build(from_onnx(model)[0])
    conv = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "conv2d" in name)
    weight = dict(conv.buffer_map)[conv.params[1]]
    lanes = weight.shape[-1].value
    # OIHW (20, 4, 3, 3) -> (ceil(20 / lanes), 4, 3, 3, lanes): output channels contiguous
    assert [d.value for d in weight.shape] == [-(-20 // lanes), 4, 3, 3, lanes]
    text = to_text(exe.mod)
    assert "irtool.fp_contract" in text or not exe.mod  # the tile is marked for FMA


def test_the_elementwise_consumer_is_absorbed_so_no_intermediate_is_stored():
    model, inputs = _dense(6, 32, 48, epilogue=True)
    exe = irtool.build(from_onnx(model)[0])
    fused = [f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and name.startswith("fused_")]
    assert fused
    for f in fused:
        assert not f.body.block.alloc_buffers, "matmul's intermediate is still allocated"
    from irtool.codegen.native import generate_llvm
    from irtool.ir.module import IRModule

    llvm_ir, _ = generate_llvm(IRModule({"f": fused[0]}))
    assert "malloc" not in llvm_ir


def test_without_fp_contract_the_tile_multiplies_and_adds_separately():
    from irtool.codegen.native import compile_tir
    from irtool.ir.module import IRModule

    model, _ = _dense(4, 16, 32, epilogue=False)
    mod = from_onnx(model)[0]
    for options, expect in (({"fp_contract": 0}, False), ({}, True)):
        scheduled = prepare(mod, schedule=options, plan_memory=False)
        prims = IRModule({n: f for n, f in scheduled.functions.items() if isinstance(f, tir.PrimFunc)})
        from irtool.passes.default_cpu_schedule import host_has_fma

        assert ("llvm.fmuladd" in compile_tir(prims).llvm_ir) == (expect and host_has_fma())


def test_substituting_a_vector_index_makes_a_vector_load():
    """Rebuilt nodes recompute their dtype (the tiles substitute Ramps into scalar loads; a
    stale scalar dtype printed `T.Mul(...)` and broke the printer's fixed point)."""
    from irtool.ir.tir_visitor import substitute

    buf = tir.Buffer("w", (tir.IntImm(64, "int64"),), "float32")
    i = tir.Var("i", "int64")
    load = tir.BufferLoad(buf, [i])
    product = tir.BinOp("mul", load, load)
    vector = substitute(product, {i: tir.Ramp(tir.IntImm(0, "int64"), tir.IntImm(1, "int64"), 16)})
    assert vector.a.dtype == "float32x16" and vector.dtype == "float32x16"
    assert tir.BinOp("lt", vector.a, vector.b).dtype == "boolx16"
