"""legalize-ops (TVM 0.27's relax.transform.LegalizeOps): the seed models print exactly TVM's
output; each op's PrimFunc, run by the TIR interpreter, equals the op's NumPy reference; and
(tvm-marked) TVM's LegalizeOps on the same modules prints the same text."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from irtool.exec.relax import random_input, run_relax
from irtool.ir import relax as rx
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text
from irtool.transform import get_pass

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "tvm-0.27")
SEEDS = ["seed_conv_add_relu", "seed_two_conv_branches"]


def legalize(mod):
    return get_pass("legalize-ops")()(mod)


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_models_print_as_tvm(seed):
    folder = os.path.join(REFERENCE, seed)
    if not os.path.isdir(folder):
        pytest.skip("TVM reference outputs are not available")
    mod = parse(open(os.path.join(folder, "0_input.py")).read())
    expected = open(os.path.join(folder, "1_LegalizeOps.py")).read()
    assert to_text(legalize(mod)).rstrip("\n") == expected.rstrip("\n")


# ----------------------------------------------------------------------------- per-op cases
# (case id, parameters "name:shape:dtype" with shapes like 2x3 or nx3 (symbolic n), the call)

UNARY_FLOAT = ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "floor", "ceil", "round", "trunc",
               "sign", "sin", "cos", "negative", "abs", "nn.relu"]
UNARY_INT = ["abs", "negative", "sign", "nn.relu"]
BINARY_ARITH = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
                "mod", "floor_mod"]
BINARY_CMP = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]

CASES: list[tuple[str, str, str]] = []
CASES += [(f"{op}-f32", "x:2x3:float32", f"R.{op}(x)") for op in UNARY_FLOAT]
CASES += [(f"{op}-i32", "x:2x3:int32", f"R.{op}(x)") for op in UNARY_INT]
CASES += [(f"{op}-sym", "x:nx3:float32", f"R.{op}(x)") for op in ("exp", "sigmoid", "nn.relu")]
CASES += [("erf-f16", "x:2x3:float16", "R.erf(x)"), ("logical_not", "x:2x3:bool", "R.logical_not(x)"),
          ("log-f64", "x:4:float64", "R.log(x)")]
CASES += [(f"{op}-bcast", "x:2x3:float32 y:3:float32", f"R.{op}(x, y)") for op in BINARY_ARITH + BINARY_CMP]
CASES += [(f"{op}-ones", "x:2x1:float32 y:1x3:float32", f"R.{op}(x, y)") for op in ("add", "multiply", "less")]
CASES += [(f"{op}-rank", "x:4x2x3:float32 y:2x1:float32", f"R.{op}(x, y)") for op in ("subtract", "maximum")]
CASES += [(f"{op}-const", "x:2x3:float32", f'R.{op}(x, R.const(2.0, "float32"))')
          for op in ("add", "multiply", "power", "maximum", "divide", "greater")]
CASES += [(f"{op}-lconst", "x:2x3:float32", f'R.{op}(R.const(2.0, "float32"), x)') for op in ("subtract", "less")]
CASES += [(f"{op}-i32", "x:2x3:int32 y:2x3:int32", f"R.{op}(x, y)")
          for op in ("add", "floor_divide", "floor_mod", "mod", "divide", "minimum", "equal")]
CASES += [(f"{op}-bool", "x:2x3:bool y:3:bool", f"R.{op}(x, y)") for op in ("logical_and", "logical_or", "logical_xor")]
CASES += [(f"{op}-i32", "x:2x3:int32 y:3:int32", f"R.{op}(x, y)") for op in ("bitwise_and", "bitwise_or", "bitwise_xor")]
CASES += [(f"{op}-u8", "x:2x3:uint8 y:2x3:uint8", f"R.{op}(x, R.const(3, \"uint8\"))") for op in ("left_shift", "right_shift")]
CASES += [("bitwise_not-i32", "x:2x3:int32", "R.bitwise_not(x)")]
# regression (random run 8): an integer truncmod by a negative constant is simplified to the positive one
CASES += [(f"{op}-neg-{dt}", f"x:2x3:{dt}", f'R.{op}(x, R.const(-3, "{dt}"))')
          for op in ("mod", "divide", "floor_divide", "floor_mod") for dt in ("int64", "int32", "int8")]
# regression (random run 8): TVM's tirx.isinf is `T.fabs(x) == T.float32("inf") and not T.isnan(x)`,
# isnan tests float16 in float32, and both are constant False on integers
CASES += [(f"{op}-{dt}", f"x:2x3:{dt}", f"R.{op}(x)") for op in ("isinf", "isnan", "isfinite")
          for dt in ("float32", "float16", "float64", "int32")]
CASES += [(f"{op}-sym", "x:nx3:float32 y:nx3:float32", f"R.{op}(x, y)") for op in ("add", "less")]
CASES += [("add-sym-bcast", "x:nx3:float32 y:3:float32", "R.add(x, y)"),
          ("add-same", "x:2x3:float32", "R.add(x, x)")]
CASES += [("astype-f16", "x:2x3:float32", 'R.astype(x, dtype="float16")'),
          ("astype-i32", "x:2x3:float32", 'R.astype(x, dtype="int32")'),
          ("astype-bool", "x:2x3:int32", 'R.astype(x, dtype="bool")'),
          ("clip", "x:2x3:float32", "R.clip(x, R.prim_value(T.float32(-0.5)), R.prim_value(T.float32(0.5)))"),
          ("clip-int", "x:2x3:int32", "R.clip(x, R.prim_value(2), R.prim_value(5))")]
CASES += [("matmul", "x:2x3:float32 w:3x4:float32", "R.matmul(x, w)"),
          ("matmul-vec-mat", "x:3:float32 w:3x4:float32", "R.matmul(x, w)"),
          ("matmul-mat-vec", "x:2x3:float32 w:3:float32", "R.matmul(x, w)"),
          ("matmul-batch", "x:5x2x3:float32 w:3x4:float32", "R.matmul(x, w)"),
          ("matmul-batch-bcast", "x:1x2x3:float32 w:5x3x4:float32", "R.matmul(x, w)"),
          ("matmul-out-dtype", "x:2x3:float16 w:3x4:float16", 'R.matmul(x, w, out_dtype="float32")'),
          ("matmul-sym", "x:nx3:float32 w:3x4:float32", "R.matmul(x, w)")]
CASES += [("conv2d-pad", "x:1x2x6x6:float32 w:4x2x3x3:float32", "R.nn.conv2d(x, w, padding=[1, 1, 1, 1])"),
          ("conv2d-stride", "x:1x2x7x7:float32 w:4x2x3x3:float32",
           "R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 0, 2, 1], dilation=[1, 2])"),
          ("conv2d-groups", "x:1x4x5x5:float32 w:4x2x3x3:float32", "R.nn.conv2d(x, w, groups=2)"),
          ("conv2d-nhwc", "x:1x5x5x2:float32 w:3x3x2x4:float32",
           'R.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO")')]


def _param(spec: str) -> str:
    name, shape, dtype = spec.split(":")
    if not shape:  # "t::int64", a 0-d tensor
        return f'{name}: R.Tensor((), dtype="{dtype}")'
    dims = ", ".join(f'"{d}"' if d.isalpha() else d for d in shape.split("x"))
    return f'{name}: R.Tensor(({dims},), dtype="{dtype}")'.replace(",)", ")") if "x" in shape else \
        f'{name}: R.Tensor(({dims},), dtype="{dtype}")'


def case_text(params: str, call: str) -> str:
    sig = ", ".join(_param(p) for p in params.split())
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n# from tvm.script import tirx as T\n\n"
            f"@I.ir_module\nclass Module:\n    @R.function\n    def main({sig}):\n"
            f"        with R.dataflow():\n            gv = {call}\n            R.output(gv)\n        return gv\n")


_RAISES_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    try:
        relax.transform.LegalizeOps()(mod)
    except Exception as err:
        print(path, type(err).__name__)
"""


def assert_tvm_legalize_raises(tvm_python: str, tmp_path, cases) -> None:
    """TVM 0.27 parses every (name, module text) of `cases` and its LegalizeOps raises on each."""
    paths = []
    for name, text in cases:
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(text)
    runner = tmp_path / "runner.py"
    runner.write_text(_RAISES_RUNNER)
    proc = subprocess.run([tvm_python, str(runner), *map(str, paths)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == sorted(map(str, paths))


def main_call_ops(mod) -> list[str]:
    """The operators main's bindings call, in order."""
    main = mod.functions["main"]
    return [b.value.op.name for blk in main.body.blocks for b in blk.bindings if isinstance(b.value, rx.Call)]


def legalized_to_one_call(params: str, call: str):
    """(module, legalized module) of a one-call case; the call must have become one R.call_tir."""
    mod = parse(case_text(params, call))
    out = legalize(mod)
    assert main_call_ops(out) == ["relax.call_tir"], f"not legalized: {main_call_ops(out)}"
    return mod, out


def _inputs(fn, rng):
    out = []
    for p in fn.params:
        value = random_input(p.struct_info, rng)
        if value.dtype.kind == "i":  # nonzero divisors, both signs
            value = (value % 9 + 1) * np.where(rng.random(value.shape) < 0.5, -1, 1).astype(value.dtype)
        elif value.dtype.kind == "f":
            value = (np.abs(value) + 0.1).astype(value.dtype) if "log" in str(fn.body) else value
        out.append(value)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    """The legalized PrimFunc, run by the TIR interpreter, equals the op's NumPy reference."""
    name, params, call = case
    mod, out = legalized_to_one_call(params, call)
    inputs = _inputs(mod.functions["main"], np.random.default_rng(0))
    if any(k in name for k in ("log", "sqrt", "rsqrt", "power")):
        inputs = [np.abs(v) + 0.5 if v.dtype.kind == "f" else v for v in inputs]
    expected = run_relax(mod, inputs)
    got = run_relax(out, inputs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 1e-3 if "16" in params else 1e-5
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol, atol=tol)
    # printing and parsing back gives the same module
    assert structural_equal(parse(to_text(out)), out)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_isinf_isnan_isfinite_legalized_on_special_values(dtype):
    """inf, -inf and nan through the legalized PrimFuncs, run by the TIR interpreter, equal NumPy."""
    x = np.array([[np.inf, -np.inf, np.nan], [0.0, -1.5, 65504.0]], dtype)
    for op, expected in (("isinf", np.isinf(x)), ("isnan", np.isnan(x)), ("isfinite", np.isfinite(x))):
        out = legalize(parse(case_text(f"x:2x3:{dtype}", f"R.{op}(x)")))
        assert run_relax(out, [x]).tolist() == expected.tolist(), op


# ----------------------------------------------------------------------------- whole modules

# A PrimFunc named `add` already in the module: TVM's names continue with add1, add2; two
# Relax functions share the structurally equal `add1`; a 0-d result gets TVM's dummy block
# iterator; a tensor of unknown shape (ndim=2) is left to R.exp.
MODULE_WITH_NAMES = """# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(A: T.Buffer((T.int64(4),), "float32"), B: T.Buffer((T.int64(4),), "float32"), C: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            with T.sblock("C"):
                vi = T.axis.spatial(T.int64(4), i)
                C[vi] = A[vi] + B[vi]

    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), y: R.Tensor((), dtype="float32"), z: R.Tensor(ndim=2, dtype="float32")):
        cls = Module
        with R.dataflow():
            a = R.add(x, x)
            b = R.call_tir(cls.add, (a, x), out_ty=R.Tensor((4,), dtype="float32"))
            c = R.multiply(y, y)
            d = R.exp(z)
            e = R.add(b, c)
            R.output(a, b, c, d, e)
        return e

    @R.function
    def other(x: R.Tensor((4,), dtype="float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.subtract(a, x)
            R.output(b)
        return b
"""


def test_names_dedup_and_untouched_calls():
    out = legalize(parse(MODULE_WITH_NAMES))
    assert sorted(out.functions) == ["add", "add1", "add2", "main", "multiply", "other", "subtract"]
    text = to_text(out)
    assert "a = R.call_tir(cls.add1, (x, x)" in text and text.count("def add1(") == 1
    assert 'd: R.Tensor(dtype="float32", ndim=2) = R.exp(z)' in text
    assert "vi = T.axis.spatial(T.int64(1), T.int64(0))" in text


# match_cast of a call outside a dataflow block: the legalized call is bound first, named
# from the pass's one name supply (gv, gv1, ... across functions, shared with the bindings
# legalizations emit: dynamic_strided_slice's gv1..gv3), as TVM 0.27 prints it
MATCH_CAST_OF_CALLS = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((8, 10), dtype="float32"), b: R.Tensor((2,), dtype="int64"), e: R.Tensor((2,), dtype="int64"), st: R.Tensor((2,), dtype="int64")):
        y: R.Tensor((8, 10), dtype="float32") = R.match_cast(R.exp(x), R.Tensor((8, 10), dtype="float32"))
        d = R.dynamic_strided_slice(y, b, e, st)
        y2: R.Tensor((8, 10), dtype="float32") = R.match_cast(R.exp(y), R.Tensor((8, 10), dtype="float32"))
        return (y2, d)

    @R.function
    def main(x: R.Tensor((3,), dtype="float32")) -> R.Tensor((3,), dtype="float32"):
        y: R.Tensor((3,), dtype="float32") = R.match_cast(R.exp(x), R.Tensor((3,), dtype="float32"))
        return y
"""


def test_match_cast_of_a_call_binds_it_to_a_fresh_gv():
    """Fuzz run 12 (a nested-call module checked against TVM): ours named every such
    binding `lv`, in or out of a dataflow block."""
    text = to_text(legalize(parse(MATCH_CAST_OF_CALLS)))
    casts = [line.split("R.match_cast(")[1].split(",")[0] for line in text.splitlines() if "R.match_cast(" in line]
    assert casts == ["gv", "gv2", "gv4", "gv5"]  # y, the slice's sizes, y2; main's y


UNARY_CHAIN = ["exp", "tanh", "sigmoid", "negative", "abs", "nn.relu", "floor", "round", "sin"]
BINARY_CHAIN = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]


def random_program(seed: int) -> str:
    """A dataflow block of random unary/binary ops over (2, 3) and (3,) tensors and scalar
    constants: exercises naming, sharing and broadcasting together."""
    rng = np.random.default_rng(seed)
    pool = [("x", 2), ("y", 1)]
    lines = []
    for i in range(int(rng.integers(3, 9))):
        if rng.random() < 0.4:
            op, (a, ra) = UNARY_CHAIN[rng.integers(len(UNARY_CHAIN))], pool[rng.integers(len(pool))]
            lines.append(f"v{i} = R.{op}({a})")
            pool.append((f"v{i}", ra))
        else:
            op = BINARY_CHAIN[rng.integers(len(BINARY_CHAIN))]
            (a, ra), (b, rb) = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
            if rng.random() < 0.25:
                b, rb = f'R.const({float(rng.integers(1, 4))}, "float32")', 0
            lines.append(f"v{i} = R.{op}({a}, {b})")
            pool.append((f"v{i}", max(ra, rb)))
    body = "".join(f"            {line}\n" for line in lines)
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
            "    @R.function\n"
            '    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((3,), dtype="float32")):\n'
            f"        with R.dataflow():\n{body}            R.output({pool[-1][0]})\n        return {pool[-1][0]}\n")


RANDOM_SEEDS = range(12)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_programs_run_as_the_references(seed):
    mod = parse(random_program(seed))
    out = legalize(mod)
    inputs = _inputs(mod.functions["main"], np.random.default_rng(seed))
    np.testing.assert_allclose(run_relax(out, inputs), run_relax(mod, inputs), rtol=1e-5, atol=1e-5)


_TVM_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    with open(path + ".tvm", "w") as f:
        f.write(relax.transform.LegalizeOps()(mod).script(show_meta=True))
"""


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps on every case module prints exactly what ours prints."""
    texts = [(name, case_text(params, call)) for name, params, call in CASES]
    texts += [("module_with_names", MODULE_WITH_NAMES)] + [(f"random{s}", random_program(s)) for s in RANDOM_SEEDS]
    texts.append(("match_cast_of_calls", MATCH_CAST_OF_CALLS))
    assert_legalized_like_tvm(tvm_python, tmp_path, texts)


def assert_legalized_like_tvm(tvm_python, tmp_path, texts, normalize=None) -> None:
    """TVM 0.27's LegalizeOps on each (name, module text) prints exactly what ours prints
    (after `normalize` of both texts, where TVM's printout varies from run to run)."""
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    paths = []
    for name, text in texts:
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    failures = []
    for path in paths:
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True).rstrip("\n")
        theirs = open(path + ".tvm").read().rstrip("\n")
        if normalize is not None:
            ours, theirs = normalize(ours), normalize(theirs)
        if ours != theirs:
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(paths)} differ:\n" + "\n\n".join(failures[:3])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
