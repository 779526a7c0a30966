"""Helpers shared by the operator-family tests: type-relation calls by op name."""

from __future__ import annotations

import pytest

from irtool.ir.expr import Attrs
from irtool.ir.types import TensorType, type_equal
from irtool.ops.registry import TypeRelError, lookup


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def attrs_of(name, attrs):
    return lookup(name).make_attrs(Attrs(attrs) if attrs else None)


def rel(name, *types, **attrs):
    return lookup(name).type_rel(list(types), attrs_of(name, attrs))


def rel_error(name, *types, **attrs) -> str:
    with pytest.raises(TypeRelError) as info:
        rel(name, *types, **attrs)
    return str(info.value)


def assert_type(t, shape, dtype):
    assert type_equal(t, T(shape, dtype)), t
