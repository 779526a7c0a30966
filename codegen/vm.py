"""Models whose `main` needs a virtual machine: control flow, calls of Relax functions,
`R.match_cast` and run-time shapes (`R.tensor_to_shape`, `R.shape_of`).

A straight-line `main` becomes one native entry point (executable.py). A `main` with
`R.If`, calls of other Relax functions (an ONNX Loop of run-time length is a function whose
`R.If` calls itself), `R.match_cast` or tensors whose shape is only known at run time is
run the way TVM's Relax VM runs it: an interpreter of the Relax functions whose every
kernel is native code.

    R.call_tir(f, ...)          the PrimFunc compiled with the module (native.py), its outputs
                                allocated from `out_ty` under the sizes bound so far
    R.match_cast(v, S)          binds S's new symbolic sizes from the value and checks the
                                others (as TVM's VMShapeLower: a mismatch is an error)
    R.If(c, ...)                branches on the run-time condition
    cls.f(...)                  a new frame; a call whose value the caller returns (a while
                                loop's recursion) replaces the caller's frame: no stack growth
    R.shape_of, R.tensor_to_shape, R.shape_to_tensor
                                TVM's VM builtins, on the run-time values
    an operator legalize-ops    legalized and compiled for the shapes it meets (cached by
    skipped (unknown shapes)    signature): TVM leaves these unlowered and cannot build them

The frames, bindings and checks are the Relax interpreter's (exec/relax.py, whose kernels
and operators this class replaces), so both agree on what a program means.
"""

from __future__ import annotations

import numpy as np

from ..diagnostics import DiagnosticError
from ..exec.relax import RelaxInterpreter, ShapeValue
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule

# operators the VM runs itself (TVM: VM builtins and runtime functions, not generated code)
VM_BUILTINS = frozenset({"relax.shape_of", "relax.tensor_to_shape", "relax.shape_to_tensor", "relax.call_pure_packed",
                         "relax.nonzero"})
_KERNEL_CALLS = frozenset({"relax.call_tir", "relax.call_tir_inplace"})


def _bindings(seq: rx.SeqExpr):
    """Every binding of `seq`, into the branches of its ifs."""
    for block in seq.blocks:
        for b in block.bindings:
            yield b
            if isinstance(b.value, rx.If):
                yield from _bindings(b.value.true_branch)
                yield from _bindings(b.value.false_branch)


def _known_tensor(sinfo) -> bool:
    return isinstance(sinfo, rx.TensorStructInfo) and isinstance(sinfo.shape, tuple) and bool(sinfo.dtype)


def _is_static_binding(b, mod: IRModule) -> bool:
    if isinstance(b, rx.MatchCast):
        return False
    v = b.value
    if isinstance(v, rx.If) or (isinstance(v, rx.Call) and isinstance(v.op, GlobalVar)
                                and isinstance(mod.functions.get(v.op.name_hint), rx.Function)):
        return False
    if isinstance(v, rx.Call) and isinstance(v.op, Op) and not (
            v.op.name == "relax.call_tir" or v.op.name.startswith(("relax.memory.", "relax.builtin."))):
        return False
    s = b.var.struct_info
    return not isinstance(s, rx.TensorStructInfo) or _known_tensor(s)


def needs_vm(mod: IRModule, main: rx.Function) -> bool:
    """Whether `main` (after the zero pipeline) needs the VM rather than one native entry."""
    return not all(_known_tensor(p.struct_info) for p in main.params) or \
        not all(_is_static_binding(b, mod) for b in _bindings(main.body))


def check_vm_module(mod: IRModule, entry: str) -> list[str]:
    """The Relax functions `entry` reaches, checked for what the VM runs; a construct it
    cannot run is a located diagnostic now rather than an error in the middle of a run."""
    from ..exec.relax import _RUNTIME_FUNCS
    from ..ops.relax_memory import MEMORY_OPS
    from .executable import BuildError
    from .topi import legalization

    def fail(message: str, node) -> BuildError:
        return BuildError(f"cannot build natively: {message}", getattr(node, "span", None))

    seen, todo = [], [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        for b in _bindings(mod.functions[name].body):
            v = b.value
            if not isinstance(v, rx.Call):
                continue
            if isinstance(v.op, GlobalVar):
                callee = mod.functions.get(v.op.name_hint)
                if isinstance(callee, rx.Function):
                    todo.append(v.op.name_hint)
                elif not isinstance(callee, tir.PrimFunc):
                    raise fail(f"`{v.op.name_hint}` is not a function of the module", v)
                continue
            if not isinstance(v.op, Op):
                raise fail("a call of a local function (only the module's functions can be called)", v)
            name_ = v.op.name
            if name_ == "relax.call_pure_packed":
                func = v.args[0]
                if not (isinstance(func, rx.ExternFunc) and func.global_symbol in _RUNTIME_FUNCS):
                    raise fail(f"`R.call_pure_packed` of `{getattr(func, 'global_symbol', func)}` "
                               f"(not a runtime function irtool has)", v)
            elif name_ not in _KERNEL_CALLS and name_ not in VM_BUILTINS and name_ not in MEMORY_OPS and \
                    legalization(name_) is None:
                raise fail(f"`{name_.replace('relax.', 'R.')}` was not lowered to TIR "
                           f"(legalize-ops has no legalization for it)", v)
    return seen


class NativeVM(RelaxInterpreter):
    """The Relax interpreter with native kernels: call_tir runs the compiled PrimFunc, and an
    operator left unlegalized (its shapes unknown until now) is compiled for the shapes it
    meets."""

    def __init__(self, mod: IRModule, lib, schedule) -> None:
        super().__init__(mod)
        self.lib = lib
        self.schedule = schedule
        self.specialized: dict[str, object] = {}  # printed one-op module -> its Executable
        self.by_call_site: dict[tuple, object] = {}  # (call, signature of the arguments) -> the same

    def run(self, entry: str, arrays: list):
        from .native import NativeError

        try:
            return self.call_function(entry, [np.asarray(a) for a in arrays])
        except DiagnosticError as err:  # a failed match_cast or argument check: TVM's VM raises too
            error = NativeError(f"{entry}: {err}")
            error.span = err.span  # (irtool-run points at the match_cast)
            raise error from None

    def run_kernel(self, name: str, func: tir.PrimFunc, args: list) -> None:
        self.lib[name](*args)

    def allocate(self, sinfo, shape_env):
        if _known_tensor(sinfo):
            from ..exec.relax import eval_prim

            return np.empty(tuple(int(eval_prim(d, shape_env)) for d in sinfo.shape), sinfo.dtype)
        return super().allocate(sinfo, shape_env)  # (tuples, and its diagnostic)

    def evaluate_op(self, call: rx.Call, args: list):
        if call.op.name in VM_BUILTINS:
            return super().evaluate_op(call, args)
        key = (call, _signature(args))
        exe = self.by_call_site.get(key)
        if exe is None:
            exe = self.by_call_site[key] = self.specialize(call, args)
        return exe(*_leaves(args))

    def specialize(self, call: rx.Call, args: list):
        """The operator `call` compiled for the shapes and dtypes of `args` (once per signature)."""
        from ..text import to_text
        from .executable import Executable

        params: list[rx.Var] = []

        def operand(e, value):
            if isinstance(value, ShapeValue):
                return rx.ShapeExpr([tir.IntImm(int(d), "int64") for d in value])
            if isinstance(value, tuple):
                fields = [operand(f, v) for f, v in zip(e.fields_ if isinstance(e, rx.Tuple) else [None] * len(value),
                                                        value)]
                t = rx.Tuple(fields)
                t.struct_info = rx.TupleStructInfo([f.struct_info for f in fields])
                return t
            if isinstance(value, np.ndarray):
                p = rx.Var(f"p{len(params)}", rx.TensorStructInfo(tuple(int(d) for d in value.shape),
                                                                  str(value.dtype)))
                params.append(p)
                return p
            if isinstance(e, rx.PrimValue):  # its value now, not the caller's symbolic sizes
                dtype = e.value.dtype
                imm = tir.FloatImm(float(value), dtype) if dtype.startswith("float") else tir.IntImm(int(value), dtype)
                return rx.PrimValue(imm)
            return e  # a string or dtype: as written

        from ..passes._relax_block_builder import BlockBuilder

        bb = BlockBuilder()
        bb.dataflow = False
        result = bb.emit(rx.Call(call.op, [operand(e, v) for e, v in zip(call.args, args)], call.attrs,
                                 call.sinfo_args), output=True)
        fn = rx.Function(params, rx.SeqExpr([bb.take_block()], result), result.struct_info)
        mod = IRModule({"main": fn})
        key = to_text(mod)
        exe = self.specialized.get(key)
        if exe is None:
            exe = self.specialized[key] = Executable(mod, schedule=self.schedule)
            if exe.vm is not None:  # still not lowered: these shapes do not legalize either
                raise DiagnosticError(f"`{call.op.name.replace('relax.', 'R.')}` does not lower to TIR for "
                                      f"{_describe_args(args)}", call.span)
        return exe


def _signature(value):
    """What a specialization depends on: shapes and dtypes of tensors, values of the rest."""
    if isinstance(value, np.ndarray):
        return value.shape, value.dtype.str
    if isinstance(value, (list, tuple)) and not isinstance(value, ShapeValue):
        return tuple(_signature(v) for v in value)
    return value if not isinstance(value, ShapeValue) else ("shape", *value)


def _leaves(args: list) -> list:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a)
        elif isinstance(a, tuple) and not isinstance(a, ShapeValue):
            out.extend(_leaves(list(a)))
    return out


def _describe_args(args: list) -> str:
    from ..exec.relax import _describe

    return ", ".join(_describe(a) for a in args)
