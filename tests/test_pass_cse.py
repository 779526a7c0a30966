"""eliminate-common-subexpr (cse): results preserved under the interpreter on random
well-typed programs, idempotence and "no two equivalent calls left" (checked pairwise,
independently of the pass's hash table) on random modules, the cases TVM's tests pin
down (fskip, tuple arguments, projections, lets), and 100,000-node programs at the
default recursion limit."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import SAFE_FOR_PASSES, relay_modules
from test_pass_fold_constant import assert_same_values, optimized, run, typed_modules

import irtool.transform as T
from irtool.analysis.type_infer import infer_types
from irtool.ir import (
    Call,
    Constant,
    Function,
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
from irtool.ir.structural import attrs_equal
from irtool.ops.registry import lookup, make_call
from irtool.passes.eliminate_common_subexpr import eliminate_common_subexpr
from irtool.text import parse, to_text
from irtool.transform import PassContext, Sequential, get_pass

PROPERTY = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N = 100_000


def cse(mod: IRModule) -> IRModule:
    return get_pass("cse")()(mod)


def _same_arg(a, b) -> bool:
    """TVM's same_as || IsEqualScalar."""
    if a is b:
        return True
    return (type(a) is Constant and type(b) is Constant and a.is_scalar and b.is_scalar
            and structural_equal(a, b))


def equivalent(a: Call, b: Call) -> bool:
    """TVM's candidate test: same operator, equal attributes, arguments pairwise the same
    node or equal scalars, tuple arguments compared field by field one level deep."""
    if a.op is not b.op or len(a.args) != len(b.args) or not attrs_equal(a.attrs, b.attrs):
        return False
    for x, y in zip(a.args, b.args):
        if type(x) is Tuple and type(y) is Tuple:
            if len(x.fields) != len(y.fields) or not all(map(_same_arg, x.fields, y.fields)):
                return False
        elif not _same_arg(x, y):
            return False
    return True


def mergeable_calls(fn: Function) -> list[Call]:
    return [n for n in post_order(fn)
            if type(n) is Call and type(n.op) is Op and n.args and not lookup(n.op.name).stateful]


def common_subexpressions(mod: IRModule) -> list:
    """Pairs of distinct nodes of one function the pass should have merged (quadratic, on
    purpose; each function has a table of its own, as each is a separate pass run in TVM)."""
    pairs = []
    for fn in filter(optimized, mod.functions.values()):
        calls = mergeable_calls(fn)
        pairs += [(a, b) for i, a in enumerate(calls) for b in calls[i + 1:] if equivalent(a, b)]
        projections = {}
        for n in post_order(fn):
            if type(n) is TupleGetItem:
                first = projections.setdefault((id(n.tuple_value), n.index), n)
                if first is not n:
                    pairs.append((first, n))
    return pairs


def call_count(mod: IRModule) -> int:
    return sum(len(mergeable_calls(fn)) for fn in mod.functions.values())


# --------------------------------------------------------------------------- properties


@PROPERTY
@given(typed_modules(), st.integers(0, 2**32 - 1))
def test_cse_preserves_results(mod, seed):
    assert_same_values(run(cse(mod), seed), run(mod, seed))


@PROPERTY
@given(typed_modules())
def test_cse_leaves_no_common_subexpression_and_is_idempotent(mod):
    out = cse(mod)
    assert common_subexpressions(out) == [], to_text(out)
    assert cse(out) is out
    assert call_count(out) <= call_count(mod)


@PROPERTY
@given(relay_modules(SAFE_FOR_PASSES))
def test_cse_on_random_modules(mod):
    # the rewrite itself, without the pass's type inference: random modules are not all
    # well-typed, and merging calls needs no types
    def cse_untyped(m):
        return m.with_functions({name: eliminate_common_subexpr(fn) for name, fn in m.functions.items()})

    out = cse_untyped(mod)
    assert common_subexpressions(out) == [], to_text(out)
    assert structural_equal(cse_untyped(out), out)
    assert call_count(out) <= call_count(mod)


# --------------------------------------------------------------------------- examples


def test_pass_info_and_names():
    cls = get_pass("eliminate-common-subexpr")
    assert get_pass("cse") is cls and get_pass("EliminateCommonSubexpr") is cls
    assert (cls.tvm_name, cls.opt_level, cls.required) == ("EliminateCommonSubexpr", 3, ("infer-type",))
    assert isinstance(T.EliminateCommonSubexpr(), cls)


SIMPLE = """def @main(%x: Tensor[(1, 16), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%x);
  %2 = add(%0, 1f);
  %3 = add(%1, 1f);
  add(%2, %3)
}"""


def test_simple_and_opt_level():
    mod = parse(SIMPLE)
    with PassContext():  # TVM's default opt level 2 is below the pass's 3: skipped
        assert Sequential([cls := get_pass("cse")()])(mod) is mod
    with PassContext(opt_level=3):
        out = Sequential([cls])(mod)  # infer-type runs first, as the pass requires
    body = out["main"].body
    assert body.args[0] is body.args[1] and body.args[0].args[0].op.name == "nn.relu"
    assert out["main"].ret_type is not None


def test_fskip_keeps_nodes_out():
    """TVM's test_callback: skipping `add` merges only the relus."""
    fn = parse(SIMPLE)["main"]
    out = eliminate_common_subexpr(fn, lambda e: type(e) is Call and e.op.name == "add")
    a, b = out.body.args
    assert a is not b and a.args[0] is b.args[0]
    # projections are offered to fskip too
    t = Var("t")
    e = Tuple([TupleGetItem(t, 0), TupleGetItem(t, 0)])
    assert len(set(map(id, eliminate_common_subexpr(e).fields))) == 1
    assert len(set(map(id, eliminate_common_subexpr(e, lambda n: True).fields))) == 2


def test_unchanged_module_is_returned_as_is():
    mod = infer_types(parse("def @main(%x: float32) { add(exp(%x), %x) }"))
    assert cse(mod) is mod


def test_scalar_constants_compare_by_dtype_and_bits():
    x = Var("x", TensorType((), "float32"))
    adds = [make_call("add", x, Constant(np.array(v, "float32"))) for v in (1.0, 1.0, 0.0, -0.0, np.nan, np.nan)]
    out = eliminate_common_subexpr(Tuple(adds))
    f = out.fields
    assert f[0] is f[1] and f[2] is not f[3] and f[4] is f[5]
    # tensors equal in value are not scalars: only the same node is the same argument
    c1, c2 = (Constant(np.ones(2, "float32")) for _ in range(2))
    out = eliminate_common_subexpr(Tuple([make_call("add", x, c1), make_call("add", x, c2), make_call("add", x, c1)]))
    assert out.fields[0] is not out.fields[1] and out.fields[0] is out.fields[2]


def test_primitive_functions_are_not_skipped():
    """TVM's pass has no special case for them."""
    mod = infer_types(parse("""def @main(%x: float32) {
      %0 = fn (%p: float32, Primitive=1) -> float32 { add(exp(%p), exp(%p)) };
      %0(%x)
    }"""))
    body = cse(mod)["main"].body.op.body
    assert body.args[0] is body.args[1]


def test_let_values_merge_but_variables_stay():
    mod = infer_types(parse("""def @main(%x: float32, %y: float32) {
      let %a = add(%x, %y);
      let %b = add(%x, %y);
      multiply(%a, %b)
    }"""))
    fn = cse(mod)["main"]
    assert fn.body.value is fn.body.body.value
    assert fn.body.body.body.args[0] is fn.body.var and fn.body.body.body.args[1] is fn.body.body.var


# --------------------------------------------------------------------------- 100,000-node programs




def test_100k_chain_of_duplicated_calls(default_recursion_limit):
    x = Var("x", TensorType((4,), "float32"))
    e = x
    for _ in range(N // 3):
        e = Call(Op.get("add"), [Call(Op.get("exp"), [e]), Call(Op.get("exp"), [e])])
    out = cse(IRModule({"main": Function([x], e)}))
    calls = mergeable_calls(out["main"])
    assert len(calls) == 2 * (N // 3)
    top = out["main"].body
    assert top.args[0] is top.args[1]


def test_100k_identical_calls(default_recursion_limit):
    x = Var("x", TensorType((4,), "float32"))
    out = cse(IRModule({"main": Function([x], Tuple([Call(Op.get("exp"), [x]) for _ in range(N)]))}))
    assert len({id(f) for f in out["main"].body.fields}) == 1


def test_100k_let_chain(default_recursion_limit):
    x = Var("x", TensorType((4,), "float32"))
    vs = [Var(f"v{i}") for i in range(N)]
    body = vs[-1]
    for i in reversed(range(N)):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], Call(Op.get("add"), [prev, Call(Op.get("negative"), [x])]), body)
    out = cse(IRModule({"main": Function([x], body)}))
    negatives = {id(n) for n in post_order(out["main"]) if type(n) is Call and n.op.name == "negative"}
    assert len(negatives) == 1
    assert sum(type(n) is Let for n in post_order(out["main"])) == N
