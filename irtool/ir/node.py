"""The base of Relax and TIR nodes: immutable objects that list their structural fields.

Each class names its fields once (`fields`); construction, structural equality,
hashing and the generic visitors all read that list, so a node class is a few lines.
`span` is never a structural field.
"""

from __future__ import annotations


class Node:
    __slots__ = ("span",)
    fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "fields" in cls.__dict__ and "__slots__" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} must declare __slots__")

    def children(self):
        """The field values, in declaration order."""
        return tuple(getattr(self, f) for f in self.fields)

    def replace(self, **changes):
        """A copy with some fields replaced (nodes are immutable)."""
        new = object.__new__(type(self))
        for cls in type(self).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(self, slot):
                    object.__setattr__(new, slot, changes.get(slot, getattr(self, slot)))
        for key, value in changes.items():
            object.__setattr__(new, key, value)
        return new

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.fields[:3])
        return f"{type(self).__name__}({inner})"
