#!/usr/bin/env python3
"""Kills the example trainer with SIGKILL mid-run, again and again, and checks
crash safety (issue 5's acceptance test):

  - after every kill, model_dir holds no half-written checkpoint: the state
    file parses, every checkpoint it lists exists and passes
    `estc-ckpt --verify` (CRC32C of every tensor);
  - every restart resumes at the latest checkpoint's step (its first log line
    is `step = <checkpoint step + 1>`);
  - the run finishes at max_steps with a valid checkpoint whose tensors are
    bit-identical to those of an uninterrupted run with the same seed (the
    input is a pure function of the step: --step_indexed_input).

usage: sigkill_restart.py TRAINER ESTC_CKPT DATA_DIR WORK_DIR
Needs the shared MNIST test set (DATA_DIR/mnist-t10k); exits 77 (ctest:
skipped) with a message when it is absent.
"""
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

MAX_STEPS = 60
SAVE_EVERY = 4
KILL_ATTEMPTS = 6


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def trainer_args(trainer, data, model_dir):
    return [trainer, "--data_dir=" + data, "--eval_holdout=2000",
            "--train_steps=%d" % MAX_STEPS, "--batch_size=32",
            "--save_checkpoints_steps=%d" % SAVE_EVERY, "--seed=3",
            "--threads=1", "--step_indexed_input",
            "--model_dir=" + model_dir]


def tensors(path):
    """safetensors file -> {name: (dtype, shape, bytes)} (metadata left out)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), data[begin:end])
    return out


def state(model_dir):
    """(latest step, listed prefixes) from the text state file, or (None, [])."""
    path = os.path.join(model_dir, "checkpoint")
    if not os.path.exists(path):
        return None, []
    text = open(path).read()
    latest = re.search(r'^model_checkpoint_path: "([^"]+)"$', text, re.M)
    if not latest:
        fail("state file without model_checkpoint_path:\n" + text)
    listed = re.findall(r'^all_model_checkpoint_paths: "([^"]+)"$', text, re.M)
    return int(latest.group(1).rsplit("-", 1)[1]), listed


def check_model_dir(ckpt_tool, model_dir):
    latest, listed = state(model_dir)
    for prefix in listed:
        path = os.path.join(model_dir, prefix)
        r = subprocess.run([ckpt_tool, "--verify", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("listed checkpoint %s does not verify: %s" %
                 (prefix, r.stdout + r.stderr))
    return latest


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    trainer, ckpt_tool, data_dir, work = sys.argv[1:]
    data = os.path.join(data_dir, "mnist-t10k")
    if not os.path.exists(os.path.join(data, "t10k-images-idx3-ubyte.gz")):
        print("SKIP: shared data set not found: %s (set ESTC_DATA_DIR)" % data)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    reference = os.path.join(work, "reference")
    killed = os.path.join(work, "killed")

    start = time.monotonic()
    r = subprocess.run(trainer_args(trainer, data, reference),
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("uninterrupted run failed:\n" + r.stderr)
    # Kill moments are fractions of an uninterrupted run's time, so the test
    # means the same on a fast machine and on a loaded one.
    duration = time.monotonic() - start

    rng = random.Random(11)
    kills = 0
    resumes = []
    for attempt in range(KILL_ATTEMPTS + 1):
        before = check_model_dir(ckpt_tool, killed) if os.path.exists(
            killed) else None
        log_path = os.path.join(work, "run-%d.log" % attempt)
        with open(log_path, "w") as log:
            p = subprocess.Popen(trainer_args(trainer, data, killed),
                                 stdout=log, stderr=subprocess.STDOUT)
            # The last attempt runs to the end.
            delay = (rng.uniform(0.1, 0.45) * duration
                     if attempt < KILL_ATTEMPTS else None)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
        out = open(log_path).read()
        first = re.search(r"loss = [^,]+, step = (\d+)", out)
        if first:
            expected = (before or 0) + 1
            if int(first.group(1)) != expected:
                fail("run %d resumed at step %s, the latest checkpoint was "
                     "%s:\n%s" % (attempt, first.group(1), before, out))
            resumes.append(int(first.group(1)) - 1)
        if p.returncode == 0:
            break
        if p.returncode != -signal.SIGKILL:
            fail("run %d exited with %d:\n%s" % (attempt, p.returncode, out))
        check_model_dir(ckpt_tool, killed)
    else:
        fail("training did not finish after %d kills" % kills)

    latest = check_model_dir(ckpt_tool, killed)
    if latest != MAX_STEPS:
        fail("finished at checkpoint step %s, not %d" % (latest, MAX_STEPS))
    if kills < 2:
        fail("only %d kill(s) landed mid-run; the test proves nothing" % kills)
    final = "model.ckpt-%d.safetensors" % MAX_STEPS
    a = tensors(os.path.join(reference, final))
    b = tensors(os.path.join(killed, final))
    if a.keys() != b.keys():
        fail("variables differ: %s" % sorted(set(a) ^ set(b)))
    for name in sorted(a):
        if a[name] != b[name]:
            fail("variable %s differs from the uninterrupted run" % name)
    print("PASS: %d kills, resumed from steps %s, %d variables bit-identical "
          "to the uninterrupted run at step %d" %
          (kills, resumes, len(a), MAX_STEPS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
