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

from ..._util import gc_paused
from ...ir import relax as rx
from ...ir import tir
from ...ir.expr import Attrs, GlobalVar, TypedScalar
from ...ir.module import IRModule
from .docs import _E, _FN_PRIORITY, _bool, _call, _dict, _finish, _float_text, _Frame, _int, _list, _render, _str
from .print_relax import _RelaxPrinter
from .print_tir import _TirPrinter

# ----------------------------------------------------------------------------- the printer


class _Printer(_TirPrinter, _RelaxPrinter):
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
        self.static_tensor_text: dict[tuple, str] = {}  # (shape, dtype) -> `R.Tensor((1, 2), dtype="float32")`
        self.call_attr_docs: dict[tuple, tuple] = {}    # (op, id(attrs)) -> (attrs, their docs)
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
        from .. import tvm_json

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
        if isinstance(v, tir.IndexMap):
            return self.index_map(v)
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

    def index_map(self, m: tir.IndexMap) -> _E:
        """`T.index_map(lambda i, j: (j, i))`: the parameters named in a frame of their own
        (`n_1` where a symbolic size is `n`), a one-index result as a 1-tuple."""
        f = self.push(_Frame(m))
        params = [self.define(v, v.name, f) for v in m.initial_indices]
        finals = [self.prim(e).text for e in m.final_indices]
        self.pop()
        body = f"({finals[0]},)" if len(finals) == 1 else f"({', '.join(finals)})"
        return _call(self.T("index_map"), [_E(f"lambda {', '.join(params)}: {body}")])

    def attr_dict(self, attrs) -> _E:
        items = sorted(((k, v) for k, v in attrs), key=lambda kv: kv[0].encode())
        return _dict([(_str(k), self.value(v)) for k, v in items])


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
