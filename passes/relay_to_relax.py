"""relay-to-relax: lower Relay functions to Relax, as TVM's former relay_translator did.

TVM <= 0.19 shipped `relax.testing.relay_translator.from_relay`: it walked a Relay
function in post-DFS order (`relay.analysis.post_order_visit`) inside one
`bb.dataflow()` block of a Relax BlockBuilder, and bound every Relay call to a new
dataflow variable. We do the same walk, but emit each Relay operator as its Relax
operator (the translator emitted TOPI PrimFuncs):

    def @main(%x: Tensor[(2, 4), float32],       @R.function
              %w: Tensor[(3, 4), float32]) {     def main(x: R.Tensor((2, 4), "float32"), w: ...):
      %0 = nn.dense(%x, %w, units=3);              with R.dataflow():
      nn.relu(%0)                          ==>         lv = R.permute_dims(w, axes=None)
    }                                                  lv1 = R.matmul(x, lv, out_dtype=None)
                                                       gv = R.nn.relu(lv1)
                                                       R.output(gv)
                                                   return gv

    parameters   each becomes a Relax parameter of the same name; a Relay type becomes
                 struct info, each `?` dimension a new symbolic variable `d` (int64)
    post order   each Relay call is converted by the table below into a Relax
                 expression, and `emit`ted: TVM's normaliser binds every nested call
                 first (left to right), so one Relay call may give several bindings;
                 names are TVM's: lv, lv1, lv2, ... in the block, gv for the output
    leaves       constants become Relax constants (R.const / metadata); tuples stay
                 unbound Relax tuples (operands of R.concat); a projection `%t.0` is bound
    the root     the function body is emitted with `emit_output` (bound to gv);
                 `let %v = value; body` chains are walked value by value
    result       Function(params, SeqExpr([DataflowBlock], gv)), its return struct
                 info the output's: `bb.emit_func_output(gv, params)`

The operator table (`DIRECT`, one line per operator) maps arguments one to one and
copies attributes by name (`renamed` where the names differ; `ignored` Relay attributes
that mean nothing in Relax). The others are small converter functions (`SPECIAL`):
nn.dense -> R.matmul(x, R.permute_dims(w)), nn.bias_add -> R.add with the bias reshaped
to broadcast, Relay's reshape codes (0, -1, -2, -3, -4) resolved to the result shape,
reductions with `exclude`, argmax's int32 result, clip's bounds as prim values, ... as
TVM's relay_translator and Relax frontends write them; a shape computed at run time (`dyn.*`)
is R.tensor_to_shape + R.match_cast + the static op (_relay_to_relax_dynamic.py). A let-bound
function (an imported ONNX Loop's recursive `while_loop`) is first lifted to a global function
with its free variables as extra parameters (_relay_lift_functions.py); calls of the module's
functions are Relax calls of them (a recursive one inside an R.If is TVM's Relax while loop).
A Relay operator without a Relax counterpart (`NO_COUNTERPART`), an attribute value Relax
cannot express, and constructs Relax cannot hold here (function expressions that are not
let-bound, references to global functions as values) are diagnostics at the offending
expression.

A function with `if` is taken in A-normal form (passes/to_a_normal_form.py: each value in the
innermost scope of its uses): runs of top-level bindings become dataflow blocks, each `if` an
R.If bound in a block of its own, its branches SeqExprs of non-dataflow bindings (named gv...,
as TVM's BlockBuilder names bindings outside dataflow); a value used outside its dataflow block
is emitted as an output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from irtool.analysis import struct_info as si
from irtool.analysis.type_infer import infer_types
from irtool.diagnostics import DiagnosticError
from irtool.ir import expr as relay
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import tir_vars
from irtool.ir.types import ANY, TensorType, TupleType
from irtool.ir.visitor import free_vars, post_order
from irtool.ops import registry
from irtool.ops import relax as relax_ops
from irtool.ops.transform import reshape_like_shape
from irtool.transform import ModulePass, register

from . import _relay_to_relax_dynamic as dynamic
from . import _relay_to_relax_windows as windows
from ._relax_block_builder import _LEAVES, BlockBuilder, _Unsupported
from ._relay_lift_functions import lift_local_functions
from ._symbolic_reshape import new_shape
from .dead_code_elimination import remove_all_unused
from .to_a_normal_form import to_a_normal_form

# ----------------------------------------------------------------------------- building Relax


def call(name: str, *args, **attrs) -> rx.Call:
    """`R.<name>(args…)` with TVM's full attributes (defaults filled in, print order)."""
    op = relax_ops.get(name)
    try:
        full = relax_ops.make_call_attrs(op, attrs)
    except registry.AttrError as err:
        raise _Unsupported(str(err)) from None
    return rx.Call(Op.get(name), args, full)


def shape_expr(values) -> rx.ShapeExpr:
    return rx.ShapeExpr(tuple(values))


def prims(values) -> rx.Tuple:
    """A tuple of int64 prim values (strided_slice's axes, begin, end, strides)."""
    return rx.Tuple([rx.PrimValue(tir.IntImm(int(v), "int64")) for v in values])


def f64(value: float) -> rx.PrimValue:
    """A Python float as TVM's Python API makes it a prim value: float64."""
    return rx.PrimValue(tir.FloatImm(float(value), "float64"))


# ----------------------------------------------------------------------------- types


def struct_info_of_type(t, span=None) -> rx.StructInfo:
    """A Relay parameter type as struct info; each `?` a new symbolic `d`, as the translator."""
    if isinstance(t, TensorType):
        dims = tuple(tir.Var("d", "int64") if d is ANY else int(d) for d in t.shape)
        return rx.TensorStructInfo(dims, t.dtype)
    if isinstance(t, TupleType):
        return rx.TupleStructInfo([struct_info_of_type(f, span) for f in t.fields])
    raise DiagnosticError(f"relay-to-relax: parameters must be tensors or tuples of tensors, got {t!r}", span)


def _dims(e) -> tuple:
    sinfo = e.struct_info
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple):
        raise _Unsupported("the operand's shape is not known")
    return sinfo.shape


def _static_dims(e, why: str) -> tuple:
    dims = _dims(e)
    if not all(isinstance(d, int) for d in dims):
        raise _Unsupported(f"{why} needs a static shape, got a symbolic one")
    return dims


def _ndim(e) -> int:
    return len(_dims(e))


def _dtype(e) -> str:
    return e.struct_info.dtype


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


# ----------------------------------------------------------------------------- the table
# Operators whose arguments map one to one; attributes are copied by Relax name.
#   relay op                  relax op                       renamed {relax: relay}     ignored Relay attributes


@dataclass(frozen=True)
class Direct:
    relax: str
    renamed: tuple[tuple[str, str], ...] = ()
    ignored: tuple[str, ...] = ()


_CONV_IGNORED = ("channels", "kernel_size")

DIRECT: dict[str, Direct] = {
    **{relay_name: Direct(relax_name) for relax_name, relay_name, _ in relax_ops.UNARY},
    **{name: Direct(f"relax.{name}") for name in relax_ops.BINARY},
    "zeros_like":             Direct("relax.zeros_like"),
    "ones_like":              Direct("relax.ones_like"),
    "cast":                   Direct("relax.astype"),
    "transpose":              Direct("relax.permute_dims"),
    "squeeze":                Direct("relax.squeeze"),
    "concatenate":            Direct("relax.concat"),
    "stack":                  Direct("relax.stack"),
    "tile":                   Direct("relax.tile",                 (("repeats", "reps"),)),
    "repeat":                 Direct("relax.repeat"),
    "nn.conv2d":              Direct("relax.nn.conv2d",            (), _CONV_IGNORED),
    "nn.conv2d_transpose":    Direct("relax.nn.conv2d_transpose",  (), _CONV_IGNORED),
    "nn.max_pool2d":          Direct("relax.nn.max_pool2d"),
    "nn.avg_pool2d":          Direct("relax.nn.avg_pool2d"),
    "nn.conv3d":              Direct("relax.nn.conv3d",            (), _CONV_IGNORED),
    "nn.conv3d_transpose":    Direct("relax.nn.conv3d_transpose",  (), _CONV_IGNORED),
    "nn.max_pool3d":          Direct("relax.nn.max_pool3d"),
    "nn.avg_pool3d":          Direct("relax.nn.avg_pool3d"),
    "nn.softmax":             Direct("relax.nn.softmax"),
    "nn.log_softmax":         Direct("relax.nn.log_softmax"),
    "nn.leaky_relu":          Direct("relax.nn.leakyrelu"),
    "nn.prelu":               Direct("relax.nn.prelu"),
    "nn.dropout":             Direct("relax.nn.dropout"),
    "nn.batch_flatten":       Direct("relax.nn.batch_flatten"),
    "cumsum":                 Direct("relax.cumsum"),
    "cumprod":                Direct("relax.cumprod"),
    "reverse":                Direct("relax.flip"),
    "scatter_elements":       Direct("relax.scatter_elements"),
    "einsum":                 Direct("relax.einsum",               (("subscripts", "equation"),)),
    "image.grid_sample":      Direct("relax.image.grid_sample"),
    "vision.roi_align":       Direct("relax.vision.roi_align"),
    "vision.roi_pool":        Direct("relax.vision.roi_pool"),
    "vision.all_class_non_max_suppression": Direct("relax.vision.all_class_non_max_suppression"),
}

# Relay operators with no Relax operator and no exact composition of Relax operators (TVM 0.27).
NO_COUNTERPART = {
    "reinterpret": "TVM 0.27's Relax has no reinterpret operator (R.memory.view changes a tensor's dtype "
                   "only as a VM builtin on its storage, which LegalizeOps leaves alone)",
    **{op: f"TVM 0.27's {relax} takes {what} as an attribute only (its ONNX frontend requires it constant)"
       for op, relax, what in (("dyn.topk", "R.topk", "k"), ("dyn.one_hot", "R.one_hot", "the depth"),
                               ("dyn.nn.pad", "R.nn.pad", "the pad widths"))},
    "unique": "Relay's outputs are as long as the input, the tail past num_unique unspecified; TVM 0.27's "
              "R.unique gives outputs of the unique count's length, known only at run time, and Relax "
              "cannot pad them back to a static length",
    **{op: "TVM 0.27's Relax has no random-number generator (only R.multinomial_from_uniform, which samples "
           "at given uniform values)" for op in ("random.uniform", "random.normal", "random.multinomial")},
}

Converter = Callable[["_Translator", relay.Call, list], object]
# shapes known at run time (dyn.*, shape_of of symbolic sizes): R.tensor_to_shape + match_cast;
# the global and adaptive pools and LRN (composed from an average pool)
SPECIAL: dict[str, Converter] = {**dynamic.CONVERTERS, **windows.CONVERTERS}


def special(*names: str) -> Callable[[Converter], Converter]:
    def add(fn: Converter) -> Converter:
        for name in names:
            SPECIAL[name] = fn
        return fn
    return add


def _relay_attr_default(op_name: str, attr: str):
    for spec in registry.get(op_name).attrs:
        if spec.name == attr:
            return spec.default
    return None


def _require_default(c: relay.Call, *attrs: str) -> None:
    for attr in attrs:
        value = c.attrs.get(attr) if c.attrs is not None else None
        default = _relay_attr_default(c.op.name, attr)
        if value is not None and value != default:
            raise _Unsupported(f"`{attr}={_show(value)}` has no Relax counterpart")


def _show(value) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def convert_direct(entry: Direct, c: relay.Call, args: list) -> rx.Call:
    op = relax_ops.get(entry.relax)
    renamed = dict(entry.renamed)
    relay_attrs = dict(c.attrs.items()) if c.attrs is not None else {}
    attrs = {}
    for spec in op.attrs:
        key = renamed.get(spec.name, spec.name)
        if key in relay_attrs:
            attrs[spec.name] = relay_attrs.pop(key)
    for key in entry.ignored:
        relay_attrs.pop(key, None)
    _require_default(c, *relay_attrs)
    return call(entry.relax, *args, **attrs)


# ----------------------------------------------------------------------------- converters


@special("copy", "annotation.stop_fusion")
def _identity(t, c, args):
    # Relax values are immutable (copy) and fusion is decided on Relax (stop_fusion)
    return args[0]


@special("sum", "mean", "max", "min", "prod")
def _reduce(t, c, args):
    return call(f"relax.{c.op.name}", args[0], axis=_reduce_axes(c, _ndim(args[0])), keepdims=c.attrs["keepdims"])


def _reduce_axes(c, ndim: int):
    """Relay's axis/exclude as Relax's axis: None (or Relay's []) reduces everything."""
    axis, exclude = c.attrs["axis"], c.attrs.get("exclude", False)
    if not exclude:
        return None if not axis else tuple(axis)
    named = {_axis(a, ndim) for a in axis or ()}
    return tuple(i for i in range(ndim) if i not in named)


@special("sort", "argsort", "topk")
def _sort(t, c, args):
    # Relay's is_ascend is Relax's descending (sort, argsort) or not largest (topk)
    at = dict(c.attrs.items())
    ascend = at.pop("is_ascend")
    at.update({"largest": not ascend} if c.op.name == "topk" else {"descending": not ascend})
    return call(f"relax.{c.op.name}", args[0], **at)


@special("gather_nd", "scatter_nd")
def _nd_index(t, c, args):
    # Relax wants each index tuple on the last axis of the indices, Relay has it on the first
    n = _ndim(args[1])
    moved = call("relax.permute_dims", args[1], axes=(*range(1, n), 0))
    if c.op.name == "gather_nd":
        return call("relax.gather_nd", args[0], moved, batch_dims=c.attrs["batch_dims"])
    return call("relax.scatter_nd", args[0], moved, args[2], reduction=c.attrs["mode"])


@special("argmax", "argmin")
def _arg_reduce(t, c, args):
    _require_default(c, "select_last_index")
    axes = _reduce_axes(c, _ndim(args[0]))
    if axes is not None and len(axes) != 1:
        raise _Unsupported(f"R.{c.op.name} reduces one axis or all, not {list(axes)}")
    found = call(f"relax.{c.op.name}", args[0], axis=None if axes is None else axes[0],
                 keepdims=c.attrs["keepdims"])
    return call("relax.astype", found, dtype="int32")  # Relay's index dtype; Relax gives int64


@special("variance")
def _variance(t, c, args):
    data, mean = args
    axes = _reduce_axes(c, _ndim(data))
    if not c.attrs.get("unbiased", False) and _is_mean_of(c.args[1], c.args[0], c.attrs):
        return call("relax.variance", data, axis=axes, keepdims=c.attrs["keepdims"])
    # a mean operand that is not the data's own mean: Relay's formula as written
    diff = t.bb.emit(call("relax.subtract", data, mean))  # bound once: it is used twice
    total = call("relax.sum", call("relax.multiply", diff, diff), axis=axes, keepdims=c.attrs["keepdims"])
    dims = _static_dims(data, "variance of a given mean")
    count = int(np.prod([dims[i] for i in (axes if axes is not None else range(len(dims)))]))
    count -= 1 if c.attrs.get("unbiased", False) else 0
    return call("relax.divide", total, rx.Constant(np.array(count, _dtype(data))))


def _is_mean_of(mean: relay.Expr, data: relay.Expr, attrs) -> bool:
    return (isinstance(mean, relay.Call) and isinstance(mean.op, Op) and mean.op.name == "mean"
            and mean.args[0] is data and mean.attrs["keepdims"]
            and mean.attrs["axis"] == attrs["axis"] and mean.attrs.get("exclude") == attrs.get("exclude"))


@special("clip")
def _clip(t, c, args):
    return call("relax.clip", args[0], f64(c.attrs["a_min"]), f64(c.attrs["a_max"]))


@special("where")
def _where(t, c, args):
    cond = args[0] if _dtype(args[0]) == "bool" else call("relax.astype", args[0], dtype="bool")
    return call("relax.where", cond, args[1], args[2])


@special("gather")
def _gather(t, c, args):
    if c.attrs["axis"] is None:
        raise _Unsupported("R.gather_elements needs an axis")
    return call("relax.gather_elements", args[0], args[1], axis=c.attrs["axis"])


@special("reshape")
def _reshape(t, c, args):
    return call("relax.reshape", args[0], shape_expr(new_shape(_dims(args[0]), c.attrs["newshape"],
                                                                  c.attrs.get("allowzero", False))))


@special("reshape_like")
def _reshape_like(t, c, args):
    # the target shape is the operands' (symbolic) dims; Relax has no reshape_like. The data's
    # own dims are needed only outside [lhs_begin, lhs_end) (its shape may be unknown, as after
    # an R.matmul of a product of symbolic sizes)
    sinfo = args[0].struct_info
    if isinstance(sinfo, rx.TensorStructInfo) and not isinstance(sinfo.shape, tuple) and sinfo.ndim >= 0:
        placeholder = tuple(f"<dim {i}>" for i in range(sinfo.ndim))
        shape = reshape_like_shape(placeholder, _dims(args[1]), c.attrs)
        if not any(isinstance(d, str) for d in shape):
            return call("relax.reshape", args[0], shape_expr(shape))
    return call("relax.reshape", args[0], shape_expr(reshape_like_shape(_dims(args[0]), _dims(args[1]), c.attrs)))


@special("expand_dims")
def _expand_dims(t, c, args):
    count = c.attrs["num_newaxis"]
    if count == 0:
        return args[0]
    first = _axis(c.attrs["axis"], _ndim(args[0]) + 1)
    return call("relax.expand_dims", args[0], axis=tuple(range(first, first + count)))


@special("strided_slice")
def _strided_slice(t, c, args):
    dims = _dims(args[0])
    begin, end, strides, axes = (c.attrs[k] for k in ("begin", "end", "strides", "axes"))
    axes = tuple(axes) if axes is not None else tuple(range(len(begin)))
    strides = tuple(strides or ())
    strides = strides + (strides[-1] if len(strides) == 1 and len(axes) > 1 else 1,) * (len(axes) - len(strides))
    if c.attrs["slice_mode"] == "size":
        sized = []
        for a, b, size in zip(axes, begin, end):
            d = dims[_axis(a, len(dims))]
            if size >= 0:
                sized.append(b + size)
            elif isinstance(d, int):
                sized.append(d)
            else:
                raise _Unsupported("slice_mode=\"size\" with size -1 needs a static dimension")
        end, strides = tuple(sized), (1,) * len(axes)
    return call("relax.strided_slice", args[0], prims(axes), prims(begin), prims(end), prims(strides))


@special("take")
def _take(t, c, args):
    _require_default(c, "batch_dims")
    data, axis = args[0], c.attrs["axis"]
    if axis is None:  # Relay takes from the flattened data; Relax from a 1-D one
        dims = _dims(data)
        if len(dims) != 1:
            data = call("relax.reshape", data, shape_expr(new_shape(dims, (-1,), False)))
        axis = 0
    return call("relax.take", data, args[1], axis=axis, mode=c.attrs["mode"])


@special("broadcast_to")
def _broadcast_to(t, c, args):
    return call("relax.broadcast_to", args[0], shape_expr(c.attrs["shape"]))


@special("full")
def _full(t, c, args):
    return call("relax.full", shape_expr(c.attrs["shape"]), args[0], dtype=c.attrs["dtype"] or _dtype(args[0]))


@special("zeros", "ones")
def _init(t, c, args):
    return call(f"relax.{c.op.name}", shape_expr(c.attrs["shape"]), dtype=c.attrs["dtype"] or "float32")


@special("arange")
def _arange(t, c, args):
    values = [_scalar_constant(a, "arange's start, stop and step") for a in c.args]
    dtype = c.attrs["dtype"]
    pv = [rx.PrimValue(tir.IntImm(int(v), "int64")) if float(v).is_integer() and dtype.startswith(("int", "uint"))
          else f64(v) for v in values]
    return call("relax.arange", *pv, dtype=dtype)


def _scalar_constant(e: relay.Expr, what: str):
    if not isinstance(e, relay.Constant) or e.data is None or e.data.size != 1:
        raise _Unsupported(f"{what} must be scalar constants")
    return e.data.reshape(()).item()


@special("split")
def _split(t, c, args):
    # TVM 0.27's R.split into one part is that tensor, not a tuple; Relay's is a tuple of one
    out = convert_direct(Direct("relax.split"), c, args)
    if isinstance(si.deduce_call("relax.split", [args[0].struct_info], out.attrs), rx.TensorStructInfo):
        return t.bb.tuple_of([t.bb.emit(out)])
    return out


@special("nn.pad")
def _pad(t, c, args):
    modes = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}
    mode = c.attrs["pad_mode"]
    if mode not in modes:
        raise _Unsupported(f'pad_mode="{mode}" has no Relax counterpart')
    value = _scalar_constant(c.args[1], "the pad value")
    flat = tuple(int(v) for pair in c.attrs["pad_width"] for v in pair)
    return call("relax.nn.pad", args[0], pad_width=flat, pad_value=float(value), pad_mode=modes[mode])


@special("nn.batch_norm")
def _batch_norm(t, c, args):
    # Relay's batch_norm is inference: normalise with (and return) the moving statistics
    return call("relax.nn.batch_norm", *args, axis=c.attrs["axis"], epsilon=c.attrs["epsilon"],
                center=c.attrs["center"], scale=c.attrs["scale"], training=False)


@special("nn.layer_norm")
def _layer_norm(t, c, args):
    return call("relax.nn.layer_norm", *args, axes=(c.attrs["axis"],), epsilon=c.attrs["epsilon"],
                center=c.attrs["center"], scale=c.attrs["scale"])


@special("nn.bias_add")
def _bias_add(t, c, args):
    data, bias = args
    ndim = _ndim(data)
    axis = _axis(c.attrs["axis"], ndim)
    if axis != ndim - 1:  # broadcast the bias along `axis`, as TVM's frontends reshape it
        bias = call("relax.reshape", bias, shape_expr((1,) * axis + _dims(bias) + (1,) * (ndim - axis - 1)))
    return call("relax.add", data, bias)


@special("nn.dense")
def _dense(t, c, args):
    return call("relax.matmul", args[0], call("relax.permute_dims", args[1]), out_dtype=c.attrs["out_dtype"])


@special("nn.matmul")
def _matmul(t, c, args):
    a, b = args
    a = call("relax.permute_dims", a) if c.attrs["transpose_a"] else a
    b = call("relax.permute_dims", b) if c.attrs["transpose_b"] else b
    return call("relax.matmul", a, b, out_dtype=c.attrs["out_dtype"])


@special("nn.batch_matmul")
def _batch_matmul(t, c, args):
    a, b = args
    a = call("relax.permute_dims", a, axes=(0, 2, 1)) if c.attrs["transpose_a"] else a
    b = call("relax.permute_dims", b, axes=(0, 2, 1)) if c.attrs["transpose_b"] else b
    return call("relax.matmul", a, b, out_dtype=c.attrs["out_dtype"])


@special("image.resize2d")
def _resize2d(t, c, args):
    at = c.attrs
    if at["size"] is None:
        raise _Unsupported("image.resize2d needs its size")
    return call("relax.image.resize2d", args[0], shape_expr(at["size"]), roi=tuple(at["roi"] or (0.0,) * 4),
                layout=at["layout"], method=at["method"],
                coordinate_transformation_mode=at["coordinate_transformation_mode"],
                rounding_method=at["rounding_method"], cubic_alpha=at["cubic_alpha"],
                cubic_exclude=at["cubic_exclude"], extrapolation_value=at["extrapolation_value"],
                out_dtype=at["out_dtype"])


@special("one_hot")
def _one_hot(t, c, args):
    # Relax takes the on/off values as PrimValues of the result's dtype (Relay: scalar tensors and a dtype)
    dtype = c.attrs["dtype"] or _dtype(args[1])
    values = []
    for arg, what in ((c.args[1], "one_hot's on_value"), (c.args[2], "one_hot's off_value")):
        v = _scalar_constant(arg, what)
        values.append(rx.PrimValue(tir.FloatImm(float(v), dtype) if dtype.startswith(("float", "bfloat"))
                                   else tir.IntImm(int(v), dtype)))
    return call("relax.one_hot", args[0], *values, depth=c.attrs["depth"], axis=c.attrs["axis"])


@special("argwhere")
def _argwhere(t, c, args):
    # R.nonzero is argwhere transposed, int64 (Relay's: int32)
    return call("relax.astype", call("relax.permute_dims", call("relax.nonzero", args[0])), dtype="int32")


def translated_ops() -> list[str]:
    """The Relay operators this pass translates."""
    return sorted(set(DIRECT) | set(SPECIAL))


# ----------------------------------------------------------------------------- the walk


class _Translator:
    def __init__(self, name: str, signatures: dict | None = None, mod: IRModule | None = None) -> None:
        self.name = name
        self.signatures = signatures or {}  # global name -> FuncStructInfo (calls between functions)
        self.mod = mod
        self.bb = BlockBuilder()
        self.bb.signatures = self.signatures
        self.env: dict[int, object] = {}  # id(Relay node) -> Relax expression
        self.folded_shapes = False  # a run-time shape was known here: its arithmetic is dead

    def function(self, fn: relay.Function) -> rx.Function:
        params = []
        sig = self.signatures.get(self.name)
        for i, p in enumerate(fn.params):
            sinfo = sig.params[i] if sig is not None else \
                struct_info_of_type(p.type_annotation or p.checked_type, p.span)
            var = rx.Var(p.name_hint, sinfo)
            self.env[id(p)] = var
            params.append(var)
        if any(isinstance(n, relay.If) for n in post_order(fn.body, enter_functions=False)):
            return self.function_with_ifs(to_a_normal_form(fn).body, params)
        body = fn.body
        while isinstance(body, relay.Let):  # let chains: value by value, in program order
            if isinstance(body.value, relay.Function):
                raise DiagnosticError("relay-to-relax: a let-bound function (closure) has no Relax dataflow "
                                      "counterpart", body.span)
            self.env[id(body.var)] = self.graph(body.value, is_root=False)
            body = body.body
        gv = self.bb.emit(self.graph(body, is_root=True), output=True)
        seq = rx.SeqExpr([rx.DataflowBlock(self.bb.bindings)], gv)
        seq.struct_info = gv.struct_info
        return rx.Function(params, seq, _well_defined(gv.struct_info, params))

    # -- Relay `if`: the function in A-normal form (each value in the innermost scope of its
    # uses), its top-level bindings in dataflow blocks, each `if` an R.If in a block of its own
    # with its branches' bindings outside dataflow; a value used outside its dataflow block is
    # an output (gv)

    def function_with_ifs(self, body: relay.Expr, params: list) -> rx.Function:
        lets, result = _let_chain(body)
        segment, k = [], 0
        for i, (_, value) in enumerate(lets):  # runs of non-if bindings; each if on its own
            k += isinstance(value, relay.If) or (i > 0 and isinstance(lets[i - 1][1], relay.If))
            segment.append(k)
        used_in = {}  # id(var) -> the segments (len(lets): the result) using it
        for j, expr in enumerate([v for _, v in lets] + [result]):
            for v in free_vars(expr):
                used_in.setdefault(id(v), set()).add(segment[j] if j < len(lets) else -1)
        blocks = []
        for i, (var, value) in enumerate(lets):
            if isinstance(value, relay.Function):
                raise DiagnosticError("relay-to-relax: a let-bound function (closure) has no Relax counterpart",
                                      value.span)
            if isinstance(value, relay.If):
                self._close_block(blocks, dataflow=False)
                self.env[id(var)] = self.bb.emit(self.if_(value))
                self._close_block(blocks, dataflow=True)
                continue
            escapes = bool(used_in.get(id(var), set()) - {segment[i]})
            out = self.graph(value, is_root=escapes)
            if escapes and (not isinstance(out, _LEAVES) or isinstance(out, rx.DataflowVar)):
                out = self.bb.emit(out, output=True)  # constants and parameters need no binding
            self.env[id(var)] = out
        out = self.env[id(result)] if id(result) in self.env else self.graph(result, is_root=True)
        if not isinstance(out, rx.Var) or isinstance(out, rx.DataflowVar):
            out = self.bb.emit(out, output=True)
        self._close_block(blocks, dataflow=True)
        seq = rx.SeqExpr(blocks, out)
        seq.struct_info = out.struct_info
        return rx.Function(params, seq, _well_defined(out.struct_info, params))

    def _close_block(self, blocks: list, dataflow: bool) -> None:
        block = self.bb.take_block()
        if block is not None and blocks and type(block) is rx.BindingBlock and type(blocks[-1]) is rx.BindingBlock:
            blocks[-1] = rx.BindingBlock(list(blocks[-1].bindings) + list(block.bindings))  # ifs in a row
        elif block is not None:
            blocks.append(block)
        self.bb.dataflow = dataflow

    def if_(self, e: relay.If) -> rx.If:
        cond = self.env.get(id(e.cond))
        if cond is None:
            cond = self.graph(e.cond, is_root=False)
        branches = [self.branch(b) for b in (e.true_branch, e.false_branch)]
        out = rx.If(cond, *branches, span=e.span)
        out.struct_info = si.lca(branches[0].struct_info, branches[1].struct_info)
        return out

    def branch(self, e: relay.Expr) -> rx.SeqExpr:
        """A branch (in A-normal form) as a SeqExpr of one non-dataflow block."""
        outer, self.bb.bindings = self.bb.bindings, []
        lets, result = _let_chain(e)
        for var, value in lets:
            if isinstance(value, relay.Function):
                raise DiagnosticError("relay-to-relax: a let-bound function (closure) has no Relax counterpart",
                                      value.span)
            self.env[id(var)] = self.bb.emit(self.if_(value)) if isinstance(value, relay.If) else \
                self.graph(value, is_root=False)
        out = self.env[id(result)] if id(result) in self.env else self.graph(result, is_root=False)
        if not isinstance(out, rx.Var):
            out = self.bb.emit(out)
        bindings, self.bb.bindings = self.bb.bindings, outer
        seq = rx.SeqExpr([rx.BindingBlock(bindings)] if bindings else [], out)
        seq.struct_info = out.struct_info
        return seq

    def graph(self, root: relay.Expr, is_root: bool):
        """Convert the dataflow graph under `root` in post-DFS order. The root's value is
        returned unbound when `is_root` (the caller emits it as the output)."""
        nodes = post_order(root, enter_functions=False)
        for node in nodes:  # reported as the let, not as its variable (which comes first)
            if isinstance(node, relay.Let) and isinstance(node.value, relay.Function):
                raise DiagnosticError("relay-to-relax: a let-bound function (closure; a recursive one is how an "
                                      "ONNX Loop or Scan of run-time length imports) has no Relax dataflow "
                                      "counterpart", node.var.span or node.span)
        for node in nodes:
            if id(node) in self.env or type(node) in (Op, relay.GlobalVar):  # callees: see `call`
                continue
            value = self.node(node)
            if node is not root or not is_root:
                if not isinstance(value, (*_LEAVES, rx.Tuple)):
                    value = self.bb.emit(value)
            self.env[id(node)] = value
        return self.env[id(root)]

    def node(self, node: relay.Expr):
        kind = type(node)
        if kind is relay.Call:
            return self.call(node)
        if kind is relay.Constant:
            if node.data is None:
                raise DiagnosticError("relay-to-relax: the constant has no data (the file has no #[metadata] "
                                      "section)", node.span)
            return rx.Constant(node.data)
        if kind is relay.Tuple:
            return self.bb.tuple_of([self.env[id(f)] for f in node.fields])
        if kind is relay.TupleGetItem:
            value = self.env[id(node.tuple_value)]
            if isinstance(value, rx.Tuple):  # a tuple built here (split into one part): its field
                return value.fields_[node.index]
            return rx.TupleGetItem(value, node.index)
        if kind is relay.Function and node.attrs is not None and node.attrs.get("Primitive"):
            # Relay's fuse-ops made it: no span of its own, so point at the first fused call
            span = node.span or next((n.span for n in post_order(node.body) if n.span is not None), None)
            raise DiagnosticError("relay-to-relax: a fused (Primitive) Relay function: translate the module "
                                  "before Relay's fuse-ops (the zero pipeline fuses the Relax)", span)
        what = {relay.Var: f"the free variable %{getattr(node, 'name_hint', '')}",
                relay.GlobalVar: f"the global function @{getattr(node, 'name_hint', '')}",
                relay.Function: "a function expression (closure)", relay.If: "`if`",
                relay.Let: "a let inside an expression"}.get(kind, kind.__name__)
        raise DiagnosticError(f"relay-to-relax: {what} has no Relax dataflow counterpart (the translator "
                              f"takes one function of operator calls)", node.span)

    def call(self, c: relay.Call):
        if isinstance(c.op, relay.GlobalVar) and c.op.name_hint in self.signatures:
            # a call of a translated function (a lifted loop calling itself included)
            gv = self.mod.get_global_var(c.op.name_hint) if self.mod is not None else c.op
            return rx.Call(gv, [self.env[id(a)] for a in c.args])
        if type(c.op) is not Op:
            callee = f"@{c.op.name_hint}" if isinstance(c.op, relay.GlobalVar) else "a function value"
            raise DiagnosticError(f"relay-to-relax: calls of {callee} are not supported (only operator calls "
                                  "and calls of the module's Relay functions)", c.span)
        name = c.op.name
        for a in c.args:
            if id(a) not in self.env:  # a global function as a value
                raise DiagnosticError(f"relay-to-relax: @{a.name_hint} as a value has no Relax dataflow "
                                      "counterpart", c.span)
        args = [self.env[id(a)] for a in c.args]
        try:
            if name in NO_COUNTERPART:
                raise _Unsupported(f"no Relax counterpart: {NO_COUNTERPART[name]}")
            if name in SPECIAL:
                return SPECIAL[name](self, c, args)
            if name in DIRECT:
                return convert_direct(DIRECT[name], c, args)
            raise _Unsupported("no Relax counterpart is known for this operator")
        except _Unsupported as err:
            raise DiagnosticError(f"relay-to-relax: `{name}`: {err}", c.span) from None


def _well_defined(sinfo, params: list):
    """The return struct info seen from outside (TVM's emit_func_output): sizes a match_cast
    binds inside the body (a run-time shape) are erased."""
    return si.erase_to_well_defined(sinfo, tir_vars([p.struct_info for p in params]))


def _let_chain(e: relay.Expr) -> tuple[list, relay.Expr]:
    lets = []
    while isinstance(e, relay.Let):
        lets.append((e.var, e.value))
        e = e.body
    return lets, e


def signature(fn: relay.Function) -> rx.FuncStructInfo:
    """A Relay function's Relax signature: its parameters' struct info (each `?` a fresh size)
    and its result's, erased to the parameters' sizes (what a caller sees)."""
    params = [struct_info_of_type(p.type_annotation or p.checked_type, p.span) for p in fn.params]
    ret_type = fn.ret_type if fn.ret_type is not None else getattr(fn.checked_type, "ret_type", None)
    ret = struct_info_of_type(ret_type, fn.span) if ret_type is not None else rx.ObjectStructInfo()
    return rx.FuncStructInfo(params, si.erase_to_well_defined(ret, tir_vars(params)))


def translate_function(fn: relay.Function, name: str = "main", signatures: dict | None = None,
                       mod: IRModule | None = None) -> rx.Function:
    """The Relay function `@name` (types inferred) as a Relax function; `signatures` (name ->
    FuncStructInfo) are the module's functions it may call."""
    translator = _Translator(name, signatures, mod)
    try:
        out = translator.function(fn)
    except _Unsupported as err:  # raised while binding (struct info), not at a call
        raise DiagnosticError(f"relay-to-relax: {err}", fn.span) from None
    return remove_all_unused(out, mod) if translator.folded_shapes else out


@register
@dataclass(frozen=True)
class RelayToRelax(ModulePass):
    name = "relay-to-relax"
    tvm_name = "RelayToRelax"
    opt_level = 0
    summary = "lower Relay functions to Relax dataflow blocks (TVM's former relay_translator)"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        if not any(isinstance(fn, relay.Function) for fn in mod.functions.values()):
            return mod
        mod = lift_local_functions(mod)  # let-bound functions (ONNX loops) become globals
        relay_fns = {name: fn for name, fn in mod.functions.items() if isinstance(fn, relay.Function)}
        infer_types(mod)
        signatures = {name: signature(fn) for name, fn in relay_fns.items()}
        functions = dict(mod.functions)
        for name, fn in relay_fns.items():
            functions[name] = translate_function(fn, name, signatures, mod)
        return mod.with_functions(functions)
