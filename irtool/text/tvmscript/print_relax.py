"""Relax functions and expressions as TVMScript (a part of the printer, `printer.py`)."""

from __future__ import annotations

from ...ir import relax as rx
from ...ir import tir
from ...ir.expr import GlobalVar, Op, TypedScalar
from .docs import (
    _CALL_TIR_OPS,
    _E,
    _INLINE_CONST_DTYPES,
    _bool,
    _call,
    _float_text,
    _Frame,
    _int,
    _is_void,
    _join,
    _list,
    _str,
    _struct_equal,
    _tuple,
    _vars_of,
)


class _RelaxPrinter:
    # ========================================================================= Relax functions

    def relax_func_frame(self) -> _Frame | None:
        """The innermost function frame (TVM's GetRelaxFrame)."""
        for f in reversed(self.frames):
            if f.is_func:
                return f
        return self.frames[-1] if self.frames else None

    def relax_function(self, func: rx.Function, top_level: bool) -> list:
        self.token = "relax"
        f = self.push(_Frame(func, is_func=True))
        name = self.function_name(func)
        f.func_vars, f.type_vars, f.prim_params = set(), {}, set()
        params = []
        for p in func.params:
            pname = self.define(p, p.name_hint or "v", f)
            value = getattr(p.struct_info, "value", None) if isinstance(p.struct_info, rx.PrimStructInfo) else None
            if isinstance(value, tir.Var) and id(value) not in self.names:
                self.alias(value, pname, f)  # a `T.int64` parameter is also the TIR variable
                f.prim_params.add(id(value))
            params.append(f"{pname}: {self.sinfo(p.struct_info).text}" if p.struct_info is not None else pname)
        ret = func.ret_struct_info or getattr(func.body, "struct_info", None) or rx.ObjectStructInfo()
        ret_doc = self.sinfo(ret)
        type_vars = f.type_vars
        f.func_vars = f.type_vars = f.prim_params = None
        attrs = dict(func.attrs)
        printable = [(k, v) for k, v in func.attrs
                     if not (k == "global_symbol" and top_level and v == name)]
        if printable:
            f.stmts.append(("line", _call(self.R("func_attr"), [self.attr_dict(printable)]).text))
        kw = []
        if not func.is_pure:
            kw.append("pure=False")
        if top_level and func.private and "global_symbol" not in attrs:
            kw.append("private=True")
        decorator = self.R("function") + (f"({', '.join(kw)})" if kw else "")
        f.stmts.extend(self.seq_expr(func.body, use_return=True))
        tv_docs = sorted(((self.names[k], v) for k, v in type_vars.items()), key=lambda nv: nv[0].encode())
        self.pop()
        doc = ("func", [decorator], f"{name}({', '.join(params)}) -> {ret_doc.text}", f.stmts)
        return self.wrap_type_vars(doc, tv_docs, nested=not top_level)

    def relax_shape_var(self, v: tir.Var) -> _E:
        """A symbolic size met in Relax: a TypeVar of the signature, or `n = T.int64()`."""
        f = self.relax_func_frame()
        if f is None:
            raise ValueError(f"symbolic variable {v.name} used outside a function")
        name = self.define(v, v.name or "v", f)
        if f.func_vars is not None:
            f.func_vars.add(id(v))
            if id(v) not in f.prim_params:
                f.type_vars[id(v)] = v
                return _E(name)
        f.stmts.append(("line", f"{name} = {self.var_creation(v).text}"))
        return _E(name)

    def shape_dim(self, d) -> _E:
        """A dimension of a Relax shape; in a signature, compound expressions are quoted."""
        if isinstance(d, int) and not isinstance(d, bool):
            return _int(d)
        doc = self.prim(d)
        f = None
        for frame in self.frames:
            if frame.func_vars is not None:
                f = frame
                break
        if f is not None and any(id(v) in f.func_vars for v in _vars_of(d)):
            if not (isinstance(d, tir.Var) and id(d) in f.type_vars):
                return _E('"' + _str(doc.text).text[1:-1] + '"')
        return doc

    def sinfo(self, s) -> _E:
        if s is None or isinstance(s, rx.ObjectStructInfo):
            return _E(self.R("Any"))
        if isinstance(s, rx.TensorStructInfo):
            shape = s.shape
            static = (type(shape) is tuple and s.vdevice is None and type(s.dtype) is str
                      and all(type(d) is int for d in shape))
            if static:  # most annotations of a model: the same few texts
                text = self.static_tensor_text.get((shape, s.dtype))
                if text is not None:
                    self.usage.add("relax")
                    return _E(text)
            args, kwargs = [], []
            if isinstance(s.shape, tuple):
                args.append(_tuple([self.shape_dim(d) for d in s.shape]))
            elif s.shape is not None:
                args.append(self.relax_expr(s.shape))
            if s.dtype and s.dtype != "void":
                kwargs.append(("dtype", _str(s.dtype)))
            if s.shape is None and s.ndim != -1:
                kwargs.append(("ndim", _int(s.ndim)))
            if s.vdevice is not None:
                kwargs.append(("vdevice", _str(str(s.vdevice))))
            if not args and not kwargs:
                return _E(self.R("Tensor"))
            doc = _call(self.R("Tensor"), args, kwargs)
            if static:
                self.static_tensor_text[(shape, s.dtype)] = doc.text
            return doc
        if isinstance(s, rx.ShapeStructInfo):
            if s.values is not None:
                return _call(self.R("Shape"), [_list([self.shape_dim(d) for d in s.values])])
            return _call(self.R("Shape"), [], [("ndim", _int(s.ndim))])
        if isinstance(s, rx.PrimStructInfo):
            return _E(self.T(s.dtype))
        if isinstance(s, rx.TupleStructInfo):
            if not s.fields_:
                return _E(self.R("Tuple"))
            return _call(self.R("Tuple"), [self.sinfo(x) for x in s.fields_])
        if isinstance(s, rx.FuncStructInfo):
            if s.params is None:
                kwargs = []
                if not isinstance(s.ret, rx.ObjectStructInfo):
                    kwargs.append(("ret", self.sinfo(s.ret)))
                if s.purity:
                    kwargs.append(("purity", _bool(True)))
                return _call(self.R("Callable"), [], kwargs) if kwargs else _E(self.R("Callable"))
            return _call(self.R("Callable"), [_tuple([self.sinfo(p) for p in s.params]), self.sinfo(s.ret),
                                              _bool(s.purity)])
        raise TypeError(f"cannot print struct info {type(s).__name__}")

    def seq_expr(self, seq, use_return: bool) -> list:
        f = self.push(_Frame())
        if not isinstance(seq, rx.SeqExpr):
            seq = rx.SeqExpr([], seq)
        for block in seq.blocks:
            if isinstance(block, rx.DataflowBlock):
                stmts = self.bindings(block.bindings)
                outputs = [_E(self.names[id(b.var)]) for b in block.bindings
                           if not isinstance(b.var, rx.DataflowVar)]
                stmts.append(("line", _call(self.R("output"), outputs).text))
                f.stmts.append(("scope", f"with {self.R('dataflow')}()", stmts))
            else:
                f.stmts.extend(self.bindings(block.bindings))
        ret = self.relax_expr(seq.body)
        f.stmts.append(("line", f"return {ret.text}" if use_return else ret.text))
        self.pop()
        return f.stmts

    def bindings(self, bindings) -> list:
        out: list = []
        for b in bindings:
            if isinstance(b, rx.MatchCast):
                ann = self.annotation(b.var, b.value)
                rhs = _call(self.R("match_cast"), [self.relax_expr(b.value), self.sinfo(b.struct_info)])
                name = self.define(b.var, b.var.name_hint or "v")
                out.append(("line", f"{name}{ann} = {rhs.text}"))
            elif isinstance(b.value, rx.If):
                ann = self.annotation(b.var, b.value)
                name = self.define(b.var, b.var.name_hint or "v")
                out.append(self.if_doc(b.value, f"{name}{ann} = "))
            elif isinstance(b.value, (rx.Function, tir.PrimFunc)):
                name = self.define(b.var, b.var.name_hint or "v")
                self.binding_names.append(name)
                out.extend(self.print_function(b.value, top_level=False))
                self.binding_names.pop()
                self.token = "relax"
            elif _is_void(b.var) and (_is_void(b.value) or getattr(b.value, "struct_info", 0) is None):
                out.append(("line", self.relax_expr(b.value).text))
            else:
                rhs = self.relax_expr(b.value)
                ann = self.annotation(b.var, b.value)
                name = self.define(b.var, b.var.name_hint or "v")
                if isinstance(rhs.elems, list) and len(rhs.elems) > 1:
                    rhs = _E(_join(rhs.elems))
                out.append(("line", f"{name}{ann} = {rhs.text}"))
        return out

    def annotation(self, var, value) -> str:
        """`: R.Tensor(...)` unless TVM leaves the annotation out (TypeAsAnn)."""
        s = var.struct_info
        if s is None:
            return ""
        if (isinstance(value, rx.Call) and isinstance(value.op, Op)
                and value.op.name in ("relax.call_tir", "relax.call_dps_packed") and value.sinfo_args):
            out = value.sinfo_args[0] if len(value.sinfo_args) == 1 else rx.TupleStructInfo(value.sinfo_args)
            if _struct_equal(out, s):
                return ""
        return f": {self.sinfo(s).text}"

    def if_doc(self, e: rx.If, assign: str | None):
        cond = self.relax_expr(e.cond)
        branches = []
        for branch in (e.true_branch, e.false_branch):
            stmts = self.seq_expr(branch, use_return=False)
            if assign is not None:
                stmts[-1] = ("line", assign + stmts[-1][1])
            branches.append(stmts)
        return ("if", cond.text, branches[0], branches[1])

    # ========================================================================= Relax expressions

    def relax_expr(self, e) -> _E:
        method = getattr(self, "r_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, rx.Var):
            return self.r_Var(e)
        if isinstance(e, tir.PrimExpr):
            return self.prim(e)
        if isinstance(e, GlobalVar):
            return self.global_ref(e)
        if isinstance(e, rx.MetadataRef):
            return self.add_metadata(e.key, e, e.index)
        raise TypeError(f"cannot print Relax expression {type(e).__name__}")

    def r_Var(self, v: rx.Var) -> _E:
        name = self.names.get(id(v))
        if name is None:  # a free variable: TVM declares it where it is met
            ann = self.sinfo(v.struct_info)
            name = self.define(v, v.name_hint or "v")
            self.frames[-1].stmts.append(("line", f"{name}: {ann.text}"))
        return _E(name)

    r_DataflowVar = r_Var

    def r_Constant(self, c: rx.Constant) -> _E:
        data = c.data
        if data is not None and getattr(data, "ndim", None) == 0 and str(data.dtype) in _INLINE_CONST_DTYPES:
            dtype = str(data.dtype)
            value = data.item()
            if dtype == "bool":
                text = "True" if value else "False"
            elif dtype.startswith("int"):
                text = str(int(value))
            else:
                text = _float_text(float(value))
            return _call(self.R("const"), [_E(text), _str(dtype)])
        return self.add_metadata("ir.GenericConst", c, c.meta_index if data is None else None)

    def r_Tuple(self, t: rx.Tuple) -> _E:
        if not t.fields_:
            return _call(self.R("tuple"))
        return _tuple([self.relax_expr(x) for x in t.fields_])

    def r_TupleGetItem(self, t: rx.TupleGetItem) -> _E:
        return _E(f"{self.relax_expr(t.tuple_value).text}[{t.index}]")

    def r_ShapeExpr(self, s: rx.ShapeExpr) -> _E:
        return _call(self.R("shape"), [_list([self.shape_dim(d) for d in s.values])])

    def r_PrimValue(self, p: rx.PrimValue) -> _E:
        return self.prim(p.value) if not isinstance(p.value, int) else _int(p.value)

    def r_StringImm(self, s: rx.StringImm) -> _E:
        return _call(self.R("str"), [_str(s.value)])

    def r_DataTypeImm(self, d: rx.DataTypeImm) -> _E:
        return _call(self.R("dtype"), [_str(d.value)])

    def r_ExternFunc(self, e: rx.ExternFunc) -> _E:
        args = [_str(e.global_symbol)]
        s = e.struct_info
        default = isinstance(s, rx.FuncStructInfo) and s.params is None and not s.purity and isinstance(
            s.ret, rx.ObjectStructInfo)
        if s is not None and not default:
            args.append(self.sinfo(s))
        return _call(self.R("ExternFunc"), args)

    def r_GlobalVar(self, g: GlobalVar) -> _E:
        return self.global_ref(g)

    def r_Op(self, op: Op) -> _E:
        return _call(self.I("Op"), [_str(op.name)])

    def r_If(self, e: rx.If) -> _E:
        raise TypeError("a Relax `If` must be bound to a variable to print")

    def callee(self, e) -> _E:
        if isinstance(e, rx.ExternFunc):
            return _str(e.global_symbol)
        return self.relax_expr(e)

    def r_Call(self, c: rx.Call) -> _E:
        op = c.op
        if isinstance(op, Op) and not op.name.startswith("relax."):
            return self.prim(tir.Call(getattr(c.struct_info, "dtype", "handle"), op.name, c.args))
        if isinstance(op, Op) and op.name in _CALL_TIR_OPS:
            return self.call_tir(c, _CALL_TIR_OPS[op.name])
        if isinstance(op, Op) and op.name in ("relax.assert_op", "relax.print"):
            fmt_index = 1 if op.name == "relax.assert_op" else 0
            args = [self.relax_expr(a) for i, a in enumerate(c.args) if i != fmt_index]
            return _call(self.R(op.name[6:]), args, [("format", self.relax_expr(c.args[fmt_index]))])
        if isinstance(op, rx.ExternFunc):
            prefix = self.R("call_packed")
            args = [_str(op.global_symbol)]
        elif isinstance(op, Op):
            prefix = self.R(op.name[6:])
            args = []
        else:
            prefix = self.relax_expr(op).text
            args = []
        for i, a in enumerate(c.args):
            args.append(self.callee(a) if i == 0 else self.relax_expr(a))
        kwargs = []
        if c.attrs is not None:
            key = (op, id(c.attrs))  # calls built from one attribute text share their Attrs
            known = self.call_attr_docs.get(key)
            if known is None or known[0] is not c.attrs:
                known = self.call_attr_docs[key] = (c.attrs, [(k, self.call_attr(op, k, v))
                                                              for k, v in c.attrs.items()])
            kwargs = list(known[1])
        if c.sinfo_args:
            kwargs.append(("ty_args", _tuple([self.sinfo(s) for s in c.sinfo_args])))
        return _call(prefix, args, kwargs)

    def call_attr(self, op, key: str, value) -> _E:
        """A call attribute; a dtype attribute left unset ("", TVM's void) prints `None`, a
        list of floats (resize2d's roi, TVM's Array<FloatImm>) `[T.float32(0.0), ...]`."""
        if (value == "" or isinstance(value, tuple)) and isinstance(op, Op):
            from ...ops import relax as relax_ops

            spec = relax_ops.lookup(op.name)
            spec = spec.attr_spec(key) if spec is not None else None
            if value == "" and spec is not None and spec.kind in ("dtype", "dtype?"):
                return _E("None")
            if isinstance(value, tuple) and spec is not None and spec.kind == "floats":
                return _list([self.value(TypedScalar(float(v), "float32")) for v in value])
        return self.value(value)

    def call_tir(self, c: rx.Call, name: str) -> _E:
        args = [self.callee(c.args[0]), self.relax_expr(c.args[1])]
        out = c.sinfo_args[0] if len(c.sinfo_args) == 1 else list(c.sinfo_args)
        if isinstance(out, rx.TupleStructInfo):
            out = list(out.fields_)
        out_doc = _list([self.sinfo(s) for s in out]) if isinstance(out, (list, tuple)) else self.sinfo(out)
        kwargs = [("out_ty", out_doc)]
        if name == "call_tir_inplace":
            indices = c.attrs.get("inplace_indices", ()) if c.attrs is not None else ()
            kwargs.append(("inplace_indices", _list([_int(i) for i in indices])))
        if name == "call_tir_with_grad" and c.attrs is not None:
            kwargs.append(("te_grad_name", _str(c.attrs.get("te_grad_name", ""))))
            if c.attrs.get("te_grad_kwargs"):
                kwargs.append(("te_grad_kwargs", self.value(c.attrs.get("te_grad_kwargs"))))
        if len(c.args) > 2:
            kwargs.append(("tir_vars", self.relax_expr(c.args[2])))
        return _call(self.R(name), args, kwargs)
