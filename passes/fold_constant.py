"""fold-constant: evaluate at compile time whatever depends only on constants.

TVM's FoldConstant (relay/transforms/fold_constant.cc), one post-order rewrite in which
every node sees its already folded operands:

    add(meta[c0], meta[c0])        every argument a constant (or a tuple of them): run the
                                   operator's NumPy reference -> meta[c1]; a tuple result
                                   (split) becomes a tuple of constants
    shape_of(%x)                   %x: Tensor[(8, 9), float32], a static shape -> [8, 9],
                                   whether %x is constant or not (needs checked types)
    let %k = 2f; add(%x, %k)       a let whose value folds to a constant is dropped and the
                                   constant substituted: add(%x, 2f)
    (%a, %b).1                     projection of a tuple node -> %b (constant or not)
    if (True) { A } else { B }     constant condition -> A (TVM reads the first byte)

Left alone, as in TVM: calls with no arguments (`zeros(shape=[4, 5])` would only become
a large constant), calls of functions, globals and closures, stateful operators
(`nn.dropout`), and the calls inside a `Primitive=1` function (a fused kernel is compiled
as it stands; TVM would still fold a projection, if or let there that no call encloses,
we leave the whole function alone). A call is evaluated only once it type-checks (TVM's
Eval infers types first), and it stays a call if the operator's NumPy reference cannot
compute it or the result would exceed MAX_FOLDED_BYTES (limits TVM does not have).
TVM also skips its TNonComputational operators (on_device, device_copy, qnn.*, memory.*,
vm.*); none of them is in the registry. `annotation.stop_fusion` is not one of them, so
`stop_fusion(constant)` folds, as in TVM.

Relax — TVM 0.27's relax.transform.FoldConstant (relax/transform/fold_constant.cc), a
function pass: one ExprMutator over each Relax function, then RemoveAllUnused.

    lv = R.call_tir(cls.add, (c0, c1),     every argument of the tuple a constant, `out_ty`
           out_ty=R.Tensor((2, 3), ...))   static (each field, for a tuple): run the PrimFunc
                                           (our TIR interpreter; TVM builds it with LLVM) ->
                                           a constant, or a tuple of constants. In any block.
    lv = R.add(c0, c1)                     inside a dataflow block only: the op's legalization
                                           (legalize-ops' table) is built on a scratch builder,
                                           and if it is a call_tir it is folded as above; the
                                           PrimFunc it made never reaches the module, and the
                                           op call stays if folding fails
    use of lv, lv bound to a constant      the constant (bindings left unused then go)
    R.reshape(x, s), s = R.shape([..])     an op's argument bound to a shape literal: the literal

ShouldBeFolded: a call whose result is a static tensor of more than 1024 elements and none
of whose arguments is a tensor (or a tuple literal holding one) stays: `R.zeros((100,
100))` is cheaper to compute than to store. Every other op call is rebuilt (its binding
takes the deduced struct info, as TVM's ReEmitBinding). PrimFuncs left uncalled stay in
the module, as TVM leaves them (dead-code-elimination removes them). Where TVM crashes (an
op on tensors of unknown shape in a dataflow block, whose legalization asserts), or its
compiled kernel would fault, the call is left as it is. Not ported: tensor_to_shape and
shape_to_tensor (not in the op table).
"""

from __future__ import annotations

import functools
import math
import platform
import re
from dataclasses import dataclass

from irtool.analysis.type_infer import TypeInferencer
from irtool.codegen.call_te import BlockBuilder
from irtool.codegen.topi import legalization
from irtool.diagnostics import DiagnosticError
from irtool.exec.relay import Interpreter, InterpreterError, describe, value_matches
from irtool.exec.tir import run_prim_func
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem
from irtool.ir.module import IRModule
from irtool.ir.node_structural import node_equal, node_hash
from irtool.ir.relax_visitor import ExprMutator as RelaxExprMutator
from irtool.ir.types import ANY, TensorType, TupleType, Type
from irtool.ir.visitor import ExprMutator
from irtool.ops.common import np
from irtool.ops.registry import get
from irtool.passes.dead_code_elimination import remove_all_unused
from irtool.text.relay_printer import format_type
from irtool.transform import FunctionPass, register

# A folded constant lives in the program text (and in memory while the pass runs): a
# result this large is left as a call rather than allocated. TVM has no such limit.
MAX_FOLDED_BYTES = 1 << 31


def is_constant(e: Expr) -> bool:
    """TVM's IsComplexConstant: a constant with data, or a tuple of such (nested)."""
    if type(e) is Constant:
        return e.data is not None
    return type(e) is Tuple and all(is_constant(f) for f in e.fields)


def _nbytes(t: Type | None) -> int:
    if type(t) is TensorType:
        if any(d is ANY for d in t.shape):
            return 0  # not known before running; only a dynamic-shape operator gives this
        return math.prod(t.shape) * _itemsize(t.dtype)
    if type(t) is TupleType:
        return sum(_nbytes(f) for f in t.fields)
    return 0


@functools.cache
def _itemsize(dtype: str) -> int:
    bits = int(re.sub(r"\D", "", dtype.split("x")[0]) or 8)  # float32 -> 32, bool -> 8
    return max(bits // 8, 1)


def _as_expr(value) -> Expr:
    """TVM's ObjectToExpr: an array becomes a Constant, a tuple a Tuple of them."""
    if isinstance(value, tuple):
        return Tuple([_as_expr(v) for v in value])
    # A reference may hand back a view of its input (reshape, transpose): the constant
    # gets its own C-ordered data.
    return Constant(value if value.flags.c_contiguous else value.copy(order="C"))


def _typed_copy(e: Expr) -> Expr:
    """A copy of a constant argument (or tuple of them) carrying its checked type, so the
    call can be typed without writing types into a module that may be untyped (the
    verifier takes any checked type as a sign that the whole module is typed)."""
    if type(e) is Tuple:
        copy = Tuple([_typed_copy(f) for f in e.fields])
        copy.checked_type = TupleType([f.checked_type for f in copy.fields])
    else:
        copy = Constant(e.data)
        copy.checked_type = TensorType(e.data.shape, _dtype_name(e.data.dtype))
    return copy


@functools.cache
def _dtype_name(dtype) -> str:
    return str(dtype)


def _matches(value, t: Type) -> bool:
    if type(t) is TensorType and type(value) is np.ndarray and all(type(d) is int for d in t.shape):
        # the common case, without str(dtype); a `?` dimension (argwhere's) goes to value_matches
        return value.shape == t.shape and _dtype_name(value.dtype) == t.dtype
    return value_matches(value, t)


def _value(e: Expr):
    return tuple(_value(f) for f in e.fields) if type(e) is Tuple else e.data


class _Folder(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__()
        self.mod = mod
        self.interpreter = Interpreter(mod)
        self.typer = TypeInferencer(mod)

    def visit_function(self, e: Function) -> Expr:
        return e if e.is_primitive else super().visit_function(e)

    def visit_call(self, e: Call) -> Expr:
        post = super().visit_call(e)
        # No arguments: ones(shape=[4, 5]) is cheaper to compute than to store.
        if not post.args or type(post.op) is not Op or get(post.op.name).stateful:
            return post
        if post.op.name == "shape_of":
            return self._shape_of(e, post)
        if all(is_constant(a) for a in post.args):
            return self._evaluate(post)
        return post

    def _shape_of(self, pre: Call, post: Call) -> Expr:
        # TVM reads the shape off the argument's checked type (the pre-rewrite one: a folded
        # argument has none yet); our fallback on a folded constant argument only matters
        # for untyped input, where TVM would need a second run.
        arg = pre.args[0]
        if type(arg) is Constant and arg.data is not None:
            shape = arg.data.shape
        elif type(arg.checked_type) is TensorType:
            shape = arg.checked_type.shape
        elif type(post.args[0]) is Constant and post.args[0].data is not None:
            shape = post.args[0].data.shape
        else:
            return post
        if any(d is ANY for d in shape):
            return post
        # The reference only looks at the shape: a zero-byte stand-in of that shape.
        # (TVM folds shape_of of a scalar to a 0-d value; ours is the (0,) array the
        # registry's relation and TVM's own compute give.)
        stand_in = np.broadcast_to(np.zeros((), "int8"), shape)
        try:
            return _as_expr(self.interpreter.call_op(post, [stand_in]))
        except Exception:  # a dtype NumPy has no arrays of (int8x4): leave it to run time
            return post

    def _evaluate(self, call: Call) -> Expr:
        # As TVM's Eval, type the call first: an ill-typed one is kept for the verifier
        # to report, and the type says how large the constant would be.
        try:
            result_type = self.typer.call_type(Call(call.op, [_typed_copy(a) for a in call.args], call.attrs))
        except DiagnosticError:
            return call
        if _nbytes(result_type) > MAX_FOLDED_BYTES:
            return call
        try:
            value = self.interpreter.call_op(call, [_value(a) for a in call.args])
        except Exception:
            # No NumPy reference, or one that cannot compute this case (TVM's compiled
            # kernel may): the call stays, to run (or fail) when the program runs.
            return call
        if not _matches(value, result_type):
            raise InterpreterError(f"`{call.op.name}` produced {describe(value)} but its type relation says "
                                   f"{format_type(result_type)}")
        return _as_expr(value)

    def visit_tuple_get_item(self, e: TupleGetItem) -> Expr:
        post = super().visit_tuple_get_item(e)
        t = post.tuple_value
        if type(t) is Tuple and 0 <= post.index < len(t.fields):
            return t.fields[post.index]
        return post

    def visit_if(self, e: If) -> Expr:
        post = super().visit_if(e)
        cond = post.cond
        if type(cond) is Constant and cond.data is not None and cond.data.size:
            # TVM tests the first byte of the condition's data
            return post.true_branch if cond.data.tobytes()[0] else post.false_branch
        return post

    def pre_visit_let(self, e: Let) -> None:
        value = self.visit(e.value)
        if type(value) is Constant:
            self.memo[e.var] = value  # every use of the variable reads the constant

    def post_visit_let(self, e: Let, body: Expr) -> Expr:
        value = self.visit(e.value)
        if type(value) is Constant:
            return body
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, e.span)


def fold_constant_expr(expr: Expr, mod: IRModule | None = None) -> Expr:
    """TVM's FoldConstantExpr: fold `expr` (global functions it calls are looked up in `mod`)."""
    return _Folder(mod if mod is not None else IRModule()).visit(expr)


# ----------------------------------------------------------------------------- Relax

# TVM's ShouldBeFolded: a creation op (no tensor argument) with more elements is left to run.
MAX_CREATED_ELEMENTS = 1024


def _contains_tensor(e) -> bool:
    """TVM's ExprContainsTensor: a tensor, or a tuple literal with one (nested)."""
    if isinstance(getattr(e, "struct_info", None), rx.TensorStructInfo):  # (a GlobalVar has none)
        return True
    return isinstance(e, rx.Tuple) and any(_contains_tensor(f) for f in e.fields_)


def should_be_folded(call: rx.Call) -> bool:
    """TVM's ShouldBeFolded (see the module docstring)."""
    sinfo = call.struct_info
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple):
        return True
    elements = 1
    for d in sinfo.shape:
        if not isinstance(d, int) or d <= 0:
            return True
        elements *= d
    if elements <= MAX_CREATED_ELEMENTS:
        return True
    return any(_contains_tensor(a) for a in call.args)


def _static_tensor(sinfo) -> tuple[tuple[int, ...], str] | None:
    """TVM's MatchConstShape: the shape and dtype of a tensor whose dims are all known."""
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple) or not sinfo.dtype:
        return None
    if not all(isinstance(d, int) for d in sinfo.shape):
        return None
    return tuple(sinfo.shape), sinfo.dtype


class _FoldingBuilder(BlockBuilder):
    """The builder legalizations run on while folding: each PrimFunc they make is kept here,
    under a GlobalVar of its own, to be evaluated, and never reaches the module."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.made: dict[GlobalVar, tir.PrimFunc] = {}

    def add_function(self, fn, name_hint: str) -> GlobalVar:
        gv = GlobalVar(name_hint)
        self.made[gv] = fn
        return gv

    def call_te(self, te_func, *args, primfunc_name_hint: str | None = None, **kwargs):
        # call_te passes exactly its tensor arguments to the call_tir: if one is not a
        # constant nothing can fold, and the PrimFunc need not be built (the common case)
        if not _constant_tensors((args, kwargs)):
            return None
        return super().call_te(te_func, *args, primfunc_name_hint=primfunc_name_hint, **kwargs)


def _constant_tensors(value) -> bool:
    """Is every Relax tensor expression in `value` (lists, tuples, dicts) a constant?"""
    if isinstance(value, (list, tuple)):
        return all(_constant_tensors(v) for v in value)
    if isinstance(value, dict):
        return all(_constant_tensors(v) for v in value.values())
    if isinstance(value, rx.Expr) and isinstance(value.struct_info, rx.TensorStructInfo):
        return isinstance(value, rx.Constant) and value.data is not None
    return True


class _RelaxFolder(RelaxExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.bindings: dict[rx.Var, rx.Expr] = {}  # TVM's LookupBinding: every var bound so far
        self.builder = _FoldingBuilder(mod)
        # PrimFuncs by structure (TVM's build cache): identical legalizations compile once
        self.kernels: dict[int, list[tir.PrimFunc]] = {}

    # ----------------------------------------------------------------- bindings and uses
    def emit(self, binding) -> None:
        if isinstance(binding, rx.VarBinding):
            self.bindings[binding.var] = binding.value
        super().emit(binding)

    def visit_var_binding(self, b: rx.VarBinding) -> None:
        value = self.visit_expr(b.value)
        self.bindings[b.var] = value  # a use of the old variable finds the new value too
        self.reemit(b, value)

    def visit_var_(self, v: rx.Var):
        value = self.bindings.get(v)
        if isinstance(value, rx.Constant):
            return value
        return super().visit_var_(v)

    # ----------------------------------------------------------------- calls
    def visit_call_(self, e: rx.Call):
        post = super().visit_call_(e)
        if not should_be_folded(post) or not isinstance(post.op, Op):
            return post
        if post.op.name == "relax.call_tir":
            return self.fold_call_tir(post) or post
        args = [self._shape_literal(a) for a in post.args]
        post = self.normalize(rx.Call(post.op, args, post.attrs, post.sinfo_args, post.span), post)
        if self.in_dataflow_block:
            legalize = legalization(post.op.name)
            if legalize is not None:
                try:
                    legalized = legalize(self.builder, post)
                except Exception:  # noqa: BLE001 — TVM's legalization asserts (unknown shapes): left alone
                    return post
                if isinstance(legalized, rx.Call) and isinstance(legalized.op, Op) and \
                        legalized.op.name == "relax.call_tir":
                    return self.fold_call_tir(legalized) or post
        return post

    def _shape_literal(self, arg):
        if isinstance(arg, rx.Var):
            value = self.bindings.get(arg)
            if isinstance(value, rx.ShapeExpr):
                return value
        return arg

    def fold_call_tir(self, call: rx.Call) -> rx.Expr | None:
        """TVM's VisitCallTIR: the call's value as a constant (a tuple of them), or None."""
        gv = call.args[0]
        func = None
        if isinstance(gv, GlobalVar):  # a PrimFunc of the module, or one made by a legalization
            func = self.builder.made.get(gv) or self.mod.functions.get(gv.name_hint)
        if not isinstance(func, tir.PrimFunc) or not isinstance(call.args[1], rx.Tuple) or len(call.args) > 2:
            return None  # (extra TIR variable arguments cannot be supplied from constants)
        inputs = call.args[1].fields_
        if not all(isinstance(a, rx.Constant) and a.data is not None for a in inputs):
            return None
        out_sinfo = call.sinfo_args[0] if call.sinfo_args else call.struct_info
        fields = out_sinfo.fields_ if isinstance(out_sinfo, rx.TupleStructInfo) else [out_sinfo]
        outputs = [_static_tensor(f) for f in fields]
        if any(o is None for o in outputs):
            return None
        try:
            arrays = [np.zeros(shape, dtype) for shape, dtype in outputs]
            # copies: a kernel may write its inputs, and a constant's data is shared
            _evaluate(self._kernel(func), [a.data.copy() for a in inputs] + arrays, self.native)
        except Exception:  # noqa: BLE001 — TVM would skip a kernel it cannot build (or dtype NumPy lacks)
            return None
        constants = [rx.Constant(a) for a in arrays]
        if not isinstance(out_sinfo, rx.TupleStructInfo):
            return constants[0]
        return self.normalize(rx.Tuple(constants, call.span))

    @property
    def native(self) -> dict:
        if not hasattr(self, "_native"):
            self._native = {}
        return self._native

    def _kernel(self, func: tir.PrimFunc) -> tir.PrimFunc:
        bucket = self.kernels.setdefault(node_hash(func), [])
        for known in bucket:
            if node_equal(known, func):
                return known
        bucket.append(func)
        return func


# How a fold's kernel is evaluated. TVM's FoldConstant builds it with `tirx.build(func,
# "llvm")` and runs it: generic CPU (x86-64: no FMA), LowerIntrin turning every float
# `a * b + c` into `llvm.fmuladd`, LLVM's O3. At run time an fmuladd is a multiply and an
# add, each rounded to float32 -- the TIR interpreter's semantics, bit for bit. Two things
# are not: libm's transcendentals (the interpreter uses NumPy's), and an fmuladd whose
# operands LLVM knows once it has unrolled the loops (`-1 + f32(i) * 0.4` in affine_grid,
# `start + f32(i) * step` in arange): the constant folder rounds that once, like an FMA.
# Which loops LLVM unrolls is its own decision, so such a kernel is compiled as TVM
# compiles it (native.py, like_tvm) and LLVM decides the same way. Elsewhere than x86 the
# generic CPU has an FMA instruction (AArch64), every fmuladd is fused at run time, and so
# every kernel with a float multiply-add is compiled (not exercised on this project's x86-64
# machines).
_GENERIC_CPU_FUSES = platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86")
_LIBM_ROUNDED = frozenset(("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos",
                           "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
                           "atanh", "erf", "hypot", "sigmoid"))
NATIVE_ELEMENTS = 1 << 16  # and so is a large one (faster than the interpreter)


def _is_float_mul(e) -> bool:
    return isinstance(e, tir.BinOp) and e.op == "mul" and e.dtype.startswith("float")


def foldable_multiply_add(func: tir.PrimFunc, any_operands: bool = False) -> bool:
    """Does `func` hold a float `a * b + c` (the multiply TVM's LowerIntrin fuses: the
    right operand if it is one, else the left) none of whose three operands reads a
    parameter buffer? LLVM may know all three once loops are unrolled, and then rounds once.
    Loads of the function's own allocations count as known (LLVM may forward stores).
    `any_operands`: any float multiply-add, whatever its operands read."""
    from irtool.ir.tir_visitor import StmtExprVisitor, children

    params = {buf.data for _, buf in func.buffer_map}
    reads_memo: dict[int, bool] = {}

    def reads_parameter(root) -> bool:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in reads_memo:
                continue
            if isinstance(node, tir.BufferLoad) and node.buffer.data in params:
                reads_memo[id(node)] = True
            elif not isinstance(node, tir.PrimExpr):
                reads_memo[id(node)] = False  # buffers, ranges: their shapes read nothing at run time
            elif expanded:
                reads_memo[id(node)] = any(reads_memo.get(id(c), False) for c in children(node))
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in children(node) if id(c) not in reads_memo)
        return reads_memo[id(root)]

    found = []

    class _MultiplyAdds(StmtExprVisitor):
        def visit_BinOp(self, e) -> bool | None:  # noqa: N802 — the visitor's naming
            if found:
                return False
            if e.op == "add" and e.dtype.startswith("float"):
                product, addend = (e.b, e.a) if _is_float_mul(e.b) else (e.a, e.b)
                if _is_float_mul(product) and (
                        any_operands or not any(map(reads_parameter, (product.a, product.b, addend)))):
                    found.append(e)
                    return False
            return None

    _MultiplyAdds(once=True).visit(func.body)
    return bool(found)


def _wants_native(func: tir.PrimFunc, arrays: list) -> bool:
    from irtool.ir.tir_visitor import StmtExprVisitor

    if sum(a.size for a in arrays) >= NATIVE_ELEMENTS:
        return True
    found = []

    class _Calls(StmtExprVisitor):
        def visit_Call(self, e) -> None:  # noqa: N802 — the visitor's naming
            if e.op.split(".")[-1] in _LIBM_ROUNDED and e.dtype.startswith("float"):
                found.append(e.op)

    try:
        _Calls(once=True).visit(func.body)
        return bool(found) or foldable_multiply_add(func, any_operands=_GENERIC_CPU_FUSES)
    except Exception:  # noqa: BLE001 — a visitor gap: fall back to the interpreter
        return False


def _evaluate(func: tir.PrimFunc, arrays: list, cache: dict) -> None:
    """Run a fold's kernel: compiled as TVM compiles it when the interpreter's bits could
    differ from TVM's (libm, an fmuladd LLVM may fold) or it is large, else interpreted."""
    if _wants_native(func, arrays):
        fn = cache.get(id(func))
        if fn is None:
            try:
                from irtool.codegen.native import compile_tir

                fn = next(iter(compile_tir(func, like_tvm=True).functions.values()))
            except Exception:  # noqa: BLE001 — no llvmlite, or a kernel our codegen cannot build: interpreted
                fn = False
            cache[id(func)] = fn
        if fn:
            fn(*arrays)
            return
    run_prim_func(func, arrays)


def fold_relax_function(fn: rx.Function, mod: IRModule) -> rx.Function:
    """TVM's relax ConstantFolder::Fold: fold `fn` (PrimFuncs looked up in `mod`), then
    remove the bindings left unused."""
    return remove_all_unused(_RelaxFolder(mod).visit_expr(fn), mod)


@register
@dataclass(frozen=True)
class FoldConstant(FunctionPass):
    name = "fold-constant"
    tvm_name = "FoldConstant"
    opt_level = 2
    summary = ("Evaluate calls whose arguments are all constants, and shape_of of static shapes; "
               "on Relax, call_tir of constants and (in dataflow blocks) operators on constants")

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        # TVM's Relax function pass visits every Relax function (Codegen ones included);
        # the Relay functions then go through FunctionPass as before.
        changed = {}
        for name, fn in mod.functions.items():
            if isinstance(fn, rx.Function):
                new = fold_relax_function(fn, mod)
                if new is not fn:
                    changed[name] = new
        if changed:
            mod = mod.with_functions({**mod.functions, **changed})
        return super().transform_module(mod, ctx)

    def transform_function(self, fn: Function, mod: IRModule, ctx) -> Function:
        if fn.is_primitive:
            return fn
        return _Folder(mod).visit(fn)
