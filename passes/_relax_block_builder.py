"""The part of TVM's relax.BlockBuilder that relay-to-relax uses (see relay_to_relax.py)."""

from __future__ import annotations

from irtool.analysis import struct_info as si
from irtool.ir import expr as relay
from irtool.ir import relax as rx
from irtool.ir.expr import Op
from irtool.ir.relax_visitor import deduce_struct_info

_LEAVES = (rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.ExternFunc, Op, relay.GlobalVar)


class _Unsupported(Exception):
    """A Relay call Relax cannot express; becomes a diagnostic at the call."""


class BlockBuilder:
    """The part of TVM's relax.BlockBuilder the translator uses: the bindings of the current
    block (dataflow or not), `emit` / `emit_output` with TVM's normalisation (nested calls and
    projections in arguments are bound first, left to right) and TVM's names, one counter per
    function: lv, lv1, ... for dataflow variables; gv, gv1, ... for outputs and for bindings
    outside dataflow blocks (TVM's CreateVar)."""

    def __init__(self) -> None:
        self.bindings: list[rx.VarBinding] = []
        self.dataflow = True
        self.signatures: dict = {}  # global name -> FuncStructInfo, for calls between functions
        self.values: dict[int, object] = {}  # id(bound variable) -> its value, for shape arithmetic
        self._used: dict[str, int] = {}

    def _name(self, base: str) -> str:
        n = self._used.get(base, 0)
        self._used[base] = n + 1
        return base if n == 0 else f"{base}{n}"

    def _deduce(self, e):
        if isinstance(e, rx.Call) and isinstance(e.op, relay.GlobalVar) and e.op.name_hint in self.signatures:
            try:  # a call of another translated function: its signature
                return si.deduce_func_call(self.signatures[e.op.name_hint], [a.struct_info for a in e.args])
            except si.StructInfoError as err:
                raise _Unsupported(f"@{e.op.name_hint}: {err}") from None
        sinfo = deduce_struct_info(e, None)
        if sinfo is None:
            try:  # ask again for the message
                si.deduce_call(e.op.name, [a.struct_info for a in e.args], e.attrs, list(e.args))
            except si.StructInfoError as err:
                raise _Unsupported(f"R.{e.op.name[len('relax.'):]}: {err}") from None
            raise _Unsupported("cannot deduce the struct info of the Relax expression")
        return sinfo

    def normalize_arg(self, e):
        if isinstance(e, _LEAVES):
            return e
        if isinstance(e, rx.Tuple):
            return self.tuple_of([self.normalize_arg(f) for f in e.fields_])
        return self.emit(e)

    def tuple_of(self, fields) -> rx.Tuple:
        t = rx.Tuple(fields)
        t.struct_info = rx.TupleStructInfo([f.struct_info for f in fields])
        return t

    def normalize(self, e):
        """Bind what must be bound inside `e` and give `e` its struct info."""
        if isinstance(e, (*_LEAVES, rx.If)):  # an If comes with its struct info (the branches' LCA)
            return e
        if isinstance(e, rx.Call):
            e = rx.Call(e.op, [self.normalize_arg(a) for a in e.args], e.attrs, e.sinfo_args)
        elif isinstance(e, rx.TupleGetItem):
            e = rx.TupleGetItem(self.normalize_arg(e.tuple_value), e.index)
        elif isinstance(e, rx.Tuple):
            return self.normalize_arg(e)
        e.struct_info = self._deduce(e)
        return e

    def emit(self, e, output: bool = False) -> rx.Var:
        e = self.normalize(e)
        if output or not self.dataflow:
            var = rx.Var(self._name("gv"), e.struct_info)
        else:
            var = rx.DataflowVar(self._name("lv"), e.struct_info)
        self.bindings.append(rx.VarBinding(var, e))
        self.values[id(var)] = e
        return var

    def match_cast(self, value, sinfo) -> rx.Var:
        """`lv = R.match_cast(value, sinfo)`: binds the symbolic sizes `sinfo` introduces."""
        value = self.normalize_arg(value)
        var = (rx.DataflowVar if self.dataflow else rx.Var)(self._name("lv" if self.dataflow else "gv"), sinfo)
        self.bindings.append(rx.MatchCast(var, value, sinfo))
        return var

    def take_block(self) -> rx.BindingBlock | None:
        """The bindings emitted since the last call, as a block of the current kind (None if
        there are none)."""
        bindings, self.bindings = self.bindings, []
        if not bindings:
            return None
        return rx.DataflowBlock(bindings) if self.dataflow else rx.BindingBlock(bindings)
