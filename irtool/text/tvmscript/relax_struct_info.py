"""Struct info as the Relax builder checks it: annotations against deduced values,
symbolic dims bound at calls, and messages that spell struct info as TVMScript does."""

from __future__ import annotations

from ...ir import relax as rx
from ...ir import tir


def _incompatible(ann: rx.StructInfo, value: rx.StructInfo) -> bool:
    """True when a value of struct info `value` can never satisfy `ann` (TVM's kFailL0:
    the annotation is then an error; weaker mismatches are checked at run time)."""
    from ...ir.node_structural import node_equal

    if isinstance(ann, rx.ObjectStructInfo) or isinstance(value, rx.ObjectStructInfo):
        return False
    if type(ann) is not type(value):
        return True
    if isinstance(ann, rx.TensorStructInfo):
        if ann.dtype and value.dtype and ann.dtype != value.dtype:
            return True
        if ann.ndim >= 0 and value.ndim >= 0 and ann.ndim != value.ndim:
            return True
        if isinstance(ann.shape, tuple) and isinstance(value.shape, tuple):
            return any(isinstance(a, int) and isinstance(b, int) and a != b
                       for a, b in zip(ann.shape, value.shape, strict=False))
        return False
    if isinstance(ann, rx.TupleStructInfo):
        return len(ann.fields_) != len(value.fields_) or any(
            _incompatible(a, b) for a, b in zip(ann.fields_, value.fields_, strict=True))
    if isinstance(ann, rx.ShapeStructInfo):
        if ann.ndim >= 0 and value.ndim >= 0 and ann.ndim != value.ndim:
            return True
        if ann.values is not None and value.values is not None:
            return any(isinstance(a, int) and isinstance(b, int) and a != b
                       for a, b in zip(ann.values, value.values, strict=True))
        return False
    if isinstance(ann, rx.PrimStructInfo):
        return ann.dtype != value.dtype
    if isinstance(ann, rx.FuncStructInfo):
        return not node_equal(ann, value) and ann.params is not None and value.params is not None and \
            len(ann.params) != len(value.params)
    return False


def _describe_sinfo(sinfo) -> str:
    """Struct info as TVMScript writes it, for messages."""
    def dim(d):
        if isinstance(d, int):
            return str(d)
        if isinstance(d, tir.Var):
            return d.name
        return "?"

    def fmt(s) -> str:
        if isinstance(s, rx.TensorStructInfo):
            parts = []
            if isinstance(s.shape, tuple):
                parts.append("(" + ", ".join(dim(d) for d in s.shape) + ("," if len(s.shape) == 1 else "") + ")")
            if s.dtype:
                parts.append(f'dtype="{s.dtype}"')
            if not isinstance(s.shape, tuple) and s.ndim >= 0:
                parts.append(f"ndim={s.ndim}")
            return f"R.Tensor({', '.join(parts)})"
        if isinstance(s, rx.TupleStructInfo):
            return "R.Tuple(" + ", ".join(fmt(f) for f in s.fields_) + ")"
        if isinstance(s, rx.ShapeStructInfo):
            if s.values is not None:
                return "R.Shape([" + ", ".join(dim(d) for d in s.values) + "])"
            return f"R.Shape(ndim={s.ndim})"
        if isinstance(s, rx.PrimStructInfo):
            return f'R.Prim("{s.dtype}")'
        if isinstance(s, rx.FuncStructInfo):
            return "R.Callable"
        return "R.Object"

    return f"`{fmt(sinfo)}`"


_STRUCT_INFO_NAMES = ("R.Tensor", "R.Tuple", "R.Shape", "R.Prim", "R.Object", "R.Callable")


class _StructInfoError(Exception):
    pass


def _annotated(ann, deduced, params=None):
    """The struct info a binding (or function result) gets, as TVM's BlockBuilder: the
    deduced one when the annotation is no finer (`c: R.Tensor(ndim=2) = x` keeps x's
    shape), the annotation when it promises more than deduction can show. A function
    result keeps only what its parameters define (match_cast variables are erased)."""
    from ...analysis.struct_info import erase_to_well_defined, is_base_of

    if ann is None or is_base_of(ann, deduced):
        if params is not None:
            defined = {d for p in params for d in rx.struct_info_dims(p.struct_info) if isinstance(d, tir.Var)}
            if any(not _dims_defined(d, {id(v) for v in defined}) for d in rx.struct_info_dims(deduced)):
                return erase_to_well_defined(deduced, defined) if ann is None else ann
        return deduced
    return ann


def _dims_defined(d, defined: set) -> bool:
    if isinstance(d, tir.Var):
        return id(d) in defined
    if isinstance(d, tir.Node):
        return all(_dims_defined(getattr(d, f), defined) for f in type(d).fields
                   if isinstance(getattr(d, f), tir.PrimExpr))
    return True


def _tuples(value):
    """Attribute values: TVMScript lists are the registry's tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, tir.IntImm):
        return value.value
    if isinstance(value, tir.FloatImm):
        return value.value
    return value


def _widen(d):
    if isinstance(d, tir.IntImm):
        return d.value
    if isinstance(d, tir.Var):
        return d
    return d


def _bind_symbols(fsinfo: rx.FuncStructInfo, args: list) -> rx.StructInfo:
    """The return struct info of a call: the callee's symbolic dims replaced by what the
    arguments give them (a callee `(n, 4) -> (n, 8)` called on `(2, 4)` returns `(2, 8)`)."""
    binding: dict[int, object] = {}

    def match(param, arg):
        if isinstance(param, rx.TensorStructInfo) and isinstance(arg, rx.TensorStructInfo):
            if isinstance(param.shape, tuple) and isinstance(arg.shape, tuple) and len(param.shape) == len(arg.shape):
                for p, a in zip(param.shape, arg.shape, strict=True):
                    if isinstance(p, tir.Var) and id(p) not in binding:
                        binding[id(p)] = a
        elif isinstance(param, rx.TupleStructInfo) and isinstance(arg, rx.TupleStructInfo):
            for p, a in zip(param.fields_, arg.fields_, strict=False):
                match(p, a)
        elif isinstance(param, rx.ShapeStructInfo) and isinstance(arg, rx.ShapeStructInfo):
            if param.values is not None and arg.values is not None:
                for p, a in zip(param.values, arg.values, strict=False):
                    if isinstance(p, tir.Var) and id(p) not in binding:
                        binding[id(p)] = a

    for p, a in zip(fsinfo.params or (), args, strict=False):
        match(p, a)
    if not binding:
        return fsinfo.ret

    def subst_dim(d):
        if isinstance(d, tir.Var) and id(d) in binding:
            return binding[id(d)]
        return d

    def subst(s):
        if isinstance(s, rx.TensorStructInfo) and isinstance(s.shape, tuple):
            return rx.TensorStructInfo(tuple(subst_dim(d) for d in s.shape), s.dtype)
        if isinstance(s, rx.TupleStructInfo):
            return rx.TupleStructInfo([subst(f) for f in s.fields_])
        if isinstance(s, rx.ShapeStructInfo) and s.values is not None:
            return rx.ShapeStructInfo(tuple(subst_dim(d) for d in s.values))
        return s

    return subst(fsinfo.ret)
