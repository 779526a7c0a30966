"""legalize-ops on R.nn.pad's reflect and replicate modes (codegen/topi/creation.py): every
case legalizes into one call_tir whose PrimFunc, run by the TIR interpreter, equals the op's
NumPy reference (np.pad, "reflect" / "edge"); and (tvm-marked) TVM 0.27's LegalizeOps prints
byte-identical text for each case and for a grid of every size 1..6 and every pair of pads
below the size. A reflect pad of a whole size or more (TOPI's formula then reads out of
bounds; np.pad reflects again) and a reflect pad of a symbolic-size axis stay unlegalized; a
symbolic-size axis left unpadded (a symbolic batch) is legalized as TVM writes it."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from test_legalize_avg_pool import _input, _ops, _tvm_texts, check_legalized
from test_legalize_ops import case_text, legalize

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text


def _pad(shape: str, widths, mode: str, dtype: str = "float32") -> tuple[str, str]:
    return f"x:{shape}:{dtype}", f'R.nn.pad(x, pad_width=[{", ".join(str(w) for w in widths)}], pad_mode="{mode}")'


CASES: list[tuple[str, str, str]] = [
    (f"{mode}-{name}", *_pad(shape, widths, mode, dtype))
    for mode in ("reflect", "replicate")
    for name, shape, widths, dtype in [
        ("2d", "2x5", (0, 0, 1, 2), "float32"),
        ("1d", "7", (3, 2), "float32"),
        ("nchw", "1x2x4x4", (0, 0, 0, 0, 1, 1, 1, 1), "float32"),
        ("nchw-asym", "1x3x5x6", (0, 0, 0, 0, 2, 0, 1, 3), "float32"),
        ("3d-all", "3x4x5", (1, 2, 3, 0, 2, 4), "float32"),
        ("int32", "4x3", (2, 1, 1, 2), "int32"),
        ("f16", "2x6", (1, 1, 5, 5), "float16"),
        ("size1", "1x4", (0, 0, 1, 1), "float32"),
        # regression (random zero-pipeline run): a symbolic batch, unpadded, next to padded axes
        ("sym-batch", "nx2x4x4", (0, 0, 0, 0, 1, 1, 1, 1), "float32"),
        ("sym-batch-3d", "nx3x5", (0, 0, 2, 1, 0, 3), "float32"),
        ("sym-two", "nxm", (0, 0, 0, 0), "float32"),
    ]
]

# dim 0 of size 1..6 with every pad pair below the size; dim 1 padded (1, 1) beside it
GRID: list[tuple[str, str, str]] = [
    (f"grid-{mode}-s{s}b{b}a{a}", *_pad(f"{s}x3", (b, a, 1, 1), mode))
    for mode in ("reflect", "replicate")
    for s in range(1, 7)
    for b, a in itertools.product(range(s), range(s))
]

UNLEGALIZED: list[tuple[str, str, str]] = [
    ("reflect-pad-eq-size", *_pad("3x4", (3, 0, 0, 0), "reflect")),
    ("reflect-pad-over-size", *_pad("3x4", (0, 0, 1, 5), "reflect")),
    ("reflect-symbolic", "x:nx4:float32", 'R.nn.pad(x, pad_width=[1, 1, 0, 0], pad_mode="reflect")'),
    ("reflect-symbolic-after", "x:nx4:float32", 'R.nn.pad(x, pad_width=[0, 1, 0, 0], pad_mode="reflect")'),
]


def test_pad_width_can_be_positional():
    """TVM's R.nn.pad(data, pad_width, pad_mode, pad_value) takes its attributes positionally."""
    text = case_text("x:2x3:float32", 'R.nn.pad(x, [0, 0, 1, 1], "reflect")')
    assert 'pad_width=[0, 0, 1, 1], pad_value=0.0, pad_mode="reflect"' in to_text(parse(text))


@pytest.mark.parametrize("case", CASES + GRID[::4], ids=[c[0] for c in CASES + GRID[::4]])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, run by the TIR interpreter, equals np.pad's result."""
    _, params, call = case
    mod = parse(case_text(params, call))
    name, dims, dtype = params.split(":")
    concrete = "x".join({"n": "3", "m": "2"}.get(d, d) for d in dims.split("x"))  # symbolic sizes: 3, 2
    check_legalized(mod, legalize(mod), _input(f"{name}:{concrete}:{dtype}", 3, scale=10))  # exact: copies


def test_reflect_does_not_repeat_the_edge():
    x = np.arange(4, dtype="float32")
    got = run_relax(legalize(parse(case_text(*_pad("4", (2, 3), "reflect")))), [x])
    assert np.asarray(got).tolist() == [2, 1, 0, 1, 2, 3, 2, 1, 0]


@pytest.mark.parametrize("case", UNLEGALIZED, ids=[c[0] for c in UNLEGALIZED])
def test_uncovered_cases_stay_unlegalized(case):
    _, params, call = case
    assert _ops(legalize(parse(case_text(params, call)))) == ["relax.nn.pad"]


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps prints exactly our text for every case and the whole grid."""
    cases = CASES + GRID
    failures = []
    for path, theirs in _tvm_texts(tvm_python, tmp_path, cases):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:2])
