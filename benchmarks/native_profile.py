"""Where a native model's time goes: each PrimFunc of `irtool.build`'s module timed alone on
random inputs of its buffer shapes (best of `--repeat` samples of ~1 ms, each many calls of the
compiled entry point without Python's argument checks), times the number of calls `main` makes.
An estimate (no cache effects between kernels), in the same run; never an assertion. CPU time
of this process by default (the machine may be shared; with 1 thread it is the kernel's own
time), `--clock wall` for elapsed time.

    .venv/bin/python benchmarks/native_profile.py resnet18 [--threads 1] [--top 15]

Models: those of native_models.py (mlp, resnet20, resnet18, mobilenetv2, transformer).
"""

from __future__ import annotations

import argparse
import re
import time
import warnings

import numpy as np
from native_models import onnx_model


def _unchecked_call(fn, args):
    """The compiled entry point called with the arguments' addresses, without the Python-side
    checks of `fn(*args)` (several microseconds: more than a small kernel takes)."""
    import ctypes

    sig = getattr(fn, "sig", None)
    if sig is None or sig.size_vars or any(kind != "buffer" for kind, _ in sig.params):
        return lambda: fn(*args)
    slots = (ctypes.c_void_p * len(args))(*(a.ctypes.data for a in args))
    address, cfunc = ctypes.addressof(slots), fn._cfunc

    def call():
        if cfunc(address) != 0:
            raise RuntimeError(f"{sig.name} failed")
    call.keep = (slots, args)
    return call


def _seconds(call, clock) -> float:
    start = clock()
    call()
    return clock() - start


def kernel_times(exe, repeat: int = 3, clock=time.perf_counter) -> list[tuple[float, str, int, list]]:
    """(estimated seconds, name, calls, buffer shapes) per PrimFunc, slowest first."""
    from irtool.ir import tir
    from irtool.text import to_text

    main_text = to_text(exe.mod)
    rows = []
    for name, func in exe.mod.functions.items():
        if not isinstance(func, tir.PrimFunc):
            continue
        calls = len(re.findall(rf"cls\.{re.escape(name)}\b", main_text))
        buffers = dict(func.buffer_map)
        if calls == 0 or any(p not in buffers for p in func.params):
            continue
        rng = np.random.default_rng(0)
        args, shapes = [], []
        for p in func.params:
            buf = buffers[p]
            shape = [int(d.value) for d in buf.shape]
            shapes.append(tuple(shape))
            args.append(rng.standard_normal(shape).astype(buf.dtype) if "float" in buf.dtype
                        else np.zeros(shape, buf.dtype))
        fn = exe[name]
        fn(*args)  # checks the arguments once
        call = _unchecked_call(fn, args)
        inner = max(1, min(1000, int(1e-3 / max(_seconds(call, clock), 1e-7))))  # ~1 ms per sample
        best = float("inf")
        for _ in range(repeat):
            start = clock()
            for _ in range(inner):
                call()
            best = min(best, (clock() - start) / inner)
        rows.append((best * calls, name, calls, shapes))
    return sorted(rows, reverse=True)


def main() -> None:
    import irtool
    from irtool.codegen.native import set_num_threads
    from irtool.frontend.onnx import from_onnx

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    set_num_threads(args.threads)
    exe = irtool.build(from_onnx(onnx_model(args.model))[0])
    rows = kernel_times(exe, args.repeat, time.process_time if args.clock == "cpu" else time.perf_counter)
    total = sum(r[0] for r in rows)
    print(f"{'ms':>9} {'share':>6} {'calls':>5}  kernel (buffer shapes)")
    for seconds, name, calls, shapes in rows[:args.top]:
        print(f"{seconds * 1e3:>9.2f} {seconds / total:>6.1%} {calls:>5}  {name} {shapes}")
    print(f"{total * 1e3:>9.2f}  in all ({len(rows)} kernels)")


if __name__ == "__main__":
    main()
