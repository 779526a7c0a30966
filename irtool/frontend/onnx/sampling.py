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

from . import converter
from .tensor import _call, _static


def _seed(ctx, attrs) -> int:
    if "seed" in attrs:
        return int(attrs["seed"])
    seed = ctx.unseeded_random_nodes
    ctx.unseeded_random_nodes += 1
    return seed


def _dtype_attr(ctx, attrs, default: str) -> str:
    return ctx.element_type(int(attrs["dtype"])) if "dtype" in attrs else default


def _draw(ctx, attrs, op: str, shape, dtype: str, **params):
    return _call(ctx, op, shape=tuple(int(d) for d in shape), dtype=dtype, seed=_seed(ctx, attrs), **params)


# ONNX op -> (Relay op, its distribution's attributes and their ONNX defaults); each also has
# a *Like form: the input's (static) shape, and its dtype unless `dtype` is given
_DISTRIBUTIONS = {"RandomUniform": ("random.uniform", {"low": 0.0, "high": 1.0}),
                  "RandomNormal": ("random.normal", {"mean": 0.0, "scale": 1.0})}


def _random(relay_op: str, params: dict, like: bool):
    def convert(ctx, inputs, attrs):
        values = {k: float(attrs.get(k, default)) for k, default in params.items()}
        if like:
            shape = _static(ctx, inputs[0], ctx.node.op_type)
            dtype = _dtype_attr(ctx, attrs, ctx.type_of(inputs[0]).dtype)
        else:
            shape, dtype = attrs["shape"], _dtype_attr(ctx, attrs, "float32")
        return _draw(ctx, attrs, relay_op, shape, dtype, **values)
    return convert


for _onnx, (_relay, _params) in _DISTRIBUTIONS.items():
    converter(_onnx, 1)(_random(_relay, _params, like=False))
    converter(_onnx + "Like", 1)(_random(_relay, _params, like=True))


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
