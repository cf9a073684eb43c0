#!/usr/bin/env python3
"""TF 2.15's side of bench/checkpoint.sh: the tensors of checkpoint_bench
(`tensors` float32 variables of `mib` MiB in all) saved with SaveV2 and
restored with RestoreV2 (the ops tf.compat.v1.train.Saver and
tf.train.Checkpoint run), eagerly; the restore in a child process whose peak
resident memory during the restore is measured as checkpoint_bench's
(VmHWM reset before it, minus VmRSS before it). Prints one line like checkpoint_bench's:

  format=tf-2.15 mib=1024 save_s=... save_mib_s=... restore_s=...
  restore_mib_s=... restore_peak_rss_mib=... rss_ratio=...

usage: tf_checkpoint_peer.py [--mib=1024] [--tensors=64] [--dir=DIR]
                             [--repeats=3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])


def restore_child(prefix, names, elements):
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf
    tf.constant(0.0) + 1  # TF's runtime up before the measurement
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    base = status_kb("VmRSS")
    t0 = time.perf_counter()
    out = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=names,
                               shape_and_slices=[""] * len(names),
                               dtypes=[tf.float32] * len(names))
    assert len(out) == len(names) and int(out[0].shape[0]) == elements
    dt = time.perf_counter() - t0
    peak = status_kb("VmHWM") - base
    print(f"{dt} {peak / 1024.0}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--tensors", type=int, default=64)
    ap.add_argument("--dir", default="/tmp/estc-checkpoint-bench-tf")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--restore-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    elements = args.mib * (1 << 20) // 4 // args.tensors
    names = [f"layer_{t:03d}/kernel" for t in range(args.tensors)]
    if args.restore_child:
        restore_child(args.restore_child[0], names, elements)
        return 0
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    i = np.arange(elements, dtype=np.uint64)
    tensors = [tf.constant(((i * 2654435761 + t) % 1000).astype(np.float32) * 1e-3)
               for t in range(args.tensors)]
    mibs = elements * 4 * args.tensors / (1 << 20)
    save, restore, rss = [], [], []
    for _ in range(args.repeats):
        shutil.rmtree(args.dir, ignore_errors=True)
        os.makedirs(args.dir)
        prefix = os.path.join(args.dir, "model.ckpt-1")
        t0 = time.perf_counter()
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                          shape_and_slices=[""] * len(names), tensors=tensors)
        save.append(time.perf_counter() - t0)
        r = subprocess.run([sys.executable, __file__, f"--mib={args.mib}",
                            f"--tensors={args.tensors}", "--restore-child",
                            prefix, "x"], capture_output=True, text=True, check=True)
        dt, peak = map(float, r.stdout.split())
        restore.append(dt)
        rss.append(peak)
    shutil.rmtree(args.dir, ignore_errors=True)
    s, r, m = statistics.median(save), statistics.median(restore), statistics.median(rss)
    print(f"format=tf-{tf.__version__} mib={mibs:.0f} save_s={s:.3f} "
          f"save_mib_s={mibs / s:.0f} restore_s={r:.3f} restore_mib_s={mibs / r:.0f} "
          f"restore_peak_rss_mib={m:.0f} rss_ratio={m / mibs:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
