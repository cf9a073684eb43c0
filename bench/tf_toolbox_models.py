"""issue 28's models in TF 2.15 (tf.compat.v1 graph mode), written as estc's
examples write them, layer for layer (so the default variable names match
estc's): the TF side of test/e2e/tf_model_parity.py and of
bench/tf_toolbox_peer.py.
"""


# examples/fashion_mnist/ResNetModel.h's ResNetOptions defaults.
RESNET_DEFAULTS = {"width": 16, "blocks_per_stage": 2, "weight_decay": 5e-4,
                   "momentum": 0.9, "batch_norm_momentum": 0.99}
RESNET_SCHEDULE = ([3752, 5628], [0.1, 0.01, 0.001])


def resnet_tf(tf, x, labels, opts, boundaries, values, training=True):
    """The model of examples/fashion_mnist/ResNetModel.cpp in TF: the
    layers in the same order (so the same default names). Returns the
    loss and the train_op (momentum on the piecewise schedule, after the
    batch norm updates)."""
    L = tf.compat.v1.layers
    init = tf.compat.v1.variance_scaling_initializer(2.0, "fan_out")

    def conv(h, filters, kernel, stride):
        return L.conv2d(h, filters, kernel, stride, padding="same",
                        use_bias=False, kernel_initializer=init)

    def bn(h):
        return L.batch_normalization(h, axis=-1,
                                     momentum=opts["batch_norm_momentum"],
                                     epsilon=1e-5, training=training)

    def block(h, filters, stride):
        shortcut = h
        if stride != 1 or h.shape[-1] != filters:
            shortcut = bn(conv(h, filters, 1, stride))
        y = tf.nn.relu(bn(conv(h, filters, 3, stride)))
        y = bn(conv(y, filters, 3, 1))
        return tf.nn.relu(y + shortcut)

    width, blocks = int(opts["width"]), int(opts["blocks_per_stage"])
    net = tf.nn.relu(bn(conv(x, width, 3, 1)))
    for stage in range(3):
        for b in range(blocks):
            net = block(net, width << stage, 2 if stage > 0 and b == 0 else 1)
    net = tf.reduce_mean(net, axis=[1, 2])
    logits = L.dense(net, 10)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    decay = [tf.nn.l2_loss(v) for v in tf.compat.v1.trainable_variables()
             if "kernel" in v.name]
    loss = loss + tf.add_n(decay) * opts["weight_decay"]
    step = tf.compat.v1.train.get_or_create_global_step()
    lr = tf.compat.v1.train.piecewise_constant(step, boundaries, values)
    opt = tf.compat.v1.train.MomentumOptimizer(lr, opts["momentum"])
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(updates):
        train_op = opt.minimize(loss, global_step=step)
    return loss, train_op


# examples/sst2/Bert.h's BertOptions defaults (BERT-mini), vocab_size set by
# the caller.
BERT_DEFAULTS = {"hidden_size": 256, "num_layers": 4, "num_heads": 4,
                 "intermediate_size": 1024, "max_position_embeddings": 128,
                 "type_vocab_size": 2, "seq_length": 64,
                 "hidden_dropout": 0.1, "attention_dropout": 0.1,
                 "initializer_range": 0.02, "num_classes": 2,
                 "learning_rate": 1e-4, "num_train_steps": 1000,
                 "num_warmup_steps": 100}


def bert_tf(tf, input_ids, lengths, labels, o, training=True):
    """google-research/bert's modeling.py + run_classifier.py's classifier
    and optimization.py's create_optimizer, in tf.compat.v1 (tf.contrib's
    layer_norm written out: the same variables and epsilon), layer for layer
    examples/sst2/Bert.cpp. Returns (loss, train_op, logits)."""
    v1 = tf.compat.v1
    init = v1.truncated_normal_initializer(stddev=o["initializer_range"])
    hidden, heads, seq = o["hidden_size"], o["num_heads"], o["seq_length"]
    head = hidden // heads

    def layer_norm(x):
        with v1.variable_scope("LayerNorm"):
            gamma = v1.get_variable("gamma", [hidden],
                                    initializer=v1.ones_initializer())
            beta = v1.get_variable("beta", [hidden],
                                   initializer=v1.zeros_initializer())
            mean, variance = tf.nn.moments(x, [-1], keepdims=True)
            return (x - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta

    def gelu(x):
        return 0.5 * x * (1.0 + tf.tanh(
            (0.7978845608028654 * (x + 0.044715 * tf.pow(x, 3)))))

    def dropout(x, rate):
        return tf.nn.dropout(x, rate=rate) if training and rate > 0 else x

    def dense(x, units, name, activation=None):
        return v1.layers.dense(x, units, activation=activation, name=name,
                               kernel_initializer=init)

    def split(x):
        return tf.transpose(tf.reshape(x, [-1, seq, heads, head]),
                            [0, 2, 1, 3])

    with v1.variable_scope("bert"):
        with v1.variable_scope("embeddings"):
            words = v1.get_variable("word_embeddings",
                                    [o["vocab_size"], hidden],
                                    initializer=init)
            types = v1.get_variable("token_type_embeddings",
                                    [o["type_vocab_size"], hidden],
                                    initializer=init)
            positions = v1.get_variable(
                "position_embeddings", [o["max_position_embeddings"], hidden],
                initializer=init)
            x = tf.gather(words, input_ids) + types[0:1]
            x = x + positions[:seq]
            x = dropout(layer_norm(x), o["hidden_dropout"])
        mask = tf.cast(tf.sequence_mask(lengths, seq), tf.float32)
        bias = tf.reshape((1.0 - mask) * -10000.0, [-1, 1, 1, seq])
        with v1.variable_scope("encoder"):
            for i in range(o["num_layers"]):
                with v1.variable_scope(f"layer_{i}"):
                    with v1.variable_scope("attention"):
                        with v1.variable_scope("self"):
                            q = split(dense(x, hidden, "query"))
                            k = split(dense(x, hidden, "key"))
                            v = split(dense(x, hidden, "value"))
                            scores = tf.matmul(q, k, transpose_b=True) * (
                                1.0 / head ** 0.5) + bias
                            probs = dropout(tf.nn.softmax(scores),
                                            o["attention_dropout"])
                            context = tf.reshape(
                                tf.transpose(tf.matmul(probs, v),
                                             [0, 2, 1, 3]), [-1, seq, hidden])
                        with v1.variable_scope("output"):
                            a = dense(context, hidden, "dense")
                            a = layer_norm(dropout(a, o["hidden_dropout"]) + x)
                    with v1.variable_scope("intermediate"):
                        inter = dense(a, o["intermediate_size"], "dense", gelu)
                    with v1.variable_scope("output"):
                        y = dense(inter, hidden, "dense")
                        x = layer_norm(dropout(y, o["hidden_dropout"]) + a)
        with v1.variable_scope("pooler"):
            pooled = dense(x[:, 0], hidden, "dense", tf.tanh)
    w = v1.get_variable("output_weights", [o["num_classes"], hidden],
                        initializer=v1.truncated_normal_initializer(
                            stddev=0.02))
    b = v1.get_variable("output_bias", [o["num_classes"]],
                        initializer=v1.zeros_initializer())
    pooled = dropout(pooled, o["hidden_dropout"])
    logits = tf.nn.bias_add(tf.matmul(pooled, w, transpose_b=True), b)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return loss, bert_train_op_tf(tf, loss, o), logits


def bert_train_op_tf(tf, loss, o):
    """optimization.py's create_optimizer: linear warmup then polynomial
    decay to 0, AdamWeightDecayOptimizer (beta1 0.9, beta2 0.999, epsilon
    1e-6, no bias correction, weight decay except LayerNorm / layer_norm /
    bias), gradients clipped to global norm 1.0, global_step + 1."""
    v1 = tf.compat.v1
    step = v1.train.get_or_create_global_step()
    lr = v1.train.polynomial_decay(o["learning_rate"], step,
                                   o["num_train_steps"], end_learning_rate=0.0,
                                   power=1.0, cycle=False)
    if o["num_warmup_steps"]:
        steps_f = tf.cast(step, tf.float32)
        warmup_f = float(o["num_warmup_steps"])
        warmup_lr = o["learning_rate"] * steps_f / warmup_f
        is_warmup = tf.cast(steps_f < warmup_f, tf.float32)
        lr = (1.0 - is_warmup) * lr + is_warmup * warmup_lr
    tvars = v1.trainable_variables()
    # Dense gradients before the clipping, as estc's gradients() are: TF's
    # global norm of the embeddings' IndexedSlices would count a token that
    # repeats in the batch once per occurrence ([CLS] is in every row).
    grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, tvars)]
    grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
    updates = []
    for grad, param in zip(grads, tvars):
        name = param.name.split(":")[0]
        m = v1.get_variable(name + "/adam_m", param.shape.as_list(),
                            trainable=False,
                            initializer=v1.zeros_initializer())
        v = v1.get_variable(name + "/adam_v", param.shape.as_list(),
                            trainable=False,
                            initializer=v1.zeros_initializer())
        next_m = 0.9 * m + 0.1 * grad
        next_v = 0.999 * v + 0.001 * tf.square(grad)
        update = next_m / (tf.sqrt(next_v) + 1e-6)
        if not any(k in name for k in ("LayerNorm", "layer_norm", "bias")):
            update += 0.01 * param
        updates += [param.assign(param - lr * update), m.assign(next_m),
                    v.assign(next_v)]
    return tf.group(*updates, step.assign(step + 1))
