"""The TVMScript parser: what it builds, and its diagnostics for bad input."""

from __future__ import annotations

import glob
import os
import textwrap

import numpy as np
import pytest

from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.text import detect_syntax, parse

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "tvm-0.27")
REFERENCE_FILES = sorted(glob.glob(f"{REFERENCE}/**/*.py", recursive=True))


def parse_script(text: str):
    return parse(textwrap.dedent(text).lstrip("\n"), "test.py")


def error_of(text: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        parse_script(text)
    return info.value.render()


# A hand-written Relax module whose call_tir runs a hand-written PrimFunc: the issue's
# acceptance example.
HANDWRITTEN = """
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale_shift(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2.0) + B[vj]

    @T.prim_func(private=True)
    def row_max(A: T.Buffer((4, 8), "float32"), M: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 8):
            with T.sblock("M"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    M[vi] = T.float32(-3.4028234663852886e38)
                M[vi] = T.max(M[vi], A[vi, vk])

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.scale_shift, (x, b), out_ty=R.Tensor((4, 8), dtype="float32"))
            z: R.Tensor((4, 8), dtype="float32") = R.nn.relu(y)
            m = R.call_tir(cls.row_max, (z,), out_ty=R.Tensor((4,), dtype="float32"))
            R.output(m)
        return m
"""


def test_handwritten_call_tir_runs_in_the_interpreter():
    from irtool.exec.relax import run_relax

    mod = parse_script(HANDWRITTEN)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    got = run_relax(mod, [x, b])
    want = np.maximum(x * np.float32(2) + b, 0).max(axis=1)
    assert got.dtype == np.float32 and got.shape == (4,)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_handwritten_builds_the_expected_ir():
    mod = parse_script(HANDWRITTEN)
    main = mod["main"]
    assert isinstance(main, rx.Function) and isinstance(mod["row_max"], tir.PrimFunc)
    (block,) = main.body.blocks
    assert isinstance(block, rx.DataflowBlock)
    y, z, m = (b.var for b in block.bindings)
    assert isinstance(y, rx.DataflowVar) and isinstance(z, rx.DataflowVar)
    assert type(m) is rx.Var and main.body.body is m
    # the root block is implicit, the reduction block has an init and a reduce iter var
    realize = mod["row_max"].body
    assert isinstance(realize, tir.SBlockRealize) and realize.block.name == "root"
    loop = realize.block.body
    inner = loop.body.body.block
    assert inner.init is not None and [iv.iter_type for iv in inner.iter_vars] == [tir.DATA_PAR, tir.COMM_REDUCE]
    # reads/writes were detected (the reduction's own buffer is not a read, as in TVM)
    assert [r.buffer.name for r in inner.reads] == ["A"] and [w.buffer.name for w in inner.writes] == ["M"]


def test_symbolic_shapes_are_shared_between_params_and_results():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
            y: R.Tensor(("n", 4), dtype="float32") = R.add(x, x)
            return y
    """)
    fn = mod["f"]
    n = fn.params[0].struct_info.shape[0]
    assert isinstance(n, tir.Var) and n.dtype == "int64"
    assert fn.ret_struct_info.shape[0] is n
    assert mod.bare


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: os.path.relpath(p, REFERENCE))
def test_reference_files_parse(path):
    text = open(path).read()
    assert detect_syntax(text) == "tvmscript"
    mod = parse(text, path)
    assert mod.functions
    for fn in mod.functions.values():
        assert isinstance(fn, (rx.Function, tir.PrimFunc))


# ----------------------------------------------------------------------------- diagnostics


def test_bad_indentation():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)
          return y
    """)
    assert "test.py:4:" in msg and "unindent does not match" in msg
    assert "\n  return y\n" in msg and "^" in msg


def test_unexpected_indent():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)
                return y
    """)
    assert "test.py:4:" in msg and "unexpected indent" in msg


def test_unknown_relax_name():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.frobnicate(x)
            return y
    """)
    assert "test.py:3:9: error: unknown name `R.frobnicate`" in msg
    assert "    y = R.frobnicate(x)\n        ^~~~~~~~~~~~" in msg


def test_unknown_tir_name():
    msg = error_of("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.grid(4):
                A[i] = T.frobnicate(A[i])
    """)
    assert "test.py:4:16: error: unknown name `T.frobnicate`" in msg


def test_struct_info_mismatch_in_annotation():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2, 3), "float32")):
            y: R.Tensor((2, 3), dtype="int32") = R.add(x, x)
            return y
    """)
    assert "test.py:3:8: error: struct info mismatch" in msg and "float32" in msg and "int32" in msg


def test_struct_info_mismatch_in_shape():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2, 3), "float32")):
            y: R.Tensor((3, 2), dtype="float32") = R.nn.relu(x)
            return y
    """)
    assert "struct info mismatch" in msg


def test_return_annotation_mismatch():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), dtype="int8"):
            return x
    """)
    assert "test.py:2:" in msg and "the function returns" in msg


def test_undefined_variable():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.add(x, z)
            return y
    """)
    assert "test.py:3:18: error: undefined name `z`" in msg


def test_operator_type_error_is_located():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((4,), "float32")):
            z = R.add(x, y)
            return z
    """)
    assert "test.py:3:9: error:" in msg and "R.add" in msg


def test_call_tir_needs_a_prim_func():
    msg = error_of("""
        @I.ir_module
        class Module:
            @R.function
            def g(x: R.Tensor((2,), "float32")):
                return x

            @R.function
            def f(x: R.Tensor((2,), "float32")):
                cls = Module
                y = R.call_tir(cls.g, (x,), out_ty=R.Tensor((2,), "float32"))
                return y
    """)
    assert "must be a PrimFunc" in msg


def test_unknown_global():
    msg = error_of("""
        @I.ir_module
        class Module:
            @R.function
            def f(x: R.Tensor((2,), "float32")):
                cls = Module
                y = cls.nothere(x)
                return y
    """)
    assert "the module has no function `nothere`" in msg


def test_unknown_decorator_and_option():
    assert "unknown decorator `@R.fn`" in error_of("""
        @R.fn
        def f(x: R.Tensor((2,), "float32")):
            return x
    """)
    assert "has no option `fast`" in error_of("""
        @T.prim_func(fast=True)
        def f(A: T.Buffer((2,), "float32")):
            A[0] = T.float32(0)
    """)


def test_dataflow_output_must_be_bound():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            with R.dataflow():
                y = R.add(x, x)
                R.output(w)
            return y
    """)
    assert "`w` is not bound in this dataflow block" in msg


def test_syntax_error_and_unterminated_string():
    assert "test.py:3:22: error: unexpected `x`" in error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            return R.add(x, )x)
    """)
    assert "unterminated string literal" in error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32)):
            return x
    """)


def test_missing_metadata_constant_keeps_its_index():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), dtype="float32"):
            y: R.Tensor((2,), dtype="float32") = R.add(x, metadata["ir.GenericConst"][3])
            return y
    """)
    call = mod["f"].body.blocks[0].bindings[0].value
    const = call.args[1]
    assert isinstance(const, rx.Constant) and const.data is None and const.meta_index == 3


def test_old_spellings_are_accepted():
    mod = parse_script("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            T.func_attr({"tir.noalias": True})
            C = T.alloc_buffer((4,))
            for i in range(4):
                with T.block("C"):
                    vi = T.axis.spatial(4, i)
                    C[vi] = A[vi] + T.float32(1)
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = C[vi]
    """)
    fn = mod["f"]
    assert fn.body.block.name == "root" and len(fn.body.block.alloc_buffers) == 1


# ----------------------------------------------------------------------------- regressions (found by the lit sweep)


def _bindings(fn):
    return [b for block in fn.body.blocks for b in block.bindings]


def test_nested_calls_are_bound_in_evaluation_order():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            with R.dataflow():
                y = R.add(R.exp(x), R.negative(R.log(x)))
                R.output(y)
            return y
    """)
    ops = [b.value.op.name for b in _bindings(mod["f"])]
    assert ops == ["relax.exp", "relax.log", "relax.negative", "relax.add"]


def test_match_cast_value_is_kept_as_written():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            y = R.match_cast(R.add(x, x), R.Tensor((2,), "float32"))
            return y
    """)
    (b,) = _bindings(mod["f"])
    assert isinstance(b, rx.MatchCast) and isinstance(b.value, rx.Call)


def test_prim_value_of_a_prim_parameter_is_not_a_crash():
    mod = parse_script("""
        @R.function
        def f(k: R.Prim("int64")) -> R.Prim("int64"):
            e = R.prim_value(k)
            return e
    """)
    (b,) = _bindings(mod["f"])
    assert b.value is mod["f"].params[0]


def test_redeclaring_a_parameters_symbolic_size_reuses_it():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor(("n", "m"), "float32")):
            n = T.int64()
            a = R.shape([n])
            return a
    """)
    n = mod["f"].params[0].struct_info.shape[0]
    (b,) = _bindings(mod["f"])
    assert b.value.values[0] is n


def test_alias_takes_the_finer_struct_info_and_calls_keep_their_annotation():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor((2, 3), "float32")) -> R.Tensor:
            a: R.Tensor(ndim=2) = x
            b: R.Tensor(ndim=2) = R.add(x, x)
            return a
    """)
    a, b = _bindings(mod["f"])
    assert a.var.struct_info.shape == (2, 3)            # TVM: the alias gets x's struct info
    assert b.var.struct_info.shape is None and b.var.struct_info.ndim == 2   # the annotation stays
    assert mod["f"].ret_struct_info.shape == (2, 3)     # a looser return annotation is refined


def test_positional_tuple_call_and_empty_tuple():
    mod = parse_script("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            t = R.tuple(x, x)
            e = R.tuple()
            return e
    """)
    t, e = _bindings(mod["f"])
    assert isinstance(t.value, rx.Tuple) and len(t.value.fields_) == 2
    assert isinstance(e.var.struct_info, rx.TupleStructInfo) and len(e.var.struct_info) == 0


def test_global_symbol_of_a_public_function_is_implied():
    mod = parse_script("""
        @T.prim_func
        def f(A: T.Buffer((2,), "float32")):
            T.func_attr({"global_symbol": "f", "tirx.noalias": True})
            A[0] = T.float32(1)
    """)
    assert mod["f"].attrs == (("tirx.noalias", True),)


def test_plain_assert_message_is_a_runtime_error():
    mod = parse_script("""
        @T.prim_func
        def f(n: T.int32):
            assert n > 0, "n must be positive"
            T.evaluate(n)
    """)
    body = mod["f"].body
    assert body.error_kind == "RuntimeError" and body.message_parts[0].value == "n must be positive"


def test_single_variable_axis_remap():
    mod = parse_script("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.sblock("A"):
                    vi = T.axis.remap("S", [i])
                    A[vi] = T.float32(0)
    """)
    block = mod["f"].body.block.body.body.block
    assert [iv.var.name for iv in block.iter_vars] == ["vi"]


def test_typevar_first_line_is_tvmscript():
    assert detect_syntax('n = TypeVar("n")\n@R.function\ndef f(x: R.Tensor((n,), "float32")):\n    return x\n') \
        == "tvmscript"


def test_output_error_points_at_the_output():
    msg = error_of("""
        @R.function
        def f(x: R.Tensor((2,), "float32")):
            with R.dataflow():
                y = R.add(x, x)
                R.output(y, w)
            return y
    """)
    assert "test.py:5:21: error: `R.output(w)`" in msg


def test_bad_buffer_dtype_is_named():
    assert "unknown data type `float33`" in error_of("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float33")):
            A[0] = T.float32(0)
    """)


def test_mixed_dtypes_are_promoted_as_tvm_does():
    # (checked against TVM 0.27: `A[1] + n` is `A[1] + T.Cast("float32", n)`)
    from irtool.text import to_text

    mod = parse_script("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), n: T.int32, m: T.int64):
            A[0] = A[1] + n
            A[2] = T.Cast("float32", m + n)
    """)
    text = to_text(mod)
    assert 'A[0] = A[1] + T.Cast("float32", n)' in text
    assert 'A[2] = T.Cast("float32", m + T.Cast("int64", n))' in text


def test_let_of_the_wrong_dtype_and_constant_division_by_zero():
    assert "the value has dtype float32, but the variable is declared int32" in error_of("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            x: T.let[T.int32] = T.float32(1)
            A[0] = T.float32(0)
    """)
    assert "test.py:3:12: error: division by zero" in error_of("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = A[1] / T.float32(0)
    """)
