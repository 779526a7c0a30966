"""Runtime functions that PrimFuncs call with `T.call_packed`, written as TIR so the native
backend compiles them with the PrimFunc (the TIR interpreter runs them in NumPy:
irtool/exec/tir_packed.py).

    tvm.contrib.sort.argsort(data, out, axis, is_ascend)   (TOPI's CPU argsort, TVM's
        src/runtime/extra/contrib/sort/sort.cc): each line of `data` along `axis` sorted stably
        by value, its indices written to `out`; descending compares with `>`, so equal values
        keep their order. Here an insertion sort per line (the lines are NMS's few boxes).
    tvm.contrib.sort.argsort_nms(data, valid_count, out, axis, is_ascend)   (TOPI's argsort
        with a valid count): the same over the first valid_count[line] elements of each line,
        the others' indices themselves.

`lower_packed_call(call)` gives the statement for a `tirx.tvm_call_packed` call, or None when the
function is not one of ours. Its DLTensor arguments are `T.tvm_stack_make_array(data, shape, 0,
ndim, zero of the dtype, offset)`: buffers over those data pointers are declared here.
"""

from __future__ import annotations

import math

from irtool.ir import tir

I64 = "int64"


def _c(value: int, dtype: str = I64) -> tir.PrimExpr:
    return tir.IntImm(value, dtype)


def _array(arg: tir.Call, name: str) -> tuple[tir.Buffer, list[int]] | None:
    """A flat buffer over a `tvm_stack_make_array` argument and the array's shape (None for
    anything else)."""
    if not (isinstance(arg, tir.Call) and arg.op.endswith(".tvm_stack_make_array")):
        return None
    data, shape, _strides, _ndim, zero, offset = arg.args
    dims = list(shape.args)
    return tir.Buffer(name, [math.prod(int(d.value) for d in dims)], zero.dtype, data=data,
                      elem_offset=offset), [int(d.value) for d in dims]


def _local(name: str) -> tir.Buffer:
    return tir.Buffer(name, [_c(1)], I64, scope="local")


def _argsort(data: tir.Buffer, out: tir.Buffer, shape: list, axis: int, ascending: bool,
             counts: tir.Buffer | None = None) -> tir.Stmt:
    """With `counts` (argsort_nms): only the first counts[line] (clamped to the line) sorted."""
    axis = axis + len(shape) if axis < 0 else axis
    outer, length, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    line = tir.Var("line", I64)
    base = tir.BinOp("add", tir.BinOp("mul", tir.BinOp("floordiv", line, _c(inner)), _c(length * inner)),
                     tir.BinOp("floormod", line, _c(inner)))

    def at(k):  # the flat offset of element k of the line
        return tir.BinOp("add", base, tir.BinOp("mul", k, _c(inner)))

    def index_at(k):
        load = tir.BufferLoad(out, [at(k)])
        return load if load.dtype == I64 else tir.Cast(I64, load)

    def value_at(index):
        return tir.BufferLoad(data, [at(index)])

    k = tir.Var("k", I64)
    fill = tir.For(k, _c(0), _c(length), "serial", tir.BufferStore(out, tir.Cast(out.dtype, k) if out.dtype != I64
                                                                    else k, [at(k)]))
    key, j = _local("key"), _local("j")
    key0, j0 = tir.BufferLoad(key, [_c(0)]), tir.BufferLoad(j, [_c(0)])
    prev = tir.BinOp("max", tir.BinOp("sub", j0, _c(1)), _c(0))  # in bounds where j == 0 too
    before = tir.BinOp("lt" if ascending else "gt", value_at(key0), value_at(index_at(prev)))
    shift = tir.seq([tir.BufferStore(out, tir.BufferLoad(out, [at(prev)]), [at(j0)]),
                     tir.BufferStore(j, tir.BinOp("sub", j0, _c(1)), [_c(0)])])
    insert = tir.seq([tir.BufferStore(key, index_at(k), [_c(0)]),
                      tir.BufferStore(j, k, [_c(0)]),
                      tir.While(tir.BinOp("and", tir.BinOp("gt", j0, _c(0)), before), shift),
                      tir.BufferStore(out, tir.Cast(out.dtype, key0) if out.dtype != I64 else key0, [at(j0)])])
    extent = _c(length - 1)
    if counts is not None:
        count = tir.BufferLoad(counts, [line])
        count = count if count.dtype == I64 else tir.Cast(I64, count)
        extent = tir.BinOp("max", tir.BinOp("sub", tir.BinOp("min", count, _c(length)), _c(1)), _c(0))
    sort = tir.For(k, _c(1), extent, "serial", tir.DeclBuffer(key, tir.DeclBuffer(j, insert)))
    return tir.For(line, _c(0), _c(outer * inner), "serial", tir.seq([fill, sort]))


def lower_packed_call(call: tir.Call) -> tir.Stmt | None:
    """The TIR of a `T.call_packed` of one of our runtime functions (see the module docstring)."""
    if not call.args or not isinstance(call.args[0], tir.StringImm):
        return None
    if call.args[0].value == "tvm.contrib.sort.argsort" and len(call.args) == 5:
        data, out = _array(call.args[1], "argsort_data"), _array(call.args[2], "argsort_out")
        if data is None or out is None:
            return None
        (data_buffer, shape), (out_buffer, _) = data, out
        axis, ascending = call.args[3], call.args[4]
        return _argsort(data_buffer, out_buffer, shape, int(axis.value), bool(ascending.value))
    if call.args[0].value == "tvm.contrib.sort.argsort_nms" and len(call.args) == 6:
        data, counts, out = (_array(a, n) for a, n in zip(call.args[1:4], ("argsort_data", "argsort_counts",
                                                                             "argsort_out")))
        if data is None or counts is None or out is None:
            return None
        axis, ascending = call.args[4], call.args[5]
        return _argsort(data[0], out[0], data[1], int(axis.value), bool(ascending.value), counts[0])
    return None
