#!/usr/bin/env bash
# Installs what solder needs on Debian 12: the build dependencies from
# Debian's packages, and the Python packages the tests use as oracles.
# The CUDA 13 toolkit is expected in /usr/local/cuda (not a Debian package).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config \
  libprotobuf-dev protobuf-compiler libonnx-dev \
  llvm-14-dev libgtest-dev libopenblas-dev \
  python3 python3-pip python3-dev python3-venv >/dev/null
# The fuzz targets (tools/fuzz.sh): clang with its libFuzzer and sanitizer
# runtimes.
$SUDO apt-get install -y -qq --no-install-recommends \
  clang-14 libclang-rt-14-dev >/dev/null
# Test oracles (onnxruntime), scripts (numpy, onnx) and the backend of
# `pip install .` (scikit-build-core, for the python_wheel test). Debian's
# system Python refuses pip installs unless told otherwise (PEP 668).
PIP_PKGS="numpy onnx onnxruntime scikit-build-core"
python3 -m pip install -q $PIP_PKGS 2>/dev/null ||
  python3 -m pip install -q --break-system-packages $PIP_PKGS
