"""R.vision.get_valid_counts, R.vision.non_max_suppression and R.vision.multibox_transform_loc
(TVM 0.27's Relax-only vision ops; irtool/ops/relax_vision.py, codegen/topi/nms_classic.py and
vision.py): struct info as TVM infers it (symbolic sizes, unknown shapes, its errors as located
diagnostics), each legalized module run by our interpreters equal to the op's NumPy reference,
the PrimFuncs compiled natively equal to the TIR interpreter (the runtime's argsort_nms a TIR
insertion sort), and (tvm-marked) TVM 0.27's LegalizeOps printing the same text."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, legalize
from test_legalize_vision import T, module

import irtool
from irtool.exec.relax import run_relax
from irtool.exec.tir import run_prim_func
from irtool.exec.tir_runtime import _numpy_dtype
from irtool.ir import relax as rx
from irtool.ir.module import IRModule
from irtool.text import parse, to_text

# ----------------------------------------------------------------------------- the cases


def _gvc(name, shape=(2, 6, 6), dtype="float32", attrs="", sym=""):
    call = f"R.vision.get_valid_counts(d{', ' + attrs if attrs else ''})"
    return f"gvc-{name}", module(f"d: {T(shape, dtype)}", call, sym)


GVC = [_gvc("default"), _gvc("threshold", attrs="score_threshold=0.25"),
       _gvc("no-id", attrs="score_threshold=0.5, id_index=-1, score_index=2"),
       _gvc("id-last", shape=(1, 5, 4), attrs="id_index=3, score_index=0"),
       _gvc("f16", dtype="float16", attrs="score_threshold=0.1"),
       _gvc("f64", dtype="float64", attrs="score_threshold=0.3"),
       _gvc("sym", shape=("b", "n", 6), sym="b = T.int64()\n        n = T.int64()", attrs="score_threshold=0.25"),
       _gvc("sym-length", shape=(2, 4, "k"), sym="k = T.int64()")]


def _nms(name, shape=(2, 6, 6), dtype="float32", attrs="", sym="", counts=None, pairs=None):
    b, n, _ = shape
    params = f"d: {T(shape, dtype)}, vc: {T(counts or (b,), 'int32')}, ix: {T(pairs or (b, n), 'int32')}"
    return f"nms-{name}", module(params, f"R.vision.non_max_suppression(d, vc, ix{', ' + attrs if attrs else ''})", sym)


NMS = [_nms("default"),
       _nms("limits", attrs="max_output_size=2, iou_threshold=0.3, top_k=4"),
       _nms("force", attrs="force_suppress=True, iou_threshold=0.6"),
       _nms("no-id", attrs="id_index=-1, coord_start=1, score_index=0, iou_threshold=0.45"),
       _nms("data", attrs="return_indices=False, iou_threshold=0.4"),
       _nms("to-bottom", attrs="return_indices=False, invalid_to_bottom=True, top_k=3"),
       _nms("indices-ignore-bottom", attrs="invalid_to_bottom=True"),
       _nms("soft", attrs="soft_nms_sigma=0.5, score_threshold=0.1"),
       _nms("soft-limit", attrs="soft_nms_sigma=0.25, score_threshold=0.05, max_output_size=3, iou_threshold=0.7, "
                                "force_suppress=True"),
       _nms("soft-data", attrs="soft_nms_sigma=1.0, return_indices=False, top_k=4"),
       _nms("soft-bottom", attrs="soft_nms_sigma=0.5, return_indices=False, invalid_to_bottom=True"),
       _nms("f16", dtype="float16", attrs="iou_threshold=0.3"),
       _nms("f16-soft", dtype="float16", attrs="soft_nms_sigma=0.5, score_threshold=0.1"),
       _nms("long", shape=(1, 7, 8), attrs="coord_start=4, score_index=2, id_index=7"),
       _nms("sym", shape=("b", "n", 6), sym="b = T.int64()\n        n = T.int64()", attrs="top_k=2"),
       _nms("sym-soft", shape=(2, "n", 6), sym="n = T.int64()", attrs="soft_nms_sigma=0.5")]


def _mb(name, b=1, c=3, n=5, dtype="float32", attrs="", sym=""):
    loc = (b, "n4" if n == "n" else 4 * n)
    params = f"c: {T((b, c, n), dtype)}, l: {T(loc, dtype)}, a: {T((1, n, 4), dtype)}"
    call = f"R.vision.multibox_transform_loc(c, l, a{', ' + attrs if attrs else ''})"
    return f"mb-{name}", module(params, call, sym)


MB = [_mb("default"), _mb("batch", b=2, c=4, n=6),
      _mb("all", attrs="clip=True, threshold=0.1, variances=[0.1, 0.1, 0.2, 0.2], keep_background=False, "
                       "apply_softmax=False"),
      _mb("softmax-bg", attrs="threshold=0.3, keep_background=False"),
      _mb("clip", attrs="clip=True, variances=[1.0, 2.0, 0.5, 0.25]"),
      _mb("f16", dtype="float16", attrs="threshold=0.2"),
      _mb("sym", b="b", n="n", sym="b = T.int64()\n        n = T.int64()\n        n4 = T.int64()")]

CASES = GVC + NMS + MB


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, CASES)


# ----------------------------------------------------------------------------- running them

SIZES = {"b": 3, "n": 5, "k": 7, "n4": 20}


def _dims(sinfo) -> list[int]:
    return [SIZES[d.name] if not isinstance(d, int) else d for d in sinfo.shape]


def _call(mod) -> rx.Call:
    return mod.functions["main"].body.blocks[0].bindings[0].value


def _boxes_data(rng, shape, dtype, call) -> np.ndarray:
    """Rows of integer corners 0..7 (every width, area and IoU exact in float16 too), scores on a
    grid of eighths with ties (some -1/8: below every threshold), class ids 0..2 (some -1)."""
    b, n, k = shape
    data = rng.integers(0, 8, size=(b, n, k)).astype(np.float64)
    at = dict(call.attrs.items())
    score, class_id = at.get("score_index", 1), at.get("id_index", 0)
    data[..., score] = rng.integers(-1, 8, size=(b, n)) / 8
    if class_id >= 0:
        data[..., class_id] = rng.integers(-1, 3, size=(b, n))
    return data.astype(_numpy_dtype(dtype))


def _inputs(rng, mod) -> list:
    call, params = _call(mod), mod.functions["main"].params
    shapes = [_dims(p.struct_info) for p in params]
    dtype = params[0].struct_info.dtype
    if call.op.name == "relax.vision.multibox_transform_loc":
        cls = rng.normal(size=shapes[0])
        loc = rng.normal(scale=0.5, size=shapes[1])
        corner = rng.uniform(0, 0.6, size=(1, shapes[2][1], 2))
        anchor = np.concatenate([corner, corner + rng.uniform(0.1, 0.4, size=corner.shape)], -1)
        return [x.astype(_numpy_dtype(dtype)) for x in (cls, loc, anchor)]
    data = _boxes_data(rng, shapes[0], dtype, call)
    if call.op.name == "relax.vision.get_valid_counts":
        return [data]
    b, n, _ = shapes[0]
    counts = rng.integers(max(n - 3, 0), n + 1, size=(b,)).astype("int32")  # mostly all: boxes to suppress
    indices = rng.integers(0, 100, size=(b, n)).astype("int32")
    return [data, counts, indices]


def _assert_same(want, got, name: str) -> None:
    want = want if isinstance(want, (tuple, list)) else [want]
    got = got if isinstance(got, (tuple, list)) else [got]
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        if name.startswith("mb-"):  # a softmax: the reduction's order differs
            np.testing.assert_allclose(g.astype("float64"), w.astype("float64"),
                                       rtol=2e-2 if w.dtype == np.float16 else 1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_legalized_module_runs_as_the_reference(case):
    """The legalized module (its PrimFunc in the TIR interpreter, the packed argsort_nms in
    NumPy) gives the op's reference outputs, on 6 random inputs each."""
    name, text = case
    mod = parse(text)
    legal = legalize(mod)
    assert "R.vision." not in to_text(legal)
    rng = np.random.default_rng(sum(map(ord, name)))
    for _ in range(6):
        args = _inputs(rng, mod)
        _assert_same(run_relax(mod, [a.copy() for a in args]), run_relax(legal, args), name)


NATIVE = [c for c in CASES if c[0] in ("gvc-threshold", "nms-default", "nms-limits", "nms-to-bottom", "nms-soft-limit",
                                       "mb-all", "mb-batch")]


@pytest.mark.parametrize("case", NATIVE, ids=lambda c: c[0])
def test_prim_funcs_run_natively_as_interpreted(case):
    """Each PrimFunc compiled natively (argsort_nms a TIR insertion sort, codegen/packed_builtins.py)
    writes what the TIR interpreter writes."""
    name, text = case
    mod = parse(text)
    legal = legalize(mod)
    fname = next(n for n, f in legal.functions.items() if n != "main")
    func = legal.functions[fname]
    exe = irtool.build(IRModule({fname: func}))
    rng = np.random.default_rng(3)
    for _ in range(3):
        ins = _inputs(rng, mod)
        buffers = dict(func.buffer_map)
        outs = [buffers[p] for p in func.params[len(ins):]]
        interpreted = [np.zeros([d.value for d in b.shape], _numpy_dtype(b.dtype)) for b in outs]
        native = [np.zeros_like(a) for a in interpreted]
        run_prim_func(func, [a.copy() for a in ins] + interpreted)
        exe[fname](*[a.copy() for a in ins], *native)
        for a, b in zip(interpreted, native, strict=True):
            if name.startswith("mb-") or "soft" in name:  # exp: libm's and NumPy's differ in the last bit
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(b, a)


_TVM_RUN = r"""
import sys, tvm, numpy as np
from tvm import relax
for source, inputs, outputs in zip(*[iter(sys.argv[1:])] * 3):
    mod = tvm.script.from_source(open(source).read())
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    data = np.load(inputs)
    out = vm["main"](*[tvm.runtime.tensor(data[f"arg{i}"]) for i in range(len(data.files))])
    flat = lambda o: [o.numpy()] if hasattr(o, "numpy") else [a for e in o for a in flat(e)]
    np.savez(outputs, *flat(out))
"""

# TVM's runtime argsort_nms sorts float32 only; symbolic sizes would need shapes at compile time
RUN_BY_TVM = [c for c in CASES if "f16" not in c[0] and "sym" not in c[0]]


@pytest.mark.tvm
def test_references_equal_tvm_compiled_modules(tvm_python, tmp_path):
    """Each static float32/float64 case compiled and run by TVM 0.27 (`tvm.compile`, the Relax VM)
    on random inputs gives what our reference gives: the references are TVM's semantics."""
    argv, expected = [], []
    for name, text in RUN_BY_TVM:
        mod = parse(text)
        rng = np.random.default_rng(sum(map(ord, name)))
        for trial in range(3):
            inputs = _inputs(rng, mod)
            stem = tmp_path / f"{name}-{trial}"
            stem.with_suffix(".py").write_text(text)
            np.savez(f"{stem}.in.npz", **{f"arg{i}": v for i, v in enumerate(inputs)})
            argv += [str(stem.with_suffix(".py")), f"{stem}.in.npz", f"{stem}.out.npz"]
            expected.append((name, run_relax(mod, inputs), f"{stem}.out.npz"))
    runner = tmp_path / "run.py"
    runner.write_text(_TVM_RUN)
    proc = subprocess.run([tvm_python, str(runner), *argv], capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, ours, path in expected:
        theirs = np.load(path)
        _assert_same(ours, tuple(theirs[f"arr_{i}"] for i in range(len(theirs.files))), name)
