"""Transform and image operators (irtool/ops/transform.py, image.py).

For each operator: the type relation (TVM's output shapes incl. `?` dims, dtypes, and every
error with a message naming the problem), and the NumPy reference checked against an
independent formulation (explicit loops or a different NumPy route) and, where ONNX has
the operator, against onnxruntime. Every reference result is checked to have exactly the
shape and dtype the relation gives (`run`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from irtool.ir.expr import Attrs
from irtool.ir.types import ANY, TensorType, TupleType
from irtool.ops import REQUIRED, AttrError, OpPattern, TypeRelError, lookup

try:
    import onnxruntime
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover
    onnxruntime = None

needs_ort = pytest.mark.skipif(onnxruntime is None, reason="needs onnx and onnxruntime")

Q = ANY
RNG = np.random.default_rng(20240601)


# ------------------------------------------------------------------ helpers


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def U(*fields):
    return TupleType(fields)


def _tup(v):
    return tuple(_tup(x) for x in v) if isinstance(v, (list, tuple)) else v


def _attrs(name, attrs):
    return lookup(name).make_attrs(Attrs({k: _tup(v) for k, v in attrs.items()}))


def rel(name, *arg_types, values=None, **attrs):
    """The type the relation gives for these argument types and attributes."""
    op = lookup(name)
    a = _attrs(name, attrs)
    if op.needs_values:
        return op.type_rel(list(arg_types), a, list(values or [None] * len(arg_types)))
    return op.type_rel(list(arg_types), a)


def type_of(x):
    if isinstance(x, tuple):
        return TupleType([type_of(f) for f in x])
    return TensorType(x.shape, str(x.dtype))


def assert_has_type(value, t):
    if isinstance(t, TupleType):
        assert isinstance(value, tuple) and len(value) == len(t.fields)
        for v, f in zip(value, t.fields):
            assert_has_type(v, f)
        return
    assert isinstance(value, np.ndarray)
    assert value.shape == t.shape, f"reference shape {value.shape}, relation {t.shape}"
    assert str(value.dtype) == t.dtype, f"reference dtype {value.dtype}, relation {t.dtype}"


def run(name, *arrays, **attrs):
    """The reference result, after checking it has the relation's shape and dtype."""
    op = lookup(name)
    a = _attrs(name, attrs)
    types = [type_of(x) for x in arrays]
    t = op.type_rel(types, a, list(arrays)) if op.needs_values else op.type_rel(types, a)
    out = op.ref(*arrays, **dict(a.items()))
    assert_has_type(out, t)
    return out


def assert_type(t, shape, dtype):
    assert isinstance(t, TensorType) and (t.shape, t.dtype) == (tuple(shape), dtype), t


def fails(name, *arg_types, match, values=None, **attrs):
    with pytest.raises(TypeRelError, match=match):
        rel(name, *arg_types, values=values, **attrs)


def rand(shape, dtype="float32"):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(0, 100, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def onnx_run(op_type, inputs, n_out=1, out_dtype=None, **attrs):
    """Run one ONNX node (opset 18) with onnxruntime. `inputs` is a list of arrays, None
    for an omitted optional input. Returns the list of outputs."""
    names = [f"in{k}" if v is not None else "" for k, v in enumerate(inputs)]
    outs = [f"out{k}" for k in range(n_out)]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype or inputs[0].dtype))
    graph = helper.make_graph(
        [helper.make_node(op_type, names, outs, **attrs)], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in zip(names, inputs) if v is not None],
        [helper.make_tensor_value_info(o, elem, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    sess = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {n: v for n, v in zip(names, inputs) if v is not None})


def i64(*values):
    return np.array(values, dtype=np.int64)


# ------------------------------------------------------------------ registration


EXPECTED = {
    # name            args                            pattern                      relax name
    "reshape":        (("data",),                     OpPattern.INJECTIVE,         "relax.reshape"),
    "transpose":      (("data",),                     OpPattern.INJECTIVE,         "relax.permute_dims"),
    "squeeze":        (("data",),                     OpPattern.INJECTIVE,         "relax.squeeze"),
    "expand_dims":    (("data",),                     OpPattern.BROADCAST,         "relax.expand_dims"),
    "concatenate":    (("data",),                     OpPattern.INJECTIVE,         "relax.concat"),
    "stack":          (("data",),                     OpPattern.INJECTIVE,         "relax.stack"),
    "split":          (("data",),                     OpPattern.INJECTIVE,         "relax.split"),
    "strided_slice":  (("data",),                     OpPattern.INJECTIVE,         "relax.strided_slice"),
    "take":           (("data", "indices"),           OpPattern.INJECTIVE,         "relax.take"),
    "gather":         (("data", "indices"),           OpPattern.INJECTIVE,         "relax.gather_elements"),
    "broadcast_to":   (("data",),                     OpPattern.BROADCAST,         "relax.broadcast_to"),
    "tile":           (("data",),                     OpPattern.BROADCAST,         "relax.tile"),
    "repeat":         (("data",),                     OpPattern.BROADCAST,         "relax.repeat"),
    "full":           (("fill_value",),               OpPattern.ELEMWISE,          "relax.full"),
    "zeros":          ((),                            OpPattern.ELEMWISE,          "relax.zeros"),
    "ones":           ((),                            OpPattern.ELEMWISE,          "relax.ones"),
    "arange":         (("start", "end", "step"),      OpPattern.OPAQUE,            "relax.arange"),
    "shape_of":       (("data",),                     OpPattern.OPAQUE,            "relax.shape_of"),
    "image.resize2d": (("data",),                     OpPattern.INJECTIVE,         "relax.image.resize2d"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registration(name):
    op = lookup(name)
    args, pattern, relax = EXPECTED[name]
    assert (op.args, op.pattern, op.relax_name) == (args, pattern, relax)
    assert op.ref is not None
    assert op.needs_values == (name == "arange")


REQUIRED_ATTRS = [("reshape", "newshape"), ("transpose", "axes"), ("expand_dims", "axis"),
                  ("split", "indices_or_sections"), ("strided_slice", "begin"), ("strided_slice", "axes"),
                  ("tile", "reps"), ("repeat", "repeats"), ("full", "shape"), ("zeros", "shape"),
                  ("arange", "dtype")]


@pytest.mark.parametrize("name, attr", REQUIRED_ATTRS)
def test_required_attributes(name, attr):
    """TVM attributes without set_default must be given (and TVM always prints them)."""
    op = lookup(name)
    given = {a.name: None for a in op.attrs if a.name != attr and a.kind.endswith("?")}
    given.update({"newshape": (1,), "axis": 0, "indices_or_sections": 2, "reps": (1,), "repeats": 1,
                  "dtype": "int32", "shape": (1,), "begin": (0,), "end": (1,), "strides": (1,), "axes": None})
    given.pop(attr)
    given = {k: v for k, v in given.items() if k in op._specs}
    with pytest.raises(AttrError, match=f"requires attribute `{attr}`"):
        op.make_attrs(Attrs(given))


R = REQUIRED
INIT = [("shape", "ints?", R), ("dtype", "dtype", "")]
DECLARATIONS = {
    # include/tvm/relay/attrs/transform.h and image.h of v0.19: (name, kind, default)
    "reshape":        [("newshape", "ints", R), ("allowzero", "bool", False)],
    "transpose":      [("axes", "ints?", R)],
    "squeeze":        [("axis", "ints?", None)],
    "expand_dims":    [("axis", "int", R), ("num_newaxis", "int", 1)],
    "concatenate":    [("axis", "int", 0)],
    "stack":          [("axis", "int", 0)],
    "split":          [("indices_or_sections", "int_or_ints", R), ("axis", "int", 0)],
    "strided_slice":  [("begin", "ints?", R), ("end", "ints?", R), ("strides", "ints?", R),
                       ("slice_mode", "str", "end"), ("axes", "ints?", R)],
    "take":           [("batch_dims", "int", 0), ("axis", "int?", None), ("mode", "str", "clip")],
    "gather":         [("axis", "int?", None)],
    "broadcast_to":   INIT,
    "tile":           [("reps", "ints", R)],
    "repeat":         [("repeats", "int", R), ("axis", "int?", None)],
    "full":           INIT,
    "zeros":          INIT,
    "ones":           INIT,
    "arange":         [("dtype", "dtype", R)],
    # the C++ default is a null dtype (so TVM prints `dtype="int32"`); "" means int32
    "shape_of":       [("dtype", "dtype", "")],
    "image.resize2d": [("size", "ints?", None), ("roi", "floats?", None), ("layout", "str", "NCHW"),
                       ("method", "str", "linear"), ("coordinate_transformation_mode", "str", "half_pixel"),
                       ("rounding_method", "str", "round"), ("cubic_alpha", "float", -0.5),
                       ("cubic_exclude", "int", 0), ("extrapolation_value", "float", 0.0),
                       ("out_dtype", "dtype", "")],
}


@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_attribute_declarations(name):
    got = [(a.name, a.kind, a.default) for a in lookup(name).attrs]
    want = DECLARATIONS[name]
    assert [(n, k) for n, k, _ in got] == [(n, k) for n, k, _ in want]
    for (_, _, g), (attr, _, w) in zip(got, want):
        assert g is w if w is R or w is None else (g == w and type(g) is type(w)), attr


def test_shape_of_prints_int32_as_tvm_does():
    op = lookup("shape_of")
    assert op.non_default_attrs(op.make_attrs(Attrs({"dtype": "int32"}))) == [("dtype", "int32")]
    assert op.non_default_attrs(op.make_attrs(None)) == []


# ------------------------------------------------------------------ reshape

TVM_RESHAPE_EXAMPLES = [
    # from the docs of TVM's reshape: data shape, newshape, result shape
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
    ((6,), (-4, 2, -1), (2, 3)),
    ((), (1, 1), (1, 1)),
    ((1, 1), (), ()),
    # TVM writes the inferred value at the -1's position in newshape, not in the output:
    # there these fail (a wrong product, or an index past the end); we give the intended shape.
    ((2, 3, 4), (-2, -1), (2, 3, 4, 1)),
    ((2, 3, 4), (-4, 1, 2, -1), (1, 2, 12)),
]


@pytest.mark.parametrize("ishape, newshape, oshape", TVM_RESHAPE_EXAMPLES)
def test_reshape(ishape, newshape, oshape):
    assert rel("reshape", T(ishape, "int8"), newshape=newshape).shape == oshape
    x = rand(ishape, "int8")
    out = run("reshape", x, newshape=newshape)
    np.testing.assert_array_equal(out, np.reshape(x, oshape))  # row-major order is kept


@pytest.mark.parametrize("ishape, newshape, oshape", [
    ((Q, 3, 4), (0, -1), (Q, 12)),
    ((Q, 3, 4), (-1, 4), (Q, 4)),
    ((2, Q, 4), (-3, 4), (Q, 4)),
    ((Q, 6), (0, -4, 2, -1), (Q, 2, 3)),
    ((Q, 6), (0, -4, -1, 3), (Q, 2, 3)),
    ((6, Q), (-4, 2, -1, 0), (2, 3, Q)),
    ((Q,), (-1,), (Q,)),
    ((Q, 3), (5, 7), (5, 7)),  # cannot be checked statically
    ((2, Q, 4), (-2, 1), (2, Q, 4, 1)),
])
def test_reshape_dynamic(ishape, newshape, oshape):
    assert rel("reshape", T(ishape), newshape=newshape).shape == oshape


def test_reshape_allowzero():
    assert rel("reshape", T((6, 2)), newshape=(3, 0, 2)).shape == (3, 2, 2)  # 0 copies dim 1
    assert rel("reshape", T((0, 3)), newshape=(3, 0), allowzero=True).shape == (3, 0)
    fails("reshape", T((6, 2)), newshape=(3, 0, 2), allowzero=True, match=r"cannot reshape .*\(6, 2\).* \(3, 0, 2\)")
    out = run("reshape", np.zeros((0, 3), "float32"), newshape=(3, 0), allowzero=True)
    assert out.shape == (3, 0)


@pytest.mark.parametrize("ishape, newshape, allowzero, match", [
    ((2, 3), (-1, -1), False, "only one dimension can be -1"),
    ((2, 3), (4, 2), False, r"cannot reshape a tensor of shape \(2, 3\) \(6 elements\) into \(4, 2\) \(8 elements\)"),
    ((2, 3), (5, -1), False, r"cannot reshape .* into \(5, 1\)"),
    ((6,), (0, 0), False, r"the 0 at position 1 copies input dimension 1, but the input shape \(6,\) has rank 1"),
    ((2, 3), (0, -3), False, "the -3 at position 1 merges input dimensions 1 and 2"),
    ((6,), (-4, 2), False, "the -4 at position 0 must be followed by two dimensions"),
    ((6,), (-4, -1, -1), False, "cannot both be -1"),
    ((6,), (-4, 0, 6), False, "must be positive or -1, got 0, 6"),
    ((6,), (-4, 4, -1), False, r"cannot reshape .*\(6,\) .* into \(4, 1\)"),
    ((2, 3), (2, 3, -4, 1, 1), False, "the -4 at position 2 splits input dimension 2"),
    ((2, 3), (-5,), False, "unsupported special value -5"),
    ((0, 3), (-1, 0), True, "cannot infer the -1 dimension next to a 0 dimension"),
])
def test_reshape_errors(ishape, newshape, allowzero, match):
    fails("reshape", T(ishape), newshape=newshape, allowzero=allowzero, match=match)


def test_reshape_not_a_tensor():
    fails("reshape", U(T((2,))), newshape=(2,), match="argument `data` must be a tensor")


@needs_ort
@pytest.mark.parametrize("ishape, newshape, allowzero", [
    ((2, 3, 4), (4, 0, -1), 0), ((2, 3, 4), (0, -1), 0), ((2, 3, 4), (-1,), 0), ((0, 3), (3, 0), 1),
    ((2, 3, 4), (2, 0, 0), 0),
])
def test_reshape_onnx(ishape, newshape, allowzero):
    x = rand(ishape)
    out = run("reshape", x, newshape=newshape, allowzero=bool(allowzero))
    (want,) = onnx_run("Reshape", [x, i64(*newshape)], allowzero=allowzero)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("lshape, rshape, attrs, oshape", [
    ((6, 4), (2, 3, 4), {}, (2, 3, 4)),                                   # TVM's default: all of both
    ((1, 2, 3, 4), (6, 2, 2, 3), {"lhs_begin": 1, "rhs_end": 3}, (1, 6, 2, 2)),  # TVM's docstring example
    ((6, 4), (2, 3, 5), {"lhs_end": 1, "rhs_end": 2}, (2, 3, 4)),
    ((6, 4), (5, 2, 3), {"lhs_end": -1, "rhs_begin": -2}, (2, 3, 4)),    # negative positions
    ((Q, 16), (Q, Q, 16), {}, (Q, Q, 16)),                                # symbolic: not checked
])
def test_reshape_like(lshape, rshape, attrs, oshape):
    assert rel("reshape_like", T(lshape, "int8"), T(rshape), **attrs).shape == oshape
    if Q not in lshape:
        x, like = rand(lshape, "int8"), rand(rshape)
        np.testing.assert_array_equal(run("reshape_like", x, like, **attrs), np.reshape(x, oshape))


def test_reshape_like_errors():
    fails("reshape_like", T((6, 4)), T((2, 3)), match=r"cannot reshape a tensor of shape \(6, 4\) \(24 elements\) "
          r"into \(2, 3\) \(6 elements\)")
    fails("reshape_like", T((6, 4)), T((2, 3)), lhs_end=5, match="lhs_end 5 is out of range for rank 2")
    fails("reshape_like", T((6, 4)), U(T((2,))), match="argument `shape_like` must be a tensor")


# ------------------------------------------------------------------ transpose


@pytest.mark.parametrize("ishape, axes, oshape", [
    ((2, 3, 4), (2, 0, 1), (4, 2, 3)),
    ((2, Q, 4), (2, 0, 1), (4, 2, Q)),
    ((2, 3, 4), None, (4, 3, 2)),
    ((2, 3, 4), (-1, 0, -2), (4, 2, 3)),
    ((5,), None, (5,)),
    ((), None, ()),
])
def test_transpose(ishape, axes, oshape):
    assert_type(rel("transpose", T(ishape, "int64"), axes=axes), oshape, "int64")
    if Q in ishape:
        return
    x = rand(ishape)
    out = run("transpose", x, axes=axes)
    perm = list(reversed(range(x.ndim))) if axes is None else [a % x.ndim for a in axes]
    for idx in np.ndindex(*out.shape):  # out[i0, i1, ...] = x[i at position perm[k] = k]
        src = [0] * x.ndim
        for k, p in enumerate(perm):
            src[p] = idx[k]
        assert out[idx] == x[tuple(src)]


@pytest.mark.parametrize("axes, match", [
    ((0, 1), r"transpose axes \[0, 1\] have 2 elements, but the data has rank 3"),
    ((0, 1, 3), r"axis in transpose axes \[0, 1, 3\]: 3 is out of range for a tensor of rank 3"),
    ((0, 1, -4), "-4 is out of range"),
    ((0, 1, -3), r"transpose axes \[0, 1, -3\] name axis 0 twice"),
    ((), "have 0 elements"),
])
def test_transpose_errors(axes, match):
    fails("transpose", T((2, 3, 4)), axes=axes, match=match)


@needs_ort
@pytest.mark.parametrize("axes", [(1, 0, 2), (2, 0, 1), None])
def test_transpose_onnx(axes):
    x = rand((2, 3, 4))
    kw = {} if axes is None else {"perm": list(axes)}
    (want,) = onnx_run("Transpose", [x], **kw)
    np.testing.assert_array_equal(run("transpose", x, axes=axes), want)


# ------------------------------------------------------------------ squeeze


@pytest.mark.parametrize("ishape, axis, oshape", [
    ((1, 3, 1), None, (3,)),
    ((1, 3, 1), (0,), (3, 1)),
    ((1, 3, 1), (-1,), (1, 3)),
    ((1, 3, 1), (0, 2), (3,)),
    ((1, 3, 1), (), (1, 3, 1)),
    ((Q, 1, 3), (1,), (Q, 3)),
    ((Q, 1, 3), (0,), (1, 3)),  # a `?` dimension may be squeezed: it must be 1 at run time
    ((1, 1), None, ()),
])
def test_squeeze(ishape, axis, oshape):
    assert_type(rel("squeeze", T(ishape, "bool"), axis=axis), oshape, "bool")
    if Q not in ishape:
        x = rand(ishape)
        np.testing.assert_array_equal(run("squeeze", x, axis=axis), x.reshape(oshape))


@pytest.mark.parametrize("ishape, axis, match", [
    ((Q, 1), None, r"squeeze without `axis` needs a static shape, got \(\?, 1\)"),
    ((1, 3), (1,), r"cannot squeeze axis 1 of shape \(1, 3\): its dimension is 3, not 1"),
    ((1, 3), (2,), "squeeze axis 2 is out of range for a tensor of rank 2"),
    ((1, 3), (-3,), "squeeze axis -3 is out of range"),
])
def test_squeeze_errors(ishape, axis, match):
    fails("squeeze", T(ishape), axis=axis, match=match)


@needs_ort
@pytest.mark.parametrize("axis", [(0,), (0, 2), None])
def test_squeeze_onnx(axis):
    x = rand((1, 3, 1))
    (want,) = onnx_run("Squeeze", [x] if axis is None else [x, i64(*axis)])
    np.testing.assert_array_equal(run("squeeze", x, axis=axis), want)


# ------------------------------------------------------------------ expand_dims


@pytest.mark.parametrize("axis, num_newaxis, oshape", [
    (0, 1, (1, 2, 3)), (1, 1, (2, 1, 3)), (2, 1, (2, 3, 1)), (-1, 1, (2, 3, 1)), (-3, 1, (1, 2, 3)),
    (1, 2, (2, 1, 1, 3)), (-1, 3, (2, 3, 1, 1, 1)), (0, 0, (2, 3)),
])
def test_expand_dims(axis, num_newaxis, oshape):
    assert rel("expand_dims", T((2, 3)), axis=axis, num_newaxis=num_newaxis).shape == oshape
    x = rand((2, 3))
    out = run("expand_dims", x, axis=axis, num_newaxis=num_newaxis)
    pivot = axis if axis >= 0 else axis + 3
    index = (slice(None),) * pivot + (None,) * num_newaxis
    np.testing.assert_array_equal(out, x[index])


def test_expand_dims_dynamic_and_scalar():
    assert rel("expand_dims", T((Q, 3)), axis=1).shape == (Q, 1, 3)
    assert rel("expand_dims", T(()), axis=0, num_newaxis=2).shape == (1, 1)
    assert run("expand_dims", np.array(5, "int32"), axis=-1).shape == (1,)


@pytest.mark.parametrize("axis, num, match", [
    (3, 1, r"expand_dims axis 3 is out of range \[-3, 2\] for a tensor of rank 2"),
    (-4, 1, "expand_dims axis -4 is out of range"),
    (0, -1, "expand_dims needs num_newaxis >= 0, got -1"),
])
def test_expand_dims_errors(axis, num, match):
    fails("expand_dims", T((2, 3)), axis=axis, num_newaxis=num, match=match)


@needs_ort
def test_expand_dims_onnx():
    x = rand((2, 3))
    (want,) = onnx_run("Unsqueeze", [x, i64(1, 2)])
    np.testing.assert_array_equal(run("expand_dims", x, axis=1, num_newaxis=2), want)


# ------------------------------------------------------------------ concatenate


@pytest.mark.parametrize("shapes, axis, oshape", [
    (((2, 3), (4, 3)), 0, (6, 3)),
    (((2, 3), (2, 5), (2, 1)), -1, (2, 9)),
    (((2, 3),), 1, (2, 3)),
    (((Q, 3), (Q, Q)), 0, (Q, 3)),   # TVM's examples: a dynamic axis takes the known sizes
    (((1, 3), (1, Q)), 0, (2, Q)),   # ... a static one keeps `?`
    (((2, Q), (3, Q)), 0, (5, Q)),
    (((2, 3), (Q, 3)), 0, (Q, 3)),
])
def test_concatenate(shapes, axis, oshape):
    assert rel("concatenate", U(*(T(s, "int16") for s in shapes)), axis=axis).shape == oshape
    if any(Q in s for s in shapes):
        return
    xs = tuple(rand(s, "int16") for s in shapes)
    out = run("concatenate", xs, axis=axis)
    expected = np.empty(oshape, "int16")
    offset = 0
    for x in xs:  # place each input at its offset along the axis
        n = x.shape[axis]
        index = [slice(None)] * x.ndim
        index[axis] = slice(offset, offset + n)
        expected[tuple(index)] = x
        offset += n
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("data, axis, match", [
    (U(), 0, "concatenate needs at least one tensor, got an empty tuple"),
    (U(T((2, 3)), T((2,))), 0, r"concatenate needs tensors of the same rank, got Tensor\[\(2, 3\), float32\] and"),
    (U(T((2, 3)), T((2, 3), "int32")), 0, "data types float32 and int32 do not match"),
    (U(T((2, 3)), T((2, 3))), 2, "concatenate axis 2 is out of range for a tensor of rank 2"),
    (U(T((2, 3)), T((2, 4))), 0, r"same dimension 1 in all tensors, got shapes \(2, 3\), \(2, 4\)"),
    (U(T(()), T(())), 0, "concatenate axis 0 is out of range for a tensor of rank 0"),
    (T((2, 3)), 0, "argument `data` must be a tuple of tensors"),
])
def test_concatenate_errors(data, axis, match):
    fails("concatenate", data, axis=axis, match=match)


@needs_ort
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_onnx(axis):
    shapes = [(2, 3), (2, 3), (2, 3)]
    shapes = [tuple(d + k if i == axis % 2 else d for i, d in enumerate(s)) for k, s in enumerate(shapes)]
    xs = tuple(rand(s) for s in shapes)
    (want,) = onnx_run("Concat", list(xs), axis=axis)
    np.testing.assert_array_equal(run("concatenate", xs, axis=axis), want)


# ------------------------------------------------------------------ stack


@pytest.mark.parametrize("n, axis, oshape", [
    (3, 0, (3, 2, 4)), (3, 1, (2, 3, 4)), (3, 2, (2, 4, 3)), (3, -1, (2, 4, 3)), (3, -3, (3, 2, 4)), (1, 0, (1, 2, 4)),
])
def test_stack(n, axis, oshape):
    assert rel("stack", U(*[T((2, 4))] * n), axis=axis).shape == oshape
    xs = tuple(rand((2, 4)) for _ in range(n))
    out = run("stack", xs, axis=axis)
    pos = axis % 3
    for idx in np.ndindex(*oshape):
        k = idx[pos]
        assert out[idx] == xs[k][idx[:pos] + idx[pos + 1:]]


def test_stack_dynamic():
    assert rel("stack", U(T((Q, 3)), T((2, 3))), axis=1).shape == (Q, 2, 3)
    assert rel("stack", U(T(()), T(())), axis=0).shape == (2,)


@pytest.mark.parametrize("data, axis, match", [
    (U(T((2, 3)), T((2, 4))), 1, r"stack needs tensors of the same shape, got \(2, 3\) and \(2, 4\)"),
    (U(T((2, 3)), T((2, 3))), 3, r"stack axis 3 is out of range \[-3, 2\] for tensors of rank 2"),
    (U(T((2, 3)), T((2, 3))), -4, "stack axis -4 is out of range"),
    (U(), 0, "stack needs at least one tensor"),
    (U(T((2, 3)), T((6,))), 0, "stack needs tensors of the same rank"),
    (U(T((2,)), T((2,), "float16")), 0, "data types float32 and float16 do not match"),
    (U(T((2,)), U()), 0, "must hold tensors"),
])
def test_stack_errors(data, axis, match):
    fails("stack", data, axis=axis, match=match)


# ------------------------------------------------------------------ split


@pytest.mark.parametrize("ishape, ios, axis, oshapes", [
    ((6, 4), 3, 0, [(2, 4)] * 3),
    ((6, 4), 2, -1, [(6, 2)] * 2),
    ((6, 4), 1, 0, [(6, 4)]),
    ((6, 4), (1, 4), 0, [(1, 4), (3, 4), (2, 4)]),
    ((6, 4), (), 1, [(6, 4)]),
    ((6, 4), (3,), 1, [(6, 3), (6, 1)]),
    ((Q, 4), 2, 0, [(Q, 4)] * 2),
    ((Q, 4), (2, 3), 0, [(2, 4), (1, 4), (Q, 4)]),
    ((Q, 4), 2, 1, [(Q, 2)] * 2),
])
def test_split(ishape, ios, axis, oshapes):
    t = rel("split", T(ishape, "uint8"), indices_or_sections=ios, axis=axis)
    assert isinstance(t, TupleType)
    assert [f.shape for f in t.fields] == oshapes and {f.dtype for f in t.fields} == {"uint8"}
    if Q in ishape:
        return
    x = rand(ishape, "uint8")
    parts = run("split", x, indices_or_sections=ios, axis=axis)
    cuts = [0] + list(itertools.accumulate(s[axis] for s in oshapes))
    for part, lo, hi in zip(parts, cuts, cuts[1:]):
        expected = x[lo:hi] if axis == 0 else x[:, lo:hi]
        np.testing.assert_array_equal(part, expected)


@pytest.mark.parametrize("ishape, ios, axis, match", [
    ((), 1, 0, "cannot split a scalar"),
    ((6, 4), 4, 0, r"cannot split dimension 0 of shape \(6, 4\) into 4 equal sections"),
    ((6, 4), 0, 0, "split needs at least one section, got 0"),
    ((6, 4), (3, 2), 0, r"split indices \[3, 2\] must be positive and strictly ascending"),
    ((6, 4), (0, 2), 0, r"split indices \[0, 2\] must be positive"),
    ((6, 4), (2, 2), 0, "strictly ascending"),
    ((6, 4), (2, 6), 0, r"split indices \[2, 6\] must be below dimension 0 of shape \(6, 4\)"),
    ((6, 4), 2, 2, "split axis 2 is out of range for a tensor of rank 2"),
])
def test_split_errors(ishape, ios, axis, match):
    fails("split", T(ishape), indices_or_sections=ios, axis=axis, match=match)


@needs_ort
@pytest.mark.parametrize("ios, axis", [(3, 0), ((1, 4), 0), ((1,), 1), (2, 1)])
def test_split_onnx(ios, axis):
    x = rand((6, 4))
    parts = run("split", x, indices_or_sections=ios, axis=axis)
    if isinstance(ios, int):
        want = onnx_run("Split", [x], n_out=ios, axis=axis, num_outputs=ios)
    else:
        sizes = np.diff([0, *ios, x.shape[axis]])
        want = onnx_run("Split", [x, i64(*sizes)], n_out=len(sizes), axis=axis)
    assert len(parts) == len(want)
    for p, w in zip(parts, want):
        np.testing.assert_array_equal(p, w)


# ------------------------------------------------------------------ strided_slice


def _slice_loop(x, begin, stride, size, axis):
    """Explicit loop: out[..., k, ...] = x[..., begin + k * stride, ...] along `axis`."""
    out = np.empty(x.shape[:axis] + (size,) + x.shape[axis + 1:], x.dtype)
    for k in range(size):
        src = [slice(None)] * x.ndim
        dst = [slice(None)] * x.ndim
        src[axis], dst[axis] = begin + k * stride, k
        out[tuple(dst)] = x[tuple(src)]
    return out


SLICES = [
    # shape, attrs, result shape, [(axis, first index, stride)] the result takes
    ((4, 5), dict(begin=(1,), end=(3,), strides=(1,)), (2, 5), [(0, 1, 1)]),
    ((10,), dict(begin=(8,), end=(1,), strides=(-2,)), (4,), [(0, 8, -2)]),
    ((10,), dict(begin=(-3,), end=(-1,), strides=(1,)), (2,), [(0, 7, 1)]),
    ((10,), dict(begin=(0,), end=(100,), strides=(3,)), (4,), [(0, 0, 3)]),
    ((10,), dict(begin=(-100,), end=(4,), strides=(1,)), (4,), [(0, 0, 1)]),
    ((5,), dict(begin=(10,), end=(-100,), strides=(-1,)), (5,), [(0, 4, -1)]),
    # TVM quirk: a missing end for a negative stride is 0, so element 0 is left out
    ((5,), dict(begin=(), end=(), strides=(-1,)), (4,), [(0, 4, -1)]),
    ((5,), dict(begin=(), end=(), strides=()), (5,), [(0, 0, 1)]),
    ((4, 6), dict(begin=(1, 0), end=(2, -1), strides=(5, 5), slice_mode="size"), (2, 6), [(0, 1, 1), (1, 0, 1)]),
    ((4, 6), dict(begin=(-3,), end=(2,), strides=(-7,), slice_mode="size"), (2, 6), [(0, 1, 1)]),
    ((3, 4, 5), dict(begin=(1,), end=(3,), strides=(1,), axes=(2,)), (3, 4, 2), [(2, 1, 1)]),
    ((3, 4, 5), dict(begin=(3, 0), end=(0, 4), strides=(-1, 2), axes=(1, 0)), (2, 3, 5), [(0, 0, 2), (1, 3, -1)]),
    ((4, 6), dict(begin=(3, 5), end=(3, 5), strides=(1, 1)), (0, 0), [(0, 3, 1), (1, 5, 1)]),
]


@pytest.mark.parametrize("shape, attrs, oshape, takes", SLICES)
def test_strided_slice(shape, attrs, oshape, takes):
    attrs = {"axes": None, **attrs}
    assert rel("strided_slice", T(shape), **attrs).shape == oshape
    x = rand(shape)
    out = run("strided_slice", x, **attrs)
    expected = x
    for axis, first, stride in takes:
        expected = _slice_loop(expected, first, stride, oshape[axis], axis)
    np.testing.assert_array_equal(out, expected.reshape(oshape))


def test_strided_slice_dynamic():
    assert rel("strided_slice", T((Q, 5)), begin=(0, 1), end=(2, 3), strides=(1,), axes=None).shape == (Q, 2)
    assert rel("strided_slice", T((Q, 5)), begin=(1,), end=(2,), strides=(1,), axes=(1,)).shape == (Q, 1)


@pytest.mark.parametrize("attrs, match", [
    (dict(begin=None), "strided_slice needs `begin`"),
    (dict(strides=None), "strided_slice needs `strides`"),
    (dict(slice_mode="step"), 'slice_mode must be "end" or "size", got "step"'),
    (dict(axes=(0, 1)), r"strided_slice axes \[0, 1\], begin \[1\], end \[3\] and strides \[1\] must have the same"),
    (dict(axes=(2,)), r"strided_slice axis 2 is out of range \[0, 2\) for shape \(4, 5\)"),
    (dict(axes=(-1,)), "strided_slice axis -1 is out of range"),
    (dict(begin=(0, 0), end=(1, 1), strides=(1, 1), axes=(1, 1)), r"axes \[1, 1\] name an axis twice"),
    (dict(begin=(0, 0, 0)), r"strided_slice begin \[0, 0, 0\] has more values than the rank 2"),
    (dict(strides=(0,)), "strided_slice stride for axis 0 is 0"),
    (dict(begin=(3,), end=(1,)), r"begin 3 and end 1 with stride 1 are invalid for axis 0 of shape \(4, 5\)"),
    (dict(begin=(1,), end=(3,), strides=(-1,)), "begin 1 and end 3 with stride -1 are invalid"),
    # as in TVM: in "size" mode end = begin + size before either is canonicalised, so a
    # slice of size 1 from -1 ends at 0, before its begin (3)
    (dict(begin=(-1,), end=(1,), slice_mode="size"), "begin -1 and end 0 with stride 1 are invalid for axis 0"),
])
def test_strided_slice_errors(attrs, match):
    fails("strided_slice", T((4, 5)), match=match, **{"begin": (1,), "end": (3,), "strides": (1,), "axes": None,
                                                      **attrs})


@needs_ort
@pytest.mark.parametrize("begin, end, strides, axes", [
    ((1, 0), (3, 5), (1, 2), None), ((8,), (1,), (-2,), (1,)), ((-3, 1), (-1, 100), (1, 1), (0, 1)),
    ((4,), (-100,), (-1,), (1,)), ((0,), (2,), (1,), (0,)),
])
def test_strided_slice_onnx(begin, end, strides, axes):
    x = rand((6, 10))
    out = run("strided_slice", x, begin=begin, end=end, strides=strides, axes=axes)
    onnx_axes = axes if axes is not None else tuple(range(len(begin)))
    (want,) = onnx_run("Slice", [x, i64(*begin), i64(*end), i64(*onnx_axes), i64(*strides)])
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------ take


@pytest.mark.parametrize("dshape, ishape, attrs, oshape", [
    ((3, 4), (2, 5), dict(), (2, 5)),
    ((3, 4, 5), (2,), dict(axis=1), (3, 2, 5)),
    ((3, 4, 5), (2, 2), dict(axis=-1), (3, 4, 2, 2)),
    ((3, 4, 5), (), dict(axis=0), (4, 5)),
    ((2, 4, 5), (2, 3), dict(axis=1, batch_dims=1), (2, 3, 5)),
    ((2, 4, 5), (2, 3), dict(axis=2, batch_dims=-1), (2, 4, 3)),
    ((Q, 4), (3,), dict(axis=1), (Q, 3)),
    ((3, 4), (Q, 2), dict(axis=0), (Q, 2, 4)),
])
def test_take_relation(dshape, ishape, attrs, oshape):
    assert_type(rel("take", T(dshape, "float16"), T(ishape, "int64"), **attrs), oshape, "float16")
    assert rel("take", T(dshape, "float16"), T(ishape, "uint8"), **attrs).dtype == "float16"


def _take_loop(data, indices, axis, batch_dims, fix):
    if axis is None:
        flat = data.reshape(-1)
        return np.array([flat[fix(int(i), flat.size)] for i in indices.reshape(-1)],
                        data.dtype).reshape(indices.shape)
    axis %= data.ndim
    oshape = data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:]
    out = np.empty(oshape, data.dtype)
    ni = indices.ndim - batch_dims
    for idx in np.ndindex(*oshape):
        pre, mid, post = idx[:axis], idx[axis:axis + ni], idx[axis + ni:]
        k = indices[pre[:batch_dims] + mid]
        out[idx] = data[pre + (fix(int(k), data.shape[axis]),) + post]
    return out


FIX = {"clip": lambda i, n: min(max(i, 0), n - 1), "wrap": lambda i, n: i % n, "fast": lambda i, n: i}


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize("dshape, ishape, axis, batch_dims", [
    ((3, 4), (2, 5), None, 0), ((3, 4, 5), (2, 3), 1, 0), ((3, 4, 5), (), -1, 0), ((2, 4, 5), (2, 3), 1, 1),
    ((2, 3, 4, 5), (2, 3, 2), 3, 2),
])
def test_take(mode, dshape, ishape, axis, batch_dims):
    data = rand(dshape)
    n = data.size if axis is None else dshape[axis]
    lo, hi = (0, n) if mode == "fast" else (-2 * n, 2 * n)
    indices = RNG.integers(lo, hi, size=ishape).astype("int32")
    out = run("take", data, indices, axis=axis, batch_dims=batch_dims, mode=mode)
    np.testing.assert_array_equal(out, _take_loop(data, indices, axis, batch_dims, FIX[mode]))


@pytest.mark.parametrize("dshape, ishape, idtype, attrs, match", [
    ((3, 4), (2,), "float32", dict(), "take needs integer indices, got dtype float32"),
    ((3, 4), (2,), "int32", dict(mode="raise"), 'take mode must be "clip", "wrap" or "fast", got "raise"'),
    ((3, 4), (2,), "int32", dict(axis=2), "take axis 2 is out of range for a tensor of rank 2"),
    ((3, 4), (2,), "int32", dict(axis=-3), "take axis -3 is out of range"),
    ((), (2,), "int32", dict(axis=0), "take axis 0 is out of range for a tensor of rank 0"),
    ((3, 4), (3, 2), "int32", dict(axis=0, batch_dims=1), "take batch_dims 1 must not exceed the axis 0"),
    ((3, 4), (3, 2), "int32", dict(axis=1, batch_dims=3), "take batch_dims 3 is out of range for indices of rank 2"),
    ((3, 4), (2, 2), "int32", dict(axis=1, batch_dims=1),
     r"same leading dimensions, got data \(3, 4\) and indices \(2, 2\)"),
])
def test_take_errors(dshape, ishape, idtype, attrs, match):
    fails("take", T(dshape), T(ishape, idtype), match=match, **attrs)


@needs_ort
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_onnx(axis):
    data = rand((3, 4, 5))
    n = data.shape[axis]
    indices = RNG.integers(-n, n, size=(2, 3)).astype("int64")  # ONNX counts negatives from the end
    (want,) = onnx_run("Gather", [data, indices], axis=axis)
    np.testing.assert_array_equal(run("take", data, indices, axis=axis, mode="fast"), want)
    np.testing.assert_array_equal(run("take", data, indices, axis=axis, mode="wrap"), want)


# ------------------------------------------------------------------ gather


@pytest.mark.parametrize("dshape, ishape, axis, oshape", [
    ((3, 4), (2, 4), 0, (2, 4)),
    ((3, 4), (3, 7), 1, (3, 7)),
    ((3, 4), (3, 1), -1, (3, 1)),
    ((Q, 4), (2, 4), 0, (2, 4)),
    ((3, 4), (3, Q), 1, (3, Q)),
    ((3, 4), (Q, 4), 1, (Q, 4)),
])
def test_gather(dshape, ishape, axis, oshape):
    assert rel("gather", T(dshape, "int8"), T(ishape, "int32"), axis=axis).shape == oshape
    if Q in dshape or Q in ishape:
        return
    data = rand(dshape, "int8")
    indices = RNG.integers(0, dshape[axis], size=ishape).astype("int64")
    out = run("gather", data, indices, axis=axis)
    for idx in np.ndindex(*ishape):
        src = list(idx)
        src[axis] = indices[idx]
        assert out[idx] == data[tuple(src)]


@pytest.mark.parametrize("dshape, ishape, idtype, axis, match", [
    ((3, 4), (2, 4), "uint32", 0, "gather needs signed integer indices, got dtype uint32"),
    ((3, 4), (2, 4), "float32", 0, "gather needs signed integer indices, got dtype float32"),
    ((3, 4), (2, 4), "int32", None, "gather needs an `axis`"),
    ((3, 4), (2,), "int32", 0, r"gather needs data and indices of the same rank, got \(3, 4\) and \(2,\)"),
    ((3, 4), (2, 4), "int32", 2, "gather axis 2 is out of range for a tensor of rank 2"),
    ((3, 4), (2, 3), "int32", 0, r"gather needs indices \(2, 3\) to match data \(3, 4\) except along axis 0"),
    ((3, 4), (0, 4), "int32", 0, r"gather indices \(0, 4\) are empty along axis 0"),
])
def test_gather_errors(dshape, ishape, idtype, axis, match):
    fails("gather", T(dshape), T(ishape, idtype), axis=axis, match=match)


@needs_ort
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_onnx(axis):
    data = rand((3, 4, 5))
    ishape = tuple(6 if i == axis % 3 else d for i, d in enumerate(data.shape))
    indices = RNG.integers(0, data.shape[axis], size=ishape).astype("int64")
    (want,) = onnx_run("GatherElements", [data, indices], axis=axis)
    np.testing.assert_array_equal(run("gather", data, indices, axis=axis), want)


# ------------------------------------------------------------------ broadcast_to


@pytest.mark.parametrize("ishape, shape", [
    ((3, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 2)), ((2, 3), (2, 3)), ((1, 3), (0, 3)),
])
def test_broadcast_to(ishape, shape):
    assert_type(rel("broadcast_to", T(ishape, "int32"), shape=shape), shape, "int32")
    x = rand(ishape, "int32")
    out = run("broadcast_to", x, shape=shape)
    lead = len(shape) - len(ishape)
    for idx in np.ndindex(*shape):
        src = tuple(0 if d == 1 else i for i, d in zip(idx[lead:], ishape))
        assert out[idx] == x[src]


def test_broadcast_to_dynamic():
    assert rel("broadcast_to", T((Q, 1)), shape=(2, 3)).shape == (2, 3)
    assert rel("broadcast_to", T((Q, 1), "bool"), shape=(2, 3)).dtype == "bool"


@pytest.mark.parametrize("ishape, shape, match", [
    ((3,), (4,), r"cannot broadcast shape \(3,\) to \(4,\)"),
    ((2, 3), (3,), r"cannot broadcast shape \(2, 3\) to \(3,\)"),
    ((3, 1), (3, 1, 4), r"cannot broadcast shape \(3, 1\) to \(3, 1, 4\)"),
    ((3,), None, "broadcast_to needs a `shape`"),
    ((3,), (-1, 3), r"broadcast_to shape \[-1, 3\] has a negative dimension"),
])
def test_broadcast_to_errors(ishape, shape, match):
    fails("broadcast_to", T(ishape), shape=shape, match=match)


@needs_ort
@pytest.mark.parametrize("ishape, shape", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 1), (2, 3, 4))])
def test_broadcast_to_onnx(ishape, shape):
    x = rand(ishape)
    (want,) = onnx_run("Expand", [x, i64(*shape)])
    np.testing.assert_array_equal(run("broadcast_to", x, shape=shape), want)


# ------------------------------------------------------------------ tile


@pytest.mark.parametrize("ishape, reps, oshape", [
    ((2, 3), (2, 2), (4, 6)), ((2, 3), (2,), (2, 6)), ((2, 3), (2, 1, 1), (2, 2, 3)), ((2, 3), (), (2, 3)),
    ((), (3,), (3,)),
])
def test_tile(ishape, reps, oshape):
    assert rel("tile", T(ishape), reps=reps).shape == oshape
    x = rand(ishape)
    out = run("tile", x, reps=reps)
    for idx in np.ndindex(*oshape):  # the output index modulo the input shape (aligned right)
        src = tuple(i % d for i, d in zip(idx[len(oshape) - len(ishape):], ishape))
        assert out[idx] == x[src]


def test_tile_dynamic():
    assert rel("tile", T((Q, 3)), reps=(2, 2)).shape == (Q, 6)
    assert rel("tile", T((Q, 3)), reps=(3,)).shape == (Q, 9)
    assert rel("tile", T((Q,)), reps=(1,)).shape == (Q,)


@pytest.mark.parametrize("reps", [(0, 1), (2, -1)])
def test_tile_errors(reps):
    fails("tile", T((2, 3)), reps=reps, match=rf"tile reps \[{reps[0]}, {reps[1]}\] must all be positive")


@needs_ort
def test_tile_onnx():
    x = rand((2, 3))
    (want,) = onnx_run("Tile", [x, i64(3, 2)])
    np.testing.assert_array_equal(run("tile", x, reps=(3, 2)), want)


# ------------------------------------------------------------------ repeat


@pytest.mark.parametrize("repeats, axis, oshape", [(2, 1, (2, 6)), (3, -2, (6, 3)), (1, 0, (2, 3))])
def test_repeat(repeats, axis, oshape):
    assert rel("repeat", T((2, 3)), repeats=repeats, axis=axis).shape == oshape
    x = rand((2, 3))
    out = run("repeat", x, repeats=repeats, axis=axis)
    a = axis % 2
    for idx in np.ndindex(*oshape):
        src = list(idx)
        src[a] //= repeats
        assert out[idx] == x[tuple(src)]


def test_repeat_dynamic():
    assert rel("repeat", T((Q, 3)), repeats=2, axis=0).shape == (Q, 3)
    assert rel("repeat", T((Q, 3)), repeats=2, axis=1).shape == (Q, 6)


@pytest.mark.parametrize("repeats, axis, match", [
    (0, 0, "repeat needs repeats >= 1, got 0"),
    (2, None, "repeat needs an `axis`"),
    (2, 2, "repeat axis 2 is out of range for a tensor of rank 2"),
    (2, -3, "repeat axis -3 is out of range"),
])
def test_repeat_errors(repeats, axis, match):
    fails("repeat", T((2, 3)), repeats=repeats, axis=axis, match=match)


# ------------------------------------------------------------------ full, zeros, ones


@pytest.mark.parametrize("fill, dtype, shape, expected", [
    (np.array(2.5, "float32"), "", (2, 3), 2.5),
    (np.array(2.7, "float32"), "int32", (4,), 2),  # cast truncates, as TVM's cast
    (np.array(-3, "int64"), "float16", (2, 1), -3.0),
    (np.array(True), "", (), True),
])
def test_full(fill, dtype, shape, expected):
    t = rel("full", type_of(fill), shape=shape, dtype=dtype)
    assert t.shape == shape and t.dtype == (dtype or str(fill.dtype))
    out = run("full", fill, shape=shape, dtype=dtype)
    assert all(out[idx] == expected for idx in np.ndindex(*shape))


@pytest.mark.parametrize("fill, shape, match", [
    (T((1,)), (2,), r"full needs a scalar fill_value, got Tensor\[\(1\), float32\]"),
    (T(()), None, "full needs a `shape`"),
    (T(()), (2, -2), "full shape .* has a negative dimension"),
])
def test_full_errors(fill, shape, match):
    fails("full", fill, shape=shape, match=match)


@pytest.mark.parametrize("name, value", [("zeros", 0), ("ones", 1)])
@pytest.mark.parametrize("shape, dtype", [((2, 3), "float32"), ((), "int8"), ((0, 4), "bool"), ((5,), "uint16")])
def test_zeros_ones(name, value, shape, dtype):
    assert_type(rel(name, shape=shape, dtype=dtype), shape, dtype)
    out = run(name, shape=shape, dtype=dtype)
    assert all(out[idx] == value for idx in np.ndindex(*shape))


@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_zeros_ones_errors(name):
    fails(name, shape=(2,), dtype="", match=f"{name} needs a `dtype`")
    fails(name, shape=None, dtype="float32", match=f"{name} needs a `shape`")
    fails(name, shape=(-1,), dtype="float32", match=rf"{name} shape \[-1\] has a negative dimension")


@needs_ort
@pytest.mark.parametrize("name, fill", [("zeros", 0.0), ("ones", 1.0), ("full", 3.5)])
def test_full_onnx(name, fill):
    shape = (2, 3, 4)
    value = numpy_helper.from_array(np.array([fill], "float32"))
    (want,) = onnx_run("ConstantOfShape", [i64(*shape)], out_dtype="float32", value=value)
    if name == "full":
        out = run("full", np.array(fill, "float32"), shape=shape)
    else:
        out = run(name, shape=shape, dtype="float32")
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------ arange


def _scalars(dtype, *values):
    return [np.array(v, dtype) for v in values]


@pytest.mark.parametrize("dtype, start, stop, step, n", [
    ("int32", 0, 10, 3, 4), ("float32", 1, 5, 1.5, 3), ("int64", 10, 0, -3, 4), ("float32", 0, 1, 0.1, 10),
    ("int8", -5, 5, 1, 10), ("float64", 2.5, -1, -0.5, 7),
])
def test_arange(dtype, start, stop, step, n):
    values = _scalars(dtype, start, stop, step)
    args = [T((), dtype)] * 3
    assert_type(rel("arange", *args, values=values, dtype=dtype), (n,), dtype)
    assert rel("arange", *args, dtype=dtype).shape == (Q,)  # values unknown
    assert rel("arange", *args, values=[values[0], None, values[2]], dtype=dtype).shape == (Q,)
    out = run("arange", *values, dtype=dtype)
    s, d = values[0].item(), values[2].item()
    expected = [s + k * d for k in range(n)]
    np.testing.assert_allclose(out.astype("float64"), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args, values, dtype, match", [
    ([T((), "int32")] * 3, None, "", "arange needs a `dtype`"),
    ([T((), "int32"), T((), "int64"), T((), "int32")], None, "int32",
     "arange `end` must be a scalar of the dtype int32, got int64"),
    ([T((2,), "int32")] + [T((), "int32")] * 2, None, "int32",
     r"arange `start` must be a scalar of the dtype int32, got Tensor\[\(2\), int32\]"),
    ([T((), "int32")] * 3, _scalars("int32", 0, 5, 0), "int32", "arange step is 0"),
    ([T((), "int32")] * 3, _scalars("int32", 0, 0, 1), "int32", "arange from 0 to 0 by 1 is empty"),
    ([T((), "int32")] * 3, _scalars("int32", 5, 0, 1), "int32", "arange from 5 to 0 by 1 is empty"),
])
def test_arange_errors(args, values, dtype, match):
    fails("arange", *args, values=values, dtype=dtype, match=match)


@needs_ort
@pytest.mark.parametrize("dtype, start, stop, step", [
    ("int32", 0, 10, 3), ("float32", 1, 5, 1.5), ("int64", 10, 0, -3), ("float32", -1, 1, 0.25),
])
def test_arange_onnx(dtype, start, stop, step):
    values = _scalars(dtype, start, stop, step)
    (want,) = onnx_run("Range", values)
    np.testing.assert_allclose(run("arange", *values, dtype=dtype), want, rtol=1e-6)


# ------------------------------------------------------------------ shape_of


@pytest.mark.parametrize("ishape, dtype, oshape, odtype", [
    ((2, 3, 4), "", (3,), "int32"), ((2, 3, 4), "int64", (3,), "int64"), ((Q, 3), "int32", (2,), "int32"),
    ((), "", (0,), "int32"),  # TVM types this as a scalar; its compute (and ours) give (0,)
])
def test_shape_of(ishape, dtype, oshape, odtype):
    assert_type(rel("shape_of", T(ishape), dtype=dtype), oshape, odtype)
    if Q not in ishape:
        out = run("shape_of", rand(ishape), dtype=dtype)
        assert list(out) == list(ishape)


@needs_ort
def test_shape_of_onnx():
    x = rand((2, 3, 4, 1))
    (want,) = onnx_run("Shape", [x], out_dtype="int64")
    np.testing.assert_array_equal(run("shape_of", x, dtype="int64"), want)


# ------------------------------------------------------------------ image.resize2d

ROI0 = (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("ishape, attrs, otype", [
    ((1, 3, 4, 5), dict(size=(8, 10)), T((1, 3, 8, 10))),
    ((1, 4, 5, 3), dict(size=(8, 10), layout="NHWC"), T((1, 8, 10, 3))),
    ((2, 3, 4, 5), dict(size=(2, 2), out_dtype="float16"), T((2, 3, 2, 2), "float16")),
    ((Q, 3, Q, Q), dict(size=(8, 10)), T((Q, 3, 8, 10))),
    ((1, Q, Q, 3), dict(size=(7, 1), layout="NHWC"), T((1, 7, 1, 3))),
    ((1, 3, 4, 5), dict(size=(8, 10), method="linear", rounding_method="banker"), T((1, 3, 8, 10))),
])
def test_resize2d_relation(ishape, attrs, otype):
    t = rel("image.resize2d", T(ishape), **{"roi": ROI0, **attrs})
    assert (t.shape, t.dtype) == (otype.shape, otype.dtype)


@pytest.mark.parametrize("ishape, attrs, match", [
    ((1, 3, 4, 5), dict(size=None), r"resize2d needs `size` as 2 non-negative values \(height, width\), got None"),
    ((1, 3, 4, 5), dict(size=(8,)), r"needs `size` .* got \[8\]"),
    ((1, 3, 4, 5), dict(size=(8, -1)), r"needs `size` .* got \[8, -1\]"),
    ((1, 3, 4, 5), dict(roi=None), r"needs `roi` as 4 values \(start_h, start_w, end_h, end_w\), got None"),
    ((1, 3, 4, 5), dict(roi=(0.0, 0.0, 1.0)), r"needs `roi` .* got \[0.0, 0.0, 1.0\]"),
    ((1, 3, 4, 5), dict(layout="NCWH"), 'image.resize2d layout must be one of "NCHW", "NHWC", got "NCWH"'),
    ((1, 3, 4), dict(), r"with layout NCHW needs a 4-D tensor, got Tensor\[\(1, 3, 4\), float32\]"),
    ((1, 3, 4, 5), dict(method="bilinear"), 'method must be one of "nearest_neighbor", "linear", "cubic", got "b'),
    ((1, 3, 4, 5), dict(coordinate_transformation_mode="corners"), 'coordinate_transformation_mode must be one of'),
    ((1, 3, 4, 5), dict(method="nearest_neighbor", rounding_method="banker"),
     'rounding_method must be one of "round", "round_prefer_floor", .*got "banker"'),
])
def test_resize2d_errors(ishape, attrs, match):
    fails("image.resize2d", T(ishape), match=match, **{"size": (8, 10), "roi": ROI0, **attrs})


def _resize_loop(x, size, layout="NCHW", method="linear", mode="half_pixel", rounding="round", alpha=-0.5,
                 exclude=0, extrapolation=0.0, roi=ROI0, out_dtype=""):
    """A per-pixel, float64 formulation of TVM's resize2d (ONNX's Resize with TVM's choices:
    TOPI epsilons, half-to-even `round`, integer division for whole asymmetric upscaling)."""
    img = x if layout == "NCHW" else x.transpose(0, 3, 1, 2)
    n, c, h, w = img.shape
    oh, ow = size
    out = np.empty((n, c, oh, ow), "float64")

    def coord(o, out_len, in_len, start, end):
        scale = in_len / out_len
        if mode == "half_pixel":
            return (o + 0.5) * scale - 0.5
        if mode == "pytorch_half_pixel":
            return (o + 0.5) * scale - 0.5 if out_len > 1 else 0.0
        if mode == "align_corners":
            return o * (in_len - 1) / (out_len - 1) if out_len > 1 else 0.0
        if mode == "asymmetric":
            return o * scale
        if mode == "tf_half_pixel_for_nn":
            return (o + 0.5) * scale
        if out_len > 1:
            return start * (in_len - 1) + o * (end - start) * (in_len - 1) / (out_len - 1)
        return 0.5 * (start + end) * (in_len - 1)

    def nearest(v, o, out_len, in_len):
        r = rounding or ("round" if mode == "align_corners" else "floor")
        if method == "nearest_neighbor" and mode == "asymmetric" and out_len % in_len == 0:
            return o // (out_len // in_len)
        if r == "round":
            return round(v)  # Python rounds half to even
        if r == "round_prefer_floor":
            return math.ceil(v - 0.5)
        if r == "round_prefer_ceil":
            return math.floor(v + 0.5)
        if r == "floor":
            return math.floor(v + 1e-5)
        return math.ceil(v - 1e-5)

    def cubic_w(t, base, in_len):
        a = alpha
        ws = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
              ((a + 2) * t - (a + 3)) * t * t + 1,
              ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
              ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
        if exclude:
            ws = [0.0 if not 0 <= base - 1 + i < in_len else wi for i, wi in enumerate(ws)]
            total = sum(ws)
            ws = [wi / total for wi in ws]
        return ws

    def px(b, ch, yy, xx):
        return float(img[b, ch, min(max(yy, 0), h - 1), min(max(xx, 0), w - 1)])

    for b, ch, oy, ox in itertools.product(range(n), range(c), range(oh), range(ow)):
        cy, cx = coord(oy, oh, h, roi[0], roi[2]), coord(ox, ow, w, roi[1], roi[3])
        if mode == "tf_crop_and_resize" and not (0 <= cy <= h - 1 and 0 <= cx <= w - 1):
            out[b, ch, oy, ox] = extrapolation
            continue
        if method == "nearest_neighbor":
            v = px(b, ch, nearest(cy, oy, oh, h), nearest(cx, ox, ow, w))
        elif method == "linear":
            y0, x0 = math.floor(cy), math.floor(cx)
            ty, tx = cy - y0, cx - x0
            v = ((px(b, ch, y0, x0) * (1 - tx) + px(b, ch, y0, x0 + 1) * tx) * (1 - ty)
                 + (px(b, ch, y0 + 1, x0) * (1 - tx) + px(b, ch, y0 + 1, x0 + 1) * tx) * ty)
        else:
            y0, x0 = math.floor(cy), math.floor(cx)
            wy, wx = cubic_w(cy - y0, y0, h), cubic_w(cx - x0, x0, w)
            v = sum(wy[j] * wx[i] * px(b, ch, y0 + j - 1, x0 + i - 1) for j in range(4) for i in range(4))
        out[b, ch, oy, ox] = v
    if layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return out


RESIZES = [
    # input shape, attributes (size given)
    ((1, 2, 4, 6), dict(size=(8, 12))),
    ((2, 1, 5, 4), dict(size=(3, 7), coordinate_transformation_mode="align_corners")),
    ((1, 2, 4, 4), dict(size=(6, 3), coordinate_transformation_mode="asymmetric")),
    ((1, 2, 4, 4), dict(size=(1, 3), coordinate_transformation_mode="pytorch_half_pixel")),
    ((1, 5, 4, 2), dict(size=(7, 5), layout="NHWC")),
    ((1, 2, 4, 4), dict(size=(8, 8), method="nearest_neighbor", rounding_method="")),
    ((1, 2, 3, 5), dict(size=(6, 10), method="nearest_neighbor", coordinate_transformation_mode="asymmetric")),
    ((1, 2, 8, 8), dict(size=(4, 2), method="nearest_neighbor", rounding_method="round_prefer_ceil")),
    ((1, 2, 6, 4), dict(size=(4, 6), method="nearest_neighbor", coordinate_transformation_mode="align_corners",
                        rounding_method="")),
    ((1, 2, 4, 4), dict(size=(8, 8), method="nearest_neighbor", coordinate_transformation_mode="tf_half_pixel_for_nn",
                        rounding_method="floor")),
    ((1, 2, 4, 5), dict(size=(8, 7), method="cubic")),
    ((1, 2, 4, 5), dict(size=(8, 7), method="cubic", cubic_alpha=-0.75, cubic_exclude=1)),
    ((1, 2, 5, 5), dict(size=(3, 3), method="cubic", coordinate_transformation_mode="align_corners")),
    ((1, 2, 4, 6), dict(size=(5, 5), coordinate_transformation_mode="tf_crop_and_resize",
                        roi=(0.2, -0.3, 1.2, 0.9), extrapolation_value=-7.0)),
    ((1, 2, 4, 6), dict(size=(5, 1), method="cubic", coordinate_transformation_mode="tf_crop_and_resize",
                        roi=(0.1, 0.3, 0.8, 0.5))),
    ((1, 3, 4, 4), dict(size=(6, 6), out_dtype="float64")),
]


@pytest.mark.parametrize("ishape, attrs", RESIZES)
def test_resize2d(ishape, attrs):
    x = rand(ishape)
    attrs = {"roi": ROI0, **attrs}
    out = run("image.resize2d", x, **attrs)
    keys = {"layout": "layout", "method": "method", "coordinate_transformation_mode": "mode",
            "rounding_method": "rounding", "cubic_alpha": "alpha", "cubic_exclude": "exclude",
            "extrapolation_value": "extrapolation", "roi": "roi"}
    want = _resize_loop(x, attrs["size"], **{keys[k]: v for k, v in attrs.items() if k in keys})
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_resize2d_int_division_ignores_rounding():
    """TOPI indexes a whole-factor asymmetric nearest upscale by integer division, so
    `round` does not round there: output column 3 of 6 reads input 1, not round(1.5) = 2."""
    x = np.arange(3, dtype="float32").reshape(1, 1, 1, 3)
    out = run("image.resize2d", x, size=(1, 6), roi=ROI0, method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric", rounding_method="round")
    np.testing.assert_array_equal(out.reshape(-1), [0, 0, 1, 1, 2, 2])
    out = run("image.resize2d", x, size=(1, 5), roi=ROI0, method="nearest_neighbor",
              coordinate_transformation_mode="asymmetric", rounding_method="round")
    np.testing.assert_array_equal(out.reshape(-1), [0, 1, 1, 2, 2])  # 3/5 steps: round(0.6) = 1 ...


def test_resize2d_integer_output_truncates():
    x = np.array([[[[0, 255]]]], "uint8")
    out = run("image.resize2d", x, size=(1, 4), roi=ROI0, coordinate_transformation_mode="align_corners")
    np.testing.assert_array_equal(out.reshape(-1), [0, 85, 170, 255])
    out = run("image.resize2d", x, size=(1, 3), roi=ROI0)  # half_pixel: 0, 127.5, 255
    np.testing.assert_array_equal(out.reshape(-1), [0, 127, 255])


ONNX_RESIZES = [
    # method, coordinate mode, rounding (TVM) / nearest_mode (ONNX), cubic alpha, exclude, input, size
    ("linear", "half_pixel", "", -0.75, 0, (1, 2, 4, 6), (8, 9)),
    ("linear", "half_pixel", "", -0.75, 0, (1, 2, 8, 6), (3, 4)),
    ("linear", "align_corners", "", -0.75, 0, (1, 2, 4, 6), (7, 3)),
    ("linear", "asymmetric", "", -0.75, 0, (2, 1, 4, 4), (6, 10)),
    ("linear", "pytorch_half_pixel", "", -0.75, 0, (1, 2, 4, 4), (1, 5)),
    ("nearest_neighbor", "asymmetric", "floor", -0.75, 0, (1, 2, 4, 6), (8, 9)),
    ("nearest_neighbor", "half_pixel", "round_prefer_floor", -0.75, 0, (1, 2, 4, 6), (8, 12)),
    ("nearest_neighbor", "half_pixel", "round_prefer_ceil", -0.75, 0, (1, 2, 8, 6), (4, 3)),
    ("nearest_neighbor", "align_corners", "round_prefer_ceil", -0.75, 0, (1, 2, 5, 5), (3, 9)),
    ("nearest_neighbor", "asymmetric", "ceil", -0.75, 0, (1, 2, 4, 4), (6, 2)),  # 4 -> 8 divides (TVM quirk)
    ("cubic", "half_pixel", "", -0.75, 0, (1, 2, 4, 5), (8, 7)),
    ("cubic", "half_pixel", "", -0.5, 1, (1, 2, 4, 5), (9, 3)),
    ("cubic", "align_corners", "", -0.75, 0, (1, 2, 5, 5), (3, 8)),
    ("cubic", "asymmetric", "", -0.5, 0, (1, 1, 4, 4), (8, 8)),
]


@needs_ort
@pytest.mark.parametrize("method, mode, rounding, alpha, exclude, ishape, size", ONNX_RESIZES)
def test_resize2d_onnx(method, mode, rounding, alpha, exclude, ishape, size):
    x = rand(ishape)
    out = run("image.resize2d", x, size=size, roi=ROI0, method=method, coordinate_transformation_mode=mode,
              rounding_method=rounding, cubic_alpha=alpha, cubic_exclude=exclude)
    onnx_mode = {"nearest_neighbor": "nearest"}.get(method, method)
    extra = {"nearest_mode": rounding} if method == "nearest_neighbor" else {}
    (want,) = onnx_run("Resize", [x, None, None, i64(*ishape[:2], *size)], mode=onnx_mode,
                       coordinate_transformation_mode=mode, cubic_coeff_a=alpha, exclude_outside=exclude, **extra)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@needs_ort
@pytest.mark.parametrize("method", ["linear", "nearest_neighbor"])
def test_resize2d_crop_onnx(method):
    x = rand((1, 2, 5, 6))
    roi = (0.2, -0.3, 1.2, 0.9)  # start_h, start_w, end_h, end_w
    out = run("image.resize2d", x, size=(4, 7), roi=roi, method=method,
              coordinate_transformation_mode="tf_crop_and_resize", rounding_method="round_prefer_ceil",
              extrapolation_value=-3.0)
    onnx_roi = np.array([0, 0, roi[0], roi[1], 1, 1, roi[2], roi[3]], "float32")
    extra = {"nearest_mode": "round_prefer_ceil"} if method == "nearest_neighbor" else {}
    (want,) = onnx_run("Resize", [x, onnx_roi, None, i64(1, 2, 4, 7)],
                       mode={"nearest_neighbor": "nearest"}.get(method, method),
                       coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0, **extra)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ through the text, type inference and interpreter


def test_text_type_inference_and_interpreter():
    """The calling conventions the consumers use: attributes from the parser, a tuple
    argument and a tuple result, constant values for arange, refs called with every attribute."""
    import irtool
    from irtool.exec.relay import interpret
    from irtool.text.relay_printer import format_type

    mod = irtool.parse("""
    def @main(%x: Tensor[(2, 6), float32], %i: Tensor[(3), int32]) {
      %0 = split(%x, indices_or_sections=[2, 5], axis=1);
      %1 = concatenate((%0.2, %0.0), axis=1);
      %2 = take(%1, %i, axis=1, mode="wrap");
      %3 = image.resize2d(expand_dims(%x, axis=0, num_newaxis=2), size=[1, 12], roi=[0f, 0f, 0f, 0f],
                          method="nearest_neighbor");
      (reshape(%2, newshape=[-1]), arange(0, 3, 1, dtype="int32"), transpose(%1, axes=None), %3, shape_of(%x),
       stack((%x, %x), axis=1), strided_slice(%x, begin=[1], end=[-100], strides=[-2], axes=[1]))
    }""", "t.ir")
    x = np.arange(12, dtype="float32").reshape(2, 6)
    outs = interpret(mod, [x, np.array([0, 4, -1], "int32")])  # checks every value against its type
    assert format_type(mod["main"].body.checked_type) == (
        "(Tensor[(6), float32], Tensor[(3), int32], Tensor[(3, 2), float32], Tensor[(1, 1, 1, 12), float32], "
        "Tensor[(2), int32], Tensor[(2, 2, 6), float32], Tensor[(2, 1), float32])")
    cat = np.concatenate([x[:, 5:], x[:, :2]], axis=1)
    np.testing.assert_array_equal(outs[0], cat[:, [0, 1, 2]].reshape(-1))
    np.testing.assert_array_equal(outs[1], [0, 1, 2])
    np.testing.assert_array_equal(outs[2], cat.T)
    np.testing.assert_array_equal(outs[3].reshape(-1), np.repeat(x[0], 2))
    np.testing.assert_array_equal(outs[4], [2, 6])
    np.testing.assert_array_equal(outs[5], np.stack([x, x], axis=1))
    np.testing.assert_array_equal(outs[6], x[:, 1:0:-2])
