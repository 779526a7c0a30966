"""irtool-build: compile a model into a shared library with a C entry point and a header.

    irtool-build model.ir -o model.so       # also writes model.h (the interface, documented)

Relay goes through relay-to-relax, Relax through the zero pipeline, then everything is
compiled for this machine's CPU and linked with the system C compiler (without one,
the error says so). Exit status: 0, 1 for a diagnostic, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import time

from . import read_input, run_file_tool, run_main


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="irtool-build", description="Compile a model into a shared library.")
    p.add_argument("input_file", metavar="FILE", help="the module (- for standard input)")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="the shared library to write (model.so)")
    p.add_argument("--entry", default="main", help="the model's entry function (default: main)")
    p.add_argument("--syntax", choices=("relay", "tvmscript"), help="input syntax (default: detected)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    return p


def run(argv: list[str] | None = None, stdout=None, stderr=None, stdin=None) -> int:
    return run_file_tool("irtool-build", build_arg_parser(), _execute, argv, stdout, stderr, stdin)


def _execute(args, name: str, stdout, stderr, stdin) -> int:
    from ..codegen.executable import build
    from ..text import parse

    text = read_input(args.input_file, stdin, stderr)
    if text is None:
        return 1
    started = time.perf_counter()
    exe = build(parse(text, name, args.syntax), entry=args.entry)
    header = exe.export_library(args.output)
    stderr.write(f"wrote {args.output} and {header} in {(time.perf_counter() - started) * 1e3:.0f} ms\n")
    return 0


def main() -> None:
    run_main(run)


if __name__ == "__main__":
    main()
