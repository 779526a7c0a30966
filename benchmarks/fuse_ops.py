"""fuse-ops speed: elementwise chains of 2,000 and 100,000 ops and random DAGs.

    python benchmarks/fuse_ops.py [--repeat 3] [--tvm-python PATH]

For each program it reports the best of `--repeat` runs of
  fuse      the pass itself on a typed function (graph, partition, rewrite);
  pipeline  irtool-opt end to end in process: parse, verify, infer-type, fuse-ops,
            verify, print.
With `--tvm-python` (a Python that has TVM 0.27 installed, e.g. a separate venv), the
same chain is built as a Relax dataflow block and TVM's C++ `relax.transform.FuseOps`
(after `AnnotateTIROpPattern` on the legalized module) is timed in that process, and
the ratio printed. Without it, the anchor measured on this machine is quoted: TVM
0.27's FuseOps takes 71-86 ms on the 2,000-op chain.
"""

from __future__ import annotations

import argparse
import io
import json
import pathlib
import random
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from irtool.analysis.type_infer import infer_types  # noqa: E402
from irtool.cli.opt import run as irtool_opt  # noqa: E402
from irtool.ir.expr import Call  # noqa: E402
from irtool.ir.visitor import post_order  # noqa: E402
from irtool.text import parse  # noqa: E402
from passes.fuse_ops import fuse_function  # noqa: E402

UNARY = ("exp", "negative", "sigmoid", "tanh")
TVM_ANCHOR_MS = (71, 86)


def chain_text(n: int) -> str:
    lines = ["def @main(%x: Tensor[(16, 16), float32]) {"]
    prev = "%x"
    for i in range(n - 1):
        lines.append(f"  %{i} = {UNARY[i % 4]}({prev});")
        prev = f"%{i}"
    lines += [f"  exp({prev})", "}"]
    return "\n".join(lines) + "\n"


def dag_text(n: int, seed: int = 0) -> str:
    """Random DAG over (16, 16) tensors: unary and binary elementwise ops, reductions
    broadcast back, transposes, dense and softmax anchors, split/concatenate pairs."""
    rng = random.Random(seed)
    lines = ["def @main(%x: Tensor[(16, 16), float32], %w: Tensor[(16, 16), float32]) {"]
    names = ["%x"]
    k = 0

    def emit(expr: str) -> str:
        nonlocal k
        lines.append(f"  %{k} = {expr};")
        k += 1
        return f"%{k - 1}"

    def pick() -> str:  # mostly recent values, so chains form as well as long edges
        return names[max(0, len(names) - 1 - int(rng.expovariate(0.3)))]

    while k < n:
        r = rng.random()
        if r < 0.4:
            names.append(emit(f"{rng.choice(UNARY)}({pick()})"))
        elif r < 0.7:
            names.append(emit(f"{rng.choice(('add', 'multiply', 'subtract'))}({pick()}, {pick()})"))
        elif r < 0.78:
            s = emit(f"sum({pick()}, axis=[1], keepdims=True)")
            names.append(emit(f"add({pick()}, {s})"))
        elif r < 0.85:
            names.append(emit(f"transpose({pick()}, axes=[1, 0])"))
        elif r < 0.9:
            names.append(emit(f"nn.dense({pick()}, %w, units=None)"))
        elif r < 0.93:
            names.append(emit(f"nn.softmax({pick()})"))
        else:
            t = emit(f"({pick()}, {pick()})")
            c = emit(f"concatenate({t}, axis=1)")
            s = emit(f"split({c}, indices_or_sections=2, axis=1)")
            names.append(emit(f"{s}.{rng.randint(0, 1)}"))
    lines += [f"  {names[-1]}", "}"]
    return "\n".join(lines) + "\n"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(name: str, text: str, repeat: int) -> dict:
    mod = infer_types(parse(text))
    ops = sum(1 for node in post_order(mod["main"]) if type(node) is Call)
    fuse = best(lambda: fuse_function(mod["main"], 2), repeat)

    def pipeline():
        out = io.StringIO()
        code = irtool_opt(["-p", "fuse-ops"], stdin=io.StringIO(text), stdout=out, stderr=io.StringIO())
        assert code == 0

    full = best(pipeline, repeat)
    return {"program": name, "ops": ops, "fuse_ms": fuse * 1e3, "pipeline_ms": full * 1e3,
            "fuse_kops_per_s": ops / fuse / 1e3}


TVM_SCRIPT = r"""
import json, sys, time
import tvm
from tvm import relax
n, repeat = int(sys.argv[1]), int(sys.argv[2])
bb = relax.BlockBuilder()
sinfo = getattr(relax, "TensorStructInfo", None) or relax.TensorType  # renamed in 0.27
x = relax.Var("x", sinfo((16, 16), "float32"))
ops = [relax.op.exp, relax.op.negative, relax.op.sigmoid, relax.op.tanh]
with bb.function("main", [x]):
    with bb.dataflow():
        v = x
        for i in range(n):
            v = bb.emit(ops[i % 4](v) if i < n - 1 else relax.op.exp(v))
        out = bb.emit_output(v)
    bb.emit_func_output(out)
mod = relax.transform.LegalizeOps()(bb.get())
mod = relax.transform.AnnotateTIROpPattern()(mod)
times = []
for _ in range(repeat):
    t = time.perf_counter()
    relax.transform.FuseOps()(mod)
    times.append(time.perf_counter() - t)
print(json.dumps({"tvm_fuse_ms": min(times) * 1e3}))
"""


def tvm_time(python: str, n: int, repeat: int) -> float | None:
    try:
        out = subprocess.run([python, "-c", TVM_SCRIPT, str(n), str(repeat)], capture_output=True, text=True,
                             timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as err:
        print(f"  (TVM run failed: {err})")
        return None
    if out.returncode:
        print(f"  (TVM run failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])["tvm_fuse_ms"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tvm-python", help="a Python interpreter with TVM 0.27 installed")
    ap.add_argument("--quick", action="store_true", help="skip the 100,000-op programs")
    args = ap.parse_args()
    sys.setrecursionlimit(10000)
    programs = [("chain", 2000, chain_text(2000)), ("dag", 2000, dag_text(2000))]
    if not args.quick:
        programs += [("chain", 100000, chain_text(100000)), ("dag", 100000, dag_text(100000))]
    print(f"{'program':>8} {'ops':>8} {'fuse ms':>9} {'kops/s':>8} {'pipeline ms':>12}  vs TVM 0.27 FuseOps")
    for name, n, text in programs:
        r = measure(name, text, args.repeat if n <= 2000 else 1)
        line = f"{name:>8} {r['ops']:>8} {r['fuse_ms']:>9.1f} {r['fuse_kops_per_s']:>8.1f} {r['pipeline_ms']:>12.1f}"
        if name == "chain" and n == 2000:
            tvm = tvm_time(args.tvm_python, n, args.repeat) if args.tvm_python else None
            if tvm is not None:
                line += f"  TVM {tvm:.1f} ms, ratio {r['fuse_ms'] / tvm:.2f}x"
            else:
                line += f"  anchor {TVM_ANCHOR_MS[0]}-{TVM_ANCHOR_MS[1]} ms, ratio " \
                        f"{r['fuse_ms'] / TVM_ANCHOR_MS[1]:.2f}-{r['fuse_ms'] / TVM_ANCHOR_MS[0]:.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
