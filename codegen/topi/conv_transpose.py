"""R.nn.conv1d_transpose, conv2d_transpose and conv3d_transpose: TOPI's
python/tvm/topi/nn/conv1d_transpose.py (NCW data, IOW kernel), conv2d_transpose.py (NCHW,
IOHW), conv3d_transpose.py (NCDHW, IODHW) and dilate.py, as TVM's legalizations call them.

    data_dilate       the input spread by the strides (zeros between; a copy for stride 1)
    data_pad          TOPI's Python pad by (kernel - 1 - padding) (+ output_padding after)
    kernel_dilate     only with dilation: the kernel spread the same way
    kernel_transform  the kernel with in/out channels swapped and flipped spatially
                      (axes o, i, h, w; i, o, h, w when grouped)
    compute           a plain convolution over dc, dh, dw (axes b, c, h, w); in 3-D over
                      dc, dd, dh, dw (axes b, c, d, h, w)
In 1-D the transformed kernel is named `kernel` (axes o, i, w, grouped or not) and the
convolution runs over dc, dw (axes b, c, w).
"""

from __future__ import annotations

from .. import te
from .. import tir_build as tb
from ..simplify import simplify
from . import register_legalize
from .common import const_int
from .nn import pad


def dilate(data: te.Tensor, strides: list[int], dilation_value: float = 0.0, name: str = "DilatedInput") -> te.Tensor:
    n = len(data.shape)
    out_shape = [simplify(tb.add(tb.mul(tb.sub(data.shape[i], 1), strides[i]), 1)) for i in range(n)]

    def element(*indices):
        not_zero, index = [], []
        for i in range(n):
            if strides[i] != 1:
                index.append(tb.floordiv(indices[i], strides[i]))
                not_zero.append(tb.eq(tb.floormod(indices[i], strides[i]), 0))
            else:
                index.append(indices[i])
        if not_zero:
            return tb.if_then_else(tb.all_(*not_zero), data(*index), tb.const(dilation_value, data.dtype))
        return data(*index)

    return te.compute(out_shape, element, name=name)


def conv2d_transpose_nchw(data: te.Tensor, kernel: te.Tensor, strides: list[int], padding: list[int],
                          out_dtype: str, output_padding: list[int], groups: int = 1) -> te.Tensor:
    """TOPI's conv2d_transpose_nchw (groups == 1) and group_conv2d_transpose_nchw."""
    in_channels = data.shape[1]
    _, out_c, filter_h, filter_w = kernel.shape
    fh, fw = const_int(filter_h), const_int(filter_w)
    data_dilate = dilate(data, [1, 1, strides[0], strides[1]], name="data_dilate")
    top, left, bottom, right = padding
    data_pad = pad(data_dilate, [0, 0, fh - 1 - top, fw - 1 - left],
                   [0, 0, fh - 1 - bottom + output_padding[0], fw - 1 - right + output_padding[1]],
                   name="data_pad")
    if groups == 1:
        kernel_transform = te.compute((out_c, in_channels, filter_h, filter_w),
                                      lambda o, i, h, w: kernel(i, o, tb.sub(fh - 1, h), tb.sub(fw - 1, w)),
                                      name="kernel_transform")
    else:
        kernel_transform = te.compute((out_c, in_channels, filter_h, filter_w),
                                      lambda i, o, h, w: kernel(o, i, tb.sub(fh - 1, h), tb.sub(fw - 1, w)),
                                      name="kernel_transform")
    batch, in_c, in_h, in_w = data_pad.shape
    out_c, _, filter_h, filter_w = kernel_transform.shape
    out_channels = simplify(tb.mul(out_c, groups)) if groups != 1 else simplify(out_c)
    out_h = simplify(tb.add(tb.sub(in_h, filter_h), 1))
    out_w = simplify(tb.add(tb.sub(in_w, filter_w), 1))
    dc = te.reduce_axis((0, tb.floordiv(in_c, groups) if groups != 1 else in_c), name="dc")
    dh = te.reduce_axis((0, filter_h), name="dh")
    dw = te.reduce_axis((0, filter_w), name="dw")

    def element(b, c, h, w):
        if groups == 1:
            lhs = data_pad(b, dc.var, tb.add(h, dh.var), tb.add(w, dw.var))
            rhs = kernel_transform(c, dc.var, dh.var, dw.var)
        else:
            per_group_out = tb.floordiv(out_channels, groups)
            channel = tb.add(tb.mul(tb.floordiv(c, per_group_out), tb.floordiv(in_c, groups)), dc.var)
            lhs = data_pad(b, channel, tb.add(h, dh.var), tb.add(w, dw.var))
            rhs = kernel_transform(tb.floormod(c, per_group_out), channel, dh.var, dw.var)
        return te.sum(tb.mul(tb.cast(out_dtype, lhs), tb.cast(out_dtype, rhs)), axis=[dc, dh, dw])

    tag = "conv2d_transpose_nchw" if groups == 1 else "group_conv2d_transpose_nchw"
    return te.compute((batch, out_channels, out_h, out_w), element, tag=tag)


def conv3d_transpose_ncdhw(data: te.Tensor, kernel: te.Tensor, strides: list[int], padding: list[int],
                           out_dtype: str, output_padding: list[int], groups: int = 1) -> te.Tensor:
    """TOPI's conv3d_transpose_ncdhw (groups == 1) and group_conv3d_transpose_ncdhw
    (python/tvm/topi/nn/conv3d_transpose.py). Unlike the 2-D form, the kernel is transformed
    over axes o, i, d, h, w whether grouped or not, and the grouped channel arithmetic is
    written with the output channels already multiplied by the groups."""
    batch, in_c = data.shape[0], data.shape[1]
    _, out_c, filter_d, filter_h, filter_w = kernel.shape
    fd, fh, fw = const_int(filter_d), const_int(filter_h), const_int(filter_w)
    data_dilate = dilate(data, [1, 1, *strides], name="data_dilate")
    front, top, left, back, bottom, right = padding
    data_pad = pad(data_dilate, [0, 0, fd - 1 - front, fh - 1 - top, fw - 1 - left],
                   [0, 0, fd - 1 - back + output_padding[0], fh - 1 - bottom + output_padding[1],
                    fw - 1 - right + output_padding[2]], name="data_pad")
    kernel_transform = te.compute(
        (out_c, in_c, filter_d, filter_h, filter_w),
        lambda o, i, d, h, w: kernel(i, o, tb.sub(fd - 1, d), tb.sub(fh - 1, h), tb.sub(fw - 1, w)),
        name="kernel_transform")
    _, in_c, in_d, in_h, in_w = data_pad.shape
    out_channels = simplify(tb.mul(out_c, groups)) if groups != 1 else simplify(out_c)
    out_d, out_h, out_w = (simplify(tb.add(tb.sub(n, k), 1)) for n, k in ((in_d, filter_d), (in_h, filter_h),
                                                                           (in_w, filter_w)))
    dc = te.reduce_axis((0, tb.floordiv(in_c, groups) if groups != 1 else in_c), name="dc")
    dd = te.reduce_axis((0, filter_d), name="dd")
    dh = te.reduce_axis((0, filter_h), name="dh")
    dw = te.reduce_axis((0, filter_w), name="dw")

    def element(b, c, d, h, w):
        window = (tb.add(d, dd.var), tb.add(h, dh.var), tb.add(w, dw.var))
        if groups == 1:
            lhs = data_pad(b, dc.var, *window)
            rhs = kernel_transform(c, dc.var, dd.var, dh.var, dw.var)
        else:
            per_group_out = tb.floordiv(out_channels, groups)
            channel = tb.add(tb.mul(tb.floordiv(c, per_group_out), tb.floordiv(in_c, groups)), dc.var)
            lhs = data_pad(b, channel, *window)
            rhs = kernel_transform(tb.floormod(c, per_group_out), channel, dd.var, dh.var, dw.var)
        return te.sum(tb.mul(tb.cast(out_dtype, lhs), tb.cast(out_dtype, rhs)), axis=[dc, dd, dh, dw])

    tag = "conv3d_transpose_ncdhw" if groups == 1 else "group_conv3d_transpose_ncdhw"
    return te.compute((batch, out_channels, out_d, out_h, out_w), element, tag=tag)


def conv1d_transpose_ncw(data: te.Tensor, kernel: te.Tensor, strides: list[int], padding: list[int],
                         out_dtype: str, output_padding: list[int], groups: int = 1) -> te.Tensor:
    """TOPI's conv1d_transpose_ncw (groups == 1) and group_conv1d_transpose_ncw."""
    batch, in_c, _ = data.shape
    _, out_c, filter_w = kernel.shape
    fw = const_int(filter_w)
    data_dilate = dilate(data, [1, 1, strides[0]], name="data_dilate")
    data_pad = pad(data_dilate, [0, 0, fw - 1 - padding[0]], [0, 0, fw - 1 - padding[1] + output_padding[0]],
                   name="data_pad")
    kernel_transform = te.compute((simplify(out_c), in_c, filter_w),
                                  lambda o, i, w: kernel(i, o, tb.sub(fw - 1, w)), name="kernel")
    out_w = simplify(tb.add(tb.sub(data_pad.shape[2], filter_w), 1))
    dc = te.reduce_axis((0, tb.floordiv(in_c, groups) if groups != 1 else in_c), name="dc")
    dw = te.reduce_axis((0, filter_w), name="dw")
    if groups == 1:
        return te.compute((batch, out_c, out_w), lambda b, c, w: te.sum(
            tb.mul(tb.cast(out_dtype, data_pad(b, dc.var, tb.add(w, dw.var))),
                   tb.cast(out_dtype, kernel_transform(c, dc.var, dw.var))), axis=[dc, dw]),
            tag="conv1d_transpose_ncw")
    out_channels = simplify(tb.mul(out_c, groups))

    def element(b, c, w):
        per_group_out = tb.floordiv(out_channels, groups)
        channel = tb.add(tb.mul(tb.floordiv(c, per_group_out), tb.floordiv(in_c, groups)), dc.var)
        return te.sum(tb.mul(tb.cast(out_dtype, data_pad(b, channel, tb.add(w, dw.var))),
                             tb.cast(out_dtype, kernel_transform(tb.floormod(c, per_group_out), channel, dw.var))),
                      axis=[dc, dw])

    return te.compute((batch, out_channels, out_w), element, tag="group_conv1d_transpose_ncw")


def _conv_transpose_legalization(data_layout: str, kernel_layout: str, compute, name: str):
    """The legalization of R.nn.conv{1,2,3}d_transpose in TVM's one layout (others stay calls):
    the kernel dilated first, then TOPI's compute."""
    def legalize(bb, call):
        at = call.attrs
        if at["out_layout"] != at["data_layout"] or at["data_layout"] != data_layout \
                or at["kernel_layout"] != kernel_layout:
            return call
        strides, padding, output_padding, dilation = (
            [int(v) for v in at[key]] for key in ("strides", "padding", "output_padding", "dilation"))
        groups, out_dtype = int(at["groups"]), call.struct_info.dtype

        def te_conv_transpose(data, kernel):
            if any(d != 1 for d in dilation):
                kernel = dilate(kernel, [1, 1, *dilation], name="kernel_dilate")
            return compute(data, kernel, strides, padding, out_dtype, output_padding, groups)

        return bb.call_te(te_conv_transpose, call.args[0], call.args[1], primfunc_name_hint=name)
    return legalize


register_legalize("relax.nn.conv1d_transpose",
                  _conv_transpose_legalization("NCW", "IOW", conv1d_transpose_ncw, "conv1d_transpose"))
register_legalize("relax.nn.conv2d_transpose",
                  _conv_transpose_legalization("NCHW", "IOHW", conv2d_transpose_nchw, "conv2d_transpose"))
register_legalize("relax.nn.conv3d_transpose",
                  _conv_transpose_legalization("NCDHW", "IODHW", conv3d_transpose_ncdhw, "conv3d_transpose"))
