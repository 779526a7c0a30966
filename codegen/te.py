"""A TE-like compute layer and TVM's CreatePrimFunc (`te.create_prim_func`).

Describe a tensor by how each element is computed, then turn a list of tensors into a
PrimFunc whose printed TVMScript is TVM 0.27's, byte for byte:

    from irtool.codegen import te
    from irtool.codegen import tir_build as tb

    A = te.placeholder((n, 4), "float32", name="A")
    B = te.compute(A.shape, lambda i, j: tb.exp(A(i, j)), name="compute")    # axes i, j
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((n,), lambda i: te.sum(A(i, k), axis=[k]), name="C")     # a reduction
    func = te.create_prim_func([A, C])        # intermediates (B) become sblock_alloc_buffers

`compute(shape, fcompute, name="compute", tag="", attrs=None)` names its axes as TVM's
`te.compute` does: after `fcompute`'s parameters (`lambda i, j:`), `i0, i1, ...` for
`lambda *i:`; `compute_ax(shape, f, name)` passes one list of axes named `ax0, ax1, ...`
(TVM's C++ `te::compute`, which TOPI's C++ operators use: `T_add`'s `v_ax0`). A body is
built with `irtool.codegen.tir_build` (TVM's folding operator functions) from `A(i, j)`
loads; `sum`/`max`/`min` (or `comm_reducer`) make a reduction over `reduce_axis`es.

`create_prim_func(args, index_dtype="int64")` follows src/te/operation/create_primfunc.cc:

  1. the operations reachable from `args`, in post-DFS order (inputs before users);
  2. per compute op: one loop nest (its axes, then its reduce axes, named after them) and an
     sblock named after the op (made unique: `compute`, `compute_1`), block iterators
     `v_<axis>` (`S` for axes, `R` for reduce axes) bound to the loops; the body
     `out[v...] = body` simplified (`irtool.codegen.simplify`); a reduction stores
     `combiner(out[v...], source)` and has `T.init()` storing the identity;
  3. buffers: one per argument (parameters, in order) and one per other compute op (allocated
     in the root block `T.sblock_alloc_buffer`);
  4. reads/writes of each sblock detected as TVM's BlockReadWriteDetector does: regions in
     order of first access, init before body, a reduction's output not among its reads;
  5. attributes `s_tir` and `tirx.noalias`; index constants and comparisons in conditions
     promoted to `index_dtype` (IndexDataTypeNormalizer);
  6. a reduce axis whose extent depends on other axes nests the op's sblock in one sblock per
     level (GenerateNestedIterLevels: `<name>_l1` outside `<name>`; see "nested levels").
Scalar `tir.Var`s in `args` become scalar parameters (the symbolic sizes `call_te` passes).
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from irtool.ir import tir

from . import tir_build as tb
from ._call_bounds import _call_bounds, _has_call, _symbolic_call_range
from .simplify import normalize_index_dtype, simplify

# ----------------------------------------------------------------------------- tensors


class Operation:
    """A placeholder or a compute: produces `num_outputs` tensors."""

    name: str


class PlaceholderOp(Operation):
    def __init__(self, shape: tuple, dtype: str, name: str) -> None:
        self.name, self.shape, self.dtype = name, shape, dtype
        self.output = Tensor(self, 0, shape, dtype)

    def input_tensors(self) -> list[Tensor]:
        return []


@dataclass
class Reducer:
    """A commutative reducer (TVM's CommReducer): `combine(lhs, rhs)` and its identity."""

    name: str
    combine: Callable[[tir.PrimExpr, tir.PrimExpr], tir.PrimExpr]
    identity: Callable[[str], tir.PrimExpr]


class Reduce(tir.PrimExpr):
    """`reducer(source)` over `axis` (TVM's tirx.Reduce); only inside a compute body."""

    __slots__ = ("reducer", "source", "axis", "condition", "init")
    fields = ("dtype", "source", "axis", "condition")

    def __init__(self, reducer: Reducer, source: tir.PrimExpr, axis, condition=None, init=None) -> None:
        self.reducer = reducer
        self.source = source
        self.axis = tuple(axis)
        self.condition = condition
        self.init = init
        self.dtype = source.dtype
        self.span = None


class ProducerLoad(tir.PrimExpr):
    """`A(i, j)`: an element of a TE tensor (becomes a BufferLoad in the PrimFunc)."""

    __slots__ = ("tensor", "indices")
    fields = ("dtype", "indices")

    def __init__(self, tensor: Tensor, indices) -> None:
        self.tensor = tensor
        self.indices = tuple(indices)
        self.dtype = tensor.dtype
        self.span = None


class Tensor:
    """An output of an operation: shape (TIR expressions), dtype and the op."""

    def __init__(self, op: Operation, index: int, shape: tuple, dtype: str) -> None:
        self.op, self.value_index, self.shape, self.dtype = op, index, tuple(shape), dtype

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, *indices) -> ProducerLoad:
        if len(indices) == 1 and isinstance(indices[0], (list, tuple)):
            indices = tuple(indices[0])
        if len(indices) != len(self.shape):
            raise ValueError(f"{self.name} has {len(self.shape)} dimensions, indexed with {len(indices)}")
        return ProducerLoad(self, [i.var if isinstance(i, tir.IterVar) else tb.as_expr(i, "int64") for i in indices])

    def __repr__(self) -> str:
        return f"te.Tensor({self.name}, {self.dtype})"


class ComputeOp(Operation):
    """A compute. Three hints for CreatePrimFunc's output where TVM's arithmetic leaves forms
    this module does not derive (set by the TOPI function that builds the op):
      `prebuilt`         the body (a reduction's source) is already in the form TVM prints:
                         no simplify, no dtype normalisation;
      `narrow_axes`      ids of axis variables TVM types int32 (their size came from an int32
                         attribute); a nested level's copy of one gets IndexDataTypeNormalizer's
                         domain `Range(v, 1)`, i.e. extent `1 - v`;
      `relaxed_extents`  id of a reduce axis variable -> the extent, in the op's own axis
                         variables, of the region an outer nested sblock reads along an index
                         `base + axis` (TVM's IntSet relaxation, as its simplifier prints it);
      `read_regions`     [(tensor, [Range in the op's axis variables, ...]), ...]: the sblock's
                         reads, where TVM's region analysis relaxes an index that is not a
                         point (a Select's two branches)."""

    def __init__(self, name: str, tag: str, attrs: dict, axis: list, reduce_axis: list, body: list) -> None:
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis, self.reduce_axis, self.body = axis, reduce_axis, body
        self.prebuilt = False
        self.read_regions: list | None = None
        self.narrow_axes: frozenset = frozenset()
        self.relaxed_extents: dict = {}
        shape = tuple(iv.dom.extent for iv in axis)
        self.outputs = [Tensor(self, i, shape, b.dtype) for i, b in enumerate(body)]

    def input_tensors(self) -> list[Tensor]:
        """The tensors the body loads, in order of first appearance (post order)."""
        seen: list[Tensor] = []
        for b in self.body:
            _collect_loads(b, seen)
        return seen


class ExternOp(Operation):
    """`te.extern`: outputs computed by a TIR statement over buffers (TOPI's ir_builder ops).
    `build_body(in_buffers, out_buffers)` makes the statement once the buffers are known (one
    output buffer, not a list, for an extern made with one). As TVM's CreatePrimFunc binds them:
    a placeholder argument's buffer is the input buffer of the last extern reading it (a
    symbolic `elem_offset` unless given `in_buffers`); an intermediate input is its allocation;
    an output that is no argument is allocated in the root sblock, its offset zero (alignment
    kept). The body may also read tensors it does not take as inputs (`iou()`: a ProducerLoad,
    TVM's ProducerToBufferTransformer makes it a load of that tensor's buffer)."""

    def __init__(self, name: str, inputs: list, in_buffers: list, out_buffers: list,
                 build_body: Callable, single: bool = True) -> None:
        self.name, self.inputs, self.in_buffers = name, list(inputs), list(in_buffers)
        self.out_buffers, self.build_body, self.single = list(out_buffers), build_body, single
        self.outputs = [Tensor(self, i, b.shape, b.dtype) for i, b in enumerate(self.out_buffers)]

    @property
    def out_buffer(self) -> tir.Buffer:
        return self.out_buffers[0]

    def input_tensors(self) -> list[Tensor]:
        return list(self.inputs)


def extern(out_buffer: tir.Buffer | list, inputs: list, build_body: Callable, name: str,
           in_buffers: list | None = None) -> Tensor | list:
    """TVM's `te.extern([shape], inputs, fcompute, out_buffers=out_buffer(s), in_buffers=...,
    name=name)`: one Tensor for one buffer, a list for a list of buffers."""
    # TVM's offset variables are int32; int64 here, as our parser reads the printed TypeVar back
    # (the printout is the same, and TVM parses it to its own)
    if in_buffers is None:
        in_buffers = [tir.Buffer(t.name, t.shape, t.dtype, elem_offset=tir.Var("elem_offset", "int64"))
                      for t in inputs]
    single = isinstance(out_buffer, tir.Buffer)
    op = ExternOp(name, inputs, in_buffers, [out_buffer] if single else out_buffer, build_body, single)
    return op.outputs[0] if single else list(op.outputs)


def extern_output(name: str, shape, dtype: str) -> tir.Buffer:
    """te.extern's own output buffer (no `out_buffers` given): named after the op, offset symbolic."""
    return tir.Buffer(name, [_dim(d) for d in shape], dtype, elem_offset=tir.Var("elem_offset", "int64"))


def _collect_loads(e, out: list) -> None:
    if isinstance(e, ProducerLoad):
        for i in e.indices:
            _collect_loads(i, out)
        if not any(t is e.tensor for t in out):
            out.append(e.tensor)
    elif isinstance(e, Reduce):
        _collect_loads(e.source, out)
        if e.condition is not None:
            _collect_loads(e.condition, out)
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            _collect_loads(getattr(e, f), out)
    elif isinstance(e, (tuple, list)):
        for x in e:
            _collect_loads(x, out)


def _dim(d) -> tir.PrimExpr:
    return tb.as_expr(d, "int64") if not isinstance(d, tir.PrimExpr) else d


def placeholder(shape: Sequence, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor (TVM's `te.placeholder`); dims are ints or int64 TIR expressions."""
    return PlaceholderOp(tuple(_dim(d) for d in shape), dtype, name).output


def _iter_var(name: str, extent, kind: int, dom_min=0) -> tir.IterVar:
    extent = _dim(extent)
    return tir.IterVar(tir.Var(name, extent.dtype), tir.Range(tb.as_expr(dom_min, extent.dtype), extent), kind)


def reduce_axis(dom: tuple, name: str = "rv") -> tir.IterVar:
    """A reduction axis over `dom` = (min, extent-end): TVM's `te.reduce_axis((0, n), "k")`."""
    lo, hi = dom
    hi = _dim(hi)
    extent = tb.sub(hi, lo) if not (isinstance(lo, int) and lo == 0) else hi
    return _iter_var(name, extent, tir.COMM_REDUCE, lo)


def _arg_names(fcompute: Callable, ndim: int, varargs_names=None) -> list[str]:
    spec = inspect.getfullargspec(fcompute)
    if not spec.args and spec.varargs is None:
        return [f"i{i}" for i in range(ndim)]
    if spec.varargs is not None:
        if varargs_names is not None:
            return list(spec.args) + list(varargs_names)
        return list(spec.args) + [f"i{i}" for i in range(ndim - len(spec.args))]
    if len(spec.args) != ndim:
        raise ValueError(f"fcompute takes {len(spec.args)} indices for a {ndim}-d shape")
    return list(spec.args)


def _make_compute(shape, names: list[str], body_of, name: str, tag: str, attrs) -> Tensor | tuple:
    axis = [_iter_var(n, s, tir.DATA_PAR) for n, s in zip(names, shape)]
    body = body_of([iv.var for iv in axis])
    bodies = list(body) if isinstance(body, (list, tuple)) else [body]
    bodies = [tb.as_expr(b) for b in bodies]
    reduce_axes: list = []
    if isinstance(bodies[0], Reduce):
        reduce_axes = list(bodies[0].axis)
    op = ComputeOp(name, tag, attrs, axis, reduce_axes, bodies)
    return op.outputs[0] if len(op.outputs) == 1 else tuple(op.outputs)


def compute(shape: Sequence, fcompute: Callable, name: str = "compute", tag: str = "",
            attrs: dict | None = None, varargs_names: Sequence[str] | None = None) -> Tensor:
    """TVM's Python `te.compute`: `fcompute(*axes)` gives the element at `axes`
    (`varargs_names` names the axes a `*args` parameter receives)."""
    shape = tuple(_dim(d) for d in shape)
    names = _arg_names(fcompute, len(shape), varargs_names)
    return _make_compute(shape, names, lambda vs: fcompute(*vs), name, tag, attrs)


def compute_ax(shape: Sequence, fcompute: Callable, name: str = "compute", tag: str = "",
               attrs: dict | None = None) -> Tensor:
    """TVM's C++ `te::compute` (TOPI's C++ operators): `fcompute([ax0, ax1, ...])`."""
    shape = tuple(_dim(d) for d in shape)
    return _make_compute(shape, [f"ax{i}" for i in range(len(shape))], fcompute, name, tag, attrs)


# ----------------------------------------------------------------------------- reducers


def comm_reducer(name: str, combine: Callable, identity: Callable[[str], tir.PrimExpr]) -> Callable:
    """A reduction function `f(expr, axis=[k, ...], where=None)` (TVM's `te.comm_reducer`)."""
    reducer = Reducer(name, combine, identity)

    def reduce(expr: tir.PrimExpr, axis, where=None) -> Reduce:
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        return Reduce(reducer, tb.as_expr(expr), axes, where)

    reduce.__name__ = name
    return reduce


sum = comm_reducer("sum", tb.add, lambda dtype: tb.const(0, dtype))  # noqa: A001
max = comm_reducer("max", tb.max_, tb.min_value)  # noqa: A001
min = comm_reducer("min", tb.min_, tb.max_value)  # noqa: A001


# ----------------------------------------------------------------------------- create_prim_func


def _post_dfs(roots: list[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded:
                order.append(op)
                continue
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.append((op, True))
            for t in reversed(op.input_tensors()):
                if id(t.op) not in seen:
                    stack.append((t.op, False))
    return order


class _NameSupply:
    """TVM's UniqueNameSupply.FreshName with an underscore: `compute`, `compute_1`, ..."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def fresh(self, name: str) -> str:
        if name not in self.used:
            self.used[name] = 0
            return name
        n = self.used[name]
        candidate = name
        while candidate in self.used:
            n += 1
            candidate = f"{name}_{n}"
        self.used[name] = n
        self.used[candidate] = 0
        return candidate


def _substitute(e, vmap: dict, buffers: dict):
    """Replace variables (by identity) and ProducerLoads (by BufferLoads of `buffers`)."""
    if isinstance(e, tir.Var):
        return vmap.get(e, e)
    if isinstance(e, ProducerLoad):
        return tir.BufferLoad(buffers[id(e.tensor)], [_substitute(i, vmap, buffers) for i in e.indices])
    if isinstance(e, (tir.IntImm, tir.FloatImm, tir.StringImm)):
        return e
    if isinstance(e, tir.Node):
        changes = {}
        for f in type(e).fields:
            v = getattr(e, f)
            nv = _substitute(v, vmap, buffers) if isinstance(v, (tir.Node, tuple)) else v
            if nv is not v:
                changes[f] = nv
        return e.replace(**changes) if changes else e
    if isinstance(e, tuple):
        out = tuple(_substitute(x, vmap, buffers) for x in e)
        return e if all(a is b for a, b in zip(out, e)) else out
    return e


def _decl_buffer(name: str, shape, dtype: str) -> tir.Buffer:
    return tir.Buffer(name, shape, dtype)


def _stmt_for_compute(op: ComputeOp, out_buffer: tir.Buffer, buffers: dict, names: _NameSupply,
                      index_dtype: str) -> tir.Stmt:
    axes = list(op.axis) + list(op.reduce_axis)
    levels = _nested_levels(axes)
    if builtins.max(levels, default=0) > 0:
        return _nested_stmt_for_compute(op, axes, levels, out_buffer, buffers, names, index_dtype)
    vmap: dict = {}
    loop_vars, block_iters, bindings, store_indices = [], [], [], []
    for iv in axes:
        dtype = iv.var.dtype
        loop_var = tir.Var(iv.var.name, dtype)
        block_var = tir.Var("v_" + iv.var.name, dtype)
        dom = tir.Range(simplify(iv.dom.min), simplify(iv.dom.extent))
        loop_vars.append((loop_var, dom))
        block_iters.append(tir.IterVar(block_var, dom, iv.iter_type))
        bindings.append(loop_var)
        if iv.iter_type != tir.COMM_REDUCE:
            store_indices.append(block_var)
        vmap[iv.var] = block_var
    if not axes:  # a 0-d result: TVM's dummy block iterator (int32, then of the index dtype)
        dt = index_dtype or "int32"
        block_iters.append(tir.IterVar(tir.Var("vi", dt), tir.Range(tb.const(0, dt), tb.const(1, dt)), tir.DATA_PAR))
        bindings.append(tb.const(0, dt))

    body_expr = op.body[0]
    init = None
    if isinstance(body_expr, Reduce):
        lhs = tir.BufferLoad(out_buffer, store_indices)
        rhs = _substitute(body_expr.source, vmap, buffers)
        rhs = rhs if op.prebuilt else simplify(rhs)
        combined = body_expr.reducer.combine(lhs, rhs)
        if body_expr.condition is not None:
            cond = simplify(_substitute(body_expr.condition, vmap, buffers))
            combined = tb.select(cond, combined, lhs)
        if not op.prebuilt:
            combined = normalize_index_dtype(combined, index_dtype)
        body: tir.Stmt = tir.BufferStore(out_buffer, combined, store_indices)
        init = tir.BufferStore(out_buffer, body_expr.reducer.identity(out_buffer.dtype), store_indices)
    elif op.prebuilt:
        body = tir.BufferStore(out_buffer, _substitute(body_expr, vmap, buffers), store_indices)
    else:
        value = simplify(_substitute(body_expr, vmap, buffers))
        body = tir.BufferStore(out_buffer, normalize_index_dtype(value, index_dtype), store_indices)
    name = names.fresh(op.name)
    reads, writes = detect_access(init, body)
    if op.read_regions is not None:
        reads = tuple(tir.BufferRegion(buffers[id(t)], [tir.Range(_substitute(r.min, vmap, buffers),
                                                                  _substitute(r.extent, vmap, buffers))
                                                        for r in ranges])
                      for t, ranges in op.read_regions)
    block = tir.SBlock(name, block_iters, reads, writes, body, init,
                       annotations=tuple((k, _annotation(v, buffers)) for k, v in op.attrs.items()))
    stmt: tir.Stmt = tir.SBlockRealize(bindings, tb.const(True, "bool"), block)
    for loop_var, dom in reversed(loop_vars):
        stmt = tir.For(loop_var, dom.min, dom.extent, "serial", stmt)
    return stmt


def _annotation(value, buffers: dict):
    """An sblock attribute, the tensors in it (batch_matmul's `layout_free_placeholders`) as
    their buffers."""
    if isinstance(value, list):
        return [_annotation(v, buffers) for v in value]
    return buffers[id(value)] if isinstance(value, Tensor) else value


# ----------------------------------------------------------------------------- nested levels
# A reduce axis whose extent depends on other axes (adaptive pooling's windows) cannot be one
# loop nest: CreatePrimFunc's GenerateNestedIterLevels puts each axis at the level 1 + the
# deepest axis its domain uses. Level i gets its loops and an sblock of its own; inner levels
# rebind the outer block variables (`v_ax0_1 = T.axis.spatial((v_ax0, v_ax0 + 1), v_ax0)`);
# the leaf sblock is named after the op, the level-i sblock `<name>_l<i+1>`. An outer sblock
# with reduction iterators holds the `T.init()` (the leaf then has none).


def _vars_in(e, out: list) -> list:
    if isinstance(e, tir.Var):
        out.append(e)
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            _vars_in(getattr(e, f), out)
    elif isinstance(e, tuple):
        for x in e:
            _vars_in(x, out)
    return out


def _nested_levels(axes: list) -> list[int]:
    index = {id(iv.var): i for i, iv in enumerate(axes)}
    depth: dict[int, int] = {}

    def visit(i: int) -> int:
        if i not in depth:
            depth[i] = 0  # a cycle cannot occur in a valid compute
            deps = _vars_in(axes[i].dom.min, []) + _vars_in(axes[i].dom.extent, [])
            depth[i] = builtins.max([visit(index[id(v)]) + 1 for v in deps if id(v) in index], default=0)
        return depth[i]

    return [visit(i) for i in range(len(axes))]


@dataclass
class _Scope:
    loops: list
    iters: list
    bindings: list
    store: list
    remap: dict


def _nested_stmt_for_compute(op: ComputeOp, axes: list, levels: list[int], out_buffer: tir.Buffer,
                             buffers: dict, names: _NameSupply, index_dtype: str) -> tir.Stmt:
    scopes: list[_Scope] = []
    loop_axis: dict[int, tir.IterVar] = {}
    for level in range(builtins.max(levels) + 1):
        prev = scopes[-1].remap if scopes else {}
        scope = _Scope([], [], [], [], {})
        for i, iv in enumerate(axes):
            dtype = iv.var.dtype
            if levels[i] == level:
                loop_var = tir.Var(iv.var.name, dtype)
                dom = tir.Range(simplify(_substitute(iv.dom.min, prev, buffers)),
                                simplify(_substitute(iv.dom.extent, prev, buffers)))
                scope.loops.append((loop_var, dom))
                loop_axis[id(loop_var)] = iv
                iter_var, binding = tir.IterVar(tir.Var("v_" + iv.var.name, dtype), dom, iv.iter_type), loop_var
            elif levels[i] < level:
                binding = prev[iv.var]
                one = tb.const(1, dtype)
                extent = tir.BinOp("sub", one, binding) if id(iv.var) in op.narrow_axes else one
                iter_var = tir.IterVar(tir.Var("v_" + iv.var.name, dtype), tir.Range(binding, extent), iv.iter_type)
            else:
                continue
            scope.iters.append(iter_var)
            scope.bindings.append(binding)
            if iv.iter_type != tir.COMM_REDUCE:
                scope.store.append(iter_var.var)
            scope.remap[iv.var] = iter_var.var
        scopes.append(scope)

    body_expr = op.body[0]
    if not isinstance(body_expr, Reduce) or body_expr.condition is not None:
        raise NotImplementedError("nested levels for a compute other than a plain reduction")
    outer_reduces = any(it.iter_type == tir.COMM_REDUCE for s in scopes[:-1] for it in s.iters)

    def init_of(scope: _Scope) -> tir.Stmt:
        return tir.BufferStore(out_buffer, body_expr.reducer.identity(out_buffer.dtype), scope.store)

    leaf = scopes[-1]
    lhs = tir.BufferLoad(out_buffer, leaf.store)
    rhs = simplify(_substitute(body_expr.source, leaf.remap, buffers))
    body: tir.Stmt = tir.BufferStore(out_buffer, normalize_index_dtype(body_expr.reducer.combine(lhs, rhs),
                                                                      index_dtype), leaf.store)
    init = None if outer_reduces else init_of(leaf)
    annotations = tuple((k, v) for k, v in op.attrs.items())
    # the leaf's iterator domains (an extent read from a buffer: roi_align's sample grid) are
    # visited first, as TVM's detector visits an sblock's iter_vars before its body
    reads, writes = detect_access(init, body, [it.dom.extent for it in leaf.iters])
    block = tir.SBlock(names.fresh(op.name), leaf.iters, reads, writes, body, init, annotations=annotations)
    stmt: tir.Stmt = _wrap_loops(leaf, tir.SBlockRealize(leaf.bindings, tb.const(True, "bool"), block))
    for level in range(len(scopes) - 2, -1, -1):
        scope, inner = scopes[level], block
        init = init_of(scope) if any(it.iter_type == tir.COMM_REDUCE for it in scope.iters) else None
        inner_values = {id(it.var): v for it, v in zip(inner.iter_vars, stmt_bindings(stmt))}
        relaxed = {id(lv): op.relaxed_extents.get(id(loop_axis[id(lv)].var))
                   for s in scopes[level + 1:] for lv, _ in s.loops}
        reads = tuple(_relax_region(r, inner_values, relaxed, scope.remap) for r in inner.reads
                      if init is None or r.buffer is not out_buffer)
        writes = (tir.BufferRegion(out_buffer, [tir.Range(i, tb.const(1, i.dtype)) for i in scope.store]),)
        block = tir.SBlock(names.fresh(f"{op.name}_l{level + 1}"), scope.iters, reads, writes, stmt, init,
                           annotations=annotations)
        stmt = _wrap_loops(scope, tir.SBlockRealize(scope.bindings, tb.const(True, "bool"), block))
    return stmt


def stmt_bindings(stmt: tir.Stmt) -> list:
    """The iterator values of the sblock realize under `stmt`'s loops."""
    while isinstance(stmt, tir.For):
        stmt = stmt.body
    return list(stmt.iter_values)


def _wrap_loops(scope: _Scope, stmt: tir.Stmt) -> tir.Stmt:
    for loop_var, dom in reversed(scope.loops):
        stmt = tir.For(loop_var, dom.min, dom.extent, "serial", stmt)
    return stmt


def _relax_region(region: tir.BufferRegion, values: dict, relaxed: dict, remap: dict) -> tir.BufferRegion:
    """An inner sblock's read region as the outer sblock sees it: inner block variables
    replaced by their bindings, `base + loop` over an inner loop with a relaxed extent hint
    becomes `base : base + hint`; anything else over an inner loop covers the dimension."""
    ranges = []
    for rng, dim in zip(region.region, region.buffer.shape):
        lo, extent = _subst_ids(rng.min, values), _subst_ids(rng.extent, values)
        if extent is not rng.extent:  # a union of the outer and inner variable: one point again
            lo, extent = simplify(_same_min_max(lo)), _same_min_max(extent)
            if isinstance(extent, tir.BinOp) and extent.op == "sub" and isinstance(extent.a, tir.BinOp) and \
                    extent.a.op == "add" and extent.a.a is extent.b:  # (a + 1) - a
                extent = extent.a.b
            extent = simplify(extent)
        inner = [v for v in _vars_in(lo, []) if id(v) in relaxed]
        if not inner:
            ranges.append(tir.Range(lo, extent))
        elif len(inner) == 1 and isinstance(lo, tir.BinOp) and lo.op == "add" and lo.b is inner[0] and \
                relaxed[id(inner[0])] is not None and all(v is not inner[0] for v in _vars_in(lo.a, [])):
            ranges.append(tir.Range(lo.a, _substitute(relaxed[id(inner[0])], remap, {})))
        else:
            ranges.append(tir.Range(tb.const(0, dim.dtype), dim))
    return tir.BufferRegion(region.buffer, ranges)


def _same_min_max(e):
    """`T.min(a, a)` and `T.max(a, a)` as `a` (what TVM's simplifier does first)."""
    if isinstance(e, tir.BinOp):
        a, b = _same_min_max(e.a), _same_min_max(e.b)
        if e.op in ("min", "max") and a is b:
            return a
        return e if a is e.a and b is e.b else tir.BinOp(e.op, a, b)
    return e


def _subst_ids(e, values: dict):
    if isinstance(e, tir.Var):
        return values.get(id(e), e)
    if isinstance(e, (tir.IntImm, tir.FloatImm, tir.StringImm)):
        return e
    if isinstance(e, tir.Node):
        changes = {}
        for f in type(e).fields:
            v = getattr(e, f)
            nv = _subst_ids(v, values) if isinstance(v, (tir.Node, tuple)) else v
            if nv is not v:
                changes[f] = nv
        return e.replace(**changes) if changes else e
    if isinstance(e, tuple):
        out = tuple(_subst_ids(x, values) for x in e)
        return e if all(a is b for a, b in zip(out, e)) else out
    return e


def create_prim_func(args: Sequence, index_dtype: str = "int64") -> tir.PrimFunc:
    """TVM's `te.create_prim_func(args, index_dtype_override)`: see the module docstring.
    `args` are Tensors (buffer parameters) and scalar `tir.Var`s, in parameter order."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    order = _post_dfs([t.op for t in tensors])
    buffers: dict[int, tir.Buffer] = {}
    is_arg = {id(t) for t in tensors}
    root_alloc: list[tir.Buffer] = []
    names = _NameSupply()
    stmts: list[tir.Stmt] = []
    extern_inputs = {id(t): b for op in order if isinstance(op, ExternOp) for t, b in zip(op.inputs, op.in_buffers)
                     if isinstance(t.op, PlaceholderOp)}
    for op in order:
        if isinstance(op, PlaceholderOp):
            if id(op.output) not in is_arg:
                raise ValueError(f"placeholder {op.name} is not an argument of the function")
            buffers[id(op.output)] = extern_inputs.get(id(op.output)) or _decl_buffer(op.name, op.shape, op.dtype)
            continue
        if isinstance(op, ExternOp):  # an opaque sblock, no iterators, regions left empty
            outs = []
            for t, buf in zip(op.outputs, op.out_buffers):
                if id(t) not in is_arg:
                    buf = tir.Buffer(buf.name, buf.shape, buf.dtype, align=buf.align, scope=buf.scope)
                    root_alloc.append(buf)
                buffers[id(t)] = buf
                outs.append(buf)
            body = op.build_body([buffers[id(t)] for t in op.inputs], outs[0] if op.single else outs)
            body = _substitute(body, {}, buffers)
            block = tir.SBlock(names.fresh(op.name.replace(".", "_")), (), (), (), body)
            stmts.append(tir.SBlockRealize((), tb.const(True, "bool"), block))
            continue
        if len(op.outputs) != 1:  # a tuple reduction (argmax): its op builds its own sblock
            if not hasattr(op, "make_stmt"):
                raise NotImplementedError("compute ops with several outputs")
            out_bufs = [_decl_buffer(f"{op.name}_v{t.value_index}", t.shape, t.dtype) for t in op.outputs]
            for t, b in zip(op.outputs, out_bufs):
                buffers[id(t)] = b
                if id(t) not in is_arg:
                    root_alloc.append(b)
            stmts.append(op.make_stmt(out_bufs, buffers, names, index_dtype))
            continue
        out = op.outputs[0]
        buf = _decl_buffer(op.name, out.shape, out.dtype)
        buffers[id(out)] = buf
        if id(out) not in is_arg:
            root_alloc.append(buf)
        stmts.append(_stmt_for_compute(op, buf, buffers, names, index_dtype))
    params, buffer_map = [], []
    for a in args:
        if isinstance(a, Tensor):
            buf = buffers[id(a)]
            handle = tir.Var("var_" + buf.name, "handle")
            params.append(handle)
            buffer_map.append((handle, buf))
        else:
            params.append(a)
    if not root_alloc and len(stmts) == 1 and isinstance(stmts[0], tir.SBlockRealize) and not stmts[0].iter_values:
        body = stmts[0]  # one sblock without iterators is the root itself (TVM's ScriptComplete)
    else:
        root = tir.SBlock("root", (), (), (), tir.seq(stmts), alloc_buffers=root_alloc)
        body = tir.SBlockRealize((), tb.const(True, "bool"), root)
    return tir.PrimFunc(params, body, None, buffer_map, (("s_tir", True), ("tirx.noalias", True)), private=True)


# ----------------------------------------------------------------------------- access regions


def detect_access(init: tir.Stmt | None, body: tir.Stmt, domains: Sequence = ()) -> tuple[tuple, tuple]:
    """Read and write regions of a leaf sblock, as TVM's BlockReadWriteDetector finds them:
    every access is a point (the block has no inner loops); accesses to one buffer at
    different points cover the range between them (constant distance), between two
    variables (`T.min(a, b)` to `T.max(a, b)`) or the whole dimension; a reduction's output
    is not among its reads. Loads in `domains` (the iterators' extents) are read first."""
    reads: dict = {}
    writes: dict = {}

    def load(e) -> None:
        if isinstance(e, tir.BufferLoad):
            _update(reads, e.buffer, e.indices)
            for i in e.indices:
                load(i)
        elif isinstance(e, tir.Node):
            for f in type(e).fields:
                load(getattr(e, f))
        elif isinstance(e, tuple):
            for x in e:
                load(x)

    for e in domains:
        load(e)
    for stmt in (init, body):
        if stmt is None:
            continue
        _update(writes, stmt.buffer, stmt.indices)
        load(stmt.value)
        for i in stmt.indices:
            load(i)
    excluded = set(writes) if init is not None else set()
    read_regions = tuple(_region(buf, pts) for key, (buf, pts) in reads.items() if key not in excluded)
    write_regions = tuple(_region(buf, pts) for buf, pts in writes.values())
    return read_regions, write_regions


def _update(table: dict, buffer: tir.Buffer, indices) -> None:
    entry = table.setdefault(id(buffer), (buffer, []))
    if not any(_same_indices(p, indices) for p in entry[1]):
        entry[1].append(tuple(indices))


def _same_indices(a, b) -> bool:
    from irtool.ir.node_structural import node_equal

    return len(a) == len(b) and all(x is y or node_equal(x, y) for x, y in zip(a, b))


def _region(buffer: tir.Buffer, points: list) -> tir.BufferRegion:
    ranges = []
    for dim, extent in enumerate(buffer.shape):
        idx = [p[dim] for p in points]
        first = idx[0]
        offsets = [_const_offset(first, i) for i in idx]
        distinct = list({id(i): i for i in idx}.values())
        if len(distinct) == 2 and all(isinstance(i, tir.Var) for i in distinct):
            # IntSet's Union of two points (an outer and an inner sblock's variable)
            lo, hi = tir.BinOp("min", *distinct), tir.BinOp("max", *distinct)
            ranges.append(tir.Range(lo, tir.BinOp("sub", tir.BinOp("add", hi, tb.const(1, hi.dtype)), lo)))
        elif any(_has_call(i) for i in idx):  # TVM's IntSet: a call's value is unknown
            bounds = [_call_bounds(i) for i in idx]
            lo, hi = [b[0] for b in bounds], [b[1] for b in bounds]
            if None in lo or None in hi:
                ranges.append(tir.Range(tb.const(0, extent.dtype), extent))
            elif not all(isinstance(v, int) for v in lo + hi):  # clamped by a symbolic size
                ranges.append(_symbolic_call_range(lo, hi, extent) or tir.Range(tb.const(0, extent.dtype), extent))
            else:
                ranges.append(tir.Range(tb.const(builtins.min(lo), first.dtype),
                                        tb.const(builtins.max(hi) - builtins.min(lo) + 1, first.dtype)))
        elif all(o == 0 for o in offsets):
            ranges.append(tir.Range(first, tb.const(1, first.dtype)))
        elif all(o is not None for o in offsets):
            lo, hi = builtins.min(offsets), builtins.max(offsets)
            ranges.append(tir.Range(simplify(tb.add(first, lo)), tb.const(hi - lo + 1, first.dtype)))
        else:
            ranges.append(tir.Range(tb.const(0, extent.dtype), extent))
    return tir.BufferRegion(buffer, ranges)


def _const_offset(a: tir.PrimExpr, b: tir.PrimExpr) -> int | None:
    """b - a when it is a known constant."""
    from irtool.ir.node_structural import node_equal

    if a is b or node_equal(a, b):
        return 0
    (base_a, ca), (base_b, cb) = _split_offset(a), _split_offset(b)
    if base_a is base_b or (base_a is not None and base_b is not None and node_equal(base_a, base_b)):
        return cb - ca
    return None


def _split_offset(e: tir.PrimExpr) -> tuple:
    """e as (base, c) with e = base + c (base None for a constant)."""
    if isinstance(e, tir.IntImm):
        return None, e.value
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub") and isinstance(e.b, tir.IntImm):
        return e.a, e.b.value if e.op == "add" else -e.b.value
    return e, 0
