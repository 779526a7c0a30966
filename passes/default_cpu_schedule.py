"""default-cpu-schedule: an untuned CPU schedule for every PrimFunc, in the spirit of TVM's
dlight rules (`ApplyDefaultSchedule`), written with the primitives of `irtool.codegen.schedule`.

Per PrimFunc (skipped when already `tirx.is_scheduled` or holding non-serial loops):

  1. Inline. Every spatial block storing into an intermediate buffer is compute-inlined
     into its consumers (unless it calls an intrinsic such as exp and has several consumers
     or a reduction one: that would compute it again per use); a spatial consumer that
     reads its only intermediate producer elementwise is reverse-compute-inlined. Repeated until nothing changes, so an
     elementwise/injective chain of a fused group becomes one block that writes no
     intermediate tensor (its `T.sblock_alloc_buffer`s are gone).

  2. Each remaining block under the root, from its iterators (its loops must bind them
     one to one, as legalized and fused TIR does):

       spatial           for i, j, k:             for i_j_k_0_fused in T.parallel(...):
                                            ==>       for k_1 in T.vectorized(LANES):
                         the innermost loop is split by the vector width when that divides its
                         extent (or it is the only loop), else vectorised whole so that LLVM
                         vectorises it with a scalar tail instead of a predicate per lane;
                         the other loops are fused into one parallel loop
       reduction         for i, j, r:  (j is the last index of every access using it)
                                            ==>   for i_j_0_fused in T.parallel(...):
                                                      for r:  for j_1 in T.vectorized(LANES):
                         the reduction loop moves outside the contiguous spatial loop, so each
                         output keeps its order of accumulation; else only the spatial loops
                         are fused and parallel
       contraction       matmul / conv (C += A * B): a register tile with packed weights
                         (passes/_contraction_tiles.py; _schedule_contraction for the rest)
       stencil           depthwise conv, pooling window: a tile over a padded plane per
                         channel (passes/_stencil_tiles.py)

   passes/_reduction_schedule.py adds: contiguous innermost spatial loops fused into one
   vector row; row reductions (the reduced index contiguous: softmax, layer_norm, mean) with
   their rows interleaved across the lanes; depthwise convolutions the stencil tile does not
   take (columns in vectors, the taps unrolled outside them).

LANES = vector bits / dtype bits of the block's output; vector bits from the host's features
(`host_cpu()`: avx512f 512, avx/avx2 256, else 128) unless `vector-bits` is given. Loops run in
parallel only when the nest does at least `min-parallel-work` iterations (the thread pool's
hand-off costs microseconds). Every PrimFunc scheduled gets `"tirx.is_scheduled": True`, as
dlight marks them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from irtool.codegen.schedule import Schedule, ScheduleError, _compact_dataflow, _realizes
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.transform import ModulePass, register

SCHEDULED_ATTR = "tirx.is_scheduled"

# host feature -> vector register bits, widest first
VECTOR_BITS_BY_FEATURE = (
    ("+avx512f", 512),
    ("+avx", 256),
    ("+neon", 128),
    ("+sse2", 128),
)


def host_vector_bits() -> int:
    """The width of the host's vector registers, from the features LLVM reports."""
    from irtool.codegen.native import host_cpu

    features = set(host_cpu()[1].split(","))
    return next((bits for feature, bits in VECTOR_BITS_BY_FEATURE if feature in features), 128)


def dtype_bits(dtype: str) -> int:
    if dtype == "bool":
        return 8
    digits = "".join(ch for ch in dtype.split("x")[0] if ch.isdigit())
    return int(digits) if digits else 32


def host_has_fma() -> bool:
    from irtool.codegen.native import host_cpu

    return "+fma" in host_cpu()[1].split(",")


@dataclass(frozen=True)
class CpuScheduleConfig:
    vector_bits: int
    min_parallel_work: int
    fp_contract: bool = False
    # per PrimFunc: the parameters every caller passes a constant for (packable weights)
    constant_params: frozenset = frozenset()
    l1_ways: int = 0  # the L1 data cache's ways (0: the host's)


def schedule_prim_func(func: tir.PrimFunc, config: CpuScheduleConfig, name: str = "main") -> Schedule | None:
    """The default schedule of `func` (its `func` and `trace`), or None if it is left alone.
    `sch.packings` maps parameter indices to the `Packing` their constant arguments need."""
    if _already_scheduled(func) or not isinstance(func.body, tir.SBlockRealize):
        return None
    sch = Schedule(func, name)
    sch.packings = {}
    _inline_all(sch)
    for block in _root_blocks(sch):
        if block in sch.blocks():  # (a contraction tile may have absorbed its consumer)
            _schedule_block(sch, block, config)
    return sch


def _already_scheduled(func: tir.PrimFunc) -> bool:
    flag = func.attr(SCHEDULED_ATTR)
    if flag is not None and getattr(flag, "value", flag):
        return True
    from irtool.codegen.schedule import _stmts

    return any(isinstance(n, tir.For) and n.kind != "serial" for n in _stmts(func.body))


def _inline_all(sch: Schedule) -> None:
    changed = True
    while changed:
        changed = False
        for primitive in (sch.compute_inline, sch.reverse_compute_inline):
            for name in sch.blocks():
                if primitive == sch.compute_inline and _costly_to_recompute(sch, name):
                    continue
                try:
                    primitive(name)
                except ScheduleError:
                    continue
                changed = True
                break
            if changed:
                break


def _costly_to_recompute(sch: Schedule, name: str) -> bool:
    """A producer calling an intrinsic (exp, tanh...) read by a reduction or by several blocks:
    inlining would compute it again per use (softmax's exp would run twice), so it stays.
    So does a producer of a contraction (conv's padding): its tile reads each element many
    times, and a condition per read would sit in the innermost loop."""
    from irtool.codegen.schedule import _reads_buffer, _realizes

    block = sch.get_block(name)
    # (a plain copy, a 1x1 convolution's `pad_temp` without padding, costs nothing to inline)
    if isinstance(block.body, tir.BufferStore) and not isinstance(block.body.value, tir.BufferLoad) and any(
            _is_contraction(r.block) and _reads_buffer(r.block, block.body.buffer)
            for r, _ in _realizes(sch.func.body) if r.block is not block):
        return True
    if not isinstance(block.body, tir.BufferStore) or not _has_call(block.body.value):
        return False
    readers = [r.block for r, _ in _realizes(sch.func.body)
               if r.block is not block and _reads_buffer(r.block, block.body.buffer)]
    return len(readers) > 1 or any(iv.iter_type != tir.DATA_PAR for b in readers for iv in b.iter_vars)


def _has_call(e) -> bool:
    from irtool.ir.tir_visitor import StmtExprVisitor

    found = []

    class V(StmtExprVisitor):
        def visit_Call(self, node):
            found.append(node)

    V().visit(e)
    return bool(found)


def _root_blocks(sch: Schedule) -> list[str]:
    """Blocks whose enclosing block is the root."""
    from irtool.codegen.schedule import _realizes

    out = []
    for realize, path in _realizes(sch.func.body):
        if realize is not sch.func.body and sum(isinstance(p, tir.SBlock) for p in path) == 1:
            out.append(realize.block.name)
    return out


def _schedule_block(sch: Schedule, name: str, config: CpuScheduleConfig) -> None:
    loops = sch.get_loops(name)
    realize = sch._realize(name)[0]
    block = realize.block
    if not loops or not _one_loop_per_iterator(sch, loops, realize) or not _compact_dataflow(block):
        return  # hand-written or in-place TIR: TVM's primitives refuse it too
    kind_of = {value: iv.iter_type for iv, value in zip(block.iter_vars, realize.iter_values)}
    loop_kind = [kind_of[lv] for lv in loops]
    writes = block.writes[0].buffer if block.writes else None
    lanes = max(config.vector_bits // dtype_bits(writes.dtype if writes else "float32"), 1)
    extents = [sch.loop(lv).extent for lv in loops]
    work = math.prod(e.value if isinstance(e, tir.IntImm) else 1 << 20 for e in extents)
    parallel_ok = work >= config.min_parallel_work
    from irtool.passes import _reduction_schedule as rs  # they build on this module's helpers
    from irtool.passes._contraction_tiles import TileConfig, tile_contraction
    from irtool.passes._stencil_tiles import tile_stencil

    if all(k == tir.DATA_PAR for k in loop_kind):
        if not rs.schedule_spatial_rows(sch, loops, block, realize, parallel_ok):
            _schedule_spatial(sch, loops, lanes, parallel_ok)
        return
    if any(k not in (tir.DATA_PAR, tir.COMM_REDUCE) for k in loop_kind):
        return
    if not all(_compact_dataflow(r.block) for r, _ in _realizes(block.body)):
        return  # a nested block accumulating without its own init (adaptive pooling): no parallel loop either
    leading = 0
    while leading < len(loops) and loop_kind[leading] == tir.DATA_PAR:
        leading += 1
    rest_is_reduce = all(k == tir.COMM_REDUCE for k in loop_kind[leading:])
    if leading == 0:
        return
    inner = loops[leading - 1]
    tile_config = TileConfig(config.vector_bits, config.fp_contract, parallel_ok, config.constant_params,
                             sch.packings, config.l1_ways)
    if rest_is_reduce and rs.is_depthwise(block, realize, loops, leading):
        if tile_stencil(sch, name, tile_config):
            sch.trace.append(f"# {name}: stencil tile over a local plane (not a TVM primitive)")
            return
        if rs.schedule_depthwise(sch, loops, leading, block, realize, lanes, parallel_ok):
            return
    if rest_is_reduce and not _is_contraction(block) and tile_stencil(sch, name, tile_config):
        sch.trace.append(f"# {name}: stencil tile over a local plane (not a TVM primitive)")
        return
    if rest_is_reduce and _is_contraction(block):
        if tile_contraction(sch, name, tile_config):
            sch.trace.append(f"# {name}: register tile with accumulators in registers (not a TVM primitive)")
            return
    if rest_is_reduce and _is_contraction(block) and \
            _schedule_contraction(sch, loops, leading, block, realize, lanes, parallel_ok):
        return
    if rest_is_reduce and not _is_contraction(block) and _contiguous(block, _iter_var_of(block, realize, inner)) \
            and _extent(sch, inner) not in (0, 1) and isinstance(block.body, tir.BufferStore):
        # (a nested reduction, adaptive pooling's window, cannot be vectorised from outside)
        outer, vector_loop = _vector_split(sch, inner, lanes, alone=leading == 1)
        outer_spatial = loops[:leading - 1] + outer
        sch.reorder(*loops[leading:], vector_loop)
        sch.vectorize(vector_loop)
        _parallelize(sch, outer_spatial, parallel_ok)
        return
    if rest_is_reduce and not _is_contraction(block) and \
            rs.schedule_row_reduction(sch, loops, leading, block, lanes, parallel_ok):
        return
    _parallelize(sch, loops[:leading], parallel_ok)


# register tile of a contraction: rows (broadcast operand) x vectors (contiguous operand)
TILE_ROWS = (6, 4, 3, 2)
TILE_VECTORS = 2
SHORT_ROW = 4  # vectors: a row up to this many is one tile, vectorised whole


def _schedule_contraction(sch: Schedule, loops: list, leading: int, block: tir.SBlock,
                          realize: tir.SBlockRealize, lanes: int, parallel_ok: bool) -> bool:
    """A register-blocked micro-kernel for `C[.., i, .., j] += A[.., i, .., r] * B[.., r, .., j]`
    (matmul, dense after its weight transpose, batch matmul, conv2d's oc x ow): j, the last
    spatial loop, is contiguous in C and in one operand; i is a spatial loop the other
    operand reads and the first does not (each A element is broadcast across a vector).

        for <outer spatial>, i_0, j_0 (parallel):          C tile: rows x (vectors * lanes)
          for r...:                                        kept in registers across r
            for i_1 (unroll rows): for j_1 (vectorized vectors * lanes):  C += A * B

    Returns False (nothing changed) when the shape does not fit."""
    from irtool.codegen.schedule import _loads, _uses

    iter_of = {lv: _iter_var_of(block, realize, lv) for lv in loops}
    j_loop = loops[leading - 1]
    j_var = iter_of[j_loop]
    if not _last_index_only(block, j_var):
        return False
    store = block.body
    value = store.value
    product = value.b if isinstance(value.a, tir.BufferLoad) and value.a.buffer is store.buffer else value.a
    while isinstance(product, tir.Cast):
        product = product.value
    sides = [_loads(product.a), _loads(product.b)]
    uses_j = [any(_uses(i, j_var) for ld in side for i in ld.indices) for side in sides]
    if uses_j.count(True) != 1:
        return False
    broadcast = sides[uses_j.index(False)]
    contiguous = sides[uses_j.index(True)]

    def reads(side, var):
        return any(_uses(i, var) for ld in side for i in ld.indices)

    rows = [lv for lv in loops[:leading - 1] if reads(broadcast, iter_of[lv]) and not reads(contiguous, iter_of[lv])]
    j_extent = _extent(sch, j_loop)
    if not rows or j_extent is None:
        return False
    i_loop = rows[-1]
    i_extent = _extent(sch, i_loop)
    vectors = next((v for v in (TILE_VECTORS, 1) if j_extent % (lanes * v) == 0), None)
    if vectors is None and 1 < j_extent <= SHORT_ROW * lanes:
        vectors = 0  # a short row (conv's 28, 14, 7 columns): vectorised whole, LLVM takes the tail
    if vectors is None or i_extent is None:
        return False
    tile_rows = i_extent if i_extent <= TILE_ROWS[0] else next((r for r in TILE_ROWS if i_extent % r == 0), 1)
    others = [lv for lv in loops[:leading] if lv not in (i_loop, j_loop)]
    tile = []
    if tile_rows > 1:
        i_outer, i_inner = sch.split(i_loop, [None, tile_rows]) if tile_rows < i_extent else (None, i_loop)
        tile.append(i_inner)
    else:
        i_outer = i_loop
    if vectors == 0:
        j_outer, j_inner = None, j_loop
        tile.append(j_inner)
    elif vectors > 1:
        j_outer, j_vectors, j_inner = sch.split(j_loop, [None, vectors, lanes])
        tile += [j_vectors, j_inner]
    else:
        j_outer, j_inner = sch.split(j_loop, [None, lanes])
        tile.append(j_inner)
    outer = others + [v for v in (i_outer, j_outer) if v is not None]
    sch.reorder(*outer, *loops[leading:], *tile)
    for loop in tile[:-1]:
        sch.unroll(loop)
    sch.vectorize(j_inner)
    _parallelize(sch, outer, parallel_ok)
    return True


def _last_index_only(block: tir.SBlock, var: tir.Var) -> bool:
    """`var` indexes only the last dimension of every access, with unit stride in the
    block's own store; a load may step by a constant stride (a strided convolution's
    input: LLVM loads interleaved vectors)."""
    from irtool.codegen.schedule import _loads, _own_stores, _uses

    for st in _own_stores(block):
        if any(_uses(i, var) for i in st.indices[:-1]) or not _unit_stride(st.indices[-1], var):
            return False
    return not any(_uses(i, var) for ld in _loads(block.body) for i in ld.indices[:-1])


def _schedule_spatial(sch: Schedule, loops: list, lanes: int, parallel_ok: bool) -> None:
    inner = loops[-1]
    outer, vector_loop = _vector_split(sch, inner, lanes, alone=len(loops) == 1)
    if vector_loop is not None:
        sch.vectorize(vector_loop)
    _parallelize(sch, loops[:-1] + outer, parallel_ok)


def _vector_split(sch: Schedule, loop: tir.Var, lanes: int, alone: bool) -> tuple[list, tir.Var | None]:
    """Split `loop` for vectors: (the loops left for parallelism, the loop to vectorise).
    A multiple of the vector width splits exactly; any other extent is vectorised whole, so
    LLVM's vectoriser handles the tail without a predicate in the loop, unless the loop is
    the only one (its outer part is then needed for parallelism: a predicated tail)."""
    extent = _extent(sch, loop)
    if extent is not None and extent < 2:
        return [loop], None
    if extent is not None and (extent <= lanes or (extent % lanes and not alone)):
        return [], loop
    outer, vector_loop = sch.split(loop, [None, lanes])
    return [outer], vector_loop


def _parallelize(sch: Schedule, loops: list, parallel_ok: bool) -> None:
    if not loops or not parallel_ok:
        return
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    if _extent(sch, fused) != 1:
        sch.parallel(fused)


def _extent(sch: Schedule, loop: tir.Var) -> int | None:
    e = sch.loop(loop).extent
    return e.value if isinstance(e, tir.IntImm) else None


def _one_loop_per_iterator(sch: Schedule, loops: list, realize: tir.SBlockRealize) -> bool:
    """Loops perfectly nested around the block, each binding exactly one iterator."""
    values = list(realize.iter_values)
    if len(values) != len(loops) or any(not isinstance(v, tir.Var) for v in values) or set(values) != set(loops):
        return False
    nodes = [sch.loop(v) for v in loops]
    return all(a.body is b for a, b in zip(nodes, nodes[1:])) and nodes[-1].body is realize


def _iter_var_of(block: tir.SBlock, realize: tir.SBlockRealize, loop: tir.Var) -> tir.Var:
    return block.iter_vars[list(realize.iter_values).index(loop)].var


def _contiguous(block: tir.SBlock, var: tir.Var) -> bool:
    """`var` indexes only the last dimension of the accesses that use it, as `... + var`."""
    from irtool.codegen.schedule import _loads, _own_stores, _uses

    accesses = [ld.indices for ld in _loads(block.body)] + [st.indices for st in _own_stores(block)]
    for indices in accesses:
        if any(_uses(i, var) for i in indices[:-1]):
            return False
        if indices and _uses(indices[-1], var) and not _unit_stride(indices[-1], var):
            return False
    return True


def _unit_stride(e, var) -> bool:
    from irtool.codegen.schedule import _uses

    if e is var:
        return True
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub"):
        a_uses, b_uses = _uses(e.a, var), _uses(e.b, var)
        if a_uses and not b_uses:
            return _unit_stride(e.a, var)
        if b_uses and not a_uses and e.op == "add":
            return _unit_stride(e.b, var)
    return False


def _is_contraction(block: tir.SBlock) -> bool:
    """`C = C + A * B` with A and B loads of different buffers (matmul, conv, dense)."""
    from irtool.codegen.schedule import _loads

    body = block.body
    if not isinstance(body, tir.BufferStore):
        return False
    value = body.value
    if not (isinstance(value, tir.BinOp) and value.op == "add"):
        return False
    product = value.b if isinstance(value.a, tir.BufferLoad) and value.a.buffer is body.buffer else value.a
    while isinstance(product, tir.Cast):
        product = product.value
    if not (isinstance(product, tir.BinOp) and product.op == "mul"):
        return False
    left = {ld.buffer for ld in _loads(product.a)}
    right = {ld.buffer for ld in _loads(product.b)}
    return bool(left) and bool(right) and not (left & right)


def schedule_module(mod: IRModule, config: CpuScheduleConfig) -> tuple[IRModule, dict[str, list[str]]]:
    """Every PrimFunc of `mod` scheduled, and the trace of each one scheduled. Weights packed
    by a contraction tile are packed in the Relax callers' constants."""
    functions = dict(mod.functions)
    traces = {}
    constant_params = _constant_params(mod)
    packings = {}
    for name, fn in mod.functions.items():
        if not isinstance(fn, tir.PrimFunc):
            continue
        sch = schedule_prim_func(fn, replace(config, constant_params=constant_params.get(name, frozenset())), name)
        if sch is None:
            continue
        attrs = dict(sch.func.attrs)
        attrs[SCHEDULED_ATTR] = True
        functions[name] = sch.func.replace(attrs=tuple(sorted(attrs.items(), key=lambda kv: kv[0].encode())))
        traces[name] = sch.trace
        if sch.packings:
            packings[name] = sch.packings
    if packings:
        for name, fn in functions.items():
            if isinstance(fn, rx.Function):
                functions[name] = _PackConstants(packings).visit_expr(fn)
    out = mod.with_functions(functions)
    out.bare = mod.bare
    return out, traces


def _call_tir_args(call) -> tuple[str, list] | None:
    if not (isinstance(call, rx.Call) and getattr(call.op, "name", None) == "relax.call_tir"):
        return None
    args = call.args[1]
    return call.args[0].name_hint, list(args.fields_) if isinstance(args, rx.Tuple) else [args]


def _constant_params(mod: IRModule) -> dict[str, frozenset]:
    """Per PrimFunc called from Relax: the parameter positions where every call passes a
    constant (a PrimFunc never called from Relax has none: its callers are unknown)."""
    from irtool.ir.relax_visitor import ExprVisitor

    seen: dict[str, set] = {}
    references: dict[str, int] = {}  # every mention of a function; a call_tir's callee is one

    class Calls(ExprVisitor):
        def visit_call_(self, e):
            parts = _call_tir_args(e)
            if parts is not None:
                name, args = parts
                const = {k for k, a in enumerate(args) if isinstance(a, rx.Constant) and a.data is not None}
                seen[name] = seen[name] & const if name in seen else const
                references[name] = references.get(name, 0) - 1
            super().visit_call_(e)

        def visit_global_var_(self, gv):
            references[gv.name_hint] = references.get(gv.name_hint, 0) + 1

    for fn in mod.functions.values():
        if isinstance(fn, rx.Function):
            Calls().visit_expr(fn)
    # a function also mentioned other than as a call_tir callee has callers we cannot rewrite
    return {name: frozenset(ks) for name, ks in seen.items() if references.get(name, 0) == 0}


class _PackConstants(ExprMutator):
    """Constant arguments of packed parameters replaced by their packed panels."""

    def __init__(self, packings: dict) -> None:
        super().__init__()
        self.packings = packings

    def visit_call_(self, e):
        parts = _call_tir_args(e)
        if parts is None or parts[0] not in self.packings:
            return super().visit_call_(e)
        name, args = parts
        packed = [rx.Constant(self.packings[name][k].apply(a.data)) if k in self.packings[name] else a
                  for k, a in enumerate(args)]
        call = rx.Call(e.op, [e.args[0], rx.Tuple(packed), *e.args[2:]], e.attrs, e.sinfo_args, e.span)
        call.struct_info = e.struct_info
        return call


@register
@dataclass(frozen=True)
class DefaultCpuSchedule(ModulePass):
    name = "default-cpu-schedule"
    tvm_name = "ApplyDefaultSchedule"
    opt_level = 0
    summary = "Inline elementwise chains, parallelise and vectorise every PrimFunc for the host CPU"

    # 0: the host's vector width (host_cpu() features); else 128, 256, 512
    vector_bits: int = 0
    # fewer iterations than this in a loop nest: no parallel loop
    min_parallel_work: int = 4096  # (16384 before: ResNet-20 and MobileNetV2 4-5% slower at 2 threads on Zen 4)
    # 1: contraction tiles may fuse multiply-adds (on hosts with FMA), as TVM's LLVM target
    # does; 0: keep every product rounded, results bit-identical to the interpreter
    fp_contract: int = 1
    # 0: the host's L1 associativity (sysfs); a register tile's rows of A that fall in one L1
    # set (rows 4 KiB apart) are at most this less two
    l1_ways: int = 0

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        config = CpuScheduleConfig(self.vector_bits or host_vector_bits(), self.min_parallel_work,
                                   bool(self.fp_contract) and host_has_fma(), l1_ways=self.l1_ways)
        return schedule_module(mod, config)[0]
