"""The TIR interpreter's code generator: a PrimFunc becomes the source of one Python
function whose nested `for` loops mirror the TIR (see `tir.py` for the values it computes
with and the semantics it follows).
"""

from __future__ import annotations

import itertools
import keyword
import re

import numpy as np

from ..ir import tir
from .tir_packed import packed, packed_call_code
from .tir_runtime import (
    _FLOAT_BINOPS,
    _FLOAT_INTRINSICS,
    _INT_BINOPS,
    _INT_INTRINSICS,
    _INT_RAW_INTRINSICS,
    _RING_OPS,
    _RUNTIME,
    _VECTOR_BINOPS,
    InterpreterError,
    _DType,
    _dtype,
    _nothing,
    _wrap_code,
    _wrap_value,
)

# ----------------------------------------------------------------------------- code generation


class _V:
    """A compiled expression: Python code, its dtype and, for integers, an interval
    [lo, hi] holding its exact value (None: unknown, the code may need wrapping)."""

    __slots__ = ("code", "dt", "lo", "hi")

    def __init__(self, code: str, dt: _DType, lo=None, hi=None) -> None:
        self.code, self.dt, self.lo, self.hi = code, dt, lo, hi

    @property
    def in_range(self) -> bool:
        return self.lo is not None and self.dt.lo <= self.lo and self.hi <= self.dt.hi


class _Buf:
    """How the generated code reaches a buffer: `nd` — a NumPy array `name` indexed by the
    indices; `flat` — a 1-D storage `name` indexed by elem_offset + sum(index * stride)."""

    __slots__ = ("buffer", "mode", "name")

    def __init__(self, buffer: tir.Buffer, mode: str, name: str) -> None:
        self.buffer, self.mode, self.name = buffer, mode, name


_MAX_LOOP_NESTING = 16  # CPython allows 20 nested loops per function; deeper ones go in a nested def
_SPILL_DEPTH = 32  # expressions nested deeper are split into temporaries (the parser's limit is 200)


class _Codegen:
    def __init__(self, func: tir.PrimFunc, name: str) -> None:
        self.func = func
        self.fname = name
        self.lines: list[str] = []
        self.where: list[str] = []  # per line: the TIR construct it comes from
        self.ctx = f"`{name}`"
        self.indent = 1
        self.ns = dict(_RUNTIME, packed=packed)
        self.consts: dict[tuple, str] = {}
        self.counter = itertools.count()
        self.env: dict[tir.Var, tuple[str, object, object]] = {}  # var -> (python name, lo, hi)
        self.var_names: dict[tir.Var, str] = {}
        self.used_names: set[str] = set()
        self.bufs: dict[tir.Buffer, _Buf] = {}
        self.storage: dict[tir.Var, tuple[str, bool]] = {}  # data var -> (python name, is flat)
        self.loop_depth = 0
        self.lazy = 0  # > 0 while compiling code that is not always evaluated
        self.depth = 0
        self._collect_buffers()

    # ------------------------------------------------------------------ helpers

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        self.where.append(self.ctx)

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def pyname(self, prefix: str, name: str) -> str:
        base = prefix + (re.sub(r"\W", "_", name) or "x")
        if keyword.iskeyword(base) or base in self.used_names or base in self.ns:
            base = f"{base}_{next(self.counter)}"
        self.used_names.add(base)
        return base

    def const(self, value, dt: _DType) -> str:
        key = (dt.name, repr(value))
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"K{len(self.consts)}"
            self.ns[name] = np.array(value, dt.np)[()] if dt.lanes == 1 else np.full(dt.lanes, value, dt.np)
        return name

    def type_name(self, dt: _DType) -> str:
        """A name bound to the NumPy scalar type of `dt` in the generated code's namespace."""
        name = "T_" + re.sub(r"\W", "_", dt.elem)
        self.ns.setdefault(name, dt.np.type)
        return name

    def error(self, msg: str):
        return InterpreterError(f"in {self.ctx}: {msg}")

    def bind(self, var: tir.Var, lo=None, hi=None, name: str | None = None):
        """Bring `var` into scope; returns its Python name and the previous binding."""
        prev = self.env.get(var)
        if name is None:
            name = self.var_names.get(var)
            if name is None or prev is not None:  # a fresh name when re-bound inside its own scope
                name = self.pyname("v_", var.name)
                self.var_names.setdefault(var, name)
        dt = _dtype(var.dtype)
        if dt.is_int and (lo is None or lo < dt.lo or hi > dt.hi):
            lo, hi = dt.lo, dt.hi
        self.env[var] = (name, lo, hi)
        return name, prev

    def unbind(self, var: tir.Var, prev) -> None:
        if prev is None:
            self.env.pop(var, None)
        else:
            self.env[var] = prev

    # ------------------------------------------------------------------ expressions

    def expr(self, e: tir.PrimExpr) -> _V:
        self.depth += 1
        try:
            method = getattr(self, "e_" + type(e).__name__, None)
            if method is None:
                raise self.error(f"cannot evaluate {type(e).__name__}")
            v = method(e)
        finally:
            self.depth -= 1
        if self.depth and self.depth % _SPILL_DEPTH == 0 and not self.lazy and not v.code.isidentifier():
            name = self.fresh("s")
            self.emit(f"{name} = {v.code}")
            v = _V(name, v.dt, v.lo, v.hi)
        return v

    def value(self, e: tir.PrimExpr) -> str:
        """Code for `e`'s value, integers wrapped to their dtype."""
        return self.norm(self.expr(e))

    def norm(self, v: _V) -> str:
        if v.dt.is_int and not v.in_range:
            return _wrap_code(v.code, v.dt)
        return v.code

    def lazily(self, e: tir.PrimExpr) -> str:
        self.lazy += 1
        try:
            return self.value(e)
        finally:
            self.lazy -= 1

    def e_IntImm(self, e: tir.IntImm) -> _V:
        dt = _dtype(e.dtype)
        if dt.kind == "bool":
            return _V("True" if e.value else "False", dt)
        if dt.kind == "float":
            return _V(self.const(float(e.value), dt), dt)
        v = _wrap_value(e.value, dt)
        return _V(repr(v) if v >= 0 else f"({v})", dt, v, v)

    def e_FloatImm(self, e: tir.FloatImm) -> _V:
        return _V(self.const(e.value, _dtype(e.dtype)), _dtype(e.dtype))

    def e_StringImm(self, e: tir.StringImm) -> _V:
        return _V(repr(e.value), _dtype("handle"))

    def e_Var(self, e: tir.Var) -> _V:
        bound = self.env.get(e)
        if bound is not None:
            return _V(bound[0], _dtype(e.dtype), bound[1], bound[2])
        if e in self.storage:
            return _V(self.storage[e][0], _dtype("handle"))
        raise self.error(f"variable `{e.name}` is used but not defined")

    def e_BinOp(self, e: tir.BinOp) -> _V:
        # A left-deep chain ((a + b) + c) + ... (an unrolled reduction) is compiled in a
        # loop, not by recursion, and split into temporaries every _SPILL_DEPTH levels.
        spine = [e]
        while type(spine[-1].a) is tir.BinOp:
            spine.append(spine[-1].a)
        acc = self.expr(spine[-1].a)
        for level, node in enumerate(reversed(spine)):
            if node.op in ("and", "or"):  # the right operand is evaluated only when needed
                self.lazy += 1
                try:
                    b = self.expr(node.b)
                finally:
                    self.lazy -= 1
            else:
                b = self.expr(node.b)
            acc = self.binop(node, acc, b)
            if level % _SPILL_DEPTH == _SPILL_DEPTH - 1 and node is not e and not self.lazy:
                name = self.fresh("s")
                self.emit(f"{name} = {acc.code}")
                acc = _V(name, acc.dt, acc.lo, acc.hi)
        return acc

    def binop(self, e: tir.BinOp, a: _V, b: _V) -> _V:
        dt, op = _dtype(e.dtype), e.op
        if a.dt.lanes > 1 or b.dt.lanes > 1:
            table = _VECTOR_BINOPS
        elif a.dt.is_int:
            table = _INT_BINOPS
        else:
            table = _FLOAT_BINOPS
        ring = table is _INT_BINOPS and op in _RING_OPS
        ac = a.code if ring else self.norm(a)
        bc = b.code if ring else self.norm(b)
        code = table[op].format(a=ac, b=bc, t0=self.fresh("t"), t1=self.fresh("t"))
        if table is not _INT_BINOPS or dt.kind == "bool":
            return _V(code, dt)
        lo, hi = _interval(op, a, b, a.dt)
        return _V(code, dt, lo, hi)

    def e_Not(self, e: tir.Not) -> _V:
        a = self.expr(e.a)
        if a.dt.lanes > 1:
            return _V(f"np.logical_not({a.code})", a.dt)
        return _V(f"(not {self.norm(a)})", _dtype("bool"))

    def e_Cast(self, e: tir.Cast) -> _V:
        dt, a = _dtype(e.dtype), self.expr(e.value)
        src = a.dt
        if dt.lanes > 1 or src.lanes > 1:
            return _V(f"np.asarray({a.code}).astype({self.type_name(dt)})", dt)
        code = self.norm(a)
        if dt.kind == "handle" or src.kind == "handle":
            return _V(code, dt)
        if dt.kind == "bool":
            return _V(code if src.kind == "bool" else f"({code} != 0)", dt)
        if dt.is_int:
            if src.kind == "bool":
                return _V(f"int({code})", dt, 0, 1)
            if src.is_int:  # the value is in a's interval if known, else in the source dtype's range
                return _V(code, dt, a.lo, a.hi) if a.in_range else _V(code, dt, src.lo, src.hi)
            return _V(f"int({code})", dt)  # float -> int truncates toward zero
        return _V(f"{self.type_name(dt)}({code})", dt)

    def e_Select(self, e: tir.Select) -> _V:
        c = self.expr(e.condition)
        self.lazy += 1  # TVM evaluates both sides; we need only one, and hoist neither
        try:
            t, f = self.expr(e.true_value), self.expr(e.false_value)
        finally:
            self.lazy -= 1
        dt = _dtype(e.dtype)
        if c.dt.lanes > 1:
            return _V(f"np.where({c.code}, {t.code}, {f.code})", dt)
        return self._choice(self.norm(c), t, f, dt)

    def _choice(self, cond: str, t: _V, f: _V, dt: _DType) -> _V:
        code = f"({self.norm(t)} if {cond} else {self.norm(f)})"
        if dt.is_int and t.in_range and f.in_range:
            return _V(code, dt, min(t.lo, f.lo), max(t.hi, f.hi))
        return _V(code, dt)

    def e_Let(self, e: tir.Let) -> _V:
        value = self.expr(e.value)
        if not self.lazy:  # evaluated unconditionally: a statement before the one being compiled
            name, prev = self.bind(e.var, value.lo, value.hi)
            self.emit(f"{name} = {self.norm(value)}")
            try:
                return self.expr(e.body)
            finally:
                self.unbind(e.var, prev)
        name, prev = self.bind(e.var, value.lo, value.hi)
        try:
            body = self.expr(e.body)
        finally:
            self.unbind(e.var, prev)
        return _V(f"(({name} := {self.norm(value)}), {body.code})[1]", body.dt, body.lo, body.hi)

    def e_Ramp(self, e: tir.Ramp) -> _V:
        base, stride = self.value(e.base), self.value(e.stride)
        dt = _dtype(e.dtype)
        return _V(f"ramp({base}, {stride}, {e.lanes}, {self.type_name(dt)})", dt)

    def e_Broadcast(self, e: tir.Broadcast) -> _V:
        dt = _dtype(e.dtype)
        return _V(f"np.full({e.lanes}, {self.value(e.value)}, {self.type_name(dt)})", dt)

    def e_BufferLoad(self, e: tir.BufferLoad) -> _V:
        b = self.buffer(e.buffer)
        index, lanes = self.index(b, e.indices)
        dt = _dtype(e.buffer.dtype)
        if lanes > 1:
            return _V(f"{b.name}[{index}]", _dtype(f"{dt.elem}x{lanes}"))
        if dt.is_int or dt.kind == "bool":  # .item() gives a Python int / bool
            return _V(f"{b.name}.item({'' if index == '()' else index})", dt, dt.lo, dt.hi)
        return _V(f"{b.name}[{index}]", dt)

    def e_Call(self, e: tir.Call) -> _V:
        dt = _dtype(e.dtype)
        op = e.op
        short = op.split(".", 1)[1] if op.startswith(("tirx.", "tir.")) else None
        if short is None:  # a call of another PrimFunc of the module
            args = ", ".join(self.value(a) for a in e.args)
            return _V(f"call_global(mod, {op.lstrip('@')!r}, [{args}])", dt)
        if short == "if_then_else":
            if len(e.args) != 3:
                raise self.error(f"`{op}` takes 3 arguments, got {len(e.args)}")
            cond = self.value(e.args[0])
            self.lazy += 1
            try:
                t, f = self.expr(e.args[1]), self.expr(e.args[2])
            finally:
                self.lazy -= 1
            return self._choice(cond, t, f, dt)
        if short == "likely":
            return self.expr(e.args[0])
        if short in ("max_value", "min_value"):
            if dt.kind in ("int", "uint"):
                v = dt.hi if short == "max_value" else dt.lo
                return _V(repr(v) if v >= 0 else f"({v})", dt, v, v)
            if dt.kind == "bool":
                return _V("True" if short == "max_value" else "False", dt)
            info = np.finfo(dt.np)
            return _V(self.const(float(info.max if short == "max_value" else info.min), dt), dt)
        if short == "tvm_call_packed":  # a runtime function of ours (tir_packed.py)
            return _V(packed_call_code(self, e), dt, 0, 0)
        args = [self.expr(a) if isinstance(a, tir.PrimExpr) else None for a in e.args]
        codes = [self.norm(a) if a is not None else repr(x) for a, x in zip(args, e.args)]
        if short == "isnullptr":
            return _V(f"({codes[0]} is None)", dt)
        if short in ("isnan", "isinf", "isfinite"):
            if args[0].dt.kind != "float":
                return _V({"isfinite": "True"}.get(short, "False"), dt)
            return _V(f"np.{short}({codes[0]})", dt)
        if short == "reinterpret":
            src = args[0].dt
            if dt.kind == "handle" or src.kind == "handle":
                return _V(codes[0], dt)
            return _V(f"np.array({codes[0]}, {self.type_name(src)}).view({self.type_name(dt)})[()]"
                      + (".item()" if dt.is_int else ""), dt, dt.lo, dt.hi)
        if dt.kind == "bool" and dt.lanes == 1 and short in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            return _V(_INT_INTRINSICS[short].format(*(f"bool({c})" for c in codes)), dt)  # & | ^ of bools
        if dt.is_int:
            template = _INT_INTRINSICS.get(short)
            if template is None:
                raise self.error(f"unknown TIR intrinsic `{op}` for {dt.name}")
            code = template.format(*codes, bits=dt.bits, mask=(1 << dt.bits) - 1)
            if short in _INT_RAW_INTRINSICS:
                return _V(code, dt)
            identity = short in ("floor", "ceil", "round", "nearbyint", "trunc") and args[0].in_range
            return _V(code, dt, args[0].lo, args[0].hi) if identity else _V(code, dt, dt.lo, dt.hi)
        template = _FLOAT_INTRINSICS.get(short)
        if template is None:
            raise self.error(f"unknown TIR intrinsic `{op}`")
        code = template.format(*codes, T=self.type_name(dt))
        if any(a is not None and a.dt.name != dt.name for a in args):
            code = f"{self.type_name(dt)}({code})" if dt.lanes == 1 else code
        return _V(code, dt)

    # ------------------------------------------------------------------ buffers

    def _collect_buffers(self) -> None:
        """Which buffers are declared (params, alloc_buffers, match_buffers, DeclBuffer), and
        which data pointers are shared by several buffers (those need a flat storage)."""
        self.declared: set[tir.Buffer] = {b for _, b in self.func.buffer_map}
        by_data: dict[tir.Var, dict[tir.Buffer, None]] = {}  # (dicts: ordered, so the code is stable)
        self.allocated: set[tir.Var] = set()
        stack: list = [self.func.body]
        while stack:
            node = stack.pop()
            if isinstance(node, tir.Buffer):
                by_data.setdefault(node.data, {})[node] = None
                continue
            if isinstance(node, tir.SBlock):
                self.declared.update(node.alloc_buffers)
                self.declared.update(m.buffer for m in node.match_buffers)
            elif isinstance(node, tir.DeclBuffer):
                self.declared.add(node.buffer)
            elif isinstance(node, tir.Allocate):
                self.allocated.add(node.buffer_var)
            if isinstance(node, tir.Node):
                stack.extend(c for c in node.children() if c is not None)
            elif isinstance(node, (tuple, list)):
                stack.extend(node)
        for _, b in self.func.buffer_map:
            by_data.setdefault(b.data, {})[b] = None
        self.shared_data = {d for d, bs in by_data.items() if len(bs) > 1} | self.allocated
        self.implicit: dict[tir.Var, list[tir.Buffer]] = {}
        for d, bs in by_data.items():
            for b in bs:
                if b not in self.declared:
                    self.implicit.setdefault(d, []).append(b)

    def buffer(self, buffer: tir.Buffer) -> _Buf:
        b = self.bufs.get(buffer)
        if b is None:
            raise self.error(f"buffer `{buffer.name}` is used but not declared")
        return b

    def index(self, b: _Buf, indices) -> tuple[str, int]:
        """Code for the subscript of `b` at `indices`, and the number of lanes."""
        buffer = b.buffer
        if b.mode == "flat":
            if len(indices) != len(buffer.strides):
                raise self.error(f"buffer `{buffer.name}` has {len(buffer.strides)} dimensions, "
                                 f"accessed with {len(indices)} indices")
            terms = [i if _is_const(s, 1) else tir.BinOp("mul", i, s) for i, s in zip(indices, buffer.strides)]
            if buffer.elem_offset is not None and not _is_const(buffer.elem_offset, 0):
                terms.insert(0, buffer.elem_offset)
            flat = terms[0] if terms else tir.IntImm(0)
            for t in terms[1:]:
                flat = tir.BinOp("add", flat, t)
            indices = (flat,)
        elif len(indices) != len(buffer.shape):
            raise self.error(f"buffer `{buffer.name}` has {len(buffer.shape)} dimensions, "
                             f"accessed with {len(indices)} indices")
        if not indices:
            return "()", 1
        codes, lanes = [], 1
        for i in indices:
            v = self.expr(i)
            if v.dt.lanes > 1:
                lanes = max(lanes, v.dt.lanes)
                codes.append(f"vcheck({v.code}, {buffer.name!r})")
                continue
            code = self.norm(v)
            if not v.in_range or v.lo < 0:
                t = self.fresh("t")
                code = f"({t} if ({t} := {code}) >= 0 else oob({t}, {buffer.name!r}))"
            codes.append(code)
        return ", ".join(codes), lanes

    def declare_array(self, buffer: tir.Buffer, code: str) -> str:
        """Bind `buffer` to the NumPy array computed by `code` (nd mode)."""
        name = self.pyname("b_", buffer.name)
        self.emit(f"{name} = {code}")
        self.bufs[buffer] = _Buf(buffer, "nd", name)
        return name

    def provide_storage(self, data: tir.Var, name: str, flat: bool, owner: tir.Buffer | None = None) -> None:
        """`data` now points at array `name`: buffers aliasing it get their views here."""
        if data in self.shared_data and not flat:
            flat_name = self.pyname("d_", data.name)
            self.emit(f"{flat_name} = flat({name}, {data.name!r})")
            name, flat = flat_name, True
        self.storage[data] = (name, flat)
        for other in self.implicit.get(data, ()):
            if other is not owner and other not in self.bufs:
                self.declare_view(other)

    def declare_view(self, buffer: tir.Buffer) -> None:
        """A buffer over the storage of its data pointer: nd (a reshaped slice) without
        strides, flat (indexed by elem_offset + sum(index * stride)) with them."""
        storage, flat = self.storage[buffer.data]
        if not flat:
            name = self.pyname("d_", buffer.data.name)
            self.emit(f"{name} = flat({storage}, {buffer.name!r})")
            storage = name
        name = self.pyname("b_", buffer.name)
        dt = self.type_name(_dtype(buffer.dtype))
        if buffer.strides:
            self.emit(f"{name} = view({storage}, 0, ({storage}.size,), {dt}, {buffer.name!r})")
            self.bufs[buffer] = _Buf(buffer, "flat", name)
            return
        offset = self.value(buffer.elem_offset) if buffer.elem_offset is not None else "0"
        self.emit(f"{name} = view({storage}, {offset}, {self.shape_code(buffer)}, {dt}, {buffer.name!r})")
        self.bufs[buffer] = _Buf(buffer, "nd", name)

    def shape_code(self, buffer: tir.Buffer) -> str:
        dims = [self.value(d) for d in buffer.shape]
        return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"

    def allocate(self, buffer: tir.Buffer) -> None:
        """A fresh zero-filled array for `buffer` (alloc_buffers, a DeclBuffer of new memory)."""
        name = self.declare_array(buffer, f"zeros({self.shape_code(buffer)}, {self.type_name(_dtype(buffer.dtype))})")
        self.provide_storage(buffer.data, name, flat=False, owner=buffer)

    def bind_dims(self, array: str, buffer: tir.Buffer, what: str, deferred: list, shape: bool = True) -> None:
        """Bind the still unbound variables among `buffer`'s shape, strides and elem_offset
        from NumPy array `array`; the other entries are checked later (`deferred`)."""

        def bind_or_check(expr, actual: str, label: str, guard: str | None = None) -> None:
            if isinstance(expr, tir.Var) and expr not in self.env:
                name, _ = self.bind(expr, 0, _dtype(expr.dtype).hi)
                self.emit(f"{name} = {actual}")
            else:
                deferred.append((expr, actual, f"{what}, {label}", guard))

        if shape:
            for i, d in enumerate(buffer.shape):
                bind_or_check(d, f"{array}.shape[{i}]", f"dimension {i}")
        itemsize = _dtype(buffer.dtype).np.itemsize
        for i, s in enumerate(buffer.strides):  # a stride only matters along a dimension longer than 1
            bind_or_check(s, f"{array}.strides[{i}] // {itemsize}", f"stride {i}", f"{array}.shape[{i}] > 1")
        if isinstance(buffer.elem_offset, tir.Var) and buffer.elem_offset not in self.env:
            name, _ = self.bind(buffer.elem_offset, 0, 0)
            self.emit(f"{name} = 0")

    def check_deferred(self, deferred: list) -> None:
        for expr, actual, label, guard in deferred:
            expected = self.value(expr)
            cond = f"{actual} != {expected}" if guard is None else f"{guard} and {actual} != {expected}"
            self.emit(f"if {cond}: mismatch({label!r}, {expected}, {actual})")

    # ------------------------------------------------------------------ statements

    def stmt(self, s: tir.Stmt) -> None:
        # Statements scoped over "the rest of the block" (LetStmt, AttrStmt, AssertStmt,
        # Allocate, DeclBuffer) nest deeply in lowered code: they are entered in a loop.
        exits = []
        while True:
            enter = getattr(self, "enter_" + type(s).__name__, None)
            if enter is None:
                break
            s, leave = enter(s)
            exits.append(leave)
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise self.error(f"cannot run {type(s).__name__}")
        method(s)
        for leave in reversed(exits):
            leave()

    def block(self, s: tir.Stmt | None) -> None:
        """An indented suite."""
        self.indent += 1
        start = len(self.lines)
        if s is not None:
            self.stmt(s)
        if len(self.lines) == start:
            self.emit("pass")
        self.indent -= 1

    def s_SeqStmt(self, s: tir.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_BufferStore(self, s: tir.BufferStore) -> None:
        b = self.buffer(s.buffer)
        value = self.value(s.value)
        index, _ = self.index(b, s.indices)
        self.emit(f"{b.name}[{index}] = {value}")

    def s_For(self, s: tir.For) -> None:
        if self.loop_depth >= _MAX_LOOP_NESTING:
            self.subfunction(s)
            return
        lo, ext = self.expr(s.min), self.expr(s.extent)
        lo_code, ext_code = self.norm(lo), self.norm(ext)
        end = f"{lo_code} + {ext_code}" if lo_code != "0" else ext_code
        rng = f"range({ext_code})" if lo_code == "0" else f"range({lo_code}, {end})"
        vlo = vhi = None
        if lo.in_range and ext.in_range:
            vlo, vhi = lo.lo, max(lo.lo, lo.hi + ext.hi - 1)
        name, prev = self.bind(s.loop_var, vlo, vhi)
        saved, self.ctx = self.ctx, f"{self.ctx}, loop `{s.loop_var.name}`"
        self.emit(f"for {name} in {rng}:")
        self.loop_depth += 1
        self.block(s.body)
        self.loop_depth -= 1
        self.ctx = saved
        self.unbind(s.loop_var, prev)

    def s_While(self, s: tir.While) -> None:
        if self.loop_depth >= _MAX_LOOP_NESTING:
            self.subfunction(s)
            return
        self.emit(f"while {self.lazily(s.condition)}:")
        self.loop_depth += 1
        self.block(s.body)
        self.loop_depth -= 1

    def subfunction(self, s: tir.Stmt) -> None:
        """Run `s` in a nested function (CPython limits how many loops nest in one)."""
        name = self.fresh("_nest")
        self.emit(f"def {name}():")
        self.indent += 1
        depth, self.loop_depth = self.loop_depth, 0
        self.stmt(s)
        self.emit("return NORET")
        self.loop_depth = depth
        self.indent -= 1
        r = self.fresh("r")
        self.emit(f"{r} = {name}()")
        self.emit(f"if {r} is not NORET: return {r}")

    def s_IfThenElse(self, s: tir.IfThenElse) -> None:
        self.emit(f"if {self.value(s.condition)}:")
        self.block(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.block(s.else_case)

    def s_Evaluate(self, s: tir.Evaluate) -> None:
        if isinstance(s.value, (tir.IntImm, tir.FloatImm, tir.StringImm, tir.Var)):
            return
        self.emit(self.value(s.value))

    def s_Return(self, s: tir.Return) -> None:
        self.emit(f"return {self.value(s.value)}")

    def enter_LetStmt(self, s: tir.LetStmt):
        v = self.expr(s.value)
        name, prev = self.bind(s.var, v.lo, v.hi)
        self.emit(f"{name} = {self.norm(v)}")
        return s.body, lambda: self.unbind(s.var, prev)

    def enter_AttrStmt(self, s: tir.AttrStmt):
        return s.body, _nothing

    def enter_AssertStmt(self, s: tir.AssertStmt):
        cond = self.value(s.condition)
        parts = [p.value if isinstance(p, tir.StringImm) else p for p in s.message_parts]
        codes = [repr(p) if isinstance(p, str) else self.lazily(p) for p in parts]
        self.emit(f"if not {cond}:")
        self.indent += 1
        self.emit(f"assert_fail({s.error_kind!r}, [{', '.join(codes)}])")
        self.indent -= 1
        return s.body, _nothing

    def enter_Allocate(self, s: tir.Allocate):
        saved = dict(self.bufs), dict(self.storage)
        size = " * ".join(f"({self.value(x)})" for x in s.extents) or "1"
        name = self.pyname("d_", s.buffer_var.name)
        self.emit(f"{name} = zeros({size}, {self.type_name(_dtype(s.dtype))})")
        self.provide_storage(s.buffer_var, name, flat=True)
        return s.body, lambda: self.restore(saved)

    def enter_DeclBuffer(self, s: tir.DeclBuffer):
        saved = dict(self.bufs), dict(self.storage)
        data = s.buffer.data
        if data in self.storage:
            self.declare_view(s.buffer)
        elif not isinstance(data, tir.Var):  # data given by an expression (TVM 0.27): an array
            name = self.pyname("d_", s.buffer.name)
            self.emit(f"{name} = flat({self.value(data)}, {s.buffer.name!r})")
            self.provide_storage(data, name, flat=True)
            self.declare_view(s.buffer)
        else:  # new memory
            self.allocate(s.buffer)
        return s.body, lambda: self.restore(saved)

    def restore(self, saved) -> None:
        self.bufs, self.storage = saved

    def s_SBlockRealize(self, s: tir.SBlockRealize) -> None:
        block = s.block
        if len(s.iter_values) != len(block.iter_vars):
            raise self.error(f"block `{block.name}` has {len(block.iter_vars)} iterators but "
                             f"{len(s.iter_values)} values")
        saved_ctx, self.ctx = self.ctx, f"`{self.fname}`, block `{block.name}`"
        saved = dict(self.bufs), dict(self.storage)
        pred = s.predicate
        guarded = not (isinstance(pred, tir.IntImm) and pred.value)
        if guarded:  # a false predicate skips the block
            self.emit(f"if {self.value(pred)}:")
            self.indent += 1
        start = len(self.lines)
        bound = []
        for iv, value in zip(block.iter_vars, s.iter_values):
            v = self.expr(value)
            code = self.norm(v)
            if any(code == entry[0] for entry in self.env.values()):  # a variable: alias it
                bound.append((iv.var, self.bind(iv.var, v.lo, v.hi, name=code)[1]))
            else:
                name, prev = self.bind(iv.var, v.lo, v.hi)
                self.emit(f"{name} = {code}")
                bound.append((iv.var, prev))
        for buf in block.alloc_buffers:
            self.allocate(buf)
        deferred: list = []
        for m in block.match_buffers:
            self.match_buffer(m, deferred)
        self.check_deferred(deferred)
        if block.init is not None:  # T.init(): at the first iteration of every reduction iterator
            conds = [f"{self.env[iv.var][0]} == {self.value(iv.dom.min) if iv.dom is not None else '0'}"
                     for iv in block.iter_vars if iv.iter_type == tir.COMM_REDUCE]
            if conds:
                self.emit(f"if {' and '.join(conds)}:")
                self.block(block.init)
            else:
                self.stmt(block.init)
        self.stmt(block.body)
        for var, prev in reversed(bound):
            self.unbind(var, prev)
        if guarded:
            if len(self.lines) == start:
                self.emit("pass")
            self.indent -= 1
        self.bufs, self.storage = saved
        self.ctx = saved_ctx

    def s_SBlock(self, s: tir.SBlock) -> None:  # a block outside a realize: no iterators to bind
        self.s_SBlockRealize(tir.SBlockRealize([], tir.IntImm(1, "bool"), s))

    def match_buffer(self, m: tir.MatchBufferRegion, deferred: list) -> None:
        """`T.match_buffer(A[region], shape)`: a NumPy view of the region."""
        src = self.buffer(m.source.buffer)
        buf = m.buffer
        if src.mode != "nd":
            raise self.error(f"match_buffer `{buf.name}` views buffer `{src.buffer.name}`, which has "
                             "explicit strides")
        if len(m.source.region) != len(src.buffer.shape):
            raise self.error(f"region of buffer `{src.buffer.name}` has {len(m.source.region)} ranges, "
                             f"the buffer has {len(src.buffer.shape)} dimensions")
        slices = []
        for r in m.source.region:
            lo = self.value(r.min)
            slices.append(f"{lo}:{lo} + {self.value(r.extent)}")
        region = self.fresh("region")
        self.emit(f"{region} = {src.name}[{', '.join(slices)}]")
        same_rank = len(buf.shape) == len(m.source.region)
        dims = []
        for i, d in enumerate(buf.shape):  # the buffer's shape variables come from the region
            if isinstance(d, tir.Var) and d not in self.env:
                name, _ = self.bind(d, 0, _dtype(d.dtype).hi)
                self.emit(f"{name} = {region}.shape[{i}]" if same_rank else f"{name} = {region}.size")
                dims.append(name)
            else:
                dims.append(self.value(d))
        shape = f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"
        name = self.declare_array(buf, f"match({region}, {shape}, {buf.name!r})")
        self.bind_dims(name, buf, f"match_buffer `{buf.name}`", deferred, shape=False)
        self.provide_storage(buf.data, name, flat=False, owner=buf)

    # ------------------------------------------------------------------ the function

    def function(self) -> str:
        func = self.func
        self.emit("nargs = len(args)")
        self.emit(f"if nargs != {len(func.params)}: mismatch('number of arguments', {len(func.params)}, nargs)")
        buffers = []
        for i, p in enumerate(func.params):  # scalars first: buffer shapes may use them
            buf = func.buffer_of(p)
            if buf is not None:
                buffers.append((i, p, buf))
                continue
            dt = _dtype(p.dtype)
            name, _ = self.bind(p)
            if dt.is_int:
                self.emit(f"{name} = int_arg(args[{i}], {p.name!r}, {dt.lo}, {dt.hi})")
            elif dt.kind == "float" and dt.lanes == 1:
                self.emit(f"{name} = float_arg(args[{i}], {p.name!r}, {self.type_name(dt)})")
            elif dt.kind == "bool":
                self.emit(f"{name} = bool(args[{i}])")
            else:
                self.emit(f"{name} = args[{i}]")
                self.storage[p] = (name, False)
        deferred: list = []
        for i, p, buf in buffers:
            name = self.declare_array(buf, f"check_array(args[{i}], {buf.name!r}, {len(buf.shape)}, {buf.dtype!r})")
            self.bind(p, name=name)
            self.storage[p] = (name, False)
            self.bind_dims(name, buf, f"buffer `{buf.name}`", deferred)
        self.check_deferred(deferred)
        for _, _, buf in buffers:
            self.provide_storage(buf.data, self.bufs[buf].name, flat=False, owner=buf)
        self.stmt(func.body)
        self.emit("return None")
        return "\n".join(["def prim_func(args, mod):", *self.lines]) + "\n"


def _is_const(e, value) -> bool:
    return isinstance(e, tir.IntImm) and e.value == value


def _interval(op: str, a: _V, b: _V, dt: _DType):
    """The exact range of `a op b` on integers (operands wrapped unless op is a ring op),
    or (None, None) when unknown. Wrapped operands lie in the dtype's range."""
    if op in _RING_OPS:
        if a.lo is None or b.lo is None:
            return None, None
        if op == "add":
            return a.lo + b.lo, a.hi + b.hi
        if op == "sub":
            return a.lo - b.hi, a.hi - b.lo
        corners = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
        return min(corners), max(corners)
    alo, ahi = (a.lo, a.hi) if a.in_range else (a.dt.lo, a.dt.hi)
    blo, bhi = (b.lo, b.hi) if b.in_range else (b.dt.lo, b.dt.hi)
    if op in ("min", "max"):
        f = min if op == "min" else max
        return f(alo, blo), f(ahi, bhi)
    if op in ("floordiv", "div", "truncdiv"):
        if blo > 0:  # dividing by a positive number: monotonic in a, no overflow
            if op == "floordiv":
                return min(alo // blo, alo // bhi), max(ahi // blo, ahi // bhi)
            if alo >= 0:
                return alo // bhi, ahi // blo
            return -(-alo // blo), ahi // blo if ahi >= 0 else -(-ahi // bhi)
        return (None, None) if blo <= -1 <= bhi and alo <= dt.lo else (dt.lo, dt.hi)
    if op == "floormod":
        if blo > 0:
            if alo >= 0 and ahi < blo:
                return alo, ahi
            return 0, bhi - 1
        return dt.lo, dt.hi
    if op == "truncmod":
        if blo > 0:
            if alo >= 0:
                return (alo, ahi) if ahi < blo else (0, min(ahi, bhi - 1))
            return -(bhi - 1), bhi - 1
        return dt.lo, dt.hi
    return dt.lo, dt.hi

