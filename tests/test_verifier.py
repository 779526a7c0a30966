"""The verifier: scoping, single definition, calls, primitive functions, types — on IR
built in Python (the parser already refuses most of these), and through irtool-opt."""

from __future__ import annotations

import io

import numpy as np
import pytest

import irtool
from irtool.analysis.verifier import verify
from irtool.cli import opt
from irtool.diagnostics import DiagnosticError
from irtool.ir import Attrs, Call, Constant, Function, IRModule, Let, Op, TensorType, Var
from irtool.ops import make_call

T = TensorType((2,), "float32")


def module(body_fn):
    x = Var("x", T)
    return IRModule({"main": Function([x], body_fn(x))})


def test_a_well_formed_module_passes():
    verify(module(lambda x: make_call("exp", make_call("add", x, x))))


def test_variable_used_outside_its_let():
    y = Var("y", T)
    inner = Let(y, Constant(np.ones(2, "float32")), y)
    mod = module(lambda x: make_call("add", inner, y))  # %y escapes the let that binds it
    with pytest.raises(DiagnosticError, match="variable `%y` is used outside the scope that binds it"):
        verify(mod)


def test_parameter_used_in_another_function():
    x = Var("x", T)
    mod = IRModule({"f": Function([x], x), "g": Function([Var("z", T)], make_call("exp", x))})
    with pytest.raises(DiagnosticError, match="in `@g`: variable `%x` is used outside"):
        verify(mod)


def test_variable_bound_twice():
    x = Var("x", T)
    mod = IRModule({"main": Function([x], Let(x, Constant(np.ones(2, "float32")), x))})
    with pytest.raises(DiagnosticError, match="variable `%x` is bound more than once"):
        verify(mod)


def test_calls_are_checked_against_the_registry():
    with pytest.raises(DiagnosticError, match="unknown operator `nope`"):
        verify(module(lambda x: Call(Op.get("nope"), [x])))
    with pytest.raises(DiagnosticError, match=r"`add` takes 2 arguments \(lhs, rhs\), got 1"):
        verify(module(lambda x: Call(Op.get("add"), [x])))
    with pytest.raises(DiagnosticError, match="has no attribute `bogus`"):
        verify(module(lambda x: Call(Op.get("exp"), [x], Attrs({"bogus": 1}))))
    with pytest.raises(DiagnosticError, match="only operator calls take attributes"):
        verify(module(lambda x: Call(Function([Var("p", T)], x), [x], Attrs({"k": 1}))))


def test_primitive_functions_must_be_closed_typed_kernels():
    def prim(params, body):
        return Function(params, body, attrs=Attrs({"Primitive": 1}))

    p = Var("p", T)
    ok = module(lambda x: Call(prim([p], make_call("exp", p)), [x]))
    verify(ok)
    q = Var("q", T)
    with pytest.raises(DiagnosticError, match="uses `%x`, which is not one of its parameters"):
        verify(module(lambda x: Call(prim([q], make_call("add", q, x)), [x])))
    r = Var("r")
    with pytest.raises(DiagnosticError, match="parameter `%r` needs a type"):
        verify(module(lambda x: Call(prim([r], r), [x])))
    s, t = Var("s", T), Var("t", T)
    nested = prim([s], Let(t, s, t))
    with pytest.raises(DiagnosticError, match="contains a `let`"):
        verify(module(lambda x: Call(nested, [x])))


def test_types_are_rechecked_once_inferred():
    mod = irtool.parse("def @main(%x: Tensor[(2), float32]) { exp(%x) }")
    irtool.infer_types(mod)
    verify(mod)
    mod.functions["main"] = Function(mod["main"].params, make_call("add", mod["main"].params[0],
                                                                   Constant(np.ones(3, "float32"))))
    mod["main"].body.checked_type = T  # stale: the new body does not type-check
    with pytest.raises(DiagnosticError, match="incompatible broadcast shapes"):
        verify(mod)


def test_irtool_opt_names_the_pass_after_which_verification_failed():
    from dataclasses import dataclass

    from irtool.transform import Pass, register

    @register
    @dataclass(frozen=True)
    class BreakScoping(Pass):  # a deliberately broken pass, for this test only
        name = "test-break-scoping"
        tvm_name = "TestBreakScoping"

        def transform_module(self, mod, ctx):
            fn = mod["main"]
            stray = Var("stray", T)
            body = make_call("add", Let(stray, fn.params[0], stray), stray)
            return mod.with_functions({"main": Function(fn.params, body)})

    from irtool import transform

    try:
        stdin = io.StringIO("def @main(%x: Tensor[(2), float32]) { %x }")
        err = io.StringIO()
        assert opt.run(["-", "--pass=test-break-scoping"], stdin, io.StringIO(), err) == 1
        assert "error: after pass `test-break-scoping`: in `@main`: variable `%stray` is used outside" \
            in err.getvalue()
        stdin = io.StringIO("def @main(%x: Tensor[(2), float32]) { %x }")
        assert opt.run(["-", "--pass=test-break-scoping", "--no-verify-each"], stdin, io.StringIO(),
                       io.StringIO()) == 0
    finally:
        transform._REGISTRY.pop(BreakScoping.name)
