#!/bin/sh
# Serving (issue 14): exported models in process, estc-serve under wrk, and
# TF 2.15's SavedModel signature call, side by side in one run:
#
#   bench/serving.sh [BUILD_DIR]            (default: build)
#
# 1. Builds serving_bench and estc-serve in BUILD_DIR (configured already).
# 2. The census-like table (bench/make_census_table.py, 8192 rows, seed 1)
#    in $WORK (default /tmp/estc-serving), written unless it is there.
# 3. serving_bench (bench/serving_bench.cpp): trains and exports the MLP
#    784-256-256-10 (raw receiver) and a DNNLinearCombinedClassifier over
#    the table (parsing receiver) into $WORK/out/models, times
#    serving::SavedModel::run in process (batch-1 p50/p99 and its parts:
#    the compiled step alone; tf.Example parsing and the feature columns'
#    transform), examples/s at batch 1..256, and writes the requests.
# 4. estc-serve on a free loopback port (--rest_api_port=0 --port_file)
#    serving both models, without batching and with each batching setting
#    of $BATCHING ("max_batch_size:batch_timeout_micros ...";
#    num_batch_threads = the CPUs); for each, wrk -t2 -cN -d$DURATION
#    --latency at N in $CONNS posting the one-example request (MLP
#    :predict, one instance in row format; wide & deep :classify, one
#    tf.Example), keep-alive. --rest_api_num_threads is the largest N (an
#    open keep-alive connection holds a thread). wrk runs on the same
#    CPUs as the server. Each answer's HTTP status is checked once (curl)
#    before wrk; wrk's non-2xx and socket errors are counted. Without
#    batching, also the HTTP floor: wrk -c1 GETs of the model status (no
#    JSON parsed, no model run).
# 4b. The same server's gRPC API (--port=0 --grpc_port_file): grpc_bench
#    (bench/grpc_bench.cpp) calls the MLP's Predict with the same instance
#    (a TensorProto's tensor_content) from N clients at each N in $CONNS,
#    each on its own connection, closed loop; without batching also
#    GetModelStatus at c=1, gRPC's floor (no tensor decoded, no model run).
# 5. bench/tf_serving_peer.py: TF's SavedModel of the same MLP with the
#    same weights (outputs checked within 1e-5), and TF's own wide & deep
#    (its weights), batch-1 signature call p50/p99. Without tensorflow
#    for python3 it is installed into $WORK/tf-venv (tensorflow-cpu 2.15.1,
#    tensorflow-estimator 2.15.0, numpy<2) unless NO_TF_INSTALL=1; if that
#    fails the TF column is empty.
# 6. Prints the CPU (lscpu), the load average before each part, the JSON
#    lines and the tables: in process (estc, its parts, TF, TF/estc), the
#    server (p50/p99 latency and requests/s = predictions/s per setting and
#    concurrency, and the server overhead per request: estc-serve's p50 at
#    c=1 without batching minus SavedModel::run's batch-1 p50, split into
#    the REST codec, RestHandler::handle in process minus run, and the
#    rest: HTTP, loopback TCP and the scheduling of wrk's and the server's
#    threads on the same CPUs).
# Environment: WORK, DURATION (5s), CONNS (1,8,64), BATCHING
# ("64:200 64:1000 128:1000"), CALLS (20000, in-process timed calls).
set -eu

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/estc-serving}
duration=${DURATION:-5s}
conns=${CONNS:-1,8,64}
batching=${BATCHING:-64:200 64:1000 128:1000}
calls=${CALLS:-20000}

if command -v ninja > /dev/null; then
  nice -n 10 ninja -C "$build" serving_bench estc-serve grpc_bench > /dev/null
fi
for f in "$build/bin/serving_bench" "$build/bin/estc-serve" "$build/bin/grpc_bench"; do
  if [ ! -x "$f" ]; then
    echo "serving.sh: $f is not built (ninja -C $build serving_bench estc-serve)" >&2
    exit 1
  fi
done
command -v wrk > /dev/null || { echo "serving.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v curl > /dev/null || { echo "serving.sh: curl is missing" >&2; exit 1; }

mkdir -p "$work"
res="$work/results"
rm -rf "$res"
mkdir -p "$res"
out="$work/out"
cpus=$(nproc)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($cpus CPUs)"
census="$work/census_train_8192.csv"
[ -f "$census" ] || python3 "$here/make_census_table.py" --rows 8192 --seed 1 --out "$census" > /dev/null

# --- In process.
echo "load average before serving_bench: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! "$build/bin/serving_bench" --out="$out" --census="$census" --calls="$calls" \
    > "$res/estc.jsonl" 2> "$res/serving_bench.log"; then
  echo "serving.sh: serving_bench failed:" >&2
  tail -n 5 "$res/serving_bench.log" >&2
  exit 1
fi
cat "$res/estc.jsonl"

# --- estc-serve under wrk.
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2> /dev/null; true' EXIT
max_conns=$(echo "$conns" | tr ',' '\n' | sort -n | tail -n 1)

# serve NAME [FLAGS...]: starts estc-serve; url is its address.
serve() {
  name=$1
  shift
  rm -f "$work/port" "$work/grpc_port"
  "$build/bin/estc-serve" --model_config_file="$out/models.config" \
    --rest_api_host=127.0.0.1 --rest_api_port=0 --port_file="$work/port" \
    --port=0 --grpc_port_file="$work/grpc_port" \
    --file_system_poll_wait_seconds=0 --rest_api_num_threads="$max_conns" \
    "$@" 2>> "$res/serve-$(echo "$name" | tr -c 'a-z0-9\n' -).log" &
  pid=$!
  for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
  [ -s "$work/port" ] || { echo "serving.sh: estc-serve wrote no port" >&2; exit 1; }
  for _ in $(seq 200); do [ -s "$work/grpc_port" ] && break; sleep 0.05; done
  [ -s "$work/grpc_port" ] || { echo "serving.sh: estc-serve wrote no gRPC port" >&2; exit 1; }
  url=http://127.0.0.1:$(cat "$work/port")
  grpc=127.0.0.1:$(cat "$work/grpc_port")
}

# grpc_load SETTING [--status]: the MLP's Predict over gRPC (grpc_bench, the
# same instance as the REST run) at each concurrency; with --status,
# GetModelStatus at c=1 (gRPC's floor). One JSON line each into
# $res/grpc.jsonl.
grpc_load() {
  setting=$1
  shift
  if [ "${1:-}" = --status ]; then
    what="GetModelStatus" cs=1
  else
    what="mlp" cs=$conns
  fi
  "$build/bin/grpc_bench" --target="$grpc" --model=mlp --input=x \
    --instance_json="$out/mlp_predict.json" --connections="$cs" \
    --seconds="${duration%s}" "$@" > "$res/grpc.txt" 2>&1 ||
    { cat "$res/grpc.txt" >&2; exit 1; }
  i=0
  for c in $(echo "$cs" | tr ',' ' '); do
    i=$((i + 1))
    line=$(sed -n 's/^GRPC {/{/p' "$res/grpc.txt" | sed -n "${i}p")
    echo "{\"model\": \"$what\", \"setting\": \"$setting\", \"connections\": $c, ${line#\{}" \
      | tee -a "$res/grpc.jsonl"
  done
}
stop() {
  kill -TERM "$pid"
  wait "$pid" || { echo "serving.sh: estc-serve exited $?" >&2; exit 1; }
  pid=
}

# load MODEL METHOD REQUEST SETTING: one answer checked, then wrk at each
# concurrency, one JSON line each into $res/wrk.jsonl.
load() {
  model=$1 method=$2 request=$3 setting=$4
  path="/v1/models/$model:$method"
  # 503 until the model's first version is loaded.
  for _ in $(seq 200); do
    code=$(curl -s -o "$res/answer.json" -w '%{http_code}' -X POST \
      -H 'Content-Type: application/json' --data-binary @"$request" "$url$path")
    [ "$code" = 503 ] || break
    sleep 0.05
  done
  if [ "$code" != 200 ]; then
    echo "serving.sh: POST $path: HTTP $code: $(cat "$res/answer.json")" >&2
    exit 1
  fi
  cat > "$res/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[$(cat "$request")]==]
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"p50_us": %d, "p99_us": %d, "requests": %d, "duration_us": %d, "errors": %d}\n',
    latency:percentile(50), latency:percentile(99), summary.requests,
    summary.duration, e.connect + e.read + e.write + e.status + e.timeout))
end
LUA
  for c in $(echo "$conns" | tr ',' ' '); do
    t=2
    [ "$c" -lt 2 ] && t=1
    wrk -t"$t" -c"$c" -d"$duration" --latency -s "$res/post.lua" "$url$path" \
      > "$res/wrk.txt" 2>&1 || { cat "$res/wrk.txt" >&2; exit 1; }
    line=$(sed -n 's/^WRK {/{/p' "$res/wrk.txt")
    [ -n "$line" ] || { cat "$res/wrk.txt" >&2; exit 1; }
    echo "{\"model\": \"$model\", \"setting\": \"$setting\", \"connections\": $c, ${line#\{}" \
      | tee -a "$res/wrk.jsonl"
  done
}

# floor: the HTTP server's own round trip at c=1, a GET of the model status
# (no JSON parsed, no model run): httplib, loopback TCP and wrk.
floor() {
  cat > "$res/get.lua" <<LUA
done = function(summary, latency, requests)
  io.write(string.format('WRK {"p50_us": %d, "p99_us": %d, "requests": %d, "duration_us": %d, "errors": %d}\n',
    latency:percentile(50), latency:percentile(99), summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
LUA
  wrk -t1 -c1 -d"$duration" --latency -s "$res/get.lua" "$url/v1/models/mlp" \
    > "$res/wrk.txt" 2>&1 || { cat "$res/wrk.txt" >&2; exit 1; }
  line=$(sed -n 's/^WRK {/{/p' "$res/wrk.txt")
  echo "{\"model\": \"GET status\", \"setting\": \"none\", \"connections\": 1, ${line#\{}" \
    | tee -a "$res/wrk.jsonl"
}

run_server() { # SETTING [FLAGS...]
  setting=$1
  shift
  echo "load average before estc-serve ($setting): $(cut -d' ' -f1-3 /proc/loadavg)"
  serve "$setting" "$@"
  [ "$setting" = none ] && floor
  load mlp predict "$out/mlp_predict.json" "$setting"
  load wide_deep classify "$out/wide_deep_classify.json" "$setting"
  [ "$setting" = none ] && grpc_load "$setting" --status
  grpc_load "$setting"
  stop
}

run_server none
for b in $batching; do
  size=${b%%:*} timeout=${b#*:}
  params="$res/batching-$size-$timeout.txt"
  cat > "$params" <<EOF
max_batch_size { value: $size }
batch_timeout_micros { value: $timeout }
num_batch_threads { value: $cpus }
max_enqueued_batches { value: 1000 }
EOF
  run_server "batching $size/${timeout}us" --enable_batching \
    --batching_parameters_file="$params"
done

# --- TF's SavedModel.
py=python3
if ! python3 -c "import tensorflow, tensorflow_estimator" > /dev/null 2>&1; then
  if [ -x "$work/tf-venv/bin/python3" ]; then
    py="$work/tf-venv/bin/python3"
  elif [ "${NO_TF_INSTALL:-0}" != 1 ] && python3 -m venv "$work/tf-venv" &&
      "$work/tf-venv/bin/pip" install -q tensorflow-cpu==2.15.1 \
        tensorflow-estimator==2.15.0 "numpy<2"; then
    py="$work/tf-venv/bin/python3"
  fi
fi
mlp_export=$(sed -n 's/.*"model": "mlp", "export_dir": "\([^"]*\)".*/\1/p' "$res/estc.jsonl")
echo "load average before TF: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" "$here/tf_serving_peer.py" --mlp_export "$mlp_export" --out "$out" \
  --census "$census" 2> "$res/tf.log" | tee "$res/tf.jsonl" || true

python3 - "$res" <<'EOF'
import json, os, sys

res = sys.argv[1]

def lines(name):
    path = os.path.join(res, name)
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.startswith("{")]

estc = {r["model"]: r for r in lines("estc.jsonl") if "p50_us" in r}
rates = [r for r in lines("estc.jsonl") if "examples_per_sec" in r]
rest = {r["model"]: r for r in lines("estc.jsonl")
        if "rest_handler_p50_us" in r}
tf = {r["model"]: r for r in lines("tf.jsonl") if r.get("peer") == "tf"}
wrk = lines("wrk.jsonl")

print()
print("In process, batch 1, one thread: serving::SavedModel::run vs TF's "
      "SavedModel signature call (µs)")
print("| model | estc p50 | estc p99 | estc parts (p50) | TF p50 | TF p99 | "
      "TF/estc (p50) | outputs |")
print("|---|---|---|---|---|---|---|---|")
for model in ("mlp", "wide_deep"):
    e = estc.get(model)
    if not e:
        continue
    t = tf.get(model)
    parts = ", ".join("%s %.1f" % (k[:-len("_p50_us")], v)
                      for k, v in e["parts"].items())
    if model == "mlp" and t:
        check = "equal (max diff %.1e)" % t["max_abs_diff"] \
            if t["equal_1e-5"] else "DIFFER (max %.1e)" % t["max_abs_diff"]
    else:
        check = "TF's own weights" if t else "-"
    print("| %s | %.1f | %.1f | %s | %s | %s | %s | %s |" % (
        model, e["p50_us"], e["p99_us"], parts,
        "%.1f" % t["p50_us"] if t else "-", "%.1f" % t["p99_us"] if t else "-",
        "%.1fx" % (t["p50_us"] / e["p50_us"]) if t else "-", check))

print()
print("In process, one thread: SavedModel::run examples/s by batch")
batches = sorted({r["batch"] for r in rates})
print("| model | " + " | ".join(str(b) for b in batches) + " |")
print("|---|" + "---|" * len(batches))
for model in ("mlp", "wide_deep"):
    by = {r["batch"]: r for r in rates if r["model"] == model}
    print("| %s | " % model + " | ".join(
        "%.0f" % by[b]["examples_per_sec"] if b in by else "-"
        for b in batches) + " |")

print()
print("estc-serve under wrk (keep-alive, one example per request; wrk on "
      "the same CPUs): p50 / p99 latency µs, requests/s = predictions/s")
print("| model | setting | connections | p50 µs | p99 µs | requests/s | "
      "errors |")
print("|---|---|---|---|---|---|---|")
for r in wrk:
    if r["model"] == "GET status":
        continue
    print("| %s | %s | %d | %d | %d | %.0f | %d |" % (
        r["model"], r["setting"], r["connections"], r["p50_us"], r["p99_us"],
        r["requests"] / (r["duration_us"] / 1e6), r["errors"]))

print()
print("Server overhead per request: estc-serve p50 at c=1, no batching, "
      "minus SavedModel::run p50 at batch 1")
for model in ("mlp", "wide_deep"):
    w = next((r for r in wrk if r["model"] == model and
              r["setting"] == "none" and r["connections"] == 1), None)
    e = estc.get(model)
    if w and e:
        print("  %s: %d - %.1f = %.1f µs" % (model, w["p50_us"], e["p50_us"],
                                              w["p50_us"] - e["p50_us"]))
print("  split (p50): in process run | REST codec (RestHandler::handle in "
      "process, minus run) | HTTP + TCP + scheduling (the rest)")
floor = next((r for r in wrk if r["model"] == "GET status"), None)
for model in ("mlp", "wide_deep"):
    w = next((r for r in wrk if r["model"] == model and
              r["setting"] == "none" and r["connections"] == 1), None)
    e = estc.get(model)
    h = rest.get(model)
    if w and e and h:
        print("  %s: %.1f | %.1f (%d-byte request) | %.1f" % (
            model, e["p50_us"], h["rest_handler_p50_us"] - e["p50_us"],
            h["request_bytes"], w["p50_us"] - h["rest_handler_p50_us"]))
if floor:
    print("  HTTP floor: GET of the model status at c=1, p50 %d µs" %
          floor["p50_us"])
grpc = lines("grpc.jsonl")
if grpc:
    print()
    print("estc-serve over gRPC (grpc_bench: one connection per client, "
          "closed loop, on the same CPUs): the MLP's Predict, one instance "
          "(tensor_content); GetModelStatus at c=1 is gRPC's floor")
    print("| call | setting | connections | p50 µs | p99 µs | requests/s |")
    print("|---|---|---|---|---|---|")
    for r in grpc:
        print("| %s | %s | %d | %d | %d | %.0f |" % (
            r["model"], r["setting"], r["connections"], r["p50_us"],
            r["p99_us"], r["requests"] / (r["duration_us"] / 1e6)))
    g1 = next((r for r in grpc if r["model"] == "mlp" and
               r["setting"] == "none" and r["connections"] == 1), None)
    e = estc.get("mlp")
    if g1 and e:
        print("  gRPC overhead (MLP, c=1, no batching): %d - %.1f = %.1f µs" %
              (g1["p50_us"], e["p50_us"], g1["p50_us"] - e["p50_us"]))
best = max((r["requests"] / (r["duration_us"] / 1e6), r["setting"],
            r["connections"]) for r in wrk if r["model"] == "mlp") \
    if any(r["model"] == "mlp" for r in wrk) else None
if best:
    print("Best MLP predictions/s: %.0f (%s, c=%d)" % best)
EOF
