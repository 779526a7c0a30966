"""legalize-ops of R.vision.all_class_non_max_suppression (codegen/topi/nms.py) and of the
R.dynamic_strided_slice its legalization emits (codegen/topi/dynamic.py): the legalized modules
run by our interpreters equal the ops' NumPy references (and onnxruntime on ONNX
NonMaxSuppression models), the PrimFunc compiles natively, and (tvm-marked) TVM 0.27's
LegalizeOps and zero pipeline print the same text, byte for byte once the `elem_offset` TypeVars
TVM numbers in a run-dependent order are renamed."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, assert_tvm_legalize_raises, legalize
from test_legalize_vision import T, module
from tvm_text import canonical_elem_offsets, canonical_type_vars

import irtool
from irtool.exec.relax import run_relax
from irtool.exec.tir import run_prim_func
from irtool.exec.tir_runtime import _numpy_dtype
from irtool.ir.module import IRModule
from irtool.text import parse, to_text
from irtool.transform import get_pass


def _nms_case(batch, boxes, classes, max_out="m", thresholds="iou, st", fmt="onnx"):
    """main(b, s, m, iou, st) = the NMS; `max_out` a parameter or an R.const."""
    params = (f"b: {T((batch, boxes, 4))}, s: {T((batch, classes, boxes))}, m: {T((), 'int64')}, "
              f"iou: {T(())}, st: {T(())}")
    call = f'R.vision.all_class_non_max_suppression(b, s, {max_out}, {thresholds}, output_format="{fmt}")'
    name = f"nms-{fmt}-{batch}x{boxes}x{classes}-{'m' if max_out == 'm' else 'c'}" \
           f"{'-cthr' if 'R.const' in thresholds else ''}"
    return name, module(params, call)


NMS = [_nms_case(1, 6, 2), _nms_case(2, 5, 3), _nms_case(1, 1, 1), _nms_case(3, 4, 1),
       _nms_case(1, 8, 4, 'R.const(3, "int64")'), _nms_case(2, 3, 2, 'R.const(1, "int64")'),
       _nms_case(1, 4, 2, 'R.const(6, "int64")'),  # more than the boxes: rows for 6 per class
       _nms_case(1, 5, 2, 'R.const(2, "int64")', 'R.const(0.5, "float32"), R.const(0.25, "float32")')]
# the "tensorflow" format: TOPI's (indices, scores, counts) per batch as they are, no slice
NMS_TF = [_nms_case(1, 6, 2, fmt="tensorflow"), _nms_case(2, 5, 3, fmt="tensorflow"),
          _nms_case(3, 4, 1, 'R.const(2, "int64")', fmt="tensorflow")]


def _nms_form(name, boxes_dtype="float32", scores_dtype="float32", iou_dtype="float32", st_dtype="float32",
              shape=(1, 5, 2), max_out="m", fmt="onnx", sym="", iou_shape=(), st_shape=(), m_shape=(), box_width=4):
    """main(b, s, m, iou, st) = the NMS on (batch, boxes, classes) `shape`, a name in it a size
    declared in `sym`, of the given dtypes and threshold shapes; `max_out` a parameter or an R.const."""
    batch, boxes, classes = shape
    params = (f"b: {T((batch, boxes, box_width), boxes_dtype)}, s: {T((batch, classes, boxes), scores_dtype)}, "
              f"m: {T(m_shape, 'int64')}, iou: {T(iou_shape, iou_dtype)}, st: {T(st_shape, st_dtype)}")
    call = f'R.vision.all_class_non_max_suppression(b, s, {max_out}, iou, st, output_format="{fmt}")'
    return f"nms-{fmt}-{name}", module(params, call, sym)


def _both_formats(name, **form):
    return [_nms_form(name, fmt=fmt, **form) for fmt in ("onnx", "tensorflow")]


# the forms TVM 0.27 legalizes beyond static float32 with 0-d float32 thresholds: TOPI's Python
# floats are float32 constants (a float16 box or score widened where it meets one), its stores
# cast to the buffer's dtype, int thresholds compared in int64 by the IndexDataTypeNormalizer
F16 = dict(boxes_dtype="float16", scores_dtype="float16", iou_dtype="float16", st_dtype="float16")
NMS_DTYPES = [case for name, form in [
    ("f16", F16),
    ("bf16", dict(boxes_dtype="bfloat16", scores_dtype="bfloat16", iou_dtype="bfloat16", st_dtype="bfloat16")),
    ("f16-data-f32-thresholds", dict(boxes_dtype="float16", scores_dtype="float16")),
    ("f32-data-f16-thresholds", dict(iou_dtype="float16", st_dtype="float16")),
    ("f16-boxes-f32-scores", dict(boxes_dtype="float16")),
    ("f32-boxes-f16-scores", dict(scores_dtype="float16")),
    ("f16-boxes-f64-scores", dict(boxes_dtype="float16", scores_dtype="float64", st_dtype="float64")),
    ("f64-thresholds", dict(iou_dtype="float64", st_dtype="float64")),
    ("i32-thresholds", dict(iou_dtype="int32", st_dtype="int32")),
    ("i8-u8-thresholds", dict(iou_dtype="int8", st_dtype="uint8")),
    ("bool-thresholds", dict(iou_dtype="bool", st_dtype="bool")),
    ("i32-boxes", dict(boxes_dtype="int32")),
    ("i32-scores", dict(scores_dtype="int32")),
] for case in _both_formats(name, **form)]
# symbolic sizes: the rows nb * 2 * 5 (ONNX) or 2 * n (TensorFlow) as TVM's struct info writes
# them, R.dynamic_strided_slice's extents as its canonical simplifier leaves them (nb * 10)
NMS_SYMBOLIC = [case for name, form in [
    ("sym-batch", dict(shape=("nb", 5, 2), sym="nb = T.int64()")),
    ("sym-classes", dict(shape=(1, 5, "c"), sym="c = T.int64()")),
    ("sym-batch-classes", dict(shape=("nb", 5, "c"), sym="nb = T.int64()\n        c = T.int64()")),
    ("sym-boxes-const-limit", dict(shape=(2, "n", 3), max_out='R.const(2, "int64")', sym="n = T.int64()")),
    ("f16-sym-boxes-const-limit", dict(shape=(1, "n", 2), max_out='R.const(3, "int64")', sym="n = T.int64()", **F16)),
] for case in _both_formats(name, **form)]
NMS_LIMITS = _both_formats("i32-limit", max_out='R.const(3, "int32")') + _both_formats("zero-limit", max_out='R.const(0, "int64")')
# TVM's Relax op checks no threshold's shape; TOPI reads an iou_threshold of shape (1,) at [0] and
# takes 0.5 for any other non-0-d one (the tensor unread); a limit parameter is never read
NMS_SHAPES = [case for name, form in [
    ("iou-1", dict(iou_shape=(1,))),
    ("f16-iou-1", dict(iou_shape=(1,), **F16)),
    ("iou-2", dict(iou_shape=(2,))),
    ("iou-1x1", dict(iou_shape=(1, 1))),
    ("iou-0", dict(iou_shape=(0,))),
    ("i64-iou-1", dict(iou_shape=(1,), iou_dtype="int64", st_dtype="int64")),
    ("limit-1", dict(m_shape=(1,))),
    ("limit-0", dict(m_shape=(0,))),  # not read: N per class
] for case in _both_formats(name, **form)]
# TVM 0.27's Relax takes boxes (B, N, K) of any K; TOPI reads box j of batch b at flat offset
# (b * N + j) * 4 (past the buffer's end where K < 4)
NMS_BOX_WIDTHS = [case for name, form in [
    ("k5", dict(box_width=5, shape=(2, 4, 2))),
    ("k6-sym-batch", dict(box_width=6, shape=("nb", 5, 2), sym="nb = T.int64()")),
    ("k2", dict(box_width=2)),
] for case in _both_formats(name, **form)]
# TVM 0.27's legalization raises on these (LegalizeOps fails): ours leaves the call
NMS_LEFT = (_both_formats("f64", boxes_dtype="float64", scores_dtype="float64", iou_dtype="float64",
                          st_dtype="float64") +
            _both_formats("f64-boxes", boxes_dtype="float64") +  # TOPI's Select(u <= 0.0, 0.0, area / u): f32 vs f64
            _both_formats("sym-boxes", shape=(1, "n", 2), sym="n = T.int64()") +  # int(num_boxes) of a size
            _both_formats("st-1", st_shape=(1,)) +  # TOPI's `score_threshold[()]` of a 1-D tensor
            _both_formats("st-1x1", st_shape=(1, 1), iou_shape=(1, 1)) +
            _both_formats("const-limit-1", max_out='R.const([3], "int64")') +  # int() of a 1-D array
            _both_formats("const-limit-empty", max_out='R.const([], "int64")'))


def _dss_case(shape, sym=""):
    params = f"x: {T(shape, 'int64')}, b: {T((len(shape),), 'int64')}, e: {T((len(shape),), 'int64')}, " \
             f"st: {T((len(shape),), 'int64')}"
    name = "dss-" + "x".join(map(str, shape))
    return name, module(params, "R.dynamic_strided_slice(x, b, e, st)", sym)


# static shapes of rank 1..3 (three fresh sizes all named `s`: TVM names them last first) and a
# symbolic one
def _canonical(text: str) -> str:
    """TVM 0.27's run-dependent names made comparable: the extern's `elem_offset` TypeVars and
    the order of several fresh sizes of one name (R.dynamic_strided_slice's `s`)."""
    return canonical_type_vars(canonical_elem_offsets(text))


DSS = [_dss_case((7,)), _dss_case((12, 3)), _dss_case((4, 5, 6)), _dss_case(("n", 3), "n = T.int64()")]


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, NMS + NMS_TF + DSS, normalize=_canonical)


@pytest.mark.tvm
def test_legalized_dtype_symbolic_and_limit_forms_match_tvm(tvm_python, tmp_path):
    """float16, bfloat16, mixed and int dtypes, symbolic batch, classes and boxes, int32 and zero
    limits, thresholds and limits of other shapes, both output formats: TVM's LegalizeOps prints
    what ours prints."""
    assert_legalized_like_tvm(tvm_python, tmp_path, NMS_DTYPES + NMS_SYMBOLIC + NMS_LIMITS + NMS_SHAPES +
                              NMS_BOX_WIDTHS, normalize=_canonical)




@pytest.mark.tvm
def test_forms_left_as_calls_are_those_tvm_fails_on(tvm_python, tmp_path):
    """float64 boxes, a symbolic N without a constant limit, a score_threshold that is not 0-d, a
    1-D constant limit: TVM 0.27's LegalizeOps raises (a Select of float32 and float64; `int()` of
    a size variable or a 1-D array; a 1-D tensor read at `[()]`); ours leaves the call."""
    assert_tvm_legalize_raises(tvm_python, tmp_path, NMS_LEFT)


@pytest.mark.parametrize("case", NMS_LEFT, ids=lambda c: c[0])
def test_forms_tvm_fails_on_stay_calls(case):
    text = to_text(legalize(parse(case[1])))
    assert "R.vision.all_class_non_max_suppression(" in text
    assert "call_tir" not in text


_ZERO_RUNNER = """
import sys, tvm
from tvm import relax
for path in sys.argv[1:]:
    mod = tvm.script.from_source(open(path).read())
    with open(path + ".tvm", "w") as f:
        f.write(relax.get_pipeline("zero")(mod).script(show_meta=True))
"""


@pytest.mark.tvm
@pytest.mark.parametrize("case", [NMS[0], NMS[4], NMS[7], NMS_TF[1]], ids=lambda c: c[0])
def test_zero_pipeline_matches_tvm(tvm_python, tmp_path, case):
    """TVM's whole zero pipeline: the extern PrimFunc is kOpaque, begin and strides fold."""
    name, text = case
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    runner = tmp_path / "runner.py"
    runner.write_text(_ZERO_RUNNER)
    proc = subprocess.run([tvm_python, str(runner), str(path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = to_text(get_pass("zero-pipeline")()(parse(text)), show_meta_data=True)
    theirs = open(str(path) + ".tvm").read()
    assert _canonical(ours.rstrip("\n")) == _canonical(theirs.rstrip("\n"))


@pytest.mark.tvm
def test_zero_pipeline_of_every_form_matches_tvm(tvm_python, tmp_path):
    """The zero pipeline of each dtype, symbolic, limit and threshold-shape form (54 modules, one
    TVM run) prints what TVM's prints."""
    cases = NMS_DTYPES + NMS_SYMBOLIC + NMS_LIMITS + NMS_SHAPES
    paths = []
    for name, text in cases:
        paths.append(tmp_path / f"{name}.py")
        paths[-1].write_text(text)
    runner = tmp_path / "runner.py"
    runner.write_text(_ZERO_RUNNER)
    proc = subprocess.run([tvm_python, str(runner), *map(str, paths)], capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    differ = []
    for (name, text), path in zip(cases, paths, strict=True):
        ours = to_text(get_pass("zero-pipeline")()(parse(text)), show_meta_data=True)
        if _canonical(ours.rstrip("\n")) != _canonical(open(str(path) + ".tvm").read().rstrip("\n")):
            differ.append(name)
    assert not differ, differ


# ----------------------------------------------------------------------------- running them


def _nms_inputs(rng, batch, boxes, classes, ties: bool):
    corners = rng.uniform(0, 10, size=(batch, boxes, 2)).astype("float32")
    sizes = rng.uniform(0.5, 6, size=(batch, boxes, 2)).astype("float32")
    flip = rng.random((batch, boxes, 1)) < 0.3  # some boxes given as (y2, x2, y1, x1)
    box = np.where(flip, np.concatenate([corners + sizes, corners], -1), np.concatenate([corners, corners + sizes], -1))
    scores = (rng.integers(0, 4, size=(batch, classes, boxes)) / 4 if ties else
              rng.random((batch, classes, boxes))).astype("float32")
    return box.astype("float32"), scores


@pytest.mark.parametrize("case", NMS_TF, ids=lambda c: c[0])
def test_legalized_tensorflow_nms_runs_as_the_reference(case):
    """Per batch the kept [class, box] rows, their scores and counts, zeros after the count."""
    mod = parse(case[1])
    legal = legalize(mod)
    b, c, n = mod.functions["main"].params[1].struct_info.shape
    rng = np.random.default_rng(sum(map(ord, case[0])))
    for ties in (False, True):
        for iou, st in ((0.5, 0.2), (0.3, 0.0), (1.0, 0.9)):
            boxes, scores = _nms_inputs(rng, b, n, c, ties)
            args = [boxes, scores, np.array(n, "int64"), np.array(iou, "float32"), np.array(st, "float32")]
            for want, got in zip(run_relax(mod, args), run_relax(legal, args), strict=True):
                assert want.dtype == got.dtype
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", NMS, ids=lambda c: c[0])
def test_legalized_nms_runs_as_the_reference(case):
    """The legalized module (the PrimFunc in the TIR interpreter, the slice, match_cast) gives the
    reference's first `count` rows and its count, with tied scores (the stable argsort keeps box
    order) and without."""
    mod = parse(case[1])
    legal = legalize(mod)
    b, c, n = mod.functions["main"].params[1].struct_info.shape  # scores: (batch, classes, boxes)
    rng = np.random.default_rng(sum(map(ord, case[0])))
    for ties in (False, True):
        for iou, st in ((0.5, 0.2), (0.3, 0.0), (0.0, 0.5), (1.0, 0.9)):
            boxes, scores = _nms_inputs(rng, b, n, c, ties)
            args = [boxes, scores, np.array(n, "int64"), np.array(iou, "float32"), np.array(st, "float32")]
            rows, count = run_relax(mod, args)
            got_rows, got_count = run_relax(legal, args)
            assert got_count.tolist() == count.tolist()
            assert got_rows.shape == (int(count[0]), 3)
            np.testing.assert_array_equal(got_rows, rows[:int(count[0])])


@pytest.mark.parametrize("case", DSS, ids=lambda c: c[0])
def test_legalized_dynamic_strided_slice_runs_as_the_reference(case):
    """Bounds in and past both ends, negative ones, strides of both signs. An empty slice is
    left out: TVM's shape function gives it a negative size (ceildiv(end - begin, stride) with
    no clamp at 0), which the match_cast then binds; our interpreter stops there."""
    mod = parse(case[1])
    legal = legalize(mod)
    assert "R.dynamic_strided_slice" not in to_text(legal)
    rng = np.random.default_rng(7)
    dims = [d if isinstance(d, int) else 5 for d in mod.functions["main"].params[0].struct_info.shape]
    x = rng.integers(0, 100, size=dims).astype("int64")
    checked = 0
    for _ in range(80):
        begin = rng.integers(-8, 9, size=len(dims)).astype("int64")
        strides = rng.choice([-3, -1, 1, 2], size=len(dims)).astype("int64")
        end = (begin + strides * rng.integers(1, 8, size=len(dims))).astype("int64")  # mostly non-empty
        expected = run_relax(mod, [x, begin, end, strides])
        if expected.size == 0:
            continue
        checked += 1
        np.testing.assert_array_equal(run_relax(legal, [x, begin, end, strides]), expected)
    assert checked >= 10


def test_nms_prim_func_runs_natively_as_interpreted():
    """The PrimFunc compiled to native code (the argsort a TIR stable insertion sort,
    codegen/packed_builtins.py; the T.alloc_local bounds allocated) writes what the TIR
    interpreter writes (tied scores included)."""
    legal = legalize(parse(_nms_case(2, 7, 3)[1]))
    func = legal.functions["all_class_non_max_suppression"]
    exe = irtool.build(IRModule({"all_class_non_max_suppression": func}))
    rng = np.random.default_rng(11)
    for ties in (False, True):
        boxes, scores = _nms_inputs(rng, 2, 7, 3, ties)
        ins = [boxes, scores, np.array(0.4, "float32"), np.array(0.1, "float32")]
        interpreted = [np.zeros((42, 3), "int64"), np.zeros((1,), "int64")]
        native = [np.zeros((42, 3), "int64"), np.zeros((1,), "int64")]
        run_prim_func(func, [a.copy() for a in ins] + interpreted)
        exe["all_class_non_max_suppression"](*[a.copy() for a in ins], *native)
        for a, b in zip(interpreted, native):
            np.testing.assert_array_equal(a, b)


_ARGSORT = '''# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def argsort(x: T.Buffer((T.int64(3), T.int64(5)), "float32"), out: T.Buffer((T.int64(3), T.int64(5)), "int32"), first: T.Buffer((T.int64(3),), "int32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        out_buf = T.sblock_alloc_buffer((T.int64(3), T.int64(5)), "int32", align=8)
        with T.sblock("argsort_cpu"):
            T.reads()
            T.writes()
            T.call_packed("tvm.contrib.sort.argsort", T.tvm_stack_make_array(x.data, T.tvm_stack_make_shape(T.int64(3), T.int64(5)), 0, 2, T.float32(0.0), T.int64(0)), T.tvm_stack_make_array(out_buf.data, T.tvm_stack_make_shape(T.int64(3), T.int64(5)), 0, 2, 0, T.int64(0)), 1, T.bool(False))
        with T.sblock("copy"):
            T.reads()
            T.writes()
            for v in range(T.int64(3)):
                buffer = T.alloc_local((T.int64(1),), "int32")
                buffer[T.int64(0)] = 0
                while buffer[T.int64(0)] < 5:
                    out[v, T.Cast("int64", buffer[T.int64(0)])] = out_buf[v, T.Cast("int64", buffer[T.int64(0)])]
                    buffer[T.int64(0)] = buffer[T.int64(0)] + 1
                first[v] = out[v, T.int64(0)]
'''


def test_packed_argsort_alloc_local_and_while_run_in_both_backends():
    """T.call_packed of the runtime's argsort (stable, descending: ties in index order),
    T.alloc_local and a while loop: the text prints back as read, and the interpreter and the
    native build agree with NumPy's stable argsort."""
    mod = parse(_ARGSORT)
    assert to_text(mod).rstrip("\n") == _ARGSORT.rstrip("\n")
    x = (np.random.default_rng(3).integers(0, 3, size=(3, 5)) / 2).astype("float32")
    expected = np.argsort(-x, axis=1, kind="stable").astype("int32")
    func = mod.functions["argsort"]
    for run in (lambda a: run_prim_func(func, a), lambda a: irtool.build(mod)["argsort"](*a)):
        out, first = np.zeros((3, 5), "int32"), np.zeros((3,), "int32")
        run([x, out, first])
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(first, expected[:, 0])


# ----------------------------------------------------------------------------- ONNX models


@pytest.mark.parametrize("limit, iou, score", [(3, 0.5, 0.0), (10, 0.3, 0.25), (1, 0.7, 0.0)])
def test_onnx_nms_model_through_the_zero_pipeline(limit, iou, score):
    """An ONNX NonMaxSuppression model: imported (vision.all_class_non_max_suppression and
    dyn.strided_slice of its count), relay-to-relax (R.dynamic_strided_slice), the zero pipeline
    (both legalized) and our interpreters give onnxruntime's selected indices, before the
    pipeline and after it, and natively. Random boxes: no IoU lands exactly on the threshold, where TVM
    suppresses (>=) and ONNX does not (>)."""
    ort = pytest.importorskip("onnxruntime")
    from test_onnx_indexing import _model, node

    from irtool.frontend.onnx import from_onnx

    boxes, scores = _nms_inputs(np.random.default_rng(limit), 2, 9, 3, ties=False)
    inputs = {"b": boxes, "s": scores}
    model = _model([node("NonMaxSuppression", ["b", "s", "m", "i", "t"])], inputs, [("y", "int64")],
                   inits={"m": np.array([limit], "int64"), "i": np.array([iou], "float32"),
                          "t": np.array([score], "float32")})
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    relay, _ = from_onnx(model)
    relax = get_pass("relay-to-relax")()(relay)
    zero = get_pass("zero-pipeline")()(relax)
    text = to_text(zero)
    assert "R.vision.all_class_non_max_suppression" not in text and "R.dynamic_strided_slice" not in text
    for m in (relax, zero, parse(text)):
        np.testing.assert_array_equal(np.asarray(irtool.interpret(m, inputs)), expected)
    # natively: the outputs' sizes are known only after the run, so main runs on the VM
    exe = irtool.build(relax)
    assert exe.vm is not None
    np.testing.assert_array_equal(np.asarray(exe(boxes, scores)), expected)


def test_a_run_time_limit_is_not_read_by_the_legalized_module():
    """TVM 0.27 legalizes a max_output_boxes_per_class that is not a constant as N boxes per class
    (legalize_ops/vision.py); the run-time value is not read, by TVM's PrimFunc nor by ours: the
    legalized module with m = 1 gives what the op gives with m = N."""
    mod = parse(_nms_case(1, 6, 2)[1])
    legal = legalize(mod)
    assert "m" not in [p.name for p in legal.functions["all_class_non_max_suppression"].params]
    boxes, scores = _nms_inputs(np.random.default_rng(2), 1, 6, 2, ties=False)
    thresholds = [np.array(0.9, "float32"), np.array(0.0, "float32")]
    rows, count = run_relax(mod, [boxes, scores, np.array(6, "int64"), *thresholds])
    assert int(count[0]) > 2  # more than the run-time limit below would keep
    got_rows, got_count = run_relax(legal, [boxes, scores, np.array(1, "int64"), *thresholds])
    assert got_count.tolist() == count.tolist()
    np.testing.assert_array_equal(got_rows, rows[:int(count[0])])


# ----------------------------------------------------------------------------- other dtypes and sizes, run


def _form_inputs(rng, mod, sizes):
    """Boxes with integer corners 0..7 (some given as (y2, x2, y1, x1)) and scores on a grid of
    eighths (int scores 0..3): every width, area and sum is exact in float16, and an IoU, a ratio of
    small integers, is never within float16's rounding of a threshold it does not equal, so TVM's
    float16 arithmetic widened to float32 and the reference's agree; tied scores included."""
    params = mod.functions["main"].params
    b, n, c = [sizes.get(getattr(d, "name", None), d) for d in params[0].struct_info.shape[:2]] + \
        [sizes.get(getattr(params[1].struct_info.shape[1], "name", None), params[1].struct_info.shape[1])]
    corners = rng.integers(0, 5, size=(b, n, 2))
    extents = rng.integers(1, 4, size=(b, n, 2))
    flip = rng.random((b, n, 1)) < 0.3
    boxes = np.where(flip, np.concatenate([corners + extents, corners], -1),
                     np.concatenate([corners, corners + extents], -1))
    if params[0].struct_info.shape[2] > 4:  # boxes (B, N, K): K - 4 more integer columns
        boxes = np.concatenate([boxes, rng.integers(0, 8, size=(b, n, params[0].struct_info.shape[2] - 4))], -1)
    scores = rng.integers(0, 8, size=(b, c, n)) / 8
    if params[1].struct_info.dtype.startswith("int"):
        scores = rng.integers(0, 4, size=(b, c, n))
    return boxes.astype(_numpy_dtype(params[0].struct_info.dtype)), scores.astype(_numpy_dtype(params[1].struct_info.dtype))


_THRESHOLDS = {"float": [(0.5, 0.25), (0.3, 0.0), (0.0, 0.5), (1.0, 0.75)], "int": [(1, 0), (0, 1), (1, 2)],
               "uint": [(1, 0), (1, 2)], "bool": [(True, False), (False, True)]}
RUN_FORMS = NMS_DTYPES + NMS_SYMBOLIC + NMS_LIMITS + NMS_SHAPES + [c for c in NMS_BOX_WIDTHS if "k2" not in c[0]]


@pytest.mark.parametrize("case", RUN_FORMS, ids=lambda c: c[0])
def test_legalized_forms_run_as_the_reference(case):
    """Each form's legalized module (its PrimFunc in the TIR interpreter) gives the reference's
    rows and count (ONNX: the first `count` rows) or its per-batch rows, scores and counts."""
    if "bf16" in case[0]:
        pytest.importorskip("ml_dtypes")  # NumPy's bfloat16
    mod = parse(case[1])
    legal = legalize(mod)
    assert "R.vision.all_class_non_max_suppression(" not in to_text(legal)
    params = mod.functions["main"].params
    iou_dtype, st_dtype = params[3].struct_info.dtype, params[4].struct_info.dtype
    kind = next(k for k in ("bool", "uint", "int", "float") if iou_dtype.startswith(k) or k in iou_dtype)
    rng = np.random.default_rng(sum(map(ord, case[0])))
    for sizes in ({"nb": 2, "c": 3, "n": 6}, {"nb": 1, "c": 1, "n": 4}):
        boxes, scores = _form_inputs(rng, mod, sizes)
        for iou, st in _THRESHOLDS[kind]:
            args = [boxes, scores, np.full(params[2].struct_info.shape, scores.shape[2], "int64"),
                    np.full(params[3].struct_info.shape, iou, _numpy_dtype(iou_dtype)), np.array(st, _numpy_dtype(st_dtype))]
            want, got = run_relax(mod, args), run_relax(legal, args)
            if "tensorflow" in case[0]:
                for w, g in zip(want, got, strict=True):
                    assert w.dtype == g.dtype
                    np.testing.assert_array_equal(g, w)
                continue
            (rows, count), (got_rows, got_count) = want, got
            assert got_count.tolist() == count.tolist()
            np.testing.assert_array_equal(got_rows, rows[:int(count[0])])


NATIVE_FORMS = [case for name, form in [("f16", F16), ("f16-boxes-f32-scores", dict(boxes_dtype="float16")),
                                        ("i32-thresholds", dict(iou_dtype="int32", st_dtype="int32"))]
                for case in _both_formats(name, shape=(2, 7, 3), **form)]


@pytest.mark.parametrize("case", NATIVE_FORMS, ids=lambda c: c[0])
def test_nms_forms_prim_funcs_run_natively_as_interpreted(case):
    """float16 (the packed argsort of float16 scores, float16 stores of -1) and int thresholds:
    the PrimFunc compiled natively writes what the TIR interpreter writes."""
    mod = parse(case[1])
    func = legalize(mod).functions["all_class_non_max_suppression"]
    exe = irtool.build(IRModule({"all_class_non_max_suppression": func}))
    params = mod.functions["main"].params
    iou_dtype, st_dtype = params[3].struct_info.dtype, params[4].struct_info.dtype
    iou, st = (1, 0) if iou_dtype == "int32" else (0.4, 0.1)
    boxes, scores = _form_inputs(np.random.default_rng(5), mod, {})
    ins = [boxes, scores, np.array(iou, iou_dtype), np.array(st, st_dtype)]
    buffers = dict(func.buffer_map)
    outs = [buffers[p] for p in func.params[len(ins):]]
    interpreted = [np.zeros([d.value for d in b.shape], b.dtype) for b in outs]
    native = [np.zeros_like(a) for a in interpreted]
    run_prim_func(func, [a.copy() for a in ins] + interpreted)
    exe["all_class_non_max_suppression"](*[a.copy() for a in ins], *native)
    assert interpreted[-1].sum() > 0  # boxes were kept
    for a, b in zip(interpreted, native, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", _both_formats("k2", box_width=2) + _both_formats("st-0", st_shape=(0,)),
                         ids=lambda c: c[0])
def test_reference_of_unreadable_operands_is_a_located_diagnostic(case):
    """Boxes (B, N, K < 4), whose 4 values per box TVM's legalized code reads past the buffer's
    end, and a score_threshold of no elements (TVM cannot legalize a non-0-d one): the struct
    info is TVM's, the reference stops with a located diagnostic naming the operand."""
    mod = parse(case[1])
    params = mod.functions["main"].params
    boxes = np.zeros([d for d in params[0].struct_info.shape], "float32")
    args = [boxes, np.ones([d for d in params[1].struct_info.shape], "float32"), np.array(5, "int64"),
            np.array(0.5, "float32"), np.zeros([d for d in params[4].struct_info.shape], "float32")]
    with pytest.raises(irtool.DiagnosticError) as err:
        run_relax(mod, args)
    assert "boxes of shape (1, 5, 2)" in str(err.value) or "`score_threshold` has no elements" in str(err.value)
    assert err.value.span is not None and err.value.span.line == 10


def test_limit_of_no_elements_keeps_n_per_class():
    """A max_output_boxes_per_class of shape (0,): TVM 0.27's struct info takes it, its legalized
    code never reads a limit that is not a constant (N per class) and it cannot legalize a
    constant one of no elements; the reference keeps N per class, for a parameter and a constant."""
    empty_param = _nms_form("limit-0", m_shape=(0,))[1]
    empty_const = _nms_form("const-limit-empty", max_out='R.const([], "int64")')[1]
    boxes, scores = _form_inputs(np.random.default_rng(4), parse(empty_param), {})
    thresholds = [np.array(0.5, "float32"), np.array(0.0, "float32")]
    want = run_relax(parse(_nms_form("limit-n")[1]), [boxes, scores, np.array(5, "int64"), *thresholds])
    for text, m in ((empty_param, np.zeros((0,), "int64")), (empty_const, np.array(1, "int64"))):  # m unused
        got = run_relax(parse(text), [boxes, scores, m, *thresholds])
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)
