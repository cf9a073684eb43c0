"""TF 2.15 oracle cases of the depthwise convolution ops: DepthwiseConv2dNative
(est.depthwise_conv2d) and its two gradients, each differentiated too;
their estc halves are test/data/op_cases/depthwise.cpp."""

from op_oracle import OpCase, Input

CASES = [
    OpCase("depthwise_native_same_s1",
           lambda tf, x, f: tf.compat.v1.nn.depthwise_conv2d_native(
               x, f, strides=[1, 1, 1, 1], padding="SAME"),
           [Input("f32", [2, 6, 5, 8]), Input("f32", [3, 3, 8, 1])]),
    OpCase("depthwise_native_valid_s2",
           lambda tf, x, f: tf.compat.v1.nn.depthwise_conv2d_native(
               x, f, strides=[1, 2, 2, 1], padding="VALID"),
           [Input("f32", [2, 7, 7, 16]), Input("f32", [3, 3, 16, 1])]),
    OpCase("depthwise_native_same_s2_odd",
           lambda tf, x, f: tf.compat.v1.nn.depthwise_conv2d_native(
               x, f, strides=[1, 2, 1, 1], padding="SAME"),
           [Input("f32", [3, 5, 4, 3]), Input("f32", [3, 2, 3, 1])]),
    OpCase("depthwise_native_multiplier3",
           lambda tf, x, f: tf.compat.v1.nn.depthwise_conv2d_native(
               x, f, strides=[1, 1, 2, 1], padding="SAME"),
           [Input("f32", [2, 5, 6, 2]), Input("f32", [3, 3, 2, 3])]),
    # TF's own DepthwiseConv2dNative gradients ignore the dilations (TF
    # 2.15: its input and filter gradients differ from those of the same
    # forward through tf.nn.depthwise_conv2d by up to 7); the oracle is
    # tf.nn.depthwise_conv2d's (space_to_batch around the native op), whose
    # forward is bit for bit the native op's.
    OpCase("depthwise_native_dilated",
           lambda tf, x, f: tf.nn.depthwise_conv2d(
               x, f, strides=[1, 1, 1, 1], padding="SAME", dilations=[2, 2]),
           [Input("f32", [2, 7, 6, 4]), Input("f32", [2, 3, 4, 2])]),
    OpCase("depthwise_backprop_input",
           lambda tf, dy, f: tf.nn.depthwise_conv2d_backprop_input(
               [2, 7, 6, 3], f, dy, strides=[1, 2, 2, 1], padding="SAME"),
           [Input("f32", [2, 4, 3, 6]), Input("f32", [3, 3, 3, 2])]),
    OpCase("depthwise_backprop_filter",
           lambda tf, x, dy: tf.nn.depthwise_conv2d_backprop_filter(
               x, [3, 3, 3, 2], dy, strides=[1, 2, 2, 1], padding="SAME"),
           [Input("f32", [2, 7, 6, 3]), Input("f32", [2, 4, 3, 6])]),
]
