"""R.vision.get_valid_counts and R.vision.non_max_suppression as TVM 0.27 legalizes them: TOPI's
python/tvm/topi/vision/nms.py (get_valid_counts, non_max_suppression, _rearrange_out) and
sort.py's argsort with a valid count, `te.extern` IR-builder programs written as TVM prints them
after CreatePrimFunc's IndexDataTypeNormalizer (see codegen/topi/nms.py for those rules):

    get_valid_counts      one opaque sblock (the root): per batch, the rows whose score exceeds
                          score_threshold (and whose class id is >= 0, unless id_index is -1)
                          moved to the top with their indices, -1 rows and indices after them
    non_max_suppression   score_tensor      a compute: data[:, :, score_index]
                          argsort_nms_cpu   T.call_packed("tvm.contrib.sort.argsort_nms", ...):
                                            per batch the first valid_count scores sorted
                                            (descending, stable), the others in place
                          non_max_suppression  per batch (parallel): the top_k sorted rows copied,
                                            then hard NMS (a kept box suppresses each later one
                                            of its class, or any with force_suppress, whose IoU
                                            is >= iou_threshold: score and index -1) or soft NMS
                                            (the best remaining box kept, the others' scores
                                            decayed by exp(-0.5 / sigma * iou^2)), at most
                                            max_output_size kept; with return_indices the kept
                                            boxes' input indices compacted and counted
                          rearrange_out     (invalid_to_bottom without return_indices) the rows
                                            of non-negative score moved to the top

TOPI's constants: `tirx.const(value, data.dtype)` of a Python float keeps the double
(`T.float32(0.10000000000000001)`); `tvm.tirx.Cast(dtype, T.float32(-1.0))` is a Cast node
(printed as such, not folded); `tvm.tirx.Select` of a constant condition is not folded either.
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .nms import _c64, _i64, _if, _load, _local, _pack, _store, _with_locals
from .norm import float_const
from .scatter import _loop

I32 = "int32"


def topi_const(value: float, dtype: str) -> tir.PrimExpr:
    """`tirx.const(value, dtype)` of a Python float: a float keeps the double, an integer type
    truncates it (`tirx.const(0.25, "int32")` is 0)."""
    return float_const(value, dtype) if tb.is_float(dtype) else tb.const(int(value), dtype)


def _minus_one(dtype: str) -> tir.PrimExpr:
    """TOPI's `tvm.tirx.Cast(data.dtype, T.float32(-1.0))`: a Cast node even on float32."""
    return tir.Cast(dtype, tb.const(-1.0, "float32"))


def _fill_row(buf: tir.Buffer, i, j, length, value) -> tir.Stmt:
    return _loop(length, "serial", lambda k: _store(buf, value, i, j, k))


# ----------------------------------------------------------------------------- get_valid_counts


def get_valid_counts(data: te.Tensor, score_threshold: float, id_index: int, score_index: int) -> list:
    """TOPI's get_valid_counts with a constant score_threshold: [valid_count (B,) int32,
    out_tensor (B, N, K), out_indices (B, N) int32]."""
    batch, num_anchors, length = data.shape
    threshold = topi_const(score_threshold, data.dtype)
    outs = [tir.Buffer("valid_count", [batch], I32), tir.Buffer("out_tensor", list(data.shape), data.dtype),
            tir.Buffer("out_indices", [batch, num_anchors], I32)]

    def body(ins, outs):
        (data_b,), (count, out_tensor, out_indices) = ins, outs

        def batch_row(i):
            def select(j):
                valid = tb.gt(_load(data_b, i, j, _c64(score_index)), threshold)
                if id_index >= 0:
                    valid = tb.logical_and(valid, tb.ge(_load(data_b, i, j, _c64(id_index)), tb.const(0, I32)))
                at = _load(count, i)
                move = tir.seq([_loop(length, "serial", lambda k: _store(out_tensor, _load(data_b, i, j, k), i, at, k)),
                                _store(out_indices, j, i, at),
                                _store(count, tb.add(_load(count, i), 1), i)])
                return _if(valid, move)

            def fill(j):
                return _if(tb.ge(j, _load(count, i)),
                           tir.seq([_fill_row(out_tensor, i, j, length, _minus_one(data.dtype)),
                                    _store(out_indices, tb.const(-1, I32), i, j)]))

            return tir.seq([_store(count, tb.const(0, I32), i), _loop(num_anchors, "serial", select),
                            _loop(num_anchors, "serial", fill)])

        return _loop(batch, "parallel", batch_row)

    data_buf = tir.Buffer("data", list(data.shape), data.dtype)
    return te.extern(outs, [data], body, name="get_valid_counts", in_buffers=[data_buf])


@register_legalize("relax.vision.get_valid_counts")
def _get_valid_counts(bb, call):
    at = call.attrs
    return bb.call_te(get_valid_counts, call.args[0], at["score_threshold"], at["id_index"], at["score_index"])


# ----------------------------------------------------------------------------- non_max_suppression


def argsort_nms(data: te.Tensor, valid_count: te.Tensor, axis: int = 1, is_ascend: bool = False) -> te.Tensor:
    """TOPI's argsort with a valid_count: an extern calling the runtime's
    `tvm.contrib.sort.argsort_nms` (int32 indices)."""
    data_buf = tir.Buffer("data_buf", data.shape, data.dtype, align=8)
    count_buf = tir.Buffer("valid_count_buf", valid_count.shape, valid_count.dtype, align=4)
    out_buf = tir.Buffer("out_buf", data.shape, I32, align=8)

    def body(ins, out):
        call = tir.Call(I32, "tirx.tvm_call_packed",
                        [tir.StringImm("tvm.contrib.sort.argsort_nms"), _pack(ins[0]), _pack(ins[1]), _pack(out),
                         tb.const(axis, I32), tb.const(is_ascend, "bool")])
        return tir.Evaluate(call)

    return te.extern(out_buf, [data, valid_count], body, name="argsort_nms_cpu", in_buffers=[data_buf, count_buf])


def _all(first, *rest) -> tir.PrimExpr:
    """tvm.tirx.all: the conditions and-ed left to right."""
    for c in rest:
        first = tb.logical_and(first, c)
    return first


class _Boxes:
    """The IoU of two rows of `out_data` (TOPI's compute_iou, in the data's dtype)."""

    def __init__(self, out_data: tir.Buffer, i, coord_start: int, zero) -> None:
        self.out_data, self.i, self.coord_start, self.zero = out_data, i, coord_start, zero

    def _at(self, row, k):
        return _load(self.out_data, self.i, row, _c64(self.coord_start + k))

    def _corners(self, row):
        x0, y0, x1, y1 = (self._at(row, k) for k in range(4))
        return tb.min_(x0, x1), tb.min_(y0, y1), tb.max_(x0, x1), tb.max_(y0, y1)

    def iou(self, lhs, rhs) -> tir.PrimExpr:
        lhs_l, lhs_t, lhs_r, lhs_b = self._corners(lhs)
        rhs_l, rhs_t, rhs_r, rhs_b = self._corners(rhs)
        width = tb.max_(self.zero, tb.sub(tb.min_(lhs_r, rhs_r), tb.max_(lhs_l, rhs_l)))
        height = tb.max_(self.zero, tb.sub(tb.min_(lhs_b, rhs_b), tb.max_(lhs_t, rhs_t)))
        intersection = tb.mul(height, width)
        union = tb.sub(tb.add(tb.mul(tb.sub(lhs_r, lhs_l), tb.sub(lhs_b, lhs_t)),
                              tb.mul(tb.sub(rhs_r, rhs_l), tb.sub(rhs_b, rhs_t))), intersection)
        return tir.Select(tb.le(union, self.zero), self.zero, tb.div(intersection, union))


class _ClassicNms:
    """nms.py's _classic_nms_ir for one batch row `i`: the buffers, TOPI's constants and the
    statements of each step, built as TVM's IRBuilder writes them."""

    def __init__(self, at: dict, dtype: str, length, num_anchors, ins: list, outs: list, i) -> None:
        self.at, self.dtype, self.length, self.num_anchors, self.i = at, dtype, length, num_anchors, i
        self.data, self.sorted_index, self.valid_count, self.indices = ins
        self.out_data, self.out_box_indices = outs[0], outs[1]
        self.out_count = outs[2] if len(outs) > 2 else None
        self.soft = at["soft_nms_sigma"] > 0.0
        self.max_out = tb.const(at["max_output_size"], I32)
        self.iou_threshold = topi_const(at["iou_threshold"], dtype)
        self.thresh = tir.Cast(dtype, float_const(at["score_threshold"] if self.soft else 0.0, "float32"))
        self.boxes = _Boxes(self.out_data, i, at["coord_start"], tir.Cast(dtype, float_const(0.0, "float32")))

    # -- small pieces

    def score(self, row) -> tir.PrimExpr:
        return _load(self.out_data, self.i, row, _c64(self.at["score_index"]))

    def below_limit(self, kept: tir.Buffer) -> tir.PrimExpr:
        """Select(max_output_size > 0, kept < max_output_size, True): TVM keeps the Select."""
        return tir.Select(tb.gt(self.max_out, tb.const(0, I32)), tb.lt(_load(kept, _c64(0)), self.max_out),
                          tb.const(True, "bool"))

    def same_class(self, lhs, rhs) -> tir.PrimExpr:
        id_index = self.at["id_index"]
        if self.at["force_suppress"] or id_index < 0:
            return tb.const(True, "bool")
        column = _c64(id_index)
        return tb.eq(_load(self.out_data, self.i, lhs, column), _load(self.out_data, self.i, rhs, column))

    def set_index(self, j, value) -> tir.Stmt:
        return _store(self.out_box_indices, value, self.i, j)

    def drop_index(self, j) -> tir.Stmt:
        return self.set_index(j, tb.const(-1, I32))

    def minus_one_data(self, j) -> tir.Stmt:
        return _fill_row(self.out_data, self.i, j, self.length, _minus_one(self.dtype))

    def minus_one_row(self, j) -> tir.Stmt:
        return tir.seq([self.minus_one_data(j), self.drop_index(j)])

    # -- step 1: the top_k sorted rows

    def copy_sorted(self, nkeep0) -> tir.Stmt:
        def copy(j):
            src = _load(self.sorted_index, self.i, j)
            moved = tir.seq([_loop(self.length, "serial",
                                   lambda k: _store(self.out_data, _load(self.data, self.i, src, k), self.i, j, k)),
                             self.set_index(j, _load(self.sorted_index, self.i, j))])
            return _if(tb.lt(j, nkeep0), moved, self.minus_one_row(j))

        return _loop(self.num_anchors, "serial", copy)

    # -- step 2: hard NMS

    def hard(self, nkeep0, kept: tir.Buffer) -> tir.Stmt:
        i, at = self.i, self.at

        def visit(j):
            def check(k):
                drop = tir.seq([_store(self.out_data, _minus_one(self.dtype), i, k, _c64(at["score_index"])),
                                self.drop_index(k)])
                overlapping = _if(tb.ge(self.boxes.iou(j, k), self.iou_threshold), drop)
                return _if(_all(tb.gt(k, j), tb.gt(self.score(k), self.thresh)),
                           _if(self.same_class(j, k), overlapping))

            keep = tir.seq([_store(kept, tb.add(_load(kept, _c64(0)), 1), _c64(0)),
                            _loop(_i64(nkeep0), "serial", check)])
            return _if(_all(tb.gt(self.score(j), self.thresh), self.below_limit(kept)), keep, self.minus_one_row(j))

        return _loop(_i64(nkeep0), "serial", visit)

    def hard_indices(self, valid_idx: tir.Buffer) -> tir.Stmt:
        """The kept boxes' input indices compacted, counted, -1 after."""
        i, count = self.i, _load(valid_idx, _c64(0))

        def move(j):
            orig = _load(self.out_box_indices, i, j)
            return _if(tb.ge(orig, tb.const(0, I32)),
                       tir.seq([_store(self.out_box_indices, _load(self.indices, i, orig), i, count),
                                _store(valid_idx, tb.add(count, 1), _c64(0))]))

        return tir.seq([_store(valid_idx, tb.const(0, I32), _c64(0)), _loop(self.num_anchors, "serial", move),
                        _store(self.out_count, count, i, _c64(0)),
                        _loop(self.num_anchors, "serial", lambda j: _if(tb.ge(j, count), self.drop_index(j)))])

    # -- step 2: soft NMS

    def soft_step(self, nkeep0, kept, best_idx, best_score, tmp_idx, tmp_val) -> tir.Stmt:
        i, at = self.i, self.at
        kept0, best0 = _load(kept, _c64(0)), _load(best_idx, _c64(0))
        scale = tir.Cast(self.dtype, float_const(-0.5 / at["soft_nms_sigma"], "float32"))

        def find(j):
            better = _all(tb.ge(j, kept0), tb.ge(_load(self.out_box_indices, i, j), tb.const(0, I32)),
                          tb.gt(self.score(j), _load(best_score, _c64(0))))
            return _if(better, tir.seq([_store(best_idx, j, _c64(0)), _store(best_score, self.score(j), _c64(0))]))

        def swap_row(k):
            return tir.seq([_store(tmp_val, _load(self.out_data, i, kept0, k), _c64(0)),
                            _store(self.out_data, _load(self.out_data, i, best0, k), i, kept0, k),
                            _store(self.out_data, _load(tmp_val, _c64(0)), i, best0, k)])

        def decay(j):
            iou = self.boxes.iou(kept0, j)
            decayed = tb.mul(self.score(j), tb.call("exp", tb.mul(tb.mul(scale, iou), iou)))
            lighter = tir.seq([_store(self.out_data, decayed, i, j, _c64(at["score_index"])),
                               _if(tb.le(self.score(j), self.thresh), self.drop_index(j))])
            both = tir.seq([_if(tb.ge(iou, self.iou_threshold), self.drop_index(j)),
                            _if(tb.lt(iou, self.iou_threshold), lighter)])
            return _if(_all(tb.gt(j, kept0), tb.ge(_load(self.out_box_indices, i, j), tb.const(0, I32)),
                            tb.gt(self.score(j), self.thresh)),
                       _if(self.same_class(kept0, j), both))

        swap = tir.seq([_store(tmp_idx, _load(self.out_box_indices, i, kept0), _c64(0)),
                        self.set_index(kept0, _load(self.out_box_indices, i, best0)),
                        self.set_index(best0, _load(tmp_idx, _c64(0))),
                        _loop(self.length, "serial", swap_row)])
        found = tir.seq([_if(tb.ne(best0, kept0), swap), _loop(_i64(nkeep0), "serial", decay),
                         _store(kept, tb.add(kept0, 1), _c64(0))])
        step = tir.seq([_store(best_idx, tb.const(-1, I32), _c64(0)), _store(best_score, self.thresh, _c64(0)),
                        _loop(_i64(nkeep0), "serial", find), _if(tb.ge(best0, tb.const(0, I32)), found)])
        return _loop(_i64(nkeep0), "serial", lambda _: _if(self.below_limit(kept), step))

    def soft_finish(self, kept: tir.Buffer) -> tir.Stmt:
        i, kept0 = self.i, _load(kept, _c64(0))
        if self.out_count is None:
            return _loop(self.num_anchors, "serial", lambda j: _if(tb.ge(j, kept0), self.minus_one_data(j)))

        def compact(j):
            original = _load(self.indices, i, _load(self.out_box_indices, i, j))
            return tir.seq([_if(tb.lt(j, kept0), self.set_index(j, original)),
                            _if(tb.ge(j, kept0), self.minus_one_row(j))])

        return tir.seq([_store(self.out_count, kept0, i, _c64(0)), _loop(self.num_anchors, "serial", compact)])

    # -- the whole row

    def program(self) -> tir.Stmt:
        top_k = self.at["top_k"]

        def with_nkeep(nkeep):
            nkeep0 = _load(nkeep, _c64(0))
            take_top_k = tb.gt(nkeep0, tb.const(top_k, I32)) if top_k > 0 else tb.const(False, "bool")

            def with_kept(kept):
                def with_scratch(best_idx, best_score, tmp_idx, tmp_val):
                    if self.soft:
                        return tir.seq([self.soft_step(nkeep0, kept, best_idx, best_score, tmp_idx, tmp_val),
                                        self.soft_finish(kept)])
                    if self.out_count is None:
                        return self.hard(nkeep0, kept)
                    return tir.seq([self.hard(nkeep0, kept), _with_locals([_local(I32)], self.hard_indices)])

                scratch = _with_locals([_local(I32), _local(self.dtype), _local(I32), _local(self.dtype)], with_scratch)
                return tir.seq([_store(kept, tb.const(0, I32), _c64(0)), scratch])

            return tir.seq([_store(nkeep, _load(self.valid_count, self.i), _c64(0)),
                            _if(take_top_k, _store(nkeep, tb.const(top_k, I32), _c64(0))),
                            self.copy_sorted(nkeep0), _with_locals([_local(I32)], with_kept)])

        return _with_locals([_local(I32)], with_nkeep)


def _rearrange_out(data: te.Tensor, score_index: int) -> te.Tensor:
    """nms.py's _rearrange_out: per batch the rows of non-negative score moved to the top."""
    batch, num_anchors, length = data.shape
    zero = tir.Cast(data.dtype, float_const(0.0, "float32"))

    def body(ins, out):
        def per_batch(i):
            def with_count(count):
                at = _load(count, _c64(0))

                def move(j):
                    moved = tir.seq([_loop(length, "serial", lambda k: _store(out, _load(ins[0], i, j, k), i, at, k)),
                                     _store(count, tb.add(at, 1), _c64(0))])
                    return _if(tb.ge(_load(ins[0], i, j, _c64(score_index)), zero), moved)

                fill = _loop(num_anchors, "serial",
                             lambda j: _if(tb.ge(j, at), _fill_row(out, i, j, length, _minus_one(data.dtype))))
                return tir.seq([_store(count, tb.const(0, I32), _c64(0)), _loop(num_anchors, "serial", move), fill])

            return _with_locals([_local(I32)], with_count)

        return _loop(batch, "parallel", per_batch)

    out_buf = tir.Buffer("rearranged", list(data.shape), data.dtype)
    return te.extern(out_buf, [data], body, name="rearrange_out")


def non_max_suppression(data: te.Tensor, valid_count: te.Tensor, indices: te.Tensor, at: dict):
    """TOPI's non_max_suppression with the call's attributes `at`: see the module docstring."""
    batch, num_anchors, length = data.shape
    score_tensor = te.compute((batch, num_anchors), lambda i, j: data(i, j, at["score_index"]), name="score_tensor")
    sorted_index = argsort_nms(score_tensor, valid_count)
    return_indices = at["return_indices"]
    outs = [tir.Buffer("out_data", list(data.shape), data.dtype),
            tir.Buffer("out_box_indices", [batch, num_anchors], I32)]
    if return_indices:
        outs.append(tir.Buffer("out_valid_box_count", [batch, _c64(1)], I32))
    in_buffers = [tir.Buffer("data", list(data.shape), data.dtype),
                  tir.Buffer("sorted_index", list(sorted_index.shape), I32),
                  tir.Buffer("valid_count", list(valid_count.shape), valid_count.dtype),
                  tir.Buffer("indices", list(indices.shape), indices.dtype)]

    def body(ins, outs):
        return _loop(batch, "parallel",
                     lambda i: _ClassicNms(at, data.dtype, length, num_anchors, ins, outs, i).program())

    results = te.extern(outs, [data, sorted_index, valid_count, indices], body, name="non_max_suppression",
                        in_buffers=in_buffers)
    if return_indices:
        return results if at["soft_nms_sigma"] > 0.0 else results[1:]
    if at["invalid_to_bottom"]:
        return _rearrange_out(results[0], at["score_index"])
    return results[0]


@register_legalize("relax.vision.non_max_suppression")
def _non_max_suppression(bb, call):
    """Left as a call where TVM 0.27's legalization raises: signed integer data (TOPI's IoU
    `intersection / union` of two ints: "TVM supports multiple types of integer divisions"),
    valid_count or indices of unknown dtype."""
    data, valid_count, indices = (a.struct_info for a in call.args)
    if data.dtype.startswith("int") or not valid_count.dtype or not indices.dtype:
        return call
    return bb.call_te(non_max_suppression, *call.args, dict(call.attrs.items()))
