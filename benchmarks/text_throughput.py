"""Relay text throughput: parse, print, parse+print in ops/s, and irtool-opt start-up;
with `--tvmscript`, TVMScript throughput of the whole process (see `tvmscript_throughput`).

    .venv/bin/python benchmarks/text_throughput.py [--sizes 1000,10000,100000] [--repeat 3]
    .venv/bin/python benchmarks/text_throughput.py --tvmscript [--bindings 5000] [--repeat 3]

Three module shapes per size:
  atomic   only `%n = op(%a, %b);` lines (the one-token fast path: the best case)
  mixed    what TVM prints for a real network: mostly `%n = op(%a, %b);`, one call in five
           with a literal or attributes (`multiply(%3, 0.5f)`, `nn.conv2d(..., padding=[...])`)
  general  every call has an attribute or literal, so the one-token fast paths for
           operator calls on variables never apply (the worst case for the parser)
Figures are the best of `--repeat` runs. Anchors measured on this machine for other tools
(from the issue tracker, not re-measured here): xdsl-opt 7.4k ops/s parse+verify+print and
167 ms start-up; mlir-opt 308k ops/s and 19 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ANCHORS = {"xdsl-opt": (7.4e3, 0.167), "mlir-opt": (308e3, 0.019)}


def make_module(n_ops: int, shape: str) -> str:
    lines = ['#[version = "0.0.5"]',
             "def @main(%x: Tensor[(1, 64, 56, 56), float32], %w: Tensor[(64, 64, 3, 3), float32]) "
             "-> Tensor[(1, 64, 56, 56), float32] {",
             "  %0 = add(%x, %x);"]
    binary = ("add", "multiply", "subtract", "maximum")
    for i in range(1, n_ops):
        a, b = f"%{i - 1}", (f"%{i - 2}" if i >= 2 else "%x")
        general = shape == "general" or (shape == "mixed" and i % 5 == 0)
        if not general:
            line = f"nn.relu({a})" if i % 3 == 0 else f"{binary[i % 4]}({a}, {b})"
        elif i % 10 == 0:
            line = f"nn.conv2d({a}, %w, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])"
        elif i % 2:
            line = f"multiply({a}, 0.5f)"
        else:
            line = f"nn.leaky_relu({a}, alpha=0.1f)"
        lines.append(f"  %{i} = {line};" if i < n_ops - 1 else f"  {line}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def throughput(sizes, repeat: int) -> None:
    import irtool

    irtool.parse("def @warm_up(%x) { %x }")
    print(f"{'ops':>8} {'shape':>8} {'parse ops/s':>12} {'print ops/s':>12} {'parse+print':>12}")
    for n in sizes:
        for shape in ("atomic", "mixed", "general"):
            text = make_module(n, shape)
            mod = irtool.parse(text, "bench.ir")
            assert irtool.to_text(mod) == text, "the benchmark module must print back identically"
            t_parse = best_of(repeat, lambda text=text: irtool.parse(text, "bench.ir"))
            t_print = best_of(repeat, lambda mod=mod: irtool.to_text(mod))
            t_both = best_of(repeat, lambda text=text: irtool.to_text(irtool.parse(text, "bench.ir")))
            print(f"{n:>8} {shape:>8} {n / t_parse:>12,.0f} {n / t_print:>12,.0f} {n / t_both:>12,.0f}")


def startup(repeat: int) -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "irtool-opt")
    with tempfile.NamedTemporaryFile("w", suffix=".ir", delete=False) as f:
        f.write('def @main(%x: Tensor[(1), float32]) {\n  %x\n}\n')
        path = f.name
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def wall(cmd) -> float:
        runs = []
        for _ in range(max(repeat, 5) * 2):
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
            runs.append(time.perf_counter() - start)
        return statistics.median(runs)

    try:
        wall([exe, path])  # warm the parser cache and the bytecode
        python = wall([sys.executable, "-c", "pass"])
        opt = wall([exe, path])
    finally:
        os.unlink(path)
    print(f"\nstart-up (median): irtool-opt on a trivial file {opt * 1e3:.0f} ms "
          f"(bare `python -c pass`: {python * 1e3:.0f} ms)")


# ----------------------------------------------------------------------------- TVMScript

TVMSCRIPT_GOAL = 10_000  # bindings/s, issue 11 §4
TVM_PYTHON = os.environ.get("IRTOOL_TVM_PYTHON", "/work/tvm-venv/bin/python")


def make_relax_module(n_bindings: int) -> str:
    """A Relax function of `n_bindings` bindings in one dataflow block, printed as TVM 0.27
    prints an imported CNN: every binding annotated with its struct info, convolutions with
    all their attributes, bias adds and residual adds, and now and then a reshape /
    permute_dims / matmul / permute_dims / reshape detour (a 1x1 "linear" over channels)."""
    def ty(shape) -> str:
        return f'R.Tensor(({", ".join(map(str, shape))}), dtype="float32")'

    act, flat, trans = (1, 64, 56, 56), (1, 64, 3136), (1, 3136, 64)
    conv = ("strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout=\"NCHW\", "
            "kernel_layout=\"OIHW\", out_layout=\"NCHW\", out_dtype=None")
    # one period of the chain: (result shape, value) with {p} the previous result, {r} the residual
    period = [
        (act, "R.nn.conv2d({p}, w1, " + conv + ")"),
        (act, "R.add({p}, b1)"),
        (act, "R.nn.relu({p})"),
        (act, "R.nn.conv2d({p}, w2, " + conv + ")"),
        (act, "R.add({p}, {r})"),
        (act, "R.nn.relu({p})"),
        (flat, "R.reshape({p}, R.shape([1, 64, 3136]))"),
        (trans, "R.permute_dims({p}, axes=[0, 2, 1])"),
        (trans, "R.matmul({p}, fc, out_dtype=None)"),
        (flat, "R.permute_dims({p}, axes=[0, 2, 1])"),
        (act, "R.reshape({p}, R.shape([1, 64, 56, 56]))"),
    ]
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function",
             f"    def main(x: {ty(act)}, w1: {ty((64, 64, 3, 3))}, w2: {ty((64, 64, 3, 3))}, "
             f"b1: {ty((1, 64, 1, 1))}, fc: {ty((64, 64))}) -> {ty(act)}:",
             "        with R.dataflow():"]
    prev, prev_shape, residual = "x", act, "x"
    for i in range(n_bindings):
        shape, value = period[i % len(period)]
        if i == n_bindings - 1:  # the result has the input's shape
            shape, value = act, "R.nn.relu({p})" if prev_shape == act else period[-1][1]
        name = "gv" if i == n_bindings - 1 else ("lv" if i == 0 else f"lv{i}")
        lines.append(f"            {name}: {ty(shape)} = {value.format(p=prev, r=residual)}")
        if i % len(period) == 2:
            residual = name
        prev, prev_shape = name, shape
    lines += ["            R.output(gv)", "        return gv"]
    return "\n".join(lines) + "\n"


def _timed(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system) of the command's process. On a
    shared, loaded machine the CPU time is the steadier figure: the wall time then counts
    the time the process waited for a core."""
    import resource

    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(walls), min(cpus)


_TVM_PARSE = """import sys, time
import tvm
from tvm.script import from_source
text = open(sys.argv[1]).read()
best = [1e9] * 4  # parse wall, parse + print wall, parse CPU, parse + print CPU
for _ in range(int(sys.argv[2])):
    start, start_cpu = time.perf_counter(), time.process_time()
    mod = from_source(text)
    middle, middle_cpu = time.perf_counter(), time.process_time()
    mod.script()
    end, end_cpu = time.perf_counter(), time.process_time()
    run = (middle - start, end - start, middle_cpu - start_cpu, end_cpu - start_cpu)
    best = [min(b, r) for b, r in zip(best, run)]
print(*best)
"""


def tvmscript_throughput(n_bindings: int, repeat: int) -> None:
    """Whole-process TVMScript throughput: `irtool-opt in.py -o out.py` on a Relax function
    of `n_bindings` bindings, in bindings/s (start-up included), best of `repeat` runs; and,
    when TVM 0.27 is installed, its parse + print (`tvm.script.from_source`, `.script()`) of
    the same text timed inside one warm process (its start-up is not counted: that favours
    TVM, whose import takes seconds)."""
    exe = os.path.join(os.path.dirname(sys.executable), "irtool-opt")
    text = make_relax_module(n_bindings)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.py"), os.path.join(tmp, "out.py")
        with open(src, "w") as f:
            f.write(text)
        subprocess.run([exe, src, "-o", out], check=True)  # warm the grammar cache and bytecode
        with open(out) as f:
            assert f.read() == text, "the benchmark module must print back identically"
        ours, cpu = _timed([exe, src, "-o", out], repeat)
        for what, t in (("wall", ours), ("CPU", cpu)):
            rate = n_bindings / t
            print(f"TVMScript, {n_bindings} bindings: irtool-opt in.py -o out.py {t:.2f} s {what}, "
                  f"{rate:,.0f} bindings/s ({rate / TVMSCRIPT_GOAL:.2f}x the goal of {TVMSCRIPT_GOAL:,})")
        if os.path.exists(TVM_PYTHON):
            result = subprocess.run([TVM_PYTHON, "-c", _TVM_PARSE, src, str(repeat)],
                                    check=True, capture_output=True, text=True)
            parse, both, parse_cpu, both_cpu = map(float, result.stdout.split()[-4:])
            for what, theirs, mine in (("from_source (parse only), wall", parse, ours),
                                       ("from_source + script(), wall", both, ours),
                                       ("from_source (parse only), CPU", parse_cpu, cpu),
                                       ("from_source + script(), CPU", both_cpu, cpu)):
                print(f"TVM 0.27 {what}, in a warm process: {theirs:.2f} s, {n_bindings / theirs:,.0f} "
                      f"bindings/s; irtool-opt (whole process) is {theirs / mine:.1f}x as fast")
        else:
            print(f"(TVM not found at {TVM_PYTHON}: set IRTOOL_TVM_PYTHON to compare)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tvmscript", action="store_true",
                        help="measure TVMScript instead: irtool-opt on a Relax function of --bindings bindings")
    parser.add_argument("--bindings", type=int, default=5000)
    args = parser.parse_args()
    if args.tvmscript:
        tvmscript_throughput(args.bindings, args.repeat)
        return
    throughput([int(s) for s in args.sizes.split(",")], args.repeat)
    startup(args.repeat)
    print("\nanchors on this machine: " + "; ".join(
        f"{name} {ops / 1e3:.1f}k ops/s, {t * 1e3:.0f} ms start-up" for name, (ops, t) in ANCHORS.items()))


if __name__ == "__main__":
    main()
