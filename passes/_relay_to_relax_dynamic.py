"""relay-to-relax for shapes known only at run time: Relay's `dyn.*` operators and `shape_of`
of a symbolic shape (relay_to_relax.py registers these converters).

A Relay shape tensor becomes a Relax shape as TVM 0.27's Relax frontends make one: the tensor
through `R.tensor_to_shape`, then `R.match_cast` to a shape of fresh symbolic sizes, which the
static operator then takes:

    %1 = dyn.broadcast_to(%x, %s)          lv = R.tensor_to_shape(s)
                                    ==>    lv1 = R.match_cast(lv, R.Shape([d, d_1]))
                                           gv = R.broadcast_to(x, R.shape([d, d_1]))

    dyn.broadcast_to / full / zeros / ones   the static op on the matched shape
    dyn.reshape   Relay's run-time codes resolved in int64 tensor arithmetic first (0 copies
                  the input's size at that position unless allowzero, -1 is the element count
                  divided by the product of the others), then R.reshape to the matched shape
    dyn.tile      repeats matched as sizes r_i: the input reshaped to (1, x_0, 1, x_1, ...),
                  broadcast to (r_0, x_0, r_1, x_1, ...) and merged to (r_0 * x_0, ...), which is
                  np.tile with the shorter of data and repeats padded with leading ones
    shape_of      R.shape_to_tensor(R.shape_of(x)) (cast to Relay's int32 by default)

    dyn.strided_slice  R.dynamic_strided_slice (whose struct info knows the rank only), begin,
                  end and strides padded to the rank as Relay pads them (0, the dimension, 1; a
                  run-time end is concatenated with the constant rest), in int64
"""

from __future__ import annotations

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir

from ._relax_block_builder import _Unsupported


def _relay_to_relax():
    from . import relay_to_relax

    return relay_to_relax


def _const(value: int) -> rx.Constant:
    return rx.Constant(np.array(value, dtype="int64"))


def _length(e) -> int:
    sinfo = e.struct_info
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple) or len(sinfo.shape) != 1 \
            or not isinstance(sinfo.shape[0], int):
        raise _Unsupported("the shape tensor must be 1-D of static length (it gives the result's rank)")
    return sinfo.shape[0]


def _int64(t, e):
    r2r = _relay_to_relax()
    return e if e.struct_info.dtype == "int64" else t.bb.emit(r2r.call("relax.astype", e, dtype="int64"))


def run_time_shape(t, shape_tensor) -> list:
    """`R.tensor_to_shape` of a 1-D integer tensor, matched to fresh symbolic sizes."""
    r2r = _relay_to_relax()
    k = _length(shape_tensor)
    value = t.bb.emit(r2r.call("relax.tensor_to_shape", _int64(t, shape_tensor)))
    dims = [tir.Var("d", "int64") for _ in range(k)]
    t.bb.match_cast(value, rx.ShapeStructInfo(dims))
    return dims


def _shape_tensor(t, x):
    r2r = _relay_to_relax()
    return t.bb.emit(r2r.call("relax.shape_to_tensor", t.bb.emit(r2r.call("relax.shape_of", x))))


def shape_of(t, c, args):
    r2r = _relay_to_relax()
    dims = r2r._dims(args[0])
    dtype = c.attrs["dtype"] or "int32"
    if all(isinstance(d, int) for d in dims):  # a static shape is that constant
        return rx.Constant(np.array(dims, dtype=dtype))
    out = _shape_tensor(t, args[0])
    return out if dtype == "int64" else r2r.call("relax.astype", out, dtype=dtype)


def dyn_reshape(t, c, args):
    r2r = _relay_to_relax()
    bb, call = t.bb, r2r.call
    x, s = args[0], _int64(t, args[1])
    k, r = _length(s), x.struct_info.ndim
    if r < 0:
        raise _Unsupported("the operand's rank must be known")
    sizes = _shape_tensor(t, x)
    if not c.attrs["allowzero"]:  # 0 copies the input's size at that position
        if k == r:
            src = sizes
        elif k < r:
            src = bb.emit(call("relax.strided_slice", sizes, r2r.prims([0]), r2r.prims([0]), r2r.prims([k])))
        else:
            pad = rx.Constant(np.zeros(k - r, dtype="int64"))
            src = bb.emit(call("relax.concat", bb.tuple_of([sizes, pad]), axis=0))
        s = bb.emit(call("relax.where", bb.emit(call("relax.equal", s, _const(0))), src, s))
    inferred = bb.emit(call("relax.equal", s, _const(-1)))
    known = bb.emit(call("relax.prod", bb.emit(call("relax.where", inferred, _const(1), s))))
    known = bb.emit(call("relax.maximum", known, _const(1)))  # an empty target: no division by 0
    total = bb.emit(call("relax.prod", sizes))
    quotient = bb.emit(call("relax.floor_divide", total, known))
    s = bb.emit(call("relax.where", inferred, quotient, s))
    return call("relax.reshape", x, r2r.shape_expr(run_time_shape(t, s)))


def dyn_broadcast_to(t, c, args):
    r2r = _relay_to_relax()
    return r2r.call("relax.broadcast_to", args[0], r2r.shape_expr(run_time_shape(t, args[1])))


def dyn_full(t, c, args):
    r2r = _relay_to_relax()
    fill = args[0]
    dtype = c.attrs["dtype"] or fill.struct_info.dtype
    return r2r.call("relax.full", r2r.shape_expr(run_time_shape(t, args[1])), fill, dtype=dtype)


def dyn_init(t, c, args):
    r2r = _relay_to_relax()
    name = "relax.zeros" if c.op.name == "dyn.zeros" else "relax.ones"
    return r2r.call(name, r2r.shape_expr(run_time_shape(t, args[0])), dtype=c.attrs["dtype"])


def _mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1 and isinstance(a, int):
        return b
    if b == 1 and isinstance(b, int):
        return a
    return tir.BinOp("mul", a, tir.IntImm(b, "int64") if isinstance(b, int) else b)


def dyn_tile(t, c, args):
    r2r = _relay_to_relax()
    bb, call = t.bb, r2r.call
    x = args[0]
    dims = list(r2r._dims(x))
    reps = run_time_shape(t, args[1])
    n = max(len(dims), len(reps))
    dims = [1] * (n - len(dims)) + dims
    reps = [1] * (n - len(reps)) + reps
    spread = bb.emit(call("relax.reshape", x, r2r.shape_expr([v for d in dims for v in (1, d)])))
    copies = bb.emit(call("relax.broadcast_to", spread,
                          r2r.shape_expr([v for rep, d in zip(reps, dims) for v in (rep, d)])))
    return call("relax.reshape", copies, r2r.shape_expr([_mul(rep, d) for rep, d in zip(reps, dims)]))


def _padded(t, e, rank: int, rest: list):
    """A 1-D int64 begin/end/strides operand of length k <= rank, with `rest[k:]` after it."""
    r2r = _relay_to_relax()
    k = _length(e)
    if k > rank:
        raise _Unsupported(f"a slice bound of {k} values for a tensor of rank {rank}")
    if k == rank:
        return _int64(t, e)
    if any(not isinstance(v, int) for v in rest[k:]):
        raise _Unsupported("the dimensions a short slice bound leaves whole must be static")
    if isinstance(e, rx.Constant) and e.data is not None:
        return rx.Constant(np.concatenate([np.asarray(e.data).astype("int64").reshape(-1),
                                           np.array(rest[k:], dtype="int64")]))
    tail = rx.Constant(np.array(rest[k:], dtype="int64"))
    return t.bb.emit(r2r.call("relax.concat", t.bb.tuple_of([_int64(t, e), tail]), axis=0))


def dyn_strided_slice(t, c, args):
    r2r = _relay_to_relax()
    if c.attrs["slice_mode"] != "end":
        raise _Unsupported('slice_mode="size" of run-time bounds')
    x = args[0]
    dims = list(r2r._dims(x))
    rank = len(dims)
    begin = _padded(t, args[1], rank, [0] * rank)
    end = _padded(t, args[2], rank, dims)
    strides = _padded(t, args[3], rank, [1] * rank)
    return r2r.call("relax.dynamic_strided_slice", x, begin, end, strides)


CONVERTERS = {"shape_of": shape_of, "dyn.reshape": dyn_reshape, "dyn.broadcast_to": dyn_broadcast_to,
              "dyn.full": dyn_full, "dyn.zeros": dyn_init, "dyn.ones": dyn_init, "dyn.tile": dyn_tile,
              "dyn.strided_slice": dyn_strided_slice}
