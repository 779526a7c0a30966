"""Structural equality and hashing of Relax and TIR nodes (the `Node` classes).

Both walk each node's declared `fields`. Definitions compared by identity — Relax and
TIR variables and TIR buffers — are matched one to one on first sight (alpha
equivalence, free variables included, as TVM's `map_free_vars=True`); afterwards a
use must meet its partner. The hash numbers such nodes by order of first appearance,
so equal programs hash equal.
"""

from __future__ import annotations

from . import relax, tir
from .expr import Attrs, GlobalVar, Op
from .node import Node

_MAPPED = (relax.Var, tir.Var, tir.Buffer)

# Fields TVM's structural equality and hash skip (SEqHashIgnore): an sblock's name, so
# BlockBuilder.add_func dedups PrimFuncs whose blocks were named after different inputs.
_IGNORED_FIELDS = {tir.SBlock: ("name",)}
_COMPARED_FIELDS: dict[type, tuple[str, ...]] = {}


def _compared_fields(t: type) -> tuple[str, ...]:
    fields = _COMPARED_FIELDS.get(t)
    if fields is None:
        ignored = _IGNORED_FIELDS.get(t, ())
        fields = _COMPARED_FIELDS[t] = tuple(f for f in t.fields if f not in ignored)
    return fields


def _is_array(x) -> bool:
    return type(x).__name__ == "ndarray"


class _Equal:
    def __init__(self) -> None:
        self.l2r: dict[int, object] = {}
        self.r2l: dict[int, object] = {}

    def eq(self, a, b) -> bool:
        if a is b and not isinstance(a, _MAPPED):
            return True
        ta = type(a)
        if ta is not type(b):
            return False
        if isinstance(a, Node):
            if isinstance(a, _MAPPED):
                mapped = self.l2r.get(id(a))
                if mapped is not None or id(b) in self.r2l:
                    return mapped is b
                self.l2r[id(a)] = b
                self.r2l[id(b)] = a
            if ta is relax.Constant:
                return self._constant(a, b)
            return all(self.eq(getattr(a, f), getattr(b, f)) for f in _compared_fields(ta))
        if ta is tuple or ta is list:
            return len(a) == len(b) and all(self.eq(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict:  # attribute maps (`T.target({...})`)
            return list(a) == list(b) and all(self.eq(a[k], b[k]) for k in a)
        if ta is Op:
            return a.name == b.name
        if ta is GlobalVar:
            return a.name_hint == b.name_hint
        if ta is Attrs:
            ia, ib = list(a.items()), list(b.items())
            return len(ia) == len(ib) and all(ka == kb and self.eq(va, vb)
                                              for (ka, va), (kb, vb) in zip(ia, ib, strict=True))
        if ta is float:
            return a == b or (a != a and b != b)
        if _is_array(a):
            return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        return a == b

    def _constant(self, a: relax.Constant, b: relax.Constant) -> bool:
        if a.data is None or b.data is None:
            return a.data is None and b.data is None and self.eq(a.struct_info, b.struct_info)
        return self.eq(a.data, b.data)


def node_equal(lhs, rhs) -> bool:
    """Structural equality of Relax/TIR nodes (or tuples of them)."""
    return _Equal().eq(lhs, rhs)


class _Hash:
    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}

    def h(self, x) -> int:
        t = type(x)
        if isinstance(x, Node):
            if isinstance(x, _MAPPED):
                n = self.numbers.get(id(x))
                if n is not None:
                    return hash(("use", n))
                self.numbers[id(x)] = len(self.numbers)
            if t is relax.Constant and x.data is not None:
                return hash((t.__name__, self.h(x.data)))
            return hash((t.__name__, *(self.h(getattr(x, f)) for f in _compared_fields(t))))
        if t is tuple or t is list:
            return hash(tuple(self.h(v) for v in x))
        if t is dict:
            return hash(tuple((k, self.h(v)) for k, v in x.items()))
        if t is Op:
            return hash(("Op", x.name))
        if t is GlobalVar:
            return hash(("GlobalVar", x.name_hint))
        if t is Attrs:
            return hash(tuple((k, self.h(v)) for k, v in x.items()))
        if t is float and x != x:
            return hash("nan")
        if _is_array(x):
            return hash((str(x.dtype), x.shape, x.tobytes()))
        return hash((t.__name__, x))


def node_hash(node) -> int:
    return _Hash().h(node)
