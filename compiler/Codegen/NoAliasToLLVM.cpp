//===- NoAliasToLLVM.cpp - est-noalias-to-llvm ----------------------------===//
//
// func-to-llvm expands a memref argument into its descriptor's fields and
// drops `llvm.noalias` on it. est-outline-loop-nests records which of the
// expanded arguments are the pointers of distinct buffers
// (`estc.noalias_args`, LLVM argument positions); this pass, run after
// func-to-llvm, marks them `llvm.noalias` and drops the record.
//
// Loop annotations take a similar detour: scf-to-cf copies an scf.for's
// `llvm.loop_annotation` to its latch branch as a discardable attribute,
// which the translation to LLVM IR ignores; it becomes the branch's
// `loop_annotation` here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTNOALIASTOLLVM
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

constexpr StringLiteral kLoopAnnotation = "llvm.loop_annotation";

struct EstNoAliasToLLVM
    : public mlir::est::impl::EstNoAliasToLLVMBase<EstNoAliasToLLVM> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto positions =
          func->getAttrOfType<DenseI64ArrayAttr>(est::kNoAliasArgsAttr);
      if (!positions)
        return WalkResult::advance();
      func->removeAttr(est::kNoAliasArgsAttr);
      for (int64_t position : positions.asArrayRef()) {
        if (position < 0 || position >= func.getNumArguments() ||
            !isa<LLVM::LLVMPointerType>(func.getArgument(position).getType())) {
          func.emitError("est-noalias-to-llvm: argument ")
              << position << " of @" << func.getSymName()
              << " is not a pointer (was func-to-llvm's calling convention "
                 "changed?)";
          return WalkResult::interrupt();
        }
        func.setArgAttr(position, LLVM::LLVMDialect::getNoAliasAttrName(),
                        UnitAttr::get(func.getContext()));
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    getOperation().walk([](LLVM::BrOp br) {
      auto annotation =
          br->getAttrOfType<LLVM::LoopAnnotationAttr>(kLoopAnnotation);
      if (!annotation)
        return;
      br->removeAttr(kLoopAnnotation);
      br.setLoopAnnotationAttr(annotation);
    });
  }
};

} // namespace
