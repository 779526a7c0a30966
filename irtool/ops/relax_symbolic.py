"""Struct info over symbolic sizes for the Relax table (`relax.py`'s `sym_rel`): R.reshape's
-1 and R.strided_slice's length written as TVM 0.27 writes them (TOPI's index
canonicalisation, the product rules and the simplifier's forms)."""

from __future__ import annotations

from ..ir import tir
from ..ir.types import TensorType
from .common import fmt_shape
from .registry import TypeRelError
from .relax_bridge import _strided_slice

_INT64_MAX = 2**63 - 1


def _imm(v):
    return tir.IntImm(v, "int64") if isinstance(v, int) else v


def _fold(op: str, a, b):
    """A TIR binary operation on ints or expressions, folded when both are ints."""
    if isinstance(a, int) and isinstance(b, int):
        return {"add": int.__add__, "sub": int.__sub__, "min": min, "max": max, "floordiv": int.__floordiv__}[op](a, b)
    if op in ("add", "sub") and b == 0:
        return a
    return tir.BinOp(op, _imm(a), _imm(b))


def _canonical_sym(i, d, stride: int):
    """TOPI's index canonicalisation (negative from the end, clamped) on expressions, as TVM
    0.27's StridedSlice struct info writes it: min(max(i < 0 ? i + d : i, lo), hi)."""
    lo, hi = (-1, _fold("sub", d, 1)) if stride < 0 else (0, d)
    if isinstance(i, int):
        if isinstance(d, int):
            from .transform import _canonical

            return _canonical(i, d, stride)
        if i >= _INT64_MAX // 2:  # "to the end"
            return hi
        if i <= -_INT64_MAX // 2:
            return lo
        if i < 0:
            return _fold("max", _fold("add", d, i), lo)
        return _fold("min", i, hi) if stride > 0 else _fold("max", _fold("min", i, hi), lo)
    picked = tir.Call("int64", "tirx.if_then_else", [tir.BinOp("lt", i, _imm(0)), tir.BinOp("add", i, _imm(d)), i])
    return _fold("min", _fold("max", picked, lo), hi)


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
    """relax.strided_slice on symbolic bounds or dimensions (TVM's formula; with assume_inbound,
    the plain difference)."""
    x = args[0]
    axes, begin, end = args[1:4]
    strides = args[4] if len(args) > 4 and args[4] is not None else (1,) * len(axes)
    if not all(isinstance(v, int) for v in tuple(axes) + tuple(strides)):
        return None
    ndim = len(x.shape)
    _strided_slice([x, axes, begin if all(isinstance(v, int) for v in begin) else (0,) * len(begin),
                    end if all(isinstance(v, int) for v in end) else (0,) * len(end), strides], at, None)
    shape = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        a = a + ndim if a < 0 else a
        d = shape[a]
        if s == 0:
            raise TypeRelError(f"strided_slice stride for axis {a} is 0")
        if d is None or b is None or e is None:
            shape[a] = None
            continue
        if at["assume_inbound"]:
            cb = _fold("add", d, b) if isinstance(b, int) and b < 0 else b
            ce = _fold("add", d, e) if isinstance(e, int) and e < 0 else e
        else:
            cb, ce = _canonical_sym(b, d, s), _canonical_sym(e, d, s)
        diff = _fold("sub", ce, cb) if s > 0 else _fold("sub", cb, ce)
        step = abs(s)
        if isinstance(diff, int):
            shape[a] = max(0, -(-diff // step))
        else:
            shape[a] = diff if step == 1 else _simplified(_fold("floordiv", _fold("add", diff, step - 1), step))
    return TensorType(tuple(shape), x.dtype)


def _simplified(e):
    """TVM's Analyzer::Simplify of a struct info expression, as far as its canonical form goes
    (`(min(100, n) - min(1, n) + 1) // 2` is `(min(100, n) + 1 - min(1, n)) // 2`)."""
    from ..codegen.topi.canonical import canonical_simplify  # symbolic strides only

    return canonical_simplify(e)
