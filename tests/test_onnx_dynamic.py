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
from irtool.ops.registry import OpPattern, get  # noqa: E402
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


# name -> (arguments, TOpPattern), from TVM v0.19's src/relay/op/dyn/ registrations (dyn.zeros, dyn.ones
# and dyn.topk take theirs in python/tvm/relay/op/dyn/)
I_, B_, E_, F_, O_ = (OpPattern.INJECTIVE, OpPattern.BROADCAST, OpPattern.ELEMWISE, OpPattern.OUT_ELEMWISE_FUSABLE,
                      OpPattern.OPAQUE)
DYN_DECLS = {
    "dyn.reshape": (("data", "newshape"), I_),
    "dyn.broadcast_to": (("data", "shape"), B_),
    "dyn.full": (("fill_value", "shape"), E_),
    "dyn.zeros": (("shape",), E_),
    "dyn.ones": (("shape",), E_),
    "dyn.strided_slice": (("data", "begin", "end", "strides"), I_),
    "dyn.tile": (("data", "reps"), I_),
    "dyn.topk": (("data", "k"), O_),
    "dyn.one_hot": (("indices", "on_value", "off_value", "depth"), F_),
    "dyn.nn.pad": (("data", "pad_width", "pad_val"), I_),
    "dyn.image.resize2d": (("data", "size", "roi"), I_),
}


@pytest.mark.parametrize("name", sorted(DYN_DECLS))
def test_dyn_op_declarations_match_tvm(name):
    op = get(name)
    args, pattern = DYN_DECLS[name]
    assert op.args == args
    assert op.pattern == pattern, OpPattern.NAMES[op.pattern]
    assert op.shape_data_dependent and op.ref is not None


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
    ("dyn.topk", [np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]), np.array([2])], {"ret_type": "values"},
     np.array([[3.0, 2.0], [5.0, 4.0]])),
    ("dyn.topk", [np.array([3.0, 1.0, 2.0]), np.array(0)], {"ret_type": "indices", "is_ascend": True},
     np.array([1, 2, 0], "int32")),  # k < 1: the whole axis
    ("dyn.one_hot", [np.array([0, 2]), np.array(1.0), np.array(0.0), np.array(3)], {"axis": 0},
     np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])),
    ("dyn.nn.pad", [np.arange(3.0), np.array([[1, 2]]), np.array(9.0)], {}, np.array([9.0, 0, 1, 2, 9, 9])),
    ("dyn.nn.pad", [np.arange(4.0), np.array([[-1, 1]]), np.array(0.0)], {"pad_mode": "edge"},
     np.array([1.0, 2, 3, 3])),  # a negative width crops
    ("dyn.image.resize2d", [np.arange(4.0, dtype="float32").reshape(1, 1, 2, 2), np.array([4.0, 4.9]),
                            np.zeros(4, "float32")],
     {"method": "nearest_neighbor", "coordinate_transformation_mode": "asymmetric", "rounding_method": "floor"},
     np.arange(4.0, dtype="float32").reshape(1, 1, 2, 2).repeat(2, axis=2).repeat(2, axis=3)),  # 4.9: 4
])
def test_dyn_op_references(op, args, attrs, expected):
    np.testing.assert_array_equal(get(op).ref(*args, **attrs), expected)


def test_dyn_topk_one_hot_pad_types():
    # TVM's relations: `?` only where the run-time value decides (topk's axis, one_hot's depth
    # axis; every dim of pad); k and depth integer scalars or (1,) tensors; pad_width (rank, 2)
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 6), float32], %k: Tensor[(1), int64], %i: Tensor[(2, 3), int32], %p: Tensor[(2, 2), int64]) {
  %0 = dyn.topk(%x, %k, axis=1, dtype="int64");
  %1 = dyn.one_hot(%i, 1f, 0f, %k, axis=1, dtype="float32");
  %2 = dyn.nn.pad(%x, %p, 0f);
  (%0, %1, %2)
}
"""
    from irtool.diagnostics import DiagnosticError
    from irtool.transform import get_pass

    typed = print_relay(get_pass("infer-type")()(parse(text, "dyn.ir")), show_types=True)
    assert "ty=(Tensor[(?, ?), float32], Tensor[(?, ?), int64])" in typed
    assert "ty=Tensor[(2, ?, 3), float32] */;" in typed and "0f /* ty=float32 */) /* ty=Tensor[(?, ?), float32] */;" in typed
    for bad, message in (("dyn.topk(%x, %p)", "`k` must be an integer scalar or a tensor of shape (1,)"),
                         ("dyn.nn.pad(%x, %k, 0f)", "`pad_width` must be an integer tensor of shape (2, 2)"),
                         ('dyn.nn.pad(%x, %p, 0f, pad_mode="wrap")', "pad_mode must be one of"),
                         ("dyn.topk(%x, %k, axis=2)", "topk axis 2 is out of range")):
        with pytest.raises(DiagnosticError) as info:
            get_pass("infer-type")()(parse(text.replace("dyn.nn.pad(%x, %p, 0f);", bad + ";"), "bad.ir"))
        assert message in str(info.value), (bad, str(info.value))


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

# models whose Relax form keeps a run-time shape (R.tensor_to_shape + match_cast: the encoder's
# dyn.broadcast_to to the maximum of its batch and a traced constant) build for the VM
# (codegen/vm.py), the others as one native entry point (the GRU's h0 = ConstantOfShape of
# Concat(1, Shape(x)[0], 12) is R.full of the shape (1, d, 12))
VM = {"dynamic_enc"}


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
    # a shape read from a tensor's values: R.tensor_to_shape, matched to fresh sizes
    from irtool.transform import get_pass

    mod = parse("""
def @main(%x: Tensor[(?, 4), float32], %s: Tensor[(3), int64]) {
  dyn.full(0f, %s, dtype="float32")
}""")
    text = to_text(get_pass("relay-to-relax")()(mod), show_meta_data=False)
    assert "R.tensor_to_shape(s)" in text and "R.match_cast(" in text
    assert 'R.full(R.shape([d_1, d_2, d_3]), R.const(0.0, "float32"), dtype="float32")' in text


def test_shapes_computed_from_sizes_are_shape_expressions():
    # torch's h0 = zeros(1, x.size(0), 12): ConstantOfShape(Concat(1, Shape(x)[0], 12)) is
    # R.full of (1, d, 12) with x's d, no run-time shape left, its arithmetic removed
    from irtool.transform import get_pass

    _, mod = _import("dynamic_gru")
    text = to_text(get_pass("relay-to-relax")()(mod), show_meta_data=False)
    assert "R.tensor_to_shape(" not in text and "R.match_cast(" not in text and "R.shape_of(" not in text
    assert 'R.full(R.shape([1, d, 12]), R.const(0.0, "float32"), dtype="float32")' in text
    assert 'def main(x: R.Tensor((d, 5, 8), dtype="float32")) -> R.Tensor((d, 5, 12), dtype="float32")' in text


SIZE_ARITHMETIC = [
    # (Relay shape computation of %x: (?, ?, 6), the R.shape it becomes)
    ("concatenate((expand_dims(take(shape_of(%x), 1i64, axis=0) * 2i64, axis=0), "
     "strided_slice(shape_of(%x), begin=[0], end=[1], strides=[1], axes=[0])))", "R.shape([d_1 * 2, d])"),
    ("strided_slice(shape_of(%x), begin=[1], end=[3], strides=[1], axes=[0])", "R.shape([d_1, 6])"),
    ("maximum(strided_slice(shape_of(%x), begin=[0], end=[1], strides=[1], axes=[0]), "
     "strided_slice(shape_of(%x), begin=[0], end=[1], strides=[1], axes=[0]))", "R.shape([d])"),
    ("concatenate((expand_dims(floor_divide(take(shape_of(%x), 2i64, axis=0), 3i64), axis=0), "
     "cast(strided_slice(shape_of(%x, dtype=\"int32\"), begin=[0], end=[2], strides=[1], axes=[0]), "
     "dtype=\"int64\")))", "R.shape([2, d, d_1])"),
]


@pytest.mark.parametrize("expr, shape", SIZE_ARITHMETIC)
def test_size_arithmetic_becomes_a_shape_expression(expr, shape):
    from irtool.transform import get_pass

    mod = parse(f"""
def @main(%x: Tensor[(?, ?, 6), float32]) {{
  dyn.full(1f, {expr.replace("shape_of(%x)", 'shape_of(%x, dtype="int64")')}, dtype="float32")
}}""")
    relax_mod = get_pass("relay-to-relax")()(mod)
    text = to_text(relax_mod, show_meta_data=False)
    assert f"R.full({shape}," in text and "R.match_cast(" not in text and "R.shape_of(" not in text
    x = np.zeros((3, 4, 6), "float32")
    np.testing.assert_array_equal(np.asarray(interpret(relax_mod, {"x": x})), interpret(mod, {"x": x}))


def test_size_arithmetic_with_an_unknown_value_stays_a_run_time_shape():
    # maximum of two unrelated sizes (the encoder's batch against a traced constant) and a
    # shape read from a tensor's values keep R.tensor_to_shape + R.match_cast
    from irtool.transform import get_pass

    mod = parse("""
def @main(%x: Tensor[(?, ?, 6), float32]) {
  dyn.full(1f, maximum(strided_slice(shape_of(%x, dtype="int64"), begin=[0], end=[2], strides=[1], axes=[0]),
                       strided_slice(shape_of(%x, dtype="int64"), begin=[1], end=[3], strides=[1], axes=[0])),
           dtype="float32")
}""")
    relax_mod = get_pass("relay-to-relax")()(mod)
    text = to_text(relax_mod, show_meta_data=False)
    assert "R.tensor_to_shape(" in text and "R.match_cast(" in text
    x = np.zeros((3, 4, 6), "float32")
    np.testing.assert_array_equal(np.asarray(interpret(relax_mod, {"x": x})), interpret(mod, {"x": x}))


def _lower_through_relax(model, tmp_path):
    """irtool-import (no --shape) -> irtool-opt -p relay-to-relax,zero-pipeline, parsed back."""
    import subprocess
    import sys

    src, relay, lowered = tmp_path / "m.onnx", tmp_path / "m.ir", tmp_path / "m.py"
    onnx.save(model, src)
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([bin_dir / "irtool-import", src, "-o", relay], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([bin_dir / "irtool-opt", "-p", "relay-to-relax,zero-pipeline", relay, "-o", lowered],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return relay.read_text(), parse(lowered.read_text(), str(lowered))


def _assert_runs_like_onnxruntime(model, mod, feed_sets) -> None:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feeds in feed_sets:
        want = session.run(None, feeds)[0]
        got = np.asarray(interpret(mod, feeds))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_slice_of_run_time_bounds_lowers_through_relax(tmp_path):
    # Slice whose starts, ends and steps are graph inputs: dyn.strided_slice, R.dynamic_strided_slice
    # after relay-to-relax, sized by its legalized shape function; the Relax interpreter equals
    # onnxruntime for several bounds
    from onnx import numpy_helper

    inputs = [helper.make_tensor_value_info("x", 1, ["N", 8])] + \
        [helper.make_tensor_value_info(n, 7, [2]) for n in ("b", "e", "s")]
    nodes = [helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(np.array([0, 1], "int64"))),
             helper.make_node("Slice", ["x", "b", "e", "a", "s"], ["y"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", 1, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    relay, mod = _lower_through_relax(model, tmp_path)
    assert "dyn.strided_slice(%x" in relay
    text = to_text(mod)
    assert "R.match_cast(" in text and "cls.shape_func" in text
    cases = [(5, [1, -6], [4, 100], [1, 2]), (7, [-2, 9], [-100, -12], [-1, -3]), (3, [0, 7], [3, -9], [2, -1]),
             (1, [0, 2], [1, 3], [1, 1])]
    _assert_runs_like_onnxruntime(model, mod, [
        {"x": np.arange(n * 8, dtype="float32").reshape(n, 8), "b": np.array(b, "int64"), "e": np.array(e, "int64"),
         "s": np.array(s, "int64")} for n, b, e, s in cases])


def test_resize_to_run_time_sizes_lowers_through_relax(tmp_path):
    # a U-Net's skip connection: x resized to the spatial size of s, dyn.image.resize2d; after
    # relay-to-relax R.image.resize2d to s's symbolic sizes (known from its shape)
    _, nodes, inputs, _, _, feed_sets = next(c for c in RUN_TIME_VALUES if c[0] == "resize-shape")
    model = _graph_model(nodes, inputs)
    relay, mod = _lower_through_relax(model, tmp_path)
    text = to_text(mod)
    assert "dyn.image.resize2d(%x" in relay and "R.match_cast(" not in text
    assert "s: R.Tensor((1, 1, d_1, d_2)" in text and "out_ty=R.Tensor((1, 2, d_1, d_2)" in text
    _assert_runs_like_onnxruntime(model, mod, feed_sets)


@pytest.mark.parametrize("attrs,what", [
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "round_prefer_ceil"},
     'nearest_mode "round_prefer_ceil" and asymmetric coordinates'),
    ({"mode": "linear", "antialias": 1}, "antialias"),
])
def test_resize_forms_topi_computes_otherwise_need_import_time_sizes(attrs, what):
    from irtool.frontend.onnx import OnnxImportError

    model = _graph_model([helper.make_node("Resize", ["x", "", "", "z"], ["y0"], **attrs)],
                         [("x", F, [1, 2, "H", 4]), ("z", I64, [4])])
    with pytest.raises(OnnxImportError, match="the sizes must be known at import time") as info:
        from_onnx(model)
    assert what in str(info.value)


def test_resize_of_run_time_scales_needs_them_at_import():
    # TOPI maps coordinates by the sizes' ratio, ONNX by the scale: they differ for fractional sizes
    from irtool.frontend.onnx import OnnxImportError

    model = _graph_model([helper.make_node("Resize", ["x", "", "c"], ["y0"], mode="linear")],
                         [("x", F, [1, 2, 3, 4]), ("c", F, [4])])
    with pytest.raises(OnnxImportError, match="the scales must be known at import time"):
        from_onnx(model)


# ----------------------------------------------------------------------------- run-time k, depth, pads


def _graph_model(nodes, inputs, n_outputs=1):
    """A model of `nodes` whose graph inputs are (name, elem type, shape); outputs y0 (float32),
    y1 (int64: TopK's indices)."""
    vis = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [helper.make_tensor_value_info(f"y{i}", (F, I64)[i], None) for i in range(n_outputs)]
    model = helper.make_model(helper.make_graph(nodes, "g", vis, outs), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


F, I64 = 1, 7
X = np.random.default_rng(3).standard_normal((5, 6)).astype("float32")
X2 = np.random.default_rng(4).standard_normal((3, 6)).astype("float32")
IMG = np.random.default_rng(5).standard_normal((1, 2, 3, 4)).astype("float32")

# id, nodes, graph inputs, outputs, the dyn op, two feeds
RUN_TIME_VALUES = [
    ("topk-input", [helper.make_node("TopK", ["x", "k"], ["y0", "y1"], axis=1)],
     [("x", F, ["N", 6]), ("k", I64, [1])], 2, "dyn.topk",
     [{"x": X, "k": np.array([3])}, {"x": X2, "k": np.array([6])}]),
    ("topk-smallest", [helper.make_node("TopK", ["x", "k"], ["y0", "y1"], axis=0, largest=0)],
     [("x", F, ["N", 6]), ("k", I64, [1])], 2, "dyn.strided_slice",
     [{"x": X, "k": np.array([2])}, {"x": X2, "k": np.array([3])}]),
    # k = the length of another input (Shape): known only when the program runs
    ("topk-shape", [helper.make_node("Shape", ["s"], ["k"]), helper.make_node("TopK", ["x", "k"], ["y0", "y1"])],
     [("x", F, ["N", 6]), ("s", F, ["M"])], 2, "dyn.topk",
     [{"x": X, "s": np.zeros(4, "float32")}, {"x": X2, "s": np.zeros(1, "float32")}]),
    ("onehot-input", [helper.make_node("OneHot", ["i", "d", "v"], ["y0"], axis=1)],
     [("i", I64, ["N", 3]), ("d", I64, []), ("v", F, [2])], 1, "dyn.one_hot",
     [{"i": np.array([[0, 2, -1], [4, -5, 1]]), "d": np.array(5), "v": np.array([0.5, 2.0], "float32")},
      {"i": np.array([[1, -1, 0]]), "d": np.array(2), "v": np.array([-1.0, 3.0], "float32")}]),
    ("onehot-shape", [helper.make_node("Shape", ["s"], ["d"]), helper.make_node("OneHot", ["i", "d", "v"], ["y0"])],
     [("i", I64, [4]), ("s", F, ["M"]), ("v", F, [2])], 1, "dyn.one_hot",
     [{"i": np.array([0, 3, -2, 1]), "s": np.zeros(4, "float32"), "v": np.array([0.0, 1.0], "float32")},
      {"i": np.array([5, 0, 1, 6]), "s": np.zeros(7, "float32"), "v": np.array([2.0, 9.0], "float32")}]),
    ("pad-input", [helper.make_node("Pad", ["x", "p", "c"], ["y0"])],
     [("x", F, ["N", 6]), ("p", I64, [4]), ("c", F, [])], 1, "dyn.nn.pad",
     [{"x": X, "p": np.array([1, 0, 2, 3]), "c": np.array(1.5, "float32")},
      {"x": X2, "p": np.array([0, 2, -1, 0]), "c": np.array(-2.0, "float32")}]),
    ("pad-reflect", [helper.make_node("Pad", ["x", "p"], ["y0"], mode="reflect")],
     [("x", F, ["N", 6]), ("p", I64, [4])], 1, "dyn.nn.pad",
     [{"x": X, "p": np.array([2, 1, 0, 4])}, {"x": X2, "p": np.array([1, 0, 1, 2])}]),
    ("resize-sizes", [helper.make_node("Resize", ["x", "", "", "z"], ["y0"], mode="linear")],
     [("x", F, [1, 2, "H", 4]), ("z", I64, [4])], 1, "dyn.image.resize2d",
     [{"x": IMG, "z": np.array([1, 2, 6, 8])}, {"x": IMG[:, :, :2], "z": np.array([1, 2, 5, 3])}]),
    ("resize-cubic-align", [helper.make_node("Resize", ["x", "", "", "z"], ["y0"], mode="cubic",
                                             coordinate_transformation_mode="align_corners")],
     [("x", F, [1, 2, "H", 4]), ("z", I64, [4])], 1, "dyn.image.resize2d",
     [{"x": IMG, "z": np.array([1, 2, 7, 5])}, {"x": IMG, "z": np.array([1, 2, 2, 2])}]),
    ("resize-nearest", [helper.make_node("Resize", ["x", "", "", "z"], ["y0"], mode="nearest")],
     [("x", F, [1, 2, "H", 4]), ("z", I64, [4])], 1, "dyn.image.resize2d",
     [{"x": IMG, "z": np.array([1, 2, 9, 6])}, {"x": IMG, "z": np.array([1, 2, 2, 3])}]),
    # a U-Net's skip connection: x resized to the spatial size of s (Shape), given on axes 2, 3
    ("resize-shape", [helper.make_node("Shape", ["s"], ["z"], start=2),
                      helper.make_node("Resize", ["x", "", "", "z"], ["y0"], mode="linear", axes=[2, 3])],
     [("x", F, [1, 2, "H", 4]), ("s", F, [1, 1, "P", "Q"])], 1, "dyn.image.resize2d",
     [{"x": IMG, "s": np.zeros((1, 1, 6, 8), "float32")}, {"x": IMG[:, :, :2], "s": np.zeros((1, 1, 4, 2), "float32")}]),
    # pads = [M, M, M, M], M the length of another input
    ("pad-shape", [helper.make_node("Shape", ["s"], ["m"]), helper.make_node("Concat", ["m"] * 4, ["p"], axis=0),
                   helper.make_node("Pad", ["x", "p"], ["y0"], mode="edge")],
     [("x", F, ["N", 6]), ("s", F, ["M"])], 1, "dyn.nn.pad",
     [{"x": X, "s": np.zeros(1, "float32")}, {"x": X2, "s": np.zeros(3, "float32")}]),
]


@pytest.mark.parametrize("case", RUN_TIME_VALUES, ids=[c[0] for c in RUN_TIME_VALUES])
def test_run_time_k_depth_pads_become_dyn_ops(case):
    # TVM v0.19's frontend makes dyn.topk / dyn.one_hot / dyn.nn.pad of a k, depth or pads given
    # only at run time; the Relay interpreter runs them equal to onnxruntime for two inputs each
    _, nodes, inputs, n_out, dyn_op, feed_sets = case
    model = _graph_model(nodes, inputs, n_out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, _ = from_onnx(model)
    assert dyn_op in _ops(mod)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feeds in feed_sets:
        want = session.run(None, feeds)
        got = interpret(mod, feeds)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(got, want, strict=True):
            g = np.asarray(g)
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # interpolation rounds differently


@pytest.mark.parametrize("case", RUN_TIME_VALUES, ids=[c[0] for c in RUN_TIME_VALUES])
def test_k_depth_pads_known_at_import_stay_static(case):
    # the same models with those inputs given as initializers keep the static ops
    _, nodes, inputs, n_out, dyn_op, feed_sets = case
    feeds = feed_sets[0]
    known = {n for n, _, _ in inputs if n not in ("x", "i", "v")}
    model = _graph_model(nodes, [i for i in inputs if i[0] not in known], n_out)
    model.graph.initializer.extend(onnx.numpy_helper.from_array(feeds[n], n) for n in known)
    mod, _ = from_onnx(model, shape={"x": feeds["x"].shape} if "x" in feeds else None)
    assert not any(op.startswith("dyn.") for op in _ops(mod)), _ops(mod)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {n: v for n, v in feeds.items() if n not in known})
    got = interpret(mod, {n: v for n, v in feeds.items() if n not in known})
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
