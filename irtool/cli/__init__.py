"""Command-line tools: irtool-opt, irtool-run, irtool-import, irtool-translate, irtool-build.
Each module's `run(argv)` does the job and returns the exit status; what they share is here."""

from __future__ import annotations

import os
import sys
import tempfile


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
