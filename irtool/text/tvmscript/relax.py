"""Relax functions in TVMScript: scopes of Relax vars, bindings grouped into blocks,
struct info deduced for every bound value, and the `R.` call table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lark import Tree

from ...ir import relax as rx
from ...ir import tir
from ...ir.expr import Attrs, GlobalVar, Op
from ...ir.types import is_valid_dtype
from ...ops import relax_memory
from . import index_map
from .evaluate import _Dotted, _Module
from .fused import FusedBinding, build_fused
from .relax_struct_info import (
    _annotated,
    _bind_symbols,
    _describe_sinfo,
    _incompatible,
    _StructInfoError,
    _tuples,
    _widen,
)
from .syntax import suite_stmts
from .tir_expr import _as_prim
from .tir_stmt import _TirBuilder

if TYPE_CHECKING:
    from .parser import _ModuleBuilder


def _python_scalar(value) -> tir.PrimExpr:
    """A Python number where Relax wants a scalar, as TVM's `relax.prim_value` converts it: bool,
    int -> int64, float -> float64 (`R.clip(x, 0.5, 6)`: `T.float64(0.5)`); TIR stays as it is."""
    if isinstance(value, float):
        return tir.const(value, "float64")
    return _as_prim(value, "int64")


_CALL_ATTRS: dict = {}  # (operator, text of its keyword arguments) -> checked Attrs, see op_call_args
_UNKNOWN = object()


class _RelaxBuilder(_TirBuilder):
    """Builds one Relax function. Shares the TIR builder's arithmetic for symbolic dims
    and its `T.` table (`R.prim_value(T.int64(1))`)."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        super().__init__(mb)
        self.defining_symbols = False
        self.blocks: list = []
        self.bindings: list = []
        self.dataflow_outputs: set[str] | None = None
        self.emitted: dict[str, int] = {}  # bindings emitted so far in this function, by name prefix

    e_lambdef = index_map.e_lambdef

    def undefined(self, name: str, node):
        if self.defining_symbols:
            var = tir.Var(name, "int64", span=self.span(node))
            self.scopes[0][name] = var
            return var
        return super().undefined(name, node)

    # -- struct info annotations
    def struct_info(self, node, define: bool = False) -> rx.StructInfo:
        saved = self.defining_symbols
        self.defining_symbols = saved or define
        try:
            value = self.eval(node)
        finally:
            self.defining_symbols = saved
        return self.as_struct_info(value, node)

    def as_struct_info(self, value, node) -> rx.StructInfo:
        if isinstance(value, rx.StructInfo):
            return value
        if isinstance(value, _Dotted):
            bare = {"R.Tensor": rx.TensorStructInfo, "R.Object": rx.ObjectStructInfo, "R.Any": rx.ObjectStructInfo,
                    "R.Shape": rx.ShapeStructInfo}
            if value.name in bare:
                return bare[value.name]()
            if value.name.startswith("T.") and is_valid_dtype(value.name[2:]):
                return rx.PrimStructInfo(value.name[2:])  # TVM 0.27 prints R.Prim("int64") as T.int64
        if isinstance(value, (tuple, list)):
            return rx.TupleStructInfo([self.as_struct_info(v, node) for v in value])
        self.error("expected struct info such as `R.Tensor((2, 3), dtype=\"float32\")`", node)

    def dims(self, values, node) -> tuple:
        out = []
        for d in values:
            if isinstance(d, str) and not d.isidentifier():
                d = self.string_dim(d, node)
            elif isinstance(d, str):
                d = self.lookup(d, node) if not self.defining_symbols else self.symbol(d, node)
            if isinstance(d, tir.IntImm):
                d = d.value
            if isinstance(d, bool) or not isinstance(d, (int, tir.PrimExpr)):
                self.error("a shape dimension must be an integer or a symbolic expression", node)
            if isinstance(d, tir.PrimExpr) and d.dtype != "int64":
                d = _widen(d)
            out.append(d)
        return tuple(out)

    def symbol_in_scope(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def symbol(self, name, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.undefined(name, node)

    def r_tensor(self, node, pos, kw):
        shape = pos[0] if pos else kw.pop("shape", None)
        dtype = pos[1] if len(pos) > 1 else kw.pop("dtype", None)
        if isinstance(shape, str) and dtype is None:  # TVM: `R.Tensor("float32", ndim=2)` names the dtype
            shape, dtype = None, shape
        ndim = self.ndim_value(kw.pop("ndim", -1), node)
        kw.pop("vdevice", None)
        if kw:
            self.error(f"`R.Tensor` has no argument `{next(iter(kw))}`", node)
        if dtype is None:
            dtype = ""
        if dtype and not is_valid_dtype(dtype):
            self.error(f"unknown data type `{dtype}`", node)
        if isinstance(shape, rx.Var):
            return rx.TensorStructInfo(shape, dtype, ndim)
        if shape is not None:
            dims = self.dims(shape if isinstance(shape, (tuple, list)) else [shape], node)
            if ndim != -1 and ndim != len(dims):
                self.error(f"`ndim={ndim}` does not match the shape's {len(dims)} dimensions", node)
            return rx.TensorStructInfo(dims, dtype)
        return rx.TensorStructInfo(None, dtype, ndim)

    def r_tuple_sinfo(self, node, pos, kw):
        if len(pos) == 1 and isinstance(pos[0], list):
            pos = pos[0]
        return rx.TupleStructInfo([self.as_struct_info(v, node) for v in pos])

    def r_shape_sinfo(self, node, pos, kw):
        values = pos[0] if pos else kw.get("values")
        if values is not None:
            return rx.ShapeStructInfo(self.dims(values, node))
        return rx.ShapeStructInfo(None, self.ndim_value(kw.get("ndim", -1), node))

    def ndim_value(self, ndim, node) -> int:
        if isinstance(ndim, tir.IntImm):
            ndim = ndim.value
        if not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < -1:
            self.error("`ndim` must be an integer, -1 for unknown", node)
        return ndim

    def r_prim_sinfo(self, node, pos, kw):
        dtype = pos[0] if pos else kw.get("dtype")
        value = kw.get("value")
        if value is not None:
            value = _as_prim(value, "int64") if not isinstance(value, str) else self.symbol(value, node)
            dtype = dtype or value.dtype
        if dtype is not None and (not isinstance(dtype, str) or not is_valid_dtype(dtype)):
            self.error(f"unknown data type `{dtype}`", node)
        return rx.PrimStructInfo(dtype or "int64", value)

    def r_object(self, node, pos, kw):
        return rx.ObjectStructInfo()

    def r_callable(self, node, pos, kw):
        params = pos[0] if pos else kw.get("params")
        ret = pos[1] if len(pos) > 1 else kw.get("ret", rx.ObjectStructInfo())
        purity = pos[2] if len(pos) > 2 else kw.get("purity", True)
        params = None if params is None else [self.as_struct_info(p, node) for p in params]
        return rx.FuncStructInfo(params, self.as_struct_info(ret, node), purity)

    # -- expressions
    def to_expr(self, value, node) -> rx.Expr:
        if isinstance(value, rx.Expr):
            return value
        if isinstance(value, (tuple, list)):
            fields = [self.leaf(self.to_expr(v, node), node) for v in value]
            return self.normalize(rx.Tuple(fields, span=self.span(node)))
        if isinstance(value, tir.PrimExpr):
            return rx.PrimValue(value, span=self.span(node))
        if isinstance(value, GlobalVar):
            return value
        if isinstance(value, str):
            return rx.StringImm(value, span=self.span(node))
        if isinstance(value, (int, float)):
            return rx.PrimValue(_python_scalar(value), span=self.span(node))
        self.error("expected a Relax expression", node)

    def keeps_arguments(self, node) -> bool:
        return self.dotted_callee(node) == "R.match_cast"  # TVM keeps a match_cast's value as written

    def argument(self, value, node):
        # bound as soon as evaluated, so nested calls are emitted in evaluation order
        return self.leaf(value, node) if isinstance(value, rx.Expr) else value

    def e_tuple(self, node):
        return tuple(self.leaf(v, c) if isinstance(v, rx.Expr) else v
                     for v, c in ((self.eval(c), c) for c in node.children))

    def leaf(self, expr, node):
        """TVM's normal form: an argument that is itself a call (or if, or tuple
        projection) is bound to a fresh variable first, as Relax's BlockBuilder does
        (`R.add(R.exp(x), x)` is `lv = R.exp(x); R.add(lv, x)`)."""
        if isinstance(expr, (rx.Call, rx.If, rx.TupleGetItem, rx.SeqExpr)):
            self.normalize(expr, node)
            dataflow = self.dataflow_outputs is not None
            var = (rx.DataflowVar if dataflow else rx.Var)(self.fresh_binding_name(), expr.struct_info)
            self.bindings.append(rx.VarBinding(var, expr, span=expr.span))
            return var
        return expr

    def fresh_binding_name(self) -> str:
        """TVM's parser names every binding it emits (named ones too, renamed after) from one
        supply, `lv`/`gv`, `lv1`...: nested calls are `lv`, `lv1`, `lv3` around a named one."""
        prefix = "lv" if self.dataflow_outputs is not None else "gv"
        count = self.emitted[prefix] = self.emitted.get(prefix, 0) + 1
        return f"{prefix}{count - 1}" if count > 1 else prefix

    def subscript(self, base, subs, node):
        if isinstance(base, rx.Expr) and not isinstance(base, rx.Constant):
            base = self.leaf(base, node)
            index = self.eval(subs.children[0])
            if not isinstance(index, int) or isinstance(index, bool):
                self.error("a tuple index must be an integer", node)
            sinfo = self.sinfo(base)
            if isinstance(sinfo, rx.TupleStructInfo) and not 0 <= index < len(sinfo.fields_):
                self.error(f"index {index} is out of range for a tuple of {len(sinfo.fields_)} fields", node)
            return self.normalize(rx.TupleGetItem(base, index, span=self.span(node)))
        if isinstance(base, (tuple, list)):  # a tuple literal: indexed as Python does, as TVM's parser
            index = self.eval(subs.children[0])
            if not isinstance(index, int) or isinstance(index, bool):
                self.error("a tuple index must be an integer", node)
            if not -len(base) <= index < len(base):
                self.error(f"index {index} is out of range for a tuple of {len(base)} fields", node)
            return base[index]
        return super().subscript(base, subs, node)

    def e_call(self, node):
        callee = self.eval(node.children[0])
        if isinstance(callee, _Dotted):
            name = callee.name
            if name in self.CALLS:
                return super().e_call(node)
            if name.startswith("R."):
                return self.op_call(name, node)
            self.error(f"unknown name `{name}`", node.children[0])
        pos, kw, pos_nodes = self.call_args(node)
        if isinstance(callee, (GlobalVar, rx.Var, rx.ExternFunc)):
            if kw:
                self.error("calls of functions take no keyword arguments", node)
            args = [self.leaf(self.to_expr(a, n), n) for a, n in zip(pos, pos_nodes, strict=True)]
            return self.normalize(rx.Call(callee, args, span=self.span(node)), node)
        self.error("this value cannot be called", node)

    def op_call(self, name: str, node):
        from ...ops import relax as relax_ops

        op_name = "relax." + name[2:]
        if op_name in relax_memory.MEMORY_OPS:
            return self.memory_op_call(op_name, node)
        op = relax_ops.lookup(op_name)
        if op is None:
            self.error(f"unknown name `{name}`", node.children[0])
        pos, kw, pos_nodes = self.call_args(node)
        return self.op_call_args(name, op, node, pos, kw, pos_nodes)

    def op_call_args(self, name: str, op, node, pos: list, kw: dict, pos_nodes: list, attrs_key=None):
        """The call of operator `R.<name>` (its OpDef `op`) on evaluated arguments. `attrs_key`
        (the fused path's text of the keyword arguments) names the attributes in a cache when
        the keywords are all attributes: checking them is a pure function of that text."""
        from ...ops import relax as relax_ops
        from ...ops.registry import AttrError

        arg_names = op.arg_names
        values, nodes = list(pos), list(pos_nodes)
        # attributes are taken positionally too, in the order of TVM's Python API (`R.astype(x, "float16")`)
        extra = values[len(arg_names):]
        order = op.positional_order
        if len(extra) > len(order):
            most = len(arg_names) + len(order)
            self.error(f"`{name}` takes at most {most} positional arguments, got {len(values)}", node)
        for attr, value in zip(order, extra):
            if attr in kw:
                self.error(f"`{name}` got attribute `{attr}` twice", node)
            kw[attr] = value
        del values[len(arg_names):], nodes[len(arg_names):]
        if extra:
            attrs_key = None
        for a in arg_names[len(values):]:
            if a not in kw:
                break
            values.append(kw.pop(a))
            nodes.append(node)
            attrs_key = None
        if op.python_call is not None:  # what TVM's Python API makes of the arguments (R.arange(n))
            try:
                values, kw = op.python_call(values, dict(kw))
            except (ValueError, TypeError) as err:
                self.error(f"`{name}` {err}", node)
            nodes += [node] * (len(values) - len(nodes))
            attrs_key = None
        if op.python_op is not None:  # TVM's Python API picks the operator (R.nn.attention with a bias)
            op = relax_ops.get(op.python_op(values))
            name = "R." + op.name[6:]
        while len(values) > op.min_args and values[-1] is None:  # an optional argument given as None
            values.pop()
            nodes.pop()
        if len(values) < op.min_args:
            self.error(f"`{name}` needs argument `{arg_names[len(values)]}`", node)
        args = [self.leaf(self.op_arg(kind, v, n), n) for kind, v, n in zip(op.arg_kinds, values, nodes, strict=False)]
        attrs = _CALL_ATTRS.get(attrs_key, _UNKNOWN) if attrs_key is not None else _UNKNOWN
        if attrs is _UNKNOWN:
            try:
                attrs = relax_ops.make_call_attrs(op, {k: _tuples(v) for k, v in kw.items()})
            except AttrError as err:
                self.error(str(err), node)
            if attrs_key is not None:
                if len(_CALL_ATTRS) >= 4096:  # a model has a few dozen; a long-lived process reads many
                    _CALL_ATTRS.clear()
                _CALL_ATTRS[attrs_key] = attrs  # Attrs are immutable: calls may share them
        call = self.normalize(rx.Call(Op.get("relax." + name[2:]), args, attrs, span=self.span(node)), node)
        if op.settle_args is not None:  # TVM's op constructor rewrites arguments (R.reshape's -1)
            settled = op.settle_args(list(call.args), call.struct_info)
            if settled is not None:
                sinfo, call = call.struct_info, rx.Call(call.op, settled, attrs, span=call.span)
                call.struct_info = sinfo
        return call

    def memory_op_call(self, op_name: str, node):
        """R.builtin.alloc_tensor / R.memory.*: arguments as TVM's Python constructors take
        them; `ty_args=` (TVM prints it on CallTIRRewrite's allocations) is kept."""
        op = relax_memory.MEMORY_OPS[op_name]
        pos, kw, _ = self.call_args(node)
        ty_args = kw.pop("ty_args", None)
        try:
            values = relax_memory.bind_arguments(op, pos, kw)
            args = [relax_memory.as_argument(kind, v) for (_, kind, _), v in zip(op.args, values, strict=True)]
        except ValueError as err:
            self.error(f"`R.{op_name[6:]}` {err}", node)
        sinfo_args = [self.as_struct_info(s, node) for s in (ty_args if isinstance(ty_args, (list, tuple))
                                                              else [ty_args] if ty_args is not None else [])]
        args = [self.leaf(a, node) for a in args]
        return self.normalize(rx.Call(Op.get(op_name), args, None, sinfo_args, span=self.span(node)), node)

    def op_arg(self, kind: str, value, node) -> rx.Expr:
        if kind == "shape" and isinstance(value, (tuple, list)):
            return rx.ShapeExpr(self.dims(value, node), span=self.span(node))
        if kind == "prim" and not isinstance(value, rx.Expr):
            return rx.PrimValue(_python_scalar(value), span=self.span(node))
        if kind == "prims" and isinstance(value, (tuple, list)):
            return rx.Tuple([rx.PrimValue(_python_scalar(v)) for v in value],
                            span=self.span(node))
        return self.to_expr(value, node)

    def normalize(self, expr, node=None):
        """Deduce and record the struct info of a freshly built expression."""
        if expr.struct_info is None:
            try:
                expr.struct_info = self.deduce(expr)
            except _StructInfoError as err:
                self.error(str(err), node if node is not None else expr)
        return expr

    def sinfo(self, expr) -> rx.StructInfo:
        if isinstance(expr, GlobalVar):
            return self.mb.signatures.get(expr.name_hint) or rx.ObjectStructInfo()
        if expr.struct_info is None:
            self.normalize(expr)
        return expr.struct_info

    def deduce(self, expr) -> rx.StructInfo:
        if isinstance(expr, rx.Tuple):
            return rx.TupleStructInfo([self.sinfo(f) for f in expr.fields_])
        if isinstance(expr, rx.TupleGetItem):
            t = self.sinfo(expr.tuple_value)
            if isinstance(t, rx.TupleStructInfo):
                return t.fields_[expr.index]
            if isinstance(t, rx.ObjectStructInfo):
                return rx.ObjectStructInfo()
            raise _StructInfoError("only a tuple can be indexed")
        if isinstance(expr, rx.Call):
            return self.deduce_call(expr)
        if isinstance(expr, rx.SeqExpr):
            return self.sinfo(expr.body)
        if isinstance(expr, rx.If):
            from ...analysis.struct_info import lca

            return lca(self.sinfo(expr.true_branch), self.sinfo(expr.false_branch))
        return rx.ObjectStructInfo()

    def deduce_call(self, call: rx.Call) -> rx.StructInfo:
        op = call.op
        if isinstance(op, Op):
            if call.sinfo_args and op.name in ("relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed",
                                               "relax.call_tir_inplace", "relax.call_inplace_packed"):
                return call.sinfo_args[0]
            from ...analysis.struct_info import StructInfoError, deduce_call

            try:
                return deduce_call(op.name, [self.sinfo(a) for a in call.args], call.attrs, call.args)
            except StructInfoError as err:
                raise _StructInfoError(f"`{op.name.replace('relax.', 'R.', 1)}`: {err}") from None
        fsinfo = self.sinfo(op) if not isinstance(op, rx.ExternFunc) else op.struct_info
        prim_func = self.mb.functions.get(op.name_hint) if isinstance(op, GlobalVar) else None
        if isinstance(prim_func, tir.PrimFunc):  # destination passing (CallTIRRewrite's form): returns nothing
            if len(call.args) != len(prim_func.params):
                raise _StructInfoError(f"`{op.name_hint}` is a PrimFunc of {len(prim_func.params)} parameters "
                                       f"(inputs, then outputs), called with {len(call.args)} arguments")
            return rx.TupleStructInfo([])
        if isinstance(fsinfo, rx.FuncStructInfo):
            if fsinfo.params is not None and len(fsinfo.params) != len(call.args):
                raise _StructInfoError(f"the function takes {len(fsinfo.params)} arguments, "
                                       f"got {len(call.args)}")
            return _bind_symbols(fsinfo, [self.sinfo(a) for a in call.args])
        return rx.ObjectStructInfo()

    # -- R.<name> special forms
    def r_const(self, node, pos, kw):
        import numpy as np

        value = pos[0] if pos else kw.get("value")
        dtype = pos[1] if len(pos) > 1 else kw.get("dtype")
        if dtype is None:
            dtype = "float32" if isinstance(value, float) else ("bool" if isinstance(value, bool) else "int32")
        if not is_valid_dtype(dtype):
            self.error(f"unknown data type `{dtype}`", node)
        return rx.Constant(np.array(value, dtype=dtype), span=self.span(node))

    def r_tuple(self, node, pos, kw):
        return self.to_expr(tuple(pos), node)

    def r_shape(self, node, pos, kw):
        return rx.ShapeExpr(self.dims(pos[0], node), span=self.span(node))

    def r_prim_value(self, node, pos, kw):
        value = pos[0] if pos else kw.get("value")
        if isinstance(value, rx.Expr):
            if isinstance(self.sinfo(value), rx.PrimStructInfo):
                return value  # already a scalar value (an R.Prim parameter)
            self.error("`R.prim_value` takes a TIR scalar expression", node)
        try:
            return rx.PrimValue(_python_scalar(value), span=self.span(node))
        except TypeError:
            self.error("`R.prim_value` takes a TIR scalar expression", node)

    def r_str(self, node, pos, kw):
        return rx.StringImm(pos[0], span=self.span(node))

    def r_dtype(self, node, pos, kw):
        return rx.DataTypeImm(pos[0], span=self.span(node))

    def r_extern(self, node, pos, kw):
        return rx.ExternFunc(pos[0], span=self.span(node))

    def out_sinfo(self, kw, node):
        out = kw.pop("out_ty", None)
        if out is None:
            out = kw.pop("out_sinfo", None)
        if out is None:
            self.error("missing `out_ty=` (the output struct info)", node)
        if isinstance(out, list):
            return rx.TupleStructInfo([self.as_struct_info(o, node) for o in out])
        return self.as_struct_info(out, node)

    def r_call_tir(self, node, pos, kw):
        if len(pos) < 2:
            self.error("`R.call_tir` takes a PrimFunc and a tuple of arguments", node)
        func, args = pos[0], pos[1]
        if not isinstance(func, GlobalVar) or not isinstance(self.mb.functions.get(func.name_hint, tir.PrimFunc([],
                                                                                        tir.Evaluate(tir.IntImm(0)))),
                                                               tir.PrimFunc):
            self.error("the first argument of `R.call_tir` must be a PrimFunc of the module (`cls.name`)", node)
        return self.dps_call("relax.call_tir", func, args, pos[2:], kw, node)

    def dps_call(self, op_name, func, args, extra, kw, node):
        sinfo = self.out_sinfo(kw, node)
        tir_vars = kw.pop("tir_vars", None) if not extra else extra[0]
        if kw:
            self.error(f"unexpected argument `{next(iter(kw))}`", node)
        # TVM wraps a single argument in a tuple unless it is tuple-typed already (`R.tuple()`)
        is_tuple = isinstance(args, rx.Expr) and isinstance(getattr(args, "struct_info", None), rx.TupleStructInfo)
        args_expr = self.to_expr(args if isinstance(args, (tuple, list)) or is_tuple else (args,), node)
        call_args = [func, args_expr]
        if tir_vars is not None:
            call_args.append(tir_vars if isinstance(tir_vars, rx.ShapeExpr) else
                             rx.ShapeExpr(self.dims(tir_vars, node)))
        call = rx.Call(Op.get(op_name), call_args, None, [sinfo], span=self.span(node))
        call.struct_info = sinfo
        return call

    def r_call_packed(self, node, pos, kw):
        """`R.call_packed("f", args..., ty_args=...)`: a call of the packed function itself (its
        result the struct info argument, else an object), as RemovePurityChecking and
        CallTIRRewrite leave them."""
        if not pos or not isinstance(pos[0], str):
            self.error("`R.call_packed` takes the packed function's name first", node)
        sinfo = kw.pop("ty_args", kw.pop("sinfo_args", None))
        if kw:
            self.error(f"unexpected argument `{next(iter(kw))}`", node)
        sinfos = [self.as_struct_info(s, node) for s in
                  (sinfo if isinstance(sinfo, (list, tuple)) else [sinfo] if sinfo is not None else [])]
        args = [self.leaf(self.to_expr(a, node), node) for a in pos[1:]]
        call = rx.Call(rx.ExternFunc(pos[0]), args, None, sinfos, span=self.span(node))
        call.struct_info = sinfos[0] if sinfos else rx.ObjectStructInfo()
        return call

    def r_call_tir_inplace(self, node, pos, kw):
        indices = kw.pop("inplace_indices", None)
        if len(pos) < 2 or indices is None:
            self.error("`R.call_tir_inplace` takes a PrimFunc, a tuple of arguments, `out_ty=` and "
                       "`inplace_indices=`", node)
        indices = tuple(indices) if isinstance(indices, (list, tuple)) else (indices,)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
            self.error("`inplace_indices` must be integers (-1: a new output)", node)
        call = self.r_call_tir(node, pos, kw)
        call.op = Op.get("relax.call_tir_inplace")
        call.attrs = Attrs({"inplace_indices": indices})
        return call

    def r_call_dps_packed(self, node, pos, kw):
        func = pos[0]
        if isinstance(func, str):
            func = rx.ExternFunc(func)
        return self.dps_call("relax.call_dps_packed", func, pos[1], pos[2:], kw, node)

    def r_call_pure_packed(self, node, pos, kw):
        func = pos[0]
        if isinstance(func, str):
            func = rx.ExternFunc(func)
        sinfo = kw.pop("sinfo_args", None)
        if sinfo is None:
            sinfo = kw.pop("ty_args", None)  # TVM 0.27's spelling
        if sinfo is None:
            self.error("`R.call_pure_packed` needs `ty_args=`", node)
        sinfos = [self.as_struct_info(s, node) for s in (sinfo if isinstance(sinfo, (list, tuple)) else [sinfo])]
        args = [func] + [self.to_expr(a, node) for a in pos[1:]]
        call = rx.Call(Op.get("relax.call_pure_packed"), args, None, sinfos, span=self.span(node))
        call.struct_info = sinfos[0]
        return call

    def r_match_cast(self, node, pos, kw):
        return ("match_cast", pos[0], pos[1])

    def r_statement_only(self, node, pos, kw):
        self.error("this form is a statement and cannot be used as a value", node)

    # -- functions
    def read_signature(self, funcdef, options: dict) -> None:
        name_tok, params_node, ret_node, _ = funcdef.children
        self.name = str(name_tok)
        self.options = options
        self.params = []
        self.emitted = {}
        for p in params_node.children if params_node is not None else ():
            pname_tok, ann = p.children
            if ann is None:
                self.error(f"parameter `{pname_tok}` needs struct info such as `R.Tensor((2, 3), \"float32\")`", p)
            var = rx.Var(str(pname_tok), self.struct_info(ann, define=True), span=self.span(p))
            self.params.append(var)
            self.define(str(pname_tok), var)
        self.ret_sinfo = self.struct_info(ret_node, define=True) if ret_node is not None else None
        self.signature = rx.FuncStructInfo([p.struct_info for p in self.params],
                                           self.ret_sinfo or rx.ObjectStructInfo(), options.get("pure", True))

    def build_body(self, funcdef) -> rx.Function:
        suite = funcdef.children[-1]
        self.func_attrs: dict = {}
        self.scopes.append({})
        body = self.seq(suite_stmts(suite), top=True, node=funcdef)
        self.scopes.pop()
        ret = self.ret_sinfo
        body_sinfo = self.sinfo(body.body)
        if ret is not None and _incompatible(ret, body_sinfo):
            self.error(f"the function returns {_describe_sinfo(body_sinfo)}, but its annotation says "
                       f"{_describe_sinfo(ret)}", funcdef.children[2])
        ret = _annotated(ret, body_sinfo, self.params)
        if self.func_attrs.get("global_symbol") == self.name and not self.options.get("private"):
            del self.func_attrs["global_symbol"]  # implied by a public function, as TVM prints it
        return rx.Function(self.params, body, ret, self.options.get("pure", True), tuple(self.func_attrs.items()),
                           private=self.options.get("private", False), span=self.span(funcdef))

    def seq(self, stmts, top=False, node=None, result_name=None, suffix="") -> rx.SeqExpr:
        """Statements up to a `return` (or, in an if-branch, a final assignment)."""
        saved = self.blocks, self.bindings
        self.blocks, self.bindings = [], []
        result = None
        for i, stmt in enumerate(stmts):
            last = i == len(stmts) - 1
            if stmt.data == "simple_stmt" and stmt.children[0].data == "return_stmt":
                if not last:
                    self.error("statements after `return` are never run", stmts[i + 1])
                if result_name is not None:
                    self.error("an if-branch ends with an assignment, not `return`", stmt)
                value = stmt.children[0].children[0]
                if value is None:
                    self.error("a Relax function must return a value", stmt)
                result = self.leaf(self.to_expr(self.eval(value), value), value)
                self.normalize(result, value)
                continue
            if result_name is not None and last:
                result = self.branch_result(stmt, result_name, suffix)
                continue
            self.r_stmt(stmt, top)
        self.flush()
        blocks = self.blocks
        self.blocks, self.bindings = saved
        if result is None:
            self.error("a Relax function body must end with `return`", node if node is not None else stmts[-1])
        return rx.SeqExpr(blocks, result, span=self.span(node) if node is not None else None)

    def branch_result(self, stmt, name, suffix):
        """TVM's GetSeqExprForBranch: the branch's final `name = value` is its result; a
        value that is not a leaf or tuple is bound to `name_then`/`name_else` first."""
        inner = stmt.children[0] if stmt.data == "simple_stmt" else stmt
        if inner.data not in ("assign", "ann_assign") or str(inner.children[0].children[0]) != name:
            self.error(f"each branch of the `if` must end by assigning `{name}`", stmt)
        value = self.to_expr(self.eval(inner.children[-1]), inner.children[-1])
        self.normalize(value, inner.children[-1])
        self.fresh_binding_name()  # emitted by TVM's parser, whatever the value
        if isinstance(value, (rx.Call, rx.If, rx.TupleGetItem, rx.SeqExpr)):
            var = rx.Var(name + suffix, value.struct_info, span=self.span(inner))
            self.bindings.append(rx.VarBinding(var, value, span=self.span(inner)))
            return var
        return value

    def flush(self) -> None:
        if self.bindings:
            self.blocks.append(rx.BindingBlock(self.bindings))
            self.bindings = []

    def r_stmt(self, stmt, top: bool) -> None:
        kind = stmt.data
        if kind == "simple_stmt":
            inner = stmt.children[0]
            if inner.data == "expr_stmt":
                return self.r_expr_stmt(inner, top)
            if inner.data in ("assign", "ann_assign"):
                return self.r_assign(inner)
            if inner.data == "pass_stmt":
                return None
            self.error("this statement is not part of a Relax function", stmt)
        if kind == "with_stmt":
            return self.r_dataflow(stmt)
        if kind == "if_stmt":
            return self.r_if(stmt)
        self.error("this statement is not part of a Relax function", stmt)

    def r_expr_stmt(self, node, top):
        expr = node.children[0]
        callee = self.dotted_callee(expr)
        if callee == "R.func_attr":
            if not top:
                self.error("`R.func_attr` must be at the top of the function body", node)
            value = self.eval(expr.children[1].children[0])
            if not isinstance(value, dict):
                self.error("`R.func_attr` takes a dict", expr)
            self.func_attrs.update(value)
            return None
        if callee == "R.output":
            if self.dataflow_outputs is None:
                self.error("`R.output` is only allowed inside `with R.dataflow()`", node)
            return None
        value = self.to_expr(self.eval(expr), expr)
        self.normalize(value, expr)
        # inside a dataflow block the unnamed result is a dataflow variable, as TVM's builder emits it
        self.fresh_binding_name()
        self.emit((rx.DataflowVar if self.dataflow_outputs is not None else rx.Var)("_", value.struct_info), value)
        return None

    def r_assign(self, node):
        if type(node) is FusedBinding and build_fused(self, node):
            return None
        if node.data == "ann_assign":
            target, ann_node, value_node = node.children
        else:
            target, value_node = node.children
            ann_node = None
        if isinstance(target, Tree) and target.data == "target_tuple":
            self.error("bind a tuple to one name and index it (`t = ...; a = t[0]`)", target)
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        name = str(target.children[0])
        if isinstance(value_node, Tree) and value_node.data == "name" and ann_node is None:
            v = self.eval(value_node)
            if isinstance(v, _Module):
                self.define(name, v)  # `cls = Module`
                return None
        ann = self.struct_info(ann_node, define=True) if ann_node is not None else None
        value = self.eval(value_node)
        if isinstance(value, tuple) and len(value) == 3 and value[0] == "match_cast":
            expr = self.to_expr(value[1], value_node)
            self.normalize(expr, value_node)
            sinfo = self.struct_info_defining(value[2], value_node)
            if _incompatible(sinfo, self.sinfo(expr)):
                self.error(f"cannot match_cast a value of {_describe_sinfo(self.sinfo(expr))} to "
                           f"{_describe_sinfo(sinfo)}", value_node)
            var = self.new_var(name, ann or sinfo, target)
            self.fresh_binding_name()
            self.bindings.append(rx.MatchCast(var, expr, sinfo, span=self.span(node)))
            return None
        if isinstance(value, tuple) and value and value[0] == "new_var":
            existing = self.symbol_in_scope(name)
            if not (isinstance(existing, tir.Var) and existing.dtype == value[1]):
                self.define(name, tir.Var(name, value[1], span=self.span(node)))
            return None
        self.bind(name, ann, ann_node, self.to_expr(value, value_node), value_node, target, node)
        return None

    def bind(self, name: str, ann, ann_node, expr, value_node, target, node) -> None:
        """`name: ann = expr` (`ann` None when not annotated): check, make the variable, bind."""
        self.normalize(expr, value_node)
        deduced = self.sinfo(expr)
        if ann is not None and _incompatible(ann, deduced):
            self.error(f"struct info mismatch: the value is {_describe_sinfo(deduced)}, but `{name}` is "
                       f"annotated {_describe_sinfo(ann)}", ann_node)
        # TVM keeps a binding's annotation; an alias takes a finer one (`c: R.Tensor(ndim=2) = x`: x's shape)
        keep = ann is not None and not isinstance(expr, rx.Var)
        var = self.new_var(name, ann if keep else _annotated(ann, deduced), target)
        self.fresh_binding_name()
        self.bindings.append(rx.VarBinding(var, expr, span=self.span(node)))

    def struct_info_defining(self, value, node):
        return self.as_struct_info(value, node)

    def emit(self, var, value):
        self.bindings.append(rx.VarBinding(var, value))

    def new_var(self, name, sinfo, node) -> rx.Var:
        dataflow = self.dataflow_outputs is not None and name not in self.dataflow_outputs
        var = (rx.DataflowVar if dataflow else rx.Var)(name, sinfo, span=self.span(node))
        self.define(name, var)
        return var

    def r_dataflow(self, stmt):
        ctx_node, target, suite = stmt.children
        if self.dotted_callee(ctx_node) != "R.dataflow":
            self.error("a `with` statement in a Relax function must be `with R.dataflow():`", ctx_node)
        if self.dataflow_outputs is not None:
            self.error("dataflow blocks cannot nest", stmt)
        stmts = suite_stmts(suite)
        outputs: set[str] = set()
        output_nodes: dict = {}
        for s in stmts:
            inner = s.children[0] if s.data == "simple_stmt" else None
            if inner is not None and inner.data == "expr_stmt" and self.dotted_callee(inner.children[0]) == "R.output":
                args = inner.children[0].children[1]
                for a in args.children if args is not None else ():
                    if not (isinstance(a, Tree) and a.data == "name"):
                        self.error("`R.output` takes variable names", a)
                    outputs.add(str(a.children[0]))
                    output_nodes[str(a.children[0])] = a
        self.flush()
        self.dataflow_outputs = outputs
        for s in stmts:
            if s.data != "simple_stmt":
                self.error("only bindings are allowed in a dataflow block", s)
            self.r_stmt(s, False)
        self.dataflow_outputs = None
        defined = {b.var.name_hint for b in self.bindings}
        for name in sorted(outputs - defined):
            self.error(f"`R.output({name})`: `{name}` is not bound in this dataflow block", output_nodes[name])
        self.blocks.append(rx.DataflowBlock(self.bindings, span=self.span(stmt)))
        self.bindings = []

    def r_if(self, stmt):
        cond_node, then_suite, elifs, else_suite = stmt.children
        if self.dataflow_outputs is not None:
            self.error("`if` is not allowed inside a dataflow block", stmt)
        if elifs.children or else_suite is None:
            self.error("a Relax `if` needs exactly one `else` (no `elif`)", stmt)
        then_stmts = suite_stmts(then_suite)
        last = then_stmts[-1]
        inner = last.children[0] if last.data == "simple_stmt" else last
        if inner.data not in ("assign", "ann_assign"):
            self.error("each branch of a Relax `if` must end by assigning the result", last)
        name = str(inner.children[0].children[0])
        cond = self.to_expr(self.eval(cond_node), cond_node)
        self.normalize(cond, cond_node)
        branches = []
        for suite, suffix in ((then_suite, "_then"), (else_suite, "_else")):
            self.scopes.append({})
            branches.append(self.seq(suite_stmts(suite), result_name=name, node=suite, suffix=suffix))
            self.scopes.pop()
        expr = self.normalize(rx.If(cond, branches[0], branches[1], span=self.span(stmt)), stmt)
        ann = None
        if inner.data == "ann_assign":
            ann = self.struct_info(inner.children[1], define=True)
        var = self.new_var(name, ann if ann is not None else expr.struct_info, inner.children[0])
        self.fresh_binding_name()
        self.bindings.append(rx.VarBinding(var, expr, span=self.span(stmt)))


def _relax_calls() -> dict:
    r = _RelaxBuilder
    calls = dict(_TirBuilder.CALLS)
    calls.update({
        "R.Tensor": r.r_tensor, "R.Tuple": r.r_tuple_sinfo, "R.Shape": r.r_shape_sinfo, "R.Prim": r.r_prim_sinfo,
        "R.Object": r.r_object, "R.Any": r.r_object,
        "R.Callable": r.r_callable,
        "R.const": r.r_const, "R.tuple": r.r_tuple, "R.shape": r.r_shape, "R.prim_value": r.r_prim_value,
        "R.str": r.r_str,
        "R.dtype": r.r_dtype, "R.ExternFunc": r.r_extern, "R.extern": r.r_extern,
        "R.call_tir": r.r_call_tir, "R.call_dps_packed": r.r_call_dps_packed,
        "R.call_tir_inplace": r.r_call_tir_inplace, "R.call_packed": r.r_call_packed,
        "R.call_pure_packed": r.r_call_pure_packed, "R.match_cast": r.r_match_cast,
        "R.func_attr": r.r_statement_only, "R.output": r.r_statement_only, "R.dataflow": r.r_statement_only,
        "T.index_map": index_map.t_index_map,
    })
    return calls


_RelaxBuilder.CALLS = _relax_calls()
