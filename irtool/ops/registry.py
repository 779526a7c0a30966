"""The operator registry: one declaration per operator, the single source of truth.

An `OpDef` holds everything irtool knows about an operator:

    name / relax_name   `nn.conv2d` / `relax.nn.conv2d` (printed `R.nn.conv2d`)
    args                argument names, in order
    attrs               typed attributes with TVM's names, defaults and normalisation
    type_rel            argument types + attributes -> result type (raises TypeRelError);
                        a tuple argument has a TupleType, a tuple result is a TupleType
    pattern             fusion pattern kind, as TVM registers `TOpPattern`
    stateful, reshape_op, shape_data_dependent
                        TVM's TOpIsStateful, TReshapeOp, TShapeDataDependent
    ref                 NumPy reference: ref(*arrays, **attrs) -> array, or a tuple of arrays
                        for a tuple result; a tuple argument arrives as a tuple of arrays.
                        The result has exactly the shape and dtype the relation gives.
    compute             TE-like compute definition; filled in by lowering (issue: codegen)

Families of similar operators (unary, binary broadcast, reductions) are declared as
tables in their modules, one line per operator. Family modules import NumPy lazily, so
the parser can consult signatures and attributes without paying NumPy's import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ir.expr import Attrs, TypedScalar
from ..ir.types import is_valid_dtype
from ..text.literals import format_attr_value


class OpPattern:
    """TVM's `OpPatternKind` (include/tvm/relay/op_attr_types.h)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8

    NAMES = {0: "kElemWise", 1: "kBroadcast", 2: "kInjective", 3: "kCommReduce", 4: "kOutEWiseFusable",
             7: "kTuple", 8: "kOpaque"}


class TypeRelError(Exception):
    """A type relation rejected its inputs; infer-type turns it into a diagnostic."""


class AttrError(ValueError):
    """A call's attributes do not fit the operator's declaration."""


REQUIRED = object()

# Attribute kinds: how a parsed value is checked and converted.
#   int float bool str dtype   scalars (`dtype` is a dtype string, "" meaning unset)
#   ints floats                tuples of numbers (a single number is accepted as a 1-tuple)
#   int? ints?                 the same, or None
#   int_or_ints                `indices_or_sections` of split
#   intss                      tuple of int tuples (pad_width)
#   any                        taken as given


def _as_int(value, what: str) -> int:
    if isinstance(value, TypedScalar) and isinstance(value.value, int):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise AttrError(f"{what} must be an integer, got {_show(value)}")


def _as_float(value, what: str) -> float:
    if isinstance(value, TypedScalar):
        value = value.value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise AttrError(f"{what} must be a number, got {_show(value)}")


def _show(value) -> str:
    try:
        return f"`{format_attr_value(value)}`"
    except TypeError:
        return repr(value)


def _convert(kind: str, value, what: str):
    if kind == "any":
        return value
    if kind.endswith("?"):
        return None if value is None else _convert(kind[:-1], value, what)
    if kind == "int":
        return _as_int(value, what)
    if kind == "float":
        return _as_float(value, what)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise AttrError(f"{what} must be True or False, got {_show(value)}")
    if kind == "str":
        if isinstance(value, str):
            return value
        raise AttrError(f"{what} must be a string, got {_show(value)}")
    if kind == "dtype":
        if isinstance(value, str) and (value == "" or is_valid_dtype(value)):
            return value
        raise AttrError(f"{what} must be a data type such as \"float32\", got {_show(value)}")
    if kind in ("ints", "floats", "doubles"):  # doubles: TVM's Array<double>, printed as plain floats
        items = value if isinstance(value, tuple) else (value,)
        one = _as_int if kind == "ints" else _as_float
        return tuple(one(v, f"each element of {what}") for v in items)
    if kind == "int_or_ints":
        return _convert("ints", value, what) if isinstance(value, tuple) else _as_int(value, what)
    if kind == "intss":
        if not isinstance(value, tuple):
            raise AttrError(f"{what} must be a list of lists of integers, got {_show(value)}")
        return tuple(_convert("ints", v, f"each element of {what}") for v in value)
    raise ValueError(f"unknown attribute kind {kind!r}")


@dataclass(frozen=True)
class AttrSpec:
    """One attribute: TVM's name, kind, default (REQUIRED if none) and an optional
    normaliser applied to values the user gives (e.g. 2-value padding -> 4 values)."""

    name: str
    kind: str
    default: Any = REQUIRED
    normalize: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class OpDef:
    name: str
    args: tuple[str, ...]
    type_rel: Callable
    pattern: int
    ref: Callable | None = None
    attrs: tuple[AttrSpec, ...] = ()
    relax_name: str = ""
    compute: Callable | None = None
    summary: str = ""
    # True when the relation also needs the values of constant arguments (arange, full):
    # it is then called type_rel(arg_types, attrs, values), values[i] a NumPy array or None.
    needs_values: bool = False
    # TVM's op attributes that passes consult: TOpIsStateful (never folded or merged),
    # TReshapeOp (only moves data: a fused group of these is `relay.reshape_only`),
    # TShapeDataDependent (the output shape needs input values: opaque to fusion when dynamic)
    stateful: bool = False
    reshape_op: bool = False
    shape_data_dependent: bool = False
    _specs: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.relax_name:
            object.__setattr__(self, "relax_name", "relax." + self.name)
        self._specs.update((a.name, a) for a in self.attrs)

    def make_attrs(self, given: Attrs | None) -> Attrs | None:
        """Check and normalise the attributes of a call; fill in the defaults.
        Raises AttrError naming the first offending attribute."""
        if not self.attrs:
            if given:
                key = next(iter(given))
                raise AttrError(f"operator `{self.name}` has no attribute `{key}`")
            return None
        values = dict(given.items()) if given else {}
        for key in values:
            if key not in self._specs:
                known = ", ".join(a.name for a in self.attrs)
                raise AttrError(f"operator `{self.name}` has no attribute `{key}` (attributes: {known})")
        items = []
        for spec in self.attrs:
            if spec.name in values:
                value = _convert(spec.kind, values[spec.name], f"attribute `{spec.name}` of `{self.name}`")
                if spec.normalize is not None and value is not None:
                    value = spec.normalize(value)
            elif spec.default is REQUIRED:
                raise AttrError(f"operator `{self.name}` requires attribute `{spec.name}`")
            else:
                value = spec.default
            items.append((spec.name, value))
        return Attrs(items)

    def non_default_attrs(self, attrs: Attrs | None):
        """The (key, value) pairs TVM prints: those that differ from their declared default."""
        if attrs is None:
            return []
        from ..ir.structural import attr_value_equal

        out = []
        for key, value in attrs.items():
            spec = self._specs.get(key)
            if spec is None or spec.default is REQUIRED or not attr_value_equal(value, spec.default):
                out.append((key, value))
        return out


_OPS: dict[str, OpDef] = {}
_FAMILIES = ("elemwise", "reduce", "nn", "transform", "image", "dynamic", "algorithm", "indexing", "vision",
             "sampling")
_loaded = False


def register(*defs: OpDef) -> None:
    for d in defs:
        if d.name in _OPS:
            raise ValueError(f"operator {d.name} registered twice")
        _OPS[d.name] = d


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for family in _FAMILIES:
            importlib.import_module(f"irtool.ops.{family}")


def lookup(name: str) -> OpDef | None:
    _load()
    return _OPS.get(name)


def get(name: str) -> OpDef:
    """The OpDef of `name`; KeyError naming the operator if there is none."""
    d = lookup(name)
    if d is None:
        raise KeyError(f"unknown operator `{name}`")
    return d


def make_call(name: str, *args, span=None, **attrs):
    """`Call(Op.get(name), args, attrs)` with the attributes checked, normalised and the
    defaults filled in, as the parser builds calls: `make_call("nn.relu", x)`."""
    from ..ir.expr import Call, Op

    return Call(Op.get(name), args, get(name).make_attrs(Attrs(attrs) if attrs else None), span)


def call_attrs(opdef: OpDef, attrs: Attrs | None) -> Attrs | None:
    """The attributes a call of `opdef` effectively has (defaults when it has none)."""
    return attrs if attrs is not None or not opdef.attrs else opdef.make_attrs(None)


def all_ops() -> dict[str, OpDef]:
    _load()
    return dict(sorted(_OPS.items()))
