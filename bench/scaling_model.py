#!/usr/bin/env python3
"""The scaling models of data-parallel training with estc (docs/results.md,
"Distributed training" and "Parameter servers"): the expected step time and
scaling efficiency of N workers, from a step's compute time, its gradient
sizes and the network, for the seed models and two wide & deep models
(synchronous all-reduce), and for the Criteo-sized wide & deep with P
parameter-server tasks (asynchronous), side by side with all-reduce.

usage: scaling_model.py [--mode=allreduce|ps|both]
                        [--allreduce_json=FILE] [--distributed_json=FILE]
                        [--workers=8,16,32,64] [--latency_us=50]
                        [--efficiency=E] [--networks=10,25,100]
                        [--ps=2,4,8,16] [--ps_json=FILE] [--call_us=A]
                        [--apply_us=H] [--apply_gbps=M]
                        [--table_rows=33.8e6] [--slots=1]

--mode=allreduce (the default) prints the all-reduce table alone, ps the
parameter-server tables alone, both the two.

ALL-REDUCE. A step of N workers (per-worker batch B fixed: weak scaling)
takes

  T(N) = C + T_ar(N, S) + T_ag(N, R)

  C            the step's compute on one worker (measured: distributed_bench
               with 1 worker, or the figures below)
  T_ar(N, S)   Gloo's ring all-reduce of the dense gradients, S bytes:
               2 (N-1) a + 2 (N-1)/N * S / (e W)
  T_ag(N, R)   the ring all-gather of the sparse gradients, R bytes per
               worker (ids + rows): (N-1) a + (N-1) * R / (e W)

with W the link's bandwidth, a the per-message latency and e the fraction
of the link Gloo's ring reaches (measured on loopback by allreduce_bench:
its bus bandwidth / the link's, for large buffers). estc's all-reduce runs
after the whole backward pass (no overlap with compute), so efficiency is
C / T(N). The all-reduce's cost per worker is nearly constant in N; the
all-gather's grows linearly: sparse models are where scaling ends.
--allreduce_json takes e (and the loopback numbers, printed) from an
allreduce_bench --json file; --distributed_json takes C from a
distributed_bench --json file (its 1-worker rows).

PARAMETER SERVERS (docs/design/distributed.md, "Parameter servers";
bench/ps_bench.cpp). Each step a worker asks the rows its batch looks up,
one PullRowsBatch call per ps task (ids out, rows back), runs its compiled
step, then pushes one Push per task: the dense gradients of the variables
that task holds and the sparse gradients (ids + rows) of its tables; the
Push's answer, sent once the task has applied it, carries back the worker's
copies of that task's dense variables. Variables are spread round robin:
assumed an even split of the dense bytes D and of the rows over P tasks.
Asynchronous training (TF's default): workers never wait for each other;
a task applies the pushes one at a time. With L lookups a step (batch x
lookups per example), 8-byte ids and r-byte rows:

  worker's step   T_w = C + 2 a_c + (in + out) / (e W) + A(P)
                  in  = L r + D                 (rows, dense copies)
                  out = 8 L + D + L (8 + r)     (ids, dense and sparse grads)
  a ps task       T_ps = max(N max(in_ps, out_ps) / (P e W), N A(P))
                  in_ps  = 8 L + D + L (8 + r)  (per worker step, all tasks)
                  out_ps = L r + D
  one push's apply on a task   A(P) = h + (D + L (8 + r)) / P / M
  throughput      N B / max(T_w, T_ps) examples/s
  efficiency      C / max(T_w, T_ps)  (against one worker with no ps)

a_c is a gRPC call's round trip (the P tasks' calls go out in parallel),
h an apply's fixed cost and M the rate at which a task applies gradient
bytes (reading the push, running the optimizer over its variables and
slots); e and W as above. Nothing in a worker's step overlaps (a request,
then its answer; the pull, the compute, the push), so its link time is its
bytes in and out together; a task's link is full duplex and busy with
many workers at once, so its time is the larger direction. A task receives
while it applies, so T_ps is the larger of its link and its applies. The
bound printed is the term that sets the step: the ps link or the ps's
applies when T_ps > T_w, else the worker's largest overhead (its link, the
calls' latency, or waiting for its own push's apply). A bottleneck model:
no queueing (near T_w = T_ps the real rate is lower), every lookup a
distinct row (a batch's repeated ids are sent once: fewer bytes), no
stragglers, no CPU cost of gRPC on the worker beyond a_c, and staleness's
effect on accuracy not counted. --ps_json takes a_c and h from a ps_bench
--json file (the chief's line): a_c = its pull's ms a step (a round trip
with a few KB of rows), h = its push's ms less that round trip and the
push's bytes at loopback's bandwidth (an upper bound: loopback on a small
machine, with the census model's apply included). The table's memory per
task (rows x r x (1 + slots) / P, plus the dense variables) does not enter
the step time: a step touches only the rows it looks up. All-reduce keeps
the whole table (and its slots) on every worker.
"""
import argparse
import collections
import json
import sys

ID_BYTES = 8

# An embedding model's tables: examples per step, lookups per example, the
# floats of a row, the rows of all tables.
Table = collections.namedtuple("Table", "batch lookups row_floats rows")

# A model: its name, C seconds per step, dense gradient bytes, sparse bytes
# per worker per step, what C is, and its tables (for the ps model).
Model = collections.namedtuple("Model", "name c dense sparse what table",
                               defaults=(None,))


def sparse_bytes(t):
    """A step's sparse gradient: every lookup's id and row."""
    return t.batch * t.lookups * (ID_BYTES + 4 * t.row_floats)


# A Criteo-sized wide & deep: 26 embeddings of 32 floats, DNN 1024-512-256
# over them (~1.52M floats dense); batch 512. Its tables: every value of
# Criteo's (Kaggle's) 26 categorical features its own row, ~33.8M rows.
CRITEO = Table(batch=512, lookups=26, row_floats=32, rows=33.8e6)

# C of the seed models: distributed_bench, 1 worker, batch 128, 1 kernel
# thread (docs/results.md); the wide & deep models' C is an assumption
# stated in their row.
MODELS = [
    Model("MLP 784-256-256-10", 1.84e-3, 269322 * 4, 0,
          "measured, batch 128, 1 thread"),
    Model("ConvNet (MNIST)", 16.0e-3, 253018 * 4, 0,
          "measured, batch 128, 1 thread"),
    # The census wide & deep of bench/canned_bench: DNN 100-50 over ~64
    # inputs (~11.6k floats dense) ; per example ~12 linear ids (4-byte
    # weight + 8-byte id) and 3 embeddings of 8 floats (+ ids), batch 512.
    Model("census wide & deep", 5.0e-3, 11600 * 4, 512 * (12 * 12 + 3 * 40),
          "assumed 5 ms, batch 512"),
    Model("Criteo-sized wide & deep", 20.0e-3, 1520000 * 4,
          sparse_bytes(CRITEO), "assumed 20 ms, batch 512", CRITEO),
]

# The parameter-server model's assumed figures, used unless a flag or
# --ps_json gives them: a gRPC round trip on a datacenter network (two of
# the all-reduce model's 50 us messages and ~50 us of gRPC; loopback on the
# 2-vCPU machine measured 0.1-0.2 ms), an apply's fixed cost, and one core
# applying Adagrad at ~2 GB/s of gradient (reading the push, the variable
# and its slot, writing both: ~5x the gradient's bytes of memory traffic).
ASSUMED_CALL_US = 150.0
ASSUMED_APPLY_US = 50.0
ASSUMED_APPLY_GBPS = 2.0


def step_time(c, dense, sparse, n, latency, bandwidth):
    t = c
    if n > 1:
        t += 2 * (n - 1) * latency + 2 * (n - 1) / n * dense / bandwidth
        if sparse:
            t += (n - 1) * latency + (n - 1) * sparse / bandwidth
    return t


def ps_step(m, n, p, call, apply_fixed, apply_rate, bandwidth):
    """The ps model of m with n workers and p tasks: (T_w, T_ps, step
    seconds, the term that bounds it)."""
    t = m.table
    lookups = t.batch * t.lookups
    ids = lookups * ID_BYTES
    rows = lookups * 4 * t.row_floats
    push = m.dense + ids + rows
    worker_in = rows + m.dense
    worker_out = ids + push
    apply_one = apply_fixed + push / p / apply_rate
    worker = {"latency": 2 * call,
              "worker link": (worker_in + worker_out) / bandwidth,
              "apply wait": apply_one}
    task = {"ps link": n * max(worker_in, worker_out) / p / bandwidth,
            "ps apply": n * apply_one}
    t_w = m.c + sum(worker.values())
    t_ps = max(task.values())
    if t_ps > t_w:
        return t_w, t_ps, t_ps, max(task, key=task.get)
    return t_w, t_ps, t_w, max(worker, key=worker.get)


def ps_figures(path):
    """(a_c, h, what) from a ps_bench --json file's chief line."""
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    chief = [r for r in lines if isinstance(r, dict) and
             str(r.get("side", "")).startswith("chief")]
    if not chief:
        raise ValueError("no chief line (not a ps_bench --json file)")
    r = chief[0]
    call = r["pull_ms_per_step"] * 1e-3
    loopback = r["loopback_mib_per_sec"] * (1 << 20)
    apply_fixed = max(0.0, r["push_ms_per_step"] * 1e-3 - call -
                      r["push_bytes_per_step"] / loopback)
    what = ("# ps_bench (%s on loopback): pull %.3f ms, push %.3f ms "
            "(%.0f KB) a step; loopback %.2f GB/s" %
            (r["side"], r["pull_ms_per_step"], r["push_ms_per_step"],
             r["push_bytes_per_step"] / 1e3, loopback / 1e9))
    return call, apply_fixed, what


def print_allreduce(models, workers, networks, lat, eff):
    print("# ring efficiency e = %.2f of the link, latency a = %.0f us; "
          "weak scaling (per-worker batch fixed)" % (eff, lat * 1e6))
    header = "| model | C (ms) | dense MB | sparse MB/worker | link |" + \
        "".join(" N=%d |" % n for n in workers)
    print(header)
    print("|" + "---|" * (5 + len(workers)))
    for m in models:
        for g in networks:
            bw = g * 1e9 / 8 * eff
            cells = []
            for n in workers:
                t = step_time(m.c, m.dense, m.sparse, n, lat, bw)
                cells.append(" %.0f%% (%.1f ms) |" % (100 * m.c / t, t * 1e3))
            print("| %s | %.2f (%s) | %.2f | %.2f | %g GbE |%s" %
                  (m.name, m.c * 1e3, m.what, m.dense / 1e6, m.sparse / 1e6,
                   g, "".join(cells)))


def print_ps(m, workers, networks, pss, lat, eff, call, apply_fixed,
             apply_rate, slots, sources):
    t = m.table
    lookups = t.batch * t.lookups
    rows = lookups * 4 * t.row_floats
    table = t.rows * 4 * t.row_floats
    held = (table + m.dense) * (1 + slots)
    print("# ps model: call round trip a_c = %.0f us (%s), apply per push "
          "h + bytes / M = %.0f us (%s) + bytes / %.1f GB/s (%s), link "
          "efficiency e = %.2f; asynchronous, weak scaling; all-reduce: "
          "a = %.0f us" % (call * 1e6, sources[0], apply_fixed * 1e6,
                           sources[1], apply_rate / 1e9, sources[2], eff,
                           lat * 1e6))
    print("# %s: C %.0f ms (%s); dense %.2f MB; a step %d lookups of "
          "%d-byte rows: pulls %.2f MB of ids out, %.2f MB of rows in; "
          "pushes %.2f MB dense + %.2f MB sparse out, %.2f MB of copies "
          "back: %.2f MB on the worker's link" %
          (m.name, m.c * 1e3, m.what, m.dense / 1e6, lookups,
           4 * t.row_floats, lookups * ID_BYTES / 1e6, rows / 1e6,
           m.dense / 1e6, m.sparse / 1e6, m.dense / 1e6,
           (2 * m.dense + rows + lookups * ID_BYTES + m.sparse) / 1e6))
    print("# the table: %.1fM rows x %d B = %.2f GB; with the dense "
          "variables and %d optimizer slot(s) each, %.2f GB on every "
          "all-reduce worker; per ps task:%s" %
          (t.rows / 1e6, 4 * t.row_floats, table / 1e9, slots, held / 1e9,
           ",".join(" P=%d %.2f GB" % (p, held / p / 1e9) for p in pss)))
    print("| link | N | ps | worker ms | ps ms | step ms | examples/s | "
          "efficiency | bound | all-reduce ms | all-reduce examples/s | "
          "all-reduce efficiency |")
    print("|" + "---|" * 12)
    cells = {}
    for g in networks:
        bw = g * 1e9 / 8 * eff
        for n in workers:
            t_ar = step_time(m.c, m.dense, m.sparse, n, lat, bw)
            cells[g, n, "all-reduce"] = "%.0f%%" % (100 * m.c / t_ar)
            for p in pss:
                t_w, t_ps, step, bound = ps_step(m, n, p, call, apply_fixed,
                                                 apply_rate, bw)
                cells[g, n, p] = "%.0f%% %s" % (100 * m.c / step, bound)
                print("| %g GbE | %d | %d | %.1f | %.1f | %.1f | %.0f | "
                      "%.0f%% | %s | %.1f | %.0f | %.0f%% |" %
                      (g, n, p, t_w * 1e3, t_ps * 1e3, step * 1e3,
                       n * t.batch / step, 100 * m.c / step, bound,
                       t_ar * 1e3, n * t.batch / t_ar, 100 * m.c / t_ar))
    for g in networks:
        print()
        print("# %s, %g GbE: efficiency (bound) by workers N and ps tasks"
              % (m.name, g))
        print("| N | all-reduce |" + "".join(" ps=%d |" % p for p in pss))
        print("|" + "---|" * (2 + len(pss)))
        for n in workers:
            print("| %d |%s" % (n, "".join(
                " %s |" % cells[g, n, k] for k in ["all-reduce"] + pss)))


class Parser(argparse.ArgumentParser):
    """A bad flag is one line and exit status 2."""

    def error(self, message):
        sys.stderr.write("scaling_model.py: error: %s\n" % message)
        sys.exit(2)


def numbers(text, kind):
    return [kind(x) for x in text.split(",")]


def main():
    p = Parser(usage=__doc__)
    p.add_argument("--mode", default="allreduce",
                   choices=["allreduce", "ps", "both"])
    p.add_argument("--allreduce_json")
    p.add_argument("--distributed_json")
    p.add_argument("--workers", default="8,16,32,64")
    p.add_argument("--latency_us", type=float, default=50.0)
    p.add_argument("--efficiency", type=float, default=None,
                   help="fraction of the link the ring reaches (default: "
                        "from --allreduce_json, else 0.7)")
    p.add_argument("--networks", default="10,25,100",
                   help="link speeds in Gbit/s")
    p.add_argument("--ps", default="2,4,8,16", help="ps task counts")
    p.add_argument("--ps_json", help="a ps_bench --json file")
    p.add_argument("--call_us", type=float, default=None,
                   help="a gRPC call's round trip (default: from --ps_json, "
                        "else %g)" % ASSUMED_CALL_US)
    p.add_argument("--apply_us", type=float, default=None,
                   help="an apply's fixed cost (default: from --ps_json, "
                        "else %g)" % ASSUMED_APPLY_US)
    p.add_argument("--apply_gbps", type=float, default=None,
                   help="GB/s of gradient a ps task applies (default: %g)" %
                        ASSUMED_APPLY_GBPS)
    p.add_argument("--table_rows", type=float, default=CRITEO.rows,
                   help="rows of the Criteo-sized model's tables")
    p.add_argument("--slots", type=int, default=1,
                   help="optimizer slots per variable (Adagrad: 1)")
    a = p.parse_args()
    try:
        workers = numbers(a.workers, int)
        networks = numbers(a.networks, float)
    except ValueError:
        p.error("--workers and --networks are comma-separated numbers")
    if any(w < 1 for w in workers) or any(g <= 0 for g in networks):
        p.error("--workers must be >= 1 and --networks > 0")
    try:
        pss = numbers(a.ps, int)
    except ValueError:
        p.error("--ps is comma-separated numbers")
    if any(n < 1 for n in pss) or (a.apply_gbps or 1) <= 0 or \
            a.slots < 0 or a.table_rows < 0:
        p.error("--ps must be >= 1, --apply_gbps > 0, --slots and "
                "--table_rows >= 0")
    eff = a.efficiency
    if a.allreduce_json:
        with open(a.allreduce_json) as f:
            ar = json.load(f)
        link = ar["loopback_bytes_per_sec"]
        big = max(ar["allreduce"], key=lambda r: (r["bytes"], -r["replicas"]))
        n = big["replicas"]
        bus = big["bytes"] / big["seconds"] * 2 * (n - 1) / n
        print("# loopback (allreduce_bench): link %.2f GB/s, %.0f us one "
              "way; ring all-reduce of %d MiB, %d workers: bus %.2f GB/s = "
              "%.0f%% of the link" % (link / 1e9,
                                      ar["loopback_latency_sec"] * 1e6,
                                      big["bytes"] >> 20, n, bus / 1e9,
                                      100 * bus / link))
        if eff is None:
            eff = bus / link
    if eff is None:
        eff = 0.7
    models = list(MODELS)
    if a.distributed_json:
        with open(a.distributed_json) as f:
            rows = json.load(f)
        for r in rows:
            if r["workers"] == 1:
                i = {"mlp": 0, "convnet": 1}.get(r["model"])
                if i is not None:
                    models[i] = models[i]._replace(
                        c=r["ms_per_step"] / 1e3,
                        what="measured, batch %d, %d thread(s)" %
                             (r["batch"], r["threads"]))
    lat = a.latency_us * 1e-6
    if a.mode in ("allreduce", "both"):
        print_allreduce(models, workers, networks, lat, eff)
    if a.mode in ("ps", "both"):
        call, apply_fixed = ASSUMED_CALL_US * 1e-6, ASSUMED_APPLY_US * 1e-6
        apply_rate = ASSUMED_APPLY_GBPS * 1e9
        sources = ["assumed", "assumed", "assumed"]
        if a.mode == "both":
            print()
        if a.ps_json:
            try:
                call, apply_fixed, what = ps_figures(a.ps_json)
            except (OSError, ValueError, KeyError, TypeError) as e:
                p.error("--ps_json=%s: %s" % (a.ps_json, e))
            sources[:2] = ["measured", "measured"]
            print(what)
        if a.call_us is not None:
            call, sources[0] = a.call_us * 1e-6, "given"
        if a.apply_us is not None:
            apply_fixed, sources[1] = a.apply_us * 1e-6, "given"
        if a.apply_gbps is not None:
            apply_rate, sources[2] = a.apply_gbps * 1e9, "given"
        for m in models:
            if m.table:
                m = m._replace(table=m.table._replace(rows=a.table_rows))
                print_ps(m, workers, networks, pss, lat, eff, call,
                         apply_fixed, apply_rate, a.slots, sources)
    return 0


if __name__ == "__main__":
    sys.exit(main())
