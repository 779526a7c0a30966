"""Helpers shared by the operator-family tests: type-relation calls by op name."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from irtool.ir.expr import Attrs
from irtool.ir.types import TensorType, type_equal
from irtool.ops.registry import TypeRelError, lookup


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def attrs_of(name, attrs):
    return lookup(name).make_attrs(Attrs(attrs) if attrs else None)


def rel(name, *types, **attrs):
    return lookup(name).type_rel(list(types), attrs_of(name, attrs))


def rel_error(name, *types, **attrs) -> str:
    with pytest.raises(TypeRelError) as info:
        rel(name, *types, **attrs)
    return str(info.value)


def assert_type(t, shape, dtype):
    assert type_equal(t, T(shape, dtype)), t


def onnx_run(op_type, inputs, out_dtype, **attrs):
    """Run one ONNX node (opset 18) on onnxruntime's CPU provider."""
    names = [f"in{i}" for i in range(len(inputs))]
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
           for n, x in zip(names, inputs)]
    out = helper.make_tensor_value_info("out", helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype)), None)
    graph = helper.make_graph([helper.make_node(op_type, names, ["out"], **attrs)], "g", ins, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))[0]
