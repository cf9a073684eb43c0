#!/usr/bin/env python3
"""In-graph summaries (lib/Graph/Summaries.h) read back by TensorBoard.

summaries_tool trains a small JIT Estimator whose model_fn defines a scalar,
a histogram, an image, a text, a scoped scalar, a family scalar and a
repeated name on the fed images x; this script reads its model_dir with
TensorBoard's own EventAccumulator and compares every summary with what
TensorFlow 2.15's tf.compat.v1.summary ops make of the same x in a graph
with the same names: the same tags, the scalars' values, the histograms'
min/max/num/sum/sum_squares and buckets, the images' size and decoded
pixels, the text. Every summary is written at the steps the loss is, and
the evaluation's directory holds none of them (TF's Estimator writes only
metrics there).

usage: tf_summaries_compat.py --tool=build/bin/summaries_tool --work=DIR
Exits 77 (ctest: skipped) when TensorFlow or TensorBoard is not installed.
"""
import argparse
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import numpy as np
        import tensorflow as tf
        from tensorboard.backend.event_processing import event_accumulator
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow or TensorBoard is not installed ({e})")
        return 77

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = np.random.default_rng(5)
    n, h, w, c = 4, 3, 5, 3
    x = rng.uniform(-1, 1, size=(n, h, w, c)).astype(np.float32)
    x[0] = np.abs(x[0])  # image 0: the all non-negative normalization
    data = os.path.join(args.work, "x.f32")
    x.tofile(data)
    model_dir = os.path.join(args.work, "model")
    steps, every = 5, 2
    run = subprocess.run([args.tool, model_dir, data, str(n), str(h), str(w),
                          str(c), str(steps), str(every)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print("summaries_tool failed:\n" + run.stdout + run.stderr)
        return 1

    # TensorFlow's summaries of the same x, with the same names.
    g = tf.Graph()
    with g.as_default():
        t = tf.constant(x)
        s = tf.compat.v1.summary
        s.scalar("x_mean", tf.reduce_mean(t))
        s.histogram("x_hist", t)
        s.image("x_img", t, max_outputs=2)
        s.text("notes", tf.constant("hello **estc**"))
        with tf.name_scope("extra"):
            s.scalar("x_max", tf.reduce_max(t))
        s.scalar("x_min", tf.reduce_min(t), family="fam")
        s.scalar("x_mean", tf.reduce_mean(t) * 2.0)
        merged = s.merge_all()
        with tf.compat.v1.Session() as sess:
            proto = tf.compat.v1.Summary.FromString(sess.run(merged))
    want = {v.tag: v for v in proto.value}

    acc = event_accumulator.EventAccumulator(
        model_dir, size_guidance={k: 0 for k in (
            event_accumulator.SCALARS, event_accumulator.HISTOGRAMS,
            event_accumulator.IMAGES, event_accumulator.TENSORS)})
    acc.Reload()
    tags = acc.Tags()
    got_tags = (set(tags["scalars"]) | set(tags["histograms"]) |
                set(tags["images"]) | set(tags["tensors"]))
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    check(got_tags - {"loss", "global_step/sec"} == set(want),
          f"tags: estc wrote {sorted(got_tags)}, TF makes {sorted(want)}")
    loss_steps = [e.step for e in acc.Scalars("loss")]
    check(len(loss_steps) >= 2, f"loss written at {loss_steps}")

    def steps_of(events):
        return [e.step for e in events]

    decode = lambda png: tf.io.decode_png(png).numpy()  # noqa: E731
    for tag, v in want.items():
        if tag not in got_tags:
            continue
        kind = v.WhichOneof("value")
        if kind == "simple_value":
            events = acc.Scalars(tag)
            for e in events:
                check(abs(e.value - v.simple_value) <=
                      1e-6 * max(1, abs(v.simple_value)),
                      f"{tag} at step {e.step}: {e.value} != "
                      f"{v.simple_value}")
        elif kind == "histo":
            events = acc.Histograms(tag)
            for e in events:
                got, ref = e.histogram_value, v.histo
                for f in ("min", "max", "num", "sum", "sum_squares"):
                    check(np.isclose(getattr(got, f), getattr(ref, f),
                                     rtol=1e-9),
                          f"{tag}.{f}: {getattr(got, f)} != "
                          f"{getattr(ref, f)}")
                check(list(got.bucket) == list(ref.bucket),
                      f"{tag} buckets: {list(got.bucket)} != "
                      f"{list(ref.bucket)}")
                check(np.allclose(got.bucket_limit, ref.bucket_limit,
                                  rtol=1e-12),
                      f"{tag} bucket limits differ")
        elif kind == "image":
            events = acc.Images(tag)
            for e in events:
                check((e.height, e.width) == (v.image.height, v.image.width),
                      f"{tag}: {e.height}x{e.width} != "
                      f"{v.image.height}x{v.image.width}")
                a = decode(e.encoded_image_string)
                b = decode(v.image.encoded_image_string)
                check(a.shape == b.shape and (a == b).all(),
                      f"{tag}: pixels differ from TF's ({a.shape} vs "
                      f"{b.shape})")
        elif kind == "tensor":
            events = acc.Tensors(tag)
            for e in events:
                check(list(e.tensor_proto.string_val) ==
                      list(v.tensor.string_val),
                      f"{tag}: {e.tensor_proto.string_val} != "
                      f"{v.tensor.string_val}")
            check(acc.SummaryMetadata(tag).plugin_data.plugin_name == "text",
                  f"{tag}: not a text plugin summary")
        else:
            failures.append(f"{tag}: unexpected kind {kind}")
            continue
        check(steps_of(events) == loss_steps,
              f"{tag} written at steps {steps_of(events)}, the loss at "
              f"{loss_steps}")

    eval_dir = os.path.join(model_dir, "eval")
    ev = event_accumulator.EventAccumulator(eval_dir)
    ev.Reload()
    eval_tags = set(ev.Tags()["scalars"]) | set(ev.Tags()["histograms"])
    check("loss" in eval_tags and not (eval_tags & set(want)),
          f"eval dir tags: {sorted(eval_tags)}")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"ok: {len(want)} summaries at steps {loss_steps}, as TF's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
