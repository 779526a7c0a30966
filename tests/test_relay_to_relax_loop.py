"""relay-to-relax of let-bound (recursive) functions: an ONNX Loop or Scan of run-time length
imports as TVM v0.19's `while_loop`, a let-bound recursive Relay function
(frontend/onnx/control.py); relay-to-relax lifts it to a global function (its free variables
as extra parameters, passes/_relay_lift_functions.py) and writes it as a Relax function whose
R.If calls itself, as TVM's Relax writes a while loop. The Relax interpreter runs it equal to
onnxruntime, before and after the zero pipeline, and so does the native build (the VM); (tvm) TVM 0.27 parses the translation and its
zero pipeline prints what ours does."""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402
from test_onnx_control import I64, B, F, _doubling_body, _model, _vi, runtime_count_loop  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend.onnx import from_onnx  # noqa: E402
from irtool.ir import relax as rx  # noqa: E402
from irtool.transform import get_pass  # noqa: E402


def _loop_with_trip_count_and_condition():
    model = _model([helper.make_node("Loop", ["M", "c0", "v0"], ["v", "scans"], body=_doubling_body())],
                   [_vi("M", I64, []), _vi("c0", B, []), _vi("v0", F, [2])],
                   [_vi("v", F, [2]), _vi("scans", F, [None, 2])])
    feeds = [{"M": np.array(m, np.int64), "c0": np.array(c), "v0": np.array(v, np.float32)}
             for m, c, v in ((0, True, [1.0, 1.0]), (2, True, [0.1, 0.1]), (9, True, [0.1, 0.2]), (9, False, [1, 2]))]
    return model, feeds


def _nested_loops():
    # the inner loop runs i times in outer iteration i, reading x of the outermost graph
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["w_in", "x"], ["w_out"])],
        "inner", [_vi("j", I64, []), _vi("c_in", B, []), _vi("w_in", F, [2])], [_vi("c_out", B, []), _vi("w_out", F, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Loop", ["i", "", "v_in"], ["v_out"], body=inner)],
        "outer", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v_in", F, [2])], [_vi("cond_out", B, []), _vi("v_out", F, [2])])
    model = _model([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=outer)],
                   [_vi("M", I64, []), _vi("x", F, [2]), _vi("v0", F, [2])], [_vi("v", F, [2])])
    feeds = [{"M": np.array(m, np.int64), "x": np.array([1.0, 0.5], np.float32), "v0": np.zeros(2, np.float32)}
             for m in (0, 3, 5)]
    return model, feeds


def _scan_over_a_run_time_length():
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "x_t"], ["y_t"])],
        "body", [_vi("acc_in", F, [2]), _vi("x_t", F, [2])], [_vi("acc_out", F, [2]), _vi("y_t", F, [2])])
    node = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1], scan_output_directions=[0],
                            scan_output_axes=[0])
    model = _model([node], [_vi("init", F, [2]), _vi("xs", F, [2, "T"])], [_vi("final", F, [2]), _vi("ys", F, None)])
    feeds = [{"init": np.array([1.0, -1.0], np.float32), "xs": np.arange(2 * n, dtype=np.float32).reshape(2, n) / 4}
             for n in (1, 5)]
    return model, feeds


def _loop_stopping_on_a_value():
    model = _model([helper.make_node("Less", ["zero", "one"], ["c0"]),
                    helper.make_node("Loop", ["", "c0", "v0"], ["v", "scans"], body=_doubling_body())],
                   [_vi("v0", F, [2])], [_vi("v", F, [2]), _vi("scans", F, [None, 2])],
                   inits=[numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.float32(1), "one")])
    feeds = [{"v0": np.array(v, np.float32)} for v in ([0.25, 0.5], [3.0, 4.0], [20.0, 1.0])]
    return model, feeds


MODELS = {"trip-count-and-condition": _loop_with_trip_count_and_condition, "nested": _nested_loops,
          "scan": _scan_over_a_run_time_length, "stop-on-value": _loop_stopping_on_a_value}


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_onnx(model)[0]


@pytest.mark.parametrize("name", MODELS)
def test_run_time_loops_lower_to_recursive_relax_functions(name):
    model, feeds = MODELS[name]()
    relax = get_pass("relay-to-relax")()(_import(model))
    loops = [n for n, f in relax.functions.items() if n.startswith("while_loop")]
    assert loops and all(isinstance(relax[n], rx.Function) for n in loops)
    text = irtool.to_text(relax)
    assert "if " in text and "cls.while_loop(" in text
    assert irtool.structural_equal(irtool.parse(text, "again.py"), relax)
    lowered = get_pass("zero-pipeline")()(relax)
    exe = irtool.build(relax)  # natively: the VM of codegen/vm.py
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        want = session.run(None, feed)
        for run in (relax, lowered, exe):
            got = exe(*feed.values()) if run is exe else irtool.interpret(run, list(feed.values()))
            got = list(got) if isinstance(got, tuple) else [got]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_loop_reads_the_enclosing_graph_through_an_extra_parameter():
    model, _ = _loop_with_trip_count_and_condition()
    text = irtool.to_text(get_pass("relay-to-relax")()(_import(model)), show_meta_data=False)
    # M, a free variable of the let-bound function, is its last parameter, passed on unchanged
    assert 'loop_scan0: R.Tensor((d, 2), dtype="float32"), M: R.Tensor((), dtype="int64")) -> ' in text
    assert "cls.while_loop(gv1, gv4, gv2, gv8, M)" in text
    assert 'cls.while_loop(R.const(0, "int64"), c0, v0, metadata["ir.GenericConst"][0], M)' in text


CLOSURES = [
    # a let-bound function that is not recursive, and calls between global functions
    ("def @main(%x: Tensor[(2), float32]) {\n  let %f = fn (%y: Tensor[(2), float32]) { exp(%y) };\n  %f(%x)\n}",
     [np.array([0.5, -1.0], np.float32)]),
    ("def @f(%y: Tensor[(2), float32]) { exp(%y) }\ndef @main(%x: Tensor[(2), float32]) {\n  @f(%x)\n}",
     [np.array([0.5, -1.0], np.float32)]),
    ("def @main(%x: Tensor[(2), float32], %s: float32) {\n  %0 = (let %f = fn (%y: Tensor[(2), float32]) "
     "{ multiply(%y, %s) }; (%f(%x), %x));\n  %0.0\n}", [np.array([0.5, -1.0], np.float32), np.array(3, "float32")]),
]


@pytest.mark.parametrize("text, inputs", CLOSURES)
def test_closures_and_global_calls_become_relax_function_calls(text, inputs):
    relay = irtool.parse('#[version = "0.0.5"]\n' + text + "\n")
    relax = get_pass("relay-to-relax")()(relay)
    assert all(isinstance(f, rx.Function) for f in relax.functions.values())
    np.testing.assert_allclose(irtool.interpret(relax, inputs), irtool.interpret(relay, inputs), rtol=1e-6)


_TVM = r'''
import sys, tvm
from tvm import relax
mod = tvm.script.from_source(open(sys.argv[1]).read())
print(relax.get_pipeline("zero")(mod).script(show_meta=False))
'''


@pytest.mark.tvm
@pytest.mark.parametrize("name", ["trip-count-and-condition", "stop-on-value"])
def test_loop_translation_lowers_as_tvm(name, tvm_python, tmp_path):
    model, _ = MODELS[name]()
    relax = get_pass("relay-to-relax")()(_import(model))
    src = tmp_path / "loop.py"
    src.write_text(irtool.to_text(relax, show_meta_data=True))
    proc = subprocess.run([tvm_python, "-c", _TVM, str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = irtool.to_text(get_pass("zero-pipeline")()(irtool.parse(src.read_text(), str(src))), show_meta_data=False)
    assert ours.rstrip("\n") == proc.stdout.rstrip("\n")


def test_thousands_of_iterations_run_in_place():
    # regression: each iteration's recursive call nested Python frames (RecursionError after
    # a few hundred); a call whose value the function returns now runs in the caller's place
    relax = get_pass("relay-to-relax")()(_import(runtime_count_loop()))
    x = np.array([1.0, -2.0, 0.5], np.float32)
    for mod in (relax, get_pass("zero-pipeline")()(relax)):
        np.testing.assert_allclose(irtool.interpret(mod, [np.array([3000]), x, np.zeros(3, np.float32)]), 3000 * x,
                                   rtol=1e-5)
    # and natively, where the recursion is the VM's tail call
    np.testing.assert_allclose(irtool.build(relax)(np.array([3000]), x, np.zeros(3, np.float32)), 3000 * x, rtol=1e-5)
