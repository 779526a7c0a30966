"""Struct info (irtool/analysis/struct_info.py): deduction with symbolic shapes, the base check,
the LCA, erasure and function calls. What TVM 0.27 deduces for the same calls is noted where it
differs (see the module docstring)."""

from __future__ import annotations

import operator

import pytest

from irtool.analysis.struct_info import (
    StructInfoError,
    deduce_call,
    deduce_func_call,
    erase_to_well_defined,
    is_base_of,
    lca,
    prim_equal,
)
from irtool.ir import tir
from irtool.ir.relax import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    PrimValue,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from irtool.ir.relax import Tuple as RelaxTuple

F32 = "float32"
n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def T(shape=None, dtype=F32, ndim=-1):
    return TensorStructInfo(shape, dtype, ndim=ndim)


def i64(v):
    return tir.IntImm(v, "int64")


def mul(a, b):
    return tir.BinOp("mul", a, i64(b) if isinstance(b, int) else b)


def add(a, b):
    return tir.BinOp("add", a, i64(b) if isinstance(b, int) else b)


def ev(e, env):
    """Value of a dim (int or TIR expression of n, m)."""
    if isinstance(e, int):
        return e
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return env[e.name]
    if isinstance(e, tir.Call) and e.op == "tirx.if_then_else":
        return ev(e.args[1], env) if ev(e.args[0], env) else ev(e.args[2], env)
    a, b = ev(e.a, env), ev(e.b, env)
    ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
           "floormod": operator.mod, "min": min, "max": max, "lt": operator.lt, "le": operator.le,
           "eq": operator.eq}
    return ops[e.op](a, b)


def assert_tensor(s, shape, dtype=F32):
    assert isinstance(s, TensorStructInfo), s
    assert s.dtype == dtype
    assert s.shape is not None and len(s.shape) == len(shape), s.shape
    for got, want in zip(s.shape, shape):
        assert prim_equal(got, want), (s.shape, shape)


def assert_ndim_only(s, ndim, dtype=F32):
    assert isinstance(s, TensorStructInfo) and s.shape is None and s.ndim == ndim and s.dtype == dtype, s


# ----------------------------------------------------------------------------- symbolic deduction


def test_matmul_symbolic_batch_keeps_the_input_variable():
    s = deduce_call("relax.matmul", [T((n, 784)), T((784, 128))])
    assert_tensor(s, (n, 128))
    assert s.shape[0] is n


def test_add_broadcasts_a_symbolic_dimension():
    assert_tensor(deduce_call("relax.add", [T((n, 4)), T((4,))]), (n, 4))
    assert_tensor(deduce_call("relax.add", [T((n, 1)), T((1, n))]), (n, n))


def test_conv2d_with_symbolic_batch():
    s = deduce_call("relax.nn.conv2d", [T((n, 3, 32, 32)), T((16, 3, 3, 3))], {"padding": 1})
    assert_tensor(s, (n, 16, 32, 32))


def test_reshape_minus_one_of_symbolic():
    s = deduce_call("relax.reshape", [T((n, 4)), ShapeStructInfo([-1])])
    assert_tensor(s, (mul(n, 4),))
    assert isinstance(s.shape[0], tir.BinOp) and s.shape[0].a is n  # `n * 4`, as TVM prints it


def test_affine_forms():
    assert_tensor(deduce_call("relax.concat", [TupleStructInfo([T((n, 4)), T((m, 4))])]), (add(n, m), 4))
    assert_tensor(deduce_call("relax.nn.pad", [T((n, 3))], {"pad_width": [1, 2, 0, 0]}), (add(n, 3), 3))
    assert_tensor(deduce_call("relax.tile", [T((2, n))], {"repeats": [3]}), (2, mul(n, 3)))


def test_composite_input_dimension_is_reused():
    d = mul(n, 2)
    s = deduce_call("relax.add", [T((d, 4)), T((4,))])
    assert s.shape[0] is d
    opaque = tir.BinOp("floordiv", n, i64(4))  # not affine: a symbol of its own
    s = deduce_call("relax.nn.relu", [T((opaque, 8))])
    assert s.shape[0] is opaque
    s = deduce_call("relax.reshape", [T((opaque, 8)), ShapeStructInfo([-1])])
    assert [ev(s.shape[0], {"n": v}) for v in (3, 4, 9)] == [(v // 4) * 8 for v in (3, 4, 9)]


def test_shape_and_prim_arguments_can_be_symbolic():
    assert_tensor(deduce_call("relax.full", [ShapeStructInfo([n, 3]), T(())]), (n, 3))
    assert_tensor(deduce_call("relax.zeros", [ShapeStructInfo([n, add(m, 1)])], {"dtype": "int8"}),
                  (n, add(m, 1)), "int8")
    s = deduce_call("relax.arange", [PrimStructInfo("int64", i64(0)), PrimStructInfo("int64", n),
                                     PrimStructInfo("int64", i64(1))])
    assert_tensor(s, (n,), "int64")
    s = deduce_call("relax.shape_of", [T((n, 3))])
    assert isinstance(s, ShapeStructInfo) and s.values[0] is n and s.values[1] == 3


def test_shape_values_from_the_argument_expressions():
    shape_expr = ShapeExpr([2, n])
    s = deduce_call("relax.broadcast_to", [T((1, 1)), ShapeStructInfo(ndim=2)], arg_exprs=[None, shape_expr])
    assert_tensor(s, (2, n))
    s = deduce_call("relax.broadcast_to", [T((1, 1)), ShapeStructInfo(ndim=2)])
    assert_ndim_only(s, 2)  # values unknown: rank only
    begin = RelaxTuple([PrimValue(i64(1))])
    s = deduce_call("relax.strided_slice", [T((5, 6)), TupleStructInfo([PrimStructInfo("int64", i64(1))]),
                                            TupleStructInfo([PrimStructInfo("int64")]),
                                            TupleStructInfo([PrimStructInfo("int64", i64(4))])],
                    arg_exprs=[None, None, begin, None])
    assert_tensor(s, (5, 3))


# Symbolic results must agree with the static relation at every value: the fit is checked
# against deductions on static shapes.
FITTED = [
    ("relax.nn.conv2d", lambda v: [T((1, 3, v, 9)), T((4, 3, 3, 3))], {"strides": 2, "padding": 1}),
    ("relax.nn.conv2d", lambda v: [T((1, 3, v, 9)), T((4, 3, 5, 5))], {"strides": 3, "dilation": 2}),
    ("relax.nn.max_pool2d", lambda v: [T((1, 3, v, v))], {"pool_size": 3, "strides": 2, "ceil_mode": True}),
    ("relax.nn.avg_pool2d", lambda v: [T((1, 3, v, 4))], {"pool_size": 2, "strides": 2, "padding": 1}),
    ("relax.nn.conv2d_transpose", lambda v: [T((1, 3, v, 5)), T((3, 4, 3, 3))], {"strides": 2, "padding": 1}),
    ("relax.split", lambda v: [T((v, 4))], {"indices_or_sections": 2}),
    # TVM: T.max(T.min(3, n) - T.min(0, n), 0) and T.max(n - 3, 0): no affine form, ndim only here
    ("relax.split", lambda v: [T((v, 4))], {"indices_or_sections": [3]}),
    ("relax.arange", lambda v: [PrimStructInfo("int64", i64(1)), PrimStructInfo("int64", v),
                                PrimStructInfo("int64", i64(3))], {}),
    # TVM: n * 6 // 4 (reshape fails for odd n): ndim only here
    ("relax.reshape", lambda v: [T((v, 6)), ShapeStructInfo([-1, 4])], {}),
    ("relax.image.resize2d", lambda v: [T((1, 3, 4, 4)), ShapeStructInfo([v, 2])], {}),
    ("relax.repeat", lambda v: [T((v, 3))], {"repeats": 2}),
]


NOT_FITTED = [("relax.split", {"indices_or_sections": [3]}), ("relax.reshape", {})]


@pytest.mark.parametrize("name, args, attrs", FITTED)
def test_fitted_expression_agrees_with_static_deductions(name, args, attrs):
    s = deduce_call(name, args(n), attrs)
    fields = list(s) if isinstance(s, TupleStructInfo) else [s]
    resolved = 0
    for v in range(6, 40):
        try:
            static = deduce_call(name, args(i64(v) if name == "relax.arange" else v), attrs)
        except StructInfoError:
            continue
        static_fields = list(static) if isinstance(static, TupleStructInfo) else [static]
        for sym, st in zip(fields, static_fields):
            if sym.shape is None:
                assert sym.ndim == st.ndim
                continue
            resolved += 1
            assert tuple(ev(d, {"n": v}) for d in sym.shape) == st.shape, (v, sym.shape, st.shape)
    if (name, attrs) not in NOT_FITTED:
        assert resolved  # the fit found an expression


def test_window_sizes_are_tvms_forms():
    """A convolution over a size variable writes TVM's `(n - 1) // 2 + 1` (once fitted as
    `(n + 1) // 2`: the same values); tests/test_struct_info_tvm_forms.py compares with TVM."""
    s = deduce_call("relax.nn.conv2d", [T((1, 3, n, n)), T((4, 3, 3, 3))], {"strides": 2, "padding": 1})
    h = s.shape[2]
    assert isinstance(h, tir.BinOp) and h.op == "add" and h.a.op == "floordiv"
    assert [ev(h, {"n": v}) for v in (1, 2, 3, 4)] == [1, 1, 2, 2]


def test_unprovable_broadcast_gives_ndim_only():
    assert_ndim_only(deduce_call("relax.add", [T((n, 4)), T((m, 4))]), 2)  # TVM: the same


def test_reshape_of_symbols_keeps_the_target_shape():
    """TVM's reshape result is the target shape as written; a -1 among constants is the
    input's product of symbols divided by theirs (the generic fit has no products)."""
    assert_tensor(deduce_call("relax.reshape", [T((n, m)), ShapeStructInfo([-1])]), (tir.BinOp("mul", n, m),))
    assert_tensor(deduce_call("relax.reshape", [T((n, m, 4)), ShapeStructInfo([2, -1])]),
                  (2, tir.BinOp("mul", tir.BinOp("mul", n, m), tir.IntImm(2, "int64"))))
    assert_tensor(deduce_call("relax.reshape", [T((n, m)), ShapeStructInfo([tir.BinOp("mul", n, m)])]),
                  (tir.BinOp("mul", n, m),))
    assert_tensor(deduce_call("relax.reshape", [T((n, 4)), ShapeStructInfo([n, 3])]), (n, 3))  # TVM cannot prove n*4 != n*3


def test_products_of_symbols_keep_their_shape():
    """Regression: a (n * m, 16) operand (a flattened attention projection) lost its shape in
    every op but reshape; TVM 0.27 keeps it (and proves m * n equal to n * m)."""
    nm = tir.BinOp("mul", n, m)
    s = deduce_call("relax.matmul", [T((nm, 16)), T((16, 8))])
    assert_tensor(s, (nm, 8))
    assert s.shape[0] is nm
    assert_tensor(deduce_call("relax.add", [T((nm, 4)), T((tir.BinOp("mul", m, n), 4))]), (nm, 4))
    assert_tensor(deduce_call("relax.permute_dims", [T((nm, 4, n))]), (n, 4, nm))
    assert_tensor(deduce_call("relax.sum", [T((mul(nm, 2), 4))], {"axis": [1]}), (mul(nm, 2),))
    # a -1 next to one of the product's factors still divides it
    assert_tensor(deduce_call("relax.reshape", [T((mul(nm, 2), 16)), ShapeStructInfo([n, -1, 16])]), (n, mul(m, 2), 16))
    assert prim_equal(nm, tir.BinOp("mul", m, n)) and not prim_equal(nm, mul(n, 2))


def test_shape_values_fit_where_tensor_dims_are_unknown():
    """Regression: reshaping (or broadcasting) a tensor of unknown shape to (n, m, 16) gave the
    sentinel values of n and m as static sizes; TVM 0.27 gives the target shape."""
    assert_tensor(deduce_call("relax.reshape", [T(ndim=2), ShapeStructInfo([n, m, 16])]), (n, m, 16))
    assert_tensor(deduce_call("relax.broadcast_to", [T(ndim=2), ShapeStructInfo([n, 4])]), (n, 4))
    assert_ndim_only(deduce_call("relax.add", [T((n, 4)), T((m, 4))]), 2)


def test_squeeze_without_axis_of_a_symbolic_shape_has_unknown_rank():
    assert_ndim_only(deduce_call("relax.squeeze", [T((n, 1))]), -1)  # n may be 1: TVM the same
    assert_tensor(deduce_call("relax.squeeze", [T((n, 1))], {"axis": [1]}), (n,))


def slice_args(x, axes, begin, end, strides=None):
    def prims(vs):
        return TupleStructInfo([PrimStructInfo("int64", i64(v) if isinstance(v, int) else v) for v in vs])
    return [x, prims(axes), prims(begin), prims(end)] + ([prims(strides)] if strides else [])


def test_strided_slice_clamps_symbolically():
    """strided_slice writes TVM's clamping expressions (no affine fit can): its values must be
    the static slice's at every size and bound, negative ones included."""
    big = 2**63 - 1
    cases = [  # (shape, begin, end, stride)
        ((n, 4), 2, big, 1),    # TVM: T.max(n - 2, 0)
        ((n, 4), 1, 10, 1),     # TVM: T.min(10, n) - T.min(1, n)
        ((n, 4), -3, big, 1),
        ((n, 4), 2, 10, 3),     # TVM: (T.min(10, n) + 2 - T.min(2, n)) // 3
        ((n, 4), -1, -big - 1, -1),
        ((32, 4), 0, m, 1),     # TVM: T.min(T.max(T.if_then_else(m < 0, m + 32, m), 0), 32)
        ((32, 4), m, add(m, 5), 2),
        ((n, 4), m, n, 1),
    ]
    for shape, b, e, st in cases:
        s = deduce_call("relax.strided_slice", slice_args(T(shape), [0], [b], [e], [st]))
        assert s.shape[1] == 4
        for nv in (0, 1, 2, 5, 9, 16, 40):
            for mv in (-40, -7, -1, 0, 3, 20, 33):
                env = {"n": nv, "m": mv}
                dim = ev(shape[0], env)
                try:  # begin past end is an error here; TVM 0.27 gives a negative extent
                    want = deduce_call("relax.strided_slice", slice_args(T((dim, 4)), [0], [ev(b, env)],
                                                                         [ev(e, env)], [st]))
                except StructInfoError:
                    continue
                assert ev(s.shape[0], env) == want.shape[0], (shape, b, e, st, env)


def test_strided_slice_symbolic_bounds_assumed_in_bounds():
    args = slice_args(T((32,)), [0], [m], [add(m, n)])
    s = deduce_call("relax.strided_slice", args, {"assume_inbound": True})
    assert [ev(s.shape[0], {"n": v, "m": 3}) for v in (0, 5)] == [0, 5]  # TVM: (n,)
    s = deduce_call("relax.strided_slice", args)
    assert ev(s.shape[0], {"n": 16, "m": 16}) == 16 and ev(s.shape[0], {"n": 30, "m": 16}) == 16


# ----------------------------------------------------------------------------- unknown shapes, dtypes


def test_unknown_rank_and_dtype():
    assert_ndim_only(deduce_call("relax.add", [T(None, F32), T((2,))]), -1)
    assert_ndim_only(deduce_call("relax.nn.relu", [T(None, "")]), -1, "")
    assert_ndim_only(deduce_call("relax.sum", [T(None, F32, 3)], {"axis": [1]}), 2)
    assert_ndim_only(deduce_call("relax.nn.conv2d", [T(None, F32, 4), T((4, 3, 3, 3))]), 4)
    assert_ndim_only(deduce_call("relax.astype", [T(None, "")], {"dtype": "int8"}), -1, "int8")
    assert_tensor(deduce_call("relax.add", [T((2,), ""), T((2,))]), (2,), "")
    assert_tensor(deduce_call("relax.less", [T((2,), ""), T((2,), "")]), (2,), "bool")
    assert_tensor(deduce_call("relax.where", [T((2,), ""), T((2,)), T((2,))]), (2,), F32)
    assert_tensor(deduce_call("relax.argmax", [T((2, 3), "")], {"axis": 1}), (2,), "int64")
    s = deduce_call("relax.shape_of", [T(None, F32, 2)])
    assert isinstance(s, ShapeStructInfo) and s.values is None and s.ndim == 2


def test_tuple_results():
    s = deduce_call("relax.split", [T((n, 4))], {"indices_or_sections": 2})
    assert isinstance(s, TupleStructInfo) and len(s) == 2
    assert [ev(f.shape[0], {"n": 7}) for f in s] == [4, 3]
    s = deduce_call("relax.nn.batch_norm", [T((n, 3, 4, 4))] + [T((3,))] * 4, {"axis": 1})
    assert s[0].shape[0] is n and s[1].shape == (3,)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name, args, attrs, message", [
    ("relax.add", [T((3, 4)), T((5,))], {}, r"^incompatible broadcast shapes \(3, 4\) and \(5,\)"),
    ("relax.add", [T((n, 4)), T((5,))], {}, r"\(\?, 4\) and \(5,\)"),
    ("relax.add", [T((2,), "int32"), T((2,))], {}, "data types int32 and float32"),
    ("relax.matmul", [T((2, 3)), T((4, 5))], {}, "reduction lengths differ"),
    ("relax.reshape", [T((2, 3)), ShapeStructInfo([4, 2])], {}, "cannot reshape"),
    ("relax.reshape", [T((2, 3)), ShapeStructInfo([n, 4])], {}, "cannot reshape"),  # TVM: the same
    ("relax.nn.conv2d", [T((1, 3, 8, 8)), T((4, 2, 3, 3))], {}, "input channels"),
    ("relax.nn.conv2d", [T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"strides": 0}, "positive"),
    ("relax.sqrt", [T((2,), "int32")], {}, "must be floating-point"),
    ("relax.add", [T((2,))], {}, "takes 2 arguments"),
    ("relax.strided_slice", [T((2,))], {}, "takes 4 to 5 arguments"),
    ("relax.add", [T((2,)), ShapeStructInfo([2])], {}, "expects a tensor for argument `x2`, got ShapeStructInfo"),
    ("relax.reshape", [T((2,)), T((2,))], {}, "expects a shape"),
    ("relax.sum", [T((2,))], {"axes": 0}, "has no attribute `axes`"),
    ("relax.nope", [T((2,))], {}, "unknown Relax operator"),
    ("relax.call_tir", [ObjectStructInfo()], {}, "out_ty"),
])
def test_errors(name, args, attrs, message):
    with pytest.raises(StructInfoError, match=message):
        deduce_call(name, args, attrs)


def test_results_take_the_virtual_device_of_the_arguments():
    x = TensorStructInfo((2, 3), F32, vdevice="llvm:0")
    assert deduce_call("relax.add", [x, T((3,))]).vdevice == "llvm:0"
    assert deduce_call("relax.add", [T((3,)), T((3,))]).vdevice is None


def test_special_calls_return_their_struct_info_argument():
    out = T((4, 8))
    assert deduce_call("relax.call_tir", [ObjectStructInfo(), TupleStructInfo([T((4, 8))])], None,
                       sinfo_args=[out]) is out


# ----------------------------------------------------------------------------- base check


def test_object_is_base_of_everything():
    for s in (T((2,)), ShapeStructInfo([1]), PrimStructInfo("int64"), TupleStructInfo([]), ObjectStructInfo(),
              FuncStructInfo([T((2,))], T((2,)))):
        assert is_base_of(ObjectStructInfo(), s)
    assert not is_base_of(T((2,)), ObjectStructInfo())


def test_tensor_base_check():
    assert is_base_of(T(None, ""), T((2, 3)))
    assert is_base_of(T(None, F32), T((2, 3)))
    assert is_base_of(T(None, F32, 2), T((2, 3)))
    assert not is_base_of(T(None, F32, 3), T((2, 3)))
    assert not is_base_of(T(None, "int32"), T((2, 3)))
    assert not is_base_of(T((2, 3)), T(None, F32, 2))  # needs a run-time check
    assert not is_base_of(T((2, 3)), T((2, 4)))
    assert is_base_of(T((n, 3)), T((n, 3)))
    assert not is_base_of(T((n, 3)), T((m, 3)))
    assert not is_base_of(T((n, 3)), T((4, 3)))
    assert is_base_of(T((mul(n, 2),)), T((tir.BinOp("mul", i64(2), n),)))  # compared as affine forms
    assert is_base_of(T((add(n, 1),)), T((add(n, 1),)))


def test_shape_prim_tuple_base_check():
    assert is_base_of(ShapeStructInfo(ndim=2), ShapeStructInfo([n, 2]))
    assert not is_base_of(ShapeStructInfo([n, 2]), ShapeStructInfo(ndim=2))
    assert is_base_of(ShapeStructInfo(), ShapeStructInfo([1]))
    assert is_base_of(PrimStructInfo("int64"), PrimStructInfo("int64", n))
    assert not is_base_of(PrimStructInfo("int64", n), PrimStructInfo("int64", m))
    assert not is_base_of(PrimStructInfo("int32"), PrimStructInfo("int64"))
    assert is_base_of(TupleStructInfo([T(None, F32), ObjectStructInfo()]), TupleStructInfo([T((2,)), T((3,))]))
    assert not is_base_of(TupleStructInfo([T((2,))]), TupleStructInfo([T((2,)), T((3,))]))


def test_function_base_check():
    f = FuncStructInfo([T(None, F32)], T((2,)))
    assert is_base_of(FuncStructInfo([T((4,))], T(None, F32)), f)  # params are contravariant
    assert not is_base_of(FuncStructInfo([T(None, "")], T(None, F32)), f)
    assert is_base_of(FuncStructInfo(None, ObjectStructInfo()), f)
    assert not is_base_of(f, FuncStructInfo([T(None, F32)], T((2,)), purity=False))  # impure is not pure
    assert is_base_of(FuncStructInfo([T(None, F32)], T((2,)), purity=False), f)


# ----------------------------------------------------------------------------- LCA, erasure


def test_lca():
    a = T((2, 3))
    assert lca(a, T((2, 3))) is a
    assert_ndim_only(lca(T((2, 3)), T((2, 4))), 2)
    assert_ndim_only(lca(T((2, 3)), T((2,))), -1)
    assert lca(T((2,), "int32"), T((2,))).dtype == ""
    assert isinstance(lca(T((2,)), ShapeStructInfo([2])), ObjectStructInfo)
    s = lca(ShapeStructInfo([n, 2]), ShapeStructInfo([m, 2]))
    assert s.values is None and s.ndim == 2
    p = lca(PrimStructInfo("int64", n), PrimStructInfo("int64", m))
    assert p.dtype == "int64" and p.value is None
    t = lca(TupleStructInfo([T((2,)), T((3,))]), TupleStructInfo([T((2,)), T((4,))]))
    assert t[0].shape == (2,) and t[1].shape is None
    assert isinstance(lca(TupleStructInfo([T((2,))]), TupleStructInfo([])), ObjectStructInfo)
    f = lca(FuncStructInfo([T((2,))], T((2,))), FuncStructInfo([T((3,))], T((2,)), purity=False))
    assert f.params is None and not f.purity and f.ret.shape == (2,)


def test_lca_is_a_base_of_both():
    pairs = [(T((n, 3)), T((m, 3))), (T((2,), "int8"), T(None, F32, 1)),
             (ShapeStructInfo([1]), ShapeStructInfo([2, 3])),
             (TupleStructInfo([T((2,))]), TupleStructInfo([T((2,), "int8")])), (PrimStructInfo("int64"), T((2,)))]
    for a, b in pairs:
        c = lca(a, b)
        assert is_base_of(c, a) and is_base_of(c, b)


def test_erase_to_well_defined():
    s = TupleStructInfo([T((n, 3)), T((2, 3)), ShapeStructInfo([m]), PrimStructInfo("int64", n)])
    out = erase_to_well_defined(s)
    assert out[0].shape is None and out[0].ndim == 2
    assert out[1].shape == (2, 3)
    assert out[2].values is None and out[2].ndim == 1
    assert out[3].value is None
    kept = erase_to_well_defined(s, {n})
    assert kept[0].shape[0] is n and kept[2].values is None and kept[3].value is n


def test_function_call_binds_symbolic_parameters():
    f = FuncStructInfo([T((n, 4))], T((mul(n, 2), 10)))
    out = deduce_func_call(f, [T((8, 4))])
    assert out.shape == (16, 10)
    k = tir.Var("k", "int64")
    out = deduce_func_call(f, [T((k, 4))])
    assert_tensor(out, (mul(k, 2), 10))
    out = deduce_func_call(FuncStructInfo([T((n, 4))], T((m,))), [T((8, 4))])
    assert_ndim_only(out, 1)  # m is bound by nothing: erased
    with pytest.raises(StructInfoError, match="does not match"):
        deduce_func_call(f, [T((8, 5))])
    with pytest.raises(StructInfoError, match="takes 1 arguments"):
        deduce_func_call(f, [])
    assert deduce_func_call(FuncStructInfo(None, T((2,))), [T((1,))]).shape == (2,)


# ----------------------------------------------------------------------------- every operator, symbolically


def _symbolic_variants():
    """Each operator's sample call (tests/test_relax_ops.py) with one tensor dimension made `n`."""
    from test_relax_ops import sample, sinfo_of

    from irtool.ops import relax as rx

    for name in sorted(rx.relax_ops()):
        args, attrs = sample(name)
        for i, a in enumerate(args):
            if a["kind"] != "tensor":
                continue
            for k in range(len(a["shape"])):
                yield pytest.param(name, [sinfo_of(x) for x in args], i, k, attrs, id=f"{name}-arg{i}-dim{k}")


def _with_dim(args, i, k, d):
    s = args[i]
    shape = list(s.shape)
    shape[k] = d
    return args[:i] + [TensorStructInfo(tuple(shape), s.dtype)] + args[i + 1:]


@pytest.mark.parametrize("name, args, i, k, attrs", list(_symbolic_variants()))
def test_symbolic_deduction_agrees_with_static_deductions(name, args, i, k, attrs):
    """Wherever a dimension made symbolic gives an expression, the expression has the value the
    static deduction gives for every size tried (the generic-size assumption aside: sizes >= 2)."""
    try:
        sym = deduce_call(name, _with_dim(args, i, k, n), attrs)
    except StructInfoError:
        return  # rejected for a generic n (e.g. reshape's element count): TVM rejects these too
    orig = args[i].shape[k]
    for v in sorted({orig, orig + 1, orig + 2, 2 * orig + 1, 7, 16} - {0, 1}):
        try:
            static = deduce_call(name, _with_dim(args, i, k, v), attrs)
        except StructInfoError:
            continue
        syms = list(sym) if isinstance(sym, TupleStructInfo) else [sym]
        statics = list(static) if isinstance(static, TupleStructInfo) else [static]
        assert len(syms) == len(statics)
        for a, b in zip(syms, statics):
            values_a = a.values if isinstance(a, ShapeStructInfo) else a.shape
            values_b = b.values if isinstance(b, ShapeStructInfo) else b.shape
            assert a.ndim in (-1, b.ndim)
            if isinstance(a, TensorStructInfo):
                assert a.dtype in ("", b.dtype)
            if values_a is not None:
                assert [ev(d, {"n": v}) for d in values_a] == list(values_b), (v, values_a, values_b)
