"""Neural-network operators (`nn.*`): convolutions, dense/matmul, pooling, normalisation, softmax,
padding, as TVM v0.19 declares them (include/tvm/relay/attrs/nn.h, src/relay/op/nn/*.cc).

Layouts: convolutions take any ordering of the letters NCHW / NCDHW (data) and OIHW / IOHW /
OIDHW (kernel); TVM's split layouts (NCHW16c) and `G` group kernels are rejected. Pooling only
needs to find its window axes (H, W; D, H, W), so it takes split layouts too. Padding is the
window axes' starts then their ends once normalised: (top, left, bottom, right), 3-D (front,
top, left, back, bottom, right). The 2-D and 3-D ops share one relation and one reference, over
the window axes `axes` ("HW" or "DHW"); the Relax-only 1-D ops (irtool/ops/relax_window.py)
use them over "W".

References compute in int64 (integers: wrapping to the output dtype equals TVM's wrapping
int32 sum) or float64 (floats, rounded once to the output dtype); integer averages truncate,
as TVM's `div` does.
"""

from __future__ import annotations

import itertools
import math
import re
from functools import partial

from ..ir.types import ANY, TensorType, TupleType
from .common import fmt_shape, fmt_type, np, tensor_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register

FUSABLE, BROADCAST, INJECTIVE, OPAQUE = (OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.BROADCAST, OpPattern.INJECTIVE,
                                         OpPattern.OPAQUE)


# ------------------------------------------------------------------ attribute normalisers


def _pair(v):
    """A single window/stride/dilation value means both axes, as TVM's Python API makes it."""
    return v * 2 if len(v) == 1 else v


def _triple(v):
    """The same for the three axes of a 3-D window."""
    return v * 3 if len(v) == 1 else v


def _pad2(v):
    """1 padding value -> (left, right), as TVM's GetCompletePadding1D."""
    return v * 2 if len(v) == 1 else v


def _pad4(v):
    """1 or 2 padding values -> (top, left, bottom, right); other lengths are left for the relation."""
    return v * 4 if len(v) == 1 else v + v if len(v) == 2 else v


def _pad6(v):
    """1 or 3 padding values -> (front, top, left, back, bottom, right), as TVM's get_pad_tuple3d."""
    return v * 6 if len(v) == 1 else v + v if len(v) == 3 else v


_PAD_BY_RANK = {1: _pad2, 2: _pad4, 3: _pad6}
_AXIS_NAMES = {"D": "depth", "H": "height", "W": "width"}


def _and(items) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


# ------------------------------------------------------------------ shape helpers


def _known(*dims) -> bool:
    return all(d is not ANY for d in dims)


def _fits(shape, want) -> bool:
    """TVM's unification of two shapes: same rank, equal dims, `?` matching anything."""
    return len(shape) == len(want) and all(a is ANY or b is ANY or a == b for a, b in zip(shape, want))


def _expect(name: str, t: TensorType, shape, dtype: str | None = None) -> None:
    want = TensorType(shape, dtype or t.dtype)
    if not _fits(t.shape, shape) or (dtype is not None and t.dtype != dtype):
        raise TypeRelError(f"`{name}` must have type {fmt_type(want)}, got {fmt_type(t)}")


def _per_axis(attrs, key: str, axes: str, positive: bool = True) -> tuple:
    """A window attribute with one value per window axis."""
    v = attrs[key]
    if len(v) != len(axes):
        names = ", ".join(_AXIS_NAMES[a] for a in axes)
        raise TypeRelError(f"`{key}` must have {len(axes)} values ({names}), got {list(v)}")
    if positive and min(v) < 1:
        raise TypeRelError(f"`{key}` must be positive, got {list(v)}")
    return v


def _padding(attrs, axes: str) -> tuple:
    """The padding as (starts..., ends...) over the window axes."""
    v, n = attrs["padding"], len(axes)
    if len(v) not in (1, n, 2 * n):
        raise TypeRelError(f"`padding` must have 1, {n} or {2 * n} values, got {len(v)}: {list(v)}")
    return _PAD_BY_RANK[n](v)


def _groups(attrs) -> int:
    if attrs["groups"] < 1:
        raise TypeRelError(f"`groups` must be positive, got {attrs['groups']}")
    return attrs["groups"]


def _check_layout(layout: str, canon: str, key: str) -> str:
    if sorted(layout) != sorted(canon):
        raise TypeRelError(f"`{key}` must be an ordering of {canon}, got \"{layout}\"")
    return layout


def _in_canon(t: TensorType, layout: str, canon: str, name: str) -> tuple:
    """The shape of an argument in canonical order (NCHW, OIHW, IOHW, NCDHW, OIDHW)."""
    if len(t.shape) != len(canon):
        raise TypeRelError(f"`{name}` must be a {len(canon)}-D tensor in layout {layout}, got {fmt_type(t)}")
    return tuple(t.shape[layout.index(c)] for c in canon)


def _in_layout(shape, canon: str, layout: str) -> tuple:
    return tuple(shape[canon.index(c)] for c in layout)


def _window_out(axis: str, size, pad: int, k, d: int, s: int, ceil: bool = False):
    """Output extent of a sliding window; TVM folds `?` in and lets negative sizes through,
    we reject a window larger than the padded input."""
    if not _known(size, k):
        return ANY
    dk = (k - 1) * d + 1
    num = size + pad - dk + (s - 1 if ceil else 0)
    if num < 0:
        raise TypeRelError(f"the {axis} window ({dk}, dilated) is larger than the padded {axis} ({size + pad})")
    return num // s + 1


def _div(a, b):
    return a // b if _known(a) else ANY


def _out_dtype(attrs, t: TensorType) -> str:
    return attrs["out_dtype"] or t.dtype


_LAYOUT = re.compile(r"(?:[A-Z]|[1-9][0-9]*[a-z])+")


def _pool_axes(layout: str, t: TensorType, axes: str = "HW") -> list[int]:
    """Positions of the window axes (H, W or D, H, W) in a pooling layout (`NCHW`, `NHWC`,
    `NCHW16c`, `NCDHW`, ...)."""
    letters = re.findall(r"[A-Za-z]", layout)
    if (not _LAYOUT.fullmatch(layout) or any(a not in letters or a.lower() in letters for a in axes)
            or len(set(letters)) != len(letters)):
        raise TypeRelError(f"invalid pooling layout \"{layout}\": it must have {_and(axes)}, which cannot be split")
    idx = [letters.index(a) for a in axes]
    if len(t.shape) < len(axes) or max(idx) >= len(t.shape):
        raise TypeRelError(f"`data` of rank {len(t.shape)} has no {_and(axes)} axes in layout {layout}: "
                           f"{fmt_type(t)}")
    return idx


# ------------------------------------------------------------------ type relations: convolution


def _conv_operands(args, attrs, axes: str, kernel_channels: str):
    """A convolution's data and weight, their canonical layouts (`NC` + axes, `kernel_channels`
    + axes), the checked data, kernel and out layouts, and both shapes in canonical order."""
    data, weight = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "weight")
    data_canon, kernel_canon = "NC" + axes, kernel_channels + axes
    dl = _check_layout(attrs["data_layout"], data_canon, "data_layout")
    kl = _check_layout(attrs["kernel_layout"], kernel_canon, "kernel_layout")
    ol = _check_layout(attrs["out_layout"] or dl, data_canon, "out_layout")
    return (data, weight, (data_canon, kernel_canon), (dl, kl, ol), _in_canon(data, dl, data_canon, "data"),
            _in_canon(weight, kl, kernel_canon, "weight"))


def conv_rel(args, attrs, axes: str):
    """nn.conv2d (axes "HW") and nn.conv3d ("DHW")."""
    data, weight, (data_canon, kernel_canon), (dl, kl, ol), (n, c, *size), (o, i, *ks) = \
        _conv_operands(args, attrs, axes, "OI")
    strides, dilation = _per_axis(attrs, "strides", axes), _per_axis(attrs, "dilation", axes)
    pads = _padding(attrs, axes)
    groups, channels, ksize = _groups(attrs), attrs["channels"], attrs["kernel_size"]
    if ksize is not None:
        ksize = _per_axis(attrs, "kernel_size", axes)
    if ksize is not None and channels is not None:
        # TVM infers the weight from the attributes; a depthwise weight is [C, multiplier, kh, kw].
        depthwise = groups > 1 and c == groups and o == groups
        want = (c, _div(channels, c), *ksize) if depthwise else (channels, _div(c, groups), *ksize)
        _expect("weight", weight, _in_layout(want, kernel_canon, kl))
        o, ks = channels, ksize
    else:
        if ksize is not None and not _fits(tuple(ks), ksize):
            raise TypeRelError(f"kernel_size {list(ksize)} does not match the weight {fmt_type(weight)} "
                               f"(kernel layout {kl})")
        if channels is not None and not _fits((o,), (channels,)):
            raise TypeRelError(f"channels={channels} does not match the output channels ({o}) of the weight "
                               f"{fmt_type(weight)} (kernel layout {kl})")
        if _known(c, i) and c // groups != i:
            raise TypeRelError(f"the input channels ({c}) divided by groups ({groups}) must equal the weight's "
                               f"input channels ({i}): data {fmt_type(data)}, weight {fmt_type(weight)}")
    nd = len(axes)
    out = (n, o, *(_window_out(_AXIS_NAMES[a], size[j], pads[j] + pads[j + nd], ks[j], dilation[j], strides[j])
                   for j, a in enumerate(axes)))
    return TensorType(_in_layout(out, data_canon, ol), _out_dtype(attrs, data))


def conv_transpose_rel(args, attrs, axes: str):
    """nn.conv2d_transpose (axes "HW") and nn.conv3d_transpose ("DHW")."""
    data, weight, (data_canon, kernel_canon), (dl, kl, ol), (n, c, *size), (i, o, *ks) = \
        _conv_operands(args, attrs, axes, "IO")
    strides, dilation = _per_axis(attrs, "strides", axes), _per_axis(attrs, "dilation", axes)
    output_padding = _per_axis(attrs, "output_padding", axes, positive=False)
    pads = _padding(attrs, axes)
    groups, channels, ksize = _groups(attrs), attrs["channels"], attrs["kernel_size"]
    if ksize is not None:
        ksize = _per_axis(attrs, "kernel_size", axes)
    if ksize is not None and channels is not None:
        _expect("weight", weight, _in_layout((c, _div(channels, groups), *ksize), kernel_canon, kl))
        o, ks = channels, ksize
    else:
        if ksize is not None and not _fits(tuple(ks), ksize):
            raise TypeRelError(f"kernel_size {list(ksize)} does not match the weight {fmt_type(weight)} "
                               f"(kernel layout {kl})")
        if channels is not None and not _fits((o,), (channels // groups,)):
            raise TypeRelError(f"channels={channels} divided by groups ({groups}) does not match the weight's "
                               f"output channels ({o}): weight {fmt_type(weight)} (kernel layout {kl})")
        if _known(c, i) and c != i:
            raise TypeRelError(f"the input channels ({c}) must equal the weight's input channels ({i}): "
                               f"data {fmt_type(data)}, weight {fmt_type(weight)}")
        # TVM says wshape[1] here, which undercounts grouped outputs; the compute makes o * groups.
        # (Its 3-D relation here also pairs H with the weight's W extent and dilation and W with
        # H's, which disagrees with its compute when they differ; we take each axis's own.)
        o = o * groups if _known(o) else ANY

    def extent(axis, size, k, d, s, pad, opad):
        if not _known(size, k):
            return ANY
        out = s * (size - 1) + (k - 1) * d + 1 - pad + opad
        if out < 1:
            raise TypeRelError(f"the output {axis} would be {out}: padding {pad} is too large")
        return out

    nd = len(axes)
    out = (n, o, *(extent(_AXIS_NAMES[a], size[j], ks[j], dilation[j], strides[j], pads[j] + pads[j + nd],
                          output_padding[j]) for j, a in enumerate(axes)))
    return TensorType(_in_layout(out, data_canon, ol), _out_dtype(attrs, data))


# ------------------------------------------------------------------ type relations: dense, matmul


def _matmul_type(a: TensorType, b: TensorType, attrs, ta: bool, tb: bool, names) -> TensorType:
    if len(a.shape) < (2 if ta else 1):
        raise TypeRelError(f"`{names[0]}` must have rank {'>= 2' if ta else '>= 1'}, got {fmt_type(a)}")
    reduce = a.shape[-2] if ta else a.shape[-1]
    out = list(a.shape)
    if ta:
        out[-2] = a.shape[-1]
    units = attrs["units"]
    if units is not None:
        _expect(names[1], b, (units, reduce) if tb else (reduce, units))
        out[-1] = units
    else:
        if len(b.shape) != 2:
            raise TypeRelError(f"`{names[1]}` must be a 2-D tensor, got {fmt_type(b)}")
        k = b.shape[1] if tb else b.shape[0]
        # TVM only unifies `?` here; a static mismatch would fail later, in the compute.
        if _known(reduce, k) and reduce != k:
            raise TypeRelError(f"the reduction dimensions differ: {reduce} in {names[0]} {fmt_type(a)}, "
                               f"{k} in {names[1]} {fmt_type(b)}")
        out[-1] = b.shape[0] if tb else b.shape[1]
    return TensorType(out, _out_dtype(attrs, a))


def dense_rel(args, attrs):
    a, b = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "weight")
    return _matmul_type(a, b, attrs, False, True, ("data", "weight"))


def matmul_rel(args, attrs):
    a, b = tensor_arg(args, 0, "tensor_a"), tensor_arg(args, 1, "tensor_b")
    return _matmul_type(a, b, attrs, attrs["transpose_a"], attrs["transpose_b"], ("tensor_a", "tensor_b"))


def batch_matmul_rel(args, attrs):
    x, y = tensor_arg(args, 0, "tensor_a"), tensor_arg(args, 1, "tensor_b")
    for name, t in (("tensor_a", x), ("tensor_b", y)):
        if len(t.shape) != 3:
            raise TypeRelError(f"`{name}` must be a 3-D tensor, got {fmt_type(t)}")
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    xb, xi, xk = x.shape[0], x.shape[2 if ta else 1], x.shape[1 if ta else 2]
    yb, yk, yj = y.shape[0], y.shape[2 if tb else 1], y.shape[1 if tb else 2]
    # TVM skips both checks when any dimension is `?`; we check whatever is static.
    if _known(xb, yb) and xb != yb and 1 not in (xb, yb):
        raise TypeRelError(f"batch dimensions {xb} and {yb} do not match: {fmt_type(x)}, {fmt_type(y)}")
    if _known(xk, yk) and xk != yk:
        raise TypeRelError(f"the reduction dimensions differ ({xk} and {yk}): {fmt_type(x)}, {fmt_type(y)}"
                           f"{' (transpose_b=True: y is [b, n, k])' if tb else ''}")
    out_b = max(xb, yb) if _known(xb, yb) else ANY
    return TensorType((out_b, xi, yj), _out_dtype(attrs, x))


# ------------------------------------------------------------------ type relations: pooling


def pool_rel(args, attrs, axes: str):
    """nn.max_pool2d / nn.avg_pool2d (axes "HW") and their 3-D forms ("DHW")."""
    data = tensor_arg(args, 0, "data")
    idx = _pool_axes(attrs["layout"], data, axes)
    ks, strides, dilation = (_per_axis(attrs, key, axes) for key in ("pool_size", "strides", "dilation"))
    pads, nd = _padding(attrs, axes), len(axes)
    out = list(data.shape)
    for j, (a, i) in enumerate(zip(axes, idx)):
        out[i] = _window_out(_AXIS_NAMES[a], data.shape[i], pads[j] + pads[j + nd], ks[j], dilation[j], strides[j],
                             attrs["ceil_mode"])
    return TensorType(out, data.dtype)


def global_pool2d_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    hidx, widx = _pool_axes(attrs["layout"], data)
    out = list(data.shape)
    out[hidx] = out[widx] = 1
    return TensorType(out, data.dtype)


def adaptive_pool2d_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    hidx, widx = _pool_axes(attrs["layout"], data)
    size = attrs["output_size"]
    if len(size) > 2:
        raise TypeRelError(f"`output_size` can have up to 2 values, got {list(size)}")
    if min(size, default=0) < 0:
        raise TypeRelError(f"`output_size` must not be negative, got {list(size)}")
    out = list(data.shape)
    if size:
        out[hidx], out[widx] = size[0], size[-1]
    return TensorType(out, data.dtype)


# ------------------------------------------------------------------ type relations: the rest


def _axis_in(axis: int, ndim: int, lo: int) -> int:
    """`axis` checked against [lo, ndim), made non-negative."""
    if not lo <= axis < ndim:
        raise TypeRelError(f"axis {axis} is out of range [{lo}, {ndim}) for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def bias_add_rel(args, attrs):
    data, bias = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "bias")
    axis = _axis_in(attrs["axis"], len(data.shape), -len(data.shape))
    _expect("bias", bias, (data.shape[axis],), data.dtype)
    return data


def prelu_rel(args, attrs):
    data, alpha = tensor_arg(args, 0, "data"), tensor_arg(args, 1, "alpha")
    axis = _axis_in(attrs["axis"], len(data.shape), 0)  # TVM indexes the shape with it unnormalised
    _expect("alpha", alpha, (data.shape[axis],), data.dtype)
    return data


def softmax_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    _axis_in(attrs["axis"], len(data.shape), -len(data.shape))
    return data


def lrn_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    _axis_in(attrs["axis"], len(data.shape), -len(data.shape))
    return data


def dropout_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    return TupleType([data, data])


def batch_flatten_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    if not data.shape:
        raise TypeRelError(f"batch_flatten needs a tensor of rank >= 1, got {fmt_type(data)}")
    rest = 1
    for d in data.shape[1:]:
        if d is ANY:
            rest = ANY
            break
        rest *= d
    return TensorType((data.shape[0], rest), data.dtype)


def batch_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    axis = _axis_in(attrs["axis"], len(data.shape), -1)  # TVM takes -1 but no other negative axis
    vec = TensorType((data.shape[axis],), data.dtype)
    for i, name in enumerate(("gamma", "beta", "moving_mean", "moving_var"), 1):
        _expect(name, tensor_arg(args, i, name), vec.shape, data.dtype)
    return TupleType([data, vec, vec])


def layer_norm_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    axis = _axis_in(attrs["axis"], len(data.shape), -len(data.shape))
    for i, name in enumerate(("gamma", "beta"), 1):
        _expect(name, tensor_arg(args, i, name), (data.shape[axis],), data.dtype)
    return data


PAD_MODES = ("constant", "edge", "reflect")


def pad_rel(args, attrs):
    data = tensor_arg(args, 0, "data")
    tensor_arg(args, 1, "pad_val")
    width, mode = attrs["pad_width"], attrs["pad_mode"]
    if mode not in PAD_MODES:
        raise TypeRelError(f"pad_mode must be one of {', '.join(PAD_MODES)}, got \"{mode}\"")
    if len(width) != len(data.shape):
        raise TypeRelError(f"pad_width has {len(width)} pairs for a tensor of rank {len(data.shape)}: "
                           f"{fmt_type(data)}")
    out = []
    for i, (d, pair) in enumerate(zip(data.shape, width)):
        if len(pair) != 2:
            raise TypeRelError(f"pad_width[{i}] must be a pair (before, after), got {list(pair)}")
        if d is not ANY and d + pair[0] + pair[1] < 0:
            raise TypeRelError(f"padding {list(pair)} makes dimension {i} of {fmt_shape(data.shape)} negative")
        out.append(ANY if d is ANY else d + pair[0] + pair[1])
    return TensorType(out, data.dtype)


# ------------------------------------------------------------------ references


def _acc(*arrays):
    """The arrays in the accumulation type: int64 for integers and bool, float64 for floats."""
    kind = np.int64 if all(a.dtype.kind in "iub" for a in arrays) else np.float64
    return [np.asarray(a, dtype=kind) for a in arrays]


def _canon(x, layout: str, canon: str):
    return x.transpose([layout.index(c) for c in canon])


def _uncanon(x, canon: str, layout: str):
    return x.transpose([canon.index(c) for c in layout])


def _tdiv(total, count, dtype):
    """total / count in `dtype`; integers truncate toward zero like TVM's `div`."""
    if np.dtype(dtype).kind in "iub":
        q = np.abs(total) // count
        return np.where(total < 0, -q, q).astype(dtype)
    return (total / count).astype(dtype)


def _slices(start: int, d: int, s: int, n: int) -> slice:
    """Rows start, start+s, ... (n of them) of a window offset by tap start*d."""
    return slice(start * d, start * d + (n - 1) * s + 1, s)


def _pads(padding, nd: int) -> tuple:
    """Normalised padding (starts..., ends...) as np.pad's (before, after) per window axis."""
    padding = _PAD_BY_RANK[nd](padding)
    return tuple(zip(padding[:nd], padding[nd:]))


def _conv(data, weight, *, strides, padding, dilation, groups, channels, kernel_size, data_layout,
          kernel_layout, out_layout, out_dtype, axes):
    data_canon = "NC" + axes
    x, w = _acc(_canon(data, data_layout, data_canon), _canon(weight, kernel_layout, "OI" + axes))
    n, c, *size = x.shape
    if groups > 1 and c == groups == w.shape[0] and w.shape[1] != 1:
        w = w.reshape(-1, 1, *w.shape[2:])  # depthwise [C, multiplier, kh, kw]: output c * m + j
    o, i, *ks = w.shape
    if c != i * groups or o % groups:
        raise ValueError(f"conv: {c} input and {o} output channels do not split into {groups} groups of {i}")
    pads = _pads(padding, len(axes))
    padded = [m + a + b for m, (a, b) in zip(size, pads)]
    outs = [(m - (k - 1) * d - 1) // s + 1 for m, k, d, s in zip(padded, ks, dilation, strides)]
    xg = np.pad(x, ((0, 0), (0, 0), *pads)).reshape(n, groups, i, *padded)
    wg = w.reshape(groups, o // groups, i, *ks)
    out = np.zeros((n, groups, o // groups, *outs), x.dtype)
    for tap in itertools.product(*map(range, ks)):
        patch = xg[(..., *map(_slices, tap, dilation, strides, outs))]
        out += np.einsum("ngi...,goi->ngo...", patch, wg[(..., *tap)])
    out = out.reshape(n, o, *outs)
    return _uncanon(out, data_canon, out_layout or data_layout).astype(out_dtype or data.dtype)


def _conv_transpose(data, weight, *, channels, kernel_size, strides, output_padding, padding, dilation,
                    groups, data_layout, kernel_layout, out_layout, out_dtype, axes):
    data_canon = "NC" + axes
    x, w = _acc(_canon(data, data_layout, data_canon), _canon(weight, kernel_layout, "IO" + axes))
    n, c, *size = x.shape
    _, og, *ks = w.shape
    ig = c // groups
    xg, wg = x.reshape(n, groups, ig, *size), w.reshape(groups, ig, og, *ks)
    # Scatter every input cell's kernel-sized contribution, then crop `padding` and extend
    # by `output_padding` (cells past the scattered extent are zero).
    full_size = [(m - 1) * s + (k - 1) * d + 1 for m, s, k, d in zip(size, strides, ks, dilation)]
    full = np.zeros((n, groups, og, *full_size), x.dtype)
    for tap in itertools.product(*map(range, ks)):
        full[(..., *map(_slices, tap, dilation, strides, size))] += np.einsum("ngi...,gio->ngo...", xg,
                                                                              wg[(..., *tap)])
    pads = _pads(padding, len(axes))
    outs = [f - a - b + op for f, (a, b), op in zip(full_size, pads, output_padding)]
    full = np.pad(full, ((0, 0),) * 3 + tuple((0, max(0, a + o - f)) for f, (a, _), o in zip(full_size, pads, outs)))
    out = full[(..., *(slice(a, a + o) for (a, _), o in zip(pads, outs)))].reshape(n, groups * og, *outs)
    return _uncanon(out, data_canon, out_layout or data_layout).astype(out_dtype or data.dtype)


def _matmul(a, b, *, units, out_dtype, transpose_a, transpose_b):
    x, y = _acc(a, b)
    if transpose_a:
        x = np.swapaxes(x, -1, -2)
    return np.matmul(x, y.T if transpose_b else y).astype(out_dtype or a.dtype)


def _dense(data, weight, *, units, out_dtype):
    return _matmul(data, weight, units=units, out_dtype=out_dtype, transpose_a=False, transpose_b=True)


def _batch_matmul(a, b, *, out_dtype, transpose_a, transpose_b):
    x, y = _acc(a, b)
    x = np.swapaxes(x, 1, 2) if transpose_a else x
    y = np.swapaxes(y, 1, 2) if transpose_b else y
    return np.matmul(x, y).astype(out_dtype or a.dtype)


def _axes_last(x, layout: str, axes: str = "HW"):
    """Move the window axes of a pooling layout to the back; returns the array and the way back."""
    letters = re.findall(r"[A-Za-z]", layout)
    src = [letters.index(a) for a in axes]
    dst = list(range(-len(axes), 0))
    return np.moveaxis(x, src, dst), lambda y: np.moveaxis(y, dst, src)


def _pool(data, kind, *, pool_size, strides, dilation, padding, layout, out_layout, ceil_mode,
          count_include_pad=False, axes):
    x, back = _axes_last(data, layout, axes)
    nd = len(axes)
    size, pads = x.shape[-nd:], _pads(padding, nd)
    extra = [s - 1 if ceil_mode else 0 for s in strides]
    outs = [(m + a + b - (k - 1) * d - 1 + e) // s + 1
            for m, (a, b), k, d, s, e in zip(size, pads, pool_size, dilation, strides, extra)]
    # ceil_mode's extra tail padding, enough for the last window to be read whole
    tails = [max(b, (o - 1) * s + (k - 1) * d + 1 - m - a)
             for m, (a, b), k, d, s, o in zip(size, pads, pool_size, dilation, strides, outs)]
    np_pads = ((0, 0),) * (x.ndim - nd) + tuple((a, t) for (a, _), t in zip(pads, tails))

    def windows(arr):
        for tap in itertools.product(*map(range, pool_size)):
            yield arr[(..., *map(_slices, tap, dilation, strides, outs))]

    if kind == "max":
        lowest = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        out = np.maximum.reduce(list(windows(np.pad(x, np_pads, constant_values=lowest))))
        return back(out).astype(data.dtype)
    total = sum(windows(np.pad(_acc(x)[0], np_pads)))
    # The divisor counts the data cells, plus the declared padding if count_include_pad
    # (never ceil_mode's extra cells): a window-sum of an indicator image.
    mask = np.zeros([a + m + t for m, (a, _), t in zip(size, pads, tails)], np.int64)
    if count_include_pad:
        mask[tuple(slice(0, a + m + b) for m, (a, b) in zip(size, pads))] = 1
    else:
        mask[tuple(slice(a, a + m) for m, (a, _) in zip(size, pads))] = 1
    count = np.maximum(sum(windows(mask)), 1)
    return back(_tdiv(total, count, data.dtype))


def _global_pool2d(data, kind, *, layout, out_layout):
    x, back = _axes_last(data, layout)
    if kind == "max":
        return back(x.max(axis=(-2, -1), keepdims=True)).astype(data.dtype)
    total = _acc(x)[0].sum(axis=(-2, -1), keepdims=True)
    return back(_tdiv(total, x.shape[-2] * x.shape[-1], data.dtype))


def adaptive_avg_pool(data, output_size, layout: str, axes: str):
    """Adaptive average pooling over the window `axes` of `layout` ("HW", "DHW"); no output size
    keeps every axis's size."""
    x, back = _axes_last(data, layout, axes)
    nd = len(axes)
    sizes = x.shape[-nd:]
    outs = tuple(output_size) if output_size else sizes
    (xa,) = _acc(x)
    out = np.zeros(x.shape[:-nd] + outs, xa.dtype)
    # TVM's window for output i of n over size s: [floor(i*s/n), ceil((i+1)*s/n))
    for index in itertools.product(*(range(o) for o in outs)):
        bounds = [(i * s // o, -(-(i + 1) * s // o)) for i, s, o in zip(index, sizes, outs)]
        window = xa[(...,) + tuple(slice(lo, hi) for lo, hi in bounds)]
        count = math.prod(hi - lo for lo, hi in bounds)
        out[(...,) + index] = _tdiv(window.sum(axis=tuple(range(-nd, 0))), count, xa.dtype)
    return back(out.astype(data.dtype))


def _adaptive_avg_pool2d(data, *, output_size, layout, out_layout):
    return adaptive_avg_pool(data, (output_size[0], output_size[-1]) if output_size else None, layout, "HW")


def _along(v, axis: int, ndim: int):
    """A vector shaped to broadcast along `axis` of an ndim-D tensor."""
    return v.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _bias_add(data, bias, *, axis):
    return (data + _along(bias, axis % data.ndim, data.ndim)).astype(data.dtype)


def _prelu(data, alpha, *, axis):
    return np.where(data > 0, data, data * _along(alpha, axis, data.ndim)).astype(data.dtype)


def _normalise(data, mean, var, gamma, beta, epsilon, center, scale):
    out = (data.astype(np.float64) - mean) / np.sqrt(var + epsilon)
    return (out * (gamma if scale else 1) + (beta if center else 0)).astype(data.dtype)


def _batch_norm(data, gamma, beta, moving_mean, moving_var, *, axis, epsilon, center, scale):
    g, b, m, v = (_along(a.astype(np.float64), axis % data.ndim, data.ndim)
                  for a in (gamma, beta, moving_mean, moving_var))
    return _normalise(data, m, v, g, b, epsilon, center, scale), moving_mean.copy(), moving_var.copy()


def _layer_norm(data, gamma, beta, *, axis, epsilon, center, scale):
    axis = axis % data.ndim
    x = data.astype(np.float64)
    g, b = (_along(a.astype(np.float64), axis, data.ndim) for a in (gamma, beta))
    return _normalise(data, x.mean(axis=axis, keepdims=True), x.var(axis=axis, keepdims=True), g, b, epsilon,
                      center, scale)


def _softmax(data, *, axis):
    x = data.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True, initial=-np.inf))  # initial: empty axes
    return (e / e.sum(axis=axis, keepdims=True)).astype(data.dtype)


def _log_softmax(data, *, axis):
    x = data.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):  # an empty axis sums to 0; its log is never used
        return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(data.dtype)


def _dropout(data, *, rate):
    # Inference: the data passes through; nothing is dropped, so the mask is all ones.
    return data.copy(), np.ones_like(data)


def _pad(data, pad_val, *, pad_width, pad_mode):
    # Negative widths crop (TVM allows them as long as the result is not negative).
    x = data[tuple(slice(max(0, -a), data.shape[i] - max(0, -b)) for i, (a, b) in enumerate(pad_width))]
    widths = [(max(0, a), max(0, b)) for a, b in pad_width]
    if pad_mode == "constant":
        return np.pad(x, widths, constant_values=np.asarray(pad_val).reshape(-1)[0].astype(data.dtype))
    return np.pad(x, widths, mode=pad_mode)


def _batch_flatten(data):
    rest = 1
    for d in data.shape[1:]:
        rest *= d
    return data.reshape(data.shape[0], rest)


def _lrn(data, *, size, axis, bias, alpha, beta):
    # TVM: data / (bias + alpha/size * window sum of squares)^beta, the window starting at
    # c - size//2 and `size` channels long, zero beyond the edges.
    axis = axis % data.ndim
    sq = np.moveaxis(data.astype(np.float64) ** 2, axis, -1)
    c = sq.shape[-1]
    padded = np.pad(sq, ((0, 0),) * (sq.ndim - 1) + ((size // 2, size - 1 - size // 2),))
    total = sum(padded[..., k:k + c] for k in range(size))
    out = data / np.moveaxis((bias + alpha / size * total) ** beta, -1, axis)
    return out.astype(data.dtype)


# ------------------------------------------------------------------ declarations


# per window rank: one value per axis, its normalisers (TVM's Python API: a single value means
# every axis; get_pad_tuple2d/3d), the canonical data layout
_WINDOW = {2: ((1, 1), _pair, _pad4, "NCHW"), 3: ((1, 1, 1), _triple, _pad6, "NCDHW")}


def _conv_window(nd: int = 2) -> tuple:
    ones, per_axis, pad, _ = _WINDOW[nd]
    return (AttrSpec("strides", "ints", ones, per_axis), AttrSpec("padding", "ints", (0,) * nd, pad),
            AttrSpec("dilation", "ints", ones, per_axis), AttrSpec("groups", "int", 1))


def _channels(nd: int = 2) -> tuple:
    return AttrSpec("channels", "int?", None), AttrSpec("kernel_size", "ints?", None, _WINDOW[nd][1])


def _conv_transpose_window(nd: int = 2) -> tuple:
    ones, per_axis, pad, _ = _WINDOW[nd]
    return (AttrSpec("strides", "ints", ones, per_axis), AttrSpec("output_padding", "ints", (0,) * nd, per_axis),
            AttrSpec("padding", "ints", (0,) * nd, pad), AttrSpec("dilation", "ints", ones, per_axis),
            AttrSpec("groups", "int", 1))


def _conv_layouts(kernel_layout):
    data_layout = "NC" + kernel_layout[2:]
    return (AttrSpec("data_layout", "str", data_layout), AttrSpec("kernel_layout", "str", kernel_layout),
            AttrSpec("out_layout", "str", ""), AttrSpec("out_dtype", "dtype", ""))


def _pool_attrs(*extra, nd: int = 2):
    ones, per_axis, pad, layout = _WINDOW[nd]
    return (AttrSpec("pool_size", "ints", normalize=per_axis), AttrSpec("strides", "ints", ones, per_axis),
            AttrSpec("dilation", "ints", ones, per_axis), AttrSpec("padding", "ints", (0,) * nd, pad),
            AttrSpec("layout", "str", layout), AttrSpec("out_layout", "str", ""),
            AttrSpec("ceil_mode", "bool", False)) + extra


COUNT_PAD = AttrSpec("count_include_pad", "bool", False)
GLOBAL_POOL = (AttrSpec("layout", "str", "NCHW"), AttrSpec("out_layout", "str", ""))
NORM = (AttrSpec("epsilon", "float", 1e-5), AttrSpec("center", "bool", True), AttrSpec("scale", "bool", True))
AXIS1, AXIS_LAST = (AttrSpec("axis", "int", 1),), (AttrSpec("axis", "int", -1),)


def _kind(ref, kind):
    return lambda data, **attrs: ref(data, kind, **attrs)


register(
    # Attribute order is TVM's TVM_ATTR_FIELD order: the printer follows it.
    OpDef("nn.conv2d", ("data", "weight"), partial(conv_rel, axes="HW"), FUSABLE, partial(_conv, axes="HW"),
          attrs=_conv_window() + _channels() + _conv_layouts("OIHW")),
    OpDef("nn.conv3d", ("data", "weight"), partial(conv_rel, axes="DHW"), FUSABLE, partial(_conv, axes="DHW"),
          attrs=_conv_window(3) + _channels(3) + _conv_layouts("OIDHW")),
    OpDef("nn.conv2d_transpose", ("data", "weight"), partial(conv_transpose_rel, axes="HW"), FUSABLE,
          partial(_conv_transpose, axes="HW"), attrs=_channels() + _conv_transpose_window() + _conv_layouts("IOHW")),
    OpDef("nn.conv3d_transpose", ("data", "weight"), partial(conv_transpose_rel, axes="DHW"), FUSABLE,
          partial(_conv_transpose, axes="DHW"),
          attrs=_channels(3) + _conv_transpose_window(3) + _conv_layouts("IODHW")),
    OpDef("nn.dense", ("data", "weight"), dense_rel, FUSABLE, _dense,
          attrs=(AttrSpec("units", "int?"), AttrSpec("out_dtype", "dtype", ""))),
    OpDef("nn.matmul", ("tensor_a", "tensor_b"), matmul_rel, FUSABLE, _matmul,
          attrs=(AttrSpec("units", "int?"), AttrSpec("out_dtype", "dtype", ""),
                 AttrSpec("transpose_a", "bool", False), AttrSpec("transpose_b", "bool", False))),
    # transpose_b defaults to False in BatchMatmulAttrs (what the text format means when it is
    # absent); TVM's Python builder passes True, so TVM prints `transpose_b=True` explicitly.
    OpDef("nn.batch_matmul", ("tensor_a", "tensor_b"), batch_matmul_rel, FUSABLE, _batch_matmul,
          attrs=(AttrSpec("out_dtype", "dtype", ""), AttrSpec("transpose_a", "bool", False),
                 AttrSpec("transpose_b", "bool", False))),
    OpDef("nn.bias_add", ("data", "bias"), bias_add_rel, BROADCAST, _bias_add, attrs=AXIS1),
    OpDef("nn.max_pool2d", ("data",), partial(pool_rel, axes="HW"), FUSABLE, partial(_pool, kind="max", axes="HW"),
          attrs=_pool_attrs()),
    OpDef("nn.avg_pool2d", ("data",), partial(pool_rel, axes="HW"), FUSABLE, partial(_pool, kind="avg", axes="HW"),
          attrs=_pool_attrs(COUNT_PAD)),
    OpDef("nn.max_pool3d", ("data",), partial(pool_rel, axes="DHW"), FUSABLE,
          partial(_pool, kind="max", axes="DHW"), attrs=_pool_attrs(nd=3)),
    OpDef("nn.avg_pool3d", ("data",), partial(pool_rel, axes="DHW"), FUSABLE,
          partial(_pool, kind="avg", axes="DHW"), attrs=_pool_attrs(COUNT_PAD, nd=3)),
    OpDef("nn.global_avg_pool2d", ("data",), global_pool2d_rel, FUSABLE, _kind(_global_pool2d, "avg"),
          attrs=GLOBAL_POOL),
    OpDef("nn.global_max_pool2d", ("data",), global_pool2d_rel, FUSABLE, _kind(_global_pool2d, "max"),
          attrs=GLOBAL_POOL),
    OpDef("nn.adaptive_avg_pool2d", ("data",), adaptive_pool2d_rel, FUSABLE, _adaptive_avg_pool2d,
          attrs=(AttrSpec("output_size", "ints", ()),) + GLOBAL_POOL),
    OpDef("nn.batch_norm", ("data", "gamma", "beta", "moving_mean", "moving_var"), batch_norm_rel, FUSABLE,
          _batch_norm, attrs=AXIS1 + NORM),
    # layer_norm has no TOpPattern in TVM, which FuseOps reads as kOpaque.
    OpDef("nn.layer_norm", ("data", "gamma", "beta"), layer_norm_rel, OPAQUE, _layer_norm, attrs=AXIS_LAST + NORM),
    OpDef("nn.softmax", ("data",), softmax_rel, FUSABLE, _softmax, attrs=AXIS_LAST),
    OpDef("nn.log_softmax", ("data",), softmax_rel, FUSABLE, _log_softmax, attrs=AXIS_LAST),
    OpDef("nn.dropout", ("data",), dropout_rel, OPAQUE, _dropout, attrs=(AttrSpec("rate", "float", 0.5),),
          stateful=True),
    OpDef("nn.pad", ("data", "pad_val"), pad_rel, INJECTIVE, _pad,
          attrs=(AttrSpec("pad_width", "intss"), AttrSpec("pad_mode", "str", "constant"))),
    OpDef("nn.prelu", ("data", "alpha"), prelu_rel, BROADCAST, _prelu, attrs=AXIS1),
    OpDef("nn.batch_flatten", ("data",), batch_flatten_rel, INJECTIVE, _batch_flatten, reshape_op=True),
    OpDef("nn.lrn", ("data",), lrn_rel, OPAQUE, _lrn,
          attrs=(AttrSpec("size", "int", 5), AttrSpec("axis", "int", 1), AttrSpec("bias", "float", 2.0),
                 AttrSpec("alpha", "float", 0.0001), AttrSpec("beta", "float", 0.75))),
)
