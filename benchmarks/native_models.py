"""Native inference time of the issue-14 workloads against onnxruntime with the same thread
count, batch 1, median of repeated runs, in the same run (figures, never assertions).

    .venv/bin/python benchmarks/native_models.py [--threads 1,2] [--models mlp,resnet20,...]

Each model (ONNX, built with onnx.helper and random weights: compile_time.py's MLP and
ResNet-18, onnx_models.py's ResNet-20, MobileNetV2 and transformer layer) is imported,
compiled with `irtool.build` (zero pipeline + default-cpu-schedule + LLVM) and checked
against onnxruntime before it is timed. Prints ms per inference, the irtool/ORT ratio and
the geometric mean per thread count, and the compile time (import -> native).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

MODELS = ("mlp", "resnet20", "resnet18", "mobilenetv2", "transformer")


def onnx_model(name: str):
    from compile_time import _onnx_model
    from onnx_models import BUILDERS

    return BUILDERS[name]() if name in BUILDERS else _onnx_model(name)


def median_seconds(fn, budget: float = 1.5, most: int = 200) -> float:
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < most and (len(times) < 3 or time.perf_counter() - start < budget):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main() -> None:
    import onnxruntime as ort

    import irtool
    from irtool.codegen.native import set_num_threads
    from irtool.frontend.onnx import from_onnx

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args()
    warnings.simplefilter("ignore")
    threads = [int(t) for t in args.threads.split(",")]
    built = {}
    print(f"{'model':<14}{'compile s':>10}")
    for name in args.models.split(","):
        model = onnx_model(name)
        start = time.perf_counter()
        exe = irtool.build(from_onnx(model)[0])
        built[name] = (model, exe)
        print(f"{name:<14}{time.perf_counter() - start:>10.2f}")
    for n in threads:
        set_num_threads(n)
        print(f"\n{n} thread(s)\n{'model':<14}{'irtool ms':>11}{'ORT ms':>10}{'irtool/ORT':>12}")
        ratios = []
        for name, (model, exe) in built.items():
            shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            so = ort.SessionOptions()
            so.intra_op_num_threads, so.inter_op_num_threads = n, 1
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            want = sess.run(None, {"x": x})[0]
            np.testing.assert_allclose(np.asarray(exe(x)), want, rtol=1e-3, atol=1e-3)
            ours = median_seconds(lambda exe=exe, x=x: exe(x))
            theirs = median_seconds(lambda sess=sess, x=x: sess.run(None, {"x": x}))
            ratios.append(ours / theirs)
            print(f"{name:<14}{ours * 1e3:>11.3f}{theirs * 1e3:>10.3f}{ours / theirs:>12.2f}")
        print(f"{'geomean':<14}{'':>21}{math.exp(sum(map(math.log, ratios)) / len(ratios)):>12.2f}")


if __name__ == "__main__":
    main()
