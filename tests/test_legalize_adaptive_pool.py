"""legalize-ops on R.nn.adaptive_avg_pool2d (codegen/topi/pool.py), uneven windows included:
every case legalizes into one call_tir whose PrimFunc, run by the TIR interpreter, equals the
op's NumPy reference; and (tvm-marked) TVM 0.27's LegalizeOps prints byte-identical text for
each case, including a grid of every input size 1..12 against every output size 1..12 along
H (and along W), and pairs of uneven sizes in NCHW and NHWC. Where an output size does not
divide its input size, the window's extent depends on the output index and CreatePrimFunc
nests the reduction (`adaptive_pool_sum_l1` around `adaptive_pool_sum`, codegen/te.py)."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from test_legalize_avg_pool import _input, _tvm_texts, check_legalized
from test_legalize_ops import case_text, legalize

from irtool.exec.relax import run_relax
from irtool.text import parse, to_text


def _pool(shape: str, out, layout: str = "NCHW", dtype: str = "float32") -> tuple[str, str]:
    size = "" if out is None else f", output_size=[{', '.join(str(o) for o in out)}]"
    lay = "" if layout == "NCHW" else f', layout="{layout}"'
    return f"x:{shape}:{dtype}", f"R.nn.adaptive_avg_pool2d(x{size}{lay})"


# (case id, parameters, call)
CASES: list[tuple[str, str, str]] = [
    ("uneven-both", *_pool("1x2x5x7", (2, 3))),
    ("uneven-h", *_pool("1x1x5x4", (2, 2))),
    ("uneven-w", *_pool("1x1x4x5", (2, 2))),
    ("upsample", *_pool("1x2x3x2", (5, 7))),
    ("to-7x7", *_pool("1x3x10x10", (7, 7))),
    ("k3", *_pool("1x1x2x3", (6, 9))),
    ("nhwc-both", *_pool("1x5x7x2", (2, 3), "NHWC")),
    ("nhwc-w", *_pool("1x4x5x3", (2, 2), "NHWC")),
    ("nhwc-h", *_pool("2x9x6x3", (4, 3), "NHWC")),
    ("f16", *_pool("1x2x5x7", (3, 4), dtype="float16")),
    ("one-size", *_pool("1x2x5x5", (3,))),
    ("even", *_pool("1x2x6x6", (3, 2))),
]

# every input size 1..12 against every output size 1..12, along H (W even) and along W (H even)
GRID: list[tuple[str, str, str]] = [
    (f"grid-h{n}o{o}", *_pool(f"1x1x{n}x4", (o, 2))) for n, o in itertools.product(range(1, 13), range(1, 13))
] + [
    (f"grid-w{n}o{o}", *_pool(f"1x1x4x{n}", (2, o))) for n, o in itertools.product(range(1, 13), range(1, 13))
]

# both axes uneven, both layouts
PAIRS: list[tuple[str, str, str]] = [
    (f"pair-{layout}-{h}x{w}to{oh}x{ow}",
     *_pool(f"1x{h}x{w}x2" if layout == "NHWC" else f"1x2x{h}x{w}", (oh, ow), layout))
    for layout in ("NCHW", "NHWC")
    for (h, oh), (w, ow) in itertools.product([(5, 2), (7, 3), (2, 6), (9, 4)], [(4, 3), (11, 6), (3, 4)])
]


@pytest.mark.parametrize("case", CASES + GRID[::5] + PAIRS[::3],
                         ids=[c[0] for c in CASES + GRID[::5] + PAIRS[::3]])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, run by the TIR interpreter, equals the op's reference."""
    _, params, call = case
    mod = parse(case_text(params, call))
    check_legalized(mod, legalize(mod), _input(params, 2), tol=2e-3 if params.endswith("float16") else 1e-5)


def test_uneven_windows_overlap():
    """5 -> 2 along H: windows [0, 3) and [2, 5) share row 2; the nested reduction runs a
    window of each output's own extent."""
    x = np.arange(5, dtype="float32").reshape(1, 1, 5, 1)
    params, call = _pool("1x1x5x1", (2, 1))
    got = np.asarray(run_relax(legalize(parse(case_text(params, call))), [x]))
    assert got.ravel().tolist() == [1.0, 3.0]


def test_uneven_pool_nests_the_reduction():
    text = to_text(legalize(parse(case_text(*_pool("1x2x5x7", (2, 3))[0:2]))))
    assert 'T.sblock("adaptive_pool_sum_l1")' in text and 'T.sblock("adaptive_pool_sum")' in text


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps prints exactly our text for every case, the grid and the pairs."""
    cases = CASES + GRID + PAIRS
    failures = []
    for path, theirs in _tvm_texts(tvm_python, tmp_path, cases):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:2])
