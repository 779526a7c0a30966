"""legalize-ops on the 3-D window ops R.nn.conv3d, R.nn.conv3d_transpose, R.nn.max_pool3d,
R.nn.avg_pool3d and R.nn.adaptive_avg_pool3d (codegen/topi/{nn,conv_transpose,pool}.py): each
legalized module, run by the interpreters, equals the op's NumPy reference and prints and parses
back unchanged; (tvm-marked) TVM 0.27's LegalizeOps prints exactly the same text, on hand-picked
cases and on random attribute combinations (layouts, groups, strides, dilation, padding forms,
ceil_mode, count_include_pad; adaptive windows even and uneven, size variables)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, case_text, legalized_to_one_call

from irtool.exec.relax import random_input, run_relax
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text
from irtool.text.tvmscript.tir_stmt import printed_domains

# (case id, parameters "name:shape:dtype" (shapes like 1x2x4x4x4, n a symbolic size), the call)
CASES: list[tuple[str, str, str]] = [
    ("conv3d",             "x:1x2x5x5x5:float32 w:4x2x3x3x3:float32", "R.nn.conv3d(x, w)"),
    ("conv3d-stride-pad",  "x:1x2x6x5x7:float32 w:3x2x3x2x3:float32",
     "R.nn.conv3d(x, w, strides=[2, 1, 2], padding=[1, 0, 1, 0, 1, 1])"),
    ("conv3d-dilation",    "x:1x2x7x7x7:float32 w:2x2x2x3x2:float32",
     "R.nn.conv3d(x, w, dilation=[2, 1, 3], padding=[1, 1, 1])"),
    ("conv3d-groups",      "x:1x4x4x4x4:float32 w:6x2x3x3x3:float32", "R.nn.conv3d(x, w, groups=2, padding=1)"),
    ("conv3d-depthwise",   "x:2x3x4x5x4:float32 w:3x1x3x3x3:float32", "R.nn.conv3d(x, w, groups=3)"),
    ("conv3d-ndhwc",       "x:1x5x5x5x2:float32 w:3x3x3x2x4:float32",
     'R.nn.conv3d(x, w, strides=[2, 2, 2], padding=[1, 1, 1], data_layout="NDHWC", kernel_layout="DHWIO")'),
    ("conv3d-out-dtype",   "x:1x2x4x4x4:float16 w:2x2x3x3x3:float16", 'R.nn.conv3d(x, w, out_dtype="float32")'),
    ("conv3d-sym",         "x:nx2x5x5x5:float32 w:2x2x3x3x3:float32", "R.nn.conv3d(x, w, padding=[1, 1, 1])"),
    ("conv3d-sym-depth",   "x:1x2xnx5x5:float32 w:2x2x3x3x3:float32", "R.nn.conv3d(x, w, strides=[2, 1, 1])"),
    ("conv3d_transpose",   "x:1x2x3x3x3:float32 w:2x4x3x3x3:float32", "R.nn.conv3d_transpose(x, w)"),
    ("conv3d_transpose-stride", "x:1x2x3x4x3:float32 w:2x3x3x2x3:float32",
     "R.nn.conv3d_transpose(x, w, strides=[2, 1, 2], padding=[1, 0, 1, 1, 0, 0], output_padding=[1, 0, 1])"),
    ("conv3d_transpose-groups", "x:1x4x3x3x3:float32 w:4x2x2x2x2:float32", "R.nn.conv3d_transpose(x, w, groups=2)"),
    ("conv3d_transpose-dil", "x:1x2x3x3x3:float32 w:2x2x2x3x2:float32",
     "R.nn.conv3d_transpose(x, w, dilation=[2, 1, 2], padding=[1, 0, 0, 0, 1, 1])"),
    ("max_pool3d",         "x:1x2x4x4x4:float32", "R.nn.max_pool3d(x, pool_size=[2, 2, 2], strides=[2, 2, 2])"),
    ("max_pool3d-pad",     "x:1x2x5x5x5:float32",
     "R.nn.max_pool3d(x, pool_size=[3, 3, 3], strides=[2, 2, 2], padding=[1, 1, 1, 1, 1, 1])"),
    ("max_pool3d-ceil",    "x:1x2x5x6x5:float32",
     "R.nn.max_pool3d(x, pool_size=[2, 2, 2], strides=[2, 2, 2], ceil_mode=True)"),
    ("max_pool3d-dil",     "x:1x1x7x7x7:float32",
     "R.nn.max_pool3d(x, pool_size=[2, 2, 2], dilation=[2, 1, 2], padding=[0, 1, 1, 1, 0, 0])"),
    ("max_pool3d-ndhwc",   "x:1x5x5x5x2:float32", 'R.nn.max_pool3d(x, pool_size=[3, 3, 3], layout="NDHWC")'),
    ("max_pool3d-i32",     "x:1x2x4x4x4:int32", "R.nn.max_pool3d(x, pool_size=[2, 2, 2], padding=[1, 1, 1])"),
    ("max_pool3d-sym",     "x:1x2xnx4x4:float32", "R.nn.max_pool3d(x, pool_size=[2, 2, 2])"),
    ("avg_pool3d",         "x:1x2x4x4x4:float32", "R.nn.avg_pool3d(x, pool_size=[2, 2, 2], strides=[2, 2, 2])"),
    ("avg_pool3d-pad",     "x:1x2x5x5x5:float32",
     "R.nn.avg_pool3d(x, pool_size=[3, 3, 3], strides=[2, 2, 2], padding=[1, 1, 1, 1, 1, 1])"),
    ("avg_pool3d-pad-exclude", "x:1x2x5x5x5:float32",
     "R.nn.avg_pool3d(x, pool_size=[3, 3, 3], strides=[2, 2, 2], padding=[1, 1, 1], count_include_pad=False)"),
    ("avg_pool3d-ceil",    "x:1x2x5x6x7:float32",
     "R.nn.avg_pool3d(x, pool_size=[2, 3, 2], strides=[2, 2, 3], ceil_mode=True, count_include_pad=False)"),
    ("avg_pool3d-dil",     "x:1x1x7x7x7:float32",
     "R.nn.avg_pool3d(x, pool_size=[2, 2, 2], dilation=[2, 1, 2], padding=[0, 1, 1, 1, 0, 0])"),
    ("avg_pool3d-ndhwc",   "x:1x5x5x5x2:float32",
     'R.nn.avg_pool3d(x, pool_size=[2, 2, 2], padding=[1, 0, 1], layout="NDHWC", count_include_pad=False)'),
    ("avg_pool3d-sym",     "x:1x2xnx4x4:float32", "R.nn.avg_pool3d(x, pool_size=[2, 2, 2])"),
    # relay-to-relax's nn.lrn: the channels pooled as a window axis of an unusual layout
    ("avg_pool3d-lrn-nhwcd", "x:1x2x3x1x6:float32",
     'R.nn.avg_pool3d(x, pool_size=[2, 1, 1], padding=[1, 0, 0, 0, 0, 0], count_include_pad=True, layout="NHWCD")'),
    ("avg_pool2d-lrn-nwch", "x:3x2x1x7:float32",
     'R.nn.avg_pool2d(x, pool_size=[5, 1], padding=[2, 0, 2, 0], count_include_pad=True, layout="NWCH")'),
    ("adaptive_avg_pool3d", "x:1x2x4x6x8:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[2, 3, 4])"),
    ("adaptive_avg_pool3d-one", "x:1x2x4x6x8:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[1, 1, 1])"),
    ("adaptive_avg_pool3d-none", "x:1x2x3x2x2:float32", "R.nn.adaptive_avg_pool3d(x)"),
    ("adaptive_avg_pool3d-uneven", "x:1x2x5x7x4:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[2, 3, 4])"),
    ("adaptive_avg_pool3d-uneven-all", "x:1x1x5x7x5:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[3, 2, 4])"),
    ("adaptive_avg_pool3d-ndhwc", "x:1x5x6x7x2:float32",
     'R.nn.adaptive_avg_pool3d(x, output_size=[2, 3, 3], layout="NDHWC")'),
    ("adaptive_avg_pool3d-sym", "x:1x2xnx6x8:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[1, 2, 3])"),
    ("adaptive_avg_pool3d-sym-uneven", "x:1x2xnx6x8:float32", "R.nn.adaptive_avg_pool3d(x, output_size=[3, 4, 3])"),
]


def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)


def _padding(rng: random.Random, limits: list[int]) -> tuple[list[int], str]:
    """Padding in one of TVM's forms (one value, one per axis, or front/top/left/back/bottom/
    right), each value at most its axis's limit; returns the six values and the attribute text."""
    form = rng.choice(["int", "three", "six"])
    if form == "int":
        v = rng.randint(0, min(limits))
        return [v] * 6, f"padding={v}"
    if form == "three":
        vs = [rng.randint(0, lim) for lim in limits]
        return vs + vs, f"padding={vs}"
    vs = [rng.randint(0, lim) for lim in limits * 2]
    return vs, f"padding={vs}"


def _window_sizes(rng: random.Random, kernel, stride, dilation, pads, ceil_mode=False) -> list[int]:
    """Input sizes (1..7) that leave at least one output per axis."""
    sizes = []
    for i in range(3):
        reach = (kernel[i] - 1) * dilation[i] + 1 - pads[i] - pads[i + 3]
        sizes.append(rng.randint(max(1, reach), max(1, reach) + 4))
    return sizes


_LAYOUTS = [("NCDHW", "OIDHW"), ("NDHWC", "DHWIO"), ("NCDHW", "DHWIO"), ("NDHWC", "OIDHW")]


def _in_layout(canon: dict, layout: str) -> list[int]:
    return [canon[a] for a in layout]


def random_conv3d(rng: random.Random, k: int) -> tuple[str, str, str]:
    groups = rng.choice([1, 1, 2, 3])
    cin, cout = groups * rng.randint(1, 2), groups * rng.randint(1, 2)
    kernel, stride, dilation = ([rng.randint(lo, hi) for _ in range(3)] for lo, hi in ((1, 3), (1, 3), (1, 2)))
    pads, pad_text = _padding(rng, [2, 2, 2])
    d, h, w = _window_sizes(rng, kernel, stride, dilation, pads)
    data_layout, kernel_layout = rng.choice(_LAYOUTS)
    x = _in_layout({"N": rng.randint(1, 2), "C": cin, "D": d, "H": h, "W": w}, data_layout)
    wt = _in_layout({"O": cout, "I": cin // groups, "D": kernel[0], "H": kernel[1], "W": kernel[2]}, kernel_layout)
    attrs = [f"strides={stride}", pad_text, f"dilation={dilation}", f"groups={groups}",
             f'data_layout="{data_layout}"', f'kernel_layout="{kernel_layout}"']
    return (f"conv3d-random{k}", f"x:{_dims(x)}:float32 w:{_dims(wt)}:float32",
            f"R.nn.conv3d(x, w, {', '.join(attrs)})")


def random_conv3d_transpose(rng: random.Random, k: int) -> tuple[str, str, str]:
    groups = rng.choice([1, 1, 2])
    cin, cout = groups * rng.randint(1, 2), rng.randint(1, 2)
    kernel, stride, dilation = ([rng.randint(lo, hi) for _ in range(3)] for lo, hi in ((1, 3), (1, 3), (1, 2)))
    opad = [rng.randint(0, s - 1) for s in stride]
    size = [rng.randint(1, 4) for _ in range(3)]
    # TOPI pads the dilated input by (dilated kernel - 1 - padding): padding up to that, and
    # leaving an output of at least one
    pads, pad_text = _padding(rng, [min((kernel[i] - 1) * dilation[i], (stride[i] * (size[i] - 1)
                                        + (kernel[i] - 1) * dilation[i]) // 2) for i in range(3)])
    attrs = [f"strides={stride}", pad_text, f"output_padding={opad}", f"dilation={dilation}", f"groups={groups}"]
    return (f"conv3d_transpose-random{k}",
            f"x:{_dims([1, cin, *size])}:float32 w:{_dims([cin, cout, *kernel])}:float32",
            f"R.nn.conv3d_transpose(x, w, {', '.join(attrs)})")


def random_pool3d(rng: random.Random, k: int, op: str) -> tuple[str, str, str]:
    kernel, stride, dilation = ([rng.randint(lo, hi) for _ in range(3)] for lo, hi in ((1, 3), (1, 3), (1, 2)))
    pads, pad_text = _padding(rng, [kk - 1 for kk in kernel])
    ceil_mode = rng.random() < 0.4
    d, h, w = _window_sizes(rng, kernel, stride, dilation, pads, ceil_mode)
    layout = rng.choice(["NCDHW", "NDHWC"])
    x = _in_layout({"N": 1, "C": rng.randint(1, 2), "D": d, "H": h, "W": w}, layout)
    attrs = [f"pool_size={kernel}", f"strides={stride}", f"dilation={dilation}", pad_text,
             f"ceil_mode={ceil_mode}", f"count_include_pad={rng.random() < 0.5}", f'layout="{layout}"']
    return f"{op}-random{k}", f"x:{_dims(x)}:float32", f"R.nn.{op}(x, {', '.join(attrs)})"


def random_symbolic_pool3d(rng: random.Random, k: int) -> tuple[str, str, str]:
    """A random 3-D pool (as random_pool3d) whose depth, height or width is a size variable n."""
    op = rng.choice(["max_pool3d", "avg_pool3d"])
    name, params, call = random_pool3d(rng, k, op)
    dims = params.split(":")[1].split("x")
    layout = call.split('layout="')[1][:5]
    dims[layout.index(rng.choice("DHW"))] = "n"
    return f"{op}-sym-random{k}", f"x:{'x'.join(dims)}:float32", call


def random_symbolic_conv3d(rng: random.Random, k: int) -> tuple[str, str, str]:
    """A random conv3d (as random_conv3d) whose batch, depth, height or width is a size variable n."""
    _, params, call = random_conv3d(rng, k)
    x, w = params.split()
    dims = x.split(":")[1].split("x")
    layout = call.split('data_layout="')[1][:5]
    dims[layout.index(rng.choice("NDHW"))] = "n"
    return f"conv3d-sym-random{k}", f"x:{'x'.join(dims)}:float32 {w}", call


def random_adaptive_pool3d(rng: random.Random, k: int) -> tuple[str, str, str]:
    sizes = [rng.randint(1, 8) for _ in range(3)]
    layout = rng.choice(["NCDHW", "NDHWC"])
    x = _in_layout({"N": 1, "C": rng.randint(1, 2), "D": sizes[0], "H": sizes[1], "W": sizes[2]}, layout)
    if rng.random() < 0.2:  # a size variable along one axis
        x[layout.index(rng.choice("DHW"))] = "n"
    size = "" if rng.random() < 0.1 else f"output_size={[rng.randint(1, 8) for _ in range(3)]}, "
    return f"adaptive_avg_pool3d-random{k}", f"x:{_dims(x)}:float32", \
        f'R.nn.adaptive_avg_pool3d(x, {size}layout="{layout}")'


def _random_cases() -> list[tuple[str, str, str]]:
    rng = random.Random(20261129)
    return ([random_conv3d(rng, k) for k in range(30)] + [random_conv3d_transpose(rng, k) for k in range(20)]
            + [random_pool3d(rng, k, "max_pool3d") for k in range(30)]
            + [random_pool3d(rng, k, "avg_pool3d") for k in range(50)]
            + [random_adaptive_pool3d(rng, k) for k in range(40)]
            + [random_symbolic_pool3d(rng, k) for k in range(40)]
            + [random_symbolic_conv3d(rng, k) for k in range(20)])


CASES += _random_cases()


def _inputs(mod, rng) -> list:
    return [random_input(p.struct_info, rng) for p in mod.functions["main"].params]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legalized_matches_reference(case):
    """One R.call_tir, whose PrimFunc, run by the TIR interpreter, equals the op's reference."""
    name, params, call = case
    mod, out = legalized_to_one_call(params, call)
    if "sym" in name:  # the interpreter needs concrete inputs: the symbolic cases are printed only
        assert structural_equal(printed_domains(parse(to_text(out))), out)  # nested domains as printed
        return
    inputs = _inputs(mod, np.random.default_rng(0))
    expected, got = np.asarray(run_relax(mod, inputs)), np.asarray(run_relax(out, inputs))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 2e-3 if "16" in params else 1e-5
    np.testing.assert_allclose(got.astype("float64"), expected.astype("float64"), rtol=tol, atol=tol)
    assert structural_equal(printed_domains(parse(to_text(out))), out)


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    """TVM 0.27's LegalizeOps on every case module prints exactly what ours prints."""
    assert_legalized_like_tvm(tvm_python, tmp_path, [(name, case_text(params, call)) for name, params, call in CASES])
