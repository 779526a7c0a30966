"""R.dynamic_strided_slice as TVM 0.27's LegalizeOps legalizes it
(python/tvm/relax/transform/legalize_ops/index.py): the result's shape is computed at run time.

    gv7 = R.call_tir(cls.shape_func, (x, begin, end, strides), out_ty=R.Tensor((ndim,), "int64"))
    gv8: R.Shape(ndim=2) = R.tensor_to_shape(gv7)
    gv9: R.Shape([s, s_1]) = R.match_cast(gv8, R.Shape([s, s_1]))       fresh size variables
    gv6 = R.call_tir(cls.dynamic_strided_slice, (x, begin, end, strides), out_ty=R.Tensor((s, s_1), ...))

shape_func (`T_shape_func_strided_slice_dynamic`): per axis i, with L the data's extent along i
(a Select over i) and begin/end canonicalised (negative + L, clamped to [0, L], or [-1, L - 1] for a
negative stride), ceildiv(end - begin, stride) or ceildiv(begin - end, -stride). It is written in
the form TVM's simplifier leaves under each branch of `strides[i] < 0` (the inner Selects on the
stride folded), so it is `prebuilt`.
dynamic_strided_slice (`T_strided_slice_dynamic`, TOPI's C++ relax_dynamic_strided_slice):
x[min(max(begin' , lo), hi) + ax * stride ...], begin' = begin + L where negative, lo/hi
if_then_else on the stride's sign; its reads cover x, begin and strides whole (TVM relaxes indices
read from buffers).

Data of static or symbolic shape (the forms checked against TVM: tests/test_legalize_nms.py).
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Op

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import const_int

I64 = "int64"


def _c(value: int) -> tir.PrimExpr:
    return tb.const(value, I64)


def _sub(a, b) -> tir.PrimExpr:
    return tir.BinOp("sub", a, b)


def _extent(dim) -> tuple[tir.PrimExpr, int]:
    """A data extent as TVM's canonical simplifier leaves it, with its scale: a product of sizes
    and constants (`nb * 2 * 5`, NMS's rows) is its sizes in order times the folded constant
    (`nb * T.int64(10)`), a constant alone folded."""
    factors, scale = [], 1

    def walk(e):
        nonlocal scale
        if isinstance(e, tir.BinOp) and e.op == "mul":
            walk(e.a)
            walk(e.b)
        elif const_int(e) is not None:
            scale *= const_int(e)
        else:
            factors.append(e)

    walk(dim)
    if not factors:
        return _c(scale), 1
    expr = factors[0]
    for f in factors[1:]:
        expr = tir.BinOp("mul", expr, f)
    return (expr if scale == 1 else tir.BinOp("mul", expr, _c(scale))), scale


def _plus_extent(index, dim) -> tir.PrimExpr:
    """`index + extent` as the canonical simplifier orders a sum: terms by descending scale (a
    stable sort), so `nb * T.int64(10) + begin[0]` but `begin[0] + n`; `+ 0` folded."""
    extent, scale = _extent(dim)
    if const_int(extent) == 0:
        return index
    return tir.BinOp("add", extent, index) if scale > 1 else tir.BinOp("add", index, extent)


def shape_func(data: te.Tensor, begin: te.Tensor, end: te.Tensor, strides: te.Tensor) -> te.Tensor:
    """The sliced shape (see the module docstring), as TVM's simplifier prints it."""

    def element(i):
        extent = _c(-1)
        for axis, dim in enumerate(data.shape):
            extent = tir.Select(tir.BinOp("eq", i, _c(axis)), _extent(dim)[0], extent)
        b, e, s = begin(i), end(i), strides(i)

        def canonical(index, lo, hi):
            wrapped = tir.Select(tir.BinOp("lt", index, _c(0)), tir.BinOp("add", index, extent), index)
            return tir.BinOp("min", tir.BinOp("max", wrapped, lo), hi)

        b_neg, e_neg = canonical(b, _c(-1), _sub(extent, _c(1))), canonical(e, _c(-1), _sub(extent, _c(1)))
        b_pos, e_pos = canonical(b, _c(0), extent), canonical(e, _c(0), extent)
        backward = tir.BinOp("floordiv", _sub(_sub(_sub(b_neg, e_neg), s), _c(1)), tir.BinOp("mul", s, _c(-1)))
        forward = tir.BinOp("floordiv", _sub(_sub(tir.BinOp("add", e_pos, s), b_pos), _c(1)), s)
        return tir.Select(tir.BinOp("lt", s, _c(0)), backward, forward)

    out = te.compute((begin.shape[0],), lambda i: element(i), name="T_shape_func_strided_slice_dynamic")
    out.op.prebuilt = True
    return out


def dynamic_strided_slice(data: te.Tensor, begin: te.Tensor, end: te.Tensor, strides: te.Tensor,
                          output_shape: list) -> te.Tensor:
    """TOPI's relax_dynamic_strided_slice."""

    def element(ax):
        index = []
        for k, dim in enumerate(data.shape):
            b, s = begin(_c(k)), strides(_c(k))
            negative = tir.BinOp("lt", s, _c(0))
            wrapped = tb.if_then_else(tir.BinOp("lt", b, _c(0)), _plus_extent(b, dim), b)
            dim = _extent(dim)[0]
            lo = tb.if_then_else(negative, _c(-1), _c(0))
            last = _c(const_int(dim) - 1) if const_int(dim) is not None else _sub(dim, _c(1))
            hi = tb.if_then_else(negative, last, dim)
            start = tir.BinOp("min", tir.BinOp("max", wrapped, lo), hi)
            index.append(tir.BinOp("add", start, tir.BinOp("mul", ax[k], s)))
        return data(*index)

    out = te.compute_ax(output_shape, element, name="T_strided_slice_dynamic", tag="injective")
    out.op.prebuilt = True
    whole = [(t, [tir.Range(_c(0), d) for d in t.shape]) for t in (data, begin, strides)]
    out.op.read_regions = whole
    return out


@register_legalize("relax.dynamic_strided_slice")
def _dynamic_strided_slice(bb, call):
    data = call.args[0].struct_info
    shape = bb.emit(bb.call_te(shape_func, *call.args))
    shape_value = bb.emit(rx.Call(Op.get("relax.tensor_to_shape"), [shape], None))
    sizes = [tir.Var("s", I64) for _ in range(data.ndim)]
    bb.match_cast(shape_value, rx.ShapeStructInfo(sizes))
    return bb.call_te(dynamic_strided_slice, *call.args, output_shape=sizes)
