"""zero-pipeline speed on a 2,000-op Relax module, against TVM 0.27's C++ passes.

    python benchmarks/zero_pipeline.py [--ops 2000] [--repeat 3] [--tvm-python PATH] [--profile N]

The module is what an ONNX import of a deep CNN + MLP gives TVM: a conv trunk (conv2d
with constant weights, the bias reshaped and added, relu, a residual add every other
block), global average pooling, then an MLP (matmul, bias, relu, a layer_norm every
fourth layer) and a softmax; every weight a constant in the metadata section. It is
printed once (TVMScript with metadata); both sides parse that text, and only the
pipeline call is timed (best of `--repeat`): ours in process (`zero-pipeline`), TVM's
`relax.get_pipeline("zero")` in the TVM Python given by `--tvm-python` (default
$IRTOOL_TVM_PYTHON). The issue's bar: ours takes no longer than TVM's; the ratio is
printed. `--profile N` prints the N most expensive functions of one run of ours
(cProfile, by cumulative and by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pathlib
import pstats
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from irtool.ir import relax as rx  # noqa: E402
from irtool.ir.module import IRModule  # noqa: E402
from irtool.ir.relax_visitor import ExprMutator  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402
from irtool.transform import PassContext, get_pass  # noqa: E402

CHANNELS, SIZE, HIDDEN = 8, 8, 32


def _tensor(shape) -> str:
    return f'R.Tensor(({", ".join(map(str, shape))}{"," if len(shape) == 1 else ""}), dtype="float32")'


def model_text(ops: int) -> tuple[str, dict[str, tuple]]:
    """The module with its weights as parameters (bound to constants by `with_constants`):
    about `ops` Relax operator calls, three fifths conv trunk, the rest MLP."""
    weights: dict[str, tuple] = {}
    lines: list[str] = []
    count = 0

    def weight(shape) -> str:
        name = f"w{len(weights)}"
        weights[name] = shape
        return name

    def emit(expr: str) -> str:
        nonlocal count
        count += 1
        name = f"lv{count}"
        lines.append(f"            {name} = {expr}")
        return name

    c, s = CHANNELS, SIZE
    h, skip, block = "x", "x", 0
    while count < ops * 3 // 5:
        conv = emit(f"R.nn.conv2d({h}, {weight((c, c, 3, 3))}, padding=[1, 1, 1, 1])")
        bias = emit(f"R.reshape({weight((c,))}, R.shape([1, {c}, 1, 1]))")
        h = emit(f"R.add({conv}, {bias})")
        if block % 2 == 1:
            h = emit(f"R.add({h}, {skip})")
            skip = h
        h = emit(f"R.nn.relu({h})")
        block += 1
    h = emit(f"R.mean({h}, axis=[2, 3], keepdims=False)")
    width, layer = c, 0
    while count < ops - 1:
        m = emit(f"R.matmul({h}, {weight((width, HIDDEN))})")
        h = emit(f"R.add({m}, {weight((HIDDEN,))})")
        width = HIDDEN
        h = emit(f"R.nn.relu({h})")
        if layer % 4 == 3:
            h = emit(f"R.nn.layer_norm({h}, {weight((HIDDEN,))}, {weight((HIDDEN,))}, axes=[-1])")
        layer += 1
    out = emit(f"R.nn.softmax({h}, axis=-1)")
    params = [f"x: {_tensor((1, c, s, s))}"] + [f"{n}: {_tensor(shape)}" for n, shape in weights.items()]
    text = ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
            "    @R.function\n"
            f"    def main({', '.join(params)}):\n"
            '        R.func_attr({"num_input": 1})\n'
            "        with R.dataflow():\n" + "\n".join(lines) + "\n"
            f"            R.output({out})\n        return {out}\n")
    return text, weights


class _BindParams(ExprMutator):
    """TVM's BindParams: the weight parameters' uses become constants."""

    def __init__(self, constants: dict) -> None:
        super().__init__()
        self.var_remap.update(constants)


def with_constants(text: str, seed: int = 0) -> IRModule:
    mod = parse(text, "model")
    fn = mod["main"]
    rng = np.random.default_rng(seed)
    constants = {}
    for p in fn.params[1:]:
        shape = p.struct_info.shape
        scale = 1.0 / np.sqrt(max(1, int(np.prod(shape[1:])))) if len(shape) > 1 else 0.1
        constants[p] = rx.Constant((rng.standard_normal(shape) * scale).astype(np.float32))
    body = _BindParams(constants).visit_expr(fn.body)
    return IRModule({"main": rx.Function(fn.params[:1], body, fn.ret_struct_info, fn.is_pure, fn.attrs)})


def count_ops(mod: IRModule) -> int:
    return sum(isinstance(b.value, rx.Call) for block in mod["main"].body.blocks for b in block.bindings)


def run_ours(mod: IRModule) -> IRModule:
    with PassContext():
        return get_pass("zero-pipeline")()(mod)


_TVM_TIMER = r'''
import sys, time, tvm
from tvm import relax
text = open(sys.argv[1]).read()
repeat = int(sys.argv[2])
mod = tvm.script.from_source(text)
best = float("inf")
for _ in range(repeat):
    start = time.perf_counter()
    out = relax.get_pipeline("zero")(mod)
    best = min(best, time.perf_counter() - start)
open(sys.argv[1] + ".tvm.py", "w").write(out.script())
print(best)
'''


def time_tvm(tvm_python: str, path: str, repeat: int) -> float:
    runner = path + ".runner.py"
    pathlib.Path(runner).write_text(_TVM_TIMER)
    proc = subprocess.run([tvm_python, runner, path, str(repeat)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"TVM failed:\n{proc.stderr[-2000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tvm-python", default=os.environ.get("IRTOOL_TVM_PYTHON", ""))
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N most expensive functions")
    ap.add_argument("--keep", default=None, help="write the module and both results into this directory")
    args = ap.parse_args(argv)

    text, _ = model_text(args.ops)
    mod = with_constants(text)
    printed = to_text(mod)
    workdir = args.keep or tempfile.mkdtemp(prefix="zero_pipeline_bench_")
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "model.py")
    pathlib.Path(path).write_text(printed)
    mod = parse(printed, path)  # both sides start from the printed text
    print(f"module: {count_ops(mod)} Relax operator calls, {len(printed) / 1e6:.1f} MB of TVMScript")

    best, out = float("inf"), None
    for _ in range(args.repeat):
        start = time.perf_counter()
        out = run_ours(mod)
        best = min(best, time.perf_counter() - start)
    pathlib.Path(path + ".ours.py").write_text(to_text(out, show_meta_data=False))
    fused = sum(name.startswith("fused_") for name in out.functions)
    print(f"irtool zero-pipeline: {best:8.3f} s  (best of {args.repeat}; {len(out.functions)} functions, "
          f"{fused} fused)")
    if args.tvm_python:
        theirs = time_tvm(args.tvm_python, path, args.repeat)
        print(f"TVM 0.27 zero:        {theirs:8.3f} s  (best of {args.repeat}, C++ passes)")
        print(f"ratio irtool / TVM:   {best / theirs:8.2f}")
        same = pathlib.Path(path + ".ours.py").read_text().rstrip("\n") == \
            pathlib.Path(path + ".tvm.py").read_text().rstrip("\n")
        print(f"outputs byte-identical: {same}")
    else:
        print("(no --tvm-python / IRTOOL_TVM_PYTHON: TVM not timed)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run_ours(mod)
        profiler.disable()
        for key in ("cumulative", "tottime"):
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats(key).print_stats(args.profile)
            print(stream.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
