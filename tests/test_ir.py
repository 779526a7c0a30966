"""The IR core: structural equality and hashing (as TVM's StructuralEqual/StructuralHash),
visitors and mutators on 100,000-node programs under the default recursion limit, and the
IRModule / Attrs API."""

from __future__ import annotations

import math

import numpy as np
import pytest

from irtool.ir import (
    ANY,
    Attrs,
    Call,
    Constant,
    ExprMutator,
    ExprVisitor,
    Function,
    FuncType,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypedScalar,
    Var,
    post_order,
    structural_equal,
    structural_hash,
    sub_exprs,
    type_equal,
)
from irtool.text import parse, to_text

F32 = TensorType((), "float32")
N = 100_000


def op(name, *args, attrs=None):
    return Call(Op.get(name), args, Attrs(attrs) if attrs is not None else None)


def assert_equal(a, b, **kw):
    assert structural_equal(a, b, **kw)
    assert structural_equal(b, a, **kw)
    assert structural_hash(a) == structural_hash(b)


def assert_not_equal(a, b, **kw):
    assert not structural_equal(a, b, **kw)
    assert not structural_equal(b, a, **kw)




# --------------------------------------------------------------------------- alpha equivalence


def test_alpha_equivalent_functions_are_equal():
    x, y = Var("x", F32), Var("y", F32)
    assert_equal(Function([x], op("exp", x)), Function([y], op("exp", y)))


def test_parameter_order_matters():
    a, b, c, d = (Var(n, F32) for n in "abcd")
    assert_not_equal(Function([a, b], a), Function([c, d], d))
    assert_equal(Function([a, b], a), Function([c, d], c))


def test_let_is_alpha_equivalent():
    x, a, b = Var("x", F32), Var("a"), Var("b")
    assert_equal(Function([x], Let(a, op("exp", x), op("log", a))),
                 Function([x], Let(b, op("exp", x), op("log", b))))
    c = Var("c")
    assert_not_equal(Function([x], Let(a, op("exp", x), a)), Function([x], Let(b, op("exp", x), c)))


def test_binding_type_annotations_matter():
    assert_not_equal(Function([Var("x", F32)], op("exp", Var("y"))), Function([Var("z", TensorType((), "int32"))],
                                                                                 op("exp", Var("w"))))
    x1, x2 = Var("x", F32), Var("x", TensorType((), "int32"))
    assert_not_equal(Function([x1], x1), Function([x2], x2))
    # No annotation is not the incomplete type `_` (as in TVM: a null type vs IncompleteType).
    u, v = Var("u"), Var("v", IncompleteType())
    assert_not_equal(Function([u], u), Function([v], v))


def test_nested_functions_keep_their_binders_apart():
    x, y, a, b = Var("x"), Var("y"), Var("a"), Var("b")
    # fn (%x) { fn (%y) { %x } } vs fn (%a) { fn (%b) { %b } }
    assert_not_equal(Function([x], Function([y], x)), Function([a], Function([b], b)))
    assert_equal(Function([x], Function([y], x)), Function([a], Function([b], a)))


# --------------------------------------------------------------------------- free variables


def test_free_vars_are_equal_only_to_themselves():
    a, b = Var("a", F32), Var("b", F32)
    assert structural_equal(op("exp", a), op("exp", a))
    assert_not_equal(op("exp", a), op("exp", b))
    assert_equal(op("exp", a), op("exp", b), map_free_vars=True)


def test_map_free_vars_is_one_to_one():
    a, b, c, d = (Var(n, F32) for n in "abcd")
    assert_not_equal(op("add", a, b), op("add", c, c), map_free_vars=True)
    assert_not_equal(op("add", a, a), op("add", c, d), map_free_vars=True)
    assert_equal(op("add", a, b), op("add", c, d), map_free_vars=True)


def test_map_free_vars_respects_annotations():
    assert_not_equal(op("exp", Var("a", F32)), op("exp", Var("b", TensorType((), "int8"))), map_free_vars=True)


def test_free_var_does_not_match_a_bound_one():
    a, x = Var("a"), Var("x")
    # fn (%x) { %a } vs fn (%x) { %x }: a free var never equals a bound one.
    assert_not_equal(Function([x], a), Function([x], x), map_free_vars=True)


def test_module_free_vars():
    a, b = Var("a", F32), Var("b", F32)
    m1, m2 = IRModule({"main": Function([], op("exp", a))}), IRModule({"main": Function([], op("exp", b))})
    assert_not_equal(m1, m2)
    assert_equal(m1, m2, map_free_vars=True)


# --------------------------------------------------------------------------- attributes


@pytest.mark.parametrize(("left", "right"), [
    (True, 1),
    (False, 0),
    (1, 1.0),
    (1, TypedScalar(1, "int64")),
    (TypedScalar(1, "int64"), TypedScalar(1, "int16")),
    (TypedScalar(1.0, "float64"), TypedScalar(1.0, "float16")),
    (1.0, TypedScalar(1.0, "float64")),
    ("1", 1),
    (None, 0),
    ((1, 2), (1, 2, 3)),
    ((1,), 1),
    ((1, (2,)), (1, 2)),
    ((True,), (1,)),
    (0.5, 0.25),
])
def test_attribute_values_compare_by_type_and_value(left, right):
    f = GlobalVar("f")
    assert_not_equal(Call(f, [], Attrs({"k": left})), Call(f, [], Attrs({"k": right})))
    assert_not_equal(Function([], f, attrs=Attrs({"k": left})), Function([], f, attrs=Attrs({"k": right})))


@pytest.mark.parametrize("value", [1, 0.5, math.nan, -0.0, "s", None, True, (1, (2.5, "x"), ()),
                                   TypedScalar(2**63 - 1, "int64"), TypedScalar(-1.5, "float16")])
def test_equal_attribute_values(value):
    f = GlobalVar("f")
    again = float("nan") if isinstance(value, float) and math.isnan(value) else value
    assert_equal(Call(f, [], Attrs({"k": value})), Call(f, [], Attrs({"k": again})))


def test_negative_zero_attribute_equals_zero():
    f = GlobalVar("f")
    assert_equal(Call(f, [], Attrs({"k": -0.0})), Call(f, [], Attrs({"k": 0.0})))


def test_attribute_order_does_not_matter_but_keys_do():
    f = GlobalVar("f")
    assert_equal(Call(f, [], Attrs({"a": 1, "b": 2})), Call(f, [], Attrs({"b": 2, "a": 1})))
    assert_not_equal(Call(f, [], Attrs({"a": 1})), Call(f, [], Attrs({"b": 1})))
    assert_not_equal(Call(f, [], Attrs({"a": 1})), Call(f, [], Attrs({"a": 1, "b": None})))
    assert_not_equal(Call(f, [], None), Call(f, [], Attrs({"a": 1})))


def test_hash_of_empty_attrs_matches_none():
    f = GlobalVar("f")
    assert_equal(Call(f, [], Attrs({})), Call(f, [], None))


def test_hash_of_nan_typed_scalar_attr():
    f = GlobalVar("f")
    assert_equal(Call(f, [], Attrs({"k": TypedScalar(float("nan"), "float64")})),
                 Call(f, [], Attrs({"k": TypedScalar(float("nan"), "float64")})))


# --------------------------------------------------------------------------- sharing


def test_dag_equals_the_tree_it_unfolds_to():
    x = Var("x", F32)
    shared = op("exp", x)
    dag = Function([x], op("add", shared, shared))
    tree = Function([x], op("add", op("exp", x), op("exp", x)))
    assert_equal(dag, tree)
    assert_not_equal(dag, Function([x], op("add", op("exp", x), op("log", x))))


def test_shared_tuple_and_projection_dag():
    x = Var("x", F32)
    t = Tuple([x, op("exp", x)])
    dag = Tuple([TupleGetItem(t, 0), TupleGetItem(t, 1)])
    tree = Tuple([TupleGetItem(Tuple([x, op("exp", x)]), 0), TupleGetItem(Tuple([x, op("exp", x)]), 1)])
    assert_equal(dag, tree)
    assert_not_equal(dag, Tuple([TupleGetItem(t, 0), TupleGetItem(t, 0)]))


def _diamonds(depth: int, leaf):
    e = leaf
    for _ in range(depth):
        e = op("add", e, e)  # 2**depth paths: equality and hashing must not walk them all
    return e


def test_deep_diamond_dags_compare_in_linear_time():
    """300 diamonds have 2^300 paths: a comparison that walked them instead of the shared
    nodes would not finish (no timed assertion)."""
    x = Var("x", F32)
    a, b = _diamonds(300, x), _diamonds(300, x)
    assert_equal(a, b)
    c = _diamonds(299, op("exp", x))
    assert_not_equal(a, op("add", c, c))


# --------------------------------------------------------------------------- constants and types


def _c(values, dtype, shape=None):
    a = np.array(values, dtype=dtype)
    return Constant(a.reshape(shape) if shape is not None else a)


@pytest.mark.parametrize(("left", "right"), [
    (_c(0.0, "float32"), _c(-0.0, "float32")),
    (_c(np.nan, "float32"), Constant(np.array(0xFFC00000, dtype=np.uint32).view(np.float32).reshape(()))),
    (_c(1, "int32"), _c(1, "int64")),
    (_c([1], "int32"), _c(1, "int32")),
    (_c(range(6), "float32", (2, 3)), _c(range(6), "float32", (3, 2))),
    (_c([1], "uint8"), _c([True], "bool")),
    (_c([1, 2], "int16"), _c([1, 3], "int16")),
    (Constant(None), _c(0, "float32")),
    (_c(np.zeros((0,)), "float32"), _c(np.zeros((0, 0)), "float32")),
])
def test_constants_differ_by_bits_dtype_and_shape(left, right):
    assert_not_equal(left, right)


@pytest.mark.parametrize("const", [
    _c(np.nan, "float32"), _c(-0.0, "float64"), _c(range(6), "float16", (2, 3)), _c([True, False], "bool"),
    _c(np.zeros((0, 3)), "float32"), Constant(np.array(0x7F800001, dtype=np.uint32).view(np.float32).reshape(())),
])
def test_constants_with_equal_bits_are_equal(const):
    copy = Constant(None if const.data is None else const.data.copy())
    assert_equal(const, copy)


def test_placeholders_equal():
    assert_equal(Constant(None), Constant(None))


@pytest.mark.parametrize(("left", "right", "equal"), [
    (TensorType((1, ANY, 3), "float32"), TensorType((1, ANY, 3), "float32"), True),
    (TensorType((1, ANY), "float32"), TensorType((1, 1), "float32"), False),
    (TensorType((3,), "float32"), TensorType((3,), "float16"), False),
    (TensorType((), "float32"), TensorType((1,), "float32"), False),
    (TupleType([F32]), F32, False),
    (TupleType([]), TupleType([]), True),
    (TupleType([F32, TupleType([])]), TupleType([F32, TupleType([])]), True),
    (FuncType([F32], F32), FuncType([F32], TupleType([F32])), False),
    (FuncType([F32, F32], F32), FuncType([F32], F32), False),
    (IncompleteType(), IncompleteType(), True),
    (IncompleteType(), F32, False),
])
def test_type_equality(left, right, equal):
    assert type_equal(left, right) is equal
    assert structural_equal(left, right) is equal
    if equal:
        assert structural_hash(left) == structural_hash(right)


def test_modules_compare_function_by_function():
    x, y = Var("x", F32), Var("y", F32)
    m1 = IRModule({"main": Function([x], op("exp", x)), "f": Function([y], y)})
    m2 = IRModule({"f": Function([x], x), "main": Function([y], op("exp", y))})
    assert_equal(m1, m2)
    assert_not_equal(m1, IRModule({"main": Function([x], op("exp", x))}))
    assert_not_equal(m1, IRModule({"main": Function([x], op("exp", x)), "g": Function([y], y)}))
    assert not structural_equal(m1, m1["main"])


def test_global_vars_compare_by_name():
    assert_equal(Call(GlobalVar("f"), []), Call(GlobalVar("f"), []))
    assert_not_equal(Call(GlobalVar("f"), []), Call(GlobalVar("g"), []))
    assert_not_equal(Call(GlobalVar("f"), []), Call(Op.get("f"), []))


def test_if_and_projection_indices_compare():
    c, x = Var("c", TensorType((), "bool")), Var("x", F32)
    assert_not_equal(Function([c, x], If(c, x, op("exp", x))), Function([c, x], If(c, op("exp", x), x)))
    t = Tuple([x, x])
    assert_not_equal(TupleGetItem(t, 0), TupleGetItem(t, 1))


# --------------------------------------------------------------------------- 100,000-node programs


def _call_chain(n: int, name: str = "exp", bottom: str | None = None):
    x = Var("x", TensorType((4,), "float32"))
    e = op(bottom or name, x)
    for _ in range(n - 1):
        e = op(name, e)
    return Function([x], e)


def _let_chain(n: int):
    x = Var("x", TensorType((4,), "float32"))
    prev, lets = x, []
    for i in range(n):
        v = Var(f"v{i}")
        lets.append((v, op("add", prev, x)))
        prev = v
    body = prev
    for v, value in reversed(lets):
        body = Let(v, value, body)
    return Function([x], body)


class _Counter(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.calls = self.vars = 0
        self.let_order = []

    def visit_call(self, e):
        self.calls += 1
        super().visit_call(e)

    def visit_var(self, e):
        self.vars += 1
        super().visit_var(e)

    def pre_visit_let(self, e):
        if len(self.let_order) < 3:
            self.let_order.append(e.var.name_hint)
        super().pre_visit_let(e)


class _ExpToLog(ExprMutator):
    def visit_call(self, e):
        new = super().visit_call(e)
        if new.op is Op.get("exp"):
            return Call(Op.get("log"), new.args, new.attrs)
        return new


def test_visitor_on_100k_call_chain(default_recursion_limit):
    fn = _call_chain(N)
    counter = _Counter()
    counter.visit(fn)
    assert counter.calls == N
    assert counter.vars == 1  # %x, the parameter and the operand: one node, visited once (memoised)
    assert len(post_order(fn)) == N + 3  # the calls, %x, the operator `exp` (one node) and the function
    assert post_order(fn)[-1] is fn


def test_identity_mutation_returns_the_same_object(default_recursion_limit):
    for fn in (_call_chain(N), _let_chain(N)):
        assert ExprMutator().visit(fn) is fn


def test_mutator_rewrites_100k_call_chain(default_recursion_limit):
    fn = _call_chain(N, bottom="negative")
    new = _ExpToLog().visit(fn)
    assert new is not fn and new.params == fn.params
    assert structural_equal(new, _call_chain(N, "log", bottom="negative"))
    assert not structural_equal(new, fn)


def test_structural_equal_and_hash_on_100k_chains(default_recursion_limit):
    a, b = _call_chain(N), _call_chain(N)
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert not structural_equal(a, _call_chain(N, bottom="log"))
    la, lb = _let_chain(N), _let_chain(N)
    assert structural_equal(la, lb) and structural_hash(la) == structural_hash(lb)


def test_visitor_on_100k_let_chain(default_recursion_limit):
    fn = _let_chain(N)
    counter = _Counter()
    counter.visit(fn)
    assert counter.calls == N
    assert counter.let_order == ["v0", "v1", "v2"]  # bindings in program order


def test_mutator_on_100k_let_chain(default_recursion_limit):
    class AddToSub(ExprMutator):
        def visit_call(self, e):
            new = super().visit_call(e)
            return Call(Op.get("subtract"), new.args) if new.op is Op.get("add") else new

    fn = _let_chain(N)
    new = AddToSub().visit(fn)
    e, count = new.body, 0
    while type(e) is Let:
        assert e.value.op is Op.get("subtract")
        e, count = e.body, count + 1
    assert count == N


def test_print_and_parse_100k_programs(default_recursion_limit):
    for fn, n in ((_call_chain(N), N), (_let_chain(N // 4), N // 4)):
        mod = IRModule({"main": fn})
        text = to_text(mod)
        assert text.count("\n") > n
        assert structural_equal(parse(text), mod)


# --------------------------------------------------------------------------- API


def test_sub_exprs_in_evaluation_order():
    x, c, v = Var("x"), Var("c"), Var("v")
    call = op("add", x, c)
    assert sub_exprs(call) == (Op.get("add"), x, c)
    assert sub_exprs(Tuple([x, c])) == (x, c)
    assert sub_exprs(TupleGetItem(x, 1)) == (x,)
    let = Let(v, x, c)
    assert sub_exprs(let) == (v, x, c)
    assert sub_exprs(If(c, x, v)) == (c, x, v)
    assert sub_exprs(Function([x], c)) == (x, c)
    assert sub_exprs(x) == () and sub_exprs(Constant(None)) == ()


def test_op_is_interned():
    assert Op.get("nn.conv2d") is Op.get("nn.conv2d")
    assert Op.get("add") is not Op.get("subtract")


def test_module_api():
    x = Var("x", F32)
    main, f = Function([x], op("exp", x)), Function([x], x)
    mod = IRModule({"main": main, "f": f})
    gv = mod.get_global_var("f")
    assert gv is mod.get_global_var("f") and gv.name_hint == "f"
    assert mod.get_global_var("g") is not gv
    assert mod["f"] is f and mod[gv] is f and mod["main"] is main
    assert "main" in mod and "nope" not in mod
    assert [name for name, _ in mod.items()] == ["f", "main"]  # sorted, as TVM prints
    with pytest.raises(KeyError):
        mod["nope"]
    new = mod.with_functions({"main": f})
    assert new.functions == {"main": f} and mod.functions == {"main": main, "f": f}
    assert new.get_global_var("f") is gv  # the global variables carry over
    assert "main" in repr(mod) and "f" in repr(mod)


def test_module_from_expr():
    x = Var("x", F32)
    fn = Function([x], x)
    assert IRModule.from_expr(fn)["main"] is fn
    assert IRModule.from_expr(fn, "g")["g"] is fn
    a, b = Var("a", F32), Var("b", F32)
    wrapped = IRModule.from_expr(op("add", a, op("exp", b), a))["main"]
    assert type(wrapped) is Function
    assert list(wrapped.params) == [a, b]  # free variables become parameters, in order (TVM's from_expr)


def test_parsed_module_interns_global_vars():
    mod = parse("def @f(%x) { @g(%x) }\ndef @g(%y) { @f(%y) }\ndef @main(%z) { (@f(%z), @g(%z)) }")
    main = mod["main"].body
    assert main.fields[0].op is mod["g"].body.op is mod.get_global_var("f")
    assert main.fields[1].op is mod["f"].body.op is mod.get_global_var("g")


def test_attrs_api():
    a = Attrs({"x": 1, "y": (2, 3)})
    assert a["x"] == 1 and a.get("z") is None and a.get("z", 5) == 5
    assert "y" in a and "z" not in a
    assert list(a) == ["x", "y"] and len(a) == 2 and dict(a.items()) == {"x": 1, "y": (2, 3)}
    b = a.with_attr("x", 7)
    assert b["x"] == 7 and a["x"] == 1  # immutable: a new Attrs
    assert not Attrs({})


def test_typed_scalar_equality():
    assert TypedScalar(1, "int64") == TypedScalar(1, "int64")
    assert TypedScalar(1, "int64") != TypedScalar(1, "int16")
    assert TypedScalar(1, "int64") != 1
    assert TypedScalar(float("nan"), "float64") == TypedScalar(float("nan"), "float64")


def test_function_is_primitive():
    assert Function([], Constant(None), attrs=Attrs({"Primitive": 1})).is_primitive
    assert Function([], Constant(None), attrs=Attrs({"Primitive": TypedScalar(1, "int64")})).is_primitive
    assert not Function([], Constant(None), attrs=Attrs({"Primitive": 0})).is_primitive
    assert not Function([], Constant(None)).is_primitive
