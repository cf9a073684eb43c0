#!/bin/bash
# estc-serve end to end (docs/serving.md): the binary on a free loopback
# port, real exports (serve_test_exports), curl and wrk as clients.
#   estc_serve_e2e.sh ESTC_SERVE SERVE_TEST_EXPORTS WORK_DIR
# Checks: answers equal to in-process SavedModel::run, status, metadata,
# errors with TF Serving's status codes, a JSON body over 8 KiB sent as
# curl -d sends it (application/x-www-form-urlencoded), 413 over
# --max_request_bytes and only then, a version swap under wrk load (zero non-2xx and socket errors), a corrupt
# new version (the previous keeps serving), SIGTERM with requests in flight
# (all answered, exit 0). Exit 77 (ctest SKIP) without curl or wrk.
set -u
serve=$1 exports=$2 work=$3
for tool in curl wrk; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; [ -f "$work/serve.log" ] && cat "$work/serve.log"; exit 1; }
# Never leave a server behind (ctest waits for its output pipe).
trap '[ -n "${pid:-}" ] && kill -KILL $pid 2>/dev/null' EXIT

"$exports" "$work" || fail "serve_test_exports"
tiny=$(ls "$work/tiny"); linear=$(ls "$work/linear")
cat > "$work/models.config" <<CONFIG
model_config_list {
  config { name: "tiny" base_path: "$work/tiny" model_platform: "tensorflow" }
  config { name: "linear" base_path: "$work/linear"
           version_labels { key: "stable" value: $linear } }
}
CONFIG

pid=
start() { # extra flags...
  rm -f "$work/port"
  "$serve" --model_config_file="$work/models.config" --rest_api_port=0 \
    --rest_api_host=127.0.0.1 --port_file="$work/port" \
    --file_system_poll_wait_seconds=1 --max_request_bytes=100000 "$@" \
    2>>"$work/serve.log" &
  pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  [ -s "$work/port" ] || fail "no port file"
  url=http://127.0.0.1:$(cat "$work/port")
}
# status BODY_FILE METHOD PATH [DATA_FILE]: the HTTP status, body to BODY_FILE.
status() {
  local out=$1 method=$2 path=$3 data=${4:-}
  if [ -n "$data" ]; then
    curl -s -o "$out" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
      --data-binary @"$data" "$url$path"
  else
    curl -s -o "$out" -w '%{http_code}' -X "$method" "$url$path"
  fi
}
expect() { # CODE METHOD PATH DATA_FILE PATTERN
  local got; got=$(status "$work/body" "$2" "$3" "$4")
  [ "$got" = "$1" ] || fail "$2 $3: HTTP $got, expected $1: $(cat "$work/body")"
  grep -q -- "$5" "$work/body" || fail "$2 $3: no '$5' in $(cat "$work/body")"
}

start
# Answers equal to the in-process runs.
expect 200 POST /v1/models/tiny:predict "$work/tiny_predict.json" predictions
cmp -s "$work/body" "$work/tiny_predict.expected" ||
  fail "predict: $(cat "$work/body") != $(cat "$work/tiny_predict.expected")"
expect 200 POST /v1/models/linear/labels/stable:classify "$work/linear_classify.json" results
cmp -s "$work/body" "$work/linear_classify.expected" ||
  fail "classify: $(cat "$work/body") != $(cat "$work/linear_classify.expected")"
expect 200 GET /v1/models/tiny "" '"state":"AVAILABLE"'
expect 200 GET "/v1/models/linear/versions/$linear/metadata" "" '"method_name":"tensorflow/serving/classify"'
grep -q '"dtype":"DT_STRING"' "$work/body" || fail "metadata: no DT_STRING"
# Errors and their status codes.
echo '{"instances": [[1, 2]]}' > "$work/short.json"
expect 404 POST /v1/models/nope:predict "$work/tiny_predict.json" 'Servable not found for request: Latest(nope)'
expect 404 POST /v1/models/tiny/versions/1:predict "$work/tiny_predict.json" 'Specific(tiny, 1)'
expect 400 POST /v1/models/tiny:predict "$work/short.json" '"error"'
echo '{"instances": [' > "$work/broken.json"
expect 400 POST /v1/models/tiny:predict "$work/broken.json" 'JSON Parse error'
expect 404 GET /v2/nothing "" '"error"'
head -c 200000 /dev/zero | tr '\0' ' ' > "$work/big.json"
expect 413 POST /v1/models/tiny:predict "$work/big.json" 'max_request_bytes'
# curl -d's Content-Type (application/x-www-form-urlencoded, as TF Serving's
# examples send requests): a JSON body over 8 KiB is served, one over
# --max_request_bytes is 413 with the limit.
{ head -c 20000 /dev/zero | tr '\0' ' '; cat "$work/tiny_predict.json"; } > "$work/padded.json"
got=$(curl -s -o "$work/body" -w '%{http_code}' --data-binary @"$work/padded.json" \
  "$url/v1/models/tiny:predict")
[ "$got" = 200 ] || fail "form-urlencoded predict: HTTP $got: $(cat "$work/body")"
cmp -s "$work/body" "$work/tiny_predict.expected" ||
  fail "form-urlencoded predict: $(cat "$work/body") != $(cat "$work/tiny_predict.expected")"
got=$(curl -s -o "$work/body" -w '%{http_code}' --data-binary @"$work/big.json" \
  "$url/v1/models/tiny:predict")
[ "$got" = 413 ] && grep -q -- '--max_request_bytes=100000' "$work/body" ||
  fail "form-urlencoded over the limit: HTTP $got: $(cat "$work/body")"

# A new version copied in under load: no failed request.
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [==[$(cat "$work/tiny_predict.json")]==]
LUA
new=$((tiny + 10))
( sleep 1; cp -r "$work/tiny/$tiny" "$work/tiny/temp-$new" && mv "$work/tiny/temp-$new" "$work/tiny/$new" ) &
wrk -t2 -c8 -d3s -s "$work/post.lua" "$url/v1/models/tiny:predict" > "$work/wrk.txt" 2>&1
wait $!
cat "$work/wrk.txt"
grep -q "requests in" "$work/wrk.txt" || fail "wrk did not run"
! grep -qE "Non-2xx|Socket errors" "$work/wrk.txt" || fail "failed requests during the swap"
expect 200 GET /v1/models/tiny/versions/$new "" '"state":"AVAILABLE"'
grep -q "model tiny: unloading version $tiny" "$work/serve.log" || fail "version $tiny not unloaded"

# A corrupt newer version: logged, the previous keeps serving.
mkdir -p "$work/tiny/$((new + 10))"; echo '{' > "$work/tiny/$((new + 10))/saved_model.json"
sleep 2.5
expect 200 POST /v1/models/tiny:predict "$work/tiny_predict.json" predictions
cmp -s "$work/body" "$work/tiny_predict.expected" || fail "answer changed after a corrupt version"
expect 200 GET /v1/models/tiny/versions/$new "" AVAILABLE
[ "$(grep -c "version $((new + 10)) failed to load" "$work/serve.log")" = 1 ] ||
  fail "the corrupt version is not logged once"
kill -TERM $pid; wait $pid || fail "estc-serve exited $? on SIGTERM"

# SIGTERM with requests in flight (held 1 s in the batcher): all answered.
echo 'max_batch_size { value: 1000 } batch_timeout_micros { value: 1000000 }' > "$work/batching.config"
start --enable_batching --batching_parameters_file="$work/batching.config"
for i in 1 2 3 4; do
  status "$work/inflight$i" POST /v1/models/tiny:predict "$work/tiny_predict.json" > "$work/code$i" &
done
sleep 0.3
kill -TERM $pid
wait $pid; rc=$?
wait
[ $rc = 0 ] || fail "estc-serve exited $rc on SIGTERM"
for i in 1 2 3 4; do
  [ "$(cat "$work/code$i")" = 200 ] || fail "request $i in flight: HTTP $(cat "$work/code$i")"
  # A batch of 12 rows runs other kernel blocks than one of 3: equal up to
  # float32 rounding, not bit for bit.
  python3 - "$work/inflight$i" "$work/tiny_predict.expected" <<'PY' || fail "request $i: batched answer differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def close(x, y):
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(close, x, y))
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-5 * max(1.0, abs(y))
    return x == y
sys.exit(0 if close(a, b) else 1)
PY
done
grep -q "SIGTERM: finishing the requests in flight" "$work/serve.log" || fail "no shutdown line"
echo PASS
