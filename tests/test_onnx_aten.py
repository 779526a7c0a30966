"""PyTorch's ATen fallback op (irtool/frontend/onnx/aten.py) against NumPy formulations of
the ATen operators (onnxruntime's CPU build has no ATen kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import OnnxImportError, from_onnx

RNG = np.random.default_rng(17)
WEIGHT = RNG.standard_normal((10, 3)).astype("float32")
ELEM = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64}


def run(operator, inputs, inits=(), outputs=1, domain="org.pytorch.aten", **attrs):
    names = list(inputs) + [n for n, _ in inits]
    outs = ["y"] + [f"extra{i}" for i in range(1, outputs)]
    nodes = [helper.make_node("ATen", names, outs, domain=domain, operator=operator, **attrs)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, ELEM[str(a.dtype)], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    mod, _ = from_onnx(helper.make_model(graph, opset_imports=opsets, ir_version=8))
    results = [irtool.interpret(m, dict(inputs)) for m in (mod, irtool.parse(irtool.to_text(mod), "reparsed.ir"))]
    np.testing.assert_array_equal(results[0], results[1])
    return np.asarray(results[0])


@pytest.mark.parametrize("mode, reduce", [(0, np.sum), (1, np.mean), (2, np.max)])
def test_embedding_bag_with_constant_offsets(mode, reduce):
    indices = np.array([1, 2, 4, 5, 4, 3, 2, 9], "int64")
    offsets = np.array([0, 3, 3, 6], "int64")  # bags of 3, 0, 3 and 2 indices
    got = run("embedding_bag", {"w": WEIGHT, "i": indices}, inits=[("o", offsets)], mode=mode)
    expected = np.stack([reduce(WEIGHT[indices[b:e]], axis=0) if e > b else np.zeros(3, "float32")
                         for b, e in zip(offsets, [3, 3, 6, 8])])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_embedding_bag_with_run_time_offsets_takes_equal_bags():
    indices = np.array([1, 2, 4, 5, 4, 3], "int64")
    got = run("embedding_bag", {"w": WEIGHT, "i": indices, "o": np.array([0, 2, 4], "int64")}, mode=0)
    np.testing.assert_allclose(got, WEIGHT[indices].reshape(3, 2, 3).sum(axis=1), rtol=1e-6)


def test_embedding_bag_extra_outputs_are_a_diagnostic():
    with pytest.raises(OnnxImportError, match="only the first output"):
        run("embedding_bag", {"w": WEIGHT, "i": np.zeros(2, "int64"), "o": np.zeros(1, "int64")}, outputs=2)


@pytest.mark.parametrize("accumulate", [0, 1])
def test_index_put(accumulate):
    x = RNG.standard_normal((4, 5)).astype("float32")
    rows, cols = np.array([0, 2, 2], "int64"), np.array([1, 3, 3], "int64")
    values = np.array([10.0, 20.0, 30.0], "float32")
    got = run("index_put", {"x": x}, inits=[("r", rows), ("c", cols), ("v", values),
                                            ("a", np.array(accumulate, "int64"))])
    expected = x.copy()
    if accumulate:
        np.add.at(expected, (rows, cols), values)
    else:
        expected[rows, cols] = values  # the last write wins, as scatter_nd's update
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_size_arange_reshape_and_the_default_domain():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    assert run("size", {"x": x}, inits=[("d", np.array(-2, "int64"))]) == 3
    np.testing.assert_array_equal(run("arange", {}, inits=[("a", np.array(2, "int64")), ("b", np.array(9, "int64")),
                                                           ("s", np.array(3, "int64"))]), [2, 5, 8])
    got = run("reshape", {"x": x}, inits=[("s", np.array([4, -1], "int64"))], domain="")
    np.testing.assert_array_equal(got, x.reshape(4, -1))


def test_an_unknown_aten_operator_is_a_diagnostic():
    with pytest.raises(OnnxImportError, match="ATen operator 'lerp' is not supported"):
        run("lerp", {"x": np.zeros(2, "float32")})
