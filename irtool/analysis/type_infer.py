"""Type inference for Relay: fills `checked_type` on every expression.

Forward inference, as TVM's InferType computes it for programs whose parameters are
annotated (TVM can also solve for unannotated ones by unification; we ask for the
annotation instead, with a diagnostic at the parameter):

    Var            its annotation (parameters, free vars) or its let-bound value's type
    Constant       TensorType(shape, dtype) of the data
    Call of an op  the op's type relation over the argument types and attributes
    Call of f      f's FuncType: argument types must match, result is the return type
    Tuple, .i      TupleType / the field's type
    Let, If        the body's type / both branches' (equal) type; the condition is `bool`;
                   a let-bound function's variable has the function's declared signature
                   inside its own body (so it can recurse) unless the variable is annotated
    Function       FuncType(parameter types, body type); a declared return type must match
    GlobalVar      the FuncType of that global function (callees first; recursion needs
                   the callee's return type declared)

`?` dimensions match any dimension when types are compared. Every error is a
DiagnosticError at the offending expression that names the op and shows the types.
Chains are walked iteratively, so 100k-op programs are fine.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir.expr import Attrs, Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import ANY, FuncType, IncompleteType, TensorType, TupleType, Type
from ..ir.visitor import ExprMutator, evaluation_order
from ..ops.registry import TypeRelError, call_attrs, lookup
from ..text.relay_printer import format_type


class MissingTypeInfo(DiagnosticError):
    """Inference cannot start: an annotation or a constant's data is missing (as opposed
    to a program that is ill-typed)."""


def try_infer_types(mod: IRModule) -> bool:
    """Infer types if the program says enough to; False (module untouched) if it does not.
    A genuine type error is still raised."""
    try:
        infer_types(mod)
    except MissingTypeInfo:
        from ..ir.visitor import post_order

        for fn in mod.functions.values():
            for node in post_order(fn):
                node.checked_type = None
        return False
    return True


def types_match(a: Type, b: Type) -> bool:
    """Structural equality of types where `?` matches any dimension."""
    if type(a) is not type(b):
        return False
    if type(a) is TensorType:
        return a.dtype == b.dtype and len(a.shape) == len(b.shape) and all(
            x is ANY or y is ANY or x == y for x, y in zip(a.shape, b.shape))
    if type(a) is TupleType:
        return len(a.fields) == len(b.fields) and all(types_match(x, y) for x, y in zip(a.fields, b.fields))
    if type(a) is FuncType:
        return (len(a.arg_types) == len(b.arg_types) and types_match(a.ret_type, b.ret_type)
                and all(types_match(x, y) for x, y in zip(a.arg_types, b.arg_types)))
    return True  # IncompleteType


def _less_specific(a: Type, b: Type) -> Type:
    """Of two matching types, the one that admits both: `?` wherever either has it (the
    type of an `if` whose branches are (2, ?) and (?, 3) is (?, ?))."""
    if type(a) is TensorType and a.shape != b.shape:
        return TensorType([x if y is not ANY else y for x, y in zip(a.shape, b.shape)], a.dtype)
    if type(a) is TupleType:
        return TupleType([_less_specific(x, y) for x, y in zip(a.fields, b.fields)])
    return a


def _type_key(t: Type | None):
    """A hashable value of a type (None for a function type: those are not cached)."""
    cls = type(t)
    if cls is TensorType:
        return t.shape, t.dtype
    if cls is TupleType:
        fields = tuple(map(_type_key, t.fields))
        return None if None in fields else ("tuple", fields)
    return None


def _complete(t: Type | None) -> bool:
    if t is None or type(t) is IncompleteType:
        return False
    if type(t) is TupleType:
        return all(_complete(f) for f in t.fields)
    if type(t) is FuncType:
        return all(_complete(a) for a in t.arg_types) and _complete(t.ret_type)
    return True


class TypeInferencer:
    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod
        self.global_types: dict[str, FuncType] = {}
        self.in_progress: set[str] = set()
        # (op, attrs, argument types as values) -> result type: an imported network calls the
        # same op on the same shapes thousands of times, and a relation costs more than the key.
        # The attrs object is held in the key, so its id is not reused while the cache lives.
        self.relation_cache: dict[tuple, tuple[Attrs | None, Type]] = {}
        self.undeclared_functions: set[Var] = set()  # let-bound functions without a declared signature

    # ------------------------------------------------------------------ module

    def infer_module(self, mod: IRModule) -> None:
        self.mod = mod
        for name, fn in mod.items():
            if isinstance(fn, Function):  # Relax and TIR functions carry their own struct info
                self.global_type(name)

    def global_type(self, name: str, use: Expr | None = None) -> FuncType:
        if name in self.global_types:
            return self.global_types[name]
        if self.mod is None or name not in self.mod.functions:
            raise DiagnosticError(f"undefined global function `@{name}`", use.span if use else None)
        fn = self.mod.functions[name]
        if name in self.in_progress:  # recursion: the declared signature is all we can use
            declared = self.declared_type(fn)
            if declared is None:
                raise MissingTypeInfo(f"recursive call of `@{name}` needs its parameter and return types "
                                      "declared", use.span if use else fn.span)
            return declared
        self.in_progress.add(name)
        try:
            t = self.infer_expr(fn)
        finally:
            self.in_progress.discard(name)
        self.global_types[name] = t
        return t

    @staticmethod
    def declared_type(fn: Function) -> FuncType | None:
        params = [p.type_annotation for p in fn.params]
        if all(_complete(t) for t in params) and _complete(fn.ret_type):
            return FuncType(params, fn.ret_type)
        return None

    # ------------------------------------------------------------------ expressions

    def infer_expr(self, root: Expr) -> Type:
        order = evaluation_order(root)
        for item in order:
            # a let-bound function may call itself (TVM's while_loop): its variable is
            # used inside its value, before the binding, so it takes the signature the
            # function declares when the variable itself is not annotated
            if type(item) is tuple and item[0] == "bind" and type(item[1].value) is Function:
                var = item[1].var
                if not _complete(var.type_annotation):
                    var.checked_type = self.declared_type(item[1].value)
                    if var.checked_type is None:
                        self.undeclared_functions.add(var)
        for item in order:
            if type(item) is tuple:
                kind, node = item
                if kind == "bind":
                    self.bind_let(node)
                else:
                    self.enter_function(node)
                continue
            item.checked_type = self.type_of(item)
        return root.checked_type

    def bind_let(self, let: Let) -> None:
        value_type = let.value.checked_type
        if let.var.type_annotation is not None and _complete(let.var.type_annotation):
            if not types_match(let.var.type_annotation, value_type):
                raise DiagnosticError(
                    f"let-bound `%{let.var.name_hint}` is annotated {format_type(let.var.type_annotation)} "
                    f"but its value has type {format_type(value_type)}", let.var.span)
            let.var.checked_type = let.var.type_annotation
        else:
            let.var.checked_type = value_type

    def enter_function(self, fn: Function) -> None:
        for p in fn.params:
            if not _complete(p.type_annotation):
                raise MissingTypeInfo(f"parameter `%{p.name_hint}` needs a type annotation for type inference",
                                      p.span or fn.span)
            p.checked_type = p.type_annotation

    def type_of(self, e: Expr) -> Type:
        cls = type(e)
        if cls is Var:
            if e.checked_type is not None:
                return e.checked_type
            if _complete(e.type_annotation):
                return e.type_annotation
            if e in self.undeclared_functions:
                raise MissingTypeInfo(f"`%{e.name_hint}` is used in its own definition: a recursive function "
                                      "needs its parameter and return types declared", e.span)
            raise MissingTypeInfo(f"cannot infer the type of `%{e.name_hint}`: annotate it", e.span)
        if cls is Constant:
            if e.data is None:
                raise MissingTypeInfo("constant has no data (the file has no #[metadata] section), so its "
                                      "type is unknown", e.span)
            return TensorType(e.data.shape, str(e.data.dtype))
        if cls is Call:
            return self.call_type(e)
        if cls is Tuple:
            return TupleType([f.checked_type for f in e.fields])
        if cls is TupleGetItem:
            t = e.tuple_value.checked_type
            if type(t) is not TupleType:
                raise DiagnosticError(f"`.{e.index}` needs a tuple, got {format_type(t)}", e.span)
            if not 0 <= e.index < len(t.fields):
                raise DiagnosticError(f"tuple index {e.index} is out of range for {format_type(t)}", e.span)
            return t.fields[e.index]
        if cls is Let:
            return e.body.checked_type
        if cls is If:
            c = e.cond.checked_type
            if not (type(c) is TensorType and c.dtype == "bool" and not c.shape):
                raise DiagnosticError(f"the condition of `if` must be a bool scalar, got {format_type(c)}",
                                      e.span or e.cond.span)
            a, b = e.true_branch.checked_type, e.false_branch.checked_type
            if not types_match(a, b):
                raise DiagnosticError(f"the branches of `if` have different types: {format_type(a)} and "
                                      f"{format_type(b)}", e.span)
            return _less_specific(a, b)
        if cls is Function:
            body = e.body.checked_type
            if e.ret_type is not None and _complete(e.ret_type):
                if not types_match(e.ret_type, body):
                    raise DiagnosticError(f"function declared to return {format_type(e.ret_type)} but its body "
                                          f"has type {format_type(body)}", e.span)
            return FuncType([p.checked_type for p in e.params], body)
        if cls is GlobalVar:
            return self.global_type(e.name_hint, e)
        if cls is Op:
            return IncompleteType()  # only meaningful as a callee; checked at the call
        raise TypeError(f"type inference: unsupported node {e!r}")

    def call_type(self, call: Call) -> Type:
        callee = call.op
        arg_types = [a.checked_type for a in call.args]
        if type(callee) is Op:
            opdef = lookup(callee.name)
            if opdef is None:
                raise DiagnosticError(f"unknown operator `{callee.name}`", call.span)
            if len(arg_types) != len(opdef.args):
                raise DiagnosticError(
                    f"`{callee.name}` takes {len(opdef.args)} argument{'s' if len(opdef.args) != 1 else ''} "
                    f"({', '.join(opdef.args)}), got {len(arg_types)}", call.span)
            attrs = call_attrs(opdef, call.attrs)
            key = None
            if not opdef.needs_values:
                key = (callee.name, id(attrs), *map(_type_key, arg_types))
                cached = self.relation_cache.get(key)
                if cached is not None:
                    return cached[1]
            try:
                if opdef.needs_values:
                    values = [a.data if type(a) is Constant else None for a in call.args]
                    return opdef.type_rel(arg_types, attrs, values)
                result = opdef.type_rel(arg_types, attrs)
            except TypeRelError as err:
                shown = ", ".join(format_type(t) for t in arg_types)
                raise DiagnosticError(f"`{callee.name}`: {err} (argument types: {shown})", call.span) from None
            if key is not None and None not in key:
                self.relation_cache[key] = (attrs, result)
            return result
        ftype = callee.checked_type
        if type(ftype) is not FuncType:
            raise DiagnosticError(f"cannot call a value of type {format_type(ftype)}", call.span)
        name = f"@{callee.name_hint}" if type(callee) is GlobalVar else "the function"
        if len(arg_types) != len(ftype.arg_types):
            raise DiagnosticError(f"{name} takes {len(ftype.arg_types)} arguments, got {len(arg_types)}",
                                  call.span)
        for i, (got, want) in enumerate(zip(arg_types, ftype.arg_types)):
            if not types_match(got, want):
                where = call.span if type(call.args[i]) in (Var, GlobalVar) else call.args[i].span or call.span
                raise DiagnosticError(f"argument {i} of {name} has type {format_type(got)}, expected "
                                      f"{format_type(want)}", where)
        return ftype.ret_type


def infer_types(mod: IRModule) -> IRModule:
    """Fill `checked_type` throughout the module (in place) and return it."""
    TypeInferencer().infer_module(mod)
    return mod


class _FillAnnotations(ExprMutator):
    """Writes inferred types into the program text, as TVM's InferType does: a variable
    without an annotation gets its checked type, a function without a return type gets
    its body's type."""

    def visit_var(self, e: Var) -> Expr:
        if e.type_annotation is None and e.checked_type is not None:
            return Var(e.name_hint, e.checked_type, e.span)
        return e

    def visit_function(self, e: Function) -> Expr:
        new = super().visit_function(e)
        if new.ret_type is None and e.body.checked_type is not None:
            return Function(new.params, new.body, e.body.checked_type, new.attrs, new.span)
        return new


def infer_type_pass(mod: IRModule) -> IRModule:
    """TVM's InferType pass: infer every type, then write missing variable annotations
    and function return types into the program (a new module if any were missing)."""
    infer_types(mod)
    functions = {}
    for name, fn in mod.functions.items():
        functions[name] = _FillAnnotations().visit(fn) if isinstance(fn, Function) else fn
    if all(functions[name] is fn for name, fn in mod.functions.items()):
        return mod
    return infer_types(mod.with_functions(functions))
