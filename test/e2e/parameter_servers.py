#!/usr/bin/env python3
"""Parameter-server training end to end: jobs of dist_trainer processes (a
chief, workers, ps tasks) on loopback addresses, launched by TF_CONFIG,
each process with a deadline (a process still running after it is killed
and the case fails).

usage: parameter_servers.py CASE --trainer=PATH --work=DIR
                            [--model=mlp|embedding|wide_deep] [--ps=N]

cases:
  equivalence  a chief alone with N ps tasks (the variables, their slots
               and the embedding table split over them) ends with the
               checkpoint of single-process training, within float32 noise
               (the bound and the measured difference are printed)
  sync         a chief and a worker with SyncReplicasOptimizer(2), both
               reading the same batches: each step applies the mean of two
               equal gradients, so the job ends with the checkpoint of one
               process on those batches (within float32 noise)
  async        a chief, a worker and N ps tasks train asynchronously (TF's
               default) with Adagrad: every process exits 0, both train,
               the chief's last checkpoint is at max_steps or after, its
               loss falls, and the ps tasks end with the job
  relaunch     synchronous training with a ps task SIGKILLed after a
               checkpoint: the chief stops with one line naming the task;
               the job relaunched continues from the checkpoint (the ps
               tasks restore their variables, the chief its input position)
               and ends with the uninterrupted job's checkpoint, bit for bit
  faults       bad clusters (no worker, duplicate addresses, ps with
               train_distribute) and a ps task that is killed: one line
               each, non-zero; a worker killed under asynchronous training:
               the job goes on without it
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import estc_files  # noqa: E402
from distributed import Job, fail, floats, free_ports  # noqa: E402


def cluster(workers, ps, ports):
    """TF_CONFIG's cluster: a chief, `workers` workers, `ps` ps tasks."""
    at = ["127.0.0.1:%d" % p for p in ports]
    c = {"chief": at[:1], "ps": at[1:1 + ps]}
    if workers:
        c["worker"] = at[1 + ps:1 + ps + workers]
    return c


def tf_config(c, task, index):
    return json.dumps({"cluster": c, "task": {"type": task, "index": index}})


def flags(args, model_dir, extra=()):
    return [args.trainer, "--model=" + args.model, "--model_dir=" + model_dir,
            "--train_steps=%d" % args.steps, "--save_checkpoints_steps=5",
            "--checkpoint_format=safetensors", "--no_distribute",
            "--train_and_evaluate"] + list(extra)


def start_job(args, name, workers, extra=()):
    job = Job(args.work, name)
    job.model_dir = os.path.join(job.dir, "model")
    c = cluster(workers, args.ps, free_ports(1 + args.ps + workers))
    # The ps tasks first (the chief waits for them anyway).
    for i in range(args.ps):
        job.start("ps-%d" % i, flags(args, job.model_dir, extra),
                  tf_config(c, "ps", i))
    job.start("chief-0", flags(args, job.model_dir, extra),
              tf_config(c, "chief", 0))
    for i in range(workers):
        job.start("worker-%d" % i, flags(args, job.model_dir, extra),
                  tf_config(c, "worker", i))
    return job


def check_exits(job, name):
    """Every process exits 0: the chief and workers first (a failed one is
    reported as it failed, not as the ps tasks it left serving)."""
    trainers = [t for t in job.procs if not t.startswith("ps-")]
    end = time.monotonic() + 240
    for task in trainers + [t for t in job.procs if t.startswith("ps-")]:
        p = job.procs[task][0]
        try:
            code = p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            code = None
        if code != 0:
            for q, _ in job.procs.values():
                if q.poll() is None:
                    q.kill()
            fail("job %s: %s %s:\n%s" %
                 (name, task, "still ran after 240 s (a hang)" if code is None
                  else "exited with %d" % code, job.log(task)[-3000:]))


def last_checkpoint(model_dir):
    step, _ = estc_files.checkpoint_state(model_dir)
    if step is None:
        fail("no checkpoint in " + model_dir)
    path = estc_files.checkpoint_file(model_dir, "model.ckpt-%d" % step)
    return step, estc_files.tensors(path)


def case_equivalence(args, workers=0, extra=()):
    extra = list(extra) + args.trainer_flag
    single = Job(args.work, "single")
    single.model_dir = os.path.join(single.dir, "model")
    single.start("chief", [args.trainer, "--model=" + args.model,
                           "--model_dir=" + single.model_dir,
                           "--train_steps=%d" % args.steps,
                           "--save_checkpoints_steps=5",
                           "--checkpoint_format=safetensors",
                           "--no_distribute"] + list(extra))
    check_exits(single, "single")
    job = start_job(args, "job", workers=workers, extra=extra)
    check_exits(job, "job")
    ref_step, ref = last_checkpoint(single.model_dir)
    step, got = last_checkpoint(job.model_dir)
    if step != ref_step:
        fail("the job's last checkpoint is at step %d, one process's at %d" %
             (step, ref_step))
    missing = sorted(set(ref) - set(got))
    if missing:
        fail("the job's checkpoint lacks %s" % missing[:5])
    worst, where = 0.0, ""
    for name, (dtype, shape, data) in ref.items():
        if got[name][1] != shape or got[name][0] != dtype:
            fail("%s: %s %s in the job, %s %s in one process" %
                 (name, got[name][0], got[name][1], dtype, shape))
        if dtype != "F32":
            if data != got[name][2]:
                fail("%s (%s) differs from one process's" % (name, dtype))
            continue
        a, c = floats(data), floats(got[name][2])
        if not a:
            continue
        scale = max(1e-3, max(abs(v) for v in a))
        d = max(abs(x - y) for x, y in zip(a, c)) / scale
        if d > worst:
            worst, where = d, name
    # The same gradients, the same update rules compiled in another module:
    # equal up to the last bits of float32 arithmetic, compounded over the
    # steps.
    bound = 1e-5
    print("%d ps tasks vs one process after %d steps: largest difference "
          "%.3g of a variable's magnitude (%s; bound %g)" %
          (args.ps, args.steps, worst, where or "-", bound), flush=True)
    if worst > bound:
        fail("the job's variables are %.3g from one process's (bound %g)" %
             (worst, bound))
    for task in job.procs:
        saved = "Saving checkpoints" in job.log(task)
        if saved != task.startswith("chief"):
            fail("%s %s checkpoints" %
                 (task, "saved" if saved else "never saved"))
    return job


def case_sync(args):
    job = case_equivalence(args, workers=1, extra=["--sync_replicas=2"])
    for i in range(args.ps):
        if "synchronous: the mean of 2" not in job.log("ps-%d" % i):
            fail("ps-%d did not serve synchronously:\n%s" %
                 (i, job.log("ps-%d" % i)[-2000:]))


def losses(log):
    """[(global step, loss)] of a trainer's log lines."""
    out = []
    for line in log.splitlines():
        if "loss = " in line and "step = " in line:
            loss = float(line.rsplit("loss = ", 1)[1].split(",")[0])
            step = int(line.rsplit("step = ", 1)[1].split()[0])
            out.append((step, loss))
    return out


def case_async(args):
    # Steps slowed to 30 ms: the worker, which compiles its model as the
    # chief does, joins before the chief could finish the job alone (a
    # worker that comes after the end finds no ps task to reach).
    job = start_job(args, "job", workers=1,
                    extra=["--optimizer=Adagrad", "--step_sleep_ms=30"])
    check_exits(job, "job")
    step, got = last_checkpoint(job.model_dir)
    if step < args.steps:
        fail("the last checkpoint is at step %d, before max_steps %d" %
             (step, args.steps))
    for task in ("ps-%d" % i for i in range(args.ps)):
        if "the chief ended the job" not in job.log(task):
            fail("%s did not end with the job:\n%s" %
                 (task, job.log(task)[-2000:]))
    # Both trained (each logs its first step's loss, then every few of its
    # steps; how the steps split between them depends on the machine's
    # load: the chief also saves every 5 global steps, and the worker
    # steps on meanwhile), and the model learned: the last losses of the
    # job well under its first.
    chief, worker = losses(job.log("chief-0")), losses(job.log("worker-0"))
    if not chief or not worker or len(chief) + len(worker) < 6:
        fail("a trainer made few steps: the chief logged %d losses, the "
             "worker %d" % (len(chief), len(worker)))
    both = [loss for _, loss in sorted(chief + worker)]
    first, last = sum(both[:3]) / 3, sum(both[-3:]) / 3
    if not last < 0.8 * first:
        fail("the job's loss did not fall: %s" % both)
    print("async: %d ps tasks, a chief and a worker (%d and %d losses "
          "logged): last checkpoint at step %d, loss %.4g -> %.4g" %
          (args.ps, len(chief), len(worker), step, first, last), flush=True)


def case_relaunch(args):
    extra = ["--sync_replicas=1", "--optimizer=Adagrad"]
    whole = start_job(args, "whole", workers=0, extra=extra)
    check_exits(whole, "whole")
    # The same job, its steps slowed so that ps:1 dies between two saves.
    job = start_job(args, "killed", workers=0,
                    extra=extra + ["--step_sleep_ms=100"])
    deadline = time.monotonic() + 120
    while "Saving checkpoints for 10 " not in job.log("chief-0"):
        if time.monotonic() > deadline:
            fail("the chief never saved step 10:\n" +
                 job.log("chief-0")[-2000:])
        time.sleep(0.05)
    job.procs["ps-1"][0].send_signal(signal.SIGKILL)
    code = job.procs["chief-0"][0].wait(timeout=120)
    expect_one_line(job, "chief-0", code, "ps:1")
    job.procs["ps-0"][0].kill()
    job.procs["ps-0"][0].wait()
    # Relaunched (new ports: TF_CONFIG may change between launches).
    again = start_job(args, "killed", workers=0, extra=extra)
    check_exits(again, "relaunched")
    if "Restored the input pipeline's position" not in again.log("chief-0"):
        fail("the relaunched chief did not restore its input position:\n" +
             again.log("chief-0")[-2000:])
    _, a = last_checkpoint(whole.model_dir)
    _, b = last_checkpoint(again.model_dir)
    differ = sorted(k for k in a if a[k] != b.get(k))
    if differ or set(a) != set(b):
        fail("the relaunched job's last checkpoint differs from the "
             "uninterrupted one's: %s" % (differ[:5] or
                                         sorted(set(a) ^ set(b))[:5]))
    print("relaunch: after ps:1 was killed at step 10, the job ends with "
          "the uninterrupted job's checkpoint (%d tensors, bit for bit)" %
          len(a), flush=True)


def expect_one_line(job, task, code, needle):
    log = job.log(task)
    lines = [line for line in log.splitlines() if "error" in line.lower()]
    if code == 0 or len(lines) != 1 or needle not in lines[0]:
        fail("%s: expected a non-zero exit and one error line with '%s', "
             "got %d:\n%s" % (task, needle, code, log[-2000:]))
    print("%s: %s" % (task, lines[0]), flush=True)


def case_faults(args):
    # A ps job and train_distribute.
    job = Job(args.work, "distribute")
    ports = free_ports(2)
    c = {"chief": ["127.0.0.1:%d" % ports[0]],
         "ps": ["127.0.0.1:%d" % ports[1]]}
    argv = flags(args, os.path.join(job.dir, "model"))
    argv.remove("--no_distribute")
    job.start("chief-0", argv, tf_config(c, "chief", 0))
    expect_one_line(job, "chief-0", job.wait()["chief-0"],
                    "parameter-server training and all-reduce training")
    # Duplicate addresses.
    job = Job(args.work, "duplicate")
    c = {"chief": ["127.0.0.1:%d" % ports[0]],
         "ps": ["127.0.0.1:%d" % ports[0]]}
    job.start("chief-0", flags(args, os.path.join(job.dir, "model")),
              tf_config(c, "chief", 0))
    expect_one_line(job, "chief-0", job.wait()["chief-0"],
                    "the same address")
    # A ps job and nothing that trains.
    job = Job(args.work, "nothing")
    c = {"ps": ["127.0.0.1:%d" % ports[1]]}
    job.start("ps-0", flags(args, os.path.join(job.dir, "model")),
              tf_config(c, "ps", 0))
    expect_one_line(job, "ps-0", job.wait()["ps-0"], 'must have one "chief"')
    # A ps task killed while the chief trains: the chief stops within its
    # timeout with one line naming the task.
    job = start_job(args, "killed", workers=0,
                    extra=["--train_steps=100000", "--step_sleep_ms=20"])
    deadline = time.monotonic() + 120
    while "Saving checkpoints" not in job.log("chief-0"):
        if time.monotonic() > deadline:
            fail("the chief never saved:\n" + job.log("chief-0")[-2000:])
        time.sleep(0.1)
    killed = job.procs["ps-1"][0]
    killed.send_signal(signal.SIGKILL)
    start = time.monotonic()
    code = job.procs["chief-0"][0].wait(timeout=120)
    took = time.monotonic() - start
    expect_one_line(job, "chief-0", code, "ps:1")
    print("the chief stopped %.1f s after ps:1 was killed" % took, flush=True)
    for task, (p, _) in job.procs.items():
        if p.poll() is None:
            p.kill()
    # A worker killed under asynchronous training: the job goes on without
    # it, as TF's does (the chief finishes, the ps tasks end with it).
    job = start_job(args, "worker-killed", workers=1,
                    extra=["--train_steps=300", "--step_sleep_ms=50"])
    deadline = time.monotonic() + 120
    while "loss = " not in job.log("worker-0"):
        if time.monotonic() > deadline:
            fail("the worker never trained:\n" + job.log("worker-0")[-2000:])
        time.sleep(0.05)
    job.procs["worker-0"][0].send_signal(signal.SIGKILL)
    job.procs["worker-0"][0].wait()
    del job.procs["worker-0"]
    check_exits(job, "worker-killed")
    step, _ = last_checkpoint(job.model_dir)
    if step < 300:
        fail("after the worker was killed the job's last checkpoint is at "
             "step %d, before max_steps 300" % step)
    print("a worker killed under async training: the job went on to step "
          "%d" % step, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case",
                        choices=["equivalence", "sync", "async", "relaunch",
                                 "faults"])
    parser.add_argument("--trainer", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", default="embedding",
                        choices=["mlp", "embedding", "wide_deep"])
    parser.add_argument("--ps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--trainer_flag", action="append", default=[],
                        help="a flag for every trainer of equivalence/sync")
    args = parser.parse_args()
    work = os.path.join(args.work, "%s-%s-%d%s" % (
        args.case, args.model, args.ps,
        "".join(f.replace("--", "-").replace("=", "") for f in
                args.trainer_flag)))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    args.work = work
    globals()["case_" + args.case](args)
    print("PASS")


if __name__ == "__main__":
    main()
