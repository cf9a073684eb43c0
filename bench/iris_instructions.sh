#!/bin/sh
# Instructions per training step of the iris-sized net through
# Estimator::train (issue 32's small step), counted, not timed:
#
#   bench/iris_instructions.sh [BUILD_DIR]     (default: build)
#
# Runs BUILD_DIR/bin/estimator_bench --models=iris --threads=1
# --iterations_per_loop=1 under valgrind's callgrind for 12,000 and for
# 22,000 steps and prints (instructions of the second - of the first) /
# 10,000: the start-up and the checkpoint at the end cancel out. A short
# run under valgrind first fills the JIT cache (its key holds the CPU's
# features, which valgrind reports differently), so that neither counted
# run compiles. The machine's load and speed do not change the
# count (docs/results.md, the iris-sized step).
set -eu

build=${1:-build}
bench="$build/bin/estimator_bench"
[ -x "$bench" ] || { echo "iris_instructions.sh: no $bench (build it first)" >&2; exit 2; }
command -v valgrind > /dev/null ||
  { echo "iris_instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lscpu | sed -n 's/^Model name: *//p'
valgrind --tool=none --trace-children=yes "$bench" --models=iris --threads=1 \
  --iterations_per_loop=1 --warmup=10 --steps=100 > /dev/null 2>&1
for n in 12000 22000; do
  mkdir "$work/$n"
  valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/$n/cg.%p" "$bench" --models=iris --threads=1 \
    --iterations_per_loop=1 --warmup=10 --steps=$n > /dev/null 2>&1
done
# The training process is the largest count (estimator_bench re-executes
# itself pinned).
count() { grep -h '^summary:' "$work/$1"/cg.* | awk '{print $2}' | sort -n | tail -1; }
a=$(count 12000)
b=$(count 22000)
echo "instructions/step: $(( (b - a) / 10000 ))"
