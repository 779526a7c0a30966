"""Elementwise operators: unary, binary broadcasting, comparison and logical, `where`.

One table row per operator; the references follow TVM's semantics (the TOPI compute and
the TIR it lowers to on LLVM, TVM's reference target) where NumPy's differ:

- integer `divide`/`mod` truncate toward zero (C semantics, TIR `Div`/`truncmod`);
  `floor_divide`/`floor_mod` floor; for floats `floor_divide` is `floor(a / b)` and
  `floor_mod` is `a - floor(a / b) * b` (topi/broadcast.h), not NumPy's fmod-based pair;
- `round` rounds half away from zero: `tir.round` lowers to `llvm.round` / `roundf`;
- `sign` is `x > 0 ? 1 : (x < 0 ? -1 : 0)`, so sign(NaN) = 0 and sign(-0.0) = +0.0;
- `maximum`/`minimum`/`nn.relu`/`clip` are TIR `Max`/`Min`, i.e. `a > b ? a : b` and
  `a < b ? a : b` (codegen_llvm.cc), so relu(NaN) = 0 and clip(NaN) = a_max;
  `clip` is `max(min(x, a_max), a_min)` with both bounds cast to the data type first,
  and `nn.leaky_relu` casts `alpha` to the data type before multiplying;
- `floor`/`ceil`/`round`/`trunc` return integer inputs unchanged;
- `logical_and`/`logical_or`/`logical_not` keep their input's dtype (BroadcastRel /
  IdentityRel), and `where` takes a condition of any dtype (non-zero is true).
"""

from __future__ import annotations

import math

from ..ir.types import TensorType
from .common import broadcast_shapes, np, same_dtype, tensor_arg
from .registry import AttrSpec, OpDef, OpPattern, TypeRelError, register

E, B = OpPattern.ELEMWISE, OpPattern.BROADCAST


# ------------------------------------------------------------------ type relations


def identity_rel(args, attrs):
    return tensor_arg(args, 0, "data")


def cast_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if not attrs["dtype"]:
        raise TypeRelError("cast needs a target `dtype`")
    return TensorType(t.shape, attrs["dtype"])


def identity_bool_rel(args, attrs):
    """TVM's IdentityCompRel (isnan, isinf): the input's shape, bool."""
    return TensorType(tensor_arg(args, 0, "data").shape, "bool")


def broadcast_rel(args, attrs):
    a, b = tensor_arg(args, 0, "lhs"), tensor_arg(args, 1, "rhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), same_dtype("", a, b))


def integer_broadcast_rel(args, attrs):
    """BroadcastRel for the bitwise operators, which TOPI defines on integers and bool only."""
    out = broadcast_rel(args, attrs)
    if not out.dtype.startswith(("int", "uint", "bool")):
        raise TypeRelError(f"bitwise operators take integer or bool tensors, got {out.dtype}")
    return out


def integer_identity_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if not t.dtype.startswith(("int", "uint")):  # ~ of a bool is not a logical not in every backend
        raise TypeRelError(f"bitwise_not takes an integer tensor, got {t.dtype}")
    return t


def _storage_bits(dtype: str) -> int:
    return 8 if dtype == "bool" else int("".join(c for c in dtype if c.isdigit()) or 0)


def reinterpret_rel(args, attrs):
    """TVM's reinterpret: the same bits read as another type of the same width."""
    t = tensor_arg(args, 0, "data")
    if _storage_bits(t.dtype) != _storage_bits(attrs["dtype"]):
        raise TypeRelError(f"cannot reinterpret {t.dtype} as {attrs['dtype']}: the widths differ")
    return TensorType(t.shape, attrs["dtype"])


def broadcast_bool_rel(args, attrs):
    a, b = tensor_arg(args, 0, "lhs"), tensor_arg(args, 1, "rhs")
    same_dtype("", a, b)
    return TensorType(broadcast_shapes(a.shape, b.shape), "bool")


def where_rel(args, attrs):
    # TVM's WhereRel: any condition dtype; x and y broadcast first, then the condition.
    cond, x, y = (tensor_arg(args, i, n) for i, n in enumerate(("condition", "x", "y")))
    dtype = same_dtype("", x, y)
    return TensorType(broadcast_shapes(cond.shape, broadcast_shapes(x.shape, y.shape)), dtype)


# ------------------------------------------------------------------ references


def _keep(dtype_of):
    """Wrap a NumPy function so its result keeps the input's dtype (float32 stays float32)."""
    def ref(*arrays, **attrs):
        return np.asarray(dtype_of(*arrays, **attrs)).astype(arrays[0].dtype, copy=False)
    return ref


def _is_float(x):
    return np.issubdtype(x.dtype, np.floating)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _trunc_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return np.true_divide(a, b)


def _trunc_mod(a, b):
    return np.fmod(a, b)


def _floor_div(a, b):
    return np.floor(np.true_divide(a, b)) if _is_float(a) else np.floor_divide(a, b)


def _floor_mod(a, b):
    return a - np.floor(np.true_divide(a, b)) * b if _is_float(a) else np.mod(a, b)


def _round(x):
    """Half away from zero, keeping the sign of zero (C `round`, `llvm.round`)."""
    if not _is_float(x):
        return x
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _sign(x):
    return np.where(x > 0, 1, np.where(x < 0, -1, 0))


def _max(a, b):
    return np.where(a > b, a, b)


def _min(a, b):
    return np.where(a < b, a, b)


def _as_dtype(value: float, dtype):
    """A float attribute cast to the data's dtype, as `tvm::cast` does; an out-of-range bound
    saturates for integer dtypes (where C++ leaves the conversion undefined)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        value = min(max(value, info.min), info.max)
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)


def _clip(x, a_min, a_max):
    return _max(_min(x, _as_dtype(a_max, x.dtype)), _as_dtype(a_min, x.dtype))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def _ones_like(x):
    return np.ones_like(x)


UNARY = [
    # name           reference                                        pattern
    ("negative",     lambda x: np.negative(x),                        E),
    ("abs",          lambda x: np.abs(x),                             E),
    ("exp",          lambda x: np.exp(x),                             E),
    ("log",          lambda x: np.log(x),                             E),
    ("sqrt",         lambda x: np.sqrt(x),                            E),
    ("rsqrt",        lambda x: 1.0 / np.sqrt(x.astype(np.float64)),   E),
    ("sigmoid",      _sigmoid,                                        E),
    ("tanh",         lambda x: np.tanh(x),                            E),
    ("erf",          _erf,                                            E),
    ("floor",        lambda x: np.floor(x) if _is_float(x) else x,    E),
    ("ceil",         lambda x: np.ceil(x) if _is_float(x) else x,     E),
    ("round",        _round,                                          E),
    ("trunc",        lambda x: np.trunc(x) if _is_float(x) else x,    E),
    ("sign",         _sign,                                           E),
    ("sin",          lambda x: np.sin(x),                             E),
    ("cos",          lambda x: np.cos(x),                             E),
    ("tan",          lambda x: np.tan(x),                             E),
    ("asin",         lambda x: np.arcsin(x),                          E),
    ("acos",         lambda x: np.arccos(x),                          E),
    ("atan",         lambda x: np.arctan(x),                          E),
    ("sinh",         lambda x: np.sinh(x),                            E),
    ("cosh",         lambda x: np.cosh(x),                            E),
    ("asinh",        lambda x: np.arcsinh(x),                         E),
    ("acosh",        lambda x: np.arccosh(x),                         E),
    ("atanh",        lambda x: np.arctanh(x),                         E),
    ("nn.relu",      lambda x: _max(x, np.zeros((), x.dtype)),        E),
    ("copy",         lambda x: np.copy(x),                            E),
    ("zeros_like",   lambda x: np.zeros_like(x),                      E),
    ("ones_like",    _ones_like,                                      E),
    ("logical_not",  lambda x: np.logical_not(x),                     E),
    # an identity that fuse-ops never fuses across (TVM's relay.annotation.stop_fusion)
    ("annotation.stop_fusion", lambda x: x,                           OpPattern.OPAQUE),
]

BINARY = [
    # name            reference                                    pattern
    ("add",           lambda a, b: np.add(a, b),                    B),
    ("subtract",      lambda a, b: np.subtract(a, b),               B),
    ("multiply",      lambda a, b: np.multiply(a, b),               B),
    ("divide",        _trunc_div,                                   B),
    ("floor_divide",  _floor_div,                                   B),
    ("mod",           _trunc_mod,                                   B),
    ("floor_mod",     _floor_mod,                                   B),
    ("power",         lambda a, b: np.power(a, b),                  B),
    ("maximum",       _max,                                         B),
    ("minimum",       _min,                                         B),
    ("logical_and",   lambda a, b: np.logical_and(a, b),            B),
    ("logical_or",    lambda a, b: np.logical_or(a, b),             B),
    ("logical_xor",   lambda a, b: np.logical_xor(a, b),            B),
]

# TOPI's bitwise operators and shifts (C operators on the element type; a shift by the
# element's width or more is undefined in LLVM, and NumPy's value is kept for it)
BITWISE = [
    ("bitwise_and",   lambda a, b: np.bitwise_and(a, b)),
    ("bitwise_or",    lambda a, b: np.bitwise_or(a, b)),
    ("bitwise_xor",   lambda a, b: np.bitwise_xor(a, b)),
    ("left_shift",    lambda a, b: np.left_shift(a, b)),
    ("right_shift",   lambda a, b: np.right_shift(a, b)),
]

COMPARE = [
    ("equal",         lambda a, b: np.equal(a, b)),
    ("not_equal",     lambda a, b: np.not_equal(a, b)),
    ("less",          lambda a, b: np.less(a, b)),
    ("less_equal",    lambda a, b: np.less_equal(a, b)),
    ("greater",       lambda a, b: np.greater(a, b)),
    ("greater_equal", lambda a, b: np.greater_equal(a, b)),
]

register(*(OpDef(name, ("data",), identity_rel, pattern, _keep(ref)) for name, ref, pattern in UNARY))
register(*(OpDef(name, ("lhs", "rhs"), broadcast_rel, pattern, _keep(ref)) for name, ref, pattern in BINARY))
register(*(OpDef(name, ("lhs", "rhs"), broadcast_bool_rel, B, ref) for name, ref in COMPARE))
register(*(OpDef(name, ("lhs", "rhs"), integer_broadcast_rel, B, _keep(ref)) for name, ref in BITWISE))
register(OpDef("bitwise_not", ("data",), integer_identity_rel, E, _keep(lambda x: np.invert(x))))
register(
    OpDef("nn.leaky_relu", ("data",), identity_rel, E,
          _keep(lambda x, alpha: np.where(x > 0, x, x * _as_dtype(alpha, x.dtype))),
          attrs=(AttrSpec("alpha", "float", 0.25),), relax_name="relax.nn.leakyrelu"),
    OpDef("clip", ("data",), identity_rel, E, _keep(_clip),
          attrs=(AttrSpec("a_min", "float"), AttrSpec("a_max", "float"))),
    OpDef("reinterpret", ("data",), reinterpret_rel, E, lambda x, dtype: x.copy(order="C").view(dtype),
          attrs=(AttrSpec("dtype", "dtype"),)),
    OpDef("cast", ("data",), cast_rel, E, lambda x, dtype: x.astype(dtype),
          attrs=(AttrSpec("dtype", "dtype"),), relax_name="relax.astype"),
    OpDef("where", ("condition", "x", "y"), where_rel, B, lambda c, x, y: np.where(c, x, y)),
    # NumPy's isnan/isinf are False for integers, as TOPI's (a constant false)
    OpDef("isnan", ("data",), identity_bool_rel, E, lambda x: np.isnan(x)),
    OpDef("isinf", ("data",), identity_bool_rel, E, lambda x: np.isinf(x)),
)
