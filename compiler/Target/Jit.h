//===- Jit.h - In-process compilation with an on-disk object cache --------===//
//
// The JIT runs the same back end as the AOT driver (ObjectEmitter.h: O2 for
// the host, position-independent object code), on one thread per core
// (SplitCodegen.h: the entry points in groups, an object per group), and
// loads the objects with ORC LLJIT. Objects are cached on disk under a content
// hash of
//
//   (the source: graph bytes or module text, the model name, the target
//    triple/CPU/features, the estc and LLVM versions)
//
// in $ESTC_CACHE_DIR, else ~/.cache/estc: `<hash>.o` (or `<hash>.a`, the
// objects of a model compiled in parts: SplitCodegen.h) and
// `<hash>.manifest.json`. A cache hit loads those two files and never calls
// the lowering callback, so the same graph is never compiled twice (the
// counters in JitStats say what happened).
//
//   estc::JitCompiler jit(estc::JitOptions{});
//   auto model = jit.compile(graphBytes, "Mlp", [&]() -> ... {
//     return estc::LoweredModule{std::move(llvmDialectModule), manifest};
//   });
//   (*model)->set_batch(32);
//   float *x = static_cast<float *>((*model)->input_data(f, 0)); ...
//   (*model)->run("predict");
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_JIT_H
#define ESTC_COMPILER_TARGET_JIT_H

#include "compiler/Target/Manifest.h"
#include "compiler/Target/ObjectEmitter.h"
#include "compiler/Target/SplitCodegen.h"
#include "runtime/CompiledModel.h"

#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/FunctionExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace estc {

struct JitOptions {
  TargetOptions target; // default: the host CPU
  /// Where objects are cached; empty: $ESTC_CACHE_DIR, else ~/.cache/estc.
  std::string cacheDir;
  bool useCache = true;
  /// Compile the run-time checks of labels and indices (estc
  /// --runtime-checks); off: out-of-range ids are clamped, labels unchecked.
  bool runtimeChecks = true;
  /// Also compile `train_loop` (Manifest's addStepLoop; RunConfig::
  /// iterations_per_loop) when the model has a `train` function with dense
  /// inputs only; without one the model is compiled as it is.
  bool trainLoop = false;
  /// Compile the training step for this many data-parallel replicas (estc
  /// --replicas; RunConfig's train_distribute): its gradients are averaged
  /// over them before the optimizer update. 0 or 1: one replica.
  int replicas = 0;
  /// Compile for parameter-server training with this many ps tasks
  /// (RunConfig's cluster): the training step of a worker (psTask -1:
  /// est-ps-worker) or task psTask's apply function (est-ps-task). 0: no
  /// parameter servers.
  int psTasks = 0;
  int psTask = -1;
  /// How the variables are placed on the ps tasks (RunConfig's
  /// ps_strategy): "" round robin, "greedy" by bytes (TF's
  /// GreedyLoadBalancingStrategy with byte_size_load_fn).
  std::string psStrategy{};
  /// Where a compile's phases are timed (CompileTimer.h); null: not timed.
  /// The lowering callback may time its own phases there too.
  CompileTimer *timer = nullptr;
  /// Threads the back end may use (SplitCodegen.h: the entry points in
  /// groups, an object each); 0: $ESTC_COMPILE_THREADS, else one per core
  /// the process may run on.
  unsigned compileThreads = 0;
};

/// What the lowering callback returns: the LLVM-dialect module and the
/// manifest extracted before lowering (arena sizes filled in or not; they
/// are read from the module's `estc.arena`).
struct LoweredModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  Manifest manifest;
};

struct JitStats {
  int codegenRuns = 0; // lowering + translation + optimization + codegen
  int cacheHits = 0;
  int cacheStores = 0;
};

/// A model compiled in process: a CompiledModel whose entry points live in
/// its own LLJIT instance.
class JitModel : public rt::CompiledModel {
public:
  ~JitModel() override;
  const Manifest &manifest() const { return manifest_; }
  /// The typed C interface of `function` (`<Name>_<function>`), or null.
  void *lookupCInterface(llvm::StringRef function) const;
  /// The packed entry point `void(void **)` of `function`, or null.
  rt::EntryPoint lookupPacked(llvm::StringRef function) const;

private:
  friend class JitCompiler;
  struct Parts;
  JitModel(std::unique_ptr<Parts> parts, const rt::ModelSpec &spec,
           const rt::EntryPoint *entries);
  std::unique_ptr<Parts> parts_;
  Manifest &manifest_;
};

class JitCompiler {
public:
  explicit JitCompiler(JitOptions options = {});
  ~JitCompiler();

  using Lower = llvm::unique_function<llvm::Expected<LoweredModule>()>;

  /// The model for `source`, from the cache or by calling `lower` and
  /// compiling its result. `modelName` names the entry points.
  llvm::Expected<std::unique_ptr<JitModel>>
  compile(llvm::StringRef source, llvm::StringRef modelName, Lower lower);

  /// The cache key of `source` (hex SHA-256), for tests and tools: the
  /// graph, the model name, the target, estc's and LLVM's versions and
  /// ESTC_COMPILER_FINGERPRINT (a hash of the compiler's sources,
  /// cmake/CompilerFingerprint.cmake).
  llvm::Expected<std::string> cacheKey(llvm::StringRef source,
                                       llvm::StringRef modelName) const;
  /// The directory objects are cached in.
  const std::string &cacheDir() const { return cacheDir_; }
  const JitStats &stats() const { return stats_; }
  const JitOptions &options() const { return options_; }

private:
  JitOptions options_;
  std::string cacheDir_;
  JitStats stats_;
};

} // namespace estc

#endif // ESTC_COMPILER_TARGET_JIT_H
