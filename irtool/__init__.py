"""irtool: an MLIR-style toolchain for TVM's tensor IRs (Relay, Relax, TIR).

    import irtool
    mod = irtool.parse(open("model.ir").read(), "model.ir")
    mod = irtool.transform.Sequential([irtool.transform.get_pass("to-a-normal-form")])(mod)
    print(irtool.to_text(mod))
    exe = irtool.build(mod)          # native code for the host CPU
    y = exe(x)

Submodules load lazily so that `irtool-opt` starts fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "parse": ("irtool.text", "parse"),
    "parse_expr": ("irtool.text", "parse_expr"),
    "to_text": ("irtool.text", "to_text"),
    "structural_equal": ("irtool.ir.structural", "structural_equal"),
    "structural_hash": ("irtool.ir.structural", "structural_hash"),
    "IRModule": ("irtool.ir.module", "IRModule"),
    "DiagnosticError": ("irtool.diagnostics", "DiagnosticError"),
    "interpret": ("irtool.exec.relay", "interpret"),
    "infer_types": ("irtool.analysis.type_infer", "infer_types"),
    "build": ("irtool.codegen.executable", "build"),
}


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in ("ir", "text", "transform", "passes", "diagnostics", "ops", "analysis", "exec", "codegen"):
        return importlib.import_module(f"irtool.{name}")
    raise AttributeError(f"module 'irtool' has no attribute {name!r}")


__all__ = list(_LAZY)
