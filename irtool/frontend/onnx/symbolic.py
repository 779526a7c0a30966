"""Symbolic dimensions for the ONNX importer: which `?` dims are the same size.

A model with symbolic inputs (batch N, sequence S) computes reshape targets from
`Shape` of some tensor, e.g. torch's `q.view(S, N * heads, head_dim)` with S and N
read off the *input*, not off `q`. Relay's types say only `?`, so the importer could not
tell that `q`'s first axis is that S and built `dyn.reshape`, whose result is `?` in
every dim (and has no Relax counterpart). Here each `?` dim of a converted tensor gets a
size expression:

    Mono      coef * s1 * s2 * ... over symbols (a graph input's `?` axis, or a dim no
              rule explains): products and exact quotients stay Monos, so N * heads
              and (S * N * 32) / (S * 8) are known sizes
    UNKNOWN   a size no rule follows (a sum, an inexact quotient)

`sym_dims(ctx, expr)` derives them from the op that made the tensor (elementwise and
broadcasting ops, reshape, transpose, expand_dims, squeeze, take, strided_slice,
concatenate, the matmuls, reductions, ops that keep their input's shape), and
`newshape_for` turns a reshape target of ints and Monos into a static Relay `newshape`
with its special values (0 copy, -1 infer, -3 merge, -4 split), checked by recomputing
the result symbolically. A rule never claims two dims equal unless they are.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from ...ir.expr import Call, Op, Tuple
from ...ir.types import ANY, TensorType
from ...ops.transform import resolve_newshape

_ids = itertools.count()


class _Unknown:
    """A size no rule follows; arithmetic on it stays unknown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class Mono:
    """`coef * product(syms)`: a dim size known up to the symbols it multiplies."""

    __slots__ = ("coef", "syms")

    def __init__(self, coef: int, syms: tuple) -> None:
        self.coef, self.syms = coef, tuple(sorted(syms))

    @classmethod
    def fresh(cls) -> Mono:
        return cls(1, (next(_ids),))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mono) and self.coef == other.coef and self.syms == other.syms

    def __hash__(self) -> int:
        return hash((self.coef, self.syms))

    def __repr__(self) -> str:
        return "*".join([str(self.coef)] * (self.coef != 1) + [f"s{s}" for s in self.syms])


def _mono(x):
    if isinstance(x, Mono):
        return x
    if isinstance(x, (int, np.integer)):
        return Mono(int(x), ())
    return None


def _simplest(m: Mono):
    return m.coef if not m.syms else m


def mul(a, b):
    x, y = _mono(a), _mono(b)
    if x is None or y is None:
        return UNKNOWN
    return _simplest(Mono(x.coef * y.coef, x.syms + y.syms))


def div(a, b):
    """a / b when it is exact (b's symbols among a's, the coefficient divisible)."""
    x, y = _mono(a), _mono(b)
    if x is None or y is None or y.coef == 0:
        return UNKNOWN
    rest = list(x.syms)
    for s in y.syms:
        if s not in rest:
            return UNKNOWN
        rest.remove(s)
    if x.coef % y.coef:
        return UNKNOWN
    return _simplest(Mono(x.coef // y.coef, tuple(rest)))


def _ints_only(fn):
    def apply(a, b):
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return fn(int(a), int(b))
        return UNKNOWN
    return apply


def _maximum(a, b):
    """The broadcast size of a and b (a size-1 dim stretches)."""
    if a == b:
        return a
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return max(int(a), int(b))
    if b == 1:
        return a
    return b if a == 1 else UNKNOWN


def _trunc_div(a: int, b: int):
    """Relay's integer divide: truncated towards 0."""
    if not b:
        return UNKNOWN
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# arithmetic on shape values, elementwise over ints, Monos and UNKNOWN
ARITHMETIC = {
    "multiply": mul,
    "divide": lambda a, b: div(a, b) if isinstance(a, Mono) else _ints_only(_trunc_div)(a, b),
    "floor_divide": lambda a, b: div(a, b) if isinstance(a, Mono) else _ints_only(
        lambda x, y: x // y if y else UNKNOWN)(a, b),
    "add": _ints_only(operator.add),
    "subtract": _ints_only(operator.sub),
    "maximum": _maximum,
    "minimum": lambda a, b: a if a == b else _ints_only(min)(a, b),
}


def arithmetic(name: str, a, b) -> np.ndarray:
    return np.frompyfunc(ARITHMETIC[name], 2, 1)(np.asarray(a, dtype=object), np.asarray(b, dtype=object))


# ----------------------------------------------------------------------------- dims of tensors

# ops whose output has their first argument's shape
_SAME_SHAPE = frozenset({
    "nn.softmax", "nn.log_softmax", "nn.fast_softmax", "nn.layer_norm", "nn.group_norm", "nn.instance_norm",
    "nn.l2_normalize", "nn.bias_add", "nn.relu", "nn.leaky_relu", "nn.prelu", "reverse", "sort", "argsort",
    "cumsum", "cumprod", "clip", "cast", "copy", "erf", "fast_erf", "fast_tanh", "fast_exp"})
# broadcasting-pattern ops whose shape is not their arguments' broadcast
_NOT_BROADCAST = frozenset({"broadcast_to", "broadcast_to_like", "tile", "repeat", "full", "zeros", "ones",
                            "expand_dims", "collapse_sum_like", "collapse_sum_to", "reshape_like", "arange"})
_SHAPE_ARGUMENT = {"dyn.reshape": 1, "dyn.broadcast_to": 1, "dyn.full": 1, "dyn.zeros": 0, "dyn.ones": 0}
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin", "variance", "std",
                         "logsumexp"})
# ops that keep the batch (first) axis of their data
_BATCHED = frozenset({"nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
                      "nn.conv3d_transpose", "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d",
                      "nn.avg_pool2d", "nn.avg_pool3d", "nn.global_avg_pool2d", "nn.global_max_pool2d",
                      "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool2d", "nn.upsampling", "image.resize2d",
                      "nn.batch_flatten", "nn.lrn"})


def sym_dims(ctx, expr) -> tuple:
    """The sizes of `expr`'s axes: ints where static, Monos for `?` (fresh symbols where
    no rule applies, so they equal nothing else). The tensors it depends on get theirs
    first, in an explicit post-order: a long chain does not recurse."""
    cache = ctx.sym_cache
    hit = cache.get(id(expr))
    if hit is not None:
        return hit[1]
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in cache:
            continue
        if ready:
            cache[id(node)] = (node, _sizes(ctx, node))  # the node is kept alive so its id stays its own
            continue
        stack.append((node, True))
        stack.extend((dep, False) for dep in _dependencies(ctx, node) if id(dep) not in cache)
    return cache[id(expr)][1]


def _dependencies(ctx, node) -> list:
    """The tensors `_derive` reads the sizes of: a call's tensor arguments (and a tuple
    argument's fields), when the call has `?` dims to explain."""
    t = ctx.type_of(node)
    if not (isinstance(t, TensorType) and ANY in t.shape and isinstance(node, Call) and isinstance(node.op, Op)):
        return []
    deps = []
    for a in node.args:
        for x in (a.fields if isinstance(a, Tuple) else (a,)):
            if isinstance(ctx.type_of(x), TensorType):
                deps.append(x)
    return deps


def _sizes(ctx, expr) -> tuple:
    t = ctx.type_of(expr)
    shape = t.shape if isinstance(t, TensorType) else ()
    derived = None
    if ANY in shape and isinstance(expr, Call) and isinstance(expr.op, Op):
        try:
            derived = _derive(ctx, expr, len(shape))
        except (ValueError, TypeError, IndexError, KeyError):
            derived = None
        if derived is not None and len(derived) != len(shape):
            derived = None  # e.g. cumsum without an axis flattens
    dims = []
    for i, d in enumerate(shape):
        if d is not ANY:
            dims.append(int(d))
        elif derived is not None and isinstance(derived[i], Mono):
            dims.append(derived[i])
        elif derived is not None and isinstance(derived[i], (int, np.integer)) and derived[i] > 1:
            dims.append(int(derived[i]))
        else:
            dims.append(Mono.fresh())
    return tuple(dims)


def _derive(ctx, call: Call, rank: int):
    name, attrs = call.op.name, call.attrs
    args = call.args

    def dims(i):
        return sym_dims(ctx, args[i])

    def attr(key, default=None):
        return attrs.get(key, default) if attrs is not None else default

    if name in _SAME_SHAPE:
        return dims(0)
    if name in _SHAPE_ARGUMENT:  # the dyn.* ops: the output shape is a run-time argument
        value = ctx.partial(args[_SHAPE_ARGUMENT[name]])
        return None if value is None or value.ndim != 1 or len(value) != rank else tuple(value)
    if name == "reshape":
        newshape = tuple(attr("newshape"))
        return None if attr("allowzero") and 0 in newshape else symbolic_reshape(dims(0), newshape)
    if name == "reshape_like":
        from ...ops.transform import reshape_like_shape

        return reshape_like_shape(dims(0), dims(1), attrs)
    if name == "transpose":
        d = dims(0)
        axes = attr("axes")
        return tuple(d[a] for a in (axes if axes is not None else reversed(range(len(d)))))
    if name == "expand_dims":
        d = list(dims(0))
        axis = attr("axis")
        axis = axis + len(d) + 1 if axis < 0 else axis
        return tuple(d[:axis] + [1] * attr("num_newaxis", 1) + d[axis:])
    if name == "squeeze":
        d = dims(0)
        axes = attr("axis")
        if axes is None:
            return None
        drop = {a % len(d) for a in axes}
        return tuple(x for i, x in enumerate(d) if i not in drop)
    if name == "nn.dense":
        return dims(0)[:-1] + dims(1)[:1]
    if name == "nn.matmul":
        a, b = dims(0), dims(1)
        return a[:-2] + (a[-1] if attr("transpose_a") else a[-2], b[-2] if attr("transpose_b") else b[-1])
    if name == "nn.batch_matmul":
        a, b = dims(0), dims(1)
        return (_maximum(a[0], b[0]), a[2] if attr("transpose_a") else a[1], b[1] if attr("transpose_b") else b[2])
    if name == "take":
        axis = attr("axis")
        if axis is None:
            return dims(1)
        d = dims(0)
        axis %= len(d)
        return d[:axis] + dims(1) + d[axis + 1:]
    if name == "strided_slice":
        return _sliced(dims(0), attrs)
    if name == "concatenate" and isinstance(args[0], Tuple):
        parts = [sym_dims(ctx, f) for f in args[0].fields]
        axis = attr("axis", 0) % len(parts[0])
        return tuple(UNKNOWN if i == axis else d for i, d in enumerate(parts[0]))
    if name in _REDUCTIONS:
        return _reduced(dims(0), attrs)
    if name in _BATCHED:
        return dims(0)[:1] + (UNKNOWN,) * (rank - 1)
    from ...ops.registry import OpPattern, lookup

    opdef = lookup(name)
    if opdef is not None and opdef.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST) \
            and name not in _NOT_BROADCAST and not name.startswith("dyn."):
        return _broadcast([sym_dims(ctx, a) for a in args if isinstance(ctx.type_of(a), TensorType)], rank)
    return None


def _broadcast(shapes: list, rank: int):
    out = []
    for k in range(rank):
        seen = []
        for s in shapes:
            j = len(s) - rank + k
            if j >= 0 and s[j] != 1:
                seen.append(s[j])
        out.append(1 if not seen else seen[0] if all(x == seen[0] for x in seen) else UNKNOWN)
    return tuple(out)


def _sliced(d: tuple, attrs):
    begin, end, strides, axes = (attrs.get(k) for k in ("begin", "end", "strides", "axes"))
    if begin is None or attrs.get("slice_mode", "end") != "end":
        return None
    axes = list(axes) if axes is not None else list(range(len(begin)))
    out = list(d)
    for k, axis in enumerate(axes):
        b = begin[k]
        e = end[k] if end is not None and k < len(end) else None
        s = strides[k] if strides and k < len(strides) else 1
        whole = b == 0 and s == 1 and (e is None or e >= 2 ** 31 - 1 or (isinstance(d[axis], int) and e >= d[axis]))
        if not whole:
            out[axis % len(d)] = UNKNOWN
    return tuple(out)


def _reduced(d: tuple, attrs):
    axes = attrs.get("axis")
    if attrs.get("exclude"):
        return None
    axes = set(range(len(d))) if axes is None else {a % len(d) for a in axes}
    keep = attrs.get("keepdims")
    return tuple(1 if i in axes else x for i, x in enumerate(d) if keep or i not in axes)


def _product(values):
    out = 1
    for v in values:
        out = mul(out, v)
    return out


def symbolic_reshape(src: tuple, newshape: tuple) -> tuple:
    """Relay's reshape (special values 0, -1, -2, -3, -4; allowzero off) on symbolic dims."""
    return resolve_newshape(src, newshape, False, mul, lambda dims, known: div(_product(dims), _product(known)))


def newshape_for(src: tuple, target: list) -> tuple | None:
    """A static Relay newshape reshaping a tensor of sizes `src` to `target` (ints,
    Monos, and UNKNOWN for the one size left to infer), or None if there is none here."""
    out, s, i, inferred = [], 0, 0, False
    n, m = len(target), len(src)
    while i < n:
        t = target[i]
        if isinstance(t, (int, np.integer)) and t > 0:
            if s + 1 < m and t != src[s] and mul(src[s], src[s + 1]) == t:
                out.append(-3)
                s += 2
            else:
                out.append(int(t))
                s += 1
        elif isinstance(t, Mono) and s < m and t == src[s]:
            out.append(0)
            s += 1
        elif isinstance(t, Mono) and s + 1 < m and t == mul(src[s], src[s + 1]):
            out.append(-3)
            s += 2
        elif (isinstance(t, Mono) and s < m and i + 1 < n and isinstance(target[i + 1], (int, np.integer))
              and target[i + 1] > 0 and mul(t, target[i + 1]) == src[s]):
            out += [-4, -1, int(target[i + 1])]
            s += 1
            i += 1
        elif not inferred:
            # the size left to infer: -1 consumes one input dim, -3 two when the next
            # target size is the input's dim after those two
            inferred = True
            nxt = target[i + 1] if i + 1 < n else None
            if nxt is not None and s + 2 < m and nxt == src[s + 2] and nxt != src[s + 1]:
                out.append(-3)
                s += 2
            else:
                out.append(-1)
                s += 1
        else:
            return None
        i += 1
    result = symbolic_reshape(src, tuple(out))
    if len(result) != n:
        return None
    if -1 not in out and _product(result) != _product(src):
        return None  # every size is pinned, so they must account for every element
    for got, want in zip(result, target):
        if want is not UNKNOWN and got is not UNKNOWN and got != want:
            return None
    return tuple(out)

