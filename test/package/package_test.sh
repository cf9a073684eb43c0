#!/usr/bin/env bash
# package_test.sh BUILD_DIR EXAMPLE_DIR WORK_DIR GENERATOR CXX LAUNCHER
#                 BUILD_TYPE CXX_FLAGS
#
# Installs BUILD_DIR into WORK_DIR/prefix (WORK_DIR is emptied first),
# builds the out-of-tree project EXAMPLE_DIR against it with only
# CMAKE_PREFIX_PATH pointing at estc, and checks that
#   - the installed programs and the example use the installed
#     libEstcRuntime.so, not the build tree's,
#   - the AOT trainer links no LLVM/MLIR,
#   - both trainers learn (each exits 0 only when it does).
set -euo pipefail
build=$1 example=$2 work=$3 generator=$4 cxx=$5 launcher=$6 build_type=$7
cxx_flags=$8
prefix=$work/prefix

fail() { echo "FAIL: $*"; exit 1; }
# Runs a step quietly; shows its output when it fails.
step() {
  local log=$1; shift
  "$@" >"$work/$log" 2>&1 || { cat "$work/$log"; fail "$*"; }
}

rm -rf "$work"
mkdir -p "$work"
step install.log cmake --install "$build" --prefix "$prefix"
echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"

runtime_of() { realpath "$(ldd "$1" | awk '/libEstcRuntime/ {print $3}')"; }
[[ $(runtime_of "$prefix/bin/estc") == "$prefix"/lib*/libEstcRuntime.so ]] ||
  fail "installed estc does not load the installed runtime: $(runtime_of "$prefix/bin/estc")"

step configure.log cmake -G "$generator" -S "$example" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_FLAGS="$cxx_flags"
step build.log cmake --build "$work/build" -j2
grep -q "estc: compiling" "$work/build.log" || fail "estc_add_model did not run"
grep -rqs --include=build.ninja --include=build.make -- "$prefix/bin/estc " \
  "$work/build" || fail "estc_add_model did not run the installed estc"
echo "configured and built $example"

aot=$work/build/classifier_aot jit=$work/build/classifier_jit
[[ $(runtime_of "$aot") == "$prefix"/lib*/libEstcRuntime.so ]] ||
  fail "classifier_aot does not load the installed runtime: $(runtime_of "$aot")"
! ldd "$aot" | grep -E 'lib(LLVM|MLIR)' || fail "classifier_aot links LLVM/MLIR"

export ESTC_CACHE_DIR=$work/jit-cache
"$jit"
"$aot"
