"""ONNX sequence ops (irtool/frontend/onnx/sequence.py), imported as Relay tuples, against
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import OnnxImportError, from_onnx

RNG = np.random.default_rng(16)
X = RNG.standard_normal((5, 4)).astype("float32")


def _model(nodes, outputs, inits=(), inputs=(("x", X),)):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs],
        outputs, [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _seq_out(name):
    return helper.make_value_info(name, helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None)))


def _tensor_out(name, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, None)


def check(nodes, outputs, inits=()):
    model = _model(nodes, outputs, inits)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, {"x": X})
    mod, _ = from_onnx(model)
    for m in (mod, irtool.parse(irtool.to_text(mod), "reparsed.ir")):
        got = irtool.interpret(m, {"x": X})
        got = list(got) if len(outputs) > 1 else [got]
        for e, g in zip(expected, got, strict=True):
            if isinstance(e, list):
                assert len(g) == len(e)
                for ei, gi in zip(e, g, strict=True):
                    np.testing.assert_allclose(np.asarray(gi), ei, rtol=1e-6)
            else:
                g = np.asarray(g)
                assert g.shape == e.shape and g.dtype == e.dtype
                np.testing.assert_allclose(g, e, rtol=1e-6)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


@pytest.mark.parametrize("split, attrs", [(None, {}), (None, {"keepdims": 0, "axis": 1}),
                                          (np.array([2, 3], "int64"), {}), (np.array(2, "int64"), {}),
                                          (np.array(3, "int64"), {"axis": -1})])
def test_split_to_sequence(split, attrs):
    ins = ["x"] if split is None else ["x", "s"]
    check([node("SplitToSequence", ins, ["y"], **attrs)], [_seq_out("y")], inits={} if split is None else {"s": split})


def test_insert_erase_at_length_concat():
    nodes = [node("SplitToSequence", ["x", "two"], ["s"]),                 # pieces of 2, 2, 1 rows
             node("SequenceInsert", ["s", "x"], ["s1"]),                    # at the end
             node("SequenceInsert", ["s1", "x", "zero"], ["s2"]),           # at the front
             node("SequenceErase", ["s2", "minus2"], ["s3"]),               # the last piece of the split
             node("SequenceErase", ["s3"], ["s4"]),                         # the last element
             node("SequenceAt", ["s4", "one"], ["at"]),
             node("SequenceLength", ["s4"], ["n"]),
             node("ConcatFromSequence", ["s4"], ["cat"], axis=0),
             node("SequenceConstruct", ["x", "x", "x"], ["c"]),
             node("ConcatFromSequence", ["c"], ["stacked"], axis=-1, new_axis=1)]
    check(nodes, [_seq_out("s4"), _tensor_out("at"), _tensor_out("n", TensorProto.INT64), _tensor_out("cat"),
                  _tensor_out("stacked")],
          inits={"two": np.array(2, "int64"), "zero": np.array(0, "int64"), "minus2": np.array(-2, "int64"),
                 "one": np.array(1, "int64")})


def test_empty_sequence_then_insert():
    check([node("SequenceEmpty", [], ["e"]), node("SequenceInsert", ["e", "x"], ["s"]),
           node("SequenceAt", ["s", "zero"], ["y"])], [_tensor_out("y")], inits={"zero": np.array(0, "int64")})


def test_a_sequence_graph_input_is_a_diagnostic():
    graph = helper.make_graph([node("SequenceLength", ["s"], ["n"])], "g", [_seq_out("s")],
                              [_tensor_out("n", TensorProto.INT64)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(OnnxImportError, match="graph input `s` is of sequence type"):
        from_onnx(model)


def test_a_run_time_position_is_a_diagnostic():
    model = _model([node("SequenceConstruct", ["x", "x"], ["s"]), node("SequenceAt", ["s", "p"], ["y"])],
                   [_tensor_out("y")], inputs=(("x", X), ("p", np.zeros((), "float32"))))
    with pytest.raises(OnnxImportError, match="must be known at import time"):
        from_onnx(model)


def test_optionals():
    nodes = [node("Optional", ["x"], ["o"]), node("OptionalHasElement", ["o"], ["has"]),
             node("OptionalGetElement", ["o"], ["y"]),
             node("Optional", [], ["none"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None)),
             node("OptionalHasElement", ["none"], ["has_none"]),
             node("OptionalHasElement", [""], ["has_nothing"]),
             node("OptionalHasElement", ["x"], ["has_tensor"]),       # opset 18: a tensor is present
             node("OptionalGetElement", ["x"], ["x_itself"]),
             node("SequenceConstruct", ["x"], ["s"]), node("Optional", ["s"], ["os"]),
             node("OptionalGetElement", ["os"], ["s_back"])]
    outs = [_tensor_out("has", TensorProto.BOOL), _tensor_out("y"), _tensor_out("has_none", TensorProto.BOOL),
            _tensor_out("has_nothing", TensorProto.BOOL), _tensor_out("has_tensor", TensorProto.BOOL),
            _tensor_out("x_itself"), _seq_out("s_back")]
    model = helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                            X.shape)], outs),
                              opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})
    got = irtool.interpret(from_onnx(model)[0], {"x": X})
    assert [bool(got[i]) for i in (0, 2, 3, 4)] == [bool(expected[i]) for i in (0, 2, 3, 4)] == [True, False, False,
                                                                                               True]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[5], expected[5])
    assert len(got[6]) == len(expected[6]) == 1
    np.testing.assert_array_equal(got[6][0], expected[6][0])
