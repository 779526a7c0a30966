"""ONNX -> Relay: TVM's `relay.frontend.from_onnx`, structured as the seed describes.

    model ──check opset, list unsupported ops (one error for all)──┐
          ├ initializers  -> Constants (freeze_params) or parameters (+ params dict)
          ├ graph inputs  -> Vars typed from the model, `shape=` overriding; an unknown
          │                  dimension warns and becomes `?`
          ├ nodes, in order: CONVERTERS[op_type] picks the implementation for the model's
          │                  opset (the newest `since_version` not above it) and returns
          │                  Relay expressions; every new call is typed on the spot and
          │                  folded to a constant when its inputs are constants (so
          │                  Shape -> Gather -> Concat -> Reshape becomes a static shape);
          │                  an op without a converter but with an ONNX function body is
          │                  replaced by the body's nodes (`functions.py`)
          └ outputs       -> the body (a tuple when there are several)

Converters live in family modules (`elemwise`, `nn`, `tensor`, `recurrent`, `indexing`),
one small function per ONNX op version, registered with `@converter("Relu", 6)`.
"""

from __future__ import annotations

import collections
import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from ...diagnostics import DiagnosticError
from ...ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from ...ir.module import IRModule
from ...ir.types import ANY, TensorType, TupleType
from . import functions

# ONNX TensorProto element types -> dtypes
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}
_ONNX_CODE_OF = {dtype: code for code, dtype in ONNX_DTYPES.items()}


class OnnxImportError(DiagnosticError):
    """A model irtool cannot import (unsupported ops, missing shapes, bad attributes)."""


@dataclass
class OnnxOp:
    """One ONNX op type: implementations keyed by the opset version they start at."""

    name: str
    versions: dict[int, Callable] = field(default_factory=dict)
    # for an op onnx has no schema of (com.microsoft's): the names of the inputs its converter
    # needs, by position (None: optional), and its required attributes
    inputs: tuple[str | None, ...] = ()
    attributes: tuple[str, ...] = ()

    def implementation(self, opset: int) -> Callable | None:
        usable = [v for v in self.versions if v <= opset]
        return self.versions[max(usable)] if usable else None


CONVERTERS: dict[str, OnnxOp] = {}
_FAMILIES = ("elemwise", "nn", "tensor", "select", "recurrent", "quantize", "signal", "indexing", "vision",
             "control", "legacy", "qlinear", "contrib", "training", "sequence", "aten", "sampling")
_loaded = False
# domains other than the default one whose ops have converters; their ops are keyed
# `domain.OpType` in CONVERTERS (and listed so by supported_ops()), so a `com.microsoft`
# QLinearAdd never shadows, or is shadowed by, a default-domain op of the same name
CONTRIB_DOMAINS = ("com.microsoft", "ai.onnx.ml", "ai.onnx.preview.training", "org.pytorch.aten")


def qualified_name(op_type: str, domain: str = "") -> str:
    """The CONVERTERS key of `op_type` in `domain`."""
    return op_type if domain in ("", "ai.onnx") else f"{domain}.{op_type}"


def converter(op_type: str, *since_versions: int, domain: str = "", inputs: tuple[str | None, ...] = (),
              attributes: tuple[str, ...] = ()):
    """Register a converter for `op_type` (of `domain`, the default ONNX one unless given)
    from each opset version given. A contrib domain's ops are versioned by the model's
    default-domain opset: their ops register at 1 and have one version. `inputs` and
    `attributes` declare, for an op without an ONNX schema, the inputs (by position, None
    for an optional one) and attributes that must be given."""
    if domain not in ("", "ai.onnx") and domain not in CONTRIB_DOMAINS:
        raise ValueError(f"unknown ONNX domain {domain!r}")
    key = qualified_name(op_type, domain)

    def register(fn: Callable) -> Callable:
        op = CONVERTERS.setdefault(key, OnnxOp(key, inputs=inputs, attributes=attributes))
        for v in since_versions or (1,):
            op.versions[v] = fn
        return fn
    return register


def converters() -> dict[str, OnnxOp]:
    global _loaded
    if not _loaded:
        _loaded = True
        for family in _FAMILIES:
            importlib.import_module(f"{__name__}.{family}")
    return CONVERTERS


def supported_ops() -> list[str]:
    return sorted(converters())


# ----------------------------------------------------------------------------- conversion context


# ops that only move the elements of a shape value: their NumPy references run on
# object arrays holding ints and symbolic sizes (cast keeps the elements)
_SHAPE_MOVES = frozenset({"take", "expand_dims", "concatenate", "strided_slice", "squeeze", "reshape", "cast"})


class Context:
    """What a converter sees: the node, the opset, and helpers to build typed Relay."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.node = None
        self.env: dict = {}  # name -> expression, of the graph being converted
        self.table: dict = {}
        self._partial: dict[int, object] = {}
        self.sym_cache: dict[int, tuple] = {}  # id -> (expr, the sizes of its axes), symbolic.sym_dims
        self.optionals: dict[int, Expr] = {}  # id -> the tuples that are ONNX optionals (sequence.py)
        self.unseeded_random_nodes = 0  # the seed of the next random node without one (sampling.py)
        from ...analysis.type_infer import TypeInferencer

        self._types = TypeInferencer()

    def subgraph(self, graph, bound: dict) -> list:
        """Convert a node's subgraph (an If branch, a Loop or Scan body) in a scope over the
        enclosing one, its inputs bound to `bound` (name -> expression); its outputs."""
        import numpy as np

        outer_env, node, opset = self.env, self.node, self.opset
        self.env = collections.ChainMap(dict(bound), outer_env)
        try:
            for init in graph.initializer:
                self.env[init.name] = self.typed(Constant(np.array(tensor_array(init, f"initializer `{init.name}`"))))
            _check_supported(graph.node, self.table, opset)
            _convert_nodes(self, graph.node, opset)
            missing = [o.name for o in graph.output if o.name not in self.env]
            if missing:
                raise self.error(f"subgraph output `{missing[0]}` is not produced")
            return [self.env[o.name] for o in graph.output]
        finally:
            self.env, self.node, self.opset = outer_env, node, opset

    def error(self, message: str) -> OnnxImportError:
        node = self.node
        if node is None:
            where = "the model"
        elif node.name:
            where = f"node `{node.name}` ({node.op_type})"
        else:  # an unnamed node is found by what it computes
            outputs = ", ".join(f"`{o}`" for o in node.output if o)
            where = f"the {node.op_type} node computing {outputs}" if outputs else f"a {node.op_type} node"
        return OnnxImportError(f"{where}: {message}")

    def const(self, value, dtype: str | None = None) -> Constant:
        import numpy as np

        return self.typed(Constant(np.asarray(value, dtype=dtype)))

    def call(self, op: str, *args, **attrs) -> Expr:
        """`op(args, attrs)` with the attributes checked, typed, and folded when constant."""
        from ...ops.registry import AttrError, make_call

        try:
            expr = make_call(op, *args, **attrs)
        except (AttrError, KeyError) as err:
            raise self.error(str(err)) from None
        return self.fold(self.typed(expr))

    def typed(self, expr: Expr) -> Expr:
        """Give `expr` (and its untyped sub-expressions) their types."""
        from ...analysis.type_infer import MissingTypeInfo
        from ...ir.visitor import post_order
        from ...ops.registry import TypeRelError

        if expr.checked_type is not None:
            return expr
        for node in post_order(expr, enter_functions=False):
            if node.checked_type is None:
                try:
                    node.checked_type = self._types.type_of(node)
                except (DiagnosticError, TypeRelError, MissingTypeInfo) as err:
                    raise self.error(str(err)) from None
        return expr

    def type_of(self, expr: Expr):
        return self.typed(expr).checked_type

    def shape_of(self, expr: Expr) -> tuple:
        t = self.type_of(expr)
        if not isinstance(t, TensorType):
            raise self.error("expected a tensor")
        return t.shape

    def fold(self, expr: Expr) -> Expr:
        """A call whose arguments are all constants (or `shape_of` a static shape) becomes
        a constant: shape arithmetic disappears at import, as TVM's importer does."""
        import numpy as np

        from ...ops.registry import call_attrs, lookup

        if not isinstance(expr, Call) or not isinstance(expr.op, Op):
            return expr
        opdef = lookup(expr.op.name)
        if opdef is None or opdef.stateful or opdef.ref is None:
            return expr
        if expr.op.name == "shape_of":
            shape = self.shape_of(expr.args[0])
            if ANY in shape:
                return expr
            return self.const(np.array(shape, dtype=expr.checked_type.dtype))
        if not all(isinstance(a, Constant) and a.data is not None for a in expr.args):
            return expr
        attrs = call_attrs(opdef, expr.attrs)
        value = opdef.ref(*[a.data for a in expr.args], **(dict(attrs.items()) if attrs else {}))
        if isinstance(value, tuple):
            return expr
        return self.const(np.asarray(value, dtype=expr.checked_type.dtype))

    def value(self, expr: Expr | None):
        """The NumPy value of a constant input (e.g. Reshape's shape), else None."""
        if isinstance(expr, Constant) and expr.data is not None:
            return expr.data
        return None

    def partial(self, expr: Expr | None):
        """The value of an integer shape computation as a NumPy object array of ints and
        symbolic sizes (`symbolic.Mono`: known only at run time, but known to equal other
        dims; `symbolic.UNKNOWN`), or None. `Shape -> Gather -> Unsqueeze -> Concat` of a
        tensor with a `?` batch N gives `[N, -1]`, say, and `Mul(N, 4)` gives `4*N`, which
        lets a Reshape stay static (`newshape=[0, -1]`) where TVM would build `dyn.reshape`."""
        import numpy as np

        from ...ops.registry import call_attrs, lookup
        from .symbolic import ARITHMETIC, arithmetic, sym_dims

        if expr is None:
            return None
        key = id(expr)
        if key in self._partial:
            return self._partial[key][1]
        value = None
        if isinstance(expr, Constant) and expr.data is not None and expr.data.dtype.kind in "iu":
            value = expr.data.astype(object)
        elif isinstance(expr, Call) and isinstance(expr.op, Op):
            name = expr.op.name
            if name == "shape_of":
                value = np.array(sym_dims(self, expr.args[0]), dtype=object)
            elif name in _SHAPE_MOVES or name in ARITHMETIC:
                args = [self._partial_arg(a) for a in expr.args]
                if all(a is not None for a in args):
                    opdef = lookup(name)
                    attrs = call_attrs(opdef, expr.attrs)
                    attrs = dict(attrs.items()) if attrs else {}
                    try:
                        value = args[0] if name == "cast" else arithmetic(name, *args) if name in ARITHMETIC \
                            else opdef.ref(*args, **attrs)
                    except (ValueError, TypeError, IndexError):
                        value = None
        self._partial[key] = (expr, value)  # the expr is kept alive so that its id stays its own
        return value

    def reshape_to(self, data: Expr, shape: Expr, allowzero: bool = False) -> Expr:
        """`data` reshaped to a shape computed at run time: a static `reshape` when the
        shape is known well enough, else TVM's `dyn.reshape`. Known well enough: every
        size an int, a symbolic size that `symbolic.newshape_for` finds among `data`'s
        dims (Relay's 0 copies, -3 merges two, -4 splits one), or the one size left to
        infer (-1)."""
        from .symbolic import UNKNOWN, Mono, newshape_for, sym_dims

        value = self.partial(shape)
        if value is not None and value.ndim == 1:
            if all(not isinstance(v, Mono) and v is not UNKNOWN for v in value):
                return self.call("reshape", data, newshape=tuple(int(v) for v in value), allowzero=allowzero)
            src = sym_dims(self, data)
            target = []
            for i, v in enumerate(value):
                if isinstance(v, Mono) or v is UNKNOWN:
                    target.append(v)
                elif int(v) == -1:
                    target.append(UNKNOWN)
                elif int(v) == 0 and not allowzero and i < len(src):
                    target.append(src[i])  # ONNX's 0 copies the dim at the same index
                elif int(v) > 0:
                    target.append(int(v))
                else:
                    target = None
                    break
            newshape = newshape_for(src, target) if target is not None else None
            if newshape is not None:
                return self.call("reshape", data, newshape=newshape)
            like = self._reshape_like(data, shape, src, target) if target is not None else None
            if like is not None:
                return like
        return self.call("dyn.reshape", data, shape, allowzero=allowzero)

    def _reshape_like(self, data: Expr, shape: Expr, src: tuple, target: list) -> Expr | None:
        """`reshape_like(data, t, ...)` for a target no newshape expresses (N * S split back
        into N and S): t is a tensor whose `Shape` the target was computed from, holding the
        target's sizes in a row; the rest of the target must be `data`'s own leading and
        trailing dims."""
        from ...ir.visitor import post_order
        from .symbolic import UNKNOWN, sym_dims

        if any(v is UNKNOWN for v in target):
            return None
        sources = [n.args[0] for n in post_order(shape) if isinstance(n, Call) and isinstance(n.op, Op)
                   and n.op.name == "shape_of"]
        n = len(target)
        for t in sources:
            like = sym_dims(self, t)
            for lb in range(len(src) + 1):
                for le in range(len(src), lb - 1, -1):
                    tail = len(src) - le
                    if list(src[:lb]) != target[:lb] or tail > n - lb or list(src[le:]) != target[n - tail:]:
                        continue
                    middle = target[lb:n - tail]
                    for rb in range(len(like) - len(middle) + 1):
                        if middle and list(like[rb:rb + len(middle)]) == middle:
                            return self.call("reshape_like", data, t, lhs_begin=lb, lhs_end=le, rhs_begin=rb,
                                             rhs_end=rb + len(middle))
        return None

    def broadcast_to(self, data: Expr, shape: Expr) -> Expr:
        """`data` broadcast to a shape computed at run time: `data` itself when the shape
        is known to be its own (symbolic sizes included), a static `broadcast_to` when
        every size is an int, else TVM's `dyn.broadcast_to`."""
        from .symbolic import sym_dims

        value = self.partial(shape)
        if value is not None and value.ndim == 1:
            have = sym_dims(self, data)
            if len(have) == len(value) and all(h == v for h, v in zip(have, value)):
                return data
            if all(isinstance(v, int) for v in value):
                return self.call("broadcast_to", data, shape=tuple(value), dtype="")
        return self.call("dyn.broadcast_to", data, shape)

    def _partial_arg(self, arg):
        import numpy as np

        if isinstance(arg, Tuple):
            fields = [self.partial(f) for f in arg.fields]
            return None if any(f is None for f in fields) else fields
        value = self.partial(arg)
        return None if value is None else np.asarray(value, dtype=object)

    def element_type(self, code) -> str:
        """irtool's dtype of an ONNX element type code (a `to`/`dtype` attribute)."""
        dtype = ONNX_DTYPES.get(code) if isinstance(code, int) else None
        if dtype is None:
            raise self.error(f"unsupported element type {code}")
        return dtype

    def required_value(self, expr: Expr | None, what: str):
        v = self.value(expr)
        if v is None:
            raise self.error(f"{what} must be known at import time (a constant, or computed from static shapes)")
        return v


# ----------------------------------------------------------------------------- the importer


def _attribute(attr):
    from onnx import helper

    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    if attr.type == attr.TENSOR:
        return tensor_array(attr.t, f"attribute `{attr.name}`")
    return value


def tensor_array(tensor, what: str):
    """A TensorProto's value as a NumPy array; a diagnostic naming `what` when its element
    type has no irtool dtype or its data does not match its dims."""
    from onnx import numpy_helper

    if tensor.data_type not in ONNX_DTYPES:
        raise OnnxImportError(f"{what} has an element type irtool does not support (ONNX type {tensor.data_type})")
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError) as err:
        raise OnnxImportError(f"{what} cannot be read: {err}") from None


def _graph_opset(model, opset: int | None) -> int:
    if opset is not None:
        return opset
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 1


def _input_type(value_info, shape: dict | None, dtype) -> TensorType:
    name = value_info.name
    kind = value_info.type.WhichOneof("value")
    if kind not in (None, "tensor_type"):
        raise OnnxImportError(f"graph input `{name}` is of {kind.removesuffix('_type')} type: irtool imports only "
                              "tensor inputs (a sequence or optional is a tuple built inside the graph, known at "
                              "import)")
    ttype = value_info.type.tensor_type
    elem = ONNX_DTYPES.get(ttype.elem_type)
    if ttype.elem_type and elem is None:
        raise OnnxImportError(f"graph input `{name}` has an element type irtool does not support "
                              f"(ONNX type {ttype.elem_type})")
    if isinstance(dtype, dict):
        elem = dtype.get(name, elem)
    elif elem is None:
        elem = dtype
    if shape is not None and name in shape:
        dims = tuple(ANY if d is None or (isinstance(d, int) and d < 0) else int(d) for d in shape[name])
        return TensorType(dims, elem)
    if not ttype.HasField("shape"):
        raise OnnxImportError(f"graph input `{name}` has no shape; give one with shape={{'{name}': (...)}} "
                              f"(or `--shape {name}=...`)")
    dims = []
    for d in ttype.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        else:  # no value, a named dim, or an exporter's -1: unknown
            label = d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")
            warnings.warn(f"graph input `{name}` has an unknown dimension `{label}`; it becomes `?` "
                          f"(give shape={{'{name}': (...)}} to fix it)", stacklevel=3)
            dims.append(ANY)
    return TensorType(tuple(dims), elem)


def _implementation(table: dict, node, opset: int):
    """The node's converter at `opset`, or None for an op imported as its ONNX function."""
    op = table.get(qualified_name(node.op_type, node.domain))
    return op.implementation(opset) if op is not None else None


def _check_against_schema(ctx: Context, node, inputs: list) -> None:
    """Every input the op's schema requires is given, and no more inputs than it takes;
    every attribute it requires is there and each it declares has the declared type (a
    converter may then rely on them)."""
    import onnx

    try:
        schema = onnx.defs.get_schema(node.op_type, ctx.opset, node.domain)
    except onnx.defs.SchemaError:  # com.microsoft's and Caffe2's ops: what their converters declare
        _check_declared(ctx, node, inputs)
        return
    formal = list(schema.inputs)
    variadic = bool(formal) and formal[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    if len(inputs) > len(formal) and not variadic:
        raise ctx.error(f"takes at most {len(formal)} inputs, got {len(inputs)}")
    for i, param in enumerate(formal):
        if param.option == onnx.defs.OpSchema.FormalParameterOption.Optional:
            continue
        if param.option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            empty = next((k for k in range(i, len(inputs)) if inputs[k] is None), None)
            if empty is not None or (param.min_arity and len(inputs) <= i):
                raise ctx.error(f"input {i if empty is None else empty} (`{param.name}`) is required")
            break
        if i >= len(inputs) or inputs[i] is None:
            raise ctx.error(f"input {i} (`{param.name}`) is required")
    given = {a.name: a for a in node.attribute}
    for name, spec in schema.attributes.items():
        attr = given.get(name)
        if attr is None:
            if spec.required:
                raise ctx.error(f"attribute `{name}` is required")
        elif attr.type != int(spec.type):
            kind = onnx.AttributeProto.AttributeType.Name
            got = kind(attr.type) if attr.type in onnx.AttributeProto.AttributeType.values() else attr.type
            raise ctx.error(f"attribute `{name}` must be of type {kind(int(spec.type))}, got {got}")


def _check_declared(ctx: Context, node, inputs: list) -> None:
    """The inputs and attributes the converter of an op without an ONNX schema declares."""
    op = ctx.table.get(qualified_name(node.op_type, node.domain))
    if op is None:
        return
    for i, name in enumerate(op.inputs):
        if name is not None and (i >= len(inputs) or inputs[i] is None):
            raise ctx.error(f"input {i} (`{name}`) is required")
    given = {a.name for a in node.attribute}
    missing = [name for name in op.attributes if name not in given]
    if missing:
        raise ctx.error(f"attribute `{missing[0]}` is required")


def _check_supported(nodes, table: dict, opset: int) -> None:
    unsupported = sorted({qualified_name(n.op_type, n.domain) for n in nodes
                          if _implementation(table, n, opset) is None
                          and not functions.is_function_op(n.op_type, opset, n.domain)})
    if unsupported:
        raise OnnxImportError(f"the model uses operators irtool cannot import (opset {opset}): "
                              + ", ".join(unsupported))


def _type_proto(ctx, x):
    """An onnx TypeProto of a converted value (for context-dependent function bodies)."""
    from onnx import TypeProto, helper

    if x is None:
        return TypeProto()
    t = ctx.type_of(x)
    elem = _ONNX_CODE_OF.get(t.dtype, 0)
    return helper.make_tensor_type_proto(elem, [None if d is ANY else d for d in t.shape])


def _convert_nodes(ctx: Context, nodes, opset: int) -> None:
    """Convert `nodes` in order into `ctx.env` (ONNX functions expanded on the way)."""
    env, table = ctx.env, ctx.table
    pending = collections.deque((node, opset) for node in nodes)
    while pending:
        node, ctx.opset = pending.popleft()
        ctx.node = node
        for name in node.input:
            if name and name not in env:
                raise ctx.error(f"input `{name}` is not produced by any earlier node, initializer or graph input")
        inputs = [env[name] if name else None for name in node.input]
        _check_against_schema(ctx, node, inputs)
        impl = _implementation(table, node, ctx.opset)
        if impl is None:  # an ONNX function: its body's nodes come next
            body = functions.expand(node, ctx.opset, [_type_proto(ctx, x) for x in inputs])
            _check_supported([n for n, _ in body], table, max((v for _, v in body), default=ctx.opset))
            pending.extendleft(reversed(body))
            continue
        try:
            attrs = {a.name: _attribute(a) for a in node.attribute}
        except OnnxImportError as err:
            raise ctx.error(str(err)) from None
        try:
            out = impl(ctx, inputs, attrs)
        except OnnxImportError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError) as err:
            raise ctx.error(f"cannot convert: {err}") from None
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if isinstance(out, Expr) and isinstance(ctx.type_of(out), TupleType) and len(node.output) > 1:
            outs = [ctx.typed(TupleGetItem(out, i)) for i in range(len(node.output))]
        scope = env.maps[0] if isinstance(env, collections.ChainMap) else env  # a subgraph's own names
        for name, value in zip(node.output, outs, strict=False):
            if name in scope:  # ONNX names each value once
                raise ctx.error(f"output `{name}` is already defined (by an earlier node, an initializer or a "
                                "graph input)")
            if name:
                env[name] = ctx.typed(value)


def from_onnx(model, shape: dict | None = None, dtype="float32", opset: int | None = None,
              freeze_params: bool = True):
    """Convert an ONNX ModelProto (or a path to one) to `(IRModule, params)`.

    shape          {input name: dims} overriding the model's input shapes (-1/None: `?`)
    dtype          input dtype, or {input name: dtype}, where the model does not say
    opset          override the model's opset
    freeze_params  initializers become constants; otherwise the floating-point ones are
                   parameters of `main` after the graph inputs (`params` maps their names
                   to arrays) and integer ones (shapes, axes, indices) stay constants
    """
    import numpy as np

    if isinstance(model, str):
        model = load_model(model)
    graph = model.graph
    opset = _graph_opset(model, opset)
    table = converters()
    _check_supported(graph.node, table, opset)
    ctx = Context(opset)
    env: dict[str, Expr] = {}
    params: dict[str, object] = {}
    param_vars: list[Var] = []
    init_names = set()
    for init in graph.initializer:
        array = tensor_array(init, f"initializer `{init.name}`")
        init_names.add(init.name)
        # integer initializers are shapes, axes and indices: they stay constants even with
        # freeze_params=False, as irtool has no dynamic reshape (TVM would make them dynamic)
        if freeze_params or array.dtype.kind in "iub":
            env[init.name] = ctx.typed(Constant(np.array(array)))
        else:
            var = Var(init.name, TensorType(array.shape, str(array.dtype)))
            var.checked_type = var.type_annotation
            env[init.name] = var
            param_vars.append(var)
            params[init.name] = np.array(array)
    input_vars = []
    for value_info in graph.input:
        if value_info.name in init_names:
            continue
        var = Var(value_info.name, _input_type(value_info, shape, dtype))
        var.checked_type = var.type_annotation
        env[value_info.name] = var
        input_vars.append(var)
    ctx.table, ctx.env = table, env
    _convert_nodes(ctx, graph.node, opset)
    ctx.node = None
    missing = [o.name for o in graph.output if o.name not in env]
    if missing:
        raise OnnxImportError(f"graph output `{missing[0]}` is not produced by any node, initializer or input")
    from .sequence import is_optional

    # an optional graph output is its element (onnx's runners give the value itself)
    results = [env[o.name].fields[0] if is_optional(ctx, env[o.name]) and len(env[o.name].fields) == 1
               else env[o.name] for o in graph.output]
    body = results[0] if len(results) == 1 else ctx.typed(Tuple(results))
    fn = Function(input_vars + param_vars, body)
    return IRModule({"main": fn}), params


def load_model(path: str):
    """Read an ONNX file; a truncated or corrupt file is an OnnxImportError."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise OnnxImportError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as err:
        raise OnnxImportError(f"{path}: not a valid ONNX model (truncated or corrupt?): {err}") from None
    if not model.HasField("graph") or not model.graph.node and not model.graph.output:
        raise OnnxImportError(f"{path}: not a valid ONNX model (no graph)")
    return model


__all__ = ["CONTRIB_DOMAINS", "CONVERTERS", "Context", "OnnxImportError", "converter", "converters",
           "from_onnx", "load_model", "qualified_name", "supported_ops"]
