"""ONNX neural-network ops: convolution (also deformable), pooling, normalisation, Gemm/MatMul, Det,
softmax.

Convolution and pooling are 2-D (NCHW) or 3-D (NCDHW); a 1-D (NCL) input is lifted to 2-D
with a unit height and squeezed back. `auto_pad` is resolved to explicit pads from static shapes.
"""

from __future__ import annotations

import math

from ...ir.expr import Tuple, TupleGetItem
from ...ir.types import ANY
from . import converter

# ----------------------------------------------------------------------------- helpers


def _call(ctx, op: str, *args, **attrs):
    """`ctx.call` with list attributes as the tuples the op registry expects."""
    return ctx.call(op, *args, **{k: _tuples(v) for k, v in attrs.items()})


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def _dtype(ctx, x) -> str:
    return ctx.type_of(x).dtype


def _scalar(ctx, value, like):
    return ctx.const(value, _dtype(ctx, like))


def _static(ctx, shape, what: str) -> tuple:
    if ANY in shape:
        raise ctx.error(f"{what} needs a static shape, got {list(shape)}")
    return tuple(int(d) for d in shape)


class _Spatial:
    """Window attributes of a Conv/Pool node, as 2-D or 3-D (a 1-D node gets a unit height)."""

    def __init__(self, ctx, x, attrs, kernel):
        rank = len(ctx.shape_of(x))
        if rank not in (3, 4, 5):
            raise ctx.error(f"only 1-D, 2-D and 3-D windows are supported (input of rank {rank})")
        self.lifted = rank == 3
        self.nd = 3 if rank == 5 else 2  # the window axes of the Relay op
        self.ctx = ctx
        self.data = _call(ctx, "expand_dims", x, axis=2) if self.lifted else x
        self.kernel = self.per_axis(kernel, 1)
        self.strides = self.per_axis(attrs.get("strides"), 1)
        self.dilations = self.per_axis(attrs.get("dilations"), 1)
        pads = attrs.get("pads")
        if pads is None:
            self.pads = (0,) * (2 * self.nd)
        elif self.lifted:
            if len(pads) != 2:
                raise ctx.error(f"`pads` must have 2 values, got {list(pads)}")
            self.pads = (0, pads[0], 0, pads[1])
        else:
            if len(pads) != 2 * self.nd:
                raise ctx.error(f"`pads` must have {2 * self.nd} values, got {list(pads)}")
            self.pads = tuple(int(p) for p in pads)
        self.auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
        if self.auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
            raise ctx.error(f"unknown auto_pad `{self.auto_pad}`")

    def per_axis(self, values, default) -> tuple:
        """One value per window axis of the Relay op (a lifted 1-D node: 1 for the height)."""
        if values is None:
            return (default,) * self.nd
        values = [int(v) for v in values]
        given = 1 if self.lifted else self.nd
        if len(values) != given:
            raise self.ctx.error(f"expected {given} window values, got {values}")
        return (1, values[0]) if self.lifted else tuple(values)

    def padding(self) -> tuple:
        """Explicit padding for a forward window: the axes' starts, then their ends."""
        if self.auto_pad == "NOTSET":
            return self.pads
        if self.auto_pad == "VALID":
            return (0,) * (2 * self.nd)
        size = _static(self.ctx, self.ctx.shape_of(self.data)[2:], f"auto_pad={self.auto_pad}")
        begin, end = [], []
        for n, k, s, d in zip(size, self.kernel, self.strides, self.dilations, strict=True):
            total = max(0, (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n)
            small, large = total // 2, total - total // 2
            begin.append(small if self.auto_pad == "SAME_UPPER" else large)
            end.append(large if self.auto_pad == "SAME_UPPER" else small)
        return (*begin, *end)

    def result(self, y):
        return _call(self.ctx, "squeeze", y, axis=[2]) if self.lifted else y


# ----------------------------------------------------------------------------- convolution


@converter("Conv", 1, 11)
def _conv(ctx, inputs, attrs):
    x, w = inputs[0], inputs[1]
    wshape = ctx.shape_of(w)
    win = _Spatial(ctx, x, attrs, attrs.get("kernel_shape") or wshape[2:])
    weight = _call(ctx, "expand_dims", w, axis=2) if win.lifted else w
    y = _call(ctx, f"nn.conv{win.nd}d", win.data, weight, strides=win.strides, padding=win.padding(),
                 dilation=win.dilations, groups=int(attrs.get("group", 1)), channels=wshape[0],
                 kernel_size=win.kernel)
    if len(inputs) > 2 and inputs[2] is not None:
        y = _call(ctx, "nn.bias_add", y, inputs[2], axis=1)
    return win.result(y)


@converter("DeformConv", 19)
def _deform_conv(ctx, inputs, attrs):
    """2-D deformable convolution as onnx defines it (TVM v0.19 does not convert it): each
    kernel tap of each output samples its offset group's channels bilinearly at its
    position moved by `offset` (corners outside the image read 0, as GridSample with
    align_corners=1 and zero padding), scaled by `mask`; the sampled columns
    (N, C * K, Ho * Wo) meet the weights per group in an `einsum`. Static shapes."""
    import numpy as np

    x, w, offset = inputs[0], inputs[1], inputs[2]
    bias = inputs[3] if len(inputs) > 3 else None
    mask = inputs[4] if len(inputs) > 4 else None
    xs = _static(ctx, ctx.shape_of(x), "DeformConv's input")
    ws = _static(ctx, ctx.shape_of(w), "DeformConv's weight")
    os_ = _static(ctx, ctx.shape_of(offset), "DeformConv's offset")
    if len(xs) != 4:
        raise ctx.error(f"only 2-D DeformConv (an input of rank 4) is supported, got rank {len(xs)}")
    n, c, height, width = xs
    m, kh, kw = ws[0], *(attrs.get("kernel_shape") or ws[2:])
    group, offset_group = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
    sh, sw = attrs.get("strides", [1, 1])
    dh, dw = attrs.get("dilations", [1, 1])
    pt, pl = attrs.get("pads", [0, 0, 0, 0])[:2]
    taps, (oh, ow) = kh * kw, os_[2:]
    if (c != ws[1] * group or m % group or c % offset_group or len(os_) != 4 or os_[0] != n
            or os_[1] != 2 * offset_group * taps):
        raise ctx.error(f"DeformConv: input {list(xs)}, weight {list(ws)} and offset {list(os_)} disagree with "
                        f"group {group} and offset_group {offset_group}")
    dtype = ctx.type_of(x).dtype

    def const(a):
        return ctx.const(np.asarray(a, dtype), dtype)

    # the taps' positions before the offsets: (1, 1, K, Ho, Wo)
    rows = (np.arange(oh)[None, :, None] * sh - pt + (np.arange(kh) * dh).repeat(kw)[:, None, None])
    cols = (np.arange(ow)[None, None, :] * sw - pl + np.tile(np.arange(kw) * dw, kh)[:, None, None])
    moved = _call(ctx, "reshape", offset, newshape=[n, offset_group, taps, 2, oh, ow])
    at_y = _call(ctx, "add", _call(ctx, "take", moved, ctx.const(0, "int64"), axis=3),
                 const(np.broadcast_to(rows, (taps, oh, ow))[None, None]))
    at_x = _call(ctx, "add", _call(ctx, "take", moved, ctx.const(1, "int64"), axis=3),
                 const(np.broadcast_to(cols, (taps, oh, ow))[None, None]))
    y0, x0 = _call(ctx, "floor", at_y), _call(ctx, "floor", at_x)
    fy, fx = _call(ctx, "subtract", at_y, y0), _call(ctx, "subtract", at_x, x0)
    per_group = c // offset_group
    image = _call(ctx, "reshape", x, newshape=[n, offset_group, per_group, height * width])
    length = taps * oh * ow
    sampled = None
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yy, xx = _call(ctx, "add", y0, const(dy)), _call(ctx, "add", x0, const(dx))
        inside = _call(ctx, "logical_and",
                       _call(ctx, "logical_and", _call(ctx, "greater_equal", yy, const(0)),
                             _call(ctx, "less", yy, const(height))),
                       _call(ctx, "logical_and", _call(ctx, "greater_equal", xx, const(0)),
                             _call(ctx, "less", xx, const(width))))
        weight = _call(ctx, "multiply", fy if dy else _call(ctx, "subtract", const(1), fy),
                       fx if dx else _call(ctx, "subtract", const(1), fx))
        weight = _call(ctx, "where", inside, weight, const(0))
        flat = _call(ctx, "add", _call(ctx, "multiply", _call(ctx, "clip", yy, a_min=0.0, a_max=float(height - 1)),
                                       const(width)), _call(ctx, "clip", xx, a_min=0.0, a_max=float(width - 1)))
        flat = _call(ctx, "reshape", _call(ctx, "cast", flat, dtype="int64"), newshape=[n, offset_group, 1, length])
        index = _call(ctx, "broadcast_to", flat, shape=[n, offset_group, per_group, length])
        values = _call(ctx, "gather", image, index, axis=3)
        term = _call(ctx, "multiply", values,
                     _call(ctx, "reshape", weight, newshape=[n, offset_group, 1, length]))
        sampled = term if sampled is None else _call(ctx, "add", sampled, term)
    if mask is not None:
        sampled = _call(ctx, "multiply", sampled, _call(ctx, "reshape", mask, newshape=[n, offset_group, 1, length]))
    columns = _call(ctx, "reshape", sampled, newshape=[n, group, (c // group) * taps, oh * ow])
    kernels = _call(ctx, "reshape", w, newshape=[group, m // group, (c // group) * taps])
    y = _call(ctx, "einsum", ctx.typed(Tuple([kernels, columns])), equation="gmk,ngkl->ngml")
    y = _call(ctx, "reshape", y, newshape=[n, m, oh, ow])
    if bias is not None:
        y = _call(ctx, "nn.bias_add", y, bias, axis=1)
    return y


@converter("ConvTranspose", 1, 11)
def _conv_transpose(ctx, inputs, attrs):
    x, w = inputs[0], inputs[1]
    wshape = ctx.shape_of(w)
    group = int(attrs.get("group", 1))
    win = _Spatial(ctx, x, attrs, attrs.get("kernel_shape") or wshape[2:])
    weight = _call(ctx, "expand_dims", w, axis=2) if win.lifted else w
    output_padding = win.per_axis(attrs.get("output_padding"), 0)
    if win.lifted:
        output_padding = (0, output_padding[1])
    output_shape = attrs.get("output_shape")
    pads = win.pads
    if output_shape is not None or win.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        size = _static(ctx, ctx.shape_of(win.data)[2:], "ConvTranspose's output_shape/auto_pad")
        if output_shape is not None:
            want = win.per_axis(output_shape[-len(size) + (1 if win.lifted else 0):], 1)
        else:
            want = tuple(n * s for n, s in zip(size, win.strides, strict=True))
        begin, end, opad = [], [], []
        for n, k, s, d, op, o in zip(size, win.kernel, win.strides, win.dilations, output_padding, want, strict=True):
            total = s * (n - 1) + op + (k - 1) * d + 1 - o
            extra = max(0, -total)  # a larger output than the kernel reaches: zero rows at the end
            total = max(0, total)
            small, large = total // 2, total - total // 2
            # the spec (and onnxruntime): the odd cell at the end for SAME_UPPER, else at the start
            upper = win.auto_pad == "SAME_UPPER"
            begin.append(small if upper else large)
            end.append(large if upper else small)
            opad.append(op + extra)
        pads, output_padding = (*begin, *end), tuple(opad)
    elif win.auto_pad == "VALID":
        pads = (0,) * (2 * win.nd)
    y = _call(ctx, f"nn.conv{win.nd}d_transpose", win.data, weight, channels=wshape[1] * group,
              kernel_size=win.kernel, strides=win.strides, output_padding=output_padding, padding=pads,
              dilation=win.dilations, groups=group, kernel_layout="IODHW" if win.nd == 3 else "IOHW")
    if len(inputs) > 2 and inputs[2] is not None:
        y = _call(ctx, "nn.bias_add", y, inputs[2], axis=1)
    return win.result(y)


# ----------------------------------------------------------------------------- Gemm, MatMul


@converter("Gemm", 1, 6, 7, 9, 11, 13)
def _gemm(ctx, inputs, attrs):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    for name, t in (("A", a), ("B", b)):
        if len(ctx.shape_of(t)) != 2:
            raise ctx.error(f"input {name} must be 2-D, got shape {list(ctx.shape_of(t))}")
    if attrs.get("transA", 0):
        a = _call(ctx, "transpose", a, axes=[1, 0])
    if not attrs.get("transB", 0):
        b = _call(ctx, "transpose", b, axes=[1, 0])
    y = _dense(ctx, a, b)
    if alpha != 1.0:
        y = _call(ctx, "multiply", y, _scalar(ctx, alpha, y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = _call(ctx, "multiply", c, _scalar(ctx, beta, c))
        y = _call(ctx, "add", y, c)
    return y


@converter("MatMul", 1, 9, 13)
def _matmul(ctx, inputs, attrs):
    a, b = inputs
    ra, rb = len(ctx.shape_of(a)), len(ctx.shape_of(b))
    if ra == 0 or rb == 0:
        raise ctx.error("MatMul inputs must have rank >= 1")
    # numpy: a 1-D operand gains a unit axis, dropped again from the result
    if ra == 1:
        a = _call(ctx, "expand_dims", a, axis=0)
    if rb == 1:
        b = _call(ctx, "expand_dims", b, axis=1)
    ashape, bshape = ctx.shape_of(a), ctx.shape_of(b)
    if len(bshape) == 2:
        y = _dense(ctx, a, _call(ctx, "transpose", b, axes=[1, 0]))
    elif ANY in ashape[:-2] + bshape[:-2]:
        y = _dynamic_batch_matmul(ctx, a, b)
    else:
        batch_a = _static(ctx, ashape[:-2], "batched MatMul")
        batch_b = _static(ctx, bshape[:-2], "batched MatMul")
        try:
            batch = tuple(_broadcast(batch_a, batch_b))
        except ValueError:
            raise ctx.error(f"MatMul batch dimensions do not broadcast: {list(ashape)} and {list(bshape)}") from None
        m, k = ashape[-2:]
        n = bshape[-1]
        a3 = _call(ctx, "reshape", _broadcast_to(ctx, a, batch + tuple(ashape[-2:])), newshape=[-1, m, k])
        b3 = _call(ctx, "reshape", _broadcast_to(ctx, b, batch + tuple(bshape[-2:])), newshape=[-1, bshape[-2], n])
        y = _call(ctx, "nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=False)
        y = _call(ctx, "reshape", y, newshape=[*batch, m, n])
    if ra == 1:
        y = _call(ctx, "squeeze", y, axis=[len(ctx.shape_of(y)) - 2])
    if rb == 1:
        y = _call(ctx, "squeeze", y, axis=[len(ctx.shape_of(y)) - 1])
    return y


def _dynamic_batch_matmul(ctx, a, b):
    """A batched MatMul whose batch dimensions are known at run time: both sides are
    broadcast to the joint batch shape, flattened to 3-D for `nn.batch_matmul`, and the
    result reshaped back, with the shapes computed by the program as TVM's converter does."""
    from ...ir.expr import Tuple

    ra, rb = len(ctx.shape_of(a)), len(ctx.shape_of(b))
    rank = max(ra, rb)

    def shape(x, r):  # shape_of(x), padded with leading 1s to `rank`
        s = _call(ctx, "shape_of", x, dtype="int64")
        return s if r == rank else _call(ctx, "concatenate", Tuple([ctx.const([1] * (rank - r), "int64"), s]), axis=0)

    def part(s, lo, hi):
        return _call(ctx, "strided_slice", s, begin=[lo], end=[hi], strides=[1], axes=[0])

    sa, sb = shape(a, ra), shape(b, rb)
    batch = _call(ctx, "maximum", part(sa, 0, rank - 2), part(sb, 0, rank - 2))
    minus_one = ctx.const([-1], "int64")
    flat = []
    for x, s in ((a, sa), (b, sb)):
        target = _call(ctx, "concatenate", Tuple([batch, part(s, rank - 2, rank)]), axis=0)
        x = ctx.broadcast_to(x, target)
        flat.append(ctx.reshape_to(x, _call(ctx, "concatenate", Tuple([minus_one, part(s, rank - 2, rank)]), axis=0)))
    y = _call(ctx, "nn.batch_matmul", *flat, transpose_a=False, transpose_b=False)
    out = _call(ctx, "concatenate", Tuple([batch, part(sa, rank - 2, rank - 1), part(sb, rank - 1, rank)]), axis=0)
    return ctx.reshape_to(y, out)


def _dense(ctx, data, weight):
    """nn.dense(data, weight), weight [units, k]."""
    units = ctx.shape_of(weight)[0]
    return _call(ctx, "nn.dense", data, weight, units=None if units == ANY else int(units))


def _broadcast(x: tuple, y: tuple) -> list:
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + x, (1,) * (n - len(y)) + y
    out = []
    for p, q in zip(x, y, strict=True):
        if p != q and 1 not in (p, q):
            raise ValueError
        out.append(max(p, q))
    return out


def _broadcast_to(ctx, x, shape: tuple):
    if tuple(ctx.shape_of(x)) == shape:
        return x
    return _call(ctx, "broadcast_to", x, shape=list(shape))


_DET_MAX_ORDER = 5  # 120 products of 5 factors; a larger matrix would want an LU factorisation


@converter("Det", 11)
def _det(ctx, inputs, attrs):
    """The determinant of each trailing (M, M) matrix by Leibniz's formula: the signed
    products a[0, s(0)] ... a[M-1, s(M-1)] over the permutations s, taken from the
    flattened matrix with one constant index table (M <= 5). TVM v0.19 does not convert Det."""
    import itertools

    import numpy as np

    x = inputs[0]
    shape = ctx.shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] is ANY:
        raise ctx.error(f"Det needs square matrices of static order in the last two axes, got shape {list(shape)}")
    order = shape[-1]
    if not 1 <= order <= _DET_MAX_ORDER:
        raise ctx.error(f"Det of matrices of order {order} is not supported (1 to {_DET_MAX_ORDER} are)")
    perms = list(itertools.permutations(range(order)))
    index = np.array([[row * order + col for row, col in enumerate(p)] for p in perms], "int64")
    inversions = [sum(p[i] > p[j] for i in range(order) for j in range(i + 1, order)) for p in perms]
    signs = np.array([-1 if n % 2 else 1 for n in inversions])
    flat = _call(ctx, "reshape", x, newshape=[0] * (len(shape) - 2) + [order * order])
    terms = _call(ctx, "prod", _call(ctx, "take", flat, ctx.const(index), axis=-1), axis=[-1])
    dtype = ctx.type_of(x).dtype
    return _call(ctx, "sum", _call(ctx, "multiply", terms, ctx.const(signs.astype(dtype), dtype)), axis=[-1])


# ----------------------------------------------------------------------------- pooling


def _pool(ctx, inputs, attrs, kind: str):
    if "kernel_shape" not in attrs:
        raise ctx.error("`kernel_shape` is required")
    win = _Spatial(ctx, inputs[0], attrs, attrs["kernel_shape"])
    include_pad = bool(attrs.get("count_include_pad", 0))
    extra = {"count_include_pad": include_pad} if kind == "avg" else {}
    padding = win.padding()
    ceil = bool(attrs.get("ceil_mode", 0))
    if ceil:
        padding, ceil = _ceil_windows(ctx, win, padding, kind == "avg" and include_pad)
    y = _call(ctx, f"nn.{kind}_pool{win.nd}d", win.data, pool_size=win.kernel, strides=win.strides,
              dilation=win.dilations, padding=padding, ceil_mode=ceil, **extra)
    if kind == "max" and len(ctx.node.output) > 1 and ctx.node.output[1]:
        return [win.result(y), win.result(_max_pool_indices(ctx, win, y, padding, int(attrs.get("storage_order", 0))))]
    return win.result(y)


def _max_pool_indices(ctx, win, y, padding, storage_order: int):
    """MaxPool's Indices output: for each output, the flat index (over the whole input,
    row-major, or with storage_order=1 the spatial axes column-major) of the first largest
    element of its window, as onnx's reference and onnxruntime pick it. The window positions
    are a constant table computed at import (static shapes); a position in the padding
    reads an appended -inf. TVM v0.19 does not convert the Indices output."""
    import itertools

    import numpy as np

    shape = _static(ctx, ctx.shape_of(win.data), "MaxPool's Indices")
    size, out = shape[2:], _static(ctx, ctx.shape_of(y), "MaxPool's Indices")[2:]
    batch, channels, spatial = shape[0], shape[1], math.prod(size)
    if storage_order == 1 and win.lifted:
        storage_order = 0  # one spatial axis: both orders agree
    # an element's step along each spatial axis in the index: row-major, or column-major
    strides_of = [math.prod(size[:d]) if storage_order else math.prod(size[d + 1:]) for d in range(win.nd)]
    table, flat = [], []
    for o in itertools.product(*map(range, out)):
        rows, where = [], []
        for k in itertools.product(*map(range, win.kernel)):
            at = [o[d] * win.strides[d] - padding[d] + k[d] * win.dilations[d] for d in range(win.nd)]
            inside = all(0 <= at[d] < size[d] for d in range(win.nd))
            rows.append(int(np.ravel_multi_index(at, size)) if inside else spatial)
            where.append(int(np.dot(at, strides_of)) if inside else 0)
        table.append(rows)
        flat.append(where)
    dtype = ctx.type_of(win.data).dtype
    values = _call(ctx, "reshape", win.data, newshape=[batch, channels, spatial])
    sentinel = ctx.const(np.full((batch, channels, 1), -np.inf, dtype), dtype)
    padded = _call(ctx, "concatenate", ctx.typed(Tuple([values, sentinel])), axis=2)
    windows = _call(ctx, "take", padded, ctx.const(np.array(table, "int64")), axis=2)  # (N, C, O, K)
    first = _call(ctx, "argmax", windows, axis=[3], keepdims=True)
    index_table = ctx.const(np.broadcast_to(np.array(flat, "int64"), (batch, channels, len(flat), len(flat[0]))).copy())
    picked = _call(ctx, "gather", index_table, _call(ctx, "cast", first, dtype="int64"), axis=3)
    offsets = (np.arange(batch * channels, dtype="int64") * spatial).reshape(batch, channels, 1, 1)
    picked = _call(ctx, "add", picked, ctx.const(offsets))
    return _call(ctx, "reshape", picked, newshape=[batch, channels, *out])


def _ceil_windows(ctx, win, padding, counts_pad: bool):
    """ONNX's ceil_mode drops a last window that would start in the end padding; per axis,
    say whether the extra ceil_mode window is kept. When the axes agree, Relay's ceil_mode
    says it; otherwise the kept axes get explicit end padding instead."""
    size = ctx.shape_of(win.data)[2:]
    if ANY in size:
        return padding, True
    keep, drop = [], []  # per axis: an extra window that is kept / dropped
    for i, (n, k, s, d) in enumerate(zip(size, win.kernel, win.strides, win.dilations, strict=True)):
        span = n + padding[i] + padding[i + win.nd] - (k - 1) * d - 1
        floor_out, ceil_out = span // s + 1, -(-span // s) + 1
        keep.append(ceil_out > floor_out and (ceil_out - 1) * s < n + padding[i])
        drop.append(ceil_out > floor_out and not keep[-1])
    if not any(drop) or not any(keep):
        return padding, not any(drop)
    if counts_pad:
        raise ctx.error("AveragePool with ceil_mode and count_include_pad is not supported when only one axis "
                        "gains a ceil_mode window")
    pads = list(padding)
    for i, kept in enumerate(keep):
        if kept:
            pads[i + win.nd] += win.strides[i] - 1
    return tuple(pads), False


@converter("MaxPool", 1, 8, 10, 11, 12)
def _max_pool(ctx, inputs, attrs):
    return _pool(ctx, inputs, attrs, "max")  # storage_order only affects the Indices output


@converter("AveragePool", 1, 7, 10, 11, 19)
def _avg_pool(ctx, inputs, attrs):
    return _pool(ctx, inputs, attrs, "avg")


@converter("LpPool", 1, 11, 18)
def _lp_pool(ctx, inputs, attrs):
    """(sum over the window of |x|^p)^(1/p): an average pool counting the padding, times
    the window size, as TVM v0.19 builds it (with |x| first, as onnx defines it; TVM
    raises x itself to p, which differs for odd p)."""
    x = inputs[0]
    p = float(attrs.get("p", 2))
    powered = _call(ctx, "power", _call(ctx, "abs", x), _scalar(ctx, p, x))
    pooled = _pool(ctx, [powered], {**attrs, "count_include_pad": 1}, "avg")
    window = _scalar(ctx, float(math.prod(attrs["kernel_shape"])), x)
    return _call(ctx, "power", _call(ctx, "multiply", pooled, window), _scalar(ctx, 1.0 / p, x))


def _global_pool(kind: str):
    def convert(ctx, inputs, attrs):
        x = inputs[0]
        rank = len(ctx.shape_of(x))
        if rank == 4:
            return _call(ctx, f"nn.global_{kind}_pool2d", x)
        if rank < 3:
            raise ctx.error(f"the input must have rank >= 3, got {rank}")
        return _call(ctx, "mean" if kind == "avg" else "max", x, axis=list(range(2, rank)), keepdims=True)
    return convert


converter("GlobalAveragePool", 1)(_global_pool("avg"))
converter("GlobalMaxPool", 1)(_global_pool("max"))


# ----------------------------------------------------------------------------- normalisation


@converter("BatchNormalization", 1, 6, 7, 9, 14, 15)
def _batch_norm(ctx, inputs, attrs):
    if attrs.get("training_mode", 0) and ctx.opset >= 14:
        return _batch_norm_training(ctx, inputs, attrs)
    if attrs.get("training_mode", 0) or sum(1 for o in ctx.node.output if o) > 1:
        raise ctx.error("only inference-mode BatchNormalization (one output) is supported before opset 14")
    if ctx.opset < 9 and not attrs.get("spatial", 1):
        raise ctx.error("BatchNormalization with spatial=0 is not supported")
    x, scale, bias, mean, var = inputs[:5]
    bn = _call(ctx, "nn.batch_norm", x, scale, bias, mean, var, axis=1, epsilon=float(attrs.get("epsilon", 1e-5)))
    return ctx.typed(TupleGetItem(bn, 0))


def _batch_norm_training(ctx, inputs, attrs):
    """Opset 14's training mode, as the spec (and onnx's reference) computes it: the batch's
    mean and (population) variance per channel normalise x; the running statistics move
    towards them, running = given * momentum + batch * (1 - momentum). TVM v0.19 converts
    inference mode only."""
    x, scale, bias, mean, var = inputs[:5]
    axes = [a for a in range(len(ctx.shape_of(x))) if a != 1]
    batch_mean = _call(ctx, "mean", x, axis=axes)
    centred = _call(ctx, "subtract", x, _call(ctx, "mean", x, axis=axes, keepdims=True))
    batch_var = _call(ctx, "mean", _call(ctx, "multiply", centred, centred), axis=axes)
    bn = _call(ctx, "nn.batch_norm", x, scale, bias, batch_mean, batch_var, axis=1,
               epsilon=float(attrs.get("epsilon", 1e-5)))
    momentum = float(attrs.get("momentum", 0.9))

    def running(given, batch):
        dtype = ctx.type_of(given).dtype
        keep, move = (ctx.const(v, dtype) for v in (momentum, 1 - momentum))
        return _call(ctx, "add", _call(ctx, "multiply", given, keep),
                     _call(ctx, "multiply", _call(ctx, "cast", batch, dtype=dtype), move))

    return [ctx.typed(TupleGetItem(bn, 0)), running(mean, batch_mean), running(var, batch_var)]


@converter("LayerNormalization", 17)
def _layer_norm(ctx, inputs, attrs):
    x, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    rank = len(ctx.shape_of(x))
    axis = int(attrs.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {attrs.get('axis')} is out of range for rank {rank}")
    eps = float(attrs.get("epsilon", 1e-5))
    stats = sum(1 for o in ctx.node.output[1:] if o) > 0
    if (not stats and axis == rank - 1 and len(ctx.shape_of(scale)) == 1
            and (bias is None or len(ctx.shape_of(bias)) == 1)):
        if bias is None:
            bias = _call(ctx, "zeros_like", scale)
        return _call(ctx, "nn.layer_norm", x, scale, bias, axis=-1, epsilon=eps)
    axes = list(range(axis, rank))
    mean = _call(ctx, "mean", x, axis=axes, keepdims=True)
    var = _call(ctx, "variance", x, mean, axis=axes, keepdims=True)
    inv_std = _call(ctx, "rsqrt", _call(ctx, "add", var, _scalar(ctx, eps, x)))
    y = _call(ctx, "multiply", _call(ctx, "subtract", x, mean), inv_std)
    y = _call(ctx, "multiply", y, scale)
    if bias is not None:
        y = _call(ctx, "add", y, bias)
    return [y, mean, inv_std] if stats else y


@converter("RMSNormalization", 23)
def _rms_normalization(ctx, inputs, attrs):
    """x / sqrt(mean(x^2 over axis..last) + epsilon) * scale, as onnx defines it (TVM v0.19
    has no converter); stash_type=1 computes in float32 and casts back."""
    x, scale = inputs[0], inputs[1]
    rank = len(ctx.shape_of(x))
    axis = int(attrs.get("axis", -1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {attrs.get('axis')} is out of range for rank {rank}")
    dtype = _dtype(ctx, x)
    stash = "float32" if int(attrs.get("stash_type", 1)) == 1 else dtype
    xs = x if stash == dtype else _call(ctx, "cast", x, dtype=stash)
    mean_square = _call(ctx, "mean", _call(ctx, "multiply", xs, xs), axis=list(range(axis, rank)), keepdims=True)
    rms = _call(ctx, "sqrt", _call(ctx, "add", mean_square, _scalar(ctx, float(attrs.get("epsilon", 1e-5)), xs)))
    y = _call(ctx, "divide", xs, rms)
    if stash != dtype:
        y = _call(ctx, "cast", y, dtype=dtype)
    return _call(ctx, "multiply", y, scale)


def _normalise(ctx, x, axes: list, eps: float):
    """(x - mean) / sqrt(var + eps) over `axes`."""
    mean = _call(ctx, "mean", x, axis=axes, keepdims=True)
    var = _call(ctx, "variance", x, mean, axis=axes, keepdims=True)
    denom = _call(ctx, "sqrt", _call(ctx, "add", var, _scalar(ctx, eps, x)))
    return _call(ctx, "divide", _call(ctx, "subtract", x, mean), denom)


@converter("InstanceNormalization", 1, 6)
def _instance_norm(ctx, inputs, attrs):
    x, scale, bias = inputs
    rank = len(ctx.shape_of(x))
    if rank < 3:
        raise ctx.error(f"the input must have rank >= 3, got {rank}")
    y = _normalise(ctx, x, list(range(2, rank)), float(attrs.get("epsilon", 1e-5)))
    scale = _call(ctx, "expand_dims", scale, axis=1, num_newaxis=rank - 2)
    bias = _call(ctx, "expand_dims", bias, axis=1, num_newaxis=rank - 2)
    return _call(ctx, "add", _call(ctx, "multiply", y, scale), bias)


@converter("LRN", 1, 13)
def _lrn(ctx, inputs, attrs):
    x = inputs[0]
    if "size" not in attrs:
        raise ctx.error("`size` is required")
    size = int(attrs["size"])
    alpha, beta, bias = (float(attrs.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    if size % 2:
        return _call(ctx, "nn.lrn", x, size=size, axis=1, alpha=alpha, beta=beta, bias=bias)
    # Even sizes: ONNX's window is [c - (size-1)//2, c + size//2], nn.lrn's the mirror
    # image, so sum the squares over the window explicitly.
    shape = ctx.shape_of(x)
    rank, channels = len(shape), shape[1]
    if channels == ANY:
        raise ctx.error("LRN with an even size needs a static channel count")
    sq = _call(ctx, "multiply", x, x)
    lo = (size - 1) // 2
    widths = [[0, 0] for _ in range(rank)]
    widths[1] = [lo, size - 1 - lo]
    padded = _call(ctx, "nn.pad", sq, _scalar(ctx, 0, x), pad_width=widths)
    total = None
    for k in range(size):
        part = _call(ctx, "strided_slice", padded, begin=[k], end=[k + channels], strides=[1], axes=[1])
        total = part if total is None else _call(ctx, "add", total, part)
    denom = _call(ctx, "add", _scalar(ctx, bias, x), _call(ctx, "multiply", total, _scalar(ctx, alpha / size, x)))
    return _call(ctx, "divide", x, _call(ctx, "power", denom, _scalar(ctx, beta, x)))


# ----------------------------------------------------------------------------- softmax, dropout


def _softmax(relay_op: str):
    def flattened(ctx, inputs, attrs):
        """Opset < 13: the input is seen as 2-D, [prod(shape[:axis]), prod(shape[axis:])]."""
        x = inputs[0]
        shape = ctx.shape_of(x)
        rank = len(shape)
        axis = int(attrs.get("axis", 1))
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            raise ctx.error(f"axis {attrs.get('axis')} is out of range for rank {rank}")
        if axis == rank - 1:
            return _call(ctx, relay_op, x, axis=-1)
        inner = _static(ctx, shape[axis:], f"{relay_op} over the flattened axes")
        y = _call(ctx, "reshape", x, newshape=[-1, math.prod(inner)])
        y = _call(ctx, relay_op, y, axis=-1)
        return _call(ctx, "reshape", y, newshape=[0 if d == ANY else d for d in shape[:axis]] + list(inner))

    def along_axis(ctx, inputs, attrs):
        return _call(ctx, relay_op, inputs[0], axis=int(attrs.get("axis", -1)))

    return flattened, along_axis


for _onnx, _relay in (("Softmax", "nn.softmax"), ("LogSoftmax", "nn.log_softmax")):
    _old, _new = _softmax(_relay)
    converter(_onnx, 1, 11)(_old)
    converter(_onnx, 13)(_new)


@converter("Dropout", 1, 6, 7, 10, 12, 13)
def _dropout(ctx, inputs, attrs):
    x = inputs[0]
    if ctx.opset >= 12 and len(inputs) > 2 and inputs[2] is not None:
        if bool(ctx.required_value(inputs[2], "Dropout's training_mode")):
            ratio = 0.5 if inputs[1] is None else ctx.required_value(inputs[1], "Dropout's ratio in training mode")
            if float(ratio) != 0:  # training with a ratio of 0 drops nothing
                raise ctx.error("Dropout in training mode is not supported (but with ratio 0)")
    outputs = [x]
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        mask_dtype = "bool" if ctx.opset >= 10 else _dtype(ctx, x)
        outputs.append(_call(ctx, "cast", _call(ctx, "ones_like", x), dtype=mask_dtype))
    return outputs


@converter("MeanVarianceNormalization", 9, 13)
def _mean_variance_normalization(ctx, inputs, attrs):
    """(x - mean) / sqrt(mean(x^2) - mean^2) over `axes`, as TVM's converter computes it."""
    x = inputs[0]
    axes = tuple(int(a) for a in attrs.get("axes", (0, 2, 3)))
    mean = _call(ctx, "mean", x, axis=axes, keepdims=True)
    mean_of_squares = _call(ctx, "mean", _call(ctx, "multiply", x, x), axis=axes, keepdims=True)
    variance = _call(ctx, "subtract", mean_of_squares, _call(ctx, "multiply", mean, mean))
    return _call(ctx, "divide", _call(ctx, "subtract", x, mean), _call(ctx, "sqrt", variance))


# ----------------------------------------------------------------------------- losses


def _nll(ctx, log_prob, target, weight, ignore_index):
    """The per-element loss -weight[t] * log_prob[n, t, d...] and the total weight, as TVM's
    NegativeLogLikelihoodLoss.run_calculation builds them. Where TVM gathers at an ignored
    target (out of range when ignore_index is), the index is first replaced by 0: the
    element is masked to 0 either way, and no gather reads out of bounds."""
    tdtype = _dtype(ctx, target)
    channels = ctx.shape_of(log_prob)[1]
    index = target
    if ignore_index is not None:
        ignored = ctx.call("equal", target, ctx.const(ignore_index, tdtype))
        index = ctx.call("where", ignored, ctx.const(0, tdtype), target)
    index = ctx.call("where", ctx.call("less", index, ctx.const(0, tdtype)),
                     ctx.call("add", index, ctx.const(channels, tdtype)), index)
    picked = ctx.call("gather", log_prob, ctx.call("expand_dims", index, axis=1), axis=1)
    loss = ctx.call("negative", _call(ctx, "squeeze", picked, axis=[1]))
    if weight is None:
        weights = ctx.call("ones_like", loss)
    else:
        weights = ctx.call("take", weight, index, axis=0)
        loss = ctx.call("multiply", loss, weights)
    if ignore_index is not None:
        zero = _scalar(ctx, 0, loss)
        loss = ctx.call("where", ignored, zero, loss)
        weights = ctx.call("where", ignored, zero, weights)
    return loss, ctx.call("sum", weights)


def _reduce_loss(ctx, loss, total, reduction: str):
    if reduction == "mean":
        return ctx.call("divide", ctx.call("sum", loss), total)
    if reduction == "sum":
        return ctx.call("sum", loss)
    if reduction == "none":
        return loss
    raise ctx.error(f"unknown reduction {reduction!r} (mean, sum or none)")


def _loss_inputs(inputs):
    return inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None


@converter("NegativeLogLikelihoodLoss", 12)
def _negative_log_likelihood_loss(ctx, inputs, attrs):
    log_prob, target, weight = _loss_inputs(inputs)
    loss, total = _nll(ctx, log_prob, target, weight, attrs.get("ignore_index"))
    return _reduce_loss(ctx, loss, total, attrs.get("reduction", "mean"))


@converter("SoftmaxCrossEntropyLoss", 12)
def _softmax_cross_entropy_loss(ctx, inputs, attrs):
    """log_softmax over axis 1, then the NLL loss; the second output is the log_softmax."""
    scores, labels, weight = _loss_inputs(inputs)
    log_prob = ctx.call("nn.log_softmax", scores, axis=1)
    loss, total = _nll(ctx, log_prob, labels, weight, attrs.get("ignore_index"))
    return _reduce_loss(ctx, loss, total, attrs.get("reduction", "mean")), log_prob
