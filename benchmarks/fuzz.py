"""Long fuzzing runs of the text front end (the in-suite run is tests/test_fuzz.py).

    python benchmarks/fuzz.py --count 100000 --seed 1 [--save-failures DIR]

Mutants of the lit corpus (tests/fuzzing.py) go through irtool-opt in-process; every
traceback, internal error, hang, clobbered -o or unparsable output is counted by kind and
optionally saved for reduction. Prints a summary line per 1,000 mutants.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzzing import fuzz  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-limit", type=int, default=10, help="seconds per mutant before it counts as a hang")
    p.add_argument("--save-failures", metavar="DIR", help="write each failing mutant here")
    args = p.parse_args()
    started = time.perf_counter()

    def progress(done: int, report) -> None:
        rate = done / (time.perf_counter() - started)
        print(f"{done:>7} mutants  {report.ok} ok  {report.diagnosed} diagnosed  {len(report.failures)} failures"
              f"  ({rate:.0f}/s)", flush=True)

    with tempfile.TemporaryDirectory(prefix="irtool-fuzz-") as tmp:
        report = fuzz(args.count, args.seed, Path(tmp), args.time_limit, progress)
    kinds = collections.Counter((f.kind, f.detail[:120]) for f in report.failures)
    print(f"\n{report.runs} mutants in {time.perf_counter() - started:.0f} s: {report.ok} printed, "
          f"{report.diagnosed} diagnosed, {len(report.failures)} failures")
    for (kind, detail), n in kinds.most_common():
        print(f"  {n:>5}  {kind}: {detail}")
    if args.save_failures and report.failures:
        out = Path(args.save_failures)
        out.mkdir(parents=True, exist_ok=True)
        for i, f in enumerate(report.failures):
            (out / f"failure{i}.ir").write_bytes(f.mutant)
    sys.exit(1 if report.failures else 0)


if __name__ == "__main__":
    main()
