"""random.uniform / random.normal / random.multinomial: the type relations, the references
(shape, dtype, range, moments over many samples, determinism per seed), and that the passes
which fold or merge calls leave these stateful calls alone."""

from __future__ import annotations

import numpy as np
import pytest

from irtool.analysis.type_infer import infer_types
from irtool.diagnostics import DiagnosticError
from irtool.exec.relay import interpret
from irtool.ir import Call, Constant, IRModule, Tuple
from irtool.ir.visitor import post_order
from irtool.ops.registry import lookup, make_call
from irtool.text import parse, to_text
from irtool.transform import get_pass


def run(text: str, *args):
    return interpret(infer_types(parse(text)), list(args))


def random_calls(mod) -> list:
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and getattr(n.op, "name", "").startswith(
        "random.")]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_uniform_shape_dtype_range_and_moments(dtype):
    out = run(f'def @main() {{ random.uniform(shape=[200, 100], dtype="{dtype}", low=-2f, high=3f, seed=7) }}')
    assert out.shape == (200, 100) and out.dtype == dtype
    assert out.min() >= -2 and out.max() <= 3
    # 20,000 samples of U(-2, 3): mean 0.5, variance 25/12; 5 standard errors of slack.
    assert abs(out.astype("float64").mean() - 0.5) < 5 * np.sqrt(25 / 12 / out.size)
    assert abs(out.astype("float64").var() - 25 / 12) < 0.1
    assert len(np.unique(out)) > 1000


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_shape_dtype_and_moments(dtype):
    out = run(f'def @main() {{ random.normal(shape=[40000], dtype="{dtype}", mean=1f, scale=2f, seed=3) }}')
    assert out.shape == (40000,) and out.dtype == dtype
    assert abs(out.mean() - 1) < 5 * 2 / np.sqrt(out.size)
    assert abs(out.std() - 2) < 0.05
    # About 68% within one standard deviation.
    assert abs(np.mean(np.abs(out - 1) < 2) - 0.6827) < 0.01


def test_same_seed_same_values_other_seed_other_values():
    text = 'def @main() {{ random.{op}(shape=[64], seed={seed}) }}'
    for op in ("uniform", "normal"):
        a, b, c = (run(text.format(op=op, seed=s)) for s in (5, 5, 6))
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    # A negative seed is taken modulo 2**64.
    np.testing.assert_array_equal(run(text.format(op="uniform", seed=-1)),
                                  lookup("random.uniform").ref(shape=(64,), dtype="float32", low=0.0, high=1.0,
                                                               seed=(1 << 64) - 1))


def test_multinomial_frequencies_follow_the_weights():
    probs = np.array([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0, 0.0]], dtype="float32")
    out = run("def @main(%p: Tensor[(2, 4), float32]) { random.multinomial(%p, num_samples=20000, seed=11) }", probs)
    assert out.shape == (2, 20000) and out.dtype == "int32"
    freq = np.bincount(out[0], minlength=4) / out.shape[1]
    np.testing.assert_allclose(freq, probs[0] / probs[0].sum(), atol=0.015)
    assert freq[1] == 0                       # a zero weight is never drawn
    assert (out[1] == 2).all()
    one_d = run("def @main(%p: Tensor[(4), float32]) { random.multinomial(%p, num_samples=5) }", probs[0])
    assert one_d.shape == (5,) and set(one_d) <= {0, 2, 3}


@pytest.mark.parametrize("text, message", [
    ('def @main() { random.uniform(shape=[2], dtype="int32") }', "floating-point"),
    ('def @main() { random.normal(shape=[-1]) }', "negative"),
    ("def @main(%p: Tensor[(2, 3, 4), float32]) { random.multinomial(%p) }", "1-D or 2-D"),
    ("def @main(%p: Tensor[(4), int32]) { random.multinomial(%p) }", "floating-point"),
    ("def @main(%p: Tensor[(4), float32]) { random.multinomial(%p, num_samples=0) }", "num_samples"),
])
def test_type_errors(text, message):
    with pytest.raises(DiagnosticError, match=message):
        infer_types(parse(text))


def test_print_parse_round_trip_keeps_non_default_attributes():
    mod = infer_types(parse('def @main() { random.normal(shape=[3], dtype="float64", scale=2f, seed=4) }'))
    text = to_text(mod)
    assert "seed=4" in text and "scale=2f" in text and "mean" not in text
    np.testing.assert_array_equal(interpret(infer_types(parse(text))), interpret(mod))


def two_draws_of_each():
    """Two identical uniform calls and two identical multinomial calls of a constant."""
    weights = Constant(np.array([1.0, 2.0, 3.0], dtype="float32"))
    draws = [make_call("random.uniform", shape=(4,), seed=1) for _ in range(2)]
    draws += [make_call("random.multinomial", weights, num_samples=4) for _ in range(2)]
    return infer_types(IRModule.from_expr(Tuple(draws)))


@pytest.mark.parametrize("pass_name", ["fold-constant", "cse", "fuse-ops"])
def test_folding_merging_and_fusion_keep_every_stateful_call(pass_name):
    mod = two_draws_of_each()
    out = get_pass(pass_name)()(mod)
    assert len(random_calls(out)) == 4
    assert not any(isinstance(n, Constant) and n.data.dtype == "int32" for n in post_order(out["main"].body))
    np.testing.assert_array_equal(interpret(out)[1], interpret(mod)[1])
