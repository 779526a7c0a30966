"""Relax passes: dead-code-elimination (Relax path) and canonicalize-bindings.

TVM 0.27's own test cases (tests/python/relax/test_transform_dead_code_elimination.py and
test_transform_canonicalize_bindings.py) ported as TVMScript input/expected pairs, compared
with structural equality; the invariants on every case (well-formed, idempotent, the
interpreter's result unchanged where the module runs); and, when TVM is installed, the same
inputs through TVM's passes, whose printed output must parse to what ours produce.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from irtool.analysis.relax_verifier import verify_module
from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text
from irtool.transform import PassContext, get_pass, parse_pipeline

DCE = "dead-code-elimination"
CB = "canonicalize-bindings"


def module(text: str):
    return parse(textwrap.dedent(text).lstrip("\n"), "test.py")


def run(name: str, mod, **options):
    return get_pass(name)(**options)(mod)


def check(name: str, before: str, expected: str | None = None, idempotent: bool = True, **options):
    """`before` through the pass must equal `expected` (default: unchanged), be well-formed,
    and (unless TVM's pass is not idempotent there) be a fixed point of the pass."""
    mod = module(before)
    out = run(name, mod, **options)
    want = module(expected) if expected is not None else module(before)
    assert structural_equal(out, want), f"got:\n{to_text(out)}\nexpected:\n{to_text(want)}"
    verify_module(out)
    if idempotent:
        again = run(name, out, **options)
        assert structural_equal(again, out), f"not idempotent:\n{to_text(again)}"
    return out


# ============================================================================= dead-code-elimination

# A PrimFunc to paste into the modules below (indented for the class body).
ADD_PRIM = """
        @T.prim_func(private=True, s_tir=True)
        def tir_add(x: T.Buffer((16, 16), "float32"), y: T.Buffer((16, 16), "float32"),
                    z: T.Buffer((16, 16), "float32")):
            for i, j in T.grid(16, 16):
                with T.sblock("add"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    z[vi, vj] = x[vi, vj] + y[vi, vj]
"""


def test_dce_simple():
    check(DCE, """
    @I.ir_module
    class Input:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"),
                 bias: R.Tensor((26, 26), dtype="float32")):
            with R.dataflow():
                gv: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                gv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                gv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    gv, gv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1,
                    data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="float32")
                gv21: R.Tensor((2, 4, 26, 26), dtype="float32") = R.permute_dims(gv2, axes=[0, 3, 1, 2])
                gv22: R.Tensor((2, 4, 26, 26), dtype="float32") = R.add(gv21, bias)
                R.output(gv2)
            return gv2
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"),
                 bias: R.Tensor((26, 26), dtype="float32")):
            with R.dataflow():
                gv: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                gv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                gv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    gv, gv1, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1,
                    data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype="float32")
                R.output(gv2)
            return gv2
    """)


def test_dce_2block():
    check(DCE, """
    @I.ir_module
    class Input:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"),
                 bias: R.Tensor((26, 26), dtype="float32")):
            with R.dataflow():
                gv: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                gv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                gv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    gv, gv1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                gv21: R.Tensor((2, 4, 26, 26), dtype="float32") = R.permute_dims(gv2, axes=[0, 3, 1, 2])
                gv22: R.Tensor((2, 4, 26, 26), dtype="float32") = R.add(gv21, bias)
                R.output(gv2)
            gv3 = R.astype(gv2, dtype="float16")
            return gv3
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32"),
                 bias: R.Tensor((26, 26), dtype="float32")):
            with R.dataflow():
                gv: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                gv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                gv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    gv, gv1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                R.output(gv2)
            gv3: R.Tensor((2, 26, 26, 4), dtype="float16") = R.astype(gv2, dtype="float16")
            return gv3
    """)


def test_dce_unused_dataflow_blocks_disappear():
    # TVM's test_unused_dfb and test_unused_dfb2: a dead block goes, and what only dead
    # bindings used dies with them
    check(DCE, """
    @I.ir_module
    class Input:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")):
            with R.dataflow():
                lv0: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                lv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                lv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    lv0, lv1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                lv3: R.Tensor((2, 4, 26, 26), dtype="float32") = R.permute_dims(lv2, axes=[0, 3, 1, 2])
                R.output(lv2)
            gv3 = R.astype(lv2, dtype="float16")
            with R.dataflow():
                lv4: R.Tensor((2, 4, 26, 26), dtype="float16") = R.permute_dims(gv3, axes=[0, 3, 1, 2])
                R.output(lv4)
            return gv3
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")):
            with R.dataflow():
                lv0: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                lv1: R.Tensor((4, 3, 3, 3), dtype="float32") = R.permute_dims(w, axes=[0, 2, 3, 1])
                lv2: R.Tensor((2, 26, 26, 4), dtype="float32") = R.nn.conv2d(
                    lv0, lv1, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                R.output(lv2)
            gv3 = R.astype(lv2, dtype="float16")
            return gv3
    """)
    check(DCE, """
    @I.ir_module
    class Input:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")):
            with R.dataflow():
                lv0: R.Tensor((2, 28, 28, 3), dtype="float32") = R.permute_dims(x, axes=[0, 2, 3, 1])
                R.output(lv0)
            gv_x = R.astype(x, dtype="float16")
            gv_w = R.astype(w, dtype="float16")
            with R.dataflow():
                lv1: R.Tensor((2, 28, 28, 3), dtype="float16") = R.permute_dims(gv_x, axes=[0, 2, 3, 1])
                lv2: R.Tensor((4, 3, 3, 3), dtype="float16") = R.permute_dims(gv_w, axes=[0, 2, 3, 1])
                lv3: R.Tensor((2, 26, 26, 4), dtype="float16") = R.nn.conv2d(
                    lv1, lv2, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                lv4: R.Tensor((2, 3, 28, 28), dtype="float32") = R.permute_dims(lv0, axes=[0, 3, 1, 2])
                R.output(lv3)
            return lv3
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3, 28, 28), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")):
            gv_x = R.astype(x, dtype="float16")
            gv_w = R.astype(w, dtype="float16")
            with R.dataflow():
                lv1: R.Tensor((2, 28, 28, 3), dtype="float16") = R.permute_dims(gv_x, axes=[0, 2, 3, 1])
                lv2: R.Tensor((4, 3, 3, 3), dtype="float16") = R.permute_dims(gv_w, axes=[0, 2, 3, 1])
                lv3: R.Tensor((2, 26, 26, 4), dtype="float16") = R.nn.conv2d(
                    lv1, lv2, data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC")
                R.output(lv3)
            return lv3
    """)


def test_dce_keeps_impure_bindings_and_match_casts():
    # observed with TVM 0.27: an unused pure binding goes in any block; a match_cast stays
    # (it checks at run time); a call of an impure function stays, with what it uses;
    # neighbouring dataflow blocks merge (TVM's normaliser)
    check(DCE, """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def log(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
            return x

        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                a = R.add(x, x)
                R.output(a)
            with R.dataflow():
                b = R.add(a, a)
                c = R.multiply(b, b)
                R.output(b)
            m = R.match_cast(b, R.Tensor((2, 3), "float32"))
            u = R.add(b, b)
            t = (u, b)
            v = R.multiply(x, x)
            p = Module.log(v)
            return b
    """, """
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def log(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
            return x

        @R.function(pure=False)
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                a = R.add(x, x)
                b = R.add(a, a)
                R.output(a, b)
            m = R.match_cast(b, R.Tensor((2, 3), "float32"))
            v = R.multiply(x, x)
            p = Module.log(v)
            return b
    """)


def test_dce_inside_if_branches():
    check(DCE, """
    @I.ir_module
    class Module:
        @R.function
        def main(c: R.Tensor((), "bool"), x: R.Tensor((2, 3), "float32")):
            if c:
                a = R.add(x, x)
                dead = R.multiply(a, a)
                r = a
            else:
                dead2 = R.add(x, x)
                r = x
            return r
    """, """
    @I.ir_module
    class Module:
        @R.function
        def main(c: R.Tensor((), "bool"), x: R.Tensor((2, 3), "float32")):
            if c:
                a = R.add(x, x)
                r = a
            else:
                r = x
            return r
    """)


def _names(mod) -> set:
    return set(mod.functions)


def test_dce_unused_relax_func():
    mod = module(f"""
    @I.ir_module
    class InputModule:
{ADD_PRIM}
        @R.function(private=True)
        def unused_func(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")):
            gv0 = R.add(x, w)
            return gv0

        @R.function
        def main(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
            gv0 = R.call_tir(InputModule.tir_add, (x, w), out_ty=R.Tensor((16, 16), dtype="float32"))
            return gv0
    """)
    assert _names(run(DCE, mod)) == {"main", "tir_add"}


@pytest.mark.parametrize("entry", [None, ["foo"], "foo"])
def test_dce_custom_entry_function(entry):
    # TVM's test_unused_relax_func_custom_entry_func: foo is public, so it is an entry
    # whether or not it is named
    mod = module(f"""
    @I.ir_module
    class InputModule:
{ADD_PRIM}
        @R.function(private=True)
        def unused_func(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")):
            gv0 = R.add(x, w)
            return gv0

        @R.function
        def foo(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
            gv0 = R.call_tir(InputModule.tir_add, (x, w), out_ty=R.Tensor((16, 16), dtype="float32"))
            return gv0
    """)
    options = {} if entry is None else {"entry_functions": entry}
    assert _names(run(DCE, mod, **options)) == {"foo", "tir_add"}


def test_dce_private_entry_function_and_tracking_through_public_ones():
    # TVM's test_tracking_through_externally_exposed_func, plus a private entry named
    # explicitly (TVM's keyword, a Python-only argument)
    mod = module(f"""
    @I.ir_module
    class InputModule:
{ADD_PRIM}
        @R.function(private=True)
        def unused_func(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")):
            gv0 = R.add(x, w)
            return gv0

        @R.function(private=True)
        def helper(x: R.Tensor((16, 16), "float32")):
            return x

        @R.function
        def foo(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
            gv0 = R.call_tir(InputModule.tir_add, (x, w), out_ty=R.Tensor((16, 16), dtype="float32"))
            return gv0

        @R.function
        def main(x: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
            return x
    """)
    assert _names(run(DCE, mod, entry_functions=["main"])) == {"main", "foo", "tir_add"}
    import irtool.transform as T

    assert _names(T.DeadCodeElimination(entry_functions=["helper"])(mod)) == {"main", "foo", "tir_add", "helper"}
    assert _names(run(DCE, mod, entry_functions=("helper", "unused_func"))) == {
        "main", "foo", "tir_add", "helper", "unused_func"}
    with pytest.raises(DiagnosticError, match="no entry function `nope`"):
        run(DCE, mod, entry_functions="nope")


def test_dce_unused_relax_func_symbolic_shape():
    mod = module("""
    @I.ir_module
    class InputModule:
        @T.prim_func(s_tir=True)
        def tir_matmul(x: T.Buffer((T.int64(4), T.int64(4)), "float32"),
                       y: T.Buffer((T.int64(4), T.int64(4)), "float32"),
                       z: T.Buffer((T.int64(4), T.int64(4)), "float32")):
            for i, j, k in T.grid(T.int64(4), T.int64(4), T.int64(4)):
                with T.sblock("matmul"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        z[vi, vj] = T.float32(0.0)
                    z[vi, vj] = z[vi, vj] + x[vi, vk] * y[vk, vj]

        @R.function(private=True)
        def unused_func(x: R.Tensor(("m", "n"), "float32"), w: R.Tensor(("n", "k"), "float32")):
            gv0 = R.add(x, x)
            return gv0

        @R.function
        def main(x: R.Tensor(("m", "n"), "float32"), w: R.Tensor(("n", "k"), "float32")):
            gv0 = R.call_tir(InputModule.tir_matmul, (x, w), out_ty=R.Tensor(("m", "k"), dtype="float32"))
            return gv0
    """)
    assert _names(run(DCE, mod)) == {"main", "tir_matmul"}


def test_dce_public_prim_funcs_stay():
    # TVM's test_unused_prim_func and test_multiple_unused_funcs: a PrimFunc with a global
    # symbol (not private) is externally visible and stays
    mod = module("""
    @I.ir_module
    class InputModule:
        @T.prim_func(s_tir=True)
        def unused_func1(x: T.Buffer((16, 16), "float32"), y: T.Buffer((16, 16), "float32"),
                         z: T.Buffer((16, 16), "float32")):
            T.func_attr({"global_symbol": "tir_unused"})
            for i, j in T.grid(16, 16):
                with T.sblock("add"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    z[vi, vj] = x[vi, vj] + y[vi, vj]

        @T.prim_func(private=True, s_tir=True)
        def unused_private(x: T.Buffer((16,), "float32")):
            for i in range(16):
                with T.sblock("zero"):
                    vi = T.axis.spatial(16, i)
                    x[vi] = T.float32(0.0)

        @R.function(private=True)
        def unused_func2(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")):
            gv0 = R.add(x, w)
            return gv0

        @R.function
        def relax_add(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")):
            gv0 = R.add(x, w)
            return gv0

        @R.function
        def main(x: R.Tensor((16, 16), "float32"), w: R.Tensor((16, 16), "float32")) -> R.Tensor((16, 16), "float32"):
            gv0 = InputModule.relax_add(x, w)
            return gv0
    """)
    assert _names(run(DCE, mod)) == {"main", "relax_add", "unused_func1"}


def test_dce_removes_functions_whose_last_call_was_dead():
    # S3: the only call of `helper` is an unused binding, removed in S2
    mod = module("""
    @I.ir_module
    class Module:
        @R.function(private=True)
        def helper(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = Module.helper(x)
            return x
    """)
    out = run(DCE, mod)
    assert _names(out) == {"main"}
    assert out["main"].body.blocks == ()


def test_dce_keeps_everything_when_a_callee_is_missing():
    # RemoveUnusedFunctions gives up when a reachable reference is not in the module
    from irtool.ir.expr import GlobalVar

    mod = module("""
    @I.ir_module
    class Module:
        @R.function(private=True)
        def unused(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = R.add(x, x)
            return y
    """)
    main = mod["main"]
    call = rx.Call(GlobalVar("elsewhere"), [main.params[0]])
    call.struct_info = main.params[0].struct_info
    (block,) = main.body.blocks
    var = rx.Var("z", call.struct_info)
    body = main.body.replace(blocks=(rx.BindingBlock(block.bindings + (rx.VarBinding(var, call),)),), body=var)
    mod = mod.with_functions({**mod.functions, "main": main.replace(body=body)})
    assert _names(run(DCE, mod)) == {"main", "unused"}


def test_dce_relay_behaviour_is_unchanged():
    relay = module("""
    #[version = "0.0.5"]
    def @main(%x: float32) -> float32 {
      let %a = exp(%x);
      let %b = log(%a);
      add(%x, 1f)
    }
    """)
    out = run(DCE, relay)
    assert to_text(out) == to_text(module("""
    #[version = "0.0.5"]
    def @main(%x: float32) -> float32 {
      add(%x, 1f)
    }
    """))


# ============================================================================= canonicalize-bindings


def test_cb_registration():
    cls = get_pass(CB)
    assert (cls.tvm_name, cls.opt_level) == ("CanonicalizeBindings", 0)
    assert get_pass("CanonicalizeBindings") is cls
    with PassContext(opt_level=0):
        out = cls()(module("""
        @R.function
        def main(x: R.Tensor):
            y = x
            return y
        """))
    assert out["main"].body.blocks == ()


def test_cb_simple_assignments():
    check(CB, """
    @I.ir_module
    class TestChainAssignments:
        @R.function
        def main(x: R.Tensor):
            y = x
            z = y
            q = z
            p = q
            o = p
            return o
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            return x
    """)


def test_cb_dataflow_block():
    check(CB, """
    @I.ir_module
    class TestDataflowAssignments:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.const(1)
                z = y
                o = z
                p = o
                m = p
                n = m
                R.output(n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                n = R.const(1)
                R.output(n)
            return n
    """, idempotent=False)


def test_cb_assign_to_output_in_dataflow_block():
    check(CB, """
    @I.ir_module
    class TestDataflowAssignments:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = x
                z = y
                o = z
                p = o
                m = p
                n = m
                R.output(n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            return x
    """)


def test_cb_ops():
    check(CB, """
    @I.ir_module
    class TestOps:
        @R.function
        def main(x: R.Tensor, y: R.Tensor):
            w = y
            q = x
            z = R.add(w, q)
            return R.add(q, z)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor, y: R.Tensor):
            z = R.add(y, x)
            return R.add(x, z)
    """)


def test_cb_match_cast():
    check(CB, """
    @I.ir_module
    class TestMatchCast:
        @R.function
        def main(x: R.Tensor):
            q = x
            m = T.int64()
            n = T.int64()
            z = R.match_cast(q, R.Tensor((m, n)))
            w = z
            return w
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            m = T.int64()
            n = T.int64()
            z = R.match_cast(x, R.Tensor((m, n)))
            return z
    """)


def test_cb_same_shape():
    check(CB, """
    @I.ir_module
    class TestSameShape:
        @R.function
        def main(x: R.Tensor(("m", "n"), "float32")):
            y = x
            z = R.match_cast(x, R.Tensor(("m", "n"), "float32"))
            w = z
            q = R.add(w, y)
            return R.add(q, w)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("m", "n"), "float32")):
            q = R.add(x, x)
            return R.add(q, x)
    """)


def test_cb_change_shape():
    check(CB, """
    @I.ir_module
    class TestChangeShape:
        @R.function
        def main(x: R.Tensor(ndim=2)):
            y = x
            o = T.int64()
            p = T.int64()
            z = R.match_cast(x, R.Tensor((o, p)))
            w = z
            q = R.add(w, y)
            return R.add(q, w)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(ndim=2)):
            o = T.int64()
            p = T.int64()
            z = R.match_cast(x, R.Tensor((o, p)))
            q = R.add(z, x)
            return R.add(q, z)
    """)


def test_cb_replace_symbolic_variable_and_remove_match_cast():
    # o, p are determined by x's (m, n): the match_cast becomes trivial and goes
    out = check(CB, """
    @I.ir_module
    class TestChangeShape:
        @R.function
        def main(x: R.Tensor(("m", "n"))):
            y = x
            o = T.int64()
            p = T.int64()
            z = R.match_cast(x, R.Tensor((o, p)))
            w = z
            q = R.add(w, y)
            return R.add(q, w)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("m", "n"))):
            q: R.Tensor(("m", "n")) = R.add(x, x)
            return R.add(q, x)
    """)
    (block,) = out["main"].body.blocks
    assert block.bindings[0].var.struct_info.shape == out["main"].params[0].struct_info.shape


def test_cb_replace_symbolic_variable_and_remove_match_cast_of_tuple():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tuple(R.Tensor(("m", "n")))):
            y = x
            o = T.int64()
            p = T.int64()
            z = R.match_cast(x, R.Tuple(R.Tensor((o, p))))
            w = z
            q = R.add(w[0], y[0])
            return R.add(q, w[0])
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tuple(R.Tensor(("m", "n")))):
            q = R.add(x[0], x[0])
            return R.add(q, x[0])
    """)


def test_cb_unwrap_tuple():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor, y: R.Tensor):
            tuple_var = (x, y)
            w = tuple_var[0]
            q = tuple_var[1]
            z = R.add(w, q)
            return R.add(q, z)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor, y: R.Tensor):
            tuple_var = (x, y)
            z = R.add(x, y)
            return R.add(y, z)
    """)


def test_cb_basic_folding_example():
    check(CB, """
    @I.ir_module
    class Input:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                y = R.const(1)
                n = y
                R.output(n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                n = R.const(1)
                R.output(n)
            return n
    """, idempotent=False)


def test_cb_fold_match_cast():
    check(CB, """
    @I.ir_module
    class Input:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                y = R.const(1)
                n = R.match_cast(y, R.Tensor((), "int32"))
                R.output(n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                n = R.const(1)
                R.output(n)
            return n
    """, idempotent=False)


@pytest.mark.xfail(strict=True, reason="irtool's struct info deduction cannot express T.min(N1, 32), the "
                   "result of strided_slice with a symbolic end on a static dimension (TVM: (16,) after the "
                   "second symbolic rewrite; here ndim=1)")
def test_cb_fold_variables_from_match_cast():
    # (the slices' bounds are R.prim_value arguments, written as plain tuples here)
    # N1, N2 are used at run time (R.prim_value): their match_casts stay, but the struct
    # info downstream uses the values they are known to have; M is only in shapes, so
    # `rhs` becomes a trivial binding of `state`
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(state: R.Tensor([16], dtype="float32"), A: R.Tensor([16, 16], dtype="float32"),
                 B: R.Tensor([16, 16], dtype="float32")):
            N1 = T.int64()
            M = T.int64()
            N2 = T.int64()
            lhs_A = R.match_cast(A, R.Tensor([N1, M], dtype="float32"))
            lhs_B = R.match_cast(B, R.Tensor([N2, M], dtype="float32"))
            rhs = R.match_cast(state, R.Tensor([M], dtype="float32"))
            lhs: R.Tensor([N1 + N2, M], "float32") = R.concat((lhs_A, lhs_B), axis=0)
            proj_concat: R.Tensor([N1 + N2], "float32") = R.matmul(lhs, rhs)
            proj_A = R.strided_slice(proj_concat, (0,), (0,), (N1,), assume_inbound=False)
            proj_B = R.strided_slice(proj_concat, (0,), (N1,), (N1 + N2,), assume_inbound=False)
            return (proj_A, proj_B)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(state: R.Tensor([16], dtype="float32"), A: R.Tensor([16, 16], dtype="float32"),
                 B: R.Tensor([16, 16], dtype="float32")):
            N1 = T.int64()
            M = T.int64()
            N2 = T.int64()
            lhs_A = R.match_cast(A, R.Tensor([N1, M], dtype="float32"))
            lhs_B = R.match_cast(B, R.Tensor([N2, M], dtype="float32"))
            lhs: R.Tensor([32, 16], dtype="float32") = R.concat((lhs_A, lhs_B), axis=0)
            proj_concat: R.Tensor([32], dtype="float32") = R.matmul(lhs, state)
            proj_A: R.Tensor([16], dtype="float32") = R.strided_slice(proj_concat, (0,), (0,), (N1,),
                                                                      assume_inbound=False)
            proj_B: R.Tensor([16], dtype="float32") = R.strided_slice(proj_concat, (0,), (N1,), (N1 + N2,),
                                                                      assume_inbound=False)
            return (proj_A, proj_B)
    """)


def test_cb_fold_variables_from_match_cast_without_slices():
    # the test above up to the matmul, with N1 + N2 used at run time (by a binding that
    # canonicalize-bindings keeps, unused as it is)
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(state: R.Tensor([16], dtype="float32"), A: R.Tensor([16, 16], dtype="float32"),
                 B: R.Tensor([16, 16], dtype="float32")):
            N1 = T.int64()
            M = T.int64()
            N2 = T.int64()
            lhs_A = R.match_cast(A, R.Tensor([N1, M], dtype="float32"))
            lhs_B = R.match_cast(B, R.Tensor([N2, M], dtype="float32"))
            rhs = R.match_cast(state, R.Tensor([M], dtype="float32"))
            lhs: R.Tensor([N1 + N2, M], "float32") = R.concat((lhs_A, lhs_B), axis=0)
            proj_concat: R.Tensor([N1 + N2], "float32") = R.matmul(lhs, rhs)
            n = R.prim_value(N1 + N2)
            return proj_concat
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(state: R.Tensor([16], dtype="float32"), A: R.Tensor([16, 16], dtype="float32"),
                 B: R.Tensor([16, 16], dtype="float32")):
            N1 = T.int64()
            M = T.int64()
            N2 = T.int64()
            lhs_A = R.match_cast(A, R.Tensor([N1, M], dtype="float32"))
            lhs_B = R.match_cast(B, R.Tensor([N2, M], dtype="float32"))
            lhs: R.Tensor([32, 16], dtype="float32") = R.concat((lhs_A, lhs_B), axis=0)
            proj_concat: R.Tensor([32], dtype="float32") = R.matmul(lhs, state)
            n = R.prim_value(N1 + N2)
            return proj_concat
    """)


def test_cb_inconsistent_match_cast_raises_error():
    mod = module("""
    @I.ir_module
    class Before:
        @R.function
        def main(state: R.Tensor([16], dtype="float32"), A: R.Tensor([16, 16], dtype="float32"),
                 B: R.Tensor([32, 32], dtype="float32")):
            N1 = T.int64()
            M = T.int64()
            N2 = T.int64()
            lhs_A = R.match_cast(A, R.Tensor([N1, M], dtype="float32"))
            lhs_B = R.match_cast(B, R.Tensor([N2, M], dtype="float32"))
            rhs = R.match_cast(state, R.Tensor([M], dtype="float32"))
            return (lhs_A, lhs_B, rhs)
    """)
    with pytest.raises(DiagnosticError, match="MatchCast statements must be consistent") as info:
        run(CB, mod)
    assert "TIR variable `M` is 16" in str(info.value) and "is 32" in str(info.value)
    assert "lhs_B = R.match_cast" in info.value.render()


def test_cb_match_cast_may_have_distinct_values_in_branches():
    # TVM's test (with a tensor scale): N is 16 in one branch, 32 in the other; each
    # branch's struct info is more specific inside, and a match_cast restores the if's
    # (the expected module is TVM 0.27's output, printed)
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(state: R.Tensor(["N"], dtype="float32"), A: R.Tensor(["M", 16], dtype="float32"),
                 B: R.Tensor(["M", 32], dtype="float32"), scale: R.Tensor((), "float32")):
            N = T.int64()
            M = T.int64()
            if N == 16:
                weights: R.Tensor([M, 16], "float32") = R.multiply(A, scale)
                weights2: R.Tensor([M, N], "float32") = R.match_cast(weights, R.Tensor([M, N], "float32"))
                weights3: R.Tensor([M, N], "float32") = R.multiply(weights2, scale)
                out = weights3
            else:
                weights: R.Tensor([M, 32], "float32") = R.multiply(B, scale)
                weights2: R.Tensor([M, N], "float32") = R.match_cast(weights, R.Tensor([M, N], "float32"))
                weights3: R.Tensor([M, N], "float32") = R.multiply(weights2, scale)
                out = weights3
            w: R.Tensor([M, N], "float32") = R.multiply(out, scale)
            o: R.Tensor([M], "float32") = R.matmul(w, state)
            return o
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(state: R.Tensor(["N"], dtype="float32"), A: R.Tensor(["M", 16], dtype="float32"),
                 B: R.Tensor(["M", 32], dtype="float32"), scale: R.Tensor((), "float32")):
            N = T.int64()
            M = T.int64()
            if N == 16:
                weights: R.Tensor((M, 16), dtype="float32") = R.multiply(A, scale)
                weights2: R.Tensor((M, N), dtype="float32") = R.match_cast(weights, R.Tensor((M, N), dtype="float32"))
                weights3: R.Tensor((M, 16), dtype="float32") = R.multiply(weights2, scale)
                then_branch_with_dyn: R.Tensor((M, N), dtype="float32") = R.match_cast(
                    weights3, R.Tensor((M, N), dtype="float32"))
                out: R.Tensor((M, N), dtype="float32") = then_branch_with_dyn
            else:
                weights: R.Tensor((M, 32), dtype="float32") = R.multiply(B, scale)
                weights2: R.Tensor((M, N), dtype="float32") = R.match_cast(weights, R.Tensor((M, N), dtype="float32"))
                weights3: R.Tensor((M, 32), dtype="float32") = R.multiply(weights2, scale)
                else_branch_with_dyn: R.Tensor((M, N), dtype="float32") = R.match_cast(
                    weights3, R.Tensor((M, N), dtype="float32"))
                out: R.Tensor((M, N), dtype="float32") = else_branch_with_dyn
            w: R.Tensor((M, N), dtype="float32") = R.multiply(out, scale)
            o: R.Tensor((M,), dtype="float32") = R.matmul(w, state)
            return o
    """)

def test_cb_multiple_outputs():
    check(CB, """
    @I.ir_module
    class Input:
        @R.function
        def main():
            with R.dataflow():
                x = R.const(1)
                y = R.const(1)
                z = R.const(1)
                l = x
                m = y
                n = z
                R.output(l, m, n)
            return (l, m, n)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main():
            with R.dataflow():
                l = R.const(1)
                m = R.const(1)
                n = R.const(1)
                R.output(l, m, n)
            return (l, m, n)
    """, idempotent=False)


def test_cb_single_output_multiple_nondataflow():
    check(CB, """
    @I.ir_module
    class Input:
        @R.function
        def main():
            with R.dataflow():
                x = R.const(1)
                y = R.const(1)
                z = R.const(1)
                l = x
                m = y
                n = z
                R.output(l, m, n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main():
            with R.dataflow():
                l = R.const(1)
                m = R.const(1)
                n = R.const(1)
                R.output(n)
            return n
    """, idempotent=False)


def test_cb_fold_const_to_output():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                n = R.const(1)
                R.output(n)
            return n
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main() -> R.Tensor((), "int32"):
            with R.dataflow():
                n = R.const(1)
                R.output(n)
            return R.const(1)
    """, idempotent=False)


def test_cb_canonicalize_var_to_dataflow_var_if_legal():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                z = R.add(y, R.const(1))
                R.output(y, z)
            return z
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                z = R.add(y, R.const(1))
                R.output(z)
            return z
    """)


@pytest.mark.parametrize("gv1_first", [True, False])
def test_cb_update_dataflow_computations_if_var_replacement_occurs(gv1_first):
    # lv1's binding becomes gv1's, and gv2 (before or after the trivial binding) uses gv1
    lines = ["gv1 = lv1", "gv2 = R.add(lv1, R.const(1))"]
    if not gv1_first:
        lines.reverse()
    check(CB, f"""
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                lv1 = R.add(x, R.const(1))
                {lines[0]}
                {lines[1]}
                R.output(gv1, gv2)
            return (gv1, gv2)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                gv1 = R.add(x, R.const(1))
                gv2 = R.add(gv1, R.const(1))
                R.output(gv1, gv2)
            return (gv1, gv2)
    """)


@pytest.mark.parametrize("trivial", ["gv1 = lv1", "lv1 = gv1"])
def test_cb_replace_var_with_dataflow_if_all_usage_within_dataflow_block(trivial):
    # TVM's test_replace_var_with_dataflow_if_all_usage_within_dataflow_block and
    # test_canonicalize_var_to_dataflow_with_trivial_binding
    first = "lv1" if trivial == "gv1 = lv1" else "gv1"
    check(CB, f"""
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                {first} = R.add(x, R.const(1))
                {trivial}
                gv2 = R.add(lv1, R.const(1))
                R.output(gv1, gv2)
            return gv2
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                gv1 = R.add(x, R.const(1))
                gv2 = R.add(gv1, R.const(1))
                R.output(gv2)
            return gv2
    """)


def test_cb_canonicalize_with_updated_struct_info():
    # replacing B by A re-deduces R.add's struct info, more specific than C's annotation
    check(CB, """
    @I.ir_module
    class Before:
        @R.function(private=True)
        def main(A: R.Tensor(("n", 16), dtype="int32")) -> R.Tensor(("n", 16), dtype="int32"):
            B = A
            C: R.Tensor(dtype="int32", ndim=2) = R.add(B, B)
            return C
    """, """
    @I.ir_module
    class Expected:
        @R.function(private=True)
        def main(A: R.Tensor(("n", 16), dtype="int32")) -> R.Tensor(("n", 16), dtype="int32"):
            C: R.Tensor(("n", 16), "int32") = R.add(A, A)
            return C
    """)


@pytest.mark.parametrize("outputs, returned", [("z", "z"), ("y, z", "z")])
def test_cb_canonicalize_trivial_binding_to_dataflow_var(outputs, returned):
    # TVM's test_canonicalize_trivial_binding_to_dataflow_var and
    # test_canonicalize_trivial_var_binding_inside_dataflow_block
    check(CB, f"""
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                z = y
                R.output({outputs})
            return {returned}
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                R.output(y)
            return y
    """)


def test_cb_canonicalize_multiple_trivial_binding_to_dataflow_var():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(w: R.Tensor):
            with R.dataflow():
                x = R.add(w, R.const(1))
                y = x
                z = x
                R.output(y, z)
            return (y, z)
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(w: R.Tensor):
            with R.dataflow():
                x = R.add(w, R.const(1))
                R.output(x)
            return (x, x)
    """)


def test_cb_canonicalize_across_non_dataflow_tuple():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                z = (y,)
                gv = R.add(z[0], R.const(1))
                R.output(z, gv)
            return gv
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor):
            with R.dataflow():
                y = R.add(x, R.const(1))
                z = (y,)
                gv = R.add(y, R.const(1))
                R.output(gv)
            return gv
    """)


def test_cb_var_used_in_distinct_dataflow_blocks():
    # v is used only in a later dataflow block: it must stay an output (TVM's test, with a
    # call of an impure function in place of R.print)
    check(CB, """
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def log(x: R.Tensor) -> R.Tensor:
            return x

        @R.function(pure=False)
        def main(x: R.Tensor, y: R.Tensor) -> R.Tensor:
            with R.dataflow():
                z = R.add(x, y)
                w = R.multiply(z, y)
                v = R.add(w, x)
                R.output(v)
            _ = Before.log(v)
            with R.dataflow():
                a = R.multiply(v, v)
                b = R.add(a, a)
                c = R.subtract(b, a)
                d = R.add(c, c)
                R.output(d)
            return d
    """)


def test_cb_canonicalize_inside_branches():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor, y: R.Tensor) -> R.Tensor:
            with R.dataflow():
                z = R.add(x, y)
                R.output(z)
            if R.const(True):
                with R.dataflow():
                    w = R.add(z, z)
                    v = R.multiply(w, w)
                    R.output(w, v)
                q = v
            else:
                with R.dataflow():
                    w = R.multiply(z, z)
                    v = R.add(w, w)
                    R.output(w, v)
                q = v
            return q
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor, y: R.Tensor) -> R.Tensor:
            with R.dataflow():
                z = R.add(x, y)
                R.output(z)
            if R.const(True):
                with R.dataflow():
                    w = R.add(z, z)
                    v = R.multiply(w, w)
                    R.output(v)
                q = v
            else:
                with R.dataflow():
                    w = R.multiply(z, z)
                    v = R.add(w, w)
                    R.output(v)
                q = v
            return q
    """)


def test_cb_canonicalization_causes_struct_info_update():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def transform_params(A: R.Tensor(("vocab_size", 4096), dtype="float16"),
                             B: R.Tensor((6144, 4096), dtype="float16")):
            with R.dataflow():
                C = B
                D: R.Tuple(R.Tensor(dtype="float16", ndim=2), R.Tensor((6144, 4096), dtype="float16")) = (A, C)
                E = D
                R.output(E)
            return E
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def transform_params(A: R.Tensor(("vocab_size", 4096), dtype="float16"),
                             B: R.Tensor((6144, 4096), dtype="float16")):
            with R.dataflow():
                E: R.Tuple(R.Tensor(("vocab_size", 4096), dtype="float16"),
                           R.Tensor((6144, 4096), dtype="float16")) = (A, B)
                R.output(E)
            return E
    """)


def test_cb_unwrap_tuple_of_constant():
    check(CB, """
    @I.ir_module
    class TestChainAssignments:
        @R.function
        def main():
            tup = (R.const(0, "int64"), R.const(1, "int64"))
            x = tup[0]
            y = tup[1]
            z = R.add(x, y)
            return z
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main():
            tup = (R.const(0, "int64"), R.const(1, "int64"))
            x = tup[0]
            y = tup[1]
            z = R.add(R.const(0, "int64"), R.const(1, "int64"))
            return z
    """)


def test_cb_trivial_binding_of_replaced_non_dataflow_var():
    out = check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(param_tuple: R.Tuple([R.Tensor])):
            with R.dataflow():
                A = param_tuple[0]
                B = A
                C = R.add(A, B)
                R.output(A, B, C)
            return C
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(param_tuple: R.Tuple([R.Tensor])):
            with R.dataflow():
                A = param_tuple[0]
                C = R.add(A, A)
                R.output(C)
            return C
    """)
    assert [b.var.name_hint for b in out["main"].body.blocks[0].bindings] == ["A", "C"]


def test_cb_trace_tuple_through_round_trip():
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(param_tuple: R.Tuple([R.Tensor, R.Tensor, R.Tensor])):
            with R.dataflow():
                A = param_tuple[0]
                B = param_tuple[1]
                C = param_tuple[2]
                output = (A, B, C)
                R.output(output)
            return output
    """, """
    @I.ir_module
    class Expected:
        @R.function
        def main(param_tuple: R.Tuple([R.Tensor, R.Tensor, R.Tensor])):
            with R.dataflow():
                A = param_tuple[0]
                B = param_tuple[1]
                C = param_tuple[2]
                R.output()
            return param_tuple
    """)
    # a partial tuple is not the original
    check(CB, """
    @I.ir_module
    class Before:
        @R.function
        def main(param_tuple: R.Tuple([R.Tensor, R.Tensor, R.Tensor])):
            with R.dataflow():
                A = param_tuple[0]
                B = param_tuple[1]
                output = (A, B)
                R.output(output)
            return output
    """)


def test_cb_output_bound_through_match_cast():
    # the last step of TVM's rewrite: `gv = R.match_cast(lv, S)` with lv used nowhere else
    # binds gv to lv's value (checked against TVM 0.27)
    check(CB, """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                lv = R.add(x, x)
                gv = R.match_cast(lv, R.Tensor((2, 3), "float32"))
                lv2 = R.add(x, x)
                gv2: R.Tensor(ndim=2, dtype="float32") = R.match_cast(lv2, R.Tensor(ndim=2, dtype="float32"))
                R.output(gv, gv2)
            return (gv, gv2)
    """, """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                gv = R.add(x, x)
                gv2: R.Tensor(ndim=2, dtype="float32") = R.match_cast(R.add(x, x), R.Tensor(ndim=2, dtype="float32"))
                R.output(gv, gv2)
            return (gv, gv2)
    """)


def test_cb_second_run_binds_a_compound_match_cast_value():
    # (checked against TVM 0.27) the first run folds lv2 into gv2's match_cast, as gv2 is
    # used after the block (by a trivial binding, which goes); in the second run gv2 becomes
    # a DataflowVar, and the re-emitted match_cast casts a fresh binding of its value
    first = check(CB, """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                lv2 = R.add(x, x)
                gv2: R.Tensor(ndim=2, dtype="float32") = R.match_cast(lv2, R.Tensor(ndim=2, dtype="float32"))
                R.output(gv2)
            w = gv2
            return x
    """, """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                gv2: R.Tensor(ndim=2, dtype="float32") = R.match_cast(R.add(x, x), R.Tensor(ndim=2, dtype="float32"))
                R.output(gv2)
            return x
    """, idempotent=False)
    second = run(CB, first)
    want = module("""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                lv = R.add(x, x)
                gv2: R.Tensor(ndim=2, dtype="float32") = R.match_cast(lv, R.Tensor(ndim=2, dtype="float32"))
                R.output()
            return x
    """)
    assert structural_equal(second, want), to_text(second)
    assert structural_equal(run(CB, second), second)

def test_cb_projection_of_an_earlier_blocks_output():
    # A deliberate deviation: TVM 0.27 folds `a = t[0]` (and b) into f, a DataflowVar of the
    # first block, and uses it in the second: ill-formed (TVM's own well_formed says so). Here
    # the projection stays and b is folded into a.
    before = """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                f = R.add(x, x)
                t = (f, x)
                R.output(t)
            k = R.multiply(x, x)
            with R.dataflow():
                a = t[0]
                b = a
                g = R.add(b, k)
                R.output(g)
            return g
    """
    check(CB, before, """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                f = R.add(x, x)
                t = (f, x)
                R.output(t)
            k = R.multiply(x, x)
            with R.dataflow():
                a = t[0]
                g = R.add(a, k)
                R.output(g)
            return g
    """)
    # with `h = t[0]` used after the blocks, f's binding becomes h's and TVM's result is
    # well-formed: the same here
    check(CB, before.replace("            return g", "            h = t[0]\n            return (g, h)"), """
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                h = R.add(x, x)
                t = (h, x)
                R.output(h, t)
            k = R.multiply(x, x)
            with R.dataflow():
                g = R.add(h, k)
                R.output(g)
            return (g, h)
    """, idempotent=False)  # t stops being an output in a second run, as in TVM

def test_cb_leaves_other_dialects_alone():
    relay = module("""
    #[version = "0.0.5"]
    def @main(%x: float32) -> float32 {
      let %a = %x;
      %a
    }
    """)
    assert run(CB, relay) is relay


def _with_closure():
    """TVM's test_inner_function, smaller: main binds a local function that captures k, a
    dataflow output (the parser has no nested functions: it is spliced in)."""
    from irtool.ir.relax_visitor import ExprMutator

    mod = module("""
    @I.ir_module
    class Module:
        @R.function(private=True)
        def inner(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
            with R.dataflow():
                z = R.add(a, b)
                w = R.multiply(a, z)
                dead = R.add(w, w)
                v = R.add(b, w)
                R.output(z, w, v)
            return v

        @R.function
        def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
            with R.dataflow():
                dead0 = R.add(x, x)
                k = R.multiply(x, y)
                R.output(k)
            q = Module.inner(k, y)
            return q
    """)
    inner, main = mod["inner"], mod["main"]
    (block, tail) = main.body.blocks
    k = block.bindings[1].var
    capture = ExprMutator(mod)
    capture.var_remap[inner.params[1]] = k  # b is now the captured k
    fn = rx.Function([inner.params[0]], capture.visit_expr(inner.body), inner.ret_struct_info)
    f = rx.Var("f", fn.struct_info)
    call = rx.Call(f, [k])
    call.struct_info = inner.ret_struct_info
    (q_binding,) = tail.bindings
    body = main.body.replace(blocks=(rx.DataflowBlock(block.bindings + (rx.VarBinding(f, fn),)),
                                     rx.BindingBlock([q_binding.replace(value=call)])))
    out = mod.with_functions({"main": main.replace(body=body)})
    verify_module(out)
    return out


def test_local_functions():
    mod = _with_closure()
    out = run(DCE, run(CB, mod))
    verify_module(out)
    (block, tail) = out["main"].body.blocks
    # dead0 goes; k stays an output (the closure, used after the block, captures it); f
    # is an output as it is used after the block
    assert [b.var.name_hint for b in block.bindings] == ["k", "f"]
    assert [type(b.var) for b in block.bindings] == [rx.Var, rx.Var]
    fn = block.bindings[1].value
    (inner_block,) = fn.body.blocks
    # inside, `dead` goes and z, w stop being outputs (used only in their block)
    assert [b.var.name_hint for b in inner_block.bindings] == ["z", "w", "v"]
    assert [type(b.var) for b in inner_block.bindings] == [rx.DataflowVar, rx.DataflowVar, rx.Var]
    assert run(DCE, mod)["main"].body.blocks[0].bindings[0].var.name_hint == "k"

# ============================================================================= invariants on call_tir modules

CALL_TIR_MODULE = """
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), y: T.Buffer((T.int64(2), T.int64(3)), "float32"),
            z: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = x[vi, vj] + y[vi, vj]

    @T.prim_func(private=True, s_tir=True)
    def exp(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), z: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("exp"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = T.exp(x[vi, vj])

    @T.prim_func(private=True, s_tir=True)
    def never_called(x: T.Buffer((T.int64(2), T.int64(3)), "float32"), z: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("zero"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = x[vi, vj] + T.float32(1.0)

    @R.function(private=True)
    def double(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        b = a
        c = R.call_tir(cls.add, (b, a), out_ty=R.Tensor((2, 3), "float32"))
        unused = R.call_tir(cls.exp, (c,), out_ty=R.Tensor((2, 3), "float32"))
        return c

    @R.function(private=True)
    def dead_helper(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Module
        d = R.call_tir(cls.never_called, (a,), out_ty=R.Tensor((2, 3), "float32"))
        return d

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        cls = Module
        with R.dataflow():
            x1 = x
            s = R.call_tir(cls.add, (x1, y), out_ty=R.Tensor((2, 3), "float32"))
            t = (s, x1)
            u = t[0]
            e = R.call_tir(cls.exp, (u,), out_ty=R.Tensor((2, 3), "float32"))
            dead = R.call_tir(cls.exp, (e,), out_ty=R.Tensor((2, 3), "float32"))
            gv = e
            R.output(gv, t)
        h = cls.dead_helper(gv)
        k = R.match_cast(gv, R.Tensor((2, 3), "float32"))
        r = cls.double(k)
        w = r
        return (w, t)
"""


def _run_main(mod):
    from irtool.exec.relax import run_relax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype("float32")
    y = rng.standard_normal((2, 3)).astype("float32")
    return run_relax(mod, [x, y])


def _flat(value):
    if isinstance(value, tuple):
        return [a for v in value for a in _flat(v)]
    return [value]


@pytest.mark.parametrize("pipeline", [DCE, CB, f"{CB},{DCE}", f"{DCE},{CB}"])
def test_invariants_on_a_call_tir_module(pipeline):
    pytest.importorskip("irtool.exec.tir")
    mod = module(CALL_TIR_MODULE)
    verify_module(mod)
    passes = parse_pipeline(pipeline)
    out = mod
    for p in passes:
        out = p(out)
    verify_module(out)
    again = out
    for p in passes:
        again = p(again)
    assert structural_equal(again, out), to_text(again)
    for a, b in zip(_flat(_run_main(mod)), _flat(_run_main(out)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_canonicalize_then_dce_on_the_call_tir_module():
    mod = module(CALL_TIR_MODULE)
    out = run(DCE, run(CB, mod))
    assert _names(out) == {"main", "double", "add", "exp"}
    text = to_text(out)
    assert "dead" not in text and "unused" not in text and "x1" not in text and "u =" not in text
    main = out["main"]
    dataflow, tail = main.body.blocks
    # the dataflow block computes gv directly (no `gv = e` alias) and exposes t and gv
    assert [b.var.name_hint for b in dataflow.bindings] == ["s", "t", "gv"]
    assert [type(b.var) for b in dataflow.bindings] == [rx.DataflowVar, rx.Var, rx.Var]
    # `k = R.match_cast(gv, <gv's own struct info>)` was trivial, `h` (and dead_helper) dead
    assert [type(b).__name__ for b in tail.bindings] == ["VarBinding"]
    assert "match_cast" not in text


# ============================================================================= differential: TVM 0.27

# Static shapes only: TVM prints symbolic variables as `n = T.int64()` in the body.
DIFFERENTIAL = {
    "call_tir": CALL_TIR_MODULE,
    "dataflow_outputs": """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            lv1 = R.add(x, y)
            gv1 = lv1
            lv2 = R.multiply(lv1, y)
            gv2 = R.match_cast(lv2, R.Tensor((2, 3), "float32"))
            t = (gv1, lv2)
            a = t[0]
            b = t[1]
            tt = (a, b)
            dead = R.subtract(a, b)
            R.output(gv1, gv2, tt)
        c = R.add(gv2, gv2)
        d = c
        e = (tt, d)
        return e
""",
    "branches": """
@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((2, 3), "float32")):
        y = x
        if c:
            with R.dataflow():
                a = R.add(y, y)
                b = a
                unused = R.multiply(a, a)
                R.output(b)
            r = b
        else:
            k = R.const(1, "float32")
            r = R.add(y, k)
        s = r
        return s
""",
    "constants": """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        with R.dataflow():
            k = R.const(2, "float32")
            k2 = k
            t = (k2, x)
            f = t[0]
            z = R.multiply(x, f)
            R.output(z)
        return z
""",
}

_TVM_RUNNER = """
import sys
import tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    dce, cb = relax.transform.DeadCodeElimination(), relax.transform.CanonicalizeBindings()
    for name, out in (("dce", dce(mod)), ("cb", cb(mod)), ("cb2", cb(cb(mod)))):
        with open(path + "." + name, "w") as f:
            f.write(out.script())
"""


@pytest.mark.tvm
def test_same_results_as_tvm(tvm_python, tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    paths = []
    for name, text in DIFFERENTIAL.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in paths:
        mod = parse(open(path).read(), path)
        for suffix, name in (("dce", DCE), ("cb", CB)):
            ours = run(name, mod)
            theirs = parse(open(f"{path}.{suffix}").read(), f"{path}.{suffix}")
            assert structural_equal(ours, theirs), (
                f"{os.path.basename(path)} {name}\nours:\n{to_text(ours)}\nTVM:\n{to_text(theirs)}")
        twice = run(CB, run(CB, mod))  # TVM's pass is not idempotent: the second run must agree too
        assert structural_equal(twice, parse(open(f"{path}.cb2").read())), f"{path} {CB} twice"


def test_long_functions_need_no_recursion(default_recursion_limit):
    """30,000 bindings of aliases, tuples and projections in one dataflow block."""
    sinfo = rx.TensorStructInfo((2, 3), "float32")
    x = rx.Var("x", sinfo)
    bindings, last = [], x
    for i in range(10_000):
        t = rx.DataflowVar(f"t{i}", rx.TupleStructInfo([sinfo, sinfo]))
        tup = rx.Tuple([last, x])
        tup.struct_info = t.struct_info
        item = rx.TupleGetItem(t, 0)
        item.struct_info = sinfo
        v = rx.DataflowVar(f"v{i}", sinfo)
        w = rx.DataflowVar(f"w{i}", sinfo)
        bindings += [rx.VarBinding(t, tup), rx.VarBinding(v, item), rx.VarBinding(w, v)]
        last = w
    gv = rx.Var("gv", sinfo)
    bindings.append(rx.VarBinding(gv, last))
    body = rx.SeqExpr([rx.DataflowBlock(bindings)], gv)
    body.struct_info = sinfo
    from irtool.ir.module import IRModule

    mod = IRModule({"main": rx.Function([x], body, sinfo)})
    out = run(DCE, run(CB, mod))
    assert out["main"].body.blocks == () and out["main"].body.body is x
    assert run(DCE, mod)["main"] is mod["main"]  # everything is used

# ============================================================================= random programs

T23 = 'R.Tensor((2, 3), "float32")'
RANDOM_HEADER = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function(private=True)
    def helper(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        b = R.add(a, a)
        return b

    @R.function(private=True)
    def unused(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        return a

    @R.function(pure=False, private=True)
    def log(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        return a

    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
"""


def random_program(seed: int, nested_projections: bool) -> str:
    """A random well-formed Relax module over (2, 3) float32 tensors: aliases, operator
    calls, tuples, projections (inside calls too, if `nested_projections`), match_casts and
    constants in dataflow blocks, ordinary blocks and if-branches; calls of a private helper
    and of an impure function."""
    rng = random.Random(seed)
    counter = iter(range(10_000))
    # name -> "t" (a 2x3 tensor), "u" (a 2-d tensor), "c" (a scalar constant), n (an n-tuple of "t")
    kinds = {"x": "t", "y": "t"}
    visible = ["x", "y"]
    lines = []

    def pick():
        return rng.choice([n for n in visible if kinds[n] == "t"])

    def operand():
        tuples = [n for n in visible if isinstance(kinds[n], int)]
        if nested_projections and tuples and rng.random() < 0.3:
            t = rng.choice(tuples)
            return f"{t}[{rng.randrange(kinds[t])}]"
        consts = [n for n in visible if kinds[n] == "c"]
        if consts and rng.random() < 0.2:
            return rng.choice(consts)
        return pick()

    def binding(dataflow: bool, indent: str) -> None:
        name = f"v{next(counter)}"
        r = rng.random()
        tuples = [n for n in visible if isinstance(kinds[n], int)]
        if r < 0.2:
            src = rng.choice(visible)
            kind, text = kinds[src], src
        elif r < 0.45:
            op = rng.choice(["R.add", "R.multiply", "R.subtract"])
            a, b = operand(), operand()
            kind = "c" if kinds.get(a) == "c" and kinds.get(b) == "c" else "t"  # scalar op scalar
            text = f"{op}({a}, {b})"
        elif r < 0.6:
            fields = [pick() for _ in range(rng.randint(1, 3))]
            kind, text = len(fields), f"({', '.join(fields)},)"
        elif r < 0.72 and tuples:
            t = rng.choice(tuples)
            kind, text = "t", f"{t}[{rng.randrange(kinds[t])}]"
        elif r < 0.82:
            # a tensor of unknown shape is only aliased, returned or cast back: irtool's
            # struct info of operators on it is more precise than TVM's
            src = rng.choice([n for n in visible if kinds[n] in ("t", "u")])
            if rng.random() < 0.7:
                kind, text = "t", f"R.match_cast({src}, {T23})"
            else:
                kind, text = "u", f'R.match_cast({src}, R.Tensor(dtype="float32", ndim=2))'
        elif r < 0.88:
            kind, text = "c", f'R.const({rng.randint(1, 5)}.0, "float32")'
        elif r < 0.94:
            kind, text = "t", f"Module.helper({pick()})"
        elif not dataflow:
            kind, text = "t", f"Module.log({pick()})"
        else:
            kind, text = "t", f"R.add({pick()}, {pick()})"
        lines.append(f"{indent}{name} = {text}")
        kinds[name] = kind
        visible.append(name)

    for _ in range(rng.randint(1, 4)):
        before = list(visible)
        r = rng.random()
        if r < 0.2:
            result = f"v{next(counter)}"
            for header in ("        if c:", "        else:"):
                lines.append(header)
                visible[:] = before
                for _ in range(rng.randint(0, 3)):
                    binding(False, "            ")
                lines.append(f"            {result} = {rng.choice([pick(), f'R.add({pick()}, {pick()})'])}")
            visible[:] = before + [result]
            kinds[result] = "t"
        elif r < 0.6:
            lines.append("        with R.dataflow():")
            for _ in range(rng.randint(1, 6)):
                binding(True, "            ")
            defined = visible[len(before):]
            outputs = [n for n in defined if rng.random() < 0.5] or [defined[-1]]
            lines.append(f"            R.output({', '.join(outputs)})")
            visible[:] = before + outputs
        else:
            for _ in range(rng.randint(1, 5)):
                binding(False, "        ")
    ret = [rng.choice(visible) for _ in range(rng.randint(1, 2))]
    lines.append(f"        return ({', '.join(ret)})" if len(ret) > 1 else f"        return {ret[0]}")
    return RANDOM_HEADER + "\n".join(lines) + "\n"


RANDOM_SEEDS = range(60)


def _random_inputs(seed: int):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 3)).astype("float32"),
            np.array(seed % 2 == 0)]


def _fixed_point(p, mod, limit: int = 4):
    """Run `p` until the module stops changing; the number of runs that changed it."""
    for runs in range(limit + 1):
        out = p(mod)
        if structural_equal(out, mod):
            return runs
        mod = out
    raise AssertionError(f"no fixed point after {limit} runs:\n{to_text(mod)}")


@pytest.mark.parametrize("nested", [False, True])
def test_random_programs_invariants(nested):
    """Well-formed results, the interpreter's values unchanged, dead-code-elimination
    idempotent. TVM's CanonicalizeBindings is not idempotent (a trivial binding that kept a
    variable a block output goes in the first run, the output in the second; a constant
    bound to an output is inlined in the second): it reaches a fixed point in a few runs."""
    pytest.importorskip("irtool.exec.tir")
    from irtool.exec.relax import run_relax

    dce, cb = get_pass(DCE)(), get_pass(CB)()
    for seed in RANDOM_SEEDS:
        text = random_program(seed, nested)
        mod = parse(text, f"random{seed}.py")
        outs = {"dce": dce(mod), "cb": cb(mod)}
        outs["cb,dce"] = dce(outs["cb"])
        assert structural_equal(dce(outs["dce"]), outs["dce"]), text
        assert _fixed_point(cb, outs["cb"]) <= 2, text
        for name, out in outs.items():
            verify_module(out)
            expected = _flat(run_relax(mod, _random_inputs(seed)))
            got = _flat(run_relax(out, _random_inputs(seed)))
            for a, b in zip(expected, got, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} on\n{text}")


@pytest.mark.tvm
def test_random_programs_match_tvm(tvm_python, tmp_path):
    """TVM 0.27's passes on the same random programs give what ours give (dead-code-elimination
    only without projections inside calls, which TVM's normal form binds separately)."""
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    cases = []
    for seed in RANDOM_SEEDS:
        for nested in (False, True):
            path = tmp_path / f"random{seed}_{int(nested)}.py"
            path.write_text(random_program(seed, nested))
            cases.append((str(path), nested))
    proc = subprocess.run([tvm_python, str(runner), *(p for p, _ in cases)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    tvm_ill_formed = []
    for path, nested in cases:
        mod = parse(open(path).read(), path)
        once = run(CB, mod)
        # TVM's pass is not idempotent: the second run must agree too
        results = [("dce", run(DCE, mod)), ("cb", once), ("cb2", run(CB, once))]
        for suffix, ours in results[nested:]:
            verify_module(ours)
            theirs = parse(open(f"{path}.{suffix}").read(), f"{path}.{suffix}")
            try:
                verify_module(theirs)
            except DiagnosticError:
                tvm_ill_formed.append(f"{os.path.basename(path)}.{suffix}")  # a deliberate deviation
                continue
            assert structural_equal(ours, theirs), (
                f"{os.path.basename(path)} {suffix}\nours:\n{to_text(ours)}\nTVM:\n{to_text(theirs)}")
    # where TVM uses a DataflowVar outside its block (test_cb_projection_of_an_earlier_blocks_output;
    # seed 99 with projections is such a case), ours are well-formed instead
    assert len(tvm_ill_formed) <= len(cases) // 20, tvm_ill_formed


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
