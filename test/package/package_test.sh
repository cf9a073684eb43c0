#!/usr/bin/env bash
# package_test.sh BUILD_DIR EXAMPLE_DIR WORK_DIR GENERATOR CXX LAUNCHER
#                 BUILD_TYPE CXX_FLAGS
#
# Installs BUILD_DIR into WORK_DIR/prefix (WORK_DIR is emptied first),
# builds the out-of-tree project EXAMPLE_DIR against it with only
# CMAKE_PREFIX_PATH pointing at estc, and checks that
#   - the installed programs and the example use the installed
#     libEstcRuntime.so, not the build tree's,
#   - the AOT trainer and the serving programs link no LLVM/MLIR,
#   - both custom model_fn trainers learn (each exits 0 only when it does),
#   - the canned estimator learns from its CSV files and exports; its export
#     answers as the Estimator predicted from C++ (serving::SavedModel),
#     from C (the C API found with pkg-config) and over HTTP (the installed
#     estc-serve on a loopback port, TF Serving's :classify with curl),
#   - a component that is not installed, or that does not exist, stops
#     find_package with one line naming it.
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

# Every public header compiles on its own against the install (estc/compiler.h
# with MLIR's headers, estc/c_api.h as C).
for header in "$prefix"/include/estc/estc/*.h; do
  name=estc/$(basename "$header")
  lang=c++ std=-std=c++20
  [[ $name == estc/c_api.h ]] && lang=c std=-std=c11
  echo "#include \"$name\"" | "$cxx" -x "$lang" "$std" -fsyntax-only \
    -I"$prefix/include/estc" -isystem /usr/lib/llvm-22/include - ||
    fail "$name does not compile on its own against the install"
done

# The canned estimator, its export, and the export served three ways.
census=$work/census
mkdir -p "$census"
"$work/build/census_canned" "$census"
export_dir=$(ls -d "$census"/export/[0-9]* | sort | tail -1)
for bin in census_serve census_c_api; do
  ! ldd "$work/build/$bin" | grep -E 'lib(LLVM|MLIR)' || fail "$bin links LLVM/MLIR"
done
"$work/build/census_serve" "$census"
"$work/build/census_c_api" "$census" "$export_dir"

# estc-serve from the install: TF Serving's REST :classify, answered as the
# Estimator predicted (the first row's probability of >50K and class).
serve=$prefix/bin/estc-serve
[[ $(runtime_of "$serve") == "$prefix"/lib*/libEstcRuntime.so ]] ||
  fail "estc-serve does not load the installed runtime: $(runtime_of "$serve")"
"$serve" --model_name=census --model_base_path="$census/export" \
  --rest_api_port=0 --rest_api_host=127.0.0.1 --port_file="$work/port" \
  >"$work/serve.log" 2>&1 &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { cat "$work/serve.log"; fail "estc-serve wrote no port file"; }
first=$(sed -n 2p "$census/served.csv")
IFS=, read -r age education occupation hours _ <<<"$first"
# JSON tf.Example as TF Serving reads it: a number with a point is a
# float_list, without one an int64_list.
[[ $age == *.* ]] || age=$age.0
[[ $hours == *.* ]] || hours=$hours.0
request='{"examples": [{"age": '$age', "education": "'$education'", "occupation": "'$occupation'", "hours": '$hours'}]}'
reply=$(curl -s --max-time 30 -X POST -H 'Content-Type: application/json' \
  -d "$request" "http://127.0.0.1:$(cat "$work/port")/v1/models/census:classify") ||
  fail "curl could not reach estc-serve"
read -r want_p want_class < "$census/expected_predictions.txt"
python3 - "$reply" "$want_p" "$want_class" <<'PY' || fail "estc-serve's :classify: $reply"
import json, sys
reply, want_p, want_class = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
pairs = dict(reply["results"][0])
assert abs(pairs[">50K"] - want_p) <= 1e-6, (pairs, want_p)
assert max(pairs, key=pairs.get) == want_class, (pairs, want_class)
print("estc-serve :classify", pairs)
PY
kill -TERM $serve_pid
wait $serve_pid || fail "estc-serve exited $? on SIGTERM"
trap - EXIT

# Components: one that is not installed, and one that does not exist, are
# each one message naming it. The c_api component alone is removed from a copy of the
# install (its targets file and pkg-config file).
partial=$work/partial
cp -a "$prefix" "$partial"
rm "$partial"/lib*/cmake/estc/estc-c_api-targets*.cmake
mkdir -p "$work/components"
cat >"$work/components/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(components LANGUAGES CXX)
find_package(estc CONFIG REQUIRED COMPONENTS ${WANT})
CM
component_error() {
  ! cmake -S "$work/components" -B "$work/components/build-$1" \
    -DCMAKE_PREFIX_PATH="$2" -DWANT="$1" >"$work/components/$1.log" 2>&1 ||
    fail "find_package(estc COMPONENTS $1) did not fail"
  # CMake wraps a message at 80 columns: compare with the lines joined.
  tr '\n' ' ' <"$work/components/$1.log" | tr -s ' ' | grep -F "$3" >/dev/null ||
    { cat "$work/components/$1.log"; fail "no line '$3' for component $1"; }
}
component_error c_api "$partial" "estc: component 'c_api' is not installed in"
component_error nope "$prefix" "estc: no component 'nope' (components: estimator saved_model c_api jit canned keras serving)"
echo "package: every component found, the missing ones named"

# The keras component: estc/keras.h and estc::keras link into a program that
# runs model_to_estimator (on a file that is not a Keras model: its one-line
# KerasError).
mkdir -p "$work/keras_app"
cat >"$work/keras_app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(keras_app LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(estc CONFIG REQUIRED COMPONENTS keras)
add_executable(keras_app keras_app.cpp)
target_link_libraries(keras_app PRIVATE estc::keras)
CM
cat >"$work/keras_app/keras_app.cpp" <<'CPP'
#include "estc/keras.h"
#include <iostream>
int main(int argc, char **argv) {
  try {
    estc::estimator::model_to_estimator(argv[argc - 1]);
  } catch (const estc::keras::KerasError &e) {
    std::cout << "KerasError: " << e.what() << "\n";
    return 0;
  }
  return 1;
}
CPP
step keras_configure.log cmake -G "$generator" -S "$work/keras_app" \
  -B "$work/keras_app/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_FLAGS="$cxx_flags"
step keras_build.log cmake --build "$work/keras_app/build"
echo "not a model" >"$work/keras_app/not_a_model.keras"
"$work/keras_app/build/keras_app" "$work/keras_app/not_a_model.keras" |
  grep -F "KerasError: $work/keras_app/not_a_model.keras: " ||
  fail "keras_app did not report the file as not a Keras model"
echo "package: estc::keras links and runs model_to_estimator"
