"""Register tiles for stencils: depthwise convolutions and pooling (default-cpu-schedule's step
for `C[.., y, x] += P[.., y * sy + ky(r), x * sx + kx(r)] * W[.., r]`, a per-channel weight,
and for `C[.., y, x] = max(C[.., y, x], P[.., y * sy + ky(r), x * sx + kx(r)])` (or `min`, or a
sum without weight: average pooling, divided in its consumer)).

Each task (one channel of one image) copies its padded input plane into a local buffer once,
with the padding producer (`pad_temp`) computed on the way, so the taps read it without
conditions; a strided stencil's plane is split into `sx` column phases, so every tap reads
whole contiguous vectors. The outputs are computed R rows by V vectors at a time (R * V
independent accumulators hide the multiply-add's latency), over the taps in the block's own
order, and stored once through the fused elementwise consumer (bias, clip): neither the
padded input nor the convolution's result is ever written to memory.

    for n_c in T.parallel(N * C):                          # one plane per task
        plane[ph, yy, xh] = P(n, c, yy, xh * sx + ph)      # zero past P's columns
        for y_0, x_0:                                      # R rows x V vectors
            acc[R, V * L] = init
            for <taps, in order> (unrolled):
                for ri, vi (unrolled):
                    acc[ri, vi*L:(vi+1)*L] += plane[kx % sx, y * sy + ky, x + kx // sx : +L] * W[c, taps]
            C[n, c, y, x] = epilogue(acc[ri, l])           # lanes past the row's end not stored

Rows past the end are clamped to the last one (computed and stored twice, the same value).
Each output keeps its order of accumulation, so without `fp_contract` the results are
bit-identical to the TIR interpreter's.
"""

from __future__ import annotations

from irtool.codegen import tir_build as tb
from irtool.codegen.llvm_codegen import FP_CONTRACT_ATTR
from irtool.codegen.schedule import Schedule, _is_true, _LoadReplacer, _loads, _realizes, _uses
from irtool.codegen.simplify import simplify
from irtool.ir import tir
from irtool.ir.tir_visitor import StmtExprMutator, substitute

from ._contraction_tiles import (
    TileConfig,
    _absorbable_consumer,
    _at_root,
    _const,
    _extent_values,
    _outer_loops,
    _replace_nests,
    _whole_regions,
)
from .default_cpu_schedule import dtype_bits

# independent accumulators a tile keeps (about FMA latency x FMA units, with room to spare)
TARGET_ACCUMULATORS = 8


def tile_stencil(sch: Schedule, name: str, config: TileConfig) -> bool:
    """Rewrite stencil block `name` of `sch` (a depthwise conv, a pooling window) into the tile of
    the module docstring.
    False (nothing changed) when its form does not fit."""
    realize, path = sch._realize(name)
    block = realize.block
    loops = sch.get_loops(name)
    extents = _extent_values(sch, loops)
    store = block.body
    if extents is None or not isinstance(store, tir.BufferStore) or not isinstance(block.init, tir.BufferStore) \
            or not _is_true(realize.predicate) or _loads(block.init.value) or not _at_root(sch, realize, path):
        return False
    out = store.buffer
    dtype = out.dtype
    if dtype not in ("float32", "float64") or list(realize.iter_values) != loops:
        return False
    ivars = [iv.var for iv in block.iter_vars]
    extent_of = dict(zip(ivars, extents))
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == tir.DATA_PAR]
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == tir.COMM_REDUCE]
    if len(spatial) < 2 or not reduce or len(spatial) + len(reduce) != len(ivars) or list(store.indices) != spatial:
        return False
    value = store.value
    y, x = spatial[-2], spatial[-1]
    if not (isinstance(value, tir.BinOp) and value.op in ("add", "max", "min") and isinstance(value.a, tir.BufferLoad)
            and value.a.buffer is out and list(value.a.indices) == spatial):
        return False
    combine, term = value.op, value.b
    if combine == "add" and isinstance(term, tir.BinOp) and term.op == "mul" and term.dtype == dtype:
        data, weight = (term.a, term.b) if _uses(term.a, x) else (term.b, term.a)  # depthwise: data x weight
    else:
        data, weight = term, None  # pooling: max / sum of the window
    if not isinstance(data, tir.BufferLoad) or data.buffer.dtype != dtype or len(data.indices) < 2:
        return False
    if weight is not None and (not isinstance(weight, tir.BufferLoad) or weight.buffer.dtype != dtype
                               or _uses(weight, x) or _uses(weight, y)):
        return False
    *prefix, e_y, e_x = data.indices
    if any(_uses(i, x) or _uses(i, y) for i in prefix) or _uses(e_y, x) or _uses(e_x, y):
        return False
    # the plane is one per task: the data's leading indices read no reduction of more than one step
    if any(_uses(i, r) and extent_of[r] != 1 for i in prefix for r in reduce):
        return False
    sy, sx = _scale(e_y, y, ivars), _scale(e_x, x, ivars)
    if not sy or not sx:
        return False
    plane_rows, plane_cols = data.buffer.shape[-2:]
    if not all(isinstance(d, tir.IntImm) for d in (plane_rows, plane_cols)):
        return False
    oh, ow = extent_of[y], extent_of[x]
    col_offsets = _tap_values(substitute(e_x, {x: _const(0, x.dtype)}), reduce, extent_of)
    if col_offsets is None or min(col_offsets) < 0:
        return False

    lanes_max = max(config.vector_bits // dtype_bits(dtype), 1)
    vectors = -(-ow // lanes_max)
    lanes = next(w for w in (lanes_max // 4, lanes_max // 2, lanes_max) if w >= 4 and -(-ow // w) == vectors) \
        if lanes_max >= 16 else lanes_max
    registers = 32 if config.vector_bits >= 512 else 16
    most = max(1, registers // 2 - 2)
    col_tiles = -(-vectors // most)
    vectors = -(-vectors // col_tiles)
    rows = _choose_rows(oh, vectors)
    row_tiles = -(-oh // rows)
    width = vectors * lanes
    plane_w = col_tiles * width + max(col_offsets) // sx

    idx = x.dtype
    outer = [s for s in spatial if s is not y and s is not x]
    outer_vars = [tir.Var(s.name, s.dtype) for s in outer]
    outer_map = dict(zip(outer, outer_vars))
    red_vars = [tir.Var(r.name, r.dtype) for r in reduce]
    red_map = {r: rv if extent_of[r] > 1 else _const(0, r.dtype) for r, rv in zip(reduce, red_vars)}
    y_o, x_o = tir.Var(f"{y.name}_0", idx), tir.Var(f"{x.name}_0", idx)
    ri, vi, lane = tir.Var(f"{y.name}_1", idx), tir.Var(f"{x.name}_1", idx), tir.Var(f"{x.name}_l", idx)
    yy, xh, ph = tir.Var("yy", idx), tir.Var("xh", idx), tir.Var("ph", idx)

    # ---- the plane: P's producer computed in place when this tile is its only reader
    plane_shape = ([_const(sx, "int64")] if sx > 1 else []) + [_const(plane_rows.value, "int64"),
                                                               _const(plane_w, "int64")]
    plane = tir.Buffer(f"{data.buffer.name}_plane", plane_shape, dtype, scope="local")
    lead = [simplify(substitute(i, {**outer_map, **{r: _const(0, r.dtype) for r in reduce}})) for i in prefix]
    column = tir.BinOp("add", tir.BinOp("mul", xh, _const(sx, idx)), ph) if sx > 1 else xh
    producer = _inlinable_producer(sch, block, data.buffer)
    box = _padding_box(producer) if producer is not None else None
    if box is not None:
        fill = _box_fill(plane, producer, box, lead, plane_rows.value, plane_w, sx, idx)
    else:
        if producer is not None:
            at = dict(zip([iv.var for iv in producer.block.iter_vars], lead + [yy, column]))
            fill_value = substitute(producer.block.body.value, at)
        else:
            fill_value = tir.BufferLoad(data.buffer, lead + [yy, column])
        if (plane_w - 1) * sx + sx - 1 >= plane_cols.value:
            fill_value = tb.if_then_else(tir.BinOp("lt", column, _const(plane_cols.value, idx)), fill_value,
                                         tir.FloatImm(0.0, dtype))
        fill = tir.BufferStore(plane, fill_value, ([ph] if sx > 1 else []) + [yy, xh])
        fill = tir.For(xh, _const(0, idx), _const(plane_w, idx), "vectorized", fill)
        fill = tir.For(yy, _const(0, idx), plane_rows, "serial", fill)
        if sx > 1:
            fill = tir.For(ph, _const(0, idx), _const(sx, idx), "serial", fill)

    # ---- the tile: R rows x V vectors
    def row_of(r: tir.PrimExpr) -> tir.PrimExpr:
        e = tir.BinOp("add", tir.BinOp("mul", y_o, _const(rows, idx)), r) if row_tiles > 1 else r
        return tir.BinOp("min", e, _const(oh - 1, idx)) if row_tiles * rows != oh else e

    def col_of(v: tir.PrimExpr) -> tir.PrimExpr:
        first = tir.BinOp("mul", v, _const(lanes, idx))
        return tir.BinOp("add", tir.BinOp("mul", x_o, _const(width, idx)), first) if col_tiles > 1 else first

    lanes_base = tir.BinOp("mul", vi, _const(lanes, idx))
    acc = tir.Buffer(f"{out.name}_local", (_const(rows, "int64"), _const(width, "int64")), dtype, scope="local")
    acc_at = [ri, tir.Ramp(lanes_base, _const(1, idx), lanes)]
    offset = simplify(substitute(e_x, {x: _const(0, idx), **red_map}))
    plane_at = ([tir.BinOp("floormod", offset, _const(sx, idx))] if sx > 1 else []) + [
        simplify(substitute(e_y, {y: row_of(ri), **red_map})),
        tir.Ramp(tir.BinOp("add", col_of(vi), tir.BinOp("floordiv", offset, _const(sx, idx)) if sx > 1 else offset),
                 _const(1, idx), lanes)]
    tap = tir.BufferLoad(plane, plane_at)
    if weight is not None:
        tap = tir.BinOp("mul", tap, tir.Broadcast(substitute(weight, {**outer_map, **red_map}), lanes))
    update = tir.BufferStore(acc, tir.BinOp(combine, tir.BufferLoad(acc, acc_at), tap), acc_at)
    update = _unrolled(update, ri, rows, vi, vectors)
    for rv, r in reversed(list(zip(red_vars, reduce))):
        if extent_of[r] > 1:
            update = tir.For(rv, _const(0, rv.dtype), _const(extent_of[r], rv.dtype), "unroll", update)
    init = _unrolled(tir.BufferStore(acc, tir.Broadcast(block.init.value, lanes), acc_at), ri, rows, vi, vectors)

    # ---- write-back, through the elementwise consumer when it can be absorbed
    consumer = _absorbable_consumer(sch, block, out)
    column_at = tir.BinOp("add", col_of(vi), lane)
    out_map = {**outer_map, y: row_of(ri), x: column_at}
    result = tir.BufferLoad(acc, [ri, tir.BinOp("add", lanes_base, lane)])
    if consumer is not None:
        cons_store = consumer.block.body
        cmap = {iv.var: out_map[s] for iv, s in zip(consumer.block.iter_vars, spatial)}
        write = tir.BufferStore(cons_store.buffer, substitute(_LoadReplacer(out, lambda _: result).mutate(
            cons_store.value), cmap), [cmap[i] for i in cons_store.indices])
        dest = cons_store.buffer
    else:
        write, dest = tir.BufferStore(out, result, [out_map[s] for s in spatial]), out
    if col_tiles * width != ow:
        write = tir.IfThenElse(tir.BinOp("lt", column_at, _const(ow, idx)), write)
    write = tir.For(lane, _const(0, idx), _const(lanes, idx), "vectorized", write)
    write_back = _unrolled(write, ri, rows, vi, vectors)

    body = tir.SeqStmt([init, update, write_back])
    annotations = ((FP_CONTRACT_ATTR, True),) if config.fp_contract and weight is not None else ()
    tile_reads = [ld.buffer for ld in _loads(tir.SeqStmt([update, write_back])) if ld.buffer not in (acc, plane)]
    tile = tir.SBlockRealize([], tir.IntImm(1, "bool"), tir.SBlock(
        f"{block.name}_tile", [], _whole_regions([plane] + tile_reads), _whole_regions([dest]), body,
        alloc_buffers=[acc], annotations=annotations))
    if col_tiles > 1:
        tile = tir.For(x_o, _const(0, idx), _const(col_tiles, idx), "serial", tile)
    if row_tiles > 1:
        tile = tir.For(y_o, _const(0, idx), _const(row_tiles, idx), "serial", tile)
    fill_reads = [ld.buffer for ld in _loads(fill)]
    task = tir.SBlockRealize([], tir.IntImm(1, "bool"), tir.SBlock(
        f"{block.name}_plane", [], _whole_regions(fill_reads + [ld.buffer for ld in _loads(tile)
                                                                if ld.buffer is not plane]),
        _whole_regions([dest]), tir.SeqStmt((list(fill.seq) if isinstance(fill, tir.SeqStmt) else [fill]) + [tile]),
        alloc_buffers=[plane]))
    nest = _FoldIndices().mutate(_outer_loops(task, outer_vars, [extent_of[s] for s in outer], config.parallel_ok))
    drops = [c for c in (consumer, producer) if c is not None]
    dropped = ([out] if consumer is not None else []) + ([data.buffer] if producer is not None else [])
    _replace_nests(sch, realize, path, nest, drops, dropped)
    return True


class _FoldIndices(StmtExprMutator):
    """Integer arithmetic folded (`0 * 16 + l` -> `l`) once the tile's loops of one iteration
    are substituted away."""

    def mutate_BinOp(self, old, new):
        return simplify(new) if new.dtype.startswith("int") else new


def _padding_box(producer: tir.SBlockRealize):
    """(value inside, value outside, rows [lo, hi), columns [lo, hi)) when the producer is
    `P[.., i, j] = if_then_else(lo_i <= i and i < hi_i and lo_j <= j and j < hi_j, inside, c)`
    with constant bounds on its last two iterators only (a padding): the plane is then filled
    with c and the box copied without conditions. None for any other form."""
    value = producer.block.body.value
    if not (isinstance(value, tir.Call) and value.op.endswith(".if_then_else") and len(value.args) == 3
            and isinstance(value.args[2], tir.FloatImm)):
        return None
    cond, inside, outside = value.args
    ivs = [iv.var for iv in producer.block.iter_vars]
    row_var, col_var = ivs[-2], ivs[-1]
    bounds = {row_var: [None, None], col_var: [None, None]}
    conjuncts, stack = [], [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, tir.BinOp) and c.op == "and":
            stack += [c.a, c.b]
        else:
            conjuncts.append(c)
    for c in conjuncts:
        if not (isinstance(c, tir.BinOp) and c.op in ("lt", "le")):
            return None
        if isinstance(c.a, tir.IntImm) and c.b in bounds:  # lo <= v, lo < v
            bounds[c.b][0] = c.a.value + (c.op == "lt")
        elif isinstance(c.b, tir.IntImm) and c.a in bounds:  # v < hi, v <= hi
            bounds[c.a][1] = c.b.value + (c.op == "le")
        else:
            return None
    extents = [iv.dom.extent for iv in producer.block.iter_vars[-2:]]
    if not all(isinstance(e, tir.IntImm) for e in extents):
        return None
    (rlo, rhi), (clo, chi) = bounds[row_var], bounds[col_var]
    rows = (rlo or 0, extents[0].value if rhi is None else min(rhi, extents[0].value))
    cols = (clo or 0, extents[1].value if chi is None else min(chi, extents[1].value))
    return inside, outside, rows, cols


def _box_fill(plane: tir.Buffer, producer: tir.SBlockRealize, box, lead: list, rows: int, width: int, sx: int,
              idx: str):
    """The plane set to the padding value, then the box copied (per column phase: whole rows
    of the phase, a strided read of the input)."""
    inside, outside, (rlo, rhi), (clo, chi) = box
    ivs = [iv.var for iv in producer.block.iter_vars]
    yy, xh = tir.Var("yy", idx), tir.Var("xh", idx)
    ph = tir.Var("ph", idx)
    zero = tir.BufferStore(plane, outside, ([ph] if sx > 1 else []) + [yy, xh])
    zero = tir.For(yy, _const(0, idx), _const(rows, idx), "serial",
                   tir.For(xh, _const(0, idx), _const(width, idx), "vectorized", zero))
    stmts = [tir.For(ph, _const(0, idx), _const(sx, idx), "serial", zero) if sx > 1 else zero]
    for p in range(sx):
        yy, xh = tir.Var("yy", idx), tir.Var("xh", idx)  # (a variable is bound by one loop only)
        lo = max(0, -(-(clo - p) // sx))
        hi = min(width, -(-(chi - p) // sx))
        if hi <= lo or rhi <= rlo:
            continue
        row, col = tir.BinOp("add", yy, _const(rlo, idx)), tir.BinOp("add", xh, _const(lo, idx))
        column = tir.BinOp("add", tir.BinOp("mul", col, _const(sx, idx)), _const(p, idx)) if sx > 1 else col
        value = substitute(inside, dict(zip(ivs, lead + [row, column])))
        copy = tir.BufferStore(plane, value, ([_const(p, idx)] if sx > 1 else []) + [row, col])
        copy = tir.For(xh, _const(0, idx), _const(hi - lo, idx), "vectorized", copy)
        stmts.append(tir.For(yy, _const(0, idx), _const(rhi - rlo, idx), "serial", copy))
    return tir.SeqStmt(stmts)


def _scale(e: tir.PrimExpr, var: tir.Var, ivars: list) -> int | None:
    """The positive constant s with `e = var * s + (terms without var)`, when `e` is affine in
    the block's iterators; None otherwise."""
    zero = {v: _const(0, v.dtype) for v in ivars}

    def at(values: dict) -> int | None:
        folded = simplify(substitute(e, {**zero, **values}))
        return folded.value if isinstance(folded, tir.IntImm) else None

    base, one, three = at({}), at({var: _const(1, var.dtype)}), at({var: _const(3, var.dtype)})
    if None in (base, one, three) or one - base <= 0 or three - base != 3 * (one - base):
        return None
    others = {v: _const(2, v.dtype) for v in ivars if v is not var}
    mixed, alone = at({**others, var: _const(1, var.dtype)}), at(others)
    if mixed is None or alone is None or mixed - alone != one - base:
        return None
    return one - base


def _tap_values(e: tir.PrimExpr, reduce: list, extent_of: dict) -> list[int] | None:
    """`e` (free of the spatial iterators) at every point of the reduction loops."""
    values = [[]]
    for r in reduce:
        values = [v + [k] for v in values for k in range(extent_of[r])]
    out = []
    for point in values:
        folded = simplify(substitute(e, {r: _const(k, r.dtype) for r, k in zip(reduce, point)}))
        if not isinstance(folded, tir.IntImm):
            return None
        out.append(folded.value)
    return out


def _choose_rows(oh: int, vectors: int) -> int:
    """Output rows per tile: the most useful work per step, where a step of fewer than
    TARGET_ACCUMULATORS independent accumulators waits on the multiply-add's latency and
    clamped rows past the end are wasted."""
    want = max(1, TARGET_ACCUMULATORS // vectors)

    def score(rows: int) -> float:
        return oh / (-(-oh // rows) * rows) * min(1.0, rows * vectors / TARGET_ACCUMULATORS)

    return max(range(1, min(want, oh) + 1), key=lambda r: (score(r), r))


def _unrolled(stmt, ri, rows, vi, vectors):
    """`stmt` in unrolled row and vector loops with variables of their own (a variable is bound
    by one loop only); a loop of one iteration is substituted away."""
    idx = ri.dtype
    fresh_ri, fresh_vi = tir.Var(ri.name, idx), tir.Var(vi.name, idx)
    stmt = substitute(stmt, {ri: fresh_ri if rows > 1 else _const(0, idx),
                             vi: fresh_vi if vectors > 1 else _const(0, idx)})
    if vectors > 1:
        stmt = tir.For(fresh_vi, _const(0, idx), _const(vectors, idx), "unroll", stmt)
    if rows > 1:
        stmt = tir.For(fresh_ri, _const(0, idx), _const(rows, idx), "unroll", stmt)
    return stmt


def _inlinable_producer(sch: Schedule, block: tir.SBlock, buf: tir.Buffer) -> tir.SBlockRealize | None:
    """The root-level block computing intermediate `buf` elementwise from parameters (the
    padding), when the stencil is its only reader: the plane computes it instead."""
    root = sch.func.body.block
    if buf not in root.alloc_buffers:
        return None
    params = {b for _, b in sch.func.buffer_map}
    found = None
    for r, p in _realizes(sch.func.body):
        if r is sch.func.body or r.block is block:
            continue
        if any(ld.buffer is buf for ld in _loads(r.block.body)):
            return None  # another reader
        st = r.block.body
        if isinstance(st, tir.BufferStore) and st.buffer is buf:
            ivs = [iv.var for iv in r.block.iter_vars]
            if found is not None or list(st.indices) != ivs or r.block.init is not None or not _at_root(sch, r, p) \
                    or any(iv.iter_type != tir.DATA_PAR for iv in r.block.iter_vars) \
                    or any(ld.buffer not in params for ld in _loads(st.value)):
                return None
            found = r
    return found


__all__ = ["tile_stencil"]
