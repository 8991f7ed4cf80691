#!/usr/bin/env python3
"""Attention micro-benchmark (issue 10): solder's flash-attention kernel vs
PyTorch SDPA at BERT-base shapes (12 heads, head dim 64), fp16.

For each batch and sequence length, one ONNX model holding a single
BERT-style self-attention block as torch's legacy exporter writes it
(packed QKV input [B, S, 2304] split into heads, Q K^T, scale, additive
padding mask, Softmax, P V, heads merged) is timed with `solder bench`:

  solder fused     --fuse-attention: one generated kernel reading Q, K and V
                   straight out of the packed input
  solder cuDNN     --fuse-attention --attention-kernels cudnn: the same
                   attention group as one cuDNN fused-attention call
  solder unfused   the same model with --no-fuse-attention (batched
                   cuBLASLt matmuls and a fused softmax kernel)

against torch.nn.functional.scaled_dot_product_attention on [B, 12, S, 64]
tensors with the flash, memory-efficient, cuDNN and math backends (CUDA events,
median of --iters runs after warm-up). Both sides run in fp16 with fp32
accumulation; solder's model inputs and outputs are fp16 too
(--io-precision compute), so no cast kernels are timed. FLOPs count the
two products: 4 * B * H * S^2 * D.

Usage (on the GPU machine):
  python3 bench/attention_bench.py --solder build/tools/solder \
      [--shapes 1x128,32x128,1x512,32x512] [--iters 100]
  --offline: no GPU; exports the models and checks that each compiles
             (--arch sm_90) into one attention step.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (its CUDA-event timing of torch calls)

HEADS, HEAD_DIM = 12, 64
HIDDEN = HEADS * HEAD_DIM


class Block(torch.nn.Module):
    """Self-attention on a packed QKV tensor, written as BERT does."""

    def forward(self, qkv, mask):
        b, s, _ = qkv.shape
        q, k, v = qkv.split(HIDDEN, dim=2)

        def heads(x):
            return x.view(b, s, HEADS, HEAD_DIM).permute(0, 2, 1, 3)

        scores = torch.matmul(heads(q), heads(k).transpose(-1, -2))
        scores = scores / (HEAD_DIM ** 0.5) + mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, heads(v)).permute(0, 2, 1, 3)
        return ctx.reshape(b, s, HIDDEN)


def export(batch, seq, path):
    qkv = torch.randn(batch, seq, 3 * HIDDEN)
    mask = torch.zeros(batch, 1, 1, seq)
    with torch.no_grad():
        torch.onnx.export(Block(), (qkv, mask), path, dynamo=False,
                          opset_version=17, input_names=["qkv", "mask"],
                          output_names=["out"])


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc {p.returncode}):\n"
                           f"{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    return p.stdout + p.stderr


def solder_ms(solder, path, fused, iters, cache, extra=()):
    cmd = [solder, "bench", path, "--json", "--iters", str(iters),
           "--warmup", "10", "--precision", "fp16", "--io-precision",
           "compute", "--cache-dir", cache]
    # Unfused must say so: the automatic mode fuses short or large cases.
    cmd.append("--fuse-attention" if fused else "--no-fuse-attention")
    cmd += list(extra)
    out = run(cmd)
    r = json.loads(out.strip().splitlines()[-1])
    return r["median_ms"], r["steps_per_run"]


def torch_ms(batch, seq, backend, iters):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (torch.randn(batch, HEADS, seq, HEAD_DIM, device="cuda",
                           dtype=torch.float16) for _ in range(3))
    kind = {"flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION,
            "math": SDPBackend.MATH}[backend]
    with sdpa_kernel(kind):
        return run_bench.time_torch(
            torch.nn.functional.scaled_dot_product_attention, (q, k, v),
            iters, 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--shapes", default="1x128,32x128,1x512,32x512")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--offline", action="store_true")
    a = ap.parse_args()
    solder = os.path.abspath(a.solder)
    work = tempfile.mkdtemp(prefix="solder-attention-")
    cache = os.path.join(work, "cache")
    gpu = "offline (no GPU)" if a.offline else torch.cuda.get_device_name()
    print(f"attention, 12 heads x 64, fp16, {gpu}")
    print("| B x S | solder fused ms | solder cuDNN ms | solder unfused ms | "
          "SDPA flash ms | SDPA efficient ms | SDPA cuDNN ms | SDPA math ms | "
          "fused / cuDNN TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for shape in a.shapes.split(","):
        batch, seq = (int(x) for x in shape.split("x"))
        path = os.path.join(work, f"attn_{batch}x{seq}.onnx")
        export(batch, seq, path)
        if a.offline:
            n = []
            for kernels in ("generated", "cudnn"):
                out = run([solder, "compile", path, "-o", path + ".plan",
                           "--arch", "sm_90", "--precision", "fp16",
                           "--io-precision", "compute", "--fuse-attention",
                           "--attention-kernels", kernels])
                steps = re.search(r"(\d+) steps per run", out)
                n.append(int(steps.group(1)) if steps else -1)
            print(f"| {batch} x {seq} | compiles, {n[0]} step(s) | "
                  f"compiles, {n[1]} step(s) | | | | | | |")
            failed |= n != [1, 1]
            continue
        fused, fsteps = solder_ms(solder, path, True, a.iters, cache)
        dnn, dsteps = solder_ms(solder, path, True, a.iters, cache,
                                ["--attention-kernels", "cudnn"])
        unfused, usteps = solder_ms(solder, path, False, a.iters, cache)
        t = {}
        for b in ("flash", "efficient", "cudnn", "math"):
            try:
                t[b] = f"{torch_ms(batch, seq, b, a.iters):.4f}"
            except RuntimeError as e:  # a backend that refuses the shape
                t[b] = "n/a (" + str(e).splitlines()[0][:40] + ")"
        flops = 4.0 * batch * HEADS * seq * seq * HEAD_DIM
        print(f"| {batch} x {seq} | {fused:.4f} ({fsteps} step) | "
              f"{dnn:.4f} ({dsteps} step) | "
              f"{unfused:.4f} ({usteps} steps) | {t['flash']} | "
              f"{t['efficient']} | {t['cudnn']} | {t['math']} | "
              f"{flops / fused / 1e9:.1f} / {flops / dnn / 1e9:.1f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
