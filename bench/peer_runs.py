"""What the benchmarks' Python shares: the TF peers (bench/tf_rnn_peer.py,
bench/tf_toolbox_peer.py) run each thread count of --threads in a process
of its own (the script again, with --one N), whose last stdout line is its
JSON result; the tables of bench/rnn.sh, toolbox.sh and keras.sh take the
median of their rounds (median, cell)."""

import json
import subprocess
import sys


def run_thread_counts(program, script, threads, child_args, json_path):
    """Runs `script --one N *child_args` for each N of the comma-separated
    `threads`, prints each JSON line, writes them all to `json_path` (when
    given). Returns the exit status: 2 for a bad --threads, 0 with a SKIP
    line when tensorflow cannot be imported, 1 when a run failed."""
    try:
        thread_counts = [int(t) for t in threads.split(",") if t]
    except ValueError:
        thread_counts = None
    if not thread_counts or min(thread_counts) < 1:
        print(f"{program}: error: --threads={threads}: not a list of "
              "positive integers", file=sys.stderr)
        return 2
    try:
        import tensorflow  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP tensorflow cannot be imported: {e}")
        return 0
    results = []
    for n in thread_counts:
        out = subprocess.run(
            [sys.executable, script, "--one", str(n), *child_args],
            capture_output=True, text=True, check=False)
        if out.returncode != 0:
            tail = (out.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{program}: threads {n}: failed: {tail}", file=sys.stderr)
            continue
        line = out.stdout.strip().splitlines()[-1]
        results.append(json.loads(line))
        print(line, flush=True)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0 if len(results) == len(thread_counts) else 1


def median(values):
    """The median of a list of numbers (the mean of the middle two for an
    even count); None for an empty list."""
    v = sorted(values)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2 if v else None


def cell(runs, key, digits=2):
    """A table cell of the rounds' `key` (those rounds that have it): its
    median and the text "median (min-max)" with `digits` decimals (the
    range only for several rounds); (None, "-") when no round has it."""
    v = [r[key] for r in runs if key in r]
    if not v:
        return None, "-"
    m = median(v)
    f = "%%.%df" % digits
    text = f % m
    if len(v) > 1:
        text += " (" + f % min(v) + "-" + f % max(v) + ")"
    return m, text
