"""`T.index_map(lambda i, j: (i // 4, j, i % 4))` in Relax (R.layout_transform's attribute):
the lambda is evaluated at once, as TVM's `IndexMap.from_func` calls it, its parameters int64
`tir.Var`s (TVM's Python API's index dtype), its body a tuple (or one) TIR expression."""

from __future__ import annotations

from ...ir import tir
from .evaluate import NotPrimError
from .tir_expr import _as_prim


def e_lambdef(builder, node) -> tir.IndexMap:
    """A `lambda` is an index map: TVMScript writes one nowhere else."""
    names = [str(t) for t in node.children[:-1] if t is not None]
    if len(set(names)) != len(names):
        builder.error("duplicate parameter names in a lambda", node)
    params = [tir.Var(n, "int64", span=builder.span(node)) for n in names]
    builder.scopes.append(dict(zip(names, params, strict=True)))
    try:
        body = builder.eval(node.children[-1])
    finally:
        builder.scopes.pop()
    items = body if isinstance(body, (tuple, list)) else (body,)
    try:
        final = [_as_prim(v, "int64") for v in items]
    except NotPrimError as err:
        builder.error(f"an index map gives TIR expressions: {err}", node.children[-1])
    for e in final:
        if not e.dtype.startswith(("int", "uint")):
            builder.error(f"an index map gives integer indices, got a {e.dtype} expression", node.children[-1])
    return tir.IndexMap(params, final, span=builder.span(node))


def t_index_map(builder, node, pos, kw) -> tir.IndexMap:
    """`T.index_map(mapping, *, inverse_index_map=None, index_dtype="int64")`."""
    if len(pos) != 1 or set(kw) - {"index_dtype", "inverse_index_map"}:
        builder.error("`T.index_map` takes one lambda", node)
    if kw.get("index_dtype", "int64") != "int64" or kw.get("inverse_index_map") is not None:
        builder.error("`T.index_map`: only int64 indices without an inverse map are supported", node)
    if not isinstance(pos[0], tir.IndexMap):
        builder.error("`T.index_map` takes a lambda", node)
    return pos[0]
