"""legalize-ops of R.vision.roi_align and R.vision.roi_pool (codegen/topi/vision.py): each
legalized PrimFunc, run by the TIR interpreter, equals the op's NumPy reference (irtool/ops/vision.py),
and (tvm-marked) TVM 0.27's LegalizeOps prints the same module text, byte for byte."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, legalize
from test_legalize_vision import T, module

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text
from irtool.text.tvmscript.tir_stmt import printed_domains

# (data NCHW shape, pooled size, spatial scale): every layout, mode, `aligned` and sample ratio
# (-1 and 0: a grid read from the rois, which nests the sblock) meets each of them
ROI_SHAPES = [((1, 2, 6, 6), (2, 2), 1.0), ((2, 3, 5, 7), (1, 3), 0.5), ((1, 1, 4, 3), (3, 2), 0.25)]


def _roi_align_case(layout, mode, aligned, ratio, shape, pooled, scale, rois="(3, 5)"):
    n, c, h, w = shape
    data = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    call = (f"R.vision.roi_align(x, r, pooled_size=[{pooled[0]}, {pooled[1]}], spatial_scale={scale}, "
            f'sample_ratio={ratio}, aligned={aligned}, layout="{layout}", mode="{mode}")')
    r = T(eval(rois))
    return (f"roi_align-{layout}-{mode}-{'aligned' if aligned else 'plain'}-{ratio}-{h}x{w}",
            module(f"x: {T(data)}, r: {r}", call, "n = T.int64()" if '"n"' in r else ""))


ROI_ALIGN = [_roi_align_case(lay, mode, al, ratio, *s) for lay, mode, al, ratio, s in
             itertools.product(("NCHW", "NHWC"), ("avg", "max"), (False, True), (-1, 0, 1, 2), ROI_SHAPES)] + [
    _roi_align_case("NCHW", "avg", False, -1, (1, 2, 6, 6), (2, 2), 1.0, rois="('n', 5)"),
    _roi_align_case("NHWC", "max", False, 2, (1, 2, 6, 6), (2, 2), 1.0, rois="('n', 5)"),
    _roi_align_case("NCHW", "avg", False, 2, (1, 2, 1, 6), (2, 2), 1.0),  # an image row: y clamps to 0
]

def _roi_pool_case(shape, pooled, scale, rois="(3, 5)"):
    r = T(eval(rois))
    sym = '"n"' in r
    call = f"R.vision.roi_pool(x, r, pooled_size=[{pooled[0]}, {pooled[1]}], spatial_scale={scale})"
    return (f"roi_pool-{'x'.join(map(str, shape))}-{pooled[0]}x{pooled[1]}-{scale}{'-sym' if sym else ''}",
            module(f"x: {T(shape)}, r: {r}", call, "n = T.int64()" if sym else ""))


# every image shape (a row, a column) against every pooled size (1x1 to more bins than pixels)
# and scale (corners scaled down and up)
ROI_POOL = [_roi_pool_case(*c) for c in itertools.product(
    [(1, 2, 6, 6), (2, 3, 5, 7), (1, 1, 1, 4), (1, 1, 3, 1)], [(2, 2), (1, 3), (3, 2), (1, 1), (4, 4)],
    [1.0, 0.5, 0.25, 2.0])] + [_roi_pool_case((1, 2, 6, 6), (2, 2), 1.0, rois="('n', 5)")]
# symbolic sizes (declared `b`, `c`, `h`, `w`): the image's bounds become `index < h` and
# `index + 2 <= h` as TVM's simplifier writes them
SYM_SIZES = {"b": 2, "c": 3, "h": 5, "w": 7, "n": 4}


def _symbolic_case(name, data, call):
    names = [d for d in data if isinstance(d, str)]
    return (name, module(f"x: {T(data)}, r: {T((3, 5))}", call, "\n        ".join(f"{d} = T.int64()" for d in names)))


SYMBOLIC = [
    _symbolic_case("roi_align-sym-hw", (1, 2, "h", "w"),
                   "R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0, sample_ratio=2)"),
    _symbolic_case("roi_align-sym-bhw-nested", ("b", "h", "w", 2),
                   'R.vision.roi_align(x, r, pooled_size=[2, 3], spatial_scale=0.5, layout="NHWC")'),
    _symbolic_case("roi_align-sym-max-aligned", (1, "c", "h", "w"), 'R.vision.roi_align(x, r, pooled_size=[3, 2], '
                   'spatial_scale=0.25, sample_ratio=1, aligned=True, mode="max")'),
    _symbolic_case("roi_align-sym-bc", ("b", "c", 6, 6), "R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
    _symbolic_case("roi_pool-sym-hw", (1, 2, "h", "w"), "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
    _symbolic_case("roi_pool-sym-bchw", ("b", "c", "h", "w"),
                   "R.vision.roi_pool(x, r, pooled_size=[3, 2], spatial_scale=0.5)"),
    _symbolic_case("roi_pool-sym-bc", ("b", "c", 6, 6), "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
]
CASES = ROI_ALIGN + ROI_POOL + SYMBOLIC


def _rois(rng, count: int, batch: int, extent: float, dtype: str) -> np.ndarray:
    """Rois inside and around an image of side `extent`, each at least 0.3 wide (so that a grid
    read from the roi has samples: TVM's PrimFunc leaves an empty bin unwritten)."""
    start = rng.random((2, count)) * extent - 1
    size = rng.random((2, count)) * extent + 0.3
    index = rng.integers(0, batch, count)
    return np.stack([index, start[0], start[1], start[0] + size[0], start[1] + size[1]], 1).astype(dtype)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    mod = parse(case[1])
    out = legalize(mod)
    ops = [b.value.op.name for blk in out.functions["main"].body.blocks for b in blk.bindings]
    assert ops == ["relax.call_tir"], f"not legalized: {ops}"
    x_param, r_param = mod.functions["main"].params
    rng = np.random.default_rng(7)
    shape = tuple(SYM_SIZES[d.name] if not isinstance(d, int) else d for d in x_param.struct_info.shape)
    data = rng.random(shape).astype("float32")
    height, width = (shape[1], shape[2]) if "NHWC" in case[0] else (shape[2], shape[3])
    count = r_param.struct_info.shape[0] if isinstance(r_param.struct_info.shape[0], int) else 4
    rois = _rois(rng, count, shape[0], max(height, width) * 1.5, "float32")
    if "roi_pool" in case[0]:  # corners at halves, negative ones too: roi_pool rounds them half up
        rois[:, 1:] = np.round(rois[:, 1:] * 2) / 2
    expected, got = run_relax(mod, [data, rois]), run_relax(out, [data, rois])
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert to_text(printed_domains(parse(to_text(out)))) == to_text(out)  # nested sblocks: printed_domains


@pytest.mark.parametrize("dtypes", [("float16", "float16"), ("float16", "float32"), ("float32", "float16")])
@pytest.mark.parametrize("op", ["roi_align", "roi_pool"])
def test_other_dtypes_stay_calls(dtypes, op):
    """TOPI's float literals make float16 arithmetic float32: TVM's roi_align PrimFunc writes a
    float32 result where the call says float16 (mixed dtypes: the rois'), so we leave the call;
    roi_pool's forms are checked for float32 only."""
    text = module(f"x: {T((1, 2, 6, 6), dtypes[0])}, r: {T((3, 5), dtypes[1])}",
                  f"R.vision.{op}(x, r, pooled_size=[2, 2], spatial_scale=1.0)")
    out = to_text(legalize(parse(text)))
    assert f"R.vision.{op}" in out and "call_tir" not in out


def test_roi_align_nested_grid_reads_the_rois_in_its_extents():
    """sample_ratio -1: the sample grid's extent reads the rois, so the inner sblock's reads
    join the outer row (`v_i`) and its own (`v_i_1`), as TVM's region detector does."""
    text = to_text(legalize(parse(ROI_ALIGN[0][1])))
    assert 'with T.sblock("compute_l1")' in text
    assert "T.reads(r[T.min(v_i, v_i_1):T.min(v_i, v_i_1) + (T.max(v_i, v_i_1) + T.int64(1) - T.min(v_i, v_i_1))" \
        in text
    assert "v_ph_1 = T.axis.spatial((v_ph, v_ph + (T.int64(1) - v_ph)), v_ph)" in text


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, CASES)


def _program(params: str, body: str) -> str:
    from test_legalize_vision import HEADER

    return (f"{HEADER}@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n"
            f"        with R.dataflow():\n{body}            R.output(gv)\n        return gv\n")


ZERO = [
    ("zero-roi_align-relu", _program(f"x: {T((1, 2, 6, 6))}, r: {T((3, 5))}",
     "            lv = R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0, sample_ratio=2)\n"
     "            gv = R.nn.relu(lv)\n")),
    ("zero-roi_align-nested", _program(f"x: {T((1, 2, 6, 6))}, r: {T((3, 5))}",
     "            lv = R.add(x, x)\n            lv1 = R.vision.roi_align(lv, r, pooled_size=[2, 2], spatial_scale=1.0)\n"
     "            gv = R.multiply(lv1, lv1)\n")),
    ("zero-roi_pool-relu", _program(f"x: {T((1, 2, 6, 6))}, r: {T((3, 5))}",
     "            lv = R.nn.relu(x)\n            lv1 = R.vision.roi_pool(lv, r, pooled_size=[2, 2], spatial_scale=1.0)\n"
     "            gv = R.add(lv1, lv1)\n")),
]

_TVM_ZERO = ("import sys, tvm\nfrom tvm import relax\nfor p in sys.argv[1:]:\n"
             "    m = relax.get_pipeline('zero')(tvm.script.from_source(open(p).read()))\n"
             "    open(p + '.tvm', 'w').write(m.script())\n")


@pytest.mark.tvm
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path):
    """The whole zero pipeline (legalize, annotate, fold, fuse, fuse-tir) prints as TVM's."""
    import subprocess

    from irtool.transform import get_pass

    runner = tmp_path / "zero.py"
    runner.write_text(_TVM_ZERO)
    paths = []
    for name, text in ZERO:
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(text)
    proc = subprocess.run([tvm_python, str(runner), *map(str, paths)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in paths:
        ours = to_text(get_pass("zero-pipeline")()(parse(path.read_text())), show_meta_data=False)
        assert ours.rstrip("\n") == (tmp_path / (path.name + ".tvm")).read_text().rstrip("\n"), path.name


@pytest.mark.parametrize("case", ZERO, ids=[c[0] for c in ZERO])
def test_zero_pipeline_runs_as_the_reference(case):
    from irtool.transform import get_pass

    mod = parse(case[1])
    out = get_pass("zero-pipeline")()(mod)
    assert "R.vision" not in to_text(out)
    rng = np.random.default_rng(3)
    data, rois = rng.random((1, 2, 6, 6)).astype("float32"), _rois(rng, 3, 1, 9.0, "float32")
    np.testing.assert_allclose(run_relax(out, [data, rois]), run_relax(mod, [data, rois]), rtol=1e-5, atol=1e-5)


def random_cases(seed: int, count: int) -> list:
    """Seeded random roi_align / roi_pool calls: image sizes 1..8 (a third of them symbolic),
    pooled sizes 1..4, scales from 1/16 to 2, sample ratios -1..3, both layouts and modes."""
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(count):
        shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 9))]
        dims = [("b", "c", "h", "w")[i] if rng.random() < 0.33 else d for i, d in enumerate(shape)]
        pooled = [int(rng.integers(1, 5)), int(rng.integers(1, 5))]
        scale = float(rng.choice([1.0, 0.5, 0.25, 0.125, 0.0625, 2.0]))
        if k % 3 == 2:
            call = f"R.vision.roi_pool(x, r, pooled_size={pooled}, spatial_scale={scale})"
        else:
            layout = "NHWC" if rng.random() < 0.5 else "NCHW"
            if layout == "NHWC":
                dims = [dims[0], dims[2], dims[3], dims[1]]
            call = (f"R.vision.roi_align(x, r, pooled_size={pooled}, spatial_scale={scale}, "
                    f"sample_ratio={int(rng.integers(-1, 4))}, aligned={bool(rng.random() < 0.5)}, "
                    f'layout="{layout}", mode="{"max" if rng.random() < 0.5 else "avg"}")')
        cases.append(_symbolic_case(f"random-{seed}-{k}", tuple(dims), call))
    return cases


@pytest.mark.tvm
def test_random_calls_match_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, random_cases(11, 200))


@pytest.mark.parametrize("case", random_cases(11, 200)[:40], ids=lambda c: c[0])
def test_random_calls_match_reference(case):
    test_legalized_matches_reference(case)


# ----------------------------------------------------------------------------- ONNX, natively

ONNX_RELATED = [("RoiAlign", {"output_height": 3, "output_width": 2}, 16),
                ("RoiAlign", {"output_height": 2, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.5,
                              "coordinate_transformation_mode": "output_half_pixel"}, 16),
                ("MaxRoiPool", {"pooled_shape": [2, 3], "spatial_scale": 0.5}, 16)]


@pytest.mark.parametrize("op, attrs, opset", ONNX_RELATED, ids=["roi_align", "roi_align-ratio", "max_roi_pool"])
def test_onnx_model_builds_natively(op, attrs, opset):
    """An ONNX RoiAlign / MaxRoiPool model, imported, lowered (relay-to-relax, the zero
    pipeline) and compiled to native code, computes onnxruntime's outputs."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    import irtool
    from irtool.frontend.onnx import from_onnx

    rng = np.random.default_rng(5)
    data = rng.standard_normal((2, 3, 8, 10)).astype("float32")
    if op == "RoiAlign":
        rois = np.array([[0.5, 1.0, 6.0, 7.5], [2.0, 0.0, 9.0, 3.0], [0.0, 0.0, 10.0, 8.0]], "float32")
        inputs = {"x": data, "r": rois, "b": np.array([1, 0, 1], "int64")}
    else:
        rois = np.array([[0, 0, 0, 4, 3], [1, 1.4, 2.6, 7, 5], [0, 3, 1, 3.2, 1], [1, -2, -2, 20, 20]], "float32")
        inputs = {"x": data, "r": rois}
    types = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int64"): TensorProto.INT64}
    graph = helper.make_graph(
        [helper.make_node(op, list(inputs), ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(k, types[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    mod, _ = from_onnx(model)
    got = irtool.build(mod)(*inputs.values())
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
