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
