"""Models with symbolic input dimensions import without `--shape` (issue: ONNX breadth):
dims become `?`, shape computations that stay partly known keep ops static, the rest
becomes TVM's `dyn.*` ops; the interpreter (and the native backend) run them for any size.
Also the `dyn.*` operators against their NumPy references."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from irtool import interpret  # noqa: E402
from irtool.frontend import from_onnx  # noqa: E402
from irtool.ir.expr import Call  # noqa: E402
from irtool.ir.visitor import post_order  # noqa: E402
from irtool.ops.registry import get  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402
from irtool.text.relay_printer import print_relay  # noqa: E402

DATA = Path(__file__).parent / "data" / "onnx"

# torch exports with dynamic axes (tests/data/onnx/export_torch_models.py): name -> input shapes to try
MODELS = {
    "dynamic_cnn": [(1, 3, 32, 32), (5, 3, 32, 32)],   # x.view(x.size(0), -1)
    "dynamic_mlp": [(1, 4, 5), (7, 4, 5)],             # flatten(1), gelu
    "dynamic_gru": [(1, 5, 8), (3, 5, 8)],             # h0 = ConstantOfShape(batch)
    "dynamic_enc": [(1, 10, 32), (3, 10, 32)],         # TransformerEncoderLayer: Mod, head reshapes
}


def _import(name):
    model = onnx.load(DATA / f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, _ = from_onnx(model)
    return model, mod


def _ops(mod) -> set[str]:
    return {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and hasattr(n.op, "name")}


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_models_run_for_any_size(name):
    # one import serves every batch size, equal to onnxruntime on each
    model, mod = _import(name)
    assert "?" in print_relay(mod).split("{")[0]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in MODELS[name]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")
        want = session.run(None, {"x": x})
        got = interpret(mod, {"x": x})
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_models_print_and_parse_back(name):
    _, mod = _import(name)
    text = to_text(mod)
    assert to_text(parse(text, name)) == text


def test_view_of_own_batch_stays_a_static_reshape():
    # Shape -> Gather(0) -> Unsqueeze -> Concat([N, -1]) -> Reshape of the same tensor is
    # reshape(newshape=[0, -1]), where TVM would build dyn.reshape
    _, mod = _import("dynamic_cnn")
    assert "dyn.reshape" not in _ops(mod)
    assert "newshape=[0, -1]" in print_relay(mod)


def test_constant_of_run_time_shape_is_dyn_full():
    _, mod = _import("dynamic_gru")
    assert "dyn.full" in _ops(mod)


def test_dynamic_cnn_lowers_with_a_symbolic_batch():
    # relay-to-relax gives a symbolic Relax dim, the zero pipeline and the native build take it
    from irtool.codegen.executable import build
    from irtool.transform import get_pass

    model, mod = _import("dynamic_cnn")
    relax = get_pass("relay-to-relax")()(mod)
    assert 'main(x: R.Tensor((d, 3, 32, 32), dtype="float32")) -> R.Tensor((d, 10)' in to_text(relax)
    exe = build(mod)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype("float32")
        np.testing.assert_allclose(np.asarray(exe(x)), session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_shape_flag_still_fixes_dims():
    _, mod = _import("dynamic_mlp")
    fixed, _ = from_onnx(onnx.load(DATA / "dynamic_mlp.onnx"), shape={"x": (2, 4, 5)})
    assert "?" not in print_relay(fixed).split("{")[0]
    assert "?" in print_relay(mod).split("{")[0]


def _one_node(op_type, inputs, out_rank, **attrs):
    """A node whose integer inputs are graph inputs (run-time values), x with a `?` dim."""
    vis, feeds, names = [], {}, []
    for name, value in inputs:
        names.append(name)
        feeds[name] = value
        shape = ["N", *value.shape[1:]] if name == "x" else list(value.shape)
        vis.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), shape))
    elem = 7 if op_type == "Range" else 1
    out = helper.make_tensor_value_info("y", elem, [None] * out_rank)
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], **attrs)], "g", vis, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, feeds


@pytest.mark.parametrize("op_type,inputs,out_rank", [
    ("Reshape", [("x", np.arange(24, dtype="float32").reshape(2, 3, 4)), ("s", np.array([4, -1], "int64"))], 2),
    ("Expand", [("x", np.arange(3, dtype="float32").reshape(3, 1)), ("s", np.array([2, 1, 5], "int64"))], 3),
    ("Tile", [("x", np.arange(6, dtype="float32").reshape(2, 3)), ("s", np.array([2, 3], "int64"))], 2),
    ("ConstantOfShape", [("s", np.array([2, 3], "int64"))], 2),
    ("Slice", [("x", np.arange(40, dtype="float32").reshape(5, 8)), ("b", np.array([1, -6], "int64")),
               ("e", np.array([4, 100], "int64"))], 2),
    ("Range", [("a", np.array(2, "int64")), ("b", np.array(11, "int64")), ("c", np.array(3, "int64"))], 1),
])
def test_run_time_shape_inputs_become_dyn_ops(op_type, inputs, out_rank):
    # shape/bounds given only at run time: converted as TVM does (dyn.* / arange), equal to onnxruntime
    model, feeds = _one_node(op_type, inputs, out_rank)
    mod, _ = from_onnx(model)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = np.asarray(interpret(mod, feeds))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if op_type != "Range":
        assert any(op.startswith("dyn.") for op in _ops(mod))


# ----------------------------------------------------------------------------- dyn.* operators

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("op,args,attrs,expected", [
    ("dyn.reshape", [np.arange(12.0).reshape(3, 4), np.array([2, -1, 3])], {}, np.arange(12.0).reshape(2, 2, 3)),
    ("dyn.reshape", [np.arange(12.0).reshape(3, 4), np.array([0, 2, 2])], {}, np.arange(12.0).reshape(3, 2, 2)),
    ("dyn.broadcast_to", [np.arange(3.0), np.array([2, 3])], {}, np.broadcast_to(np.arange(3.0), (2, 3))),
    ("dyn.full", [np.array(7.0, "float32"), np.array([2, 2])], {"dtype": "float32"}, np.full((2, 2), 7.0, "float32")),
    ("dyn.zeros", [np.array([3, 1])], {"dtype": "int32"}, np.zeros((3, 1), "int32")),
    ("dyn.ones", [np.array([2])], {"dtype": "float32"}, np.ones(2, "float32")),
    ("dyn.strided_slice", [np.arange(20).reshape(4, 5), np.array([1, 4]), np.array([3, 0]), np.array([1, -2])], {},
     np.arange(20).reshape(4, 5)[1:3, 4:0:-2]),
    ("dyn.tile", [np.arange(4).reshape(2, 2), np.array([1, 3])], {}, np.tile(np.arange(4).reshape(2, 2), (1, 3))),
])
def test_dyn_op_references(op, args, attrs, expected):
    np.testing.assert_array_equal(get(op).ref(*args, **attrs), expected)


def test_dyn_op_types_have_unknown_dims_of_the_shape_length():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 6), float32], %s: Tensor[(3), int64]) {
  %0 = dyn.reshape(%x, %s);
  %1 = dyn.zeros(%s, dtype="float32");
  %2 = dyn.tile(%x, %s);
  (%0, %1, %2)
}
"""
    mod = parse(text, "dyn.ir")
    from irtool.transform import get_pass

    typed = print_relay(get_pass("infer-type")()(mod), show_types=True)
    assert typed.count("ty=Tensor[(?, ?, ?), float32]") == 3, typed
    out = interpret(mod, {"x": RNG.standard_normal((4, 6)).astype("float32"), "s": np.array([2, 3, 4])})
    assert [np.asarray(o).shape for o in out] == [(2, 3, 4), (2, 3, 4), (2, 12, 24)]


# ----------------------------------------------------------------------------- through Relax

# models whose Relax form keeps a run-time shape (R.tensor_to_shape + match_cast: GRU's
# h0 = ConstantOfShape(batch), the encoder's dyn.reshape / dyn.broadcast_to) build for the VM
# (codegen/vm.py), the others as one native entry point
VM = {"dynamic_gru", "dynamic_enc"}


@pytest.mark.parametrize("name", MODELS)
def test_dynamic_models_lower_through_relax_for_any_size(name, tmp_path):
    # irtool-import (no --shape) -> irtool-opt -p relay-to-relax,zero-pipeline -> the Relax
    # interpreter and the native build, equal to onnxruntime for two input sizes
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    relay, lowered = tmp_path / "m.ir", tmp_path / "m.py"
    proc = subprocess.run([bin_dir / "irtool-import", DATA / f"{name}.onnx", "-o", relay], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "?" in relay.read_text().split("{")[0]
    proc = subprocess.run([bin_dir / "irtool-opt", "-p", "relay-to-relax,zero-pipeline", relay, "-o", lowered],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    mod = parse(lowered.read_text(), str(lowered))
    model = onnx.load(DATA / f"{name}.onnx")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    from irtool.codegen.executable import build

    exe = build(mod)
    assert (exe.vm is not None) == (name in VM)
    for shape in MODELS[name]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")
        want = session.run(None, {"x": x})
        runs = [interpret(mod, {"x": x}), exe(x)]
        for got in runs:
            got = list(got) if isinstance(got, (list, tuple)) else [got]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


def test_run_time_shapes_in_relax_are_tensor_to_shape_and_match_cast():
    from irtool.transform import get_pass

    _, mod = _import("dynamic_gru")
    text = to_text(get_pass("relay-to-relax")()(mod), show_meta_data=False)
    assert "R.tensor_to_shape(" in text and "R.match_cast(" in text
    assert 'R.full(R.shape([d_1, d_2, d_3]), R.const(0.0, "float32"), dtype="float32")' in text
