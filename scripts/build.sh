#!/usr/bin/env bash
# Installs the dependencies (Debian packages) and builds estc into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh "$@"
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
