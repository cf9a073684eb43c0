"""TF 2.15 oracle cases of the convolutions and poolings (lib/Graph/Convolution.cpp,
the data_format of conv2d and the pools); their estc halves are
test/data/op_cases/conv.cpp. Channels-first cases build TF's side from the
channels-last op and transposes: TF's CPU kernels support NHWC only."""

from op_oracle import OpCase, Input


def _to_last(tf, x):
    rank = len(x.shape)
    return tf.transpose(x, [0] + list(range(2, rank)) + [1])


def _to_first(tf, x):
    rank = len(x.shape)
    return tf.transpose(x, [0, rank - 1] + list(range(1, rank - 1)))


CASES = [
    OpCase("conv1d_same_s2",
           lambda tf, x, f: tf.nn.conv1d(x, f, stride=2, padding="SAME"),
           [Input("f32", [2, 11, 3]), Input("f32", [3, 3, 4])]),
    OpCase("conv1d_valid_dilated",
           lambda tf, x, f: tf.nn.conv1d(x, f, stride=1, padding="VALID",
                                         dilations=2),
           [Input("f32", [2, 11, 3]), Input("f32", [3, 3, 4])]),
    OpCase("conv1d_ncw",
           lambda tf, x, f: _to_first(tf, tf.nn.conv1d(
               _to_last(tf, x), f, stride=1, padding="SAME")),
           [Input("f32", [2, 3, 9]), Input("f32", [2, 3, 4])]),
    OpCase("conv3d_same_strided",
           lambda tf, x, f: tf.nn.conv3d(x, f, strides=[1, 2, 1, 2, 1],
                                         padding="SAME"),
           [Input("f32", [2, 5, 6, 7, 2]), Input("f32", [2, 3, 2, 2, 3])]),
    OpCase("conv3d_valid",
           lambda tf, x, f: tf.nn.conv3d(x, f, strides=[1, 1, 2, 1, 1],
                                         padding="VALID"),
           [Input("f32", [2, 5, 6, 4, 2]), Input("f32", [3, 2, 2, 2, 3])]),
    OpCase("conv3d_dilated",
           lambda tf, x, f: tf.nn.convolution(x, f, strides=1,
                                              padding="SAME",
                                              dilations=[2, 1, 2]),
           [Input("f32", [2, 5, 4, 6, 2]), Input("f32", [2, 2, 2, 2, 3])]),
    OpCase("conv3d_ncdhw",
           lambda tf, x, f: _to_first(tf, tf.nn.conv3d(
               _to_last(tf, x), f, strides=[1, 1, 1, 1, 1], padding="SAME")),
           [Input("f32", [2, 2, 4, 5, 3]), Input("f32", [2, 2, 2, 2, 3])]),
    OpCase("conv2d_transpose_same",
           lambda tf, x, f: tf.nn.conv2d_transpose(
               x, f, output_shape=[2, 8, 6, 2], strides=2, padding="SAME"),
           [Input("f32", [2, 4, 3, 5]), Input("f32", [3, 3, 2, 5])]),
    OpCase("conv2d_transpose_valid",
           lambda tf, x, f: tf.nn.conv2d_transpose(
               x, f, output_shape=[2, 9, 7, 2], strides=2, padding="VALID"),
           [Input("f32", [2, 4, 3, 5]), Input("f32", [3, 3, 2, 5])]),
    OpCase("conv3d_transpose_same",
           lambda tf, x, f: tf.nn.conv3d_transpose(
               x, f, output_shape=[2, 6, 4, 5, 2], strides=[1, 2, 2, 2, 1],
               padding="SAME"),
           [Input("f32", [2, 3, 2, 3, 4]), Input("f32", [3, 2, 3, 2, 4])]),
    OpCase("conv3d_transpose_valid",
           lambda tf, x, f: tf.nn.conv3d_transpose(
               x, f, output_shape=[2, 7, 4, 7, 2], strides=[1, 2, 2, 2, 1],
               padding="VALID"),
           [Input("f32", [2, 3, 2, 3, 4]), Input("f32", [3, 2, 3, 2, 4])]),
    OpCase("depthwise_conv2d_multiplier2",
           lambda tf, x, f: tf.nn.depthwise_conv2d(
               x, f, strides=[1, 2, 2, 1], padding="SAME"),
           [Input("f32", [2, 7, 6, 3]), Input("f32", [3, 3, 3, 2])]),
    OpCase("depthwise_conv2d_valid_dilated",
           lambda tf, x, f: tf.nn.depthwise_conv2d(
               x, f, strides=[1, 1, 1, 1], padding="VALID", dilations=[2, 2]),
           [Input("f32", [2, 7, 6, 3]), Input("f32", [2, 2, 3, 2])]),
    OpCase("separable_conv2d",
           lambda tf, x, d, p: tf.nn.separable_conv2d(
               x, d, p, strides=[1, 1, 1, 1], padding="SAME"),
           [Input("f32", [2, 6, 5, 3]), Input("f32", [3, 3, 3, 2]),
            Input("f32", [1, 1, 6, 4])]),
    OpCase("conv2d_nchw",
           lambda tf, x, f: _to_first(tf, tf.nn.conv2d(
               _to_last(tf, x), f, strides=[1, 2, 1, 1], padding="SAME")),
           [Input("f32", [2, 3, 7, 6]), Input("f32", [3, 2, 3, 4])]),
    OpCase("pool2d_nchw",
           lambda tf, x: [
               _to_first(tf, tf.nn.max_pool2d(_to_last(tf, x), ksize=[2, 3],
                                              strides=[2, 1],
                                              padding="SAME")),
               _to_first(tf, tf.nn.avg_pool2d(_to_last(tf, x), ksize=[2, 3],
                                              strides=[2, 1],
                                              padding="VALID"))],
           [Input("f32", [2, 3, 7, 6])]),
    OpCase("pool1d",
           lambda tf, x: [
               tf.nn.max_pool1d(x, ksize=3, strides=2, padding="SAME"),
               tf.nn.avg_pool1d(x, ksize=3, strides=2, padding="SAME"),
               tf.nn.max_pool1d(x, ksize=2, strides=1, padding="VALID"),
               tf.nn.avg_pool1d(x, ksize=2, strides=1, padding="VALID")],
           [Input("f32", [2, 9, 3])]),
    OpCase("pool3d",
           lambda tf, x: [
               tf.nn.max_pool3d(x, ksize=[3, 2, 2], strides=[2, 2, 1],
                                padding="SAME"),
               tf.nn.avg_pool3d(x, ksize=[3, 2, 2], strides=[2, 2, 1],
                                padding="SAME"),
               tf.nn.max_pool3d(x, ksize=[2, 2, 3], strides=[1, 2, 2],
                                padding="VALID"),
               tf.nn.avg_pool3d(x, ksize=[2, 2, 3], strides=[1, 2, 2],
                                padding="VALID")],
           [Input("f32", [2, 5, 6, 5, 2])]),
]
