#!/usr/bin/env bash
# compute-sanitizer over solder on the GPU machine: memcheck, racecheck,
# initcheck and synccheck, each over `solder run --backend cuda
# --random-inputs` of every shared model, fused and unfused (and fp16 for
# the fused ones; with ResNet-50 and BERT-base exported where PyTorch is
# installed), and memcheck over the runtime GPU tests. A run passes when
# the tool reports 0 errors; the summary gives the tool's error count per
# run. tools/gpu-test.sh calls it (step 4b); it also runs alone.
#
# Usage: tools/gpu-sanitize.sh [BUILD_DIR]   (after tools/gpu-test.sh has set
#        up LD_LIBRARY_PATH and SOLDER_SHARED_DIR, or with them set)
# Environment:
#   SOLDER_OUT          logs (default: $OUT, else /tmp/solder-gpu)
#   SOLDER_SHARED_DIR   the shared folder (models/)
#   SOLDER_SANITIZE_TOOLS  tools to run (default: all four)
#   SOLDER_SANITIZE_TIMEOUT  seconds per run (default 300)
#   SOLDER_SANITIZE_MODELS   model names to run (default: all)
#   SOLDER_SANITIZE_EXPORTS=0  skip exporting ResNet-50 and BERT-base
#   SOLDER_SANITIZE_TEST_TOOLS  tools run over the runtime GPU tests, one
#                            test per sanitized process (default: memcheck)
#   SOLDER_SANITIZE_TEST_UNITS  only these runtime test units (gtest
#                            filters as the summary names them)
#   SOLDER_SANITIZE_JOBS     sanitized processes at once (default: half the
#                            cores, at most 12); they share the GPU
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LOGS=${SOLDER_OUT:-${OUT:-/tmp/solder-gpu}}/sanitizer
mkdir -p "$LOGS"
SOLDER="$BUILD/tools/solder"
SHARED=${SOLDER_SHARED_DIR:-../shared}
TOOLS=${SOLDER_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
LIMIT=${SOLDER_SANITIZE_TIMEOUT:-300}
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$CS" ] || CS=/usr/local/cuda-13.0/bin/compute-sanitizer
if [ ! -x "$CS" ]; then
  echo "SKIP compute-sanitizer: not found"
  exit 0
fi
JOBS=${SOLDER_SANITIZE_JOBS:-$(( $(nproc) / 2 > 12 ? 12 : ($(nproc) + 1) / 2 ))}
RESULTS="$LOGS/results"
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
FAILED=0

# One sanitized command: the tool's error summary decides. Its verdict
# goes to stdout, which submit() sends to a file of its own.
check() { # tag tool cmd...
  local tag=$1 tool=$2; shift 2
  local log="$LOGS/$tag-$tool.log"
  # Bulk (TMA) copies are tracked only when asked: without it, initcheck
  # reports every element a Hopper cuBLASLt kernel stored through TMA as
  # uninitialized when the next kernel reads it.
  local extra=()
  case $tool in
    memcheck|initcheck) extra=(--check-bulk-copy yes) ;;
  esac
  # A test that runs the device out of memory on purpose: memcheck would
  # count each refused cudaMalloc as an error.
  if [ "$tool" = memcheck ] &&
     [[ $tag == *ConvSearchOnANearlyFullDeviceStillLoads ]]; then
    extra+=(--report-api-errors no)
  fi
  # racecheck of cuDNN's algorithm search (every algorithm cuDNN has, on
  # every convolution) took over 6 minutes per model: under racecheck the
  # tests load with the search off (SOLDER_CUDNN_SEARCH=0), and the models
  # run plans tuned beforehand (racecheckTuned).
  local search=1
  [ "$tool" = racecheck ] && search=0
  # --require-cuda-init no: a test that never touches the GPU passes.
  SOLDER_CUDNN_SEARCH=$search timeout "$LIMIT" "$CS" --tool "$tool" --error-exitcode 99 \
    --require-cuda-init no --print-limit 20 "${extra[@]}" "$@" > "$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$log" |
            tail -1)
  # Hazards inside cuBLASLt's and cuDNN's own kernels (both accesses in
  # one library kernel: nvjet, cutlass, xmma, cudnn) are reported as such
  # and do not fail the run: no argument of ours changes a library
  # kernel's shared-memory order. Any hazard in a kernel of ours fails.
  local ours
  ours=$(grep -E "^========= +(Error|Warning): Race|^========= +and " "$log" |
         grep -v -E "(nvjet|cutlass|xmma|cudnn|sm[0-9]+_)[A-Za-z0-9_]*\+0x" |
         head -1)
  if [ $rc -eq 99 ] && [ "$tool" = racecheck ] && [ -z "$ours" ] &&
     grep -q "Race reported" "$log" &&
     grep -q -E "^\[  PASSED  \]|^output" "$log"; then
    echo "LIBRARY $tool $tag: $summary, all inside library kernels:" \
      "$(grep -o -E "at [A-Za-z0-9_]+\+0x" "$log" | sort -u |
         sed 's/^at //; s/+0x$//' | tr '\n' ' ')"
  elif [ $rc -eq 0 ]; then
    echo "PASS $tool $tag: ${summary:-no summary}"
  elif [ $rc -eq 124 ]; then
    echo "TIMEOUT $tool $tag (${LIMIT} s)"
  else
    echo "FAIL $tool $tag (exit $rc): ${summary:-see $log}"
    grep -m 5 -E "^=========  *(Invalid|Uninitialized|Race|Barrier|Error)" \
      "$log"
  fi
}

# Runs "$@" in the background, at most JOBS at once: the sanitizers are
# CPU-bound, and one at a time took over half an hour.
submit() { # tag tool fn args...
  local tag=$1 tool=$2
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  "${@:3}" > "$RESULTS/$tag-$tool.txt" 2>&1 &
}

# racecheck watches a plan tuned beforehand (compile --tune, not
# sanitized): cuDNN's algorithm search runs every algorithm it has, and
# racecheck of that took 6 minutes on resnet10 fp32. The other three
# tools watch the search too.
racecheckTuned() { # tag model flags...
  local tag=$1 model=$2; shift 2
  local plan="$LOGS/$tag.plan"
  if ! "$SOLDER" compile "$model" --tune "$@" -o "$plan" --quiet \
       > "$LOGS/$tag-compile.log" 2>&1; then
    echo "FAIL racecheck $tag: compile --tune (see $LOGS/$tag-compile.log)"
    rm -f "$plan"; return
  fi
  check "$tag" racecheck "$SOLDER" run "$plan" --backend cuda \
    --random-inputs --show-values 0
  rm -f "$plan"
}

declare -A SHAPES=(
  [bert_mini_opset14]="--shape B=2 --shape S=32"
  [mobilenetv2_050_opset17]="--shape N=1"
)
MODELS=("$SHARED"/models/*.onnx)
# ResNet-50 and BERT-base (s128, batch 1, random weights), exported with
# bench/run_bench.py's helpers where PyTorch is installed.
if [ "${SOLDER_SANITIZE_EXPORTS:-1}" = 1 ] &&
   python3 -c "import torch, torchvision, transformers" 2>/dev/null; then
  mkdir -p "$LOGS/models"
  if python3 -c "
import sys; sys.path.insert(0, 'bench')
from run_bench import make_resnet50, make_bert, export
export('resnet50', make_resnet50(), 1, sys.argv[1] + '/resnet50.onnx')
export('bert', make_bert(), 1, sys.argv[1] + '/bert_base.onnx')
" "$LOGS/models" > "$LOGS/export.log" 2>&1; then
    # First: their runs are the longest.
    MODELS=("$LOGS/models/resnet50.onnx" "$LOGS/models/bert_base.onnx"
            "${MODELS[@]}")
  else
    echo "FAIL exporting ResNet-50 and BERT-base (see $LOGS/export.log)"
    FAILED=$((FAILED + 1))
  fi
else
  echo "SKIP ResNet-50 and BERT-base (no PyTorch here, or" \
       "SOLDER_SANITIZE_EXPORTS=0)"
fi
for model in "${MODELS[@]}"; do
  [ -f "$model" ] || continue
  name=$(basename "$model" .onnx)
  if [ -n "${SOLDER_SANITIZE_MODELS:-}" ] &&
     [[ " $SOLDER_SANITIZE_MODELS " != *" $name "* ]]; then continue; fi
  shape=${SHAPES[$name]:-}
  for variant in fused unfused fp16; do
    case $variant in
      fused) extra="" ;;
      unfused) extra="--no-fusion" ;;
      fp16) extra="--precision fp16" ;;
    esac
    for tool in $TOOLS; do
      # initcheck does not see some stores of cuBLASLt's and cuDNN's Hopper
      # kernels with fused epilogues (fp16): it reports whole outputs of
      # them as uninitialized when a kernel reads them (28k reports on
      # bert_mini, none unfused or fp32; --check-bulk-copy does not help).
      # GpuRuntimeTest.PoisonedArenaRunsStillMatchTheReference checks those
      # plans instead: every arena byte NaN before each run, outputs still
      # match.
      if [ "$tool" = initcheck ] && [ "$variant" = fp16 ]; then
        echo "SKIP initcheck $name-fp16 (library kernels' stores untracked;" \
             "see the poisoned-arena test)"
        continue
      fi
      # shellcheck disable=SC2086
      if [ "$tool" = racecheck ]; then
        submit "$name-$variant" "$tool" racecheckTuned "$name-$variant" \
          "$model" $shape $extra
      else
        submit "$name-$variant" "$tool" check "$name-$variant" "$tool" \
          "$SOLDER" run "$model" --backend cuda --random-inputs $shape \
          $extra --show-values 0
      fi
    done
  done
done

# The runtime tests: GpuRuntimeTest one test per process, the other
# suites one per process, side by side; but the tests that measure or
# fill the device's free memory run alone, last. Left out: the test that
# faults a kernel on purpose (memcheck reports that fault, and the test's
# child processes hung under it), the test that the device's free memory
# does not change while a plan runs (the tools allocate device memory of
# their own as it runs), and for initcheck the tests whose fp16 plans
# read what library kernels with fused epilogues stored (untracked, as
# for the fp16 models above).
LIMIT=$((LIMIT > 900 ? LIMIT : 900))
ALONE="GpuRuntimeTest.DeviceMemoryLimitRefusesByNameAndFreesWhatItTook
GpuRuntimeTest.ConvSearchOnANearlyFullDeviceStillLoads"
NOT_INITCHECK="GpuRuntimeTest.FusedAttentionModelsMatchTheReference
GpuRuntimeTest.TunedGemmChoiceIsRecordedAndReloads
GpuRuntimeTest.ReducedPrecisionModelsMatchTheFp32Reference"
ALL_TESTS=$("$BUILD/tests/solder_runtime_tests" --gtest_list_tests |
        awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }' |
        grep -v -x -E 'GpuRuntimeTest.(KernelFaultIsStickyNamedAndRefusedAfter|SteadyStateAllocatesNothing)')
# Filters: each GpuRuntimeTest alone, then each other suite whole.
UNITS=$(grep '^GpuRuntimeTest\.' <<< "$ALL_TESTS" | grep -v -x -F "$ALONE"
        grep -v '^GpuRuntimeTest\.' <<< "$ALL_TESTS" |
          sed 's/\..*/.*/' | sort -u)
if [ -n "${SOLDER_SANITIZE_TEST_UNITS:-}" ]; then
  UNITS=$(tr ' ' '\n' <<< "$SOLDER_SANITIZE_TEST_UNITS" |
          grep -x -F "$UNITS")
  ALONE=$(tr ' ' '\n' <<< "$SOLDER_SANITIZE_TEST_UNITS" |
          grep -x -F "$ALONE")
fi
# The stress tests run 10 times a thread, not 100 (8 threads) or 50 (4).
export SOLDER_STRESS_RUNS=${SOLDER_STRESS_RUNS:-10}
TEST_TOOLS=${SOLDER_SANITIZE_TEST_TOOLS:-memcheck}
# The longest first: initcheck and racecheck of the GPU tests.
for tool in $TEST_TOOLS; do
  for unit in $UNITS; do
    if [ "$tool" = initcheck ] && grep -q -x -F "$unit" <<< "$NOT_INITCHECK"
    then
      echo "SKIP initcheck test-$unit (fp16 library stores untracked)" \
        > "$RESULTS/test-$unit-$tool.txt"
      continue
    fi
    submit "test-$unit" "$tool" check "test-$unit" "$tool" \
      "$BUILD/tests/solder_runtime_tests" --gtest_filter="$unit"
  done
done
wait
JOBS=1
for tool in $TEST_TOOLS; do
  for test in $ALONE; do
    submit "test-$test" "$tool" check "test-$test" "$tool" \
      "$BUILD/tests/solder_runtime_tests" --gtest_filter="$test"
    wait
  done
done
TESTS="$UNITS $ALONE"

# The verdicts, sorted; the tests' by tool in one line each when they
# all passed.
for f in "$RESULTS"/*.txt; do [ -e "$f" ] && cat "$f"; done |
  grep -v '^PASS [a-z]* test-' | sort -k2,3
for tool in $TEST_TOOLS; do
  n=$(cat "$RESULTS"/test-*-"$tool".txt 2>/dev/null | grep -c '^PASS')
  echo "PASS-COUNT $tool runtime tests: $n of $(echo "$TESTS" | wc -w)" \
    "processes (GpuRuntimeTest one test each, other suites whole)"
done
FAILED=$((FAILED + $(cat "$RESULTS"/*.txt 2>/dev/null |
                     grep -c -E '^(FAIL|TIMEOUT)')))

echo "compute-sanitizer: $FAILED failing run(s); logs in $LOGS"
[ $FAILED -eq 0 ]
