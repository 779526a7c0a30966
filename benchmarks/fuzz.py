"""Long fuzzing runs of the text front end (the in-suite run is tests/test_fuzz.py).

    python benchmarks/fuzz.py --count 100000 --seed 1 [--save-failures DIR]
    python benchmarks/fuzz.py --compare-engines --count 10000 --seed 1

Mutants of the lit corpus (tests/fuzzing.py) go through irtool-opt in-process; every
traceback, internal error, hang, clobbered -o or unparsable output is counted by kind and
optionally saved for reduction. Prints a summary line per 1,000 mutants.

`--compare-engines` instead runs each mutant through irtool-opt with the default parsers
(Relay: Lark's compiled engine with fused tokens; TVMScript: fused bindings) and with
`IRTOOL_PARSER_ENGINE=reference`, and counts every mutant whose exit code, output or
diagnostics differ.
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
    p.add_argument("--compare-engines", action="store_true", help="compare the default and reference parsers")
    args = p.parse_args()
    if args.compare_engines:
        compare_engines(args.count, args.seed, args.save_failures)
        return
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


def compare_engines(count: int, seed: int, save: str | None) -> None:
    import io
    import os
    import random

    from fuzzing import corpus, mutate

    from irtool.cli import with_deep_stack
    from irtool.cli.opt import run

    def opt(path: Path, engine: str | None) -> tuple[int, str, str]:
        if engine is None:
            os.environ.pop("IRTOOL_PARSER_ENGINE", None)
        else:
            os.environ["IRTOOL_PARSER_ENGINE"] = engine
        stdout, stderr = io.StringIO(), io.StringIO()
        code = with_deep_stack(lambda: run([str(path)], stdout=stdout, stderr=stderr))
        return code, stdout.getvalue(), stderr.getvalue()

    rng, seeds, differ = random.Random(seed), corpus(), []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="irtool-fuzz-") as tmp:
        path = Path(tmp) / "mutant.ir"
        for i in range(1, count + 1):
            data = mutate(rng, seeds)
            path.write_bytes(data)
            if opt(path, None) != opt(path, "reference"):
                differ.append(data)
            if i % 1000 == 0:
                print(f"{i:>7} mutants  {len(differ)} differ  ({i / (time.perf_counter() - started):.0f}/s)",
                      flush=True)
    print(f"\n{count} mutants in {time.perf_counter() - started:.0f} s: {len(differ)} differ between the "
          f"default and the reference parsers")
    if save and differ:
        out = Path(save)
        out.mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(differ):
            (out / f"differ{i}.ir").write_bytes(data)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
