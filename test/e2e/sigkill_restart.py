#!/usr/bin/env python3
"""Kills a trainer with SIGKILL at many instants, restarts it each time, and
checks crash safety:

  - after every kill, model_dir holds no half-written checkpoint: the state
    file parses, every checkpoint it lists exists and passes
    `estc-ckpt --verify` (CRC32C of every tensor), and every event file reads
    back (both CRCs of every record; only a file of a killed process may end
    inside its last record, as a SIGKILL mid-write leaves it, which
    TensorBoard reads up to that record);
  - every restart restores the latest checkpoint (its log names it, with no
    warning) and resumes at its step (the first `step = ` log line is the
    checkpoint's step + 1);
  - each round (a fresh model_dir, killed several times, then run to the
    end) finishes with the same checkpoints as an uninterrupted run, byte
    for byte (every file the state file lists), and every scalar its event
    files hold (losses, evaluation metrics; not the timing ones) equals the
    uninterrupted run's at the same step and tag, bit for bit.

Kill instants are drawn for every phase of a run, each phase from a trigger
seen live (a log line, an inotify event in model_dir) plus a random delay
sized from the uninterrupted run's timings:

  startup      from the spawn, within the time to the first step: loading
               data, building the Estimator, restoring the checkpoint
  restore      after a checkpoint file is first opened (restoring it at a
               restart, or for an evaluation), within a read's time
  step         after the k-th `step = N` log line, within one step's time
  checkpoint   after the k-th checkpoint temp file appears, within the data
               write (half of them) or a whole save (writing the data,
               fsync, rename, the state file, deleting the oldest one)
  state        after the k-th temp state file appears, within the time to
               the end of the save
  events       right after the k-th write to an event file
  evaluation   after the k-th saved checkpoint, within an evaluation's time
  anytime      from the spawn, uniform over 90% of what the uninterrupted
               run takes for the steps still to go

The seed (printed; --seed or ESTC_KILL_SEED) fixes the plan: the phase,
trigger count and delay of every kill. The instants themselves also depend
on the machine's timing, so a failure names the kill, its phase and what
the trainer had logged.

--format=tf runs the same kills on a trainer that writes TF's tensor
bundles (its command sets the format, e.g. --checkpoint_format=tf): a
checkpoint is then model.ckpt-N.index + model.ckpt-N.data-00000-of-00001,
both compared byte for byte, and after each round TensorFlow
(tf.train.load_checkpoint of the latest checkpoint its state file names,
every tensor read, CRCs checked) restores the model_dir too, with the
uninterrupted run's values (skipped, with a note, without TensorFlow).

The trainer is a parameter: any command after `--` that trains a model with
the Estimator into the model_dir given by '{model_dir}' (replaced), saves
checkpoints often (every few steps), logs every step (log_step_count_steps
1: the `loss = ..., step = N` lines) and, killed and restarted, computes
exactly what an uninterrupted run does (its input is a function of the
restored state, e.g. the example's --step_indexed_input).

usage: sigkill_restart.py --estc-ckpt=PATH --work=DIR [--kills=N]
           [--kills-per-round=K] [--seed=S] [--phases=a,b] [--needs=FILE]
           [--format=safetensors|tf]
           -- TRAINER ARGS... --model_dir={model_dir} ...
Exits 77 (ctest: skipped) with a message when --needs names a missing file.
"""
import argparse
import ctypes
import hashlib
import os
import random
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import estc_files  # noqa: E402

PHASES = ["startup", "restore", "step", "checkpoint", "state", "events",
          "evaluation", "anytime"]

# The Estimator's log lines (estimator/Estimator.cpp, Hooks.cpp).
STEP_LINE = re.compile(r"loss = [^,]+, step = (\d+)")
RESTORE_LINE = re.compile(r"Restoring parameters from (\S+)")
SAVE_BEGIN_LINE = re.compile(r"before saving checkpoint (\d+)")
SAVE_END_LINE = re.compile(r"after saving checkpoint (\d+)")
EVAL_END_LINE = re.compile(r"Saving dict for global step (\d+)")
WARNING_LINE = re.compile(r"(?i)\bwarning\b")

# Files in model_dir (docs/checkpoint-format.md; temp files of
# fileio::writeFileAtomically end in ".tmp-<pid>-<n>").
CKPT_FILE = re.compile(r"^model\.ckpt-\d+\.safetensors$")
CKPT_TEMP = re.compile(r"^model\.ckpt-\d+\.safetensors\.tmp-")
# --format=tf: a TF checkpoint's index and (one) data file.
TF_CKPT_FILE = re.compile(
    r"^model\.ckpt-\d+\.(index|data-\d{5}-of-\d{5})$")
TF_CKPT_TEMP = re.compile(
    r"^model\.ckpt-\d+\.(index|data-\d{5}-of-\d{5})\.tmp-")
FORMAT = "safetensors"


def checkpoint_files(model_dir, prefix):
    """The files of the checkpoint `prefix` in FORMAT, the data last."""
    base = os.path.join(model_dir, prefix)
    if FORMAT == "tf":
        return [base + ".index", base + ".data-00000-of-00001"]
    return [base + ".safetensors"]


def prefix_of(name):
    """model.ckpt-N of a checkpoint file's name."""
    return re.match(r"^(model\.ckpt-\d+)\.", name).group(1)
STATE_TEMP = re.compile(r"^checkpoint\.tmp-")
EVENT_FILE = re.compile(r"^events\.out\.tfevents\.")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


# --- inotify (Linux), through libc ------------------------------------------

IN_MODIFY = 0x2
IN_CLOSE_NOWRITE = 0x10
IN_OPEN = 0x20
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_ISDIR = 0x40000000
_MASK = (IN_MODIFY | IN_CLOSE_NOWRITE | IN_OPEN | IN_MOVED_TO | IN_CREATE |
         IN_DELETE)
_MASK_NAMES = {IN_MODIFY: "modify", IN_CLOSE_NOWRITE: "close_nowrite",
               IN_OPEN: "open", IN_MOVED_TO: "moved_to", IN_CREATE: "create",
               IN_DELETE: "delete"}


class Inotify:
    """Watches model_dir and its subdirectories (eval*), adding those created
    while it watches."""

    def __init__(self, root):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.root = root
        self.dirs = {}
        self.add(root)
        for name in sorted(os.listdir(root)):
            if os.path.isdir(os.path.join(root, name)):
                self.add(os.path.join(root, name))

    def add(self, path):
        wd = self.libc.inotify_add_watch(self.fd, path.encode(), _MASK)
        if wd >= 0:
            self.dirs[wd] = os.path.relpath(path, self.root)

    def read(self):
        """[(kind, path relative to root, name)] of the pending events."""
        try:
            blob = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        out, pos = [], 0
        while pos + 16 <= len(blob):
            wd, mask, _, n = struct.unpack_from("iIII", blob, pos)
            name = blob[pos + 16:pos + 16 + n].rstrip(b"\0").decode()
            pos += 16 + n
            rel = self.dirs.get(wd)
            if rel is None:
                continue
            if mask & IN_ISDIR:
                if mask & IN_CREATE:
                    self.add(os.path.join(self.root, rel, name))
                continue
            for bit, kind in _MASK_NAMES.items():
                if mask & bit:
                    out.append((kind, rel, name))
        return out

    def close(self):
        os.close(self.fd)


# --- One run of the trainer ---------------------------------------------------

class Trigger:
    """Kill `delay` seconds after the k-th occurrence of an event: the spawn
    (source "start"), a log line matching `pattern` ("line"), or an inotify
    event of kind `kind` on a file whose name matches `pattern` ("file")."""

    def __init__(self, phase, source, delay, pattern=None, kind=None, k=1):
        self.phase, self.source, self.delay = phase, source, delay
        self.pattern, self.kind, self.k = pattern, kind, k

    def describe(self):
        what = {"start": "the spawn",
                "line": "log line %d matching /%s/" % (
                    self.k, self.pattern and self.pattern.pattern),
                "file": "%s #%d of /%s/" % (
                    self.kind, self.k, self.pattern and self.pattern.pattern)}
        return "%s: %.2f ms after %s" % (self.phase, self.delay * 1e3,
                                         what[self.source])


class Attempt:
    def __init__(self):
        self.rc = None
        self.killed = False
        self.kill_time = None
        self.duration = None
        self.trace = []  # (seconds since the spawn, "line"|"file", detail)
        self.lines = []


def run_trainer(command, model_dir, log_path, trigger=None, timeout=600):
    """Runs the trainer once, recording its log lines and model_dir's file
    events with their times; kills it as `trigger` says."""
    os.makedirs(model_dir, exist_ok=True)
    watch = Inotify(model_dir)
    attempt = Attempt()
    log = open(log_path, "wb")
    start = time.monotonic()
    p = subprocess.Popen(command, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    pipe = p.stdout.fileno()
    kill_at = start + trigger.delay if (
        trigger and trigger.source == "start") else None
    seen = 0
    pending = b""

    def kill_now():
        if not attempt.killed:
            p.send_signal(signal.SIGKILL)
            attempt.killed = True
            attempt.kill_time = time.monotonic() - start

    def fired():
        nonlocal seen, kill_at
        seen += 1
        if seen == trigger.k:
            if trigger.delay <= 0:
                kill_now()
            else:
                kill_at = time.monotonic() + trigger.delay

    open_fds = [pipe, watch.fd]
    while pipe in open_fds:
        now = time.monotonic()
        if kill_at is not None and now >= kill_at:
            kill_now()
            kill_at = None
        if now - start > timeout:
            kill_now()
            fail("%s: still running after %d s; killed (log: %s)" %
                 (" ".join(command), timeout, log_path))
        wait = 1.0 if kill_at is None else max(0.0, kill_at - now)
        ready, _, _ = select.select(open_fds, [], [], wait)
        t = time.monotonic() - start
        if watch.fd in ready:
            for kind, rel, name in watch.read():
                attempt.trace.append((t, "file", (kind, rel, name)))
                if (trigger and trigger.source == "file" and
                        kind == trigger.kind and trigger.pattern.match(name)):
                    fired()
        if pipe in ready:
            chunk = os.read(pipe, 65536)
            if not chunk:
                open_fds.remove(pipe)
                continue
            log.write(chunk)
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace")
                attempt.lines.append(line)
                attempt.trace.append((t, "line", line))
                if (trigger and trigger.source == "line" and
                        trigger.pattern.search(line)):
                    fired()
    # The pipe closed: the trainer exited (or was killed). A kill sent to a
    # process that had already exited does not count: wait() says which.
    if pending:
        attempt.lines.append(pending.decode(errors="replace"))
    attempt.rc = p.wait()
    attempt.duration = time.monotonic() - start
    attempt.killed = attempt.rc == -signal.SIGKILL
    for kind, rel, name in watch.read():
        attempt.trace.append((attempt.duration, "file", (kind, rel, name)))
    watch.close()
    log.close()
    return attempt


# --- Phase timings of the uninterrupted run -----------------------------------

class Timings:
    """What the triggers' delays are drawn from: the uninterrupted run's
    duration, time to its first step, and the median step time, checkpoint
    save (from its temp file's creation to the end of the save), data write
    (creation to the first write's end), state-file update, checkpoint read
    (an evaluation's restore) and evaluation times."""

    def __init__(self, attempt):
        self.total = attempt.duration
        steps, saves, writes, states, reads, evals = [], [], [], [], [], []
        first_step = last_step = None
        ckpt_start = state_start = eval_start = read_start = read_end = None
        for t, kind, detail in attempt.trace:
            if kind == "line":
                if STEP_LINE.search(detail):
                    if first_step is None:
                        first_step = t
                    if last_step is not None:
                        steps.append(t - last_step)
                    last_step = t
                elif SAVE_END_LINE.search(detail):
                    if ckpt_start is not None:
                        saves.append(t - ckpt_start)
                    if state_start is not None:
                        states.append(t - state_start)
                    ckpt_start = state_start = None
                    eval_start = t
                    read_start = read_end = None
                elif EVAL_END_LINE.search(detail) and eval_start is not None:
                    evals.append(t - eval_start)
                    if read_start is not None:
                        reads.append(read_end - read_start)
                    eval_start = None
                continue
            what, _, name = detail
            if what == "create" and CKPT_TEMP.match(name):
                ckpt_start = t
            elif (what == "modify" and CKPT_TEMP.match(name) and
                  ckpt_start is not None and len(writes) < len(saves) + 1):
                writes.append(t - ckpt_start)
            elif what == "create" and STATE_TEMP.match(name):
                state_start = t
            elif eval_start is not None and CKPT_FILE.match(name):
                if what == "open" and read_start is None:
                    read_start = t
                elif what == "close_nowrite":
                    read_end = t
        if first_step is None or not saves or not evals:
            fail("the uninterrupted run logged no step, save or evaluation; "
                 "the trainer must log every step and evaluate after each "
                 "checkpoint")
        self.first_step = first_step
        self.step = statistics.median(steps) if steps else first_step
        self.save = statistics.median(saves)
        self.write = statistics.median(writes) if writes else self.save
        self.state = statistics.median(states) if states else self.save
        self.read = statistics.median(reads) if reads else self.first_step
        self.evaluation = statistics.median(evals)

    def __str__(self):
        return ("run %.2f s, first step at %.2f s, step %.1f ms, checkpoint "
                "save %.1f ms (data write %.1f ms, state file %.1f ms), "
                "checkpoint read %.1f ms, evaluation %.1f ms" %
                (self.total, self.first_step, self.step * 1e3,
                 self.save * 1e3, self.write * 1e3, self.state * 1e3,
                 self.read * 1e3, self.evaluation * 1e3))


def draw_trigger(phase, rng, timings, left):
    """A trigger for `phase`; `left` is the fraction of the run still to go
    (from the latest checkpoint's step)."""
    if phase == "startup":
        return Trigger(phase, "start", rng.uniform(0, timings.first_step))
    if phase == "restore":
        return Trigger(phase, "file", rng.uniform(0, timings.read),
                       pattern=CKPT_FILE, kind="open")
    if phase == "step":
        return Trigger(phase, "line", rng.uniform(0, timings.step),
                       pattern=STEP_LINE, k=rng.randint(1, 8))
    if phase == "checkpoint":
        # Half of them within the data write, which is short.
        window = timings.write if rng.random() < 0.5 else timings.save
        return Trigger(phase, "file", rng.uniform(0, window),
                       pattern=CKPT_TEMP, kind="create", k=rng.randint(1, 3))
    if phase == "state":
        return Trigger(phase, "file", rng.uniform(0, timings.state),
                       pattern=STATE_TEMP, kind="create", k=rng.randint(1, 3))
    if phase == "events":
        return Trigger(phase, "file", 0, pattern=EVENT_FILE, kind="modify",
                       k=rng.randint(1, 6))
    if phase == "evaluation":
        return Trigger(phase, "line", rng.uniform(0, timings.evaluation),
                       pattern=SAVE_END_LINE, k=rng.randint(1, 3))
    if phase == "anytime":
        return Trigger(phase, "start",
                       rng.uniform(0, 0.9 * left * timings.total))
    raise ValueError(phase)


def landed_in(attempt):
    """Where the kill actually landed, from the trace up to the kill: the
    phase (from the log lines) and, from model_dir's file events, which step
    of a checkpoint save, or whether a checkpoint was being read or an event
    file had just been written."""
    phase, save_step, last_file = "startup", None, None
    for t, kind, detail in attempt.trace:
        if t > attempt.kill_time:
            break
        if kind == "line":
            if STEP_LINE.search(detail) or EVAL_END_LINE.search(detail):
                phase = "step"
            elif SAVE_BEGIN_LINE.search(detail):
                phase, save_step = "checkpoint", "before its data file"
            elif SAVE_END_LINE.search(detail):
                phase = "evaluation"
            continue
        what, _, name = detail
        last_file = (t, what, name)
        if phase != "checkpoint":
            continue
        if CKPT_TEMP.match(name):
            save_step = ("writing the data file" if what in ("create", "open")
                         else "data written, before its rename")
        elif CKPT_FILE.match(name) and what == "moved_to":
            save_step = "data file renamed, before the state file"
        elif STATE_TEMP.match(name):
            save_step = "writing the state file"
        elif name == "checkpoint" and what == "moved_to":
            save_step = "state file renamed, before deleting the oldest"
        elif CKPT_FILE.match(name) and what == "delete":
            save_step = "oldest deleted"
    if phase == "checkpoint":
        return "checkpoint: " + save_step
    if last_file and attempt.kill_time - last_file[0] < 0.002:
        _, what, name = last_file
        if EVENT_FILE.match(name) and what == "modify":
            return phase + ": just after an event-file write"
        if CKPT_FILE.match(name) and what in ("open", "close_nowrite"):
            return phase + ": reading a checkpoint"
    return phase


# --- Checks -----------------------------------------------------------------

def verify_model_dir(ckpt_tool, model_dir, killed_files):
    """Checks the state file, every listed checkpoint and every event file;
    returns (latest step, notes on what the kill left behind)."""
    try:
        latest, listed = estc_files.checkpoint_state(model_dir)
    except estc_files.FormatError as e:
        fail(str(e))
    for prefix in listed:
        path = checkpoint_files(model_dir, prefix)[0]
        r = subprocess.run([ckpt_tool, "--verify", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("listed checkpoint %s does not verify: %s" %
                 (prefix, r.stdout + r.stderr))
    notes = []  # (kind, detail)
    full = max([os.path.getsize(checkpoint_files(model_dir, p)[-1])
                for p in listed] or [0])
    for name in sorted(os.listdir(model_dir)):
        size = os.path.getsize(os.path.join(model_dir, name))
        if CKPT_TEMP.match(name):
            kind = ("a partly written temp checkpoint" if size < full else
                    "a written temp checkpoint (not renamed)")
        elif STATE_TEMP.match(name):
            kind = "a temp state file"
        elif ".tmp-" in name:
            kind = "a temp file"
        elif CKPT_FILE.match(name) and prefix_of(name) not in listed:
            kind = "a checkpoint the state file does not list"
        else:
            continue
        notes.append((kind, "%s (%d bytes)" % (name, size)))
    for path in estc_files.event_files(model_dir):
        try:
            _, tail = estc_files.read_event_file(path)
        except estc_files.FormatError as e:
            fail("event file unreadable: %s" % e)
        if tail:
            if path not in killed_files:
                fail("%s ends inside a record (%d bytes), but the process "
                     "that wrote it was not killed" % (path, tail))
            notes.append(("an event file ending inside a record",
                          "%s ends with %d bytes of a record" % (
                              os.path.relpath(path, model_dir), tail)))
    return latest, notes


def check_restart(attempt, model_dir, latest_before, number):
    """The attempt restored the latest checkpoint and resumed after it."""
    for line in attempt.lines:
        if WARNING_LINE.search(line):
            fail("run %d warned after a kill: %s" % (number, line))
    restored = None
    for line in attempt.lines:
        m = RESTORE_LINE.search(line)
        if m:
            restored = m.group(1)
        m = STEP_LINE.search(line)
        if m:
            if latest_before is not None:
                want = os.path.join(model_dir, "model.ckpt-%d" % latest_before)
                if restored != want:
                    fail("run %d restored %s, not the latest checkpoint %s" %
                         (number, restored, want))
            if int(m.group(1)) != (latest_before or 0) + 1:
                fail("run %d resumed at step %s; the latest checkpoint was "
                     "%s" % (number, m.group(1), latest_before))
            return True
    return False


def skip_timing_tag(tag):
    return tag.endswith("/sec")


def event_scalars(model_dir):
    """{(subdirectory, step, tag): float32 bytes} over every event file."""
    out = {}
    for path in estc_files.event_files(model_dir):
        events, _ = estc_files.read_event_file(path)
        rel = os.path.relpath(os.path.dirname(path), model_dir)
        for (step, tag), v in estc_files.scalars(events,
                                                 skip_timing_tag).items():
            key = (rel, step, tag)
            if out.setdefault(key, v) != v:
                fail("%s: step %d: '%s' is %r here, %r in an earlier file" %
                     (path, step, tag, estc_files.as_float(v),
                      estc_files.as_float(out[key])))
    return out


def tensorboard_reads(paths):
    """Optional cross-check: TensorBoard's loader reads every event file
    (up to a truncated last record) with as many records as we do. None
    when tensorboard is not installed."""
    try:
        import logging
        logging.getLogger("tensorboard").setLevel(logging.ERROR)
        from tensorboard.backend.event_processing import event_file_loader
    except Exception:
        return None
    for path in paths:
        ours, _ = estc_files.read_event_file(path)
        theirs = list(event_file_loader.RawEventFileLoader(path).Load())
        if len(theirs) != len(ours):
            fail("%s: TensorBoard reads %d records, we read %d" %
                 (path, len(theirs), len(ours)))
    return len(paths)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def compare_with_reference(reference, model_dir, round_number):
    ref_latest, ref_listed = estc_files.checkpoint_state(reference)
    latest, listed = estc_files.checkpoint_state(model_dir)
    if latest != ref_latest:
        fail("round %d finished at checkpoint step %s, the uninterrupted run "
             "at %s" % (round_number, latest, ref_latest))
    if listed != ref_listed:
        fail("round %d lists checkpoints %s, the uninterrupted run %s" %
             (round_number, listed, ref_listed))
    files = 0
    for prefix in listed:
        for a, b in zip(checkpoint_files(reference, prefix),
                        checkpoint_files(model_dir, prefix)):
            files += 1
            if sha(a) != sha(b):
                break
        else:
            continue
        if FORMAT == "tf":
            fail("round %d: %s differs from the uninterrupted run's (%s)" %
                 (round_number, prefix, os.path.basename(b)))
        ta, tb = estc_files.tensors(a), estc_files.tensors(b)
        differ = sorted(n for n in set(ta) | set(tb) if ta.get(n) != tb.get(n))
        fail("round %d: %s differs from the uninterrupted run's (tensors: %s)"
             % (round_number, prefix, ", ".join(differ) or "none; metadata"))
    ref_scalars = event_scalars(reference)
    ours = event_scalars(model_dir)
    for key, v in sorted(ours.items()):
        if key not in ref_scalars:
            fail("round %d: %s/ step %d '%s' is not in the uninterrupted "
                 "run's event files" % ((round_number,) + key))
        if ref_scalars[key] != v:
            fail("round %d: %s/ step %d '%s' is %r, the uninterrupted run's "
                 "%r" % ((round_number,) + key + (
                     estc_files.as_float(v),
                     estc_files.as_float(ref_scalars[key]))))
    return files, len(ours)


TF_READ = r"""
import hashlib, sys
import tensorflow as tf
out = []
for model_dir in sys.argv[1:]:
    path = tf.train.latest_checkpoint(model_dir)
    reader = tf.train.load_checkpoint(path)
    names = sorted(reader.get_variable_to_shape_map())
    digest = hashlib.sha256()
    for name in names:
        value = reader.get_tensor(name)
        digest.update(name.encode() + b"\0" + value.tobytes())
    out.append("%s %d %d %s" % (path, int(reader.get_tensor("global_step")),
                                len(names), digest.hexdigest()))
print("\n".join(out))
"""


def tf_restores(reference, model_dir, round_number):
    """TF reads the latest checkpoint of both model_dirs (every tensor, its
    CRC checked): the same step and values. None without TensorFlow."""
    try:
        import importlib.util
        if importlib.util.find_spec("tensorflow") is None:
            return None
    except ImportError:
        return None
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "-c", TF_READ, reference, model_dir],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail("round %d: TensorFlow cannot restore %s:\n%s" %
             (round_number, model_dir, r.stderr[-3000:]))
    ref_line, line = r.stdout.strip().split("\n")[-2:]
    ref_fields, fields = ref_line.split(), line.split()
    if fields[1:] != ref_fields[1:]:
        fail("round %d: TensorFlow reads %s as step %s, %s tensors, sha256 "
             "%s; the uninterrupted run's %s as %s" % (
                 round_number, fields[0], fields[1], fields[2], fields[3],
                 ref_fields[0], " ".join(ref_fields[1:])))
    return "TensorFlow restores %s (step %s, %s tensors)" % (
        os.path.basename(fields[0]), fields[1], fields[2])


# --- Main -------------------------------------------------------------------

def parse_args(argv):
    if "-h" in argv[:1] or "--help" in argv[:1]:
        print(__doc__)
        sys.exit(0)
    if "--" not in argv:
        print(__doc__)
        sys.exit(2)
    split = argv.index("--")
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("--estc-ckpt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--kills-per-round", type=int, default=10)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--needs")
    parser.add_argument("--format", choices=("safetensors", "tf"),
                        default="safetensors")
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1:]
    if not args.command or not any("{model_dir}" in a for a in args.command):
        parser.error("the trainer command needs '{model_dir}'")
    args.phases = args.phases.split(",")
    for phase in args.phases:
        if phase not in PHASES:
            parser.error("unknown phase '%s' (one of %s)" %
                         (phase, ", ".join(PHASES)))
    if os.environ.get("ESTC_KILL_SEED"):
        args.seed = int(os.environ["ESTC_KILL_SEED"])
    if os.environ.get("ESTC_KILLS"):
        args.kills = int(os.environ["ESTC_KILLS"])
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    return args


def main():
    global CKPT_FILE, CKPT_TEMP, FORMAT
    args = parse_args(sys.argv[1:])
    if args.format == "tf":
        FORMAT, CKPT_FILE, CKPT_TEMP = "tf", TF_CKPT_FILE, TF_CKPT_TEMP
    if args.needs and not os.path.exists(args.needs):
        print("SKIP: not found: %s (set ESTC_DATA_DIR)" % args.needs)
        return 77
    print("seed %d (rerun with --seed=%d or ESTC_KILL_SEED=%d)" %
          (args.seed, args.seed, args.seed), flush=True)
    rng = random.Random(args.seed)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    def command(model_dir):
        return [a.replace("{model_dir}", model_dir) for a in args.command]

    began = time.monotonic()
    reference = os.path.join(args.work, "reference")
    ref = run_trainer(command(reference), reference,
                      os.path.join(args.work, "reference.log"))
    if ref.rc != 0:
        fail("the uninterrupted run exited with %s:\n%s" %
             (ref.rc, "\n".join(ref.lines[-20:])))
    timings = Timings(ref)
    final_step, _ = estc_files.checkpoint_state(reference)
    if not final_step:
        fail("the uninterrupted run saved no checkpoint after step 0")
    timeout = 20 * ref.duration + 60
    print("uninterrupted: %s" % timings, flush=True)
    if tensorboard_reads(estc_files.event_files(reference)) is None:
        print("note: python3 module tensorboard not installed; its "
              "cross-check is skipped")

    kills = 0
    landed = {}
    left = {}
    leftover = {}
    round_number = 0
    while kills < args.kills:
        round_number += 1
        if round_number > 2 * args.kills + 2:
            fail("%d rounds for %d kills: the triggers rarely fire before the "
                 "run ends" % (round_number, kills))
        model_dir = os.path.join(args.work, "round-%d" % round_number)
        planned = min(args.kills_per_round, args.kills - kills)
        # Every phase once per len(phases) kills, in a random order.
        phases = []
        while len(phases) < planned:
            batch = list(args.phases)
            rng.shuffle(batch)
            phases += batch
        phases = phases[:planned]
        killed_files = set()
        seen_notes = set()
        attempt_number = 0
        while True:
            attempt_number += 1
            latest_before, _ = (estc_files.checkpoint_state(model_dir)
                                if os.path.exists(model_dir) else (None, []))
            before = set(estc_files.event_files(model_dir)) if os.path.exists(
                model_dir) else set()
            to_go = 1 - (latest_before or 0) / final_step
            trigger = (draw_trigger(phases.pop(0), rng, timings, to_go)
                       if phases else None)
            name = "round-%d-run-%d" % (round_number, attempt_number)
            attempt = run_trainer(command(model_dir), model_dir,
                                  os.path.join(args.work, name + ".log"),
                                  trigger, timeout)
            where = "round %d run %d (%s)" % (
                round_number, attempt_number,
                trigger.describe() if trigger else "to the end")
            if not attempt.killed and attempt.rc != 0:
                fail("%s exited with %s:\n%s" %
                     (where, attempt.rc, "\n".join(attempt.lines[-20:])))
            if attempt.killed:
                killed_files |= set(estc_files.event_files(model_dir)) - before
            check_restart(attempt, model_dir, latest_before, attempt_number)
            latest, notes = verify_model_dir(args.estc_ckpt, model_dir,
                                             killed_files)
            if not attempt.killed:
                print("%s: finished (checkpoint %s)" % (where, latest),
                      flush=True)
                break
            kills += 1
            spot = landed_in(attempt)
            landed[spot] = landed.get(spot, 0) + 1
            for kind, detail in notes:
                if detail not in seen_notes:
                    left[kind] = left.get(kind, 0) + 1
            seen_notes = {detail for _, detail in notes}
            print("kill %d: %s at %.3f s, landed in %s; latest checkpoint %s%s"
                  % (kills, where, attempt.kill_time, spot, latest,
                     "; left " + ", ".join(d for _, d in notes)
                     if notes else ""), flush=True)
        # The finished run's Saver removed the temp files of killed writers.
        for kind, detail in notes:
            if "temp" in kind:
                fail("round %d finished with %s left: %s" %
                     (round_number, kind, detail))
            leftover[kind] = leftover.get(kind, 0) + 1
        checkpoints, values = compare_with_reference(reference, model_dir,
                                                     round_number)
        tb = tensorboard_reads(estc_files.event_files(model_dir))
        restored = (tf_restores(reference, model_dir, round_number)
                    if FORMAT == "tf" else None)
        if FORMAT == "tf" and restored is None and round_number == 1:
            print("note: python3 module tensorflow not installed; TF's "
                  "restore of each round is skipped")
        print("round %d: %d checkpoint files byte-identical to the "
              "uninterrupted run's, %d event-file scalars equal%s%s" %
              (round_number, checkpoints, values,
               "; TensorBoard reads all %d event files" % tb if tb else "",
               "; " + restored if restored else ""),
              flush=True)

    print("kills landed in:")
    for spot, n in sorted(landed.items()):
        print("  %3d  %s" % (n, spot))
    if left:
        print("kills left behind: " + ", ".join(
            "%s %d" % kv for kv in sorted(left.items())))
    if leftover:
        print("finished rounds kept: " + ", ".join(
            "%s %d" % kv for kv in sorted(leftover.items())))
    print("PASS: %d kills in %d rounds (seed %d), %.0f s" %
          (kills, round_number, args.seed, time.monotonic() - began))
    return 0


if __name__ == "__main__":
    sys.exit(main())
