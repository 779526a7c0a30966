"""A 3-D CNN from ONNX through Relax: irtool-import, then irtool-opt -p
relay-to-relax,zero-pipeline (nn.conv3d, nn.conv3d_transpose, nn.max_pool3d, nn.avg_pool3d become
R.nn.conv3d, ... and are legalized and fused), run by the Relax interpreter and built to native
code (irtool.build: the default CPU schedule over 5-D buffers), each equal to onnxruntime. With
TVM (tvm-marked): TVM 0.27's zero pipeline on our relay-to-relax output prints what ours prints."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_zero_pipeline_onnx import _TVM_ZERO, _import, _opt  # noqa: E402

import irtool  # noqa: E402
from irtool.exec.relax import run_relax  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.ir import relax as rx  # noqa: E402
from irtool.ir import tir  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402
from irtool.transform import PassContext, get_pass  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def _cnn3d() -> onnx.ModelProto:
    """Conv(+bias, dilated) -> Relu -> MaxPool (padded, ceil_mode) -> grouped Conv (SAME_UPPER,
    strided) -> AveragePool (count_include_pad) -> AveragePool (excluding the padding) ->
    ConvTranspose (stride 2, grouped, output_padding) -> Sigmoid, over a batch of 2 NCDHW volumes."""
    rng = np.random.default_rng(11)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype("float32"), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 2, 1, 1, 2, 1], dilations=[1, 2, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 3, 2], strides=[2, 2, 2], pads=[1, 1, 0, 0, 1, 1],
                         ceil_mode=1),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], group=2, strides=[1, 2, 1], auto_pad="SAME_UPPER"),
        helper.make_node("AveragePool", ["c2"], ["p2"], kernel_shape=[2, 2, 2], pads=[1, 0, 1, 0, 1, 0],
                         count_include_pad=1),
        helper.make_node("AveragePool", ["p2"], ["p3"], kernel_shape=[3, 1, 2], pads=[1, 0, 1, 1, 0, 0]),
        helper.make_node("ConvTranspose", ["p3", "w3", "b3"], ["u"], group=2, strides=[2, 2, 2], output_padding=[1, 0, 1]),
        helper.make_node("Sigmoid", ["u"], ["y"]),
    ]
    inits = [init("w1", 4, 2, 3, 2, 3), init("b1", 4), init("w2", 6, 2, 3, 3, 3), init("w3", 6, 2, 2, 3, 2),
             init("b3", 4)]
    graph = helper.make_graph(nodes, "cnn3d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 7, 9, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _reference(model, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _input() -> np.ndarray:
    return np.random.default_rng(12).standard_normal((2, 2, 7, 9, 8)).astype("float32")


def test_cli_pipeline_lowers_the_3d_ops_and_computes_onnxruntimes_output(tmp_path):
    model, x = _cnn3d(), _input()
    relay_path, lowered = _import(model, tmp_path), tmp_path / "model.zero.py"
    relay_text = open(relay_path).read()
    for op in ("nn.conv3d(", "nn.conv3d_transpose(", "nn.max_pool3d(", "nn.avg_pool3d("):
        assert op in relay_text
    code, err = _opt([relay_path, "-p", "relay-to-relax,zero-pipeline", "-o", str(lowered)], tmp_path)
    assert code == 0, err
    mod = parse(lowered.read_text(), str(lowered))
    main = mod["main"]
    ops = {b.value.op.name for block in main.body.blocks for b in block.bindings
           if isinstance(b.value, rx.Call) and isinstance(getattr(b.value.op, "name", None), str)}
    assert ops <= {"relax.call_tir"}, ops  # every 3-D op was legalized
    prim_names = [n for n, f in mod.functions.items() if isinstance(f, tir.PrimFunc)]
    for op in ("conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d"):
        assert any(op in n for n in prim_names), (op, prim_names)
    got = np.asarray(run_relax(mod, [x]))
    want = _reference(model, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_native_build_computes_onnxruntimes_output():
    model, x = _cnn3d(), _input()
    mod, _ = from_onnx(model)
    exe = irtool.build(mod)
    got = np.asarray(exe.run({"x": x}))
    want = _reference(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    other = np.random.default_rng(13).standard_normal(x.shape).astype("float32")
    np.testing.assert_allclose(np.asarray(exe.run({"x": other})), _reference(model, other), rtol=RTOL, atol=ATOL)


def test_dynamic_batch_runs_for_any_batch_size():
    """The batch a symbolic dimension (imported without a shape): symbolic through relay-to-relax
    and the legalized 3-D PrimFuncs, equal to onnxruntime for several batch sizes in the
    interpreter and natively."""
    model = _cnn3d()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.warns(UserWarning, match="unknown dimension `batch`"):
        mod, _ = from_onnx(model)
    lowered = get_pass("zero-pipeline")()(get_pass("relay-to-relax")()(mod))
    main = lowered["main"]
    assert isinstance(main.params[0].struct_info.shape[0], tir.Var)  # the batch, a size variable
    exe = irtool.build(mod)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 7, 9, 8)).astype("float32")
        want = _reference(model, x)
        np.testing.assert_allclose(np.asarray(run_relax(lowered, [x])), want, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(np.asarray(exe.run({"x": x})), want, rtol=RTOL, atol=ATOL)


@pytest.mark.tvm
@pytest.mark.parametrize("name", ["cnn3d", "lrn"])
def test_tvm_zero_pipeline_on_our_relax_prints_what_ours_prints(tvm_python, tmp_path, name):
    model = _cnn3d() if name == "cnn3d" else _lrn_model((2, 6, 3, 4), 3)
    relax_path = tmp_path / "model.relax.py"
    code, err = _opt([_import(model, tmp_path), "-p", "relay-to-relax", "-o", str(relax_path)], tmp_path)
    assert code == 0, err
    runner = tmp_path / "tvm_zero.py"
    runner.write_text(_TVM_ZERO)
    proc = subprocess.run([tvm_python, str(runner), str(relax_path)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with PassContext():
        ours = get_pass("zero-pipeline")()(parse(relax_path.read_text(), str(relax_path)))
    assert to_text(ours, show_meta_data=False).rstrip("\n") == open(str(relax_path) + ".tvm").read().rstrip("\n")


# ----------------------------------------------------------------------------- LRN
# nn.lrn has no Relax operator: relay-to-relax composes it from R.nn.avg_pool3d (4-D data) or
# R.nn.avg_pool2d (3-D), as TVM 0.27's ONNX frontend does.


def _lrn_model(shape: tuple[int, ...], size: int) -> onnx.ModelProto:
    nodes = [helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.3, beta=0.6, bias=1.5)]
    graph = helper.make_graph(nodes, "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


# (onnxruntime runs 4-D LRN only; 3-D nn.lrn is in tests/test_relay_to_relax.py)
@pytest.mark.parametrize("shape, size", [((2, 6, 3, 4), 3), ((1, 7, 5, 2), 5), ((1, 3, 2, 2), 7), ((1, 4, 3, 3), 1)])
def test_lrn_lowers_through_an_average_pool_and_computes_onnxruntimes_output(tmp_path, shape, size):
    model = _lrn_model(shape, size)
    x = np.random.default_rng(size).standard_normal(shape).astype("float32")
    relay_path, lowered = _import(model, tmp_path), tmp_path / "model.zero.py"
    code, err = _opt([relay_path, "-p", "relay-to-relax,zero-pipeline", "-o", str(lowered)], tmp_path)
    assert code == 0, err
    text = lowered.read_text()
    assert "avg_pool3d" in text
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(run_relax(parse(text, str(lowered)), [x]))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    exe = irtool.build(from_onnx(model)[0])
    np.testing.assert_allclose(np.asarray(exe.run({"x": x})), want, rtol=RTOL, atol=ATOL)
