"""The random-number converters (irtool/frontend/onnx/sampling.py): shapes and dtypes as
onnxruntime gives them, ranges and moments over many samples, determinism for a seed, the
documented seeds of seedless nodes, and that the importer's constant folding keeps the draws."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import OnnxImportError, from_onnx
from irtool.ir import Call, Constant
from irtool.ir.visitor import post_order

ort = pytest.importorskip("onnxruntime")


def model(nodes, inputs=(), inits=(), outputs=("y",), opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],  # typed by infer_shapes
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    # onnxruntime needs the outputs' element types, which onnx's shape inference fills in.
    return onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8))


def run_both(m, feeds=None):
    """irtool's outputs (also through the printed text, which must give the same values) and
    onnxruntime's."""
    mod, _ = from_onnx(m)
    ours = [irtool.interpret(x, dict(feeds or {})) for x in (mod, irtool.parse(irtool.to_text(mod), "reparsed.ir"))]
    for a, b in zip(*(x if isinstance(x, (tuple, list)) else [x] for x in ours), strict=True):
        np.testing.assert_array_equal(a, b)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = sess.run(None, dict(feeds or {}))
    return mod, ours[0], theirs


def random_calls(mod) -> list[str]:
    return [n.op.name for n in post_order(mod["main"].body)
            if isinstance(n, Call) and getattr(n.op, "name", "").startswith("random.")]


@pytest.mark.parametrize("dtype, np_dtype", [(TensorProto.FLOAT, "float32"), (TensorProto.DOUBLE, "float64")])
def test_random_uniform(dtype, np_dtype):
    node = helper.make_node("RandomUniform", [], ["y"], shape=[100, 200], low=-1.0, high=4.0, seed=3.0, dtype=dtype)
    _, ours, theirs = run_both(model([node]))
    assert ours.shape == theirs[0].shape == (100, 200) and ours.dtype == theirs[0].dtype == np_dtype
    assert ours.min() >= -1 and ours.max() <= 4
    assert abs(ours.mean() - 1.5) < 5 * np.sqrt(25 / 12 / ours.size)
    assert abs(ours.mean() - theirs[0].mean()) < 0.1


def test_random_normal_like_takes_shape_and_dtype_of_its_input():
    node = helper.make_node("RandomNormalLike", ["x"], ["y"], mean=2.0, scale=0.5, seed=1.0)
    x = np.zeros((300, 100), "float32")
    _, ours, theirs = run_both(model([node], inputs=[("x", x.shape)]), {"x": x})
    assert ours.shape == theirs[0].shape and ours.dtype == theirs[0].dtype == "float32"
    assert abs(ours.mean() - 2) < 0.02 and abs(ours.std() - 0.5) < 0.02
    assert abs(theirs[0].mean() - 2) < 0.02 and abs(theirs[0].std() - 0.5) < 0.02


def test_random_uniform_like_and_random_normal_dtypes():
    nodes = [helper.make_node("RandomUniformLike", ["x"], ["y"], dtype=TensorProto.DOUBLE, seed=0.0),
             helper.make_node("RandomNormal", [], ["z"], shape=[7], seed=0.0)]
    _, ours, theirs = run_both(model(nodes, inputs=[("x", (2, 3))], outputs=("y", "z")),
                               {"x": np.zeros((2, 3), "float32")})
    assert [(a.shape, a.dtype) for a in ours] == [(a.shape, a.dtype) for a in theirs]
    assert ((ours[0] >= 0) & (ours[0] <= 1)).all()


def test_seed_makes_values_reproducible_and_seedless_nodes_differ():
    def draw(**seed):
        return helper.make_node("RandomUniform", [], [f"y{len(seed)}{seed.get('seed', '')}"], shape=[16], **seed)
    m = model([draw(seed=5.0), draw()], outputs=("y15.0", "y0"))
    m2 = model([helper.make_node("RandomUniform", [], ["a"], shape=[16]),
                helper.make_node("RandomUniform", [], ["b"], shape=[16])], outputs=("a", "b"))
    first = [irtool.interpret(from_onnx(x)[0]) for x in (m, m, m2)]
    np.testing.assert_array_equal(first[0][0], first[1][0])   # same model, same values
    np.testing.assert_array_equal(first[0][1], first[1][1])
    a, b = first[2]
    assert not np.array_equal(a, b)                              # seedless nodes get seeds 0 and 1
    np.testing.assert_array_equal(a, first[0][1])                # the first seedless node has seed 0


def test_multinomial_samples_follow_the_softmax_of_the_log_probabilities():
    logits = np.log(np.array([[0.1, 0.0001, 0.6, 0.2999], [0.5, 0.5, 1e-9, 1e-9]], "float32"))
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=20000, seed=2.0, dtype=TensorProto.INT64)
    _, ours, theirs = run_both(model([node], inputs=[("x", logits.shape)]), {"x": logits})
    assert ours.shape == theirs[0].shape == (2, 20000) and ours.dtype == theirs[0].dtype == "int64"
    for row in range(2):
        expected = np.exp(logits[row]) / np.exp(logits[row]).sum()
        np.testing.assert_allclose(np.bincount(ours[row], minlength=4) / 20000, expected, atol=0.015)
        np.testing.assert_allclose(np.bincount(theirs[0][row], minlength=4) / 20000, expected, atol=0.015)


def test_importer_folding_keeps_draws_of_constants():
    """Multinomial of an initializer: the softmax folds to a constant at import, the draw stays a call."""
    logits = np.zeros((1, 3), "float32")
    nodes = [helper.make_node("Multinomial", ["w"], ["y"], sample_size=4, seed=1.0),
             helper.make_node("RandomUniformLike", ["w"], ["z"], seed=1.0)]
    mod, _ = from_onnx(model(nodes, inits=[("w", logits)], outputs=("y", "z")))
    assert sorted(random_calls(mod)) == ["random.multinomial", "random.uniform"]
    assert not any(isinstance(n, Constant) and n.data.dtype == "int32" for n in post_order(mod["main"].body))
    assert "nn.softmax" not in irtool.to_text(mod)


@pytest.mark.parametrize("node, message", [
    (helper.make_node("RandomUniform", [], ["y"], shape=[2], dtype=TensorProto.INT32), "floating-point"),
    (helper.make_node("Multinomial", ["x"], ["y"], dtype=TensorProto.FLOAT), "int32 or int64"),
    (helper.make_node("RandomNormal", [], ["y"]), "attribute `shape` is required"),  # by the schema
    (helper.make_node("Multinomial", ["x3"], ["y"]), "2-D input"),
])
def test_bad_random_nodes_are_diagnostics(node, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model([node], inputs=[("x", (1, 3)), ("x3", (1, 1, 3))]))
