#!/usr/bin/env bash
# Sets up, checks the formatting (scripts/check-format.sh), builds with
# warnings as errors, and runs every test: GoogleTest unit tests, the lit
# suite, the end-to-end tests and the out-of-tree package test. Then fuzzes
# every parser of untrusted input for 30 s each (scripts/fuzz.sh, the
# `fuzz` preset: clang-22, ASan+UBSan; docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --fuzz
./scripts/check-format.sh
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DESTC_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
# Independent readers of our file formats, used as cross-checks by the tests
# (Python's safetensors and TensorBoard, from PyPI). Optional: the tests that
# use them print SKIP when they are missing.
python3 -m pip install -q --disable-pip-version-check safetensors tensorboard \
  >/dev/null 2>&1 || echo "test.sh: safetensors/tensorboard unavailable; their cross-checks will be skipped"
ctest --test-dir build --output-on-failure -j"$(nproc)"

# Fuzzing: the checked-in corpora and regressions, then 30 s per target.
./scripts/fuzz.sh --time=30 --parallel="$(nproc)"
