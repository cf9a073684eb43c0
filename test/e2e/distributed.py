#!/usr/bin/env python3
"""Distributed training end to end: jobs of dist_trainer processes (a chief,
workers, an evaluator) on loopback addresses, launched by TF_CONFIG (Gloo)
or by mpirun (MPI), each case bounded in time (a process still running
after its deadline is killed and the case fails).

usage: distributed.py CASE --trainer=PATH --work=DIR [--mpirun=PATH]
                      [--model=mlp|embedding] [--workers=N]

cases:
  equivalence  N replicas with per-replica batch B end with bit-identical
               variables, within a stated float32 bound of one replica
               with batch N*B; only the chief writes checkpoints and event
               files; the loss it logs is the global one
  determinism  the same N-replica job twice: bit-identical checkpoints
               (--iterations_per_loop=N: compiled loops of N steps, each
               step reducing)
  relaunch     a worker SIGKILLed mid-step: the others stop within a bounded
               time with one line naming it; relaunching the job resumes
               from the chief's last checkpoint and ends with the same
               checkpoint as an uninterrupted job, byte for byte
  faults       an unreachable chief, a malformed TF_CONFIG, a 'ps' job
               with train_distribute,
               workers without train_distribute: one line each, non-zero
  evaluator    chief + worker + evaluator (train_and_evaluate): the
               evaluator evaluates the chief's checkpoints up to max_steps
  mpi          the job under mpirun -np N: the variables of the Gloo job
  aot_one_replica
               fashion_mnist_aot (--fashion=PATH, a model compiled for one
               replica) as a 2-worker job: one line on every worker
  fashion      the fashion_mnist example (--fashion=PATH, --data_dir=DIR)
               with N workers reaches --min_accuracy on the chief
"""
import argparse
import hashlib
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import estc_files  # noqa: E402

DEADLINE = 240  # seconds, for any one process


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def tf_config(workers, task, index, ports, evaluator=False):
    cluster = {"chief": ["127.0.0.1:%d" % ports[0]]}
    if workers > 1:
        cluster["worker"] = ["127.0.0.1:%d" % p for p in ports[1:workers]]
    return json.dumps({"cluster": cluster,
                       "task": {"type": task, "index": index}})


class Job:
    """The processes of one job; each writes its stdout/stderr to a file."""

    def __init__(self, work, name):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.procs = {}

    def start(self, task, argv, env_tf_config=None, address_space=None):
        """Starts `task`; with `address_space` (bytes) its address space is
        capped with setrlimit(RLIMIT_AS) before it runs."""
        env = dict(os.environ)
        env.pop("TF_CONFIG", None)
        if env_tf_config is not None:
            env["TF_CONFIG"] = env_tf_config
        limit = None
        if address_space is not None:
            def limit():
                resource.setrlimit(resource.RLIMIT_AS,
                                   (address_space, address_space))
        out = open(os.path.join(self.dir, task + ".log"), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                             env=env, stdin=subprocess.DEVNULL,
                             preexec_fn=limit)
        self.procs[task] = (p, time.monotonic())
        return p

    def log(self, task):
        with open(os.path.join(self.dir, task + ".log")) as f:
            return f.read()

    def wait(self, deadline=DEADLINE):
        """{task: exit status}; kills every process at the deadline."""
        codes = {}
        end = time.monotonic() + deadline
        for task, (p, _) in self.procs.items():
            try:
                codes[task] = p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q, _ in self.procs.values():
                    q.kill()
                fail("%s still ran after %d s (a hang); its log:\n%s" %
                     (task, deadline, self.log(task)[-3000:]))
        return codes


def trainer_argv(args, model_dir, extra):
    return [args.trainer, "--model=" + args.model,
            "--model_dir=" + model_dir] + extra


def run_job(args, name, workers, extra, evaluator=False, launcher=None):
    """Runs a job of `workers` replicas (1: no TF_CONFIG) to completion;
    returns the Job. Every process must exit 0."""
    job = Job(args.work, name)
    model_dir = os.path.join(job.dir, "model")
    ports = free_ports(workers)
    if launcher == "mpi":
        # mpirun gives each rank its number in OMPI_COMM_WORLD_RANK; the
        # trainer's --dump has no such placeholder, so a wrapper shell
        # expands it.
        argv = [args.mpirun, "--allow-run-as-root", "--oversubscribe",
                "-np", str(workers), "sh", "-c",
                'exec "$0" "$@" --dump=%s/dump-$OMPI_COMM_WORLD_RANK' %
                job.dir] + trainer_argv(args, model_dir,
                                        extra + ["--distribute=mpi"])
        job.start("mpirun", argv)
    elif workers == 1:
        job.start("chief", trainer_argv(
            args, model_dir, extra + ["--dump=%s/dump-0" % job.dir]))
    else:
        for rank in range(workers):
            task, index = ("chief", 0) if rank == 0 else ("worker", rank - 1)
            job.start("%s-%d" % (task, index), trainer_argv(
                args, model_dir,
                extra + ["--dump=%s/dump-%d" % (job.dir, rank)]),
                tf_config(workers, task, index, ports))
        if evaluator:
            job.start("evaluator-0", trainer_argv(args, model_dir, extra),
                      tf_config(workers, "evaluator", 0, ports))
    codes = job.wait()
    for task, code in codes.items():
        if code != 0:
            fail("job %s: %s exited with %d:\n%s" %
                 (name, task, code, job.log(task)[-3000:]))
    job.model_dir = model_dir
    return job


def read_dump(path):
    """{name: (dtype, shape, bytes)} of a --dump file."""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        name, dtype, shape, size = data[pos:nl].decode().split(" ")
        size = int(size)
        out[name] = (dtype, shape, data[nl + 1:nl + 1 + size])
        pos = nl + 1 + size + 1
    return out


def floats(b):
    return struct.unpack("<%df" % (len(b) // 4), b)


def checkpoint_digests(model_dir):
    out = {}
    for name in sorted(os.listdir(model_dir)):
        if name.endswith(".safetensors") and ".tmp-" not in name:
            with open(os.path.join(model_dir, name), "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def common_flags(args):
    return ["--train_steps=%d" % args.steps, "--save_checkpoints_steps=5",
            "--timeout_secs=20",
            "--iterations_per_loop=%d" % args.iterations_per_loop,
            "--checkpoint_format=%s" % args.checkpoint_format]


def case_equivalence(args):
    n, b = args.workers, 8
    flags = common_flags(args)
    single = run_job(args, "single", 1,
                     flags + ["--batch_size=%d" % (n * b), "--no_distribute"])
    job = run_job(args, "job", n, flags + ["--batch_size=%d" % b])
    dumps = [read_dump(os.path.join(job.dir, "dump-%d" % r))
             for r in range(n)]
    for r in range(1, n):
        if dumps[r] != dumps[0]:
            diff = [k for k in dumps[0] if dumps[0][k] != dumps[r].get(k)]
            fail("replica %d's variables differ from the chief's: %s" %
                 (r, diff[:5]))
    ref = read_dump(os.path.join(single.dir, "dump-0"))
    if set(ref) != set(dumps[0]):
        fail("variables: one replica has %s, the job %s" %
             (sorted(ref), sorted(dumps[0])))
    worst = 0.0
    for name, (dtype, shape, data) in ref.items():
        if dtype != "F32":
            if data != dumps[0][name][2]:
                fail("%s (%s) differs from one replica's" % (name, dtype))
            continue
        a, c = floats(data), floats(dumps[0][name][2])
        scale = max(1e-3, max(abs(v) for v in a))
        worst = max(worst, max(abs(x - y) for x, y in zip(a, c)) / scale)
    # The bound: N replicas sum N partial means where one replica sums all
    # N*B terms; each step's gradient differs in its last bits (~1e-7
    # relative) and the steps compound it: 1e-4 of each variable's largest
    # magnitude after 20 SGD steps leaves two orders of margin.
    bound = 1e-4
    print("%d replicas x batch %d vs 1 x batch %d after %d steps: largest "
          "difference %.3g of a variable's magnitude (bound %g)" %
          (n, b, n * b, args.steps, worst, bound), flush=True)
    if worst > bound:
        fail("the job's variables are %.3g from one replica's (bound %g)" %
             (worst, bound))
    # Only the chief writes: its log saves checkpoints, the workers' never.
    for task in job.procs:
        saved = "Saving checkpoints" in job.log(task)
        if saved != task.startswith("chief"):
            fail("%s %s checkpoints" %
                 (task, "saved" if saved else "never saved"))
    # The chief's checkpoints are in RunConfig's checkpoint_format.
    if args.checkpoint_format == "tf":
        names = os.listdir(job.model_dir)
        if ("model.ckpt-%d.index" % args.steps not in names or
                any(n.endswith(".safetensors") for n in names)):
            fail("checkpoint_format tf: the chief's model_dir holds %s" %
                 sorted(names))
        print("the chief saved TF checkpoints (model.ckpt-%d.index)" %
              args.steps)
    events = estc_files.event_files(job.model_dir)
    if len(events) != 1:
        fail("model_dir has %d event files, the chief's alone expected: %s" %
             (len(events), events))
    # The chief runs the summary steps (every step: save_summary_steps=1;
    # with iterations_per_loop, the last step of every loop), the workers
    # the plain step, in one synchronous job: the canned DNN's in-graph
    # summaries are in the chief's file at each of those steps.
    loop = args.iterations_per_loop
    want = list(range(loop, args.steps + 1, loop))
    written = estc_files.scalars(estc_files.read_event_file(events[0])[0])
    for tag in ("loss", "dnn/hiddenlayer_0/fraction_of_zero_values",
                "dnn/logits/fraction_of_zero_values"):
        steps = sorted(step for step, t in written if t == tag)
        if steps != want:
            fail("the chief's summary '%s' is at steps %s, not %s" %
                 (tag, steps, want))
    # The loss the chief logs is the global mean: the single replica's.
    chief_loss = [l for l in job.log("chief-0").splitlines()
                  if "Loss for final step" in l]
    single_loss = [l for l in single.log("chief").splitlines()
                   if "Loss for final step" in l]
    print("final loss: job %s; one replica %s" % (chief_loss, single_loss))
    if not chief_loss or not single_loss:
        fail("no 'Loss for final step' line")
    lj = float(chief_loss[0].split()[-1].rstrip("."))
    ls = float(single_loss[0].split()[-1].rstrip("."))
    if abs(lj - ls) > 1e-4 * max(1.0, abs(ls)):
        fail("the chief logs loss %g, one replica with the whole batch %g" %
             (lj, ls))


def case_determinism(args):
    flags = common_flags(args) + ["--batch_size=8"]
    a = run_job(args, "run-a", args.workers, flags)
    b = run_job(args, "run-b", args.workers, flags)
    da, db = checkpoint_digests(a.model_dir), checkpoint_digests(b.model_dir)
    if not da:
        fail("the chief wrote no checkpoint")
    if da != db:
        fail("checkpoints differ between two runs: %s vs %s" % (da, db))
    print("two runs, %d checkpoints, identical bytes" % len(da))


def case_relaunch(args):
    n = args.workers
    flags = ["--train_steps=40", "--save_checkpoints_steps=4",
             "--timeout_secs=20", "--batch_size=8"]
    whole = run_job(args, "whole", n, flags)
    model_dir = os.path.join(args.work, "killed-model")
    ports = free_ports(n)
    # SIGKILL a worker once the chief has saved step 12, then the chief once
    # it has saved step 24 (a step of 150 ms: each kill lands mid-step);
    # relaunch the whole job after each, then let it finish.
    rounds = [("worker-%d" % (n - 2), "worker:%d" % (n - 2), 12),
              ("chief-0", "chief:0", 24), (None, None, None)]
    for attempt, (victim, name, at) in enumerate(rounds):
        job = Job(args.work, "attempt-%d" % attempt)
        for rank in range(n):
            task, index = ("chief", 0) if rank == 0 else ("worker", rank - 1)
            job.start("%s-%d" % (task, index),
                      trainer_argv(args, model_dir,
                                   flags + (["--step_sleep_ms=150"]
                                            if victim else [])),
                      tf_config(n, task, index, ports))
        if victim is None:
            codes = job.wait()
            for task, code in codes.items():
                if code != 0:
                    fail("relaunched %s exited %d:\n%s" %
                         (task, code, job.log(task)[-3000:]))
        else:
            deadline = time.monotonic() + DEADLINE
            ckpt = os.path.join(model_dir, "model.ckpt-%d.safetensors" % at)
            while not os.path.exists(ckpt):
                if time.monotonic() > deadline:
                    fail("no checkpoint %d within %d s" % (at, DEADLINE))
                time.sleep(0.05)
            job.procs[victim][0].send_signal(signal.SIGKILL)
            killed_at = time.monotonic()
            for task, (p, _) in job.procs.items():
                if task == victim:
                    p.wait()
                    continue
                try:
                    code = p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    for q, _ in job.procs.values():
                        q.kill()
                    fail("%s did not stop within 30 s of %s's death" %
                         (task, victim))
                errors = [l for l in job.log(task).splitlines()
                          if "error" in l.lower()]
                if code == 0 or len(errors) != 1:
                    fail("%s exited %d after %s died, with %d error lines:"
                         "\n%s" % (task, code, victim, len(errors),
                                   job.log(task)[-2000:]))
                print("%s stopped %.1f s after %s died: %s" %
                      (task, time.monotonic() - killed_at, victim,
                       errors[0]), flush=True)
                if name not in errors[0]:
                    fail("%s's error does not name %s: %s" %
                         (task, name, errors[0]))
        if attempt > 0:
            if "Restoring parameters from" not in job.log("chief-0"):
                fail("relaunch %d: the chief did not restore a checkpoint" %
                     attempt)
            for rank in range(1, n):
                log = job.log("worker-%d" % (rank - 1))
                if "Restored the input pipeline's position" not in log:
                    fail("relaunch %d: worker-%d did not continue its "
                         "input:\n%s" % (attempt, rank - 1, log[-2000:]))
    final = "model.ckpt-40.safetensors"
    a = checkpoint_digests(whole.model_dir).get(final)
    b = checkpoint_digests(model_dir).get(final)
    if a is None or a != b:
        fail("the relaunched job's %s differs from the uninterrupted "
             "job's (%s vs %s)" % (final, b, a))
    print("killed twice, relaunched: %s identical to the uninterrupted "
          "job's" % final)


def expect_error(args, name, env_tf_config, extra, want):
    job = Job(args.work, name)
    start = time.monotonic()
    job.start("task", trainer_argv(args, os.path.join(job.dir, "model"),
                                   extra), env_tf_config)
    codes = job.wait(deadline=60)
    took = time.monotonic() - start
    log = job.log("task")
    errors = [l for l in log.splitlines() if "error" in l.lower()]
    if codes["task"] == 0:
        fail("%s: exited 0:\n%s" % (name, log[-2000:]))
    if len(errors) != 1 or want not in errors[0]:
        fail("%s: expected one error line with '%s', got:\n%s" %
             (name, want, "\n".join(errors) or log[-2000:]))
    print("%s: %.1f s, exit %d: %s" % (name, took, codes["task"], errors[0]))


def case_faults(args):
    ports = free_ports(3)
    # A worker whose chief never comes up.
    expect_error(args, "unreachable-chief",
                 tf_config(2, "worker", 0, ports),
                 ["--timeout_secs=2", "--train_steps=5"],
                 "cannot reach the chief")
    expect_error(args, "malformed-tf-config", '{"cluster": {"chief": [',
                 ["--train_steps=5"], "TF_CONFIG is not valid JSON")
    expect_error(args, "ps-job", json.dumps({
        "cluster": {"chief": ["127.0.0.1:%d" % ports[0]],
                    "ps": ["127.0.0.1:%d" % ports[1]]},
        "task": {"type": "chief", "index": 0}}), ["--train_steps=5"],
        "parameter-server training and all-reduce training")
    expect_error(args, "no-train-distribute",
                 tf_config(2, "chief", 0, ports),
                 ["--no_distribute", "--train_steps=5"],
                 "has no train_distribute")


def case_evaluator(args):
    job = run_job(args, "job", args.workers,
                  common_flags(args) + ["--batch_size=8",
                                        "--train_and_evaluate"],
                  evaluator=True)
    log = job.log("evaluator-0")
    lines = [l for l in log.splitlines() if l.startswith("evaluation:")]
    if not lines or "global_step = %d" % args.steps not in lines[-1]:
        fail("the evaluator did not evaluate step %d:\n%s" %
             (args.steps, log[-2000:]))
    print("evaluator: %s" % lines[-1])


def case_mpi(args):
    if not args.mpirun or not os.path.exists(args.mpirun):
        print("SKIP: mpirun not found (MPI not built)")
        sys.exit(77)
    flags = common_flags(args) + ["--batch_size=8"]
    gloo = run_job(args, "gloo", args.workers, flags)
    mpi = run_job(args, "mpi", args.workers, flags, launcher="mpi")
    for r in range(args.workers):
        a = read_dump(os.path.join(gloo.dir, "dump-%d" % r))
        b = read_dump(os.path.join(mpi.dir, "dump-%d" % r))
        if a != b:
            diff = [k for k in a if a[k] != b.get(k)]
            fail("rank %d: MPI's variables differ from Gloo's: %s" %
                 (r, diff[:5]))
    if checkpoint_digests(gloo.model_dir) != checkpoint_digests(mpi.model_dir):
        fail("MPI's checkpoints differ from Gloo's")
    print("mpirun -np %d: the Gloo job's variables and checkpoints, bit for "
          "bit" % args.workers)
    # mpirun's processes against a TF_CONFIG of another cluster: one line on
    # every rank, naming both.
    job = Job(args.work, "mpi-mismatch")
    job.start("mpirun", [args.mpirun, "--allow-run-as-root", "--oversubscribe",
                         "-np", "2"] + trainer_argv(
                             args, os.path.join(job.dir, "model"),
                             flags + ["--distribute=mpi"]),
              tf_config(3, "chief", 0, free_ports(3)))
    code = job.wait(deadline=120)["mpirun"]
    errors = [l for l in job.log("mpirun").splitlines()
              if l.startswith("dist_trainer: error:")]
    want = ("train_distribute: mpirun started 2 processes and this is rank "
            "%d, but TF_CONFIG makes it chief:0 (rank 0) of 3 replicas")
    if code == 0 or sorted(errors) != sorted(
            ["dist_trainer: error: " + want % r for r in range(2)]):
        fail("mpirun against another TF_CONFIG: exit %d, lines:\n%s" %
             (code, job.log("mpirun")[-2000:]))
    print("mpirun against another TF_CONFIG: exit %d, %s" % (code, errors[0]))


def case_aot_one_replica(args):
    """An AOT trainer whose model was compiled for one replica, started as
    a 2-worker job: every worker stops with one line saying how to compile
    it (--fashion names fashion_mnist_aot)."""
    needs = os.path.join(args.data_dir, "t10k-images-idx3-ubyte.gz")
    if not os.path.exists(needs):
        print("SKIP: not found: %s (set ESTC_DATA_DIR)" % needs)
        sys.exit(77)
    job = Job(args.work, "aot")
    ports = free_ports(2)
    for rank in range(2):
        task, index = ("chief", 0) if rank == 0 else ("worker", 0)
        job.start("%s-%d" % (task, index), [
            args.fashion, "--data_dir=" + args.data_dir,
            "--eval_holdout=2000", "--train_steps=5", "--threads=1",
            "--distribute=gloo",
            "--model_dir=" + os.path.join(job.dir, "model")],
            tf_config(2, task, index, ports))
    want = ("was compiled for one replica, but the job has 2 (compile it "
            "with estc --replicas=2, or estc_add_model(... REPLICAS 2))")
    for task, code in job.wait(deadline=120).items():
        errors = [l for l in job.log(task).splitlines()
                  if "error" in l.lower()]
        if code == 0 or len(errors) != 1 or want not in errors[0]:
            fail("%s: exit %d, expected one line with '%s':\n%s" %
                 (task, code, want, job.log(task)[-2000:]))
        print("%s: exit %d: %s" % (task, code, errors[0]))


def case_fashion(args):
    needs = os.path.join(args.data_dir, "t10k-images-idx3-ubyte.gz")
    if not os.path.exists(needs):
        print("SKIP: not found: %s (set ESTC_DATA_DIR)" % needs)
        sys.exit(77)
    n = args.workers
    job = Job(args.work, "fashion")
    model_dir = os.path.join(job.dir, "model")
    ports = free_ports(n)
    for rank in range(n):
        task, index = ("chief", 0) if rank == 0 else ("worker", rank - 1)
        job.start("%s-%d" % (task, index), [
            args.fashion, "--data_dir=" + args.data_dir,
            "--eval_holdout=2000", "--train_steps=%d" % args.steps,
            "--batch_size=32", "--save_checkpoints_steps=%d" % args.steps,
            "--threads=1", "--distribute=gloo", "--model_dir=" + model_dir,
            "--min_accuracy=%g" % args.min_accuracy],
            tf_config(n, task, index, ports))
    start = time.monotonic()
    codes = job.wait()
    for task, code in codes.items():
        if code != 0:
            fail("%s exited %d:\n%s" % (task, code, job.log(task)[-3000:]))
    final = [l for l in job.log("chief-0").splitlines()
             if l.startswith("final evaluation:")]
    if not final:
        fail("the chief printed no final evaluation")
    print("%d workers x batch 32, %d steps, %.1f s: %s" %
          (n, args.steps, time.monotonic() - start, final[0]))


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("case", choices=["equivalence", "determinism",
                                         "relaunch", "faults", "evaluator",
                                         "mpi", "fashion",
                                         "aot_one_replica"])
    parser.add_argument("--trainer", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--model", default="mlp",
                        choices=["mlp", "embedding", "wide_deep"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--iterations_per_loop", type=int, default=1,
                        help="RunConfig.iterations_per_loop of every job")
    parser.add_argument("--checkpoint_format", default="auto",
                        choices=["auto", "tf", "safetensors"],
                        help="RunConfig.checkpoint_format of every job")
    parser.add_argument("--fashion", default="")
    parser.add_argument("--data_dir", default="")
    parser.add_argument("--min_accuracy", type=float, default=0.9)
    args = parser.parse_args()
    if args.workers < 2:
        parser.error("--workers: at least 2")
    work = os.path.join(args.work, "%s-%s-%d-%d-%s" % (
        args.case, args.model, args.workers, args.iterations_per_loop,
        args.checkpoint_format))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    args.work = work
    globals()["case_" + args.case](args)
    print("PASS")


if __name__ == "__main__":
    main()
