"""fuse-ops: invariants on random dataflow graphs, TVM's own test cases that need more
than text, the graph builder and partitioner pieces, and the pass API.

The random DAGs mix every pattern kind (elementwise, broadcast with and without
shape change, injective, reductions, kOutEWiseFusable, tuples and projections, scalar
and tensor constants, stop_fusion, values used by the result and inside). For each:
  - fusing preserves the results, bit for bit (the interpreter runs the same
    references in the same order, only grouped into functions);
  - every group is connected and convex: no path leaves a group and comes back;
  - fusing twice changes nothing.
Set IRTOOL_FUSE_EXAMPLES to run more of them (the closing note quotes a 3000-DAG run).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irtool
import irtool.transform as T
from irtool.analysis.graph_partitioner import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    GraphPartitioner,
    post_dominator_tree,
)
from irtool.analysis.type_infer import infer_type_pass, infer_types
from irtool.exec.relay import interpret, random_input
from irtool.ir import Call, Constant, Function, IRModule, Tuple, TupleGetItem, Var
from irtool.ir.structural import structural_equal
from irtool.ir.types import ANY, TensorType
from irtool.ops.registry import make_call
from irtool.text import parse, to_text
from irtool.transform import PassContext, Sequential
from passes.fuse_ops import build_graph, fuse_function

EXAMPLES = int(os.environ.get("IRTOOL_FUSE_EXAMPLES", "150"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
T44 = TensorType((4, 4), "float32")


def fuse(mod: IRModule, **options) -> IRModule:
    return T.Sequential([T.FuseOps(**options)])(mod, PassContext(opt_level=2))


# --------------------------------------------------------------------------- random DAGs


@st.composite
def dags(draw) -> IRModule:
    """A typed function over (4, 4) float32 tensors whose nodes use earlier nodes."""
    params = [Var(f"x{i}", T44) for i in range(draw(st.integers(1, 3)))]
    weight = Var("w", T44)
    params.append(weight)
    nodes = list(params)
    uses: dict[int, int] = {}

    def pick():
        node = nodes[draw(st.integers(0, len(nodes) - 1))]
        uses[id(node)] = uses.get(id(node), 0) + 1
        return node

    for _ in range(draw(st.integers(1, 24))):
        kind = draw(st.sampled_from(["unary", "unary", "binary", "binary", "scalar", "tensor_const", "injective",
                                     "reduce_bcast", "dense", "softmax", "catsplit", "stop"]))
        if kind == "unary":
            node = make_call(draw(st.sampled_from(["negative", "nn.relu", "sigmoid", "tanh", "abs"])), pick())
        elif kind == "binary":
            node = make_call(draw(st.sampled_from(["add", "multiply", "subtract", "maximum"])), pick(), pick())
        elif kind == "scalar":
            node = make_call("multiply", pick(), Constant(np.array(draw(st.sampled_from([0.5, 2.0, -1.0])),
                                                                      "float32")))
        elif kind == "tensor_const":
            data = np.arange(16, dtype="float32").reshape(4, 4) / 8
            node = make_call("add", pick(), Constant(data))
        elif kind == "injective":
            node = draw(st.sampled_from([
                lambda a: make_call("transpose", a, axes=(1, 0)),
                lambda a: make_call("reshape", a, newshape=(4, 4)),
                lambda a: make_call("squeeze", make_call("expand_dims", a, axis=0), axis=(0,)),
            ]))(pick())
        elif kind == "reduce_bcast":
            reduced = make_call(draw(st.sampled_from(["sum", "max"])), pick(), axis=(1,), keepdims=True)
            node = make_call("add", pick(), reduced)  # a broadcast edge that is not elementwise
        elif kind == "dense":
            node = make_call("nn.dense", pick(), weight, units=None)
        elif kind == "softmax":
            node = make_call("nn.softmax", pick())
        elif kind == "catsplit":
            cat = make_call("concatenate", Tuple([pick(), pick()]), axis=1)
            node = TupleGetItem(make_call("split", cat, indices_or_sections=2, axis=1), draw(st.integers(0, 1)))
        else:
            node = make_call("annotation.stop_fusion", pick())
        nodes.append(node)
    sinks = [n for n in nodes[len(params):] if id(n) not in uses]
    extra = draw(st.lists(st.sampled_from(nodes[len(params):]), max_size=2))  # results also used inside
    outputs = sinks + [n for n in extra if n not in sinks]
    body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    return infer_types(IRModule({"main": Function(params, body)}))


def run(mod: IRModule):
    rng = np.random.default_rng(0)
    inputs = [random_input(p.type_annotation, rng) for p in mod["main"].params]
    return interpret(mod, inputs)


def flatten(value):
    return [x for v in value for x in flatten(v)] if isinstance(value, tuple) else [value]


@PROPERTY
@given(dags())
def test_fusion_preserves_results_exactly(mod):
    before = run(mod)
    fused = fuse(mod)
    after = run(fused)
    for a, b in zip(flatten(before), flatten(after), strict=True):
        np.testing.assert_array_equal(a, b)


@PROPERTY
@given(dags())
def test_groups_are_connected_and_convex(mod):
    graph = build_graph(mod["main"])
    groups = GraphPartitioner(2).partition(graph)
    members: dict = {}
    for i, g in enumerate(groups):
        members.setdefault(g.find_root(), []).append(i)
    succ = [[u for u, _ in graph.outputs[i]] for i in range(len(graph))]
    for group, nodes in members.items():
        inside = set(nodes)
        # connected: one weakly connected component
        adjacent = {i: set() for i in nodes}
        for i in nodes:
            for u in succ[i]:
                if u in inside:
                    adjacent[i].add(u)
                    adjacent[u].add(i)
        seen, stack = {nodes[0]}, [nodes[0]]
        while stack:
            for j in adjacent[stack.pop()] - seen:
                seen.add(j)
                stack.append(j)
        assert seen == inside, f"group of {group.root_ref!r} is not connected"
        # convex: nothing outside the group is both reachable from it and reaches it
        outside_reached, stack = set(), [u for i in nodes for u in succ[i] if u not in inside]
        while stack:
            j = stack.pop()
            if j in outside_reached:
                continue
            outside_reached.add(j)
            assert not any(u in inside for u in succ[j]), f"a path leaves and re-enters {group.root_ref!r}"
            stack.extend(u for u in succ[j] if u not in inside)
        # the root is the group's last node, the one whose value leaves it
        assert group.root_ref is graph.refs[max(nodes)]


@PROPERTY
@given(dags())
def test_fusing_twice_changes_nothing(mod):
    once = fuse(mod)
    twice = fuse(once)
    assert structural_equal(once, twice), to_text(once)


@PROPERTY
@given(dags())
def test_every_operator_call_ends_up_in_a_primitive_function(mod):
    fused = fuse(mod)
    main = fused["main"]
    from irtool.ir.visitor import post_order

    for node in post_order(main, enter_functions=False):
        if type(node) is Call:
            assert type(node.op) is Function and node.op.is_primitive, to_text(fused)
    assert "annotation.stop_fusion" not in to_text(fused)


# --------------------------------------------------------------------------- the seed


def test_seed_fuses_verbatim():
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mod = irtool.parse(open(os.path.join(root, "examples", "seed000.ir")).read())
    fused = fuse(mod, fuse_opt_level=4)
    printed = irtool.to_text(fused, show_types=True, show_meta_data=False).splitlines()
    expected = [line for line in open(os.path.join(root, "examples", "seed000_fused.ir")).read().splitlines()
                if not line.startswith("//")]
    assert printed == expected
    # and without types it is the seed's text with the comments taken out
    plain = irtool.to_text(fused, show_meta_data=False).splitlines()
    assert plain == [re.sub(r" /\*.*?\*/", "", line) for line in expected]


# --------------------------------------------------------------------------- TVM's tests needing more than text


def _base(name: str, shape) -> tuple[Var, Call]:
    x = Var(name, TensorType(shape, "float32"))
    return x, make_call("exp", make_call("add", x, Constant(np.array(1, "float32"))))


def _primitive(params, body) -> Function:
    from irtool.ir.expr import Attrs

    return Function(params, body, None, Attrs({"Primitive": 1}))


@pytest.mark.parametrize("limit", [31, 128])
@pytest.mark.parametrize("dynamic", [False, True])
def test_max_function_args_matches_tvm(limit, dynamic):
    """TVM's test_fuse_max_num_args: 300 `exp(add(x_i, 1))` summed left to right, with
    the target's max_function_args; the expected module is built as TVM's test builds it."""
    shape = (ANY, 20) if dynamic else (10, 20)
    n = 300
    any_dims = 1 if dynamic else 0
    per_input = 1 + (any_dims + len(shape) if dynamic else 0)  # the tensor, its dynamic dims and strides
    args_limit = max(limit - (1 + any_dims), 0)  # the output: one buffer and its dynamic dims

    inputs, outs = zip(*(_base(f"x{i}", shape) for i in range(n)))
    acc = outs[0]
    for w in outs[1:]:
        acc = make_call("add", acc, w)
    before = IRModule({"main": Function(list(inputs), acc)})

    # expected: the first group takes as many inputs as fit, then one group per input
    added, params, res, i = 0, [], None, 0
    while added + per_input <= args_limit:
        p, out = _base(f"p{i}", shape)
        params.append(p)
        res = out if res is None else make_call("add", res, out)
        added += per_input
        i += 1
    xs = [Var(f"x{k}", TensorType(shape, "float32")) for k in range(n)]
    out = Call(_primitive(params, res), xs[:i])
    for k in range(i, n):
        p, f = _base(f"p{k}", shape)
        w = Call(_primitive([p], f), [xs[k]])
        a, b = Var("a", TensorType(shape, "float32")), Var("b", TensorType(shape, "float32"))
        out = Call(_primitive([a, b], make_call("add", a, b)), [out, w])
    expected = IRModule({"main": Function(xs, out)})

    fused = T.Sequential([T.FuseOps()])(infer_types(before), PassContext(config={
        "relay.FuseOps.max_depth": n * 5, "relay.FuseOps.max_function_args": limit}))
    assert structural_equal(fused, infer_type_pass(expected), map_free_vars=True)


def test_immutable():
    """TVM's test_immutable: the pass leaves its input module as it was."""
    text = "def @main(%x: Tensor[(10, 20), float32]) {\n  %0 = add(%x, 1f);\n  %1 = exp(%0);\n  squeeze(%1)\n}"
    mod = infer_types(parse(text))
    before = to_text(mod)
    fused = fuse(mod)
    assert to_text(mod) == before and fused is not mod
    assert structural_equal(mod, infer_types(parse(text)))


def test_split_with_non_tensor_fields_is_well_formed():
    """TVM's test_split: a projection of a tuple holding a tuple does not fuse through."""
    mod = infer_types(parse("""def @main(%x: Tensor[(6, 9), float32]) {
  %0 = split(%x, indices_or_sections=3);
  %1 = (%0, %x);
  %2 = %1.0;
  %3 = %2.1;
  %4 = %0.0;
  add(%4, %3)
}"""))
    fused = fuse(mod)
    assert structural_equal(fuse(fused), fused)
    np.testing.assert_array_equal(run(mod), run(fused))


# --------------------------------------------------------------------------- graph builder and partitioner


SEED_TEXT = """def @main(%x: Tensor[(1, 3, 16, 16), float32], %weight: Tensor[(3, 3, 3, 3), float32],
          %c: Tensor[(1, 3, 14, 14), float32]) {
  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]);
  %1 = add(%0, %c);
  %2 = nn.relu(%1);
  %3 = multiply(%0, 0.5f);
  add(%2, %3)
}"""


def test_graph_of_the_seed_as_the_seed_draws_it():
    # the seed numbers: 0 %x, 1 %weight, 2 conv2d, 3 the constant, 4 add, 5 relu, 6 0.5f, 7 multiply, 8 add
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph = build_graph(infer_types(irtool.parse(open(os.path.join(root, "examples", "seed000.ir")).read()))["main"])
    kinds = [type(r).__name__ if type(r) is not Call else r.op.name for r in graph.refs]
    assert kinds == ["Var", "Var", "nn.conv2d", "Constant", "add", "nn.relu", "Constant", "multiply", "add"]
    assert graph.outputs[2] == [(4, ELEMWISE), (7, ELEMWISE)]  # same-shape broadcast edges are elementwise
    assert graph.outputs[3] == [(4, ELEMWISE)]
    assert graph.pattern[6] == ELEMWISE and graph.pattern[3] == OPAQUE  # scalar and tensor constants
    assert graph.extern_ref == [True, True, False, False, False, False, False, False, True]
    tree = post_dominator_tree(graph)
    assert tree.parent[2] == 8 and tree.pattern[2] == ELEMWISE  # conv2d's post-dominator is the last add
    assert tree.parent[6] == 7 and tree.parent[8] == -1


def test_broadcast_edge_stays_broadcast_when_shapes_differ():
    graph = build_graph(infer_types(parse(
        "def @main(%x: Tensor[(4, 4), float32], %b: Tensor[(4), float32]) { add(%x, %b) }"))["main"])
    assert graph.outputs[0] == [(2, ELEMWISE)] and graph.outputs[1] == [(2, BROADCAST)]


def test_data_dependent_op_with_dynamic_result_is_opaque():
    mod = infer_types(parse("def @main(%x: Tensor[(4), float32]) { broadcast_to(%x, shape=[3, 4]) }"))
    call = mod["main"].body
    assert build_graph(mod["main"]).pattern[1] == BROADCAST
    call.checked_type = TensorType((ANY, 4), "float32")  # as a dynamic shape would make it
    assert build_graph(mod["main"]).pattern[1] == OPAQUE


def test_tuple_get_item_pattern():
    graph = build_graph(infer_types(parse(
        "def @main(%x: Tensor[(4, 4), float32]) { %0 = split(%x, indices_or_sections=2); %0.1 }"))["main"])
    assert graph.pattern == [OPAQUE, INJECTIVE, INJECTIVE] and graph.outputs[1] == [(2, INJECTIVE)]


def test_opt_level_zero_makes_one_group_per_node():
    graph = build_graph(infer_types(parse(SEED_TEXT))["main"])
    groups = GraphPartitioner(0).partition(graph)
    assert len({g.find_root() for g in groups}) == len(graph)


# --------------------------------------------------------------------------- the pass and its API


def test_tvm_named_constructor_and_context():
    mod = infer_types(parse("def @main(%x: Tensor[(3), float32]) { %0 = exp(%x); %1 = exp(%0); exp(%1) }"))
    p = T.FuseOps(fuse_opt_level=2)
    assert p.fuse_opt_level == 2 and p.info.name == "FuseOps" and p.info.required == ("infer-type",)
    one = Sequential([p])(mod)
    assert to_text(one).count("Primitive=1") == 1
    with PassContext(config={"relay.FuseOps.max_depth": 2}):
        two = Sequential([T.FuseOps()])(mod)
    assert to_text(two).count("Primitive=1") == 2
    with PassContext(opt_level=0):
        none = Sequential([T.FuseOps()])(mod)
    assert to_text(none).count("Primitive=1") == 3


def test_untyped_input_is_typed_first():
    mod = parse("def @main(%x: Tensor[(3), float32]) { %0 = exp(%x); negative(%0) }")
    fused = T.FuseOps()(mod, PassContext())
    assert "Primitive=1" in to_text(fused)


def test_long_chain_without_recursion(default_recursion_limit):
    n = 20000
    x = Var("x", T44)
    e = x
    for i in range(n):
        e = make_call(("exp", "negative")[i % 2], e)
    mod = infer_types(IRModule({"main": Function([x], e)}))
    out = fuse_function(mod["main"], 2)
    calls = 0
    body = out.body
    while type(body) is Call:  # 20000 ops in groups of 256
        calls += 1
        body = body.args[0]
    assert calls == -(-n // 256) and body is x
