#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU checks of the CUDA target, on the GPU machine.
#
# Run from the repository root with the bundle that scripts/gpu-bundle.sh
# made (gpu-bundle/); needs the NVIDIA driver, and python3 with PyTorch and
# its nvidia-* wheels (cuBLAS and cuDNN come from there), no LLVM. Phases,
# each under its own time limit (the whole script ends within 8 minutes):
#   device   nvidia-smi -L and the GPU's name, driver and memory      15 s
#   test     GpuTest (gtest output; XML too)                          90 s
#   runtime  CudaRuntimeTest (the runtime's own GPU tests)            60 s
#   bench    gpu_step_bench: steps/s at batch 128 and 1024            60 s
#   fashion  fashion_mnist_aot_cuda, 15 epochs, --min_accuracy=0.90  150 s
#   torch    torch_peer.py: eager and torch.compile (budget 110 s)   150 s
# The main job (fashion) runs before the optional peer. Logs go to $OUT
# (default ./gpu-out): device.txt, <phase>.log, gputest.xml,
# gpu_step_bench.json, torch_peer.json, summary.txt (each phase's exit
# status; 124: its time limit). PHASES="test bench" runs a subset;
# FASHION_EPOCHS changes the epochs. Exit status: 0 when every phase run
# passed.
set -uo pipefail
root=$(pwd)
bundle=$root/gpu-bundle
out=${OUT:-$root/gpu-out}
phases=${PHASES:-device test runtime bench fashion torch}
mkdir -p "$out"
[ -x "$bundle/bin/GpuTest" ] || {
  echo "gpu-check: error: $bundle/bin/GpuTest not found: run scripts/gpu-bundle.sh first and carry gpu-bundle/" >&2
  exit 1
}
start=$(date +%s)
summary=$out/summary.txt
: > "$summary"
cat "$bundle/MANIFEST.txt" > "$out/bundle.txt" 2>/dev/null

# cuBLAS and cuDNN (opened by the runtime with dlopen) from PyTorch's
# nvidia-* wheels and the CUDA toolkit, if any; our libraries from the
# bundle. Only our binaries get this path: python3 keeps its own.
wheel_dirs=$(python3 - <<'PY' 2>/dev/null
import os
dirs = []
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
try:
    import torch
    roots.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
for root in roots:
    for d, _, files in os.walk(root):
        if any(f.startswith(("libcublas", "libcudnn", "libcudart", "libnvrtc",
                             "libnvJitLink")) for f in files) and d not in dirs:
            dirs.append(d)
print(":".join(dirs))
PY
)
libs=$bundle/lib
[ -n "$wheel_dirs" ] && libs=$libs:$wheel_dirs
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && libs=$libs:$d
done
# The GPU machine's libstdc++ may be older than the one the binaries need.
if ! LD_LIBRARY_PATH=$libs "$bundle/bin/GpuTest" --gtest_list_tests > /dev/null 2> "$out/loader.txt"; then
  if grep -q 'GLIBCXX\|CXXABI\|libstdc++\|libgcc_s' "$out/loader.txt"; then
    echo "gpu-check: the system's libstdc++ is too old; using gpu-bundle/lib-fallback"
    libs=$libs:$bundle/lib-fallback
  fi
fi
echo "LD_LIBRARY_PATH for the bundle: $libs" | tee "$out/env.txt"

# phase NAME LIMIT_S COMMAND...: runs COMMAND under the limit, its output in
# $out/NAME.log and on stdout, its exit status in the summary.
phase() {
  local name=$1 limit=$2
  shift 2
  case " $phases " in *" $name "*) ;; *) return 0 ;; esac
  echo "=== $name (limit ${limit} s): $*"
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  cat "$out/$name.log"
  echo "$name: exit $rc, $(( $(date +%s) - t0 )) s" | tee -a "$summary"
}
# timeout runs programs, not shell functions: our binaries go through env.
bundled=(env LD_LIBRARY_PATH="$libs")

device_info() {
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
             --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1
  nproc
  grep -m1 'model name' /proc/cpuinfo
}
export -f device_info
phase device 15 bash -c device_info
cp "$out/device.log" "$out/device.txt" 2>/dev/null

phase test 90 "${bundled[@]}" "$bundle/bin/GpuTest" --gtest_color=no \
      --gtest_output=xml:"$out/gputest.xml"

phase runtime 60 "${bundled[@]}" "$bundle/bin/CudaRuntimeTest" --gtest_color=no

phase bench 60 "${bundled[@]}" "$bundle/bin/gpu_step_bench" \
      --batches=128,1024 --warmup=20 --steps=200 \
      --json="$out/gpu_step_bench.json"

model_dir=$(mktemp -d /tmp/fashion_mnist_cuda.XXXXXX)
phase fashion 150 "${bundled[@]}" "$bundle/bin/fashion_mnist_aot_cuda" \
      --device=cuda:0 --data_dir="$bundle/data/fashion-mnist" \
      --model_dir="$model_dir" --epochs="${FASHION_EPOCHS:-15}" \
      --min_accuracy=0.90 --log_step_count_steps=500
rm -rf "$model_dir"

phase torch 150 python3 "$bundle/torch_peer.py" --budget_s=110 \
      --json="$out/torch_peer.json"

echo "=== summary ($(( $(date +%s) - start )) s; logs in $out)"
cat "$summary"
! grep -vq ': exit 0,' "$summary"
