"""What the drivers in which TF 2.15's Estimator and estc's take turns in
one model_dir share (tf_estimator_checkpoint_compat.py,
tf_partitioned_compat.py): the failures found, a checkpoint's variables,
their comparison with a reference's, and the model_dirs of the four runs.

    check = Checks()
    tf_train(..., d("tf_100"), ...)        # TF's first steps
    prepare_dirs(tf, d)                    # init, tf_200, tf_then_estc, ...
    compare(np, check, "label", variables(tf, d("tf_then_estc")),
            variables(tf, d("tf_200")), rtol, atol)
    return check.exit_status("OK: ...")
"""
import glob
import os
import shutil

# The one tensor estc adds to a checkpoint (the input pipeline's position),
# which TF's Saver ignores.
INPUT_STATE = "_estc_input_pipeline_state"


class Checks:
    """The failures found so far; check(cond, what) prints and keeps one."""

    def __init__(self):
        self.failures = []

    def __call__(self, cond, what):
        if not cond:
            self.failures.append(what)
            print(f"FAIL: {what}")

    def exit_status(self, ok_line):
        """1 after a count of the failures, else 0 after `ok_line`."""
        if self.failures:
            print(f"{len(self.failures)} failure(s)")
            return 1
        print(ok_line)
        return 0


def variables(tf, model_dir):
    """The latest checkpoint's tensors by name, estc's INPUT_STATE aside."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
            if n != INPUT_STATE}


def compare(np, check, label, got, want, rtol, atol):
    """The same names, dtypes and shapes as `want`, values within
    rtol/atol."""
    check(sorted(got) == sorted(want),
          f"{label}: variables {sorted(got)} != the reference's {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        g, w = got[name], want[name]
        if g.dtype != w.dtype or g.shape != w.shape:
            check(False, f"{label}: {name} is {g.dtype}{list(g.shape)}, the "
                         f"reference's {w.dtype}{list(w.shape)}")
        elif not np.allclose(g, w, rtol=rtol, atol=atol):
            worst = float(np.max(np.abs(g.astype(np.float64) - w)))
            check(False, f"{label}: {name} differs from the reference's by "
                         f"up to {worst:g}")


def prepare_dirs(tf, d):
    """From TF's first run in d("tf_100"): d("init") holds its step-0
    checkpoint alone (where estc starts), d("tf_200") and d("tf_then_estc")
    copies of tf_100, d("estc_then_tf") and d("estc_200") copies of init."""
    os.makedirs(d("init"))
    for f in glob.glob(os.path.join(d("tf_100"), "model.ckpt-0.*")):
        shutil.copy(f, d("init"))
    tf.compat.v1.train.update_checkpoint_state(d("init"), "model.ckpt-0")
    for name in ("tf_200", "tf_then_estc"):
        shutil.copytree(d("tf_100"), d(name))
    for name in ("estc_then_tf", "estc_200"):
        shutil.copytree(d("init"), d(name))
