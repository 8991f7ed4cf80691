"""Process-to-process repeatability of one tuned plan (precision issue).

Compiles MODEL with `solder compile --tune` (the library algorithms are
chosen once, on this GPU, and stored in the plan), then runs `solder bench`
on that plan in N separate processes and prints each median and the spread
(max/min - 1) of the medians. With --untuned the same is done for a plan
compiled without --tune (every process chooses its own cuDNN algorithms).

Usage (GPU machine): python3 bench/repeatability.py --solder build/tools/solder
    --model resnet50_b32.onnx [--runs 10] [--iters 100] [--precision fp32]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(solder, plan, iters):
    out = subprocess.run([solder, "bench", plan, "--json", "--iters",
                          str(iters), "--warmup", "10"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--model", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--untuned", action="store_true",
                    help="also measure a plan compiled without --tune")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="solder-repeat-")
    worst = 0.0
    for tuned in [True] + ([False] if a.untuned else []):
        plan = os.path.join(work, "tuned.plan" if tuned else "plain.plan")
        cmd = [a.solder, "compile", a.model, "-o", plan, "--precision",
               a.precision, "--cache-dir", os.path.join(work, "cache")]
        out = subprocess.run(cmd + (["--tune"] if tuned else []), check=True,
                             capture_output=True, text=True).stdout
        print(out.strip().splitlines()[-1])
        medians = [bench(a.solder, plan, a.iters) for _ in range(a.runs)]
        spread = max(medians) / min(medians) - 1
        label = "tuned" if tuned else "untuned"
        print(f"{label}: {a.runs} processes, medians (ms): "
              + " ".join(f"{m:.3f}" for m in medians))
        print(f"{label}: median of medians {statistics.median(medians):.3f} "
              f"ms, spread {100 * spread:.1f}% (max/min - 1)")
        if tuned:
            worst = spread
    return 0 if worst <= 0.03 else 1


if __name__ == "__main__":
    sys.exit(main())
