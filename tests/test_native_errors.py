"""Modules the native backend cannot lower are diagnostics that point at the construct
(file:line:col, the source line, a caret), never a crash or a traceback: Relax constructs
`irtool.build` does not compile, operators left unlegalized, unsupported dtypes, and TIR
constructs native code declines (GPU thread bindings, external calls)."""

from __future__ import annotations

import numpy as np
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
    "nested_tuple": "nested_tuple.py:10:13: error: cannot build natively: nested tuple results",
    "bf16": "bf16.py:9:13: error: the native backend does not support dtype `bfloat16` (in PrimFunc `add`, called here)",
}

# once diagnostics, now run by the VM (codegen/vm.py; tests/test_native_vm.py): control flow,
# match_cast, shape values, calls of Relax functions, parameters and operators of run-time shape
BUILT_BY_THE_VM = {"if": ([np.array(False), np.arange(4, dtype="float32")]),
                   "match_cast": [np.arange(4, dtype="float32")], "shape_of": [np.zeros(4, "float32")],
                   "call_relax": [np.ones(4, "float32")], "unknown_rank": [np.ones((2, 3), "float32")],
                   "prim_param": [np.ones(4, "float32"), np.int64(3)], "squeeze_sym": [np.ones((1, 5, 1), "float32")]}


@pytest.mark.parametrize("name", sorted(BUILT_BY_THE_VM))
def test_relax_modules_that_need_the_vm_build(name):
    mod = irtool.parse(RELAX_CASES[name], f"{name}.py")
    exe = irtool.build(mod)
    assert exe.vm is not None
    args = BUILT_BY_THE_VM[name]
    np.testing.assert_allclose(np.asarray(exe(*args)), np.asarray(irtool.interpret(mod, args)), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(EXPECTED))
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
