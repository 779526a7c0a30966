"""relay-to-relax: every translated Relay operator, one-op modules.

Each case is a Relay call and the TVM BlockBuilder program that should come out of it:
  (a) the Relax interpreter on our translation gives what the Relay interpreter gives,
      on random inputs;
  (b) (tvm) TVM 0.27's `relax.BlockBuilder` builds the case's program (parameters from the
      Relay signature, `bb.emit` per statement, `bb.emit_output` of the last) and prints
      exactly what we print.
Then: the seed model, an ONNX model imported and translated, let chains, symbolic shapes,
and the diagnostics for what Relax dataflow cannot express.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_relay_to_relax_dynamic import CASES as DYNAMIC_CASES

import irtool
from irtool.ir import relax as rx
from irtool.ops import registry
from irtool.ops import relax as relax_ops
from irtool.passes import relay_to_relax as r2r
from irtool.transform import get_pass

ROOT = Path(__file__).resolve().parents[1]

def _binary_params(name: str) -> str:
    if name.startswith("logical"):
        return "x=2,3:bool y=3:bool"
    if name.startswith(("bitwise", "left_shift", "right_shift")):
        return "x=2,3:int32 y=3:int32"
    return "x=2,3 y=3"


# (case id, Relay body, parameters "name=dims[:dtype]" (dtype float32 by default),
#  TVM program: "name = expr" statements emitted in order, then the output expression)
CASES = [
    *[(relay, f"{relay}(%x)", "x=2,3" + {"logical_not": ":bool", "bitwise_not": ":int32"}.get(relay, ""),
       f"R.{relax[len('relax.'):]}(x)") for relax, relay, _ in relax_ops.UNARY],
    *[(name, f"{name}(%x, %y)", _binary_params(name), f"R.{name}(x, y)") for name in relax_ops.BINARY],
    ("zeros_like", "zeros_like(%x)", "x=2,3", "R.zeros_like(x)"),
    ("ones_like", "ones_like(%x)", "x=2,3:int32", "R.ones_like(x)"),
    ("cast", 'cast(%x, dtype="int32")', "x=2,3", 'R.astype(x, "int32")'),
    ("transpose", "transpose(%x, axes=[1, 0, 2])", "x=2,3,4", "R.permute_dims(x, [1, 0, 2])"),
    ("transpose-reverse", "transpose(%x, axes=None)", "x=2,3,4", "R.permute_dims(x)"),
    ("squeeze", "squeeze(%x, axis=[1])", "x=2,1,3", "R.squeeze(x, [1])"),
    ("squeeze-all", "squeeze(%x)", "x=2,1,3,1", "R.squeeze(x)"),
    ("concatenate", "concatenate((%x, %y), axis=1)", "x=2,3 y=2,2", "R.concat([x, y], axis=1)"),
    ("stack", "stack((%x, %y), axis=1)", "x=2,3 y=2,3", "R.stack([x, y], axis=1)"),
    ("split", "split(%x, indices_or_sections=2, axis=1)", "x=2,4", "R.split(x, 2, axis=1)"),
    ("split-indices", "%0 = split(%x, indices_or_sections=[1, 3]); %0.1", "x=4,2",
     "t = R.split(x, [1, 3]); t[1]"),
    ("tile", "tile(%x, reps=[2, 1])", "x=2,3", "R.tile(x, [2, 1])"),
    ("repeat", "repeat(%x, repeats=2, axis=1)", "x=2,3", "R.repeat(x, 2, axis=1)"),
    ("nn.conv2d", "nn.conv2d(%x, %w, padding=[1, 1], channels=4, kernel_size=[3, 3])", "x=1,3,6,6 w=4,3,3,3",
     "R.nn.conv2d(x, w, padding=[1, 1, 1, 1])"),
    ("nn.conv2d_transpose", "nn.conv2d_transpose(%x, %w, strides=[2, 2], channels=3)", "x=1,4,3,3 w=4,3,3,3",
     "R.nn.conv2d_transpose(x, w, strides=[2, 2])"),
    ("nn.max_pool2d", "nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2])", "x=1,2,4,4",
     "R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])"),
    ("nn.avg_pool2d", "nn.avg_pool2d(%x, pool_size=[3, 3], padding=[1, 1], count_include_pad=True)",
     "x=1,2,4,4", "R.nn.avg_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1], count_include_pad=True)"),
    # nn.lrn as TVM 0.27's ONNX frontend composes LRN (an average pool over the squares along the channels
    # made a window axis), with Relay's window: size // 2 channels before, size - 1 - size // 2 after
    *[(f"nn.lrn-{k}", f"nn.lrn(%x, size={size}, axis={axis}, alpha=0.2f, beta=0.75f, bias=1.5f)", spec,
       f"R.divide(x, R.power(R.add(R.multiply(R.squeeze(R.nn.{pool}(R.expand_dims(R.multiply(x, x), [{axis}]), "
       f"pool_size={window}, padding={pads}, count_include_pad=True, layout='{layout}'), [{axis}]), "
       "relax.const(0.2, 'float32')), relax.const(1.5, 'float32')), relax.const(0.75, 'float32')))")
      for k, (size, axis, spec, pool, window, pads, layout) in enumerate([
          (3, 1, "x=1,4,2,3", "avg_pool3d", (3, 1, 1), (1, 0, 0, 1, 0, 0), "NCDHW"),
          (4, 1, "x=2,5,3", "avg_pool2d", (4, 1), (2, 0, 1, 0), "NCHW"),
          (2, 3, "x=1,2,3,6", "avg_pool3d", (2, 1, 1), (1, 0, 0, 0, 0, 0), "NHWCD"),
          (5, 2, "x=3,2,7", "avg_pool2d", (5, 1), (2, 0, 2, 0), "NWCH")])],
    # regression: a constant the stride divides comes out of the floor, as TVM prints it (`d // 3 + 2`)
    ("nn.conv2d-sym-stride", "nn.conv2d(%x, %w, strides=[3, 1], padding=[2, 0, 2, 0])", "x=1,2,?,6 w=2,2,1,1",
     "R.nn.conv2d(x, w, strides=[3, 1], padding=[2, 0, 2, 0])"),
    ("nn.conv3d", "nn.conv3d(%x, %w, padding=[1, 0, 1], channels=4, kernel_size=[3, 3, 2])", "x=1,3,5,4,5 w=4,3,3,3,2",
     "R.nn.conv3d(x, w, padding=[1, 0, 1, 1, 0, 1])"),
    ("nn.conv3d-ndhwc", 'nn.conv3d(%x, %w, strides=[2, 1, 2], dilation=[1, 2, 1], groups=2, data_layout="NDHWC", '
     'kernel_layout="DHWIO")', "x=1,5,6,5,4 w=2,2,2,2,6",
     'R.nn.conv3d(x, w, strides=[2, 1, 2], dilation=[1, 2, 1], groups=2, data_layout="NDHWC", kernel_layout="DHWIO")'),
    ("nn.conv3d_transpose", "nn.conv3d_transpose(%x, %w, channels=3, strides=[2, 2, 1], output_padding=[1, 0, 0], "
     "padding=[0, 1, 0, 1, 0, 1])", "x=1,4,3,3,3 w=4,3,3,3,3",
     "R.nn.conv3d_transpose(x, w, strides=[2, 2, 1], padding=[0, 1, 0, 1, 0, 1], output_padding=[1, 0, 0])"),
    # (a ceil_mode window starting in the tail padding would be kept by Relay, dropped by Relax)
    ("nn.max_pool3d", "nn.max_pool3d(%x, pool_size=[2, 2, 2], strides=[2, 2, 2], padding=[0, 1, 0], ceil_mode=True)",
     "x=1,2,5,4,4", "R.nn.max_pool3d(x, pool_size=[2, 2, 2], strides=[2, 2, 2], padding=[0, 1, 0, 0, 1, 0], "
     "ceil_mode=True)"),
    # Relay's avg_pool3d leaves the padding out of the count by default, TVM 0.27's Python API counts it
    ("nn.avg_pool3d", "nn.avg_pool3d(%x, pool_size=[3, 3, 3], padding=[1, 1, 1])", "x=1,2,4,4,4",
     "R.nn.avg_pool3d(x, pool_size=[3, 3, 3], padding=[1, 1, 1, 1, 1, 1], count_include_pad=False)"),
    ("nn.avg_pool3d-ndhwc", 'nn.avg_pool3d(%x, pool_size=[2, 1, 2], dilation=[2, 1, 1], count_include_pad=True, '
     'layout="NDHWC")', "x=1,5,4,4,2",
     'R.nn.avg_pool3d(x, pool_size=[2, 1, 2], dilation=[2, 1, 1], layout="NDHWC")'),
    ("nn.softmax", "nn.softmax(%x, axis=1)", "x=2,3,4", "R.nn.softmax(x, axis=1)"),
    ("nn.log_softmax", "nn.log_softmax(%x)", "x=2,3", "R.nn.log_softmax(x)"),
    ("nn.leaky_relu", "nn.leaky_relu(%x, alpha=0.125f)", "x=2,3", "R.nn.leakyrelu(x, 0.125)"),
    ("nn.prelu", "nn.prelu(%x, %a)", "x=1,3,2,2 a=3", "R.nn.prelu(x, a, axis=1)"),
    ("nn.dropout", "%0 = nn.dropout(%x, rate=0.25f); %0.0", "x=2,3", "t = R.nn.dropout(x, 0.25); t[0]"),
    ("nn.batch_flatten", "nn.batch_flatten(%x)", "x=2,3,2", "R.nn.batch_flatten(x)"),
    ("sum", "sum(%x, axis=[1], keepdims=True)", "x=2,3,4", "R.sum(x, axis=[1], keepdims=True)"),
    ("sum-all", "sum(%x)", "x=2,3", "R.sum(x)"),
    ("sum-exclude", "sum(%x, axis=[1], exclude=True)", "x=2,3,4", "R.sum(x, axis=[0, 2])"),
    ("mean", "mean(%x, axis=[-1])", "x=2,3", "R.mean(x, axis=[-1])"),
    ("max", "max(%x, axis=[0])", "x=2,3", "R.max(x, axis=[0])"),
    ("min", "min(%x, axis=[0, 1], keepdims=True)", "x=2,3", "R.min(x, axis=[0, 1], keepdims=True)"),
    ("prod", "prod(%x, axis=[1])", "x=2,3", "R.prod(x, axis=[1])"),
    ("argmax", "argmax(%x, axis=[1])", "x=2,3", 'R.astype(R.argmax(x, axis=1), "int32")'),
    ("argmin", "argmin(%x, keepdims=True)", "x=2,3", 'R.astype(R.argmin(x, keepdims=True), "int32")'),
    ("variance", "%0 = mean(%x, axis=[1], keepdims=True); variance(%x, %0, axis=[1])", "x=2,3",
     "m = R.mean(x, axis=[1], keepdims=True); R.variance(x, axis=[1])"),
    ("variance-given-mean", "variance(%x, %m, axis=[1], unbiased=True)", "x=2,3 m=2,1",
     'd = R.subtract(x, m); R.divide(R.sum(R.multiply(d, d), axis=[1]), relax.const(2.0, "float32"))'),
    ("clip", "clip(%x, a_min=-0.5f, a_max=0.5f)", "x=2,3", "R.clip(x, -0.5, 0.5)"),
    ("where", "where(%c, %x, %y)", "c=2,3:bool x=2,3 y=3", "R.where(c, x, y)"),
    ("where-int-condition", "where(%c, %x, %y)", "c=2,3:int32 x=2,3 y=3",
     'R.where(R.astype(c, "bool"), x, y)'),
    ("gather", "gather(%x, %i, axis=1)", "x=2,3 i=2,3:int32", "R.gather_elements(x, i, axis=1)"),
    ("reshape", "reshape(%x, newshape=[0, -1])", "x=2,3,4", "R.reshape(x, (2, 12))"),
    ("reshape-merge", "reshape(%x, newshape=[-3, -2])", "x=2,3,4", "R.reshape(x, (6, 4))"),
    ("reshape-split", "reshape(%x, newshape=[-4, 1, 2, -2])", "x=2,3,4", "R.reshape(x, (1, 2, 3, 4))"),
    ("reshape_like", "reshape_like(%x, %y, lhs_end=1, rhs_end=2)", "x=6,2,2 y=2,3,5", "R.reshape(x, (2, 3, 2, 2))"),
    ("expand_dims", "expand_dims(%x, axis=1, num_newaxis=2)", "x=2,3", "R.expand_dims(x, [1, 2])"),
    ("expand_dims-negative", "expand_dims(%x, axis=-1)", "x=2,3", "R.expand_dims(x, [2])"),
    ("strided_slice", "strided_slice(%x, begin=[0, 1], end=[2, 3], strides=[1], axes=None)", "x=2,4",
     "R.strided_slice(x, [0, 1], [0, 1], [2, 3], [1, 1])"),
    ("strided_slice-axes", "strided_slice(%x, begin=[3], end=[0], strides=[-2], axes=[1])", "x=2,4",
     "R.strided_slice(x, [1], [3], [0], [-2])"),
    ("strided_slice-size", 'strided_slice(%x, begin=[1, 0], end=[2, -1], strides=[1, 1], slice_mode="size", axes=None)', "x=4,3",
     "R.strided_slice(x, [0, 1], [1, 0], [3, 3], [1, 1])"),
    ("take", "take(%x, %i, axis=1)", "x=2,3 i=2:int32", 'R.take(x, i, axis=1, mode="clip")'),
    ("take-flat", 'take(%x, %i, mode="wrap")', "x=2,3 i=4:int32",
     'R.take(R.reshape(x, (6,)), i, axis=0, mode="wrap")'),
    ("broadcast_to", "broadcast_to(%x, shape=[2, 3])", "x=1,3", "R.broadcast_to(x, (2, 3))"),
    ("full", 'full(%v, shape=[2, 3], dtype="float32")', "v=:float32", 'R.full((2, 3), v, "float32")'),
    ("full-constant", "full(1.5f, shape=[2, 3])", "",
     'R.full((2, 3), relax.const(1.5, "float32"), "float32")'),
    ("zeros", 'zeros(shape=[2, 3], dtype="int32")', "", 'R.zeros((2, 3), "int32")'),
    ("ones", 'ones(shape=[2], dtype="float32")', "", 'R.ones((2,), "float32")'),
    ("arange", 'arange(0, 5, 2, dtype="int32")', "", 'R.arange(0, 5, 2, "int32")'),
    ("arange-float", 'arange(0.5f, 2f, 0.5f, dtype="float32")', "", 'R.arange(0.5, 2.0, 0.5, "float32")'),
    ("shape_of", "shape_of(%x)", "x=2,3", 'relax.const(np.array([2, 3], "int32"))'),
    ("nn.pad", "nn.pad(%x, 1.5f, pad_width=[[0, 0], [1, 2]])", "x=2,3",
     "R.nn.pad(x, [0, 0, 1, 2], pad_value=1.5)"),
    ("nn.pad-edge", 'nn.pad(%x, 0f, pad_width=[[1, 0], [0, 1]], pad_mode="edge")', "x=2,3",
     'R.nn.pad(x, [1, 0, 0, 1], pad_mode="replicate")'),
    ("nn.batch_norm", "%0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f); %0.0",
     "x=2,3,2,2 g=3 b=3 m=3 v=3",
     "t = R.nn.batch_norm(x, g, b, m, v, axis=1, epsilon=0.001, training=False); t[0]"),
    ("nn.layer_norm", "nn.layer_norm(%x, %g, %b)", "x=2,3 g=3 b=3", "R.nn.layer_norm(x, g, b, axes=[-1])"),
    ("nn.bias_add", "nn.bias_add(%x, %b)", "x=1,3,2,2 b=3", "R.add(x, R.reshape(b, (1, 3, 1, 1)))"),
    ("nn.bias_add-last", "nn.bias_add(%x, %b, axis=-1)", "x=2,3 b=3", "R.add(x, b)"),
    ("nn.dense", "nn.dense(%x, %w, units=4)", "x=2,3 w=4,3", "R.matmul(x, R.permute_dims(w))"),
    ("nn.matmul", "nn.matmul(%a, %b, units=None, transpose_b=True)", "a=2,3 b=4,3",
     "R.matmul(a, R.permute_dims(b))"),
    ("nn.batch_matmul", "nn.batch_matmul(%a, %b, transpose_b=True)", "a=2,2,3 b=2,4,3",
     "R.matmul(a, R.permute_dims(b, [0, 2, 1]))"),
    ("nn.batch_matmul-nt", "nn.batch_matmul(%a, %b, transpose_a=True, transpose_b=False)", "a=2,3,2 b=2,3,4",
     "R.matmul(R.permute_dims(a, [0, 2, 1]), b)"),
    ("nn.global_avg_pool2d", "nn.global_avg_pool2d(%x)", "x=1,2,3,3", "R.mean(x, axis=[2, 3], keepdims=True)"),
    ("nn.global_max_pool2d", 'nn.global_max_pool2d(%x, layout="NHWC")', "x=1,3,3,2",
     "R.max(x, axis=[1, 2], keepdims=True)"),
    ("nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool2d(%x, output_size=[2, 2])", "x=1,2,4,4",
     "R.nn.adaptive_avg_pool2d(x, output_size=[2, 2])"),
    ("image.resize2d", "image.resize2d(%x, size=[4, 6], roi=[0f, 0f, 0f, 0f])", "x=1,1,2,3",
     "R.image.resize2d(x, (4, 6), roi=[0.0, 0.0, 0.0, 0.0], cubic_alpha=-0.5)"),
    ("copy", "copy(%x)", "x=2,3", "x"),
    ("annotation.stop_fusion", "annotation.stop_fusion(%x)", "x=2,3", "x"),
    ("tuple-output", "%0 = exp(%x); (%0, %x)", "x=2,3", "e = R.exp(x); relax.Tuple([e, x])"),
    # whole graphs (the lit file's cases)
    ("conv-bias-relu", "%0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]); %1 = nn.bias_add(%0, %b); %2 = nn.relu(%1); "
     "%3 = multiply(%0, 0.5f); add(%2, %3)", "x=1,3,8,8 w=4,3,3,3 b=4",
     "c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1]); r = R.nn.relu(R.add(c, R.reshape(b, (1, 4, 1, 1)))); "
     'R.add(r, R.multiply(c, relax.const(0.5, "float32")))'),
    ("mlp", "%0 = nn.dense(%x, %w1, units=16); %1 = nn.bias_add(%0, %b1); %2 = nn.relu(%1); "
     "%3 = nn.dense(%2, %w2, units=4); nn.softmax(%3)", "x=2,8 w1=16,8 b1=16 w2=4,16",
     "h = R.nn.relu(R.add(R.matmul(x, R.permute_dims(w1)), b1)); R.nn.softmax(R.matmul(h, R.permute_dims(w2)))"),
    ("conv-bn-pool", "%0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]); %1 = nn.batch_norm(%0, %g, %beta, %mean, %var); "
     "%2 = nn.relu(%1.0); %3 = nn.global_avg_pool2d(%2); nn.batch_flatten(%3)",
     "x=1,3,8,8 w=4,3,3,3 g=4 beta=4 mean=4 var=4",
     "c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1]); t = R.nn.batch_norm(c, g, beta, mean, var, axis=1, "
     "training=False); r = R.nn.relu(t[0]); R.nn.batch_flatten(R.mean(r, axis=[2, 3], keepdims=True))"),
    ("dynamic-batch", "%0 = reshape(%x, newshape=[0, -1]); %1 = transpose(%0, axes=[1, 0]); "
     "sum(%1, axis=[0], exclude=True)", "x=?,3,4",
     "r = R.reshape(x, (-1, 12)); p = R.permute_dims(r, [1, 0]); R.sum(p, axis=[1])"),
    ("split-concat", "%0 = split(%x, indices_or_sections=3, axis=1); %1 = %0.0; %2 = %0.2; "
     "%3 = concatenate((%2, %1), axis=1); (%3, %0.1)", "x=4,6",
     "s = R.split(x, 3, axis=1); a = s[2]; b = s[0]; c = R.concat([a, b], axis=1); e = s[1]; relax.Tuple([c, e])"),
    ("lets", "let %a = clip(%x, a_min=0f, a_max=6f); let %b = argmax(%a, axis=[1]); %b", "x=2,3",
     'a = R.clip(x, 0.0, 6.0); b = R.astype(R.argmax(a, axis=1), "int32"); b'),
    ("sort", "sort(%x, axis=0)", "x=3,2", "R.sort(x, axis=0, descending=False)"),
    ("argsort", 'argsort(%x, is_ascend=False, dtype="int64")', "x=2,3",
     'R.argsort(x, axis=-1, descending=True, dtype="int64")'),
    ("topk", "%0 = topk(%x, k=2, axis=1); %0.1", "x=2,3",
     't = R.topk(x, k=2, axis=1, ret_type="both", largest=True, dtype="int32"); t[1]'),
    ("topk-ascending", 'topk(%x, k=1, ret_type="values", is_ascend=True)', "x=2,3",
     'R.topk(x, k=1, axis=-1, ret_type="values", largest=False, dtype="int32")'),
    ("cumsum", "cumsum(%x, axis=1, exclusive=True)", "x=2,3", "R.cumsum(x, axis=1, exclusive=True)"),
    ("cumprod", 'cumprod(%x, dtype="float64")', "x=2,3", 'R.cumprod(x, axis=None, dtype="float64", exclusive=False)'),
    ("reverse", "reverse(%x, axis=1)", "x=2,3", "R.flip(x, axis=1)"),
    ("scatter_elements", 'scatter_elements(%x, %i, %u, axis=1, reduction="add")', "x=2,3 i=2,2:int64 u=2,2",
     'R.scatter_elements(x, i, u, axis=1, reduction="add")'),
    ("gather_nd", "gather_nd(%x, %i, index_rank=2)", "x=4,3,5 i=2,3:int64",
     "p = R.permute_dims(i, [1, 0]); R.gather_nd(x, p, batch_dims=0)"),
    ("gather_nd-batch", "gather_nd(%x, %i, batch_dims=1)", "x=2,3,5 i=1,2,4:int64",
     "p = R.permute_dims(i, [1, 2, 0]); R.gather_nd(x, p, batch_dims=1)"),
    ("scatter_nd", 'scatter_nd(%x, %i, %u, mode="add")', "x=4,3 i=1,2:int64 u=2,3",
     'p = R.permute_dims(i, [1, 0]); R.scatter_nd(x, p, u, reduction="add")'),
    ("einsum", 'einsum((%x, %y), equation="ij,jk->ik")', "x=2,3 y=3,4", 'R.einsum((x, y), subscripts="ij,jk->ik")'),
    ("one_hot", "one_hot(%i, 1f, 0f, depth=4)", "i=2,3:int32",
     'R.one_hot(i, relax.prim_value(tvm.tirx.FloatImm("float32", 1.0)), '
     'relax.prim_value(tvm.tirx.FloatImm("float32", 0.0)), 4, -1)'),
    ("one_hot-int", 'one_hot(%i, 5f, -1f, depth=3, axis=0, dtype="int64")', "i=3:int64",
     'R.one_hot(i, relax.prim_value(tvm.tirx.IntImm("int64", 5)), relax.prim_value(tvm.tirx.IntImm("int64", -1)), '
     '3, 0)'),
    ("argwhere", "argwhere(%c)", "c=2,3:bool", 'R.astype(R.permute_dims(R.nonzero(c)), "int32")'),
    ("image.grid_sample", "image.grid_sample(%x, %g)", "x=1,2,4,4 g=1,2,3,3",
     "R.image.grid_sample(x, g, align_corners=True)"),
    ("vision.roi_align", "vision.roi_align(%x, clip(%r, a_min=0f, a_max=0.9f), pooled_size=[2, 2], spatial_scale=4f, "
     "sample_ratio=2)", "x=1,2,5,5 r=3,5",
     "c = R.clip(r, 0.0, 0.9); R.vision.roi_align(x, c, (2, 2), 4.0, sample_ratio=2)"),
    ("vision.roi_pool", 'vision.roi_pool(%x, clip(%r, a_min=0f, a_max=0.9f), pooled_size=[2, 3], spatial_scale=5f)',
     "x=1,2,5,5 r=3,5", "c = R.clip(r, 0.0, 0.9); R.vision.roi_pool(x, c, (2, 3), 5.0)"),
    ("vision.all_class_non_max_suppression", "%0 = vision.all_class_non_max_suppression(%b, %s, 2i64, 0.5f, 0f); "
     "%0.0", "b=1,4,4 s=1,2,4",
     't = R.vision.all_class_non_max_suppression(b, s, relax.const(2, "int64"), relax.const(0.5, "float32"), '
     'relax.const(0.0, "float32")); t[0]'),
]

CASE_IDS = [c[0] for c in CASES]


def _params(spec: str) -> list[tuple[str, tuple, str]]:
    out = []
    for item in spec.split():
        name, _, rest = item.partition("=")
        dims, _, dtype = rest.partition(":")
        shape = tuple("?" if d == "?" else int(d) for d in dims.split(",") if d)
        out.append((name, shape, dtype or "float32"))
    return out


def relay_text(body: str, spec: str) -> str:
    params = ", ".join(f"%{n}: Tensor[({', '.join(map(str, s))}{',' if len(s) == 1 else ''}), {d}]"
                       for n, s, d in _params(spec))
    return f'#[version = "0.0.5"]\ndef @main({params}) {{\n  {body}\n}}\n'


def translate(text: str, name: str = "case.ir"):
    mod = irtool.parse(text, name)
    return mod, get_pass("relay-to-relax")()(mod)


def _inputs(spec: str, rng) -> list:
    values = []
    for _, shape, dtype in _params(spec):
        shape = tuple(3 if d == "?" else d for d in shape)
        if dtype == "bool":
            values.append(rng.random(shape) < 0.5)
        elif dtype.startswith("int"):
            values.append(rng.integers(0, 2, size=shape).astype(dtype))  # valid indices for every case
        else:
            values.append(rng.standard_normal(shape).astype(dtype))
    return values


def _assert_same(ours, theirs) -> None:
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours.dtype, ours.shape, theirs.dtype,
                                                                      theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_every_translatable_relay_op_has_a_case():
    covered = {body.split("(")[0].split("= ")[-1] for _, body, _, _ in CASES}
    covered |= {"mean", "split", "nn.dropout", "nn.batch_norm", "exp"}
    covered |= {body.split("(")[0] for _, _, body, _ in DYNAMIC_CASES}  # test_relay_to_relax_dynamic.py
    missing = [op for op in registry.all_ops() if op not in covered and op not in r2r.NO_COUNTERPART]
    assert not missing
    assert sorted(r2r.translated_ops()) == sorted(op for op in registry.all_ops() if op not in r2r.NO_COUNTERPART)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_translation_runs_like_relay(case):
    """(a) the Relax interpreter on the translation == the Relay interpreter."""
    _, body, spec, _ = case
    relay_mod, relax_mod = translate(relay_text(body, spec))
    fn = relax_mod["main"]
    assert isinstance(fn, rx.Function)
    assert all(isinstance(b, rx.DataflowBlock) for b in fn.body.blocks)
    rng = np.random.default_rng(7)
    inputs = _inputs(spec, rng)
    _assert_same(irtool.interpret(relax_mod, inputs), irtool.interpret(relay_mod, inputs))
    # the printed text parses back to the same module
    text = irtool.to_text(relax_mod)
    assert irtool.structural_equal(irtool.parse(text, "again.py"), relax_mod)


_TVM_RUNNER = r'''
import json, sys
import numpy as np
import tvm, tvm.tirx
from tvm import relax
from tvm.relax import op as R

out = {}
for case in json.load(open(sys.argv[1])):
    params, env = [], {}
    for name, shape, dtype in case["params"]:
        dims = [tvm.tirx.Var("d", "int64") if d == "?" else d for d in shape]
        params.append(relax.Var(name, relax.TensorType(dims, dtype)))
        env[name] = params[-1]
    env.update(R=R, relax=relax, np=np, tvm=tvm)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            *stmts, last = [s.strip() for s in case["program"].split(";")]
            for stmt in stmts:
                name, expr = stmt.split(" = ", 1)
                env[name] = bb.emit(eval(expr, env))
            gv = bb.emit_output(eval(last, env))
        bb.emit_func_output(gv)
    out[case["id"]] = bb.get().script()
json.dump(out, open(sys.argv[2], "w"))
'''


def _run_tvm(tvm_python: str, tmp_path, cases: list[dict]) -> dict:
    (tmp_path / "runner.py").write_text(_TVM_RUNNER)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    proc = subprocess.run([tvm_python, str(tmp_path / "runner.py"), str(tmp_path / "cases.json"),
                           str(tmp_path / "out.json")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())


@pytest.mark.tvm
def test_translation_prints_as_tvm_blockbuilder_builds_it(tvm_python, tmp_path):
    """(b) TVM's BlockBuilder, given the case's program, prints what we print."""
    theirs = _run_tvm(tvm_python, tmp_path, [
        {"id": cid, "params": _params(spec), "program": program} for cid, _, spec, program in CASES])
    mismatched = []
    for cid, body, spec, _ in CASES:
        _, relax_mod = translate(relay_text(body, spec))
        ours = irtool.to_text(relax_mod, show_meta_data=False)
        if ours.rstrip("\n") != theirs[cid].rstrip("\n"):
            mismatched.append(f"--- {cid}\nours:\n{ours}\nTVM:\n{theirs[cid]}")
        # and TVM's text parses to our module (where it shows every constant's data)
        assert "metadata[" in theirs[cid] or irtool.structural_equal(irtool.parse(theirs[cid], f"{cid}.py"), relax_mod), cid
    assert not mismatched, "\n".join(mismatched)


# ----------------------------------------------------------------------------- whole programs

SEED = ROOT / "examples" / "seed000.ir"
SEED_TVM = Path(__file__).parent / "data" / "tvm-0.27" / "seed_conv_add_relu" / "0_input.py"


def test_seed_translates_and_runs_like_relay():
    relay_mod, relax_mod = translate(SEED.read_text(), str(SEED))
    names = [b.var.name_hint for b in relax_mod["main"].body.blocks[0].bindings]
    assert names == ["lv", "lv1", "lv2", "lv3", "gv"]  # Relay's post-DFS order, TVM's names
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 3, 16, 16)).astype("float32"),
              rng.standard_normal((3, 3, 3, 3)).astype("float32")]
    _assert_same(irtool.interpret(relax_mod, inputs), irtool.interpret(relay_mod, inputs))


@pytest.mark.skipif(not SEED_TVM.exists(), reason="TVM's reference printouts are not here")
def test_seed_prints_as_tvm_reference():
    """TVM 0.27's Relax of the same seed model (its parameter is named w, ours weight)."""
    _, relax_mod = translate(SEED.read_text(), str(SEED))
    ours = irtool.to_text(relax_mod, show_meta_data=False).replace("weight", "w")
    assert ours == SEED_TVM.read_text().rstrip("\n")


def test_seed_through_the_command_line_round_trips():
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.opt", str(SEED), "-p", "relay-to-relax",
                           "--verify-roundtrip"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    again = irtool.parse(proc.stdout, "out.py")
    assert isinstance(again["main"], rx.Function)
    assert "R.nn.conv2d(x, weight" in proc.stdout


def test_let_chains_become_bindings_in_program_order():
    text = relay_text("let %a = exp(%x); let %b = add(%a, %x); let %c = negative(%b); %c", "x=2,3")
    relay_mod, relax_mod = translate(text)
    bindings = relax_mod["main"].body.blocks[0].bindings
    assert [(b.var.name_hint, b.value.op.name if isinstance(b.value, rx.Call) else None) for b in bindings] == [
        ("lv", "relax.exp"), ("lv1", "relax.add"), ("lv2", "relax.negative"), ("gv", None)]
    x = np.random.default_rng(1).standard_normal((2, 3)).astype("float32")
    _assert_same(irtool.interpret(relax_mod, [x]), irtool.interpret(relay_mod, [x]))


def test_shared_nodes_are_bound_once_in_post_dfs_order():
    # %0 is used twice: one binding; the branch that reaches it first goes first
    relay_mod, relax_mod = translate(relay_text("%0 = exp(%x); %1 = negative(%0); %2 = abs(%0); add(%1, %2)",
                                                "x=2,3"))
    ops = [b.value.op.name for b in relax_mod["main"].body.blocks[0].bindings]
    assert ops == ["relax.exp", "relax.negative", "relax.abs", "relax.add"]


def test_unknown_dimensions_become_symbolic_variables():
    relay_mod, relax_mod = translate(relay_text("reshape(nn.relu(%x), newshape=[0, -1])", "x=?,3,4"))
    text = irtool.to_text(relax_mod)
    assert 'def main(x: R.Tensor((d, 3, 4), dtype="float32")) -> R.Tensor((d, 12), dtype="float32")' in text
    assert "R.reshape(lv, R.shape([d, 12]))" in text
    x = np.random.default_rng(2).standard_normal((5, 3, 4)).astype("float32")
    _assert_same(irtool.interpret(relax_mod, [x]), irtool.interpret(relay_mod, [x]))


def test_onnx_model_translates_and_runs_like_relay():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from irtool.frontend.onnx import from_onnx

    rng = np.random.default_rng(3)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype("float32"), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p1"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    inits = [init("w1", 4, 3, 3, 3), init("b1", 4), init("g", 4), init("be", 4), init("mu", 4),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype("float32"), "var"),
             init("w2", 5, 4), init("b2", 5)]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    relay_mod, _ = from_onnx(model)
    relax_mod = get_pass("relay-to-relax")()(relay_mod)
    fn = relax_mod["main"]
    ops = {b.value.op.name for b in fn.body.blocks[0].bindings if isinstance(b.value, rx.Call)}
    assert {"relax.nn.conv2d", "relax.nn.batch_norm", "relax.nn.max_pool2d", "relax.matmul"} <= ops
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    _assert_same(irtool.interpret(relax_mod, [x]), irtool.interpret(relay_mod, [x]))
    text = irtool.to_text(relax_mod)
    assert irtool.structural_equal(irtool.parse(text, "onnx.py"), relax_mod)


# ----------------------------------------------------------------------------- random graphs

_RANDOM_UNARY = [("exp", "R.exp"), ("tanh", "R.tanh"), ("negative", "R.negative"), ("nn.relu", "R.nn.relu"),
                 ("sigmoid", "R.sigmoid")]
_RANDOM_BINARY = [("add", "R.add"), ("multiply", "R.multiply"), ("subtract", "R.subtract"), ("maximum", "R.maximum")]


def random_graph(seed: int) -> tuple[str, str]:
    """A random Relay DAG over x, y: (2, 3) (unary, broadcasting binary, keepdims sums, shared
    nodes, a tuple of every unused node as the output) and the TVM BlockBuilder program that
    emits its nodes in post-DFS order (the order's definition: a node after its operands,
    operands left to right, each node once)."""
    rng = np.random.default_rng(seed)
    nodes = []  # (relay text, tvm expression, operand indices)  index -1 = x, -2 = y
    for _ in range(int(rng.integers(3, 12))):
        pick = rng.random()
        pool = [-1, -2] + list(range(len(nodes)))
        a, b = (int(v) for v in rng.choice(pool, 2))
        if pick < 0.4:
            relay_op, tvm_op = _RANDOM_UNARY[int(rng.integers(len(_RANDOM_UNARY)))]
            nodes.append((f"{relay_op}({{0}})", f"{tvm_op}({{0}})", (a,)))
        elif pick < 0.85:
            relay_op, tvm_op = _RANDOM_BINARY[int(rng.integers(len(_RANDOM_BINARY)))]
            nodes.append((f"{relay_op}({{0}}, {{1}})", f"{tvm_op}({{0}}, {{1}})", (a, b)))
        else:
            nodes.append(("sum({0}, axis=[1], keepdims=True)", "R.sum({0}, axis=[1], keepdims=True)", (a,)))
    used = {o for _, _, ops in nodes for o in ops}
    sinks = [i for i in range(len(nodes)) if i not in used]
    relay_name = {-1: "%x", -2: "%y", **{i: f"%{i}" for i in range(len(nodes))}}
    lines = [f"%{i} = {r.format(*(relay_name[o] for o in ops))};" for i, (r, _, ops) in enumerate(nodes)]
    out = relay_name[sinks[0]] if len(sinks) == 1 else "(" + ", ".join(relay_name[i] for i in sinks) + ")"
    order, seen = [], set()

    def visit(i: int) -> None:
        if i < 0 or i in seen:
            return
        seen.add(i)
        for o in nodes[i][2]:
            visit(o)
        order.append(i)

    for i in sinks:
        visit(i)
    tvm_name = {-1: "x", -2: "y", **{i: f"v{i}" for i in range(len(nodes))}}
    stmts = [f"v{i} = {nodes[i][1].format(*(tvm_name[o] for o in nodes[i][2]))}" for i in order]
    if len(sinks) == 1:
        last = stmts.pop().split(" = ", 1)[1]
    else:
        last = "relax.Tuple([" + ", ".join(tvm_name[i] for i in sinks) + "])"
    return " ".join(lines) + " " + out, "; ".join(stmts + [last])


RANDOM_SEEDS = range(40)


@pytest.mark.parametrize("seed", RANDOM_SEEDS[:10])
def test_random_graphs_run_like_relay(seed):
    body, _ = random_graph(seed)
    relay_mod, relax_mod = translate(relay_text(body, "x=2,3 y=2,3"))
    inputs = _inputs("x=2,3 y=2,3", np.random.default_rng(seed))
    _assert_same(irtool.interpret(relax_mod, inputs), irtool.interpret(relay_mod, inputs))


@pytest.mark.tvm
def test_random_graphs_print_as_tvm_builds_them(tvm_python, tmp_path):
    programs = {f"random{seed}": random_graph(seed) for seed in RANDOM_SEEDS}
    theirs = _run_tvm(tvm_python, tmp_path, [
        {"id": cid, "params": _params("x=2,3 y=2,3"), "program": program} for cid, (_, program) in programs.items()])
    for cid, (body, _) in programs.items():
        _, relax_mod = translate(relay_text(body, "x=2,3 y=2,3"))
        ours = irtool.to_text(relax_mod, show_meta_data=False)
        assert ours.rstrip("\n") == theirs[cid].rstrip("\n"), f"{cid}: {body}\nours:\n{ours}\nTVM:\n{theirs[cid]}"


# ----------------------------------------------------------------------------- diagnostics

ERRORS = [
    # (Relay function, message, caret line text); let-bound functions and calls between
    # functions translate (tests/test_relay_to_relax_loop.py)
    ("def @main(%x: Tensor[(1, 4, 2, 2, 2), float32]) {\n  nn.lrn(%x, size=3)\n}",
     "2:3: error: relay-to-relax: `nn.lrn`: LRN of a rank-5 tensor", "  ^~~~~~"),
    ("def @main(%x: Tensor[(4), float32]) {\n  %0 = unique(%x);\n  %0.0\n}",
     "2:8: error: relay-to-relax: `unique`: no Relax counterpart: Relay's outputs are as long as the input",
     "       ^~~~~~"),
    ("def @main() {\n  random.uniform(shape=[2], seed=3)\n}",
     "2:3: error: relay-to-relax: `random.uniform`: no Relax counterpart: TVM 0.27's Relax has no random-number",
     "  ^~~~~~~~~~~~~~"),
    ("def @main(%i: Tensor[(3), int32], %on: float32) {\n  one_hot(%i, %on, 0f, depth=4)\n}",
     "2:3: error: relay-to-relax: `one_hot`: one_hot's on_value must be scalar constants", "  ^~~~~~~"),
    ("def @main(%x: Tensor[(2, 3), float32]) {\n  argmax(%x, axis=[1], select_last_index=True)\n}",
     "2:3: error: relay-to-relax: `argmax`: `select_last_index=True` has no Relax counterpart", "  ^~~~~~"),
    ("def @main(%x: Tensor[(2, 3), float32], %i: Tensor[(2, 1), int32]) {\n  take(%x, %i, batch_dims=1, axis=1)\n}",
     "2:3: error: relay-to-relax: `take`: `batch_dims=1` has no Relax counterpart", "  ^~~~"),
    ("def @main(%c: bool, %x: Tensor[(1, 4, 2, 2, 2), float32]) {\n  if (%c) { nn.lrn(%x, size=3) } else { %x }\n}",
     "2:13: error: relay-to-relax: `nn.lrn`: LRN of a rank-5 tensor", "            ^~~~~~"),
    ("def @main(%x: Tensor[(2), float32]) {\n  %0 = fn (%y: Tensor[(2), float32]) { exp(%y) };\n  %0(%x)\n}",
     "error: relay-to-relax: a function expression (closure) has no Relax dataflow counterpart", None),
]


@pytest.mark.parametrize("text, message, caret", ERRORS, ids=[e[1].split("relay-to-relax: ")[1][:30] for e in ERRORS])
def test_unsupported_input_is_a_located_diagnostic(tmp_path, text, message, caret):
    path = tmp_path / "bad.ir"
    path.write_text(text + "\n")
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.opt", str(path), "-p", "relay-to-relax"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    first, *rest = proc.stderr.splitlines()
    assert first.startswith(f"{path}:") and message in first, proc.stderr
    if caret is not None:
        assert rest[1] == caret, proc.stderr


def test_relay_fused_by_fuse_ops_is_a_located_diagnostic():
    """Regression: Relay's fuse-ops then relay-to-relax failed without a location (the fused
    function has no span); the error points at the first fused call and says what to do."""
    seed = Path(__file__).resolve().parent.parent / "examples" / "seed000.ir"
    proc = subprocess.run([sys.executable, "-m", "irtool.cli.opt", str(seed), "-p", "fuse-ops,relay-to-relax"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first, source, caret = proc.stderr.splitlines()[:3]
    assert first.startswith(f"{seed}:6:8: error: relay-to-relax: a fused (Primitive) Relay function"), first
    assert "nn.conv2d(%x, %weight" in source and caret == "       ^~~~~~~~~"


# TVM 0.27's own print of a resize2d call (checked with TVM): roi is an Array<FloatImm>
_RESIZE_TVM = """# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 2, 3), dtype="float32")) -> R.Tensor((1, 1, 4, 6), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((1, 1, 4, 6), dtype="float32") = R.image.resize2d(x, R.shape([4, 6]), roi=[T.float32(0.0), \
T.float32(0.0), T.float32(0.5), T.float32(1.0)], layout="NCHW", method="linear", \
coordinate_transformation_mode="half_pixel", rounding_method="round", cubic_alpha=-0.5, cubic_exclude=0, \
extrapolation_value=0.0, out_dtype=None)
            R.output(gv)
        return gv
""".replace("\\\n", "")


def test_resize2d_roi_prints_as_tvm_floatimms():
    """Regression (shared printer): roi printed `[0.0, ...]`, TVM prints `[T.float32(0.0), ...]`."""
    assert irtool.to_text(irtool.parse(_RESIZE_TVM, "resize.py")) == _RESIZE_TVM.rstrip("\n")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
