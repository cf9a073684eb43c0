#!/usr/bin/env python3
"""The collective engines end to end: collective_worker processes on
127.0.0.1 (Gloo) or under mpirun (MPI), each case bounded in time.

usage: collectives.py CASE --worker=PATH [--mpirun=PATH] [--size=N]

cases:
  gloo       N replicas: correct sums, gathers and broadcasts; one digest
             on every rank (the same bits), and the same digest on a second
             run
  killed     a replica SIGKILLs itself mid-loop: every other replica exits 1
             within 10 s with one line naming it ("lost task worker:K")
  frozen     a replica stops (SIGSTOP): the others exit 1 after the
             timeout, with one line, not a hang
  rendezvous an unreachable chief, a replica that never joins, two
             processes with one rank: one line each, within the timeout
  mpi        mpirun -np N: every rank's digest equal; with 2 ranks, equal to
             Gloo's (a + b is one rounding either way)
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import time


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(argv):
    return subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def finish(procs, deadline):
    """[(code, stdout, stderr, seconds)]; kills all at the deadline."""
    start_time = time.monotonic()
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(0.1, start_time + deadline -
                                            time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail("a replica still ran after %d s (a hang)" % deadline)
        out.append((p.returncode, o, e, time.monotonic() - start_time))
    return out


def gloo_job(args, size, extra=(), ranks=None):
    port = free_port()
    ranks = list(range(size)) if ranks is None else ranks
    return [start([args.worker, "--engine=gloo", "--rank=%d" % r,
                   "--size=%d" % size, "--rendezvous=127.0.0.1:%d" % port] +
                  list(extra)) for r in ranks]


def digests(results):
    out = []
    for code, o, e, _ in results:
        if code != 0:
            fail("a replica exited %d: %s" % (code, e.strip()))
        m = re.search(r"digest ([0-9a-f]+)", o)
        if not m:
            fail("no digest in: %r" % o)
        out.append(m.group(1))
    return out


def one_line(e):
    lines = [l for l in e.splitlines() if l.strip()]
    if len(lines) != 1 or "error:" not in lines[0]:
        fail("expected one error line, got:\n%s" % e)
    return lines[0]


def case_gloo(args):
    a = digests(finish(gloo_job(args, args.size), 120))
    b = digests(finish(gloo_job(args, args.size), 120))
    if len(set(a)) != 1:
        fail("the ranks' results differ: %s" % a)
    if a != b:
        fail("two runs differ: %s vs %s" % (a, b))
    print("%d replicas, two runs: digest %s on every rank" % (args.size, a[0]))


def case_killed(args):
    n = args.size
    results = finish(gloo_job(args, n, ["--iterations=100", "--die_at=3",
                                         "--victim=%d" % (n - 1),
                                         "--timeout_secs=30"]), 60)
    name = "worker:%d" % (n - 2)
    for r, (code, o, e, took) in enumerate(results):
        if r == n - 1:
            continue
        line = one_line(e)
        print("rank %d: exit %d after %.1f s: %s" % (r, code, took, line))
        if code == 0 or name not in line or "lost" not in line:
            fail("rank %d did not name the lost %s" % (r, name))
        if took > 10:
            fail("rank %d took %.1f s to stop (bound 10 s)" % (r, took))


def case_frozen(args):
    n = args.size
    procs = gloo_job(args, n, ["--iterations=100", "--die_at=3",
                               "--victim=%d" % (n - 1), "--freeze",
                               "--timeout_secs=3"])
    others = procs[:-1]
    try:
        results = finish(others, 30)
    finally:
        procs[-1].kill()
        procs[-1].wait()
    for r, (code, o, e, took) in enumerate(results):
        line = one_line(e)
        print("rank %d: exit %d after %.1f s: %s" % (r, code, took, line))
        if code == 0 or "Timed out" not in line:
            fail("rank %d did not time out with one line" % r)


def case_rendezvous(args):
    port = free_port()
    t = time.monotonic()
    r = finish([start([args.worker, "--rank=1", "--size=2",
                       "--rendezvous=127.0.0.1:%d" % port,
                       "--timeout_secs=2"])], 30)[0]
    line = one_line(r[2])
    print("unreachable chief: exit %d after %.1f s: %s" %
          (r[0], time.monotonic() - t, line))
    if r[0] == 0 or "cannot reach the chief at 127.0.0.1:%d" % port not in line:
        fail("unreachable chief: wrong line")
    results = finish(gloo_job(args, 3, ["--timeout_secs=2"], ranks=[0, 1]), 30)
    for code, o, e, took in results:
        line = one_line(e)
        print("missing replica: exit %d after %.1f s: %s" % (code, took, line))
        if code == 0 or "task worker:1 did not join within 2 s" not in line:
            fail("missing replica: wrong line")
    results = finish(gloo_job(args, 3, ["--timeout_secs=2"],
                              ranks=[0, 1, 1]), 30)
    lines = [one_line(e) for code, o, e, took in results]
    print("duplicate rank:\n  " + "\n  ".join(lines))
    if not any("rank 1 has joined already" in l for l in lines):
        fail("duplicate rank: no replica was refused")


def case_mpi(args):
    if not args.mpirun or not os.path.exists(args.mpirun):
        print("SKIP: mpirun not found (MPI not built)")
        sys.exit(77)
    base = [args.mpirun, "--allow-run-as-root", "--oversubscribe"]
    r = finish([start(base + ["-np", str(args.size), args.worker,
                              "--engine=mpi"])], 120)[0]
    if r[0] != 0:
        fail("mpirun exited %d: %s" % (r[0], r[2][-2000:]))
    found = re.findall(r"digest ([0-9a-f]+)", r[1])
    if len(found) != args.size or len(set(found)) != 1:
        fail("the ranks' digests: %s" % found)
    print("mpirun -np %d: digest %s on every rank" % (args.size, found[0]))
    if args.size == 2:
        g = digests(finish(gloo_job(args, 2), 120))
        if g[0] != found[0]:
            fail("MPI's digest %s differs from Gloo's %s" % (found[0], g[0]))
        print("the same bits as Gloo's")
    # A killed rank: mpirun ends the job, non-zero, within the bound.
    t = time.monotonic()
    r = finish([start(base + ["-np", str(args.size), args.worker,
                              "--engine=mpi", "--iterations=1000",
                              "--die_at=3", "--victim=1"])], 60)[0]
    took = time.monotonic() - t
    print("a killed rank: mpirun exited %d after %.1f s" % (r[0], took))
    if r[0] == 0 or "signal 9" not in r[1] + r[2]:
        fail("mpirun did not report the killed rank:\n%s" % (r[1] + r[2]))


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("case", choices=["gloo", "killed", "frozen",
                                         "rendezvous", "mpi"])
    parser.add_argument("--worker", required=True)
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--size", type=int, default=3)
    args = parser.parse_args()
    globals()["case_" + args.case](args)
    print("PASS")


if __name__ == "__main__":
    main()
