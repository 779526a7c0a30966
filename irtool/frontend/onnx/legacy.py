"""Deprecated and experimental ONNX ops TVM v0.19 still converts, and the integer matmuls.

- Affine, Scale, ScaledTanh, ParametricSoftplus, FC, SpatialBN are ONNX's early
  "experimental" ops (Caffe2's), no longer in onnx's schemas: `alpha * x + beta`,
  `scale * x`, `alpha * tanh(beta * x)`, `alpha * log(1 + exp(beta * x))`, Caffe2's FC and
  BatchNormalization;
- Upsample (opsets 7-9, deprecated by Resize) is Resize with `asymmetric` coordinates and
  `floor` nearest rounding, as onnxruntime computes it;
- GlobalLpPool is `(sum over the spatial axes of |x|^p)^(1/p)`;
- LinearRegressor (ai.onnx.ml) is X C^T + intercepts; Binarizer and ArrayFeatureExtractor
  (ai.onnx.ml, not in TVM v0.19's map) `x > threshold` and a `take` along the last axis;
  TreeEnsemble (ai.onnx.ml opset 5, not in the map either) the trees unrolled at import;
- MatMulInteger is the int32 matmul of the centred operands (`a_zero_point` per row of A,
  `b_zero_point` per column of B); `com.microsoft.MatMulInteger16` the int32 (uint32 for
  two uint16 operands) matmul of int16/uint16 operands.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Tuple
from ...ir.types import ANY
from . import converter
from .nn import _batch_norm, _dense, _matmul


def _scalar(ctx, value, like):
    return ctx.const(value, ctx.type_of(like).dtype)


@converter("Affine", 1, inputs=("X",))
def _affine(ctx, inputs, attrs):
    x = inputs[0]
    scaled = ctx.call("multiply", x, _scalar(ctx, float(attrs.get("alpha", 1.0)), x))
    return ctx.call("add", scaled, _scalar(ctx, float(attrs.get("beta", 0.0)), x))


@converter("Scale", 1, inputs=("X",))
def _scale(ctx, inputs, attrs):
    return ctx.call("multiply", inputs[0], _scalar(ctx, float(attrs.get("scale", 1.0)), inputs[0]))


@converter("ScaledTanh", 1, inputs=("X",))
def _scaled_tanh(ctx, inputs, attrs):
    x = inputs[0]
    inner = ctx.call("tanh", ctx.call("multiply", x, _scalar(ctx, float(attrs.get("beta", 1.0)), x)))
    return ctx.call("multiply", inner, _scalar(ctx, float(attrs.get("alpha", 1.0)), x))


@converter("ParametricSoftplus", 1, inputs=("X",))
def _parametric_softplus(ctx, inputs, attrs):
    x = inputs[0]
    exp = ctx.call("exp", ctx.call("multiply", x, _scalar(ctx, float(attrs.get("beta", 1.0)), x)))
    soft = ctx.call("log", ctx.call("add", exp, _scalar(ctx, 1.0, x)))
    return ctx.call("multiply", soft, _scalar(ctx, float(attrs.get("alpha", 1.0)), x))


def _flatten_at(ctx, x, axis: int, what: str):
    shape = ctx.shape_of(x)
    axis = axis + len(shape) if axis < 0 else axis
    if ANY in shape or not 0 <= axis <= len(shape):
        raise ctx.error(f"FC needs a static {what} with axis in range, got shape {list(shape)} and axis {axis}")
    return ctx.call("reshape", x, newshape=(int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))


@converter("FC", 1, inputs=("X", "W"))
def _fc(ctx, inputs, attrs):
    """Caffe2's FC: X flattened to 2-D at `axis`, W at `axis_w`, Y = X W^T + b. TVM v0.19
    maps it to `nn.dense` ignoring `axis`/`axis_w` and passes the bias as dense's third
    argument (an error); here the bias is added as Caffe2 defines it."""
    x = _flatten_at(ctx, inputs[0], int(attrs.get("axis", 1)), "input")
    w = _flatten_at(ctx, inputs[1], int(attrs.get("axis_w", 1)), "weight")
    y = _dense(ctx, x, w)
    if len(inputs) > 2 and inputs[2] is not None:
        y = ctx.call("add", y, inputs[2])
    return y


@converter("SpatialBN", 1, inputs=("X", "scale", "B", "mean", "var"))
def _spatial_bn(ctx, inputs, attrs):
    """Caffe2's spatial batch normalisation, in inference (`is_test`) mode: BatchNormalization
    over the channel axis (axis 1, or the last for `order="NHWC"`)."""
    if sum(1 for o in ctx.node.output if o) > 1:
        raise ctx.error("only inference-mode SpatialBN (one output) is supported")
    if attrs.get("order", "NCHW") == "NHWC":
        from ...ir.expr import TupleGetItem

        x, scale, bias, mean, var = inputs[:5]
        rank = len(ctx.shape_of(x))
        bn = ctx.call("nn.batch_norm", x, scale, bias, mean, var, axis=rank - 1,
                      epsilon=float(attrs.get("epsilon", 1e-5)))
        return ctx.typed(TupleGetItem(bn, 0))
    return _batch_norm(ctx, inputs, {"epsilon": attrs.get("epsilon", 1e-5)})


@converter("Upsample", 7, 9)
def _upsample(ctx, inputs, attrs):
    """Resize with asymmetric coordinates and floor rounding (onnxruntime's Upsample);
    TVM v0.19 builds `nn.upsampling` with its own rounding. Scales are the `scales`
    attribute (opset 7) or the second input (9)."""
    from .tensor import _resize

    x = inputs[0]
    if ctx.opset < 9 or len(inputs) < 2:
        if "scales" not in attrs:
            raise ctx.error("Upsample needs scales")
        scales = ctx.const(np.asarray(attrs["scales"], "float32"))
    else:
        scales = inputs[1]
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"Upsample mode \"{mode}\" is not supported")
    resize_attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    if ctx.opset < 11:
        return _resize(ctx, [x, scales], resize_attrs)
    return _resize(ctx, [x, None, scales], resize_attrs)


@converter("GlobalLpPool", 1, 2)
def _global_lp_pool(ctx, inputs, attrs):
    x = inputs[0]
    rank = len(ctx.shape_of(x))
    if rank < 3:
        raise ctx.error(f"the input must have rank >= 3, got {rank}")
    p = float(attrs.get("p", 2))
    powered = ctx.call("power", ctx.call("abs", x), _scalar(ctx, p, x))
    total = ctx.call("sum", powered, axis=tuple(range(2, rank)), keepdims=True)
    return ctx.call("power", total, _scalar(ctx, 1.0 / p, x))


def _centred(ctx, x, zero_point, axis_from_end: int):
    """int32(x) - int32(zero_point); a 1-D zero point of several values is laid along the
    axis `axis_from_end` from the end (-2: A's rows, -1: B's columns)."""
    y = ctx.call("cast", x, dtype="int32")
    if zero_point is None:
        return y
    zp = ctx.call("cast", zero_point, dtype="int32")
    zshape = ctx.shape_of(zp)
    if not zshape or all(d == 1 for d in zshape):
        zp = ctx.call("reshape", zp, newshape=())
    elif axis_from_end == -2:
        zp = ctx.call("reshape", zp, newshape=(-1, 1))
    return ctx.call("subtract", y, zp)


@converter("MatMulInteger", 10)
def _matmul_integer(ctx, inputs, attrs):
    a, b = inputs[0], inputs[1]
    a_zp = inputs[2] if len(inputs) > 2 else None
    b_zp = inputs[3] if len(inputs) > 3 else None
    return _matmul(ctx, [_centred(ctx, a, a_zp, -2), _centred(ctx, b, b_zp, -1)], {})


@converter("MatMulInteger16", 1, domain="com.microsoft", inputs=("A", "B"))
def _matmul_integer16(ctx, inputs, attrs):
    """int16/uint16 operands, accumulated in int64 and wrapped to int32 (uint32 for two
    uint16 operands), the accumulator type onnxruntime uses."""
    a, b = inputs[0], inputs[1]
    dtypes = (ctx.type_of(a).dtype, ctx.type_of(b).dtype)
    if any(d not in ("int16", "uint16") for d in dtypes):
        raise ctx.error(f"MatMulInteger16 needs int16/uint16 operands, got {dtypes[0]} and {dtypes[1]}")
    out = "uint32" if dtypes == ("uint16", "uint16") else "int32"
    acc = _matmul(ctx, [ctx.call("cast", a, dtype="int64"), ctx.call("cast", b, dtype="int64")], {})
    return ctx.call("cast", acc, dtype=out)


@converter("LinearRegressor", 1, domain="ai.onnx.ml")
def _linear_regressor(ctx, inputs, attrs):
    """ai.onnx.ml's LinearRegressor: Y = X C^T + intercepts, C the `coefficients` as a
    (targets, features) matrix, in float32 (TVM v0.19: the same dense + bias). Only
    post_transform NONE (onnxruntime's PROBIT is not converted, nor by TVM)."""
    if attrs.get("post_transform", "NONE") != "NONE":
        raise ctx.error(f"LinearRegressor post_transform \"{attrs['post_transform']}\" is not supported")
    x = ctx.call("cast", inputs[0], dtype="float32")
    if len(ctx.shape_of(x)) == 1:
        x = ctx.call("expand_dims", x, axis=0)
    targets = int(attrs.get("targets", 1))
    coefficients = np.asarray(attrs.get("coefficients", []), "float32").reshape(targets, -1)
    y = _dense(ctx, x, ctx.const(coefficients))
    if attrs.get("intercepts"):
        y = ctx.call("add", y, ctx.const(np.asarray(attrs["intercepts"], "float32")))
    return y


@converter("Binarizer", 1, domain="ai.onnx.ml")
def _binarizer(ctx, inputs, attrs):
    """ai.onnx.ml's Binarizer: 1 where x > threshold, else 0, in x's type."""
    x = inputs[0]
    above = ctx.call("greater", x, _scalar(ctx, float(attrs.get("threshold", 0.0)), x))
    return ctx.call("where", above, _scalar(ctx, 1, x), _scalar(ctx, 0, x))


@converter("ArrayFeatureExtractor", 1, domain="ai.onnx.ml")
def _array_feature_extractor(ctx, inputs, attrs):
    """ai.onnx.ml's ArrayFeatureExtractor: the flattened indices taken along the last axis; a
    1-D input gives one row (1, n), as onnxruntime (and onnx's reference) shape it."""
    x, indices = inputs
    y = ctx.call("take", x, ctx.call("reshape", indices, newshape=(-1,)), axis=-1)
    return ctx.call("expand_dims", y, axis=0) if len(ctx.shape_of(x)) == 1 else y


# TreeEnsemble's comparison per node mode (BRANCH_LEQ, LT, GTE, GT, EQ, NEQ; MEMBER apart)
_TREE_COMPARISONS = ("less_equal", "less", "greater_equal", "greater", "equal", "not_equal")


@converter("TreeEnsemble", 1, domain="ai.onnx.ml")
def _tree_ensemble(ctx, inputs, attrs):
    """ai.onnx.ml's TreeEnsemble (opset 5; not in TVM v0.19's map) with the trees unrolled at
    import: every node's test is computed for every row at once (its feature `take`n, the
    comparison its mode picks, set membership, NaN following `missing_value_tracks_true`);
    a leaf is reached when the tests on its path all go its way (a product of the tests or
    their complements, gathered by a constant path table); the leaves' weights are summed
    per target (SUM, or AVERAGE over the trees). MIN/MAX aggregation and post transforms
    are diagnostics."""
    x = inputs[0]
    shape = ctx.shape_of(x)
    if len(shape) != 2:
        raise ctx.error(f"TreeEnsemble needs a 2-D (batch, features) input, got shape {list(shape)}")
    aggregate, post = int(attrs.get("aggregate_function", 1)), int(attrs.get("post_transform", 0))
    if aggregate not in (0, 1) or post != 0:
        raise ctx.error(f"TreeEnsemble supports the SUM and AVERAGE aggregations without a post transform, got "
                        f"aggregate_function={aggregate}, post_transform={post}")
    modes = np.asarray(attrs["nodes_modes"]).astype(int).reshape(-1)
    splits = np.asarray(attrs["nodes_splits"]).reshape(-1)
    count = len(modes)
    fields = {name: [int(v) for v in attrs[name]] for name in (
        "nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs")}
    missing_true = [int(v) for v in attrs.get("nodes_missing_value_tracks_true", [0] * count)]
    weights = np.asarray(attrs["leaf_weights"]).reshape(-1)
    targets = [int(v) for v in attrs["leaf_targetids"]]
    if (any(len(v) != count for v in (*fields.values(), splits, missing_true)) or len(targets) != len(weights)
            or modes.min(initial=0) < 0 or modes.max(initial=0) > 6):
        raise ctx.error("TreeEnsemble's nodes_* (and leaf_*) attributes must have one entry per node (leaf), with "
                        "modes 0 to 6")
    n_targets = int(attrs.get("n_targets", max(targets, default=-1) + 1))
    x_dtype = ctx.type_of(x).dtype
    dtype = str(splits.dtype) if splits.dtype.kind == "f" else x_dtype  # compared as onnx's reference does
    values = ctx.call("take", ctx.call("cast", x, dtype=dtype),
                      ctx.const(np.array(fields["nodes_featureids"], "int64")), axis=1)  # (N, nodes)
    split = ctx.const(splits.astype(dtype), dtype)
    tests = ctx.call("equal", values, split)  # replaced per mode below
    for mode, op in enumerate(_TREE_COMPARISONS):
        if (modes == mode).any():
            tests = ctx.call("where", ctx.const(modes == mode), ctx.call(op, values, split), tests)
    if (modes == 6).any():
        members = np.asarray(attrs.get("membership_values", []), dtype).reshape(-1)
        sets = np.split(members, np.flatnonzero(np.isnan(members)) + 1)
        sets = [s[~np.isnan(s)] for s in sets if s.size][: int((modes == 6).sum())]
        table = np.full((count, max((len(s) for s in sets), default=1) or 1), np.nan, dtype)
        for node, members_of in zip(np.flatnonzero(modes == 6), sets):
            table[node, : len(members_of)] = members_of
        hits = ctx.call("equal", ctx.call("expand_dims", values, axis=2), ctx.const(table[None]))
        member = ctx.call("cast", ctx.call("max", ctx.call("cast", hits, dtype="int8"), axis=(2,)), dtype="bool")
        tests = ctx.call("where", ctx.const(modes == 6), member, tests)
    # a NaN feature also passes where missing_value_tracks_true says so (NaN != split passes anyway)
    tests = ctx.call("logical_or", tests, ctx.call("logical_and", ctx.call("isnan", values),
                                                   ctx.const(np.array(missing_true, bool))))
    taken = ctx.call("cast", tests, dtype=str(weights.dtype))
    ones = ctx.call("ones_like", ctx.call("strided_slice", taken, begin=(0,), end=(1,), strides=(1,), axes=(1,)))
    either = ctx.call("concatenate", ctx.typed(Tuple([taken, ctx.call("subtract", ctx.const(np.ones((), weights.dtype)),
                                                                      taken), ones])), axis=1)
    paths = {}  # leaf -> [(node, went true)]
    for root in attrs["tree_roots"]:
        stack = [(int(root), [])]
        while stack:
            node, path = stack.pop()
            if not 0 <= node < count or len(path) > count:
                raise ctx.error(f"TreeEnsemble: node {node} is not a node of the ensemble (or a tree has a cycle)")
            for branch, child, is_leaf in ((True, "nodes_truenodeids", "nodes_trueleafs"),
                                           (False, "nodes_falsenodeids", "nodes_falseleafs")):
                step = path + [(node, branch)]
                if fields[is_leaf][node]:
                    paths.setdefault(fields[child][node], step)
                else:
                    stack.append((fields[child][node], step))
    depth = max((len(p) for p in paths.values()), default=1)
    table = np.full((len(weights), depth), 2 * count, "int64")  # the column of ones pads short paths
    for leaf, path in paths.items():
        table[leaf, : len(path)] = [node if went else count + node for node, went in path]
    reached = ctx.call("prod", ctx.call("take", either, ctx.const(table), axis=1), axis=(2,))  # (N, leaves)
    matrix = np.zeros((len(weights), n_targets), weights.dtype)
    for leaf, (target, weight) in enumerate(zip(targets, weights)):
        if leaf in paths:
            matrix[leaf, target] += weight
    if aggregate == 0:
        matrix /= len(attrs["tree_roots"])
    return ctx.call("cast", _matmul(ctx, [reached, ctx.const(matrix)], {}), dtype=x_dtype)
