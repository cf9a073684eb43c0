#!/usr/bin/env python3
"""Trains the same model several times, with different kernel thread counts,
and checks that every run writes the same results byte for byte:

  - the same checkpoint files (every model.ckpt-*.safetensors in model_dir:
    all variables, the optimizer's slots, global_step), identical bytes;
  - the same state-file listing;
  - the same scalars in the event files, bit for bit: the loss of every step
    the trainer summarizes and every evaluation metric (not the timing
    ones, global_step/sec);
  - the same final evaluation line on stdout.

usage: determinism.py --work=DIR [--threads=1,1,2] [--needs=FILE]
           -- TRAINER ARGS... --model_dir={model_dir} --threads={threads}
'{model_dir}' and '{threads}' in the trainer's command are replaced for each
run. Exits 77 (ctest: skipped) with a message when --needs names a missing
file.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import estc_files  # noqa: E402


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def checkpoint_files(model_dir):
    return sorted(n for n in os.listdir(model_dir)
                  if n.endswith(".safetensors") and ".tmp-" not in n)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def event_scalars(model_dir):
    """{(subdirectory, step, tag): float32 bytes}, timing tags left out."""
    out = {}
    for path in estc_files.event_files(model_dir):
        events, tail = estc_files.read_event_file(path)
        if tail:
            fail("%s ends inside a record" % path)
        rel = os.path.relpath(os.path.dirname(path), model_dir)
        for (step, tag), v in estc_files.scalars(
                events, lambda t: t.endswith("/sec")).items():
            out[(rel, step, tag)] = v
    return out


def run_watching_threads(argv):
    """Runs argv; returns (exit status, stdout, stderr, the threads besides
    the main one that existed, how many of them used CPU time), sampled from
    /proc every 20 ms."""
    with open(os.devnull) as null:
        p = subprocess.Popen(argv, stdin=null, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    ticks = {}
    out = {}

    def sample():
        task_dir = "/proc/%d/task" % p.pid
        try:
            tids = os.listdir(task_dir)
        except OSError:
            return
        for tid in tids:
            try:
                with open(os.path.join(task_dir, tid, "stat")) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # utime and stime: fields 14 and 15 of stat, 12 and 13 here.
            ticks[tid] = max(ticks.get(tid, 0),
                             int(fields[11]) + int(fields[12]))

    readers = [threading.Thread(target=lambda k, f: out.__setitem__(
        k, f.read()), args=(k, f)) for k, f in (("out", p.stdout),
                                                  ("err", p.stderr))]
    for r in readers:
        r.start()
    while p.poll() is None:
        sample()
        time.sleep(0.02)
    for r in readers:
        r.join()
    others = set(tid for tid in ticks if tid != str(p.pid))
    busy = sum(1 for tid in others if ticks[tid] > 0)
    return p.returncode, out["out"], out["err"], others, busy


def describe_difference(a_dir, b_dir, name):
    """Which tensors of checkpoint `name` differ, and by how much."""
    a = estc_files.tensors(os.path.join(a_dir, name))
    b = estc_files.tensors(os.path.join(b_dir, name))
    parts = []
    for tensor in sorted(set(a) | set(b)):
        if a.get(tensor) == b.get(tensor):
            continue
        if tensor not in a or tensor not in b or a[tensor][:2] != b[tensor][:2]:
            parts.append("%s (dtype or shape)" % tensor)
            continue
        da, db = a[tensor][2], b[tensor][2]
        diff = sum(x != y for x, y in zip(da, db))
        parts.append("%s (%d of %d bytes)" % (tensor, diff, len(da)))
    if len(parts) > 8:
        parts = parts[:8] + ["and %d more" % (len(parts) - 8)]
    return ", ".join(parts) or "metadata only"


def main():
    argv = sys.argv[1:]
    if "-h" in argv[:1] or "--help" in argv[:1]:
        print(__doc__)
        sys.exit(0)
    if "--" not in argv:
        print(__doc__)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("--work", required=True)
    parser.add_argument("--threads", default="1,1,2")
    parser.add_argument("--needs")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    for placeholder in ("{model_dir}", "{threads}"):
        if not any(placeholder in a for a in command):
            parser.error("the trainer command needs '%s'" % placeholder)
    if args.needs and not os.path.exists(args.needs):
        print("SKIP: not found: %s (set ESTC_DATA_DIR)" % args.needs)
        return 77
    threads = [int(t) for t in args.threads.split(",")]
    if len(threads) < 2:
        parser.error("--threads: at least two runs to compare")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    runs = []  # (label, model_dir, final line)
    # Threads the 1-thread runs started besides the main one (an input
    # pipeline's, say): a run with more kernel threads must start more. Which
    # of them get CPU time is up to the scheduler and the pool, which runs a
    # region inline when its helpers are late (a loaded machine), so CPU time
    # is reported, not required.
    single = 0
    for i, n in enumerate(threads):
        label = "run %d (%d thread%s)" % (i + 1, n, "" if n == 1 else "s")
        model_dir = os.path.join(args.work, "run-%d-threads-%d" % (i + 1, n))
        argv_i = [a.replace("{model_dir}", model_dir)
                   .replace("{threads}", str(n)) for a in command]
        start = time.monotonic()
        rc, stdout, stderr, others, busy = run_watching_threads(argv_i)
        if rc != 0:
            fail("%s exited with %d:\n%s" % (label, rc, stderr[-3000:]))
        if n == 1:
            single = max(single, len(others))
        elif len(others) <= single:
            fail("%s started %d thread(s) besides the main one, as many as "
                 "a 1-thread run (is the trainer's thread flag ignored?)" %
                 (label, len(others)))
        final = [l for l in stdout.splitlines()
                 if l.startswith("final evaluation:")]
        print("%s: %.1f s, %d other thread(s), %d of them ran; %s" %
              (label, time.monotonic() - start, len(others), busy,
               final[0] if final else "no final line"), flush=True)
        runs.append((label, model_dir, final))

    base_label, base_dir, base_final = runs[0]
    names = checkpoint_files(base_dir)
    if not names:
        fail("%s wrote no checkpoint" % base_label)
    base_state = estc_files.checkpoint_state(base_dir)
    base_scalars = event_scalars(base_dir)
    losses = sorted(step for (d, step, tag) in base_scalars
                    if d == "." and tag == "loss")
    if not losses:
        fail("%s wrote no loss to its event file (the trainer must "
             "summarize the loss: save_summary_steps)" % base_label)
    for label, model_dir, final in runs[1:]:
        if checkpoint_files(model_dir) != names:
            fail("%s wrote checkpoints %s, %s wrote %s" %
                 (label, checkpoint_files(model_dir), base_label, names))
        for name in names:
            if digest(os.path.join(model_dir, name)) != digest(
                    os.path.join(base_dir, name)):
                fail("%s: %s differs from %s's: %s" %
                     (label, name, base_label,
                      describe_difference(base_dir, model_dir, name)))
        if estc_files.checkpoint_state(model_dir) != base_state:
            fail("%s's state file lists %s, %s's %s" %
                 (label, estc_files.checkpoint_state(model_dir), base_label,
                  base_state))
        scalars = event_scalars(model_dir)
        if set(scalars) != set(base_scalars):
            fail("event-file scalars (dir, step, tag) only %s has: %s; only "
                 "%s has: %s" %
                 (label, sorted(set(scalars) - set(base_scalars))[:5],
                  base_label, sorted(set(base_scalars) - set(scalars))[:5]))
        for key in sorted(base_scalars):
            if scalars[key] != base_scalars[key]:
                fail("%s: %s/ step %d '%s' is %r, %s's %r" %
                     ((label,) + key + (
                         estc_files.as_float(scalars[key]), base_label,
                         estc_files.as_float(base_scalars[key]))))
        if final != base_final:
            fail("%s printed %s, %s %s" % (label, final, base_label,
                                           base_final))
    print("PASS: %d runs (threads %s): %d checkpoint files identical byte for "
          "byte, %d event-file scalars (the loss at %d steps, evaluation "
          "metrics) identical bit for bit" %
          (len(runs), args.threads, len(names), len(base_scalars),
           len(losses)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
