//===- DCE.cpp - est-dce ----------------------------------------------===//
//
// Erases ops whose results are unused and that have no write effects, until
// nothing changes. Uses MLIR's trivially-dead rule: pure ops and ops that only
// read (est.read_variable) go; writes and unknown effects stay.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

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
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> dead;
      // Post-order visits users (later in the block) after their operands,
      // so walk each block backwards by collecting first.
      getOperation().walk([&](Operation *op) {
        if (op != getOperation() && !op->hasTrait<OpTrait::IsTerminator>() &&
            isOpTriviallyDead(op))
          dead.push_back(op);
      });
      for (Operation *op : llvm::reverse(dead)) {
        if (!isOpTriviallyDead(op))
          continue;
        op->erase();
        changed = true;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::est::createDCEPass() {
  return std::make_unique<DCEPass>();
}
