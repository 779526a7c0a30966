"""ONNX DFT as matrix products with constant transform matrices (STFT: of the windowed
frames; MelWeightMatrix: a constant computed at import).

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


@converter("STFT", 17)
def _stft(ctx, inputs, attrs):
    """The signal (batch, length, 1 or 2) cut into frames of `frame_length` every
    `frame_step` samples (a constant `take`), each multiplied by the window (ones without
    one), then the DFT along the frame (`onesided`, default 1): (batch, frames, bins, 2)."""
    signal, step = inputs[0], inputs[1]
    window = inputs[2] if len(inputs) > 2 else None
    shape = _static(ctx, signal, "STFT")
    if len(shape) != 3:
        raise ctx.error(f"STFT's signal must be (batch, length, 1 or 2), got shape {list(shape)}")
    step = int(np.asarray(ctx.required_value(step, "STFT's frame_step")).reshape(()))
    if len(inputs) > 3 and inputs[3] is not None:
        frame = int(np.asarray(ctx.required_value(inputs[3], "STFT's frame_length")).reshape(()))
    else:
        frame = ctx.shape_of(window)[0] if window is not None else shape[1]
    if step < 1 or not 1 <= frame <= shape[1]:
        raise ctx.error(f"STFT needs frame_step >= 1 and 1 <= frame_length <= {shape[1]}, got {step} and {frame}")
    if window is not None and tuple(ctx.shape_of(window)) != (frame,):
        raise ctx.error(f"STFT's window must have frame_length {frame} elements, got shape "
                        f"{list(ctx.shape_of(window))}")
    count = (shape[1] - frame) // step + 1
    positions = np.arange(count)[:, None] * step + np.arange(frame)[None, :]
    frames = _call(ctx, "take", signal, ctx.const(positions.astype("int64")), axis=1)  # (B, F, frame, C)
    if window is not None:
        weights = _call(ctx, "reshape", _call(ctx, "cast", window, dtype=ctx.type_of(signal).dtype),
                        newshape=[1, 1, frame, 1])
        frames = _call(ctx, "multiply", frames, weights)
    return _dft(ctx, frames, 2, None, False, bool(attrs.get("onesided", 1)))


@converter("MelWeightMatrix", 17)
def _mel_weight_matrix(ctx, inputs, attrs):
    """The (dft_length // 2 + 1, num_mel_bins) matrix of triangular mel filters, computed at
    import as the ONNX spec defines it (its inputs must be known then)."""
    from . import ONNX_DTYPES

    bins, length, rate, low, high = (np.asarray(ctx.required_value(x, f"MelWeightMatrix's {name}")).reshape(())
                                     for x, name in zip(inputs, ("num_mel_bins", "dft_length", "sample_rate",
                                                                 "lower_edge_hertz", "upper_edge_hertz")))
    bins, length, rate = int(bins), int(length), int(rate)
    if bins < 1 or length < 1 or rate < 1:
        raise ctx.error(f"MelWeightMatrix needs positive num_mel_bins, dft_length and sample_rate, got "
                        f"{bins}, {length}, {rate}")
    low_mel, high_mel = (2595 * np.log1p(np.asarray(f) / 700) / np.log(10) for f in (low, high))
    edges = np.arange(bins + 2) * ((high_mel - low_mel) / (bins + 2)) + low_mel
    edges = (((length + 1) * (700 * np.expm1(edges / 2595 * np.log(10)))) // rate).astype(int)
    out = np.zeros((length // 2 + 1, bins))
    for i in range(bins):
        left, centre, right = edges[i], edges[i + 1], edges[i + 2]
        if centre == left:
            out[centre, i] = 1
        else:
            out[left:centre + 1, i] = (np.arange(left, centre + 1) - left) / (centre - left)
        if right > centre:
            out[centre:right, i] = (right - np.arange(centre, right)) / (right - centre)
    dtype = ONNX_DTYPES.get(int(attrs.get("output_datatype", 1)))
    if dtype is None:
        raise ctx.error(f"MelWeightMatrix's output_datatype {attrs.get('output_datatype')} is not supported")
    return ctx.const(out.astype(dtype), dtype)
