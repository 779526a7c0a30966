"""simplify-expr: TVM's SimplifyExpr, a fixed point of small dataflow-pattern rewrites.

TVM (relay/transforms/simplify_expr.cc) writes each rewrite as a dataflow pattern and a
callback, and runs them with its pattern rewriter; this module ports both. The
matcher and rewriter are `_pattern_rewrite.py`.

The rewrites of TVM v0.19's SimplifyExpr, in its order (✓ implemented):

    ✓ ConcretizeZerosLike / ConcretizeOnesLike   zeros_like(x) -> zeros(shape, dtype) for a static shape
    - ConcretizeFullLike, ReshapeLike, CollapseSumLike, BroadcastToLike, CastLike
                                            not implemented: full_like, reshape_like,
                                            collapse_sum_like/to, broadcast_to_like and
                                            cast_like are not in the operator registry
    ✓ SimplifyAdd                 x + x -> x * 2
    ✓ SimplifyRSqrt               a / sqrt(x) -> a * rsqrt(x)   (then 1 * r -> r below)
    ✓ EliminateIdentity           x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x, where 0 / 1
                                  is a scalar constant (all dimensions 1), zeros()/ones() or
                                  zeros_like/ones_like, and only when x has the result's type
    ✓ SimplifyReshape             reshape(reshape(x)) -> one reshape to the static result shape
                                  (contrib_reverse_reshape is not in the registry)
    ✓ SimplifyTranspose           transpose(transpose(x)) -> one transpose of the composed axes
                                  (the layout_transform cases: no layout_transform op here)
    ✓ SimplifyNoOpTranspose       transpose(x) with the identity order -> x
    ✓ SimplifySameCast            cast(x) to x's own dtype -> x
    ✓ SimplifyConsecutiveCast     cast(cast(x, t1), t2) -> cast(x, t2) if t1 widens x's dtype
    ✓ FullElementwise             op(x, full/ones/zeros(...)) -> op(x, scalar) for a broadcast
                                  op, when x already has the result's type
    ✓ SwitchAddMultiply           (x + c1) * c2 -> x * c2 + (c1 * c2), constants folded
    ✓ SimplifyAdjacentMultiplyOrAdd   (x * c1) * c2 -> x * (c1 * c2), same for +
    - SimplifyDQArgMax/ArgMin/ArgSort   not implemented: no qnn.dequantize (nor argsort)
    ✓ SimplifyClipAndConsecutiveCast    clip -> cast -> ... -> cast: drop casts whose dtype
                                  holds the clip range
    ✓ SimplifyClip                clip(x) whose range covers x's dtype -> x
    ✓ SimplifyBinomial            a*x*x + b*x*y + c*y*y -> a * (x + p*y) * (x + q*y)

Deviations from TVM, all where TVM's rewrite would change values or types:
  * every replacement is type-checked; one whose type differs from the node it replaces
    is declined (TVM would build it and fail later, e.g. FullElementwise on a full whose
    fill value has another dtype, or a bias_add/prelu broadcast argument);
  * SimplifyConsecutiveCast: TVM counts int -> uint of at least the width as widening,
    which changes negative values (cast(cast(-1i8, uint16), int32) is 65535); here
    signed -> unsigned never widens;
  * SimplifyClipAndConsecutiveCast: when the chain rounds a float clip to an integer
    and the rewritten chain would not, the chain is kept (TVM drops the rounding);
  * SimplifyBinomial: declined when a coefficient is not a one-element constant (TVM
    reads its first element), when its dtype is other than int32/float32/float64 (TVM
    then takes every coefficient as 1), or for integer dtypes whose roots p, q are not
    integers (TVM truncates them); with a negative discriminant the rebuilt node is
    kept, not the original (TVM returns the original node, discarding rewrites below);
  * TVM gives up (fatal error) after 100 rewrite sweeps; here the rounds continue to the
    fixed point (up to 1000 rounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from irtool.ir.expr import Call, Constant, Expr
from irtool.ir.types import type_equal
from irtool.ops.common import np
from irtool.ops.registry import OpPattern, lookup, make_call
from irtool.transform import FunctionPass, register

from ._pattern_rewrite import (
    AltPattern,
    CallPattern,
    ConstantPattern,
    OpKindPattern,
    OpNamePattern,
    Rewrite,
    Wildcard,
    rewrite_patterns,
    static_shape,
    tensor_type,
)
from ._pattern_utils import const_scalar

# --------------------------------------------------------------------------- the rewrites


def _is_op(name: str) -> OpNamePattern:
    return OpNamePattern(name)


def _dtype(e: Expr) -> str:
    return e.checked_type.dtype


class ConcretizeLike(Rewrite):
    """zeros_like(x) / ones_like(x) -> zeros / ones of x's static shape and dtype."""

    def __init__(self, like_op: str, op: str) -> None:
        self.like = Wildcard()
        self.pattern = _is_op(like_op)(self.like)
        self.op = op

    def callback(self, pre, post, m):
        t = tensor_type(pre)
        shape = static_shape(t)
        if shape is None:
            return post
        return make_call(self.op, shape=shape, dtype=t.dtype)


class SimplifyAdd(Rewrite):
    """x + x -> x * 2."""

    def __init__(self) -> None:
        self.x, self.y = Wildcard(), Wildcard()
        self.pattern = _is_op("add")(self.x, self.y)

    def hopeless(self, call):
        return call.args[0] is not call.args[1]

    def callback(self, pre, post, m):
        x = m[self.x]
        if x is not m[self.y]:
            return post
        return make_call("multiply", x, const_scalar(_dtype(pre), 2))


class SimplifyRSqrt(Rewrite):
    """a / sqrt(x) -> a * rsqrt(x)."""

    def __init__(self) -> None:
        self.x, self.num = Wildcard(), Wildcard()
        self.pattern = _is_op("divide")(self.num, _is_op("sqrt")(self.x))

    def callback(self, pre, post, m):
        return make_call("multiply", m[self.num], make_call("rsqrt", m[self.x]))


def _scalar_value(c: Constant):
    """TVM's IsScalar + TryToScalar: the value of a constant whose dimensions are all 1."""
    data = c.data
    if data is None or any(d != 1 for d in data.shape) or data.dtype.kind not in "iufb":
        return None
    return data.reshape(-1)[0].item()


class EliminateIdentity(Rewrite):
    """x + 0, x - 0, x * 1, x / 1 (and 0 + x, 1 * x) -> x when x has the result's type."""

    def __init__(self) -> None:
        self.x, self.const = Wildcard(), ConstantPattern()
        zeros = _is_op("zeros")() | _is_op("zeros_like")(Wildcard()) | self.const
        ones = _is_op("ones")() | _is_op("ones_like")(Wildcard()) | self.const
        self.pattern = (_is_op("add")(self.x, zeros) | _is_op("multiply")(self.x, ones)
                        | _is_op("subtract")(self.x, zeros) | _is_op("divide")(self.x, ones))

    def callback(self, pre, post, m):
        x = m[self.x]
        x_type = pre.args[1].checked_type if post.args[1] is x else pre.args[0].checked_type
        if self.const in m:
            value = _scalar_value(m[self.const])
            identity = 0 if pre.op.name in ("add", "subtract") else 1
            if value is None or value != identity:
                return post
        return x if type_equal(x_type, pre.checked_type) else post


class SimplifyReshape(Rewrite):
    """reshape(reshape(x)) -> reshape(x) to the (static) result shape."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("reshape")(_is_op("reshape")(self.x))

    def callback(self, pre, post, m):
        shape = static_shape(tensor_type(pre))
        if shape is None:
            return post
        return make_call("reshape", m[self.x], newshape=shape)


def _axis_order(call: Call, ndim: int) -> list[int]:
    axes = call.attrs["axes"] if call.attrs is not None else None
    if not axes:  # no axes: reverse
        return list(range(ndim - 1, -1, -1))
    return [a + ndim if a < 0 else a for a in axes]


class SimplifyTranspose(Rewrite):
    """transpose(transpose(x, p), q) -> transpose(x, p composed with q)."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("transpose")(_is_op("transpose")(self.x))

    def callback(self, pre, post, m):
        ndim = len(pre.checked_type.shape)
        axes = list(range(ndim))
        for order in (_axis_order(post.args[0], ndim), _axis_order(post, ndim)):  # inner first
            axes = [axes[order[i]] for i in range(ndim)]
        return make_call("transpose", m[self.x], axes=tuple(axes))


class SimplifyNoOpTranspose(Rewrite):
    """transpose(x) that keeps every axis in place -> x."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("transpose")(self.x)

    def callback(self, pre, post, m):
        ndim = len(pre.checked_type.shape)
        return m[self.x] if _axis_order(post, ndim) == list(range(ndim)) else post


class SimplifySameCast(Rewrite):
    """cast(x, dtype) where x already has that dtype -> x."""

    def __init__(self) -> None:
        self.data = Wildcard()
        self.pattern = _is_op("cast")(self.data)

    def callback(self, pre, post, m):
        return m[self.data] if _dtype(pre) == _dtype(pre.args[0]) else post


_CODE = {"int": 0, "uint": 1, "float": 2, "bfloat": 4}


def _code_bits(dtype: str) -> tuple[int, int]:
    """TVM's DataType (code, bits): int 0, uint 1 (bool is uint1), float 2, bfloat 4."""
    if dtype == "bool":
        return 1, 1
    base = dtype.split("x")[0]
    kind = base.rstrip("0123456789")
    return _CODE.get(kind, 3), int(base[len(kind):] or 0)


def is_widen_cast(origin: str, cast: str) -> bool:
    """Does casting `origin` to `cast` keep every value? TVM's IsWidenCast, except that
    signed -> unsigned is never widening here (TVM says it is when the width allows,
    though it changes negative values)."""
    (oc, ob), (cc, cb) = _code_bits(origin), _code_bits(cast)
    if oc == cc and ob <= cb:
        return True
    if oc == 4 or cc == 4:  # a bfloat cast cannot be dropped
        return False
    if oc == 0 and cc == 1:
        return False
    return oc < cc and ob <= cb


class SimplifyConsecutiveCast(Rewrite):
    """cast(cast(x, t1), t2) -> cast(x, t2) when t1 loses nothing of x."""

    def __init__(self) -> None:
        self.data = Wildcard()
        self.cast1 = _is_op("cast")(self.data)
        self.pattern = _is_op("cast")(self.cast1)

    def callback(self, pre, post, m):
        if not is_widen_cast(_dtype(m[self.data]), _dtype(m[self.cast1])):
            return post
        return make_call("cast", m[self.data], dtype=_dtype(pre))


class FullElementwise(Rewrite):
    """op(x, full(v)) / op(x, ones()) / op(x, zeros()) (either side) -> op(x, scalar), for
    a broadcast op whose result has x's type: the filled tensor adds nothing."""

    def __init__(self) -> None:
        self.x, self.data, self.value = Wildcard(), Wildcard(), ConstantPattern()
        self.full = _is_op("full")(self.value)
        self.ones = _is_op("ones")() | _is_op("ones_like")(self.data)
        self.zeros = _is_op("zeros")() | _is_op("zeros_like")(self.data)
        op = OpKindPattern(OpPattern.BROADCAST)
        filled = self.full | self.ones | self.zeros
        self.pattern = op(filled, self.x) | op(self.x, filled)

    def callback(self, pre, post, m):
        x = m[self.x]
        is_left = post.args[1] is x
        x_type = pre.args[1].checked_type if is_left else pre.args[0].checked_type
        if not type_equal(x_type, pre.checked_type):
            return post
        if self.full in m:
            value = m[self.value]
        elif self.ones in m:
            value = const_scalar(_dtype(pre), 1)
        else:
            value = const_scalar(_dtype(pre), 0)
        args = (value, x) if is_left else (x, value)
        return Call(post.op, args, post.attrs, post.span)


def fold(op: str, *args: Constant) -> Constant:
    """The constant `op(args)` evaluates to (TVM's FoldConstantExpr on a call of constants)."""
    opdef = lookup(op)
    return Constant(np.asarray(opdef.ref(*(a.data for a in args))))


class SwitchAddMultiply(Rewrite):
    """(x + c1) * c2 -> x * c2 + (c1 * c2): the mul-add order FoldScaleAxis handles."""

    def __init__(self) -> None:
        self.x, self.c1, self.c2 = Wildcard(), ConstantPattern(), ConstantPattern()
        self.pattern = (self.x + self.c1) * self.c2

    def callback(self, pre, post, m):
        x, c1, c2 = m[self.x], m[self.c1], m[self.c2]
        if type(x) is Constant:
            return post
        return make_call("add", make_call("multiply", x, c2), fold("multiply", c1, c2))


class SimplifyAdjacentMultiplyOrAdd(Rewrite):
    """(x * c1) * c2 -> x * (c1 * c2) and (x + c1) + c2 -> x + (c1 + c2)."""

    def __init__(self) -> None:
        self.x, self.c1, self.c2 = Wildcard(), ConstantPattern(), ConstantPattern()
        self.pattern = (self.x * self.c1 * self.c2) | (self.x + self.c1 + self.c2)

    def callback(self, pre, post, m):
        x, c1, c2 = m[self.x], m[self.c1], m[self.c2]
        if type(x) is Constant:
            return post
        return make_call(pre.op.name, x, fold(pre.op.name, c1, c2))


def _dtype_range(dtype: str) -> tuple[float, float]:
    code, bits = _code_bits(dtype)
    if code == 0:
        return -(2.0 ** (bits - 1)), 2.0 ** (bits - 1) - 1
    if code == 1:
        return 0.0, 2.0 ** bits - 1
    if code in (2, 4):
        fmax = {16: 65504.0, 32: float(np.finfo(np.float32).max), 64: float(np.finfo(np.float64).max)}
        top = 3.3895313892515355e38 if code == 4 else fmax.get(bits, math.inf)
        return -top, top
    return 0.0, 0.0


def _range_covers_dtype(dtype: str, lo: float, hi: float) -> bool:
    """[lo, hi] contains every value of `dtype` (TVM's CheckDataTypeMaxMinValue mode 0)."""
    dlo, dhi = _dtype_range(dtype)
    return hi >= dhi and lo <= dlo


def _dtype_covers_range(dtype: str, lo: float, hi: float) -> bool:
    """`dtype` holds every value of [lo, hi] (mode 1)."""
    dlo, dhi = _dtype_range(dtype)
    return hi <= dhi and lo >= dlo


def _is_int(dtype: str) -> bool:
    return _code_bits(dtype)[0] in (0, 1)


class SimplifyClipAndConsecutiveCast(Rewrite):
    """clip(x, lo, hi) -> cast -> ... -> cast: a cast to a dtype that holds [lo, hi]
    cannot change a clipped value, so it goes; one cast to the final dtype is added if
    the remaining chain ends elsewhere."""

    def __init__(self) -> None:
        self.clip = _is_op("clip")(Wildcard())
        cast = CallPattern(_is_op("cast"), ())
        cast.args = (AltPattern(cast, self.clip),)  # cast(cast(...cast(clip(x))))
        self.pattern = cast

    def callback(self, pre, post, m):
        clip = m[self.clip]
        lo, hi = clip.attrs["a_min"], clip.attrs["a_max"]
        chain, node = [], post  # outermost first
        while node is not clip:
            chain.append(node)
            node = node.args[0]
        remaining = [c for c in chain if not _dtype_covers_range(_dtype(c), lo, hi)]
        if len(remaining) == len(chain):
            return post
        last = remaining[0] if remaining else clip
        dtypes = [_dtype(c) for c in reversed(remaining)]
        if _dtype(last) != _dtype(post):
            dtypes.append(_dtype(post))
        if dtypes == [_dtype(c) for c in reversed(chain)]:
            return post  # the same chain again (TVM sees it is structurally equal)
        out = clip
        for dtype in dtypes:
            out = make_call("cast", out, dtype=dtype)
        rounds = not _is_int(_dtype(clip)) and any(_is_int(_dtype(c)) for c in chain)
        if rounds and not any(_is_int(_dtype(c)) for c in remaining) and not _is_int(_dtype(post)):
            return post  # the chain rounds the clipped floats to integers; keep that
        return out


class SimplifyClip(Rewrite):
    """clip(x, lo, hi) where [lo, hi] covers x's whole dtype -> x."""

    def __init__(self) -> None:
        self.x = Wildcard()
        self.pattern = _is_op("clip")(self.x)

    def callback(self, pre, post, m):
        return m[self.x] if _range_covers_dtype(_dtype(pre), post.attrs["a_min"], post.attrs["a_max"]) else post


class SimplifyBinomial(Rewrite):
    """a*x*x + b*x*y + c*y*y -> a * (x + p*y) * (x + q*y), p and q the roots of
    a*t*t - b*t + c (real roots only)."""

    def __init__(self) -> None:
        x, y = self.x, self.y = Wildcard(), Wildcard()
        a, b, c = self.a, self.b, self.c = ConstantPattern(), ConstantPattern(), ConstantPattern()
        add, mul = _is_op("add"), _is_op("multiply")
        x_sq = mul(a, mul(x, x)) | mul(x, mul(a, x)) | mul(x, x)
        xy = mul(b, mul(x, y)) | mul(x, mul(b, y)) | mul(y, mul(b, x)) | mul(x, y)
        y_sq = mul(c, mul(y, y)) | mul(y, mul(c, y)) | mul(y, y)
        self.pattern = add(add(xy, x_sq), y_sq) | add(add(xy, y_sq), x_sq) | add(add(x_sq, y_sq), xy)

    def callback(self, pre, post, m):
        dtype = _dtype(pre)
        x, y = m[self.x], m[self.y]
        vals = []
        for p in (self.a, self.b, self.c):
            if p not in m:
                vals.append(1.0)
                continue
            data = m[p].data
            if data is None or data.size != 1 or dtype not in ("int32", "float32", "float64"):
                return post
            vals.append(float(data.reshape(-1)[0]))
        a, b, c = vals
        if c == 1 and a > 1:
            x, y = y, x
            a, c = c, float(np.float32(a))  # TVM keeps the swapped value in a float
        disc = b * b - 4 * a * c
        if disc < 0:
            return post
        same = disc < 10e-5
        root = math.sqrt(disc)
        p_val, q_val = (b + root) / (2 * a), (b - root) / (2 * a)
        if _is_int(dtype) and not (p_val.is_integer() and q_val.is_integer()):
            return post
        first = const_scalar(dtype, p_val)
        second = first if same else const_scalar(dtype, q_val)
        fm = make_call("add", x, make_call("multiply", y, first))
        sm = fm if same else make_call("add", x, make_call("multiply", y, second))
        return make_call("multiply", const_scalar(dtype, a), make_call("multiply", fm, sm))


def simplify_expr_rewrites() -> list[Rewrite]:
    """The rewrites of TVM v0.19's SimplifyExpr that apply to this operator set, in its order."""
    return [
        ConcretizeLike("zeros_like", "zeros"),
        ConcretizeLike("ones_like", "ones"),
        SimplifyAdd(),
        SimplifyRSqrt(),
        EliminateIdentity(),
        SimplifyReshape(),
        SimplifyTranspose(),
        SimplifyNoOpTranspose(),
        SimplifySameCast(),
        SimplifyConsecutiveCast(),
        FullElementwise(),
        SwitchAddMultiply(),
        SimplifyAdjacentMultiplyOrAdd(),
        SimplifyClipAndConsecutiveCast(),
        SimplifyClip(),
        SimplifyBinomial(),
    ]


@register
@dataclass(frozen=True)
class SimplifyExpr(FunctionPass):
    name = "simplify-expr"
    tvm_name = "SimplifyExpr"
    opt_level = 0
    required = ("infer-type",)
    summary = "Simplify reshape/transpose/cast chains, identities and constant arithmetic"

    def transform_function(self, fn, mod, ctx):
        return rewrite_patterns(simplify_expr_rewrites(), fn, mod)
