#!/usr/bin/env bash
# Sets up, builds and runs every test: GoogleTest unit tests and the lit suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
