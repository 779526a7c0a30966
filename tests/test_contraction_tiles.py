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
from irtool.codegen.native import compile_tir, generate_llvm
from irtool.codegen.schedule import Schedule, _stmts
from irtool.exec.relax import run_relax
from irtool.exec.tir import run_prim_func
from irtool.frontend.onnx import from_onnx
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.ir.tir_visitor import substitute
from irtool.passes._contraction_tiles import TileConfig, tile_contraction
from irtool.passes.default_cpu_schedule import host_has_fma
from irtool.text import parse, to_text
from irtool.transform import get_pass

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
    # short reductions over rows of 16 columns or more: lanes along the columns
    (4, 20, 12, 1, 1, 0), (3, 35, 8, 3, 1, 1), (5, 16, 7, 1, 1, 0),
])
def test_conv_tiles_match_the_interpreter(c, size, oc, kernel, stride, pad):
    exe = _check(*_conv(c, size, oc, kernel, stride, pad), tolerance=1e-5)
    if oc >= 8:
        assert _tiles(exe), "the conv got no register tile"


def test_a_1x1_conv_reads_its_input_in_place_and_writes_its_output_in_order():
    """Without padding, `pad_temp` is a plain copy: inlined, not a pass over the input. With
    lanes along the columns the tiles go along the output's rows (channel panels outer)."""
    exe = _check(*_conv(16, 20, 24, 1, 1, 0), tolerance=1e-5)
    conv = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "conv2d" in name)
    assert not conv.body.block.alloc_buffers, "pad_temp is still allocated"
    parallel = next(n for n in _stmts(conv.body) if isinstance(n, tir.For) and n.kind == "parallel")
    assert parallel.loop_var.name.startswith("ff_0_yy"), parallel.loop_var.name


def test_constant_weights_are_packed_into_panels_once():
    model, _ = _conv(4, 7, 20, 3, 1, 1)
    exe = irtool.build(from_onnx(model)[0])
    conv = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "conv2d" in name)
    weight = dict(conv.buffer_map)[conv.params[1]]
    lanes = weight.shape[-1].value
    # OIHW (20, 4, 3, 3) -> (ceil(20 / lanes), 4, 3, 3, lanes): output channels contiguous
    assert [d.value for d in weight.shape] == [-(-20 // lanes), 4, 3, 3, lanes]
    # the tile is marked for FMA where the host has it
    assert ("irtool.fp_contract" in to_text(exe.mod)) == host_has_fma()


def test_the_elementwise_consumer_is_absorbed_so_no_intermediate_is_stored():
    model, _ = _dense(6, 32, 48, epilogue=True)
    exe = irtool.build(from_onnx(model)[0])
    fused = [f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and name.startswith("fused_")]
    assert fused
    for f in fused:
        assert not f.body.block.alloc_buffers, "matmul's intermediate is still allocated"
    llvm_ir, _ = generate_llvm(IRModule({"f": fused[0]}))
    assert "malloc" not in llvm_ir


def test_without_fp_contract_the_tile_multiplies_and_adds_separately():
    model, _ = _dense(4, 16, 32, epilogue=False)
    mod = from_onnx(model)[0]
    for options, expect in (({"fp_contract": 0}, False), ({}, True)):
        scheduled = prepare(mod, schedule=options, plan_memory=False)
        prims = IRModule({n: f for n, f in scheduled.functions.items() if isinstance(f, tir.PrimFunc)})
        assert ("llvm.fmuladd" in compile_tir(prims).llvm_ir) == (expect and host_has_fma())


def test_substituting_a_vector_index_makes_a_vector_load():
    """Rebuilt nodes recompute their dtype (the tiles substitute Ramps into scalar loads; a
    stale scalar dtype printed `T.Mul(...)` and broke the printer's fixed point)."""
    buf = tir.Buffer("w", (tir.IntImm(64, "int64"),), "float32")
    i = tir.Var("i", "int64")
    load = tir.BufferLoad(buf, [i])
    product = tir.BinOp("mul", load, load)
    vector = substitute(product, {i: tir.Ramp(tir.IntImm(0, "int64"), tir.IntImm(1, "int64"), 16)})
    assert vector.a.dtype == "float32x16" and vector.dtype == "float32x16"
    compare = substitute(tir.BinOp("lt", load, load), {i: tir.Ramp(tir.IntImm(0, "int64"), tir.IntImm(1, "int64"), 16)})
    assert compare.dtype == "boolx16"
    assert tir.BinOp("lt", vector.a, vector.b).dtype == "boolx16"


TWO_READERS = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(x: T.Buffer((T.int64(8), T.int64(8)), "float32"), w: T.Buffer((T.int64(8), T.int64(32)), "float32"), out: T.Buffer((T.int64(8), T.int64(32)), "float32"), out2: T.Buffer((T.int64(8), T.int64(32)), "float32")):
    for i0, i1, k in T.grid(T.int64(8), T.int64(32), T.int64(8)):
        with T.sblock("matmul"):
            v0, v1, vk = T.axis.remap("SSR", [i0, i1, k])
            with T.init():
                out[v0, v1] = T.float32(0)
            out[v0, v1] = out[v0, v1] + x[v0, vk] * w[vk, v1]
    for i0, i1 in T.grid(T.int64(8), T.int64(32)):
        with T.sblock("copy"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            out2[v0, v1] = w[v0, v1]
"""


def test_a_weight_another_block_reads_keeps_its_layout():
    """Packing changes a parameter's layout, so a weight that another block reads as it is
    is never packed. Here the weight is [n, k] (dense): alone it is packed, shared the tile
    cannot read its lanes and leaves the block to the old path."""
    dense = TWO_READERS.replace("x[v0, vk] * w[vk, v1]", "x[v0, vk] * w[v1, vk]").replace(
        'w: T.Buffer((T.int64(8), T.int64(32))', 'w: T.Buffer((T.int64(32), T.int64(8))').replace(
        "out2[v0, v1] = w[v0, v1]", "out2[v0, v1] = w[v1, v0]")
    for text, packed in ((dense, False), (dense.replace("out2[v0, v1] = w[v1, v0]", "out2[v0, v1] = T.float32(1)"), True)):
        sch = Schedule(parse(text, "dense.py").functions["main"], "main")
        config = TileConfig(512, True, False, frozenset({1}))
        assert tile_contraction(sch, "matmul", config) == packed
        assert bool(config.packings) == packed
        shape = [d.value for d in dict(sch.func.buffer_map)[sch.func.params[1]].shape]
        assert shape == ([1, 8, 32] if packed else [32, 8])


def test_odd_sizes_in_tir_run_like_the_interpreter():
    """TIR-only modules (no constant to pack; weights read in place or packed at run time),
    native against the interpreter, exactly without FMA."""
    for m, k, n in ((1, 3, 5), (7, 13, 17), (33, 9, 48), (64, 1100, 1100)):
        text = TWO_READERS.replace("(T.int64(8), T.int64(8))", f"(T.int64({m}), T.int64({k}))")
        text = text.replace("w: T.Buffer((T.int64(8), T.int64(32))", f"w: T.Buffer((T.int64({k}), T.int64({n}))")
        text = text.replace("out: T.Buffer((T.int64(8), T.int64(32))", f"out: T.Buffer((T.int64({m}), T.int64({n}))")
        text = text.replace("T.grid(T.int64(8), T.int64(32), T.int64(8))", f"T.grid(T.int64({m}), T.int64({n}), T.int64({k}))")
        text = text[:text.index("    for i0, i1 in T.grid")].replace(
            ', out2: T.Buffer((T.int64(8), T.int64(32)), "float32")', "")
        mod = IRModule({"main": parse(text, "mm.py").functions["main"]})
        scheduled = get_pass("default-cpu-schedule")(fp_contract=0, min_parallel_work=0)(mod)
        rng = np.random.default_rng(m)
        x, w = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
        expected = np.zeros((m, n), "float32")
        run_prim_func(mod.functions["main"], [x, w, expected])
        got = np.zeros((m, n), "float32")
        compile_tir(scheduled)["main"](x, w, got)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("c,size,oc,kernel,pad", [
    # a 1x1 conv over 4 channels and 40 columns: a short reduction (at 16 lanes the third
    # vector starts at 24)
    (4, 40, 12, 1, 0),
    # a 3x3 window of 16 channels over 32 columns: whole vectors either way, and along the
    # channels the tile would be stored transposed
    (16, 32, 16, 3, 1),
])
def test_lanes_along_the_columns(c, size, oc, kernel, pad):
    """Lanes along the output's columns: the weight stays as it is (broadcast), the tile is
    stored as whole vectors."""
    model, inputs = _conv(c, size, oc, kernel, 1, pad)
    exe = _check(model, inputs, tolerance=1e-4)
    conv = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "conv2d" in name)
    assert [d.value for d in dict(conv.buffer_map)[conv.params[1]].shape] == [oc, c, kernel, kernel]
    stores = [n for n in _stmts(conv.body) if isinstance(n, tir.For) and n.kind == "vectorized"
              and isinstance(n.body, tir.BufferStore) and n.body.buffer.scope == "global"]
    assert stores, "the tile is not stored as vectors"


@pytest.mark.parametrize("m,k,n", [(32, 80, 64), (1, 64, 40), (1, 784, 512)])
def test_a_constant_weight_whose_rows_could_be_read_in_place_is_packed_too(m, k, n):
    """A (K, N) matmul weight has its lanes contiguous already, but a tile would read a strip
    of each row, rows N floats apart: packed, each tile streams one contiguous panel (a
    matrix-vector product's too, whose lanes could run along W's rows in place)."""
    model, inputs = _dense(m, k, n, epilogue=True)
    exe = _check(model, inputs, tolerance=1e-4)
    matmul = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "matmul" in name)
    shape = [d.value for d in dict(matmul.buffer_map)[matmul.params[1]].shape]
    assert len(shape) == 3 and shape[1] == k and shape[0] * shape[2] >= n, shape


@pytest.mark.parametrize("c,size,oc,kernel,stride", [(3, 32, 32, 3, 2), (16, 14, 48, 1, 1), (8, 7, 32, 1, 1)])
def test_a_tile_transposed_on_its_way_out_stays_in_registers(c, size, oc, kernel, stride):
    """Lanes along the output channels, rows along the output's columns: the write-back
    transposes the tile. Its accesses are all at constant places, so after LLVM's
    optimisation the tile is shuffled in registers: no gather from a copy on the stack."""
    import llvmlite.binding as llvm

    from irtool.codegen.native import optimize, target_machine

    model, inputs = _conv(c, size, oc, kernel, stride, kernel // 2)
    exe = _check(model, inputs, tolerance=1e-4)
    conv = next(f for name, f in exe.mod.functions.items() if isinstance(f, tir.PrimFunc) and "conv2d" in name)
    assert any(n.kind == "unroll" and isinstance(n.body, tir.For) and n.body.kind == "unroll"
               and isinstance(n.body.body, tir.BufferStore) and n.body.body.buffer.scope == "global"
               for n in _stmts(conv.body) if isinstance(n, tir.For)), "no transposing write-back"
    llmod = llvm.parse_assembly(generate_llvm(IRModule({"conv": conv}))[0])
    optimize(llmod, target_machine())
    assert "gather" not in str(llmod)


def test_rows_of_a_four_kib_apart_are_limited_by_the_l1_ways(monkeypatch):
    """A's rows broadcast at one reduction step must not evict each other: 4 KiB apart they
    all fall in one L1 set (64 sets of 64 bytes), so at most ways - 2 of them; 2 KiB apart
    they alternate between two sets; 8 bytes apart they share lines."""
    from irtool.passes import _contraction_tiles as tiles

    sets, ways = tiles.l1_sets_and_ways()  # the host's, or Zen's when sysfs does not say
    assert sets >= 1 and ways >= 2
    monkeypatch.setattr(tiles, "l1_sets_and_ways", lambda: (64, 8))
    assert tiles._rows_in_l1(4096, 32) == 6
    assert tiles._rows_in_l1(2048, 32) == 12
    assert tiles._rows_in_l1(8, 32) == 32
    monkeypatch.setattr(tiles, "l1_sets_and_ways", lambda: (64, 12))
    assert tiles._rows_in_l1(4096, 32) == 10


def test_a_matmul_with_rows_four_kib_apart_gets_a_tile_the_l1_holds():
    text = """@I.ir_module
class Module:
    @T.prim_func(private=True)
    def main(a: T.Buffer((T.int64(16), T.int64(1024)), "float32"), b: T.Buffer((T.int64(1024), T.int64(32)), "float32"), c: T.Buffer((T.int64(16), T.int64(32)), "float32")):
        for i, j, k in T.grid(T.int64(16), T.int64(32), T.int64(1024)):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    c[vi, vj] = T.float32(0.0)
                c[vi, vj] = c[vi, vj] + a[vi, vk] * b[vk, vj]
"""
    from irtool.passes._contraction_tiles import l1_sets_and_ways

    mod = get_pass("default-cpu-schedule")()(parse(text))
    tile = next(n for n in _stmts(mod.functions["main"].body) if isinstance(n, tir.SBlock) and n.name.endswith("_tile"))
    rows = tile.alloc_buffers[0].shape[0].value
    assert rows <= l1_sets_and_ways()[1] - 2
    a, b = RNG.standard_normal((16, 1024)).astype(np.float32), RNG.standard_normal((1024, 32)).astype(np.float32)
    got = np.zeros((16, 32), np.float32)
    compile_tir(mod)["main"](a, b, got)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
