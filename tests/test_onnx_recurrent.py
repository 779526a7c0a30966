"""ONNX RNN, GRU and LSTM (irtool/frontend/onnx/recurrent.py), checked against onnxruntime
(and against onnx's reference evaluator for `layout=1`, which onnxruntime rejects), plus
small models exported from torch (tests/data/onnx/export_torch_rnn.py)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from irtool import interpret  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.frontend.onnx import OnnxImportError  # noqa: E402
from irtool.ir.expr import Call  # noqa: E402
from irtool.ir.visitor import post_order  # noqa: E402

DATA = Path(__file__).parent / "data" / "onnx"
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _model(op, rng, *, steps=5, batch=3, features=4, hidden=6, directions=1, attrs=None, bias=True,
           initial=False, peepholes=False, lengths=None, layout=0, opset=14):
    """One `op` node; W/R/B/P are initializers, X, sequence_lens and initial states inputs."""
    gates = GATES[op]
    x = rng.standard_normal((batch, steps, features) if layout else (steps, batch, features)).astype("float32")
    inits = [numpy_helper.from_array((rng.standard_normal((directions, gates * hidden, n)) * 0.5).astype("float32"),
                                     name) for name, n in (("W", features), ("R", hidden))]
    names, feeds = ["X", "W", "R"], {"X": x}
    inputs = [helper.make_tensor_value_info("X", 1, x.shape)]

    def optional(name, array, as_input):
        if array is None:
            names.append("")
        elif as_input:
            names.append(name)
            feeds[name] = array
            inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
        else:
            names.append(name)
            inits.append(numpy_helper.from_array(array, name))

    state = (batch, directions, hidden) if layout else (directions, batch, hidden)
    optional("B", rng.standard_normal((directions, 2 * gates * hidden)).astype("float32") if bias else None, False)
    optional("sequence_lens", lengths, True)
    optional("initial_h", rng.standard_normal(state).astype("float32") if initial else None, True)
    if op == "LSTM":
        optional("initial_c", rng.standard_normal(state).astype("float32") if initial else None, True)
        optional("P", rng.standard_normal((directions, 3 * hidden)).astype("float32") if peepholes else None, False)
    while names[-1] == "":
        names.pop()
    outputs = [helper.make_tensor_value_info(f"y{i}", 1, None) for i in range(3 if op == "LSTM" else 2)]
    node_attrs = {"hidden_size": hidden, "direction": "bidirectional" if directions == 2 else "forward",
                  **({"layout": 1} if layout else {}), **(attrs or {})}
    node = helper.make_node(op, names, [o.name for o in outputs], **node_attrs)
    model = helper.make_model(helper.make_graph([node], "g", inputs, outputs, initializer=inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feeds


def _expected(model, feeds):
    if any(a.name == "layout" and a.i == 1 for a in model.graph.node[0].attribute):
        from onnx.reference import ReferenceEvaluator  # onnxruntime rejects batch-first RNNs

        return ReferenceEvaluator(model).run(None, feeds)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


CASES = {  # name -> keyword arguments of _model
    "defaults": {},
    "bidirectional_initial_states": {"directions": 2, "initial": True},
    "reverse": {"attrs": {"direction": "reverse"}, "initial": True},
    "no_bias_clip": {"bias": False, "attrs": {"clip": 0.5}},
    "lengths_bidirectional": {"directions": 2, "initial": True, "lengths": np.array([5, 2, 3], "int32")},
    "lengths_zero_and_full": {"lengths": np.array([1, 5, 0], "int32")},
    "lengths_all_full": {"lengths": np.array([5, 5, 5], "int32")},
    "batch_first": {"layout": 1, "initial": True},
    "one_step_one_row": {"steps": 1, "batch": 1},
    "opset7": {"opset": 7},
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("op", GATES)
def test_recurrent_matches_onnx(op, case):
    # every variant of every recurrent op: Y, Y_h (and Y_c) equal the reference's
    kwargs = CASES[case]
    if kwargs.get("layout") and kwargs.get("opset", 14) < 14:
        pytest.skip("layout is an opset-14 attribute")
    model, feeds = _model(op, np.random.default_rng(zlib.crc32(f"{op}/{case}".encode())), **kwargs)
    want = _expected(model, feeds)
    mod, _ = from_onnx(model)
    got = interpret(mod, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"linear_before_reset": 1}, {"linear_before_reset": 1, "direction": "bidirectional"},
                                   {"linear_before_reset": 0, "clip": 1.0}])
def test_gru_linear_before_reset(attrs):
    # both GRU formulations of the new gate, as ONNX defines them
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    model, feeds = _model("GRU", np.random.default_rng(1), directions=directions, attrs=attrs)
    for g, w in zip(interpret(from_onnx(model)[0], feeds), _expected(model, feeds), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", GATES)
def test_activations_with_alpha_beta(op):
    # `activations` with their `activation_alpha`/`beta` consumed in order, as TVM does
    acts = {"RNN": ["LeakyRelu"], "GRU": ["HardSigmoid", "Elu"], "LSTM": ["HardSigmoid", "Tanh", "LeakyRelu"]}[op]
    attrs = {"activations": acts, "activation_alpha": [0.3, 0.1], "activation_beta": [0.4]}
    model, feeds = _model(op, np.random.default_rng(2), attrs=attrs)
    for g, w in zip(interpret(from_onnx(model)[0], feeds), _expected(model, feeds), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


def test_lstm_peepholes():
    # the peephole weights P (ONNX order i-o-f) enter the input, forget and output gates
    model, feeds = _model("LSTM", np.random.default_rng(3), directions=2, initial=True, peepholes=True)
    for g, w in zip(interpret(from_onnx(model)[0], feeds), _expected(model, feeds), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


def test_full_lengths_add_no_mask():
    # constant lengths equal to the sequence need no masking: no cast/less ops are built
    model, feeds = _model("GRU", np.random.default_rng(4), lengths=np.array([5, 5, 5], "int32"))
    model.graph.initializer.append(numpy_helper.from_array(feeds.pop("sequence_lens"), "sequence_lens"))
    del model.graph.input[1]
    ops = {n.op.name for n in post_order(from_onnx(model)[0]["main"].body) if isinstance(n, Call)}
    assert "cast" not in ops and "less" not in ops
    assert "nn.dense" in ops


@pytest.mark.parametrize("attrs,message", [
    ({"direction": "sideways"}, "direction `sideways`"),
    ({"activations": ["Tanh", "Tanh"]}, r"must name 1 \* num_directions"),
    ({"activations": ["Mystery"]}, "activation `Mystery` is not supported"),
])
def test_bad_attributes_are_diagnostics(attrs, message):
    model, _ = _model("RNN", np.random.default_rng(5), attrs=attrs)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model)


def test_dynamic_sequence_length_is_a_diagnostic():
    # the network is unrolled over the steps, so their count must be known
    model, _ = _model("LSTM", np.random.default_rng(6))
    with pytest.raises(OnnxImportError, match="sequence length must be static"):
        from_onnx(model, shape={"X": (-1, 3, 4)})


@pytest.mark.parametrize("name", ["torch_lstm", "torch_gru"])
def test_torch_exported_models(name):
    # two-layer bidirectional batch-first LSTM + Linear; GRU with h0 as an input + Linear
    model = onnx.load(DATA / f"{name}.onnx")
    rng = np.random.default_rng(7)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype("float32")
             for i in model.graph.input}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = interpret(from_onnx(model)[0], feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)
