"""Relay text throughput: parse, print, parse+print in ops/s, and irtool-opt start-up.

    .venv/bin/python benchmarks/text_throughput.py [--sizes 1000,10000,100000] [--repeat 3]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    throughput([int(s) for s in args.sizes.split(",")], args.repeat)
    startup(args.repeat)
    print("\nanchors on this machine: " + "; ".join(
        f"{name} {ops / 1e3:.1f}k ops/s, {t * 1e3:.0f} ms start-up" for name, (ops, t) in ANCHORS.items()))


if __name__ == "__main__":
    main()
