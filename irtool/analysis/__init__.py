"""Analyses over the IR: type inference and the well-formedness verifier."""
