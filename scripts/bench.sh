#!/usr/bin/env bash
# Builds estc with the benchmark peers (libtorch with OpenBLAS, from Debian)
# and runs the side-by-side benchmarks. Results: docs/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --bench
for threads in 1 2; do
  build/bin/model_bench --threads="$threads"
  echo
done
