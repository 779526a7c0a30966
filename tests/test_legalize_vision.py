"""The Relax counterparts of Relay's one_hot, argwhere, image.grid_sample and vision ops
(R.one_hot, R.nonzero, R.image.grid_sample, R.vision.roi_align / roi_pool /
all_class_non_max_suppression): struct info as TVM 0.27 infers it, the NumPy references run by
the Relax interpreter, and legalize-ops for R.one_hot and R.image.grid_sample (bilinear, bicubic and nearest
with zeros, border or reflection padding, float32 and float64, image axes of size 1 included): each legalized PrimFunc, run by the TIR interpreter,
equals the reference, and (tvm-marked) TVM's LegalizeOps prints the same text. The ops TVM
legalizes and we do not yet stay Relax calls. roi_align and roi_pool: tests/test_legalize_roi.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, legalize

from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.text import parse, to_text

HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n# from tvm.script import tirx as T\n\n"


def module(params: str, call: str, sym: str = "") -> str:
    """`main(params)` returning `call`; `sym` declares symbolic sizes (`n = T.int64()`)."""
    decl = f"        {sym}\n" if sym else ""
    return (f"{HEADER}@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n{decl}"
            f"        with R.dataflow():\n            gv = {call}\n            R.output(gv)\n        return gv\n")


def T(shape, dtype="float32") -> str:
    dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape)
    return f'R.Tensor(({dims}{"," if len(shape) == 1 else ""}), dtype="{dtype}")'


ONE_HOT = [
    ("one_hot-f32", f"i: {T((3, 4), 'int32')}", "R.one_hot(i, T.float32(1.0), T.float32(0.0), depth=5, axis=1)"),
    ("one_hot-last", f"i: {T((3, 4), 'int64')}", "R.one_hot(i, T.float32(2.5), T.float32(-1.0), depth=3, axis=-1)"),
    ("one_hot-first", f"i: {T((4,), 'int32')}", "R.one_hot(i, T.int64(7), T.int64(0), depth=6, axis=0)"),
    ("one_hot-sym", f"i: {T(('n',), 'int64')}", "R.one_hot(i, T.float16(1.0), T.float16(0.0), depth=4, axis=-1)"),
]

GRID_FORMS = [("bilinear", "zeros"), ("bilinear", "border"), ("bicubic", "zeros"), ("bicubic", "border"),
              ("bilinear", "reflection"), ("bicubic", "reflection"),
              ("nearest", "zeros"), ("nearest", "border"), ("nearest", "reflection")]


def _grid_form_legalized(method: str, padding: str, align: bool, h: int = 2, w: int = 2) -> bool:
    return not (padding == "reflection" and align and 1 in (h, w))  # TVM 0.27 fails there (below)


GRID_SAMPLE = [
    (f"grid_sample-{m}-{p}-{a}-{h}x{w}", f"x: {T((1, 2, h, w))}, g: {T((1, 2, 3, 2))}",
     f'R.image.grid_sample(x, g, method="{m}", layout="NCHW", padding_mode="{p}", align_corners={a})')
    for (m, p), a, (h, w) in itertools.product(GRID_FORMS, (True, False), ((4, 5), (1, 3), (3, 1), (1, 1), (2, 2)))
    if _grid_form_legalized(m, p, a, h, w)
] + [
    (f"grid_sample-{m}-reflection-{a}-{h}x{w}", f"x: {T((2, 1, h, w))}, g: {T((2, 2, 4, 3))}",
     f'R.image.grid_sample(x, g, method="{m}", layout="NCHW", padding_mode="reflection", align_corners={a})')
    for m, a, (h, w) in itertools.product(("bilinear", "bicubic", "nearest"), (True, False), ((2, 3), (6, 2), (5, 7)))
    if _grid_form_legalized(m, "reflection", a)
] + [
    (f"grid_sample-f64-{m}-{p}-{a}", f"x: {T((1, 2, 3, 4), 'float64')}, g: {T((1, 2, 3, 2), 'float64')}",
     f'R.image.grid_sample(x, g, method="{m}", layout="NCHW", padding_mode="{p}", align_corners={a})')
    for (m, p), a in itertools.product(GRID_FORMS, (True, False)) if _grid_form_legalized(m, p, a)
] + [
    # bicubic reflection without align_corners: every image size 1..3 by 1..3 and larger ones
    (f"grid_sample-bicubic-reflection-half-{h}x{w}-{dt}", f"x: {T((2, 1, h, w), dt)}, g: {T((2, 2, 3, 2), dt)}",
     'R.image.grid_sample(x, g, method="bicubic", padding_mode="reflection", align_corners=False)')
    for (h, w), dt in itertools.product([*itertools.product((1, 2, 3), (1, 2, 3)), (4, 5), (7, 2)],
                                        ("float32", "float64"))
] + [
    ("grid_sample-batch", f"x: {T((2, 3, 3, 4))}, g: {T((2, 2, 2, 5))}", "R.image.grid_sample(x, g)"),
    ("grid_sample-sym-out", f"x: {T((1, 1, 3, 3))}, g: {T((1, 2, 'n', 2))}",
     'R.image.grid_sample(x, g, padding_mode="border")'),
    ("grid_sample-sym-out-bicubic", f"x: {T((2, 1, 3, 1))}, g: {T((2, 2, 'n', 2))}",
     'R.image.grid_sample(x, g, method="bicubic", padding_mode="border")'),
]
CASES = ONE_HOT + GRID_SAMPLE


def _text(case) -> str:
    name, params, call = case
    return module(params, call, "n = T.int64()" if '"n"' in params else "")


def _inputs(fn, rng, spread: float = 1.0) -> list:
    out = []
    for p in fn.params:
        s = p.struct_info
        shape = tuple(3 if not isinstance(d, int) else d for d in s.shape)
        if s.dtype.startswith("int"):  # one_hot indices, some out of range (all off)
            out.append(rng.integers(-1, 7, size=shape).astype(s.dtype))
        else:  # grid coordinates beyond [-1, 1] too
            out.append(((rng.random(shape) * 2.8 - 1.4) * spread).astype(s.dtype))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    mod = parse(_text(case))
    out = legalize(mod)
    ops = [b.value.op.name for blk in out.functions["main"].body.blocks for b in blk.bindings]
    assert ops == ["relax.call_tir"], f"not legalized: {ops}"
    # reflection: coordinates several spans out, so that both parities of the reflection occur
    inputs = _inputs(mod.functions["main"], np.random.default_rng(3), 3.0 if "reflection" in case[0] else 1.0)
    expected, got = run_relax(mod, inputs), run_relax(out, inputs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 2e-2 if "f16" in case[0] or "float16" in case[2] else 1e-5
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol, atol=tol)
    assert to_text(parse(to_text(out))) == to_text(out)


@pytest.mark.parametrize("form", [("bilinear", "reflection", 1, True),
                                  ("bicubic", "reflection", 1, True), ("nearest", "reflection", 1, True),
                                  ("bilinear", "zeros", "f16", True), ("bicubic", "border", "f16", True)])
def test_grid_sample_forms_not_legalized_stay_calls(form):
    """Reflection with align_corners from an image axis of size 1 (a division by zero): TVM
    0.27's legalization fails; float16: TVM 0.27's PrimFunc returns float32 where the
    op's struct info says float16."""
    dtype, h = ("float16", 4) if form[2] == "f16" else ("float32", form[2])
    text = module(f"x: {T((1, 2, h, 5), dtype)}, g: {T((1, 2, 3, 3), dtype)}",
                  f'R.image.grid_sample(x, g, method="{form[0]}", padding_mode="{form[1]}", align_corners={form[3]})')
    out = legalize(parse(text))
    assert "R.image.grid_sample" in to_text(out) and "call_tir" not in to_text(out)


# Struct info (TVM 0.27's, checked against TVM in the tvm-marked test below) and the references.
STRUCT_INFO = [
    (f"x: {T((3, 4))}", "R.nonzero(x)", 'R.Tensor(dtype="int64", ndim=2)'),
    (f"i: {T((3, 4), 'int32')}", "R.one_hot(i, T.float32(1.0), T.float32(0.0), depth=5, axis=-1)",
     'R.Tensor((3, 4, 5), dtype="float32")'),
    (f"i: {T(('n',), 'int64')}", "R.one_hot(i, T.int64(1), T.int64(0), depth=2, axis=0)",
     'R.Tensor((2, n), dtype="int64")'),
    (f"x: {T((1, 4, 6, 6))}, g: {T((1, 2, 5, 3))}", "R.image.grid_sample(x, g)",
     'R.Tensor((1, 4, 5, 3), dtype="float32")'),
    (f"x: {T((1, 4, 6, 6))}, r: {T((3, 5))}", "R.vision.roi_align(x, r, pooled_size=[2, 3], spatial_scale=1.0)",
     'R.Tensor((3, 4, 2, 3), dtype="float32")'),
    (f"x: {T((1, 4, 6, 6))}, r: {T(('n', 5))}",
     "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=0.5)",
     'R.Tensor((n, 4, 2, 2), dtype="float32")'),
    (f"x: {T((1, 6, 6, 4))}, r: {T((3, 5))}",
     'R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0, layout="NHWC", mode="max")',
     'R.Tensor((3, 2, 2, 4), dtype="float32")'),
    (f"i: {T((3, 4), 'int32')}", "R.one_hot(i, T.float32(1.0), T.float32(0.0), depth=3, axis=-2)",
     'R.Tensor((3, 3, 4), dtype="float32")'),
    (f"b: {T((1, 7, 4))}, s: {T((1, 2, 7))}, m: {T((), 'int64')}, i: {T(())}, t: {T(())}",
     "R.vision.all_class_non_max_suppression(b, s, m, i, t)",
     'R.Tuple(R.Tensor((14, 3), dtype="int64"), R.Tensor((1,), dtype="int64"))'),
]


@pytest.mark.parametrize("params, call, sinfo", STRUCT_INFO, ids=[c[1].split("(")[0] for c in STRUCT_INFO])
def test_struct_info(params, call, sinfo):
    text = to_text(parse(module(params, call, "n = T.int64()" if '"n"' in params else "")))
    assert f"gv: {sinfo} = " in text, text


@pytest.mark.parametrize("params, call, message", [
    (f"x: {T((1, 6, 6, 4))}, r: {T((3, 5))}", 'R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0, '
     'layout="NHWC")', "ROIPool only supports NCHW"),
    (f"x: {T((3,))}", "R.one_hot(x, T.float32(1.0), T.float32(0.0), depth=2)", "integer indices"),
])
def test_invalid_calls_are_rejected_as_tvm_rejects_them(params, call, message):
    from irtool.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError, match=message):
        parse(module(params, call))


def test_nonzero_is_argwhere_transposed():
    x = np.array([[0, 1.5, 0], [2, 0, 3]], "float32")
    got = run_relax(parse(module(f"x: {T((2, 3))}", "R.nonzero(x)")), [x])
    assert got.dtype == np.int64 and got.tolist() == np.argwhere(x).T.tolist()


def test_one_hot_takes_the_on_values_dtype():
    i = np.array([0, 2, 5], "int32")
    got = run_relax(parse(module(f"i: {T((3,), 'int32')}", "R.one_hot(i, T.int64(4), T.int64(-1), depth=3)")), [i])
    assert got.dtype == np.int64 and got.tolist() == [[4, -1, -1], [-1, -1, 4], [-1, -1, -1]]


def test_roi_align_aligned_keeps_small_rois():
    """Relax's `aligned` (TOPI 0.27: no 1x1 minimum size, no half-pixel shift): a roi below one
    pixel samples inside it; without `aligned` the roi grows to 1x1."""
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    rois = np.array([[0, 1.0, 1.0, 1.5, 1.5]], "float32")
    call = "R.vision.roi_align(x, r, pooled_size=[1, 1], spatial_scale=1.0, sample_ratio=1, aligned={})"
    params = f"x: {T((1, 1, 4, 4))}, r: {T((1, 5))}"
    aligned = run_relax(parse(module(params, call.format(True))), [x, rois])
    plain = run_relax(parse(module(params, call.format(False))), [x, rois])
    assert aligned.item() == pytest.approx(x[0, 0, 1, 1] + 0.25 * 4 + 0.25)  # the bilinear sample at (1.25, 1.25)
    assert plain.item() == pytest.approx(x[0, 0, 1, 1] + 0.5 * 4 + 0.5)  # at (1.5, 1.5)


def test_roi_ops_are_legalized():
    """roi_align and roi_pool legalize (tests/test_legalize_roi.py checks them against TVM and
    their references)."""
    text = module(f"x: {T((1, 2, 5, 5))}, r: {T((2, 5))}",
                  "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0)")
    assert "R.vision.roi_pool" not in to_text(legalize(parse(text)))


NONZERO = [("nonzero", f"x: {T((3, 4))}", "R.nonzero(x)"),
           ("nonzero-ndim-only", 'x: R.Tensor(dtype="int32", ndim=3)', "R.nonzero(x)")]


@pytest.mark.parametrize("case", NONZERO, ids=[c[0] for c in NONZERO])
def test_nonzero_becomes_tvms_runtime_function(case):
    """TVM 0.27 legalizes R.nonzero (FCallPacked) to R.call_pure_packed("relax.run.nonzero"),
    whatever the shapes; the interpreter has that function."""
    mod = parse(_text(case))
    out = legalize(mod)
    assert 'R.call_pure_packed("relax.run.nonzero", x, ty_args=(R.Tensor(dtype="int64", ndim=2),))' in to_text(out)
    x = (np.random.default_rng(1).random((3, 4) if "ndim-only" not in case[0] else (2, 2, 3)) < 0.4)
    x = x.astype("float32" if "ndim-only" not in case[0] else "int32")
    got = run_relax(out, [x])
    assert got.dtype == np.int64 and got.tolist() == np.argwhere(x).T.tolist()


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, [(c[0], _text(c)) for c in CASES + NONZERO])


@pytest.mark.tvm
def test_struct_info_matches_tvm(tvm_python, tmp_path):
    """TVM parses each module and prints the same struct info (its printout equals ours)."""
    import subprocess

    paths = []
    for k, (params, call, _) in enumerate(STRUCT_INFO):
        path = tmp_path / f"s{k}.py"
        path.write_text(module(params, call, "n = T.int64()" if '"n"' in params else ""))
        paths.append(path)
    script = ("import sys, tvm\nfrom tvm import relax\nfor p in sys.argv[1:]:\n"
              "    m = relax.transform.Normalize()(tvm.script.from_source(open(p).read()))\n"
              "    open(p + '.tvm', 'w').write(m.script())\n")
    proc = subprocess.run([tvm_python, "-c", script, *map(str, paths)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in paths:
        ours = to_text(parse(path.read_text())).rstrip("\n")
        assert ours == (path.parent / (path.name + ".tvm")).read_text().rstrip("\n")


def test_legalized_modules_are_relax():
    mod = legalize(parse(_text(ONE_HOT[0])))
    assert isinstance(mod.functions["main"], rx.Function)
