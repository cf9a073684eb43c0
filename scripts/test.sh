#!/usr/bin/env bash
# Sets up, checks the formatting (scripts/check-format.sh), builds with
# warnings as errors, and runs every test: GoogleTest unit tests, the lit
# suite, the end-to-end tests and the out-of-tree package test; then the
# runtime side's unit tests again under ASan+UBSan (the `runtime` label:
# every unit test that links no LLVM/MLIR: parsers, data, runtime kernels,
# checkpoints, summaries, hooks, feature columns, serving) in the `fuzz`
# preset's build (clang-22, ASan+UBSan, libFuzzer's coverage), then fuzzes
# every parser of untrusted input for 5 s each after replaying its corpus,
# from the same build (scripts/fuzz.sh; docs/fuzzing.md).
#
#   scripts/test.sh                    what CI runs (.ci/run)
#   scripts/test.sh --all-sanitizers   the sanitizer leg over the whole tree
#                                      (the compiler, the JIT and AOT tests,
#                                      the lit suite: 20 more minutes on 2
#                                      cores; run before a change is merged)
set -euo pipefail
cd "$(dirname "$0")/.."
all_sanitizers=0
for arg in "$@"; do
  case $arg in
    --all-sanitizers) all_sanitizers=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
./scripts/install-deps.sh --fuzz --tables
./scripts/check-format.sh
# Independent readers of our file formats, used as cross-checks by the tests
# (Python's safetensors and TensorBoard, from PyPI). Optional: the tests that
# use them print SKIP when they are missing.
# TF 2.15 (and numpy < 2, which it needs) is the oracle of the input
# pipeline's compatibility tests (records.tf_compat, data.tf_csv_compat).
# TF Serving's Python client (tensorflow-serving-api) is the gRPC client of
# serving.grpc_client_e2e; --no-deps: it asks for the `tensorflow` package
# and would replace tensorflow-cpu 2.15.1 (it needs only grpcio, which TF
# brings). Downloaded while the Release leg compiles (the network, not the
# cores).
(python3 -m pip install -q --disable-pip-version-check safetensors \
  tensorboard tensorflow-cpu==2.15.1 "numpy<2" &&
  python3 -m pip install -q --disable-pip-version-check --no-deps \
    tensorflow-serving-api==2.15.1) >/dev/null 2>&1 &
pip_pid=$!
./scripts/configure.sh
cmake --build build -j"$(nproc)"
wait "$pip_pid" ||
  echo "test.sh: safetensors/tensorboard/tensorflow/tensorflow-serving-api unavailable; their cross-checks will be skipped"
if ! ctest --test-dir build --output-on-failure -j"$(nproc)"; then
  # CI keeps only the end of the log: the failed tests once more, alone,
  # with their output last (a pass here still fails the run: a flaky test).
  echo "test.sh: the failed tests, run again alone:"
  ctest --test-dir build --rerun-failed --output-on-failure || true
  exit 8
fi

# Sanitizer leg. In CI, one clang-22 build with ASan+UBSan and libFuzzer's
# coverage (the fuzz preset, build-fuzz/) holds the runtime side's unit
# tests (`estc_runtime_unittests`, `ctest -L runtime`: every unit test that
# links no LLVM/MLIR) and the fuzz targets, which share its instrumented
# libraries; the compiler's code is MLIR passes the lit suite and the
# verifier check, and a whole second build of it does not fit CI's 25
# minutes. With --all-sanitizers, the asan-ubsan preset (g++) builds the
# whole tree and runs the lit suite and every test but the training runs
# that only check learning (MNIST, Titanic, the Keras example), crash safety
# and determinism, single and distributed (they run above; under ASan they
# take ~12 minutes); the comparisons with TF 2.15 (*.tf_*compat,
# models.tf_parity, the signatures; TF's side is Python, estc's side runs
# under the sanitizers in the unit tests), the served Titanic, the docs'
# compile-only check, the bench smoke runs (the preset does not build bench/)
# and the out-of-tree package build, the every-canned-estimator export round
# trip (the other SavedModelTest cases and serving.estc_serve_e2e run the
# same code), and the CUDA PTX of every op (the compiler's GPU passes run
# under the sanitizers in the lit suite and CudaTargetTest).
# allow_user_poisoning=0: instrumented inline LLVM allocator code and the
# uninstrumented libMLIR share allocators (docs/conventions.md).
build_env=(env ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0)
if [[ $all_sanitizers == 1 ]]; then
  "${build_env[@]}" cmake --preset asan-ubsan >/dev/null
  "${build_env[@]}" cmake --build build-asan-ubsan -j"$(nproc)"
  ctest --preset asan-ubsan -j"$(nproc)" \
    -E '^(fashion_mnist\.(aot_learns_mnist|jit_learns_mnist|sigkill_restart|sigkill_restart_tf|sigkill_restart_tfrecord|deterministic)|distributed\.(fashion_mnist_2|relaunch_2)|MnistLearningTest\..*|titanic\.(jit_accuracy_near_tf|aot_matches_jit)|serving\.(tf_signatures_oracle|tf_signatures_compat|titanic_classify)|[a-z_]+\.tf_[a-z_]*compat|models\.tf_parity|keras\.example|docs\.snippets_compile|bench\..*|package\.out_of_tree|SavedModelTest\.EveryCannedEstimatorServesWhatItPredicts|cuda\.every_op_compiles_to_ptx)$'
fi
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target estc_runtime_unittests estc_fuzzers
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-fuzz --output-on-failure -j"$(nproc)" -L runtime

# Fuzzing: the checked-in corpora and regressions, then 5 s per target
# (longer runs: scripts/fuzz.sh --time=60, docs/fuzzing.md).
./scripts/fuzz.sh --no-build --time=5 --parallel="$(nproc)"
