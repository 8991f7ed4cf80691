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
# intercept_tls_get_addr=0: LLVM 14's __tls_get_addr interceptor takes any
# dynamic TLS block that starts 16 bytes into a page for a glibc-2.19 block
# and reads its "start" and "size" from the 16 bytes before it, which on
# glibc >= 2.25 are ASan's chunk header. LeakSanitizer's tracer then scans
# that garbage range and dies ("Tracer caught signal 11") at exit.
# libnvrtc.so.13, which we dlopen, has a 32-byte TLS block; where malloc put
# it decided which NVRTC test crashed. glibc allocates such blocks with
# malloc and points at them from the thread's DTV, so leaks are still found
# without the interceptor (checked with a planted leak).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$DIR"
ctest --output-on-failure -j"$(nproc)" --timeout 1500
