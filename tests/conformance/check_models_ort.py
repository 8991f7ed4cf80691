#!/usr/bin/env python3
"""Compares `solder run --backend reference` with onnxruntime on real models.

For every model of ../shared/models, solder generates seeded random inputs
(saved with --save-inputs) and writes its outputs (--output-dir); onnxruntime
runs the same model on the same saved inputs. Each output must satisfy
max|solder - ort| / max|ort| <= 1e-4.

Exit codes: 0 all models match, 1 a mismatch or a solder failure, 77 (the
CTest SKIP_RETURN_CODE) when onnxruntime or the shared models are absent.

usage: check_models_ort.py SOLDER_BINARY SHARED_DIR [--seed S] [--tol T]
"""

import argparse
import os
import subprocess
import sys
import tempfile

SKIP = 77

# Per model: extra solder arguments (shapes for symbolic dims, see
# models/README.md) and inputs made here rather than by solder, as
# name -> (shape, kind). Token ids are drawn by solder from [0, 1000) (the
# vocabulary size); attention masks must be 0/1, so they come from a file,
# which also exercises `--input`.
MODELS = {
    "mobilenetv2_050_opset17.onnx": (["--shape", "N=2"], {}),
    "resnet10_dynamo.onnx": ([], {}),
    "squeezenet11_opset13.onnx": ([], {}),
    "bert_mini_opset14.onnx": (
        ["--shape", "input_ids=2x16", "--int-range", "0:1000"],
        {"attention_mask": ((2, 16), "mask")}),
    "bert_mini_dynamo.onnx": (["--int-range", "0:1000"],
                              {"attention_mask": ((2, 32), "mask")}),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("solder")
    p.add_argument("shared")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tol", type=float, default=1e-4)
    args = p.parse_args()

    models_dir = os.path.join(args.shared, "models")
    if not os.path.isdir(models_dir):
        print(f"SKIP: {models_dir} not found (the shared test material is "
              "absent)")
        return SKIP
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"SKIP: onnxruntime or numpy not available ({e})")
        return SKIP

    failures = 0
    for model, (extra_args, made_inputs) in MODELS.items():
        path = os.path.join(models_dir, model)
        if not os.path.exists(path):
            print(f"FAIL {model}: missing from {models_dir}")
            failures += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            in_dir = os.path.join(tmp, "inputs")
            out_dir = os.path.join(tmp, "outputs")
            cmd = [args.solder, "run", path, "--backend", "reference",
                   "--random-inputs", "--seed", str(args.seed),
                   "--save-inputs", in_dir, "--output-dir", out_dir]
            cmd += extra_args
            rng = np.random.default_rng(args.seed)
            for name, (shape, kind) in made_inputs.items():
                assert kind == "mask"
                # Ones with a random-length padded tail per row.
                mask = np.ones(shape, dtype=np.int64)
                for row in mask:
                    row[shape[-1] - rng.integers(0, shape[-1] // 2):] = 0
                file = os.path.join(tmp, name + ".npy")
                np.save(file, mask)
                cmd += ["--input", f"{name}={file}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {model}: solder exited with {r.returncode}: "
                      f"{r.stderr.strip()}")
                failures += 1
                continue
            sess = ort.InferenceSession(path,
                                        providers=["CPUExecutionProvider"])
            feeds = {}
            for i in sess.get_inputs():
                feeds[i.name] = np.load(
                    os.path.join(in_dir, sanitize(i.name) + ".npy"))
            names = [o.name for o in sess.get_outputs()]
            expected = sess.run(names, feeds)
            worst = 0.0
            model_failed = False
            for name, ref in zip(names, expected):
                out_path = os.path.join(out_dir, sanitize(name) + ".npy")
                if not os.path.exists(out_path):
                    print(f"FAIL {model}: solder wrote no output '{name}'")
                    model_failed = True
                    break
                got = np.load(out_path)
                if got.shape != ref.shape or got.dtype != ref.dtype:
                    print(f"FAIL {model}: output '{name}' is {got.dtype}"
                          f"{list(got.shape)}, onnxruntime gives "
                          f"{ref.dtype}{list(ref.shape)}")
                    model_failed = True
                    break
                ref64 = ref.astype(np.float64)
                scale = np.max(np.abs(ref64)) if ref.size else 0.0
                err = np.max(np.abs(got.astype(np.float64) - ref64)) \
                    if ref.size else 0.0
                rel = err / scale if scale > 0 else err
                worst = max(worst, rel)
                if not rel <= args.tol:  # also catches NaN
                    print(f"FAIL {model}: output '{name}': max|out-ref|/"
                          f"max|ref| = {rel:.3g} > {args.tol:g}")
                    model_failed = True
            if model_failed:
                failures += 1
            else:
                print(f"ok   {model}: max|out-ref|/max|ref| = {worst:.3g}")
    print(f"{len(MODELS) - failures} of {len(MODELS)} models match "
          "onnxruntime")
    return 1 if failures else 0


def sanitize(name):
    """The file name solder's --output-dir gives a tensor (TensorIO.cpp)."""
    out = "".join(c if c.isalnum() and c.isascii() or c in "._-" else "_"
                  for c in name)
    if not out or out[0] == ".":
        out = "_" + out
    return out[:200]


if __name__ == "__main__":
    sys.exit(main())
