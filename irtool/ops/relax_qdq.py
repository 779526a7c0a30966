"""R.quantize and R.dequantize: TVM 0.27's struct info (src/relax/op/tensor/qdq.cc) and NumPy
references.

    quantize     out = clamp(round(data / scale) + zero_point, out_dtype's range)   (round: halves
                 to even, as TVM's T.round; no rounding for a float out_dtype)
    dequantize   out = (data - zero_point) * scale   (in int32, or float32 for float data; the
                 product in float32, clamped to float16's range for a float16 out_dtype)

scale and zero_point are scalars, singleton tensors (every dim 1), or vectors along `axis`.
"""

from __future__ import annotations

from .common import np
from .registry import TypeRelError

QUANTIZED = ("int8", "uint8", "int16", "uint16", "float8_e4m3fn", "float8_e5m2")
ZERO_POINT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float16")
DEQUANTIZE_INPUT = ("int8", "uint8", "int16", "uint16", "int32", "float8_e4m3fn", "float8_e5m2", "float16", "float32")


def _singleton(s) -> bool:
    shape = s.shape if isinstance(s.shape, tuple) else None
    return s.ndim == 0 or (shape is not None and len(shape) > 0 and all(d == 1 for d in shape))


def qdq_deduce(op: str):
    """TVM 0.27's InferTypeQuantize / InferTypeDequantize."""
    def deduce(args_sinfo: list, attrs: dict):
        from ..ir.relax import TensorStructInfo

        data, scale, zero_point = args_sinfo
        for s in args_sinfo:
            if not isinstance(s, TensorStructInfo):
                raise TypeRelError(f"{op} requires tensor arguments")
        out_dtype = attrs["out_dtype"]
        allowed = QUANTIZED if op == "quantize" else ("float16", "float32")
        if out_dtype not in allowed:
            raise TypeRelError(f"Unsupported output datatype attribute for operation: '{out_dtype}'")
        if not data.dtype or not scale.dtype or not zero_point.dtype:
            return TensorStructInfo(data.shape, "", ndim=data.ndim, vdevice=data.vdevice)
        if data.dtype not in (("float16", "float32") if op == "quantize" else DEQUANTIZE_INPUT):
            raise TypeRelError(f"Unsupported input datatype for operation: {data.dtype}")
        if scale.dtype not in ("float32", "float16"):
            raise TypeRelError(f"scale param datatype should be one of [float16, float32], but got {scale.dtype}")
        if zero_point.dtype not in ZERO_POINT:
            raise TypeRelError("zero_point param datatype should be one of ['int8', 'uint8', 'int16', 'uint16', "
                               f"'int32', 'uint32', 'float16'], but got {zero_point.dtype}")
        axis = attrs["axis"] + data.ndim if attrs["axis"] < 0 else attrs["axis"]
        if data.ndim not in (0, -1) and not 0 <= axis < data.ndim:
            raise TypeRelError(f"relax.{op}: axis param is out of range ({attrs['axis']})")
        for name, param in (("scale", scale), ("zero_point", zero_point)):
            if _singleton(param):
                continue
            if data.ndim == 0:
                raise TypeRelError(f"relax.{op}: scale and zero_point must be scalar or singleton tensors for "
                                   "rank-0 input")
            have = param.shape[0] if isinstance(param.shape, tuple) and param.shape else None
            want = data.shape[axis] if isinstance(data.shape, tuple) else None
            if have is None or want is None or not (have is want or have == want):
                raise TypeRelError(f"Size mismatch: relax.{op}: the input shape at dim {attrs['axis']} is "
                                   f"'{want}', but size of {name} param is '{have}'")
        return TensorStructInfo(data.shape, out_dtype, ndim=data.ndim, vdevice=data.vdevice)

    return deduce


def qdq_rel(op: str):
    def rel(args, at):
        from ..ir.relax import TensorStructInfo
        from ..ir.types import TensorType

        sinfos = [TensorStructInfo(tuple(a.shape), a.dtype) for a in args]
        out = qdq_deduce(op)(sinfos, at)
        return TensorType(tuple(out.shape), out.dtype)

    return rel


def _along(param, data, axis: int):
    """scale or zero_point shaped to broadcast against data: a scalar or singleton as it is,
    a vector along `axis`."""
    param = np.asarray(param)
    if param.size == 1 or data.ndim == 0:
        return param.reshape(())
    shape = [1] * data.ndim
    shape[axis % data.ndim] = param.shape[0]
    return param.reshape(-1)[:param.shape[0]].reshape(shape)


def quantize_ref(data, scale, zero_point, axis=-1, out_dtype="int8"):
    scale, zero_point = _along(scale, data, axis), _along(zero_point, data, axis)
    scaled = data / scale.astype(np.result_type(data.dtype, scale.dtype))
    if "int" in out_dtype:
        scaled = np.rint(scaled)
    value = scaled + zero_point.astype(scaled.dtype)
    info = np.iinfo(out_dtype) if "int" in out_dtype else np.finfo(out_dtype)
    return np.clip(value, info.min, info.max).astype(out_dtype)


def dequantize_ref(data, scale, zero_point, axis=-1, out_dtype="float32"):
    scale, zero_point = _along(scale, data, axis), _along(zero_point, data, axis)
    wide = "float32" if data.dtype.kind == "f" or str(data.dtype).startswith("float") else "int32"
    diff = data.astype(wide) - zero_point.astype(np.result_type(wide, zero_point.dtype))
    out = diff.astype("float32") * scale.astype("float32")
    if out_dtype == "float32":
        return out.astype("float32")
    return np.clip(out, -65504.0, 65504.0).astype(out_dtype)
