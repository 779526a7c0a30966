"""TOPI-like compute definitions and the legalization table of `legalize-ops`.

`LEGALIZE` maps a Relax operator name to its legalization: a function
`(bb: BlockBuilder, call: relax.Call) -> relax.Expr` that usually returns
`bb.call_te(compute_fn, *args, primfunc_name_hint=...)` (`irtool.codegen.call_te`), as TVM's
`register_legalize` functions (python/tvm/relax/transform/legalize_ops/*.py) do. Ops absent
from the table are left as they are, as TVM leaves ops without FLegalize.

One module per family, each a table where the family allows:
    elemwise   unary math, cast, clip           (`compute` blocks, axes i0, i1, ...)
    broadcast  binary broadcast ops             (`T_add` blocks, axes ax0, ax1, ...)
    nn         relu, pad, conv                  (`pad_temp`, `conv2d_nchw`)
    linalg     matmul                           (`matmul`, reduce axis k)
    indexing   flip, gather_nd, einsum          (`T_reverse_sequence`, `T_gather_nd`, `T_einsum`)
    scatter    scatter_elements, scatter_nd     (te.extern: one opaque `*_generic` sblock)
    vision     roi_align, roi_pool, multibox_transform_loc  (`compute`; a data-dependent sample grid nests)
    nms        all_class_non_max_suppression    (computes and te.extern IR-builder programs)
    nms_classic  get_valid_counts, non_max_suppression  (te.extern IR-builder programs)
    dynamic    dynamic_strided_slice            (a shape function, R.match_cast of its sizes)
    layout     layout_transform                 (a passthrough with the mapped store, or the inverse map's loops)
    advanced_index  index_tensor, reverse_sequence, slice_scatter, index_put
    qdq        quantize, dequantize             (`quantized` / `dequantized` computes)

Adding an op:
  - a family member: one table line (e.g. in `elemwise.UNARY`: Relax name, PrimFunc name,
    the element function `lambda x: tb.call("exp", x)`);
  - anything else: a compute function built with `irtool.codegen.te` (`te.compute`,
    `te.reduce_axis`, `te.sum`) and `irtool.codegen.tir_build` (TVM's folding operator
    functions), named and shaped as TVM's TOPI function is (block names, axis names and
    operand order show in the printed PrimFunc), and its registration:

        @register_legalize("relax.nn.softmax")
        def _softmax(bb, call):
            return bb.call_te(softmax_compute, call.args[0], call.attrs["axis"])

Each op needs a test that its PrimFunc, run by the TIR interpreter, equals the Relax op's
NumPy reference, and a tvm-marked one comparing the legalized module with TVM's
(tests/test_legalize_ops.py has both as tables).
"""

from __future__ import annotations

from collections.abc import Callable

LegalizeFunc = Callable  # (BlockBuilder, relax.Call) -> relax.Expr

LEGALIZE: dict[str, LegalizeFunc] = {}


def register_legalize(op_name: str, func: LegalizeFunc | None = None):
    """Register `func` as the legalization of the Relax operator `op_name` (also a decorator)."""
    def add(f: LegalizeFunc) -> LegalizeFunc:
        if op_name in LEGALIZE:
            raise ValueError(f"{op_name} already has a legalization")
        LEGALIZE[op_name] = f
        return f

    return add(func) if func is not None else add


def legalization(op_name: str) -> LegalizeFunc | None:
    """The legalization of `op_name`, or None; loads the family modules on first use."""
    _load()
    return LEGALIZE.get(op_name)


_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import (  # noqa: F401  (they register their ops)
            activation,
            advanced_index,
            attention,
            broadcast,
            conv_transpose,
            create_shape,
            creation,
            dynamic,
            elemwise,
            image,
            indexing,
            layout,
            linalg,
            nms,
            nms_classic,
            nn,
            norm,
            norms_losses,
            pool,
            qdq,
            reduce,
            scatter,
            transform,
            vision,
        )


__all__ = ["LEGALIZE", "LegalizeFunc", "legalization", "register_legalize"]
