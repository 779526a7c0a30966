"""infer-type: fill in the checked type of every expression (TVM's InferType).

The algorithm lives in `irtool.analysis.type_infer` (the verifier uses it too); see
there. The module is returned with types attached, so `--print-types` shows them as
TVM's `/* ty=... */` annotations; as in TVM, a variable without an annotation gets its
inferred type written as one, and a function without a return type gets its body's.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.analysis.type_infer import infer_type_pass
from irtool.transform import Pass, register


@register
@dataclass(frozen=True)
class InferType(Pass):
    name = "infer-type"
    tvm_name = "InferType"
    opt_level = 0
    summary = "Infer and check the type of every expression"

    def transform_module(self, mod, ctx):
        return infer_type_pass(mod)
