"""legalize-ops on pools over a symbolic size (codegen/topi/pool.py): R.nn.avg_pool2d and
R.nn.max_pool2d with H = n, W = m or both (any kernel, stride, dilation and pad), both count_include_pad modes and ceil_mode (the pooled size as
TVM's analyzer prints it, an if_then_else where the last ceil_mode window may be dropped), and
R.nn.adaptive_avg_pool2d. Every case is one call_tir whose PrimFunc, run by the TIR
interpreter with concrete sizes, equals the op's NumPy reference; (tvm-marked) TVM 0.27's
LegalizeOps prints byte-identical text for each case of the grids."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from test_legalize_avg_pool import _assert_tvm_equal, check_legalized
from test_legalize_ops import case_text, legalize

from irtool.text import parse

SIZES = (13, 14, 15)  # at least the widest dilated window (13)


def _avg(k: int, s: int, d: int, ph: int, pt: int, include: bool, ceil: bool) -> tuple[str, str]:
    return "x:1x1xnx5:float32", (
        f"R.nn.avg_pool2d(x, pool_size=[{k}, 2], strides=[{s}, 1], dilation=[{d}, 1], "
        f"padding=[{ph}, 1, {pt}, 0], ceil_mode={ceil}, count_include_pad={include})")


# every kernel 1..5, stride 1..4, dilation 1..3 and pad below the kernel along the symbolic H
# (W constant)
AVG_GRID: list[tuple[str, str, str]] = [
    (f"avg-k{k}s{s}d{d}p{ph}{pt}-{'i' if inc else 'e'}{'c' if ceil else ''}", *_avg(k, s, d, ph, pt, inc, ceil))
    for k, s, d, ph, pt, inc, ceil in itertools.product(range(1, 6), range(1, 5), (1, 2, 3), range(3), range(3),
                                                        (True, False), (False, True))
    if ph < k and pt < k
]



def _random_symbolic(seed: int, count: int) -> list[tuple[str, str, str]]:
    """avg_pool2d with H = n, W = m or both (the other a constant 1..24), kernels 1..10,
    strides 1..8, dilated 2..4 on about a third of the axes, pads up to the kernel + 2 (below
    the kernel on a dilated axis)."""
    rng = random.Random(seed)

    def axis(symbol: str | None):
        while True:
            n, k, s = rng.randint(1, 24), rng.randint(1, 10), rng.randint(1, 8)
            d = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            top = k - 1 if d > 1 else k + 2
            ph, pt = rng.randint(0, top), rng.randint(0, top)
            extent = (k - 1) * d + 1  # a symbolic axis runs with sizes from 13 (SIZES)
            if n + ph + pt >= extent and (symbol is None or extent <= SIZES[0]):
                return symbol or n, k, s, d, ph, pt

    cases: dict = {}
    while len(cases) < count:
        sym_h, sym_w = rng.random() < 0.7, rng.random() < 0.5
        if not (sym_h or sym_w):
            continue
        (nh, kh, sh, dh, th, bh), (nw, kw, sw, dw, lw, rw) = axis("n" if sym_h else None), axis("m" if sym_w else None)
        inc, ceil = rng.random() < 0.5, rng.random() < 0.5
        name = f"avg-{nh}_{kh}_{sh}_{dh}_{th}_{bh}x{nw}_{kw}_{sw}_{dw}_{lw}_{rw}{'i' if inc else 'e'}{'c' if ceil else ''}"
        cases[name] = (f"x:1x2x{nh}x{nw}:float32",
                       f"R.nn.avg_pool2d(x, pool_size=[{kh}, {kw}], strides=[{sh}, {sw}], dilation=[{dh}, {dw}], "
                       f"padding=[{th}, {lw}, {bh}, {rw}], count_include_pad={inc}, ceil_mode={ceil})")
    return [(name, *case) for name, case in cases.items()]


AVG_RANDOM = _random_symbolic(4242, 400)

# max_pool2d has no divisor: the pooled size is the symbolic part, pads up to 2 of any kernel
MAX_GRID: list[tuple[str, str, str]] = [
    (f"max-k{k}s{s}d{d}p{ph}{pt}{'c' if ceil else ''}", "x:1x1xnx5:float32",
     f"R.nn.max_pool2d(x, pool_size=[{k}, 2], strides=[{s}, 1], dilation=[{d}, 1], padding=[{ph}, 1, {pt}, 0], "
     f"ceil_mode={ceil})")
    for k, s, d, ph, pt, ceil in itertools.product(range(1, 6), range(1, 5), (1, 2, 3), range(3), range(3),
                                                   (False, True))
]

# both sizes symbolic, and layouts
EXTRA: list[tuple[str, str, str]] = [
    ("avg-nm", "x:1x2xnxm:float32",
     "R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=False)"),
    ("avg-nm-ceil", "x:1x2xnxm:float32",
     "R.nn.avg_pool2d(x, pool_size=[2, 3], strides=[2, 3], padding=[0, 1, 1, 2], ceil_mode=True, "
     "count_include_pad=True)"),
    ("avg-nhwc", "x:1xnx6x3:float32", 'R.nn.avg_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1], layout="NHWC")'),
    ("avg-batch", "x:bx2x7x7:float32", "R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[2, 2])"),
    ("max-nm", "x:1x2xnxm:float32", "R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])"),
]

# adaptive pooling of symbolic sizes: output 1 (the whole axis), the axis itself
# (output_size omitted) or any other constant (TOPI's uneven window, nested sblocks)
ADAPTIVE_GRID: list[tuple[str, str, str]] = [
    (f"adaptive-{layout}-{oh}x{ow}", "x:1x2xnxm:float32" if layout == "NCHW" else "x:1xnxmx2:float32",
     f'R.nn.adaptive_avg_pool2d(x, output_size=[{oh}, {ow}], layout="{layout}")')
    for layout, oh, ow in itertools.product(("NCHW", "NHWC"), range(1, 13), (1, 2, 5))
] + [
    (f"adaptive-mixed-{oh}x{ow}", "x:1x2xnx6:float16", f"R.nn.adaptive_avg_pool2d(x, output_size=[{oh}, {ow}])")
    for oh, ow in itertools.product((1, 2, 3, 7), (1, 3, 4, 6, 7))
] + [
    ("adaptive-identity", "x:1x2xnxm:float32", "R.nn.adaptive_avg_pool2d(x)"),
    ("adaptive-batch", "x:bx2x6x6:float32", "R.nn.adaptive_avg_pool2d(x, output_size=[3, 4])"),
]

# a dilated symbolic axis padded by its kernel or more (up to the kernel + 2): with padding
# counted a window of one element takes the head into its min (`min(0, n + c - v * s)`) unless
# the stride (> 1) divides the head, and `min(0, n - v * s) + c` wins over a kept
# `min(v * s + s, n + s) - v * s`; every other case of the grid
AVG_DILATED_PAD_GRID: list[tuple[str, str, str]] = [
    (f"avg-dp-k{k}s{s}d{d}p{ph}{pt}-{'i' if inc else 'e'}{'c' if ceil else ''}", *_avg(k, s, d, ph, pt, inc, ceil))
    for k, s, d, ph, pt, inc, ceil in itertools.product(range(1, 6), range(1, 5), (2, 3), range(8), range(8),
                                                        (True, False), (False, True))
    if (ph >= k or pt >= k) and ph <= k + 2 and pt <= k + 2
][::2]



def _input(params: str, n: int, seed: int) -> np.ndarray:
    """A random input for `x:AxB:dtype` with every symbol set to n (a batch symbol to 2)."""
    dims = [int(d) if d.isdigit() else (2 if d == "b" else n) for d in params.split(":")[1].split("x")]
    return np.random.default_rng(seed).standard_normal(dims).astype(params.split(":")[2])


SAMPLED = AVG_GRID[::7] + AVG_RANDOM[::8] + AVG_DILATED_PAD_GRID[::31] + MAX_GRID[::11] + EXTRA + ADAPTIVE_GRID[::2] + ADAPTIVE_GRID[-2:]


@pytest.mark.parametrize("case", SAMPLED, ids=[c[0] for c in SAMPLED])
def test_legalized_matches_reference(case):
    """One call_tir whose PrimFunc, at several concrete sizes, equals the op's reference."""
    _, params, call = case
    mod = parse(case_text(params, call))
    out = legalize(mod)
    for n in SIZES:
        check_legalized(mod, out, _input(params, n, n), tol=2e-3 if "float16" in params else 1e-5,
                        roundtrip=n == SIZES[0])


@pytest.mark.tvm
def test_avg_pool_text_matches_tvm(tvm_python, tmp_path):
    cases = AVG_GRID + AVG_RANDOM + AVG_DILATED_PAD_GRID + [c for c in EXTRA if c[0].startswith("avg")]
    assert _assert_tvm_equal(tvm_python, tmp_path, cases) == len(cases)


@pytest.mark.tvm
def test_max_pool_text_matches_tvm(tvm_python, tmp_path):
    cases = MAX_GRID + [c for c in EXTRA if c[0].startswith("max")]
    assert _assert_tvm_equal(tvm_python, tmp_path, cases) == len(cases)


@pytest.mark.tvm
def test_adaptive_pool_text_matches_tvm(tvm_python, tmp_path):
    assert _assert_tvm_equal(tvm_python, tmp_path, ADAPTIVE_GRID) == len(ADAPTIVE_GRID)
