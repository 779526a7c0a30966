"""TIR -> LLVM IR (llvmlite.ir), one LLVM function per PrimFunc.

Every PrimFunc `f` becomes two functions:

    define internal i32 @f.impl(ptr noalias %A, ptr noalias %B, i64 %n, ...)   the body
    define i32 @f(ptr %args)                                                    packed entry

The packed entry reads `args[i]` (a data pointer for a buffer parameter, a pointer to an
8-byte slot for a scalar parameter, then one pointer to an i64 slot per symbolic size the
buffers define, in `PackedSignature.size_vars` order) and calls the body, which LLVM then
inlines. The body returns 0, or -1 after storing a message in `@__irtool_last_error`
(a failed `T.assert`).

Statements map one to one: loops are counted loops with the loop variable as a phi
(`T.unroll` and `T.vectorized` add LLVM loop hints; `T.parallel` outlines its body into
a task run by the thread pool, see runtime.py); a block binds its iterators to their
values, runs its `T.init()` when every reduction iterator is at its minimum, and guards
its body with its predicate; intermediate buffers live on the stack when small and
constant-sized, otherwise in `malloc`ed memory freed at the end of their scope.
Buffers are flattened here: an access is `data[elem_offset + sum(index * stride)]`, with
row-major strides unless the buffer has its own. Arithmetic follows TVM's semantics (and
the TIR interpreter's): integer `/` and truncdiv truncate, floordiv/floormod round toward
-inf, min/max are selects, `if_then_else` and `and`/`or` only evaluate what they need.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import llvmlite.ir as ir

from ..ir import tir
from .llvm_expr import ExprCodegen, element_bytes
from .llvm_types import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    STACK_LIMIT,
    CodegenError,
    _as_i64,
    _fwidth,
    _ident,
    _is_one,
    _is_true,
    _is_zero,
    _split,
    llvm_type,
    scalar_type,
)
from .packed_builtins import lower_packed_call

FP_CONTRACT_ATTR = "irtool.fp_contract"  # an sblock annotation: `a + b * c` may be one FMA

__all__ = ["I1", "I8", "I32", "I64", "PTR", "CodegenError", "ModuleBuilder", "PackedSignature", "llvm_type",
           "scalar_type", "signature"]


@dataclass
class PackedSignature:
    """How the packed entry reads its arguments (the caller builds `args` to match)."""

    name: str
    params: list = field(default_factory=list)  # ("buffer", Buffer) | ("handle", Var) | ("scalar", Var)
    size_vars: list = field(default_factory=list)  # symbolic sizes bound from buffer shapes
    symbol: str = ""  # the packed entry's LLVM name when it is not `name` (see `llvm_symbol`)

    @property
    def llvm_name(self) -> str:
        return self.symbol or self.name


# Names the generated code may call (LLVM lowers its math intrinsics and loop idioms to libm and
# libc calls: llvm.exp.f64 becomes `exp`, a zeroing loop `memset`): a PrimFunc named like one
# would be called in its place (a PrimFunc `exp` on float64 called itself with a double: a crash).
_C_NAMES = frozenset("""exp exp2 exp10 expm1 log log2 log10 log1p pow sqrt cbrt sin cos tan sincos asin acos atan
atan2 sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma floor ceil round rint lrint lround nearbyint trunc
fabs copysign fmin fmax fmod remainder hypot ldexp frexp modf nextafter malloc calloc realloc free aligned_alloc
posix_memalign memcpy memmove memset memcmp bzero abort exit syscall printf puts""".split())


def llvm_symbol(name: str) -> str:
    """`name`, or `name.primfunc` when the name is one of the C library's (a '.' keeps it apart)."""
    base = name[:-1] if name.endswith(("f", "l")) and name[:-1] in _C_NAMES else name
    clash = base in _C_NAMES or name.startswith(("__", "irtool", "pthread_", "llvm."))
    return f"{name}.primfunc" if clash else name


def _size_vars(func: tir.PrimFunc) -> list[tir.Var]:
    """Variables in buffer shapes/strides/offsets that are not parameters: bound from the arguments."""
    params = set(func.params)
    out: list[tir.Var] = []
    for _, buf in func.buffer_map:
        for e in (*buf.shape, *buf.strides, *([buf.elem_offset] if buf.elem_offset is not None else [])):
            if isinstance(e, tir.Var) and e not in params and e not in out:
                out.append(e)
    return out


def signature(func: tir.PrimFunc, name: str) -> PackedSignature:
    sig = PackedSignature(name)
    for p in func.params:
        buf = func.buffer_of(p)
        if buf is not None:
            sig.params.append(("buffer", buf))
        else:
            sig.params.append(("handle" if p.dtype == "handle" else "scalar", p))
    sig.size_vars = _size_vars(func)
    return sig


class ModuleBuilder:
    """Accumulates PrimFuncs into one llvmlite module."""

    def __init__(self, name: str = "irtool", runtime_inside: bool = False, triple: str = "",
                 libm_exp: bool = False) -> None:
        """`runtime_inside`: define the thread pool in this module (a shared library);
        otherwise it is declared, and the JIT links the process-wide one (native.py).
        `libm_exp`: float32 exp calls libm's expf, as TVM's LLVM build does, instead of the
        inline float64 polynomial (ExprCodegen.call_exp): FoldConstant's bits then match TVM's."""
        self.module = ir.Module(name=name)
        self.runtime_inside, self.triple, self.libm_exp = runtime_inside, triple, libm_exp
        self.error_slot = ir.GlobalVariable(self.module, PTR, "__irtool_last_error")
        self.error_slot.initializer = ir.Constant(PTR, None)
        self.strings: dict[str, ir.GlobalVariable] = {}
        self.signatures: dict[str, PackedSignature] = {}
        self._ids = itertools.count()

    def constant_table(self, count: int) -> ir.GlobalVariable:
        """`@irtool.constants`: the addresses of a model's constants, filled in when it is loaded."""
        g = self.module.globals.get("irtool.constants")
        if g is None:
            t = ir.ArrayType(PTR, max(count, 1))
            g = ir.GlobalVariable(self.module, t, "irtool.constants")
            g.initializer = ir.Constant(t, None)
        return g

    def parallel_for_function(self) -> ir.Function:
        if self.runtime_inside:
            from .runtime import build_runtime

            build_runtime(self.module, self.triple)
        return self.declare("irtool_parallel_for", I32, [PTR, PTR, I64])

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name)
        return fn

    def string(self, text: str) -> ir.GlobalVariable:
        g = self.strings.get(text)
        if g is None:
            data = bytearray(text.encode("utf-8")) + b"\0"
            g = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)), f".str.{len(self.strings)}")
            g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
            g.global_constant = True
            g.linkage = "private"
            self.strings[text] = g
            self.strings[text] = g
        return g

    def unique(self, prefix: str) -> str:
        return f"{prefix}.{next(self._ids)}"

    def add(self, func: tir.PrimFunc, name: str) -> PackedSignature:
        sig = signature(func, name)
        sig.symbol = llvm_symbol(name) if llvm_symbol(name) != name else ""
        _FunctionBuilder(self, func, sig).build()
        self.signatures[name] = sig
        return sig


# ----------------------------------------------------------------------------- functions


class _Buffer:
    __slots__ = ("buffer", "data")

    def __init__(self, buffer: tir.Buffer, data: ir.Value) -> None:
        self.buffer, self.data = buffer, data


class _FunctionBuilder(ExprCodegen):
    def __init__(self, mb: ModuleBuilder, func: tir.PrimFunc, sig: PackedSignature) -> None:
        self.mb, self.func, self.sig = mb, func, sig
        self.vars: dict[tir.Var, ir.Value] = {}
        self.data: dict[tir.Var, ir.Value] = {}  # buffer data handles -> pointers
        self.distinct: set = set()  # data handles that alias nothing else: noalias params, allocations
        self.frees: list[list[ir.Value]] = []  # heap allocations per scope
        self.builder: ir.IRBuilder | None = None
        self.fn: ir.Function | None = None
        self.fp_contract = 0  # inside how many blocks marked FP_CONTRACT_ATTR

    # -------------------------------------------------------------- signature and entry
    def build(self) -> None:
        func, sig = self.func, self.sig
        arg_types, names = [], []
        for kind, obj in sig.params:
            if kind == "buffer":
                arg_types.append(PTR)
                names.append(obj.name)
            else:
                arg_types.append(scalar_type(obj.dtype))
                names.append(obj.name)
        for v in sig.size_vars:
            arg_types.append(scalar_type(v.dtype))
            names.append(v.name)
        impl = ir.Function(self.mb.module, ir.FunctionType(I32, arg_types), f"{sig.llvm_name}.impl")
        impl.linkage = "internal"
        noalias = bool(func.attr("tirx.noalias") or func.attr("tir.noalias"))
        for arg, name, (kind, _) in zip(impl.args, names, [*sig.params, *[("size", None)] * len(sig.size_vars)]):
            arg.name = _ident(name)
            if kind == "buffer" and noalias:
                arg.add_attribute("noalias")
        self.fn = impl
        entry = impl.append_basic_block("entry")
        self.builder = ir.IRBuilder(entry)
        for arg, (kind, obj) in zip(impl.args, sig.params):
            if kind == "buffer":
                self.data[obj.data] = arg
                if noalias:
                    self.distinct.add(obj.data)
            else:
                self.vars[obj] = arg
                if kind == "handle":
                    self.data[obj] = arg
        for arg, v in zip(impl.args[len(sig.params):], sig.size_vars):
            self.vars[v] = arg
        self.frees.append([])
        self.stmt(func.body)
        if not self.builder.block.is_terminated:
            self.release(self.frees.pop())
            self.builder.ret(I32(0))
        self._packed_entry(impl)

    def _packed_entry(self, impl: ir.Function) -> None:
        sig = self.sig
        fn = ir.Function(self.mb.module, ir.FunctionType(I32, [PTR]), sig.llvm_name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        args = []
        slots = [k for k, _ in sig.params] + ["size"] * len(sig.size_vars)
        for i, (kind, t) in enumerate(zip(slots, impl.function_type.args)):
            slot = b.load(b.gep(fn.args[0], [I64(i)], source_etype=PTR), typ=PTR)
            args.append(slot if kind in ("buffer", "handle") else b.load(slot, typ=t))
        b.ret(b.call(impl, args))

    # -------------------------------------------------------------- helpers
    def error(self, message: str, node=None) -> CodegenError:
        return CodegenError(f"cannot compile to native code: {message}", getattr(node, "span", None))

    def new_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def release(self, ptrs: list) -> None:
        if ptrs:
            free = self.mb.declare("free", ir.VoidType(), [PTR])
            for p in reversed(ptrs):
                self.builder.call(free, [p])

    def fail(self, message: str) -> None:
        """Store the message, free what is allocated, return -1."""
        b = self.builder
        b.store(self.mb.string(message), self.mb.error_slot)
        for scope in reversed(self.frees):
            self.release(scope)
        b.ret(I32(-1))

    # -------------------------------------------------------------- statements
    def stmt(self, s) -> None:
        if s is None:
            return
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            raise self.error(f"unsupported statement `{type(s).__name__}`", s)
        if self.builder.block.is_terminated:  # code after a failing assert path is unreachable
            self.builder.position_at_end(self.new_block("dead"))
        method(s)

    def s_SeqStmt(self, s: tir.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s: tir.Evaluate) -> None:
        if isinstance(s.value, tir.Call) and s.value.op.endswith(".tvm_call_packed"):
            lowered = lower_packed_call(s.value)  # a runtime function of ours, compiled in place
            if lowered is None:
                raise self.error(f"no native runtime function `{s.value.args[0]}` for `T.call_packed`", s)
            self.stmt(lowered)
        elif isinstance(s.value, tir.Call):
            self.expr(s.value)

    def s_LetStmt(self, s: tir.LetStmt) -> None:
        self.vars[s.var] = self.expr(s.value)
        if s.var.dtype == "handle":
            self.data[s.var] = self.vars[s.var]
        self.stmt(s.body)

    def s_AttrStmt(self, s: tir.AttrStmt) -> None:
        self.stmt(s.body)  # storage_alignment, pragmas...: hints the native backend needs not

    def s_DeclBuffer(self, s: tir.DeclBuffer) -> None:
        data = s.buffer.data
        if data not in self.data:
            if isinstance(data, tir.Var) and data not in self.vars:  # new memory (`T.alloc_local`)
                self.data[data] = self.allocate(s.buffer.dtype, s.buffer.shape, s.buffer)
                self.distinct.add(data)
                self.zero_fill(s.buffer)
            else:
                self.data[data] = self.expr(data)  # a handle variable or expression
        self.stmt(s.body)

    def zero_fill(self, buf: tir.Buffer) -> None:
        """Zeros in new memory, as the TIR interpreter allocates it (TVM leaves it undefined)."""
        size = tir.IntImm(1, "int64")
        for d in buf.shape:
            size = tir.BinOp("mul", size, d if d.dtype == "int64" else tir.Cast("int64", d))
        flat = tir.Buffer(buf.name, [size], buf.dtype, data=buf.data, scope=buf.scope)
        k = tir.Var("k", "int64")
        zero = tir.FloatImm(0.0, buf.dtype) if buf.dtype.startswith(("float", "bfloat")) else tir.IntImm(0, buf.dtype)
        self.stmt(tir.For(k, tir.IntImm(0, "int64"), size, "serial", tir.BufferStore(flat, zero, [k])))

    def s_AssertStmt(self, s: tir.AssertStmt) -> None:
        cond = self.as_bool(self.expr(s.condition))
        ok, bad = self.new_block("assert_ok"), self.new_block("assert_fail")
        self.builder.cbranch(cond, ok, bad)
        self.builder.position_at_end(bad)
        text = "".join(str(p.value if isinstance(p, tir.StringImm) else p) for p in s.message_parts)
        self.fail(f"{s.error_kind}: {text}" if s.error_kind else text)
        self.builder.position_at_end(ok)
        self.stmt(s.body)

    def s_IfThenElse(self, s: tir.IfThenElse) -> None:
        cond = self.as_bool(self.expr(s.condition))
        then, end = self.new_block("then"), self.new_block("endif")
        other = self.new_block("else") if s.else_case is not None else end
        self.builder.cbranch(cond, then, other)
        self.builder.position_at_end(then)
        self.stmt(s.then_case)
        if not self.builder.block.is_terminated:
            self.builder.branch(end)
        if s.else_case is not None:
            self.builder.position_at_end(other)
            self.stmt(s.else_case)
            if not self.builder.block.is_terminated:
                self.builder.branch(end)
        self.builder.position_at_end(end)

    def s_While(self, s: tir.While) -> None:
        head, body, end = self.new_block("while"), self.new_block("while_body"), self.new_block("while_end")
        self.builder.branch(head)
        self.builder.position_at_end(head)
        self.builder.cbranch(self.as_bool(self.expr(s.condition)), body, end)
        self.builder.position_at_end(body)
        self.stmt(s.body)
        if not self.builder.block.is_terminated:
            self.builder.branch(head)
        self.builder.position_at_end(end)

    def s_For(self, s: tir.For) -> None:
        if s.kind == "thread_binding":
            raise self.error("GPU thread bindings have no CPU meaning", s)
        if s.kind == "parallel":
            self.parallel_for(s)
            return
        self.counted_loop(s.loop_var, s.min, s.extent, lambda: self.stmt(s.body), s.kind)

    def parallel_for(self, s: tir.For) -> None:
        """Outline the loop body into a task over [begin, end) and hand it to the thread pool.
        The task gets what the body uses from here (variables, data pointers) in a struct."""
        b = self.builder
        start = self.cast_to(self.expr(s.min), s.min.dtype, "int64")
        count = self.cast_to(self.expr(s.extent), s.extent.dtype, "int64")
        used = _vars_used(s.body)
        captured = [(v, self.vars[v]) for v in used if v in self.vars] + \
            [(v, self.data[v]) for v in used if v in self.data and v not in self.vars]
        name = self.mb.unique(f"{self.sig.llvm_name}.task")
        task = ir.Function(self.mb.module, ir.FunctionType(I32, [PTR, I64, I64]), name)
        task.linkage = "internal"
        # the body takes the captured values as parameters, so that distinct pointers can be
        # `noalias` (kept as alias scopes when LLVM inlines it into the task)
        inner = ir.Function(self.mb.module, ir.FunctionType(I32, [I64, I64, I64] + [v.type for _, v in captured]),
                            name + ".body")
        inner.linkage = "internal"
        for arg, (v, val) in zip(inner.args[3:], captured):
            arg.name = _ident(v.name)
            if isinstance(val.type, ir.PointerType) and v in self.distinct:
                arg.add_attribute("noalias")
        # the parent: pack the context (8-byte slots), run the tasks, fail if one did
        with b.goto_entry_block():
            ctx = b.alloca(I64, size=I64(len(captured) + 1))
        b.store(start, b.gep(ctx, [I64(0)], source_etype=I64))
        for k, (_, val) in enumerate(captured):
            b.store(_to_slot(b, val), b.gep(ctx, [I64(k + 1)], source_etype=I64))
        status = b.call(self.mb.parallel_for_function(), [task, ctx, count])
        ok, bad = self.new_block("parallel_ok"), self.new_block("parallel_failed")
        b.cbranch(b.icmp_signed("==", status, I32(0)), ok, bad)
        b.position_at_end(bad)
        for scope in reversed(self.frees):
            self.release(scope)
        b.ret(status)
        b.position_at_end(ok)
        # the task: unpack the slots, call the body
        tb = ir.IRBuilder(task.append_basic_block("entry"))
        tctx, begin, end = task.args
        values = [tb.load(tb.gep(tctx, [I64(0)], source_etype=I64), typ=I64), begin, end]
        for k, (_, val) in enumerate(captured):
            slot = tb.load(tb.gep(tctx, [I64(k + 1)], source_etype=I64), typ=I64)
            values.append(_from_slot(tb, slot, val.type))
        tb.ret(tb.call(inner, values))
        # the body: loop over [base + begin, base + end)
        saved = (self.builder, self.fn, dict(self.vars), dict(self.data), self.frees)
        self.fn, self.frees = inner, [[]]
        self.builder = ir.IRBuilder(inner.append_basic_block("entry"))
        base, begin, end = inner.args[:3]
        for arg, (v, _) in zip(inner.args[3:], captured):
            if v in saved[2]:
                self.vars[v] = arg
            if v in saved[3]:
                self.data[v] = arg
        tb = self.builder
        lo = tir.Var("begin", "int64")
        extent = tir.Var("extent", "int64")
        self.vars[lo] = tb.add(base, begin)
        self.vars[extent] = tb.sub(end, begin)
        loop_var = s.loop_var
        wide = loop_var if loop_var.dtype == "int64" else tir.Var(loop_var.name, "int64")
        body = s.body if wide is loop_var else tir.LetStmt(loop_var, tir.Cast(loop_var.dtype, wide), s.body)
        self.counted_loop(wide, lo, extent, lambda: self.stmt(body))
        if not self.builder.block.is_terminated:
            self.release(self.frees.pop())
            self.builder.ret(I32(0))
        self.builder, self.fn, self.vars, self.data, self.frees = saved

    def counted_loop(self, var: tir.Var, lo, extent, body, kind: str = "serial") -> None:
        b = self.builder
        t = scalar_type(var.dtype)
        start = self.cast_to(self.expr(lo), lo.dtype, var.dtype)
        stop = b.add(start, self.cast_to(self.expr(extent), extent.dtype, var.dtype))
        pre = b.block
        head, loop, end = self.new_block("for"), self.new_block("for_body"), self.new_block("for_end")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(t, name=_ident(var.name))
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, stop), loop, end)
        b.position_at_end(loop)
        self.vars[var] = i
        body()
        if not b.block.is_terminated:
            nxt = b.add(i, ir.Constant(t, 1))
            i.add_incoming(nxt, b.block)
            latch = b.branch(head)
            hint = {"unroll": [("llvm.loop.unroll.enable", None)],
                    "vectorized": [("llvm.loop.vectorize.enable", True), ("llvm.loop.unroll.disable", None)]}.get(kind)
            if hint:
                latch.set_metadata("llvm.loop", self.loop_metadata(hint))
        b.position_at_end(end)

    def loop_metadata(self, hints) -> ir.MDValue:
        m = self.mb.module
        ops = []
        for name, value in hints:
            ops.append(m.add_metadata([ir.MetaDataString(m, name)] + ([] if value is None else [I1(int(value))])))
        node = m.add_metadata([None, *ops])  # placeholder for the self reference LLVM requires
        node.operands = (node, *ops)
        return node

    def s_BufferStore(self, s: tir.BufferStore) -> None:
        value = self.expr(s.value)
        ptr, lanes, index = self.address(s.buffer, s.indices, s)
        if lanes == 1 or index is None:  # a vector: aligned to an element only (see e_BufferLoad)
            stored = self.to_memory(value, s.buffer.dtype)
            if lanes > 1 and isinstance(ptr.type, ir.PointerType) and not ptr.type.is_opaque:
                ptr = self.builder.bitcast(ptr, ir.PointerType(stored.type))
            self.builder.store(stored, ptr, align=element_bytes(self.mem_type(s.buffer.dtype)))
        else:
            for k in range(lanes):
                p = self.builder.gep(ptr, [self.builder.extract_element(index, I32(k))],
                                     source_etype=self.mem_type(s.buffer.dtype))
                self.builder.store(self.to_memory(self.builder.extract_element(value, I32(k)), s.buffer.dtype), p)

    def s_Allocate(self, s: tir.Allocate) -> None:
        self.data[s.buffer_var] = self.allocate(s.dtype, s.extents, s)
        self.distinct.add(s.buffer_var)
        self.stmt(s.body)

    def allocate(self, dtype: str, extents, node) -> ir.Value:
        b = self.builder
        t = self.mem_type(dtype)
        count = I64(1)
        static = 1
        for e in extents:
            v = self.cast_to(self.expr(e), e.dtype, "int64")
            count = b.mul(count, v)
            static = static * e.value if static is not None and isinstance(e, tir.IntImm) else None
        size = max(1, (t.width if isinstance(t, ir.IntType) else {"half": 16, "float": 32, "double": 64}[str(t)]) // 8)
        if static is not None and static * size <= STACK_LIMIT:
            with b.goto_entry_block():
                return b.alloca(t, size=I64(max(static, 1)))
        malloc = self.mb.declare("malloc", PTR, [I64])
        nbytes = b.mul(count, I64(size))
        p = b.call(malloc, [nbytes])
        # out of memory (or a negative symbolic size): fail the call instead of writing through NULL
        ok, bad = self.new_block("alloc_ok"), self.new_block("alloc_failed")
        null = b.icmp_unsigned("==", p, ir.Constant(PTR, None))
        b.cbranch(b.and_(null, b.icmp_signed("!=", nbytes, I64(0))), bad, ok)
        b.position_at_end(bad)
        name = getattr(node, "name", None) or getattr(node, "name_hint", None) or \
            getattr(getattr(node, "buffer_var", None), "name", "?")
        self.fail(f"cannot allocate `{name}` ({dtype}): out of memory or a negative size")
        b.position_at_end(ok)
        self.frees[-1].append(p)
        return p

    def s_SBlockRealize(self, s: tir.SBlockRealize) -> None:
        block = s.block
        for iv, value in zip(block.iter_vars, s.iter_values):
            self.vars[iv.var] = self.cast_to(self.expr(value), value.dtype, iv.var.dtype)
        self.frees.append([])
        for buf in block.alloc_buffers:
            self.data[buf.data] = self.allocate(buf.dtype, buf.shape, buf)
            self.distinct.add(buf.data)
        for mb in block.match_buffers:
            self.match_buffer(mb)

        contract = any(k == FP_CONTRACT_ATTR and v for k, v in block.annotations)

        def run() -> None:
            self.fp_contract += contract
            if block.init is not None:
                reduce_vars = [iv for iv in block.iter_vars if iv.iter_type == tir.COMM_REDUCE]
                cond = None
                for iv in reduce_vars:
                    at_min = tir.BinOp("eq", iv.var, iv.dom.min)
                    cond = at_min if cond is None else tir.BinOp("and", cond, at_min)
                if cond is None:
                    self.stmt(block.init)
                else:
                    self.stmt(tir.IfThenElse(cond, block.init))
            self.stmt(block.body)
            self.fp_contract -= contract

        if _is_true(s.predicate):
            run()
        else:
            cond = self.as_bool(self.expr(s.predicate))
            then, end = self.new_block("pred"), self.new_block("pred_end")
            self.builder.cbranch(cond, then, end)
            self.builder.position_at_end(then)
            run()
            if not self.builder.block.is_terminated:
                self.builder.branch(end)
            self.builder.position_at_end(end)
        if not self.builder.block.is_terminated:
            self.release(self.frees.pop())
        else:
            self.frees.pop()

    def s_SBlock(self, s: tir.SBlock) -> None:
        self.s_SBlockRealize(tir.SBlockRealize([], tir.IntImm(1, "bool"), s))

    def match_buffer(self, mb: tir.MatchBufferRegion) -> None:
        """`T.match_buffer(A[i:i+4, j])`: the new buffer starts at the region's first element."""
        src = mb.source
        ptr, _, _ = self.address(src.buffer, [r.min for r in src.region], mb)
        self.data[mb.buffer.data] = ptr
        if mb.buffer.strides or mb.buffer.elem_offset is not None:
            for e in (*mb.buffer.strides, *([mb.buffer.elem_offset] if mb.buffer.elem_offset is not None else [])):
                if isinstance(e, tir.Var) and e not in self.vars:
                    raise self.error(f"match_buffer `{mb.buffer.name}` with symbolic strides/offset", mb)

    def s_Return(self, s: tir.Return) -> None:
        raise self.error("`T.ret` (PrimFuncs returning a value)", s)

    # -------------------------------------------------------------- addresses
    def mem_type(self, dtype: str) -> ir.Type:
        base, _ = _split(dtype)
        return I8 if base == "bool" else scalar_type(base)

    def to_memory(self, value: ir.Value, dtype: str) -> ir.Value:
        return self.builder.zext(value, I8) if _split(dtype)[0] == "bool" else value

    def from_memory(self, value: ir.Value, dtype: str) -> ir.Value:
        if _split(dtype)[0] != "bool":
            return value
        zero = ir.Constant(value.type, None)
        return self.builder.icmp_unsigned("!=", value, zero)

    def address(self, buf: tir.Buffer, indices, node):
        """(pointer, lanes, per-lane index vector or None when contiguous/scalar)."""
        b = self.builder
        data = self.data.get(buf.data)
        if data is None:
            raise self.error(f"buffer `{buf.name}` is not allocated here", node)
        if buf.strides:
            if len(buf.strides) != len(indices):
                raise self.error(f"buffer `{buf.name}` accessed with {len(indices)} indices", node)
            strides = list(buf.strides)
        else:
            if len(buf.shape) != len(indices) and not (len(indices) == 1 and not buf.shape):
                raise self.error(f"buffer `{buf.name}` has {len(buf.shape)} dimensions, "
                                 f"accessed with {len(indices)} indices", node)
            strides = _row_major(buf.shape)
        lanes = max([_split(i.dtype)[1] for i in indices] or [1])
        index_terms = [_as_i64(i) if _is_one(st) else tir.BinOp("mul", _as_i64(i), _as_i64(st))
                       for i, st in zip(indices, strides)]
        offset_terms = [] if buf.elem_offset is None or _is_zero(buf.elem_offset) else [_as_i64(buf.elem_offset)]
        etype = self.mem_type(buf.dtype)
        last = indices[-1] if indices else None
        if lanes == 1 or (isinstance(last, tir.Ramp) and _is_one(last.stride) and _is_one(strides[-1])
                          and all(_split(i.dtype)[1] == 1 for i in indices[:-1])):
            # scalar, or contiguous: the address of the first lane
            terms = [*index_terms, *offset_terms] if lanes == 1 else \
                [*index_terms[:-1], *offset_terms, _as_i64(last.base)]
            offset = None
            for term in terms:
                v = self.expr(term)
                offset = v if offset is None else b.add(offset, v)
            return b.gep(data, [offset if offset is not None else I64(0)], source_etype=etype), lanes, None
        vec = None
        for term in (*index_terms, *offset_terms):
            v = self.broadcast_to(self.expr(term), term.dtype, lanes)
            vec = v if vec is None else b.add(vec, v)
        return data, lanes, vec


def _row_major(shape) -> list:
    strides, acc = [], None
    for dim in reversed(shape):
        strides.append(acc if acc is not None else tir.IntImm(1, "int64"))
        d = _as_i64(dim)
        if acc is None:
            acc = d
        elif isinstance(acc, tir.IntImm) and isinstance(d, tir.IntImm):
            acc = tir.IntImm(acc.value * d.value, "int64")
        else:
            acc = tir.BinOp("mul", acc, d)
    return list(reversed(strides))


def _to_slot(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """A value of at most 8 bytes as the i64 that carries it into a parallel task."""
    t = v.type
    if isinstance(t, ir.PointerType):
        return b.ptrtoint(v, I64)
    if isinstance(t, ir.IntType):
        return v if t.width == 64 else b.zext(v, I64)
    bits = _fwidth(t)
    as_int = b.bitcast(v, ir.IntType(bits))
    return as_int if bits == 64 else b.zext(as_int, I64)


def _from_slot(b: ir.IRBuilder, slot: ir.Value, t: ir.Type) -> ir.Value:
    if isinstance(t, ir.PointerType):
        return b.inttoptr(slot, PTR)
    if isinstance(t, ir.IntType):
        return slot if t.width == 64 else b.trunc(slot, t)
    bits = _fwidth(t)
    as_int = slot if bits == 64 else b.trunc(slot, ir.IntType(bits))
    return b.bitcast(as_int, t)


def _vars_used(stmt) -> list:
    """Every TIR variable a statement mentions, buffers' data, shapes and strides included."""
    seen, out, stack = set(), [], [stmt]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
            continue
        if not isinstance(x, tir.Node) or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, tir.Var):
            out.append(x)
        if isinstance(x, tir.Buffer):
            stack += [x.data, *x.shape, *x.strides, x.elem_offset]
        else:
            stack.extend(x.children())
    return out
