"""Relax: TVM's graph-level IR with struct info (`R.function` in TVMScript).

A Relax `Function` body is a `SeqExpr`: binding blocks, then a result expression.

    Function(params: [Var], body: SeqExpr, ret_struct_info)
      SeqExpr(blocks=[DataflowBlock([VarBinding(lv, Call(relax.add, …)), …]),
                      BindingBlock([MatchCast(v, value, sinfo)])],
              body=gv)

Every expression has a `struct_info` (the Relax analogue of a type): a variable's is
declared; any other expression's is deduced when it is built (`irtool.relax.sinfo`).
Tensor shapes are tuples whose dimensions are Python ints or symbolic TIR expressions
(`irtool.ir.tir.Var` of dtype int64), as in TVM's `ShapeExpr`.

Operators are the interned `Op`s of `irtool.ir.expr` under their Relax names
(`relax.add`); global references are the module's `GlobalVar`s.
"""

from __future__ import annotations

from .node import Node
from .tir import PrimExpr

# ----------------------------------------------------------------------------- struct info


class StructInfo(Node):
    __slots__ = ()


class ObjectStructInfo(StructInfo):
    __slots__ = ()

    def __init__(self, span=None) -> None:
        self.span = span


class PrimStructInfo(StructInfo):
    """`R.Prim("int64")`, or `R.Prim(value=n)` when the value is known."""

    __slots__ = ("dtype", "value")
    fields = ("dtype", "value")

    def __init__(self, dtype: str, value: PrimExpr | int | None = None, span=None) -> None:
        self.dtype = dtype
        self.value = value
        self.span = span


class ShapeStructInfo(StructInfo):
    """`R.Shape([1, n])` (values known) or `R.Shape(ndim=2)`; ndim -1 is unknown."""

    __slots__ = ("values", "ndim")
    fields = ("values", "ndim")

    def __init__(self, values=None, ndim: int = -1, span=None) -> None:
        self.values = tuple(values) if values is not None else None
        self.ndim = len(self.values) if self.values is not None else ndim
        self.span = span


class TensorStructInfo(StructInfo):
    """`R.Tensor((1, n), dtype="float32")`; `shape` is a tuple of dims, a Relax Var of
    shape struct info, or None (then only `ndim` is known; -1 for unknown). `dtype` ""
    is unknown (TVM's void)."""

    __slots__ = ("shape", "dtype", "ndim", "vdevice")
    fields = ("shape", "dtype", "ndim", "vdevice")

    def __init__(self, shape=None, dtype: str = "", ndim: int = -1, vdevice=None, span=None) -> None:
        if isinstance(shape, (list, tuple)):
            shape = tuple(shape)
            ndim = len(shape)
        elif isinstance(shape, Var):
            sinfo = shape.struct_info
            ndim = sinfo.ndim if isinstance(sinfo, ShapeStructInfo) else ndim
        self.shape = shape
        self.dtype = dtype
        self.ndim = ndim
        self.vdevice = vdevice
        self.span = span

    @property
    def static_shape(self) -> tuple | None:
        """The shape when every dimension is a known integer."""
        if isinstance(self.shape, tuple) and all(isinstance(d, int) for d in self.shape):
            return self.shape
        return None


class TupleStructInfo(StructInfo):
    __slots__ = ("fields_",)
    fields = ("fields_",)

    def __init__(self, fields, span=None) -> None:
        self.fields_ = tuple(fields)
        self.span = span

    def __iter__(self):
        return iter(self.fields_)

    def __len__(self) -> int:
        return len(self.fields_)

    def __getitem__(self, i: int) -> StructInfo:
        return self.fields_[i]


class FuncStructInfo(StructInfo):
    """`R.Callable((params…), ret, purity)`; params None means any arguments."""

    __slots__ = ("params", "ret", "purity")
    fields = ("params", "ret", "purity")

    def __init__(self, params, ret: StructInfo, purity: bool = True, span=None) -> None:
        self.params = tuple(params) if params is not None else None
        self.ret = ret
        self.purity = purity
        self.span = span


# ----------------------------------------------------------------------------- expressions


class Expr(Node):
    """`struct_info` is declared for variables and deduced for everything else."""

    __slots__ = ("struct_info",)


class Var(Expr):
    __slots__ = ("name_hint",)
    fields = ("struct_info",)

    def __init__(self, name_hint: str, struct_info: StructInfo | None = None, span=None) -> None:
        self.name_hint = name_hint
        self.struct_info = struct_info
        self.span = span

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name_hint})"


class DataflowVar(Var):
    """A variable local to a dataflow block (not visible after it unless output)."""

    __slots__ = ()


class Constant(Expr):
    """A tensor constant; `data` is a NumPy array, or None for a `metadata[…]` reference
    whose file did not carry the metadata (then `struct_info` still says shape and dtype
    when it is known)."""

    __slots__ = ("data", "meta_index")
    fields = ("data",)

    def __init__(self, data, struct_info: StructInfo | None = None, meta_index: int | None = None,
                 span=None) -> None:
        self.data = data
        if struct_info is None and data is not None:
            struct_info = TensorStructInfo(tuple(int(d) for d in data.shape), str(data.dtype))
        self.struct_info = struct_info
        self.meta_index = meta_index
        self.span = span


class ShapeExpr(Expr):
    __slots__ = ("values",)
    fields = ("values",)

    def __init__(self, values, span=None) -> None:
        self.values = tuple(values)
        self.struct_info = ShapeStructInfo(self.values)
        self.span = span


class PrimValue(Expr):
    __slots__ = ("value",)
    fields = ("value",)

    def __init__(self, value: PrimExpr, span=None) -> None:
        self.value = value
        self.struct_info = PrimStructInfo(value.dtype, value)
        self.span = span


class StringImm(Expr):
    __slots__ = ("value",)
    fields = ("value",)

    def __init__(self, value: str, span=None) -> None:
        self.value = value
        self.struct_info = ObjectStructInfo()
        self.span = span


class DataTypeImm(StringImm):
    """`R.dtype("float32")`: a dtype as a value (a string that names a dtype)."""

    __slots__ = ()


class ExternFunc(Expr):
    """`R.ExternFunc("name")`: a packed function looked up by name at run time."""

    __slots__ = ("global_symbol",)
    fields = ("global_symbol",)

    def __init__(self, global_symbol: str, struct_info: StructInfo | None = None, span=None) -> None:
        self.global_symbol = global_symbol
        self.struct_info = struct_info or FuncStructInfo(None, ObjectStructInfo(), purity=False)
        self.span = span


class Tuple(Expr):
    __slots__ = ("fields_",)
    fields = ("fields_",)

    def __init__(self, fields, span=None) -> None:
        self.fields_ = tuple(fields)
        self.struct_info = None
        self.span = span


class TupleGetItem(Expr):
    __slots__ = ("tuple_value", "index")
    fields = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int, span=None) -> None:
        self.tuple_value = tuple_value
        self.index = index
        self.struct_info = None
        self.span = span


class Call(Expr):
    """`op(args…, attrs)`; `sinfo_args` are the struct-info arguments of calls like
    `R.call_tir(…, out_ty=…)`. `op` is an `Op`, a `GlobalVar`, a `Var` or an `ExternFunc`."""

    __slots__ = ("op", "args", "attrs", "sinfo_args")
    fields = ("op", "args", "attrs", "sinfo_args")

    def __init__(self, op, args, attrs=None, sinfo_args=(), span=None) -> None:
        self.op = op
        self.args = tuple(args)
        self.attrs = attrs
        self.sinfo_args = tuple(sinfo_args)
        self.struct_info = None
        self.span = span


class If(Expr):
    __slots__ = ("cond", "true_branch", "false_branch")
    fields = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: Expr, true_branch: SeqExpr, false_branch: SeqExpr, span=None) -> None:
        self.cond = cond
        self.true_branch = true_branch
        self.false_branch = false_branch
        self.struct_info = None
        self.span = span


class VarBinding(Node):
    __slots__ = ("var", "value")
    fields = ("var", "value")

    def __init__(self, var: Var, value: Expr, span=None) -> None:
        self.var = var
        self.value = value
        self.span = span


class MatchCast(Node):
    """`v = R.match_cast(value, sinfo)`: checks value against sinfo at run time and binds
    the symbolic variables sinfo introduces."""

    __slots__ = ("var", "value", "struct_info")
    fields = ("var", "value", "struct_info")

    def __init__(self, var: Var, value: Expr, struct_info: StructInfo, span=None) -> None:
        self.var = var
        self.value = value
        self.struct_info = struct_info
        self.span = span


class BindingBlock(Node):
    __slots__ = ("bindings",)
    fields = ("bindings",)

    def __init__(self, bindings, span=None) -> None:
        self.bindings = tuple(bindings)
        self.span = span


class DataflowBlock(BindingBlock):
    __slots__ = ()


class SeqExpr(Expr):
    __slots__ = ("blocks", "body")
    fields = ("blocks", "body")

    def __init__(self, blocks, body: Expr, span=None) -> None:
        self.blocks = tuple(blocks)
        self.body = body
        self.struct_info = None
        self.span = span


class Function(Expr):
    """`attrs` is an ordered tuple of (key, value) pairs (`R.func_attr`)."""

    __slots__ = ("params", "body", "ret_struct_info", "is_pure", "attrs", "private")
    fields = ("params", "ret_struct_info", "is_pure", "attrs", "private", "body")

    def __init__(self, params, body: SeqExpr, ret_struct_info: StructInfo | None = None,
                 is_pure: bool = True, attrs=(), private: bool = False, span=None) -> None:
        self.params = tuple(params)
        self.body = body
        self.ret_struct_info = ret_struct_info
        self.is_pure = is_pure
        self.attrs = tuple(attrs)
        self.private = private
        self.struct_info = FuncStructInfo([p.struct_info for p in self.params],
                                          ret_struct_info or ObjectStructInfo(), is_pure)
        self.span = span

    def attr(self, key: str, default=None):
        return dict(self.attrs).get(key, default)

    @property
    def is_primitive(self) -> bool:
        return bool(self.attr("Primitive", False))


class MetadataRef(Node):
    """`metadata["ffi.Tensor"][i]` read from a file without its metadata section: an
    object irtool cannot see but must print back (e.g. in a function attribute)."""

    __slots__ = ("key", "index")
    fields = ("key", "index")

    def __init__(self, key: str, index: int, span=None) -> None:
        self.key = key
        self.index = index
        self.span = span


def merge_blocks(blocks) -> list:
    """TVM's NormalizeBlocks (the last step): empty blocks go, neighbouring blocks of the
    same kind merge."""
    out: list = []
    for block in blocks:
        if not block.bindings:
            continue
        if out and type(out[-1]) is type(block):
            out[-1] = type(block)(out[-1].bindings + block.bindings, out[-1].span)
        else:
            out.append(block)
    return out


def struct_info_dims(sinfo):
    """The size expressions a struct info mentions: tensor and shape dimensions, prim
    values, through tuples."""
    if isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.shape, tuple):
        yield from sinfo.shape
    elif isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        yield from sinfo.values
    elif isinstance(sinfo, TupleStructInfo):
        for f in sinfo.fields_:
            yield from struct_info_dims(f)
    elif isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        yield sinfo.value

