"""TIR: the loop-level IR of TVM (`T.prim_func` in TVMScript).

A `PrimFunc` takes scalar `Var`s and handles; `buffer_map` views each handle as a
`Buffer` (a typed, shaped array). Its body is a statement tree:

    For(i, 0, 4) ─ SBlockRealize(iter_values=[i]) ─ SBlock("C", iter_vars=[vi: S],
                                                       reads, writes, init?, body)
                                                     └ BufferStore(C, A[vi] + 1, [vi])

Expressions (`PrimExpr`) carry a dtype. Binary arithmetic, comparisons and `and`/`or` are
one class, `BinOp`, keyed by the operator's name (`BINARY_OPS` is the table); intrinsics
such as `T.exp` are `Call`s of an op name (`tirx.exp`). Statements whose scope is "the
rest of the block" (LetStmt, DeclBuffer, Allocate, AssertStmt, AttrStmt) own a `body`,
as in classic TVM; the printer writes them flat, as TVM does.

Variables and buffers are compared by identity; `structural_equal` maps them.
"""

from __future__ import annotations

from .node import Node

# ----------------------------------------------------------------------------- types


class PointerType(Node):
    """The type of a handle variable that points at `element_dtype` data in `scope`."""

    __slots__ = ("element_dtype", "scope")
    fields = ("element_dtype", "scope")

    def __init__(self, element_dtype: str, scope: str = "global") -> None:
        self.element_dtype = element_dtype
        self.scope = scope
        self.span = None


# ----------------------------------------------------------------------------- expressions


class PrimExpr(Node):
    __slots__ = ("dtype",)


class IntImm(PrimExpr):
    __slots__ = ("value",)
    fields = ("dtype", "value")

    def __init__(self, value: int, dtype: str = "int32", span=None) -> None:
        self.value = int(value)
        self.dtype = dtype
        self.span = span


class FloatImm(PrimExpr):
    __slots__ = ("value",)
    fields = ("dtype", "value")

    def __init__(self, value: float, dtype: str = "float32", span=None) -> None:
        self.value = float(value)
        self.dtype = dtype
        self.span = span


class StringImm(PrimExpr):
    """A string. `value` is None only for a `metadata["ir.StringImm"][meta_index]`
    reference read from a file without its metadata section."""

    __slots__ = ("value", "meta_index")
    fields = ("value", "meta_index")

    def __init__(self, value: str | None, span=None, meta_index: int | None = None) -> None:
        self.value = value
        self.meta_index = meta_index
        self.dtype = "handle"
        self.span = span


class Var(PrimExpr):
    """A scalar variable or handle; `type_annotation` is a PointerType for typed handles."""

    __slots__ = ("name", "type_annotation")
    fields = ("dtype", "type_annotation")

    def __init__(self, name: str, dtype: str = "int32", type_annotation: PointerType | None = None,
                 span=None) -> None:
        self.name = name
        self.dtype = dtype
        self.type_annotation = type_annotation
        self.span = span

    def __repr__(self) -> str:
        return f"tir.Var({self.name}: {self.dtype})"


# name -> (TVMScript spelling, infix?, result is bool?)
BINARY_OPS: dict[str, tuple[str, bool, bool]] = {
    "add": ("+", True, False),
    "sub": ("-", True, False),
    "mul": ("*", True, False),
    "div": ("/", True, False),
    "floordiv": ("//", True, False),
    "floormod": ("%", True, False),
    "truncdiv": ("T.truncdiv", False, False),
    "truncmod": ("T.truncmod", False, False),
    "min": ("T.min", False, False),
    "max": ("T.max", False, False),
    "eq": ("==", True, True),
    "ne": ("!=", True, True),
    "lt": ("<", True, True),
    "le": ("<=", True, True),
    "gt": (">", True, True),
    "ge": (">=", True, True),
    "and": ("and", True, True),
    "or": ("or", True, True),
}


class BinOp(PrimExpr):
    __slots__ = ("op", "a", "b")
    fields = ("op", "dtype", "a", "b")

    def __init__(self, op: str, a: PrimExpr, b: PrimExpr, span=None) -> None:
        if op not in BINARY_OPS:
            raise ValueError(f"unknown TIR binary operator {op!r}")
        self.op = op
        self.a = a
        self.b = b
        self.dtype = _binop_dtype(op, a)
        self.span = span

    def replace(self, **changes):
        new = super().replace(**changes)
        if ("a" in changes or "op" in changes) and "dtype" not in changes:
            object.__setattr__(new, "dtype", _binop_dtype(new.op, new.a))
        return new


def _binop_dtype(op: str, a: PrimExpr) -> str:
    lanes = _lanes(a.dtype)
    return ("bool" if lanes == 1 else f"boolx{lanes}") if BINARY_OPS[op][2] else a.dtype


class Not(PrimExpr):
    __slots__ = ("a",)
    fields = ("a",)

    def __init__(self, a: PrimExpr, span=None) -> None:
        self.a = a
        self.dtype = a.dtype
        self.span = span


class Cast(PrimExpr):
    __slots__ = ("value",)
    fields = ("dtype", "value")

    def __init__(self, dtype: str, value: PrimExpr, span=None) -> None:
        self.dtype = dtype
        self.value = value
        self.span = span


class Select(PrimExpr):
    __slots__ = ("condition", "true_value", "false_value")
    fields = ("condition", "true_value", "false_value")

    def __init__(self, condition: PrimExpr, true_value: PrimExpr, false_value: PrimExpr, span=None) -> None:
        self.condition = condition
        self.true_value = true_value
        self.false_value = false_value
        self.dtype = true_value.dtype
        self.span = span


class BufferLoad(PrimExpr):
    __slots__ = ("buffer", "indices")
    fields = ("buffer", "indices")

    def __init__(self, buffer: Buffer, indices, span=None) -> None:
        self.buffer = buffer
        self.indices = tuple(indices)
        self.dtype = _load_dtype(buffer, self.indices)
        self.span = span

    def replace(self, **changes):
        new = super().replace(**changes)
        if "indices" in changes or "buffer" in changes:
            object.__setattr__(new, "dtype", _load_dtype(new.buffer, new.indices))
        return new


def _load_dtype(buffer: Buffer, indices) -> str:
    """The buffer's dtype, with the lanes of a vector index (a Ramp): TVM's BufferLoad dtype."""
    lanes = max((_lanes(i.dtype) for i in indices if isinstance(i, PrimExpr)), default=1)
    return buffer.dtype if lanes == 1 else f"{buffer.dtype}x{lanes}"


class Call(PrimExpr):
    """An intrinsic call: `op` is its registered name (`tirx.exp`, `tirx.if_then_else`).
    Arguments are PrimExprs, except where an intrinsic takes a dtype (a `str`). A call
    returning a typed handle keeps its pointer type (`T.handle("int64", "global").ty`)."""

    __slots__ = ("op", "args", "type_annotation")
    fields = ("dtype", "op", "args", "type_annotation")

    def __init__(self, dtype: str, op: str, args, span=None, type_annotation: PointerType | None = None) -> None:
        self.dtype = dtype
        self.op = op
        self.args = tuple(args)
        self.type_annotation = type_annotation  # a handle result's pointer type
        self.span = span


class Let(PrimExpr):
    __slots__ = ("var", "value", "body")
    fields = ("var", "value", "body")

    def __init__(self, var: Var, value: PrimExpr, body: PrimExpr, span=None) -> None:
        self.var = var
        self.value = value
        self.body = body
        self.dtype = body.dtype
        self.span = span


class Ramp(PrimExpr):
    __slots__ = ("base", "stride", "lanes")
    fields = ("base", "stride", "lanes")

    def __init__(self, base: PrimExpr, stride: PrimExpr, lanes: int, span=None) -> None:
        self.base = base
        self.stride = stride
        self.lanes = lanes
        self.dtype = f"{base.dtype}x{lanes}"
        self.span = span


class Broadcast(PrimExpr):
    __slots__ = ("value", "lanes")
    fields = ("value", "lanes")

    def __init__(self, value: PrimExpr, lanes: int, span=None) -> None:
        self.value = value
        self.lanes = lanes
        self.dtype = f"{value.dtype}x{lanes}"
        self.span = span


def _lanes(dtype: str) -> int:
    _, sep, lanes = dtype.partition("x")
    return int(lanes) if sep and lanes.isdigit() else 1


def const(value, dtype: str) -> PrimExpr:
    """`IntImm` or `FloatImm` (bool is an IntImm of dtype bool, as in TVM)."""
    if dtype.startswith(("float", "bfloat")):
        return FloatImm(value, dtype)
    return IntImm(int(value), dtype)


# ----------------------------------------------------------------------------- buffers


class Buffer(Node):
    """A typed, shaped view of memory at `data` (a handle Var). Defaults as TVM's
    `decl_buffer`: dense (no strides), offset 0, global scope."""

    __slots__ = ("name", "data", "dtype", "shape", "strides", "elem_offset", "scope", "align",
                 "offset_factor", "buffer_type", "axis_separators")
    fields = ("dtype", "shape", "strides", "elem_offset", "scope", "align", "offset_factor",
              "buffer_type", "axis_separators", "data")

    def __init__(self, name: str, shape, dtype: str = "float32", data: Var | None = None, strides=(),
                 elem_offset: PrimExpr | None = None, scope: str = "global", align: int = 0,
                 offset_factor: int = 0, buffer_type: str = "", axis_separators=(), span=None) -> None:
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.data = data if data is not None else Var(name, "handle", PointerType(dtype, scope))
        self.strides = tuple(strides)
        self.elem_offset = elem_offset
        self.scope = scope
        self.align = align
        self.offset_factor = offset_factor
        self.buffer_type = buffer_type
        self.axis_separators = tuple(axis_separators)
        self.span = span

    def __repr__(self) -> str:
        return f"tir.Buffer({self.name})"


class Range(Node):
    __slots__ = ("min", "extent")
    fields = ("min", "extent")

    def __init__(self, min: PrimExpr, extent: PrimExpr, span=None) -> None:  # noqa: A002
        self.min = min
        self.extent = extent
        self.span = span


class BufferRegion(Node):
    """`A[vi, 0:8]`: a buffer and one Range per dimension (extent 1 for a point)."""

    __slots__ = ("buffer", "region")
    fields = ("buffer", "region")

    def __init__(self, buffer: Buffer, region, span=None) -> None:
        self.buffer = buffer
        self.region = tuple(region)
        self.span = span


class MatchBufferRegion(Node):
    __slots__ = ("buffer", "source")
    fields = ("buffer", "source")

    def __init__(self, buffer: Buffer, source: BufferRegion, span=None) -> None:
        self.buffer = buffer
        self.source = source
        self.span = span


# IterVar kinds, as TVM's IterVarType numbers them
DATA_PAR, COMM_REDUCE, ORDERED, OPAQUE = 0, 2, 3, 4
ITER_KIND_LETTER = {DATA_PAR: "S", COMM_REDUCE: "R", ORDERED: "O", OPAQUE: "O"}
ITER_KIND_NAME = {DATA_PAR: "spatial", COMM_REDUCE: "reduce", ORDERED: "scan", OPAQUE: "opaque"}


class IterVar(Node):
    __slots__ = ("var", "dom", "iter_type", "thread_tag")
    fields = ("var", "dom", "iter_type", "thread_tag")

    def __init__(self, var: Var, dom: Range | None, iter_type: int, thread_tag: str = "", span=None) -> None:
        self.var = var
        self.dom = dom
        self.iter_type = iter_type
        self.thread_tag = thread_tag
        self.span = span


class IndexMap(Node):
    """TVM's tirx.IndexMap, `T.index_map(lambda i, j: (i // 4, j, i % 4))`: the `final_indices`
    as expressions of the `initial_indices` (the lambda's parameters, int64 as TVM's Python
    API makes them). R.layout_transform's attribute."""

    __slots__ = ("initial_indices", "final_indices")
    fields = ("initial_indices", "final_indices")

    def __init__(self, initial_indices, final_indices, span=None) -> None:
        self.initial_indices = tuple(initial_indices)
        self.final_indices = tuple(final_indices)
        self.span = span


# ----------------------------------------------------------------------------- statements


class Stmt(Node):
    __slots__ = ()


class BufferStore(Stmt):
    __slots__ = ("buffer", "value", "indices")
    fields = ("buffer", "value", "indices")

    def __init__(self, buffer: Buffer, value: PrimExpr, indices, span=None) -> None:
        self.buffer = buffer
        self.value = value
        self.indices = tuple(indices)
        self.span = span


class LetStmt(Stmt):
    __slots__ = ("var", "value", "body")
    fields = ("var", "value", "body")

    def __init__(self, var: Var, value: PrimExpr, body: Stmt, span=None) -> None:
        self.var = var
        self.value = value
        self.body = body
        self.span = span


class AttrStmt(Stmt):
    """`with T.attr(node, key, value):` — `node` is a PrimExpr, Buffer, IterVar or str."""

    __slots__ = ("node", "attr_key", "value", "body")
    fields = ("node", "attr_key", "value", "body")

    def __init__(self, node, attr_key: str, value, body: Stmt, span=None) -> None:
        self.node = node
        self.attr_key = attr_key
        self.value = value
        self.body = body
        self.span = span


class AssertStmt(Stmt):
    """`assert cond, ("Kind", [parts…])` (TVM 0.27) or `assert cond, "message"`."""

    __slots__ = ("condition", "error_kind", "message_parts", "body")
    fields = ("condition", "error_kind", "message_parts", "body")

    def __init__(self, condition: PrimExpr, error_kind: str | None, message_parts, body: Stmt,
                 span=None) -> None:
        self.condition = condition
        self.error_kind = error_kind
        self.message_parts = tuple(message_parts)
        self.body = body
        self.span = span


FOR_KINDS = ("serial", "parallel", "vectorized", "unroll", "thread_binding")


class For(Stmt):
    __slots__ = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")
    fields = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")

    def __init__(self, loop_var: Var, min: PrimExpr, extent: PrimExpr, kind: str, body: Stmt,  # noqa: A002
                 thread_binding: str | None = None, annotations=(), span=None) -> None:
        if kind not in FOR_KINDS:
            raise ValueError(f"unknown loop kind {kind!r}")
        self.loop_var = loop_var
        self.min = min
        self.extent = extent
        self.kind = kind
        self.body = body
        self.thread_binding = thread_binding
        self.annotations = tuple(annotations)
        self.span = span


class While(Stmt):
    __slots__ = ("condition", "body")
    fields = ("condition", "body")

    def __init__(self, condition: PrimExpr, body: Stmt, span=None) -> None:
        self.condition = condition
        self.body = body
        self.span = span


class IfThenElse(Stmt):
    __slots__ = ("condition", "then_case", "else_case")
    fields = ("condition", "then_case", "else_case")

    def __init__(self, condition: PrimExpr, then_case: Stmt, else_case: Stmt | None = None, span=None) -> None:
        self.condition = condition
        self.then_case = then_case
        self.else_case = else_case
        self.span = span


class Evaluate(Stmt):
    __slots__ = ("value",)
    fields = ("value",)

    def __init__(self, value: PrimExpr, span=None) -> None:
        self.value = value
        self.span = span


class Return(Stmt):
    """`return value` (TVM's `T.ret`)."""

    __slots__ = ("value",)
    fields = ("value",)

    def __init__(self, value: PrimExpr, span=None) -> None:
        self.value = value
        self.span = span


class SeqStmt(Stmt):
    __slots__ = ("seq",)
    fields = ("seq",)

    def __init__(self, seq, span=None) -> None:
        self.seq = tuple(seq)
        self.span = span


def seq(stmts) -> Stmt:
    """One statement for a list: flattened, and not wrapped when there is only one."""
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.seq if isinstance(s, SeqStmt) else (s,))
    return flat[0] if len(flat) == 1 else SeqStmt(flat)


class Allocate(Stmt):
    __slots__ = ("buffer_var", "dtype", "extents", "condition", "body", "annotations")
    fields = ("buffer_var", "dtype", "extents", "condition", "body", "annotations")

    def __init__(self, buffer_var: Var, dtype: str, extents, condition: PrimExpr, body: Stmt,
                 annotations=(), span=None) -> None:
        self.buffer_var = buffer_var
        self.dtype = dtype
        self.extents = tuple(extents)
        self.condition = condition
        self.body = body
        self.annotations = tuple(annotations)
        self.span = span


class DeclBuffer(Stmt):
    """`B = T.decl_buffer(shape, dtype, data=...)`: declares B for the rest of the block."""

    __slots__ = ("buffer", "body")
    fields = ("buffer", "body")

    def __init__(self, buffer: Buffer, body: Stmt, span=None) -> None:
        self.buffer = buffer
        self.body = body
        self.span = span


class SBlock(Stmt):
    """`with T.sblock(name):` — the unit of scheduling (TVM's Block, renamed in 0.27)."""

    __slots__ = ("name", "iter_vars", "reads", "writes", "body", "init", "alloc_buffers",
                 "match_buffers", "annotations")
    fields = ("name", "iter_vars", "reads", "writes", "body", "init", "alloc_buffers", "match_buffers",
              "annotations")

    def __init__(self, name: str, iter_vars, reads, writes, body: Stmt, init: Stmt | None = None,
                 alloc_buffers=(), match_buffers=(), annotations=(), span=None) -> None:
        self.name = name
        self.iter_vars = tuple(iter_vars)
        self.reads = tuple(reads)
        self.writes = tuple(writes)
        self.body = body
        self.init = init
        self.alloc_buffers = tuple(alloc_buffers)
        self.match_buffers = tuple(match_buffers)
        self.annotations = tuple(annotations)
        self.span = span


class SBlockRealize(Stmt):
    __slots__ = ("iter_values", "predicate", "block")
    fields = ("iter_values", "predicate", "block")

    def __init__(self, iter_values, predicate: PrimExpr, block: SBlock, span=None) -> None:
        self.iter_values = tuple(iter_values)
        self.predicate = predicate
        self.block = block
        self.span = span


# ----------------------------------------------------------------------------- functions


class PrimFunc(Node):
    """`attrs` is an ordered tuple of (key, value) pairs; `buffer_map` pairs handle params
    with the Buffer they are viewed as. `ret_type` is a dtype string or None."""

    __slots__ = ("params", "body", "ret_type", "buffer_map", "attrs", "private")
    fields = ("params", "ret_type", "buffer_map", "attrs", "private", "body")

    def __init__(self, params, body: Stmt, ret_type: str | None = None, buffer_map=(), attrs=(),
                 private: bool = False, span=None) -> None:
        self.params = tuple(params)
        self.body = body
        self.ret_type = ret_type
        self.buffer_map = tuple(buffer_map)
        self.attrs = tuple(attrs)
        self.private = private
        self.span = span

    def attr(self, key: str, default=None):
        return dict(self.attrs).get(key, default)

    def buffer_of(self, param: Var) -> Buffer | None:
        for p, b in self.buffer_map:
            if p is param:
                return b
        return None
