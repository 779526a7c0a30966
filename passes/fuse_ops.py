"""fuse-ops: group operators into primitive functions, exactly as TVM's FuseOps.

One pass for both dialects, with one partitioner (irtool.analysis.graph_partitioner):
Relay functions are fused one by one as TVM v0.19's relay FuseOps does (below); the
Relax functions of a module as TVM 0.27's relax.transform.FuseOps does, a module pass
whose graph builder and function creator are irtool.analysis.relax_fusion (call_tir
bindings grouped by their PrimFuncs' op_pattern into private `fused_<callees>` functions
with Primitive; config relax.FuseOps.max_depth).

Relay:

    def @main(%x, %w) {                         def @main(%x, %w) {
      %0 = nn.conv2d(%x, %w);                     %4 = fn (%p0, %p1, %p2, Primitive=1) {
      %1 = add(%0, meta[relay.Constant][0]);        %0 = nn.conv2d(%p0, %p1); ...
      %2 = nn.relu(%1);                    ==>      add(%2, %3)
      %3 = multiply(%0, 0.5f);                    };
      add(%2, %3)                                 %4(%x, %w, meta[relay.Constant][0])
    }                                           }

1. Build the IndexedForwardGraph of the function (TVM's IndexedForwardGraphCreator):
   a depth-first walk numbers dataflow nodes in post order; each operand gets an edge
   to its user carrying the user's TOpPattern, except that a broadcast edge whose
   operand already has the result's shape is elementwise. Scalar constants are
   elementwise (they fuse in); other constants, variables, and calls of non-operators
   are opaque. Let values and bodies, if conditions and branches, function parameters
   and bodies are referenced from outside: nothing fuses through them, but the
   dataflow inside each of them fuses on its own.
2. Partition it (irtool.analysis.graph_partitioner: post-dominator tree + three-phase
   union-find; the same code partitions Relax).
3. Rewrite in post order (TVM's FuseMutator): an operand from another group becomes a
   parameter `%pN` of the group's function (numbered in the order the group's nodes
   meet them, one per distinct operand; a constant stays inline with link-params); the
   group's root (its result) becomes `fn (...) { ... }` called on the operands.
   `annotation.stop_fusion` disappears, leaving a group boundary. Primitive functions
   are left alone, so fusing twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.analysis.graph_partitioner import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    MAX_FUSED_OPS,
    OPAQUE,
    TUPLE,
    GraphPartitioner,
    Group,
    IndexedForwardGraph,
)
from irtool.analysis.relax_fusion import fuse_module as fuse_relax_module
from irtool.ir import relax as rx
from irtool.ir.expr import Attrs, Call, Constant, Function, If, Let, Op, Tuple, TupleGetItem, Var
from irtool.ir.types import ANY, TensorType, TupleType
from irtool.ir.visitor import post_order
from irtool.ops.registry import lookup
from irtool.transform import FunctionPass, PassContext, register, register_config

register_config("relay.FuseOps.max_depth", int)
register_config("relax.FuseOps.max_depth", int)
register_config("relay.FuseOps.link_params", bool)
# TVM reads this limit from the target (`max_function_args`); irtool has no targets yet
register_config("relay.FuseOps.max_function_args", int)

STOP_FUSION = Op.get("annotation.stop_fusion")
_SIMPLE_CONST_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})


def _skipped(fn: Function) -> bool:
    return fn.is_primitive or isinstance(fn.attr("Compiler"), str)


def _dyn_dims(t) -> int:
    return sum(1 for d in t.shape if d is ANY) if type(t) is TensorType else 0


def _is_dynamic(t) -> bool:
    if type(t) is TensorType:
        return ANY in t.shape
    if type(t) is TupleType:
        return any(_is_dynamic(f) for f in t.fields)
    return False


def _extra_args(t) -> int:
    """CountAdditionalArgs_: a dynamic tensor also passes its dimensions and strides."""
    dyn = _dyn_dims(t)
    return dyn + len(t.shape) if dyn else 0


# --------------------------------------------------------------------------- 1. graph


def build_graph(fn: Function, count_args: bool = False) -> IndexedForwardGraph:
    """TVM's IndexedForwardGraphCreator over `fn`. The argument counts the partitioner
    needs only for a `max_function_args` limit are filled in when `count_args`."""
    edges: dict = {}      # node -> [(user node, pattern)], in the order TVM links them
    extern: set = set()   # nodes referenced from outside the dataflow
    patterns: dict = {}
    order: list = []      # post-DFS order (TVM's AddNode)
    visited: set = set()
    opdefs: dict = {}

    def link(node, user, pattern: int) -> None:
        lst = edges.get(node)
        if lst is None:
            edges[node] = [(user, pattern)]
        else:
            lst.append((user, pattern))

    extern.add(fn)
    stack: list = [(fn, False)]
    push, pop = stack.append, stack.pop
    while stack:
        node, done = pop()
        if done:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        cls = type(node)
        if cls is Call:
            op = node.op
            ret = node.checked_type
            if type(op) is Op:
                opdef = opdefs.get(op)
                if opdef is None:
                    opdef = opdefs[op] = lookup(op.name)
                pattern = OPAQUE if opdef is None else opdef.pattern
                # a shape function's output cannot feed a data-dependent shape function
                if opdef is not None and opdef.shape_data_dependent and _is_dynamic(ret):
                    pattern = OPAQUE
            else:
                pattern = OPAQUE
                link(op, node, OPAQUE)
            patterns[node] = pattern
            extern.add(op)
            if pattern == BROADCAST and type(ret) is TensorType:
                shape = ret.shape
                for arg in node.args:
                    t = arg.checked_type
                    link(arg, node, ELEMWISE if type(t) is TensorType and t.shape == shape else BROADCAST)
            else:
                for arg in node.args:
                    link(arg, node, pattern)
            push((node, True))
            for arg in reversed(node.args):
                push((arg, False))
            push((op, False))
        elif cls is Var:
            order.append(node)
        elif cls is Constant:
            order.append(node)
            data = node.data
            simple = data is not None and data.ndim == 0 and str(data.dtype) in _SIMPLE_CONST_DTYPES
            patterns[node] = ELEMWISE if simple else OPAQUE
        elif cls is Tuple:
            patterns[node] = TUPLE
            for f in node.fields:
                if type(f.checked_type) is TensorType:
                    link(f, node, INJECTIVE)
                else:
                    extern.add(f)
            push((node, True))
            for f in reversed(node.fields):
                push((f, False))
        elif cls is TupleGetItem:
            t = node.tuple_value.checked_type
            if type(t) is TupleType and all(type(f) is TensorType for f in t.fields):
                patterns[node] = INJECTIVE
                link(node.tuple_value, node, INJECTIVE)
            else:  # codegen wants tensors (or tuples of tensors) only: do not fuse through
                extern.add(node.tuple_value)
            push((node, True))
            push((node.tuple_value, False))
        elif cls is Let:
            extern.update((node.var, node.value, node.body))
            push((node, True))
            push((node.body, False))
            push((node.value, False))
            push((node.var, False))
        elif cls is If:
            extern.update((node.cond, node.true_branch, node.false_branch))
            push((node, True))
            push((node.false_branch, False))
            push((node.true_branch, False))
            push((node.cond, False))
        elif cls is Function:
            if _skipped(node) and node is not fn:
                continue  # primitive: never rewritten; external: not ours to fuse
            extern.update(node.params)
            extern.add(node.body)
            push((node.body, False))
            for p in reversed(node.params):
                push((p, False))
        # Op and GlobalVar are not dataflow nodes

    index = {node: i for i, node in enumerate(order)}
    graph = IndexedForwardGraph()
    graph.refs = order
    graph.pattern = [patterns.get(node, OPAQUE) for node in order]
    graph.extern_ref = [node in extern for node in order]
    graph.outputs = [[(index[u], p) for u, p in edges.get(node, ())] for node in order]
    n = len(order)
    if not count_args:
        graph.args_num, graph.operands, graph.result_dyn_dims = [0] * n, [()] * n, [0] * n
        return graph
    for node in order:
        cls = type(node)
        operands = node.args if cls is Call else node.fields if cls is Tuple else ()
        if cls is Var:
            num = 1 + _extra_args(node.checked_type)
        else:
            num = sum(1 + _extra_args(a.checked_type) for a in operands if type(a) in (Var, TupleGetItem))
        graph.args_num.append(num)
        graph.operands.append(tuple(index[a] for a in operands if type(a) is not Var and a in index))
        graph.result_dyn_dims.append(_dyn_dims(node.checked_type) if cls is Call else 0)
    return graph


# --------------------------------------------------------------------------- 3. rewrite


class _GroupFunction:
    """Parameters and call arguments of the function a group becomes."""

    __slots__ = ("params", "arguments")

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.arguments: list = []

    def param_for(self, operand, type_) -> Var:
        for i, a in enumerate(self.arguments):  # groups have few inputs: a scan is fastest
            if a is operand:
                return self.params[i]
        var = Var(f"p{len(self.params)}", type_)
        var.checked_type = type_
        self.params.append(var)
        self.arguments.append(operand)
        return var


def _reshape_only(body) -> tuple[bool, bool]:
    """(has_call, reshape_only) of a fused body, as TVM's CheckReshapeOnly computes them."""
    has_call, reshape_only = False, True
    stack, seen = [body], set()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        cls = type(e)
        if cls is Call:
            has_call = True
            opdef = lookup(e.op.name) if type(e.op) is Op else None
            if opdef is None or not opdef.reshape_op:
                reshape_only = False
                return has_call, reshape_only  # both answers are settled
            stack.extend(e.args)
        elif cls is Var:
            if type(e.type_annotation) is not TensorType:
                reshape_only = False
        elif cls is Tuple:
            stack.extend(e.fields)
        elif cls is TupleGetItem:
            stack.append(e.tuple_value)
    return has_call, reshape_only


def _fused_call(info: _GroupFunction, ret_type, body) -> Call:
    has_call, reshape_only = _reshape_only(body)
    attrs = {"Primitive": int(has_call)}
    if has_call and reshape_only:
        attrs["relay.reshape_only"] = 1
    return Call(Function(info.params, body, ret_type, Attrs(attrs)), info.arguments)


def _rewrite(fn: Function, gmap: dict, link_params: bool) -> Function:
    memo: dict = {}
    infos: dict[Group, _GroupFunction] = {}

    def new_arguments(args, group: Group) -> list:
        out = []
        for arg in args:
            new = memo[arg]
            arg_group = gmap.get(arg)
            if arg_group is None or arg_group.find_root() is not group:
                if not link_params or type(new) is not Constant:
                    info = infos.get(group)
                    if info is None:
                        info = infos[group] = _GroupFunction()
                    new = info.param_for(new, arg.checked_type)
            out.append(new)
        return out

    def generic(node):
        cls = type(node)
        if cls is Call:
            op, args = memo[node.op], [memo[a] for a in node.args]
            if op is node.op and all(a is b for a, b in zip(args, node.args)):
                return node
            return Call(op, args, node.attrs, node.span)
        if cls is Tuple:
            fields = [memo[f] for f in node.fields]
            return node if all(a is b for a, b in zip(fields, node.fields)) else Tuple(fields, node.span)
        if cls is TupleGetItem:
            t = memo[node.tuple_value]
            return node if t is node.tuple_value else TupleGetItem(t, node.index, node.span)
        if cls is Let:
            var, value, body = memo[node.var], memo[node.value], memo[node.body]
            if var is node.var and value is node.value and body is node.body:
                return node
            return Let(var, value, body, node.span)
        if cls is If:
            c, t, f = memo[node.cond], memo[node.true_branch], memo[node.false_branch]
            if c is node.cond and t is node.true_branch and f is node.false_branch:
                return node
            return If(c, t, f, node.span)
        if cls is Function and not (_skipped(node) and node is not fn):
            params, body = [memo[p] for p in node.params], memo[node.body]
            if body is node.body and all(a is b for a, b in zip(params, node.params)):
                return node
            return Function(params, body, node.ret_type, node.attrs, node.span)
        return node  # Var, Constant, Op, GlobalVar, primitive Function

    # Children first in TVM's depth-first order (arguments left to right), which numbers the
    # parameters; ExprMutator's order differs (it expands chained operands first), hence
    # this walk. Primitive functions are leaves.
    for node in post_order(fn, enter_functions=lambda f: f is fn or not _skipped(f)):
        cls = type(node)
        group = gmap.get(node)
        if group is None:
            memo[node] = generic(node)
        elif cls is Call and type(node.op) is Op:
            if node.op is STOP_FUSION:
                memo[node] = memo[node.args[0]]
                continue
            root = group.find_root()
            new = Call(node.op, new_arguments(node.args, root), node.attrs, node.span)
            memo[node] = _fused_call(infos.get(root) or _GroupFunction(), node.checked_type, new) \
                if root.root_ref is node else new
        elif cls is Tuple:
            root = group.find_root()
            if root.root_ref is node:
                memo[node] = generic(node)
            else:
                memo[node] = Tuple(new_arguments(node.fields, root), node.span)
        elif cls is TupleGetItem:
            root = group.find_root()
            new = TupleGetItem(new_arguments((node.tuple_value,), root)[0], node.index, node.span)
            tuple_group = gmap.get(node.tuple_value)
            if root.root_ref is not node:
                memo[node] = new
            elif tuple_group is None or tuple_group.find_root() is not root:
                memo[node] = generic(node)  # the tuple comes from an opaque op: nothing to fuse
            else:
                memo[node] = _fused_call(infos.get(root) or _GroupFunction(), node.checked_type, new)
        else:
            memo[node] = generic(node)
    return memo[fn]


# --------------------------------------------------------------------------- the pass


def fuse_function(fn: Function, opt_level: int, max_depth: int = MAX_FUSED_OPS, max_function_args: int = 0,
                  link_params: bool = False) -> Function:
    """FuseOps on one typed function (every node has its `checked_type`)."""
    if _skipped(fn):
        return fn
    graph = build_graph(fn, count_args=max_function_args > 0)
    groups = GraphPartitioner(opt_level, max_depth, max_function_args).partition(graph)
    gmap = dict(zip(graph.refs, groups))
    return _rewrite(fn, gmap, link_params)


@register
@dataclass(frozen=True)
class FuseOps(FunctionPass):
    name = "fuse-ops"
    tvm_name = "FuseOps"
    opt_level = 0
    required = ("infer-type",)
    summary = "Fuse operators into primitive functions (TVM's FuseOps)"
    option_aliases = {"opt_level": "fuse_opt_level"}  # fuse-ops{opt-level=2}

    # -1: the context's opt level (TVM's fuse_opt_level=-1); 0 fuses nothing
    fuse_opt_level: int = -1
    # -1: the pass config relay.FuseOps.max_depth, default 256
    max_depth: int = -1
    # -1: the pass config relay.FuseOps.max_function_args; 0 means no limit
    max_function_args: int = -1
    # keep constants inline in fused functions instead of passing them as arguments
    link_params: bool = False

    def transform_function(self, fn: Function, mod, ctx: PassContext) -> Function:
        return fuse_function(
            fn,
            ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level,
            ctx.get_config("relay.FuseOps.max_depth", MAX_FUSED_OPS) if self.max_depth == -1 else self.max_depth,
            ctx.get_config("relay.FuseOps.max_function_args", 0) if self.max_function_args == -1
            else self.max_function_args,
            self.link_params or ctx.get_config("relay.FuseOps.link_params", False))

    def transform_module(self, mod, ctx: PassContext):
        mod = super().transform_module(mod, ctx)  # Relay functions, one by one
        if not any(isinstance(fn, rx.Function) for fn in mod.functions.values()):
            return mod
        # Relax: a module pass, since fused functions join the module under unique names
        return fuse_relax_module(
            mod,
            ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level,
            ctx.get_config("relax.FuseOps.max_depth", MAX_FUSED_OPS) if self.max_depth == -1 else self.max_depth)
