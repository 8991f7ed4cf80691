#!/usr/bin/env bash
# Builds solder and runs the whole test suite (unit tests, ONNX conformance
# on the reference backend, model checks against onnxruntime).
# Usage: tools/test.sh [release|asan]
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:-release}
DIR=build
if [ "$KIND" = asan ]; then DIR=build-asan; fi
tools/build.sh "$KIND" "$DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$DIR"
ctest --output-on-failure -j"$(nproc)" --timeout 1500
