#!/bin/sh
# Issue 28's models: estc beside TF 2.15's Estimator in one run, with ratios:
#
#   bench/toolbox.sh [BUILD_DIR]            (default: build)
#
# PARTS (default: resnet,bert): for each, TF's Estimator (bench/tf_toolbox_peer.py,
# the model of bench/tf_toolbox_models.py) and estc's Estimator::train
# (BUILD_DIR/bin/toolbox_bench), each thread count in a process of its own
# pinned to that many cores; REPEAT rounds, alternating the peers (the
# table takes the median of each cell and shows the range).
#   resnet: examples/fashion_mnist/ResNetModel.h at its defaults, batch 128.
#   bert: BERT-mini (examples/sst2/Bert.h, sequence 128), batch 32.
# Prints the CPU, the load average before each run, every JSON line and a
# table per part: steps/s (wall clock) and CPU ms per step, estc / TF.
# Environment: PARTS, THREADS (1,2), REPEAT (3), WARMUP (5), STEPS (30),
# BATCH (each part's default).
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
parts=${PARTS:-resnet,bert}
threads=${THREADS:-1,2}
repeat=${REPEAT:-3}
warmup=${WARMUP:-5}
steps=${STEPS:-30}
batch=${BATCH:-}

bench="$build/bin/toolbox_bench"
if [ ! -x "$bench" ]; then
  echo "toolbox.sh: $bench is not built (ninja -C $build toolbox_bench)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs)"
load() { echo "load average before $1: $(cut -d' ' -f1-3 /proc/loadavg)"; }

for part in $(echo "$parts" | tr ',' ' '); do
  r=1
  while [ "$r" -le "$repeat" ]; do
    load "TF $part (round $r)"
    python3 "$here/tf_toolbox_peer.py" --part "$part" --threads "$threads" \
      --warmup "$warmup" --steps "$steps" ${batch:+--batch "$batch"} |
      tee -a "$out/all.jsonl"
    load "estc $part (round $r)"
    "$bench" --part="$part" --threads="$threads" --warmup="$warmup" \
      --steps="$steps" ${batch:+--batch="$batch"} | grep '^{' | tee -a "$out/all.jsonl"
    r=$((r + 1))
  done
done

python3 - "$out/all.jsonl" "$here" <<'PY'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]

sys.path.insert(0, sys.argv[2])
from peer_runs import cell, median  # noqa: E402

for part in sorted({r["part"] for r in rows}):
    mine = [r for r in rows if r["part"] == part]
    print()
    print("%s, batch %d, median of rounds (range):" % (part, mine[0]["batch"]))
    print("| threads | TF steps/s | estc steps/s | estc / TF | TF CPU ms/step "
          "| estc CPU ms/step | TF / estc (CPU) | peak RSS MiB TF / estc |")
    print("|---|---|---|---|---|---|---|---|")
    for t in sorted({r["threads"] for r in mine}):
        tf = [r for r in mine if r["peer"] == "tf_estimator" and r["threads"] == t]
        es = [r for r in mine if r["peer"] == "estc" and r["threads"] == t]
        tfs, tfsText = cell(tf, "steps_per_sec")
        ess, essText = cell(es, "steps_per_sec")
        tfc, tfcText = cell(tf, "cpu_ms_per_step")
        esc, escText = cell(es, "cpu_ms_per_step")
        rss = lambda runs: "%.0f" % median([r["peak_rss_mib"] for r in runs]) if runs else "-"
        print("| %d | %s | %s | %s | %s | %s | %s | %s / %s |" % (
            t, tfsText, essText, "%.2fx" % (ess / tfs) if ess and tfs else "-",
            tfcText, escText, "%.2fx" % (tfc / esc) if esc and tfc else "-",
            rss(tf), rss(es)))
PY
