//===- Patterns.h - est -> linalg rewrite patterns, by op family -*- C++
//-*-===//
//
// One OpRewritePattern per est op, grouped by op family, one file each:
//
//   Elementwise.cpp    elementwise, compare, logical, select, cast,
//                      broadcast_to; constant, zeros_like, ones_like,
//                      stop_gradient
//   Reductions.cpp     reduce_sum / _mean / _max / _min / _prod, argmax,
//                      argmin, cumsum, cumprod
//   Normalization.cpp  layer_norm, attention_softmax and their gradients
//                      (one loop nest per row)
//   LinearAlgebra.cpp  matmul, conv2d
//   Windows.cpp        max_pool, avg_pool and the gradients of conv2d and
//                      pooling (conv2d_backprop_input / _filter,
//                      max_pool_grad, avg_pool_grad)
//   BatchNorm.cpp      fused_batch_norm and its gradient (one pass over x
//                      for the statistics, one for the result)
//   Shapes.cpp         reshape, transpose, concat, slice, pad, squeeze,
//                      expand_dims
//   Indexing.cpp       gather, scatter, unsorted_segment_sum, one_hot,
//                      bucketize, check_range
//   Sorting.cpp        argsort, take_along_axis, scatter_along_axis
//   Images.cpp         resize_images, resize_images_grad
//   Random.cpp         dropout, random_uniform, random_normal,
//                      truncated_normal
//   ControlFlow.cpp    scan, if, while (to scf, their regions lowered
//                      first)
//
// Each pattern replaces its op by linalg / tensor / arith / math ops on
// tensors, built right before it. When an op cannot be lowered (a dynamic
// dimension where a static one is needed, an unknown padding) the pattern
// fails with the reason (notifyMatchFailure), which convert-est-to-linalg
// reports as the op's error.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CONVERSION_ESTTOLINALG_PATTERNS_H
#define ESTC_COMPILER_CONVERSION_ESTTOLINALG_PATTERNS_H

namespace mlir {
class Operation;
class RewritePatternSet;

namespace est {

void populateEstToLinalgElementwisePatterns(RewritePatternSet &patterns);
void populateEstToLinalgReductionPatterns(RewritePatternSet &patterns);
void populateEstToLinalgNormalizationPatterns(RewritePatternSet &patterns);
void populateEstToLinalgLinearAlgebraPatterns(RewritePatternSet &patterns);
void populateEstToLinalgWindowPatterns(RewritePatternSet &patterns);
void populateEstToLinalgBatchNormPatterns(RewritePatternSet &patterns);
void populateEstToLinalgShapePatterns(RewritePatternSet &patterns);
void populateEstToLinalgIndexingPatterns(RewritePatternSet &patterns);
/// Marks every est.gather and est.scatter under `root` whose indices come
/// from an est.check_range of exactly their row range, so that their
/// lowerings do not clamp them. Runs before the patterns, which erase the
/// checks.
void markCheckedIndices(Operation *root);
void populateEstToLinalgSortingPatterns(RewritePatternSet &patterns);
void populateEstToLinalgImagePatterns(RewritePatternSet &patterns);
void populateEstToLinalgRandomPatterns(RewritePatternSet &patterns);
void populateEstToLinalgControlFlowPatterns(RewritePatternSet &patterns);

/// Every family's patterns: what convert-est-to-linalg applies.
void populateEstToLinalgPatterns(RewritePatternSet &patterns);

} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CONVERSION_ESTTOLINALG_PATTERNS_H
