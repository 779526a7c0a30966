"""Symbolic dims in the ONNX importer (frontend/onnx/symbolic.py): reshape targets computed
from `Shape` of one tensor and applied to another stay static Relay reshapes (0 / -1 / -3
/ -4) when the sizes are provably the same, so a multi-head attention with symbolic batch
and sequence imports without `dyn.*` ops, lowers to Relax with symbolic dims, and equals
onnxruntime for any size."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import irtool  # noqa: E402
from irtool.frontend.onnx import from_onnx  # noqa: E402
from irtool.frontend.onnx.symbolic import UNKNOWN, Mono, mul, newshape_for, symbolic_reshape  # noqa: E402
from irtool.ir.expr import Call  # noqa: E402
from irtool.ir.visitor import post_order  # noqa: E402
from irtool.ops.transform import reshape_shape  # noqa: E402
from irtool.text import parse, to_text  # noqa: E402
from irtool.transform import get_pass  # noqa: E402

SHAPES = [(1, 3, 16), (2, 5, 16), (4, 1, 16)]


def attention_model(emb=16, heads=2, flatten=False):
    """torch's multi-head attention as exported: the head split and merge reshape to
    Concat(Shape(x)[0], Shape(x)[1], heads, head_dim), sizes read off the input, not off
    the tensor reshaped; `flatten` adds view(N * S, E) around the output projection."""
    dim = emb // heads
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((emb, emb)).astype(np.float32) / 4, n)
             for n in ("Wq", "Wk", "Wv", "Wo")]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("i0", 0), ("i1", 1), ("ax0", [0]), ("heads", [heads]), ("hd", [dim]), ("emb", [emb]))]
    inits.append(numpy_helper.from_array(np.float32(np.sqrt(dim)), "scale"))
    node = helper.make_node
    nodes = [node("Shape", ["x"], ["shp"]), node("Gather", ["shp", "i0"], ["N"]), node("Gather", ["shp", "i1"], ["S"]),
             node("Unsqueeze", ["N", "ax0"], ["N1"]), node("Unsqueeze", ["S", "ax0"], ["S1"]),
             node("Concat", ["N1", "S1", "heads", "hd"], ["split_shape"], axis=0),
             node("Concat", ["N1", "S1", "emb"], ["merge_shape"], axis=0)]
    for p in "qkv":
        nodes += [node("MatMul", ["x", f"W{p}"], [f"{p}0"]), node("Reshape", [f"{p}0", "split_shape"], [f"{p}1"]),
                  node("Transpose", [f"{p}1"], [f"{p}2"], perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
    nodes += [node("MatMul", ["q2", "k2"], ["scores0"]), node("Div", ["scores0", "scale"], ["scores"]),
              node("Softmax", ["scores"], ["attn"], axis=-1), node("MatMul", ["attn", "v2"], ["ctx0"]),
              node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
              node("Reshape", ["ctx1", "merge_shape"], ["ctx2"])]
    if flatten:
        nodes += [node("Mul", ["N1", "S1"], ["NS"]), node("Concat", ["NS", "emb"], ["flat_shape"], axis=0),
                  node("Reshape", ["ctx2", "flat_shape"], ["ctx3"]), node("MatMul", ["ctx3", "Wo"], ["y0"]),
                  node("Reshape", ["y0", "merge_shape"], ["y"])]
    else:
        nodes.append(node("MatMul", ["ctx2", "Wo"], ["y"]))
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", emb])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "S", emb])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_onnx(model)[0]


def _ops(mod) -> list[str]:
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and hasattr(n.op, "name")]


def _check_against_onnxruntime(model, run):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in SHAPES:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(np.asarray(run(x)), session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_attention_with_symbolic_batch_and_sequence_has_static_reshapes():
    model = attention_model()
    mod = _import(model)
    ops = _ops(mod)
    assert not [op for op in ops if op.startswith("dyn.")], ops
    assert ops.count("reshape") == 10
    text = to_text(mod)
    # the head split [N, S, 2, 8] of a (N, S, 16) input: copies; the batched matmuls flatten
    # (N, 2, S, 8) with -3 and split (2N, S, S) back with -4
    assert "newshape=[0, 0, 2, 8]" in text and "newshape=[-3, 0, 8]" in text and "newshape=[-4, -1, 2, 0, 0]" in text
    assert "def @main(%x: Tensor[(?, ?, 16), float32])" in text
    _check_against_onnxruntime(model, lambda x: irtool.interpret(mod, [x]))
    _check_against_onnxruntime(model, lambda x: irtool.interpret(parse(text), [x]))


def test_attention_lowers_to_relax_with_symbolic_dims():
    model = attention_model()
    relax = get_pass("relay-to-relax")()(_import(model))
    text = to_text(relax)
    assert 'def main(x: R.Tensor((d, d_1, 16), dtype="float32")) -> R.Tensor((d, d_1, 16), dtype="float32")' in text
    assert "R.reshape(lv3, R.shape([d * 2, d_1, 8]))" in text  # -3 on symbolic dims
    assert "R.shape([d, 2, d_1, d_1])" in text  # -4 splits d * 2 back
    _check_against_onnxruntime(model, lambda x: irtool.interpret(relax, [x]))


def test_attention_with_a_flattened_projection():
    # view(N * S, E) merges two symbolic dims (-3); splitting N * S back into N and S has no
    # static newshape (-4 needs one of the two sizes static), but the target was computed
    # from Shape(x), whose dims are those sizes: reshape_like(y, x)
    model = attention_model(flatten=True)
    mod = _import(model)
    text = to_text(mod)
    assert "newshape=[-3, 16]" in text and "reshape_like(%22, %x, lhs_end=2, rhs_end=3)" in text
    assert not [op for op in _ops(mod) if op.startswith("dyn.")]
    _check_against_onnxruntime(model, lambda x: irtool.interpret(mod, [x]))


def test_flattened_projection_lowers_to_relax_and_native_code():
    # regression: R.matmul of the (d * d_1, 16) operand lost its shape in the struct info, and
    # R.reshape of that unknown shape to (d, d_1, 16) gave the sizes' sentinels (the Relax
    # interpreter reported them); the zero pipeline passes `d` of a `d * 2` batch to the
    # batched matmuls as a PrimValue, and the native build takes it
    from irtool.codegen.executable import build

    model = attention_model(flatten=True)
    mod = _import(model)
    relax = get_pass("relay-to-relax")()(mod)
    text = to_text(relax)
    assert 'R.Tensor((d * d_1, 16), dtype="float32") = R.matmul(' in text
    assert 'gv: R.Tensor((d, d_1, 16), dtype="float32") = R.reshape(' in text
    lowered = get_pass("zero-pipeline")()(relax)
    assert "T.max(d * 2, d * 2)" not in to_text(lowered)
    _check_against_onnxruntime(model, lambda x: irtool.interpret(relax, [x]))
    _check_against_onnxruntime(model, lambda x: irtool.interpret(lowered, [x]))
    _check_against_onnxruntime(model, build(mod))


def test_torch_encoder_keeps_fewer_dynamic_reshapes():
    # TransformerEncoderLayer exported with dynamic axes: its query and output head reshapes
    # become static (one a reshape_like of the input); the key/value path reshapes to the
    # traced source length 10, which no rule relates to the symbolic S, so 3 dyn.reshape
    # remain (14 before symbolic dims)
    from pathlib import Path

    mod = _import(onnx.load(Path(__file__).parent / "data" / "onnx" / "dynamic_enc.onnx"))
    assert _ops(mod).count("dyn.reshape") == 3 and _ops(mod).count("reshape_like") == 1


# ----------------------------------------------------------------------------- symbolic sizes

N, S = Mono.fresh(), Mono.fresh()


def _concrete(dims, n=3, s=5):
    """The sizes with N = n and S = s."""
    values = {N: n, S: s}
    out = []
    for d in dims:
        if isinstance(d, Mono):
            size = d.coef
            for sym in d.syms:
                size *= next(v for m, v in values.items() if m.syms == (sym,))
            out.append(size)
        else:
            out.append(d)
    return tuple(out)


@pytest.mark.parametrize("src,target,newshape", [
    ((N, S, 16), [N, S, 2, 8], (0, 0, 2, 8)),
    ((N, 2, S, 8), [UNKNOWN, S, 8], (-3, 0, 8)),
    ((mul(N, 2), S, S), [N, 2, S, S], (-4, -1, 2, 0, 0)),
    ((N, S, 2, 8), [N, S, 16], (0, 0, -3)),
    ((N, S, 16), [mul(N, S), 16], (-3, 16)),
    ((N, S, 16), [N, UNKNOWN], (0, -1)),
    ((mul(N, S), 16), [N, S, 16], None),  # two symbolic sizes out of one: no static newshape
    ((N, S, 16), [S, N, 16], None),  # a permutation is not a reshape of the sizes given
])
def test_newshape_for(src, target, newshape):
    assert newshape_for(src, target) == newshape
    if newshape is not None:
        # the newshape means, for concrete sizes, what the target says
        concrete = reshape_shape(_concrete(src), newshape, False)
        assert all(t is UNKNOWN or c == w for c, w, t in zip(concrete, _concrete(target), target))
        assert np.prod(concrete) == np.prod(_concrete(src))


def test_symbolic_reshape_infers_exact_quotients():
    assert symbolic_reshape((N, S, 32), (0, 0, 4, -1)) == (N, S, 4, 8)
    assert symbolic_reshape((N, S, 32), (-1, 8)) == (mul(mul(N, S), 4), 8)
    assert symbolic_reshape((mul(N, 4), S), (-4, -1, 4, 0)) == (N, 4, S)
    assert symbolic_reshape((N, S), (3, -1)) == (3, UNKNOWN)  # N * S / 3 is not a product of sizes


def test_broadcast_of_two_symbolic_dims_is_not_assumed_equal_to_either():
    # x (N, 4) + y (M, 4) may broadcast N = 1 against M = 3: the sum's first dim is neither
    # symbol, so reshaping it to [N, -1] must not copy its first dim (it stays dynamic)
    node = helper.make_node
    nodes = [node("Add", ["x", "y"], ["z"]), node("Shape", ["x"], ["shp"]), node("Gather", ["shp", "i0"], ["n"]),
             node("Unsqueeze", ["n", "ax0"], ["n1"]), node("Concat", ["n1", "m1"], ["target"], axis=0),
             node("Reshape", ["z", "target"], ["out"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("i0", 0), ("ax0", [0]), ("m1", [-1]))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                                           helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    mod = _import(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, m in ((1, 3), (3, 1), (2, 2)):
        feeds = {"x": np.ones((n, 4), np.float32), "y": np.arange(4 * m, dtype=np.float32).reshape(m, 4)}
        want = session.run(None, feeds)[0]
        got = irtool.interpret(mod, feeds)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- random reshape chains


def _random_chain(seed: int):
    """x (N, S, 12), then 2-6 random steps: a transpose, a broadcast Add, or a Reshape that
    regroups the dims' factors (12 as 3 * 4 too) into a target built as torch builds it:
    Concat of Shape(t)[axis] of random earlier tensors t holding a factor, Mul'ed
    together and with static factors, sometimes one -1."""
    import random

    rng = random.Random(seed)
    nodes, inits, counter = [], [], iter(range(10 ** 6))

    def fresh(prefix):
        return f"{prefix}{next(counter)}"

    def const(value, dtype=np.int64):
        name = fresh("c")
        inits.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def dim_of(t, axis):
        shape, out = fresh("shape"), fresh("dim")
        nodes.extend([helper.make_node("Shape", [t], [shape]), helper.make_node("Gather", [shape, const([axis])], [out])])
        return out

    factors = {"x": [("N",), ("S",), (12,)]}  # each dim as the tuple of factors it multiplies
    order = ["x"]
    for _ in range(rng.randint(2, 6)):
        src, out = rng.choice(order), None
        dims = factors[src]
        r = rng.random()
        if r < 0.3:
            perm = rng.sample(range(len(dims)), len(dims))
            out = fresh("t")
            nodes.append(helper.make_node("Transpose", [src], [out], perm=perm))
            factors[out] = [dims[p] for p in perm]
        elif r < 0.45:
            shape = [d[0] if len(d) == 1 and isinstance(d[0], int) else 1 for d in dims]
            out = fresh("a")
            nodes.append(helper.make_node("Add", [src, const(np.ones(shape), np.float32)], [out]))
            factors[out] = dims
        else:
            flat = []
            for f in (f for d in dims for f in d):
                flat += [3, 4] if f == 12 and rng.random() < 0.5 else [f]
            groups, current = [], []
            for f in flat:
                current.append(f)
                if rng.random() < 0.6:
                    groups.append(tuple(current))
                    current = []
            groups += [tuple(current)] if current else []
            inferred = rng.randrange(len(groups)) if rng.random() < 0.3 else None
            parts = []
            for k, group in enumerate(groups):
                static = int(np.prod([f for f in group if isinstance(f, int)]))
                symbols = [f for f in group if not isinstance(f, int)]
                if k == inferred or not symbols:
                    parts.append(const([-1 if k == inferred else static]))
                    continue
                holders = [(t, a) for t in order for a, d in enumerate(factors[t]) if d == (symbols[0],)]
                size = dim_of(*rng.choice(holders))
                for sym in symbols[1:]:
                    holders = [(t, a) for t in order for a, d in enumerate(factors[t]) if d == (sym,)]
                    product = fresh("mul")
                    nodes.append(helper.make_node("Mul", [size, dim_of(*rng.choice(holders))], [product]))
                    size = product
                if static != 1:
                    product = fresh("mul")
                    nodes.append(helper.make_node("Mul", [size, const([static])], [product]))
                    size = product
                parts.append(size)
            target, out = fresh("target"), fresh("r")
            nodes += [helper.make_node("Concat", parts, [target], axis=0), helper.make_node("Reshape", [src, target], [out])]
            factors[out] = groups
        order.append(out)
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 12])],
                              [helper.make_tensor_value_info(order[-1], TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("seed", range(30))
def test_random_reshape_chains_against_onnxruntime(seed):
    # the static newshapes chosen (0, -1, -3, -4 over symbolic sizes) are right for every size
    model = _random_chain(seed)
    mod = _import(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, s in ((2, 3), (1, 5), (4, 1)):
        x = np.arange(n * s * 12, dtype=np.float32).reshape(n, s, 12)
        want = session.run(None, {"x": x})[0]
        got = irtool.interpret(mod, [x])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_random_reshape_chains_mostly_stay_static():
    # the chains above exercise the special values, and few reshapes stay dynamic
    import re

    texts = [to_text(_import(_random_chain(seed)), show_meta_data=False) for seed in range(30)]
    codes = [v for t in texts for shape in re.findall(r"newshape=\[([^\]]*)\]", t) for v in shape.split(", ")]
    static, dynamic = sum(t.count(" reshape(") for t in texts), sum(t.count("dyn.reshape(") for t in texts)
    assert {"0", "-1", "-3", "-4"} <= set(codes)
    assert dynamic * 4 < static, (static, dynamic)


def test_sizes_of_a_deep_chain_do_not_recurse():
    # regression: the sizes of a tensor 800 ops after the input were derived recursively
    # (RecursionError); Shape(x) of the input then reshapes the chain's end statically
    node = helper.make_node
    nodes, prev = [], "x"
    for i in range(800):
        nodes.append(node("Relu" if i % 2 else "Neg", [prev], [f"h{i}"]))
        prev = f"h{i}"
    nodes += [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i0"], ["n"]), node("Unsqueeze", ["n", "ax"], ["n1"]),
              node("Concat", ["n1", "m1"], ["target"], axis=0), node("Reshape", [prev, "target"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("i0", 0), ("ax", [0]), ("m1", [-1]))]
    graph = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    mod = _import(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8))
    assert "reshape(%799, newshape=[0, -1])" in to_text(mod)


def test_shape_arithmetic_on_symbolic_sizes():
    from irtool.frontend.onnx.symbolic import arithmetic

    assert list(arithmetic("multiply", [N, 3], 2)) == [mul(N, 2), 6]
    assert list(arithmetic("divide", [mul(N, 8), -7, 7], [4, 2, -2])) == [mul(N, 2), -3, -3]  # truncated, as Relay
    assert list(arithmetic("floor_divide", [-7, mul(N, 3)], [2, 2])) == [-4, UNKNOWN]  # 3N / 2 is not a size
    assert list(arithmetic("maximum", [N, N, 1], [1, N, S])) == [N, N, S]  # broadcasting: 1 stretches
    assert list(arithmetic("add", [N, 2], [1, 3])) == [UNKNOWN, 5]  # sums are not tracked
