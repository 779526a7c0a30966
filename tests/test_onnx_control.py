"""ONNX control flow (frontend/onnx/control.py): If as Relay's `if`, Scan and Loop unrolled;
each checked against onnxruntime, and the Relay text printed and parsed back."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend.onnx import OnnxImportError, from_onnx  # noqa: E402
from irtool.ir.structural import structural_equal  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset=13, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _compare(model, feeds: dict, rtol=1e-6):
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    mod, _ = from_onnx(model)
    assert structural_equal(parse(to_text(mod)), mod)  # the text round-trips
    got = irtool.interpret(mod, list(feeds.values()))
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol)
    return mod


def _branch(name, node):
    return helper.make_graph([node], name, [], [helper.make_tensor_value_info(node.output[0], F, None)])


def test_if_on_a_runtime_condition_is_a_relay_if():
    then_g = _branch("then", helper.make_node("Add", ["x", "y"], ["t"]))
    else_g = _branch("else", helper.make_node("Mul", ["x", "y"], ["e"]))
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)]
    model = _model(nodes, [helper.make_tensor_value_info(n, F, [3]) for n in ("x", "y")],
                   [helper.make_tensor_value_info("out", F, [3])], inits=[numpy_helper.from_array(np.float32(0), "zero")])
    for sign in (1, -1):
        x = sign * np.array([1.0, 2.0, 3.0], np.float32)
        mod = _compare(model, {"x": x, "y": np.array([4.0, 5.0, 6.0], np.float32)})
    assert "if (" in to_text(mod)


def test_if_on_a_known_condition_takes_its_branch():
    then_g = _branch("then", helper.make_node("Neg", ["x"], ["t"]))
    else_g = _branch("else", helper.make_node("Abs", ["x"], ["e"]))
    cond = numpy_helper.from_array(np.array(False), "c")
    model = _model([helper.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)],
                   [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("out", F, [2])],
                   inits=[cond])
    mod = _compare(model, {"x": np.array([-1.5, 2.0], np.float32)})
    assert "if (" not in to_text(mod) and "abs" in to_text(mod)


def test_scan_states_and_outputs_both_directions():
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "x_t"], ["y_t"])],
        "body", [helper.make_tensor_value_info("acc_in", F, [2]), helper.make_tensor_value_info("x_t", F, [2])],
        [helper.make_tensor_value_info("acc_out", F, [2]), helper.make_tensor_value_info("y_t", F, [2])])
    node = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1,
                            scan_input_directions=[1], scan_output_directions=[1], scan_output_axes=[1])
    model = _model([node], [helper.make_tensor_value_info("init", F, [2]), helper.make_tensor_value_info("xs", F, [4, 2])],
                   [helper.make_tensor_value_info("final", F, [2]), helper.make_tensor_value_info("ys", F, [2, 4])])
    _compare(model, {"init": np.array([1.0, -1.0], np.float32),
                     "xs": np.arange(8, dtype=np.float32).reshape(4, 2)})


def test_loop_with_a_trip_count_and_scan_output():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Add", ["v_in", "i_f"], ["v_out"]),
         helper.make_node("Mul", ["v_out", "two"], ["scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])],
        initializer=[numpy_helper.from_array(np.float32(2), "two")])
    inits = [numpy_helper.from_array(np.array(5, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond")]
    node = helper.make_node("Loop", ["M", "cond", "v0"], ["v_final", "scans"], body=body)
    model = _model([node], [helper.make_tensor_value_info("v0", F, [2])],
                   [helper.make_tensor_value_info("v_final", F, [2]), helper.make_tensor_value_info("scans", F, [5, 2])],
                   inits=inits)
    _compare(model, {"v0": np.array([0.5, 1.0], np.float32)})


def test_loop_stopping_on_a_runtime_value_is_a_diagnostic():
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["v_in"], ["s"], keepdims=0), helper.make_node("Less", ["s", "ten"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", F, [2])],
        initializer=[numpy_helper.from_array(np.float32(10), "ten")])
    model = _model([helper.make_node("Loop", ["", "", "v0"], ["v"], body=body)],
                   [helper.make_tensor_value_info("v0", F, [2])], [helper.make_tensor_value_info("v", F, [2])])
    with pytest.raises(OnnxImportError, match="condition must be known at import time"):
        from_onnx(model)
