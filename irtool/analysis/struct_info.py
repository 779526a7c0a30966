"""Relax struct info: deduction for operator calls, the base check and the LCA.

`deduce_call(op, args_sinfo, attrs)` is TVM's per-operator `FInferStructInfo`. It reuses the
Relay type relations of the operator table (`irtool.ops.relax`) instead of a second set of
shape rules: struct info becomes Relay `TensorType`s, the relation runs, the result comes back.

The symbolic part (sentinels, fitting, where it differs from TVM) is `struct_info_fit.py`.

Calls whose result is declared, not deduced: `relax.call_tir`, `relax.call_tir_inplace`,
`relax.call_tir_with_grad`, `relax.call_dps_packed`, `relax.call_pure_packed`,
`relax.call_inplace_packed` and `relax.call_builtin_with_ctx` return their `sinfo_args[0]`;
pass `sinfo_args` (the call's) to `deduce_call`. Calls of functions (a GlobalVar or Var callee)
are `deduce_func_call(func_sinfo, args_sinfo)`, TVM's DeriveCallRetStructInfo.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.node import Node
from ..ir.relax import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    PrimValue,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..ir.relax import Var as RelaxVar
from ..ops import relax as relax_ops
from ..ops import relax_memory
from ..ops.registry import AttrError, TypeRelError
from .struct_info_fit import (
    _RANKS,
    StructInfoError,
    _Atoms,
    _Call,
    _compile,
    _deduce_core,
    _describe,
    _erase_rank,
    _int64,
    _shape_values,
    prim_equal,
)

SPECIAL_CALLS = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad",
                           "relax.call_dps_packed", "relax.call_pure_packed", "relax.call_inplace_packed",
                           "relax.call_builtin_with_ctx"})


# ----------------------------------------------------------------------------- deduction


def _deduce_ranked(op, args_sinfo, arg_exprs, attrs, dtype_guess):
    call = _Call(op, args_sinfo, arg_exprs, attrs, None, dtype_guess)
    if not call.unknown_rank:
        return _deduce_core(call)
    first = None
    for rank in _RANKS:
        try:
            return _erase_rank(_deduce_core(_Call(op, args_sinfo, arg_exprs, attrs, rank, dtype_guess)))
        except StructInfoError as err:
            first = first or err
    raise first


def _dtypes(s: StructInfo, out: list) -> list:
    if isinstance(s, TupleStructInfo):
        for f in s:
            _dtypes(f, out)
    elif isinstance(s, TensorStructInfo):
        out.append(s.dtype)
    return out


def _with_dtypes(s: StructInfo, dtypes) -> StructInfo:
    if isinstance(s, TupleStructInfo):
        return TupleStructInfo([_with_dtypes(f, dtypes) for f in s])
    if isinstance(s, TensorStructInfo):
        return s.replace(dtype=next(dtypes))
    return s


def deduce_call(op_name: str, args_sinfo: list, attrs=None, arg_exprs=None, sinfo_args=None) -> StructInfo:
    """The struct info of `op_name(args…)`: `args_sinfo` are the arguments' struct info, `attrs`
    the call's attributes (Attrs, dict or None; checked and defaulted here), `arg_exprs` the
    argument expressions (optional: shape and prim values are read from them when the struct
    info lacks them), `sinfo_args` the call's struct info arguments (for `relax.call_tir` & co).
    Raises StructInfoError for an invalid call or an unknown operator; its message does not
    repeat the operator's name, which the caller's diagnostic gives."""
    if op_name in SPECIAL_CALLS:
        if not sinfo_args:
            raise StructInfoError(f"{op_name} needs its struct info argument (out_ty) to have a result")
        return sinfo_args[0]
    if op_name in relax_memory.MEMORY_OPS:  # R.builtin.alloc_tensor, R.memory.*: from their arguments
        if arg_exprs is None:
            raise StructInfoError(f"{op_name} needs its argument expressions")
        return relax_memory.deduce(op_name, arg_exprs)
    op = relax_ops.lookup(op_name)
    if op is None:
        raise StructInfoError(f"unknown Relax operator `{op_name}`")
    required = sum(1 for _, kind in op.args if not kind.endswith("?"))
    if op.deduce is not None and required <= len(args_sinfo) <= len(op.args):
        try:
            full = relax_ops.make_call_attrs(op, attrs)
            out = op.deduce(list(args_sinfo), dict(full.items()) if full is not None else {})
        except (TypeRelError, AttrError) as err:
            raise StructInfoError(str(err)) from None
        if out is not None:
            return out
    key = _static_key(op, args_sinfo, attrs)
    known = _STATIC_RESULTS.get(key) if key is not None else None
    if known is not None:
        return _copy(known)
    result = _deduce_fresh(op, op_name, args_sinfo, attrs, arg_exprs)
    if key is not None and _copyable(result):
        if len(_STATIC_RESULTS) >= 4096:
            _STATIC_RESULTS.clear()
        _STATIC_RESULTS[key] = _copy(result)
    return result


# Deductions for calls whose arguments are all tensors of static shape, by (operator, argument
# shapes and dtypes, attributes). An imported network repeats a few dozen such calls
# thousands of times; the result depends on nothing else (shape and prim arguments, whose
# values come from the argument expressions, are never cached).
_STATIC_RESULTS: dict = {}


def _static_key(op, args_sinfo, attrs):
    arg_kinds = op.arg_kinds
    if len(args_sinfo) > len(arg_kinds):
        return None
    args = []
    for kind, s in zip(arg_kinds, args_sinfo):
        if kind != "tensor" or type(s) is not TensorStructInfo or s.vdevice is not None or type(s.shape) is not tuple:
            return None
        for d in s.shape:
            if type(d) is not int:
                return None
        args.append((s.shape, s.dtype))
    try:
        key = (id(op), tuple(args), tuple(attrs.items()) if attrs else None)
        hash(key)
    except TypeError:  # an attribute value without a hash (a dict)
        return None
    return key


def _copyable(s: StructInfo) -> bool:
    if type(s) is TensorStructInfo:
        return s.vdevice is None and (s.shape is None or type(s.shape) is tuple)
    return type(s) is TupleStructInfo and all(_copyable(f) for f in s.fields_)


def _copy(s: StructInfo) -> StructInfo:
    """A fresh copy of a cached result (a tensor or a tuple of them), so that no two calls
    share one struct info object."""
    if type(s) is TensorStructInfo:
        return TensorStructInfo(s.shape, s.dtype, s.ndim)
    return TupleStructInfo([_copy(f) for f in s.fields_])


def _deduce_fresh(op, op_name: str, args_sinfo: list, attrs, arg_exprs) -> StructInfo:
    try:
        full = relax_ops.make_call_attrs(op, attrs)
    except AttrError as err:
        raise StructInfoError(str(err)) from None
    attr_dict = dict(full.items()) if full is not None else {}
    args_sinfo = list(args_sinfo)
    if not op.min_args <= len(args_sinfo) <= len(op.args):
        want = str(len(op.args)) if op.min_args == len(op.args) else f"{op.min_args} to {len(op.args)}"
        raise StructInfoError(f"{op_name} takes {want} arguments ({', '.join(op.arg_names)}), "
                              f"got {len(args_sinfo)}")
    try:
        out = _deduce_call(op, args_sinfo, arg_exprs, attr_dict)
    except (OverflowError, ValueError) as err:  # attribute values no shape can hold (inf, 1e400...)
        raise StructInfoError(f"invalid attribute value ({err})") from None
    if op.dtype_from_prim is not None:  # R.one_hot: the result has the on_value's dtype
        i = op.dtype_from_prim
        sinfo = args_sinfo[i]
        dtype = sinfo.dtype if isinstance(sinfo, PrimStructInfo) else ""
        if not dtype and arg_exprs is not None and isinstance(arg_exprs[i], PrimValue):
            dtype = arg_exprs[i].value.dtype
        out = _with_dtypes(out, iter([dtype] * len(_dtypes(out, []))))
    return out


def _deduce_call(op, args_sinfo: list, arg_exprs, attr_dict: dict) -> StructInfo:
    probe = _Call(op, args_sinfo, arg_exprs, attr_dict, None, None)
    if not probe.unknown_dtype:
        if not probe.unknown_rank:
            return _deduce_core(probe)
        return _deduce_ranked(op, args_sinfo, arg_exprs, attr_dict, None)
    guesses = list(dict.fromkeys(probe.known_dtypes()[:1] + ["float32", "int64", "bool"]))
    results, first = [], None
    for guess in guesses:
        try:
            results.append((guess, _deduce_ranked(op, args_sinfo, arg_exprs, attr_dict, guess)))
        except StructInfoError as err:
            first = first or err
    if not results:
        raise first
    guess, out = results[0]
    columns = [_dtypes(r, []) for _, r in results]
    dtypes = []
    for i, d in enumerate(columns[0]):
        same = all(len(c) == len(columns[0]) and c[i] == d for c in columns)
        dtypes.append(d if same and (len(results) > 1 or d != guess) else "")
    return _with_dtypes(out, iter(dtypes))


def deduce_func_call(func_sinfo: StructInfo, args_sinfo: list) -> StructInfo:
    """The struct info of calling a function of struct info `func_sinfo` (TVM's
    DeriveCallRetStructInfo): symbolic variables of the parameters are bound to the arguments'
    dimensions and substituted into the result; those left unbound are erased."""
    if not isinstance(func_sinfo, FuncStructInfo):
        raise StructInfoError(f"cannot call a value of struct info {_describe(func_sinfo)}")
    if func_sinfo.params is None:
        return func_sinfo.ret
    if len(func_sinfo.params) != len(args_sinfo):
        raise StructInfoError(f"the function takes {len(func_sinfo.params)} arguments, got {len(args_sinfo)}")
    binding: dict = {}
    for p, a in zip(func_sinfo.params, args_sinfo):
        _bind(p, a, binding)
    for i, (p, a) in enumerate(zip(func_sinfo.params, args_sinfo)):
        p = _substitute(p, binding)
        if not is_base_of(p, a) and not is_base_of(a, p):
            raise StructInfoError(f"argument {i} of struct info {_describe(a)} does not match the parameter's")
    ret = _substitute(func_sinfo.ret, binding)
    caller_vars: set = set()
    for a in args_sinfo:
        _sinfo_vars(a, caller_vars)
    return erase_to_well_defined(ret, caller_vars)


def _bind(param, arg, binding: dict) -> None:
    def bind_dims(pd, ad):
        if pd is None or ad is None or len(pd) != len(ad):
            return
        for x, y in zip(pd, ad):
            if isinstance(x, tir.Var) and id(x) not in binding:
                binding[id(x)] = y

    if isinstance(param, TensorStructInfo) and isinstance(arg, TensorStructInfo):
        bind_dims(_shape_values(param), _shape_values(arg))
    elif isinstance(param, ShapeStructInfo) and isinstance(arg, ShapeStructInfo):
        bind_dims(param.values, arg.values)
    elif isinstance(param, PrimStructInfo) and isinstance(arg, PrimStructInfo):
        if isinstance(param.value, tir.Var) and arg.value is not None:
            binding.setdefault(id(param.value), arg.value)
    elif isinstance(param, TupleStructInfo) and isinstance(arg, TupleStructInfo) and len(param) == len(arg):
        for p, a in zip(param, arg):
            _bind(p, a, binding)


def _subst_expr(e, binding: dict):
    if isinstance(e, tir.Var):
        return binding.get(id(e), e)
    if isinstance(e, tir.BinOp):
        a, b = _subst_expr(e.a, binding), _subst_expr(e.b, binding)
        if a is e.a and b is e.b:
            return e
        if isinstance(a, int):
            a = _int64(a)
        if isinstance(b, int):
            b = _int64(b)
        out = tir.BinOp(e.op, a, b)
        tree = _compile(out, _Atoms())
        return tree[1] if tree[0] == "c" else out
    return e


def _substitute(s: StructInfo, binding: dict) -> StructInfo:
    if not binding:
        return s
    if isinstance(s, TensorStructInfo) and isinstance(s.shape, tuple):
        return s.replace(shape=tuple(_subst_expr(d, binding) for d in s.shape))
    if isinstance(s, ShapeStructInfo) and s.values is not None:
        return ShapeStructInfo(tuple(_subst_expr(d, binding) for d in s.values))
    if isinstance(s, PrimStructInfo) and s.value is not None:
        return PrimStructInfo(s.dtype, _subst_expr(s.value, binding))
    if isinstance(s, TupleStructInfo):
        return TupleStructInfo([_substitute(f, binding) for f in s])
    return s


# ----------------------------------------------------------------------------- base check, LCA, erasure


def _dims_equal(a, b) -> bool:
    return len(a) == len(b) and all(prim_equal(x, y) for x, y in zip(a, b))


def is_base_of(base: StructInfo, derived: StructInfo) -> bool:
    """TVM's StructInfoBaseCheck: can a value of struct info `derived` be used where `base`
    is expected, without a run-time check? Object takes everything; a tensor of unknown
    dtype/ndim/shape takes the specific ones; symbolic dimensions compare structurally."""
    if isinstance(base, ObjectStructInfo):
        return True
    if type(base) is not type(derived):
        return False
    if isinstance(base, PrimStructInfo):
        if base.dtype != derived.dtype:
            return False
        return base.value is None or (derived.value is not None and prim_equal(base.value, derived.value))
    if isinstance(base, ShapeStructInfo):
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        return base.values is None or (derived.values is not None and _dims_equal(base.values, derived.values))
    if isinstance(base, TensorStructInfo):
        if base.dtype and base.dtype != derived.dtype:
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.vdevice is not None and base.vdevice != derived.vdevice:
            return False
        if base.shape is None:
            return True
        if base.shape is derived.shape:
            return True
        bs, ds = _shape_values(base), _shape_values(derived)
        return bs is not None and ds is not None and _dims_equal(bs, ds)
    if isinstance(base, TupleStructInfo):
        return len(base) == len(derived) and all(is_base_of(b, d) for b, d in zip(base, derived))
    if isinstance(base, FuncStructInfo):
        if base.purity and not derived.purity:  # a pure function is a special impure one
            return False
        if base.params is None:
            return is_base_of(base.ret, derived.ret)
        if derived.params is None or len(base.params) != len(derived.params):
            return False
        # parameters are contravariant
        return (all(is_base_of(d, b) for b, d in zip(base.params, derived.params))
                and is_base_of(base.ret, derived.ret))
    return False


def struct_info_equal(a: StructInfo, b: StructInfo) -> bool:
    return is_base_of(a, b) and is_base_of(b, a)


def lca(a: StructInfo, b: StructInfo) -> StructInfo:
    """TVM's StructInfoLCA: the most specific struct info both `a` and `b` are derived from
    (the struct info of `if c: a else b`)."""
    if struct_info_equal(a, b):
        return a
    if isinstance(a, ObjectStructInfo) or isinstance(b, ObjectStructInfo) or type(a) is not type(b):
        return ObjectStructInfo()
    if isinstance(a, PrimStructInfo):
        return PrimStructInfo(a.dtype) if a.dtype == b.dtype else ObjectStructInfo()
    if isinstance(a, ShapeStructInfo):
        return ShapeStructInfo(ndim=a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else ""
        vdevice = a.vdevice if a.vdevice == b.vdevice else None
        if a.ndim != b.ndim:
            return TensorStructInfo(None, dtype, ndim=-1, vdevice=vdevice)
        sa, sb = _shape_values(a), _shape_values(b)
        if a.shape is not None and (a.shape is b.shape or (sa is not None and sb is not None and _dims_equal(sa, sb))):
            return TensorStructInfo(a.shape, dtype, ndim=a.ndim, vdevice=vdevice)
        return TensorStructInfo(None, dtype, ndim=a.ndim, vdevice=vdevice)
    if isinstance(a, TupleStructInfo):
        if len(a) != len(b):
            return ObjectStructInfo()
        return TupleStructInfo([lca(x, y) for x, y in zip(a, b)])
    if isinstance(a, FuncStructInfo):
        purity = a.purity and b.purity
        if (a.params is not None and b.params is not None and len(a.params) == len(b.params)
                and all(struct_info_equal(x, y) for x, y in zip(a.params, b.params))):
            return FuncStructInfo(a.params, lca(a.ret, b.ret), purity)
        return FuncStructInfo(None, lca(a.ret, b.ret), purity)
    return ObjectStructInfo()


def _expr_vars(e, out: set) -> set:
    if isinstance(e, tir.Var):
        out.add(e)
    elif isinstance(e, Node):
        for f in e.fields:
            _expr_vars(getattr(e, f), out)
    elif isinstance(e, (tuple, list)):
        for x in e:
            _expr_vars(x, out)
    return out


def _sinfo_vars(s, out: set) -> set:
    """The TIR variables a struct info mentions."""
    if isinstance(s, TensorStructInfo):
        values = _shape_values(s)
        if values is not None:
            _expr_vars(values, out)
    elif isinstance(s, ShapeStructInfo) and s.values is not None:
        _expr_vars(s.values, out)
    elif isinstance(s, PrimStructInfo) and s.value is not None:
        _expr_vars(s.value, out)
    elif isinstance(s, TupleStructInfo):
        for f in s:
            _sinfo_vars(f, out)
    return out


def erase_to_well_defined(sinfo: StructInfo, defined=()) -> StructInfo:
    """TVM's EraseToWellDefined: drop the parts of `sinfo` that mention TIR variables not in
    `defined` (shapes keep their ndim, prim values their dtype), e.g. a function's return
    struct info seen from outside."""
    ok = set(defined)

    def fine(x) -> bool:
        return _expr_vars(x, set()) <= ok

    if isinstance(sinfo, TensorStructInfo):
        if isinstance(sinfo.shape, RelaxVar):
            return TensorStructInfo(None, sinfo.dtype, ndim=sinfo.ndim, vdevice=sinfo.vdevice)
        if sinfo.shape is not None and not fine(sinfo.shape):
            return TensorStructInfo(None, sinfo.dtype, ndim=sinfo.ndim, vdevice=sinfo.vdevice)
        return sinfo
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo if sinfo.values is None or fine(sinfo.values) else ShapeStructInfo(ndim=sinfo.ndim)
    if isinstance(sinfo, PrimStructInfo):
        return sinfo if sinfo.value is None or fine(sinfo.value) else PrimStructInfo(sinfo.dtype)
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo([erase_to_well_defined(f, ok) for f in sinfo])
    return sinfo
