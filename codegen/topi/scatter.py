"""R.scatter_elements and R.scatter_nd: TOPI's ir_builder programs (python/tvm/topi/scatter_elements.py,
scatter.py) as `te.extern` ops, the way TVM 0.27's LegalizeOps calls them on a CPU target.

Each is one opaque sblock (`scatter_elements_generic`, `scatter_nd_generic`: no iterators, empty
regions, `T.attr({"pragma_scope": "seq"})`) over the buffers, indexed flat through TVM's buffer
proxy (a flat index `f` into a (a, b, c) buffer is `[f // c // b, f // c % b, f % c]`):

    scatter_elements   for v in parallel(size): out[v] = data[v]
                       for v in parallel(rows before and after axis):     (v = i * after + j)
                           for v_1 in range(indices along axis):
                               k = indices[i * (ind axis * after) + j + v_1 * after]
                               out[i * (axis * after) + j + (k + (k < 0) * axis) * after] (op)= updates[...]
    scatter_nd         (the index tuples moved to the first axis by a T_transpose compute first)
                       for v in range(size): out[v] = data[v]
                       for v in range(tuples): for v_1 in parallel(slice):
                           out[v_1 + slice * idx[m-1, v] + slice * dim[m-1] * idx[m-2, v] ...] (op)= updates[...]

The index arithmetic is built with TVM's folding operators only (no simplifier runs on an extern
body), so it prints as TVM prints it; `(op)=` is the reduction: update, add, mul, min or max.
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..simplify import simplify
from . import register_legalize
from .common import const_int
from .transform import transpose


def _mul(a, b):
    """`a * b` with Python ints kept as such, as TOPI's `full_range *= value` leaves them."""
    return a * b if isinstance(a, int) and isinstance(b, int) else tb.mul(a, b)


def _unravel(index, shape) -> list:
    """TVM's buffer proxy: a flat index into a multi-dimensional buffer (the outermost dim takes
    the remaining quotient, without a modulo)."""
    if len(shape) == 1:
        return [index]
    out = []
    for k, dim in enumerate(reversed(shape)):
        if k == len(shape) - 1:
            out.append(index)
        else:
            out.append(tb.floormod(index, dim))
            index = tb.floordiv(index, dim)
    return out[::-1]


def _load(buf: tir.Buffer, flat) -> tir.PrimExpr:
    return tir.BufferLoad(buf, _unravel(flat, buf.shape))


def _store(buf: tir.Buffer, flat, value) -> tir.Stmt:
    return tir.BufferStore(buf, value, _unravel(flat, buf.shape))


def _combine(reduction: str, out: tir.Buffer, index, update) -> tir.Stmt:
    if reduction == "update":
        return _store(out, index, update)
    old = _load(out, index)
    value = {"add": tb.add, "mul": tb.mul, "min": tb.min_, "max": tb.max_}[reduction](old, update)
    return _store(out, index, value)


def _simplified_product(e: tir.PrimExpr) -> tir.PrimExpr:
    """A product of sizes as TVM's simplifier leaves it: the symbolic factors in their order
    (repeats kept apart: `n * m * n`), the constants multiplied into one, last
    (`2 * m * 4 * n` -> `m * n * 8`)."""
    factors, stack = [], [e]
    while stack:
        f = stack.pop()
        if isinstance(f, tir.BinOp) and f.op == "mul":
            stack += [f.b, f.a]
        else:
            factors.append(f)
    constant, out = 1, None
    for f in factors:
        if const_int(f) is not None:
            constant *= const_int(f)
        else:
            out = f if out is None else tir.BinOp("mul", out, f)
    if out is None:
        return tb.const(constant, e.dtype)
    return out if constant == 1 else tir.BinOp("mul", out, tb.const(constant, e.dtype))


def _loop(extent, kind: str, body_of) -> tir.Stmt:
    """`with T.parallel / T.serial(0, extent) as v:` of TVM's IRBuilder (the variable named `v`;
    a Python int extent is an int64 one). The builder simplifies the extent (`stop - start`):
    a product of symbolic sizes prints as `n * 12`, not TOPI's `n * 3 * 4`."""
    if isinstance(extent, int):
        extent = tb.const(extent, "int64")
    elif isinstance(extent, tir.BinOp) and extent.op == "mul":
        extent = _simplified_product(extent)
    else:
        extent = simplify(extent)
    v = tir.Var("v", extent.dtype)
    return tir.For(v, tb.const(0, extent.dtype), extent, kind, body_of(v))


def _seq_scope(*stmts) -> tir.Stmt:
    return tir.AttrStmt(tir.IntImm(0, "int32"), "pragma_scope", tir.StringImm("seq"), tir.seq(list(stmts)))


# ----------------------------------------------------------------------------- int64 indices
# CreatePrimFunc's IndexDataTypeNormalizer runs over the extern body too: an index computed from
# int32 indices becomes int64 throughout (loads and bool casts cast, constants retyped, a cast of
# int32 arithmetic replaced by that arithmetic in int64); comparisons keep their operands.

_ARITH = ("add", "sub", "mul", "floordiv", "floormod")


def _index64(e):
    if isinstance(e, tir.IntImm) and e.dtype != "bool":
        return tb.const(e.value, "int64")
    if isinstance(e, tir.BufferLoad):
        load = tir.BufferLoad(e.buffer, [_index64(i) for i in e.indices])
        return load if load.dtype == "int64" or not tb.is_int(load.dtype) else tir.Cast("int64", load)
    if isinstance(e, tir.Var):
        return e if e.dtype == "int64" else tir.Cast("int64", e)
    if isinstance(e, tir.Cast) and tb.is_int(e.dtype):
        inner = e.value
        return _index64(inner) if tb.is_int(inner.dtype) else tir.Cast("int64", _values64(inner))
    if isinstance(e, tir.BinOp) and e.op in _ARITH:
        return tir.BinOp(e.op, _index64(e.a), _index64(e.b))
    return e


def _values64(e):
    """`e` with the indices of its loads made int64."""
    if isinstance(e, tir.BufferLoad):
        return tir.BufferLoad(e.buffer, [_index64(i) for i in e.indices])
    if isinstance(e, tir.BinOp):
        return tir.BinOp(e.op, _values64(e.a), _values64(e.b))
    if isinstance(e, tir.Cast):
        return tir.Cast(e.dtype, _values64(e.value))
    return e


def _indices64(stmt: tir.Stmt) -> tir.Stmt:
    if isinstance(stmt, tir.BufferStore):
        return tir.BufferStore(stmt.buffer, _values64(stmt.value), [_index64(i) for i in stmt.indices])
    if isinstance(stmt, tir.SeqStmt):
        return tir.seq([_indices64(s) for s in stmt.seq])
    return stmt.replace(body=_indices64(stmt.body))


def _product(dims, start: int = 0, stop: int | None = None):
    out = 1
    for d in list(dims)[start:stop]:
        out = _mul(out, d)
    return out


def scatter_elements(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, axis: int = 0,
                     reduction: str = "update") -> te.Tensor:
    shape, ind_shape = list(data.shape), list(indices.shape)
    axis = axis + len(shape) if axis < 0 else axis
    axis_range = tb.cast(indices.dtype, shape[axis])
    full_range = _product(shape)
    after_axis_range = _product(shape, axis + 1)
    before_axis_stride = _mul(axis_range, after_axis_range)
    ind_axis_range = ind_shape[axis]
    ind_before_axis_range = _product(ind_shape, 0, axis)
    ind_after_axis_range = _product(ind_shape, axis + 1)
    ind_before_axis_stride = _mul(ind_axis_range, ind_after_axis_range)

    def body(ins, out):
        data_b, indices_b, updates_b = ins

        def scatter(fused):
            i = tb.floordiv(fused, ind_after_axis_range)
            j = tb.floormod(fused, ind_after_axis_range)
            pre_index1 = tb.add(tb.mul(i, ind_before_axis_stride), j)
            pre_index2 = tb.add(tb.mul(i, before_axis_stride), j)

            def element(k):
                index1 = tb.add(pre_index1, tb.mul(k, ind_after_axis_range))
                k_new = _load(indices_b, index1)
                shifted = tb.add(k_new, tb.mul(tb.lt(k_new, 0), axis_range))
                index2 = tb.add(pre_index2, tb.mul(shifted, after_axis_range))
                return _combine(reduction, out, index2, _load(updates_b, index1))

            return _loop(ind_axis_range, "serial", element)

        stmt = _seq_scope(_loop(full_range, "parallel", lambda v: _store(out, v, _load(data_b, v))),
                          _loop(_mul(ind_before_axis_range, ind_after_axis_range), "parallel", scatter))
        return stmt if indices.dtype == "int64" else _indices64(stmt)

    out_buf = tir.Buffer("out_buf", data.shape, data.dtype)
    return te.extern(out_buf, [data, indices, updates], body, name="scatter_elements.generic")


def scatter_nd_base(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, mode: str) -> te.Tensor:
    """TOPI's scatter_nd: `indices` of shape (M, Y...) (the tuples on the first axis)."""

    def body(ins, out):
        data_b, indices_b, updates_b = ins
        fused_indices = _product(indices_b.shape, 1)
        fused_updates = _product(updates_b.shape, len(indices_b.shape) - 1)
        fused_shape = _product(data_b.shape)

        def element(i, j):
            offset, index = fused_updates, j
            for m in reversed(range(const_int(indices_b.shape[0]))):
                term = _load(indices_b, tb.add(i, _mul(m, fused_indices)))
                index = tb.add(index, tb.mul(offset, term))
                offset = _mul(offset, data_b.shape[m])
            return _combine(mode, out, index, _load(updates_b, tb.add(tb.mul(i, fused_updates), j)))

        stmt = _seq_scope(
            _loop(fused_shape, "serial", lambda v: _store(out, v, _load(data_b, v))),
            _loop(fused_indices, "serial", lambda i: _loop(fused_updates, "parallel", lambda j: element(i, j))))
        return stmt if indices.dtype == "int64" else _indices64(stmt)

    out_buf = tir.Buffer("out_buf", data.shape, data.dtype)
    return te.extern(out_buf, [data, indices, updates], body, name="scatter_nd.generic")


def scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, reduction: str) -> te.Tensor:
    """TVM's Relax legalization: the index tuples moved from the last axis to the first."""
    axes = list(range(len(indices.shape)))
    return scatter_nd_base(data, transpose(indices, axes[-1:] + axes[:-1]), updates, reduction)


def _same_size(a, b) -> bool:
    """Two sizes known equal: equal constants, or one size variable."""
    if const_int(a) is not None or const_int(b) is not None:
        return const_int(a) == const_int(b)
    return a is b or (isinstance(a, tir.Var) and isinstance(b, tir.Var) and a.name == b.name)


def scatter_elements_is_right(data_shape: list, ind_shape: list, axis: int) -> bool:
    """TOPI's program walks the indices' rows before and after `axis` as flat offsets and uses
    them as offsets into data as they are: right only where the two agree, i.e. the indices
    match data in every dimension before `axis` but the first and after `axis` but the first
    (sizes: constants or size variables, known equal)."""
    axis = axis + len(data_shape) if axis < 0 else axis

    def same(xs, ys) -> bool:
        return len(xs) == len(ys) and all(_same_size(x, y) for x, y in zip(xs, ys))

    return same(ind_shape[1:axis], data_shape[1:axis]) and same(ind_shape[axis + 2:], data_shape[axis + 2:])


@register_legalize("relax.scatter_elements")
def _scatter_elements(bb, call):
    shapes = [list(a.struct_info.shape) for a in call.args[:2]]
    if not scatter_elements_is_right(*shapes, int(call.attrs["axis"])):
        return call  # TVM 0.27's PrimFunc scatters to the wrong elements there
    return bb.call_te(scatter_elements, *call.args, int(call.attrs["axis"]), call.attrs["reduction"])


@register_legalize("relax.scatter_nd")
def _scatter_nd(bb, call):
    if const_int(call.args[1].struct_info.shape[-1]) is None:
        return call  # TVM 0.27 fails: the index tuples' length must be a constant
    return bb.call_te(scatter_nd, *call.args, call.attrs["reduction"])
