"""Fixtures shared by the test files."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture
def default_recursion_limit():
    """Python's default recursion limit, for tests that 100k-node programs need no recursion."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(scope="session")
def tvm_python() -> str:
    """A Python interpreter with Apache TVM 0.27 (the environment variable `IRTOOL_TVM_PYTHON`,
    which `make test` passes on); tests that need it are skipped without it."""
    import os
    import subprocess

    path = os.environ.get("IRTOOL_TVM_PYTHON", "")
    if not path or not os.path.exists(path):
        pytest.skip("TVM is not installed (set IRTOOL_TVM_PYTHON to a Python with apache-tvm 0.27)")
    probe = subprocess.run([path, "-c", "import tvm, tvm.script"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"{path} cannot import tvm: {probe.stderr.strip()[-200:]}")
    return path


@pytest.fixture(autouse=True)
def imported_text_parses_back(request, monkeypatch):
    """Every model an ONNX test imports must print as text our parser reads back to the same
    module (the printer must never write what the parser rejects: issue 11, `-1` dims)."""
    if not request.module.__name__.split(".")[-1].startswith("test_onnx") or \
            not hasattr(request.module, "from_onnx"):
        yield
        return
    import irtool
    from irtool.ir.structural import structural_equal

    real = request.module.from_onnx

    def checked(*args, **kwargs):
        mod, params = real(*args, **kwargs)
        text = irtool.to_text(mod)
        again = irtool.parse(text, "<imported>")
        assert irtool.to_text(again) == text, "imported module does not print back the same"
        assert structural_equal(again, mod), "imported module does not parse back structurally equal"
        return mod, params

    monkeypatch.setattr(request.module, "from_onnx", checked)
    yield
