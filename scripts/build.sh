#!/usr/bin/env bash
# Installs the dependencies (Debian packages) and builds estc into ./build
# (scripts/configure.sh's configuration). Flags go to install-deps.sh;
# `--target T` (repeatable) builds only T and what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=() targets=()
while (($#)); do
  if [[ $1 == --target ]]; then targets+=(--target "$2"); shift 2
  else deps+=("$1"); shift; fi
done
./scripts/install-deps.sh "${deps[@]}"
./scripts/configure.sh
cmake --build build -j"$(nproc)" "${targets[@]}"
