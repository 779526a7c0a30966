"""Native code for TIR: LLVM IR from llvm_codegen.py, optimised for the host and JIT-compiled.

    lib = compile_tir(mod)                 # every PrimFunc of an IRModule (or one PrimFunc)
    lib["add"](a, b, out)                  # NumPy arrays, as run_prim_func takes them
    lib.llvm_ir, lib.assembly()            # what was generated

The target is the host: LLVM's name for its CPU and the features it reports (AVX2,
AVX-512... as present), never assumed. Optimisation is LLVM's O3 pipeline with loop and
SLP vectorisation; fast-math is off unless asked for. Arguments are checked before the
call (dtype, rank, static sizes, and symbolic sizes bound consistently), so a wrong input
is a Python error, never a crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import re
import sys
import tempfile

import llvmlite.binding as llvm
import numpy as np

from ..ir import tir
from ..ir.module import IRModule
from .llvm_codegen import CodegenError, ModuleBuilder, PackedSignature


class NativeError(RuntimeError):
    """A failed check of a compiled function's arguments, or a failed `T.assert` inside it."""


@functools.lru_cache(maxsize=1)
def _load_libm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    path = ctypes.util.find_library("m")
    if path:
        llvm.load_library_permanently(path)


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """LLVM's name for the host CPU and its feature string (`+avx2,+fma,...`)."""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def target_machine(opt: int = 3, reloc: str = "pic", generic: bool = False) -> llvm.TargetMachine:
    """The host CPU's target machine; `generic`: LLVM's generic CPU of the host's triple, no
    features beyond its baseline (x86-64: SSE2, no FMA), which TVM's Target("llvm") gets
    (its default `-mcpu=generic`)."""
    _load_libm()
    if generic:
        return llvm.Target.from_default_triple().create_target_machine(
            cpu="generic", features="", opt=opt, reloc=reloc, codemodel="default", jit=False)
    cpu, features = host_cpu()
    if "+avx512f" in features.split(","):
        # default-cpu-schedule sizes its vector loops to the widest registers (16 floats);
        # LLVM's tuning for AVX-512 cores prefers 256-bit vectors and would make each of those
        # a loop of two halves, which stays a loop: a stencil's accumulators then go through
        # memory at every tap instead of staying in registers
        features += ",-prefer-256-bit"
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, reloc=reloc, codemodel="default",
                                        jit=False)


# what LLVM prints, on the process's stderr, for a loop marked `llvm.loop.vectorize.enable` (the
# schedule's vectorised loops) that it does not vectorise: the code is correct, scalar there
_MISSED_VECTORIZATION = re.compile(r"loop not vectorized")


@contextlib.contextmanager
def _without_missed_vectorization_reports():
    """LLVM's diagnostics written to file descriptor 2 while the block runs, minus its reports of
    loops it did not vectorise (llvmlite sets no diagnostic handler to keep them from a user's
    terminal); anything else LLVM says is written on."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines = sink.read().decode("utf-8", "replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not _MISSED_VECTORIZATION.search(line))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def optimize(llmod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int = 3, like_tvm: bool = False) -> None:
    with _without_missed_vectorization_reports():
        if like_tvm:
            _optimize_like_tvm(llmod, tm, level)
        else:
            _optimize(llmod, tm, level)


def _optimize_like_tvm(llmod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int) -> None:
    """TVM's CodeGenLLVM::Optimize: `default<O3>` once, with LLVM's default tuning options (loop
    vectoriser and unroller on, SLP off). What LLVM unrolls fully it constant-folds, and an
    `llvm.fmuladd` of constants folds with one rounding: the same passes give the same bits."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = False
    pto.loop_unrolling = True
    pto.loop_interleaving = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(llmod, pb)


def _optimize(llmod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = level >= 2
    pto.slp_vectorization = level >= 2
    pto.loop_unrolling = level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(llmod, pb)
    if level >= 2:
        # Once more: the loop vectoriser and the unroller run late in the pipeline, so a
        # register tile (default-cpu-schedule's contractions) only becomes loop-invariant
        # vector accesses after the first run; the second one's LICM keeps them in
        # registers across the reduction loop instead of a load and a store per step.
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(llmod, pb)


def _prim_funcs(mod) -> list[tuple[str, tir.PrimFunc]]:
    if isinstance(mod, tir.PrimFunc):
        return [(str(mod.attr("global_symbol") or "main"), mod)]
    return [(name, fn) for name, fn in mod.functions.items() if isinstance(fn, tir.PrimFunc)]


def generate_llvm(mod, module_name: str = "irtool", extra=None,
                  tvm_lowering: bool = False) -> tuple[str, dict[str, PackedSignature]]:
    """LLVM IR text (before optimisation) for every PrimFunc of `mod`, and their signatures.

    The builder recurses along expression nesting; deeply nested TIR (a 100k-term sum) gets
    a thread with a large stack and a matching recursion limit instead of a RecursionError."""
    def build():
        mb = ModuleBuilder(module_name, tvm_lowering=tvm_lowering)
        for name, fn in _prim_funcs(mod):
            try:
                mb.add(fn, name)
            except CodegenError as err:  # which PrimFunc: generated ones have no source location
                err.prim_func = name
                raise
        if extra is not None:  # more code over the PrimFuncs (a model's entry point)
            extra(mb)
        return str(mb.module), mb.signatures

    return _with_deep_stack(build)


def _with_deep_stack(fn):
    import sys
    import threading

    result, error = [], []

    def run():
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 200_000))
        try:
            result.append(fn())
        except BaseException as err:  # re-raised in the caller's thread
            error.append(err)
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size()
    threading.stack_size(512 * 1024 * 1024)
    try:
        worker = threading.Thread(target=run, name="irtool-codegen")
        worker.start()
    finally:
        threading.stack_size(old_size)
    worker.join()
    if error:
        raise error[0]
    return result[0]


class _Runtime:
    """The process-wide thread pool (runtime.py), JIT-compiled once; generated modules
    call it through the symbol `irtool_parallel_for`."""

    def __init__(self) -> None:
        import llvmlite.ir as ir

        from .runtime import build_runtime

        tm = target_machine()
        module = ir.Module("irtool_runtime")
        build_runtime(module, tm.triple)
        llmod = llvm.parse_assembly(str(module))
        llmod.triple, llmod.data_layout = tm.triple, str(tm.target_data)
        optimize(llmod, tm)
        self.engine = llvm.create_mcjit_compiler(llmod, tm)
        self.engine.finalize_object()
        for name in ("irtool_parallel_for", "irtool_set_num_threads", "irtool_get_num_threads"):
            llvm.add_symbol(name, self.engine.get_function_address(name))
        self._set = ctypes.CFUNCTYPE(None, ctypes.c_int32)(self.engine.get_function_address("irtool_set_num_threads"))
        self._get = ctypes.CFUNCTYPE(ctypes.c_int32)(self.engine.get_function_address("irtool_get_num_threads"))
        self.set_num_threads(default_num_threads())

    def set_num_threads(self, n: int) -> None:
        self._set(int(n))

    def num_threads(self) -> int:
        return int(self._get())


def default_num_threads() -> int:
    """The cores this process may run on (`IRTOOL_NUM_THREADS` overrides)."""
    import os

    env = os.environ.get("IRTOOL_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=1)
def runtime() -> _Runtime:
    return _Runtime()


def set_num_threads(n: int) -> None:
    """Threads for `T.parallel` loops in native code (1: run them serially)."""
    runtime().set_num_threads(n)


def num_threads() -> int:
    return runtime().num_threads()


class NativeFunction:
    """A compiled PrimFunc: call it with the arguments `run_prim_func` takes."""

    def __init__(self, lib: NativeLibrary, sig: PackedSignature, address: int) -> None:
        self.lib, self.sig = lib, sig
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(address)
        self._static = _static_buffers(sig)

    def __call__(self, *args) -> None:
        static = self._static
        if static is not None and len(args) == len(static) and all(
                type(a) is np.ndarray and a.dtype == dt and a.shape == shape and a.flags.c_contiguous
                for a, (dt, shape) in zip(args, static)):
            # every buffer of constant shape, as given: tuple comparisons (the VM calls kernels one by one)
            slots = (ctypes.c_void_p * len(args))(*[a.ctypes.data for a in args])
            if self._cfunc(ctypes.addressof(slots)) != 0:
                raise NativeError(f"{self.sig.name}: {self.lib.last_error()}")
            return
        sig = self.sig
        if len(args) != len(sig.params):
            raise NativeError(f"{sig.name} takes {len(sig.params)} arguments, got {len(args)}")
        env: dict[tir.Var, int] = {}
        slots = (ctypes.c_void_p * (len(sig.params) + len(sig.size_vars)))()
        keep = []
        pending = []
        for i, ((kind, obj), arg) in enumerate(zip(sig.params, args)):
            if kind == "buffer":
                slots[i] = _check_array(arg, obj, env, sig.name, i, pending)
                keep.append(arg)
            elif kind == "handle":  # a raw pointer parameter: the array's data
                if not isinstance(arg, np.ndarray):
                    raise NativeError(f"{sig.name}: argument {i} (`{obj.name}`) must be a NumPy array")
                slots[i] = arg.ctypes.data
                keep.append(arg)
            else:
                cell = _scalar_cell(arg, obj)
                if obj.dtype.startswith(("int", "uint")):  # a size a buffer's shape may be written in
                    bound = env.setdefault(obj, int(arg))
                    if bound != int(arg):
                        raise NativeError(f"{sig.name}: argument {i} (`{obj.name}`) is {int(arg)}, "
                                          f"but a buffer's shape makes it {bound}")
                keep.append(cell)
                slots[i] = ctypes.addressof(cell)
        for expr, value, where in pending:  # dims computed from sizes bound by other arguments
            expected = _eval_size(expr, env)
            if expected is None or expected != value:
                raise NativeError(f"{sig.name}: {where} is {value}, expected {_show(expr, env)}")
        for k, v in enumerate(sig.size_vars):
            if v not in env:
                raise NativeError(f"{sig.name}: cannot bind symbolic size `{v.name}` from the arguments")
            cell = ctypes.c_int64(env[v]) if v.dtype == "int64" else ctypes.c_int32(env[v])
            keep.append(cell)
            slots[len(sig.params) + k] = ctypes.addressof(cell)
        status = self._cfunc(ctypes.addressof(slots))
        if status != 0:
            raise NativeError(f"{sig.name}: {self.lib.last_error()}")


def _static_buffers(sig: PackedSignature) -> list | None:
    """(dtype, shape) per parameter when every one is a dense buffer of constant shape, else None."""
    out = []
    for kind, obj in sig.params:
        if kind != "buffer" or obj.strides or not all(isinstance(d, tir.IntImm) for d in obj.shape):
            return None
        try:
            dtype = np.dtype(obj.dtype)
        except TypeError:  # a dtype NumPy lacks: the general path says so
            return None
        out.append((dtype, tuple(d.value for d in obj.shape)))
    return out if not sig.size_vars else None


def _scalar_cell(value, var: tir.Var):
    kinds = {"int64": ctypes.c_int64, "int32": ctypes.c_int32, "int16": ctypes.c_int16, "int8": ctypes.c_int8,
             "uint64": ctypes.c_uint64, "uint32": ctypes.c_uint32, "uint16": ctypes.c_uint16, "uint8": ctypes.c_uint8,
             "float64": ctypes.c_double, "float32": ctypes.c_float, "bool": ctypes.c_bool}
    ctype = kinds.get(var.dtype)
    if ctype is None:
        raise NativeError(f"scalar parameter `{var.name}` of dtype {var.dtype} is not supported natively")
    cell = (ctypes.c_int64 * 1)()  # 8 bytes, aligned, whatever the scalar
    ctype.from_buffer(cell).value = value.item() if isinstance(value, np.generic) else value
    return cell


def _eval_size(e, env: dict) -> int | None:
    if isinstance(e, int):
        return e
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return env.get(e)
    if isinstance(e, tir.Cast):
        return _eval_size(e.value, env)
    if isinstance(e, tir.BinOp):
        a, b = _eval_size(e.a, env), _eval_size(e.b, env)
        if a is None or b is None:
            return None
        ops = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
               "floordiv": lambda: a // b if b else None, "floormod": lambda: a % b if b else None,
               "min": lambda: min(a, b), "max": lambda: max(a, b)}
        f = ops.get(e.op)
        return f() if f else None
    return None


def _show(e, env) -> str:
    from ..text.tvmscript.printer import print_tvmscript  # noqa: F401  (names only)

    value = _eval_size(e, env)
    return str(value) if value is not None else getattr(e, "name", "an expression of the sizes")


def _check_array(arr, buf: tir.Buffer, env: dict, fname: str, index: int, pending: list) -> int:
    where = f"argument {index} (`{buf.name}`)"
    if not isinstance(arr, np.ndarray):
        raise NativeError(f"{fname}: {where} must be a NumPy array, got {type(arr).__name__}")
    expected = np.dtype("bool") if buf.dtype == "bool" else np.dtype(buf.dtype)
    if arr.dtype != expected:
        raise NativeError(f"{fname}: {where} has dtype {arr.dtype}, expected {buf.dtype}")
    if arr.ndim != len(buf.shape):
        raise NativeError(f"{fname}: {where} has rank {arr.ndim}, expected {len(buf.shape)}")
    if not buf.strides and not arr.flags.c_contiguous:
        raise NativeError(f"{fname}: {where} must be C-contiguous")
    for axis, (dim, size) in enumerate(zip(buf.shape, arr.shape)):
        what = f"{where} dimension {axis}"
        if isinstance(dim, tir.IntImm):
            if dim.value != size:
                raise NativeError(f"{fname}: {what} is {size}, expected {dim.value}")
        elif isinstance(dim, tir.Var):
            bound = env.setdefault(dim, size)
            if bound != size:
                raise NativeError(f"{fname}: {what} is {size}, but `{dim.name}` is already {bound}")
        else:
            pending.append((dim, size, what))
    for axis, stride in enumerate(buf.strides):
        actual = arr.strides[axis] // arr.itemsize
        if isinstance(stride, tir.Var):
            bound = env.setdefault(stride, actual)
            if bound != actual:
                raise NativeError(f"{fname}: {where} stride {axis} is {actual}, expected {bound}")
        else:
            pending.append((stride, actual, f"{where} stride {axis}"))
    if isinstance(buf.elem_offset, tir.Var):
        env.setdefault(buf.elem_offset, 0)
    return arr.ctypes.data


@functools.cache
def _generic_half_runtime() -> bool:
    """The generic x86-64 CPU has no half-precision instructions: LLVM computes a `half` in
    float32 and converts through compiler-rt's `__extendhfsf2` / `__truncsfhf2` (libgcc_s
    has only the latter), which a JIT process does not have; an unresolved one is a call to
    address 0. They are defined here for the host CPU, whose F16C instructions convert
    exactly as the routines do; without F16C (or for bfloat16) such kernels are refused."""
    if "+f16c" not in host_cpu()[1].split(","):
        return False
    source = """
define float @__extendhfsf2(half %x) {
  %r = fpext half %x to float
  ret float %r
}
define half @__truncsfhf2(float %x) {
  %r = fptrunc float %x to half
  ret half %r
}
"""
    tm = target_machine()
    helpers = llvm.parse_assembly(source)
    helpers.triple = tm.triple
    engine = llvm.create_mcjit_compiler(helpers, tm)
    engine.finalize_object()
    for name in ("__extendhfsf2", "__truncsfhf2"):
        llvm.add_symbol(name, engine.get_function_address(name))
    _generic_half_runtime.engine = engine  # kept alive: the symbols point into it
    gcc_s = ctypes.util.find_library("gcc_s")  # __truncdfhf2 (double to half in one rounding)
    if gcc_s:
        llvm.load_library_permanently(gcc_s)
    return llvm.address_of_symbol("__truncdfhf2") is not None


class NativeLibrary:
    """Every PrimFunc of a module, compiled together and loaded into this process."""

    def __init__(self, mod, opt_level: int = 3, module_name: str = "irtool", extra=None,
                 like_tvm: bool = False) -> None:
        """`like_tvm`: compiled as TVM 0.27's `tirx.build(func, "llvm")` compiles (its
        lowering of float arithmetic, generic CPU, its optimisation pipeline): its bits."""
        _load_libm()
        self.llvm_ir, self.signatures = generate_llvm(mod, module_name, extra, tvm_lowering=like_tvm)
        if like_tvm and (re.search(r"\bbfloat\b", self.llvm_ir) or
                         re.search(r"\bhalf\b", self.llvm_ir) and not _generic_half_runtime()):
            raise CodegenError("16-bit floats on the generic CPU need conversion routines this host lacks")
        self.tm = target_machine(opt=opt_level, generic=like_tvm)
        runtime()  # the thread pool's symbols, before the engine links them
        llmod = llvm.parse_assembly(self.llvm_ir)
        llmod.triple = self.tm.triple
        llmod.data_layout = str(self.tm.target_data)
        llmod.verify()
        optimize(llmod, self.tm, opt_level, like_tvm)
        self.optimized_ir = str(llmod)
        self.engine = llvm.create_mcjit_compiler(llmod, self.tm)
        self.engine.finalize_object()
        self._error_slot = self.engine.get_global_value_address("__irtool_last_error")
        self.functions = {name: NativeFunction(self, sig, self.engine.get_function_address(sig.llvm_name))
                          for name, sig in self.signatures.items()}

    def __getitem__(self, name: str) -> NativeFunction:
        return self.functions[name]

    def last_error(self) -> str:
        ptr = ctypes.c_void_p.from_address(self._error_slot).value
        return ctypes.string_at(ptr).decode("utf-8", "replace") if ptr else "failed"

    def assembly(self) -> str:
        return self.tm.emit_assembly(llvm.parse_assembly(self.optimized_ir))

    def object_code(self) -> bytes:
        return self.tm.emit_object(llvm.parse_assembly(self.optimized_ir))


def compile_tir(mod: IRModule | tir.PrimFunc, opt_level: int = 3, like_tvm: bool = False) -> NativeLibrary:
    """JIT-compile every PrimFunc of `mod` for the host CPU (`like_tvm`: as TVM's
    `tirx.build(func, "llvm")` would, NativeLibrary)."""
    return NativeLibrary(mod, opt_level, like_tvm=like_tvm)


def run_prim_func_native(func: tir.PrimFunc, args: list) -> None:
    """`run_prim_func`'s interface, natively (compiles each call: for tests)."""
    lib = compile_tir(func)
    next(iter(lib.functions.values()))(*args)


__all__ = ["CodegenError", "NativeError", "NativeLibrary", "compile_tir", "generate_llvm", "host_cpu",
           "num_threads", "run_prim_func_native", "set_num_threads"]
