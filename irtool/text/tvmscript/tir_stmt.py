"""TIR statements in TVMScript: a `@T.prim_func` body, where "rest of the block"
statements (let, decl_buffer, assert, attr) own what follows, and sblocks with the
access regions TVM infers when `T.reads`/`T.writes` are absent."""

from __future__ import annotations

from lark import Tree

from ...diagnostics import DiagnosticError
from ...ir import tir
from ...ir.types import is_valid_dtype
from .evaluate import NotPrimError, _Dotted
from .syntax import suite_stmts
from .tir_expr import _as_prim, _identity_fold, _int_bits, _TirExprBuilder, _unify


def _axis_extent(lo: tir.PrimExpr, hi: tir.PrimExpr) -> tir.PrimExpr:
    """The extent of a `T.axis.*((lo, hi), ...)` domain as TVM 0.27's parser builds it
    (`_as_range`): `hi - lo` simplified when that is a constant (`(v, v + 1)` has extent 1),
    else `hi - lo` as TVM's operator folds it, not simplified: fuse-tir's nested domain
    `(v, v + (1 - v))` has extent `v + (1 - v) - v`, and TVM prints it back as
    `(v, v + (v + (1 - v) - v))`."""
    simple = _TirExprBuilder.simplify_sub(hi, lo)
    if isinstance(simple, tir.IntImm):
        return simple
    if not isinstance(lo, tir.IntImm) or not isinstance(hi, tir.IntImm):
        from ...codegen.topi.canonical import canonical_simplify  # only nested sblocks get here

        constant = canonical_simplify(tir.BinOp("sub", hi, lo))
        if isinstance(constant, tir.IntImm):
            return constant
    if isinstance(lo, tir.IntImm) and lo.value == 0:
        return hi
    return _identity_fold("sub", hi, lo) or tir.BinOp("sub", hi, lo)


class _TirBuilder(_TirExprBuilder):
    # -- functions and statements
    BUFFER_MAKERS = ("T.Buffer", "T.match_buffer", "T.decl_buffer", "T.alloc_local", "T.alloc_buffer",
                     "T.sblock_alloc_buffer",
                     "T.buffer_decl")

    def build_func(self, funcdef, options: dict) -> tir.PrimFunc:
        name_tok, params_node, ret_node, suite = funcdef.children
        self.func_name = str(name_tok)
        self.func_attrs: dict = {}
        self.root_allocs: list[tir.Buffer] = []
        self.block_stack: list[dict] = []
        self.has_blocks = False
        self.forward_buffers: dict[str, tir.Buffer] = {}
        param_nodes = list(params_node.children) if params_node is not None else []
        # scalar parameters first: a buffer's shape may name one that comes later (`"n"`)
        scalars: dict[int, tir.Var] = {}
        for i, p in enumerate(param_nodes):
            pname_tok, ann = p.children
            if ann is None:
                self.error(f"parameter `{pname_tok}` of a PrimFunc needs a type annotation", p)
            if self.dotted_callee(ann) not in self.BUFFER_MAKERS:
                dtype, ptr = self.var_type(self.eval(ann), ann)
                scalars[i] = tir.Var(str(pname_tok), dtype, ptr, span=self.span(p))
                self.define(str(pname_tok), scalars[i])
        params, self.buffer_map = [], []
        for i, p in enumerate(param_nodes):
            if i in scalars:
                params.append(scalars[i])
                continue
            pname = str(p.children[0])
            buf = self.named_buffer(p.children[1], pname)
            handle = tir.Var(f"{pname}_handle", "handle", span=self.span(p))
            params.append(handle)
            self.buffer_map.append((handle, buf))
            self.define(pname, buf)
        ret_type = None
        if ret_node is not None:
            ret_type = self.var_type(self.eval(ret_node), ret_node)[0]
        self.scopes.append({})
        body_stmts = self.stmt_list(suite_stmts(suite), top=True)
        self.scopes.pop()
        body = tir.seq(body_stmts) if body_stmts else tir.Evaluate(tir.IntImm(0))
        # TVM's ScriptComplete: a root block is added for root allocations, for a body that is one
        # sblock with iterators, or for a body holding sblocks deeper; a body that is one sblock
        # without iterators (te.extern's opaque block) is the root itself.
        single = body if isinstance(body, tir.SBlockRealize) and not body.iter_values else None
        if (self.root_allocs or (self.has_blocks and single is None)) and not (
                single is not None and single.block.name == "root"):
            body = tir.SBlockRealize((), tir.IntImm(1, "bool"),
                                     tir.SBlock("root", (), (), (), body, alloc_buffers=self.root_allocs))
        if self.func_attrs.get("global_symbol") == self.func_name and not options.get("private"):
            del self.func_attrs["global_symbol"]  # implied by a public function, as TVM prints it
        if options.get("s_tir") or self.has_blocks:
            # TVM records structured TIR (sblocks) as the `s_tir` attribute
            self.func_attrs["s_tir"] = True
        attrs = tuple(sorted(self.func_attrs.items()))
        position = {id(p): i for i, p in enumerate(params)}
        self.buffer_map.sort(key=lambda pair: position.get(id(pair[0]), len(params)))
        return tir.PrimFunc(params, body, ret_type, self.buffer_map, attrs, private=options.get("private", False),
                            span=self.span(funcdef))

    def var_type(self, value, node) -> tuple[str, tir.PointerType | None]:
        if isinstance(value, _Dotted) and value.name.startswith("T."):
            dt = value.name[2:]
            if dt == "handle" or is_valid_dtype(dt):
                return dt, None
        if isinstance(value, tuple) and value and value[0] == "handle_type":
            ty = value[1]
            if isinstance(ty, tuple):
                return "handle", tir.PointerType(ty[1], ty[2])
            return "handle", None
        if isinstance(value, tuple) and value and value[0] == "new_var":
            return value[1], None
        if isinstance(value, str) and is_valid_dtype(value):
            return value, None
        self.error("expected a TIR type such as `T.int32` or `T.handle`", node)

    def dotted_callee(self, node) -> str | None:
        if isinstance(node, Tree) and node.data in ("call", "subscript"):
            callee = node.children[0]
            try:
                v = self.eval(callee)
            except DiagnosticError:
                return None
            if isinstance(v, _Dotted):
                return v.name
        return None

    def named_buffer(self, node, name: str) -> tir.Buffer | None:
        """The buffer built by `T.Buffer(...)`-like syntax, named `name`; None otherwise."""
        callee = self.dotted_callee(node)
        if callee not in self.BUFFER_MAKERS:
            return None
        if node.data == "subscript":
            pos = [self.eval(i) for i in node.children[1].children]
            kw = {}
        else:
            pos, kw, _ = self.call_args(node)
        if callee == "T.match_buffer" and pos and isinstance(pos[0], (tir.BufferRegion, tir.Var)):
            return None
        return self.make_buffer(node, pos, dict(kw), name)

    def stmt_list(self, nodes: list, top: bool = False) -> list:
        out: list = []
        for i, node in enumerate(nodes):
            result = self.stmt(node, nodes[i + 1:], top)
            if isinstance(result, _Rest):
                out.append(result.stmt)
                break
            if result is not None:
                out.append(result)
        return out

    def rest(self, nodes, top=False) -> tir.Stmt | None:
        """The statements after a scope-opening one: its body (None when nothing follows,
        as TVM 0.27's flat statements have no body)."""
        body = self.stmt_list(nodes, top)
        return tir.seq(body) if body else None

    def suite_body(self, nodes) -> tir.Stmt:
        body = self.stmt_list(nodes)
        return tir.seq(body) if body else tir.Evaluate(tir.IntImm(0))

    def stmt(self, node, rest: list, top: bool):
        kind = node.data
        try:
            if kind == "simple_stmt":
                return self.simple(node.children[0], rest, top)
            return getattr(self, "s_" + kind, self.s_unknown)(node, rest, top)
        except NotPrimError as err:
            self.error(str(err), node)

    def s_unknown(self, node, rest, top):
        self.error("this statement is not part of TIR", node)

    def simple(self, node, rest, top):
        kind = node.data
        if kind == "pass_stmt":
            return None
        if kind == "return_stmt":
            value = node.children[0]
            return tir.Return(_as_prim(self.eval(value)) if value is not None else tir.IntImm(0),
                              span=self.span(node))
        if kind == "assert_stmt":
            return self.s_assert(node, rest, top)
        if kind == "expr_stmt":
            return self.s_expr(node, rest, top)
        if kind == "assign":
            return self.s_assign(node, rest, top)
        if kind == "ann_assign":
            return self.s_ann_assign(node, rest, top)
        self.error("this statement is not part of TIR", node)

    def s_assert(self, node, rest, top):
        cond = _as_prim(self.eval(node.children[0]))
        msg = self.eval(node.children[1]) if node.children[1] is not None else ""
        if isinstance(msg, tuple) and len(msg) == 2 and isinstance(msg[0], str):
            kind, parts = msg[0], msg[1]
        else:  # `assert c, "message"` is TVM's ("RuntimeError", ["message"])
            kind, parts = "RuntimeError", [msg]
        parts = [_as_prim(p) for p in parts]
        self.scopes.append({})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.AssertStmt(cond, kind, parts, body, span=self.span(node)))

    def s_expr(self, node, rest, top):
        expr = node.children[0]
        callee = self.dotted_callee(expr)
        if callee == "T.func_attr":
            if not top:
                self.error("`T.func_attr` must be at the top of the function body", node)
            value = self.eval(expr.children[1].children[0])
            if not isinstance(value, dict):
                self.error("`T.func_attr` takes a dict", expr)
            self.func_attrs.update(value)
            return None
        if callee in ("T.reads", "T.writes", "T.where", "T.sblock_attr", "T.block_attr"):
            if not self.block_stack:
                self.error(f"`{callee}` is only allowed inside `T.sblock`", node)
            ctx = self.block_stack[-1]
            pos, kw, _ = self.call_args(expr)
            if callee == "T.where":
                ctx["where"] = _as_prim(pos[0])
            elif callee in ("T.sblock_attr", "T.block_attr"):
                ctx["annotations"].update(pos[0] if pos else kw)
            else:
                regions = []
                for v in pos:
                    for r in (v if isinstance(v, (list, tuple)) else [v]):
                        regions.append(self.as_region(r, expr))
                ctx["reads" if callee == "T.reads" else "writes"] = regions
            return None
        if callee == "T.attr":
            pos, kw, _ = self.call_args(expr)
            node_v, key, value = self.attr_args(pos, expr)
            self.scopes.append({})
            body = self.rest(rest, top)
            self.scopes.pop()
            return _Rest(tir.AttrStmt(node_v, key, value, body, span=self.span(node)))
        if callee == "T.evaluate":
            pos, _, _ = self.call_args(expr)
            return tir.Evaluate(_as_prim(pos[0]), span=self.span(node))
        value = self.eval(expr)
        if isinstance(value, (tir.PrimExpr, int)):
            return tir.Evaluate(_as_prim(value), span=self.span(node))
        self.error("this expression has no effect", node)

    def attr_args(self, pos, node):
        if len(pos) == 1 and isinstance(pos[0], dict):
            # T.attr({"compute_scope": "x"}): a dict of one attribute on no node
            (key, value), = pos[0].items()
            return tir.IntImm(0), key, _as_prim(value) if not isinstance(value, str) else tir.StringImm(value)
        if len(pos) != 3:
            self.error("`T.attr` takes (node, key, value)", node)
        node_v, key, value = pos
        if isinstance(node_v, (int, float)):
            node_v = _as_prim(node_v)
        value = _as_prim(value) if not isinstance(value, tir.PrimExpr) else value
        return node_v, key, value

    def as_region(self, value, node) -> tir.BufferRegion:
        if isinstance(value, tir.BufferRegion):
            return value
        if isinstance(value, tir.BufferLoad):
            return tir.BufferRegion(value.buffer, [tir.Range(i, tir.const(1, i.dtype)) for i in value.indices])
        if isinstance(value, tir.Buffer):
            return tir.BufferRegion(value, [tir.Range(tir.const(0, d.dtype), d) for d in value.shape])
        self.error("expected a buffer region such as `A[i, 0:8]`", node)

    def s_assign(self, node, rest, top):
        target, value_node = node.children
        if isinstance(target, Tree) and target.data == "subscript":
            buf = self.eval(target.children[0])
            if not isinstance(buf, tir.Buffer):
                self.error("only buffers can be stored to", target)
            indices = self.buffer_indices(target.children[1].children)
            value = _as_prim(self.eval(value_node), buf.dtype)
            if isinstance(value, (tir.IntImm, tir.FloatImm)) and value.dtype != buf.dtype and \
                    not isinstance(self.eval(value_node), tir.PrimExpr):
                value = tir.const(value.value, buf.dtype)
            return tir.BufferStore(buf, value, indices, span=self.span(node))
        if isinstance(target, Tree) and target.data == "target_tuple":
            callee = self.dotted_callee(value_node)
            if callee != "T.axis.remap":
                self.error("only `T.axis.remap` can assign several names", node)
            names = [str(t.children[0]) for t in target.children if t is not None]
            pos, _, _ = self.call_args(value_node)
            if len(pos) != 2 or not isinstance(pos[0], str) or not isinstance(pos[1], (list, tuple)):
                self.error("`T.axis.remap` takes the kind letters and a list of loop variables", value_node)
            kinds, loops = pos
            if len(kinds) != len(names) or len(loops) != len(names):
                self.error("`T.axis.remap` needs one kind letter and one loop variable per name", value_node)
            for name, kind, loop in zip(names, kinds, loops, strict=True):
                self.remap_one(name, kind, loop, value_node, node)
            return None
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        name = str(target.children[0])
        callee = self.dotted_callee(value_node)
        if callee == "T.axis.remap":  # one variable: `vi = T.axis.remap("S", [i])`
            pos, _, _ = self.call_args(value_node)
            if len(pos) != 2 or not isinstance(pos[0], str) or not isinstance(pos[1], (list, tuple)):
                self.error("`T.axis.remap` takes the kind letters and a list of loop variables", value_node)
            kinds, loops = pos
            if len(kinds) != 1 or len(loops) != 1:
                self.error("`T.axis.remap` needs one kind letter and one loop variable per name", value_node)
            self.remap_one(name, kinds, loops[0], value_node, node)
            return None
        if callee in ("T.axis.spatial", "T.axis.reduce", "T.axis.scan", "T.axis.opaque", "T.axis.S", "T.axis.R"):
            pos, kw, _ = self.call_args(value_node)
            dom, value = pos[0], _as_prim(pos[1], "int32")
            if isinstance(dom, (tuple, list)):
                lo, hi = _unify(dom[0], dom[1])
                rng = tir.Range(lo, _axis_extent(lo, hi))
            else:  # TVM: a plain number is an int32 extent, whatever the binding's dtype
                ext = _as_prim(dom, "int32")
                rng = tir.Range(tir.const(0, ext.dtype), ext)
            kind = {"spatial": tir.DATA_PAR, "S": tir.DATA_PAR, "reduce": tir.COMM_REDUCE, "R": tir.COMM_REDUCE,
                    "scan": tir.ORDERED, "opaque": tir.OPAQUE}[callee.rsplit(".", 1)[1]]
            # TVM's ir_builder axis: the variable is as wide as the widest of the domain and
            # `dtype` (int32 by default); the binding is kept as written
            dtype = str(kw.get("dtype", "int32"))
            bits = max(_int_bits(rng.min.dtype), _int_bits(rng.extent.dtype), _int_bits(dtype))
            self.add_iter(name, kind, rng, value, node, var_dtype=f"{dtype.rstrip('0123456789')}{bits}")
            return None
        buf = self.named_buffer(value_node, name)
        if buf is not None:
            if callee in ("T.sblock_alloc_buffer", "T.alloc_buffer"):
                (self.block_stack[-1]["alloc"] if self.block_stack else self.root_allocs).append(buf)
                self.define(name, buf)
                return None
            if callee == "T.alloc_local":
                # TVM 0.27's AllocBuffer of local scope (TOPI's IRBuilder `T.decl_buffer(...,
                # scope="local")`): flat there, a DeclBuffer of new memory owning the rest here
                if buf.scope != "global":
                    self.error("`T.alloc_local` takes no scope", value_node)
                buf.scope = "local"
                buf.data = tir.Var(name, "handle", tir.PointerType(buf.dtype, "local"))
                self.scopes.append({name: buf})
                body = self.rest(rest, top)
                self.scopes.pop()
                return _Rest(tir.DeclBuffer(buf, body, span=self.span(node)))
            if callee == "T.decl_buffer":
                earlier = self.forward_buffers.get(name)
                if earlier is not None and _same_layout(earlier, buf):
                    # TVM prints a buffer used before its declaration as `A = T.Buffer(...)` at
                    # the first use, and `A = T.decl_buffer(...)` again where it is declared:
                    # one buffer, so the declaration takes the earlier object
                    earlier.data = buf.data
                    buf = earlier
                self.scopes.append({name: buf})
                body = self.rest(rest, top)
                self.scopes.pop()
                return _Rest(tir.DeclBuffer(buf, body, span=self.span(node)))
            if callee == "T.match_buffer":
                self.error("`T.match_buffer` of a parameter belongs in the signature", node)
            self.define(name, buf)  # T.Buffer(...) in a body names a buffer without declaring it
            self.forward_buffers[name] = buf
            return None
        if callee == "T.match_buffer" and top and not self.block_stack:
            # the older spelling of a buffer parameter: `A = T.match_buffer(a, (n, 4))`
            pos, kw, _ = self.call_args(value_node)
            handle = pos[0]
            if not (isinstance(handle, tir.Var) and handle.dtype == "handle"):
                self.error("`T.match_buffer` at the top of a function takes a handle parameter", value_node)
            if any(h is handle for h, _ in self.buffer_map):
                self.error(f"parameter `{handle.name}` is matched twice", value_node)
            buf = self.make_buffer(value_node, list(pos[1:]), dict(kw), name)
            self.buffer_map.append((handle, buf))
            self.define(name, buf)
            return None
        if callee == "T.match_buffer":
            pos, kw, _ = self.call_args(value_node)
            region = self.as_region(pos[0], value_node)
            buf = self.make_buffer(value_node, list(pos[1:]), dict(kw), name)
            if not self.block_stack:
                self.error("`T.match_buffer` of a region is only allowed inside `T.sblock`", node)
            self.block_stack[-1]["match"].append(tir.MatchBufferRegion(buf, region))
            self.define(name, buf)
            return None
        value = self.eval(value_node)
        if isinstance(value, tir.Buffer):  # A_1 = A.view(...): a DeclBuffer sharing A's data
            buf = tir.Buffer(name, value.shape, value.dtype, data=value.data, span=value.span)
            self.scopes.append({name: buf})
            body = self.rest(rest, top)
            self.scopes.pop()
            return _Rest(tir.DeclBuffer(buf, body, span=self.span(node)))
        if isinstance(value, tuple) and value and value[0] == "new_var":
            self.define(name, tir.Var(name, value[1], span=self.span(node)))
            return None
        return self.let(name, _as_prim(value), rest, top, node)

    def remap_one(self, name, kind, loop, value_node, node):
        extent = self.loop_extents.get(id(loop))
        if extent is None:
            self.error(f"`T.axis.remap` needs loop variables; `{getattr(loop, 'name', loop)}` is not one", value_node)
        if kind not in ("S", "R", "O"):
            self.error(f"unknown iteration kind `{kind}` (S spatial, R reduce, O ordered)", value_node)
        self.add_iter(name, {"S": tir.DATA_PAR, "R": tir.COMM_REDUCE, "O": tir.ORDERED}[kind],
                      tir.Range(extent[0], extent[1]), loop, node)

    def let(self, name, value, rest, top, node, dtype=None):
        var = tir.Var(name, dtype or value.dtype, span=self.span(node))
        self.scopes.append({name: var})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.LetStmt(var, value, body, span=self.span(node)))

    def s_ann_assign(self, node, rest, top):
        target, ann, value_node = node.children
        if not (isinstance(target, Tree) and target.data == "name"):
            self.error("cannot assign to this", target)
        ann_v = self.eval(ann)
        if isinstance(ann_v, tuple) and ann_v and ann_v[0] == "let":
            ann_v = ann_v[1]
        dtype, ptr = self.var_type(ann_v, ann)
        raw = self.eval(value_node)
        value = _as_prim(raw, dtype)
        if isinstance(raw, tir.PrimExpr) and raw.dtype != dtype:
            self.error(f"the value has dtype {raw.dtype}, but the variable is declared {dtype}", value_node)
        name = str(target.children[0])
        var = tir.Var(name, dtype, ptr, span=self.span(node))
        self.scopes.append({name: var})
        body = self.rest(rest, top)
        self.scopes.pop()
        return _Rest(tir.LetStmt(var, value, body, span=self.span(node)))

    def add_iter(self, name, kind, rng, value, node, var_dtype: str | None = None):
        if not self.block_stack:
            self.error("`T.axis` is only allowed inside `T.sblock`", node)
        ctx = self.block_stack[-1]
        var = tir.Var(name, var_dtype or _as_prim(value).dtype, span=self.span(node))
        ctx["iter_vars"].append(tir.IterVar(var, rng, kind))
        ctx["iter_values"].append(_as_prim(value))
        self.define(name, var)

    # -- compound statements
    LOOP_KINDS = {"range": "serial", "T.serial": "serial", "T.parallel": "parallel",
                  "T.vectorized": "vectorized", "T.unroll": "unroll", "T.thread_binding": "thread_binding"}

    def s_for_stmt(self, node, rest, top):
        target, iter_node, suite = node.children
        names = ([str(t.children[0]) for t in target.children if t is not None]
                 if target.data == "target_tuple" else [str(target.children[0])])
        callee = self.dotted_callee(iter_node)
        pos, kw, _ = self.call_args(iter_node) if callee else ([], {}, [])
        if callee == "T.grid":
            if len(pos) != len(names):
                self.error(f"`T.grid` has {len(pos)} extents for {len(names)} loop variables", node)
            loops = [(n, 0, e, "serial", None, {}) for n, e in zip(names, pos, strict=True)]
        elif callee in self.LOOP_KINDS:
            if len(names) != 1:
                self.error("this loop binds one variable", target)
            if not pos:
                self.error("the loop needs an extent", iter_node)
            lo, hi = (0, pos[0]) if len(pos) == 1 else (pos[0], pos[1])
            loops = [(names[0], lo, hi, self.LOOP_KINDS[callee], kw.get("thread"), kw.get("annotations") or {})]
        else:
            if callee is not None and callee.startswith("T.") and callee not in self.CALLS:
                self.error(f"unknown name `{callee}`", iter_node.children[0])
            self.error("a TIR loop iterates over `range`, `T.grid`, `T.serial`, `T.parallel`, `T.vectorized`, "
                       "`T.unroll` or `T.thread_binding`", iter_node)
        made = []
        self.scopes.append({})
        for name, lo, hi, kind, thread, ann in loops:
            lo_p, hi_p = _unify(lo, hi)
            if isinstance(lo, int) and not isinstance(hi, int):
                lo_p = tir.const(lo, hi_p.dtype)
            extent = self.simplify_sub(hi_p, lo_p)
            var = tir.Var(name, extent.dtype, span=self.span(node))
            self.loop_extents[id(var)] = (lo_p, extent)
            self.define(name, var)
            made.append((var, lo_p, extent, kind, thread, ann))
        body = self.suite_body(suite_stmts(suite))
        self.scopes.pop()
        for var, lo_p, extent, kind, thread, ann in reversed(made):
            body = tir.For(var, lo_p, extent, kind, body, thread_binding=thread,
                           annotations=tuple(ann.items()), span=self.span(node))
        return body

    def s_while_stmt(self, node, rest, top):
        cond_node, suite = node.children
        return tir.While(_as_prim(self.eval(cond_node)), self.scoped_suite(suite), span=self.span(node))

    def s_if_stmt(self, node, rest, top):
        cond_node, then_suite, elifs, else_suite = node.children
        branches = [(cond_node, then_suite)]
        for i in range(0, len(elifs.children), 2):
            branches.append((elifs.children[i], elifs.children[i + 1]))
        else_stmt = None
        if else_suite is not None:
            else_stmt = self.scoped_suite(else_suite)
        for cond, suite in reversed(branches):
            then = self.scoped_suite(suite)
            else_stmt = tir.IfThenElse(_as_prim(self.eval(cond)), then, else_stmt, span=self.span(node))
        return else_stmt

    def scoped_suite(self, suite):
        self.scopes.append({})
        body = self.suite_body(suite_stmts(suite))
        self.scopes.pop()
        return body

    def s_with_stmt(self, node, rest, top):
        ctx_node, target, suite = node.children
        callee = self.dotted_callee(ctx_node)
        if callee in ("T.sblock", "T.block"):
            return self.sblock(node, ctx_node, suite, top)
        if callee == "T.init":
            if not self.block_stack:
                self.error("`T.init` is only allowed inside `T.sblock`", node)
            self.block_stack[-1]["init"] = self.scoped_suite(suite)
            return None
        if callee == "T.attr":
            pos, kw, _ = self.call_args(ctx_node)
            node_v, key, value = self.attr_args(pos, ctx_node)
            return tir.AttrStmt(node_v, key, value, self.scoped_suite(suite), span=self.span(node))
        if callee is None:
            self.error("a `with` statement in TIR needs `T.sblock`, `T.init` or `T.attr`", ctx_node)
        self.error(f"`with {callee}(...)` is not supported in TIR", ctx_node)

    def sblock(self, node, ctx_node, suite, top):
        pos, kw, _ = self.call_args(ctx_node)
        name = pos[0] if pos else kw.get("name_hint", "")
        self.has_blocks = True
        ctx = {"iter_vars": [], "iter_values": [], "reads": None, "writes": None, "init": None, "alloc": [],
               "match": [], "where": None, "annotations": {}}
        self.block_stack.append(ctx)
        self.scopes.append({})
        body = self.suite_body(suite_stmts(suite))
        self.scopes.pop()
        self.block_stack.pop()
        reads, writes = ctx["reads"], ctx["writes"]
        if reads is None or writes is None:
            auto_reads, auto_writes = _access_regions(body, ctx["init"], ctx["alloc"])
            reads = auto_reads if reads is None else reads
            writes = auto_writes if writes is None else writes
        block = tir.SBlock(name, ctx["iter_vars"], reads, writes, body, ctx["init"], ctx["alloc"], ctx["match"],
                           tuple(ctx["annotations"].items()), span=self.span(node))
        predicate = ctx["where"] if ctx["where"] is not None else tir.IntImm(1, "bool")
        if top and name == "root" and not ctx["iter_vars"]:
            self.has_blocks = True
        return tir.SBlockRealize(ctx["iter_values"], predicate, block, span=self.span(node))


def _same_layout(a: tir.Buffer, b: tir.Buffer) -> bool:
    from ...ir.node_structural import node_equal

    return a.dtype == b.dtype and node_equal(a.shape, b.shape)


class _Rest:
    """A statement that took the rest of its block as its body."""

    __slots__ = ("stmt",)

    def __init__(self, stmt) -> None:
        self.stmt = stmt


def _access_regions(body, init, allocs) -> tuple[list, list]:
    """TVM's read/write region detection for a block without `T.reads`/`T.writes`:
    every buffer touched, in order of first access, as the point each access names;
    a buffer accessed at several different points gets its whole extent. With an init
    statement the written buffers are not reads (the reduction's update)."""
    from ...ir.node_structural import node_equal

    loads: dict[int, list] = {}
    stores: dict[int, list] = {}
    order_l: list = []
    order_s: list = []
    local = {id(b) for b in allocs}

    def visit(x):
        if isinstance(x, tir.SBlockRealize):
            for r in x.block.reads:
                note(loads, order_l, r.buffer, None)
            for w in x.block.writes:
                note(stores, order_s, w.buffer, None)
            return
        if isinstance(x, tir.BufferLoad):
            note(loads, order_l, x.buffer, x.indices)
        elif isinstance(x, tir.BufferStore):
            note(stores, order_s, x.buffer, x.indices)
        if isinstance(x, tir.Node):
            for f in type(x).fields:
                visit(getattr(x, f))
        elif isinstance(x, tuple):
            for v in x:
                visit(v)

    def note(table, order, buf, indices):
        if id(buf) in local:
            return
        if id(buf) not in table:
            table[id(buf)] = []
            order.append(buf)
        if indices is None or not any(node_equal(indices, seen) for seen in table[id(buf)] if seen is not None):
            table[id(buf)].append(indices)

    for stmt in (init, body):
        if stmt is not None:
            visit(stmt)

    def region(buf, accesses):
        if len(accesses) == 1 and accesses[0] is not None:
            return tir.BufferRegion(buf, [tir.Range(i, tir.const(1, i.dtype)) for i in accesses[0]])
        return tir.BufferRegion(buf, [tir.Range(tir.const(0, d.dtype), d) for d in buf.shape])

    written = {id(b) for b in order_s}
    reads = [region(b, loads[id(b)]) for b in order_l if not (init is not None and id(b) in written)]
    writes = [region(b, stores[id(b)]) for b in order_s]
    return reads, writes


def _build_prim_func(mb, funcdef, options) -> tir.PrimFunc:
    return _TirBuilder(mb).build_func(funcdef, options)


def printed_domains(mod):
    """`mod` (a module read back from its printout) with each sblock iteration domain given
    the extent its printout showed. A domain `(v, v + e)` with a non-constant `e` is read, by
    TVM's parser as by ours, as extent `v + e - v`: neither TVM's printout nor ours of such a
    module parses back to the module printed. Round-trip checks compare through this."""
    from ...ir.module import IRModule
    from ...ir.node_structural import node_equal
    from ...ir.tir_visitor import StmtExprMutator

    class _Undo(StmtExprMutator):
        def mutate_IterVar(self, old, new):
            dom = new.dom
            end = dom.extent.a if dom is not None and isinstance(dom.extent, tir.BinOp) and \
                dom.extent.op == "sub" else None
            if isinstance(end, tir.BinOp) and end.op == "add" and node_equal(end.a, dom.min) and \
                    node_equal(dom.extent.b, dom.min):
                return new.replace(dom=tir.Range(dom.min, end.b))
            return new

    functions = {}
    for name, fn in mod.functions.items():
        if isinstance(fn, tir.PrimFunc):
            body = _Undo().mutate(fn.body)
            fn = fn if body is fn.body else fn.replace(body=body)
        functions[name] = fn
    if all(functions[name] is fn for name, fn in mod.functions.items()):
        return mod
    out = IRModule(functions, dict(mod._global_vars))
    out.bare = mod.bare
    return out
