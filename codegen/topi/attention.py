"""R.nn.attention and R.nn.attention_bias: TVM 0.27's `_te_attention`
(python/tvm/relax/transform/legalize_ops/nn.py), one PrimFunc (`attention`, `attention_bias`)
of TOPI ops over query (B, S, H, D), key (B, Skv, Hk, D), value (B, Skv, Hk, Dv):

    T_transpose, T_reshape          q, k, v to BHSD, then (B * H, S, D) (each tensor in turn:
                                    q, k, then after the scores v)
    T_batch_matmul_NT               scores q @ k^T (TOPI's batch_matmul, sblock attr
                                    `layout_free_placeholders` of its second operand)
    T_multiply / T_divide           by `scale` (a float32 FloatImm: float16 scores are cast to
                                    float32 and so is everything after) or by sqrt(D) in the
                                    scores' dtype
    T_reshape, T_add, T_reshape     with a bias: scores as (B, H, S, Skv) plus the bias
                                    (broadcast), back to (B * H, S, Skv)
    T_softmax_*                     without a causal mask: TOPI's softmax over the last axis
    trilu, trilu_red, T_subtract,   with one: the scores below the diagonal `offset` kept
    compute, trilu_1, trilu_red_1,  (TopLeft 0, BottomRight |S - Skv|), exp(x - row max)
    T_divide                        masked again, divided by its row sum
    T_batch_matmul_NN               probabilities @ v, then T_reshape (B, H, S, Dv) and
                                    T_transpose to (B, S, H, Dv)

With a mask, the row maximum is taken over the zeros the mask puts in, so a row of very
negative scores loses its exponentials to underflow (in float16 from about -17): TVM's
numerics, which differ there from the reference's softmax over the kept scores alone.

TVM's LegalizeOps fails on a window_size (an assertion) and on a causal mask other than the two
(NotImplementedError): the call stays, as for R.nn.attention_var_len (TVM raises for every
call). Where the key has fewer heads than the query (grouped-query attention, which the struct
info allows), TVM's reshape of k and v to (B * H, Skv, D) reads row `b * H + h` of the (B * Hk)
rows modulo B * Hk: ours is the same PrimFunc (byte for byte), which is not grouped-query
attention (the reference's meaning, irtool/ops/relax_attention.py).
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .broadcast import _equal_dims, topi_binary
from .norm import softmax
from .reduce import topi_max, topi_sum
from .transform import reshape, transpose

_add, _subtract, _multiply, _divide = (topi_binary(n) for n in ("add", "subtract", "multiply", "divide"))


def _is_one(d) -> bool:
    return isinstance(d, tir.IntImm) and d.value == 1


def batch_matmul(a: te.Tensor, b: te.Tensor, oshape: list, transpose_b: bool = True) -> te.Tensor:
    """TOPI's batch_matmul (python/tvm/topi/nn/batch_matmul.py) with an explicit output shape:
    `T_batch_matmul_NT` (b given as (batch, N, K)) or `T_batch_matmul_NN` ((batch, K, N)); a
    batch of 1 on either side is indexed by 0; b is the sblock's layout-free placeholder."""
    a_batch, _, a_k = a.shape
    b_batch = b.shape[0]
    k = te.reduce_axis((0, a_k), name="k")
    zero = tb.const(0, "int64")
    dtype = a.dtype

    def element(b_, i, j):
        a_idx = (zero if _is_one(a_batch) else b_, i, k.var)
        b_idx = (zero if _is_one(b_batch) else b_,) + ((j, k.var) if transpose_b else (k.var, j))
        return te.sum(tb.mul(tb.cast(dtype, a(*a_idx)), tb.cast(dtype, b(*b_idx))), axis=k)

    return te.compute(oshape, lambda b, i, j: element(b, i, j), name="T_batch_matmul_NT" if transpose_b
                      else "T_batch_matmul_NN", tag="batch_matmul", attrs={"layout_free_placeholders": [b]})


def trilu(data: te.Tensor, k: tir.PrimExpr, upper: bool) -> te.Tensor:
    """TOPI's trilu: elements on the kept side of diagonal k (int32) unchanged, others zero."""
    k = k if k.dtype == "int32" else tb.cast("int32", k)

    def element(*indices):
        row, col = indices[-2], indices[-1]
        diagonal = tb.sub(col, k)
        check = tir.BinOp("le" if upper else "ge", row, diagonal)
        return tir.Select(check, data(*indices), tb.const(0, data.dtype))

    return te.compute(data.shape, element, name="trilu", tag="elemwise")


def _offset(causal_mask: str, seq_len, seq_len_kv) -> tir.PrimExpr:
    """The diagonal of the mask: 0 (TopLeft) or |S - Skv| (BottomRight), int32; tirx.abs of
    sizes is a Select, as TVM's simplifier leaves it (`T.Select(m <= 4, 4 - m, m - 4)`)."""
    if causal_mask == "TopLeft" or _equal_dims(seq_len, seq_len_kv):
        return tb.const(0, "int32")
    if isinstance(seq_len, tir.IntImm) and isinstance(seq_len_kv, tir.IntImm):
        return tb.const(abs(seq_len.value - seq_len_kv.value), "int32")
    if isinstance(seq_len, tir.IntImm) or isinstance(seq_len_kv, tir.IntImm):  # 0 <= n - 6 is 6 <= n
        nonnegative = tb.le(seq_len_kv, seq_len)
    else:
        nonnegative = tb.le(tb.const(0, seq_len.dtype), tb.sub(seq_len, seq_len_kv))
    return tb.cast("int32", tir.Select(nonnegative, tb.sub(seq_len, seq_len_kv), tb.sub(seq_len_kv, seq_len)))


def attention(q: te.Tensor, k: te.Tensor, v: te.Tensor, bias: te.Tensor | None, scale, causal_mask) -> te.Tensor:
    batch_size, seq_len, num_head, head_dim = q.shape
    seq_len_kv, head_dim_v = v.shape[1], v.shape[3]
    q, k, v = (transpose(t, [0, 2, 1, 3]) for t in (q, k, v))
    bs = tb.mul(batch_size, num_head)
    q = reshape(q, [bs, seq_len, head_dim])
    k = reshape(k, [bs, seq_len_kv, head_dim])
    v = reshape(v, [bs, seq_len_kv, head_dim_v])
    p = batch_matmul(q, k, [bs, seq_len, seq_len_kv])
    if scale is not None:
        p = _multiply(p, scale)
    else:
        p = _divide(p, tb.call("sqrt", tb.cast(p.dtype, head_dim)))
    if bias is not None:
        p = reshape(p, [batch_size, num_head, seq_len, seq_len_kv])
        p = _add(p, bias)
        p = reshape(p, [bs, seq_len, seq_len_kv])
    if causal_mask is None:
        s = softmax(p)
    else:
        offset = _offset(causal_mask, seq_len, seq_len_kv)
        p_masked = trilu(p, offset, upper=False)
        shifted = _subtract(p_masked, topi_max(p_masked, axis=[-1], keepdims=True))
        p_masked_exp = trilu(te.compute(shifted.shape, lambda *i: tb.call("exp", shifted(*i))), offset, upper=False)
        s = _divide(p_masked_exp, topi_sum(p_masked_exp, axis=[-1], keepdims=True))
    o = batch_matmul(s, v, [bs, seq_len, head_dim_v], transpose_b=False)
    o = reshape(o, [batch_size, num_head, seq_len, head_dim_v])
    return transpose(o, [0, 2, 1, 3])


def _legalizable(call) -> bool:
    """TVM's LegalizeOps fails on a window (an assertion) and on an unknown causal mask."""
    return call.attrs["window_size"] is None and call.attrs["causal_mask"] in (None, "TopLeft", "BottomRight")


def _scale(call):
    scale = call.attrs["scale"]
    return None if scale is None else tir.FloatImm(float(scale.value), scale.dtype)


@register_legalize("relax.nn.attention")
def _attention(bb, call):
    if not _legalizable(call):
        return call
    return bb.call_te(attention, *call.args[:3], None, _scale(call), call.attrs["causal_mask"],
                      primfunc_name_hint="attention")


@register_legalize("relax.nn.attention_bias")
def _attention_bias(bb, call):
    if not _legalizable(call):
        return call
    return bb.call_te(attention, *call.args[:4], _scale(call), call.attrs["causal_mask"],
                      primfunc_name_hint="attention_bias")
