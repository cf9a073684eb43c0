//===- GpuMergeKernelModules.cpp - est-gpu-merge-kernel-modules ---------===//
//
// gpu-kernel-outlining gives every kernel a gpu.module of its own; a
// ConvNet's step has about a hundred. Each module becomes its own
// ptxas/fatbinary run at compile time and its own image to load at run
// time, so this pass moves every kernel (and what it references: the
// constant globals outlining copied in) into one module, `estc_kernels`,
// and points every gpu.launch_func at it: one ptxas run per model.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTGPUMERGEKERNELMODULES
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kMergedName = "estc_kernels";

struct EstGpuMergeKernelModules
    : public est::impl::EstGpuMergeKernelModulesBase<EstGpuMergeKernelModules> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(
        module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.size() < 2)
      return;
    if (SymbolTable::lookupSymbolIn(module, kMergedName)) {
      module.emitError("est-gpu-merge-kernel-modules: the module already has "
                       "a symbol '")
          << kMergedName << "'";
      return signalPassFailure();
    }
    OpBuilder b(kernelModules.front());
    auto merged = gpu::GPUModuleOp::create(b, kernelModules.front().getLoc(),
                                           kMergedName);
    SymbolTable mergedSymbols(merged);
    // Outlining names a kernel after its function (`train_kernel` in
    // modules `train_kernel`, `train_kernel_0`, ...); the module names are
    // unique, so each kernel takes its module's name (with its own after
    // it when a module holds several).
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp kernels : kernelModules) {
      SmallVector<gpu::GPUFuncOp> funcs(kernels.getOps<gpu::GPUFuncOp>());
      for (gpu::GPUFuncOp func : funcs) {
        StringAttr name =
            funcs.size() == 1
                ? kernels.getSymNameAttr()
                : b.getStringAttr(kernels.getSymName() + "__" + func.getName());
        renamed[std::make_pair(kernels.getSymNameAttr(), func.getNameAttr())] =
            name;
        func.setName(name);
      }
      for (Operation &op :
           llvm::make_early_inc_range(kernels.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (symbol) {
          Operation *existing = mergedSymbols.lookup(symbol.getName());
          if (existing) {
            // The same constant global copied into several kernels'
            // modules: one copy serves them all.
            if (isa<gpu::GPUFuncOp>(op) ||
                !OperationEquivalence::isEquivalentTo(
                    existing, &op, OperationEquivalence::ignoreValueEquivalence,
                    nullptr, OperationEquivalence::IgnoreLocations)) {
              op.emitError("est-gpu-merge-kernel-modules: two kernel "
                           "modules define '")
                  << symbol.getName() << "' differently";
              return signalPassFailure();
            }
            continue;
          }
        }
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        if (symbol)
          mergedSymbols.insert(&op);
      }
    }
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamed.find(
          std::make_pair(launch.getKernelModuleName(), launch.getKernelName()));
      if (it == renamed.end()) {
        launch.emitError("est-gpu-merge-kernel-modules: the launched kernel "
                         "is in no kernel module");
        return WalkResult::interrupt();
      }
      launch.setKernelAttr(SymbolRefAttr::get(
          b.getStringAttr(kMergedName), {FlatSymbolRefAttr::get(it->second)}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp kernels : kernelModules)
      kernels.erase();
  }
};

} // namespace
