"""FuseOps on Relax (TVM 0.27's relax.transform.FuseOps, src/relax/transform/fuse_ops.cc).

    lv  = R.call_tir(cls.conv2d, (x, w))         lv1 = cls.fused_conv2d_add_relu(x, w, c)
    lv1 = R.call_tir(cls.add, (lv, c))    ==>
    gv  = R.call_tir(cls.relu, (lv1,))           @R.function(private=True)
                                                 def fused_conv2d_add_relu(x, w, param_0):
                                                     R.func_attr({"Primitive": True}) ...

1. Graph (TVM's GraphCreator): one node per function parameter, per binding variable of
   the function's blocks and per leaf a binding reads (constants, shapes, prim values);
   parameters and non-dataflow variables are external references. A `call_tir` binding
   has its callee PrimFunc's `op_pattern` (opaque when absent) and an edge of that
   pattern from each tensor it reads; a tuple-get-item is injective (opaque when it
   reads a packed parameter tuple); any other value (tuples, operator calls, calls of
   Relax functions) is opaque. The partitioner of irtool.analysis.graph_partitioner
   groups the nodes, as it does for Relay.
2. Functions (TVM's FunctionCreator): a group of several bindings becomes a private
   `fused_<callee names>` function with `Primitive`: its parameters are the values it
   reads from outside (named after the variable, `param_N` for a constant; a tuple of
   which only items are read is split into `name_i` parameters), its outputs the
   non-dataflow variables and the variables other groups read, returned as one value
   or a tuple; outputs are rebound to fresh `gv`, `gv1`, ... as TVM's BlockBuilder
   names them. A size a call_tir passes (`(n,)`) is a `T.int64` parameter unless all its
   variables occur in the group's struct info; size variables no parameter defines come
   in as a last `tir_vars` shape.
3. Callers (TVM's OperatorFusor): each dataflow block is re-emitted with its bindings
   ordered by group dependencies; a group's call replaces its last binding (named by
   the module-wide name supply: `lv`/`gv`, `lv1`...), a multi-output call is followed
   by one projection per output. A function structurally equal to one the module has
   is reused instead of added.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule
from ..ir.node_structural import node_equal, node_hash
from ..ir.relax_visitor import ExprMutator, ExprVisitor, tir_vars
from . import struct_info as si
from .graph_partitioner import INJECTIVE, MAX_FUSED_OPS, OPAQUE, GraphPartitioner, IndexedForwardGraph

CALL_TIR_OPS = frozenset({"relax.call_tir", "relax.call_tir_inplace"})
# the leaves a call argument can be that become graph nodes (GlobalVars, Ops and
# extern functions do not)
_LEAF_KINDS = (rx.ShapeExpr, rx.Var, rx.Constant, rx.PrimValue, rx.StringImm)


def is_fusable_function(fn) -> bool:
    """Relax functions FuseOps looks into: not fused already, not for an external codegen."""
    return isinstance(fn, rx.Function) and not fn.attr("Primitive") and not isinstance(fn.attr("Codegen"), str)


def _is_call_tir(e) -> bool:
    return isinstance(e, rx.Call) and isinstance(e.op, Op) and e.op.name in CALL_TIR_OPS


def _call_tir_args(call: rx.Call) -> tuple:
    args = call.args[1] if len(call.args) > 1 else rx.Tuple(())
    return args.fields_ if isinstance(args, rx.Tuple) else (args,)


class _NameSupply:
    """TVM's UniqueNameSupply as BlockBuilder uses it: `lv`, `lv1`, `lv2`...; dots become
    underscores."""

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}

    def fresh(self, name: str) -> str:
        name = name.replace(".", "_")
        if name not in self.counters:
            self.counters[name] = 0
            return name
        suffix = self.counters[name]
        new = name
        while new in self.counters:
            suffix += 1
            new = f"{name}{suffix}"
        self.counters[name] = suffix
        self.counters[new] = 0
        return new


class _LeafCollector(ExprVisitor):
    """Variables and constants a value reads, in TVM's PostOrderVisit order."""

    def __init__(self) -> None:
        self.leaves: list = []

    def visit_var_(self, v: rx.Var) -> None:
        self.leaves.append(v)

    def visit_constant_(self, c: rx.Constant) -> None:
        self.leaves.append(c)


def _vars_read(e) -> list:
    collector = _LeafCollector()
    collector.visit_expr(e)
    return [v for v in collector.leaves if isinstance(v, rx.Var)]


# --------------------------------------------------------------------------- 1. graph


def build_graph(fn: rx.Function, mod: IRModule) -> IndexedForwardGraph:
    """TVM's GraphCreator over one Relax function; `refs` are parameters, binding
    variables and leaves."""
    order: list = []
    index: dict = {}
    patterns: list[int] = []
    extern: list[bool] = []
    edges: list[list] = []

    def create(key, pattern: int, is_extern: bool = False) -> int:
        node = len(order)
        index[key] = node
        order.append(key)
        patterns.append(pattern)
        extern.append(is_extern)
        edges.append([])
        return node

    # TVM creates a binding's node before its leaves but numbers it after them: edges
    # are collected against keys and the binding is numbered once its leaves are
    pending: list = []

    def visit_leaf(leaf, pattern: int) -> None:
        if isinstance(leaf, rx.Tuple):
            for f in leaf.fields_:
                visit_leaf(f, pattern)
            return
        if not isinstance(leaf, _LEAF_KINDS):
            return
        if leaf not in index:
            create(leaf, OPAQUE)
        pending.append((index[leaf], pattern))

    for p in fn.params:
        create(p, OPAQUE, True)
    num_input = fn.attr("num_input")
    packed_params = set(fn.params[num_input:]) if isinstance(num_input, int) else set()
    for block in fn.body.blocks:
        for b in block.bindings:
            pending.clear()
            if isinstance(b, rx.MatchCast):
                pattern, is_extern = OPAQUE, False
            else:
                value, is_extern = b.value, not isinstance(b.var, rx.DataflowVar)
                if isinstance(value, rx.Call):
                    pattern, args = OPAQUE, value.args
                    if _is_call_tir(value):
                        callee = mod.functions.get(value.args[0].name_hint) \
                            if isinstance(value.args[0], GlobalVar) else None
                        args = _call_tir_args(value)
                        op_pattern = callee.attr("op_pattern") if isinstance(callee, tir.PrimFunc) else None
                        pattern = op_pattern if isinstance(op_pattern, int) else OPAQUE
                    for arg in args:
                        visit_leaf(arg, pattern)
                elif isinstance(value, rx.TupleGetItem):
                    pattern = OPAQUE if value.tuple_value in packed_params else INJECTIVE
                    visit_leaf(value.tuple_value, pattern)
                else:
                    pattern = OPAQUE
                    collector = _LeafCollector()
                    collector.visit_expr(value)
                    for leaf in collector.leaves:
                        visit_leaf(leaf, OPAQUE)
            node = create(b.var, pattern, is_extern)
            for src, edge_pattern in pending:
                edges[src].append((node, edge_pattern))

    n = len(order)
    return IndexedForwardGraph(refs=order, pattern=patterns, extern_ref=extern, outputs=edges,
                               args_num=[0] * n, operands=[()] * n, result_dyn_dims=[0] * n)


# --------------------------------------------------------------------------- 2. functions


def _constant_param_struct_info(expr, call: rx.Call | None, position: int, mod: IRModule):
    """A constant read from a file without its metadata section has no shape; the buffer
    of the PrimFunc it is passed to says what TVM's constant had."""
    sinfo = expr.struct_info
    if not (isinstance(expr, rx.Constant) and isinstance(sinfo, rx.TensorStructInfo) and sinfo.ndim == -1
            and call is not None and isinstance(call.args[0], GlobalVar)):
        return sinfo
    callee = mod.functions.get(call.args[0].name_hint)
    if not isinstance(callee, tir.PrimFunc) or position >= len(callee.params):
        return sinfo
    buffer = callee.buffer_of(callee.params[position])
    if buffer is None:
        return sinfo
    dims = tuple(d.value if isinstance(d, tir.IntImm) else d for d in buffer.shape)
    return rx.TensorStructInfo(dims, buffer.dtype)


class FunctionCreator(ExprMutator):
    """TVM's FunctionCreator: collects one group's bindings, then builds its function."""

    def __init__(self, mod: IRModule, outer_bindings: dict) -> None:
        super().__init__(mod)
        self.outer_bindings = outer_bindings
        self.bindings: list = []
        self.params: list[rx.Var] = []
        self.arguments: list = []
        self.name_hint = "fused"
        self.function: rx.Function | None = None
        self.defined: set = set()
        self.outputs: list[rx.Var] = []
        self.inlined: dict = {}
        self.n_const_params = 0
        self.size_arguments: list = []  # call_tir prim values given a parameter so far
        self.partial_tuples: dict = {}  # tuple argument -> indices read through projections

    # ------------------------------------------------------------------ collecting
    def append_binding(self, b) -> None:
        if isinstance(b, rx.VarBinding):
            value = b.value
            if isinstance(value, rx.Call):
                if _is_call_tir(value):
                    self.name_hint += "_" + value.args[0].name_hint
                    for i, arg in enumerate(_call_tir_args(value)):
                        self.check_def_and_update_param(arg, value, i)
                else:
                    if isinstance(value.op, Op):
                        self.name_hint += "_" + value.op.name
                    elif isinstance(value.op, GlobalVar):
                        name = value.op.name_hint
                        self.name_hint += "_" + (name[len("fused_"):] if name.startswith("fused_") else name)
                    for arg in value.args:
                        if isinstance(arg, rx.Tuple):
                            for f in arg.fields_:
                                self.check_def_and_update_param(f)
                        else:
                            self.check_def_and_update_param(arg)
                        if isinstance(arg.struct_info, rx.TupleStructInfo):
                            self.partial_tuples.pop(arg, None)  # read whole
            elif isinstance(value, rx.TupleGetItem):
                self.check_def_and_update_param(value.tuple_value)
                if value.tuple_value in self.partial_tuples:
                    self.partial_tuples[value.tuple_value].append(value.index)
            self.defined.add(b.var)
            if not isinstance(b.var, rx.DataflowVar):
                self.append_output(b.var)
        self.bindings.append(b)

    def append_output(self, var: rx.Var) -> None:
        if var not in self.outputs:
            self.outputs.append(var)

    def check_def_and_update_param(self, expr, call: rx.Call | None = None, position: int = 0) -> None:
        if any(_same_argument(a, expr) for a in self.arguments):
            return
        is_var = isinstance(expr, rx.Var)
        if is_var and expr not in self.defined:
            value, seen = expr, set()
            while isinstance(value, rx.Var) and value not in seen and value in self.outer_bindings:
                seen.add(value)
                value = self.outer_bindings[value]
            if value is not expr and _is_inlinable(value):
                self.inlined[expr] = value
                return
        if is_var and expr in self.defined:
            return
        size_var = isinstance(expr, rx.PrimValue) and isinstance(expr.value, tir.Var)
        name = expr.name_hint if is_var else expr.value.name if size_var else f"param_{self.n_const_params}"
        if not (is_var or size_var):
            self.n_const_params += 1
        if _is_inlinable(expr):
            return
        if call is not None and isinstance(expr, rx.PrimValue):
            # a size a call_tir passes (`R.call_tir(f, (x, n))`) becomes a `T.int64`
            # parameter, unless create_function finds all its variables in the group's
            # struct info (then the call keeps it and `tir_vars` brings the variables in)
            self.size_arguments.append(expr)
            sinfo = rx.PrimStructInfo(expr.value.dtype)
        else:
            sinfo = _constant_param_struct_info(expr, call, position, self.mod)
        self.arguments.append(expr)
        self.params.append(rx.Var(name, sinfo, span=expr.span))  # later errors point at the value
        if isinstance(expr.struct_info, rx.TupleStructInfo):
            self.partial_tuples[expr] = []

    def _drop_sizes_the_struct_info_knows(self) -> None:
        """What TVM 0.27's FuseOps gives: a size argument all of whose variables occur in the
        struct info of the group's parameters or bindings stays in the inner call (found on
        TVM: `(m,)` with a parameter `z: R.Tensor((m,))`, `(k * 3,)` next to `(k * 2,)`),
        any other becomes a parameter (`n` for a bare variable, `param_N` for `k * m`)."""
        if not self.size_arguments:
            return
        known = set(tir_vars([p.struct_info for p in self.params] + [b.var.struct_info for b in self.bindings]))
        drop = {id(a) for a in self.size_arguments if set(tir_vars(a.value)) <= known}
        kept = [(a, p) for a, p in zip(self.arguments, self.params) if id(a) not in drop]
        self.arguments = [a for a, _ in kept]
        self.params = [p for _, p in kept]

    # ------------------------------------------------------------------ building
    def visit_expr(self, e):
        for i, a in enumerate(self.arguments):
            if _same_argument(a, e):
                return self.params[i]
        if e in self.inlined:
            return self.inlined[e]
        return super().visit_expr(e)

    def create_function(self) -> None:
        self._drop_sizes_the_struct_info_knows()
        remap_items: dict = {}  # tuple argument -> {index: parameter}
        # TVM walks an unordered_map keyed by address, which lists few entries newest first;
        # so later (rightmost) parameters split first and recorded positions stay valid
        for tuple_arg, indices in reversed(self.partial_tuples.items()):
            at = next(i for i, a in enumerate(self.arguments) if a is tuple_arg)
            name, fields = self.params[at].name_hint, tuple_arg.struct_info.fields_
            item_params = [rx.Var(f"{name}_{i}", fields[i]) for i in indices]
            item_args = []
            for i in indices:
                item = rx.TupleGetItem(tuple_arg, i)
                item.struct_info = fields[i]
                item_args.append(item)
            remap_items[tuple_arg] = dict(zip(indices, item_params))
            self.arguments[at:at + 1] = item_args
            self.params[at:at + 1] = item_params
        names = _NameSupply()
        outputs: list = [None] * len(self.outputs)
        self._emitted = []
        for b in self.bindings:
            if isinstance(b, rx.VarBinding) and isinstance(b.value, rx.TupleGetItem) and \
                    b.value.tuple_value in remap_items:
                param = remap_items[b.value.tuple_value][b.value.index]
                self.var_remap[b.var] = param
                if b.var in self.outputs:
                    outputs[self.outputs.index(b.var)] = param
                continue
            if b.var in self.outputs:
                value = self.visit_expr(b.value)
                out = rx.Var(names.fresh("gv"), value.struct_info or b.var.struct_info)
                self.emit(rx.VarBinding(out, value))
                self.var_remap[b.var] = out
                outputs[self.outputs.index(b.var)] = out
            else:
                self.visit_binding(b)
        emitted, self._emitted = self._emitted, None
        if not outputs:
            return  # the group's results are unused (TVM warns: run DeadCodeElimination first)
        if len(outputs) == 1:
            body = outputs[0]
        else:
            body = rx.Tuple(outputs)
            body.struct_info = rx.TupleStructInfo([o.struct_info for o in outputs])
        seq = rx.SeqExpr(rx.merge_blocks([rx.DataflowBlock(emitted)]), body)
        seq.struct_info = body.struct_info
        attrs = (("Primitive", True),)
        self.function = rx.Function(self.params, seq, body.struct_info, True, attrs, private=True)
        free = _free_symbolic_vars(self.function)
        if free:  # sizes only the caller knows (an out_ty of the group) come in as a shape
            self.arguments.append(rx.ShapeExpr(free))
            self.params.append(rx.Var("tir_vars", rx.ShapeStructInfo(free)))
            self.function = rx.Function(self.params, seq, body.struct_info, True, attrs, private=True)


def _same_argument(a, e) -> bool:
    """TVM's `same_as` on arguments: a size is one TIR expression however many prim values
    wrap it."""
    return a is e or (isinstance(a, rx.PrimValue) and isinstance(e, rx.PrimValue) and a.value is e.value)


def _is_inlinable(e) -> bool:
    """TVM's IsInlinableConstants: prim values and shapes without variables, tuples of them."""
    if isinstance(e, rx.Tuple):
        return all(_is_inlinable(f) for f in e.fields_)
    if isinstance(e, rx.PrimValue):
        return not _has_tir_var(e.value)
    if isinstance(e, rx.ShapeExpr):
        return not any(_has_tir_var(v) for v in e.values)
    return False


def _has_tir_var(e) -> bool:
    return bool(_tir_vars_in(e, []))


def _tir_vars_in(e, out: list) -> list:
    """The TIR variables of a size expression (or a tuple of them), in order of appearance."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, tir.Var):
            if not any(v is x for v in out):
                out.append(x)
        elif isinstance(x, tir.Node):
            stack.extend(reversed([getattr(x, f, None) for f in x.fields]))
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
    return out


class _SymbolicVarUses(ExprVisitor):
    """The size variables a function's body and signature mention, in visiting order."""

    def __init__(self) -> None:
        self.used: list = []

    def visit_prim_expr(self, e) -> None:
        _tir_vars_in(e, self.used)

    def visit_struct_info(self, s) -> None:
        for dim in rx.struct_info_dims(s):
            _tir_vars_in(dim, self.used)
        if isinstance(s, rx.TupleStructInfo):
            for f in s.fields_:
                self.visit_struct_info(f)


def _free_symbolic_vars(fn: rx.Function) -> list:
    """TVM's FreeSymbolicVars: size variables used but not defined by a parameter's struct
    info (a dimension, shape value or prim value that is the bare variable)."""
    defined: list = []
    for p in fn.params:
        for dim in rx.struct_info_dims(p.struct_info):
            if isinstance(dim, tir.Var) and not any(v is dim for v in defined):
                defined.append(dim)
    uses = _SymbolicVarUses()
    uses.visit_expr(fn)
    for b in (b for block in fn.body.blocks for b in block.bindings):
        uses.visit_struct_info(b.var.struct_info)
    # TVM collects them in an unordered_set keyed by address, which lists them newest first
    # (checked on TVM with 2 to 9 free sizes, run after run)
    return [v for v in reversed(uses.used) if not any(v is d for d in defined)]


# --------------------------------------------------------------------------- 3. callers


class OperatorFusor(ExprMutator):
    """TVM's OperatorFusor: rewrites the dataflow blocks of one module's Relax functions."""

    def __init__(self, mod: IRModule, group_of: dict) -> None:
        super().__init__(mod)
        self.group_of = group_of  # graph key -> root Group
        self.names = _NameSupply()
        self.functions = dict(mod.functions)
        self.group_deps: dict = {}
        self.outer_bindings: dict = {}
        self.param_sizes: set = set()  # the sizes the current function's parameters define
        self.by_hash: dict | None = None

    def transform(self) -> IRModule:
        for name in sorted(self.mod.functions):
            fn = self.mod.functions[name]
            if not is_fusable_function(fn):
                continue
            self.outer_bindings = _var_to_value(fn)
            self.param_sizes = set(tir_vars([p.struct_info for p in fn.params]))
            self.memo.clear()
            new = self.visit_expr(fn)
            if new is not fn:
                self.functions[name] = new
            self.outer_bindings = {}
        out = self.mod.with_functions(self.functions)
        out.bare = self.mod.bare
        return out

    def _group(self, var):
        group = self.group_of.get(var)
        return group.find_root() if group is not None else None

    def visit_binding_block(self, block: rx.BindingBlock):
        if not isinstance(block, rx.DataflowBlock) or any(b.var not in self.group_of for b in block.bindings):
            return super().visit_binding_block(block)  # ordinary blocks; blocks of nested scopes
        creators: dict = {}
        for b in block.bindings:
            group = self._group(b.var)
            if group.num_nodes == 1:
                continue
            creator = creators.get(group)
            if creator is None:
                creator = creators[group] = FunctionCreator(self.mod, self.outer_bindings)
            creator.append_binding(b)
        self._collect_boundary(block.bindings, creators)
        for creator in creators.values():
            creator.create_function()

        outer, self._emitted = self._emitted, []
        pending: dict = {}
        for b in self._topo_sort(block.bindings):
            group = self._group(b.var)
            if group.num_nodes == 1:
                self.visit_binding(b)
                continue
            creator = creators[group]
            fn = creator.function
            if fn is None:
                continue
            outputs = creator.outputs
            if len(outputs) > 1 and b.var in outputs:
                pending.setdefault(group, []).append(b.var)
            if creator.bindings[-1] is not b:
                continue
            self._emit_group_call(creator, fn, pending.get(group, []))
        emitted, self._emitted = self._emitted, outer
        return rx.DataflowBlock(emitted, block.span)

    def _emit_group_call(self, creator: FunctionCreator, fn: rx.Function, pending: list) -> None:
        gv = self._add_function(fn, creator.name_hint)
        args = [self._normalize_argument(self.visit_expr(a)) for a in creator.arguments]
        call = rx.Call(gv, args)
        call.struct_info = _call_struct_info(fn, args)
        outputs = creator.outputs
        single_output = len(outputs) == 1 and not isinstance(outputs[0], rx.DataflowVar)
        new_var = self._emit_value(call, dataflow=not single_output)
        if len(outputs) == 1:
            self.var_remap[outputs[0]] = new_var
            return
        done = set()
        for var in [*pending, *(v for v in outputs if v not in pending)]:
            if var in done:
                continue
            item = rx.TupleGetItem(new_var, outputs.index(var))
            item.struct_info = new_var.struct_info.fields_[outputs.index(var)]
            self.var_remap[var] = self._emit_value(item, dataflow=isinstance(var, rx.DataflowVar))
            done.add(var)

    def _emit_value(self, value, dataflow: bool) -> rx.Var:
        var = (rx.DataflowVar if dataflow else rx.Var)(self.names.fresh("lv" if dataflow else "gv"),
                                                        value.struct_info)
        self.emit(rx.VarBinding(var, value))
        return var

    def _normalize_argument(self, arg):
        """BlockBuilder binds a call argument that is not a leaf or a tuple (a projection)."""
        if isinstance(arg, rx.TupleGetItem):
            return self._emit_value(arg, dataflow=True)
        return arg

    def _add_function(self, fn: rx.Function, name_hint: str) -> GlobalVar:
        if self.by_hash is None:  # BlockBuilder's de-duplication map, filled on first use
            self.by_hash = {}
            for name, f in self.functions.items():
                if isinstance(f, rx.Function):
                    self.by_hash.setdefault(node_hash(f), []).append(name)
        key = node_hash(fn)
        same = [name for name in self.by_hash.get(key, ()) if node_equal(self.functions[name], fn)]
        if same:
            return self.mod.get_global_var(min(same))
        name = self.names.fresh(name_hint)
        while name in self.functions:
            name = self.names.fresh(name_hint)
        self.functions[name] = fn
        self.by_hash.setdefault(key, []).append(name)
        return self.mod.get_global_var(name)

    def _collect_boundary(self, bindings, creators: dict) -> None:
        defined_by: dict = {}  # a size variable -> the match_cast variable that binds it
        seen = set(self.param_sizes)
        for b in bindings:
            current = self._group(b.var)
            # a size a match_cast binds (a run-time shape) orders its users after it, though
            # no variable of the match_cast is read
            sizes = tir_vars((b.var.struct_info, b.value))
            size_users = [defined_by[v] for v in sizes if v in defined_by] if defined_by else []
            if isinstance(b, rx.MatchCast):
                for v in tir_vars(b.struct_info):
                    if v not in seen:
                        defined_by.setdefault(v, b.var)
            seen.update(sizes)
            for used in list(_vars_read(b.value)) + size_users:
                if used not in self.group_of:
                    continue
                producer = self._group(used)
                if producer is not current:
                    if current in self.group_deps.get(producer, ()):
                        raise DiagnosticError(
                            f"fuse-ops: the fused groups of `{b.var.name_hint}` and `{used.name_hint}` depend on "
                            "each other (TVM 0.27's FuseOps stops here too: a cyclic dependency)",
                            b.span or b.var.span)
                    self.group_deps.setdefault(current, []).append(producer)
                    if producer in creators:
                        creators[producer].append_output(used)

    def _topo_sort(self, bindings) -> list:
        """Bindings ordered by the dependencies of their groups, else as they were."""
        per_group: dict = {}
        group_order = []
        for b in bindings:
            group = self._group(b.var)
            group_order.append(group)
            per_group.setdefault(group, []).append(b)
        visited: set = set()
        out: list = []
        for start in group_order:
            if start in visited:
                continue
            visited.add(start)
            stack = [(start, iter(self.group_deps.get(start, ())))]
            while stack:  # depth-first, dependencies first (TVM's recursive dfs_visit)
                group, deps = stack[-1]
                for dep in deps:
                    if dep not in visited:
                        visited.add(dep)
                        stack.append((dep, iter(self.group_deps.get(dep, ()))))
                        break
                else:
                    stack.pop()
                    out.extend(per_group.get(group, ()))
        return out


def _call_struct_info(fn: rx.Function, args: list):
    try:
        return si.deduce_func_call(fn.struct_info, [a.struct_info for a in args])
    except si.StructInfoError:
        return fn.ret_struct_info


def _var_to_value(fn: rx.Function) -> dict:
    """TVM's AnalyzeVar2Value: every variable bound by a VarBinding, to its value."""
    out: dict = {}
    stack = [fn.body]
    while stack:
        seq = stack.pop()
        for block in seq.blocks:
            for b in block.bindings:
                if isinstance(b, rx.VarBinding):
                    out[b.var] = b.value
                    if isinstance(b.value, rx.If):
                        stack.extend((b.value.true_branch, b.value.false_branch))
    return out


# --------------------------------------------------------------------------- the pass


def fuse_module(mod: IRModule, opt_level: int, max_depth: int = MAX_FUSED_OPS) -> IRModule:
    """relax.transform.FuseOps on every Relax function of `mod` (Relay functions untouched)."""
    group_of: dict = {}
    for fn in mod.functions.values():
        if not is_fusable_function(fn):
            continue
        graph = build_graph(fn, mod)
        groups = GraphPartitioner(opt_level, max_depth, 0).partition(graph)
        group_of.update(zip(graph.refs, groups))
    if not group_of:
        return mod
    return OperatorFusor(mod, group_of).transform()


__all__ = ["FunctionCreator", "OperatorFusor", "build_graph", "fuse_module", "is_fusable_function"]
