"""From a Relax call to `R.call_tir` of a PrimFunc built with TE: TVM's `BlockBuilder.call_te`
(python/tvm/relax/block_builder.py, utils.gen_call_tir_inputs) and the function table of its
BlockBuilder (src/relax/ir/block_builder.cc: AddFunction).

    bb = BlockBuilder(mod)
    call = bb.call_te(topi.add, x, y)               # R.call_tir(cls.add, (x, y), out_ty=...)
    mod = bb.module()                               # with `add` added

`call_te(te_func, *args, primfunc_name_hint=None, **kwargs)`:
  - each Relax tensor argument becomes a `te.placeholder` named after its variable (`lv`),
    or, for any other expression (a constant), `A`, `B`, ... by its position among the
    PrimFunc's tensor parameters; its symbolic dimensions are fresh copies of the caller's
    TIR variables (same names), so the PrimFunc owns its variables;
  - TIR expressions and numbers pass through (a scalar constant made into `T.float32(0.5)`
    by the caller is inlined this way); lists and tuples are converted element-wise;
  - parameters: the tensors in argument order, then the TIR variables the shapes use but
    no dimension defines (`d` of a `d * 2` dim), then the outputs; `call_tir` passes those
    variables as PrimValues after the tensors, `R.call_tir(f, (x, y, d), ...)`, as TVM 0.27
    does (older TVM passed them last, as `tir_vars`, after the outputs);
  - `out_ty` is the TE output's shape in the caller's variables.

AddFunction: a PrimFunc structurally equal to one already in the module is not added again
(the lexicographically first of its names is used); otherwise it gets the first free name
of TVM's UniqueNameSupply, no underscore: `add`, `add1`, `add2` ('.' becomes '_').
"""

from __future__ import annotations

import string
from collections.abc import Callable

from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import GlobalVar, Op
from irtool.ir.module import IRModule
from irtool.ir.node_structural import node_equal, node_hash

from . import te


class BlockBuilder:
    """The module being legalized: its functions, TVM's name supply and de-duplication map."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.functions: dict = dict(mod.functions)
        self._names: dict[str, int] = {}
        self._dedup: dict[int, list[tuple[object, list[str]]]] | None = None
        self.bindings: dict = {}  # variable -> its (tuple or variable) value, for lookup_binding
        self._var_names: dict[str, int] = {}  # TVM's BlockBuilder name supply of emitted variables
        self.prologue: list | None = None  # bindings a legalization emits (`emit`, `match_cast`)
        self.in_dataflow = False

    # ----------------------------------------------------------------- the function table
    def _dedup_map(self) -> dict:
        if self._dedup is None:
            self._dedup = {}
            for name, fn in self.functions.items():
                self._remember(fn, name)
        return self._dedup

    def _remember(self, fn, name: str) -> None:
        bucket = self._dedup_map().setdefault(node_hash(fn), [])
        for other, names in bucket:
            if node_equal(other, fn):
                names.append(name)
                return
        bucket.append((fn, [name]))

    def unique_name(self, hint: str) -> str:
        """TVM's UniqueNameSupply.FreshName(hint, add_prefix=False, add_underscore=False)."""
        name = hint.replace(".", "_") or "v"
        if name not in self._names:
            self._names[name] = 0
            return name
        suffix = self._names[name]
        candidate = name
        while candidate in self._names:
            suffix += 1
            candidate = f"{name}{suffix}"
        self._names[name] = suffix
        self._names[candidate] = 0
        return candidate

    def add_function(self, fn, name_hint: str) -> GlobalVar:
        """TVM's BlockBuilder::AddFunction (see the module docstring)."""
        for other, names in self._dedup_map().get(node_hash(fn), []):
            if node_equal(other, fn):
                return self.mod.get_global_var(min(names))
        name = self.unique_name(name_hint)
        while name in self.functions:
            name = self.unique_name(name_hint)
        self.functions[name] = fn
        self._remember(fn, name)
        return self.mod.get_global_var(name)

    def update_function(self, name: str, fn) -> None:
        if self._dedup is not None:
            old = self.functions.get(name)
            for bucket in self._dedup.values():
                for i, (other, names) in enumerate(bucket):
                    if other is old and name in names:
                        names.remove(name)
                        if not names:
                            del bucket[i]
                        break
        self.functions[name] = fn
        if self._dedup is not None:
            self._remember(fn, name)

    def module(self) -> IRModule:
        return self.mod.with_functions(self.functions)

    def lookup_binding(self, var: rx.Var):
        """TVM's BlockBuilder.lookup_binding, for the tuple and variable bindings the legalizer
        has visited (concat/stack of a tuple variable); None for anything else."""
        return self.bindings.get(var)

    # ----------------------------------------------------------------- emitted bindings
    def _fresh_var_name(self, hint: str) -> str:
        """FreshName of TVM's BlockBuilder: `gv`, `gv1`, `gv2` ... (`lv` in a dataflow block)."""
        if hint not in self._var_names:
            self._var_names[hint] = 0
            return hint
        self._var_names[hint] += 1
        return f"{hint}{self._var_names[hint]}"

    def _new_var(self, sinfo) -> rx.Var:
        if self.in_dataflow:
            return rx.DataflowVar(self._fresh_var_name("lv"), sinfo)
        return rx.Var(self._fresh_var_name("gv"), sinfo)

    def emit(self, value) -> rx.Var:
        """TVM's `bb.emit(value)` inside a legalization: a fresh variable bound to `value` before
        the call being legalized (LegalizeOps then visits the binding, legalizing it in turn)."""
        from irtool.ir.relax_visitor import deduce_struct_info

        sinfo = value.struct_info if getattr(value, "struct_info", None) is not None else \
            deduce_struct_info(value, self.module())
        value.struct_info = sinfo
        var = self._new_var(sinfo)
        self.prologue.append(rx.VarBinding(var, value))
        return var

    def match_cast(self, value, sinfo) -> rx.Var:
        """TVM's `bb.match_cast(value, sinfo)`: a fresh variable of `sinfo`."""
        var = self._new_var(sinfo)
        self.prologue.append(rx.MatchCast(var, value, sinfo))
        return var

    # ----------------------------------------------------------------- call_te
    def call_te(self, te_func: Callable, *args, primfunc_name_hint: str | None = None, **kwargs) -> rx.Call:
        """TVM's `BlockBuilder.call_te` (see the module docstring)."""
        func, call_args, out_sinfo, tir_vars = gen_call_tir_inputs(te_func, *args, **kwargs)
        gv = self.add_function(func, primfunc_name_hint or te_func.__name__)
        return make_call_tir(gv, call_args, out_sinfo, tir_vars)


def make_call_tir(gv: GlobalVar, args: list, out_sinfo, tir_vars=None) -> rx.Call:
    """`R.call_tir(gv, (args..., tir_vars...), out_ty=out_sinfo)`, normalised: the TIR
    variables are PrimValues of the tuple (the PrimFunc takes them before its outputs)."""
    args = list(args) + [rx.PrimValue(v) if isinstance(v, tir.PrimExpr) else v for v in tir_vars or ()]
    arg_tuple = rx.Tuple(args)
    arg_tuple.struct_info = rx.TupleStructInfo([a.struct_info for a in args])
    call_args = [gv, arg_tuple]
    call = rx.Call(Op.get("relax.call_tir"), call_args, None, [out_sinfo])
    call.struct_info = out_sinfo
    return call


# ----------------------------------------------------------------------------- arguments


def _copy_vars(e, var_map: dict) -> None:
    """Fresh PrimFunc-side copies of the caller's TIR variables in `e` (same name and dtype)."""
    if isinstance(e, tir.Var):
        if e not in var_map:
            var_map[e] = tir.Var(e.name, e.dtype)
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            _copy_vars(getattr(e, f), var_map)
    elif isinstance(e, tuple):
        for x in e:
            _copy_vars(x, var_map)


def substitute(e, var_map: dict):
    """`e` with TIR variables replaced through `var_map` (by identity)."""
    if isinstance(e, int):
        return e
    if isinstance(e, tir.Var):
        return var_map.get(e, e)
    if isinstance(e, tir.Node):
        changes = {}
        for f in type(e).fields:
            v = getattr(e, f)
            if isinstance(v, (tir.Node, tuple)):
                nv = substitute(v, var_map)
                if nv is not v:
                    changes[f] = nv
        return e.replace(**changes) if changes else e
    if isinstance(e, tuple):
        out = tuple(substitute(x, var_map) for x in e)
        return e if all(a is b for a, b in zip(out, e)) else out
    return e


def _free_vars(e, out: list) -> list:
    if isinstance(e, tir.Var):
        if not any(v is e for v in out):
            out.append(e)
    elif isinstance(e, tir.Node):
        for f in type(e).fields:
            _free_vars(getattr(e, f), out)
    elif isinstance(e, tuple):
        for x in e:
            _free_vars(x, out)
    return out


def _dim_expr(d) -> tir.PrimExpr:
    return tir.IntImm(d, "int64") if isinstance(d, int) else d


def _relax_dim(d):
    return d.value if isinstance(d, tir.IntImm) else d


def gen_call_tir_inputs(te_func: Callable, *args, **kwargs):
    """TVM's `relax.utils.gen_call_tir_inputs`: (PrimFunc, call arguments, out struct info,
    extra TIR variable arguments)."""
    var_map: dict = {}
    call_args: list = []
    prim_args: list = []   # the PrimFunc's tensor (and scalar) parameters, in order
    extra: list = []

    def convert(arg):
        if isinstance(arg, rx.Var) and isinstance(arg.struct_info, rx.PrimStructInfo):
            return prim_var(arg)
        if isinstance(arg, tir.PrimExpr):
            _copy_vars(arg, var_map)
            new = substitute(arg, var_map)
            extra.append(new)
            return new
        if isinstance(arg, rx.Expr):
            sinfo = arg.struct_info
            if isinstance(sinfo, rx.TensorStructInfo):
                if not isinstance(sinfo.shape, tuple):
                    raise ValueError("call_te needs tensors whose shape is known")
                shape = tuple(_dim_expr(d) for d in sinfo.shape)
                _copy_vars(shape, var_map)
                n = len(prim_args)
                if isinstance(arg, rx.Var):
                    name = arg.name_hint
                elif n < len(string.ascii_uppercase):
                    name = string.ascii_uppercase[n]
                else:
                    name = f"tensor_input_{n}"
                t = te.placeholder(substitute(shape, var_map), sinfo.dtype, name)
                call_args.append(arg)
                prim_args.append(t)
                return t
            if isinstance(arg, rx.ShapeExpr):
                return [convert(_dim_expr(v)) for v in arg.values]
            raise TypeError(f"call_te cannot convert a {type(arg).__name__}")
        if isinstance(arg, list):
            return [convert(x) for x in arg]
        if isinstance(arg, tuple):
            return tuple(convert(x) for x in arg)
        if isinstance(arg, dict):
            return {k: convert(v) for k, v in arg.items()}
        return arg

    relax_of: dict = {}  # a TIR variable standing for a Relax int64 scalar variable -> that variable

    def prim_var(arg: rx.Var):
        """A Relax scalar variable (`p: R.Prim("int64")`) as TVM's call_te takes it: a known
        value is that value; an int64 one is a TIR variable of the PrimFunc passed after the
        tensors, as a size variable is; another dtype a scalar parameter in argument order."""
        value = arg.struct_info.value
        if value is not None:
            return convert(value if isinstance(value, tir.PrimExpr) else tir.const(value, arg.struct_info.dtype))
        param = tir.Var(arg.name_hint, arg.struct_info.dtype)
        if arg.struct_info.dtype == "int64":
            relax_of[param] = arg
            extra.append(param)
        else:
            call_args.append(arg)
            prim_args.append(param)
        return param

    te_args = convert(args)
    te_kwargs = convert(kwargs)
    out = te_func(*te_args, **te_kwargs)
    outs = [out] if isinstance(out, te.Tensor) else list(out)
    unbound = _unbound_vars(prim_args + outs, extra)
    func = te.create_prim_func(prim_args + unbound + outs, "int64")
    inverse = {v: k for k, v in var_map.items()}
    sinfos = [rx.TensorStructInfo(tuple(_relax_dim(substitute(d, inverse)) for d in o.shape), o.dtype)
              for o in outs]
    out_sinfo = sinfos[0] if len(sinfos) == 1 else rx.TupleStructInfo(sinfos)
    tir_vars = [relax_of.get(v) or substitute(v, inverse) for v in unbound]
    return func, call_args, out_sinfo, tir_vars


def _unbound_vars(tensors: list, extra: list) -> list:
    """TIR variables the shapes (and extra scalar arguments) use that no dimension is."""
    used: list = []
    bound: list = []
    for t in tensors:
        if isinstance(t, tir.Var):  # a scalar parameter
            bound.append(t)
            continue
        for d in t.shape:
            _free_vars(d, used)
            if isinstance(d, tir.Var):
                bound.append(d)
    for e in extra:
        _free_vars(e, used)
    return [v for v in used if not any(v is b for b in bound)]
