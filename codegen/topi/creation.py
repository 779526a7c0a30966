"""Creation operators: TOPI's `full` (include/tvm/topi/elemwise.h) and `arange`
(transform.h), as Relax's legalize_ops/create.py calls them, and nn.pad's registration.

    full / ones / zeros (and *_like)   `T_full` over ax0, ax1, ...: cast(dtype, fill value);
                                       a 0-d constant fill is inlined, a tensor fill is read
                                       as `v[()]`; PrimFunc names full / ones / zeros
    arange                             all bounds constant: a Relax constant (np.arange);
                                       otherwise `T_arange`: cast(dtype, start + step * ax0)
    nn.pad (constant mode)             nn.pad's `PadInput` compute, PrimFunc `pad`
"""

from __future__ import annotations

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .nn import pad


def full(shape, dtype: str, fill_value) -> te.Tensor:
    if isinstance(fill_value, te.Tensor):
        fill_value = fill_value()
    value = tb.cast(dtype, fill_value if isinstance(fill_value, tir.PrimExpr) else tb.as_expr(fill_value))
    return te.compute_ax(shape, lambda ax: value, name="T_full", tag="elemwise")


def _fill_value(arg):
    """A 0-d constant as a Python number (TVM's python_native conversion); else the tensor."""
    if isinstance(arg, rx.Constant) and arg.data is not None and np.ndim(arg.data) == 0:
        return np.asarray(arg.data).item()
    return arg


def _full(is_like: bool, fill, name: str):
    def legalize(bb, call):
        value = _fill_value(call.args[1]) if fill is None else fill
        if is_like:
            shape = call.args[0].struct_info.shape
        elif isinstance(call.args[0], rx.ShapeExpr):
            shape = call.args[0].values
        else:
            return call
        shape = rx.ShapeExpr(list(shape))
        return bb.call_te(full, shape, call.struct_info.dtype, value, primfunc_name_hint=name)

    return legalize


register_legalize("relax.full", _full(False, None, "full"))
register_legalize("relax.ones", _full(False, 1.0, "ones"))
register_legalize("relax.ones_like", _full(True, 1.0, "ones"))
register_legalize("relax.zeros", _full(False, 0.0, "zeros"))
register_legalize("relax.zeros_like", _full(True, 0.0, "zeros"))


@register_legalize("relax.arange")
def _arange(bb, call):
    values = [a.value if isinstance(a, rx.PrimValue) else None for a in call.args]
    dtype = call.attrs["dtype"] or call.struct_info.dtype
    if all(isinstance(v, (tir.IntImm, tir.FloatImm)) for v in values):
        start, end, step = (v.value for v in values)
        return rx.Constant(np.arange(start, end, step, dtype=dtype))
    return call


@register_legalize("relax.nn.pad")
def _nn_pad(bb, call):
    at = call.attrs
    if at["pad_mode"] != "constant":
        return call
    width = list(at["pad_width"])
    return bb.call_te(pad, call.args[0], pad_before=width[::2], pad_after=width[1::2],
                      pad_value=float(at["pad_value"]), primfunc_name_hint="pad")
