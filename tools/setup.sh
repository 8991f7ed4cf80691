#!/usr/bin/env bash
# From a fresh Debian 12 machine to a model running: installs the
# dependencies, builds solder, and runs a bundled model on the CPU reference
# backend.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh release
build/tools/solder run examples/models/tiny_cnn.onnx --backend reference \
  --shape input=1x3x32x32 --random-inputs --seed 0
