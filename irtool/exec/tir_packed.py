"""`T.call_packed` in the TIR interpreter: the runtime functions we implement, in NumPy, and the
code the interpreter's generator writes for a call of one (the native backend compiles them from
TIR instead: codegen/packed_builtins.py).

    tvm.contrib.sort.argsort(data, out, axis, is_ascend)   TVM's src/runtime/extra/contrib/sort/
        sort.cc: each line along `axis` sorted stably by value, descending with `>`, ties in
        index order
    tvm.contrib.sort.argsort_nms(data, valid_count, out, axis, is_ascend)   the same over each
        line's first valid_count elements (clamped to the line), the others' indices themselves

A `T.tvm_stack_make_array(data, T.tvm_stack_make_shape(dims...), strides, ndim, zero of the
dtype, offset)` argument becomes an array viewing that buffer's storage; the others are scalars.
"""

from __future__ import annotations

import numpy as np

from ..ir import tir
from .tir_runtime import InterpreterError, _dtype


def _argsort(data, out, axis: int, is_ascend: bool) -> None:
    axis = axis + data.ndim if axis < 0 else axis
    keys = data if is_ascend else (-data if data.dtype.kind == "f" else -data.astype(object))
    out[...] = np.argsort(keys, axis=axis, kind="stable").astype(out.dtype)


def _argsort_nms(data, valid_count, out, axis: int, is_ascend: bool) -> None:
    """Each line's first valid_count elements sorted, the other positions their own indices."""
    axis = axis + data.ndim if axis < 0 else axis
    lines, moved_out = np.moveaxis(data, axis, -1), np.moveaxis(out, axis, -1)
    length = lines.shape[-1]
    counts = valid_count.reshape(lines.shape[:-1])
    for at in np.ndindex(*lines.shape[:-1]):
        count = min(max(int(counts[at]), 0), length)
        head = lines[at][:count]
        keys = head if is_ascend else (-head if head.dtype.kind == "f" else -head.astype(object))
        moved_out[at] = np.concatenate([np.argsort(keys, kind="stable"), np.arange(count, length)]).astype(out.dtype)


PACKED_FUNCS = {"tvm.contrib.sort.argsort": _argsort, "tvm.contrib.sort.argsort_nms": _argsort_nms}


def packed(name: str, args: list) -> int:
    """Run packed function `name` (the generated code calls this); 0, as TVM's return code."""
    func = PACKED_FUNCS.get(name)
    if func is None:
        raise InterpreterError(f"unknown packed function `{name}`")
    func(*args)
    return 0


def packed_call_code(cg, e: tir.Call) -> str:
    """Python code calling `packed` for `e`, written by codegen `cg` (a tir_codegen._Codegen)."""
    if not e.args or not isinstance(e.args[0], tir.StringImm):
        raise cg.error("`T.call_packed` takes the function's name first")
    codes = []
    for a in e.args[1:]:
        if not (isinstance(a, tir.Call) and a.op.endswith(".tvm_stack_make_array")):
            codes.append(cg.value(a))
            continue
        data, shape, _strides, _ndim, zero, offset = a.args
        if data not in cg.storage:
            raise cg.error(f"`{data.name}` passed to `{e.args[0].value}` is not an allocated buffer's data")
        storage, flat = cg.storage[data]
        storage = storage if flat else f"flat({storage}, {data.name!r})"
        dims = ", ".join(cg.value(d) for d in shape.args)
        codes.append(f"view({storage}, {cg.value(offset)}, ({dims},), {cg.type_name(_dtype(zero.dtype))}, "
                     f"{data.name!r})")
    return f"packed({e.args[0].value!r}, [{', '.join(codes)}])"
