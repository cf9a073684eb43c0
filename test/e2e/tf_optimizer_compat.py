#!/usr/bin/env python3
"""estc's optimizers against TensorFlow 2.15's, on one small model.

The model (test/data/optimizer_tool.cpp's, written again here in
tf.compat.v1): word embeddings gathered by ids, a layer norm, the mean over
the sequence, a tanh dense layer and BERT's classifier, mean sparse softmax
cross entropy. Both sides start from the same weights, see the same batches
and train the same number of steps with:

  bert      google-research/bert's optimization.py: AdamWeightDecayOptimizer
            (Adam without bias correction, decoupled weight decay except for
            LayerNorm / layer_norm / bias variables) over tf.gradients,
            clip_by_global_norm(1.0), polynomial decay with a linear warmup,
            global_step incremented by the train_op; estc's is
            examples/sst2/AdamWeightDecay.h (gradients(), clip_by_global_norm,
            variables and assignments).
  <kind>    a tf.compat.v1.train optimizer through minimize (the embedding's
            gradient sparse on both sides) or compute_gradients +
            apply_gradients (estc densifies the embedding's gradient: the
            cases use optimizers for which zero rows do not move); one with
            an ExponentialMovingAverage(0.99, num_updates=global_step)
            applied after the update (the shadows compared too); Keras 2.15's
            AdamW, Adamax, Nadam (eager); tfa's LazyAdam (its rule in TF
            ops: tensorflow_addons is not installed).

Checked: every step's loss and the final value of every variable, slots
included, by name, to float32 noise.

usage: tf_optimizer_compat.py --tool=build/bin/optimizer_tool [--only RE]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import re
import sys

from case_tool import failed_run, import_tf, parse_values, run_case, words

V, S, E, H, C, B = 40, 4, 8, 6, 3, 5
BATCHES = 4


def bert_optimizer(tf):
    """BERT's AdamWeightDecayOptimizer and create_optimizer (optimization.py,
    tf.compat.v1 spellings), with the global_step increment ordered after
    the update (BERT's group leaves the order to the runtime)."""
    v1 = tf.compat.v1

    class AdamWeightDecayOptimizer(v1.train.Optimizer):
        """A basic Adam optimizer that includes "correct" L2 weight decay."""

        def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9,
                     beta_2=0.999, epsilon=1e-6,
                     exclude_from_weight_decay=None,
                     name="AdamWeightDecayOptimizer"):
            super().__init__(False, name)
            self.learning_rate = learning_rate
            self.weight_decay_rate = weight_decay_rate
            self.beta_1 = beta_1
            self.beta_2 = beta_2
            self.epsilon = epsilon
            self.exclude_from_weight_decay = exclude_from_weight_decay

        def apply_gradients(self, grads_and_vars, global_step=None,
                            name=None):
            assignments = []
            for (grad, param) in grads_and_vars:
                if grad is None or param is None:
                    continue
                param_name = self._get_variable_name(param.name)
                m = v1.get_variable(
                    name=param_name + "/adam_m",
                    shape=param.shape.as_list(), dtype=tf.float32,
                    trainable=False, initializer=v1.zeros_initializer())
                v = v1.get_variable(
                    name=param_name + "/adam_v",
                    shape=param.shape.as_list(), dtype=tf.float32,
                    trainable=False, initializer=v1.zeros_initializer())
                next_m = (tf.multiply(self.beta_1, m) +
                          tf.multiply(1.0 - self.beta_1, grad))
                next_v = (tf.multiply(self.beta_2, v) +
                          tf.multiply(1.0 - self.beta_2, tf.square(grad)))
                update = next_m / (tf.sqrt(next_v) + self.epsilon)
                if self._do_use_weight_decay(param_name):
                    update += self.weight_decay_rate * param
                update_with_lr = self.learning_rate * update
                next_param = param - update_with_lr
                assignments.extend([param.assign(next_param),
                                    m.assign(next_m), v.assign(next_v)])
            return tf.group(*assignments, name=name)

        def _do_use_weight_decay(self, param_name):
            if not self.weight_decay_rate:
                return False
            if self.exclude_from_weight_decay:
                for r in self.exclude_from_weight_decay:
                    if re.search(r, param_name) is not None:
                        return False
            return True

        def _get_variable_name(self, param_name):
            m = re.match("^(.*):\\d+$", param_name)
            if m is not None:
                param_name = m.group(1)
            return param_name

    def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps):
        global_step = v1.train.get_or_create_global_step()
        learning_rate = tf.constant(value=init_lr, shape=[], dtype=tf.float32)
        learning_rate = v1.train.polynomial_decay(
            learning_rate, global_step, num_train_steps,
            end_learning_rate=0.0, power=1.0, cycle=False)
        if num_warmup_steps:
            global_steps_int = tf.cast(global_step, tf.int32)
            warmup_steps_int = tf.constant(num_warmup_steps, dtype=tf.int32)
            global_steps_float = tf.cast(global_steps_int, tf.float32)
            warmup_steps_float = tf.cast(warmup_steps_int, tf.float32)
            warmup_percent_done = global_steps_float / warmup_steps_float
            warmup_learning_rate = init_lr * warmup_percent_done
            is_warmup = tf.cast(global_steps_int < warmup_steps_int,
                                tf.float32)
            learning_rate = ((1.0 - is_warmup) * learning_rate +
                             is_warmup * warmup_learning_rate)
        optimizer = AdamWeightDecayOptimizer(
            learning_rate=learning_rate, weight_decay_rate=0.01,
            beta_1=0.9, beta_2=0.999, epsilon=1e-6,
            exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
        tvars = v1.trainable_variables()
        grads = tf.gradients(loss, tvars)
        (grads, _) = tf.clip_by_global_norm(grads, clip_norm=1.0)
        train_op = optimizer.apply_gradients(zip(grads, tvars),
                                             global_step=global_step)
        with tf.control_dependencies([train_op]):
            new_global_step = global_step + 1
            train_op = tf.group(train_op,
                                [global_step.assign(new_global_step)])
        return train_op

    return create_optimizer


# (name, optimizer, path, learning rate, hyperparameters, TF constructor)
def builtin_cases(tf):
    t = tf.compat.v1.train
    return [
        ("sgd_apply", "sgd", "apply", 0.5, {},
         lambda lr: t.GradientDescentOptimizer(lr)),
        ("adagrad_apply", "adagrad", "apply", 0.3,
         {"initial_accumulator_value": 0.1},
         lambda lr: t.AdagradOptimizer(lr, initial_accumulator_value=0.1)),
        ("adam_apply", "adam", "apply", 0.01,
         {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
         lambda lr: t.AdamOptimizer(lr, 0.9, 0.999, 1e-8)),
        ("adam_minimize", "adam", "minimize", 0.01,
         {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-7},
         lambda lr: t.AdamOptimizer(lr, 0.8, 0.99, 1e-7)),
        ("momentum_minimize", "momentum", "minimize", 0.1,
         {"momentum": 0.9},
         lambda lr: t.MomentumOptimizer(lr, 0.9)),
        ("adadelta_minimize", "adadelta", "minimize", 1.0,
         {"rho": 0.9, "epsilon": 1e-6},
         lambda lr: t.AdadeltaOptimizer(lr, rho=0.9, epsilon=1e-6)),
        ("proximal_sgd_minimize", "proximal_gradient_descent", "minimize",
         0.3, {"l1_regularization_strength": 0.001,
               "l2_regularization_strength": 0.01},
         lambda lr: t.ProximalGradientDescentOptimizer(
             lr, l1_regularization_strength=0.001,
             l2_regularization_strength=0.01)),
        ("proximal_adagrad_minimize", "proximal_adagrad", "minimize", 0.3,
         {"initial_accumulator_value": 0.1,
          "l1_regularization_strength": 0.001,
          "l2_regularization_strength": 0.01},
         lambda lr: t.ProximalAdagradOptimizer(
             lr, initial_accumulator_value=0.1,
             l1_regularization_strength=0.001,
             l2_regularization_strength=0.01)),
        ("adagrad_da_minimize", "adagrad_da", "minimize", 0.5,
         {"initial_gradient_squared_accumulator_value": 0.1,
          "l1_regularization_strength": 0.001,
          "l2_regularization_strength": 0.01},
         lambda lr: t.AdagradDAOptimizer(
             lr, v1_global_step(),
             initial_gradient_squared_accumulator_value=0.1,
             l1_regularization_strength=0.001,
             l2_regularization_strength=0.01)),
        ("ftrl_shrinkage_beta_minimize", "ftrl", "minimize", 0.3,
         {"learning_rate_power": -0.5, "initial_accumulator_value": 0.1,
          "l1_regularization_strength": 0.001,
          "l2_regularization_strength": 0.01,
          "l2_shrinkage_regularization_strength": 0.02, "beta": 0.1},
         lambda lr: t.FtrlOptimizer(
             lr, initial_accumulator_value=0.1,
             l1_regularization_strength=0.001,
             l2_regularization_strength=0.01,
             l2_shrinkage_regularization_strength=0.02, beta=0.1)),
        ("momentum_ema", "momentum", "minimize_ema", 0.1,
         {"momentum": 0.9},
         lambda lr: t.MomentumOptimizer(lr, 0.9)),
        ("lazy_adam_minimize", "lazy_adam", "minimize", 0.01,
         {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
         lambda lr: lazy_adam(tf, lr)),
        # Keras 2.15's optimizers (eager: they do not build v1 graphs); the
        # model's weights and the losses are compared (Keras names its
        # slots by object).
        ("keras_adamw", "adamw", "keras", 0.01,
         {"weight_decay": 0.05, "beta_1": 0.9, "beta_2": 0.999,
          "epsilon": 1e-7},
         lambda lr: tf.keras.optimizers.AdamW(lr, weight_decay=0.05)),
        ("keras_adamax", "adamax", "keras", 0.01,
         {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
         lambda lr: tf.keras.optimizers.Adamax(lr)),
        ("keras_nadam", "nadam", "keras", 0.01,
         {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
         lambda lr: tf.keras.optimizers.Nadam(lr)),
    ]


def lazy_adam(tf, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """tfa.optimizers.LazyAdam (tensorflow_addons is not installed with TF
    2.15): its _resource_apply_sparse in TF ops, Adam's kernel on dense
    gradients, as a tf.compat.v1 optimizer (duplicate ids summed by
    _resource_apply_sparse_duplicate_indices, as tfa's OptimizerV2 does)."""
    v1 = tf.compat.v1

    class LazyAdam(v1.train.Optimizer):
        def __init__(self):
            super().__init__(False, "LazyAdam")

        def _create_slots(self, var_list):
            for v in var_list:
                self._zeros_slot(v, "m", self._name)
                self._zeros_slot(v, "v", self._name)

        def _coefficients(self):
            t = tf.cast(v1.train.get_global_step() + 1, tf.float32)
            b1 = tf.constant(beta_1, tf.float32)
            b2 = tf.constant(beta_2, tf.float32)
            return t, b1, b2

        def _resource_apply_dense(self, grad, var):
            t, b1, b2 = self._coefficients()
            return tf.raw_ops.ResourceApplyAdam(
                var=var.handle, m=self.get_slot(var, "m").handle,
                v=self.get_slot(var, "v").handle,
                beta1_power=tf.pow(b1, t), beta2_power=tf.pow(b2, t),
                lr=tf.constant(lr, tf.float32), beta1=b1, beta2=b2,
                epsilon=tf.constant(epsilon, tf.float32), grad=grad)

        def _resource_apply_sparse(self, grad, var, indices):
            local_step, beta_1_t, beta_2_t = self._coefficients()
            beta_1_power = tf.math.pow(beta_1_t, local_step)
            beta_2_power = tf.math.pow(beta_2_t, local_step)
            epsilon_t = tf.convert_to_tensor(epsilon, tf.float32)
            lr_t = (tf.constant(lr, tf.float32) *
                    tf.math.sqrt(1 - beta_2_power) / (1 - beta_1_power))
            m = self.get_slot(var, "m")
            m_t_slice = (beta_1_t * tf.gather(m, indices) +
                         (1 - beta_1_t) * grad)
            m_update = m.scatter_update(tf.IndexedSlices(m_t_slice, indices))
            v = self.get_slot(var, "v")
            v_t_slice = (beta_2_t * tf.gather(v, indices) +
                         (1 - beta_2_t) * tf.math.square(grad))
            v_update = v.scatter_update(tf.IndexedSlices(v_t_slice, indices))
            var_slice = lr_t * m_t_slice / (tf.math.sqrt(v_t_slice) +
                                            epsilon_t)
            var_update = var.scatter_sub(tf.IndexedSlices(var_slice, indices))
            return tf.group(*[var_update, m_update, v_update])

    return LazyAdam()


def v1_global_step():
    import tensorflow as tf
    return tf.compat.v1.train.get_or_create_global_step()


def build_model(tf, ids, labels):
    v1 = tf.compat.v1
    word_embeddings = v1.get_variable("bert/embeddings/word_embeddings",
                                      [V, E])
    gamma = v1.get_variable("bert/embeddings/LayerNorm/gamma", [E])
    beta = v1.get_variable("bert/embeddings/LayerNorm/beta", [E])
    kernel = v1.get_variable("dense/kernel", [E, H])
    bias = v1.get_variable("dense/bias", [H])
    output_weights = v1.get_variable("output_weights", [C, H])
    output_bias = v1.get_variable("output_bias", [C])
    emb = tf.gather(word_embeddings, ids)
    mean = tf.reduce_mean(emb, -1, keepdims=True)
    variance = tf.reduce_mean(tf.square(emb - mean), -1, keepdims=True)
    inv = tf.math.rsqrt(variance + 1e-6) * gamma
    normed = emb * inv + (beta - mean * inv)
    pooled = tf.reduce_mean(normed, 1)
    h = tf.tanh(tf.matmul(pooled, kernel) + bias)
    logits = tf.matmul(h, output_weights, transpose_b=True) + output_bias
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))


def run_keras(tf, case, weights, batches, steps):
    """Trains eagerly with a Keras optimizer; returns (losses, {var:
    value}) of the model's variables and global_step."""
    name, kind, path, lr, _, make = case
    variables = {n: tf.Variable(w, name=n) for n, w in weights.items()}

    class Scope:
        """tf.compat.v1.get_variable returning the eager variables."""

        def __init__(self):
            self.get = tf.compat.v1.get_variable

        def __enter__(self):
            tf.compat.v1.get_variable = lambda n, shape: variables[n]

        def __exit__(self, *args):
            tf.compat.v1.get_variable = self.get

    opt = make(lr)
    order = list(variables.values())
    losses = []
    for step in range(steps):
        b_ids, b_labels = batches[step % len(batches)]
        with tf.GradientTape() as tape, Scope():
            loss = build_model(tf, tf.constant(b_ids), tf.constant(b_labels))
        grads = tape.gradient(loss, order)
        losses.append(float(loss))
        opt.apply_gradients(zip(grads, order))
    final = {n: v.numpy() for n, v in variables.items()}
    final["global_step"] = steps
    return losses, final


def run_tf(tf, np, case, weights, batches, steps):
    """Trains in a tf.compat.v1 graph; returns (losses, {var: value})."""
    if case[2] == "keras":
        return run_keras(tf, case, weights, batches, steps)
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        ids = v1.placeholder(tf.int32, [B, S])
        labels = v1.placeholder(tf.int32, [B])
        loss = build_model(tf, ids, labels)
        name, kind, path, lr, _, make = case
        if kind == "bert":
            train_op = bert_optimizer(tf)(loss, init_lr=lr,
                                          num_train_steps=30,
                                          num_warmup_steps=5)
        else:
            gs = v1.train.get_or_create_global_step()
            opt = make(lr)
            if path == "apply":
                train_op = opt.apply_gradients(opt.compute_gradients(loss),
                                               global_step=gs)
            elif path == "minimize_ema":
                opt_op = opt.minimize(loss, global_step=gs)
                ema = v1.train.ExponentialMovingAverage(0.99, num_updates=gs)
                with tf.control_dependencies([opt_op]):
                    train_op = ema.apply(v1.trainable_variables())
            else:
                train_op = opt.minimize(loss, global_step=gs)
        variables = {v.name.split(":")[0]: v for v in v1.global_variables()}
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for n, w in weights.items():
                variables[n].load(w, sess)
            losses = []
            for step in range(steps):
                b_ids, b_labels = batches[step % len(batches)]
                _, l = sess.run([train_op, loss],
                                {ids: b_ids, labels: b_labels})
                losses.append(float(l))
            final = {n: sess.run(v) for n, v in variables.items()}
    return losses, final


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(args.seed)
    shapes = {"bert/embeddings/word_embeddings": [V, E],
              "bert/embeddings/LayerNorm/gamma": [E],
              "bert/embeddings/LayerNorm/beta": [E],
              "dense/kernel": [E, H], "dense/bias": [H],
              "output_weights": [C, H], "output_bias": [C]}
    weights = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
               for n, s in shapes.items()}
    weights["bert/embeddings/LayerNorm/gamma"] += np.float32(1.0)
    # Ids 0..V-4 only: the last rows are never gathered (their gradient is
    # zero, or absent when sparse). No id twice in a batch: TF's global norm
    # of an IndexedSlices gradient counts a repeated id's rows one by one,
    # estc's dense gradient (gradients()) sums them first
    # (lib/Graph/Gradients.h).
    unique = [(rng.permutation(V - 3)[:B * S].reshape(B, S).astype(np.int32),
               rng.integers(0, C, (B,)).astype(np.int32))
              for _ in range(BATCHES)]
    # minimize's sparse gradients: ids repeat (duplicates summed, as TF's
    # _deduplicate_indexed_slices), from a smaller range.
    repeated = [(rng.integers(0, 12, (B, S)).astype(np.int32),
                 rng.integers(0, C, (B,)).astype(np.int32))
                for _ in range(BATCHES)]

    cases = [("bert", "bert", "apply", 0.05, {}, None)] + builtin_cases(tf)
    failures = 0
    for case in cases:
        name, kind, path, lr, hp, _ = case
        if args.only and not re.search(args.only, name):
            continue
        batches = repeated if path.startswith("minimize") else unique
        losses, final = run_tf(tf, np, case, weights, batches, args.steps)

        lines = [f"optimizer {kind}",
                 f"path {'minimize' if path == 'keras' else path}",
                 f"steps {args.steps}",
                 f"dims {V} {S} {E} {H} {C} {B}"]
        if kind == "bert":
            lines += [f"init_lr {lr}", "train_steps 30", "warmup 5"]
        else:
            lines.append(f"lr {lr}")
            lines += [f"hp {k} {v!r}" for k, v in hp.items()]
        for b_ids, b_labels in batches:
            lines += [f"ids {words(b_ids)}", f"labels {words(b_labels)}"]
        lines += [f"var {n} {words(w)}" for n, w in weights.items()]
        run = run_case(args.tool, lines)
        if failed_run(name, "optimizer_tool", run):
            failures += 1
            continue
        got = parse_values(run.stdout)  # variables and global_step
        got_losses = got.pop("loss")

        problems = []

        def close(what, want, have, rtol, atol):
            want = np.asarray(want, np.float64).reshape(-1)
            have = np.asarray(have, np.float64).reshape(-1)
            if want.shape != have.shape:
                problems.append(f"{what}: {have.size} values, TF "
                                f"{want.size}")
                return
            err = np.abs(want - have) - rtol * np.abs(want)
            if np.any(err > atol):
                i = int(np.argmax(err))
                problems.append(f"{what}[{i}]: {have[i]!r}, TF {want[i]!r}")

        close("loss", losses, got_losses, 1e-5, 1e-6)
        # Every variable, TF 1.x Adam's beta1_power / beta2_power included
        # (estc keeps them as TF does, docs/autodiff.md).
        names = set(final)
        if path == "keras":
            got = {n: v for n, v in got.items() if n in names}
        if set(got) != names:
            problems.append(f"variables: estc {sorted(set(got) - names)} "
                            f"not in TF, TF {sorted(names - set(got))} not "
                            f"in estc")
        for n in sorted(names & set(got)):
            close(n, final[n], got[n], 1e-4, 2e-6)
        if problems:
            failures += 1
            print(f"FAIL {name}: " + "; ".join(problems[:6]))
        else:
            print(f"ok   {name}: {args.steps} steps, loss "
                  f"{losses[0]:.6f} -> {losses[-1]:.6f}, {len(names)} "
                  f"variables")
    if failures:
        print(f"{failures} case(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
