#!/usr/bin/env python3
"""The model zoo of issue 11: exports popular architectures with random
weights (torchvision classification and segmentation, transformers encoders
and decoders, each with the legacy and the dynamo exporter) and checks
solder on each:

  ops        the ONNX ops of the export, and those solder does not support
  ref vs ort solder's CPU reference executor against onnxruntime (CPU),
             max|out-ref|/max|ref| over all outputs
  plan       `solder compile --arch sm_90` builds a GPU plan (no GPU needed):
             every shape static, every kernel generated and compiled
  gpu vs ref `solder compare` on the GPU (with --gpu): the fused GPU
             outputs against the reference, group by group
  gpu ms     `solder bench` median latency at the exported batch (--gpu),
             measured after every check, one model at a time
  steps      fused/unfused plan steps (from the plan build)

Usage:
  python3 bench/zoo.py --solder build/tools/solder [--models a,b] \
      [--exporters legacy,dynamo] [--out zoo-out] [--markdown table.md] \
      [--fuse-attention] [--reuse] [--gpu] [--jobs N]

Needs torch, torchvision, transformers, onnx, onnxruntime. Weights are
random (nothing is downloaded); transformers models use small configs
(2 layers) so the whole zoo exports and runs on a CPU in minutes.
--jobs N checks N exports at once (export, onnxruntime, reference, plans,
GPU comparison); the latencies are measured afterwards, alone.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
import traceback

import numpy as np


def tv(name, shape=(1, 3, 224, 224), **kw):
    def make():
        import torchvision

        m = getattr(torchvision.models, name)(weights=None, **kw)
        return m.eval(), {"input": np.random.rand(*shape).astype(np.float32)}

    return make


def tv_seg(name):
    def make():
        import torch
        import torchvision

        m = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None)

        class Out(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        return Out(m).eval(), {
            "input": np.random.rand(1, 3, 224, 224).astype(np.float32)}

    return make


def hf(kind, causal=False, seq=16, **cfg):
    """A transformers model of small size; inputs input_ids (+mask)."""

    def make():
        import torch
        import transformers

        config = getattr(transformers, kind + "Config")(**cfg)
        config._attn_implementation = "eager"
        cls = {
            "T5": "T5EncoderModel",
            "Whisper": "WhisperModel",
        }.get(kind, kind + "Model")
        model = getattr(transformers, cls)(config).eval()
        vocab = getattr(config, "vocab_size", 100)
        ids = np.random.randint(0, min(vocab, 1000), (1, seq)).astype(np.int64)
        mask = np.ones((1, seq), np.int64)
        mask[0, seq - 3:] = 0  # padding at the end

        if kind == "Whisper":
            enc = model.get_encoder()

            class W(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.enc = enc

                def forward(self, input_features):
                    return self.enc(input_features=input_features)[0]

            feats = np.random.rand(1, config.num_mel_bins,
                                   2 * config.max_source_positions).astype(
                                       np.float32)
            return W().eval(), {"input_features": feats}

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, input_ids, attention_mask):
                out = self.m(input_ids=input_ids, attention_mask=attention_mask)
                return out[0]

        return M().eval(), {"input_ids": ids, "attention_mask": mask}

    return make


SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, vocab_size=1000)
MODELS = {
    # torchvision classification
    "resnet18": tv("resnet18"),
    "resnext50_32x4d": tv("resnext50_32x4d"),
    "wide_resnet50_2": tv("wide_resnet50_2"),
    "densenet121": tv("densenet121"),
    "mobilenet_v2": tv("mobilenet_v2"),
    "mobilenet_v3_small": tv("mobilenet_v3_small"),
    "efficientnet_b0": tv("efficientnet_b0"),
    "efficientnet_v2_s": tv("efficientnet_v2_s"),
    "regnet_y_400mf": tv("regnet_y_400mf"),
    "convnext_tiny": tv("convnext_tiny"),
    "vit_b_16": tv("vit_b_16"),
    "swin_t": tv("swin_t"),
    "maxvit_t": tv("maxvit_t"),
    "shufflenet_v2_x0_5": tv("shufflenet_v2_x0_5"),
    "squeezenet1_0": tv("squeezenet1_0"),
    "googlenet": tv("googlenet", aux_logits=False, init_weights=True),
    "inception_v3": tv("inception_v3", (1, 3, 299, 299), aux_logits=False,
                       init_weights=True),
    "mnasnet0_5": tv("mnasnet0_5"),
    # torchvision segmentation (Resize)
    "deeplabv3_mobilenet_v3_large": tv_seg("deeplabv3_mobilenet_v3_large"),
    "fcn_resnet50": tv_seg("fcn_resnet50"),
    "lraspp_mobilenet_v3_large": tv_seg("lraspp_mobilenet_v3_large"),
    # transformers, small configs
    "bert": hf("Bert", **SMALL),
    "roberta": hf("Roberta", **SMALL),
    "distilbert": hf("DistilBert", dim=64, n_layers=2, n_heads=4,
                     hidden_dim=128, vocab_size=1000),
    "albert": hf("Albert", embedding_size=32, **SMALL),
    "electra": hf("Electra", embedding_size=32, **SMALL),
    "deberta_v2": hf("DebertaV2", **SMALL),
    "xlm_roberta": hf("XLMRoberta", **SMALL),
    "gpt2": hf("GPT2", causal=True, n_embd=64, n_layer=2, n_head=4,
               vocab_size=1000),
    "opt": hf("OPT", causal=True, hidden_size=64, num_hidden_layers=2,
              num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64,
              vocab_size=1000),
    "llama": hf("Llama", causal=True, num_key_value_heads=2, **SMALL),
    "mistral": hf("Mistral", causal=True, num_key_value_heads=2, **SMALL),
    "t5_encoder": hf("T5", d_model=64, d_kv=16, d_ff=128, num_layers=2,
                     num_heads=4, vocab_size=1000),
    "whisper_encoder": hf("Whisper", d_model=64, encoder_layers=2,
                          encoder_attention_heads=4, decoder_layers=1,
                          decoder_attention_heads=4, encoder_ffn_dim=128,
                          decoder_ffn_dim=128, num_mel_bins=16,
                          max_source_positions=32, vocab_size=1000,
                          pad_token_id=0, bos_token_id=1, eos_token_id=2,
                          decoder_start_token_id=1),
}


def export(make, exporter, path, dynamic=False):
    import torch

    model, inputs = make()
    # Zero-initialised layers (ViT's head, some classifiers) would make
    # every output 0 and the comparison vacuous: give them random values.
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and not torch.any(p):
                p.normal_(0.0, 0.02)
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    names = list(inputs)
    # --dynamic: the batch dim (and a token sequence's length) symbolic, as
    # served models are exported; solder binds them with --shape.
    axes = {}
    if dynamic:
        # Batch 2: torch.export specialises a dim whose example size is 1.
        inputs = {k: np.concatenate([v, v]) for k, v in inputs.items()}
        args = tuple(torch.from_numpy(v) for v in inputs.values())
        for k, v in inputs.items():
            axes[k] = {0: "batch"}
            if v.dtype == np.int64 and v.ndim == 2:
                axes[k][1] = "sequence"
    with torch.no_grad():
        if exporter == "legacy":
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                              input_names=names, output_names=["output"],
                              dynamic_axes=axes or None)
        else:
            dyn = None
            if dynamic:
                # By position: forward's parameter names differ from the
                # ONNX input names (torchvision's is x).
                dyn = tuple({i: torch.export.Dim.AUTO for i in axes[k]}
                            for k in names)
            torch.onnx.export(model, args, path, dynamo=True,
                              input_names=names, output_names=["output"],
                              external_data=False, dynamic_shapes=dyn)
    return inputs


def run(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    err = [l for l in lines if l.startswith("error")]
    return (err or lines or [""])[0][:160]


def check(args, name, exporter):
    import onnx
    import onnxruntime as ort

    row = {"model": name, "exporter": exporter}
    d = os.path.join(args.out, f"{name}-{exporter}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    np.random.seed(0)
    t0 = time.time()
    m = None
    if args.reuse and os.path.exists(path):
        # The export and its inputs from an earlier run in the same --out.
        m = onnx.load(path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        names = [i.name for i in m.graph.input if i.name not in inits]
        if all(os.path.exists(os.path.join(d, n + ".npy")) for n in names):
            inputs = {n: np.load(os.path.join(d, n + ".npy")) for n in names}
        else:
            m = None
    if m is None:
        try:
            inputs = export(MODELS[name], exporter, path, args.dynamic)
        except Exception as e:  # the exporter's failure, not solder's
            row["status"] = "export failed: " + str(e).splitlines()[0][:140]
            return row
    row["export_s"] = round(time.time() - t0, 1)
    m = onnx.load(path, load_external_data=False)
    ops = sorted({n.op_type for n in m.graph.node})
    row["ops"] = len(ops)
    rc, out, err = run([args.solder, "inspect", path])
    unsup = re.search(r"unsupported ops: (.*)", out)
    row["unsupported"] = unsup.group(1).strip() if unsup else "?"
    if row["unsupported"] not in ("none", "?"):
        row["status"] = "unsupported ops"
        return row

    # onnxruntime's outputs and solder's reference on the same inputs.
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
    expect = sess.run(None, feed)
    outdir = os.path.join(d, "ref")
    cmd = [args.solder, "run", path, "--backend", "reference",
           "--output-dir", outdir, "--quiet"] + args.fusion_flags
    for i in sess.get_inputs():
        cmd += ["--input", f"{i.name}={os.path.join(d, i.name + '.npy')}"]
    rc, out, err = run(cmd)
    if rc != 0:
        row["status"] = "reference: " + first_line(err)
        return row
    worst = 0.0
    for o, e in zip(sess.get_outputs(), expect):
        fn = re.sub(r"[^A-Za-z0-9_.-]", "_", o.name)
        got = np.load(os.path.join(outdir, fn + ".npy"))
        if got.shape != e.shape:
            row["status"] = f"reference: output {o.name} shape {got.shape} vs {e.shape}"
            return row
        scale = max(float(np.max(np.abs(e))), 1e-30) if e.size else 1.0
        if e.size:
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - e))) / scale)
    row["ref_vs_ort"] = f"{worst:.1e}"
    if worst > 1e-4:
        row["status"] = "reference differs from onnxruntime"
        return row

    # A GPU plan (offline, sm_90): shapes static, kernels generated.
    shapes = []
    for i in sess.get_inputs():
        shapes += ["--shape", f"{i.name}=" + "x".join(str(s) for s in inputs[i.name].shape)]
    rc, out, err = run([args.solder, "compile", path, "-o", os.path.join(d, "m.plan"),
                        "--arch", "sm_90", "--fusion-report=json"] + shapes +
                       args.gpu_flags)
    if rc != 0:
        row["status"] = "plan: " + first_line(err)
        return row
    try:
        groups = json.loads(out).get("groups", [])
        row["groups"] = len(groups)
        attention = [g for g in groups if g.get("kind") == "attention"]
        row["attention"] = len(attention)
        # With --attention-kernels cudnn a group the static checks refuse
        # stays generated: say how many really run as cuDNN, and why not.
        cudnn = sum("cuDNN fused attention" in g.get("runs_as", "")
                    for g in attention)
        refused = [m.group(1) for g in attention
                   for m in [re.search(r"not cuDNN: ([^)]*)",
                                       g.get("runs_as", ""))] if m]
        if cudnn or refused:
            row["attention"] = f"{len(attention)} ({cudnn} cuDNN" + (
                f"; not cuDNN: {refused[0]}" if refused else "") + ")"
    except ValueError:
        pass
    steps = re.search(r"(\d+) steps per run", err)
    row["steps_fused"] = int(steps.group(1)) if steps else "?"
    rc, out, err = run([args.solder, "compile", path, "-o", os.path.join(d, "u.plan"),
                        "--arch", "sm_90", "--no-fusion"] + shapes)
    steps = re.search(r"(\d+) steps per run", out + err)
    row["steps_unfused"] = int(steps.group(1)) if steps else "?"
    row["status"] = "ok (no GPU here)" if not args.gpu else "ok"
    if args.gpu:
        rc, out, err = run([args.solder, "compare", path, "--quiet"] + shapes +
                           args.gpu_flags +
                           sum([["--input", f"{k}={os.path.join(d, k + '.npy')}"]
                                for k in feed], []))
        row["gpu_vs_ref"] = "pass" if rc == 0 else "FAIL: " + first_line(err or out)
        if rc != 0:
            row["status"] = "gpu differs"
        row["bench_cmd"] = [args.solder, "bench", path, "--iters", "100",
                            "--quiet"] + shapes + args.gpu_flags
    return row


def bench(row):
    """The GPU latency of a checked export, with nothing else running."""
    rc, out, err = run(row.pop("bench_cmd"))
    lat = re.search(r"median ([0-9.]+) ms", out)
    row["gpu_ms"] = float(lat.group(1)) if rc == 0 and lat else (
        "bench failed: " + first_line(err))


def check_or_report(args, name, exporter):
    try:
        return check(args, name, exporter)
    except Exception:
        return {"model": name, "exporter": exporter,
                "status": "harness error: " +
                traceback.format_exc().strip().splitlines()[-1][:140]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solder", default="build/tools/solder")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--exporters", default="legacy,dynamo")
    ap.add_argument("--out", default="zoo-out")
    ap.add_argument("--dynamic", action="store_true",
                    help="export with a symbolic batch (and sequence) dim")
    ap.add_argument("--gpu", action="store_true",
                    help="also compare on the GPU (solder compare)")
    ap.add_argument("--fuse-attention", action="store_true",
                    help="pass --fuse-attention to solder (the attention "
                         "column counts the attention groups)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the exports and inputs already in --out")
    ap.add_argument("--jobs", type=int, default=1,
                    help="exports checked at once (latencies: one at a time)")
    ap.add_argument("--solder-flags", default="",
                    help="more flags for solder's plan, compare and bench (not "
                    "the reference run checked against onnxruntime) "
                    "(space separated, e.g. '--precision fp16 "
                    "--attention-kernels cudnn')")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args()
    args.fusion_flags = ["--fuse-attention"] if args.fuse_attention else []
    # The reference run keeps fp32 (it is checked against onnxruntime);
    # the plan, compare and bench take the extra flags too.
    args.gpu_flags = args.fusion_flags + args.solder_flags.split()
    work = []
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        work += [(name, e) for e in args.exporters.split(",")]
    if args.jobs > 1:
        # Each worker exports with a few threads, not all of the machine's.
        os.environ.setdefault("OMP_NUM_THREADS", "2")
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(check_or_report, args, n, e)
                       for n, e in work]
            for f in concurrent.futures.as_completed(futures):
                print(json.dumps({k: v for k, v in f.result().items()
                                  if k != "bench_cmd"}), flush=True)
            rows = [f.result() for f in futures]
    else:
        rows = []
        for n, e in work:
            rows.append(check_or_report(args, n, e))
            print(json.dumps({k: v for k, v in rows[-1].items()
                              if k != "bench_cmd"}), flush=True)
    for row in rows:
        if "bench_cmd" in row:
            bench(row)
            print(json.dumps({"model": row["model"],
                              "exporter": row["exporter"],
                              "gpu_ms": row["gpu_ms"]}), flush=True)
    cols = ["model", "exporter", "ops", "unsupported", "ref_vs_ort", "groups",
            "steps_fused", "steps_unfused", "gpu_vs_ref", "gpu_ms", "status"]
    if args.fuse_attention:
        cols.insert(cols.index("groups") + 1, "attention")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
