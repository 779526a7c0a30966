"""TVM 0.27's fused multi-head attention operators (src/relax/op/nn/attention.cc,
python/tvm/relax/op/nn/nn.py), tensors in BSNH layout:

    R.nn.attention(query, key, value, scale, causal_mask, window_size)
    R.nn.attention_bias(query, key, value, bias, scale, causal_mask, window_size)
    R.nn.attention_var_len(queries, keys, values, seqstart_q, seqstart_k, max_seqlen_q,
                           max_seqlen_k, scale, causal_mask, window_size)

query (B, S, H, D), key (B, Skv, Hk, D), value (B, Skv, Hk, Dv), bias (B|1, H|1, S|1, Skv).
Attributes, all optional (printed `None`): `scale` (a float32 FloatImm, `T.float32(0.5)`;
default 1 / sqrt(D)), `causal_mask` ("TopLeft": keys j <= i are seen; "BottomRight":
j <= i + |S - Skv|, TVM's docstring and legalization), `window_size` (a sliding window, which
TVM runs only through flash attention, with BottomRight: here the keys
j > i + offset - window_size, offset the mask's diagonal, 0 without a mask).

TVM's Python API builds `relax.nn.attention_bias` when a bias is given, to either name, and
`relax.nn.attention` without one (`R.nn.attention(q, k, v, b)` prints
`R.nn.attention_bias(q, k, v, b, ...)`). R.nn.attention_var_len takes
(queries, keys, values, seqstart_q, max_seqlen_q, seqstart_k=seqstart_q,
max_seqlen_k=max_seqlen_q, ...) but stores and prints seqstart_k before max_seqlen_q: its
printout read back swaps the two, in TVM as here.

Struct info (InferTypeAttention, shared by the three): query, key and value of rank 4 (an
unknown rank is an error, as in TVM; a rank-4 tensor of unknown shape crashes TVM, here it is
an error too); batch sizes equal, the query's heads a multiple of the key's and the value's,
the key's and value's lengths equal, the query's and key's head dims equal, each only where
TVM's analyzer proves the contrary (`n` and `m` may be equal; `n` and `n + 1` are not); a bias
of rank 4 whose batch, heads and length equal the query's or are 1, and whose last dim is Skv.
The result is (B, S, H, Dv) in the query's dtype (no dtype is checked), the inputs' own
expressions. For attention_var_len the same checks on its first three arguments.

The reference is the op's meaning, computed in float64: softmax(q k^T * scale + bias) v per
head, the masked scores left out of the softmax, keys and values of a group of H / Hk query
heads shared (grouped-query attention). TVM's legalization (codegen/topi/attention.py) agrees
with it where Hk == H; there is no legalization of attention_var_len.
"""

from __future__ import annotations

from ..ir import tir
from ..ir.types import ANY, TensorType
from .common import np
from .registry import TypeRelError

CAUSAL_MASKS = ("TopLeft", "BottomRight")


# ----------------------------------------------------------------------------- the analyzer's proofs


def _affine(e) -> dict | None:
    """{variable or None (the constant): coefficient} of an affine size expression, else None."""
    if isinstance(e, int):
        return {None: e}
    if isinstance(e, tir.IntImm):
        return {None: e.value}
    if isinstance(e, tir.Var):
        return {e: 1}
    if isinstance(e, tir.BinOp) and e.op in ("add", "sub", "mul"):
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        if e.op == "mul":
            if set(a) - {None} and set(b) - {None}:
                return None
            scale, form = (a.get(None, 0), b) if not set(a) - {None} else (b.get(None, 0), a)
            return {k: c * scale for k, c in form.items()}
        sign = 1 if e.op == "add" else -1
        out = dict(a)
        for k, c in b.items():
            out[k] = out.get(k, 0) + sign * c
        return out
    return None


def _provably_different(a, b) -> bool:
    """TVM's `analyzer->CanProve(a != b)` on two sizes (ints, ANY or TIR expressions): they
    differ by a nonzero constant."""
    if a is ANY or b is ANY:
        return False
    fa, fb = _affine(a), _affine(b)
    if fa is None or fb is None:
        return False
    diff = dict(fa)
    for k, c in fb.items():
        diff[k] = diff.get(k, 0) - c
    return all(c == 0 for k, c in diff.items() if k is not None) and diff.get(None, 0) != 0


def _provably_not_multiple(a, b) -> bool:
    """CanProve(a % b != 0): b a positive constant that divides every coefficient of a but not
    its constant term."""
    if a is ANY or b is ANY:
        return False
    fa, fb = _affine(a), _affine(b)
    if fa is None or fb is None or set(fb) - {None} or fb.get(None, 0) <= 0:
        return False
    c = fb[None]
    return all(v % c == 0 for k, v in fa.items() if k is not None) and fa.get(None, 0) % c != 0


def _is_one(d) -> bool:
    return d == 1 if isinstance(d, int) else isinstance(d, tir.IntImm) and d.value == 1


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}


def _show(d) -> str:
    """A size for a message: `3`, `n`, `n * 3 + 1`."""
    if isinstance(d, int):
        return str(d)
    if isinstance(d, tir.IntImm):
        return str(d.value)
    if isinstance(d, tir.Var):
        return d.name
    if isinstance(d, tir.BinOp) and d.op in _SYMBOLS:
        return f"{_show(d.a)} {_SYMBOLS[d.op]} {_show(d.b)}"
    return "?"


# ----------------------------------------------------------------------------- struct info


def attention_shape(shapes: list) -> tuple:
    """The result shape (B, S, H, Dv) for the shapes of query, key, value (and bias), each a
    tuple of ints, ANY or TIR expressions, or None for an unknown rank; TVM's errors otherwise."""
    for name, shape in zip(("query", "key", "value"), shapes):
        if shape is None or len(shape) != 4:
            raise TypeRelError(f"the {name} should have 4 dimensions, namely [batch size, sequence length, "
                               f"number of heads, dimension of heads], got "
                               f"{'an unknown rank' if shape is None else f'rank {len(shape)}'}")
    q, k, v = shapes[:3]

    def equal(a, b, m1, m2, dim):
        if _provably_different(a, b):
            raise TypeRelError(f"the {m1} {dim} and the {m2} {dim} should be the same, got {_show(a)} and {_show(b)}")

    def multiple(a, b, m1, m2):
        if _provably_not_multiple(a, b):
            raise TypeRelError(f"the {m1} number of heads should be a multiple of the {m2} number of heads, "
                               f"got {_show(a)} and {_show(b)}")

    equal(q[0], k[0], "query", "key", "batch size")
    equal(q[0], v[0], "query", "value", "batch size")
    multiple(q[2], k[2], "query", "key")
    multiple(q[2], v[2], "query", "value")
    equal(k[1], v[1], "key", "value", "sequence length")
    equal(q[3], k[3], "query", "key", "dimension of heads")
    if len(shapes) == 4:
        bias = shapes[3]
        if bias is None or len(bias) != 4:
            raise TypeRelError(f"the bias should have 4 dimensions, got "
                               f"{'an unknown rank' if bias is None else f'rank {len(bias)}'}")
        # the bias is (B, H, S, Skv) where the query is (B, S, H, D)
        for i, j, dim in ((0, 0, "batch size"), (2, 1, "number of heads"), (1, 2, "sequence length")):
            if _provably_different(q[i], bias[j]) and not _is_one(bias[j]):
                raise TypeRelError(f"the query {dim} and the bias {dim} should be the same or broadcastable, "
                                   f"got {_show(q[i])} and {_show(bias[j])}")
        equal(k[1], bias[3], "key", "bias", "sequence length")
    return (q[0], q[1], q[2], v[3])


def _checked(values: list, is_tensor) -> list:
    """The arguments whose shapes the struct info reads: query, key, value (and the bias); for
    attention_var_len the first three. Every argument must be a tensor (GetInputTensorType)."""
    for i, v in enumerate(values):
        if not is_tensor(v):
            raise TypeRelError(f"argument {i} must be a tensor")
    return values[:3] if len(values) == 7 else values


def attention_rel(args, attrs):
    """The Relay-level relation (TensorTypes of ints and ANY)."""
    tensors = _checked(args, lambda t: isinstance(t, TensorType))
    return TensorType(attention_shape([t.shape for t in tensors]), tensors[0].dtype)


def attention_deduce(args_sinfo: list, attrs: dict):
    """Struct info straight from the arguments' (symbolic sizes kept as the inputs' expressions)."""
    from ..ir.relax import TensorStructInfo, Var

    shapes = []
    tensors = _checked(args_sinfo, lambda s: isinstance(s, TensorStructInfo))
    for i, s in enumerate(tensors):
        shape = s.shape.struct_info.values if isinstance(s.shape, Var) else s.shape
        if s.ndim != -1 and shape is None:
            raise TypeRelError(f"argument {i} needs a known shape (TVM 0.27 reads its dims)")
        shapes.append(shape)
    q = tensors[0]
    return TensorStructInfo(attention_shape(shapes), q.dtype, vdevice=q.vdevice)


# ----------------------------------------------------------------------------- TVM's Python API


def attention_call(values: list, kw: dict):
    """R.nn.attention / attention_bias(query, key, value, bias=None, ...): the bias, given or
    not, positionally or by name, becomes the fourth argument (None: none)."""
    bias = kw.pop("bias", None) if len(values) == 3 else values[3]
    return values[:3] + ([bias] if bias is not None else []), kw


def attention_op(values: list) -> str:
    """The operator TVM's Python API builds: attention_bias with a bias, attention without."""
    return "relax.nn.attention_bias" if len(values) == 4 else "relax.nn.attention"


def attention_var_len_call(values: list, kw: dict):
    """(queries, keys, values, seqstart_q, max_seqlen_q, seqstart_k=None, max_seqlen_k=None)
    in the order TVM stores them (seqstart_k before max_seqlen_q), the defaults filled in."""
    written = ("queries", "keys", "values", "seqstart_q", "max_seqlen_q", "seqstart_k", "max_seqlen_k")
    named = dict(zip(written, values))
    for name in written[len(values):]:
        if name in kw:
            named[name] = kw.pop(name)
    if "seqstart_q" not in named or "max_seqlen_q" not in named:
        raise ValueError("needs arguments `seqstart_q` and `max_seqlen_q`")
    if named.get("seqstart_k") is None:
        named["seqstart_k"] = named["seqstart_q"]
    if named.get("max_seqlen_k") is None:
        named["max_seqlen_k"] = named["max_seqlen_q"]
    order = ("queries", "keys", "values", "seqstart_q", "seqstart_k", "max_seqlen_q", "max_seqlen_k")
    return [named[n] for n in order], kw


def scale_attr(value):
    """`scale`: TVM keeps a Python float as a float32 FloatImm of the double (T.float32(0.3)
    prints 0.29999999999999999)."""
    from ..ir.expr import TypedScalar

    return TypedScalar(float(value), "float32")


# ----------------------------------------------------------------------------- the reference


def _mask(s: int, s_kv: int, causal_mask, window_size) -> np.ndarray:
    """The keys each query sees: below the causal diagonal, within the window."""
    if causal_mask not in (None, *CAUSAL_MASKS):
        raise ValueError(f"causal_mask must be None, \"TopLeft\" or \"BottomRight\", got {causal_mask!r}")
    offset = abs(s - s_kv) if causal_mask == "BottomRight" else 0
    rows, cols = np.arange(s)[:, None], np.arange(s_kv)[None, :]
    seen = cols <= rows + offset if causal_mask is not None else np.ones((s, s_kv), bool)
    if window_size is not None:
        seen &= cols > rows + offset - int(window_size)
    return seen


def _scores(query, key, scale):
    q = np.asarray(query, np.float64).transpose(0, 2, 1, 3)
    k = np.asarray(key, np.float64).transpose(0, 2, 1, 3)
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)  # a group of query heads shares a key head
    factor = float(scale.value if hasattr(scale, "value") else scale) if scale is not None else \
        1.0 / np.sqrt(q.shape[-1])
    return q @ k.transpose(0, 1, 3, 2) * factor


def _weighted(scores, value, seen, dtype):
    scores = np.where(seen, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.where(seen, np.exp(scores - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    probs = e / np.where(total == 0, 1, total)
    v = np.asarray(value, np.float64).transpose(0, 2, 1, 3)
    v = np.repeat(v, probs.shape[1] // v.shape[1], axis=1)
    return (probs @ v).transpose(0, 2, 1, 3).astype(dtype)


def attention(query, key, value, bias=None, scale=None, causal_mask=None, window_size=None):
    scores = _scores(query, key, scale)
    if bias is not None:
        scores = scores + np.asarray(bias, np.float64)
    seen = _mask(scores.shape[-2], scores.shape[-1], causal_mask, window_size)
    return _weighted(scores, value, seen, np.asarray(query).dtype)


def attention_var_len(queries, keys, values, seqstart_q, seqstart_k, max_seqlen_q, max_seqlen_k,
                      scale=None, causal_mask=None, window_size=None):
    """Attention within each sequence of the concatenated batch: sequence i is rows
    seqstart_q[i]:seqstart_q[i + 1] of the queries and seqstart_k[i]:seqstart_k[i + 1] of the
    keys and values (the maximum lengths are hints); rows of no sequence, or of one without
    keys, are zero."""
    out = np.zeros(queries.shape[:3] + values.shape[3:], np.asarray(queries).dtype)
    starts_q, starts_k = np.asarray(seqstart_q).tolist(), np.asarray(seqstart_k).tolist()
    for (q0, q1), (k0, k1) in zip(zip(starts_q, starts_q[1:]), zip(starts_k, starts_k[1:])):
        if q1 <= q0 or k1 <= k0:  # an empty sequence (or no keys: no weights, zero rows)
            continue
        out[:, q0:q1] = attention(queries[:, q0:q1], keys[:, k0:k1], values[:, k0:k1], None, scale, causal_mask,
                                  window_size)
    return out
