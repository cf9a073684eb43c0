#!/usr/bin/env python3
"""The collective engines end to end: collective_worker processes on
127.0.0.1 (Gloo) or under mpirun (MPI), each case bounded in time.

usage: collectives.py CASE --worker=PATH [--mpirun=PATH] [--size=N]

cases:
  gloo       N replicas: correct sums, gathers and broadcasts; one digest
             on every rank (the same bits), and the same digest on a second
             run
  killed     a replica SIGKILLs itself mid-loop: every other replica exits 1
             within 10 s with one line naming it and its address ("lost
             task worker:K (localhost:P) during ..."); then the same with the
             chief killed
  frozen     a replica stops (SIGSTOP): the others exit 1 after the timeout
             (plus the chief's answer), one line naming it, not a hang; then
             the same with the chief frozen
  rendezvous an unreachable chief (refused; SYNs dropped; a listener that
             never answers), a replica that never joins, two processes with
             one rank, a second chief, a replica with another size, a rank
             out of range: one line each, within the timeout
  mpi        mpirun -np N: every rank's digest equal; with 2 ranks, equal to
             Gloo's (a + b is one rounding either way); a killed rank ends
             the job (mpirun); a frozen one too, after the timeout (the
             watchdog's one line)
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


def addresses(port, size):
    """TF_CONFIG-like addresses: the chief's is the rendezvous."""
    return ["127.0.0.1:%d" % port] + ["localhost:%d" % (port + r)
                                      for r in range(1, size)]


def task(rank):
    return "chief:0" if rank == 0 else "worker:%d" % (rank - 1)


def gloo_job(args, size, extra=(), ranks=None, port=None):
    port = port or free_port()
    ranks = list(range(size)) if ranks is None else ranks
    return [start([args.worker, "--engine=gloo", "--rank=%d" % r,
                   "--size=%d" % size, "--rendezvous=127.0.0.1:%d" % port,
                   "--addresses=" + ",".join(addresses(port, size))] +
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


def lost_line(r, results, victim, port, size, bound, frozen):
    """Checks a survivor's one line names the victim and its address."""
    code, o, e, took = results
    line = one_line(e)
    print("rank %d: exit %d after %.1f s: %s" % (r, code, took, line))
    want = "lost task %s (%s) during " % (task(victim),
                                          addresses(port, size)[victim])
    if code == 0 or want not in line:
        fail("rank %d did not name the lost %s: want %r" %
             (r, task(victim), want))
    if frozen and "stopped answering" not in line:
        fail("rank %d did not say the lost one stopped answering" % r)
    if took > bound:
        fail("rank %d took %.1f s to stop (bound %.1f s)" % (r, took, bound))


def case_killed(args):
    n = args.size
    for victim in (n - 1, 0):
        port = free_port()
        results = finish(gloo_job(args, n, ["--iterations=100", "--die_at=3",
                                             "--victim=%d" % victim,
                                             "--timeout_secs=30"], port=port),
                         60)
        for r in range(n):
            if r != victim:
                lost_line(r, results[r], victim, port, n, 10, False)


def case_frozen(args):
    n, timeout = args.size, 3
    # The bound: the timeout, then the chief's answer (at most half the
    # timeout when the chief is the frozen one), and slack for a loaded
    # machine.
    bound = timeout * 1.5 + 3
    for victim in (n - 1, 0):
        port = free_port()
        procs = gloo_job(args, n, ["--iterations=100", "--die_at=3",
                                   "--victim=%d" % victim, "--freeze",
                                   "--timeout_secs=%d" % timeout], port=port)
        others = [p for r, p in enumerate(procs) if r != victim]
        try:
            results = finish(others, 30)
        finally:
            procs[victim].kill()
            procs[victim].wait()
        for r, res in zip([r for r in range(n) if r != victim], results):
            lost_line(r, res, victim, port, n, bound, True)


def alone(args, rank, size, port, timeout=2):
    """One replica against a chief at `port`: (exit code, line, seconds)."""
    t = time.monotonic()
    r = finish([start([args.worker, "--rank=%d" % rank, "--size=%d" % size,
                       "--rendezvous=127.0.0.1:%d" % port,
                       "--timeout_secs=%d" % timeout])], 30)[0]
    return r[0], one_line(r[2]), time.monotonic() - t


def case_rendezvous(args):
    # Nothing listens: refused, retried until the timeout.
    port = free_port()
    code, line, took = alone(args, 1, 2, port)
    print("unreachable chief: exit %d after %.1f s: %s" % (code, took, line))
    if code == 0 or ("cannot reach the chief at 127.0.0.1:%d within 2 s "
                     "(task worker:0): Connection refused" % port) not in line:
        fail("unreachable chief: wrong line")
    # A listener whose accept queue is full drops the SYNs: connect() would
    # wait about two minutes; the timeout bounds it.
    black = socket.socket()
    black.bind(("127.0.0.1", 0))
    black.listen(0)
    filler = socket.create_connection(black.getsockname())
    code, line, took = alone(args, 1, 2, black.getsockname()[1])
    print("dropped SYNs: exit %d after %.1f s: %s" % (code, took, line))
    if code == 0 or "within 2 s (task worker:0): no answer to the connection" \
            not in line or took > 5:
        fail("dropped SYNs: wrong line or too slow")
    filler.close()
    black.close()
    # A listener that never answers HELLO (not an estc chief, or frozen).
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)
    code, line, took = alone(args, 1, 2, mute.getsockname()[1])
    print("a mute chief: exit %d after %.1f s: %s" % (code, took, line))
    if code == 0 or "it accepted the connection but did not answer" \
            not in line or took > 6:
        fail("a mute chief: wrong line or too slow")
    mute.close()
    # Rank 2 (worker:1) never starts.
    results = finish(gloo_job(args, 3, ["--timeout_secs=2"], ranks=[0, 1]), 30)
    for code, o, e, took in results:
        line = one_line(e)
        print("missing replica: exit %d after %.1f s: %s" % (code, took, line))
        if code == 0 or "task worker:1 (localhost:" not in line or \
                "did not join within 2 s" not in line:
            fail("missing replica: wrong line")
    results = finish(gloo_job(args, 3, ["--timeout_secs=2"],
                              ranks=[0, 1, 1]), 30)
    lines = [one_line(e) for code, o, e, took in results]
    print("duplicate rank:\n  " + "\n  ".join(lines))
    if not any("refused task worker:0: rank 1 has joined already" in l
               for l in lines):
        fail("duplicate rank: no replica was refused")
    # Two chiefs: the second cannot serve the rendezvous.
    port = free_port()
    results = finish(gloo_job(args, 2, ["--timeout_secs=2"], ranks=[0, 0],
                              port=port), 30)
    lines = [one_line(e) for code, o, e, took in results]
    print("two chiefs:\n  " + "\n  ".join(lines))
    if not any(("cannot serve the rendezvous at 127.0.0.1:%d: Address "
                "already in use (chief:0; another process serves it: a "
                "second chief?)" % port) in l for l in lines):
        fail("two chiefs: no chief was refused")
    # A replica that says the job has another size; a rank out of range.
    port = free_port()
    chief = gloo_job(args, 2, ["--timeout_secs=3"], ranks=[0], port=port)
    code, line, took = alone(args, 1, 3, port)
    print("another size: exit %d after %.1f s: %s" % (code, took, line))
    if code == 0 or ("refused task worker:0: this job has 2 replicas, the "
                     "replica says 3") not in line:
        fail("another size: wrong line")
    finish(chief, 30)
    code, line, took = alone(args, 3, 3, free_port())
    print("rank out of range: exit %d: %s" % (code, line))
    if code == 0 or "gloo: rank 3 is not in [0, 3)" not in line:
        fail("rank out of range: wrong line")


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
    if r[0] == 0 or "signal 9" not in r[1] + r[2] or took > 30:
        fail("mpirun did not report the killed rank:\n%s" % (r[1] + r[2]))
    # A frozen rank: MPI has no timeout; the others' watchdogs end them
    # with one line after --timeout_secs, and mpirun ends the job.
    t = time.monotonic()
    r = finish([start(base + ["-np", str(args.size), args.worker,
                              "--engine=mpi", "--iterations=1000",
                              "--die_at=3", "--victim=1", "--freeze",
                              "--timeout_secs=3"])], 60)[0]
    took = time.monotonic() - t
    line = re.search(r"collective_worker: error: mpi: \w+ did not complete "
                     r"within 3 s on rank \d of %d[^\n]*" % args.size,
                     r[1] + r[2])
    print("a frozen rank: mpirun exited %d after %.1f s: %s" %
          (r[0], took, line.group(0) if line else None))
    if r[0] == 0 or not line or took > 15:
        fail("a frozen rank did not end the job in time:\n%s" %
             (r[1] + r[2]))


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
