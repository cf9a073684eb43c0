#!/bin/sh
# Recurrent training (issue 27): estc beside TF 2.15's Estimator and
# libtorch in one run, with ratios:
#
#   bench/rnn.sh [BUILD_DIR]            (default: build)
#
# 1. The SST-2-shaped data (bench/make_sst2_like.py: 4096 sentences, mean
#    about 19 tokens, longest 56; batches of 64 padded to their longest) in
#    $WORK (default /tmp/estc-rnn), written unless it is there.
# 2. The SST-2-shaped model (embedding 128, LSTM 128 masked by the lengths,
#    dense 2, Adam 0.002): TF's Estimator (bench/tf_rnn_peer.py), estc's
#    Estimator::train (BUILD_DIR/bin/rnn_bench --part=sst2) and libtorch's
#    torch::nn::LSTM, packed and padded (BUILD_DIR/bin/rnn_torch_bench,
#    built when Debian's libtorch-dev is installed), each thread count in a
#    process of its own pinned to that many cores; REPEAT rounds,
#    alternating the peers (the machine is shared: the table takes the
#    median of each cell and shows the range).
# 3. An LSTM 512, batch 64: estc's compiled step at T = 25, 50, 100 and its
#    recurrent GEMMs against the sgemm roofline (rnn_bench --part=lstm512,
#    1 thread timed in CPU time, then LSTM512_THREADS on the wall clock).
# 4. The reverse pass's memory: the SST-2 model's @train arena at batch 64,
#    T = 50 against its forward activations (rnn_bench --part=memory).
# Prints the CPU (lscpu), the load average before each run, every JSON
# line and the tables of part 2 with estc / TF and estc / libtorch, on the
# wall clock and in CPU time per step.
# Environment: WORK, THREADS (1,2), REPEAT (3), WARMUP (20), STEPS (200),
# LSTM512_THREADS (2; empty: none).
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/estc-rnn}
threads=${THREADS:-1,2}
repeat=${REPEAT:-3}
warmup=${WARMUP:-20}
steps=${STEPS:-200}
lstm512_threads=${LSTM512_THREADS-2}

bench="$build/bin/rnn_bench"
torch="$build/bin/rnn_torch_bench"
if [ ! -x "$bench" ]; then
  echo "rnn.sh: $bench is not built (ninja -C $build rnn_bench)" >&2
  exit 1
fi
mkdir -p "$work"
out="$work/results"
rm -rf "$out"
mkdir -p "$out"
data="$work/sst2_like.bin"
[ -f "$data" ] || python3 "$here/make_sst2_like.py" --out "$data"

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs)"
load() { echo "load average before $1: $(cut -d' ' -f1-3 /proc/loadavg)"; }

r=1
while [ "$r" -le "$repeat" ]; do
  load "TF (round $r)"
  python3 "$here/tf_rnn_peer.py" --data "$data" --threads "$threads" \
    --warmup "$warmup" --steps "$steps" | tee -a "$out/all.jsonl"
  load "estc (round $r)"
  "$bench" --part=sst2 --data="$data" --threads="$threads" \
    --warmup="$warmup" --steps="$steps" | grep '^{' | tee -a "$out/all.jsonl"
  if [ -x "$torch" ]; then
    load "libtorch (round $r)"
    "$torch" --data="$data" --threads="$threads" --warmup="$warmup" \
      --steps="$steps" | grep '^{' | tee -a "$out/all.jsonl"
  fi
  r=$((r + 1))
done
[ -x "$torch" ] || echo "SKIP libtorch: $torch is not built (scripts/install-deps.sh --bench installs libtorch-dev)"

python3 - "$out/all.jsonl" "$here" <<'EOF'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]

sys.path.insert(0, sys.argv[2])
from peer_runs import median  # noqa: E402
from peer_runs import cell as median_cell  # noqa: E402

def cell(runs):
    return median_cell(runs, "steps_per_sec", 1)

def peer(name, t, form=None):
    return [r for r in rows if r["peer"] == name and r["threads"] == t
            and (form is None or r.get("form") == form)]

threads = sorted({r["threads"] for r in rows})
rounds = len(peer("estc", threads[0]))
print()
print("SST-2-shaped LSTM (embedding 128, LSTM 128 masked, dense 2, Adam), "
      "batch 64, padded per batch (mean T %.1f), median of %d rounds "
      "(range)" % (rows[0]["mean_padded_length"], rounds))
print()
print("Train steps/s (wall clock):")
print("| threads | TF Estimator | estc Estimator | estc / TF | libtorch "
      "packed | libtorch padded | estc / libtorch (faster form) |")
print("|---|---|---|---|---|---|---|")
for t in threads:
    tf, tfText = cell(peer("tf_estimator", t))
    es, esText = cell(peer("estc", t))
    pk, pkText = cell(peer("libtorch", t, "packed"))
    pd, pdText = cell(peer("libtorch", t, "padded"))
    best = max([x for x in (pk, pd) if x] or [0])
    print("| %d | %s | %s | %s | %s | %s | %s |" % (
        t, tfText, esText, "%.2fx" % (es / tf) if es and tf else "-",
        pkText, pdText, "%.2fx" % (es / best) if es and best else "-"))
print()
print("CPU ms per step (the process's CPU time: all its threads, tf.data's "
      "included; steadier than the wall clock on a shared machine), and "
      "estc's compiled function alone (wall), peak RSS:")
print("| threads | TF | estc | TF / estc | libtorch packed | libtorch padded "
      "| libtorch (faster) / estc | estc compiled step ms (wall) | peak RSS "
      "MiB TF / estc / libtorch |")
print("|---|---|---|---|---|---|---|---|---|")
def cpu(runs):
    return median_cell(runs, "cpu_ms_per_step", 1)
for t in threads:
    tf, tfText = cpu(peer("tf_estimator", t))
    es, esText = cpu(peer("estc", t))
    pk, pkText = cpu(peer("libtorch", t, "packed"))
    pd, pdText = cpu(peer("libtorch", t, "padded"))
    best = min([x for x in (pk, pd) if x] or [0])
    run = median([r["run_us_per_step"] for r in peer("estc", t)])
    rss = lambda runs: "%.0f" % median([r["peak_rss_mib"] for r in runs]) if runs else "-"
    print("| %d | %s | %s | %s | %s | %s | %s | %.1f | %s / %s / %s |" % (
        t, tfText, esText, "%.2fx" % (tf / es) if es and tf else "-",
        pkText, pdText, "%.2fx" % (best / es) if es and best else "-",
        run / 1e3 if run else 0, rss(peer("tf_estimator", t)),
        rss(peer("estc", t)), rss(peer("libtorch", t))))
EOF

echo
load "lstm512 (1 thread)"
"$bench" --part=lstm512 --threads=1 --clock=cpu
if [ -n "$lstm512_threads" ]; then
  load "lstm512 ($lstm512_threads threads)"
  "$bench" --part=lstm512 --threads="$lstm512_threads"
fi
echo
"$bench" --part=memory --length=50
