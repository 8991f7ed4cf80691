#!/usr/bin/env python3
"""GEMM micro-benchmark (issue 9): solder's generated tensor-core GEMM vs
cuBLASLt at the BERT-base shapes, fp16.

For each M (128 = batch 1, 4096 = batch 32 at sequence 128) and each
N x K of BERT-base's matmuls (768x768, 2304x768, 3072x768, 768x3072), two
ONNX models are timed with `solder bench` (median of --iters CUDA-event
timed graph replays; inputs and outputs fp16, --io-precision compute):

  gemm   y = x W + b                     (the product; cuBLASLt adds the
                                          bias in its epilogue for free)
  ln     y = LayerNorm(x W + b + r)      (N = 768: the transformer's
                                          output projections)

each as --gemm-kernels library (cuBLASLt; for ln with its BIAS epilogue
and the residual as C, then solder's fused residual/LayerNorm row
kernel) and --gemm-kernels generated (one generated kernel; for ln the
LayerNorm in its epilogue, the row statistics exchanged through global
memory among the blocks of a cooperative launch).
torch.matmul (cuBLAS) on the same fp16 operands is the outside reference.
FLOPs: 2 M N K; the peak is the H100 SXM's dense fp16 989 TFLOP/s.

Usage (on the GPU machine):
  python3 bench/gemm_bench.py --solder build/tools/solder [--iters 200]
  --offline: no GPU; exports the models and checks that each compiles
             (--arch sm_90) into one generated step.
"""
import argparse
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (its CUDA-event timing of torch calls)

SHAPES = [(768, 768), (2304, 768), (3072, 768), (768, 3072)]
PEAK_TFLOPS = 989.0


class Gemm(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.dense = torch.nn.Linear(k, n)

    def forward(self, x):
        return self.dense(x)


class GemmLayerNorm(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.dense = torch.nn.Linear(k, n)
        self.norm = torch.nn.LayerNorm(n, eps=1e-12)

    def forward(self, x, r):
        return self.norm(self.dense(x) + r)


def export(kind, m, n, k, path):
    model = Gemm(k, n) if kind == "gemm" else GemmLayerNorm(k, n)
    x = torch.randn(1, m, k)
    args = (x,) if kind == "gemm" else (x, torch.randn(1, m, n))
    names = ["x"] if kind == "gemm" else ["x", "r"]
    with torch.no_grad():
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                          input_names=names, output_names=["y"])


def run(cmd):
    """run_bench's runner (raises with the output on failure), quiet."""
    return run_bench.run(cmd, timeout=900, quiet=True)


def solder_ms(solder, path, gemm, iters, cache):
    out = run([solder, "bench", path, "--json", "--iters", str(iters),
               "--warmup", "20", "--precision", "fp16", "--io-precision",
               "compute", "--gemm-kernels", gemm, "--cache-dir", cache])
    r = json.loads(out.strip().splitlines()[-1])
    return r["median_ms"], r["steps_per_run"]


def torch_ms(m, n, k, iters):
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(k, n, device="cuda", dtype=torch.float16)
    return run_bench.time_torch(torch.matmul, (x, w), iters, 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--ms", default="128,4096")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--offline", action="store_true")
    ap.add_argument("--no-wgmma", action="store_true",
                    help="skip the --gemm-kernels wgmma column (Hopper's "
                         "wgmma main loop)")
    a = ap.parse_args()
    solder = os.path.abspath(a.solder)
    work = tempfile.mkdtemp(prefix="solder-gemm-")
    cache = os.path.join(work, "cache")
    gpu = "offline (no GPU)" if a.offline else torch.cuda.get_device_name()
    print(f"GEMM, fp16, {gpu}")
    loops = ["generated"] + ([] if a.no_wgmma else ["wgmma"])
    heads = "".join(f" {g} ms | {g} / library speed |" for g in loops)
    print(f"| kind | M x N x K | library ms |{heads} torch.matmul ms | "
          f"best generated TFLOP/s (% of peak) |")
    print("| --- | --- | --- |" + " --- | --- |" * len(loops) + " --- | --- |")
    failed = False
    for m in (int(x) for x in a.ms.split(",")):
        for n, k in SHAPES:
            for kind in ("gemm", "ln"):
                if kind == "ln" and n != 768:
                    continue
                path = os.path.join(work, f"{kind}_{m}x{n}x{k}.onnx")
                export(kind, m, n, k, path)
                shape = f"{m} x {n} x {k}"
                if a.offline:
                    out = run([solder, "compile", path, "-o", path + ".plan",
                               "--arch", "sm_90", "--precision", "fp16",
                               "--io-precision", "compute", "--gemm-kernels",
                               "generated", "--fusion-report"])
                    ok = (" 1 steps per run" in out and
                          "generated tensor-core GEMM" in out)
                    failed |= not ok
                    print(f"| {kind} | {shape} | | compiles: "
                          f"{'one step' if ok else 'NOT one step'} | | | |")
                    continue
                lib, lsteps = solder_ms(solder, path, "library", a.iters,
                                        cache)
                cols, best = "", None
                for g in loops:
                    try:
                        ms, steps = solder_ms(solder, path, g, a.iters, cache)
                    except RuntimeError as e:  # a loop that fails: say so
                        failed = True
                        print(f"{g} failed on {shape}: {e}", file=sys.stderr)
                        cols += " failed | |"
                        continue
                    best = ms if best is None else min(best, ms)
                    cols += f" {ms:.4f} ({steps} step) | {lib / ms:.2f}x |"
                ref = torch_ms(m, n, k, a.iters) if kind == "gemm" else None
                tf = "" if best is None else \
                    f"{2.0 * m * n * k / best / 1e9:.0f} " \
                    f"({100 * 2.0 * m * n * k / best / 1e9 / PEAK_TFLOPS:.0f}%)"
                print(f"| {kind} | {shape} | {lib:.4f} ({lsteps} steps) |"
                      f"{cols} {'' if ref is None else f'{ref:.4f}'} | "
                      f"{tf} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
