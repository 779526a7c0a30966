"""The op pattern of a TIR PrimFunc: TVM 0.27's `AnalyzeOpPatternKind`
(src/relax/analysis/tir_op_pattern_kind.cc), which Relax's fuse-ops reads through the
`op_pattern` attribute that annotate-tir-op-pattern writes.

The function body is walked once, in TVM's StmtExprVisitor order, keeping a running
`kind` (it starts at kElemWise and only ever grows):

    every non-root block:   loads := [], store := none; visit the block body (not its init)
        no store seen                       -> kOpaque
        compare the store with each load:   elemwise   C[i, j] = A[i, j]   (same index objects)
                                            broadcast  C[i, j] = B[j]     (load indices in order)
                                            injective  C[i, j] = A[j, i]  (no var outside the store's)
                                            anything else: the block is not index-only
        index-only block:  written to a parameter after a reduction (softmax) -> kOutEWiseFusable,
                           else kind = max(kind, worst pair; broadcast next to elemwise counts
                           as elemwise)
        otherwise, with reduction iterators:
            C[..] = C[..] + A[..] * B[..] (casts ignored), each input missing a store var
                                                           -> max(kind, kOutEWiseFusable)
            a load indexed by an expression of a reduction var (pooling)
                                                           -> max(kind, kOutEWiseFusable)
            else                                           -> max(kind, kCommReduce)
        otherwise                                          -> kOpaque
    a second store (anywhere) whose indices differ from the block's -> kOpaque

"Same index" is TVM's `same_as`, object identity: two separately written `0`s are not
the same, so `B[0, j] = A[0, j]` is not elementwise. Loads inside loads count (`A[B[i]]`
also loads `B[i]`), and an index that reads a buffer uses a variable no store index is.
"""

from __future__ import annotations

from irtool.ir import tir
from irtool.ops.registry import OpPattern

OP_PATTERN_ATTR = "op_pattern"


def analyze_op_pattern_kind(func: tir.PrimFunc) -> int:
    """TVM's `AnalyzeOpPatternKind`: the OpPattern number (0..8) of `func`'s computation."""
    analyzer = _PatternKindAnalyzer(func)
    analyzer.visit_stmt(func.body)
    return analyzer.kind


def op_pattern_attr(func: tir.PrimFunc) -> int | None:
    """The `op_pattern` attribute of `func` as an int (what fuse-ops reads), or None."""
    value = func.attr(OP_PATTERN_ATTR)
    if isinstance(value, tir.IntImm):
        return value.value
    return int(value) if isinstance(value, (int, bool)) else None


# --------------------------------------------------------------------------- the walk


class _PatternKindAnalyzer:
    def __init__(self, func: tir.PrimFunc) -> None:
        self.param_buffers = {id(buf) for _, buf in func.buffer_map}
        self.store: tir.BufferStore | None = None
        self.loads: list[tir.BufferLoad] = []
        self.kind = OpPattern.ELEMWISE

    # statements: TVM's StmtVisitor order (expressions of a node before its body)
    def visit_stmt(self, s: tir.Stmt | None) -> None:
        if s is None:
            return
        kind = type(s)
        if kind is tir.SeqStmt:
            for child in s.seq:
                self.visit_stmt(child)
        elif kind is tir.SBlockRealize:
            self.visit_exprs(s.iter_values)
            self.visit_exprs((s.predicate,))
            self.visit_block(s.block)
        elif kind is tir.SBlock:
            self.visit_block(s)
        elif kind is tir.BufferStore:
            self.visit_store(s)
        elif kind is tir.For:
            self.visit_exprs((s.min, s.extent))
            self.visit_stmt(s.body)
        elif kind in (tir.While, tir.IfThenElse):
            self.visit_exprs((s.condition,))
            if kind is tir.While:
                self.visit_stmt(s.body)
            else:
                self.visit_stmt(s.then_case)
                self.visit_stmt(s.else_case)
        elif kind in (tir.LetStmt, tir.AttrStmt):
            self.visit_exprs((s.value,))
            self.visit_stmt(s.body)
        elif kind is tir.AssertStmt:
            self.visit_exprs((s.condition, *s.message_parts))
            self.visit_stmt(s.body)
        elif kind is tir.Allocate:
            self.visit_exprs((*s.extents, s.condition))
            self.visit_stmt(s.body)
        elif kind is tir.DeclBuffer:
            self.visit_stmt(s.body)
        elif kind in (tir.Evaluate, tir.Return):
            self.visit_exprs((s.value,))

    def visit_exprs(self, exprs) -> None:
        """Collect every BufferLoad in `exprs`, loads inside load indices included."""
        stack = [e for e in exprs if isinstance(e, tir.PrimExpr)]
        while stack:
            e = stack.pop()
            if type(e) is tir.BufferLoad:
                self.loads.append(e)
            stack.extend(c for c in _sub_exprs(e) if isinstance(c, tir.PrimExpr))

    def visit_store(self, store: tir.BufferStore) -> None:
        # TVM supports one store per block (what TE compute generates)
        if self.store is not None and not _same_array(store.indices, self.store.indices):
            self.kind = OpPattern.OPAQUE
            return
        self.store = store
        self.visit_exprs((store.value, *store.indices))

    def visit_block(self, block: tir.SBlock) -> None:
        if block.name == "root":
            self.visit_stmt(block.body)
            return
        self.loads = []
        self.store = None
        self.visit_stmt(block.body)
        store = self.store
        if store is None:
            self.kind = OpPattern.OPAQUE
            return

        index_pattern = _index_pattern(store, self.loads)
        if index_pattern != OpPattern.OPAQUE:
            writes_param = any(id(w.buffer) in self.param_buffers for w in block.writes)
            if writes_param and self.kind == OpPattern.COMM_REDUCE:
                self.kind = OpPattern.OUT_ELEMWISE_FUSABLE  # reduce, then elementwise: softmax
            else:
                self.kind = max(self.kind, index_pattern)
            return

        reduce_vars = [iv.var for iv in block.iter_vars if iv.iter_type == tir.COMM_REDUCE]
        if not reduce_vars:
            self.kind = OpPattern.OPAQUE
        elif _is_fma(block.body) or not all(_is_pure_reduce(reduce_vars, load.indices) for load in self.loads):
            # matmul and conv (multiply-add), pooling (windowed reduction)
            self.kind = max(self.kind, OpPattern.OUT_ELEMWISE_FUSABLE)
        else:
            self.kind = max(self.kind, OpPattern.COMM_REDUCE)


def _index_pattern(store: tir.BufferStore, loads: list[tir.BufferLoad]) -> int:
    """The worst store/load index relation of a block, or OPAQUE when some load fits none."""
    pattern = OpPattern.ELEMWISE
    has_elemwise = False
    for load in loads:
        if _same_array(store.indices, load.indices):
            has_elemwise = True
        elif _is_broadcast(store, load):
            pattern = max(pattern, OpPattern.BROADCAST)
        elif _is_injective(store, load):
            pattern = max(pattern, OpPattern.INJECTIVE)
        else:
            return OpPattern.OPAQUE
    # C[i, j] = A[i, j] + B[j] is elementwise: broadcast next to an elementwise input
    if pattern == OpPattern.BROADCAST and has_elemwise:
        return OpPattern.ELEMWISE
    return pattern


# --------------------------------------------------------------------------- index relations


def _same_array(lhs, rhs) -> bool:
    """TVM's IsSameArray: element-wise `same_as` (object identity)."""
    return len(lhs) == len(rhs) and all(a is b for a, b in zip(lhs, rhs, strict=True))


def _is_const_int(e, value: int) -> bool:
    if type(e) is tir.Broadcast:
        e = e.value
    return type(e) is tir.IntImm and e.value == value


def _is_broadcast(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """Every load index (unit dimensions read at 0 aside) is a store index, in order."""
    store_ndim = len(store.buffer.shape)
    j = 0
    for i, extent in enumerate(load.buffer.shape):
        index = load.indices[i] if i < len(load.indices) else None
        if _is_const_int(extent, 1) and _is_const_int(index, 0):
            continue
        while j < store_ndim and not (j < len(store.indices) and store.indices[j] is index):
            j += 1
        if j == store_ndim:
            return False
    return True


def _store_vars(store: tir.BufferStore) -> set[int] | None:
    """The ids of the store's index variables, or None when some index is not a variable."""
    if not all(type(index) is tir.Var for index in store.indices):
        return None
    return {id(index) for index in store.indices}


def _is_injective(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """The store indices are variables and the load indices use no other variable."""
    allowed = _store_vars(store)
    if allowed is None:
        return False
    return not any(_uses_var(index, lambda v: id(v) not in allowed) for index in load.indices)


def _misses_a_store_var(store: tir.BufferStore, load: tir.BufferLoad) -> bool:
    """TVM's IsAllowReusePattern: some store index variable does not occur in the load's
    indices (the input is reused across it, as A is across j in C[i, j] += A[i, k] * B[k, j])."""
    remaining = _store_vars(store)
    if remaining is None:
        return False
    for index in load.indices:
        stack = [index]
        while stack:
            e = stack.pop()
            if type(e) is tir.Var:
                remaining.discard(id(e))
            stack.extend(c for c in _sub_exprs(e) if isinstance(c, tir.PrimExpr))
    return bool(remaining)


def _remove_cast(e):
    while type(e) is tir.Cast:
        e = e.value
    return e


def _is_binop(e, op: str) -> bool:
    return type(e) is tir.BinOp and e.op == op


def _is_fma(body: tir.Stmt) -> bool:
    """`C[..] = C[..] + A[..] * B[..]`, casts allowed, A and B each reused across a store var."""
    if type(body) is not tir.BufferStore:
        return False
    add = _remove_cast(body.value)
    if not _is_binop(add, "add"):
        return False
    mul = _remove_cast(add.b)
    if not _is_binop(mul, "mul"):
        return False
    acc = _remove_cast(add.a)
    if type(acc) is not tir.BufferLoad or acc.buffer is not body.buffer or not _same_array(body.indices, acc.indices):
        return False
    lhs, rhs = _remove_cast(mul.a), _remove_cast(mul.b)
    if type(lhs) is not tir.BufferLoad or type(rhs) is not tir.BufferLoad:
        return False
    return _misses_a_store_var(body, lhs) and _misses_a_store_var(body, rhs)


def _is_pure_reduce(reduce_vars, indices) -> bool:
    """Every index that mentions a reduction variable is that variable itself."""
    reduce_ids = {id(v) for v in reduce_vars}
    return all(not _uses_var(index, lambda v: id(v) in reduce_ids) or id(index) in reduce_ids
               for index in indices)


def _uses_var(e, wanted) -> bool:
    """TVM's UsesVar: some variable of `e` satisfies `wanted`; a load counts its buffer's
    data variable, so a data-dependent index uses a variable no loop defines."""
    stack = [e]
    while stack:
        e = stack.pop()
        if type(e) is tir.Var and wanted(e):
            return True
        if type(e) is tir.BufferLoad and wanted(e.buffer.data):
            return True
        stack.extend(c for c in _sub_exprs(e) if isinstance(c, tir.PrimExpr))
    return False


def _sub_exprs(e) -> tuple:
    """The operand expressions of a PrimExpr, as TVM's ExprVisitor visits them."""
    kind = type(e)
    if kind is tir.BinOp:
        return (e.a, e.b)
    if kind is tir.BufferLoad:
        return e.indices
    if kind is tir.Call:
        return e.args
    if kind in (tir.Cast, tir.Broadcast):
        return (e.value,)
    if kind is tir.Not:
        return (e.a,)
    if kind is tir.Select:
        return (e.condition, e.true_value, e.false_value)
    if kind is tir.Let:
        return (e.value, e.body)
    if kind is tir.Ramp:
        return (e.base, e.stride)
    return ()
