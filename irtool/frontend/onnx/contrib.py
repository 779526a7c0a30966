"""onnxruntime's transformer contrib ops (domain `com.microsoft`) that TVM v0.19 converts:
FastGelu, BiasGelu, SkipLayerNormalization, EmbedLayerNormalization.

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
  sum (TVM v0.19 has no third output).

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


@converter("FastGelu", 1, domain=_MS)
def _fast_gelu(ctx, inputs, attrs):
    y = _with_bias(ctx, inputs[0], inputs[1] if len(inputs) > 1 else None)
    cube = ctx.call("multiply", ctx.call("multiply", y, y), y)
    inner = ctx.call("add", ctx.call("multiply", y, _scalar(ctx, math.sqrt(2 / math.pi), y)),
                     ctx.call("multiply", cube, _scalar(ctx, 0.044715 * math.sqrt(2 / math.pi), y)))
    half = ctx.call("multiply", y, _scalar(ctx, 0.5, y))
    return ctx.call("multiply", half, ctx.call("add", ctx.call("tanh", inner), _scalar(ctx, 1.0, y)))


@converter("BiasGelu", 1, domain=_MS)
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


@converter("SkipLayerNormalization", 1, domain=_MS)
def _skip_layer_norm(ctx, inputs, attrs):
    x = ctx.call("add", inputs[0], inputs[1])
    x = _with_bias(ctx, x, _opt(inputs, 4))
    y, mean, inv_std = _layer_norm_last(ctx, x, inputs[2], _opt(inputs, 3), float(attrs.get("epsilon", 1e-12)))
    return [y, mean, inv_std, x]


@converter("EmbedLayerNormalization", 1, domain=_MS)
def _embed_layer_norm(ctx, inputs, attrs):
    ids, segment_ids, word_emb, pos_emb, segment_emb, gamma = inputs[:6]
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
