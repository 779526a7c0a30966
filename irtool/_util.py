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


def lazy_import(name: str):
    """A module object that imports `name` on first attribute access (importlib's LazyLoader):
    op tables can say `np.add` without making every parse pay for importing NumPy."""
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
