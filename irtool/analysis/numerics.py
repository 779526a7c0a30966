"""Translation validation by testing: `irtool-opt --verify-numerics`.

Before the first pass, every global function whose parameters are tensors (or tuples
of tensors) runs in the interpreter on random inputs from a fixed seed; after each
pass the same inputs run again, and the first pass whose results differ beyond
`rtol = atol = tolerance` (NaN matching NaN, shapes and dtypes exactly) is named in
the error. Functions a pass removes are not compared; a pass that makes a function
unrunnable is reported as well.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..exec.relay import InterpreterError, interpret, random_input
from ..ir.expr import Function
from ..ir.module import IRModule
from ..ir.relax import Function as RelaxFunction
from ..ir.types import TensorType, TupleType

SEED = 0
# A tolerance is at least this many machine epsilons of the compared dtype: a legalized
# float16 PrimFunc computes (and accumulates) in float16, as TVM's does, where the NumPy
# references round a float32 result, so their last bits differ whatever tolerance is asked
# (16 epsilons: 0.016 for float16, 0.125 for bfloat16; nothing changes for float32).
_EPSILONS = 16


def _epsilon(dtype) -> float:
    import numpy as np

    try:
        return float(np.finfo(dtype).eps)
    except (TypeError, ValueError):  # bfloat16 and the float8 types: ml_dtypes' own finfo
        try:
            import ml_dtypes

            return float(ml_dtypes.finfo(dtype).eps)
        except (ImportError, TypeError, ValueError):
            return 0.0


def _runnable_type(t) -> bool:
    if type(t) is TupleType:
        return all(_runnable_type(f) for f in t.fields)
    return type(t) is TensorType


def _flatten(value, path: str = ""):
    if isinstance(value, tuple):
        for i, v in enumerate(value):
            yield from _flatten(v, f"{path}.{i}")
    else:
        yield path or "result", value


def _run(mod: IRModule, name: str, inputs):
    try:
        return interpret(mod, inputs, entry=name)
    except (InterpreterError, DiagnosticError, ValueError, TypeError, FloatingPointError) as err:
        raise RuntimeError(str(err)) from err


class VerifyNumerics:
    """A pass instrument: compares each pass's output module with the input module."""

    def __init__(self, mod: IRModule, tolerance: float = 1e-4) -> None:
        import numpy as np

        self.np = np
        self.tolerance = tolerance
        self.inputs: dict[str, list] = {}
        self.expected: dict[str, object] = {}
        for name, fn in mod.items():
            if isinstance(fn, RelaxFunction) and not fn.is_primitive and not fn.private:
                from ..exec.relax import random_input as random_relax_input

                rng = np.random.default_rng(SEED)
                try:
                    self.inputs[name] = [random_relax_input(p.struct_info, rng) for p in fn.params]
                except DiagnosticError:
                    continue
            elif not isinstance(fn, Function) or fn.is_primitive:
                continue
            else:
                types = [p.type_annotation for p in fn.params]
                if not all(_runnable_type(t) for t in types):
                    continue
                rng = np.random.default_rng(SEED)
                self.inputs[name] = [random_input(t, rng) for t in types]
            try:
                self.expected[name] = _run(mod, name, self.inputs[name])
            except RuntimeError as err:
                raise DiagnosticError(f"--verify-numerics: cannot run @{name} before the passes: {err}") from None
        if not self.expected:
            raise DiagnosticError("--verify-numerics: no function with tensor parameters to run")

    def run_before_pass(self, mod: IRModule, p) -> None:
        pass

    def run_after_pass(self, mod: IRModule, p, new_mod: IRModule) -> None:
        if p.name == "sequential" or new_mod is mod:
            return
        for name, expected in self.expected.items():
            if name not in new_mod.functions:
                continue
            try:
                got = _run(new_mod, name, self.inputs[name])
            except RuntimeError as err:
                raise DiagnosticError(f"--verify-numerics: after pass `{p.name}`, @{name} no longer runs: "
                                      f"{err}") from None
            problem = self.difference(expected, got)
            if problem:
                raise DiagnosticError(f"--verify-numerics: pass `{p.name}` changed the results of @{name}: "
                                      f"{problem}")

    def difference(self, expected, got) -> str | None:
        """Why `got` does not match `expected`, or None if it does."""
        np = self.np
        want, have = list(_flatten(expected)), list(_flatten(got))
        if [w for w, _ in want] != [h for h, _ in have]:
            return f"the result structure changed ({len(want)} -> {len(have)} tensors)"
        for (path, a), (_, b) in zip(want, have):
            a, b = np.asarray(a), np.asarray(b)
            if a.shape != b.shape or a.dtype != b.dtype:
                return f"{path} changed from {a.dtype}{list(a.shape)} to {b.dtype}{list(b.shape)}"
            tolerance = self.tolerance
            if a.dtype == bool or a.dtype.kind in "iu":
                bad = a != b
            else:
                tolerance = max(tolerance, _EPSILONS * _epsilon(a.dtype))
                bad = ~np.isclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True)
            if bad.any():
                i = tuple(int(k) for k in np.argwhere(bad)[0])
                return (f"{path}[{', '.join(map(str, i))}] was {a[i]!r}, now {b[i]!r} "
                        f"({int(bad.sum())} of {a.size} elements differ; rtol = atol = {tolerance:g})")
        return None
