"""Malformed ONNX models get a diagnostic, never another exception: deterministic mutants of
the ONNX backend node-test models (an input dropped or blanked, an attribute set to an odd
value, all attributes removed), imported with `from_onnx`."""

from __future__ import annotations

import random

import pytest

onnx = pytest.importorskip("onnx")

from test_onnx_conformance import node_cases  # noqa: E402

from irtool.diagnostics import DiagnosticError  # noqa: E402
from irtool.frontend.onnx import from_onnx  # noqa: E402

ODD_INTS = (-5, -1, 0, 1, 7, 1 << 40)
ODD_FLOATS = (0.0, -1.0, float("nan"), 1e30)


def _mutate(model, rng: random.Random):
    node = rng.choice(list(model.graph.node))
    r = rng.random()
    if r < 0.3 and node.input:
        node.input[rng.randrange(len(node.input))] = ""
    elif r < 0.6 and node.attribute:
        a = rng.choice(node.attribute)
        if a.type == a.INT:
            a.i = rng.choice(ODD_INTS)
        elif a.type == a.INTS and a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice((-3, 0, 99))
        elif a.type == a.FLOAT:
            a.f = rng.choice(ODD_FLOATS)
        elif a.type == a.STRING:
            a.s = b"bogus"
    elif r < 0.8:
        del node.input[-1:]
    else:
        del node.attribute[:]
    return node.op_type


@pytest.mark.parametrize("shard", range(4))
def test_mutated_models_get_diagnostics(shard):
    rng = random.Random(shard)
    failures = []
    for case in node_cases()[shard::4]:
        model = case.load()
        if not model.graph.node:
            continue
        op = _mutate(model, rng)
        try:
            from_onnx(model)
        except DiagnosticError:
            pass
        except Exception as err:  # noqa: BLE001 — what the test looks for
            failures.append(f"{case.name} ({op}): {type(err).__name__}: {err}")
    assert not failures, f"{len(failures)} mutants raised:\n" + "\n".join(failures[:10])
