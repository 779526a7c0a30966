"""legalize-ops on R.nn.pad's reflect and replicate modes (codegen/topi/creation.py): every
case legalizes into one call_tir whose PrimFunc, run by the TIR interpreter, equals the op's
NumPy reference (np.pad, "reflect" / "edge"); and (tvm-marked) TVM 0.27's LegalizeOps prints
byte-identical text for each case, for a grid of every size 1..6 and every pair of pads below
the size, for every larger pad up to 2 * size + 1 and for symbolic sizes padded by 0..3 on
either side. A reflect pad where TOPI's formula reads out of bounds (after >= size, before >
2 * (size - 1); np.pad reflects again) stays unlegalized, though with the guard lifted our
text is TVM's there as well; a pad before of size..2 * (size - 1) reflects twice, as np.pad
does. A symbolic size is legalized with any pads, as TVM does: where the size turns out too
small the PrimFunc reads out of bounds (TVM's as well), which our interpreter reports."""

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


def _in_bounds(case: tuple[str, str, str]) -> bool:
    """Dim 0 of a WIDE case: TOPI's reflect index stays in bounds (codegen/topi/creation.py)."""
    size = int(case[1].split(":")[1].split("x")[0])
    before, after = (int(w) for w in case[2].split("[")[1].split(",")[:2])
    return before <= 2 * (size - 1) and after < size


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

# pads of the size or more along dim 0 (size 1..6, up to 2 * size + 1 on either side); those
# with after < size and before <= 2 * (size - 1) are legalized (TOPI reflects twice)
WIDE: list[tuple[str, str, str]] = [
    (f"wide-reflect-s{s}b{b}a{a}", *_pad(f"{s}x3", (b, a, 1, 1), "reflect"))
    for s in range(1, 7)
    for b, a in itertools.product(range(2 * s + 2), range(2 * s + 2))
    if b >= s or a >= s
]
IN_BOUNDS = [c for c in WIDE if _in_bounds(c)]

# a symbolic size padded on either side (legalized whatever the pads, as TVM does), with
# a second symbolic or padded axis, and replicate / circular beside it
SYMBOLIC: list[tuple[str, str, str]] = [
    (f"sym-reflect-b{b}a{a}", *_pad("nx3", (b, a, 1, 1), "reflect")) for b, a in itertools.product(range(4), range(4))
] + [
    ("sym-reflect-nm", *_pad("nxm", (2, 1, 1, 3), "reflect")),
    ("sym-reflect-1d", *_pad("n", (1, 2), "reflect")),
    ("sym-reflect-batch-and-h", *_pad("bx2xnx5", (0, 0, 0, 0, 3, 2, 1, 1), "reflect")),
    ("sym-replicate-nm", *_pad("nxm", (2, 1, 1, 3), "replicate")),
] + [
    (f"sym-{mode}-b{b}a{a}", *_pad("nx3", (b, a, 1, 1), mode))
    for mode in ("replicate", "circular") for b, a in itertools.product(range(4), range(4))
]

UNLEGALIZED: list[tuple[str, str, str]] = [
    ("reflect-pad-eq-size-after", *_pad("3x4", (0, 3, 0, 0), "reflect")),
    ("reflect-pad-over-twice", *_pad("3x4", (5, 0, 0, 0), "reflect")),
    ("reflect-pad-over-size", *_pad("3x4", (0, 0, 1, 5), "reflect")),
    ("reflect-size1", *_pad("1x4", (1, 0, 0, 0), "reflect")),
]


def test_pad_width_can_be_positional():
    """TVM's R.nn.pad(data, pad_width, pad_mode, pad_value) takes its attributes positionally."""
    text = case_text("x:2x3:float32", 'R.nn.pad(x, [0, 0, 1, 1], "reflect")')
    assert 'pad_width=[0, 0, 1, 1], pad_value=0.0, pad_mode="reflect"' in to_text(parse(text))


SAMPLED = CASES + GRID[::4] + IN_BOUNDS + SYMBOLIC


@pytest.mark.parametrize("case", SAMPLED, ids=[c[0] for c in SAMPLED])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, run by the TIR interpreter, equals np.pad's result (a
    symbolic size large enough for its pads: TOPI's index stays in bounds)."""
    _, params, call = case
    mod = parse(case_text(params, call))
    name, dims, dtype = params.split(":")
    sizes = {"n": "3", "m": "2"} if case in CASES else {"n": "5", "m": "4", "b": "2"}
    concrete = "x".join(sizes.get(d, d) for d in dims.split("x"))
    check_legalized(mod, legalize(mod), _input(f"{name}:{concrete}:{dtype}", 3, scale=10))  # exact: copies


def test_reflect_pad_twice_the_size():
    """A pad before of 2 * (size - 1) reflects off both ends, as np.pad does."""
    x = np.arange(3, dtype="float32")
    got = run_relax(legalize(parse(case_text(*_pad("3", (4, 0), "reflect")))), [x])
    assert np.asarray(got).tolist() == [0, 1, 2, 1, 0, 1, 2]


def test_symbolic_reflect_out_of_bounds_is_reported():
    """Like TVM's, the PrimFunc of a symbolic size reads out of bounds when the size is too
    small for the pad; our interpreter says so (the unlegalized op reflects again)."""
    mod = parse(case_text(*_pad("nx3", (0, 2, 1, 1), "reflect")))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    assert np.asarray(run_relax(mod, [x])).shape == (4, 5)
    with pytest.raises(Exception, match="negative index"):
        run_relax(legalize(mod), [x])


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
    cases = CASES + GRID + IN_BOUNDS + SYMBOLIC
    failures = []
    for path, theirs in _tvm_texts(tvm_python, tmp_path, cases):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:2])


@pytest.mark.tvm
def test_out_of_bounds_forms_match_tvm(tvm_python, tmp_path, monkeypatch):
    """The pads left unlegalized: TVM legalizes them into a PrimFunc that reads out of bounds;
    with our guard lifted our text is TVM's, so only the choice to keep the call differs."""
    from irtool.codegen.topi import creation

    out_of_bounds = [c for c in WIDE if not _in_bounds(c)]
    texts = _tvm_texts(tvm_python, tmp_path, out_of_bounds)
    monkeypatch.setattr(creation, "_reflect_in_range", lambda *args: True)
    failures = [path for path, theirs in texts
                if to_text(legalize(parse(open(path).read())), show_meta_data=True).rstrip("\n") != theirs.rstrip("\n")]
    assert not failures and len(texts) == len(out_of_bounds) > 300
