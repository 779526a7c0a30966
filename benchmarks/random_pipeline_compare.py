"""Random Relax modules through TVM 0.27's zero pipeline and ours: the long run.

    python benchmarks/random_pipeline_compare.py [--modules 500] [--first 0]
        [--tvm-python PATH (default: $IRTOOL_TVM_PYTHON)] [--exclude kind,kind] [--only kind,kind]
        [--workdir DIR] [--show 3]

--only keeps just the generator kinds named (KINDS or SEQ_KINDS of tests/zero_pipeline_random.py:
every step of every module draws from them; sequence modules only if one of them is a sequence kind),
to run a new kind's modules alone.

TVM generates each module (tests/zero_pipeline_random.py: conv2d (dilated, grouped,
depthwise, NHWC, strided, transposed), pooling (strided, ceil_mode, count_include_pad,
dilated, adaptive), softmax, layer_norm, batch_norm, reductions (argmax/argmin, min, prod),
matmul, unary and binary math, comparisons and logic, integer bitwise ops, broadcasts of
several ranks, reshape, transpose, split/concat, stack, expand_dims/squeeze, tile/repeat,
take, gather_elements, strided_slice, pad (all modes), resize2d, one_hot, grid_sample,
creation ops and *_like, dropout, batch_flatten, metadata and R.const constants, constant
subexpressions, tuple outputs, symbolic batch for one module in four, a second function
sometimes; since run 8 also float16/int/bool branches, reductions over any axes, scans, sorts,
flips, negative-stride slices, NHWC conv/pools, 1-D and batch-broadcast matmul, index ops,
einsum, bindings after the dataflow block, other channel counts and odd sizes, and one module
in five a (batch, sequence, features) transformer-like layer with symbolic n, m; since run 12
the classic vision ops: get_valid_counts, hard and soft non_max_suppression, SSD-style
multibox_transform_loc decoding fed to both, on feature maps, constants and symbolic sizes) and prints it;
both sides run LegalizeOps, AnnotateTIROpPattern,
FoldConstant, FuseOps, FuseTIR on that text. For each module the report gives the first
stage whose printout differs from TVM's (or fails), whether that stage alone on TVM's
previous printout differs too ("isolated"), and groups modules by stage and first
differing line. Modules that agree at every stage are then parsed by TVM from our final
printout (with metadata) and compared with TVM's own result structurally.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from zero_pipeline_random import compare_seed, run_tvm_side, tvm_parse_back  # noqa: E402


def signature(detail: str) -> str:
    """A difference's class: its differing lines with names and numbers blurred."""
    if detail.startswith("left as Relax op calls"):
        return detail.splitlines()[0]
    lines = [ln.strip() for ln in detail.splitlines() if ln.strip().startswith(("ours:", "TVM:"))] or \
        detail.splitlines()[:1]
    return " | ".join(re.sub(r"\d+", "N", ln)[:150] for ln in lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=500)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--tvm-python", default=os.environ.get("IRTOOL_TVM_PYTHON"))
    ap.add_argument("--exclude", default="", help="op kinds the generator leaves out (comma-separated)")
    ap.add_argument("--only", default="", help="op kinds the generator keeps, alone (comma-separated)")
    ap.add_argument("--workdir", default=None, help="keep the modules and printouts here")
    ap.add_argument("--show", type=int, default=2, help="details printed per class")
    args = ap.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="zero_pipeline_")
    os.makedirs(workdir, exist_ok=True)
    seeds = range(args.first, args.first + args.modules)
    start = time.perf_counter()
    if not args.tvm_python:
        ap.error("give --tvm-python (or set IRTOOL_TVM_PYTHON) to a Python with apache-tvm 0.27")
    run_tvm_side(args.tvm_python, workdir, seeds.start, seeds.stop, [k for k in args.exclude.split(",") if k],
                 only=[k for k in args.only.split(",") if k])
    tvm_seconds = time.perf_counter() - start
    start = time.perf_counter()
    outcomes = []
    for seed in seeds:
        try:
            outcomes.append(compare_seed(workdir, seed))
        except Exception as e:  # noqa: BLE001 - an internal error is a finding, not the end of the run
            from zero_pipeline_random import Outcome
            outcomes.append(Outcome(seed, "internal_error", detail=f"{type(e).__name__}: {e}"))
    ours_seconds = time.perf_counter() - start
    matched = [o for o in outcomes if o.status == "match"]
    stems = []
    for o in matched:
        stem = os.path.join(workdir, str(o.seed))
        pathlib.Path(stem + ".ours.py").write_text(o.ours_final)
        stems.append(stem)
    not_equal_in_tvm = tvm_parse_back(args.tvm_python, workdir, stems)
    whole_differs = [s for s in seeds if os.path.exists(os.path.join(workdir, f"{s}.zero_differs"))]

    print(f"{len(outcomes)} modules in {workdir} (TVM side {tvm_seconds:.0f} s, ours {ours_seconds:.0f} s)")
    by_status = collections.Counter(o.status for o in outcomes)
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(by_status.items())))
    print(f"  byte-identical at all five stages and structurally equal: {len(matched)}; "
          f"of those TVM parses ours to something not equal to its own: {len(not_equal_in_tvm)}")
    if whole_differs:
        print(f"  (TVM's get_pipeline('zero') differs from its five stages run one by one: {whole_differs})")
    classes: dict[tuple, list] = collections.defaultdict(list)
    for o in outcomes:
        if o.status != "match":
            classes[(o.status, o.stage, o.isolated, signature(o.detail))].append(o)
    for (status, stage, isolated, sig), group in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(group)}] {status} at {stage} (isolated: {isolated}) seeds {[o.seed for o in group][:12]}")
        print(f"    {sig}")
        for o in group[:args.show]:
            print("    " + o.detail.replace("\n", "\n    ")[:1200])
    for stem in not_equal_in_tvm:
        print(f"TVM: our final printout of {stem} parses to a module not equal to TVM's")
    return 0 if len(matched) == len(outcomes) and not not_equal_in_tvm else 1


if __name__ == "__main__":
    sys.exit(main())
