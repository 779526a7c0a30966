"""IRModule -> Graphviz DOT: the dataflow graph, drawn like the figures of TVM's FuseOps.

    digraph {
      subgraph cluster_0 { label="@main"            one cluster per module function
        n0 [%x]  n1 [%weight]  n2 [const]           its parameters, then its nodes in
        subgraph cluster_1 { label="fused_0 ..."    evaluation order; a call of a
          n3 [nn.conv2d]  n4 [add] ...              Primitive=1 function is a cluster of
        }                                           the function's body, whose parameters
      }                                             are not drawn: their uses take edges
      n0 -> n3; n1 -> n3; n2 -> n4; ...             from the call's arguments instead
    }

Every operator call, tuple, projection, constant and variable is one node (labelled with
the operator and, once inferred, the type); edges run from operands to their users and are
written after all nodes, so that a node belongs to the cluster that declares it. Operators
are not nodes: they label their calls. The rest of Relay is drawn as follows:

* `let %v = value; body`: `%v` is a node fed by the value (dashed edge labelled "let"), and
  the let itself is its body's node — so an A-normal-form program draws as a chain of vars.
* `if`: a diamond fed by the condition, then-value and else-value (edges so labelled); the
  branches' nodes sit next to it, as nothing in DOT can say "evaluated only if".
* a call of a global: a box "call @f" (no edge to @f's cluster); a call of anything else
  (a closure variable, a local function) a box "call" fed by its callee (dashed, "callee").
* a non-primitive local function: a dashed cluster holding its parameters, its body and an
  "fn" node that stands for the closure, fed by the body's result (dashed, "return").
  A primitive function used as a value rather than called (a let-bound fused function)
  is drawn the same way, its cluster labelled "primitive fn".

Node and cluster ids count up in evaluation order, so the output is deterministic. All
walks are iterative, so 100k-node chains need no recursion; nesting of functions is the
only recursion.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import zlib

from ..diagnostics import DiagnosticError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import ANY, TensorType
from ..ir.visitor import post_order, sub_exprs
from ..text.literals import SIMPLE_SCALAR_DTYPES, format_scalar
from ..text.relay_printer import format_type

__all__ = ["module_to_dot", "write_graph", "fused_name", "SUPPORTED_EXTENSIONS"]

TEXT_EXTENSIONS = (".dot", ".gv")
IMAGE_EXTENSIONS = (".svg", ".png", ".pdf")
SUPPORTED_EXTENSIONS = TEXT_EXTENSIONS + IMAGE_EXTENSIONS

# TVM truncates longer fused-function names and appends a hash (te_compiler_cache.cc).
_MAX_NAME_LENGTH = 80

_LET_EDGE = ' [style=dashed, label="let"]'
_FUNCTION_STYLE = 'style="rounded"; color="gray40"'
_LOCAL_FUNCTION_STYLE = 'style="rounded,dashed"; color="gray40"'
_FUSED_STYLE = 'style="rounded,filled"; color="#4a6fb5"; fillcolor="#e8effa"'


def quote(text: str) -> str:
    """A DOT double-quoted string. Backslashes are doubled so that Graphviz's escapes
    (`\\N`, `\\l`, …) never fire on user text; newlines become centred line breaks."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + text.replace("\n", "\\n") + '"'


def fused_name(fn: Function) -> str:
    """TVM's readable name for a fused function: `fused_` and the operators of its body in
    evaluation order, dots turned into underscores (`fused_nn_conv2d_add_nn_relu`)."""
    ops = [n.op.name.replace(".", "_") for n in post_order(fn.body, enter_functions=False)
           if type(n) is Call and type(n.op) is Op]
    name = "_".join(["fused", *ops])
    if len(name) > _MAX_NAME_LENGTH:
        # crc32 rather than hash(): the output must not change between runs
        name = f"{name[:_MAX_NAME_LENGTH]}_{zlib.crc32(name.encode()):08x}_"
    return name


def _shape(shape: tuple) -> str:
    return "(" + ", ".join("?" if d is ANY else str(d) for d in shape) + ")"


def _constant_label(c: Constant) -> str:
    data = c.data
    if data is None:  # a `meta[relay.Constant][i]` whose file had no metadata
        t = c.checked_type
        return f"const {_shape(t.shape)} {t.dtype}" if type(t) is TensorType else "const"
    dtype = str(data.dtype)
    if data.ndim == 0:
        if dtype in SIMPLE_SCALAR_DTYPES:
            return format_scalar(data.item(), dtype)
        return f"{data.item()!r} {dtype}"
    return f"const {_shape(data.shape)} {dtype}"


def _with_type(head: str, e: Expr) -> str:
    t = e.checked_type
    if t is None and type(e) is Var:
        t = e.type_annotation  # parameters are declared with their type: show it before inference
    return head if t is None else f"{head}\n{format_type(t)}"


def _operands(e: Expr) -> tuple:
    """The sub-expressions drawn before `e`: not the body of a function (drawn in its own
    cluster) nor a callee that is part of its call's node (operator, global, fused function)."""
    cls = type(e)
    if cls is Function:
        return ()
    if cls is Call:
        op = e.op
        if type(op) is Op or type(op) is GlobalVar or (type(op) is Function and op.is_primitive):
            return e.args
    elif cls is Let:
        return (e.value, e.var, e.body)  # the variable's node after its value's
    return sub_exprs(e)


class _DotWriter:
    def __init__(self) -> None:
        self.edges: list[str] = []
        self.nodes = 0
        self.clusters = 0
        self.groups = 0
        # let-bound variable -> its value, until the "let" edge between them is drawn
        self.let_values: dict[Var, Expr] = {}

    # ------------------------------------------------------------------ output helpers

    def node(self, out: list[str], indent: str, label: str, attrs: str = "") -> str:
        nid = f"n{self.nodes}"
        self.nodes += 1
        out.append(f"{indent}{nid} [label={quote(label)}{attrs}];")
        return nid

    def edge(self, src: str | None, dst: str, attrs: str = "") -> None:
        if src is not None:
            self.edges.append(f"  {src} -> {dst}{attrs};")

    def open_cluster(self, out: list[str], indent: str, style: str) -> int:
        """Opens `subgraph cluster_N {`; returns the index of a placeholder line for its
        label, which is only known once the body has been drawn."""
        out.append(f"{indent}subgraph cluster_{self.clusters} {{")
        self.clusters += 1
        out.append(f"{indent}  {style};")
        out.append("")
        return len(out) - 1

    # ------------------------------------------------------------------ walking

    def scope(self, root: Expr, memo: dict, out: list[str], indent: str) -> str | None:
        """Draws every node of `root` not in `memo` into `out`; returns the id of the node
        holding `root`'s value.

        Our own iterative post order rather than visitor.post_order: it stops at nodes
        already in `memo`, so that a local function's body does not walk again the part of
        the enclosing graph it shares, which keeps the whole drawing linear."""
        stack: list = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in memo:
                continue
            if expanded:
                nid = self.draw(node, memo, out, indent)
                if nid is not None:
                    memo[node] = nid
                continue
            stack.append((node, True))
            if type(node) is Let:
                self.let_values[node.var] = node.value
            for child in reversed(_operands(node)):
                if child not in memo:
                    stack.append((child, False))
        return self.ref(root, memo, out, indent)

    def ref(self, e: Expr, memo: dict, out: list[str], indent: str) -> str | None:
        """The node holding `e`'s value. Operators and primitive functions are drawn only
        when used as values, since as callees they are part of their call's node/cluster."""
        nid = memo.get(e)
        if nid is None:
            if type(e) is Op:
                nid = self.node(out, indent, e.name, ", shape=box")
            elif type(e) is Function:
                nid = self.function_cluster(e, {}, out, indent)
            else:
                return None
            memo[e] = nid
        return nid

    def draw(self, e: Expr, memo: dict, out: list[str], indent: str) -> str | None:
        cls = type(e)
        if cls is Call:
            return self.call(e, memo, out, indent)
        if cls is Var:
            value = self.let_values.get(e)
            src = None
            # The value is drawn by now, unless it is a primitive function (drawn on demand,
            # here) or a function that refers to this very variable (the edge waits for the let).
            if value is not None and (value in memo or type(value) is Op
                                      or (type(value) is Function and value.is_primitive)):
                del self.let_values[e]
                src = self.ref(value, memo, out, indent)
            nid = self.node(out, indent, _with_type(f"%{e.name_hint}", e), ", shape=ellipse")
            self.edge(src, nid, _LET_EDGE)
            return nid
        if cls is Constant:
            return self.node(out, indent, _constant_label(e), ', shape=box, style="dashed"')
        if cls is Tuple:
            nid = self.node(out, indent, _with_type("Tuple", e))
            for f in e.fields:
                self.edge(self.ref(f, memo, out, indent), nid)
            return nid
        if cls is TupleGetItem:
            nid = self.node(out, indent, _with_type(f"TupleGetItem({e.index})", e))
            self.edge(self.ref(e.tuple_value, memo, out, indent), nid)
            return nid
        if cls is Let:
            if self.let_values.pop(e.var, None) is not None:
                var = self.ref(e.var, memo, out, indent)
                if var is not None:
                    self.edge(self.ref(e.value, memo, out, indent), var, _LET_EDGE)
            return self.ref(e.body, memo, out, indent)
        if cls is If:
            nid = self.node(out, indent, _with_type("if", e), ", shape=diamond")
            self.edge(self.ref(e.cond, memo, out, indent), nid, ' [label="cond"]')
            self.edge(self.ref(e.true_branch, memo, out, indent), nid, ' [label="then"]')
            self.edge(self.ref(e.false_branch, memo, out, indent), nid, ' [label="else"]')
            return nid
        if cls is Function:
            # primitive ones wait for their use: a callee becomes a fused cluster instead
            return None if e.is_primitive else self.function_cluster(e, memo, out, indent)
        if cls is GlobalVar:
            return self.node(out, indent, _with_type(f"@{e.name_hint}", e), ", shape=ellipse")
        return None  # Op: see ref()

    def call(self, e: Call, memo: dict, out: list[str], indent: str) -> str | None:
        callee = e.op
        if type(callee) is Function and callee.is_primitive:
            return self.fused_cluster(e, callee, memo, out, indent)
        args = [self.ref(a, memo, out, indent) for a in e.args]
        if type(callee) is Op:
            nid = self.node(out, indent, _with_type(callee.name, e))
        elif type(callee) is GlobalVar:
            nid = self.node(out, indent, _with_type(f"call @{callee.name_hint}", e), ', style="solid"')
        else:
            nid = self.node(out, indent, _with_type("call", e), ', style="solid"')
            self.edge(self.ref(callee, memo, out, indent), nid, ' [style=dashed, label="callee"]')
        for a in args:
            self.edge(a, nid)
        return nid

    def fused_cluster(self, e: Call, fn: Function, memo: dict, out: list[str], indent: str) -> str | None:
        # arguments first, so that any drawn on demand stay outside the cluster
        args = [self.ref(a, memo, out, indent) for a in e.args]
        label_at = self.open_cluster(out, indent, _FUSED_STYLE)
        k = self.groups
        self.groups += 1
        label = f"fused_{k}\n{fused_name(fn)}"
        out[label_at] = f"{indent}  label={quote(label)};"
        # The body is closed, so it gets its own memo: each call of a shared primitive
        # function is its own group, with its own nodes.
        inner = {p: a for p, a in zip(fn.params, args) if a is not None}
        result = self.scope(fn.body, inner, out, indent + "  ")
        out.append(f"{indent}}}")
        return result

    def function_cluster(self, fn: Function, memo: dict, out: list[str], indent: str) -> str:
        style = _FUSED_STYLE if fn.is_primitive else _LOCAL_FUNCTION_STYLE
        label_at = self.open_cluster(out, indent, style)
        label = f"primitive fn\n{fused_name(fn)}" if fn.is_primitive else "fn"
        out[label_at] = f"{indent}  label={quote(label)};"
        inner_indent = indent + "  "
        for p in fn.params:
            if p not in memo:
                memo[p] = self.draw(p, memo, out, inner_indent)
        result = self.scope(fn.body, memo, out, inner_indent)
        nid = self.node(out, inner_indent, _with_type("fn", fn), ', style="bold"')
        self.edge(result, nid, ' [style=dashed, label="return"]')
        out.append(f"{indent}}}")
        return nid

    def module(self, mod: IRModule) -> str:
        out = [
            "digraph module {",
            '  graph [rankdir=TB, fontname="Helvetica", fontsize=11];',
            '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        for name, fn in mod.items():
            label_at = self.open_cluster(out, "  ", _FUNCTION_STYLE)
            out[label_at] = f"    label={quote('@' + name)};"
            memo: dict = {}
            for p in fn.params:
                memo[p] = self.draw(p, memo, out, "    ")
            self.scope(fn.body, memo, out, "    ")
            out.append("  }")
        out += self.edges
        out.append("}")
        return "\n".join(out) + "\n"


def module_to_dot(mod: IRModule) -> str:
    """The dataflow graph of `mod` as DOT text (see the module docstring for the layout)."""
    return _DotWriter().module(mod)


def _temp_path(path: str) -> str:
    directory, base = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def write_graph(mod: IRModule, path: str) -> None:
    """Writes `mod`'s graph to `path`: DOT text for `.dot`/`.gv`; `.svg`, `.png` or `.pdf`
    rendered by Graphviz's `dot`, which must then be on PATH. The file appears complete or
    not at all: it is written next to `path` under a temporary name, then renamed."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED_EXTENSIONS:
        raise DiagnosticError(f"cannot write a graph to {path!r}: unknown extension {ext or '(none)'!r}; "
                              f"supported: {', '.join(SUPPORTED_EXTENSIONS)}")
    dot = None
    if ext in IMAGE_EXTENSIONS:
        dot = shutil.which("dot")
        if dot is None:
            raise DiagnosticError(f"writing {path!r} needs Graphviz: its `dot` program renders {ext} files and "
                                  f"was not found on PATH; install Graphviz, or write a .dot file, "
                                  f"which needs no Graphviz")
    text = module_to_dot(mod)
    tmp = _temp_path(path)
    try:
        # os.open with 0o666 so that the final file gets the umask's mode, as open() would
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as err:
        raise DiagnosticError(f"cannot write {path!r}: {err.strerror}") from err
    try:
        if dot is None:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            os.close(fd)
            result = subprocess.run([dot, f"-T{ext[1:]}", "-o", tmp], input=text.encode("utf-8"),
                                    capture_output=True, check=False)
            if result.returncode != 0:
                message = result.stderr.decode("utf-8", "replace").strip() or f"exit status {result.returncode}"
                raise DiagnosticError(f"Graphviz `dot` failed to render {path!r}: {message}")
        os.replace(tmp, path)
    except OSError as err:
        _remove(tmp)
        raise DiagnosticError(f"cannot write {path!r}: {err.strerror or err}") from err
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
