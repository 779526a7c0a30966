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
    nn.cross_entropy_with_logits(predictions, labels)
                                               a 0-d tensor; one dtype, one rank, equal known dims
    nn.nll_loss(predictions, targets, weights?, reduction, ignore_index)
                                               predictions (C,) or (N, C, d1, ..., dk), integer
                                               targets () or (N, d1, ..., dk), weights (C,);
                                               "none": the targets' shape, else 0-d
    nn.pixel_shuffle(data, upscale_factor)     (..., C * r * r, H, W) -> (..., C, H * r, W * r)
    median(x, axis, keepdims)                  axis None or several axes: a tensor (reduced dims
                                               dropped, or 1 with keepdims); one axis: (values,
                                               int64 indices)

Where a check compares sizes, only constants can fail it (TVM's CanProve on symbolic sizes), so
the norms and losses also serve as their own symbolic relations (`sym_rel`: the data's dims as
given).

The references compute in float64 and round to the data's dtype. group_norm and instance_norm
honour `center` and `scale` (TVM 0.27's TOPI legalization ignores them: it always scales and
shifts); softplus is (1 / beta) * log(1 + exp(beta * x)), and x itself where beta * x exceeds
the threshold; nll_loss is PyTorch's NLLLoss (the "mean" divides by the sum of the weights
taken).
"""

from __future__ import annotations

from ..ir.types import ANY, TensorType, TupleType
from .common import np, same_dtype, tensor_arg
from .registry import TypeRelError
from .relax_bridge import _distinct_axes


def _differ(a, b) -> bool:
    """Two sizes provably different: both constants (TVM's CanProve(a != b) on symbolic sizes
    fails, and it accepts the call)."""
    return isinstance(a, int) and isinstance(b, int) and a != b


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
        if _differ(t.shape[0], data.shape[channel]):
            raise TypeRelError(f"{op} expects that the size of input {i} must be equal to the size of "
                               f"channel_axis, but got {t.shape[0]} and {data.shape[channel]}")


def _group_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    channel = _norm_channel(data, attrs["channel_axis"], attrs["axes"], "group_norm")
    if not data.dtype.startswith("float"):  # TVM's kDLFloat check: bfloat16 is not one
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


def _log_add_exp(x1, x2):
    return np.logaddexp(x1.astype(np.float64), x2.astype(np.float64)).astype(np.result_type(x1, x2))


def _atan2(x1, x2):
    return np.arctan2(x1.astype(np.float64), x2.astype(np.float64)).astype(np.result_type(x1, x2))


def _std(x, axis=None, keepdims=False):
    from .relax_bridge import _variance

    return np.sqrt(_variance(x, axis, keepdims))



# ----------------------------------------------------------------------------- losses, pixel_shuffle


def _cross_entropy_rel(args, attrs):
    """TVM's InferStructInfoCrossEntropy: one dtype, one rank, equal (known) dims; a 0-d result."""
    pred, label = tensor_arg(args, 0, "predictions"), tensor_arg(args, 1, "labels")
    dtype = same_dtype("cross_entropy_with_logits", pred, label)
    if len(pred.shape) != len(label.shape):
        raise TypeRelError(f"CrossEntropy requires predictions and labels to have the same ndim. However, the ndim "
                           f"of predictions is {len(pred.shape)} while the ndim of labels is {len(label.shape)}")
    for i, (a, b) in enumerate(zip(pred.shape, label.shape)):
        if _differ(a, b):
            raise TypeRelError(f"CrossEntropy requires the predictions and labels to have the same shape. However, "
                               f"the shape of predictions at dim {i} is {a} while the shape of labels at this dim "
                               f"is {b}")
    return TensorType((), dtype)


def _cross_entropy(predictions, labels):
    """-sum(predictions * labels), divided by the batch size (dim 0) when of rank 2 or more."""
    dtype = np.result_type(predictions, labels)
    total = -np.sum(predictions.astype(np.float64) * labels.astype(np.float64))
    if predictions.ndim > 1:
        total = total / predictions.shape[0]
    return np.asarray(total).astype(dtype)


_NLL_REDUCTIONS = ("none", "mean", "sum")


def _nll_loss_rel(args, attrs):
    """TVM's InferStructInfoNLLLoss: predictions (C,) or (N, C, d1, ..., dk), targets () or
    (N, d1, ..., dk) of an integer dtype, weights (C,); "none" keeps the targets' shape."""
    if attrs["reduction"] not in _NLL_REDUCTIONS:
        raise TypeRelError(f"The argument reduction of NLLLoss should be one of the following values: none, mean, "
                           f"sum. However, the given value is {attrs['reduction']}")
    pred, tgt = tensor_arg(args, 0, "predictions"), tensor_arg(args, 1, "targets")
    weights = tensor_arg(args, 2, "weights") if len(args) > 2 else None
    dtype = same_dtype("nll_loss", pred, weights) if weights is not None else pred.dtype
    if not tgt.dtype.startswith(("int", "uint")):
        raise TypeRelError(f"NLLLoss expects the dtype of targets to be int/uint. However, the dtype of targets is "
                           f"{tgt.dtype}")
    if len(pred.shape) < 1:
        raise TypeRelError(f"NLLLoss expects the ndim of predictions >= 1. However, the ndim of predictions is "
                           f"{len(pred.shape)}")
    k_pred, k_tgt = max(len(pred.shape) - 2, 0), max(len(tgt.shape) - 1, 0)
    if k_pred != k_tgt:
        raise TypeRelError(f"NLLLoss expects number of dimensions K inferred from different arguments to be equal. "
                           f"However, K from predictions is {k_pred} while K from targets is {k_tgt}")
    if weights is not None and len(weights.shape) != 1:
        raise TypeRelError(f"NLLLoss expects the ndim of weights == 1. However, the ndim of weights is "
                           f"{len(weights.shape)}")
    batch = pred.shape[0] if len(pred.shape) > 1 else None
    classes = pred.shape[1] if len(pred.shape) > 1 else pred.shape[0]
    out_shape = (pred.shape[0],) + tuple(pred.shape[2:]) if len(pred.shape) > 1 else ()
    if not tgt.shape and batch is not None:
        raise TypeRelError("Shape mismatch for NLLLoss. Predictions shape is (N, C, ...) while targets is a scalar")
    if tgt.shape:
        if batch is not None and _differ(batch, tgt.shape[0]):
            raise TypeRelError(f"NLLLoss expects minibatch size N inferred from different arguments to be equal. "
                               f"However, N from predictions is {batch} while N from targets is {tgt.shape[0]}")
        if batch is None:
            raise TypeRelError("Shape mismatch for NLLLoss. Predictions shape is (C,) while targets is not a scalar")
        for a, b in zip(out_shape[1:], tgt.shape[1:]):
            if _differ(a, b):
                raise TypeRelError(f"Shape mismatch for NLLLoss. The prediction shape at this dim is {a} while the "
                                   f"target shape at this dim is {b}")
    if weights is not None and _differ(classes, weights.shape[0]):
        raise TypeRelError(f"NLLLoss expects number of classes C inferred from different arguments to be equal. "
                           f"However, C from predictions is {classes} while C from weights is {weights.shape[0]}")
    return TensorType(out_shape if attrs["reduction"] == "none" else (), dtype)


def _nll_loss(predictions, targets, weights=None, reduction="mean", ignore_index=-100):
    """PyTorch's NLLLoss: -weights[t] * predictions[n, t, d...] per target t (0 where t is
    ignore_index), summed, or summed and divided by the sum of the weights taken, or kept."""
    if weights is None:
        weights = np.ones(predictions.shape[1] if predictions.ndim > 1 else predictions.shape[0], predictions.dtype)
    x = predictions.astype(np.float64)
    if x.ndim == 1:  # (C,) with a scalar target
        x, targets = x[None], np.asarray(targets)[None]
    kept = targets != ignore_index
    classes = np.where(kept, targets, 0).astype(np.int64)
    picked = np.take_along_axis(x, classes[:, None], axis=1)[:, 0]
    w = np.where(kept, weights.astype(np.float64)[classes], 0.0)
    loss = -picked * w
    if predictions.ndim == 1:
        loss, w = loss[0], w[0]
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        with np.errstate(all="ignore"):
            loss = loss.sum() / w.sum()
    return np.asarray(loss).astype(predictions.dtype)


def _pixel_shuffle_rel(args, attrs):
    """TVM's InferStructInfoPixelShuffle: (..., C * r * r, H, W) -> (..., C, H * r, W * r)."""
    data = tensor_arg(args, 0, "data")
    r = attrs["upscale_factor"]
    if r <= 0:
        raise TypeRelError(f"Upscale factor must be positive, got {r}")
    if len(data.shape) < 3:
        raise TypeRelError(f"PixelShuffle requires at least 3D input tensor, got rank {len(data.shape)}")
    *lead, c, h, w = data.shape
    if c is ANY:
        raise TypeRelError("PixelShuffle needs a constant number of input channels")
    if c % (r * r) != 0:
        raise TypeRelError(f"Number of input channels must be divisible by the square of the upscale factor, got {c} "
                           f"channels and upscale factor {r}")
    return TensorType((*lead, c // (r * r), h * r if h is not ANY else ANY, w * r if w is not ANY else ANY),
                      data.dtype)


def _pixel_shuffle_sym(args, attrs):
    """A size variable for the channels is an error (TVM 0.27 dereferences the channel count as
    a constant and crashes); otherwise the generic symbolic fit (None)."""
    data = args[0]
    if len(data.shape) >= 3 and not isinstance(data.shape[-3], int):
        raise TypeRelError("PixelShuffle needs a constant number of input channels")
    return None


def _pixel_shuffle(data, upscale_factor):
    """out[..., c, h * r + i, w * r + j] = data[..., c * r * r + i * r + j, h, w]."""
    r = upscale_factor
    *lead, c, h, w = data.shape
    x = data.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def _median_rel(args, attrs):
    """TVM's InferStructInfoStatisticalExtension: axis None or several axes -> the median's
    tensor (reduced dims dropped, or 1 with keepdims); one axis -> (values, int64 indices)."""
    x = tensor_arg(args, 0, "x")
    ndim = len(x.shape)
    axis = attrs["axis"]
    axes = _distinct_axes(axis, ndim, "median", "a tensor") if axis is not None else tuple(range(ndim))
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if attrs["keepdims"] or i not in axes)
    if axis is None or len(axes) > 1:
        return TensorType(shape, x.dtype)
    return TupleType([TensorType(shape, x.dtype), TensorType(shape, "int64")])


def _median(x, axis=None, keepdims=False):
    """The lower median, (count - 1) // 2 of the stably sorted values: of all elements, or along
    one axis with its index (the first of equal values in the input's order)."""
    if axis is None or len(axis) != 1:
        axes = tuple(range(x.ndim)) if axis is None else _distinct_axes(axis, x.ndim, "median", "a tensor")
        flat = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim))
        flat = flat.reshape(flat.shape[:x.ndim - len(axes)] + (-1,))
        value = np.sort(flat, axis=-1, kind="stable")[..., (flat.shape[-1] - 1) // 2]
        if keepdims:
            value = np.expand_dims(value, tuple(sorted(axes)))
        if axis is not None and len(axes) == 0:  # TVM's struct info: a tuple, nothing reduced
            return x.copy(), np.zeros(x.shape, np.int64)
        return np.asarray(value, x.dtype)
    ax = _distinct_axes(axis, x.ndim, "median", "a tensor")[0]
    order = np.argsort(x, axis=ax, kind="stable")
    mid = np.take(order, [(x.shape[ax] - 1) // 2], axis=ax)
    value, index = np.take_along_axis(x, mid, axis=ax), mid.astype(np.int64)
    if not keepdims:
        value, index = np.squeeze(value, ax), np.squeeze(index, ax)
    return value, index
