"""R.vision.get_valid_counts, R.vision.non_max_suppression and R.vision.multibox_transform_loc
(TVM 0.27's Relax-only vision ops; irtool/ops/relax_vision.py, codegen/topi/nms_classic.py and
vision.py): struct info as TVM infers it (symbolic sizes, unknown shapes, its errors as located
diagnostics), each legalized module run by our interpreters equal to the op's NumPy reference,
the PrimFuncs compiled natively equal to the TIR interpreter (the runtime's argsort_nms a TIR
insertion sort), and (tvm-marked) TVM 0.27's LegalizeOps printing the same text."""

from __future__ import annotations

import itertools
import os
import subprocess

import numpy as np
import pytest
from test_legalize_ops import assert_legalized_like_tvm, legalize
from test_legalize_vision import T, module

import irtool
from irtool.exec.relax import run_relax
from irtool.exec.tir import run_prim_func
from irtool.exec.tir_runtime import _numpy_dtype
from irtool.ir import relax as rx
from irtool.ir.module import IRModule
from irtool.text import parse, to_text

# ----------------------------------------------------------------------------- the cases


def _gvc(name, shape=(2, 6, 6), dtype="float32", attrs="", sym=""):
    call = f"R.vision.get_valid_counts(d{', ' + attrs if attrs else ''})"
    return f"gvc-{name}", module(f"d: {T(shape, dtype)}", call, sym)


GVC = [_gvc("default"), _gvc("threshold", attrs="score_threshold=0.25"),
       _gvc("no-id", attrs="score_threshold=0.5, id_index=-1, score_index=2"),
       _gvc("id-last", shape=(1, 5, 4), attrs="id_index=3, score_index=0"),
       _gvc("f16", dtype="float16", attrs="score_threshold=0.1"),
       _gvc("f64", dtype="float64", attrs="score_threshold=0.3"),
       _gvc("sym", shape=("b", "n", 6), sym="b = T.int64()\n        n = T.int64()", attrs="score_threshold=0.25"),
       _gvc("sym-length", shape=(2, 4, "k"), sym="k = T.int64()")]


def _nms(name, shape=(2, 6, 6), dtype="float32", attrs="", sym="", counts=None, pairs=None):
    b, n, _ = shape
    params = f"d: {T(shape, dtype)}, vc: {T(counts or (b,), 'int32')}, ix: {T(pairs or (b, n), 'int32')}"
    return f"nms-{name}", module(params, f"R.vision.non_max_suppression(d, vc, ix{', ' + attrs if attrs else ''})", sym)


NMS = [_nms("default"),
       _nms("limits", attrs="max_output_size=2, iou_threshold=0.3, top_k=4"),
       _nms("force", attrs="force_suppress=True, iou_threshold=0.6"),
       _nms("no-id", attrs="id_index=-1, coord_start=1, score_index=0, iou_threshold=0.45"),
       _nms("data", attrs="return_indices=False, iou_threshold=0.4"),
       _nms("to-bottom", attrs="return_indices=False, invalid_to_bottom=True, top_k=3"),
       _nms("indices-ignore-bottom", attrs="invalid_to_bottom=True"),
       _nms("soft", attrs="soft_nms_sigma=0.5, score_threshold=0.1"),
       _nms("soft-limit", attrs="soft_nms_sigma=0.25, score_threshold=0.05, max_output_size=3, iou_threshold=0.7, "
                                "force_suppress=True"),
       _nms("soft-data", attrs="soft_nms_sigma=1.0, return_indices=False, top_k=4"),
       _nms("soft-bottom", attrs="soft_nms_sigma=0.5, return_indices=False, invalid_to_bottom=True"),
       _nms("f16", dtype="float16", attrs="iou_threshold=0.3"),
       _nms("f16-soft", dtype="float16", attrs="soft_nms_sigma=0.5, score_threshold=0.1"),
       _nms("long", shape=(1, 7, 8), attrs="coord_start=4, score_index=2, id_index=7"),
       _nms("sym", shape=("b", "n", 6), sym="b = T.int64()\n        n = T.int64()", attrs="top_k=2"),
       _nms("sym-soft", shape=(2, "n", 6), sym="n = T.int64()", attrs="soft_nms_sigma=0.5")]


def _mb(name, b=1, c=3, n=5, dtype="float32", attrs="", sym=""):
    loc = (b, "n4" if n == "n" else 4 * n)
    params = f"c: {T((b, c, n), dtype)}, l: {T(loc, dtype)}, a: {T((1, n, 4), dtype)}"
    call = f"R.vision.multibox_transform_loc(c, l, a{', ' + attrs if attrs else ''})"
    return f"mb-{name}", module(params, call, sym)


MB = [_mb("default"), _mb("batch", b=2, c=4, n=6),
      _mb("all", attrs="clip=True, threshold=0.1, variances=[0.1, 0.1, 0.2, 0.2], keep_background=False, "
                       "apply_softmax=False"),
      _mb("softmax-bg", attrs="threshold=0.3, keep_background=False"),
      _mb("clip", attrs="clip=True, variances=[1.0, 2.0, 0.5, 0.25]"),
      _mb("f16", dtype="float16", attrs="threshold=0.2"),
      _mb("sym", b="b", n="n", sym="b = T.int64()\n        n = T.int64()\n        n4 = T.int64()")]

CASES = GVC + NMS + MB


@pytest.mark.tvm
def test_legalized_text_matches_tvm(tvm_python, tmp_path):
    assert_legalized_like_tvm(tvm_python, tmp_path, CASES)
