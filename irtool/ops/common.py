"""Helpers shared by the operator families: argument checks and shape arithmetic for
type relations, and the lazily imported NumPy the references use."""

from __future__ import annotations

from .._util import lazy_import
from ..ir.types import ANY, TensorType, TupleType, Type
from .registry import TypeRelError

np = lazy_import("numpy")


def fmt_shape(shape) -> str:
    return "(" + ", ".join("?" if d is ANY else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def fmt_type(t: Type) -> str:
    from ..text.relay_printer import format_type

    return format_type(t)


def tensor_arg(args: list, i: int, name: str = "") -> TensorType:
    """Argument i as a tensor type, or a TypeRelError saying what it is instead."""
    t = args[i]
    if not isinstance(t, TensorType):
        what = f"argument `{name}`" if name else f"argument {i}"
        raise TypeRelError(f"{what} must be a tensor, got {fmt_type(t)}")
    return t


def tuple_arg(args: list, i: int, name: str = "") -> TupleType:
    t = args[i]
    if not isinstance(t, TupleType):
        what = f"argument `{name}`" if name else f"argument {i}"
        raise TypeRelError(f"{what} must be a tuple of tensors, got {fmt_type(t)}")
    for f in t.fields:
        if not isinstance(f, TensorType):
            raise TypeRelError(f"{name or 'the tuple'} must hold tensors, got {fmt_type(f)}")
    return t


def same_dtype(op: str, *types: TensorType) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        listed = " and ".join(t.dtype for t in types)
        raise TypeRelError(f"data types {listed} do not match")
    return types[0].dtype


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise TypeRelError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """TVM's ConcreteBroadcast: numpy rules, with `?` matching anything."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        if i > len(a):
            out.append(b[-i])
            continue
        if i > len(b):
            out.append(a[-i])
            continue
        s1, s2 = a[-i], b[-i]
        if s1 == 1 and s1 is not ANY:
            out.append(s2)
        elif s2 == 1 and s2 is not ANY:
            out.append(s1)
        elif s1 is ANY:
            out.append(s2)
        elif s2 is ANY:
            out.append(s1)
        elif s1 == s2:
            out.append(s1)
        else:
            raise TypeRelError(f"incompatible broadcast shapes {fmt_shape(a)} and {fmt_shape(b)}")
    return tuple(reversed(out))


def numel(shape) -> int | None:
    n = 1
    for d in shape:
        if d is ANY:
            return None
        n *= d
    return n
