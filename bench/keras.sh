#!/bin/sh
# Issue 29's benchmarks: MobileNetV2 (96x96x3, 10 classes, batch 32) in
# estc beside tf.keras 2.15 and TF 2.15's model_to_estimator, in one run,
# with ratios:
#
#   bench/keras.sh [BUILD_DIR]            (default: build)
#
# 1. The model saved by tf.keras 2.15 as a .keras file
#    (bench/tf_keras_peer.py --save: keras.applications.MobileNetV2,
#    weights=None, compiled with Adam and sparse categorical cross-entropy).
# 2. train, REPEAT rounds alternating the peers, each thread count of
#    THREADS in a process of its own pinned to that many cores:
#      tf_keras_fit           model.fit (steps_per_epoch, synthetic data in
#                             memory)
#      tf_model_to_estimator  tf.keras.estimator.model_to_estimator(...).train
#      estc model_fn          BUILD_DIR/bin/keras_bench --part=train
#                             (bench/KerasModels.h: the model in estc's graph
#                             builder)
#      estc model_to_estimator  the same with --keras_model=the .keras file
#                             (skipped, with a line, when the build has no
#                             model_to_estimator)
# 3. predict at batch 1, 1 thread: tf.keras predict_on_batch against
#    serving::SavedModel::run of the exported model (model_fn and
#    model_to_estimator).
# 4. dwconv: the depthwise convolutions against a STREAM triad (keras_bench
#    --part=dwconv, THREADS).
# Prints the CPU, the load average before each run, every JSON line and the
# tables: steps/s and CPU ms per step with estc / TF ratios; predict p50
# and mean; each depthwise conv's GB/s against its bound.
# Environment: PARTS (train,predict,dwconv), THREADS (1,2), REPEAT (2),
# WARMUP (3), STEPS (20), CALLS (200).
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
parts=${PARTS:-train,predict,dwconv}
threads=${THREADS:-1,2}
repeat=${REPEAT:-2}
warmup=${WARMUP:-3}
steps=${STEPS:-20}
calls=${CALLS:-200}

bench="$build/bin/keras_bench"
if [ ! -x "$bench" ]; then
  echo "keras.sh: $bench is not built (ninja -C $build keras_bench)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs)"
load() { echo "load average before $1: $(cut -d' ' -f1-3 /proc/loadavg)"; }

model="$out/mobilenet_v2.keras"
python3 "$here/tf_keras_peer.py" --save "$model" 2>/dev/null || true
keras=""
if [ -f "$model" ] && "$bench" --part=train --threads=1 --warmup=1 --steps=1 \
    --keras_model="$model" > /dev/null 2>&1; then
  keras="$model"
else
  echo "keras.sh: estc through model_to_estimator skipped (no .keras file or"
  echo "  keras_bench --keras_model failed)"
fi

has() { echo ",$parts," | grep -q ",$1,"; }

if has train; then
  r=1
  while [ "$r" -le "$repeat" ]; do
    for peer in fit estimator; do
      load "TF $peer (round $r)"
      python3 "$here/tf_keras_peer.py" --part "$peer" --threads "$threads" \
        --warmup "$warmup" --steps "$steps" | tee -a "$out/all.jsonl"
    done
    load "estc model_fn (round $r)"
    "$bench" --part=train --threads="$threads" --warmup="$warmup" \
      --steps="$steps" | grep '^{' | tee -a "$out/all.jsonl"
    if [ -n "$keras" ]; then
      load "estc model_to_estimator (round $r)"
      "$bench" --part=train --threads="$threads" --warmup="$warmup" \
        --steps="$steps" --keras_model="$keras" | grep '^{' |
        tee -a "$out/all.jsonl"
    fi
    r=$((r + 1))
  done
fi
if has predict; then
  load "TF predict_on_batch"
  python3 "$here/tf_keras_peer.py" --part predict --threads 1 \
    --calls "$calls" | tee -a "$out/all.jsonl"
  load "estc SavedModel::run"
  "$bench" --part=predict --threads=1 --calls="$calls" | grep '^{' |
    tee -a "$out/all.jsonl"
  if [ -n "$keras" ]; then
    "$bench" --part=predict --threads=1 --calls="$calls" \
      --keras_model="$keras" | grep '^{' | tee -a "$out/all.jsonl"
  fi
fi
if has dwconv; then
  load "estc dwconv"
  "$bench" --part=dwconv --threads="$threads" | grep '^{' |
    tee -a "$out/all.jsonl"
fi

python3 - "$out/all.jsonl" "$here" <<'PY'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]

sys.path.insert(0, sys.argv[2])
from peer_runs import cell, median  # noqa: E402

train = [r for r in rows if r.get("part") == "train"]
if train:
    print()
    print("MobileNetV2 training step, batch %d, %dx%d, median of rounds (range):"
          % (train[0]["batch"], train[0]["size"], train[0]["size"]))
    peers = [("tf_keras_fit", None), ("tf_model_to_estimator", None),
             ("estc", "model_fn"), ("estc", "model_to_estimator")]
    name = lambda p, v: p + (" " + v if v else "")
    print("| threads | peer | steps/s | CPU ms/step | estc model_fn / peer "
          "(steps/s) | estc model_to_estimator / peer (steps/s) | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for t in sorted({r["threads"] for r in train}):
        sel = lambda p, v: [r for r in train if r["peer"] == p and r["threads"] == t
                            and (v is None or r.get("via") == v)]
        mf, _ = cell(sel("estc", "model_fn"), "steps_per_sec")
        me, _ = cell(sel("estc", "model_to_estimator"), "steps_per_sec")
        for p, v in peers:
            runs = sel(p, v)
            if not runs:
                continue
            s, sText = cell(runs, "steps_per_sec")
            _, cText = cell(runs, "cpu_ms_per_step")
            print("| %d | %s | %s | %s | %s | %s | %.0f |" % (
                t, name(p, v), sText, cText,
                "%.2fx" % (mf / s) if mf and s else "-",
                "%.2fx" % (me / s) if me and s else "-",
                median([r["peak_rss_mib"] for r in runs])))

pred = [r for r in rows if r.get("part") == "predict"]
if pred:
    print()
    print("Batch-1 inference, 1 thread (microseconds per call):")
    print("| peer | p50 | mean | TF predict_on_batch / this (p50) |")
    print("|---|---|---|---|")
    tf = [r for r in pred if r["peer"] == "tf_keras_predict"]
    tf50 = tf[0]["p50_us"] if tf else None
    for r in pred:
        label = "tf.keras predict_on_batch" if r["peer"] != "estc" else "estc " + r["via"]
        print("| %s | %.0f | %.0f | %s |" % (
            label, r["p50_us"], r["mean_us"],
            "%.1fx" % (tf50 / r["p50_us"]) if tf50 else "-"))

triad = {r["threads"]: r["gb_per_s"] for r in rows if r.get("part") == "triad"}
dw = [r for r in rows if r.get("part") == "dwconv"]
if dw:
    print()
    print("Depthwise convolutions (batch %d) against the memory bound (STREAM "
          "triad: %s):" % (dw[0]["input"][0], ", ".join(
              "%.1f GB/s at %d thread%s" % (g, t, "s" if t > 1 else "")
              for t, g in sorted(triad.items()))))
    print("| threads | blocks | input | stride | forward ms | input grad ms "
          "| filter grad ms | all three ms (bound) | GB/s | % of bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total = {}
    for r in dw:
        t = r["threads"]
        a = total.setdefault(t, [0.0, 0.0])
        a[0] += r["count"] * r["train_ms"]
        a[1] += r["count"] * r["train_bound_ms"]
        print("| %d | %s | %s | %d | %.2f | %.2f | %.2f | %.2f (%.2f) | %.1f | %.0f%% |" % (
            t, r["blocks"], "x".join(str(d) for d in r["input"]), r["stride"],
            r["forward_ms"], r["backprop_input_ms"], r["backprop_filter_ms"],
            r["train_ms"], r["train_bound_ms"], r["train_gb_per_s"],
            100.0 * r["train_bound_ms"] / r["train_ms"]))
    for t, a in sorted(total.items()):
        print("threads %d: one step's 17 depthwise convs (forward and both "
              "gradients): %.1f ms, bound %.1f ms" % (t, a[0], a[1]))
PY
