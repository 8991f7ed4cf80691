#!/usr/bin/env bash
# Configures and builds solder. Usage: tools/build.sh [release|asan] [BUILD_DIR]
#   release (default): optimized, warnings are errors, into build/
#   asan: AddressSanitizer + UBSan, into build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:-release}
case "$KIND" in
  release) DIR=${2:-build}; FLAGS="-DCMAKE_BUILD_TYPE=Release" ;;
  asan) DIR=${2:-build-asan}; FLAGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOLDER_SANITIZE=ON" ;;
  *) echo "usage: $0 [release|asan] [BUILD_DIR]" >&2; exit 2 ;;
esac
GEN=""
if command -v ninja >/dev/null; then GEN="-G Ninja"; fi
cmake -S . -B "$DIR" $GEN $FLAGS -DSOLDER_WERROR=ON >/dev/null
cmake --build "$DIR" -j"$(nproc)"
