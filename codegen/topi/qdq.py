"""R.quantize and R.dequantize as TVM 0.27's LegalizeOps builds them (python/tvm/relax/transform/
legalize_ops/qdq.py): one `te.compute` (`quantized` / `dequantized`, axes i0, i1, ...), a 0-d
constant scale or zero point inlined as a TIR constant, a singleton tensor read at 0, a vector
read along `axis`:

    quantize     quantized[i] = cast(out, max(min(round(data[i] / scale) + zp, out_max), out_min))
                 (no round for a float out_dtype)
    dequantize   dequantized[i] = float32(wide(data[i]) - zp) * float32(scale), wide int32 (float32
                 for float data), clamped to out_dtype's range and cast unless it is float32
"""

from __future__ import annotations

from irtool.ir import tir

from .. import te
from .. import tir_build as tb
from . import register_legalize
from .common import const_int, try_convert_to_scalar_const


def _param(p, indices, axis: int):
    if isinstance(p, (tir.IntImm, tir.FloatImm)):
        return p
    if all(const_int(d) == 1 for d in p.shape):
        return p(*[tb.const(0, "int64")] * len(p.shape))
    return p(indices[axis])


def _clip_cast(value, dtype: str):
    """TVM's clip_cast; an integer bound meeting a float value becomes a float constant of the
    bound's exact value, not rounded to the value's dtype (`T.float16(32767.0)` for int16)."""
    bounds = [tb.max_value(dtype), tb.min_value(dtype)]
    if tb.is_float(value.dtype) and not tb.is_float(dtype):
        bounds = [tir.FloatImm(float(b.value), value.dtype) for b in bounds]
    return tb.cast(dtype, tb.max_(tb.min_(value, bounds[0]), bounds[1]))


def te_quantize(data: te.Tensor, scale, zero_point, axis: int, out_dtype: str) -> te.Tensor:
    def element(*i):
        scaled = tb.div(data(*i), _param(scale, i, axis))
        rounded = tb.call("round", scaled) if "int" in out_dtype else scaled
        return _clip_cast(tb.add(rounded, _param(zero_point, i, axis)), out_dtype)

    return te.compute(data.shape, element, name="quantized")


def te_dequantize(data: te.Tensor, scale, zero_point, axis: int, out_dtype: str) -> te.Tensor:
    wide = "float32" if tb.is_float(data.dtype) or data.dtype.startswith("bfloat") else "int32"

    def element(*i):
        diff = tb.sub(tb.cast(wide, data(*i)), _param(zero_point, i, axis))
        out = tb.mul(diff, tb.cast("float32", _param(scale, i, axis)))
        return out if out_dtype == "float32" else _clip_cast(out, out_dtype)

    return te.compute(data.shape, element, name="dequantized")


def _qdq(name: str, te_func):
    def legalize(bb, call):
        axis = int(call.attrs["axis"])
        axis = axis + call.args[0].struct_info.ndim if axis < 0 else axis
        scale, zero_point = (try_convert_to_scalar_const(a) for a in call.args[1:])
        out_dtype = call.attrs["out_dtype"]
        if name == "quantize" and call.args[0].struct_info.dtype == "float16" \
                and call.args[1].struct_info.dtype == "float16" and out_dtype in ("uint16", "int32", "uint32"):
            return call  # the bound (65535) is no float16 constant: TVM's legalization fails
        return bb.call_te(te_func, call.args[0], scale, zero_point, axis, call.attrs["out_dtype"],
                          primfunc_name_hint=name)

    return legalize


register_legalize("relax.quantize", _qdq("quantize", te_quantize))
register_legalize("relax.dequantize", _qdq("dequantize", te_dequantize))
