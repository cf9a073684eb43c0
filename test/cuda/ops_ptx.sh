#!/bin/sh
# ops_ptx.sh BIN_DIR SOURCE_DIR WORK_DIR CUDA_TOOLKIT GRAPHS_DIR
#
# Every op of docs/ops.md compiled for --target=cuda at sm_80 and sm_90,
# and the PTX of every kernel accepted by the toolkit's ptxas for that
# architecture (docs/design/gpu.md, "Tests"). The graphs are the ones
# CompiledOpsTest compiles and checks on the CPU, which its cases write to
# GRAPHS_DIR under ctest (ESTC_DUMP_GRAPHS; this test's fixture,
# test/unit/CMakeLists.txt), and the seed models' full graphs (train, eval,
# predict); the seed models are also compiled to objects (fatbin: ptxas and
# fatbinary inside the compiler). A docs/ops.md op no graph uses fails the
# test, so a new op cannot go untested. Exit 77 (SKIP) without a toolkit.
set -u
bin=$1 src=$2 work=$3 toolkit=$4 ops_graphs=$5
if [ -z "$toolkit" ] || [ ! -x "$toolkit/bin/ptxas" ]; then
  echo "SKIP: no CUDA toolkit (ESTC_CUDA_TOOLKIT is empty or has no bin/ptxas)"
  exit 77
fi
export ESTC_CUDA_PATH="$toolkit"
rm -rf "$work" && mkdir -p "$work/graphs" "$work/ptx" || exit 1

if ! ls "$ops_graphs"/CompiledOps*.pbtxt > /dev/null 2>&1; then
  echo "FAIL: no graphs of CompiledOpsTest in $ops_graphs (run this test through ctest, which runs CompiledOpsTest's cases first)"
  exit 1
fi
cp "$ops_graphs"/*.pbtxt "$work/graphs/" || exit 1
for model in mlp convnet linear; do
  "$bin/estc-models" --model=$model -o "$work/graphs/seed.$model.pbtxt" || exit 1
done

# Coverage: every op of docs/ops.md's tables but the graph-only and
# compiler-only ones is a node of some graph; check_range, which the
# compiler inserts, is in the est stage of the MLP (its labels' check).
awk -F'|' '/^\| / && !/^\| op / && $2 !~ /\(/ {print $2}' "$src/docs/ops.md" |
  tr ' ' '\n' | grep -v '^$' | sort -u > "$work/documented.txt"
cat "$work"/graphs/*.pbtxt | sed -n 's/^ *op: "\([a-z_0-9]*\)".*/\1/p' |
  sort -u > "$work/used.txt"
if "$bin/estc" "$work/graphs/seed.mlp.pbtxt" --compile-to=est |
    grep -q 'est\.check_range'; then
  echo check_range >> "$work/used.txt"
fi
missing=$(sort -u "$work/used.txt" | comm -23 "$work/documented.txt" -)
if [ -n "$missing" ]; then
  echo "FAIL: ops of docs/ops.md no graph uses: $(echo $missing)"
  exit 1
fi
echo "$(wc -l < "$work/documented.txt") ops of docs/ops.md in $(ls "$work/graphs" | wc -l) graphs"

# Every graph at sm_80; at sm_90 the seed models' (for all 363 graphs the
# PTX estc writes for the two differs only in its .target and .version
# lines, checked 2026-12-06, so the whole matrix doubled the test's time for
# nothing new to ptxas; ESTC_PTX_ALL_ARCHS=1 runs every graph at both).
failures=0
for arch in sm_80 sm_90; do
  kernels=0
  graphs="$work/graphs/*.pbtxt"
  if [ "$arch" = sm_90 ] && [ "${ESTC_PTX_ALL_ARCHS:-0}" != 1 ]; then
    graphs="$work/graphs/seed.*.pbtxt"
  fi
  for graph in $graphs; do
    name=$(basename "$graph" .pbtxt)
    out="$work/ptx/$name.$arch.ptx"
    if ! "$bin/estc" "$graph" --target=cuda --gpu-arch=$arch --emit=ptx \
        -o "$out" 2> "$work/error.txt"; then
      # Data-dependent control flow runs on the CPU only for now: the
      # refusal must be the one clear line (docs/design/control-flow.md).
      case "$name" in CompiledOps.CondOnData.*|CompiledOps.WhileLoop.*)
        if grep -q "a run-time condition (est.if, est.while) is not supported on the CUDA target" "$work/error.txt"; then
          continue
        fi;;
      esac
      echo "FAIL: $name --gpu-arch=$arch: $(cat "$work/error.txt")"
      failures=$((failures + 1))
      continue
    fi
    split="$work/ptx/$name.$arch"
    mkdir -p "$split"
    awk -v d="$split" '/^\/\/ gpu.binary/ {n++; f = sprintf("%s/%04d.ptx", d, n)}
                        f {print > f}' "$out"
    for kernel in "$split"/*.ptx; do
      [ -e "$kernel" ] || continue
      kernels=$((kernels + 1))
      if ! "$toolkit/bin/ptxas" -arch=$arch "$kernel" -o "$kernel.cubin" \
          2> "$work/error.txt"; then
        echo "FAIL: $name --gpu-arch=$arch: ptxas $kernel: $(head -3 "$work/error.txt")"
        failures=$((failures + 1))
      fi
    done
  done
  echo "$arch: $kernels kernels accepted by ptxas"
  for model in mlp convnet linear; do
    if ! "$bin/estc" "$work/graphs/seed.$model.pbtxt" --target=cuda \
        --gpu-arch=$arch --emit=obj --name=Seed -o "$work/obj.$model.$arch" \
        2> "$work/error.txt"; then
      echo "FAIL: seed model $model --emit=obj --gpu-arch=$arch: $(cat "$work/error.txt")"
      failures=$((failures + 1))
    fi
  done
done
if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures failures"
  exit 1
fi
echo "PASS"
