#!/usr/bin/env python3
"""Cold vs cached `solder compile` time of ResNet-50 (issues 3 and 7).

Exports torchvision ResNet-50 (random weights, batch 1, opset 17) unless
--model is given, then times `solder compile MODEL -o PLAN` as separate
processes: once with an empty cache (cold), then --runs times with the
cache filled (warm), with and without --arch. Warm runs find the whole plan
in the plan cache (tools/PlanCache.h); the --no-plan-cache row finds only
the kernels in the kernel cache and writes the plan anew. Wall time of the
whole process, median of the warm runs. Last, `cp` of the plan file: what
writing the plan's bytes costs, the floor of a compile that writes them.
Every run writes a new plan file (as the
first one does; replacing an existing 100 MB file costs the kernel ~50 ms
of freeing its pages, which would burden only the warm runs). The model
file is read once beforehand so every run finds it in the page cache.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, plan, env):
    start = time.perf_counter()
    subprocess.run(cmd + ["-o", plan], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    os.remove(plan)  # untimed: the next run writes a new file too
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--model", default=None)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="solder-compile-time-")
    model = args.model
    if model is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import run_bench
        model = os.path.join(work, "resnet50.onnx")
        run_bench.export("resnet50", run_bench.make_resnet50(), 1, model)
    with open(model, "rb") as f:
        size = len(f.read())
    print(f"model {model}: {size / 2**20:.1f} MiB")

    env = dict(os.environ)
    plan = os.path.join(work, "model.plan")
    rows = []
    # The last row is the same compile with the fusion passes off: fusion's
    # own cost (passes, fused code generation) measured in the same run.
    for label, extra in [("default arch (queries the GPU)", []),
                         (f"--arch {args.arch}", ["--arch", args.arch]),
                         (f"--arch {args.arch} --no-plan-cache",
                          ["--arch", args.arch, "--no-plan-cache"]),
                         (f"--arch {args.arch} --no-fusion",
                          ["--arch", args.arch, "--no-fusion"])]:
        cache = os.path.join(work, "cache-" + str(len(rows)))
        cmd = [args.solder, "compile", model, "--cache-dir", cache] + extra
        cold = timed(cmd, plan, env)
        warm = [timed(cmd, plan, env) for _ in range(args.runs)]
        med = statistics.median(warm)
        rows.append((label, cold, med, min(warm), max(warm)))
        shutil.rmtree(cache, ignore_errors=True)
    print(f"{'solder compile':40} {'cold s':>8} {'warm s (median)':>16} "
          f"{'min':>7} {'max':>7} {'cold/warm':>10}")
    for label, cold, med, lo, hi in rows:
        print(f"{label:40} {cold:8.3f} {med:16.3f} {lo:7.3f} {hi:7.3f} "
              f"{cold / med:9.1f}x")
    start = time.perf_counter()
    subprocess.run([args.solder, "--version"], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"process start (solder --version): "
          f"{time.perf_counter() - start:.3f} s")
    # The floor of a compile that writes the plan's bytes (--no-plan-cache):
    # writing them at all. `cp`
    # of the plan file (a process, as each compile is; a new file each
    # time), median of --runs, from the page cache like the model.
    kept = os.path.join(work, "kept.plan")
    subprocess.run([args.solder, "compile", model, "--cache-dir",
                    os.path.join(work, "cache-floor"), "--arch", args.arch,
                    "-o", kept], check=True, stdout=subprocess.DEVNULL)
    copies = []
    for _ in range(args.runs):
        copy = os.path.join(work, "copy.plan")
        start = time.perf_counter()
        subprocess.run(["cp", kept, copy], check=True)
        copies.append(time.perf_counter() - start)
        os.remove(copy)
    print(f"cp of the {os.path.getsize(kept) / 2**20:.1f} MiB plan (the "
          f"floor of a compile that writes it): {statistics.median(copies):.3f} s "
          f"median")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
