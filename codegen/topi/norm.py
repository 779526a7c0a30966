"""Softmax and normalisations: TOPI's python/tvm/topi/nn/softmax.py, batch_norm.py and the C++
include/tvm/topi/nn/layer_norm.h.

    softmax      T_softmax_maxelem (max over reduce axis `k`), T_softmax_exp, T_softmax_expsum,
                 T_softmax_norm (sblock attr {"axis": axis}); axes i0, i1, ...
    log_softmax  T_softmax_maxelem, `compute` (sum of exp(x - max)), `compute` (x - max - log sum)
    layer_norm   <x>_sum, <x>_mean, <x>_var_sum over k<i> / ax<j>, then T_layer_norm
                 (two passes: mean, then the mean of squared deviations)
    rms_norm     T_cast (data, weight to float32), T_multiply, T_multiply_red, rsqrt, T_rms_norm,
                 T_cast back (over trailing axes only, not all: on others TOPI's rsqrt step
                 indexes the sum wrongly and TVM 0.27 fails, so the call stays)
    batch_norm   TOPI's batch_norm with Relax's attributes: training uses the batch statistics
                 (sum / count, reshaped to broadcast) and returns the momentum-updated moving
                 statistics; otherwise the moving ones and `moving * 1`
"""

from __future__ import annotations

from functools import reduce as _fold

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import topi_binary
from .reduce import real_axis, reduce_axes, target_shape, topi_sum

add, subtract, multiply, divide = (topi_binary(n) for n in ("add", "subtract", "multiply", "divide"))


def float_const(value: float, dtype: str) -> tir.PrimExpr:
    """`tirx.const(value, dtype)` of a Python float: TVM keeps the double (no float32 rounding)."""
    return tir.FloatImm(float(value), dtype)


def _normalized_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    axis = _normalized_axis(axis, len(x.shape))
    k1 = te.reduce_axis((0, x.shape[axis]), name="k")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k")
    reduced = [d for i, d in enumerate(x.shape) if i != axis]

    def with_k(indices, k):
        return indices[:axis] + (k.var,) + indices[axis:]

    def others(indices):
        return tuple(v for i, v in enumerate(indices) if i != axis)

    max_elem = te.compute(reduced, lambda *i: te.max(x(*with_k(i, k1)), axis=k1), name="T_softmax_maxelem")
    exp = te.compute(x.shape, lambda *i: tb.call("exp", tb.sub(x(*i), max_elem(*others(i)))), name="T_softmax_exp")
    expsum = te.compute(reduced, lambda *i: te.sum(exp(*with_k(i, k2)), axis=k2), name="T_softmax_expsum")
    return te.compute(x.shape, lambda *i: tb.div(exp(*i), expsum(*others(i))), name="T_softmax_norm",
                      attrs={"axis": axis})


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    axis = _normalized_axis(axis, len(x.shape))
    k1 = te.reduce_axis((0, x.shape[axis]), name="k")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k")
    reduced = [d for i, d in enumerate(x.shape) if i != axis]

    def with_k(indices, k):
        return indices[:axis] + (k.var,) + indices[axis:]

    def others(indices):
        return tuple(v for i, v in enumerate(indices) if i != axis)

    max_elem = te.compute(reduced, lambda *i: te.max(x(*with_k(i, k1)), axis=k1), name="T_softmax_maxelem")
    expsum = te.compute(reduced, lambda *i: te.sum(tb.call("exp", tb.sub(x(*with_k(i, k2)), max_elem(*i))), axis=k2))
    return te.compute(x.shape, lambda *i: tb.sub(tb.sub(x(*i), max_elem(*others(i))),
                                                 tb.call("log", expsum(*others(i)))),
                      attrs={"axis": axis})


def layer_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, axis, epsilon: float) -> te.Tensor:
    """TOPI's C++ layer_norm (float32; float16 is computed in float32 and cast back)."""
    f16 = data.dtype == "float16"
    axes = real_axis(len(data.shape), axis)
    raxes = reduce_axes(axes, data)
    shape = target_shape(axes, data, False)

    def eval_range(indices):
        out, arg, red = [], 0, 0
        for i in range(len(data.shape)):
            if i in axes:
                out.append(raxes[red].var)
                red += 1
            else:
                out.append(indices[arg])
                arg += 1
        return out

    def load(indices):
        v = data(*eval_range(indices))
        return tb.cast("float32", v) if f16 else v

    temp_sum = te.compute_ax(shape, lambda i: te.sum(load(i), axis=raxes), name=data.name + "_sum",
                             tag="comm_reduce")
    reduce_extent = tb.const(1, "float32" if f16 else data.dtype)
    for i in axes:
        reduce_extent = tb.mul(reduce_extent, data.shape[i])
    temp_mean = te.compute_ax(shape, lambda i: tb.div(temp_sum(*i), reduce_extent), name=data.name + "_mean",
                              tag="injective")

    def var_sum(i):
        diff = tb.sub(load(i), temp_mean(*i))
        return te.sum(tb.mul(diff, diff), axis=raxes)

    temp_var_sum = te.compute_ax(shape, var_sum, name=data.name + "_var_sum", tag="comm_reduce")

    def element(indices):
        red = [v for i, v in enumerate(indices) if i in axes]
        non_red = [v for i, v in enumerate(indices) if i not in axes]
        var = tb.div(temp_var_sum(*non_red), reduce_extent)
        out = tb.mul(tb.sub(data(*indices), temp_mean(*non_red)),
                     tb.call("rsqrt", tb.add(var, float_const(epsilon, var.dtype))))
        if f16:
            out = tb.cast("float16", out)
        return tb.add(tb.mul(out, gamma(*red)), beta(*red))

    return te.compute_ax(data.shape, element, name="T_layer_norm", tag="injective")


def _cpp_cast(x: te.Tensor, dtype: str) -> te.Tensor:
    """TOPI's C++ cast: a `T_cast` block, also to x's own dtype (a copy)."""
    return te.compute_ax(x.shape, lambda i: tb.cast(dtype, x(*i)), name="T_cast", tag="elemwise")


def rms_norm(data: te.Tensor, weight: te.Tensor, axis, epsilon: float) -> te.Tensor:
    """TOPI's C++ rms_norm: in float32 (data and weight cast, T_cast), the sum of squares
    (T_multiply, T_multiply_red), `rsqrt` of its mean plus epsilon, `T_rms_norm`, cast back."""
    axes = real_axis(len(data.shape), axis)
    data32, weight32 = _cpp_cast(data, "float32"), _cpp_cast(weight, "float32")
    square_sum = topi_sum(multiply(data32, data32), axes)
    reduce_extent = tb.const(1, "float32")
    for i in axes:
        reduce_extent = tb.mul(reduce_extent, data.shape[i])
    rsqrt = te.compute_ax([d for i, d in enumerate(data.shape) if i not in axes],
                          lambda i: tb.call("rsqrt", tb.add(tb.div(square_sum(*i), reduce_extent),
                                                            float_const(epsilon, "float32"))),
                          name="rsqrt", tag="injective")

    def element(indices):
        red = [v for i, v in enumerate(indices) if i in axes]
        non_red = [v for i, v in enumerate(indices) if i not in axes]
        return tb.mul(tb.mul(rsqrt(*non_red), data32(*indices)), weight32(*red))

    return _cpp_cast(te.compute_ax(data.shape, element, name="T_rms_norm", tag="injective"), data.dtype)


def _reshape(x: te.Tensor, shape: list) -> te.Tensor:
    from .transform import reshape  # the shape/transform family (TOPI's T_reshape)

    return reshape(x, shape)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis: int, epsilon: float, center: bool,
               scale: bool, training: bool, momentum: float) -> list[te.Tensor]:
    ndim = len(data.shape)
    axis = _normalized_axis(axis, ndim)
    shape = [1] * ndim
    shape[axis] = data.shape[axis]
    if training:
        axes = [i for i in range(ndim) if i != axis]
        shape_prod = _fold(tb.mul, [data.shape[i] for i in axes], 1)
        data_mean = divide(topi_sum(data, axes), shape_prod)
        data_mean_rs = _reshape(data_mean, shape)
        dev = multiply(subtract(data, data_mean_rs), subtract(data, data_mean_rs))
        data_var = divide(topi_sum(dev, axes), shape_prod)
        data_var_rs = _reshape(data_var, shape)
        out = divide(subtract(data, data_mean_rs), _sqrt(add(data_var_rs, float_const(epsilon, data.dtype))))
    else:
        moving_mean_rs = _reshape(moving_mean, shape)
        moving_var_rs = _reshape(moving_var, shape)
        out = divide(subtract(data, moving_mean_rs), _sqrt(add(moving_var_rs, float_const(epsilon, data.dtype))))
    if scale:
        out = multiply(out, _reshape(gamma, shape))
    if center:
        out = add(out, _reshape(beta, shape))
    if training:
        keep, take = float_const(1 - momentum, data.dtype), float_const(momentum, data.dtype)
        return [out, add(multiply(keep, moving_mean), multiply(take, data_mean)),
                add(multiply(keep, moving_var), multiply(take, data_var))]
    one = tb.const(1, moving_mean.dtype)
    return [out, multiply(moving_mean, one), multiply(moving_var, one)]


def _sqrt(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: tb.call("sqrt", x(*i)))


register_legalize("relax.nn.softmax", lambda bb, call: bb.call_te(softmax, call.args[0], call.attrs["axis"],
                                                                  primfunc_name_hint="softmax"))
register_legalize("relax.nn.log_softmax", lambda bb, call: bb.call_te(log_softmax, call.args[0],
                                                                      call.attrs["axis"],
                                                                      primfunc_name_hint="log_softmax"))


@register_legalize("relax.nn.layer_norm")
def _layer_norm(bb, call):
    return bb.call_te(layer_norm, call.args[0], call.args[1], call.args[2], axis=call.attrs["axes"],
                      epsilon=call.attrs["epsilon"], primfunc_name_hint="layer_norm")


@register_legalize("relax.nn.batch_norm")
def _batch_norm(bb, call):
    at = call.attrs
    return bb.call_te(batch_norm, data=call.args[0], gamma=call.args[1], beta=call.args[2],
                      moving_mean=call.args[3], moving_var=call.args[4], axis=at["axis"], epsilon=at["epsilon"],
                      center=at["center"], scale=at["scale"], training=at["training"], momentum=at["momentum"],
                      primfunc_name_hint="batch_norm")


@register_legalize("relax.nn.rms_norm")
def _rms_norm(bb, call):
    ndim = call.struct_info.ndim
    if sorted(a % ndim for a in call.attrs["axes"]) != list(range(ndim - len(call.attrs["axes"]), ndim)) or \
            len(call.attrs["axes"]) == ndim:
        # TOPI's rsqrt step indexes the sum correctly only when the axes are the trailing ones
        # and not all of them: TVM 0.27's LegalizeOps fails on the others; the call stays
        return call
    return bb.call_te(rms_norm, call.args[0], call.args[1], axis=call.attrs["axes"], epsilon=call.attrs["epsilon"])
