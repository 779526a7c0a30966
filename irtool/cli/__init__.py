"""Command-line tools: irtool-opt, irtool-run, irtool-import. Each module's `run(argv)`
does the job and returns the exit status; what they share is here."""

from __future__ import annotations

import os
import sys


def report_internal_error(tool: str, err: Exception, stderr) -> int:
    """An internal error says so, never with a raw traceback (`--debug` shows it)."""
    stderr.write(f"{tool}: internal error: {type(err).__name__}: {err}\n"
                 "(this is a bug in irtool; rerun with --debug to see the traceback)\n")
    return 1


def run_main(run) -> None:
    """The console-script entry: deep IR needs recursion room, and a closed pipe
    (`irtool-opt x.ir | head`) is not an error."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    try:
        code = run()
        sys.stdout.flush()
    except BrokenPipeError:
        code = 0
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)
