#!/usr/bin/env bash
# tools/gpu-sanitize.sh's own logic, without a GPU: a stand-in
# compute-sanitizer (first on PATH) logs how it was called and prints what
# the real one would for the test named in its arguments, and the script's
# verdicts are checked:
#   - a race inside a cuBLASLt kernel is LIBRARY and does not fail the run,
#     a race in a kernel of solder's fails it (the twin: without that race
#     the run passes);
#   - racecheck runs with SOLDER_CUDNN_SEARCH=0, the others with the search;
#   - memcheck of the out-of-memory test gets --report-api-errors no;
#   - the fault test and the free-memory test are never run, the fp16
#     library tests not under initcheck;
#   - the memory-measuring tests run after every other one has finished.
# Usage: gpu_sanitize_script_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$1
BUILD=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin"
cat > "$WORK/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
# The stand-in: "--tool T ... --gtest_filter=U"; logs one line per call,
# start and end, and answers as the real tool would for U.
tool="" unit="" flags="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --tool) tool=$2; shift ;;
    --gtest_filter=*) unit=${1#--gtest_filter=} ;;
  esac
  shift
done
log=$FAKE_CS_LOG
echo "start $(date +%s%N) $tool $unit search=${SOLDER_CUDNN_SEARCH:-unset} stress=${SOLDER_STRESS_RUNS:-unset} flags=$flags" >> "$log"
echo "========= COMPUTE-SANITIZER"
rc=0
race() { # kernel of the read, kernel of the write
  echo "========= Error: Race reported between Read access at $1+0xb00"
  echo "=========     and Write access at $2+0x3470 [192 hazards]"
  rc=99
}
if [ "$tool" = racecheck ]; then
  case $unit in
    GpuRuntimeTest.MixedGraphMatchesReference)
      race nvjet_sm90_hsh_32x64_64x16_4x2_h_bx_bias_NNN \
           nvjet_sm90_hsh_32x64_64x16_4x2_h_bx_bias_NNN ;;
    GpuRuntimeTest.AttentionKernelMatchesReference)
      [ -z "${FAKE_CS_CLEAN:-}" ] && race solder_3_attention solder_3_attention ;;
  esac
fi
echo "[  PASSED  ] 1 test."
if [ "$tool" = racecheck ]; then
  n=0; [ $rc -ne 0 ] && n=1
  echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
else
  echo "========= ERROR SUMMARY: 0 errors"
fi
echo "end $(date +%s%N) $tool $unit" >> "$log"
exit $rc
EOF
chmod +x "$WORK/bin/compute-sanitizer"

FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }

# sanitize NAME [env...]: one run of the script, its output in $WORK/NAME.
sanitize() {
  local name=$1; shift
  : > "$WORK/$name.calls"
  env PATH="$WORK/bin:$PATH" FAKE_CS_LOG="$WORK/$name.calls" \
    SOLDER_OUT="$WORK/$name-logs" SOLDER_SANITIZE_EXPORTS=0 \
    SOLDER_SANITIZE_MODELS=none SOLDER_SANITIZE_JOBS=3 \
    SOLDER_SANITIZE_TEST_TOOLS="memcheck racecheck initcheck" "$@" \
    "$SRC/tools/gpu-sanitize.sh" "$BUILD" > "$WORK/$name.out" 2>&1
  echo $? > "$WORK/$name.rc"
}
expect_line() { # name regex what
  grep -q -E "$2" "$WORK/$1.out" || fail "$1: no line matching '$2' ($3)"
}

sanitize planted
[ "$(cat "$WORK/planted.rc")" != 0 ] ||
  fail "planted: a race in solder's kernel did not fail the script"
expect_line planted \
  '^LIBRARY racecheck test-GpuRuntimeTest.MixedGraphMatchesReference: .*nvjet_sm90' \
  "library race reported apart"
expect_line planted \
  '^FAIL racecheck test-GpuRuntimeTest.AttentionKernelMatchesReference' \
  "race in solder_3_attention fails"
expect_line planted '^compute-sanitizer: 1 failing run' "exactly one failure"
expect_line planted \
  '^SKIP initcheck test-GpuRuntimeTest.ReducedPrecisionModelsMatchTheFp32Reference' \
  "fp16 library test skipped under initcheck"

CALLS="$WORK/planted.calls"
grep -q -E 'KernelFaultIsStickyNamedAndRefusedAfter|SteadyStateAllocatesNothing' \
  "$CALLS" && fail "the fault or free-memory test was sanitized"
grep -q -E '^start .* initcheck GpuRuntimeTest.(FusedAttentionModelsMatchTheReference|TunedGemmChoiceIsRecordedAndReloads|ReducedPrecisionModelsMatchTheFp32Reference) ' \
  "$CALLS" && fail "an fp16 library test ran under initcheck"
grep -E '^start .* racecheck ' "$CALLS" | grep -q -v 'search=0' &&
  fail "racecheck ran with cuDNN's search on"
grep -E '^start .* (memcheck|initcheck) ' "$CALLS" | grep -q 'search=0' &&
  fail "memcheck or initcheck ran with cuDNN's search off"
grep -q -E '^start .* memcheck GpuRuntimeTest.ConvSearchOnANearlyFullDeviceStillLoads .*--report-api-errors no' \
  "$CALLS" || fail "memcheck of the out-of-memory test counts API errors"
grep -E '^start .* racecheck GpuRuntimeTest.ConvSearch' "$CALLS" |
  grep -q -- '--report-api-errors' && fail "racecheck got --report-api-errors"
grep -q 'stress=10 ' "$CALLS" || fail "the stress test's runs were not cut"
# Every run of the memory-measuring tests starts after every other ends.
ALONE='(DeviceMemoryLimitRefusesByNameAndFreesWhatItTook|ConvSearchOnANearlyFullDeviceStillLoads)'
first_alone=$(grep -E "^start .* GpuRuntimeTest.$ALONE " "$CALLS" |
              awk '{ print $2 }' | sort -n | head -1)
last_other=$(grep -E '^end ' "$CALLS" | grep -v -E "GpuRuntimeTest.$ALONE\$" |
             awk '{ print $2 }' | sort -n | tail -1)
[ -n "$first_alone" ] && [ -n "$last_other" ] ||
  fail "no runs of the memory-measuring tests, or of the others"
[ -n "$first_alone" ] && [ -n "$last_other" ] &&
  [ "$first_alone" -lt "$last_other" ] &&
  fail "a memory-measuring test started while others ran"
units=$(grep -c '^start .* memcheck ' "$CALLS")
[ "$units" -ge 20 ] || fail "only $units units ran under memcheck"

# The twin: no race in solder's kernel, and the script passes.
sanitize clean FAKE_CS_CLEAN=1
[ "$(cat "$WORK/clean.rc")" = 0 ] || {
  fail "clean: the script failed"; cat "$WORK/clean.out"; }
expect_line clean '^compute-sanitizer: 0 failing run' "nothing fails"
expect_line clean \
  '^LIBRARY racecheck test-GpuRuntimeTest.MixedGraphMatchesReference' \
  "the library race is still reported"

[ $FAILED -eq 0 ] && echo "gpu-sanitize.sh: verdicts, flags and order as" \
  "documented ($units units under each tool)"
exit $FAILED
