"""The declaration of a Relax operator (the table is irtool/ops/relax.py).

Each `RelaxOp` says how a Relax call is written and what it means:

    name        `relax.nn.conv2d` (printed `R.nn.conv2d`)
    args        argument names and kinds, in order:
                  tensor    a tensor                        `x`
                  tensors   a tuple of tensors              `(x, y)` of R.concat
                  shape     a shape value                   `R.shape([2, -1])` of R.reshape
                  prim      a scalar (PrimValue)            `T.float32(0.0)` of R.clip, `n` of R.arange
                  prims     a tuple of scalars              `(1,)` of R.strided_slice
                a trailing "?" marks an optional argument (strides of R.strided_slice).
    attrs       TVM 0.27's attributes in TVM's PRINT order, with TVM's Python-API defaults,
                as `registry.AttrSpec`s (the same kinds and normalisers as the Relay registry).
                A dtype attribute "" is TVM's void dtype, printed `None` (`out_dtype=None`).
                `derived` attributes default to another one (conv2d's out_layout is its
                data_layout), as TVM fills them in when the call is made.
    relay       the Relay counterpart, whose type relation and NumPy reference it reuses, and
    convert     how a call's arguments and attributes become that Relay operator's: the
                same function serves type inference (arguments are Relay `TensorType`s, shape
                and prim arguments plain numbers) and evaluation (NumPy arrays), through a small
                context object `ctx` (`ctx.shape`, `ctx.dtype`, `ctx.scalar`, `ctx.reshape`).
    rel / ref   a relation / reference of its own where the Relay one does not fit (relax.matmul's
                batch broadcasting, layer_norm over several axes, split's uneven sections ...);
                they take the converted arguments and the Relax attributes.
    post        a fix-up of the result (argmax gives int64 in Relax, int32 in Relay)
    float_only  Relax rejects non-float inputs (exp, sqrt, softmax ...), Relay does not.
    rank_depends  attrs -> True when the result's rank depends on which dimensions are 1
                (squeeze without an axis): a symbolic input dimension then leaves the rank unknown.
    ref_options keyword arguments for the Relay reference where TVM 0.27's Relax semantics differ
                from Relay's v0.19 (resize2d's integer division only where it floors).
    positional_attrs  the order in which TVM's Python API (the R.* function TVM's parser calls)
                takes attributes positionally after the arguments, where it is not the print
                order (R.nn.pad, the pools); every operator takes them so (`R.astype(x, "float16")`,
                `R.sum(x, [1], True)`, `R.nn.conv2d(x, w, 2, 1)`).
    python_call argument values, attributes -> the same: what TVM's Python API does with a call's
                arguments before it builds the call, beyond filling in defaults (R.arange(n)
                counts from 0 and its dtype follows the bounds; R.image.resize2d's size 8 is (8, 8)).
    python_op   argument values -> the operator TVM's Python API builds for them (R.nn.attention
                with a bias builds relax.nn.attention_bias).
    settle_args arguments, result struct info -> arguments (None: unchanged): how TVM's C++
                constructor rewrites the arguments it stores (R.reshape's -1 becomes its size).
    dtype_from_prim  the index of the prim argument whose dtype is the result's (R.one_hot's on_value): the
                relation sees the prim as a float32 scalar and the dtype is set afterwards; the reference
                gets that argument (and the other prims) as 0-d arrays of their dtypes.
    deduce      struct info straight from the arguments' struct info, for a result whose length is
                a tensor argument's size (R.tensor_to_shape: R.Shape(ndim=k) of a (k,) tensor)
    sym_rel     a relation on symbolic values, for results no sentinel fit can express: it
                takes dims and prim values as ints or TIR expressions (None: unknown) and returns
                the result type with TIR dims, or None to leave the call to the generic way.
                strided_slice has one: its clamping is TVM's min/max/if_then_else expression.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..ir.expr import Attrs
from . import registry
from .common import np
from .registry import AttrSpec, TypeRelError
from .relax_bridge import TYPES, VALUES, ShapeResult

ARG_KINDS = ("tensor", "tensors", "shape", "prim", "prims")


@dataclass(frozen=True)
class RelaxOp:
    name: str
    args: tuple[tuple[str, str], ...]
    attrs: tuple[AttrSpec, ...] = ()
    relay: str | None = None
    convert: Callable | None = None
    rel: Callable | None = None
    ref: Callable | None = None
    post: Callable | None = None
    float_only: bool = False
    derived: tuple[tuple[str, str], ...] = ()
    rank_depends: Callable | None = None
    sym_rel: Callable | None = None
    positional_attrs: tuple[str, ...] | None = None
    python_call: Callable | None = None
    python_op: Callable | None = None
    settle_args: Callable | None = None
    ref_options: tuple[tuple[str, Any], ...] = ()
    dtype_from_prim: int | None = None
    deduce: Callable | None = None
    _specs: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for _, kind in self.args:
            if kind.rstrip("?") not in ARG_KINDS:
                raise ValueError(f"{self.name}: unknown argument kind {kind!r}")
        if self.relay is None and (self.rel is None or self.ref is None):
            raise ValueError(f"{self.name}: needs a Relay operator or its own rel and ref")
        self._specs.update((a.name, a) for a in self.attrs)

    @property
    def relay_def(self) -> registry.OpDef | None:
        return registry.get(self.relay) if self.relay else None

    @cached_property  # called for every call the parsers build
    def arg_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.args)

    @cached_property  # called for every call the parsers build
    def arg_kinds(self) -> tuple[str, ...]:
        return tuple(k.rstrip("?") for _, k in self.args)

    @cached_property  # called for every call the parsers build
    def min_args(self) -> int:
        return sum(1 for _, k in self.args if not k.endswith("?"))

    @cached_property  # called for every call the parsers build
    def positional_order(self) -> tuple[str, ...]:
        """The attributes in the order TVM's Python API takes them positionally."""
        return self.positional_attrs if self.positional_attrs is not None else tuple(a.name for a in self.attrs)

    def attr_spec(self, name: str) -> AttrSpec | None:
        return self._specs.get(name)

    # -- running the relation / the reference

    def _to_relay(self, args: list, attrs: dict, ctx):
        if self.convert is not None:
            return self.convert(args, attrs, ctx)
        relay_def = self.relay_def
        known = {a.name for a in relay_def.attrs} if relay_def else set()
        return list(args), {k: v for k, v in attrs.items() if k in known} if relay_def else dict(attrs)

    def _check_float(self, args: list, ctx) -> None:
        if not self.float_only:
            return
        for i, a in enumerate(args):
            if self.arg_kinds[i] != "tensor":
                continue
            dtype = ctx.dtype(a)
            if dtype and not dtype.startswith(("float", "bfloat")):
                raise TypeRelError(f"the data type must be floating-point, got {dtype}")

    def infer(self, args: list, attrs: dict):
        """The result type for argument types: TensorType / TupleType / ShapeResult. Tensor
        arguments are TensorTypes, shape arguments tuples of ints, prims numbers. Raises
        TypeRelError (or AttrError for attributes the Relay operator rejects)."""
        self._check_float(args, TYPES)
        rargs, rattrs = self._to_relay(args, attrs, TYPES)
        if self.rel is not None:  # an own relation reads the Relax attributes
            out = self.rel(rargs, attrs)
        else:
            relay_def = self.relay_def
            ra = relay_def.make_attrs(Attrs(rattrs) if rattrs else None)
            if relay_def.needs_values:
                out = relay_def.type_rel(rargs, ra, [getattr(a, "value", None) for a in rargs])
            else:
                out = relay_def.type_rel(rargs, ra)
        return self.post(out, attrs, TYPES) if self.post is not None else out

    def run(self, args: list, attrs: dict):
        """The reference: arrays (tuples of arrays, shape tuples, numbers) in, array out."""
        self._check_float(args, VALUES)
        rargs, rattrs = self._to_relay(args, attrs, VALUES)
        if self.ref is not None:
            out = self.ref(*rargs, **attrs)
        else:
            relay_def = self.relay_def
            ra = relay_def.make_attrs(Attrs(rattrs) if rattrs else None)
            out = relay_def.ref(*rargs, **(dict(ra.items()) if ra else {}), **dict(self.ref_options))
        if isinstance(out, tuple):
            out = tuple(np.asarray(o) for o in out)
        elif not isinstance(out, ShapeResult):
            out = np.asarray(out)
        out = self.post(out, attrs, VALUES) if self.post is not None else out
        return out.values if isinstance(out, ShapeResult) else out
