"""Relations and NumPy references of TVM 0.27's Relax normalisations, statistics and losses
that have no Relay counterpart: `irtool.ops.relax` declares them, one line each. Their struct
info follows TVM 0.27's FInferStructInfo (src/relax/op/nn/nn.cc, tensor/binary.cc,
tensor/statistical.cc):

    nn.group_norm(data, gamma, beta, num_groups, channel_axis, axes, epsilon, center, scale)
        data's struct info. data is float; channel_axis and axes in range, channel_axis not among
        the axes; the channel size divisible by num_groups; gamma and beta 1-D, of the data's
        dtype and of the channel size (checks on sizes only where they are known, as TVM's
        CanProve)
    nn.instance_norm(data, gamma, beta, channel_axis, axes, epsilon, center, scale)
        the same checks, without the float and divisibility ones (TVM has none)
    nn.softplus(data, beta, threshold)         data's struct info, float only
    log_add_exp(x1, x2), atan2(x1, x2)         broadcast of x1 and x2, of one dtype (as R.add)
    std(x, axis, keepdims)                     as R.variance

The references compute in float64 and round to the data's dtype. group_norm and instance_norm
honour `center` and `scale` (TVM 0.27's TOPI legalization ignores them: it always scales and
shifts); softplus is (1 / beta) * log(1 + exp(beta * x)), and x itself where beta * x exceeds
the threshold.
"""

from __future__ import annotations

from .common import np, tensor_arg
from .registry import TypeRelError
from .relax_bridge import _distinct_axes


def _norm_channel(data, channel_axis: int, axes, op: str) -> int:
    ndim = len(data.shape)
    if not -ndim <= channel_axis < ndim:
        raise TypeRelError(f"{op} channel_axis {channel_axis} is out of range for a tensor of rank {ndim}")
    channel = channel_axis % ndim
    if channel in _distinct_axes(axes, ndim, op, "a tensor"):
        raise TypeRelError(f"{op} expects that channel_axis must not be in axes, but got channel_axis: "
                           f"{channel}, axes: {list(axes)}")
    return channel


def _norm_params(args, data, channel: int, op: str) -> None:
    """gamma and beta: 1-D, the data's dtype, the channel size (where both are known)."""
    for i, name in ((1, "gamma"), (2, "beta")):
        t = tensor_arg(args, i, name)
        if t.dtype != data.dtype:
            raise TypeRelError(f"{op} expects that all inputs must have the same dtype, but got {t.dtype} "
                               f"and {data.dtype}")
        if len(t.shape) != 1:
            raise TypeRelError(f"{op} expects that all inputs must have ndim=1, but got {len(t.shape)}")
        if isinstance(t.shape[0], int) and isinstance(data.shape[channel], int) and t.shape[0] != data.shape[channel]:
            raise TypeRelError(f"{op} expects that the size of input {i} must be equal to the size of "
                               f"channel_axis, but got {t.shape[0]} and {data.shape[channel]}")


def _group_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    channel = _norm_channel(data, attrs["channel_axis"], attrs["axes"], "group_norm")
    if not data.dtype.startswith(("float", "bfloat")):
        raise TypeRelError(f"group_norm expects that data must be float, but got {data.dtype}")
    size = data.shape[channel]
    if isinstance(size, int) and attrs["num_groups"] and size % attrs["num_groups"] != 0:
        raise TypeRelError(f"group_norm expects that the size of channel_axis must be divisible by "
                           f"{attrs['num_groups']}, but got {size}")
    _norm_params(args, data, channel, "group_norm")
    return data


def _instance_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    channel = _norm_channel(data, attrs["channel_axis"], attrs["axes"], "instance_norm")
    _norm_params(args, data, channel, "instance_norm")
    return data


def _normalized(x, axes, epsilon: float):
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + epsilon)


def _scale_shift(out, gamma, beta, channel: int, ndim: int, center: bool, scale: bool):
    shape = [-1 if i == channel else 1 for i in range(ndim)]
    if scale:
        out = out * gamma.astype(np.float64).reshape(shape)
    if center:
        out = out + beta.astype(np.float64).reshape(shape)
    return out


def _group_norm(data, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5, center=True, scale=True):
    """The channels split into num_groups groups; each group normalised over itself and `axes`."""
    ndim = data.ndim
    channel = channel_axis % ndim
    grouped_shape = data.shape[:channel] + (num_groups, data.shape[channel] // num_groups) + data.shape[channel + 1:]
    x = data.astype(np.float64).reshape(grouped_shape)
    over = tuple(sorted([channel + 1] + [a + (a > channel) for a in _distinct_axes(axes, ndim, "group_norm",
                                                                                    "a tensor")]))
    out = _normalized(x, over, epsilon).reshape(data.shape)
    return _scale_shift(out, gamma, beta, channel, ndim, center, scale).astype(data.dtype)


def _instance_norm(data, gamma, beta, channel_axis, axes, epsilon=1e-5, center=True, scale=True):
    """Each instance normalised over `axes`; gamma and beta per channel."""
    axes = _distinct_axes(axes, data.ndim, "instance_norm", "a tensor")
    out = _normalized(data.astype(np.float64), axes, epsilon)
    return _scale_shift(out, gamma, beta, channel_axis % data.ndim, data.ndim, center, scale).astype(data.dtype)


def _softplus(data, beta=1.0, threshold=20.0):
    x = data.astype(np.float64)
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(beta * x)) / beta
    return np.where(beta * x > threshold, x, soft).astype(data.dtype)


def _broadcast_rel(args, attrs):
    from .elemwise import broadcast_rel

    return broadcast_rel(args, attrs)


def _log_add_exp(x1, x2):
    return np.logaddexp(x1.astype(np.float64), x2.astype(np.float64)).astype(np.result_type(x1, x2))


def _atan2(x1, x2):
    return np.arctan2(x1.astype(np.float64), x2.astype(np.float64)).astype(np.result_type(x1, x2))


def _std(x, axis=None, keepdims=False):
    from .relax_bridge import _variance

    return np.sqrt(_variance(x, axis, keepdims))

