"""Text front-end speed, whole process: `irtool-opt in.ir -o out.ir` timed from outside (wall clock).

    .venv/bin/python benchmarks/text_throughput.py [--bindings 100000] [--repeat 3]
                     [--relay] [--startup] [--tvmscript] [--profile]

Sections (all three when none is named):
  --relay      100k graph bindings shaped like an imported CNN printed with `--print-types`:
               half the lines carry a `/* ty=... */` comment, most calls have attributes
               (`nn.conv2d(..., padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])`,
               `nn.batch_norm(...)` then `%n.0`, `clip(..., a_min=0f, a_max=6f)`,
               `reshape(..., newshape=[...])`). irtool-opt without passes parses, infers
               types, verifies and prints: all of it is in the figure (start-up included).
  --startup    irtool-opt on a trivial file, beside bare `python -c pass`.
  --tvmscript  a 5,000-binding Relax function in TVMScript through irtool-opt.

Figures are the best of `--repeat` runs (start-up: the median of many), in the same run as
bare Python, so the ratios are comparable under load. The anchors are the issue's figures for
other tools on this machine (not re-measured here): xdsl-opt 7.4k ops/s and 167 ms
start-up; mlir-opt 308k ops/s and 19 ms. Goals (issue 11): Relay >= 50,000 bindings/s,
TVMScript >= 10,000 bindings/s, start-up <= 80 ms.
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
GOALS = {"relay": 50_000, "tvmscript": 10_000, "startup": 0.080}

_OPT = os.path.join(os.path.dirname(sys.executable), "irtool-opt")
# bytecode caches must be usable, as they are for an installed tool
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

_ACT = "Tensor[(1, 64, 56, 56), float32]"
_VEC = "Tensor[(64), float32]"


def relay_cnn_module(n_bindings: int) -> str:
    """A chain of conv/batch-norm/clip/add/reshape layers as TVM prints an imported CNN
    (`irtool-import --print-types` on tests/data/onnx/*.onnx prints the same shapes)."""
    params = ", ".join([f"%data: {_ACT}", "%weight: Tensor[(64, 64, 3, 3), float32]",
                        *(f"%bn_{p}: {_VEC}" for p in ("gamma", "beta", "mean", "var"))])
    lines = ['#[version = "0.0.5"]', f"def @main({params}) {{"]
    bn_type = f"({_ACT}, {_VEC}, {_VEC})"
    prev, residual = "%data", "%data"
    i = 0
    while i < n_bindings:
        layer = [  # (text, type or None): five of ten lines typed, seven of ten with attributes
            (f"nn.conv2d({prev}, %weight, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])", _ACT),
            ("nn.batch_norm(%{0}, %bn_gamma, %bn_beta, %bn_mean, %bn_var, epsilon=1e-05f)", bn_type),
            ("%{0}.0", _ACT),
            ("clip(%{0}, a_min=0f, a_max=6f)", None),
            ("nn.conv2d(%{0}, %weight, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])", None),
            ("nn.batch_norm(%{0}, %bn_gamma, %bn_beta, %bn_mean, %bn_var, epsilon=1e-05f).0", _ACT),
            (f"add(%{{0}}, {residual})", None),
            ("nn.relu(%{0})", _ACT),
            ("reshape(%{0}, newshape=[1, 64, 3136])", None),
            ("reshape(%{0}, newshape=[1, 64, 56, 56])", "last"),
        ]
        for text, ty in layer:
            if i == n_bindings:
                break
            text = text.format(i - 1)
            comment = f" /* ty={_ACT if ty == 'last' else ty} */" if ty else ""
            lines.append(f"  %{i} = {text}{comment};")
            i += 1
        prev = residual = f"%{i - 1}"
    lines.append(f"  {prev}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def tvmscript_relax_module(n_bindings: int) -> str:
    """The TVMScript row: a Relax function of `n_bindings` bindings (kept in its own function
    so that work on the TVMScript parser can change it without touching the Relay row)."""
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function",
             '    def main(x: R.Tensor((1, 64), dtype="float32"), w: R.Tensor((64, 64), dtype="float32")) '
             '-> R.Tensor((1, 64), dtype="float32"):', "        with R.dataflow():"]
    prev = "x"
    ops = ("R.add({0}, x)", "R.matmul({0}, w)", "R.nn.relu({0})", "R.multiply({0}, {0})")
    for i in range(n_bindings):
        lines.append(f'            lv{i}: R.Tensor((1, 64), dtype="float32") = {ops[i % 4].format(prev)}')
        prev = f"lv{i}"
    lines += [f"            gv: R.Tensor((1, 64), dtype=\"float32\") = {prev}", "            R.output(gv)",
              "        return gv"]
    return "\n".join(lines) + "\n"


def run_opt(path: str, out: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one `irtool-opt path -o out`. The CPU time (user + system, from
    the child's rusage) is what the machine's other load does not inflate much."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([_OPT, path, "-o", out], env=_ENV, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"irtool-opt failed on {path}:\n{err.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def whole_process(text: str, repeat: int, suffix: str = ".ir") -> tuple[float, float]:
    """Best wall and best CPU time of `irtool-opt in -o out` over `repeat` runs."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out = os.path.join(tmp, "in" + suffix), os.path.join(tmp, "out" + suffix)
        with open(path, "w") as f:
            f.write(text)
        run_opt(path, out)  # warm the bytecode and the parser cache
        # the output parses back (its text is the printer's: types are not shown by default)
        run_opt(out, os.path.join(tmp, "again" + suffix))
        runs = [run_opt(path, out) for _ in range(repeat)]
        return min(w for w, _ in runs), min(c for _, c in runs)


def anchor_ratios(rate: float) -> str:
    return ", ".join(f"{rate / ops:.2f}× {name}" for name, (ops, _) in ANCHORS.items())


def _report(what: str, n: int, wall: float, cpu: float, goal: int) -> float:
    rate = n / wall
    print(f"{what}: {wall:.2f} s wall, {rate:,.0f} bindings/s (goal {goal:,}; {anchor_ratios(rate)}); "
          f"CPU {cpu:.2f} s, {n / cpu:,.0f} bindings/s")
    return rate


def bench_relay(n: int, repeat: int) -> float:
    text = relay_cnn_module(n)
    wall, cpu = whole_process(text, repeat)
    return _report(f"Relay, {n:,} CNN bindings ({len(text) / 1e6:.1f} MB)", n, wall, cpu, GOALS["relay"])


def bench_tvmscript(n: int, repeat: int) -> float:
    text = tvmscript_relax_module(n)
    wall, cpu = whole_process(text, repeat, ".py")
    return _report(f"TVMScript, a {n:,}-binding Relax function", n, wall, cpu, GOALS["tvmscript"])


def _timed(cmd) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `cmd`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=_ENV, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed")
    return wall, usage.ru_utime + usage.ru_stime


def bench_startup(repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path, out = os.path.join(tmp, "trivial.ir"), os.path.join(tmp, "out.ir")
        with open(path, "w") as f:
            f.write("def @main(%x: Tensor[(1), float32]) {\n  %x\n}\n")

        def medians(cmd) -> tuple[float, float]:
            runs = [_timed(cmd) for _ in range(max(repeat, 5) * 3)]
            return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)

        medians([_OPT, path, "-o", out])  # warm
        python, python_cpu = medians([sys.executable, "-c", "pass"])
        opt, opt_cpu = medians([_OPT, path, "-o", out])
    print(f"start-up, irtool-opt on a trivial file: {opt * 1e3:.0f} ms wall, "
          f"bare `python -c pass` {python * 1e3:.0f} ms "
          f"(+{(opt - python) * 1e3:.0f} ms; goal {GOALS['startup'] * 1e3:.0f} ms; "
          + ", ".join(f"{opt / t:.1f}× {name}'s {t * 1e3:.0f} ms" for name, (_, t) in ANCHORS.items())
          + f"); CPU {opt_cpu * 1e3:.0f} ms, bare Python {python_cpu * 1e3:.0f} ms")
    return opt


def profile_relay(n: int) -> None:
    """cProfile of the in-process work irtool-opt does (parse, infer, verify, print)."""
    import cProfile
    import pstats

    from irtool.cli.opt import run

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.ir")
        with open(path, "w") as f:
            f.write(relay_cnn_module(n))
        cProfile.runctx("run(argv)", {"run": run, "argv": [path, "-o", os.path.join(tmp, "out.ir")]}, {},
                        os.path.join(tmp, "prof"))
        pstats.Stats(os.path.join(tmp, "prof")).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bindings", type=int, default=100_000, help="Relay bindings (default 100,000)")
    parser.add_argument("--tvmscript-bindings", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--relay", action="store_true")
    parser.add_argument("--startup", action="store_true")
    parser.add_argument("--tvmscript", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the Relay row in-process instead")
    args = parser.parse_args()
    if args.profile:
        profile_relay(args.bindings)
        return
    every = not (args.relay or args.startup or args.tvmscript)
    if every or args.relay:
        bench_relay(args.bindings, args.repeat)
    if every or args.tvmscript:
        bench_tvmscript(args.tvmscript_bindings, args.repeat)
    if every or args.startup:
        bench_startup(args.repeat)
    print("anchors (issue 11, this machine): " + "; ".join(
        f"{name} {ops / 1e3:.1f}k ops/s, {t * 1e3:.0f} ms start-up" for name, (ops, t) in ANCHORS.items()))


if __name__ == "__main__":
    main()
