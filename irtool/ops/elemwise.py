"""Elementwise operators: unary, binary broadcasting, comparison and logical, `where`.

One table row per operator; the references follow TVM's semantics where NumPy's differ:
integer `divide`/`mod` truncate toward zero (C semantics, TVM's `truncdiv`/`truncmod`),
`floor_divide`/`floor_mod` floor; `round` rounds half to even (LLVM's `nearbyint`).
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


def bool_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    return TensorType(t.shape, "bool")


def cast_rel(args, attrs):
    t = tensor_arg(args, 0, "data")
    if not attrs["dtype"]:
        raise TypeRelError("cast needs a target `dtype`")
    return TensorType(t.shape, attrs["dtype"])


def broadcast_rel(args, attrs):
    a, b = tensor_arg(args, 0, "lhs"), tensor_arg(args, 1, "rhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), same_dtype("", a, b))


def broadcast_bool_rel(args, attrs):
    a, b = tensor_arg(args, 0, "lhs"), tensor_arg(args, 1, "rhs")
    same_dtype("", a, b)
    return TensorType(broadcast_shapes(a.shape, b.shape), "bool")


def where_rel(args, attrs):
    cond, x, y = (tensor_arg(args, i, n) for i, n in enumerate(("condition", "x", "y")))
    if cond.dtype != "bool":
        raise TypeRelError(f"condition must be a bool tensor, got dtype {cond.dtype}")
    dtype = same_dtype("", x, y)
    return TensorType(broadcast_shapes(broadcast_shapes(cond.shape, x.shape), y.shape), dtype)


# ------------------------------------------------------------------ references


def _keep(dtype_of):
    """Wrap a NumPy function so its result keeps the input's dtype (float32 stays float32)."""
    def ref(*arrays, **attrs):
        return np.asarray(dtype_of(*arrays, **attrs)).astype(arrays[0].dtype, copy=False)
    return ref


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _trunc_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return np.true_divide(a, b)


def _trunc_mod(a, b):
    return np.fmod(a, b)


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
    ("floor",        lambda x: np.floor(x),                           E),
    ("ceil",         lambda x: np.ceil(x),                            E),
    ("round",        lambda x: np.round(x),                           E),
    ("trunc",        lambda x: np.trunc(x),                           E),
    ("sign",         lambda x: np.sign(x),                            E),
    ("sin",          lambda x: np.sin(x),                             E),
    ("cos",          lambda x: np.cos(x),                             E),
    ("nn.relu",      lambda x: np.maximum(x, 0),                      E),
    ("copy",         lambda x: np.copy(x),                            E),
    ("zeros_like",   lambda x: np.zeros_like(x),                      E),
    ("ones_like",    _ones_like,                                      E),
]

BINARY = [
    # name            reference                                    pattern
    ("add",           lambda a, b: np.add(a, b),                    B),
    ("subtract",      lambda a, b: np.subtract(a, b),               B),
    ("multiply",      lambda a, b: np.multiply(a, b),               B),
    ("divide",        _trunc_div,                                   B),
    ("floor_divide",  lambda a, b: np.floor_divide(a, b),           B),
    ("mod",           _trunc_mod,                                   B),
    ("floor_mod",     lambda a, b: np.mod(a, b),                    B),
    ("power",         lambda a, b: np.power(a, b),                  B),
    ("maximum",       lambda a, b: np.maximum(a, b),                B),
    ("minimum",       lambda a, b: np.minimum(a, b),                B),
]

COMPARE = [
    ("equal",         lambda a, b: np.equal(a, b)),
    ("not_equal",     lambda a, b: np.not_equal(a, b)),
    ("less",          lambda a, b: np.less(a, b)),
    ("less_equal",    lambda a, b: np.less_equal(a, b)),
    ("greater",       lambda a, b: np.greater(a, b)),
    ("greater_equal", lambda a, b: np.greater_equal(a, b)),
    ("logical_and",   lambda a, b: np.logical_and(a, b)),
    ("logical_or",    lambda a, b: np.logical_or(a, b)),
]

register(*(OpDef(name, ("data",), identity_rel, pattern, _keep(ref)) for name, ref, pattern in UNARY))
register(*(OpDef(name, ("lhs", "rhs"), broadcast_rel, pattern, _keep(ref)) for name, ref, pattern in BINARY))
register(*(OpDef(name, ("lhs", "rhs"), broadcast_bool_rel, B, ref) for name, ref in COMPARE))
register(
    OpDef("logical_not", ("data",), bool_rel, E, lambda x: np.logical_not(x)),
    OpDef("nn.leaky_relu", ("data",), identity_rel, E,
          _keep(lambda x, alpha: np.where(x > 0, x, x * alpha)),
          attrs=(AttrSpec("alpha", "float", 0.25),)),
    OpDef("clip", ("data",), identity_rel, E,
          _keep(lambda x, a_min, a_max: np.clip(x, a_min, a_max)),
          attrs=(AttrSpec("a_min", "float"), AttrSpec("a_max", "float"))),
    OpDef("cast", ("data",), cast_rel, E, lambda x, dtype: x.astype(dtype),
          attrs=(AttrSpec("dtype", "dtype"),)),
    OpDef("where", ("condition", "x", "y"), where_rel, B, lambda c, x, y: np.where(c, x, y)),
)
