#!/bin/sh
# Canned estimators, estc against TF 2.15, side by side in one run:
#
#   bench/canned.sh [BUILD_DIR]            (default: build)
#
# 1. The census-like table (bench/make_census_table.py: 32768 training
#    rows, seed 1; 8192 evaluation rows, seed 2) in $WORK
#    (default /tmp/estc-canned), written unless it is there.
# 2. TF: bench/tf_canned_bench.py (LinearClassifier, DNNClassifier,
#    DNNLinearCombinedClassifier at batch 40, steps 200..$STEPS timed, each
#    model and thread count in a fresh process). Prints SKIP without
#    tensorflow; the table then has estc's side only.
# 3. estc: BUILD_DIR/bin/canned_bench, the same files, columns, models and
#    timing, once per thread count with an empty JIT cache (ESTC_CACHE_DIR:
#    the compile is inside the wall time, as TF's graph building is inside
#    its) and once more with the cache that run filled ("wall, warm").
# 4. The Titanic example (when $TITANIC, default ../shared/data/titanic
#    beside the checkout, has train.csv): TF's peer (bench/tf_canned_peer.py,
#    seed 1) against titanic (JIT, empty cache) and titanic_aot, the same
#    890 steps: train() wall time and test accuracy / AUC.
#
# Steps 2-3 run REPEAT times, alternating (this machine is shared: a rate
# measured once can be off by 2x); the table shows the median of each cell
# over the repeats, and the range of the steps/s.
# Prints the CPU (lscpu), the load average before each side, the JSON lines
# of both sides and one table per part with estc / TF ratios.
# Environment: WORK, STEPS (2000), WARMUP (200), THREADS (1,2), REPEAT (3),
# TITANIC (else $ESTC_DATA_DIR/titanic). estc's logs go to
# $WORK/results/*.log.
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/estc-canned}
steps=${STEPS:-2000}
warmup=${WARMUP:-200}
threads=${THREADS:-1,2}
repeat=${REPEAT:-3}
titanic=${TITANIC:-${ESTC_DATA_DIR:-$here/../../shared/data}/titanic}

bench="$build/bin/canned_bench"
if [ ! -x "$bench" ]; then
  echo "canned.sh: $bench is not built (ninja -C $build canned_bench)" >&2
  exit 1
fi

mkdir -p "$work"
out="$work/results"
rm -rf "$out"
mkdir -p "$out"

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs)"
train="$work/census_train_32768.csv"
eval_file="$work/census_eval_8192.csv"
[ -f "$train" ] || python3 "$here/make_census_table.py" --rows 32768 --seed 1 --out "$train"
[ -f "$eval_file" ] || python3 "$here/make_census_table.py" --rows 8192 --seed 2 --out "$eval_file"

# run NAME TAG COMMAND...: the command's JSON lines, tagged, into
# $out/NAME.jsonl (and on stdout); its stderr into $out/NAME.log. Stops the
# script when the command fails.
run() {
  name=$1 tag=$2
  shift 2
  if ! "$@" > "$out/last.out" 2>> "$out/$name.log"; then
    echo "canned.sh: $* failed:" >&2
    tail -n 3 "$out/$name.log" >&2
    exit 1
  fi
  grep '^{' "$out/last.out" | sed "s/^{/{$tag, /" | tee -a "$out/$name.jsonl"
}

r=1
while [ "$r" -le "$repeat" ]; do
  echo "repeat $r: load average before TF: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 "$here/tf_canned_bench.py" --work_dir "$work" --steps "$steps" \
    --warmup "$warmup" --threads "$threads" > "$out/last.out"
  cat "$out/last.out"
  grep '^{"peer"' "$out/last.out" >> "$out/tf.jsonl" || true
  echo "repeat $r: load average before estc: $(cut -d' ' -f1-3 /proc/loadavg)"
  for t in $(echo "$threads" | tr ',' ' '); do
    cache=$(mktemp -d "$work/jit-cache.XXXXXX")
    for pass in cold warm; do
      run estc "\"jit_cache\": \"$pass\"" env ESTC_CACHE_DIR="$cache" \
        "$bench" --work_dir="$work" --steps="$steps" --warmup="$warmup" \
        --threads="$t"
    done
    rm -rf "$cache"
  done
  r=$((r + 1))
done

if [ -f "$titanic/train.csv" ]; then
  echo "load average before Titanic: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 "$here/tf_canned_peer.py" --data_dir "$titanic" \
    --models linear,dnn_linear_combined_lr --seeds 1 | tee "$out/titanic-tf.jsonl"
  cache=$(mktemp -d "$work/jit-cache.XXXXXX")
  for m in linear dnn_linear_combined; do
    for b in titanic titanic_aot; do
      [ -x "$build/bin/$b" ] || continue
      run titanic-estc "\"binary\": \"$b\"" env ESTC_CACHE_DIR="$cache" \
        "$build/bin/$b" --data_dir="$titanic" --model="$m" --predictions=0
    done
  done
  rm -rf "$cache"
else
  echo "SKIP Titanic: $titanic/train.csv is missing"
fi

python3 - "$out" <<'EOF'
import json, os, sys

out = sys.argv[1]

def lines(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.startswith("{")]

def ratio(a, b):
    return "%.1fx" % (a / b) if a and b else "-"

def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else None

def rate(runs):
    """Median steps/s over the runs, and their range."""
    v = [r["steps_per_sec"] for r in runs]
    if not v:
        return None, "-"
    m = median(v)
    return m, ("%.0f" % m) + (" (%.0f-%.0f)" % (min(v), max(v))
                              if len(v) > 1 else "")

tf, estc = {}, {}
for r in lines("tf.jsonl"):
    tf.setdefault((r["model"], r["threads"]), []).append(r)
for r in lines("estc.jsonl"):
    estc.setdefault((r["model"], r["threads"]), {}).setdefault(
        r["jit_cache"], []).append(r)
if estc:
    first = next(iter(estc.values()))["cold"][0]
    print()
    print("Census table, batch 40, steps %d..%d timed, median of %d runs "
          "(range)" % (first["warmup"], first["steps"],
                       len(next(iter(estc.values()))["cold"])))
    print("| model | threads | TF steps/s | estc steps/s | estc/TF | "
          "TF wall s | estc wall s (cold JIT / warm) | TF acc / AUC | "
          "estc acc / AUC |")
    print("|---|---|---|---|---|---|---|---|---|")
for key in sorted(estc, key=lambda k: (k[1], k[0])):
    cold = estc[key]["cold"]
    warm = estc[key].get("warm", cold)
    t = tf.get(key, [])
    tfRate, tfText = rate(t)
    esRate, esText = rate(cold)
    print("| %s | %d | %s | %s | %s | %s | %.2f / %.2f | %s | %.4f / %.4f |" % (
        key[0], key[1], tfText, esText, ratio(esRate, tfRate),
        "%.2f" % median([r["wall_seconds"] for r in t]) if t else "-",
        median([r["wall_seconds"] for r in cold]),
        median([r["wall_seconds"] for r in warm]),
        "%.4f / %.4f" % (t[0]["accuracy"], t[0]["auc"]) if t else "-",
        cold[0]["accuracy"], cold[0]["auc"]))

ttf = {r["model"]: r for r in lines("titanic-tf.jsonl") if r.get("kind") == "run"}
test = lines("titanic-estc.jsonl")
if test:
    print()
    print("Titanic, 890 steps of batch 32 (seed 1): train() wall time")
    print("| model | TF s | estc JIT s (empty cache) | estc AOT s | TF/JIT | "
          "TF/AOT | TF acc / AUC | estc acc / AUC |")
    print("|---|---|---|---|---|---|---|---|")
    for model, peer in (("linear", "linear"),
                        ("dnn_linear_combined", "dnn_linear_combined_lr")):
        jit = next((r for r in test if r["model"] == model and
                    r["binary"] == "titanic"), None)
        aot = next((r for r in test if r["model"] == model and
                    r["binary"] == "titanic_aot"), None)
        t = ttf.get(peer)
        ref = jit or aot
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, "%.2f" % t["train_seconds"] if t else "-",
            "%.3f" % jit["train_seconds"] if jit else "-",
            "%.3f" % aot["train_seconds"] if aot else "-",
            ratio(t and t["train_seconds"], jit and jit["train_seconds"]),
            ratio(t and t["train_seconds"], aot and aot["train_seconds"]),
            "%.4f / %.4f" % (t["accuracy"], t["auc"]) if t else "-",
            "%.4f / %.4f" % (ref["accuracy"], ref["auc"]) if ref else "-"))
EOF
