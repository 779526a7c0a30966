"""Fresh definitions and unique names in TIR (TVM's s_tir RenewDefs and FuseTIR's
SBlockNameDeduplicator).

`renew_defs(func)` copies a PrimFunc with a new Var for every variable it defines
(scalar parameters, shape variables of its buffers, loop and block iteration variables,
let variables, buffer data), hence a new Buffer for every buffer: two copies of one
PrimFunc can then live side by side in one body without sharing a definition. A PrimFunc
has no free variables, so every Var in it is one of its definitions.

TVM rebuilds each sblock iteration domain it copies as `Range(min, extent)`, the
constructor that takes a begin and an *end*: a domain of non-zero min comes out with
`extent - min` as its extent (a nested sblock's `(v, v + 1)` becomes `(v, v + (1 - v))`,
and `(v, v + (1 - v - v))` after FuseTIR's second RenewDefs). `range_from_begin_end`
is that constructor; `renew_defs` applies it to every iteration domain, as RenewDefs
does, and FuseTIR's substitutor to the domains whose bounds it changes.

`unique_sblock_names(stmt)` renames sblocks whose name was already taken, in TVM's
post order (inner blocks first, an sblock's init before its body): a taken name loses
its trailing digits and counts on from them (`T_add` -> `T_add1`, `add2` -> `add3`).
"""

from __future__ import annotations

from irtool.codegen.tir_build import sub

from ..ir import tir
from ..ir.node import Node
from ..ir.tir_visitor import StmtExprMutator


class _Renewer(StmtExprMutator):
    def pre_mutate(self, node: Node):
        if type(node) is tir.Var:
            return tir.Var(node.name, node.dtype, node.type_annotation, node.span)
        return None

    def mutate_IterVar(self, old: tir.IterVar, new: tir.IterVar) -> tir.IterVar:
        return with_dom_rebuilt(new)


def _is_zero(e: tir.PrimExpr) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 0


def range_from_begin_end(begin: tir.PrimExpr, end: tir.PrimExpr) -> tir.Range:
    """TVM's `Range(begin, end)`: extent `end - begin` (tvm's operator-, constant-folded),
    or `end` itself when begin is 0."""
    return tir.Range(begin, end if _is_zero(begin) else sub(end, begin))


def with_dom_rebuilt(iv: tir.IterVar) -> tir.IterVar:
    """`iv` with its domain passed through `Range(dom.min, dom.extent)`, as TVM's
    RenewDefs and StmtMutator rebuild an sblock iteration variable (the extent taken
    for an end: see the module docstring)."""
    if iv.dom is None or _is_zero(iv.dom.min):
        return iv
    return iv.replace(dom=range_from_begin_end(iv.dom.min, iv.dom.extent))


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
