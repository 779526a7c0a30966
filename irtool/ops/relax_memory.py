"""Relax's explicit-memory operators (TVM 0.27's `relax.builtin.*` and `relax.memory.*`),
one line per operator, as CallTIRRewrite and StaticPlanBlockMemory emit them.

    R.builtin.alloc_tensor(shape, dtype, runtime_device_index, storage_scope)   a fresh tensor
    R.memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)    `size` bytes
    R.memory.alloc_tensor(storage, offset, shape, dtype, runtime_device_ind)    a view of them
    R.memory.kill_storage(storage) / R.memory.kill_tensor(tensor)               end of a lifetime

Arguments are written as TVM's Python constructors take them (`R.shape([2, 3])` or a list,
`R.dtype("float32")` or a string, `0` or a PrimValue, `R.str("global")` or a string);
TVM's printer adds `ty_args=(R.Tensor(...),)` to the alloc_tensor CallTIRRewrite makes,
which is kept as the call's struct-info arguments. Struct info is TVM's: the allocators
give `R.Tensor(shape, dtype)` / `R.Any`, the kills nothing (`R.Tuple()`, printed as a
statement). The allocations are pure in TVM's sense (FPurity), the kills are not.

Evaluation (the Relax interpreter): a storage is a `Storage` over one `bytearray`, and a
tensor allocated from it is a NumPy view of its bytes, so tensors planned into the same
storage really alias. With `poison=True` (checking mode) a storage starts as poison, and
a tensor's bytes are poisoned when it is allocated out of a storage and when it is
killed: NaN for floats, 0x5A bytes otherwise. A plan that lets two live tensors share
bytes then changes the results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._util import lazy_import
from ..ir import relax as rx
from ..ir import tir

np = lazy_import("numpy")  # only the interpreter's storage needs it: parsing must not load NumPy

ARG_KINDS = ("shape", "dtype", "prim", "str", "expr")
_REQUIRED = object()


def _tensor_sinfo(shape_index: int, dtype_index: int) -> Callable:
    def deduce(args) -> rx.StructInfo:
        shape, dtype = args[shape_index], args[dtype_index]
        dtype = dtype.value if isinstance(dtype, rx.DataTypeImm) else ""
        if isinstance(shape, rx.ShapeExpr):
            return rx.TensorStructInfo(shape.values, dtype)
        sinfo = shape.struct_info
        if isinstance(sinfo, rx.ShapeStructInfo) and sinfo.values is not None:
            return rx.TensorStructInfo(sinfo.values, dtype)
        return rx.TensorStructInfo(shape if isinstance(shape, rx.Var) else None, dtype,
                                   ndim=getattr(sinfo, "ndim", -1))
    return deduce


def _any(args) -> rx.StructInfo:
    return rx.ObjectStructInfo()


def _void(args) -> rx.StructInfo:
    return rx.TupleStructInfo([])


@dataclass(frozen=True)
class MemoryOp:
    name: str
    args: tuple[tuple[str, str, object], ...]  # (name, kind, Python-API default)
    deduce: Callable
    pure: bool

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(a[0] for a in self.args)


def _op(name: str, args: str, deduce: Callable, pure: bool = True) -> MemoryOp:
    """`args`: "name:kind[=default] ..." (defaults are TVM's Python API's)."""
    spec = []
    for item in args.split():
        head, _, default = item.partition("=")
        arg, kind = head.split(":")
        assert kind in ARG_KINDS, kind
        spec.append((arg, kind, _REQUIRED if not default else (int(default) if default.isdigit() else default)))
    return MemoryOp(name, tuple(spec), deduce, pure)


MEMORY_OPS = {op.name: op for op in (
    _op("relax.builtin.alloc_tensor", "shape:shape dtype:dtype runtime_device_index:prim storage_scope:str=global",
        _tensor_sinfo(0, 1)),
    _op("relax.memory.alloc_storage", "size:shape virtual_device_index:prim storage_scope:str dtype:dtype", _any),
    # `runtime_device_ind`: TVM 0.27's Python name of the argument (what a keyword form must say)
    _op("relax.memory.alloc_tensor", "storage:expr offset:prim shape:shape dtype:dtype runtime_device_ind:prim=0",
        _tensor_sinfo(2, 3)),
    _op("relax.memory.kill_storage", "storage:expr", _void, pure=False),
    _op("relax.memory.kill_tensor", "tensor:expr", _void, pure=False),
)}


def lookup(op_name: str) -> MemoryOp | None:
    return MEMORY_OPS.get(op_name)


def bind_arguments(op: MemoryOp, pos: list, kw: dict) -> list:
    """Positional and keyword values in parameter order, defaults filled in; ValueError
    names a missing or unknown argument."""
    if len(pos) > len(op.args):
        raise ValueError(f"takes at most {len(op.args)} arguments, got {len(pos)}")
    values = list(pos)
    for arg, _, default in op.args[len(pos):]:
        if arg in kw:
            values.append(kw.pop(arg))
        elif default is not _REQUIRED:
            values.append(default)
        else:
            raise ValueError(f"needs argument `{arg}`")
    if kw:
        raise ValueError(f"has no argument `{next(iter(kw))}` (arguments: {', '.join(op.arg_names)})")
    return values


def as_argument(kind: str, value) -> rx.Expr:
    """A Python-API value as the Relax expression TVM's constructor makes of it."""
    if kind == "shape" and isinstance(value, (list, tuple)):
        return rx.ShapeExpr(value)
    if kind == "dtype" and isinstance(value, str) and not isinstance(value, rx.Expr):
        return rx.DataTypeImm(value)
    if kind == "prim" and isinstance(value, int) and not isinstance(value, bool):
        return rx.PrimValue(tir.IntImm(value, "int64"))
    if kind == "prim" and isinstance(value, tir.PrimExpr):
        return rx.PrimValue(value)
    if kind == "str" and isinstance(value, str):
        return rx.StringImm(value)
    if not isinstance(value, rx.Expr):
        raise ValueError(f"cannot use {value!r} as a {kind} argument")
    return value


def deduce(op_name: str, args) -> rx.StructInfo:
    return MEMORY_OPS[op_name].deduce(list(args))


def make_call(op_name: str, args, sinfo_args=()) -> rx.Call:
    """A call of a memory operator with its struct info (arguments as `as_argument` takes them)."""
    op = MEMORY_OPS[op_name]
    from ..ir.expr import Op

    exprs = [as_argument(kind, v) for (_, kind, _), v in zip(op.args, args, strict=True)]
    call = rx.Call(Op.get(op_name), exprs, None, sinfo_args)
    call.struct_info = op.deduce(exprs)
    return call


# ----------------------------------------------------------------------------- evaluation


class Storage:
    """The value of `R.memory.alloc_storage`: `size` bytes that tensors are views of."""

    __slots__ = ("data", "dtype")

    def __init__(self, size: int, dtype: str, poison: bool) -> None:
        self.data = np.zeros(max(int(size), 0), dtype=np.uint8)
        self.dtype = dtype
        if poison:
            self.data[:] = 0x5A

    def view(self, offset: int, shape: tuple, dtype: str) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = count * np.dtype(dtype).itemsize
        if offset < 0 or offset + nbytes > self.data.size:
            raise ValueError(f"a {dtype} tensor of shape {list(shape)} at offset {offset} needs "
                             f"{offset + nbytes} bytes, the storage has {self.data.size}")
        return self.data[offset:offset + nbytes].view(dtype).reshape(shape)


def poison_array(a: np.ndarray) -> None:
    """Overwrite an array (in place) with values no correct program reads."""
    if a.dtype.kind in "fc":
        a[...] = np.nan
    else:
        a.view(np.uint8)[...] = 0x5A


def evaluate(op_name: str, args: list, poison: bool = False):
    """Run a memory operator on interpreter values (shapes as tuples, prims as ints,
    dtypes and scopes as strings)."""
    if op_name == "relax.builtin.alloc_tensor":
        shape, dtype = tuple(int(d) for d in args[0]), args[1]
        out = np.zeros(shape, dtype=dtype)
        if poison:
            poison_array(out)
        return out
    if op_name == "relax.memory.alloc_storage":
        (size,) = tuple(args[0])
        return Storage(size, args[3], poison)
    if op_name == "relax.memory.alloc_tensor":
        storage, offset, shape, dtype = args[0], int(args[1]), tuple(int(d) for d in args[2]), args[3]
        if not isinstance(storage, Storage):
            raise TypeError("the first argument of R.memory.alloc_tensor must be a storage")
        out = storage.view(offset, shape, dtype)
        if poison:
            poison_array(out)
        return out
    if op_name == "relax.memory.kill_tensor":
        if poison and isinstance(args[0], np.ndarray):
            poison_array(args[0])
        return ()
    if op_name == "relax.memory.kill_storage":
        return ()  # the tensors allocated from it keep it alive (TVM's reference counting)
    raise KeyError(op_name)
