#!/usr/bin/env bash
# The one configuration of ./build that the README's two commands share
# (scripts/main.sh builds only what it runs from it, scripts/test.sh all of
# it): Release, warnings as errors (Debian 12's g++ 12 is the compiler;
# -Werror changes no object code, so the two commands never rebuild each
# other's work); the unit tests' own sources at -O1 (their code is glue
# around the libraries they test, which keep -O3; -O1 compiles them in
# about 60% of the time). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DESTC_WERROR=ON \
  -DESTC_UNITTEST_COMPILE_OPTIONS=-O1 "$@" >/dev/null
