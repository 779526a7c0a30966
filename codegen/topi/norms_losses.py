"""Group and instance normalisation, softplus, std, median, the binary log_add_exp / atan2 and
the losses: TOPI's C++ include/tvm/topi/nn/{group_norm,instance_norm}.h, nn.h (nll_loss),
broadcast.h, python/tvm/topi/nn/elemwise.py (softplus), and TVM 0.27's
legalize_ops/{nn,statistical,binary}.py.

    group_norm     `T_reshape` of the data to (..., G, C / G, ...) (float16: `T_cast` to float32),
                   one tuple reduction `<x>_red_temp` (sum of x and of x * x, over the group axis
                   and `axes`: buffers `<x>_red_temp_v0/_v1`, combined through `T.let` bindings),
                   `T_reshape` of gamma and beta to (G, C / G), `T_group_norm` (mean and variance
                   as E[x], E[x^2] - E[x]^2; float16 cast back before the scale and shift), and
                   a `T_reshape` back to the data's shape
    instance_norm  `<x>_red_temp` over `axes` (float16: casts inside the sums), then
                   `T_instance_norm` with gamma and beta per channel
    softplus       one `compute`: Select(threshold < beta * x, x, 1 / beta * log(1 + exp(beta * x)))
                   (beta 1: no multiplications)
    std            variance's blocks (`<x>_red`, `T_divide`, `T_subtract`, `T_multiply`,
                   `T_multiply_red`, `T_divide_1`) and a `compute` of its sqrt
    median         `T_full` of the lower middle position, TOPI's CPU argsort (an extern calling
                   `tvm.contrib.sort.argsort`), `T_gather`s of the sorted values and of the
                   positions there, `T_squeeze` (over all elements: a `T_reshape` to 1-D first)
    log_add_exp    `T_log_add_exp`: log(exp(a) + exp(b)), as TOPI (overflows where exp does)
    atan2          `T_atan2`: T.atan2(a, b)
    cross_entropy_with_logits
                   `T_multiply`, its sum `T_multiply_red`, times -1 (`T_multiply_1`), divided by
                   the batch size from rank 2 (`T_divide`)
    nll_loss       `nll_loss` blocks over the targets' shape (Select(t != ignore_index,
                   -x[n, t, ...] * w[t], 0)), summed (`nll_loss_red`); "mean" divides by the sum of
                   the weights taken; without weights TVM's `nll_loss_without_weight` (a `T_full`
                   of ones)
TVM's group_norm and instance_norm legalizations ignore `center` and `scale` (gamma and beta are
always applied) and its TOPI computes accept float32 and float16 only, instance_norm a
non-negative channel_axis only: other forms are left as calls here (TVM's LegalizeOps fails on
them), as are log_add_exp of integers, cross_entropy_with_logits of integers from rank 2 and the
median forms TVM mistypes (relax.median's legalization says which).
"""

from __future__ import annotations

import numpy as np

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import _legalize_binary, topi_binary, with_broadcast
from .creation import full as topi_full
from .nms import argsort
from .norm import _cpp_cast, float_const
from .reduce import TupleReduceOp, real_axis, reduce_axes, target_shape, topi_sum, variance
from .transform import gather, reshape, squeeze


class _TupleSumOp(TupleReduceOp):
    """TOPI's MakeTupleSumReducer over (x, x * x): two outputs of one sblock."""

    def __init__(self, name: str, axis: list, reduce_axis: list, value: tir.PrimExpr, square: tir.PrimExpr) -> None:
        self.sources = [value, square]
        super().__init__(name, "comm_reduce", {}, axis, reduce_axis, [value, square])

    def combine(self, lhs: list, rhs: list) -> list:
        return [tb.add(a, b) for a, b in zip(lhs, rhs)]

    def identity(self, dtypes: list[str]) -> list:
        return [tb.const(0, d) for d in dtypes]


def _sum_and_square_sum(data: te.Tensor, name: str, axes: list[int], load) -> tuple[te.Tensor, te.Tensor]:
    """`<name>_red_temp`: the sums of load(idx) and load(idx) squared over `axes` of `data`."""
    raxes = reduce_axes(axes, data)
    shape = target_shape(axes, data, False)  # never empty: the channel (or group) axis is kept
    out_axes = [te._iter_var(f"ax{i}", d, tir.DATA_PAR) for i, d in enumerate(shape)]
    kept = iter(out_axes)
    red = iter(raxes)
    idx = [next(red).var if i in axes else next(kept).var for i in range(len(data.shape))]
    value, square = load(idx)
    op = _TupleSumOp(name + "_red_temp", out_axes, raxes, value, square)
    return op.outputs[0], op.outputs[1]


def _kept(indices, axes: list[int]) -> list:
    return [v for i, v in enumerate(indices) if i not in axes]


def _normalize(x, temp_x, temp_x2, extent, epsilon_dtype: str, epsilon: float):
    mean = tb.div(temp_x, extent)
    var = tb.sub(tb.div(temp_x2, extent), tb.mul(mean, mean))
    return tb.mul(tb.sub(x, mean), tb.call("rsqrt", tb.add(var, float_const(epsilon, epsilon_dtype))))


def group_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, num_groups: int, channel_axis: int, axes,
               epsilon: float) -> te.Tensor:
    f16 = data.dtype == "float16"
    ndim = len(data.shape)
    channel = real_axis(ndim, [channel_axis])[0]
    group_size = tb.floordiv(data.shape[channel], num_groups)
    new_shape = list(data.shape[:channel]) + [num_groups, group_size] + list(data.shape[channel + 1:])
    reshaped = reshape(data, new_shape)
    if f16:
        reshaped = _cpp_cast(reshaped, "float32")
    gamma_r, beta_r = reshape(gamma, [num_groups, group_size]), reshape(beta, [num_groups, group_size])
    new_axes = sorted([channel + 1] + [a + (a > channel) for a in real_axis(ndim, axes)])

    def load(idx):
        v = reshaped(*idx)
        return v, tb.mul(v, v)

    temp_x, temp_x2 = _sum_and_square_sum(reshaped, data.name, new_axes, load)
    extent = tb.const(1.0, "float32")
    for a in new_axes:
        extent = tb.mul(extent, reshaped.shape[a])

    def element(indices):
        kept = _kept(indices, new_axes)
        # TOPI makes epsilon a data.dtype constant; float16 + float32 folds to float32, value kept
        out = _normalize(reshaped(*indices), temp_x(*kept), temp_x2(*kept), extent, temp_x.dtype, epsilon)
        if f16:
            out = tb.cast("float16", out)
        gamma_idx = (indices[channel], indices[channel + 1])
        return tb.add(tb.mul(out, gamma_r(*gamma_idx)), beta_r(*gamma_idx))

    out = te.compute_ax(reshaped.shape, element, name="T_group_norm", tag="injective")
    return reshape(out, data.shape)


def instance_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, channel_axis: int, axis,
                  epsilon: float) -> te.Tensor:
    f16 = data.dtype == "float16"
    axes = real_axis(len(data.shape), axis)

    def load(idx):
        v = data(*idx)
        if f16:
            return tb.cast("float32", v), tb.mul(tb.cast("float32", v), tb.cast("float32", v))
        return v, tb.mul(v, v)

    temp_x, temp_x2 = _sum_and_square_sum(data, data.name, axes, load)
    extent = tb.const(1, data.dtype)
    for a in axes:
        extent = tb.mul(extent, data.shape[a])

    def element(indices):
        kept = _kept(indices, axes)
        x = tb.cast("float32", data(*indices)) if f16 else data(*indices)
        out = _normalize(x, temp_x(*kept), temp_x2(*kept), extent, temp_x.dtype, epsilon)
        if f16:
            out = tb.cast("float16", out)
        channel = indices[channel_axis]
        return tb.add(tb.mul(out, gamma(channel)), beta(channel))

    return te.compute_ax(data.shape, element, name="T_instance_norm", tag="injective")


def _float16_or_32(call) -> bool:
    return all(a.struct_info.dtype in ("float32", "float16") for a in call.args)


@register_legalize("relax.nn.group_norm")
def _group_norm(bb, call):
    if not _float16_or_32(call):
        return call
    at = call.attrs
    return bb.call_te(group_norm, call.args[0], call.args[1], call.args[2], at["num_groups"], at["channel_axis"],
                      at["axes"], at["epsilon"], primfunc_name_hint="group_norm")


@register_legalize("relax.nn.instance_norm")
def _instance_norm(bb, call):
    if not _float16_or_32(call) or call.attrs["channel_axis"] < 0:
        return call  # TOPI indexes the output axes with channel_axis as given: TVM fails on -1
    at = call.attrs
    return bb.call_te(instance_norm, data=call.args[0], gamma=call.args[1], beta=call.args[2],
                      channel_axis=at["channel_axis"], axis=at["axes"], epsilon=at["epsilon"],
                      primfunc_name_hint="instance_norm")


def softplus(x: te.Tensor, beta: float = 1.0, threshold: float = 20.0) -> te.Tensor:
    """TOPI's python softplus: Select(beta * x > threshold, x, (1 / beta) * log(1 + exp(beta * x)))
    (TVM's folding: multiplications by 1 vanish; float16's 1 / beta stays a division)."""
    dtype = x.dtype
    b, t = float_const(beta, dtype), float_const(threshold, dtype)

    def element(*i):
        bx = tb.mul(b, x(*i))
        soft = tb.mul(tb.div(tb.const(1, dtype), b), tb.call("log", tb.add(tb.const(1, dtype), tb.call("exp", bx))))
        return tb.select(tb.gt(bx, t), x(*i), soft)

    return te.compute(x.shape, element)


register_legalize("relax.nn.softplus", lambda bb, call: bb.call_te(softplus, call.args[0], call.attrs["beta"],
                                                                   call.attrs["threshold"],
                                                                   primfunc_name_hint="softplus"))


def std(x: te.Tensor, axis, keepdims: bool) -> te.Tensor:
    """topi.sqrt of the variance; a signed-integer variance (int64) is cast to float32 first."""
    var = variance(x, axis, keepdims)
    if tb.is_int(var.dtype):
        var = te.compute(var.shape, lambda *i: tb.cast("float32", var(*i)))
    return te.compute(var.shape, lambda *i: tb.call("sqrt", var(*i)))


register_legalize("relax.std", lambda bb, call: bb.call_te(std, call.args[0], call.attrs["axis"],
                                                           call.attrs["keepdims"], primfunc_name_hint="std"))


def log_add_exp(lhs, rhs) -> te.Tensor:
    """TOPI's log_add_exp: tirx.logaddexp, i.e. log(exp(a) + exp(b)) (floats only)."""
    return with_broadcast(lambda a, b: tb.call("log", tb.add(tb.call("exp", a), tb.call("exp", b))), lhs, rhs,
                          "T_log_add_exp")


def atan2(lhs, rhs) -> te.Tensor:
    return with_broadcast(lambda a, b: tb.call("atan2", a, b), lhs, rhs, "T_atan2")


@register_legalize("relax.log_add_exp")
def _log_add_exp(bb, call):
    if not all(tb.is_float(a.struct_info.dtype) for a in call.args):
        return call  # tirx.logaddexp rejects integers: TVM's LegalizeOps fails; the call stays
    return _legalize_binary(log_add_exp)(bb, call)


register_legalize("relax.atan2", _legalize_binary(atan2))


# ----------------------------------------------------------------------------- losses

_multiply, _divide = topi_binary("multiply"), topi_binary("divide")


def cross_entropy_with_logits(x: te.Tensor, y: te.Tensor) -> te.Tensor:
    """TVM's te_cross_entropy_with_logits: -sum(x * y), divided by the batch size from rank 2."""
    loss = _multiply(topi_sum(_multiply(x, y)), tb.const(-1, x.dtype))  # te's unary minus: * -1
    return _divide(loss, x.shape[0]) if len(x.shape) > 1 else loss


@register_legalize("relax.nn.cross_entropy_with_logits")
def _cross_entropy_with_logits(bb, call):
    x = call.args[0].struct_info
    if not tb.is_float(x.dtype) and x.ndim > 1:
        return call  # te's `/` of integer tensors is ambiguous: TVM's LegalizeOps fails
    return bb.call_te(cross_entropy_with_logits, call.args[0], call.args[1],
                      primfunc_name_hint="cross_entropy_with_logits")


def nll_loss(predictions: te.Tensor, targets: te.Tensor, weights: te.Tensor, reduction: str = "mean",
             ignore_index: int = -100) -> te.Tensor:
    """TOPI's C++ nll_loss: `nll_loss` (Select(t != ignore_index, -x[n, t, d...] * w[t], 0)) over
    the targets' shape, summed (`nll_loss_red`); "mean" divides by the sum of the weights taken
    (a second `nll_loss` block)."""
    zero = tb.const(0, predictions.dtype)
    info = np.iinfo(targets.dtype)
    ignorable = info.min <= ignore_index <= info.max  # else TVM folds `c != ignore_index` to true

    def taken(c, value):
        # C++ `c != ignore_index`: an int32 constant, c cast up to it where narrower
        return tb.select(tb.ne(c, tb.const(ignore_index, "int32")), value, zero) if ignorable else value

    if len(predictions.shape) == 1:  # (C,) and a scalar target
        def loss(*_):
            c = targets()
            return taken(c, tb.mul(tb.neg(predictions(c)), weights(c)))
        out = te.compute((), loss, name="nll_loss", tag="broadcast")
        if reduction == "mean":
            taken_w = te.compute((), lambda *_: taken(targets(), weights(targets())), name="nll_loss", tag="broadcast")
            return _divide(out, taken_w)
        return out

    def loss_at(ax):
        c = targets(*ax)
        return taken(c, tb.mul(tb.neg(predictions(ax[0], c, *ax[1:])), weights(c)))

    out = te.compute_ax(targets.shape, loss_at, name="nll_loss", tag="broadcast")
    if reduction == "mean":
        taken_w = te.compute_ax(targets.shape, lambda ax: taken(targets(*ax), weights(targets(*ax))), name="nll_loss",
                                tag="broadcast")
        return _divide(topi_sum(out), topi_sum(taken_w))
    return topi_sum(out) if reduction == "sum" else out


def _nll_loss_without_weight(predictions, targets, reduction, ignore_index):
    classes = predictions.shape[1] if len(predictions.shape) > 1 else predictions.shape[0]
    return nll_loss(predictions, targets, topi_full((classes,), predictions.dtype, 1.0), reduction, ignore_index)


@register_legalize("relax.nn.nll_loss")
def _nll_loss(bb, call):
    at = call.attrs
    if len(call.args) == 2:
        return bb.call_te(_nll_loss_without_weight, call.args[0], call.args[1], reduction=at["reduction"],
                          ignore_index=at["ignore_index"], primfunc_name_hint="nll_loss_without_weight")
    return bb.call_te(nll_loss, call.args[0], call.args[1], call.args[2], reduction=at["reduction"],
                      ignore_index=at["ignore_index"], primfunc_name_hint="nll_loss")


# ----------------------------------------------------------------------------- median


def median(x: te.Tensor, axis, keepdims: bool):
    """TVM's _te_median: the lower median ((count - 1) // 2 of the stably sorted values, TOPI's
    CPU argsort) over all elements (the value) or along one axis (value and int64 index)."""
    count = tb.const(1, "int32")
    for d in (list(axis) if axis is not None else range(len(x.shape))):
        count = tb.mul(count, x.shape[d])
    mid = tb.floordiv(tb.sub(count, 1), 2)
    if not axis:
        x, ax = reshape(x, [count]), -1
    else:
        ax = axis[0]
    index_sorted = argsort(x, axis=ax, is_ascend=True, dtype="int64")
    x_sorted = gather(x, ax, index_sorted)
    shape = list(x.shape)
    shape[ax] = 1
    at = topi_full(shape, "int64", mid)
    value, index = gather(x_sorted, ax, at), gather(index_sorted, ax, at)
    if not axis:
        return value if keepdims else squeeze(value, axis)
    return (value, index) if keepdims else (squeeze(value, axis), squeeze(index, axis))


@register_legalize("relax.median")
def _median(bb, call):
    axis = call.attrs["axis"]
    if axis is None and call.attrs["keepdims"] or axis is not None and len(axis) != 1:
        # TVM's _te_median makes a result other than the call's struct info here ((1,) for
        # keepdims over all axes; a tuple along axis[0] for several axes): the call stays
        return call
    return bb.call_te(median, call.args[0], axis, call.attrs["keepdims"], primfunc_name_hint="median")
