"""onnxruntime's transformer contrib ops (domain `com.microsoft`) that TVM v0.19 converts:
FastGelu, BiasGelu, SkipLayerNormalization, EmbedLayerNormalization, Attention.

- FastGelu(x, bias?) = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))), y = x + bias;
- BiasGelu(x, bias) = 0.5 y (1 + erf(y / sqrt 2)), y = x + bias;
- SkipLayerNormalization(x, skip, gamma, beta?, bias?): layer normalisation over the last
  axis of x + skip (+ bias). Its optional outputs are the mean, the inverse standard
  deviation (both keeping the last axis as 1) and the sum x + skip + bias; TVM v0.19
  returns the constant 0 for all three, here they are computed;
- EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
  segment_embedding?, gamma, beta?, mask?, position_ids?): the word, position (0..seq-1
  unless given) and segment embeddings summed and layer-normalised; the second output is
  the int32 number of mask ones per sequence (0s without a mask), the third the embedding
  sum (TVM v0.19 has no third output);
- Attention(input, weights, bias?, mask_index?, past?, attention_bias?): multi-head
  self-attention of input weights + bias (`self_attention`, shared with qlinear.py's
  QAttention), as onnxruntime's CPU kernel computes it.

A `com.microsoft` node is accepted when its op has a converter registered for that domain
(`@converter(..., domain="com.microsoft")`; CONVERTERS keys it `com.microsoft.OpType`).
"""

from __future__ import annotations

import math

import numpy as np

from . import converter

_MS = "com.microsoft"


def _scalar(ctx, value, like):
    return ctx.const(value, ctx.type_of(like).dtype)


def _with_bias(ctx, x, bias):
    if bias is None:
        return x
    if len(ctx.shape_of(bias)) != 1:
        raise ctx.error(f"the bias must be 1-D, got shape {list(ctx.shape_of(bias))}")
    return ctx.call("add", x, bias)


@converter("FastGelu", 1, domain=_MS, inputs=("X",))
def _fast_gelu(ctx, inputs, attrs):
    y = _with_bias(ctx, inputs[0], inputs[1] if len(inputs) > 1 else None)
    cube = ctx.call("multiply", ctx.call("multiply", y, y), y)
    inner = ctx.call("add", ctx.call("multiply", y, _scalar(ctx, math.sqrt(2 / math.pi), y)),
                     ctx.call("multiply", cube, _scalar(ctx, 0.044715 * math.sqrt(2 / math.pi), y)))
    half = ctx.call("multiply", y, _scalar(ctx, 0.5, y))
    return ctx.call("multiply", half, ctx.call("add", ctx.call("tanh", inner), _scalar(ctx, 1.0, y)))


@converter("BiasGelu", 1, domain=_MS, inputs=("A", "B"))
def _bias_gelu(ctx, inputs, attrs):
    y = _with_bias(ctx, inputs[0], inputs[1])
    shape = ctx.call("erf", ctx.call("multiply", y, _scalar(ctx, 1 / math.sqrt(2), y)))
    half = ctx.call("multiply", y, _scalar(ctx, 0.5, y))
    return ctx.call("multiply", half, ctx.call("add", shape, _scalar(ctx, 1.0, y)))


def _layer_norm_last(ctx, x, gamma, beta, eps: float):
    """(y, mean, inv_std) of a layer normalisation over the last axis."""
    axis = (len(ctx.shape_of(x)) - 1,)
    mean = ctx.call("mean", x, axis=axis, keepdims=True)
    var = ctx.call("variance", x, mean, axis=axis, keepdims=True)
    inv_std = ctx.call("rsqrt", ctx.call("add", var, _scalar(ctx, eps, x)))
    y = ctx.call("multiply", ctx.call("multiply", ctx.call("subtract", x, mean), inv_std), gamma)
    if beta is not None:
        y = ctx.call("add", y, beta)
    return y, mean, inv_std


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i else None


@converter("SkipLayerNormalization", 1, domain=_MS, inputs=("input", "skip", "gamma"))
def _skip_layer_norm(ctx, inputs, attrs):
    x = ctx.call("add", inputs[0], inputs[1])
    x = _with_bias(ctx, x, _opt(inputs, 4))
    y, mean, inv_std = _layer_norm_last(ctx, x, inputs[2], _opt(inputs, 3), float(attrs.get("epsilon", 1e-12)))
    return [y, mean, inv_std, x]


@converter("EmbedLayerNormalization", 1, domain=_MS,
           inputs=("input_ids", None, "word_embedding", "position_embedding", None, "gamma"))
def _embed_layer_norm(ctx, inputs, attrs):
    ids, segment_ids, word_emb, pos_emb, segment_emb, gamma = (_opt(inputs, i) for i in range(6))
    beta, mask, pos_ids = _opt(inputs, 6), _opt(inputs, 7), _opt(inputs, 8)
    shape = ctx.shape_of(ids)
    if len(shape) != 2 or not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"input_ids must be a static 2-D (batch, sequence) tensor, got {list(shape)}")
    batch, seq = shape
    if pos_ids is None:
        pos_ids = ctx.const(np.broadcast_to(np.arange(seq, dtype="int32"), (batch, seq)).copy())
    total = ctx.call("add", ctx.call("take", word_emb, ids, axis=0), ctx.call("take", pos_emb, pos_ids, axis=0))
    if segment_ids is not None:
        if segment_emb is None:
            raise ctx.error("segment_ids needs segment_embedding")
        total = ctx.call("add", total, ctx.call("take", segment_emb, segment_ids, axis=0))
    y, _, _ = _layer_norm_last(ctx, total, gamma, beta, float(attrs.get("epsilon", 1e-12)))
    if mask is None:
        mask_index = ctx.const(np.zeros((batch,), "int32"))
    else:
        mask_index = ctx.call("sum", ctx.call("cast", mask, dtype="int32"), axis=(1,), keepdims=False)
    return [y, mask_index, total]


def self_attention(ctx, qkv, heads: int, *, mask=None, past=None, attention_bias=None, unidirectional=False,
                   scale: float | None = None, mask_filter: float = -10000.0):
    """onnxruntime's multi-head self-attention of the projected `qkv` (B, S, 3H), as its CPU
    kernels compute it (Attention, QAttention): Q, K, V split into `heads` heads; K and V
    follow `past` (2, B, heads, P, H / heads) when given and are returned stacked as
    `present`; softmax(Q K^T * scale + penalty + attention_bias) V with scale
    1/sqrt(head size) unless given. The penalty is `mask_filter` where `mask` hides a key:
    mask_index (B,) holds each row's end, (B, P + S) or (B, S, P + S) is 0 at a hidden key;
    with `unidirectional` every key after the query's position gets it too (added: a
    hidden later key gets it twice, as onnxruntime's mask preparation does).
    Returns [output (B, S, H), present]."""
    from ...ir.expr import Tuple
    from .nn import _matmul

    batch, seq, width = ctx.shape_of(qkv)
    if not all(isinstance(d, int) for d in (batch, seq, width)) or width % 3:
        raise ctx.error(f"attention needs a static (batch, sequence, 3 * hidden) projection, got {[batch, seq, width]}")
    hidden = width // 3
    if hidden % heads:
        raise ctx.error(f"hidden size {hidden} does not split into {heads} heads")
    size = hidden // heads

    def head_split(part: int):  # (B, S, 3H) -> (B, heads, S, size)
        t = ctx.call("strided_slice", qkv, begin=(part * hidden,), end=((part + 1) * hidden,), strides=(1,),
                     axes=(2,))
        t = ctx.call("reshape", t, newshape=(batch, seq, heads, size))
        return ctx.call("transpose", t, axes=(0, 2, 1, 3))

    q, k, v = (head_split(i) for i in range(3))
    past_len = 0
    if past is not None:
        pshape = ctx.shape_of(past)
        if list(pshape[:3]) + list(pshape[4:]) != [2, batch, heads, size] or not isinstance(pshape[3], int):
            raise ctx.error(f"past must be of shape (2, {batch}, {heads}, past length, {size}), got {list(pshape)}")
        past_len = pshape[3]
        if past_len:
            pk, pv = (ctx.call("take", past, ctx.const(i, "int64"), axis=0) for i in (0, 1))
            k = ctx.call("concatenate", ctx.typed(Tuple([pk, k])), axis=2)
            v = ctx.call("concatenate", ctx.typed(Tuple([pv, v])), axis=2)
    total = past_len + seq
    present = ctx.call("stack", ctx.typed(Tuple([k, v])), axis=0)
    scores = _matmul(ctx, [q, ctx.call("transpose", k, axes=(0, 1, 3, 2))], {})
    scores = ctx.call("multiply", scores, ctx.const(1 / size ** 0.5 if scale is None else scale, "float32"))
    penalty = None
    filtered = ctx.const(mask_filter, "float32")
    if mask is not None:
        mshape, mtype = list(ctx.shape_of(mask)), ctx.type_of(mask).dtype
        if mshape in ([batch, total], [batch, seq, total]):
            keep = ctx.call("greater", mask, ctx.const(0, mtype))
            keep = ctx.call("reshape", keep, newshape=(batch, 1, 1 if len(mshape) == 2 else seq, total))
        elif mshape == [batch]:
            positions = ctx.const(np.arange(total, dtype=mtype))
            keep = ctx.call("less", positions, ctx.call("reshape", mask, newshape=(batch, 1)))
            keep = ctx.call("reshape", keep, newshape=(batch, 1, 1, total))
        else:
            raise ctx.error(f"mask_index of shape {mshape} is not supported ((batch,), (batch, past + sequence) "
                            f"and (batch, sequence, past + sequence) are)")
        penalty = ctx.call("where", keep, ctx.const(0.0, "float32"), filtered)
    if unidirectional:
        later = np.arange(total)[None, :] > past_len + np.arange(seq)[:, None]
        causal = ctx.const(np.where(later, np.float32(mask_filter), np.float32(0)).astype("float32"))
        penalty = causal if penalty is None else ctx.call("add", penalty, causal)
    if penalty is not None:
        scores = ctx.call("add", scores, penalty)
    if attention_bias is not None:
        scores = ctx.call("add", scores, attention_bias)
    probs = ctx.call("nn.softmax", scores, axis=-1)
    out = ctx.call("transpose", _matmul(ctx, [probs, v], {}), axes=(0, 2, 1, 3))
    return [ctx.call("reshape", out, newshape=(batch, seq, hidden)), present]


@converter("Attention", 1, domain=_MS, inputs=("input", "weights"), attributes=("num_heads",))
def _attention(ctx, inputs, attrs):
    """onnxruntime's Attention(input, weights, bias?, mask_index?, past?, attention_bias?):
    Q, K, V = input weights + bias, then `self_attention` (`scale` and `mask_filter_value`
    as given). TVM v0.19 converts it with the 2-D mask only and asserts on an attention
    bias; Q, K and V of different sizes (`qkv_hidden_sizes`), rotary embeddings, a shared
    past/present buffer and `past_sequence_length` are diagnostics here."""
    from .nn import _matmul

    x, weights = inputs[0], inputs[1]
    bias, mask, past, attention_bias, past_seq = (_opt(inputs, i) for i in (2, 3, 4, 5, 6))
    wshape = ctx.shape_of(weights)
    sizes = attrs.get("qkv_hidden_sizes")
    if sizes is not None and (len(sizes) != 3 or len(set(sizes)) != 1 or 3 * sizes[0] != wshape[-1]):
        raise ctx.error(f"qkv_hidden_sizes {list(sizes)}: only equal sizes of Q, K and V are supported")
    for name in ("do_rotary", "past_present_share_buffer"):
        if attrs.get(name, 0):
            raise ctx.error(f"`{name}` is not supported")
    if past_seq is not None:
        raise ctx.error("past_sequence_length is not supported (it goes with a shared past/present buffer)")
    if len(ctx.shape_of(x)) != 3 or len(wshape) != 2:
        raise ctx.error(f"Attention needs a (batch, sequence, hidden) input and a 2-D weight, got "
                        f"{list(ctx.shape_of(x))} and {list(wshape)}")
    qkv = _with_bias(ctx, _matmul(ctx, [x, weights], {}), bias)
    scale = float(attrs.get("scale", 0.0))
    return self_attention(ctx, qkv, int(attrs["num_heads"]), mask=mask, past=past, attention_bias=attention_bias,
                          unidirectional=bool(attrs.get("unidirectional", 0)), scale=scale or None,
                          mask_filter=float(attrs.get("mask_filter_value", -10000.0)))
