"""nn.conv3d, nn.conv3d_transpose, nn.max_pool3d, nn.avg_pool3d: attributes, type relations as TVM v0.19 has them
(Conv3DRel in src/relay/op/nn/convolution.cc, Pool3DRel in pooling.cc), references against naive
loops and onnxruntime, and the Relay text round trip."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_ops_nn import T, close, infer, lookup, make_attrs, ort_run, rand, reject, run, shape_of

import irtool
from irtool.ops import OpPattern

# ------------------------------------------------------------------ registry facts


@pytest.mark.parametrize("name", ["nn.conv3d", "nn.conv3d_transpose", "nn.max_pool3d", "nn.avg_pool3d"])
def test_pattern(name):
    assert OpPattern.NAMES[lookup(name).pattern] == "kOutEWiseFusable"


def test_attributes_in_tvms_field_order():
    # Conv3DAttrs / MaxPool3DAttrs / AvgPool3DAttrs (include/tvm/relay/attrs/nn.h), without the
    # auto-scheduler and meta-schedule fields, which the text format never shows
    assert [a.name for a in lookup("nn.conv3d").attrs] == [
        "strides", "padding", "dilation", "groups", "channels", "kernel_size", "data_layout", "kernel_layout",
        "out_layout", "out_dtype"]
    # Conv3DTransposeAttrs
    assert [a.name for a in lookup("nn.conv3d_transpose").attrs] == [
        "channels", "kernel_size", "strides", "output_padding", "padding", "dilation", "groups", "data_layout",
        "kernel_layout", "out_layout", "out_dtype"]
    assert make_attrs("nn.conv3d_transpose")["kernel_layout"] == "IODHW"
    pool = ["pool_size", "strides", "dilation", "padding", "layout", "out_layout", "ceil_mode"]
    assert [a.name for a in lookup("nn.max_pool3d").attrs] == pool
    assert [a.name for a in lookup("nn.avg_pool3d").attrs] == pool + ["count_include_pad"]
    attrs = make_attrs("nn.conv3d")
    assert (attrs["strides"], attrs["padding"], attrs["data_layout"], attrs["kernel_layout"]) == (
        (1, 1, 1), (0, 0, 0), "NCDHW", "OIDHW")
    assert make_attrs("nn.avg_pool3d", pool_size=2)["layout"] == "NCDHW"


def test_single_values_and_padding_normalised():
    # TVM's Python API: one value means every axis; get_pad_tuple3d makes padding 6 values
    assert make_attrs("nn.conv3d", padding=1)["padding"] == (1,) * 6
    assert make_attrs("nn.conv3d", padding=(1, 2, 3))["padding"] == (1, 2, 3, 1, 2, 3)
    assert make_attrs("nn.conv3d", strides=2, dilation=3, kernel_size=3)["strides"] == (2, 2, 2)
    assert make_attrs("nn.conv3d", kernel_size=3)["kernel_size"] == (3, 3, 3)
    attrs = make_attrs("nn.max_pool3d", pool_size=2, strides=2, padding=(0, 1, 2, 3, 4, 5))
    assert (attrs["pool_size"], attrs["strides"], attrs["padding"]) == ((2, 2, 2), (2, 2, 2), (0, 1, 2, 3, 4, 5))
    # TVM prints the normalised padding=[0, 0, 0, 0, 0, 0] its Python API always passes
    assert lookup("nn.conv3d").non_default_attrs(make_attrs("nn.conv3d", padding=0)) == [("padding", (0,) * 6)]


def test_relay_text_round_trip():
    text = (
        '#[version = "0.0.5"]\n'
        'def @main(%x: Tensor[(1, 2, 5, 6, 7), float32], %w: Tensor[(4, 1, 3, 2, 3), float32]) {\n'
        '  %0 = nn.conv3d(%x, %w, strides=[1, 2, 1], padding=[1, 0, 1, 0, 1, 1], groups=2, channels=4, '
        'kernel_size=[3, 2, 3]);\n'
        '  %1 = nn.max_pool3d(%0, pool_size=[2, 2, 2], padding=[1, 1, 1, 1, 1, 1], layout="NCDHW", ceil_mode=True);\n'
        '  nn.avg_pool3d(%1, pool_size=[2, 1, 2], strides=[2, 2, 2], dilation=[1, 1, 2], count_include_pad=True)\n'
        '}\n')
    mod = irtool.parse(text, "conv3d.ir")
    printed = irtool.to_text(mod)
    # the default layout is not printed, everything else is, in TVM's order
    assert printed == text.replace(', layout="NCDHW"', "")
    assert irtool.structural_equal(irtool.parse(printed, "again.ir"), mod)
    typed = irtool.infer_types(mod)
    assert shape_of(typed["main"].body.checked_type) == (1, 4, 2, 2, 3)


# ------------------------------------------------------------------ nn.conv3d


def naive_conv3d(x, w, strides, pad, dilation, groups):
    """NCDHW / OIDHW, one output cell at a time; pad is (front, top, left, back, bottom, right)."""
    n, c, *size = x.shape
    o, i, *ks = w.shape
    outs = [(size[a] + pad[a] + pad[a + 3] - dilation[a] * (ks[a] - 1) - 1) // strides[a] + 1 for a in range(3)]
    out = np.zeros((n, o, *outs))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for cell in itertools.product(*map(range, outs)):
            for tap in itertools.product(*map(range, ks)):
                at = [cell[a] * strides[a] - pad[a] + tap[a] * dilation[a] for a in range(3)]
                if all(0 <= at[a] < size[a] for a in range(3)):
                    out[(slice(None), oc, *cell)] += x[(slice(None), slice(g * i, (g + 1) * i), *at)].astype(
                        float) @ w[(oc, slice(None), *tap)]
    return out


CONV_CASES = [
    # data shape, weight OIDHW, strides, padding (6), dilation, groups
    ((2, 3, 4, 5, 6), (4, 3, 3, 3, 3), (1, 1, 1), (0,) * 6, (1, 1, 1), 1),
    ((1, 4, 6, 5, 7), (6, 2, 3, 2, 3), (2, 1, 2), (1, 0, 2, 0, 1, 1), (1, 1, 1), 2),
    ((1, 2, 7, 7, 6), (3, 2, 2, 3, 2), (1, 2, 1), (1, 1, 1, 1, 1, 1), (2, 1, 3), 1),
    ((1, 3, 4, 4, 4), (3, 1, 3, 3, 3), (1, 1, 1), (1,) * 6, (1, 1, 1), 3),  # depthwise
]


@pytest.mark.parametrize("dshape, wshape, strides, padding, dilation, groups", CONV_CASES)
def test_conv3d_reference(dshape, wshape, strides, padding, dilation, groups):
    x, w = rand(*dshape), rand(*wshape)
    kw = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    out = run("nn.conv3d", x, w, **kw)
    close(out, naive_conv3d(x, w, strides, padding, dilation, groups))
    (expected,) = ort_run("Conv", [x, w], strides=list(strides), pads=list(padding), dilations=list(dilation),
                          group=groups)
    close(out, expected)
    # NDHWC / DHWIO, and with the output back in NCDHW
    xt, wt = x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0)
    ndhwc = run("nn.conv3d", xt, wt, data_layout="NDHWC", kernel_layout="DHWIO", **kw)
    close(ndhwc.transpose(0, 4, 1, 2, 3), out)
    close(run("nn.conv3d", xt, wt, data_layout="NDHWC", kernel_layout="DHWIO", out_layout="NCDHW", **kw), out)


def test_conv3d_int8_accumulates_in_out_dtype():
    x = np.random.default_rng(1).integers(-128, 128, (1, 6, 3, 4, 4)).astype("int8")
    w = np.random.default_rng(2).integers(-128, 128, (2, 6, 2, 3, 3)).astype("int8")
    out = run("nn.conv3d", x, w, out_dtype="int32")
    assert np.array_equal(out, naive_conv3d(x, w, (1, 1, 1), (0,) * 6, (1, 1, 1), 1).astype("int32"))


def test_conv3d_types():
    assert shape_of(infer("nn.conv3d", T(1, 3, 8, 16, 16), T(8, 3, 3, 3, 3))) == (1, 8, 6, 14, 14)
    assert shape_of(infer("nn.conv3d", T(1, 3, 8, 16, 16), T(8, 3, 3, 3, 3), padding=1)) == (1, 8, 8, 16, 16)
    assert shape_of(infer("nn.conv3d", T(1, 3, 8, 16, 16), T(8, 3, 3, 3, 3), padding=(1, 0, 2))) == (1, 8, 8, 14, 18)
    assert shape_of(infer("nn.conv3d", T(1, 3, 8, 16, 16), T(8, 3, 3, 3, 3),
                          padding=(1, 0, 0, 0, 2, 1))) == (1, 8, 7, 16, 15)
    assert shape_of(infer("nn.conv3d", T(1, 3, 9, 16, 16), T(8, 3, 3, 3, 3), strides=(1, 2, 2),
                          dilation=(2, 1, 1))) == (1, 8, 5, 7, 7)
    assert shape_of(infer("nn.conv3d", T(1, 8, 16, 16, 3), T(3, 3, 3, 3, 8), data_layout="NDHWC",
                          kernel_layout="DHWIO")) == (1, 6, 14, 14, 8)
    assert shape_of(infer("nn.conv3d", T(1, 8, 5, 5, 5), T(8, 4, 3, 3, 3), groups=2)) == (1, 8, 3, 3, 3)
    assert shape_of(infer("nn.conv3d", T(1, 3, 5, 5, 5), T(4, 3, "?", 3, 3), channels=4,
                          kernel_size=3)) == (1, 4, 3, 3, 3)
    # depthwise with channels + kernel_size: the weight is [C, multiplier, kd, kh, kw]
    assert shape_of(infer("nn.conv3d", T(1, 4, 5, 5, 5), T(4, 2, 3, 3, 3), groups=4, channels=8,
                          kernel_size=3)) == (1, 8, 3, 3, 3)
    assert shape_of(infer("nn.conv3d", T("?", 3, "?", 8, 8), T(4, 3, 3, 3, 3))) == ("?", 4, "?", 6, 6)
    assert infer("nn.conv3d", T(1, 3, 4, 4, 4, dtype="int8"), T(4, 3, 3, 3, 3, dtype="int8"),
                 out_dtype="int32").dtype == "int32"


@pytest.mark.parametrize("data, weight, kw, match", [
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(kernel_size=(5, 5, 5)), r"kernel_size \[5, 5, 5\] does not match"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(channels=8), r"channels=8 does not match .* \(4\)"),
    (T(1, 8, 8, 8, 8), T(8, 8, 3, 3, 3), dict(groups=2), r"input channels \(8\) divided by groups \(2\) .* \(8\)"),
    (T(1, 3, 8, 8, 8), T(4, 3, 5, 5, 5), dict(channels=4, kernel_size=3),
     r"`weight` must have type .*\(4, 3, 3, 3, 3\)"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3, 3), {}, r"`data` must be a 5-D tensor in layout NCDHW, got .*\(1, 3, 8, 8\)"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3), {}, r"`weight` must be a 5-D tensor in layout OIDHW"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(data_layout="NCHW"), r"`data_layout` must be an ordering of NCDHW"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(kernel_layout="OIHWD16o"), r"`kernel_layout` must be an ordering"),
    (T(1, 3, 2, 8, 8), T(4, 3, 3, 3, 3), {}, r"depth window \(3, dilated\) is larger than the padded depth \(2\)"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(padding=(1, 1)), r"`padding` must have 1, 3 or 6 values, got 2"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(strides=(1, 1)),
     r"`strides` must have 3 values \(depth, height, width\)"),
    (T(1, 3, 8, 8, 8), T(4, 3, 3, 3, 3), dict(dilation=0), r"`dilation` must be positive"),
])
def test_conv3d_errors(data, weight, kw, match):
    reject("nn.conv3d", data, weight, match=match, **kw)


# ------------------------------------------------------------------ nn.conv3d_transpose


def naive_conv3d_transpose(x, w, strides, pad, out_pad, dilation, groups):
    """NCDHW / IODHW, scattering each input cell into the (cropped) output."""
    n, c, *size = x.shape
    _, og, *ks = w.shape
    outs = [strides[a] * (size[a] - 1) + dilation[a] * (ks[a] - 1) + 1 - pad[a] - pad[a + 3] + out_pad[a]
            for a in range(3)]
    out = np.zeros((n, og * groups, *outs))
    ig = c // groups
    for ic in range(c):
        g = ic // ig
        for cell in itertools.product(*map(range, size)):
            for tap in itertools.product(*map(range, ks)):
                at = [cell[a] * strides[a] + tap[a] * dilation[a] - pad[a] for a in range(3)]
                if all(0 <= at[a] < outs[a] for a in range(3)):
                    out[(slice(None), slice(g * og, (g + 1) * og), *at)] += np.outer(
                        x[(slice(None), ic, *cell)], w[(ic, slice(None), *tap)])
    return out


TRANSPOSE_CASES = [
    # data, weight IODHW, strides, padding (6), output_padding, dilation, groups
    ((1, 3, 3, 4, 3), (3, 2, 3, 3, 2), (1, 1, 1), (0,) * 6, (0, 0, 0), (1, 1, 1), 1),
    ((2, 4, 3, 2, 3), (4, 3, 3, 2, 2), (2, 2, 1), (1, 0, 1, 1, 1, 0), (1, 1, 0), (1, 1, 1), 1),
    ((1, 4, 3, 3, 3), (4, 1, 2, 3, 3), (2, 1, 2), (1, 1, 1, 0, 1, 1), (1, 0, 1), (1, 1, 1), 2),
    ((1, 2, 2, 3, 3), (2, 2, 2, 2, 3), (3, 2, 1), (0,) * 6, (2, 1, 0), (2, 1, 2), 1),
]


@pytest.mark.parametrize("dshape, wshape, strides, padding, out_pad, dilation, groups", TRANSPOSE_CASES)
def test_conv3d_transpose_reference(dshape, wshape, strides, padding, out_pad, dilation, groups):
    x, w = rand(*dshape), rand(*wshape)
    kw = dict(strides=strides, padding=padding, output_padding=out_pad, dilation=dilation, groups=groups)
    out = run("nn.conv3d_transpose", x, w, **kw)
    close(out, naive_conv3d_transpose(x, w, strides, padding, out_pad, dilation, groups))
    (expected,) = ort_run("ConvTranspose", [x, w], strides=list(strides), pads=list(padding),
                          output_padding=list(out_pad), dilations=list(dilation), group=groups)
    close(out, expected)
    ndhwc = run("nn.conv3d_transpose", x.transpose(0, 2, 3, 4, 1), w, data_layout="NDHWC", **kw)
    close(ndhwc.transpose(0, 4, 1, 2, 3), out)


def test_conv3d_transpose_types():
    assert shape_of(infer("nn.conv3d_transpose", T(1, 3, 4, 8, 8), T(3, 5, 3, 3, 3))) == (1, 5, 6, 10, 10)
    assert shape_of(infer("nn.conv3d_transpose", T(1, 3, 4, 8, 8), T(3, 5, 3, 3, 3), strides=2, padding=1,
                          output_padding=1)) == (1, 5, 8, 16, 16)
    # each axis takes its own kernel extent and dilation (TVM v0.19's relation swaps H's and W's
    # when it reads them from the weight; its compute does not)
    assert shape_of(infer("nn.conv3d_transpose", T(1, 3, 4, 8, 8), T(3, 5, 2, 3, 5),
                          dilation=(1, 1, 2))) == (1, 5, 5, 10, 16)
    assert shape_of(infer("nn.conv3d_transpose", T(1, 4, 4, 4, 4), T(4, 3, 3, 3, 3), groups=2, channels=6,
                          kernel_size=3)) == (1, 6, 6, 6, 6)
    assert shape_of(infer("nn.conv3d_transpose", T(1, 4, 4, 4, 4), T(4, 3, 3, 3, 3), groups=2)) == (1, 6, 6, 6, 6)
    assert shape_of(infer("nn.conv3d_transpose", T("?", 3, 4, "?", 8), T(3, 5, 3, 3, 3))) == ("?", 5, 6, "?", 10)


@pytest.mark.parametrize("data, weight, kw, match", [
    (T(1, 3, 4, 4, 4), T(4, 5, 3, 3, 3), {}, r"input channels \(3\) must equal the weight's input channels \(4\)"),
    (T(1, 3, 4, 4, 4), T(3, 5, 3, 3, 3), dict(kernel_size=2), r"kernel_size \[2, 2, 2\] does not match"),
    (T(1, 3, 4, 4, 4), T(3, 5, 3, 3, 3), dict(channels=5, kernel_size=2),
     r"`weight` must have type .*\(3, 5, 2, 2, 2\)"),
    (T(1, 3, 1, 1, 1), T(3, 5, 1, 1, 1), dict(padding=1), r"output depth would be -1"),
    (T(1, 3, 4, 4, 4), T(3, 5, 3, 3, 3), dict(kernel_layout="IOHW"), r"`kernel_layout` must be an ordering of IODHW"),
    (T(1, 3, 4, 4, 4), T(3, 5, 3, 3, 3), dict(output_padding=(1, 1)), r"`output_padding` must have 3 values"),
])
def test_conv3d_transpose_errors(data, weight, kw, match):
    reject("nn.conv3d_transpose", data, weight, match=match, **kw)


# ------------------------------------------------------------------ nn.max_pool3d, nn.avg_pool3d


def naive_pool3d(x, kind, pool, strides, dilation, pad, ceil_mode, count_include_pad=False):
    """NCDHW, one output cell at a time, with TOPI's divisor arithmetic (pool_impl_nd) written out."""
    n, c, *size = x.shape
    geometry = [(size[a], pool[a], strides[a], dilation[a], pad[a], pad[a + 3]) for a in range(3)]

    def extent(m, k, s, d, head, tail):
        return (m + head + tail - (k - 1) * d - 1 + (s - 1 if ceil_mode else 0)) // s + 1

    def taps(o, m, k, s, d, head, tail):
        """The window's input indices along one axis, and how many of them the average counts."""
        start = o * s - head
        end = start + (k - 1) * d
        if count_include_pad:
            count = (min(end, m + tail - 1) - start) // d + 1
        else:
            first = start + d * max(math.ceil(-start / d), 0)
            count = max((min(end, m - 1) - first) // d + 1, 0)
        return [start + i * d for i in range(k)], count

    out = np.zeros((n, c, *(extent(*g) for g in geometry)))
    for cell in np.ndindex(out.shape[2:]):
        axes = [taps(o, *g) for o, g in zip(cell, geometry)]
        cells = [x[(slice(None), slice(None), *at)] for at in itertools.product(*(t for t, _ in axes))
                 if all(0 <= i < m for i, m in zip(at, size))]
        if kind == "max":
            if len(cells) < math.prod(pool):  # padding reads as the dtype's lowest value
                cells.append(np.full((n, c), np.finfo(x.dtype).min))
            out[(slice(None), slice(None), *cell)] = np.max(cells, axis=0)
        else:
            total = np.sum(np.asarray(cells, float), axis=0) if cells else 0.0
            out[(slice(None), slice(None), *cell)] = total / max(math.prod(k for _, k in axes), 1)
    return out


POOL_CASES = [
    # shape, pool, strides, dilation, padding (6), ceil_mode
    ((1, 2, 5, 6, 7), (2, 2, 2), (1, 1, 1), (1, 1, 1), (0,) * 6, False),
    ((2, 1, 6, 7, 5), (3, 2, 2), (2, 2, 1), (1, 1, 1), (1, 1, 0, 1, 0, 1), False),
    ((1, 2, 7, 6, 8), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 0, 1, 1, 0), True),
    ((1, 1, 8, 7, 9), (2, 2, 3), (3, 1, 2), (2, 3, 1), (1, 0, 1, 1, 1, 1), False),
    ((1, 1, 9, 8, 8), (2, 3, 2), (2, 2, 2), (2, 1, 2), (0, 1, 0, 0, 1, 0), True),
]


@pytest.mark.parametrize("shape, pool, strides, dilation, padding, ceil_mode", POOL_CASES)
def test_max_pool3d_reference(shape, pool, strides, dilation, padding, ceil_mode):
    x = rand(*shape)
    kw = dict(pool_size=pool, strides=strides, dilation=dilation, padding=padding, ceil_mode=ceil_mode)
    out = run("nn.max_pool3d", x, **kw)
    close(out, naive_pool3d(x, "max", pool, strides, dilation, padding, ceil_mode))
    (expected,) = ort_run("MaxPool", [x], kernel_shape=list(pool), strides=list(strides), dilations=list(dilation),
                          pads=list(padding), ceil_mode=int(ceil_mode))
    close(out, expected)
    ndhwc = run("nn.max_pool3d", x.transpose(0, 2, 3, 4, 1), layout="NDHWC", **kw)
    close(ndhwc.transpose(0, 4, 1, 2, 3), out)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("shape, pool, strides, dilation, padding, ceil_mode", POOL_CASES)
def test_avg_pool3d_reference(shape, pool, strides, dilation, padding, ceil_mode, count_include_pad):
    x = rand(*shape)
    kw = dict(pool_size=pool, strides=strides, dilation=dilation, padding=padding, ceil_mode=ceil_mode,
              count_include_pad=count_include_pad)
    out = run("nn.avg_pool3d", x, **kw)
    close(out, naive_pool3d(x, "avg", pool, strides, dilation, padding, ceil_mode, count_include_pad))
    if dilation == (1, 1, 1):
        (expected,) = ort_run("AveragePool", [x], kernel_shape=list(pool), strides=list(strides),
                              pads=list(padding), ceil_mode=int(ceil_mode),
                              count_include_pad=int(count_include_pad))
        close(out, expected)
    ndhwc = run("nn.avg_pool3d", x.transpose(0, 2, 3, 4, 1), layout="NDHWC", **kw)
    close(ndhwc.transpose(0, 4, 1, 2, 3), out)


def test_avg_pool3d_integer_truncates():
    x = np.array([1, 2, 2, -8, 0, 0, 0, 0], "int32").reshape(1, 1, 2, 2, 2)
    assert run("nn.avg_pool3d", x, pool_size=2)[0, 0, 0, 0, 0] == 0  # -3 / 8 truncates to 0
    assert run("nn.avg_pool3d", x + 10, pool_size=2)[0, 0, 0, 0, 0] == 9  # 77 / 8


def test_pool3d_types():
    assert shape_of(infer("nn.max_pool3d", T(1, 3, 8, 16, 16), pool_size=2, strides=2)) == (1, 3, 4, 8, 8)
    assert shape_of(infer("nn.max_pool3d", T(1, 3, 8, 16, 16), pool_size=3, strides=2,
                          padding=(1, 0, 1))) == (1, 3, 4, 7, 8)
    assert shape_of(infer("nn.max_pool3d", T(1, 3, 7, 7, 7), pool_size=2, strides=2, ceil_mode=True)) == (
        1, 3, 4, 4, 4)
    assert shape_of(infer("nn.avg_pool3d", T(1, 9, 9, 9, 3), pool_size=2, dilation=(3, 1, 2),
                          layout="NDHWC")) == (1, 6, 8, 7, 3)
    assert shape_of(infer("nn.avg_pool3d", T(1, 2, 8, 8, 8, 4), pool_size=2, strides=2,
                          layout="NCDHW4c")) == (1, 2, 4, 4, 4, 4)
    assert shape_of(infer("nn.avg_pool3d", T("?", 3, 4, "?", 8), pool_size=2, strides=2)) == ("?", 3, 2, "?", 4)
    reject("nn.max_pool3d", T(1, 3, 4, 4, 4), pool_size=2, layout="NCHW",
           match=r"invalid pooling layout \"NCHW\": it must have D, H and W, which cannot be split")
    reject("nn.max_pool3d", T(1, 3, 4, 4, 4, 2), pool_size=2, layout="NCDHW2d", match=r"invalid pooling layout")
    reject("nn.max_pool3d", T(4, 4, 4), pool_size=2,
           match=r"`data` of rank 3 has no D, H and W axes in layout NCDHW")
    reject("nn.max_pool3d", T(1, 3, 4, 4, 4), pool_size=(2, 2), match=r"`pool_size` must have 3 values")
    reject("nn.avg_pool3d", T(1, 3, 4, 4, 4), pool_size=2, padding=(1, 1, 1, 1),
           match=r"`padding` must have 1, 3 or 6 values, got 4")
    reject("nn.avg_pool3d", T(1, 3, 4, 4, 4), pool_size=(2, 2, 5),
           match=r"width window \(5, dilated\) is larger than the padded width \(4\)")
