"""Regression tests for gaps found comparing irtool with TVM 0.27: TVMScript forms TVM accepts
(positional attributes, `R.Tensor("float32", ndim=2)`, indexing a tuple literal), T.axis
dtypes, bitwise/shift operators (printed infix, parsed in both spellings), signed constants
in legalized int32/int64 arithmetic, and the Relax operators square, full_like, cumsum,
cumprod, sort, argsort, topk. The `tvm`-marked tests check the same inputs against TVM."""

from __future__ import annotations

import os
import subprocess
import textwrap

import numpy as np
import pytest

from irtool.diagnostics import DiagnosticError
from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.structural import structural_equal
from irtool.ops.relax import evaluate
from irtool.text import parse, to_text
from irtool.transform import get_pass

HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n# from tvm.script import relax as R\n\n"


def parse_script(text: str):
    return parse(textwrap.dedent(text).lstrip("\n"), "test.py")


def error_of(text: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        parse_script(text)
    return info.value.render()


def roundtrips(mod) -> bool:
    return structural_equal(parse(to_text(mod)), mod) and to_text(parse(to_text(mod))) == to_text(mod)


# ----------------------------------------------------------------------------- Relax parser forms

ASTYPE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor("float32", ndim=2)) -> R.Tensor(ndim=2, dtype="float16"):
        y = R.astype(x, "float16")
        z = (y,)[0]
        w = (x, y)[-1]
        return w
"""


def test_positional_dtype_and_tensor_dtype_first():
    mod = parse_script(ASTYPE)
    main = mod.functions["main"]
    assert main.params[0].struct_info.dtype == "float32" and main.params[0].struct_info.ndim == 2
    text = to_text(mod)
    assert 'def main(x: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor(dtype="float16", ndim=2):' in text
    assert 'R.astype(x, dtype="float16")' in text
    # a tuple literal is indexed as Python does: `z` and `w` are `y` itself
    assert 'z: R.Tensor(dtype="float16", ndim=2) = y\n' in text
    assert 'w: R.Tensor(dtype="float16", ndim=2) = y\n' in text
    assert roundtrips(mod)


def test_adaptive_pool_output_size_positional():
    """TVM's `R.nn.adaptive_avg_pool2d(data, output_size=None, layout, out_layout)` takes its
    attributes positionally too."""
    text = ASTYPE.replace('R.Tensor("float32", ndim=2)', 'R.Tensor((1, 4, 12, 12), "float32")').replace(
        'y = R.astype(x, "float16")', 'y = R.nn.adaptive_avg_pool2d(x, (6, 6), "NCHW")').replace(
        ' -> R.Tensor(ndim=2, dtype="float16")', '')
    printed = to_text(parse_script(text))
    assert 'y: R.Tensor((1, 4, 6, 6), dtype="float32") = R.nn.adaptive_avg_pool2d(x, output_size=[6, 6], ' \
        'layout="NCHW", out_layout="NCHW")' in printed


@pytest.mark.parametrize("call, message", [
    ('R.astype(x, "float16", 1)', "takes at most 2 positional arguments, got 3"),
    ('R.astype(x, "float16", dtype="int32")', "got attribute `dtype` twice"),
    ("(x,)[1]", "index 1 is out of range for a tuple of 1 fields"),
    ('R.Tensor("n")', "unknown data type `n`"),
])
def test_bad_forms_get_diagnostics(call, message):
    body = f"y: {call} = x" if call.startswith("R.Tensor") else f"y = {call}"
    err = error_of(f"""
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            {body}
            return y
    """)
    assert message in err and "test.py:" in err


# ----------------------------------------------------------------------------- T.axis dtypes

AXIS = """
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def f(A: T.Buffer((T.int64(4), T.int64(1)), "float32"), B: T.Buffer((T.int64(4), T.int64(1)), "float32")):
        for i, j in T.grid(T.int64(4), T.int64(1)):
            with T.sblock("b"):
                v = T.axis.spatial(T.int64(4), i)
                w = T.axis.spatial(1, j)
                B[v, w] = A[v, w]
"""


def _block_iters(func):
    found = []

    def visit(s):
        if isinstance(s, tir.SBlock) if hasattr(tir, "SBlock") else hasattr(s, "iter_vars"):
            found.extend(s.iter_vars)
        for name in ("body", "block"):
            child = getattr(s, name, None)
            if child is not None and not isinstance(child, tir.PrimExpr):
                visit(child)
    visit(func.body)
    return found


def test_axis_with_a_number_extent_is_int32():
    """TVM's ir_builder: a plain-number domain is an int32 Range and the variable is as wide
    as the domain (the int64 binding is kept as written), so `w` is not a remap."""
    mod = parse_script(AXIS)
    iters = _block_iters(mod.functions["f"])
    assert [(iv.var.dtype, iv.dom.extent.dtype) for iv in iters] == [("int64", "int64"), ("int32", "int32")]
    text = to_text(mod)
    assert "v = T.axis.spatial(T.int64(4), i)\n" in text and "w = T.axis.spatial(1, j)\n" in text
    assert roundtrips(mod)


def test_axis_dtype_keyword_widens():
    mod = parse_script(AXIS.replace("T.axis.spatial(1, j)", 'T.axis.spatial(1, j, dtype="int64")'))
    assert _block_iters(mod.functions["f"])[1].var.dtype == "int64"


# ----------------------------------------------------------------------------- bitwise operators

BITWISE = """
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32"), C: T.Buffer((4,), "uint8"), D: T.Buffer((4,), "int64")):
        for i in range(4):
            with T.sblock("b"):
                v = T.axis.spatial(4, i)
                B[v] = T.shift_left(A[v], 2) + T.shift_right(A[v] + 1, A[v] * 2)
                B[v] = T.bitwise_and(A[v] << 1, 7) | T.bitwise_not(A[v] ^ 3)
                B[v] = -(A[v] << 1) - ~(A[v] & 1)
                B[v] = (A[v] | 1) << (A[v] & 2) >> 3
                B[v] = ~~A[v] + (A[v] << 0) + T.LShift(A[v], 0) + T.BitwiseAnd(3, 1) + T.BitwiseNot(5)
                B[v] = T.shift_left(1, 2) + A[v] + ~5 + (3 & 4)
                C[v] = C[v] & T.uint8(15) | C[v] >> T.uint8(4) | ~T.uint8(5)
                D[v] = D[v] << T.int64(3) ^ D[v]
                B[v] = T.Cast("int32", A[v] < 3) & A[v]
                B[v] = A[v] & (A[v] | (A[v] ^ (A[v] << (A[v] >> 1))))
                B[v] = ((A[v] & 1) | 2) ^ 3
"""

# TVM 0.27's printout of BITWISE (checked by test_bitwise_prints_as_tvm)
BITWISE_BODY = """\
                B[v] = (A[v] << 2) + (A[v] + 1 >> A[v] * 2)
                B[v] = A[v] << 1 & 7 | ~(A[v] ^ 3)
                B[v] = (A[v] << 1) * -1 - ~(A[v] & 1)
                B[v] = (A[v] | 1) << (A[v] & 2) >> 3
                B[v] = ~~A[v] + A[v] + T.LShift(A[v], 0) + T.BitwiseAnd(3, 1) + T.BitwiseNot(5)
                B[v] = 4 + A[v] + -6
                C[v] = C[v] & T.uint8(15) | C[v] >> T.uint8(4) | ~T.uint8(5)
                D[v] = D[v] << T.int64(3) ^ D[v]
                B[v] = T.Cast("int32", A[v] < 3) & A[v]
                B[v] = A[v] & (A[v] | A[v] ^ A[v] << (A[v] >> 1))
                B[v] = (A[v] & 1 | 2) ^ 3
"""


def test_bitwise_operators_print_infix():
    mod = parse_script(BITWISE)
    assert BITWISE_BODY.rstrip("\n") in to_text(mod)
    assert roundtrips(mod)


def test_bitwise_folding_follows_tvm_operators():
    """int32/int64 constants fold and `x << 0` is x (TVM_INDEX_CONST_PROPAGATION); uint8
    constants and the node constructors (T.LShift, T.BitwiseAnd) do not fold."""
    from irtool.text.tvmscript.tir_expr import _bit_op

    a = tir.Var("a", "int32")
    assert _bit_op("shift_left", a, tir.IntImm(0, "int32")) is a
    assert _bit_op("bitwise_and", tir.IntImm(6, "int64"), tir.IntImm(3, "int64")).value == 2
    kept = _bit_op("bitwise_and", tir.IntImm(6, "uint8"), tir.IntImm(3, "uint8"))
    assert isinstance(kept, tir.Call) and kept.op == "tirx.bitwise_and"
    assert isinstance(_bit_op("shift_left", a, tir.IntImm(0, "int32"), fold=False), tir.Call)
    with pytest.raises(TypeError, match="integer operands"):
        _bit_op("shift_left", tir.Var("f", "float32"), 1)
    with pytest.raises(TypeError, match="shift amount 40"):
        _bit_op("shift_left", a, 40)


def test_bitwise_calls_print_infix_with_tvm_precedence():
    """Built (not parsed) calls: precedence between |, ^, &, shifts, + and unary ~ (the texts are
    TVM 0.27's printouts of the same nodes)."""
    from irtool.ir.module import IRModule

    a = tir.Var("a", "int32")
    c = lambda op, *args: tir.Call("int32", f"tirx.{op}", list(args))  # noqa: E731
    one = tir.IntImm(1, "int32")
    cases = [
        (c("bitwise_and", a, c("bitwise_and", a, a)), "a & (a & a)"),
        (c("bitwise_and", c("bitwise_and", a, a), a), "a & a & a"),
        (c("shift_left", a, c("shift_left", a, a)), "a << (a << a)"),
        (c("bitwise_xor", c("shift_right", a, one), tir.BinOp("add", a, one)), "a >> 1 ^ a + 1"),
        (c("bitwise_not", tir.BinOp("mul", a, tir.IntImm(-1, "int32"))), "~(a * -1)"),
        (tir.BinOp("mul", c("bitwise_not", a), tir.IntImm(2, "int32")), "~a * 2"),
        (c("shift_left", tir.IntImm(3, "int32"), one), "T.LShift(3, 1)"),
        (c("bitwise_not", tir.IntImm(-5, "int32")), "T.BitwiseNot(-5)"),
    ]
    for expr, text in cases:
        func = tir.PrimFunc([a], tir.Evaluate(expr))
        printed = to_text(IRModule({"f": func}))
        last = printed.rsplit("\n", 1)[1].strip()
        assert last in (text, f"T.evaluate({text})"), printed


def test_unary_minus_is_times_minus_one():
    mod = parse_script("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            for i in range(4):
                A[i] = -A[i]
    """)
    assert "A[i] = A[i] * -1" in to_text(mod)
    err = error_of("""
        @T.prim_func
        def f(A: T.Buffer((4,), "uint8")):
            for i in range(4):
                A[i] = -A[i]
    """)
    assert "cannot negate a uint8 value" in err


# ----------------------------------------------------------------------------- signed constants


def test_simplify_moves_the_sign_of_a_constant_into_the_operator():
    from codegen.simplify import simplify

    def show(e):
        return f"({show(e.a)} {e.op} {show(e.b)})" if isinstance(e, tir.BinOp) else str(getattr(e, "value", "x"))

    for dtype in ("int32", "int64"):
        x = tir.Var("x", dtype)
        c = lambda v, dtype=dtype: tir.IntImm(v, dtype)  # noqa: E731
        cases = {("sub", x, c(-2)): "(x add 2)", ("add", x, c(-2)): "(x sub 2)", ("add", c(-2), x): "(x sub 2)",
                 ("add", c(2), x): "(x add 2)", ("sub", c(-2), x): "((0 sub x) sub 2)", ("sub", c(2), x): "(2 sub x)",
                 ("sub", c(0), x): "(0 sub x)"}
        for (op, a, b), want in cases.items():
            assert show(simplify(tir.BinOp(op, a, b))) == want, (dtype, op, want)
    x8 = tir.Var("x", "int8")
    assert show(simplify(tir.BinOp("sub", x8, tir.IntImm(-2, "int8")))) == "(x sub -2)"  # TVM: not for int8


SUBTRACT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="int32"), y: R.Tensor((2, 3), dtype="int64"), z: R.Tensor((2, 3), dtype="float32"), w: R.Tensor((2, 3), dtype="int8")) -> R.Tuple(R.Tensor((2, 3), dtype="int32"), R.Tensor((2, 3), dtype="int64"), R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="int8"), R.Tensor((2, 3), dtype="int32"), R.Tensor((2, 3), dtype="int32"), R.Tensor((2, 3), dtype="int64")):
        a = R.subtract(x, R.const(-2, "int32"))
        b = R.subtract(y, R.const(-3, "int64"))
        c = R.subtract(z, R.const(-1.5, "float32"))
        d = R.subtract(w, R.const(-4, "int8"))
        e = R.subtract(x, R.const(5, "int32"))
        f = R.subtract(R.const(-2, "int32"), x)
        g = R.add(R.const(-7, "int64"), y)
        return (a, b, c, d, e, f, g)
"""


def legalize(mod):
    return get_pass("legalize-ops")()(mod)


def test_legalized_subtract_of_a_negative_constant():
    text = to_text(legalize(parse_script(SUBTRACT)))
    for line in ("T_subtract[v_ax0, v_ax1] = x[v_ax0, v_ax1] + 2", "T_subtract[v_ax0, v_ax1] = y[v_ax0, v_ax1] + T.int64(3)",
                 "T_subtract[v_ax0, v_ax1] = 0 - x[v_ax0, v_ax1] - 2", "T_add[v_ax0, v_ax1] = y[v_ax0, v_ax1] - T.int64(7)",
                 "T_subtract[v_ax0, v_ax1] = w[v_ax0, v_ax1] - T.int8(-4)"):
        assert line in text, line


def test_legalized_signed_constants_compute_the_same():
    mod = parse_script(SUBTRACT)
    rng = np.random.default_rng(1)
    inputs = [rng.integers(-50, 50, (2, 3)).astype(d) for d in ("int32", "int64")] + \
        [rng.standard_normal((2, 3)).astype("float32"), rng.integers(-50, 50, (2, 3)).astype("int8")]
    for got, want in zip(run_relax(legalize(mod), inputs), run_relax(mod, inputs)):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- new Relax operators

OPS = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), xi: R.Tensor((2, 3), dtype="int32"), v: R.Tensor((), dtype="float32")):
        with R.dataflow():
            lv = R.square(x)
            lv1 = R.square(xi)
            lv2 = R.full_like(x, v)
            lv3 = R.full_like(x, v, "int32")
            lv4 = R.cumsum(x)
            lv5 = R.cumsum(x, 1, "float64", True)
            lv6 = R.cumsum(xi)
            lv7 = R.cumprod(x, axis=0)
            lv8 = R.sort(x)
            lv9 = R.sort(x, 0, True)
            lv10 = R.argsort(x)
            lv11 = R.argsort(x, 0, True, "int64")
            lv12 = R.topk(x)
            lv13 = R.topk(x, 2, 0, "values", False, "int64")
            lv14 = R.topk(x, 2, 1, "indices")
            lv15 = R.argsort(x, dtype=None)
            gv = (lv, lv1, lv2, lv3, lv4, lv5, lv6, lv7, lv8, lv9, lv10, lv11, lv12, lv13, lv14, lv15)
            R.output(gv)
        return gv
"""

SYMBOLIC_OPS = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), y: R.Tensor(("n", "m"), dtype="int32"), z: R.Tensor(dtype="float32", ndim=2), w: R.Tensor((2, "m"), dtype="float32"), v: R.Tensor((), dtype="float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            a = R.cumsum(x)
            b = R.cumsum(y)
            c = R.cumsum(w)
            d = R.cumsum(x, axis=0)
            e = R.topk(x, 2, 0)
            f = R.topk(y, 5, 1, "values")
            g = R.sort(z)
            h = R.argsort(y, dtype="int64")
            i = R.full_like(y, v)
            j = R.square(x)
            k = R.topk(x, 5, 1, "values")
            l = R.topk(z, 2, 1, "indices")
            gv = (a, b, c, d, e, f, g, h, i, j, k, l)
            R.output(gv)
        return gv
"""

# TVM 0.27's struct info of OPS and SYMBOLIC_OPS (checked by test_new_ops_print_as_tvm)
OPS_SINFO = [
    'lv: R.Tensor((2, 3), dtype="float32") = R.square(x)',
    'lv1: R.Tensor((2, 3), dtype="int32") = R.square(xi)',
    'lv2: R.Tensor((2, 3), dtype="float32") = R.full_like(x, v, dtype=None)',
    'lv3: R.Tensor((2, 3), dtype="int32") = R.full_like(x, v, dtype="int32")',
    'lv4: R.Tensor((6,), dtype="float32") = R.cumsum(x, axis=None, dtype=None, exclusive=False)',
    'lv5: R.Tensor((2, 3), dtype="float64") = R.cumsum(x, axis=1, dtype="float64", exclusive=True)',
    'lv7: R.Tensor((2, 3), dtype="float32") = R.cumprod(x, axis=0, dtype=None, exclusive=False)',
    'lv9: R.Tensor((2, 3), dtype="float32") = R.sort(x, axis=0, descending=True)',
    'lv11: R.Tensor((2, 3), dtype="int64") = R.argsort(x, axis=0, descending=True, dtype="int64")',
    'lv12: R.Tuple(R.Tensor((2, 1), dtype="float32"), R.Tensor((2, 1), dtype="int32")) = '
    'R.topk(x, k=1, axis=-1, ret_type="both", largest=True, dtype="int32")',
    'lv13: R.Tensor((2, 3), dtype="float32") = R.topk(x, k=2, axis=0, ret_type="values", largest=False, dtype="int64")',
    'lv14: R.Tensor((2, 2), dtype="int32") = R.topk(x, k=2, axis=1, ret_type="indices", largest=True, dtype="int32")',
    'lv15: R.Tensor((2, 3), dtype="float32") = R.argsort(x, axis=-1, descending=False, dtype=None)',
]
SYMBOLIC_SINFO = [
    'a: R.Tensor((n * 3,), dtype="float32") = R.cumsum(x, axis=None, dtype=None, exclusive=False)',
    'b: R.Tensor((n * m,), dtype="int32") = R.cumsum(y, axis=None, dtype=None, exclusive=False)',
    'c: R.Tensor((2 * m,), dtype="float32") = R.cumsum(w, axis=None, dtype=None, exclusive=False)',
    'e: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="int32")) = R.topk(x, k=2, axis=0,',
    'f: R.Tensor((n, 5), dtype="int32") = R.topk(y, k=5, axis=1, ret_type="values"',
    'g: R.Tensor(dtype="float32", ndim=2) = R.sort(z, axis=-1, descending=False)',
    'k: R.Tensor((n, 3), dtype="float32") = R.topk(x, k=5, axis=1, ret_type="values"',
    'l: R.Tensor(dtype="int32", ndim=2) = R.topk(z, k=2, axis=1, ret_type="indices"',
]


@pytest.mark.parametrize("source, lines", [(OPS, OPS_SINFO), (SYMBOLIC_OPS, SYMBOLIC_SINFO)], ids=["static", "symbolic"])
def test_new_ops_struct_info(source, lines):
    mod = parse_script(source)
    text = to_text(mod)
    for line in lines:
        assert line in text, line
    assert roundtrips(mod)


@pytest.mark.parametrize("call, message", [
    ("R.full_like(x, x)", "0-d fill value"),
    ('R.topk(x, 1, 2)', "topk axis 2 is out of range"),
    ('R.topk(x, ret_type="all")', "ret_type must be one of both, values, indices"),
])
def test_new_ops_reject_bad_calls(call, message):
    err = error_of(f"""
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            y = {call}
            return y
    """)
    assert message in err


def test_references():
    x = np.array([[3, 1, 2, 1], [0, -1, 5, -1]], dtype="int32")
    np.testing.assert_array_equal(evaluate("relax.square", [x], None), x * x)
    np.testing.assert_array_equal(evaluate("relax.cumsum", [x], {"axis": 1, "exclusive": True}),
                                  [[0, 3, 4, 6], [0, 0, -1, 4]])
    np.testing.assert_array_equal(evaluate("relax.cumprod", [x], {"dtype": "int64"}),
                                  np.cumprod(x.reshape(-1)).astype("int64"))
    # stable in both directions: equal elements keep their order
    np.testing.assert_array_equal(evaluate("relax.argsort", [x], {"axis": 1}), [[1, 3, 2, 0], [1, 3, 0, 2]])
    np.testing.assert_array_equal(evaluate("relax.argsort", [x], {"axis": 1, "descending": True}),
                                  [[0, 2, 1, 3], [2, 0, 1, 3]])
    np.testing.assert_array_equal(evaluate("relax.sort", [x], {"descending": True}), [[3, 2, 1, 1], [5, 0, -1, -1]])
    values, indices = evaluate("relax.topk", [x], {"k": 2, "dtype": "int64"})
    np.testing.assert_array_equal(values, [[3, 2], [5, 0]])
    assert indices.dtype == np.int64 and indices.tolist() == [[0, 2], [2, 0]]
    smallest = evaluate("relax.topk", [x], {"k": 9, "ret_type": "values", "largest": False})
    np.testing.assert_array_equal(smallest, [[1, 1, 2, 3], [-1, -1, 0, 5]])
    full = evaluate("relax.full_like", [x, np.float32(2.5)], {"dtype": "float16"})
    assert full.dtype == np.float16 and full.shape == (2, 4) and (full == 2.5).all()


def test_new_ops_run_in_the_interpreter_and_legalize():
    mod = parse_script(OPS)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((2, 3)).astype("float32"), rng.integers(-5, 5, (2, 3)).astype("int32"),
              np.array(1.25, dtype="float32")]
    before = run_relax(mod, inputs)
    out = legalize(mod)
    calls = [b.value.op.name for blk in out.functions["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, rx.Call)]
    # TVM 0.27 legalizes square and full_like only; scans and sorts stay Relax calls
    assert calls.count("relax.call_tir") == 4 and "relax.cumsum" in calls and "relax.topk" in calls
    text = to_text(out)
    assert 'with T.sblock("T_multiply")' in text and "def tir_square(" in text and "def full(" in text
    after = run_relax(out, inputs)
    flat = lambda v: [w for x in v for w in flat(x)] if isinstance(v, tuple) else [v]  # noqa: E731
    for got, want in zip(flat(after), flat(before)):
        np.testing.assert_array_equal(got, want)


# Nested calls in a named binding's value: TVM's parser emits every binding through the
# function's BlockBuilder, which names each one `lv`/`gv` + a count (the named ones are then
# renamed), so nested calls are numbered around them (found in fuzz run 12).
NESTED_NAMES = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32"), c: R.Tensor((), "bool"), s: R.Shape(["n"])):
        n = T.int64()
        y = R.match_cast(R.exp(x), R.Tensor((3,), "float32"))
        if c:
            a = R.add(R.exp(x), R.exp(y))
            r = R.add(R.exp(a), a)
        else:
            r = R.multiply(R.exp(x), x)
        z = R.add(R.exp(r), R.exp(y))
        with R.dataflow():
            lv = R.add(R.exp(z), R.exp(x))
            lv1 = (R.exp(lv), R.negative(R.exp(x)))
            R.output(lv, lv1)
        return R.add(R.exp(lv), R.exp(x))

    @R.function
    def second(x: R.Tensor((3,), "float32")):
        with R.dataflow():
            a = R.add(R.exp(x), R.exp(x))
            R.output(a)
        return a
"""


def test_nested_calls_are_named_as_tvm_names_them():
    mod = parse_script(NESTED_NAMES)
    names = {name: [b.var.name_hint for blk in fn.body.blocks for b in blk.bindings]
             for name, fn in mod.functions.items()}
    # the block outside: y is gv, r is gv8 (the branches' bindings are gv1..gv7), z gv11
    assert names["main"][:4] == ["y", "r", "gv9", "gv10"]
    assert names["main"][5:12] == ["lv", "lv1", "lv", "lv3", "lv4", "lv5", "lv1"]
    assert names["main"][12:] == ["gv12", "gv13", "gv14"]
    assert names["second"] == ["lv", "lv1", "a"]  # counted per function
    text = to_text(mod)
    assert "lv_1: R.Tensor((3,), dtype=\"float32\") = R.add(lv, lv1)" in text and "gv6" in text


# ----------------------------------------------------------------------------- against TVM

_TVM_PRINT = r"""
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    open(path + ".tvm", "w").write(mod.script())
    if "R.function" in open(path).read():
        open(path + ".legal", "w").write(relax.transform.LegalizeOps()(mod).script())
"""


@pytest.mark.tvm
def test_same_printout_as_tvm(tvm_python, tmp_path):
    """TVM 0.27 parses each case and prints (and legalizes) it byte for byte as we do."""
    sources = {"astype": ASTYPE, "axis": AXIS, "bitwise": BITWISE, "subtract": SUBTRACT, "ops": OPS,
               "symbolic_ops": SYMBOLIC_OPS, "nested_names": NESTED_NAMES}
    paths = {}
    for name, text in sources.items():
        path = tmp_path / f"{name}.py"
        path.write_text(HEADER + textwrap.dedent(text).lstrip("\n"))
        paths[name] = path
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_PRINT)
    proc = subprocess.run([tvm_python, str(runner), *map(str, paths.values())], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, path in paths.items():
        mod = parse(path.read_text(), str(path))
        assert to_text(mod) == (tmp_path / f"{name}.py.tvm").read_text(), name
        legal = tmp_path / f"{name}.py.legal"
        if legal.exists():
            assert to_text(legalize(mod)) == legal.read_text(), f"{name} legalized"
        # TVM's printout reads back as the same module
        assert structural_equal(parse((tmp_path / f"{name}.py.tvm").read_text()), mod), name


_TVM_RUN = r"""
import sys, tvm, numpy as np
from tvm import relax
mod = tvm.script.from_source(open(sys.argv[1]).read())
vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
data = np.load(sys.argv[2])
out = vm["main"](*[tvm.runtime.tensor(data[f"arg{i}"]) for i in range(len(data.files))])
def flat(o):
    return [o.numpy()] if hasattr(o, "numpy") else [a for e in o for a in flat(e)]
np.savez(sys.argv[3], *flat(out))
"""

SCANS_AND_SORTS = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 5), dtype="float32"), xi: R.Tensor((3, 5), dtype="int32")):
        with R.dataflow():
            a = R.cumsum(x, axis=1, exclusive=True)
            b = R.cumprod(xi, axis=0, dtype="int64", exclusive=True)
            c = R.cumsum(xi)
            d = R.sort(xi, axis=1, descending=True)
            e = R.argsort(xi, axis=1, descending=True)
            f = R.argsort(xi, axis=0)
            g = R.topk(xi, 2, 1, "both", True, "int64")
            h = R.topk(x, 2, 0, "indices", False)
            i = R.cumprod(x, exclusive=False)
            j = R.sort(x, axis=0)
            k = R.topk(xi, 5, 1, "values", False)
            gv = (a, b, c, d, e, f, g, h, i, j, k)
            R.output(gv)
        return gv
"""


@pytest.mark.tvm
def test_references_match_tvm_runs(tvm_python, tmp_path):
    """tvm.compile runs cumsum/cumprod/sort/argsort/topk (ties included) as our references do."""
    source = tmp_path / "scan.py"
    source.write_text(HEADER + textwrap.dedent(SCANS_AND_SORTS).lstrip("\n"))
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((3, 5)).astype("float32"), rng.integers(-2, 3, (3, 5)).astype("int32")]
    np.savez(tmp_path / "in.npz", **{f"arg{i}": v for i, v in enumerate(inputs)})
    runner = tmp_path / "run.py"
    runner.write_text(_TVM_RUN)
    proc = subprocess.run([tvm_python, str(runner), str(source), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = np.load(tmp_path / "out.npz")
    flat = lambda v: [w for x in v for w in flat(x)] if isinstance(v, tuple) else [v]  # noqa: E731
    ours = flat(run_relax(parse(source.read_text()), inputs))
    assert len(ours) == len(theirs.files)
    for i, got in enumerate(ours):
        want = theirs[f"arr_{i}"]
        assert got.dtype == want.dtype and got.shape == want.shape, i
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"output {i}")


VECTOR_SLICES = HEADER + '''@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((T.int64(4), T.int64(16)), "float32"), B: T.Buffer((T.int64(4), T.int64(16)), "float32")):
        for i in range(T.int64(4)):
            B[i, T.int64(0):T.int64(8)] = A[i, T.int64(0):T.int64(8)] + T.Broadcast(T.float32(1.0), 8)
            B[i, T.int64(8):T.int64(16)] = A[i, T.int64(8):T.int64(16)] * A[i, T.int64(0):T.int64(8)]
'''


def test_vector_slices_are_ramp_indices_with_vector_dtypes():
    """TVM prints a stride-1 Ramp index as a slice, in stores and in loads: both parse back to
    Ramps, a load with one is a vector (its dtype has the lanes), and the printout is a fixed
    point. (The contraction tiles of default-cpu-schedule print this way.)"""
    mod = parse(VECTOR_SLICES, "slices.py")
    func = mod.functions["main"]
    stores = []
    from irtool.codegen.schedule import _loads, _stmts

    stores = [n for n in _stmts(func.body) if isinstance(n, tir.BufferStore)]
    assert len(stores) == 2
    for st in stores:
        assert isinstance(st.indices[1], tir.Ramp) and st.indices[1].lanes == 8
        assert st.value.dtype == "float32x8"
        assert all(ld.dtype == "float32x8" for ld in _loads(st.value))
    again = parse(to_text(mod), "again.py")
    assert structural_equal(mod, again) and to_text(again) == to_text(mod)
    a = np.random.default_rng(0).standard_normal((4, 16)).astype("float32")
    b = np.zeros_like(a)
    from irtool.exec.tir import run_prim_func

    run_prim_func(func, [a, b])
    np.testing.assert_array_equal(b[:, :8], a[:, :8] + 1)
    np.testing.assert_array_equal(b[:, 8:], a[:, 8:] * a[:, :8])


def test_a_vector_slice_needs_constant_lanes():
    text = VECTOR_SLICES.replace("B[i, T.int64(0):T.int64(8)] = A[i, T.int64(0):T.int64(8)] + T.Broadcast(T.float32(1.0), 8)",
                                 "B[i, T.int64(0):i] = A[i, T.int64(0):T.int64(8)]")
    with pytest.raises(DiagnosticError, match="constant number of lanes"):
        parse(text, "slices.py")


# ----------------------------------------------------------------------------- packed calls in TIR

PACKED_ARGSORT = HEADER + '''@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def argsort(x: T.Buffer((T.int64(2), T.int64(5)), "float32"), out_buf: T.Buffer((T.int64(2), T.int64(5)), "int32")):
        T.func_attr({"tirx.noalias": True})
        with T.sblock("root"):
            T.reads()
            T.writes()
            with T.sblock("argsort_cpu"):
                T.reads()
                T.writes()
                T.call_packed("tvm.contrib.sort.argsort", T.tvm_stack_make_array(x.data, T.tvm_stack_make_shape(T.int64(2), T.int64(5)), 0, 2, T.float32(0.0), T.int64(0)), T.tvm_stack_make_array(out_buf.data, T.tvm_stack_make_shape(T.int64(2), T.int64(5)), 0, 2, 0, T.int64(0)), 1, T.bool(False))
'''


def test_call_packed_parses_and_prints_back():
    """TOPI's extern argsort (all_class_non_max_suppression's first step in TVM 0.27) calls a
    runtime function with DLTensors built in place: `T.call_packed` of `T.tvm_stack_make_array`."""
    mod = parse(PACKED_ARGSORT)
    call = mod.functions["argsort"].body.block.body.block.body.value
    assert call.op == "tirx.tvm_call_packed" and call.dtype == "int32"
    assert call.args[0].value == "tvm.contrib.sort.argsort" and call.args[1].op == "tirx.tvm_stack_make_array"
    assert to_text(mod).rstrip("\n").split("\n")[3:] == PACKED_ARGSORT.rstrip("\n").split("\n")[3:]
    assert roundtrips(mod)


@pytest.mark.tvm
def test_call_packed_prints_as_tvm(tvm_python, tmp_path):
    path = tmp_path / "packed.py"
    path.write_text(to_text(parse(PACKED_ARGSORT)))
    script = "import sys, tvm, tvm.script\nprint(tvm.script.from_source(open(sys.argv[1]).read()).script())"
    proc = subprocess.run([tvm_python, "-c", script, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.rstrip("\n") == path.read_text().rstrip("\n")
