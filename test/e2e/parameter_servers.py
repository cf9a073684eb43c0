#!/usr/bin/env python3
"""Parameter-server training end to end: jobs of dist_trainer processes (a
chief, workers, ps tasks) on loopback addresses, launched by TF_CONFIG,
each process with a deadline (a process still running after it is killed
and the case fails).

usage: parameter_servers.py CASE --trainer=PATH --work=DIR
                            [--model=mlp|embedding|wide_deep] [--ps=N]
                            [--format=safetensors|tf --ckpt_tool=PATH]

--format is the jobs' checkpoint format: "tf" makes every checkpoint a
sharded save (each ps task writes its share, the chief merges them), read
back with estc-ckpt --convert (--ckpt_tool).

cases:
  equivalence  a chief alone with N ps tasks (the variables, their slots
               and the embedding table split over them) ends with the
               checkpoint of single-process training, within float32 noise
               (the bound and the measured difference are printed)
  partitioned  one process with the embedding table (and wide_deep's linear
               weights) partitioned into N parts ends with the variables of
               one process with whole tables (both tables starting equal)
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
  scale        an embedding table larger than any process of the job may
               hold (each capped with setrlimit(RLIMIT_AS)), partitioned
               over N ps tasks: the job trains and saves sharded
               checkpoints, a relaunched job restores them (each ps task
               its parts) and trains on; an uncapped process exports the
               model and estc-serve serves it
  faults       bad clusters (no worker, duplicate addresses, ps with
               train_distribute) and a ps task that is killed: one line
               each, non-zero; a worker killed under asynchronous training:
               the job goes on without it
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

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
            "--train_steps=%d" % args.steps,
            "--save_checkpoints_steps=%d" % args.save_steps,
            "--checkpoint_format=" + args.format, "--no_distribute",
            "--train_and_evaluate"] + list(extra)


def start_job(args, name, workers, extra=(), address_space=None):
    job = Job(args.work, name)
    job.model_dir = os.path.join(job.dir, "model")
    c = cluster(workers, args.ps, free_ports(1 + args.ps + workers))
    # The ps tasks first (the chief waits for them anyway).
    for i in range(args.ps):
        job.start("ps-%d" % i, flags(args, job.model_dir, extra),
                  tf_config(c, "ps", i), address_space)
    job.start("chief-0", flags(args, job.model_dir, extra),
              tf_config(c, "chief", 0), address_space)
    for i in range(workers):
        job.start("worker-%d" % i, flags(args, job.model_dir, extra),
                  tf_config(c, "worker", i), address_space)
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


def last_checkpoint(args, model_dir):
    """(step, {name: (dtype, shape, bytes)}) of model_dir's last checkpoint,
    partitioned variables whole (as a TF checkpoint holds them)."""
    step, _ = estc_files.checkpoint_state(model_dir)
    if step is None:
        fail("no checkpoint in " + model_dir)
    prefix = os.path.join(model_dir, "model.ckpt-%d" % step)
    path = prefix + ".safetensors"
    if os.path.exists(prefix + ".index"):
        # A sharded save in TF's format: converted by estc-ckpt (outside
        # model_dir, which a relaunched job goes on using).
        path = os.path.join(os.path.dirname(model_dir),
                            "converted-%d.safetensors" % step)
        r = subprocess.run([args.ckpt_tool, "--convert", path, prefix],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("estc-ckpt --convert %s: %s" % (prefix, r.stderr))
    return step, whole(estc_files.tensors(path))


def whole(tensors):
    """The parts "X/part_<i>[/<slot>]" of partitioned variables (as one
    process's safetensors checkpoint keeps them) joined along axis 0 into
    "X[/<slot>]"; every other tensor as it is."""
    parts, out = {}, {}
    for name, t in tensors.items():
        m = re.match(r"^(.*)/part_(\d+)(/.*)?$", name)
        if m:
            parts.setdefault(m.group(1) + (m.group(3) or ""), {})[
                int(m.group(2))] = t
        else:
            out[name] = t
    for name, by_index in parts.items():
        ts = [by_index[i] for i in sorted(by_index)]
        shape = (sum(t[1][0] for t in ts),) + tuple(ts[0][1][1:])
        out[name] = (ts[0][0], shape, b"".join(t[2] for t in ts))
    return out


TF_READER = r"""
import hashlib, json, sys
import tensorflow as tf
reader = tf.train.load_checkpoint(sys.argv[1])
out = {}
for name, shape in reader.get_variable_to_shape_map().items():
    value = reader.get_tensor(name)
    if value.dtype.kind in "fiub":
        out[name] = [list(shape), hashlib.sha256(value.tobytes()).hexdigest()]
print(json.dumps(out))
"""


def tf_reads(model_dir, step, tensors):
    """TF 2.15 (when installed) reads the sharded checkpoint as estc does:
    the same tensors, the partitioned ones assembled from the tasks'
    slices, byte for byte."""
    prefix = os.path.join(model_dir, "model.ckpt-%d" % step)
    r = subprocess.run([sys.executable, "-c", TF_READER, prefix],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        if "No module named 'tensorflow'" in r.stderr:
            print("SKIP the TF cross-check: TensorFlow is not installed",
                  flush=True)
            return
        fail("tf.train.load_checkpoint(%s): %s" % (prefix, r.stderr[-2000:]))
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    # The variables (estc's input position, bytes, is not TF's to read).
    variables = {n: t for n, t in tensors.items()
                 if t[0] in ("F32", "F64", "I32", "I64", "BOOL")}
    for name, (dtype, shape, data) in variables.items():
        want = [list(shape), hashlib.sha256(data).hexdigest()]
        if seen.get(name) != want:
            fail("TF reads %s as %s, estc as %s" %
                 (name, seen.get(name, "missing"), want))
    print("TF 2.15 reads the sharded checkpoint: its %d variables equal to "
          "estc's" % len(variables), flush=True)


def compare(ref, got, what, bound):
    """Fails unless `got` holds every tensor of `ref`, of its dtype and
    shape, integers equal and floats within `bound` of the variable's
    magnitude; returns (the largest float difference, where)."""
    missing = sorted(set(ref) - set(got))
    if missing:
        fail("%s lacks %s" % (what, missing[:5]))
    worst, where = 0.0, ""
    for name, (dtype, shape, data) in ref.items():
        if got[name][1] != shape or got[name][0] != dtype:
            fail("%s: %s %s in %s, %s %s in the reference" %
                 (name, got[name][0], got[name][1], what, dtype, shape))
        if dtype != "F32":
            if data != got[name][2]:
                fail("%s (%s) differs in %s" % (name, dtype, what))
            continue
        a, c = floats(data), floats(got[name][2])
        if not a:
            continue
        scale = max(1e-3, max(abs(v) for v in a))
        d = max(abs(x - y) for x, y in zip(a, c)) / scale
        if d > worst:
            worst, where = d, name
    if worst > bound:
        fail("%s: variables %.3g from the reference's (%s; bound %g)" %
             (what, worst, where, bound))
    return worst, where or "-"


def run_single(args, name, extra):
    """One process training alone (no TF_CONFIG), safetensors checkpoints;
    returns its Job."""
    single = Job(args.work, name)
    single.model_dir = os.path.join(single.dir, "model")
    single.start("chief", [args.trainer, "--model=" + args.model,
                           "--model_dir=" + single.model_dir,
                           "--train_steps=%d" % args.steps,
                           "--save_checkpoints_steps=5",
                           "--checkpoint_format=safetensors",
                           "--no_distribute"] + list(extra))
    check_exits(single, name)
    return single


def case_partitioned(args):
    extra = ["--constant_embedding"] + args.trainer_flag
    whole_run = run_single(args, "whole", extra)
    parts_run = run_single(args, "parts", extra + ["--partitions=%d" % args.ps])
    step, _ = estc_files.checkpoint_state(parts_run.model_dir)
    raw = estc_files.tensors(estc_files.checkpoint_file(
        parts_run.model_dir, "model.ckpt-%d" % step))
    last_part = "embedding_weights/part_%d" % (args.ps - 1)
    if not any(name.endswith(last_part) for name in raw):
        fail("the partitioned run has no %s: %s" % (last_part, sorted(raw)))
    _, ref = last_checkpoint(args, whole_run.model_dir)
    _, got = last_checkpoint(args, parts_run.model_dir)
    # The same rows looked up and updated: equal up to float32 noise (the
    # combiner's sums in another order).
    bound = 1e-5
    worst, where = compare(ref, got, "the partitioned run", bound)
    print("%d parts vs whole tables after %d steps: largest difference %.3g "
          "of a variable's magnitude (%s; bound %g)" %
          (args.ps, args.steps, worst, where, bound), flush=True)


def case_equivalence(args, workers=0, extra=()):
    extra = list(extra) + args.trainer_flag
    single = run_single(args, "single", extra)
    job = start_job(args, "job", workers=workers, extra=extra)
    check_exits(job, "job")
    ref_step, ref = last_checkpoint(args, single.model_dir)
    step, got = last_checkpoint(args, job.model_dir)
    if step != ref_step:
        fail("the job's last checkpoint is at step %d, one process's at %d" %
             (step, ref_step))
    # The same gradients, the same update rules compiled in another module:
    # equal up to the last bits of float32 arithmetic, compounded over the
    # steps.
    bound = 1e-5
    worst, where = compare(ref, got, "the job's checkpoint", bound)
    print("%d ps tasks vs one process after %d steps (%s checkpoints): "
          "largest difference %.3g of a variable's magnitude (%s; bound %g)"
          % (args.ps, args.steps, args.format, worst, where, bound),
          flush=True)
    if args.format == "tf":
        tf_reads(job.model_dir, step, got)
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
    step, got = last_checkpoint(args, job.model_dir)
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
    extra = ["--sync_replicas=1", "--optimizer=Adagrad"] + args.trainer_flag
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
    _, a = last_checkpoint(args, whole.model_dir)
    _, b = last_checkpoint(args, again.model_dir)
    differ = sorted(k for k in a if a[k] != b.get(k))
    if differ or set(a) != set(b):
        fail("the relaunched job's last checkpoint differs from the "
             "uninterrupted one's: %s" % (differ[:5] or
                                         sorted(set(a) ^ set(b))[:5]))
    print("relaunch: after ps:1 was killed at step 10, the job ends with "
          "the uninterrupted job's checkpoint (%d tensors, bit for bit)" %
          len(a), flush=True)


def case_scale(args):
    """The table: 2^22 x 64 floats = 1 GiB, partitioned over args.ps ps
    tasks; every process of the job capped below the table's size (with
    glibc's malloc in one arena: MALLOC_ARENA_MAX=1 in the environment,
    else each thread's arena reserves 64 MiB of address space it never
    uses). Checkpoints unsynced (the test's disk writes, not its memory)."""
    rows, dim = 1 << 22, 64
    table = rows * dim * 4
    cap = args.address_space_mb << 20
    if table <= cap:
        fail("the table (%d MiB) must exceed the cap (%d MiB)" %
             (table >> 20, cap >> 20))
    os.environ["MALLOC_ARENA_MAX"] = "1"
    extra = ["--ids=%d" % rows, "--embedding_dim=%d" % dim,
             "--partitions=%d" % args.ps, "--optimizer=SGD",
             "--examples=2048", "--no_sync_checkpoints"]
    args.steps, args.save_steps = 3, 1000
    job = start_job(args, "job", workers=0, extra=extra, address_space=cap)
    check_exits(job, "scale job")
    for task in job.procs:
        if task.startswith("ps-") and \
                "Restoring parameters" in job.log(task):
            fail("%s restored in a fresh model_dir" % task)
    # Relaunched to train on: each ps task restores its part of the table
    # from the sharded checkpoint, straight into its variable, under the
    # cap.
    args.steps = 6
    again = start_job(args, "job", workers=0, extra=extra, address_space=cap)
    check_exits(again, "relaunched scale job")
    for i in range(args.ps):
        if "Restoring parameters from" not in again.log("ps-%d" % i):
            fail("ps-%d did not restore:\n%s" %
                 (i, again.log("ps-%d" % i)[-2000:]))
    step, _ = estc_files.checkpoint_state(job.model_dir)
    if step != 6:
        fail("the relaunched job's last checkpoint is at step %s, not 6" %
             step)
    prefix = os.path.join(job.model_dir, "model.ckpt-6")
    shards = [f for f in os.listdir(job.model_dir)
              if f.startswith("model.ckpt-6.data-")]
    if len(shards) != args.ps + 1 or not os.path.exists(prefix + ".index"):
        fail("model.ckpt-6 is not a sharded save of %d parts: %s" %
             (args.ps + 1, sorted(shards)))
    biggest = max(os.path.getsize(os.path.join(job.model_dir, f))
                  for f in shards)
    # Exported and served by processes without the cap (a serving
    # machine holds the whole table): the served predictions are the
    # checkpoint's.
    export = os.path.join(job.dir, "export")
    r = subprocess.run(
        [args.trainer, "--model=" + args.model, "--model_dir=" + job.model_dir,
         "--no_distribute", "--export_dir=" + export, "--predict=8"] + extra,
        capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or "exported: " not in r.stdout:
        fail("export: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    expected = [[float(v) for v in line.split(":")[1].split()]
                for line in r.stdout.splitlines()
                if line.startswith("prediction ")]
    served = serve_predictions(args, export, job.dir, ["--ids=%d" % rows])
    if not expected or len(served) != len(expected) or max(
            abs(a - b) for want, got in zip(expected, served)
            for a, b in zip(want, got)) > 1e-5:
        fail("served %s, Estimator.predict %s" % (served, expected))
    print("scale: a %d MiB table over %d ps tasks, every process of the "
          "job capped at %d MiB: trained, saved in %d parts (the largest "
          "%d MiB), restored, trained on to step 6, exported and served (%d "
          "predictions equal to Estimator.predict's)" %
          (table >> 20, args.ps, cap >> 20, len(shards), biggest >> 20,
           len(served)), flush=True)
    # 3 GiB of checkpoints and a 1 GiB export: gone once checked.
    shutil.rmtree(job.dir, ignore_errors=True)


def serve_predictions(args, export_base, work, data_flags):
    """estc-serve on the export; :predict of the evaluation examples the
    trainer predicted (with `data_flags`, --dump_eval prints them)."""
    port_file = os.path.join(work, "port")
    server = subprocess.Popen(
        [args.serve_tool, "--rest_api_port=0", "--rest_api_host=127.0.0.1",
         "--port_file=" + port_file, "--model_name=scale",
         "--model_base_path=" + export_base],
        stderr=open(os.path.join(work, "serve.log"), "w"))
    try:
        deadline = time.monotonic() + 120
        while not (os.path.exists(port_file) and os.path.getsize(port_file)):
            if time.monotonic() > deadline or server.poll() is not None:
                fail("estc-serve wrote no port:\n" +
                     open(os.path.join(work, "serve.log")).read()[-2000:])
            time.sleep(0.05)
        url = "http://127.0.0.1:%s/v1/models/scale:predict" % open(
            port_file).read().strip()
        instances = eval_instances(args, data_flags)
        # A raw receiver's classifier: its "predict" signature (TF's export
        # keeps classification signatures for tf.Example inputs).
        body = json.dumps({"signature_name": "predict",
                           "instances": instances}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, data=body),
                                    timeout=60) as f:
            answer = json.loads(f.read())
        return [p["probabilities"] for p in answer["predictions"]]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def eval_instances(args, data_flags):
    """The trainer's first 8 evaluation examples, as :predict instances."""
    r = subprocess.run([args.trainer, "--model_dir=unused", "--dump_eval=8"] +
                       data_flags,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("--dump_eval: %s" % r.stderr)
    return json.loads(r.stdout)


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
                    extra=["--train_steps=300", "--step_sleep_ms=20"])
    deadline = time.monotonic() + 120
    while "loss = " not in job.log("worker-0"):
        if time.monotonic() > deadline:
            fail("the worker never trained:\n" + job.log("worker-0")[-2000:])
        time.sleep(0.05)
    job.procs["worker-0"][0].send_signal(signal.SIGKILL)
    job.procs["worker-0"][0].wait()
    del job.procs["worker-0"]
    check_exits(job, "worker-killed")
    step, _ = last_checkpoint(args, job.model_dir)
    if step < 300:
        fail("after the worker was killed the job's last checkpoint is at "
             "step %d, before max_steps 300" % step)
    print("a worker killed under async training: the job went on to step "
          "%d" % step, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case",
                        choices=["equivalence", "partitioned", "sync",
                                 "async", "relaunch", "scale", "faults"])
    parser.add_argument("--trainer", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", default="embedding",
                        choices=["mlp", "embedding", "wide_deep"])
    parser.add_argument("--ps", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--trainer_flag", action="append", default=[],
                        help="a flag for every trainer of equivalence/sync")
    parser.add_argument("--format", default="safetensors",
                        choices=["safetensors", "tf"],
                        help="the jobs' checkpoint format (tf: sharded "
                        "saves)")
    parser.add_argument("--ckpt_tool", help="estc-ckpt (--format=tf)")
    parser.add_argument("--serve_tool", help="estc-serve (scale)")
    parser.add_argument("--address_space_mb", type=int, default=896,
                        help="scale: each process's RLIMIT_AS")
    args = parser.parse_args()
    args.save_steps = 5
    work = os.path.join(args.work, "%s-%s-%d-%s%s" % (
        args.case, args.model, args.ps, args.format,
        "".join(f.replace("--", "-").replace("=", "") for f in
                args.trainer_flag)))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    args.work = work
    globals()["case_" + args.case](args)
    print("PASS")


if __name__ == "__main__":
    main()
