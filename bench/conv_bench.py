#!/usr/bin/env python3
"""Convolution groups: cuDNN's fused call vs cuDNN operation graphs, fp16/bf16.

For ResNet-50 (torchvision, random weights, exported here) and a MobileNetV2
(../shared/models/mobilenetv2_050_opset17.onnx) at b1 and b32, compiles
three solder plans:
  fused   --tune --conv-epilogues fused: every convolution group runs as
          cudnnConvolutionBiasActivationForward plus, where its chain has
          more (a Clip, a residual after the activation), one generated
          kernel;
  tuned   --tune: each group that lowers to a cuDNN graph is timed both ways
          (and the graph with its first few engine configurations) and the
          faster kept;
  graph   --conv-epilogues graph: every group that lowers runs as a graph;
then benches the plans in turns (fused, tuned, graph, fused, ...; median of
--iters CUDA-event-timed replays each) and, for ResNet-50, PyTorch eager
(channels_last) and torch.compile(mode="reduce-overhead") in the same
precision. Prints a markdown table naming the GPU, with ResNet-50's FLOP
rate against the tensor-core peak and how many groups each plan runs as
graphs, and the tuning's compile time.

Usage (GPU machine, repo root):
  python3 bench/conv_bench.py --solder build/tools/solder
      [--models resnet50,mobilenetv2] [--batches 1,32] [--precisions fp16]
      [--rounds 2] [--iters 300] [--no-torch] [--check]
With --check, every plan's outputs on random inputs are compared with the
fp32 reference executor's (`solder run --backend reference`): max |gpu -
ref| / max |ref|, which must stay within 1e-2 (fp16) / 3e-2 (bf16).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (export, make_resnet50, time_torch, peaks)

MOBILENET = "mobilenetv2_050_opset17.onnx"
PLANS = {
    "fused": ["--tune", "--conv-epilogues", "fused"],
    "tuned": ["--tune"],
    "graph": ["--conv-epilogues", "graph"],
}


def sh(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc {p.returncode}):\n"
                           f"{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    return p.stdout


def compile_plan(solder, model, shape, precision, kind, out, cache):
    cmd = [solder, "compile", model, "-o", out, "--precision", precision,
           "--cache-dir", cache, "--fusion-report=json"] + PLANS[kind]
    if shape:
        cmd += ["--shape", shape]
    t0 = time.time()
    report = json.loads(sh(cmd))
    seconds = time.time() - t0
    runs = [g.get("runs_as", "") for g in report["groups"]]
    graphs = sum(r.startswith("cuDNN graph") for r in runs)
    timed = sum("cuDNN graph" in r and "fused call" in r for r in runs)
    engines = {}
    for r in runs:
        k = r.find("engine configuration ")
        if k >= 0 and r.startswith("cuDNN graph"):
            e = r[k + len("engine configuration "):].split(")")[0]
            engines[e] = engines.get(e, 0) + 1
    return {"compile_s": seconds, "graphs": graphs, "timed": timed,
            "engines": engines}


def bench_plan(solder, plan, iters):
    out = sh([solder, "bench", plan, "--json", "--iters", str(iters),
              "--warmup", "20"])
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def check_plans(solder, model, shape, plans, work):
    """Max relative error of each plan against the fp32 reference on the
    same random inputs."""
    ins, ref = os.path.join(work, "in"), os.path.join(work, "ref")
    for d in (ins, ref):
        subprocess.run(["rm", "-rf", d])
    cmd = [solder, "run", model, "--random-inputs", "--backend", "reference",
           "--save-inputs", ins, "--output-dir", ref]
    if shape:
        cmd += ["--shape", shape]
    sh(cmd, timeout=1800)
    inputs = run_bench.input_flags(ins)
    errs = {}
    for kind, plan in plans.items():
        out = os.path.join(work, "out_" + kind)
        subprocess.run(["rm", "-rf", out])
        sh([solder, "run", plan, "--backend", "cuda", "--output-dir", out] +
           inputs)
        errs[kind] = run_bench.max_rel_err(ref, out)
    return errs


def torch_times(batch, precision, iters):
    import torch
    model = run_bench.make_resnet50().cuda().to(
        run_bench.TORCH_DTYPE[precision]).to(memory_format=torch.channels_last)
    x = run_bench.example_inputs("resnet50", batch, "cuda")[0].to(
        run_bench.TORCH_DTYPE[precision]).to(memory_format=torch.channels_last)
    out = {"eager": run_bench.time_torch(model, (x,), iters, 10)}
    try:
        compiled = torch.compile(model, mode="reduce-overhead")
        out["reduce-overhead"] = run_bench.time_torch(compiled, (x,), iters,
                                                      10)
    except Exception as e:  # report, do not hide
        out["reduce-overhead"] = f"failed: {type(e).__name__}"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--models", default="resnet50,mobilenetv2")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--shared", default=os.environ.get(
        "SOLDER_SHARED_DIR", os.path.join(os.path.dirname(__file__), "..",
                                          "..", "shared")))
    args = ap.parse_args()
    solder = os.path.abspath(args.solder)
    work = tempfile.mkdtemp(prefix="conv_bench_")
    cache = os.path.join(work, "cache")
    gpu = sh(["nvidia-smi", "--query-gpu=name",
              "--format=csv,noheader"]).strip().splitlines()[0]
    rows = []
    for name in args.models.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            if name == "resnet50":
                model = os.path.join(work, f"r50_b{batch}.onnx")
                if not os.path.exists(model):
                    run_bench.export("resnet50", run_bench.make_resnet50(),
                                     batch, model)
                shape = None
            else:
                model = os.path.join(args.shared, "models", MOBILENET)
                shape = f"N={batch}"
            for prec in args.precisions.split(","):
                info, ms = {}, {k: [] for k in PLANS}
                for kind in PLANS:
                    plan = os.path.join(work, f"{name}{batch}{prec}{kind}.plan")
                    info[kind] = compile_plan(solder, model, shape, prec, kind,
                                              plan, cache)
                for _ in range(args.rounds):
                    for kind in PLANS:
                        plan = os.path.join(work,
                                            f"{name}{batch}{prec}{kind}.plan")
                        ms[kind].append(bench_plan(solder, plan, args.iters))
                row = {"model": name, "batch": batch, "precision": prec,
                       "info": info,
                       "ms": {k: statistics.median(v) for k, v in ms.items()},
                       "all_ms": ms}
                if args.check:
                    row["max_rel_err"] = check_plans(
                        solder, model, shape,
                        {k: os.path.join(work, f"{name}{batch}{prec}{k}.plan")
                         for k in PLANS}, work)
                if name == "resnet50" and not args.no_torch:
                    row["torch"] = torch_times(batch, prec, 100)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\n{gpu}, median of {args.rounds} rounds x {args.iters} replays "
          "(ms); graphs = groups run as cuDNN graphs; timed = groups tuning "
          "timed both ways\n")
    print("| model | batch | prec | fused | tuned | graph (all) | tuned vs "
          "fused | graphs kept / timed | tuning compile s | torch eager | "
          "torch reduce-overhead | tuned TFLOP/s |")
    print("| --- " * 12 + "|")
    for r in rows:
        m, i = r["ms"], r["info"]
        t = r.get("torch", {})
        tflops = ""
        if r["model"] == "resnet50":
            flops = run_bench.FLOPS_PER_SAMPLE["resnet50"] * r["batch"]
            tflops = "%.0f of %.0f" % (flops / (m["tuned"] * 1e-3) / 1e12,
                                       run_bench.PEAK_TFLOPS[r["precision"]])

        def fmt(x):
            return "%.3f" % x if isinstance(x, float) else (x or "")
        print(f"| {r['model']} | {r['batch']} | {r['precision']} | "
              f"{m['fused']:.4f} | {m['tuned']:.4f} | {m['graph']:.4f} | "
              f"{m['fused'] / m['tuned']:.3f}x | "
              f"{i['tuned']['graphs']} / {i['tuned']['timed']} | "
              f"{i['tuned']['compile_s']:.1f} | {fmt(t.get('eager'))} | "
              f"{fmt(t.get('reduce-overhead'))} | {tflops} |")
    if args.check:
        bound = run_bench.TOLERANCE
        print("\nmax rel err against the fp32 reference:")
        for r in rows:
            e = r["max_rel_err"]
            ok = all(v <= bound[r["precision"]] for v in e.values())
            print(f"  {r['model']} b{r['batch']} {r['precision']}: " +
                  ", ".join(f"{k} {v:.3g}" for k, v in e.items()) +
                  (" (ok)" if ok else " (FAIL)"))
    print("\nengine configurations kept:",
          {f"{r['model']} b{r['batch']} {r['precision']}":
           r["info"]["tuned"]["engines"] for r in rows})


if __name__ == "__main__":
    main()
