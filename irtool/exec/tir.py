"""The TIR interpreter: runs a `PrimFunc` on NumPy arrays, in place.

    run_prim_func(func, [a, b, c])      # a, b inputs, c filled (destination-passing style)

It is the oracle that lowered and compiled TIR is tested against, so it must follow TVM's
semantics exactly, and it must be fast enough to run real kernels (a 64x64x64 matmul in
a fraction of a second). It does not walk the tree per element: each PrimFunc is
translated once into a Python function whose nested `for` loops mirror the TIR, then
`compile()`d and cached. `prim_func_source(func)` shows the generated code:

    for v_i in range(64):                          for i, k in T.grid(64, 64):
        for v_k in range(64):                          with T.sblock("C"):
                                                           vi, vk = T.axis.remap("SR", [i, k])
            if v_k == 0:                                   with T.init():
                b_C[v_i] = K0                                  C[vi] = T.float32(0)
            b_C[v_i] = (b_C[v_i] + b_A[v_i, v_k])          C[vi] = C[vi] + A[vi, vk]

(block iterators bound to a loop variable are aliased to it; K0 is np.float32(0)).

Values, by dtype (one table of templates per kind below, one line per operator):

    intN / uintN   Python ints. +, -, * may leave the dtype's range; a value is wrapped
                   (two's complement) only where that is observable: before a division,
                   comparison, store, cast, index... An interval is tracked for every
                   integer expression, so loop indices (known small) are never wrapped
                   and are bounds-checked only when they might be negative.
    floatN         NumPy scalars (np.float32...), so float32 math rounds as float32.
    bool           Python or NumPy bools.
    vectors        (`float32x4`, from Ramp/Broadcast) NumPy arrays of the lanes.

Semantics: floordiv/floormod round toward -inf, truncdiv/truncmod and integer `div`
toward zero; `if_then_else`, Select and `and`/`or` evaluate only what they need; a
block's `T.init()` runs when every reduction iterator is at the minimum of its domain;
all loop kinds run serially; `T.call_packed` of a runtime function we implement
(`tvm.contrib.sort.argsort`, tir_packed.py) runs in NumPy on views of its
DLTensors' buffers. Buffers without explicit strides are NumPy arrays indexed
by their indices; a buffer with explicit strides (or a buffer viewing an `Allocate`d
data pointer) is a flat view of its storage.

Here: the compile cache and the entry points; `tir_codegen.py` writes the Python source,
`tir_runtime.py` holds the dtypes, the operator templates and the helpers it calls.
"""
from __future__ import annotations

import itertools
import linecache
from collections import OrderedDict

import numpy as np

from ..ir import tir
from .tir_codegen import _Codegen
from .tir_runtime import InterpreterError


def _call_global(mod, name: str, args):
    funcs = getattr(mod, "functions", mod) if mod is not None else None
    fn = funcs.get(name) if funcs is not None else None
    if not isinstance(fn, tir.PrimFunc):
        raise InterpreterError(f"unknown TIR intrinsic or function `{name}`")
    return run_prim_func(fn, list(args), mod)



# ----------------------------------------------------------------------------- compile + run


class _Compiled:
    __slots__ = ("fn", "source", "filename", "where", "name")

    def __init__(self, fn, source: str, filename: str, where: list[str], name: str) -> None:
        self.fn, self.source, self.filename, self.where, self.name = fn, source, filename, where, name


_CACHE: OrderedDict[int, tuple[tir.PrimFunc, _Compiled]] = OrderedDict()
_CACHE_SIZE = 1024
_ids = itertools.count()


def _func_name(func: tir.PrimFunc) -> str:
    return func.attr("global_symbol") or "prim_func"


def _compile(func: tir.PrimFunc) -> _Compiled:
    entry = _CACHE.get(id(func))
    if entry is not None and entry[0] is func:
        _CACHE.move_to_end(id(func))
        return entry[1]
    name = str(_func_name(func))
    gen = _Codegen(func, name)
    source = gen.function()
    filename = f"<tir {name} #{next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(gen.ns)
    namespace["run_prim_func"] = run_prim_func
    namespace["call_global"] = _call_global
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 — our own generated code
    compiled = _Compiled(namespace["prim_func"], source, filename, ["", *gen.where], name)
    _CACHE[id(func)] = (func, compiled)
    if len(_CACHE) > _CACHE_SIZE:
        old = _CACHE.popitem(last=False)[1][1]
        linecache.cache.pop(old.filename, None)
    return compiled


def prim_func_source(func: tir.PrimFunc) -> str:
    """The Python code that `run_prim_func` executes for `func` (for debugging)."""
    return _compile(func).source


def run_prim_func(func: tir.PrimFunc, args: list, mod=None) -> object:
    """Run `func` on `args` (NumPy arrays for buffer parameters, Python numbers for scalar
    ones); buffers are read and written in place. Returns the value of a `Return`, or None."""
    compiled = _compile(func)
    try:
        with np.errstate(all="ignore"):  # inf and nan are values, as on the device
            return compiled.fn(list(args), mod)
    except InterpreterError:
        raise
    except (ZeroDivisionError, IndexError, OverflowError, ValueError, TypeError) as err:
        where = _locate(compiled, err)
        message = "division by zero" if isinstance(err, ZeroDivisionError) else str(err)
        if isinstance(err, IndexError):
            message = f"out-of-bounds access: {message}"
        raise InterpreterError(f"in {where}: {message}") from err


def _locate(compiled: _Compiled, err: BaseException) -> str:
    """The TIR construct (and generated line) that raised `err`."""
    tb, line = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == compiled.filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None or line > len(compiled.where):
        return f"`{compiled.name}`"
    text = compiled.source.splitlines()[line - 1].strip()
    return f"{compiled.where[line - 1]} (at `{text}`)"


__all__ = ["InterpreterError", "prim_func_source", "run_prim_func"]
