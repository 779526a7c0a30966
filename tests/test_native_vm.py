"""The native build of mains that need a VM (codegen/vm.py): R.If on a run-time condition,
calls of Relax functions (a tail-recursive while loop runs in place), R.match_cast binding
sizes that later kernels use (a mismatch is an error at run time, as in TVM's VM),
R.tensor_to_shape / R.shape_of, and operators whose shapes are only known at run time.
Each is built natively and compared with the Relax interpreter; straight-line models keep
the single native entry point."""

from __future__ import annotations

import numpy as np
import pytest

import irtool
from irtool.codegen.native import NativeError
from irtool.diagnostics import DiagnosticError

H = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"

IF = H + '''    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        if c:
            y = R.exp(x)
        else:
            y = R.negative(x)
        return y
'''

# a size bound by match_cast (from a tensor's values) is the size of the next kernels
MATCH_CAST = H + '''    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), s: R.Tensor((2,), dtype="int64")):
        a = T.int64()
        b = T.int64()
        with R.dataflow():
            sh: R.Shape(ndim=2) = R.tensor_to_shape(s)
            sh2: R.Shape([a, b]) = R.match_cast(sh, R.Shape([a, b]))
            y: R.Tensor((a, b), dtype="float32") = R.reshape(x, sh2)
            z: R.Tensor((a, b), dtype="float32") = R.multiply(y, y)
            w: R.Tensor((b,), dtype="float32") = R.sum(z, axis=[0])
            R.output(w)
        return w
'''

CAST_TO_STATIC = H + '''    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        n = T.int64()
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((n, 4), dtype="float32"))
            z = R.match_cast(x, R.Tensor((n, n), dtype="float32"))
            gv = R.add(y, R.const(1, "float32"))
            R.output(gv)
        return gv
'''

CALLS = H + '''    @R.function
    def double(x: R.Tensor(("m",), dtype="float32")) -> R.Tensor(("m",), dtype="float32"):
        y = R.add(x, x)
        return y

    @R.function
    def main(x: R.Tensor((3,), dtype="float32")):
        cls = Module
        a = cls.double(x)
        b = cls.double(a)
        c = R.subtract(b, x)
        return (c, R.shape_of(c))
'''

# a while loop as TVM's Relax writes one: the function's R.If calls itself in tail position
COUNT = H + '''    @R.function
    def loop(i: R.Tensor((), dtype="int64"), n: R.Tensor((), dtype="int64"), acc: R.Tensor((3,), dtype="float32"),
             x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        cls = Module
        c = R.less(i, n)
        if c:
            i1 = R.add(i, R.const(1, "int64"))
            acc1 = R.add(acc, x)
            r = cls.loop(i1, n, acc1, x)
        else:
            r = acc
        return r

    @R.function
    def main(n: R.Tensor((), dtype="int64"), x: R.Tensor((3,), dtype="float32")):
        cls = Module
        gv = cls.loop(R.const(0, "int64"), n, R.zeros(R.shape([3]), dtype="float32"), x)
        return gv
'''


def _build(text: str, name: str = "m.py"):
    mod = irtool.parse(text, name)
    exe = irtool.build(mod)
    assert exe.vm is not None  # (a straight-line main would be one native call)
    return mod, exe


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_if_on_a_run_time_condition():
    mod, exe = _build(IF)
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    for c in (True, False):
        got = exe(np.array(c), x)
        np.testing.assert_allclose(got, np.exp(x) if c else -x, rtol=1e-6)
        _same(got, irtool.interpret(mod, [np.array(c), x]))


def test_match_cast_binds_a_size_later_kernels_use():
    mod, exe = _build(MATCH_CAST)
    x = np.arange(12, dtype=np.float32)
    for shape in ((3, 4), (4, 3), (12, 1), (2, 6)):
        got = exe(x, np.array(shape, np.int64))
        assert got.shape == (shape[1],)
        np.testing.assert_allclose(got, (x.reshape(shape) ** 2).sum(axis=0), rtol=1e-6)
        _same(got, irtool.interpret(mod, [x, np.array(shape, np.int64)]))


def test_match_cast_mismatch_is_a_run_time_error():
    _, exe = _build(CAST_TO_STATIC)
    np.testing.assert_allclose(exe(np.zeros((4, 4), np.float32)), np.ones((4, 4), np.float32))
    with pytest.raises(NativeError, match="dimension 1 is 5, expected 4"):
        exe(np.zeros((4, 5), np.float32))
    with pytest.raises(NativeError, match="dimension 1 is 4, expected 3"):  # n is 3 from the first match_cast
        exe(np.zeros((3, 4), np.float32))
    with pytest.raises(NativeError, match="should have 2 dimensions"):
        exe(np.zeros((4,), np.float32))


def test_calls_of_relax_functions_and_shape_results():
    mod, exe = _build(CALLS)
    x = np.array([1.0, 2.0, -3.0], np.float32)
    got = exe(x)
    _same(got[0], 3 * x)
    assert tuple(got[1]) == (3,)
    _same(got, irtool.interpret(mod, [x]))


def test_tail_recursive_loop_runs_thousands_of_iterations_in_place():
    import sys

    mod, exe = _build(COUNT)
    x = np.array([1.0, -2.0, 0.5], np.float32)
    n = 5 * sys.getrecursionlimit()  # a Python frame per iteration would overflow
    np.testing.assert_allclose(exe(np.array(n, np.int64), x), n * x, rtol=1e-5)
    _same(exe(np.array(7, np.int64), x), irtool.interpret(mod, [np.array(7, np.int64), x]))


def test_operators_of_run_time_shapes_are_compiled_per_signature():
    # R.exp of a tensor of unknown shape: legalize-ops skips it; the VM compiles it for the
    # shapes it meets, once per shape
    text = H + '''    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
'''
    _, exe = _build(text)
    for shape in ((2, 3), (4, 1), (2, 3)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(exe(x), np.exp(x), rtol=1e-6)
    assert len(exe.vm.specialized) == 2


def test_runtime_function_of_a_data_dependent_shape():
    # R.nonzero legalizes to R.call_pure_packed("relax.run.nonzero"), TVM's runtime function
    text = H + '''    @R.function
    def main(x: R.Tensor((2, 3), dtype="bool")):
        with R.dataflow():
            gv = R.nonzero(x)
            R.output(gv)
        return gv
'''
    mod, exe = _build(text)
    x = np.array([[True, False, True], [False, True, False]])
    np.testing.assert_array_equal(exe(x), np.stack(np.nonzero(x)))
    np.testing.assert_array_equal(exe(x), irtool.interpret(mod, [x]))


def test_straight_line_models_keep_the_single_native_entry():
    text = H + '''    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
'''
    exe = irtool.build(irtool.parse(text, "s.py"))
    assert exe.vm is None and exe.plan is not None


VM_ERRORS = {
    # an operator with no legalization at all, in a branch: a build-time diagnostic at the call
    "sort": (H + '''    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")):
        if c:
            y = R.sort(x)
        else:
            y = x
        return y
''', "sort.py:9:17: error: cannot build natively: `R.sort` was not lowered to TIR"),
}


@pytest.mark.parametrize("name", sorted(VM_ERRORS))
def test_vm_constructs_it_cannot_run_are_located_at_build_time(name):
    text, expected = VM_ERRORS[name]
    with pytest.raises(DiagnosticError) as err:
        irtool.build(irtool.parse(text, f"{name}.py"))
    assert expected in err.value.render()


def test_vm_models_do_not_export_as_a_library(tmp_path):
    from irtool.codegen.export import ExportError

    _, exe = _build(IF)
    with pytest.raises(ExportError, match="VM"):
        exe.export_library(str(tmp_path / "m.so"))


def test_irtool_run_locates_a_failed_match_cast(tmp_path):
    import io

    from irtool.cli.run import run

    path, x = tmp_path / "cast.py", tmp_path / "x.npy"
    path.write_text(CAST_TO_STATIC)
    np.save(x, np.zeros((4, 5), np.float32))
    err = io.StringIO()
    assert run([str(path), "--backend", "native", "--input", f"x={x}"], io.StringIO(), err) == 1
    first, line, caret = err.getvalue().splitlines()[-3:]
    assert first == f"{path}:10:13: error: main: R.match_cast to `y`: dimension 1 is 5, expected 4"
    assert line.strip().startswith("y = R.match_cast(") and caret.strip().startswith("^~~")
