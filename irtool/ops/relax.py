"""The Relax operator table: TVM 0.27's `relax.*` operators, one line per operator.

Each operator is a `RelaxOp` (irtool/ops/relax_decl.py says what its fields mean).

`irtool.analysis.struct_info.deduce_call` turns struct info into the Relay types this table
works on and back (symbolic dimensions included); `evaluate` runs the reference for the Relax
interpreter.

Registry (Relay) operators with no Relax operator of their own, Relay-only:
    reinterpret, copy, annotation.stop_fusion, nn.bias_add, nn.dense, nn.matmul, nn.batch_matmul,
    nn.global_avg_pool2d, nn.global_max_pool2d, nn.lrn,
    dyn.reshape, dyn.broadcast_to, dyn.full, dyn.zeros, dyn.ones, dyn.strided_slice, dyn.tile,
    dyn.topk, dyn.one_hot, dyn.nn.pad, dyn.image.resize2d,
    argwhere, unique, random.uniform, random.normal, random.multinomial
(Relax writes them as R.add + R.expand_dims, R.matmul + R.permute_dims, R.nn.adaptive_avg_pool2d,
R.max over the spatial axes, argwhere as R.nonzero transposed and cast ...; the dyn.* ops as
R.tensor_to_shape of the shape tensor, R.match_cast to fresh sizes, and the static op, but
dyn.strided_slice as R.dynamic_strided_slice, sized when legalized; R.topk, R.one_hot and
R.nn.pad take k, depth and the widths as attributes only, so dyn.topk, dyn.one_hot and dyn.nn.pad
have no counterpart (TVM 0.27's ONNX frontend requires them constant). TVM
0.27's R.unique gives outputs of the unique count's length (Relay's: of the input's) and its
Relax has no random-number generator: only R.multinomial_from_uniform, which samples at given
uniform values. passes/relay_to_relax.py says, per operator, why it has no translation.)
R.one_hot, R.image.grid_sample and R.vision.roi_align / roi_pool / all_class_non_max_suppression
reuse their Relay operators' relations and references; TVM 0.27's Relax differs in: one_hot's
on/off values are PrimValues giving the result's dtype and any negative axis counts from the end;
roi_align's `aligned` (no 1x1 minimum roi size); roi_pool takes NCHW only and rounds the roi's
corners half up (TOPI 0.27's floor(x + 0.5); Relay's rounded halves away from zero).
So is reshape_like (relay-to-relax writes it as R.reshape to the operands' dims).
`RELAY_ONLY` lists them; a test keeps it in step with the registry.

Where Relax's semantics differ from the Relay operator it maps to, `convert` bridges them:
reductions with `axis=[]` reduce nothing (Relay: everything); argmax/argmin give int64; split
into sections makes ceil-sized parts, the last one shorter (Relay requires equal parts);
split indices past the end give empty parts; expand_dims takes several axes; repeat without
an axis flattens first; take without an axis needs a 1-D tensor; where needs a bool condition;
gather_nd/scatter_nd take the index tuples on the last axis of the indices (Relay: the first);
pad's width is flat (before, after per axis) and its value an attribute, "replicate" and
"circular" are NumPy's "edge" and "wrap"; batch_norm with training=True normalises with the
batch statistics and returns the updated moving statistics (TOPI's batch_norm); variance takes
no mean argument; clip's bounds are PrimValue arguments; reshape/broadcast_to/full/zeros/ones/
resize2d take their shape as an argument.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..ir.expr import Attrs, TypedScalar
from . import registry, vision
from . import relax_attention as attention
from . import relax_creation as creation
from . import relax_index as rindex
from . import relax_norms as norms
from . import relax_qdq as qdq
from . import relax_scan_sort as scan_sort
from . import relax_vision as rv
from .common import np
from .dynamic import strided_slice_rel as _dyn_strided_slice_rel
from .elemwise import broadcast_rel
from .nn import _pad4, _pad6, _pair, _triple
from .registry import REQUIRED, AttrError, AttrSpec
from .relax_bridge import (
    _adaptive_pool,
    _arange,
    _arange_call,
    _arg_reduce,
    _batch_norm,
    _broadcast_to,
    _broadcast_to_deduce,
    _cast_to_attr,
    _clip,
    _concat,
    _dynamic_strided_slice,
    _dynamic_strided_slice_deduce,
    _expand_dims,
    _expand_dims_rel,
    _first,
    _full,
    _gather_elements,
    _gather_elements_rel,
    _gather_nd,
    _gather_nd_deduce,
    _init,
    _layer_norm,
    _layer_norm_rel,
    _matmul,
    _matmul_rel,
    _matmul_sym,
    _nonzero,
    _nonzero_rel,
    _one_hot,
    _output_padding_below_strides,
    _pad,
    _reduce,
    _repeat,
    _reshape,
    _reshape_settle,
    _resize2d,
    _resize_call,
    _rms_norm,
    _rms_norm_rel,
    _roi_pool_rel,
    _scatter_nd,
    _shape_of,
    _shape_of_rel,
    _shape_to_tensor,
    _shape_to_tensor_rel,
    _split,
    _split_rel,
    _squeeze_deduce,
    _strided_slice,
    _take,
    _tensor_to_shape,
    _tensor_to_shape_deduce,
    _tensor_to_shape_rel,
    _tile,
    _to_int64,
    _to_out_layout,
    _variance,
    _variance_rel,
    _where,
)
from .relax_decl import RelaxOp
from .relax_image import (
    AFFINE_GRID,
    RESIZE3D,
    affine_grid_call,
    affine_grid_ref,
    affine_grid_rel,
    resize3d_ref,
    resize3d_rel,
)
from .relax_symbolic import _arange_deduce, _reshape_sym, _strided_slice_deduce, _strided_slice_sym, window_sym
from .relax_window import (
    ADAPTIVE_POOL1D,
    CONV1D,
    CONV1D_T,
    adaptive_pool,
    ceil_pool,
    conv1d_ref,
    conv1d_rel,
    conv1d_transpose_ref,
    conv1d_transpose_rel,
    pool1d,
)

RELAY_ONLY = ("reinterpret", "copy", "annotation.stop_fusion", "nn.bias_add", "nn.dense", "nn.matmul",
              "reshape_like",  # relay-to-relax: R.reshape to the operands' dims
              "nn.batch_matmul", "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.lrn",
              "dyn.reshape", "dyn.broadcast_to", "dyn.full", "dyn.zeros", "dyn.ones", "dyn.strided_slice", "dyn.tile",
              "dyn.topk", "dyn.one_hot", "dyn.nn.pad", "dyn.image.resize2d",
              "argwhere", "unique", "random.uniform", "random.normal", "random.multinomial")


# ----------------------------------------------------------------------------- the table


def _A(name, kind, default=REQUIRED, normalize=None):
    return AttrSpec(name, kind, default, normalize)


def _args(spec: str) -> tuple:
    """"x shape:shape" -> (("x", "tensor"), ("shape", "shape"))."""
    out = []
    for item in spec.split():
        name, _, kind = item.partition(":")
        out.append((name, kind or "tensor"))
    return tuple(out)


_OPS: dict[str, RelaxOp] = {}


def _op(name: str, args: str, attrs=(), relay: str | None = None, **kw) -> None:
    if name in _OPS:
        raise ValueError(f"Relax operator {name} declared twice")
    _OPS[name] = RelaxOp(name, _args(args), tuple(attrs), relay, **kw)


UNARY = [
    # relax name          relay name     float only
    ("relax.negative",    "negative",    False),
    ("relax.abs",         "abs",         False),
    ("relax.exp",         "exp",         True),
    ("relax.log",         "log",         True),
    ("relax.sqrt",        "sqrt",        True),
    ("relax.rsqrt",       "rsqrt",       True),
    ("relax.sigmoid",     "sigmoid",     True),
    ("relax.tanh",        "tanh",        True),
    ("relax.erf",         "erf",         True),
    ("relax.floor",       "floor",       False),
    ("relax.ceil",        "ceil",        False),
    ("relax.round",       "round",       False),
    ("relax.trunc",       "trunc",       False),
    ("relax.sign",        "sign",        False),
    ("relax.sin",         "sin",         True),
    ("relax.cos",         "cos",         True),
    ("relax.tan",         "tan",         True),
    ("relax.asin",        "asin",        True),
    ("relax.acos",        "acos",        True),
    ("relax.atan",        "atan",        True),
    ("relax.sinh",        "sinh",        True),
    ("relax.cosh",        "cosh",        True),
    ("relax.asinh",       "asinh",       True),
    ("relax.acosh",       "acosh",       True),
    ("relax.atanh",       "atanh",       True),
    ("relax.nn.relu",     "nn.relu",     False),
    ("relax.logical_not", "logical_not", False),
    ("relax.bitwise_not", "bitwise_not", False),
    ("relax.isnan",       "isnan",       False),
    ("relax.isinf",       "isinf",       False),
]

BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power", "maximum",
          "minimum", "logical_and", "logical_or", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]

REDUCE = ["sum", "mean", "max", "min", "prod"]

# Attribute lists, in TVM 0.27's print order, with its Python API's defaults.
AXES = (_A("axis", "ints?", None), _A("keepdims", "bool", False))
ARG_AXIS = (_A("axis", "int?", None), _A("keepdims", "bool", False))
DTYPE_OPT = (_A("dtype", "dtype", ""),)
DTYPE = (_A("dtype", "dtype"),)
_WINDOW = (_A("strides", "ints", (1, 1), _pair), _A("padding", "ints", (0, 0, 0, 0), _pad4))
_DILATE = (_A("dilation", "ints", (1, 1), _pair), _A("groups", "int", 1))
OUT_DTYPE = (_A("out_dtype", "dtype", ""),)
_OUT = (_A("out_layout", "str", ""),) + OUT_DTYPE
CONV2D = _WINDOW + _DILATE + (_A("data_layout", "str", "NCHW"), _A("kernel_layout", "str", "OIHW")) + _OUT
CONV2D_T = (_WINDOW + (_A("output_padding", "ints", (0, 0), _pair),) + _DILATE
            + (_A("data_layout", "str", "NCHW"), _A("kernel_layout", "str", "IOHW")) + _OUT)
POOL2D = (_A("pool_size", "ints", (1, 1), _pair), _A("strides", "ints", (1, 1), _pair),
          _A("dilation", "ints", (1, 1), _pair), _A("padding", "ints", (0, 0, 0, 0), _pad4),
          _A("ceil_mode", "bool", False), _A("count_include_pad", "bool", False), _A("layout", "str", "NCHW"),
          _A("out_layout", "str", ""))
POOL_PYTHON_ORDER = ("pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad", "layout",
                       "out_layout")
# the 3-D forms (TVM 0.27's Conv3DAttrs, Pool3DAttrs): one value per axis D, H, W; padding
# (front, top, left, back, bottom, right). avg_pool3d's Python API counts the padding by default.
_WINDOW3 = (_A("strides", "ints", (1, 1, 1), _triple), _A("padding", "ints", (0,) * 6, _pad6))
_DILATE3 = (_A("dilation", "ints", (1, 1, 1), _triple), _A("groups", "int", 1))
CONV3D = _WINDOW3 + _DILATE3 + (_A("data_layout", "str", "NCDHW"), _A("kernel_layout", "str", "OIDHW")) + _OUT
CONV3D_T = (_WINDOW3 + (_A("output_padding", "ints", (0, 0, 0), _triple),) + _DILATE3
            + (_A("data_layout", "str", "NCDHW"), _A("kernel_layout", "str", "IODHW")) + _OUT)


def _pool3d(count_include_pad: bool) -> tuple:
    return (_A("pool_size", "ints", (1, 1, 1), _triple), _A("strides", "ints", (1, 1, 1), _triple),
            _A("dilation", "ints", (1, 1, 1), _triple), _A("padding", "ints", (0,) * 6, _pad6),
            _A("ceil_mode", "bool", False), _A("count_include_pad", "bool", count_include_pad),
            _A("layout", "str", "NCDHW"), _A("out_layout", "str", ""))


ADAPTIVE_POOL3D = (_A("output_size", "ints?", None, _triple), _A("layout", "str", "NCDHW"), _A("out_layout", "str", ""))
ADAPTIVE_POOL2D = (_A("output_size", "ints?", None, _pair), _A("layout", "str", "NCHW"), _A("out_layout", "str", ""))
BATCH_NORM = (_A("axis", "int"), _A("epsilon", "float", 1e-5), _A("center", "bool", True),
              _A("scale", "bool", True), _A("momentum", "float", 0.1), _A("training", "bool", True))
LAYER_NORM = (_A("axes", "ints"), _A("epsilon", "float", 1e-5), _A("center", "bool", True), _A("scale", "bool", True))
PAD = (_A("pad_width", "ints"), _A("pad_value", "float", 0.0), _A("pad_mode", "str", "constant"))
SPLIT = (_A("indices_or_sections", "int_or_ints"), _A("axis", "int", 0))
TAKE = (_A("axis", "int?", None), _A("mode", "str", "fast"))
REPEAT = (_A("repeats", "int"), _A("axis", "int?", None))
RESIZE2D = (_A("roi", "floats", (0.0, 0.0, 0.0, 0.0)), _A("layout", "str", "NCHW"), _A("method", "str", "linear"),
            _A("coordinate_transformation_mode", "str", "half_pixel"), _A("rounding_method", "str", "round"),
            _A("cubic_alpha", "float", -0.75), _A("cubic_exclude", "int", 0),
            _A("extrapolation_value", "float", 0.0), _A("out_dtype", "dtype", ""))
OUT_LAYOUT = (("out_layout", "data_layout"),)
POOL_OUT = (("out_layout", "layout"),)

for _name, _relay, _float in UNARY:
    _op(_name, "data" if _name == "relax.nn.relu" else "x", relay=_relay, float_only=_float)  # TVM's names
# TVM 0.27 lowers tirx.round to llvm.nearbyint (halves to even, as its VM computes R.round);
# the Relay reference rounds them away from zero (v0.19's llvm.round)
_OPS["relax.round"] = replace(_OPS["relax.round"], ref=lambda x: np.rint(x) if np.asarray(x).dtype.kind == "f" else x)
for _name in BINARY:
    _op(f"relax.{_name}", "x1 x2", relay=_name, float_only=_name == "power")  # TVM 0.27: power of floats only
for _name in REDUCE:
    _op(f"relax.{_name}", "x", AXES, _name, convert=_reduce)

# name                          args                             attributes    relay               extras
_op("relax.zeros_like",         "x",                             DTYPE_OPT,    "zeros_like",       convert=_first,
    post=_cast_to_attr)
_op("relax.ones_like",          "x",                             DTYPE_OPT,    "ones_like",        convert=_first,
    post=_cast_to_attr)
_op("relax.astype",             "x",                             DTYPE,        "cast")
_op("relax.clip",               "x min:prim max:prim",           (),           "clip",             convert=_clip)
_op("relax.where",              "condition x1 x2",               (),           "where",            convert=_where)
_op("relax.nn.leakyrelu",       "data",                          (_A("alpha", "float", 0.01),), "nn.leaky_relu",
    float_only=True)
_op("relax.argmax",             "x",                             ARG_AXIS,     "argmax",           convert=_arg_reduce,
    post=_to_int64)
_op("relax.argmin",             "x",                             ARG_AXIS,     "argmin",           convert=_arg_reduce,
    post=_to_int64)
_op("relax.variance",           "x",                             AXES,         "variance",         rel=_variance_rel,
    ref=_variance)
_op("relax.reshape",            "x shape:shape",                 (),           "reshape",          convert=_reshape,
    sym_rel=_reshape_sym, settle_args=_reshape_settle)
_op("relax.permute_dims",       "x",                             (_A("axes", "ints?", None),), "transpose")
_op("relax.squeeze",            "x",                             (_A("axis", "ints?", None),), "squeeze",
    rank_depends=lambda at: at["axis"] is None, deduce=_squeeze_deduce)
_op("relax.expand_dims",        "x",                             (_A("axis", "ints"),), "expand_dims",
    rel=_expand_dims_rel, ref=_expand_dims)
_op("relax.concat",             "tensors:tensors",               (_A("axis", "int?", 0),), "concatenate",
    convert=_concat)
_op("relax.stack",              "tensors:tensors",               (_A("axis", "int", 0),), "stack")
_op("relax.split",              "x",                             SPLIT,        "split",            rel=_split_rel,
    ref=_split)
_op("relax.strided_slice",      "x axes:prims begin:prims end:prims strides:prims?",
    (_A("assume_inbound", "bool", False),),                    "strided_slice",    convert=_strided_slice,
    sym_rel=_strided_slice_sym, deduce=_strided_slice_deduce)
_op("relax.dynamic_strided_slice", "x begin end strides",       (),           None,
    rel=_dyn_strided_slice_rel, ref=_dynamic_strided_slice, deduce=_dynamic_strided_slice_deduce)
_op("relax.take",               "x indices",                     TAKE,         "take",             convert=_take)
_op("relax.gather_elements",    "data indices",                  (_A("axis", "int", 0),), "gather",
    rel=_gather_elements_rel, ref=_gather_elements)
_op("relax.broadcast_to",       "x shape:shape",                 (),           "broadcast_to",
    convert=_broadcast_to, deduce=_broadcast_to_deduce)
_op("relax.tile",               "data",                          (_A("repeats", "ints"),), "tile", convert=_tile)
_op("relax.repeat",             "data",                          REPEAT,       "repeat",           convert=_repeat)
_op("relax.full",               "shape:shape fill_value",        DTYPE_OPT,    "full",             convert=_full)
_op("relax.zeros",              "shape:shape",                   DTYPE,        "zeros",            convert=_init)
_op("relax.ones",               "shape:shape",                   DTYPE,        "ones",             convert=_init)
_op("relax.arange",             "start:prim end:prim step:prim", DTYPE_OPT,    "arange",           convert=_arange,
    python_call=_arange_call, deduce=_arange_deduce)
_op("relax.shape_of",           "expr",                          (),           "shape_of",         rel=_shape_of_rel,
    ref=_shape_of)
_op("relax.tensor_to_shape",    "expr",                          (),           None,
    rel=_tensor_to_shape_rel, ref=_tensor_to_shape, deduce=_tensor_to_shape_deduce)
_op("relax.shape_to_tensor",    "expr:shape",                    (),           None,
    rel=_shape_to_tensor_rel, ref=_shape_to_tensor)
_op("relax.matmul",             "x1 x2",                         OUT_DTYPE,    None,               rel=_matmul_rel,
    ref=_matmul, sym_rel=_matmul_sym)
_op("relax.nn.conv2d",          "data weight",                   CONV2D,       "nn.conv2d",        derived=OUT_LAYOUT,
    sym_rel=window_sym("relax.nn.conv2d", "data_layout"))
_op("relax.nn.conv2d_transpose", "data weight",                  CONV2D_T,     "nn.conv2d_transpose",
    derived=OUT_LAYOUT, post=_output_padding_below_strides)
_op("relax.nn.max_pool2d",      "data",                          POOL2D,       "nn.max_pool2d",    derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("max", "HW"),
    sym_rel=window_sym("relax.nn.max_pool2d", "layout"))
_op("relax.nn.avg_pool2d",      "data",                          POOL2D,       "nn.avg_pool2d",    derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("avg", "HW"),
    sym_rel=window_sym("relax.nn.avg_pool2d", "layout"))
_op("relax.nn.conv3d",          "data weight",                   CONV3D,       "nn.conv3d",        derived=OUT_LAYOUT,
    sym_rel=window_sym("relax.nn.conv3d", "data_layout"))
_op("relax.nn.conv3d_transpose", "data weight",                  CONV3D_T,     "nn.conv3d_transpose",
    derived=OUT_LAYOUT, post=_output_padding_below_strides)
_op("relax.nn.max_pool3d",      "data",                          _pool3d(False), "nn.max_pool3d",  derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("max", "DHW"),
    sym_rel=window_sym("relax.nn.max_pool3d", "layout"))
_op("relax.nn.avg_pool3d",      "data",                          _pool3d(True), "nn.avg_pool3d",   derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("avg", "DHW"),
    sym_rel=window_sym("relax.nn.avg_pool3d", "layout"))
_op("relax.nn.adaptive_avg_pool2d", "data",                      ADAPTIVE_POOL2D, "nn.adaptive_avg_pool2d",
    convert=_adaptive_pool, derived=POOL_OUT, post=_to_out_layout)
_op("relax.nn.adaptive_avg_pool3d", "data",                      ADAPTIVE_POOL3D, None,
    derived=POOL_OUT, post=_to_out_layout, **adaptive_pool("DHW"))
# the 1-D forms (TVM 0.27's own ops; no Relay counterpart): relax_window's n-D relations over W
_op("relax.nn.conv1d",          "data weight",                   CONV1D,       None,               rel=conv1d_rel,
    ref=conv1d_ref, derived=OUT_LAYOUT, sym_rel=window_sym("relax.nn.conv1d", "data_layout"))
_op("relax.nn.conv1d_transpose", "data weight",                  CONV1D_T,     None,
    rel=conv1d_transpose_rel, ref=conv1d_transpose_ref, derived=OUT_LAYOUT, post=_output_padding_below_strides)
_op("relax.nn.max_pool1d",      "data",                          pool1d(False), None,              derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("max", "W"),
    sym_rel=window_sym("relax.nn.max_pool1d", "layout"))
_op("relax.nn.avg_pool1d",      "data",                          pool1d(True), None,               derived=POOL_OUT,
    positional_attrs=POOL_PYTHON_ORDER, post=_to_out_layout, **ceil_pool("avg", "W"),
    sym_rel=window_sym("relax.nn.avg_pool1d", "layout"))
_op("relax.nn.adaptive_avg_pool1d", "data",                      ADAPTIVE_POOL1D, None,            derived=POOL_OUT,
    post=_to_out_layout, **adaptive_pool("W"))
_op("relax.nn.batch_norm",      "data gamma beta moving_mean moving_var", BATCH_NORM, "nn.batch_norm",
    ref=_batch_norm)
_op("relax.nn.layer_norm",      "data gamma beta",               LAYER_NORM,   "nn.layer_norm",    rel=_layer_norm_rel,
    ref=_layer_norm)
RMS_NORM = (_A("axes", "ints", (-1,)), _A("epsilon", "float", 1e-5))
_op("relax.nn.rms_norm",        "data weight",                   RMS_NORM,     None,               rel=_rms_norm_rel,
    ref=_rms_norm)
# TVM 0.27's fused attention (relax_attention): R.nn.attention with a bias builds attention_bias
ATTENTION = (_A("scale", "float?", None, attention.scale_attr), _A("causal_mask", "str?", None),
             _A("window_size", "int?", None))
for _name, _args_spec, _order in (("attention", "query key value", ("bias",) + tuple(a.name for a in ATTENTION)),
                                  ("attention_bias", "query key value bias", None)):
    _op(f"relax.nn.{_name}",    _args_spec,                      ATTENTION,    None,  rel=attention.attention_rel,
        ref=attention.attention, deduce=attention.attention_deduce, positional_attrs=_order,
        python_call=attention.attention_call, python_op=attention.attention_op)
# named in the order they are written; a call stores (and prints) seqstart_k before max_seqlen_q
_op("relax.nn.attention_var_len", "queries keys values seqstart_q max_seqlen_q seqstart_k max_seqlen_k",
    ATTENTION, None, rel=attention.attention_rel, ref=attention.attention_var_len, deduce=attention.attention_deduce,
    python_call=attention.attention_var_len_call)
_op("relax.nn.softmax",         "data",                          (_A("axis", "int", -1),), "nn.softmax",
    float_only=True)
_op("relax.nn.log_softmax",     "data",                          (_A("axis", "int", -1),), "nn.log_softmax",
    float_only=True)
_op("relax.nn.dropout",         "data",                          (_A("rate", "float", 0.5),), "nn.dropout")
_op("relax.nn.pad",             "data",                          PAD,          "nn.pad",           convert=_pad,
    positional_attrs=("pad_width", "pad_mode", "pad_value"))
_op("relax.nn.prelu",           "data alpha",                    (_A("axis", "int", 1),), "nn.prelu")
_op("relax.nn.batch_flatten",   "data",                          (),           "nn.batch_flatten")
_op("relax.image.resize2d",     "data size:shape",               RESIZE2D,     "image.resize2d",   convert=_resize2d,
    python_call=_resize_call(2),
    ref_options=(("int_div_floor_only", True),))
_op("relax.image.resize3d",     "data size:shape",               RESIZE3D,     None,               rel=resize3d_rel,
    ref=resize3d_ref, python_call=_resize_call(3))
_op("relax.image.affine_grid",  "data size:shape",               AFFINE_GRID,  None,               rel=affine_grid_rel,
    ref=affine_grid_ref, python_call=affine_grid_call)
SCATTER = (_A("axis", "int", 0), _A("reduction", "str", "update"))
_op("relax.gather_nd",          "data indices",                  (_A("batch_dims", "int", 0),), "gather_nd",
    convert=_gather_nd, deduce=_gather_nd_deduce)
_op("relax.scatter_nd",         "data indices updates",          (_A("reduction", "str", "update"),), "scatter_nd",
    convert=_scatter_nd)
_op("relax.flip",               "data",                          (_A("axis", "int"),), "reverse")
_op("relax.scatter_elements",   "data indices updates",          SCATTER,      "scatter_elements")
_op("relax.einsum",             "operands:tensors",              (_A("subscripts", "str"),), "einsum",
    convert=lambda args, at, ctx: (list(args), {"equation": at["subscripts"]}))
# TVM 0.27's own relations and references (relax_scan_sort), with Relay counterparts (sort, argsort,
# topk, cumsum, cumprod: relay-to-relax renames is_ascend) or none (square, full_like)
SCAN = (_A("axis", "int?", None), _A("dtype", "dtype", ""), _A("exclusive", "bool", False))
SORT = (_A("axis", "int", -1), _A("descending", "bool", False))
TOPK = (_A("k", "int", 1), _A("axis", "int", -1), _A("ret_type", "str", "both"), _A("largest", "bool", True),
        _A("dtype", "dtype", "int32"))
_op("relax.square",             "x",                             (),           None,  rel=scan_sort._same,
    ref=scan_sort._square)
for _name, _ref in (("gelu", scan_sort._gelu), ("gelu_tanh", scan_sort._gelu_tanh), ("silu", scan_sort._silu),
                    ("selu", scan_sort._selu)):
    _op(f"relax.nn.{_name}",    "data",                          (),           None,  rel=scan_sort._same, ref=_ref,
        float_only=True)
_op("relax.isfinite",           "x",                             (),           None,  rel=scan_sort._bool_same_shape,
    ref=scan_sort._isfinite)
_op("relax.full_like",          "x fill_value",                  DTYPE_OPT,    None,  rel=scan_sort._full_like_rel,
    ref=scan_sort._full_like)
_op("relax.cumsum",             "data",                          SCAN,         "cumsum",  rel=scan_sort._scan_rel,
    ref=scan_sort._cumsum, sym_rel=scan_sort._scan_sym)
_op("relax.cumprod",            "data",                          SCAN,         "cumprod",  rel=scan_sort._scan_rel,
    ref=scan_sort._cumprod, sym_rel=scan_sort._scan_sym)
_op("relax.sort",               "x",                             SORT,         "sort",  rel=scan_sort._same,
    ref=scan_sort._sort)
_op("relax.argsort",            "data",                          SORT + (_A("dtype", "dtype", "int32"),), "argsort",
    rel=scan_sort._argsort_rel, ref=scan_sort._argsort)
_op("relax.topk",               "data",                          TOPK,         "topk",  rel=scan_sort._topk_rel,
    ref=scan_sort._topk, sym_rel=scan_sort._topk_sym)
# TVM 0.27's own normalisations, statistics and binary ops without Relay counterparts (relax_norms)
NORM = (_A("epsilon", "float", 1e-5), _A("center", "bool", True), _A("scale", "bool", True))
_op("relax.nn.group_norm",      "data gamma beta",               (_A("num_groups", "int"), _A("channel_axis", "int"),
                                                                  _A("axes", "ints")) + NORM, None,
    rel=norms._group_norm_rel, ref=norms._group_norm, sym_rel=norms._group_norm_rel)
_op("relax.nn.instance_norm",   "data gamma beta",               (_A("channel_axis", "int"), _A("axes", "ints")) + NORM,
    None, rel=norms._instance_norm_rel, ref=norms._instance_norm, sym_rel=norms._instance_norm_rel)
SOFTPLUS = (_A("beta", "float", 1.0), _A("threshold", "float", 20.0))
_op("relax.nn.softplus",        "data",                          SOFTPLUS,     None,  rel=scan_sort._same,
    ref=norms._softplus, float_only=True)
_op("relax.log_add_exp",        "x1 x2",                         (),           None,  rel=broadcast_rel,
    ref=norms._log_add_exp)
_op("relax.atan2",              "x1 x2",                         (),           None,  rel=broadcast_rel,
    ref=norms._atan2)
_op("relax.std",                "x",                             AXES,         None,  rel=_variance_rel, ref=norms._std)
_op("relax.nn.cross_entropy_with_logits", "predictions labels", (),        None,
    rel=norms._cross_entropy_rel, ref=norms._cross_entropy, sym_rel=norms._cross_entropy_rel)
NLL_LOSS = (_A("reduction", "str", "mean"), _A("ignore_index", "int", -100))
_op("relax.nn.nll_loss",        "predictions targets weights:tensor?",  NLL_LOSS,     None,
    rel=norms._nll_loss_rel, ref=norms._nll_loss, sym_rel=norms._nll_loss_rel)
_op("relax.median",             "x",                             AXES,         None,  rel=norms._median_rel,
    ref=norms._median)
_op("relax.nn.pixel_shuffle",   "data",                          (_A("upscale_factor", "int"),), None,
    rel=norms._pixel_shuffle_rel, ref=norms._pixel_shuffle, sym_rel=norms._pixel_shuffle_sym)
# TVM 0.27's counterparts of Relay's one_hot, argwhere, image.grid_sample and the vision ops (relay-to-relax
# maps them): one_hot's on/off values are PrimValues whose dtype is the result's; R.nonzero is argwhere
# transposed, int64, of a length known only at run time (its struct info keeps the rank only)
GRID_SAMPLE = (_A("method", "str", "bilinear"), _A("layout", "str", "NCHW"), _A("padding_mode", "str", "zeros"),
               _A("align_corners", "bool", False))
ROI_ALIGN = (_A("pooled_size", "ints", REQUIRED, _pair), _A("spatial_scale", "float"), _A("sample_ratio", "int", -1),
             _A("aligned", "bool", False), _A("layout", "str", "NCHW"), _A("mode", "str", "avg"))
ROI_POOL = (_A("pooled_size", "ints", REQUIRED, _pair), _A("spatial_scale", "float"), _A("layout", "str", "NCHW"))
_op("relax.one_hot",            "indices on_value:prim off_value:prim", (_A("depth", "int"), _A("axis", "int", -1)),
    "one_hot", convert=_one_hot, dtype_from_prim=1)
_op("relax.nonzero",            "x",                             (),           None,  rel=_nonzero_rel, ref=_nonzero)
_op("relax.image.grid_sample",  "data grid",                     GRID_SAMPLE,  "image.grid_sample")
_op("relax.vision.roi_align",   "data rois",                     ROI_ALIGN,    "vision.roi_align",
    ref=lambda data, rois, **at: vision._roi_align(data, rois, **at))
_op("relax.vision.roi_pool",    "data rois",                     ROI_POOL,     "vision.roi_pool",
    rel=_roi_pool_rel, ref=lambda data, rois, **at: vision._roi_pool(data, rois, round_half_up=True, **at))
_op("relax.vision.all_class_non_max_suppression",
    "boxes scores max_output_boxes_per_class iou_threshold score_threshold",
    (_A("output_format", "str", "onnx"),),                     "vision.all_class_non_max_suppression",
    rel=vision.nms_relax_rel, sym_rel=vision.nms_relax_sym,
    ref=lambda *args, **at: vision._all_class_nms(*args, topi_027=True, **at))
# TVM 0.27's Relax-only vision ops: struct info straight from the arguments' (relax_vision)
_op("relax.vision.get_valid_counts", "data", rv.GET_VALID_COUNTS_ATTRS, None,
    rel=rv.get_valid_counts_rel, deduce=rv.get_valid_counts_deduce, ref=rv._get_valid_counts_ref)
_op("relax.vision.non_max_suppression", "data valid_count indices", rv.NMS_ATTRS, None,
    rel=rv.non_max_suppression_rel, deduce=rv.non_max_suppression_deduce, ref=rv._non_max_suppression_ref)
_op("relax.vision.multibox_transform_loc", "cls_pred loc_pred anchor", rv.MULTIBOX_ATTRS, None,
    rel=rv.multibox_transform_loc_rel, deduce=rv.multibox_transform_loc_deduce, ref=rv._multibox_transform_loc_ref)

# TVM 0.27's index and layout operators (relax_index)
_op("relax.layout_transform",   "x", (_A("index_map", "any", REQUIRED, rindex.check_index_map),
                                      _A("pad_value", "any", None, rindex.check_pad_value)), None,
    rel=rindex.layout_transform_rel, ref=rindex.layout_transform_ref, sym_rel=rindex.layout_transform_sym,
    python_call=rindex.layout_transform_call)
_op("relax.index_tensor",       "data indices:tensors",          (),           None,
    rel=rindex.index_tensor_rel, ref=rindex.index_tensor_ref, deduce=rindex.index_tensor_deduce)
_op("relax.reverse_sequence",   "data seq_lengths",              (_A("seq_axis", "int", 1), _A("batch_axis", "int", 0)),
    None, rel=rindex.reverse_sequence_rel, ref=rindex.reverse_sequence_ref)
_op("relax.slice_scatter",      "input_tensor src start:prim end:prim step:prim", (_A("axis", "int", 0),), None,
    rel=rindex.slice_scatter_rel, ref=rindex.slice_scatter_ref, deduce=rindex.slice_scatter_deduce)
_op("relax.index_put",          "data indices:tensors values",   (_A("accumulate", "bool", False),), None,
    rel=rindex.index_put_rel, ref=rindex.index_put_ref, deduce=rindex.index_put_deduce)
for _name, _default in (("quantize", "int8"), ("dequantize", "float32")):
    _op(f"relax.{_name}", "data scale zero_point", (_A("out_dtype", "dtype", _default), _A("axis", "int", -1)), None,
        rel=qdq.qdq_rel(_name), ref=getattr(qdq, f"{_name}_ref"), deduce=qdq.qdq_deduce(_name),
        positional_attrs=("axis", "out_dtype"))
# TVM 0.27's creation and shape ops without a Relay counterpart (relax_creation): PrimValue k and sizes
for _name, _ref in (("tril", creation._tril), ("triu", creation._triu)):
    _op(f"relax.{_name}",       "x k:prim",                      (),           None,  rel=creation._trilu_rel, ref=_ref,
        deduce=creation._trilu_deduce, python_call=creation._k_default)
_op("relax.eye",                "n:prim m:prim k:prim",          (_A("dtype", "dtype", "float32"),), None,
    rel=creation._eye_rel, ref=creation._eye, deduce=creation._eye_deduce, python_call=creation._eye_call)
_op("relax.eye_like",           "x k:prim",                      DTYPE_OPT,    None,  rel=creation._eye_like_rel,
    ref=creation._eye_like, deduce=creation._eye_like_deduce, python_call=creation._k_default)
_op("relax.outer",              "x1 x2",                         (),           None,  rel=creation._outer_rel,
    ref=creation._outer)
_op("relax.flatten",            "x",                             (),           None,  rel=creation._flatten_rel,
    ref=creation._flatten, sym_rel=creation._flatten_sym)
_op("relax.size",               "expr",                          (),           None,  rel=creation._size_rel,
    ref=creation._size)
_op("relax.meshgrid",           "tensors:tensors",               (_A("indexing", "str?", "ij"),), None,
    rel=creation._meshgrid_rel, ref=creation._meshgrid)
_op("relax.collapse_sum_to",    "data shape:shape",              (),           None,
    rel=creation._collapse_sum_to_rel, ref=creation._collapse_sum_to)
_op("relax.collapse_sum_like",  "data collapse_target",          (),           None,
    rel=creation._collapse_sum_like_rel, ref=creation._collapse_sum_like)
_op("relax.hamming_window",     "window_size:prim periodic:prim alpha:prim beta:prim", (_A("dtype", "dtype"),), None,
    rel=creation._hamming_rel, ref=creation._hamming_window)
_op("relax.bucketize",          "input_tensor boundaries",       (_A("out_int32", "bool", False),
                                                                  _A("right", "bool", False)), None,
    rel=creation._bucketize_rel, ref=creation._bucketize)


# ----------------------------------------------------------------------------- API


def lookup(relax_name: str) -> RelaxOp | None:
    return _OPS.get(relax_name)


def get(relax_name: str) -> RelaxOp:
    op = _OPS.get(relax_name)
    if op is None:
        raise KeyError(f"unknown Relax operator `{relax_name}`")
    return op


def relax_ops() -> dict[str, RelaxOp]:
    return dict(sorted(_OPS.items()))


def relay_only_ops() -> list[str]:
    """Registry operators that no Relax operator maps to."""
    mapped = {op.relay for op in _OPS.values()}
    return [name for name in registry.all_ops() if name not in mapped]


def _tuples(value):
    """Lists (as Python callers write them) are tuples in Attrs."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def make_call_attrs(op: RelaxOp, given) -> Attrs | None:
    """All attributes of a call of `op` (a dict or Attrs of the given ones), checked, normalised,
    with the defaults filled in, in TVM's print order. None for an operator without attributes
    (TVM's call.attrs is then null). Raises AttrError naming the first offending attribute."""
    values = dict(given.items()) if given else {}
    if not op.attrs:
        if values:
            raise AttrError(f"operator `{op.name}` has no attribute `{next(iter(values))}`")
        return None
    for key in values:
        if key not in op._specs:
            known = ", ".join(a.name for a in op.attrs)
            raise AttrError(f"operator `{op.name}` has no attribute `{key}` (attributes: {known})")
    items = {}
    derived = dict(op.derived)
    for spec in op.attrs:
        if spec.name in derived and values.get(spec.name, "") is None:
            del values[spec.name]  # `out_layout=None`: TVM's Python API makes it the input's layout
        if spec.name in values:
            value = values[spec.name]
            if value is None and spec.kind == "dtype":  # `out_dtype=None`: TVM's void dtype
                value = ""
            value = _tuples(value)
            if isinstance(value, TypedScalar) and spec.kind in ("float", "floats"):
                value = value.value
            value = registry._convert(spec.kind, value, f"attribute `{spec.name}` of `{op.name}`")
            if spec.normalize is not None and value is not None:
                value = spec.normalize(value)
        elif spec.default is REQUIRED:
            raise AttrError(f"operator `{op.name}` requires attribute `{spec.name}`")
        else:
            value = spec.default
        items[spec.name] = value
    for name, source in op.derived:
        if not items[name]:
            items[name] = items[source]
    return Attrs(list(items.items()))


def _attr_dict(op: RelaxOp, attrs) -> dict:
    full = make_call_attrs(op, attrs)
    return dict(full.items()) if full is not None else {}


def infer(op_name: str, args: list, attrs):
    """The Relay-level result type of a call, for argument types (see `RelaxOp.infer`)."""
    op = get(op_name)
    return op.infer(list(args), _attr_dict(op, attrs))


def _as_number(v):
    if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic):
        return v.item()
    return v


def evaluate(call_op_name: str, arg_values: list, attrs, arg_dtypes: list | None = None) -> Any:
    """Run the reference of a Relax call: tensors are NumPy arrays, tuples of tensors tuples of
    arrays, shapes tuples of ints, prim values numbers (with `arg_dtypes`, the arguments' dtypes,
    0-d arrays of their dtype for an op whose result dtype is a prim's). Returns an array, a
    tuple of arrays, or (R.shape_of) a tuple of ints."""
    op = get(call_op_name)
    args = []
    for i, (kind, v) in enumerate(zip(op.arg_kinds, arg_values)):
        if kind == "tensor":
            v = np.asarray(v)
        elif kind == "tensors":  # one tensor where TVM also takes one (R.index_put's indices)
            v = (v,) if isinstance(v, np.ndarray) else tuple(np.asarray(x) for x in v)
        elif kind in ("shape", "prims"):
            v = tuple(int(_as_number(x)) for x in v)
        elif kind == "prim":
            v = _as_number(v)
            if op.dtype_from_prim is not None:
                if not arg_dtypes or not arg_dtypes[i]:
                    raise ValueError(f"{call_op_name} needs the dtypes of its prim arguments")
                v = np.asarray(v, dtype=arg_dtypes[i])
        args.append(v)
    with np.errstate(all="ignore"):
        return op.run(args, _attr_dict(op, attrs))
