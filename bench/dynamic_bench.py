#!/usr/bin/env python3
"""One dynamic BERT-base plan against static plans at the same shapes.

Exports BERT-base (random weights, legacy exporter) with dynamic [batch,
sequence] inputs, then runs `solder bench MODEL --shape
input_ids=1..32x8..512 --compare-static` at several shapes in one process:
for each shape, the dynamic model's first run (compiling that shape's
variant and capturing its graph), its steady median latency, a static plan
compiled for that shape timed the same way, and whether both gave
bit-identical outputs. Prints a markdown table naming the GPU.

Usage (GPU machine, from the repo root):
  python3 bench/dynamic_bench.py --solder build/tools/solder [--out DIR]
      [--precision fp16] [--shapes 1x128,32x128,...] [--iters 100]
"""
import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import make_bert  # noqa: E402

DEFAULT_SHAPES = "1x128,32x128,1x8,8x77,4x512,32x512,16x200,1x128"


def export_dynamic_bert(path):
    model = make_bert()
    ids = torch.randint(0, 30000, (2, 64))
    mask = torch.ones(2, 64, dtype=torch.int64)
    axes = {"input_ids": {0: "B", 1: "S"}, "attention_mask": {0: "B", 1: "S"}}
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), path, dynamo=False,
                          opset_version=17,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["output"], dynamic_axes=axes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solder", required=True)
    ap.add_argument("--out", default="/tmp/solder-dynamic-bench")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--range", default="1..32x8..512")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bert_dynamic.onnx")
    if not os.path.exists(path):
        export_dynamic_bert(path)
    cmd = [args.solder, "bench", path, "--shape",
           f"input_ids={args.range}", "--precision", args.precision,
           "--iters", str(args.iters), "--compare-static", "--json",
           "--cache-dir", os.path.join(args.out, "cache")]
    for s in args.shapes.split(","):
        cmd += ["--run-shape", f"input_ids={s}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr, sep="\n")
        sys.exit(1)
    res = json.loads(r.stdout)
    gpu = torch.cuda.get_device_name(0)
    print(f"BERT-base {args.precision}, one plan for input_ids "
          f"{args.range} on {gpu} (max shape compiled in "
          f"{res['compile_s']:.2f} s, {res['variants_compiled']} variants "
          f"compiled in all)\n")
    print("| shape (input_ids) | first run ms | dynamic median ms | static "
          "median ms | dynamic/static | outputs |")
    print("| --- | --- | --- | --- | --- | --- |")
    ok = True
    for row in res["shapes"]:
        shape = row["shape"].split(",")[0].split("=")[1]
        first = f"{row['first_run_ms']:.1f}" + (
            " (compiled)" if row["compiled_variant"] else " (kept)")
        same = row["outputs_identical"]
        ok &= same
        print(f"| {shape} | {first} | {row['median_ms']:.3f} | "
              f"{row['static_median_ms']:.3f} | "
              f"{row['dynamic_over_static']:.3f} | "
              f"{'identical' if same else 'DIFFER'} |")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
