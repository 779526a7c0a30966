"""legalize-ops on R.image.affine_grid (codegen/topi/image.py, TOPI's affine_grid): each legalized
module, run by the interpreters, equals the op's NumPy reference and prints and parses back
unchanged; (tvm-marked) TVM 0.27's LegalizeOps prints exactly the same text, on hand-picked and
random cases (2-D and 3-D sizes, align_corners, float32/float16/float64, a symbolic batch).
Calls TVM's legalization raises on (a symbolic size; a size of 1 with align_corners) stay calls."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, case_text, legalize, legalized_to_one_call

from irtool.exec.relax import random_input, run_relax
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text

CASES: list[tuple[str, str, str]] = [
    ("affine_grid-2d", "x:2x2x3:float32", "R.image.affine_grid(x, (3, 5))"),
    ("affine_grid-2d-centres", "x:1x2x3:float32", "R.image.affine_grid(x, [4, 2], align_corners=False)"),
    ("affine_grid-2d-int-size", "x:1x2x3:float16", "R.image.affine_grid(x, 4, False)"),
    ("affine_grid-3d", "x:1x3x4:float32", "R.image.affine_grid(x, (2, 3, 4))"),
    ("affine_grid-3d-centres", "x:2x3x4:float64", "R.image.affine_grid(x, R.shape([2, 2, 5]), align_corners=False)"),
    ("affine_grid-one", "x:1x2x3:float32", "R.image.affine_grid(x, (1, 3), align_corners=False)"),
    ("affine_grid-sym-batch", "x:nx2x3:float32", "R.image.affine_grid(x, (3, 2))"),
]


def _random_cases() -> list[tuple[str, str, str]]:
    rng = random.Random(20261129)
    out = []
    for k in range(30):
        dims = rng.choice([2, 3])
        align = rng.random() < 0.5
        size = [rng.randint(2 if align else 1, 6) for _ in range(dims)]
        dtype = rng.choice(["float32", "float32", "float16", "float64"])
        out.append((f"affine_grid-random{k}", f"x:{rng.randint(1, 3)}x{dims}x{dims + 1}:{dtype}",
                    f"R.image.affine_grid(x, {size}, align_corners={align})"))
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
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 5e-3 if "16" in params else 1e-5
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol, atol=tol)


@pytest.mark.parametrize("params, call", [
    ("x:1x2x3:float32", "R.image.affine_grid(x, (1, 3))"),  # TOPI asserts a size above 1 with align_corners
    ("x:1x2x3:float32", "R.image.affine_grid(x, (n, 3))"),  # TVM's legalization raises on a symbolic size
    ("x:1x2x3:int32", "R.image.affine_grid(x, (2, 3))"),
])
def test_unlegalized_forms_stay_calls(params, call):
    text = case_text(params, call)
    if "(n, 3)" in call:
        text = text.replace("def main(x", 'def main(s: R.Shape(["n"]), x')
    mod = parse(text)
    assert to_text(legalize(mod)) == to_text(mod)


@pytest.mark.parametrize("params, call, message", [
    ("x:1x2x3:float32", "R.image.affine_grid(x, (2, 3, 4))", r"\(batch, 3, 4\)"),
    ("x:1x2:float32", "R.image.affine_grid(x, (2, 3))", "must be 3-D"),
    ("x:1x2x3:float32", "R.image.affine_grid(x, (2, 3, 4, 5))", "2 or 3 values"),
])
def test_bad_calls_are_located_diagnostics(params, call, message):
    from irtool.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError, match=message) as err:
        parse(case_text(params, call), "bad.py")
    rendered = err.value.render()
    assert "bad.py:10:18: error:" in rendered and "^~" in rendered  # file:line:col, the source line, a caret


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, [(name, case_text(params, call)) for name, params, call in CASES])
