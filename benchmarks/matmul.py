"""fp32 matmul: irtool's default-cpu-schedule (register tile) against NumPy's BLAS (OpenBLAS
held to the same thread count with threadpoolctl), GFLOP/s beside the machine's limit, in
the same run (figures, never assertions).

    .venv/bin/python benchmarks/matmul.py [--shapes 1024x1024x1024,...] [--threads 1,2]

The limit per core is 2 FMA units x vector lanes x 2 flops x clock (lanes from the host
features LLVM reports: AVX-512 16 floats, AVX2 8; 8 on AMD's Zen 4 and older, whose FMA units
compute a 512-bit instruction in two halves; the clock is /proc/cpuinfo's reading,
so a core that boosts above it can beat the "limit": BLAS does here), times the threads
used. The shapes: the 1024^3 goal, the MLP's layers
(batch 1), the transformer layer's projections and attention (4 heads x 128 x 64); a `c`
suffix makes the weight a constant, as in a model (irtool packs it at compile time; BLAS
gets the same array every call).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = ("1024x1024x1024", "512x512x512", "1x784x512", "1x512x512", "1x784x512c", "1x512x512c",
          "128x256x256", "128x256x1024", "128x256x1024c", "4x128x64x128")


def clock_ghz() -> float | None:
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        return max(mhz) / 1000 if mhz else None
    except OSError:
        return None


def fma_datapath_bits(vector_bits: int) -> int:
    """The width the FMA units compute at: AMD's cores up to Zen 4 (family 0x19) run a 512-bit
    instruction as two 256-bit halves, so AVX-512 there doubles no throughput."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return vector_bits
    if fields.get("vendor_id") == "AuthenticAMD" and int(fields.get("cpu family", "0")) <= 0x19:
        return min(vector_bits, 256)
    return vector_bits


def peak_gflops(threads: int) -> tuple[float | None, str]:
    from irtool.passes.default_cpu_schedule import host_vector_bits

    bits = host_vector_bits()
    lanes = fma_datapath_bits(bits) // 32
    ghz = clock_ghz()
    halves = "" if lanes * 32 == bits else f" (the {bits}-bit registers computed in halves)"
    if ghz is None:
        return None, f"{lanes} lanes{halves}, clock unknown"
    return 2 * lanes * 2 * ghz * threads, (f"2 FMA x {lanes} lanes{halves} x 2 flops x {ghz:.2f} GHz "
                                           f"(/proc/cpuinfo; boost is higher) x {threads}")


def build(shape: tuple[int, ...], weight: np.ndarray | None = None):
    """`run(a, b) -> a @ b` compiled by irtool; with `weight` the module holds it as a
    constant (a model's weight: packed at compile time) and `b` is ignored."""
    from irtool.codegen.native import compile_tir
    from irtool.ir import relax as rx
    from irtool.ir import tir
    from irtool.ir.module import IRModule
    from irtool.text import parse
    from irtool.transform import get_pass

    *batch, m, k, n = shape
    lead = "".join(f"{b}, " for b in batch)
    text = f"""@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({lead}{m}, {k}), dtype="float32"), w: R.Tensor(({lead}{k}, {n}), dtype="float32")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
"""
    mod = parse(text, "matmul")
    if weight is not None:
        from zero_pipeline import _BindParams

        import irtool

        fn = mod["main"]
        body = _BindParams({fn.params[1]: rx.Constant(weight)}).visit_expr(fn.body)
        exe = irtool.build(IRModule({"main": rx.Function(fn.params[:1], body,
                                                         fn.ret_struct_info, fn.is_pure, fn.attrs)}))
        return lambda a, b: exe(a)
    mod = get_pass("zero-pipeline")()(mod)
    prims = IRModule({name: f for name, f in mod.functions.items() if isinstance(f, tir.PrimFunc)})
    kernel = next(iter(compile_tir(get_pass("default-cpu-schedule")()(prims)).functions.values()))

    def run(a, b):
        c = np.empty((*batch, m, n), np.float32)
        kernel(a, b, c)
        return c

    return run


def best_seconds(fn, repeat: int) -> float:
    fn()  # warm: the first call pays for page faults and the thread pool's start
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    from threadpoolctl import threadpool_limits

    from irtool.codegen.native import set_num_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    cases = []
    for spec in args.shapes.split(","):
        shape = tuple(int(d) for d in spec.rstrip("c").split("x"))
        *batch, m, k, n = shape
        rng = np.random.default_rng(0)
        a = rng.standard_normal((*batch, m, k)).astype(np.float32)
        b = rng.standard_normal((*batch, k, n)).astype(np.float32)
        cases.append((spec, shape, a, b, build(shape, b if spec.endswith("c") else None)))
    for threads in (int(t) for t in args.threads.split(",")):
        set_num_threads(threads)
        peak, how = peak_gflops(threads)
        print(f"\n{threads} thread(s); limit {'?' if peak is None else f'{peak:.0f}'} GFLOP/s ({how})")
        print(f"{'shape':<18}{'irtool ms':>10}{'GFLOP/s':>9}{'BLAS ms':>9}{'GFLOP/s':>9}{'irtool/BLAS':>13}"
              f"{'of limit':>10}")
        for spec, shape, a, b, run in cases:
            *batch, m, k, n = shape
            np.testing.assert_allclose(run(a, b), a @ b, rtol=1e-3, atol=1e-3)
            flop = 2 * int(np.prod(batch or [1])) * m * k * n
            ours = best_seconds(lambda run=run, a=a, b=b: run(a, b), args.repeat)
            with threadpool_limits(threads):
                blas = best_seconds(lambda a=a, b=b: np.matmul(a, b), args.repeat)
            g_ours, g_blas = flop / ours / 1e9, flop / blas / 1e9
            share = "" if peak is None else f"{g_ours / peak:.0%}"
            print(f"{spec:<18}{ours * 1e3:>10.3f}{g_ours:>9.1f}{blas * 1e3:>9.3f}{g_blas:>9.1f}"
                  f"{g_ours / g_blas:>13.2f}{share:>10}")

if __name__ == "__main__":
    main()
