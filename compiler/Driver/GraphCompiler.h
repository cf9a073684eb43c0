//===- GraphCompiler.h - Graph to native code, as a library -------------===//
//
// What `estc` does, callable in process: import a model graph, run the
// pipeline (compiler/Pipelines) to the LLVM dialect, and hand the result to
// the JIT (compiler/Target/Jit.h) or the object emitter. The Estimator's JIT
// path and the tests use this; the estc driver uses the same functions.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_DRIVER_GRAPHCOMPILER_H
#define ESTC_COMPILER_DRIVER_GRAPHCOMPILER_H

#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Target/Jit.h"
#include "compiler/Target/Manifest.h"
#include "compiler/Target/ObjectEmitter.h"
#include "lib/Graph/graph.pb.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace estc {

/// Receives the driver's warnings (one line each, without "estc: warning:").
using WarningHandler = llvm::function_ref<void(llvm::StringRef)>;

/// Runs the pipeline stages up to `last` for the target in `options`. The
/// first error is one line naming `what` (the input file) and the op at
/// fault. `applyCLOptions`: also apply the pass-manager command-line options
/// (--mlir-print-ir-after-all, ...), for tools that registered them. CUDA's
/// last stage first checks the toolkit (one line naming the path). The
/// module is verified once at the end, or after every pass with
/// `verifyEachPass` and in builds with assertions (compile time: the
/// verifier after every pass costs as much as the passes themselves).
llvm::Error runStages(mlir::ModuleOp module, Stage last, llvm::StringRef what,
                      bool applyCLOptions = false,
                      const PipelineOptions &options = {},
                      bool verifyEachPass = false);

/// Compiles `module` without run-time checks (est-insert-runtime-checks
/// erases them; gather and scatter clamp their indices instead).
void disableRuntimeChecks(mlir::ModuleOp module);
/// Compiles the module's training step for `replicas` data-parallel
/// replicas (the `estc.replicas` attribute est-insert-collectives reads);
/// nothing for replicas <= 1.
void setReplicas(mlir::ModuleOp module, int replicas);

/// Compiles the module for parameter-server training with `tasks` ps tasks
/// (the `estc.ps_tasks` / `estc.ps_task` attributes est-ps-worker and
/// est-ps-task read): a worker's step for `task` -1, else that task's apply
/// function; nothing for tasks <= 0. `strategy` (`estc.ps_strategy`): ""
/// round robin, "greedy" by bytes.
void setParameterServers(mlir::ModuleOp module, int tasks, int task,
                         llvm::StringRef strategy = "");

/// Drops @train while it holds est.minimize (the training pass expands it;
/// until then @train cannot be lowered), with one warning.
void dropUncompilableTrain(mlir::ModuleOp module, WarningHandler warn);

/// Runs the stages through `autodiff`, applies the @train rule above, and
/// extracts the manifest (attached to the module as `estc.manifest`): what
/// the header needs, before any lowering. `applyCLOptions` and
/// `verifyEachPass` as for runStages.
llvm::Expected<Manifest>
prepareForLowering(mlir::ModuleOp module, llvm::StringRef modelName,
                   llvm::StringRef what, WarningHandler warn,
                   bool applyCLOptions = false, bool verifyEachPass = false);

/// Lowers an imported module to the LLVM dialect: the est stage, the @train
/// rule above, the manifest (extracted before lowering, arena sizes read
/// after; its device and GPU architecture from `options`), then every
/// remaining stage for the target in `options`. On failure, the error is
/// one line naming `what` (the input file) and the op at fault. `timer`:
/// the phases est (through autodiff) and lower are timed there.
llvm::Expected<Manifest> lowerToLLVMDialect(mlir::ModuleOp module,
                                            llvm::StringRef modelName,
                                            llvm::StringRef what,
                                            WarningHandler warn,
                                            const PipelineOptions &options = {},
                                            CompileTimer *timer = nullptr);

/// Sets the manifest's device fields for the target in `options`, in
/// `manifest` and in the module's `estc.manifest`.
void setManifestDevice(mlir::ModuleOp module, Manifest &manifest,
                       const PipelineOptions &options);

/// A graph compiled ahead of time in process: a position-independent
/// object defining `<modelName>_<f>` and `<modelName>_<f>_packed` for every
/// function of the manifest, the manifest (with arena sizes) and the
/// target it was generated for. What an export links into its shared
/// library.
struct CompiledObject {
  std::string object;
  Manifest manifest;
  TargetDescription target;
};

/// Imports, lowers and compiles `graph` for `target` (`runtimeChecks`:
/// keep the run-time checks); only the functions named in `functions` when
/// it is not empty (the others are left out of the manifest and the code).
/// LLVM's optimizer runs on compileThreadCount(0) threads
/// (SplitCodegen.h). `timer`: every phase, import to codegen, is timed
/// there.
llvm::Expected<CompiledObject>
compileGraphToObject(const graph::GraphDef &graph, llvm::StringRef modelName,
                     const TargetOptions &target, bool runtimeChecks,
                     llvm::ArrayRef<std::string> functions, WarningHandler warn,
                     CompileTimer *timer = nullptr);

/// Imports, lowers and JIT-compiles a graph for the JIT's target (CPU or
/// CUDA); cached on disk by the graph's (deterministic) bytes, so an
/// unchanged graph is compiled once. The JIT's timer (JitOptions::timer)
/// times every phase, import to load.
llvm::Expected<std::unique_ptr<JitModel>>
jitCompileGraph(JitCompiler &jit, const graph::GraphDef &graph,
                llvm::StringRef modelName, WarningHandler warn);

} // namespace estc

#endif // ESTC_COMPILER_DRIVER_GRAPHCOMPILER_H
