"""The IR core: Relay expressions and types, the module, structural equality, visitors."""

from .expr import (Attrs, Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem,
                   TypedScalar, Var)
from .module import IRModule
from .structural import structural_equal, structural_hash
from .types import ANY, FuncType, IncompleteType, TensorType, TupleType, Type, type_equal
from .visitor import ExprMutator, ExprVisitor, post_order, sub_exprs

__all__ = [
    "ANY", "Attrs", "Call", "Constant", "Expr", "ExprMutator", "ExprVisitor", "FuncType", "Function",
    "GlobalVar", "IRModule", "If", "IncompleteType", "Let", "Op", "TensorType", "Tuple", "TupleGetItem",
    "TupleType", "Type", "TypedScalar", "Var", "post_order", "structural_equal", "structural_hash",
    "sub_exprs", "type_equal",
]
