"""A whole model as one native entry point: `irtool.build(mod) -> Executable`.

    exe = irtool.build(mod)                  # Relay, Relax (any stage) or TIR
    y = exe(x)                               # NumPy in, NumPy out: one native call
    y = exe.run({"x": x}); exe.time(x)       # by name; a timing helper
    exe.export_library("model.so")           # a shared library (see export.py)

`build` brings the module to the form this file compiles: Relay through relay-to-relax,
then TVM's zero pipeline (legalize-ops, annotate-tir-op-pattern, fold-constant, fuse-ops,
fuse-tir) unless every Relax op is already a `call_tir`. Then the Relax `main` becomes one
LLVM function beside the PrimFuncs:

    i32 main(ptr args)     args = [input data..., output data..., symbolic sizes...]
      lv  = storage for call_tir #1's output     (planned: see `plan_storage`)
      call f1.impl(x, w, lv)          -> status  (a failure frees and returns it)
      gv  = the caller's output buffer           (the last call writes it directly)
      call f2.impl(lv, c0, gv)
      ...

Intermediate tensors share storage by liveness, with the greedy size-matching of TVM's
StaticPlanBlockMemory (one arena allocated per call); constants are the module's tensors,
passed by address (the JIT) or linked in (a shared library). Python checks the inputs
(dtype, rank, sizes, symbolic sizes bound consistently), allocates the outputs from the
struct info, and makes the one call.

A `main` that is not straight-line code (R.If, calls of Relax functions, R.match_cast,
run-time shapes) runs on the VM of vm.py instead: the same PrimFuncs, called one by one.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from ..diagnostics import DiagnosticError
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule
from .llvm_codegen import I32, I64, PTR, CodegenError, ModuleBuilder, _FunctionBuilder, scalar_type
from .vm import NativeVM, check_vm_module, needs_vm

ALIGN = 64  # bytes: every planned tensor starts on a cache line


class BuildError(DiagnosticError):
    """A module that cannot be built into native code (points at the construct)."""


# ----------------------------------------------------------------------------- the plan


@dataclass
class _Tensor:
    """A value of main: where it lives and how big it is."""

    var: object
    sinfo: rx.TensorStructInfo
    kind: str  # "input" | "output" | "const" | "temp"
    index: int = -1  # input/output/constant position, or storage token
    offset: int = 0  # byte offset in the arena (temps)
    first: int = -1  # the binding that defines it
    last_use: int = -1
    ptr: object = None  # its address in the code being generated
    storage: object = None  # a view's _Storage (kind "view")
    view_offset: object = None  # its byte offset in the storage


@dataclass
class _Storage:
    """`R.memory.alloc_storage(R.shape([bytes]), ...)` of the memory-planned form."""

    size: object  # bytes: an int or a TIR expression of main's sizes
    offset: int = 0  # in the arena, when static
    ptr: object = None


@dataclass
class MainPlan:
    inputs: list = field(default_factory=list)  # Var per input
    outputs: list = field(default_factory=list)  # StructInfo per output
    constants: list = field(default_factory=list)  # np.ndarray per constant
    arena_bytes: int = 0  # planned storage of the intermediates
    naive_bytes: int = 0  # one buffer per intermediate, for comparison
    size_vars: list = field(default_factory=list)  # symbolic sizes of the inputs, in order


def _bytes(sinfo: rx.TensorStructInfo) -> int | None:
    if not isinstance(sinfo.shape, tuple) or not all(isinstance(d, int) for d in sinfo.shape):
        return None
    n = 1
    for d in sinfo.shape:
        n *= d
    return n * np.dtype("bool" if sinfo.dtype == "bool" else sinfo.dtype).itemsize


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan_storage(sizes: list[int], first: list[int], last: list[int]) -> tuple[list[int], int]:
    """Offsets in one arena for tensors alive from first[i] to last[i] (binding indices), by
    TVM's StaticPlanBlockMemory/GraphPlanMemory rule: a freed block of storage is reused for
    the next request whose size is within a factor of 2 (`match_range`), the smallest fitting
    block first; otherwise new storage. Returns (offsets, arena size)."""
    order = sorted(range(len(sizes)), key=lambda i: first[i])
    free: list[tuple[int, int]] = []  # (capacity, offset)
    live: list[tuple[int, int, int]] = []  # (last use, capacity, offset)
    offsets, top = [0] * len(sizes), 0
    for i in order:
        for entry in [e for e in live if e[0] < first[i]]:
            live.remove(entry)
            free.append((entry[1], entry[2]))
        need = _align(max(sizes[i], 1))
        fits = sorted((cap, off) for cap, off in free if need <= cap <= 2 * need or cap // 2 <= need <= cap)
        if fits:
            cap, off = fits[0]
            free.remove((cap, off))
        else:
            cap, off = need, top
            top += need
        offsets[i] = off
        live.append((last[i], cap, off))
    return offsets, top


# ----------------------------------------------------------------------------- lowering main


def _call_tir_parts(call: rx.Call):
    gv, args = call.args[0], call.args[1]
    args = list(args.fields_) if isinstance(args, rx.Tuple) else [args]
    extra = list(call.args[2].values) if len(call.args) > 2 and isinstance(call.args[2], rx.ShapeExpr) else []
    return gv, args, extra


class _MainBuilder(_FunctionBuilder):
    """Relax `main` (call_tir form) -> `i32 main(ptr args)`; reuses the PrimFunc builder for
    size expressions, allocation and failure handling."""

    def __init__(self, mb: ModuleBuilder, mod: IRModule, fn: rx.Function, name: str) -> None:
        from .llvm_codegen import PackedSignature

        super().__init__(mb, tir.PrimFunc([], tir.Evaluate(tir.IntImm(0, "int32"))), PackedSignature(name))
        self.mod, self.relax_fn = mod, fn
        self.plan = MainPlan()
        self.values: dict = {}  # relax Var -> _Tensor | tuple of them

    def fail_at(self, message: str, node) -> BuildError:
        return BuildError(f"cannot build natively: {message}", getattr(node, "span", None))

    # -------------------------------------------------------------- analysis
    def bindings(self) -> list:
        body = self.relax_fn.body
        out = []
        for block in body.blocks:
            for b in block.bindings:
                if isinstance(b, rx.MatchCast):
                    raise self.fail_at("R.match_cast in main", b)
                out.append(b)
        return out

    def analyse(self):
        fn, plan = self.relax_fn, self.plan
        for p in fn.params:
            s = p.struct_info
            if not isinstance(s, rx.TensorStructInfo) or not isinstance(s.shape, tuple) or not s.dtype:
                raise self.fail_at(f"parameter `{p.name_hint}` must be a tensor of known rank and dtype", p)
            self.values[p] = _Tensor(p, s, "input", len(plan.inputs))
            plan.inputs.append(p)
            for d in s.shape:
                if isinstance(d, tir.Var) and d not in plan.size_vars:
                    plan.size_vars.append(d)
        bindings = self.bindings()
        for k, b in enumerate(bindings):
            self.values[b.var] = self.value_of(b.value, k, b)
        result = fn.body.body
        returned = self.use(result, len(bindings))
        outputs = list(returned) if isinstance(returned, tuple) else [returned]
        if isinstance(returned, tuple) and any(isinstance(o, tuple) for o in outputs):
            raise self.fail_at("nested tuple results", result)
        self.returned_tuple = isinstance(returned, tuple)
        # a temp returned once becomes the caller's output buffer; anything else is copied there
        self.output_of: dict[int, int] = {}
        self.copies: list[tuple[_Tensor, int]] = []
        counts: dict[int, int] = {}
        for t in outputs:
            counts[id(t)] = counts.get(id(t), 0) + 1
        for k, t in enumerate(outputs):
            plan.outputs.append(t.sinfo)
            if t.kind == "temp" and counts[id(t)] == 1:
                t.kind, t.index = "output", k
            else:
                self.copies.append((t, k))
        return bindings

    def use(self, e, at: int):
        if isinstance(e, rx.Var):
            if e not in self.values:
                raise self.fail_at(f"`{e.name_hint}` is not defined", e)
            value = self.values[e]
        elif isinstance(e, rx.Tuple):
            return tuple(self.use(f, at) for f in e.fields_)
        elif isinstance(e, rx.Constant):
            value = self.constant(e)
        else:
            raise self.fail_at(f"`{type(e).__name__}` as an operand in main", e)
        for t in value if isinstance(value, tuple) else (value,):
            if isinstance(t, _Tensor):
                t.last_use = max(t.last_use, at)
        return value

    def constant(self, c: rx.Constant) -> _Tensor:
        if c in self.values:
            return self.values[c]
        if c.data is None:
            raise self.fail_at("a constant without data (the file has no metadata section)", c)
        s = c.struct_info
        t = self.values[c] = _Tensor(c, s, "const", len(self.plan.constants))
        self.plan.constants.append(np.ascontiguousarray(c.data))
        return t

    def value_of(self, e, k: int, binding):
        """The value a binding names. Besides the call_tir form, the memory-planned form of
        call-tir-rewrite + static-plan-block-memory is read: storages, tensors viewing them,
        fresh allocations and destination-passing PrimFunc calls."""
        if isinstance(e, rx.Call) and isinstance(e.op, Op) and e.op.name.startswith(("relax.memory.",
                                                                                      "relax.builtin.")):
            return self.memory_value(e, k, binding)
        if isinstance(e, rx.Call) and isinstance(e.op, GlobalVar) and \
                isinstance(self.mod.functions.get(e.op.name_hint), tir.PrimFunc):
            for a in e.args:
                if not isinstance(a, rx.PrimValue):
                    self.use(a, k)
            return ()
        if isinstance(e, rx.Call) and isinstance(e.op, Op) and e.op.name == "relax.call_tir":
            gv, args, _ = _call_tir_parts(e)
            if not isinstance(self.mod.functions.get(gv.name_hint), tir.PrimFunc):
                raise self.fail_at(f"`{gv.name_hint}` is not a PrimFunc", e)
            for a in args:
                if not isinstance(a, rx.PrimValue):  # a scalar argument (arange's bounds) is no tensor
                    self.use(a, k)
            out = e.sinfo_args[0]
            fields = list(out.fields_) if isinstance(out, rx.TupleStructInfo) else [out]
            temps = []
            for s in fields:
                if not isinstance(s, rx.TensorStructInfo) or not isinstance(s.shape, tuple):
                    raise self.fail_at("a call_tir output without a static rank", e)
                temps.append(_Tensor(binding.var, s, "temp", first=k))
            return tuple(temps) if isinstance(out, rx.TupleStructInfo) else temps[0]
        if isinstance(e, (rx.Var, rx.Tuple, rx.Constant)):
            return self.use(e, k)
        if isinstance(e, rx.TupleGetItem):
            t = self.use(e.tuple_value, k)
            if not isinstance(t, tuple):
                raise self.fail_at("a projection of a non-tuple", e)
            return t[e.index]
        if isinstance(e, rx.Call) and isinstance(e.op, Op):
            raise self.fail_at(f"`{e.op.name.replace('relax.', 'R.')}` was not lowered to TIR "
                               f"(legalize-ops has no legalization for it)", e)
        raise self.fail_at(f"`{type(e).__name__}` in main", e)

    def memory_value(self, e: rx.Call, k: int, binding):
        name = e.op.name
        if name == "relax.memory.alloc_storage":
            size = e.args[0].values[0] if isinstance(e.args[0], rx.ShapeExpr) else None
            if size is None:
                raise self.fail_at("R.memory.alloc_storage needs its size as R.shape([bytes])", e)
            return _Storage(size)
        if name == "relax.memory.alloc_tensor":
            storage = self.use(e.args[0], k)
            if not isinstance(storage, _Storage):
                raise self.fail_at("R.memory.alloc_tensor of something that is not a storage", e)
            offset = e.args[1].value if isinstance(e.args[1], rx.PrimValue) else 0
            return _Tensor(binding.var, binding.var.struct_info, "view", first=k, storage=storage,
                           view_offset=offset)
        if name == "relax.builtin.alloc_tensor":
            s = binding.var.struct_info
            if not isinstance(s, rx.TensorStructInfo) or not isinstance(s.shape, tuple):
                raise self.fail_at("R.builtin.alloc_tensor without a static rank", e)
            return _Tensor(binding.var, s, "temp", first=k)
        if name in ("relax.memory.kill_storage", "relax.memory.kill_tensor"):
            return ()
        raise self.fail_at(f"`{name.replace('relax.', 'R.')}` in main", e)

    def emit_direct_call(self, call: rx.Call, k: int) -> None:
        """`cls.f(inputs..., outputs...)`: a destination-passing call of a PrimFunc."""
        args = [a for a in call.args if not isinstance(a, rx.PrimValue)]
        prims = [a.value for a in call.args if isinstance(a, rx.PrimValue)]
        self.call_prim_func(call.op, [self.use(a, k) for a in args], prims, call)

    # -------------------------------------------------------------- code
    def build_main(self) -> MainPlan:
        bindings = self.analyse()
        plan = self.plan
        temps = [t for t in self._all_tensors() if t.kind == "temp"]
        static = [t for t in temps if _bytes(t.sinfo) is not None]
        sizes = [_bytes(t.sinfo) for t in static]
        offsets, plan.arena_bytes = plan_storage(sizes, [t.first for t in static],
                                                  [max(t.last_use, t.first) for t in static])
        plan.naive_bytes = sum(_align(max(s, 1)) for s in sizes)
        for t, off in zip(static, offsets):
            t.offset = off
        n_in, n_out = len(plan.inputs), len(plan.outputs)
        fn = ir.Function(self.mb.module, ir.FunctionType(I32, [PTR]), self.sig.name)
        self.fn = fn
        self.builder = b = ir.IRBuilder(fn.append_basic_block("entry"))
        slots = fn.args[0]

        def slot(i):
            return b.load(b.gep(slots, [I64(i)], source_etype=PTR), typ=PTR)

        self.inputs_ptr = [slot(i) for i in range(n_in)]
        self.outputs_ptr = [slot(n_in + i) for i in range(n_out)]
        for k, v in enumerate(plan.size_vars):
            self.vars[v] = b.load(slot(n_in + n_out + k), typ=scalar_type(v.dtype))
        table = self.mb.constant_table(len(plan.constants))
        self.const_ptr = lambda i: b.load(b.gep(table, [I64(0), I64(i)]), typ=PTR)
        self.frees.append([])
        arena = None
        if plan.arena_bytes:
            arena = b.call(self.mb.declare("aligned_alloc", PTR, [I64, I64]), [I64(ALIGN), I64(plan.arena_bytes)])
            self.frees[-1].append(arena)
        self.arena = arena
        self.place_storages()
        for k, binding in enumerate(bindings):
            e = binding.value
            if isinstance(e, rx.Call) and isinstance(e.op, Op) and e.op.name == "relax.call_tir":
                self.emit_call(e, self.values[binding.var], k)
            elif isinstance(e, rx.Call) and isinstance(e.op, GlobalVar) and \
                    isinstance(self.mod.functions.get(e.op.name_hint), tir.PrimFunc):
                self.emit_direct_call(e, k)
        for t, k in self.copies:
            self.copy(self.pointer(t), self.outputs_ptr[k], t.sinfo)
        self.release(self.frees.pop())
        b.ret(I32(0))
        return plan

    def _all_tensors(self):
        seen = set()
        for v in self.values.values():
            for t in v if isinstance(v, tuple) else (v,):
                if isinstance(t, _Tensor) and id(t) not in seen:
                    seen.add(id(t))
                    yield t

    def place_storages(self) -> None:
        """The memory plan's storages: static sizes in the arena (after what was planned
        here), symbolic ones allocated at entry; freed at the end."""
        b = self.builder
        storages, seen = [], set()
        for t in self._all_tensors():
            if t.kind == "view" and id(t.storage) not in seen:
                seen.add(id(t.storage))
                storages.append(t.storage)
        for t in self._all_tensors():
            if t.kind == "view" and _bytes(t.sinfo) is not None:
                self.plan.naive_bytes += _align(max(_bytes(t.sinfo), 1))
        static = [st for st in storages if isinstance(st.size, (int, tir.IntImm))]
        for st in static:
            st.offset = self.plan.arena_bytes
            self.plan.arena_bytes += _align(int(getattr(st.size, "value", st.size)))
        if static:
            if self.arena is not None:  # grow: one arena for both
                self.frees[-1].remove(self.arena)
                b.call(self.mb.declare("free", ir.VoidType(), [PTR]), [self.arena])
            self.arena = b.call(self.mb.declare("aligned_alloc", PTR, [I64, I64]),
                                [I64(ALIGN), I64(self.plan.arena_bytes)])
            self.frees[-1].append(self.arena)
            for st in static:
                st.ptr = b.gep(self.arena, [I64(st.offset)], source_etype=ir.IntType(8))
        for st in storages:
            if st.ptr is None:
                size = _as_prim(st.size)
                st.ptr = self.allocate("uint8", [size], None)

    def pointer(self, t: _Tensor) -> ir.Value:
        b = self.builder
        if t.kind == "view":
            if t.ptr is None:
                offset = self.cast_to(self.expr(_as_prim(t.view_offset)), _as_prim(t.view_offset).dtype, "int64")
                t.ptr = b.gep(t.storage.ptr, [offset], source_etype=ir.IntType(8))
            return t.ptr
        if t.kind == "input":
            return self.inputs_ptr[t.index]
        if t.kind == "output":
            return self.outputs_ptr[t.index]
        if t.kind == "const":
            return self.const_ptr(t.index)
        if t.ptr is None:
            if _bytes(t.sinfo) is not None:
                t.ptr = b.gep(self.arena, [I64(t.offset)], source_etype=ir.IntType(8))
            else:  # symbolic size: its own allocation, freed at the end
                t.ptr = self.allocate(t.sinfo.dtype, [_as_prim(d) for d in t.sinfo.shape], t.var)
        return t.ptr

    def size_in_bytes(self, s: rx.TensorStructInfo) -> ir.Value:
        b = self.builder
        n = I64(np.dtype("bool" if s.dtype == "bool" else s.dtype).itemsize)
        for d in s.shape:
            n = b.mul(n, self.cast_to(self.expr(_as_prim(d)), _as_prim(d).dtype, "int64"))
        return n

    def copy(self, src: ir.Value, dst: ir.Value, s: rx.TensorStructInfo) -> None:
        memcpy = self.mb.declare("llvm.memcpy.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)])
        self.builder.call(memcpy, [dst, src, self.size_in_bytes(s), ir.IntType(1)(0)])

    def emit_call(self, call: rx.Call, result, k: int) -> None:
        gv, args, extra = _call_tir_parts(call)
        outs = list(result) if isinstance(result, tuple) else [result]
        # call_tir passes its arguments positionally: tensors and PrimValues, outputs, tir_vars
        prims = [a.value for a in args if isinstance(a, rx.PrimValue)] + [_as_prim(v) for v in extra]
        actual = [self.values[a] if isinstance(a, rx.Var) else self.use(a, k)
                  for a in args if not isinstance(a, rx.PrimValue)] + outs
        self.call_prim_func(gv, actual, prims, call)

    def call_prim_func(self, gv, actual: list, prims: list, call) -> None:
        """Call PrimFunc `gv` on tensors `actual` (inputs, then outputs) and scalars `prims`."""
        b = self.builder
        sig = self.mb.signatures.get(gv.name_hint)
        buffers = [obj for kind, obj in sig.params if kind == "buffer"]
        scalars = [obj for kind, obj in sig.params if kind != "buffer"]
        if len(buffers) != len(actual) or len(scalars) != len(prims):
            raise self.fail_at(f"`{gv.name_hint}` takes {len(buffers)} buffers and {len(scalars)} scalars; "
                               f"call_tir passes {len(actual)} tensors and {len(prims)} values", call)
        # the callee's symbolic sizes, from the shapes of what is passed
        bound: dict = {}
        for buf, t in zip(buffers, actual):
            if len(buf.shape) != len(t.sinfo.shape):
                raise self.fail_at(f"`{gv.name_hint}`'s buffer `{buf.name}` has rank {len(buf.shape)}, "
                                   f"the tensor passed has rank {len(t.sinfo.shape)}", call)
            for dim, actual_dim in zip(buf.shape, t.sinfo.shape):
                if isinstance(dim, tir.Var) and dim not in bound:
                    bound[dim] = _as_prim(actual_dim)
            if isinstance(buf.elem_offset, tir.Var) and buf.elem_offset not in bound:
                # te.extern's symbolic offset: the tensors passed here are whole, never views
                bound[buf.elem_offset] = tir.IntImm(0, buf.elem_offset.dtype)
        call_args = []
        for kind, obj in sig.params:
            if kind == "buffer":
                call_args.append(self.pointer(actual[buffers.index(obj)]))
            else:
                e = _as_prim(prims[scalars.index(obj)])
                call_args.append(self.cast_to(self.expr(e), e.dtype, obj.dtype))
        for v in sig.size_vars:
            if v not in bound:
                raise self.fail_at(f"cannot tell `{gv.name_hint}`'s size `{v.name}` from its arguments", call)
            call_args.append(self.cast_to(self.expr(bound[v]), bound[v].dtype, v.dtype))
        status = b.call(self.mb.module.globals[f"{sig.llvm_name}.impl"], call_args)
        ok, bad = self.new_block("call_ok"), self.new_block("call_failed")
        b.cbranch(b.icmp_signed("==", status, I32(0)), ok, bad)
        b.position_at_end(bad)
        for scope in reversed(self.frees):
            self.release(scope)
        b.ret(status)
        b.position_at_end(ok)


def _call_site(main: rx.Function | None, prim_func: str | None):
    """The source location of main's first call of `prim_func` (a PrimFunc made by
    legalize-ops/fuse-tir has none of its own), or None."""
    if main is None or prim_func is None:
        return None
    for block in main.body.blocks:
        for b in block.bindings:
            v = b.value
            call_tir = isinstance(v, rx.Call) and isinstance(v.op, Op) and v.op.name == "relax.call_tir"
            direct = isinstance(v, rx.Call) and isinstance(v.op, GlobalVar)  # after call-tir-rewrite
            if (call_tir and getattr(v.args[0], "name_hint", None) == prim_func) or \
                    (direct and v.op.name_hint == prim_func):
                for node in (v, b, b.var):
                    if getattr(node, "span", None) is not None:
                        return node.span
    return None


def _as_prim(d) -> tir.PrimExpr:
    return tir.IntImm(d, "int64") if isinstance(d, int) else d


# ----------------------------------------------------------------------------- preparing the module


def _needs_pipeline(mod: IRModule) -> bool:
    from .vm import _bindings

    for fn in mod.functions.values():
        if not isinstance(fn, rx.Function):
            continue
        for b in _bindings(fn.body):  # (into the branches of ifs)
            v = b.value
            if isinstance(v, rx.Call) and isinstance(v.op, Op) and v.op.name != "relax.call_tir":
                return True
            if isinstance(v, rx.Call) and isinstance(v.op, GlobalVar):
                return True
    return False


RELAY_INFERENCE_PASSES = ("simplify-inference", "fold-constant", "fold-scale-axis", "fold-constant")


def prepare(mod: IRModule, entry: str = "main", schedule: bool | dict = True, plan_memory: bool = True) -> IRModule:
    """Relay (after RELAY_INFERENCE_PASSES) -> Relax -> the zero pipeline, as far as `mod` needs;
    then, for a model (a Relax entry function), `default-cpu-schedule` on its PrimFuncs (those
    already scheduled stay) and TVM's memory planning (to-non-dataflow, remove-purity-checking, call-tir-rewrite,
    static-plan-block-memory), whose storages the entry point allocates."""
    from ..ir.expr import Function as RelayFunction
    from ..transform import PassContext, get_pass

    if any(isinstance(f, RelayFunction) for f in mod.functions.values()):
        with PassContext(opt_level=3):
            # relay.build's inference simplifications at opt level 3: batch norms become a
            # scale and a shift, folded into the convolutions' weights and biases
            for name in RELAY_INFERENCE_PASSES:
                mod = get_pass(name)()(mod)
        mod = get_pass("relay-to-relax")()(mod)
    fn = mod.functions.get(entry)
    if isinstance(fn, rx.Function) and _needs_pipeline(mod):
        with PassContext(opt_level=3):
            mod = get_pass("zero-pipeline")()(mod)
    main = mod.functions.get(entry)
    if isinstance(main, rx.Function) and schedule is not False:
        options = schedule if isinstance(schedule, dict) else {}
        mod = get_pass("default-cpu-schedule")(**options)(mod)
    # TVM's static plan is for straight-line code; the VM (vm.py) allocates as it runs
    if isinstance(main, rx.Function) and plan_memory and _calls_tir(main) and not needs_vm(mod, main):
        for name in ("to-non-dataflow", "remove-purity-checking", "call-tir-rewrite", "static-plan-block-memory"):
            mod = get_pass(name)()(mod)
    return mod


def _calls_tir(fn: rx.Function) -> bool:
    return any(isinstance(b.value, rx.Call) and isinstance(b.value.op, Op) and b.value.op.name == "relax.call_tir"
               for block in fn.body.blocks for b in block.bindings)


# ----------------------------------------------------------------------------- the executable


def _static_signature(plan: MainPlan):
    """((dtype, shape) per input, per output) when every size is a constant, else None:
    a call's checks are then tuple comparisons (a 0.1 ms model pays microseconds)."""
    if plan.size_vars:
        return None
    sides = []
    for infos in ([p.struct_info for p in plan.inputs], plan.outputs):
        if not all(isinstance(d, int) for s in infos for d in s.shape):
            return None
        sides.append([(np.dtype("bool" if s.dtype == "bool" else s.dtype), tuple(s.shape)) for s in infos])
    return tuple(sides)


class Executable:
    """A compiled module. A Relax `main` is called as a model; a TIR-only module exposes
    its PrimFuncs (`exe["f"](a, b, out)`)."""

    def __init__(self, mod: IRModule, entry: str = "main", opt_level: int = 3, schedule: bool | dict = True) -> None:
        from .native import NativeLibrary

        started = time.perf_counter()
        source = mod
        self.mod = mod = prepare(mod, entry, schedule)
        self.entry = entry
        fn = mod.functions.get(entry)
        self.main = fn if isinstance(fn, rx.Function) else None
        self.plan: MainPlan | None = None
        self.vm: NativeVM | None = None
        extra = None
        use_vm = self.main is not None and needs_vm(mod, self.main)
        if use_vm:
            check_vm_module(mod, entry)
        elif self.main is not None:
            def extra(mb: ModuleBuilder):
                builder = _MainBuilder(mb, mod, self.main, "irtool_main")
                self.plan = builder.build_main()
                self.returned_tuple = builder.returned_tuple
        try:
            self.lib = NativeLibrary(mod, opt_level, extra=extra)
        except CodegenError as err:
            span = None
            if err.span is None and self.main is not None:  # the memory passes keep no spans: look before them
                before = prepare(source, entry, schedule, plan_memory=False).functions.get(entry)
                span = _call_site(before, getattr(err, "prim_func", None))
            if span is None:
                raise
            raise BuildError(f"{err} (in PrimFunc `{err.prim_func}`, called here)", span) from None
        self.compile_seconds = time.perf_counter() - started
        if use_vm:
            self.vm = NativeVM(mod, self.lib, schedule)
        elif self.main is not None:
            self._entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
                self.lib.engine.get_function_address("irtool_main"))
            self._constants = list(self.plan.constants)
            self._signature = _static_signature(self.plan)
            table = self.lib.engine.get_global_value_address("irtool.constants")
            for i, c in enumerate(self._constants):
                ctypes.c_void_p.from_address(table + 8 * i).value = c.ctypes.data

    def __getitem__(self, name: str):
        return self.lib[name]

    @property
    def input_names(self) -> list[str]:
        return [p.name_hint for p in (self.main.params if self.vm is not None else self.plan.inputs)]

    def _check_inputs(self, arrays) -> dict:
        from .native import NativeError

        plan = self.plan
        if len(arrays) != len(plan.inputs):
            raise NativeError(f"{self.entry} takes {len(plan.inputs)} inputs, got {len(arrays)}")
        env: dict = {}
        for p, a in zip(plan.inputs, arrays):
            s = p.struct_info
            where = f"input `{p.name_hint}`"
            if not isinstance(a, np.ndarray):
                raise NativeError(f"{where} must be a NumPy array, got {type(a).__name__}")
            if a.dtype != np.dtype("bool" if s.dtype == "bool" else s.dtype):
                raise NativeError(f"{where} has dtype {a.dtype}, expected {s.dtype}")
            if a.ndim != len(s.shape):
                raise NativeError(f"{where} has rank {a.ndim}, expected {len(s.shape)}")
            for axis, (d, n) in enumerate(zip(s.shape, a.shape)):
                if isinstance(d, int) and d != n:
                    raise NativeError(f"{where} dimension {axis} is {n}, expected {d}")
                if isinstance(d, tir.Var) and env.setdefault(d, n) != n:
                    raise NativeError(f"{where} dimension {axis} is {n}, but `{d.name}` is already {env[d]}")
        return env

    def __call__(self, *arrays):
        if self.main is None:
            raise TypeError("this module has no Relax entry function; call its PrimFuncs by name")
        if self.vm is not None:
            return self.vm.run(self.entry, arrays)
        sig = self._signature
        if sig is not None and len(arrays) == len(sig[0]) and all(
                type(a) is np.ndarray and a.dtype == dt and a.shape == shape and a.flags.c_contiguous
                for a, (dt, shape) in zip(arrays, sig[0])):
            outputs = [np.empty(shape, dt) for dt, shape in sig[1]]
            slots = (ctypes.c_void_p * (len(arrays) + len(outputs)))(*[a.ctypes.data for a in (*arrays, *outputs)])
            if self._entry(ctypes.addressof(slots)) != 0:
                from .native import NativeError

                raise NativeError(f"{self.entry}: {self.lib.last_error()}")
            return tuple(outputs) if self.returned_tuple else outputs[0]
        from .native import NativeError, _eval_size

        arrays = [np.asarray(a, order="C") for a in arrays]  # (ascontiguousarray makes a 0-d array 1-d)
        env = self._check_inputs(arrays)
        outputs = []
        for s in self.plan.outputs:
            shape = []
            for d in s.shape:
                value = _eval_size(_as_prim(d), env)
                if value is None:
                    raise NativeError(f"cannot compute the output size `{d}` from the inputs")
                shape.append(value)
            outputs.append(np.empty(shape, "bool" if s.dtype == "bool" else s.dtype))
        slots = (ctypes.c_void_p * (len(arrays) + len(outputs) + len(self.plan.size_vars)))()
        cells = []
        for i, a in enumerate([*arrays, *outputs]):
            slots[i] = a.ctypes.data
        for k, v in enumerate(self.plan.size_vars):
            cell = ctypes.c_int64(env[v]) if v.dtype == "int64" else ctypes.c_int32(env[v])
            cells.append(cell)
            slots[len(arrays) + len(outputs) + k] = ctypes.addressof(cell)
        status = self._entry(ctypes.addressof(slots))
        if status != 0:
            raise NativeError(f"{self.entry}: {self.lib.last_error()}")
        return tuple(outputs) if self.returned_tuple else outputs[0]

    def run(self, inputs: dict):
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            from .native import NativeError

            raise NativeError(f"missing inputs: {', '.join(missing)}")
        return self(*[inputs[n] for n in self.input_names])

    def time(self, *arrays, repeat: int = 10, warmup: int = 1) -> dict:
        """Median and minimum wall time of `repeat` calls, in milliseconds."""
        for _ in range(warmup):
            self(*arrays)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            self(*arrays)
            times.append((time.perf_counter() - t) * 1e3)
        times.sort()
        return {"median_ms": times[len(times) // 2], "min_ms": times[0], "repeat": repeat}

    def export_library(self, path: str) -> str:
        """Write a shared library with the model and its C header; returns the header's path."""
        from .export import export_library

        return export_library(self, path)

    def memory_summary(self) -> str:
        p = self.plan
        if self.vm is not None:
            return "allocated as the VM runs (control flow, calls or run-time shapes: see codegen/vm.py)"
        return (f"intermediate storage: {p.arena_bytes} bytes planned, {p.naive_bytes} bytes "
                f"with one buffer per tensor") if p else "no Relax entry function"


def build(mod: IRModule, target: str = "llvm", entry: str = "main", opt_level: int = 3,
          schedule: bool | dict = True) -> Executable:
    """Compile a module (Relay, Relax at any stage, or TIR) for the host CPU; `schedule=False`
    compiles the zero pipeline's PrimFuncs as they are (no default-cpu-schedule), a dict gives
    default-cpu-schedule's options (`{"fp_contract": 0}`: results bit-identical to the
    interpreter)."""
    if target not in ("llvm", "native"):
        raise BuildError(f"unknown target `{target}` (the native backend is `llvm`)")
    return Executable(mod, entry, opt_level, schedule)
