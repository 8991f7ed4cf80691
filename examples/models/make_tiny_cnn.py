#!/usr/bin/env python3
"""Writes tiny_cnn.onnx: a small classifier with the patterns real exporters
produce (Conv + BatchNormalization + Relu, MaxPool, a residual Add, global
pooling, Flatten, Gemm, Softmax) and a symbolic batch dim. Seeded, so the
file is reproducible."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def w(name, *shape, scale=0.2):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [
    w("conv1.w", 8, 3, 3, 3), w("conv1.b", 8),
    numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn1.scale"),
    w("bn1.bias", 8), w("bn1.mean", 8),
    numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "bn1.var"),
    w("conv2.w", 8, 8, 3, 3), w("conv2.b", 8),
    w("fc.w", 10, 8), w("fc.b", 10),
]
nodes = [
    helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], name="conv1",
                     pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("BatchNormalization",
                     ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["b1"],
                     name="bn1", epsilon=1e-5),
    helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                     strides=[2, 2]),
    helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2",
                     pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c2", "p1"], ["a2"], name="residual"),
    helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
]
graph = helper.make_graph(
    nodes, "tiny_cnn",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="solder-examples")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, "tiny_cnn.onnx")
