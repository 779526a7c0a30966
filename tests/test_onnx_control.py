"""ONNX control flow (frontend/onnx/control.py): If as Relay's `if`; Scan and Loop unrolled when
static, else recursive functions (run-time trip counts, stops and lengths);
each checked against onnxruntime (the Relay interpreter and the native build), and the Relay
text printed and parsed back."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend.onnx import OnnxImportError, from_onnx  # noqa: E402
from irtool.frontend.onnx.control import MAX_UNROLL  # noqa: E402
from irtool.ir.structural import structural_equal  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset=13, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _compare(model, feeds: dict, rtol=1e-6, native: bool = True):
    """The Relay interpreter and (`native`) the native build (relay-to-relax, then the VM of
    codegen/vm.py for the control flow) against onnxruntime."""
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    mod, _ = from_onnx(model)
    assert structural_equal(parse(to_text(mod)), mod)  # the text round-trips
    runs = [irtool.interpret(mod, list(feeds.values()))] + ([irtool.build(mod)(*feeds.values())] if native else [])
    for got in runs:
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


def test_if_branches_of_different_shapes():
    # ONNX lets the branches' outputs differ in shape: the result has `?` dims
    then_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["t"], axis=0)], "then", [],
                               [helper.make_tensor_value_info("t", F, [4])])
    else_g = _branch("else", helper.make_node("Neg", ["x"], ["e"]))
    model = _model([helper.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)],
                   [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", F, [2])],
                   [helper.make_tensor_value_info("out", F, [None])])
    for c in (True, False):
        mod = _compare(model, {"c": np.array(c), "x": np.array([1.5, -2.0], np.float32)})
    assert "dyn.reshape" in to_text(mod)


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


I64, B = TensorProto.INT64, TensorProto.BOOL


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _doubling_body():
    """v_out = v_in * 2, cond_out = sum(v_out) < 10: stops on a run-time value."""
    return helper.make_graph(
        [helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
         helper.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "ten"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Mul", ["v_out", "i_f"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [2]), _vi("scan", F, [2])],
        initializer=[numpy_helper.from_array(np.float32(10), "ten")])


def test_loop_stopping_on_a_runtime_value_is_a_recursive_function():
    # while sum(v) < 10: v *= 2 -- the number of iterations depends on the input
    model = _model([helper.make_node("Less", ["zero", "one"], ["c0"]),
                    helper.make_node("Loop", ["", "c0", "v0"], ["v", "scans"], body=_doubling_body())],
                   [_vi("v0", F, [2])], [_vi("v", F, [2]), _vi("scans", F, [None, 2])],
                   inits=[numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.float32(1), "one")])
    for v0 in ([0.25, 0.5], [3.0, 4.0], [20.0, 1.0]):
        mod = _compare(model, {"v0": np.array(v0, np.float32)})
    text = to_text(mod)
    assert "let %while_loop: fn (" in text and "%while_loop(" in text and "if (" in text


def test_loop_with_a_runtime_trip_count_and_condition():
    # both limits: stops at M iterations or when the sum reaches 10, whichever comes first
    model = _model([helper.make_node("Loop", ["M", "c0", "v0"], ["v", "scans"], body=_doubling_body())],
                   [_vi("M", I64, []), _vi("c0", B, []), _vi("v0", F, [2])],
                   [_vi("v", F, [2]), _vi("scans", F, [None, 2])])
    for m, c0, v0 in ((0, True, [1.0, 1.0]), (2, True, [0.1, 0.1]), (9, True, [0.1, 0.2]), (9, False, [1.0, 2.0])):
        _compare(model, {"M": np.array(m, np.int64), "c0": np.array(c0), "v0": np.array(v0, np.float32)})


def runtime_count_loop():
    """`v = v0; repeat M times: v += x`, M a one-element tensor, the body reading `x` of the
    enclosing graph."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "x"], ["v_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [3])],
        [_vi("cond_out", B, []), _vi("v_out", F, [3])])
    return _model([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
                  [_vi("M", I64, [1]), _vi("x", F, [3]), _vi("v0", F, [3])], [_vi("v", F, [3])])


def test_loop_with_a_runtime_trip_count_only():
    model = runtime_count_loop()
    x, v0 = np.array([1.0, -2.0, 0.5], np.float32), np.zeros(3, np.float32)
    for m in (0, 1, 7):
        _compare(model, {"M": np.array([m], np.int64), "x": x, "v0": v0})
    # thousands of iterations: the interpreter's tail calls do not grow the Python stack
    mod, _ = from_onnx(model)
    got = irtool.interpret(mod, [np.array([3000], np.int64), x, v0])
    np.testing.assert_allclose(got, 3000 * x, rtol=1e-5)


def test_loop_carried_value_that_grows_gets_a_dynamic_dim():
    # v_out = concat(v_in, [i]): one element longer per iteration
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Unsqueeze", ["i", "axes"], ["i1"]),
         helper.make_node("Concat", ["v_in", "i1"], ["v_out"], axis=0),
         helper.make_node("ReduceSum", ["v_out"], ["scan"], keepdims=0)],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", I64, [1])],
        [_vi("cond_out", B, []), _vi("v_out", I64, [None]), _vi("scan", I64, [])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "axes")])
    model = _model([helper.make_node("Loop", ["M", "", "v0"], ["v", "sums"], body=body)],
                   [_vi("M", I64, []), _vi("v0", I64, [1])], [_vi("v", I64, [None]), _vi("sums", I64, [None])])
    for m in (1, 4):
        mod = _compare(model, {"M": np.array(m, np.int64), "v0": np.array([5], np.int64)})
    assert "Tensor[(?), int64]" in to_text(mod)


def test_nested_loops_with_runtime_counts():
    # the inner loop runs i times in outer iteration i: sum over i < M of i * x
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["w_in", "x"], ["w_out"])],
        "inner", [_vi("j", I64, []), _vi("c_in", B, []), _vi("w_in", F, [2])], [_vi("c_out", B, []), _vi("w_out", F, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Loop", ["i", "", "v_in"], ["v_out"], body=inner)],
        "outer", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [2])])
    model = _model([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=outer)],
                   [_vi("M", I64, []), _vi("x", F, [2]), _vi("v0", F, [2])], [_vi("v", F, [2])])
    for m in (0, 3, 5):
        _compare(model, {"M": np.array(m, np.int64), "x": np.array([1.0, 0.5], np.float32),
                         "v0": np.zeros(2, np.float32)})


def test_scan_over_a_runtime_length():
    # the sequence axis is symbolic: the scan is a recursive function over its length
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "x_t"], ["y_t"])],
        "body", [_vi("acc_in", F, [2]), _vi("x_t", F, [2])], [_vi("acc_out", F, [2]), _vi("y_t", F, [2])])
    for directions in ((0, 0, 0), (1, 1, 1)):
        node = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1,
                                scan_input_axes=[1], scan_input_directions=[directions[0]],
                                scan_output_directions=[directions[1]], scan_output_axes=[directions[2]])
        model = _model([node], [_vi("init", F, [2]), _vi("xs", F, [2, "T"])],
                       [_vi("final", F, [2]), _vi("ys", F, None)])
        for length in (1, 5):
            xs = np.arange(2 * length, dtype=np.float32).reshape(2, length) / 4
            mod = _compare(model, {"init": np.array([1.0, -1.0], np.float32), "xs": xs})
        assert "%while_loop" in to_text(mod)


def test_loop_without_trip_count_or_condition_is_a_diagnostic():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Neg", ["v_in"], ["v_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [2])])
    model = _model([helper.make_node("Loop", ["", "", "v0"], ["v"], body=body)],
                   [_vi("v0", F, [2])], [_vi("v", F, [2])])
    with pytest.raises(OnnxImportError, match="neither a trip count nor a condition never ends"):
        from_onnx(model)


def test_loop_carried_value_changing_rank_is_a_diagnostic():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Unsqueeze", ["v_in", "axes"], ["v_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [1, 2])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "axes")])
    model = _model([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
                   [_vi("M", I64, []), _vi("v0", F, [2])], [_vi("v", F, None)])
    with pytest.raises(OnnxImportError, match=r"a loop-carried value changes type across iterations "
                                              r"\(Tensor\[\(2\), float32\], then Tensor\[\(1, 2\), float32\]\)"):
        from_onnx(model)


def test_loop_import_errors_are_cli_diagnostics(tmp_path):
    import subprocess
    import sys

    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Neg", ["v_in"], ["v_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [2])])
    model = _model([helper.make_node("Loop", ["", "", "v0"], ["v"], name="forever", body=body)],
                   [_vi("v0", F, [2])], [_vi("v", F, [2])])
    path = tmp_path / "forever.onnx"
    path.write_bytes(model.SerializeToString())
    run = subprocess.run([sys.executable, "-m", "irtool.cli.import_onnx", str(path)], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "node `forever` (Loop): a Loop with neither a trip count nor a condition never ends" in run.stderr


@pytest.mark.parametrize("opset", [8, 13])
def test_scan_with_an_impossible_num_scan_inputs_is_a_diagnostic(opset):
    # a fuzzed 2**40 used to size a list (MemoryError) in opset 8's converter
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"])],
        "body", [_vi("acc_in", F, [2]), _vi("x_t", F, [2])], [_vi("acc_out", F, [2])])
    inputs = ["", "init", "xs"] if opset == 8 else ["init", "xs"]
    node = helper.make_node("Scan", inputs, ["final"], body=body, num_scan_inputs=1 << 40)
    model = _model([node], [_vi("init", F, [1, 2] if opset == 8 else [2]), _vi("xs", F, [1, 3, 2] if opset == 8 else [3, 2])],
                   [_vi("final", F, None)], opset=opset)
    with pytest.raises(OnnxImportError, match="num_scan_inputs is 1099511627776, but the Scan has 2 inputs to scan"):
        from_onnx(model)


def test_constant_loops_unroll_unless_too_long_or_empty_with_scan_outputs():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "x"], ["v_out"]),
         helper.make_node("Identity", ["v_out"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])],
        [_vi("cond_out", B, []), _vi("v_out", F, [2]), _vi("scan", F, [2])])

    def model(trip):
        return _model([helper.make_node("Loop", ["M", "", "v0"], ["v", "scans"], body=body)],
                      [_vi("x", F, [2]), _vi("v0", F, [2])], [_vi("v", F, [2]), _vi("scans", F, [trip, 2])],
                      inits=[numpy_helper.from_array(np.array(trip, np.int64), "M")])

    feeds = {"x": np.array([1.0, 0.5], np.float32), "v0": np.zeros(2, np.float32)}
    # a few iterations: unrolled, static shapes
    assert "while_loop" not in to_text(_compare(model(3), feeds))
    # no iteration: the scan outputs' shape comes from the body, so it is the recursive form
    assert "while_loop" in to_text(_compare(model(0), feeds))
    # more than MAX_UNROLL iterations: recursive, not thousands of copies of the body
    long = _compare(model(MAX_UNROLL + 1), feeds)
    assert "while_loop" in to_text(long) and len(to_text(long).splitlines()) < 80


def test_loop_scan_output_of_a_symbolic_shape_and_an_if_in_the_body():
    # the scan output's element shape is (N,) with N symbolic: the stacked outputs start as an
    # empty (0, 0) tensor, as onnxruntime gives it for no iteration, and the first iteration
    # replaces it; the body's If picks x or -x on the parity of i
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", F, ["N"])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", F, ["N"])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mod", ["i", "two"], ["parity"]), helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["signed"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Add", ["v_in", "signed"], ["v_out"]), helper.make_node("Identity", ["v_out"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, ["N"])],
        [_vi("cond_out", B, []), _vi("v_out", F, ["N"]), _vi("scan", F, ["N"])],
        initializer=[numpy_helper.from_array(np.array(2, np.int64), "two"),
                     numpy_helper.from_array(np.array(0, np.int64), "zero")])
    model = _model([helper.make_node("Loop", ["M", "", "x"], ["v", "scans"], body=body)],
                   [_vi("M", I64, []), _vi("x", F, ["N"])], [_vi("v", F, ["N"]), _vi("scans", F, [None, "N"])])
    for m, n in ((0, 3), (1, 2), (5, 4)):
        # not natively: relay-to-relax cannot give the first iteration's expand_dims an operand
        # of known shape (the (0, 0) placeholder and (N,) meet in an If of unknown shape)
        mod = _compare(model, {"M": np.array(m, np.int64), "x": np.arange(n, dtype=np.float32) + 1}, native=False)
    assert to_text(mod).count("if (") == 3  # the loop test, the parity, the first iteration


@pytest.mark.parametrize("text, message, caret", [
    # (a let-bound function, as an imported Loop's while_loop, translates: test_relay_to_relax_loop.py)
    # symbolic sizes split by -4 must divide
    ("def @main(%x: Tensor[(?, 6), float32]) {\n  reshape(%x, newshape=[-4, -1, 4, 0])\n}",
     "2:3: error: relay-to-relax: `reshape`: reshape -1 of a symbolic shape that the other dimensions do not divide",
     "  ^~~~~~~"),
])
def test_relay_to_relax_diagnostics_for_imported_forms(tmp_path, text, message, caret):
    import subprocess
    import sys

    path = tmp_path / "bad.ir"
    path.write_text(text + "\n")
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.opt", str(path), "-p", "relay-to-relax"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    first, *rest = proc.stderr.splitlines()
    assert first.startswith(f"{path}:") and message in first, proc.stderr
    assert rest[1] == caret, proc.stderr


def test_loop_over_a_symbolic_sequence_length():
    # a scripted RNN-like loop: M = Shape(x)[0] of an input whose first dim is symbolic; the
    # body gathers x[i] (a value of the enclosing graph) and runs h = tanh(h W + x[i])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Gather", ["x", "i"], ["x_i"], axis=0),
         helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("Add", ["hw", "x_i"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]), helper.make_node("Identity", ["h_out"], ["h_all"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("h_in", F, [1, 4])],
        [_vi("cond_out", B, []), _vi("h_out", F, [1, 4]), _vi("h_all", F, [1, 4])])
    w = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32) / 2
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["T"], axis=0),
             helper.make_node("Loop", ["T", "", "h0"], ["h", "hs"], body=body)]
    model = _model(nodes, [_vi("x", F, ["T", 4]), _vi("h0", F, [1, 4])],
                   [_vi("h", F, [1, 4]), _vi("hs", F, ["T", 1, 4])],
                   inits=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(0, np.int64), "zero")])
    for steps in (1, 3, 6):
        x = np.random.default_rng(steps).standard_normal((steps, 4)).astype(np.float32)
        mod = _compare(model, {"x": x, "h0": np.zeros((1, 4), np.float32)}, rtol=1e-5)
    assert "%while_loop" in to_text(mod)
