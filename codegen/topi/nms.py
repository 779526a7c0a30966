"""R.vision.all_class_non_max_suppression as TVM 0.27 legalizes it: TOPI's
python/tvm/topi/vision/nms.py (all_class_non_max_suppression) and nms_util.py, one PrimFunc of
TE computes and `te.extern` IR-builder programs; for the ONNX output format:

    T_reshape          scores (B, C, N) as (B * C, N)
    argsort_cpu        T.call_packed("tvm.contrib.sort.argsort", <DLTensor>, <DLTensor>, 1, False):
                       each row's box indices by descending score (int32 `out_buf`)
    T_gather           the sorted scores
    searchsorted       per row, a binary search (`while`, two `T.alloc_local` bounds) for how many
                       sorted scores exceed score_threshold
    all_class_nms      per row, the greedy loop: a kept box suppresses (score := -1) every later
                       box whose IoU with it is >= iou_threshold (TVM's >=; ONNX's is >), at most
                       max_output_boxes_per_class kept (`all_class_nms0` indices, `all_class_nms1`
                       counts)
    cumsum_generic     the exclusive cumsum of the counts: each row's first output row
    collect_indices    zero the (B * C * max_out, 3) output, then (batch, class, box) per kept box
    clamped_num, compute, compute_red, T_reshape: the total count, min(count, max_out) summed

The IR-builder programs are written as TVM prints them after CreatePrimFunc's
IndexDataTypeNormalizer: loop variables int64, constants in indices, loop extents and `if`
conditions int64, an int32 value there cast where it meets an int64 one (`T.Cast("int64",
searchsorted[v]) > T.int64(0)`), values (stores of counts, the binary search's bounds) int32.
Buffers are indexed as TVM's buffer proxy indexes them (boxes by a flat offset, unravelled).

Other dtypes as TOPI's operators make them: its Python floats are float32 constants (`_f32`), so
a float16 box or score meeting one is widened and the IoU is float32; its `0`s are int32 (`_ZERO`),
cast to the other side; a store casts the value to the buffer's dtype (a suppressed float16 score
is `T.float16(-1.0)`, a kept one in the float32 scores of the "tensorflow" format a `T.Cast`).

The "tensorflow" format keeps each kept box's score too (`all_class_nms` with three outputs),
sums and scans the counts per batch (`cumsum_generic` along the classes) and writes per batch
[class, box] rows and scores, zeros after the count (`collect_indices_and_scores`).

The Relax side (`_all_class_non_max_suppression`): the PrimFunc's rows are B * C * max_out with
max_out the constant `max_output_boxes_per_class` or else N; TVM then slices the first
`num_total_detections` rows with R.dynamic_strided_slice (see docs/passes.md for what of that is
done).
"""

from __future__ import annotations

import numpy as np

from irtool.ir import relax as rx
from irtool.ir import tir
from irtool.ir.expr import Op

from .. import te
from .. import tir_build as tb
from ..simplify import normalize_index_dtype
from . import register_legalize
from .common import const_int
from .elemwise import cast
from .reduce import topi_sum
from .scatter import _loop, _seq_scope, _unravel
from .transform import gather, reshape

I64 = "int64"


def _i64(e) -> tir.PrimExpr:
    """An int32 value where it meets an int64 one in an index, extent or condition."""
    return e if e.dtype == I64 else tir.Cast(I64, e)


def _c64(value: int) -> tir.PrimExpr:
    return tb.const(value, I64)


def _load(buf: tir.Buffer, *indices) -> tir.BufferLoad:
    return tir.BufferLoad(buf, list(indices))


_ZERO = tb.const(0, "int32")  # TOPI's `0` and `te.const(0)`: int32, cast to a float operand's dtype


def _f32(value: float) -> tir.PrimExpr:
    """A Python float of TOPI's: TVM's FFI makes it a float32 constant before the operator
    matches types, so it widens a float16 operand (`T.Cast("float32", x) > T.float32(-1.0)`)."""
    return tb.const(value, "float32")


def _store(buf: tir.Buffer, value, *indices) -> tir.BufferStore:
    """The IR builder's store: a value of another dtype is cast to the buffer's."""
    return tir.BufferStore(buf, tb.cast(buf.dtype, value), list(indices))


def _flat_load(buf: tir.Buffer, flat) -> tir.BufferLoad:
    return tir.BufferLoad(buf, _unravel(flat, buf.shape))


def _local(dtype: str) -> tir.Buffer:
    """IRBuilder's `T.decl_buffer([1], dtype, scope="local")`, printed `T.alloc_local`."""
    return tir.Buffer("buffer", [_c64(1)], dtype, scope="local")


def _with_locals(bufs: list, body_of) -> tir.Stmt:
    stmt = body_of(*bufs)
    for buf in reversed(bufs):
        stmt = tir.DeclBuffer(buf, stmt)
    return stmt


def _if(cond, then, else_=None) -> tir.IfThenElse:
    """An `if` as CreatePrimFunc's IndexDataTypeNormalizer leaves it: integer comparisons in
    int64 (an int threshold's `iou[()] > 0` is `T.Cast("int64", iou[()]) > T.int64(0)`)."""
    return tir.IfThenElse(normalize_index_dtype(cond, I64, in_condition=True), then, else_)


# ----------------------------------------------------------------------------- argsort


def _pack(buf: tir.Buffer) -> tir.Call:
    """`call_packed`'s DLTensor of a buffer (TVM's _pack_buffer): data, shape, no strides, ndim,
    a zero of the dtype, the element offset."""
    shape = tir.Call("handle", "tirx.tvm_stack_make_shape", list(buf.shape))
    return tir.Call("handle", "tirx.tvm_stack_make_array",
                    [buf.data, shape, tb.const(0, "int32"), tb.const(len(buf.shape), "int32"),
                     tb.const(0, buf.dtype), _c64(0)])


def argsort(data: te.Tensor, axis: int = -1, is_ascend: bool = True, dtype: str = "float32") -> te.Tensor:
    """TOPI's CPU argsort: an extern calling the runtime's `tvm.contrib.sort.argsort`."""
    data_buf = tir.Buffer("data_buf", data.shape, data.dtype, align=8)
    out_buf = tir.Buffer("out_buf", data.shape, dtype, align=8)

    def body(ins, out):
        call = tir.Call("int32", "tirx.tvm_call_packed",
                        [tir.StringImm("tvm.contrib.sort.argsort"), _pack(ins[0]), _pack(out),
                         tb.const(axis, "int32"), tb.const(is_ascend, "bool")])
        return tir.Evaluate(call)

    return te.extern(out_buf, [data], body, name="argsort_cpu", in_buffers=[data_buf])


# ----------------------------------------------------------------------------- valid counts


def _binary_search(row, num_boxes, scores: tir.Buffer, threshold, out: tir.Buffer) -> tir.Stmt:
    """nms_util.binary_search: how many of a row's descending scores exceed `threshold`."""

    def search(lo, hi):
        lo0, hi0 = _load(lo, _c64(0)), _load(hi, _c64(0))
        total = tb.add(hi0, lo0)
        mid = tir.Call("int32", "tirx.shift_right", [total, tb.const(1, "int32")])
        mid_index = tir.Call(I64, "tirx.shift_right", [_i64(total), _c64(1)])
        step = _if(tb.gt(_load(scores, row, mid_index), threshold),
                   _store(lo, tb.add(mid, 1), _c64(0)), _store(hi, mid, _c64(0)))
        return tir.seq([_store(lo, tb.const(0, "int32"), _c64(0)),
                        _store(hi, tir.Cast("int32", num_boxes), _c64(0)),
                        tir.While(tb.lt(lo0, hi0), step),
                        _store(out, lo0, row)])

    return _with_locals([_local("int32"), _local("int32")], search)


def get_valid_box_count(scores: te.Tensor, score_threshold: te.Tensor) -> te.Tensor:
    """nms.py's _get_valid_box_count with a 0-d score_threshold tensor (`searchsorted`)."""
    batch_classes, num_boxes = scores.shape
    scores_buf = tir.Buffer("scores_buf", scores.shape, scores.dtype, align=8)
    thresh_buf = tir.Buffer("score_thresh_buf", score_threshold.shape, score_threshold.dtype, align=8)
    out_buf = tir.Buffer("searchsorted", [batch_classes], "int32", align=8)

    def body(ins, out):
        scores_b, thresh_b = ins
        return _loop(batch_classes, "parallel",
                     lambda v: _binary_search(v, num_boxes, scores_b, _load(thresh_b), out))

    return te.extern(out_buf, [scores, score_threshold], body, name="searchsorted",
                     in_buffers=[scores_buf, thresh_buf])


# ----------------------------------------------------------------------------- the NMS loop


def _boundaries(boxes: tir.Buffer, idx):
    """nms_util._get_boundaries: left, top, right, bottom of the box at flat offset `idx`."""
    at = [_flat_load(boxes, idx if k == 0 else tb.add(idx, k)) for k in range(4)]
    return tb.min_(at[0], at[2]), tb.min_(at[1], at[3]), tb.max_(at[0], at[2]), tb.max_(at[1], at[3])


def _overlap(boxes: tir.Buffer, a_idx, b_idx) -> tir.PrimExpr:
    """nms_util.calculate_overlap: the IoU, 0 where the union is not positive."""
    a_l, a_t, a_r, a_b = _boundaries(boxes, a_idx)
    b_l, b_t, b_r, b_b = _boundaries(boxes, b_idx)
    w = tb.max_(_f32(0.0), tb.sub(tb.min_(a_r, b_r), tb.max_(a_l, b_l)))
    h = tb.max_(_f32(0.0), tb.sub(tb.min_(a_b, b_b), tb.max_(a_t, b_t)))
    area = tb.mul(h, w)
    union = tb.sub(tb.add(tb.mul(tb.sub(a_r, a_l), tb.sub(a_b, a_t)),
                          tb.mul(tb.sub(b_r, b_l), tb.sub(b_b, b_t))), area)
    return tb.select(tb.le(union, _f32(0.0)), _f32(0.0), tb.div(area, union))


def _threshold_value(threshold: te.Tensor) -> tir.PrimExpr:
    """_all_class_nms_ir's iou_threshold: a 0-d tensor's value, a (1,) tensor's first, else the
    float32 0.5 (TOPI's default for any other shape: the tensor is not read)."""
    if len(threshold.shape) == 0:
        return threshold()
    if len(threshold.shape) == 1 and const_int(threshold.shape[0]) == 1:
        return threshold(_c64(0))
    return _f32(0.5)


def all_class_nms(boxes: te.Tensor, sorted_scores: te.Tensor, sorted_indices: te.Tensor,
                  valid_count: te.Tensor, max_output_size: int, iou_threshold: te.Tensor,
                  score_threshold: te.Tensor, return_scores: bool = False) -> list:
    """nms_util.run_all_class_nms with nms.py's _nms_loop: [indices, counts] (the ONNX format,
    TOPI's own output buffers) or [indices, scores, counts] (TensorFlow, te.extern's)."""
    batch_class, num_boxes = sorted_scores.shape
    num_anchors = boxes.shape[1]
    num_class = tb.floordiv(batch_class, boxes.shape[0])
    if return_scores:
        outputs = [te.extern_output("all_class_nms", [batch_class, num_boxes], "int32"),
                   te.extern_output("all_class_nms", [batch_class, num_boxes], "float32"),
                   te.extern_output("all_class_nms", [batch_class], "int32")]
    else:
        outputs = [tir.Buffer("all_class_nms0", [batch_class, num_boxes], "int32", align=8),
                   tir.Buffer("all_class_nms1", [batch_class], "int32", align=8)]

    def body(ins, outs):
        boxes_b, scores_b, indices_b, valid_b, thresh_b = ins
        box_indices, num_valid = outs[0], outs[-1]
        selected_scores = outs[1] if return_scores else None
        iou = _threshold_value(iou_threshold)

        def row(i):
            nkeep = _i64(_load(valid_b, i))  # top_k is -1: all valid boxes
            base = tb.mul(tb.mul(tb.floordiv(i, num_class), num_anchors), 4)

            def box_offset(j):
                return tb.add(base, tb.mul(_i64(_load(indices_b, i, j)), _c64(4)))

            def kept(count, j):
                def suppress(m):
                    k = tb.add(tb.add(j, _c64(1)), m)
                    still_valid = tb.logical_and(tb.lt(k, nkeep), tb.gt(_load(scores_b, i, k), _ZERO))
                    overlapping = tb.ge(_overlap(boxes_b, box_offset(j), box_offset(k)), iou)
                    return _if(still_valid, _if(overlapping, _store(scores_b, _f32(-1.0), i, k)))

                at = _load(count, _c64(0))
                keep = [_store(box_indices, _load(indices_b, i, j), i, at)]
                if selected_scores is not None:
                    keep.append(_store(selected_scores, _load(scores_b, i, j), i, at))
                return tir.seq([
                    _if(tb.const(True, "bool"), tir.seq(keep)),
                    _store(count, tb.add(_load(count, _c64(0)), 1), _c64(0)),
                    _loop(tb.sub(tb.sub(nkeep, j), _c64(1)), "parallel", suppress)])

            def candidates(count):
                def visit(j):
                    valid = tb.logical_and(tb.gt(_load(scores_b, i, j), _f32(-1.0)),
                                           tb.lt(_i64(_load(count, _c64(0))), _c64(max_output_size)))
                    return _if(valid, _if(tb.gt(_load(scores_b, i, j), _load(thresh_b)), kept(count, j)))

                return tir.seq([_store(count, tb.const(0, "int32"), _c64(0)),
                                _loop(nkeep, "serial", visit),
                                _store(num_valid, _load(count, _c64(0)), i)])

            active = tb.logical_and(tb.gt(iou, _ZERO), tb.gt(nkeep, _c64(0)))
            return _if(active, _with_locals([_local("int32")], candidates),
                       _store(num_valid, tb.const(0, "int32"), i))

        return _loop(batch_class, "serial", row)

    return te.extern(outputs, [boxes, sorted_scores, sorted_indices, valid_count, score_threshold],
                     body, name="all_class_nms")


# ----------------------------------------------------------------------------- outputs


def exclusive_cumsum(data: te.Tensor, dtype: str, axis: int | None = None) -> te.Tensor:
    """topi.cumsum(data, axis, exclusive=True, dtype) for the axis-last cases NMS has (scan.py's
    `cumsum_generic`: one line per parallel iteration, indexed flat through the buffer proxy)."""
    if axis is None:
        if len(data.shape) != 1:
            raise NotImplementedError("cumsum of a flattened multi-dimensional tensor")
        shape, length, before = [data.shape[0]], data.shape[0], 1
    else:
        shape, length = list(data.shape), data.shape[axis]
        before = 1
        for d in data.shape[:axis]:
            before = tb.mul(before, d)
        if axis != len(data.shape) - 1:
            raise NotImplementedError("cumsum along an axis other than the last")
    out_buf = tir.Buffer("out_buf", shape, dtype)

    def body(ins, out):
        def scan(fused):
            base = tb.mul(fused, length)

            def step(m):
                k = tb.add(m, _c64(1))
                prev = tb.add(base, tb.sub(k, _c64(1)))
                value = tb.add(_flat_load(out, prev), tb.cast(dtype, _flat_load(ins[0], prev)))
                return tir.BufferStore(out, value, _unravel(tb.add(base, k), out.shape))

            return tir.seq([tir.BufferStore(out, tb.const(0, dtype), _unravel(base, out.shape)),
                            _loop(tb.sub(length, _c64(1)), "serial", step)])

        return _loop(before, "parallel", scan)

    return te.extern(out_buf, [data], body, name="cumsum_generic")


def collect_selected_indices(num_class, selected: te.Tensor, num_detections: te.Tensor, row_offsets: te.Tensor,
                             max_output_boxes_per_class: int) -> te.Tensor:
    """nms_util.collect_selected_indices with nms.py's _collect_selected_indices_ir."""
    batch_classes = selected.shape[0]
    rows = tb.mul(batch_classes, max_output_boxes_per_class)
    out_buf = te.extern_output("collect_indices", [rows, 3], "int64")

    def body(ins, out):
        selected_b, counts_b, offsets_b = ins

        def row(i):
            limit = tb.min_(_i64(_load(counts_b, i)), _c64(max_output_boxes_per_class))

            def element(j):
                at = tb.add(_load(offsets_b, i), j)
                return tir.seq([_store(out, tb.floordiv(i, num_class), at, _c64(0)),
                                _store(out, tb.floormod(i, num_class), at, _c64(1)),
                                _store(out, tb.cast(I64, _load(selected_b, i, j)), at, _c64(2))])

            return _loop(limit, "serial", element)

        zero = _loop(rows, "serial", lambda r: _loop(3, "serial", lambda c: _store(out, _c64(0), r, c)))
        return _seq_scope(zero, _loop(batch_classes, "parallel", row))

    return te.extern(out_buf, [selected, num_detections, row_offsets], body, name="collect_indices")


def collect_selected_indices_and_scores(selected: te.Tensor, selected_scores: te.Tensor, num_detections: te.Tensor,
                                        row_offsets: te.Tensor, num_total: te.Tensor) -> list:
    """nms_util.collect_selected_indices_and_scores with nms.py's IR: per batch, (class, box) and
    the score of each kept box, classes one after the other, zeros after the total."""
    batch_size, num_class = row_offsets.shape
    num_boxes = selected.shape[1]
    rows = tb.mul(num_class, num_boxes)
    outputs = [te.extern_output("collect_indices_and_scores", [batch_size, rows, 2], I64),
               te.extern_output("collect_indices_and_scores", [batch_size, rows], "float32")]

    def body(ins, outs):
        selected_b, scores_b, counts_b, offsets_b, total_b = ins
        indices_out, scores_out = outs

        def line(i):
            batch_id, class_id = tb.floordiv(i, num_class), tb.floormod(i, num_class)
            count = _load(counts_b, batch_id, class_id)

            def element(j):
                at = tb.add(_load(offsets_b, batch_id, class_id), j)
                kept = tir.seq([_store(indices_out, class_id, batch_id, at, _c64(0)),
                                _store(indices_out, tb.cast(I64, _load(selected_b, i, j)), batch_id, at, _c64(1)),
                                _store(scores_out, _load(scores_b, i, j), batch_id, at)])
                tail = tb.sub(tb.add(tb.sub(tb.add(_load(total_b, batch_id), tb.mul(class_id, num_boxes)),
                                            _load(offsets_b, batch_id, class_id)), j), _i64(count))
                zeros = tir.seq([_store(indices_out, _c64(0), batch_id, tail, _c64(0)),
                                 _store(indices_out, _c64(0), batch_id, tail, _c64(1)),
                                 _store(scores_out, tb.const(0.0, "float32"), batch_id, tail)])
                return _if(tb.lt(j, _i64(count)), kept, zeros)

            return _loop(num_boxes, "serial", element)

        return _loop(tb.mul(batch_size, num_class), "parallel", line)

    return te.extern(outputs, [selected, selected_scores, num_detections, row_offsets, num_total], body,
                     name="collect_indices_and_scores")


def all_class_non_max_suppression(boxes: te.Tensor, scores: te.Tensor, max_output_boxes_per_class: int,
                                  iou_threshold: te.Tensor, score_threshold: te.Tensor,
                                  output_format: str = "onnx") -> list:
    """TOPI's all_class_non_max_suppression with a constant max_output_boxes_per_class, a 0-d
    score_threshold tensor and an iou_threshold tensor of any shape (_threshold_value), of any
    dtypes TVM takes: ONNX [(B * C * max_out, 3) indices, (1,) total count],
    TensorFlow [(B, C * N, 2) indices, (B, C * N) float32 scores, (B,) counts]."""
    batch, num_class, num_boxes = scores.shape
    flat_scores = reshape(scores, [tb.mul(batch, num_class), num_boxes])
    sorted_indices = argsort(flat_scores, axis=1, is_ascend=False, dtype="int32")
    sorted_scores = gather(flat_scores, 1, sorted_indices)
    valid_count = get_valid_box_count(sorted_scores, score_threshold)
    if output_format == "tensorflow":
        selected, selected_scores, num_detections = all_class_nms(
            boxes, sorted_scores, sorted_indices, valid_count, max_output_boxes_per_class, iou_threshold,
            score_threshold, return_scores=True)
        per_batch = reshape(num_detections, [batch, num_class])
        row_offsets = exclusive_cumsum(per_batch, I64, axis=1)
        num_total = topi_sum(cast(per_batch, I64), axis=[1])
        return collect_selected_indices_and_scores(selected, selected_scores, per_batch, row_offsets,
                                                   num_total) + [num_total]
    selected, num_detections = all_class_nms(boxes, sorted_scores, sorted_indices, valid_count,
                                             max_output_boxes_per_class, iou_threshold, score_threshold)
    row_offsets = exclusive_cumsum(num_detections, I64)
    clamped = te.compute(num_detections.shape,
                         lambda i: tb.min_(num_detections(i), tb.const(max_output_boxes_per_class, "int32")),
                         name="clamped_num")
    total = reshape(topi_sum(cast(clamped, I64), axis=[0]), [1])
    indices = collect_selected_indices(num_class, selected, num_detections, row_offsets,
                                       max_output_boxes_per_class)
    return [indices, total]


# ----------------------------------------------------------------------------- the Relax side


def build_begin() -> te.Tensor:
    return te.compute((2,), lambda i: tb.const(0, I64), name="begin")


def build_strides() -> te.Tensor:
    return te.compute((2,), lambda i: tb.const(1, I64), name="strides")


def build_end(count: te.Tensor) -> te.Tensor:
    """[count[0], 3]: the rows holding detections, all three columns."""
    return te.compute((2,), lambda i: tb.if_then_else(tb.eq(i, 0), tb.cast(I64, count(0)), tb.const(3, I64)),
                      name="end")


def _shape(arg) -> list | None:
    sinfo = arg.struct_info
    if not isinstance(sinfo, rx.TensorStructInfo) or not isinstance(sinfo.shape, tuple):
        return None
    return list(sinfo.shape)


@register_legalize("relax.vision.all_class_non_max_suppression")
def _all_class_non_max_suppression(bb, call):
    """TVM's legalization (legalize_ops/vision.py): ONNX format, the PrimFunc's indices, then the
    rows holding detections sliced by R.dynamic_strided_slice, the result (indices, count);
    TensorFlow format, the PrimFunc's (indices, scores, counts). Left as a call where TVM 0.27's
    legalization raises: shapes not known, a score_threshold that is not 0-d (TOPI reads
    `score_threshold[()]`), float64 boxes (TOPI's IoU is a Select of the float32 0.0 and a float64
    ratio), a symbolic N without a constant max_output_boxes_per_class (`int(num_boxes)`)."""
    boxes, scores, max_out, iou, score_threshold = call.args
    shapes = [_shape(a) for a in (boxes, scores, iou, score_threshold)]
    if None in shapes or shapes[3] != []:
        return call
    if tb.is_float(boxes.struct_info.dtype) and tb.bits(boxes.struct_info.dtype) > 32:
        return call
    if isinstance(max_out, rx.Constant) and max_out.data is not None:
        if np.ndim(max_out.data) != 0:
            return call  # TVM's `int(value.numpy())` takes 0-d constants only
        max_boxes = int(max_out.data)
    else:
        max_boxes = const_int(shapes[1][2])  # TVM sizes the output for every box of a class
        if max_boxes is None:
            return call
    if call.attrs["output_format"] == "tensorflow":  # TOPI's three outputs as they are
        return bb.call_te(all_class_non_max_suppression, boxes, scores, max_boxes, iou, score_threshold,
                          "tensorflow")
    nms = bb.emit(bb.call_te(all_class_non_max_suppression, boxes, scores, max_boxes, iou, score_threshold))
    selected = bb.emit(rx.TupleGetItem(nms, 0))
    count = bb.emit(rx.TupleGetItem(nms, 1))
    begin = bb.call_te(build_begin)
    strides = bb.call_te(build_strides)
    end = bb.call_te(build_end, count)
    begin, end, strides = bb.emit(begin), bb.emit(end), bb.emit(strides)
    sliced = bb.emit(rx.Call(Op.get("relax.dynamic_strided_slice"), [selected, begin, end, strides], None))
    return rx.Tuple([sliced, count])
