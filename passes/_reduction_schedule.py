"""default-cpu-schedule's rules for depthwise convolutions and row reductions (softmax's max
and sum, layer_norm's sums, mean / global average pooling): the reductions that are not a
contraction's register tile and whose reduced index is the contiguous one.

Both keep each output's order of accumulation (the reduction loops stay in their order and
outside the vector lanes), so native results stay bit-identical to the TIR interpreter.

  depthwise (a stencil)   for n, c, y, x, rc, ry, rx:   C[n, c, y, x] += P[n, c + rc, y + ry, x + rx] * W[c, rc, ry, rx]
                          the weight reads no spatial loop that the data does not (no rows to
                          tile, unlike conv2d's output channels), so the vector runs along the
                          output columns x:
                              for n_c_y_fused in T.parallel(...):     one output row per task
                                for x_0 in range(X / LANES):          (a row of up to 4 vectors: whole)
                                  for rc, ry, rx (unrolled):          the taps, in their order
                                    for x_1 in T.vectorized(LANES):   C[.., x] kept in a register
       row reduction      for i, j, k:   out[i, j] = max(out[i, j], x[i, j, k])   (k contiguous in x)
                          the rows are interleaved instead of the reduction being split (which
                          would change the order of accumulation): LANES rows at a time, one
                          per lane, each accumulating its own row in order
                              for i_j_0_fused in T.parallel(...):
                                for k:
                                  for j_1 in T.vectorized(LANES):     x[.., j, k] gathered
                          a serial row sum waits on its adder's latency for every element;
                          LANES independent rows do not.
"""

from __future__ import annotations

import math

from irtool.codegen.schedule import Schedule, _loads, _own_stores, _uses
from irtool.ir import tir
from irtool.passes.default_cpu_schedule import (
    _extent,
    _is_contraction,
    _iter_var_of,
    _last_index_only,
    _parallelize,
    _unit_stride,
)

# a spatial block's contiguous innermost loops are fused into one vector loop up to this length
ROW_LIMIT = 4096
# reduction loops of a stencil are unrolled when they do at most this many taps in all
MAX_UNROLLED_TAPS = 64


def is_depthwise(block: tir.SBlock, realize: tir.SBlockRealize, loops: list, leading: int) -> bool:
    """`C += A * B` whose innermost spatial loop j indexes only the last dimension of C (unit
    stride) and of one operand, and whose other operand (the weight) reads no spatial loop that
    the j operand does not: depthwise conv2d (and any per-channel stencil)."""
    if leading == 0 or leading == len(loops) or not _is_contraction(block):
        return False
    iter_of = {lv: _iter_var_of(block, realize, lv) for lv in loops}
    j_var = iter_of[loops[leading - 1]]
    if not _last_index_only(block, j_var):
        return False
    sides = _operands(block)
    uses_j = [any(_uses(i, j_var) for ld in side for i in ld.indices) for side in sides]
    if uses_j.count(True) != 1:
        return False
    data, weight = sides[uses_j.index(True)], sides[uses_j.index(False)]

    def reads(side, var):
        return any(_uses(i, var) for ld in side for i in ld.indices)

    return not any(reads(weight, iter_of[lv]) and not reads(data, iter_of[lv]) for lv in loops[:leading - 1])


def _operands(block: tir.SBlock) -> list[list[tir.BufferLoad]]:
    """The loads of each factor of `C = C + A * B` (casts looked through)."""
    store = block.body
    value = store.value
    product = value.b if isinstance(value.a, tir.BufferLoad) and value.a.buffer is store.buffer else value.a
    while isinstance(product, tir.Cast):
        product = product.value
    return [_loads(product.a), _loads(product.b)]


def schedule_depthwise(sch: Schedule, loops: list, leading: int, block: tir.SBlock, realize: tir.SBlockRealize,
                       lanes: int, parallel_ok: bool) -> bool:
    """The stencil schedule of the module docstring; False (nothing changed) when the columns
    are symbolic or a single one."""
    j_loop = loops[leading - 1]
    j_extent = _extent(sch, j_loop)
    if j_extent is None or j_extent < 2:
        return False
    reductions = loops[leading:]
    j_var = _iter_var_of(block, realize, j_loop)
    strided = any(_uses(ld.indices[-1], j_var) and not _unit_stride(ld.indices[-1], j_var)
                  for ld in _loads(block.body))
    # the widest vector that divides the row (56 columns: 8 lanes, no tail), else a predicated
    # tail; a strided row always the full width (LLVM loads an 8-lane stride-2 vector as 4-lane
    # halves: MobileNetV2's 112 -> 56 stencil 1.12 -> 0.82 ms with 16 lanes and a masked tail)
    width = next((w for w in (lanes, lanes // 2, lanes // 4) if w >= 4 and j_extent % w == 0), lanes)
    if strided:
        width = lanes
    if j_extent > width:
        j_outer, j_inner = sch.split(j_loop, [None, width])
        tile = [j_outer]
    else:
        j_inner, tile = j_loop, []  # a short row: one vector loop, LLVM takes the tail
    sch.reorder(*tile, *reductions, j_inner)
    taps = 1
    for loop in reductions:
        extent = _extent(sch, loop)
        taps = taps * extent if extent is not None else MAX_UNROLLED_TAPS + 1
    if taps <= MAX_UNROLLED_TAPS:
        for loop in reductions:
            if _extent(sch, loop) != 1:
                sch.unroll(loop)
    sch.vectorize(j_inner)
    _parallelize(sch, loops[:leading - 1], parallel_ok)
    return True


def schedule_row_reduction(sch: Schedule, loops: list, leading: int, block: tir.SBlock, lanes: int,
                           parallel_ok: bool) -> bool:
    """Interleave LANES rows of a reduction whose spatial loops all come before its reduction
    loops (module docstring). The rows are the innermost spatial loop of more than one
    iteration; the loops after it must be single iterations (mean's kept unit axes).
    False (nothing changed) when there is no such loop, its extent is symbolic, or the block
    is more than one store (a nested reduction: adaptive pooling's windows)."""
    if not isinstance(block.body, tir.BufferStore):
        return False
    spatial = loops[:leading]
    extents = [_extent(sch, lv) for lv in spatial]
    rows = next((k for k in reversed(range(leading)) if extents[k] != 1), None)
    if rows is None or extents[rows] is None or any(e != 1 for e in extents[rows + 1:]):
        return False
    row_loop, unit_loops = spatial[rows], spatial[rows + 1:]
    if extents[rows] <= lanes:
        outer, vector_loop = [], row_loop
    else:
        row_outer, vector_loop = sch.split(row_loop, [None, lanes])  # a tail is predicated
        outer = [row_outer]
    sch.reorder(*unit_loops, *loops[leading:], vector_loop)
    sch.vectorize(vector_loop)
    parallel = spatial[:rows] + outer
    while len(parallel) > 1 and _extent(sch, parallel[0]) == 1:
        # a leading unit loop (batch 1) stays outside: fused into the predicated tail's loop it
        # would leave a `fused % n` in the predicate that TVM's fuse does not simplify away
        parallel = parallel[1:]
    _parallelize(sch, parallel, parallel_ok)
    return True


def schedule_spatial_rows(sch: Schedule, loops: list, block: tir.SBlock, realize: tir.SBlockRealize,
                          parallel_ok: bool) -> bool:
    """Spatial blocks: the innermost loops that every access walks contiguously (a batch norm's
    14 x 14 image: x[n, c, y, x], out[n, c, y, x], its parameters p[c] not at all) are fused into
    one row of up to ROW_LIMIT elements, vectorised whole (LLVM takes the tail), the loops
    outside it fused and parallel. Per-row work (index arithmetic, a per-channel sqrt hoisted
    out of the row) is then paid once per row rather than once per vector.
    False (nothing changed) when the innermost loop is longer than that or the only loop."""
    extents = [_extent(sch, lv) for lv in loops]
    if not isinstance(block.body, tir.BufferStore) or len(loops) < 2 or extents[-1] is None \
            or not 2 <= extents[-1] <= ROW_LIMIT:
        return False
    iter_of = {lv: _iter_var_of(block, realize, lv) for lv in loops}
    accesses = [ld for ld in _loads(block.body)] + _own_stores(block)
    row = [loops[-1]]
    while len(row) < len(loops) - 1:
        candidate = loops[-len(row) - 1]
        extent = extents[-len(row) - 1]
        if extent is None or extent * math.prod(extents[-len(row):]) > ROW_LIMIT or \
                not _walked_contiguously(accesses, [iter_of[lv] for lv in [candidate, *row]], extents[-len(row) - 1:]):
            break
        row.insert(0, candidate)
    inner = sch.fuse(*row) if len(row) > 1 else row[0]
    sch.vectorize(inner)
    _parallelize(sch, loops[:len(loops) - len(row)], parallel_ok)
    return True


def _walked_contiguously(accesses: list, row_vars: list, extents: list) -> bool:
    """Each access uses none of `row_vars` or has them, bare and in order, as its last indices
    over dimensions of exactly those extents (so the fused row is one contiguous run)."""
    n = len(row_vars)
    for access in accesses:
        indices = list(access.indices)
        used = [v for v in row_vars if any(_uses(i, v) for i in indices)]
        if not used:
            continue
        if len(indices) < n or any(a is not b for a, b in zip(indices[-n:], row_vars)) or \
                any(_uses(i, v) for i in indices[:-n] for v in row_vars):
            return False
        shape = access.buffer.shape[-n:]
        if any(not isinstance(d, tir.IntImm) or d.value != e for d, e in zip(shape, extents)):
            return False
    return True
