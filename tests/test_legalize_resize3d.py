"""legalize-ops on R.image.resize3d (codegen/topi/image.py, TOPI's resize3d): each legalized module,
run by the interpreters, equals the op's NumPy reference (TOPI 0.27's float32 arithmetic and
quirks, irtool/ops/relax_image.py) and prints and parses back unchanged; (tvm-marked) TVM 0.27's
LegalizeOps prints exactly the same text, on hand-picked and random cases (nearest / linear /
cubic, every coordinate transformation and rounding method, NCDHW and NDHWC, rois,
exclude_outside, extrapolation, dtypes, symbolic sizes)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, case_text, legalize, legalized_to_one_call

from irtool.exec.relax import random_input, run_relax
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text

CASES: list[tuple[str, str, str]] = [
    ("resize3d-linear", "x:1x2x3x4x5:float32", "R.image.resize3d(x, (4, 6, 3))"),
    ("resize3d-nearest-ndhwc", "x:1x3x4x5x2:float32",
     'R.image.resize3d(x, R.shape([2, 8, 5]), layout="NDHWC", method="nearest_neighbor")'),
    ("resize3d-cubic-align", "x:1x1x3x3x3:float32",
     'R.image.resize3d(x, 5, method="cubic", coordinate_transformation_mode="align_corners")'),
    ("resize3d-cubic-exclude", "x:1x1x3x4x3:float32", 'R.image.resize3d(x, (2, 5, 4), method="cubic", cubic_exclude=1)'),
    ("resize3d-crop", "x:1x1x3x4x3:float32",
     'R.image.resize3d(x, (2, 5, 4), roi=[0.1, 0.2, 0.0, 0.9, 0.8, 1.0], '
     'coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=1.5)'),
    ("resize3d-int-asymmetric", "x:1x2x3x4x5:int32",
     'R.image.resize3d(x, (6, 2, 10), method="nearest_neighbor", coordinate_transformation_mode="asymmetric")'),
    # TVM 0.27's legalization passes no out_dtype: the result keeps the data's dtype
    ("resize3d-out-dtype", "x:1x2x3x4x5:float16",
     'R.image.resize3d(x, (3, 3, 3), coordinate_transformation_mode="pytorch_half_pixel", out_dtype="float32")'),
    ("resize3d-sym", "x:1x2xnx4x5:float32", "R.image.resize3d(x, (3, 8, 2))"),
    # regression: resize2d's legalization passed out_dtype on, TVM 0.27's does not
    ("resize2d-out-dtype", "x:1x2x4x4:float16", 'R.image.resize2d(x, R.shape([8, 6]), out_dtype="float32")'),
]

_MODES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
          "tf_crop_and_resize"]
_ROUNDINGS = ["", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _random_cases() -> list[tuple[str, str, str]]:
    rng = random.Random(20261129)
    out = []
    for k in range(60):
        method = rng.choice(["nearest_neighbor", "linear", "cubic"])
        mode = rng.choice(_MODES)
        size = [rng.randint(2 if mode in ("align_corners", "tf_crop_and_resize") else 1, 6) for _ in range(3)]
        dims = [rng.randint(1, 5) for _ in range(3)]
        layout = rng.choice(["NCDHW", "NDHWC"])
        shape = [1, *dims, 2] if layout == "NDHWC" else [1, 2, *dims]
        dtype = rng.choice(["float32", "float32", "float16", "int32"])
        attrs = [f'layout="{layout}"', f'method="{method}"', f'coordinate_transformation_mode="{mode}"']
        if method == "nearest_neighbor":
            attrs.append(f'rounding_method="{rng.choice(_ROUNDINGS)}"')
        if method == "cubic":
            exclude = rng.randint(0, 1) if dtype != "int32" else 0  # (its 0 / 0 weights: NaN to int is undefined)
            attrs += [f"cubic_alpha={rng.choice([-0.5, -0.75])}", f"cubic_exclude={exclude}"]
        if mode == "tf_crop_and_resize":
            starts = [round(rng.uniform(0, 0.4), 2) for _ in range(3)]
            attrs += [f"roi={starts + [round(s + rng.uniform(0.3, 0.6), 2) for s in starts]}",
                      f"extrapolation_value={rng.choice([0.0, -1.0, 2.5])}"]
        out.append((f"resize3d-random{k}", f"x:{'x'.join(map(str, shape))}:{dtype}",
                    f"R.image.resize3d(x, {size}, {', '.join(attrs)})"))
    return out


CASES += _random_cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    name, params, call = case
    mod, out = legalized_to_one_call(params, call)
    main = out.functions["main"]
    assert structural_equal(parse(to_text(out)), out)
    if "sym" in name:
        return
    inputs = [random_input(p.struct_info, np.random.default_rng(0)) for p in main.params]
    expected, got = np.asarray(run_relax(mod, inputs)), np.asarray(run_relax(out, inputs))
    assert got.dtype == inputs[0].dtype and got.shape == expected.shape  # (the data's dtype: see CASES)
    tol = 2e-2 if "16" in params else 1e-4
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol, atol=tol)


@pytest.mark.parametrize("call", [
    'R.image.resize3d(x, (1, 4, 4), coordinate_transformation_mode="align_corners")',  # TVM divides by 0
    'R.image.resize3d(x, (2, 4, 4), layout="NCHWD")',  # TOPI computes NCDHW and NDHWC only
])
def test_unlegalized_forms_stay_calls(call):
    mod = parse(case_text("x:1x2x3x4x5:float32", call))
    assert to_text(legalize(mod)) == to_text(mod)


@pytest.mark.parametrize("params, call, message", [
    ("x:1x2x3x4:float32", "R.image.resize3d(x, (2, 3, 4))", "rank 5"),
    ("x:1x2x3x4x5:float32", "R.image.resize3d(x, (2, 3))", "3 values"),
    ("x:1x2x3x4x5:float32", 'R.image.resize3d(x, (2, 3, 4), layout="NCHW")', "must order the axes"),
])
def test_bad_calls_are_located_diagnostics(params, call, message):
    from irtool.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError, match=message) as err:
        parse(case_text(params, call), "bad.py")
    assert "bad.py:10:18: error:" in err.value.render()


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, [(name, case_text(params, call)) for name, params, call in CASES])
