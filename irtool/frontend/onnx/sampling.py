"""ONNX random-number ops: RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike,
Multinomial, as the stateful Relay ops `random.uniform`, `random.normal`, `random.multinomial`
(irtool/ops/sampling.py: NumPy's PCG64 generator seeded by the `seed` attribute).

TVM v0.19 converts them to its threefry ops with a key made from `seed`, or from a seed it
draws with np.random when the node has none, so its import is not reproducible. irtool's is:
a node without `seed` gets the seed `k`, k counting the seedless random nodes of the model in
conversion order from 0, so two seedless nodes draw different numbers and importing a model
twice gives the same module. ONNX's seed is a float; its integer part is the seed (as TVM's
`int(seed)`). The values cannot match onnxruntime's (ONNX leaves the generator to the runtime).
"""

from __future__ import annotations

from . import ONNX_DTYPES, converter
from .tensor import _call, _static


def _seed(ctx, attrs) -> int:
    if "seed" in attrs:
        return int(attrs["seed"])
    seed = ctx.unseeded_random_nodes
    ctx.unseeded_random_nodes += 1
    return seed


def _dtype_attr(ctx, attrs, default: str) -> str:
    if "dtype" not in attrs:
        return default
    dtype = ONNX_DTYPES.get(int(attrs["dtype"]))
    if dtype is None:
        raise ctx.error(f"unsupported element type {attrs['dtype']}")
    return dtype


def _draw(ctx, attrs, op: str, shape, dtype: str, **params):
    if shape is None:
        raise ctx.error(f"{ctx.node.op_type} needs a `shape` attribute")
    return _call(ctx, op, shape=tuple(int(d) for d in shape), dtype=dtype, seed=_seed(ctx, attrs), **params)


@converter("RandomUniform", 1)
def _random_uniform(ctx, inputs, attrs):
    """Values in [low, high] of the `shape` attribute (dtype default float)."""
    return _draw(ctx, attrs, "random.uniform", attrs.get("shape"), _dtype_attr(ctx, attrs, "float32"),
                 low=float(attrs.get("low", 0.0)), high=float(attrs.get("high", 1.0)))


@converter("RandomUniformLike", 1)
def _random_uniform_like(ctx, inputs, attrs):
    """RandomUniform of the input's (static) shape; dtype default the input's."""
    dtype = _dtype_attr(ctx, attrs, ctx.type_of(inputs[0]).dtype)
    return _draw(ctx, attrs, "random.uniform", _static(ctx, inputs[0], "RandomUniformLike"), dtype,
                 low=float(attrs.get("low", 0.0)), high=float(attrs.get("high", 1.0)))


@converter("RandomNormal", 1)
def _random_normal(ctx, inputs, attrs):
    """N(mean, scale**2) values of the `shape` attribute (dtype default float)."""
    return _draw(ctx, attrs, "random.normal", attrs.get("shape"), _dtype_attr(ctx, attrs, "float32"),
                 mean=float(attrs.get("mean", 0.0)), scale=float(attrs.get("scale", 1.0)))


@converter("RandomNormalLike", 1)
def _random_normal_like(ctx, inputs, attrs):
    """RandomNormal of the input's (static) shape; dtype default the input's."""
    dtype = _dtype_attr(ctx, attrs, ctx.type_of(inputs[0]).dtype)
    return _draw(ctx, attrs, "random.normal", _static(ctx, inputs[0], "RandomNormalLike"), dtype,
                 mean=float(attrs.get("mean", 0.0)), scale=float(attrs.get("scale", 1.0)))


@converter("Multinomial", 7)
def _multinomial(ctx, inputs, attrs):
    """`sample_size` classes per row of (batch, classes) unnormalised log-probabilities:
    random.multinomial of their softmax (TVM v0.19 passes the log-probabilities on as if they
    were probabilities), cast to `dtype` (int32 by default, or int64)."""
    if len(ctx.shape_of(inputs[0])) != 2:
        raise ctx.error(f"Multinomial needs a 2-D input (batch, classes), got shape {list(ctx.shape_of(inputs[0]))}")
    dtype = _dtype_attr(ctx, attrs, "int32")
    if dtype not in ("int32", "int64"):
        raise ctx.error(f"Multinomial's dtype must be int32 or int64, got {dtype}")
    probs = _call(ctx, "nn.softmax", inputs[0], axis=-1)
    picks = _call(ctx, "random.multinomial", probs, num_samples=int(attrs.get("sample_size", 1)),
                  seed=_seed(ctx, attrs))
    return picks if dtype == "int32" else _call(ctx, "cast", picks, dtype=dtype)
