"""Lowering to TIR and native code generation (to come: see DESIGN.md §7)."""
