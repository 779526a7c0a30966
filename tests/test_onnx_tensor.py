"""ONNX tensor-op converters (irtool/frontend/onnx/tensor.py) against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import irtool
from irtool.frontend.onnx import OnnxImportError, from_onnx

NP_TO_ONNX = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
              "bool": TensorProto.BOOL}


def _model(nodes, inputs, outputs, inits=(), opset=18):
    """inputs: {name: array}; outputs: [(name, dtype)]; inits: {name: array} (initializers)."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, NP_TO_ONNX[str(a.dtype)], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, NP_TO_ONNX[d], None) for n, d in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def check(nodes, inputs, outputs=(("y", "float32"),), inits=(), opset=18, rtol=1e-5):
    model = _model(nodes, inputs, list(outputs), inits, opset)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, dict(inputs))
    mod, _ = from_onnx(model)
    got = irtool.interpret(mod, dict(inputs))
    got = list(got) if len(expected) > 1 else [got]
    for e, g in zip(expected, got, strict=True):
        g = np.asarray(g)
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-5)
    return mod


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 4, 5)).astype("float32")
I64 = np.asarray


@pytest.mark.parametrize("shape,allowzero", [((0, -1), 0), ((-1,), 0), ((2, 0, 20), 0), ((6, 20), 1),
                                             ((0, 3, 2, 2, 5), 0)])
def test_reshape(shape, allowzero):
    check([node("Reshape", ["x", "s"], allowzero=allowzero)], {"x": X}, inits={"s": I64(shape, "int64")})


def test_reshape_opset1_attr():
    check([node("Reshape", ["x"], shape=[6, -1])], {"x": X}, opset=4)


@pytest.mark.parametrize("axis", [0, 1, 2, 4, -1, -3])
def test_flatten(axis):
    check([node("Flatten", ["x"], axis=axis)], {"x": X})


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1], [3, 1, 0, 2]])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": perm}
    check([node("Transpose", ["x"], **attrs)], {"x": X})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [None, [1], [-1, 1]])
def test_squeeze(opset, axes):
    x = rng.standard_normal((1, 3, 1, 2, 1)).astype("float32")
    if axes is None:
        nodes, inits = [node("Squeeze", ["x"])], {}
    elif opset < 13:
        nodes, inits = [node("Squeeze", ["x"], axes=[a * 2 if a > 0 else a for a in axes])], {}
    else:
        nodes, inits = [node("Squeeze", ["x", "a"])], {"a": I64([a * 2 if a > 0 else a for a in axes], "int64")}
    check(nodes, {"x": x}, inits=inits, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [[0], [1, -1], [0, 3, 5]])
def test_unsqueeze(opset, axes):
    x = rng.standard_normal((3, 4, 2)).astype("float32")
    if opset < 13:
        nodes, inits = [node("Unsqueeze", ["x"], axes=axes)], {}
    else:
        nodes, inits = [node("Unsqueeze", ["x", "a"])], {"a": I64(axes, "int64")}
    check(nodes, {"x": x}, inits=inits, opset=opset)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    b = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    check([node("Concat", ["x", "b", "x"], axis=axis)], {"x": X, "b": b})


@pytest.mark.parametrize("case", ["equal", "sizes", "num_outputs", "attr11"])
def test_split(case):
    outs = [("o0", "float32"), ("o1", "float32")]
    x = rng.standard_normal((2, 7, 3)).astype("float32")
    opset, inits = 18, {}
    if case == "equal":
        x = rng.standard_normal((2, 6, 3)).astype("float32")
        nodes, opset = [node("Split", ["x"], ["o0", "o1", "o2"], axis=1)], 13
        outs.append(("o2", "float32"))
    elif case == "sizes":
        nodes, inits = [node("Split", ["x", "s"], ["o0", "o1"], axis=-2)], {"s": I64([2, 5], "int64")}
    elif case == "num_outputs":
        nodes = [node("Split", ["x"], ["o0", "o1", "o2"], axis=1, num_outputs=3)]
        outs.append(("o2", "float32"))
    else:
        nodes, opset = [node("Split", ["x"], ["o0", "o1"], axis=1, split=[4, 3])], 11
    check(nodes, {"x": x}, outputs=outs, inits=inits, opset=opset)


SLICES = [
    ([1], [3], None, None),
    ([0, 1], [-1, 1000], [1, 3], None),
    ([-100, 4], [100, -1000], [2, 3], [1, -2]),
    ([3, -1], [0, -100], [-1, 2], [-1, -1]),
    ([0], [5], [-1], [2]),
    ([9223372036854775807], [-9223372036854775807], [1], [-1]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice(starts, ends, axes, steps):
    inits = {"s": I64(starts, "int64"), "e": I64(ends, "int64")}
    names = ["x", "s", "e"]
    if axes is not None:
        inits["a"] = I64(axes, "int64")
        names.append("a")
    if steps is not None:
        if axes is None:
            names.append("")
        inits["t"] = I64(steps, "int64")
        names.append("t")
    check([node("Slice", names)], {"x": X}, inits=inits)


def test_slice_opset1_attrs():
    check([node("Slice", ["x"], starts=[1, -3], ends=[100, -1], axes=[1, 3])], {"x": X}, opset=9)


@pytest.mark.parametrize("axis,indices", [(0, [1, 0]), (1, [[2, -1], [0, -3]]), (-1, -2), (3, [4, 0, -5])])
def test_gather_constant_indices(axis, indices):
    check([node("Gather", ["x", "i"], axis=axis)], {"x": X}, inits={"i": I64(indices, "int64")})


def test_gather_runtime_negative_indices():
    i = I64([[-1, 0], [2, -3]], "int64")
    check([node("Gather", ["x", "i"], axis=2)], {"x": X, "i": i})


@pytest.mark.parametrize("xshape,shape", [((3, 1), (2, 3, 4)), ((1, 4), (3, 1)), ((2, 3), (1,)), ((4,), (2, 1, 4))])
def test_expand(xshape, shape):
    x = rng.standard_normal(xshape).astype("float32")
    check([node("Expand", ["x", "s"])], {"x": x}, inits={"s": I64(shape, "int64")})


@pytest.mark.parametrize("reps", [(1, 1, 1, 1), (2, 1, 3, 1)])
def test_tile(reps):
    check([node("Tile", ["x", "r"])], {"x": X}, inits={"r": I64(reps, "int64")})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [(0, 0, 1, 2, 0, 1, 2, 1), (0, 1, 0, -1, 0, 0, 2, 2)])
def test_pad(mode, pads):
    inits = {"p": I64(pads, "int64"), "v": np.asarray(1.5, "float32")}
    check([node("Pad", ["x", "p", "v"], mode=mode)], {"x": X}, inits=inits)


def test_pad_axes_and_opset2():
    check([node("Pad", ["x", "p", "", "a"])], {"x": X},
          inits={"p": I64([1, 2, 0, 3], "int64"), "a": I64([-1, 1], "int64")})
    check([node("Pad", ["x"], pads=[0, 0, 1, 1, 0, 0, 2, 0], value=-2.0)], {"x": X}, opset=10)


@pytest.mark.parametrize("mode,coord,nearest", [
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"), ("linear", "half_pixel", None),
    ("linear", "align_corners", None), ("linear", "asymmetric", None), ("linear", "pytorch_half_pixel", None)])
@pytest.mark.parametrize("by", ["scales", "sizes"])
def test_resize(mode, coord, nearest, by):
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if nearest:
        attrs["nearest_mode"] = nearest
    if by == "scales":
        # scales whose sizes come out whole: TOPI maps coordinates by the size ratio, ONNX by the scale
        inits = {"s": np.asarray([1, 1, 2, 0.6], "float32")}
        names = ["x", "", "s"]
    else:
        inits = {"z": I64([2, 3, 7, 3], "int64")}
        names = ["x", "", "", "z"]
    check([node("Resize", names, **attrs)], {"x": X}, inits=inits, opset=13)


def test_resize_opset10_and_11():
    check([node("Resize", ["x", "s"], mode="nearest")], {"x": X},
          inits={"s": np.asarray([1, 1, 2, 3], "float32")}, opset=10)
    check([node("Resize", ["x", "r", "s"], mode="linear")], {"x": X},
          inits={"r": np.zeros((0,), "float32"), "s": np.asarray([1, 1, 0.5, 2], "float32")}, opset=11)


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"start": -3, "end": -1}, {"end": 10}, {"start": 3, "end": 1}])
def test_shape(attrs):
    mod = check([node("Shape", ["x"], **attrs)], {"x": X}, outputs=[("y", "int64")])
    assert "shape_of" not in irtool.to_text(mod)  # a static shape is a constant


@pytest.mark.parametrize("value", [None, np.asarray([3], "int64"), np.asarray([2.5], "float32")])
def test_constant_of_shape(value):
    attrs = {} if value is None else {"value": numpy_helper.from_array(value)}
    nodes = [node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["c"], **attrs),
             node("Cast", ["c"], to=TensorProto.FLOAT)]
    check(nodes, {"x": X})


@pytest.mark.parametrize("start,limit,delta", [(0, 5, 1), (10, 2, -3), (1.5, 4.0, 0.5), (3, 3, 1)])
def test_range(start, limit, delta):
    dtype = "float32" if isinstance(start, float) else "int64"
    inits = {"a": np.asarray(start, dtype), "b": np.asarray(limit, dtype), "c": np.asarray(delta, dtype)}
    check([node("Range", ["a", "b", "c"])], {}, outputs=[("y", dtype)], inits=inits)


@pytest.mark.parametrize("attr,value,dtype", [
    ("value", numpy_helper.from_array(np.arange(6, dtype="float32").reshape(2, 3)), "float32"),
    ("value_float", 2.5, "float32"), ("value_floats", [1.0, 2.0], "float32"),
    ("value_int", 7, "int64"), ("value_ints", [1, 2, 3], "int64")])
def test_constant(attr, value, dtype):
    check([node("Constant", [], **{attr: value})], {}, outputs=[("y", dtype)])


def test_identity_and_cast():
    check([node("Identity", ["x"], ["t"]), node("Cast", ["t"], to=TensorProto.INT32)], {"x": X},
          outputs=[("y", "int32")])


def test_pytorch_flatten_subgraph_folds_to_one_reshape():
    # torch.flatten(x, 1) as PyTorch exports it: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "zero"], ["n"], axis=0),
        node("Unsqueeze", ["n", "axes0"], ["n1"]),
        node("Concat", ["n1", "minus1"], ["ns"], axis=0),
        node("Reshape", ["x", "ns"]),
    ]
    inits = {"zero": np.asarray(0, "int64"), "axes0": I64([0], "int64"), "minus1": I64([-1], "int64")}
    mod = check(nodes, {"x": X}, inits=inits)
    text = irtool.to_text(mod)
    assert "shape_of" not in text and "take" not in text and "concatenate" not in text
    assert text.count("reshape(") == 1
    assert "newshape=[2, 60]" in text


def test_shape_dependent_input_must_be_known():
    # Split's sizes decide how many outputs there are: no dynamic form (a Reshape's shape
    # has one: dyn.reshape, tests/test_onnx_dynamic.py)
    sizes = I64([3, 4], "int64")
    model = _model([node("Split", ["x", "s"], ["a", "b"], axis=1)], {"x": rng.standard_normal((2, 7)).astype("float32"),
                                                                   "s": sizes}, [("a", "float32"), ("b", "float32")])
    with pytest.raises(OnnxImportError, match="known at import"):
        from_onnx(model)


@pytest.mark.parametrize("sizes", [[0, 7], [3, 0, 4], [7, 0]])
def test_split_zero_size_parts(sizes):
    """Empty parts are slices with begin == end (the split op rejects them)."""
    x = rng.standard_normal((2, 7, 3)).astype("float32")
    outs = [(f"o{i}", "float32") for i in range(len(sizes))]
    check([node("Split", ["x", "s"], [n for n, _ in outs], axis=1)], {"x": x}, outputs=outs,
          inits={"s": I64(sizes, "int64")})


@pytest.mark.parametrize("pads", [(0, 0, 1, 2, 0, 0, 2, 1), (0, 1, 3, 0, 0, 2, 0, 4), (0, 0, 0, 5, 0, 0, 0, 0)])
def test_pad_wrap(pads):
    """Wrap padding as a concatenation of strided slices, pads up to the axis' size."""
    check([node("Pad", ["x", "p"], mode="wrap")], {"x": X}, inits={"p": I64(pads, "int64")})


@pytest.mark.parametrize("mode,coord,extra", [
    # (not align_corners: there onnxruntime divides by the whole output size, onnx's reference
    # and the node tests by scale * input size)
    ("linear", "half_pixel", {}), ("linear", "asymmetric", {}), ("cubic", "half_pixel", {}),
    ("cubic", "asymmetric", {"cubic_coeff_a": -0.5, "exclude_outside": 1}),
    ("linear", "half_pixel_symmetric", {}), ("linear", "pytorch_half_pixel", {}),
    ("nearest", "asymmetric", {"nearest_mode": "round_prefer_ceil"}),
    ("nearest", "half_pixel", {"nearest_mode": "ceil"}),
    ("linear", "half_pixel", {"antialias": 1}), ("cubic", "half_pixel", {"antialias": 1})])
@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.7), (1, 1, 1.7, 0.45)])
def test_resize_scales_not_whole(mode, coord, extra, scales):
    """Scales whose output sizes are not whole: ONNX maps coordinates by the scale, which
    the exact lowering (constant indices and weights per axis) follows."""
    x = rng.standard_normal((1, 2, 7, 9)).astype("float32")
    attrs = {"mode": mode, "coordinate_transformation_mode": coord, **extra}
    check([node("Resize", ["x", "", "s"], **attrs)], {"x": x},
          inits={"s": np.asarray(scales, "float32")}, opset=19, rtol=1e-4)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [[2, 3], [3, 2], [3]])
def test_resize_axes_and_aspect_policy(policy, axes):
    sizes = {2: 5, 3: 8}
    check([node("Resize", ["x", "", "", "z"], mode="nearest", axes=axes, keep_aspect_ratio_policy=policy)],
          {"x": X}, inits={"z": I64([sizes[a] for a in axes], "int64")}, opset=19)


def test_resize_tf_crop_and_resize_extrapolates():
    check([node("Resize", ["x", "r", "", "z"], mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                extrapolation_value=-7.0)], {"x": X},
          inits={"r": np.asarray([0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4], "float32"), "z": I64([2, 3, 6, 4], "int64")},
          opset=13)
