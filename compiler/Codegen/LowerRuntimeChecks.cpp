//===- LowerRuntimeChecks.cpp - est-lower-runtime-checks ------------------===//
//
// est.check_fail_if %failed, %position, %value {check = k}, in a function
// body already in cf form, becomes
//
//     cf.cond_br %failed, ^fail, ^rest
//   ^fail:
//     status = view of arena[estc.status_offset] as memref<3xi64>
//     status[0] = k + 1; status[1] = %position; status[2] = %value
//     return
//   ^rest:
//     <the rest of the step>
//
// so that a failed check ends the step before anything after it runs (the
// checks sit right after their inputs' definitions, before any variable
// update: est-insert-runtime-checks).
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTLOWERRUNTIMECHECKS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

struct EstLowerRuntimeChecks
    : public est::impl::EstLowerRuntimeChecksBase<EstLowerRuntimeChecks> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<est::CheckFailIfOp> checks;
    func.walk([&](est::CheckFailIfOp check) { checks.push_back(check); });
    if (checks.empty())
      return;
    auto offset = func->getAttrOfType<IntegerAttr>("estc.status_offset");
    auto arenaType = func.getNumArguments() == 0
                         ? MemRefType()
                         : dyn_cast<MemRefType>(func.getArgument(0).getType());
    if (!offset || !arenaType || !arenaType.getElementType().isInteger(8)) {
      func.emitError("est-lower-runtime-checks: '")
          << func.getSymName()
          << "' has run-time checks but no status slot (run "
             "est-memory-planning first)";
      return signalPassFailure();
    }
    if (func.getNumResults() != 0) {
      func.emitError("est-lower-runtime-checks: '")
          << func.getSymName() << "' returns values (run est-function-abi "
          << "first)";
      return signalPassFailure();
    }
    Value arena = func.getArgument(0);
    for (est::CheckFailIfOp check : checks) {
      if (check->getParentOp() != func) {
        check.emitError("est-lower-runtime-checks: a check nested in a "
                        "region cannot end the step");
        return signalPassFailure();
      }
      Block *block = check->getBlock();
      Block *rest = block->splitBlock(std::next(check->getIterator()));
      Block *fail = new Block();
      func.getBody().getBlocks().insertAfter(block->getIterator(), fail);

      OpBuilder b(check);
      Location loc = check.getLoc();
      cf::CondBranchOp::create(b, loc, check.getFailed(), fail, ValueRange{},
                               rest, ValueRange{});
      b.setInsertionPointToStart(fail);
      Value byteOffset =
          arith::ConstantIndexOp::create(b, loc, offset.getInt());
      auto statusType = MemRefType::get({3}, b.getI64Type());
      Value status = memref::ViewOp::create(b, loc, statusType, arena,
                                            byteOffset, ValueRange{});
      Value code = arith::ConstantIntOp::create(
          b, loc, b.getI64Type(), check.getCheckAttr().getInt() + 1);
      for (auto [i, v] : llvm::enumerate(std::array<Value, 3>{
               code, check.getPosition(), check.getValue()})) {
        Value index = arith::ConstantIndexOp::create(b, loc, i);
        memref::StoreOp::create(b, loc, v, status, index);
      }
      func::ReturnOp::create(b, loc);
      check.erase();
    }
  }
};

} // namespace
