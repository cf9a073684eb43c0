//===- Pipelines.h - The estc compilation pipeline, stage by stage ------===//
//
// The pipeline from an imported `est` module to native code, as named stages
// (like onnx-mlir's add*Passes functions and IREE's --compile-to phases).
// Each stage is a short list of passes; the driver can stop after any stage
// and print the module (`estc --compile-to=<stage> --emit=mlir`).
//
//   import     the module as the importer built it (no passes)
//   est        shape inference, canonicalization, CSE, dead-code elimination
//   autodiff   est.minimize to gradients (est-autodiff) and optimizer
//              updates with slot variables (est-expand-optimizers)
//   decompose  composite est ops (softmax, cross-entropies, ...) to primitives
//   linalg     est to linalg / tensor / arith / math on tensors
//   fusion     elementwise and reduction fusion on linalg
//   bufferize  function ABI (variables, inputs, outputs as buffers),
//              one-shot bufferization, matmul/conv to runtime kernel calls,
//              bias + activation epilogues fused into those calls
//   memplan    every temporary of a step in one arena, by liveness
//   llvm       loops, then the LLVM dialect
//
// For CUDA (PipelineOptions::device, docs/design/gpu.md) bufferize calls
// the estc_cuda_* kernels and fuses no epilogue, and the last stage is
// `gpu`: every loop nest a GPU kernel, the host code in the LLVM dialect,
// the kernels serialized (cubin + PTX). Stage::LLVM names "the last stage"
// on either device.
//
// Each stage is also a registered pass pipeline, `--estc-<stage>-stage`
// (registerStagePipelines); `--estc-gpu-stage` is CUDA's last stage.
//
// After `llvm` the module is translated to LLVM IR and compiled to object
// code (compiler/Target). See docs/architecture.md.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_PIPELINES_PIPELINES_H
#define ESTC_COMPILER_PIPELINES_PIPELINES_H

#include "lib/Support/Device.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdlib>
#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace estc {

enum class Stage {
  Import,
  Est,
  Autodiff,
  Decompose,
  Linalg,
  Fusion,
  Bufferize,
  MemPlan,
  LLVM,
};

/// What the compiled code runs on: lib/Support/Device.h (the runtime's
/// rt::Device too).
using ::estc::Device;

/// "cpu", "cuda".
llvm::StringRef deviceName(Device device);
std::optional<Device> parseDevice(llvm::StringRef name);

/// The GPU architectures the CUDA target accepts (gpu.md).
llvm::ArrayRef<llvm::StringRef> supportedGpuArchs();
/// One line when `arch` is not one of supportedGpuArchs() ("--gpu-arch=sm_75:
/// unsupported GPU architecture (one of sm_80, ...)"); empty when it is.
std::string checkGpuArch(llvm::StringRef arch);

/// The CUDA toolkit holding ptxas and fatbinary: $ESTC_CUDA_PATH, else
/// /usr/local/cuda.
inline std::string defaultCudaPath() {
  const char *path = std::getenv("ESTC_CUDA_PATH");
  return path && *path ? std::string(path) : std::string("/usr/local/cuda");
}

/// One line when `cudaPath` has no bin/ptxas or bin/fatbinary ("CUDA
/// toolkit not found: /opt/cuda/bin/ptxas does not exist (set
/// ESTC_CUDA_PATH)"); empty when it has both.
std::string checkCudaToolkit(llvm::StringRef cudaPath);

/// What the stages need to know about the target.
struct PipelineOptions {
  Device device = Device::Cpu;
  /// CUDA: the kernels' architecture (checkGpuArch).
  std::string gpuArch = "sm_90";
  /// CUDA: the toolkit (ptxas, fatbinary, libdevice); empty: defaultCudaPath.
  std::string cudaPath;
  /// CUDA: gpu-module-to-binary's format: "fatbin" (cubin + PTX, what runs)
  /// or "isa" (PTX text, for estc --emit=ptx).
  std::string gpuFormat = "fatbin";
};

/// "import", "est", ...; the last stage is "gpu" on CUDA.
llvm::StringRef stageName(Stage stage, Device device = Device::Cpu);
/// Also accepts "gpu" for the last stage.
std::optional<Stage> parseStage(llvm::StringRef name);
/// Comma-separated names of every stage, for help and error messages.
std::string allStageNames();

// One function per stage: the passes that stage adds.
void addEstOptimizationPasses(mlir::OpPassManager &pm);
void addAutodiffPasses(mlir::OpPassManager &pm);
void addDecompositionPasses(mlir::OpPassManager &pm);
void addLinalgLoweringPasses(mlir::OpPassManager &pm);
void addFusionPasses(mlir::OpPassManager &pm);
void addBufferizationPasses(mlir::OpPassManager &pm,
                            const PipelineOptions &options = {});
void addMemoryPlanningPasses(mlir::OpPassManager &pm);
void addLLVMLoweringPasses(mlir::OpPassManager &pm);
/// CUDA's last stage: kernels for the loops, then the LLVM dialect with the
/// kernels serialized in gpu.binary ops.
void addGpuLoweringPasses(mlir::OpPassManager &pm,
                          const PipelineOptions &options);

/// Adds every stage's passes up to and including `last`, for the target in
/// `options` (the CPU's by default).
void buildPipeline(mlir::OpPassManager &pm, Stage last,
                   const PipelineOptions &options = {});

/// "estc-<stage>-stage": the name of the stage's registered pass pipeline.
std::string stagePipelineName(Stage stage, Device device = Device::Cpu);
/// Registers every stage after import as a pass pipeline named
/// stagePipelineName(stage), built by the stage's add*Passes function, so
/// estc-opt and the lit tests run the very stages estc runs
/// (`estc-opt --estc-llvm-stage`). Each takes the options `device=cpu|cuda`,
/// `gpu-arch`, `cuda-path` and `format` (`--estc-bufferize-stage=device=cuda`);
/// `--estc-gpu-stage` is the last stage for CUDA.
void registerStagePipelines();

} // namespace estc

#endif // ESTC_COMPILER_PIPELINES_PIPELINES_H
