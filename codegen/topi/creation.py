"""Creation operators: TOPI's `full` (include/tvm/topi/elemwise.h) and `arange`
(transform.h), as Relax's legalize_ops/create.py calls them, and nn.pad's registration.

    full / ones / zeros (and *_like)   `T_full` over ax0, ax1, ...: cast(dtype, fill value);
                                       a 0-d constant fill is inlined, a tensor fill is read
                                       as `v[()]`; PrimFunc names full / ones / zeros
    arange                             all bounds constant: a Relax constant (np.arange);
                                       otherwise `T_arange`: cast(dtype, start + step * ax0)
    nn.pad                             constant: nn.pad's `PadInput` compute, PrimFunc `pad`;
                                       replicate: `ReplicatePadInput`, x[max(0, min(dim - 1, i - before))]
                                       (the form TVM's rewrite rules give TOPI's nested if_then_else;
                                       a dim of size 1 reads index 0, as TVM simplifies it);
                                       circular: `CircularPadInput`, x[(i - before + dim) % dim];
                                       reflect: `ReflectPadInput`, TOPI's branchless reflect-101
                                       x[m - abs(m - abs(i - before))] (m = dim - 1) in TVM's
                                       printed form, its read region TVM's relaxation of the
                                       Selects (`reflect_pad`); a constant size s with a pad
                                       before up to 2 * (s - 1) and after below s (beyond, TOPI's
                                       formula reads out of bounds where np.pad reflects again:
                                       left as the call), a symbolic size with any pads (as TVM)
"""

from __future__ import annotations

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..call_te import gen_call_tir_inputs, make_call_tir
from . import register_legalize
from .canonical import simplify_index
from .common import const_int
from .nn import pad


def full(shape, dtype: str, fill_value) -> te.Tensor:
    if isinstance(fill_value, te.Tensor):
        fill_value = fill_value()
    value = tb.cast(dtype, fill_value if isinstance(fill_value, tir.PrimExpr) else tb.as_expr(fill_value))
    return te.compute_ax(shape, lambda ax: value, name="T_full", tag="elemwise")


def _fill_value(arg):
    """A 0-d constant as a Python number (TVM's python_native conversion); else the tensor."""
    if isinstance(arg, rx.Constant) and arg.data is not None and np.ndim(arg.data) == 0:
        return np.asarray(arg.data).item()
    return arg


def _full(is_like: bool, fill, name: str):
    def legalize(bb, call):
        value = _fill_value(call.args[1]) if fill is None else fill
        if is_like:
            shape = call.args[0].struct_info.shape
        elif isinstance(call.args[0], rx.ShapeExpr):
            shape = call.args[0].values
        else:
            return call
        shape = rx.ShapeExpr(list(shape))
        return bb.call_te(full, shape, call.struct_info.dtype, value, primfunc_name_hint=name)

    return legalize


register_legalize("relax.full", _full(False, None, "full"))
register_legalize("relax.ones", _full(False, 1.0, "ones"))
register_legalize("relax.ones_like", _full(True, 1.0, "ones"))
register_legalize("relax.zeros", _full(False, 0.0, "zeros"))
register_legalize("relax.zeros_like", _full(True, 0.0, "zeros"))
register_legalize("relax.full_like", _full(True, None, "full"))


@register_legalize("relax.arange")
def _arange(bb, call):
    values = [a.value if isinstance(a, rx.PrimValue) else None for a in call.args]
    dtype = call.attrs["dtype"] or call.struct_info.dtype
    if all(isinstance(v, (tir.IntImm, tir.FloatImm)) for v in values):
        start, end, step = (v.value for v in values)
        return rx.Constant(np.arange(start, end, step, dtype=dtype))
    if any(v is None for v in values):
        return call
    # call_te, with TVM's calling convention for scalar arguments: the PrimValues are call
    # arguments (`R.call_tir(cls.arange, (n,), ...)`), not trailing shape variables
    func, _, out_sinfo, tir_vars = gen_call_tir_inputs(arange, *values, dtype)
    gv = bb.add_function(func, "arange")
    return make_call_tir(gv, [rx.PrimValue(v) for v in tir_vars], out_sinfo)


def arange(start, stop, step, dtype: str) -> te.Tensor:
    """TOPI's arange: the length (stop - start + step - 1) // step for integer bounds and a
    constant positive step ((start - stop - step - 1) // -step for a negative one), else
    cast(int64, ceil(float32(stop - start) / step))."""
    step_value = step.value if isinstance(step, tir.IntImm) else None
    all_int = all(tb.is_int(v.dtype) for v in (start, stop, step))
    if all_int and step_value is not None and step_value >= 1:
        num = tb.floordiv(tb.sub(tb.add(tb.sub(stop, start), step), 1), step)
    elif all_int and step_value is not None and step_value < 0:
        num = tb.floordiv(tb.sub(tb.sub(tb.sub(start, stop), step), 1), tb.neg(step))
    else:
        num = tb.cast("int64", tb.call("ceil", tb.div(tb.cast("float32", tb.sub(stop, start)), step)))
    num = simplify_index(num)
    return te.compute_ax((num,), lambda ax: tb.cast(dtype, simplify_index(tb.add(start, tb.mul(step, ax[0])))),
                         name="T_arange", tag="injective")


def _padded_shape(data: te.Tensor, pad_before, pad_after) -> list:
    """d + before + after, the constant pads summed (`n + 2`, as TVM's analyzer folds them)."""
    return [tb.add(d, const_int(b) + const_int(a)) if const_int(b) is not None and const_int(a) is not None
            else tb.add(tb.add(d, b), a) for d, b, a in zip(data.shape, pad_before, pad_after)]


def replicate_pad(data: te.Tensor, pad_before, pad_after) -> te.Tensor:
    def clamp(i, d, b):
        if const_int(d) == 1:  # the simplifier's max(0, min(0, x)) -> 0
            return tb.const(0, "int64")
        if const_int(d) is None and const_int(b) == 1:  # min(n - 1, i - 1) -> min(n, i) - 1
            return tb.max_(tb.const(0, "int64"), tir.BinOp("sub", tir.BinOp("min", d, i), tb.const(1, "int64")))
        return tb.max_(tb.const(0, "int64"), tb.min_(tb.sub(d, 1), simplify_index(tb.sub(i, b))))

    def element(*idx):
        return data(*[clamp(i, d, b) for i, d, b in zip(idx, data.shape, pad_before)])

    return te.compute(_padded_shape(data, pad_before, pad_after), element, name="ReplicatePadInput")


def circular_pad(data: te.Tensor, pad_before, pad_after) -> te.Tensor:
    def element(*idx):
        return data(*[simplify_index(tb.floormod(tb.add(tb.sub(i, b), d), d))
                      for i, d, b in zip(idx, data.shape, pad_before)])

    return te.compute(_padded_shape(data, pad_before, pad_after), element, name="CircularPadInput")


def _reflect_index(v: tir.Var, before: int, m: int) -> tuple:
    """TOPI's branchless reflect-101 index `m - abs(m - abs(v - before))` as TVM prints it
    (tirx.abs of an integer is `Select(0 <= x, x, -x)`), and the bounds of its abs terms:
    (index, lower, upper) with `abs(v - before)` in [min(-o, o), max(-o, o)]."""
    def c(value: int) -> tir.PrimExpr:
        return tb.const(value, v.dtype)

    def sub(a, b):  # TVM's operator-: `x - 0` folds, `0 - x` stays
        return a if isinstance(b, tir.IntImm) and b.value == 0 else tir.BinOp("sub", a, b)

    o = v if before == 0 else sub(v, c(before))
    neg = sub(c(before), v)
    a = tir.Select(tir.BinOp("le", c(before), v), o, neg)
    b = tir.Select(tir.BinOp("le", a, c(m)), sub(c(m), a), sub(a, c(m)))
    return sub(c(m), b), tir.BinOp("min", neg, o), tir.BinOp("max", neg, o)


def _reflect_index_symbolic(v: tir.Var, n: tir.Var, before: int = 0) -> tuple:
    """`_reflect_index` on an axis of symbolic size n (m = n - 1), as TVM's simplifier writes
    it: `n - Select(1 <= n - A, n - A - 1, A + 1 - n) - 1` with A = abs(v - before)."""
    def bop(op, a, b):
        return tir.BinOp(op, a, b)

    def c(value: int) -> tir.PrimExpr:
        return tb.const(value, v.dtype)

    one = c(1)
    o = v if before == 0 else bop("sub", v, c(before))
    neg = bop("sub", c(before), v)
    a = tir.Select(bop("le", c(before), v), o, neg)
    b = tir.Select(bop("le", one, bop("sub", n, a)), bop("sub", bop("sub", n, a), one),
                   bop("sub", bop("add", a, one), n))
    return bop("sub", bop("sub", n, b), one), bop("min", neg, o), bop("max", neg, o)


def _reflect_range_symbolic(v: tir.Var, n: tir.Var, before: int = 0) -> tir.Range:
    """The read region of `_reflect_index_symbolic` (TVM's: B's bounds with m = n - 1 folded,
    the extent's + 1 moved into the max). With before == 1 the simplifier also folds the + 1
    of `abs(v - 1) + 1` into its bounds: `max(1 - v, v - 1) + 1` is `max(2 - v, v)`."""
    def bop(op, a, b):
        return tir.BinOp(op, a, b)

    _, lo, hi = _reflect_index_symbolic(v, n, before)
    one, two = tb.const(1, v.dtype), tb.const(2, v.dtype)
    if before == 1:
        hi1, lo1 = bop("max", bop("sub", two, v), v), bop("min", bop("sub", two, v), v)
        b_max = bop("max", bop("sub", hi1, n), bop("sub", bop("sub", n, lo), one))
        b_min = bop("min", bop("sub", lo1, n), bop("sub", bop("sub", n, hi), one))
        top = bop("max", bop("sub", bop("add", hi1, one), n), bop("sub", n, lo))
    else:
        b_max = bop("max", bop("sub", bop("add", hi, one), n), bop("sub", bop("sub", n, lo), one))
        b_min = bop("min", bop("sub", bop("add", lo, one), n), bop("sub", bop("sub", n, hi), one))
        top = bop("max", bop("sub", bop("add", hi, two), n), bop("sub", n, lo))
    return tir.Range(bop("sub", bop("sub", n, b_max), one), bop("sub", top, b_min))


def reflect_pad(data: te.Tensor, pad_before, pad_after) -> te.Tensor:
    """TOPI's reflect_pad (constant sizes, every pad below its size). The read region is TVM's
    IntSet of the index, each Select relaxed to both branches: with A = abs(v - before) in
    [lo, hi] and B = abs(m - A) in [min(lo - m, m - hi), max(hi - m, m - lo)], the index
    m - B starts at m - max(B) and spans max(B) + 1 - min(B) (the simplifier folds the + 1
    into the max when m == 1: `max(hi, 2 - lo)`)."""
    sizes = [const_int(d) for d in data.shape]

    def sub(a, b):
        return a if isinstance(b, tir.IntImm) and b.value == 0 else tir.BinOp("sub", a, b)

    def element(*idx):
        return data(*[_reflect_index(v, int(b), s - 1)[0] if s is not None else _reflect_index_symbolic(v, d, int(b))[0]
                      for v, b, s, d in zip(idx, pad_before, sizes, data.shape)])

    out = te.compute(_padded_shape(data, pad_before, pad_after), element, name="ReflectPadInput")
    ranges = []
    for iv, b, s, d in zip(out.op.axis, pad_before, sizes, data.shape):
        if s is None:
            ranges.append(_reflect_range_symbolic(iv.var, d, int(b)))
            continue
        m = tb.const(s - 1, iv.var.dtype)
        _, lo, hi = _reflect_index(iv.var, int(b), s - 1)
        b_max = tir.BinOp("max", sub(hi, m), sub(m, lo))
        b_min = tir.BinOp("min", sub(lo, m), sub(m, hi))
        if s - 1 == 1:
            top = tir.BinOp("max", hi, sub(tb.const(2, iv.var.dtype), lo))
        else:
            top = tir.BinOp("add", b_max, tb.const(1, iv.var.dtype))
        ranges.append(tir.Range(sub(m, b_max), sub(top, b_min)))
    out.op.prebuilt = True
    out.op.read_regions = [(data, ranges)]
    return out


_PAD_MODES = {"replicate": (replicate_pad, "replicate_pad"), "circular": (circular_pad, "circular_pad"),
              "reflect": (reflect_pad, "reflect_pad")}


@register_legalize("relax.nn.pad")
def _nn_pad(bb, call):
    at = call.attrs
    width = list(at["pad_width"])
    before, after = width[::2], width[1::2]
    if at["pad_mode"] == "reflect" and not _reflect_in_range(call.args[0].struct_info.shape, before, after):
        return call  # symbolic sizes or a pad of a whole size or more (module docstring)
    if at["pad_mode"] in _PAD_MODES:
        fn, name = _PAD_MODES[at["pad_mode"]]
        return bb.call_te(fn, call.args[0], before, after, primfunc_name_hint=name)
    if at["pad_mode"] != "constant":
        return call
    return bb.call_te(pad, call.args[0], pad_before=before, pad_after=after,
                      pad_value=float(at["pad_value"]), primfunc_name_hint="pad")


def _reflect_in_range(shape, before, after) -> bool:
    """Where TOPI's reflect index stays inside the input: abs(v - before) reaches
    max(before, size - 1 + after) and the index is in bounds up to 2 * (size - 1), so a pad
    before up to 2 * (size - 1) (reflected twice, as np.pad does) and after below the size.
    A symbolic size (a bare variable) is legalized as TVM does whatever its pads: its
    PrimFunc then reads out of bounds when the size turns out smaller (docs/passes.md)."""
    def ok(d, b, a) -> bool:
        s = const_int(d)
        if s is None:
            return isinstance(d, tir.Var) and int(b) >= 0 and int(a) >= 0
        return 0 <= int(b) <= 2 * (s - 1) and 0 <= int(a) < s
    return all(ok(d, b, a) for d, b, a in zip(shape, before, after))


@register_legalize("relax.shape_to_tensor")
def _shape_to_tensor(bb, call):
    """TVM's legalize_ops/create.py: element i is the shape's value i (an if_then_else chain);
    the symbolic values are the PrimFunc's scalar parameters."""
    shape = call.args[0]
    values = shape.values if isinstance(shape, rx.ShapeExpr) else getattr(shape.struct_info, "values", None)
    if values is None:
        return call
    values = [tir.IntImm(v, "int64") if isinstance(v, int) else v for v in values]
    symbolic = [v for v in values if not isinstance(v, tir.IntImm)]

    def te_shape_to_tensor(*sym):
        sym = list(sym)
        resolved = [v if isinstance(v, tir.IntImm) else sym.pop(0) for v in values]

        def fcompute(i):
            result = tb.const(0, "int64")
            for idx in range(len(values) - 1, -1, -1):
                result = tb.if_then_else(tb.eq(i, tb.const(idx, "int64")), tb.cast("int64", resolved[idx]), result)
            return result

        return te.compute((len(values),), fcompute, name="shape_to_tensor")

    return bb.call_te(te_shape_to_tensor, *symbolic, primfunc_name_hint="shape_to_tensor")
