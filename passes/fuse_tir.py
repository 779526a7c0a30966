"""fuse-tir: merge each fused Relax function into one PrimFunc (TVM 0.27's relax.transform.FuseTIR).

After fuse-ops, a group is a private `Primitive` Relax function whose dataflow block
calls PrimFuncs:

    fused_conv2d_add(x, w, b):                 fused_conv2d_add(x, w, b, T_add_intermediate):
      lv = call_tir(conv2d, (x, w))       ==>    conv2d_nchw_intermediate = alloc_buffer(...)
      gv = call_tir(add, (lv, b))                <conv2d's blocks, writing conv2d_nchw_intermediate>
      return gv                                  <add's blocks, reading it, writing T_add_intermediate>

and a caller's `fused_conv2d_add(x, w, b)` becomes `R.call_tir(fused_conv2d_add, (x, w, b))`.
TVM's pass is a Sequential: ExpandTupleArguments (+ CanonicalizeBindings, DCE),
RemoveUnusedParameters, the fusion itself, DeadCodeElimination (which drops the PrimFuncs
no longer called). The fusion of one function (FusedTIRConstructor):

  1. Parameters: a Tensor parameter becomes a buffer of its name and shape (scope from
     the PrimFunc parameter it feeds); an R.Prim / R.Shape parameter its TIR variables.
  2. Each binding in order: a call_tir takes a fresh copy of its PrimFunc (RenewDefs),
     appends its root block's body and alloc_buffers, maps each argument buffer onto the
     buffer of the Relax value passed, and allocates one intermediate buffer per output,
     named `<output buffer>_intermediate` (`_1`, `_1_2`, ... while the name is taken among
     the buffers collected so far), shaped as the call's out_ty. PrimFunc shape variables
     are matched against the shapes they meet (SymbolicMatcher). Tuples and projections
     pass buffers through; the function's name grows `fused_<callee>_<callee>...`.
  3. The buffers of the returned value become output parameters, unless one is an input
     buffer (then the call is in-place: call_tir_inplace with its index).
  4. The body: sblock names made unique in post order (`T_add`, `T_add1`), buffers and
     variables substituted, duplicate read/write regions of one buffer merged, all under
     a new root sblock allocating the intermediates; attrs `tirx.noalias`, s_tir; then
     RenewDefs once more.
Every Relax caller's call of a fused function becomes call_tir (or call_tir_inplace) of the
new PrimFunc, which keeps the fused function's name; R.Shape arguments pass their values.
"""

from __future__ import annotations

from dataclasses import dataclass

from irtool.analysis.tir_rename import renew_defs, unique_sblock_names, with_dom_rebuilt
from irtool.diagnostics import DiagnosticError
from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import GlobalVar, Op
from irtool.ir.module import IRModule
from irtool.ir.relax_visitor import ExprMutator
from irtool.ir.tir_visitor import Substitutor
from irtool.transform import ModulePass, register

CALL_TIR, CALL_TIR_INPLACE = "relax.call_tir", "relax.call_tir_inplace"


class FuseTIRError(DiagnosticError):
    pass


def _fail(message: str, node=None):
    raise FuseTIRError(f"fuse-tir: {message}", getattr(node, "span", None))


def to_tir_dim(d) -> tir.PrimExpr:
    """A Relax shape dimension as a TIR expression (integers are int64 constants)."""
    return tir.IntImm(d, "int64") if isinstance(d, int) else d


def _tensor_shape(sinfo, what: str, node) -> tuple:
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple):
        unknown = " (its shape is unknown: constants read without the module's metadata section have none)" \
            if isinstance(sinfo, rx.TensorStructInfo) else ""
        _fail(f"{what} must be a tensor of known shape{unknown}", node)
    return tuple(to_tir_dim(d) for d in sinfo.shape)


def _tensor_count(sinfo) -> int:
    if isinstance(sinfo, rx.TensorStructInfo):
        return 1
    if isinstance(sinfo, rx.TupleStructInfo):
        return sum(_tensor_count(f) for f in sinfo.fields_)
    _fail("expected tensors or tuples of tensors in a fused function")


def _call_tir_parts(call: rx.Call):
    """(callee, argument expressions, inplace output indices or None) of a call_tir."""
    if not (isinstance(call.op, Op) and call.op.name in (CALL_TIR, CALL_TIR_INPLACE)):
        _fail("a primitive function may only call_tir / call_tir_inplace", call)
    gv, args = call.args[0], call.args[1]
    if len(call.args) > 2:
        _fail("call_tir with tir_vars is not supported in a primitive function", call)
    fields = args.fields_ if isinstance(args, rx.Tuple) else (args,)
    inplace = None
    if call.op.name == CALL_TIR_INPLACE:
        indices = call.attrs.get("inplace_indices", ()) if isinstance(call.attrs, dict) else ()
        inplace, last = [], len(fields)
        for i in indices:  # TVM's GetInplaceOutputIndices: -1 is a fresh output
            inplace.append(i if i >= 0 else last)
            last += i < 0
    return gv, fields, inplace


def _prim_of(arg) -> tir.PrimExpr | None:
    """The TIR scalar a Relax argument stands for (a PrimValue, or an R.Prim with a value)."""
    if isinstance(arg, rx.PrimValue):
        return arg.value
    sinfo = getattr(arg, "struct_info", None)
    if isinstance(sinfo, rx.PrimStructInfo) and isinstance(sinfo.value, tir.PrimExpr):
        return sinfo.value
    return None


# ----------------------------------------------------------------------------- symbolic matching


class _SymbolicMatcher:
    """TVM's SymbolicMatcher: binds the PrimFunc's shape variables to the expressions
    they meet; structure that differs is left to be proven (not checked here)."""

    def __init__(self) -> None:
        self.var_remap: dict[tir.Var, tir.PrimExpr] = {}

    def match(self, param, arg) -> None:
        if param is arg:
            return
        if _dtype_code(param.dtype) != _dtype_code(arg.dtype):
            _fail(f"parameter expression of dtype {param.dtype} cannot match an argument of dtype {arg.dtype}")
        if isinstance(param, tir.Var):
            bound = self.var_remap.get(param)
            if bound is None:
                self.var_remap[param] = arg
            else:
                self.match(bound, arg)
        elif isinstance(param, tir.IntImm):
            if not isinstance(arg, tir.IntImm) or arg.value != param.value:
                _fail(f"a PrimFunc expects the integer {param.value} where it is given {_show(arg)}")
        elif isinstance(param, tir.FloatImm):
            if not isinstance(arg, tir.FloatImm) or arg.value != param.value:
                _fail(f"a PrimFunc expects the float {param.value} where it is given {_show(arg)}")
        elif isinstance(param, tir.Cast):
            if not isinstance(arg, tir.Cast):
                _fail(f"a PrimFunc expects a cast to {param.dtype} where it is given {_show(arg)}")
            self.match(param.value, arg.value)
        elif isinstance(param, tir.BinOp) and isinstance(arg, tir.BinOp) and arg.op == param.op:
            self.match(param.a, arg.a)
            self.match(param.b, arg.b)
        elif isinstance(param, tir.Select) and isinstance(arg, tir.Select):
            self.match(param.true_value, arg.true_value)
            self.match(param.false_value, arg.false_value)

    def match_all(self, params, args) -> None:
        if len(params) != len(args):
            _fail(f"a buffer of rank {len(params)} is given a value of rank {len(args)}")
        for p, a in zip(params, args):
            self.match(p, a)


def _dtype_code(dtype: str) -> str:
    return dtype.rstrip("0123456789x")


def _show(e) -> str:
    if isinstance(e, tir.IntImm):
        return str(e.value)
    return getattr(e, "name", type(e).__name__)


# ----------------------------------------------------------------------------- one fused function


class _FusedTIRConstructor:
    def __init__(self, mod: IRModule, fn: rx.Function) -> None:
        self.mod = mod
        self.fn = fn
        self.expr2buffers: dict = {}
        self.scalar_params: dict = {}  # R.Prim parameter -> the TIR variable it becomes
        self.alloc_buffers: list[tir.Buffer] = []
        self.bodies: list[tir.Stmt] = []
        self.params: list[tir.Var] = []
        self.buffer_map: dict[tir.Var, tir.Buffer] = {}
        self.buffer_subst: dict[tir.Buffer, tir.Buffer] = {}
        self.output_buffers: set[tir.Buffer] = set()
        self.matcher = _SymbolicMatcher()
        self.global_name = "fused"
        self.inplace_indices: list[int] = []

    # ------------------------------------------------------------------- parameters
    def _param_scopes(self) -> dict:
        """RelaxToTIRVarMapCollector: the PrimFunc buffer each Relax value meets last
        (only its storage scope is used)."""
        out: dict = {}
        for block in self.fn.body.blocks:
            for b in block.bindings:
                if not isinstance(b, rx.VarBinding) or not isinstance(b.value, rx.Call):
                    continue
                gv, args, inplace = _call_tir_parts(b.value)
                prim = self._prim_func(gv, b.value)
                outputs = inplace if inplace is not None else \
                    list(range(len(args), len(args) + 1))
                for i, param in enumerate(prim.params):
                    buf = prim.buffer_of(param)
                    if buf is None:
                        continue
                    if i < len(args):
                        out[args[i]] = buf
                    if i in outputs and outputs.index(i) == 0:
                        out[b.var] = buf
        return out

    def _prim_func(self, gv, call) -> tir.PrimFunc:
        fn = self.mod.functions.get(gv.name_hint) if isinstance(gv, GlobalVar) else None
        if not isinstance(fn, tir.PrimFunc):
            _fail(f"call_tir of `{getattr(gv, 'name_hint', gv)}`, which is not a PrimFunc of the module", call)
        return fn

    def _collect_params(self) -> list:
        scopes = self._param_scopes()
        out: list = []
        for p in self.fn.params:
            sinfo = p.struct_info
            if isinstance(sinfo, rx.TupleStructInfo):
                _fail(f"parameter `{p.name_hint}` is a tuple: tuple parameters should have been expanded", p)
            if isinstance(sinfo, rx.TensorStructInfo):
                shape = _tensor_shape(sinfo, f"parameter `{p.name_hint}`", p)
                if not sinfo.dtype:
                    _fail(f"parameter `{p.name_hint}` has no dtype", p)
                known = scopes.get(p)
                buf = tir.Buffer(p.name_hint, shape, sinfo.dtype, scope=known.scope if known else "global")
                self.expr2buffers[p] = [buf]
                out.append(buf)
            elif isinstance(sinfo, rx.PrimStructInfo):
                value = sinfo.value
                scalar = value if isinstance(value, tir.Var) else tir.Var(p.name_hint, sinfo.dtype)
                self.scalar_params[p] = scalar  # `n: T.int64`, which FuseOps gives a size argument
                out.append(scalar)
                self.expr2buffers[p] = []
            elif isinstance(sinfo, rx.ShapeStructInfo) and sinfo.values is not None:
                for v in sinfo.values:
                    if not isinstance(v, tir.Var):
                        _fail(f"shape parameter `{p.name_hint}` must list TIR variables", p)
                    out.append(v)
                self.expr2buffers[p] = []
            else:
                _fail(f"parameter `{p.name_hint}`: a PrimFunc parameter must be a tensor, a scalar or a shape", p)
        return out

    # ------------------------------------------------------------------- bindings
    def run(self) -> tuple[tir.PrimFunc, list[int]]:
        for item in self._collect_params():
            if isinstance(item, tir.Buffer):
                handle = tir.Var(f"p_{item.name}", "handle")
                self.params.append(handle)
                self.buffer_map[handle] = item
            else:
                self.params.append(item)
        body = self.fn.body
        for block in body.blocks:
            for b in block.bindings:
                if isinstance(b, rx.MatchCast):
                    _fail("match_cast is not supported in a primitive function", b)
                self._visit(b.value)
                buffers = self.expr2buffers.get(b.value)
                if buffers is None:
                    _fail(f"unsupported binding of `{b.var.name_hint}` in a primitive function", b)
                self.expr2buffers[b.var] = buffers
        self._visit(body.body)
        outputs = self.expr2buffers.get(body.body)
        if outputs is None:
            _fail("cannot find the output buffers of the function body", body.body)
        input_index = {buf: i for i, h in enumerate(self.params) if (buf := self.buffer_map.get(h)) is not None}
        out_idx = 0
        for buf in outputs:
            if buf in input_index:  # an in-place output: the input buffer itself
                idx = input_index[buf]
                if idx in self.inplace_indices:
                    _fail(f"in-place index {idx} used twice")
                self.inplace_indices.append(idx)
                continue
            handle = tir.Var(f"p_output{out_idx}", "handle")
            out_idx += 1
            self.params.append(handle)
            self.buffer_map[handle] = buf
            self.output_buffers.add(buf)
        return self._construct(), sorted(self.inplace_indices)

    def _visit(self, e) -> None:
        if isinstance(e, rx.Call):
            self._visit_call(e)
        elif isinstance(e, rx.Tuple):
            buffers = []
            for f in e.fields_:
                self._visit(f)
                buffers.extend(self.expr2buffers.get(f, ()))
            if buffers:
                self.expr2buffers[e] = buffers
        elif isinstance(e, rx.TupleGetItem):
            self._visit(e.tuple_value)
            buffers = self.expr2buffers.get(e.tuple_value)
            sinfo = e.tuple_value.struct_info
            if buffers is not None and isinstance(sinfo, rx.TupleStructInfo):
                begin = sum(_tensor_count(f) for f in sinfo.fields_[:e.index])
                self.expr2buffers[e] = buffers[begin:begin + _tensor_count(sinfo.fields_[e.index])]
        elif isinstance(e, rx.Constant):
            _fail("a constant is not supported in a primitive function", e)

    def _visit_call(self, call: rx.Call) -> None:
        gv, args, inplace = _call_tir_parts(call)
        prim = renew_defs(self._prim_func(gv, call))
        root = prim.body
        if not isinstance(root, tir.SBlockRealize):
            _fail(f"`{gv.name_hint}` is not schedulable (its body is not a root sblock)", call)
        self.alloc_buffers.extend(root.block.alloc_buffers)
        self.bodies.append(root.block.body)
        # MapInputBuffer: buffer parameters take the buffers of the values passed
        if len(prim.params) < len(args):
            _fail(f"`{gv.name_hint}` takes {len(prim.params)} parameters, given {len(args)}", call)
        arg_list, buffer_list = [], []
        for arg, param in zip(args, prim.params):
            buf = prim.buffer_of(param)
            if buf is not None:
                arg_list.append(arg)
                buffer_list.append(buf)
            else:
                value = _prim_of(arg)
                if value is None:
                    value = self.scalar_params.get(arg)
                if value is None:
                    _fail(f"scalar parameter `{param.name}` of `{gv.name_hint}` needs a TIR scalar argument", call)
                self.matcher.match(param, value)
        self._map_args_to_buffers(arg_list, buffer_list, call)
        self._allocate_outputs(call, prim, args, inplace)
        self.global_name += "_" + gv.name_hint

    def _map_args_to_buffers(self, args, buffers, call) -> None:
        """MapArgsToBuffer: each Relax value's buffers, in order, replace the next buffer
        parameters (a tuple value fills several)."""
        idx = 0
        for arg in args:
            for target in self.expr2buffers.get(arg, ()) if isinstance(arg, rx.Var) else ():
                if idx >= len(buffers):
                    _fail("more buffers passed than the PrimFunc takes", call)
                self.matcher.match_all(buffers[idx].shape, target.shape)
                self.buffer_subst[buffers[idx]] = target
                idx += 1
        if idx != len(buffers):
            _fail("a call_tir argument in a primitive function must be a parameter or an earlier result", call)

    def _allocate_outputs(self, call, prim, args, inplace) -> None:
        out_sinfo = call.sinfo_args[0] if call.sinfo_args else call.struct_info
        sinfos = out_sinfo.fields_ if isinstance(out_sinfo, rx.TupleStructInfo) else (out_sinfo,)
        shapes = [_tensor_shape(s, "a call_tir output", call) for s in sinfos]
        indices = inplace if inplace is not None else list(range(len(args), len(args) + len(shapes)))
        outputs = []
        for i, shape in enumerate(shapes):
            idx = indices[i]
            buf = prim.buffer_of(prim.params[idx]) if idx < len(prim.params) else None
            if buf is None:
                _fail(f"output {i} of `{call.args[0].name_hint}` is not a buffer parameter", call)
            if idx < len(args):  # in-place: the output is the input's buffer
                outputs.append(self.buffer_subst[buf])
                continue
            new = tir.Buffer(self._intermediate_name(buf.name), shape, buf.dtype, strides=buf.strides,
                             elem_offset=buf.elem_offset, scope=buf.scope, align=buf.align,
                             offset_factor=buf.offset_factor, buffer_type=buf.buffer_type,
                             axis_separators=buf.axis_separators)
            self.alloc_buffers.append(new)
            outputs.append(new)
            self.matcher.match_all(buf.shape, new.shape)
            self.buffer_subst[buf] = new
        self.expr2buffers[call] = outputs

    def _intermediate_name(self, base: str) -> str:
        names = {b.name for b in self.alloc_buffers}
        name, uid = base + "_intermediate", 0
        while name in names:  # TVM appends to the taken name: _1, then _1_2, ...
            uid += 1
            name = f"{name}_{uid}"
        return name

    # ------------------------------------------------------------------- the PrimFunc
    def _construct(self) -> tir.PrimFunc:
        subst = _FuseSubstitutor(self.matcher.var_remap, self.buffer_subst)
        allocs = [subst.mutate(b) for b in self.alloc_buffers if b not in self.output_buffers]
        body = subst.mutate(unique_sblock_names(tir.seq(self.bodies)))
        root = tir.SBlock("root", (), (), (), body, alloc_buffers=allocs)
        realize = tir.SBlockRealize((), tir.IntImm(1, "bool"), root)
        buffer_map = [(h, subst.mutate(self.buffer_map[h])) for h in self.params if h in self.buffer_map]
        func = tir.PrimFunc(self.params, realize, None, buffer_map,
                            attrs=(("s_tir", True), ("tirx.noalias", True)), private=True)
        return renew_defs(func)


class _FuseSubstitutor(Substitutor):
    """FuseTIRBufferSubstitutor: buffers and variables replaced, and an sblock's reads
    (writes) of one buffer merged into the first (UnionAccessRegion). An sblock iteration
    domain whose bounds change is rebuilt as TVM's StmtMutator rebuilds it (its extent
    taken for an end, see irtool.analysis.tir_rename)."""

    def mutate_IterVar(self, old: tir.IterVar, new: tir.IterVar) -> tir.IterVar:
        return new if new.dom is old.dom else with_dom_rebuilt(new)

    def mutate_SBlock(self, old: tir.SBlock, new: tir.SBlock) -> tir.SBlock:
        reads, writes = _union_regions(new.reads), _union_regions(new.writes)
        if reads is new.reads and writes is new.writes:
            return new
        return new.replace(reads=reads, writes=writes)


def _union_regions(regions: tuple) -> tuple:
    seen, out = set(), []
    for r in regions:
        if r.buffer not in seen:
            seen.add(r.buffer)
            out.append(r)
    return regions if len(out) == len(regions) else tuple(out)


def fuse_primitive(mod: IRModule, fn: rx.Function) -> tuple[tir.PrimFunc, list[int]]:
    """The PrimFunc fusing one primitive Relax function, and its in-place indices."""
    return _FusedTIRConstructor(mod, fn).run()


# ----------------------------------------------------------------------------- callers


class _CallRewriter(ExprMutator):
    """TIRFuseMutator: calls of fused functions become call_tir of their PrimFunc."""

    def __init__(self, mod: IRModule, replacements: dict) -> None:
        super().__init__(mod)
        self.replacements = replacements

    def visit_call_(self, e: rx.Call):
        call = super().visit_call_(e)
        if not isinstance(call.op, GlobalVar) or call.op.name_hint not in self.replacements:
            return call
        fn, inplace = self.replacements[call.op.name_hint]
        args = []
        for arg, param in zip(call.args, fn.params):
            sinfo = arg.struct_info
            if isinstance(sinfo, rx.TupleStructInfo) or isinstance(param.struct_info, rx.TupleStructInfo):
                _fail(f"tuple argument to `{call.op.name_hint}`: tuple parameters should have been expanded",
                      call)
            if isinstance(sinfo, rx.ShapeStructInfo):
                if sinfo.values is None or not all(isinstance(v, tir.Var) for v in sinfo.values):
                    _fail("fuse-tir expects shape arguments of TIR variables", call)
                args.extend(rx.PrimValue(v) for v in sinfo.values)
            elif isinstance(sinfo, rx.PrimStructInfo):
                value = _prim_of(arg)
                if value is None:
                    _fail("fuse-tir expects scalar arguments to be TIR expressions", call)
                args.append(arg if isinstance(arg, rx.PrimValue) else rx.PrimValue(value))
            else:
                args.append(arg)
        arg_tuple = rx.Tuple(args)
        arg_tuple.struct_info = rx.TupleStructInfo([a.struct_info for a in args])
        out_sinfo = call.struct_info
        if inplace:
            new = rx.Call(Op.get(CALL_TIR_INPLACE), [call.op, arg_tuple], {"inplace_indices": tuple(inplace)},
                          [out_sinfo], e.span)
        else:
            new = rx.Call(Op.get(CALL_TIR), [call.op, arg_tuple], None, [out_sinfo], e.span)
        new.struct_info = out_sinfo
        return new


def fuse_tir_inner(mod: IRModule) -> IRModule:
    """TVM's FuseTIRInner: the fusion without the passes TVM runs around it."""
    primitive = {name: fn for name, fn in mod.functions.items()
                 if isinstance(fn, rx.Function) and fn.is_primitive}
    if not primitive:
        return mod
    functions = dict(mod.functions)
    replacements = {}
    for name, fn in primitive.items():
        prim, inplace = fuse_primitive(mod, fn)
        functions[name] = prim
        replacements[name] = (fn, inplace)
    new_mod = mod.with_functions(functions)
    rewriter = _CallRewriter(new_mod, replacements)
    for name, fn in list(functions.items()):
        if isinstance(fn, rx.Function):
            functions[name] = rewriter.visit_expr(fn)
    out = mod.with_functions(functions)
    out.bare = mod.bare
    return out


@register
@dataclass(frozen=True)
class FuseTIR(ModulePass):
    name = "fuse-tir"
    tvm_name = "FuseTIR"
    opt_level = 0
    summary = "Merge each fused (Primitive) Relax function into one PrimFunc and call it with call_tir"

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        from irtool.passes._fuse_tir_prepare import expand_tuple_arguments, remove_unused_parameters
        from irtool.passes.dead_code_elimination import DeadCodeElimination

        mod = expand_tuple_arguments(mod, ctx)
        mod = remove_unused_parameters(mod)
        mod = fuse_tir_inner(mod)
        return DeadCodeElimination().transform_module(mod, ctx)
