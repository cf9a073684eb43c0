#!/bin/sh
# Saving and restoring a large checkpoint, estc against TF 2.15, in one run:
#
#   bench/checkpoint.sh [BUILD_DIR]            (default: build)
#
# BUILD_DIR/bin/checkpoint_bench writes MIB MiB of float32 variables
# (TENSORS of them) with train::Saver in TF's format and in safetensors,
# each fsynced (the default: a checkpoint that survives a power loss) and
# not (RunConfigOptions::sync_checkpoints false: written and renamed, TF's
# Saver's guarantee) and restores them with restore_latest (every
# CRC32C checked) in a fresh child; bench/tf_checkpoint_peer.py does the same
# with TF's SaveV2 / RestoreV2 (which neither fsyncs nor, on restore, checks
# more than each tensor's CRC32C either). Each side REPEAT times,
# alternating; each prints the median. Then the ratios estc / TF (save and
# restore MiB/s: above 1 is faster than TF) and each restore's peak resident
# memory over the variables' size. Prints the CPU and the load average.
# Environment: MIB (1024), TENSORS (64), REPEAT (3), DIR (/tmp: where the
# checkpoints are written; a tmpfs measures the CPU side alone).
set -eu
build=${1:-build}
mib=${MIB:-1024}
tensors=${TENSORS:-64}
repeat=${REPEAT:-3}
dir=${DIR:-/tmp}
here=$(dirname "$0")

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
tf=$(python3 "$here/tf_checkpoint_peer.py" --mib="$mib" --tensors="$tensors" \
       --repeats="$repeat" --dir="$dir/estc-checkpoint-bench-tf" 2>/dev/null) ||
  tf="SKIP: TensorFlow 2.15 is not installed"
runs=""
for sync in true false; do
  for format in tf safetensors; do
    runs="$runs
$("$build/bin/checkpoint_bench" --mib="$mib" --tensors="$tensors" \
     --repeats="$repeat" --format="$format" --sync="$sync" \
     --dir="$dir/estc-checkpoint-bench")"
  done
done
echo "$tf"
echo "$runs" | sed '/^$/d'
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
case $tf in SKIP*) exit 0 ;; esac
echo "$runs" | sed '/^$/d' | while read -r side; do
  awk -v f="$(field "$side" format)" -v y="$(field "$side" sync)" \
      -v s="$(field "$side" save_mib_s)" -v ts="$(field "$tf" save_mib_s)" \
      -v r="$(field "$side" restore_mib_s)" -v tr="$(field "$tf" restore_mib_s)" \
      -v m="$(field "$side" rss_ratio)" -v tm="$(field "$tf" rss_ratio)" \
      'BEGIN { printf "estc %s %s / TF: save %.2fx, restore %.2fx; restore peak memory %.3fx of the variables (TF %.3fx)\n", f, (y == 1 ? "fsynced" : "unsynced as TF"), s / ts, r / tr, m, tm }'
done
