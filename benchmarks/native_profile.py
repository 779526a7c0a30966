"""Where a native model's time goes: each PrimFunc of `irtool.build`'s module timed alone on
random inputs of its buffer shapes (best of `--repeat` samples of ~1 ms, each many calls of the
compiled entry point without Python's argument checks), times the number of calls `main` makes.
An estimate (no cache effects between kernels), in the same run; never an assertion. CPU time
of this process by default (the machine may be shared; with 1 thread it is the kernel's own
time), `--clock wall` for elapsed time.

    .venv/bin/python benchmarks/native_profile.py resnet18 [--threads 1] [--top 15]

`--in-situ` times each kernel call as `main` makes them, in order, on the model's own tensors
(each in a buffer of its own: no storage sharing): the caches hold what the previous kernels
left, as in a model run; the sum of these times is close to the model's own time.

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


def _shape(sinfo) -> list[int]:
    return [int(getattr(d, "value", d)) for d in sinfo.shape]


def in_situ_times(exe, inputs: list, repeat: int = 20, clock=time.perf_counter) -> list:
    """(median seconds, name, calls, buffer shapes) per PrimFunc, each call timed where `main`
    makes it, slowest first."""
    from irtool.ir import relax as rx
    from irtool.ir import tir
    from irtool.ir.expr import GlobalVar

    main_fn = exe.mod.functions["main"]
    values = dict(zip(main_fn.params, inputs))
    steps = []

    def array(e):
        if isinstance(e, rx.Constant):
            return np.asarray(e.data)
        return values[e]

    for block in main_fn.body.blocks:
        for b in block.bindings:
            v = b.value
            if not isinstance(v, rx.Call):
                if isinstance(v, rx.Var) and v in values:
                    values[b.var] = values[v]
                continue
            if isinstance(v.op, GlobalVar) and isinstance(exe.mod.functions.get(v.op.name_hint), tir.PrimFunc):
                args = [array(a) for a in v.args]
                steps.append((v.op.name_hint, _unchecked_call(exe[v.op.name_hint], args),
                              [a.shape for a in args]))
            elif getattr(v.op, "name", "") in ("relax.memory.alloc_tensor", "relax.builtin.alloc_tensor"):
                sinfo = b.var.struct_info
                values[b.var] = np.zeros(_shape(sinfo), sinfo.dtype)
    samples = {k: [] for k in range(len(steps))}
    for _ in range(repeat):
        for k, (_, call, _) in enumerate(steps):
            start = clock()
            call()
            samples[k].append(clock() - start)
    rows = {}
    for k, (name, _, shapes) in enumerate(steps):
        seconds, _, calls, _ = rows.get(name, (0.0, name, 0, shapes))
        rows[name] = (seconds + float(np.median(samples[k])), name, calls + 1, shapes)
    return sorted(rows.values(), reverse=True)


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
    p.add_argument("--in-situ", action="store_true", help="time each call in main's order, on its own tensors")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    set_num_threads(args.threads)
    exe = irtool.build(from_onnx(onnx_model(args.model))[0])
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.in_situ:
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(_shape(p.struct_info)).astype(p.struct_info.dtype)
                  for p in exe.mod.functions["main"].params]
        rows = in_situ_times(exe, inputs, args.repeat, clock)
    else:
        rows = kernel_times(exe, args.repeat, clock)
    total = sum(r[0] for r in rows)
    print(f"{'ms':>9} {'share':>6} {'calls':>5}  kernel (buffer shapes)")
    for seconds, name, calls, shapes in rows[:args.top]:
        print(f"{seconds * 1e3:>9.2f} {seconds / total:>6.1%} {calls:>5}  {name} {shapes}")
    print(f"{total * 1e3:>9.2f}  in all ({len(rows)} kernels)")


if __name__ == "__main__":
    main()
