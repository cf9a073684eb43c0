#!/bin/sh
# Parameter-server training against one process, in one run:
#
#   bench/ps.sh [BUILD_DIR]            (default: build)
#
# 1. The census-like table (bench/make_census_table.py: 32768 rows, seed 1)
#    in $WORK (default /tmp/estc-ps), written unless it is there.
# 2. BUILD_DIR/bin/ps_bench with 1 and 2 ps tasks (PS, default "1 2"):
#    the census wide & deep model (batch 40, WARMUP then STEPS steps timed)
#    by one process and by a chief with the ps tasks on 127.0.0.1; REPEAT
#    times each (default 3), alternating.
# Prints the CPU, the JSON lines and, per ps count, the medians: ms/step of
# both, their ratio, the chief's step split (pull, push, the rest) and the
# pulls' and pushes' bytes/s against loopback's.
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/estc-ps}
steps=${STEPS:-400}
warmup=${WARMUP:-100}
repeat=${REPEAT:-3}
pss=${PS:-1 2}
mkdir -p "$work/results"
train="$work/census_train_32768.csv"
[ -f "$train" ] || python3 "$here/make_census_table.py" --rows 32768 --seed 1 --out "$train"

lscpu | sed -n 's/^Model name: *//p'
for r in $(seq "$repeat"); do
  for p in $pss; do
    "$build/bin/ps_bench" --data="$train" --ps="$p" --steps="$steps" \
      --warmup="$warmup" --work="$work/run" \
      --json="$work/results/ps$p-$r.json" > /dev/null
    cat "$work/results/ps$p-$r.json"
  done
done
python3 - "$work/results" $pss <<'EOF'
import json, os, statistics, sys
results, pss = sys.argv[1], sys.argv[2:]
# rtt: an empty call's round trip to ps:0 (the tasks idle); floor: one
# process's step plus the job's two round trips a step, over one process's
# step (the best ratio a step of two calls can reach); rows/s: embedding
# rows pulled per second of pulling.
print("%-6s %10s %10s %7s %8s %8s %8s %10s %10s %10s %8s %7s %10s" % (
    "ps", "1 proc ms", "ps ms", "ratio", "pull ms", "push ms", "rest ms",
    "pull MB/s", "push MB/s", "loop MB/s", "rtt us", "floor", "rows/s"))
for p in pss:
    rows = []
    for name in sorted(os.listdir(results)):
        if name.startswith("ps%s-" % p):
            with open(os.path.join(results, name)) as f:
                rows.append([json.loads(line) for line in f if line.strip()])
    med = lambda f: statistics.median(f(r) for r in rows)
    one = med(lambda r: r[0]["us_per_step"]) / 1e3
    job = med(lambda r: r[1]["us_per_step"]) / 1e3
    pull = med(lambda r: r[1]["pull_ms_per_step"])
    push = med(lambda r: r[1]["push_ms_per_step"])
    mbs = lambda key, ms: med(lambda r: r[1][key] / max(r[1][ms], 1e-9) / 1e3)
    rtt = med(lambda r: r[1]["round_trip_us"])
    print("%-6s %10.3f %10.3f %7.2f %8.3f %8.3f %8.3f %10.1f %10.1f %10.0f "
          "%8.1f %7.2f %10.0f" % (
        p, one, job, job / one, pull, push, job - pull - push,
        mbs("pull_bytes_per_step", "pull_ms_per_step"),
        mbs("push_bytes_per_step", "push_ms_per_step"),
        med(lambda r: r[1]["loopback_mib_per_sec"]) * 1.048576,
        rtt, (one + 2 * rtt / 1e3) / one,
        med(lambda r: r[1]["rows_per_step"] /
            max(r[1]["pull_ms_per_step"], 1e-9) * 1e3)))
EOF
