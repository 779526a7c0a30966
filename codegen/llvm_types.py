"""LLVM types for TIR dtypes, and the small helpers the code generators share."""

from __future__ import annotations

import llvmlite.ir as ir

from ..diagnostics import DiagnosticError
from ..ir import tir

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
STACK_LIMIT = 16 * 1024  # bytes: larger (or symbolic) allocations go to the heap

_FLOATS = {"float16": ir.HalfType(), "float32": ir.FloatType(), "float64": ir.DoubleType()}


class CodegenError(DiagnosticError):
    """A construct the native backend cannot lower (points at it when it has a span)."""


def _split(dtype: str) -> tuple[str, int]:
    base, sep, lanes = dtype.partition("x")
    return (base, int(lanes)) if sep and lanes.isdigit() else (dtype, 1)


def scalar_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I1
    if dtype in _FLOATS:
        return _FLOATS[dtype]
    if dtype.startswith("uint") and dtype[4:].isdigit():
        return ir.IntType(int(dtype[4:]))
    if dtype.startswith("int") and dtype[3:].isdigit():
        return ir.IntType(int(dtype[3:]))
    if dtype == "handle":
        return PTR
    raise CodegenError(f"the native backend does not support dtype `{dtype}`")


def llvm_type(dtype: str) -> ir.Type:
    base, lanes = _split(dtype)
    t = scalar_type(base)
    return t if lanes == 1 else ir.VectorType(t, lanes)


def _kind(dtype: str) -> str:
    base, _ = _split(dtype)
    if base == "bool":
        return "bool"
    if base.startswith("float"):
        return "float"
    if base.startswith("uint"):
        return "uint"
    if base == "handle":
        return "handle"
    return "int"


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_." else "_" for c in name) or "v"


def _width(t: ir.Type) -> int:
    return (t.element if isinstance(t, ir.VectorType) else t).width


def _fwidth(t: ir.Type) -> int:
    t = t.element if isinstance(t, ir.VectorType) else t
    return {"half": 16, "float": 32, "double": 64}[str(t)]


def _intrinsic_suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_intrinsic_suffix(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


def _is_one(e) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 1


def _is_zero(e) -> bool:
    return isinstance(e, tir.IntImm) and e.value == 0


def _is_true(e) -> bool:
    return e is None or (isinstance(e, tir.IntImm) and e.value != 0)


def _as_i64(e) -> tir.PrimExpr:
    if isinstance(e, int):
        return tir.IntImm(e, "int64")
    base, lanes = _split(e.dtype)
    if base == "int64":
        return e
    if isinstance(e, tir.IntImm):
        return tir.IntImm(e.value, "int64")
    return tir.Cast("int64" if lanes == 1 else f"int64x{lanes}", e)
