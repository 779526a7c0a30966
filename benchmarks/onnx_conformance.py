"""ONNX backend node-test conformance, per op.

    python benchmarks/onnx_conformance.py [--failures] [--op Conv]...

Runs every claimed node case (all its ops in `supported_ops()`; the cases and the
exception table come from tests/test_onnx_conformance.py) in the NumPy interpreter and
prints, per op: cases, passed, failed (not listed as exceptions), exceptions (listed in
EXCEPTIONS; `xpass` counts listed cases that now pass), `bound` (passing cases whose
integer inputs had to be bound as constants, see `run_case`), and the totals. A case is
counted under the op it tests: the op of a one-node graph, else (function-expanded
cases) the op its name spells. `--failures` prints each unexpected failure with its
message; `--table` prints them as EXCEPTIONS entries to paste (then give each a reason);
`--exceptions-md` prints the exception list of docs/onnx.md; `--onnxruntime` also runs
every case (claimed or not) in onnxruntime (CPU, one thread, compared the same way) and
prints both pass rates over all the cases.
Exit status 1 when a case fails unexpectedly or an exception passes.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_onnx_conformance import (  # noqa: E402
    EXCEPTIONS,
    _array,
    assert_similar,
    case_ops,
    claimed_cases,
    node_cases,
    run_case,
)


def _tested_op(case, schema_names: dict[str, str]) -> str:
    ops = case_ops(case)
    graph = case.load().graph
    if len(graph.node) == 1:  # its own op, not one of its subgraphs' (If, Loop, Scan)
        return graph.node[0].op_type
    key = case.name.removeprefix("test_").replace("_", "").lower()
    best = max((k for k in schema_names if key.startswith(k)), key=len, default=None)
    return schema_names[best] if best else "/".join(sorted(ops))


def onnxruntime_passes(cases) -> int:
    """How many of `cases` onnxruntime runs (CPU) to outputs equal to the expected ones, as
    `run_case` compares irtool's (an input the session does not take is not fed)."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    passed = 0
    for case in cases:
        try:
            session = ort.InferenceSession(case.model, options, providers=["CPUExecutionProvider"])
            taken = {i.name for i in session.get_inputs()}
            names = [i.name for i in case.load().graph.input]
            for inputs, outputs in case.data_sets:
                got = session.run(None, {n: _array(x) for n, x in zip(names, inputs) if n in taken})
                assert len(got) == len(outputs)
                for expected, actual in zip(outputs, got):
                    assert_similar(_array(expected), actual, case.rtol, case.atol)
        except Exception:  # noqa: BLE001 - a case onnxruntime rejects or gets wrong fails
            continue
        passed += 1
    return passed


def exceptions_markdown() -> str:
    """The exception list of docs/onnx.md: one bullet per reason, with its count and cases."""
    by_reason: dict[str, list[str]] = collections.defaultdict(list)
    for name, reason in EXCEPTIONS.items():
        by_reason[reason].append(name)
    return "\n".join(f"- **{reason}** ({len(names)}): " + ", ".join(f"`{n}`" for n in names)
                     for reason, names in by_reason.items())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--failures", action="store_true", help="print each unexpected failure")
    p.add_argument("--table", action="store_true", help="print unexpected failures as EXCEPTIONS entries")
    p.add_argument("--op", action="append", default=[], help="only this op (repeatable)")
    p.add_argument("--onnxruntime", action="store_true", help="also measure onnxruntime on every case")
    p.add_argument("--exceptions-md", action="store_true",
                   help="print EXCEPTIONS grouped by reason, as docs/onnx.md lists them, and exit")
    args = p.parse_args(argv)
    if args.exceptions_md:
        print(exceptions_markdown())
        return 0

    import onnx

    from irtool.frontend.onnx import supported_ops

    t0 = time.perf_counter()
    all_cases = node_cases()
    t_load = time.perf_counter() - t0
    schema_names = {s.name.lower(): s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}
    claimed = claimed_cases()
    rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures = []
    t0 = time.perf_counter()
    for case in claimed:
        op = _tested_op(case, schema_names)
        if args.op and op not in args.op:
            continue
        row = rows[op]
        row["cases"] += 1
        try:
            row["bound"] += run_case(case)
            ok, message = True, ""
        except Exception as err:  # noqa: BLE001 - every failure is a result here
            ok, message = False, f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        if case.name in EXCEPTIONS:
            row["exceptions"] += 1
            if ok:
                row["xpass"] += 1
                failures.append((case.name, "listed in EXCEPTIONS but passes"))
        elif ok:
            row["passed"] += 1
        else:
            row["failed"] += 1
            failures.append((case.name, message))
    t_run = time.perf_counter() - t0

    print(f"onnx {onnx.__version__}: {len(all_cases)} node cases, {len(claimed)} claimed "
          f"({len(supported_ops())} ops supported); cases loaded in {t_load:.1f} s, run in {t_run:.1f} s")
    print(f"{'op':<28}{'cases':>7}{'passed':>8}{'failed':>8}{'except':>8}{'xpass':>7}{'bound':>7}")
    total = collections.Counter()
    for op in sorted(rows):
        r = rows[op]
        total.update(r)
        print(f"{op:<28}{r['cases']:>7}{r['passed']:>8}{r['failed']:>8}{r['exceptions']:>8}{r['xpass']:>7}{r['bound']:>7}")
    print(f"{'total':<28}{total['cases']:>7}{total['passed']:>8}{total['failed']:>8}{total['exceptions']:>8}"
          f"{total['xpass']:>7}{total['bound']:>7}")
    clean = sum(1 for r in rows.values() if r["failed"] == 0 and r["exceptions"] == 0)
    print(f"ops passing every case: {clean} of {len(rows)}")
    if not args.op:
        print(f"irtool passes {total['passed']} of all {len(all_cases)} cases "
              f"({100 * total['passed'] / len(all_cases):.1f}%)")
    if args.onnxruntime:
        import onnxruntime

        cases = [c for c in all_cases if not args.op or _tested_op(c, schema_names) in args.op]
        passed = onnxruntime_passes(cases)
        print(f"onnxruntime {onnxruntime.__version__} passes {passed} of {len(cases)} cases "
              f"({100 * passed / len(cases):.1f}%)")
    if args.failures:
        for name, message in failures:
            print(f"FAIL {name}: {message}")
    if args.table:
        for name, message in failures:
            print(f'    "{name}": "{message[:100]}",')
    return 1 if total["failed"] or total["xpass"] else 0


if __name__ == "__main__":
    sys.exit(main())
