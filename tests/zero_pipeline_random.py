"""Random Relax modules through TVM 0.27's zero pipeline and ours, stage by stage.

TVM builds each module with its BlockBuilder (so the input is what TVM's own frontends
make: normalised bindings, constants in the metadata section) and prints it with
`show_meta=True`; both sides then start from that text. TVM re-parses it and runs
LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps and FuseTIR one at a time,
printing after each (with and without metadata), and also `relax.get_pipeline("zero")`
whole. Ours runs the same five stages on the same text. `compare_seed` finds the first
stage whose printout differs, and checks that stage alone on TVM's previous printout, so
a difference is pinned on one pass.

Used by tests/test_zero_pipeline.py (a few dozen modules) and
benchmarks/random_pipeline_compare.py (the long run).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess

from tvm_text import canonical_elem_offsets

from irtool.diagnostics import DiagnosticError
from irtool.ir.structural import structural_equal
from irtool.text import parse, to_text
from irtool.text.tvmscript.tir_stmt import printed_domains
from irtool.transform import PassContext, get_pass

STAGES = ("legalize-ops", "annotate-tir-op-pattern", "fold-constant", "fuse-ops", "fuse-tir")

# The op kinds the generator draws from, with their weights (one line each).
TVM_GENERATOR = r'''
import os, random, sys, traceback
import numpy as np
import tvm
from tvm import relax
from tvm.relax import op as R

KINDS = {
    "conv": 4, "conv_bias": 3, "unary": 4, "bin_same": 3, "bin_rank1": 2, "bin_rank3": 2, "bin_scalar": 2,
    "bin_0d": 1, "matmul": 2, "max_pool": 1, "avg_pool": 1, "adaptive_pool": 1, "softmax": 2, "layer_norm": 1, "batch_norm": 1,
    "reduce_keep": 2, "reduce_axis1": 1, "reshape": 2, "transpose": 1, "split_concat": 2, "slice_concat": 1,
    "concat_conv": 1, "const_fold": 2, "const_fold_exp": 1, "astype": 1, "where": 1, "clip": 1, "mlp_head": 1, "variance": 1,
    # the wider set: more of what legalize-ops handles, and attribute forms
    "unary_more": 2, "bin_more": 1, "logic": 1, "activation": 1, "conv_forms": 2, "conv_strided": 1,
    "conv_transpose": 1, "pool_forms": 2, "pad_conv": 1, "resize": 1, "expand_squeeze": 1, "stack": 1,
    "tile_slice": 1, "take": 1, "gather": 1, "arg_reduce": 1, "min_prod": 1, "broadcast": 1, "creation": 1,
    "like": 1, "one_hot": 1, "grid_sample": 1, "norm_forms": 1, "flatten": 1, "dropout": 1, "int_math": 1, "pad_reflect": 1,
    # forms legalized since run 4: any avg_pool2d window, reflect pads up to twice the size,
    # resize2d sampling one constant coordinate along an axis
    "pool_wide": 1, "pad_reflect_wide": 1, "resize_fixed": 1,
    # run 8: float16/int/bool branches, attribute combinations, NHWC layouts, tuples, index ops,
    # einsum, sorting, constant subgraphs of more op kinds, and bindings after the dataflow block
    "f16_branch": 2, "int_branch": 2, "bool_branch": 1, "reduce_forms": 2, "arg_forms": 1, "scan": 1, "flip": 1,
    "slice_forms": 1, "split_forms": 1, "concat_forms": 1, "permute_forms": 1, "reshape_forms": 1,
    "squeeze_forms": 1, "matmul_forms": 2, "layout_nhwc": 2, "norm_more": 1, "index_ops": 1, "einsum": 1,
    "const_more": 2, "unary_all": 1, "pad_forms": 1, "tuple_forms": 1, "sort_forms": 1, "power_scalar": 1,
    "activation_ops": 1,
    # run 11: the Relax-only operators declared in session 12 (norms, losses, 1-D windows, ...)
    "norm_groups": 1, "math_relax": 2, "loss": 1, "conv1d_forms": 2, "tri_forms": 1, "creation_relax": 1,
    "shape_relax": 1, "index_relax": 2, "quant": 1, "image_relax": 1,
    # run 12: the classic vision ops (session 13): get_valid_counts, hard and soft NMS, multibox decoding
    "vision_valid_counts": 1, "vision_nms": 1, "vision_multibox": 1,
}


def random_module(seed):
    rng = random.Random(seed)
    nrng = np.random.RandomState(seed)
    # run 8: other channel counts and odd spatial sizes, one module in three
    C, H = (4, 6) if seed % 3 else random.Random(seed + 1).choice([(3, 5), (2, 7), (6, 4), (5, 9)])
    B = tvm.tirx.Var("n", "int64") if seed % 4 == 3 else 1
    full = (B, C, H, H)
    def t(shape, dtype="float32"): return relax.TensorType(shape, dtype)
    def const(shape):
        return relax.const(nrng.uniform(-1, 1, shape).astype("float32"))
    def iconst(values, dtype):  # relax.const narrows an int64 array to int32 unless told the dtype
        return relax.const(values.astype(dtype), dtype)
    kinds, weights = zip(*((k, w) for k, w in KINDS.items() if k not in EXCLUDED and (not ONLY or k in ONLY)))
    mod = tvm.IRModule()
    nfuncs = 2 if rng.random() < 0.15 else 1
    for fi in range(nfuncs):
        bb = relax.BlockBuilder()
        params = [relax.Var("x", t(full))] + [relax.Var(f"p{i}", t(full)) for i in range(rng.randint(0, 2))]
        w = relax.Var("w", t((C, C, 3, 3)))
        params.append(w)
        name = "main" if fi == 0 else f"f{fi}"
        with bb.function(name, params):
            with bb.dataflow():
                pool = [p for p in params if p is not w]
                small, flat, other = [], [], []  # (B, C, 1, 1); 2-D; other shapes (outputs only)
                n = rng.randint(3, 14)
                for step in range(n):
                    kind = rng.choices(kinds, weights)[0]
                    a = rng.choice(pool)
                    if kind == "conv":
                        v = R.nn.conv2d(a, w if rng.random() < 0.4 else const((C, C, 3, 3)), padding=1)
                    elif kind == "conv_bias":  # as ONNX Conv imports: the bias reshaped, then added
                        c = bb.emit(R.nn.conv2d(a, const((C, C, 3, 3)), padding=1))
                        v = R.add(c, bb.emit(R.reshape(const((C,)), (1, C, 1, 1))))
                    elif kind == "unary":
                        f = rng.choice([R.exp, R.nn.relu, R.sigmoid, R.tanh, R.negative, R.abs, R.floor,
                                        lambda x: R.sqrt(R.abs(x)), R.erf])
                        v = f(a)
                    elif kind == "bin_same":
                        v = rng.choice([R.add, R.multiply, R.subtract, R.maximum, R.minimum])(a, rng.choice(pool))
                    elif kind == "bin_rank1":
                        v = rng.choice([R.add, R.multiply])(a, const((H,)))
                    elif kind == "bin_rank3":
                        b = const((C, 1, 1))
                        v = R.subtract(b, a) if rng.random() < 0.5 else R.multiply(a, b)
                    elif kind == "bin_scalar":
                        v = rng.choice([R.add, R.multiply, R.divide])(a, relax.const(rng.choice([0.5, 2.0, -1.0]), "float32"))
                    elif kind == "bin_0d":
                        v = R.add(a, relax.const(np.array(1.5, "float32")))
                    elif kind == "matmul":
                        v = R.matmul(a, const((H, H)) if rng.random() < 0.6 else rng.choice(pool))
                    elif kind == "max_pool":
                        v = R.nn.max_pool2d(a, pool_size=[3, 3], padding=[1, 1, 1, 1])
                    elif kind == "avg_pool":
                        v = R.nn.avg_pool2d(a, pool_size=[3, 3], padding=[1, 1, 1, 1])
                    elif kind == "adaptive_pool":
                        small.append(bb.emit(R.nn.adaptive_avg_pool2d(a, output_size=[1, 1])))
                        continue
                    elif kind == "softmax":
                        v = (R.nn.softmax if rng.random() < 0.7 else R.nn.log_softmax)(a, axis=-1)
                    elif kind == "layer_norm":
                        v = R.nn.layer_norm(a, const((H,)), const((H,)), axes=[-1])
                    elif kind == "batch_norm":
                        bn = bb.emit(R.nn.batch_norm(a, const((C,)), const((C,)), const((C,)),
                                                     relax.const(nrng.uniform(0.5, 1, (C,)).astype("float32")), axis=1))
                        v = relax.TupleGetItem(bn, 0)
                    elif kind == "reduce_keep":
                        f = rng.choice([R.sum, R.mean, R.max])
                        small.append(bb.emit(f(a, axis=[2, 3], keepdims=True)))
                        if rng.random() < 0.6:
                            v = R.add(a, rng.choice(small))
                        else:
                            continue
                    elif kind == "reduce_axis1":
                        v = R.subtract(a, R.mean(a, axis=[1], keepdims=True))
                    elif kind == "variance":
                        v = R.divide(a, R.add(R.variance(a, axis=[2, 3], keepdims=True), relax.const(1.0, "float32")))
                    elif kind == "reshape":
                        r = bb.emit(R.reshape(a, (B, C, H * H)))
                        v = R.reshape(R.exp(r) if rng.random() < 0.5 else r, full)
                    elif kind == "transpose":
                        v = R.permute_dims(a, [0, 1, 3, 2])
                    elif kind == "split_concat":
                        parts = bb.emit(R.split(a, 2, axis=1))
                        x0 = bb.emit(relax.TupleGetItem(parts, 0))
                        x1 = bb.emit(relax.TupleGetItem(parts, 1))
                        if rng.random() < 0.5:
                            x1 = bb.emit(R.exp(x1))
                        v = R.concat([x1, x0] if rng.random() < 0.5 else [x0, x1], axis=1)
                    elif kind == "slice_concat":
                        s = bb.emit(R.strided_slice(a, axes=[3], begin=[0], end=[H // 2]))
                        if H % 2:  # an odd width: the rest sliced apart
                            v = R.concat([s, R.negative(R.strided_slice(a, axes=[3], begin=[H // 2], end=[H]))], axis=3)
                        else:
                            v = R.concat([s, R.negative(s)], axis=3)
                    elif kind == "concat_conv":  # 2C channels back to C
                        cat = bb.emit(R.concat([a, rng.choice(pool)], axis=1))
                        v = R.nn.conv2d(cat, const((C, 2 * C, 1, 1)))
                    elif kind == "const_fold":  # a constant subexpression for FoldConstant
                        k = bb.emit(R.multiply(const((C, 1, 1)), const((C, 1, 1))))
                        v = R.add(a, bb.emit(R.subtract(k, const((1, H)))))
                    elif kind == "const_fold_exp":  # a transcendental folded
                        v = R.multiply(a, bb.emit(R.exp(const((C, 1, 1)))))
                    elif kind == "astype":
                        v = R.astype(R.astype(a, "float16"), "float32")
                    elif kind == "where":
                        v = R.where(R.greater(a, rng.choice(pool)), a, relax.const(0.0, "float32"))
                    elif kind == "clip":
                        v = R.clip(a, -0.5, 0.5)
                    elif kind == "mlp_head":  # flatten, dense, bias, relu: a 2-D branch
                        f2 = bb.emit(R.reshape(a, (B, C * H * H)))
                        m = bb.emit(R.matmul(f2, const((C * H * H, 10))))
                        flat.append(bb.emit(R.nn.relu(bb.emit(R.add(m, const((10,)))))))
                        if rng.random() < 0.5:
                            flat.append(bb.emit(R.nn.softmax(flat[-1], axis=-1)))
                        continue
                    elif kind == "unary_more":
                        f = rng.choice([R.sin, R.cos, R.round, R.ceil, R.trunc, R.sign, R.square, R.sinh,
                                        lambda x: R.rsqrt(R.add(R.abs(x), relax.const(1.0, "float32"))),
                                        lambda x: R.log(R.add(R.abs(x), relax.const(1.0, "float32"))),
                                        R.atan, lambda x: R.where(R.logical_not(R.isnan(x)), x,
                                                                  relax.const(0.0, "float32"))])
                        v = f(a)
                    elif kind == "bin_more":
                        f = rng.choice([R.floor_divide, R.floor_mod, R.power, R.mod])
                        b = R.add(R.abs(rng.choice(pool)), relax.const(1.0, "float32"))
                        v = f(R.abs(a), b) if f is R.power else f(a, b)
                    elif kind == "logic":
                        c1 = R.greater_equal(a, rng.choice(pool))
                        c2 = rng.choice([R.less, R.not_equal, R.equal, R.less_equal])(a, const((H,)))
                        v = R.where(rng.choice([R.logical_and, R.logical_or, R.logical_xor])(c1, c2), a, rng.choice(pool))
                    elif kind == "activation":
                        v = R.nn.leakyrelu(a, rng.choice([0.01, 0.2])) if rng.random() < 0.5 else R.nn.prelu(a, const((C,)))
                    elif kind == "conv_forms":  # same size: dilation with padding, groups, NHWC
                        form = rng.choice(["dilated", "groups", "depthwise", "nhwc", "rect"])
                        if form == "dilated":
                            v = R.nn.conv2d(a, const((C, C, 3, 3)), padding=2, dilation=2)
                        elif form == "groups":
                            g = 2 if C % 2 == 0 else C
                            v = R.nn.conv2d(a, const((C, C // g, 3, 3)), padding=[1, 1, 1, 1], groups=g)
                        elif form == "depthwise":
                            v = R.nn.conv2d(a, const((C, 1, 3, 3)), padding=1, groups=C)
                        elif form == "rect":
                            v = R.nn.conv2d(a, const((C, C, 1, 3)), padding=[0, 1, 0, 1])
                        else:
                            t_ = bb.emit(R.permute_dims(a, [0, 2, 3, 1]))
                            c = bb.emit(R.nn.conv2d(t_, const((3, 3, C, C)), padding=1, data_layout="NHWC",
                                                    kernel_layout="HWIO"))
                            v = R.permute_dims(c, [0, 3, 1, 2])
                    elif kind == "conv_strided":  # half size, then back up by conv2d_transpose
                        c = bb.emit(R.nn.conv2d(a, const((C, C, 3, 3)), strides=2, padding=1))
                        v = R.nn.conv2d_transpose(c, const((C, C, 3, 3)), strides=2, padding=1, output_padding=1 - H % 2)
                    elif kind == "conv_transpose":
                        v = R.nn.conv2d_transpose(a, const((C, C, 3, 3)), padding=1)
                    elif kind == "pool_forms":
                        form = rng.choice(["stride", "ceil", "include", "max_dilated", "adaptive"])
                        if form == "stride":
                            p_ = bb.emit(R.nn.max_pool2d(a, pool_size=2, strides=2))
                            v = R.image.resize2d(p_, (H, H), method="nearest_neighbor")
                        elif form == "ceil":
                            p_ = bb.emit(R.nn.avg_pool2d(a, pool_size=[3, 3], strides=[2, 2], ceil_mode=True))
                            v = R.image.resize2d(p_, (H, H))
                        elif form == "include":
                            v = R.nn.avg_pool2d(a, pool_size=3, padding=1, count_include_pad=True)
                        elif form == "max_dilated":
                            v = R.nn.max_pool2d(a, pool_size=3, dilation=2, padding=2)
                        else:
                            other.append(bb.emit(R.nn.adaptive_avg_pool2d(a, output_size=[2, 3])))
                            continue
                    elif kind in ("pad_conv", "pad_reflect"):  # pad_reflect: the mode TOPI writes branchless
                        mode = "reflect" if kind == "pad_reflect" else rng.choice(["constant", "reflect", "replicate"])
                        p_ = bb.emit(R.nn.pad(a, [0, 0, 0, 0, 1, 1, 1, 1], pad_mode=mode, pad_value=0.5 if mode == "constant" else 0.0))
                        v = R.nn.conv2d(p_, const((C, C, 3, 3)))
                    elif kind == "pool_wide":
                        k = rng.randint(1, 6)
                        ph, pt = rng.randint(0, k + 1), rng.randint(0, k + 1)
                        p_ = bb.emit(R.nn.avg_pool2d(a, pool_size=[k, rng.randint(1, 3)], strides=[rng.randint(1, 4), 1],
                                                     padding=[ph, 0, pt, rng.randint(0, 2)], ceil_mode=rng.random() < 0.5,
                                                     count_include_pad=rng.random() < 0.5))
                        v = R.image.resize2d(p_, (H, H))
                    elif kind == "pad_reflect_wide":
                        before, after = rng.randint(0, 2 * (H - 1)), rng.randint(0, H - 1)
                        p_ = bb.emit(R.nn.pad(a, [0, 0, 0, 0, before, after, rng.randint(0, H - 1), 0], pad_mode="reflect"))
                        v = R.nn.adaptive_avg_pool2d(p_, output_size=[H, H])
                    elif kind == "resize_fixed":
                        method = rng.choice(["linear", "nearest_neighbor", "cubic"])
                        mode = rng.choice(["align_corners", "tf_crop_and_resize"])
                        m_ = bb.emit(R.mean(a, axis=[2], keepdims=True))
                        v = R.image.resize2d(m_, (H, H), roi=[0.0, 0.1, 0.0, 0.9], method=method,
                                             coordinate_transformation_mode=mode)
                    elif kind == "resize":
                        method = rng.choice(["linear", "nearest_neighbor", "cubic"])
                        mode = rng.choice(["half_pixel", "align_corners", "asymmetric"])
                        r_ = bb.emit(R.image.resize2d(a, (2 * H, 2 * H), method=method,
                                                      coordinate_transformation_mode=mode))
                        v = R.nn.max_pool2d(r_, pool_size=2, strides=2)
                    elif kind == "expand_squeeze":
                        ax = rng.choice([1, -1])
                        e_ = bb.emit(R.expand_dims(a, [ax]))
                        v = R.squeeze(R.exp(e_), [1 if ax == 1 else 4])
                    elif kind == "stack":
                        ax = rng.choice([1, 4])
                        v = R.sum(R.stack([a, rng.choice(pool)], axis=ax), axis=[ax])
                    elif kind == "tile_slice":
                        if rng.random() < 0.5:
                            t_ = bb.emit(R.tile(a, [1, 1, 1, 2]))
                        else:
                            t_ = bb.emit(R.repeat(a, 2, axis=3))
                        v = R.strided_slice(t_, axes=[3], begin=[0], end=[2 * H], strides=[2])
                    elif kind == "take":
                        idx = iconst(nrng.randint(0, H, (H,)), rng.choice(["int64", "int32"]))
                        v = R.take(a, idx, axis=rng.choice([2, 3]))
                    elif kind == "gather":
                        if B != 1:
                            continue
                        idx = iconst(nrng.randint(0, H, full), "int64")
                        v = R.gather_elements(a, idx, axis=rng.choice([2, 3]))
                    elif kind == "arg_reduce":
                        f = rng.choice([R.argmax, R.argmin])
                        v = R.add(a, R.astype(f(a, axis=1, keepdims=True), "float32"))
                    elif kind == "min_prod":
                        small.append(bb.emit(rng.choice([R.min, R.prod])(a, axis=[2, 3], keepdims=True)))
                        continue
                    elif kind == "broadcast":
                        v = R.multiply(a, R.broadcast_to(const((1, C, 1, H)), full))
                    elif kind == "creation":
                        c = rng.choice([R.zeros((C, 1, 1), "float32"), R.ones((1, H), "float32"),
                                        R.full((C, 1, H), relax.const(0.25, "float32"), "float32"),
                                        R.arange(0, H, 1, "float32")])
                        v = R.add(a, c)
                    elif kind == "like":
                        f = rng.choice([lambda x: R.zeros_like(x), lambda x: R.ones_like(x),
                                        lambda x: R.full_like(x, relax.const(0.5, "float32"))])
                        v = R.add(a, f(a))
                    elif kind == "one_hot":
                        i_ = bb.emit(R.argmax(a, axis=3))
                        v = R.multiply(a, R.one_hot(i_, relax.prim_value(tvm.tirx.FloatImm("float32", 1.0)),
                                                    relax.prim_value(tvm.tirx.FloatImm("float32", 0.0)), H, -1))
                    elif kind == "grid_sample":
                        g_ = bb.emit(R.tanh(R.strided_slice(a, axes=[1], begin=[0], end=[2])))
                        method, pad = rng.choice([("bilinear", "zeros"), ("bilinear", "border"), ("bicubic", "zeros"),
                                                  ("nearest", "zeros"), ("nearest", "border"), ("nearest", "reflection")])
                        v = R.image.grid_sample(a, g_, method=method, padding_mode=pad, align_corners=rng.random() < 0.5)
                    elif kind == "norm_forms":
                        if rng.random() < 0.5:
                            v = R.nn.layer_norm(a, const((H, H)), const((H, H)), axes=[2, 3], epsilon=1e-3)
                        else:
                            v = R.nn.softmax(a, axis=1)
                    elif kind == "flatten":
                        flat.append(bb.emit(R.nn.batch_flatten(a)))
                        continue
                    elif kind == "dropout":
                        d_ = bb.emit(R.nn.dropout(a, 0.3))
                        v = relax.TupleGetItem(d_, 0)
                    elif kind == "int_math":
                        i_ = bb.emit(R.astype(R.multiply(a, relax.const(4.0, "float32")), "int32"))
                        j_ = bb.emit(rng.choice([R.bitwise_and, R.bitwise_or, R.bitwise_xor, R.maximum])(
                            i_, relax.const(np.array(3, "int32"))))
                        v = R.astype(j_, "float32")
                    # ---- run 8's widening: dtypes, attribute combinations, layouts, tuples
                    elif kind == "f16_branch":  # float16 compute between casts (mixed-precision graphs)
                        h_ = bb.emit(R.astype(a, "float16"))
                        form = rng.choice(["unary", "bin", "softmax", "reduce", "matmul", "conv", "norm"])
                        if form == "unary":
                            h2 = bb.emit(rng.choice([R.exp, R.sigmoid, R.tanh, R.nn.relu, R.sqrt, R.erf, R.negative])(
                                R.abs(h_) if rng.random() < 0.5 else h_))
                        elif form == "bin":
                            h2 = bb.emit(rng.choice([R.add, R.multiply, R.maximum, R.divide])(
                                h_, relax.const(np.float16(rng.choice([0.5, 2.0, -1.5])), "float16")))
                        elif form == "softmax":
                            h2 = bb.emit(R.nn.softmax(h_, axis=rng.choice([-1, 1])))
                        elif form == "reduce":
                            h2 = bb.emit(R.add(h_, rng.choice([R.sum, R.mean, R.max])(h_, axis=[3], keepdims=True)))
                        elif form == "matmul":
                            h2 = bb.emit(R.matmul(h_, relax.const(nrng.uniform(-1, 1, (H, H)).astype("float16")),
                                                  out_dtype=rng.choice(["float16", "float32", ""]) or None))
                        elif form == "conv":
                            h2 = bb.emit(R.nn.conv2d(h_, relax.const(nrng.uniform(-1, 1, (C, C, 3, 3)).astype("float16")),
                                                     padding=1, out_dtype=rng.choice(["float16", "float32"])))
                        else:
                            h2 = bb.emit(R.nn.layer_norm(h_, relax.const(np.ones(H, "float16")),
                                                         relax.const(np.zeros(H, "float16")), axes=[-1]))
                        v = R.astype(h2, "float32")
                    elif kind == "int_branch":  # integer tensors: casts, arithmetic, integer reductions
                        dt = rng.choice(["int32", "int64"])
                        i_ = bb.emit(R.astype(R.multiply(a, relax.const(8.0, "float32")), dt))
                        form = rng.choice(["arith", "div", "shift", "reduce", "cumsum", "unary", "clip"])
                        k_ = relax.const(rng.choice([2, 3, -3]), dt)
                        if form == "arith":
                            j_ = rng.choice([R.add, R.subtract, R.multiply, R.minimum])(i_, k_)
                        elif form == "div":
                            j_ = rng.choice([R.floor_divide, R.floor_mod, R.divide, R.mod])(i_, k_)
                        elif form == "shift":
                            j_ = rng.choice([R.left_shift, R.right_shift])(R.abs(i_), relax.const(1, dt))
                        elif form == "reduce":
                            j_ = R.add(i_, rng.choice([R.sum, R.max, R.min, R.prod])(i_, axis=[rng.choice([1, 2, 3])],
                                                                                       keepdims=True))
                        elif form == "cumsum":
                            j_ = R.cumsum(i_, axis=rng.choice([1, 3, -1]), exclusive=rng.random() < 0.5)
                        elif form == "unary":
                            j_ = rng.choice([R.abs, R.negative, R.sign, R.bitwise_not, R.square])(i_)
                        else:
                            j_ = R.clip(i_, -2, 3)
                        v = R.astype(bb.emit(j_), "float32")
                    elif kind == "bool_branch":  # comparisons, logic, where and casts of booleans
                        c1 = bb.emit(rng.choice([R.less, R.greater_equal, R.equal, R.not_equal, R.less_equal])(
                            a, rng.choice(pool) if rng.random() < 0.5 else relax.const(0.0, "float32")))
                        c2 = bb.emit(R.greater(a, relax.const(np.float32(rng.choice([-0.5, 0.25])))))
                        form = rng.choice(["and", "or", "xor", "not", "isnan"])
                        if form == "not":
                            c3 = bb.emit(R.logical_not(c1))
                        elif form == "isnan":
                            c3 = bb.emit(R.logical_or(c1, R.isnan(a)))
                        else:
                            c3 = bb.emit({"and": R.logical_and, "or": R.logical_or, "xor": R.logical_xor}[form](c1, c2))
                        if rng.random() < 0.5:
                            v = R.where(c3, a, rng.choice(pool))
                        else:
                            v = R.multiply(a, R.astype(c3, "float32"))
                    elif kind == "reduce_forms":  # every reduction with axes and keepdims combinations
                        f = rng.choice([R.sum, R.mean, R.max, R.min, R.prod, R.variance])
                        axes = rng.choice([None, [1], [-1], [0, 2], [1, 3], [2, 3], [1, 2, 3], [-2]])
                        keep = rng.random() < 0.5
                        r_ = bb.emit(f(a, axis=axes, keepdims=keep))
                        if keep:
                            v = R.subtract(a, r_)
                        else:
                            other.append(r_)
                            continue
                    elif kind == "arg_forms":
                        f = rng.choice([R.argmax, R.argmin])
                        other.append(bb.emit(f(a, axis=rng.choice([None, -1, 2, 0]), keepdims=rng.random() < 0.5)))
                        continue
                    elif kind == "scan":  # cumsum / cumprod: axes, exclusive, flattened
                        f = rng.choice([R.cumsum, R.cumprod])
                        ax = rng.choice([None, 1, 2, -1])
                        s_ = bb.emit(f(a, axis=ax, exclusive=rng.random() < 0.3))
                        if ax is None:
                            other.append(s_)
                            continue
                        v = R.multiply(s_, relax.const(0.5, "float32"))
                    elif kind == "flip":
                        v = R.flip(a, axis=rng.choice([1, 2, 3, -1]))
                    elif kind == "slice_forms":  # negative strides, clamped bounds, several axes
                        form = rng.choice(["neg", "clamp", "multi", "neg_begin"])
                        if form == "neg":
                            s_ = bb.emit(R.strided_slice(a, axes=[3], begin=[H - 1], end=[-H - 1], strides=[-1]))
                            v = R.add(a, s_)
                        elif form == "clamp":
                            other.append(bb.emit(R.strided_slice(a, axes=[2], begin=[1], end=[100])))
                            continue
                        elif form == "multi":
                            other.append(bb.emit(R.strided_slice(a, axes=[1, 3], begin=[0, 1], end=[C, H],
                                                                 strides=[2, 2])))
                            continue
                        else:  # (TVM 0.27's legalization rejects a negative axis: axes=[-1] fails)
                            other.append(bb.emit(R.strided_slice(a, axes=[3], begin=[-2], end=[0], strides=[-2])))
                            continue
                    elif kind == "split_forms":  # split by indices and by uneven sections, along other axes
                        ax = rng.choice([2, 3, -1])
                        spec = rng.choice([[2], [1, 4], 3, 2, [3]])
                        spec = [i for i in spec if i < H] or [1] if isinstance(spec, list) else spec
                        parts = bb.emit(R.split(a, spec, axis=ax))
                        n_parts = len(parts.ty.fields)
                        items = [bb.emit(relax.TupleGetItem(parts, i)) for i in range(n_parts)]
                        rng.shuffle(items)
                        if rng.random() < 0.3:
                            other.append(items[0])
                            continue
                        v = R.concat(items, axis=ax)
                    elif kind == "concat_forms":
                        ax = rng.choice([0, 2, -1])
                        other.append(bb.emit(R.concat([a, R.exp(rng.choice(pool))], axis=ax)))
                        continue
                    elif kind == "permute_forms":
                        perm = rng.choice([None, [0, 2, 3, 1], [0, 3, 1, 2], [1, 0, 2, 3]])
                        other.append(bb.emit(R.permute_dims(a, perm)))
                        continue
                    elif kind == "reshape_forms":
                        shape = rng.choice([(B, -1), (B, C, -1, H), (B, C * H, H), (-1,)])
                        other.append(bb.emit(R.reshape(a, shape)))
                        continue
                    elif kind == "squeeze_forms":
                        m_ = bb.emit(R.mean(a, axis=[2, 3], keepdims=True))
                        form = rng.choice(["axes", "neg", "none"])
                        if form == "axes":
                            sq = bb.emit(R.squeeze(m_, [2, 3]))
                        elif form == "neg":
                            sq = bb.emit(R.squeeze(m_, [-1]))
                        else:
                            sq = bb.emit(R.squeeze(m_))
                        other.append(sq)
                        if form == "axes":
                            v = R.add(a, R.expand_dims(sq, [2, 3]))
                        else:
                            continue
                    elif kind == "matmul_forms":  # 1-D operands, broadcast batches, transposed weights
                        form = rng.choice(["vec_r", "vec_l", "batch_b", "batch_3d", "two_d", "perm_w"])
                        if form == "vec_r":
                            other.append(bb.emit(R.matmul(a, const((H,)))))
                            continue
                        elif form == "vec_l":
                            other.append(bb.emit(R.matmul(const((H,)), a)))
                            continue
                        elif form == "batch_b":
                            v = R.matmul(a, const((C, H, H)))
                        elif form == "batch_3d":
                            v = R.matmul(const((1, H, H)), a)
                        elif form == "two_d":
                            f2 = bb.emit(R.reshape(a, (B, C * H * H)))
                            other.append(bb.emit(R.matmul(f2, const((C * H * H, 7)))))
                            continue
                        else:  # as the PyTorch frontend writes linear: permute_dims of the weight
                            w_ = bb.emit(R.permute_dims(const((H, H)), [1, 0]))
                            v = R.add(R.matmul(a, w_), const((H,)))
                    elif kind == "layout_nhwc":  # conv and pools in NHWC with OHWI / HWIO weights
                        t_ = bb.emit(R.permute_dims(a, [0, 2, 3, 1]))
                        form = rng.choice(["conv_ohwi", "conv_hwio", "max", "avg", "adaptive"])
                        if form == "conv_ohwi":
                            y_ = bb.emit(R.nn.conv2d(t_, const((C, 3, 3, C)), padding=1, data_layout="NHWC",
                                                     kernel_layout="OHWI"))
                        elif form == "conv_hwio":
                            y_ = bb.emit(R.nn.conv2d(t_, const((3, 3, C, C)), padding=1, data_layout="NHWC",
                                                     kernel_layout="HWIO"))
                        elif form == "max":
                            y_ = bb.emit(R.nn.max_pool2d(t_, pool_size=3, padding=1, layout="NHWC"))
                        elif form == "avg":
                            y_ = bb.emit(R.nn.avg_pool2d(t_, pool_size=3, padding=1, layout="NHWC"))
                        else:
                            y_ = bb.emit(R.nn.adaptive_avg_pool2d(t_, output_size=[H, H], layout="NHWC"))
                        v = R.permute_dims(y_, [0, 3, 1, 2])
                    elif kind == "norm_more":  # layer_norm / batch_norm attribute forms
                        form = rng.choice(["ln_nocenter", "ln_noscale", "ln_3axes", "bn_axis3", "bn_eval", "bn_tuple"])
                        if form == "ln_nocenter":
                            v = R.nn.layer_norm(a, const((H,)), const((H,)), axes=[-1], center=False)
                        elif form == "ln_noscale":
                            v = R.nn.layer_norm(a, const((H,)), const((H,)), axes=[3], scale=False, epsilon=1e-6)
                        elif form == "ln_3axes":
                            v = R.nn.layer_norm(a, const((C, H, H)), const((C, H, H)), axes=[1, 2, 3])
                        else:
                            ax, ch = (3, H) if form == "bn_axis3" else (1, C)
                            bn = bb.emit(R.nn.batch_norm(a, const((ch,)), const((ch,)), const((ch,)),
                                                         relax.const(nrng.uniform(0.5, 1, (ch,)).astype("float32")),
                                                         axis=ax, training=form != "bn_eval", epsilon=1e-3,
                                                         center=rng.random() < 0.7))
                            if form == "bn_tuple":
                                other.append(bb.emit(relax.TupleGetItem(bn, 1)))
                            v = relax.TupleGetItem(bn, 0)
                    elif kind == "index_ops":  # gather_nd, scatter_elements, scatter_nd, take forms
                        form = rng.choice(["gather_nd", "scatter_el", "scatter_nd", "take_2d", "take_neg", "take_clip"])
                        if form == "gather_nd":
                            idx = iconst(np.stack([np.zeros(3, "int64"), nrng.randint(0, C, 3)]), "int64")
                            other.append(bb.emit(R.gather_nd(a if B == 1 else R.permute_dims(a, [1, 0, 2, 3]), idx)))
                            continue
                        elif form == "scatter_el":
                            if B != 1:
                                continue
                            idx = iconst(nrng.randint(0, H, (1, C, H, 2)), "int64")
                            upd = const((1, C, H, 2))
                            v = R.scatter_elements(a, idx, upd, axis=3,
                                                   reduction=rng.choice(["update", "add", "mul", "max", "min"]))
                        elif form == "scatter_nd":
                            if B != 1:
                                continue
                            idx = iconst(np.array([[0, 1], [0, C - 1]]), "int64")
                            v = R.scatter_nd(a, idx, const((2, H, H)), reduction=rng.choice(["update", "add"]))
                        elif form == "take_2d":
                            idx = iconst(nrng.randint(0, H, (2, 3)), "int64")
                            other.append(bb.emit(R.take(a, idx, axis=3)))
                            continue
                        elif form == "take_neg":
                            v = R.take(a, relax.const(nrng.randint(0, H, (H,)).astype("int32")), axis=-1)
                        else:
                            v = R.take(a, iconst(nrng.randint(-H, 2 * H, (H,)), "int64"), axis=2,
                                       mode=rng.choice(["clip", "wrap"]))
                    elif kind == "einsum":
                        form = rng.choice(["bchw,wk->bchk", "bchw,bcwk->bchk", "bchw->bcwh", "bchw,c->bchw"])
                        if form == "bchw,wk->bchk":
                            v = R.einsum([a, const((H, H))], form)
                        elif form == "bchw,bcwk->bchk":
                            v = R.einsum([a, rng.choice(pool)], form)
                        elif form == "bchw->bcwh":
                            v = R.einsum([a], form)
                        else:
                            v = R.einsum([a, const((C,))], form)
                    elif kind == "const_more":  # constant subgraphs of other op kinds for FoldConstant
                        form = rng.choice(["reshape", "permute", "concat", "cast", "split", "int", "tile", "clip"])
                        if form == "reshape":
                            k = bb.emit(R.reshape(const((C * H,)), (C, 1, H)))
                        elif form == "permute":
                            k = bb.emit(R.permute_dims(const((H, C, 1)), [1, 2, 0]))
                        elif form == "concat":
                            k = bb.emit(R.concat([const((2, 1, H)), const((C - 2, 1, H))], axis=0))
                        elif form == "cast":
                            k = bb.emit(R.astype(R.astype(const((C, 1, H)), "float16"), "float32"))
                        elif form == "split":
                            sp = bb.emit(R.split(const((2 * C, 1, H)), 2, axis=0))
                            k = bb.emit(R.add(relax.TupleGetItem(sp, 0), relax.TupleGetItem(sp, 1)))
                        elif form == "int":
                            k = bb.emit(R.astype(R.add(iconst(nrng.randint(-5, 5, (C, 1, H)), "int64"),
                                                       relax.const(2, "int64")), "float32"))
                        elif form == "tile":
                            k = bb.emit(R.tile(const((C, 1, 2)), [1, 1, H // 2]) if H % 2 == 0 else R.tile(const((C, 1, 1)), [1, 1, H]))
                        else:
                            k = bb.emit(R.clip(const((C, 1, H)), -0.25, 0.25))
                        v = R.add(a, k)
                    elif kind == "unary_all":
                        f = rng.choice([R.cos, R.tan, R.sinh, R.cosh, R.asinh, R.ceil, R.trunc, R.sign,
                                        lambda x: R.asin(R.tanh(x)), lambda x: R.acos(R.tanh(x)),
                                        lambda x: R.atanh(R.multiply(R.tanh(x), relax.const(0.5, "float32"))),
                                        lambda x: R.acosh(R.add(R.abs(x), relax.const(1.0, "float32"))),
                                        lambda x: R.astype(R.isinf(x), "float32"), R.round, R.rsqrt])
                        v = f(a)
                    elif kind == "pad_forms":  # pads on every axis, constant values, asymmetric
                        mode = rng.choice(["constant", "replicate", "reflect"])
                        if mode == "constant":
                            pw = [0, rng.randint(0, 1), rng.randint(0, 2), 0, rng.randint(0, 2), 1, 0, rng.randint(0, 3)]
                        else:
                            pw = [0, 0, 0, 0, rng.randint(0, 2), rng.randint(0, 3), rng.randint(0, 3), 0]
                        other.append(bb.emit(R.nn.pad(a, pw, pad_mode=mode, pad_value=rng.choice([0.0, -1.0]))))
                        continue
                    elif kind == "tuple_forms":  # tuples built and taken apart, nested results
                        tup = bb.emit(relax.Tuple([a, R.exp(rng.choice(pool))]))
                        x0 = bb.emit(relax.TupleGetItem(tup, rng.choice([0, 1])))
                        v = R.add(x0, relax.TupleGetItem(tup, 1))
                    elif kind == "sort_forms":
                        form = rng.choice(["sort", "argsort", "topk"])
                        if form == "sort":
                            v = R.sort(a, axis=rng.choice([-1, 1]), descending=rng.random() < 0.5)
                        elif form == "argsort":
                            other.append(bb.emit(R.argsort(a, axis=-1, descending=rng.random() < 0.5,
                                                           dtype=rng.choice(["int32", "int64"]))))
                            continue
                        else:
                            tk = bb.emit(R.topk(a, k=2, axis=-1, ret_type="both", largest=rng.random() < 0.5))
                            other.append(bb.emit(relax.TupleGetItem(tk, 0)))
                            continue
                    elif kind == "activation_ops":
                        v = rng.choice([R.nn.gelu, R.nn.gelu_tanh, R.nn.silu, R.nn.selu,
                                        lambda x: R.where(R.isfinite(x), x, relax.const(0.0, "float32"))])(a)
                    # ---- run 11: the Relax-only operators declared in session 12
                    elif kind == "norm_groups":
                        gamma, beta = const((C,)), const((C,))
                        if rng.random() < 0.5:
                            v = R.nn.group_norm(a, gamma, beta, num_groups=rng.choice([g for g in (1, 2, C) if C % g == 0]),
                                                channel_axis=1, axes=[2, 3], epsilon=rng.choice([1e-5, 1e-3]))
                        else:
                            v = R.nn.instance_norm(a, gamma, beta, channel_axis=1, axes=[2, 3])
                    elif kind == "math_relax":
                        form = rng.choice(["softplus", "atan2", "log_add_exp", "std", "median"])
                        if form == "softplus":
                            v = R.nn.softplus(a, beta=rng.choice([1.0, 2.0]), threshold=rng.choice([20.0, 1.0]))
                        elif form in ("atan2", "log_add_exp"):
                            v = getattr(R, form)(a, rng.choice(pool) if rng.random() < 0.6 else const((H,)))
                        elif form == "std":
                            v = R.subtract(a, R.std(a, axis=rng.choice([[1], [2, 3], [-1]]), keepdims=True))
                        else:
                            other.append(bb.emit(R.median(a, axis=rng.choice([1, -1, 2]), keepdims=rng.random() < 0.5)))
                            continue
                    elif kind == "loss":
                        if rng.random() < 0.5:
                            other.append(bb.emit(R.nn.cross_entropy_with_logits(a, R.nn.softmax(rng.choice(pool), axis=1))))
                        else:
                            targets = bb.emit(R.argmax(a, axis=1))
                            class_weights = const((C,)) if rng.random() < 0.5 else None
                            other.append(bb.emit(R.nn.nll_loss(R.nn.log_softmax(a, axis=1), targets, class_weights,
                                                               reduction=rng.choice(["mean", "sum", "none"]))))
                        continue
                    elif kind == "conv1d_forms":  # the 1-D window ops over the flattened plane
                        r_ = bb.emit(R.reshape(a, (B, C, H * H)))
                        form = rng.choice(["conv", "conv_t", "max", "avg", "adaptive"])
                        if form == "conv":
                            y_ = R.nn.conv1d(r_, const((C, C, 3)), strides=rng.choice([1, 2]), padding=rng.choice([1, 2]),
                                             dilation=rng.choice([1, 2]))
                        elif form == "conv_t":
                            y_ = R.nn.conv1d_transpose(r_, const((C, C, 3)), strides=rng.choice([1, 2]), padding=1)
                        elif form == "max":
                            y_ = R.nn.max_pool1d(r_, pool_size=3, strides=rng.choice([1, 2]), padding=1,
                                                 ceil_mode=rng.random() < 0.5)
                        elif form == "avg":
                            y_ = R.nn.avg_pool1d(r_, pool_size=rng.choice([2, 3]), strides=2, padding=[1, 0],
                                                 count_include_pad=rng.random() < 0.5)
                        else:
                            y_ = R.nn.adaptive_avg_pool1d(r_, output_size=rng.choice([1, 5, H]))
                        other.append(bb.emit(y_))
                        continue
                    elif kind == "tri_forms":
                        form = rng.choice(["tril", "triu", "outer", "eye", "eye_like"])
                        if form in ("tril", "triu"):
                            v = getattr(R, form)(a, rng.choice([0, 1, -1]))
                        elif form == "outer":
                            v = R.add(a, R.outer(const((H,)), R.max(a, axis=[0, 1, 2])))
                        elif form == "eye":
                            v = R.add(a, R.eye(H, H, k=rng.choice([0, 1, -2])))
                        else:
                            v = R.multiply(a, R.eye_like(const((H, H)), k=rng.choice([0, 1])))
                    elif kind == "creation_relax":
                        if rng.random() < 0.5:
                            v = R.multiply(a, R.hamming_window(H, rng.choice([0, 1]), 0.54, 0.46, "float32"))
                        else:
                            mg = bb.emit(R.meshgrid([const((H,)), const((H,))], indexing=rng.choice(["ij", "xy"])))
                            v = R.add(a, relax.TupleGetItem(mg, rng.choice([0, 1])))
                    elif kind == "shape_relax":
                        form = rng.choice(["flatten", "collapse_to", "collapse_like", "layout", "size"])
                        if form == "flatten":
                            y_ = R.flatten(a)
                        elif form == "collapse_to":
                            y_ = R.collapse_sum_to(a, (C, 1, H))
                        elif form == "collapse_like":
                            y_ = R.collapse_sum_like(a, const((1, H)))
                        elif form == "layout":
                            y_ = R.layout_transform(a, lambda n_, c_, h_, w_: (n_, h_, w_, c_))
                        else:
                            y_ = R.size(a)
                        other.append(bb.emit(y_))
                        continue
                    elif kind == "index_relax":
                        form = rng.choice(["index_tensor", "reverse_seq", "slice_scatter", "index_put", "bucketize"])
                        if form == "index_tensor":
                            other.append(bb.emit(R.index_tensor(a, [iconst(np.zeros(3), "int64"),
                                                                    iconst(nrng.randint(0, C, 3), "int64")])))
                            continue
                        elif form == "reverse_seq":
                            v = R.reverse_sequence(a, iconst(nrng.randint(1, H + 1, C), "int64"), seq_axis=3, batch_axis=1)
                        elif form == "slice_scatter":  # forms whose PrimFunc reads src in bounds (others stay calls)
                            step = rng.choice([1, 2])
                            start = rng.randint(1, H - 1) if step == 1 else 1 - H % 2
                            src = bb.emit(R.strided_slice(rng.choice(pool), axes=[3], begin=[start], end=[H], strides=[step]))
                            v = R.slice_scatter(a, src, start, H, step, axis=3)
                        elif form == "index_put":
                            if B != 1:
                                continue
                            idx = tuple(iconst(nrng.randint(0, s, 3), "int64") for s in (1, C, H, H))
                            v = R.index_put(a, relax.Tuple(list(idx)), const((3,)), accumulate=rng.random() < 0.5)
                        else:
                            bounds = relax.const(np.sort(nrng.uniform(-1, 1, 5)).astype("float32"))
                            v = R.astype(R.bucketize(a, bounds, out_int32=rng.random() < 0.5, right=rng.random() < 0.5),
                                         "float32")
                    elif kind == "quant":
                        ax = rng.choice([1, -1])
                        n_ = C if ax == 1 else H
                        scale = relax.const(nrng.uniform(0.01, 0.1, n_).astype("float32"))
                        zp = relax.const(nrng.randint(-3, 3, n_).astype("int8"))
                        q_ = bb.emit(R.quantize(a, scale, zp, axis=ax, out_dtype=rng.choice(["int8", "uint8"])))
                        if q_.ty.dtype == "uint8":
                            zp = relax.const(nrng.randint(0, 3, n_).astype("uint8"))
                        v = R.dequantize(q_, scale, zp, axis=ax)
                    elif kind == "image_relax":
                        if rng.random() < 0.5:
                            r_ = bb.emit(R.reshape(a, (B, 1, C, H, H)))
                            y_ = R.image.resize3d(r_, (C, 2 * H, H), method=rng.choice(["linear", "nearest_neighbor"]),
                                                  coordinate_transformation_mode=rng.choice(["half_pixel", "align_corners"]))
                        else:
                            y_ = R.image.affine_grid(const((2, 2, 3)), (H, H + 1), align_corners=rng.random() < 0.5)
                        other.append(bb.emit(y_))
                        continue
                    # ---- run 12 (session 13): the classic vision ops, as detection heads use them
                    elif kind in ("vision_valid_counts", "vision_nms"):
                        form = rng.choice(["features", "features", "sigmoid", "const"])
                        batched = form != "const"  # the detections' batch is the features' B
                        if form == "const":  # a constant detection list: FoldConstant runs the ops
                            K = rng.randint(5, 7)
                            d_ = const((1 if B != 1 or rng.random() < 0.5 else 2, rng.randint(2, 8), K))
                        else:  # rows of the feature map as (B, C * H, H) detections
                            K = H
                            d_ = bb.emit(R.reshape(a, (B, C * H, H)))
                            if form == "sigmoid":
                                d_ = bb.emit(R.sigmoid(d_))
                            if rng.random() < 0.15:  # float16 detections (TVM legalizes float data of any width)
                                d_ = bb.emit(R.astype(d_, "float16"))
                        score_index, id_index = rng.randint(0, K - 1), rng.choice([-1, rng.randint(0, K - 1)])
                        gvc = bb.emit(R.vision.get_valid_counts(d_, score_threshold=rng.choice([0.0, 0.1, 0.25, 0.5, -0.5]),
                                                                id_index=id_index, score_index=score_index))
                        counts = bb.emit(relax.TupleGetItem(gvc, 0))
                        rows = bb.emit(relax.TupleGetItem(gvc, 1))
                        if kind == "vision_valid_counts":
                            use = rng.choice(["scale", "rows", "indices"])
                            if use == "scale":  # the count of valid rows scales the features
                                c_ = bb.emit(R.astype(counts, "float32"))
                                v = R.multiply(a, R.reshape(c_, (B, 1, 1, 1)) if batched else R.sum(c_))
                            elif use == "rows":
                                other.append(rows)
                                continue
                            else:
                                idx = bb.emit(relax.TupleGetItem(gvc, 2))
                                other.append(bb.emit(R.greater_equal(idx, relax.const(0, "int32"))))
                                continue
                        else:
                            soft = rng.random() < 0.35
                            ret_idx = rng.random() < 0.6
                            same = rng.random() < 0.7  # the NMS reads the columns get_valid_counts read
                            nms = bb.emit(R.vision.non_max_suppression(
                                rows, counts, bb.emit(relax.TupleGetItem(gvc, 2)),
                                max_output_size=rng.choice([-1, -1, 0, 1, 2, 5]),
                                iou_threshold=rng.choice([0.3, 0.45, 0.5, 0.7, 1.0]),
                                force_suppress=rng.random() < 0.3, top_k=rng.choice([-1, -1, 0, 1, 3, 10]),
                                coord_start=rng.randint(0, K - 4),
                                score_index=score_index if same else rng.randint(0, K - 1),
                                id_index=id_index if same else rng.randint(-1, K - 1),
                                return_indices=ret_idx, invalid_to_bottom=rng.random() < 0.5,
                                soft_nms_sigma=rng.choice([0.5, 1.0, 0.25]) if soft else 0.0,
                                score_threshold=rng.choice([0.0, 0.1, 0.3])))
                            if not ret_idx:  # the suppressed detections: their boxes, scores
                                box = bb.emit(R.strided_slice(nms, axes=[2], begin=[K - 4], end=[K]))
                                other.append(bb.emit(rng.choice([R.nn.relu, lambda x: R.max(x, axis=[1])])(box)))
                                continue
                            kept = bb.emit(relax.TupleGetItem(nms, 2 if soft else 1))  # (batch, 1) int32
                            picked = bb.emit(relax.TupleGetItem(nms, 1 if soft else 0))  # (batch, N) int32
                            use = rng.choice(["scale", "picked", "soft_data"] if soft else ["scale", "picked"])
                            if use == "scale" and batched:  # the number of kept boxes scales the features
                                v = R.multiply(a, R.reshape(R.astype(kept, "float32"), (B, 1, 1, 1)))
                            elif use == "soft_data":
                                other.append(bb.emit(R.nn.relu(relax.TupleGetItem(nms, 0))))
                                continue
                            else:  # the kept rows' indices clamped at 0, gathered from the first batch's rows
                                first_rows = bb.emit(R.squeeze(R.strided_slice(rows, axes=[0], begin=[0], end=[1]), [0]))
                                sel = bb.emit(R.maximum(picked, relax.const(0, "int32")))
                                other.append(bb.emit(R.take(first_rows, sel, axis=0)))
                                continue
                    elif kind == "vision_multibox":  # an SSD head: class and box convolutions, anchors, decoding
                        ncls, N = rng.choice([2, 3, 4]), H * H
                        if rng.random() < 0.25:  # constant predictions: FoldConstant decodes them
                            cls_, loc_ = const((1, ncls, N)), const((1, 4 * N))
                        else:
                            cc = bb.emit(R.nn.conv2d(a, const((ncls, C, 3, 3)), padding=1))
                            cls_ = bb.emit(R.permute_dims(R.reshape(R.permute_dims(cc, [0, 2, 3, 1]), (B, N, ncls)), [0, 2, 1]))
                            lc = bb.emit(R.nn.conv2d(a, const((4, C, 1, 1))))
                            loc_ = bb.emit(R.reshape(R.permute_dims(lc, [0, 2, 3, 1]), (B, 4 * N)))
                            if rng.random() < 0.3:
                                cls_ = bb.emit(R.sigmoid(cls_))
                        centres = (np.arange(H, dtype="float32") + 0.5) / H
                        cy, cx = np.meshgrid(centres, centres, indexing="ij")
                        half = nrng.uniform(0.05, 0.3, (2, H, H)).astype("float32")
                        anchors = np.stack([cx - half[0], cy - half[1], cx + half[0], cy + half[1]], -1).reshape(1, N, 4)
                        variances = rng.choice([(0.1, 0.1, 0.2, 0.2), (1.0, 1.0, 1.0, 1.0),
                                                tuple(rng.choice([0.1, 0.2, 0.5, 1.0]) for _ in range(4))])
                        dt = "float16" if rng.random() < 0.15 else "float32"  # a float16 head, anchors too
                        if dt == "float16":
                            cls_, loc_ = bb.emit(R.astype(cls_, dt)), bb.emit(R.astype(loc_, dt))
                        mb = bb.emit(R.vision.multibox_transform_loc(
                            cls_, loc_, relax.const(anchors.astype(dt)), clip=rng.random() < 0.5,
                            threshold=rng.choice([0.0, 0.0, 0.01, 0.3]), variances=variances,
                            keep_background=rng.random() < 0.5, apply_softmax=rng.random() < 0.7))
                        boxes = bb.emit(relax.TupleGetItem(mb, 0))
                        scores = bb.emit(relax.TupleGetItem(mb, 1))
                        use = rng.choice(["detections", "detections", "boxes", "scores"])
                        if use == "boxes":
                            other.append(boxes)
                        elif use == "scores":
                            other.append(bb.emit(R.max(scores, axis=[1])))
                        else:  # (class id, score, box) rows, then get_valid_counts and NMS as the SSD frontends write them
                            best = bb.emit(R.max(scores, axis=[1], keepdims=True))
                            ids = bb.emit(R.astype(R.argmax(scores, axis=1, keepdims=True), dt))
                            det = bb.emit(R.concat([R.permute_dims(ids, [0, 2, 1]), R.permute_dims(best, [0, 2, 1]), boxes],
                                                   axis=2))
                            gvc = bb.emit(R.vision.get_valid_counts(det, score_threshold=rng.choice([0.0, 0.01, 0.2]),
                                                                    id_index=0, score_index=1))
                            nms = bb.emit(R.vision.non_max_suppression(
                                relax.TupleGetItem(gvc, 1), relax.TupleGetItem(gvc, 0), relax.TupleGetItem(gvc, 2),
                                max_output_size=rng.choice([-1, 10]), iou_threshold=rng.choice([0.45, 0.5, 0.6]),
                                force_suppress=rng.random() < 0.3, top_k=rng.choice([-1, 20, 5]),
                                return_indices=False, invalid_to_bottom=rng.random() < 0.5))
                            other.append(nms)
                        continue
                    elif kind == "power_scalar":
                        v = rng.choice([lambda x: R.power(R.abs(x), relax.const(rng.choice([0.5, 2.0, 3.0]), "float32")),
                                        lambda x: R.floor_mod(x, relax.const(0.75, "float32")),
                                        lambda x: R.mod(x, relax.const(-0.5, "float32")),
                                        lambda x: R.floor_divide(x, relax.const(0.3, "float32"))])(a)
                    direct = step == n - 1 and rng.random() < 0.5
                    pool.append((bb.emit_output if direct else bb.emit)(v))
                outs = [pool[-1]]
                for v in rng.sample(pool[1:-1], max(0, min(len(pool) - 2, rng.randint(0, 2)))):
                    if v not in outs:
                        outs.append(v)
                for extra in (small, flat, other):
                    if extra and rng.random() < 0.5:
                        outs.append(extra[-1])
                outs = [o if not isinstance(o, relax.DataflowVar) else bb.emit_output(o) for o in outs]
            tail_rng = random.Random(seed * 31 + fi)  # run 8: bindings after the dataflow block
            if tail_rng.random() < 0.2 and isinstance(outs[0].ty, relax.TensorType) and outs[0].ty.dtype == "float32":
                first = bb.emit(tail_rng.choice([R.nn.relu, R.exp, lambda x: R.add(x, x)])(outs[0]))
                outs[0] = bb.emit(R.multiply(first, relax.const(0.5, "float32"))) if tail_rng.random() < 0.5 else first
            bb.emit_func_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        gv = bb.get().get_global_var(name)
        mod[name] = bb.get()[gv]
    return mod


SEQ_KINDS = {
    "linear": 4, "gelu_op": 2, "gelu_erf": 2, "silu": 1, "layer_norm": 2, "rms_norm": 1, "attention": 2, "residual": 2,
    "embed": 1, "first_token": 1, "scan": 1, "concat_seq": 1, "split_last": 1, "f16": 1, "softmax": 1,
    "mean_pool": 1, "clip_where": 1, "detect": 1,
}


def random_sequence_module(seed):
    """run 8: a (batch, sequence, features) model as the PyTorch / ONNX frontends write
    transformer layers (linear as matmul of a permuted weight plus bias, gelu through erf,
    attention over heads, norms), the batch and sequence lengths symbolic one module in two."""
    rng = random.Random(seed)
    nrng = np.random.RandomState(seed)
    D, HEADS, V = 8, 2, 11
    if seed % 2:
        N, M = tvm.tirx.Var("n", "int64"), tvm.tirx.Var("m", "int64")
    else:
        N, M = rng.choice([1, 2]), rng.choice([3, 5])
    def const(shape, dtype="float32"):
        return relax.const(nrng.uniform(-1, 1, shape).astype(dtype), dtype)
    def scalar(value, dtype="float32"):
        return relax.const(value, dtype)
    kinds, weights = zip(*((k, w) for k, w in SEQ_KINDS.items() if k not in EXCLUDED and (not ONLY or k in ONLY)))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((N, M, D), "float32"))
    ids = relax.Var("ids", relax.TensorType((N, M), rng.choice(["int64", "int32"])))
    params = [x, ids] if rng.random() < 0.4 else [x]
    with bb.function("main", params):
        with bb.dataflow():
            pool, other = [x], []
            if len(params) == 2:
                pool.append(bb.emit(R.take(const((V, D)), ids, axis=0)))
            def linear(h, out=D):
                w_ = bb.emit(R.permute_dims(const((out, D)), [1, 0]))
                mm = bb.emit(R.matmul(h, w_))
                return bb.emit(R.add(mm, const((out,)))) if rng.random() < 0.8 else mm
            for step in range(rng.randint(3, 10)):
                kind = rng.choices(kinds, weights)[0]
                a = rng.choice(pool)
                if kind == "linear":
                    v = linear(a)
                elif kind == "gelu_op":  # the activations as ops (PyTorch's F.gelu / F.silu)
                    v = bb.emit(rng.choice([R.nn.gelu, R.nn.gelu_tanh, R.nn.silu])(a))
                elif kind == "gelu_erf":
                    e_ = bb.emit(R.erf(R.multiply(a, scalar(0.7071067811865476))))
                    v = bb.emit(R.multiply(R.multiply(a, scalar(0.5)), R.add(scalar(1.0), e_)))
                elif kind == "silu":
                    v = bb.emit(R.multiply(a, R.sigmoid(a)))
                elif kind == "layer_norm":
                    v = bb.emit(R.nn.layer_norm(a, const((D,)), const((D,)), axes=[-1], epsilon=1e-5))
                elif kind == "rms_norm" and rng.random() < 0.5:  # the op, as PyTorch's RMSNorm imports
                    v = bb.emit(R.nn.rms_norm(a, const((D,)), axes=[-1], epsilon=rng.choice([1e-5, 1e-6])))
                elif kind == "rms_norm":
                    ms = bb.emit(R.mean(R.multiply(a, a), axis=[-1], keepdims=True))
                    r_ = bb.emit(R.rsqrt(R.add(ms, scalar(1e-6))))
                    v = bb.emit(R.multiply(R.multiply(a, r_), const((D,))))
                elif kind == "attention" and rng.random() < 0.5:  # the fused op (BSNH), a mask one time in two
                    q, k, val = (bb.emit(R.reshape(linear(a), (N, M, HEADS, D // HEADS))) for _ in range(3))
                    mask = rng.choice([None, "TopLeft", "BottomRight"])
                    v = bb.emit(R.reshape(R.nn.attention(q, k, val, causal_mask=mask), (N, M, D)))
                elif kind == "attention":
                    hd = D // HEADS
                    def heads(h):
                        r_ = bb.emit(R.reshape(h, (N, M, HEADS, hd)))
                        return bb.emit(R.permute_dims(r_, [0, 2, 1, 3]))
                    q, k, val = heads(linear(a)), heads(linear(a)), heads(linear(a))
                    kt = bb.emit(R.permute_dims(k, [0, 1, 3, 2]))
                    s_ = bb.emit(R.divide(R.matmul(q, kt), scalar(float(np.sqrt(hd)))))
                    p_ = bb.emit(R.nn.softmax(s_, axis=-1))
                    o_ = bb.emit(R.permute_dims(R.matmul(p_, val), [0, 2, 1, 3]))
                    v = bb.emit(R.reshape(o_, (N, M, D)))
                elif kind == "residual":
                    v = bb.emit(R.add(a, rng.choice(pool)))
                elif kind == "embed":
                    v = bb.emit(R.add(a, R.take(const((V, D)), R.astype(R.argmax(a, axis=-1), "int32"), axis=0)))
                elif kind == "first_token":  # x[:, 0] and the sequence's last position
                    start, stop = rng.choice([(0, 1), (-1, 2**63 - 1), (1, 2**31 - 1)])
                    sl = bb.emit(R.strided_slice(a, axes=[1], begin=[start], end=[stop]))
                    other.append(bb.emit(R.squeeze(sl, [1]) if start != 1 and rng.random() < 0.5 else sl))
                    continue
                elif kind == "scan":
                    v = bb.emit(R.cumsum(a, axis=1, exclusive=rng.random() < 0.5))
                elif kind == "concat_seq":
                    other.append(bb.emit(R.concat([a, rng.choice(pool)], axis=1)))
                    continue
                elif kind == "split_last":
                    parts = bb.emit(R.split(a, 2, axis=-1))
                    g_ = bb.emit(relax.TupleGetItem(parts, 1))
                    v = bb.emit(R.concat([bb.emit(relax.TupleGetItem(parts, 0)), bb.emit(R.sigmoid(g_))], axis=-1))
                elif kind == "f16":
                    h_ = bb.emit(R.astype(a, "float16"))
                    h2 = bb.emit(R.matmul(h_, const((D, D), "float16"), out_dtype=rng.choice(["float16", "float32"])))
                    v = bb.emit(R.astype(h2, "float32") if h2.ty.dtype == "float16" else h2)
                elif kind == "softmax":
                    v = bb.emit((R.nn.softmax if rng.random() < 0.5 else R.nn.log_softmax)(a, axis=rng.choice([-1, 1])))
                elif kind == "detect":  # (batch, anchors, 8) rows as detections: n, m symbolic one module in two
                    if rng.random() < 0.5:
                        si, ii = rng.randint(0, D - 1), rng.choice([-1, rng.randint(0, D - 1)])
                        gvc = bb.emit(R.vision.get_valid_counts(R.sigmoid(a), score_threshold=rng.choice([0.0, 0.3, 0.5]),
                                                                id_index=ii, score_index=si))
                        soft = rng.random() < 0.4
                        nms = bb.emit(R.vision.non_max_suppression(
                            bb.emit(relax.TupleGetItem(gvc, 1)), bb.emit(relax.TupleGetItem(gvc, 0)),
                            bb.emit(relax.TupleGetItem(gvc, 2)), max_output_size=rng.choice([-1, 2]),
                            iou_threshold=rng.choice([0.3, 0.5]), force_suppress=rng.random() < 0.3,
                            top_k=rng.choice([-1, 3]), coord_start=rng.randint(0, D - 4), score_index=si, id_index=ii,
                            return_indices=rng.random() < 0.5, invalid_to_bottom=rng.random() < 0.5,
                            soft_nms_sigma=0.5 if soft else 0.0, score_threshold=rng.choice([0.0, 0.2])))
                        if isinstance(nms.ty, relax.TensorType):  # the detections, suppressed rows -1
                            v = bb.emit(R.multiply(a, nms))
                        else:  # the kept count scales the rows
                            kept = bb.emit(relax.TupleGetItem(nms, len(nms.ty.fields) - 1))
                            v = bb.emit(R.multiply(a, R.reshape(R.astype(kept, "float32"), (N, 1, 1))))
                    else:  # class scores and box encodings from the features, anchors from their batch mean
                        ncls = rng.choice([2, 3])
                        cls_ = bb.emit(R.permute_dims(R.strided_slice(a, axes=[2], begin=[4], end=[4 + ncls]), [0, 2, 1]))
                        loc_ = bb.emit(R.reshape(R.strided_slice(a, axes=[2], begin=[0], end=[4]), (N, M * 4)))
                        m_ = bb.emit(R.sigmoid(R.mean(R.strided_slice(a, axes=[2], begin=[0], end=[4]), axis=[0], keepdims=True)))
                        anchors = bb.emit(R.concat([R.strided_slice(m_, axes=[2], begin=[0], end=[2]),
                                                    R.add(R.strided_slice(m_, axes=[2], begin=[2], end=[4]), scalar(1.0))],
                                                   axis=2))
                        mb = bb.emit(R.vision.multibox_transform_loc(
                            cls_, loc_, anchors, clip=rng.random() < 0.5, threshold=rng.choice([0.0, 0.2]),
                            variances=rng.choice([(0.1, 0.1, 0.2, 0.2), (1.0, 1.0, 1.0, 1.0)]),
                            keep_background=rng.random() < 0.5, apply_softmax=rng.random() < 0.7))
                        other.append(bb.emit(relax.TupleGetItem(mb, rng.choice([0, 1]))))
                        continue
                elif kind == "mean_pool":
                    other.append(bb.emit(R.mean(a, axis=[1], keepdims=rng.random() < 0.5)))
                    continue
                else:
                    c_ = bb.emit(R.clip(a, rng.choice([-1.0, 0.0]), 6.0))
                    v = bb.emit(R.where(R.less(a, scalar(0.0)), c_, a))
                pool.append(v)
            outs = [pool[-1]] + ([other[-1]] if other and rng.random() < 0.6 else [])
            outs = [bb.emit_output(o) for o in outs]
        bb.emit_func_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
    return bb.get()


STAGES = [relax.transform.LegalizeOps, relax.transform.AnnotateTIROpPattern, relax.transform.FoldConstant,
          relax.transform.FuseOps, relax.transform.FuseTIR]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
EXCLUDED = set(filter(None, sys.argv[4].split(","))) if len(sys.argv) > 4 else set()
ONLY = set(filter(None, sys.argv[5].split(","))) if len(sys.argv) > 5 else set()  # empty: every kind
if ONLY - set(KINDS) - set(SEQ_KINDS):
    sys.exit(f"unknown generator kinds: {sorted(ONLY - set(KINDS) - set(SEQ_KINDS))}")
# with ONLY, a sequence module only if some kind kept is a sequence kind (one in five)
SEQUENCE_MODULES = not ONLY or bool(ONLY & set(SEQ_KINDS))
for seed in range(first, last):
    stem = os.path.join(out, str(seed))
    make = random_sequence_module if seed % 5 == 4 and SEQUENCE_MODULES else random_module
    write(stem + ".in.py", make(seed).script(show_meta=True))
    text = open(stem + ".in.py").read()
    cur = tvm.script.from_source(text)
    failed = False
    for k, stage in enumerate(STAGES, 1):
        try:
            cur = stage()(cur)
        except Exception as e:
            write(f"{stem}.{k}.error", f"{type(e).__name__}: {e}")
            failed = True
            break
        write(f"{stem}.{k}.py", cur.script())
        write(f"{stem}.{k}.meta.py", cur.script(show_meta=True))
    if not failed:
        whole = relax.get_pipeline("zero")(tvm.script.from_source(text))
        try:
            tvm.ir.assert_structural_equal(whole, cur)
        except ValueError:
            write(stem + ".zero_differs", whole.script())
'''

# TVM parses our final printout (with metadata) and compares it with its own result.
TVM_PARSE_BACK = r'''
import sys, tvm
bad = []
for stem in sys.argv[1:]:
    ours = tvm.script.from_source(open(stem + ".ours.py").read())
    theirs = tvm.script.from_source(open(stem + ".5.meta.py").read())
    try:
        tvm.ir.assert_structural_equal(ours, theirs)
    except ValueError:
        bad.append(stem)
print("\n".join(bad))
'''


def run_tvm_side(tvm_python: str, outdir: str, first: int, last: int, excluded=(), timeout: int = 3600,
                 only=()) -> None:
    """Generate modules [first, last) in TVM (without the op kinds `excluded`; with `only`,
    from those kinds alone) and print each stage of its zero pipeline."""
    runner = os.path.join(outdir, "tvm_zero_pipeline.py")
    with open(runner, "w") as f:
        f.write(TVM_GENERATOR)
    proc = subprocess.run([tvm_python, runner, outdir, str(first), str(last), ",".join(excluded), ",".join(only)],
                          capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"TVM side failed:\n{proc.stderr[-3000:]}")


def tvm_parse_back(tvm_python: str, outdir: str, stems: list[str]) -> list[str]:
    """The stems whose `.ours.py` TVM parses to something not equal to its own result."""
    if not stems:
        return []
    runner = os.path.join(outdir, "tvm_parse_back.py")
    with open(runner, "w") as f:
        f.write(TVM_PARSE_BACK)
    proc = subprocess.run([tvm_python, runner, *stems], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"TVM could not parse our output:\n{proc.stderr[-3000:]}")
    return [line for line in proc.stdout.splitlines() if line]


@dataclasses.dataclass
class Outcome:
    seed: int
    status: str                 # "match", "differs", "our_error", "tvm_error", "both_error"
    stage: str | None = None    # the first stage that differs / fails
    isolated: bool | None = None  # does that stage alone, on TVM's previous printout, differ too?
    detail: str = ""
    ours_final: str | None = None  # our final printout with metadata (for TVM to parse back)


def run_stage(stage: str, mod):
    with PassContext():
        return get_pass(stage)()(mod)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def first_difference(ours: str, theirs: str) -> str:
    """The first line where two printouts differ, with the function it is in."""
    a, b = ours.splitlines(), theirs.splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            where = next((ln.strip() for ln in reversed(b[:i]) if ln.lstrip().startswith("def ")), "")
            return f"line {i + 1} in {where[:100]}\n  ours: {x.strip()}\n  TVM:  {y.strip()}"
    return f"lengths differ: ours {len(a)} lines, TVM {len(b)} lines"


_NOT_OPS = {"R.Tensor", "R.Tuple", "R.Shape", "R.Object", "R.Prim", "R.call_tir", "R.shape", "R.const", "R.output",
            "R.dataflow", "R.tuple", "R.func_attr", "R.function", "R.prim_value", "R.match_cast"}


def _relax_ops(text: str) -> set[str]:
    """The Relax operators a printout calls (R.nn.conv2d, ...)."""
    import re

    return set(re.findall(r"\bR\.[a-z_][a-z_0-9.]*(?=\()", text)) - _NOT_OPS


def constant_difference(ours, theirs) -> str:
    """Which constants differ between two modules that print the same (their data)."""
    import numpy as np

    from irtool.ir import relax as rx
    from irtool.ir.relax_visitor import ExprVisitor

    def constants(mod) -> list:
        found = []

        class Collect(ExprVisitor):
            def visit_constant_(self, c) -> None:
                found.append(c.data)

        for fn in mod.functions.values():
            if isinstance(fn, rx.Function):
                Collect().visit_expr(fn)
        return found

    for index, (x, y) in enumerate(zip(constants(ours), constants(theirs))):
        if x is None or y is None or x.dtype != y.dtype or x.shape != y.shape:
            return f"constant {index}: {getattr(x, 'shape', None)} vs {getattr(y, 'shape', None)}"
        if x.tobytes() != y.tobytes():
            ulps = 0
            if x.dtype.kind == "f":
                ints = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
                ulps = int(np.max(np.abs(x.view(ints).astype(np.int64) - y.view(ints).astype(np.int64))))
            return f"constant {index} {x.dtype}{list(x.shape)}: data differs by up to {ulps} ULP"
    return "same text and constants, not structurally equal"


def equal_to_parsed(ours, theirs_parsed) -> bool:
    """Is our in-memory module structurally equal to TVM's module as parsed from its printout?
    Structural equality (TVM's and ours) is DAG-aware: a node a pass shares between two
    bindings (legalized `R.index_tensor` takes each index from one tuple of constants) is not
    equal to the two copies a parse of the printout makes, so when the first comparison fails
    ours is compared as parsed from its own printout too, as TVM's side is. TVM's own
    LegalizeOps result is not equal to its reparse either (checked on such a module)."""
    if structural_equal(ours, theirs_parsed):
        return True
    text = to_text(ours)
    return structural_equal(printed_domains(parse(text, "<ours>")), theirs_parsed)


def compare_seed(outdir: str, seed: int) -> Outcome:
    """Our stages on `{seed}.in.py` against TVM's printouts; the first differing stage."""
    stem = os.path.join(outdir, str(seed))
    mod = parse(_read(stem + ".in.py"), stem + ".in.py")
    for k, stage in enumerate(STAGES, 1):
        tvm_error = os.path.exists(f"{stem}.{k}.error")
        try:
            ours = run_stage(stage, mod)
        except DiagnosticError as e:
            if tvm_error:
                return Outcome(seed, "both_error", stage, detail=str(e).splitlines()[0])
            return Outcome(seed, "our_error", stage, _isolated(stem, k, stage), str(e).splitlines()[0])
        if tvm_error:
            return Outcome(seed, "tvm_error", stage, detail=_read(f"{stem}.{k}.error").splitlines()[0])
        text = to_text(ours, show_meta_data=False).rstrip("\n")
        theirs_text = _read(f"{stem}.{k}.py").rstrip("\n")
        # TVM numbers an extern PrimFunc's elem_offset vars in an order that varies from run to run
        same = text == theirs_text or canonical_elem_offsets(text) == canonical_elem_offsets(theirs_text)
        if same:
            # TVM printed its in-memory module: nested sblock domains as printed (printed_domains)
            theirs = printed_domains(parse(_read(f"{stem}.{k}.meta.py"), f"{stem}.{k}.meta.py"))
            same = equal_to_parsed(ours, theirs)
            if not same:
                return Outcome(seed, "differs", stage, _isolated(stem, k, stage), constant_difference(ours, theirs))
        else:
            detail = first_difference(text, theirs_text)
            left = sorted(_relax_ops(text) - _relax_ops(theirs_text))
            if left:
                detail = f"left as Relax op calls: {', '.join(left)}\n{detail}"
            return Outcome(seed, "differs", stage, _isolated(stem, k, stage), detail)
        mod = ours
    return Outcome(seed, "match", ours_final=to_text(mod))


def _isolated(stem: str, k: int, stage: str) -> bool | None:
    """Does our `stage` alone, on TVM's printout before it, give TVM's printout after it?
    True: the stage differs by itself; False: it differs only on our own earlier output.
    TVM ran the stage on its in-memory module, so nested sblock domains are read as printed
    (printed_domains), as `compare_seed` reads TVM's modules."""
    before = stem + ".in.py" if k == 1 else f"{stem}.{k - 1}.meta.py"
    try:
        ours = run_stage(stage, printed_domains(parse(_read(before), before)))
    except DiagnosticError:
        return True
    except Exception:  # noqa: BLE001 - an internal error is a difference too
        return True
    return to_text(ours, show_meta_data=False).rstrip("\n") != _read(f"{stem}.{k}.py").rstrip("\n")
