"""ONNX backend node tests for every op irtool claims (`supported_ops()`).

The cases come from onnx's own generators (`onnx.backend.test.case.node`), the ones
onnx 1.17 shipped as data: each is a one-node (or function-expanded) model with inputs
and expected outputs. A case is *claimed* when every op in its graph is supported; each
claimed case is imported, run in the NumPy interpreter and compared as onnx's runner
compares (same count, shape and dtype; `assert_allclose` with the case's rtol=1e-3,
atol=1e-7).

Generating the cases runs every generator (~7 s), so they are cached, keyed by the onnx
version, in `$IRTOOL_CACHE` (default `~/.cache/irtool`); an unreadable or unwritable
cache just means generating them again.

Known failures are listed once, in EXCEPTIONS, with the reason; they are strict xfails
(a fixed case fails the run until its entry is removed) and docs/onnx.md lists them.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

ROOT = pathlib.Path(__file__).resolve().parents[1]

_UNIQUE_AXIS = ("Unique along an axis of an N-D input (unique slices) is not supported: Relay's unique is 1-D, "
                "as TVM v0.19's converter requires")
_TRAINING = ("Dropout in training mode with a non-zero ratio is not supported (its mask is random: the importer is "
             "for inference; a ratio of 0, and BatchNormalization's training mode, are)")
_NARROW_DTYPES = "float8/float4/int4/int2 element types (ONNX types 17-26) have no irtool dtype"
_STRINGS = "string tensors are not supported"
_BF16_STEPS = ("bfloat16 Celu is computed op by op in bfloat16 (each of exp, divide, multiply rounds), the reference "
               "in float32 and rounded once: one element differs by 2 bf16 ULP")
_SEQUENCES = ("a graph input of a sequence or optional type: a sequence is imported as a Relay tuple built in "
              "the graph (as TVM v0.19 does), so its length must be known at import")
_FFT_NOISE = ("the expected output holds the reference's float32 FFT rounding noise (1.9e-7 where the exact "
              "value is 0), beyond the comparison's atol of 1e-7; irtool's value is closer to exact")
_LOW_PRECISION = ("float16/bfloat16 attention is computed op by op in the element type (the matmul accumulates and "
                  "each softmax step rounds in it), the reference in float32: elements differ by 1-2 ULP")
_ROI_MAX = ("RoiAlign mode=max: TVM's roi_align takes the max of the bilinear samples; ONNX (as onnxruntime) the "
            "max over the samples of the largest of the four weighted corner values")
_NMS_BOUNDARY = ("NonMaxSuppression: TVM's all_class_non_max_suppression suppresses a box whose IoU equals "
                 "iou_threshold (>=); ONNX only above it (>)")

# Cast and CastLike cases from or to a type irtool lacks (and CastLike's function-expanded forms)
_NARROW_CASTS = (
    "FLOAT_to_FLOAT8E4M3FN", "FLOAT16_to_FLOAT8E4M3FN", "FLOAT_to_FLOAT8E4M3FNUZ", "FLOAT16_to_FLOAT8E4M3FNUZ",
    "FLOAT8E4M3FN_to_FLOAT", "FLOAT8E4M3FN_to_FLOAT16", "FLOAT8E4M3FNUZ_to_FLOAT", "FLOAT8E4M3FNUZ_to_FLOAT16",
    "FLOAT_to_FLOAT8E5M2", "FLOAT16_to_FLOAT8E5M2", "FLOAT_to_FLOAT8E5M2FNUZ", "FLOAT16_to_FLOAT8E5M2FNUZ",
    "FLOAT8E5M2_to_FLOAT", "FLOAT8E5M2_to_FLOAT16", "FLOAT8E5M2FNUZ_to_FLOAT", "FLOAT8E5M2FNUZ_to_FLOAT16",
    "FLOAT_to_UINT4", "FLOAT16_to_UINT4", "FLOAT_to_INT4", "FLOAT16_to_INT4", "UINT4_to_FLOAT", "UINT4_to_FLOAT16",
    "UINT4_to_UINT8", "INT4_to_FLOAT", "INT4_to_FLOAT16", "INT4_to_INT8", "FLOAT4E2M1_to_FLOAT",
    "FLOAT4E2M1_to_FLOAT16", "FLOAT_to_FLOAT4E2M1", "FLOAT16_to_FLOAT4E2M1", "FLOAT_to_UINT2", "FLOAT16_to_UINT2",
    "FLOAT_to_INT2", "FLOAT16_to_INT2", "UINT2_to_FLOAT", "UINT2_to_FLOAT16", "UINT2_to_UINT8", "INT2_to_FLOAT",
    "INT2_to_FLOAT16", "INT2_to_INT8", "no_saturate_FLOAT_to_FLOAT8E4M3FN", "no_saturate_FLOAT_to_FLOAT8E4M3FNUZ",
    "no_saturate_FLOAT_to_FLOAT8E5M2", "no_saturate_FLOAT_to_FLOAT8E5M2FNUZ", "no_saturate_FLOAT16_to_FLOAT8E4M3FN",
    "no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ", "no_saturate_FLOAT16_to_FLOAT8E5M2",
    "no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ", "e8m0_FLOAT_to_FLOAT8E8M0", "e8m0_FLOAT16_to_FLOAT8E8M0",
    "e8m0_FLOAT8E8M0_to_FLOAT", "e8m0_FLOAT8E8M0_to_FLOAT16",
)

# case name -> why it fails. Keep docs/onnx.md ("Conformance exceptions") in step.
EXCEPTIONS: dict[str, str] = {
    "test_celu_bfloat16": _BF16_STEPS,
    "test_celu_bfloat16_expanded": _BF16_STEPS,
    # the Attention cases and their `_expanded` forms fail alike (the op is imported as its function body)
    **{f"test_attention_{case}{form}": _LOW_PRECISION for form in ("", "_expanded") for case in (
        "4d_causal_fp16", "4d_causal_bf16", "4d_padded_kv_bf16", "4d_attn_mask_causal_bf16", "3d_causal_bf16",
        "4d_causal_padded_kv_bf16")},
    **{f"test_bernoulli{case}{expanded}": "random numbers: Bernoulli (its ONNX function body) draws with "
       "RandomUniformLike, irtool's from NumPy's PCG64 seeded by the node (irtool/ops/sampling.py), the expected "
       "output from another generator, so the values differ (shape and dtype match)"
       for case in ("", "_double", "_seed") for expanded in ("", "_expanded")},
    **{f"test_{op}_{case}": _NARROW_DTYPES for op in ("quantizelinear", "dequantizelinear")
       for case in ("e4m3fn", "e5m2", "uint4", "int4", "uint2", "int2", "float4e2m1")},
    **{f"test_dequantizelinear_{case}": _NARROW_DTYPES for case in ("e4m3fn_float16", "e4m3fn_zero_point")},
    **{f"test_sequence_map_{case}": _SEQUENCES for case in (
        "identity_1_sequence", "identity_2_sequences", "identity_1_sequence_1_tensor", "add_2_sequences",
        "add_1_sequence_1_tensor", "extract_shapes")},
    **{f"test_{op}_{case}{form}": _NARROW_DTYPES for case in _NARROW_CASTS
       for op, form in (("cast", ""), ("castlike", ""), ("castlike", "_expanded"))
       if not (op == "castlike" and case.startswith("e8m0"))},  # onnx has no CastLike e8m0 cases
    "test_dft_inverse": _FFT_NOISE,
    "test_dft_inverse_opset19": _FFT_NOISE,
    **{name: _SEQUENCES for name in (
        "test_loop13_seq", "test_sequence_insert_at_back", "test_sequence_insert_at_front", "test_loop16_seq_none",
        "test_optional_get_element_optional_tensor", "test_optional_get_element_optional_sequence",
        "test_optional_get_element_sequence", "test_optional_has_element_tensor_input",
        "test_optional_has_element_optional_input", "test_optional_has_element_empty_optional_input",
        *(f"test_sequence_map_{c}_expanded" for c in ("identity_1_sequence", "identity_2_sequences",
                                                      "identity_1_sequence_1_tensor", "add_2_sequences",
                                                      "add_1_sequence_1_tensor", "extract_shapes")))},
    **{f"test_unique_sorted_with_{c}": _UNIQUE_AXIS for c in ("axis", "axis_3d", "negative_axis")},
    "test_training_dropout_default": _TRAINING,
    "test_training_dropout_default_mask": _TRAINING,
    "test_training_dropout": _TRAINING,
    "test_training_dropout_mask": _TRAINING,
    "test_equal_string": _STRINGS,
    "test_equal_string_broadcast": _STRINGS,
    "test_identity_sequence": _SEQUENCES,
    "test_identity_opt": _SEQUENCES,
    "test_roialign_mode_max": _ROI_MAX,
    "test_nonmaxsuppression_iou_threshold_boundary": _NMS_BOUNDARY,
}


@dataclass(frozen=True)
class NodeCase:
    name: str
    model: bytes  # serialized ModelProto
    data_sets: tuple  # ((inputs, expected outputs), ...)
    rtol: float
    atol: float

    def load(self):
        return onnx.load_model_from_string(self.model)


def _cache_path() -> pathlib.Path:
    base = os.environ.get("IRTOOL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "irtool")
    return pathlib.Path(base) / f"onnx-{onnx.__version__}-node-cases.pkl"


def _generate() -> list[NodeCase]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node

        cases = node.collect_testcases(None)
    return [NodeCase(c.name, c.model.SerializeToString(),
                     tuple((list(inputs), list(outputs)) for inputs, outputs in c.data_sets), c.rtol, c.atol)
            for c in cases]


_CASES: list[NodeCase] | None = None


def node_cases() -> list[NodeCase]:
    """All of onnx's node test cases (from the cache when it is there)."""
    global _CASES
    if _CASES is not None:
        return _CASES
    path = _cache_path()
    try:
        with open(path, "rb") as f:
            cases = [NodeCase(*fields) for fields in pickle.load(f)]
    except Exception:
        cases = _generate()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "wb") as f:
                pickle.dump([(c.name, c.model, c.data_sets, c.rtol, c.atol) for c in cases], f,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass
    _CASES = cases
    return cases


def graph_ops(graph) -> set[str]:
    """The op types of `graph` and of its subgraphs (If/Loop/Scan bodies)."""
    ops = set()
    for n in graph.node:
        ops.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}")
        for a in n.attribute:
            if a.type == a.GRAPH:
                ops |= graph_ops(a.g)
            for g in a.graphs:
                ops |= graph_ops(g)
    return ops


def case_ops(case: NodeCase) -> set[str]:
    return graph_ops(case.load().graph)


def claimed_cases(supported=None) -> list[NodeCase]:
    """The cases whose every op the importer converts, or expands as its ONNX function."""
    from irtool.frontend.onnx import supported_ops
    from irtool.frontend.onnx.functions import is_function_op

    supported = set(supported_ops() if supported is None else supported)

    def claimed(case: NodeCase) -> bool:
        model = case.load()
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        return all(op in supported or is_function_op(op.rpartition(".")[2], opset, op.rpartition(".")[0])
                   for op in graph_ops(model.graph))

    return [c for c in node_cases() if claimed(c)]


def _array(value):
    if isinstance(value, onnx.TensorProto):
        from onnx import numpy_helper

        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_array(v) for v in value]
    return value if value is None else np.asarray(value)


def assert_similar(expected, actual, rtol: float, atol: float, where: str = "output") -> None:
    """onnx's `Runner.assert_similar_outputs` for one output."""
    if isinstance(expected, list):
        assert isinstance(actual, (list, tuple)), f"{where}: expected a sequence, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"{where}: {len(actual)} elements, expected {len(expected)}"
        for j, (e, a) in enumerate(zip(expected, actual)):
            assert_similar(e, a, rtol, atol, f"{where}[{j}]")
        return
    assert isinstance(actual, np.ndarray) or np.isscalar(actual), f"{where}: got {type(actual).__name__}"
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape}, expected {expected.shape}"
    if expected.dtype == object:
        np.testing.assert_array_equal(actual, expected, err_msg=where)
        return
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=where)


STATIC_INPUT = "must be known at import time"


def _integer(i, x):
    return x.dtype.kind in "iu"


def _not_data(i, x):
    return i > 0 or x.ndim == 0


def _bind_inputs(model, inputs, bind):
    """`model` with the graph inputs `bind(index, value)` picks made initializers holding
    `inputs`' values: how a real model feeds Reshape's shape, Slice's starts, the axes of
    a reduction, Resize's scales."""
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    kept, rest = [], []
    for i, (vi, x) in enumerate(zip(list(model.graph.input), inputs)):
        if isinstance(x, np.ndarray) and bind(i, x):
            model.graph.initializer.append(numpy_helper.from_array(x, vi.name))
        else:
            kept.append(vi)
            rest.append(x)
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, rest


def _import(model):
    from irtool.frontend.onnx import from_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod, params = from_onnx(model)
    assert not params
    return mod


def run_case(case: NodeCase) -> bool:
    """Import `case`, run each data set in the interpreter and compare; raises on a mismatch.

    A static importer needs some inputs as constants (Reshape's shape, Slice's starts,
    reduction axes), which the node tests feed as graph inputs: when the import says a
    value "must be known at import time", the integer inputs are bound as initializers
    and the case is imported again per data set; if that is not enough, every input but
    the data tensor (the first, unless a scalar as Range's) is. Returns whether binding
    was needed."""
    import irtool
    from irtool.frontend.onnx import OnnxImportError

    model = case.load()
    try:
        mod = _import(model)
        bound = False
    except OnnxImportError as err:
        if STATIC_INPUT not in str(err):
            raise
        mod, bound = None, True
    for inputs, outputs in case.data_sets:
        inputs = [_array(x) for x in inputs]
        if bound:
            try:
                bound_model, rest = _bind_inputs(model, inputs, _integer)
                mod = _import(bound_model)
            except OnnxImportError as err:
                if STATIC_INPUT not in str(err):
                    raise
                bound_model, rest = _bind_inputs(model, inputs, _not_data)
                mod = _import(bound_model)
            inputs = rest
        with np.errstate(all="ignore"):
            result = irtool.interpret(mod, inputs)
        results = list(result) if len(outputs) > 1 else [result]
        assert len(results) == len(outputs), f"{len(results)} outputs, expected {len(outputs)}"
        for i, (e, a) in enumerate(zip(outputs, results)):
            assert_similar(_array(e), a, case.rtol, case.atol, f"output {i} ({model.graph.output[i].name})")
    return bound


def _params():
    for case in claimed_cases():
        marks = []
        if case.name in EXCEPTIONS:
            marks.append(pytest.mark.xfail(reason=EXCEPTIONS[case.name], strict=True))
        yield pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", list(_params()))
def test_node_case(case: NodeCase) -> None:
    run_case(case)


def test_exceptions_are_claimed_cases() -> None:
    """Every entry of EXCEPTIONS names a claimed case (no stale entries)."""
    claimed = {c.name for c in claimed_cases()}
    stale = sorted(set(EXCEPTIONS) - claimed)
    assert not stale, f"EXCEPTIONS lists cases that are not claimed (or do not exist): {stale}"


def test_exceptions_are_documented() -> None:
    """docs/onnx.md names every exception."""
    text = (ROOT / "docs" / "onnx.md").read_text()
    missing = sorted(name for name in EXCEPTIONS if f"`{name}`" not in text)
    assert not missing, f"docs/onnx.md does not list these conformance exceptions: {missing}"


def test_cases_are_generated() -> None:
    """The generators still produce the cases (guards an onnx upgrade that moves them)."""
    names = {c.name for c in node_cases()}
    assert len(names) > 1000 and {"test_relu", "test_add", "test_conv_with_strides_padding"} <= names
