"""default-cpu-schedule's rules for depthwise convolutions, row reductions and contiguous
spatial rows (passes/_reduction_schedule.py).

- results: Relax programs at odd sizes (1, primes, vector tails) through the zero pipeline and
  the schedule, for 128-, 256- and 512-bit vectors: the TIR interpreter before scheduling, the
  interpreter after and native code after agree bit for bit (a few ULP where exp is called,
  whose libm and NumPy versions differ);
- the rules apply: each program's printout has the loop structure its rule makes, and the
  native code does vector arithmetic;
- tvm: each schedule's trace, replayed by TVM 0.27's s_tir.Schedule, prints the same TVMScript.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from test_default_cpu_schedule import _TVM_REPLAY, _comparable, relax_main, run_three_ways, zero_pipeline_prim_funcs
from test_native import _same

from irtool.codegen.native import compile_tir
from irtool.ir.module import IRModule
from irtool.passes.default_cpu_schedule import CpuScheduleConfig, schedule_module
from irtool.text import to_text

# name -> (Relax body over x (and y), x shape, y shape or None)
PROGRAMS = {
    "depthwise": ("R.nn.conv2d(x, y, padding=[1, 1, 1, 1], groups={a})", "1, {a}, {c}, {b}", "{a}, 1, 3, 3"),
    "depthwise_strided": ("R.nn.conv2d(x, y, strides=[2, 2], padding=[1, 1, 1, 1], groups={a})",
                          "1, {a}, {c1}, {b1}", "{a}, 1, 3, 3"),
    "depthwise_valid_5x5": ("R.nn.conv2d(x, y, groups={a})", "1, {a}, {c4}, {b4}", "{a}, 1, 5, 5"),
    "depthwise_dilated_stride3": ("R.nn.conv2d(x, y, strides=[3, 3], padding=[2, 1, 0, 2], dilation=[2, 2], "
                                  "groups={a})", "1, {a}, {c4}, {b4}", "{a}, 1, 3, 3"),
    "depthwise_multiplier": ("R.nn.conv2d(x, y, strides=[2, 1], padding=[1, 1, 1, 1], groups={a})",
                             "1, {a}, {c1}, {b1}", "{a2}, 1, 3, 3"),
    "depthwise_bias_clip": ("R.clip(R.add(R.nn.conv2d(x, y, padding=[1, 1, 1, 1], groups={a}), R.reshape(R.sum(y, "
                            "axis=[1, 2, 3]), [1, {a}, 1, 1])), 0, 6)", "1, {a}, {c}, {b}", "{a}, 1, 3, 3"),
    "per_channel_affine": ("R.clip(R.add(R.multiply(x, y), y), 0, 6)", "1, {a}, {c}, {b}", "{a}, 1, 1"),
    "softmax_rows": ("R.nn.softmax(x)", "{a}, {b}, {c}", None),
    "layer_norm_rows": ("R.nn.layer_norm(x, y, y, axes=[-1])", "{b}, {c}", "{c}"),
    "global_avg_pool": ("R.mean(x, axis=[2, 3], keepdims=True)", "1, {b}, {c}, {a}", None),
    "row_max": ("R.max(x, axis=[-1])", "{b}, {a}, {c}", None),
    "adaptive_avg_pool": ("R.nn.adaptive_avg_pool2d(x, output_size=[2, 3])", "1, {a}, {c1}, {b1}", None),
    "avg_pool": ("R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
                 "1, {a}, {c1}, {b1}", None),
    "max_pool": ("R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
                 "1, {a}, {c1}, {b1}", None),
    "max_pool_dilated": ("R.nn.max_pool2d(x, pool_size=[2, 3], strides=[1, 2], dilation=[2, 1], padding=[0, 1, 1, 0])",
                         "1, {a}, {c4}, {b4}", None),
}
SIZES = [(1, 1, 1), (1, 7, 3), (3, 17, 5), (13, 31, 2), (2, 33, 9)]
VECTOR_BITS = (128, 256, 512)
CALLS_LIBM = ("softmax_rows",)


def relax_program(name: str, a: int, b: int, c: int) -> str:
    body, xs, ys = PROGRAMS[name]
    sizes = dict(a=a, a2=2 * a, b=b, c=c, b1=b + 1, c1=c + 1, b4=b + 4, c4=c + 4)
    return relax_main(body.format(**sizes), xs.format(**sizes), ys and ys.format(**sizes))


def lowered(name: str, sizes) -> IRModule:
    return zero_pipeline_prim_funcs(relax_program(name, *sizes), name)


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_scheduled_code_is_bit_identical_to_the_interpreter(name, sizes):
    mod = lowered(name, sizes)
    for bits in VECTOR_BITS:
        scheduled, _ = schedule_module(mod, CpuScheduleConfig(bits, 0))
        lib = compile_tir(scheduled)
        for fname, fn in mod.functions.items():
            reference, interpreted, native = run_three_ways(fn, scheduled.functions[fname], lib[fname], 1)
            for k, (want, got_i, got_n) in enumerate(zip(reference, interpreted, native)):
                if name in CALLS_LIBM:
                    assert _same(want, got_n), f"{fname} argument {k}: native schedule differs ({bits} bits)"
                else:
                    assert want.tobytes() == got_n.tobytes(), f"{fname} argument {k}: native differs ({bits} bits)"
                assert want.tobytes() == got_i.tobytes(), f"{fname} argument {k}: interpreted differs ({bits} bits)"


def _scheduled_text(name: str, sizes, bits: int = 256) -> str:
    return to_text(schedule_module(lowered(name, sizes), CpuScheduleConfig(bits, 0))[0])


def test_depthwise_convolutions_become_stencil_tiles_over_a_padded_plane():
    text = _scheduled_text("depthwise_bias_clip", (8, 32, 6), bits=512)
    assert "for v_ff_fused in T.parallel(T.int64(8)):" in text  # one channel per task
    assert 'pad_temp_plane = T.sblock_alloc_buffer((T.int64(8), T.int64(34)), scope="local")' in text
    assert "for ry in T.unroll(T.int64(3)):" not in text and "for v_ry in T.unroll(T.int64(3)):" in text
    # no padded input, no intermediate: the padding is the plane's border, bias and clip are
    # applied as the tile is stored, and the copy into the plane has no condition
    assert "pad_temp = T.sblock_alloc_buffer" not in text and "group_conv2d_nchw_intermediate = " not in text
    assert "if_then_else" not in text
    assert "T.max(T.min(group_conv2d_nchw_intermediate_local[" in text
    # a stride of 2: the plane's columns in two phases, each tap reads contiguous lanes
    text = _scheduled_text("depthwise_strided", (4, 32, 9), bits=512)
    assert 'pad_temp_plane = T.sblock_alloc_buffer((T.int64(2), T.int64(12), T.int64(33)), scope="local")' in text
    assert "pad_temp_plane[v_rx % T.int64(2)," in text


def test_pooling_windows_are_stencil_tiles():
    text = _scheduled_text("max_pool", (4, 32, 9), bits=512)
    # the padding is the plane's border, filled with the lowest float; no pad_temp pass
    assert "pad_temp = T.sblock_alloc_buffer" not in text and "pad_temp_plane = T.sblock_alloc_buffer" in text
    assert "pad_temp_plane[ph, yy, xh] = T.float32(-340282346638528859811704183484516925440.0)" in text
    assert "pool_max_local[v_ax2_1, v_ax3_1 * T.int64(16):v_ax3_1 * T.int64(16) + T.int64(16)] = T.max(" in text
    # an average pool: the window's sum in the tile, the division applied as it is stored
    text = _scheduled_text("avg_pool", (4, 32, 9), bits=512)
    assert "pool_sum = T.sblock_alloc_buffer" not in text and "pool_sum_local" in text


def test_a_depthwise_form_the_stencil_tile_rejects_keeps_the_column_vector_schedule():
    from irtool.codegen.schedule import Schedule
    from irtool.passes import _reduction_schedule as rs

    func = next(iter(lowered("depthwise", (8, 32, 6)).functions.values()))
    sch = Schedule(func)
    loops = sch.get_loops("group_conv2d_nchw")
    realize = sch._realize("group_conv2d_nchw")[0]
    assert rs.schedule_depthwise(sch, loops, 4, realize.block, realize, 8, True)
    text = to_text(IRModule({"f": sch.func}))
    assert "for nn_ff_yy_fused in T.parallel(T.int64(48)):" in text
    assert "for ry in T.unroll(T.int64(3)):" in text and "for rx in T.unroll(T.int64(3)):" in text
    assert "for xx_1 in T.vectorized(T.int64(8)):" in text


def test_row_reductions_interleave_rows_across_the_lanes():
    text = _scheduled_text("softmax_rows", (2, 16, 40))
    # the row max and the row sum: 8 rows per vector, the reduction loop outside the lanes
    assert text.count("for k in range(T.int64(40)):\n                for i1_1 in T.vectorized(T.int64(8)):") == 2
    text = _scheduled_text("global_avg_pool", (7, 24, 7))
    assert "for ax1_0 in T.parallel(T.int64(3)):" in text  # the batch's unit loop outside


def test_contiguous_rows_are_fused_into_one_vector_loop():
    text = _scheduled_text("per_channel_affine", (4, 14, 14))
    assert "for i0_i1_fused in T.parallel(T.int64(4)):" in text
    assert "for i2_i3_fused in T.vectorized(T.int64(196)):" in text


@pytest.mark.parametrize("name", ["depthwise", "softmax_rows", "per_channel_affine"])
def test_native_code_does_vector_arithmetic(name):
    lib = compile_tir(schedule_module(lowered(name, (4, 32, 16)), CpuScheduleConfig(256, 0))[0])
    assert "x float>" in lib.optimized_ir, name


def test_a_depthwise_accumulator_stays_in_a_register_across_the_taps():
    """The 9 taps of one vector of outputs: one store of that vector, not one per tap."""
    mod = lowered("depthwise", (4, 32, 8))
    lib = compile_tir(schedule_module(mod, CpuScheduleConfig(256, 0))[0])
    conv = lib.optimized_ir.split("define")
    body = next(part for part in conv if "conv2d" in part.split("(")[0] and "fmul <8 x float>" in part)
    assert body.count("fmul <8 x float>") >= 9
    assert body.count("store <8 x float>") < body.count("fmul <8 x float>")


@pytest.mark.tvm
def test_traces_replayed_by_tvm_print_the_same(tvm_python, tmp_path):
    runner = tmp_path / "replay.py"
    runner.write_text(_TVM_REPLAY)
    cases = []
    for name in sorted(PROGRAMS):
        for sizes in SIZES[1:]:
            mod = lowered(name, sizes)
            for bits in (256, 512):
                path = tmp_path / f"{name}_{'x'.join(map(str, sizes))}_{bits}.py"
                path.write_text(to_text(mod))
                ours, traces = schedule_module(mod, CpuScheduleConfig(bits, 0))
                if any(line.startswith("#") for trace in traces.values() for line in trace):
                    continue  # a stencil or contraction tile: built directly, not by TVM's primitives
                (tmp_path / f"{path.name}.trace.json").write_text(json.dumps(traces))
                cases.append((path, to_text(ours)))
    proc = subprocess.run([tvm_python, str(runner), *(str(p) for p, _ in cases)], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    different = [p.name for p, ours in cases if _comparable(p) and open(f"{p}.tvm").read().rstrip("\n") != ours.rstrip("\n")]
    assert not different, f"{len(different)} of {len(cases)} differ from TVM, e.g. {different[:5]}"
    # (TVM prints adaptive pooling's nested block domains re-derived: those 6 are not compared)
    assert sum(_comparable(p) for p, _ in cases) >= 0.85 * len(cases), "TVM prints most inputs as we do"
    assert len(cases) >= 40, "the row reductions and spatial rows are still replayed"

