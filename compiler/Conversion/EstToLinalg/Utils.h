//===- Utils.h - Helpers shared by the est-to-linalg patterns ---*- C++ -*-===//
//
// Builders the lowering of several op families needs: constants, dims,
// empty and filled tensors, NumPy broadcasting as indexing maps, scalar
// conversions and TF's spatial padding.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CONVERSION_ESTTOLINALG_UTILS_H
#define ESTC_COMPILER_CONVERSION_ESTTOLINALG_UTILS_H

#include "lib/Shape/ShapeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <type_traits>
#include <utility>

namespace mlir {
namespace est {
namespace lowering {

/// A pattern that replaces its op with `Derived::lower(b, op)`: the
/// replacement Value, or a FailureOr<Value> that fails, before building
/// anything, for the reason `Derived::kUnsupported`.
template <typename OpTy, typename Derived>
struct LowerOpPattern : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &b) const override {
    if constexpr (std::is_same_v<decltype(Derived::lower(b, op)), Value>) {
      b.replaceOp(op, Derived::lower(b, op));
    } else {
      FailureOr<Value> result = Derived::lower(b, op);
      if (failed(result))
        return b.notifyMatchFailure(op, Derived::kUnsupported);
      b.replaceOp(op, *result);
    }
    return success();
  }
};

/// Builds the scalar result of one element from the operands' elements.
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorTypeOf(Value v);
/// The type of `op`'s (first) result.
RankedTensorType resultTypeOf(Operation *op);

Value indexConst(OpBuilder &b, Location loc, int64_t v);
/// A scalar constant of element type `type` (integers truncate `v`).
Value scalarConst(OpBuilder &b, Location loc, Type type, double v);
Value intConst(OpBuilder &b, Location loc, Type type, int64_t v);

/// The size of dim `d` of `t`, as an index value.
Value dimValue(OpBuilder &b, Location loc, Value t, int64_t d);
/// The size of dim `d` of `t`, as an attribute when static.
OpFoldResult dimFold(OpBuilder &b, Location loc, Value t, int64_t d);

/// tensor.empty of `type`; `dims[i]` gives dynamic dim i.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<Value> dims);
/// A tensor.empty of `type` filled with `fill` (linalg.fill).
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<Value> dims, Value fill);
/// `v` as `type` (a tensor.cast when the types differ).
Value castTo(OpBuilder &b, Location loc, Value v, Type type);

/// `n` parallel iterators.
SmallVector<utils::IteratorType> parallel(int64_t n);

/// Output dims of a broadcast: the result dim when static, else a dynamic
/// operand dim at that position (right-aligned), else a static one.
SmallVector<Value> broadcastDims(OpBuilder &b, Location loc,
                                 ValueRange operands,
                                 RankedTensorType resultType);
/// The indexing map of a broadcast operand of `type` in a loop nest of
/// `resultType`'s rank.
AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType type,
                       RankedTensorType resultType);
/// One linalg.generic computing `body` of the operands' elements into a
/// tensor of `resultType`, broadcasting NumPy-style.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange operands,
                       RankedTensorType resultType, BodyFn body);

bool isFloat(Type t);
/// Scalar conversion between est element types (f16 bf16 f32 f64 i32 i64 i1):
/// float -> int truncates toward zero, x -> i1 is x != 0, i1 -> x is 0 / 1.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to);

/// `input` (NHWC) padded with `value` in H and W (itself when all pads are
/// zero).
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padBefore, ArrayRef<int64_t> padAfter,
                 double value);
/// TF padding of one spatial dim: (before, after).
std::pair<int64_t, int64_t> spatialPads(int64_t in, int64_t window,
                                        int64_t stride, int64_t dilation,
                                        estc::shape::Padding padding);

} // namespace lowering
} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CONVERSION_ESTTOLINALG_UTILS_H
