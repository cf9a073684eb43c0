//===- MemrefCopyToLinalg.cpp - est-memref-copy-to-linalg -----------------===//
//
// memref.copy of non-contiguous buffers lowers to a call to `memrefCopy` in
// MLIR's C runner library, which compiled models do not link; linalg.copy
// becomes loops like everything else. A copy of a buffer onto itself (what
// bufferization leaves of a loop's stack slot written in place, every
// step: docs/design/control-flow.md) is dropped.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTMEMREFCOPYTOLINALG
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

struct EstMemrefCopyToLinalg
    : public mlir::est::impl::EstMemrefCopyToLinalgBase<EstMemrefCopyToLinalg> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      if (copy.getSource() == copy.getTarget()) {
        copy.erase();
        continue;
      }
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
