#!/usr/bin/env bash
# ConvNet training fed from TFRecord files vs from in-memory arrays.
#
# The issue's goal: training the Fashion-MNIST ConvNet from TFRecord files
# (TFRecordDataset -> shuffle -> batch -> map(parse_example) -> prefetch,
# Trainer.cpp's tfrecordInput) costs at most 5% over numpy_input_fn on the
# same examples already in memory.
#
# Builds nothing: build first
#   ninja -C build fashion_mnist_aot fashion_mnist_to_tfrecord
# then run
#   bash bench/convnet_input.sh [BUILD_DIR]      (default: build)
#
# Writes the training examples once as 4 TFRecord shards into
# $WORK_DIR/tfrecord (fashion_mnist_to_tfrecord, the same --eval_holdout),
# then, per thread count, runs fashion_mnist_aot $RUNS times with arrays and
# $RUNS times with --train_files, alternating (arrays, tfrecord, arrays, ...)
# so that a change in the machine's load hits both alike; every run gets a
# fresh model_dir. Per run it takes the trainer's "wall time:" line (the
# whole run: loading the IDX files, training, the final evaluation) and the
# median of its "global_step/sec" lines (steady training only: each covers
# log_step_count_steps steps after the first). Prints the medians over the
# runs and tfrecord / arrays (time ratio: > 1 means TFRecord is slower).
#
# Environment: DATA_DIR (/work/shared/data/mnist-t10k), WORK_DIR
# (/tmp/estc-convnet-input), RUNS (3), STEPS (300), BATCH (128),
# THREADS ("2 1"), EVAL_HOLDOUT (500).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
trainer=$build/bin/fashion_mnist_aot
converter=$build/bin/fashion_mnist_to_tfrecord
data=${DATA_DIR:-/work/shared/data/mnist-t10k}
work=${WORK_DIR:-/tmp/estc-convnet-input}
runs=${RUNS:-3}
steps=${STEPS:-300}
batch=${BATCH:-128}
threads=${THREADS:-2 1}
holdout=${EVAL_HOLDOUT:-500}

for bin in "$trainer" "$converter"; do
  if [[ ! -x $bin ]]; then
    echo "convnet_input.sh: $bin is missing; build it first:" \
      "ninja -C $build fashion_mnist_aot fashion_mnist_to_tfrecord" >&2
    exit 1
  fi
done

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "CPU: $cpu ($(nproc) cores online), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: $data (eval_holdout $holdout); $steps steps of batch $batch; $runs runs per mode, alternating"

mkdir -p "$work"
if ! compgen -G "$work/tfrecord/train-*" >/dev/null; then
  rm -rf "$work/tfrecord.tmp"
  "$converter" --data_dir="$data" --eval_holdout="$holdout" \
    --out_dir="$work/tfrecord.tmp" --shards=4 >/dev/null
  mv "$work/tfrecord.tmp" "$work/tfrecord"
fi

# Runs the trainer once; prints "<wall seconds> <median global_step/sec>".
run_once() { # mode threads
  local mode=$1 t=$2 dir out extra=()
  dir=$(mktemp -d "$work/model.XXXXXX")
  [[ $mode == tfrecord ]] && extra=(--train_files="$work/tfrecord/train-*")
  if ! out=$("$trainer" --data_dir="$data" --eval_holdout="$holdout" \
    --model_dir="$dir" --train_steps="$steps" --batch_size="$batch" \
    --save_checkpoints_steps=1000 --log_step_count_steps=100 \
    --threads="$t" "${extra[@]}" 2>&1); then
    echo "convnet_input.sh: $mode run failed:" >&2
    tail -5 <<<"$out" >&2
    exit 1
  fi
  rm -rf "$dir"
  local wall rate
  wall=$(sed -n 's/^wall time: \([0-9.e+-]*\) s$/\1/p' <<<"$out" | tail -1)
  rate=$(grep -o 'global_step/sec: [0-9.e+-]*' <<<"$out" | awk '{print $2}' |
    sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "-"}')
  echo "$wall $rate"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo
echo "| threads | arrays wall s (runs) | tfrecord wall s (runs) | tfrecord / arrays, wall | arrays steps/s | tfrecord steps/s | arrays / tfrecord, steps/s |"
echo "|---|---|---|---|---|---|---|"
for t in $threads; do
  declare -A walls=() rates=()
  for ((r = 0; r < runs; ++r)); do
    for mode in arrays tfrecord; do
      read -r w s < <(run_once "$mode" "$t")
      walls[$mode]+="$w "
      rates[$mode]+="$s "
    done
  done
  wa=$(tr ' ' '\n' <<<"${walls[arrays]}" | grep . | median)
  wt=$(tr ' ' '\n' <<<"${walls[tfrecord]}" | grep . | median)
  ra=$(tr ' ' '\n' <<<"${rates[arrays]}" | grep . | median)
  rt=$(tr ' ' '\n' <<<"${rates[tfrecord]}" | grep . | median)
  awk -v t="$t" -v wa="$wa" -v wt="$wt" -v ra="$ra" -v rt="$rt" \
    -v la="${walls[arrays]% }" -v lt="${walls[tfrecord]% }" 'BEGIN {
    printf "| %s | %.2f (%s) | %.2f (%s) | %.3f | %.1f | %.1f | %.3f |\n",
      t, wa, la, wt, lt, wt / wa, ra, rt, ra / rt }'
  unset walls rates
done
