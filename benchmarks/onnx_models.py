"""ONNX builders (onnx.helper, deterministic random weights) for the issue-14 workloads that
benchmarks/compile_time.py does not build: ResNet-20 (CIFAR), MobileNetV2 (224) and a
transformer encoder layer (d=256, 4 heads, seq 128). Each returns a ModelProto with one
float32 input `x` (batch 1) and one output `y`."""

from __future__ import annotations

import numpy as np


class _Graph:
    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, *shape, scale: float = 0.1, value=None) -> str:
        from onnx import numpy_helper

        name = self.fresh("w")
        array = value if value is not None else (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        from onnx import helper

        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def conv_bn(self, x: str, cin: int, cout: int, k: int, s: int, act: str | None = "Relu", groups: int = 1) -> str:
        w = self.weight(cout, cin // groups, k, k, scale=(2.0 / (cin // groups * k * k)) ** 0.5)
        y = self.op("Conv", [x, w], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=groups)
        y = self.op("BatchNormalization", [y, self.weight(cout, value=np.ones(cout, np.float32)),
                                           self.weight(cout, scale=0.05), self.weight(cout, scale=0.05),
                                           self.weight(cout, value=np.ones(cout, np.float32))])
        if act == "Relu":
            return self.op("Relu", [y])
        if act == "Relu6":
            return self.op("Clip", [y, self.weight(value=np.float32(0)), self.weight(value=np.float32(6))])
        return y

    def model(self, name: str, x_shape: list[int], y: str):
        from onnx import TensorProto, helper

        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return model


def resnet20():
    g = _Graph(1)
    x = g.conv_bn("x", 3, 16, 3, 1)
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for block in range(3):
            s = stride if block == 0 else 1
            y = g.conv_bn(g.conv_bn(x, cin, cout, 3, s), cout, cout, 3, 1, act=None)
            shortcut = x if s == 1 and cin == cout else g.conv_bn(x, cin, cout, 1, s, act=None)
            x, cin = g.op("Relu", [g.op("Add", [y, shortcut])]), cout
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    y = g.op("Gemm", [x, g.weight(10, 64), g.weight(10)], transB=1)
    return g.model("resnet20", [1, 3, 32, 32], y)


def mobilenetv2():
    g = _Graph(2)
    x = g.conv_bn("x", 3, 32, 3, 2, act="Relu6")
    cin = 32
    # (expansion, channels, repeats, stride), as torchvision's MobileNetV2
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else g.conv_bn(x, cin, hidden, 1, 1, act="Relu6")
            y = g.conv_bn(y, hidden, hidden, 3, stride, act="Relu6", groups=hidden)
            y = g.conv_bn(y, hidden, c, 1, 1, act=None)
            x = g.op("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = g.conv_bn(x, cin, 1280, 1, 1, act="Relu6")
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    y = g.op("Gemm", [x, g.weight(1000, 1280), g.weight(1000)], transB=1)
    return g.model("mobilenetv2", [1, 3, 224, 224], y)


def transformer_layer(d: int = 256, heads: int = 4, seq: int = 128, ffn: int = 1024):
    """Post-norm encoder layer as torch exports it: MatMul/Add projections, per-head
    Reshape/Transpose, scaled MatMul + Softmax, LayerNormalization, a ReLU feed-forward."""
    g = _Graph(3)
    hd = d // heads
    shape = lambda *dims: g.weight(value=np.array(dims, np.int64))  # noqa: E731

    def linear(x: str, n_in: int, n_out: int) -> str:
        product = g.op("MatMul", [x, g.weight(n_in, n_out, scale=n_in ** -0.5)])
        return g.op("Add", [product, g.weight(n_out, scale=0.02)])

    def split_heads(x: str) -> str:  # [1, seq, d] -> [1, heads, seq, hd]
        return g.op("Transpose", [g.op("Reshape", [x, shape(1, seq, heads, hd)])], perm=[0, 2, 1, 3])

    q, k, v = (split_heads(linear("x", d, d)) for _ in range(3))
    scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                          g.weight(value=np.float32(hd ** -0.5))])
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1, 3]), shape(1, seq, d)])

    def norm(x: str) -> str:
        return g.op("LayerNormalization", [x, g.weight(value=np.ones(d, np.float32)), g.weight(d, scale=0.02)],
                    axis=-1, epsilon=1e-5)

    x = norm(g.op("Add", ["x", linear(attn, d, d)]))
    y = norm(g.op("Add", [x, linear(g.op("Relu", [linear(x, d, ffn)]), ffn, d)]))
    return g.model("transformer_layer", [1, seq, d], y)


BUILDERS = {"resnet20": resnet20, "mobilenetv2": mobilenetv2, "transformer": transformer_layer}
