"""ONNX models end to end in native code: `from_onnx` -> `irtool.build` (relay-to-relax, the
zero pipeline, one native entry point) -> outputs equal onnxruntime's (rtol 1e-4).

The models are tests/test_onnx_e2e.py's (an MLP, conv+batchnorm+relu blocks with pooling, a
residual block, an attention block), plus a few small graphs for what those miss (integer
indices, reductions over several axes, broadcasting with 1-sized dims, a tuple of outputs).
Initializers are frozen as constants, and (second test) passed as inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from test_onnx_e2e import MODELS, Builder, _inputs, _reference  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend.onnx import from_onnx, supported_ops  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def norm_and_gather() -> onnx.ModelProto:
    """ReduceMean over two axes, Sub/Mul/Sqrt broadcasting with 1-sized dims, Gather of int64
    indices, two outputs."""
    b = Builder(5)
    mean = b.op("ReduceMean", "x", axes=[1, 2], keepdims=1)
    centred = b.op("Sub", "x", mean)
    var = b.op("ReduceMean", b.op("Mul", centred, centred), axes=[1, 2], keepdims=1)
    normed = b.op("Div", centred, b.op("Sqrt", b.op("Add", var, b.init("eps", np.array(1e-5, np.float32)))))
    y = b.op("Mul", normed, b.weight("g", 1, 1, 7, scale=1.0))
    z = b.op("Gather", y, b.init("idx", np.array([4, 0, 2], np.int64)), axis=1)
    return b.model("norm_and_gather", {"x": (3, 5, 7)}, {"y": (3, 5, 7), "z": (3, 3, 7)}, [y, z])


def elementwise_mix() -> onnx.ModelProto:
    """Tanh/Sigmoid/Exp/Abs/Neg/Max/Min/Clip/Where over broadcast shapes (odd sizes)."""
    b = Builder(6)
    t = b.op("Tanh", "x")
    s = b.op("Sigmoid", b.op("Mul", "x", b.weight("w", 1, 11, scale=1.0)))
    m = b.op("Max", t, s)
    e = b.op("Exp", b.op("Neg", b.op("Abs", m)))
    c = b.op("Clip", b.op("Sub", e, s), b.init("lo", np.array(-0.3, np.float32)), b.init("hi", np.array(0.4, np.float32)))
    y = b.op("Where", b.op("Greater", "x", c), c, b.op("Min", t, e))
    return b.model("elementwise_mix", {"x": (13, 11)}, {"y": (13, 11)}, [y])


ALL_MODELS = {**MODELS, "norm_and_gather": norm_and_gather, "elementwise_mix": elementwise_mix}


def _model(name: str):
    m = ALL_MODELS[name]()
    missing = sorted({n.op_type for n in m.graph.node} - set(supported_ops()))
    if missing:
        pytest.skip(f"{name}: not supported yet: {', '.join(missing)}")
    return m


def _check(actual, expected: list[np.ndarray]) -> None:
    actual = list(actual) if isinstance(actual, tuple) else [actual]
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_native_matches_onnxruntime(name):
    model = _model(name)
    inputs = _inputs(model)
    mod, _ = from_onnx(model)
    exe = irtool.build(mod)
    _check(exe.run(inputs), _reference(model, inputs))
    # the native code ran fused PrimFuncs: no Relax operator is left in what was compiled
    assert exe.main is not None and all(name == "main" or not hasattr(f, "ret_struct_info")
                                        for name, f in exe.mod.functions.items())


@pytest.mark.parametrize("name", ["mlp", "residual", "attention"])
def test_native_with_weights_as_inputs(name):
    model = _model(name)
    inputs = _inputs(model)
    mod, params = from_onnx(model, freeze_params=False)
    exe = irtool.build(mod)
    _check(exe.run({**inputs, **params}), _reference(model, inputs))
    # a second call with other inputs: nothing of the first call is left in the arena
    other = {k: v[::-1].copy() for k, v in inputs.items()}
    _check(exe.run({**other, **params}), _reference(model, other))
