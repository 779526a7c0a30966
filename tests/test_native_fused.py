"""Random fused groups, natively: small random Relax graphs of elementwise, broadcast,
reduction, softmax, matmul, conv2d and pooling ops go through `irtool.build` (the zero
pipeline: legalize, annotate, fold constants, fuse, FuseTIR; then one native entry point).

Native outputs must equal the Relax interpreter's on the same fused module (integers
exactly, floats within rtol 1e-5: the same TIR in the same order, but exp(exp(x)) amplifies the
last bits in which libm and NumPy differ) and the original
module's NumPy references (rtol 1e-4). Each graph also runs twice with different inputs
(nothing of the first call may leak through the storage plan).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_diff import assert_close_to_reference, assert_same

import irtool
from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.text import parse

# name -> (shape, dtype): the parameters every graph may use
PARAMS = {"x": ((2, 4, 6, 6), "float32"), "w": ((4, 4, 3, 3), "float32"), "b": ((4, 1, 1), "float32"),
          "m": ((6, 5), "float32"), "v": ((6,), "float32"), "k": ((2, 4, 6, 6), "int32")}
UNARY = ["exp", "tanh", "sigmoid", "nn.relu", "negative", "abs", "sin", "floor", "sqrt"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]
REDUCE = ["sum", "mean", "max", "min"]


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da, db = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if da != db and 1 not in (da, db):
            return None
        out.append(max(da, db))
    return tuple(reversed(out))


@st.composite
def graphs(draw) -> str:
    """A dataflow block of 2-9 random bindings over PARAMS; returns the module's text."""
    pool: list[tuple[str, tuple, str]] = [("x", PARAMS["x"][0], "float32")]
    lines: list[str] = []
    used = {"x"}

    def pick(pred=lambda s, d: True):
        choices = [p for p in pool if pred(p[1], p[2])]
        return draw(st.sampled_from(choices)) if choices else None

    for i in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "param", "const", "reduce", "softmax", "matmul",
                                     "conv", "pool", "permute", "int"]))
        name = f"v{i}"
        if kind == "unary":
            a = pick(lambda s, d: d == "float32")
            op = draw(st.sampled_from(UNARY))
            arg = f"R.abs({a[0]})" if op == "sqrt" else a[0]
            if op == "sqrt":
                lines.append(f"t{i} = {arg}")
                arg = f"t{i}"
            lines.append(f"{name} = R.{op}({arg})")
            pool.append((name, a[1], "float32"))
        elif kind == "binary":
            a = pick(lambda s, d: d == "float32")
            b = pick(lambda s, d, a=a: d == "float32" and _broadcast(a[1], s) is not None)
            op = draw(st.sampled_from(BINARY))
            if op == "divide":  # a divisor away from zero
                lines.append(f"d{i} = R.add(R.abs({b[0]}), R.const(1.0, \"float32\"))")
                b = (f"d{i}", b[1], b[2])
            lines.append(f"{name} = R.{op}({a[0]}, {b[0]})")
            pool.append((name, _broadcast(a[1], b[1]), "float32"))
        elif kind == "param":
            p = draw(st.sampled_from(["b", "v"]))
            a = pick(lambda s, d, p=p: d == "float32" and _broadcast(s, PARAMS[p][0]) is not None)
            if a is None:
                continue
            used.add(p)
            op = draw(st.sampled_from(["add", "multiply", "subtract"]))
            lines.append(f"{name} = R.{op}({a[0]}, {p})")
            pool.append((name, _broadcast(a[1], PARAMS[p][0]), "float32"))
        elif kind == "const":
            a = pick(lambda s, d: d == "float32")
            value = draw(st.sampled_from([0.5, 2.0, -1.5, 3.0]))
            op = draw(st.sampled_from(["add", "multiply"]))
            lines.append(f'{name} = R.{op}({a[0]}, R.const({value}, "float32"))')
            pool.append((name, a[1], "float32"))
        elif kind == "reduce":
            a = pick(lambda s, d: d == "float32" and len(s) >= 2)
            op = draw(st.sampled_from(REDUCE))
            axis = draw(st.integers(-len(a[1]), -1))
            keep = draw(st.booleans())
            shape = list(a[1])
            if keep:
                shape[axis] = 1
            else:
                del shape[axis]
            lines.append(f"{name} = R.{op}({a[0]}, axis=[{axis}], keepdims={keep})")
            pool.append((name, tuple(shape), "float32"))
        elif kind == "softmax":
            a = pick(lambda s, d: d == "float32" and len(s) >= 1)
            lines.append(f"{name} = R.nn.softmax({a[0]}, axis=-1)")
            pool.append((name, a[1], "float32"))
        elif kind == "matmul":
            a = pick(lambda s, d: d == "float32" and len(s) >= 2 and s[-1] == 6)
            if a is None:
                continue
            used.add("m")
            lines.append(f"{name} = R.matmul({a[0]}, m)")
            pool.append((name, a[1][:-1] + (5,), "float32"))
        elif kind in ("conv", "pool"):
            a = pick(lambda s, d: d == "float32" and s == (2, 4, 6, 6))
            if a is None:
                continue
            if kind == "conv":
                used.add("w")
                lines.append(f"{name} = R.nn.conv2d({a[0]}, w, padding=[1, 1, 1, 1])")
            else:
                lines.append(f"{name} = R.nn.max_pool2d({a[0]}, pool_size=[3, 3], padding=[1, 1, 1, 1])")
            pool.append((name, a[1], "float32"))
        elif kind == "permute":
            a = pick(lambda s, d: len(s) == 4 and s[2] == s[3])
            lines.append(f"{name} = R.permute_dims({a[0]}, axes=[0, 1, 3, 2])")
            pool.append((name, a[1], a[2]))
        elif kind == "int":  # an integer branch: floor_mod and a comparison back to float
            used.add("k")
            lines.append(f'i{i} = R.floor_mod(R.multiply(k, R.const(7, "int32")), R.const(5, "int32"))')
            a = pick(lambda s, d: d == "float32" and _broadcast(s, PARAMS["k"][0]) == PARAMS["k"][0])
            if a is None:
                pool.append((f"i{i}", PARAMS["k"][0], "int32"))
                continue
            lines.append(f'{name} = R.where(R.less(i{i}, R.const(2, "int32")), {a[0]}, R.astype(i{i}, dtype="float32"))')
            pool.append((name, PARAMS["k"][0], "float32"))
    results = [pool[-1][0]]
    if len(pool) > 2 and draw(st.booleans()):
        results.insert(0, draw(st.sampled_from(pool[1:-1]))[0])
    out = results[0] if len(results) == 1 else f"({', '.join(results)})"
    sig = ", ".join(f'{p}: R.Tensor({PARAMS[p][0]}, dtype="{PARAMS[p][1]}")'.replace(",)", ")").replace("(6)", "(6,)")
                    for p in PARAMS if p in used)
    body = "".join(f"            {line}\n" for line in lines)
    return ("# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
            f"    @R.function\n    def main({sig}):\n        with R.dataflow():\n{body}"
            f"            gv = {out}\n            R.output(gv)\n        return gv\n")


def _inputs(fn: rx.Function, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in fn.params:
        s = p.struct_info
        if s.dtype == "int32":
            out.append(rng.integers(-50, 50, s.shape).astype("int32"))
        else:
            out.append(rng.uniform(-2, 2, s.shape).astype(s.dtype))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_fused_graphs_natively(text):
    mod = parse(text, "random.py")
    # without fused multiply-adds the native code computes what the scheduled TIR says
    exe = irtool.build(mod, schedule={"fp_contract": 0})
    fma = irtool.build(mod)
    fused = [name for name in exe.mod.functions if name != "main"]
    assert fused, text
    for seed in (0, 1):
        inputs = _inputs(mod.functions["main"], seed)
        got = exe(*inputs)
        assert_same(got, run_relax(exe.mod, inputs), text, rtol=1e-5)
        expected = run_relax(mod, inputs)
        assert_close_to_reference(got, expected, text, rtol=1e-4, atol=1e-4)
        assert_close_to_reference(fma(*inputs), expected, text, rtol=1e-4, atol=1e-4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_generated_graphs_parse_and_type_check(text):
    """Every graph the strategy draws is a valid module: it parses (struct info deduced for
    every binding) and its main returns what the last bindings compute."""
    mod = parse(text, "random.py")
    main = mod.functions["main"]
    assert main.body.blocks and len(main.body.blocks[0].bindings) >= 2, text
