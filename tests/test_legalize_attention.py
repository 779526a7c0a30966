"""legalize-ops on R.nn.attention and R.nn.attention_bias (codegen/topi/attention.py, TVM 0.27's
_te_attention): each legalized module, run by the interpreters, equals the op's NumPy reference
(irtool/ops/relax_attention.py) and prints and parses back unchanged; (tvm-marked) TVM 0.27's
LegalizeOps prints exactly the same text, on hand-picked and random attribute combinations
(scale, causal masks, bias broadcasts, float16, other key lengths and head dims, size
variables), and TVM's zero pipeline (legalize, annotate, fold, fuse-ops, fuse-tir) on a module
using R.nn.attention prints what ours prints. The forms TVM's LegalizeOps refuses (a
window_size, an unknown causal mask, every R.nn.attention_var_len) stay calls."""

from __future__ import annotations

import os
import random
import subprocess

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, case_text, legalize

from irtool.diagnostics import DiagnosticError
from irtool.exec.relax import random_input, run_relax
from irtool.ir import relax as rx
from irtool.ir.structural import structural_equal
from irtool.ops.relax_attention import attention as attention_reference
from irtool.text import parse, to_text
from irtool.transform import get_pass

# (case id, parameters "name:shape:dtype" (shapes like 2x4x3x8, n and m size variables), the call)
CASES: list[tuple[str, str, str]] = [
    ("plain",             "q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32", "R.nn.attention(q, k, v)"),
    ("scale",             "q:1x3x2x4:float32 k:1x3x2x4:float32 v:1x3x2x4:float32",
     "R.nn.attention(q, k, v, scale=0.3)"),
    ("topleft",           "q:2x4x2x4:float32 k:2x6x2x4:float32 v:2x6x2x3:float32",
     'R.nn.attention(q, k, v, causal_mask="TopLeft")'),
    ("bottomright",       "q:1x4x2x4:float32 k:1x6x2x4:float32 v:1x6x2x4:float32",
     'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    ("bottomright-longq", "q:1x5x2x4:float32 k:1x3x2x4:float32 v:1x3x2x4:float32",
     'R.nn.attention(q, k, v, scale=0.25, causal_mask="BottomRight")'),
    ("bias",              "q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:2x3x4x6:float32",
     "R.nn.attention(q, k, v, b)"),
    ("bias-broadcast",    "q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:1x3x1x6:float32",
     'R.nn.attention(q, k, v, b, 0.5, "TopLeft")'),
    ("bias-op",           "q:1x4x2x4:float32 k:1x4x2x4:float32 v:1x4x2x4:float32 b:1x1x4x4:float32",
     'R.nn.attention_bias(q, k, v, b, causal_mask="BottomRight")'),
    ("f16",               "q:1x3x2x8:float16 k:1x5x2x8:float16 v:1x5x2x8:float16", "R.nn.attention(q, k, v)"),
    ("f16-mask",          "q:1x3x2x8:float16 k:1x5x2x8:float16 v:1x5x2x8:float16",
     'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    # a scale is a float32 FloatImm: float16 scores are cast to float32, and so is the result
    ("f16-scale",         "q:1x2x1x2:float16 k:1x3x1x2:float16 v:1x3x1x2:float16",
     'R.nn.attention(q, k, v, scale=0.3, causal_mask="TopLeft")'),
    ("f16-bias",          "q:1x3x2x4:float16 k:1x3x2x4:float16 v:1x3x2x4:float16 b:1x2x3x3:float16",
     "R.nn.attention(q, k, v, b)"),
    ("batch-one-head",    "q:1x2x1x4:float32 k:1x3x1x4:float32 v:1x3x1x2:float32", "R.nn.attention(q, k, v)"),
    ("sym-seq",           "q:1xnx2x4:float32 k:1xmx2x4:float32 v:1xmx2x4:float32", "R.nn.attention(q, k, v)"),
    ("sym-bottomright",   "q:1xnx2x4:float16 k:1xmx2x4:float16 v:1xmx2x4:float16",
     'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    ("sym-kv-static",     "q:1x4x2x4:float32 k:1xmx2x4:float32 v:1xmx2x4:float32",
     'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    ("sym-q-static",      "q:1xnx2x4:float32 k:1x6x2x4:float32 v:1x6x2x4:float32",
     'R.nn.attention(q, k, v, scale=0.5, causal_mask="BottomRight")'),
    ("sym-same",          "q:1xnx2x4:float32 k:1xnx2x4:float32 v:1xnx2x4:float32",
     'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    ("sym-batch",         "q:nx3x2x4:float32 k:nx3x2x4:float32 v:nx3x2x4:float32 b:nx2x3x3:float32",
     'R.nn.attention(q, k, v, b, causal_mask="TopLeft")'),
]

# grouped-query attention (fewer key/value heads): legalized as TVM does, which is not its meaning
GQA = ("gqa", "q:1x2x4x2:float32 k:1x3x2x2:float32 v:1x3x2x2:float32", "R.nn.attention(q, k, v)")

# the forms TVM 0.27's LegalizeOps refuses: the call stays
UNLEGALIZED: list[tuple[str, str, str]] = [
    ("window", "q:1x4x2x4:float32 k:1x4x2x4:float32 v:1x4x2x4:float32",
     'R.nn.attention(q, k, v, causal_mask="BottomRight", window_size=2)'),
    ("bias-window", "q:1x4x2x4:float32 k:1x4x2x4:float32 v:1x4x2x4:float32 b:1x2x4x4:float32",
     "R.nn.attention(q, k, v, b, window_size=3)"),
    ("var_len", "q:1x7x2x4:float32 k:1x9x2x4:float32 v:1x9x2x3:float32 sq:3:int32 sk:3:int32 mq:1:int32 mk:1:int32",
     "R.nn.attention_var_len(q, k, v, sq, mq, sk, mk)"),
]


def random_case(rng: random.Random, k: int) -> tuple[str, str, str]:
    """Random sizes (the key length and the value's head dim apart from the query's), dtype,
    bias (broadcast on any of its first three dims), scale and mask."""
    b, s, h, d = (rng.randint(1, 3) for _ in range(4))
    s_kv, d_v = rng.randint(1, 4), rng.randint(1, 3)
    dtype = rng.choice(["float32", "float32", "float16"])
    params = [f"q:{b}x{s}x{h}x{d}:{dtype}", f"k:{b}x{s_kv}x{h}x{d}:{dtype}", f"v:{b}x{s_kv}x{h}x{d_v}:{dtype}"]
    args = ["q", "k", "v"]
    if rng.random() < 0.4:
        params.append("b:" + "x".join(str(rng.choice([n, 1])) for n in (b, h, s)) + f"x{s_kv}:{dtype}")
        args.append("b")
    attrs = []
    if rng.random() < 0.5:
        attrs.append(f"scale={rng.choice([0.5, 0.125, 0.3, 2.0])}")
    mask = rng.choice([None, "TopLeft", "BottomRight"])
    if mask:
        attrs.append(f'causal_mask="{mask}"')
    return f"random{k}", " ".join(params), f"R.nn.attention({', '.join(args + attrs)})"


RANDOM = [random_case(random.Random(seed), seed) for seed in range(24)]


def _inputs(mod, rng):
    return [random_input(p.struct_info, rng) for p in mod.functions["main"].params]


def _call_ops(mod) -> list[str]:
    return [b.value.op.name for blk in mod.functions["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, rx.Call)]


@pytest.mark.parametrize("case", CASES + RANDOM, ids=[c[0] for c in CASES + RANDOM])
def test_legalized_matches_reference(case):
    name, params, call = case
    mod = parse(case_text(params, call))
    out = legalize(mod)
    assert _call_ops(out) == ["relax.call_tir"]
    inputs = _inputs(mod, np.random.default_rng(1))
    got, want = run_relax(out, inputs), run_relax(mod, inputs)
    assert got.shape == want.shape
    tol = 2e-2 if "float16" in params else 1e-5
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=tol, atol=tol)
    assert structural_equal(parse(to_text(out)), out)


def test_grouped_query_attention_is_legalized_as_tvm_reshapes_it():
    """With 4 query heads and 2 key heads TVM's reshape of k and v to (B * H, Skv, D) reads key
    head h % 2 for query head h (batch 1): the reference of tiled heads, not grouped ones."""
    name, params, call = GQA
    mod = parse(case_text(params, call))
    q, k, v = _inputs(mod, np.random.default_rng(2))
    got = run_relax(legalize(mod), [q, k, v])
    np.testing.assert_allclose(got, attention_reference(q, np.tile(k, (1, 1, 2, 1)), np.tile(v, (1, 1, 2, 1))),
                               rtol=1e-5, atol=1e-6)
    grouped = run_relax(mod, [q, k, v])  # the reference: query heads 0, 1 share key head 0
    np.testing.assert_allclose(grouped, attention_reference(q, np.repeat(k, 2, axis=2), np.repeat(v, 2, axis=2)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", UNLEGALIZED, ids=[c[0] for c in UNLEGALIZED])
def test_refused_forms_stay_calls(case):
    name, params, call = case
    mod = parse(case_text(params, call))
    ops = _call_ops(legalize(mod))
    assert ops[-1] == mod.functions["main"].body.blocks[0].bindings[-1].value.op.name


def test_bias_given_to_either_name_builds_attention_bias():
    """TVM's Python API: a bias makes relax.nn.attention_bias, none relax.nn.attention,
    positionally, by keyword or as None."""
    params = "q:1x2x1x4:float32 k:1x3x1x4:float32 v:1x3x1x4:float32 b:1x1x2x3:float32"
    for call, op in [("R.nn.attention(q, k, v, b)", "relax.nn.attention_bias"),
                     ("R.nn.attention(q, k, v, bias=b, scale=0.5)", "relax.nn.attention_bias"),
                     ("R.nn.attention(q, k, v, None, 0.5)", "relax.nn.attention"),
                     ("R.nn.attention_bias(q, k, v)", "relax.nn.attention"),
                     ("R.nn.attention_bias(q, k, v, None)", "relax.nn.attention"),
                     ("R.nn.attention_bias(q, k, v, bias=b)", "relax.nn.attention_bias")]:
        mod = parse(case_text(params, call))
        assert _call_ops(mod) == [op], call
    text = to_text(parse(case_text(params, "R.nn.attention(q, k, v, b, 0.5)")))
    assert "R.nn.attention_bias(q, k, v, b, scale=T.float32(0.5), causal_mask=None, window_size=None)" in text


def test_var_len_stores_seqstart_k_before_max_seqlen_q():
    """TVM stores and prints (seqstart_q, seqstart_k, max_seqlen_q, max_seqlen_k) but takes
    (seqstart_q, max_seqlen_q, seqstart_k, max_seqlen_k): its printout read back swaps them."""
    params = "q:1x7x2x4:float32 k:1x9x2x4:float32 v:1x9x2x3:float32 sq:3:int32 sk:3:int32 mq:1:int32 mk:1:int32"
    text = to_text(parse(case_text(params, "R.nn.attention_var_len(q, k, v, sq, mq, sk, mk)")))
    assert "R.nn.attention_var_len(q, k, v, sq, sk, mq, mk, scale=None" in text
    assert "R.nn.attention_var_len(q, k, v, sq, mq, sk, mk, scale=None" in to_text(parse(text))
    text = to_text(parse(case_text(params, "R.nn.attention_var_len(q, k, v, sq, mq)")))
    assert "R.nn.attention_var_len(q, k, v, sq, sq, mq, mq, scale=None" in text


def test_var_len_reference_attends_within_each_sequence():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((1, 7, 2, 4)), rng.standard_normal((1, 9, 2, 4)), rng.standard_normal((1, 9, 2, 3))
    sq, sk = np.array([0, 3, 7], "int32"), np.array([0, 4, 9], "int32")
    mod = parse(case_text("q:1x7x2x4:float64 k:1x9x2x4:float64 v:1x9x2x3:float64 sq:3:int32 sk:3:int32",
                          'R.nn.attention_var_len(q, k, v, sq, R.const(4, "int32"), sk, causal_mask="BottomRight")'))
    got = run_relax(mod, [q, k, v, sq, sk])
    for (q0, q1), (k0, k1) in (((0, 3), (0, 4)), ((3, 7), (4, 9))):
        want = attention_reference(q[:, q0:q1], k[:, k0:k1], v[:, k0:k1], causal_mask="BottomRight")
        np.testing.assert_allclose(got[:, q0:q1], want)


@pytest.mark.parametrize("params, call, message", [
    ("q:2x4x3:float32 k:2x6x3x8:float32 v:2x6x3x5:float32", "R.nn.attention(q, k, v)", "query should have 4"),
    ("q:2x4x3x8:float32 k:3x6x3x8:float32 v:2x6x3x5:float32", "R.nn.attention(q, k, v)", "batch size"),
    ("q:2x4x3x8:float32 k:2x6x2x8:float32 v:2x6x2x5:float32", "R.nn.attention(q, k, v)", "multiple"),
    ("q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x7x3x5:float32", "R.nn.attention(q, k, v)", "sequence length"),
    ("q:2x4x3x8:float32 k:2x6x3x7:float32 v:2x6x3x5:float32", "R.nn.attention(q, k, v)", "dimension of heads"),
    ("q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:2x2x4x6:float32", "R.nn.attention(q, k, v, b)",
     "broadcastable"),
    ("q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:3x6:float32", "R.nn.attention(q, k, v, b)",
     "bias should have 4"),
    ("q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:1x1x1x5:float32", "R.nn.attention(q, k, v, b)",
     "key sequence length and the bias"),
    ("q:2x4x3x8:float32 k:2x6x3x8:float32 v:2x6x3x5:float32 b:2x3x4x6:float32", "R.nn.attention_bias(q, k, v, b, 1.0, 1)",
     "must be a string"),
    ("q:1x7x2x4:float32 k:1x9x2x4:float32 v:1x9x2x3:float32 sq:3:int32",
     "R.nn.attention_var_len(q, k, v, sq, R.prim_value(4))", "argument 5 must be a tensor"),
])
def test_bad_calls_are_located_diagnostics(params, call, message):
    """TVM's InferTypeAttention errors, at the call."""
    with pytest.raises(DiagnosticError) as err:
        parse(case_text(params, call), "attn.py")
    text = err.value.render()
    assert message in text and "attn.py:10:" in text, text


def test_symbolic_sizes_are_kept_and_provably_different_ones_rejected():
    mod = parse(case_text("q:nx4x3x8:float32 k:nx6x3x8:float32 v:nx6x3x5:float32", "R.nn.attention(q, k, v)"))
    assert 'gv: R.Tensor((n, 4, 3, 5), dtype="float32")' in to_text(mod)
    # n and m may be equal, and so may n and 4: accepted, as TVM
    parse(case_text("q:2x4x3x8:float32 k:2xnx3x8:float32 v:2xmx3x5:float32", "R.nn.attention(q, k, v)"))
    parse(case_text("q:2xnx3x8:float32 k:2xnx3x8:float32 v:2xnx3x5:float32 b:1x1x1x4:float32",
                    "R.nn.attention(q, k, v, b)"))


# ----------------------------------------------------------------------------- TVM

@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    texts = [(name, case_text(params, call)) for name, params, call in CASES + RANDOM + [GQA]]
    assert_legalized_like_tvm(tvm_python, tmp_path, texts)


ZERO_PIPELINE_MODULE = """# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8), dtype="float32"), w: R.Tensor((8, 24), dtype="float32"), b: R.Tensor((1, 2, 4, 4), dtype="float32")):
        with R.dataflow():
            qkv = R.matmul(x, w)
            parts = R.split(qkv, 3, axis=-1)
            q = R.reshape(parts[0], R.shape([1, 4, 2, 4]))
            k = R.reshape(parts[1], R.shape([1, 4, 2, 4]))
            v = R.reshape(parts[2], R.shape([1, 4, 2, 4]))
            a = R.nn.attention(q, k, v, causal_mask="TopLeft")
            c = R.nn.attention(q, k, v, b, scale=0.5)
            s = R.add(a, c)
            gv = R.reshape(s, R.shape([1, 4, 8]))
            R.output(gv)
        return gv
"""

_ZERO_RUNNER = """
import sys, tvm
from tvm import relax
mod = tvm.script.from_source(open(sys.argv[1]).read())
seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                                relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR()])
print(seq(mod).script(show_meta=True))
"""


@pytest.mark.tvm
def test_zero_pipeline_on_attention_matches_tvm(tvm_python, tmp_path):
    """legalize-ops, annotate-tir-op-pattern, fold-constant, fuse-ops, fuse-tir on a layer of
    two attentions (each one opaque PrimFunc of several sblocks) print what TVM 0.27 prints."""
    path = tmp_path / "attn.py"
    path.write_text(ZERO_PIPELINE_MODULE)
    proc = subprocess.run([tvm_python, "-c", _ZERO_RUNNER, str(path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    passes = ["legalize-ops", "annotate-tir-op-pattern", "fold-constant", "fuse-ops", "fuse-tir"]
    mod = parse(ZERO_PIPELINE_MODULE)
    for name in passes:
        mod = get_pass(name)()(mod)
    assert to_text(mod, show_meta_data=True).rstrip("\n") == proc.stdout.rstrip("\n")
    x, w, b = _inputs(parse(ZERO_PIPELINE_MODULE), np.random.default_rng(4))
    np.testing.assert_allclose(run_relax(mod, [x, w, b]), run_relax(parse(ZERO_PIPELINE_MODULE), [x, w, b]),
                               rtol=1e-5, atol=1e-5)
