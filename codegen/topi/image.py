"""Image operators: TOPI's python/tvm/topi/image/resize.py (resize2d)."""

from __future__ import annotations
