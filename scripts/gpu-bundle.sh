#!/usr/bin/env bash
# scripts/gpu-bundle.sh [BUILD_DIR]
#
# Builds what the GPU machine runs (it has the NVIDIA driver, PyTorch and its
# CUDA wheels, but no LLVM/MLIR and no estc build: docs/design/gpu.md,
# "Tests") and gathers it into gpu-bundle/ at the repository root:
#   bin/          GpuTest, CudaRuntimeTest, gpu_step_bench,
#                 fashion_mnist_aot_cuda
#   lib/          every shared library they load that is not the system's
#                 (ldd: libEstcRuntime.so, libprotobuf, ...; not libc, libm,
#                 libstdc++, libgcc_s, the loader)
#   lib-fallback/ libstdc++ and libgcc_s of this machine, which
#                 scripts/gpu-check.sh adds only when the GPU machine's are
#                 older than the binaries need
#   data/fashion-mnist/  the four .gz files of /usr/share/datasets/fashion-mnist
#   torch_peer.py
# scripts/gpu-check.sh, run there from the repository root, uses it. The
# bundle is not committed (.gitignore); carry it to the GPU machine with the
# working tree (the device tool's `carry: ["gpu-bundle"]`).
#
# BUILD_DIR (default ./build-gpu) is configured if it has no CMakeCache.txt,
# with the runtime's CPU kernels built for AVX2 (ESTC_KERNEL_ISA=avx2: the
# GPU machine's CPU may lack AVX-512; the CPU side of GpuTest runs there).
# Fails, with one line, when the CUDA toolkit is missing (nothing to bundle),
# when a bundled binary would load LLVM or MLIR, or when the bundle is 60 MiB
# or more.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
bundle=$root/gpu-bundle
data=${ESTC_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
targets=(GpuTest CudaRuntimeTest gpu_step_bench fashion_mnist_aot_cuda)

fail() { echo "gpu-bundle: error: $*" >&2; exit 1; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "gpu-bundle: configuring $build (ESTC_KERNEL_ISA=avx2)"
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/work}
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DESTC_KERNEL_ISA=avx2 >/dev/null
fi
isa=$(sed -n 's/^ESTC_KERNEL_ISA:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ "$isa" != avx2 ] && [ "$isa" != generic ]; then
  echo "gpu-bundle: warning: $build builds the runtime's kernels with" \
       "ESTC_KERNEL_ISA=$isa (auto: the build machine's best); the CPU half of GpuTest stops on a GPU machine" \
       "whose CPU lacks that ISA (configure with -DESTC_KERNEL_ISA=avx2)"
fi

echo "gpu-bundle: building ${targets[*]} in $build"
if ! nice -n 10 ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" \
     > "$build/gpu-bundle-build.log" 2>&1; then
  tail -20 "$build/gpu-bundle-build.log" >&2
  grep -q "unknown target" "$build/gpu-bundle-build.log" &&
    fail "a target is missing: GpuTest, gpu_step_bench and fashion_mnist_aot_cuda are built only with the CUDA toolkit (ESTC_CUDA_TOOLKIT)"
  fail "the build failed (log: $build/gpu-bundle-build.log)"
fi

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/lib-fallback" \
         "$bundle/data/fashion-mnist"
for t in "${targets[@]}"; do
  cp "$build/bin/$t" "$bundle/bin/"
done

# The system's libraries stay the GPU machine's own.
system='^(linux-vdso|ld-linux[^ ]*|libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libutil|libresolv)\.so'
for t in "${targets[@]}"; do
  ldd "$build/bin/$t" | grep -q 'not found' &&
    fail "$t: $(ldd "$build/bin/$t" | grep 'not found' | head -1 | xargs)"
  if ldd "$build/bin/$t" | grep -Eq 'lib(LLVM|MLIR)'; then
    fail "$t loads LLVM or MLIR: $(ldd "$build/bin/$t" | grep -E 'lib(LLVM|MLIR)' | head -1 | xargs)"
  fi
  ldd "$build/bin/$t" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
    while read -r soname path; do
      if ! echo "$soname" | grep -Eq "$system"; then
        cp -L "$path" "$bundle/lib/$soname"
      fi
    done
done
for lib in libstdc++.so.6 libgcc_s.so.1; do
  path=$(ldd "$build/bin/GpuTest" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] && cp -L "$path" "$bundle/lib-fallback/$lib"
done

for f in train-images-idx3-ubyte train-labels-idx1-ubyte \
         t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "$data/$f.gz" ] || fail "$data/$f.gz: no such file (apt-get install dataset-fashion-mnist, or set ESTC_FASHION_MNIST_DIR)"
  cp "$data/$f.gz" "$bundle/data/fashion-mnist/"
done
cp "$root/bench/gpu/torch_peer.py" "$bundle/"
strip --strip-unneeded "$bundle/bin/"* "$bundle/lib/"*.so* 2>/dev/null || true

# What the bundle is, for the log of the GPU run.
{
  echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (modified)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $build (ESTC_KERNEL_ISA=$isa)"
  (cd "$bundle" && find bin lib lib-fallback data -type f | sort | xargs ls -l)
} > "$bundle/MANIFEST.txt"

size=$(du -sm "$bundle" | cut -f1)
[ "$size" -lt 60 ] || fail "the bundle is $size MiB (limit 60)"
echo "gpu-bundle: $bundle: $size MiB"
ls "$bundle/bin" "$bundle/lib" | sed 's/^/  /'
