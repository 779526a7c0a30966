"""irtool-import: an ONNX model -> Relay text (`irtool.frontend.from_onnx`).

    irtool-import model.onnx [-o model.ir] [--shape data=1,3,224,224]... [--opset N]
                  [--keep-params] [--print-types]
"""

from __future__ import annotations

import argparse
import sys
import warnings

from ..diagnostics import DiagnosticError
from . import guarded, run_main, write_output


def _shape(text: str) -> tuple[str, tuple]:
    name, sep, dims = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=D1,D2,... (e.g. data=1,3,224,224), got `{text}`")
    try:
        values = tuple(-1 if d.strip() in ("?", "-1") else int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"dimensions must be integers or `?`, got `{dims}`") from None
    return name, values


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="irtool-import", description="Import an ONNX model as Relay text.")
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("-o", "--output", metavar="FILE", help="write the module here (atomically) instead of stdout")
    p.add_argument("--shape", action="append", type=_shape, default=[], metavar="NAME=D1,D2,...",
                   help="the shape of a graph input (repeatable; `?` or -1 for an unknown dimension)")
    p.add_argument("--opset", type=int, help="override the model's opset")
    p.add_argument("--keep-params", action="store_true",
                   help="initializers become parameters of @main instead of constants (freeze_params=False)")
    p.add_argument("--print-types", action="store_true", help="print inferred types, as TVM does")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    return p


def run(argv: list[str] | None = None, stdout=None, stderr=None) -> int:
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    args = build_arg_parser().parse_args(argv)
    return guarded("irtool-import", args.debug, stderr, lambda err: _render(err, args.model),
                   lambda: _execute(args, stdout, stderr))


def _render(err: DiagnosticError, model: str) -> str:
    message = str(err)
    if message.startswith(f"{model}: "):
        message = message[len(model) + 2:]
    return f"{model}: error: {message}"


def _execute(args, stdout, stderr) -> int:
    from ..frontend.onnx import from_onnx, load_model
    from ..text import to_text

    model = load_model(args.model)
    inputs = [i.name for i in model.graph.input]
    unknown = [name for name, _ in args.shape if name not in inputs]
    if unknown:  # from_onnx, as TVM's, ignores it: the input keeps the model's shape
        raise DiagnosticError(f"--shape names `{unknown[0]}`, which is not a graph input "
                              f"(inputs: {', '.join(inputs) or 'none'})")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod, _ = from_onnx(model, shape=dict(args.shape) or None, opset=args.opset,
                           freeze_params=not args.keep_params)
    for w in caught:
        stderr.write(f"{args.model}: warning: {w.message}\n")
    return write_output(args.output, to_text(mod, show_types=args.print_types), stdout, stderr)


def main() -> None:
    run_main(run)


if __name__ == "__main__":
    main()
