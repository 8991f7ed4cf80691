#!/usr/bin/env python3
"""Generates tests/data/onnx_opset23/: ONNX backend-style test folders for
the opset-23 ops solder imports (Attention without a KV cache, and
RMSNormalization), with expected outputs from onnx's reference evaluator
(onnx >= 1.18). `solder test-onnx tests/data/onnx_opset23` must pass them
all (tests/tools/CliTest.cpp). Deterministic; the files are committed.
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "onnx_opset23")


def write(name, nodes, inputs, outputs, feeds):
    """One test folder: model.onnx + test_data_set_0 with onnx's outputs."""
    graph = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                          producer_name="solder-tests")
    m.ir_version = 10
    onnx.checker.check_model(m)
    got = ReferenceEvaluator(m).run(None, feeds)
    d = os.path.join(SUITE, name, "test_data_set_0")
    os.makedirs(d)
    with open(os.path.join(SUITE, name, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, arrays in (("input", [(i.name, feeds[i.name]) for i in inputs]),
                         ("output", [(o.name, g) for o, g in zip(outputs, got)])):
        for k, (tname, a) in enumerate(arrays):
            with open(os.path.join(d, f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a), tname)
                        .SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def attention(name, q, k, v, mask=None, **attrs):
    ins = ["q", "k", "v"] + (["mask"] if mask is not None else [])
    node = helper.make_node("Attention", ins, ["y"], name="attn", **attrs)
    feeds = {"q": q, "k": k, "v": v}
    inputs = [vi(n, TensorProto.FLOAT, list(feeds[n].shape))
              for n in ("q", "k", "v")]
    if mask is not None:
        feeds["mask"] = mask
        inputs.append(vi("mask", TensorProto.BOOL if mask.dtype == bool
                         else TensorProto.FLOAT, list(mask.shape)))
    out = ReferenceEvaluator(helper.make_model(
        helper.make_graph([node], name, inputs,
                          [vi("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 23)])).run(None, feeds)[0]
    write(name, [node], inputs, [vi("y", TensorProto.FLOAT, list(out.shape))],
          feeds)


def main():
    shutil.rmtree(SUITE, ignore_errors=True)
    rng = np.random.default_rng(23)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    # 4-D, additive mask broadcast over heads, default scale.
    attention("test_attention_4d_float_mask", r(2, 3, 5, 8), r(2, 3, 7, 8),
              r(2, 3, 7, 6), r(2, 1, 5, 7))
    # 3-D with grouped-query heads (4 query heads share 2 key/value heads)
    # and an explicit scale.
    attention("test_attention_3d_gqa_scaled", r(2, 5, 4 * 8), r(2, 6, 2 * 8),
              r(2, 6, 2 * 8), q_num_heads=4, kv_num_heads=2, scale=0.3)
    # Causal, Sq == Sk.
    attention("test_attention_4d_causal", r(1, 2, 6, 16), r(1, 2, 6, 16),
              r(1, 2, 6, 16), is_causal=1)
    # Boolean mask (every row keeps at least one key).
    keep = rng.random((1, 1, 4, 9)) > 0.4
    keep[..., 0] = True
    attention("test_attention_4d_bool_mask", r(1, 2, 4, 8), r(1, 2, 9, 8),
              r(1, 2, 9, 8), keep)

    # RMSNormalization over the last two dims, with a scale.
    x, scale = r(2, 3, 4, 5), r(4, 5)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"],
                            name="rms", axis=-2, epsilon=1e-3)
    write("test_rms_normalization_axis_m2", [node],
          [vi("x", TensorProto.FLOAT, [2, 3, 4, 5]),
           vi("scale", TensorProto.FLOAT, [4, 5])],
          [vi("y", TensorProto.FLOAT, [2, 3, 4, 5])], {"x": x, "scale": scale})

    # A bad model (tests/data/attention_kv_cache.onnx): Attention with a
    # past_key/past_value cache, which solder refuses by name.
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"],
                            ["y", "present_k", "present_v"],
                            name="cached_attn")
    shp = [1, 2, 3, 8]
    m = helper.make_model(
        helper.make_graph(
            [node], "kv_cache",
            [vi(n, TensorProto.FLOAT, shp) for n in ("q", "k", "v", "pk", "pv")],
            [vi("y", TensorProto.FLOAT, shp),
             vi("present_k", TensorProto.FLOAT, [1, 2, 6, 8]),
             vi("present_v", TensorProto.FLOAT, [1, 2, 6, 8])]),
        opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    with open(os.path.join(HERE, "attention_kv_cache.onnx"), "wb") as f:
        f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
