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
