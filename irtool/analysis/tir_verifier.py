"""The TIR verifier: is a PrimFunc well formed? (TVM's `tir.analysis.verify_well_formed`.)

    definitions     every variable used is defined, and used only inside the scope that
                    defines it: parameters, the shape/stride/offset variables of the
                    `buffer_map` and `match_buffer` buffers, loop, let, Allocate and block
                    iterator variables
    SSA             a loop, let, Allocate or block iterator variable is not defined again
                    inside its own scope
    buffers         every buffer used (loaded, stored, in reads/writes, matched) is declared
                    by `buffer_map`, `alloc_buffers`, `match_buffers` or a DeclBuffer that
                    encloses the use — or is a view of live memory (its data pointer is a
                    defined variable or belongs to a declared buffer: TVM's `A.view(...)`,
                    `T.Buffer(shape, data=A.data)`) — and is indexed with one index per dimension
    blocks          as many iter_values as iterators; a loop variable defined outside a
                    block with iterators is not used inside it (the block uses its own
                    iterators, bound to the loops by the iter_values); `T.init()` only in a
                    block with a reduction iterator; read/write regions have one range per
                    dimension of their buffer

The walk is iterative (an explicit stack), so long expression chains and deep LetStmt
nests do not hit Python's recursion limit. The first problem found is raised as a
DiagnosticError at the span of the innermost node that has one.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir import tir

# What defines a variable, for messages.
PARAM, SHAPE, LOOP, LET, BLOCK_ITER, ALLOCATE, THREAD = (
    "parameter", "buffer shape variable", "loop variable", "let variable", "block iterator",
    "Allocate variable", "thread variable")


def verify_prim_func(func: tir.PrimFunc, name: str = "") -> None:
    """Raise a DiagnosticError for the first well-formedness problem of `func`."""
    _Verifier(func, name or str(func.attr("global_symbol") or "")).run()


def _plural(n: int, word: str, words: str = "") -> str:
    return f"{n} {word if n == 1 else words or word + 's'}"


class _Verifier:
    def __init__(self, func: tir.PrimFunc, name: str) -> None:
        self.func = func
        self.where = f"in `@{name}`: " if name else ""
        self.defined: dict[tir.Var, str] = {}  # variables in scope -> what defines them
        self.seen: dict[tir.Var, tuple[str, str]] = {}  # every definition met so far -> (kind, owner)
        self.loop_level: dict[tir.Var, int] = {}  # loop variable -> blocks with iterators around its loop
        self.blocks: list[tir.SBlock] = []  # enclosing blocks that have iterators
        self.buffers: dict[tir.Buffer, int] = {}  # buffers in scope (a count: a buffer may be re-declared)
        self.live_data: dict[object, int] = {}  # the data pointers of the buffers in scope
        self.stack: list = []

    def fail(self, msg: str, span) -> None:
        raise DiagnosticError(self.where + msg, span)

    # ------------------------------------------------------------------ scopes

    def define(self, var: tir.Var, kind: str, span, owner: str = "") -> None:
        if var in self.defined:
            prev = self.defined[var]
            self.fail(f"{kind} `{var.name}` is defined again inside the scope of its definition (as a {prev}); "
                      "TIR is SSA: use a new variable", span or var.span)
        self.defined[var] = kind
        self.seen[var] = (kind, owner)

    def undefine(self, var: tir.Var) -> None:
        self.defined.pop(var, None)
        self.loop_level.pop(var, None)

    def declare(self, buffer: tir.Buffer) -> None:
        self.buffers[buffer] = self.buffers.get(buffer, 0) + 1
        self.live_data[buffer.data] = self.live_data.get(buffer.data, 0) + 1

    def undeclare(self, buffer: tir.Buffer) -> None:
        for table, key in ((self.buffers, buffer), (self.live_data, buffer.data)):
            n = table[key] - 1
            if n:
                table[key] = n
            else:
                del table[key]

    def define_implicit(self, buffer: tir.Buffer, span, kind: str = SHAPE) -> list:
        """A buffer_map/match_buffer buffer defines the variables that are its whole shape
        dimensions, strides or elem_offset, and its data pointer; the other expressions
        in those places are uses, checked afterwards (returned)."""
        uses = []
        for e in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(e, tir.Var):
                if e not in self.defined:
                    self.define(e, kind, span, buffer.name)
            elif e is not None:
                uses.append(e)
        if isinstance(buffer.data, tir.Var) and buffer.data not in self.defined:
            self.define(buffer.data, "data pointer", span, buffer.name)
        return uses

    def use_buffer(self, buffer: tir.Buffer, span, what: str) -> None:
        if buffer in self.buffers:
            return
        data = buffer.data
        if data in self.live_data or (isinstance(data, tir.Var) and data in self.defined):
            # a view of live memory (TVM prints these `A_1 = A.view(16384)` or
            # `T.Buffer(shape, data=A.data)`, with no DeclBuffer): its shape must be defined here
            self.push(span, *_buffer_exprs(buffer))
            return
        self.fail(f"buffer `{buffer.name}` is {what} but not declared (declare it in the buffer_map, "
                  "alloc_buffers, match_buffers or with a DeclBuffer around the use)", span or buffer.span)

    def check_rank(self, buffer: tir.Buffer, n: int, span, what: str) -> None:
        rank = len(buffer.shape)
        if n != rank:
            self.fail(f"buffer `{buffer.name}` has {_plural(rank, 'dimension')} but is {what} "
                      f"{_plural(n, 'index', 'indices')}", span)

    def use_var(self, var: tir.Var, span) -> None:
        if var not in self.defined:
            kind, owner = self.seen.get(var, (None, ""))
            if kind == BLOCK_ITER:
                self.fail(f"block iterator `{var.name}` of block `{owner}` is used outside its block", span)
            if kind is not None:
                self.fail(f"{kind} `{var.name}` is used outside the scope that defines it", span)
            self.fail(f"variable `{var.name}` is used but not defined", span)
        level = self.loop_level.get(var)
        if level is not None and level < len(self.blocks):
            blk = self.blocks[-1]
            self.fail(f"loop variable `{var.name}` is used inside block `{blk.name}`, which has iterators: "
                      "inside a block, use the block iterators (bound to the loops by its iter_values)", span)

    # ------------------------------------------------------------------ the walk

    def run(self) -> None:
        func = self.func
        span = func.span
        for p in func.params:
            self.define(p, PARAM, p.span or span)
        uses = []
        params = set(func.params)
        for p, buffer in func.buffer_map:
            if p not in params:
                self.fail(f"buffer_map entry for buffer `{buffer.name}` names `{p.name}`, which is not a parameter",
                          buffer.span or span)
            uses += self.define_implicit(buffer, buffer.span or span)
            self.declare(buffer)
        stack = self.stack
        stack.append((func.body, span))
        stack.extend((e, span) for e in reversed(uses))
        while stack:
            item, span = stack.pop()
            if callable(item):
                item()
                continue
            if item is None:
                continue
            if type(item) is not tir.Var:  # a Var's own span is where it is defined, not this use
                span = item.span or span
            method = getattr(self, "v_" + type(item).__name__, None)
            if method is not None:
                method(item, span)
            elif isinstance(item, tir.PrimExpr):  # BinOp, Not, Cast, Select, Call, Ramp, Broadcast...
                self.push(span, *(c for c in _sub_exprs(item)))

    def push(self, span, *items) -> None:
        """Visit `items` in order (they are pushed reversed)."""
        self.stack.extend((x, span) for x in reversed(items))

    # expressions

    def v_Var(self, e: tir.Var, span) -> None:
        self.use_var(e, span)

    def v_IntImm(self, e, span) -> None:
        pass

    v_FloatImm = v_StringImm = v_IntImm

    def v_BufferLoad(self, e: tir.BufferLoad, span) -> None:
        self.use_buffer(e.buffer, span, "loaded")
        self.check_rank(e.buffer, len(e.indices), span, "loaded with")
        self.push(span, *e.indices)

    def v_Let(self, e: tir.Let, span) -> None:
        self.push(span, e.value, lambda: self.define(e.var, LET, span), e.body, lambda: self.undefine(e.var))

    # statements

    def v_BufferStore(self, s: tir.BufferStore, span) -> None:
        self.use_buffer(s.buffer, span, "stored to")
        self.check_rank(s.buffer, len(s.indices), span, "stored to with")
        self.push(span, s.value, *s.indices)

    def v_LetStmt(self, s: tir.LetStmt, span) -> None:
        self.push(span, s.value, lambda: self.define(s.var, LET, span), s.body, lambda: self.undefine(s.var))

    def v_AttrStmt(self, s: tir.AttrStmt, span) -> None:
        node = s.node
        value = s.value if isinstance(s.value, tir.PrimExpr) else None
        if isinstance(node, tir.IterVar) and s.attr_key in ("thread_extent", "virtual_thread"):
            var = node.var  # `T.launch_thread`: the thread variable is defined for the body
            self.push(span, value, lambda: self.define(var, THREAD, span), s.body, lambda: self.undefine(var))
            return
        self.push(span, node if isinstance(node, tir.PrimExpr) else None, value, s.body)

    def v_AssertStmt(self, s: tir.AssertStmt, span) -> None:
        parts = [p for p in s.message_parts if isinstance(p, tir.PrimExpr)]
        self.push(span, s.condition, *parts, s.body)

    def v_For(self, s: tir.For, span) -> None:
        var = s.loop_var

        def enter() -> None:
            self.define(var, LOOP, span)
            self.loop_level[var] = len(self.blocks)

        self.push(span, s.min, s.extent, enter, s.body, lambda: self.undefine(var))

    def v_While(self, s: tir.While, span) -> None:
        self.push(span, s.condition, s.body)

    def v_IfThenElse(self, s: tir.IfThenElse, span) -> None:
        self.push(span, s.condition, s.then_case, s.else_case)

    def v_Evaluate(self, s: tir.Evaluate, span) -> None:
        self.push(span, s.value)

    v_Return = v_Evaluate

    def v_SeqStmt(self, s: tir.SeqStmt, span) -> None:
        self.push(span, *s.seq)

    def v_Allocate(self, s: tir.Allocate, span) -> None:
        var = s.buffer_var
        self.push(span, *s.extents, s.condition, lambda: self.define(var, ALLOCATE, span), s.body,
                  lambda: self.undefine(var))

    def v_DeclBuffer(self, s: tir.DeclBuffer, span) -> None:
        buffer = s.buffer
        fresh = []

        def enter() -> None:
            self.declare(buffer)
            if isinstance(buffer.data, tir.Var) and buffer.data not in self.defined:  # new memory
                self.define(buffer.data, "data pointer", span, buffer.name)
                fresh.append(buffer.data)

        def leave() -> None:
            self.undeclare(buffer)
            for v in fresh:
                self.undefine(v)

        data = [] if isinstance(buffer.data, tir.Var) else [buffer.data]  # TVM 0.27 allows an expression
        self.push(span, *data, *_buffer_exprs(buffer), enter, s.body, leave)

    def v_SBlockRealize(self, s: tir.SBlockRealize, span) -> None:
        block = s.block
        if len(s.iter_values) != len(block.iter_vars):
            self.fail(f"block `{block.name}` has {_plural(len(block.iter_vars), 'iterator')} but its realize "
                      f"binds {_plural(len(s.iter_values), 'value')}", span)
        self.push(span, *s.iter_values, s.predicate, block)

    def v_SBlock(self, b: tir.SBlock, span) -> None:
        has_iters = bool(b.iter_vars)
        if b.init is not None and not any(iv.iter_type == tir.COMM_REDUCE for iv in b.iter_vars):
            self.fail(f"block `{b.name}` has an init statement but no reduction iterator: `T.init()` runs at the "
                      "start of a reduction, so the block needs a reduce (\"R\") iterator", span)
        doms = [x for iv in b.iter_vars if iv.dom is not None for x in (iv.dom.min, iv.dom.extent)]
        declared: list[tir.Buffer] = []
        defined: list[tir.Var] = []

        def enter() -> None:
            for iv in b.iter_vars:
                self.define(iv.var, BLOCK_ITER, iv.span or span, b.name)
                defined.append(iv.var)
            if has_iters:
                self.blocks.append(b)
            uses = []
            for buffer in b.alloc_buffers:
                uses += _buffer_exprs(buffer)
                if buffer.data not in self.defined:
                    self.define(buffer.data, "data pointer", span, buffer.name)
                    defined.append(buffer.data)
                self.declare(buffer)
                declared.append(buffer)
            matches = []
            for m in b.match_buffers:
                uses += self.region(m.source, span, "matched")
                before = set(self.defined)
                uses += self.define_implicit(m.buffer, m.span or span)
                defined.extend(v for v in self.defined if v not in before)
                matches.append(m.buffer)
            for buffer in matches:
                self.declare(buffer)
                declared.append(buffer)
            for r in b.reads:
                uses += self.region(r, span, "read")
            for r in b.writes:
                uses += self.region(r, span, "written")
            self.push(span, *uses, b.init, b.body, leave)

        def leave() -> None:
            for buffer in declared:
                self.undeclare(buffer)
            for v in defined:
                self.undefine(v)
            if has_iters:
                self.blocks.pop()

        self.push(span, *doms, enter)

    def region(self, r: tir.BufferRegion, span, what: str) -> list:
        """Check a region's buffer and rank; returns the expressions of its ranges."""
        span = r.span or span
        self.use_buffer(r.buffer, span, what)
        rank = len(r.buffer.shape)
        if len(r.region) != rank:
            self.fail(f"{what} region of buffer `{r.buffer.name}` has {_plural(len(r.region), 'range')}, "
                      f"but the buffer has {_plural(rank, 'dimension')}", span)
        return [x for rng in r.region for x in (rng.min, rng.extent)]


def _buffer_exprs(buffer: tir.Buffer) -> list:
    return [e for e in (*buffer.shape, *buffer.strides, buffer.elem_offset) if e is not None]


def _sub_exprs(e: tir.PrimExpr):
    for f in e.fields:
        v = getattr(e, f)
        if isinstance(v, tir.PrimExpr):
            yield v
        elif isinstance(v, tuple):
            yield from (x for x in v if isinstance(x, tir.PrimExpr))


__all__ = ["verify_prim_func"]
