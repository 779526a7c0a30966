"""Sorting, scanning and index operators (irtool/ops/algorithm.py, indexing.py, argwhere in
dynamic.py): declarations against TVM v0.19, relations (shapes incl. `?`, every error names
the problem), and each NumPy reference against an independent formulation (explicit loops,
Python's sorted) with its result of exactly the relation's shape and dtype."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_helpers import T, assert_type, attrs_of, rel, rel_error

from irtool.ir.types import ANY, TupleType
from irtool.ops import REQUIRED, OpPattern, lookup

Q = ANY
RNG = np.random.default_rng(11)
E, I, F, O = OpPattern.ELEMWISE, OpPattern.INJECTIVE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.OPAQUE

# name -> (args, [(attr, kind, default)], pattern, relax name), from TVM v0.19's attrs/*.h and op registrations
DECLS = {
    "sort": (("data",), [("axis", "int", -1), ("is_ascend", "bool", True)], O, "relax.sort"),
    "argsort": (("data",), [("axis", "int", -1), ("is_ascend", "bool", True), ("dtype", "dtype", "int32")], O,
                "relax.argsort"),
    "topk": (("data",), [("k", "int", REQUIRED), ("axis", "int", -1), ("ret_type", "str", "both"),
                         ("is_ascend", "bool", False), ("dtype", "dtype", "int32")], O, "relax.topk"),
    "cumsum": (("data",), [("axis", "int?", None), ("dtype", "dtype", ""), ("exclusive", "bool", False)], O,
               "relax.cumsum"),
    "cumprod": (("data",), [("axis", "int?", None), ("dtype", "dtype", ""), ("exclusive", "bool", False)], O,
                "relax.cumprod"),
    "one_hot": (("indices", "on_value", "off_value"), [("depth", "int", 1), ("axis", "int", -1),
                                                       ("dtype", "dtype", "")], F, "relax.one_hot"),
    "reverse": (("data",), [("axis", "int?", None)], I, "relax.flip"),
    "gather_nd": (("data", "indices"), [("batch_dims", "int", 0), ("index_rank", "int?", None)], I,
                  "relax.gather_nd"),
    "scatter_elements": (("data", "indices", "updates"), [("axis", "int", 0), ("reduction", "str", "update")], O,
                         "relax.scatter_elements"),
    "scatter_nd": (("data", "indices", "updates"), [("mode", "str", "update")], O, "relax.scatter_nd"),
    "einsum": (("data",), [("equation", "str", REQUIRED)], I, "relax.einsum"),
    "argwhere": (("condition",), [], O, "relax.argwhere"),
    "unique": (("data",), [("sorted", "bool", True), ("return_counts", "bool", False)], O, "relax.unique"),
}


@pytest.mark.parametrize("name", sorted(DECLS))
def test_declaration_matches_tvm(name):
    op = lookup(name)
    args, attrs, pattern, relax = DECLS[name]
    assert op.args == args
    assert [(a.name, a.kind, a.default) for a in op.attrs] == attrs
    assert op.pattern == pattern, OpPattern.NAMES[op.pattern]
    assert op.relax_name == relax
    assert op.ref is not None
    assert op.shape_data_dependent == (name == "argwhere")


def run(name, *arrays, **attrs):
    """The reference result, checked to have the relation's shape and dtype (`?` matches any size)."""
    op = lookup(name)
    types = [TupleType([T(a.shape, str(a.dtype)) for a in x]) if isinstance(x, tuple) else T(x.shape, str(x.dtype))
             for x in arrays]
    t = rel(name, *types, **attrs)
    full = dict(attrs_of(name, attrs).items()) if op.attrs else {}
    out = op.ref(*arrays, **full)
    for value, ty in zip(out if isinstance(out, tuple) else (out,), t.fields if isinstance(t, TupleType) else (t,)):
        assert str(value.dtype) == ty.dtype
        assert len(value.shape) == len(ty.shape)
        assert all(d is ANY or d == s for d, s in zip(ty.shape, value.shape)), (value.shape, ty.shape)
    return out


# ------------------------------------------------------------------ unique


def test_unique_relation():
    t = rel("unique", T((8,), "int64"), return_counts=True)
    assert [(f.shape, f.dtype) for f in t.fields] == [((8,), "int64"), ((8,), "int32"), ((8,), "int32"),
                                                     ((1,), "int32"), ((8,), "int32")]
    assert len(rel("unique", T((Q,))).fields) == 4
    assert "1-D" in rel_error("unique", T((2, 3)))


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique_against_a_loop(is_sorted):
    x = RNG.integers(0, 6, size=11).astype("float32")
    seen: list = []
    for v in x:  # first-occurrence order, then sorted if asked
        if v not in seen:
            seen.append(v)
    order = sorted(seen) if is_sorted else seen
    values, first, inverse, count, counts = run("unique", x, sorted=is_sorted, return_counts=True)
    k = len(order)
    assert count.tolist() == [k]
    assert values[:k].tolist() == order
    assert first[:k].tolist() == [list(x).index(v) for v in order]
    assert counts[:k].tolist() == [int(np.sum(x == v)) for v in order]
    assert [order[i] for i in inverse] == list(x)
    # TVM's documented example
    out = run("unique", np.array([4, 5, 1, 2, 3, 3, 4, 5], "int32"), sorted=True)
    assert out[0][:5].tolist() == [1, 2, 3, 4, 5] and out[1][:5].tolist() == [2, 3, 4, 0, 1]
    assert out[2].tolist() == [3, 4, 0, 1, 2, 2, 3, 4]


# ------------------------------------------------------------------ sort, argsort, topk


def _sorted_order(row, ascending):
    """Python's sorted is stable: equal elements keep their order either way."""
    return sorted(range(len(row)), key=lambda i: row[i] if ascending else -row[i])


@pytest.mark.parametrize("axis, ascend", [(-1, True), (0, False), (1, False)])
def test_sort_and_argsort_are_stable(axis, ascend):
    x = RNG.integers(0, 3, size=(4, 5)).astype("float32")  # many ties
    order = run("argsort", x, axis=axis, is_ascend=ascend, dtype="int64")
    moved = np.moveaxis(x, axis, -1)
    want = np.array([_sorted_order(list(r), ascend) for r in moved.reshape(-1, moved.shape[-1])])
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.moveaxis(order, axis, -1).reshape(want.shape), want)
    np.testing.assert_array_equal(run("sort", x, axis=axis, is_ascend=ascend), np.take_along_axis(x, order, axis))


@pytest.mark.parametrize("k, axis, ascend", [(2, -1, False), (3, 0, True), (0, 1, False), (5, 1, False)])
def test_topk_is_the_first_k_of_a_stable_sort(k, axis, ascend):
    x = RNG.integers(0, 4, size=(3, 5)).astype("float32")
    values, indices = run("topk", x, k=k, axis=axis, is_ascend=ascend, dtype="int64")
    order = lookup("argsort").ref(x, axis=axis, is_ascend=ascend, dtype="int64")
    keep = x.shape[axis] if k == 0 else k  # k < 1 keeps the whole axis, as TVM
    np.testing.assert_array_equal(indices, np.take(order, np.arange(keep), axis=axis))
    np.testing.assert_array_equal(values, np.take_along_axis(x, indices, axis))
    only = run("topk", x, k=k, axis=axis, is_ascend=ascend, ret_type="values")
    np.testing.assert_array_equal(only, values)


def test_topk_relation():
    t = rel("topk", T((2, Q, 7)), k=3, axis=1)
    assert isinstance(t, TupleType)
    assert_type(t.fields[0], (2, 3, 7), "float32")
    assert_type(t.fields[1], (2, 3, 7), "int32")
    assert_type(rel("topk", T((2, 7)), k=0, ret_type="indices", dtype="int64"), (2, 7), "int64")
    assert "k=9 is larger than dimension 1" in rel_error("topk", T((2, 7)), k=9)
    assert "ret_type" in rel_error("topk", T((2, 7)), k=1, ret_type="all")
    assert "out of range" in rel_error("topk", T((2, 7)), k=1, axis=2)
    assert "scalar" in rel_error("sort", T(()))
    assert_type(rel("argsort", T((Q, 3))), (Q, 3), "int32")


# ------------------------------------------------------------------ cumsum


@pytest.mark.parametrize("axis, exclusive, dtype", [(0, False, ""), (1, True, ""), (None, False, "int64"),
                                                    (-1, True, "float64")])
def test_cumsum_against_a_loop(axis, exclusive, dtype):
    x = RNG.integers(-5, 5, size=(3, 4)).astype("int32")
    out = run("cumsum", x, axis=axis, exclusive=exclusive, dtype=dtype)
    flat = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    want = np.zeros(flat.shape, dtype or x.dtype)
    for idx in np.ndindex(*flat.shape[:-1]):
        total = 0
        for j in range(flat.shape[-1]):
            if exclusive:
                want[idx + (j,)] = total
            total += flat[idx + (j,)]
            if not exclusive:
                want[idx + (j,)] = total
    want = want if axis is None else np.moveaxis(want, -1, axis)
    assert out.dtype == np.dtype(dtype or "int32")
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("axis, exclusive, dtype", [(0, False, ""), (1, True, ""), (None, False, "int64"),
                                                    (-1, True, "float64")])
def test_cumprod_against_a_loop(axis, exclusive, dtype):
    x = RNG.integers(-3, 4, size=(3, 4)).astype("int32")
    out = run("cumprod", x, axis=axis, exclusive=exclusive, dtype=dtype)
    flat = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    want = np.zeros(flat.shape, dtype or x.dtype)
    for idx in np.ndindex(*flat.shape[:-1]):
        product = 1
        for j in range(flat.shape[-1]):
            if exclusive:
                want[idx + (j,)] = product
            product *= int(flat[idx + (j,)])
            if not exclusive:
                want[idx + (j,)] = product
    want = want if axis is None else np.moveaxis(want, -1, axis)
    assert out.dtype == np.dtype(dtype or "int32")
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_relation(name):
    assert_type(rel(name, T((2, 3))), (6,), "float32")
    assert_type(rel(name, T((2, Q)), axis=1, dtype="float64"), (2, Q), "float64")
    assert_type(rel(name, T((2, Q))), (Q,), "float32")
    assert "out of range" in rel_error(name, T((2, 3)), axis=2)
    assert name in rel_error(name, T((2, 3)), axis=-3)


# ------------------------------------------------------------------ one_hot, reverse


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_one_hot_against_a_loop(axis):
    indices = np.array([[0, 3, -1], [2, 5, 1]], "int64")  # -1 and 5 are outside [0, 4): all off
    on, off = np.array(7.5, "float32"), np.array(-1.0, "float32")
    out = run("one_hot", indices, on, off, depth=4, axis=axis)
    pos = indices.ndim if axis == -1 else axis
    assert out.shape == indices.shape[:pos] + (4,) + indices.shape[pos:]
    for idx in np.ndindex(*out.shape):
        d = idx[pos]
        assert out[idx] == (7.5 if indices[idx[:pos] + idx[pos + 1:]] == d else -1.0)
    assert run("one_hot", indices, on, off, depth=4, dtype="int32").dtype == np.int32


def test_one_hot_relation():
    assert_type(rel("one_hot", T((2, Q), "int32"), T(()), T(()), depth=5, axis=1), (2, 5, Q), "float32")
    assert "depth must be positive" in rel_error("one_hot", T((2,), "int32"), T(()), T(()), depth=0)
    assert "out of range" in rel_error("one_hot", T((2,), "int32"), T(()), T(()), depth=3, axis=2)
    assert "must be a scalar" in rel_error("one_hot", T((2,), "int32"), T((1,)), T(()), depth=3)


def test_reverse():
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(run("reverse", x, axis=1), x[:, ::-1])
    np.testing.assert_array_equal(run("reverse", x, axis=-2), x[::-1])
    assert "needs an `axis`" in rel_error("reverse", T((3, 4)))
    assert "out of range" in rel_error("reverse", T((3, 4)), axis=2)


# ------------------------------------------------------------------ gather_nd, scatter_nd


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_against_a_loop(batch_dims):
    data = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
    m = 2
    # indices (M, 2, 6): for batch_dims 1 the 2 is the batch dimension
    idx = np.stack([RNG.integers(0, data.shape[batch_dims + j], size=(2, 6)) for j in range(m)]).astype("int64")
    out = run("gather_nd", data, idx, batch_dims=batch_dims, index_rank=m)
    assert out.shape == (2, 6) + data.shape[m + batch_dims:]
    for b, j in itertools.product(range(2), range(6)):
        lead = (b,) if batch_dims else ()
        np.testing.assert_array_equal(out[b, j], data[lead + (idx[0, b, j], idx[1, b, j])])


def test_gather_nd_relation():
    assert_type(rel("gather_nd", T((4, 5, 6)), T((2, 3, Q), "int64")), (3, Q, 6), "float32")
    assert_type(rel("gather_nd", T((2, 5, 6)), T((1, 2, 7), "int32"), batch_dims=1), (2, 7, 6), "float32")
    assert "static first dimension" in rel_error("gather_nd", T((4, 5)), T((Q, 3), "int64"))
    assert "exceed the rank" in rel_error("gather_nd", T((4, 5)), T((3, 2), "int64"))
    assert "same leading dimensions" in rel_error("gather_nd", T((2, 5)), T((1, 3), "int64"), batch_dims=1)
    assert "integer indices" in rel_error("gather_nd", T((4, 5)), T((1, 2)))
    assert "index_rank 2 differs" in rel_error("gather_nd", T((4, 5)), T((1, 2), "int64"), index_rank=2)


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
def test_scatter_nd_applies_updates_in_order(mode):
    data = RNG.standard_normal((4, 3)).astype("float32")
    kept = data.copy()
    idx = np.array([[1, 3, 1]], "int64")  # row 1 twice: the second one last
    updates = RNG.standard_normal((3, 3)).astype("float32")
    out = run("scatter_nd", data, idx, updates, mode=mode)
    np.testing.assert_array_equal(data, kept)  # the input is not written to
    want = data.copy()
    combine = {"update": lambda a, b: b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
               "min": min, "max": max}[mode]
    for j in range(3):
        for c in range(3):
            want[idx[0, j], c] = combine(want[idx[0, j], c], updates[j, c])
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_scatter_nd_relation():
    assert_type(rel("scatter_nd", T((4, 5)), T((1, 3), "int64"), T((3, 5))), (4, 5), "float32")
    assert "needs updates of shape (3, 5)" in rel_error("scatter_nd", T((4, 5)), T((1, 3), "int64"), T((3, 4)))
    assert "mode" in rel_error("scatter_nd", T((4, 5)), T((1, 3), "int64"), T((3, 5)), mode="mean")


# ------------------------------------------------------------------ scatter_elements


@pytest.mark.parametrize("axis, reduction", [(0, "update"), (1, "add"), (-1, "mul"), (0, "min"), (1, "max")])
def test_scatter_elements_against_a_loop(axis, reduction):
    data = RNG.standard_normal((3, 4)).astype("float32")
    dim = data.shape[axis]
    indices = RNG.integers(-dim, dim, size=(2, 3)).astype("int64")  # negative counts from the end
    updates = RNG.standard_normal((2, 3)).astype("float32")
    out = run("scatter_elements", data, indices, updates, axis=axis, reduction=reduction)
    want = data.copy()
    a = axis % 2
    for i, j in np.ndindex(2, 3):
        k = int(indices[i, j]) % dim
        pos = (k, j) if a == 0 else (i, k)
        old, new = want[pos], updates[i, j]
        want[pos] = {"update": new, "add": old + new, "mul": old * new, "min": min(old, new),
                     "max": max(old, new)}[reduction]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_scatter_elements_relation():
    assert_type(rel("scatter_elements", T((3, Q)), T((2, 2), "int32"), T((2, 2)), axis=1), (3, Q), "float32")
    assert "of one shape" in rel_error("scatter_elements", T((3, 4)), T((2, 2), "int32"), T((2, 3)))
    assert "reduction" in rel_error("scatter_elements", T((3, 4)), T((2, 2), "int32"), T((2, 2)),
                                    reduction="mean")
    assert "do not match" in rel_error("scatter_elements", T((3, 4)), T((2, 2), "int32"), T((2, 2), "float16"))
    assert "out of range" in rel_error("scatter_elements", T((3, 4)), T((2, 2), "int32"), T((2, 2)), axis=2)


# ------------------------------------------------------------------ einsum


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("...ii->...i", [(2, 4, 3, 3)]),
    ("i,i", [(5,), (5,)]),
    ("ij", [(3, 2)]),
    ("ba", [(3, 2)]),
    ("...j,jk", [(2, 1, 3), (3, 4)]),
    ("ij->", [(2, 3)]),
])
def test_einsum_against_explicit_sums(equation, shapes):
    data = tuple(RNG.standard_normal(s).astype("float32") for s in shapes)
    out = run("einsum", data, equation=equation)
    want = np.einsum(equation, *[d.astype("float64") for d in data])  # a float64 route
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    if equation == "ij,jk->ik":  # and a loop, once
        a, b = data
        loops = np.array([[sum(a[i, j] * b[j, k] for j in range(3)) for k in range(4)] for i in range(2)])
        np.testing.assert_allclose(out, loops, rtol=1e-5)


def test_einsum_relation():
    assert_type(rel("einsum", TupleType([T((Q, 3)), T((3, 4))]), equation="ij,jk->ik"), (Q, 4), "float32")
    assert_type(rel("einsum", TupleType([T((2, 1, 3)), T((5, 3))]), equation="...j,...j->..."), (2, 5), "float32")
    assert "subscript j is 3 in one operand and 2" in rel_error("einsum", TupleType([T((2, 3)), T((2, 4))]),
                                                                   equation="ij,jk->ik")
    assert "2 operands, got 1" in rel_error("einsum", TupleType([T((2, 3))]), equation="ij,jk->ik")
    assert "do not fit a tensor of rank 3" in rel_error("einsum", TupleType([T((2, 3, 4))]), equation="ij->i")
    assert "distinct input subscripts" in rel_error("einsum", TupleType([T((2, 3))]), equation="ij->iz")


# ------------------------------------------------------------------ argwhere


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)])
def test_argwhere_lists_the_non_zero_positions_row_major(shape):
    x = RNG.integers(0, 2, size=shape).astype("int32")
    out = run("argwhere", x)
    want = [idx for idx in np.ndindex(*shape) if x[idx]]
    assert out.dtype == np.int32 and out.shape == (len(want), len(shape))
    assert [tuple(r) for r in out.tolist()] == want
    assert_type(rel("argwhere", T(shape, "bool")), (Q, len(shape)), "int32")
    assert run("argwhere", np.zeros((2, 3), "float32")).shape == (0, 2)
