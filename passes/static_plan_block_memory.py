"""static-plan-block-memory: TVM 0.27's relax.transform.StaticPlanBlockMemory
(static_plan_block_memory.cc), the algorithm of Relay's GraphPlanMemory (seed 002) on the
`R.builtin.alloc_tensor`s CallTIRRewrite made.

A storage token stands for reusable bytes: its size (dtype bytes times the dimensions; a
symbolic size stays an expression), dtype and scope, and a reference counter.

    1. initialise  one token per alloc_tensor; every argument use by a PrimFunc (or packed
                   function) call counts a reference; R.reshape / R.memory.view /
                   R.memory.ensure_zero_offset share their input's token. A token is
                   DISCARDED (never planned) when its tensor is returned (a function's
                   or a SeqExpr's body), used in an if, passed to any other call (a Relax
                   operator, a Relax function), or used in a block other than its own.
    2. plan        walk the bindings in order with a pool of free tokens per (scope,
                   dtype), ordered by size. An alloc_tensor takes the smallest free
                   token of at least its size (within 16x), else the largest smaller one
                   (grown to its size), else a new one; a symbolic size reuses only a
                   token of provably equal size. After each call its arguments' counters
                   drop; a token at zero returns to the pool. A token never referenced
                   gets new storage and is never freed.
    3. rewrite     the first alloc_tensor of each token is preceded by
                   `storage = R.memory.alloc_storage(R.shape([bytes]), 0, R.str(scope),
                   R.dtype(dtype))` and every planned alloc_tensor becomes
                   `R.memory.alloc_tensor(storage, 0, shape, dtype, 0)`.

Function outputs keep their R.builtin.alloc_tensor. Sizes use the `tir_var_upper_bound`
attribute ({"n": 1024}) of the signature's variables; with
`relax.memory_plan_dynamic_func_output` an unplanned alloc of symbolic shape gets its own
storage of the upper-bound size (the attribute is removed). No kill_storage/kill_tensor
is inserted (TVM's KillAfterLastUse does that later). Functions are planned independently;
names (`storage`, `storage1`, ...) are unique across the pass run, as TVM's builder's.

`memory_plan_summary(mod)` reports, per function, the planned bytes (storage plus the
unplanned allocations) against one buffer per tensor (`irtool-opt --print-memory-plan`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import GlobalVar, Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator, ExprVisitor
from irtool.ops import relax_memory
from irtool.transform import ModulePass, register

from ._memory_bounds import VarBounds, can_prove_equal, mul, upper_bound_shape
from .call_tir_rewrite import NameSupply

INPLACE_MEMORY_OPS = ("relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset")
PLAN_DYNAMIC_OUTPUT = "relax.memory_plan_dynamic_func_output"
MATCH_RANGE = 16  # a free token of up to 16x (or down to 1/16) the requested size may be reused


def dtype_bytes(dtype: str) -> int:
    """TVM's DataType::StorageBytes: (bits * lanes + 7) // 8."""
    if dtype.startswith("bool"):
        bits = 1
    else:
        m = re.match(r"[a-z]+(\d+)", dtype)
        bits = int(m.group(1)) if m else 8
    lanes = re.search(r"x(\d+)$", dtype)
    return (bits * (int(lanes.group(1)) if lanes else 1) + 7) // 8


class Token:
    __slots__ = ("ref_counter", "bytes", "dtype", "scope", "storage_id")

    def __init__(self, shape, dtype: str, scope: str) -> None:
        coeff, size = dtype_bytes(dtype), 1
        for d in shape:
            if isinstance(d, int) or isinstance(d, tir.IntImm):
                coeff *= int(getattr(d, "value", d))
            else:
                size = mul(size, d)
        self.bytes = mul(coeff, size)  # an int, or TVM's `coeff * dims` expression
        self.ref_counter = 0
        self.dtype = dtype
        self.scope = scope
        self.storage_id = -1

    @property
    def const_bytes(self) -> int:
        return self.bytes if isinstance(self.bytes, int) else -1


# Tokens of an expression: None, a Token, or a tuple of Tokens (TVM's NestedMsg).
def _leaves(tokens):
    if isinstance(tokens, Token):
        yield tokens
    elif isinstance(tokens, tuple):
        for t in tokens:
            yield from _leaves(t)


def _without(tokens, dropped: Token):
    if isinstance(tokens, tuple):
        return tuple(_without(t, dropped) for t in tokens)
    return None if tokens is dropped else tokens


class TokenAllocator:
    """TVM's TokenAllocatorMixed: free tokens per (scope, dtype), a multimap by size."""

    def __init__(self) -> None:
        self.pools: dict = {}
        self.order = itertools.count()

    def request_reuse(self, prototype: Token) -> Token | None:
        if prototype.ref_counter == 0:  # never used: new storage (cleaning passes may drop it)
            return None
        pool = self.pools.setdefault((prototype.scope, prototype.dtype), [])
        size = prototype.const_bytes
        if size == -1:
            for i, (key, _, token) in enumerate(pool):
                if key == -1 and can_prove_equal(prototype.bytes, token.bytes):
                    del pool[i]
                    token.ref_counter = prototype.ref_counter
                    return token
            return None
        begin = bisect.bisect_left(pool, (int(size / MATCH_RANGE), -1))
        mid = bisect.bisect_left(pool, (size, -1))
        end = bisect.bisect_right(pool, (size * MATCH_RANGE, float("inf")))
        if mid != end:
            token = pool.pop(mid)[2]
        elif mid != begin:
            token = pool.pop(mid - 1)[2]
            token.bytes = size  # grown to the request
        else:
            return None
        token.ref_counter = prototype.ref_counter
        return token

    def release(self, token: Token) -> None:
        pool = self.pools.setdefault((token.scope, token.dtype), [])
        bisect.insort(pool, (token.const_bytes, next(self.order), token))

    def clear(self) -> None:
        self.pools.clear()


def _is_alloc_tensor(call) -> bool:
    return isinstance(call, rx.Call) and isinstance(call.op, Op) and call.op.name == "relax.builtin.alloc_tensor"


def _is_inplace_memory_op(op) -> bool:
    return (isinstance(op, Op) and op.name in INPLACE_MEMORY_OPS) or (
        isinstance(op, rx.ExternFunc) and op.global_symbol == "vm.builtin.reshape")


def _signature_bounds(fn: rx.Function, bounds: VarBounds) -> None:
    """TVM's SetTIRVarRangeConstraints: the signature's variables named in
    tir_var_upper_bound get [lower (or 0), upper]."""
    upper = dict(fn.attr("tir_var_upper_bound", {}) or {})
    lower = dict(fn.attr("tir_var_lower_bound", {}) or {})
    from irtool.ir.relax_visitor import tir_vars

    for v in tir_vars([p.struct_info for p in fn.params] + [fn.ret_struct_info]):
        if v.name in upper:
            bounds.bind(v, int(_int_value(lower.get(v.name, 0))), int(_int_value(upper[v.name])))


def _int_value(v) -> int:
    return int(getattr(v, "value", v))


class _TokenVisitor(ExprVisitor):
    """StorageAllocatorBaseVisitor: the tokens of each expression, a stack of blocks."""

    def __init__(self) -> None:
        self.token_map: dict = {}
        self.block_stack: list = []

    def visit_binding_block(self, block) -> None:
        self.block_stack.append(block)
        super().visit_binding_block(block)
        self.block_stack.pop()

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        self.visit_binding_value(b)
        self.set_tokens(b.var, self.token_map.get(b.value))

    def visit_binding_value(self, b: rx.VarBinding) -> None:
        self.visit_expr(b.value)

    def visit_tuple_(self, e: rx.Tuple) -> None:
        self.set_tokens(e, tuple(self.get_tokens(f) for f in e.fields_))

    def visit_tuple_getitem_(self, e: rx.TupleGetItem) -> None:
        tokens = self.get_tokens(e.tuple_value)
        if isinstance(tokens, tuple):
            self.set_tokens(e, tokens[e.index])
        else:  # no tokens for the tuple: none for its fields
            self.token_map[e] = None

    def get_tokens(self, e):
        self.visit_expr(e)
        return self.token_map.get(e)

    def set_tokens(self, e, tokens) -> None:
        self.token_map[e] = tokens


class _Initializer(_TokenVisitor):
    """Stage 1 (StorageAllocatorInit): prototype tokens, reference counts, discards."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.bounds = VarBounds()
        self.token_block: dict = {}
        self.token_exprs: dict = {}

    def visit_function_(self, fn: rx.Function) -> None:
        _signature_bounds(fn, self.bounds)
        self.discard_all(self.get_tokens(fn.body))

    def visit_seq_expr_(self, e: rx.SeqExpr) -> None:
        for block in e.blocks:
            self.visit_binding_block(block)
        self.discard_all(self.get_tokens(e.body))

    def visit_if_(self, e: rx.If) -> None:
        for part in (e.cond, e.true_branch, e.false_branch):
            self.discard_all(self.get_tokens(part))

    def visit_call_(self, call: rx.Call) -> None:
        if _is_alloc_tensor(call):
            self.create_token(call)
            return
        if _is_inplace_memory_op(call.op):
            self.set_tokens(call, self.get_tokens(call.args[0]))
            return
        op = call.op
        counted = (isinstance(op, GlobalVar) and isinstance(self.mod.functions.get(op.name_hint), tir.PrimFunc)) or \
            isinstance(op, rx.ExternFunc) or (isinstance(op, Op) and op.name == "relax.vm.call_tir_dyn")
        for arg in call.args:
            if counted:
                for token in _leaves(self.get_tokens_checking_block(arg)):
                    token.ref_counter += 1
            else:
                self.discard_all(self.get_tokens(arg))

    def create_token(self, call: rx.Call) -> None:
        sinfo = call.struct_info
        if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple) or not sinfo.dtype:
            return  # TVM requires a known shape and dtype; such an allocation is not planned
        scope = call.args[3].value if isinstance(call.args[3], rx.StringImm) else "global"
        token = Token(upper_bound_shape(sinfo.shape, self.bounds), sinfo.dtype, scope)
        self.set_tokens(call, token)
        self.token_block[token] = self.block_stack[-1]

    def set_tokens(self, e, tokens) -> None:
        super().set_tokens(e, tokens)
        for token in _leaves(tokens):
            self.token_exprs.setdefault(token, []).append(e)

    def get_tokens_checking_block(self, e):
        tokens = self.get_tokens(e)
        for token in list(_leaves(tokens)):
            if self.token_block.get(token) is not self.block_stack[-1]:
                self.discard(token)
        return self.token_map.get(e)

    def discard_all(self, tokens) -> None:
        for token in list(_leaves(tokens)):
            self.discard(token)

    def discard(self, token: Token) -> None:
        for e in self.token_exprs.pop(token, ()):
            self.token_map[e] = _without(self.token_map.get(e), token)
        self.token_block.pop(token, None)


class _Planner(_TokenVisitor):
    """Stage 2 (StorageAllocator): reuse or allocate a token for each planned alloc_tensor."""

    def __init__(self, token_map: dict) -> None:
        super().__init__()
        self.token_map = token_map
        self.allocator = TokenAllocator()
        self.n_storage = 0
        self.alloc_token: dict = {}

    def plan(self, fn: rx.Function) -> None:
        self.allocator.clear()
        for p in fn.params:
            self.visit_var_def(p)
        self.visit_expr(fn.body)

    def visit_binding_value(self, b: rx.VarBinding) -> None:
        call = b.value
        if not isinstance(call, rx.Call):
            self.visit_expr(call)
            return
        if _is_alloc_tensor(call):
            prototype = self.token_map.get(call)
            if prototype is None:  # discarded: not planned
                return
            token = self.allocator.request_reuse(prototype)
            if token is None:
                token = prototype
                token.storage_id = self.n_storage
                self.n_storage += 1
            self.alloc_token[call] = token
            self.set_tokens(call, token)
            return
        if _is_inplace_memory_op(call.op):
            tokens = self.get_tokens(call.args[0])
            if isinstance(tokens, Token):
                self.set_tokens(call, tokens)
            return
        for arg in call.args:
            for token in _leaves(self.get_tokens(arg)):
                token.ref_counter -= 1
                if token.ref_counter == 0:
                    self.allocator.release(token)


class _Rewriter(ExprMutator):
    """Stage 3 (StorageAllocationRewriter)."""

    def __init__(self, mod: IRModule, alloc_token: dict) -> None:
        super().__init__(mod)
        self.alloc_token = alloc_token
        self.names = NameSupply()
        self.bounds = VarBounds()
        self.plan_dynamic_output = False
        self.storage_of: dict = {}

    def rewrite(self, fn: rx.Function) -> rx.Function:
        self.plan_dynamic_output = bool(fn.attr(PLAN_DYNAMIC_OUTPUT, False))
        if self.plan_dynamic_output:
            _signature_bounds(fn, self.bounds)
        self.storage_of = {}
        out = self.visit_expr(fn)
        if self.plan_dynamic_output:
            attrs = tuple((k, v) for k, v in out.attrs if k != PLAN_DYNAMIC_OUTPUT)
            out = rx.Function(out.params, out.body, out.ret_struct_info, out.is_pure, attrs, out.private, out.span)
        return out

    def emit_storage(self, size, device, scope: str, dtype: str) -> rx.Var:
        call = relax_memory.make_call("relax.memory.alloc_storage", [rx.ShapeExpr([size]), device, scope, dtype])
        var = (rx.DataflowVar if self.in_dataflow_block else rx.Var)(self.names.fresh("storage"), call.struct_info)
        self.emit(rx.VarBinding(var, call))
        return var

    def visit_call_(self, e: rx.Call):
        token = self.alloc_token.get(e)
        if token is not None:
            storage = self.storage_of.get(token)
            if storage is None:
                storage = self.storage_of[token] = self.emit_storage(token.bytes, e.args[2], token.scope, token.dtype)
            return _alloc_from(storage, e)
        if self.plan_dynamic_output and _is_alloc_tensor(e):
            sinfo = e.struct_info
            if isinstance(sinfo, rx.TensorStructInfo) and isinstance(sinfo.shape, tuple) and sinfo.dtype and \
                    not all(isinstance(d, int) for d in sinfo.shape):
                dims = upper_bound_shape(sinfo.shape, self.bounds)
                size = dims[0]
                for d in dims[1:]:
                    size = mul(size, d)
                size = mul(size, dtype_bytes(sinfo.dtype))
                scope = e.args[3].value if isinstance(e.args[3], rx.StringImm) else "global"
                storage = self.emit_storage(size, e.args[2], scope, sinfo.dtype)
                return _alloc_from(storage, e)
        return super().visit_call_(e)


def _alloc_from(storage: rx.Var, alloc: rx.Call) -> rx.Call:
    sinfo = alloc.struct_info
    return relax_memory.make_call("relax.memory.alloc_tensor",
                                  [storage, 0, rx.ShapeExpr(sinfo.shape), sinfo.dtype, alloc.args[2]])


def static_plan_block_memory(mod: IRModule) -> IRModule:
    functions = [(name, fn) for name, fn in mod.functions.items() if isinstance(fn, rx.Function)]
    init = _Initializer(mod)
    for _, fn in functions:
        init.visit_expr(fn)
    planner = _Planner(init.token_map)
    for _, fn in functions:
        planner.plan(fn)
    rewriter = _Rewriter(mod, planner.alloc_token)
    out = dict(mod.functions)
    for name, fn in functions:
        out[name] = rewriter.rewrite(fn)
    return mod.with_functions(out)


@register
@dataclass(frozen=True)
class StaticPlanBlockMemory(ModulePass):
    name = "static-plan-block-memory"
    tvm_name = "StaticPlanBlockMemory"
    opt_level = 0
    summary = "Plan R.builtin.alloc_tensor into reused R.memory.alloc_storage by liveness and size"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        return static_plan_block_memory(mod)



# ----------------------------------------------------------------------------- the report


def _named_poly(e) -> dict:
    """A size as {monomial (variable names): coefficient}; {} for what is not a polynomial."""
    if isinstance(e, (int, tir.IntImm)):
        return {(): int(getattr(e, "value", e))}
    if isinstance(e, tir.Var):
        return {(e.name,): 1}
    if isinstance(e, tir.BinOp) and e.op in ("add", "mul"):
        a, b = _named_poly(e.a), _named_poly(e.b)
        out: dict = {}
        for ma, ca in a.items():
            for mb, cb in (b.items() if e.op == "mul" else [((), None)]):
                m = tuple(sorted(ma + mb))
                out[m] = out.get(m, 0) + (ca * cb if cb is not None else ca)
        if e.op == "add":
            for m, c in b.items():
                out[m] = out.get(m, 0) + c
        return out
    return {}


def _total(sizes) -> str:
    """The sum of sizes, symbolic ones collected by monomial (`48 * n + 1024`)."""
    poly: dict = {}
    for size in sizes:
        for m, c in _named_poly(size).items():
            poly[m] = poly.get(m, 0) + c
    ordered = sorted(poly.items(), key=lambda t: -len(t[0]))  # higher degrees first
    terms = [" * ".join(([str(c)] if c != 1 else []) + list(m)) for m, c in ordered if m and c]
    if poly.get((), 0) or not terms:
        terms.append(str(poly.get((), 0)))
    return " + ".join(terms)


class _AllocationCollector(ExprVisitor):
    def __init__(self) -> None:
        self.storages, self.planned, self.unplanned = [], [], []

    def visit_call_(self, e: rx.Call) -> None:
        super().visit_call_(e)
        name = e.op.name if isinstance(e.op, Op) else ""
        if name == "relax.memory.alloc_storage":
            self.storages.append(mul(e.args[0].values[0], 1))
        elif name in ("relax.memory.alloc_tensor", "relax.builtin.alloc_tensor"):
            sinfo = e.struct_info
            if isinstance(sinfo, rx.TensorStructInfo) and isinstance(sinfo.shape, tuple) and sinfo.dtype:
                size = Token(sinfo.shape, sinfo.dtype, "").bytes
                (self.planned if name == "relax.memory.alloc_tensor" else self.unplanned).append(size)


def memory_plan_summary(mod: IRModule) -> str:
    """Per Relax function: the storages and the tensors planned into them, the allocations
    left unplanned (outputs, tensors used across blocks...), and the plan's peak bytes
    (storages + unplanned) against one buffer per tensor (every tensor's own bytes)."""
    lines = []
    for name, fn in mod.items():
        if not isinstance(fn, rx.Function):
            continue
        c = _AllocationCollector()
        c.visit_expr(fn)
        if not (c.storages or c.planned or c.unplanned):
            continue
        lines.append(
            f"@{name}: {len(c.planned)} tensors planned into {len(c.storages)} storages of "
            f"{_total(c.storages)} bytes, {len(c.unplanned)} unplanned of {_total(c.unplanned)} bytes; "
            f"peak {_total(c.storages + c.unplanned)} bytes, one buffer per tensor "
            f"{_total(c.planned + c.unplanned)} bytes")
    return "\n".join(lines) if lines else "no allocations"
