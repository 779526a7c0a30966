"""Relay expressions.

Nodes are small immutable objects compared by identity; a program is a DAG of them
(graph bindings `%0 = …;` in the text share a node, they do not create variables).
`structural_equal` / `structural_hash` (in `irtool.ir.structural`) compare programs.

Each expression may carry a source `span` and, once types are inferred, a
`checked_type` (the only slot a pass may fill in after construction).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .types import Type


class Expr:
    __slots__ = ("span", "checked_type")


class Var(Expr):
    """A local variable: function parameter, let-bound variable or free variable."""

    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint: str, type_annotation: Type | None = None, span=None) -> None:
        self.name_hint = name_hint
        self.type_annotation = type_annotation
        self.span = span
        self.checked_type = None

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


class GlobalVar(Expr):
    """`@name`: a reference to a function of the module."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str, span=None) -> None:
        self.name_hint = name_hint
        self.span = span
        self.checked_type = None

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name_hint})"


class Constant(Expr):
    """A tensor constant. `data` is a NumPy array; it is `None` only for a
    `meta[relay.Constant][i]` reference whose file carried no `#[metadata]` section."""

    __slots__ = ("data",)

    def __init__(self, data: Any, span=None) -> None:
        self.data = data
        self.span = span
        self.checked_type = None

    @property
    def is_scalar(self) -> bool:
        return self.data is not None and self.data.ndim == 0

    def __repr__(self) -> str:
        if self.data is None:
            return "Constant(<missing data>)"
        return f"Constant({self.data.dtype}{list(self.data.shape)})"


class Op(Expr):
    """A primitive operator, interned by name: `Op.get("nn.conv2d") is Op.get("nn.conv2d")`."""

    __slots__ = ("name",)
    _interned: dict[str, Op] = {}

    def __init__(self, name: str) -> None:
        self.name = name
        self.span = None
        self.checked_type = None

    @classmethod
    def get(cls, name: str) -> Op:
        op = cls._interned.get(name)
        if op is None:
            op = cls._interned[name] = cls(name)
        return op

    def __repr__(self) -> str:
        return f"Op({self.name})"


class Call(Expr):
    """`op(args, key=value…)`: the callee is an Op, a GlobalVar, a Var or a Function."""

    __slots__ = ("op", "args", "attrs")

    def __init__(self, op: Expr, args, attrs: Attrs | None = None, span=None) -> None:
        self.op = op
        self.args = tuple(args)
        self.attrs = attrs
        self.span = span
        self.checked_type = None

    def __repr__(self) -> str:
        return f"Call({self.op!r}, {len(self.args)} args)"


class Tuple(Expr):
    __slots__ = ("fields",)

    def __init__(self, fields, span=None) -> None:
        self.fields = tuple(fields)
        self.span = span
        self.checked_type = None


class TupleGetItem(Expr):
    """`%t.0`"""

    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int, span=None) -> None:
        self.tuple_value = tuple_value
        self.index = index
        self.span = span
        self.checked_type = None


class Let(Expr):
    """`let %var = value; body`"""

    __slots__ = ("var", "value", "body")

    def __init__(self, var: Var, value: Expr, body: Expr, span=None) -> None:
        self.var = var
        self.value = value
        self.body = body
        self.span = span
        self.checked_type = None


class If(Expr):
    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: Expr, true_branch: Expr, false_branch: Expr, span=None) -> None:
        self.cond = cond
        self.true_branch = true_branch
        self.false_branch = false_branch
        self.span = span
        self.checked_type = None


class Function(Expr):
    """`fn (%x: T, Primitive=1) -> R { body }`; `attrs` holds the function attributes."""

    __slots__ = ("params", "body", "ret_type", "attrs")

    def __init__(self, params, body: Expr, ret_type: Type | None = None, attrs: Attrs | None = None,
                 span=None) -> None:
        self.params = tuple(params)
        self.body = body
        self.ret_type = ret_type
        self.attrs = attrs
        self.span = span
        self.checked_type = None

    def attr(self, key: str, default=None):
        return self.attrs.get(key, default) if self.attrs is not None else default

    @property
    def is_primitive(self) -> bool:
        value = self.attr("Primitive")
        return bool(value if not isinstance(value, TypedScalar) else value.value)


# --------------------------------------------------------------------------- attributes


class TypedScalar:
    """An attribute number whose dtype is not the default one: `1i64`, `2f64`, `1f16`.

    Plain Python `int` means int32 and plain `float` means float32/double, as TVM prints them."""

    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype: str) -> None:
        self.value = value
        self.dtype = dtype

    def __eq__(self, other) -> bool:
        return isinstance(other, TypedScalar) and self.dtype == other.dtype and (
            self.value == other.value or (self.value != self.value and other.value != other.value))

    def __hash__(self) -> int:
        if self.value != self.value:  # NaN equals NaN here, so it must hash alike
            return hash(("nan", self.dtype))
        return hash((self.value, self.dtype))

    def __repr__(self) -> str:
        return f"TypedScalar({self.value!r}, {self.dtype!r})"


class Attrs:
    """Call or function attributes: an immutable, ordered `key -> value` mapping.

    Values are `int`, `float`, `bool`, `str`, `None`, `TypedScalar`, or tuples of these."""

    __slots__ = ("_items",)

    def __init__(self, items=()) -> None:
        self._items = dict(items)

    def get(self, key: str, default=None):
        return self._items.get(key, default)

    def __getitem__(self, key: str):
        return self._items[key]

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items(self):
        return self._items.items()

    def with_attr(self, key: str, value) -> Attrs:
        items = dict(self._items)
        items[key] = value
        return Attrs(items)

    def __repr__(self) -> str:
        return f"Attrs({self._items!r})"
