"""relay-to-relax for shapes known only at run time: Relay's `dyn.*` operators and `shape_of`
of a symbolic shape (relay_to_relax.py registers these converters).

A shape tensor computed from sizes known here (constants and the static or symbolic sizes of
`shape_of`, through take, slices, concatenation and integer arithmetic: torch's
`x.new_zeros(1, x.size(0), H)`) is those sizes, a Relax shape expression, as TVM's Relax ONNX
frontend keeps shape values (`_known_sizes`); the bindings computing the tensor are then dead
and relay-to-relax removes them. Any other shape tensor becomes a Relax shape as TVM 0.27's
Relax frontends make one: the tensor through `R.tensor_to_shape`, then `R.match_cast` to a
shape of fresh symbolic sizes, which the static operator then takes:

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
    dyn.image.resize2d  R.image.resize2d to the matched size (a float size truncated to int64, as
                  TVM's shape function reads it); the roi must be a constant (an attribute in Relax)
    shape_of      R.shape_to_tensor(R.shape_of(x)) (cast to Relay's int32 by default)

    dyn.strided_slice  R.dynamic_strided_slice (whose struct info knows the rank only), begin,
                  end and strides padded to the rank as Relay pads them (0, the dimension, 1; a
                  run-time end is concatenated with the constant rest), in int64
"""

from __future__ import annotations

import numpy as np

from irtool.analysis.struct_info_fit import prim_equal
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Op

from ._relax_block_builder import _Unsupported
from ._symbolic_reshape import _factors, _product, _rebuild


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


def _arith(name: str, a, b):
    """One element of an elementwise integer op on sizes; None when it is not a size we track."""
    if isinstance(a, int) and isinstance(b, int):
        if name == "relax.floor_divide":
            return a // b if b else None
        return {"relax.add": a + b, "relax.subtract": a - b, "relax.multiply": a * b,
                "relax.maximum": max(a, b), "relax.minimum": min(a, b)}[name]
    if name == "relax.multiply":
        return _product([a, b])
    if name in ("relax.maximum", "relax.minimum") and prim_equal(a, b):
        return a
    if name == "relax.floor_divide" and isinstance(b, int) and b > 0:
        factor, syms = _factors(a)
        return _rebuild(factor // b, syms) if factor % b == 0 else None
    return None


_ARITHMETIC = ("relax.add", "relax.subtract", "relax.multiply", "relax.maximum", "relax.minimum",
               "relax.floor_divide")


def _known_sizes(t, e) -> tuple[list, bool] | None:
    """The elements of a 0-d or 1-D integer tensor, as ints and symbolic sizes, with whether it
    is 0-d; None when an element is known only at run time."""
    if isinstance(e, rx.Var):
        e = t.bb.values.get(id(e))
    if isinstance(e, rx.Constant):
        data = None if e.data is None else np.asarray(e.data)
        if data is None or data.ndim > 1 or data.dtype.kind not in "iu":
            return None
        return [int(v) for v in data.reshape(-1)], data.ndim == 0
    if not (isinstance(e, rx.Call) and isinstance(e.op, Op)):
        return None
    name, args, attrs = e.op.name, e.args, e.attrs
    if name == "relax.shape_to_tensor":
        shape = t.bb.values.get(id(args[0])) if isinstance(args[0], rx.Var) else args[0]
        if isinstance(shape, rx.ShapeExpr):
            return list(shape.values), False
        if isinstance(shape, rx.Call) and isinstance(shape.op, Op) and shape.op.name == "relax.shape_of":
            sinfo = shape.args[0].struct_info
            if isinstance(sinfo, rx.TensorStructInfo) and isinstance(sinfo.shape, tuple):
                return list(sinfo.shape), False
        return None
    if name == "relax.astype":
        return _known_sizes(t, args[0]) if np.dtype(attrs["dtype"]).kind in "iu" else None
    operands = [_known_sizes(t, a) for a in args if not isinstance(a, rx.Tuple)]
    if any(o is None for o in operands):
        return None
    if name == "relax.take" and attrs["axis"] in (0, -1) and not operands[0][1]:
        data, n = operands[0][0], len(operands[0][0])
        indices, scalar = operands[1]
        if not all(isinstance(i, int) and -n <= i < n for i in indices):
            return None
        return [data[i] for i in indices], scalar
    if name == "relax.expand_dims" and operands[0][1] and tuple(attrs["axis"]) in ((0,), (-1,)):
        return operands[0][0], False
    if name == "relax.concat" and isinstance(args[0], rx.Tuple) and attrs["axis"] in (0, -1):
        parts = [_known_sizes(t, f) for f in args[0].fields_]
        if any(p is None or p[1] for p in parts):
            return None
        return [v for p in parts for v in p[0]], False
    if name == "relax.strided_slice" and not operands[0][1]:
        bounds = [[int(v.value.value) for v in a.fields_] for a in args[1:] if isinstance(a, rx.Tuple)]
        if len(bounds) < 3 or any(len(b) != 1 for b in bounds) or bounds[0] != [0]:
            return None
        begin, end = bounds[1][0], bounds[2][0]
        step = bounds[3][0] if len(bounds) > 3 else 1
        return (operands[0][0][begin:end:step], False) if step > 0 else None
    if name in _ARITHMETIC:
        (a, a_scalar), (b, b_scalar) = operands
        if len(a) != len(b) and not (a_scalar or b_scalar):
            return None
        n = max(len(a), len(b))
        values = [_arith(name, a[0 if a_scalar else i], b[0 if b_scalar else i]) for i in range(n)]
        return (values, a_scalar and b_scalar) if all(v is not None for v in values) else None
    return None


def _sizes(t, shape_tensor) -> list | None:
    """The shape tensor's elements when `_known_sizes` knows them all and each is a size (not
    negative: Relay's codes are for `dyn.reshape` to resolve); marks the translator, whose dead
    shape arithmetic is removed at the end."""
    known = _known_sizes(t, shape_tensor)
    if known is None or known[1] or any(isinstance(v, int) and v < 0 for v in known[0]):
        return None
    t.folded_shapes = True
    return known[0]


def run_time_shape(t, shape_tensor) -> list:
    """The sizes of a 1-D integer tensor: known here (`_sizes`), or `R.tensor_to_shape` of it
    matched to fresh symbolic sizes."""
    r2r = _relay_to_relax()
    sizes = _sizes(t, shape_tensor)
    if sizes is not None:
        return sizes
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
    x = args[0]
    sizes = _sizes(t, args[1])
    codes = sizes is not None and not c.attrs["allowzero"] and any(isinstance(v, int) and v == 0 for v in sizes)
    if sizes is not None and not codes:
        return r2r.call("relax.reshape", x, r2r.shape_expr(sizes))
    s = _int64(t, args[1])
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


def dyn_resize2d(t, c, args):
    r2r = _relay_to_relax()
    roi = args[2]
    if not isinstance(roi, rx.Constant) or roi.data is None:
        raise _Unsupported("the roi must be a constant (R.image.resize2d takes it as an attribute)")
    at = c.attrs
    return r2r.call("relax.image.resize2d", args[0], r2r.shape_expr(run_time_shape(t, args[1])),
                    roi=tuple(float(v) for v in np.asarray(roi.data).reshape(-1)), layout=at["layout"],
                    method=at["method"], coordinate_transformation_mode=at["coordinate_transformation_mode"],
                    rounding_method=at["rounding_method"], cubic_alpha=at["cubic_alpha"],
                    cubic_exclude=at["cubic_exclude"], extrapolation_value=at["extrapolation_value"],
                    out_dtype=at["out_dtype"])


CONVERTERS = {"shape_of": shape_of, "dyn.reshape": dyn_reshape, "dyn.broadcast_to": dyn_broadcast_to,
              "dyn.full": dyn_full, "dyn.zeros": dyn_init, "dyn.ones": dyn_init, "dyn.tile": dyn_tile,
              "dyn.strided_slice": dyn_strided_slice, "dyn.image.resize2d": dyn_resize2d}
