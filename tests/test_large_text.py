"""Large inputs take the same road as small ones (issue 11 §1).

Every input is parsed by Lark's compiled engine (`lark_cython`) when it is installed;
once only inputs of 200,000 characters or more were, and it dropped the `#[metadata]` section of every imported model with
weights (its tokens are not `str`, so the section was not recognised), and turned syntax
errors into internal errors. These tests run a multi-MB imported model through
import -> opt -> run and compare both engines on the same texts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irtool
from irtool.diagnostics import DiagnosticError
from irtool.ir.structural import structural_equal
from irtool.text import relay_parser

onnx = pytest.importorskip("onnx")
lark_cython = pytest.importorskip("lark_cython")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

BIN = Path(sys.executable).parent


def _cnn_with_weights(channels: int = 128, blocks: int = 5) -> onnx.ModelProto:
    """Conv + Relu blocks whose weights print as several MB of metadata."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "data"
    cin = 3
    for i in range(blocks):
        w = (rng.standard_normal((channels, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32)
        b = rng.standard_normal(channels).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x, cin = f"r{i}", channels
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, 8, 8])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, Path, str]:
    """(model.onnx, model.ir written by irtool-import, its text)."""
    folder = tmp_path_factory.mktemp("large")
    model_path, text_path = folder / "model.onnx", folder / "model.ir"
    onnx.save(_cnn_with_weights(), model_path)
    subprocess.run([BIN / "irtool-import", model_path, "-o", text_path], check=True, timeout=300)
    return model_path, text_path, text_path.read_text()


def _engine(name: str):
    return {**os.environ, "IRTOOL_PARSER_ENGINE": name}


def test_imported_model_is_large_and_takes_the_compiled_engine(imported, monkeypatch):
    _, _, text = imported
    assert len(text) > 2_000_000 and "#[metadata]" in text
    monkeypatch.delenv("IRTOOL_PARSER_ENGINE", raising=False)
    parser = relay_parser._parser()
    assert parser.compiled_engine() is not None, "lark-cython is a dependency"
    assert parser.first_engine() is parser.compiled_engine()


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_opt_of_imported_model_is_byte_identical(imported, tmp_path, engine):
    """Regression: `irtool-opt m.ir -o out.ir` dropped the whole metadata section."""
    _, text_path, text = imported
    out = tmp_path / "out.ir"
    subprocess.run([BIN / "irtool-opt", text_path, "-o", out], check=True, timeout=300, env=_engine(engine))
    assert out.read_text() == text


def test_run_of_imported_model_matches_onnxruntime(imported, tmp_path):
    """Regression: `irtool-run m.ir` failed with `constant has no data`."""
    ort = pytest.importorskip("onnxruntime")
    model_path, text_path, _ = imported
    data = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "data.npy", data)
    out = tmp_path / "out.npy"
    subprocess.run([BIN / "irtool-run", text_path, "--input", f"data={tmp_path / 'data.npy'}", "-o", out],
                   check=True, timeout=300)
    expected = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).run(None, {"data": data})[0]
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-4, atol=1e-5)


def _parse_with(engine: str, text: str, monkeypatch):
    monkeypatch.setenv("IRTOOL_PARSER_ENGINE", engine)
    try:
        return irtool.parse(text, "big.ir"), None
    except DiagnosticError as err:
        return None, err.render() if hasattr(err, "render") else str(err)


def test_both_engines_build_the_same_module(imported, monkeypatch):
    _, _, text = imported
    compiled, _ = _parse_with("compiled", text, monkeypatch)
    python, _ = _parse_with("python", text, monkeypatch)
    reference, _ = _parse_with("reference", text, monkeypatch)  # no fused tokens
    assert structural_equal(compiled, python)
    assert structural_equal(compiled, reference)
    assert irtool.to_text(compiled) == text


@pytest.mark.parametrize("text", [
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1), float32]) { add(' + "," * 200_000 + " }",
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1), float32]) {\n' + "  // padding\n" * 20_000 + "  %x $ }",
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1), float32]) {\n' + "  %x;\n" * 50_000 + "  %y\n}",
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(1), float32]) {\n' + "  %x;\n" * 50_000,
], ids=["commas", "bad-char", "undefined", "eof"])
def test_large_malformed_input_gets_the_same_diagnostic(text, monkeypatch):
    """Regression: the compiled engine raised `internal error: AttributeError: ... callbacks`."""
    assert len(text) >= 200_000
    _, compiled = _parse_with("compiled", text, monkeypatch)
    _, python = _parse_with("python", text, monkeypatch)
    _, reference = _parse_with("reference", text, monkeypatch)
    assert compiled is not None and compiled == python == reference


def test_large_malformed_input_on_the_command_line(tmp_path):
    bad = tmp_path / "bad.ir"
    bad.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(1), float32]) {\n  add(' + "," * 200_000 + "\n}\n")
    out = tmp_path / "out.ir"
    out.write_text("keep me")
    proc = subprocess.run([BIN / "irtool-opt", bad, "-o", out], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{bad}:3:7: error: unexpected `,`" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_text() == "keep me"


def test_negative_onnx_dims_import_as_unknown():
    """Regression: an exporter's `-1` dim printed as `Tensor[(-1, 3, ?, ?), float32]`."""
    from irtool.frontend.onnx import from_onnx

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "h", None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3, "h", None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.warns(UserWarning, match="unknown dimension `-1`"):
        mod, _ = from_onnx(model)
    text = irtool.to_text(mod)
    assert "Tensor[(?, 3, ?, ?), float32]" in text
    assert structural_equal(irtool.parse(text), mod)
