"""default-cpu-schedule (passes/default_cpu_schedule.py) and the schedule primitives
(codegen/schedule.py).

- results: Relax programs at odd sizes (1, primes, tails of vector loops) through the zero
  pipeline and the schedule, run by the TIR interpreter before and after scheduling and as
  native code after: all three agree (bit-identical, or a few ULP in transcendental functions);
- fusion: a fused elementwise chain allocates no intermediate buffer once scheduled (no
  sblock_alloc_buffer, no malloc in the LLVM IR), where the unscheduled one does;
- vectors: the scheduled elementwise code uses packed vector instructions of the host's width;
- primitives: what each one refuses, and printouts checked against TVM 0.27's;
- tvm: the trace of every schedule replayed by TVM 0.27's own s_tir.Schedule on the same
  input prints byte-identical TVMScript (lit cases' functions and the odd-size programs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import numpy as np
import pytest
from test_native import _same

from irtool.codegen.native import compile_tir, host_cpu
from irtool.codegen.schedule import Schedule, ScheduleError
from irtool.exec.tir import run_prim_func
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.passes.default_cpu_schedule import CpuScheduleConfig, host_vector_bits, schedule_module
from irtool.text import parse, to_text
from irtool.transform import get_pass

# name -> (Relax body over x (and y), x shape, y shape or None); one line each
PROGRAMS = {
    "add_relu": ("R.nn.relu(R.add(x, y))", "{a}, {b}", "{a}, {b}"),
    "bias_exp_mul": ("R.multiply(R.exp(R.add(x, y)), x)", "{a}, {b}", "{b}"),
    "sigmoid_chain": ("R.sigmoid(R.subtract(R.multiply(x, x), y))", "{a}, {b}, {c}", "{c}"),
    "transpose_add": ("R.add(R.permute_dims(x, axes=[1, 0]), y)", "{a}, {b}", "{b}, {a}"),
    "softmax": ("R.nn.softmax(x)", "{a}, {b}", None),
    "sum_axis1": ("R.sum(x, axis=[1])", "{a}, {b}, {c}", None),
    "mean_last": ("R.mean(x, axis=[-1], keepdims=True)", "{a}, {b}", None),
    "max_axis0": ("R.max(x, axis=[0])", "{a}, {b}", None),
    "layer_norm": ("R.nn.layer_norm(x, y, y, axes=[-1])", "{a}, {b}", "{b}"),
    "max_pool": ("R.nn.max_pool2d(x, pool_size=[2, 2], strides=[1, 1])", "1, {a}, {b1}, {c1}", None),
    "matmul_bias": ("R.add(R.matmul(x, y), y[0])", "{a}, {b}", "{b}, {b}"),
    # register-tiled contractions: the columns are a multiple of every vector width
    "matmul_tile": ("R.matmul(x, y)", "{a}, {b}", "{b}, 48"),
    "batch_matmul_tile": ("R.matmul(x, y)", "2, {a}, {c}", "2, {c}, 32"),
    "conv_tile": ("R.nn.relu(R.nn.conv2d(x, y, padding=[1, 1, 1, 1]))", "1, {c}, {a}, 16", "{b}, {c}, 3, 3"),
    "conv_short_row": ("R.nn.conv2d(x, y)", "1, {c}, 9, 16", "4, {c}, 1, 3"),
    "conv_strided": ("R.nn.conv2d(x, y, strides=[2, 2], padding=[1, 1, 1, 1])", "1, {c}, 9, 33", "4, {c}, 3, 3"),
}
SIZES = [(1, 1, 1), (1, 7, 3), (3, 17, 5), (13, 31, 2), (2, 33, 9)]
VECTOR_BITS = (128, 256, 512)


def relax_main(body: str, xs: str, ys: str | None) -> str:
    """A Relax module whose main binds `body` over x (and y) of those shapes."""
    params = f'x: R.Tensor(({xs}), dtype="float32")' + (f', y: R.Tensor(({ys}), dtype="float32")' if ys else "")
    return f"""@I.ir_module
class Module:
    @R.function
    def main({params}):
        with R.dataflow():
            gv = {body}
            R.output(gv)
        return gv
"""


def zero_pipeline_prim_funcs(text: str, name: str) -> IRModule:
    """The PrimFuncs the zero pipeline makes of a Relax module (main dropped)."""
    mod = get_pass("zero-pipeline")()(parse(text, name))
    return IRModule({k: f for k, f in mod.functions.items() if isinstance(f, tir.PrimFunc)})


def relax_program(name: str, a: int, b: int, c: int) -> str:
    body, xs, ys = PROGRAMS[name]
    xs, ys = xs.format(a=a, b=b, c=c, b1=b + 1, c1=c + 1), ys and ys.format(a=a, b=b, c=c)
    if name == "matmul_bias":
        body = "R.add(R.matmul(x, y), R.strided_slice(y, axes=[0], begin=[0], end=[1]))"
    return relax_main(body, xs, ys)


def lowered_prim_funcs(name: str, sizes) -> IRModule:
    return zero_pipeline_prim_funcs(relax_program(name, *sizes), name)


def _random_args(fn: tir.PrimFunc, seed: int) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for param in fn.params:
        buf = fn.buffer_of(param)
        shape = tuple(int(d.value) for d in buf.shape)
        args.append(rng.standard_normal(shape).astype(buf.dtype))
    return args


def run_three_ways(fn, scheduled_fn, native_fn, seed: int) -> tuple[list, list, list]:
    """The arguments of `fn` (random inputs from `seed`) after running the unscheduled PrimFunc
    in the interpreter, the scheduled one in the interpreter and the scheduled one natively."""
    reference = _random_args(fn, seed)
    run_prim_func(fn, reference)
    interpreted = _random_args(fn, seed)
    run_prim_func(scheduled_fn, interpreted)
    native = _random_args(fn, seed)
    native_fn(*native)
    return reference, interpreted, native


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_scheduled_code_computes_what_the_interpreter_does(name, sizes):
    mod = lowered_prim_funcs(name, sizes)
    for bits in VECTOR_BITS:
        scheduled, _ = schedule_module(mod, CpuScheduleConfig(bits, 0))
        lib = compile_tir(scheduled)
        for fname, fn in mod.functions.items():
            reference, interpreted, native = run_three_ways(fn, scheduled.functions[fname], lib[fname], 0)
            for k, (want, got_i, got_n) in enumerate(zip(reference, interpreted, native)):
                assert _same(want, got_i), f"{fname} argument {k}: interpreted schedule differs ({bits} bits)"
                assert _same(want, got_n), f"{fname} argument {k}: native schedule differs ({bits} bits)"


def test_every_program_gets_parallel_and_vector_loops():
    """The schedule does something on each kind of program (so the test above tests it)."""
    for name in PROGRAMS:
        scheduled, traces = schedule_module(lowered_prim_funcs(name, (13, 64, 32)), CpuScheduleConfig(256, 0))
        text = to_text(scheduled)
        assert "T.parallel(" in text, name
        if name not in ("softmax", "mean_last", "matmul_bias", "max_pool"):  # row reductions, contractions
            assert "T.vectorized(" in text, name
        assert all(traces.values()), name


CHAIN = """@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((256, 1024), dtype="float32"), y: R.Tensor((1024,), dtype="float32")):
        with R.dataflow():
            gv = R.nn.relu(R.multiply(R.exp(R.add(x, y)), x))
            R.output(gv)
        return gv
"""


def test_a_fused_elementwise_chain_writes_no_intermediate_tensor():
    mod = get_pass("zero-pipeline")()(parse(CHAIN, "chain"))
    prims = IRModule({k: f for k, f in mod.functions.items() if isinstance(f, tir.PrimFunc)})
    assert len(prims.functions) == 1
    before = to_text(prims)
    assert before.count("T.sblock_alloc_buffer") == 3
    scheduled, _ = schedule_module(prims, CpuScheduleConfig(256, 0))
    after = to_text(scheduled)
    assert "T.sblock_alloc_buffer" not in after
    assert len(re.findall(r"^ +with T.sblock\(", after, re.M)) == 1
    assert re.search(r"\bmalloc\b", compile_tir(prims).llvm_ir)  # 1 MiB intermediates: on the heap
    ir = compile_tir(scheduled).llvm_ir
    assert not re.search(r"\bmalloc\b", ir) and "alloca float" not in ir


def test_vectorized_loops_become_vector_instructions():
    mod = get_pass("zero-pipeline")()(parse(CHAIN.replace("R.exp(R.add(x, y))", "R.add(x, y)"), "chain"))
    prims = IRModule({k: f for k, f in mod.functions.items() if isinstance(f, tir.PrimFunc)})
    scheduled = get_pass("default-cpu-schedule")(min_parallel_work=0)(prims)
    assert "T.vectorized(" in to_text(scheduled)
    asm = compile_tir(scheduled).assembly()
    register = {512: "zmm", 256: "ymm", 128: "xmm"}[host_vector_bits()]
    packed = re.findall(rf"\bv?(?:add|mul|max)ps\s+.*%{register}" if register != "xmm"
                        else r"\bv?(?:add|mul|max)ps\s+.*%xmm", asm)
    # on AVX-512 hosts zmm: native.target_machine turns LLVM's preference for 256-bit vectors off
    assert packed, "no packed vector arithmetic of the host's width in the scheduled code"


def test_vector_width_comes_from_the_host_features():
    features = host_cpu()[1].split(",")
    expected = 512 if "+avx512f" in features else 256 if "+avx" in features else 128
    assert host_vector_bits() == expected
    mod = lowered_prim_funcs("add_relu", (4, 8192, 1))  # rows longer than a vector loop is left whole
    text = to_text(get_pass("default-cpu-schedule")()(mod))
    assert f"T.vectorized(T.int64({expected // 32}))" in text


def test_small_loop_nests_stay_serial():
    mod = lowered_prim_funcs("add_relu", (4, 8, 1))
    text = to_text(get_pass("default-cpu-schedule")(vector_bits=256)(mod))
    assert "T.parallel" not in text and "T.vectorized(T.int64(8))" in text


def test_scheduling_twice_changes_nothing():
    mod = lowered_prim_funcs("softmax", (5, 33, 1))
    once = get_pass("default-cpu-schedule")(vector_bits=256, min_parallel_work=0)(mod)
    assert '"tirx.is_scheduled": True' in to_text(once)
    twice = get_pass("default-cpu-schedule")(vector_bits=256, min_parallel_work=0)(once)
    assert to_text(twice) == to_text(once)


# ---------------------------------------------------------------------- primitives

TWO_BLOCKS = """@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def f(x: T.Buffer((T.int64(7), T.int64(13)), "float32"), out: T.Buffer((T.int64(7), T.int64(13)), "float32"), s: T.Buffer((T.int64(7),), "float32")):
        t = T.sblock_alloc_buffer((T.int64(7), T.int64(13)))
        for i0, i1 in T.grid(T.int64(7), T.int64(13)):
            with T.sblock("add"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                t[v0, v1] = x[v0, v1] + T.float32(1)
        for i0, i1 in T.grid(T.int64(7), T.int64(13)):
            with T.sblock("relu"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                out[v0, v1] = T.max(t[v0, v1], T.float32(0))
        for i0, k in T.grid(T.int64(7), T.int64(13)):
            with T.sblock("sum"):
                v0, vk = T.axis.remap("SR", [i0, k])
                with T.init():
                    s[v0] = T.float32(0)
                s[v0] = s[v0] + out[v0, vk]
"""


def _schedule() -> Schedule:
    return Schedule(parse(TWO_BLOCKS, "two_blocks").functions["f"], "f")


@pytest.mark.parametrize("action, message", [
    (lambda s: s.compute_inline("relu"), "not an intermediate buffer"),
    (lambda s: s.compute_inline("sum"), "not a spatial block"),
    (lambda s: s.parallel(s.get_loops("sum")[1]), "reduction iterator"),
    (lambda s: s.vectorize(s.get_loops("sum")[1]), "reduction iterator"),
    (lambda s: s.split(s.get_loops("add")[0], [None, None]), "at most one None"),
    (lambda s: s.fuse(s.get_loops("add")[0], s.get_loops("relu")[1]), "not perfectly nested"),
    (lambda s: s.get_loops("nope"), "no block named"),
    (lambda s: s.reverse_compute_inline("sum"), "not a spatial block"),
])
def test_primitives_refuse_what_they_cannot_do(action, message):
    with pytest.raises(ScheduleError, match=message):
        action(_schedule())


def test_split_fuse_inline_print_as_tvm():
    """Checked against TVM 0.27 (the same calls on s_tir.Schedule print this block)."""
    sch = _schedule()
    sch.compute_inline("add")
    fused = sch.fuse(*sch.get_loops("relu"))
    outer, inner = sch.split(fused, [None, 16])
    sch.parallel(outer)
    sch.vectorize(inner)
    text = to_text(IRModule({"f": sch.func}))
    assert """        for i0_i1_fused_0 in T.parallel(T.int64(6)):
            for i0_i1_fused_1 in T.vectorized(T.int64(16)):
                with T.sblock("relu"):
                    v0 = T.axis.spatial(T.int64(7), (i0_i1_fused_0 * T.int64(16) + i0_i1_fused_1) // T.int64(13))
                    v1 = T.axis.spatial(T.int64(13), (i0_i1_fused_0 * T.int64(16) + i0_i1_fused_1) % T.int64(13))
                    T.where(i0_i1_fused_0 * T.int64(16) + i0_i1_fused_1 < T.int64(91))
                    T.reads(x[v0, v1])
                    T.writes(out[v0, v1])
                    out[v0, v1] = T.max(x[v0, v1] + T.float32(1.0), T.float32(0.0))""" in text
    assert "T.sblock_alloc_buffer" not in text
    assert sch.trace[0] == "sch.compute_inline(block=sch.get_sblock('add'))"


def test_reverse_compute_inline_folds_the_consumer_into_the_producer():
    sch = _schedule()
    sch.reverse_compute_inline("relu")
    text = to_text(IRModule({"f": sch.func}))
    assert 'T.sblock("relu")' not in text and "T.sblock_alloc_buffer" not in text
    assert "out[v0, v1] = T.max(x[v0, v1] + T.float32(1.0), T.float32(0.0))" in text
    x = np.random.default_rng(1).standard_normal((7, 13)).astype("float32")
    want = [x.copy(), np.zeros((7, 13), "float32"), np.zeros(7, "float32")]
    run_prim_func(_schedule().func, want)
    got = [x.copy(), np.zeros((7, 13), "float32"), np.zeros(7, "float32")]
    run_prim_func(sch.func, got)
    assert all(_same(a, b) for a, b in zip(want, got))


def test_reorder_moves_the_reduction_outside():
    sch = _schedule()
    i, k = sch.get_loops("sum")
    sch.reorder(k, i)
    assert [v.name for v in sch.get_loops("sum")] == ["k", "i0"]
    assert sch.trace[-1] == "sch.reorder(sch.get_loops(sch.get_sblock('sum'))[1], sch.get_loops(sch.get_sblock('sum'))[0])"


# ---------------------------------------------------------------------- TVM 0.27

_TVM_REPLAY = r'''
import json, sys
import tvm
from tvm import s_tir
for path in sys.argv[1:]:
    traces = json.load(open(path + ".trace.json"))
    try:
        mod = tvm.script.from_source(open(path).read())
        open(path + ".input.tvm", "w").write(mod.script())
        for name, lines in traces.items():
            sch = s_tir.Schedule(mod[name])
            exec("\n".join(lines), {"sch": sch})
            mod[name] = sch.mod["main"].with_attr("tirx.is_scheduled", True)
        out = mod.script()
    except Exception as err:  # reported by the test
        out = "ERROR: " + repr(err)
    open(path + ".tvm", "w").write(out)
'''


def _lit_prim_funcs() -> list[IRModule]:
    """Each PrimFunc the Relax lit cases lower to (through the zero pipeline), once."""
    import glob

    root = os.path.join(os.path.dirname(__file__), "..", "lit_tests", "relax")
    seen: dict[str, IRModule] = {}
    for path in sorted(glob.glob(os.path.join(root, "*.ir"))):
        for chunk in open(path).read().split("# -----"):
            try:
                mod = parse(chunk, path)
                if any(not isinstance(f, tir.PrimFunc) for f in mod.functions.values()):
                    mod = get_pass("zero-pipeline")()(mod)
            except Exception:  # error cases of the lit files
                continue
            for name, fn in mod.functions.items():
                if isinstance(fn, tir.PrimFunc):
                    single = IRModule({name: fn})
                    seen.setdefault(to_text(single), single)
    return list(seen.values())


@pytest.mark.tvm
def test_traces_replayed_by_tvm_print_the_same(tvm_python, tmp_path):
    modules = _lit_prim_funcs()
    modules += [lowered_prim_funcs(name, sizes) for name in sorted(PROGRAMS) for sizes in SIZES[1:]]
    assert len(modules) > 80
    runner = tmp_path / "replay.py"
    runner.write_text(_TVM_REPLAY)
    cases = []
    for k, mod in enumerate(modules):
        for bits in (256, 512):
            path = tmp_path / f"case{k}_{bits}.py"
            path.write_text(to_text(mod))
            ours, traces = schedule_module(mod, CpuScheduleConfig(bits, 0))
            if any(line.startswith("#") for trace in traces.values() for line in trace):
                continue  # a contraction tile: built directly, not by TVM's primitives
            (tmp_path / f"case{k}_{bits}.py.trace.json").write_text(json.dumps(traces))
            cases.append((path, to_text(ours)))
    proc = subprocess.run([tvm_python, str(runner), *(str(p) for p, _ in cases)], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    different = [p.name for p, ours in cases if _comparable(p) and open(f"{p}.tvm").read().rstrip("\n") != ours.rstrip("\n")]
    assert not different, f"{len(different)} of {len(cases)} differ from TVM, e.g. {different[:5]}"
    assert sum(_comparable(p) for p, _ in cases) >= 0.9 * len(cases), "TVM prints most inputs as we do"


def _comparable(path) -> bool:
    """TVM prints the unscheduled input as we do: else a difference is its printer's, not the
    schedule's (a nested block's domain `(v, v + (1 - v))`, which TVM prints re-derived)."""
    return not os.path.exists(f"{path}.input.tvm") or \
        open(f"{path}.input.tvm").read().rstrip("\n") == open(path).read().rstrip("\n")


# ---------------------------------------------------------------------- codegen edits this pass needs

INT64_PARALLEL = """@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((T.int64(37),), "float32"), B: T.Buffer((T.int64(37),), "float32")):
        for i_0 in T.parallel(T.int64(5)):
            for i_1 in T.vectorized(T.int64(8)):
                with T.sblock("b"):
                    vi = T.axis.spatial(T.int64(37), i_0 * T.int64(8) + i_1)
                    T.where(i_0 * T.int64(8) + i_1 < T.int64(37))
                    B[vi] = A[vi] * T.float32(2)
"""


def test_int64_parallel_loops_and_vectorize_hints_compile():
    """llvm_codegen: an int64 parallel loop variable is bound in its task (it was left
    undefined), and a vectorized loop is not fully unrolled before LLVM vectorises it."""
    lib = compile_tir(parse(INT64_PARALLEL, "int64_parallel"))
    a = np.arange(37, dtype="float32")
    b = np.zeros(37, "float32")
    lib["main"](a, b)
    assert np.array_equal(b, a * 2)
    assert "llvm.loop.unroll.disable" in lib.llvm_ir and "llvm.loop.vectorize.enable" in lib.llvm_ir
