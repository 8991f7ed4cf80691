#!/usr/bin/env bash
# Runs solder's GPU checks on the GPU machine, from a carried build:
#   1. checks for a GPU (nvidia-smi);
#   2. the GPU test binaries (tests/solder_runtime_tests: models vs the
#      reference executor, 4 threads x 50 runs, CUDA graph vs eager steps,
#      no allocation in steady state, plan recompilation), and the codegen
#      tests;
#   2b. `solder compare` on tests/data/fusion_chain.onnx (clean, with a
#      perturbed group, with that group's fusion disabled) and the shared
#      models;
#   3. `solder test-onnx` on every suite of the ONNX tests, on the cuda and
#      the reference backends: a test the reference passes must pass on cuda;
#      and tests/data/onnx_opset23 (ONNX Attention) on cuda in fp32, fp16
#      and bf16;
#   4. `solder run --backend cuda` of each shared model against
#      `--backend reference` on the same inputs;
#   4a. `solder profile` of two shared models at fp32 and fp16 (one tuned
#      plan each): the trace loads with one event per step, the steps' GPU
#      times cover the graph replay (each step's event costing <= 5 us), and
#      the launched total is printed next to `solder bench --no-cuda-graph`;
#   4b. compute-sanitizer's four tools over `solder run` of the shared
#      models and ResNet-50/BERT-base, fused, unfused and fp16, and
#      memcheck over the runtime GPU tests
#      (tools/gpu-sanitize.sh; SOLDER_SKIP_SANITIZER=1 skips it);
#   4c. the Python module with PyTorch (tests/python/test_gpu.py: ResNet-50
#      and a small BERT on torch CUDA tensors, zero copy, call overhead);
#   5. the benchmark (bench/run_bench.py) and the attention and GEMM
#      micro-benchmarks (bench/attention_bench.py, bench/gemm_bench.py),
#      unless SOLDER_SKIP_BENCH=1.
# Prints a summary; exits 1 when any step failed.
#
# Usage: tools/gpu-test.sh [BUILD_DIR]
# Environment:
#   SOLDER_SHARED   the shared folder (models/, onnx-tests/) or a .tar.xz of
#                   it (default: BUILD/shared-data.tar.xz, else ../shared)
#   SOLDER_OUT      where logs go (default: $OUT if set, else /tmp/solder-gpu)
#   SOLDER_SUITES   suites to run (default: all under onnx-tests/)
#   SOLDER_JOBS     test-onnx parallelism (default 8)
#   SOLDER_SUITE_TIMEOUT  seconds per suite (default 900)
#   SOLDER_SKIP_BENCH=1, SOLDER_BENCH_ARGS (passed to run_bench.py)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LOGS=${SOLDER_OUT:-${OUT:-/tmp/solder-gpu}}
mkdir -p "$LOGS"
SOLDER="$BUILD/tools/solder"
FAILED=()
step() { echo; echo "=== $* ==="; }

if [ ! -x "$SOLDER" ]; then
  echo "error: no $SOLDER: build, run tools/bundle-for-device.sh and carry" \
       "the build folder" >&2
  exit 2
fi

step "GPU"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
  echo "error: no GPU here (nvidia-smi missing or failing)" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

if [ -f "$BUILD/bundle-libs.tar.xz" ] && [ ! -d "$BUILD/bundle-libs" ]; then
  tar xJf "$BUILD/bundle-libs.tar.xz" -C "$BUILD"
fi
export LD_LIBRARY_PATH="$PWD/$BUILD/bundle-libs:/usr/local/cuda-13.0/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SOLDER_CACHE_DIR=${SOLDER_CACHE_DIR:-/tmp/solder-cache}

SHARED=${SOLDER_SHARED:-}
if [ -z "$SHARED" ]; then
  if [ -f "$BUILD/shared-data.tar.xz" ]; then SHARED="$BUILD/shared-data.tar.xz"
  else SHARED=../shared; fi
fi
if [ -f "$SHARED" ]; then
  mkdir -p /tmp/solder-shared && tar xJf "$SHARED" -C /tmp/solder-shared
  SHARED=/tmp/solder-shared
fi
export SOLDER_SHARED_DIR="$SHARED"
echo "shared data: $SHARED"

step "GPU test binaries"
for t in "$BUILD"/tests/solder_runtime_tests "$BUILD"/tests/solder_codegen_tests; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  if timeout 600 "$t" --gtest_color=no > "$LOGS/$name.log" 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name"; FAILED+=("$name")
  fi
  grep -E "^\[  (FAILED|SKIPPED) |^\[ model|PASSED|tests ran" "$LOGS/$name.log" | head -40
done

step "solder compare: per-group check of fused plans"
# A clean model passes; a perturbed group is named as the first failing
# one (exit 1); --disable-fusion of that group passes again. The group is a
# generated-kernel one (a contraction group cuDNN runs whole has no kernel
# to perturb).
CHAIN=tests/data/fusion_chain.onnx
if "$SOLDER" compare "$CHAIN" --random-inputs > "$LOGS/compare-chain.log" 2>&1; then
  echo "PASS compare $CHAIN"
else
  echo "FAIL compare $CHAIN"; FAILED+=("compare-chain"); tail -20 "$LOGS/compare-chain.log"
fi
GID=$("$SOLDER" dump-ir "$CHAIN" --fusion-report=json |
      python3 -c 'import json,sys; g=[x for x in json.load(sys.stdin)["groups"] if x["kind"] != "contraction"]; print(g[0]["id"] if g else "")')
if [ -z "$GID" ]; then
  echo "SKIP compare --test-perturb-group: no fused group in $CHAIN"
else
  "$SOLDER" compare "$CHAIN" --random-inputs --test-perturb-group "$GID" \
    > "$LOGS/compare-perturbed.log" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep -q "first failing group: group $GID " "$LOGS/compare-perturbed.log"; then
    echo "PASS compare names perturbed group $GID"
  else
    echo "FAIL compare --test-perturb-group $GID (exit $rc)"; FAILED+=("compare-perturbed")
    tail -20 "$LOGS/compare-perturbed.log"
  fi
  if "$SOLDER" compare "$CHAIN" --random-inputs --test-perturb-group "$GID" \
       --disable-fusion "$GID" > "$LOGS/compare-disabled.log" 2>&1; then
    echo "PASS compare --disable-fusion $GID"
  else
    echo "FAIL compare --disable-fusion $GID"; FAILED+=("compare-disabled")
    tail -20 "$LOGS/compare-disabled.log"
  fi
fi
for spec in "resnet10_dynamo.onnx" "squeezenet11_opset13.onnx" \
            "mobilenetv2_050_opset17.onnx --shape N=2" \
            "bert_mini_opset14.onnx --shape B=2 --shape S=32"; do
  set -- $spec
  m="$SHARED/models/$1"; shift
  [ -f "$m" ] || continue
  name=$(basename "$m" .onnx)
  if timeout 600 "$SOLDER" compare "$m" "$@" --random-inputs \
       --json "$LOGS/compare-$name.json" > "$LOGS/compare-$name.log" 2>&1; then
    echo "PASS compare $name"
  else
    echo "FAIL compare $name"; FAILED+=("compare-$name")
    grep -E "first failing|FAIL|error" "$LOGS/compare-$name.log" | head -10
  fi
done

step "ONNX test suites on the GPU"
if [ -d "$SHARED/onnx-tests" ]; then
  for dir in ${SOLDER_SUITES:-$(ls -d "$SHARED"/onnx-tests/*/)}; do
    [ -d "$dir" ] || dir="$SHARED/onnx-tests/$dir"
    suite=$(basename "$dir")
    # The GPU must pass every test the reference backend passes: run both
    # and compare the sets of passing tests.
    for backend in reference cuda; do
      timeout "${SOLDER_SUITE_TIMEOUT:-900}" "$SOLDER" test-onnx --verbose \
        --backend $backend --jobs "${SOLDER_JOBS:-8}" "$dir" \
        > "$LOGS/test-onnx-$suite-$backend.log" 2>&1
      # Test names only: --verbose may add how a test ran after the name.
      grep '^PASS ' "$LOGS/test-onnx-$suite-$backend.log" | awk '{print $2}' |
        sort > "$LOGS/pass-$suite-$backend.txt"
    done
    missing=$(comm -23 "$LOGS/pass-$suite-reference.txt" "$LOGS/pass-$suite-cuda.txt")
    echo "suite $suite: reference $(tail -1 "$LOGS/test-onnx-$suite-reference.log");" \
         "cuda $(tail -1 "$LOGS/test-onnx-$suite-cuda.log")"
    if [ -n "$missing" ]; then
      echo "passing on reference but not on cuda:"; echo "$missing" | head -20
      FAILED+=("test-onnx $suite")
    fi
  done
else
  echo "no onnx-tests under $SHARED: skipped"
fi
# The repo's own opset-23 suite (ONNX Attention and RMSNormalization, with
# onnx's reference outputs): the attention kernels at f32 must pass it too.
for precision in fp32 fp16 bf16; do
  if ! "$SOLDER" test-onnx --backend cuda --precision $precision \
      tests/data/onnx_opset23 > "$LOGS/test-onnx-opset23-$precision.log" 2>&1; then
    echo "tests/data/onnx_opset23 ($precision) fails on cuda:"
    tail -5 "$LOGS/test-onnx-opset23-$precision.log"
    FAILED+=("test-onnx onnx_opset23 $precision")
  else
    echo "tests/data/onnx_opset23 $precision: $(tail -1 "$LOGS/test-onnx-opset23-$precision.log")"
  fi
done

step "Shared models: cuda vs reference"
declare -A SHAPES=(
  [mobilenetv2_050_opset17]="--shape N=2"
  [bert_mini_opset14]="--shape B=2 --shape S=32"
)
for model in "$SHARED"/models/*.onnx; do
  [ -f "$model" ] || continue
  name=$(basename "$model" .onnx)
  args=${SHAPES[$name]:-}
  rm -rf "/tmp/solder-m/$name"; mkdir -p "/tmp/solder-m/$name"
  if ! "$SOLDER" run "$model" $args --random-inputs --backend reference \
       --save-inputs "/tmp/solder-m/$name/in" \
       --output-dir "/tmp/solder-m/$name/ref" > "$LOGS/model-$name.log" 2>&1; then
    echo "SKIP $name (reference: $(tail -1 "$LOGS/model-$name.log"))"; continue
  fi
  inputs=()
  for f in "/tmp/solder-m/$name/in"/*.npy; do
    inputs+=(--input "$(basename "$f" .npy)=$f")
  done
  if "$SOLDER" run "$model" $args "${inputs[@]}" --backend cuda \
       --output-dir "/tmp/solder-m/$name/gpu" >> "$LOGS/model-$name.log" 2>&1 &&
     python3 - "/tmp/solder-m/$name" <<'PY'
import glob, os, sys
import numpy as np
d = sys.argv[1]
worst = 0.0
for ref in sorted(glob.glob(os.path.join(d, "ref", "*.npy"))):
    r = np.load(ref).astype(np.float64)
    g = np.load(os.path.join(d, "gpu", os.path.basename(ref))).astype(np.float64)
    err = np.abs(g - r).max() / max(np.abs(r).max(), 1e-30)
    worst = max(worst, err)
print(f"max rel err {worst:.3g}")
sys.exit(0 if worst <= 1e-4 else 1)
PY
  then echo "PASS $name"
  else echo "FAIL $name"; FAILED+=("model $name"); tail -3 "$LOGS/model-$name.log"
  fi
done

step "solder profile: per-step table, trace, total vs bench --no-cuda-graph"
for spec in "resnet10_dynamo:" "bert_mini_opset14:--shape B=2 --shape S=32"; do
  name=${spec%%:*}; args=${spec#*:}
  model="$SHARED/models/$name.onnx"
  [ -f "$model" ] || { echo "SKIP profile $name (no model)"; continue; }
  for prec in fp32 fp16; do
    tag="$name-$prec"
    # One tuned plan for all three: cuDNN measures its algorithms per
    # process, and two processes may pick different ones.
    plan="$LOGS/profile-$tag.plan"
    if "$SOLDER" compile "$model" $args --precision $prec --tune -o "$plan" \
         > "$LOGS/profile-$tag.txt" 2>&1 &&
       "$SOLDER" profile "$plan" --runs 50 \
         --trace "$LOGS/trace-$tag.json" >> "$LOGS/profile-$tag.txt" 2>&1 &&
       "$SOLDER" profile "$plan" --runs 50 --json \
         > "$LOGS/profile-$tag.json" 2>>"$LOGS/profile-$tag.txt" &&
       "$SOLDER" bench "$plan" --iters 50 \
         --no-cuda-graph --json > "$LOGS/bench-nograph-$tag.json" \
         2>>"$LOGS/profile-$tag.txt" &&
       python3 - "$LOGS" "$tag" <<'PY'
import json, sys
logs, tag = sys.argv[1], sys.argv[2]
prof = json.load(open(f"{logs}/profile-{tag}.json"))
trace = json.load(open(f"{logs}/trace-{tag}.json"))
bench = json.load(open(f"{logs}/bench-nograph-{tag}.json"))
events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
ok = len(events) == len(prof["steps"]) > 0
# The launched total against bench's (two processes, same measurement),
# and the steps' GPU times against the graph replay they make up.
ratio = prof["launched_ms"] / bench["median_ms"]
gpu = prof["gpu_steps_ms"] / prof["graph_ms"]
roof = [s for s in prof["steps"] if "roofline_pct" in s]
print(f"{tag}: {len(prof['steps'])} steps, {len(events)} trace events, "
      f"launched {prof['launched_ms']:.3f} ms vs bench --no-cuda-graph "
      f"{bench['median_ms']:.3f} ms ({ratio:.2f}x); step GPU times "
      f"({prof['gpu_timing']}) sum {prof['gpu_steps_ms']:.3f} ms vs graph "
      f"{prof['graph_ms']:.3f} ms ({gpu:.2f}x); launched with events "
      f"{prof['launched_steps_ms']:.3f} ms; {len(roof)} steps with a "
      f"roofline figure")
# What must hold: one trace event per step, the steps' GPU times cover
# the graph run with each step's own event adding at most 5 us, and the
# roofline column. The launched total against bench's is printed, not
# checked: these small models are launch-bound, and two processes running
# the same tuned plan differed by up to 36% on the H100 (host speed);
# bench/run_bench.py --profile checks the issue's 10% on ResNet-50 and
# BERT-base, where they agreed within 1%.
per_step_us = 1000 * (prof["gpu_steps_ms"] - prof["graph_ms"]) / len(prof["steps"])
print(f"{tag}: event cost per step {per_step_us:.2f} us")
sys.exit(0 if ok and gpu >= 0.9 and per_step_us <= 5 and roof else 1)
PY
    then echo "PASS profile $tag"; head -3 "$LOGS/profile-$tag.txt"
    else echo "FAIL profile $tag"; FAILED+=("profile $tag")
         tail -5 "$LOGS/profile-$tag.txt"; fi
  done
done

step "compute-sanitizer (memcheck, racecheck, initcheck, synccheck)"
if [ "${SOLDER_SKIP_SANITIZER:-0}" = 1 ]; then
  echo "SKIP compute-sanitizer (SOLDER_SKIP_SANITIZER=1)"
elif SOLDER_OUT="$LOGS" tools/gpu-sanitize.sh "$BUILD"; then
  echo "PASS compute-sanitizer"
else
  echo "FAIL compute-sanitizer"; FAILED+=("compute-sanitizer")
fi

step "Python module"
if [ -d "$BUILD/python/solder" ]; then
  PYTHONPATH="$PWD/$BUILD/python" PYTHONUNBUFFERED=1 timeout 900 \
    python3 tests/python/test_gpu.py 2>&1 | tee "$LOGS/python-gpu.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then echo "PASS python"
  elif [ "$rc" -eq 77 ]; then echo "SKIP python"
  else echo "FAIL python"; FAILED+=("python"); fi
else
  echo "no $BUILD/python/solder: skipped"
fi

if [ "${SOLDER_SKIP_BENCH:-0}" != 1 ]; then
  step "Benchmark"
  if PYTHONUNBUFFERED=1 python3 bench/run_bench.py --solder "$SOLDER" \
       --out "$LOGS" ${SOLDER_BENCH_ARGS:-} 2>&1 | tee "$LOGS/bench.log"; then
    echo "bench done"
  else
    FAILED+=("bench")
  fi
  step "Attention micro-benchmark"
  if PYTHONUNBUFFERED=1 python3 bench/attention_bench.py --solder "$SOLDER" \
       2>&1 | tee "$LOGS/attention_bench.log"; then
    echo "attention bench done"
  else
    FAILED+=("attention bench")
  fi
  step "GEMM micro-benchmark"
  if PYTHONUNBUFFERED=1 python3 bench/gemm_bench.py --solder "$SOLDER" \
       2>&1 | tee "$LOGS/gemm_bench.log"; then
    echo "gemm bench done"
  else
    FAILED+=("gemm bench")
  fi
fi

step "Summary"
if [ ${#FAILED[@]} -eq 0 ]; then echo "all GPU checks passed"; exit 0; fi
printf 'FAILED: %s\n' "${FAILED[@]}"
exit 1
