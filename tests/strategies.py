"""Hypothesis strategies: random, well-formed Relay modules built directly from `irtool.ir`
nodes (never from text), so the printer and the parser are exercised on IR neither produced.

    from strategies import SAFE, relay_modules

    @given(relay_modules(SAFE))
    def test_something(mod): ...

A generated module has 1-4 global functions that call each other (and themselves). Their
bodies mix, up to a small depth:

- parameters typed with every type form (tensor types with `?`, 0 and > int32 dims, scalars,
  vector dtypes, tuple types incl. `(T,)` and `()`, function types, `_`) or left untyped;
- calls of registered operators (with the operator's arity and attributes drawn from its
  declaration, then normalised as the parser would), of global functions, of variables, of
  local function literals and of other call results;
- attributes of every value kind (int, float incl. NaN/inf/-0.0, str with quotes, escapes and
  unicode, bool, None, nested tuples, `TypedScalar` int64/int16/float64/float16) on function
  literals, global functions and non-operator calls, where the text format keeps them as given;
- scalar constants of every simple dtype (extreme ints, NaN/inf/-0.0/subnormal floats), tensor
  constants of 12 dtypes and small shapes incl. 0-size ones (they go to `#[metadata]` with
  arbitrary bit patterns, NaN payloads included) and data-less `meta[relay.Constant][i]`;
- tuples (0, 1 and more fields) and projections; let chains (incl. recursive let-bound
  functions and `e1; e2` statements, i.e. lets of an anonymous `_`-typed variable); if/else;
  local function literals with attributes, `Primitive=1` ones being closed dataflow bodies as
  FuseOps makes them;
- DAG sharing: a compound node may be used again wherever its variables are in scope (it then
  prints as a `%n = ...;` graph binding);
- free variables (`free_var %x: T;`), typed or `_`.

`Features` can switch off constructs; each names the regression test of a bug it once
exposed. The round-trip properties use `SAFE`, which is now `FULL` (every bug found is
fixed); the pass properties use `SAFE_FOR_PASSES`, which leaves out recursive lets and lets
in primitive functions by design (GNF keeps the former, DCE/GNF skip the latter).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from hypothesis import strategies as st

from irtool.ir import (
    ANY,
    Attrs,
    Call,
    Constant,
    Function,
    FuncType,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypedScalar,
    Var,
    post_order,
)
from irtool.ops.registry import REQUIRED, all_ops


@dataclasses.dataclass(frozen=True)
class Features:
    """Constructs the generator may produce beyond the always-on ones (all on by default),
    each with the regression test of the bug it once exposed (all fixed: SAFE is FULL)."""

    # test_ir.py::test_hash_of_empty_attrs_matches_none -- Attrs({}) equals None but hashes differently
    empty_attrs: bool = True
    # test_ir.py::test_hash_of_nan_typed_scalar_attr -- TypedScalar(nan) hashes by object identity
    nan_typed_attrs: bool = True
    # test_roundtrip.py::test_noncanonical_nan_scalar_roundtrip -- `-nan`/payload NaN scalars print `nanf`
    noncanonical_nan_scalars: bool = True
    # test_roundtrip.py::test_float32_max_scalar_roundtrip -- FLT_MAX prints as `3.4028235e+38f`, rejected
    float32_max_scalars: bool = True
    # test_roundtrip.py::test_zero_dim_metadata_constant_roundtrip -- 0-d uint8 etc. come back as shape (1,)
    zero_dim_metadata: bool = True
    # test_roundtrip.py::test_free_var_first_used_in_nested_block -- `free_var` declared in an inner block
    # is out of scope where the printer uses it next. Off: free variables are used first at the top.
    nested_free_vars: bool = True
    # test_roundtrip.py::test_node_shared_between_if_branch_and_sibling (and ..._let_callee_...) -- a
    # `%1 = g(%0)` line is printed before the if/let/fn block that binds `%0`. Off: a node is shared
    # only within one block, and a call's callee is never an if or a let.
    cross_scope_sharing: bool = True
    # test_roundtrip.py::test_let_valued_let_starting_with_graph_binding -- `let %a = %0 = exp(%x); ...`
    # (the inner let is parenthesised only when its text starts with `let`). Off: no let value is a let.
    let_valued_lets: bool = True
    # test_passes.py::test_graph_normal_form_keeps_recursive_let -- the binding is dropped, `%f` left free
    recursive_lets: bool = True
    # test_passes.py::test_passes_leave_primitive_bodies_alone -- DCE and GNF rewrite lets inside them
    lets_in_primitive: bool = True


FULL = Features()
SAFE = FULL
# The passes are not printed, so only the constructs they get wrong are left out for them.
# Off for the pass properties by design: GNF keeps a recursive let (it is how the function
# names itself), and DCE leaves primitive bodies alone; dedicated tests cover both.
SAFE_FOR_PASSES = dataclasses.replace(FULL, recursive_lets=False, lets_in_primitive=False)

# --------------------------------------------------------------------------- vocabulary

# Names the printer must keep or fix up: `_t`, `0` and `` get a `v` prefix, `x`/`x1`/`x2`
# collide with the printer's unique-name counter, `a/b` uses the `/` the lexer allows.
VAR_NAMES = ("x", "y", "x1", "x2", "data", "weight", "p0", "lv", "fv", "_t", "0", "", "a/b")
GLOBAL_NAMES = ("main", "f", "g1", "helper_2", "fused.add", "sub/fn")
ATTR_KEYS = ("padding", "channels", "data_layout", "axis", "units", "out_dtype", "kernel_size", "strides",
             "a1", "_k")
FUNC_ATTR_KEYS = ("Composite", "global_symbol", "Compiler", "Inline", "hash", "_k")
DTYPES = ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool", "int8x4",
          "float32x4", "uint1", "bfloat16", "int4", "float8", "handle")
SIMPLE_SCALAR_DTYPES = ("bool", "int16", "int32", "int64", "float16", "float32", "float64")
TENSOR_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                 "float16", "float32", "float64")
F32_MAX = float(np.finfo(np.float32).max)
# Characters a string attribute must survive: quotes, escapes, comment openers, a NUL, unicode.
STRING_CHARS = st.one_of(st.sampled_from('"\\\n\t\r\0/*%@#[]{}(),;= a'),
                         st.characters(blacklist_categories=("Cs",)))

# --------------------------------------------------------------------------- helpers
# Building a strategy object costs far more than drawing from it, so the small ones the
# generator draws from thousands of times are made once.


@functools.cache
def _ints(lo: int, hi: int):
    return st.integers(lo, hi)


def _index(draw, seq):
    return seq[draw(_ints(0, len(seq) - 1))]


# --------------------------------------------------------------------------- types


@functools.cache
def dims():
    return st.one_of(st.integers(0, 16), st.sampled_from((1, 3, 224, 2**31, 2**40)), st.just(ANY))


@st.composite
def _tensor_types(draw):
    shape = draw(st.lists(dims(), max_size=4))
    return TensorType(tuple(shape), _index(draw, DTYPES))


@functools.cache
def tensor_types():
    """`Tensor[(d, ...), dtype]` with 0-4 dims (`?`, 0 and > int32 ones included), or a scalar."""
    return _tensor_types()


@st.composite
def _types_impl(draw, depth: int):
    kind = draw(_ints(0, 9 if depth > 0 else 6))
    if kind <= 5:
        return draw(tensor_types())
    if kind == 6:
        return IncompleteType()
    fields = [draw(_types(depth - 1)) for _ in range(draw(_ints(0, 3)))]
    if kind <= 8:
        return TupleType(fields)
    return FuncType(fields, draw(_types(depth - 1)))


@functools.cache
def _types(depth: int):
    return _types_impl(depth)


def types(max_depth: int = 2):
    """Every Relay type form (tensor, scalar, tuple incl. `(T,)` and `()`, function, `_`),
    nested up to `max_depth`."""
    return _types(max_depth)


# --------------------------------------------------------------------------- attributes


def _short_decimal(v: float) -> float:
    return float(f"{v:.4g}")


@functools.cache
def attr_values(features: Features = SAFE):
    """One attribute value: int (int32), float (float32 range), str, bool, None, TypedScalar
    (int64, int16, float64, float16) or a tuple of these, nested."""
    f64 = st.floats(allow_nan=features.nan_typed_attrs)
    # A float16 attribute keeps the double it was written with (as TVM's FloatImm does), so
    # generate values whose shortest text is short: they print and parse back unchanged.
    f16 = st.one_of(st.floats(-65504, 65504).map(_short_decimal), st.sampled_from((math.inf, -math.inf, 65504.0)))
    if features.nan_typed_attrs:
        f16 = st.one_of(f16, st.just(math.nan))
    leaves = st.one_of(
        st.integers(-(2**31), 2**31 - 1),
        st.sampled_from((0, 1, -1, 2**31 - 1, -(2**31))),
        st.floats(-F32_MAX, F32_MAX),
        st.sampled_from((math.nan, math.inf, -math.inf, -0.0, 0.5, 1e-5, 0.1, 5e-324)),
        st.text(STRING_CHARS, max_size=8),
        st.booleans(),
        st.none(),
        st.integers(-(2**63), 2**63 - 1).map(lambda v: TypedScalar(v, "int64")),
        st.sampled_from((-(2**63), 2**63 - 1)).map(lambda v: TypedScalar(v, "int64")),
        st.integers(-(2**15), 2**15 - 1).map(lambda v: TypedScalar(v, "int16")),
        f64.map(lambda v: TypedScalar(v, "float64")),
        f16.map(lambda v: TypedScalar(v, "float16")),
    )
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


@functools.cache
def _attr_dicts(features: Features, keys, max_size: int):
    return st.dictionaries(st.sampled_from(keys), attr_values(features), max_size=max_size)


@st.composite
def _attrs(draw, features: Features, keys, max_size: int):
    items = draw(_attr_dicts(features, keys, max_size))
    if not items:
        return Attrs({}) if features.empty_attrs and draw(st.booleans()) else None
    return Attrs(items)


@functools.cache
def attrs(features: Features = SAFE, keys=ATTR_KEYS, max_size: int = 4):
    """Free-form `Attrs` (random keys and values), or None (or Attrs({}), when allowed)."""
    return _attrs(features, keys, max_size)


# ----------------------------------------------------------------- operator attributes


@functools.cache
def _kind_values(kind: str):
    """Values for an attribute of the registry's kind `kind` (int, float, ints?, ...)."""
    small = st.integers(-4, 8)
    if kind.endswith("?"):
        return st.one_of(st.none(), _kind_values(kind[:-1]))
    if kind == "int":
        return st.one_of(small, st.integers(-(2**31), 2**31 - 1))
    if kind == "float":
        return st.one_of(st.floats(-F32_MAX, F32_MAX), st.sampled_from((math.nan, math.inf, -0.0, 0.25)))
    if kind == "bool":
        return st.booleans()
    if kind == "str":
        return st.text(STRING_CHARS, max_size=8)
    if kind == "dtype":
        return st.sampled_from(("",) + DTYPES)
    if kind == "ints":
        return st.one_of(small, st.lists(small, max_size=4).map(tuple))
    if kind == "floats":
        return st.lists(_kind_values("float"), max_size=4).map(tuple)
    if kind == "int_or_ints":
        return st.one_of(small, st.lists(small, max_size=4).map(tuple))
    if kind == "intss":
        return st.lists(st.lists(small, max_size=3).map(tuple), max_size=3).map(tuple)
    return attr_values(SAFE)


def _registered_ops() -> dict:
    """name -> OpDef of the operators calls are made of."""
    return all_ops()


@functools.cache
def _op_table():
    ops = _registered_ops()
    names = tuple(ops)
    defaultable = []
    for name, opdef in ops.items():
        try:
            opdef.make_attrs(None)
        except Exception:  # a required attribute
            continue
        defaultable.append(name)
    return ops, names, tuple(defaultable)


@st.composite
def _op_call_parts(draw):
    """(Op, arity, attrs) of a registered operator: attributes chosen at random among its
    declared ones and normalised by the registry, exactly as the parser builds them."""
    ops, names, defaultable = _op_table()
    name = _index(draw, names)
    opdef = ops[name]
    if opdef is None:
        return Op.get(name), draw(_ints(0, 3)), None
    given = {}
    for spec in opdef.attrs:
        if spec.default is REQUIRED or draw(_ints(0, 2)) == 0:
            given[spec.name] = draw(_kind_values(spec.kind))
    try:
        call_attrs = opdef.make_attrs(Attrs(given) if given else None)
    except Exception:  # a value the declaration rejects: use the defaults, or another operator
        if name not in defaultable:
            name = _index(draw, defaultable)
            opdef = ops[name]
        call_attrs = opdef.make_attrs(None)
    return Op.get(name), len(opdef.args), call_attrs


# --------------------------------------------------------------------------- constants


def _nan_bits(draw, dtype: str) -> np.ndarray:
    """A NaN of `dtype` with a random sign and payload (never the canonical quiet NaN)."""
    width, mant = {"float16": (16, 10), "float32": (32, 23), "float64": (64, 52)}[dtype]
    exp_all_ones = ((1 << (width - 1 - mant)) - 1) << mant
    value = (draw(_ints(0, 1)) << (width - 1)) | exp_all_ones | draw(_ints(1, (1 << mant) - 1))
    canonical = np.array(np.nan, dtype=dtype).view(f"uint{width}").item()
    if value == canonical:
        value |= 1 << (width - 1)
    return np.array(value, dtype=f"uint{width}").view(dtype).reshape(())


@functools.cache
def _scalar_values(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        return st.one_of(st.integers(int(info.min), int(info.max)),
                         st.sampled_from((int(info.min), int(info.max), 0, -1)))
    finfo = np.finfo(dtype)
    special = (math.nan, math.inf, -math.inf, -0.0, float(finfo.max), -float(finfo.max),
               float(finfo.smallest_subnormal), 0.5, 0.1)
    return st.one_of(st.floats(width=finfo.bits), st.sampled_from(special))


@st.composite
def _scalar_constants(draw, features: Features):
    dtype = _index(draw, SIMPLE_SCALAR_DTYPES)
    value = draw(_scalar_values(dtype))
    if dtype == "bool" or dtype.startswith("int"):
        return Constant(np.array(value, dtype=dtype))
    data = np.array(value, dtype=dtype)
    if math.isnan(value):
        if features.noncanonical_nan_scalars and draw(_ints(0, 1)):
            data = _nan_bits(draw, dtype)
        else:
            data = np.array(np.nan, dtype=dtype)  # the NaN the literal `nanf` reads as
    if dtype == "float32" and abs(value) == F32_MAX and not features.float32_max_scalars:
        data = np.array(np.nextafter(np.float32(value), np.float32(0)), dtype=dtype)
    return Constant(data)


@functools.cache
def scalar_constants(features: Features = SAFE):
    """A 0-d constant of a simple dtype (bool, int16/32/64, float16/32/64): printed as a literal."""
    return _scalar_constants(features)


@functools.cache
def _shapes(max_dim: int):
    return st.lists(_ints(0, max_dim), max_size=3)


@functools.cache
def _bools(n: int):
    return st.lists(st.booleans(), min_size=n, max_size=n)


@functools.cache
def _bytes(n: int):
    return st.binary(min_size=n, max_size=n)


@st.composite
def tensor_arrays(draw, dtypes=TENSOR_DTYPES, max_dim: int = 3, zero_dim: bool = False):
    """A NumPy array of a random dtype and small shape (0-size ones too) whose bytes are
    arbitrary (every NaN payload and sign). 0-d only for dtypes that are not simple scalars
    (those print as literals), and only when `zero_dim`."""
    dtype = np.dtype(_index(draw, dtypes))
    shape = tuple(draw(_shapes(max_dim)))
    if shape == () and (dtype.name in SIMPLE_SCALAR_DTYPES or not zero_dim):
        shape = (1,)
    count = math.prod(shape)
    if dtype == np.bool_:
        return np.array(draw(_bools(count)), dtype=bool).reshape(shape)
    raw = draw(_bytes(count * dtype.itemsize))
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


@functools.cache
def tensor_constants(features: Features = SAFE):
    """A constant that prints as `meta[relay.Constant][i]`."""
    return tensor_arrays(zero_dim=features.zero_dim_metadata).map(Constant)


# --------------------------------------------------------------------------- expressions


@dataclasses.dataclass(frozen=True)
class _Scope:
    env: tuple            # the variables in scope
    pools: tuple          # lists of shareable nodes, innermost last
    primitive: bool       # inside a Primitive=1 body: closed dataflow only

    def bind(self, new_vars=()) -> _Scope:
        """The scope under a binding: nodes made there may use `new_vars`, so they get a pool
        level of their own, dropped when the binding's scope ends."""
        return _Scope(self.env + tuple(new_vars), self.pools + ([],), self.primitive)

    def block(self, isolated: bool, new_vars=(), primitive: bool | None = None) -> _Scope:
        """A nested block (if-branch, let chain, function body): with `isolated` it shares no
        node with its surroundings."""
        pools = ([],) if isolated else self.pools + ([],)
        return _Scope(self.env + tuple(new_vars), pools, self.primitive if primitive is None else primitive)


class _Gen:
    def __init__(self, draw, features: Features, global_vars: list, max_depth: int) -> None:
        self.draw = draw
        self.f = features
        self.global_vars = global_vars
        self.max_depth = max_depth

    # ------------------------------------------------------------------ helpers

    def chance(self, p: float) -> bool:
        return self.draw(_ints(0, 999)) < p * 1000

    def pick(self, seq):
        return _index(self.draw, seq)

    def count(self, lo: int, hi: int) -> int:
        return self.draw(_ints(lo, hi))

    def var(self, typed: float = 0.7) -> Var:
        return Var(self.pick(VAR_NAMES), self.draw(types()) if self.chance(typed) else None)

    def promote(self, inner: _Scope, outer: _Scope) -> None:
        """With cross-scope sharing, nodes made in a nested block that use no variable bound
        there may be shared after it too (they print inside the block, where first used)."""
        if not self.f.cross_scope_sharing or inner.pools[-1] is outer.pools[-1]:
            return
        env = set(outer.env)
        for e in inner.pools[-1]:
            nodes = post_order(e)
            bound = {n.var for n in nodes if type(n) is Let}
            bound.update(p for n in nodes if type(n) is Function for p in n.params)
            if all(n in env or n in bound for n in nodes if type(n) is Var):
                outer.pools[-1].append(e)

    def remember(self, s: _Scope, e):
        """Offer `e` for sharing within `s`. Lets are never shared: that would bind their
        variable twice (TVM's printer, like ours, prints such a let out again where reused)."""
        if type(e) is not Let and self.chance(0.5):
            s.pools[-1].append(e)
        return e

    # ------------------------------------------------------------------ expressions

    def expr(self, s: _Scope, depth: int, allow_let: bool = True):
        if depth <= 0:
            return self.leaf(s)
        kinds = ["leaf", "call", "call", "call", "tuple", "proj", "share"]
        if not s.primitive:
            kinds += ["if", "fn", "fn_call"]
            if allow_let:
                kinds += ["let", "let", "stmt"]
        elif self.f.lets_in_primitive and allow_let:
            kinds += ["let"]
        kind = self.pick(kinds)
        isolated = not self.f.cross_scope_sharing
        if kind == "leaf":
            return self.leaf(s)
        if kind == "share":
            pool = [e for level in s.pools for e in level]
            return self.pick(pool) if pool else self.leaf(s)
        if kind == "call":
            return self.call(s, depth)
        if kind == "tuple":
            return self.remember(s, Tuple([self.expr(s, depth - 1) for _ in range(self.count(0, 3))]))
        if kind == "proj":
            base = self.expr(s, depth - 1)
            # Projecting a constant, global or operator is ill-typed (and `1.0` or `@f.0` would
            # read back as a number and a global name), so those get wrapped in a tuple.
            if type(base) in (Constant, GlobalVar, Op) or (type(base) is not Tuple and self.chance(0.5)):
                base = self.remember(s, Tuple([base, self.expr(s, depth - 1)]))
            return self.remember(s, TupleGetItem(base, self.count(0, 3)))
        if kind == "let":
            inner = s.block(isolated)
            chain = self.let_chain(inner, depth, self.count(1, 3))
            self.promote(inner, s)
            return chain
        if kind == "stmt":  # `e1; e2`, as the parser builds it
            inner = s.block(isolated)
            first = self.expr(inner, depth - 1, allow_let=self.f.let_valued_lets)
            stmt = Let(Var("", IncompleteType()), first, self.expr(inner.bind(), depth - 1))
            self.promote(inner, s)
            return stmt
        if kind == "if":
            cond = self.expr(s, depth - 1)
            branches = []
            for _ in range(2):
                inner = s.block(isolated)
                branches.append(self.expr(inner, depth - 1))
                self.promote(inner, s)
            return self.remember(s, If(cond, *branches))
        if kind == "fn":
            return self.remember(s, self.function(s, depth))
        if kind == "fn_call":
            fn = self.function(s, depth)
            return self.remember(s, Call(fn, [self.expr(s, depth - 1) for _ in fn.params]))
        raise AssertionError(kind)

    def leaf(self, s: _Scope):
        choices = ["scalar", "scalar", "tensor"]
        if s.env:
            choices += ["var", "var", "var"]
        if not s.primitive:
            choices += ["global", "op", "placeholder"]
        kind = self.pick(choices)
        if kind == "var":
            return self.pick(s.env)
        if kind == "scalar":
            return self.draw(scalar_constants(self.f))
        if kind == "tensor":
            return self.remember(s, self.draw(tensor_constants(self.f)))
        if kind == "placeholder":  # `meta[relay.Constant][i]` whose data the file did not carry
            return self.remember(s, Constant(None))
        if kind == "global":
            return self.pick(self.global_vars)
        return self.draw(_op_call_parts())[0]

    def call(self, s: _Scope, depth: int):
        kinds = ["op", "op", "op"]
        if not s.primitive:
            kinds += ["global", "global", "expr"]
            if s.env:
                kinds.append("var")
        kind = self.pick(kinds)
        if kind == "op":
            op, arity, op_attrs = self.draw(_op_call_parts())
            return self.remember(s, Call(op, [self.expr(s, depth - 1) for _ in range(arity)], op_attrs))
        if kind == "global":
            callee = self.pick(self.global_vars)
        elif kind == "var":
            callee = self.pick(s.env)
        else:
            callee = self.expr(s, depth - 1)
            if type(callee) in (Constant, Op) or (type(callee) in (Let, If) and not self.f.cross_scope_sharing):
                callee = self.function(s, depth)  # calling a constant is ill-typed
        # Attributes of a call of a function are kept as written, whatever their values.
        call_attrs = self.draw(attrs(self.f)) if self.chance(0.3) else None
        return self.remember(s, Call(callee, [self.expr(s, depth - 1) for _ in range(self.count(0, 3))], call_attrs))

    def let_chain(self, s: _Scope, depth: int, n: int):
        var = self.var()
        if self.f.recursive_lets and self.chance(0.1):
            p = Var("n")
            value = Function([p], Call(var, [p]))  # let %f = fn (%n) { %f(%n) }
        else:
            value = self.expr(s, depth - 1, allow_let=self.f.let_valued_lets)
        inner = s.bind([var])
        body = self.let_chain(inner, depth, n - 1) if n > 1 else self.expr(inner, depth - 1)
        return Let(var, value, body)

    def function_attrs(self, primitive: bool):
        fn_attrs = self.draw(attrs(self.f, FUNC_ATTR_KEYS, 2))
        if primitive:
            fn_attrs = Attrs({"Primitive": 1, **dict(fn_attrs.items() if fn_attrs else ())})
        return fn_attrs

    def function(self, s: _Scope, depth: int) -> Function:
        """A local function literal: Primitive=1 and closed, or a closure over `s`."""
        primitive = self.chance(0.3)
        params = [self.var(typed=0.9 if primitive else 0.6) for _ in range(self.count(0, 3))]
        fn_attrs = self.function_attrs(primitive)
        if primitive:
            inner = _Scope(tuple(params), ([],), True)
        else:
            inner = s.block(not self.f.cross_scope_sharing, params, primitive=False)
        ret = self.draw(types()) if self.chance(0.4) else None
        fn = Function(params, self.expr(inner, depth - 1), ret, fn_attrs)
        if not primitive:
            self.promote(inner, s)
        return fn

    def global_function(self) -> Function:
        primitive = self.chance(0.15)
        params = [self.var() for _ in range(self.count(0, 3))]
        fn_attrs = self.function_attrs(primitive)
        free = []
        if not primitive and self.chance(0.3):
            free = [Var(self.pick(VAR_NAMES), self.draw(_free_var_types())) for _ in range(self.count(1, 2))]
        s = _Scope(tuple(params) + tuple(free), ([],), primitive)
        body = self.expr(s, self.max_depth)
        if free and not self.f.nested_free_vars:
            # Use the free variables first, at the top of the body, so that the printer declares
            # them there: `free_var %x: _; let %fvs = (%x,); ...`.
            body = Let(Var("fvs"), Tuple(free), body)
        ret = self.draw(types()) if self.chance(0.4) else None
        return Function(params, body, ret, fn_attrs)


@functools.cache
def _free_var_types():
    return st.one_of(st.just(IncompleteType()), types())


@st.composite
def relay_modules(draw, features: Features = SAFE, max_functions: int = 4, max_depth: int = 4):
    """A random well-formed IRModule of 1..max_functions global functions."""
    names = draw(st.lists(st.sampled_from(GLOBAL_NAMES), min_size=1, max_size=max_functions, unique=True))
    global_vars = {name: GlobalVar(name) for name in names}
    gen = _Gen(draw, features, list(global_vars.values()), draw(_ints(1, max_depth)))
    functions = {name: gen.global_function() for name in names}
    return IRModule(functions, global_vars)


__all__ = ["FULL", "SAFE", "SAFE_FOR_PASSES", "Features", "attr_values", "attrs", "relay_modules",
           "scalar_constants", "tensor_arrays", "tensor_constants", "types"]
