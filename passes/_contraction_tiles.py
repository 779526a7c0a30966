"""Register tiles for contractions with accumulators in registers and packed constant weights
(default-cpu-schedule's step for `C[..] += A[..] * W[..]`: conv2d, matmul, dense, batch matmul).

A contraction's output is computed one tile at a time: R rows (a spatial index `r` that A
reads and W does not: conv's output columns, matmul's rows) by V vectors of L lanes (a
spatial index `v` that W reads and A does not: conv's output channels, matmul's columns).
The tile accumulates in a local buffer (registers once LLVM has unrolled it) over every
reduction index, in the block's own order, and is written out once, through the fused
elementwise consumer when there is one, so the intermediate is never stored:

    for v_0, <other spatial>, r_0 in T.parallel(...):    # one tile per task
        acc[R, V * L] = init
        for <reduction loops, in order>:
            for ri in T.unroll(R): for vi in T.unroll(V): for li in T.vectorized(L):
                acc[ri, vi*L + li] += A[.., r, ..] * Wp[v_0, .., vi*L + li]
        for ri, li: D[.., v, .., r, ..] = epilogue(acc[ri, li])

W's lanes must be contiguous. When `v` is W's last index they are; otherwise (conv's OIHW
weight, dense's [N, K]) a constant W is packed once at compile time into panels
`Wp[ceil(n / VL), <W's other dims>, VL]` (zero-padded), and the Relax caller passes the
packed constant (TVM does the same with layout-free buffers and `SplitLayoutRewritePreproc`).
Rows past the end are clamped to the last row (computed twice, stored twice with the same
value), lanes past the end are not stored. With `fp_contract` the block is marked
`irtool.fp_contract` and LLVM fuses each multiply-add (one rounding, as TVM's LLVM target
does); the order of accumulation per output is unchanged either way.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field

import numpy as np

from irtool.codegen.llvm_codegen import FP_CONTRACT_ATTR
from irtool.codegen.schedule import (
    Schedule,
    _is_true,
    _LoadReplacer,
    _loads,
    _nest_top,
    _reads_buffer,
    _realizes,
    _uses,
    _writes_buffer,
)
from irtool.ir import tir
from irtool.ir.tir_visitor import substitute

from .default_cpu_schedule import _unit_stride, dtype_bits

# a weight read in place whose rows are this many elements apart or more (4 KiB of float32:
# every row in the same cache set, a new page per row) is packed at run time when its
# panels are read this many times or more (the packing is one pass over W)
RUNTIME_PACK_STRIDE = 1024
RUNTIME_PACK_REUSE = 16
# the reduction length up to which a contraction whose output rows are contiguous in one operand
# takes its lanes along them (stores whole vectors) rather than along the weight's panels
DATA_VECTOR_MAX_REDUCTION = 64
# the reduction length up to which a tile written back transposed is unrolled for LLVM to
# shuffle in registers
TRANSPOSE_UNROLL_MAX_REDUCTION = 256
# the A rows one chunk of row tiles reads: a share of the L2 cache, beside a W panel
A_CHUNK_BYTES = 512 * 1024


@dataclass
class Packing:
    """A weight parameter packed into panels: axis `axis` of the original split by `panel`."""

    axis: int
    panel: int

    def apply(self, w: np.ndarray) -> np.ndarray:
        n = w.shape[self.axis]
        panels = -(-n // self.panel)
        pad = [(0, 0)] * w.ndim
        pad[self.axis] = (0, panels * self.panel - n)
        w = np.pad(w, pad)
        shape = list(w.shape)
        shape[self.axis:self.axis + 1] = [panels, self.panel]
        return np.ascontiguousarray(np.moveaxis(w.reshape(shape), (self.axis, self.axis + 1), (0, w.ndim)))


@dataclass
class TileConfig:
    vector_bits: int
    fp_contract: bool
    parallel_ok: bool
    # parameters whose every caller passes a constant: they may be packed
    constant_params: frozenset = frozenset()
    packings: dict = field(default_factory=dict)  # param index -> Packing, filled in
    l1_ways: int = 0  # the L1 data cache's ways (0: the host's)


def _const(value: int, dtype: str) -> tir.IntImm:
    return tir.IntImm(value, dtype)


def _extent_values(sch: Schedule, loops) -> list[int] | None:
    out = []
    for lv in loops:
        e = sch.loop(lv).extent
        if not isinstance(e, tir.IntImm) or not isinstance(sch.loop(lv).min, tir.IntImm) or sch.loop(lv).min.value:
            return None
        out.append(e.value)
    return out


@functools.lru_cache(maxsize=1)
def l1_sets_and_ways() -> tuple[int, int]:
    """The host's L1 data cache geometry from sysfs (64 sets of 8 ways, Zen's, when unknown)."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(base)):
            def field_of(name: str, index=index) -> str:
                with open(os.path.join(base, index, name)) as f:
                    return f.read().strip()
            if field_of("level") == "1" and field_of("type") in ("Data", "Unified"):
                return int(field_of("number_of_sets")), int(field_of("ways_of_associativity"))
    except (OSError, ValueError):
        pass
    return 64, 8


def _rows_in_l1(row_bytes: int, r_ext: int, ways: int = 0) -> int:
    """The most rows of A, `row_bytes` apart, whose lines at one reduction step share no L1
    set with more than ways - 2 others (room left for W's and the output's lines): rows 4 KiB
    apart all fall in one set, and more of them than its ways evict each other at every step
    (1024^3's 13-row tile on Zen 4's 8-way L1 ran at 60% of OpenBLAS)."""
    sets, host_ways = l1_sets_and_ways()
    ways = ways or host_ways
    lines_per_set: dict[int, set] = {}
    for row in range(r_ext):
        line = row * row_bytes // 64
        lines = lines_per_set.setdefault(line % sets, set())
        lines.add(line)
        if len(lines) > ways - 2:
            return max(row, 1)
    return r_ext


def _choose_tile(r_ext: int, v_ext: int, lanes: int, registers: int, exact: bool,
                 max_rows: int | None = None) -> tuple[int, int] | None:
    """(rows R, vectors V) for the best modelled throughput: per reduction step the tile
    does R * V multiply-adds (two per cycle), R + V loads (two per cycle), reads V vectors
    of W from L2 (about 24 bytes per cycle) and waits at least the FMA latency (4 cycles)
    on each accumulator; the R * V accumulators, V weight
    vectors and a broadcast must fit in the registers, with a few to spare. Work on clamped rows and padded
    lanes is waste. `exact`: V vectors must divide `v_ext` (W read in place, no padding)."""
    best, best_score = None, -1.0
    for vectors in range(1, 9):
        if vectors > 1 and (vectors - 1) * lanes >= v_ext:
            break
        if exact and v_ext % (vectors * lanes):
            continue
        for rows in range(1, min(r_ext, max_rows or r_ext) + 1):
            accumulators = rows * vectors
            if accumulators + vectors + 1 > registers - 3:  # (LLVM spills beyond, measured)
                break
            useful = (r_ext / (-(-r_ext // rows) * rows)) * (v_ext / (-(-v_ext // (vectors * lanes)) * vectors * lanes))
            # W's panel is read again per row tile: from L2, about 24 bytes a cycle (measured)
            speed = (accumulators / 2) / max(accumulators / 2, (rows + vectors) / 2, 4, vectors * lanes * 4 / 24)
            score = useful * speed + 0.001 * accumulators
            if score > best_score:
                best, best_score = (rows, vectors), score
    return best


def tile_contraction(sch: Schedule, name: str, config: TileConfig) -> bool:
    """Rewrite contraction block `name` of `sch` into a register tile (module docstring).
    False (nothing changed) when its shape does not fit."""
    realize, path = sch._realize(name)
    block = realize.block
    loops = sch.get_loops(name)
    extents = _extent_values(sch, loops)
    store = block.body
    if extents is None or not isinstance(store, tir.BufferStore) or block.init is None \
            or not _is_true(realize.predicate):
        return False
    if not isinstance(block.init, tir.BufferStore) or _loads(block.init.value) \
            or any(_uses(block.init.value, iv.var) for iv in block.iter_vars):
        return False
    out = store.buffer
    dtype = out.dtype
    if dtype not in ("float32", "float64") or not _at_root(sch, realize, path):
        return False
    iter_of = dict(zip(loops, (block.iter_vars[list(realize.iter_values).index(lv)] for lv in loops)))
    loop_name = {iter_of[lv].var: lv.name for lv in loops}  # new loops are named after the old ones
    extent_of = {iter_of[lv].var: e for lv, e in zip(loops, extents)}
    spatial = [iter_of[lv].var for lv in loops if iter_of[lv].iter_type == tir.DATA_PAR]
    reduce = [iter_of[lv].var for lv in loops if iter_of[lv].iter_type == tir.COMM_REDUCE]
    if not reduce or len(spatial) + len(reduce) != len(loops):
        return False
    if list(store.indices) != spatial or len(set(spatial)) != len(spatial):
        return False  # the output indexed by the spatial iterators in order
    value = store.value
    if not (isinstance(value, tir.BinOp) and value.op == "add" and isinstance(value.a, tir.BufferLoad)
            and value.a.buffer is out and list(value.a.indices) == spatial):
        return False
    product = value.b
    if not (isinstance(product, tir.BinOp) and product.op == "mul" and product.dtype == dtype):
        return False
    params = {buf: k for k, (_, buf) in enumerate(sch.func.buffer_map)}
    lanes = max(config.vector_bits // dtype_bits(dtype), 1)
    registers = 32 if config.vector_bits >= 512 else 16
    data_vector = _data_vector_roles(product, spatial, reduce, extent_of, lanes)
    if data_vector is not None and params.get(data_vector[0].buffer) in config.constant_params:
        # the lanes run along a constant's rows (a matmul weight's columns): the same tile
        # along the weight's panels, packed, streams them instead of a strip of every row
        # (the MLP's 784x512 and 512x512 layers: the model about 20% faster on Zen 4)
        data_vector = None
    if data_vector is not None:
        weight, other, v, r = data_vector
    else:
        for weight, other in ((product.b, product.a), (product.a, product.b)):
            if isinstance(weight, tir.BufferLoad) and weight.buffer in params and weight.buffer.dtype == dtype \
                    and all(isinstance(i, tir.Var) for i in weight.indices) \
                    and len(set(weight.indices)) == len(weight.indices) \
                    and not any(ld.buffer is weight.buffer for ld in _loads(other)):
                break
        else:
            return False
        vs = [s for s in spatial if s in weight.indices and not _uses(other, s)]
        rs = [s for s in spatial if s not in weight.indices and _uses(other, s)]
        if not vs or any(not isinstance(i, tir.Var) or (i not in spatial and i not in reduce) for i in weight.indices):
            return False
        v = vs[-1]
        r = rs[-1] if rs else None
    w_buf = weight.buffer
    # another block reading W as it is: W's layout cannot change
    shared = any(r_.block is not block and (_reads_buffer(r_.block, w_buf) or _writes_buffer(r_.block, w_buf))
                 for r_, _ in _realizes(sch.func.body) if r_ is not sch.func.body)
    v_ext = extent_of[v]
    r_ext = extent_of[r] if r is not None else 1
    w_param = params.get(w_buf)
    packable = w_param in config.constant_params and not shared and data_vector is None
    if data_vector is not None:  # lanes read in place; vectors past the end start earlier
        axis, in_place = len(weight.indices) - 1, True
    else:
        axis = list(weight.indices).index(v)
        row_stride = math.prod(d.value if isinstance(d, tir.IntImm) else 1 << 20 for d in w_buf.shape[axis:])
        # how many times the tiles read W over: the rows, and the spatial indices W does not use
        reuse = r_ext * math.prod(extent_of[s] for s in spatial if s not in weight.indices and s is not r)
        # a constant is packed even where its rows could be read in place: each tile then
        # streams one contiguous panel instead of a strip of every row (the transformer
        # layer's 256-wide projections: the layer about 10% faster on Zen 4)
        in_place = weight.indices[-1] is v and not packable \
            and (row_stride < RUNTIME_PACK_STRIDE or reuse < RUNTIME_PACK_REUSE)
        if not packable and not in_place and reuse < RUNTIME_PACK_REUSE:
            return False
    tile = _choose_tile(r_ext, v_ext, lanes, registers, exact=in_place and data_vector is None,
                        max_rows=_rows_in_l1(_row_bytes(other, r), r_ext, config.l1_ways) if r is not None else None)
    if tile is None:
        return False
    rows, vectors = tile
    width = vectors * lanes
    contiguous = in_place and (v_ext % width == 0 or data_vector is not None)
    pack_at_runtime = not contiguous and not packable
    if v_ext < lanes and r_ext < 2:
        return False  # nothing to gain: a handful of outputs

    # ---- the new loop nest
    idx = v.dtype
    v_name, r_name = loop_name[v], loop_name[r] if r is not None else "r"
    v_o = tir.Var(f"{v_name}_0", idx)
    r_o = tir.Var(f"{r_name}_0", r.dtype) if r is not None else None
    ri = tir.Var(f"{r_name}_1", idx)
    vi = tir.Var(f"{v_name}_1", idx)
    lane = tir.Var(f"{v_name}_l", idx)  # the write-back's lane
    v_panels = -(-v_ext // width)
    r_tiles = -(-r_ext // rows)
    outer_vars, outer_ext = [], []
    for s in spatial:
        if s is v:
            outer_vars.append(v_o)
            outer_ext.append(v_panels)
        elif s is r:
            outer_vars.append(r_o)
            outer_ext.append(r_tiles)
        else:
            outer_vars.append(tir.Var(loop_name[s], s.dtype))
            outer_ext.append(extent_of[s])
    # panels outermost: W's panel stays in cache (with lanes along the data, W is a few
    # broadcast scalars: the tiles then go along the output's rows, stored contiguously)
    if r is not None and spatial.index(r) < spatial.index(v) and data_vector is None:
        a, b = spatial.index(r), spatial.index(v)
        outer_vars[a], outer_vars[b] = outer_vars[b], outer_vars[a]
        outer_ext[a], outer_ext[b] = outer_ext[b], outer_ext[a]
    red_vars = [tir.Var(loop_name[x], x.dtype) for x in reduce]

    def row_expr(row: tir.PrimExpr) -> tir.PrimExpr:
        e = tir.BinOp("add", tir.BinOp("mul", r_o, _const(rows, r.dtype)), row) if r_tiles > 1 else row
        if r_tiles * rows != r_ext:
            e = tir.BinOp("min", e, _const(r_ext - 1, r.dtype))
        return e

    def v_expr(k: tir.PrimExpr) -> tir.PrimExpr:
        return tir.BinOp("add", tir.BinOp("mul", v_o, _const(width, idx)), k) if v_panels > 1 else k

    def vector_start(vector: tir.PrimExpr) -> tir.PrimExpr:
        """Where vector `vector` of the tile starts along v, moved back to end at v's end (a
        vector past the end recomputes outputs another one has: the same values)."""
        e = v_expr(tir.BinOp("mul", vector, _const(lanes, idx)) if vectors > 1 else _const(0, idx))
        return tir.BinOp("min", e, _const(v_ext - lanes, idx)) if v_panels * width != v_ext else e

    base_map = {s: nv for s, nv in zip([s for s in spatial if s is not v and s is not r],
                                       [x for x in outer_vars if x is not v_o and x is not r_o])}
    base_map.update(zip(reduce, red_vars))
    lanes_base = tir.BinOp("mul", vi, _const(lanes, idx)) if vectors > 1 else _const(0, idx)
    lanes_at = tir.Ramp(lanes_base, _const(1, idx), lanes)

    acc = tir.Buffer(f"{out.name}_local", (_const(rows, "int64"), _const(width, "int64")), dtype, scope="local")
    a_map = dict(base_map)
    if r is not None:
        a_map[r] = row_expr(ri)
    a_expr = tir.Broadcast(substitute(other, a_map), lanes)
    if data_vector is not None:
        last = substitute(weight.indices[-1], {**base_map, v: vector_start(vi)})
        w_load = tir.BufferLoad(w_buf, [substitute(i, base_map) for i in weight.indices[:-1]]
                                + [tir.Ramp(last, _const(1, idx), lanes)])
    elif contiguous:
        w_map = dict(base_map)
        w_map[v] = tir.Ramp(v_expr(lanes_base), _const(1, idx), lanes)
        w_load = substitute(weight, w_map)
    else:
        packed_shape = [_const(v_panels, "int64")] + [d for k, d in enumerate(w_buf.shape) if k != axis] \
            + [_const(width, "int64")]
        packed = tir.Buffer(f"{w_buf.name}_packed" if pack_at_runtime else w_buf.name, packed_shape, dtype)
        w_idx = [v_o] + [base_map[i] for i in weight.indices if i is not v] + [lanes_at]
        w_load = tir.BufferLoad(packed, w_idx)
        if not pack_at_runtime:
            config.packings[w_param] = Packing(axis, width)
    acc_at = [ri, lanes_at]
    product = tir.BinOp("mul", a_expr, w_load)
    update = tir.BufferStore(acc, tir.BinOp("add", tir.BufferLoad(acc, acc_at), product), acc_at)
    update = _tile_loops(update, ri, rows, vi, vectors)
    for rv, x in reversed(list(zip(red_vars, reduce))):
        update = tir.For(rv, _const(0, rv.dtype), _const(extent_of[x], rv.dtype), "serial", update)
    init = tir.BufferStore(acc, tir.Broadcast(block.init.value, lanes), acc_at)
    init = _tile_loops(init, ri, rows, vi, vectors)

    # ---- write-back, through the elementwise consumer when it can be absorbed
    consumer = _absorbable_consumer(sch, block, out)
    out_map = dict(base_map)
    out_map[v] = v_expr(lane)
    if data_vector is not None:
        out_map[v] = tir.BinOp("add", vector_start(vi), lane)
    if r is not None:
        out_map[r] = row_expr(ri)
    result = tir.BufferLoad(acc, [ri, tir.BinOp("add", lanes_base, lane) if data_vector is not None else lane])
    if consumer is not None:
        cons_block = consumer.block
        cons_store = cons_block.body
        cons_vars = [iv.var for iv in cons_block.iter_vars]
        value_e = _LoadReplacer(out, lambda _: result).mutate(cons_store.value)
        cmap = {cv: out_map[s] for cv, s in zip(cons_vars, spatial)}
        write = tir.BufferStore(cons_store.buffer, substitute(value_e, cmap), [cmap[i] for i in cons_store.indices])
        dest = cons_store.buffer
    else:
        write = tir.BufferStore(out, result, [out_map[s] for s in spatial])
        dest = out
    if v_panels * width != v_ext and data_vector is None:
        write = tir.IfThenElse(tir.BinOp("lt", v_expr(lane), _const(v_ext, idx)), write)
    vector_store = spatial[-1] is v  # contiguous lanes in the destination
    if data_vector is not None:
        lane_loop = tir.For(lane, _const(0, idx), _const(lanes, idx), "vectorized", write)
        if vectors > 1:
            lane_loop = tir.For(vi, _const(0, idx), _const(vectors, idx), "unroll", lane_loop)
        else:
            lane_loop = substitute(lane_loop, {vi: _const(0, idx)})
    else:
        lane_loop = tir.For(lane, _const(0, idx), _const(width, idx), "vectorized" if vector_store else "serial",
                            write)
    write_back = tir.For(ri, _const(0, idx), _const(rows, idx), "unroll", lane_loop) if rows > 1 else \
        substitute(lane_loop, {ri: _const(0, idx)})
    if data_vector is None and not vector_store and r is not None and spatial[-1] is r and rows >= 4 \
            and r_tiles * rows == r_ext:
        # the rows are the destination's contiguous index (conv's output columns): one store of
        # the tile's rows per lane (channel), the accumulators transposed on the way. After a
        # short reduction, where that transposition is a large share of the work, both loops
        # are unrolled: every access to the tile is then at a constant place, so LLVM keeps it
        # in registers and shuffles it (a vectorised row loop became gathers from the tile
        # spilled to the stack: MobileNetV2's first convolution 25% slower, its 1x1
        # convolutions 3-10%). After a long one it is 1-3% of the time and not worth LLVM's
        # time (ResNet-18's compilation took three times as long with every tile unrolled).
        unrolled = math.prod(extent_of[x] for x in reduce) <= TRANSPOSE_UNROLL_MAX_REDUCTION
        write_back = tir.For(lane, _const(0, idx), _const(width, idx), "unroll" if unrolled else "serial",
                             tir.For(ri, _const(0, idx), _const(rows, idx), "unroll" if unrolled else "vectorized",
                                     write))

    reads = _whole_regions([ld.buffer for ld in _loads(tir.SeqStmt([update, write_back]))
                            if ld.buffer is not acc])
    writes = _whole_regions([dest])
    annotations = ((FP_CONTRACT_ATTR, True),) if config.fp_contract else ()
    body = tir.SeqStmt([init, update, write_back])
    if rows == 1:
        body = substitute(body, {ri: _const(0, idx)})
    tile = tir.SBlockRealize([], tir.IntImm(1, "bool"), tir.SBlock(
        f"{block.name}_tile", [], reads, writes, body, alloc_buffers=[acc], annotations=annotations))
    tile, outer_vars, outer_ext = _row_chunks(tile, outer_vars, outer_ext, r_o, v_o,
                                              rows * math.prod(extent_of[x] for x in reduce) * dtype_bits(dtype) // 8)
    nest = _outer_loops(tile, outer_vars, outer_ext, config.parallel_ok)
    if pack_at_runtime:
        nest = tir.SeqStmt([_pack_nest(w_buf, packed, axis, width, v_ext, config.parallel_ok), nest])
    elif not contiguous:
        _replace_param_buffer(sch, w_param, packed)
    _replace_nests(sch, realize, path, nest, [consumer] if consumer is not None else [],
                   [out] if consumer is not None else [], packed if pack_at_runtime else None)
    return True


def _pack_nest(w_buf: tir.Buffer, packed: tir.Buffer, axis: int, width: int, v_ext: int, parallel_ok: bool):
    """`packed[v_0, <W's other indices>, l] = W[.., v_0 * width + l, ..]` (zero past the end),
    one panel row per vectorised inner loop, the rest one parallel loop."""
    idx = "int64"
    names = [f"ax{k}" for k in range(len(packed.shape))]
    loop_vars = [tir.Var(n, idx) for n in names]
    iters = [tir.Var(f"v_{n}", idx) for n in names]
    v_index = tir.BinOp("add", tir.BinOp("mul", iters[0], _const(width, idx)), iters[-1])
    middle = iters[1:-1]
    source = middle[:axis] + [v_index] + middle[axis:]
    load = tir.BufferLoad(w_buf, source)
    value = load if v_ext % width == 0 else tir.Call(w_buf.dtype, "tirx.if_then_else", [
        tir.BinOp("lt", v_index, _const(v_ext, idx)), load, tir.FloatImm(0.0, w_buf.dtype)])
    store_at = list(iters)
    block = tir.SBlock(f"{w_buf.name}_pack", [tir.IterVar(iv, tir.Range(_const(0, idx), d), tir.DATA_PAR)
                                               for iv, d in zip(iters, packed.shape)],
                       _whole_regions([w_buf]), [tir.BufferRegion(packed, [tir.Range(i, _const(1, idx))
                                                                            for i in store_at])],
                       tir.BufferStore(packed, value, store_at))
    body = tir.SBlockRealize(loop_vars, tir.IntImm(1, "bool"), block)
    body = tir.For(loop_vars[-1], _const(0, idx), packed.shape[-1], "vectorized", body)
    return _outer_loops(body, loop_vars[:-1], [d.value for d in packed.shape[:-1]], parallel_ok)


def _row_chunks(tile, outer_vars: list, outer_ext: list, r_o, v_o, tile_bytes: int):
    """When the rows' A (tile_bytes per row tile) outgrow the L2 cache, the row tiles go in
    chunks of about A_CHUNK_BYTES, outside the panels: each W panel is then read once per
    chunk, and the chunk's A stays in cache across the panels (else A streams from memory
    once per panel)."""
    if r_o is None or r_o not in outer_vars:
        return tile, outer_vars, outer_ext
    r_tiles = outer_ext[outer_vars.index(r_o)]
    if r_tiles * tile_bytes <= 2 * A_CHUNK_BYTES:
        return tile, outer_vars, outer_ext
    want = max(1, A_CHUNK_BYTES // tile_bytes)
    chunk = max(d for d in range(1, min(want, r_tiles) + 1) if r_tiles % d == 0)
    if chunk == 1 or chunk == r_tiles:
        return tile, outer_vars, outer_ext
    idx = r_o.dtype
    r_oo, r_oi = tir.Var(f"{r_o.name}_0", idx), tir.Var(f"{r_o.name}_1", idx)
    tile = substitute(tile, {r_o: tir.BinOp("add", tir.BinOp("mul", r_oo, _const(chunk, idx)), r_oi)})
    at = outer_vars.index(r_o)
    outer_vars, outer_ext = list(outer_vars), list(outer_ext)
    outer_vars[at], outer_ext[at] = r_oi, chunk
    first = outer_vars.index(v_o)
    outer_vars.insert(first, r_oo)
    outer_ext.insert(first, r_tiles // chunk)
    return tile, outer_vars, outer_ext


def _row_bytes(operand: tir.PrimExpr, r: tir.Var) -> int:
    """How far apart in memory the rows `r` of a contraction's broadcast operand are (the
    largest step of `r` among its loads with constant shapes)."""
    step = 0
    for load in _loads(operand):
        shape = [d.value if isinstance(d, tir.IntImm) else None for d in load.buffer.shape]
        for k, index in enumerate(load.indices):
            if _uses(index, r) and None not in shape[k + 1:]:
                step = max(step, math.prod(shape[k + 1:]) * dtype_bits(load.buffer.dtype) // 8)
    return step


def _data_vector_roles(product: tir.BinOp, spatial: list, reduce: list, extent_of: dict, lanes: int):
    """(vector load, broadcast side, v, r) when the lanes should run along the output's last
    index, read contiguously from one operand (conv's input row, `x[.., xx + rx]`), the rows
    along an index only the other operand reads (conv's output channels): for a short
    reduction (a 1x1 convolution over few channels), whose tile is then stored as whole
    vectors through the consumer instead of lane by lane, or when fewer lanes are wasted so
    (24 output channels fill 75% of two 16-lane vectors, 56 columns 87.5% of four), or as
    few for a window's row (`x[.., xx + rx]`: a convolution's 16 or 32 channels over 32
    columns), whose tile along the weight's panels would be transposed on its way out
    (measured on Zen 4: ResNet-20's 3x3 convolutions 10-15% faster so). None when that
    does not apply."""
    v = spatial[-1]
    if extent_of[v] < lanes:
        return None
    short = math.prod(extent_of[x] for x in reduce) <= DATA_VECTOR_MAX_REDUCTION
    for vec, other in ((product.a, product.b), (product.b, product.a)):
        if not isinstance(vec, tir.BufferLoad) or _uses(other, v) or not vec.indices:
            continue
        if any(_uses(i, v) for i in vec.indices[:-1]) or not _unit_stride(vec.indices[-1], v):
            continue
        rows = [s for s in spatial if s is not v and _uses(other, s) and not any(_uses(i, s) for i in vec.indices)]
        # else the lanes would run along the rows (the weight's panels): more of them wasted?
        along_data, along_weight = _lane_use(extent_of[v], lanes), _lane_use(extent_of[rows[-1]], lanes) if rows else 0
        window = not isinstance(vec.indices[-1], tir.Var)
        if rows and (short or along_data > along_weight or window and along_data == along_weight):
            return vec, other, v, rows[-1]
    return None


def _lane_use(extent: int, lanes: int) -> float:
    return extent / (-(-extent // lanes) * lanes)


def _tile_loops(stmt, ri, rows, vi, vectors):
    """The unrolled row and vector loops around `stmt`, with loop variables of their own (a
    variable is bound by one loop only)."""
    idx = ri.dtype
    fresh_ri, fresh_vi = tir.Var(ri.name, idx), tir.Var(vi.name, idx)
    stmt = substitute(stmt, {ri: fresh_ri if rows > 1 else _const(0, idx), vi: fresh_vi})
    ri, vi = fresh_ri, fresh_vi
    if vectors > 1:
        stmt = tir.For(vi, _const(0, idx), _const(vectors, idx), "unroll", stmt)
    if rows > 1:
        stmt = tir.For(ri, _const(0, idx), _const(rows, idx), "unroll", stmt)
    return stmt


def _outer_loops(body, outer_vars, outer_ext, parallel_ok: bool):
    """Serial loops, or one fused parallel loop whose index is split back into the others."""
    total = math.prod(outer_ext)
    if parallel_ok and total > 1:
        idx = outer_vars[0].dtype
        fused = tir.Var("_".join(v.name for v, e in zip(outer_vars, outer_ext) if e > 1) + "_fused", idx)
        mapping, stride = {}, 1
        for k in reversed(range(len(outer_vars))):
            e = outer_ext[k]
            term = fused if stride == 1 else tir.BinOp("floordiv", fused, _const(stride, idx))
            if e == 1:
                term = _const(0, idx)
            elif stride * e != total:
                term = tir.BinOp("floormod", term, _const(e, idx))
            mapping[outer_vars[k]] = term
            stride *= e
        return tir.For(fused, _const(0, idx), _const(total, idx), "parallel", substitute(body, mapping))
    body = substitute(body, {v: _const(0, v.dtype) for v, e in zip(outer_vars, outer_ext) if e == 1})
    for v, e in reversed(list(zip(outer_vars, outer_ext))):
        if e > 1:
            body = tir.For(v, _const(0, v.dtype), _const(e, v.dtype), "serial", body)
    return body


def _whole_regions(buffers) -> list[tir.BufferRegion]:
    seen, out = set(), []
    for buf in buffers:
        if buf in seen:
            continue
        seen.add(buf)
        out.append(tir.BufferRegion(buf, [tir.Range(_const(0, d.dtype), d) for d in buf.shape]))
    return out


def _absorbable_consumer(sch: Schedule, block: tir.SBlock, out: tir.Buffer) -> tir.SBlockRealize | None:
    """The one spatial block reading intermediate `out` elementwise (its iterators index `out`
    and its own store in order, over the same shape), reading nothing else computed inside."""
    root = sch.func.body.block
    if out not in root.alloc_buffers:
        return None
    realizes = [r for r, _ in _realizes(sch.func.body) if r is not sch.func.body]
    readers = [r for r in realizes if r.block is not block and any(ld.buffer is out for ld in _loads(r.block.body))]
    if len(readers) != 1:
        return None
    cons = readers[0]
    cpath = next(p for r, p in _realizes(sch.func.body) if r is cons)
    if not _at_root(sch, cons, cpath):
        return None
    cb = cons.block
    st = cb.body
    if any(not (_same_int(iv.dom.min, _const(0, "int64")) and _same_int(iv.dom.extent, d))
           for iv, d in zip(cb.iter_vars, out.shape)):
        return None  # it must compute every element the tile stores
    ivs = [iv.var for iv in cb.iter_vars]
    if not isinstance(st, tir.BufferStore) or any(iv.iter_type != tir.DATA_PAR for iv in cb.iter_vars):
        return None
    if list(st.indices) != ivs or len(ivs) != len(out.shape) or len(st.buffer.shape) != len(out.shape) \
            or any(not _same_int(a, b) for a, b in zip(st.buffer.shape, out.shape)):
        return None
    params = {buf for _, buf in sch.func.buffer_map}
    for ld in _loads(st.value):
        if ld.buffer is out:
            if list(ld.indices) != ivs:
                return None
        elif ld.buffer not in params:
            return None
    if st.buffer not in params or _loads_var_from(st.value, st.buffer):
        return None
    return cons


def _same_int(a, b) -> bool:
    return isinstance(a, tir.IntImm) and isinstance(b, tir.IntImm) and a.value == b.value


def _loads_var_from(e, buf) -> bool:
    return any(ld.buffer is buf for ld in _loads(e))


def _root_statements(sch: Schedule) -> list:
    root = sch.func.body.block
    return list(root.body.seq) if isinstance(root.body, tir.SeqStmt) else [root.body]


def _at_root(sch: Schedule, realize, path) -> bool:
    """The block's loop nest is one of the root block's statements (as legalized TIR has it)."""
    top = _nest_top(realize, path)
    return isinstance(sch.func.body, tir.SBlockRealize) and any(s is top for s in _root_statements(sch))


def _replace_param_buffer(sch: Schedule, index: int, packed: tir.Buffer) -> None:
    pairs = list(sch.func.buffer_map)
    var, _ = pairs[index]
    pairs[index] = (var, packed)
    sch.func = sch.func.replace(buffer_map=tuple(pairs))


def _replace_nests(sch: Schedule, realize, path, nest, drops: list, dropped: list,
                   added: tir.Buffer | None = None) -> None:
    """The contraction's loop nest becomes `nest`; the nests of `drops` (an absorbed consumer, an
    inlined producer) go, and with them the intermediate buffers `dropped`; `added` (a weight
    packed at run time) joins the root's."""
    root_realize = sch.func.body
    root = root_realize.block
    top = _nest_top(realize, path)
    gone = [_nest_top(d, next(p for r, p in _realizes(sch.func.body) if r is d)) for d in drops]
    new = []
    for s in _root_statements(sch):
        if s is top:
            new.append(nest)
        elif not any(s is g for g in gone):
            new.append(s)
    body = new[0] if len(new) == 1 else tir.SeqStmt(new)
    allocs = tuple(b for b in root.alloc_buffers if not any(b is d for d in dropped)) + \
        ((added,) if added is not None else ())
    new_root = tir.SBlock(root.name, root.iter_vars, root.reads, root.writes, body, root.init, allocs,
                          root.match_buffers, root.annotations)
    sch.func = sch.func.replace(body=tir.SBlockRealize(root_realize.iter_values, root_realize.predicate, new_root))
