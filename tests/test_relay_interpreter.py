"""The NumPy interpreter and irtool-run: let, if, tuples, closures, globals, primitive
functions, recursion, type checking of every value, and the command line."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import irtool
from irtool.cli import run as run_cli
from irtool.diagnostics import DiagnosticError
from irtool.exec.relay import Interpreter, InterpreterError, interpret


def run(text: str, *inputs, **named):
    mod = irtool.parse(text, "test.ir")
    return interpret(mod, named if named else list(inputs))


def test_dataflow_against_numpy():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = np.array([1, -2, 3], dtype="float32")
    out = run("""
    def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
      %0 = add(%x, %y);
      %1 = multiply(%0, %0);
      subtract(%1, exp(%y))
    }""", x, y)
    np.testing.assert_allclose(out, (x + y) ** 2 - np.exp(y), rtol=1e-6)
    assert out.dtype == np.float32


def test_let_if_tuple():
    text = """
    def @main(%c: bool, %x: Tensor[(3), float32]) {
      let %t = (%x, negative(%x));
      let %s = if (%c) { %t.0 } else { %t.1 };
      (%s, sum(%s))
    }"""
    x = np.array([1, 2, 3], dtype="float32")
    a, total = run(text, np.array(True), x)
    np.testing.assert_array_equal(a, x)
    assert total == 6 and total.shape == ()
    b, total = run(text, np.array(False), x)
    np.testing.assert_array_equal(b, -x)
    assert total == -6


def test_closure_captures_its_environment():
    out = run("""
    def @main(%x: Tensor[(2), float32]) {
      let %k = multiply(%x, 3f);
      let %f = fn (%y: Tensor[(2), float32]) { add(%y, %k) };
      %f(%f(%x))
    }""", np.array([1, 2], dtype="float32"))
    np.testing.assert_array_equal(out, [7, 14])  # x + 3x + 3x


def test_globals_and_primitive_functions():
    out = run("""
    def @square(%a: Tensor[(2), int32]) -> Tensor[(2), int32] {
      multiply(%a, %a)
    }
    def @main(%x: Tensor[(2), int32]) {
      %0 = fn (%p0: Tensor[(2), int32], %p1: Tensor[(2), int32], Primitive=1) {
        subtract(%p0, %p1)
      };
      %0(@square(%x), %x)
    }""", np.array([3, -4], dtype="int32"))
    np.testing.assert_array_equal(out, [6, 20])


def test_recursion_through_a_global():
    # sum of 1..n by recursion; the recursive call needs the declared signature
    text = """
    def @tri(%n: int32) -> int32 {
      if (less_equal(%n, 0)) { 0 } else { add(%n, @tri(subtract(%n, 1))) }
    }
    def @main(%n: int32) { @tri(%n) }"""
    assert int(run(text, np.array(10, dtype="int32"))) == 55


def test_recursive_let_bound_function():
    text = """
    def @main(%n: int32) {
      let %loop: fn (int32, int32) -> int32 = fn (%i: int32, %acc: int32) -> int32 {
        if (equal(%i, 0)) { %acc } else { %loop(subtract(%i, 1), multiply(%acc, 2)) }
      };
      %loop(%n, 1)
    }"""
    assert int(run(text, np.array(5, dtype="int32"))) == 32
    # without the variable's annotation, the function's declared signature types it
    unannotated = text.replace("let %loop: fn (int32, int32) -> int32 =", "let %loop =")
    assert "let %loop = fn" in unannotated
    assert int(run(unannotated, np.array(5, dtype="int32"))) == 32
    with pytest.raises(DiagnosticError, match="`%loop` is used in its own definition"):
        run(unannotated.replace("-> int32 {", "{"), np.array(5, dtype="int32"))


def test_tail_calls_run_in_place():
    # 5,000 iterations of a let-bound loop and of a global one, at a recursion limit of
    # 1,000: a call in tail position (through lets and ifs) reuses the frame
    let_loop = """
    def @main(%n: int64, %x: Tensor[(2), float32]) {
      let %loop: fn (int64, Tensor[(2), float32]) -> Tensor[(2), float32] =
        fn (%i: int64, %acc: Tensor[(2), float32]) -> Tensor[(2), float32] {
          if (less(%i, %n)) { let %next = add(%acc, %x); %loop(add(%i, 1i64), %next) } else { %acc }
        };
      %loop(0i64, %x)
    }"""
    global_loop = """
    def @count(%i: int64, %acc: int64) -> int64 {
      if (greater(%i, 0i64)) { @count(subtract(%i, 1i64), add(%acc, %i)) } else { %acc }
    }
    def @main(%n: int64) { @count(%n, 0i64) }"""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        x = np.array([1, 0.5], "float32")
        np.testing.assert_array_equal(run(let_loop, np.array(5000, "int64"), x), 5001 * x)
        assert int(run(global_loop, np.array(5000, "int64"))) == 5000 * 5001 // 2
    finally:
        sys.setrecursionlimit(old)


def test_tail_call_results_are_checked_against_types():
    # the value a tail call returns is still checked against the types of the `if` and the
    # call it passed through
    mod = irtool.parse("""
    def @f(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { exp(%x) }
    def @main(%c: bool, %x: Tensor[(2), float32]) {
      if (%c) { @f(%x) } else { %x }
    }""")
    irtool.infer_types(mod)
    from irtool.ir.types import TensorType

    mod["main"].body.checked_type = TensorType((3,), "float32")  # deliberately wrong
    with pytest.raises(InterpreterError, match="produced array\\[2\\] float32 but its type is"):
        Interpreter(mod).run("main", [np.array(True), np.ones(2, "float32")])


def test_if_type_admits_both_branches():
    # regression: the `if` took its true branch's type, (2, 3), and the interpreter then
    # rejected the (4, 3) of the false branch
    text = """
    def @main(%c: bool, %x: Tensor[(2, 3), float32], %y: Tensor[(?, 3), float32]) {
      if (%c) { %x } else { %y }
    }"""
    mod = irtool.parse(text)
    irtool.infer_types(mod)
    from irtool.text.relay_printer import format_type

    assert format_type(mod["main"].body.checked_type) == "Tensor[(?, 3), float32]"
    y = np.ones((4, 3), "float32")
    np.testing.assert_array_equal(run(text, np.array(False), np.zeros((2, 3), "float32"), y), y)


def test_inputs_by_name_and_errors():
    text = "def @main(%a: Tensor[(2), float32], %b: Tensor[(2), float32]) { subtract(%a, %b) }"
    a, b = np.ones(2, "float32"), np.full(2, 3, "float32")
    np.testing.assert_array_equal(run(text, b=b, a=a), [-2, -2])
    with pytest.raises(DiagnosticError, match="missing input for `@main`: %b"):
        run(text, a=a)
    with pytest.raises(DiagnosticError, match="input `%a` is array\\[3\\] float32"):
        run(text, np.ones(3, "float32"), b)
    with pytest.raises(DiagnosticError, match="input `%b` is array\\[2\\] float64"):
        run(text, a, np.ones(2))


def test_values_are_checked_against_types():
    # A reference that disagrees with its type relation is an internal error, not silence.
    mod = irtool.parse("def @main(%x: Tensor[(2), float32]) { exp(%x) }")
    irtool.infer_types(mod)
    body = mod["main"].body
    from irtool.ir.types import TensorType

    body.checked_type = TensorType((3,), "float32")  # deliberately wrong
    wrong = "produced array\\[2\\] float32 but its type is Tensor\\[\\(3\\), float32\\]"
    with pytest.raises(InterpreterError, match=wrong):
        Interpreter(mod).run("main", [np.ones(2, "float32")])


def test_long_chain_and_long_let_chain_do_not_recurse():
    n = 20000
    lines = ["def @main(%x: Tensor[(1), float32]) {", "  %0 = negative(%x);"]
    lines += [f"  %{i} = negative(%{i - 1});" for i in range(1, n)]
    lines += [f"  %{n - 1}", "}"]
    assert float(run("\n".join(lines), np.array([2], "float32"))[0]) == 2.0
    lets = ["def @main(%x: Tensor[(1), float32]) {", "  let %v0 = negative(%x);"]
    lets += [f"  let %v{i} = negative(%v{i - 1});" for i in range(1, n)]
    lets += [f"  %v{n - 1}", "}"]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        assert float(run("\n".join(lets), np.array([2], "float32"))[0]) == 2.0
    finally:
        sys.setrecursionlimit(old)


def test_irtool_run_cli(tmp_path):
    src = tmp_path / "m.ir"
    src.write_text("def @main(%x: Tensor[(2, 2), float32]) { (sum(%x, axis=[0]), argmax(%x, axis=[1])) }")
    x = np.array([[1, 5], [7, 3]], dtype="float32")
    np.save(tmp_path / "x.npy", x)
    out, err = io.StringIO(), io.StringIO()
    code = run_cli.run([str(src), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "o.npz")], out, err)
    assert code == 0, err.getvalue()
    assert "output 0: float32[2] min=8 max=8 mean=8 first=[8., 8.]" in out.getvalue()
    assert "output 1: int32[2] min=0 max=1" in out.getvalue()
    saved = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(saved["output_0"], [8, 8])
    np.testing.assert_array_equal(saved["output_1"], [1, 0])
    # random inputs are reproducible with a seed
    runs = []
    for _ in range(2):
        out = io.StringIO()
        assert run_cli.run([str(src), "--random-inputs", "--seed", "7"], out, io.StringIO()) == 0
        runs.append(out.getvalue())
    assert runs[0] == runs[1]


def test_irtool_run_user_errors(tmp_path):
    src = tmp_path / "m.ir"
    src.write_text("def @main(%x: Tensor[(2), float32]) {\n  exp(%x)\n}\n")
    err = io.StringIO()
    assert run_cli.run([str(src)], io.StringIO(), err) == 1
    assert "m.ir:1:5: error: missing input for `@main`: %x" in err.getvalue()
    assert "Traceback" not in err.getvalue()
    err = io.StringIO()
    assert run_cli.run([str(src), "--input", "x=/nonexistent.npy"], io.StringIO(), err) == 1
    assert "cannot load input `x`" in err.getvalue()
    err = io.StringIO()
    assert run_cli.run([str(src), "--entry", "nope", "--random-inputs"], io.StringIO(), err) == 1
    assert "no function `@nope`" in err.getvalue()
