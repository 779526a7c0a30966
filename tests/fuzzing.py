"""A deterministic mutation fuzzer for the text front end (shared by tests/test_fuzz.py and
benchmarks/fuzz.py).

Seeds are the cases of the lit corpus (every `lit_tests/**/*.ir` and `Inputs/` file, split
at `// -----` / `# -----`) and the examples. A mutant is a seed with one or more of:
deletions, repeated or spliced spans (from another seed), truncation, odd Unicode,
undecodable bytes, huge numbers and deep nesting. Each mutant runs through `irtool-opt`
in-process (`irtool.cli.opt.run`) with `-o` pointing at an existing file, and must end in
exit status 0 or 1 with no traceback and no "internal error"; a failed run must leave
`-o` as it was, and a successful one must have written text that parses again. Each run
has a time limit (SIGALRM), so a hang is reported as such.
"""

from __future__ import annotations

import io
import random
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTINEL = "untouched output\n"
ODD_UNICODE = ["\u202e", "\ufeff", "\u2028", "é", "\x00", "\U0001F600", "\u0301", "\t", "\r", "\x0c", "\\", '"',
               "ſ", "\u00a0", "𝔵", "％", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace")]
HUGE = ["9" * 400, "1e99999", "1e99999f", "-1e-99999f", "99999999999999999999999i64", "340282366920938463463374607431768211456",
        "0x7fffffff", "nanf", "inff", "-inff", "1.5e308f64", "T.int64(99999999999999999999999)", "3.4e39f",
        "T.float32(1e400)", "2147483648i32", "-0f", "1e-46f", "R.const(1e400)"]
NESTING = [("(", ")"), ("negative(", ")"), ("fn () {", "}"), ("[", "]"), ("/*", "*/"), ("T.exp(", ")"),
           ("R.add(", ", x)"), ("(%x, ", ")"), ("if (True) {", "} else { 0 }")]


def corpus() -> list[str]:
    """The lit cases and examples, one string per case."""
    seeds = []
    paths = sorted(ROOT.glob("lit_tests/**/*.ir")) + sorted(ROOT.glob("lit_tests/**/Inputs/*")) + \
        sorted(ROOT.glob("examples/*.ir"))
    for path in paths:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for case in re.split(r"^(?://|#) -----\s*$", text, flags=re.M):
            if case.strip():
                seeds.append(case)
    return seeds


def mutate(rng: random.Random, seeds: list[str]) -> bytes:
    text = rng.choice(seeds)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        text = _one_mutation(rng, text, seeds)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:  # undecodable bytes
        pos = rng.randrange(len(data) + 1)
        data = data[:pos] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[pos:]
    return data


def _span(rng: random.Random, text: str) -> tuple[int, int]:
    if not text:
        return 0, 0
    a = rng.randrange(len(text))
    return a, min(len(text), a + rng.choice((1, 1, 2, 5, 20, 80, 400)))


def _one_mutation(rng: random.Random, text: str, seeds: list[str]) -> str:
    kind = rng.randrange(9)
    a, b = _span(rng, text)
    if kind == 0:  # delete
        return text[:a] + text[b:]
    if kind == 1:  # repeat
        return text[:b] + text[a:b] * rng.choice((1, 2, 10)) + text[b:]
    if kind == 2:  # splice from another seed
        other = rng.choice(seeds)
        c, d = _span(rng, other)
        return text[:a] + other[c:d] + text[b:]
    if kind == 3:  # truncate
        return text[:a]
    if kind == 4:  # odd Unicode
        return text[:a] + rng.choice(ODD_UNICODE) + text[a:]
    if kind == 5:  # huge or odd numbers, replacing a number
        numbers = list(re.finditer(r"-?\d+(?:\.\d+)?(?:e-?\d+)?[a-z]*\d*", text))
        if numbers:
            m = rng.choice(numbers)
            return text[:m.start()] + rng.choice(HUGE) + text[m.end():]
        return text[:a] + rng.choice(HUGE) + text[a:]
    if kind == 6:  # deep nesting around a span
        open_, close = rng.choice(NESTING)
        depth = rng.choice((10, 100, 1000, 5000))
        return text[:a] + open_ * depth + text[a:b] + close * depth + text[b:]
    if kind == 7:  # swap two lines
        lines = text.split("\n")
        if len(lines) > 2:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    # replace a token by another token of the text
    tokens = re.findall(r"[%@]?[\w.]+|\S", text)
    if tokens:
        old, new = rng.choice(tokens), rng.choice(tokens)
        return text.replace(old, new, 1)
    return text


@dataclass
class Failure:
    kind: str  # "traceback" | "internal error" | "hang" | "clobbered" | "unparsable output" | "exit status"
    detail: str
    mutant: bytes


@dataclass
class Report:
    runs: int = 0
    ok: int = 0
    diagnosed: int = 0
    failures: list = field(default_factory=list)


class _Timeout(BaseException):  # not an Exception: irtool-opt must not catch it
    pass


def _alarm(signum, frame):
    raise _Timeout()


PIPELINES = [[], [], [], ["-p", "canonicalize-ops,simplify-expr,fold-constant,fuse-ops"], ["-p", "dead-code-elimination"],
             ["--split-input-file"], ["--print-types"]]


def run_one(data: bytes, tmp: Path, rng: random.Random, time_limit: int = 10) -> Failure | None | str:
    """Run one mutant; None or "diagnosed" when it behaved, a Failure otherwise."""
    from irtool.cli import with_deep_stack
    from irtool.cli.opt import run
    from irtool.text import parse

    src, out = tmp / "mutant.ir", tmp / "out.ir"
    src.write_bytes(data)
    out.write_text(SENTINEL)
    stdout, stderr = io.StringIO(), io.StringIO()
    extra = rng.choice(PIPELINES)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(time_limit)
    try:  # as the console script runs it (a deep stack); the alarm interrupts the wait
        code = with_deep_stack(lambda: run([str(src), "-o", str(out), *extra], stdout=stdout, stderr=stderr))
    except _Timeout:
        return Failure("hang", f"over {time_limit} s with {extra}", data)
    except BaseException as err:  # noqa: BLE001 — anything escaping is the failure we look for
        return Failure("traceback", f"{type(err).__name__}: {err} with {extra}", data)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err_text = stderr.getvalue()
    if "irtool-opt: internal error" in err_text or "Traceback (most recent call last)" in err_text:
        return Failure("internal error", err_text.strip().splitlines()[0][:300] + f" with {extra}", data)
    if code not in (0, 1):
        return Failure("exit status", f"{code} with {extra}", data)
    if code == 1:
        if out.read_text() != SENTINEL:
            return Failure("clobbered", f"-o changed by a failed run with {extra}", data)
        return "diagnosed"
    written = out.read_text()
    if "--split-input-file" not in extra:
        try:
            with_deep_stack(lambda: parse(written, "out.ir"))  # as irtool-opt would read it
        except Exception as err:  # noqa: BLE001
            return Failure("unparsable output", f"{type(err).__name__}: {str(err)[:200]} with {extra}", data)
    return None


def fuzz(count: int, seed: int, tmp: Path, time_limit: int = 10, progress=None) -> Report:
    rng = random.Random(seed)
    seeds = corpus()
    report = Report()
    for i in range(count):
        data = mutate(rng, seeds)
        result = run_one(data, tmp, rng, time_limit)
        report.runs += 1
        if result is None:
            report.ok += 1
        elif result == "diagnosed":
            report.diagnosed += 1
        else:
            report.failures.append(result)
        if progress and (i + 1) % 1000 == 0:
            progress(i + 1, report)
    return report
