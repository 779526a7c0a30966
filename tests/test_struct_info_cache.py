"""deduce_call's cache of static-shape results gives what a fresh deduction gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from irtool.analysis import struct_info as si
from irtool.ir.relax import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def _fresh(*args, **kwargs):
    saved = dict(si._STATIC_RESULTS)
    si._STATIC_RESULTS.clear()
    try:
        return si.deduce_call(*args, **kwargs)
    finally:
        si._STATIC_RESULTS.clear()
        si._STATIC_RESULTS.update(saved)


CASES = [
    ("relax.add", [TensorStructInfo((1, 64, 56, 56), "float32"), TensorStructInfo((1, 64, 1, 1), "float32")], None),
    ("relax.nn.conv2d", [TensorStructInfo((1, 3, 8, 8), "float32"), TensorStructInfo((4, 3, 3, 3), "float32")],
     {"padding": (1, 1, 1, 1)}),
    ("relax.split", [TensorStructInfo((4, 6), "float32")], {"indices_or_sections": 3, "axis": 1}),
    ("relax.permute_dims", [TensorStructInfo((2, 3, 4), "int8")], {"axes": (2, 0, 1)}),
    ("relax.nn.relu", [TensorStructInfo(None, "float32", 3)], None),
    ("relax.matmul", [TensorStructInfo((5, 2, 3), "float16"), TensorStructInfo((3, 7), "float16")], None),
]


@pytest.mark.parametrize("op, args, attrs", CASES, ids=[c[0] for c in CASES])
def test_cached_result_equals_a_fresh_one_and_is_not_shared(op, args, attrs):
    first = si.deduce_call(op, args, attrs)
    second = si.deduce_call(op, args, attrs)
    assert structural_equal(first, _fresh(op, args, attrs))
    assert structural_equal(second, first)
    assert second is not first
    if isinstance(first, TupleStructInfo):
        assert all(a is not b for a, b in zip(first.fields_, second.fields_))


def test_errors_are_not_cached():
    bad = [TensorStructInfo((2, 3), "float32"), TensorStructInfo((4, 5), "float32")]
    for _ in range(2):
        with pytest.raises(si.StructInfoError):
            si.deduce_call("relax.add", bad, None)


def test_symbolic_and_shape_arguments_are_not_cached():
    from irtool.ir import tir

    n = tir.Var("n", "int64")
    si._STATIC_RESULTS.clear()
    si.deduce_call("relax.nn.relu", [TensorStructInfo((n, 4), "float32")], None)
    si.deduce_call("relax.reshape", [TensorStructInfo((2, 3), "float32"), ShapeStructInfo((3, 2))], None)
    assert not si._STATIC_RESULTS


def test_a_generated_network_parses_the_same_with_and_without_the_cache():
    import text_throughput

    text = text_throughput.make_relax_module(60)
    cached = parse(text, "a.py")
    si._STATIC_RESULTS.clear()
    real = si._STATIC_RESULTS
    si._STATIC_RESULTS = _NoCache()
    try:
        fresh = parse(text, "b.py")
    finally:
        si._STATIC_RESULTS = real
    assert structural_equal(cached, fresh)
    assert to_text(cached) == to_text(fresh) == text.rstrip("\n")


class _NoCache(dict):
    def __setitem__(self, key, value) -> None:
        pass
