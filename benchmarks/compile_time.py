"""Compile time, model to native code: irtool.build against TVM's tvm.compile, same run.

    .venv/bin/python benchmarks/compile_time.py [--tvm-python /path/to/tvm-venv/bin/python] [--repeat 3]

Each model starts as an ONNX graph (built with onnx.helper), is imported by irtool
(`from_onnx`) and lowered to Relax (`relay-to-relax`); that Relax module, printed as
TVMScript with its constants, is what both compilers get:
  irtool  irtool.build: zero pipeline, native code for the host, JIT-loaded
  TVM     tvm.script.from_source + tvm.compile(target="llvm") (its default pipeline)
Times are the best of --repeat runs, in milliseconds; the ratio is irtool / TVM.
Anchors measured earlier on this project's machines (TVM): MLP 44-101 ms, the seed's
conv example 140-214 ms. Goal: no slower than TVM; ResNet-18 under 10 s (measured here:
4.4 s from ONNX, import included, on a lightly loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MODELS = ("seed_conv", "mlp", "cnn_small", "resnet18")


def _onnx_model(name: str):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def weight(n, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), n))
        return n

    if name == "seed_conv":
        inputs = [("x", [1, 3, 16, 16])]
        nodes += [helper.make_node("Conv", ["x", weight("w", 3, 3, 3, 3)], ["c"]),
                  helper.make_node("Add", ["c", weight("b", 1, 3, 1, 1)], ["a"]),
                  helper.make_node("Relu", ["a"], ["r"]),
                  helper.make_node("Mul", ["c", weight("h", 1)], ["m"]),
                  helper.make_node("Add", ["r", "m"], ["y"])]
        out = ("y", [1, 3, 14, 14])
    elif name == "mlp":
        inputs = [("x", [1, 784])]
        last = "x"
        for i, (a, b) in enumerate([(784, 512), (512, 512), (512, 10)]):
            nodes.append(helper.make_node("Gemm", [last, weight(f"w{i}", a, b), weight(f"b{i}", b)], [f"g{i}"]))
            last = f"g{i}"
            if i < 2:
                nodes.append(helper.make_node("Relu", [last], [f"r{i}"]))
                last = f"r{i}"
        nodes.append(helper.make_node("Identity", [last], ["y"]))
        out = ("y", [1, 10])
    elif name == "resnet18":  # ResNet-18 (224x224), random weights
        inputs = [("x", [1, 3, 224, 224])]
        counter = [0]

        def fresh(prefix: str) -> str:
            counter[0] += 1
            return f"{prefix}{counter[0]}"

        def conv_bn(x: str, cin: int, cout: int, k: int, s: int, relu: bool = True) -> str:
            c, b = fresh("c"), fresh("bn")
            nodes.append(helper.make_node("Conv", [x, weight(fresh("w"), cout, cin, k, k)], [c], kernel_shape=[k, k],
                                          strides=[s, s], pads=[k // 2] * 4))
            var = fresh("var")
            inits.append(numpy_helper.from_array(np.ones(cout, np.float32), var))
            nodes.append(helper.make_node("BatchNormalization", [c, weight(fresh("g"), cout), weight(fresh("b"), cout),
                                                                 weight(fresh("m"), cout), var], [b]))
            if not relu:
                return b
            r = fresh("r")
            nodes.append(helper.make_node("Relu", [b], [r]))
            return r

        last = conv_bn("x", 3, 64, 7, 2)
        nodes.append(helper.make_node("MaxPool", [last], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
        last, cin = "pool", 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            for block in range(2):
                s = stride if block == 0 else 1
                y = conv_bn(conv_bn(last, cin, cout, 3, s), cout, cout, 3, 1, relu=False)
                shortcut = last if s == 1 and cin == cout else conv_bn(last, cin, cout, 1, s, relu=False)
                a, r = fresh("add"), fresh("r")
                nodes += [helper.make_node("Add", [y, shortcut], [a]), helper.make_node("Relu", [a], [r])]
                last, cin = r, cout
        nodes += [helper.make_node("GlobalAveragePool", [last], ["gap"]),
                  helper.make_node("Flatten", ["gap"], ["flat"]),
                  helper.make_node("Gemm", ["flat", weight("fc_w", 1000, 512), weight("fc_b", 1000)], ["y"], transB=1)]
        out = ("y", [1, 1000])
    else:  # a few conv/relu/pool blocks
        inputs = [("x", [1, 3, 32, 32])]
        last, cin = "x", 3
        for i, cout in enumerate((16, 32, 64)):
            nodes.append(helper.make_node("Conv", [last, weight(f"w{i}", cout, cin, 3, 3), weight(f"b{i}", cout)],
                                          [f"c{i}"], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
            nodes.append(helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]))
            last, cin = f"p{i}", cout
        nodes.append(helper.make_node("Identity", [last], ["y"]))
        out = ("y", [1, 64, 4, 4])
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(out[0], TensorProto.FLOAT, out[1])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def relax_text(name: str) -> tuple[str, object]:
    from irtool.frontend.onnx import from_onnx
    from irtool.text import to_text
    from irtool.transform import get_pass

    mod, _ = from_onnx(_onnx_model(name))
    relax = get_pass("relay-to-relax")()(mod)
    return to_text(relax), relax


def best_ms(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


_TVM_SCRIPT = r"""
import json, sys, time
import tvm
from tvm import relax
texts = json.loads(sys.stdin.read())
out = {}
for name, (text, repeat) in texts.items():
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        mod = tvm.script.from_source(text)
        ex = tvm.compile(mod, target="llvm")
        relax.VirtualMachine(ex, tvm.cpu())
        t = (time.perf_counter() - start) * 1e3
        best = t if best is None else min(best, t)
    out[name] = best
print(json.dumps(out))
"""


def main() -> None:
    import irtool

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tvm-python", default=os.environ.get("IRTOOL_TVM_PYTHON"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    texts, ours = {}, {}
    for name in MODELS:
        text, _ = relax_text(name)
        texts[name] = (text, args.repeat)
        ours[name] = best_ms(args.repeat, lambda text=text, name=name: irtool.build(irtool.parse(text, f"{name}.py")))
    theirs = {}
    if args.tvm_python:
        proc = subprocess.run([args.tvm_python, "-c", _TVM_SCRIPT], input=json.dumps(texts), capture_output=True,
                              text=True, timeout=3600)
        if proc.returncode == 0:
            theirs = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            print("TVM failed:", proc.stderr.strip()[-500:], file=sys.stderr)
    print(f"{'model':<12} {'irtool ms':>10} {'TVM ms':>10} {'irtool/TVM':>11}")
    for name in MODELS:
        t = theirs.get(name)
        ratio = f"{ours[name] / t:>11.2f}" if t else f"{'-':>11}"
        print(f"{name:<12} {ours[name]:>10.1f} {t if t else float('nan'):>10.1f} {ratio}")
    print("\nboth start from the same Relax text (ONNX -> irtool import -> relay-to-relax); "
          "TVM's figure includes parsing that text")


if __name__ == "__main__":
    main()
