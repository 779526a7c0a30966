"""Struct info over symbolic sizes for the Relax table (`relax.py`'s `sym_rel`): R.reshape's
-1 and R.strided_slice's length written as TVM 0.27 writes them (TOPI's index
canonicalisation, the product rules and the simplifier's forms)."""

from __future__ import annotations

import math

from ..codegen import tir_build as tb
from ..ir import tir
from ..ir.types import TensorType
from .common import fmt_shape
from .registry import TypeRelError
from .relax_bridge import _strided_slice


def _imm(v):
    return tir.IntImm(v, "int64") if isinstance(v, int) else v


def _reshape_sym(args, at):
    """relax.reshape of symbolic sizes to a shape without -1: TVM's result is the target shape
    as written (its element-count check fails only where it can prove a difference, which
    symbolic sizes rarely allow). With a -1 the generic fit decides."""
    x, shape = args[0], tuple(args[1])
    if x.shape is not None and shape.count(-1) == 1 and all(isinstance(v, int) for v in shape):
        shape = _infer_product(x.shape, shape)
    if any(v is None or isinstance(v, int) and v < 0 for v in shape) or x.shape is None:
        return None
    old, new = _monomial(x.shape), _monomial(shape)
    if old is not None and new is not None and (not old[1]) != (not new[1]):
        (c, _), (k, _) = (old, new) if not old[1] else (new, old)
        if k and c % k:  # TVM's modular analysis proves `c != k * symbols`
            raise TypeRelError(f"cannot reshape a tensor of shape {fmt_shape(x.shape)} into {fmt_shape(shape)}")
    return TensorType(shape, x.dtype)


def _infer_product(old_dims, shape: tuple) -> tuple:
    """A -1 among constant target dims, where the input's element count is a product of
    several symbols (which the generic fit cannot express): TVM's `floordiv(prod(old),
    prod(new))` as its simplifier prints it, the symbols in order, then the constant."""
    old = _monomial(old_dims)
    known = 1
    for v in shape:
        known *= v if v != -1 else 1
    if old is None or len(old[1]) < 2 or not known or old[0] % known:
        return shape
    dim = old[1][0]
    for sym in old[1][1:]:
        dim = tir.BinOp("mul", dim, sym)
    if old[0] // known != 1:
        dim = tir.BinOp("mul", dim, tir.IntImm(old[0] // known, "int64"))
    return tuple(dim if v == -1 else v for v in shape)


def _monomial(dims) -> tuple[int, list] | None:
    """The product of dims as (constant coefficient, symbols), if each dim is a constant, a
    variable or a variable times a constant."""
    coef, symbols = 1, []
    for d in dims:
        if isinstance(d, int):
            coef *= d
        elif isinstance(d, tir.Var):
            symbols.append(d)
        elif isinstance(d, tir.BinOp) and d.op == "mul" and isinstance(d.a, tir.Var) and isinstance(d.b, tir.IntImm):
            symbols.append(d.a)
            coef *= d.b.value
        else:
            return None
    return coef, symbols


def _strided_slice_sym(args, at):
    """relax.strided_slice on symbolic bounds or dimensions: TOPI's GetLength (TVM 0.27's
    InferStructInfo), built with TVM's folding operators and simplified by an analyzer that
    knows the tensor's size variables non-negative, as the BlockBuilder's does."""
    x = args[0]
    axes, begin, end = args[1:4]
    strides = args[4] if len(args) > 4 and args[4] is not None else (1,) * len(axes)
    if not all(isinstance(v, int) for v in tuple(axes) + tuple(strides)):
        return None
    ndim = len(x.shape)
    _strided_slice([x, axes, begin if all(isinstance(v, int) for v in begin) else (0,) * len(begin),
                    end if all(isinstance(v, int) for v in end) else (0,) * len(end), strides], at, None)
    from ..codegen.topi.rewrite_simplify import Analyzer  # codegen imports the op table

    analyzer = Analyzer(nonneg=_size_vars(x.shape))
    shape = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        a = a + ndim if a < 0 else a
        if s == 0:
            raise TypeRelError(f"strided_slice stride for axis {a} is 0")
        if shape[a] is None or b is None or e is None:
            shape[a] = None
            continue
        length = analyzer.simplify(slice_length(b, e, s, shape[a], at["assume_inbound"]))
        shape[a] = length.value if isinstance(length, tir.IntImm) else length
    return TensorType(tuple(shape), x.dtype)


def slice_length(begin, end, stride: int, extent, assume_inbound: bool) -> tir.PrimExpr:
    """TOPI's GetLength before simplification: with assume_inbound `ceildiv(end - begin,
    stride)` as written (negative bounds are not counted from the end, a negative stride
    divides the same way), else of the canonicalised bounds."""

    begin, end, extent = _imm(begin), _imm(end), _imm(extent)
    if assume_inbound:
        return _ceildiv(tb.sub(end, begin), stride)
    begin, end = _canonical_index(begin, extent, stride), _canonical_index(end, extent, stride)
    return _ceildiv(tb.sub(begin, end), -stride) if stride < 0 else _ceildiv(tb.sub(end, begin), stride)


def _ceildiv(a: tir.PrimExpr, b: int) -> tir.PrimExpr:
    """tvm::ceildiv: floordiv(a + b - 1, b), folded as TryConstFold folds it."""

    return tb.floordiv(tb.sub(tb.add(a, b), 1), b)


def _canonical_index(index: tir.PrimExpr, extent: tir.PrimExpr, stride: int) -> tir.PrimExpr:
    """TOPI's CanonicalizeIndex: negative from the end, clamped to [0, extent] ([-1, extent - 1]
    for a negative stride); static when index and extent are constants."""

    if isinstance(index, tir.IntImm) and isinstance(extent, tir.IntImm):
        v, d = index.value, extent.value
        v = v + d if v < 0 else v
        lo, hi = (-1, d - 1) if stride < 0 else (0, d)
        return tb.const(min(max(v, lo), hi), "int64")
    if isinstance(index, tir.Var) and isinstance(extent, tir.Var) and index.name == extent.name:
        return index
    lo, hi = (tb.const(-1, "int64"), tb.sub(extent, 1)) if stride < 0 else (tb.const(0, "int64"), extent)
    if not (isinstance(index, tir.IntImm) and index.value >= 0):
        index = tb.if_then_else(tb.lt(index, 0), tb.add(index, extent), index)
    return tb.min_(tb.max_(index, lo), hi)


def _size_vars(dims) -> list:
    found: list = []

    def visit(e):
        if isinstance(e, tir.Var):
            found.append(e)
        elif isinstance(e, tir.Node):
            for f in type(e).fields:
                v = getattr(e, f)
                for item in v if isinstance(v, (tuple, list)) else (v,):
                    visit(item)
    for d in dims:
        visit(d)
    return found


def _strided_slice_deduce(args_sinfo: list, attrs: dict):
    """relax.strided_slice with assume_inbound over a static shape: TVM's length is
    `ceildiv(end - begin, stride)` of the bounds as written (`end=[-1]` from 0 gives -1 rows),
    where the Relay relation would clamp. Other calls: the generic way (None)."""
    from ..ir.relax import PrimStructInfo, TensorStructInfo, TupleStructInfo

    x = args_sinfo[0]
    if not attrs.get("assume_inbound") or not isinstance(x, TensorStructInfo) or not isinstance(x.shape, tuple) \
            or not all(isinstance(d, int) for d in x.shape):
        return None
    lists = []
    for arg in args_sinfo[1:]:
        if not isinstance(arg, TupleStructInfo) or not all(
                isinstance(f, PrimStructInfo) and isinstance(f.value, (int, tir.IntImm)) for f in arg.fields_):
            return None
        lists.append(tuple(int(getattr(f.value, "value", f.value)) for f in arg.fields_))
    axes, begin, end = lists[:3]
    strides = lists[3] if len(lists) > 3 else (1,) * len(axes)
    _strided_slice([TensorType(x.shape, x.dtype), axes, begin, end, strides], attrs, None)  # the checks
    shape = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        if s == 0:
            raise TypeRelError(f"strided_slice stride for axis {a} is 0")
        shape[a % len(shape)] = slice_length(b, e, s, shape[a % len(shape)], True).value
    return TensorStructInfo(tuple(shape), x.dtype, vdevice=x.vdevice)


def window_sym(op_name: str, layout_attr: str):
    """sym_rel of a convolution or pool (`op_name`) whose input has a size variable along a
    spatial axis: that output size as TVM 0.27's InferStructInfo writes it,
    `Simplify((n + pads - dilation * (kernel - 1) - 1) // stride + 1)` with n non-negative, and
    with a pool's ceil_mode the last window dropped where it would start in the padding. The
    other dims are the relation's on the static sizes (another size variable, the batch, goes
    through as a sentinel). Compound sizes (`n * 2`) are left to the generic fit (None)."""
    def rel(args, at):
        from ..codegen.topi.pool import _symbolic_out_size
        from ..codegen.topi.rewrite_simplify import Analyzer
        from .relax import lookup

        x = args[0]
        layout = at[layout_attr]
        out_layout = at["out_layout"] or layout
        spatial = [c for c in layout if c in "DHW"]
        if x.shape is None or not any(isinstance(x.shape[layout.index(c)], tir.Var) for c in spatial):
            return None
        if any(not isinstance(t, TensorType) or t.shape is None or not all(isinstance(d, int) for d in t.shape)
               for t in args[1:]):
            return None
        sentinels, dims = {}, []
        for i, d in enumerate(x.shape):
            if not isinstance(d, int):
                if layout[i] in spatial and not isinstance(d, tir.Var):
                    return None
                d_int = 720720 * (1009 + 2 * i)  # distinct, large, divisible by any small stride
                sentinels[d_int] = d
                d = d_int
            dims.append(d)
        out = lookup(op_name).infer([TensorType(tuple(dims), x.dtype), *args[1:]], at)
        shape = [sentinels.get(v, v) if isinstance(v, int) else v for v in out.shape]
        nd = len(spatial)
        for i, c in enumerate(spatial):
            n = x.shape[layout.index(c)]
            if not isinstance(n, tir.Var):
                continue
            if "kernel_layout" in at:
                kernel = args[1].shape[at["kernel_layout"].index(c)]
            else:
                kernel = at["pool_size"][i]
            stride, dilation = at["strides"][i], at["dilation"][i]
            head, tail = at["padding"][i], at["padding"][i + nd]
            if at.get("ceil_mode"):
                size = _symbolic_out_size(n, kernel, stride, dilation, head, tail + stride - 1, True)
            else:
                numerator = tb.sub(tb.sub(tb.add(n, head + tail), dilation * (kernel - 1)), 1)
                size = Analyzer([n]).simplify(tb.add(tb.floordiv(numerator, stride), 1))
            shape[out_layout.index(c)] = size
        if any(isinstance(v, int) and v >= 720720 * 1009 for v in shape):
            return None  # a size computed from a sentinel: not expressible here
        return TensorType(tuple(shape), out.dtype)
    return rel


def _arange_deduce(args_sinfo: list, attrs: dict):
    """relax.arange of constant bounds, where TVM's length is not the relation's: TVM's
    InferStructInfo computes `floordiv(end - start + step - 1, step)` for integer bounds and
    `cast(int64, ceil(cast(float32, end - start) / step))` for float ones with its folding
    operators, which fold float16/bfloat16 arithmetic only by its zero rules (`end - 0`), and
    Simplify folds nothing more but `x - x`: such a length stays an expression. An empty range
    is a length of 0 (the relation would reject it); a negative length (TVM's for a step
    pointing away from the end) and the rest: the generic way (None)."""
    from ..ir.relax import PrimStructInfo, TensorStructInfo

    values = []
    for s in args_sinfo[:3]:
        if not isinstance(s, PrimStructInfo) or not isinstance(s.value, (tir.IntImm, tir.FloatImm)):
            return None
        values.append(s.value)
    start, end, step = values
    if all(v.dtype.startswith(("int", "uint")) for v in values):
        length = tb.floordiv(tb.sub(tb.add(tb.sub(end, start), step), 1), step)
    else:
        difference = tb.sub(end, start)
        if isinstance(difference, tir.BinOp) and difference.a.value == difference.b.value:
            difference = tb.const(0.0, difference.dtype)  # the rewrite simplifier's `x - x`
        quotient = tb.div(tb.cast("float32", difference), step)
        ceiled = tb.const(math.ceil(quotient.value), "float32") if isinstance(quotient, tir.FloatImm) \
            else tb.call("ceil", quotient)
        length = tb.cast("int64", ceiled)
    if isinstance(length, tir.IntImm) and length.value != 0:
        return None
    return TensorStructInfo((length.value if isinstance(length, tir.IntImm) else length,), attrs["dtype"])
