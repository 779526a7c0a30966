"""Reductions: TOPI's C++ include/tvm/topi/reduction.h and TVM's legalize_ops/statistical.py, search.py.

    sum max min prod    one `<x>_red` block (x: the input's name) over the kept axes `ax0, ...`
                        and one reduce axis `k<i>` per reduced dim i (sorted, duplicates
                        dropped); keepdims keeps the reduced dims as extent 1
    mean                `<x>_red` then `T_divide` by the product of the reduced dims
    variance            mean with keepdims, `T_subtract`, `T_multiply` (dev * dev), then its mean
    argmax argmin       a tuple reduction `<x>_red_temp` (index, value) into two buffers
                        `<x>_red_temp_v0/_v1`, combined through `T.let` bindings (TVM's
                        CreatePrimFunc for several buffers), then `<x>_red` copies the index
    sum/prod over a constant 0-extent dim: `T_full` of the identity (TVM's zero_dim_identity)

REDUCERS is the table of the one-buffer reductions: Relax name -> (TE reducer, identity
for empty reductions or None).
"""

from __future__ import annotations

from collections.abc import Callable

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..simplify import normalize_index_dtype, simplify
from . import register_legalize
from .broadcast import topi_binary
from .canonical import simplify_index

prod_reducer = te.comm_reducer("prod", tb.mul, lambda dtype: tb.const(1, dtype))
any_reducer = te.comm_reducer("any", tb.logical_or, lambda dtype: tb.const(False, "bool"))

divide = topi_binary("divide")
subtract = topi_binary("subtract")
multiply = topi_binary("multiply")


def real_axis(ndim: int, axis) -> list[int]:
    """TOPI's GetRealAxis: every dim for None, else sorted, unique, non-negative."""
    if axis is None:
        return list(range(ndim))
    return sorted({int(a) + ndim if int(a) < 0 else int(a) for a in axis})


def reduce_axes(axes: list[int], data: te.Tensor) -> list:
    return [te.reduce_axis((0, data.shape[i]), name=f"k{i}") for i in axes]


def target_shape(axes: list[int], data: te.Tensor, keepdims: bool) -> list:
    if keepdims:
        return [tb.const(1, "int64") if i in axes else d for i, d in enumerate(data.shape)]
    return [d for i, d in enumerate(data.shape) if i not in axes]


def comm_reduce(data: te.Tensor, axis, reducer: Callable, keepdims: bool = False) -> te.Tensor:
    """TOPI's CommReduce: `<data>_red` over the reduced dims (of a 0-d tensor: a copy)."""
    if not data.shape:
        return te.compute_ax((), lambda ax: data(), name=data.name + "_red", tag="comm_reduce")
    axes = real_axis(len(data.shape), axis)
    raxes = reduce_axes(axes, data)

    def element(indices):
        eval_range, arg, red = [], 0, 0
        for i in range(len(data.shape)):
            if i in axes:
                eval_range.append(raxes[red].var)
                red += 1
                arg += keepdims  # a kept dim has an output index that the input does not use
            else:
                eval_range.append(indices[arg])
                arg += 1
        return reducer(data(*eval_range), axis=raxes)

    return te.compute_ax(target_shape(axes, data, keepdims), element, name=data.name + "_red", tag="comm_reduce")


def topi_sum(data, axis=None, keepdims=False):
    """A sum; TOPI's sum of booleans is `any`."""
    return comm_reduce(data, axis, any_reducer if data.dtype == "bool" else te.sum, keepdims)


def topi_max(data, axis=None, keepdims=False):
    return comm_reduce(data, axis, te.max, keepdims)


def topi_min(data, axis=None, keepdims=False):
    return comm_reduce(data, axis, te.min, keepdims)


def topi_prod(data, axis=None, keepdims=False):
    return comm_reduce(data, axis, prod_reducer, keepdims)


def full(shape, dtype: str, fill_value) -> te.Tensor:
    """TOPI's C++ full: `T_full`."""
    value = tb.const(fill_value, dtype)
    return te.compute_ax(shape, lambda ax: value, name="T_full", tag="elemwise")


def _shape_prod(x: te.Tensor, axis) -> tir.PrimExpr:
    prod = tb.const(1, "int32")
    for dim in (list(axis) if axis is not None else range(len(x.shape))):
        prod = tb.mul(prod, x.shape[dim])
    return prod


def mean(x: te.Tensor, axis, keepdims: bool) -> te.Tensor:
    """TVM's _te_mean: the sum divided by the number of reduced elements."""
    return divide(topi_sum(x, axis, keepdims), _shape_prod(x, axis))


def variance(x: te.Tensor, axis, keepdims: bool) -> te.Tensor:
    dev = subtract(x, mean(x, axis, True))
    return mean(multiply(dev, dev), axis, keepdims)


# ----------------------------------------------------------------------------- tuple reductions: argmax / argmin


class TupleReduceOp(te.ComputeOp):
    """A reduction of several values at once into several buffers (TOPI's tuple reducers:
    CommReduceIdx's (index, value), MakeTupleSumReducer's sums): one sblock, its outputs combined
    through `T.let` bindings. A subclass gives `sources` (one expression per output, in the op's
    axis variables), `combine(lhs, rhs)`, `identity(dtypes)` and `simplified_sources`."""

    sources: list

    def simplified_sources(self, sources: list) -> list:
        return [simplify(s) for s in sources]

    def make_stmt(self, out_bufs: list, buffers: dict, names, index_dtype: str) -> tir.Stmt:
        """CreatePrimFunc's GenerateBodyStmt for several buffers."""
        vmap: dict = {}
        loops, block_iters, store = [], [], []
        for iv in list(self.axis) + list(self.reduce_axis):
            loop_var, block_var = tir.Var(iv.var.name, iv.var.dtype), tir.Var("v_" + iv.var.name, iv.var.dtype)
            dom = tir.Range(simplify(iv.dom.min), simplify(iv.dom.extent))
            loops.append((loop_var, dom))
            block_iters.append(tir.IterVar(block_var, dom, iv.iter_type))
            if iv.iter_type != tir.COMM_REDUCE:
                store.append(block_var)
            vmap[iv.var] = block_var
        lhs = [tir.BufferLoad(b, store) for b in out_bufs]
        rhs = self.simplified_sources([te._substitute(s, vmap, buffers) for s in self.sources])
        temps = [tir.Var("v_" + b.name, b.dtype) for b in out_bufs]
        body: tir.Stmt = tir.seq([tir.BufferStore(b, t, store) for b, t in zip(out_bufs, temps)])
        for t, value in reversed(list(zip(temps, self.combine(lhs, rhs)))):
            body = tir.LetStmt(t, normalize_index_dtype(value, index_dtype), body)
        init = tir.seq([tir.BufferStore(b, v, store)
                        for b, v in zip(out_bufs, self.identity([b.dtype for b in out_bufs]))])
        reads: dict = {}
        for r in rhs:
            _collect_reads(r, reads)
        read_regions = tuple(te._region(buf, pts) for buf, pts in reads.values())
        writes = tuple(te._region(b, [tuple(store)]) for b in out_bufs)
        block = tir.SBlock(names.fresh(self.name), block_iters, read_regions, writes, body, init)
        stmt: tir.Stmt = tir.SBlockRealize([lv for lv, _ in loops], tb.const(True, "bool"), block)
        for loop_var, dom in reversed(loops):
            stmt = tir.For(loop_var, dom.min, dom.extent, "serial", stmt)
        return stmt


class _ArgReduceOp(TupleReduceOp):
    """The (index, value) tuple reduction of TOPI's CommReduceIdx: two outputs, one sblock."""

    def __init__(self, name: str, axis: list, reduce_axis: list, index: tir.PrimExpr, value: te.ProducerLoad,
                 is_argmax: bool) -> None:
        self.is_argmax = is_argmax
        self.sources = [index, value]
        super().__init__(name, "comm_reduce_idx", {}, axis, reduce_axis, [index, value])

    def input_tensors(self) -> list[te.Tensor]:
        return [self.sources[1].tensor]

    def combine(self, lhs: list, rhs: list) -> list:
        (lhs_idx, lhs_val), (rhs_idx, rhs_val) = lhs, rhs
        better = tb.gt(lhs_val, rhs_val) if self.is_argmax else tb.lt(lhs_val, rhs_val)
        update_index = tb.logical_or(better, tb.logical_and(tb.eq(lhs_val, rhs_val), tb.lt(lhs_idx, rhs_idx)))
        return [tb.select(update_index, lhs_idx, rhs_idx), tb.select(better, lhs_val, rhs_val)]

    def identity(self, dtypes: list[str]) -> list:
        worst = tb.min_value(dtypes[1]) if self.is_argmax else tb.max_value(dtypes[1])
        return [tb.const(-1, dtypes[0]), worst]

    def simplified_sources(self, sources: list) -> list:
        # CreatePrimFunc simplifies each source with the full analyzer: the raveled index of a
        # reduction over several axes prints expanded, `v_k0 * 144 + v_k1 * 36 + v_k2 * 6 + v_k3`
        index, value = sources
        return [simplify_index(index), simplify(value)]


def _collect_reads(e, table: dict) -> None:
    if isinstance(e, tir.BufferLoad):
        te._update(table, e.buffer, e.indices)
        for i in e.indices:
            _collect_reads(i, table)
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            _collect_reads(getattr(e, f), table)
    elif isinstance(e, tuple):
        for x in e:
            _collect_reads(x, table)


def _ravel_index(indices: list, shape: list) -> tir.PrimExpr:
    idx = indices[0]
    for i, shape_i in zip(indices[1:], shape[1:]):
        idx = tb.add(tb.mul(idx, shape_i), i)
    return idx


def comm_reduce_idx(data: te.Tensor, axis, keepdims: bool, is_argmax: bool) -> te.Tensor:
    """TOPI's CommReduceIdx with the argmax/argmin reducer (first index on ties)."""
    axes = real_axis(len(data.shape), axis)
    raxes = reduce_axes(axes, data)
    shape = target_shape(axes, data, keepdims)
    out_axes = [te._iter_var(f"ax{i}", d, tir.DATA_PAR) for i, d in enumerate(shape)]
    eval_range, arg, red = [], 0, 0
    for i in range(len(data.shape)):
        if i in axes:
            eval_range.append(raxes[red].var)
            red += 1
        elif keepdims:
            eval_range.append(out_axes[i].var)
        else:
            eval_range.append(out_axes[arg].var)
            arg += 1
    index = _ravel_index([r.var for r in raxes], [data.shape[i] for i in axes])
    op = _ArgReduceOp(data.name + "_red_temp", out_axes, raxes, index, data(*eval_range), is_argmax)
    temp_idx = op.outputs[0]
    return te.compute_ax(shape, lambda ax: temp_idx(*ax), name=data.name + "_red", tag="comm_reduce_idx")


def argmax(x, axis=None, keepdims=False):
    return comm_reduce_idx(x, [axis] if axis is not None else None, keepdims, True)


def argmin(x, axis=None, keepdims=False):
    return comm_reduce_idx(x, [axis] if axis is not None else None, keepdims, False)


# ----------------------------------------------------------------------------- legalizations

# relax name -> (TOPI function, identity filled in for a constant empty reduction, or None)
REDUCERS: dict[str, tuple[Callable, Callable[[str], object] | None]] = {
    "relax.sum":  (topi_sum,  lambda dtype: 0),
    "relax.max":  (topi_max,  None),
    "relax.min":  (topi_min,  None),
    "relax.prod": (topi_prod, lambda dtype: True if dtype == "bool" else 1),
}


def _has_const_zero_reduction_dim(call) -> bool:
    shape = call.args[0].struct_info.shape
    axes = real_axis(len(shape), call.attrs["axis"])
    return any(isinstance(shape[i], int) and shape[i] == 0 or isinstance(shape[i], tir.IntImm) and shape[i].value == 0
               for i in axes)


def _statistical(te_func: Callable, zero_dim_identity) -> Callable:
    name = te_func.__name__.removeprefix("topi_")

    def legalize(bb, call):
        if zero_dim_identity is not None and _has_const_zero_reduction_dim(call):
            out = call.struct_info
            return bb.call_te(full, list(out.shape), out.dtype, zero_dim_identity(out.dtype))
        return bb.call_te(te_func, call.args[0], call.attrs["axis"], call.attrs["keepdims"],
                          primfunc_name_hint=name)

    return legalize


for _relax, (_func, _identity) in REDUCERS.items():
    register_legalize(_relax, _statistical(_func, _identity))


def _with_axis(te_func: Callable, name: str) -> Callable:
    return lambda bb, call: bb.call_te(te_func, call.args[0], call.attrs["axis"], call.attrs["keepdims"],
                                       primfunc_name_hint=name)


register_legalize("relax.mean", _with_axis(mean, "mean"))
register_legalize("relax.variance", _with_axis(variance, "variance"))
register_legalize("relax.argmax", _with_axis(argmax, "argmax"))
register_legalize("relax.argmin", _with_axis(argmin, "argmin"))
