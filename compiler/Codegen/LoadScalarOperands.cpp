//===- LoadScalarOperands.cpp - est-load-scalar-operands ------------------===//
//
// A rank-0 buffer read by a linalg.generic on buffers (Adam's step size, a
// loss scale) is loaded once before the op and passed as a scalar operand.
// Left as a buffer, the loops read it at every iteration, and because it
// usually lives in the same arena as the op's output, LLVM's vectorizer
// cannot prove the loads independent of the stores and keeps the loop scalar
// (Adam's update of every variable, in the training step).
//
// Reading the value before the op is what the op means (its inputs are
// values); it differs from the loops only if the op wrote the scalar's
// bytes, which an op on values never does.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTLOADSCALAROPERANDS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

struct EstLoadScalarOperands
    : public mlir::est::impl::EstLoadScalarOperandsBase<EstLoadScalarOperands> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      for (OpOperand *input : op.getDpsInputOperands()) {
        auto type = dyn_cast<MemRefType>(input->get().getType());
        if (!type || type.getRank() != 0)
          continue;
        OpBuilder b(op);
        Value scalar =
            memref::LoadOp::create(b, op.getLoc(), input->get(), ValueRange{});
        input->set(scalar);
      }
    });
  }
};

} // namespace
