"""relay-to-relax for Relay's window operators that are not one Relax call with the same
attributes (relay_to_relax.py registers these converters): the global pools as reductions,
the adaptive pool's empty output size, and LRN composed from an average pool."""

from __future__ import annotations

import numpy as np

from irtool.ir import relax as rx

from ._relax_block_builder import _Unsupported


def _relay_to_relax():
    from . import relay_to_relax

    return relay_to_relax


def _global_pool(t, c, args):
    r2r = _relay_to_relax()
    layout, out_layout = c.attrs["layout"], c.attrs["out_layout"]
    if out_layout and out_layout != layout:
        raise _Unsupported(f'out_layout="{out_layout}" differs from the layout "{layout}"')
    if "H" not in layout or "W" not in layout:
        raise _Unsupported(f'layout "{layout}" has no H and W axes')
    reduce = "relax.mean" if c.op.name == "nn.global_avg_pool2d" else "relax.max"
    return r2r.call(reduce, args[0], axis=(layout.index("H"), layout.index("W")), keepdims=True)


def _lrn(t, c, args):
    """TVM 0.27's Relax has no LRN operator; its ONNX frontend composes it from an average pool
    over the squares: the channel axis made a window axis of its own by expand_dims (D of a
    5-D NCDHW-like layout for 4-D data, H of a 4-D one for 3-D data), pooled `size` long with
    the padding counted, then bias + alpha * mean, to the power beta, dividing the data. The
    window is Relay's, [c - size // 2, c - size // 2 + size) (TVM's frontend pads size // 2 on
    both sides, one channel too many for an even size)."""
    r2r = _relay_to_relax()
    data = args[0]
    ndim, dtype = r2r._ndim(data), r2r._dtype(data)
    if ndim not in (3, 4):
        raise _Unsupported(f"LRN of a rank-{ndim} tensor: TVM 0.27 composes it for ranks 3 and 4 only")
    axis, size = r2r._axis(c.attrs["axis"], ndim), c.attrs["size"]
    window, others = ("D", "NHW") if ndim == 4 else ("H", "NW")
    rest = iter(others)
    layout = "".join("C" if i == axis else window if i == axis + 1 else next(rest) for i in range(ndim + 1))
    squares = r2r.call("relax.expand_dims", r2r.call("relax.multiply", data, data), axis=(axis,))
    before, after = size // 2, size - 1 - size // 2
    if ndim == 4:
        mean = r2r.call("relax.nn.avg_pool3d", squares, pool_size=(size, 1, 1), padding=(before, 0, 0, after, 0, 0),
                    count_include_pad=True, layout=layout)
    else:
        mean = r2r.call("relax.nn.avg_pool2d", squares, pool_size=(size, 1), padding=(before, 0, after, 0),
                    count_include_pad=True, layout=layout)

    def const(value: float) -> rx.Constant:
        return rx.Constant(np.array(value, dtype))

    mean = r2r.call("relax.squeeze", mean, axis=(axis,))
    scale = r2r.call("relax.add", r2r.call("relax.multiply", mean, const(c.attrs["alpha"])), const(c.attrs["bias"]))
    return r2r.call("relax.divide", data, r2r.call("relax.power", scale, const(c.attrs["beta"])))


def _adaptive_avg_pool2d(t, c, args):
    r2r = _relay_to_relax()
    return r2r.call("relax.nn.adaptive_avg_pool2d", args[0], output_size=tuple(c.attrs["output_size"]) or None,
                layout=c.attrs["layout"], out_layout=c.attrs["out_layout"])


CONVERTERS = {"nn.global_avg_pool2d": _global_pool, "nn.global_max_pool2d": _global_pool, "nn.lrn": _lrn,
              "nn.adaptive_avg_pool2d": _adaptive_avg_pool2d}
