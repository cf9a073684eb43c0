//===- ShapeFunctions.h - Shape inference rules for every est op --------===//
//
// The one definition of how each operation's output shape follows from its
// inputs. Used both by the graph builder (lib/Graph, while a model_fn builds a
// graph) and by the `est` dialect's type inference (dialects/Est), so the two
// can never disagree. Plain C++, no MLIR dependency.
//
// Shapes are vectors of dimensions; kUnknownDim (-1) is a dimension known only
// at run time (typically the batch). Functions return the output shape or a
// one-line error message that describes the problem without naming the op
// (callers prefix the op and node name).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SHAPE_SHAPEFUNCTIONS_H
#define ESTC_LIB_SHAPE_SHAPEFUNCTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace shape {

using Dims = std::vector<int64_t>;
constexpr int64_t kUnknownDim = -1;

/// The result of a shape function: a shape, or an error message.
class ShapeOr {
public:
  ShapeOr(Dims dims) : dims_(std::move(dims)) {}
  static ShapeOr error(std::string message) {
    ShapeOr r{Dims{}};
    r.error_ = std::move(message);
    return r;
  }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Dims &dims() const { return dims_; }
  const Dims &operator*() const { return dims_; }
  const std::string &message() const { return *error_; }

private:
  Dims dims_;
  std::optional<std::string> error_;
};

/// "[?,784]" style rendering used in every error message.
std::string toString(const Dims &dims);
/// Number of elements, or kUnknownDim when any dimension is unknown.
int64_t numElements(const Dims &dims);
bool isFullyKnown(const Dims &dims);
/// Same rank, and each dimension equal or unknown in either (TF's
/// TensorShape.is_compatible_with).
bool isCompatible(const Dims &a, const Dims &b);

/// Maps a possibly negative axis into [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

// --- Elementwise -----------------------------------------------------------
/// NumPy broadcasting of two shapes. An unknown dimension broadcasts against
/// 1 to unknown and against n > 1 to n.
ShapeOr broadcast(const Dims &a, const Dims &b);
ShapeOr broadcast(const std::vector<Dims> &shapes);
/// Can `from` be broadcast to exactly `to`?
ShapeOr broadcastTo(const Dims &from, const Dims &to);

// --- Linear algebra --------------------------------------------------------
/// [..., M, K] x [..., K, N] -> [..., M, N]; leading (batch) dims broadcast.
ShapeOr matmul(const Dims &a, const Dims &b, bool transposeA, bool transposeB);

enum class Padding { Same, Valid };
/// Parses "SAME" / "VALID".
std::optional<Padding> parsePadding(const std::string &padding);
/// NHWC input [N,H,W,C], HWIO filter [KH,KW,C,O] -> [N,OH,OW,O].
ShapeOr conv2d(const Dims &input, const Dims &filter, const Dims &strides,
               const Dims &dilations, Padding padding);
/// NHWC pooling with a [kh,kw] window.
ShapeOr pool2d(const Dims &input, const Dims &ksize, const Dims &strides,
               Padding padding);
/// The gradients of conv2d and of pooling (the backward graph's ops). Each
/// checks that the forward op over the recovered input has the gradient's
/// shape. `inputSize` / `filterSize` are the forward input's [H, W] and the
/// filter's [KH, KW], which the gradient's shape does not determine.
/// grad_output [N,OH,OW,O], filter [KH,KW,C,O] -> [N,H,W,C].
ShapeOr conv2dBackpropInput(const Dims &gradOutput, const Dims &filter,
                            const Dims &inputSize, const Dims &strides,
                            const Dims &dilations, Padding padding);
/// input [N,H,W,C], grad_output [N,OH,OW,O] -> [KH,KW,C,O].
ShapeOr conv2dBackpropFilter(const Dims &input, const Dims &gradOutput,
                             const Dims &filterSize, const Dims &strides,
                             const Dims &dilations, Padding padding);
/// input [N,H,W,C], grad_output [N,OH,OW,C] -> input's shape.
ShapeOr maxPoolGrad(const Dims &input, const Dims &gradOutput,
                    const Dims &ksize, const Dims &strides, Padding padding);
/// grad_output [N,OH,OW,C] -> [N,H,W,C].
ShapeOr avgPoolGrad(const Dims &gradOutput, const Dims &inputSize,
                    const Dims &ksize, const Dims &strides, Padding padding);
/// Depthwise convolution (TF's DepthwiseConv2dNative): NHWC input
/// [N,H,W,C], filter [KH,KW,C,M] -> [N,OH,OW,C*M]; output channel c*M + m
/// is input channel c convolved with filter[:, :, c, m].
ShapeOr depthwiseConv2d(const Dims &input, const Dims &filter,
                        const Dims &strides, const Dims &dilations,
                        Padding padding);
/// Its gradients: grad_output [N,OH,OW,C*M], filter [KH,KW,C,M] ->
/// [N,H,W,C]; input [N,H,W,C], grad_output [N,OH,OW,C*M] -> [KH,KW,C,M].
ShapeOr depthwiseConv2dBackpropInput(const Dims &gradOutput, const Dims &filter,
                                     const Dims &inputSize, const Dims &strides,
                                     const Dims &dilations, Padding padding);
ShapeOr depthwiseConv2dBackpropFilter(const Dims &input, const Dims &gradOutput,
                                      const Dims &filterSize,
                                      const Dims &strides,
                                      const Dims &dilations, Padding padding);
/// Output size of one spatial dimension (exposed for the code generators).
int64_t convOutputSize(int64_t in, int64_t window, int64_t stride,
                       int64_t dilation, Padding padding);
/// Low padding of one spatial dimension for SAME (0 for VALID).
int64_t convPadBefore(int64_t in, int64_t window, int64_t stride,
                      int64_t dilation, Padding padding);

// --- Batch normalization ---------------------------------------------------
/// x (rank >= 1) normalized per channel along `axis` (negative counts from
/// the end), with scale and offset of shape [C] -> the statistics' [C].
ShapeOr batchNorm(const Dims &x, const Dims &scale, const Dims &offset,
                  int64_t axis);

// --- Reductions ------------------------------------------------------------
/// Reduces `axes` (all axes when nullopt); duplicate or out-of-range axes are
/// errors.
ShapeOr reduce(const Dims &input, const std::optional<Dims> &axes,
               bool keepDims);
/// argmax / argmin: removes `axis`.
ShapeOr argReduce(const Dims &input, int64_t axis);

// --- Shape manipulation ----------------------------------------------------
/// Target may hold one -1, inferred from the element count.
ShapeOr reshape(const Dims &input, const Dims &target);
ShapeOr transpose(const Dims &input, const Dims &perm);
ShapeOr concat(const std::vector<Dims> &inputs, int64_t axis);
/// size[i] == -1 means "to the end of dimension i".
ShapeOr slice(const Dims &input, const Dims &begin, const Dims &size);
/// paddings = [lo0, hi0, lo1, hi1, ...], 2 * rank non-negative values.
ShapeOr pad(const Dims &input, const Dims &paddings);
/// Removes `axes` (all size-1 dims when nullopt); each must have size 1.
ShapeOr squeeze(const Dims &input, const std::optional<Dims> &axes);
/// Inserts a size-1 dim at `axis` in [-(rank+1), rank].
ShapeOr expandDims(const Dims &input, int64_t axis);
/// tf.reverse: the input's shape; `axes` distinct and in range.
ShapeOr reverse(const Dims &input, const Dims &axes);

// --- Indexing --------------------------------------------------------------
/// params[:axis] + indices + params[axis+1:].
ShapeOr gather(const Dims &params, const Dims &indices, int64_t axis);
/// scatter on axis 0 (the transpose of gather on axis 0): `updates` must be
/// `indices + ref[1:]`; the result is `ref`.
ShapeOr scatter(const Dims &ref, const Dims &indices, const Dims &updates);
/// unsorted_segment_sum: data [N, ...], segment_ids [N] -> [B] + data[1:],
/// B = dim 0 of `numSegmentsLike` (any rank >= 1).
ShapeOr unsortedSegmentSum(const Dims &data, const Dims &segmentIds,
                           const Dims &numSegmentsLike);
/// Inserts `depth` at `axis` (-1 = last) of the indices' shape.
ShapeOr oneHot(const Dims &indices, int64_t depth, int64_t axis);

// --- Sorting ---------------------------------------------------------------
/// argsort: the input's shape with `axis` of size `k` (the first k of the
/// order; -1 = the whole axis). k must be at most the axis size, which must
/// then be static.
ShapeOr argsort(const Dims &input, int64_t axis, int64_t k);
/// take_along_axis: `indices` has `arr`'s rank and shape except along
/// `axis` (any size there); the result has the indices' shape.
ShapeOr takeAlongAxis(const Dims &arr, const Dims &indices, int64_t axis);
/// scatter_along_axis (its transpose): `indices` and `updates` have one
/// shape, `ref`'s except along `axis`; the result is `ref`.
ShapeOr scatterAlongAxis(const Dims &ref, const Dims &indices,
                         const Dims &updates, int64_t axis);

// --- Images ----------------------------------------------------------------
/// resize_images: NHWC [N,H,W,C] -> [N, size[0], size[1], C], sizes >= 1.
ShapeOr resizeImages(const Dims &images, const Dims &size);
/// resize_images_grad: grad_output [N,h,w,C] -> [N, inputSize[0],
/// inputSize[1], C].
ShapeOr resizeImagesGrad(const Dims &gradOutput, const Dims &inputSize);

// --- Losses ----------------------------------------------------------------
/// logits [..., C] and labels of the same shape -> [...].
ShapeOr softmaxCrossEntropy(const Dims &logits, const Dims &labels);
/// logits [..., C] and integer labels [...] -> [...].
ShapeOr sparseSoftmaxCrossEntropy(const Dims &logits, const Dims &labels);

// --- Normalization and attention -------------------------------------------
/// x normalized over dims [beginNormAxis, rank), with gamma and beta of shape
/// x[beginParamsAxis:] (beginParamsAxis >= beginNormAxis; negative axes
/// count from the end) -> x's shape.
ShapeOr layerNorm(const Dims &x, const Dims &gamma, const Dims &beta,
                  int64_t beginNormAxis, int64_t beginParamsAxis);
/// logits [..., T, S] (rank >= 2) and an optional mask of logits' rank, each
/// dim 1 or logits' -> logits' shape.
ShapeOr attentionSoftmax(const Dims &logits, const std::optional<Dims> &mask);

} // namespace shape
} // namespace estc

#endif // ESTC_LIB_SHAPE_SHAPEFUNCTIONS_H
