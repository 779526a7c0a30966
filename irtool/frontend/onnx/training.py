"""ONNX's optimiser ops (domain `ai.onnx.preview.training`): Adagrad, Momentum and Adam, one
update step of each tensor given, as elementwise Relay arithmetic on the formulas of the
ONNX spec (the learning rate R and the step count T are scalars that may be known only at
run time, so `T > 0` is a `where`). Inputs: R, T, then the n tensors X, their gradients
G and the n optimiser states; outputs: the n new X, then the new states.

    Adagrad   r = R / (1 + T decay_factor); G' = norm_coefficient X + G; H' = H + G'^2;
              X' = X - r G' / (sqrt(H') + epsilon)
    Momentum  G' = norm_coefficient X + G; V' = alpha V + (T > 0 ? beta : 1) G';
              X' = X - R V' (standard) or X - R (G' + alpha V') (nesterov)
    Adam      G' = norm_coefficient X + G; V' = alpha V + (1 - alpha) G';
              H' = beta H + (1 - beta) G'^2; r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
              X' = (1 - norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon))

TVM v0.19 converts the same three (python/tvm/relay/frontend/onnx.py); this also reads the
learning-rate formulas from the spec.
"""

from __future__ import annotations

from . import converter

_TRAINING = "ai.onnx.preview.training"


def _f(ctx, value, like):
    return ctx.const(float(value), ctx.type_of(like).dtype)


def _groups(ctx, inputs, per_tensor: int):
    """R, T and the n groups of `per_tensor` inputs (X, G, states...) for each tensor."""
    rest = inputs[2:]
    if len(rest) % per_tensor:
        raise ctx.error(f"expected R, T and {per_tensor} inputs per optimised tensor, got {len(inputs)} inputs")
    n = len(rest) // per_tensor
    return inputs[0], inputs[1], [[rest[k * n + i] for k in range(per_tensor)] for i in range(n)]


def _as(ctx, scalar, like):
    """A (rank-0) R or T in `like`'s float type."""
    return ctx.call("cast", ctx.call("reshape", scalar, newshape=()), dtype=ctx.type_of(like).dtype)


def _regularised(ctx, x, g, attrs):
    norm = float(attrs.get("norm_coefficient", 0.0))
    return g if norm == 0.0 else ctx.call("add", ctx.call("multiply", _f(ctx, norm, x), x), g)


def _positive(ctx, t):
    return ctx.call("greater", ctx.call("reshape", t, newshape=()), ctx.const(0, ctx.type_of(t).dtype))


@converter("Adagrad", 1, domain=_TRAINING)
def _adagrad(ctx, inputs, attrs):
    r, t, groups = _groups(ctx, inputs, 3)
    xs, hs = [], []
    for x, g, h in groups:
        decay = ctx.call("multiply", _as(ctx, t, x), _f(ctx, attrs.get("decay_factor", 0.0), x))
        rate = ctx.call("divide", _as(ctx, r, x), ctx.call("add", _f(ctx, 1.0, x), decay))
        g = _regularised(ctx, x, g, attrs)
        h_new = ctx.call("add", h, ctx.call("multiply", g, g))
        scale = ctx.call("add", ctx.call("sqrt", h_new), _f(ctx, attrs.get("epsilon", 0.0), x))
        xs.append(ctx.call("subtract", x, ctx.call("divide", ctx.call("multiply", rate, g), scale)))
        hs.append(h_new)
    return xs + hs


@converter("Momentum", 1, domain=_TRAINING)
def _momentum(ctx, inputs, attrs):
    r, t, groups = _groups(ctx, inputs, 3)
    mode = attrs.get("mode", "standard")
    if mode not in ("standard", "nesterov"):
        raise ctx.error(f"Momentum mode \"{mode}\" is not supported")
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    xs, vs = [], []
    for x, g, v in groups:
        g = _regularised(ctx, x, g, attrs)
        beta_t = ctx.call("where", _positive(ctx, t), _f(ctx, beta, x), _f(ctx, 1.0, x))
        v_new = ctx.call("add", ctx.call("multiply", _f(ctx, alpha, x), v), ctx.call("multiply", beta_t, g))
        step = v_new if mode == "standard" else ctx.call("add", g, ctx.call("multiply", _f(ctx, alpha, x), v_new))
        xs.append(ctx.call("subtract", x, ctx.call("multiply", _as(ctx, r, x), step)))
        vs.append(v_new)
    return xs + vs


@converter("Adam", 1, domain=_TRAINING)
def _adam(ctx, inputs, attrs):
    r, t, groups = _groups(ctx, inputs, 4)
    alpha, beta = float(attrs.get("alpha", 0.9)), float(attrs.get("beta", 0.999))
    xs, vs, hs = [], [], []
    for x, g, v, h in groups:
        g = _regularised(ctx, x, g, attrs)
        v_new = ctx.call("add", ctx.call("multiply", _f(ctx, alpha, x), v),
                         ctx.call("multiply", _f(ctx, 1 - alpha, x), g))
        h_new = ctx.call("add", ctx.call("multiply", _f(ctx, beta, x), h),
                         ctx.call("multiply", _f(ctx, 1 - beta, x), ctx.call("multiply", g, g)))
        h_sqrt = ctx.call("add", ctx.call("sqrt", h_new), _f(ctx, attrs.get("epsilon", 1e-6), x))
        steps, rate = _as(ctx, t, x), _as(ctx, r, x)
        bias = ctx.call("divide",
                        ctx.call("sqrt", ctx.call("subtract", _f(ctx, 1.0, x),
                                                  ctx.call("power", _f(ctx, beta, x), steps))),
                        ctx.call("subtract", _f(ctx, 1.0, x), ctx.call("power", _f(ctx, alpha, x), steps)))
        rate = ctx.call("where", _positive(ctx, t), ctx.call("multiply", rate, bias), rate)
        x_new = ctx.call("subtract", x, ctx.call("multiply", rate, ctx.call("divide", v_new, h_sqrt)))
        post = float(attrs.get("norm_coefficient_post", 0.0))
        xs.append(x_new if post == 0.0 else ctx.call("multiply", _f(ctx, 1 - post, x), x_new))
        vs.append(v_new)
        hs.append(h_new)
    return xs + vs + hs
