"""Relax and TIR -> TVMScript, laid out exactly as TVM 0.27's `mod.script()` prints it.

TVM's printer (`src/script/printer`, `src/relax/script/printer`, `src/tirx/script/printer`)
turns IR into a tree of Python "docs" and then renders them. This module keeps that shape
in small: expressions become `_E` (text + Python precedence, so parentheses go exactly
where TVM's `PythonDocPrinter` puts them), statements become tuples rendered by `_render`,
and a `_Frame` stack mirrors TVM's frames:

    IRModule            @I.ir_module / class Module:        names: I T R cls Module
      PrimFunc          @T.prim_func(...) def f(A: T.Buffer(...)):       (frame)
        For / SBlock / If / AttrStmt ...                                  (frame each)
      relax.Function    @R.function def main(x: R.Tensor(...)) -> ...:   (frame)
        SeqExpr / If branch                                               (frame each)

A name is defined in the innermost frame and freed when that frame ends, so two
variables named `lv` in one scope print as `lv` and `lv_1`, while the next function may
reuse `lv` (TVM's `GenerateUniqueName`). Facts about TVM 0.27 worth knowing:

- functions are sorted: PrimFuncs, extern functions, Relax functions, then `main`;
  each group by name. Symbolic int64 sizes first seen in a signature become
  `n = TypeVar("n")` lines above the module; `cls = Module` appears in a Relax function
  once it refers to another global.
- a binding is annotated with its struct info, except `R.call_tir`/`R.call_dps_packed`
  whose `out_ty` already says it; `R.Prim` prints as `T.int64`, `R.Object` as `R.Any`.
- `a + b` prints infix only when TVM's `tvm::add(a, b)` would rebuild the same node (no
  constant folding, same dtypes); otherwise `T.Add(a, b)`. Integer division is `T.Div`.
- statements that scope "the rest of the block" in our IR (LetStmt, AssertStmt,
  DeclBuffer, Allocate) print flat; an AttrStmt prints as `T.attr(...)` followed by its
  body only when it is the whole body of its scope, else as `with T.attr(...):`.
- constants without an inline form print as `metadata["ir.GenericConst"][i]`, numbered
  in print order, and the text ends with TVM's "Metadata omitted" comment (or starts with
  the metadata JSON when `show_meta=True`).
"""

from __future__ import annotations

import math

from .._util import gc_paused
from ..ir import relax as rx
from ..ir import tir
from ..ir.expr import Attrs, GlobalVar, Op, TypedScalar
from ..ir.module import IRModule
from ..ir.node import Node

__all__ = ["print_tvmscript"]

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
    if _is_const(a) and _is_const(b) and type(a) is type(b) and not (index_only and not _is_int(a)):
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
    from ..ir.node_structural import node_equal

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


# ----------------------------------------------------------------------------- the printer


class _Printer:
    def __init__(self, show_meta: bool) -> None:
        self.show_meta = show_meta
        self.names: dict[int, str] = {}       # id(object) -> its doc text
        self.named: dict[int, str] = {}       # id(object) -> the name it reserved
        self.keep: dict[int, object] = {}     # keeps ids stable while named
        self.defined: set[str] = {"I", "T", "R", "cls"}
        self.next_suffix: dict[str, int] = {}  # base name -> no free `base_i` below this i
        self.frames: list[_Frame] = []
        self.usage: set[str] = set()          # which of ir / tirx / relax / type_var appear
        self.metadata: dict[str, list] = {}
        self.module: IRModule | None = None
        self.token = "relax"                  # "relax" or "tirx": how IntImm and vars print
        self.binding_names: list[str] = []
        self.common_prefix: dict[int, list[int]] = {}
        self.for_stack: list[tir.For] = []
        self.data_owner: dict[int, tir.Buffer] = {}  # id(data var) -> the buffer declaring it

    # -- prefixes (record which headers the text needs)

    def T(self, attr: str) -> str:
        self.usage.add("tirx")
        return f"T.{attr}"

    def R(self, attr: str) -> str:
        self.usage.add("relax")
        return f"R.{attr}"

    def I(self, attr: str) -> str:  # noqa: E743
        self.usage.add("ir")
        return f"I.{attr}"

    # -- names

    def define(self, obj, hint: str, frame: _Frame | None = None) -> str:
        key = id(obj)
        if key in self.names:
            return self.names[key]
        base = "".join(c if (c.isascii() and c.isalnum()) or c == "_" else "_"
                       for c in (hint or "v").encode("utf-8").decode("latin-1"))
        name = base
        if name in self.defined:  # base_1, base_2, ...: the first free one, as TVM picks it
            i = self.next_suffix.get(base, 1)
            while f"{base}_{i}" in self.defined:
                i += 1
            self.next_suffix[base] = i + 1
            name = f"{base}_{i}"
        self.defined.add(name)
        self.names[key] = name
        self.named[key] = name
        self.keep[key] = obj
        (frame or self.frames[-1]).owned.append(key)
        return name

    def alias(self, obj, text: str, frame: _Frame | None = None) -> None:
        """Refer to `obj` as `text` without reserving a name (`A.data`)."""
        key = id(obj)
        if key in self.names:
            return
        self.names[key] = text
        self.keep[key] = obj
        (frame or self.frames[-1]).owned.append(key)

    def push(self, frame: _Frame) -> _Frame:
        self.frames.append(frame)
        return frame

    def pop(self) -> _Frame:
        frame = self.frames.pop()
        for key in frame.owned:
            name = self.named.pop(key, None)
            if name is not None:
                self.defined.discard(name)
                base, _, suffix = name.rpartition("_")
                if suffix.isdigit() and self.next_suffix.get(base, 1) > int(suffix) >= 1:  # TVM counts from 1
                    self.next_suffix[base] = int(suffix)  # free again: the search starts there
            self.names.pop(key, None)
            self.keep.pop(key, None)
        return frame

    # -- metadata

    def add_metadata(self, key: str, obj, missing_index: int | None = None) -> _E:
        """`metadata["key"][i]`, numbered in print order. An object read from a file that
        lacked the metadata section (`missing_index`) keeps the index it had there."""
        entries = self.metadata.setdefault(key, [])
        index = missing_index
        if index is not None:
            while len(entries) <= index:
                entries.append(None)
            entries[index] = obj
        else:
            for i, e in enumerate(entries):
                if e is obj:
                    index = i
                    break
            else:
                index = len(entries)
                entries.append(obj)
        return _E(f'metadata["{key}"][{index}]')

    # ========================================================================= module

    def print_module(self, mod: IRModule) -> str:
        self.module = mod
        root = self.push(_Frame())
        self.define(mod, "Module", root)
        self.token = "relax"
        order = sorted(mod.functions.items(), key=lambda kv: (
            1000 if kv[0] == "main" else _FN_PRIORITY.get(type(kv[1]), 999), kv[0].encode()))
        body, type_var_lines, seen_type_vars = [], [], set()
        for name, func in order:
            self.binding_names.append(name)
            stmts = self.print_function(func, top_level=True)
            self.binding_names.pop()
            for s in stmts[:-1]:  # TypeVar declarations move above the module, once each
                if s[0] == "typevar" and s[1] not in seen_type_vars:
                    seen_type_vars.add(s[1])
                    type_var_lines.append(s)
            body.append(stmts[-1])
        doc = [("class", self.I("ir_module"), "Module", body)]
        return self.finish(type_var_lines + doc)

    def print_single(self, func, name: str | None) -> str:
        self.push(_Frame())
        symbol = dict(func.attrs).get("global_symbol")
        if not isinstance(symbol, str) and name is not None and not func.private:
            symbol = name  # a public function's global symbol is its name
        if isinstance(symbol, str):
            self.binding_names.append(symbol)
        return self.finish(self.print_function(func, top_level=True))

    def finish(self, stmts) -> str:
        stmts = self.header() + stmts
        prefix = ""
        if self.metadata:
            if self.show_meta and self.metadata_complete():
                prefix = 'metadata = tvm.ir.load_json("""' + self.dump_metadata() + '""")\n'
            else:  # (entries read from a file without its metadata cannot be shown)
                stmts.append(("comment", "Metadata omitted. Use show_meta=True in script() method to show it."))
        lines: list[str] = []
        _render(stmts, 0, lines)
        return prefix + _finish(lines)

    def header(self) -> list:
        if not self.usage:
            return []
        out = []
        if "type_var" in self.usage:
            out.append(("comment", "from typing import TypeVar"))
        if "ir" in self.usage:
            out.append(("comment", "from tvm.script import ir as I"))
        if "tirx" in self.usage:
            out.append(("comment", "from tvm.script import tirx as T"))
            out.append(("comment", "from tvm.tirx.layout import Axis"))
        if "relax" in self.usage:
            out.append(("comment", "from tvm.script import relax as R"))
        out.append(("comment", ""))
        return out

    def metadata_complete(self) -> bool:
        return not any(e is None or isinstance(e, rx.MetadataRef) or getattr(e, "data", 0) is None
                       or (isinstance(e, tir.StringImm) and e.value is None)
                       for entries in self.metadata.values() for e in entries)

    def dump_metadata(self) -> str:
        from . import tvm_json

        return tvm_json.dump_metadata(dict(self.metadata))

    def print_function(self, func, top_level: bool) -> list:
        """A function's statements: TypeVar lines (if any), then the function itself."""
        if isinstance(func, tir.PrimFunc):
            return self.prim_func(func)
        if isinstance(func, rx.Function):
            return self.relax_function(func, top_level)
        if isinstance(func, rx.ExternFunc):
            name = self.binding_names[-1] if self.binding_names else func.global_symbol
            return [("line", f"{name} = {self.relax_expr(func).text}")]
        raise TypeError(f"TVMScript cannot print a {type(func).__name__}")

    def function_name(self, func) -> str:
        if self.binding_names:
            return self.binding_names[-1]
        symbol = dict(func.attrs).get("global_symbol")
        return symbol if isinstance(symbol, str) else "main"

    def wrap_type_vars(self, func_doc, type_vars: list[tuple[str, tir.Var]], nested: bool) -> list:
        stmts = []
        if type_vars:
            self.usage.add("type_var")
            stmts = [("typevar", name) for name, _ in type_vars]
        stmts.append(func_doc)
        return (self.header() + stmts) if nested else stmts

    def global_ref(self, gv) -> _E:
        """`cls.f` for a function of the module being printed (or `Module.f` in TIR)."""
        name = gv.name_hint
        if self.module is None or name not in self.module.functions:
            return _E(name)
        if self.token == "tirx":
            return _E(f"{self.names[id(self.module)]}.{name}")
        frame = self.relax_func_frame()
        if frame is not None and not frame.alias_printed:
            frame.stmts.append(("line", f"cls = {self.names[id(self.module)]}"))
            frame.alias_printed = True
        return _E(f"cls.{name}")

    # ========================================================================= attribute values

    def value(self, v) -> _E:
        """A function or call attribute value."""
        if v is None:
            return _E("None")
        if isinstance(v, bool):
            return _bool(v)
        if isinstance(v, int):
            return _int(v)
        if isinstance(v, float):
            return _E(_float_text(v))
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, TypedScalar):
            if v.dtype.startswith(("float", "bfloat")):
                return _call(self.T(v.dtype), [_E(_float_text(float(v.value)))])
            if v.dtype == "bool":
                return _bool(v.value)
            if v.dtype == "int32" or self.token == "relax":
                return _int(v.value)
            return _call(self.T(v.dtype), [_int(v.value)])
        if isinstance(v, (tuple, list)):
            if len(v) == 2 and isinstance(v[0], str) and v[0] == "target" and isinstance(v[1], dict):
                return _call(self.T("target"), [self.value(v[1])])
            return _list([self.value(x) for x in v])
        if isinstance(v, dict):
            items = list(v.items())
            if all(isinstance(k, str) for k, _ in items):
                items.sort(key=lambda kv: kv[0].encode())
            return _dict([(self.value(k), self.value(x)) for k, x in items])
        if isinstance(v, Attrs):
            return self.value(dict(v.items()))
        if isinstance(v, tir.PrimExpr):
            return self.prim(v)
        if isinstance(v, rx.StructInfo):
            return self.sinfo(v)
        if isinstance(v, rx.Expr):
            return self.relax_expr(v)
        if isinstance(v, GlobalVar):
            return self.global_ref(v)
        if isinstance(v, rx.MetadataRef):
            return self.add_metadata(v.key, v, v.index)
        if type(v).__name__ == "ndarray":
            return self.add_metadata("ffi.Tensor", v)
        if isinstance(v, tir.Buffer):  # `T.sblock_attr({"layout_free_placeholders": [B]})`
            return self.buffer_ref(v)
        raise TypeError(f"cannot print an attribute value of type {type(v).__name__}")

    def attr_dict(self, attrs) -> _E:
        items = sorted(((k, v) for k, v in attrs), key=lambda kv: kv[0].encode())
        return _dict([(_str(k), self.value(v)) for k, v in items])

    # ========================================================================= TIR expressions

    def prim(self, e) -> _E:
        method = getattr(self, "p_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, (int, float, str)):
                return self.value(e)
            raise TypeError(f"cannot print TIR expression {type(e).__name__}")
        return method(e)

    def p_IntImm(self, e: tir.IntImm) -> _E:
        if e.dtype == "bool":
            return _bool(e.value) if self.token == "relax" else _call(self.T("bool"), [_bool(e.value)])
        if self.token == "relax" or e.dtype == "int32":
            return _int(e.value)
        return _call(self.T(e.dtype), [_int(e.value)])

    def p_FloatImm(self, e: tir.FloatImm) -> _E:
        return _call(self.T(e.dtype), [_E(_float_text(e.value))])

    def p_StringImm(self, e: tir.StringImm) -> _E:
        if e.value is None:
            return self.add_metadata("ir.StringImm", e, getattr(e, "meta_index", None))
        if "\n" in e.value:
            return self.add_metadata("ir.StringImm", e)
        return _str(e.value)

    def p_Var(self, v: tir.Var) -> _E:
        name = self.names.get(id(v))
        if name is not None:
            return _E(name)
        if self.token == "relax":
            return self.relax_shape_var(v)
        frame = self.lowest_def_frame(v)
        name = self.define(v, v.name, frame)
        frame.stmts.append(("line", f"{name} = {self.var_creation(v).text}"))
        return _E(name)

    def var_creation(self, v: tir.Var) -> _E:
        """`T.int32()`, `T.handle()`, `T.handle("float32", "global")`: a variable's declaration."""
        ptr = v.type_annotation
        return self.pointer(ptr) if ptr is not None else _call(self.T(v.dtype))

    def pointer(self, ptr: tir.PointerType) -> _E:
        if ptr.element_dtype in ("void", "", None):
            if ptr.scope == "global":
                return _call(self.T("handle"))
            return _call(self.T("handle"), [], [("storage_scope", _str(ptr.scope))])
        return _call(self.T("handle"), [_str(ptr.element_dtype)] + ([_str(ptr.scope)] if ptr.scope else []))

    def var_type(self, v: tir.Var) -> _E:
        """The annotation of a scalar: `T.int32`, `T.handle`, `T.handle("float32", "global")`."""
        ptr = v.type_annotation
        if ptr is not None and not (ptr.element_dtype in ("void", "", None) and ptr.scope == "global"):
            return self.pointer(ptr)
        return _E(self.T(v.dtype))

    def lowest_def_frame(self, obj) -> _Frame:
        """Where TVM declares a variable it meets undeclared: the innermost frame on the
        path shared by all its uses (FindLowestVarDef)."""
        path = self.common_prefix.get(id(obj))
        if path:
            by_node = {id(f.node): f for f in self.frames if f.node is not None}
            for key in reversed(path):
                if key in by_node:
                    return by_node[key]
        return self.func_frame()

    def func_frame(self) -> _Frame:
        for f in reversed(self.frames):
            if f.is_func:
                return f
        return self.frames[-1]

    def p_BinOp(self, e: tir.BinOp) -> _E:
        # a long left-leaning chain (a + b + c + ...) is walked in a loop, not recursively
        spine = [e]
        while isinstance(spine[-1].a, tir.BinOp):
            spine.append(spine[-1].a)
        doc = self.prim(spine[-1].a)
        for node in reversed(spine):
            doc = self.binop(node, doc, self.prim(node.b))
        return doc

    def binop(self, e: tir.BinOp, a: _E, b: _E) -> _E:
        op = e.op
        if op in ("div", "truncdiv"):  # one node in TVM: `/` for floats, T.Div for integers
            if _folds("div", e.a, e.b) or e.a.dtype.startswith(("int", "uint")):
                return _call(self.T("Div"), [a, b])
            return _binop("/", P_MUL, a, b)
        spelling, infix, _ = tir.BINARY_OPS[op]
        if not infix:  # T.min, T.max, T.truncmod
            return _call(self.T(spelling[2:]), [a, b])
        if _folds(op, e.a, e.b):
            return _call(self.T(_TVM_NODE[op]), [a, b])
        return _binop(spelling, _PRECEDENCE[spelling], a, b)

    def p_Not(self, e: tir.Not) -> _E:
        a = self.prim(e.a)
        if a.text[:1].isdigit() or a.text[:1] in '-"' or a.text in ("True", "False"):
            return _call(self.T("Not"), [a])  # `not 1` would read back as a Python bool
        return _E(f"not {f'({a.text})' if a.prec < P_NOT else a.text}", P_NOT)

    def p_Cast(self, e: tir.Cast) -> _E:
        return _call(self.T("Cast"), [_str(e.dtype), self.prim(e.value)])

    def p_Select(self, e: tir.Select) -> _E:
        return _call(self.T("Select"), [self.prim(e.condition), self.prim(e.true_value),
                                        self.prim(e.false_value)])

    def p_BufferLoad(self, e: tir.BufferLoad) -> _E:
        return _E(f"{self.buffer_ref(e.buffer).text}[{_join(self.indices(e.indices)) or '()'}]")

    def p_Ramp(self, e: tir.Ramp) -> _E:
        return _call(self.T("Ramp"), [self.prim(e.base), self.prim(e.stride), self.lanes(e.lanes)])

    def p_Broadcast(self, e: tir.Broadcast) -> _E:
        return _call(self.T("Broadcast"), [self.prim(e.value), self.lanes(e.lanes)])

    def lanes(self, lanes) -> _E:
        return _int(lanes) if isinstance(lanes, int) else self.prim(lanes)

    def p_Let(self, e: tir.Let) -> _E:
        var = self.prim(e.var)
        return _call(self.T("Let"), [self.prim(e.body)], [("where", _dict([(var, self.prim(e.value))]))])

    def p_Call(self, e: tir.Call) -> _E:
        name = e.op
        for prefix in ("tirx.", "tir."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        if name == "buffer_data" and e.args:
            return _E(f"{self.call_arg(e.args[0]).text}.data")
        if name in _BITWISE_INFIX and len(e.args) == 2:
            return self.bitwise(name, e.args[0], e.args[1])
        if name == "bitwise_not" and len(e.args) == 1:
            a = self.prim(e.args[0])
            if _is_int(e.args[0]) and e.args[0].dtype == "int32":  # `~5` would be Python's
                return _call(self.T("BitwiseNot"), [a])
            return _E(f"~{f'({a.text})' if a.prec < P_UNARY else a.text}", P_UNARY)
        name = _TIR_CALL_NAME.get(name, name)
        args = [self.call_arg(a) for a in e.args]
        if name in _DTYPE_FIRST:
            args.insert(0, self.call_dtype(e))
        elif name in _DTYPE_LAST:
            args.append(self.call_dtype(e))
        return _call(self.T(name), args)

    def bitwise(self, name: str, a, b) -> _E:
        token, prec, node = _BITWISE_INFIX[name]
        a_doc, b_doc = self.prim(a), self.prim(b)
        if _bitwise_folds(name, a, b):
            return _call(self.T(node), [a_doc, b_doc])
        return _binop(token, prec, a_doc, b_doc)

    def call_arg(self, a) -> _E:
        if isinstance(a, str):
            return _str(a)
        if isinstance(a, tir.Buffer):
            return self.buffer_ref(a)
        if isinstance(a, GlobalVar):
            return self.global_ref(a)
        return self.prim(a)

    def call_dtype(self, e: tir.Call) -> _E:
        ptr = getattr(e, "type_annotation", None)
        if ptr is not None:
            return _E(f"{self.pointer(ptr).text}.ty")
        if e.dtype == "handle":
            return _E(f"{self.T('handle')}().ty")
        return _str(e.dtype)

    # ========================================================================= TIR buffers

    def indices(self, indices) -> list[_E]:
        out = []
        for i in indices:
            if isinstance(i, tir.Ramp) and _is_int(i.stride):
                start = self.prim(i.base)
                stop = self.prim(_fold_add(i.base, _fold_mul(tir.IntImm(i.lanes, i.stride.dtype), i.stride)))
                step = "" if i.stride.value == 1 else ":" + self.prim(i.stride).text
                out.append(_E(f"{start.text}:{stop.text}{step}"))
            else:
                out.append(self.prim(i))
        return out

    def region(self, r: tir.BufferRegion) -> _E:
        parts = []
        for rng in r.region:
            lo = self.prim(rng.min)
            if _one(rng.extent) and _is_int(rng.extent):
                parts.append(lo)
            else:
                parts.append(_E(f"{lo.text}:{self.prim(_fold_add(rng.min, rng.extent)).text}"))
        return _E(f"{self.buffer_ref(r.buffer).text}[{_join(parts) or '()'}]")  # 0-d: `A[()]`

    def buffer_ref(self, buf: tir.Buffer) -> _E:
        name = self.names.get(id(buf))
        if name is None:
            # a buffer used before any declaration: TVM declares it with `T.Buffer(...)`
            frame = self.lowest_def_frame(buf)
            name = self.define_buffer(buf, frame)
            rhs = self.buffer_call("Buffer", buf, [], frame, with_dtype=False)
            frame.stmts.append(("line", f"{name} = {rhs.text}"))
        return _E(name)

    def define_buffer(self, buf: tir.Buffer, frame: _Frame | None = None) -> str:
        frame = frame or self.frames[-1]
        name = self.define(buf, buf.name or "buffer", frame)
        if isinstance(buf.data, tir.Var) and id(buf.data) not in self.names:
            self.alias(buf.data, f"{name}.data", frame)
        if buf.data is not None:  # a Var, or the pointer expression of a lowered decl_buffer
            self.data_owner.setdefault(id(buf.data), buf)
        return name

    def buffer_kwargs(self, buf: tir.Buffer, frame: _Frame, stringify: set[int] | None = None,
                      compound: set[int] | None = None, with_dtype: bool = False,
                      data=None) -> tuple[list[_E], list[tuple[str, _E]]]:
        """TVM's BufferAttrs: the shape tuple and dtype, then the keyword arguments.
        `stringify` (a signature buffer) quotes dimensions naming a not-yet-bound variable."""
        signature = stringify is not None
        stringify = set(stringify or ())
        compound = compound or set()
        shape, new_vars = [], []
        for d in buf.shape:
            vars_in = _vars_of(d)
            undefined = any(id(v) not in self.names for v in vars_in)
            if isinstance(d, tir.Var) and id(d) not in self.names:  # declared before the buffer
                self.define(d, d.name or "v", frame)
                new_vars.append(d)
            doc = self.prim(d)
            quote = (signature and undefined) or any(id(v) in stringify for v in vars_in)
            quote = quote or (any(id(v) in compound for v in vars_in) and not (
                isinstance(d, tir.Var) and id(d) in compound))
            shape.append(_E('"' + _str(doc.text).text[1:-1] + '"') if quote else doc)
            for v in vars_in:
                stringify.discard(id(v))
        args = [_tuple(shape)]
        if with_dtype or buf.dtype != "float32":
            args.append(_str(buf.dtype))
        kwargs: list[tuple[str, _E]] = []
        if data is not None:
            kwargs.append(("data", self.prim(data)))
        if buf.strides:
            kwargs.append(("strides", _tuple([self.prim(s) for s in buf.strides])))
        needs_factor = False
        off = buf.elem_offset
        if off is not None:
            index_dtype = buf.shape[0].dtype if buf.shape and hasattr(buf.shape[0], "dtype") else "int32"
            if _is_int(off):
                if off.value != 0 or off.dtype != index_dtype:
                    kwargs.append(("elem_offset", self.prim(off)))
            elif isinstance(off, tir.Var) and id(off) not in self.names:
                self.alias(off, f"{self.names.get(id(buf), buf.name)}.elem_offset", frame)
                needs_factor = True
            else:
                kwargs.append(("elem_offset", self.prim(off)))
        if buf.scope != "global":
            kwargs.append(("scope", _str(buf.scope)))
        if buf.align not in (0, 64):
            kwargs.append(("align", _int(buf.align)))
        if needs_factor or buf.offset_factor not in (0, 1):
            kwargs.append(("offset_factor", _int(buf.offset_factor or 1)))
        if new_vars:  # `n = T.int32()`, or `n, m = T.int32(), T.int32()`
            names = ", ".join(self.names[id(v)] for v in new_vars)
            frame.stmts.append(("line", f"{names} = {_join([self.var_creation(v) for v in new_vars])}"))
        return args, kwargs

    def buffer_call(self, method: str, buf: tir.Buffer, lead: list[_E], frame: _Frame,
                    with_dtype: bool = False, data=None) -> _E:
        args, kwargs = self.buffer_kwargs(buf, frame, with_dtype=with_dtype, data=data)
        return _call(self.T(method), lead + args, kwargs)

    # ========================================================================= PrimFunc

    def prim_func(self, func: tir.PrimFunc) -> list:
        self.token = "tirx"
        f = self.push(_Frame(func, is_func=True))
        name = self.function_name(func)
        self.common_prefix = _common_prefixes(func)
        self.for_stack = []
        buffers = {id(p): b for p, b in func.buffer_map}
        params = set(id(p) for p in func.params)
        # symbolic int64 sizes of buffer parameters become module-level TypeVars
        type_vars: dict[int, tir.Var] = {}
        for p in func.params:
            buf = buffers.get(id(p))
            if buf is None:
                continue
            for e in (*buf.shape, *buf.strides, buf.elem_offset):
                for v in _vars_of(e):
                    if isinstance(v, tir.Var) and id(v) not in params and v.dtype == "int64":
                        type_vars.setdefault(id(v), v)
        tv_docs = sorted(((self.define(v, v.name or "v", f), v) for v in type_vars.values()),
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

    # ========================================================================= Relax functions

    def relax_func_frame(self) -> _Frame | None:
        """The innermost function frame (TVM's GetRelaxFrame)."""
        for f in reversed(self.frames):
            if f.is_func:
                return f
        return self.frames[-1] if self.frames else None

    def relax_function(self, func: rx.Function, top_level: bool) -> list:
        self.token = "relax"
        f = self.push(_Frame(func, is_func=True))
        name = self.function_name(func)
        f.func_vars, f.type_vars, f.prim_params = set(), {}, set()
        params = []
        for p in func.params:
            pname = self.define(p, p.name_hint or "v", f)
            value = getattr(p.struct_info, "value", None) if isinstance(p.struct_info, rx.PrimStructInfo) else None
            if isinstance(value, tir.Var) and id(value) not in self.names:
                self.alias(value, pname, f)  # a `T.int64` parameter is also the TIR variable
                f.prim_params.add(id(value))
            params.append(f"{pname}: {self.sinfo(p.struct_info).text}" if p.struct_info is not None else pname)
        ret = func.ret_struct_info or getattr(func.body, "struct_info", None) or rx.ObjectStructInfo()
        ret_doc = self.sinfo(ret)
        type_vars = f.type_vars
        f.func_vars = f.type_vars = f.prim_params = None
        attrs = dict(func.attrs)
        printable = [(k, v) for k, v in func.attrs
                     if not (k == "global_symbol" and top_level and v == name)]
        if printable:
            f.stmts.append(("line", _call(self.R("func_attr"), [self.attr_dict(printable)]).text))
        kw = []
        if not func.is_pure:
            kw.append("pure=False")
        if top_level and func.private and "global_symbol" not in attrs:
            kw.append("private=True")
        decorator = self.R("function") + (f"({', '.join(kw)})" if kw else "")
        f.stmts.extend(self.seq_expr(func.body, use_return=True))
        tv_docs = sorted(((self.names[k], v) for k, v in type_vars.items()), key=lambda nv: nv[0].encode())
        self.pop()
        doc = ("func", [decorator], f"{name}({', '.join(params)}) -> {ret_doc.text}", f.stmts)
        return self.wrap_type_vars(doc, tv_docs, nested=not top_level)

    def relax_shape_var(self, v: tir.Var) -> _E:
        """A symbolic size met in Relax: a TypeVar of the signature, or `n = T.int64()`."""
        f = self.relax_func_frame()
        if f is None:
            raise ValueError(f"symbolic variable {v.name} used outside a function")
        name = self.define(v, v.name or "v", f)
        if f.func_vars is not None:
            f.func_vars.add(id(v))
            if id(v) not in f.prim_params:
                f.type_vars[id(v)] = v
                return _E(name)
        f.stmts.append(("line", f"{name} = {self.var_creation(v).text}"))
        return _E(name)

    def shape_dim(self, d) -> _E:
        """A dimension of a Relax shape; in a signature, compound expressions are quoted."""
        if isinstance(d, int) and not isinstance(d, bool):
            return _int(d)
        doc = self.prim(d)
        f = None
        for frame in self.frames:
            if frame.func_vars is not None:
                f = frame
                break
        if f is not None and any(id(v) in f.func_vars for v in _vars_of(d)):
            if not (isinstance(d, tir.Var) and id(d) in f.type_vars):
                return _E('"' + _str(doc.text).text[1:-1] + '"')
        return doc

    def sinfo(self, s) -> _E:
        if s is None or isinstance(s, rx.ObjectStructInfo):
            return _E(self.R("Any"))
        if isinstance(s, rx.TensorStructInfo):
            args, kwargs = [], []
            if isinstance(s.shape, tuple):
                args.append(_tuple([self.shape_dim(d) for d in s.shape]))
            elif s.shape is not None:
                args.append(self.relax_expr(s.shape))
            if s.dtype and s.dtype != "void":
                kwargs.append(("dtype", _str(s.dtype)))
            if s.shape is None and s.ndim != -1:
                kwargs.append(("ndim", _int(s.ndim)))
            if s.vdevice is not None:
                kwargs.append(("vdevice", _str(str(s.vdevice))))
            if not args and not kwargs:
                return _E(self.R("Tensor"))
            return _call(self.R("Tensor"), args, kwargs)
        if isinstance(s, rx.ShapeStructInfo):
            if s.values is not None:
                return _call(self.R("Shape"), [_list([self.shape_dim(d) for d in s.values])])
            return _call(self.R("Shape"), [], [("ndim", _int(s.ndim))])
        if isinstance(s, rx.PrimStructInfo):
            return _E(self.T(s.dtype))
        if isinstance(s, rx.TupleStructInfo):
            if not s.fields_:
                return _E(self.R("Tuple"))
            return _call(self.R("Tuple"), [self.sinfo(x) for x in s.fields_])
        if isinstance(s, rx.FuncStructInfo):
            if s.params is None:
                kwargs = []
                if not isinstance(s.ret, rx.ObjectStructInfo):
                    kwargs.append(("ret", self.sinfo(s.ret)))
                if s.purity:
                    kwargs.append(("purity", _bool(True)))
                return _call(self.R("Callable"), [], kwargs) if kwargs else _E(self.R("Callable"))
            return _call(self.R("Callable"), [_tuple([self.sinfo(p) for p in s.params]), self.sinfo(s.ret),
                                              _bool(s.purity)])
        raise TypeError(f"cannot print struct info {type(s).__name__}")

    def seq_expr(self, seq, use_return: bool) -> list:
        f = self.push(_Frame())
        if not isinstance(seq, rx.SeqExpr):
            seq = rx.SeqExpr([], seq)
        for block in seq.blocks:
            if isinstance(block, rx.DataflowBlock):
                stmts = self.bindings(block.bindings)
                outputs = [_E(self.names[id(b.var)]) for b in block.bindings
                           if not isinstance(b.var, rx.DataflowVar)]
                stmts.append(("line", _call(self.R("output"), outputs).text))
                f.stmts.append(("scope", f"with {self.R('dataflow')}()", stmts))
            else:
                f.stmts.extend(self.bindings(block.bindings))
        ret = self.relax_expr(seq.body)
        f.stmts.append(("line", f"return {ret.text}" if use_return else ret.text))
        self.pop()
        return f.stmts

    def bindings(self, bindings) -> list:
        out: list = []
        for b in bindings:
            if isinstance(b, rx.MatchCast):
                ann = self.annotation(b.var, b.value)
                rhs = _call(self.R("match_cast"), [self.relax_expr(b.value), self.sinfo(b.struct_info)])
                name = self.define(b.var, b.var.name_hint or "v")
                out.append(("line", f"{name}{ann} = {rhs.text}"))
            elif isinstance(b.value, rx.If):
                ann = self.annotation(b.var, b.value)
                name = self.define(b.var, b.var.name_hint or "v")
                out.append(self.if_doc(b.value, f"{name}{ann} = "))
            elif isinstance(b.value, (rx.Function, tir.PrimFunc)):
                name = self.define(b.var, b.var.name_hint or "v")
                self.binding_names.append(name)
                out.extend(self.print_function(b.value, top_level=False))
                self.binding_names.pop()
                self.token = "relax"
            elif _is_void(b.var) and (_is_void(b.value) or getattr(b.value, "struct_info", 0) is None):
                out.append(("line", self.relax_expr(b.value).text))
            else:
                rhs = self.relax_expr(b.value)
                ann = self.annotation(b.var, b.value)
                name = self.define(b.var, b.var.name_hint or "v")
                if isinstance(rhs.elems, list) and len(rhs.elems) > 1:
                    rhs = _E(_join(rhs.elems))
                out.append(("line", f"{name}{ann} = {rhs.text}"))
        return out

    def annotation(self, var, value) -> str:
        """`: R.Tensor(...)` unless TVM leaves the annotation out (TypeAsAnn)."""
        s = var.struct_info
        if s is None:
            return ""
        if (isinstance(value, rx.Call) and isinstance(value.op, Op)
                and value.op.name in ("relax.call_tir", "relax.call_dps_packed") and value.sinfo_args):
            out = value.sinfo_args[0] if len(value.sinfo_args) == 1 else rx.TupleStructInfo(value.sinfo_args)
            if _struct_equal(out, s):
                return ""
        return f": {self.sinfo(s).text}"

    def if_doc(self, e: rx.If, assign: str | None):
        cond = self.relax_expr(e.cond)
        branches = []
        for branch in (e.true_branch, e.false_branch):
            stmts = self.seq_expr(branch, use_return=False)
            if assign is not None:
                stmts[-1] = ("line", assign + stmts[-1][1])
            branches.append(stmts)
        return ("if", cond.text, branches[0], branches[1])

    # ========================================================================= Relax expressions

    def relax_expr(self, e) -> _E:
        method = getattr(self, "r_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, rx.Var):
            return self.r_Var(e)
        if isinstance(e, tir.PrimExpr):
            return self.prim(e)
        if isinstance(e, GlobalVar):
            return self.global_ref(e)
        if isinstance(e, rx.MetadataRef):
            return self.add_metadata(e.key, e, e.index)
        raise TypeError(f"cannot print Relax expression {type(e).__name__}")

    def r_Var(self, v: rx.Var) -> _E:
        name = self.names.get(id(v))
        if name is None:  # a free variable: TVM declares it where it is met
            ann = self.sinfo(v.struct_info)
            name = self.define(v, v.name_hint or "v")
            self.frames[-1].stmts.append(("line", f"{name}: {ann.text}"))
        return _E(name)

    r_DataflowVar = r_Var

    def r_Constant(self, c: rx.Constant) -> _E:
        data = c.data
        if data is not None and getattr(data, "ndim", None) == 0 and str(data.dtype) in _INLINE_CONST_DTYPES:
            dtype = str(data.dtype)
            value = data.item()
            if dtype == "bool":
                text = "True" if value else "False"
            elif dtype.startswith("int"):
                text = str(int(value))
            else:
                text = _float_text(float(value))
            return _call(self.R("const"), [_E(text), _str(dtype)])
        return self.add_metadata("ir.GenericConst", c, c.meta_index if data is None else None)

    def r_Tuple(self, t: rx.Tuple) -> _E:
        if not t.fields_:
            return _call(self.R("tuple"))
        return _tuple([self.relax_expr(x) for x in t.fields_])

    def r_TupleGetItem(self, t: rx.TupleGetItem) -> _E:
        return _E(f"{self.relax_expr(t.tuple_value).text}[{t.index}]")

    def r_ShapeExpr(self, s: rx.ShapeExpr) -> _E:
        return _call(self.R("shape"), [_list([self.shape_dim(d) for d in s.values])])

    def r_PrimValue(self, p: rx.PrimValue) -> _E:
        return self.prim(p.value) if not isinstance(p.value, int) else _int(p.value)

    def r_StringImm(self, s: rx.StringImm) -> _E:
        return _call(self.R("str"), [_str(s.value)])

    def r_DataTypeImm(self, d: rx.DataTypeImm) -> _E:
        return _call(self.R("dtype"), [_str(d.value)])

    def r_ExternFunc(self, e: rx.ExternFunc) -> _E:
        args = [_str(e.global_symbol)]
        s = e.struct_info
        default = isinstance(s, rx.FuncStructInfo) and s.params is None and not s.purity and isinstance(
            s.ret, rx.ObjectStructInfo)
        if s is not None and not default:
            args.append(self.sinfo(s))
        return _call(self.R("ExternFunc"), args)

    def r_GlobalVar(self, g: GlobalVar) -> _E:
        return self.global_ref(g)

    def r_Op(self, op: Op) -> _E:
        return _call(self.I("Op"), [_str(op.name)])

    def r_If(self, e: rx.If) -> _E:
        raise TypeError("a Relax `If` must be bound to a variable to print")

    def callee(self, e) -> _E:
        if isinstance(e, rx.ExternFunc):
            return _str(e.global_symbol)
        return self.relax_expr(e)

    def r_Call(self, c: rx.Call) -> _E:
        op = c.op
        if isinstance(op, Op) and not op.name.startswith("relax."):
            return self.prim(tir.Call(getattr(c.struct_info, "dtype", "handle"), op.name, c.args))
        if isinstance(op, Op) and op.name in _CALL_TIR_OPS:
            return self.call_tir(c, _CALL_TIR_OPS[op.name])
        if isinstance(op, Op) and op.name in ("relax.assert_op", "relax.print"):
            fmt_index = 1 if op.name == "relax.assert_op" else 0
            args = [self.relax_expr(a) for i, a in enumerate(c.args) if i != fmt_index]
            return _call(self.R(op.name[6:]), args, [("format", self.relax_expr(c.args[fmt_index]))])
        if isinstance(op, rx.ExternFunc):
            prefix = self.R("call_packed")
            args = [_str(op.global_symbol)]
        elif isinstance(op, Op):
            prefix = self.R(op.name[6:])
            args = []
        else:
            prefix = self.relax_expr(op).text
            args = []
        for i, a in enumerate(c.args):
            args.append(self.callee(a) if i == 0 else self.relax_expr(a))
        kwargs = []
        if c.attrs is not None:
            kwargs = [(k, self.call_attr(op, k, v)) for k, v in c.attrs.items()]
        if c.sinfo_args:
            kwargs.append(("ty_args", _tuple([self.sinfo(s) for s in c.sinfo_args])))
        return _call(prefix, args, kwargs)

    def call_attr(self, op, key: str, value) -> _E:
        """A call attribute; a dtype attribute left unset ("", TVM's void) prints `None`, a
        list of floats (resize2d's roi, TVM's Array<FloatImm>) `[T.float32(0.0), ...]`."""
        if (value == "" or isinstance(value, tuple)) and isinstance(op, Op):
            from ..ops import relax as relax_ops

            spec = relax_ops.lookup(op.name)
            spec = spec.attr_spec(key) if spec is not None else None
            if value == "" and spec is not None and spec.kind in ("dtype", "dtype?"):
                return _E("None")
            if isinstance(value, tuple) and spec is not None and spec.kind == "floats":
                return _list([self.value(TypedScalar(float(v), "float32")) for v in value])
        return self.value(value)

    def call_tir(self, c: rx.Call, name: str) -> _E:
        args = [self.callee(c.args[0]), self.relax_expr(c.args[1])]
        out = c.sinfo_args[0] if len(c.sinfo_args) == 1 else list(c.sinfo_args)
        if isinstance(out, rx.TupleStructInfo):
            out = list(out.fields_)
        out_doc = _list([self.sinfo(s) for s in out]) if isinstance(out, (list, tuple)) else self.sinfo(out)
        kwargs = [("out_ty", out_doc)]
        if name == "call_tir_inplace":
            indices = c.attrs.get("inplace_indices", ()) if c.attrs is not None else ()
            kwargs.append(("inplace_indices", _list([_int(i) for i in indices])))
        if name == "call_tir_with_grad" and c.attrs is not None:
            kwargs.append(("te_grad_name", _str(c.attrs.get("te_grad_name", ""))))
            if c.attrs.get("te_grad_kwargs"):
                kwargs.append(("te_grad_kwargs", self.value(c.attrs.get("te_grad_kwargs"))))
        if len(c.args) > 2:
            kwargs.append(("tir_vars", self.relax_expr(c.args[2])))
        return _call(self.R(name), args, kwargs)


_ITER_TYPE_NAME = {tir.DATA_PAR: "DataPar", 1: "ThreadIndex", tir.COMM_REDUCE: "CommReduce",
                   tir.ORDERED: "Ordered", tir.OPAQUE: "Opaque"}


def _is_dict_attr(s: tir.AttrStmt) -> bool:
    node = s.node
    return (isinstance(node, int) and not isinstance(node, bool) and node == 0) or (
        _is_int(node) and node.value == 0)


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


def print_tvmscript(node, show_meta: bool = False, name: str | None = None) -> str:
    """Print an IRModule, a Relax function or a PrimFunc as TVM 0.27's `script()` does.

    A function printed on its own is named by its `global_symbol` attribute, else `name`
    (a public function's global symbol is its name in a module), else `main`. With
    `show_meta`, the text starts with the metadata section, unless some entry was read from a
    file without it (a constant whose `data` is None): then it is omitted as by default."""
    printer = _Printer(show_meta)
    with gc_paused():
        if isinstance(node, IRModule):
            return printer.print_module(node)
        if isinstance(node, (tir.PrimFunc, rx.Function)):
            return printer.print_single(node, name)
    raise TypeError(f"cannot print a {type(node).__name__} as TVMScript")
