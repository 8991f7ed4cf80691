#!/usr/bin/env bash
# Configures and builds solder.
# Usage: tools/build.sh [release|asan] [BUILD_DIR] [TARGET...]
#   release (default): optimized, warnings are errors, into build/
#   asan: clang with AddressSanitizer + UBSan and libFuzzer's coverage
#     hooks, into build-asan/. One instrumented build serves both the
#     sanitizer test run (tools/test.sh asan) and the fuzz targets
#     (tools/fuzz.sh builds its targets into the same folder), so CI
#     compiles the project twice, not three times. Line tables only: full
#     debug info doubled the build time and stack traces need no more.
#   TARGET: build only these (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:-release}
case "$KIND" in
  release)
    DIR=${2:-build}
    FLAGS=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)
    DIR=${2:-build-asan}
    export CC=${CLANG:-clang-14} CXX=${CLANGXX:-clang++-14}
    DBG="-O1 -gline-tables-only"
    FLAGS=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=$DBG"
           "-DCMAKE_C_FLAGS_DEBUG=$DBG" -DSOLDER_SANITIZE=ON -DSOLDER_FUZZ=ON) ;;
  *) echo "usage: $0 [release|asan] [BUILD_DIR] [TARGET...]" >&2; exit 2 ;;
esac
shift $(($# < 2 ? $# : 2))
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
cmake -S . -B "$DIR" "${GEN[@]}" "${FLAGS[@]}" -DSOLDER_WERROR=ON >/dev/null
TARGETS=()
if [ $# -gt 0 ]; then TARGETS=(--target "$@"); fi
cmake --build "$DIR" -j"${SOLDER_BUILD_JOBS:-$(nproc)}" "${TARGETS[@]}"
