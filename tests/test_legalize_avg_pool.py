"""legalize-ops on R.nn.avg_pool2d (codegen/topi/pool.py): every case legalizes into one
call_tir whose PrimFunc, run by the interpreters, equals the op's NumPy reference; and
(tvm-marked) TVM 0.27's LegalizeOps prints byte-identical text for each case, including a grid
of every stride 1..4, kernel 1..5 and padding below the kernel on sizes 7..9, with and without
ceil_mode, the same grid dilated (2 and 3, both count_include_pad modes, with and without
ceil_mode), seeded random pools dilated up to 8 on either or both axes, a grid of undilated
strided windows with kernels up to 9 and pads up to 4 (a pad of the whole kernel or more
included), random pools with sizes from 1, and dilated axes padded by their kernel or more
(a grid and random pools)."""

from __future__ import annotations

import itertools
import os
import random
import subprocess

import numpy as np
import pytest
from test_legalize_ops import _TVM_RUNNER, case_text, legalize

from irtool.exec.relax import run_relax
from irtool.ir import relax as rx
from irtool.text import parse, to_text
from irtool.text.tvmscript.tir_stmt import printed_domains


def _pool(shape: str, k, s, p, include: bool, extra: str = "") -> tuple[str, str]:
    call = (f"R.nn.avg_pool2d(x, pool_size=[{k[0]}, {k[1]}], strides=[{s[0]}, {s[1]}], "
            f"padding=[{p[0]}, {p[1]}, {p[2]}, {p[3]}], count_include_pad={include}{extra})")
    return f"x:{shape}:float32", call


# (case id, parameters, call): the common CNN windows, both count_include_pad modes
CASES: list[tuple[str, str, str]] = [
    (f"{name}-{'incl' if include else 'excl'}", *_pool(shape, k, s, p, include))
    for name, shape, k, s, p in [
        ("3x3s1p1", "1x2x8x8", (3, 3), (1, 1), (1, 1, 1, 1)),
        ("2x2s2p0", "1x2x8x8", (2, 2), (2, 2), (0, 0, 0, 0)),
        ("3x3s2p1", "1x2x8x8", (3, 3), (2, 2), (1, 1, 1, 1)),
        ("global7", "1x2x7x7", (7, 7), (1, 1), (0, 0, 0, 0)),
        ("3x3s2p0-odd", "1x2x7x9", (3, 3), (2, 2), (0, 0, 0, 0)),
        ("asym-pad", "1x1x6x7", (3, 2), (2, 1), (1, 0, 2, 1)),
        ("5x5s3p2", "1x1x9x9", (5, 5), (3, 3), (2, 2, 2, 2)),
        ("4x2s4p1", "1x1x9x8", (4, 2), (4, 2), (1, 1, 2, 1)),
    ]
    for include in (True, False)
] + [
    ("nhwc", "x:1x8x8x3:float32",
     'R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], layout="NHWC")'),
    ("f16", "x:1x2x6x6:float16", "R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[2, 2])"),
]

# every stride 1..4, kernel 1..5, padding below the kernel, sizes 7..9, one axis varied per
# case (H), the other fixed: TVM's printed divisor changes with each of them
GRID: list[tuple[str, str, str]] = [
    (f"grid-n{n}k{k}s{s}p{ph}{pt}-{'i' if inc else 'e'}", *_pool(f"1x1x{n}x5", (k, 2), (s, 1), (ph, 1, pt, 0), inc))
    for n, k, s, ph, pt, inc in itertools.product((7, 8, 9), range(1, 6), range(1, 5), range(3), range(3), (True, False))
    if ph < k and pt < k and n + ph + pt >= k
]

# the same grid with ceil_mode: the tail padded by stride - 1 more, the last window dropped
# when it would start in that padding; the divisor is unchanged
CEIL_GRID: list[tuple[str, str, str]] = [
    (f"ceil-n{n}k{k}s{s}p{ph}{pt}-{'i' if inc else 'e'}",
     *_pool(f"1x1x{n}x5", (k, 2), (s, 1), (ph, 1, pt, 0), inc, ", ceil_mode=True"))
    for n, k, s, ph, pt, inc in itertools.product((7, 8, 9), range(1, 6), range(1, 5), range(3), range(3), (True, False))
    if ph < k and pt < k and n + ph + pt >= k
]

# dilation 2 and 3 along H on the same grid (W undilated), with and without ceil_mode: TOPI's
# dilated divisor `(end - first) / d + 1` truncates, and TVM prints it in several forms
DILATED_GRID: list[tuple[str, str, str]] = [
    (f"dil-n{n}k{k}s{s}d{d}p{ph}{pt}-{'i' if inc else 'e'}{'c' if ceil else ''}",
     *_pool(f"1x1x{n}x5", (k, 2), (s, 1), (ph, 1, pt, 0), inc, f", dilation=[{d}, 1], ceil_mode={ceil}"))
    for n, k, s, d, ph, pt, inc, ceil in itertools.product((7, 8, 9), range(1, 6), range(1, 5), (2, 3), range(3),
                                                           range(3), (True, False), (False, True))
    if ph < k and pt < k and n + ph + pt >= (k - 1) * d + 1
]


def _random_dilated(seed: int, count: int) -> list[tuple[str, str, str]]:
    """Pools with random sizes 3..24, kernels 1..8, strides 1..8, dilations 1..8 (at least one
    axis dilated) and pads below the kernel, each axis drawn on its own."""
    rng = random.Random(seed)

    def axis():
        while True:
            n, k, s, d = rng.randint(3, 24), rng.randint(1, 8), rng.randint(1, 8), rng.randint(1, 8)
            ph, pt = rng.randint(0, k - 1), rng.randint(0, k - 1)
            if n + ph + pt >= (k - 1) * d + 1:
                return n, k, s, d, ph, pt

    cases: dict = {}
    while len(cases) < count:
        (nh, kh, sh, dh, th, bh), (nw, kw, sw, dw, lw, rw) = axis(), axis()
        if dh == dw == 1:
            continue
        inc, ceil = rng.random() < 0.5, rng.random() < 0.5
        name = f"rand-{nh}_{kh}_{sh}_{dh}_{th}_{bh}x{nw}_{kw}_{sw}_{dw}_{lw}_{rw}{'i' if inc else 'e'}{'c' if ceil else ''}"
        cases[name] = _pool(f"1x2x{nh}x{nw}", (kh, kw), (sh, sw), (th, lw, bh, rw), inc,
                            f", dilation=[{dh}, {dw}], ceil_mode={ceil}")
    return [(name, *case) for name, case in cases.items()]


RANDOM_DILATED = _random_dilated(11, 300)

# undilated strided windows beyond the first grid: kernels up to 9, strides 2..5, pads up to 4,
# pads of a whole kernel or more (a window wholly in the padding), every other case
WIDE_GRID: list[tuple[str, str, str]] = [
    (f"wide-n{n}k{k}s{s}p{ph}{pt}-{'i' if inc else 'e'}{'c' if ceil else ''}",
     *_pool(f"1x1x{n}x5", (k, 2), (s, 1), (ph, 1, pt, 0), inc, f", ceil_mode={ceil}"))
    for n, k, s, ph, pt, inc, ceil in itertools.product((7, 12), range(1, 10), range(2, 6), range(5), range(5),
                                                        (True, False), (False, True))
    if n + ph + pt >= k and (k > 5 or ph > 2 or pt > 2 or ph >= k or pt >= k)
][::2]


def _random_wide(seed: int, count: int) -> list[tuple[str, str, str]]:
    """Pools with random sizes 1..32, kernels 1..12, strides 1..9, pads up to the kernel + 2
    (below the kernel on a dilated axis), dilation 2..4 on about a third of the axes."""
    rng = random.Random(seed)

    def axis():
        while True:
            n, k, s = rng.randint(1, 32), rng.randint(1, 12), rng.randint(1, 9)
            d = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            top = k - 1 if d > 1 else k + 2
            ph, pt = rng.randint(0, top), rng.randint(0, top)
            if n + ph + pt >= (k - 1) * d + 1:
                return n, k, s, d, ph, pt

    cases: dict = {}
    while len(cases) < count:
        (nh, kh, sh, dh, th, bh), (nw, kw, sw, dw, lw, rw) = axis(), axis()
        inc, ceil = rng.random() < 0.5, rng.random() < 0.5
        name = f"wide-{nh}_{kh}_{sh}_{dh}_{th}_{bh}x{nw}_{kw}_{sw}_{dw}_{lw}_{rw}{'i' if inc else 'e'}{'c' if ceil else ''}"
        cases[name] = _pool(f"1x2x{nh}x{nw}", (kh, kw), (sh, sw), (th, lw, bh, rw), inc,
                            f", dilation=[{dh}, {dw}], ceil_mode={ceil}")
    return [(name, *case) for name, case in cases.items()]


RANDOM_WIDE = _random_wide(2026, 600)

# a dilated axis padded by its kernel or more (up to the kernel + 2), one pad or both: a window of
# one element takes the head pad into its min (`min(0, b + head - v * s)`) unless the stride
# divides the head but not the bound, and a reach below 0 writes `v * s - c`. Every 5th case of
# the grid over sizes 7..9, kernels 1..5, strides 1..4, dilations 2..3, both modes, ceil_mode
DILATED_PAD_GRID: list[tuple[str, str, str]] = [
    (f"dilpad-n{n}k{k}s{s}d{d}p{ph}{pt}-{'i' if inc else 'e'}{'c' if ceil else ''}",
     *_pool(f"1x1x{n}x5", (k, 2), (s, 1), (ph, 1, pt, 0), inc, f", dilation=[{d}, 1], ceil_mode={ceil}"))
    for n, k, s, d, ph, pt, inc, ceil in itertools.product((7, 8, 9), range(1, 6), range(1, 5), (2, 3), range(8),
                                                           range(8), (True, False), (False, True))
    if (ph >= k or pt >= k) and ph <= k + 2 and pt <= k + 2 and n + ph + pt >= (k - 1) * d + 1
][::5]


def _random_dilated_pad(seed: int, count: int) -> list[tuple[str, str, str]]:
    """Pools with random sizes 1..24, kernels 1..8, strides 1..8, dilations 2..6 on at least
    one axis and pads up to the kernel + 2, at least one of them the kernel or more."""
    rng = random.Random(seed)

    def axis(dilated: bool):
        while True:
            n, k, s = rng.randint(1, 24), rng.randint(1, 8), rng.randint(1, 8)
            d = rng.randint(2, 6) if dilated else rng.randint(1, 3)
            ph, pt = rng.randint(0, k + 2), rng.randint(0, k + 2)
            if n + ph + pt >= (k - 1) * d + 1:
                return n, k, s, d, ph, pt

    cases: dict = {}
    while len(cases) < count:
        (nh, kh, sh, dh, th, bh), (nw, kw, sw, dw, lw, rw) = axis(True), axis(rng.random() < 0.5)
        if not any(d > 1 and p >= k for d, p, k in ((dh, th, kh), (dh, bh, kh), (dw, lw, kw), (dw, rw, kw))):
            continue
        inc, ceil = rng.random() < 0.5, rng.random() < 0.5
        name = f"dpad-{nh}_{kh}_{sh}_{dh}_{th}_{bh}x{nw}_{kw}_{sw}_{dw}_{lw}_{rw}{'i' if inc else 'e'}{'c' if ceil else ''}"
        cases[name] = _pool(f"1x2x{nh}x{nw}", (kh, kw), (sh, sw), (th, lw, bh, rw), inc,
                            f", dilation=[{dh}, {dw}], ceil_mode={ceil}")
    return [(name, *case) for name, case in cases.items()]


RANDOM_DILATED_PAD = _random_dilated_pad(1212, 400)


def _ops(mod) -> list[str]:
    main = mod.functions["main"]
    return [b.value.op.name for blk in main.body.blocks for b in blk.bindings if isinstance(b.value, rx.Call)]


def _input(params: str, seed: int, scale: float = 1.0) -> np.ndarray:
    """A random input for a one-parameter case `x:AxB:dtype`."""
    dtype = params.split(":")[-1]
    shape = [int(d) for d in params.split(":")[1].split("x")]
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def check_legalized(mod, out, x, tol: float = 0.0, atol: float | None = None, roundtrip: bool = True) -> None:
    """`out` (legalize-ops of `mod`) is one call_tir whose PrimFunc, run by the TIR
    interpreter, equals the op's reference on `x`; its text reads back to the same text."""
    assert _ops(out) == ["relax.call_tir"]
    expected, got = np.asarray(run_relax(mod, [x])), np.asarray(run_relax(out, [x]))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol,
                               atol=tol if atol is None else atol)
    if roundtrip:  # an uneven adaptive pool's nested sblock domains as printed (printed_domains)
        assert to_text(printed_domains(parse(to_text(out)))) == to_text(out)


SAMPLED = CASES + GRID[::7] + CEIL_GRID[::7] + DILATED_GRID[::11] + RANDOM_DILATED[::5] + WIDE_GRID[::40] + \
    RANDOM_WIDE[::10] + DILATED_PAD_GRID[::29] + RANDOM_DILATED_PAD[::10] + [
        ("pad-ge-kernel", *_pool("1x1x7x7", (2, 2), (1, 1), (2, 2, 2, 2), True)),
        ("pad-ge-kernel-excl", *_pool("1x1x3x7", (1, 2), (2, 1), (4, 2, 0, 2), False)),
        ("strided-kernel6", *_pool("1x1x9x9", (6, 6), (2, 2), (0, 0, 0, 0), True)),
        ("size1-excl", *_pool("1x1x1x7", (1, 2), (3, 1), (0, 0, 0, 0), False)),
    ]


@pytest.mark.parametrize("case", SAMPLED, ids=[c[0] for c in SAMPLED])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, run by the TIR interpreter, equals avg_pool2d's reference."""
    _, params, call = case
    mod = parse(case_text(params, call))
    out = legalize(mod)
    check_legalized(mod, out, _input(params, 1), tol=2e-3 if params.endswith("float16") else 1e-5)


def test_count_excludes_padding():
    """The corner window of a 3x3 p1 pool over ones averages 4 real elements: 1.0 either way,
    but with count_include_pad it divides their sum by 9."""
    x = np.ones((1, 1, 4, 4), "float32")
    for include, corner in ((False, 1.0), (True, 4 / 9)):
        params, call = _pool("1x1x4x4", (3, 3), (1, 1), (1, 1, 1, 1), include)
        got = run_relax(legalize(parse(case_text(params, call))), [x])
        assert np.isclose(np.asarray(got)[0, 0, 0, 0], corner)


def _tvm_texts(tvm_python, tmp_path, cases) -> list[tuple[str, str]]:
    runner = tmp_path / "runner.py"
    runner.write_text(_TVM_RUNNER)
    paths = []
    for name, params, call in cases:
        path = tmp_path / f"{name}.py"
        path.write_text(case_text(params, call))
        paths.append(str(path))
    proc = subprocess.run([tvm_python, str(runner), *paths], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [(path, open(path + ".tvm").read()) for path in paths]


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps prints exactly our text for every case and the whole grid."""
    cases = CASES + GRID + CEIL_GRID
    assert _assert_tvm_equal(tvm_python, tmp_path, cases) == len(cases)


def _assert_tvm_equal(tvm_python, tmp_path, cases) -> int:
    """Every legalized case prints as TVM's; returns how many were legalized (the others
    must be left as they are, which the caller bounds)."""
    failures, legalized = [], 0
    for path, theirs in _tvm_texts(tvm_python, tmp_path, cases):
        ours = to_text(legalize(parse(open(path).read())), show_meta_data=True)
        if "R.call_tir(" not in ours:
            continue
        legalized += 1
        if ours.rstrip("\n") != theirs.rstrip("\n"):
            failures.append(f"{os.path.basename(path)}\n--- ours\n{ours}\n--- TVM\n{theirs}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:2])
    return legalized


@pytest.mark.tvm
def test_dilated_text_matches_tvm(tvm_python, tmp_path):
    """The dilated grid, all legalized and byte-identical to TVM 0.27."""
    assert _assert_tvm_equal(tvm_python, tmp_path, DILATED_GRID) == len(DILATED_GRID)


@pytest.mark.tvm
def test_random_dilated_text_matches_tvm(tvm_python, tmp_path):
    """Random dilated pools: all legalized, byte-identical to TVM 0.27."""
    assert _assert_tvm_equal(tvm_python, tmp_path, RANDOM_DILATED) == len(RANDOM_DILATED)


@pytest.mark.tvm
def test_dilated_pad_beyond_kernel_text_matches_tvm(tvm_python, tmp_path):
    """A dilated axis padded by its kernel or more, on the grid and at random: all
    legalized, byte-identical to TVM 0.27."""
    assert _assert_tvm_equal(tvm_python, tmp_path, DILATED_PAD_GRID) == len(DILATED_PAD_GRID)
    assert _assert_tvm_equal(tvm_python, tmp_path, RANDOM_DILATED_PAD) == len(RANDOM_DILATED_PAD)


@pytest.mark.tvm
def test_wide_text_matches_tvm(tvm_python, tmp_path):
    """Undilated strided windows of any kernel and pad (a window wholly in the padding
    included), and random pools with sizes from 1: all legalized, byte-identical to TVM."""
    assert _assert_tvm_equal(tvm_python, tmp_path, WIDE_GRID) == len(WIDE_GRID)
    assert _assert_tvm_equal(tvm_python, tmp_path, RANDOM_WIDE) == len(RANDOM_WIDE)
