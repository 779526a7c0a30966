"""The layout rules of the code base (issue 11 §5), checked so they stay true."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 820  # "no module over about 800 lines"


def _packages_on_disk(config: dict) -> set[str]:
    dirs = {"irtool": ROOT / "irtool"} | {name: ROOT / path for name, path in config["package-dir"].items()}
    found = set()
    for name, path in dirs.items():
        for init in path.rglob("__init__.py"):
            rel = init.parent.relative_to(path).parts
            found.add(".".join((name, *rel)))
    return found


def test_every_package_is_listed_for_a_non_editable_install():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(config["packages"]) == _packages_on_disk(config)


def test_no_module_over_about_800_lines():
    sources = [p for d in ("irtool", "passes", "codegen", "grammar") for p in (ROOT / d).rglob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in sources if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            out.add("." * node.level + (node.module or ""))
    return out


def test_interpreters_import_only_downward():
    """relay -> relax -> tir, and only lazily: no interpreter imports another at the top."""
    for name in ("relay", "relax", "tir", "tir_codegen", "tir_runtime"):
        imports = _top_level_imports(ROOT / "irtool" / "exec" / f"{name}.py")
        assert not imports & {".relay", ".relax"}, name
    assert ".tir" not in _top_level_imports(ROOT / "irtool" / "exec" / "tir_codegen.py")


def test_registry_does_not_import_the_printer():
    out = subprocess.run([sys.executable, "-c", "import sys, irtool.ops.registry; "
                          "print(sorted(m for m in sys.modules if m.startswith('irtool.text.')))"],
                         capture_output=True, text=True, check=True).stdout
    assert "relay_printer" not in out and "relay_parser" not in out
