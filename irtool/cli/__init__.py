"""Command-line tools: irtool-opt, irtool-run, irtool-import, irtool-translate, irtool-build.
Each module's `run(argv)` does the job and returns the exit status; what they share is here."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

from ..diagnostics import DiagnosticError


def report_internal_error(tool: str, err: Exception, stderr) -> int:
    """An internal error says so, never with a raw traceback (`--debug` shows it)."""
    stderr.write(f"{tool}: internal error: {type(err).__name__}: {err}\n"
                 "(this is a bug in irtool; rerun with --debug to see the traceback)\n")
    return 1


def guarded(tool: str, debug: bool, stderr, render: Callable[[DiagnosticError], str], body: Callable[[], int]) -> int:
    """Run a tool's `body`: a user error is a diagnostic (`render`), an interrupt exit status
    130, anything else an internal error reported as such (re-raised with `--debug`)."""
    try:
        return body()
    except DiagnosticError as err:
        stderr.write(render(err) + "\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        if debug:
            raise
        return report_internal_error(tool, err, stderr)


def run_file_tool(tool: str, arg_parser, execute: Callable, argv, stdout, stderr, stdin) -> int:
    """`run` of a tool that reads one module file (`input_file`, `-` for standard input):
    `execute(args, name, stdout, stderr, stdin)` under `guarded`, diagnostics named after
    the file."""
    stdout, stderr, stdin = stdout or sys.stdout, stderr or sys.stderr, stdin or sys.stdin
    args = arg_parser.parse_args(argv)
    name = "<stdin>" if args.input_file == "-" else args.input_file
    return guarded(tool, args.debug, stderr, lambda err: err.render(name),
                   lambda: execute(args, name, stdout, stderr, stdin))


def read_input(path: str, stdin, stderr) -> str | None:
    """The input's text (`-`: standard input), or None after saying why it cannot be read."""
    try:
        if path == "-":
            return stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        name = "<stdin>" if path == "-" else path
        stderr.write(f"{name}: error: cannot read input: {getattr(err, 'strerror', None) or err}\n")
        return None


RECURSION_LIMIT = 200_000
STACK_BYTES = 512 * 1024 * 1024


def with_deep_stack(fn):
    """Call `fn()` in a thread with a large stack and a matching recursion limit, so deeply
    nested input (5,000 nested functions, a 100k-term expression) reaches the code that
    reports on it instead of Python's recursion limit or the C stack's end. Exceptions are
    re-raised in the caller."""
    import threading

    result: list = []
    error: list = []

    def target() -> None:
        try:
            result.append(fn())
        except BaseException as err:  # noqa: BLE001 — handed to the caller
            error.append(err)

    old_limit, old_size = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    threading.stack_size(STACK_BYTES)
    try:
        worker = threading.Thread(target=target, name="irtool", daemon=True)
        worker.start()
    finally:
        threading.stack_size(old_size)
    try:
        while worker.is_alive():
            worker.join(0.05)
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def run_main(run) -> None:
    """The console-script entry: deep IR needs a deep stack, and a closed pipe
    (`irtool-opt x.ir | head`) is not an error."""
    try:
        code = with_deep_stack(run)
        sys.stdout.flush()
    except BrokenPipeError:
        code = 0
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


def write_output(path: str | None, text: str, stdout, stderr) -> int:
    """Write a tool's result to `path` atomically (standard output for None or `-`); the
    exit status."""
    if not path or path == "-":
        stdout.write(text)
        return 0
    try:
        write_atomically(path, text)
    except OSError as err:
        stderr.write(f"{path}: error: cannot write output: {err.strerror or err}\n")
        return 1
    return 0


def write_atomically(path: str, data: str | bytes) -> None:
    """Write a file so that a failure never leaves it half-written or clobbered."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".irtool-", dir=directory)
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
