#!/usr/bin/env bash
# Sets up, checks the formatting (scripts/check-format.sh), builds with
# warnings as errors, and runs every test: GoogleTest unit tests, the lit
# suite, the end-to-end tests and the out-of-tree package test; then the unit
# tests and the lit suite again under ASan+UBSan; then fuzzes
# every parser of untrusted input for 15 s each (scripts/fuzz.sh, the
# `fuzz` preset: clang-22, ASan+UBSan; docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --fuzz --tables
./scripts/check-format.sh
# Independent readers of our file formats, used as cross-checks by the tests
# (Python's safetensors and TensorBoard, from PyPI). Optional: the tests that
# use them print SKIP when they are missing.
# TF 2.15 (and numpy < 2, which it needs) is the oracle of the input
# pipeline's compatibility tests (records.tf_compat, data.tf_csv_compat).
# Downloaded while the Release leg compiles (the network, not the cores).
python3 -m pip install -q --disable-pip-version-check safetensors tensorboard \
  tensorflow-cpu==2.15.1 "numpy<2" >/dev/null 2>&1 &
pip_pid=$!
./scripts/configure.sh
cmake --build build -j"$(nproc)"
wait "$pip_pid" ||
  echo "test.sh: safetensors/tensorboard/tensorflow unavailable; their cross-checks will be skipped"
ctest --test-dir build --output-on-failure -j"$(nproc)"

# Sanitizer leg: the unit tests and the lit suite built with ASan+UBSan (the
# asan-ubsan preset), all but the training runs that only check learning
# (MNIST, Titanic), crash safety and determinism, single and distributed
# (they run above; under ASan they take ~12 minutes); the comparisons with TF 2.15 (*.tf_*compat, models.tf_parity, the signatures; TF's
# side is Python, estc's side runs under the sanitizers in the unit tests),
# the served Titanic, the docs' compile-only check, the bench smoke runs (the
# preset does not even build bench/: ESTC_BUILD_BENCHMARKS=OFF) and
# the out-of-tree package build (nothing the sanitizers see that the unit
# tests do not), and the every-canned-estimator export round trip (the
# other SavedModelTest cases and serving.estc_serve_e2e run the same code),
# and the CUDA PTX of every op (the compiler's GPU passes run under the
# sanitizers in the lit suite and CudaTargetTest). allow_user_poisoning=0: instrumented inline LLVM allocator code
# and the uninstrumented libMLIR share allocators (docs/conventions.md).
ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0 cmake --preset asan-ubsan >/dev/null
ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0 cmake --build build-asan-ubsan -j"$(nproc)"
ctest --preset asan-ubsan -j"$(nproc)" \
  -E '^(fashion_mnist\.(aot_learns_mnist|jit_learns_mnist|sigkill_restart|sigkill_restart_tfrecord|deterministic)|distributed\.(fashion_mnist_2|relaunch_2)|MnistLearningTest\..*|titanic\.(jit_accuracy_near_tf|aot_matches_jit)|serving\.(tf_signatures_oracle|tf_signatures_compat|titanic_classify)|[a-z_]+\.tf_[a-z_]*compat|models\.tf_parity|docs\.snippets_compile|bench\..*|package\.out_of_tree|SavedModelTest\.EveryCannedEstimatorServesWhatItPredicts|cuda\.every_op_compiles_to_ptx)$'

# Fuzzing: the checked-in corpora and regressions, then 15 s per target.
./scripts/fuzz.sh --time=15 --parallel="$(nproc)"
