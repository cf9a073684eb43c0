#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang-22, ASan+UBSan,
# test/fuzz) into build-fuzz/ and runs them. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [options] [TARGET...]     fuzz each TARGET (default: all,
#                                             one after another)
#   scripts/fuzz.sh --regress [TARGET...]     run each target once over its
#                                             checked-in corpus and regressions
#   scripts/fuzz.sh --list                    the targets
#
# Options:
#   --time=S      seconds per target (-max_total_time; default 60)
#   --jobs=N      N fuzzing processes per target (-jobs=N -workers=N; each
#                 runs --time seconds; logs in build-fuzz/fuzz/TARGET/)
#   --parallel=N  fuzz N targets at a time (default 1; CI: one per core)
#   --timeout=S   an input running longer is a hang (default 10)
#   --fresh       start from the checked-in corpus, forgetting earlier runs
#   --no-build    use build-fuzz/ as it is
#
# Fuzzing works on a copy of the corpus, build-fuzz/fuzz/TARGET/corpus
# (test/fuzz/corpus/TARGET and regressions/TARGET copied in, kept between
# runs); the checked-in files are never changed. Exit status 1 when a target
# crashes, leaks, runs out of memory or hangs: the reproducer's path is
# printed; `build-fuzz/bin/TARGET_fuzzer FILE` reruns it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$root/build-fuzz
fuzz_dir=$root/test/fuzz

time_s=60 jobs=1 parallel=1 timeout_s=10 fresh=0 build_first=1 mode=fuzz
targets=()
for arg in "$@"; do
  case $arg in
    --time=*) time_s=${arg#*=} ;;
    --jobs=*) jobs=${arg#*=} ;;
    --parallel=*) parallel=${arg#*=} ;;
    --timeout=*) timeout_s=${arg#*=} ;;
    --fresh) fresh=1 ;;
    --no-build) build_first=0 ;;
    --regress) mode=regress ;;
    --list) mode=list ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
for n in "$time_s" "$jobs" "$parallel" "$timeout_s"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: '$n' is not a positive integer" >&2; exit 2; }
done

# Every test/fuzz/NAME_fuzzer.cpp is a target.
all=()
for f in "$fuzz_dir"/*_fuzzer.cpp; do
  name=${f##*/}
  all+=("${name%_fuzzer.cpp}")
done
if [[ $mode == list ]]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi
if ((${#targets[@]} == 0)); then
  targets=("${all[@]}")
fi
for t in "${targets[@]}"; do
  [[ -f $fuzz_dir/${t}_fuzzer.cpp ]] || {
    echo "fuzz.sh: no target '$t' (targets: ${all[*]})" >&2; exit 2; }
done

if ((build_first)); then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
fi

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Replays (--regress) or fuzzes target $1; returns 1 on a finding.
run_target() {
  local t=$1 status=0
  local binary inputs work options rc logs execs speed files found
  binary=$build/bin/${t}_fuzzer
  [[ -x $binary ]] || { echo "fuzz.sh: $binary is not built" >&2; exit 2; }
  inputs=("$fuzz_dir/corpus/$t")
  [[ -d $fuzz_dir/regressions/$t ]] && inputs+=("$fuzz_dir/regressions/$t")

  if [[ $mode == regress ]]; then
    if "$binary" -runs=0 -timeout=30 -rss_limit_mb=2048 "${inputs[@]}" \
        >"$build/fuzz-regress-$t.log" 2>&1; then
      echo "fuzz.sh: $t: OK ($(find "${inputs[@]}" -type f | wc -l) inputs)"
    else
      echo "fuzz.sh: $t: FAILED (log: $build/fuzz-regress-$t.log)"
      tail -n 30 "$build/fuzz-regress-$t.log"
      status=1
    fi
    return $status
  fi

  work=$build/fuzz/$t
  ((fresh)) && rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  rm -f "$work"/artifacts/* "$work"/fuzz-*.log
  for d in "${inputs[@]}"; do
    cp -n "$d"/* "$work/corpus/" 2>/dev/null || true
  done
  options=(-max_total_time="$time_s" -timeout="$timeout_s" -rss_limit_mb=2048
           -print_final_stats=1 -artifact_prefix="$work/artifacts/")
  [[ -f $fuzz_dir/dict/$t.dict ]] && options+=(-dict="$fuzz_dir/dict/$t.dict")
  if ((jobs > 1)); then
    options+=(-jobs="$jobs" -workers="$jobs")
  fi
  echo "fuzz.sh: $t: fuzzing ${time_s}s x $jobs job(s), corpus $work/corpus"
  rc=0
  (cd "$work" && "$binary" "${options[@]}" corpus >"$work/log" 2>&1) || rc=$?
  logs=("$work/log")
  ((jobs > 1)) && logs+=("$work"/fuzz-*.log)
  execs=$(cat "${logs[@]}" | awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}')
  speed=$(cat "${logs[@]}" | awk '/stat::average_exec_per_sec/ {s += $2} END {print s + 0}')
  files=$(find "$work/corpus" -type f | wc -l)
  echo "fuzz.sh: $t: $execs runs, $speed execs/s, corpus $files files"
  shopt -s nullglob
  found=("$work"/artifacts/{crash,leak,timeout,oom}-*)
  shopt -u nullglob
  if ((rc != 0 || ${#found[@]} > 0)); then
    status=1
    echo "fuzz.sh: $t: FAILED (exit $rc); log: ${logs[*]}"
    grep -a -h -A 12 -E '^==[0-9]+==ERROR|runtime error:|estc fuzz:|ALARM|out-of-memory' \
      "${logs[@]}" | head -n 40 || true
    for f in "${found[@]}"; do
      echo "fuzz.sh: $t: reproducer: $f"
      echo "          rerun: $binary $f"
    done
  fi
  return $status
}

status=0
pids=()
for t in "${targets[@]}"; do
  if ((parallel == 1)); then
    run_target "$t" || status=1
    continue
  fi
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  run_target "$t" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit $status
