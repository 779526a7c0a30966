"""irtool-translate: lower a module and print what the native backend makes of it.

    irtool-translate model.ir --emit=tir          the module after lowering (TIR + Relax main)
    irtool-translate model.ir --emit=llvm         LLVM IR, optimised for the host (--no-opt: as generated)
    irtool-translate model.ir --emit=asm          the host's assembly
    irtool-translate model.ir --emit=obj -o m.o   an object file

Relay goes through relay-to-relax, Relax through the zero pipeline, as `irtool.build` does.
`-o` is written atomically. Exit status: 0, 1 for a diagnostic, 2 for usage errors.
"""

from __future__ import annotations

import argparse

from ..diagnostics import DiagnosticError
from . import read_input, run_file_tool, run_main, write_atomically


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="irtool-translate", description="Lower a module to TIR, LLVM IR, assembly "
                                "or an object file.")
    p.add_argument("input_file", metavar="FILE", help="the module (- for standard input)")
    p.add_argument("--emit", choices=("tir", "llvm", "asm", "obj"), default="llvm", help="what to produce")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    p.add_argument("--entry", default="main", help="the model's entry function (default: main)")
    p.add_argument("--no-opt", action="store_true", help="LLVM IR as generated, before optimisation")
    p.add_argument("--syntax", choices=("relay", "tvmscript"), help="input syntax (default: detected)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    return p


def translate(mod, emit: str, entry: str = "main", optimize: bool = True) -> str | bytes:
    """The library call behind the tool."""
    from ..codegen.executable import Executable, prepare
    from ..text import to_text

    if emit == "tir":
        return to_text(prepare(mod, entry))
    exe = Executable(mod, entry)
    if emit == "llvm":
        return exe.lib.optimized_ir if optimize else exe.lib.llvm_ir
    if emit == "asm":
        return exe.lib.assembly()
    return exe.lib.object_code()


def run(argv: list[str] | None = None, stdout=None, stderr=None, stdin=None) -> int:
    return run_file_tool("irtool-translate", build_arg_parser(), _execute, argv, stdout, stderr, stdin)


def _execute(args, name: str, stdout, stderr, stdin) -> int:
    from ..text import parse

    if args.emit == "obj" and not args.output:
        raise DiagnosticError("--emit=obj writes binary: give -o FILE")
    text = read_input(args.input_file, stdin, stderr)
    if text is None:
        return 1
    result = translate(parse(text, name, args.syntax), args.emit, args.entry, not args.no_opt)
    if args.output:
        write_atomically(args.output, result)
    else:
        stdout.write(result if result.endswith("\n") else result + "\n")
    return 0


def main() -> None:
    run_main(run)


if __name__ == "__main__":
    main()
