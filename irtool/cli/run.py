"""irtool-run: execute a module with the NumPy interpreter, or as native code.

    irtool-run model.ir --input x=x.npy --input w=w.npy [-o out.npz]
    irtool-run model.ir --random-inputs --seed 0
    irtool-run model.ir --random-inputs --backend native [--threads N] [--repeat N]

With `--backend native` the module is compiled (`irtool.build`) and the compile time is
printed to stderr; `--repeat N` runs it N more times and prints
`time: median X ms, min Y ms over N runs` to stderr.

Prints a short summary of each output (type, min/max/mean, first values); `-o` saves
them as `output_0`, `output_1`, ... in an .npz (tuples are flattened in order), or as
one .npy when the path ends in `.npy` and there is one output.
Exit status: 0 success, 1 user error (diagnostic printed), 2 usage error.
"""

from __future__ import annotations

import argparse
import os

from ..diagnostics import DiagnosticError
from . import read_input, run_file_tool, run_main


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="irtool-run",
                                description="Run a Relay or Relax module with the NumPy interpreter.")
    p.add_argument("input_file", metavar="FILE", help="the module (- for standard input)")
    p.add_argument("--entry", default="main", help="the function to run (default: main)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help="a parameter's value from a .npy file (repeatable); a .npz gives several by name")
    p.add_argument("--random-inputs", action="store_true", help="random values for the parameters not given")
    p.add_argument("--seed", type=int, default=0, help="seed for --random-inputs (default 0)")
    p.add_argument("-o", "--output", metavar="FILE", help="save the outputs (.npz, or .npy for one output)")
    p.add_argument("--syntax", choices=("relay", "tvmscript"), help="input syntax (default: detected)")
    p.add_argument("--backend", choices=("interpreter", "native"), default="interpreter",
                   help="run with the NumPy interpreter (default) or compile to native code")
    p.add_argument("--threads", type=int, metavar="N", help="threads for parallel loops (native backend)")
    p.add_argument("--repeat", type=int, default=0, metavar="N", help="time N more runs (native backend)")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    return p


def _run_native(mod, inputs: dict, args, stderr):
    import time

    from ..codegen.executable import build
    from ..codegen.native import set_num_threads

    if args.threads is not None:
        if args.threads < 1:
            raise DiagnosticError("--threads must be at least 1")
        set_num_threads(args.threads)
    started = time.perf_counter()
    exe = build(mod, entry=args.entry)
    stderr.write(f"compile: {(time.perf_counter() - started) * 1e3:.1f} ms\n")
    if exe.main is None:
        raise DiagnosticError(f"`@{args.entry}` is not a Relax or Relay function: nothing to run as a model")
    result = exe.run(inputs)
    if args.repeat > 0:
        t = exe.time(*[inputs[n] for n in exe.input_names], repeat=args.repeat, warmup=0)
        stderr.write(f"time: median {t['median_ms']:.3f} ms, min {t['min_ms']:.3f} ms over {args.repeat} runs\n")
    return result


def _flatten(value, out: list) -> None:
    if isinstance(value, tuple):
        for v in value:
            _flatten(v, out)
    else:
        out.append(value)


def summarize(index: int, array) -> str:
    import numpy as np

    head = f"output {index}: {array.dtype}{list(array.shape)}"
    if array.size == 0:
        return head + " (empty)"
    flat = array.reshape(-1)
    first = np.array2string(flat[:6], precision=4, separator=", ", threshold=6)
    if array.dtype.kind in "fiu":
        stats = f" min={flat.min():.6g} max={flat.max():.6g} mean={flat.astype('float64').mean():.6g}"
    else:
        stats = f" true={int(np.count_nonzero(flat))}/{flat.size}"
    return f"{head}{stats} first={first}{' ...' if flat.size > 6 else ''}"


def _load_inputs(specs: list[str]) -> dict:
    import numpy as np

    inputs: dict = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name:
            raise DiagnosticError(f"--input expects NAME=FILE, got `{spec}`")
        try:
            loaded = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise DiagnosticError(f"cannot load input `{name}` from {path}: {err}") from None
        if isinstance(loaded, np.lib.npyio.NpzFile):
            raise DiagnosticError(f"{path}: give one array per --input (an .npz holds several)")
        inputs[name.lstrip("%")] = loaded
    return inputs


def run(argv: list[str] | None = None, stdout=None, stderr=None, stdin=None) -> int:
    return run_file_tool("irtool-run", build_arg_parser(), _execute, argv, stdout, stderr, stdin)


def _execute(args, name: str, stdout, stderr, stdin) -> int:
    import numpy as np

    from ..exec.relay import interpret, random_input
    from ..text import parse

    text = read_input(args.input_file, stdin, stderr)
    if text is None:
        return 1
    mod = parse(text, name, args.syntax)
    fn = mod.functions.get(args.entry)
    if fn is None:
        raise DiagnosticError(f"the module has no function `@{args.entry}`")
    inputs = _load_inputs(args.input)
    if args.random_inputs:
        rng = np.random.default_rng(args.seed)
        for p in fn.params:
            if p.name_hint in inputs:
                continue
            if not hasattr(p, "type_annotation"):  # a Relax parameter: from its struct info
                from ..exec.relax import random_input as random_relax_input

                inputs[p.name_hint] = random_relax_input(p.struct_info, rng, p.span)
                continue
            if p.name_hint not in inputs:
                if p.type_annotation is None:
                    raise DiagnosticError(f"`%{p.name_hint}` has no type: cannot make a random input", p.span)
                inputs[p.name_hint] = random_input(p.type_annotation, rng)
    if args.backend == "native":
        from ..codegen.native import NativeError

        try:
            result = _run_native(mod, inputs, args, stderr)
        except NativeError as err:
            raise DiagnosticError(str(err), getattr(err, "span", None)) from None
    else:
        if args.threads is not None or args.repeat:
            raise DiagnosticError("--threads and --repeat need --backend native")
        result = interpret(mod, inputs, args.entry)
    outputs: list = []
    _flatten(result, outputs)
    for i, out in enumerate(outputs):
        stdout.write(summarize(i, np.asarray(out)) + "\n")
    if args.output:
        directory = os.path.dirname(os.path.abspath(args.output))
        if args.output.endswith(".npy") and len(outputs) == 1:
            np.save(args.output, outputs[0])
        elif not os.path.isdir(directory):
            raise DiagnosticError(f"cannot write {args.output}: no such directory")
        else:
            np.savez(args.output, **{f"output_{i}": o for i, o in enumerate(outputs)})
    return 0


def main() -> None:
    run_main(run)


if __name__ == "__main__":
    main()
