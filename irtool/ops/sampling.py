"""Random-number operators: `random.uniform`, `random.normal`, `random.multinomial`.

TVM v0.19 threads an explicit threefry key through its random ops (`random.uniform(key, low,
high)` returns the next key and the values). irtool's ops take the generator's state as a
`seed` attribute instead and return only the values: each call draws from a fresh NumPy
`Generator(PCG64(seed))` (the seed taken modulo 2**64), so a call gives the same numbers every
time it runs, and two calls with different seeds give independent streams. The numbers are
NumPy's, not threefry's; ONNX leaves the generator to the runtime, so neither TVM's nor
onnxruntime's values can be matched anyway.

    uniform(shape, dtype, low=0, high=1, seed=0)      values in [low, high] (rounding to a
                                                      float16/float32 may reach `high`)
    normal(shape, dtype, mean=0, scale=1, seed=0)     N(mean, scale**2)
    multinomial(probs, num_samples=1, seed=0)         probs (C,) or (B, C) of unnormalised
        non-negative weights (TVM's semantics: each row is divided by its sum); the result
        (num_samples,) or (B, num_samples) int32 class indices, drawn with replacement by
        inverting the row's cumulative distribution at uniform samples (as TOPI does)

All three are stateful (TVM's TOpIsStateful: the importer's folding, fold-constant and CSE
never fold or merge them) and opaque to fusion (kOpaque, as TVM registers them); floating
element types only (float16, float32, float64) for uniform and normal.
"""

from __future__ import annotations

from ..ir.types import TensorType
from .common import fmt_type, np, tensor_arg
from .registry import REQUIRED, AttrSpec, OpDef, OpPattern, TypeRelError, register
from .transform import _static_shape

FLOAT_DTYPES = ("float16", "float32", "float64")


def _generator(seed: int):
    return np.random.Generator(np.random.PCG64(seed % (1 << 64)))


def _draw_rel(op: str):
    def rel(args, attrs):
        if attrs["dtype"] not in FLOAT_DTYPES:
            raise TypeRelError(f"{op} draws floating-point values ({', '.join(FLOAT_DTYPES)}), "
                               f"not {attrs['dtype'] or 'an unset dtype'}")
        return TensorType(_static_shape(attrs["shape"], op), attrs["dtype"])
    return rel


def multinomial_rel(args, attrs):
    probs = tensor_arg(args, 0, "probs")
    if len(probs.shape) not in (1, 2) or not probs.dtype.startswith("float"):
        raise TypeRelError(f"random.multinomial needs 1-D or 2-D floating-point probabilities, got {fmt_type(probs)}")
    if attrs["num_samples"] < 1:
        raise TypeRelError(f"random.multinomial needs num_samples >= 1, got {attrs['num_samples']}")
    return TensorType((*probs.shape[:-1], attrs["num_samples"]), "int32")


def _uniform(*, shape, dtype, low, high, seed):
    # Drawn in float64 and rounded once, so float16/float32 get the same stream as float64.
    return (low + (high - low) * _generator(seed).random(tuple(shape))).astype(dtype)


def _normal(*, shape, dtype, mean, scale, seed):
    return (mean + scale * _generator(seed).standard_normal(tuple(shape))).astype(dtype)


def _multinomial(probs, *, num_samples, seed):
    rows = np.asarray(probs, dtype="float64").reshape(-1, probs.shape[-1])
    cdf = np.cumsum(rows, axis=1)
    u = _generator(seed).random((rows.shape[0], num_samples)) * cdf[:, -1:]
    # The first class whose cumulative weight exceeds u: a zero-weight class is never drawn.
    picks = np.stack([np.searchsorted(c, row_u, side="right") for c, row_u in zip(cdf, u)])
    picks = np.minimum(picks, rows.shape[1] - 1)
    return picks.astype("int32").reshape((*probs.shape[:-1], num_samples))


DRAW_ATTRS = (AttrSpec("shape", "ints", REQUIRED), AttrSpec("dtype", "dtype", "float32"))
SEED = AttrSpec("seed", "int", 0)
O = OpPattern.OPAQUE

register(
    OpDef("random.uniform", (), _draw_rel("random.uniform"), O, _uniform,
          attrs=(*DRAW_ATTRS, AttrSpec("low", "float", 0.0), AttrSpec("high", "float", 1.0), SEED), stateful=True),
    OpDef("random.normal", (), _draw_rel("random.normal"), O, _normal,
          attrs=(*DRAW_ATTRS, AttrSpec("mean", "float", 0.0), AttrSpec("scale", "float", 1.0), SEED), stateful=True),
    OpDef("random.multinomial", ("probs",), multinomial_rel, O, _multinomial,
          attrs=(AttrSpec("num_samples", "int", 1), SEED), stateful=True),
)
