#!/usr/bin/env bash
# Input pipeline: estc (lib/Data) vs tf.data, side by side in one run.
#
# Builds nothing: build the estc half first
#   ninja -C build input_pipeline_bench
# then run
#   bash bench/input_pipeline.sh [BUILD_DIR]      (default: build)
#
# bench/input_pipeline_bench.cpp writes the data once into $WORK_DIR
# (default /tmp/estc-input-pipeline: a census-like table of 32768 rows as
# TFRecord and CSV, and a 1 GiB TFRecord file for the memory line); both
# peers read the same files. Every (pipeline, threads) row runs estc and
# then tf.data (bench/tf_data_peer.py), each in a fresh process, and prints
# records/s of the median of $PASSES passes after a warm-up. The tf.data
# column reads SKIP when `import tensorflow` fails.
#
# Environment: WORK_DIR, PASSES (3), BATCH (512), THREADS ("1 2"),
# PIPELINES ("tfrecord csv csv_dataset"), PYTHON (python3).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bench=$build/bin/input_pipeline_bench
peer=$root/bench/tf_data_peer.py
work=${WORK_DIR:-/tmp/estc-input-pipeline}
passes=${PASSES:-3}
batch=${BATCH:-512}
threads=${THREADS:-1 2}
python=${PYTHON:-python3}

if [[ ! -x $bench ]]; then
  echo "input_pipeline.sh: $bench is missing; build it first:" \
    "ninja -C $build input_pipeline_bench" >&2
  exit 1
fi

pipelines=${PIPELINES:-tfrecord csv csv_dataset}

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "CPU: $cpu ($(nproc) cores online), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: $work; batch $batch; records/s of the median of $passes passes after one warm-up"

start=$SECONDS
"$bench" --work_dir="$work" --mode=prepare
echo "data ready in $((SECONDS - start)) s"

# The number of a RESULT line, or the reason of a SKIP line.
field() { # output mode
  local line
  line=$(grep -E '^(RESULT|SKIP)' <<<"$1" | tail -1)
  if [[ $line == SKIP* ]]; then echo SKIP; else awk '{print $4}' <<<"$line"; fi
}

echo
echo "| pipeline | threads | estc records/s | tf.data records/s | estc / tf.data |"
echo "|---|---|---|---|---|"
for pipeline in $pipelines; do
  for t in $threads; do
    estc_out=$(ESTC_DATA_THREADS=$t "$bench" --work_dir="$work" \
      --mode="$pipeline" --threads="$t" --passes="$passes" --batch="$batch")
    tf_out=$(TF_CPP_MIN_LOG_LEVEL=2 "$python" "$peer" --work_dir="$work" \
      --mode="$pipeline" --threads="$t" --passes="$passes" \
      --batch="$batch" 2>/dev/null || echo "SKIP tf_data_peer.py failed")
    e=$(field "$estc_out")
    f=$(field "$tf_out")
    if [[ $f == SKIP || -z $f ]]; then
      ratio=-
      f=SKIP
    else
      ratio=$(awk -v a="$e" -v b="$f" 'BEGIN{printf "%.2fx", a / b}')
    fi
    case $pipeline in
    tfrecord) name="TFRecord -> batch($batch) -> parse_example (15 FixedLen)" ;;
    csv) name="TextLine -> skip(1) -> batch($batch) -> decode_csv (15 cols)" ;;
    csv_dataset) name="CsvDataset(header) -> batch($batch) (15 cols; no map)" ;;
    esac
    echo "| $name | $t | $e | $f | $ratio |"
  done
done

echo
# Memory: streaming the big file through TFRecordDataset -> prefetch(4).
mem_line() { # label output
  local line
  line=$(grep -E '^(MEMORY|SKIP)' <<<"$2" | tail -1)
  if [[ -z $line || $line == SKIP* ]]; then
    echo "memory, $1: SKIP"
    return
  fi
  awk -v who="$1" '{
    printf "memory, %s: TFRecordDataset -> prefetch(4) over %.0f MiB (%d records) in %.1f s: peak RSS %.1f MiB (%.1f MiB before reading)\n",
      who, $2 / 1048576, $5, $6, $4 / 1048576, $3 / 1048576 }' <<<"$line"
}
mem_line estc "$("$bench" --work_dir="$work" --mode=memory)"
mem_line tf.data "$(TF_CPP_MIN_LOG_LEVEL=2 "$python" "$peer" \
  --work_dir="$work" --mode=memory 2>/dev/null || echo SKIP)"
