"""The nn operator family: type relations as TVM v0.19 has them (src/relay/op/nn/*.cc), references
checked against naive loops and, where ONNX has the same operator, against onnxruntime."""

from __future__ import annotations

import math

import numpy as np
import pytest

from irtool.ir.expr import Attrs
from irtool.ir.types import ANY, TensorType, TupleType
from irtool.ops import AttrError, OpPattern, TypeRelError, lookup

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(0)
RTOL, ATOL = 1e-4, 1e-5


# ------------------------------------------------------------------ helpers


def T(*shape, dtype="float32"):
    return TensorType(tuple(ANY if d == "?" else d for d in shape), dtype)


def shape_of(t):
    return tuple("?" if d is ANY else d for d in t.shape)


def make_attrs(name, **kw):
    return lookup(name).make_attrs(Attrs(kw) if kw else None)


def infer(name, *types, **kw):
    return lookup(name).type_rel(list(types), make_attrs(name, **kw))


def reject(name, *types, match, **kw):
    with pytest.raises(TypeRelError, match=match):
        infer(name, *types, **kw)


def run(name, *arrays, **kw):
    """The reference's result, after checking it has exactly the type the relation gives."""
    op = lookup(name)
    attrs = make_attrs(name, **kw)
    ty = op.type_rel([TensorType(a.shape, str(a.dtype)) for a in arrays], attrs)
    out = op.ref(*arrays, **dict(attrs.items())) if attrs else op.ref(*arrays)
    for t, o in zip(ty.fields, out) if isinstance(ty, TupleType) else [(ty, out)]:
        assert o.shape == t.shape and str(o.dtype) == t.dtype, (o.shape, o.dtype, t)
    return out


def rand(*shape, dtype="float32"):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-100, 100, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


_ONNX_DTYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64}


def ort_run(op_type, inputs, n_out=1, **attrs):
    """Run one ONNX node (opset 18) on `inputs` with onnxruntime; returns its outputs."""
    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(n_out)]
    graph = helper.make_graph(
        [helper.make_node(op_type, names, outs, **attrs)], "g",
        [helper.make_tensor_value_info(n, _ONNX_DTYPES[str(a.dtype)], a.shape) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(n, _ONNX_DTYPES[str(inputs[0].dtype)], None) for n in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs)))


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ registry facts


PATTERNS = {
    # op                     TVM v0.19 TOpPattern (C++ set_attr, src/relay/op/nn/)
    "nn.conv2d": "kOutEWiseFusable", "nn.conv2d_transpose": "kOutEWiseFusable",
    "nn.dense": "kOutEWiseFusable", "nn.matmul": "kOutEWiseFusable", "nn.batch_matmul": "kOutEWiseFusable",
    "nn.bias_add": "kBroadcast", "nn.prelu": "kBroadcast",
    "nn.max_pool2d": "kOutEWiseFusable", "nn.avg_pool2d": "kOutEWiseFusable",
    "nn.global_avg_pool2d": "kOutEWiseFusable", "nn.global_max_pool2d": "kOutEWiseFusable",
    "nn.adaptive_avg_pool2d": "kOutEWiseFusable", "nn.batch_norm": "kOutEWiseFusable",
    "nn.layer_norm": "kOpaque",  # none registered: FuseOps's default
    "nn.softmax": "kOutEWiseFusable", "nn.log_softmax": "kOutEWiseFusable", "nn.dropout": "kOpaque",
    "nn.pad": "kInjective", "nn.batch_flatten": "kInjective", "nn.lrn": "kOpaque",
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern(name):
    assert OpPattern.NAMES[lookup(name).pattern] == PATTERNS[name]


def test_argument_names():
    assert lookup("nn.conv2d").args == ("data", "weight")
    assert lookup("nn.matmul").args == ("tensor_a", "tensor_b")
    assert lookup("nn.batch_matmul").args == ("tensor_a", "tensor_b")
    assert lookup("nn.pad").args == ("data", "pad_val")
    assert lookup("nn.batch_norm").args == ("data", "gamma", "beta", "moving_mean", "moving_var")


def test_padding_normalised_to_four_values():
    assert make_attrs("nn.conv2d", padding=1)["padding"] == (1, 1, 1, 1)
    assert make_attrs("nn.conv2d", padding=(1, 2))["padding"] == (1, 2, 1, 2)
    assert make_attrs("nn.max_pool2d", pool_size=2, padding=(0, 1, 2, 3))["padding"] == (0, 1, 2, 3)
    assert make_attrs("nn.conv2d_transpose", padding=(2, 1))["padding"] == (2, 1, 2, 1)
    # a single stride / window value means both axes, as TVM's Python API makes it
    assert make_attrs("nn.max_pool2d", pool_size=3, strides=2)["pool_size"] == (3, 3)
    assert make_attrs("nn.max_pool2d", pool_size=3, strides=2)["strides"] == (2, 2)


def test_defaults_are_tvms_so_the_printer_omits_them():
    conv = lookup("nn.conv2d")
    assert conv.non_default_attrs(make_attrs("nn.conv2d")) == []
    # TVM's Python API always normalises padding to 4 values, so TVM prints padding=[0, 0, 0, 0]
    assert conv.non_default_attrs(make_attrs("nn.conv2d", padding=0)) == [("padding", (0, 0, 0, 0))]
    assert conv.non_default_attrs(make_attrs("nn.conv2d", out_dtype="int32")) == [("out_dtype", "int32")]
    # attributes without a default (units, pool_size, pad_width) are always printed, units=None too
    assert lookup("nn.dense").non_default_attrs(make_attrs("nn.dense", units=None)) == [("units", None)]
    bmm = lookup("nn.batch_matmul")
    assert bmm.non_default_attrs(make_attrs("nn.batch_matmul", transpose_b=True)) == [("transpose_b", True)]
    assert make_attrs("nn.lrn")["bias"] == 2.0 and make_attrs("nn.batch_norm")["epsilon"] == 1e-5


@pytest.mark.parametrize("name, attr", [("nn.dense", "units"), ("nn.matmul", "units"),
                                        ("nn.max_pool2d", "pool_size"), ("nn.avg_pool2d", "pool_size"),
                                        ("nn.pad", "pad_width")])
def test_required_attributes(name, attr):
    with pytest.raises(AttrError, match=attr):
        make_attrs(name)


# ------------------------------------------------------------------ nn.conv2d


def naive_conv2d(x, w, strides, pad, dilation, groups):
    """NCHW / OIHW, one output pixel at a time."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    pt, pl, pb, pr = pad
    oh = (h + pt + pb - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pl + pr - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for y in range(oh):
            for z in range(ow):
                for ky in range(kh):
                    iy = y * strides[0] - pt + ky * dilation[0]
                    for kx in range(kw):
                        ix = z * strides[1] - pl + kx * dilation[1]
                        if 0 <= iy < h and 0 <= ix < wd:
                            out[:, oc, y, z] += x[:, g * i:(g + 1) * i, iy, ix].astype(float) @ w[oc, :, ky, kx]
    return out


CONV_CASES = [
    # data shape, weight OIHW, strides, padding (4), dilation, groups
    ((2, 3, 7, 8), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1), 2),
    ((1, 3, 10, 10), (2, 3, 3, 3), (2, 3), (1, 1, 1, 1), (2, 2), 1),
    ((2, 4, 6, 6), (4, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),  # depthwise
    ((1, 2, 5, 5), (3, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("dshape, wshape, strides, padding, dilation, groups", CONV_CASES)
def test_conv2d_reference(dshape, wshape, strides, padding, dilation, groups):
    x, w = rand(*dshape), rand(*wshape)
    kw = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    out = run("nn.conv2d", x, w, **kw)
    close(out, naive_conv2d(x, w, strides, padding, dilation, groups))
    (expected,) = ort_run("Conv", [x, w], strides=list(strides), pads=[padding[0], padding[1], padding[2],
                          padding[3]], dilations=list(dilation), group=groups)
    close(out, expected)
    # the same convolution in NHWC / HWIO, and with the output back in NCHW
    xt, wt = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
    nhwc = run("nn.conv2d", xt, wt, data_layout="NHWC", kernel_layout="HWIO", **kw)
    close(nhwc.transpose(0, 3, 1, 2), out)
    close(run("nn.conv2d", xt, wt, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW", **kw), out)


def test_conv2d_depthwise_multiplier():
    # TVM's depthwise weight in HWOI is [kh, kw, C, multiplier]; output channel c * m + j
    x, w = rand(1, 5, 5, 3), rand(3, 3, 3, 2)
    out = run("nn.conv2d", x, w, data_layout="NHWC", kernel_layout="HWOI", groups=3, channels=6,
              kernel_size=(3, 3), padding=1)
    as_oihw = w.transpose(2, 3, 0, 1).reshape(6, 1, 3, 3)
    close(out.transpose(0, 3, 1, 2), naive_conv2d(x.transpose(0, 3, 1, 2), as_oihw, (1, 1), (1,) * 4, (1, 1), 3))


def test_conv2d_int8_accumulates_in_out_dtype():
    x = RNG.integers(-128, 128, (1, 8, 4, 4)).astype("int8")
    w = RNG.integers(-128, 128, (2, 8, 3, 3)).astype("int8")
    out = run("nn.conv2d", x, w, out_dtype="int32")
    assert np.array_equal(out, naive_conv2d(x, w, (1, 1), (0,) * 4, (1, 1), 1).astype("int32"))
    # without out_dtype the int8 result wraps, as TVM's int8 arithmetic does
    assert run("nn.conv2d", x, w).dtype == np.int8


def test_conv2d_types():
    assert shape_of(infer("nn.conv2d", T(1, 3, 32, 32), T(16, 3, 3, 3))) == (1, 16, 30, 30)
    assert shape_of(infer("nn.conv2d", T(1, 3, 32, 32), T(16, 3, 3, 3), padding=1)) == (1, 16, 32, 32)
    assert shape_of(infer("nn.conv2d", T(1, 3, 32, 32), T(16, 3, 3, 3), padding=(1, 2))) == (1, 16, 32, 34)
    assert shape_of(infer("nn.conv2d", T(1, 3, 32, 32), T(16, 3, 3, 3), padding=(1, 0, 0, 2))) == (1, 16, 31, 32)
    assert shape_of(infer("nn.conv2d", T(1, 3, 32, 32), T(16, 3, 3, 3), strides=2, dilation=2)) == (1, 16, 14, 14)
    assert shape_of(infer("nn.conv2d", T(1, 32, 32, 3), T(3, 3, 3, 16), data_layout="NHWC",
                          kernel_layout="HWIO")) == (1, 30, 30, 16)
    assert shape_of(infer("nn.conv2d", T(1, 32, 32, 3), T(3, 3, 3, 16), data_layout="NHWC", kernel_layout="HWIO",
                          out_layout="NCHW")) == (1, 16, 30, 30)
    assert shape_of(infer("nn.conv2d", T(1, 8, 9, 9), T(8, 4, 3, 3), groups=2)) == (1, 8, 7, 7)
    assert shape_of(infer("nn.conv2d", T(1, 8, 9, 9), T(8, 1, 3, 3), groups=8)) == (1, 8, 7, 7)
    # channels + kernel_size: TVM infers the weight's type and checks the given one against it
    assert shape_of(infer("nn.conv2d", T(1, 3, 9, 9), T(4, 3, 3, 3), channels=4, kernel_size=3)) == (1, 4, 7, 7)
    assert shape_of(infer("nn.conv2d", T(1, 3, 9, 9), T(4, 3, "?", 3), channels=4, kernel_size=3)) == (1, 4, 7, 7)
    # ... a depthwise one (groups == C == weight's O) as [C, multiplier, kh, kw]
    assert shape_of(infer("nn.conv2d", T(1, 4, 8, 8), T(4, 2, 3, 3), groups=4, channels=8, kernel_size=3)) == (
        1, 8, 6, 6)
    reject("nn.conv2d", T(1, 4, 8, 8), T(4, 2, 3, 3), groups=4, match=r"divided by groups \(4\) must equal .* \(2\)")
    # `?` propagates where TVM lets it
    assert shape_of(infer("nn.conv2d", T("?", 3, "?", 32), T(16, 3, 3, 3))) == ("?", 16, "?", 30)
    assert shape_of(infer("nn.conv2d", T(1, "?", 32, 32), T(16, 3, 3, 3))) == (1, 16, 30, 30)
    assert shape_of(infer("nn.conv2d", T(1, 3, 8, 8), T(16, 3, "?", 3))) == (1, 16, "?", 6)
    t = infer("nn.conv2d", T(1, 3, 8, 8, dtype="int8"), T(4, 3, 3, 3, dtype="int8"), out_dtype="int32")
    assert t.dtype == "int32"
    # data and weight dtypes may differ (TVM does not unify them); the result takes the data's
    assert infer("nn.conv2d", T(1, 3, 8, 8, dtype="float16"), T(4, 3, 3, 3)).dtype == "float16"


@pytest.mark.parametrize("data, weight, kw, match", [
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(kernel_size=(5, 5)), r"kernel_size \[5, 5\] does not match the weight"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(channels=8), r"channels=8 does not match .* \(4\)"),
    (T(1, 3, 8, 8), T(4, 2, 3, 3), {}, r"input channels \(3\) divided by groups \(1\) .* \(2\)"),
    (T(1, 8, 8, 8), T(8, 8, 3, 3), dict(groups=2), r"input channels \(8\) divided by groups \(2\) .* \(8\)"),
    (T(1, 3, 8, 8), T(4, 3, 5, 5), dict(channels=4, kernel_size=3), r"`weight` must have type .*\(4, 3, 3, 3\)"),
    (T(1, 3, 8), T(4, 3, 3, 3), {}, r"`data` must be a 4-D tensor in layout NCHW, got .*\(1, 3, 8\)"),
    (T(1, 3, 8, 8), T(4, 3, 3), {}, r"`weight` must be a 4-D tensor in layout OIHW"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(data_layout="NCHW16c"), r"`data_layout` must be an ordering of NCHW"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(kernel_layout="OIHWX"), r"`kernel_layout` must be an ordering of OIHW"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(out_layout="NCH"), r"`out_layout` must be an ordering of NCHW"),
    (T(1, 3, 2, 8), T(4, 3, 3, 3), {}, r"height window \(3, dilated\) is larger than the padded height \(2\)"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(dilation=4), r"window \(9, dilated\) is larger"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(padding=(1, 1, 1)), r"`padding` must have 1, 2 or 4 values, got 3"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(strides=(1, 1, 1)), r"`strides` must have 2 values"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(strides=0), r"`strides` must be positive"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(kernel_size=(3, 3, 3)), r"`kernel_size` must have 2 values"),
    (T(1, 3, 8, 8), T(4, 3, 3, 3), dict(groups=0), r"`groups` must be positive"),
])
def test_conv2d_errors(data, weight, kw, match):
    reject("nn.conv2d", data, weight, match=match, **kw)


def test_conv2d_weight_must_be_a_tensor():
    reject("nn.conv2d", T(1, 3, 8, 8), TupleType([]), match="argument `weight` must be a tensor")


# ------------------------------------------------------------------ nn.conv2d_transpose


def naive_conv2d_transpose(x, w, strides, pad, out_pad, dilation, groups):
    """NCHW / IOHW, scattering each input pixel into the (cropped) output."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    pt, pl, pb, pr = pad
    oh = strides[0] * (h - 1) + dilation[0] * (kh - 1) + 1 - pt - pb + out_pad[0]
    ow = strides[1] * (wd - 1) + dilation[1] * (kw - 1) + 1 - pl - pr + out_pad[1]
    out = np.zeros((n, og * groups, oh, ow))
    ig = c // groups
    for ic in range(c):
        g = ic // ig
        for y in range(h):
            for z in range(wd):
                for ky in range(kh):
                    for kx in range(kw):
                        oy, oz = y * strides[0] + ky * dilation[0] - pt, z * strides[1] + kx * dilation[1] - pl
                        if 0 <= oy < oh and 0 <= oz < ow:
                            out[:, g * og:(g + 1) * og, oy, oz] += np.outer(x[:, ic, y, z], w[ic, :, ky, kx])
    return out


TRANSPOSE_CASES = [
    # data, weight IOHW, strides, padding, output_padding, dilation, groups
    ((1, 3, 4, 5), (3, 2, 3, 3), (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), 1),
    ((2, 4, 3, 3), (4, 3, 3, 2), (2, 2), (1, 0, 1, 1), (1, 1), (1, 1), 1),
    ((1, 4, 4, 4), (4, 1, 3, 3), (2, 1), (1, 1, 1, 1), (1, 0), (1, 1), 2),
    ((1, 2, 3, 4), (2, 2, 2, 2), (3, 2), (0, 0, 0, 0), (2, 1), (2, 1), 1),
]


@pytest.mark.parametrize("dshape, wshape, strides, padding, out_pad, dilation, groups", TRANSPOSE_CASES)
def test_conv2d_transpose_reference(dshape, wshape, strides, padding, out_pad, dilation, groups):
    x, w = rand(*dshape), rand(*wshape)
    out = run("nn.conv2d_transpose", x, w, strides=strides, padding=padding, output_padding=out_pad,
              dilation=dilation, groups=groups)
    close(out, naive_conv2d_transpose(x, w, strides, padding, out_pad, dilation, groups))
    (expected,) = ort_run("ConvTranspose", [x, w], strides=list(strides), pads=list(padding),
                          output_padding=list(out_pad), dilations=list(dilation), group=groups)
    close(out, expected)
    nhwc = run("nn.conv2d_transpose", x.transpose(0, 2, 3, 1), w, data_layout="NHWC", strides=strides,
               padding=padding, output_padding=out_pad, dilation=dilation, groups=groups)
    close(nhwc.transpose(0, 3, 1, 2), out)


def test_conv2d_transpose_types():
    assert shape_of(infer("nn.conv2d_transpose", T(1, 3, 8, 8), T(3, 5, 3, 3))) == (1, 5, 10, 10)
    assert shape_of(infer("nn.conv2d_transpose", T(1, 3, 8, 8), T(3, 5, 3, 3), strides=2, padding=1,
                          output_padding=1)) == (1, 5, 16, 16)
    assert shape_of(infer("nn.conv2d_transpose", T(1, 3, 8, 8), T(3, 5, 4, 4), strides=2, padding=(1, 0, 1, 0),
                          dilation=(1, 2))) == (1, 5, 16, 21)
    assert shape_of(infer("nn.conv2d_transpose", T(1, 8, 8, 3), T(3, 5, 3, 3), data_layout="NHWC")) == (1, 10, 10, 5)
    assert shape_of(infer("nn.conv2d_transpose", T(1, 4, 8, 8), T(4, 3, 3, 3), groups=2, channels=6,
                          kernel_size=3)) == (1, 6, 10, 10)
    # without channels the grouped output has weight.shape[1] * groups channels, as the compute makes
    assert shape_of(infer("nn.conv2d_transpose", T(1, 4, 8, 8), T(4, 3, 3, 3), groups=2)) == (1, 6, 10, 10)
    assert shape_of(infer("nn.conv2d_transpose", T("?", 3, "?", 8), T(3, 5, 3, 3))) == ("?", 5, "?", 10)
    assert infer("nn.conv2d_transpose", T(1, 3, 8, 8), T(3, 5, 3, 3), out_dtype="float16").dtype == "float16"


@pytest.mark.parametrize("data, weight, kw, match", [
    (T(1, 3, 8, 8), T(4, 5, 3, 3), {}, r"input channels \(3\) must equal the weight's input channels \(4\)"),
    (T(1, 3, 8, 8), T(3, 5, 3, 3), dict(channels=4), r"channels=4 divided by groups \(1\) does not match .* \(5\)"),
    (T(1, 3, 8, 8), T(3, 5, 3, 3), dict(kernel_size=2), r"kernel_size \[2, 2\] does not match"),
    (T(1, 3, 8, 8), T(3, 5, 3, 3), dict(channels=5, kernel_size=2), r"`weight` must have type .*\(3, 5, 2, 2\)"),
    (T(1, 3, 1, 1), T(3, 5, 1, 1), dict(padding=1), r"output height would be -1"),
    (T(1, 3, 8, 8), T(3, 5, 3, 3), dict(kernel_layout="OIHW16o"), r"`kernel_layout` must be an ordering of IOHW"),
    (T(1, 3, 8, 8), T(3, 5, 3, 3), dict(output_padding=(1, 1, 1)), r"`output_padding` must have 2 values"),
])
def test_conv2d_transpose_errors(data, weight, kw, match):
    reject("nn.conv2d_transpose", data, weight, match=match, **kw)


# ------------------------------------------------------------------ nn.dense, nn.matmul, nn.batch_matmul


def test_dense_types():
    assert shape_of(infer("nn.dense", T(4, 8), T(16, 8), units=None)) == (4, 16)
    assert shape_of(infer("nn.dense", T(2, 3, 8), T(16, 8), units=None)) == (2, 3, 16)
    assert shape_of(infer("nn.dense", T(4, 8), T(16, 8), units=16)) == (4, 16)
    assert shape_of(infer("nn.dense", T("?", 8), T(16, "?"), units=None)) == ("?", 16)
    assert shape_of(infer("nn.dense", T(4, "?"), T(16, 8), units=None)) == (4, 16)
    assert shape_of(infer("nn.dense", T(8), T(3, 8), units=None)) == (3,)
    assert infer("nn.dense", T(4, 8, dtype="int8"), T(16, 8, dtype="int8"), units=None,
                 out_dtype="int32").dtype == "int32"
    reject("nn.dense", T(4, 8), T(16, 9), units=None, match=r"reduction dimensions differ: 8 in data .* 9 in weight")
    reject("nn.dense", T(4, 8), T(2, 16, 8), units=None, match=r"`weight` must be a 2-D tensor, got .*\(2, 16, 8\)")
    reject("nn.dense", T(4, 8), T(10, 8), units=16, match=r"`weight` must have type .*\(16, 8\).*got .*\(10, 8\)")
    reject("nn.dense", T(dtype="float32"), T(10, 8), units=None, match=r"`data` must have rank >= 1")


def test_matmul_types():
    assert shape_of(infer("nn.matmul", T(4, 8), T(8, 16), units=None)) == (4, 16)
    assert shape_of(infer("nn.matmul", T(8, 4), T(8, 16), units=None, transpose_a=True)) == (4, 16)
    assert shape_of(infer("nn.matmul", T(8, 4), T(16, 8), units=None, transpose_a=True, transpose_b=True)) == (4, 16)
    assert shape_of(infer("nn.matmul", T(2, 4, 8), T(16, 8), units=None, transpose_b=True)) == (2, 4, 16)
    assert shape_of(infer("nn.matmul", T(4, 8), T(8, 16), units=16)) == (4, 16)
    reject("nn.matmul", T(4, 8), T(16, 8), units=None, match=r"reduction dimensions differ: 8 in tensor_a")
    reject("nn.matmul", T(4, 8), T(8, 10), units=16, match=r"`tensor_b` must have type .*\(8, 16\)")
    reject("nn.matmul", T(8), T(8, 10), units=None, transpose_a=True, match=r"`tensor_a` must have rank >= 2")


def test_dense_and_matmul_reference():
    x, w = rand(3, 5, 8), rand(6, 8)
    out = run("nn.dense", x, w, units=None)
    close(out, np.einsum("abk,nk->abn", x.astype(float), w))
    (gemm,) = ort_run("Gemm", [x[0], w], transB=1)
    close(out[0], gemm)
    for ta in (False, True):
        for tb in (False, True):
            a, b = rand(2, 7, 5) if ta else rand(2, 5, 7), rand(4, 7) if tb else rand(7, 4)
            out = run("nn.matmul", a, b, units=None, transpose_a=ta, transpose_b=tb)
            (expected,) = ort_run("MatMul", [np.ascontiguousarray(np.swapaxes(a, 1, 2) if ta else a),
                                             np.ascontiguousarray(b.T if tb else b)])
            close(out, expected)


def test_dense_integer_wraps_like_int32():
    x = np.full((1, 4), 2 ** 20, "int32")
    w = np.full((1, 4), 2 ** 11, "int32")
    assert run("nn.dense", x, w, units=None)[0, 0] == np.int32(0)  # 2**33 wraps to 0
    assert run("nn.dense", x, w, units=None, out_dtype="int64")[0, 0] == 2 ** 33


def test_batch_matmul_types():
    # BatchMatmulAttrs defaults transpose_b to False: y is [b, k, n] unless transpose_b=True
    assert shape_of(infer("nn.batch_matmul", T(2, 3, 4), T(2, 4, 5))) == (2, 3, 5)
    assert shape_of(infer("nn.batch_matmul", T(2, 3, 4), T(2, 5, 4), transpose_b=True)) == (2, 3, 5)
    assert shape_of(infer("nn.batch_matmul", T(2, 4, 3), T(2, 4, 5), transpose_a=True)) == (2, 3, 5)
    assert shape_of(infer("nn.batch_matmul", T(1, 3, 4), T(6, 4, 5))) == (6, 3, 5)
    assert shape_of(infer("nn.batch_matmul", T("?", 3, 4), T(6, 4, "?"))) == ("?", 3, "?")
    assert infer("nn.batch_matmul", T(2, 3, 4), T(2, 4, 5), out_dtype="float16").dtype == "float16"
    reject("nn.batch_matmul", T(2, 3, 4), T(3, 4, 5), match=r"batch dimensions 2 and 3 do not match")
    reject("nn.batch_matmul", T(2, 3, 4), T(2, 5, 4), match=r"reduction dimensions differ \(4 and 5\)")
    reject("nn.batch_matmul", T(2, 3, 4), T(2, 4, 5), transpose_b=True,
           match=r"reduction dimensions differ \(4 and 5\).*transpose_b=True: y is \[b, n, k\]")
    reject("nn.batch_matmul", T(3, 4), T(2, 4, 5), match=r"`tensor_a` must be a 3-D tensor")
    reject("nn.batch_matmul", T(2, 3, 4), T(4, 5), match=r"`tensor_b` must be a 3-D tensor")


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_batch_matmul_reference(ta, tb):
    x = rand(3, 4, 2) if ta else rand(3, 2, 4)
    y = rand(1, 5, 4) if tb else rand(1, 4, 5)
    out = run("nn.batch_matmul", x, y, transpose_a=ta, transpose_b=tb)
    expected = np.einsum("bik,bkj->bij", np.swapaxes(x, 1, 2) if ta else x,
                         np.broadcast_to(np.swapaxes(y, 1, 2) if tb else y, (3, 4, 5)))
    close(out, expected)
    (ort_out,) = ort_run("MatMul", [np.ascontiguousarray(np.swapaxes(x, 1, 2) if ta else x),
                                    np.ascontiguousarray(np.swapaxes(y, 1, 2) if tb else y)])
    close(out, ort_out)


# ------------------------------------------------------------------ nn.bias_add, nn.prelu


def test_bias_add():
    assert shape_of(infer("nn.bias_add", T(2, 3, 4), T(3))) == (2, 3, 4)
    assert shape_of(infer("nn.bias_add", T(2, 3, 4), T(4), axis=-1)) == (2, 3, 4)
    assert shape_of(infer("nn.bias_add", T(2, "?", 4), T(5))) == (2, "?", 4)
    assert shape_of(infer("nn.bias_add", T(2, 3, 4), T("?"))) == (2, 3, 4)
    reject("nn.bias_add", T(2, 3, 4), T(4), match=r"`bias` must have type .*\(3\), float32\], got .*\(4\)")
    reject("nn.bias_add", T(2, 3, 4), T(3, dtype="float16"), match=r"`bias` must have type .*float32.*float16")
    reject("nn.bias_add", T(2, 3, 4), T(3), axis=3, match=r"axis 3 is out of range \[-3, 3\)")
    reject("nn.bias_add", T(2, 3, 4), T(3), axis=-4, match=r"axis -4 is out of range")
    x, b = rand(2, 3, 4), rand(4)
    out = run("nn.bias_add", x, b, axis=2)
    for i in range(4):
        close(out[:, :, i], x[:, :, i] + b[i])
    close(run("nn.bias_add", x, rand(3) * 0), x)


def test_prelu():
    assert shape_of(infer("nn.prelu", T(2, 3, 4, 4), T(3))) == (2, 3, 4, 4)
    assert shape_of(infer("nn.prelu", T(2, 3, 4, 5), T(5), axis=3)) == (2, 3, 4, 5)
    reject("nn.prelu", T(2, 3, 4, 4), T(4), match=r"`alpha` must have type .*\(3\)")
    reject("nn.prelu", T(2, 3, 4, 4), T(3, dtype="int32"), match=r"`alpha` must have type .*float32.*int32")
    # TVM indexes the shape with the axis as given: no negative axes
    reject("nn.prelu", T(2, 3, 4, 4), T(4), axis=-1, match=r"axis -1 is out of range \[0, 4\)")
    reject("nn.prelu", T(2, 3), T(3), axis=2, match=r"axis 2 is out of range")
    x, alpha = rand(2, 3, 4, 4), rand(3)
    out = run("nn.prelu", x, alpha)
    for c in range(3):
        close(out[:, c], np.where(x[:, c] > 0, x[:, c], x[:, c] * alpha[c]))
    (expected,) = ort_run("PRelu", [x, alpha.reshape(3, 1, 1)])
    close(out, expected)


# ------------------------------------------------------------------ pooling


def naive_pool2d(x, kind, pool, strides, dilation, pad, ceil_mode, count_include_pad=False):
    """NCHW, one output pixel at a time, with TOPI's divisor arithmetic (pool_impl_nd) written out."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad
    geometry = [(h, pool[0], strides[0], dilation[0], pt, pb), (w, pool[1], strides[1], dilation[1], pl, pr)]

    def extent(size, k, s, d, head, tail):
        return (size + head + tail - (k - 1) * d - 1 + (s - 1 if ceil_mode else 0)) // s + 1

    def taps(o, size, k, s, d, head, tail):
        """The window's input indices along one axis, and how many of them the average counts."""
        start = o * s - head
        end = start + (k - 1) * d
        if count_include_pad:
            count = (min(end, size + tail - 1) - start) // d + 1
        else:
            first = start + d * max(math.ceil(-start / d), 0)
            count = max((min(end, size - 1) - first) // d + 1, 0)
        return [start + i * d for i in range(k)], count

    out = np.zeros((n, c, extent(*geometry[0]), extent(*geometry[1])))
    for y, z in np.ndindex(out.shape[2:]):
        (rows, count_y), (cols, count_x) = taps(y, *geometry[0]), taps(z, *geometry[1])
        cells = [x[:, :, i, j] for i in rows for j in cols if 0 <= i < h and 0 <= j < w]
        if kind == "max":
            if len(cells) < len(rows) * len(cols):  # padding reads as the dtype's lowest value
                cells.append(np.full((n, c), np.finfo(x.dtype).min))
            out[:, :, y, z] = np.max(cells, axis=0)
        else:
            out[:, :, y, z] = np.sum(np.asarray(cells, float), axis=0) / max(count_y * count_x, 1)
    return out


POOL_CASES = [
    # shape, pool, strides, dilation, padding (4), ceil_mode
    ((1, 2, 7, 7), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), False),
    ((2, 3, 8, 9), (2, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((1, 2, 9, 8), (3, 2), (2, 3), (1, 1), (1, 0, 2, 1), False),
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), True),
    ((1, 2, 7, 10), (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), True),
    ((1, 1, 9, 9), (2, 3), (1, 2), (2, 2), (1, 2, 1, 2), False),
]


@pytest.mark.parametrize("shape, pool, strides, dilation, padding, ceil_mode", POOL_CASES)
def test_max_pool2d_reference(shape, pool, strides, dilation, padding, ceil_mode):
    x = rand(*shape)
    kw = dict(pool_size=pool, strides=strides, dilation=dilation, padding=padding, ceil_mode=ceil_mode)
    out = run("nn.max_pool2d", x, **kw)
    close(out, naive_pool2d(x, "max", pool, strides, dilation, padding, ceil_mode))
    (expected,) = ort_run("MaxPool", [x], kernel_shape=list(pool), strides=list(strides), dilations=list(dilation),
                          pads=list(padding), ceil_mode=int(ceil_mode))
    close(out, expected)
    nhwc = run("nn.max_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC", **kw)
    close(nhwc.transpose(0, 3, 1, 2), out)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("shape, pool, strides, dilation, padding, ceil_mode", POOL_CASES)
def test_avg_pool2d_reference(shape, pool, strides, dilation, padding, ceil_mode, count_include_pad):
    x = rand(*shape)
    kw = dict(pool_size=pool, strides=strides, dilation=dilation, padding=padding, ceil_mode=ceil_mode,
              count_include_pad=count_include_pad)
    out = run("nn.avg_pool2d", x, **kw)
    close(out, naive_pool2d(x, "avg", pool, strides, dilation, padding, ceil_mode, count_include_pad))
    if dilation == (1, 1):
        (expected,) = ort_run("AveragePool", [x], kernel_shape=list(pool), strides=list(strides),
                              pads=list(padding), ceil_mode=int(ceil_mode),
                              count_include_pad=int(count_include_pad))
        close(out, expected)
    nhwc = run("nn.avg_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC", **kw)
    close(nhwc.transpose(0, 3, 1, 2), out)


def test_avg_pool2d_integer_truncates():
    x = np.array([[[[1, 2], [2, -8]]]], "int32")
    assert run("nn.avg_pool2d", x, pool_size=2)[0, 0, 0, 0] == -0  # -3 / 4 truncates to 0
    assert run("nn.avg_pool2d", x + 10, pool_size=2)[0, 0, 0, 0] == 9  # 37 / 4
    assert run("nn.avg_pool2d", -x - 1, pool_size=2)[0, 0, 0, 0] == -0  # -1 / 4


def test_pool2d_types():
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 32, 32), pool_size=2, strides=2)) == (1, 3, 16, 16)
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 32, 32), pool_size=3, strides=2, padding=1)) == (1, 3, 16, 16)
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 32, 32), pool_size=3, strides=2, padding=(1, 0))) == (1, 3, 16, 15)
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 7, 7), pool_size=2, strides=2)) == (1, 3, 3, 3)
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 7, 7), pool_size=2, strides=2, ceil_mode=True)) == (1, 3, 4, 4)
    assert shape_of(infer("nn.max_pool2d", T(1, 3, 9, 9), pool_size=2, dilation=3)) == (1, 3, 6, 6)
    assert shape_of(infer("nn.avg_pool2d", T(1, 32, 32, 3), pool_size=2, strides=2, layout="NHWC")) == (1, 16, 16, 3)
    assert shape_of(infer("nn.avg_pool2d", T(1, 2, 8, 8, 4), pool_size=2, strides=2,
                          layout="NCHW4c")) == (1, 2, 4, 4, 4)
    assert shape_of(infer("nn.avg_pool2d", T("?", 3, "?", 32), pool_size=2, strides=2)) == ("?", 3, "?", 16)
    assert infer("nn.max_pool2d", T(1, 3, 4, 4, dtype="int8"), pool_size=2).dtype == "int8"
    reject("nn.max_pool2d", T(1, 3, 4, 4), pool_size=2, layout="NCDW", match=r"invalid pooling layout \"NCDW\"")
    reject("nn.max_pool2d", T(1, 3, 4, 4), pool_size=2, layout="NCHWh", match=r"invalid pooling layout")
    reject("nn.max_pool2d", T(4, 4), pool_size=2, match=r"`data` of rank 2 has no H and W axes in layout NCHW")
    reject("nn.max_pool2d", T(1, 3, 4, 4), pool_size=(2, 2, 2), match=r"`pool_size` must have 2 values")
    reject("nn.avg_pool2d", T(1, 3, 4, 4), pool_size=2, padding=(1, 1, 1), match=r"`padding` must have 1, 2 or 4")
    reject("nn.avg_pool2d", T(1, 3, 4, 4), pool_size=5, match=r"height window \(5, dilated\) is larger than the "
           r"padded height \(4\)")
    reject("nn.avg_pool2d", T(1, 3, 4, 4), pool_size=2, strides=0, match=r"`strides` must be positive")


def test_global_pools():
    for name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
        assert shape_of(infer(name, T(2, 3, 7, 5))) == (2, 3, 1, 1)
        assert shape_of(infer(name, T(2, 7, 5, 3), layout="NHWC")) == (2, 1, 1, 3)
        assert shape_of(infer(name, T("?", 3, "?", "?"))) == ("?", 3, 1, 1)
        reject(name, T(2, 3), layout="NHWC", match=r"rank 2 has no H and W axes")
        reject(name, T(2, 3, 4, 4), layout="NCW", match=r"invalid pooling layout")
    x = rand(2, 3, 5, 4)
    avg, mx = run("nn.global_avg_pool2d", x), run("nn.global_max_pool2d", x)
    for n in range(2):
        for c in range(3):
            close(avg[n, c, 0, 0], sum(float(v) for v in x[n, c].ravel()) / 20)
            close(mx[n, c, 0, 0], max(x[n, c].ravel()))
    close(avg, ort_run("GlobalAveragePool", [x])[0])
    close(mx, ort_run("GlobalMaxPool", [x])[0])
    close(run("nn.global_avg_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC").transpose(0, 3, 1, 2), avg)
    assert run("nn.global_avg_pool2d", np.array([[[[1, 2], [2, 2]]]], "int32"))[0, 0, 0, 0] == 1  # 7 // 4


def test_adaptive_avg_pool2d():
    assert shape_of(infer("nn.adaptive_avg_pool2d", T(1, 3, 9, 9))) == (1, 3, 9, 9)
    assert shape_of(infer("nn.adaptive_avg_pool2d", T(1, 3, 9, 9), output_size=3)) == (1, 3, 3, 3)
    assert shape_of(infer("nn.adaptive_avg_pool2d", T(1, 3, 9, 9), output_size=(2, 4))) == (1, 3, 2, 4)
    assert shape_of(infer("nn.adaptive_avg_pool2d", T(1, 9, 9, 3), output_size=(2, 4), layout="NHWC")) == (1, 2, 4, 3)
    assert shape_of(infer("nn.adaptive_avg_pool2d", T("?", 3, "?", "?"), output_size=(2, 4))) == ("?", 3, 2, 4)
    reject("nn.adaptive_avg_pool2d", T(1, 3, 9, 9), output_size=(1, 2, 3), match=r"up to 2 values, got \[1, 2, 3\]")
    reject("nn.adaptive_avg_pool2d", T(1, 3, 9, 9), output_size=-1, match=r"must not be negative")
    x = rand(2, 3, 5, 7)
    out = run("nn.adaptive_avg_pool2d", x, output_size=(3, 4))
    for i in range(3):
        h0, h1 = math.floor(i * 5 / 3), math.ceil((i + 1) * 5 / 3)
        for j in range(4):
            w0, w1 = math.floor(j * 7 / 4), math.ceil((j + 1) * 7 / 4)
            close(out[:, :, i, j], x[:, :, h0:h1, w0:w1].mean(axis=(2, 3)))
    # 5 rows into 3: windows [0, 2), [1, 4), [3, 5) overlap
    col = np.arange(5, dtype="float32").reshape(1, 1, 5, 1)
    close(run("nn.adaptive_avg_pool2d", col, output_size=(3, 1)).ravel(), [0.5, 2.0, 3.5])
    close(run("nn.adaptive_avg_pool2d", x, output_size=1), ort_run("GlobalAveragePool", [x])[0])
    nhwc = run("nn.adaptive_avg_pool2d", x.transpose(0, 2, 3, 1), output_size=(3, 4), layout="NHWC")
    close(nhwc.transpose(0, 3, 1, 2), out)


# ------------------------------------------------------------------ normalisation


def test_batch_norm_types():
    t = infer("nn.batch_norm", T(2, 3, 4, 4), T(3), T(3), T(3), T(3))
    assert isinstance(t, TupleType) and [shape_of(f) for f in t.fields] == [(2, 3, 4, 4), (3,), (3,)]
    t = infer("nn.batch_norm", T(2, 4, 5), T(5), T(5), T(5), T(5), axis=-1)
    assert [shape_of(f) for f in t.fields] == [(2, 4, 5), (5,), (5,)]
    t = infer("nn.batch_norm", T(2, "?", 4), T(3), T("?"), T(3), T(3))
    assert [shape_of(f) for f in t.fields] == [(2, "?", 4), ("?",), ("?",)]
    reject("nn.batch_norm", T(2, 3, 4), T(3), T(4), T(3), T(3), match=r"`beta` must have type .*\(3\).*\(4\)")
    reject("nn.batch_norm", T(2, 3, 4), T(3), T(3), T(3), T(3, dtype="float16"),
           match=r"`moving_var` must have type .*float32.*float16")
    # TVM takes axis -1 but no other negative axis
    reject("nn.batch_norm", T(2, 3, 4), T(3), T(3), T(3), T(3), axis=-2, match=r"axis -2 is out of range \[-1, 3\)")
    reject("nn.batch_norm", T(2, 3, 4), T(3), T(3), T(3), T(3), axis=3, match=r"axis 3 is out of range")
    reject("nn.batch_norm", T(2, 3, 4), T(3), T(3), T(3), TupleType([]), match=r"`moving_var` must be a tensor")


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False), (False, False)])
def test_batch_norm_reference(center, scale):
    x, g, b, m = rand(2, 3, 4, 5), rand(3), rand(3), rand(3)
    v = RNG.uniform(0.5, 2, 3).astype("float32")
    out, mean, var = run("nn.batch_norm", x, g, b, m, v, epsilon=1e-3, center=center, scale=scale)
    assert np.array_equal(mean, m) and np.array_equal(var, v)
    for c in range(3):
        expected = (x[:, c] - m[c]) / math.sqrt(v[c] + 1e-3) * (g[c] if scale else 1) + (b[c] if center else 0)
        close(out[:, c], expected)
    if center and scale:
        close(out, ort_run("BatchNormalization", [x, g, b, m, v], epsilon=1e-3)[0])
    last, _, _ = run("nn.batch_norm", x.transpose(0, 2, 3, 1), g, b, m, v, axis=-1, epsilon=1e-3, center=center,
                     scale=scale)
    close(last.transpose(0, 3, 1, 2), out)


def test_layer_norm():
    assert shape_of(infer("nn.layer_norm", T(2, 3, 8), T(8), T(8))) == (2, 3, 8)
    assert shape_of(infer("nn.layer_norm", T(2, 3, 8), T(3), T(3), axis=1)) == (2, 3, 8)
    assert shape_of(infer("nn.layer_norm", T(2, 3, "?"), T(8), T(8))) == (2, 3, "?")
    reject("nn.layer_norm", T(2, 3, 8), T(3), T(8), match=r"`gamma` must have type .*\(8\).*\(3\)")
    reject("nn.layer_norm", T(2, 3, 8), T(8), T(8, dtype="float64"), match=r"`beta` must have type .*float64")
    reject("nn.layer_norm", T(2, 3, 8), T(8), T(8), axis=3, match=r"axis 3 is out of range \[-3, 3\)")
    x, g, b = rand(2, 3, 8), rand(8), rand(8)
    out = run("nn.layer_norm", x, g, b, epsilon=1e-4)
    close(out, ort_run("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-4)[0])
    for i in range(2):
        for j in range(3):
            row = x[i, j].astype(float)
            close(out[i, j], (row - row.mean()) / math.sqrt(row.var() + 1e-4) * g + b)
    g3, b3 = rand(3), rand(3)
    mid = run("nn.layer_norm", x, g3, b3, axis=1, center=False)
    close(mid, run("nn.layer_norm", x.transpose(0, 2, 1), g3, b3 * 0, center=True).transpose(0, 2, 1))
    close(run("nn.layer_norm", x, g, b, scale=False, center=False), run("nn.layer_norm", x, g * 0 + 1, b * 0))


# ------------------------------------------------------------------ softmax, log_softmax


@pytest.mark.parametrize("name", ["nn.softmax", "nn.log_softmax"])
def test_softmax_over_an_empty_axis(name):
    # Regression: the reference raised on a zero-size axis (found by fold-constant's tests)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lookup(name).ref(np.zeros((2, 0), "float32"), axis=-1)
    assert out.shape == (2, 0) and out.dtype == np.float32


@pytest.mark.parametrize("name, onnx_op", [("nn.softmax", "Softmax"), ("nn.log_softmax", "LogSoftmax")])
def test_softmax(name, onnx_op):
    assert shape_of(infer(name, T(2, "?", 5))) == (2, "?", 5)
    assert infer(name, T(2, 3, dtype="float16"), axis=0).dtype == "float16"
    reject(name, T(2, 3), axis=2, match=r"axis 2 is out of range \[-2, 2\)")
    reject(name, T(2, 3), axis=-3, match=r"axis -3 is out of range")
    reject(name, T(dtype="float32"), match=r"axis -1 is out of range \[0, 0\)")
    x = rand(2, 3, 5) * 10
    for axis in (-1, 1, 0):
        out = run(name, x, axis=axis)
        close(out, ort_run(onnx_op, [x], axis=axis)[0])
        e = np.exp(x.astype(float) - x.max())
        soft = e / e.sum(axis=axis, keepdims=True)
        close(out, soft if name == "nn.softmax" else np.log(soft))


# ------------------------------------------------------------------ nn.dropout


def test_dropout():
    t = infer("nn.dropout", T(2, "?", dtype="float16"), rate=0.2)
    assert isinstance(t, TupleType) and [(shape_of(f), f.dtype) for f in t.fields] == [((2, "?"), "float16")] * 2
    x = rand(3, 4)
    out, mask = run("nn.dropout", x, rate=0.7)
    assert np.array_equal(out, x) and np.array_equal(mask, np.ones_like(x))
    reject("nn.dropout", TupleType([T(2)]), match=r"argument `data` must be a tensor")


# ------------------------------------------------------------------ nn.pad


def test_pad_types():
    assert shape_of(infer("nn.pad", T(2, 3), T(), pad_width=((1, 2), (0, 3)))) == (5, 6)
    assert shape_of(infer("nn.pad", T("?", 3), T(), pad_width=((1, 2), (-1, 0)))) == ("?", 2)
    assert infer("nn.pad", T(2, dtype="int8"), T(dtype="float32"), pad_width=((1, 1),)).dtype == "int8"
    reject("nn.pad", T(2, 3), T(), pad_width=((1, 1),), match=r"pad_width has 1 pairs for a tensor of rank 2")
    reject("nn.pad", T(2, 3), T(), pad_width=((1, 1), (1, 2, 3)), match=r"pad_width\[1\] must be a pair")
    reject("nn.pad", T(2, 3), T(), pad_width=((0, 0), (-2, -2)), match=r"padding \[-2, -2\] makes dimension 1 of "
           r"\(2, 3\) negative")
    reject("nn.pad", T(2, 3), T(), pad_width=((0, 0), (1, 1)), pad_mode="wrap", match=r"pad_mode must be one of")
    reject("nn.pad", T(2, 3), TupleType([]), pad_width=((0, 0), (1, 1)), match=r"argument `pad_val` must be a tensor")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_reference(mode):
    x = rand(2, 3, 4)
    width = ((0, 1), (2, 1), (1, 2))
    out = run("nn.pad", x, np.array(1.5, "float32"), pad_width=width, pad_mode=mode)
    (expected,) = ort_run("Pad", [x, np.array([a for a, _ in width] + [b for _, b in width], "int64"),
                                  np.array(1.5, "float32")], mode=mode)
    close(out, expected)
    # index by index: where each output cell reads from
    for idx in np.ndindex(out.shape):
        src = []
        for i, (a, _) in zip(idx, width):
            n = x.shape[len(src)]
            j = i - a
            if mode == "edge":
                j = min(max(j, 0), n - 1)
            elif mode == "reflect":
                j = -j if j < 0 else 2 * (n - 1) - j if j >= n else j
            src.append(j)
        inside = all(0 <= j < n for j, n in zip(src, x.shape))
        assert out[idx] == (x[tuple(src)] if inside else np.float32(1.5))


def test_pad_negative_crops_and_casts_the_value():
    x = np.arange(12, dtype="int32").reshape(3, 4)
    out = run("nn.pad", x, np.array(7.9, "float32"), pad_width=((-1, 1), (1, -2)))
    assert out.dtype == np.int32
    assert np.array_equal(out, [[7, 4, 5], [7, 8, 9], [7, 7, 7]])


# ------------------------------------------------------------------ nn.batch_flatten, nn.lrn


def test_batch_flatten():
    assert shape_of(infer("nn.batch_flatten", T(2, 3, 4, 5))) == (2, 60)
    assert shape_of(infer("nn.batch_flatten", T("?", 3, 4))) == ("?", 12)
    assert shape_of(infer("nn.batch_flatten", T(2, 3, "?", 5))) == (2, "?")
    assert shape_of(infer("nn.batch_flatten", T(7))) == (7, 1)
    reject("nn.batch_flatten", T(), match=r"rank >= 1, got float32")
    x = rand(2, 3, 4)
    out = run("nn.batch_flatten", x)
    assert [list(r) for r in out] == [[v for plane in x[n] for v in plane] for n in range(2)]
    close(out, ort_run("Flatten", [x], axis=1)[0])


def test_lrn():
    assert shape_of(infer("nn.lrn", T(2, "?", 4, 4))) == (2, "?", 4, 4)
    reject("nn.lrn", T(2, 3), axis=2, match=r"axis 2 is out of range")
    x = rand(2, 7, 3, 4)
    kw = dict(size=3, alpha=0.5, beta=0.75, bias=1.5)
    out = run("nn.lrn", x, **kw)
    close(out, ort_run("LRN", [x], **kw)[0])
    default = run("nn.lrn", x)  # size 5, bias 2, alpha 1e-4, beta 0.75
    for c in range(7):
        sq = sum(x[:, k].astype(float) ** 2 for k in range(max(0, c - 2), min(7, c + 3)))
        close(default[:, c], x[:, c] / (2 + 1e-4 / 5 * sq) ** 0.75)
    nhwc = run("nn.lrn", x.transpose(0, 2, 3, 1), axis=3, **kw)
    close(nhwc.transpose(0, 3, 1, 2), out)
