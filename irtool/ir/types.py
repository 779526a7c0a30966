"""Relay types: tensor, tuple, function and incomplete types.

Types are immutable and compared structurally (`type_equal`), never by `==`.
A tensor dimension is an `int` or `ANY` (printed `?`).
"""

from __future__ import annotations

import re

_DTYPE = re.compile(r"(?:bool|(?:int|uint)(?:8|16|32|64|1|4)|(?:float|bfloat)(?:16|32|64|8)|handle)(?:x[0-9]+)?$")


def is_valid_dtype(name: str) -> bool:
    """`float32`, `int8x4`, `bool`, `uint1`, `bfloat16` … as TVM's DataType accepts them."""
    return _DTYPE.match(name) is not None


class AnyDim:
    """The unknown dimension `?` (TVM's `relay.Any()`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "?"


ANY = AnyDim()

Dim = "int | AnyDim"


class Type:
    __slots__ = ("span",)


class TensorType(Type):
    """`Tensor[(1, ?, 3), float32]`; a 0-rank tensor type prints as its dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: str = "float32", span=None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.span = span

    def __repr__(self) -> str:
        return f"TensorType({self.shape}, {self.dtype!r})"


class TupleType(Type):
    __slots__ = ("fields",)

    def __init__(self, fields, span=None) -> None:
        self.fields = tuple(fields)
        self.span = span

    def __repr__(self) -> str:
        return f"TupleType({list(self.fields)})"


class FuncType(Type):
    __slots__ = ("arg_types", "ret_type")

    def __init__(self, arg_types, ret_type: Type, span=None) -> None:
        self.arg_types = tuple(arg_types)
        self.ret_type = ret_type
        self.span = span

    def __repr__(self) -> str:
        return f"FuncType({list(self.arg_types)}, {self.ret_type!r})"


class IncompleteType(Type):
    """`_`: a type left for inference to fill in."""

    __slots__ = ()

    def __init__(self, span=None) -> None:
        self.span = span

    def __repr__(self) -> str:
        return "IncompleteType()"


def type_key(t: Type | None):
    """A hashable value that is equal exactly when two types are structurally equal."""
    if t is None:
        return None
    cls = type(t)
    if cls is TensorType:
        return ("T", t.shape if ANY not in t.shape else tuple("?" if d is ANY else d for d in t.shape), t.dtype)
    if cls is TupleType:
        return ("U", tuple(type_key(f) for f in t.fields))
    if cls is FuncType:
        return ("F", tuple(type_key(a) for a in t.arg_types), type_key(t.ret_type))
    if cls is IncompleteType:
        return ("_",)
    raise TypeError(f"not a type: {t!r}")


def type_equal(a: Type | None, b: Type | None) -> bool:
    if a is b:
        return True
    return type_key(a) == type_key(b)
