//===- EstToLinalg.cpp - convert-est-to-linalg --------------------------===//
//
// Lowers every est op of a function to linalg / tensor / arith / math on
// tensors. Types do not change (est works on builtin tensors), so one walk
// over the function, in order, applies each op's rewrite pattern
// (walkAndApplyPatterns): the patterns of Patterns.h, one per op, in one
// file per op family.
//
// est.read_variable and est.assign_variable stay (est-function-abi turns
// them into buffers). The first est op left after the walk fails the pass
// with one error: the reason its pattern gave, or why it has none (not
// expanded by the autodiff stage, not decomposed, no lowering).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Passes.h"
#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <optional>
#include <string>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_CONVERTESTTOLINALG
#include "compiler/Conversion/EstToLinalg/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

void mlir::est::populateEstToLinalgPatterns(RewritePatternSet &patterns) {
  populateEstToLinalgElementwisePatterns(patterns);
  populateEstToLinalgReductionPatterns(patterns);
  populateEstToLinalgNormalizationPatterns(patterns);
  populateEstToLinalgLinearAlgebraPatterns(patterns);
  populateEstToLinalgWindowPatterns(patterns);
  populateEstToLinalgBatchNormPatterns(patterns);
  populateEstToLinalgShapePatterns(patterns);
  populateEstToLinalgIndexingPatterns(patterns);
  populateEstToLinalgSortingPatterns(patterns);
  populateEstToLinalgImagePatterns(patterns);
  populateEstToLinalgRandomPatterns(patterns);
  populateEstToLinalgControlFlowPatterns(patterns);
}

namespace {

/// Keeps the reason of the first pattern that did not lower its op. The walk
/// visits ops in order, so that is the reason of the first op left whose
/// pattern failed.
struct FirstFailureReason : public RewriterBase::Listener {
  void
  notifyMatchFailure(Location loc,
                     function_ref<void(Diagnostic &)> reasonCallback) override {
    if (reason)
      return;
    Diagnostic diag(loc, DiagnosticSeverity::Remark);
    reasonCallback(diag);
    reason = diag.str();
  }

  std::optional<std::string> reason;
};

/// Whether `op` stays: variable accesses are lowered by est-function-abi,
/// est.check_fail_if (scalars only) by est-lower-runtime-checks, the
/// collectives and the parameter-server pulls and pushes by bufferization
/// (compiler/Codegen/CollectiveBufferization).
bool staysEst(Operation *op) {
  return isa<est::ReadVariableOp, est::AssignVariableOp, est::CheckFailIfOp,
             est::AllReduceOp, est::AllGatherOp, est::PsPullRowsOp,
             est::PsWaitOp, est::PsPushOp>(op);
}

struct ConvertEstToLinalgPass
    : public est::impl::ConvertEstToLinalgBase<ConvertEstToLinalgPass> {
  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet set(context);
    est::populateEstToLinalgPatterns(set);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    est::markCheckedIndices(getOperation());
    FirstFailureReason firstFailure;
    walkAndApplyPatterns(getOperation(), patterns, &firstFailure);
    Operation *left = nullptr;
    getOperation().walk([&](Operation *op) {
      if (!isa<est::EstDialect>(op->getDialect()) || staysEst(op))
        return WalkResult::advance();
      left = op;
      return WalkResult::interrupt();
    });
    if (!left)
      return;
    reportNotLowered(left, firstFailure.reason);
    signalPassFailure();
  }

  /// The error of the first est op the walk left: the reason its pattern
  /// gave when it has one.
  void reportNotLowered(Operation *op,
                        const std::optional<std::string> &reason) {
    if (patterns.getOpSpecificNativePatterns().count(op->getName()) && reason) {
      op->emitOpError(*reason);
    } else if (isa<est::MinimizeOp>(op)) {
      op->emitOpError(
          "est.minimize must be expanded by the training pass first");
    } else if (isa<est::SoftmaxOp, est::LogSoftmaxOp,
                   est::SoftmaxCrossEntropyOp, est::SparseSoftmaxCrossEntropyOp,
                   est::SigmoidCrossEntropyOp>(op)) {
      op->emitOpError("is a composite op: run est-decompose before "
                      "convert-est-to-linalg");
    } else {
      op->emitOpError("cannot be lowered to linalg");
    }
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
