"""irtool-opt: parse IR text, run passes, print the result (mlir-opt / xdsl-opt style).

    irtool-opt in.ir --pass=to-a-normal-form --pass=dead-code-elimination -o out.ir
    irtool-opt in.ir -p 'to-a-normal-form,dead-code-elimination{inline-once=1}'
    irtool-opt --split-input-file tests.ir       # cases separated by `// -----`

Exit status: 0 success, 1 user error (a diagnostic was printed), 2 usage error.
IR dumps (`--print-ir-*`) and timing go to stderr; the result goes to stdout or `-o`.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from ..diagnostics import DiagnosticError
from . import guarded, read_input, run_main, write_output

SPLIT_MARKER = "// -----"
_SPLIT_RE = re.compile(r"^(?://|#) -----[ \t]*$", re.M)  # `# -----` in TVMScript files


class _PipelineAction(argparse.Action):
    """Keeps `--pass` and `-p` in command-line order in one list."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = getattr(namespace, self.dest) or []
        items.append((option_string, values))
        setattr(namespace, self.dest, items)


def _tolerance(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too: no result would then be close to itself
        raise argparse.ArgumentTypeError(f"a tolerance is a number >= 0, got {text!r}")
    return value


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="irtool-opt",
        description="Parse Relay text, run passes over it and print the result.",
        epilog="Passes: see --list-passes. Pipelines: -p 'a,b{option=value}'.")
    p.add_argument("input", nargs="?", default="-", help="input file, or - for standard input (default)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the result here (atomically) instead of stdout")
    p.add_argument("--pass", dest="pipeline", metavar="NAME", action=_PipelineAction,
                   help="run a pass (repeatable, in order); options as NAME{key=value,...}")
    p.add_argument("-p", "--pass-pipeline", dest="pipeline", metavar="PIPELINE", action=_PipelineAction,
                   help="run a comma-separated pipeline, e.g. 'a,b{key=value}'")
    p.add_argument("--list-passes", action="store_true", help="list the registered passes and exit")
    p.add_argument("--list-ops", action="store_true",
                   help="list the registered operators (arguments, attributes, pattern) and exit")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"split the input at lines '{SPLIT_MARKER}' ('# -----' in TVMScript) and process each "
                        "part on its own")
    p.add_argument("--syntax", choices=("relay", "tvmscript"), help="input syntax (default: detected)")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--print-ir-after-change", action="store_true",
                   help="print the IR after every pass that changed it (stderr)")
    p.add_argument("--print-ir-before", action="append", default=[], metavar="PASS",
                   help="print the IR before this pass (repeatable)")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS",
                   help="print the IR after this pass (repeatable)")
    p.add_argument("--time-passes", action="store_true", help="report the time of each pass (stderr)")
    p.add_argument("--opt-level", type=int, default=2, metavar="N",
                   help="PassContext opt level (default 2, as TVM): fuse-ops fuses at this level unless told "
                        "otherwise, and passes inside pipelines above it are skipped; passes named on the "
                        "command line always run")
    p.add_argument("--pass-config", action="append", default=[], metavar="KEY=VALUE",
                   help="PassContext config, e.g. relay.FuseOps.max_depth=10 (repeatable)")
    p.add_argument("--disabled-pass", action="append", default=[], metavar="PASS",
                   help="never run this pass, even as another pass's requirement (repeatable)")
    p.add_argument("--verify-each", action=argparse.BooleanOptionalAction, default=True,
                   help="verify the module after parsing and after every pass (default: on)")
    p.add_argument("--verify-numerics", action="store_true",
                   help="run the module in the interpreter on seeded random inputs before the passes and after "
                        "each one, and stop at the first pass that changes the results beyond tolerance")
    p.add_argument("--verify-numerics-tolerance", type=_tolerance, default=1e-4, metavar="TOL",
                   help="rtol = atol for --verify-numerics (default 1e-4; at least 16 epsilons of float16/bfloat16)")
    p.add_argument("--dump-graph", metavar="FILE",
                   help="write the dataflow graph of the result, one cluster per fused group: FILE.dot, or "
                        ".svg/.png/.pdf with Graphviz installed")
    p.add_argument("--print-types", action="store_true",
                   help="infer types and print them as TVM does (`/* ty=... */`)")
    p.add_argument("--print-memory-plan", action="store_true",
                   help="report each Relax function's planned peak bytes against one buffer per tensor (stderr)")
    p.add_argument("--verify-roundtrip", action="store_true",
                   help="check that the output parses back to an equal module and prints identically")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    return p


def _list_passes() -> str:
    import dataclasses

    from ..transform import all_passes

    lines = ["Available passes:"]
    for name, cls in all_passes().items():
        lines.append(f"  {name:<28} {cls.summary}  [{cls.tvm_name}, opt_level={cls.opt_level}]")
        aliases = {v: k for k, v in cls.option_aliases.items()}
        for f in dataclasses.fields(cls):
            default = int(f.default) if isinstance(f.default, bool) else f.default
            also = f"  (or {aliases[f.name].replace('_', '-')})" if f.name in aliases else ""
            lines.append(f"      {f.name.replace('_', '-')}={default}{also}")
    return "\n".join(lines)


def _list_ops() -> str:
    from ..ops.registry import REQUIRED, OpPattern, all_ops
    from ..text.literals import format_attr_value

    lines = []
    for name, op in all_ops().items():
        attrs = ", ".join(a.name if a.default is REQUIRED else f"{a.name}={format_attr_value(a.default)}"
                          for a in op.attrs)
        sig = f"{name}({', '.join(op.args)}{'; ' + attrs if attrs else ''})"
        lines.append(f"  {sig:<72} {OpPattern.NAMES[op.pattern]}")
    return f"{len(lines)} operators:\n" + "\n".join(lines)


def _build_pipeline(items) -> list:
    if not items:
        return []
    from ..transform import parse_pipeline

    passes = []
    for option, text in items or []:
        if option == "--pass":
            passes += parse_pipeline(text, "<command line>", f"--pass={text}", len("--pass="))
        else:
            passes += parse_pipeline(text, "<command line>", f"{option} '{text}'", len(option) + 2)
    return passes


def _parse_pass_config(items: list[str]) -> dict:
    if not items:  # the pass infrastructure is not loaded for a run without passes
        return {}
    from ..transform import config_options, convert_config_value

    config = {}
    start = len("--pass-config=")
    for item in items:
        arg = f"--pass-config={item}"
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise DiagnosticError("expected KEY=VALUE", _command_line_span(arg, start, len(arg)))
        try:
            config[key.strip()] = convert_config_value(key.strip(), value.strip())
        except ValueError as err:  # point at the key if it is unknown, else at the value
            at_key = key.strip() not in config_options()
            span = (start, start + len(key)) if at_key else (start + len(key) + 1, len(arg))
            raise DiagnosticError(str(err), _command_line_span(arg, *span)) from None
    return config


def _pass_names(option: str, names: list[str]) -> list[str]:
    """The command-line names of the passes an option names (by command-line name, alias or
    TVM name); an unknown name is an error, not an option that silently never matches."""
    if not names:  # the pass infrastructure is not loaded for a run without them
        return names
    from ..transform import get_pass

    flag = "--" + option.replace("_", "-") + "="
    canonical = []
    for name in names:
        try:
            canonical.append(get_pass(name).name)
        except KeyError:
            arg = flag + name
            raise DiagnosticError(f"unknown pass `{name}` (see --list-passes)",
                                  _command_line_span(arg, len(flag), len(arg))) from None
    return canonical


def _command_line_span(text: str, start: int, end: int):
    from ..diagnostics import SourceFile, Span

    return Span(SourceFile("<command line>", text), 1, start + 1, 1, max(end, start + 1) + 1)


class _VerifyEach:
    """--verify-each as an instrument: the verifier after every pass, naming the pass."""

    def run_before_pass(self, mod, p) -> None:
        pass

    def run_after_pass(self, mod, p, new_mod) -> None:
        from ..analysis.verifier import verify
        from ..text import is_tvmscript_module

        try:
            if is_tvmscript_module(new_mod):
                from ..analysis.relax_verifier import verify_module

                verify_module(new_mod)
            else:
                verify(new_mod)
        except DiagnosticError as err:
            err.diagnostics[0].message = f"after pass `{p.name}`: {err.diagnostics[0].message}"
            raise


class _PrintIR:
    """--print-ir-* as a pass instrument; dumps carry greppable MLIR-style headers."""

    def __init__(self, args, out) -> None:
        self.args, self.out = args, out

    def _dump(self, when: str, p, mod) -> None:
        from ..text import to_text

        self.out.write(f"// -----// IR Dump {when} {p.tvm_name} ({p.name}) //----- //\n")
        text = to_text(mod)
        self.out.write(text if text.endswith("\n") else text + "\n")  # TVMScript may end without one

    def run_before_pass(self, mod, p) -> None:
        if p.name in self.args.print_ir_before or p.tvm_name in self.args.print_ir_before:
            self._dump("Before", p, mod)

    def run_after_pass(self, mod, p, new_mod) -> None:
        a = self.args
        if a.print_ir_after_all or p.name in a.print_ir_after or p.tvm_name in a.print_ir_after:
            self._dump("After", p, new_mod)
        elif a.print_ir_after_change and new_mod is not mod:
            from ..ir.structural import structural_equal

            if not structural_equal(mod, new_mod):
                self._dump("After", p, new_mod)


def _split(text: str) -> list[tuple[int, str]]:
    """(first line number - 1, text) of each part; parts keep their line numbers."""
    parts, start, line = [], 0, 0
    for m in _SPLIT_RE.finditer(text):
        parts.append((line, text[start:m.start()]))
        line += text[start:m.end()].count("\n")
        start = m.end()
    parts.append((line, text[start:]))
    return parts


def _process(text: str, name: str, passes, args, timing, stderr, config: dict) -> str:
    from .._util import gc_paused
    from ..text import parse, to_text

    t0 = time.perf_counter()
    with gc_paused():  # parsing paused it already; inference and the verifier allocate as much again
        mod = parse(text, name, args.syntax)
        if args.verify_each:
            _verify_parsed(mod)
    t1 = time.perf_counter()
    if passes:
        from ..transform import PassContext, Sequential

        instruments = [_PrintIR(args, stderr)]
        if args.verify_each:
            instruments.append(_VerifyEach())
        if args.verify_numerics:
            from ..analysis.numerics import VerifyNumerics

            instruments.append(VerifyNumerics(mod, args.verify_numerics_tolerance))
        if timing is not None:
            instruments.append(timing)
        # Passes named on the command line always run (as TVM's required_pass); the
        # opt level gates the passes of pipelines, and picks fuse-ops' level.
        with PassContext(opt_level=args.opt_level, config=config, instruments=instruments,
                         required_pass=[p.name for p in passes], disabled_pass=args.disabled_pass) as ctx:
            mod = Sequential(passes).transform_module(mod, ctx)
    t2 = time.perf_counter()
    if args.print_types:  # Relay; TVMScript always shows struct info
        from ..analysis.type_infer import infer_types

        infer_types(mod)
    out = to_text(mod, show_types=args.print_types)
    if args.print_memory_plan:
        from ..passes.static_plan_block_memory import memory_plan_summary

        stderr.write(memory_plan_summary(mod) + "\n")
    if args.dump_graph:
        from ..analysis.graphviz import write_graph

        write_graph(mod, args.dump_graph)
    if args.verify_roundtrip:
        _verify_roundtrip(mod, out, name)
    if timing is not None:
        timing.extra += [("Parser", t1 - t0), ("Output", time.perf_counter() - t2)]
    return out


def _verify_parsed(mod) -> None:
    from ..text import is_tvmscript_module

    if is_tvmscript_module(mod):
        from ..analysis.relax_verifier import verify_module

        verify_module(mod)
        return
    from ..analysis.type_infer import try_infer_types
    from ..analysis.verifier import verify

    # TVM's parser ends with type inference; here it is done when the program has
    # the annotations it needs, and reports a program that is ill-typed.
    try_infer_types(mod)
    verify(mod, check_types=False)  # the types were inferred just now: checking them again would repeat it


def _verify_roundtrip(mod, out: str, name: str) -> None:
    from ..ir.structural import structural_equal
    from ..text import parse, to_text
    from ..text.tvmscript.tir_stmt import printed_domains

    # nested sblock domains `(v, v + e)` read back as extent `v + e - v`, in TVM as here
    again = printed_domains(parse(out, f"{name} (printed)"))
    if not structural_equal(mod, again, map_free_vars=True):
        raise DiagnosticError("round trip failed: the printed module parses to a different module")
    reprinted = to_text(again)
    if reprinted != out:
        pairs = zip(out.splitlines() + [""], reprinted.splitlines() + [""], strict=False)
        first = next(i for i, (a, b) in enumerate(pairs) if a != b)
        raise DiagnosticError(f"round trip failed: printing is not a fixed point (line {first + 1} differs)")


def run(argv: list[str] | None = None, stdin=None, stdout=None, stderr=None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    args = build_arg_parser().parse_args(argv)
    return guarded("irtool-opt", args.debug, stderr, lambda err: err.render("<command line>"),
                   lambda: _execute(args, stdin, stdout, stderr))


def _execute(args, stdin, stdout, stderr) -> int:
    if args.list_passes:
        stdout.write(_list_passes() + "\n")
        return 0
    if args.list_ops:
        stdout.write(_list_ops() + "\n")
        return 0
    passes = _build_pipeline(args.pipeline)
    config = _parse_pass_config(args.pass_config)
    for option in ("print_ir_before", "print_ir_after", "disabled_pass"):
        setattr(args, option, _pass_names(option, getattr(args, option)))
    name = "<stdin>" if args.input == "-" else args.input
    text = read_input(args.input, stdin, stderr)
    if text is None:
        return 1
    timing = None
    if args.time_passes:
        from ..transform import PassTimingInstrument

        timing = PassTimingInstrument()
        timing.extra = []
    parts = _split(text) if args.split_input_file else [(0, text)]
    outputs, failed = [], False
    for offset, part in parts:
        try:
            outputs.append(_process("\n" * offset + part, name, passes, args, timing, stderr, config))
        except DiagnosticError as err:
            stderr.write(err.render(name) + "\n")
            failed = True
    if timing is not None:
        stderr.write(timing.report(timing.extra) + "\n")
    from ..text import detect_syntax

    marker = "# -----" if detect_syntax(text) == "tvmscript" else SPLIT_MARKER
    result = f"{marker}\n".join(out if out.endswith("\n") else out + "\n" for out in outputs)
    if failed:  # like mlir-opt: show the parts that worked, but never write -o
        if outputs and not (args.output and args.output != "-"):
            stdout.write(result)
        return 1
    return write_output(args.output, result, stdout, stderr)


def main() -> None:
    run_main(run)


if __name__ == "__main__":
    main()
