//===- Image.h - Image preprocessing for input pipelines ---------*- C++
//-*-===//
//
// tf.image's preprocessing for a Dataset::map on the host: what an input_fn
// does to images before they reach a model whose input size is fixed (the
// seeds' recipe: Fashion-MNIST's 28 x 28 grey images resized to a
// MobileNetV2's 96 x 96 x 3). The model graph has the same ops
// (lib/Graph/Ops.h, estc::image::resize) for resizing inside a model.
//
// Semantics are TF 2's: tf.image.resize with half-pixel centers, bilinear
// giving float32 and nearest keeping the dtype. Bad input throws DataError
// with one line naming the function and what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_IMAGE_H
#define ESTC_LIB_DATA_IMAGE_H

#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <string>
#include <vector>

namespace estc {
namespace data {
namespace image {

/// tf.image.resize (antialias false, preserve_aspect_ratio false): images
/// [height, width, channels] or [batch, height, width, channels] of any
/// real or integer dtype resized to `size` = {new_height, new_width}.
/// method "bilinear" (float32 result) or "nearest" (images' dtype).
TensorValue resize(const TensorValue &images, const std::vector<int64_t> &size,
                   const std::string &method = "bilinear");

/// tf.image.grayscale_to_rgb: the last dimension (size 1) repeated 3 times.
TensorValue grayscale_to_rgb(const TensorValue &images);

} // namespace image
} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_IMAGE_H
