"""The NumPy interpreter: runs Relay with the operators' NumPy references.

It is the oracle every transformation and every compiled kernel is tested against, so
it is simple and strict rather than fast:

    values     NumPy arrays (0-d for scalars), tuples of values, closures
    a call     of an operator: its reference, with the call's attributes as keywords;
               of a function or closure: a new frame binding the parameters;
               of a global: that function (recursion allowed). A call in tail position
               (a function's result, through lets and ifs) reuses the caller's Python
               frame, so a loop written as a recursive function (an imported ONNX Loop)
               runs any number of iterations
    let, if    evaluate the value / the condition, then the body / one branch
    check      when an expression has a checked type, the value must match it exactly
               (shape and dtype): a reference that disagrees with its type relation is
               a bug in the registry, reported as such

Dataflow chains and let chains are evaluated with loops (one memo per call frame), so
100k-op programs do not recurse.
"""

from __future__ import annotations

from ..diagnostics import DiagnosticError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import ANY, TensorType, TupleType, Type
from ..ops.common import np
from ..ops.registry import call_attrs, lookup
from . import InterpreterError


class Closure:
    """A function value: the function and the variables it captured."""

    __slots__ = ("fn", "env")

    def __init__(self, fn: Function, env: dict) -> None:
        self.fn = fn
        self.env = env

    def __repr__(self) -> str:
        return f"<closure of {len(self.fn.params)} parameters>"


class _TailCall:
    """A call left for `Interpreter.apply` to make in place of returning its value."""

    __slots__ = ("closure", "args")

    def __init__(self, closure: Closure, args: list) -> None:
        self.closure = closure
        self.args = args


def value_matches(value, t: Type | None) -> bool:
    if t is None:
        return True
    if type(t) is TensorType:
        return (isinstance(value, np.ndarray) and str(value.dtype) == t.dtype and value.ndim == len(t.shape)
                and all(d is ANY or d == s for d, s in zip(t.shape, value.shape)))
    if type(t) is TupleType:
        return isinstance(value, tuple) and len(value) == len(t.fields) and all(
            value_matches(v, f) for v, f in zip(value, t.fields))
    return True


def describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)} {value.dtype}"
    if isinstance(value, tuple):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    return repr(value)


class Interpreter:
    def __init__(self, mod: IRModule, check_types: bool = True) -> None:
        self.mod = mod
        self.check_types = check_types

    # ------------------------------------------------------------------ calls

    def run(self, name: str, args: list):
        fn = self.mod.functions.get(name)
        if fn is None:
            raise DiagnosticError(f"the module has no function `@{name}`")
        return self.apply(Closure(fn, {}), args)

    def apply(self, closure: Closure, args: list):
        # the tail positions passed through (ifs, calls) are checked against the final
        # value once, by node: a loop repeats the same few nodes
        tail_nodes: dict[int, Expr] = {}
        while True:
            fn = closure.fn
            if len(args) != len(fn.params):
                raise InterpreterError(f"function of {len(fn.params)} parameters called with {len(args)} arguments")
            env = dict(closure.env)
            for p, a in zip(fn.params, args):
                env[p] = a
            result = self.eval_tail(fn.body, env, tail_nodes)
            if type(result) is not _TailCall:
                break
            closure, args = result.closure, result.args
        if self.check_types:
            for node in tail_nodes.values():
                self.check(node, result)
        return result

    def eval_tail(self, expr: Expr, env: dict, tail_nodes: dict):
        """`expr`'s value, or the call it ends in (through lets and ifs) as a _TailCall."""
        while True:
            cls = type(expr)
            if cls is Let:
                env = dict(env)  # a let-bound function captures this dict, so it sees itself
                while type(expr) is Let:
                    tail_nodes[id(expr)] = expr
                    env[expr.var] = self.eval(expr.value, env)
                    expr = expr.body
                continue
            if cls is If:
                tail_nodes[id(expr)] = expr
                expr = expr.true_branch if bool(np.asarray(self.eval(expr.cond, env))) else expr.false_branch
                continue
            if cls is Call and type(expr.op) is not Op:
                tail_nodes[id(expr)] = expr
                # callee and arguments in one evaluation, so sub-expressions they share run once
                callee, *args = self.eval(Tuple((expr.op, *expr.args)), env)
                if not isinstance(callee, Closure):
                    raise InterpreterError(f"cannot call {describe(callee)}")
                return _TailCall(callee, args)
            return self.eval(expr, env)

    def check(self, node: Expr, value) -> None:
        if node.checked_type is not None and not value_matches(value, node.checked_type):
            from ..text.relay_printer import format_type

            raise InterpreterError(f"{node!r} produced {describe(value)} but its type is "
                                   f"{format_type(node.checked_type)}")

    def call_op(self, call: Call, args: list):
        opdef = lookup(call.op.name)
        if opdef is None or opdef.ref is None:
            raise DiagnosticError(f"operator `{call.op.name}` has no reference implementation", call.span)
        attrs = call_attrs(opdef, call.attrs)
        kwargs = dict(attrs.items()) if attrs else {}
        with np.errstate(all="ignore"):  # inf/nan are values here, as on the device
            result = opdef.ref(*args, **kwargs)
        # NumPy hands back scalars for 0-d results; values are always arrays here.
        if isinstance(result, tuple):
            return tuple(np.asarray(r) for r in result)
        return np.asarray(result)

    # ------------------------------------------------------------------ evaluation

    def eval(self, root: Expr, env: dict):
        memo: dict[int, object] = {}
        stack = [root]
        while stack:
            node = stack[-1]
            key = id(node)
            if key in memo:
                stack.pop()
                continue
            cls = type(node)
            if cls is Let:  # a let chain: bind in order, then continue with the body
                stack.pop()
                env = dict(env)
                while type(node) is Let:
                    env[node.var] = self.eval(node.value, env)
                    node = node.body
                memo[key] = value = self.eval(node, env)
                continue
            children = (node.op, *node.args) if cls is Call else node.fields if cls is Tuple else (
                (node.tuple_value,) if cls is TupleGetItem else ())
            pending = [c for c in children if id(c) not in memo and type(c) in (Call, Tuple, TupleGetItem)]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            value = self.eval_node(node, env, memo)
            if self.check_types:
                self.check(node, value)
            memo[key] = value
        return memo[id(root)]

    def eval_node(self, node: Expr, env: dict, memo: dict):
        cls = type(node)

        def val(e):
            v = memo.get(id(e))
            if v is None and id(e) not in memo:
                v = memo[id(e)] = self.eval_node(e, env, memo) if type(e) not in (Call, Tuple, TupleGetItem, Let) \
                    else self.eval(e, env)
            return v

        if cls is Var:
            if node not in env:
                raise DiagnosticError(f"free variable `%{node.name_hint}` has no value", node.span)
            return env[node]
        if cls is Constant:
            if node.data is None:
                raise DiagnosticError("constant has no data (the file has no #[metadata] section)", node.span)
            return node.data
        if cls is Call:
            args = [val(a) for a in node.args]
            callee = node.op
            if type(callee) is Op:
                return self.call_op(node, args)
            target = val(callee)
            if not isinstance(target, Closure):
                raise InterpreterError(f"cannot call {describe(target)}")
            return self.apply(target, args)
        if cls is Tuple:
            return tuple(val(f) for f in node.fields)
        if cls is TupleGetItem:
            return val(node.tuple_value)[node.index]
        if cls is GlobalVar:
            fn = self.mod.functions.get(node.name_hint)
            if fn is None:
                raise DiagnosticError(f"undefined global function `@{node.name_hint}`", node.span)
            return Closure(fn, {})
        if cls is Function:
            return Closure(node, env)
        if cls is If:
            cond = val(node.cond)
            return self.eval(node.true_branch if bool(np.asarray(cond)) else node.false_branch, env)
        if cls is Let:
            return self.eval(node, env)
        if cls is Op:
            raise DiagnosticError(f"operator `{node.name}` used as a value; only calls of operators can run",
                                  node.span)
        raise InterpreterError(f"cannot evaluate {node!r}")


def random_input(t: Type, rng):
    """A random value of type `t` (`?` dimensions become 1): normal floats, small ints."""
    if type(t) is TupleType:
        return tuple(random_input(f, rng) for f in t.fields)
    if type(t) is not TensorType:
        raise DiagnosticError("cannot make a random value of a non-tensor type")
    shape = tuple(1 if d is ANY else d for d in t.shape)
    if t.dtype == "bool":
        return rng.random(shape) < 0.5
    if t.dtype.startswith(("int", "uint")):
        return rng.integers(0, 10, size=shape).astype(t.dtype)
    return rng.standard_normal(shape).astype(t.dtype)


def interpret(mod: IRModule, inputs=None, entry: str = "main", check_types: bool = True):
    """Run `@entry` on `inputs` (a list in parameter order, or a dict by parameter name).
    Types are inferred first, so every value is checked against its type."""
    from ..analysis.type_infer import infer_types

    fn = mod.functions.get(entry)
    if fn is None:
        raise DiagnosticError(f"the module has no function `@{entry}`")
    if not isinstance(fn, Function):  # Relax (a PrimFunc is not an entry point)
        from .relax import run_relax

        return run_relax(mod, inputs, entry)
    if check_types:
        infer_types(mod)
    if inputs is None:
        inputs = []
    if isinstance(inputs, dict):
        missing = [p.name_hint for p in fn.params if p.name_hint not in inputs]
        if missing:
            raise DiagnosticError(f"missing input{'s' if len(missing) > 1 else ''} for `@{entry}`: "
                                  + ", ".join(f"%{m}" for m in missing), fn.span)
        unknown = sorted(set(inputs) - {p.name_hint for p in fn.params})
        if unknown:
            raise DiagnosticError(f"`@{entry}` has no parameter{'s' if len(unknown) > 1 else ''} "
                                  + ", ".join(f"%{u}" for u in unknown), fn.span)
        inputs = [inputs[p.name_hint] for p in fn.params]
    if len(inputs) != len(fn.params):
        raise DiagnosticError(f"`@{entry}` takes {len(fn.params)} inputs, got {len(inputs)}", fn.span)
    args = []
    for p, value in zip(fn.params, inputs):
        if isinstance(value, (int, float, bool)) or (isinstance(value, np.ndarray) is False and
                                                     not isinstance(value, tuple)):
            value = np.asarray(value)
        if check_types and not value_matches(value, p.type_annotation):
            from ..text.relay_printer import format_type

            raise DiagnosticError(f"input `%{p.name_hint}` is {describe(value)}, but the parameter has type "
                                  f"{format_type(p.type_annotation)}", p.span)
        args.append(value)
    return Interpreter(mod, check_types).run(entry, args)
