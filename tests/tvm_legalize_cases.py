"""Run by TVM 0.27's Python (not by pytest): legalize one call of (nearly) every Relax operator
TVM has, with a few shapes, and write what TVM's AnnotateTIROpPattern makes of each PrimFunc.

    python tvm_legalize_cases.py OUTDIR

For each case NAME it writes OUTDIR/NAME.legal.py (the legalized module as TVM prints it),
NAME.prim.py (its PrimFuncs alone, so that a Relax construct our parser lacks does not hide
them), NAME.prim.out.py (those annotated by TVM), and OUTDIR/report.json:
{NAME: {"patterns": {func: [in-memory pattern, pattern after print and reparse]}} or {"error": ...}}.
The cases are a table, one line each; a case TVM cannot build or legalize is reported, not fatal.
"""

import json
import os
import sys

import tvm
import tvm.script
from tvm import relax
from tvm.relax import op as O

N = O.nn


def T(*shape, dtype="float32"):
    return relax.TensorType(shape, dtype)


def S(*names_or_dims, dtype="float32"):
    """A tensor type with symbolic dims: names become int64 TIR variables."""
    return relax.TensorType([tvm.tirx.Var(d, "int64") if isinstance(d, str) else d for d in names_or_dims], dtype)


CASES = []  # (name, builder of the Relax call, argument types)


def case(name, fn, *types):
    CASES.append((name, fn, types))


UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "floor", "log",
         "negative", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "erf",
         "isfinite", "isinf", "isnan", "trunc"]
for u in UNARY:
    case(u, lambda x, u=u: getattr(O, u)(x), T(2, 3))
case("bitwise_not", O.bitwise_not, T(2, 3, dtype="int32"))
case("logical_not", O.logical_not, T(2, 3, dtype="bool"))
case("clip", lambda x: O.clip(x, 0.0, 6.0), T(2, 3))
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "mod", "power", "maximum",
          "minimum", "equal", "greater", "greater_equal", "less", "less_equal", "not_equal"]
# same shapes, trailing broadcast, both sides broadcast, leading unit dim, scalar operands

SHAPES = [((4, 3), (4, 3)), ((4, 3), (3,)), ((2, 1, 3), (4, 1)), ((1, 3), (4, 3)), ((4, 3), ()), ((), ()),
          ((2, 3, 4), (3, 1))]
for b in BINARY:
    for k, (s1, s2) in enumerate(SHAPES):
        case(f"{b}_{k}", lambda x, y, b=b: getattr(O, b)(x, y), T(*s1), T(*s2))
for b in ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]:
    case(b, lambda x, y, b=b: getattr(O, b)(x, y), T(4, 3, dtype="int32"), T(3, dtype="int32"))
for b in ["logical_and", "logical_or", "logical_xor"]:
    case(b, lambda x, y, b=b: getattr(O, b)(x, y), T(4, 3, dtype="bool"), T(4, 3, dtype="bool"))
for r in ["sum", "mean", "max", "min", "prod", "variance", "std"]:
    for k, (axis, keep) in enumerate([(None, False), (1, False), ([0, 2], True), (-1, True)]):
        case(f"{r}_{k}", lambda x, r=r, axis=axis, keep=keep: getattr(O, r)(x, axis=axis, keepdims=keep), T(2, 3, 4))
for r in ["argmax", "argmin"]:
    case(r, lambda x, r=r: getattr(O, r)(x, axis=1), T(2, 3, 4))
    case(r + "_all", lambda x, r=r: getattr(O, r)(x), T(2, 3, 4))
case("cumsum", lambda x: O.cumsum(x, axis=1), T(2, 3))
case("cumprod", lambda x: O.cumprod(x, axis=0), T(2, 3))
case("conv1d", N.conv1d, T(1, 3, 10), T(4, 3, 3))
case("conv2d", N.conv2d, T(1, 3, 8, 8), T(4, 3, 3, 3))
case("conv2d_pad_stride", lambda x, w: N.conv2d(x, w, strides=2, padding=1), T(1, 3, 8, 8), T(4, 3, 3, 3))
case("conv2d_group", lambda x, w: N.conv2d(x, w, groups=3), T(1, 3, 8, 8), T(3, 1, 3, 3))
case("conv2d_nhwc", lambda x, w: N.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO"), T(1, 8, 8, 3), T(3, 3, 3, 4))
case("conv3d", N.conv3d, T(1, 2, 5, 5, 5), T(2, 2, 3, 3, 3))
case("conv3d_transpose", lambda x, w: N.conv3d_transpose(x, w, strides=2, groups=2), T(1, 2, 3, 3, 3), T(2, 2, 2, 2, 2))
case("conv1d_transpose", N.conv1d_transpose, T(1, 3, 6), T(3, 4, 3))
case("conv2d_transpose", N.conv2d_transpose, T(1, 3, 6, 6), T(3, 4, 3, 3))
case("max_pool1d", lambda x: N.max_pool1d(x, pool_size=2), T(1, 3, 8))
case("max_pool2d", lambda x: N.max_pool2d(x, pool_size=2, strides=2), T(1, 3, 8, 8))
case("max_pool2d_pad", lambda x: N.max_pool2d(x, pool_size=3, padding=1), T(1, 3, 8, 8))
case("avg_pool2d", lambda x: N.avg_pool2d(x, pool_size=2), T(1, 3, 8, 8))
case("max_pool3d", lambda x: N.max_pool3d(x, pool_size=2), T(1, 2, 4, 4, 4))
case("avg_pool3d", lambda x: N.avg_pool3d(x, pool_size=3, padding=1, count_include_pad=False), T(1, 2, 4, 4, 4))
case("adaptive_avg_pool3d", lambda x: N.adaptive_avg_pool3d(x, output_size=(2, 3, 1)), T(1, 2, 4, 5, 4))
case("conv1d_group", lambda x, w: N.conv1d(x, w, strides=2, padding=1, groups=2), T(1, 4, 9), T(4, 2, 3))
case("conv1d_transpose_dil", lambda x, w: N.conv1d_transpose(x, w, strides=2, dilation=2), T(1, 2, 4), T(2, 3, 3))
case("max_pool1d_ceil", lambda x: N.max_pool1d(x, pool_size=3, strides=2, ceil_mode=True), T(1, 2, 8))
case("avg_pool1d", lambda x: N.avg_pool1d(x, pool_size=3, padding=1, count_include_pad=False), T(1, 2, 7))
case("adaptive_avg_pool1d", lambda x: N.adaptive_avg_pool1d(x, output_size=3), T(1, 2, 7))
case("adaptive_avg_pool2d", lambda x: N.adaptive_avg_pool2d(x, output_size=(1, 1)), T(1, 3, 8, 8))
case("adaptive_avg_pool2d_3", lambda x: N.adaptive_avg_pool2d(x, output_size=(3, 3)), T(1, 3, 8, 8))
case("softmax", N.softmax, T(2, 5))
case("softmax_axis0", lambda x: N.softmax(x, axis=0), T(2, 5))
case("log_softmax", N.log_softmax, T(2, 5))
for a in ["relu", "gelu", "gelu_tanh", "silu", "selu", "softplus"]:
    case(a, lambda x, a=a: getattr(N, a)(x), T(2, 5))
case("leakyrelu", lambda x: N.leakyrelu(x, 0.1), T(2, 5))
case("prelu", N.prelu, T(2, 5), T(5,))
case("batch_norm", lambda x, g, b, m, v: N.batch_norm(x, g, b, m, v, axis=1), T(2, 3, 4, 4), T(3), T(3), T(3), T(3))
case("layer_norm", lambda x, g, b: N.layer_norm(x, g, b, axes=[-1]), T(2, 3, 4), T(4), T(4))
case("group_norm", lambda x, g, b: N.group_norm(x, g, b, num_groups=2, channel_axis=1, axes=[2, 3]), T(2, 4, 3, 3), T(4), T(4))
case("rms_norm", lambda x, g: N.rms_norm(x, g, axes=[-1]), T(2, 3, 4), T(4))
case("dropout", lambda x: N.dropout(x, 0.5), T(2, 5))
case("pad", lambda x: N.pad(x, (0, 0, 1, 2)), T(2, 5))
case("matmul", O.matmul, T(4, 5), T(5, 6))
case("matmul_batch", O.matmul, T(2, 4, 5), T(5, 6))
case("matmul_bcast", O.matmul, T(2, 1, 4, 5), T(3, 5, 6))
case("matmul_vec", O.matmul, T(5,), T(5, 6))
case("matmul_f16", lambda a, b: O.matmul(a, b, out_dtype="float32"), T(4, 5, dtype="float16"), T(5, 6, dtype="float16"))
case("linear", O.linear, T(4, 5), T(6, 5), T(6,))
case("cross_entropy", N.cross_entropy_with_logits, T(2, 5), T(2, 5))
case("nll_loss", N.nll_loss, T(2, 5), T(2, dtype="int64"))
case("attention", N.attention, T(1, 4, 2, 8), T(1, 4, 2, 8), T(1, 4, 2, 8))
case("reshape", lambda x: O.reshape(x, (3, 4)), T(2, 6))
case("reshape_flat", lambda x: O.reshape(x, (24,)), T(2, 3, 4))
case("permute_dims", O.permute_dims, T(2, 3, 4))
case("permute_dims_021", lambda x: O.permute_dims(x, [0, 2, 1]), T(2, 3, 4))
case("expand_dims", lambda x: O.expand_dims(x, 1), T(2, 3))
case("squeeze", O.squeeze, T(2, 1, 3))
case("flatten", O.flatten, T(2, 3, 4))
case("concat", lambda x, y: O.concat([x, y], axis=1), T(2, 3), T(2, 4))
case("concat3", lambda x, y, z: O.concat([x, y, z], axis=0), T(2, 3), T(1, 3), T(3, 3))
case("split", lambda x: O.split(x, 2, axis=1), T(2, 6))
case("split_idx", lambda x: O.split(x, [1, 4], axis=1), T(2, 6))
case("strided_slice", lambda x: O.strided_slice(x, [1], [1], [5], [2]), T(2, 6))
case("strided_slice_rev", lambda x: O.strided_slice(x, [1], [5], [0], [-1]), T(2, 6))
case("take", lambda x, i: O.take(x, i, axis=0), T(5, 3), T(4, dtype="int64"))
case("take_axis1", lambda x, i: O.take(x, i, axis=1), T(5, 3), T(2, 2, dtype="int64"))
case("broadcast_to", lambda x: O.broadcast_to(x, (4, 2, 3)), T(2, 1))
case("broadcast_to_same", lambda x: O.broadcast_to(x, (2, 3)), T(2, 3))
case("tile", lambda x: O.tile(x, [2, 1]), T(2, 3))
case("repeat", lambda x: O.repeat(x, 2, axis=1), T(2, 3))
case("flip", lambda x: O.flip(x, axis=1), T(2, 3))
case("where", O.where, T(2, 3, dtype="bool"), T(2, 3), T(3,))
case("full_like", lambda x: O.full_like(x, relax.const(1.0)), T(2, 3))
case("zeros_like", O.zeros_like, T(2, 3))
case("ones_like", O.ones_like, T(2, 3))
case("tril", O.tril, T(3, 3))
case("triu", lambda x: O.triu(x, 1), T(3, 3))
case("tril_batch_sym", lambda x: O.tril(x, -1), S(2, "n", 4))
case("eye", lambda: O.eye(3, 4, 1, "int32"))
case("eye_like", lambda x: O.eye_like(x, -1), T(3, 4))
case("outer", O.outer, T(3), T(4))
case("meshgrid", lambda a, b: O.meshgrid([a, b], "xy"), T(3), T(4))
case("size", O.size, T(2, 3))
case("collapse_sum_to", lambda x: O.collapse_sum_to(x, (3, 1)), T(2, 3, 4))
case("collapse_sum_like", O.collapse_sum_like, T(2, 3, 4), T(3, 4))
case("hamming_window", lambda: O.hamming_window(6, True, 0.54, 0.46, "float32"))
case("bucketize", lambda x, b: O.bucketize(x, b, right=True), T(2, 3), T(4))
case("one_hot", lambda i: O.one_hot(i, relax.prim_value(1.0), relax.prim_value(0.0), 4), T(3, dtype="int32"))
case("layout_transform", lambda x: O.layout_transform(x, index_map=lambda a, b, c, d: (a, c, d, b)), T(1, 3, 4, 4))
case("astype", lambda x: O.astype(x, "float16"), T(2, 3))
case("gather_elements", lambda x, i: O.gather_elements(x, i, axis=1), T(2, 3), T(2, 2, dtype="int64"))
case("gather_nd", O.gather_nd, T(2, 3), T(2, 2, dtype="int64"))
case("scatter_elements", lambda x, i, u: O.scatter_elements(x, i, u, axis=1), T(2, 3), T(2, 2, dtype="int64"), T(2, 2))
case("scatter_nd", O.scatter_nd, T(4, 3), T(2, 1, dtype="int64"), T(2, 3))
case("collapse_sum_like", O.collapse_sum_like, T(2, 3), T(3,))
case("collapse_sum_to", lambda x: O.collapse_sum_to(x, (1, 3)), T(2, 3))
case("einsum", lambda x, y: O.einsum([x, y], "ij,jk->ik"), T(2, 3), T(3, 4))
case("topk", lambda x: O.topk(x, 2), T(2, 5))
case("sort", O.sort, T(2, 5))
case("argsort", O.argsort, T(2, 5))
case("resize2d", lambda x: O.image.resize2d(x, (6, 6)), T(1, 3, 4, 4))
case("resize2d_linear", lambda x: O.image.resize2d(x, (6, 6), method="linear"), T(1, 3, 4, 4))
case("stack", lambda x, y: O.stack([x, y], axis=1), T(2, 3), T(2, 3))
case("tensor_to_shape_nonzero", O.nonzero, T(4, dtype="int32"))
case("index_tensor", lambda x, i: O.index_tensor(x, [i]), T(5, 3), T(4, dtype="int64"))
case("meshgrid", lambda x, y: O.meshgrid([x, y]), T(2), T(3))
case("layout_transform_pad", lambda x: O.layout_transform(x, index_map=lambda a, b: (a // 4, b, a % 4)), T(6, 3))
case("index_tensor_2", lambda x, i, j: O.index_tensor(x, [i, j]), T(5, 3), T(2, 1, dtype="int64"), T(4, dtype="int32"))
case("reverse_sequence", lambda x, s: O.reverse_sequence(x, s, 0, 1), T(4, 3), T(3, dtype="int32"))
case("slice_scatter", lambda x, u: O.slice_scatter(x, u, 1, 4, 1, axis=0), T(4, 3), T(3, 3))
case("index_put", lambda x, i, v: O.index_put(x, (i, i), v, accumulate=True), T(4, 3), T(2, dtype="int64"), T(2))
case("quantize", lambda x, s: O.quantize(x, s, relax.const(1, "int8"), axis=1), T(2, 3), T(3))
case("dequantize", lambda x: O.dequantize(x, relax.const(0.5), relax.const(2, "int8"), out_dtype="float16"),
     T(2, 3, dtype="int8"))
case("attention", lambda q, k, v: N.attention(q, k, v, causal_mask="BottomRight"), T(1, 4, 2, 4), T(1, 6, 2, 4),
     T(1, 6, 2, 3))
case("attention_bias", lambda q, k, v, b: N.attention(q, k, v, b, scale=0.5), T(1, 3, 2, 4), T(1, 3, 2, 4),
     T(1, 3, 2, 4), T(1, 2, 3, 3))
case("sym_add", lambda x, y: O.add(x, y), S("n", 3), T(3))
case("sym_sum", lambda x: O.sum(x, axis=1), S("n", "m"))
case("sym_matmul", O.matmul, S("n", 4), T(4, 5))
case("sym_softmax", N.softmax, S("n", 4))



def main(outdir: str) -> None:
    report = {}
    annotate = relax.transform.AnnotateTIROpPattern()
    for name, fn, types in CASES:
        try:
            bb = relax.BlockBuilder()
            params = [relax.Var(f"x{i}", t) for i, t in enumerate(types)]
            with bb.function("main", params):
                with bb.dataflow():
                    out = bb.emit_output(fn(*params))
                bb.emit_func_output(out)
            legal = relax.transform.LegalizeOps()(bb.get())
            text = legal.script()
            in_memory = annotate(legal)
            reparsed = annotate(tvm.script.from_source(text))
        except Exception as err:  # noqa: BLE001 - an op TVM cannot legalize is reported
            report[name] = {"error": (str(err).splitlines() or [type(err).__name__])[0][:200]}
            continue
        prims = {gv: f for gv, f in legal.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}
        if not prims:
            report[name] = {"patterns": {}}
            continue
        prim_mod = tvm.IRModule(prims)
        with open(os.path.join(outdir, name + ".legal.py"), "w") as fh:
            fh.write(text)
        with open(os.path.join(outdir, name + ".prim.py"), "w") as fh:
            fh.write(prim_mod.script())
        with open(os.path.join(outdir, name + ".prim.out.py"), "w") as fh:
            fh.write(annotate(prim_mod).script())
        report[name] = {"patterns": {gv.name_hint: [int(in_memory[gv].attrs["op_pattern"]),
                                                    int(reparsed[gv.name_hint].attrs["op_pattern"])]
                                     for gv in prims}}
    with open(os.path.join(outdir, "report.json"), "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
