"""legalize-ops on R.image.resize2d's tf_crop_and_resize mode and cubic exclude_outside
(codegen/topi/image.py): every case legalizes into one call_tir whose PrimFunc, run by the TIR
interpreter, equals the op's NumPy reference; and (tvm-marked) TVM 0.27's LegalizeOps prints
byte-identical text for each case and for seeded random resizes over every method, coordinate
mode, rounding, layout and dtype, and for random resizes where an axis samples one constant
coordinate (TVM's simplifier then folds the interpolation with it). Where TVM fails (dividing
by `out - 1 = 0`, by an exclude_outside total weight folded to 0, or casting a negative constant
to an unsigned type) the call stays unlegalized."""

from __future__ import annotations

import itertools
import random
import subprocess

import numpy as np
import pytest
from test_legalize_avg_pool import _ops, _tvm_texts
from test_legalize_ops import case_text, legalize

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text

METHODS = ("nearest_neighbor", "linear", "cubic")
MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
         "tf_crop_and_resize")
ROIS = ([0.0, 0.0, 1.0, 1.0], [0.1, 0.2, 0.9, 0.8], [-0.25, 0.5, 1.25, 0.75])


def _resize(shape: tuple, dtype: str, size: tuple, **attrs) -> tuple[str, str]:
    args = ", ".join(f'{k}="{v}"' if isinstance(v, str) else f"{k}={v}" for k, v in attrs.items())
    return (f"x:{'x'.join(map(str, shape))}:{dtype}",
            f"R.image.resize2d(x, R.shape([{size[0]}, {size[1]}]), {args})")


def _shape(layout: str, h: int, w: int) -> tuple:
    return (1, 2, h, w) if layout == "NCHW" else (1, h, w, 2)


# tf_crop_and_resize: rois inside and beyond the image, up- and downscales, extrapolation values
CROP: list[tuple[str, str, str]] = [
    (f"crop-{method}-roi{r}-{size[0]}x{size[1]}-{ext}-{layout}",
     *_resize(_shape(layout, 4, 5), "float32", size, roi=ROIS[r], layout=layout, method=method,
              coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=ext))
    for method, r, size, ext, layout in itertools.product(METHODS, range(3), ((6, 5), (3, 3)), (0.0, 1.5),
                                                          ("NCHW", "NHWC"))
] + [
    (f"crop-nearest-{rounding}",
     *_resize((1, 2, 4, 5), "float32", (6, 7), roi=ROIS[1], method="nearest_neighbor",
              coordinate_transformation_mode="tf_crop_and_resize", rounding_method=rounding))
    for rounding in ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
]

# cubic exclude_outside in every coordinate mode (an output size of 1 only where it is defined)
EXCLUDE: list[tuple[str, str, str]] = [
    (f"exclude-{mode}-{size[0]}x{size[1]}-{alpha}-{layout}",
     *_resize(_shape(layout, 4, 5), "float32", size, roi=ROIS[1], layout=layout, method="cubic",
              coordinate_transformation_mode=mode, cubic_alpha=alpha, cubic_exclude=1))
    for mode, size, alpha, layout in itertools.product(MODES, ((6, 7), (3, 2), (1, 5)), (-0.5, -0.75),
                                                       ("NCHW", "NHWC"))
    if size[0] > 1 or mode not in ("align_corners", "tf_crop_and_resize", "pytorch_half_pixel")
] + [
    (f"{kind}-{dtype}-{method}",
     *_resize((1, 2, 4, 5), dtype, (5, 6), **attrs))
    for dtype in ("float16", "int32", "uint8")
    for method in METHODS
    for kind, attrs in (("crop", dict(roi=ROIS[2], method=method, coordinate_transformation_mode="tf_crop_and_resize",
                                      extrapolation_value=2.0)),
                        ("exclude", dict(method="cubic", cubic_exclude=1)))
]

# the same size along an axis: TVM's simplifier folds `x + 0.5 - 0.5` (round_prefer_floor of
# tf_half_pixel_for_nn) and `(x + 0.5) * 1.0 - 0.5` (half_pixel) to x
SAME_SIZE: list[tuple[str, str, str]] = [
    (f"same-{rounding or 'default'}-{mode}",
     *_resize((1, 2, 4, 5), "float32", (4, 5), method="nearest_neighbor", coordinate_transformation_mode=mode,
              rounding_method=rounding))
    for rounding, mode in itertools.product(("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"),
                                            MODES[:5])
] + [(f"same-{method}-{mode}", *_resize((1, 2, 4, 5), "float32", (3, 5), method=method,
                                        coordinate_transformation_mode=mode))
     for method, mode in itertools.product(("linear", "cubic"), ("half_pixel", "pytorch_half_pixel"))]


def _random_resizes(seed: int, count: int, constant: bool = False) -> list[tuple[str, str, str]]:
    """Input sizes 1..6, output sizes 2..9 (1 for the modes where it is defined), every method,
    mode, rounding, layout, cubic alpha and exclude_outside, random rois, four dtypes. With
    `constant`, only resizes where an axis samples one constant coordinate: align_corners or
    tf_crop_and_resize from an input of size 1, pytorch_half_pixel to an output of size 1, a
    roi with start == end (inside or outside the image)."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        mode, method, layout = rng.choice(MODES), rng.choice(METHODS), rng.choice(("NCHW", "NHWC"))
        lowest = 2 if mode in ("align_corners", "tf_crop_and_resize") or mode == "pytorch_half_pixel" and not constant \
            else 1
        h, w, oh, ow = rng.randint(1, 6), rng.randint(1, 6), rng.randint(lowest, 9), rng.randint(lowest, 9)
        roi = [round(rng.uniform(-0.3, 0.6), 2), round(rng.uniform(-0.3, 0.6), 2),
               round(rng.uniform(0.65, 1.3), 2), round(rng.uniform(0.65, 1.3), 2)]
        flat = constant and mode == "tf_crop_and_resize" and rng.random() < 0.5
        if flat:  # one axis's roi collapsed to a point, inside or beyond the image
            axis = rng.randint(0, 1)
            roi[axis] = roi[axis + 2] = rng.choice((0.0, 0.25, 0.5, 1.0, 1.5, -0.25, round(rng.uniform(0, 1), 2)))
        fixed = flat or mode in ("align_corners", "tf_crop_and_resize") and 1 in (h, w) or \
            mode == "pytorch_half_pixel" and 1 in (oh, ow)
        if fixed != constant:
            continue
        attrs: dict = dict(roi=roi, layout=layout, method=method, coordinate_transformation_mode=mode)
        if method == "nearest_neighbor":
            attrs["rounding_method"] = rng.choice(("", "round", "floor", "ceil", "round_prefer_floor",
                                                   "round_prefer_ceil"))
        if method == "cubic":
            attrs["cubic_alpha"], attrs["cubic_exclude"] = rng.choice((-0.5, -0.75)), rng.choice((0, 1))
        if mode == "tf_crop_and_resize":
            attrs["extrapolation_value"] = rng.choice((0.0, 1.5, -2.0))
        dtype = rng.choice(("float32", "float32", "float16", "int32", "uint8"))
        cases.append((f"rand{len(cases)}-{method}-{mode}-{h}x{w}-{oh}x{ow}-{dtype}",
                      *_resize(_shape(layout, h, w), dtype, (oh, ow), **attrs)))
    return cases


RANDOM = _random_resizes(5, 400)
CONSTANT = _random_resizes(17, 300, constant=True)
CASES = CROP + EXCLUDE + SAME_SIZE

# one constant input coordinate along an axis (TVM folds the interpolation with it)
FIXED: list[tuple[str, str, str]] = [
    ("crop-default-roi", *_resize((1, 2, 4, 5), "float32", (4, 7), method="linear",
                                  coordinate_transformation_mode="tf_crop_and_resize")),
    ("crop-flat-roi", *_resize((1, 2, 4, 5), "float32", (4, 7), roi=[0.3, 0.1, 0.3, 0.9], method="cubic",
                               coordinate_transformation_mode="tf_crop_and_resize")),
    ("crop-flat-roi-outside", *_resize((1, 2, 4, 5), "float32", (4, 7), roi=[1.5, 0.1, 1.5, 0.9], method="linear",
                                       coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.0)),
    ("crop-in1", *_resize((1, 2, 1, 5), "float32", (4, 7), roi=ROIS[1], coordinate_transformation_mode="tf_crop_and_resize")),
    ("pytorch-out1", *_resize((1, 2, 4, 5), "float32", (1, 5), method="linear",
                              coordinate_transformation_mode="pytorch_half_pixel")),
    ("align-in1", *_resize((1, 2, 4, 1), "float32", (5, 3), method="cubic", coordinate_transformation_mode="align_corners")),
    ("align-in1x1-nearest", *_resize((1, 2, 1, 1), "float32", (3, 3), method="nearest_neighbor",
                                     coordinate_transformation_mode="align_corners")),
]
CASES += FIXED

# TVM 0.27 fails on these: folding `out - 1 = 0` as a divisor, exclude_outside's total weight
# folded to 0 (every tap of a constant coordinate outside the image or weighing 0), a negative
# constant extrapolation value cast to uint8
TVM_FAILS: list[tuple[str, str, str]] = [
    ("crop-out1", *_resize((1, 2, 4, 5), "float32", (1, 5), roi=ROIS[1], coordinate_transformation_mode="tf_crop_and_resize")),
    ("align-out1", *_resize((1, 2, 4, 5), "float32", (4, 1), coordinate_transformation_mode="align_corners")),
    ("exclude-taps-outside", *_resize((1, 2, 3, 5), "float32", (4, 7), roi=[1.5, 0.1, 1.5, 0.9], method="cubic",
                                      cubic_exclude=1, coordinate_transformation_mode="tf_crop_and_resize")),
    ("uint8-negative-extrapolation", *_resize((1, 2, 3, 1), "uint8", (4, 7), roi=[1.5, 0.1, 1.5, 0.9],
                                              coordinate_transformation_mode="tf_crop_and_resize",
                                              extrapolation_value=-2.0)),
]


def _input(params: str) -> np.ndarray:
    _, shape, dtype = params.split(":")
    dims = [int(d) for d in shape.split("x")]
    rng = np.random.default_rng(1)
    if dtype.startswith("float"):
        return (rng.standard_normal(dims) * 3).astype(dtype)
    return rng.integers(0, 100, dims).astype(dtype)


# the random constant-coordinate resizes TVM legalizes (the others it fails on, as above)
CONSTANT_LEGALIZED = [c for c in CONSTANT if not (
    "cubic_exclude=1" in c[2] and "tf_crop_and_resize" in c[2] or "uint8" in c[1] and "-2.0" in c[2])]
SAMPLED = CASES + RANDOM[::8] + CONSTANT_LEGALIZED[::6]


@pytest.mark.parametrize("case", SAMPLED, ids=[c[0] for c in SAMPLED])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, run by the TIR interpreter, equals resize2d's reference."""
    _, params, call = case
    mod = parse(case_text(params, call))
    out = legalize(mod)
    assert _ops(out) == ["relax.call_tir"]
    x = _input(params)
    expected, got = np.asarray(run_relax(mod, [x])), np.asarray(run_relax(out, [x]))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 2e-2 if x.dtype == np.float16 else 1e-4
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol,
                               atol=tol if x.dtype.kind == "f" else 0)
    if "cubic_exclude=1" not in call:  # exclude_outside's 150 kB body takes seconds to parse
        assert to_text(parse(to_text(out))) == to_text(out)


@pytest.mark.parametrize("case", TVM_FAILS, ids=[c[0] for c in TVM_FAILS])
def test_tvm_failures_stay_unlegalized(case):
    _, params, call = case
    assert _ops(legalize(parse(case_text(params, call)))) == ["relax.image.resize2d"]


def test_extrapolation_outside_the_roi():
    """A roi reaching beyond the image: the outer pixels are the extrapolation value."""
    params, call = _resize((1, 1, 3, 3), "float32", (5, 5), roi=[-0.5, -0.5, 1.5, 1.5],
                           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0)
    got = np.asarray(run_relax(legalize(parse(case_text(params, call))), [np.zeros((1, 1, 3, 3), "float32")]))
    assert (got[0, 0, 0, :] == 7.0).all() and (got[0, 0, :, 4] == 7.0).all() and got[0, 0, 2, 2] == 0.0


def test_nearest_asymmetric_integer_upscale_rounds_as_asked():
    """Regression: the reference divided integers on an integer upscale whatever the rounding;
    TOPI does so only where it floors. With ceil, output x reads input ceil(x / 3 - 1e-5)."""
    params, call = _resize((1, 1, 1, 3), "float32", (1, 9), method="nearest_neighbor",
                           coordinate_transformation_mode="asymmetric", rounding_method="ceil")
    x = np.array([[[[10.0, 20.0, 30.0]]]], "float32")
    got = np.asarray(run_relax(parse(case_text(params, call)), [x]))
    assert got[0, 0, 0].tolist() == [10, 20, 20, 20, 30, 30, 30, 30, 30]


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps prints exactly our text for every case and every random resize."""
    failures = []
    cases = CASES + RANDOM
    for path, theirs in _tvm_texts(tvm_python, tmp_path, cases):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{path}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:2])


_FAILING_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    try:
        text = relax.transform.LegalizeOps()(tvm.script.from_source(open(path).read())).script(show_meta=True)
    except Exception as err:
        text = "TVM FAILED: " + str(err).splitlines()[-1]
    open(path + ".tvm", "w").write(text)
"""


def _tvm_or_failure(tvm_python, tmp_path, cases) -> list[tuple[str, str]]:
    """TVM's text for each case, or `TVM FAILED: ...` where its LegalizeOps raises."""
    runner = tmp_path / "failing_runner.py"
    runner.write_text(_FAILING_RUNNER)
    paths = []
    for name, params, call in cases:
        path = tmp_path / f"{name}.py"
        path.write_text(case_text(params, call))
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [(path, open(path + ".tvm").read()) for path in paths]


@pytest.mark.tvm
def test_constant_coordinates_match_tvm(tvm_python, tmp_path):
    """Random resizes with a constant coordinate along an axis, and the failures: where TVM
    legalizes, our text is its text; where it fails, the call stays ours."""
    failures, legalized = [], 0
    for path, theirs in _tvm_or_failure(tvm_python, tmp_path, CONSTANT + FIXED + TVM_FAILS):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if theirs.startswith("TVM FAILED"):
            if "R.call_tir(" in ours:
                failures.append(f"{path}: TVM fails ({theirs}), we legalize")
        elif ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{path}\n--- ours\n{ours}\n--- TVM\n{theirs}")
        else:
            legalized += 1
    assert not failures, f"{len(failures)} differ:\n" + "\n\n".join(failures[:2])
    assert legalized >= len(CONSTANT) * 9 // 10
