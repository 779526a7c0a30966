"""Differential testing of the native backend against the interpreters (shared by test_native_*.py).

    lib = compile_cases({"c0": legalized_mod0, "c1": legalized_mod1})   # one LLVM module for all
    got = NativeRelax(mod0, lib, "c0_").run(inputs)                      # main, PrimFuncs native
    assert_same(got, run_relax(mod0, inputs))

`NativeRelax` is the Relax interpreter with every `call_tir` run by native code: many small
modules then share one JIT compilation (compiling is what costs), while `irtool.build` (one
native entry point per model) is tested on fewer, bigger modules. Outputs are poisoned
(NaN / 0x5a bytes) before the call, so an element the PrimFunc forgets to write shows.
"""

from __future__ import annotations

import numpy as np

from irtool.codegen.native import NativeLibrary, compile_tir
from irtool.exec.relax import RelaxInterpreter
from irtool.ir import tir
from irtool.ir.module import IRModule

MAX_ULP = 4  # transcendental functions: libm's and NumPy's versions may differ in the last bits


class NativeRelax(RelaxInterpreter):
    """Runs a Relax function with its `call_tir`s calling `lib[prefix + name]`."""

    def __init__(self, mod: IRModule, lib: NativeLibrary, prefix: str = "") -> None:
        super().__init__(mod)
        self.lib, self.prefix = lib, prefix

    def call_tir(self, call, env: dict, shape_env: dict):
        inputs = list(self.eval(call.args[1], env, shape_env))
        out = self.allocate(call.sinfo_args[0], shape_env)
        outputs = list(out) if isinstance(out, tuple) else [out]
        for o in outputs:
            if o.dtype.kind == "f":
                o.fill(np.nan)
            else:
                o.reshape(o.size).view(np.uint8).fill(0x5A)
        extra = list(self.eval(call.args[2], env, shape_env)) if len(call.args) > 2 else []
        self.lib[self.prefix + call.args[0].name_hint](*inputs, *outputs, *extra)
        return out

    def run(self, inputs: list, entry: str = "main"):
        return self.call_function(entry, [np.asarray(v) for v in inputs])


def compile_cases(mods: dict[str, IRModule], opt_level: int = 3) -> NativeLibrary:
    """Every PrimFunc of every module in one library, named `<key>_<name>`."""
    funcs = {f"{key}_{name}": f for key, mod in mods.items() for name, f in mod.functions.items()
             if isinstance(f, tir.PrimFunc)}
    return compile_tir(IRModule(funcs), opt_level)


def flat(value) -> list:
    return [np.asarray(v) for v in value] if isinstance(value, (tuple, list)) else [np.asarray(value)]


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype (NaN vs NaN is 0)."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ordered = [np.where(x.view(ints) < 0, np.iinfo(ints).min - x.view(ints), x.view(ints)).astype(np.int64)
               for x in (np.ascontiguousarray(a), np.ascontiguousarray(b))]
    dist = np.abs(ordered[0] - ordered[1])
    return np.where(np.isnan(a) & np.isnan(b), 0, dist)


def assert_same(got, expected, what: str = "", max_ulp: int = MAX_ULP, rtol: float = 0.0) -> None:
    """Same structure, dtypes and shapes; integers and bools equal; floats within `max_ulp`
    (or, with `rtol`, relatively close: chains of transcendental functions amplify the last
    bits libm and NumPy differ in)."""
    got, expected = flat(got), flat(expected)
    assert len(got) == len(expected), f"{what}: {len(got)} results, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        where = f"{what} result {i}"
        assert g.dtype == e.dtype and g.shape == e.shape, f"{where}: {g.dtype}{g.shape}, expected {e.dtype}{e.shape}"
        if e.dtype.kind != "f":
            np.testing.assert_array_equal(g, e, err_msg=where)
            continue
        if rtol:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol, err_msg=where)
            continue
        dist = ulp_distance(g, e)
        if dist.size and dist.max() > max_ulp:
            k = np.unravel_index(int(np.argmax(dist)), dist.shape)
            raise AssertionError(f"{where}: {int(dist.max())} ULP apart at {k}: {g[k]!r} vs {e[k]!r}\n"
                                 f"got {g.ravel()[:8]}\nexpected {e.ravel()[:8]}")


def assert_close_to_reference(got, reference, what: str = "", rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Values as the op's NumPy reference computes them (its dtype may differ where TVM's
    legalization differs from the op's struct info: the mean of int32 is int64 there)."""
    got, reference = flat(got), flat(reference)
    assert len(got) == len(reference), f"{what}: {len(got)} results, expected {len(reference)}"
    for i, (g, r) in enumerate(zip(got, reference)):
        assert g.shape == r.shape, f"{what} result {i}: shape {g.shape}, reference {r.shape}"
        if r.dtype.kind in "f" or g.dtype.kind in "f":
            np.testing.assert_allclose(g.astype("float64"), r.astype("float64"), rtol=rtol, atol=atol,
                                       err_msg=f"{what} result {i}")
        else:
            np.testing.assert_array_equal(g.astype("int64"), r.astype("int64"), err_msg=f"{what} result {i}")
