"""TIR expressions in TVMScript: PrimExpr arithmetic with TVM's dtype rules and constant
folding, buffers, and the `T.` call table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lark import Tree

from ...diagnostics import DiagnosticError, SourceFile
from ...ir import tir
from ...ir.types import is_valid_dtype
from .evaluate import NotPrimError, _Builder, _Dotted
from .syntax import _syntax_tree

if TYPE_CHECKING:
    from .parser import _ModuleBuilder


# ----------------------------------------------------------------------------- TIR


_TIR_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
               "float32", "float64", "bfloat16", "handle")

# T.<name>(x, ...) intrinsics that keep the dtype of their first argument
_TIR_MATH = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
             "floor", "ceil", "round", "trunc", "fabs", "nearbyint", "sin", "cos", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "pow", "fmod", "atan2", "hypot", "copysign", "popcount",
             "clz", "likely")
# intrinsics whose result is bool
_TIR_PREDICATES = ("isnan", "isinf", "isfinite", "isnullptr")


def _as_prim(v, dtype: str | None = None) -> tir.PrimExpr:
    if isinstance(v, tir.PrimExpr):
        return v
    if isinstance(v, bool):
        return tir.IntImm(int(v), "bool")
    if isinstance(v, int):
        if dtype is None:
            dtype = "int32" if -(2**31) <= v < 2**31 else "int64"
        return tir.const(v, dtype)
    if isinstance(v, float):
        return tir.const(v, dtype if dtype and dtype.startswith(("float", "bfloat")) else "float32")
    if isinstance(v, str):
        return tir.StringImm(v)
    if isinstance(v, tir.BufferRegion) and all(isinstance(r.extent, tir.IntImm) for r in v.region):
        # `A[i, 0:16]` as a value: the vector load TVM prints that way (a stride-1 Ramp index)
        return tir.BufferLoad(v.buffer, [_ramp_or_point(r) for r in v.region], span=v.span)
    raise NotPrimError(f"expected a TIR expression, got {_describe_value(v)}")


def _ramp_or_point(r: tir.Range) -> tir.PrimExpr:
    if r.extent.value == 1:
        return r.min
    return tir.Ramp(r.min, tir.const(1, r.min.dtype), r.extent.value)


def _describe_value(v) -> str:
    if isinstance(v, tuple):
        return "a tuple"
    if isinstance(v, _Dotted):
        return f"`{v.name}`"
    return f"a {type(v).__name__}" if not isinstance(v, (int, float, str)) else repr(v)


def _int_bits(dtype: str) -> int:
    """The bit width of an integer dtype ("int64" -> 64)."""
    digits = dtype.lstrip("abcdefghijklmnopqrstuvwxyz")
    return int(digits) if digits.isdigit() else 32


def _unify(a, b) -> tuple[tir.PrimExpr, tir.PrimExpr]:
    """Python literals take the other operand's dtype (TVM's implicit conversion)."""
    if not isinstance(a, tir.PrimExpr) and isinstance(b, tir.PrimExpr):
        return _as_prim(a, b.dtype), b
    if isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
        return a, _as_prim(b, a.dtype)
    a, b = _as_prim(a), _as_prim(b)
    if a.dtype != b.dtype:
        # an int32 constant meeting int64 is widened, as TVM does for index arithmetic
        if isinstance(b, tir.IntImm) and a.dtype.startswith("int") and b.dtype.startswith("int"):
            b = tir.IntImm(b.value, a.dtype)
        elif isinstance(a, tir.IntImm) and a.dtype.startswith("int") and b.dtype.startswith("int"):
            a = tir.IntImm(a.value, b.dtype)
        else:
            target = _promoted(a.dtype, b.dtype)
            if target is not None:
                a, b = _cast_to(a, target), _cast_to(b, target)
    return a, b


# TVM 0.27's bitwise and shift operators: the Python operator, and whether bools are allowed
_BIT_OPS = {"bitwise_and": (int.__and__, True), "bitwise_or": (int.__or__, True),
            "bitwise_xor": (int.__xor__, True), "shift_left": (int.__lshift__, False),
            "shift_right": (int.__rshift__, False)}
_INDEX_DTYPES = ("int32", "int64")


def _bit_op(op: str, a, b, span=None, fold: bool = True):
    """`a & b`, `a << b` ... as TVM's operators build them (tirx/op/op.cc): the operands'
    types matched, int32/int64 constants folded (TVM_INDEX_CONST_PROPAGATION), a shift by 0
    dropped; Python numbers on both sides stay Python numbers. `fold=False` is the node
    constructor (`T.BitwiseAnd`, `T.LShift`). Raises TypeError for non-integer operands."""
    py_op, bools = _BIT_OPS[op]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b)) and fold:
        return py_op(a, b)
    a, b = _unify(a, b)
    for v in (a, b):
        if not (v.dtype.startswith(("int", "uint")) or bools and v.dtype == "bool"):
            raise TypeError(f"`{op}` needs integer operands, got {v.dtype}")
    if fold and isinstance(b, tir.IntImm) and b.dtype in _INDEX_DTYPES and a.dtype in _INDEX_DTYPES:
        if op.startswith("shift") and not 0 <= b.value < int(a.dtype[3:]):
            raise TypeError(f"shift amount {b.value} must be non-negative and less than {a.dtype[3:]} "
                            f"for type {a.dtype}")
        if isinstance(a, tir.IntImm):
            return tir.IntImm(py_op(a.value, b.value), a.dtype, span=span)
        if op.startswith("shift") and b.value == 0:
            return a
    return tir.Call(a.dtype, f"tirx.{op}", [a, b], span=span)


def _bit_not(a, span=None):
    """`~a` (TVM's bitwise_neg: never folded)."""
    if not (a.dtype.startswith(("int", "uint")) or a.dtype == "bool"):
        raise TypeError(f"`bitwise_not` needs an integer operand, got {a.dtype}")
    return tir.Call(a.dtype, "tirx.bitwise_not", [a], span=span)


def _promoted(x: str, y: str) -> str | None:
    """TVM's BinaryOpMatchTypes: an integer meets a float as that float; the same kind
    meets the wider width. None when TVM has no rule (the operands stay as they are)."""
    def kind_bits(d):
        for kind in ("float", "int", "uint"):
            if d.startswith(kind) and d[len(kind):].isdigit():
                return kind, int(d[len(kind):])
        return None

    kx, ky = kind_bits(x), kind_bits(y)
    if kx is None or ky is None:
        return None
    if kx[0] == "float" and ky[0] != "float":
        return x
    if ky[0] == "float" and kx[0] != "float":
        return y
    if kx[0] == ky[0]:
        return x if kx[1] >= ky[1] else y
    return None


def _cast_to(e: tir.PrimExpr, dtype: str) -> tir.PrimExpr:
    if e.dtype == dtype:
        return e
    if isinstance(e, (tir.IntImm, tir.FloatImm)):
        return tir.const(e.value, dtype)
    return tir.Cast(dtype, e)


_PY_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "floormod",
              "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_PY_FOLD = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "//": lambda a, b: a // b, "%": lambda a, b: a % b, "/": lambda a, b: a / b}


def _identity_fold(op: str, a, b):
    """TVM's TryConstFold for one constant operand: `x + 0`, `x * 1`, `x // 1` are x, `x * 0`
    is 0, `x % 1` is 0 (TVM's operators fold them as the script is evaluated). None if no rule."""
    a_const, b_const = type(a) in (tir.IntImm, tir.FloatImm), type(b) in (tir.IntImm, tir.FloatImm)
    if a_const == b_const or a.dtype != b.dtype:
        return None
    av, bv = (a.value if a_const else None), (b.value if b_const else None)
    index_op = op in ("floordiv", "floormod")
    if index_op and type(a if a_const else b) is not tir.IntImm:
        return None
    if op == "add" and 0 in (av, bv) or op == "sub" and bv == 0:
        return b if av == 0 else a
    if op == "mul" and (av in (0, 1) or bv in (0, 1)):
        return (b if av == 1 else a) if a_const else (a if bv == 1 else b)
    if op in ("div", "floordiv", "floormod") and av == 0:
        return a
    if op in ("div", "floordiv") and bv == 1:
        return a
    if op == "floormod" and bv == 1:
        return tir.IntImm(0, a.dtype)
    return None


class _TirExprBuilder(_Builder):
    """Builds one PrimFunc."""

    def __init__(self, mb: _ModuleBuilder) -> None:
        super().__init__(mb)
        self.loop_extents: dict[int, tir.PrimExpr] = {}
        self.symbolic_dtype = "int64"

    def undefined(self, name: str, node):
        if name in self.mb.type_vars:
            var = tir.Var(name, self.mb.type_vars[name], span=self.span(node))
            self.scopes[0][name] = var
            return var
        return super().undefined(name, node)

    # -- arithmetic on TIR values (Python literals fold)
    def _chain(self, node):
        items = node.children
        value = self.eval(items[0])
        for i in range(1, len(items), 2):
            op = str(items[i])
            rhs = self.eval(items[i + 1])
            value = self.arith(op, value, rhs, node)
        return value

    def arith(self, op: str, a, b, node):
        if (isinstance(a, (int, float)) and isinstance(b, (int, float)) and op in _PY_FOLD
                and not isinstance(a, bool) and not isinstance(b, bool)):
            if op in ("//", "%", "/") and b == 0:
                self.error("division by zero", node)
            return _PY_FOLD[op](a, b)
        if op not in _PY_BINOPS:
            self.error(f"operator `{op}` is not supported in TIR", node)
        if op in ("//", "%", "/") and isinstance(b, (tir.IntImm, tir.FloatImm, int, float)) and \
                getattr(b, "value", b) == 0:
            self.error("division by zero", node)
        try:
            a, b = _unify(a, b)
            folded = _identity_fold(_PY_BINOPS[op], a, b)
            return folded if folded is not None else tir.BinOp(_PY_BINOPS[op], a, b, span=self.span(node))
        except TypeError as err:
            self.error(str(err), node)

    e_arith = e_term = e_comparison = _chain

    def e_shift(self, node):
        items = node.children
        value = self.eval(items[0])
        for i in range(1, len(items), 2):
            op = "shift_left" if str(items[i]) == "<<" else "shift_right"
            value = self.bit_op(op, value, self.eval(items[i + 1]), node)
        return value

    def bit_op(self, op: str, a, b, node, fold: bool = True):
        try:
            return _bit_op(op, a, b, self.span(node), fold)
        except TypeError as err:
            self.error(str(err), node)

    def _bitwise(self, op):
        def handler(node):
            vals = [self.eval(c) for c in node.children]
            value = vals[0]
            for v in vals[1:]:
                value = self.bit_op(op, value, v, node)
            return value
        return handler

    def e_bitor_chain(self, node):
        return self._bitwise("bitwise_or")(node)

    def e_bitxor_chain(self, node):
        return self._bitwise("bitwise_xor")(node)

    def e_bitand_chain(self, node):
        return self._bitwise("bitwise_and")(node)

    def e_invert(self, node):
        v = self.eval(node.children[0])
        if isinstance(v, int) and not isinstance(v, bool):
            return ~v  # a Python number, as TVM's parser evaluates it
        return _bit_not(_as_prim(v), self.span(node))

    def e_unary(self, node):
        op, operand = node.children
        v = self.eval(operand)
        if str(op) == "+":
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        if isinstance(v, tir.IntImm):
            return tir.IntImm(-v.value, v.dtype)
        if isinstance(v, tir.FloatImm):
            return tir.FloatImm(-v.value, v.dtype)
        v = _as_prim(v)
        if v.dtype.startswith("uint"):
            self.error(f"cannot negate a {v.dtype} value (TVM makes no -1 of an unsigned type)", node)
        # TVM's PrimExpr.__neg__: x * -1
        return tir.BinOp("mul", v, tir.const(-1, v.dtype), span=self.span(node))

    def e_power(self, node):
        base, exp = node.children
        a, b = _unify(self.eval(base), self.eval(exp))
        return tir.Call(a.dtype, "tirx.pow", [a, b], span=self.span(node))

    def e_and_chain(self, node):
        vals = [self.eval(c) for c in node.children]
        value = _as_prim(vals[0])
        for v in vals[1:]:
            value = tir.BinOp("and", value, _as_prim(v), span=self.span(node))
        return value

    def e_or_chain(self, node):
        vals = [self.eval(c) for c in node.children]
        value = _as_prim(vals[0])
        for v in vals[1:]:
            value = tir.BinOp("or", value, _as_prim(v), span=self.span(node))
        return value

    def e_not_(self, node):
        v = self.eval(node.children[0])
        if isinstance(v, bool):
            return not v
        return tir.Not(_as_prim(v), span=self.span(node))

    # -- buffers
    def subscript(self, base, subs, node):
        items = subs.children
        if isinstance(base, tir.Buffer):
            if any(isinstance(i, Tree) and i.data == "slice" for i in items):
                return tir.BufferRegion(base, [self.range_of(i) for i in items], span=self.span(node))
            return tir.BufferLoad(base, self.buffer_indices(items), span=self.span(node))
        if isinstance(base, _Dotted) and base.name == "T.let":
            return ("let", self.eval(items[0]))
        if isinstance(base, _Dotted) and base.name in ("T.Buffer",):
            return self.make_buffer(node, [self.eval(i) for i in items], {}, "")
        return super().subscript(base, subs, node)

    def buffer_indices(self, items) -> list:
        if any(isinstance(i, Tree) and i.data == "slice" for i in items):
            ranges = [self.range_of(i) for i in items]
            for item, r in zip(items, ranges):
                if not isinstance(r.extent, tir.IntImm) or r.extent.value < 1:
                    self.error("a vector index needs a constant number of lanes", item)
            return [_ramp_or_point(r) if isinstance(i, Tree) and i.data == "slice" else r.min
                    for i, r in zip(items, ranges)]
        values = [self.eval(i) for i in items]
        if len(values) == 1 and values[0] == ():
            return []  # `A[()]`: the element of a 0-d buffer
        return [_as_prim(v, "int32") for v in values]

    def range_of(self, item) -> tir.Range:
        if isinstance(item, Tree) and item.data == "slice":
            lo, hi, step = item.children
            if step is not None:
                self.error("strided regions are not supported", item)
            lo_v = _as_prim(self.eval(lo) if lo is not None else 0)
            hi_v = self.eval(hi)
            lo_v, hi_v = _unify(lo_v, hi_v)
            extent = self.simplify_sub(hi_v, lo_v)
            return tir.Range(lo_v, extent)
        v = _as_prim(self.eval(item), "int32")
        return tir.Range(v, tir.const(1, v.dtype))

    @staticmethod
    def simplify_sub(hi, lo):
        if isinstance(lo, tir.IntImm) and lo.value == 0:
            return hi
        if isinstance(hi, tir.IntImm) and isinstance(lo, tir.IntImm):
            return tir.IntImm(hi.value - lo.value, hi.dtype)
        if isinstance(hi, tir.BinOp) and hi.op == "add":
            from ...ir.node_structural import node_equal

            if hi.a is lo or node_equal(hi.a, lo):
                return hi.b
        return tir.BinOp("sub", hi, lo)

    def attribute(self, base, name: str, node):
        if isinstance(base, tir.Buffer):
            if name == "data":
                return base.data
            if name == "shape":
                return base.shape
            if name == "dtype":
                return base.dtype
            if name == "view":
                return ("view", base)
        if isinstance(base, tuple) and len(base) == 2 and base[0] == "handle_type" and name == "ty":
            return base[1]
        return super().attribute(base, name, node)

    def call_value(self, callee, node):
        if isinstance(callee, tuple) and callee and callee[0] == "view":
            pos, kw, _ = self.call_args(node)
            src = callee[1]
            shape = pos[0] if isinstance(pos[0], (tuple, list)) else pos
            return tir.Buffer(src.name, [_as_prim(d, "int32") for d in shape], kw.get("dtype", src.dtype),
                              data=src.data, span=self.span(node))
        return super().call_value(callee, node)

    def dtype_of(self, value, node) -> str:
        if isinstance(value, str) and (is_valid_dtype(value) or value == "void"):
            return value
        if isinstance(value, str):
            self.error(f"unknown data type `{value}`", node)
        if isinstance(value, _Dotted) and value.name.startswith("T.") and is_valid_dtype(value.name[2:]):
            return value.name[2:]
        self.error("expected a data type", node)

    def shape_of(self, value, node) -> tuple:
        if isinstance(value, (int, tir.PrimExpr)):
            value = (value,)
        if not isinstance(value, (tuple, list)):
            self.error("expected a shape (a tuple of dimensions)", node)
        dims = []
        for d in value:
            if isinstance(d, str):
                d = self.lookup_or_symbol(d, node) if d.isidentifier() else self.string_dim(d, node)
            if not isinstance(d, (int, tir.PrimExpr)) or isinstance(d, bool):
                self.error("a buffer dimension must be an integer expression", node)
            dims.append(_as_prim(d, "int32"))
        return tuple(dims)

    def string_dim(self, text: str, node):
        """A dimension written as a string, `"n * 4"` (TVM prints a signature's compound
        symbolic dims that way): parsed and evaluated like the expression it spells."""
        try:
            tree = _syntax_tree(f"_ = {text}\n", SourceFile("<dim>", f"_ = {text}\n"))
        except DiagnosticError:
            self.error(f"`\"{text}\"` is not a shape expression", node)
        return self.eval(tree.children[0].children[0].children[1])

    def lookup_or_symbol(self, name: str, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        var = tir.Var(name, "int32", span=self.span(node))
        self.scopes[0][name] = var
        return var

    def make_buffer(self, node, pos, kw, name: str) -> tir.Buffer:
        shape = self.shape_of(pos[0] if pos else kw.pop("shape"), node)
        dtype = self.dtype_of(pos[1] if len(pos) > 1 else kw.pop("dtype", "float32"), node)
        data = pos[2] if len(pos) > 2 else kw.pop("data", None)
        strides = kw.pop("strides", None) or ()
        elem_offset = kw.pop("elem_offset", None)
        scope = kw.pop("scope", "global")
        align = kw.pop("align", 0) or 0
        offset_factor = kw.pop("offset_factor", 0) or 0
        buffer_type = kw.pop("buffer_type", "default")
        axis_separators = kw.pop("axis_separators", None) or ()
        if kw:
            self.error(f"unknown buffer argument `{next(iter(kw))}`", node)
        return tir.Buffer(name, shape, dtype, data=data,
                          strides=[_as_prim(s, "int32") for s in strides],
                          elem_offset=None if elem_offset is None else _as_prim(elem_offset, "int32"),
                          scope=scope, align=align, offset_factor=offset_factor,
                          buffer_type="" if buffer_type == "default" else buffer_type,
                          axis_separators=axis_separators, span=self.span(node))

    # -- T.<name>(...) calls
    def t_dtype_const(self, node, pos, kw, dtype):
        if not pos:
            if kw.get("is_size_var"):
                return ("new_var", dtype)
            return ("new_var", dtype)
        v = pos[0]
        if isinstance(v, str):
            v = float(v)
        if isinstance(v, tir.PrimExpr):
            if v.dtype == dtype:
                return v
            if isinstance(v, (tir.IntImm, tir.FloatImm)):
                return tir.const(v.value, dtype)
            return tir.Cast(dtype, v, span=self.span(node))
        return tir.const(v, dtype)

    def t_handle(self, node, pos, kw):
        if not pos and not kw:
            return ("handle_type", "handle")
        elem = pos[0] if pos else kw.get("dtype", "void")
        scope = pos[1] if len(pos) > 1 else kw.get("storage_scope", "global")
        return ("handle_type", ("ptr", elem, scope))

    def t_intrin(self, name):
        def handler(self, node, pos, kw):
            args = [_as_prim(a) for a in pos]
            if len(args) == 2:
                args = list(_unify(*args))
            dtype = "bool" if name in _TIR_PREDICATES else args[0].dtype
            return tir.Call(dtype, f"tirx.{name}", args, span=self.span(node))
        return handler

    def t_minmax(self, op):
        def handler(self, node, pos, kw):
            a, b = _unify(pos[0], pos[1])
            return tir.BinOp(op, a, b, span=self.span(node))
        return handler

    def t_bit_op(self, op: str, fold: bool):
        def handler(self, node, pos, kw):
            if len(pos) != 2 or kw:
                self.error(f"`T.{op}` takes two operands", node)
            a, b = (_as_prim(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in pos)
            return self.bit_op(op, a, b, node, fold)
        return handler

    def t_bit_not(self, node, pos, kw):
        if len(pos) != 1 or kw:
            self.error("`T.bitwise_not` takes one operand", node)
        try:
            return _bit_not(_as_prim(pos[0]), self.span(node))
        except TypeError as err:
            self.error(str(err), node)

    def t_if_then_else(self, node, pos, kw):
        cond = _as_prim(pos[0])
        t, f = _unify(pos[1], pos[2])
        return tir.Call(t.dtype, "tirx.if_then_else", [cond, t, f], span=self.span(node))

    def t_select(self, node, pos, kw):
        t, f = _unify(pos[1], pos[2])
        return tir.Select(_as_prim(pos[0]), t, f, span=self.span(node))

    def t_cast(self, node, pos, kw):
        # TVM spells it T.Cast("int32", x); the older T.cast(x, "int32") is accepted too
        if isinstance(pos[0], str):
            dtype, value = pos[0], pos[1]
        else:
            value, dtype = pos[0], pos[1]
        return tir.Cast(self.dtype_of(dtype, node), _as_prim(value), span=self.span(node))

    def t_call_with_dtype(self, name):
        """`T.tvm_struct_get(args, 0, 13, "int32")`: the last argument is the result dtype."""
        def handler(self, node, pos, kw):
            dtype = self.ret_dtype(pos[-1], node)
            return tir.Call(dtype, f"tirx.{name}", [_as_prim(a) for a in pos[:-1]], span=self.span(node),
                            type_annotation=self.ret_pointer(pos[-1]))
        return handler

    @staticmethod
    def ret_pointer(value) -> tir.PointerType | None:
        if isinstance(value, tuple) and value and value[0] == "ptr":
            return tir.PointerType(value[1], value[2])
        return None

    def ret_dtype(self, value, node):
        if isinstance(value, tuple) and value and value[0] == "ptr":
            return "handle"
        if value == "handle" or isinstance(value, tuple):
            return "handle"
        return self.dtype_of(value, node)

    def t_reinterpret(self, node, pos, kw):
        dtype = self.ret_dtype(pos[0], node)
        return tir.Call(dtype, "tirx.reinterpret", [_as_prim(pos[1])], span=self.span(node),
                        type_annotation=self.ret_pointer(pos[0]))

    def t_call_extern(self, name):
        def handler(self, node, pos, kw):
            dtype = self.dtype_of(pos[0], node)
            return tir.Call(dtype, f"tirx.{name}", [_as_prim(a) for a in pos[1:]], span=self.span(node))
        return handler

    def t_call_packed(self, name):
        """`T.call_packed("f", args...)`: TVM's tvm_call_packed, an int32 call."""
        def handler(self, node, pos, kw):
            return tir.Call("int32", f"tirx.{name}", [_as_prim(a) for a in pos], span=self.span(node))
        return handler

    def t_handle_intrin(self, name):
        def handler(self, node, pos, kw):
            return tir.Call("handle", f"tirx.{name}", [_as_prim(a) for a in pos], span=self.span(node))
        return handler

    def t_target(self, node, pos, kw):
        return ("target", pos[0] if pos else kw)

    def t_ramp(self, node, pos, kw):
        base, stride = _unify(pos[0], pos[1])
        return tir.Ramp(base, stride, int(pos[2]), span=self.span(node))

    def t_broadcast(self, node, pos, kw):
        return tir.Broadcast(_as_prim(pos[0]), int(pos[1]), span=self.span(node))

    def t_let_expr(self, node, pos, kw):
        self.error("`T.Let` expressions are not supported", node)

    def t_statement_only(self, node, pos, kw):
        self.error("this `T.` form is a statement and cannot be used as a value", node)

    def t_buffer(self, node, pos, kw):
        return self.make_buffer(node, list(pos), dict(kw), "")


def _dtype_call(dtype: str):
    return lambda self, node, pos, kw: self.t_dtype_const(node, pos, kw, dtype)


def _tir_calls() -> dict:
    t = _TirExprBuilder
    calls = {f"T.{dt}": _dtype_call(dt) for dt in _TIR_DTYPES if dt != "handle"}
    calls["T.handle"] = t.t_handle
    for name in _TIR_MATH + _TIR_PREDICATES:
        calls[f"T.{name}"] = t.t_intrin(t, name)
    calls["T.abs"] = t.t_intrin(t, "fabs")
    calls["T.max"] = t.t_minmax(t, "max")
    calls["T.min"] = t.t_minmax(t, "min")
    # TVM's truncdiv builds its Div node (printed `T.Div` on integers); truncmod is Mod
    for op, name in (("div", "truncdiv"), ("truncmod", "truncmod"), ("floordiv", "floordiv"),
                     ("floormod", "floormod")):
        calls[f"T.{name}"] = t.t_minmax(t, op)
    # the spellings TVM prints when Python would fold the operator (both sides constant)
    for op, spelled in (("add", "Add"), ("sub", "Sub"), ("mul", "Mul"), ("div", "Div"), ("floordiv", "FloorDiv"),
                        ("floormod", "FloorMod"), ("eq", "EQ"), ("ne", "NE"), ("lt", "LT"), ("le", "LE"),
                        ("gt", "GT"), ("ge", "GE"), ("and", "And"), ("or", "Or"), ("min", "Min"), ("max", "Max")):
        calls[f"T.{spelled}"] = t.t_minmax(t, op)
    calls["T.Not"] = lambda self, node, pos, kw: tir.Not(_as_prim(pos[0]), span=self.span(node))
    # bitwise operators as functions (folding as the operators do) and as nodes (never folding)
    for op, node_name in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"),
                          ("bitwise_xor", "BitwiseXor"), ("shift_left", "LShift"), ("shift_right", "RShift")):
        calls[f"T.{op}"] = t.t_bit_op(t, op, True)
        calls[f"T.{node_name}"] = t.t_bit_op(t, op, False)
    calls["T.bitwise_not"] = calls["T.BitwiseNot"] = t.t_bit_not
    calls["T.if_then_else"] = t.t_if_then_else
    calls["T.Select"] = t.t_select
    calls["T.Cast"] = calls["T.cast"] = t.t_cast
    for name in ("tvm_struct_get",):
        calls[f"T.{name}"] = t.t_call_with_dtype(t, name)
    calls["T.reinterpret"] = t.t_reinterpret
    calls["T.call_extern"] = t.t_call_extern(t, "call_extern")
    calls["T.call_pure_extern"] = t.t_call_extern(t, "call_pure_extern")
    calls["T.call_packed"] = t.t_call_packed(t, "tvm_call_packed")
    calls["T.call_cpacked"] = t.t_call_packed(t, "tvm_call_cpacked")
    for name in ("handle_add_byte_offset", "address_of", "tvm_stack_alloca", "tvm_stack_make_array",
                 "tvm_stack_make_shape"):
        calls[f"T.{name}"] = t.t_handle_intrin(t, name)
    calls["T.target"] = t.t_target
    calls["T.Ramp"] = t.t_ramp
    calls["T.Broadcast"] = t.t_broadcast
    calls["T.Buffer"] = t.t_buffer
    return calls




_TirExprBuilder.CALLS = _tir_calls()
