"""Index-driven operators: R.flip, R.gather_nd, R.einsum (TOPI's C++ computes as TVM 0.27's
LegalizeOps calls them: python/tvm/relax/transform/legalize_ops/manipulate.py, linear_algebra.py).

    flip       flip (T_reverse_sequence)    x[..., dim - 1 - ax, ...]   (topi.flip: reverse_sequence
                                                                         without sequence lengths)
    gather_nd  te_gather_nd (T_transpose,   Relax's index tuples lie on the last axis of `indices`;
               T_gather_nd)                 TVM transposes them to the front, then TOPI's gather_nd
                                            reads data[ax<batch>, idx[0, ax..], ..., idx[m-1, ax..], ax<rest>]
    einsum     einsum (T_einsum)            one reduction over the summed labels, sorted, named after
                                            them: T_einsum[ax..] += x0[..] * x1[..] * ...

R.scatter_elements and R.scatter_nd stay Relax calls: TOPI builds them as `te.extern` ir_builder
programs (opaque `scatter_*_generic` sblocks over flat buffers with symbolic `elem_offset`s), which
this layer does not model; see docs/passes.md.
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import broadcast_shape
from .common import const_int
from .transform import _load, _tuple_fields, transpose

# ----------------------------------------------------------------------------- flip


def flip(x: te.Tensor, axis: int) -> te.Tensor:
    """topi.flip: TOPI's reverse_sequence with no sequence lengths, reversing `axis`."""
    ndim = len(x.shape)
    axis = axis + ndim if axis < 0 else axis

    def element(ax):
        return _load(x, [tb.sub(tb.sub(x.shape[i], 1), a) if i == axis else a for i, a in enumerate(ax)])

    return te.compute_ax(x.shape, element, name="T_reverse_sequence", tag="injective")


@register_legalize("relax.flip")
def _flip(bb, call):
    return bb.call_te(flip, call.args[0], int(call.attrs["axis"]))


# ----------------------------------------------------------------------------- gather_nd


def gather_nd(data: te.Tensor, indices: te.Tensor, batch_dims: int = 0) -> te.Tensor:
    """TOPI's gather_nd: `indices` of shape (M, Y...) index the M dims of data after `batch_dims`."""
    ndim_d, ndim_i = len(data.shape), len(indices.shape)
    m = const_int(indices.shape[0])
    out_shape = list(indices.shape[1:]) + list(data.shape[m + batch_dims:])

    def element(ax):
        real = list(ax[:batch_dims])
        for i in range(m):
            real.append(indices(tb.const(i, "int64"), *ax[:ndim_i - 1]))
        if len(real) < ndim_d:
            real.extend(ax[ndim_i - 1:])
        return data(*real)

    return te.compute_ax(out_shape, element, name="T_gather_nd", tag="injective")


def te_gather_nd(data: te.Tensor, indices: te.Tensor, batch_dims: int) -> te.Tensor:
    """TVM's Relax legalization: the index tuples moved from the last axis to the first."""
    ndim = len(indices.shape)
    return gather_nd(data, transpose(indices, [ndim - 1, *range(ndim - 1)]), batch_dims)


@register_legalize("relax.gather_nd")
def _gather_nd(bb, call):
    if const_int(call.args[1].struct_info.shape[-1]) is None:
        return call  # TOPI needs the index length as a constant
    return bb.call_te(te_gather_nd, call.args[0], call.args[1], int(call.attrs["batch_dims"]))


# ----------------------------------------------------------------------------- einsum

_ELLIPSIS = "\0"  # sorts before every letter, as TOPI's kEllipsis


def parse_equation(subscripts: str) -> tuple[list[list[str]], list[str]]:
    """TOPI's EinsumEquation::FromString: operand subscripts and the explicit output (implicit
    mode: the ellipsis, then the labels used once, sorted)."""
    inputs: list[list[str]] = []
    current: list[str] = []
    arrow = False
    i = 0
    while i < len(subscripts):
        ch = subscripts[i]
        if ch == "-":
            arrow = True
            i += 1
            inputs.append(current)
            current = []
        elif ch == ",":
            inputs.append(current)
            current = []
        elif ch == ".":
            current.append(_ELLIPSIS)
            i += 2
        elif ch != " ":
            current.append(ch)
        i += 1
    if arrow:
        return inputs, current
    inputs.append(current)
    counts: dict[str, int] = {}
    for sub in inputs:
        for label in sub:
            counts[label] = counts.get(label, 0) + 1
    return inputs, [label for label in sorted(counts) if label == _ELLIPSIS or counts[label] == 1]


def _broadcast_extent(a, b):
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return a if ca == cb else tb.const(max(ca, cb), "int64")  # int32 in TOPI, int64 once normalised
    if ca is not None:
        return b
    if cb is not None:
        return a
    return tb.max_(a, b)


def _broadcast_index(index, extent, broadcast_extent):
    if const_int(extent) == 1 and const_int(broadcast_extent) != 1:
        return tb.const(0, index.dtype)
    return index


def einsum(subscripts: str, *inputs: te.Tensor) -> te.Tensor:
    """TOPI's einsum (src/topi/einsum.cc): one compute `T_einsum` over the output labels (axes
    ax0, ax1, ...) reducing the other labels in sorted order (axes named after the labels; an
    ellipsis is kept in the output); operands broadcast along extent-1 dims."""
    equation_inputs, output = parse_equation(subscripts)
    extents: dict[str, tir.PrimExpr] = {}
    ellipsis_shapes = []
    for sub, x in zip(equation_inputs, inputs):
        dim = 0
        for label in sub:
            if label == _ELLIPSIS:
                n = len(x.shape) - len(sub) + 1
                ellipsis_shapes.append(list(x.shape[dim:dim + n]))
                dim += n
            else:
                extents[label] = _broadcast_extent(extents[label], x.shape[dim]) if label in extents \
                    else x.shape[dim]
                dim += 1
    ellipsis_shape: list = []
    if ellipsis_shapes:
        ellipsis_shape = max(ellipsis_shapes, key=len)
        for shape in ellipsis_shapes:
            ellipsis_shape = list(broadcast_shape(ellipsis_shape, shape)[0])
    out_shape: list = []
    for label in output:
        out_shape.extend(ellipsis_shape if label == _ELLIPSIS else [extents[label]])

    def element(ax):
        index: dict[str, tir.PrimExpr] = {}
        ellipsis_index: list = []
        i = 0
        for label in output:
            if label == _ELLIPSIS:
                ellipsis_index = list(ax[i:i + len(ellipsis_shape)])
                i += len(ellipsis_shape)
            else:
                index[label] = ax[i]
                i += 1
        reduced = sorted({label for sub in equation_inputs for label in sub} - set(output))
        reduce_axes = []
        for label in reduced:
            if label == _ELLIPSIS:  # TOPI's int32 `k` axes over int64 extents: TVM 0.27 fails
                raise NotImplementedError("einsum summing its ellipsis")
            reduce_axes.append(te.reduce_axis((0, extents[label]), name=label))
            index[label] = reduce_axes[-1].var
        result = None
        for sub, x in zip(equation_inputs, inputs):
            idx, dim = [], 0
            for label in sub:
                if label == _ELLIPSIS:
                    n = len(x.shape) - len(sub) + 1
                    for j in range(len(ellipsis_index) - n, len(ellipsis_index)):
                        idx.append(_broadcast_index(ellipsis_index[j], x.shape[dim], ellipsis_shape[j]))
                        dim += 1
                else:
                    idx.append(_broadcast_index(index[label], x.shape[dim], extents[label]))
                    dim += 1
            term = x(*idx)
            result = term if result is None else tb.mul(result, term)
        return te.sum(result, axis=reduce_axes) if reduce_axes else result

    return te.compute_ax(out_shape, element, name="T_einsum", tag="einsum")


@register_legalize("relax.einsum")
def _einsum(bb, call):
    fields = _tuple_fields(call.args[0], bb)
    inputs, output = parse_equation(call.attrs["subscripts"])
    if fields is None or any(_ELLIPSIS in sub for sub in inputs) and _ELLIPSIS not in output:
        return call  # an ellipsis summed away: TVM 0.27 fails (int32 reduce axes over int64 extents)
    return bb.call_te(einsum, call.attrs["subscripts"], *fields)


__all__ = ["einsum", "flip", "gather_nd", "parse_equation", "te_gather_nd"]
