"""The interpreters: irtool's executable semantics, the oracles compiled code is tested against.

    relay.py   Relay on NumPy arrays, with the operators' NumPy references
    relax.py   Relax (dataflow blocks, call_tir, memory ops), PrimFuncs via tir.py
    tir.py     a PrimFunc translated once to a Python function, then run in place

Each module imports only downward (relay → relax → tir, lazily); they share the error
type below.
"""


class InterpreterError(Exception):
    """An interpreter found an inconsistency in irtool itself (not a user error)."""
