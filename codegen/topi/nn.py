"""Neural-network operators: relu, pad and conv (TOPI's python/tvm/topi/nn/{elemwise,pad,conv2d}.py).

    relu(x)     `compute`: T.max(x, 0)
    pad(...)    `pad_temp` (conv's name for it): T.if_then_else(in bounds, x[i - before], value)
                over the padded dims only; no condition at all without padding
    conv(...)   any layout given as letters (NCHW/OIHW, NHWC/HWIO, NCDHW/OIDHW, ...): a padded
                copy of the input, then `conv2d_nchw` (`conv{dim}d_{layout}`, `group_` when
                grouped) over nn, ff, yy, xx (zz) and the reduce axes rc, ry, rx (rz); the
                legalization of R.nn.conv1d (reduce axis ry, output axes nn, ff, yy),
                R.nn.conv2d and R.nn.conv3d
"""

from __future__ import annotations

import re

import numpy as np

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from ..simplify import simplify
from . import register_legalize
from .common import call_topi_without_attr, const_int


def relu(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: tb.max_(x(*i), tb.const(0, x.dtype)))


def pad(data: te.Tensor, pad_before, pad_after=None, pad_value=0.0, name: str = "PadInput") -> te.Tensor:
    n = len(data.shape)
    pad_before = [int(p) for p in pad_before]
    pad_after = [int(p) for p in pad_after] if pad_after else pad_before
    out_shape = tuple(simplify(tb.add(tb.add(data.shape[i], pad_before[i]), pad_after[i])) for i in range(n))
    value = pad_value if isinstance(pad_value, tir.PrimExpr) else tb.const(pad_value, data.dtype)

    def element(*indices):
        not_zero, index = [], []
        for i in range(n):
            if pad_before[i] == 0 and pad_after[i] == 0:
                index.append(indices[i])
            else:
                index.append(tb.sub(indices[i], pad_before[i]))
                not_zero.append(tb.ge(indices[i], pad_before[i]))
                not_zero.append(tb.lt(indices[i], tb.add(data.shape[i], pad_before[i])))
        if not_zero:
            return tb.if_then_else(tb.all_(*not_zero), data(*index), value)
        return data(*index)

    return te.compute(out_shape, element, name=name)


def _pad_tuple(padding, kernel: list) -> tuple[list, list]:
    """TOPI's get_pad_tuple_generic: (pad_begin, pad_end) per spatial dim."""
    dim = len(kernel)
    if isinstance(padding, int):
        padding = [padding] * dim
    padding = [int(p) for p in padding]
    if len(padding) == dim:
        return [p for p in padding], [p for p in padding]
    if len(padding) == 2 * dim:
        return padding[:dim], padding[dim:]
    raise ValueError(f"padding of {len(padding)} values for {dim} spatial dims")


def conv(inp: te.Tensor, filt: te.Tensor, stride, padding, dilation, groups: int, data_layout: str,
         kernel_layout: str = "", out_dtype: str | None = None) -> te.Tensor:
    """TOPI's generic `conv` (see the module docstring)."""
    dim = len(inp.shape) - 2
    out_dtype = out_dtype or inp.dtype
    strides = [stride] * dim if isinstance(stride, int) else [int(s) for s in stride]
    dilations = [dilation] * dim if isinstance(dilation, int) else [int(d) for d in dilation]
    data_to = [data_layout.find("N"), data_layout.find("C")] + [m.start() for m in re.finditer("[^NC]", data_layout)]
    data_from = list(np.argsort(data_to))
    red_from = np.array(data_from[1:])
    red_from[red_from > data_from[0]] -= 1
    if kernel_layout == "":
        channel_first = data_layout.find("C") < re.search("[^NC]", data_layout).start()
        kernel_to = [0, 1] + list(range(2, dim + 2)) if channel_first else [dim + 1, dim] + list(range(dim))
    else:
        kernel_to = [kernel_layout.find("O"), kernel_layout.find("I")] + \
            [m.start() for m in re.finditer("[^OI]", kernel_layout)]
    kernel_from = list(np.argsort(kernel_to))
    ishape = [inp.shape[i] for i in data_to]
    kshape = [filt.shape[i] for i in kernel_to]
    batch, in_channel, *dims = ishape
    num_filter, _, *kdims = kshape
    kints = [const_int(k) for k in kdims]
    dilated = [(k - 1) * d + 1 for k, d in zip(kints, dilations)]
    pad_begin, pad_end = _pad_tuple(padding, dilated)
    out_dims = [simplify(tb.add(tb.floordiv(tb.add(tb.add(tb.sub(tb.sub(d, (k - 1) * dil), 1), pb), pe), s), 1))
                for d, k, dil, pb, pe, s in zip(dims, kints, dilations, pad_begin, pad_end, strides)]
    pad_before = list(np.array([0, 0] + pad_begin)[data_from])
    pad_after = list(np.array([0, 0] + pad_end)[data_from])
    temp = pad(inp, pad_before, pad_after, name="pad_temp")
    in_per_group = simplify(tb.floordiv(in_channel, groups)) if groups != 1 else in_channel
    rc = te.reduce_axis((0, in_per_group), name="rc")
    rs = [te.reduce_axis((0, k), name=f"r{n}") for n, k in zip(["y", "x", "z"], kdims)]
    raxes = [rc, *rs]

    def compute(*args):
        ordered = [args[i] for i in data_to]
        nn, ff, *spatial = ordered
        if groups == 1:
            channel = rc.var
        else:
            channel = tb.add(tb.mul(tb.floordiv(ff, num_filter.value // groups), in_per_group.value), rc.var)
        # TVM's canonical form orders the terms by descending scale (stable): `ry * 2 + yy`
        data_idx = [nn, channel] + [tb.add(tb.mul(r.var, d), tb.mul(di, s)) if d > s else
                                    tb.add(tb.mul(di, s), tb.mul(r.var, d))
                                    for di, s, r, d in zip(spatial, strides, rs, dilations)]
        kern_idx = [ff, rc.var] + [r.var for r in rs]
        return te.sum(tb.mul(tb.cast(out_dtype, temp(*[data_idx[i] for i in data_from])),
                             tb.cast(out_dtype, filt(*[kern_idx[i] for i in kernel_from]))),
                      axis=[raxes[i] for i in red_from])

    prefix = "group_" if groups > 1 else ""
    out_shape = [([batch, num_filter] + out_dims)[i] for i in data_from]
    names = [["nn", "ff", "yy", "xx", "zz"][i] for i in data_from]
    return te.compute(out_shape, compute, name=f"{prefix}conv{dim}d_{data_layout.lower()}",
                      tag=f"{prefix}conv{dim}d_{data_layout.lower()}", varargs_names=names)


register_legalize("relax.nn.relu", call_topi_without_attr(relu, "relu"))


def _legalize_conv(bb, call, dim: int):
    """TVM's legalization of R.nn.conv1d / conv2d / conv3d: TOPI's generic conv (conv1d's too),
    unless the output layout differs or a layout splits a channel (NCHW4c)."""
    at = call.attrs
    rank = dim + 2
    if at["out_layout"] != at["data_layout"] or len(at["data_layout"]) != rank or len(at["kernel_layout"]) != rank:
        return call
    return bb.call_te(conv, inp=call.args[0], filt=call.args[1], stride=list(at["strides"]),
                      padding=list(at["padding"]), dilation=list(at["dilation"]), groups=at["groups"],
                      data_layout=at["data_layout"], kernel_layout=at["kernel_layout"],
                      out_dtype=at["out_dtype"] or None, primfunc_name_hint=f"conv{dim}d")


for _dim in (1, 2, 3):
    register_legalize(f"relax.nn.conv{_dim}d", lambda bb, call, dim=_dim: _legalize_conv(bb, call, dim))
