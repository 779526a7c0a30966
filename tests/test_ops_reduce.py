"""The reduction family (irtool/ops/reduce.py) against TVM v0.19.

Declarations are checked against src/relay/op/tensor/reduce.cc (RELAY_REGISTER_REDUCE_OP and
friends, all kCommReduce) and include/tvm/relay/attrs/reduce.h (ReduceAttrs, ArgReduceAttrs,
VarianceAttrs: names, order, defaults). The relations follow GetReduceAxes / ReduceShapeImpl:
axis None or [] reduces every axis (exclude then has no effect), negative axes count from the
back, `exclude` reduces the complement; argmax/argmin give int32 and, like variance, reject
rank-0 data; variance's mean must have the rank of the data.

The references are checked against explicit Python loops over the reduced positions (with
TVM's combiners and identity elements: max starts from the lowest finite value), and where ONNX
has the operator against onnxruntime. Each reference result must have exactly the shape and
dtype the relation gives.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

from irtool.ir import ANY, TupleType
from irtool.ops import OpPattern, all_ops, lookup

INF, NAN = math.inf, math.nan
REDUCERS = ["sum", "mean", "max", "min", "prod"]
ARG_REDUCERS = ["argmax", "argmin"]
ALL = REDUCERS + ARG_REDUCERS + ["variance"]
DTYPES = ["float32", "float64", "int32", "int64"]


# ------------------------------------------------------------------ helpers

from op_helpers import T, assert_type, attrs_of, onnx_run, rel, rel_error  # noqa: E402


def data_types(name, shape, dtype="float32"):
    """Argument types of a call on data of this shape (variance gets a keepdims-shaped mean)."""
    if name == "variance":
        return [T(shape, dtype), T(tuple(1 for _ in shape), dtype)]
    return [T(shape, dtype)]


def run(name, *arrays, **attrs):
    """The registry's reference, checked to have exactly the type the relation gives."""
    op = lookup(name)
    a = attrs_of(name, attrs)
    with np.errstate(all="ignore"):
        out = op.ref(*arrays, **dict(a.items()))
    t = op.type_rel([T(x.shape, x.dtype.name) for x in arrays], a)
    assert isinstance(out, np.ndarray)
    assert out.shape == t.shape and out.dtype.name == t.dtype, (out.shape, out.dtype, t)
    return out


def reduced_axes(ndim, axis, exclude):
    """The axes TVM reduces, computed here independently of irtool's `reduce_axes`."""
    if axis is None or axis == ():
        return list(range(ndim))
    listed = {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    return [i for i in range(ndim) if (i in listed) != exclude]


def loop_reduce(x, axis, keepdims, exclude, fn, otype, *, with_index=False):
    """fn(values) for each output position, the values taken in row-major order of the reduced axes."""
    axes = reduced_axes(x.ndim, axis, exclude)
    kept = [i for i in range(x.ndim) if i not in axes]
    results = []
    for out_idx in itertools.product(*(range(x.shape[i]) for i in kept)):
        values = []
        for red_idx in itertools.product(*(range(x.shape[i]) for i in axes)):
            full = [0] * x.ndim
            for i, v in zip(kept, out_idx):
                full[i] = v
            for i, v in zip(axes, red_idx):
                full[i] = v
            values.append((tuple(full), x[tuple(full)].item()) if with_index else x[tuple(full)].item())
        results.append(fn(values))
    shape = [1 if i in axes else x.shape[i] for i in range(x.ndim)] if keepdims else [x.shape[i] for i in kept]
    with np.errstate(all="ignore"):
        return np.array(results, dtype=otype).reshape(shape)


def check(actual, expected, rtol=0.0):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, expected.dtype)
    if actual.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


RNG = np.random.default_rng(20240519)
HALVES = RNG.integers(-6, 7, size=(2, 3, 4)) / 2  # many ties, sums exact in float32 and float64
SMALL_INTS = RNG.integers(-9, 10, size=(2, 3, 4))
TINY_INTS = RNG.integers(-2, 3, size=(2, 3, 4))  # products of 24 stay inside int32


def data(dtype, *, tiny=False):
    if dtype.startswith("float"):
        return HALVES.astype(dtype)
    return (TINY_INTS if tiny else SMALL_INTS).astype(dtype)


# ------------------------------------------------------------------ declarations vs TVM

BASE = [("axis", "ints?", None), ("keepdims", "bool", False)]
DECLS = {
    **{n: (("data",), BASE + [("exclude", "bool", False)]) for n in REDUCERS},
    **{n: (("data",), BASE + [("select_last_index", "bool", False), ("exclude", "bool", False)])
       for n in ARG_REDUCERS},
    "variance": (("data", "mean"), BASE + [("exclude", "bool", False), ("unbiased", "bool", False)]),
}


def test_family_is_exactly_the_tested_ops():
    mine = {n for n, op in all_ops().items() if op.type_rel.__module__ == "irtool.ops.reduce"}
    assert mine == set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_declaration_matches_tvm(name):
    op = lookup(name)
    args, attrs = DECLS[name]
    assert op.name == name and op.args == args
    assert [(a.name, a.kind, a.default) for a in op.attrs] == attrs
    assert op.pattern == OpPattern.COMM_REDUCE
    assert op.relax_name == "relax." + name
    assert op.ref is not None


def test_attributes():
    assert dict(attrs_of("sum", {}).items()) == {"axis": None, "keepdims": False, "exclude": False}
    assert attrs_of("sum", {"axis": 1})["axis"] == (1,)
    assert attrs_of("sum", {"axis": (2, -1)})["axis"] == (2, -1)
    assert lookup("sum").non_default_attrs(attrs_of("sum", {"axis": (1,)})) == [("axis", (1,))]
    assert lookup("argmax").non_default_attrs(attrs_of("argmax", {"select_last_index": True})) == \
        [("select_last_index", True)]
    assert lookup("variance").non_default_attrs(attrs_of("variance", {"unbiased": True})) == [("unbiased", True)]


# ------------------------------------------------------------------ type relations

SHAPES = [
    ((2, 3, 4), {}, ()),
    ((2, 3, 4), {"keepdims": True}, (1, 1, 1)),
    ((2, 3, 4), {"axis": ()}, ()),
    ((2, 3, 4), {"axis": (), "keepdims": True}, (1, 1, 1)),
    ((2, 3, 4), {"axis": 1}, (2, 4)),
    ((2, 3, 4), {"axis": (1,), "keepdims": True}, (2, 1, 4)),
    ((2, 3, 4), {"axis": (-1,)}, (2, 3)),
    ((2, 3, 4), {"axis": (-3, 2)}, (3,)),
    ((2, 3, 4), {"axis": (2, 0), "keepdims": True}, (1, 3, 1)),
    ((2, 3, 4), {"axis": (1,), "exclude": True}, (3,)),
    ((2, 3, 4), {"axis": (-1, 0), "exclude": True, "keepdims": True}, (2, 1, 4)),
    ((2, 3, 4), {"axis": (0, 1, 2), "exclude": True}, (2, 3, 4)),       # nothing left to reduce
    ((2, 3, 4), {"axis": (0, 1, 2), "exclude": True, "keepdims": True}, (2, 3, 4)),
    ((2, 3, 4), {"exclude": True}, ()),                                  # axis None: all, exclude or not
    ((2, 3, 4), {"axis": (), "exclude": True}, ()),
    ((ANY, 3, ANY), {"axis": (1,)}, (ANY, ANY)),
    ((ANY, 3, ANY), {"axis": (0,), "keepdims": True}, (1, 3, ANY)),
    ((ANY, 3, ANY), {"axis": (0,), "exclude": True}, (ANY,)),
    ((0, 3), {"axis": (0,)}, (3,)),
    ((5,), {}, ()),
    ((5,), {"axis": (0,), "keepdims": True}, (1,)),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape,attrs,out", SHAPES)
def test_reduce_relation_shapes(name, shape, attrs, out):
    dtype = "int32" if name in ARG_REDUCERS else "float32"
    assert_type(rel(name, *data_types(name, shape), **attrs), out, dtype)


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("dtype", DTYPES + ["bool", "float16", "uint8"])
def test_reduce_relation_keeps_dtype(name, dtype):
    assert_type(rel(name, T((2, 3), dtype), axis=1), (2,), dtype)


@pytest.mark.parametrize("name", REDUCERS)
def test_reduce_relation_rank0(name):
    # ReduceRel accepts rank 0 (GetReduceAxes gives no axis, the shape is kept).
    assert_type(rel(name, T((), "int64")), (), "int64")
    assert_type(rel(name, T((), "int64"), axis=(), keepdims=True), (), "int64")
    assert rel_error(name, T(()), axis=0) == "axis 0 is out of bounds for a tensor of rank 0"


@pytest.mark.parametrize("name", ARG_REDUCERS)
@pytest.mark.parametrize("dtype", DTYPES + ["bool", "float16", "uint8"])
def test_arg_reduce_relation_is_int32(name, dtype):
    # GenericReduceRel: the dtype of the shape's first dimension, int32 for Relay shapes.
    assert_type(rel(name, T((2, ANY), dtype), axis=1), (2,), "int32")
    assert_type(rel(name, T((2, 3), dtype), keepdims=True, select_last_index=True), (1, 1), "int32")


@pytest.mark.parametrize("name", ARG_REDUCERS)
def test_arg_reduce_relation_rejects_rank0(name):
    # GenericReduceRel: ICHECK(data->shape.size() != 0).
    assert rel_error(name, T((), "float32")) == "cannot reduce a rank-0 tensor float32 to an index"


@pytest.mark.parametrize("name", ALL)
def test_reduce_relation_axis_errors(name):
    shape = (2, 3, 4)
    assert rel_error(name, *data_types(name, shape), axis=3) == "axis 3 is out of bounds for a tensor of rank 3"
    assert rel_error(name, *data_types(name, shape), axis=(0, -4)) == \
        "axis -4 is out of bounds for a tensor of rank 3"
    assert rel_error(name, *data_types(name, shape), axis=(5,), exclude=True) == \
        "axis 5 is out of bounds for a tensor of rank 3"
    # TVM does not check duplicates (ReduceShapeImpl then writes past its output); irtool rejects them.
    assert rel_error(name, *data_types(name, shape), axis=(1, 1)) == "duplicate axes in [1, 1]"
    assert rel_error(name, *data_types(name, shape), axis=(1, -2), exclude=True) == "duplicate axes in [1, -2]"
    assert rel_error(name, TupleType([T((2,))]), *data_types(name, shape)[1:]) == \
        "argument `data` must be a tensor, got (Tensor[(2), float32],)"


def test_variance_relation():
    data, mean = T((2, 3, 4)), T((2, 1, 4))
    assert_type(rel("variance", data, mean, axis=1), (2, 4), "float32")
    assert_type(rel("variance", data, mean, axis=1, keepdims=True, unbiased=True), (2, 1, 4), "float32")
    assert_type(rel("variance", T((ANY, 3), "float64"), T((ANY, 1), "float64"), axis=-1), (ANY,), "float64")
    assert_type(rel("variance", T((2, 3), "int32"), T((1, 3), "int32"), axis=1, exclude=True), (3,), "int32")


def test_variance_relation_errors():
    assert rel_error("variance", T((2, 3)), T((2, 1), "float64")) == "data types float32 and float64 do not match"
    # VarianceRel: ICHECK_EQ(in_shape.size(), mean_shape.size()) and rank != 0.
    assert rel_error("variance", T((2, 3)), T((2,))) == "mean must have the rank of data (2), got Tensor[(2), float32]"
    assert rel_error("variance", T((2, 3)), T(())) == "mean must have the rank of data (2), got float32"
    assert rel_error("variance", T(()), T(())) == "variance needs data of rank >= 1, got float32"
    assert rel_error("variance", T((2, 3)), TupleType([])) == "argument `mean` must be a tensor, got ()"


# ------------------------------------------------------------------ references vs Python loops

AXES = [{}, {"keepdims": True}, {"axis": ()}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 2)},
        {"axis": (2, 0), "keepdims": True}, {"axis": (1,), "exclude": True},
        {"axis": (-1, 0), "exclude": True, "keepdims": True}, {"axis": (0, 1, 2), "exclude": True},
        {"exclude": True}]


def _combine(fn, identity):
    return lambda values: functools.reduce(fn, values, identity)


def _lowest(dtype):
    return float(np.finfo(dtype).min) if dtype.startswith("float") else int(np.iinfo(dtype).min)


def _highest(dtype):
    return float(np.finfo(dtype).max) if dtype.startswith("float") else int(np.iinfo(dtype).max)


def _int_mean(values):
    total = sum(values)
    q = abs(total) // len(values)
    return q if total >= 0 else -q  # MeanCompute: integer sum / count, truncating


def formula(name, dtype):
    """The Python combiner and identity TVM's compute uses (topi/reduction.h, op.cc min_value)."""
    floats = dtype.startswith("float")
    return {
        "sum": math.fsum if floats else sum,
        "prod": math.prod,
        "mean": (lambda v: math.fsum(v) / len(v)) if floats else _int_mean,
        "max": _combine(lambda acc, v: acc if acc > v else v, _lowest(dtype)),
        "min": _combine(lambda acc, v: acc if acc < v else v, _highest(dtype)),
    }[name]


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_reference(name, dtype):
    x = data(dtype, tiny=name == "prod")
    rtol = {"float32": 1e-6, "float64": 1e-15}.get(dtype, 0) if name in ("mean", "prod") else 0
    for attrs in AXES:
        expected = loop_reduce(x, attrs.get("axis"), attrs.get("keepdims", False), attrs.get("exclude", False),
                               formula(name, dtype), dtype)
        check(run(name, x, **attrs), expected, rtol=rtol)


ONNX_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
               "prod": "ReduceProd"}


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_vs_onnxruntime(name, dtype):
    x = data(dtype, tiny=name == "prod")
    for attrs in AXES:
        axes = reduced_axes(x.ndim, attrs.get("axis"), attrs.get("exclude", False))
        if not axes:
            continue  # ONNX's empty `axes` means all axes
        keepdims = attrs.get("keepdims", False)
        expected = onnx_run(ONNX_REDUCE[name], [x, np.array(axes, "int64")], dtype, keepdims=int(keepdims))
        # (onnxruntime's integer ReduceMean truncates toward zero too)
        np.testing.assert_allclose(run(name, x, **attrs), expected, rtol=1e-6 if dtype == "float32" else 1e-15)


def test_bool_max_min():
    x = np.array([[True, False], [False, False]])
    check(run("max", x, axis=1), loop_reduce(x, 1, False, False, _combine(lambda a, v: a or v, False), "bool"))
    check(run("min", x, axis=0), loop_reduce(x, 0, False, False, _combine(lambda a, v: a and v, True), "bool"))


def test_integer_mean_truncates():
    x = np.array([[-3, -4], [3, 4], [-1, 0]], dtype="int32")
    check(run("mean", x, axis=1), np.array([-3, 3, 0], dtype="int32"))
    check(run("mean", x.astype("int64"), axis=0, keepdims=True), np.array([[0, 0]], dtype="int64"))
    big = np.array([2**62, 2**62 - 1, -(2**61)], dtype="int64")  # not exact in float64
    check(run("mean", big), np.array((2**62 + 2**62 - 1 - 2**61) // 3, dtype="int64"))


def test_empty_reductions_give_the_identity():
    x = np.zeros((0, 3), dtype="float32")
    check(run("sum", x, axis=0), np.zeros(3, "float32"))
    check(run("prod", x, axis=0), np.ones(3, "float32"))
    check(run("max", x, axis=0), np.full(3, np.finfo("float32").min, "float32"))
    check(run("min", x.astype("int32"), axis=0), np.full(3, 2**31 - 1, "int32"))
    check(run("max", x, axis=1), np.zeros(0, "float32"))


def test_max_of_infinities_is_the_finite_identity():
    # topi max starts from min_value(dtype) = lowest finite value, and max(lowest, -inf) = lowest.
    x = np.array([[-INF, -INF], [-INF, 1.0]], dtype="float64")
    check(run("max", x, axis=1), np.array([np.finfo("float64").min, 1.0]))
    check(run("min", -x.astype("float32"), axis=1), np.array([np.finfo("float32").max, -1.0], "float32"))
    check(run("max", np.array([1.0, NAN, 2.0], "float32")), np.array(NAN, "float32"))  # NaN propagates


def test_rank0_reductions():
    x = np.array(2.5, dtype="float32")
    for name in REDUCERS:
        check(run(name, x), x)
        check(run(name, x, keepdims=True), x)


# ------------------------------------------------------------------ argmax / argmin

ARG_AXES = [{}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 2)}, {"axis": (2, 0), "keepdims": True},
            {"axis": (1,), "exclude": True}, {"axis": (0, 1, 2)}]


def arg_formula(name, last):
    better = (lambda v, b: v > b) if name == "argmax" else (lambda v, b: v < b)

    def fn(values):
        best = 0
        for k, (_, v) in enumerate(values):
            if better(v, values[best][1]) or (last and v == values[best][1]):
                best = k
        return best  # position in the row-major order of the reduced axes, as topi's RavelIndex
    return fn


@pytest.mark.parametrize("name", ARG_REDUCERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("last", [False, True])
def test_arg_reduce_reference(name, dtype, last):
    x = data(dtype)
    for attrs in ARG_AXES:
        expected = loop_reduce(x, attrs.get("axis"), attrs.get("keepdims", False), attrs.get("exclude", False),
                               arg_formula(name, last), "int32", with_index=True)
        check(run(name, x, select_last_index=last, **attrs), expected)


@pytest.mark.parametrize("name", ARG_REDUCERS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("last", [False, True])
def test_arg_reduce_vs_onnxruntime(name, dtype, last):
    x = data(dtype)
    for axis in range(-3, 3):
        for keepdims in (False, True):
            expected = onnx_run({"argmax": "ArgMax"}.get(name, "ArgMin"), [x], "int64", axis=axis,
                                keepdims=int(keepdims), select_last_index=int(last))
            out = run(name, x, axis=axis, keepdims=keepdims, select_last_index=last)
            np.testing.assert_array_equal(out, expected.astype("int32"))


def test_arg_reduce_ties_and_flattening():
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, 3.0]], dtype="float32")
    check(run("argmax", x), np.array(1, "int32"))
    check(run("argmax", x, select_last_index=True), np.array(5, "int32"))
    check(run("argmin", x, axis=0, keepdims=True), np.array([[0, 1, 0]], "int32"))
    check(run("argmax", x, axis=1, select_last_index=True), np.array([2, 2], "int32"))
    y = np.arange(24, dtype="int64").reshape(2, 3, 4) % 7
    # reduced axes (0, 2) flattened row-major: index = i0 * 4 + i2
    check(run("argmax", y, axis=(2, 0)), np.array([1 * 4 + 1, 0 * 4 + 2, 1 * 4 + 0], "int32"))


# ------------------------------------------------------------------ variance

VAR_AXES = [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": (1,), "exclude": True},
            {"axis": -1}]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_reference(dtype, unbiased):
    x = data(dtype)
    floats = dtype.startswith("float")
    for attrs in VAR_AXES:
        axis, keepdims, exclude = attrs.get("axis"), attrs.get("keepdims", False), attrs.get("exclude", False)
        mean = loop_reduce(x, axis, True, exclude, formula("mean", dtype), dtype)  # keepdims-shaped mean

        def var(values, mean=mean):
            sq = [(v - mean[tuple(0 if mean.shape[d] == 1 else i for d, i in enumerate(idx))].item()) ** 2
                  for idx, v in values]
            n = len(sq) - (1 if unbiased else 0)
            return math.fsum(sq) / n if floats else sum(sq) // n  # VarianceCompute: sum(sq_diff) / count

        expected = loop_reduce(x, axis, keepdims, exclude, var, dtype, with_index=True)
        out = run("variance", x, mean, unbiased=unbiased, **attrs)
        check(out, expected, rtol={"float32": 1e-6, "float64": 1e-14}.get(dtype, 0))


def test_variance_against_population_formula():
    x = np.array([[1.0, 2.0, 4.0, 7.0], [0.0, 0.0, 0.0, 0.0]], dtype="float64")
    mean = run("mean", x, axis=1, keepdims=True)
    check(run("variance", x, mean, axis=1), np.array([5.25, 0.0]), rtol=1e-15)
    check(run("variance", x, mean, axis=1, unbiased=True), np.array([7.0, 0.0]), rtol=1e-15)
    # a mean that is not the data's own: the sum of squared differences from it
    check(run("variance", x, np.zeros((1, 1)), keepdims=True), np.array([[70.0 / 8]]), rtol=1e-15)
