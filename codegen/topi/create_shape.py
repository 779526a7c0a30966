"""Legalizations of TVM 0.27's Relax tril, triu, eye, eye_like, outer, flatten, meshgrid,
collapse_sum_to/like, size, hamming_window and bucketize (legalize_ops/{create,linear_algebra,
manipulate,inspect_op,search}.py and the TOPI computes they call):

    tril / triu    TOPI's trilu: `trilu` over i0, i1, ...: Select(row >= col - k (tril) or
                   row <= col - k (triu), x[...], 0), k cast to int32 first (TOPI's "make sure
                   the datatype is consistent"), as CreatePrimFunc's simplifier prints it
                   (`v_i1 <= v_i0`, `v_i0 < v_i1`); PrimFunc names tril / triu
    eye            TOPI's eye: `eye` over i, j: if_then_else(i == j - k, 1, 0) in the dtype;
                   the sizes and k are Python numbers where constant (TVM's python_native
                   scalar conversion), else the TIR expressions (symbolic sizes)
    eye_like       the same over x's shape, in x's dtype: TVM 0.27's legalization ignores the
                   dtype attribute (`R.eye_like(x, 0, "int8")` of a float32 x becomes a float32
                   eye, its struct info no longer the call's), as we do
    outer          Relax's te_outer: `outer` over i, j: x1[i] * x2[j]
    flatten        TOPI's reshape to the call's (prod(shape),): `T_reshape`, PrimFunc `reshape`
    meshgrid       TOPI's meshgrid: one `T_meshgrid` per input (a PrimFunc with several outputs)
    collapse_sum_to / collapse_sum_like
                   TOPI's collapse_sum: `<data>_red` summing the axes the target lacks or has
                   as 1; `tensor` (a copy) when nothing is summed
    size           prod(shape_to_tensor(shape_of(x))), the first two bound, each legalized
    hamming_window TOPI's chain of ops (see `hamming_window`); a periodic window of symbolic
                   size, or a symbolic `periodic`, stays a call (TVM's legalization raises)
    bucketize      TOPI's searchsorted of the values in the boundaries: an extern (see `searchsorted`)
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import prim_value
from .transform import _tuple_fields, reshape


def trilu(data: te.Tensor, k, upper: bool) -> te.Tensor:
    if k.dtype != "int32":
        k = tir.Cast("int32", k)  # TOPI builds the node itself: no folding until the simplifier

    def element(*idx):
        row, col = idx[-2], idx[-1]
        check = (tb.le if upper else tb.ge)(row, tb.sub(col, k))
        return tir.Select(check, data(*idx), tb.const(0, data.dtype))

    return te.compute(data.shape, element, name="trilu", tag="elemwise")


def _trilu(upper: bool, name: str):
    def legalize(bb, call):
        return bb.call_te(trilu, call.args[0], prim_value(call.args[1]), upper, primfunc_name_hint=name)
    return legalize


register_legalize("relax.tril", _trilu(False, "tril"))
register_legalize("relax.triu", _trilu(True, "triu"))


def _python_native(e):
    """TVM's _try_convert_to_scalar_const(python_native=True) of a PrimValue: a constant as a
    Python number, anything else as its TIR expression."""
    value = prim_value(e)
    return value.value if isinstance(value, (tir.IntImm, tir.FloatImm)) else value


def eye(n, m, k, dtype: str) -> te.Tensor:
    return te.compute((n, m), lambda i, j: tb.if_then_else(tb.eq(i, tb.sub(j, k)), tb.const(1, dtype),
                                                           tb.const(0, dtype)), name="eye")


@register_legalize("relax.eye")
def _eye(bb, call):
    n, m, k = (_python_native(a) for a in call.args)
    return bb.call_te(eye, n, m, k, call.attrs["dtype"], primfunc_name_hint="eye")


@register_legalize("relax.eye_like")
def _eye_like(bb, call):
    sinfo = call.args[0].struct_info
    if not isinstance(sinfo.shape, tuple):
        return call
    n, m = sinfo.shape
    return bb.call_te(eye, n, m, _python_native(call.args[1]), sinfo.dtype, primfunc_name_hint="eye_like")


def outer(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return te.compute((a.shape[0], b.shape[0]), lambda i, j: tb.mul(a(i), b(j)), name="outer")


register_legalize("relax.outer", lambda bb, call: bb.call_te(outer, *call.args, primfunc_name_hint="outer"))


@register_legalize("relax.flatten")
def _flatten(bb, call):
    shape = call.struct_info.shape
    if not isinstance(shape, tuple):
        return call
    return bb.call_te(reshape, call.args[0], rx.ShapeExpr(list(shape)), primfunc_name_hint="reshape")


def meshgrid(inputs: list, indexing: str) -> list:
    """TOPI's meshgrid: one `T_meshgrid` compute per input over the grid's shape (the first two
    lengths swapped for "xy"), reading its input at its own axis."""
    cartesian = indexing == "xy" and len(inputs) >= 2

    def source(i: int) -> int:
        return 1 - i if cartesian and i < 2 else i

    shape = [inputs[source(i)].shape[0] if inputs[source(i)].shape else 1 for i in range(len(inputs))]
    return [te.compute_ax(shape, lambda ax, i=i: inputs[i](ax[source(i)]) if inputs[i].shape else inputs[i](),
                          name="T_meshgrid", tag="injective") for i in range(len(inputs))]


@register_legalize("relax.meshgrid")
def _meshgrid(bb, call):
    fields = _tuple_fields(call.args[0], bb)
    if fields is None:
        return call
    return bb.call_te(meshgrid, fields, call.attrs["indexing"] or "ij")


def collapse_sum(data: te.Tensor, target_shape) -> te.Tensor:
    """TOPI's collapse_sum: from the last axis, a data axis the target lacks or has as 1 (the
    data's not) is summed (`<data>_red`, reduce axes k<i>); nothing summed: `tensor`, a copy."""
    from .reduce import reduce_axes

    ishape, oshape = list(data.shape), [tb.as_expr(d, "int64") if isinstance(d, int) else d for d in target_shape]
    reduce, squeeze = [], []
    o = len(oshape) - 1
    for i in range(len(ishape) - 1, -1, -1):
        if o >= 0 and _equal(ishape[i], oshape[o]):
            o -= 1
            continue
        reduce.append(i)
        if o < 0:
            squeeze.append(i)
        elif _equal(1, oshape[o]):
            o -= 1
    if not reduce:
        return te.compute_ax(ishape, lambda ax: data(*ax), name="tensor", tag="comm_reduce")
    reduce.reverse()
    raxes = reduce_axes(reduce, data)

    def element(indices):
        index, arg, red = [], 0, 0
        for i in range(len(ishape)):
            if i in reduce:
                index.append(raxes[red].var)
                red += 1
                arg += i not in squeeze
            else:
                index.append(indices[arg])
                arg += 1
        return te.sum(data(*index), axis=raxes)

    return te.compute_ax(oshape, element, name=data.name + "_red", tag="comm_reduce")


def _equal(a, b) -> bool:
    """TOPI's EqualCheck: equal constants, or the same expression (ExprDeepEqual)."""
    from .canonical import _index_equal
    from .common import const_int

    if const_int(a) is not None or const_int(b) is not None:
        return const_int(a) == const_int(b)
    return _index_equal(a, b)


@register_legalize("relax.collapse_sum_to")
def _collapse_sum_to(bb, call):
    shape = call.args[1]
    while isinstance(shape, rx.Var):  # TVM follows a shape variable to its bound shape expression
        shape = bb.lookup_binding(shape)
    if not isinstance(shape, rx.ShapeExpr):
        return call
    return bb.call_te(collapse_sum, call.args[0], shape, primfunc_name_hint="collapse_sum")


@register_legalize("relax.collapse_sum_like")
def _collapse_sum_like(bb, call):
    shape = call.args[1].struct_info.shape
    return bb.call_te(collapse_sum, call.args[0], rx.ShapeExpr(list(shape)), primfunc_name_hint="collapse_sum")


@register_legalize("relax.size")
def _size(bb, call):
    """TVM's legalization: R.prod(R.shape_to_tensor(R.shape_of(x))), each bound and legalized."""
    from irtool.ir.expr import Op
    from irtool.ir.relax_visitor import deduce_struct_info
    from irtool.ops.relax import get, make_call_attrs

    shape = bb.emit(rx.Call(Op.get("relax.shape_of"), [call.args[0]], None))
    tensor = bb.emit(rx.Call(Op.get("relax.shape_to_tensor"), [shape], None))
    out = rx.Call(Op.get("relax.prod"), [tensor], make_call_attrs(get("relax.prod"), None))
    out.struct_info = deduce_struct_info(out, bb.module())
    return out


def hamming_window(window_size, periodic, alpha, beta, dtype: str) -> te.Tensor:
    """TOPI's hamming_window, step by step as its Python writes it (each step a TOPI op:
    `T_arange`, `T_multiply` by the float32 2 * pi, `T_divide` by N - 1, `compute` cos,
    `T_multiply_1` by beta, `T_subtract` from alpha, `compute_1` the cast, and for a periodic
    window `T_strided_slice` dropping the last of N = window_size + 1); a window of one is
    TOPI's `const_vector` [1]."""
    import math

    from .broadcast import topi_binary
    from .creation import arange
    from .elemwise import cast

    multiply, divide, subtract = topi_binary("multiply"), topi_binary("divide"), topi_binary("subtract")
    if isinstance(window_size, tir.IntImm) and window_size.value == 1:
        return te.compute((1,), lambda i: tb.const(1, dtype), name="const_vector")
    if periodic.value:
        window_size = tb.add(window_size, 1)
    index = arange(tb.const(0, "int64"), window_size, tb.const(1, "int64"), dtype)
    angular_freq = divide(multiply(tir.FloatImm(2 * math.pi, "float32"), index), tb.sub(window_size, 1))
    cos_values = te.compute(angular_freq.shape, lambda *i: tb.call("cos", angular_freq(*i)))
    window = cast(subtract(alpha, multiply(beta, cos_values)), dtype)
    if periodic.value:
        return te.compute_ax((tb.sub(window.shape[0], 1),), lambda ax: window(ax[0]), name="T_strided_slice",
                             tag="injective")
    return window


@register_legalize("relax.hamming_window")
def _hamming_window(bb, call):
    window_size, periodic, alpha, beta = (prim_value(a) for a in call.args)
    periodic = tb.cast("bool", periodic)
    if not isinstance(periodic, tir.IntImm) or periodic.value and not isinstance(window_size, tir.IntImm):
        return call  # TOPI's `if periodic:` needs a constant, its slice a static size: TVM's legalization raises
    return bb.call_te(hamming_window, window_size, periodic, alpha, beta, call.attrs["dtype"],
                      primfunc_name_hint="hamming_window")


def searchsorted(sorted_sequence: te.Tensor, values: te.Tensor, right: bool = False,
                 out_dtype: str = "int64") -> te.Tensor:
    """TOPI's searchsorted on a 1-D sorted sequence (R.bucketize's boundaries): an extern whose
    IR-builder program runs, for each value in parallel (the flat index unravelled as TVM's
    buffer proxy does), binary_search's loop on two local bounds:
        lo, hi = 0, len;  while lo < hi: mid = lo + (hi - lo >> 1);
        if seq[mid] < value (right: <=): lo = mid + 1 else hi = mid;  out = lo"""
    from .nms import _local, _with_locals
    from .scatter import _load, _loop, _product, _store

    zero = tb.const(0, "int64")

    def body(ins, out):
        seq, vals = ins

        def search(v):
            def loop(lo, hi):
                lo0, hi0 = tir.BufferLoad(lo, [zero]), tir.BufferLoad(hi, [zero])
                mid = tb.add(lo0, tir.Call(out_dtype, "tirx.shift_right", [tb.sub(hi0, lo0), tb.const(1, out_dtype)]))
                index = mid
                if out_dtype != "int64":  # CreatePrimFunc's IndexDataTypeNormalizer: the index in int64
                    index = tb.add(tir.Cast("int64", lo0), tir.Call("int64", "tirx.shift_right", [
                        tir.Cast("int64", tb.sub(hi0, lo0)), tb.const(1, "int64")]))
                found = (tb.le if right else tb.lt)(_load(seq, index), _load(vals, v))
                step = tir.IfThenElse(found, tir.BufferStore(lo, tb.add(mid, 1), [zero]),
                                      tir.BufferStore(hi, mid, [zero]))
                return tir.seq([tir.BufferStore(lo, tb.const(0, out_dtype), [zero]),
                                tir.BufferStore(hi, tb.cast(out_dtype, seq.shape[-1]), [zero]),
                                tir.While(tb.lt(lo0, hi0), step), _store(out, v, lo0)])
            return _with_locals([_local(out_dtype), _local(out_dtype)], loop)

        return _loop(_product(values.shape), "parallel", search)

    return te.extern(te.extern_output("searchsorted", values.shape, out_dtype), [sorted_sequence, values], body,
                     name="searchsorted")


@register_legalize("relax.bucketize")
def _bucketize(bb, call):
    return bb.call_te(searchsorted, call.args[1], call.args[0], call.attrs["right"],
                      "int32" if call.attrs["out_int32"] else "int64")
