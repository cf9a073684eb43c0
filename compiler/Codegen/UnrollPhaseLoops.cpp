//===- UnrollPhaseLoops.cpp - est-unroll-phase-loops ----------------------===//
//
// A fused row op's phase loop (a constant trip count of 2 to 4, its
// induction variable only compared with constants) is fully unrolled, and
// the comparisons and the scf.ifs on them fold: each phase becomes an
// element loop of its own, without the other phases' code behind a branch,
// which LLVM's loop vectorizer can then widen.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTUNROLLPHASELOOPS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

constexpr int64_t kMaxPhases = 4;

/// A phase loop: a constant trip count of at most kMaxPhases, a loop
/// inside, and an induction variable read, only by comparisons with
/// constants and scf.index_switch.
bool isPhaseLoop(scf::ForOp loop) {
  std::optional<llvm::APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->getZExtValue() > kMaxPhases || trips->getZExtValue() < 2)
    return false;
  bool hasInnerLoop = false;
  loop.getBody()->walk([&](LoopLikeOpInterface) { hasInnerLoop = true; });
  if (!hasInnerLoop)
    return false;
  if (loop.getInductionVar().use_empty())
    return false;
  for (Operation *user : loop.getInductionVar().getUsers()) {
    if (isa<scf::IndexSwitchOp>(user))
      continue;
    auto cmp = dyn_cast<arith::CmpIOp>(user);
    if (!cmp)
      return false;
    Value other =
        cmp.getLhs() == loop.getInductionVar() ? cmp.getRhs() : cmp.getLhs();
    if (!matchPattern(other, m_Constant()))
      return false;
  }
  return true;
}

struct EstUnrollPhaseLoops
    : public mlir::est::impl::EstUnrollPhaseLoopsBase<EstUnrollPhaseLoops> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (isPhaseLoop(loop))
        loops.push_back(loop);
    });
    if (loops.empty())
      return;
    // A loop that does not unroll stays as it was: the same code, slower.
    for (scf::ForOp loop : loops)
      (void)loopUnrollFull(loop);
    // The comparisons with the unrolled constants, and the scf.ifs on
    // them, fold away.
    RewritePatternSet patterns(&getContext());
    arith::CmpIOp::getCanonicalizationPatterns(patterns, &getContext());
    scf::IfOp::getCanonicalizationPatterns(patterns, &getContext());
    scf::IndexSwitchOp::getCanonicalizationPatterns(patterns, &getContext());
    // Not converging leaves a branch on a constant, which LLVM folds.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
