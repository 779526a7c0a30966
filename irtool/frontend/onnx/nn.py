"""ONNX neural-network ops: convolution, pooling, normalisation, Gemm/MatMul, softmax."""

from __future__ import annotations
