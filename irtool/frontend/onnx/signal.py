"""ONNX DFT as matrix products with constant transform matrices.

A DFT along one axis is linear in the signal, so it is `x @ M` for a constant matrix M
(complex: real and imaginary parts apart). M is computed at import by applying NumPy's
FFT to the unit vectors, which makes every variant exactly onnx's reference: `dft_length`
padding or truncating the signal, `onesided` keeping the first L//2 + 1 frequencies,
`inverse` (ifft, scaled by 1/L), and inverse + onesided (irfft: a one-sided spectrum to a
real signal, ignoring the imaginary parts of the DC and Nyquist terms as NumPy does). The
products run in the input's dtype; TVM v0.19's converter builds its own dft op instead.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import Tuple
from . import converter
from .nn import _matmul
from .tensor import _call, _static


def _matrices(n: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The transform as (n, out) matrices: one complex matrix; or, for irfft (a real
    output), the real matrices applied to the spectrum's real and imaginary parts."""
    basis = np.eye(n)
    if inverse and onesided:
        return np.fft.irfft(basis, n=length, axis=0).T, np.fft.irfft(1j * basis, n=length, axis=0).T
    full = (np.fft.ifft if inverse else np.fft.fft)(basis, n=length, axis=0)
    return (full[: length // 2 + 1] if onesided else full).T, None


def _dft(ctx, x, axis: int, length: int | None, inverse: bool, onesided: bool):
    shape = _static(ctx, x, "DFT")
    rank = len(shape)
    if shape[-1] not in (1, 2):
        raise ctx.error(f"DFT's last axis must be 1 (real) or 2 (complex), got {shape[-1]}")
    axis = axis % rank
    if axis == rank - 1:
        raise ctx.error("DFT's axis cannot be the last (real/imaginary) axis")
    n = shape[axis]
    if length is None:
        length = 2 * (n - 1) if inverse and onesided else n
    m, irfft_imag = _matrices(n, length, inverse, onesided)
    dtype = ctx.type_of(x).dtype
    perm = [i for i in range(rank - 1) if i != axis] + [axis]
    back = list(np.argsort(perm))

    def part(i: int):  # the real (0) or imaginary (1) signal, the transformed axis last
        p = _call(ctx, "strided_slice", x, begin=[i], end=[i + 1], strides=[1], axes=[rank - 1])
        return _call(ctx, "transpose", _call(ctx, "squeeze", p, axis=[rank - 1]), axes=perm)

    def times(signal, m):
        return _matmul(ctx, [signal, ctx.const(m.astype(dtype), dtype)], {})

    xr = part(0)
    xi = part(1) if shape[-1] == 2 else None
    if irfft_imag is None:
        yr, yi = times(xr, m.real), times(xr, m.imag)
        if xi is not None:
            yr = _call(ctx, "subtract", yr, times(xi, m.imag))
            yi = _call(ctx, "add", yi, times(xi, m.real))
        parts = [yr, yi]
    else:  # irfft: the real signal from the spectrum's real and imaginary parts
        y = times(xr, m)
        if xi is not None:
            y = _call(ctx, "add", y, times(xi, irfft_imag))
        parts = [y]
    parts = [_call(ctx, "expand_dims", _call(ctx, "transpose", p, axes=back), axis=rank - 1) for p in parts]
    return parts[0] if len(parts) == 1 else _call(ctx, "concatenate", Tuple(parts), axis=rank - 1)


def _length(ctx, inputs, index: int) -> int | None:
    if len(inputs) <= index or inputs[index] is None:
        return None
    return int(np.asarray(ctx.required_value(inputs[index], "DFT's dft_length")).reshape(()))


@converter("DFT", 17)
def _dft_17(ctx, inputs, attrs):
    return _dft(ctx, inputs[0], int(attrs.get("axis", 1)), _length(ctx, inputs, 1),
                bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0)))


@converter("DFT", 20)
def _dft_20(ctx, inputs, attrs):
    axis = -2 if len(inputs) < 3 or inputs[2] is None else int(
        np.asarray(ctx.required_value(inputs[2], "DFT's axis")).reshape(()))
    return _dft(ctx, inputs[0], axis, _length(ctx, inputs, 1), bool(attrs.get("inverse", 0)),
                bool(attrs.get("onesided", 0)))
