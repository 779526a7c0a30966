"""The printer's documents, as TVM's `PythonDocPrinter` has them: expressions as text with
Python precedence (`_E`), statements as tuples rendered with indentation; the tables of
TVM's spellings; and the frames names are defined in."""

from __future__ import annotations

import math

from ...ir import relax as rx
from ...ir import tir
from ...ir.node import Node

# ----------------------------------------------------------------------------- expression docs

# Python operator precedence, as TVM's PythonDocPrinter ranks it
P_OR, P_AND, P_NOT, P_CMP, P_ADD, P_MUL, P_ATOM = 3, 4, 5, 6, 11, 12, 15


class _E:
    """An expression doc: its text, its precedence and, for a tuple, its elements."""

    __slots__ = ("text", "prec", "elems")

    def __init__(self, text: str, prec: int = P_ATOM, elems: list[_E] | None = None) -> None:
        self.text = text
        self.prec = prec
        self.elems = elems

    def __repr__(self) -> str:
        return f"_E({self.text!r})"


def _join(docs) -> str:
    return ", ".join(d.text for d in docs)


def _call(callee: str, args=(), kwargs=()) -> _E:
    parts = [a.text for a in args] + [f"{k}={v.text}" for k, v in kwargs]
    return _E(f"{callee}({', '.join(parts)})")


def _tuple(elems: list[_E]) -> _E:
    inner = elems[0].text + "," if len(elems) == 1 else _join(elems)
    return _E(f"({inner})", P_ATOM, list(elems))


def _list(elems) -> _E:
    return _E(f"[{_join(elems)}]")


def _dict(items) -> _E:
    return _E("{" + ", ".join(f"{k.text}: {v.text}" for k, v in items) + "}")


def _binop(token: str, prec: int, a: _E, b: _E) -> _E:
    lhs = f"({a.text})" if a.prec < prec else a.text
    rhs = f"({b.text})" if b.prec <= prec else b.text
    return _E(f"{lhs} {token} {rhs}", prec)


def _str(value: str) -> _E:
    """A string literal, escaped as TVM's `support::StrEscape` does."""
    out = []
    for byte in value.encode("utf-8"):
        c = chr(byte)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif c == "\n":
            out.append("\\n")
        elif 0x20 <= byte <= 0x7E:
            out.append(c)
        else:
            out.append(f"\\x{byte:02X}")
    return _E('"' + "".join(out) + '"')


def _float_text(value: float) -> str:
    """TVM's `LiteralDoc::Float`: `2.0` for integral values, else 17 significant digits."""
    if math.isinf(value) or math.isnan(value):
        return '"' + ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")) + '"'
    if value == math.floor(value):
        return f"{value:.1f}"
    return f"{value:.17g}"


def _int(value: int) -> _E:
    return _E(str(int(value)))


def _bool(value) -> _E:
    return _E("True" if value else "False")


# ----------------------------------------------------------------------------- statement docs
# ("line", text) | ("comment", text) | ("typevar", name) | ("scope", header, body)
# | ("if", cond, then, else) | ("func", decorators, signature, body) | ("class", decorator, name, body)


def _render(stmts, indent: int, out: list[str]) -> None:
    pad = " " * indent
    for s in stmts:
        kind = s[0]
        if kind == "line":
            out.append(pad + s[1])
        elif kind == "comment":
            out.append(pad + (f"# {s[1]}" if s[1] else ""))
        elif kind == "typevar":
            out.append(f'{pad}{s[1]} = TypeVar("{s[1]}")')
        elif kind == "scope":
            out.append(f"{pad}{s[1]}:")
            _render_block(s[2], indent + 4, out)
        elif kind == "if":
            out.append(f"{pad}if {s[1]}:")
            _render_block(s[2], indent + 4, out)
            if s[3]:
                out.append(f"{pad}else:")
                _render_block(s[3], indent + 4, out)
        elif kind == "func":
            out.extend(f"{pad}@{d}" for d in s[1])
            out.append(f"{pad}def {s[2]}:")
            _render_block(s[3], indent + 4, out)
            out.append("")
        elif kind == "class":
            out.append(f"{pad}@{s[1]}")
            out.append(f"{pad}class {s[2]}:")
            _render_block(s[3], indent + 4, out)
        else:  # pragma: no cover
            raise AssertionError(kind)


def _render_block(stmts, indent: int, out: list[str]) -> None:
    if stmts:
        _render(stmts, indent, out)
    else:
        out.append(" " * indent + "pass")


def _finish(lines: list[str]) -> str:
    """TVM's `DocToPythonScript`: no trailing spaces, no final newline."""
    text = "\n".join(lines).rstrip(" ")
    return text[:-1] if text.endswith("\n") else text


# ----------------------------------------------------------------------------- tables

# TIR binary operators are spelled as `tir.BINARY_OPS` says; an infix one binds this tightly,
# and falls back to `T.<TVM node>(a, b)` when TVM's builder would fold or cast its operands
_PRECEDENCE = {"+": P_ADD, "-": P_ADD, "*": P_MUL, "/": P_MUL, "//": P_MUL, "%": P_MUL, "<": P_CMP,
               "<=": P_CMP, "==": P_CMP, "!=": P_CMP, ">": P_CMP, ">=": P_CMP, "and": P_AND, "or": P_OR}
_TVM_NODE = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "truncdiv": "Div", "floordiv": "FloorDiv",
             "floormod": "FloorMod", "lt": "LT", "le": "LE", "eq": "EQ", "ne": "NE", "gt": "GT", "ge": "GE",
             "and": "And", "or": "Or"}

# intrinsics whose result dtype TVM prints as an argument (TScriptDtypePrintLocation)
_DTYPE_FIRST = frozenset({"reinterpret", "call_extern", "call_pure_extern", "call_llvm_intrin",
                          "call_llvm_pure_intrin", "vectorhigh", "vectorlow", "vectorcombine",
                          "dp4a", "get_active_lane_mask"})
_DTYPE_LAST = frozenset({"tvm_struct_get"})
# TVM 0.27's bitwise and shift nodes, printed infix: op -> (token, precedence, node name printed
# when TVM's operator would fold the operands, as T.Add is for `+`)
P_BITOR, P_BITXOR, P_BITAND, P_SHIFT, P_UNARY = 7, 8, 9, 10, 13
_BITWISE_INFIX = {"bitwise_or": ("|", P_BITOR, "BitwiseOr"), "bitwise_xor": ("^", P_BITXOR, "BitwiseXor"),
                  "bitwise_and": ("&", P_BITAND, "BitwiseAnd"), "shift_left": ("<<", P_SHIFT, "LShift"),
                  "shift_right": (">>", P_SHIFT, "RShift")}
# printer names that differ from the op name (TScriptPrinterName)
_TIR_CALL_NAME = {"tvm_call_packed": "call_packed", "tvm_call_cpacked": "call_cpacked"}

# R.const takes scalars of these dtypes inline; anything else goes to the metadata section
_INLINE_CONST_DTYPES = frozenset({"int8", "int16", "int32", "int64", "float16", "float32", "float64",
                                  "bool"})
_CALL_TIR_OPS = {"relax.call_tir": "call_tir", "relax.call_dps_packed": "call_dps_packed",
                 "relax.call_tir_inplace": "call_tir_inplace",
                 "relax.call_tir_with_grad": "call_tir_with_grad"}

_FN_PRIORITY = {tir.PrimFunc: 1, rx.ExternFunc: 2, rx.Function: 3}
_ZERO_FOLDS = {
    # TVM's TryConstFold: which constant operands make `tvm::op(a, b)` return something else
    "add": lambda a, b: _zero(a) or _zero(b),
    "sub": lambda a, b: _zero(b),
    "mul": lambda a, b: _zero(a) or _zero(b) or _one(a) or _one(b),
    "div": lambda a, b: _zero(a) or _one(b),
    "floordiv": lambda a, b: _is_int(a) and a.value == 0 or _is_int(b) and b.value == 1,
    "floormod": lambda a, b: _is_int(a) and a.value == 0 or _is_int(b) and b.value == 1,
    "and": lambda a, b: _is_int(a) or _is_int(b),
    "or": lambda a, b: _is_int(a) or _is_int(b),
}


def _is_int(e) -> bool:
    return type(e) is tir.IntImm


def _is_const(e) -> bool:
    return type(e) in (tir.IntImm, tir.FloatImm)


def _zero(e) -> bool:
    return _is_const(e) and e.value == 0


def _one(e) -> bool:
    return _is_const(e) and e.value == 1


def _folds(op: str, a, b) -> bool:
    """Would TVM's `tvm::<op>(a, b)` build something other than `op(a, b)`?"""
    if a.dtype != b.dtype:
        return True  # operands of different dtypes get a cast
    index_only = op in ("floormod", "truncmod")  # TVM folds these for integer operands only
    # and two float constants under +, -, *, /, // only for 32 and 64 bits (not float16)
    narrow_float = not _is_int(a) and op in ("add", "sub", "mul", "div", "floordiv") and \
        not a.dtype.endswith(("32", "64"))
    if _is_const(a) and _is_const(b) and type(a) is type(b) and not (index_only and not _is_int(a)) \
            and not narrow_float:
        return True
    rule = _ZERO_FOLDS.get(op)
    return bool(rule and rule(a, b))


def _bitwise_folds(op: str, a, b) -> bool:
    """Would TVM's `a & b` (`<<`, ...) build something other than the node? Its
    TVM_INDEX_CONST_PROPAGATION folds int32/int64 constants, and a shift by 0."""
    if a.dtype != b.dtype:
        return True
    index = ("int32", "int64")
    if _is_int(a) and _is_int(b) and a.dtype in index:
        return True
    return op.startswith("shift") and _is_int(b) and b.dtype in index and b.value == 0


def _fold_add(a, b):
    """`a + b` as TVM's operator+ builds it (constants folded)."""
    if _is_int(a) and _is_int(b):
        return tir.IntImm(a.value + b.value, a.dtype)
    if _zero(a):
        return b
    if _zero(b):
        return a
    return tir.BinOp("add", a, b)


def _fold_mul(a, b):
    if _is_int(a) and _is_int(b):
        return tir.IntImm(a.value * b.value, a.dtype)
    if _one(a):
        return b
    if _one(b):
        return a
    return tir.BinOp("mul", a, b)


def _is_true(e) -> bool:
    return e is None or e is True or (_is_int(e) and e.value == 1)


def _expr_equal(a, b) -> bool:
    """TVM's ExprDeepEqual on the few expressions it is asked about (loop bounds)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tir.IntImm, tir.FloatImm)):
        return a.dtype == b.dtype and a.value == b.value
    if isinstance(a, tir.BinOp):
        return a.op == b.op and _expr_equal(a.a, b.a) and _expr_equal(a.b, b.b)
    if isinstance(a, tir.Cast):
        return a.dtype == b.dtype and _expr_equal(a.value, b.value)
    return False


def _struct_equal(a, b) -> bool:
    from ...ir.node_structural import node_equal

    return node_equal(a, b)


# ----------------------------------------------------------------------------- frames


class _Frame:
    """A scope: the statements printed so far and the objects it named."""

    __slots__ = ("stmts", "owned", "node", "is_func", "func_vars", "type_vars", "prim_params",
                 "alias_printed")

    def __init__(self, node=None, is_func: bool = False) -> None:
        self.stmts: list = []
        self.owned: list[int] = []
        self.node = node
        self.is_func = is_func
        self.func_vars: set[int] | None = None
        self.type_vars: dict[int, tir.Var] | None = None
        self.prim_params: set[int] | None = None
        self.alias_printed = False


def _common_prefixes(root) -> dict[int, list[int]]:
    """For every TIR Var and Buffer under `root`: the ids of the nodes on the path to all of
    its uses (TVM's `SetCommonPrefix`), used to decide where an undeclared one is declared."""
    prefix: dict[int, list[int]] = {}
    visited: set[int] = set()
    stack: list[int] = []

    def handle(obj) -> None:
        old = prefix.get(id(obj))
        if old is None:
            prefix[id(obj)] = list(stack)
            return
        n = 0
        while n < len(old) and n < len(stack) and old[n] == stack[n]:
            n += 1
        del old[n:]

    # iterative walk: (object, state) with state 0 = enter, 1 = leave
    work = [(root, 0)]
    while work:
        obj, state = work.pop()
        if state == 1:
            if isinstance(obj, (tir.Var, tir.Buffer)):
                handle(obj)
            stack.pop()
            continue
        if isinstance(obj, (tuple, list)):
            work.extend((x, 0) for x in reversed(obj))
            continue
        if not isinstance(obj, Node):
            continue
        if id(obj) in visited:
            if isinstance(obj, (tir.Var, tir.Buffer)):
                handle(obj)
            continue
        visited.add(id(obj))
        stack.append(id(obj))
        work.append((obj, 1))
        fields = obj.fields
        if isinstance(obj, tir.Buffer):
            fields = ("shape", "strides", "elem_offset")
        children = []
        for f in fields:
            v = getattr(obj, f, None)
            if v is not None and not isinstance(v, (str, int, float)):
                children.append(v)
        work.extend((c, 0) for c in reversed(children))
    return prefix


def _is_void(e) -> bool:
    """Is `e` of the empty tuple type (`R.tuple()`, `R.print(...)`)?"""
    if isinstance(e, rx.Tuple) and not e.fields_:
        return True
    s = getattr(e, "struct_info", None)
    return isinstance(s, rx.TupleStructInfo) and not s.fields_


def _vars_of(e) -> list:
    """The TIR variables in an expression, in order of first appearance."""
    out, seen, work = [], set(), [e]
    while work:
        x = work.pop()
        if x is None or isinstance(x, (int, float, str)):
            continue
        if isinstance(x, (tuple, list)):
            work.extend(reversed(x))
            continue
        if isinstance(x, tir.Var):
            if id(x) not in seen:
                seen.add(id(x))
                out.append(x)
            continue
        if isinstance(x, tir.BufferLoad):
            work.extend(reversed(x.indices))
            continue
        if isinstance(x, tir.PrimExpr):
            work.extend(reversed([getattr(x, f) for f in x.fields if f not in ("dtype", "op")]))
    return out
