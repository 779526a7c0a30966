"""Which of TVM 0.27's legalized Relax operators irtool declares: (tvm-marked) every operator
with a legalization in TVM (an `FLegalize` attribute) is in irtool's table, or listed here with
the reason it is not. A new TVM operator, or one declared since, makes the test fail until the
lists are updated."""

from __future__ import annotations

import subprocess

import pytest

from irtool.ops import relax as relax_ops

# Families TVM legalizes that irtool leaves out on purpose.
OUT_OF_SCOPE = {
    "relax.grad.": "gradient operators of TVM's training workflow (relax.training); no inference model has them",
    "relax.ccl.": "multi-device collectives: legalized to calls into TVM's Disco runtime, which irtool has not",
    "relax.dist.": "multi-device sharding (Disco), as relax.ccl",
    "relax.inspect.": "DLTensor introspection: host PrimFuncs reading DLTensor fields (tvm_struct_get), "
                      "used by TVM's own run-time checks",
}
# Operators TVM legalizes that irtool does not declare yet (docs/passes.md names them too).
NOT_YET: set[str] = set()

_LIST_LEGALIZED = """
import tvm
from tvm import relax  # registers the legalizations
for name in tvm.get_global_func("ir.ListOpNames")():
    if name.startswith("relax.") and tvm.ir.Op.get(name).get_attr("FLegalize") is not None:
        print(name)
"""


def test_lists_are_disjoint_from_the_table():
    declared = set(relax_ops.relax_ops())
    assert not NOT_YET & declared, f"declared now, remove from NOT_YET: {sorted(NOT_YET & declared)}"
    assert not [n for n in declared if n.startswith(tuple(OUT_OF_SCOPE))]


@pytest.mark.tvm
def test_every_operator_tvm_legalizes_is_declared_or_listed(tvm_python):
    proc = subprocess.run([tvm_python, "-c", _LIST_LEGALIZED], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    legalized = set(proc.stdout.split())
    assert len(legalized) > 150  # the listing worked
    declared = set(relax_ops.relax_ops())
    missing = {n for n in legalized - declared if not n.startswith(tuple(OUT_OF_SCOPE))}
    assert missing == NOT_YET, (f"undeclared and unlisted: {sorted(missing - NOT_YET)}; "
                                f"listed but declared or gone from TVM: {sorted(NOT_YET - missing)}")
