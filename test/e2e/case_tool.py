"""What the TF drivers of test/data's case-file tools share.

tf_attention_compat.py, tf_rnn_compat.py, tf_optimizer_compat.py,
tf_model_parity.py, tf_metrics_compat.py and tf_ops_compat.py each compute
a case in TensorFlow 2.15, write it as `key values...` lines for their tool
(test/data/ToolSupport.h reads them), run the tool, read back the values it
prints and compare them with TF's:

    tf = import_tf()                  # None: print SKIP, exit 77
    run = run_case(args.tool, lines)  # CompletedProcess
    if failed_run(name, "rnn_tool", run): ...
    got = parse_values(run.stdout)    # "loss" -> [...], name -> array
    problems = [relative_problem("output", want, got.get("output", []),
                                 2e-5), ...]
    report(name, problems, "output, losses and weights match TF")

check_sgd_case() is all of that for the layers trained with SGD on
sum(output * c) (attention_tool, rnn_tool), summary() their last lines.
"""
import os
import subprocess
import tempfile


def import_tf():
    """TensorFlow (TF_CPP_MIN_LOG_LEVEL 3 unless set), or None after
    printing the SKIP line when it (or numpy) cannot be imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        # pylint: disable=import-outside-toplevel,unused-import
        import numpy  # noqa: F401
        import tensorflow as tf
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return None
    return tf


def words(a):
    """The values of `a`, flattened, as the words of a case line."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    return " ".join(repr(float(v)) for v in np.asarray(a).reshape(-1))


def run_case(tool, lines, timeout=None):
    """Runs `tool` on a case file of `lines`; the CompletedProcess (text
    stdout and stderr). `timeout` (seconds) as subprocess.run's."""
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "tool.case")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return subprocess.run([tool, path], capture_output=True, text=True,
                              check=False, timeout=timeout)


def failed_run(name, tool_name, run):
    """True, after a FAIL line naming the case, when the tool failed."""
    if run.returncode == 0:
        return False
    print(f"FAIL {name}: {tool_name} exited {run.returncode}: "
          f"{run.stderr.strip()}")
    return True


def parse_values(stdout):
    """The tool's lines as a dict: "loss" -> every `loss V` line's value,
    NAME -> the values of `var NAME V...`, HEAD -> those of any other
    `HEAD V...` line (arrays of float64)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    got = {"loss": []}
    for line in stdout.splitlines():
        head, *rest = line.split()
        if head == "var":
            got[rest[0]] = np.array(rest[1:], np.float64)
        elif head == "loss":
            got["loss"].append(float(rest[0]))
        else:
            got[head] = np.array(rest, np.float64)
    return got


def parse_ops_tool(np, text):
    """ops_tool's output as {case: {"out": {K: (dtype, array)}, "grad": {I:
    flat array}, "error": message or None}}."""
    results, current = {}, None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "case":
            current = results.setdefault(
                words[1], {"out": {}, "grad": {}, "error": None})
        elif words[0] == "error":
            current["error"] = line[len("error "):]
        elif words[0] == "out":
            k, dtype, rank = int(words[1]), words[2], int(words[3])
            shape = [int(d) for d in words[4:4 + rank]]
            vals = [float(v) for v in words[5 + rank:]]
            current["out"][k] = (dtype, np.array(vals).reshape(shape))
        elif words[0] == "grad":
            current["grad"][int(words[1])] = np.array(
                [float(v) for v in words[3:]])
    return results


def relative_problem(what, want, have, tol):
    """None when `have` matches TF's `want` to `tol` (|want - have| /
    max(1, |want|), elementwise), else the one line saying where not."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    want = np.asarray(want, np.float64).reshape(-1)
    have = np.asarray(have, np.float64).reshape(-1)
    if want.shape != have.shape:
        return f"{what}: {have.size} values, TF has {want.size}"
    err = np.abs(want - have) / np.maximum(1.0, np.abs(want))
    if err.max() > tol:
        i = int(err.argmax())
        return (f"{what}: element {i} is {have[i]!r}, TF "
                f"{want[i]!r} (relative error {err[i]:.2e})")
    return None


def report(name, problems, ok_text):
    """Prints the case's FAIL line (its problems that are not None) or its
    ok line; True when it failed."""
    problems = [p for p in problems if p]
    if problems:
        print(f"FAIL {name}: " + "; ".join(problems))
        return True
    print(f"ok   {name}: {ok_text}")
    return False


def check_sgd_case(tool, tool_name, name, lines, y0, losses, names, final):
    """Runs a layer case (the tool prints `output`, a `loss` per SGD step and
    `var NAME` per weight) and compares it with TF's first output `y0`, its
    `losses` and the `final` weights of `names`; True when it failed."""
    run = run_case(tool, lines)
    if failed_run(name, tool_name, run):
        return True
    got = parse_values(run.stdout)
    problems = [relative_problem("output", y0, got.get("output", []), 2e-5),
                relative_problem("losses", losses, got["loss"], 2e-4)]
    problems += [relative_problem(n, w, got.get(n, []), 2e-4)
                 for n, w in zip(names, final)]
    return report(name, problems,
                  f"output, {len(losses)} losses ({losses[0]:.4f} -> "
                  f"{losses[-1]:.4f}) and {len(names)} weights match TF")


def summary(failures, count):
    """The driver's last line and exit status."""
    if failures:
        print(f"{failures} of {count} cases differ from TF")
        return 1
    print(f"all {count} cases match TF 2.15")
    return 0
