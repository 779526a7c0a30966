"""TIR schedule primitives on sblock-form PrimFuncs, as TVM's `s_tir.Schedule` prints them.

    sch = Schedule(func)
    i, j = sch.get_loops("T_add")
    f = sch.fuse(i, j)                          # for i_j_fused in range(I*J):  v0 = f // J, v1 = f % J
    outer, inner = sch.split(f, [None, 8])      # f = outer * 8 + inner; T.where(...) if 8 does not divide
    sch.parallel(outer); sch.vectorize(inner)
    sch.compute_inline("T_exp")                 # the producer's value replaces each load of its buffer
    sch.func, sch.trace                         # the result, and the calls as TVM Python

A block is named by its name; a loop by its loop variable (a `tir.Var`, kept by every
primitive that does not replace the loop). Loops are rewritten by substituting the old
loop variable in the block bindings below it, which are then simplified knowing each loop
variable's range (`index_simplify`), as TVM's analyzer does; a split that does not divide
the extent guards its blocks with a predicate. `compute_inline` /
`reverse_compute_inline` remove a block and its `T.sblock_alloc_buffer`, and recompute
the reads of the block that absorbed it (loads in body order, one region per buffer).
Each primitive checks what it needs and raises `ScheduleError` otherwise, so a rule can try
one and move on.

`trace` lists the calls in TVM's Python (`sch.split(loop=..., factors=[None, 8])`, loops
found again through `sch.get_loops(sch.get_sblock(name))[k]`): replayed by TVM's own
Schedule, it must print the same function (tests/test_default_cpu_schedule.py).
"""

from __future__ import annotations

import math

from irtool.ir import tir
from irtool.ir.tir_visitor import StmtExprMutator, StmtExprVisitor, substitute

from . import tir_build as tb
from .index_simplify import simplify_index

_TRUE = tir.IntImm(1, "bool")


class ScheduleError(ValueError):
    """A primitive does not apply to the given block or loops."""


class Schedule:
    """A PrimFunc being scheduled (see the module docstring)."""

    def __init__(self, func: tir.PrimFunc, func_name: str = "main") -> None:
        self.func = func
        self.func_name = func_name
        self.trace: list[str] = []

    # ------------------------------------------------------------------ lookup
    def blocks(self) -> list[str]:
        """The names of every block but the root, in program order."""
        names: list[str] = []
        for realize, _ in _realizes(self.func.body):
            if realize is not self.func.body:
                names.append(realize.block.name)
        return names

    def get_block(self, name: str) -> tir.SBlock:
        return self._realize(name)[0].block

    def get_loops(self, block: str) -> list[tir.Var]:
        """The loops around `block`, outermost first, up to the block that encloses it."""
        _, path = self._realize(block)
        loops: list[tir.Var] = []
        for node in path:
            if isinstance(node, tir.SBlock):
                loops = []
            elif isinstance(node, tir.For):
                loops.append(node.loop_var)
        return loops

    def loop(self, var: tir.Var) -> tir.For:
        for node in _stmts(self.func.body):
            if isinstance(node, tir.For) and node.loop_var is var:
                return node
        raise ScheduleError(f"no loop `{var.name}`")

    def _realize(self, name: str) -> tuple[tir.SBlockRealize, list]:
        found = [(r, path) for r, path in _realizes(self.func.body) if r.block.name == name]
        if len(found) != 1:
            raise ScheduleError(f"{'no' if not found else 'more than one'} block named {name!r}")
        return found[0]

    def _loop_ref(self, var: tir.Var) -> str:
        """TVM Python that finds loop `var` again: through the first block below it."""
        realize = next(r for r, _ in _realizes(self.loop(var).body))
        k = self.get_loops(realize.block.name).index(var)
        return f"sch.get_loops(sch.get_sblock({realize.block.name!r}))[{k}]"

    def _bounds(self) -> dict:
        return {n.loop_var: (0, n.extent.value - 1) for n in _stmts(self.func.body)
                if isinstance(n, tir.For) and isinstance(n.extent, tir.IntImm) and isinstance(n.min, tir.IntImm)
                and n.min.value == 0 and n.extent.value > 0}

    def _replace(self, mapping: dict) -> None:
        self.func = self.func.replace(body=_Replace(mapping).mutate(self.func.body))

    # ------------------------------------------------------------------ loop transformations
    def split(self, var: tir.Var, factors: list[int | None]) -> list[tir.Var]:
        """Split a loop into nested loops of the given extents (one may be None: inferred)."""
        node = self._serial_loop(var)
        if factors.count(None) > 1 or any(f is not None and f < 1 for f in factors):
            raise ScheduleError("split factors: positive integers, at most one None")
        known = math.prod(f for f in factors if f is not None)
        extent = node.extent
        if None in factors:
            if isinstance(extent, tir.IntImm):
                sizes = [tb.const(f if f is not None else -(-extent.value // known), extent.dtype) for f in factors]
            else:
                sizes = [tb.const(f, extent.dtype) if f is not None else
                         simplify_index(tb.floordiv(tb.add(extent, tb.const(known - 1, extent.dtype)),
                                                    tb.const(known, extent.dtype)), {})
                         for f in factors]
        elif isinstance(extent, tir.IntImm):
            sizes = [tb.const(f, extent.dtype) for f in factors]
        else:
            raise ScheduleError("split of a symbolic extent needs a None factor")
        ref = self._loop_ref(var)
        new_vars = [tir.Var(f"{var.name}_{k}", var.dtype) for k in range(len(factors))]
        if all(isinstance(size, tir.IntImm) for size in sizes[1:]):
            # the simplifier's form: each loop times the product of the extents inside it
            fused = None
            for k, v in enumerate(new_vars):
                scale = math.prod(size.value for size in sizes[k + 1:])
                term = v if scale == 1 else tb.mul(v, tb.const(scale, var.dtype))
                fused = term if fused is None else tb.add(fused, term)
        else:
            fused = new_vars[0]
            for v, size in zip(new_vars[1:], sizes[1:]):
                fused = tb.add(tb.mul(fused, size), v)
        exact = isinstance(extent, tir.IntImm) and all(isinstance(s, tir.IntImm) for s in sizes) and \
            math.prod(s.value for s in sizes) == extent.value
        guard = None if exact else tir.BinOp("lt", fused, extent)
        body = node.body
        for v, size in reversed(list(zip(new_vars, sizes))):
            body = tir.For(v, tb.const(0, var.dtype), size, "serial", body)
        self._replace({node: body})
        self._rebind(new_vars[0], {var: fused}, guard)
        shown = ", ".join("None" if f is None else str(f) for f in factors)
        self.trace.append(f"sch.split(loop={ref}, factors=[{shown}], preserve_unit_iters=True, "
                          f"disable_predication=False)")
        return new_vars

    def fuse(self, *vars_: tir.Var) -> tir.Var:
        """Fuse a perfectly nested chain of loops, outermost first, into one loop."""
        if not vars_:
            raise ScheduleError("fuse of no loops")
        nodes = [self._serial_loop(v) for v in vars_]
        for outer, inner in zip(nodes, nodes[1:]):
            if outer.body is not inner:
                raise ScheduleError(f"`{outer.loop_var.name}` and `{inner.loop_var.name}` are not perfectly nested")
        refs = [self._loop_ref(v) for v in vars_]
        dtype = vars_[0].dtype
        fused = tir.Var("_".join(v.name for v in vars_) + "_fused", dtype)
        extents = [n.extent for n in nodes]
        values = {}
        for k, v in enumerate(vars_):
            value: tir.PrimExpr = fused  # unfolded: `f // 1` of a unit loop simplifies to 0, not f
            if k > 0:  # what the outer loops do not hold
                value = tir.BinOp("floormod", value, _product(extents[k:], dtype))
            if k < len(vars_) - 1:  # over what the inner loops hold
                value = tir.BinOp("floordiv", value, _product(extents[k + 1:], dtype))
            values[v] = value
        loop = tir.For(fused, tb.const(0, dtype), _product(extents, dtype), "serial", nodes[-1].body)
        self._replace({nodes[0]: loop})
        self._rebind(fused, values, None)
        self.trace.append(f"sch.fuse({', '.join(refs)}, preserve_unit_iters=True)")
        return fused

    def reorder(self, *vars_: tir.Var) -> None:
        """Put the given loops of one perfectly nested chain in this order (others stay put)."""
        nodes = {v: self.loop(v) for v in vars_}
        depth = {v: sum(1 for other in nodes.values() if _contains(other.body, nodes[v])) for v in vars_}
        top = min(vars_, key=lambda v: depth[v])
        bottom = nodes[max(vars_, key=lambda v: depth[v])]
        chain = [nodes[top]]
        while chain[-1] is not bottom:
            nxt = chain[-1].body
            if not isinstance(nxt, tir.For):
                raise ScheduleError("reorder: the loops are not a perfectly nested chain")
            chain.append(nxt)
        if {n.loop_var for n in chain} < set(vars_) or len(set(vars_)) != len(vars_):
            raise ScheduleError("reorder: the loops are not one chain")
        refs = [self._loop_ref(v) for v in vars_]
        slots = [k for k, n in enumerate(chain) if n.loop_var in nodes]
        order = list(chain)
        for slot, v in zip(slots, vars_):
            order[slot] = nodes[v]
        body = chain[-1].body
        for n in reversed(order):
            body = n.replace(body=body)
        self._replace({chain[0]: body})
        self.trace.append(f"sch.reorder({', '.join(refs)})")

    def parallel(self, var: tir.Var) -> None:
        self._annotate_kind(var, "parallel")

    def vectorize(self, var: tir.Var) -> None:
        self._annotate_kind(var, "vectorized")

    def unroll(self, var: tir.Var) -> None:
        self._annotate_kind(var, "unroll")

    def _annotate_kind(self, var: tir.Var, kind: str) -> None:
        node = self.loop(var)
        if kind in ("parallel", "vectorized"):
            for realize, _ in _realizes(node.body):
                if not _compact_dataflow(realize.block):
                    raise ScheduleError(f"block {realize.block.name!r} reads what it writes without an init")
                for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                    if iv.iter_type != tir.DATA_PAR and _uses(value, var):
                        raise ScheduleError(f"`{var.name}` is bound to reduction iterator `{iv.var.name}`")
        ref = self._loop_ref(var)
        self._replace({node: node.replace(kind=kind)})
        self.trace.append(f"sch.{ {'parallel': 'parallel', 'vectorized': 'vectorize', 'unroll': 'unroll'}[kind]}"
                          f"(loop={ref})")

    def _serial_loop(self, var: tir.Var) -> tir.For:
        node = self.loop(var)
        if node.kind != "serial" or not (isinstance(node.min, tir.IntImm) and node.min.value == 0):
            raise ScheduleError(f"`{var.name}` is not a serial loop starting at 0")
        return node

    def _rebind(self, loop_var: tir.Var, values: dict, guard) -> None:
        """Substitute `values` in the bindings and predicates of the blocks under `loop_var`
        (simplified with the loop bounds), and add `guard` to their predicates."""
        bounds = self._bounds()
        node = self.loop(loop_var)
        mapping = {}
        for realize, path in _realizes(node.body):
            if any(isinstance(p, tir.SBlock) for p in path):
                continue  # inside a nested block: its bindings do not see these loops
            iter_values = [simplify_index(substitute(v, values), bounds) for v in realize.iter_values]
            predicate = simplify_index(substitute(realize.predicate, values), bounds)
            if guard is not None:
                g = simplify_index(guard, bounds)
                predicate = g if _is_true(predicate) else predicate if _is_true(g) else tir.BinOp("and", predicate, g)
            mapping[realize] = realize.replace(iter_values=tuple(iter_values), predicate=predicate)
        self._replace(mapping)

    # ------------------------------------------------------------------ inlining
    def compute_inline(self, name: str) -> None:
        """Replace every load of the block's buffer by the value the block stores."""
        realize, path = self._realize(name)
        store, owner = self._inlinable_store(realize, path)
        buf = store.buffer
        readers = [r for r, _ in _realizes(self.func.body) if r is not realize and _reads_buffer(r.block, buf)]
        if not readers:
            raise ScheduleError(f"block {name!r} has no consumer to inline into")
        position = {idx: k for k, idx in enumerate(store.indices)}

        def inline(load: tir.BufferLoad) -> tir.PrimExpr:
            return substitute(store.value, {v: load.indices[k] for v, k in position.items()})

        mapping = {r.block: _with_reads(_LoadReplacer(buf, inline).mutate(r.block)) for r in readers}
        mapping[_nest_top(realize, path)] = None
        mapping[owner] = owner.replace(alloc_buffers=tuple(b for b in owner.alloc_buffers if b is not buf))
        self._replace_nested(mapping, owner)
        self.trace.append(f"sch.compute_inline(block=sch.get_sblock({name!r}))")

    def reverse_compute_inline(self, name: str) -> None:
        """Fold a consumer into its only producer: the producer stores what the consumer did."""
        realize, path = self._realize(name)
        block = realize.block
        if any(iv.iter_type != tir.DATA_PAR for iv in block.iter_vars) or block.init is not None \
                or not isinstance(block.body, tir.BufferStore) or not _is_true(realize.predicate):
            raise ScheduleError(f"block {name!r} is not a spatial block with one store")
        loads = _loads(block.body.value)
        alloc = {id(b) for r, _ in _realizes(self.func.body) for b in r.block.alloc_buffers}
        sources = {id(ld.buffer): ld.buffer for ld in loads if id(ld.buffer) in alloc}
        if len(sources) != 1:
            raise ScheduleError(f"block {name!r} does not read exactly one intermediate buffer")
        buf = next(iter(sources.values()))
        index_sets = {tuple(id(i) for i in ld.indices) for ld in loads if ld.buffer is buf}
        iter_vars = [iv.var for iv in block.iter_vars]
        indices = next(ld.indices for ld in loads if ld.buffer is buf)
        if len(index_sets) != 1 or len(indices) != len(iter_vars) or set(indices) != set(iter_vars):
            raise ScheduleError(f"block {name!r} does not read its producer once by its own iterators")
        writers = [(r, p) for r, p in _realizes(self.func.body) if _writes_buffer(r.block, buf)]
        if len(writers) != 1:
            raise ScheduleError(f"the buffer {buf.name} has {len(writers)} producers")
        producer, ppath = writers[0]
        pstore, owner = self._inlinable_store(producer, ppath)
        if any(_reads_buffer(r.block, buf) for r, _ in _realizes(self.func.body)
               if r is not realize and r is not producer):
            raise ScheduleError(f"the buffer {buf.name} has another consumer")
        to_producer = {v: pstore.indices[k] for k, v in enumerate(indices)}
        value = _LoadReplacer(buf, lambda _load: pstore.value).mutate(block.body.value)
        value = substitute(value, to_producer)
        out = block.body.buffer
        new_store = tir.BufferStore(out, value, [substitute(i, to_producer) for i in block.body.indices])
        pblock = producer.block.replace(body=new_store, writes=(_point_region(out, new_store.indices),))
        mapping = {producer.block: _with_reads(pblock), _nest_top(realize, path): None,
                   owner: owner.replace(alloc_buffers=tuple(b for b in owner.alloc_buffers if b is not buf))}
        self._replace_nested(mapping, owner)
        self.trace.append(f"sch.reverse_compute_inline(block=sch.get_sblock({name!r}))")

    def _inlinable_store(self, realize: tir.SBlockRealize, path: list) -> tuple[tir.BufferStore, tir.SBlock]:
        """The block's single store to an intermediate buffer, and the block allocating it."""
        block = realize.block
        name = block.name
        if any(iv.iter_type != tir.DATA_PAR for iv in block.iter_vars) or block.init is not None:
            raise ScheduleError(f"block {name!r} is not a spatial block")
        if not isinstance(block.body, tir.BufferStore) or block.alloc_buffers or block.match_buffers:
            raise ScheduleError(f"block {name!r} is not a single store")
        store = block.body
        if not _is_true(realize.predicate):
            raise ScheduleError(f"block {name!r} has a predicate")
        iter_vars = [iv.var for iv in block.iter_vars]
        if not all(isinstance(i, tir.Var) for i in store.indices) or len(set(store.indices)) != len(store.indices) \
                or set(store.indices) != set(iter_vars):
            raise ScheduleError(f"block {name!r} does not store at its own iterators")
        if _reads_buffer(block, store.buffer):
            raise ScheduleError(f"block {name!r} reads what it writes")
        owner = next((p for p in reversed(path) if isinstance(p, tir.SBlock) and store.buffer in p.alloc_buffers),
                     None)
        if owner is None:
            raise ScheduleError(f"block {name!r} writes {store.buffer.name}, not an intermediate buffer")
        writers = [r for r, _ in _realizes(self.func.body) if _writes_buffer(r.block, store.buffer)]
        if len(writers) != 1:
            raise ScheduleError(f"the buffer {store.buffer.name} has {len(writers)} producers")
        return store, owner

    def _replace_nested(self, mapping: dict, owner: tir.SBlock) -> None:
        """Replace nodes that may sit inside `owner` (itself replaced): inner nodes first."""
        new_owner = mapping.pop(owner)
        inner = _Replace(mapping).mutate(owner.body)
        new_owner = new_owner.replace(body=inner)
        self._replace({owner: new_owner})


# ---------------------------------------------------------------------- tree helpers


class _Replace(StmtExprMutator):
    """Replace nodes by identity; None removes a statement from its sequence."""

    def __init__(self, mapping: dict) -> None:
        super().__init__()
        self.mapping = mapping

    def pre_mutate(self, node):
        if node in self.mapping:
            new = self.mapping[node]
            return tir.SeqStmt(()) if new is None else new
        return None

    def mutate_SeqStmt(self, old, new):
        return tir.seq(s for s in new.seq if not (isinstance(s, tir.SeqStmt) and not s.seq)) \
            if any(isinstance(s, tir.SeqStmt) for s in new.seq) else new


class _LoadReplacer(StmtExprMutator):
    def __init__(self, buf: tir.Buffer, replace) -> None:
        super().__init__()
        self.buf = buf
        self.replace = replace

    def mutate_BufferLoad(self, old, new):
        return self.replace(new) if new.buffer is self.buf else new


def _stmts(root):
    """Every statement under `root` (pre-order)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_stmt_children(node)))


def _stmt_children(node) -> list:
    if isinstance(node, tir.SeqStmt):
        return list(node.seq)
    if isinstance(node, tir.SBlockRealize):
        return [node.block]
    if isinstance(node, tir.SBlock):
        return [node.body] if node.init is None else [node.init, node.body]
    if isinstance(node, tir.IfThenElse):
        return [node.then_case] + ([node.else_case] if node.else_case is not None else [])
    if isinstance(node, (tir.For, tir.LetStmt, tir.AttrStmt, tir.AssertStmt, tir.Allocate, tir.DeclBuffer,
                         tir.While)):
        return [node.body]
    return []


def _realizes(root) -> list[tuple[tir.SBlockRealize, list]]:
    """Every SBlockRealize under `root` with the statements above it (root first)."""
    out = []
    stack = [(root, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, tir.SBlockRealize):
            out.append((node, path))
        for child in reversed(_stmt_children(node)):
            stack.append((child, path + [node]))
    return out


def _nest_top(realize: tir.SBlockRealize, path: list):
    """The outermost loop whose only content is `realize` (or `realize` itself)."""
    top = realize
    for node in reversed(path):
        if isinstance(node, tir.For) and node.body is top:
            top = node
        else:
            break
    return top


def _contains(root, target) -> bool:
    return any(n is target for n in _stmts(root))


def _uses(e, var) -> bool:
    found = []

    class V(StmtExprVisitor):
        def visit_Var(self, v):
            if v is var:
                found.append(v)

    V().visit(e)
    return bool(found)


def _loads(e) -> list[tir.BufferLoad]:
    """The loads in `e`, in visiting order, not looking into nested blocks."""
    out: list[tir.BufferLoad] = []

    class V(StmtExprVisitor):
        def visit_BufferLoad(self, node):
            out.append(node)

        def visit_SBlockRealize(self, node):
            return False

    V().visit(e)
    return out


def _own_stores(block: tir.SBlock) -> list[tir.BufferStore]:
    out: list[tir.BufferStore] = []

    class V(StmtExprVisitor):
        def visit_BufferStore(self, node):
            out.append(node)

        def visit_SBlockRealize(self, node):
            return False

    V().visit(block.body)
    return out


def _reads_buffer(block: tir.SBlock, buf: tir.Buffer) -> bool:
    return any(ld.buffer is buf for ld in _loads(block.body)) or \
        (block.init is not None and any(ld.buffer is buf for ld in _loads(block.init)))


def _writes_buffer(block: tir.SBlock, buf: tir.Buffer) -> bool:
    return any(st.buffer is buf for st in _own_stores(block))


def _compact_dataflow(block: tir.SBlock) -> bool:
    """TVM's local complete / reduction block: a block without init reads nothing it writes."""
    written = {st.buffer for st in _own_stores(block)}
    return block.init is not None or not any(ld.buffer in written for ld in _loads(block.body))


def _point_region(buf: tir.Buffer, indices) -> tir.BufferRegion:
    return tir.BufferRegion(buf, [tir.Range(i, tir.const(1, i.dtype)) for i in indices])


def _with_reads(block: tir.SBlock) -> tir.SBlock:
    """`block` with its reads recomputed from its body: buffers in order of first load; one
    region per buffer (a point, or per dimension the span of constant offsets, else all)."""
    accesses: dict = {}
    loads = _loads(block.init) if block.init is not None else []
    for ld in _inner_first(loads + _loads(block.body)):
        accesses.setdefault(ld.buffer, []).append(ld.indices)
    writes = {r.buffer for r in block.writes}
    regions = []
    for buf, index_lists in accesses.items():
        if buf in writes and block.init is not None:
            continue
        regions.append(_region(buf, index_lists))
    return block.replace(reads=tuple(regions))


def _inner_first(loads: list) -> list:
    """Loads with those nested in another's indices first (`i[..]` before `x[.., i[..], ..]`),
    the order of TVM's regions after compute_inline."""
    out, seen = [], set()
    for ld in loads:
        if id(ld) in seen:
            continue
        for i in ld.indices:
            for inner in _loads(i):
                if id(inner) not in seen:
                    seen.add(id(inner))
                    out.append(inner)
        if id(ld) not in seen:
            seen.add(id(ld))
            out.append(ld)
    return out


def _region(buf: tir.Buffer, index_lists) -> tir.BufferRegion:
    ranges = []
    for dim, indices in enumerate(zip(*index_lists)):
        first = indices[0]
        if all(_same_expr(i, first) for i in indices):
            ranges.append(tir.Range(first, tir.const(1, first.dtype)))
            continue
        offsets = [_offset(i, first) for i in indices]
        if all(o is not None for o in offsets):
            lo, hi = min(offsets), max(offsets)
            ranges.append(tir.Range(tb.add(first, tb.const(lo, first.dtype)) if lo else first,
                                    tb.const(hi - lo + 1, first.dtype)))
        else:
            extent = buf.shape[dim]
            ranges.append(tir.Range(tb.const(0, extent.dtype), extent))
    return tir.BufferRegion(buf, ranges)


def _offset(e, base) -> int | None:
    if _same_expr(e, base):
        return 0
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub") and isinstance(e.b, tir.IntImm) and _same_expr(e.a, base):
        return e.b.value if e.op == "add" else -e.b.value
    return None


def _same_expr(a, b) -> bool:
    from irtool.ir.structural import structural_equal
    return a is b or structural_equal(a, b, map_free_vars=False)


def _product(extents, dtype: str) -> tir.PrimExpr:
    out = tb.const(1, dtype)
    for e in extents:
        out = tb.mul(out, e)
    return out


def _is_true(e) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 1 and e.dtype == "bool"
