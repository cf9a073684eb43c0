#!/usr/bin/env python3
"""Trains a small model under injected file faults (issue 11) and checks, for
each fault, what the run reports and what it leaves in model_dir.

Every case resumes a model_dir checkpointed at step 8 and trains to step 16
(checkpoints every 4 steps) with libestc_fault_inject.so preloaded
(fault_inject.c: which call fails, on which paths, how, at which matching
call). The faults hit the checkpoint file of step 12, the state file
`checkpoint`, the event files of model_dir and model_dir/eval (write: ENOSPC,
EIO, a short write then ENOSPC; fsync: EIO; open, close, rename, the fsync of
the directory), and the reads of a restore (EIO). The checks:

  - the fault happened (the shim's log);
  - a failed write stops training with exit status 1 and exactly one
    error-or-warning line on stderr, `fault_train: error: <file>: <what>:
    <strerror>`; a failed read during restore is one warning line and the
    run goes on from the previous checkpoint; short writes alone change
    nothing;
  - model_dir afterwards: no temporary file, a state file whose latest
    checkpoint is the expected step, no checkpoint file newer than it,
    every listed checkpoint passes `estc-ckpt --verify`, every event file
    is whole (framing and both CRCs of every record);
  - a run without faults then restores that step (its first step is the
    next one), trains to step 16 without a warning, and its checkpoint is
    byte for byte the one of a run that never failed.

usage: fault_injection.py FAULT_TRAIN SHIM ESTC_CKPT WORK_DIR
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys

# The checkpoint and event-file readers the e2e tests use (written from
# docs/checkpoint-format.md, independent of the C++ ones).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from estc_files import masked_crc32c, tensors  # noqa: E402

MAX_STEPS = 16
BASE_STEPS = 8

# (name, op, path pattern ({md}: model_dir), errno, nth, times,
#  expected outcome, expected line (a regex; {md}: model_dir), restored step)
#   outcome "error": exit 1, the line is the only error/warning line;
#   "warning": exit 0, the line is the only one; "ok": exit 0, no line.
ENOSPC = "No space left on device"
EIO = "Input/output error"
CKPT = r"{md}/model\.ckpt-12\.safetensors"
STATE = r"{md}/checkpoint"
EVENTS = r"{md}/events\.out\.tfevents\.[^/]+"
EVAL_EVENTS = r"{md}/eval/events\.out\.tfevents\.[^/]+"
ERROR = "fault_train: error: "
CASES = [
    # The checkpoint file of step 12 (its temporary file, then the rename).
    ("ckpt_write_enospc", "write", "{md}/model.ckpt-12.safetensors.tmp-*",
     "ENOSPC", 1, 1, "error", ERROR + CKPT + ": cannot write: " + ENOSPC, 8),
    ("ckpt_write_eio", "write", "{md}/model.ckpt-12.safetensors.tmp-*",
     "EIO", 1, 1, "error", ERROR + CKPT + ": cannot write: " + EIO, 8),
    ("ckpt_short_then_enospc", "write", "{md}/model.ckpt-12.safetensors.tmp-*",
     "short:ENOSPC", 1, 0, "error", ERROR + CKPT + ": cannot write: " + ENOSPC,
     8),
    ("ckpt_fsync_eio", "fsync", "{md}/model.ckpt-12.safetensors.tmp-*",
     "EIO", 1, 1, "error", ERROR + CKPT + ": cannot write: " + EIO, 8),
    ("ckpt_open_enospc", "open", "{md}/model.ckpt-12.safetensors.tmp-*",
     "ENOSPC", 1, 1, "error", ERROR + CKPT + ": cannot write: " + ENOSPC, 8),
    ("ckpt_close_eio", "close", "{md}/model.ckpt-12.safetensors.tmp-*",
     "EIO", 1, 1, "error", ERROR + CKPT + ": cannot write: " + EIO, 8),
    ("ckpt_rename_eio", "rename", "{md}/model.ckpt-12.safetensors",
     "EIO", 1, 1, "error", ERROR + CKPT + ": cannot write: " + EIO, 8),
    # The fsyncs of model_dir itself, after each rename: the re-saved step 8,
    # the state, then step 12 (its file is in place; the save removes it).
    ("dir_fsync_eio", "fsync", "{md}", "EIO", 3, 1, "error",
     ERROR + CKPT + ": cannot sync its directory: " + EIO, 8),
    # The state file: the 1st write is the re-save of step 8 when training
    # starts, the 2nd the save of step 12.
    ("state_write_enospc", "write", "{md}/checkpoint.tmp-*", "ENOSPC", 2, 1,
     "error", ERROR + STATE + ": cannot write: " + ENOSPC, 8),
    ("state_write_eio", "write", "{md}/checkpoint.tmp-*", "EIO", 2, 1,
     "error", ERROR + STATE + ": cannot write: " + EIO, 8),
    ("state_fsync_eio", "fsync", "{md}/checkpoint.tmp-*", "EIO", 2, 1,
     "error", ERROR + STATE + ": cannot write: " + EIO, 8),
    # model_dir's event file: the 1st write is its file_version record, the
    # 2nd the summaries of step 9; fsyncs: at its creation, then at the end.
    ("events_write_enospc", "write", "{md}/events.out.tfevents.*", "ENOSPC",
     2, 1, "error", ERROR + EVENTS + ": cannot write: " + ENOSPC, 8),
    ("events_write_eio", "write", "{md}/events.out.tfevents.*", "EIO", 2, 1,
     "error", ERROR + EVENTS + ": cannot write: " + EIO, 8),
    ("events_create_fsync_eio", "fsync", "{md}/events.out.tfevents.*", "EIO",
     1, 1, "error", ERROR + EVENTS + ": cannot write: " + EIO, 8),
    # model_dir/eval's: created by the evaluation of step 12, which writes
    # the metrics (2nd write) and fsyncs them (2nd fsync).
    ("eval_events_write_enospc", "write", "{md}/eval/events.out.tfevents.*",
     "ENOSPC", 2, 1, "error", ERROR + EVAL_EVENTS + ": cannot write: " + ENOSPC,
     12),
    ("eval_events_fsync_eio", "fsync", "{md}/eval/events.out.tfevents.*",
     "EIO", 2, 1, "error", ERROR + EVAL_EVENTS + ": cannot write: " + EIO, 12),
    # Every write into model_dir moves half its bytes: nothing changes.
    ("all_writes_short", "write", "{md}/*", "short", 1, 0, "ok", None, None),
    # Restoring: the newest checkpoint cannot be read, then the state file.
    ("restore_read_eio", "read", "{md}/model.ckpt-8.safetensors", "EIO", 1, 1,
     "warning", r"estc: warning: {md}/model\.ckpt-8\.safetensors: cannot read "
     r"the header length: " + EIO + "; falling back to an older checkpoint",
     4),
    ("state_read_eio", "read", "{md}/checkpoint", "EIO", 1, 1, "warning",
     r"estc: warning: {md}/checkpoint: cannot read: " + EIO +
     "; looking for checkpoint files in {md} instead", 8),
]



def flip_last_byte(md):
    path = os.path.join(md, "model.ckpt-8.safetensors")
    blob = bytearray(open(path, "rb").read())
    blob[-1] ^= 0xFF
    open(path, "wb").write(blob)


def truncate(md):
    path = os.path.join(md, "model.ckpt-8.safetensors")
    os.truncate(path, os.path.getsize(path) - 3)


def garble_state(md):
    open(os.path.join(md, "checkpoint"), "w").write("model_checkpoint_path: ")


# (name, what is done to model_dir at step 8, the warning, restored step)
CORRUPTIONS = [
    ("corrupt_newest", flip_last_byte,
     r"estc: warning: {md}/model\.ckpt-8\.safetensors: tensor '[^']+': CRC32C "
     r"mismatch \(stored [0-9a-f]{8}, computed [0-9a-f]{8}\): the data is "
     r"corrupt; falling back to an older checkpoint", 4),
    ("truncated_newest", truncate,
     r"estc: warning: {md}/model\.ckpt-8\.safetensors: tensor '[^']+': data "
     r"\[\d+, \d+\) extends past the end of the file \(data section is \d+ "
     r"bytes; truncated\?\); falling back to an older checkpoint", 4),
    ("corrupt_state", garble_state,
     r"estc: warning: {md}/checkpoint: not a valid CheckpointState text "
     r"file: .*; looking for checkpoint files in {md} instead", 8),
]

failures = []


def fail(case, message):
    failures.append("%s: %s" % (case, message))
    print("FAIL: %s: %s" % (case, message))


def run(args, env=None):
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def problem_lines(stderr):
    return [l for l in stderr.splitlines()
            if re.search(r"\b(error|warning)\b", l, re.I)]


def first_step(stderr):
    m = re.search(r"loss = [^,]+, step = (\d+)", stderr)
    return int(m.group(1)) if m else None


def event_file_problem(path):
    """None when every record of the file is whole and its CRCs match."""
    blob = open(path, "rb").read()
    pos = 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            return "truncated length at offset %d" % pos
        (length,) = struct.unpack("<Q", blob[pos:pos + 8])
        (lcrc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if masked_crc32c(blob[pos:pos + 8]) != lcrc:
            return "length CRC mismatch at offset %d" % pos
        end = pos + 12 + length + 4
        if end > len(blob):
            return "truncated record at offset %d" % pos
        data = blob[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack("<I", blob[end - 4:end])
        if masked_crc32c(data) != dcrc:
            return "data CRC mismatch at offset %d" % pos
        pos = end
    return None if blob else "empty"


def state_of(md):
    """(latest step, listed prefixes) of the state file, or (None, [])."""
    path = os.path.join(md, "checkpoint")
    if not os.path.exists(path):
        return None, []
    text = open(path).read()
    latest = re.search(r'^model_checkpoint_path: "([^"]+)"$', text, re.M)
    listed = re.findall(r'^all_model_checkpoint_paths: "([^"]+)"$', text,
                        re.M)
    if not latest:
        return None, listed
    return int(latest.group(1).rsplit("-", 1)[1]), listed


def check_model_dir(case, md, ckpt_tool, expected_latest):
    for root, _, names in os.walk(md):
        for name in names:
            if ".tmp-" in name:
                fail(case, "temporary file left: " + os.path.join(root, name))
            if "tfevents" in name:
                problem = event_file_problem(os.path.join(root, name))
                if problem:
                    fail(case, "event file %s: %s" % (name, problem))
    latest, listed = state_of(md)
    if latest != expected_latest:
        fail(case, "the state file's latest checkpoint is step %s, expected "
             "%s" % (latest, expected_latest))
    for name in os.listdir(md):
        m = re.fullmatch(r"model\.ckpt-(\d+)\.safetensors", name)
        if m and latest is not None and int(m.group(1)) > latest:
            fail(case, "%s is newer than the latest checkpoint" % name)
    for prefix in listed:
        r = subprocess.run([ckpt_tool, "--verify", os.path.join(md, prefix)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(case, "listed checkpoint %s does not verify: %s" %
                 (prefix, r.stdout + r.stderr))


def same_final_checkpoint(case, md, reference):
    final = "model.ckpt-%d.safetensors" % MAX_STEPS
    path = os.path.join(md, final)
    if not os.path.exists(path):
        fail(case, "no %s at the end" % final)
        return
    a, b = tensors(os.path.join(reference, final)), tensors(path)
    if a != b:
        differ = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
        fail(case, "final checkpoint differs from the run without faults "
             "in %s" % differ)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    trainer, shim, ckpt_tool, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ESTC_FAULT_") and k != "LD_PRELOAD"}

    def train(md, steps, extra_env=None):
        e = dict(env)
        e.update(extra_env or {})
        return run([trainer, "--model_dir=" + md,
                    "--train_steps=%d" % steps], e)

    reference = os.path.join(work, "reference")
    rc, _, err = train(reference, MAX_STEPS)
    if rc != 0 or problem_lines(err):
        print("FAIL: the run without faults failed:\n" + err)
        return 1
    base = os.path.join(work, "base")
    rc, _, err = train(base, BASE_STEPS)
    if rc != 0 or problem_lines(err):
        print("FAIL: the run to step %d failed:\n" % BASE_STEPS + err)
        return 1

    def check(case, md, rc, err, outcome, line, restored):
        lines = problem_lines(err)
        want_rc = 1 if outcome == "error" else 0
        if rc != want_rc:
            fail(case, "exit status %d, expected %d" % (rc, want_rc))
        if outcome == "ok":
            if lines:
                fail(case, "unexpected lines: %s" % lines)
        else:
            pattern_line = line.replace("{md}", re.escape(md))
            if len(lines) != 1 or not re.fullmatch(pattern_line, lines[0]):
                fail(case, "expected exactly one line matching\n  %s\ngot %s"
                     % (pattern_line, lines))
        if outcome == "warning" and first_step(err) != restored + 1:
            fail(case, "training went on from step %s, expected %d" %
                 (first_step(err), restored + 1))
        if outcome == "error":
            check_model_dir(case, md, ckpt_tool, restored)
            # Without the fault: model_dir restores that checkpoint.
            rc, _, err = train(md, MAX_STEPS)
            if rc != 0 or problem_lines(err):
                fail(case, "the run after the fault failed (%d):\n%s" %
                     (rc, err))
            elif first_step(err) != restored + 1:
                fail(case, "the run after the fault started at step %s, "
                     "expected %d" % (first_step(err), restored + 1))
        check_model_dir(case, md, ckpt_tool, MAX_STEPS)
        same_final_checkpoint(case, md, reference)
        return lines

    for (case, op, pattern, errno_name, nth, times, outcome, line,
         restored) in CASES:
        md = os.path.join(work, case)
        shutil.copytree(base, md)
        log = os.path.join(work, case + ".faults")
        # Under ASan (GCC's dynamic runtime), the shim comes first in
        # LD_PRELOAD; ASan works with that but checks for it unless told.
        asan = env.get("ASAN_OPTIONS")
        rc, _, err = train(md, MAX_STEPS, {
            "ASAN_OPTIONS": (asan + ":" if asan else "") +
                            "verify_asan_link_order=0",
            "LD_PRELOAD": shim,
            "ESTC_FAULT_OP": op,
            "ESTC_FAULT_PATH": pattern.replace("{md}", md),
            "ESTC_FAULT_ERRNO": errno_name,
            "ESTC_FAULT_NTH": str(nth),
            "ESTC_FAULT_TIMES": str(times),
            "ESTC_FAULT_LOG": log,
        })
        before = len(failures)
        if not os.path.exists(log):
            fail(case, "the fault was never injected (no call matched)")
            continue
        lines = check(case, md, rc, err, outcome, line, restored)
        if len(failures) == before:
            print("PASS: %s (%s %s, %d fault(s)): %s" % (
                case, op, errno_name, len(open(log).read().splitlines()),
                lines[0] if lines else "no error, same checkpoint"))

    # A corrupt newest checkpoint or state file: one warning line, however
    # many readers (train_and_evaluate, the input_fn, the restore) look.
    for case, damage, line, restored in CORRUPTIONS:
        md = os.path.join(work, case)
        shutil.copytree(base, md)
        damage(md)
        rc, _, err = train(md, MAX_STEPS)
        before = len(failures)
        lines = check(case, md, rc, err, "warning", line, restored)
        if len(failures) == before:
            print("PASS: %s: %s" % (case, lines[0]))

    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("PASS: %d fault cases, %d corruptions" % (len(CASES),
                                                   len(CORRUPTIONS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
