"""Relax window operators over any number of window axes ("W", "HW", "DHW"): the pools'
relation and reference with TVM 0.27's ceil_mode, adaptive average pooling, and the 1-D
convolutions, which have no Relay counterpart (TVM 0.27's src/relax/op/nn/convolution.cc,
pooling.cc). All reuse the Relay operators' n-D relations and references in irtool/ops/nn.py;
this module adds what TVM's Relax checks beyond them:

    conv1d            the data's channels equal the weight's input channels times the groups
                      (Relay: floor-divided), the output channels divide into the groups, and
                      data and weight share a dtype (TVM's InferBinaryArithOpOutDtype)
    conv1d_transpose  the weight's input channels divide into the groups; output_padding
                      below the strides (`relax_bridge._output_padding_below_strides`)
    pools             the data's rank is the layout's; with ceil_mode a last window starting
                      in the tail padding is dropped
    adaptive pools    the output size (one value per window axis) replaces the window axes;
                      none keeps them
"""

from __future__ import annotations

import re

from ..ir.types import ANY, TensorType
from .common import fmt_type, np, same_dtype, tensor_arg
from .nn import (
    _conv,
    _conv_operands,
    _conv_transpose,
    _known,
    _pad2,
    _pool,
    adaptive_avg_pool,
    conv_rel,
    conv_transpose_rel,
    pool_rel,
)
from .registry import AttrSpec, TypeRelError

_NO_RELAY_ATTRS = {"channels": None, "kernel_size": None}  # the Relay relations' inference-only attrs

# TVM 0.27's Conv1DAttrs, Conv1DTransposeAttrs, Pool1DAttrs, AdaptivePool1DAttrs in print order,
# with the Python API's defaults (a single padding value pads both ends)
_STRIDES_PADDING = (AttrSpec("strides", "ints", (1,)), AttrSpec("padding", "ints", (0, 0), _pad2))
_DILATION_GROUPS = (AttrSpec("dilation", "ints", (1,)), AttrSpec("groups", "int", 1))
_OUT = (AttrSpec("out_layout", "str", ""), AttrSpec("out_dtype", "dtype", ""))
CONV1D = (_STRIDES_PADDING + _DILATION_GROUPS
          + (AttrSpec("data_layout", "str", "NCW"), AttrSpec("kernel_layout", "str", "OIW")) + _OUT)
CONV1D_T = (_STRIDES_PADDING + (AttrSpec("output_padding", "ints", (0,)),) + _DILATION_GROUPS
            + (AttrSpec("data_layout", "str", "NCW"), AttrSpec("kernel_layout", "str", "IOW")) + _OUT)


def pool1d(count_include_pad: bool) -> tuple:
    """max_pool1d's and avg_pool1d's attributes (avg_pool1d counts the padding by default)."""
    return (AttrSpec("pool_size", "ints", (1,)), AttrSpec("strides", "ints", (1,)),
            AttrSpec("dilation", "ints", (1,)), AttrSpec("padding", "ints", (0, 0), _pad2),
            AttrSpec("ceil_mode", "bool", False), AttrSpec("count_include_pad", "bool", count_include_pad),
            AttrSpec("layout", "str", "NCW"), AttrSpec("out_layout", "str", ""))


ADAPTIVE_POOL1D = (AttrSpec("output_size", "ints?", None), AttrSpec("layout", "str", "NCW"),
                   AttrSpec("out_layout", "str", ""))


# ----------------------------------------------------------------------------- pools


def ceil_pool(kind: str, axes: str) -> dict:
    """rel and ref of a Relax pool ("max" / "avg") over the window `axes`: the Relay n-D
    pool's, except that with ceil_mode TVM 0.27's Relax drops a last window that would start
    in the tail padding (`(out - 1) * stride >= size + pad_head`, src/relax/op/nn/pooling.cc),
    where Relay (v0.19) keeps it."""
    def dropped(in_shape, at) -> list[int]:
        """The spatial axes whose last window is dropped."""
        layout, nd = at["layout"], len(axes)
        if not at["ceil_mode"] or any(a not in layout for a in axes):
            return []
        out = []
        for i, axis in enumerate(layout.index(a) for a in axes):
            n, k, s, d = in_shape[axis], at["pool_size"][i], at["strides"][i], at["dilation"][i]
            if n is ANY:
                continue
            raw = (n + at["padding"][i] + at["padding"][i + nd] - (k - 1) * d - 1 + s - 1) // s + 1
            if (raw - 1) * s >= n + at["padding"][i]:
                out.append(axis)
        return out

    def rel(args, at):
        data, letters = tensor_arg(args, 0, "data"), re.findall("[A-Za-z]", at["layout"])
        if len(data.shape) != len(letters):  # TVM's CheckNdimPerLayoutAndGetShape; Relay took more axes
            raise TypeRelError(f"`data` must have rank {len(letters)} (layout {at['layout']}), got {fmt_type(data)}")
        t = pool_rel(args, at, axes)
        shape = list(t.shape)
        for axis in dropped(tensor_arg(args, 0, "data").shape, at):
            shape[axis] = shape[axis] - 1 if shape[axis] is not ANY else ANY
        return TensorType(tuple(shape), t.dtype)

    def ref(data, **at):
        out = np.asarray(_pool(data, kind, axes=axes, **at))
        index = [slice(None)] * out.ndim
        for axis in dropped(data.shape, at):
            index[axis] = slice(0, out.shape[axis] - 1)
        return out[tuple(index)]
    return {"rel": rel, "ref": ref}


def adaptive_pool(axes: str) -> dict:
    """rel and ref of R.nn.adaptive_avg_pool1d / 3d over the window `axes` (TVM 0.27's
    InferTypeAdaptiveAvgPool1D/3D): the window axes become the output size (none given: kept),
    in `layout`'s order; `_to_out_layout` then permutes the result."""
    canon = "NC" + axes
    names = ", ".join({"D": "depth", "H": "height", "W": "width"}[a] for a in axes)

    def rel(args, at):
        data = tensor_arg(args, 0, "data")
        layout, out_layout = at["layout"], at["out_layout"] or at["layout"]
        for name, value in (("layout", layout), ("out_layout", out_layout)):
            if sorted(value) != sorted(canon):
                raise TypeRelError(f"`{name}` must order the axes {', '.join(canon[:-1])} and {canon[-1]}, "
                                   f"got {value!r}")
        if len(data.shape) != len(canon):
            raise TypeRelError(f"`data` must have rank {len(canon)} (layout {layout}), got {fmt_type(data)}")
        size = at["output_size"]
        if size is not None and len(size) != len(axes):
            raise TypeRelError(f"`output_size` must have {len(axes)} value{'s' if len(axes) > 1 else ''} "
                               f"({names}), got {list(size)}")
        dims = dict(zip(layout, data.shape))
        if size is not None:
            dims.update(zip(axes, size))
        return TensorType(tuple(dims[a] for a in layout), data.dtype)

    def ref(data, *, output_size, layout, out_layout):
        return adaptive_avg_pool(data, output_size, layout, axes)
    return {"rel": rel, "ref": ref}


# ----------------------------------------------------------------------------- 1-D convolutions


def conv1d_rel(args, at):
    """R.nn.conv1d: nn.conv2d's relation over the one window axis W, with TVM 0.27's checks."""
    (data, weight, _, _, (_, c, _), (o, i, _)) = _conv_operands(args, at, "W", "OI")
    same_dtype("conv1d", data, weight)
    groups = at["groups"]
    if _known(c, i) and c != i * groups:
        raise TypeRelError(f"the data's channels ({c}) must equal the weight's input channels ({i}) times "
                           f"groups ({groups}): data {fmt_type(data)}, weight {fmt_type(weight)}")
    if _known(o) and groups > 0 and o % groups:
        raise TypeRelError(f"the weight's output channels ({o}) must divide into groups ({groups}): "
                           f"{fmt_type(weight)}")
    return conv_rel(args, {**at, **_NO_RELAY_ATTRS}, "W")


def conv1d_ref(data, weight, **at):
    return _conv(data, weight, axes="W", **_NO_RELAY_ATTRS, **at)


def conv1d_transpose_rel(args, at):
    """R.nn.conv1d_transpose: nn.conv2d_transpose's relation over W, with TVM 0.27's checks."""
    (data, weight, _, _, _, (i, _, _)) = _conv_operands(args, at, "W", "IO")
    same_dtype("conv1d_transpose", data, weight)
    if _known(i) and at["groups"] > 0 and i % at["groups"]:
        raise TypeRelError(f"the weight's input channels ({i}) must divide into groups ({at['groups']}): "
                           f"{fmt_type(weight)}")
    return conv_transpose_rel(args, {**at, **_NO_RELAY_ATTRS}, "W")


def conv1d_transpose_ref(data, weight, **at):
    return _conv_transpose(data, weight, axes="W", **_NO_RELAY_ATTRS, **at)
