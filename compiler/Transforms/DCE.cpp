//===- DCE.cpp - est-dce ----------------------------------------------===//
//
// Erases ops whose results are unused and that have no write effects, until
// nothing changes. Uses MLIR's trivially-dead rule: pure ops and ops that only
// read (est.read_variable) go; writes and unknown effects stay.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Iterators.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTDCE
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

struct DCEPass : public est::impl::EstDCEBase<DCEPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    bool changed = true;
    while (changed) {
      changed = false;
      // Reverse post-order within each block: users (later in the block, or
      // nested) are visited, and possibly erased, before their producers.
      root->walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *op) {
        if (op == root || op->hasTrait<OpTrait::IsTerminator>() ||
            !isOpTriviallyDead(op))
          return;
        op->erase();
        changed = true;
      });
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::est::createDCEPass() {
  return std::make_unique<DCEPass>();
}
