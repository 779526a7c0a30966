"""Small shared helpers."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector: building or walking 100k-node graphs allocates
    millions of objects and the collector's repeated full scans would dominate the time.
    The IR holds no reference cycles, so nothing is lost by collecting later."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
