"""annotate-tir-op-pattern: TVM 0.27's relax.transform.AnnotateTIROpPattern
(src/relax/transform/annotate_tir_op_pattern.cc), a PrimFunc pass at opt level 0.

Every PrimFunc of the module gets `"op_pattern": K`, K being what
`irtool.analysis.tir_op_pattern.analyze_op_pattern_kind` finds (the store/load index
rules, reductions, multiply-add, several blocks: see that module). Relax fuse-ops reads
the attribute to decide what a `call_tir` of the function may fuse with.

    T.func_attr({"tirx.noalias": True})  ->  T.func_attr({"op_pattern": 0, "tirx.noalias": True})

A function whose `op_pattern` is already non-zero keeps it (TVM's `HasNonzeroAttr`), so a
hand-set pattern wins; an explicit `0` is recomputed. Attributes stay sorted by key, the
order TVM's printer writes a dict of string keys in. Relax functions are untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.analysis.tir_op_pattern import OP_PATTERN_ATTR, analyze_op_pattern_kind
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.transform import ModulePass, register


def annotate_op_pattern(func: tir.PrimFunc) -> tir.PrimFunc:
    """`func` with its `op_pattern` attribute (unchanged if it has a non-zero one)."""
    current = func.attr(OP_PATTERN_ATTR)
    if isinstance(current, tir.IntImm):
        current = current.value
    if current is not None and current != 0:
        return func
    kind = analyze_op_pattern_kind(func)
    if current == kind:  # an explicit 0 that analysis confirms
        return func
    attrs = dict(func.attrs)
    attrs[OP_PATTERN_ATTR] = kind
    return func.replace(attrs=tuple(sorted(attrs.items(), key=lambda kv: kv[0].encode())))


@register
@dataclass(frozen=True)
class AnnotateTIROpPattern(ModulePass):
    name = "annotate-tir-op-pattern"
    tvm_name = "AnnotateTIROpPattern"
    opt_level = 0
    summary = "Annotate each TIR PrimFunc with its op pattern (op_pattern), for Relax fusion"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        functions = {name: annotate_op_pattern(fn) if isinstance(fn, tir.PrimFunc) else fn
                     for name, fn in mod.functions.items()}
        if all(functions[name] is fn for name, fn in mod.functions.items()):
            return mod
        out = mod.with_functions(functions)
        out.bare = mod.bare
        return out
