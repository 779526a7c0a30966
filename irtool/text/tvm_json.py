"""TVM 0.27's object-graph JSON: the metadata section of `mod.script(show_meta=True)`.

TVMScript printed with `show_meta=True` starts with

    metadata = tvm.ir.load_json(\"\"\"{
      \\"root_index\\": 18,
      \\"nodes\\": [
        {
          \\"type\\": \\"ffi.String\\",
          \\"data\\": \\"ir.GenericConst\\"
        }, ...

and refers to its objects as `metadata["ir.GenericConst"][0]`. The JSON is tvm-ffi's
`ToJSONGraph` (`SaveJSON`) of a `Map<String, Array<Object>>`: `nodes` is a list of
`{"type": key, "data": ...}` whose object fields and container items are node indices, and
`root_index` names the map. tvm-ffi writes the nodes in post order (fields in declaration
order, a node after everything it refers to), sharing one node among equal ints, strings and
None and among references to one object (TVM interns `PrimType`s, so there is one per dtype).
Tensors (`ffi.Tensor`) are base64 of the NDArray binary layout (`tensor_to_bytes`).

The printer puts the JSON text in a triple-quoted Python string through TVM's `StrEscape`
without whitespace escapes: `"` becomes `\\"`, a backslash `\\\\`, and every byte outside
printable ASCII (only UTF-8 bytes of non-ASCII string data, since the JSON writer already
escaped control characters) `\\xHH`. `load_metadata` takes that text as it stands between
the quotes (or plain JSON); `dump_metadata` writes it back byte for byte as TVM does.
(Evaluated as a Python literal, as the printed script itself is, `\\xHH` gives code points,
not bytes, so TVM's own round trip garbles non-ASCII strings; here they are read as UTF-8.)
Objects are written as TVM makes them: a constant's type has fresh int64 `IntImm`s, one
array shared by its `ShapeExpr` and `ShapeType`, no span and no virtual device.

    load_metadata(text)       {"ir.GenericConst": [relax.Constant, ...],
                               "ir.StringImm": [tir.StringImm, ...],
                               "ffi.Tensor": [np.ndarray, ...]}
    dump_metadata(entries)    the text again
    find_metadata_block(src)  where the `metadata = tvm.ir.load_json(...)` statement is

Objects map to irtool's IR: `ir.GenericConst` -> `relax.Constant`, `relax.TensorType` ->
`TensorStructInfo`, `relax.ShapeType` -> `ShapeStructInfo`, `relax.AnyType` ->
`ObjectStructInfo`, `ir.TupleType` -> `TupleStructInfo`, `ir.PrimType` -> `PrimStructInfo`,
`relax.expr.ShapeExpr` -> `relax.ShapeExpr`, `ir.IntImm`/`ir.FloatImm`/`ir.StringImm` -> the
TIR immediates (an int64 `IntImm` inside a shape is a plain int), `ffi.Tensor` -> a NumPy
array, `ffi.Array`/`ffi.List` -> list, `ffi.Map` -> dict, `ffi.Shape` -> tuple, and the
primitive nodes to Python values. Any other type raises `TvmJsonError` naming it.
"""

from __future__ import annotations

import base64
import json
import re
import struct

from ..ir import relax, tir

TVM_VERSION = "0.27.0.post1"


class TvmJsonError(ValueError):
    pass


# ----------------------------------------------------------------------------- tensors

_MAGIC = 0xDD5E40F096B4A13F
_HEADER = struct.Struct("<QQiiiBBH")  # magic, reserved, device type/id, ndim, dtype code/bits/lanes
_CPU = 1

# DLPack type codes as tvm-ffi 0.1 numbers them
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
_ML_DTYPE_CODES = {
    7: "float8_e3m4", 8: "float8_e4m3", 9: "float8_e4m3b11fnuz", 10: "float8_e4m3fn",
    11: "float8_e4m3fnuz", 12: "float8_e5m2", 13: "float8_e5m2fnuz", 14: "float8_e8m0fnu",
    15: "float6_e2m3fn", 16: "float6_e3m2fn", 17: "float4_e2m1fn",
}
_CODE_OF_ML_DTYPE = {name: code for code, name in _ML_DTYPE_CODES.items()}


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes comes with recent NumPy stacks
        return None
    return ml_dtypes


def _numpy_dtype(code: int, bits: int, lanes: int):
    """The NumPy dtype of a DLPack (code, bits, lanes), or TvmJsonError."""
    import numpy as np

    if lanes != 1:
        raise TvmJsonError(f"vector tensors (dtype code {code}, {bits} bits x{lanes}) are not supported")
    if code == _BOOL and bits == 8 or code == _UINT and bits == 1:
        return np.dtype(np.bool_)
    if code in (_INT, _UINT, _FLOAT) and bits in (8, 16, 32, 64) and not (code == _FLOAT and bits == 8):
        return np.dtype({_INT: "<i", _UINT: "<u", _FLOAT: "<f"}[code] + str(bits // 8))
    name = "bfloat16" if code == _BFLOAT and bits == 16 else _ML_DTYPE_CODES.get(code)
    ml = _ml_dtypes() if name else None
    if ml is not None and hasattr(ml, name):
        dtype = np.dtype(getattr(ml, name))
        if dtype.itemsize == (bits + 7) // 8:
            return dtype
    raise TvmJsonError(f"unsupported tensor dtype (DLPack code {code}, {bits} bits)")


def _dlpack_dtype(dtype) -> tuple[int, int, str]:
    """(code, bits, TVM dtype name) of a NumPy dtype."""
    kind, size, name = dtype.kind, dtype.itemsize, dtype.name
    if kind == "b":
        return _BOOL, 8, "bool"
    if kind in "iuf" and size in (1, 2, 4, 8) and not (kind == "f" and size == 1):
        return {"i": _INT, "u": _UINT, "f": _FLOAT}[kind], size * 8, name
    if name == "bfloat16":
        return _BFLOAT, 16, name
    if name in _CODE_OF_ML_DTYPE:
        bits = int(re.match(r"float(\d+)", name).group(1))
        return _CODE_OF_ML_DTYPE[name], bits, name
    raise TvmJsonError(f"cannot store a tensor of dtype {dtype}")


def tensor_dtype(array) -> str:
    """The TVM dtype name of a NumPy array (`bool`, `float32`, `bfloat16`, ...)."""
    import numpy as np

    return _dlpack_dtype(np.asarray(array).dtype)[2]


def tensor_to_bytes(array) -> bytes:
    """TVM's tensor save layout: magic, reserved, device, ndim, dtype, shape, byte size, data
    (little endian, C order, on the CPU)."""
    import numpy as np

    array = np.asarray(array)
    code, bits, _name = _dlpack_dtype(array.dtype)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    data = array.tobytes(order="C")
    return (_HEADER.pack(_MAGIC, 0, _CPU, 0, array.ndim, code, bits, 1)
            + struct.pack(f"<{array.ndim}q", *array.shape) + struct.pack("<q", len(data)) + data)


def tensor_from_bytes(blob: bytes):
    """The NumPy array of a tensor in TVM's save layout (a fresh, writable array)."""
    import numpy as np

    try:
        magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = _HEADER.unpack_from(blob)
        if magic != _MAGIC:
            raise TvmJsonError("not a TVM tensor (bad magic number)")
        if ndim < 0:
            raise TvmJsonError(f"bad tensor rank {ndim}")
        offset = _HEADER.size
        shape = struct.unpack_from(f"<{ndim}q", blob, offset)
        offset += 8 * ndim
        (size,) = struct.unpack_from("<q", blob, offset)
        offset += 8
    except struct.error:
        raise TvmJsonError("truncated tensor") from None
    dtype = _numpy_dtype(code, bits, lanes)
    count = 1
    for d in shape:
        if d < 0:
            raise TvmJsonError(f"bad tensor shape {shape}")
        count *= d
    data = blob[offset:offset + size]
    if len(data) != size or size != count * dtype.itemsize or len(blob) != offset + size:
        raise TvmJsonError(f"tensor data is {len(blob) - offset} bytes; shape {tuple(shape)} of "
                           f"{dtype.name} needs {count * dtype.itemsize}")
    array = np.frombuffer(data, dtype=dtype).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


# ----------------------------------------------------------------------------- printed-string escapes


_NEEDS_HEX = re.compile(r"[^ -~\t\r\n]+")


def escape_printed(json_text: str) -> str:
    """The JSON text as TVM's printer writes it inside `\"\"\"...\"\"\"` (`StrEscape` keeping
    whitespace): `"` and backslash escaped, every other byte outside printable ASCII, tab,
    CR and LF as `\\xHH` (so non-ASCII characters become their UTF-8 bytes)."""
    out = json_text.replace("\\", "\\\\").replace('"', '\\"')
    return _NEEDS_HEX.sub(lambda m: "".join(f"\\x{b:02X}" for b in m.group(0).encode("utf-8")), out)


_PRINTED_ESCAPE = re.compile(r'\\(x[0-9A-Fa-f]{2}|["\\\'ntr])')
_SIMPLE_ESCAPES = {'"': b'"', "\\": b"\\", "'": b"'", "n": b"\n", "t": b"\t", "r": b"\r"}


def unescape_printed(text: str) -> str:
    """Inverse of `escape_printed`. `\\xHH` are bytes of UTF-8 text (as TVM wrote them), not
    Python's code points."""
    if "\\" not in text:
        return text
    out = bytearray()
    pos = 0
    for m in _PRINTED_ESCAPE.finditer(text):
        out += text[pos:m.start()].encode("utf-8")
        esc = m.group(1)
        out += bytes([int(esc[1:], 16)]) if esc[0] == "x" else _SIMPLE_ESCAPES[esc]
        pos = m.end()
    out += text[pos:].encode("utf-8")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TvmJsonError(f"metadata text is not UTF-8 after unescaping ({err})") from None


def _is_printed_form(text: str) -> bool:
    """The printed form's first key is `\\"root_index\\"`; plain JSON's is `"root_index"`."""
    return re.match(r'\s*\{\s*\\"', text) is not None


# ----------------------------------------------------------------------------- locating the block

_BLOCK_START = re.compile(r'^[ \t]*metadata[ \t]*=[ \t]*tvm\.ir\.load_json\(\s*"""', re.M)
_BLOCK_END = re.compile(r'"""\s*\)')


def find_metadata_block(text: str) -> tuple[str | None, int, int]:
    """Where a script's `metadata = tvm.ir.load_json(\"\"\"...\"\"\")` statement is:
    (the text between the triple quotes, as printed; the statement's start offset; its end
    offset, just after the closing parenthesis), or (None, 0, 0) when there is none. Inside the
    quotes every `"` is escaped, so the first `\"\"\"` closes the string."""
    m = _BLOCK_START.search(text)
    if m is None:
        return None, 0, 0
    end = _BLOCK_END.search(text, m.end())
    if end is None:
        return None, 0, 0
    start = m.start() + len(m.group(0)) - len(m.group(0).lstrip(" \t"))
    return text[m.end():end.start()], start, end.end()


# ----------------------------------------------------------------------------- reading


class _StringType:
    """`ir.StringType`, the type of a StringImm (no irtool counterpart)."""

    __slots__ = ()


_STRING_TYPE = _StringType()


def _shape_dims(values) -> tuple:
    dims = []
    for v in values:
        if isinstance(v, tir.IntImm) and v.dtype == "int64":
            dims.append(v.value)
        elif isinstance(v, (int, tir.PrimExpr)) and not isinstance(v, bool):
            dims.append(v)
        else:
            raise TvmJsonError(f"a shape dimension is {type(v).__name__}, not an integer")
    return tuple(dims)


class _Reader:
    def __init__(self, nodes: list) -> None:
        self.nodes = nodes
        self.done: dict[int, object] = {}
        self.active: set[int] = set()

    def node(self, index):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.nodes):
            raise TvmJsonError(f"bad node reference {index!r}")
        if index in self.done:
            return self.done[index]
        if index in self.active:
            raise TvmJsonError(f"node {index} refers to itself")
        self.active.add(index)
        node = self.nodes[index]
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise TvmJsonError(f"node {index} is not a {{\"type\": ..., \"data\": ...}} object")
        kind = node["type"]
        decode = _DECODERS.get(kind)
        if decode is None:
            raise TvmJsonError(f"unsupported node type {kind!r} in the metadata (node {index})")
        try:
            value = decode(self, node.get("data"))
        except TvmJsonError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise TvmJsonError(f"malformed {kind} node {index} ({type(err).__name__}: {err})") from None
        self.active.discard(index)
        self.done[index] = value
        return value

    def typed(self, index, cls, what: str):
        value = self.node(index)
        if not isinstance(value, cls):
            raise TvmJsonError(f"{what} is {type(value).__name__}")
        return value


def _check(value, cls, what: str):
    if not isinstance(value, cls) or (cls is int and isinstance(value, bool)):
        raise TvmJsonError(f"{what} is {value!r}")
    return value


def _dec_prim_type(r: _Reader, data):
    return relax.PrimStructInfo(_check(data["dtype"], str, "a PrimType's dtype"))


def _dec_int_imm(r: _Reader, data):
    ty = r.typed(data["ty"], relax.PrimStructInfo, "an IntImm's type")
    value = r.node(data["value"])
    return tir.IntImm(_check(int(value) if isinstance(value, bool) else value, int, "an IntImm's value"), ty.dtype)


def _dec_float_imm(r: _Reader, data):
    ty = r.typed(data["ty"], relax.PrimStructInfo, "a FloatImm's type")
    return tir.FloatImm(_dec_float(r, data["value"]), ty.dtype)


def _dec_string_imm(r: _Reader, data):
    r.typed(data["ty"], _StringType, "a StringImm's type")
    return tir.StringImm(r.typed(data["value"], str, "a StringImm's value"))


def _dec_shape_type(r: _Reader, data):
    values = r.node(data["values"])
    ndim = _check(data["ndim"], int, "a ShapeType's ndim")
    if values is None:
        return relax.ShapeStructInfo(None, ndim)
    dims = _shape_dims(_check(values, list, "a ShapeType's values"))
    if len(dims) != ndim:
        raise TvmJsonError(f"a ShapeType has {len(dims)} values but ndim {ndim}")
    return relax.ShapeStructInfo(dims)


def _dec_shape_expr(r: _Reader, data):
    r.typed(data["ty"], relax.ShapeStructInfo, "a ShapeExpr's type")
    return relax.ShapeExpr(_shape_dims(r.typed(data["values"], list, "a ShapeExpr's values")))


def _dec_tensor_type(r: _Reader, data):
    shape = r.node(data["shape"])
    dtype = r.typed(data["dtype"], relax.PrimStructInfo, "a TensorType's dtype").dtype
    ndim = _check(data["ndim"], int, "a TensorType's ndim")
    if r.node(data["vdevice"]) is not None:
        raise TvmJsonError("tensor types with a virtual device are not supported")
    if shape is None:
        return relax.TensorStructInfo(None, dtype, ndim)
    if isinstance(shape, relax.ShapeExpr):
        if len(shape.values) != ndim:
            raise TvmJsonError(f"a TensorType's shape has {len(shape.values)} dims but ndim {ndim}")
        return relax.TensorStructInfo(shape.values, dtype)
    raise TvmJsonError(f"a TensorType's shape is {type(shape).__name__}")


def _dec_generic_const(r: _Reader, data):
    sinfo = r.typed(data["ty"], relax.TensorStructInfo, "a constant's type")
    array = r.node(data["value"])
    if not hasattr(array, "dtype") or not hasattr(array, "shape"):
        raise TvmJsonError(f"a constant's value is {type(array).__name__}, not a tensor")
    shape = tuple(int(d) for d in array.shape)
    if sinfo.static_shape is not None and sinfo.static_shape != shape:
        raise TvmJsonError(f"a constant of type shape {sinfo.static_shape} holds a tensor of shape {shape}")
    if sinfo.dtype not in ("", tensor_dtype(array)):
        raise TvmJsonError(f"a constant of type dtype {sinfo.dtype} holds a tensor of dtype {tensor_dtype(array)}")
    return relax.Constant(array, sinfo)


def _dec_tuple_type(r: _Reader, data):
    fields = r.typed(data["fields"], list, "a TupleType's fields")
    for f in fields:
        _check(f, relax.StructInfo, "a TupleType field")
    return relax.TupleStructInfo(fields)


def _dec_map(r: _Reader, data):
    _check(data, list, "a Map's data")
    if len(data) % 2:
        raise TvmJsonError("a Map's data has an odd length")
    return {r.node(data[i]): r.node(data[i + 1]) for i in range(0, len(data), 2)}


def _dec_float(r: _Reader, data):
    if isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return _check(data, float, "a float node's data")


_DECODERS = {
    "None": lambda r, data: None,
    "bool": lambda r, data: _check(data, bool, "a bool node's data"),
    "int": lambda r, data: _check(data, int, "an int node's data"),
    "float": _dec_float,
    "ffi.String": lambda r, data: _check(data, str, "a String node's data"),
    "ffi.Bytes": lambda r, data: base64.b64decode(_check(data, str, "a Bytes node's data"), validate=True),
    "DataType": lambda r, data: _check(data, str, "a DataType node's data"),
    "ffi.Array": lambda r, data: [r.node(i) for i in _check(data, list, "an Array's data")],
    "ffi.List": lambda r, data: [r.node(i) for i in _check(data, list, "a List's data")],
    "ffi.Map": _dec_map,
    "ffi.Shape": lambda r, data: tuple(_check(d, int, "a Shape dim") for d in _check(data, list, "a Shape")),
    "ffi.Tensor": lambda r, data: tensor_from_bytes(
        base64.b64decode(_check(data, str, "a Tensor's data"), validate=True)),
    "ir.PrimType": _dec_prim_type,
    "ir.IntImm": _dec_int_imm,
    "ir.FloatImm": _dec_float_imm,
    "ir.StringType": lambda r, data: _STRING_TYPE,
    "ir.StringImm": _dec_string_imm,
    "ir.TupleType": _dec_tuple_type,
    "relax.AnyType": lambda r, data: relax.ObjectStructInfo(),
    "relax.ShapeType": _dec_shape_type,
    "relax.expr.ShapeExpr": _dec_shape_expr,
    "relax.TensorType": _dec_tensor_type,
    "ir.GenericConst": _dec_generic_const,
}


def load_graph(json_text: str):
    """The object a TVM JSON graph holds (printed or plain form), decoded as described above."""
    text = unescape_printed(json_text) if _is_printed_form(json_text) else json_text
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise TvmJsonError(f"metadata is not valid JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or "root_index" not in doc:
        raise TvmJsonError("not a TVM object graph (expected \"root_index\" and \"nodes\")")
    return _Reader(doc["nodes"]).node(doc["root_index"])


def load_metadata(json_text: str) -> dict[str, list]:
    """The metadata map, key -> list of objects (relax.Constant, tir.StringImm, np.ndarray,
    ...), from the JSON text of a `metadata = tvm.ir.load_json(...)` block, as it appears
    between the triple quotes (plain JSON is accepted too)."""
    root = load_graph(json_text)
    if not isinstance(root, dict):
        raise TvmJsonError(f"the metadata root is {type(root).__name__}, not a map")
    result: dict[str, list] = {}
    for key, value in root.items():
        if not isinstance(key, str) or not isinstance(value, list):
            raise TvmJsonError(f"metadata entry {key!r} is not a string mapped to an array")
        result[key] = value
    return result


# ----------------------------------------------------------------------------- writing


def _json_float(value: float) -> str:
    """tvm-ffi's JSON float: NaN/Infinity, integers with `.0`, else 17 significant digits."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if abs(value) < 2 ** 53 and value == int(value):
        return f"{value:.1f}"
    return f"{value:.17g}"


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                 "\r": "\\r", "\t": "\\t"}
_JSON_SPECIAL = re.compile(r'["\\/\x00-\x1f\x7f]')


def _json_string(value: str) -> str:
    """tvm-ffi's `EscapeString`: quotes, backslash, slash, short escapes, `\\u00XX` for other
    control characters; everything else (non-ASCII too) as is."""
    return '"' + _JSON_SPECIAL.sub(lambda m: _JSON_ESCAPES.get(m.group(0)) or f"\\u{ord(m.group(0)):04x}", value) + '"'


class _Object:
    """A fresh TVM object to write: its type key and its fields in declaration order, each
    (name, "node", value) for a node reference or (name, "inline", JSON value)."""

    __slots__ = ("type", "fields")

    def __init__(self, type_key: str, fields) -> None:
        self.type = type_key
        self.fields = fields


class _Array:
    """A fresh `ffi.Array` that several fields share (as a ShapeExpr and its ShapeType do)."""

    __slots__ = ("items",)

    def __init__(self, items) -> None:
        self.items = items


_SPAN = ("span", "node", None)


def _int_imm(value: int, dtype: str = "int64") -> _Object:
    return _Object("ir.IntImm", [_SPAN, ("ty", "node", relax.PrimStructInfo(dtype)), ("value", "node", int(value))])


def _shape_values(dims) -> _Array:
    values = []
    for d in dims:
        if isinstance(d, tir.IntImm):
            values.append(_int_imm(d.value, d.dtype))
        elif isinstance(d, int) and not isinstance(d, bool):
            values.append(_int_imm(d))
        else:
            raise TvmJsonError(f"cannot write a symbolic shape dimension ({d!r})")
    return _Array(values)


def _shape_expr(dims) -> _Object:
    values = _shape_values(dims)
    ty = _Object("relax.ShapeType", [_SPAN, ("values", "node", values), ("ndim", "inline", len(values.items))])
    return _Object("relax.expr.ShapeExpr", [_SPAN, ("ty", "node", ty), ("values", "node", values)])


def _tensor_type(shape, dtype: str, ndim: int) -> _Object:
    if isinstance(shape, relax.Var):
        raise TvmJsonError("cannot write a tensor type whose shape is a variable")
    return _Object("relax.TensorType", [
        _SPAN,
        ("shape", "node", None if shape is None else _shape_expr(shape)),
        ("dtype", "node", relax.PrimStructInfo(dtype)),
        ("vdevice", "node", None),
        ("ndim", "inline", ndim)])


def _object_of(value) -> _Object:
    """The TVM object (type key and fields) of an irtool value, made as TVM makes it (a
    constant's type from its data: fresh IntImms, one array shared by ShapeExpr and ShapeType)."""
    import numpy as np

    if isinstance(value, relax.Constant):
        if value.data is None:
            raise TvmJsonError("cannot write a constant without data")
        array = np.asarray(value.data)
        dtype = tensor_dtype(array)
        sinfo = value.struct_info
        if isinstance(sinfo, relax.TensorStructInfo) and sinfo.dtype not in ("", dtype):
            raise TvmJsonError(f"a constant of dtype {sinfo.dtype} holds {dtype} data")
        shape = tuple(int(d) for d in array.shape)
        return _Object("ir.GenericConst", [_SPAN, ("ty", "node", _tensor_type(shape, dtype, len(shape))),
                                           ("value", "node", array)])
    if isinstance(value, tir.StringImm):
        return _Object("ir.StringImm", [_SPAN, ("ty", "node", _Object("ir.StringType", [_SPAN])),
                                        ("value", "node", value.value)])
    if isinstance(value, tir.IntImm):
        return _int_imm(value.value, value.dtype)
    if isinstance(value, tir.FloatImm):
        return _Object("ir.FloatImm", [_SPAN, ("ty", "node", relax.PrimStructInfo(value.dtype)),
                                       ("value", "inline", float(value.value))])
    if isinstance(value, relax.ShapeExpr):
        return _shape_expr(value.values)
    if isinstance(value, relax.TensorStructInfo):
        return _tensor_type(value.shape, value.dtype, value.ndim)
    if isinstance(value, relax.ShapeStructInfo):
        values = None if value.values is None else _shape_values(value.values)
        return _Object("relax.ShapeType", [_SPAN, ("values", "node", values), ("ndim", "inline", value.ndim)])
    if isinstance(value, relax.TupleStructInfo):
        return _Object("ir.TupleType", [_SPAN, ("fields", "node", list(value.fields_))])
    if type(value) is relax.ObjectStructInfo:
        return _Object("relax.AnyType", [_SPAN])
    raise TvmJsonError(f"cannot write a {type(value).__module__}.{type(value).__name__} to TVM JSON")


class _Writer:
    """tvm-ffi's `ToJSONGraph`: nodes in post order; one node per equal primitive value (and
    per dtype's PrimType, which TVM interns) and per object."""

    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.by_value: dict[tuple, int] = {}
        self.by_id: dict[int, int] = {}
        self.keep: list = []  # objects indexed by id() stay alive until the end

    def _push(self, type_key: str, *data) -> int:
        self.nodes.append({"type": type_key, "data": data[0]} if data else {"type": type_key})
        return len(self.nodes) - 1

    def _by_value(self, key: tuple, make) -> int:
        index = self.by_value.get(key)
        if index is None:
            index = self.by_value[key] = make()
        return index

    def _fields(self, obj: _Object) -> dict:
        return {name: (self.write(v) if how == "node" else v) for name, how, v in obj.fields}

    def write(self, value) -> int:
        import numpy as np

        if value is None:
            return self._by_value(("None",), lambda: self._push("None"))
        if isinstance(value, (bool, np.bool_)):
            return self._by_value(("bool", bool(value)), lambda: self._push("bool", bool(value)))
        if isinstance(value, (int, np.integer)):
            if not -2**63 <= int(value) < 2**63:
                raise TvmJsonError(f"integer {int(value)} does not fit in TVM's int64")
            return self._by_value(("int", int(value)), lambda: self._push("int", int(value)))
        if isinstance(value, (float, np.floating)):
            v = float(value)
            return self._by_value(("float", repr(v)), lambda: self._push("float", v))
        if isinstance(value, str):
            return self._by_value(("str", value), lambda: self._push("ffi.String", value))
        if isinstance(value, bytes):
            return self._by_value(("bytes", value), lambda: self._push(
                "ffi.Bytes", base64.b64encode(value).decode("ascii")))
        if isinstance(value, relax.PrimStructInfo):
            if value.value is not None:
                raise TvmJsonError("a PrimStructInfo with a known value has no TVM 0.27 type to write")
            return self._by_value(("PrimType", value.dtype), lambda: self._push(
                "ir.PrimType", {"span": self.write(None), "dtype": value.dtype}))
        if isinstance(value, _Object):
            return self._push(value.type, self._fields(value))
        index = self.by_id.get(id(value))
        if index is not None:
            return index
        if isinstance(value, np.ndarray):
            index = self._push("ffi.Tensor", base64.b64encode(tensor_to_bytes(value)).decode("ascii"))
        elif isinstance(value, _Array):
            index = self._push("ffi.Array", [self.write(v) for v in value.items])
        elif isinstance(value, (list, tuple)):
            index = self._push("ffi.Array", [self.write(v) for v in value])
        elif isinstance(value, dict):
            index = self._push("ffi.Map", [self.write(x) for kv in value.items() for x in kv])
        else:
            obj = _object_of(value)
            index = self._push(obj.type, self._fields(obj))
        self.by_id[id(value)] = index
        self.keep.append(value)
        return index


def _stringify(value, indent: int) -> str:
    """tvm-ffi's JSON writer with a 2-space indent: one item per line, `"key": value`,
    an empty container as `[` newline `]`."""
    pad = " " * (indent + 2)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        items = [f"\n{pad}{_stringify(v, indent + 2)}" for v in value]
        return "[" + ",".join(items) + "\n" + " " * indent + "]"
    if isinstance(value, dict):
        items = [f"\n{pad}{_json_string(k)}: {_stringify(v, indent + 2)}" for k, v in value.items()]
        return "{" + ",".join(items) + "\n" + " " * indent + "}"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def dump_graph(value, *, escaped: bool = True, tvm_version: str = TVM_VERSION) -> str:
    """TVM's JSON graph of `value` (the inverse of `load_graph`), 2-space indented as the
    printer writes it; `escaped` for the printed triple-quoted form."""
    w = _Writer()
    root = w.write(value)
    text = _stringify({"root_index": root, "nodes": w.nodes, "metadata": {"tvm_version": tvm_version}}, 0)
    return escape_printed(text) if escaped else text


def dump_metadata(entries: dict[str, list], *, escaped: bool = True, tvm_version: str = TVM_VERSION) -> str:
    """The metadata JSON for `entries` (key -> list of relax.Constant, tir.StringImm,
    np.ndarray, ...), laid out as TVM 0.27 prints it: keys in the dict's order, one node per
    object, 2-space indent, and (`escaped`, the default) escaped for the triple-quoted string
    of `metadata = tvm.ir.load_json(\"\"\"...\"\"\")`. With `escaped=False`, plain JSON for
    `tvm.ir.load_json`."""
    for key, value in entries.items():
        if not isinstance(key, str) or not isinstance(value, (list, tuple)):
            raise TvmJsonError(f"metadata entry {key!r} must be a string mapped to a list")
    return dump_graph({key: list(value) for key, value in entries.items()}, escaped=escaped,
                      tvm_version=tvm_version)
