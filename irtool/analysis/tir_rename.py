"""Fresh definitions and unique names in TIR (TVM's s_tir RenewDefs and FuseTIR's
SBlockNameDeduplicator).

`renew_defs(func)` copies a PrimFunc with a new Var for every variable it defines
(scalar parameters, shape variables of its buffers, loop and block iteration variables,
let variables, buffer data), hence a new Buffer for every buffer: two copies of one
PrimFunc can then live side by side in one body without sharing a definition. A PrimFunc
has no free variables, so every Var in it is one of its definitions.

`unique_sblock_names(stmt)` renames sblocks whose name was already taken, in TVM's
post order (inner blocks first, an sblock's init before its body): a taken name loses
its trailing digits and counts on from them (`T_add` -> `T_add1`, `add2` -> `add3`).
"""

from __future__ import annotations

from ..ir import tir
from ..ir.node import Node
from ..ir.tir_visitor import StmtExprMutator


class _Renewer(StmtExprMutator):
    def pre_mutate(self, node: Node):
        if type(node) is tir.Var:
            return tir.Var(node.name, node.dtype, node.type_annotation, node.span)
        return None


def renew_defs(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with every definition (and so every buffer) replaced by a fresh copy."""
    return _Renewer().mutate(func)


def next_unique_name(name: str, taken: set[str]) -> str:
    """TVM's SBlockNameDeduplicator::GetUniqueName: `name`, or its base (trailing digits
    dropped) with the first free counter after them; the result is added to `taken`."""
    if name not in taken:
        taken.add(name)
        return name
    base = name.rstrip("0123456789")
    counter = int(name[len(base):]) + 1 if len(base) < len(name) else 1
    while f"{base}{counter}" in taken:
        counter += 1
    taken.add(candidate := f"{base}{counter}")
    return candidate


class _SBlockNameDeduplicator(StmtExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.taken: set[str] = set()

    def mutate_SBlock(self, old: tir.SBlock, new: tir.SBlock) -> tir.SBlock:
        name = next_unique_name(new.name, self.taken)
        return new if name == new.name else new.replace(name=name)


def unique_sblock_names(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` with duplicate sblock names made unique (see the module docstring)."""
    return _SBlockNameDeduplicator().mutate(stmt)
