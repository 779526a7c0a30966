"""zero-pipeline: TVM's `relax.get_pipeline("zero")`, the Relax lowering every build runs.

    legalize-ops -> annotate-tir-op-pattern -> fold-constant -> fuse-ops -> fuse-tir

Relax operators become PrimFuncs, the PrimFuncs get their fusion patterns, calls on
constants are evaluated, fusable call_tirs are grouped into private Primitive functions,
and each group becomes one PrimFunc (seed 001). TVM registers each of the five at opt
level 0, so they all run whatever the context's opt level; each shows in the pass
instruments (`--print-ir-after-all`, `--time-passes`) under its own name.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.transform import ModulePass, get_pass, register

STAGES = ("legalize-ops", "annotate-tir-op-pattern", "fold-constant", "fuse-ops", "fuse-tir")


@register
@dataclass(frozen=True)
class ZeroPipeline(ModulePass):
    name = "zero-pipeline"
    tvm_name = "zero"
    opt_level = 0
    summary = "TVM's zero pipeline: legalize-ops, annotate-tir-op-pattern, fold-constant, fuse-ops, fuse-tir"

    def transform_module(self, mod, ctx):
        for stage in STAGES:
            if {stage, get_pass(stage).tvm_name} & ctx.disabled_pass:
                continue
            mod = ctx.run(get_pass(stage)(), mod)
        return mod
