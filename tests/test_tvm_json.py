"""The metadata section of TVMScript printed by TVM 0.27 (`mod.script(show_meta=True)`):
TVM's object-graph JSON read into irtool objects and written back byte for byte.

The `tvm`-marked tests run TVM 0.27 from its own virtualenv (`IRTOOL_TVM_PYTHON`) in a
subprocess; irtool never imports TVM."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from irtool.ir import relax, tir
from irtool.text.tvm_json import (
    TvmJsonError,
    dump_metadata,
    escape_printed,
    find_metadata_block,
    load_metadata,
    tensor_from_bytes,
    tensor_to_bytes,
    unescape_printed,
)

REFERENCE = Path(__file__).parent / "data" / "tvm-0.27" / "seed_conv_add_relu" / "5_FuseTIR_show_meta.py"
TVM_PYTHON = Path(os.environ.get("IRTOOL_TVM_PYTHON") or "/nonexistent/tvm-python")
OPENING = 'metadata = tvm.ir.load_json("""'

needs_reference = pytest.mark.skipif(not REFERENCE.exists(), reason="TVM 0.27 reference output not available")


def _reference_block() -> tuple[str, str, int, int]:
    source = REFERENCE.read_text(encoding="utf-8")
    text, start, end = find_metadata_block(source)
    assert text is not None
    return source, text, start, end


# ----------------------------------------------------------------------------- the reference file


@needs_reference
def test_find_block_in_reference():
    source, text, start, end = _reference_block()
    assert start == 0
    assert source[start:end] == OPENING + text + '""")'
    assert source[end:].startswith("\n# from tvm.script import ir as I")
    assert text.startswith('{\n  \\"root_index\\": 18,\n  \\"nodes\\": [\n')
    assert text.endswith('\\"tvm_version\\": \\"0.27.0.post1\\"\n  }\n}')


@needs_reference
def test_reference_constant_values():
    _source, text, _start, _end = _reference_block()
    meta = load_metadata(text)
    assert list(meta) == ["ir.GenericConst"]
    (const,) = meta["ir.GenericConst"]
    assert isinstance(const, relax.Constant)
    assert isinstance(const.struct_info, relax.TensorStructInfo)
    assert const.struct_info.shape == (1, 3, 14, 14)
    assert const.struct_info.dtype == "float32"
    assert const.data.dtype == np.float32 and const.data.shape == (1, 3, 14, 14)

    # decode the base64 independently: printed escapes \" and \\/, then TVM's tensor layout
    (b64,) = re.findall(r'\\"type\\": \\"ffi\.Tensor\\",\s*\\"data\\": \\"([^\\]*(?:\\\\/[^\\]*)*)\\"', text)
    blob = base64.b64decode(b64.replace("\\\\/", "/"))
    magic, reserved, dev_type, dev_id, ndim, code, bits, lanes = struct.unpack_from("<QQiiiBBH", blob)
    assert (magic, reserved, dev_type, dev_id, ndim, code, bits, lanes) == (
        0xDD5E40F096B4A13F, 0, 1, 0, 4, 2, 32, 1)
    assert struct.unpack_from("<4qq", blob, 32) == (1, 3, 14, 14, 588 * 4)
    expected = np.frombuffer(blob[72:], dtype="<f4").reshape(1, 3, 14, 14)
    assert len(blob) == 72 + 588 * 4
    np.testing.assert_array_equal(const.data, expected)
    assert np.all(const.data == 1.0)  # the folded `ones` constant of seed 000


@needs_reference
def test_reference_round_trip_byte_for_byte():
    source, text, start, end = _reference_block()
    out = dump_metadata(load_metadata(text))
    assert out == text
    assert source[:start] + OPENING + out + '""")' + source[end:] == source


@needs_reference
def test_reference_plain_json_form():
    _source, text, _start, _end = _reference_block()
    plain = unescape_printed(text)
    assert json.loads(plain)["root_index"] == 18
    meta = load_metadata(plain)
    assert dump_metadata(meta, escaped=False) == plain
    assert escape_printed(plain) == text


# ----------------------------------------------------------------------------- hand-made entries


def _arrays() -> list[np.ndarray]:
    arrays = [
        (np.arange(6, dtype="float32").reshape(2, 3) / 7).astype("float32"),
        np.array([1, -2, 2**40], dtype="int64"),
        np.array(1.5, dtype="float16"),
        np.array([[True, False], [False, True]]),
        np.array([[1, -2]], dtype="int8"),
        np.array(3, dtype="uint8"),
        np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 1e-300], dtype="float64"),
        np.zeros((0, 3), dtype="float32"),
        np.array([7, 65535], dtype="uint16"),
        np.array([-1], dtype="int32"),
        np.array(True),
        np.arange(24, dtype="int16").reshape(2, 3, 4),
    ]
    try:
        import ml_dtypes
    except ImportError:
        return arrays
    return arrays + [np.array([1.25, -3.0], dtype=ml_dtypes.bfloat16)]


STRINGS = ["a\nb", 'q"uo\'te\n', "back\\slash/\t\n", "ctl\x01\x7f\n", 'tri"""ple\n', "a\nb", "ir.GenericConst"]
NON_ASCII = "\u00e9 \u4e2d\n"


def _entries(strings=STRINGS) -> dict[str, list]:
    return {
        "ir.GenericConst": [relax.Constant(a) for a in _arrays()],
        "ir.StringImm": [tir.StringImm(s) for s in strings],
        "ffi.Tensor": [np.arange(4, dtype="float32").reshape(2, 2), np.array([7, 8], dtype="uint8"), np.array(2.5)],
    }


def _assert_same_array(got, want):
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


def _assert_same_entries(got: dict, want: dict):
    assert list(got) == list(want)
    for g, w in zip(got["ir.GenericConst"], want["ir.GenericConst"]):
        assert isinstance(g, relax.Constant)
        _assert_same_array(g.data, w.data)
        assert g.struct_info.shape == tuple(w.data.shape)
        assert g.struct_info.dtype == (w.data.dtype.name if w.data.dtype != np.bool_ else "bool")
    assert [type(s) for s in got["ir.StringImm"]] == [tir.StringImm] * len(want["ir.StringImm"])
    assert [s.value for s in got["ir.StringImm"]] == [s.value for s in want["ir.StringImm"]]
    for g, w in zip(got["ffi.Tensor"], want["ffi.Tensor"]):
        _assert_same_array(g, w)


@pytest.mark.parametrize("escaped", [True, False])
def test_hand_made_round_trip(escaped):
    entries = _entries(STRINGS + [NON_ASCII])
    text = dump_metadata(entries, escaped=escaped)
    back = load_metadata(text)
    _assert_same_entries(back, entries)
    assert dump_metadata(back, escaped=escaped) == text


def test_printed_form_is_ascii_and_a_python_literal():
    text = dump_metadata(_entries())
    assert text.isascii()
    assert '"""' not in text
    assert "\\/" in text or "/" not in unescape_printed(text)
    # without non-ASCII data the printed form is exactly a Python string literal of the JSON
    assert eval('"""' + text + '"""') == dump_metadata(_entries(), escaped=False)


def test_non_ascii_is_escaped_as_utf8_bytes():
    text = dump_metadata({"ir.StringImm": [tir.StringImm(NON_ASCII)]})
    assert '\\"data\\": \\"\\xC3\\xA9 \\xE4\\xB8\\xAD\\\\n\\"' in text
    assert load_metadata(text)["ir.StringImm"][0].value == NON_ASCII


def test_tensor_bytes_layout():
    blob = tensor_to_bytes(np.array([[True, False, True]]))
    assert blob[:32] == struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 2, 6, 8, 1)  # kDLBool, 8 bits
    assert blob[32:] == struct.pack("<qqq", 1, 3, 3) + b"\x01\x00\x01"
    blob = tensor_to_bytes(np.array(1.0, dtype=">f8"))  # big-endian input is stored little-endian
    assert blob[28:32] == bytes([2, 64, 1, 0]) and blob[32:] == struct.pack("<q", 8) + struct.pack("<d", 1.0)
    back = tensor_from_bytes(blob)
    assert back.dtype == np.float64 and back.shape == () and back == 1.0
    back.flags.writeable = True  # a fresh array, not a view of the blob
    # TVM's legacy bool (uint1) reads as bool too
    legacy = struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 1, 1, 1, 1) + struct.pack("<qq", 2, 2) + b"\x01\x00"
    np.testing.assert_array_equal(tensor_from_bytes(legacy), [True, False])


# Serialized by TVM 0.27 (`ffi.json.Stringify(ffi.ToJSONGraph(map, {"tvm_version": ...}), None)`)
# for {"ir.GenericConst": [relax.const(int8 [1, -2])], "ir.StringImm": [StringImm("x\n")],
#      "ffi.Tensor": [tensor(uint8 7)]}.
TVM_SMALL_GRAPH = (
    '{"root_index":21,"nodes":[{"type":"ffi.String","data":"ir.GenericConst"},{"type":"None"},'
    '{"type":"ir.PrimType","data":{"span":1,"dtype":"int64"}},{"type":"int","data":2},'
    '{"type":"ir.IntImm","data":{"span":1,"ty":2,"value":3}},{"type":"ffi.Array","data":[4]},'
    '{"type":"relax.ShapeType","data":{"span":1,"values":5,"ndim":1}},'
    '{"type":"relax.expr.ShapeExpr","data":{"span":1,"ty":6,"values":5}},'
    '{"type":"ir.PrimType","data":{"span":1,"dtype":"int8"}},'
    '{"type":"relax.TensorType","data":{"span":1,"shape":7,"dtype":8,"vdevice":1,"ndim":1}},'
    '{"type":"ffi.Tensor","data":"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAAIAQACAAAAAAAAAAIAAAAAAAAAAf4="},'
    '{"type":"ir.GenericConst","data":{"span":1,"ty":9,"value":10}},{"type":"ffi.Array","data":[11]},'
    '{"type":"ffi.String","data":"ir.StringImm"},{"type":"ir.StringType","data":{"span":1}},'
    '{"type":"ffi.String","data":"x\\n"},{"type":"ir.StringImm","data":{"span":1,"ty":14,"value":15}},'
    '{"type":"ffi.Array","data":[16]},{"type":"ffi.String","data":"ffi.Tensor"},'
    '{"type":"ffi.Tensor","data":"P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAAAAAAEIAQABAAAAAAAAAAc="},'
    '{"type":"ffi.Array","data":[19]},{"type":"ffi.Map","data":[0,12,13,17,18,20]}],'
    '"metadata":{"tvm_version":"0.27.0.post1"}}')


def test_graph_matches_tvm_serializer():
    entries = {"ir.GenericConst": [relax.Constant(np.array([1, -2], dtype="int8"))],
               "ir.StringImm": [tir.StringImm("x\n")],
               "ffi.Tensor": [np.array(7, dtype="uint8")]}
    assert json.loads(dump_metadata(entries, escaped=False)) == json.loads(TVM_SMALL_GRAPH)
    back = load_metadata(TVM_SMALL_GRAPH)
    assert back["ir.GenericConst"][0].data.tolist() == [1, -2]
    assert back["ir.StringImm"][0].value == "x\n"
    assert back["ffi.Tensor"][0].dtype == np.uint8 and back["ffi.Tensor"][0] == 7


def test_layout_details():
    text = dump_metadata({"ir.GenericConst": [relax.Constant(np.array(1, dtype="uint8"))]}, escaped=False)
    assert '"data": [\n      ]' in text  # an empty array, as tvm-ffi writes it
    assert text.startswith('{\n  "root_index": 10,\n  "nodes": [\n    {\n      "type": "ffi.String",\n')
    assert text.endswith('\n  ],\n  "metadata": {\n    "tvm_version": "0.27.0.post1"\n  }\n}')
    assert '{\n      "type": "None"\n    }' in text
    # the same object twice is one node; equal constants are two
    c = relax.Constant(np.ones(2, dtype="float32"))
    twice = json.loads(dump_metadata({"ir.GenericConst": [c, c]}, escaped=False))
    assert twice["nodes"][-2] == {"type": "ffi.Array", "data": [11, 11]}
    two = json.loads(dump_metadata({"ir.GenericConst": [c, relax.Constant(np.ones(2, dtype="float32"))]},
                                   escaped=False))
    assert two["nodes"][-2]["data"] == [11, 18]


def test_load_shares_objects_like_tvm():
    c = relax.Constant(np.ones(2, dtype="float32"))
    back = load_metadata(dump_metadata({"ir.GenericConst": [c, c]}))["ir.GenericConst"]
    assert back[0] is back[1]


# ----------------------------------------------------------------------------- errors and edge cases


def test_find_block_absent_or_unterminated():
    assert find_metadata_block("@I.ir_module\nclass Module:\n    pass\n") == (None, 0, 0)
    assert find_metadata_block('metadata = tvm.ir.load_json("""{\n') == (None, 0, 0)


def test_find_block_with_other_spacing():
    src = 'import tvm\nmetadata = tvm.ir.load_json(\n    """{\n  \\"root_index\\": 0\n}"""\n)\n@I.ir_module\n'
    text, start, end = find_metadata_block(src)
    assert text == '{\n  \\"root_index\\": 0\n}'
    assert src[start:end].startswith("metadata = ") and src[start:end].endswith('"""\n)')
    assert src[end:] == "\n@I.ir_module\n"


def _graph(nodes, root=None) -> str:
    return json.dumps({"root_index": len(nodes) - 1 if root is None else root, "nodes": nodes})


def test_unknown_type_is_named():
    text = _graph([{"type": "ffi.String", "data": "k"}, {"type": "tirx.Var", "data": {"name": "n"}},
                   {"type": "ffi.Array", "data": [1]}, {"type": "ffi.Map", "data": [0, 2]}])
    with pytest.raises(ValueError, match="tirx.Var"):
        load_metadata(text)


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not valid JSON"),
    ('{"nodes": []}', "root_index"),
    (_graph([{"type": "int", "data": 1}]), "not a map"),
    (_graph([{"type": "ffi.Map", "data": [0]}]), "odd length"),
    (_graph([{"type": "ffi.Array", "data": [0]}]), "refers to itself"),
    (_graph([{"type": "ffi.Array", "data": [5]}]), "bad node reference"),
    (_graph([{"type": "ffi.Tensor", "data": base64.b64encode(b"\0" * 40).decode()}]), "bad magic"),
    (_graph([{"type": "ffi.Tensor", "data": base64.b64encode(
        struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 1, 2, 32, 1) + struct.pack("<qq", 2, 4)
        + b"\0" * 4).decode()}]), "needs 8"),
    (_graph([{"type": "ffi.Tensor", "data": base64.b64encode(
        struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 0, 2, 32, 4) + struct.pack("<q", 16)
        + b"\0" * 16).decode()}]), "vector"),
])
def test_malformed(text, message):
    with pytest.raises(TvmJsonError, match=message):
        load_metadata(text)


def test_dump_errors():
    with pytest.raises(TvmJsonError, match="without data"):
        dump_metadata({"ir.GenericConst": [relax.Constant(None, relax.TensorStructInfo((2,), "float32"))]})
    with pytest.raises(TvmJsonError, match="cannot write"):
        dump_metadata({"x": [object()]})
    with pytest.raises(TvmJsonError, match="dtype"):
        dump_metadata({"ffi.Tensor": [np.array(["a"])]})
    with pytest.raises(TvmJsonError, match="float32"):
        mismatched = relax.Constant(np.zeros(2, "int32"), relax.TensorStructInfo((2,), "float32"))
        dump_metadata({"ir.GenericConst": [mismatched]})


def test_escape_round_trip():
    s = 'x "y" \\ / \n\t \u00e9'
    assert escape_printed(s) == 'x \\"y\\" \\\\ / \n\t \\xC3\\xA9'
    assert unescape_printed(escape_printed(s)) == s


# ----------------------------------------------------------------------------- against TVM 0.27

needs_tvm = pytest.mark.skipif(not TVM_PYTHON.exists(), reason=f"{TVM_PYTHON} (TVM 0.27) is missing")


def _run_tvm(script: str, payload) -> dict:
    proc = subprocess.run([str(TVM_PYTHON), "-I", "-c", script], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _array_spec(a: np.ndarray) -> dict:
    return {"dtype": a.dtype.name, "shape": list(a.shape), "raw": base64.b64encode(a.tobytes()).decode()}


def _array_of(spec: dict) -> np.ndarray:
    dtype = spec["dtype"]
    if dtype == "bfloat16":
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    return np.frombuffer(base64.b64decode(spec["raw"]), dtype=dtype).reshape(spec["shape"])


_TVM_LOADS_OURS = r'''
import ast, base64, json, sys
import numpy as np, ml_dtypes, tvm, tvm_ffi
from tvm import relax

job = json.load(sys.stdin)
def arr(d):
    dtype = ml_dtypes.bfloat16 if d["dtype"] == "bfloat16" else d["dtype"]
    return np.frombuffer(base64.b64decode(d["raw"]), dtype=dtype).reshape(d["shape"])
def dtype_name(a):
    return "bool" if a.dtype == np.bool_ else a.dtype.name
built = tvm_ffi.convert({
    "ir.GenericConst": [relax.const(arr(d), dtype=dtype_name(arr(d))) for d in job["consts"]],
    "ir.StringImm": [tvm.ir.StringImm(s) for s in job["strings"]],
    "ffi.Tensor": [tvm.runtime.tensor(arr(d)) for d in job["tensors"]]})
stringify = tvm.get_global_func("ffi.json.Stringify")
to_graph = tvm.get_global_func("ffi.ToJSONGraph")
tvm_text = stringify(to_graph(built, {"tvm_version": tvm.__version__}), 2)
from_plain = tvm.ir.load_json(job["plain"])
from_printed = tvm.ir.load_json(ast.literal_eval('"""' + job["printed"] + '"""'))
for loaded in (from_plain, from_printed):
    tvm.ir.assert_structural_equal(loaded, built)
    assert [k for k in loaded.keys()] == ["ir.GenericConst", "ir.StringImm", "ffi.Tensor"]
    for c, d in zip(loaded["ir.GenericConst"], job["consts"]):
        v = c.value.numpy()
        assert v.tobytes() == arr(d).tobytes() and list(v.shape) == d["shape"], (v, d)
        assert str(c.ty.dtype) == dtype_name(arr(d)), (c.ty.dtype, d["dtype"])
    assert [s.value for s in loaded["ir.StringImm"]] == job["strings"]
    for t, d in zip(loaded["ffi.Tensor"], job["tensors"]):
        assert t.numpy().tobytes() == arr(d).tobytes() and list(t.shape) == d["shape"]
print(json.dumps({"same_bytes": tvm_text == job["plain"], "tvm_text": tvm_text}))
'''


@pytest.mark.tvm
@needs_tvm
def test_tvm_loads_our_dump():
    entries = _entries()
    job = {"consts": [_array_spec(c.data) for c in entries["ir.GenericConst"]],
           "strings": [s.value for s in entries["ir.StringImm"]],
           "tensors": [_array_spec(a) for a in entries["ffi.Tensor"]],
           "plain": dump_metadata(entries, escaped=False),
           "printed": dump_metadata(entries)}
    result = _run_tvm(_TVM_LOADS_OURS, job)
    # TVM's own serializer writes, for the same objects, exactly our text
    assert result["tvm_text"] == job["plain"]
    assert result["same_bytes"]


_TVM_PRINTS = r'''
import ast, base64, json, sys
import numpy as np, ml_dtypes, tvm, tvm_ffi
from tvm import relax, te

def spec(a):
    return {"dtype": "bool" if a.dtype == np.bool_ else a.dtype.name, "shape": list(a.shape),
            "raw": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()}

def constants_module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    arrays = [np.arange(6, dtype="float32").reshape(2, 3) / 7, np.array([1, -2, 3], dtype="int64"),
              np.array([1.5, -2], dtype="float16"), np.array([[True, False], [False, True]]),
              np.array(3, dtype="uint8"), np.array(4, dtype="uint8"),
              np.array([1.5, -0.0, np.inf, np.nan], dtype="float64"), np.zeros((0, 3), dtype="float32"),
              np.array([1.25, -3.0], dtype=ml_dtypes.bfloat16), np.arange(24, dtype="int8").reshape(2, 3, 4)]
    with bb.function("main", [x]):
        consts = [relax.const(a, dtype="bool" if a.dtype == np.bool_ else a.dtype.name) for a in arrays]
        gv = bb.emit(relax.Tuple(consts + [consts[0]]))
        bb.emit_func_output(gv)
    mod = bb.get()
    f = mod["main"].with_attr("params", [tvm.runtime.tensor(np.arange(4, dtype="float32").reshape(2, 2)),
                                          tvm.runtime.tensor(np.array([7, 8], dtype="uint16"))])
    mod["main"] = f
    return mod

def lowered_module():
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([A, B, C])})
    target = tvm.target.Target("llvm")
    target = target.with_host(target)
    mod = tvm.tirx.transform.BindTarget(target)(mod)
    pipeline, _host, _device = tvm.tirx.get_default_tir_pipeline(target)
    return pipeline(mod)

def strings_module():
    from tvm import tirx
    values = ["a\nb", "\u00e9 \u4e2d\n", 'q"uo\'te\n', "back\\slash/\t\n", "ctl\x01\x7f\n", 'tri"""ple\n']
    body = tirx.SeqStmt([tirx.Evaluate(tvm.ir.StringImm(v)) for v in values])
    return tvm.IRModule({"main": tirx.PrimFunc([], body)})

out = {}
for name, make in [("constants", constants_module), ("lowered", lowered_module), ("strings", strings_module)]:
    script = make().script(show_meta=True)
    start = script.index('metadata = tvm.ir.load_json("""') + len('metadata = tvm.ir.load_json("""')
    printed = script[start:script.index('""")', start)]
    # the printed text is ASCII; its \xHH escapes are UTF-8 bytes
    meta = tvm.ir.load_json(ast.literal_eval('"""' + printed + '"""').encode("latin-1").decode("utf-8"))
    values = {}
    for key in meta.keys():
        items = []
        for obj in meta[key]:
            if key == "ir.GenericConst":
                items.append(spec(obj.value.numpy()))
            elif key == "ir.StringImm":
                items.append(obj.value)
            else:
                items.append(spec(obj.numpy()))
        values[key] = items
    out[name] = {"script": script, "values": values}
print(json.dumps(out))
'''


@pytest.mark.tvm
@needs_tvm
def test_round_trip_of_tvm_printed_metadata():
    samples = _run_tvm(_TVM_PRINTS, None)
    assert set(samples) == {"constants", "lowered", "strings"}
    for name, sample in samples.items():
        script = sample["script"]
        text, start, end = find_metadata_block(script)
        assert text is not None and start == 0, name
        meta = load_metadata(text)
        assert list(meta) == list(sample["values"]), name
        for key, items in sample["values"].items():
            assert len(meta[key]) == len(items), (name, key)
            for got, want in zip(meta[key], items):
                if key == "ir.GenericConst":
                    _assert_same_array(got.data, _array_of(want))
                    assert got.struct_info.dtype == want["dtype"]
                    assert got.struct_info.shape == tuple(want["shape"])
                elif key == "ir.StringImm":
                    assert isinstance(got, tir.StringImm) and got.value == want
                else:
                    _assert_same_array(got, _array_of(want))
        assert dump_metadata(meta) == text, name
        assert script[:start] + OPENING + dump_metadata(meta) + '""")' + script[end:] == script
