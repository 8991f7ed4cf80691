#!/usr/bin/env python3
"""Generates the small ONNX models the CLI tests use (tests/tools/CliTest.cpp).

The generated files are committed; rerun this script (python3 make_models.py,
from any folder) only to change them. Output is deterministic.

Good models:
  tiny_mlp.onnx          x f32[N,4] -> MatMul/Add/Relu/MatMul/Add/Softmax -> y f32[N,3]
  two_outputs.onnx       x f32[2,3] -> "out/sum" (x+x) and "out:neg" (-x), names that
                         need sanitizing as file names
  int_bool.onnx          ids i64[3], flag bool[3] -> Gather from a table, Where
  fusion_chain.onnx      x f32[1,3,8,8], skip f32[1,4,8,8] -> Conv(conv1) + Relu(relu1)
                         (a contraction with an epilogue), Add(add1, residual
                         skip) + Relu(relu2) (an elementwise chain) -> y; relu1's
                         result also feeds Neg(neg1) -> side (a second user)
  conv_chains.onnx       x f32[2,8,8,8] -> seven convolutions, each with the chain a
                         cuDNN graph takes: bias + Clip(0,0.5), a depthwise conv +
                         Clip, bias + residual Add + Relu, SiLU (Sigmoid, Mul),
                         HardSwish, LeakyRelu, then a plain conv -> y f32[2,8,8,8]
  attention_block.onnx   qkv f32[B,6,72], mask f32[B,1,1,6] -> BERT-style self-attention
                         as torch's legacy exporter writes it (Slice into Q/K/V, head
                         split Reshape/Transpose, MatMul, Div by sqrt(d), mask Add,
                         Softmax, MatMul, head merge) -> y f32[B,6,24]; 3 heads of 8
Bad models (each must be refused with exit code 2 and a message naming the problem):
  empty.onnx, random_bytes.onnx, truncated.onnx, undefined_value.onnx, cycle.onnx,
  unknown_ops.onnx, reshape_impossible.onnx, short_raw_data.onnx,
  external_escape.onnx, huge_dim.onnx
A test suite for `solder test-onnx` (onnx_suite/): test_relu_ok passes,
test_relu_wrong fails, test_unsupported_op is skipped, test_legacy_broadcast is
refused (legacy).
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 17)]


def save(model, name, check=True):
    if check:
        onnx.checker.check_model(model)
    path = os.path.join(HERE, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    size = os.path.getsize(path)
    assert size < 50 * 1024, f"{name} is {size} bytes"


def model(graph):
    m = helper.make_model(graph, opset_imports=OPSET, producer_name="solder-tests")
    m.ir_version = 8
    return m


def tiny_mlp():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="fc2_bias"),
        helper.make_node("Softmax", ["h4"], ["y"], name="softmax", axis=-1),
    ]
    g = helper.make_graph(
        nodes, "tiny_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [w1, b1, w2, b2])
    return model(g)


def two_outputs():
    nodes = [
        helper.make_node("Add", ["x", "x"], ["out/sum"], name="sum"),
        helper.make_node("Neg", ["x"], ["out:neg"], name="neg"),
    ]
    g = helper.make_graph(
        nodes, "two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("out/sum", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("out:neg", TensorProto.FLOAT, [2, 3])])
    return model(g)


def int_bool():
    table = numpy_helper.from_array(
        np.arange(10 * 2, dtype=np.float32).reshape(10, 2), "table")
    zeros = numpy_helper.from_array(np.zeros((1, 2), np.float32), "zeros")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed", axis=0),
        helper.make_node("Unsqueeze", ["flag", "axes"], ["flag2"], name="unsq"),
        helper.make_node("Where", ["flag2", "rows", "zeros"], ["y"], name="select"),
    ]
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    g = helper.make_graph(
        nodes, "int_bool",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        [table, zeros, axes])
    return model(g)


def fusion_chain():
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(
        rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("Add", ["r", "skip"], ["a"], name="add1"),
        helper.make_node("Relu", ["a"], ["y"], name="relu2"),
        helper.make_node("Neg", ["r"], ["side"], name="neg1"),
    ]
    g = helper.make_graph(
        nodes, "fusion_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
         helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8]),
         helper.make_tensor_value_info("side", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w, b])
    return model(g)


def conv_chains():
    rng = np.random.default_rng(3)
    inits, nodes = [], []

    def conv(name, x, cin, cout, k, group=1, bias=True):
        w = rng.uniform(-0.4, 0.4, (cout, cin // group, k, k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name + "_w"))
        ins = [x, name + "_w"]
        if bias:
            inits.append(numpy_helper.from_array(
                rng.uniform(-0.5, 0.5, cout).astype(np.float32), name + "_b"))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name], name=name,
                                      pads=[k // 2] * 4, group=group))
        return name

    inits += [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
              numpy_helper.from_array(np.array(0.5, np.float32), "hi")]
    c1 = conv("conv1", "x", 8, 16, 3)
    nodes.append(helper.make_node("Clip", [c1, "lo", "hi"], ["r1"], name="clip1"))
    c2 = conv("conv2", "r1", 16, 16, 3, group=16)
    nodes.append(helper.make_node("Clip", [c2, "lo", "hi"], ["r2"], name="clip2"))
    c3 = conv("conv3", "r2", 16, 16, 1)
    nodes += [helper.make_node("Add", [c3, "r1"], ["a3"], name="add3"),
              helper.make_node("Relu", ["a3"], ["r3"], name="relu3")]
    c4 = conv("conv4", "r3", 16, 16, 1, bias=False)
    nodes += [helper.make_node("Sigmoid", [c4], ["s4"], name="sigmoid4"),
              helper.make_node("Mul", [c4, "s4"], ["r4"], name="mul4")]
    c5 = conv("conv5", "r4", 16, 16, 1)
    nodes.append(helper.make_node("HardSwish", [c5], ["r5"], name="hswish5"))
    c6 = conv("conv6", "r5", 16, 8, 1)
    nodes.append(helper.make_node("LeakyRelu", [c6], ["r6"], name="leaky6",
                                  alpha=0.1))
    conv("y", "r6", 8, 8, 1)
    g = helper.make_graph(nodes, "conv_chains", [f32("x", [2, 8, 8, 8])],
                          [f32("y", [2, 8, 8, 8])], inits)
    return model(g)


def attention_block():
    def const(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    inits = [const("s0", [0]), const("s24", [24]), const("s48", [48]),
             const("s72", [72]), const("ax2", [2]),
             const("split", [0, 0, 3, 8]), const("merge", [0, 0, 24]),
             numpy_helper.from_array(np.array(np.sqrt(8.0), np.float32), "d")]
    nodes = []
    for part, lo, hi in (("q", "s0", "s24"), ("k", "s24", "s48"),
                         ("v", "s48", "s72")):
        nodes += [
            helper.make_node("Slice", ["qkv", lo, hi, "ax2"], [part],
                             name=f"slice_{part}"),
            helper.make_node("Reshape", [part, "split"], [part + "4"],
                             name=f"split_{part}"),
            helper.make_node("Transpose", [part + "4"], [part + "t"],
                             name=f"heads_{part}",
                             perm=[0, 2, 3, 1] if part == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="scores"),
        helper.make_node("Div", ["scores", "d"], ["scaled"], name="scale"),
        helper.make_node("Add", ["scaled", "mask"], ["masked"], name="mask_add"),
        helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vt"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_t",
                         perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxt", "merge"], ["y"], name="merge_r"),
    ]
    g = helper.make_graph(
        nodes, "attention_block",
        [helper.make_tensor_value_info("qkv", TensorProto.FLOAT, ["B", 6, 72]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["B", 1, 1, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 6, 24])],
        inits)
    return model(g)


def simple_graph(nodes, inputs, outputs, inits=(), name="bad"):
    return model(helper.make_graph(nodes, name, inputs, outputs, list(inits)))


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    save(tiny_mlp(), "tiny_mlp.onnx")
    save(two_outputs(), "two_outputs.onnx")
    save(int_bool(), "int_bool.onnx")
    save(fusion_chain(), "fusion_chain.onnx")
    save(attention_block(), "attention_block.onnx")
    save(conv_chains(), "conv_chains.onnx")

    # Not a model at all.
    save_bytes("empty.onnx", b"")
    save_bytes("random_bytes.onnx",
               np.random.default_rng(1).integers(0, 256, 1000, np.uint8).tobytes())
    full = tiny_mlp().SerializeToString()
    save_bytes("truncated.onnx", full[: len(full) // 2])

    # A node reads a value nothing defines.
    save(simple_graph(
        [helper.make_node("Relu", ["nowhere"], ["y"], name="reads_nothing")],
        [f32("x", [2])], [f32("y", [2])]), "undefined_value.onnx", check=False)

    # Two nodes feeding each other.
    save(simple_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], name="cycle_a"),
         helper.make_node("Relu", ["a"], ["b"], name="cycle_b")],
        [f32("x", [2])], [f32("b", [2])]), "cycle.onnx", check=False)

    # Several unknown ops; the error must list every one.
    save(simple_graph(
        [helper.make_node("FrobnicateOp", ["x"], ["a"], name="frob1"),
         helper.make_node("Relu", ["a"], ["b"], name="relu"),
         helper.make_node("WibbleOp", ["b"], ["c"], name="wibble"),
         helper.make_node("FrobnicateOp", ["c"], ["y"], name="frob2")],
        [f32("x", [2])], [f32("y", [2])]), "unknown_ops.onnx", check=False)

    # Reshape of 6 elements to 4x2.
    shape = numpy_helper.from_array(np.array([4, 2], np.int64), "shape")
    save(simple_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")],
        [f32("x", [2, 3])], [f32("y", [4, 2])], [shape]),
        "reshape_impossible.onnx", check=False)

    # An initializer whose raw data is shorter than its shape needs.
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4, 4])
    w.raw_data = np.zeros(2, np.float32).tobytes()
    save(simple_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
        [f32("x", [4, 4])], [f32("y", [4, 4])], [w]),
        "short_raw_data.onnx", check=False)

    # External data that points outside the model's folder.
    e = TensorProto()
    e.name = "w"
    e.data_type = TensorProto.FLOAT
    e.dims.extend([4])
    e.data_location = TensorProto.EXTERNAL
    entry = e.external_data.add()
    entry.key = "location"
    entry.value = "../../../etc/passwd"
    save(simple_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
        [f32("x", [4])], [f32("y", [4])], [e]),
        "external_escape.onnx", check=False)

    # A dim of 2^40.
    save(simple_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [f32("x", [1 << 40])], [f32("y", [1 << 40])]),
        "huge_dim.onnx", check=False)

    onnx_suite()


def write_test(suite, name, m, inputs, outputs):
    """One ONNX backend-test folder: model.onnx + test_data_set_0/*.pb."""
    d = os.path.join(HERE, suite, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(HERE, suite, name, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for k, (tname, a) in enumerate(arrays):
            t = numpy_helper.from_array(a, tname)
            with open(os.path.join(d, f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def onnx_suite():
    """A tiny suite for `solder test-onnx`: one test of each outcome."""
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 0.0]], np.float32)
    relu = simple_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                        [f32("x", [2, 3])], [f32("y", [2, 3])], name="relu")
    write_test("onnx_suite", "test_relu_ok", relu, [("x", x)],
               [("y", np.maximum(x, 0))])
    wrong = np.maximum(x, 0)
    wrong[1, 0] = 2.5
    write_test("onnx_suite", "test_relu_wrong", relu, [("x", x)],
               [("y", wrong)])
    # An op solder does not implement (Hardmax: one-hot of the row maximum).
    hardmax = simple_graph(
        [helper.make_node("Hardmax", ["x"], ["y"], name="hardmax")],
        [f32("x", [2, 3])], [f32("y", [2, 3])], name="hardmax")
    onehot = np.eye(3, dtype=np.float32)[np.argmax(x, axis=1)]
    write_test("onnx_suite", "test_unsupported_op", hardmax, [("x", x)],
               [("y", onehot)])
    # Opset-6 Add with the legacy `broadcast`/`axis` attributes: b [3] is
    # aligned with dim 1 of a [2,3,4], which numpy broadcasting rejects.
    add = helper.make_model(
        helper.make_graph(
            [helper.make_node("Add", ["a", "b"], ["y"], name="legacy_add",
                              broadcast=1, axis=1)],
            "legacy", [f32("a", [2, 3, 4]), f32("b", [3])],
            [f32("y", [2, 3, 4])]),
        opset_imports=[helper.make_opsetid("", 6)])
    add.ir_version = 3
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.array([10, 20, 30], np.float32)
    write_test("onnx_suite", "test_legacy_broadcast", add,
               [("a", a), ("b", b)], [("y", a + b.reshape(1, 3, 1))])


def save_bytes(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
