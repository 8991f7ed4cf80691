#!/usr/bin/env python3
"""Attention numerics on real exports (issue 10, acceptance 1): BERT-base
(random weights, legacy export with dynamic batch and sequence) compared
group by group against the reference executor with `solder compare`, at odd
sequence lengths and with padding masks that pad half of one sequence and
the whole of another.

For each sequence length S and each --attention-kernels value, the model
is run with batch 3: sequence 0 unpadded, sequence 1 padded after S/2
tokens, sequence 2 all padding (the mask's -3.4e38 then swamps every score,
so its rows attend uniformly, as the unfused softmax does). `solder compare`
checks every fused group on the GPU's own operands and the final output;
the table gives its verdict, the worst group error and how many attention
groups the plan has.

Usage (on the GPU machine):
  python3 bench/attention_check.py --solder build/tools/solder \\
      [--lengths 1,7,77,129,384,512] [--precisions fp16,bf16] \\
      [--kernels generated,cudnn]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (BERT-base as the benchmarks build it)


def export_dynamic(path):
    model = run_bench.make_bert()
    ids = torch.randint(0, 30522, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    axes = {n: {0: "B", 1: "S"} for n in ("input_ids", "attention_mask")}
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), path, dynamo=False,
                          opset_version=17,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["output"], dynamic_axes=axes)


def inputs(work, seq):
    rng = np.random.default_rng(seq)
    ids = rng.integers(0, 30522, (3, seq), dtype=np.int64)
    mask = np.ones((3, seq), dtype=np.int64)
    mask[1, max(1, seq // 2):] = 0
    mask[2, :] = 0
    paths = []
    for name, value in (("input_ids", ids), ("attention_mask", mask)):
        p = os.path.join(work, f"{name}_{seq}.npy")
        np.save(p, value)
        paths += ["--input", f"{name}={p}"]
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--lengths", default="1,7,77,129,384,512")
    ap.add_argument("--precisions", default="fp16")
    ap.add_argument("--kernels", default="generated,cudnn")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="solder-attention-check-")
    model = os.path.join(work, "bert_dynamic.onnx")
    export_dynamic(model)
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "?"
    print(f"BERT-base legacy export, batch 3 (one sequence half padded, one "
          f"all padding), {gpu}")
    print("| S | precision | attention kernels | verdict | worst group "
          "(abs / rel err) | output rel err | attention groups (cuDNN) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for seq in (int(s) for s in a.lengths.split(",")):
        feeds = inputs(work, seq)
        for prec in a.precisions.split(","):
            for kernels in a.kernels.split(","):
                out = os.path.join(work, f"c_{seq}_{prec}_{kernels}.json")
                cmd = [a.solder, "compare", model, "--precision", prec,
                       "--fuse-attention", "--attention-kernels", kernels,
                       "--shape", f"B=3", "--shape", f"S={seq}",
                       "--json", out, "--quiet"] + feeds
                p = subprocess.run(cmd, capture_output=True, text=True,
                                   timeout=900)
                verdict = "pass" if p.returncode == 0 else (
                    f"FAIL (rc {p.returncode})")
                failed |= p.returncode != 0
                worst, output, attn, dnn = "?", "?", 0, 0
                try:
                    r = json.load(open(out))
                    groups = r.get("groups", [])
                    g = max(groups, key=lambda x: x.get("max_rel_err", 0))
                    worst = (f"{g.get('max_abs_err', 0):.3g} / "
                             f"{g.get('max_rel_err', 0):.3g}")
                    attn = sum(x.get("kind") == "attention" for x in groups)
                    dnn = sum("cuDNN" in x.get("runs_as", "")
                              for x in groups if x.get("kind") == "attention")
                    outs = r.get("outputs", [])
                    output = " ".join(
                        f"{o.get('max_rel_err', 0):.3g}" for o in outs)
                except (OSError, ValueError) as e:
                    worst = f"no json ({e}); {p.stderr[-200:]}"
                print(f"| {seq} | {prec} | {kernels} | {verdict} | {worst} | "
                      f"{output} | {attn} ({dnn}) |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
