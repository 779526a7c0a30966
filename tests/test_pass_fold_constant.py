"""fold-constant: results preserved under the interpreter on random well-typed programs,
idempotence and "nothing foldable left" on random modules, the edge cases TVM's
FoldConstant defines (zero-argument calls, shape_of, lets, ifs, primitive functions,
stateful operators), and 100,000-node programs at the default recursion limit.

`typed_modules()` (also used by tests/test_pass_cse.py) draws runnable programs: float32
values of one shape or scalars, built from elementwise, broadcast, reduction, tuple,
split/concatenate, shape_of, if, let, full/zeros and stop_fusion/dropout nodes, with
constants (some written twice) and repeated calls, so that both passes find work.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import SAFE_FOR_PASSES, relay_modules

import irtool.transform as T
from irtool.analysis.type_infer import TypeInferencer, infer_types
from irtool.analysis.verifier import verify
from irtool.diagnostics import DiagnosticError
from irtool.exec.relay import Interpreter, interpret, random_input
from irtool.ir import (
    Call,
    Constant,
    Function,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    post_order,
    structural_equal,
)
from irtool.ops.registry import lookup, make_call
from irtool.passes import fold_constant
from irtool.passes.fold_constant import fold_constant_expr
from irtool.text import parse, to_text
from irtool.transform import PassContext, Sequential, get_pass

PROPERTY = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N = 100_000
SHAPE = (2, 3)
TENSOR = TensorType(SHAPE, "float32")
SCALAR = TensorType((), "float32")


def fold(mod: IRModule) -> IRModule:
    return get_pass("fold-constant")()(mod)


# --------------------------------------------------------------------------- typed programs

UNARY = ("negative", "abs", "tanh", "sigmoid", "exp", "floor", "nn.relu", "annotation.stop_fusion")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
SCALAR_VALUES = (0.0, 1.0, 2.0, -1.5, 0.5)


@st.composite
def typed_modules(draw, max_steps: int = 14) -> IRModule:
    """A runnable, well-typed `@main(%x, %y: Tensor[(2, 3)], %s: float32)`: every value is a
    float32 tensor of SHAPE or a float32 scalar, so that any two broadcast together."""
    params = [Var("x", TENSOR), Var("y", TENSOR), Var("s", SCALAR)]
    pool: list[tuple] = [(p, p.type_annotation.shape) for p in params]  # (expr, shape)
    bindings: list[tuple[Var, object]] = []

    def pick(shape=None):
        choices = [p for p in pool if shape is None or p[1] == shape]
        return draw(st.sampled_from(choices)) if choices else None

    def constant(shape=None):
        shape = draw(st.sampled_from(((), SHAPE))) if shape is None else shape
        if shape == ():
            return Constant(np.array(draw(st.sampled_from(SCALAR_VALUES)), "float32")), ()
        data = np.array(draw(st.lists(st.sampled_from(SCALAR_VALUES), min_size=6, max_size=6)), "float32")
        return Constant(data.reshape(SHAPE)), SHAPE

    def broadcast(*shapes):
        return SHAPE if SHAPE in shapes else ()

    for i in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(("const", "const", "unary", "binary", "binary", "reduce", "tuple", "split",
                                     "shape_of", "if", "full", "zeros", "dropout", "repeat", "repeat")))
        if kind == "const":
            e, shape = constant()
        elif kind == "unary":
            a, shape = pick()
            e = make_call(draw(st.sampled_from(UNARY)), a)
        elif kind == "binary":
            (a, sa), (b, sb) = pick(), pick()
            e, shape = make_call(draw(st.sampled_from(BINARY)), a, b), broadcast(sa, sb)
        elif kind == "reduce":
            a, _ = pick()
            e, shape = make_call(draw(st.sampled_from(("sum", "max", "mean"))), a), ()
        elif kind == "tuple":
            fields = [pick() for _ in range(draw(st.integers(1, 3)))]
            index = draw(st.integers(0, len(fields) - 1))
            e, shape = TupleGetItem(Tuple([f for f, _ in fields]), index), fields[index][1]
        elif kind == "split":
            a, b = pick(SHAPE), pick(SHAPE)
            if a is None:
                continue
            cat = make_call("concatenate", Tuple([a[0], b[0]]), axis=0)
            parts = make_call("split", cat, indices_or_sections=2, axis=0)
            e, shape = TupleGetItem(parts, draw(st.integers(0, 1))), SHAPE
        elif kind == "shape_of":
            a, _ = pick()
            dims = make_call("cast", make_call("shape_of", a), dtype="float32")
            e, shape = make_call("sum", dims), ()
        elif kind == "if":
            (a, sa), (b, sb) = pick(), pick()
            if draw(st.booleans()):
                cond = Constant(np.array(draw(st.booleans())))
            else:
                cond = make_call("less", make_call("sum", a), make_call("sum", b))
            shape = broadcast(sa, sb)
            e = If(cond, make_call("add", a, b), make_call(draw(st.sampled_from(BINARY)), b, a))
        elif kind == "full":
            fill, _ = constant(())
            e, shape = make_call("full", fill, shape=SHAPE), SHAPE
        elif kind == "zeros":
            e, shape = make_call(draw(st.sampled_from(("zeros", "ones"))), shape=SHAPE, dtype="float32"), SHAPE
        elif kind == "dropout":
            a, shape = pick()
            e = TupleGetItem(make_call("nn.dropout", a), 0)
        else:  # "repeat": the same call again, as a new node, maybe with its scalars written anew
            calls = [(c, s) for c, s in pool if type(c) is Call]
            if not calls:
                continue
            c, shape = draw(st.sampled_from(calls))
            args = [Constant(a.data.copy()) if type(a) is Constant and a.is_scalar and draw(st.booleans()) else a
                    for a in c.args]
            e = Call(c.op, args, c.attrs)
        if draw(st.integers(0, 3)) == 0:  # bind it: `let %vi = e;`
            v = Var(f"v{i}")
            bindings.append((v, e))
            e = v
        pool.append((e, shape))
    results = [e for e, _ in pool[3:]] or [params[0]]
    body = results[-1] if len(results) == 1 or draw(st.booleans()) else Tuple(results[-4:])
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return infer_types(IRModule({"main": Function(params, body)}))


def run(mod: IRModule, seed: int):
    rng = np.random.default_rng(seed)
    inputs = [random_input(p.type_annotation, rng) for p in mod["main"].params]
    return interpret(mod, inputs)


def assert_same_values(a, b) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_values(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)  # the same references on the same values: exact


def optimized(fn: Function) -> bool:
    """Whether a function pass transforms this global function: not one handed to an
    external compiler (`Compiler="..."`) or marked SkipOptimization (TVM's rule)."""
    return not (isinstance(fn.attr("Compiler"), str) or fn.attr("SkipOptimization"))


def non_primitive_nodes(mod: IRModule):
    """Every node the pass folds: outside primitive functions, in optimised functions."""
    for fn in mod.functions.values():
        if fn.is_primitive or not optimized(fn):
            continue
        stack, seen = [fn], set()
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            yield e
            if type(e) is Function and e.is_primitive and e is not fn:
                continue
            cls = type(e)
            if cls is Call:
                stack += [e.op, *e.args]
            elif cls is Tuple:
                stack += e.fields
            elif cls is TupleGetItem:
                stack.append(e.tuple_value)
            elif cls is Let:
                stack += [e.value, e.body]
            elif cls is If:
                stack += [e.cond, e.true_branch, e.false_branch]
            elif cls is Function:
                stack.append(e.body)


def _constant_arg(e) -> bool:
    return (type(e) is Constant and e.data is not None) or (type(e) is Tuple and all(map(_constant_arg, e.fields)))


def foldable(e) -> bool:
    """What fold-constant must not leave behind (checked independently of the pass's code)."""
    cls = type(e)
    if cls is TupleGetItem:
        return type(e.tuple_value) is Tuple and e.index < len(e.tuple_value.fields)
    if cls is If:
        return type(e.cond) is Constant and e.cond.data is not None and e.cond.data.size > 0
    if cls is Let:
        return type(e.value) is Constant
    if cls is not Call or type(e.op) is not Op or not e.args or lookup(e.op.name).stateful:
        return False
    if e.op.name == "shape_of":
        arg = e.args[0]
        if type(arg) is Constant:
            return arg.data is not None
        return type(arg.checked_type) is TensorType and all(type(d) is int for d in arg.checked_type.shape)
    if not all(map(_constant_arg, e.args)):
        return False
    # An all-constant call may stay only when it cannot be evaluated: ill-typed (TVM's
    # Eval would reject it too), too large a result, or beyond the NumPy reference.
    fn = Function([], e)
    try:
        t = TypeInferencer().infer_expr(fn).ret_type
    except DiagnosticError:
        return False
    try:
        sizes = [np.dtype(f.dtype).itemsize * math.prod(f.shape) for f in getattr(t, "fields", [t])]
        if sum(sizes) > fold_constant.MAX_FOLDED_BYTES:
            return False
        interpret(IRModule({"main": fn}), [])
    except Exception:  # a dtype NumPy lacks (int8x4), or a reference that gives up
        return False
    return True


@contextlib.contextmanager
def small_constants_only():
    """Random attribute values ask for huge results (repeat 2**31 times): cap the size."""
    old = fold_constant.MAX_FOLDED_BYTES
    fold_constant.MAX_FOLDED_BYTES = 1 << 16
    try:
        yield
    finally:
        fold_constant.MAX_FOLDED_BYTES = old


# --------------------------------------------------------------------------- properties


@PROPERTY
@given(typed_modules(), st.integers(0, 2**32 - 1))
def test_folding_preserves_results(mod, seed):
    out = fold(mod)
    assert_same_values(run(out, seed), run(mod, seed))


@PROPERTY
@given(typed_modules())
def test_folding_is_idempotent_and_leaves_nothing_foldable(mod):
    out = fold(mod)
    infer_types(out)
    assert [e for e in non_primitive_nodes(out) if foldable(e)] == [], to_text(out)
    assert fold(out) is out, to_text(out)


@PROPERTY
@given(relay_modules(SAFE_FOR_PASSES))
def test_folding_random_modules(mod):
    with small_constants_only():
        out = fold(mod)
        assert structural_equal(fold(out), out), to_text(out)
        assert [e for e in non_primitive_nodes(out) if foldable(e)] == [], to_text(out)
    # primitive functions, global or literal, come back as they were
    before = {id(n) for fn in mod.functions.values() for n in post_order(fn) if type(n) is Function and n.is_primitive}
    for fn in out.functions.values():
        assert all(id(n) in before for n in post_order(fn) if type(n) is Function and n.is_primitive), to_text(out)


# --------------------------------------------------------------------------- examples


def test_pass_info_and_names():
    cls = get_pass("fold-constant")
    assert get_pass("FoldConstant") is cls
    assert (cls.tvm_name, cls.opt_level, cls.required) == ("FoldConstant", 2, ())
    assert isinstance(T.FoldConstant(), cls)
    mod = parse("def @main(%x: float32) { add(%x, multiply(2f, 3f)) }")
    with PassContext(opt_level=1):
        assert Sequential([cls()])(mod) is mod  # opt_level 2 is above 1
    assert to_text(Sequential([cls()])(mod)).splitlines()[2] == "  add(%x, 6f)"


def test_fold_example_and_values():
    mod = infer_types(parse("""
    def @main(%x: Tensor[(2), float32]) {
      %0 = full(2f, shape=[3]);
      %1 = multiply(%0, %0);
      %2 = split(%1, indices_or_sections=[1]);
      (add(%x, %2.1), %2.0, concatenate((%2.0, %2.1)))
    }"""))
    out = fold(mod)
    body = out["main"].body
    assert type(body.fields[0].args[1]) is Constant
    np.testing.assert_array_equal(body.fields[0].args[1].data, [4, 4])
    np.testing.assert_array_equal(body.fields[1].data, [4])
    np.testing.assert_array_equal(body.fields[2].data, [4, 4, 4])
    assert body.fields[2].data.dtype == np.float32
    assert out["main"].ret_type is not None  # re-inferred, as TVM's function passes do


def test_zero_argument_calls_are_kept():
    mod = infer_types(parse('def @main() { add(zeros(shape=[2], dtype="float32"), ones(shape=[2], dtype="float32")) }'))
    assert fold(mod) is mod


def test_shape_of_is_folded_from_the_checked_type():
    text = ('def @main(%x: Tensor[(2, 3), float32], %d: Tensor[(?, 3), float32]) {'
            ' (shape_of(%x), shape_of(%x, dtype="int64"), shape_of(%d)) }')
    out = fold(infer_types(parse(text)))
    a, b, d = out["main"].body.fields
    assert a.data.dtype == np.int32 and a.data.tolist() == [2, 3]
    assert b.data.dtype == np.int64 and b.data.tolist() == [2, 3]
    assert type(d) is Call  # a `?` dimension: unknown until run
    # untyped, a non-constant argument has no shape to read (as TVM: it needs checked types)
    untyped = parse(text)
    assert fold(untyped) is untyped


def test_shape_of_a_folded_argument_folds_untyped_too():
    mod = parse("def @main() { shape_of(full(1f, shape=[4, 5])) }")
    out = fold(mod)
    assert out["main"].body.data.tolist() == [4, 5]
    assert fold(out) is out


def test_shape_of_a_scalar_is_the_empty_shape():
    out = fold(infer_types(parse("def @main(%s: float32) { shape_of(%s) }")))
    data = out["main"].body.data
    assert data.shape == (0,) and data.dtype == np.int32
    assert to_text(out).splitlines()[1] == "def @main(%s: float32) -> Tensor[(0), int32] {"


def test_let_bound_constants_are_substituted():
    mod = infer_types(parse("""
    def @main(%x: Tensor[(1), float32]) {
      let %t1 = 1f;
      let %t2 = add(%t1, %t1);
      let %t3 = add(%t2, %x);
      let %t4 = (%t2, 3f);
      %t3
    }"""))
    fn = fold(mod)["main"]
    assert fn.body.var.name_hint == "t3" and fn.body.value.args[0].data == 2
    assert fn.body.body.var.name_hint == "t4"  # a tuple of constants is not substituted (TVM)
    assert fn.body.body.value.fields[0].data == 2


def test_if_with_constant_condition():
    mod = infer_types(parse("""
    def @main(%x: float32, %c: bool) {
      (if (greater(2f, 1f)) { exp(%x) } else { %x }, if (%c) { add(1f, 1f) } else { %x })
    }"""))
    first, second = fold(mod)["main"].body.fields
    assert type(first) is Call and first.op.name == "exp"
    assert type(second) is If and second.true_branch.data == 2


def test_projection_of_a_tuple_node_folds_even_when_not_constant():
    mod = parse("def @main(%x: float32, %y: float32) { %0 = (%x, exp(%y)); %0.1 }")
    body = fold(mod)["main"].body
    assert type(body) is Call and body.op.name == "exp"


def test_stateful_calls_and_calls_of_functions_are_kept():
    mod = infer_types(parse("""
    def @id(%a: float32) -> float32 { %a }
    def @main() {
      %0 = nn.dropout(2f);
      %1 = fn (%b: float32) { %b };
      (%0.0, @id(2f), %1(2f))
    }"""))
    assert fold(mod) is mod


def test_stop_fusion_of_a_constant_folds():
    mod = infer_types(parse("def @main(%x: float32) { (annotation.stop_fusion(3f), annotation.stop_fusion(%x)) }"))
    a, b = fold(mod)["main"].body.fields
    assert type(a) is Constant and a.data == 3
    assert type(b) is Call


PRIMITIVE = """
def @fused(%p: float32, Primitive=1) -> float32 {
  %0 = (%p, add(1f, 2f));
  let %k = 2f;
  multiply(%0.1, %k)
}
def @main(%x: float32) {
  %0 = fn (%q: float32, Primitive=1) -> float32 { %1 = (exp(1f), %q); %1.0 };
  %0(@fused(%x))
}"""


def test_primitive_functions_are_untouched():
    mod = infer_types(parse(PRIMITIVE))
    out = fold(mod)
    assert out is mod


def test_untyped_and_ill_typed_constant_calls():
    # without types the call is typed on the spot (TVM's Eval type-checks first) ...
    out = fold(parse("def @main() { add(1f, 2f) }"))
    assert out["main"].body.data == 3
    # ... and one that does not type-check stays for the verifier to report
    bad = parse("def @main() { add(1f, 2i64) }")
    assert fold(bad) is bad


def test_an_untyped_module_stays_untyped():
    mod = parse("def @main(%x) { (add(%x, add(1f, 2f)), concatenate((full(1f, shape=[2]), %x))) }")
    out = fold(mod)
    assert out["main"].body.fields[0].args[1].data == 3
    assert all(n.checked_type is None for n in post_order(out["main"]) if type(n) is not Op)  # Ops are shared
    verify(out)  # it would infer types (and fail on the unannotated %x) if any were written


def test_a_reference_that_fails_leaves_the_call(monkeypatch):
    def fail(self, call, args):
        raise ValueError("zero-size array to reduction operation maximum which has no identity")

    monkeypatch.setattr(Interpreter, "call_op", fail)
    mod = infer_types(parse("def @main() { nn.softmax(full(1f, shape=[2, 0])) }"))
    assert fold(mod) is mod


def test_results_too_large_to_store_are_not_folded():
    mod = parse("def @main() { full(1f, shape=[1000]) }")
    with small_constants_only():
        fold_constant.MAX_FOLDED_BYTES = 3999
        assert fold(mod) is mod
        fold_constant.MAX_FOLDED_BYTES = 4000
        assert fold(mod)["main"].body.data.shape == (1000,)


def test_fold_constant_expr():
    x = Var("x", TENSOR)
    c = Constant(np.ones(SHAPE, "float32"))
    e = make_call("add", x, make_call("multiply", c, Constant(np.array(3, "float32"))))
    folded = fold_constant_expr(e)
    assert folded.args[0] is x and folded.args[1].data.tolist() == [[3, 3, 3], [3, 3, 3]]


def test_printed_constants_scalar_inline_tensor_in_metadata():
    mod = infer_types(parse("def @main(%x: Tensor[(2), float32]) {"
                            " (add(%x, full(1f, shape=[2])), sum(full(1f, shape=[2]))) }"))
    text = to_text(fold(mod))
    assert "(%0, 2f)" in text and "add(%x, meta[relay.Constant][0])" in text and "#[metadata]" in text
    assert structural_equal(parse(text), fold(mod))


def test_call_attributes_reach_the_reference():
    mod = infer_types(parse("def @main() { sum(full(1f, shape=[2, 3]), axis=[1], keepdims=True) }"))
    data = fold(mod)["main"].body.data
    assert data.shape == (2, 1) and data.tolist() == [[3], [3]]
    # attributes left at their defaults (None) work as well
    call = Call(Op.get("sum"), [Constant(np.ones((2, 2), "float32"))], None)
    assert fold_constant_expr(call).data == 4


# --------------------------------------------------------------------------- 100,000-node programs




def test_100k_chain_without_constants(default_recursion_limit):
    x = Var("x", TensorType((4,), "float32"))
    e = x
    for _ in range(N):
        e = Call(Op.get("exp"), [e])
    mod = IRModule({"main": Function([x], e)})
    assert fold(mod) is mod


def test_100k_constant_chain_folds_to_one_constant(default_recursion_limit):
    one = Constant(np.array(1, "int32"))
    e = one
    for _ in range(N):
        e = Call(Op.get("add"), [e, one])
    out = fold(IRModule({"main": Function([], e)}))
    assert out["main"].body.data == N + 1


def test_100k_let_chain_of_constants(default_recursion_limit):
    x = Var("x", TensorType((), "int32"))
    vars_ = [Var(f"v{i}") for i in range(N)]
    body = Call(Op.get("add"), [x, vars_[-1]])
    for i in reversed(range(N)):
        value = Constant(np.array(0, "int32")) if i == 0 else Call(Op.get("add"), [vars_[i - 1], Constant(
            np.array(1, "int32"))])
        body = Let(vars_[i], value, body)
    out = fold(IRModule({"main": Function([x], body)}))
    body = out["main"].body
    assert type(body) is Call and body.args[1].data == N - 1



def test_a_result_of_unknown_dimension_matches_its_type():
    """Regression (property test in CI): the fast type check compared argwhere's (0, 1)
    result with its type's `(?, 1)` literally, and fold-constant raised."""
    from irtool.passes.fold_constant import _matches
    from irtool.text import parse as parse_text

    mod = infer_types(parse_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), int32]) {\n  argwhere(%x)\n}\n'))
    result_type = mod.functions["main"].body.checked_type  # Tensor[(?, 2), int32]
    assert _matches(np.zeros((0, 2), "int32"), result_type)
    assert not _matches(np.zeros((0, 3), "int32"), result_type)
