#!/usr/bin/env bash
# Prepares a build folder to be carried to the GPU machine (see
# ../shared/device/README.md): copies the shared libraries that machine
# lacks into BUILD/bundle-libs, strips the binaries, and (with a shared
# folder given) packs the ONNX suites and models into BUILD/shared-data.tar.xz
# for tools/gpu-test.sh. Object files stay behind: carry only
#   BUILD/tools/solder BUILD/tests BUILD/bundle-libs [BUILD/examples]
#   [BUILD/shared-data.tar.xz]
# (or the whole BUILD when it is small enough).
#
# Usage: tools/bundle-for-device.sh [BUILD_DIR] [SHARED_DIR]
set -euo pipefail
BUILD=${1:-build}
SHARED=${2:-}
[ -d "$BUILD" ] || { echo "error: no build folder '$BUILD'" >&2; exit 2; }

mkdir -p "$BUILD/bundle-libs"
# OpenBLAS (CPU reference executor) and its Fortran runtime come along too,
# in case the machine lacks them.
for lib in libonnx_proto.so.1 libprotobuf.so.32 libopenblas.so.0 \
           libgfortran.so.5 libquadmath.so.0; do
  src=""
  for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
    [ -e "$dir/$lib" ] && { src="$dir/$lib"; break; }
  done
  [ -n "$src" ] || { echo "error: $lib not found" >&2; exit 2; }
  cp -L "$src" "$BUILD/bundle-libs/"
done

for bin in "$BUILD/tools/solder" "$BUILD"/tests/solder_*_tests \
           "$BUILD/examples/classify" "$BUILD"/python/solder/_solder*.so; do
  [ -f "$bin" ] && strip --strip-unneeded "$bin"
done

if [ -n "$SHARED" ]; then
  # The ONNX suites are thousands of small files; xz keeps the whole carry
  # under the device tool's 64 MiB.
  tar cf - -C "$SHARED" $(cd "$SHARED" && ls -d models onnx-tests 2>/dev/null) |
    xz -T0 -6 > "$BUILD/shared-data.tar.xz"
fi
# BUILD/carry holds just what the GPU machine needs, in the layout
# tools/gpu-test.sh expects: name it in the device tool's `carry` and run
# `tools/gpu-test.sh BUILD/carry` there.
rm -rf "$BUILD/carry"
mkdir -p "$BUILD/carry/tools" "$BUILD/carry/tests" "$BUILD/carry/examples"
cp "$BUILD/tools/solder" "$BUILD/carry/tools/"
# Only the GPU test binary: the other suites run on the CPU machine.
cp "$BUILD"/tests/solder_runtime_tests "$BUILD/carry/tests/"
if [ -f "$BUILD/examples/classify" ]; then
  cp "$BUILD/examples/classify" "$BUILD/carry/examples/"
fi
# The Python module (stable ABI: imports on the GPU machine's Python 3.12).
if [ -d "$BUILD/python/solder" ]; then
  mkdir -p "$BUILD/carry/python"
  cp -r "$BUILD/python/solder" "$BUILD/carry/python/"
fi
tar cf - -C "$BUILD" bundle-libs | xz -T0 -6 > "$BUILD/carry/bundle-libs.tar.xz"
if [ -n "$SHARED" ]; then cp "$BUILD/shared-data.tar.xz" "$BUILD/carry/"; fi
du -sh "$BUILD/carry"/* "$BUILD/carry" 2>/dev/null
