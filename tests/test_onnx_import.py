"""from_onnx and irtool-import on bad or unusual input: one clear error, exit 1, no
traceback; shapes from the model or `--shape`; several outputs; atomic `-o`;
initializers as parameters."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import irtool  # noqa: E402
from irtool.cli.import_onnx import run  # noqa: E402
from irtool.frontend.onnx import OnnxImportError, from_onnx, load_model, supported_ops  # noqa: E402
from irtool.text import parse  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def relu_model(shape=(2, 3)):
    return _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape)], [_vi("y", shape)])


def _cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _one_error(code: int, err: str, *needles: str) -> None:
    assert code == 1
    assert "Traceback" not in err and "internal error" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def _save(model, path) -> str:
    onnx.save(model, str(path))
    return str(path)


# ----------------------------------------------------------------------------- unreadable files


def test_truncated_file(tmp_path) -> None:
    data = relu_model().SerializeToString()
    path = tmp_path / "t.onnx"
    path.write_bytes(data[: len(data) // 2])
    code, out, err = _cli([path])
    _one_error(code, err, str(path))
    assert out == ""
    with pytest.raises(OnnxImportError):
        load_model(str(path))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_bytes(tmp_path, seed) -> None:
    path = tmp_path / "r.onnx"
    path.write_bytes(np.random.default_rng(seed).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    code, out, err = _cli([path])
    _one_error(code, err, str(path), "ONNX")


def test_empty_and_missing_file(tmp_path) -> None:
    empty = tmp_path / "e.onnx"
    empty.write_bytes(b"")
    _one_error(*_cli([empty])[::2], "e.onnx")
    _one_error(*_cli([tmp_path / "nope.onnx"])[::2], "nope.onnx")


def test_bad_file_subprocess_has_no_traceback(tmp_path) -> None:
    """The installed command: exit status 1 and a one-line message."""
    path = tmp_path / "t.onnx"
    path.write_bytes(relu_model().SerializeToString()[:7])
    exe = os.path.join(os.path.dirname(sys.executable), "irtool-import")
    r = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ----------------------------------------------------------------------------- unsupported ops


def test_unsupported_ops_listed_in_one_message(tmp_path) -> None:
    odd = ["TfIdfVectorizer", "StringNormalizer"]
    assert not set(odd) & set(supported_ops())
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("StringNormalizer", ["a"], ["b"]),
             helper.make_node("TfIdfVectorizer", ["b"], ["c"]),
             helper.make_node("StringNormalizer", ["c"], ["d"]),
             helper.make_node("Frobnicate", ["d"], ["y"], domain="com.example")]
    m = _model(nodes, [_vi("x", (2,))], [_vi("y", (2,))])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(OnnxImportError) as info:
        from_onnx(m)
    message = str(info.value)
    for op in ["StringNormalizer", "TfIdfVectorizer", "Frobnicate"]:
        assert op in message
    assert message.count("StringNormalizer") == 1
    _one_error(*_cli([_save(m, tmp_path / "u.onnx")])[::2], "StringNormalizer", "TfIdfVectorizer", "Frobnicate")


# ----------------------------------------------------------------------------- malformed graphs


def _attr(node, name, **fields):
    """`node` with an attribute set field by field (its `type` may disagree, or be absent)."""
    a = node.attribute.add()
    a.name = name
    for key, value in fields.items():
        setattr(a, key, value)
    return node


def _bad_tensor(name, dims):
    return TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims, float_data=[1.0])


X23 = [_vi("x", (2, 3))]
MALFORMED = {
    "attribute-float-for-ints": (_model([helper.make_node("Transpose", ["x"], ["y"], perm=1.5)], X23, [_vi("y", None)]),
                                 "Transpose node computing `y`: attribute `perm` must be of type INTS, got FLOAT"),
    "attribute-string-for-int": (_model([helper.make_node("Gemm", ["x", "x"], ["y"], transB="yes")], X23,
                                        [_vi("y", None)]), "attribute `transB` must be of type INT, got STRING"),
    "attribute-ints-for-int": (_model([helper.make_node("Concat", ["x", "x"], ["y"], axis=[0, 1])], X23,
                                      [_vi("y", None)]), "attribute `axis` must be of type INT, got INTS"),
    "attribute-of-no-type": (_model([_attr(helper.make_node("Softmax", ["x"], ["y"]), "axis", i=1)], X23,
                                    [_vi("y", None)]), "attribute `axis` must be of type INT, got UNDEFINED"),
    "required-attribute-missing": (_model([helper.make_node("If", ["c"], ["y"])], [_vi("c", (), TensorProto.BOOL)],
                                          [_vi("y", None)]), "If node computing `y`: attribute `else_branch` is required"),
    "input-never-produced": (_model([helper.make_node("Add", ["x", "nope"], ["y"])], X23, [_vi("y", None)]),
                             "input `nope` is not produced"),
    "required-input-empty": (_model([helper.make_node("Gemm", ["x", ""], ["y"])], X23, [_vi("y", None)]),
                             "Gemm node computing `y`: input 1 (`B`) is required"),
    "output-defined-twice": (_model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
                                    X23, [_vi("y", None)]), "Neg node computing `y`: output `y` is already defined"),
    "named-node": (_model([helper.make_node("Softmax", ["x"], ["y"], name="/head/Softmax", axis="one")], X23,
                          [_vi("y", None)]), "node `/head/Softmax` (Softmax): attribute `axis`"),
    "initializer-data-and-dims-disagree": (_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", (3,))],
                                                  [_vi("y", None)], inits=[_bad_tensor("w", [3])]),
                                           "initializer `w` cannot be read"),
    "constant-data-and-dims-disagree": (_model([helper.make_node("Constant", [], ["y"], value=_bad_tensor("v", [4]))],
                                               [], [_vi("y", None)]),
                                        "Constant node computing `y`: attribute `value` cannot be read"),
    "string-initializer": (_model([helper.make_node("Identity", ["w"], ["y"])], [], [_vi("y", None)],
                                  inits=[helper.make_tensor("w", TensorProto.STRING, [1], [b"a"])]),
                           "initializer `w` has an element type irtool does not support (ONNX type 8)"),
    "one-hot-values-of-three": (_model([helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
                                       [_vi("i", (2,), TensorProto.INT64)], [_vi("y", None)],
                                       inits=[helper.make_tensor("d", TensorProto.INT64, [1], [3]),
                                              helper.make_tensor("v", TensorProto.FLOAT, [3], [0, 1, 2])]),
                                "OneHot's values must be a tensor of 2 elements"),
    # ops onnx has no schema of: the inputs and attributes their converters declare
    "contrib-input-missing": (_model([helper.make_node("QAttention", ["x"], ["y"], domain="com.microsoft", num_heads=1)],
                                     [_vi("x", (1, 2, 3))], [_vi("y", None)]),
                              "QAttention node computing `y`: input 1 (`weight`) is required"),
    "contrib-attribute-missing": (_model([helper.make_node("Attention", ["x", "x"], ["y"], domain="com.microsoft")],
                                         [_vi("x", (1, 2, 3))], [_vi("y", None)]),
                                  "attribute `num_heads` is required"),
    "caffe2-input-missing": (_model([helper.make_node("FC", ["x"], ["y"])], [_vi("x", (2, 3))], [_vi("y", None)],
                                    opset=1), "FC node computing `y`: input 1 (`W`) is required"),
    # without max_output_boxes_per_class the result is empty, but the operands are still checked
    "nms-boxes-of-five": (_model([helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])],
                                 [_vi("b", (1, 3, 5)), _vi("s", (1, 1, 3))], [_vi("y", None)]),
                          "needs boxes of shape (B, N, 4), got (1, 3, 5)"),
    "nms-box-counts-differ": (_model([helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])],
                                     [_vi("b", (1, 3, 4)), _vi("s", (1, 1, 2))], [_vi("y", None)]),
                              "the boxes' box count 3 differs from the scores' 2"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_graph_is_a_located_diagnostic(case, tmp_path) -> None:
    """A graph onnx's checker rejects: one error naming the node (by name, else by what it
    computes) and the fault, exit 1, nothing written."""
    model, message = MALFORMED[case]
    out = tmp_path / "m.ir"
    code, _, err = _cli([_save(model, tmp_path / "m.onnx"), "-o", out])
    _one_error(code, err, "m.onnx: error:", message)
    assert not out.exists()


# ----------------------------------------------------------------------------- ops imported as ONNX functions


def _reference(model, feeds: dict) -> list:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def test_function_op_is_expanded() -> None:
    """GroupNormalization has no converter; its (context-dependent) ONNX function body is imported."""
    assert "GroupNormalization" not in supported_ops()
    x = np.random.default_rng(0).standard_normal((2, 4, 3, 3)).astype("float32")
    scale, bias = np.array([1.0, 2.0], "float32"), np.array([0.5, -0.5], "float32")
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2, epsilon=1e-3)
    m = _model([node], [_vi("x", x.shape), _vi("scale", (2,)), _vi("bias", (2,))], [_vi("y", x.shape)], opset=18)
    mod, _ = from_onnx(m)
    ops = {c.op.name for c in _calls(mod)}
    assert "mean" in ops and "GroupNormalization" not in str(mod)
    got = irtool.interpret(mod, [x, scale, bias])
    np.testing.assert_allclose(got, _reference(m, {"x": x, "scale": scale, "bias": bias})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("heads, kv_heads, mod", [(2, 2, None), (4, 2, "score"), (2, 1, "prob")])
def test_preview_flex_attention_is_its_function_body(heads, kv_heads, mod) -> None:
    """ai.onnx.preview's FlexAttention has a (context-dependent) function body, its score_mod
    and prob_mod subgraphs inlined; grouped K/V heads too. onnxruntime has no kernel for it:
    onnx's reference evaluator checks it."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, heads, 3, 4)).astype("float32")
    k, v = (rng.standard_normal((1, kv_heads, 5, 4)).astype("float32") for _ in range(2))
    attrs = {}
    if mod == "score":  # a soft cap: 2 tanh(s / 2)
        two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
        attrs["score_mod"] = helper.make_graph(
            [helper.make_node("Div", ["s", "two"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Mul", ["t", "two"], ["o"])], "score", [_vi("s", None)], [_vi("o", None)],
            initializer=[two])
    elif mod == "prob":
        attrs["prob_mod"] = helper.make_graph([helper.make_node("Mul", ["p", "p"], ["o"])], "prob",
                                              [_vi("p", None)], [_vi("o", None)])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", **attrs)
    m = _model([node], [_vi("q", q.shape), _vi("k", k.shape), _vi("v", v.shape)], [_vi("y", None)], opset=26)
    m.opset_import.append(helper.make_opsetid("ai.onnx.preview", 1))
    feeds = {"q": q, "k": k, "v": v}
    mod_, _ = from_onnx(m)
    np.testing.assert_allclose(irtool.interpret(mod_, feeds), _reference(m, feeds)[0], rtol=1e-5, atol=1e-6)


def test_function_op_attributes_and_names_stay_apart() -> None:
    """Two expansions of one function in a graph get distinct internal names; a referenced
    attribute takes each node's own value (num_groups 2, then 4), a missing one the schema's
    default (epsilon on the second node)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 2, 2)).astype("float32")
    s2, b2 = np.array([1.0, 3.0], "float32"), np.array([0.0, 1.0], "float32")
    s4, b4 = np.arange(1, 5, dtype="float32"), np.zeros(4, "float32")
    nodes = [helper.make_node("GroupNormalization", ["x", "s2", "b2"], ["a"], num_groups=2, epsilon=0.5),
             helper.make_node("GroupNormalization", ["a", "s4", "b4"], ["y"], num_groups=4)]
    inputs = [_vi("x", x.shape), _vi("s2", (2,)), _vi("b2", (2,)), _vi("s4", (4,)), _vi("b4", (4,))]
    m = _model(nodes, inputs, [_vi("y", x.shape)], opset=18)
    feeds = {"x": x, "s2": s2, "b2": b2, "s4": s4, "b4": b4}
    got = irtool.interpret(from_onnx(m)[0], list(feeds.values()))
    np.testing.assert_allclose(got, _reference(m, feeds)[0], rtol=1e-5, atol=1e-5)


def test_function_body_with_unsupported_ops_is_one_error(monkeypatch) -> None:
    """An op whose function body needs an op irtool lacks names that op. Every op the
    default domain's function bodies use has a converter now, so one is taken away."""
    from irtool.frontend.onnx import converters

    monkeypatch.delitem(converters(), "RandomUniformLike")
    node = helper.make_node("Bernoulli", ["x"], ["y"])  # its body draws with RandomUniformLike
    m = _model([node], [_vi("x", (2,))], [_vi("y", (2,))], opset=22)
    with pytest.raises(OnnxImportError, match="RandomUniformLike"):
        from_onnx(m)


def test_bernoulli_imports_as_its_function_body() -> None:
    """onnx's body is Cast(Greater(RandomUniformLike(x), x)): 1 with probability 1 - x, as
    irtool imports it and onnxruntime runs it (mean 0.10 for x = 0.9 at opset 15); onnx's
    reference evaluator and its backend test data draw 1 with probability x."""
    node = helper.make_node("Bernoulli", ["x"], ["y"], seed=3.0)
    m = _model([node], [_vi("x", (1000,))], [_vi("y", (1000,))], opset=22)
    mod, _ = from_onnx(m)
    p = np.linspace(0, 1, 1000, dtype="float32")
    y = irtool.interpret(mod, {"x": p})
    assert y.dtype == "float32" and set(np.unique(y)) <= {0.0, 1.0}
    assert y[p == 0].all() and y[p == 1].sum() == 0
    assert abs(y[:500].mean() - (1 - p[:500].mean())) < 0.07 and abs(y.mean() - 0.5) < 0.05


def _calls(mod):
    from irtool.ir.expr import Call
    from irtool.ir.visitor import post_order

    return [e for e in post_order(mod.functions["main"].body) if isinstance(e, Call)]


# ----------------------------------------------------------------------------- input shapes


def test_missing_input_shape(tmp_path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)  # no shape at all
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [_vi("y", None)])
    with pytest.raises(OnnxImportError, match="`x` has no shape"):
        from_onnx(m)
    path = _save(m, tmp_path / "m.onnx")
    _one_error(*_cli([path])[::2], "`x`", "--shape")
    code, out, err = _cli([path, "--shape", "x=2,5"])
    assert code == 0, err
    mod = parse(out)
    x = np.arange(-5, 5, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(irtool.interpret(mod, [x]), np.maximum(x, 0))


def test_unsupported_input_element_type(tmp_path) -> None:
    # regression: a float8 graph input was silently typed float32
    m = _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", (2,), TensorProto.FLOAT8E4M3FN)],
               [_vi("y", (2,), TensorProto.FLOAT8E4M3FN)])
    with pytest.raises(OnnxImportError, match="element type irtool does not support"):
        from_onnx(m)
    _one_error(*_cli([_save(m, tmp_path / "m.onnx")])[::2], "`x`")


def test_unknown_dimension_warns_and_shape_overrides(tmp_path) -> None:
    m = relu_model(("N", 3))
    with pytest.warns(UserWarning, match="unknown dimension `N`"):
        mod, _ = from_onnx(m)
    assert "?" in str(mod["main"].params[0].type_annotation) or "?" in irtool.text.to_text(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod, _ = from_onnx(m, shape={"x": (4, 3)})
    assert tuple(mod["main"].params[0].type_annotation.shape) == (4, 3)

    path = _save(m, tmp_path / "n.onnx")
    code, out, err = _cli([path])
    assert code == 0 and "warning" in err and "`N`" in err
    assert "?" in out
    code, out, err = _cli([path, "--shape", "x=4,3"])
    assert code == 0 and err == ""
    assert "?" not in out and "4, 3" in out
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(irtool.interpret(parse(out), [x]), np.maximum(x, 0))


def test_bad_shape_option(tmp_path) -> None:
    path = _save(relu_model(), tmp_path / "m.onnx")
    with pytest.raises(SystemExit) as info:
        _cli([path, "--shape", "x=a,b"])
    assert info.value.code == 2


def test_shape_option_naming_no_input_is_an_error(tmp_path) -> None:
    """Regression: a misspelt --shape name was ignored, the input keeping its `?` dimension."""
    path = _save(relu_model(("N", 3)), tmp_path / "m.onnx")
    _one_error(*_cli([path, "--shape", "data=4,3"])[::2], "--shape names `data`", "inputs: x")


# ----------------------------------------------------------------------------- outputs


def test_several_outputs_become_a_tuple(tmp_path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])]
    m = _model(nodes, [_vi("x", (2, 3))], [_vi("a", (2, 3)), _vi("b", (2, 3))])
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    mod, _ = from_onnx(m)
    a, b = irtool.interpret(mod, [x])
    np.testing.assert_array_equal(a, np.maximum(x, 0))
    np.testing.assert_array_equal(b, -x)
    code, out, err = _cli([_save(m, tmp_path / "two.onnx")])
    assert code == 0, err
    a, b = irtool.interpret(parse(out), [x])
    np.testing.assert_array_equal(b, -x)


# ----------------------------------------------------------------------------- -o


def test_output_file_is_atomic(tmp_path) -> None:
    out = tmp_path / "out.ir"
    out.write_text("precious\n")
    bad = _model([helper.make_node("TfIdfVectorizer", ["x"], ["y"])], [_vi("x", (2,))], [_vi("y", (2,))])
    code, stdout, err = _cli([_save(bad, tmp_path / "bad.onnx"), "-o", out])
    _one_error(code, err, "TfIdfVectorizer")
    assert out.read_text() == "precious\n" and stdout == ""
    trunc = tmp_path / "trunc.onnx"
    trunc.write_bytes(relu_model().SerializeToString()[:10])
    _one_error(*_cli([trunc, "-o", out])[::2])
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "out.ir", "trunc.onnx"]  # no temp files

    code, stdout, err = _cli([_save(relu_model(), tmp_path / "good.onnx"), "-o", out])
    assert code == 0 and stdout == "" and err == ""
    assert "nn.relu" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "good.onnx", "out.ir", "trunc.onnx"]


def test_output_into_missing_directory(tmp_path) -> None:
    code, out, err = _cli([_save(relu_model(), tmp_path / "m.onnx"), "-o", tmp_path / "no" / "such" / "o.ir"])
    assert code == 1 and "Traceback" not in err and "cannot write" in err


# ----------------------------------------------------------------------------- parameters


def _affine_model():
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    b = np.array([0.5, -1.0], dtype=np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    m = _model(nodes, [_vi("x", (4, 3))], [_vi("y", (4, 2))],
               inits=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return m, w, b


def test_initializers_as_params(tmp_path) -> None:
    m, w, b = _affine_model()
    missing = {"MatMul", "Add"} - set(supported_ops())
    if missing:
        pytest.skip(f"not supported yet: {', '.join(sorted(missing))}")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    expected = x @ w + b

    mod, params = from_onnx(m)
    assert params == {} and [p.name_hint for p in mod["main"].params] == ["x"]
    np.testing.assert_allclose(irtool.interpret(mod, [x]), expected, rtol=1e-6)

    mod, params = from_onnx(m, freeze_params=False)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "b"]
    assert sorted(params) == ["b", "w"]
    np.testing.assert_array_equal(params["w"], w)
    assert params["w"].dtype == np.float32 and params["b"].shape == (2,)
    np.testing.assert_allclose(irtool.interpret(mod, {"x": x, **params}), expected, rtol=1e-6)
    other = {"w": -w, "b": b}  # parameters really are inputs now
    np.testing.assert_allclose(irtool.interpret(mod, {"x": x, **other}), x @ -w + b, rtol=1e-6)

    code, out, err = _cli([_save(m, tmp_path / "a.onnx"), "--keep-params"])
    assert code == 0, err
    parsed = parse(out)
    assert [p.name_hint for p in parsed["main"].params] == ["x", "w", "b"]
    np.testing.assert_allclose(irtool.interpret(parsed, {"x": x, **params}), expected, rtol=1e-6)


def test_initializer_also_listed_as_graph_input() -> None:
    """Older exporters (IR < 4) list initializers among the graph inputs too."""
    m, w, b = _affine_model()
    if {"MatMul", "Add"} - set(supported_ops()):
        pytest.skip("MatMul/Add not supported yet")
    m.graph.input.extend([_vi("w", (3, 2)), _vi("b", (2,))])
    mod, params = from_onnx(m)
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    mod, params = from_onnx(m, freeze_params=False)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "b"]
