"""default-cpu-schedule: native time of elementwise and reduction kernels, scheduled vs
unscheduled vs NumPy, printed as ratios (measured in the same run; never a test assertion).

    .venv/bin/python benchmarks/schedule.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from irtool.codegen.native import compile_tir
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.text import parse
from irtool.transform import get_pass

# name -> (Relax body, x shape, y shape or None, NumPy reference); one line each
KERNELS = {
    "add_relu": ("R.nn.relu(R.add(x, y))", (1024, 1024), (1024,), lambda x, y: np.maximum(x + y, 0)),
    "exp_mul_chain": ("R.multiply(R.exp(R.add(x, y)), x)", (512, 1000), (1000,), lambda x, y: np.exp(x + y) * x),
    "softmax": ("R.nn.softmax(x)", (512, 1000), None, lambda x: np.exp(x - x.max(-1, keepdims=True)) /
                np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "sum_axis1": ("R.sum(x, axis=[1])", (64, 256, 64), None, lambda x: x.sum(1)),
    "mean_last": ("R.mean(x, axis=[-1])", (2048, 512), None, lambda x: x.mean(-1)),
}


def _module(body, xs, ys) -> IRModule:
    params = f"x: R.Tensor({xs}, dtype=\"float32\")" + (f", y: R.Tensor({ys}, dtype=\"float32\")" if ys else "")
    text = f"""@I.ir_module
class Module:
    @R.function
    def main({params}):
        with R.dataflow():
            gv = {body}
            R.output(gv)
        return gv
"""
    mod = get_pass("zero-pipeline")()(parse(text, "bench"))
    return IRModule({k: f for k, f in mod.functions.items() if isinstance(f, tir.PrimFunc)})


def _time(fn, args: tuple, repeat: int) -> float:
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"{'kernel':<16}{'numpy ms':>10}{'naive ms':>10}{'sched ms':>10}{'naive/sched':>13}{'sched/numpy':>13}")
    for name, (body, xs, ys, reference) in KERNELS.items():
        mod = _module(body, xs, ys)
        (fname, fn), = mod.functions.items()
        scheduled = get_pass("default-cpu-schedule")()(mod)
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(xs).astype("float32")] + ([rng.standard_normal(ys).astype("float32")]
                                                                 if ys else [])
        out_buf = fn.buffer_of(fn.params[-1])
        out = np.zeros(tuple(int(d.value) for d in out_buf.shape), "float32")
        naive, sched = compile_tir(mod)[fname], compile_tir(scheduled)[fname]
        t_numpy = _time(reference, tuple(inputs), args.repeat)
        t_naive = _time(naive, (*inputs, out), args.repeat)
        t_sched = _time(sched, (*inputs, out), args.repeat)
        assert np.allclose(out.reshape(-1), np.asarray(reference(*inputs)).reshape(-1), rtol=1e-4, atol=1e-5)
        print(f"{name:<16}{t_numpy * 1e3:>10.3f}{t_naive * 1e3:>10.3f}{t_sched * 1e3:>10.3f}"
              f"{t_naive / t_sched:>13.2f}{t_sched / t_numpy:>13.2f}")


if __name__ == "__main__":
    main()
