//===- ObjectEmitter.h - LLVM dialect to native code ----------------------===//
//
// The back end shared by the AOT driver and the JIT:
//
//   LLVM-dialect module --translateModuleToLLVMIR--> llvm::Module
//     --prepareEntryPoints--> `_mlir_ciface_f` renamed to `<Name>_f`, a
//                             packed `<Name>_f_packed(void **)` added, every
//                             other definition internal (so several models
//                             link into one binary)
//     --optimizeModule--> O2 with the target's TargetMachine (the loop and
//                         SLP vectorizers see the real vector width)
//     --emitCode--> `.s` text or `.o` bytes (position independent)
//
// For CUDA (TargetOptions::device) the module comes from the gpu stage: the
// host code is compiled as above, the kernels are already serialized in
// gpu.binary ops, which the translation embeds with the global constructors
// that load them (docs/design/gpu.md).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_OBJECTEMITTER_H
#define ESTC_COMPILER_TARGET_OBJECTEMITTER_H

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Target/CompileTimer.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace estc {

/// What to generate code for. "native" = the host CPU and all its features.
/// On CUDA the host code (entry points, launches) is still compiled for
/// `cpu` / `features`.
struct TargetOptions {
  std::string cpu = "native";
  std::string features; // "+avx2,-avx512f", added to the CPU's
  std::string triple;   // empty = the host triple
  Device device = Device::Cpu;
  /// CUDA: the kernels' architecture (checkGpuArch: sm_80 ... sm_100).
  std::string gpuArch = "sm_90";
  /// CUDA: the toolkit holding ptxas and fatbinary.
  std::string cudaPath = defaultCudaPath();

  /// "x86_64-pc-linux-gnu/skylake-avx512/+avx2,..." after resolving
  /// "native", then "/cuda/sm_90" on CUDA: part of the JIT cache key.
  std::string describe() const;
  /// The pipeline's view of the target.
  PipelineOptions pipelineOptions() const;
};

/// The target's resolved triple, CPU and every CPU feature enabled for it
/// (LLVM's names, sorted): what an exported model records so a loader can
/// refuse a CPU without them. Errors as createTargetMachine's.
struct TargetDescription {
  std::string triple;
  std::string cpu;
  std::vector<std::string> features;
};
llvm::Expected<TargetDescription> describeTarget(const TargetOptions &options);

/// Resolves "native", checks the CPU and features against the target (one
/// line: "--mcpu=bogus: unknown CPU for x86_64-pc-linux-gnu (...)") and, on
/// CUDA, the GPU architecture and the toolkit ("--gpu-arch=sm_75: ...",
/// "CUDA toolkit not found: /opt/cuda/bin/ptxas does not exist (...)").
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options);

/// Translates an LLVM-dialect module to LLVM IR, with the multi-step loops
/// (StepLoops.h) of the manifest in its `estc.manifest` attribute. The
/// functions' `est.*` argument attributes (the ABI's names, which the manifest
/// already holds) are dropped from `module` first.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context);

/// Renames each `_mlir_ciface_<f>` of `functions` to entrySymbol(model, f),
/// adds its packed form, and makes every other definition internal (the
/// global constructor and destructor lists excepted: a CUDA model's load
/// its kernels). `exportInitializers` (the JIT, whose object loader runs
/// no constructors): the constructors and destructors are instead called by
/// `initializerSymbol(model)` / `finalizerSymbol(model)`, which the loader
/// calls.
llvm::Error prepareEntryPoints(llvm::Module &module, llvm::StringRef model,
                               llvm::ArrayRef<std::string> functions,
                               bool exportInitializers = false);

/// "<model>__estc_init" and "<model>__estc_fini": defined by an object
/// compiled with exportInitializers when the module has constructors.
std::string initializerSymbol(llvm::StringRef model);
std::string finalizerSymbol(llvm::StringRef model);

/// The functions that have a `_mlir_ciface_` entry point, in module order.
std::vector<std::string> cInterfaceFunctions(llvm::Module &module);

/// Sets the data layout, triple and per-function CPU/features of the target,
/// then runs the O2 pipeline.
llvm::Error optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

enum class CodeKind { LLVMIR, Assembly, Object };
/// Native code for an optimized module.
llvm::Expected<std::string>
emitCode(llvm::Module &module, llvm::TargetMachine &machine, CodeKind kind);

/// The whole back end: translate, prepare the entry points of `functions`
/// for model `model`, optimize for `target`, emit `kind` (LLVMIR: the
/// optimized IR as text). What both `estc --emit=...` and the JIT run.
/// `timer`: the phases translate, optimize and codegen are timed there.
llvm::Expected<std::string>
compileModule(mlir::ModuleOp module, llvm::StringRef model,
              llvm::ArrayRef<std::string> functions,
              const TargetOptions &target, CodeKind kind,
              bool exportInitializers = false, CompileTimer *timer = nullptr);

/// The PTX of every kernel of a module lowered by the gpu stage with
/// format "isa" (PipelineOptions::gpuFormat): each gpu.binary's text,
/// headed by a comment naming it.
llvm::Expected<std::string> kernelAssembly(mlir::ModuleOp module);

/// A static library (ar, GNU format) holding one object `memberName`.
llvm::Expected<std::string> makeStaticLibrary(llvm::StringRef memberName,
                                              llvm::StringRef object);

} // namespace estc

#endif // ESTC_COMPILER_TARGET_OBJECTEMITTER_H
