#!/usr/bin/env python3
"""lib/Checkpoint's TF checkpoints (tensor bundles) against TensorFlow 2.15.

TF writes, estc reads (tf_bundle_tool dump, through load_checkpoint, every
tensor CRC-checked): a tf.compat.v1 Saver's checkpoint in graph mode with a
variable of every dtype estc has (float32, float64, int32, int64, bool,
float16, bfloat16, string; a scalar and a zero-size one) and a uint8 one
(no estc DType: left out of the listing), a partitioned variable
(tf.compat.v1.fixed_size_partitioner), global_step; a sharded save
(Saver(sharded=True), variables on two CPU devices: two data files); a
tf.train.Checkpoint (object-based keys, the object graph string). Every
tensor must equal what tf.train.load_checkpoint reads, byte for byte.

estc writes, TF reads (tf_bundle_tool write): every dtype, a partitioned
variable as slices, in one data file and in three; tf.train.load_checkpoint
and tf.train.list_variables must see the same names, shapes and values, and
a tf.compat.v1 Saver must restore them into graph variables (the
partitioned one into a fixed_size_partitioner variable) equal.

One model_dir, both ways: estc's Saver writes steps 100 and 200 in TF's
format (two data files); TF's latest_checkpoint and get_checkpoint_state
read its state file, a tf.compat.v1 Saver restores step 200 and saves 300;
estc reads that one from the model_dir and saves 400 (the Saver's Auto
format: TF's, the model_dir's), which TF finds and reads.

A TF 2.15 Estimator (custom model_fn, tf.compat.v1.layers.dense) continues
a model_dir estc's Saver wrote in TF's format: it reads the variables
(get_variable_value, predictions equal x @ kernel + bias), trains 5 steps
from global step 100, and estc reads its step-105 checkpoint back.

An object-based checkpoint (tf.train.Checkpoint of a Keras model, a
legacy Adam with its slots, and a second path to one layer): estc's
ObjectGraph resolves object paths and slots to keys holding the live
objects' values.

Warm start from a TF checkpoint (tf_bundle_tool warm_start, through
estimator::warm_start) equals tf.compat.v1.train.warm_start (what
tf.estimator.WarmStartSettings runs) on a tf.compat.v1 Saver's checkpoint:
vars_to_warm_start as a regex (a variable it leaves out keeps its
initializer in TF and is not returned by estc), var_name_to_prev_var_name
(a renamed bias), vars_to_warm_start as a list (TF then selects among all
variables, a non-trainable one included, and estc's Estimator passes them
all), var_name_to_vocab_info remapping an embedding's rows
(new entries and an OOV bucket: the backup initializer), a linear model's
rows with old_vocab_size cutting the old vocabulary, and an output layer's
columns (axis 1).

Both ways, an index of two table blocks (9000 tensors). The files estc
writes (every dtype; the 9000 tensors) equal byte for byte those TF's SaveV2
writes for the same tensors.

usage: tf_checkpoint_compat.py --tool=build/bin/tf_bundle_tool --work=DIR
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import base64
import glob
import json
import os
import shutil
import subprocess
import sys

from case_tool import import_tf

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def dump(tool, ckpt):
    r = subprocess.run([tool, "dump", ckpt], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} dump {ckpt}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def tensor_spec(np, value, dtype_name):
    """A tensor as tf_bundle_tool's JSON has it."""
    a = np.asarray(value)
    spec = {"dtype": dtype_name, "shape": list(a.shape)}
    if dtype_name == "string":
        spec["strings"] = [base64.b64encode(bytes(s)).decode() for s in a.reshape(-1)]
    else:
        spec["b64"] = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()
    return spec


def compare_with_tf(tf, np, tool, prefix, label, skipped=()):
    """Every tensor TF's reader has (but `skipped`) equals estc's dump."""
    got = dump(tool, prefix)
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    want_names = sorted(n for n in dtypes if n not in skipped)
    check(sorted(got["tensors"]) == want_names,
          f"{label}: names {sorted(got['tensors'])} != TF's {want_names}")
    check(got["format"] == "tensor-bundle-v2", f"{label}: format {got['format']}")
    for name in want_names:
        if name not in got["tensors"]:
            continue
        want = tensor_spec(np, reader.get_tensor(name), dtypes[name].name)
        g = got["tensors"][name]
        check(g == want, f"{label}: tensor {name}: estc read {str(g)[:200]} "
                         f"but TF has {str(want)[:200]}")
    for name in skipped:
        check(name in dtypes and name not in got["tensors"],
              f"{label}: {name} (a dtype estc has no DType for) should be "
              "in TF's listing and not in estc's")
    return got


def values(tf, np):
    rng = np.random.RandomState(7)
    return {
        "dense/kernel": (rng.randn(3, 4).astype(np.float32), "float32"),
        "scope/f64": (rng.randn(5), "float64"),
        "i32": (rng.randint(-1000, 1000, (2, 3)).astype(np.int32), "int32"),
        "i64": (np.array([1 << 40, -5, 7], np.int64), "int64"),
        "flag": (np.array([True, False, True, True]), "bool"),
        "f16": (rng.randn(2, 2).astype(np.float16), "float16"),
        "bf16": (tf.cast(rng.randn(6).astype(np.float32), tf.bfloat16).numpy(), "bfloat16"),
        "words": (np.array([[b"a", b""], [b"\x00\xffbytes", "\u00fcn\u00efcode".encode() * 50]],
                           dtype=object), "string"),
        "scalar": (np.float32(3.5), "float32"),
        "empty": (np.zeros((0, 3), np.float32), "float32"),
    }


def tf_writes(tf, np, tool, work):
    v1 = tf.compat.v1
    # 1. A Saver's checkpoint in graph mode: every dtype, a partitioned
    # variable, global_step, a uint8 variable.
    prefix = os.path.join(work, "tf_v1", "model.ckpt-200")
    os.makedirs(os.path.dirname(prefix))
    vals = values(tf, np)  # eagerly, outside the graph
    g = tf.Graph()
    with g.as_default():
        for name, (v, dt) in vals.items():
            v1.Variable(v, name=name, dtype=tf.as_dtype(dt))
        v1.Variable(np.arange(5, dtype=np.uint8), name="u8")
        v1.get_variable("part", shape=[10, 4],
                        partitioner=v1.fixed_size_partitioner(3),
                        initializer=v1.random_normal_initializer(seed=1))
        v1.get_variable("part_i64", shape=[7], dtype=tf.int64,
                        partitioner=v1.fixed_size_partitioner(2),
                        initializer=v1.constant_initializer(9))
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver()
        with v1.Session() as s:
            s.run(v1.global_variables_initializer())
            s.run(step.assign(200))
            saver.save(s, prefix)
    got = compare_with_tf(tf, np, tool, prefix, "tf.compat.v1 Saver", skipped=("u8",))
    check(got["global_step"] == 200, f"global_step {got['global_step']} != 200")
    check(got["tensors"].get("part", {}).get("shape") == [10, 4],
          "the partitioned variable was not assembled to [10, 4]")
    # Through a model_dir: the `checkpoint` state file names the bundle.
    got_dir = dump(tool, os.path.dirname(prefix))
    check(got_dir == got, "reading the model_dir differs from reading the prefix")

    # 2. A sharded save: variables on two CPU devices, two data files.
    prefix = os.path.join(work, "tf_sharded", "model.ckpt-1")
    os.makedirs(os.path.dirname(prefix))
    g = tf.Graph()
    with g.as_default():
        rng = np.random.RandomState(3)
        for i in range(4):
            with tf.device(f"/cpu:{i % 2}"):
                v1.Variable(rng.randn(8, 3).astype(np.float32), name=f"layer{i}/w")
        with tf.device("/cpu:1"):
            v1.Variable(np.array([b"x", b"yz"], dtype=object), name="vocab")
        saver = v1.train.Saver(sharded=True)
        with v1.Session(config=v1.ConfigProto(device_count={"CPU": 2})) as s:
            s.run(v1.global_variables_initializer())
            saver.save(s, prefix)
    shards = sorted(glob.glob(prefix + ".data-*"))
    check(len(shards) == 2, f"the sharded save wrote {shards}, expected 2 data files")
    compare_with_tf(tf, np, tool, prefix, "sharded Saver")

    # 3. tf.train.Checkpoint: object-based names and the object graph.
    class Net(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.random.RandomState(5).randn(4, 2).astype(np.float32))
            self.b = tf.Variable(np.zeros(2, np.float64))
            self.count = tf.Variable(3, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(net=Net(), step=tf.Variable(11, dtype=tf.int64))
    path = ckpt.save(os.path.join(work, "tf2", "ckpt"))
    got = compare_with_tf(tf, np, tool, path, "tf.train.Checkpoint")
    check("net/w/.ATTRIBUTES/VARIABLE_VALUE" in got["tensors"],
          "tf.train.Checkpoint: no net/w/.ATTRIBUTES/VARIABLE_VALUE")
    check("_CHECKPOINTABLE_OBJECT_GRAPH" in got["tensors"],
          "tf.train.Checkpoint: no _CHECKPOINTABLE_OBJECT_GRAPH string")


def estc_writes(tf, np, tool, work, num_shards):
    v1 = tf.compat.v1
    vals = values(tf, np)
    rng = np.random.RandomState(11)
    part = rng.randn(10, 4).astype(np.float32)
    spec = {"num_shards": num_shards,
            "tensors": {n: tensor_spec(np, v, dt) for n, (v, dt) in vals.items()},
            "slices": []}
    spec["tensors"]["global_step"] = tensor_spec(np, np.int64(300), "int64")
    # fixed_size_partitioner(3) of 10 rows: 4, 3, 3.
    for start, length in ((0, 4), (4, 3), (7, 3)):
        spec["slices"].append({
            "name": "part", "full_shape": [10, 4], "start": [start, 0],
            "length": [length, -1],
            "tensor": tensor_spec(np, part[start:start + length], "float32")})
    label = f"estc-written, {num_shards} data file(s)"
    prefix = os.path.join(work, f"estc_{num_shards}", "model.ckpt-300")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    spec_file = prefix + ".spec.json"
    with open(spec_file, "w") as f:
        json.dump(spec, f)
    r = subprocess.run([tool, "write", spec_file, prefix], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} write: {r.stderr.strip()}")
    check(len(glob.glob(prefix + ".data-*")) == num_shards,
          f"{label}: {glob.glob(prefix + '.data-*')}")

    # tf.train.load_checkpoint / list_variables.
    listed = dict(tf.train.list_variables(prefix))
    want = {n: list(np.shape(v)) for n, (v, _) in vals.items()}
    want["global_step"] = []
    want["part"] = [10, 4]
    check(listed == want, f"{label}: tf.train.list_variables {listed} != {want}")
    reader = tf.train.load_checkpoint(prefix)
    for n, (v, dt) in vals.items():
        check(tensor_spec(np, reader.get_tensor(n), dt) == tensor_spec(np, v, dt),
              f"{label}: TF read {n} differently")
    check(np.array_equal(reader.get_tensor("part"), part), f"{label}: TF read part differently")

    # A tf.compat.v1 Saver restores them into graph variables.
    g = tf.Graph()
    with g.as_default():
        variables = {}
        for n, (v, dt) in vals.items():
            zero = np.zeros(np.shape(v), dtype=object if dt == "string" else None)
            if dt == "string":
                zero[...] = b""
                variables[n] = v1.Variable(zero, name=n, dtype=tf.string)
            else:
                variables[n] = v1.Variable(tf.zeros(np.shape(v), dtype=tf.as_dtype(dt)), name=n)
        p = v1.get_variable("part", shape=[10, 4], partitioner=v1.fixed_size_partitioner(3),
                            initializer=v1.zeros_initializer())
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver()
        with v1.Session() as s:
            saver.restore(s, prefix)
            for n, (v, dt) in vals.items():
                check(tensor_spec(np, s.run(variables[n]), dt) == tensor_spec(np, v, dt),
                      f"{label}: Saver.restore gave {n} differently")
            check(np.array_equal(s.run(tf.convert_to_tensor(p)), part),
                  f"{label}: Saver.restore gave the partitioned variable differently")
            check(s.run(step) == 300, f"{label}: restored global_step")


def identical_files(tf, np, tool, work):
    """Every dtype: estc's files equal those TF's SaveV2 writes."""
    vals = values(tf, np)
    prefix = os.path.join(work, "estc_same", "model.ckpt-5")
    os.makedirs(os.path.dirname(prefix))
    with open(prefix + ".spec.json", "w") as f:
        # In name order, as SaveV2 adds them.
        json.dump({"tensors": {n: tensor_spec(np, v, dt) for n, (v, dt) in vals.items()}},
                  f, sort_keys=True)
    r = subprocess.run([tool, "write", prefix + ".spec.json", prefix],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} write: {r.stderr.strip()}")
    tf_prefix = os.path.join(work, "tf_same", "model.ckpt-5")
    names = sorted(vals)
    tf.raw_ops.SaveV2(prefix=tf_prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(vals[n][0], dtype=tf.as_dtype(vals[n][1]))
                               for n in names])
    for suffix in (".index", ".data-00000-of-00001"):
        with open(prefix + suffix, "rb") as a, open(tf_prefix + suffix, "rb") as b:
            check(a.read() == b.read(),
                  f"every dtype: estc's {suffix} differs from TF's SaveV2's")


def many_tensors(tf, np, tool, work):
    """An index of two 256 KiB blocks, both ways: 9000 small tensors."""
    n = 9000
    names = [f"block{i // 100}/layer{i:05d}/kernel" for i in range(n)]
    spec = {"tensors": {name: tensor_spec(np, np.full([2], i, np.int32), "int32")
                        for i, name in enumerate(names)}}
    prefix = os.path.join(work, "estc_many", "model.ckpt-1")
    os.makedirs(os.path.dirname(prefix))
    with open(prefix + ".spec.json", "w") as f:
        json.dump(spec, f)
    r = subprocess.run([tool, "write", prefix + ".spec.json", prefix],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} write: {r.stderr.strip()}")
    check(os.path.getsize(prefix + ".index") > 262144,
          "the big index should span two blocks or more")
    reader = tf.train.load_checkpoint(prefix)
    check(sorted(reader.get_variable_to_shape_map()) == sorted(names),
          "TF lists the 9000 tensors differently")
    for i in (0, 4321, n - 1):
        check(list(reader.get_tensor(names[i])) == [i, i],
              f"TF reads {names[i]} differently")
    # And TF's own big index (SaveV2, which adds the tensors in name order
    # as estc does), read by estc: TF's files must be estc's byte for byte.
    tf_prefix = os.path.join(work, "tf_many", "ckpt")
    os.makedirs(os.path.dirname(tf_prefix))
    tf.raw_ops.SaveV2(prefix=tf_prefix, tensor_names=names,
                      shape_and_slices=[""] * n,
                      tensors=[tf.constant(np.full([2], i, np.int32)) for i in range(n)])
    for suffix in (".index", ".data-00000-of-00001"):
        with open(prefix + suffix, "rb") as a, open(tf_prefix + suffix, "rb") as b:
            check(a.read() == b.read(), f"estc's {suffix} differs from TF's SaveV2's")
    got = dump(tool, tf_prefix)
    check(sorted(got["tensors"]) == sorted(names), "estc lists TF's 9000 tensors differently")
    for i in (0, 4321, n - 1):
        check(got["tensors"].get(names[i]) == spec["tensors"][names[i]],
              f"estc reads TF's {names[i]} differently")


def model_dir_both_ways(tf, np, tool, work):
    """estc's Saver and TF's take turns in one model_dir."""
    v1 = tf.compat.v1
    model_dir = os.path.join(work, "model_dir")
    rng = np.random.RandomState(21)
    kernel = rng.randn(4, 3).astype(np.float32)

    def estc_save(step, fmt, value):
        spec = {"format": fmt, "num_shards": 2, "tensors": {
            "dense/kernel": tensor_spec(np, value, "float32"),
            "global_step": tensor_spec(np, np.int64(step), "int64")}}
        spec_file = os.path.join(work, f"save_{step}.json")
        with open(spec_file, "w") as f:
            json.dump(spec, f)
        r = subprocess.run([tool, "save", spec_file, model_dir, str(step)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: {tool} save: {r.stderr.strip()}")

    estc_save(100, "tf", kernel)
    estc_save(200, "auto", kernel * 2)
    state = tf.train.get_checkpoint_state(model_dir)
    check(tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "model.ckpt-200"),
          f"TF's latest_checkpoint of estc's model_dir: {tf.train.latest_checkpoint(model_dir)}")
    check([os.path.basename(p) for p in state.all_model_checkpoint_paths] ==
          ["model.ckpt-100", "model.ckpt-200"],
          f"TF reads estc's state file as {state.all_model_checkpoint_paths}")
    # TF restores estc's newest, trains (a new value) and saves step 300.
    g = tf.Graph()
    with g.as_default():
        w = v1.get_variable("dense/kernel", shape=[4, 3], dtype=tf.float32)
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver()
        with v1.Session() as s:
            saver.restore(s, tf.train.latest_checkpoint(model_dir))
            check(np.array_equal(s.run(w), kernel * 2), "TF restored estc's kernel differently")
            check(s.run(step) == 200, "TF restored estc's global_step differently")
            s.run([w.assign(kernel * 3), step.assign(300)])
            saver.save(s, os.path.join(model_dir, "model.ckpt"), global_step=300)
    # estc reads TF's newest from the model_dir, then continues it (auto:
    # in TF's format), and TF finds that one.
    got = dump(tool, model_dir)
    check(got["global_step"] == 300, f"estc's latest in the model_dir: step {got['global_step']}")
    check(got["tensors"].get("dense/kernel") == tensor_spec(np, kernel * 3, "float32"),
          "estc read TF's step-300 kernel differently")
    estc_save(400, "auto", kernel * 4)
    check(tf.train.latest_checkpoint(model_dir) == os.path.join(model_dir, "model.ckpt-400"),
          "TF does not find estc's step-400 checkpoint")
    check(np.array_equal(tf.train.load_variable(model_dir, "dense/kernel"), kernel * 4),
          "TF reads estc's step-400 kernel differently")


def objects(tool, *args):
    r = subprocess.run([tool, "objects", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} objects {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def object_based(tf, np, tool, work):
    """tf.train.Checkpoint's objects found by object path, slots too."""
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,)),
                                 tf.keras.layers.Dense(2)])
    opt = tf.keras.optimizers.legacy.Adam(0.1)
    x = np.random.RandomState(0).randn(8, 4).astype(np.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    # `alias` reaches the second layer by a second path.
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, alias=model.layers[1])
    path = ckpt.save(os.path.join(work, "objects", "ckpt"))
    reader = tf.train.load_checkpoint(path)
    k0 = model.layers[0].kernel
    cases = [("model/layer_with_weights-0/kernel", k0),
             ("model/layer_with_weights-1/bias", model.layers[1].bias),
             ("alias/kernel", model.layers[1].kernel),
             ("optimizer/iter", opt.iterations)]
    for object_path, var in cases:
        key = objects(tool, path, object_path)
        check(key != "none" and np.array_equal(reader.get_tensor(key), var.numpy()),
              f"object path {object_path}: key {key} does not hold its value")
    for slot in ("m", "v"):
        key = objects(tool, path, "model/layer_with_weights-0/kernel", "optimizer", slot)
        check(key != "none" and
              np.array_equal(reader.get_tensor(key), opt.get_slot(k0, slot).numpy()),
              f"slot {slot} of the first kernel: key {key}")
    check(objects(tool, path, "model/nope") == "none", "an unknown object path resolved")
    # TF names each object's tensors by its first path, breadth first
    # (the root's children in name order: "alias" before "model"):
    # ObjectGraph::variables() finds the same paths, each object once.
    listed = json.loads(objects(tool, path))["variables"]
    keys = [k for k in reader.get_variable_to_shape_map()
            if k.endswith("/.ATTRIBUTES/VARIABLE_VALUE") and ".OPTIMIZER_SLOT" not in k]
    check(sorted(listed.values()) == sorted(keys),
          f"ObjectGraph::variables() {sorted(listed.values())} != TF's keys {sorted(keys)}")
    for object_path, key in listed.items():
        check(key == object_path + "/.ATTRIBUTES/VARIABLE_VALUE",
              f"ObjectGraph::variables() lists {object_path} as {key}")
    check("alias/kernel" in listed and "model/layer_with_weights-1/kernel" not in listed,
          "the shared layer should be listed once, under TF's path")


def tf_estimator_continues(tf, np, tool, work):
    """A TF 2.15 Estimator continues a model_dir estc's Saver wrote."""
    model_dir = os.path.join(work, "estimator_dir")
    rng = np.random.RandomState(31)
    kernel = rng.randn(3, 1).astype(np.float32)
    bias = np.array([0.5], np.float32)
    spec = {"format": "tf", "tensors": {
        "dense/kernel": tensor_spec(np, kernel, "float32"),
        "dense/bias": tensor_spec(np, bias, "float32"),
        "global_step": tensor_spec(np, np.int64(100), "int64")}}
    spec_file = os.path.join(work, "estimator_spec.json")
    with open(spec_file, "w") as f:
        json.dump(spec, f)
    r = subprocess.run([tool, "save", spec_file, model_dir, "100"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} save: {r.stderr.strip()}")

    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(features["x"], 1, name="dense")
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions=logits)
        loss = tf.reduce_mean(tf.square(logits - labels))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    est = tf.estimator.Estimator(model_fn, model_dir=model_dir)
    check(np.array_equal(est.get_variable_value("dense/kernel"), kernel),
          "the TF Estimator reads estc's kernel differently")
    x = rng.randn(4, 3).astype(np.float32)
    preds = np.stack(list(est.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(4))))
    check(np.allclose(preds, x @ kernel + bias, rtol=1e-6, atol=1e-6),
          "the TF Estimator's predictions from estc's checkpoint differ")
    est.train(lambda: tf.data.Dataset.from_tensors(({"x": x}, np.zeros((4, 1), np.float32))).repeat(),
              steps=5)
    check(est.get_variable_value("global_step") == 105,
          f"the TF Estimator went on to step {est.get_variable_value('global_step')}, not 105")
    # And estc reads where the TF Estimator left off.
    got = dump(tool, model_dir)
    check(got["global_step"] == 105, f"estc reads the TF Estimator's step {got['global_step']}")
    check(got["tensors"]["dense/kernel"] ==
          tensor_spec(np, est.get_variable_value("dense/kernel"), "float32"),
          "estc reads the TF Estimator's trained kernel differently")


def warm_start_like_tf(tf, np, tool, work):
    """estc's warm start from a TF checkpoint equals TF's."""
    v1 = tf.compat.v1
    d = os.path.join(work, "warm_start")
    os.makedirs(d)

    def vocab(name, words):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write("".join(w + "\n" for w in words))
        return path

    old_vocab = vocab("old_vocab.txt", ["a", "b", "c", "d", "e"])
    new_vocab = vocab("new_vocab.txt", ["d", "x", "b", "a", "e", "y"])
    rng = np.random.RandomState(11)
    old = {
        "dense/kernel": rng.randn(3, 2).astype(np.float32),
        "dense/bias": rng.randn(2).astype(np.float32),
        "emb/embedding_weights": rng.randn(5, 3).astype(np.float32),
        "linear/c/weights": rng.randn(5, 1).astype(np.float32),
        "out/kernel": rng.randn(2, 5).astype(np.float32),
        "skipped/w": rng.randn(2).astype(np.float32),
        "stats/mean": rng.randn(3).astype(np.float32),
    }
    prefix = os.path.join(d, "old", "model.ckpt-7")
    g = tf.Graph()
    with g.as_default():
        for name, value in old.items():
            v1.get_variable(name, initializer=value)
        saver = v1.train.Saver()
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, prefix)

    # The new model: shapes after the new vocabularies; every initializer 7.
    new_shapes = {
        "dense/kernel": [3, 2],
        "new/bias": [2],
        "emb/embedding_weights": [6 + 1, 3],  # 6 entries, 1 OOV bucket
        "linear/c/weights": [4, 1],           # the first 4 new entries
        "out/kernel": [2, 6],                 # columns: the new vocabulary
        "skipped/w": [2],
    }
    infos = {
        "emb/embedding_weights": dict(new_vocab=new_vocab, new_vocab_size=6,
                                      num_oov_buckets=1, old_vocab=old_vocab,
                                      old_vocab_size=-1,
                                      backup_initializer=0.5, axis=0),
        "linear/c/weights": dict(new_vocab=new_vocab, new_vocab_size=4,
                                 num_oov_buckets=0, old_vocab=old_vocab,
                                 old_vocab_size=3, backup_initializer=-0.25,
                                 axis=0),
        "out/kernel": dict(new_vocab=new_vocab, new_vocab_size=6,
                           num_oov_buckets=0, old_vocab=old_vocab,
                           old_vocab_size=-1, backup_initializer=0.0, axis=1),
    }
    def constant(value):
        # The number of missing rows is a tensor there: a fill, not the
        # constant_initializer (it needs a static shape).
        return lambda shape, dtype=tf.float32, partition_info=None: tf.fill(
            shape, tf.constant(value, dtype))

    regex = "^(?!skipped)"
    renames = {"new/bias": "dense/bias"}
    g = tf.Graph()
    with g.as_default():
        for name, shape in new_shapes.items():
            v1.get_variable(name, shape=shape,
                            initializer=v1.constant_initializer(7.0))
        v1.train.warm_start(
            prefix, vars_to_warm_start=regex,
            var_name_to_vocab_info={
                n: v1.train.VocabInfo(
                    new_vocab=i["new_vocab"],
                    new_vocab_size=i["new_vocab_size"],
                    num_oov_buckets=i["num_oov_buckets"],
                    old_vocab=i["old_vocab"],
                    old_vocab_size=i["old_vocab_size"],
                    backup_initializer=constant(i["backup_initializer"]),
                    axis=i["axis"])
                for n, i in infos.items()},
            var_name_to_prev_var_name=renames)
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            want = {v.op.name: sess.run(v) for v in v1.global_variables()}

    settings = {
        "ckpt_to_initialize_from": os.path.dirname(prefix),
        "vars_to_warm_start": regex,
        "var_name_to_prev_var_name": renames,
        "var_name_to_vocab_info": infos,
        "current": {n: {"dtype": "float32", "shape": s}
                    for n, s in new_shapes.items()},
    }
    path = os.path.join(d, "settings.json")
    with open(path, "w") as f:
        json.dump(settings, f)
    r = subprocess.run([tool, "warm_start", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        check(False, f"warm start: {tool} warm_start: {r.stderr.strip()}")
        return
    got = json.loads(r.stdout)["tensors"]
    for name in new_shapes:
        warmed = not np.all(want[name] == 7.0)
        check(warmed == (name != "skipped/w"),
              f"warm start: TF {'warm-started' if warmed else 'left'} {name}")
        if not warmed:
            check(name not in got, f"warm start: estc warm-started {name}, "
                                   "which TF's regex leaves out")
            continue
        if name not in got:
            check(False, f"warm start: estc did not warm-start {name}")
            continue
        check(got[name] == tensor_spec(np, want[name], "float32"),
              f"warm start: {name}: estc {got[name]} != TF's "
              f"{want[name].tolist()}")

    # vars_to_warm_start as a list: TF selects among all global variables,
    # a non-trainable one included (a regex string selects trainable ones
    # only: the Estimator passes estc's warm_start the trainable ones then,
    # every variable for a list).
    for form, selection in (("list", ["dense/", "stats"]), ("regex", "stats|dense/")):
        g = tf.Graph()
        with g.as_default():
            for name, shape in (("dense/kernel", [3, 2]), ("dense/bias", [2]),
                                ("skipped/w", [2])):
                v1.get_variable(name, shape=shape,
                                initializer=v1.constant_initializer(7.0))
            v1.get_variable("stats/mean", shape=[3], trainable=False,
                            initializer=v1.constant_initializer(7.0))
            v1.train.warm_start(prefix, vars_to_warm_start=selection)
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                want = {v.op.name: sess.run(v) for v in v1.global_variables()}
                trainable = {v.op.name for v in v1.trainable_variables()}
        current = {n: {"dtype": "float32", "shape": list(v.shape)}
                   for n, v in want.items()
                   if form == "list" or n in trainable}
        with open(path, "w") as f:
            json.dump({"ckpt_to_initialize_from": prefix,
                       "vars_to_warm_start": selection, "current": current},
                      f)
        r = subprocess.run([tool, "warm_start", path], capture_output=True,
                           text=True)
        if r.returncode != 0:
            check(False, f"warm start ({form}): {r.stderr.strip()}")
            continue
        got = json.loads(r.stdout)["tensors"]
        warmed = sorted(n for n, v in want.items() if not np.all(v == 7.0))
        check(sorted(got) == warmed,
              f"warm start ({form}): estc warm-starts {sorted(got)}, TF "
              f"{warmed}")
        check(("stats/mean" in warmed) == (form == "list"),
              f"warm start ({form}): TF's selection of the non-trainable "
              f"variable: {warmed}")
        for name in set(got) & set(warmed):
            check(got[name] == tensor_spec(np, want[name], "float32"),
                  f"warm start ({form}): {name} differs from TF's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.get_logger().setLevel("ERROR")  # the Estimator's deprecation warnings
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tf_writes(tf, np, args.tool, args.work)
    for shards in (1, 3):
        estc_writes(tf, np, args.tool, args.work, shards)
    identical_files(tf, np, args.tool, args.work)
    many_tensors(tf, np, args.tool, args.work)
    model_dir_both_ways(tf, np, args.tool, args.work)
    object_based(tf, np, args.tool, args.work)
    tf_estimator_continues(tf, np, args.tool, args.work)
    warm_start_like_tf(tf, np, args.tool, args.work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("OK: TF-written checkpoints read equal by estc, estc-written ones "
          "read and restored equal by TF")
    return 0


if __name__ == "__main__":
    sys.exit(main())
