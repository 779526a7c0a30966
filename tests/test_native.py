"""Native code (codegen/llvm_codegen.py, codegen/native.py) against the TIR interpreter.

Three sources of programs:
- every test of tests/test_tir_interpreter.py, re-run with `run_prim_func` replaced by a
  differential runner: the interpreter runs first (it checks bounds, so what it accepts is
  safe to run natively), then the native code on copies of the same arguments, and every
  buffer must come out bit-identical; the test's own assertions then check the native results;
- every PrimFunc of TVM's reference printouts (`tests/data/tvm-0.27/`), on random inputs;
- hand-written cases for what only native code can get wrong (argument checks, errors).
"""

from __future__ import annotations

import glob
import inspect
import os

import numpy as np
import pytest
import test_tir_interpreter as interp_tests

import irtool
from irtool.codegen.llvm_codegen import CodegenError
from irtool.codegen.native import NativeError, compile_tir, generate_llvm
from irtool.exec.tir import InterpreterError, run_prim_func
from irtool.ir import tir

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "tvm-0.27")
_NOT_NATIVE = []  # (test, reason) for functions the native backend declines, reported below


MAX_ULP = 4  # transcendental functions: libm's and NumPy's SIMD versions may differ in the last bits


def _same(a, b) -> bool:
    """Bit-identical, except that floats may differ by a few units in the last place."""
    if not isinstance(a, np.ndarray):
        return True
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f" or a.tobytes() == b.tobytes():
        return a.tobytes() == b.tobytes()
    both_nan = np.isnan(a) & np.isnan(b)
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ordered = [np.where(x.view(ints) < 0, np.iinfo(ints).min - x.view(ints), x.view(ints)).astype(np.int64)
               for x in (a, b)]
    return bool(np.all(both_nan | (np.abs(ordered[0] - ordered[1]) <= MAX_ULP)))


def _copy(a):
    """A copy with the same strides (a view's strides are part of what is tested)."""
    if not isinstance(a, np.ndarray):
        return a
    if a.flags.c_contiguous or any(s < 0 for s in a.strides):
        return a.copy()
    span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize if a.size else a.itemsize
    out = np.ndarray(a.shape, a.dtype, buffer=bytearray(span), strides=a.strides)
    out[...] = a
    return out


def _differential(func, args, mod=None):
    copies = [_copy(a) for a in args]
    result = run_prim_func(func, args, mod)  # raises for what the interpreter rejects: then nothing native runs
    try:
        lib = compile_tir(func)
    except CodegenError as err:
        _NOT_NATIVE.append(str(err))
        return result
    name = next(iter(lib.functions))
    lib[name](*copies)
    for k, (a, b) in enumerate(zip(args, copies)):
        if not _same(a, b):
            raise AssertionError(f"argument {k}: native {b!r} != interpreter {a!r}")
        if isinstance(a, np.ndarray):
            a[...] = b  # the test's assertions now check the native result
    return result


_INTERPRETER_TESTS = [(name, fn) for name, fn in inspect.getmembers(interp_tests, inspect.isfunction)
                      if name.startswith("test_")]


def _param_sets(fn) -> list[dict]:
    """The keyword sets of a test's (possibly stacked) parametrize marks."""
    sets = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
        values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
        sets = [{**s, **dict(zip(names, v))} for s in sets for v in values]
    return sets


def _cases():
    for name, fn in _INTERPRETER_TESTS:
        sets = _param_sets(fn)
        for k, kwargs in enumerate(sets):
            yield pytest.param(fn, kwargs, id=name if len(sets) == 1 else f"{name}[{k}]")


@pytest.mark.parametrize(("test", "kwargs"), list(_cases()))
def test_interpreter_suite_runs_natively(test, kwargs, monkeypatch, request):
    monkeypatch.setattr(interp_tests, "run_prim_func", _differential)
    fixtures = {n: request.getfixturevalue(n) for n in inspect.signature(test).parameters if n not in kwargs}
    test(**kwargs, **fixtures)


# ----------------------------------------------------------------------------- TVM's printouts


def _reference_funcs():
    for path in sorted(glob.glob(os.path.join(REFERENCE, "*", "*.py"))):
        text = open(path).read()
        if "T.prim_func" not in text or "tvm_struct_get" in text:
            continue
        mod = irtool.parse(text, path)
        for name, fn in mod.functions.items():
            if isinstance(fn, tir.PrimFunc):
                size = 1
                for _, b in fn.buffer_map:
                    size = max(size, int(np.prod([d.value if isinstance(d, tir.IntImm) else 7 for d in b.shape])))
                if size <= 1 << 16:
                    yield pytest.param(fn, id=f"{os.path.basename(os.path.dirname(path))}/"
                                              f"{os.path.basename(path)}:{name}")


def _random_args(fn: tir.PrimFunc, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for p in fn.params:
        b = fn.buffer_of(p)
        shape = [d.value if isinstance(d, tir.IntImm) else 7 for d in b.shape]
        args.append(rng.standard_normal(shape).astype(b.dtype))
    return args


@pytest.mark.skipif(not os.path.isdir(REFERENCE), reason="TVM's reference printouts are not here")
@pytest.mark.parametrize("fn", list(_reference_funcs()) if os.path.isdir(REFERENCE) else [])
def test_tvm_reference_prim_funcs_run_natively(fn):
    args = _random_args(fn)
    _differential(fn, args)


@pytest.mark.skipif(not os.path.isdir(REFERENCE), reason="TVM's reference printouts are not here")
@pytest.mark.parametrize("name", ["matmul_naive.py", "matmul_sched2.py"])
def test_the_seed_1024_matmul(name):
    """Too big for the interpreter: NumPy's matmul is the reference."""
    mod = irtool.parse(open(os.path.join(REFERENCE, "syntax", name)).read(), name)
    lib = compile_tir(mod)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((1024, 1024)).astype("float32") for _ in range(2))
    c = np.zeros((1024, 1024), "float32")
    lib["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


# ----------------------------------------------------------------------------- native only

ADD_MODULE = '''
@I.ir_module
class Module:
    @T.prim_func
    def add(a: T.handle, b: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, T.int64(4)))
        B = T.match_buffer(b, (n, T.int64(4)))
        C = T.match_buffer(c, (n, T.int64(4)))
        for i, j in T.grid(n, T.int64(4)):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vi, vj]
'''


def test_symbolic_sizes_are_bound_from_the_arguments():
    lib = compile_tir(irtool.parse(ADD_MODULE, "add.py"))
    for n in (1, 3, 17):
        a, b = np.arange(4 * n, dtype="float32").reshape(n, 4), np.ones((n, 4), "float32")
        c = np.zeros((n, 4), "float32")
        lib["add"](a, b, c)
        np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize(("args", "message"), [
    (lambda: [np.zeros((3, 4), "float32"), np.zeros((2, 4), "float32"), np.zeros((3, 4), "float32")],
     "dimension 0 is 2, but `n` is already 3"),
    (lambda: [np.zeros((3, 4), "float64"), np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")],
     "has dtype float64, expected float32"),
    (lambda: [np.zeros((3, 4, 1), "float32"), np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")],
     "has rank 3, expected 2"),
    (lambda: [np.zeros((3, 5), "float32"), np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")],
     "dimension 1 is 5, expected 4"),
    (lambda: [np.zeros((4, 3), "float32").T, np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")],
     "must be C-contiguous"),
    (lambda: [[0.0] * 12, np.zeros((3, 4), "float32"), np.zeros((3, 4), "float32")],
     "must be a NumPy array"),
    (lambda: [np.zeros((3, 4), "float32")] * 2, "takes 3 arguments, got 2"),
])
def test_wrong_arguments_are_errors_not_crashes(args, message):
    lib = compile_tir(irtool.parse(ADD_MODULE, "add.py"))
    with pytest.raises(NativeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lib["add"](*args())


def test_a_failed_assert_is_an_error_with_its_message():
    mod = irtool.parse('''
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    assert A[0] > T.float32(0), "A[0] must be positive"
    A[1] = A[0]
''', "assert.py")
    lib = compile_tir(mod)
    a = np.array([1, 0, 0, 0], "float32")
    lib["main"](a)
    assert a[1] == 1
    with pytest.raises(NativeError, match="A\\[0\\] must be positive"):
        lib["main"](np.array([-1, 0, 0, 0], "float32"))


def test_large_intermediates_live_on_the_heap_small_ones_on_the_stack():
    mod = irtool.parse('''
@T.prim_func
def main(A: T.Buffer((65536,), "float32"), B: T.Buffer((65536,), "float32")):
    big = T.sblock_alloc_buffer((65536,))
    small = T.sblock_alloc_buffer((16,))
    for i in range(65536):
        with T.sblock("big"):
            vi = T.axis.spatial(65536, i)
            big[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.sblock("small"):
            vi = T.axis.spatial(16, i)
            small[vi] = T.float32(1)
    for i in range(65536):
        with T.sblock("B"):
            vi = T.axis.spatial(65536, i)
            B[vi] = big[vi] + small[vi % 16]
''', "alloc.py")
    text, _ = generate_llvm(mod)
    assert 'call ptr @"malloc"' in text and 'call void @"free"' in text and "alloca float, i64 16" in text
    a, b = np.arange(65536, dtype="float32"), np.zeros(65536, "float32")
    compile_tir(mod)["main"](a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def test_unsupported_construct_is_a_located_diagnostic():
    mod = irtool.parse('''
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="threadIdx.x"):
        A[i] = T.float32(0)
''', "gpu.py")
    with pytest.raises(CodegenError) as err:
        compile_tir(mod)
    rendered = err.value.render()
    assert "gpu.py:4:" in rendered and "thread" in rendered


def test_interpreter_errors_stay_errors():
    """The differential runner never runs natively what the interpreter rejects."""
    A = interp_tests.buf("A", [4])
    fn = interp_tests.prim_func([A], interp_tests.store(A, 1.0, 4))
    with pytest.raises(InterpreterError):
        _differential(fn, [np.zeros(4, "float32")])


def test_integer_division_by_zero_is_an_error_not_a_crash():
    """Regression: x86's idiv traps on a zero divisor (and on INT_MIN / -1, which wraps)."""
    x, y = interp_tests.V("x"), interp_tests.V("y")
    func, _ = interp_tests.scalar_func(lambda x, y: interp_tests.op("floordiv", x, y), [x, y], "int32")
    lib = compile_tir(func)
    out = np.zeros(1, "int32")
    with pytest.raises(NativeError, match="division by zero"):
        lib["main"](7, 0, out)
    lib["main"](-(2**31), -1, out)
    assert out[0] == -(2**31)


PARALLEL = '''
@T.prim_func
def main(A: T.Buffer((64, 33), "float32"), B: T.Buffer((64, 33), "float32"), S: T.Buffer((64,), "float32")):
    for i in T.parallel(64):
        for j in T.parallel(33):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2) + T.Cast("float32", vi)
        for k in range(33):
            with T.sblock("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + B[vi, vk]
'''


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_loops_nested_and_with_reductions(threads):
    from irtool.codegen.native import num_threads, set_num_threads

    mod = irtool.parse(PARALLEL, "parallel.py")
    lib = compile_tir(mod)
    assert "irtool_parallel_for" in lib.llvm_ir and ".task" in lib.llvm_ir
    a = np.random.default_rng(0).standard_normal((64, 33)).astype("float32")
    before = num_threads()
    set_num_threads(threads)
    try:
        for _ in range(3):  # the pool is reused
            b, s = np.zeros((64, 33), "float32"), np.zeros(64, "float32")
            lib["main"](a, b, s)
            b2, s2 = np.zeros((64, 33), "float32"), np.zeros(64, "float32")
            run_prim_func(mod.functions["main"], [a, b2, s2])
            assert b.tobytes() == b2.tobytes() and s.tobytes() == s2.tobytes()
    finally:
        set_num_threads(before)


def test_every_chunk_runs_once_when_loops_of_few_and_many_chunks_alternate():
    """Chunk claims carry their loop's generation and each thread tries its own chunk first:
    loops of 3 and of 50 iterations, one after the other many times on more threads than
    cores, add exactly once per iteration."""
    from irtool.codegen.native import num_threads, set_num_threads

    mod = irtool.parse('''
@T.prim_func
def main(A: T.Buffer((50,), "float32"), B: T.Buffer((3,), "float32")):
    for i in T.parallel(50):
        A[i] = A[i] + T.float32(1)
    for j in T.parallel(3):
        B[j] = B[j] + T.float32(1)
''', "chunks.py")
    lib = compile_tir(mod)
    before = num_threads()
    set_num_threads(7)
    try:
        a, b = np.zeros(50, "float32"), np.zeros(3, "float32")
        for _ in range(300):
            lib["main"](a, b)
        assert (a == 300).all() and (b == 300).all()
        set_num_threads(2)  # fewer than the workers started: those above the limit stay out
        for _ in range(300):
            lib["main"](a, b)
        assert (a == 600).all() and (b == 600).all()
    finally:
        set_num_threads(before)


def test_a_failed_assert_inside_a_parallel_loop_fails_the_call():
    mod = irtool.parse('''
@T.prim_func
def main(A: T.Buffer((100,), "float32")):
    for i in T.parallel(100):
        assert A[i] >= T.float32(0), "negative input"
        A[i] = T.sqrt(A[i])
''', "par_assert.py")
    lib = compile_tir(mod)
    a = np.arange(100, dtype="float32")
    lib["main"](a)
    np.testing.assert_allclose(a, np.sqrt(np.arange(100, dtype="float32")))
    a[77] = -1
    with pytest.raises(NativeError, match="negative input"):
        lib["main"](a)
