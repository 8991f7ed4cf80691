#!/usr/bin/env python3
"""solder vs PyTorch on the GPU machine: ResNet-50 and BERT-base, fp32.

Exports the models (random weights) to ONNX, then for each (model, batch):
  - `solder bench --json`: fused (the default) and unfused (--no-fusion),
    both replayed as CUDA graphs;
  - PyTorch eager, torch.compile (default) and torch.compile
    (mode="reduce-overhead", CUDA graphs);
all on the same GPU in fp32 with TF32 off (torch matmul and cuDNN alike;
solder uses CUBLAS_COMPUTE_32F and CUDNN_FMA_MATH), median of timed runs
with CUDA events after warm-up. Prints one table with each latency's ratio
to torch.compile (default). Also checks solder's outputs against
`solder run --backend reference` on the same inputs (every batch, 1e-4 level),
and reports ResNet-50's first vs second compile time (disk kernel cache),
the arena vs naive intermediate memory, and the achieved FLOP rate against
the fp32 peak.

Usage (GPU machine, from the repo root):
  python3 bench/run_bench.py --solder build/tools/solder [--out DIR]
      [--models resnet50,bert,resnet50_bn] [--batches 1,32] [--iters 50]
      [--no-torch-compile] [--time-budget SECONDS]
torch.compile modes are skipped (and said so) once --time-budget seconds
have passed, so the whole run stays bounded.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------- models ---

def make_resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None).eval()


class BertWrapper(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids,
                          attention_mask=attention_mask).last_hidden_state


def make_bert():
    import transformers
    cfg = transformers.BertConfig()  # BERT-base: 12 layers, hidden 768
    cfg._attn_implementation = "eager"
    model = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    # The wrapper in eval mode too: a dynamo export of a module in training
    # mode keeps training Dropout (which solder refuses).
    return BertWrapper(model).eval()


def example_inputs(name, batch, device):
    g = torch.Generator().manual_seed(0)
    if name.startswith("resnet50"):
        return (torch.rand(batch, 3, 224, 224, generator=g).to(device),)
    ids = torch.randint(0, 30000, (batch, 128), generator=g).to(device)
    mask = torch.ones(batch, 128, dtype=torch.int64).to(device)
    return (ids, mask)


def input_names(name):
    return ["input"] if name.startswith("resnet50") else [
        "input_ids", "attention_mask"]


def export(name, model, batch, path):
    args = example_inputs(name, batch, "cpu")
    # resnet50_bn: the same network exported with its BatchNormalization
    # nodes kept (training=PRESERVE), so solder's batchnorm-folding must
    # reach the folded export's step count on its own.
    kw = {}
    if name == "resnet50_bn":
        kw["training"] = torch.onnx.TrainingMode.PRESERVE
        kw["do_constant_folding"] = False
    with torch.no_grad():
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                          input_names=input_names(name),
                          output_names=["output"], **kw)


# Multiply-adds count 2 FLOPs. ResNet-50 at 224x224: 4.09 GMACs per image.
# BERT-base at s128: 2 * 85.0M encoder weights * 128 tokens for the dense
# layers, plus the attention products 2 * 2 * 128^2 * 768 per layer x 12.
FLOPS_PER_SAMPLE = {
    "resnet50": 2 * 4.09e9,
    "resnet50_bn": 2 * 4.09e9,
    "bert": 2 * 85.0e6 * 128 + 12 * 4 * 128 * 128 * 768,
}
# H100/H200 SXM fp32 FMA peak without tensor cores (TF32 is off).
FP32_PEAK_TFLOPS = 67.0
# H100 SXM dense tensor-core peaks (fp16/bf16 with fp32 accumulation).
PEAK_TFLOPS = {"fp32": FP32_PEAK_TFLOPS, "fp16": 989.0, "bf16": 989.0}
# Output bound against the fp32 reference, per precision (precision issue).
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 3e-2}
TORCH_DTYPE = {"fp32": torch.float32, "fp16": torch.float16,
               "bf16": torch.bfloat16}


# ---------------------------------------------------------------- timing ---

def time_torch(fn, args, iters, warmup):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def run(cmd, timeout=600, quiet=False):
    if not quiet:
        log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed (rc {p.returncode}):\n"
                           f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def solder_bench(solder, model, iters, graph, cache, fusion=True,
                 precision="fp32", layout="auto", extra=()):
    cmd = [solder, "bench", model, "--json", "--iters", str(iters),
           "--warmup", "5", "--cache-dir", cache, "--precision", precision,
           "--layout", layout] + list(extra)
    if not graph:
        cmd.append("--no-cuda-graph")
    if not fusion:
        cmd.append("--no-fusion")
    return json.loads(run(cmd).strip().splitlines()[-1])


def input_flags(ins):
    """`--input name=path` for each input `solder run --save-inputs` wrote
    into the folder ins."""
    flags = []
    for f in sorted(os.listdir(ins)):
        flags += ["--input", f"{f[:-4]}={os.path.join(ins, f)}"]
    return flags


def max_rel_err(ref, out):
    """max |out - ref| / max |ref| over the outputs `solder run
    --output-dir` wrote into the folders ref and out (the worst output)."""
    worst = 0.0
    for f in sorted(os.listdir(ref)):
        r = np.load(os.path.join(ref, f)).astype(np.float64)
        g = np.load(os.path.join(out, f)).astype(np.float64)
        worst = max(worst, float(np.abs(g - r).max() /
                                 max(np.abs(r).max(), 1e-30)))
    return worst


def solder_check(solder, model, workdir, name, precision="fp32", extra=()):
    """solder cuda (at precision) vs the fp32 reference on the same random
    inputs: max rel error."""
    ins = os.path.join(workdir, "in")
    ref = os.path.join(workdir, "ref")
    gpu = os.path.join(workdir, "gpu")
    run([solder, "run", model, "--random-inputs", "--backend", "reference",
         "--save-inputs", ins, "--output-dir", ref], timeout=900)
    run([solder, "run", model, "--backend", "cuda", "--output-dir", gpu,
         "--precision", precision] + list(extra) + input_flags(ins))
    return max_rel_err(ref, gpu)


def checked(solder, model, workdir, name, precision, extra):
    """solder_check's error, and it with its verdict for a note."""
    err = solder_check(solder, model, workdir, name, precision, extra)
    ok = "ok" if err <= TOLERANCE[precision] else "FAIL"
    return err, f"max rel err {err:.3g} ({ok})"


# ------------------------------------------------------------------ main ---

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--out", default=None)
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--torch-iters", type=int, default=50)
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--no-compile-time", action="store_true")
    ap.add_argument("--compare", action="store_true",
                    help="also run `solder compare` on each batch-1 model")
    ap.add_argument("--no-torch", action="store_true",
                    help="solder only (e.g. the BatchNorm-kept export)")
    ap.add_argument("--profile", action="store_true",
                    help="also run `solder profile` (per-step times, "
                         "library vs generated-kernel share; traces in "
                         "--out)")
    ap.add_argument("--layout", default="auto",
                    help="solder's --layout for convolutions (auto: NHWC "
                         "for fp16/bf16)")
    ap.add_argument("--precision", default="fp32",
                    choices=["fp32", "fp16", "bf16"],
                    help="solder's --precision; PyTorch runs the model in "
                         "the same dtype")
    ap.add_argument("--fuse-attention", action="store_true",
                    help="also time (and check) solder with --fuse-attention "
                         "(the 'solder +attention' column)")
    ap.add_argument("--gemm-variants", action="store_true",
                    help="also bench --gemm-kernels generated and wgmma "
                    "and a plan "
                    "compiled with --tune (generated GEMM or library per "
                    "matmul group, timed), and check the generated one")
    ap.add_argument("--attention-variants", action="store_true",
                    help="also bench --no-fuse-attention (attention "
                    "unfused), --attention-kernels cudnn (cuDNN's "
                    "fused attention for every attention group) and a plan "
                    "compiled with --tune (cuDNN or the generated kernel per "
                    "attention group, timed), and check the cuDNN one")
    ap.add_argument("--dependent-launch", action="store_true",
                    help="also bench (and check) --dependent-launch: "
                    "generated kernels launched as programmatic dependents")
    ap.add_argument("--max-autotune", action="store_true",
                    help="also time torch.compile(mode='max-autotune')")
    ap.add_argument("--time-budget", type=float, default=420.0,
                    help="skip torch.compile modes after this many seconds")
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False  # solder uses CUDNN_FMA_MATH
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="solder-bench-")
    cache = os.path.join(work, "kernel-cache")
    solder = os.path.abspath(a.solder)
    rows, notes = [], []

    for name in a.models.split(","):
        model = make_resnet50() if name.startswith("resnet50") else make_bert()
        for batch in [int(b) for b in a.batches.split(",")]:
            tag = f"{name} b{batch}" + (" s128" if name == "bert" else "")
            path = os.path.join(work, f"{name}_b{batch}.onnx")
            log(f"exporting {tag}")
            export(name, model, batch, path)
            row = {"model": tag}

            if name == "resnet50" and batch == 1 and not a.no_compile_time:
                # First compile with an empty kernel cache, then again.
                for label in ("first", "second"):
                    t = time.time()
                    try:
                        out = run([solder, "compile", path, "-o",
                                   os.path.join(work, "r50.plan"),
                                   "--cache-dir", cache])
                    except RuntimeError as e:
                        out = str(e)
                    row[f"compile_{label}_s"] = time.time() - t
                    log(out.strip())
                notes.append(
                    f"ResNet-50 compile: first {row['compile_first_s']:.2f} s,"
                    f" second (disk cache) {row['compile_second_s']:.2f} s")

            try:
                g = solder_bench(solder, path, a.iters, True, cache,
                                 precision=a.precision, layout=a.layout)
                uf = solder_bench(solder, path, a.iters, True, cache,
                                  fusion=False, precision=a.precision,
                                  layout=a.layout)
                row["solder_graph"] = g["median_ms"]
                row["solder_unfused"] = uf["median_ms"]
                if a.fuse_attention:
                    fa = solder_bench(solder, path, a.iters, True, cache,
                                      precision=a.precision, layout=a.layout,
                                      extra=["--fuse-attention"])
                    row["solder_attention"] = fa["median_ms"]
                    row["launches_attention"] = fa["steps_per_run"]
                if a.gemm_variants:
                    gen = solder_bench(solder, path, a.iters, True, cache,
                                       precision=a.precision, layout=a.layout,
                                       extra=["--gemm-kernels", "generated"])
                    wg = solder_bench(solder, path, a.iters, True, cache,
                                      precision=a.precision, layout=a.layout,
                                      extra=["--gemm-kernels", "wgmma"])
                    plan = os.path.join(work, f"{name}_b{batch}_tuned.plan")
                    out = run([solder, "compile", path, "-o", plan, "--tune",
                               "--cache-dir", cache, "--precision",
                               a.precision, "--fusion-report"], timeout=900)
                    # A plan fixes its precision and layout: none given.
                    tuned = solder_bench(solder, plan, a.iters, True, cache)
                    chosen = out.count("generated tensor-core GEMM")
                    groups = out.count("tuned: generated GEMM")
                    row["solder_generated"] = gen["median_ms"]
                    row["solder_wgmma"] = wg["median_ms"]
                    row["solder_tuned"] = tuned["median_ms"]
                    notes.append(
                        f"{tag}: --gemm-kernels library (the fused column) "
                        f"{g['median_ms']:.3f} ms {g['steps_per_run']} "
                        f"steps; generated {gen['median_ms']:.3f} ms "
                        f"{gen['steps_per_run']} steps; wgmma "
                        f"{wg['median_ms']:.3f} ms {wg['steps_per_run']} "
                        f"steps; compile --tune "
                        f"{tuned['median_ms']:.3f} ms "
                        f"{tuned['steps_per_run']} steps ({chosen} of "
                        f"{groups} timed matmul groups took the generated "
                        "GEMM)")
                    for l in out.splitlines():
                        if "tuned: generated GEMM" in l:
                            log(l[:220])
                    for loop in ([] if a.no_check else
                                 ["generated", "wgmma"]):
                        err, verdict = checked(
                            solder, path,
                            os.path.join(work, f"check_{name}_{loop}"), name,
                            a.precision, ["--gemm-kernels", loop])
                        row[f"max_rel_err_{loop}"] = err
                        notes.append(f"{tag}: --gemm-kernels {loop} vs fp32 "
                                     f"reference {verdict}")
                if a.attention_variants:
                    # Attention left unfused: the plan before issue 10.
                    noattn = solder_bench(solder, path, a.iters, True, cache,
                                          precision=a.precision,
                                          layout=a.layout,
                                          extra=["--no-fuse-attention"])
                    row["solder_attention_unfused"] = noattn["median_ms"]
                    dnn = solder_bench(solder, path, a.iters, True, cache,
                                       precision=a.precision, layout=a.layout,
                                       extra=["--attention-kernels", "cudnn"])
                    plan = os.path.join(work, f"{name}_b{batch}_atuned.plan")
                    out = run([solder, "compile", path, "-o", plan, "--tune",
                               "--cache-dir", cache, "--precision",
                               a.precision, "--fusion-report"], timeout=900)
                    tuned = solder_bench(solder, plan, a.iters, True, cache)
                    timed = [l for l in out.splitlines()
                             if "tuned: cuDNN" in l or "not cuDNN" in l]
                    chosen = sum("cuDNN fused attention" in l for l in timed)
                    row["solder_cudnn_attention"] = dnn["median_ms"]
                    row["solder_tuned"] = tuned["median_ms"]
                    notes.append(
                        f"{tag}: attention unfused (--no-fuse-attention) "
                        f"{noattn['median_ms']:.3f} ms "
                        f"{noattn['steps_per_run']} steps; "
                        f"attention generated (the fused column) "
                        f"{g['median_ms']:.3f} ms; --attention-kernels cudnn "
                        f"{dnn['median_ms']:.3f} ms "
                        f"{dnn['steps_per_run']} steps; compile --tune "
                        f"{tuned['median_ms']:.3f} ms ({chosen} of "
                        f"{len(timed)} attention groups took cuDNN)")
                    for l in timed[:3]:
                        log(l[:260])
                    if not a.no_check:
                        err, verdict = checked(
                            solder, path, os.path.join(work, f"check_{name}_dnn"),
                            name, a.precision,
                            ["--attention-kernels", "cudnn"])
                        row["max_rel_err_cudnn_attention"] = err
                        notes.append(f"{tag}: --attention-kernels cudnn vs "
                                     f"fp32 reference {verdict}")
                if a.dependent_launch:
                    dl = solder_bench(solder, path, a.iters, True, cache,
                                      precision=a.precision, layout=a.layout,
                                      extra=["--dependent-launch"])
                    row["solder_dependent_launch"] = dl["median_ms"]
                    note = (f"{tag}: --dependent-launch {dl['median_ms']:.3f} "
                            f"ms against {g['median_ms']:.3f} ms without")
                    if not a.no_check:
                        err, verdict = checked(
                            solder, path, os.path.join(work, f"check_{name}_dl"),
                            name, a.precision, ["--dependent-launch"])
                        row["max_rel_err_dependent_launch"] = err
                        note += f"; vs fp32 reference {verdict}"
                    notes.append(note)
                row["launches"] = g["steps_per_run"]
                row["launches_unfused"] = uf["steps_per_run"]
                notes.append(
                    f"{tag}: arena {g['arena_bytes'] / 2**20:.1f} MiB vs "
                    f"naive {g['naive_arena_bytes'] / 2**20:.1f} MiB; "
                    f"{g['steps_per_run']} steps/run ({g['kernels']} kernels,"
                    f" {g['library_calls']} library calls); p90 "
                    f"{g['p90_ms']:.3f} p99 {g['p99_ms']:.3f} ms")
                flops = FLOPS_PER_SAMPLE[name] * batch
                tflops = flops / (g["median_ms"] * 1e-3) / 1e12
                notes.append(
                    f"{tag}: {flops / 1e9:.0f} GFLOP per run -> "
                    f"{tflops:.1f} TFLOP/s with the graph, "
                    f"{100 * tflops / PEAK_TFLOPS[a.precision]:.0f}% of the "
                    f"{PEAK_TFLOPS[a.precision]:.0f} TFLOP/s "
                    + ("fp32 (non-tensor-core)" if a.precision == "fp32"
                       else f"{a.precision} dense tensor-core") + " peak")
                if a.compare and batch == 1:
                    # Per-group check of the fused plan (solder compare).
                    try:
                        out = run([solder, "compare", path, "--random-inputs",
                                   "--cache-dir", cache, "--precision",
                                   a.precision], timeout=900)
                        row["compare"] = "pass"
                    except RuntimeError as e:
                        out = str(e)
                        row["compare"] = "FAIL"
                    # One line per group: "ID KIND MAXABS REL PASS|FAIL ..."
                    cmp_rows = [l.split() for l in out.splitlines()]
                    summary = [r for r in cmp_rows if len(r) > 4 and
                               r[0].isdigit() and r[4] in ("PASS", "FAIL")]
                    worst_rel = max((float(r[3]) for r in summary),
                                    default=0.0)
                    worst = [l for l in out.splitlines() if "first failing"
                             in l or "checked groups" in l or
                             (l.startswith("output ") and "vs" in l)]
                    worst.append(f"worst group err/max|ref| {worst_rel:.2e}")
                    notes.append(f"{tag}: solder compare {row['compare']}: "
                                 f"{len(summary)} group lines; "
                                 + "; ".join(worst[-4:]))
                    log(out[-3000:])
                if not a.no_check:
                    err = solder_check(solder, path,
                                       os.path.join(work, f"check_{name}"),
                                       name, a.precision)
                    row["max_rel_err"] = err
                    tol = TOLERANCE[a.precision]
                    notes.append(
                        f"{tag}: solder {a.precision} cuda vs fp32 reference "
                        f"max rel err {err:.3g} "
                        f"({'ok' if err <= tol else 'FAIL'}, bound {tol:g})")
                    if a.fuse_attention:
                        err = solder_check(
                            solder, path,
                            os.path.join(work, f"check_{name}_attention"),
                            name, a.precision, ["--fuse-attention"])
                        row["max_rel_err_attention"] = err
                        notes.append(
                            f"{tag}: with --fuse-attention max rel err "
                            f"{err:.3g} ({'ok' if err <= tol else 'FAIL'})")
                if a.profile:
                    pdir = a.out or work
                    os.makedirs(pdir, exist_ok=True)
                    trace = os.path.join(pdir, f"trace-{name}_b{batch}.json")
                    # One tuned plan for profile and bench: cuDNN measures
                    # its algorithms per process and may pick others.
                    plan = os.path.join(pdir, f"{name}_b{batch}.plan")
                    run([solder, "compile", path, "-o", plan, "--tune",
                         "--cache-dir", cache, "--precision", a.precision,
                         "--layout", a.layout], timeout=900)
                    with open(os.path.join(
                            pdir, f"profile-{name}_b{batch}.txt"), "w") as f:
                        f.write(run([solder, "profile", plan, "--runs", "50",
                                     "--cache-dir", cache], timeout=900))
                    prof = json.loads(run(
                        [solder, "profile", plan, "--json", "--runs", "50",
                         "--trace", trace, "--cache-dir", cache],
                        timeout=900).strip().splitlines()[-1])
                    nograph = json.loads(run(
                        [solder, "bench", plan, "--json", "--no-cuda-graph",
                         "--iters", "50", "--cache-dir", cache],
                        timeout=900).strip().splitlines()[-1])
                    with open(trace) as f:
                        events = [e for e in json.load(f)["traceEvents"]
                                  if e.get("ph") == "X"]
                    notes.append(
                        f"{tag}: profile launched total "
                        f"{prof['launched_ms']:.3f} ms vs bench "
                        f"--no-cuda-graph {nograph['median_ms']:.3f} ms "
                        f"({prof['launched_ms'] / nograph['median_ms']:.3f}x);"
                        f" trace {len(events)} events for "
                        f"{len(prof['steps'])} steps")
                    kinds = {k["kind"]: k for k in prof["by_kind"]}
                    lib = sum(kinds[k]["pct"] for k in ("cudnn", "cublaslt")
                              if k in kinds)
                    top = sorted(prof["steps"], key=lambda x: -x["ms"])[:3]
                    row["profile_library_pct"] = lib
                    notes.append(
                        f"{tag}: solder profile: plan graph "
                        f"{prof['graph_ms']:.3f} ms, launched one by one "
                        f"{prof['launched_ms']:.3f} ms, step GPU times "
                        f"({prof['gpu_timing']}) "
                        f"{prof['gpu_steps_ms']:.3f} ms; library calls "
                        f"{lib:.0f}% of step time, generated kernels "
                        f"{kinds.get('kernel', {}).get('pct', 0):.0f}%; "
                        "slowest: " + "; ".join(
                            f"{x['label'][:60]} {x['ms']:.4f} ms "
                            f"(roofline {x.get('roofline_pct', 0):.0f}%)"
                            for x in top))
            except (RuntimeError, subprocess.TimeoutExpired, KeyError) as e:
                row["solder_error"] = str(e)[-600:]
                notes.append(f"{tag}: solder FAILED: {str(e)[-600:]}")
                log(f"solder failed on {tag}: {e}")

            if a.no_torch or name == "resnet50_bn":
                rows.append(row)
                log(json.dumps(row))
                continue
            dt = TORCH_DTYPE[a.precision]
            m = model.cuda().to(dt)
            args = tuple(x.to(dt) if x.is_floating_point() else x
                         for x in example_inputs(name, batch, "cuda"))
            row["eager"] = time_torch(m, args, a.torch_iters, 5)
            modes = ["default", "reduce-overhead"]
            if a.max_autotune:
                modes.append("max-autotune")
            for mode in modes:
                key = {"default": "compile", "reduce-overhead": "compile_ro",
                       "max-autotune": "compile_ma"}[mode]
                if a.no_torch_compile:
                    continue
                if time.time() - START > a.time_budget:
                    notes.append(f"{tag}: torch.compile {mode} skipped "
                                 "(--time-budget)")
                    continue
                torch._dynamo.reset()
                t = time.time()
                cm = torch.compile(m, mode=None if mode == "default" else mode)
                row[key] = time_torch(cm, args, a.torch_iters, 5)
                log(f"{tag}: torch.compile {mode} incl. compile "
                    f"{time.time() - t:.1f} s")
            model = model.cpu().float()
            rows.append(row)
            log(json.dumps(row))

    dev = torch.cuda.get_device_name()
    lines = [f"# solder vs PyTorch {torch.__version__} on {dev}, "
             f"{a.precision}, TF32 off, median ms", "",
             "| model | solder fused |"
             + (" solder +attention |" if a.fuse_attention else "")
             + " solder unfused | steps "
             + ("attention/" if a.fuse_attention else "") + "fused/unfused |"
             " eager | torch.compile | compile reduce-overhead |"
             + (" max-autotune |" if a.max_autotune else ""),
             "| --- | --- | --- | --- | --- | --- | --- |"
             + (" --- |" if a.fuse_attention else "")
             + (" --- |" if a.max_autotune else "")]

    def cell(row, key):
        v = row.get(key)
        if v is None:
            return "-"
        base = row.get("compile")
        ratio = f" ({v / base:.2f}x)" if base else ""
        return f"{v:.3f}{ratio}"

    for r in rows:
        steps = f"{r.get('launches', '-')}/{r.get('launches_unfused', '-')}"
        if a.fuse_attention:
            steps = f"{r.get('launches_attention', '-')}/" + steps
        lines.append(f"| {r['model']} | {cell(r, 'solder_graph')} | "
                     + (f"{cell(r, 'solder_attention')} | "
                        if a.fuse_attention else "")
                     + f"{cell(r, 'solder_unfused')} | {steps} | "
                     f"{cell(r, 'eager')} | {cell(r, 'compile')} | "
                     f"{cell(r, 'compile_ro')} |"
                     + (f" {cell(r, 'compile_ma')} |" if a.max_autotune
                        else ""))
    lines += ["", "(x) = ratio to torch.compile default; lower is faster;"
              " both solder columns replay one CUDA graph per run", ""]
    for r in rows:
        f, u = r.get("solder_graph"), r.get("solder_unfused")
        if f and u:
            notes.append(f"{r['model']}: fused is {u / f:.2f}x faster than "
                         "unfused")
    lines += ["- " + n for n in notes]
    text = "\n".join(lines)
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "bench.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(a.out, "bench.json"), "w") as f:
            json.dump(rows, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    bad = [r for r in rows
           if r.get("max_rel_err", 0) > TOLERANCE[a.precision]
           or r.get("max_rel_err_attention", 0) > TOLERANCE[a.precision]
           or r.get("max_rel_err_generated", 0) > TOLERANCE[a.precision]
           or "solder_error" in r
           or r.get("compare") == "FAIL"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
