"""PrimFuncs and TIR statements as TVMScript (a part of the printer, `printer.py`)."""

from __future__ import annotations

from ...ir import tir
from .docs import (
    _E,
    _bool,
    _call,
    _common_prefixes,
    _dict,
    _expr_equal,
    _fold_add,
    _Frame,
    _is_int,
    _is_true,
    _join,
    _list,
    _str,
    _tuple,
    _vars_of,
    _zero,
)
from .print_tir_expr import _TirExprPrinter


class _TirPrinter(_TirExprPrinter):
    # ========================================================================= PrimFunc

    def prim_func(self, func: tir.PrimFunc) -> list:
        self.token = "tirx"
        f = self.push(_Frame(func, is_func=True))
        name = self.function_name(func)
        self.common_prefix = _common_prefixes(func)
        self.for_stack = []
        buffers = {id(p): b for p, b in func.buffer_map}
        params = set(id(p) for p in func.params)
        # symbolic int64 sizes of buffer parameters and `elem_offset` variables (te.extern's)
        # become module-level TypeVars. TVM collects them in an unordered_set of pointers, whose
        # iteration is (nearly always) the reverse of insertion: they are named last first, so
        # of two sizes both called `s`, the last dimension's is `s` (elem_offsets of colliding
        # buckets may come out in another order from run to run)
        type_vars: dict[int, tir.Var] = {}
        for p in func.params:
            buf = buffers.get(id(p))
            if buf is None:
                continue
            for e in (*buf.shape, *buf.strides):
                for v in _vars_of(e):
                    if isinstance(v, tir.Var) and id(v) not in params and v.dtype == "int64":
                        type_vars.setdefault(id(v), v)
            if isinstance(buf.elem_offset, tir.Var) and id(buf.elem_offset) not in params:
                type_vars.setdefault(id(buf.elem_offset), buf.elem_offset)
        tv_docs = sorted(((self.define(v, v.name or "v", f), v) for v in reversed(type_vars.values())),
                         key=lambda nv: nv[0].encode())
        # scalar parameters are named first, so a buffer may refer to a later one
        for p in func.params:
            if id(p) not in buffers:
                self.define(p, p.name or "v", f)
        args, bound = [], set()
        for p in func.params:
            buf = buffers.get(id(p))
            if buf is None:
                args.append(f"{self.names[id(p)]}: {self.var_type(p).text}")
                bound.add(id(p))
                continue
            stringify, compound, shape_vars = set(), set(), set()
            for d in buf.shape:
                for v in _vars_of(d):
                    shape_vars.add(id(v))
                    if id(v) in type_vars:
                        compound.add(id(v))
                    elif id(v) not in bound:
                        stringify.add(id(v))
            bname = self.define_buffer(buf, f)
            self.alias(p, bname, f)
            shape_args, kwargs = self.buffer_kwargs(buf, f, stringify, compound, with_dtype=True)
            args.append(f"{bname}: {_call(self.T('Buffer'), shape_args, kwargs).text}")
            bound |= shape_vars
        signature = f"{name}({', '.join(args)})"
        if func.ret_type not in (None, "void", ""):
            signature += f" -> {self.T(func.ret_type)}"
        attrs = [(k, v) for k, v in func.attrs
                 if not (k == "global_symbol" and v == name) and k != "s_tir"]
        has_symbol = any(k == "global_symbol" for k, _ in func.attrs) or not func.private
        if attrs:
            f.stmts.append(("line", _call(self.T("func_attr"), [self.attr_dict(attrs)]).text))
        root = _implicit_root(func.body)
        if root is not None:
            f.stmts.append(("comment", 'with T.sblock("root"):'))
            for buf in root.alloc_buffers:
                bname = self.define_buffer(buf, f)
                rhs = self.buffer_call("sblock_alloc_buffer", buf, [], f)
                f.stmts.append(("line", f"{bname} = {rhs.text}"))
            self.body(root.body, f, direct=True)
        else:
            self.body(func.body, f, direct=True)
        kw = ([] if has_symbol else ["private=True"]) + (["s_tir=True"] if func.attr("s_tir") else [])
        decorator = f"{self.T('prim_func')}({', '.join(kw)})" if kw else self.T("prim_func")
        self.pop()
        self.token = "relax"
        return self.wrap_type_vars(("func", [decorator], signature, f.stmts), tv_docs, nested=False)

    # ========================================================================= TIR statements

    def body(self, stmt, frame: _Frame, direct: bool) -> None:
        """Print `stmt` into `frame` (TVM's AsDocBody). `direct` says `stmt` is the whole
        body of the scope, which lets a lone AttrStmt print concisely."""
        work = [(stmt, direct)]  # a stack: the next statement is last
        while work:
            s, concise = work.pop()
            if isinstance(s, tir.SeqStmt):
                work.extend((x, False) for x in reversed(s.seq))
                continue
            rest = self.stmt(s, frame, concise)
            if rest is not None:  # a flat statement (let, assert, ...) continues with its body
                work.append((rest, False))

    def stmt(self, s, frame: _Frame, concise: bool):
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise TypeError(f"cannot print TIR statement {type(s).__name__}")
        return method(s, frame, concise)

    def scope(self, node, body, direct: bool = True) -> list:
        f = self.push(_Frame(node))
        self.body(body, f, direct)
        self.pop()
        return f.stmts

    def s_BufferStore(self, s: tir.BufferStore, frame: _Frame, concise: bool):
        value = self.prim(s.value)
        target = f"{self.buffer_ref(s.buffer).text}[{_join(self.indices(s.indices)) or '()'}]"
        frame.stmts.append(("line", f"{target} = {value.text}"))

    def s_Evaluate(self, s: tir.Evaluate, frame: _Frame, concise: bool):
        value = self.prim(s.value)
        if isinstance(s.value, tir.Call) and s.value.op not in ("tirx.buffer_data", "tir.buffer_data"):
            frame.stmts.append(("line", value.text))
        else:
            frame.stmts.append(("line", _call(self.T("evaluate"), [value]).text))

    def s_Return(self, s: tir.Return, frame: _Frame, concise: bool):
        frame.stmts.append(("line", f"return {self.prim(s.value).text}"))

    def s_LetStmt(self, s: tir.LetStmt, frame: _Frame, concise: bool):
        value = self.prim(s.value)
        if id(s.var) in self.names:
            frame.stmts.append(("line", f"{self.names[id(s.var)]} = {value.text}"))
        else:
            ann = f"{self.T('let')}[{self.var_type(s.var).text}]"
            name = self.define(s.var, s.var.name or "v", frame)
            frame.stmts.append(("line", f"{name}: {ann} = {value.text}"))
        return s.body

    def s_AssertStmt(self, s: tir.AssertStmt, frame: _Frame, concise: bool):
        cond = self.prim(s.condition)
        parts = [self.prim(p) if not isinstance(p, str) else _str(p) for p in s.message_parts]
        if s.error_kind is None:
            msg = parts[0] if len(parts) == 1 else _list(parts)
        else:
            msg = _tuple([_str(s.error_kind), _list(parts)])
        frame.stmts.append(("line", f"assert {cond.text}, {msg.text}"))
        return s.body

    def s_DeclBuffer(self, s: tir.DeclBuffer, frame: _Frame, concise: bool):
        buf = s.buffer
        data = buf.data
        rhs = self.view_sugar(buf, data)
        if rhs is None:
            explicit = None
            if isinstance(data, tir.Var):
                if id(data) in self.names:
                    explicit = data
            elif data is not None:
                explicit = data
            if explicit is None and buf.scope == "local":  # new local memory: TVM 0.27's AllocBuffer
                args, kwargs = self.buffer_kwargs(buf, frame)
                rhs = _call(self.T("alloc_local"), args, [kw for kw in kwargs if kw[0] != "scope"])
            else:
                rhs = self.buffer_call("decl_buffer", buf, [], frame, data=explicit)
        name = self.define_buffer(buf, frame)
        frame.stmts.append(("line", f"{name} = {rhs.text}"))
        return s.body

    def view_sugar(self, buf: tir.Buffer, data) -> _E | None:
        """`A.view(16384)`: a buffer declared over the data of a buffer in scope, either
        through `T.buffer_data(A)` or by sharing A's data variable (TVM's view sugar)."""
        if (isinstance(data, tir.Call) and data.op in ("tirx.buffer_data", "tir.buffer_data")
                and len(data.args) == 1 and isinstance(data.args[0], tir.Buffer)):
            parent = data.args[0]
        else:
            parent = self.data_owner.get(id(data))
        if parent is None or id(parent) not in self.names or parent is buf:
            return None
        same_offset = (buf.elem_offset is None and parent.elem_offset is None) or _expr_equal(
            buf.elem_offset, parent.elem_offset)
        same_meta = (buf.scope == parent.scope and buf.align == parent.align
                     and buf.offset_factor == parent.offset_factor)
        same_shape = len(buf.shape) == len(parent.shape) and all(
            _expr_equal(a, b) for a, b in zip(buf.shape, parent.shape, strict=True))
        same_strides = len(buf.strides) == len(parent.strides) and all(
            _expr_equal(a, b) for a, b in zip(buf.strides, parent.strides, strict=True))
        if not (same_meta and same_offset and buf.dtype == parent.dtype and not same_shape and same_strides):
            return None
        return _call(f"{self.names[id(parent)]}.view", [self.prim(d) for d in buf.shape])

    def s_Allocate(self, s: tir.Allocate, frame: _Frame, concise: bool):
        # TVM 0.27 has no Allocate node (it allocates with T.alloc_buffer); print the older
        # `T.allocate` spelling, which says the same.
        extents = _list([self.prim(e) for e in s.extents])
        scope = s.buffer_var.type_annotation.scope if s.buffer_var.type_annotation else "global"
        kwargs = [] if _is_true(s.condition) else [("condition", self.prim(s.condition))]
        if s.annotations:
            kwargs.append(("annotations", self.value(dict(s.annotations))))
        rhs = _call(self.T("allocate"), [extents, _str(s.dtype), _str(scope)], kwargs)
        name = self.define(s.buffer_var, s.buffer_var.name or "buffer", frame)
        frame.stmts.append(("line", f"{name} = {rhs.text}"))
        return s.body

    def s_AttrStmt(self, s: tir.AttrStmt, frame: _Frame, concise: bool):
        body = s.body
        lhs = None
        if s.attr_key in ("thread_extent", "virtual_thread") and isinstance(s.node, tir.IterVar):
            iv = s.node
            if id(iv.var) in self.names:
                var_doc = _E(self.names[id(iv.var)])
            else:
                var_doc = _str(iv.thread_tag)
                lhs = iv.var
            rhs = _call(self.T("launch_thread"), [var_doc, self.prim(s.value)])
        elif _is_dict_attr(s):
            items, cur = [], s
            while True:
                items.append((_str(cur.attr_key), self.value(cur.value)))
                if isinstance(cur.body, tir.AttrStmt) and _is_dict_attr(cur.body):
                    cur = cur.body
                    continue
                body = cur.body
                break
            rhs = _call(self.T("attr"), [_dict(items)])
        else:
            rhs = _call(self.T("attr"), [self.attr_node(s.node), _str(s.attr_key), self.value(s.value)])
        f = self.push(_Frame(s))
        lhs_name = self.define(lhs, lhs.name, f) if lhs is not None else None
        self.body(body, f, direct=True)
        self.pop()
        if concise:
            head = f"{lhs_name} = {rhs.text}" if lhs_name else rhs.text
            frame.stmts.append(("line", head))
            frame.stmts.extend(f.stmts)
        else:
            head = f"with {rhs.text}" + (f" as {lhs_name}" if lhs_name else "")
            frame.stmts.append(("scope", head, f.stmts))

    def attr_node(self, node) -> _E:
        if isinstance(node, str):
            return _str(node)
        if isinstance(node, tir.Buffer):
            return self.buffer_ref(node)
        if isinstance(node, tir.IterVar):
            dom = _E("None") if node.dom is None else _call(self.T("Range"), [
                self.prim(node.dom.min), self.prim(_fold_add(node.dom.extent, node.dom.min))])
            return _call(self.T("iter_var"), [self.prim(node.var), dom,
                                              _str(_ITER_TYPE_NAME.get(node.iter_type, "DataPar")),
                                              _str(node.thread_tag)])
        return self.value(node)

    def s_IfThenElse(self, s: tir.IfThenElse, frame: _Frame, concise: bool):
        cond = self.prim(s.condition)
        then = self.scope(s.then_case, s.then_case)
        other = self.scope(s.else_case, s.else_case) if s.else_case is not None else []
        frame.stmts.append(("if", cond.text, then, other))

    def s_While(self, s: tir.While, frame: _Frame, concise: bool):
        cond = self.prim(s.condition)
        frame.stmts.append(("scope", f"while {cond.text}", self.scope(s, s.body)))

    def s_For(self, s: tir.For, frame: _Frame, concise: bool):
        grid: list[tir.For] = []
        loop_vars: set[int] = set()
        loop = s
        while isinstance(loop, tir.For):
            if (loop.kind != "serial" or not _zero(loop.min) or loop.annotations
                    or loop.thread_binding is not None
                    or any(id(v) in loop_vars for v in _vars_of(loop.extent))):
                break
            grid.append(loop)
            loop_vars.add(id(loop.loop_var))
            loop = loop.body
        f = self.push(_Frame(s))
        if len(grid) > 1:
            names = [self.define(g.loop_var, g.loop_var.name or "v", f) for g in grid]
            extents = [self.prim(g.extent) for g in grid]
            self.for_stack.extend(grid)
            self.body(grid[-1].body, f, direct=True)
            del self.for_stack[-len(grid):]
            self.pop()
            frame.stmts.append(("scope", f"for {', '.join(names)} in {self.T('grid')}({_join(extents)})",
                                f.stmts))
            return
        name = self.define(s.loop_var, s.loop_var.name or "v", f)
        if _zero(s.min):
            args = [self.prim(s.extent)]
        else:
            args = [self.prim(s.min), self.prim(_fold_add(s.min, s.extent))]
        kwargs: list[tuple[str, _E]] = []
        if s.kind == "serial":
            prefix = "range" if not s.annotations else self.T("serial")
        elif s.kind == "thread_binding":
            prefix = self.T("thread_binding")
            kwargs.append(("thread", _str(s.thread_binding or "")))
        else:
            prefix = self.T({"parallel": "parallel", "vectorized": "vectorized", "unroll": "unroll"}[s.kind])
        if s.annotations:
            ann = dict(s.annotations)
            if len(ann) == 1 and "disable_unroll" in ann:
                kwargs.append(("unroll", _bool(False)))
            elif len(ann) == 1 and "pragma_unroll" in ann:
                kwargs.append(("unroll", self.value(ann["pragma_unroll"])))
            else:
                kwargs.append(("annotations", self.value(ann)))
        self.for_stack.append(s)
        self.body(s.body, f, direct=True)
        self.for_stack.pop()
        self.pop()
        frame.stmts.append(("scope", f"for {name} in {_call(prefix, args, kwargs).text}", f.stmts))

    def s_SBlockRealize(self, s: tir.SBlockRealize, frame: _Frame, concise: bool):
        frame.stmts.append(self.block(s.block, s))

    def s_SBlock(self, s: tir.SBlock, frame: _Frame, concise: bool):
        frame.stmts.append(self.block(s, None))

    def block(self, block: tir.SBlock, realize: tir.SBlockRealize | None):
        f = self.push(_Frame(block))
        loops = {id(loop.loop_var): loop for loop in self.for_stack}
        pending: list[int] = []

        def remappable(i: int) -> bool:
            if realize is None:
                return False
            iv, value = block.iter_vars[i], realize.iter_values[i]
            if iv.iter_type not in (tir.DATA_PAR, tir.COMM_REDUCE) or not isinstance(value, tir.Var):
                return False
            loop = loops.get(id(value))
            return loop is not None and _expr_equal(loop.min, iv.dom.min) and _expr_equal(loop.extent, iv.dom.extent)

        def single(i: int) -> None:
            iv = block.iter_vars[i]
            kind = tir.ITER_KIND_NAME[iv.iter_type]
            if _zero(iv.dom.min):
                dom = self.prim(iv.dom.extent)
            else:
                dom = _tuple([self.prim(iv.dom.min), self.prim(_fold_add(iv.dom.min, iv.dom.extent))])
            args = [dom] + ([self.prim(realize.iter_values[i])] if realize is not None else [])
            rhs = _call(self.T(f"axis.{kind}"), args)
            f.stmts.append(("line", f"{self.define(iv.var, iv.var.name or 'v', f)} = {rhs.text}"))

        def flush() -> None:
            if len(pending) == 1:
                single(pending[0])
            elif pending:
                names = [self.define(block.iter_vars[i].var, block.iter_vars[i].var.name or "v", f)
                         for i in pending]
                values = [self.prim(realize.iter_values[i]) for i in pending]
                kinds = "".join("S" if block.iter_vars[i].iter_type == tir.DATA_PAR else "R" for i in pending)
                f.stmts.append(("line", f"{', '.join(names)} = {self.T('axis.remap')}"
                                        f'("{kinds}", {_list(values).text})'))
            pending.clear()

        for i in range(len(block.iter_vars)):
            if remappable(i):
                pending.append(i)
            else:
                flush()
                single(i)
        flush()
        if realize is not None and not _is_true(realize.predicate):
            f.stmts.append(("line", _call(self.T("where"), [self.prim(realize.predicate)]).text))
        f.stmts.append(("line", _call(self.T("reads"), [self.region(r) for r in block.reads]).text))
        f.stmts.append(("line", _call(self.T("writes"), [self.region(r) for r in block.writes]).text))
        if block.annotations:
            f.stmts.append(("line", _call(self.T("sblock_attr"), [self.value(dict(block.annotations))]).text))
        for buf in block.alloc_buffers:
            name = self.define_buffer(buf, f)
            f.stmts.append(("line", f"{name} = {self.buffer_call('sblock_alloc_buffer', buf, [], f).text}"))
        for m in block.match_buffers:
            name = self.define_buffer(m.buffer, f)
            src = self.region(m.source)
            f.stmts.append(("line", f"{name} = {self.buffer_call('match_buffer', m.buffer, [src], f).text}"))
        if block.init is not None:
            f.stmts.append(("scope", f"with {self.T('init')}()", self.scope(block.init, block.init)))
        self.body(block.body, f, direct=True)
        self.pop()
        kwargs = [] if realize is not None else [("no_realize", _bool(True))]
        return ("scope", f"with {_call(self.T('sblock'), [_str(block.name)], kwargs).text}", f.stmts)


_ITER_TYPE_NAME = {tir.DATA_PAR: "DataPar", 1: "ThreadIndex", tir.COMM_REDUCE: "CommReduce",
                   tir.ORDERED: "Ordered", tir.OPAQUE: "Opaque"}


def _is_dict_attr(s: tir.AttrStmt) -> bool:
    node = s.node
    return (isinstance(node, int) and not isinstance(node, bool) and node == 0) or (
        _is_int(node) and node.value == 0)




def _contains_realize(stmt) -> bool:
    work = [stmt]
    while work:
        s = work.pop()
        if isinstance(s, tir.SBlockRealize):
            return True
        if isinstance(s, tir.SeqStmt):
            work.extend(s.seq)
        elif isinstance(s, tir.IfThenElse):
            work.append(s.then_case)
            if s.else_case is not None:
                work.append(s.else_case)
        elif isinstance(s, tir.SBlock):
            work.append(s.body)
        elif hasattr(s, "body") and isinstance(s, tir.Stmt):
            work.append(s.body)
    return False


def _implicit_root(body) -> tir.SBlock | None:
    """The root block TVM leaves implicit (`# with T.sblock("root"):`), if any."""
    if not isinstance(body, tir.SBlockRealize) or body.iter_values or not _is_true(body.predicate):
        return None
    root = body.block
    if root.annotations or root.match_buffers or root.reads or root.writes or root.init is not None:
        return None
    inner = root.body
    if root.alloc_buffers or (isinstance(inner, tir.SBlockRealize) and inner.block.iter_vars) or (
            not isinstance(inner, tir.SBlockRealize) and _contains_realize(inner)):
        return root
    return None
