"""simplify-inference: replace training-only operators by their inference arithmetic.

TVM's SimplifyInference (relay/transforms/simplify_inference.cc), one post-order
rewrite of the function:

    %t.0 of nn.batch_norm(x, gamma, beta, mean, var)
        -> x * scale + shift       scale = 1 / sqrt(var + eps) [* gamma if scale=True]
                                   shift = -mean * scale      [+ beta  if center=True]
           scale and shift get expand_dims(axis=1, num_newaxis=ndim - axis - 1) to
           broadcast along `axis`; the batch_norm call itself stays for `.1` / `.2` users
    %t.0 of nn.dropout(x)  -> x
    nn.layer_norm(x, gamma, beta)
        -> (x - mean(x)) / sqrt(variance(x, mean(x)) + eps) [* gamma] [+ beta]
           mean and variance over [axis] with keepdims; gamma and beta expanded as above

The epsilon constant has the data's dtype and is first rounded to float32, as TVM's
`MakeConstantScalar(dtype, static_cast<float>(epsilon))` does. Only a `.0` written
directly on the call is rewritten (a let-bound batch_norm keeps its call), as in TVM.
TVM also unpacks nn.instance_norm, nn.group_norm and nn.l2_normalize; those operators
are not in irtool's registry, so they are not handled here.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.ir.expr import Call, Expr, Op, TupleGetItem
from irtool.ir.visitor import ExprMutator
from irtool.ops.common import np
from irtool.ops.registry import make_call
from irtool.transform import FunctionPass, register

from ._pattern_utils import const_scalar, expand_bias_to_match_axis


def batch_norm_to_infer(call: Call, data_type) -> Expr:
    """TVM's BatchNormToInferUnpack, on the (rewritten) batch_norm `call`."""
    data, gamma, beta, mean, var = call.args
    attrs = call.attrs
    dtype, ndim = data_type.dtype, len(data_type.shape)
    eps = const_scalar(dtype, np.float32(attrs["epsilon"]))
    scale = make_call("divide", const_scalar(dtype, np.float32(1.0)), make_call("sqrt", make_call("add", var, eps)))
    if attrs["scale"]:
        scale = make_call("multiply", scale, gamma)
    shift = make_call("multiply", make_call("negative", mean), scale)
    if attrs["center"]:
        shift = make_call("add", shift, beta)
    axis = attrs["axis"] + ndim if attrs["axis"] < 0 else attrs["axis"]
    scale = expand_bias_to_match_axis(scale, ndim, [axis])
    shift = expand_bias_to_match_axis(shift, ndim, [axis])
    return make_call("add", make_call("multiply", data, scale), shift)


def layer_norm_to_infer(call: Call, data_type) -> Expr:
    """TVM's LayerNormToInferUnpack: the reductions keep the axis as written (maybe
    negative); the gamma/beta expansion uses it made non-negative."""
    data, gamma, beta = call.args
    attrs = call.attrs
    dtype, ndim = data_type.dtype, len(data_type.shape)
    eps = const_scalar(dtype, np.float32(attrs["epsilon"]))
    mean = make_call("mean", data, axis=(attrs["axis"],), keepdims=True, exclude=False)
    var = make_call("variance", data, mean, axis=(attrs["axis"],), keepdims=True, exclude=False)
    denom = make_call("sqrt", make_call("add", var, eps))
    out = make_call("divide", make_call("subtract", data, mean), denom)
    axis = attrs["axis"] + ndim if attrs["axis"] < 0 else attrs["axis"]
    if attrs["scale"]:
        out = make_call("multiply", out, expand_bias_to_match_axis(gamma, ndim, [axis]))
    if attrs["center"]:
        out = make_call("add", out, expand_bias_to_match_axis(beta, ndim, [axis]))
    return out


_BATCH_NORM, _DROPOUT, _LAYER_NORM = Op.get("nn.batch_norm"), Op.get("nn.dropout"), Op.get("nn.layer_norm")


class _Simplifier(ExprMutator):
    def visit_tuple_get_item(self, e: TupleGetItem) -> Expr:
        post = super().visit_tuple_get_item(e)
        t = post.tuple_value
        if post.index != 0 or type(t) is not Call:
            return post
        if t.op is _BATCH_NORM:
            return batch_norm_to_infer(t, e.tuple_value.args[0].checked_type)
        if t.op is _DROPOUT:
            return t.args[0]
        return post

    def visit_call(self, e: Call) -> Expr:
        post = super().visit_call(e)
        if e.op is _LAYER_NORM:
            return layer_norm_to_infer(post, e.args[0].checked_type)
        return post


@register
@dataclass(frozen=True)
class SimplifyInference(FunctionPass):
    name = "simplify-inference"
    tvm_name = "SimplifyInference"
    opt_level = 0
    required = ("infer-type",)
    summary = "Rewrite batch_norm, dropout and layer_norm into inference arithmetic"

    def transform_function(self, fn, mod, ctx):
        return _Simplifier().visit(fn)
