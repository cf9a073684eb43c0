#!/usr/bin/env bash
# Sets up, builds and runs every test: GoogleTest unit tests and the lit suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
# Independent readers of our file formats, used as cross-checks by the tests
# (Python's safetensors and TensorBoard, from PyPI). Optional: the tests that
# use them print SKIP when they are missing.
python3 -m pip install -q --disable-pip-version-check safetensors tensorboard \
  >/dev/null 2>&1 || echo "test.sh: safetensors/tensorboard unavailable; their cross-checks will be skipped"
ctest --test-dir build --output-on-failure -j"$(nproc)"
