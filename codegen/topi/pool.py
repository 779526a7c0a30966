"""Pooling: TOPI's C++ include/tvm/topi/nn/pooling.h (pool_impl_nd, adaptive_pool_impl) and the
C++ `pad` of include/tvm/topi/nn.h, as TVM's legalizations of R.nn.max_pool2d and
R.nn.adaptive_avg_pool2d call them. TOPI's pool3d is the same pool_impl_nd over the D, H and W
axes (rv0, rv1, rv2): max_pool3d and avg_pool3d share the code below, per axis (byte-identical
to TVM on 80 random 3-D pools, tests/test_legalize_nn_3d.py).

    max_pool2d           `pad_temp` (only when some padding is nonzero; ceil_mode adds
                         stride - 1 after) filled with the dtype's lowest value, then
                         `pool_max` over ax0.. and reduce axes rv0, rv1 (sblock attr
                         schedule_rule "meta_schedule.pool_max")
    adaptive_avg_pool2d  `adaptive_pool_sum` over rv0, rv1, then `adaptive_pool_avg`
                         (schedule_rule "meta_schedule.adaptive_pool_avg") dividing by the
                         window size

    avg_pool2d           `pad_temp` (zeros, as for max) then `pool_sum` over rv0, rv1, then
                         `pool_avg` (schedule_rule "meta_schedule.pool_avg") dividing by the
                         element count of each window, per axis, count_include_pad or not

Windows are built as TVM's arithmetic simplifier leaves them in the cases handled here.
Adaptive pooling where an output size divides its input size has the window
`o * (in / out) + rv` and a constant divisor. Where it does not, the window of output v is
TOPI's `[v * n // o, Select(((v + 1) * n) % o == 0, e, e + 1))`, whose extent depends on v:
CreatePrimFunc then nests the reduction (codegen/te.py, `adaptive_pool_sum_l1`) and `_Window`
writes the start, end, divisor and the read region of the outer sblock in TVM's printed forms
(checked on every input size 1..12 against every output size 1..12, both layouts:
tests/test_legalize_adaptive_pool.py). Over a size variable n, `_SymbolicWindow` keeps TOPI's
expressions as TVM does; an output of 1 takes the whole axis, an omitted output size the axis
itself (tests/test_legalize_symbolic_pool.py).

An integer average pool divides its sum by TOPI's int64 count, so (C++'s `div` promoting the sum)
its result is int64, as TVM's; a 1-D pool's `max(count, 1)` is 1 where the count is at most 1
for any index (a window of one element at stride 1: TVM's ConstIntBound, `_const_bound`), which a
product of counts (2-D, 3-D) never is.

avg_pool2d's divisor is TOPI's `(min(start + k - 1, n + pad_tail - 1) - start) + 1` per axis
(start = v * s - pad_head; without count_include_pad the padded head is also subtracted,
`- max(pad_head - v * s, 0)`, the end clamps at n - 1 and the product is `max(.., 1)`).
CreatePrimFunc's simplifier rewrites it; `_avg_pool_count` writes the rewritten form directly,
as TVM 0.27 prints it for constant sizes and dilation 1: the stride scales a `min`/`max` out
when it divides both of its constants and the offset is at most one stride either way
(`min(v * 2 + 2, 8)` -> `min(v + 1, 4) * 2`, but `min(v * 2 + 4, 8)` stays), and a
padding-free strided window counts the head as `min(v, 0) * s`. Checked byte-for-byte against
TVM on every stride 1..4, kernel 1..5, pads 0..2 (< kernel), sizes 7..9, on kernels up to 9,
strides up to 5 and pads up to 4 (a pad of the whole kernel or more included), and on random
pools with sizes from 1 (tests/test_legalize_avg_pool.py); ceil_mode (the tail padded by
stride - 1 more, the divisor unchanged) on the same grids.

Over a symbolic size (a size variable) `_symbolic_count` writes the forms TVM prints with n
kept whole, and `_symbolic_out_size` the pooled size: `(n + c) // s + 1` folded where s
divides c, and with ceil_mode the check `(n + c) // s * s >= n + head` as an if_then_else on
`(n + c) % s` (max_pool2d too; tests/test_legalize_symbolic_pool.py).

A dilated axis (d > 1) counts `(end - first) / d + 1` with C++'s truncating `/`, first = start
moved past the padded head by whole dilation steps (`max((d - 1 - start) / d, 0)` of them,
without count_include_pad). `_dilated_count` writes TVM's printed sum inside the `T.Div`:
reach r = (k - 1) * d - pad_head, bound b (n + pad_tail - 1, or n - 1 without padding counted);
the min is `min(r, b - v * s)` (with count_include_pad, or when s <= d) or
`min(v * s + r, b) ... - v * s` (s > d), the stride scaled out of it as above, except that
`min(v * s + s, b) - v * s` stays whole when r == s, no head padding and s does not divide b;
the jump count `max(Div(d - 1 + pad_head - v * s, d), 0) * d` loses its Div when d divides
both and the stride ratio scales out as well; the sum is divided exactly when d divides every
coefficient, and `Div(x * c, d)` becomes `Div(x, d / c)`. Byte-identical to TVM on the grid
above with d 2..3 and on random pools with sizes up to 32, kernels up to 12, strides and
dilations up to 8 (tests/test_legalize_avg_pool.py); along a size variable `_symbolic_dilated_count` keeps the
bound whole (nothing scales out) with the same folds as `_symbolic_count`
(tests/test_legalize_symbolic_pool.py). A dilated axis padded by its kernel or more has a reach
below 0 (`min(v * s - c, b)`), and a window of one element (k == 1) takes the head pad into its
min, `min(0, b + head - v * s)` (the stride then scales out of the window from v * s when it
divides b + head), except where the stride divides the head but not the bound (with a size
variable: where a stride above 1 divides the head); a reach equal to the bound's offset folds
into `min(0, n - v * s) + c` (with a size variable, winning over a kept `min(v * s + s, n + s) - v * s`);
a bound of 0 (a size-1 axis) gives `v * -s`, and a divisor sharing a factor with every term of
a sum without jumps is reduced (`Div(x * 2 + 2, 4)` is `Div(x + 1, 2)`)."""

from __future__ import annotations

import math
from functools import partial

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..simplify import simplify
from . import register_legalize
from .common import const_int


def height_width_axes(layout: str, axes: str = "HW") -> list[int] | None:
    """TOPI's find_height_width (find_depth_height_width with axes "DHW"): the positions of
    the window axes, none of which may be split."""
    if any(a.lower() in layout or a not in layout for a in axes):
        return None
    return [layout.index(a) for a in axes]


def topi_pad(t: te.Tensor, pad_before: list, pad_after: list, pad_value: tir.PrimExpr,
             name: str = "T_pad") -> te.Tensor:
    """TOPI's C++ pad (constant mode): conditions only on the padded sides."""
    before = [tb.cast("int32", p) for p in pad_before]
    after = [tb.cast("int32", p) for p in pad_after]
    out_shape = [simplify(tb.add(tb.add(d, b), a)) for d, b, a in zip(t.shape, before, after)]

    def element(ovars):
        indices, sel = [], []
        for i, v in enumerate(ovars):
            if not (isinstance(before[i], tir.IntImm) and before[i].value == 0):
                sel.append(tb.ge(v, before[i]))
                indices.append(tb.sub(v, before[i]))
            else:
                indices.append(v)
            if not (isinstance(after[i], tir.IntImm) and after[i].value == 0):
                sel.append(simplify(tb.lt(v, tb.add(before[i], t.shape[i]))))
        if sel:
            cond = tb.const(True, "bool")
            for s in sel:
                cond = tb.logical_and(cond, s)
            return tb.if_then_else(cond, t(*indices), pad_value)
        return t(*indices)

    return te.compute_ax(out_shape, element, name=name, tag="elemwise")


def _out_size(n: tir.PrimExpr, k: int, s: int, d: int, head: int, tail: int, ceil_mode: bool) -> tir.PrimExpr:
    """TOPI's pooled size `(n - (k - 1) * d - 1 + head + tail) // s + 1` (tail includes
    ceil_mode's stride - 1); with ceil_mode a last window starting in the tail padding is
    dropped, as TVM 0.27's Relax does."""
    if isinstance(n, tir.Var):
        return _symbolic_out_size(n, k, s, d, head, tail, ceil_mode)
    raw_out = tb.add(tb.floordiv(tb.add(tb.add(tb.sub(tb.sub(n, (k - 1) * d), 1), head), tail), s), 1)
    if ceil_mode:
        invalid_last = tb.ge(tb.mul(tb.sub(raw_out, 1), s), tb.add(n, head))
        return simplify(tb.if_then_else(invalid_last, tb.sub(raw_out, 1), raw_out))
    return simplify(raw_out)


def _symbolic_out_size(n: tir.Var, k: int, s: int, d: int, head: int, tail: int, ceil_mode: bool) -> tir.PrimExpr:
    """_out_size of a size variable n as TVM's analyzer prints it. With c the constant of the
    numerator (ceil_mode's stride - 1 included in tail), `(n + c) // s + 1` is `n + c + 1` for
    s == 1 and `n // s + (c / s + 1)` when s divides c. ceil_mode's check
    `(n + c) // s * s >= n + head` is `(n + c) % s <= c - head`: never true below 0 (the raw
    size), always from s - 1 up (one less), else an if_then_else on it (`== 0` at 0)."""
    c = head + tail - (k - 1) * d - 1

    def floor_plus(extra: int) -> tir.PrimExpr:
        if s == 1:
            return _offset(n, c + extra)
        if c % s == 0:
            return _offset(_bin("floordiv", n, _i64(s)), c // s + extra)
        return _offset(_bin("floordiv", _offset(n, c), _i64(s)), extra)

    if not ceil_mode or c - head < 0:
        return floor_plus(1)
    if c - head >= s - 1:
        return floor_plus(0)
    rest = _bin("floormod", _offset(n, c % s), _i64(s))
    if c % s == 0 and c > head:  # the analyzer keeps n whole: `n <= n // s * s + (c - head)`
        cond = _bin("le", n, _bin("add", _bin("mul", _bin("floordiv", n, _i64(s)), _i64(s)), _i64(c - head)))
    else:
        cond = _bin("eq", rest, _i64(0)) if c == head else _bin("le", rest, _i64(c - head))
    return tir.Call("int64", "tirx.if_then_else", [cond, floor_plus(0), floor_plus(1)])


def max_pool(x: te.Tensor, kernel, stride, dilation, padding, ceil_mode: bool, axes: list[int]) -> te.Tensor:
    """pool_impl_nd with pool_type max."""
    k = len(kernel)
    pad_before, pad_after = [0] * len(x.shape), [0] * len(x.shape)
    out_shape = list(x.shape)
    raxes = []
    do_pad = False
    for i, ii in enumerate(axes):
        head, tail = int(padding[i]), int(padding[i + k])
        if ceil_mode:
            tail += int(stride[i]) - 1
        do_pad = do_pad or head != 0 or tail != 0
        raxes.append(te.reduce_axis((0, int(kernel[i])), name=f"rv{i}"))
        pad_before[ii], pad_after[ii] = head, tail
        out_shape[ii] = _out_size(x.shape[ii], int(kernel[i]), int(stride[i]), int(dilation[i]), head, tail,
                                  ceil_mode)
    temp = topi_pad(x, pad_before, pad_after, tb.min_value(x.dtype), "pad_temp") if do_pad else x

    def element(output):
        indices = list(output)
        for i, ii in enumerate(axes):
            window, offset = tb.mul(output[ii], int(stride[i])), tb.mul(raxes[i].var, int(dilation[i]))
            # the simplifier's canonical order: the term of larger scale first
            indices[ii] = tb.add(offset, window) if int(dilation[i]) > int(stride[i]) else tb.add(window, offset)
        return te.max(temp(*indices), axis=raxes)

    return te.compute_ax(out_shape, element, name="pool_max", tag="pool_max",
                         attrs={"schedule_rule": "meta_schedule.pool_max"})


def _i64(value: int) -> tir.PrimExpr:
    return tb.const(value, "int64")


def _bin(op: str, a: tir.PrimExpr, b: tir.PrimExpr) -> tir.PrimExpr:
    return tir.BinOp(op, a, b)


class _Window:
    """TOPI's adaptive window along one axis of input size n and output size o (o does not
    divide n): start `floordiv(v * n, o)`, end `Select(floormod((v + 1) * n, o) == 0, e, e + 1)`
    with `e = floordiv((v + 1) * n, o)`, in the forms TVM's simplifier gives them. When n
    divides o (k = o / n) the simplifier divides through by n: `v // k`, `(v + 1) // k`; the
    condition keeps `(v * n + n % o) % o`. `value` is the variable as the expression reads it
    (the avg block reads TOPI's `cast(int64, v)` of its int32 axis, a cast TVM leaves there)."""

    def __init__(self, n: int, o: int) -> None:
        self.n, self.o = n, o
        self.k = o // n if o % n == 0 else None

    def _scaled(self, v: tir.PrimExpr) -> tir.PrimExpr:
        return v if self.n == 1 else _bin("mul", v, _i64(self.n))

    def start(self, value: tir.PrimExpr) -> tir.PrimExpr:
        if self.k is not None:
            return _bin("floordiv", value, _i64(self.k))
        return _bin("floordiv", self._scaled(value), _i64(self.o))

    def end_floor(self, value: tir.PrimExpr) -> tir.PrimExpr:
        if self.k is not None:
            return _bin("floordiv", _bin("add", value, _i64(1)), _i64(self.k))
        return _bin("floordiv", _bin("add", self._scaled(value), _i64(self.n)), _i64(self.o))

    def end(self, v: tir.Var, value: tir.PrimExpr) -> tir.PrimExpr:
        cond = _bin("eq", _bin("floormod", _bin("add", self._scaled(v), _i64(self.n % self.o)), _i64(self.o)),
                    _i64(0))
        e = self.end_floor(value)
        return tir.Select(cond, e, _bin("add", e, _i64(1)))

    def extent(self, v: tir.Var, value: tir.PrimExpr) -> tir.PrimExpr:
        return _bin("sub", self.end(v, value), self.start(value))

    def divisor(self, v: tir.Var) -> tir.PrimExpr:
        """cast(int32, extent) as the avg block prints it (the factor it multiplies casts it to
        the data's dtype where that is wider or a float); where n divides o with k > 2 the
        simplifier moves the int32 cast inside the subtraction."""
        value = tir.Cast("int64", v)
        if self.k is not None and self.k > 2:
            inner = _bin("sub", tir.Cast("int32", self.end(v, value)),
                         _bin("floordiv", tir.Cast("int32", value), tb.const(self.k, "int32")))
        else:
            inner = tir.Cast("int32", self.extent(v, value))
        return inner

    def read_extent(self, v: tir.Var) -> tir.PrimExpr:
        """The extent of the window an outer sblock reads: the Select relaxed to its larger
        branch, `e + 1 - start` = `(v * n % o + n) // o + 1`, with the simplifier's forms of
        `v * n % o` and its `(x % 2 + c) // 2` -> `x % 2 + c // 2`."""
        if self.k is not None:
            term, const, div = _bin("floormod", v, _i64(self.k)), 1, self.k
        else:
            r = self.n % self.o
            if r == 1:
                term = _bin("floormod", v, _i64(self.o))
            elif self.o % r == 0:
                term = _bin("mul", _bin("floormod", v, _i64(self.o // r)), _i64(r))
            else:
                term = _bin("floormod", _bin("mul", v, _i64(r)), _i64(self.o))
            const, div = self.n, self.o
        if div == 2:
            return _bin("add", term, _i64(const // 2 + 1))
        return _bin("add", _bin("floordiv", _bin("add", term, _i64(const)), _i64(div)), _i64(1))


class _SymbolicWindow(_Window):
    """TOPI's adaptive window along an axis of symbolic size n (a variable) and constant
    output size o > 1, which may or may not divide n: TVM's analyzer leaves TOPI's
    expressions as they are, `v * n // o` to `Select((v + 1) * n % o == 0, e, e + 1)` with
    `e = (v + 1) * n // o`, and relaxes the outer read region to `e + 1 - v * n // o`."""

    def __init__(self, n: tir.Var, o: int) -> None:
        self.n, self.o, self.k = n, o, None

    def _scaled(self, v: tir.PrimExpr) -> tir.PrimExpr:
        return _bin("mul", v, self.n)

    def end_floor(self, value: tir.PrimExpr) -> tir.PrimExpr:
        return _bin("floordiv", self._scaled(_bin("add", value, _i64(1))), _i64(self.o))

    def end(self, v: tir.Var, value: tir.PrimExpr) -> tir.PrimExpr:
        cond = _bin("eq", _bin("floormod", self._scaled(_bin("add", v, _i64(1))), _i64(self.o)), _i64(0))
        e = self.end_floor(value)
        return tir.Select(cond, e, _bin("add", e, _i64(1)))

    def read_extent(self, v: tir.Var) -> tir.PrimExpr:
        return _bin("sub", _bin("add", self.end_floor(v), _i64(1)), self.start(v))


def adaptive_avg_pool(x: te.Tensor, output_size: list, axes: list[int]) -> te.Tensor:
    """adaptive_pool_impl with pool_type avg. An axis whose output size divides its input
    size has the constant window `o * (n / o) + rv`; any other axis a window whose extent
    depends on the output index, which CreatePrimFunc nests (`adaptive_pool_sum_l1` around
    `adaptive_pool_sum`, codegen/te.py)."""
    out_shape = list(x.shape)
    windows: list = []
    for size, ii in zip(output_size, axes):
        n = const_int(x.shape[ii])
        if n is None:  # a size variable: pooled to itself (windows of 1), to 1 (all of it), or else
            out_shape[ii] = x.shape[ii] if size is x.shape[ii] else tb.const(size, "int64")
            n_sym = x.shape[ii]
            windows.append(1 if size is n_sym else n_sym if size == 1 else _SymbolicWindow(n_sym, size))
            continue
        out_shape[ii] = size
        windows.append(n // size if n % size == 0 else _Window(n, size))

    relaxed: dict = {}

    def window_sum(output):
        indices, raxes = list(output), []
        for i, ii in enumerate(axes):
            w = windows[i]
            if not isinstance(w, _Window):
                rv = te.reduce_axis((0, w), name=f"rv{i}")
                indices[ii] = tb.add(tb.mul(output[ii], w), rv.var)
            else:
                rv = te.reduce_axis((0, w.extent(output[ii], output[ii])), name=f"rv{i}")
                indices[ii] = _bin("add", w.start(output[ii]), rv.var)
                relaxed[id(rv.var)] = w.read_extent(output[ii])
            raxes.append(rv)
        return te.sum(x(*indices), axis=raxes)

    pool_sum = te.compute_ax(out_shape, window_sum, name="adaptive_pool_sum", tag="adaptive_pool_sum")
    # TOPI's pooled axes are int32 (the output size attribute), the others int64
    pool_sum.op.narrow_axes = frozenset(id(pool_sum.op.axis[ii].var) for ii in axes)
    pool_sum.op.relaxed_extents = relaxed
    uneven = any(isinstance(w, _Window) for w in windows)

    def average(output):
        factor = tb.cast(x.dtype, 1)
        for i, ii in enumerate(axes):
            w = windows[i]
            term = w.divisor(output[ii]) if isinstance(w, _Window) else tb.cast("int32", w)
            factor = tb.mul(factor, term)  # TOPI's cast(dtype, 1) * cast(int32, extent) ...: the types matched
        return tb.div(pool_sum(*output), factor)

    avg = te.compute_ax(out_shape, average, name="adaptive_pool_avg", tag="elemwise",
                        attrs={"schedule_rule": "meta_schedule.adaptive_pool_avg"})
    avg.op.prebuilt = uneven  # the divisor is in TVM's printed form already (_Window.divisor)
    return avg


def _avg_pool_count(v: tir.Var, n: int, k: int, s: int, head: int, tail: int, include_pad: bool) -> tir.PrimExpr:
    """Elements of one window along one axis, in the form TVM's simplifier prints (docstring)."""
    def c(value: int) -> tir.PrimExpr:
        return tb.const(value, v.dtype)

    def scaled_min(offset: int, bound: int) -> tir.PrimExpr:
        """min(v * s + offset, bound), the stride scaled out when it divides both constants."""
        if offset % s == 0 and bound % s == 0 and abs(offset // s) <= 1:
            return tb.mul(tb.min_(tb.add(v, c(offset // s)), c(bound // s)), c(s))
        return tb.min_(tb.add(tb.mul(v, c(s)), c(offset)), c(bound))

    reach, vs = k - 1 - head, tb.mul(v, c(s))
    if include_pad:
        last = n + tail - 1
        if s > 1 and reach % s == 0 and last % s == 0 and abs(reach // s) <= 1:
            return tb.add(tb.mul(tb.min_(c(reach // s), tb.sub(c(last // s), v)), c(s)), c(1 + head))
        remaining = _bin("mul", v, c(-s)) if last == 0 and s > 1 else tb.sub(c(last), vs)  # `0 - v * s`
        return tb.add(tb.min_(c(reach), remaining), c(1 + head))
    if s == 1:
        return tb.sub(tb.add(tb.min_(c(reach), tb.sub(c(n - 1), v)), c(1 + head)),
                      tb.max_(tb.sub(c(head), v), c(0)))
    if head == 0:
        if reach == 0 and n == 1:  # scaled_min is `min(v, 0) * s` too: the two terms add up
            return tb.sub(tb.add(tb.mul(tb.min_(v, c(0)), c(2 * s)), c(1)), vs)
        return tb.sub(tb.add(tb.add(tb.mul(tb.min_(v, c(0)), c(s)), scaled_min(reach, n - 1)), c(1)), vs)
    skipped = (tb.mul(tb.max_(tb.sub(c(head // s), v), c(0)), c(s)) if head % s == 0 and head // s <= 1
               else tb.max_(tb.sub(c(head), vs), c(0)))
    return tb.sub(tb.sub(tb.add(scaled_min(reach, n - 1), c(1 + head)), skipped), vs)


def _offset(e: tir.PrimExpr, value: int) -> tir.PrimExpr:
    """`e + value` as a SumExpr prints it: nothing for 0, `- |value|` for a negative one."""
    if value > 0:
        return _bin("add", e, _i64(value))
    return _bin("sub", e, _i64(-value)) if value < 0 else e


def _symbolic_count(v: tir.Var, n: tir.PrimExpr, k: int, s: int, head: int, tail: int,
                    include_pad: bool) -> tir.PrimExpr:
    """Elements of one undilated window along an axis of symbolic size n, as TVM prints
    TOPI's count (module docstring): the last index `n + tail - 1 - v * s` keeps n whole, and
    `min(a, n - 1 - x) + 1` becomes `min(a + 1, n - x)`; without head padding a strided
    window keeps `min(v * s + k, n) - v * s`, and `min(c, y + c)` is `min(0, y) + c`."""
    vs = v if s == 1 else _bin("mul", v, _i64(s))
    reach = k - 1 - head

    def last_minus(offset: int) -> tir.PrimExpr:
        """n + offset - v * s: a positive offset before the subtraction, a negative one after."""
        if offset > 0:
            return _bin("sub", _bin("add", n, _i64(offset)), vs)
        return _offset(_bin("sub", n, vs), offset)

    def min_plus(offset: int, base: int) -> tir.PrimExpr:
        """min(reach, n + offset - v * s) + base; min(c, y + c) + b -> min(0, y) + (b + c)."""
        if reach == offset:
            return _offset(_bin("min", _i64(0), last_minus(0)), base + reach)
        return _offset(_bin("min", _i64(reach), last_minus(offset)), base)

    if include_pad:
        if head == 0 and tail == 0:
            if s == 1 or k == 1:
                return _bin("min", _i64(k), last_minus(0))
            return _bin("sub", _bin("min", _bin("add", vs, _i64(k)), n), vs)
        return min_plus(tail - 1, 1 + head)
    if s == 1:
        if head == 0:
            return _bin("sub", _bin("min", _i64(k), last_minus(0)), _bin("max", _bin("sub", _i64(0), v), _i64(0)))
        return _bin("sub", min_plus(-1, 1 + head), _bin("max", _bin("sub", _i64(head), v), _i64(0)))
    if head == 0:
        return _bin("sub", _bin("add", _bin("mul", _bin("min", v, _i64(0)), _i64(s)),
                                _bin("min", _bin("add", vs, _i64(k)), n)), vs)
    skipped = (_bin("mul", _bin("max", _bin("sub", _i64(head // s), v), _i64(0)), _i64(s))
               if head % s == 0 and head // s <= 1 else _bin("max", _bin("sub", _i64(head), vs), _i64(0)))
    if reach == -1:  # min(x - 1, y - 1) + b -> min(x, y) + (b - 1)
        window_end = _offset(_bin("min", vs, n), head)
    else:
        window_end = _bin("add", _bin("min", _offset(vs, reach), _bin("sub", n, _i64(1))), _i64(1 + head))
    return _bin("sub", _bin("sub", window_end, skipped), vs)


def _jumps(v: tir.Var, s: int, d: int, head: int) -> tuple[tir.PrimExpr, int]:
    """The dilation steps skipped in the padded head, `max(Div(d - 1 + head - v * s, d), 0)`,
    as TVM prints it, and its scale (d, or s once the stride ratio is scaled out)."""
    def c(value: int) -> tir.PrimExpr:
        return tb.const(value, v.dtype)

    first, ratio = d - 1 + head, s // d
    vs = v if s == 1 else _bin("mul", v, c(s))
    if s % d == 0 and first % d == 0 and ratio > 1 and (first // d) % ratio == 0 and first // d // ratio <= 1:
        return _bin("max", _bin("sub", c(first // d // ratio), v), c(0)), s  # the ratio scaled out as well
    if s % d == 0 and first % d == 0:
        return _bin("max", _bin("sub", c(first // d), v if ratio == 1 else _bin("mul", v, c(ratio))), c(0)), d
    return _bin("max", _bin("div", _bin("sub", c(first), vs), c(d)), c(0)), d


def _symbolic_dilated_count(v: tir.Var, n: tir.Var, k: int, s: int, d: int, head: int, tail: int,
                            include_pad: bool) -> tir.PrimExpr:
    """`_dilated_count` along an axis of symbolic size n: the bound `n + tail - 1` (n - 1
    without padding counted) stays whole, so nothing is scaled out; `min(x, n - 1) + 1`
    becomes `min(x + 1, n)` (a strided window then keeps `min(v * s + r + 1, n) - v * s`), and a
    padding-free window with r == s keeps `min(v * s + s, b) - v * s`."""
    reach, base = (k - 1) * d - head, head
    offset = tail - 1 if include_pad else -1
    vs = v if s == 1 else _bin("mul", v, _i64(s))
    fold = base > 0 and offset == -base
    kept = s > 1 and head == 0 and reach == s

    def remaining(extra: int) -> tir.PrimExpr:
        """n + extra - v * s: a positive constant before the subtraction, a negative one after."""
        return _bin("sub", _bin("add", n, _i64(extra)), vs) if extra > 0 else _offset(_bin("sub", n, vs), extra)

    def window() -> tuple[tir.PrimExpr, bool]:
        """The window's sum and whether it already subtracts v * s (a kept `min(..) - v * s`)."""
        if k == 1 and head > 0 and (s == 1 or head % s):
            return _bin("min", _i64(0), remaining(offset + head)), False  # the head taken into the min
        if reach == offset:  # min(c, y + c) + b -> min(0, y) + (b + c)
            return _offset(_bin("min", _i64(0), _bin("sub", n, vs)), base + reach), False
        if kept:
            return _bin("sub", _bin("min", _bin("add", vs, _i64(reach)), _offset(n, offset)), vs), True
        if fold:
            if s == 1:
                return _bin("min", _i64(reach + base), _bin("sub", n, vs)), False
            return _bin("sub", _bin("min", _bin("add", vs, _i64(reach + base)), n), vs), True
        return _offset(_bin("min", _i64(reach), remaining(offset)), base), False

    if include_pad or s <= d:
        total, _ = window()
        if not include_pad:
            jumps, scale = _jumps(v, s, d, head)
            total = _bin("sub", total, _bin("mul", jumps, _i64(scale)))
    else:  # s > d: the window from v * s, its start subtracted last
        jumps, scale = _jumps(v, s, d, head)
        if k == 1 and head > 0 and head % s:  # the head taken into the min
            total = _bin("min", vs, _offset(n, offset + head))
        elif fold:
            total = _bin("min", _bin("add", vs, _i64(reach + base)), n)
        elif reach == offset:  # min(x - 1, y - 1) + b -> min(x, y) + (b - 1)
            total = _offset(_bin("min", vs, n), base + reach)
        else:
            total = _offset(_bin("min", _offset(vs, reach), _bin("sub", n, _i64(1))), base)
        total = _bin("sub", _bin("sub", total, _bin("mul", jumps, _i64(scale))), vs)
    return _bin("add", _bin("div", total, _i64(d)), _i64(1))


def _dilated_count(v: tir.Var, n: int, k: int, s: int, d: int, head: int, tail: int,
                   include_pad: bool) -> tir.PrimExpr:
    """Elements of one dilated window (d > 1) along one axis: TOPI's
    `(end - first) / d + 1` (truncating `/`), in the forms TVM's simplifier prints (module
    docstring). Built from raw nodes: the body is `prebuilt`, our simplify must not refold it."""
    def c(value: int) -> tir.PrimExpr:
        return tb.const(value, v.dtype)

    def scaled(var: tir.PrimExpr, scale: int) -> tir.PrimExpr:
        return var if scale == 1 else _bin("mul", var, c(scale))

    def plus(e: tir.PrimExpr, value: int) -> tir.PrimExpr:
        if value < 0:  # a pad beyond the window's reach: `v * s - 1`
            return _bin("sub", e, c(-value))
        return _bin("add", e, c(value)) if value else e

    def total(terms: list[tuple[tir.PrimExpr, int]], base: int, negatives: list[tuple[tir.PrimExpr, int]]):
        """sum(terms * scale) + base - sum(negatives * scale): a SumExpr as TVM prints it."""
        out = None
        for term, scale in terms:
            t = scaled(term, scale)
            out = t if out is None else _bin("add", out, t)
        if base:
            out = _bin("add", out, c(base))
        for term, scale in negatives:
            out = _bin("sub", out, scaled(term, scale))
        return out

    reach = (k - 1) * d - head
    bound = n + tail - 1 if include_pad else n - 1
    vs = scaled(v, s)
    # the stride scales the min out when it divides both constants, the offset at most one stride
    factored = s > 1 and reach % s == 0 and bound % s == 0 and reach // s <= 1
    base = head
    # a 1-element window (reach == -head) takes the head into the min, `min(0, b + head - v * s)`,
    # unless the stride divides the head but not the bound
    # (there the window from v * s, s > d, scales the stride out of `min(v * s, b + head)` alone)
    if k == 1 and head > 0 and not (head % s == 0 and bound % s != 0):
        reach, bound, base = 0, bound + head, 0
        factored_from_start = s > 1 and bound % s == 0
    else:
        factored_from_start = factored
    # b - v * s; from a bound of 0 (a size-1 axis), `v * -s`
    remaining = _bin("mul", v, c(-s)) if bound == 0 and s > 1 else _bin("sub", c(bound), vs)
    # `min(vs + s, bound) - vs` stays as it is when bound is not a multiple of the stride
    kept_sum = s > 1 and head == 0 and reach == s and bound % s != 0
    if include_pad:
        if kept_sum:
            terms, base, negs = [(_bin("min", plus(vs, reach), c(bound)), 1)], 0, [(v, s)]
        elif factored:
            terms, base, negs = [(_bin("min", c(reach // s), _bin("sub", c(bound // s), v)), s)], base, []
        else:
            terms, base, negs = [(_bin("min", c(reach), remaining), 1)], base, []
    else:
        jumps = _jumps(v, s, d, head)
        if s <= d:
            if kept_sum:
                terms, base, negs = [(_bin("min", plus(vs, reach), c(bound)), 1)], 0, [(v, s), jumps]
            elif factored:
                terms, base, negs = [(_bin("min", c(reach // s), _bin("sub", c(bound // s), v)), s)], base, [jumps]
            else:
                terms, base, negs = [(_bin("min", c(reach), remaining), 1)], base, [jumps]
        elif factored_from_start:
            terms, base, negs = [(_bin("min", plus(v, reach // s), c(bound // s)), s)], base, [jumps, (v, s)]
        else:
            terms, base, negs = [(_bin("min", plus(vs, reach), c(bound)), 1)], base, [jumps, (v, s)]
    if base % d == 0 and all(scale % d == 0 for _, scale in terms + negs):  # divides exactly
        return total([(t, sc // d) for t, sc in terms], base // d + 1, [(t, sc // d) for t, sc in negs])
    if not base and not negs and len(terms) == 1 and d % terms[0][1] == 0:  # Div(x * c, d * c): Div(x, d)
        return _bin("add", _bin("div", terms[0][0], c(d // terms[0][1])), c(1))
    common = math.gcd(d, base, *(scale for _, scale in terms))
    if not negs and base and common > 1:  # Div(x * 2 + 2, 4): Div(x + 1, 2)
        return _bin("add", _bin("div", total([(t, sc // common) for t, sc in terms], base // common, []),
                                c(d // common)), c(1))
    return _bin("add", _bin("div", total(terms, base, negs), c(d)), c(1))


def _const_bound(e: tir.PrimExpr) -> tuple[float, float]:
    """TVM's ConstIntBound of an integer expression whose variables are unbounded: the
    analyzer folds `max(count, 1)` to 1 where the count is at most 1 (a 1-D pool's window of one
    element at stride 1); a product of counts (2-D, 3-D) is unbounded and stays."""
    inf = float("inf")
    if isinstance(e, tir.IntImm):
        return e.value, e.value
    if isinstance(e, tir.Cast) and not tb.is_float(e.dtype) and not tb.is_float(e.value.dtype):
        return _const_bound(e.value)
    if not isinstance(e, tir.BinOp) or e.op not in ("add", "sub", "min", "max", "mul", "div", "floordiv"):
        return -inf, inf
    (alo, ahi), (blo, bhi) = _const_bound(e.a), _const_bound(e.b)
    if e.op in ("div", "floordiv"):  # by a positive constant: monotone
        if blo != bhi or blo <= 0:
            return -inf, inf
        divide = (lambda v: math.trunc(v / blo)) if e.op == "div" else (lambda v: v // blo)
        return tuple(v if v in (inf, -inf) else divide(v) for v in (alo, ahi))
    if e.op == "add":
        return alo + blo, ahi + bhi
    if e.op == "sub":
        return alo - bhi, ahi - blo
    if e.op in ("min", "max"):
        pick = min if e.op == "min" else max
        return pick(alo, blo), pick(ahi, bhi)
    if blo != bhi:  # a product of two non-constants
        return -inf, inf
    ends = [v * blo if v not in (inf, -inf) or blo != 0 else 0 for v in (alo, ahi)]
    return min(ends), max(ends)


def avg_pool(x: te.Tensor, kernel, stride, padding, count_include_pad: bool, axes: list[int],
             ceil_mode: bool = False, dilation=None) -> te.Tensor:
    """pool_impl_nd with pool_type avg (constant sizes). ceil_mode pads the tail by
    stride - 1 more and keeps the last window only if it starts inside the input or the
    head padding; the divisor is unchanged (TOPI subtracts that offset again)."""
    k = len(kernel)
    dilation = [int(dd) for dd in dilation] if dilation is not None else [1] * k
    pad_before, pad_after = [0] * len(x.shape), [0] * len(x.shape)
    out_shape = list(x.shape)
    raxes = [te.reduce_axis((0, int(kernel[i])), name=f"rv{i}") for i in range(k)]
    for i, ii in enumerate(axes):
        n, s, head = const_int(x.shape[ii]), int(stride[i]), int(padding[i])
        tail = int(padding[i + k]) + (s - 1 if ceil_mode else 0)
        pad_before[ii], pad_after[ii] = head, tail
        if n is None:
            out_shape[ii] = _out_size(x.shape[ii], int(kernel[i]), s, dilation[i], head, tail, ceil_mode)
            continue
        count = (n - (int(kernel[i]) - 1) * dilation[i] - 1 + head + tail) // s + 1
        if ceil_mode and (count - 1) * s >= n + head:
            count -= 1
        out_shape[ii] = tb.const(count, x.shape[ii].dtype)
    do_pad = any(pad_before) or any(pad_after)
    # TOPI pads with an int32 0: a narrower integer is widened to int32 (as TVM's if_then_else matches them)
    temp = topi_pad(x, pad_before, pad_after, tb.const(0, "int32"), "pad_temp") if do_pad else x

    def window_sum(output):
        indices = list(output)
        for i, ii in enumerate(axes):
            window, offset = tb.mul(output[ii], int(stride[i])), tb.mul(raxes[i].var, dilation[i])
            # the simplifier's canonical order: the term of larger scale first
            indices[ii] = tb.add(offset, window) if dilation[i] > int(stride[i]) else tb.add(window, offset)
        return te.sum(temp(*indices), axis=raxes)

    pool_sum = te.compute_ax(out_shape, window_sum, name="pool_sum", tag="pool_sum")
    symbolic = [const_int(x.shape[ii]) is None for ii in axes]
    # a dilated or symbolic divisor is built in TVM's printed form, which simplify would refold
    dilated = any(dd > 1 for dd in dilation) or any(symbolic)

    def average(output):
        count = None
        for i, ii in enumerate(axes):
            args = (output[ii], const_int(x.shape[ii]), int(kernel[i]), int(stride[i]))
            pads = (int(padding[i]), int(padding[i + k]), count_include_pad)
            if symbolic[i] and dilation[i] > 1:
                axis_count = _symbolic_dilated_count(output[ii], x.shape[ii], *args[2:], dilation[i], *pads)
            elif symbolic[i]:
                axis_count = _symbolic_count(output[ii], x.shape[ii], *args[2:], *pads)
            elif dilation[i] > 1:
                axis_count = _dilated_count(*args, dilation[i], *pads)
            else:
                axis_count = _avg_pool_count(*args, *pads)
                axis_count = simplify(axis_count) if dilated else axis_count
            mul, max_ = (partial(_bin, "mul"), partial(_bin, "max")) if dilated else (tb.mul, tb.max_)
            count = axis_count if count is None else mul(count, axis_count)
        if not count_include_pad:
            count = max_(count, tb.const(1, count.dtype))
            if len(axes) == 1 and _const_bound(count.a)[1] <= 1:  # max(count, 1) with count <= 1
                count = tb.const(1, count.dtype)
        total = pool_sum(*output)
        if not tb.is_float(x.dtype):  # C++'s div promotes an integer sum to the int64 count: an int64 result
            total = tb.cast(count.dtype, total)
        if _const_bound(count) == (1, 1):
            return total
        divisor = tb.cast(total.dtype, count)
        return _bin("div", total, divisor) if dilated else tb.div(total, divisor)

    avg = te.compute_ax(out_shape, average, name="pool_avg", tag="elemwise",
                        attrs={"schedule_rule": "meta_schedule.pool_avg"})
    avg.op.prebuilt = dilated  # the dilated divisor is in TVM's printed form already
    return avg


def _avg_pool(bb, call, dim: int):
    at = call.attrs
    axes = height_width_axes(at["layout"], "DHW"[3 - dim:])
    if at["out_layout"] != at["layout"] or axes is None:
        return call
    shape = call.args[0].struct_info.shape
    kernel, padding = [int(p) for p in at["pool_size"]], [int(p) for p in at["padding"]]
    strides = [int(s) for s in at["strides"]]
    dilation = [int(d) for d in at["dilation"]]
    if any(const_int(shape[ii]) is None and not isinstance(shape[ii], tir.Var) for ii in axes):
        return call  # a size expression other than a variable: forms not checked against TVM
    return bb.call_te(avg_pool, call.args[0], kernel=kernel, stride=strides,
                      padding=padding, count_include_pad=at["count_include_pad"], axes=axes,
                      ceil_mode=bool(at["ceil_mode"]), dilation=dilation,
                      primfunc_name_hint=f"avg_pool{dim}d")


def _max_pool(bb, call, dim: int):
    at = call.attrs
    axes = height_width_axes(at["layout"], "DHW"[3 - dim:])
    if at["out_layout"] != at["layout"] or axes is None:
        return call
    return bb.call_te(max_pool, call.args[0], kernel=list(at["pool_size"]), stride=list(at["strides"]),
                      dilation=list(at["dilation"]), padding=list(at["padding"]), ceil_mode=at["ceil_mode"],
                      axes=axes, primfunc_name_hint=f"max_pool{dim}d")


for _dim in (1, 2, 3):  # TOPI's pool1d, pool2d and pool3d are all pool_impl_nd over the window axes
    register_legalize(f"relax.nn.avg_pool{_dim}d", lambda bb, call, dim=_dim: _avg_pool(bb, call, dim))
    register_legalize(f"relax.nn.max_pool{_dim}d", lambda bb, call, dim=_dim: _max_pool(bb, call, dim))


def _adaptive_avg_pool(bb, call, dim: int):
    at = call.attrs
    axes = height_width_axes(at["layout"], "DHW"[3 - dim:])
    if at["out_layout"] != at["layout"] or axes is None:
        return call
    if dim == 1 and at["output_size"] is None:
        return call  # TVM 0.27's legalization hands TOPI's adaptive_pool1d the width, not a list, and raises
    shape = call.args[0].struct_info.shape
    in_sizes = [shape[i] for i in axes]
    out_sizes = list(at["output_size"]) if at["output_size"] is not None else list(in_sizes)
    out_sizes = [o if o is n or const_int(o) is None else const_int(o) for n, o in zip(in_sizes, out_sizes)]
    if any(not (isinstance(n, tir.Var) and o is n) and (const_int(o) is None or const_int(o) <= 0 or
                                                       (const_int(n) is None and not isinstance(n, tir.Var)))
           for n, o in zip(in_sizes, out_sizes)):
        return call  # a size expression other than a variable (module docstring)
    return bb.call_te(adaptive_avg_pool, call.args[0], out_sizes, axes, primfunc_name_hint=f"adaptive_avg_pool{dim}d")


for _dim in (1, 2, 3):  # TOPI's adaptive_pool1d, adaptive_pool and adaptive_pool3d: adaptive_pool_impl
    register_legalize(f"relax.nn.adaptive_avg_pool{_dim}d",
                      lambda bb, call, dim=_dim: _adaptive_avg_pool(bb, call, dim))
