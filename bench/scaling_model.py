#!/usr/bin/env python3
"""The scaling model of synchronous data-parallel training with estc
(docs/results.md, "Distributed training"): the expected step time and
scaling efficiency of N workers, from a step's compute time, its gradient
sizes and the network, for the seed models and two wide & deep models.

usage: scaling_model.py [--allreduce_json=FILE] [--distributed_json=FILE]
                        [--workers=8,16,32,64] [--latency_us=50]
                        [--efficiency=E] [--networks=10,25,100]

A step of N workers (per-worker batch B fixed: weak scaling) takes

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
"""
import argparse
import json
import sys

# (name, C seconds per step, dense gradient bytes, sparse bytes per worker
# per step, what C is). C of the seed models: distributed_bench, 1 worker,
# batch 128, 1 kernel thread (docs/results.md); the wide & deep models' C is
# an assumption stated in their row.
MODELS = [
    ("MLP 784-256-256-10", 1.84e-3, 269322 * 4, 0,
     "measured, batch 128, 1 thread"),
    ("ConvNet (MNIST)", 16.0e-3, 253018 * 4, 0,
     "measured, batch 128, 1 thread"),
    # The census wide & deep of bench/canned_bench: DNN 100-50 over ~64
    # inputs (~11.6k floats dense) ; per example ~12 linear ids (4-byte
    # weight + 8-byte id) and 3 embeddings of 8 floats (+ ids), batch 512.
    ("census wide & deep", 5.0e-3, 11600 * 4, 512 * (12 * 12 + 3 * 40),
     "assumed 5 ms, batch 512"),
    # A Criteo-sized wide & deep: 26 embeddings of 32 floats, DNN
    # 1024-512-256 over them (~1.52M floats dense); batch 512.
    ("Criteo-sized wide & deep", 20.0e-3, 1520000 * 4,
     512 * 26 * (32 * 4 + 8), "assumed 20 ms, batch 512"),
]


def step_time(c, dense, sparse, n, latency, bandwidth):
    t = c
    if n > 1:
        t += 2 * (n - 1) * latency + 2 * (n - 1) / n * dense / bandwidth
        if sparse:
            t += (n - 1) * latency + (n - 1) * sparse / bandwidth
    return t


class Parser(argparse.ArgumentParser):
    """A bad flag is one line and exit status 2."""

    def error(self, message):
        sys.stderr.write("scaling_model.py: error: %s\n" % message)
        sys.exit(2)


def main():
    p = Parser(usage=__doc__)
    p.add_argument("--allreduce_json")
    p.add_argument("--distributed_json")
    p.add_argument("--workers", default="8,16,32,64")
    p.add_argument("--latency_us", type=float, default=50.0)
    p.add_argument("--efficiency", type=float, default=None,
                   help="fraction of the link the ring reaches (default: "
                        "from --allreduce_json, else 0.7)")
    p.add_argument("--networks", default="10,25,100",
                   help="link speeds in Gbit/s")
    a = p.parse_args()
    try:
        workers = [int(w) for w in a.workers.split(",")]
        networks = [float(g) for g in a.networks.split(",")]
    except ValueError:
        p.error("--workers and --networks are comma-separated numbers")
    if any(w < 1 for w in workers) or any(g <= 0 for g in networks):
        p.error("--workers must be >= 1 and --networks > 0")
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
                name = {"mlp": 0, "convnet": 1}.get(r["model"])
                if name is not None:
                    m = models[name]
                    models[name] = (m[0], r["ms_per_step"] / 1e3, m[2], m[3],
                                    "measured, batch %d, %d thread(s)" %
                                    (r["batch"], r["threads"]))
    lat = a.latency_us * 1e-6
    print("# ring efficiency e = %.2f of the link, latency a = %.0f us; "
          "weak scaling (per-worker batch fixed)" % (eff, a.latency_us))
    header = "| model | C (ms) | dense MB | sparse MB/worker | link |" + \
        "".join(" N=%d |" % n for n in workers)
    print(header)
    print("|" + "---|" * (5 + len(workers)))
    for name, c, dense, sparse, what in models:
        for g in networks:
            bw = g * 1e9 / 8 * eff
            cells = []
            for n in workers:
                t = step_time(c, dense, sparse, n, lat, bw)
                cells.append(" %.0f%% (%.1f ms) |" % (100 * c / t, t * 1e3))
            print("| %s | %.2f (%s) | %.2f | %.2f | %g GbE |%s" %
                  (name, c * 1e3, what, dense / 1e6, sparse / 1e6, g,
                   "".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
