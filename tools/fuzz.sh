#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ into the instrumented `asan` build
# (tools/build.sh asan: clang, ASan + UBSan + coverage, assertions on; the
# sanitizer test run uses the same folder) and runs each for SECONDS
# (default 60); prints the executions and crashes of every target and
# exits 1 if any crashed.
#
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS 0: build, then only replay the seeds and regressions once.
#   TARGET: onnx_import plan_file ir_parser npy tensor_proto (default all)
# Environment: SOLDER_FUZZ_DIR (build folder, default build-asan),
#   SOLDER_FUZZ_JOBS (build jobs, default nproc), SOLDER_FUZZ_PARALLEL
#   (targets run at once, default 1), SOLDER_FUZZ_ARGS (extra libFuzzer
#   flags).
#
# Seeds come from fuzz/corpus/<target>/ (never written); new inputs go to
# build-asan/corpus/<target>/, crashing ones to build-asan/crashes/<target>/.
# A crash, once fixed, goes to fuzz/regressions/<target>/ (replayed here
# first, and by the solder_fuzz_tests unit test in every build).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
DIR=${SOLDER_FUZZ_DIR:-build-asan}
# Configure only (the target list below depends on what CMake found).
SOLDER_BUILD_JOBS=${SOLDER_FUZZ_JOBS:-$(nproc)} tools/build.sh asan "$DIR" \
  help >/dev/null
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(onnx_import plan_file ir_parser npy tensor_proto)
  # plan_file exists only when the CUDA toolkit was found.
  if ! grep -rqs 'fuzz_plan_file' "$DIR/build.ninja" "$DIR/Makefile" \
       "$DIR/fuzz/Makefile"; then
    TARGETS=(onnx_import ir_parser npy tensor_proto)
  fi
fi
SOLDER_BUILD_JOBS=${SOLDER_FUZZ_JOBS:-$(nproc)} tools/build.sh asan "$DIR" \
  "${TARGETS[@]/#/fuzz_}"

# Leaks are reported (an ONNX model that leaks on an error path is a bug);
# an allocation above 2 GiB is reported as a finding too. Without the
# __tls_get_addr interceptor: see tools/test.sh (LLVM 14's LeakSanitizer
# crashes on dynamic TLS blocks 16 bytes into a page).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Runs target $1 and writes its summary line (and failure notes) to
# $DIR/logs/$1.summary, and 1 (crashed) or 0 to $DIR/logs/$1.status.
run_target() {
  local T=$1 BIN="$DIR/fuzz/fuzz_$1" LOG="$DIR/logs/$1.log" RC=0 FAIL=0
  mkdir -p "$DIR/corpus/$T" "$DIR/crashes/$T"
  : >"$DIR/logs/$T.summary"
  local REG=(fuzz/regressions/"$T"/*)
  if [ -e "${REG[0]}" ]; then
    # Without a corpus folder libFuzzer runs each file once.
    if ! "$BIN" "${REG[@]}" >"$DIR/logs/$T.regressions.log" 2>&1; then
      echo "$T: a regression input fails again (see $DIR/logs/$T.regressions.log)" \
        >>"$DIR/logs/$T.summary"
      FAIL=1
    fi
  fi
  local before after LIMIT=-max_total_time="$SECS"
  if [ "$SECS" = 0 ]; then LIMIT=-runs=0; fi
  before=$(find "$DIR/crashes/$T" -type f | wc -l)
  # shellcheck disable=SC2086
  "$BIN" "$DIR/corpus/$T" "fuzz/corpus/$T" "$LIMIT" \
    -timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$DIR/crashes/$T/" \
    ${SOLDER_FUZZ_ARGS:-} >"$LOG" 2>&1 || RC=$?
  local EXECS
  EXECS=$( (grep -h 'stat::number_of_executed_units' "$LOG" || true) |
    awk '{s += $2} END {print s + 0}')
  after=$(find "$DIR/crashes/$T" -type f | wc -l)
  local CRASHES=$((after - before))
  if [ "$RC" -ne 0 ] || [ "$CRASHES" -ne 0 ]; then
    FAIL=1
    {
      echo "$T: failed (exit $RC); log $LOG; inputs in $DIR/crashes/$T/"
      grep -m3 -E 'ERROR: |SUMMARY: |runtime error' "$LOG" || true
    } >>"$DIR/logs/$T.summary"
  fi
  printf '%-14s %12s executions %3s crashes  %5ss\n' "$T" "$EXECS" \
    "$CRASHES" "$SECS" >>"$DIR/logs/$T.summary"
  echo $FAIL >"$DIR/logs/$T.status"
}

# SOLDER_FUZZ_PARALLEL targets at a time (CI: one per core), each one
# process.
mkdir -p "$DIR/logs"
PARALLEL=${SOLDER_FUZZ_PARALLEL:-1}
for T in "${TARGETS[@]}"; do
  echo 1 >"$DIR/logs/$T.status"
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || true; done
  run_target "$T" &
done
wait
FAILED=0
for T in "${TARGETS[@]}"; do
  cat "$DIR/logs/$T.summary"
  if [ "$(cat "$DIR/logs/$T.status")" != 0 ]; then FAILED=1; fi
done
exit $FAILED
