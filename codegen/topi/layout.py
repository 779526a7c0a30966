"""R.layout_transform as TVM 0.27's LegalizeOps builds it (python/tvm/relax/transform/
legalize_ops/manipulate.py): a passthrough `te.compute` over the input's shape named
`te_layout_transform`, whose output buffer the schedule primitive `transform_layout` then
rewrites with the index map. Two results, after whether the map pads (its inverse's padding
predicate is not a constant):

  no padding  (permutations, fuses, splits the factor divides)  `te_layout_transform`:
      the loops over the input (`self, i0, i1 ...`: te.compute's names for the axes of
      `Tensor.__call__(self, *indices)`), the store `out[map(v_self, v_i0 ...)] = x[v_self, ...]`;
  padding     (a split the factor does not divide; always for a symbolic size)
      `te_layout_transform_with_pad`: the loops over the output, named after the inverse map
      (an index passed through keeps its lambda name, the others are `axis<k>`), the store
      `out[v...] = T.if_then_else(pad, pad_value, x[inverse(v...)])` where `pad` is TVM's
      simplified predicate: per padded split `v_outer == N // c and N % c <= v_inner` (`v_inner
      == c - 1` when only the last is padding, no outer test when the outer extent is 1;
      `n % -c < 0 and ...` for a symbolic n), joined by `or`; pad_value 0 when it is None.

A map other than irtool/ops/relax_index.py's forms gets the first form where it is one to one
onto its output over a static shape (checked point by point); otherwise it stays a Relax call.
"""

from __future__ import annotations

from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ops.relax_index import index_map_forms, is_bijection, map_shape, padded_splits

from .. import te
from .. import tir_build as tb
from ..call_te import gen_call_tir_inputs, make_call_tir
from ..simplify import simplify
from . import register_legalize


def _i64(v):
    return tir.IntImm(v, "int64") if isinstance(v, int) else v


def _split_padding(n, c: int, outer: tir.PrimExpr, inner: tir.PrimExpr) -> tir.PrimExpr:
    """TVM's simplified padding predicate of one split of extent n by c."""
    if isinstance(n, int):
        q, r = divmod(n, c)
        tail = tir.BinOp("eq", inner, _i64(c - 1)) if r == c - 1 else tir.BinOp("le", _i64(r), inner)
        return tail if q == 0 else tir.BinOp("and", tir.BinOp("eq", outer, _i64(q)), tail)
    some = tir.BinOp("lt", tir.BinOp("floormod", n, _i64(-c)), _i64(0))
    last = tir.BinOp("eq", outer, tir.BinOp("floordiv", n, _i64(c)))
    return tir.BinOp("and", tir.BinOp("and", some, last), tir.BinOp("le", tir.BinOp("floormod", n, _i64(c)), inner))


def _padded(data: te.Tensor, m: tir.IndexMap, forms: list, pad_value, name: str) -> te.Tensor:
    dims = [d.value if isinstance(d, tir.IntImm) else d for d in data.shape]
    out_shape = [_i64(d) for d in map_shape(forms, dims)]
    names = [m.initial_indices[f[1]].name if f[0] == "var" else f"axis{k}" for k, f in enumerate(forms)]
    splits = padded_splits(forms, dims)
    if pad_value is None:
        pad = tb.const(0 if data.dtype.startswith(("int", "uint")) else 0.0, data.dtype)
    else:
        pad = tb.const(pad_value.value, pad_value.dtype)

    def element(*ax):
        source = [None] * len(dims)
        for k, f in enumerate(forms):
            if f[0] == "var":
                source[f[1]] = ax[k]
            elif f[0] == "div":
                inner = next(i for i, g in enumerate(forms) if g[0] == "mod" and g[1] == f[1])
                source[f[1]] = tb.add(tb.mul(ax[k], _i64(f[2])), ax[inner])
            elif f[0] == "fuse":
                source[f[1]], source[f[3]] = tb.floordiv(ax[k], _i64(f[2])), tb.floormod(ax[k], _i64(f[2]))
        predicate = None
        for outer, inner, c in splits:
            clause = _split_padding(dims[forms[outer][1]], c, ax[outer], ax[inner])
            predicate = clause if predicate is None else tir.BinOp("or", predicate, clause)
        return tir.Call(data.dtype, "tirx.if_then_else", [predicate, pad, data(*source)])

    return te.compute(out_shape, element, name=name, varargs_names=names)


def _store_through(stmt, out: tir.Buffer, new: tir.Buffer, m: tir.IndexMap):
    """The passthrough's sblock writing `new[map(indices)]` instead of `out[indices]`."""
    if isinstance(stmt, tir.SBlockRealize):
        return stmt.replace(block=_store_through(stmt.block, out, new, m))
    if isinstance(stmt, tir.For):
        return stmt.replace(body=_store_through(stmt.body, out, new, m))
    if isinstance(stmt, tir.SBlock):
        body = stmt.body
        if isinstance(body, tir.BufferStore) and body.buffer is out:
            extents = {id(v): iv.dom.extent for v, iv in zip(m.initial_indices, stmt.iter_vars, strict=True)}
            plain = {id(v): i for v, i in zip(m.initial_indices, body.indices, strict=True)}
            vmap = {id(v): tir.IntImm(0, i.dtype) if _const_extent(extents[id(v)]) == 1 else i
                    for v, i in zip(m.initial_indices, body.indices, strict=True)}
            indices = [plain[id(e)] if isinstance(e, tir.Var)
                       else simplify(_substitute(_within_extent(e, extents), vmap)) for e in m.final_indices]
            writes = (tir.BufferRegion(new, [tir.Range(i, tb.const(1, i.dtype)) for i in indices]),)
            return stmt.replace(body=tir.BufferStore(new, body.value, indices), writes=writes)
        return stmt.replace(body=_store_through(body, out, new, m))
    return stmt


def _const_extent(e) -> int | None:
    return e.value if isinstance(e, tir.IntImm) else None


def _within_extent(e, extents: dict):
    """TVM's simplifier knows the block variables' ranges: `i // c` is 0 and `i % c` is i where
    i's extent is at most c (and a variable of extent 1 is 0 inside a compound index)."""
    if isinstance(e, tir.BinOp) and e.op in ("floordiv", "floormod") and isinstance(e.a, tir.Var):
        n = extents.get(id(e.a))
        if isinstance(n, tir.IntImm) and isinstance(e.b, tir.IntImm) and n.value <= e.b.value:
            return tir.IntImm(0, e.dtype) if e.op == "floordiv" else e.a
    if isinstance(e, tir.BinOp) and e.op in ("add", "mul"):  # inside a fuse (`i % 3 * 4 + i // 3`)
        a, b = _within_extent(e.a, extents), _within_extent(e.b, extents)
        if e.op == "add" and _refused(a, b):
            return a.a.a  # `i // c * c + i % c` is i
        return tir.BinOp(e.op, a, b)
    return e


def _refused(a, b) -> bool:
    """`i // c * c` and `i % c`: a split fused back."""
    return isinstance(a, tir.BinOp) and a.op == "mul" and isinstance(a.a, tir.BinOp) and a.a.op == "floordiv" \
        and isinstance(b, tir.BinOp) and b.op == "floormod" and a.a.a is b.a \
        and _const_extent(a.b) is not None and _const_extent(a.b) == _const_extent(a.a.b) == _const_extent(b.b)


def _substitute(e, vmap: dict):
    if isinstance(e, tir.Var):
        return vmap.get(id(e), e)
    if isinstance(e, tir.BinOp):
        return tir.BinOp(e.op, _substitute(e.a, vmap), _substitute(e.b, vmap))
    return e


@register_legalize("relax.layout_transform")
def _layout_transform(bb, call):
    x = call.args[0]
    sinfo = x.struct_info
    m, pad_value = call.attrs["index_map"], call.attrs["pad_value"]
    forms = index_map_forms(m)
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple) \
            or not isinstance(call.struct_info.shape, tuple):
        return call
    if forms is None or map_shape(forms, list(sinfo.shape)) is None:
        # another map: TVM's passthrough where the map is a bijection onto the output (no padding)
        if not is_bijection(m, sinfo.shape, call.struct_info.shape):
            return call
        forms = None
    elif padded_splits(forms, list(sinfo.shape)):
        name = "te_layout_transform_with_pad"
        func, call_args, out_sinfo, _ = gen_call_tir_inputs(
            lambda data: _padded(data, m, forms, pad_value, name), x)
        return make_call_tir(bb.add_function(func, name), call_args, out_sinfo)
    name = "te_layout_transform"
    shapes = []

    def passthrough(data):
        dims = [d.value if isinstance(d, tir.IntImm) else d for d in data.shape]
        shapes.append(map_shape(forms, dims) if forms is not None else call.struct_info.shape)
        return te.compute(data.shape, lambda self, *indices: data(self, *indices), name=name)

    func, call_args, _, _ = gen_call_tir_inputs(passthrough, x)
    handle = func.params[-1]
    out = func.buffer_of(handle)
    new = tir.Buffer(out.name, [_i64(d) for d in shapes[0]], out.dtype)
    func = func.replace(body=_store_through(func.body, out, new, m),
                        buffer_map=tuple((p, new if b is out else b) for p, b in func.buffer_map))
    return make_call_tir(bb.add_function(func, name), call_args, call.struct_info)
