//===- StepLoops.h - Multi-step loops as compiled entry points ------------===//
//
// RunConfig::iterations_per_loop (TPUEstimator's) on the CPU: `train_loop`
// runs the compiled `train` step N times in one call, step i on row block i
// of inputs staged N batches deep (docs/design/codegen-abi.md, "Multi-step
// loops"). The loop is built in LLVM IR around the step's C interface, after
// translation and before optimization, so the optimizer sees (and may
// inline) the step inside it:
//
//   void _mlir_ciface_train_loop(arena, variables..., staged inputs...,
//                                outputs...) {
//     n = staged input 0's size 0
//     for (i = 0; i < n; ++i) {
//       input k = staged input k's row block i (a rank-1-lower descriptor)
//       _mlir_ciface_train(arena, variables..., inputs..., outputs...)
//       if (the status slot's first word != 0) { slot word 3 = i; return; }
//     }
//   }
//
// The outputs are written by every step: after the call they hold the last
// one's. A failed check stops the loop before that step's updates (the
// check runs before any, codegen-abi.md "Run-time checks").
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_STEPLOOPS_H
#define ESTC_COMPILER_TARGET_STEPLOOPS_H

#include "compiler/Target/Manifest.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace estc {

/// What building one loop needs to know of its step function.
struct StepLoop {
  std::string name; // "train_loop"
  std::string step; // "train"
  int32_t numVariables = 0;
  std::vector<int32_t> inputRanks; // the step's inputs (not staged)
  std::vector<int64_t> inputElementBytes;
  int32_t numOutputs = 0;
  int64_t statusOffset = -1; // -1: the step has no run-time checks
};

/// The loops of `manifest` (its functions with FunctionInfo::loopOf).
std::vector<StepLoop> stepLoops(const Manifest &manifest);

/// Defines `_mlir_ciface_<loop.name>` in `module` for each loop, around the
/// step's `_mlir_ciface_<loop.step>`. One error line when a step has no C
/// interface or its signature does not match the manifest.
llvm::Error buildStepLoops(llvm::Module &module,
                           llvm::ArrayRef<StepLoop> loops);

} // namespace estc

#endif // ESTC_COMPILER_TARGET_STEPLOOPS_H
