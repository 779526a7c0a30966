"""The Relax interpreter: runs Relax functions for tests, with NumPy.

    values       NumPy arrays, tuples, shapes (`ShapeValue`), Python scalars for
                 `R.prim_value`, strings, function values
    a binding    evaluates its value and checks it against the variable's struct info;
                 symbolic dimensions (`n` in `R.Tensor((n, 4))`) are bound by the first
                 value that meets them (parameters, match_cast) and checked afterwards
    an op call   the operator's NumPy reference (`irtool.ops.relax.evaluate`)
    call_tir     allocates the outputs `out_ty` describes and runs the PrimFunc in the
                 TIR interpreter, destination-passing style
    a call of a global Relax function: a new frame (recursion allowed)

Like the Relay interpreter it is the oracle, so it is strict rather than fast.
"""

from __future__ import annotations

import functools

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import GlobalVar, Op
from ..ir.module import IRModule
from . import InterpreterError


class ShapeValue(tuple):
    """The run-time value of a Relax shape expression."""


class FunctionValue:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_PRIM_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "div": lambda a, b: a / b if isinstance(a, float) or isinstance(b, float) else int(a / b),
    "truncdiv": lambda a, b: int(a / b), "truncmod": lambda a, b: a - b * int(a / b),
    "min": min, "max": max, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "and": lambda a, b: a and b, "or": lambda a, b: a or b,
}


def eval_prim(e, env: dict):
    """The value of a symbolic shape expression under `env` (tir.Var id -> int)."""
    if isinstance(e, (int, float)):
        return e
    if isinstance(e, (tir.IntImm, tir.FloatImm)):
        return e.value
    if isinstance(e, tir.Var):
        if id(e) not in env:
            raise DiagnosticError(f"symbolic variable `{e.name}` has no value here", e.span)
        return env[id(e)]
    if isinstance(e, tir.BinOp):
        return _PRIM_OPS[e.op](eval_prim(e.a, env), eval_prim(e.b, env))
    if isinstance(e, tir.Cast):
        v = eval_prim(e.value, env)
        return float(v) if e.dtype.startswith("float") else int(v)
    if isinstance(e, tir.Not):
        return not eval_prim(e.a, env)
    if isinstance(e, tir.Select) or (isinstance(e, tir.Call) and e.op in ("tirx.if_then_else", "tir.if_then_else")):
        # a pooled size with ceil_mode: TVM's analyzer writes the dropped last window so
        cond, then, other = (e.condition, e.true_value, e.false_value) if isinstance(e, tir.Select) else e.args
        return eval_prim(then if eval_prim(cond, env) else other, env)
    raise InterpreterError(f"cannot evaluate the shape expression {e!r}")


@functools.cache
def _numpy_dtype(dtype: str):
    """NumPy's dtype for a Relax one (compared, not printed: str() of a NumPy dtype is slow),
    or the name itself when NumPy has none (`bfloat16`)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        return dtype


class RelaxInterpreter:
    def __init__(self, mod: IRModule, packed_funcs: dict | None = None, poison: bool = False) -> None:
        self.mod = mod
        self.packed_funcs = {**_RUNTIME_FUNCS, **(packed_funcs or {})}
        # checking mode of the memory operators: storage handed out again or killed is poisoned
        self.poison = poison

    # -- functions
    def call_function(self, name: str, args: list):
        fn = self.mod.functions.get(name)
        if not isinstance(fn, rx.Function):
            raise DiagnosticError(f"the module has no Relax function `{name}`")
        if len(args) != len(fn.params):
            raise DiagnosticError(f"`{name}` takes {len(fn.params)} arguments, got {len(args)}", fn.span)
        outer, outer_env = (fn, name), None
        while True:  # a call whose value the function returns (a while loop's) runs in place
            env: dict[int, object] = {}
            shape_env: dict[int, int] = {}
            for p, a in zip(fn.params, args, strict=True):
                if isinstance(a, np.generic):  # a NumPy scalar (a Relay bool condition) is a 0-d tensor
                    a = np.asarray(a)
                self.match(a, p.struct_info, shape_env, f"argument `{p.name_hint}` of `{name}`", bind=True)
                env[id(p)] = a
            outer_env = shape_env if outer_env is None else outer_env
            result = self.seq(fn.body, env, shape_env, tail=True)
            if not isinstance(result, _TailCall):
                break
            name, args = result.name, result.args
            fn = self.mod.functions[name]
            if len(args) != len(fn.params):
                raise DiagnosticError(f"`{name}` takes {len(fn.params)} arguments, got {len(args)}", fn.span)
        # the result checked against the first function's and the last one's return struct info
        for f, n, sizes in ((*outer, outer_env), (fn, name, shape_env)):
            if f.ret_struct_info is not None:
                self.match(result, f.ret_struct_info, sizes, f"the result of `{n}`", bind=True)
        return result

    def _tail_call(self, value, env: dict, shape_env: dict):
        """A call of a Relax function whose value is returned (through ifs): a _TailCall;
        an if's branch that ends otherwise: its value, in a 1-tuple; else None."""
        if isinstance(value, rx.Call) and isinstance(value.op, GlobalVar) and \
                isinstance(self.mod.functions.get(value.op.name_hint), rx.Function):
            return _TailCall(value.op.name_hint, [self.eval(a, env, shape_env) for a in value.args])
        if isinstance(value, rx.If):
            cond = self.eval(value.cond, env, shape_env)
            branch = value.true_branch if bool(np.asarray(cond)) else value.false_branch
            out = self.seq(branch, env, shape_env, tail=True)
            return out if isinstance(out, _TailCall) else (out,)
        return None

    def seq(self, seq: rx.SeqExpr, env: dict, shape_env: dict, tail: bool = False):
        last = seq.blocks[-1].bindings[-1] if tail and seq.blocks and seq.blocks[-1].bindings else None
        if last is not None and (last.var is not seq.body or isinstance(last, rx.MatchCast)):
            last = None
        for block in seq.blocks:
            for b in block.bindings:
                if b is last:
                    out = self._tail_call(b.value, env, shape_env)
                    if isinstance(out, _TailCall):
                        return out
                    value = out[0] if out is not None else self.eval(b.value, env, shape_env)
                else:
                    value = self.eval(b.value, env, shape_env)
                if isinstance(b, rx.MatchCast):
                    try:
                        self.match(value, b.struct_info, shape_env, f"R.match_cast to `{b.var.name_hint}`", bind=True)
                    except DiagnosticError as err:
                        if err.span is not None or b.span is None:
                            raise
                        raise DiagnosticError(str(err), b.span) from None  # at the match_cast
                else:
                    self.match(value, b.var.struct_info, shape_env, f"`{b.var.name_hint}`", bind=True)
                env[id(b.var)] = value
        return self.eval(seq.body, env, shape_env)

    # -- struct info checks
    def match(self, value, sinfo, shape_env: dict, what: str, bind: bool) -> None:
        if sinfo is None or isinstance(sinfo, rx.ObjectStructInfo):
            return
        if isinstance(sinfo, rx.TensorStructInfo):
            if not isinstance(value, np.ndarray):
                raise DiagnosticError(f"{what} should be a tensor, got {_describe(value)}", sinfo.span)
            if sinfo.dtype and value.dtype != _numpy_dtype(sinfo.dtype):
                raise DiagnosticError(f"{what} should have dtype {sinfo.dtype}, got {value.dtype}", sinfo.span)
            if sinfo.ndim >= 0 and value.ndim != sinfo.ndim:
                raise DiagnosticError(f"{what} should have {sinfo.ndim} dimensions, got {value.ndim}", sinfo.span)
            if isinstance(sinfo.shape, tuple):
                self.match_dims(value.shape, sinfo.shape, shape_env, what, bind)
            return
        if isinstance(sinfo, rx.TupleStructInfo):
            if not isinstance(value, tuple) or isinstance(value, ShapeValue) or len(value) != len(sinfo.fields_):
                raise DiagnosticError(f"{what} should be a tuple of {len(sinfo.fields_)}, got {_describe(value)}")
            for i, (v, s) in enumerate(zip(value, sinfo.fields_, strict=True)):
                self.match(v, s, shape_env, f"{what}[{i}]", bind)
            return
        if isinstance(sinfo, rx.ShapeStructInfo):
            if not isinstance(value, ShapeValue):
                raise DiagnosticError(f"{what} should be a shape, got {_describe(value)}")
            if sinfo.values is not None:
                self.match_dims(value, sinfo.values, shape_env, what, bind)
            return
        if isinstance(sinfo, rx.PrimStructInfo):
            var = sinfo.value
            if isinstance(var, tir.Var) and bind and id(var) not in shape_env:
                shape_env[id(var)] = value
            return

    def match_dims(self, actual, expected, shape_env, what, bind) -> None:
        if len(actual) != len(expected):
            raise DiagnosticError(f"{what} should have {len(expected)} dimensions, got {len(actual)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            if isinstance(e, tir.Var) and id(e) not in shape_env and bind:
                shape_env[id(e)] = int(a)
                continue
            want = eval_prim(e, shape_env)
            if int(a) != want:
                raise DiagnosticError(f"{what}: dimension {i} is {a}, expected {want}")

    # -- expressions
    def eval(self, e, env: dict, shape_env: dict):
        if isinstance(e, rx.Var):
            if id(e) not in env:
                raise DiagnosticError(f"`{e.name_hint}` is used before it is bound", e.span)
            return env[id(e)]
        if isinstance(e, rx.Constant):
            if e.data is None:
                raise DiagnosticError("this constant's data is not in the file (print with show_meta=True to keep "
                                      "it)", e.span)
            return e.data
        if isinstance(e, rx.Tuple):
            return tuple(self.eval(f, env, shape_env) for f in e.fields_)
        if isinstance(e, rx.TupleGetItem):
            return self.eval(e.tuple_value, env, shape_env)[e.index]
        if isinstance(e, rx.ShapeExpr):
            return ShapeValue(int(eval_prim(v, shape_env)) for v in e.values)
        if isinstance(e, rx.PrimValue):
            return eval_prim(e.value, shape_env)
        if isinstance(e, rx.StringImm):  # and DataTypeImm
            return e.value
        if isinstance(e, rx.If):
            cond = self.eval(e.cond, env, shape_env)
            branch = e.true_branch if bool(np.asarray(cond)) else e.false_branch
            return self.seq(branch, env, shape_env)
        if isinstance(e, rx.SeqExpr):
            return self.seq(e, env, shape_env)
        if isinstance(e, GlobalVar):
            return FunctionValue(e.name_hint)
        if isinstance(e, rx.Call):
            return self.call(e, env, shape_env)
        raise InterpreterError(f"cannot evaluate {e!r}")

    def call(self, call: rx.Call, env: dict, shape_env: dict):
        op = call.op
        if isinstance(op, Op):
            if op.name in ("relax.call_tir", "relax.call_tir_inplace"):
                return self.call_tir(call, env, shape_env)
            if op.name in ("relax.call_dps_packed", "relax.call_pure_packed"):
                return self.call_packed(call, env, shape_env)
            from ..ops import relax_memory

            args = [self.eval(a, env, shape_env) for a in call.args]
            try:
                if op.name in relax_memory.MEMORY_OPS:
                    return relax_memory.evaluate(op.name, args, self.poison)
                out = self.evaluate_op(call, args)
                # a shape-valued operator (R.shape_of, R.tensor_to_shape) gives a shape value
                return ShapeValue(out) if isinstance(call.struct_info, rx.ShapeStructInfo) else out
            except (ValueError, TypeError, IndexError) as err:
                raise DiagnosticError(f"`{op.name}` failed: {err}", call.span) from None
        callee = self.eval(op, env, shape_env) if not isinstance(op, GlobalVar) else FunctionValue(op.name_hint)
        args = [self.eval(a, env, shape_env) for a in call.args]
        prim_func = self.mod.functions.get(op.name_hint) if isinstance(op, GlobalVar) else None
        if isinstance(prim_func, tir.PrimFunc):  # destination passing: the outputs are written in place
            self.run_kernel(op.name_hint, prim_func, args)
            return ()
        if isinstance(callee, FunctionValue):
            return self.call_function(callee.name, args)
        raise DiagnosticError("only Relax functions of the module can be called", call.span)

    def evaluate_op(self, call: rx.Call, args: list):
        """An operator call on evaluated arguments: its NumPy reference."""
        from ..ops import relax as relax_ops

        return relax_ops.evaluate(call.op.name, args, call.attrs, [_dtype_of(a) for a in call.args])

    def run_kernel(self, name: str, func: tir.PrimFunc, args: list) -> None:
        """PrimFunc `name` on its buffers and scalars, destination passing: the TIR interpreter."""
        from .tir import run_prim_func

        run_prim_func(func, args, self.mod)

    def allocate(self, sinfo, shape_env):
        if isinstance(sinfo, rx.TupleStructInfo):
            return tuple(self.allocate(f, shape_env) for f in sinfo.fields_)
        if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple) or not sinfo.dtype:
            raise DiagnosticError("`out_ty` must give every output's shape and dtype")
        shape = tuple(int(eval_prim(d, shape_env)) for d in sinfo.shape)
        return np.zeros(shape, dtype=sinfo.dtype)

    def call_tir(self, call: rx.Call, env: dict, shape_env: dict):
        gv = call.args[0]
        func = self.mod.functions.get(gv.name_hint)
        if not isinstance(func, tir.PrimFunc):
            raise DiagnosticError(f"`{gv.name_hint}` is not a PrimFunc of the module", call.span)
        inputs = list(self.eval(call.args[1], env, shape_env))
        out = self.allocate(call.sinfo_args[0], shape_env)
        outputs = list(out) if isinstance(out, tuple) else [out]
        extra = list(self.eval(call.args[2], env, shape_env)) if len(call.args) > 2 else []
        args = inputs + outputs + extra
        if call.op.name == "relax.call_tir_inplace":  # an output of index i >= 0 is input i, written in place
            indices = call.attrs.get("inplace_indices", ())
            outputs = [inputs[i] if i >= 0 else o for i, o in zip(indices, outputs, strict=True)]
            out = tuple(outputs) if isinstance(out, tuple) else outputs[0]
            args = inputs + [o for i, o in zip(indices, outputs, strict=True) if i < 0] + extra
        if len(args) != len(func.params):
            raise DiagnosticError(f"`{gv.name_hint}` takes {len(func.params)} buffers and scalars, but call_tir "
                                  f"passes {len(args)} ({len(inputs)} inputs, {len(outputs)} outputs)", call.span)
        # a Relax scalar variable (`p: R.Prim("int64")`) passed to a scalar parameter: its number
        args = [a.item() if isinstance(a, np.ndarray) and a.ndim == 0 and func.buffer_of(p) is None else a
                for a, p in zip(args, func.params)]
        self.run_kernel(gv.name_hint, func, args)
        return out

    def call_packed(self, call: rx.Call, env: dict, shape_env: dict):
        func = call.args[0]
        name = func.global_symbol if isinstance(func, rx.ExternFunc) else None
        impl = self.packed_funcs.get(name)
        if impl is None:
            raise DiagnosticError(f"no packed function `{name}` is registered with the interpreter", call.span)
        if call.op.name == "relax.call_dps_packed":
            inputs = list(self.eval(call.args[1], env, shape_env))
            out = self.allocate(call.sinfo_args[0], shape_env)
            impl(*inputs, *(out if isinstance(out, tuple) else (out,)))
            return out
        return impl(*[self.eval(a, env, shape_env) for a in call.args[1:]])


class _TailCall:
    """A call of a Relax function in tail position, to run in the caller's place."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: list) -> None:
        self.name = name
        self.args = args


def _nonzero(x):
    from ..ops.relax_bridge import _nonzero as nonzero

    return nonzero(x)


# TVM's runtime functions that its LegalizeOps calls with R.call_pure_packed (R.nonzero's)
_RUNTIME_FUNCS = {"relax.run.nonzero": _nonzero}


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)} {value.dtype}"
    if isinstance(value, ShapeValue):
        return f"shape{list(value)}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


def run_relax(mod: IRModule, inputs=None, entry: str = "main", packed_funcs: dict | None = None,
              poison: bool = False):
    """Run the Relax function `entry` on `inputs` (a list in parameter order, or a dict by
    parameter name). `poison`: storage reused or killed is overwritten (NaN) first, so a
    memory plan that shares bytes between live tensors changes the results."""
    fn = mod.functions.get(entry)
    if not isinstance(fn, rx.Function):
        raise DiagnosticError(f"the module has no Relax function `{entry}`")
    inputs = [] if inputs is None else inputs
    if isinstance(inputs, dict):
        missing = [p.name_hint for p in fn.params if p.name_hint not in inputs]
        if missing:
            raise DiagnosticError(f"missing inputs for `{entry}`: {', '.join(missing)}", fn.span)
        inputs = [inputs[p.name_hint] for p in fn.params]
    args = [np.asarray(v) if isinstance(v, (int, float, bool, list)) else v for v in inputs]
    return RelaxInterpreter(mod, packed_funcs, poison).call_function(entry, args)


def random_input(sinfo, rng, span=None):
    """A random value for a parameter of struct info `sinfo` (symbolic sizes become 4)."""
    if isinstance(sinfo, rx.TupleStructInfo):
        return tuple(random_input(f, rng, span) for f in sinfo.fields_)
    if not isinstance(sinfo, rx.TensorStructInfo) or not sinfo.dtype or not isinstance(sinfo.shape, tuple):
        raise DiagnosticError("a random input needs a tensor with known rank and dtype", span)
    shape = tuple(d if isinstance(d, int) else 4 for d in sinfo.shape)
    if sinfo.dtype == "bool":
        return rng.random(shape) < 0.5
    if sinfo.dtype.startswith(("int", "uint")):
        return rng.integers(0, 10, size=shape).astype(sinfo.dtype)
    from .tir_runtime import InterpreterError, _numpy_dtype

    try:
        dtype = _numpy_dtype(sinfo.dtype)  # bfloat16 and the float8 types through ml_dtypes
    except InterpreterError as err:
        raise DiagnosticError(f"a random input of dtype {sinfo.dtype}: {err}", span) from None
    return rng.standard_normal(shape).astype(dtype)


def _dtype_of(e) -> str | None:
    """The dtype of a prim or tensor argument (R.one_hot's result takes its on_value's)."""
    if isinstance(e, rx.PrimValue):
        return getattr(e.value, "dtype", None)
    return getattr(getattr(e, "struct_info", None), "dtype", None)
