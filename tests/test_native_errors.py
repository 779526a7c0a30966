"""Modules the native backend cannot lower are diagnostics that point at the construct
(file:line:col, the source line, a caret), never a crash or a traceback: Relax constructs
`irtool.build` does not compile, operators left unlegalized, unsupported dtypes, and TIR
constructs native code declines (GPU thread bindings, external calls)."""

from __future__ import annotations

import pytest

import irtool
from irtool.codegen.native import compile_tir
from irtool.diagnostics import DiagnosticError

H = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"

RELAX_CASES = {
"if": H + '''    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")):
        if c:
            y = R.exp(x)
        else:
            y = R.negative(x)
        return y
''',
"match_cast": H + '''    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=1)):
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((4,), dtype="float32"))
            gv = R.exp(y)
            R.output(gv)
        return gv
''',
"shape_of": H + '''    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            gv = R.shape_of(x)
            R.output(gv)
        return gv
''',
"nested_tuple": H + '''    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            a = R.exp(x)
            gv = ((a, x), a)
            R.output(gv)
        return gv
''',
"call_relax": H + '''    @R.function
    def f(x: R.Tensor((4,), dtype="float32")):
        return x

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")):
        cls = Module
        with R.dataflow():
            gv = cls.f(x)
            R.output(gv)
        return gv
''',
"unknown_rank": H + '''    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
''',
"prim_param": H + '''    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), n: R.Prim("int64")):
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv
''',
"squeeze_sym": H + '''    @R.function
    def main(x: R.Tensor((1, "n", 1), dtype="float32")):
        with R.dataflow():
            gv = R.squeeze(x)
            R.output(gv)
        return gv
''',
"bf16": H + '''    @R.function
    def main(x: R.Tensor((4,), dtype="bfloat16")):
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv
''',
}

EXPECTED = {
       "if": "if.py:8:9: error: cannot build natively: `If` in main",
    "match_cast": "match_cast.py:7:14: error: cannot build natively: parameter `x` must be a tensor of known rank and dtype",
    "shape_of": "shape_of.py:9:18: error: cannot build natively: `R.shape_of` was not lowered to TIR",
    "nested_tuple": "nested_tuple.py:10:13: error: cannot build natively: nested tuple results",
    "call_relax": "call_relax.py:14:18: error: cannot build natively: `Call` in main",
    "unknown_rank": "unknown_rank.py:7:14: error: cannot build natively: parameter `x` must be a tensor of known rank",
    "prim_param": "prim_param.py:7:50: error: cannot build natively: parameter `n` must be a tensor",
    "squeeze_sym": "squeeze_sym.py:9:18: error: cannot build natively: `R.squeeze` was not lowered to TIR",
    "bf16": "bf16.py:9:13: error: the native backend does not support dtype `bfloat16` (in PrimFunc `add`, called here)",
}


@pytest.mark.parametrize("name", sorted(RELAX_CASES))
def test_relax_module_that_cannot_be_built_is_located(name):
    with pytest.raises(DiagnosticError) as err:
        irtool.build(irtool.parse(RELAX_CASES[name], f"{name}.py"))
    rendered = err.value.render()
    assert EXPECTED[name] in rendered
    assert rendered.count("\n") >= 2 and "^" in rendered  # the source line and a caret


TIR = """
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((32,), "float32")):
BODY
"""

TIR_CASES = {
    "thread_binding": ("""        for i in T.thread_binding(32, thread="threadIdx.x"):
            with T.sblock("B"):
                vi = T.axis.spatial(32, i)
                A[vi] = A[vi] + T.float32(1)""", "6:9: error: cannot compile to native code: GPU thread bindings"),
    "call_extern": ("""        for i in range(32):
            with T.sblock("B"):
                vi = T.axis.spatial(32, i)
                A[vi] = T.call_extern("float32", "my_missing_fn", A[vi])""",
                    "9:25: error: cannot compile to native code: intrinsic `tirx.call_extern` returning float32"),
    "int_div_by_constant_zero": ("""        for i in range(32):
            with T.sblock("B"):
                vi = T.axis.spatial(32, i)
                A[vi] = T.Cast("float32", T.Div(vi, 0))""", "error: cannot compile to native code: integer division by the constant zero"),
}


@pytest.mark.parametrize("name", sorted(TIR_CASES))
def test_tir_that_cannot_be_compiled_is_located(name):
    body, expected = TIR_CASES[name]
    with pytest.raises(DiagnosticError) as err:
        compile_tir(irtool.parse(TIR.replace("BODY", body), f"{name}.py"))
    rendered = err.value.render()
    assert f"{name}.py:" in rendered and expected in rendered
