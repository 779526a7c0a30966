"""irtool.analysis.graphviz: DOT rendering of dataflow graphs, one cluster per fused group."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import irtool
from irtool.analysis.graphviz import fused_name, module_to_dot, quote, write_graph
from irtool.diagnostics import DiagnosticError
from irtool.ir.expr import Attrs, Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from irtool.ir.module import IRModule
from irtool.ir.types import TensorType
from irtool.text.metadata import dump_metadata

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUSED = ROOT / "examples" / "seed000_fused.ir"

UNFUSED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 16, 16), float32], %weight: Tensor[(3, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %weight, padding=[0, 0, 0, 0]);
  %1 = add(%0, 1f);
  %2 = nn.relu(%1);
  %3 = multiply(%0, 0.5f);
  add(%2, %3)
}
"""

TWO_GROUPS = """#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %1 = fn (%p0: Tensor[(4), float32], %p1: Tensor[(4), float32], Primitive=1) {
    %0 = add(%p0, %p1);
    exp(%0)
  };
  %2 = %1(%x, %y);
  %3 = fn (%p0: Tensor[(4), float32], Primitive=1) {
    nn.relu(%p0)
  };
  %3(%2)
}
"""


# --------------------------------------------------------------------------- a small DOT reader

_NODE = re.compile(r'(n\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$')
_EDGE = re.compile(r"(n\d+) -> (n\d+)(?: \[(.*)\])?;$")
_OPEN = re.compile(r"subgraph (cluster_\d+) \{$")
_ATTR = re.compile(r'(?:label|style|color|fillcolor)=(?:"(?:[^"\\]|\\.)*"|[\w#]+)(?:; (?:label|style|color|fillcolor)='
                   r'(?:"(?:[^"\\]|\\.)*"|[\w#]+))*;$')


class Graph:
    """The statements `module_to_dot` writes, read back line by line; any other line fails,
    so this doubles as a check of the output's shape when Graphviz is not installed."""

    def __init__(self, text: str) -> None:
        lines = text.splitlines()
        assert lines[0] == "digraph module {" and lines[-1] == "}"
        self.nodes: dict[str, str] = {}  # id -> label (escapes kept)
        self.node_attrs: dict[str, str] = {}
        self.where: dict[str, tuple[str, ...]] = {}  # id -> enclosing clusters, outermost first
        self.clusters: dict[str, str] = {}  # cluster -> label
        self.edges: list[tuple[str, str, str]] = []
        stack: list[str] = []
        for line in lines[1:-1]:
            s = line.strip()
            if m := _OPEN.match(s):
                stack.append(m.group(1))
                self.clusters[m.group(1)] = ""
            elif s == "}":
                stack.pop()
            elif m := _NODE.match(s):
                assert m.group(1) not in self.nodes, f"node declared twice: {s}"
                self.nodes[m.group(1)] = m.group(2)
                self.node_attrs[m.group(1)] = m.group(3)
                self.where[m.group(1)] = tuple(stack)
            elif m := _EDGE.match(s):
                assert not stack, "edges come after all nodes, at the top level"
                assert m.group(1) in self.nodes and m.group(2) in self.nodes, s
                self.edges.append((m.group(1), m.group(2), m.group(3) or ""))
            elif s.startswith("label=") and stack:
                self.clusters[stack[-1]] = re.fullmatch(r'label="((?:[^"\\]|\\.)*)";', s).group(1)
            elif stack:
                assert _ATTR.match(s), s
            else:
                assert s.startswith(("graph [", "node [", "edge [")), s
        assert not stack

    def fused(self) -> list[str]:
        return [c for c, label in self.clusters.items() if label.startswith("fused_")]

    def in_cluster(self, cluster: str) -> list[str]:
        """Labels' first lines of the nodes directly in `cluster`, in order."""
        return [self.nodes[n].split("\\n")[0] for n, w in self.where.items() if w and w[-1] == cluster]

    def by_label(self, first_line: str) -> list[str]:
        return [n for n, label in self.nodes.items() if label.split("\\n")[0] == first_line]


def _seed_fused() -> IRModule:
    return irtool.parse(FUSED.read_text(), str(FUSED))


def _seed_fused_typed() -> IRModule:
    text = FUSED.read_text()
    section = dump_metadata([Constant(np.ones((1, 3, 14, 14), "float32"))])
    return irtool.infer_types(irtool.parse(text + "\n#[metadata]\n" + section + "\n", "seed.ir"))


# --------------------------------------------------------------------------- the seed


def test_seed_has_one_fused_cluster_with_the_five_ops():
    g = Graph(module_to_dot(_seed_fused()))
    (cluster,) = g.fused()
    assert g.clusters[cluster] == "fused_0\\nfused_nn_conv2d_add_nn_relu_multiply_add"
    ops = [label for label in g.in_cluster(cluster) if label != "0.5f"]
    assert ops == ["nn.conv2d", "add", "nn.relu", "multiply", "add"]
    # the parameters %p0..%p2 are not drawn; %x, %weight and the constant are, outside
    assert not any(label.startswith("%p") for label in g.nodes.values())
    (main,) = [c for c, label in g.clusters.items() if label == "@main"]
    (x,), (w,), (c,) = g.by_label("%x"), g.by_label("%weight"), g.by_label("const")
    assert g.where[x] == g.where[w] == g.where[c] == (main,)
    assert g.where[g.by_label("nn.conv2d")[0]] == (main, cluster)
    conv, (add1, add2) = g.by_label("nn.conv2d")[0], g.by_label("add")
    edges = {(a, b) for a, b, _ in g.edges}
    assert {(x, conv), (w, conv), (c, add1)} <= edges
    assert (conv, add1) in edges and (conv, g.by_label("multiply")[0]) in edges
    assert (g.by_label("nn.relu")[0], add2) in edges and (g.by_label("multiply")[0], add2) in edges
    # edges into the cluster come only from the call's three arguments
    inside = {n for n, where in g.where.items() if cluster in where}
    assert {a for a, b, _ in g.edges if b in inside and a not in inside} == {x, w, c}


def test_seed_with_types_labels_results_and_constants():
    text = module_to_dot(_seed_fused_typed())
    g = Graph(text)
    conv = g.by_label("nn.conv2d")[0]
    assert g.nodes[conv] == "nn.conv2d\\nTensor[(1, 3, 14, 14), float32]"
    assert g.nodes[g.by_label("%x")[0]] == "%x\\nTensor[(1, 3, 16, 16), float32]"
    assert g.by_label("const (1, 3, 14, 14) float32")
    assert g.by_label("0.5f")
    assert len(g.fused()) == 1


def test_output_is_deterministic_and_numbered_in_evaluation_order():
    a, b = module_to_dot(_seed_fused()), module_to_dot(_seed_fused())
    assert a == b
    g = Graph(a)
    assert [g.nodes[f"n{i}"].split("\\n")[0] for i in range(len(g.nodes))] == [
        "%x", "%weight", "const", "nn.conv2d", "add", "nn.relu", "0.5f", "multiply", "add"]
    assert list(g.clusters) == ["cluster_0", "cluster_1"]


# --------------------------------------------------------------------------- groups


def test_two_fused_calls_give_two_clusters_joined_by_an_edge():
    g = Graph(module_to_dot(irtool.parse(TWO_GROUPS)))
    first, second = g.fused()
    assert g.clusters[first] == "fused_0\\nfused_add_exp"
    assert g.clusters[second] == "fused_1\\nfused_nn_relu"
    assert g.in_cluster(first) == ["add", "exp"] and g.in_cluster(second) == ["nn.relu"]
    exp, relu = g.by_label("exp")[0], g.by_label("nn.relu")[0]
    assert (exp, relu, "") in g.edges  # the first group's result feeds the second
    assert first not in g.where[relu] and second not in g.where[exp]


def test_unfused_programs_have_no_fused_clusters():
    for text in (UNFUSED, FUSED.read_text().replace("Primitive=1", "Inline=1")):
        g = Graph(module_to_dot(irtool.parse(text)))
        assert g.fused() == []
        assert "fused_" not in "".join(g.clusters.values())
    g = Graph(module_to_dot(irtool.parse(UNFUSED)))
    assert list(g.clusters.values()) == ["@main"]
    conv, relu = g.by_label("nn.conv2d")[0], g.by_label("nn.relu")[0]
    assert len(g.nodes) == 9 and (g.by_label("add")[0], relu, "") in g.edges
    assert sum(1 for a, _, _ in g.edges if a == conv) == 2


def test_a_shared_primitive_function_gives_one_group_per_call():
    x = Var("x", TensorType((4,), "float32"))
    p = Var("p0")
    fn = Function([p], Call(Op.get("exp"), [p]), attrs=Attrs({"Primitive": 1}))
    mod = IRModule({"main": Function([x], Call(fn, [Call(fn, [x])]))})
    g = Graph(module_to_dot(mod))
    first, second = g.fused()
    (e0,), (e1,) = ([n for n in g.where if g.where[n][-1] == c] for c in (first, second))
    assert (e0, e1, "") in g.edges and g.clusters[second].startswith("fused_1")


def test_tuple_results_and_projections_cross_the_cluster_boundary():
    x = Var("x", TensorType((4,), "float32"))
    p = Var("p0")
    fn = Function([p], Tuple([Call(Op.get("exp"), [p]), Call(Op.get("negative"), [p])]),
                  attrs=Attrs({"Primitive": 1}))
    t = Call(fn, [x])
    mod = IRModule({"main": Function([x], Call(Op.get("add"), [TupleGetItem(t, 0), TupleGetItem(t, 1)]))})
    g = Graph(module_to_dot(mod))
    (cluster,) = g.fused()
    assert g.in_cluster(cluster) == ["exp", "negative", "Tuple"]
    tup = g.by_label("Tuple")[0]
    gets = g.by_label("TupleGetItem(0)") + g.by_label("TupleGetItem(1)")
    assert [(tup, n, "") in g.edges for n in gets] == [True, True]


def test_long_fused_names_are_truncated_deterministically():
    x = Var("p0")
    body = x
    for _ in range(30):
        body = Call(Op.get("nn.relu"), [body])
    fn = Function([x], body, attrs=Attrs({"Primitive": 1}))
    name = fused_name(fn)
    assert name.startswith("fused_nn_relu_nn_relu") and name == fused_name(fn)
    assert re.fullmatch(r".{80}_[0-9a-f]{8}_", name)


# --------------------------------------------------------------------------- the rest of Relay


def test_let_if_closures_and_globals():
    text = """#[version = "0.0.5"]
def @f(%a: Tensor[(2), float32]) -> Tensor[(2), float32] { negative(%a) }
def @main(%x: Tensor[(2), float32], %c: bool) {
  let %t = (%x, @f(%x));
  let %g = fn (%y: Tensor[(2), float32]) { add(%y, %t.0) };
  let %h = fn (%p0: Tensor[(2), float32], Primitive=1) { exp(%p0) };
  let %r = if (%c) { %g(%x) } else { %h(%x) };
  %r
}
"""
    g = Graph(module_to_dot(irtool.infer_types(irtool.parse(text))))
    assert [label for label in g.clusters.values()] == ["@f", "@main", "fn", "primitive fn\\nfused_exp"]
    assert g.fused() == []  # a let-bound primitive function is not a call of a group
    edges = {(a, b): attrs for a, b, attrs in g.edges}
    (t,), (tup,), (call_f,) = g.by_label("%t"), g.by_label("Tuple"), g.by_label("call @f")
    assert 'label="let"' in edges[(tup, t)] and (call_f, tup) in edges
    assert g.nodes[call_f] == "call @f\\nTensor[(2), float32]"
    (cond,) = g.by_label("if")
    assert "diamond" in g.node_attrs[cond]
    labels = sorted(edges[(a, b)] for a, b in edges if b == cond)
    assert labels == ['label="cond"', 'label="else"', 'label="then"']
    calls = g.by_label("call")
    for var, call in zip(("%g", "%h"), calls):
        assert 'label="callee"' in edges[(g.by_label(var)[0], call)]
    fns = g.by_label("fn")
    assert [g.where[n][-1] for n in fns] == ["cluster_2", "cluster_3"]
    assert 'label="return"' in edges[(g.by_label("exp")[0], fns[1])]
    # the closure's free variable %t feeds its body from outside the closure's cluster
    assert (t, g.by_label("TupleGetItem(0)")[0]) in edges


def test_recursive_let_draws_the_let_edge():
    text = """#[version = "0.0.5"]
def @main(%x: int32) {
  let %f = fn (%n: int32) -> int32 { if (less(%n, 1)) { %n } else { %f(subtract(%n, 1)) } };
  %f(%x)
}
"""
    g = Graph(module_to_dot(irtool.parse(text)))
    (f,), (fn,) = g.by_label("%f"), g.by_label("fn")
    assert (fn, f, 'style=dashed, label="let"') in g.edges


# --------------------------------------------------------------------------- escaping


def test_labels_are_escaped():
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    x = Var('we"ird\\name\n', TensorType((2,), "float32"))
    text = module_to_dot(IRModule({'q"uote': Function([x], Call(Op.get("exp"), [x]))}))
    assert 'label="%we\\"ird\\\\name\\n\\nTensor[(2), float32]"' in text
    assert 'label="@q\\"uote"' in text
    Graph(text)  # every line still reads back


# --------------------------------------------------------------------------- Graphviz itself


def test_dot_text_parses_with_pydot():
    pydot = pytest.importorskip("pydot")
    (graph,) = pydot.graph_from_dot_data(module_to_dot(irtool.parse(TWO_GROUPS)))
    assert graph is not None


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_dot_renders_svg(tmp_path):
    for mod in (_seed_fused(), irtool.parse(TWO_GROUPS), irtool.parse(UNFUSED)):
        result = subprocess.run(["dot", "-Tsvg"], input=module_to_dot(mod).encode(), capture_output=True)
        assert result.returncode == 0, result.stderr.decode()
        assert b"<svg" in result.stdout
    write_graph(_seed_fused(), str(tmp_path / "g.svg"))
    assert b"fused_nn_conv2d_add_nn_relu_multiply_add" in (tmp_path / "g.svg").read_bytes()


# --------------------------------------------------------------------------- write_graph


def test_write_dot_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    mod = _seed_fused()
    for name in ("g.dot", "g.gv"):
        write_graph(mod, str(tmp_path / name))
        assert (tmp_path / name).read_text() == module_to_dot(mod)
    assert sorted(os.listdir(tmp_path)) == ["g.dot", "g.gv"]


def test_svg_without_dot_is_a_diagnostic_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    for ext in ("svg", "png", "pdf"):
        with pytest.raises(DiagnosticError) as info:
            write_graph(_seed_fused(), str(tmp_path / f"g.{ext}"))
        assert "Graphviz" in str(info.value) and ".dot" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_unknown_extension_lists_the_supported_ones(tmp_path):
    for name in ("g.txt", "graph"):
        with pytest.raises(DiagnosticError) as info:
            write_graph(_seed_fused(), str(tmp_path / name))
        assert all(ext in str(info.value) for ext in (".dot", ".svg", ".png", ".pdf"))
    assert os.listdir(tmp_path) == []


def _fake_dot(tmp_path: pathlib.Path, script: str) -> str:
    path = tmp_path / "bin" / "dot"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as a fake `dot`")
def test_a_failing_dot_leaves_no_partial_file(tmp_path, monkeypatch):
    # writes half an image to its -o file, then fails
    dot = _fake_dot(tmp_path, 'for a; do out="$a"; done\n'
                              'printf "<svg half" > "$out"\necho "syntax error" >&2\nexit 1\n')
    monkeypatch.setattr(shutil, "which", lambda name: dot if name == "dot" else None)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DiagnosticError, match="syntax error"):
        write_graph(_seed_fused(), str(out / "g.svg"))
    assert os.listdir(out) == []
    (out / "g.svg").write_text("old")  # an existing file survives a failed rewrite
    with pytest.raises(DiagnosticError):
        write_graph(_seed_fused(), str(out / "g.svg"))
    assert os.listdir(out) == ["g.svg"] and (out / "g.svg").read_text() == "old"


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as a fake `dot`")
def test_image_formats_run_dot_with_the_format(tmp_path, monkeypatch):
    # echoes its -T flag, then copies the DOT text from stdin to the -o file
    dot = _fake_dot(tmp_path, 'echo "$1" > "$3.flag"; cat > "$3"\n')
    monkeypatch.setattr(shutil, "which", lambda name: dot if name == "dot" else None)
    out = tmp_path / "out"
    out.mkdir()
    write_graph(_seed_fused(), str(out / "g.png"))
    assert (out / "g.png").read_text() == module_to_dot(_seed_fused())
    (flag,) = [p for p in out.iterdir() if p.name.endswith(".flag")]
    assert flag.read_text().strip() == "-Tpng"


def test_unwritable_directory_is_a_diagnostic(tmp_path):
    with pytest.raises(DiagnosticError, match="cannot write"):
        write_graph(_seed_fused(), str(tmp_path / "missing" / "g.dot"))


# --------------------------------------------------------------------------- scale


def test_100k_node_chains_need_no_recursion():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        x = Var("x", TensorType((2,), "float32"))
        one = Constant(np.ones((), "float32"))
        e = x
        for _ in range(100_000):
            e = Call(Op.get("add"), [e, one])
        # (a walk quadratic in the chain would not finish: 10^10 steps; no timed assertion)
        text = module_to_dot(IRModule({"main": Function([x], e)}))
        assert text.count(' [label="add"];') == 100_000 and text.count(" -> ") == 200_000

        e = x  # 50k fused groups of two operators each
        for _ in range(50_000):
            p = Var("p0")
            fn = Function([p], Call(Op.get("exp"), [Call(Op.get("negative"), [p])]), attrs=Attrs({"Primitive": 1}))
            e = Call(fn, [e])
        text = module_to_dot(IRModule({"main": Function([x], e)}))
        assert text.count('label="fused_') == 50_000 and text.count(" -> ") == 100_000
        assert 'label="fused_49999\\nfused_negative_exp"' in text
    finally:
        sys.setrecursionlimit(limit)

