#!/usr/bin/env bash
# Installs every build and test dependency of estc from Debian 12's packages.
# Idempotent: packages that are already installed are skipped, and apt is not
# touched at all when nothing is missing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ python3 lld
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libeigen3-dev libprotobuf-dev protobuf-compiler libpng-dev
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libfarmhash-dev
  clang-format-22
  libcpp-httplib-dev rapidjson-dev curl wrk
  libgrpc++-dev protobuf-compiler-grpc
  libhdf5-dev libzip-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  libdnnl-dev
)
# Extra package groups, selected by flags.
# The peer for benchmarks: libtorch, with OpenBLAS (not the reference BLAS).
if [[ " $* " == *" --bench "* ]]; then PACKAGES+=(libtorch-dev libopenblas0-pthread); fi
# Data sets from Debian: Fashion-MNIST, and sklearn's small tables (iris,
# wine, breast_cancer CSVs that bench/sklearn_baseline.py reads).
if [[ " $* " == *" --data "* ]]; then PACKAGES+=(dataset-fashion-mnist python3-sklearn); fi
# sklearn's tables alone: the canned estimators' tests train on them.
if [[ " $* " == *" --tables "* ]]; then PACKAGES+=(python3-sklearn); fi
# clang and its compiler-rt (libFuzzer, sanitizers) for the fuzz preset
# (docs/fuzzing.md).
if [[ " $* " == *" --fuzz "* ]]; then PACKAGES+=(clang-22 libclang-rt-22-dev); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
