#!/usr/bin/env bash
# The one configuration of ./build that the README's two commands share
# (scripts/main.sh builds only what it runs from it, scripts/test.sh all of
# it): Release, warnings as errors (Debian 12's g++ 12 is the compiler;
# -Werror changes no object code, so the two commands never rebuild each
# other's work); the unit tests' own sources at -O0 (their code is glue
# around the libraries they test, which keep -O3; -O0 compiles them in
# about 40% of -O1's time and 25% of -O3's: GraphBuilderTest.cpp 7.7 s
# against 19.3 s at -O1, docs/results.md "CI time"); each target's sources
# compiled in batches (ESTC_UNITY_BUILD: a cold build's compile time,
# docs/results.md "CI time"; -DESTC_UNITY_BUILD=OFF when editing). Extra
# arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DESTC_WERROR=ON \
  -DESTC_UNITTEST_COMPILE_OPTIONS=-O0 -DESTC_UNITY_BUILD=ON "$@" >/dev/null
