"""The `#[metadata]` section: tensor constants referenced as `meta[relay.Constant][i]`.

The section is TVM's `SaveJSON` graph of a `Map<String, Array<Object>>` whose tensors are
base64 strings in TVM's NDArray binary layout (`b64ndarrays`), so the data round-trips
bit-exactly and a section printed by TVM v0.19 reads here too:

    {"root": 1, "nodes": [{"type_key": ""},
                          {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
                          {"type_key": "Array", "data": [3]},
                          {"type_key": "relay.Constant", "attrs": {"data": "0", ...}}],
     "b64ndarrays": ["P6G0lvBAXt0AAAAA..."], "attrs": {"tvm_version": "0.19.0"}}
"""

from __future__ import annotations

import base64
import json
import struct

_MAGIC = 0xDD5E40F096B4A13F
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
_CODE_OF_KIND = {"i": _DL_INT, "u": _DL_UINT, "f": _DL_FLOAT, "b": _DL_UINT}


class MetadataError(ValueError):
    pass


def ndarray_to_bytes(array) -> bytes:
    """TVM's `NDArray::Save` layout: magic, reserved, device, ndim, dtype, shape, size, data."""
    import numpy as np

    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy(order="C")
    kind = array.dtype.kind
    if array.dtype.name == "bfloat16":  # ml_dtypes' bfloat16 (kind "V"): DLPack's kDLBfloat
        code, bits = _DL_BFLOAT, 16
        data = array.view("<u2").tobytes()
    elif kind in _CODE_OF_KIND:
        code, bits = _CODE_OF_KIND[kind], 1 if kind == "b" else array.dtype.itemsize * 8
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    else:
        raise MetadataError(f"cannot store a constant of dtype {array.dtype}")
    header = struct.pack("<QQiiiBBH", _MAGIC, 0, 1, 0, array.ndim, code, bits, 1)
    shape = struct.pack(f"<{array.ndim}q", *array.shape)
    return header + shape + struct.pack("<q", len(data)) + data


def ndarray_from_bytes(blob: bytes):
    import numpy as np

    try:
        magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = struct.unpack_from("<QQiiiBBH", blob)
        if magic != _MAGIC:
            raise MetadataError("not a TVM NDArray (bad magic number)")
        offset = struct.calcsize("<QQiiiBBH")
        shape = struct.unpack_from(f"<{ndim}q", blob, offset)
        offset += 8 * ndim
        (size,) = struct.unpack_from("<q", blob, offset)
        offset += 8
    except struct.error:
        raise MetadataError("truncated NDArray in the metadata section") from None
    if lanes != 1:
        raise MetadataError("vector-typed constants are not supported")
    if code == _DL_UINT and bits == 1:
        dtype = np.dtype(np.bool_)
    elif code in (_DL_INT, _DL_UINT, _DL_FLOAT) and bits in (8, 16, 32, 64):
        dtype = np.dtype({_DL_INT: "<i", _DL_UINT: "<u", _DL_FLOAT: "<f"}[code] + str(bits // 8))
    elif code == _DL_BFLOAT and bits == 16:
        import ml_dtypes

        count = 1
        for d in shape:
            count *= d
        if size != 2 * count or len(blob) < offset + size:
            raise MetadataError("NDArray data size does not match its shape")
        return np.frombuffer(blob[offset:offset + size], dtype="<u2").reshape(shape).view(ml_dtypes.bfloat16)
    else:
        raise MetadataError(f"unsupported constant dtype (code {code}, {bits} bits)")
    data = blob[offset:offset + size]
    count = 1
    for d in shape:
        count *= d
    if len(data) != size or size != count * dtype.itemsize:
        raise MetadataError("NDArray data size does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def dump_metadata(constants: list) -> str:
    """JSON for a list of Constant nodes (index i is `meta[relay.Constant][i]`), laid out
    as TVM's `SaveJSON` writes it (`, ` line ends, integer arrays on one line)."""
    n = len(constants)
    nodes = ['    {\n      "type_key": ""\n    }',
             '    {\n      "type_key": "Map", \n      "keys": [\n        "relay.Constant"\n      ], \n'
             '      "data": [2]\n    }',
             '    {\n      "type_key": "Array", \n      "data": [' + ", ".join(map(str, range(3, 3 + n))) + ']\n    }']
    arrays = []
    for i, c in enumerate(constants):
        nodes.append('    {\n      "type_key": "relay.Constant", \n      "attrs": {\n'
                     f'        "_checked_type_": "0", \n        "data": "{i}", \n        "span": "0", \n'
                     '        "virtual_device_": "0"\n      }\n    }')
        blob = "" if c.data is None else base64.b64encode(ndarray_to_bytes(c.data)).decode("ascii")
        arrays.append(f'    "{blob}"')
    b64 = "[\n" + ", \n".join(arrays) + "\n  ]" if arrays else "[]"
    return ('{\n  "root": 1, \n  "nodes": [\n' + ", \n".join(nodes) + '\n  ], \n'
            f'  "b64ndarrays": {b64}, \n  "attrs": {{"tvm_version": "0.19.0"}}\n}}')


def load_metadata(text: str) -> dict[str, list]:
    """`{"relay.Constant": [ndarray or None, ...]}` from a metadata section's JSON."""
    try:
        doc = json.loads(text)
        nodes = doc["nodes"]
        root = nodes[doc["root"]]
        arrays = doc.get("b64ndarrays", [])
        result: dict[str, list] = {}
        for key, index in zip(root.get("keys", []), root.get("data", []), strict=False):
            entries = []
            for node_index in nodes[index].get("data", []):
                node = nodes[node_index]
                if node.get("type_key") != "relay.Constant":
                    entries.append(None)
                    continue
                blob = arrays[int(node["attrs"]["data"])]
                entries.append(ndarray_from_bytes(base64.b64decode(blob)) if blob else None)
            result[key] = entries
        return result
    except MetadataError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
        raise MetadataError(f"malformed metadata section ({type(err).__name__}: {err})") from None
