"""The TIR interpreter (irtool.exec.tir): PrimFuncs built by hand with the tir.py
constructors, run on NumPy arrays and compared with NumPy / Python semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from irtool.analysis.tir_verifier import verify_prim_func
from irtool.exec.tir import InterpreterError, prim_func_source, run_prim_func
from irtool.ir import tir

# ----------------------------------------------------------------------------- helpers

TRUE = tir.IntImm(1, "bool")


def E(x, dtype: str | None = None) -> tir.PrimExpr:
    """A PrimExpr from a Python number (int32 / float32 unless `dtype` says otherwise)."""
    if isinstance(x, tir.PrimExpr):
        return x
    if isinstance(x, float):
        return tir.FloatImm(x, dtype or "float32")
    return tir.IntImm(x, dtype or "int32")


def V(name: str, dtype: str = "int32") -> tir.Var:
    return tir.Var(name, dtype)


def op(name: str, a, b) -> tir.BinOp:
    a = E(a)
    return tir.BinOp(name, a, E(b, a.dtype))


def add(a, b):
    return op("add", a, b)


def sub(a, b):
    return op("sub", a, b)


def mul(a, b):
    return op("mul", a, b)


def buf(name: str, shape, dtype: str = "float32", **kw) -> tir.Buffer:
    return tir.Buffer(name, [E(d) for d in shape], dtype, **kw)


def load(b: tir.Buffer, *idx) -> tir.BufferLoad:
    return tir.BufferLoad(b, [E(i) for i in idx])


def store(b: tir.Buffer, value, *idx) -> tir.BufferStore:
    return tir.BufferStore(b, E(value, b.dtype), [E(i) for i in idx])


def call(dtype: str, name: str, *args) -> tir.Call:
    return tir.Call(dtype, name, [E(a) for a in args])


def loops(vars_, extents, body, kind: str = "serial") -> tir.Stmt:
    """Nested serial loops `for v in range(extent)`, outermost first."""
    for v, n in reversed(list(zip(vars_, extents))):
        body = tir.For(v, E(0), E(n), kind, body)
    return body


def block(name: str, iters, body, init=None, predicate=None, alloc=(), reads=(), writes=()) -> tir.SBlockRealize:
    """iters: (block var, bound value, "S" or "R", extent) per iterator."""
    ivs = [tir.IterVar(v, tir.Range(E(0), E(n)), tir.COMM_REDUCE if k == "R" else tir.DATA_PAR)
           for v, _, k, n in iters]
    blk = tir.SBlock(name, ivs, reads, writes, body, init=init, alloc_buffers=alloc)
    return tir.SBlockRealize([E(val) for _, val, _, _ in iters], predicate or TRUE, blk)


def prim_func(params, body, name: str = "main") -> tir.PrimFunc:
    """params: Buffers (become handle params in buffer_map) and scalar Vars."""
    handles, bmap = [], []
    for p in params:
        if isinstance(p, tir.Buffer):
            h = tir.Var(p.name.lower() + "_handle", "handle")
            handles.append(h)
            bmap.append((h, p))
        else:
            handles.append(p)
    func = tir.PrimFunc(handles, body, buffer_map=bmap, attrs=[("global_symbol", name)])
    verify_prim_func(func)  # every function these tests run is well formed
    return func


def f32(*shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def scalar_func(expr_fn, params, out_dtype: str):
    """A function of scalar params storing one expression into out[0]."""
    out = buf("out", [1], out_dtype)
    return prim_func([*params, out], store(out, expr_fn(*params), 0)), out_dtype


def run_scalar(func_dtype, *args):
    func, dtype = func_dtype
    out = np.zeros(1, dtype)
    run_prim_func(func, [*args, out])
    return out[0]


def matmul_func(n: int = 64, dtype: str = "float32") -> tir.PrimFunc:
    A, B, C = buf("A", [n, n], dtype), buf("B", [n, n], dtype), buf("C", [n, n], dtype)
    i, j, k, vi, vj, vk = (V(x) for x in ("i", "j", "k", "vi", "vj", "vk"))
    body = store(C, add(load(C, vi, vj), mul(load(A, vi, vk), load(B, vk, vj))), vi, vj)
    init = store(C, E(0.0, dtype), vi, vj)
    realize = block("C", [(vi, i, "S", n), (vj, j, "S", n), (vk, k, "R", n)], body, init=init)
    return prim_func([A, B, C], loops([i, j, k], [n, n, n], realize), "matmul")


# ----------------------------------------------------------------------------- kernels


def test_elementwise_add():
    A, B, C = buf("A", [4, 5]), buf("B", [4, 5]), buf("C", [4, 5])
    i, j = V("i"), V("j")
    f = prim_func([A, B, C], loops([i, j], [4, 5], store(C, add(load(A, i, j), load(B, i, j)), i, j)))
    a, b, c = f32(4, 5), f32(4, 5, seed=1), np.zeros((4, 5), "float32")
    assert run_prim_func(f, [a, b, c]) is None
    np.testing.assert_array_equal(c, a + b)


def test_row_sum_with_init():
    A, B = buf("A", [3, 7]), buf("B", [3])
    i, k, vi, vk = V("i"), V("k"), V("vi"), V("vk")
    body = store(B, add(load(B, vi), load(A, vi, vk)), vi)
    f = prim_func([A, B], loops([i, k], [3, 7], block("B", [(vi, i, "S", 3), (vk, k, "R", 7)], body,
                                                      init=store(B, 0.0, vi))))
    a, b = f32(3, 7), np.full(3, 99, "float32")  # init overwrites the garbage
    run_prim_func(f, [a, b])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-6)


def test_init_runs_at_the_minimum_of_the_reduction_domain():
    A, B = buf("A", [8]), buf("B", [1])
    k, vk = V("k"), V("vk")
    iv = tir.IterVar(vk, tir.Range(E(2), E(6)), tir.COMM_REDUCE)
    blk = tir.SBlock("S", [iv], [], [], store(B, add(load(B, 0), load(A, vk)), 0), init=store(B, 0.0, 0))
    body = tir.For(k, E(2), E(6), "serial", tir.SBlockRealize([k], TRUE, blk))
    a, b = np.arange(8, dtype="float32"), np.full(1, 50, "float32")
    run_prim_func(prim_func([A, B], body), [a, b])
    assert b[0] == a[2:].sum()


def test_matmul_matches_numpy_and_is_compiled_once():
    f = matmul_func(64)
    a, b, c = f32(64, 64), f32(64, 64, seed=1), np.full((64, 64), 7, "float32")
    run_prim_func(f, [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert c.dtype == np.float32
    assert prim_func_source(f) is prim_func_source(f)  # cached per function
    assert "for v_k in range(64):" in prim_func_source(f)


def test_symbolic_shape_relu():
    n = V("n")
    A, B = buf("A", [n]), buf("B", [n])
    i = V("i")
    body = tir.For(i, E(0), n, "serial", store(B, op("max", load(A, i), 0.0), i))
    f = prim_func([A, B], body)
    for size in (5, 17):
        a, b = f32(size), np.zeros(size, "float32")
        run_prim_func(f, [a, b])
        np.testing.assert_array_equal(b, np.maximum(a, 0))
    with pytest.raises(InterpreterError, match=r"buffer `B`, dimension 0: expected 5, got 6"):
        run_prim_func(f, [f32(5), np.zeros(6, "float32")])


def test_shape_variable_is_also_a_scalar_parameter():
    n, i = V("n"), V("i")
    A = buf("A", [n])
    f = prim_func([n, A], tir.For(i, E(0), n, "serial", store(A, tir.Cast("float32", i), i)))
    a = np.zeros(4, "float32")
    run_prim_func(f, [4, a])
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    with pytest.raises(InterpreterError, match="dimension 0: expected 3, got 4"):
        run_prim_func(f, [3, a])


def test_if_then_else_padding_is_lazy():
    A, P = buf("A", [4, 4]), buf("P", [6, 6])
    i, j, vi, vj = V("i"), V("j"), V("vi"), V("vj")
    inside = op("and", op("and", op("le", 1, vi), op("lt", vi, 5)), op("and", op("le", 1, vj), op("lt", vj, 5)))
    value = call("float32", "tirx.if_then_else", inside, load(A, sub(vi, 1), sub(vj, 1)), 0.0)
    f = prim_func([A, P], loops([i, j], [6, 6], block("pad", [(vi, i, "S", 6), (vj, j, "S", 6)],
                                                      store(P, value, vi, vj))))
    a, p = f32(4, 4), np.full((6, 6), 5, "float32")
    run_prim_func(f, [a, p])  # A[-1, -1] would be out of bounds: only the chosen branch runs
    np.testing.assert_array_equal(p, np.pad(a, 1))


def test_negative_index_is_an_error_not_a_wraparound():
    A, B = buf("A", [4]), buf("B", [4])
    i = V("i")
    f = prim_func([A, B], tir.For(i, E(0), E(4), "serial", store(B, load(A, sub(i, 1)), i)))
    with pytest.raises(InterpreterError, match="negative index -1 into buffer `A`"):
        run_prim_func(f, [f32(4), np.zeros(4, "float32")])


def test_index_past_the_end_is_an_error():
    A, B = buf("A", [4]), buf("B", [4])
    i = V("i")
    f = prim_func([A, B], tir.For(i, E(0), E(4), "serial", store(B, load(A, add(i, 1)), i)), "shift")
    with pytest.raises(InterpreterError, match=r"in `shift`, loop `i`.*out-of-bounds.*index 4"):
        run_prim_func(f, [f32(4), np.zeros(4, "float32")])


def test_let_stmt_and_let_expr():
    A, B = buf("A", [8]), buf("B", [4])
    i, x, y = V("i"), V("x"), V("y")
    inner = tir.Let(y, add(x, 1), add(load(A, x), load(A, y)))  # A[2i] + A[2i + 1]
    f = prim_func([A, B], tir.For(i, E(0), E(4), "serial", tir.LetStmt(x, mul(i, 2), store(B, inner, i))))
    a, b = f32(8), np.zeros(4, "float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, a[0::2] + a[1::2])


def test_select():
    A, B = buf("A", [6]), buf("B", [6])
    i = V("i")
    value = tir.Select(op("lt", load(A, i), 0.0), mul(load(A, i), 0.5), load(A, i))
    f = prim_func([A, B], tir.For(i, E(0), E(6), "serial", store(B, value, i)))
    a, b = f32(6), np.zeros(6, "float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, np.where(a < 0, a * np.float32(0.5), a))


@pytest.mark.parametrize("a", [7, -7, 6, -6, 0, 2**31 - 1, -(2**31)])
@pytest.mark.parametrize("b", [2, -2, 3, -3, 1, -1])
def test_integer_division_semantics(a, b):
    x, y = V("x"), V("y")
    results = {}
    for name in ("floordiv", "floormod", "truncdiv", "truncmod", "div"):
        results[name] = int(run_scalar(scalar_func(lambda x, y, n=name: op(n, x, y), [x, y], "int32"), a, b))

    def wrap(v):
        return (v + 2**31) % 2**32 - 2**31

    trunc_q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    assert results["floordiv"] == wrap(a // b)
    assert results["floormod"] == a % b
    assert results["truncdiv"] == results["div"] == wrap(trunc_q)
    assert results["truncmod"] == int(math.fmod(a, b))


def test_division_by_zero_is_an_error():
    x, y = V("x"), V("y")
    f = scalar_func(lambda x, y: op("floordiv", x, y), [x, y], "int32")
    with pytest.raises(InterpreterError, match="division by zero"):
        run_scalar(f, 1, 0)


def test_int32_arithmetic_wraps():
    x, y = V("x"), V("y")
    assert run_scalar(scalar_func(lambda x, y: add(x, y), [x, y], "int32"), 2**31 - 1, 1) == -(2**31)
    assert run_scalar(scalar_func(lambda x, y: mul(x, y), [x, y], "int32"), 2**30, 4) == 0
    assert run_scalar(scalar_func(lambda x, y: sub(x, y), [x, y], "int32"), -(2**31), 1) == 2**31 - 1
    # wrapping happens before a comparison sees the value
    assert run_scalar(scalar_func(lambda x, y: tir.Cast("int32", op("lt", add(x, y), 0)), [x, y], "int32"),
                      2**31 - 1, 1) == 1
    # int8 wraps at 8 bits; a cast narrows with wrap-around
    a, b = V("a", "int8"), V("b", "int8")
    assert run_scalar(scalar_func(lambda a, b: mul(a, b), [a, b], "int8"), 100, 3) == np.int8(44)
    w = V("w", "int64")
    assert run_scalar(scalar_func(lambda w: tir.Cast("int32", w), [w], "int32"), 2**32 + 5) == 5
    u = V("u", "uint8")
    assert run_scalar(scalar_func(lambda u: sub(u, 1), [u], "uint8"), 0) == 255


def test_float32_arithmetic_rounds_as_float32():
    x, y = V("x", "float32"), V("y", "float32")
    f = scalar_func(lambda x, y: add(x, y), [x, y], "float32")
    assert run_scalar(f, 16777216.0, 1.0) == 16777216.0  # 2**24 + 1 is not a float32
    assert run_scalar(f, 1.0, 1e-8) == 1.0
    g = prim_func([x, y], tir.Return(add(mul(x, y), x)))
    r = run_prim_func(g, [0.1, 3.0])
    assert isinstance(r, np.float32)
    assert r == np.float32(0.1) * np.float32(3.0) + np.float32(0.1)
    d = V("d", "float64")
    assert run_prim_func(prim_func([d], tir.Return(add(d, E(1e-8, "float64")))), [1.0]) == 1.0 + 1e-8


def test_casts():
    x = V("x", "float32")
    to_int = scalar_func(lambda x: tir.Cast("int32", x), [x], "int32")
    assert run_scalar(to_int, 2.7) == 2 and run_scalar(to_int, -2.7) == -2  # truncation toward zero
    i = V("i")
    assert run_scalar(scalar_func(lambda i: tir.Cast("float32", i), [i], "float32"), 16777217) == 16777216.0
    assert run_scalar(scalar_func(lambda i: tir.Cast("float16", i), [i], "float16"), 2049) == 2048
    assert run_scalar(scalar_func(lambda i: tir.Cast("bool", i), [i], "bool"), 3)


def test_predicate_skips_the_block():
    B = buf("B", [8])
    i, vi = V("i"), V("vi")
    realize = block("B", [(vi, i, "S", 8)], store(B, 1.0, vi), predicate=op("lt", i, 5))
    b = np.zeros(8, "float32")
    run_prim_func(prim_func([B], tir.For(i, E(0), E(8), "serial", realize)), [b])
    np.testing.assert_array_equal(b, [1, 1, 1, 1, 1, 0, 0, 0])


def test_alloc_buffers_hold_an_intermediate():
    A, C = buf("A", [4]), buf("C", [4])
    T = buf("T", [4])
    i, j, vi, vj = V("i"), V("j"), V("vi"), V("vj")
    produce = tir.For(i, E(0), E(4), "serial", block("T", [(vi, i, "S", 4)], store(T, mul(load(A, vi), 2.0), vi)))
    consume = tir.For(j, E(0), E(4), "serial", block("C", [(vj, j, "S", 4)], store(C, add(load(T, vj), 1.0), vj)))
    root = tir.SBlockRealize([], TRUE, tir.SBlock("root", [], [], [], tir.seq([produce, consume]), alloc_buffers=[T]))
    a, c = f32(4), np.zeros(4, "float32")
    run_prim_func(prim_func([A, C], root), [a, c])
    np.testing.assert_array_equal(c, a * np.float32(2) + np.float32(1))


def test_return_value():
    n, i, acc = V("n"), V("i"), V("acc")
    A = buf("A", [n], "int32")
    # while-loop search: the first index holding a negative value, or -1
    body = tir.seq([
        tir.For(i, E(0), n, "serial", tir.IfThenElse(op("lt", load(A, i), 0), tir.Return(i))),
        tir.Return(E(-1)),
    ])
    f = prim_func([A], body)
    assert run_prim_func(f, [np.array([3, 4, -1, -5], "int32")]) == 2
    assert run_prim_func(f, [np.array([3, 4], "int32")]) == -1
    g = prim_func([acc], tir.Return(op("max", acc, 0)))
    assert run_prim_func(g, [-4]) == 0


def test_while_and_assert():
    x, out = V("x"), buf("out", [1], "int32")
    k = buf("k", [1], "int32")  # collatz steps of x
    step = tir.IfThenElse(op("eq", op("floormod", load(k, 0), 2), 0),
                          store(k, op("floordiv", load(k, 0), 2), 0),
                          store(k, add(mul(load(k, 0), 3), 1), 0))
    body = tir.AssertStmt(op("gt", x, 0), "ValueError", [tir.StringImm("x must be positive")], tir.seq([
        store(k, x, 0), store(out, 0, 0),
        tir.While(op("ne", load(k, 0), 1), tir.seq([step, store(out, add(load(out, 0), 1), 0)])),
    ]))
    f = prim_func([x, out, k], body)
    o = np.zeros(1, "int32")
    run_prim_func(f, [27, o, np.zeros(1, "int32")])
    assert o[0] == 111
    with pytest.raises(InterpreterError, match="ValueError: x must be positive"):
        run_prim_func(f, [0, o, np.zeros(1, "int32")])


@pytest.mark.parametrize("name,ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
    ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("erf", np.vectorize(math.erf)),
    ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc), ("fabs", np.abs),
    ("round", np.rint),  # TVM lowers tirx.round to llvm.nearbyint: halves to even
    ("nearbyint", np.rint),  # halves to even
    ("exp2", np.exp2), ("log2", np.log2), ("log10", np.log10), ("sin", np.sin), ("cos", np.cos),
    ("tan", np.tan),
])
def test_float_intrinsics(name, ref):
    A, B = buf("A", [9]), buf("B", [9])
    i = V("i")
    f = prim_func([A, B], tir.For(i, E(0), E(9), "serial", store(B, call("float32", "tirx." + name, load(A, i)), i)))
    a = np.array([0.5, 1.5, 2.5, -0.5, 0.1, 3.0, 7.25, 0.75, 1e-3], "float32")
    if name in ("log", "sqrt", "rsqrt", "log2", "log10"):
        a = np.abs(a)
    b = np.zeros(9, "float32")
    run_prim_func(f, [a, b])
    np.testing.assert_allclose(b, ref(a.astype("float64")).astype("float32"), rtol=2e-6, atol=1e-7)
    assert b.dtype == np.float32


def test_binary_intrinsics_and_predicates():
    x, y = V("x", "float32"), V("y", "float32")
    assert run_scalar(scalar_func(lambda x, y: call("float32", "tirx.pow", x, y), [x, y], "float32"), 2.0, 10.0) == 1024
    assert run_scalar(scalar_func(lambda x, y: call("float32", "tirx.fmod", x, y), [x, y], "float32"), -7.0, 3.0) == -1
    assert run_scalar(scalar_func(lambda x: call("bool", "tirx.isnan", x), [x], "bool"), float("nan"))
    assert run_scalar(scalar_func(lambda x: call("bool", "tirx.isinf", x), [x], "bool"), float("-inf"))
    assert run_scalar(scalar_func(lambda x: call("float32", "tirx.likely", x), [x], "float32"), 2.5) == 2.5
    i = V("i")
    assert run_scalar(scalar_func(lambda i: call("int32", "tirx.abs", i), [i], "int32"), -5) == 5
    assert run_scalar(scalar_func(lambda i: add(call("int32", "tirx.max_value", i), i), [i], "int32"), 1) == -(2**31)
    fmin = scalar_func(lambda x: call("float32", "tirx.min_value", x), [x], "float32")
    assert run_scalar(fmin, 0.0) == np.finfo(np.float32).min
    bits = scalar_func(lambda x: call("int32", "tirx.reinterpret", x), [x], "int32")
    assert run_scalar(bits, 1.0) == 0x3F800000


def test_float_floordiv_and_floormod():
    x, y = V("x", "float32"), V("y", "float32")
    assert run_scalar(scalar_func(lambda x, y: op("floordiv", x, y), [x, y], "float32"), -7.0, 2.0) == -4
    assert run_scalar(scalar_func(lambda x, y: op("floormod", x, y), [x, y], "float32"), -7.0, 2.0) == 1
    assert run_scalar(scalar_func(lambda x, y: op("div", x, y), [x, y], "float32"), 1.0, 0.0) == np.inf


def test_unknown_intrinsic_is_named():
    A = buf("A", [1])
    f = prim_func([A], store(A, call("float32", "tirx.frobnicate", load(A, 0)), 0))
    with pytest.raises(InterpreterError, match="unknown TIR intrinsic `tirx.frobnicate`"):
        run_prim_func(f, [np.zeros(1, "float32")])


def test_all_loop_kinds_run_serially():
    A = buf("A", [4, 4], "int32")
    i, j = V("i"), V("j")
    body = tir.For(i, E(0), E(4), "parallel",
                   tir.For(j, E(0), E(4), "vectorized", store(A, add(mul(i, 4), j), i, j)))
    body = tir.AttrStmt(E(0), "pragma_auto_unroll_max_step", E(16), body)
    a = np.zeros((4, 4), "int32")
    run_prim_func(prim_func([A], body), [a])
    np.testing.assert_array_equal(a, np.arange(16).reshape(4, 4))


def test_allocate_and_decl_buffer_alias_storage():
    A, B = buf("A", [2, 3]), buf("B", [6])
    data = tir.Var("tmp", "handle", tir.PointerType("float32"))
    T2 = buf("T2", [2, 3], data=data)  # the same storage seen as 2-D and as 1-D
    T1 = buf("T1", [6], data=data)
    i, j, k = V("i"), V("j"), V("k")
    fill = loops([i, j], [2, 3], store(T2, mul(load(A, i, j), 10.0), i, j))
    copy = tir.For(k, E(0), E(6), "serial", store(B, load(T1, k), k))
    body = tir.Allocate(data, "float32", [E(6)], TRUE, tir.DeclBuffer(T2, tir.DeclBuffer(T1, tir.seq([fill, copy]))))
    a, b = f32(2, 3), np.zeros(6, "float32")
    run_prim_func(prim_func([A, B], body), [a, b])
    np.testing.assert_array_equal(b, (a * np.float32(10)).reshape(-1))


def test_decl_buffer_of_new_memory_and_a_flat_view_of_a_parameter():
    A = buf("A", [2, 3])
    flat = buf("A_flat", [6], data=A.data)
    S = buf("S", [1])
    k = V("k")
    body = tir.DeclBuffer(flat, tir.DeclBuffer(S, tir.seq([
        tir.For(k, E(0), E(6), "serial", store(S, add(load(S, 0), load(flat, k)), 0)),
        store(flat, load(S, 0), 5),
    ])))
    a = np.arange(6, dtype="float32").reshape(2, 3)
    run_prim_func(prim_func([A], body), [a])
    assert a[1, 2] == 15


def test_explicit_strides_are_honoured():
    A = buf("A", [3, 2])
    data = tir.Var("st", "handle", tir.PointerType("float32"))
    T = buf("T", [2, 3], data=data, strides=[E(1), E(2)])  # T[i, j] is storage[i + 2 j]: a transposed view
    L = buf("L", [6], data=data)
    i, j, k = V("i"), V("j"), V("k")
    body = tir.Allocate(data, "float32", [E(6)], TRUE, tir.DeclBuffer(T, tir.DeclBuffer(L, tir.seq([
        tir.For(k, E(0), E(6), "serial", store(L, tir.Cast("float32", k), k)),
        loops([i, j], [3, 2], store(A, load(T, j, i), i, j)),
    ]))))
    a = np.zeros((3, 2), "float32")
    run_prim_func(prim_func([A], body), [a])
    np.testing.assert_array_equal(a, np.arange(6, dtype="float32").reshape(3, 2))


def test_symbolic_strides_of_a_parameter_are_bound():
    s0, n = V("s0"), V("n")
    A = buf("A", [n, 2], strides=[s0, E(1)])
    O = buf("O", [1], "int32")
    f = prim_func([A, O], store(O, s0, 0))
    o = np.zeros(1, "int32")
    base = np.zeros((4, 5), "float32")
    run_prim_func(f, [base[:, 1:3], o])  # a non-contiguous view: row stride 5
    assert o[0] == 5


def test_match_buffer_views_a_region():
    A = buf("A", [4, 8])
    i, vi = V("i"), V("vi")
    row = buf("row", [8])
    j = V("j")
    region = tir.BufferRegion(A, [tir.Range(vi, E(1)), tir.Range(E(0), E(8))])
    inner = tir.For(j, E(0), E(8), "serial", store(row, add(load(row, j), 1.0), j))
    blk = tir.SBlock("rows", [tir.IterVar(vi, tir.Range(E(0), E(4)), tir.DATA_PAR)], [], [], inner,
                     match_buffers=[tir.MatchBufferRegion(row, region)])
    f = prim_func([A], tir.For(i, E(0), E(4), "serial", tir.SBlockRealize([i], TRUE, blk)))
    a = np.zeros((4, 8), "float32")
    run_prim_func(f, [a])
    np.testing.assert_array_equal(a, np.ones((4, 8)))


def test_vector_ramp_and_broadcast():
    A, B = buf("A", [8]), buf("B", [8])
    i = V("i")
    idx = tir.Ramp(mul(i, 4), E(1), 4)
    value = tir.BinOp("mul", tir.BufferLoad(A, [idx]), tir.Broadcast(E(2.0), 4))
    f = prim_func([A, B], tir.For(i, E(0), E(2), "serial", tir.BufferStore(B, value, [idx])))
    a, b = f32(8), np.zeros(8, "float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, a * np.float32(2))


def test_bool_buffers_and_not():
    A, B = buf("A", [3], "bool"), buf("B", [3], "bool")
    i = V("i")
    f = prim_func([A, B], tir.For(i, E(0), E(3), "serial", store(B, tir.Not(load(A, i)), i)))
    b = np.zeros(3, bool)
    run_prim_func(f, [np.array([True, False, True]), b])
    np.testing.assert_array_equal(b, [False, True, False])


def test_deep_loop_nests_and_deep_expressions():
    A = buf("A", [1], "int32")
    vs = [V(f"i{d}") for d in range(24)]  # deeper than CPython's 20 nested blocks
    f = prim_func([A], loops(vs, [2] * 3 + [1] * 21, store(A, add(load(A, 0), 1), 0)))
    a = np.zeros(1, "int32")
    run_prim_func(f, [a])
    assert a[0] == 8
    assert "def _nest" in prim_func_source(f)
    x = V("x")
    e = x
    for _ in range(400):  # deeper than the parser's nesting limit
        e = add(e, 1)
    assert run_prim_func(prim_func([x], tir.Return(e)), [1]) == 401


def test_argument_checks():
    f = matmul_func(4)
    ok = np.zeros((4, 4), "float32")
    with pytest.raises(InterpreterError, match="number of arguments: expected 3, got 2"):
        run_prim_func(f, [ok, ok])
    with pytest.raises(InterpreterError, match="buffer `A` holds float32, the array is float64"):
        run_prim_func(f, [ok.astype("float64"), ok, ok])
    with pytest.raises(InterpreterError, match="buffer `B` has 2 dimensions"):
        run_prim_func(f, [ok, ok[0], ok])
    x = V("x")
    g = prim_func([x], tir.Return(x))
    with pytest.raises(InterpreterError, match="argument `x` must be an integer"):
        run_prim_func(g, [1.5])


def test_calls_another_prim_func_of_the_module():
    x = V("x")
    double = prim_func([x], tir.Return(mul(x, 2)), "double")
    y = V("y")
    main = prim_func([y], tir.Return(add(tir.Call("int32", "double", [y]), 1)))
    assert run_prim_func(main, [20], mod={"double": double}) == 41


def test_long_chains_need_no_recursion(default_recursion_limit):
    x = V("x")
    e = x
    for _ in range(3000):  # an unrolled reduction
        e = add(e, 1)
    body = tir.Return(e)
    lets = [V(f"l{d}") for d in range(1500)]  # lowered code nests thousands of LetStmts
    for v in reversed(lets):
        body = tir.LetStmt(v, add(x, 1), tir.AttrStmt(E(0), "pragma", E(0), body))
    assert run_prim_func(prim_func([x], body), [1]) == 3001


def test_integer_bit_intrinsics_and_min_max():
    x, y = V("x"), V("y")
    cases = [
        ("tirx.bitwise_and", 12, 10, 8), ("tirx.bitwise_or", 12, 10, 14), ("tirx.bitwise_xor", -1, 5, -6),
        ("tirx.shift_left", 1, 31, -(2**31)), ("tirx.shift_right", -16, 2, -4),
    ]
    for name, a, b, expected in cases:
        assert run_scalar(scalar_func(lambda x, y, n=name: call("int32", n, x, y), [x, y], "int32"), a, b) == expected
    assert run_scalar(scalar_func(lambda x: call("int32", "tirx.bitwise_not", x), [x], "int32"), 0) == -1
    assert run_scalar(scalar_func(lambda x: call("int32", "tirx.popcount", x), [x], "int32"), -1) == 32
    assert run_scalar(scalar_func(lambda x: call("int32", "tirx.clz", x), [x], "int32"), 1) == 31
    assert run_scalar(scalar_func(lambda x, y: op("min", x, y), [x, y], "int32"), -3, 2) == -3
    assert run_scalar(scalar_func(lambda x, y: op("max", x, y), [x, y], "int32"), -3, 2) == 2


def test_vector_integer_arithmetic():
    O = buf("O", [4], "int32")
    idx = tir.Ramp(E(0), E(1), 4)
    values = tir.Ramp(E(-6), E(3), 4)  # -6, -3, 0, 3
    two = tir.Broadcast(E(2), 4)
    for name, ref in [("floordiv", lambda v: v // 2), ("floormod", lambda v: v % 2),
                      ("truncdiv", lambda v: np.trunc(v / 2)), ("min", lambda v: np.minimum(v, 2))]:
        o = np.zeros(4, "int32")
        run_prim_func(prim_func([O], tir.BufferStore(O, tir.BinOp(name, values, two), [idx])), [o])
        np.testing.assert_array_equal(o, ref(np.array([-6, -3, 0, 3])), err_msg=name)


def test_let_inside_a_conditional_branch_is_evaluated_lazily():
    A, B = buf("A", [4]), buf("B", [4])
    i, t = V("i"), V("t")
    guarded = call("float32", "tirx.if_then_else", op("gt", i, 0), tir.Let(t, sub(i, 1), load(A, t)), 0.0)
    f = prim_func([A, B], tir.For(i, E(0), E(4), "serial", store(B, guarded, i)))
    a, b = f32(4), np.zeros(4, "float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, [0, *a[:3]])
    assert ":= " in prim_func_source(f)  # the let became a walrus inside the branch


def test_an_undeclared_view_of_a_parameter():
    # after FlattenBuffer TVM uses `A_1 = T.Buffer((16,), data=A.data)` with no DeclBuffer
    A = buf("A", [4, 4])
    A_1 = buf("A_1", [16], data=A.data)
    k = V("k")
    f = prim_func([A], tir.For(k, E(0), E(16), "serial", store(A_1, tir.Cast("float32", k), k)))
    a = np.zeros((4, 4), "float32")
    run_prim_func(f, [a])
    np.testing.assert_array_equal(a, np.arange(16).reshape(4, 4))
    with pytest.raises(InterpreterError, match="buffer `A` is aliased by another buffer, so its array must be"):
        run_prim_func(f, [np.zeros((4, 4), "float32").T])


def test_decl_buffer_whose_data_is_an_expression():
    h = tir.Var("h", "handle")  # a raw handle parameter (here: a NumPy array)
    U = tir.Buffer("U", [E(4)], "float32", data=tir.Call("handle", "tirx.likely", [h]))
    a = np.zeros(4, "float32")
    run_prim_func(prim_func([h], tir.DeclBuffer(U, store(U, 5.0, 3))), [a])
    assert a[3] == 5


def test_call_of_another_prim_func_of_the_module():
    x, n = V("x"), V("n")
    inc = prim_func([x], tir.Return(add(x, 1)))
    main = prim_func([n], tir.Return(mul(call("int32", "inc", n), 2)))
    assert run_prim_func(main, [4], {"inc": inc}) == 10
    with pytest.raises(InterpreterError, match="unknown TIR intrinsic or function `inc`"):
        run_prim_func(main, [4], {})


def test_bitwise_not_of_unsigned_wraps():
    """~x of a uint8 is 255 - x (Python's ~ gives -x - 1, which must wrap when stored)."""
    A, B = buf("A", (3,), "uint8"), buf("B", (3,), "uint8")
    i = V("i")
    f = prim_func([A, B], loops([i], [3], store(B, tir.Call("uint8", "tirx.bitwise_not", [load(A, i)]), i)))
    a, b = np.array([0, 1, 200], "uint8"), np.zeros(3, "uint8")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, [255, 254, 55])
