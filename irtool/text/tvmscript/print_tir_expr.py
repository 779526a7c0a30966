"""TIR expressions and buffers as TVMScript (a part of the printer, `printer.py`)."""

from __future__ import annotations

from ...ir import tir
from ...ir.expr import GlobalVar
from .docs import (
    _BITWISE_INFIX,
    _DTYPE_FIRST,
    _DTYPE_LAST,
    _E,
    _PRECEDENCE,
    _TIR_CALL_NAME,
    _TVM_NODE,
    P_MUL,
    P_NOT,
    P_UNARY,
    _binop,
    _bitwise_folds,
    _bool,
    _call,
    _dict,
    _float_text,
    _fold_add,
    _fold_mul,
    _folds,
    _Frame,
    _int,
    _is_int,
    _join,
    _one,
    _str,
    _tuple,
    _vars_of,
)


class _TirExprPrinter:
    # ========================================================================= TIR expressions

    def prim(self, e) -> _E:
        method = getattr(self, "p_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, (int, float, str)):
                return self.value(e)
            raise TypeError(f"cannot print TIR expression {type(e).__name__}")
        return method(e)

    def p_IntImm(self, e: tir.IntImm) -> _E:
        if e.dtype == "bool":
            return _bool(e.value) if self.token == "relax" else _call(self.T("bool"), [_bool(e.value)])
        if self.token == "relax" or e.dtype == "int32":
            return _int(e.value)
        return _call(self.T(e.dtype), [_int(e.value)])

    def p_FloatImm(self, e: tir.FloatImm) -> _E:
        return _call(self.T(e.dtype), [_E(_float_text(e.value))])

    def p_StringImm(self, e: tir.StringImm) -> _E:
        if e.value is None:
            return self.add_metadata("ir.StringImm", e, getattr(e, "meta_index", None))
        if "\n" in e.value:
            return self.add_metadata("ir.StringImm", e)
        return _str(e.value)

    def p_Var(self, v: tir.Var) -> _E:
        name = self.names.get(id(v))
        if name is not None:
            return _E(name)
        if self.token == "relax":
            return self.relax_shape_var(v)
        frame = self.lowest_def_frame(v)
        name = self.define(v, v.name, frame)
        frame.stmts.append(("line", f"{name} = {self.var_creation(v).text}"))
        return _E(name)

    def var_creation(self, v: tir.Var) -> _E:
        """`T.int32()`, `T.handle()`, `T.handle("float32", "global")`: a variable's declaration."""
        ptr = v.type_annotation
        return self.pointer(ptr) if ptr is not None else _call(self.T(v.dtype))

    def pointer(self, ptr: tir.PointerType) -> _E:
        if ptr.element_dtype in ("void", "", None):
            if ptr.scope == "global":
                return _call(self.T("handle"))
            return _call(self.T("handle"), [], [("storage_scope", _str(ptr.scope))])
        return _call(self.T("handle"), [_str(ptr.element_dtype)] + ([_str(ptr.scope)] if ptr.scope else []))

    def var_type(self, v: tir.Var) -> _E:
        """The annotation of a scalar: `T.int32`, `T.handle`, `T.handle("float32", "global")`."""
        ptr = v.type_annotation
        if ptr is not None and not (ptr.element_dtype in ("void", "", None) and ptr.scope == "global"):
            return self.pointer(ptr)
        return _E(self.T(v.dtype))

    def lowest_def_frame(self, obj) -> _Frame:
        """Where TVM declares a variable it meets undeclared: the innermost frame on the
        path shared by all its uses (FindLowestVarDef)."""
        path = self.common_prefix.get(id(obj))
        if path:
            by_node = {id(f.node): f for f in self.frames if f.node is not None}
            for key in reversed(path):
                if key in by_node:
                    return by_node[key]
        return self.func_frame()

    def func_frame(self) -> _Frame:
        for f in reversed(self.frames):
            if f.is_func:
                return f
        return self.frames[-1]

    def p_BinOp(self, e: tir.BinOp) -> _E:
        # a long left-leaning chain (a + b + c + ...) is walked in a loop, not recursively
        spine = [e]
        while isinstance(spine[-1].a, tir.BinOp):
            spine.append(spine[-1].a)
        doc = self.prim(spine[-1].a)
        for node in reversed(spine):
            doc = self.binop(node, doc, self.prim(node.b))
        return doc

    def binop(self, e: tir.BinOp, a: _E, b: _E) -> _E:
        op = e.op
        if op in ("div", "truncdiv"):  # one node in TVM: `/` for floats, T.Div for integers
            if _folds("div", e.a, e.b) or e.a.dtype.startswith(("int", "uint")):
                return _call(self.T("Div"), [a, b])
            return _binop("/", P_MUL, a, b)
        spelling, infix, _ = tir.BINARY_OPS[op]
        if not infix:  # T.min, T.max, T.truncmod
            return _call(self.T(spelling[2:]), [a, b])
        if _folds(op, e.a, e.b):
            return _call(self.T(_TVM_NODE[op]), [a, b])
        return _binop(spelling, _PRECEDENCE[spelling], a, b)

    def p_Not(self, e: tir.Not) -> _E:
        a = self.prim(e.a)
        if a.text[:1].isdigit() or a.text[:1] in '-"' or a.text in ("True", "False"):
            return _call(self.T("Not"), [a])  # `not 1` would read back as a Python bool
        return _E(f"not {f'({a.text})' if a.prec < P_NOT else a.text}", P_NOT)

    def p_Cast(self, e: tir.Cast) -> _E:
        return _call(self.T("Cast"), [_str(e.dtype), self.prim(e.value)])

    def p_Select(self, e: tir.Select) -> _E:
        return _call(self.T("Select"), [self.prim(e.condition), self.prim(e.true_value),
                                        self.prim(e.false_value)])

    def p_BufferLoad(self, e: tir.BufferLoad) -> _E:
        return _E(f"{self.buffer_ref(e.buffer).text}[{_join(self.indices(e.indices)) or '()'}]")

    def p_Ramp(self, e: tir.Ramp) -> _E:
        return _call(self.T("Ramp"), [self.prim(e.base), self.prim(e.stride), self.lanes(e.lanes)])

    def p_Broadcast(self, e: tir.Broadcast) -> _E:
        return _call(self.T("Broadcast"), [self.prim(e.value), self.lanes(e.lanes)])

    def lanes(self, lanes) -> _E:
        return _int(lanes) if isinstance(lanes, int) else self.prim(lanes)

    def p_Let(self, e: tir.Let) -> _E:
        var = self.prim(e.var)
        return _call(self.T("Let"), [self.prim(e.body)], [("where", _dict([(var, self.prim(e.value))]))])

    def p_Call(self, e: tir.Call) -> _E:
        name = e.op
        for prefix in ("tirx.", "tir."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        if name == "buffer_data" and e.args:
            return _E(f"{self.call_arg(e.args[0]).text}.data")
        if name in _BITWISE_INFIX and len(e.args) == 2:
            return self.bitwise(name, e.args[0], e.args[1])
        if name == "bitwise_not" and len(e.args) == 1:
            a = self.prim(e.args[0])
            if _is_int(e.args[0]) and e.args[0].dtype == "int32":  # `~5` would be Python's
                return _call(self.T("BitwiseNot"), [a])
            return _E(f"~{f'({a.text})' if a.prec < P_UNARY else a.text}", P_UNARY)
        name = _TIR_CALL_NAME.get(name, name)
        args = [self.call_arg(a) for a in e.args]
        if name in _DTYPE_FIRST:
            args.insert(0, self.call_dtype(e))
        elif name in _DTYPE_LAST:
            args.append(self.call_dtype(e))
        return _call(self.T(name), args)

    def bitwise(self, name: str, a, b) -> _E:
        token, prec, node = _BITWISE_INFIX[name]
        a_doc, b_doc = self.prim(a), self.prim(b)
        if _bitwise_folds(name, a, b):
            return _call(self.T(node), [a_doc, b_doc])
        return _binop(token, prec, a_doc, b_doc)

    def call_arg(self, a) -> _E:
        if isinstance(a, str):
            return _str(a)
        if isinstance(a, tir.Buffer):
            return self.buffer_ref(a)
        if isinstance(a, GlobalVar):
            return self.global_ref(a)
        return self.prim(a)

    def call_dtype(self, e: tir.Call) -> _E:
        ptr = getattr(e, "type_annotation", None)
        if ptr is not None:
            return _E(f"{self.pointer(ptr).text}.ty")
        if e.dtype == "handle":
            return _E(f"{self.T('handle')}().ty")
        return _str(e.dtype)

    # ========================================================================= TIR buffers

    def indices(self, indices) -> list[_E]:
        out = []
        for i in indices:
            if isinstance(i, tir.Ramp) and _is_int(i.stride):
                start = self.prim(i.base)
                stop = self.prim(_fold_add(i.base, _fold_mul(tir.IntImm(i.lanes, i.stride.dtype), i.stride)))
                step = "" if i.stride.value == 1 else ":" + self.prim(i.stride).text
                out.append(_E(f"{start.text}:{stop.text}{step}"))
            else:
                out.append(self.prim(i))
        return out

    def region(self, r: tir.BufferRegion) -> _E:
        parts = []
        for rng in r.region:
            lo = self.prim(rng.min)
            if _one(rng.extent) and _is_int(rng.extent):
                parts.append(lo)
            else:
                parts.append(_E(f"{lo.text}:{self.prim(_fold_add(rng.min, rng.extent)).text}"))
        return _E(f"{self.buffer_ref(r.buffer).text}[{_join(parts) or '()'}]")  # 0-d: `A[()]`

    def buffer_ref(self, buf: tir.Buffer) -> _E:
        name = self.names.get(id(buf))
        if name is None:
            # a buffer used before any declaration: TVM declares it with `T.Buffer(...)`
            frame = self.lowest_def_frame(buf)
            name = self.define_buffer(buf, frame)
            rhs = self.buffer_call("Buffer", buf, [], frame, with_dtype=False)
            frame.stmts.append(("line", f"{name} = {rhs.text}"))
        return _E(name)

    def define_buffer(self, buf: tir.Buffer, frame: _Frame | None = None) -> str:
        frame = frame or self.frames[-1]
        name = self.define(buf, buf.name or "buffer", frame)
        if isinstance(buf.data, tir.Var) and id(buf.data) not in self.names:
            self.alias(buf.data, f"{name}.data", frame)
        if buf.data is not None:  # a Var, or the pointer expression of a lowered decl_buffer
            self.data_owner.setdefault(id(buf.data), buf)
        return name

    def buffer_kwargs(self, buf: tir.Buffer, frame: _Frame, stringify: set[int] | None = None,
                      compound: set[int] | None = None, with_dtype: bool = False,
                      data=None) -> tuple[list[_E], list[tuple[str, _E]]]:
        """TVM's BufferAttrs: the shape tuple and dtype, then the keyword arguments.
        `stringify` (a signature buffer) quotes dimensions naming a not-yet-bound variable."""
        signature = stringify is not None
        stringify = set(stringify or ())
        compound = compound or set()
        shape, new_vars = [], []
        for d in buf.shape:
            vars_in = _vars_of(d)
            undefined = any(id(v) not in self.names for v in vars_in)
            if isinstance(d, tir.Var) and id(d) not in self.names:  # declared before the buffer
                self.define(d, d.name or "v", frame)
                new_vars.append(d)
            doc = self.prim(d)
            quote = (signature and undefined) or any(id(v) in stringify for v in vars_in)
            quote = quote or (any(id(v) in compound for v in vars_in) and not (
                isinstance(d, tir.Var) and id(d) in compound))
            shape.append(_E('"' + _str(doc.text).text[1:-1] + '"') if quote else doc)
            for v in vars_in:
                stringify.discard(id(v))
        args = [_tuple(shape)]
        if with_dtype or buf.dtype != "float32":
            args.append(_str(buf.dtype))
        kwargs: list[tuple[str, _E]] = []
        if data is not None:
            kwargs.append(("data", self.prim(data)))
        if buf.strides:
            kwargs.append(("strides", _tuple([self.prim(s) for s in buf.strides])))
        needs_factor = False
        off = buf.elem_offset
        if off is not None:
            index_dtype = buf.shape[0].dtype if buf.shape and hasattr(buf.shape[0], "dtype") else "int32"
            if _is_int(off):
                if off.value != 0 or off.dtype != index_dtype:
                    kwargs.append(("elem_offset", self.prim(off)))
            elif isinstance(off, tir.Var) and id(off) not in self.names:
                self.alias(off, f"{self.names.get(id(buf), buf.name)}.elem_offset", frame)
                needs_factor = True
            else:
                kwargs.append(("elem_offset", self.prim(off)))
        if buf.scope != "global":
            kwargs.append(("scope", _str(buf.scope)))
        if buf.align not in (0, 64):
            kwargs.append(("align", _int(buf.align)))
        if needs_factor or buf.offset_factor not in (0, 1):
            kwargs.append(("offset_factor", _int(buf.offset_factor or 1)))
        if new_vars:  # `n = T.int32()`, or `n, m = T.int32(), T.int32()`
            names = ", ".join(self.names[id(v)] for v in new_vars)
            frame.stmts.append(("line", f"{names} = {_join([self.var_creation(v) for v in new_vars])}"))
        return args, kwargs

    def buffer_call(self, method: str, buf: tir.Buffer, lead: list[_E], frame: _Frame,
                    with_dtype: bool = False, data=None) -> _E:
        args, kwargs = self.buffer_kwargs(buf, frame, with_dtype=with_dtype, data=data)
        return _call(self.T(method), lead + args, kwargs)
