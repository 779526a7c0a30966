"""Struct-info deduction for symbolic shapes: the Relay relation run on sentinel integers,
output dimensions fitted back into expressions of the symbols (`struct_info.py` is the API).

Symbolic dimensions (`n`, `n * 2`, TIR expressions of int64 variables) are handled by
substitution. Each variable gets a distinct large sentinel integer (a multiple of
720720 = lcm(1..16) times a prime above 1000, so that exact divisions stay exact and no two
symbols or constants coincide, and never 1, which would broadcast); the relation runs on
the resulting static shapes. An output dimension is then fitted as a function of the symbols:
one extra run per symbol, with that symbol's sentinel moved, gives its coefficient; the result
is accepted if it is affine (`n`, `n * 4`, `n + m`, `n - 2`) or the floor of an affine
expression divided by a small constant (`(n + 1) // 2`: conv2d/pooling with strides, split),
and if a verification run with every symbol moved, and a run with small values (2, 3, ...)
where the relation accepts them, agree with the fit. Otherwise that dimension is unknown and the
tensor gets `ndim` only. An output dimension whose form is that of an input dimension reuses
the input's expression object. An operator with a symbolic relation (`sym_rel`, strided_slice)
computes on the TIR expressions directly instead.

When the relation rejects the sentinels (n broadcast against m, which only runs when n == m or
one of them is 1), it runs again with `?` for every symbolic tensor dimension: if that passes,
an output tensor with a `?` gets its ndim and dtype only (as TVM does for a broadcast it cannot
prove) and one without keeps its shape, fitted over the shape and prim values alone (matmul
(2, n) x (4, 5): (2, 5); a reshape of an unknown shape to (n, m, 16): (n, m, 16), as TVM); if
not, the call is invalid. Unknown dimensions (`R.Tensor(ndim=2)`) are anonymous symbols; an
unknown rank is tried with a few ranks and comes out as `ndim=-1`; an unknown dtype is tried with
a few dtypes, and the result's dtype is kept only where it does not follow the guess.

Where this differs from TVM 0.27 (which simplifies symbolic expressions with its arithmetic
analyzer):
- a product of symbols (`d * d_1`, in any order) is one atom, so an op that carries it
  (matmul of (d * d_1, 16), add, transpose, a reduction) keeps it; where an output does not
  fit so (reshape of (d * d_1 * 2, 16) to (d, -1, 16)), the call is deduced again with the
  product expanded into its factors and that tensor's fit is taken. Other products and
  min/max are not fitted (reshape has its own symbolic relation that keeps the target
  shape and writes a -1 among constants as `n * m`, as TVM does); split of n
  at [3] gives ndim only, TVM
  `T.max(T.min(3, n) - T.min(0, n), 0)` and `T.max(n - 3, 0)`. strided_slice, whose symbolic
  bounds are the common case, has its own symbolic relation (`RelaxOp.sym_rel`) that builds
  TVM's clamping expression and simplifies it as TVM's analyzer does, size variables
  non-negative (codegen/topi/rewrite_simplify.py: `T.max(n - 1, 0)`, `T.min(99, n)`);
- convolutions and pools over a size variable have their own symbolic relation too (TVM's
  `(n - 1) // 2 + 1`, ceil_mode's if_then_else); other floor forms are printed as fitted
  (split into sections), a constant the divisor divides taken out of the floor as TVM's
  simplifier does (`(n + 6) // 3` is `n // 3 + 2`, TVM's form);
- a symbol is taken as large and distinct from other symbols and constants: where TVM cannot
  prove a shape check either way it accepts the call, here some checks fail instead
  (broadcast_to (2, 3) -> (n, 3), reshape (2, 3) -> (n, 4) are errors here);
- after a `?` retry, a symbolic output dimension is lost: matmul (n, k) x (k2, 5) with distinct
  symbols k, k2 gives ndim only, TVM (n, 5); prelu of (1, n, 4, 4) with alpha (3,) gives ndim
  only, TVM (1, n, 4, 4); but (n,) + (4,) gives (4,), where TVM gives ndim only.
"""

from __future__ import annotations

import operator
from fractions import Fraction
from math import lcm

from ..ir import tir
from ..ir.node import Node
from ..ir.relax import (
    PrimStructInfo,
    PrimValue,
    ShapeExpr,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..ir.relax import Tuple as RelaxTuple
from ..ir.relax import Var as RelaxVar
from ..ir.types import ANY, TensorType, TupleType
from ..ops.registry import AttrError, TypeRelError
from ..ops.relax_bridge import ShapeResult


class StructInfoError(Exception):
    """A call's arguments or attributes are invalid for its operator."""


_M = 720720  # lcm(1..16): sentinels and their moves are multiples of it
_MAX_DIVISOR = 64
_RANKS = (1, 2, 3, 4, 5, 0, 6)


def _primes(n: int, start: int = 1009) -> list[int]:
    out, p = [], start
    while len(out) < n:
        if all(p % d for d in range(2, int(p ** 0.5) + 1)):
            out.append(p)
        p += 2
    return out


# ----------------------------------------------------------------------------- symbolic expressions


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_INT_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "floormod": operator.mod, "min": min, "max": max,
    "div": _truncdiv, "truncdiv": _truncdiv, "truncmod": lambda a, b: a - _truncdiv(a, b) * b,
}


# Operators of input dimensions evaluated on sentinels: the affine ones. The others (floordiv,
# floormod, min, max ...) look affine or constant at the sentinels, which are all multiples of
# 720720 and large: they are taken whole, as symbols of their own (`n // 4` stays `n // 4`).
_FITTED_OPS = frozenset({"add", "sub", "mul"})


def _key(e):
    """A hashable structural key of a TIR expression (variables by identity)."""
    if isinstance(e, tir.Var):
        return ("var", id(e))
    if isinstance(e, Node):
        return (type(e).__name__,) + tuple(_key(getattr(e, f)) for f in e.fields)
    if isinstance(e, (tuple, list)):
        return tuple(_key(x) for x in e)
    return e


class _Atoms:
    """The symbols of a call: TIR variables, expressions we cannot evaluate (taken whole), and
    anonymous unknown dimensions."""

    def __init__(self, products: bool = True) -> None:
        self.exprs: list = []  # a Var, an opaque PrimExpr, or None (anonymous)
        self._index: dict = {}
        # a product of symbols (`d * d_1`) as an atom of its own (fits a matmul's (d * d_1, 16)),
        # or as the product of its factors' atoms (fits a reshape of it to (d, -1): d_1 * 16)
        self.products = products
        self.has_products = False

    def __len__(self) -> int:
        return len(self.exprs)

    def of(self, e) -> int:
        k = _key(e)
        if k not in self._index:
            self._index[k] = len(self.exprs)
            self.exprs.append(e)
        return self._index[k]

    def of_product(self, factors: list, whole=None) -> int:
        """The atom of a product of non-constant factors (`d * d_1` and `d_1 * d` are one);
        `whole` is the product as written, if it has no constant factor."""
        k = ("prod",) + tuple(sorted((_key(f) for f in factors), key=repr))
        if k not in self._index:
            expr = whole
            if expr is None:
                expr = factors[0]
                for f in factors[1:]:
                    expr = tir.BinOp("mul", expr, f)
            self._index[k] = len(self.exprs)
            self.exprs.append(expr)
            self.has_products = True
        return self._index[k]

    def anon(self) -> int:
        self.exprs.append(None)
        return len(self.exprs) - 1

    def name(self, i: int) -> str:
        e = self.exprs[i]
        return e.name if isinstance(e, tir.Var) else "?"


def _is_int_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _compile(e, atoms: _Atoms):
    """A TIR integer expression as a tree over atoms: ("c", v) | ("a", i) | (op, a, b). Constant
    subtrees fold."""
    if isinstance(e, bool):
        return ("c", int(e))
    if isinstance(e, int):
        return ("c", e)
    if isinstance(e, tir.IntImm):
        return ("c", e.value)
    if isinstance(e, tir.Var):
        return ("a", atoms.of(e))
    if isinstance(e, tir.BinOp) and e.op == "mul":
        factors: list = []
        coef = _factors(e, factors)
        if len(factors) >= 2 and atoms.products:  # one atom, whatever the factors' order
            if not coef:
                return ("c", 0)
            i = atoms.of_product(factors, e if coef == 1 else None)
            return ("a", i) if coef == 1 else ("mul", ("a", i), ("c", coef))
    if isinstance(e, tir.BinOp) and e.op in _FITTED_OPS:
        a, b = _compile(e.a, atoms), _compile(e.b, atoms)
        if a[0] == "c" and b[0] == "c":
            return ("c", _INT_OPS[e.op](a[1], b[1]))
        return (e.op, a, b)
    value = _const(e)
    if value is not None:
        return ("c", value)
    if isinstance(e, tir.Cast) and _is_int_dtype(e.dtype):
        return _compile(e.value, atoms)
    return ("a", atoms.of(e))


def _factors(e, out: list) -> int:
    """Flattens a product: appends its non-constant factors to `out`, returns the constant one."""
    if isinstance(e, tir.BinOp) and e.op == "mul":
        return _factors(e.a, out) * _factors(e.b, out)
    if isinstance(e, tir.Cast) and _is_int_dtype(e.dtype):
        return _factors(e.value, out)
    value = _const(e)
    if value is not None:
        return value
    out.append(e)
    return 1


def _const(e) -> int | None:
    """The value of a constant integer expression, else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Cast) and _is_int_dtype(e.dtype):
        return _const(e.value)
    if isinstance(e, tir.BinOp) and e.op in _INT_OPS:
        a, b = _const(e.a), _const(e.b)
        if a is not None and b is not None:
            try:
                return _INT_OPS[e.op](a, b)
            except ZeroDivisionError:
                return None
    return None


def _eval(tree, env):
    tag = tree[0]
    if tag == "c":
        return tree[1]
    if tag == "a":
        return env[tree[1]]
    return _INT_OPS[tag](_eval(tree[1], env), _eval(tree[2], env))


def _atoms_in(tree, out: set) -> set:
    if tree[0] == "a":
        out.add(tree[1])
    elif tree[0] != "c":
        _atoms_in(tree[1], out)
        _atoms_in(tree[2], out)
    return out


class _Sym:
    """A symbolic dimension or value of an argument."""

    __slots__ = ("expr", "tree")

    def __init__(self, expr, tree) -> None:
        self.expr = expr
        self.tree = tree


def _dim(d, atoms: _Atoms):
    if isinstance(d, bool):
        return int(d)
    if isinstance(d, int):
        return d
    if isinstance(d, tir.IntImm):
        return d.value
    if isinstance(d, tir.FloatImm):
        return d.value
    if isinstance(d, float):
        return d
    if isinstance(d, tir.PrimExpr):
        tree = _compile(d, atoms)
        return tree[1] if tree[0] == "c" else _Sym(d, tree)
    raise StructInfoError(f"unsupported dimension {d!r}")


def _anon(atoms: _Atoms) -> _Sym:
    i = atoms.anon()
    return _Sym(None, ("a", i))


def prim_equal(a, b) -> bool:
    """Are two dimensions (ints or TIR expressions) equal? Structurally, after folding
    constants and putting affine expressions in a normal form (`2 * n` equals `n * 2`)."""
    if a is b:
        return True
    atoms = _Atoms()
    try:
        ta, tb = _compile(a, atoms), _compile(b, atoms)
    except (TypeError, AttributeError):
        return _key(a) == _key(b)
    la, lb = _linear(ta), _linear(tb)
    if la is not None and lb is not None:
        return la == lb
    return _key(ta) == _key(tb)


def _linear(tree):
    """{atom: coefficient} plus the constant (key None) of an affine tree, or None."""
    tag = tree[0]
    if tag == "c":
        return {None: tree[1]} if tree[1] else {}
    if tag == "a":
        return {tree[1]: 1}
    if tag in ("add", "sub", "mul"):
        la, lb = _linear(tree[1]), _linear(tree[2])
        if la is None or lb is None:
            return None
        if tag == "mul":
            if set(la) <= {None}:
                la, lb = lb, la
            if not set(lb) <= {None}:
                return None
            k = lb.get(None, 0)
            return {a: c * k for a, c in la.items() if c * k}
        sign = 1 if tag == "add" else -1
        out = dict(la)
        for a, c in lb.items():
            out[a] = out.get(a, 0) + sign * c
        return {a: c for a, c in out.items() if c}
    if tag in ("floordiv", "floormod", "div", "truncdiv", "truncmod", "min", "max"):
        la, lb = _linear(tree[1]), _linear(tree[2])
        if la is not None and lb is not None and set(la) <= {None} and set(lb) <= {None}:
            return {None: _INT_OPS[tag](la.get(None, 0), lb.get(None, 0))} if lb.get(None, 0) else None
    return None


# ----------------------------------------------------------------------------- argument templates


class _Tensor:
    __slots__ = ("dims", "dtype")

    def __init__(self, dims, dtype: str) -> None:
        self.dims = dims  # list of int | _Sym, or None for an unknown rank
        self.dtype = dtype


class _Unknown:
    """An argument of unknown length (shape/prims) until a rank is chosen."""


def _describe(s) -> str:
    return type(s).__name__ if s is not None else "no struct info"


def _shape_values(sinfo):
    """The dims of a TensorStructInfo (tuple, or None), looking through a shape variable."""
    shape = sinfo.shape
    if isinstance(shape, RelaxVar):
        sv = shape.struct_info
        return sv.values if isinstance(sv, ShapeStructInfo) else None
    return shape


def _prim_value(sinfo, expr):
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return sinfo.value
    if isinstance(expr, PrimValue):
        return expr.value
    return None


class _Call:
    """One call, its arguments turned into templates over atoms."""

    def __init__(self, op, args_sinfo, arg_exprs, attrs: dict, rank: int | None, dtype_guess: str | None,
                 products: bool = True) -> None:
        self.op = op
        self.attrs = attrs
        self.inputs = (op, args_sinfo, arg_exprs, attrs, rank, dtype_guess)
        self.atoms = _Atoms(products)
        self.tensor_dims: list = []  # every symbolic tensor dimension (for the small-value check)
        self.vdevice = None  # the first tensor argument's virtual device, given to the results
        self.args = []
        exprs = list(arg_exprs) if arg_exprs is not None else [None] * len(args_sinfo)
        exprs += [None] * (len(args_sinfo) - len(exprs))
        for (name, kind), sinfo, expr in zip(op.args, args_sinfo, exprs):
            self.args.append(self._template(name, kind.rstrip("?"), sinfo, expr, rank, dtype_guess))

    def _fail(self, name: str, want: str, sinfo):
        raise StructInfoError(f"{self.op.name} expects {want} for argument `{name}`, got {_describe(sinfo)}")

    def _tensor(self, name, sinfo, rank, dtype_guess):
        if not isinstance(sinfo, TensorStructInfo):
            self._fail(name, "a tensor", sinfo)
        self.vdevice = self.vdevice if self.vdevice is not None else sinfo.vdevice
        values = _shape_values(sinfo)
        if values is not None:
            dims = [_dim(d, self.atoms) for d in values]
        elif sinfo.ndim >= 0 or rank is not None:
            dims = [_anon(self.atoms) for _ in range(sinfo.ndim if sinfo.ndim >= 0 else rank)]
        else:
            dims = None
        self.tensor_dims += [d for d in dims or () if isinstance(d, _Sym)]
        return _Tensor(dims, sinfo.dtype or (dtype_guess or ""))

    def _template(self, name, kind, sinfo, expr, rank, dtype_guess):
        atoms = self.atoms
        if kind == "tensor":
            return self._tensor(name, sinfo, rank, dtype_guess)
        if kind == "tensors":
            fields = None
            if isinstance(sinfo, TupleStructInfo):
                fields = list(sinfo.fields_)
            elif isinstance(expr, RelaxTuple):
                fields = [f.struct_info for f in expr.fields_]
            if fields is None:
                self._fail(name, "a tuple of tensors", sinfo)
            return [self._tensor(name, f, rank, dtype_guess) for f in fields]
        if kind == "shape":
            values = sinfo.values if isinstance(sinfo, ShapeStructInfo) else None
            if values is None and isinstance(expr, ShapeExpr):
                values = expr.values
            if values is not None:
                return [_dim(d, atoms) for d in values]
            if not isinstance(sinfo, ShapeStructInfo):
                self._fail(name, "a shape", sinfo)
            n = sinfo.ndim if sinfo.ndim >= 0 else rank
            return _Unknown() if n is None else [_anon(atoms) for _ in range(n)]
        if kind == "prim":
            if not isinstance(sinfo, PrimStructInfo) and not isinstance(expr, PrimValue):
                self._fail(name, "a scalar (PrimValue)", sinfo)
            value = _prim_value(sinfo, expr)
            return _anon(atoms) if value is None else _dim(value, atoms)
        # prims: a tuple of PrimValues
        if isinstance(sinfo, TupleStructInfo):
            fields = [(f, None) for f in sinfo.fields_]
            if isinstance(expr, RelaxTuple):
                fields = list(zip(sinfo.fields_, expr.fields_))
        elif isinstance(expr, RelaxTuple):
            fields = [(f.struct_info, f) for f in expr.fields_]
        else:
            self._fail(name, "a tuple of scalars", sinfo)
        out = []
        for fs, fe in fields:
            value = _prim_value(fs, fe)
            out.append(_anon(atoms) if value is None else _dim(value, atoms))
        return out

    @property
    def unknown_rank(self) -> bool:
        def unknown(a):
            if isinstance(a, _Tensor):
                return a.dims is None
            if isinstance(a, list):
                return any(unknown(x) for x in a)
            return isinstance(a, _Unknown)
        return any(unknown(a) for a in self.args)

    @property
    def unknown_dtype(self) -> bool:
        return any(t.dtype == "" for t in self._tensors())

    def _tensors(self):
        for a in self.args:
            if isinstance(a, _Tensor):
                yield a
            elif isinstance(a, list):
                yield from (t for t in a if isinstance(t, _Tensor))

    def known_dtypes(self) -> list[str]:
        return [t.dtype for t in self._tensors() if t.dtype]

    # -- running the relation

    def instantiate(self, env, any_dims: bool = False) -> list:
        def value(d, tensor: bool):
            if not isinstance(d, _Sym):
                return d
            if tensor and any_dims:
                return ANY
            return _eval(d.tree, env)

        def inst(a, kind):
            if kind == "tensor":
                return TensorType(tuple(value(d, True) for d in a.dims), a.dtype)
            if kind == "tensors":
                return TupleType([inst(t, "tensor") for t in a])
            if kind in ("shape", "prims"):
                return tuple(value(d, False) for d in a)
            return value(a, False)

        return [inst(a, k) for a, k in zip(self.args, self.op.arg_kinds)]

    def instantiate_symbolic(self) -> list:
        """The arguments with their dims and values as ints or TIR expressions (for sym_rel)."""
        def value(d):
            return d.expr if isinstance(d, _Sym) else d

        def inst(a, kind):
            if kind == "tensor":
                return TensorType(tuple(value(d) for d in a.dims), a.dtype)
            if kind == "tensors":
                return TupleType([inst(t, "tensor") for t in a])
            if kind in ("shape", "prims"):
                return tuple(value(d) for d in a)
            return value(a)

        return [inst(a, k) for a, k in zip(self.args, self.op.arg_kinds)]

    def run(self, env, any_dims: bool = False):
        return self.op.infer(self.instantiate(env, any_dims), self.attrs)


# ----------------------------------------------------------------------------- results


def _flatten(out, dims: list, sig: list) -> None:
    """The dimensions of a Relay-level result, in order, and its structure."""
    if isinstance(out, TupleType):
        sig.append(("(", len(out.fields)))
        for f in out.fields:
            _flatten(f, dims, sig)
    elif isinstance(out, TensorType):
        sig.append(("T", len(out.shape), out.dtype))
        dims += out.shape
    elif isinstance(out, ShapeResult):
        sig.append(("S", len(out.values)))
        dims += out.values
    else:
        raise StructInfoError(f"unexpected result type {out!r}")


def _rebuild(sig: list, dims: list, vdevice=None) -> StructInfo:
    """StructInfo from a structure and its dims (None = unknown: the tensor gets ndim only)."""
    pos = [0, 0]

    def build():
        item = sig[pos[0]]
        pos[0] += 1
        if item[0] == "(":
            return TupleStructInfo([build() for _ in range(item[1])])
        n = item[1]
        ds = dims[pos[1]:pos[1] + n]
        pos[1] += n
        known = all(d is not None and d is not ANY for d in ds)
        if item[0] == "T":
            if known:
                return TensorStructInfo(tuple(ds), item[2], vdevice=vdevice)
            return TensorStructInfo(None, item[2], ndim=n, vdevice=vdevice)
        return ShapeStructInfo(tuple(ds)) if known else ShapeStructInfo(ndim=n)

    return build()


def _erase_rank(s: StructInfo) -> StructInfo:
    if isinstance(s, TupleStructInfo):
        return TupleStructInfo([_erase_rank(f) for f in s])
    if isinstance(s, TensorStructInfo):
        return TensorStructInfo(None, s.dtype, ndim=-1, vdevice=s.vdevice)
    if isinstance(s, ShapeStructInfo):
        return ShapeStructInfo(ndim=-1)
    return s


def _int64(v: int) -> tir.IntImm:
    return tir.IntImm(v, "int64")


def _build_expr(form, atoms: _Atoms):
    """TIR for (sum p_j x_j + r) // q, terms in atom order: `n * 4 + m - 2`, `(n + 1) // 2`."""
    coefs, r, q = form
    pos = [(atoms.exprs[j], c) for j, c in enumerate(coefs) if c > 0]
    neg = [(atoms.exprs[j], -c) for j, c in enumerate(coefs) if c < 0]

    def term(e, c):
        return e if c == 1 else tir.BinOp("mul", e, _int64(c))

    if pos:
        acc = term(*pos[0])
        for e, c in pos[1:]:
            acc = tir.BinOp("add", acc, term(e, c))
    else:
        acc, r = _int64(r), 0
    for e, c in neg:
        acc = tir.BinOp("sub", acc, term(e, c))
    # TVM's simplifier divides a constant the divisor divides out of the floor: `n // 3 + 2`
    shift, r = (r // q, 0) if q > 1 and pos and r % q == 0 else (0, r)
    if r > 0:
        acc = tir.BinOp("add", acc, _int64(r))
    elif r < 0:
        acc = tir.BinOp("sub", acc, _int64(-r))
    acc = acc if q == 1 else tir.BinOp("floordiv", acc, _int64(q))
    if shift > 0:
        acc = tir.BinOp("add", acc, _int64(shift))
    elif shift < 0:
        acc = tir.BinOp("sub", acc, _int64(-shift))
    return acc


def _apply(form, env) -> int:
    coefs, r, q = form
    return (sum(c * x for c, x in zip(coefs, env)) + r) // q


class _Fitter:
    """Fits each output dimension as (sum p_j x_j + r) // q over the call's atoms."""

    def __init__(self, call: _Call) -> None:
        self.call = call
        n = len(call.atoms)
        self.n = n
        self.base = tuple(_M * p for p in _primes(n))
        self.delta = tuple(_M * 3 for _ in range(n))  # keeps the sentinels odd multiples: no collisions
        verify = [b + _M * (2 * j + 5) for j, b in enumerate(self.base)]
        while len(set(verify)) < n:
            verify = [v + _M * 2 * j for j, v in enumerate(verify)]
        self.verify = tuple(verify)
        self.small = tuple(2 + j for j in range(n))
        self.odd = tuple(b + j + 1 for j, b in enumerate(self.base))  # off the multiples of 720720
        self._runs: dict = {}
        self.sig = None
        self.any_dims = False  # runs with `?` for every symbolic tensor dimension

    def dims_at(self, env):
        """The flat output dims at `env`, or None if the relation fails or the structure changes."""
        env = tuple(env)
        if env not in self._runs:
            try:
                out = self.call.run(env, self.any_dims)
                dims, sig = [], []
                _flatten(out, dims, sig)
                self._runs[env] = dims if sig == self.sig else None
            except (TypeRelError, AttrError, ArithmeticError, TypeError, ValueError, IndexError):
                self._runs[env] = None
        return self._runs[env]

    def fit(self, value) -> tuple | None:
        """The form of `value(env)` (an int, None when unknown), or None."""
        d0 = value(self.base)
        if not isinstance(d0, int):
            return None
        coefs = []
        for j in range(self.n):
            env = list(self.base)
            env[j] += self.delta[j]
            dj = value(env)
            if not isinstance(dj, int):
                return None
            coefs.append(Fraction(dj - d0, self.delta[j]))
        q = lcm(*(c.denominator for c in coefs)) if coefs else 1
        if q > _MAX_DIVISOR or _M % q:
            return None
        p = tuple(int(c * q) for c in coefs)
        k = d0 - sum(c * b for c, b in zip(coefs, self.base))
        if k.denominator != 1:
            return None
        k = int(k)
        if q == 1:
            form = (p, k, 1)
        else:
            rhos = set(range(q))
            for j in range(self.n):
                if not p[j]:
                    continue
                for t in range(1, q):
                    env = list(self.base)
                    env[j] += t
                    dt = value(env)
                    if not isinstance(dt, int):
                        return None
                    rhos = {r for r in rhos if (p[j] * t + r) // q == dt - d0}
            if len(rhos) != 1:
                return None
            form = (p, q * k + rhos.pop(), q)
        if value(self.verify) != _apply(form, self.verify):
            return None
        odd = value(self.odd)  # catches floor(n / 2) * 2, which is 2n at every sentinel
        if isinstance(odd, int) and odd != _apply(form, self.odd):
            return None
        return form

    def small_ok(self) -> bool:
        """Is the small-value run meaningful (every symbolic input dimension at least 2)?"""
        return all(_eval(d.tree, self.small) >= 2 for d in self.call.tensor_dims)


def _deduce_core(call: _Call):
    """Struct info of the call, for known ranks and dtypes. Raises StructInfoError."""
    if not call.atoms.has_products:
        return _deduce_one(call)
    # products of symbols: each as one atom first; a tensor that does not fit so (reshape of
    # (d * d_1 * 2, 16) to (d, -1, 16)) is tried with the products expanded
    try:
        first = _deduce_one(call)
    except StructInfoError:
        first = None
    if first is not None and _complete(first):
        return first
    try:
        second = _deduce_one(_Call(*call.inputs, products=False))
    except StructInfoError:
        if first is None:
            raise
        return first
    return second if first is None else _merge(first, second)


def _complete(s: StructInfo) -> bool:
    if isinstance(s, TupleStructInfo):
        return all(_complete(f) for f in s)
    if isinstance(s, TensorStructInfo):
        return s.shape is not None
    if isinstance(s, ShapeStructInfo):
        return s.values is not None
    return True


def _merge(a: StructInfo, b: StructInfo) -> StructInfo:
    """`a`, with the shapes `b` knows where `a` has none (two deductions of one call)."""
    if isinstance(a, TupleStructInfo) and isinstance(b, TupleStructInfo) and len(a) == len(b):
        return TupleStructInfo([_merge(x, y) for x, y in zip(a, b)])
    if isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo) and a.shape is None \
            and b.shape is not None and a.ndim == b.ndim:
        return b
    if isinstance(a, ShapeStructInfo) and isinstance(b, ShapeStructInfo) and a.values is None \
            and b.values is not None and a.ndim == b.ndim:
        return b
    return a


def _deduce_one(call: _Call):
    op, atoms = call.op, call.atoms
    if not len(atoms):  # static: one run of the relation
        try:
            out = call.run(())
        except (TypeRelError, AttrError) as err:
            raise StructInfoError(str(err)) from None
        dims, sig = [], []
        _flatten(out, dims, sig)
        return _rebuild(sig, dims, call.vdevice)
    if op.sym_rel is not None and None not in atoms.exprs:
        try:
            out = op.sym_rel(call.instantiate_symbolic(), call.attrs)
        except (TypeRelError, AttrError) as err:
            raise StructInfoError(str(err)) from None
        if out is not None:
            dims, sig = [], []
            _flatten(out, dims, sig)
            return _rebuild(sig, dims, call.vdevice)
    fitter = _Fitter(call)
    anon = {j for j, e in enumerate(atoms.exprs) if e is None}
    try:
        out = call.run(fitter.base)
    except (TypeRelError, AttrError):
        try:
            out = call.run(fitter.base, any_dims=True)
        except (TypeRelError, AttrError) as err2:
            raise StructInfoError(_named(str(err2), fitter, atoms)) from None
        # a tensor with a `?` gets ndim only; the other dims come from static dims and shape
        # or prim values (a reshape of an unknown-shape tensor to (d, d_1, 16)): fitted
        fitter.any_dims = True
        dims, sig = [], []
        _flatten(out, dims, sig)
        fitter.sig = sig
        fitter._runs[fitter.base] = dims
        return _rebuild(sig, _fit_dims(fitter, dims, anon, {}, None), call.vdevice)
    dims, sig = [], []
    _flatten(out, dims, sig)
    if op.rank_depends is not None and call.tensor_dims and op.rank_depends(call.attrs):
        return _erase_rank(_rebuild(sig, [None] * len(dims), call.vdevice))
    fitter.sig = sig
    fitter._runs[fitter.base] = dims
    # the forms of the input dimensions, to give an output the input's own expression
    known: dict = {}
    for j, e in enumerate(atoms.exprs):
        if e is not None:
            known[(tuple(int(i == j) for i in range(len(atoms))), 0, 1)] = e
    for a in call.args:
        for d in (a.dims or ()) if isinstance(a, _Tensor) else ():
            if isinstance(d, _Sym) and d.expr is not None and not (_atoms_in(d.tree, set()) & anon):
                form = fitter.fit(lambda env, t=d.tree: _eval(t, env))
                if form is not None:
                    known.setdefault(form, d.expr)
    small = fitter.dims_at(fitter.small) if fitter.small_ok() else None
    return _rebuild(sig, _fit_dims(fitter, dims, anon, known, small), call.vdevice)


def _fit_dims(fitter: _Fitter, dims: list, anon: set, known: dict, small) -> list:
    """Each output dimension as an int or TIR expression of the atoms, None where no form fits."""
    atoms = fitter.call.atoms
    result = []
    for i, d in enumerate(dims):
        if d is ANY:
            result.append(None)
            continue
        form = fitter.fit(lambda env, i=i: (fitter.dims_at(env) or [None] * (i + 1))[i])
        if form is None or any(form[0][j] for j in anon):
            result.append(None)
            continue
        if small is not None and small[i] != _apply(form, fitter.small):
            result.append(None)
            continue
        if not any(form[0]) and form[2] == 1:
            result.append(form[1])
        else:
            result.append(known.get(form) or _build_expr(form, atoms))
    return result


def _named(message: str, fitter: _Fitter, atoms: _Atoms) -> str:
    for j, b in enumerate(fitter.base):
        message = message.replace(str(b), atoms.name(j))
    return message
