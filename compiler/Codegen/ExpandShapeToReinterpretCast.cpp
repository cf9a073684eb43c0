//===- ExpandShapeToReinterpretCast.cpp - est-expand-shape-to-reinterpret-cast
//
// A memref.expand_shape of a row-major buffer that splits one dimension into
// several run-time ones ([batch * T, H] into [batch, T, H]: a matmul over a
// sequence input's steps, docs/design/run-time-dimensions.md) becomes a
// memref.reinterpret_cast of the same buffer, with the output shape and its
// row-major strides. MLIR 22's expand-strided-metadata crashes on such an
// expand_shape (a null stride attribute in ReinterpretCastOp::build); it
// handles the reinterpret_cast, which is the same view. Before run-time
// sequence lengths no buffer had two run-time dimensions in one group.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTEXPANDSHAPETOREINTERPRETCAST
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Rewrites `op` when it splits a dimension into several dynamic ones.
void rewrite(memref::ExpandShapeOp op, RewriterBase &rewriter) {
  MemRefType source = op.getSrcType(), result = op.getResultType();
  if (!source.getLayout().isIdentity() || !result.getLayout().isIdentity())
    return;
  bool severalDynamic = false;
  for (const ReassociationIndices &group : op.getReassociationIndices())
    severalDynamic |= llvm::count_if(group, [&](int64_t d) {
                        return result.isDynamicDim(d);
                      }) > 1;
  if (!severalDynamic)
    return;
  rewriter.setInsertionPoint(op);
  // Row-major strides of the output shape; static while the dimensions
  // inside them are (the result type's layout requires it).
  Location loc = op.getLoc();
  SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
  SmallVector<OpFoldResult> strides(sizes.size());
  OpFoldResult stride = rewriter.getIndexAttr(1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    std::optional<int64_t> a = getConstantIntValue(stride);
    std::optional<int64_t> b = getConstantIntValue(sizes[d]);
    if (a && b)
      stride = rewriter.getIndexAttr(*a * *b);
    else
      stride = arith::MulIOp::create(
                   rewriter, loc,
                   getValueOrCreateConstantIndexOp(rewriter, loc, stride),
                   getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]))
                   .getResult();
  }
  rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
      op, result, op.getSrc(), rewriter.getIndexAttr(0), sizes, strides);
}

struct EstExpandShapeToReinterpretCast
    : public mlir::est::impl::EstExpandShapeToReinterpretCastBase<
          EstExpandShapeToReinterpretCast> {
  // A walk, not the greedy driver: nothing else in the function is folded
  // or erased, so functions without such an expansion are unchanged.
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> expansions;
    getOperation().walk(
        [&](memref::ExpandShapeOp op) { expansions.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (memref::ExpandShapeOp op : expansions)
      rewrite(op, rewriter);
  }
};

} // namespace
