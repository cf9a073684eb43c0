//===- Jit.cpp - In-process compilation with an on-disk object cache ------===//

#include "compiler/Target/Jit.h"
#include "compiler/Target/TargetError.h"

#include "CompilerFingerprint.h" // generated: ESTC_COMPILER_FINGERPRINT

#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

#ifndef ESTC_VERSION
#define ESTC_VERSION "unknown"
#endif

namespace estc {

using detail::error;

namespace {

std::string defaultCacheDir() {
  if (const char *dir = std::getenv("ESTC_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> home;
  if (!llvm::sys::path::home_directory(home))
    return ".estc-cache";
  llvm::sys::path::append(home, ".cache", "estc");
  return std::string(home);
}

/// Writes `contents` to `path` through a temporary file and a rename, so a
/// concurrent reader never sees half a file.
bool writeAtomically(const std::string &path, llvm::StringRef contents) {
  std::string tmp =
      path + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return false;
    os << contents;
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return false;
    }
  }
  if (llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

std::optional<std::string> readFile(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

} // namespace

struct JitModel::Parts {
  ~Parts() {
    // A CUDA model's kernels are unloaded before its code goes.
    if (finalize)
      finalize();
  }
  std::unique_ptr<llvm::orc::LLJIT> jit;
  void (*finalize)() = nullptr;
  Manifest manifest;
  std::shared_ptr<ModelSpecStorage> storage;
  rt::ModelSpec spec;
  std::vector<rt::EntryPoint> entries;
  std::vector<void *> cInterfaces;
};

JitModel::JitModel(std::unique_ptr<Parts> parts, const rt::ModelSpec &spec,
                   const rt::EntryPoint *entries)
    : CompiledModel(spec, entries), parts_(std::move(parts)),
      manifest_(parts_->manifest) {}

JitModel::~JitModel() = default;

void *JitModel::lookupCInterface(llvm::StringRef function) const {
  for (size_t i = 0; i < manifest_.functions.size(); ++i)
    if (manifest_.functions[i].name == function)
      return parts_->cInterfaces[i];
  return nullptr;
}

rt::EntryPoint JitModel::lookupPacked(llvm::StringRef function) const {
  for (size_t i = 0; i < manifest_.functions.size(); ++i)
    if (manifest_.functions[i].name == function)
      return parts_->entries[i];
  return nullptr;
}

JitCompiler::JitCompiler(JitOptions options) : options_(std::move(options)) {
  cacheDir_ = options_.cacheDir.empty() ? defaultCacheDir() : options_.cacheDir;
}

JitCompiler::~JitCompiler() = default;

llvm::Expected<std::string>
JitCompiler::cacheKey(llvm::StringRef source, llvm::StringRef modelName) const {
  // Validates the target as a side effect: a bad --mcpu fails here.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options_.target);
  if (!machine)
    return machine.takeError();
  llvm::SHA256 hash;
  auto field = [&](llvm::StringRef s) {
    hash.update(std::to_string(s.size()));
    hash.update(":");
    hash.update(s);
  };
  field("estc-jit-cache-2");
  field(ESTC_VERSION);
  field(ESTC_COMPILER_FINGERPRINT);
  field(LLVM_VERSION_STRING);
  field(options_.target.describe());
  field(options_.runtimeChecks ? "runtime-checks" : "no-runtime-checks");
  field(options_.trainLoop ? "train-loop" : "no-train-loop");
  field("replicas=" +
        std::to_string(options_.replicas > 1 ? options_.replicas : 0));
  if (options_.psTasks > 0)
    field("ps=" + std::to_string(options_.psTasks) + "/" +
          std::to_string(options_.psTask) +
          (options_.psStrategy.empty() ? "" : "/" + options_.psStrategy));
  field(modelName);
  field(source);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

llvm::Expected<std::unique_ptr<JitModel>>
JitCompiler::compile(llvm::StringRef source, llvm::StringRef modelName,
                     Lower lower) {
  llvm::Expected<std::string> key = cacheKey(source, modelName);
  if (!key)
    return key.takeError();
  llvm::Expected<unsigned> threads =
      compileThreadCount(options_.compileThreads);
  if (!threads)
    return threads.takeError();
  llvm::SmallString<256> objectPath(cacheDir_), archivePath(cacheDir_),
      manifestPath(cacheDir_);
  llvm::sys::path::append(objectPath, *key + ".o");
  llvm::sys::path::append(archivePath, *key + ".a");
  llvm::sys::path::append(manifestPath, *key + ".manifest.json");

  std::vector<std::string> objects;
  std::optional<Manifest> manifest;
  if (options_.useCache) {
    std::optional<std::string> cachedManifest =
        readFile(std::string(manifestPath));
    std::optional<std::vector<std::string>> cachedObjects;
    if (std::optional<std::string> object = readFile(std::string(objectPath)))
      cachedObjects = std::vector<std::string>{std::move(*object)};
    else if (std::optional<std::string> archive =
                 readFile(std::string(archivePath))) {
      llvm::Expected<std::vector<std::string>> members =
          unarchiveObjects(*archive);
      if (members)
        cachedObjects = std::move(*members);
      else
        llvm::consumeError(members.takeError()); // damaged: compile again
    }
    if (cachedObjects && cachedManifest) {
      llvm::Expected<Manifest> parsed = manifestFromJson(*cachedManifest);
      if (parsed) {
        objects = std::move(*cachedObjects);
        manifest = std::move(*parsed);
        ++stats_.cacheHits;
      } else {
        llvm::consumeError(parsed.takeError()); // stale: compile again
      }
    }
  }

  if (!manifest) {
    llvm::Expected<LoweredModule> lowered = lower();
    if (!lowered)
      return lowered.takeError();
    Manifest m = std::move(lowered->manifest);
    m.name = modelName.str();
    if (llvm::Error e = readArenaSizes(*lowered->module, m))
      return e;
    if (options_.trainLoop && m.findFunction("train") &&
        options_.target.device == Device::Cpu) {
      // A sparse input makes it fail: such a model has no train_loop, and
      // its caller (the Estimator) runs the loop's steps one call each.
      llvm::consumeError(addStepLoop(m, "train"));
      // The translation builds the loops the module's manifest lists.
      lowered->module->getOperation()->setAttr(
          "estc.manifest",
          mlir::StringAttr::get(lowered->module->getContext(), toJson(m)));
    }
    std::vector<std::string> functions;
    for (const FunctionInfo &f : m.functions)
      functions.push_back(f.name);
    // ORC runs no constructors of an object file: a CUDA model's kernel
    // loading is called explicitly below.
    llvm::Expected<std::vector<std::string>> code = compileModuleInParts(
        *lowered->module, modelName, functions, options_.target, *threads,
        /*exportInitializers=*/options_.target.device == Device::Cuda,
        options_.timer);
    if (!code)
      return code.takeError();
    ++stats_.codegenRuns;
    objects = std::move(*code);
    manifest = std::move(m);
    if (options_.useCache) {
      // A cache that cannot be written only costs time, not correctness.
      bool stored = false;
      if (!llvm::sys::fs::create_directories(cacheDir_)) {
        if (objects.size() == 1) {
          stored = writeAtomically(std::string(objectPath), objects[0]);
        } else if (llvm::Expected<std::string> archive =
                       archiveObjects(*key, objects)) {
          stored = writeAtomically(std::string(archivePath), *archive);
        } else {
          llvm::consumeError(archive.takeError());
        }
      }
      if (stored &&
          writeAtomically(std::string(manifestPath), toJson(*manifest)))
        ++stats_.cacheStores;
    }
  }

  // Load the objects into their own LLJIT; runtime kernels and libc resolve
  // from the process.
  CompileTimer::Scope loading(options_.timer, "load");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto parts = std::make_unique<JitModel::Parts>();
  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
      llvm::orc::LLJITBuilder().create();
  if (!jit)
    return error("JIT: " + llvm::toString(jit.takeError()));
  parts->jit = std::move(*jit);
  auto generator =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          parts->jit->getDataLayout().getGlobalPrefix());
  if (!generator)
    return error("JIT: " + llvm::toString(generator.takeError()));
  parts->jit->getMainJITDylib().addGenerator(std::move(*generator));
  for (size_t i = 0; i < objects.size(); ++i)
    if (llvm::Error e =
            parts->jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
                objects[i], *key + "." + std::to_string(i) + ".o")))
      return error("JIT: " + llvm::toString(std::move(e)));
  parts->manifest = std::move(*manifest);
  if (parts->manifest.device == rt::Device::Cuda) {
    // The constructors (the kernels' mgpuModuleLoad) and destructors.
    auto init = parts->jit->lookup(initializerSymbol(modelName));
    if (!init)
      return error("JIT: " + llvm::toString(init.takeError()));
    auto fini = parts->jit->lookup(finalizerSymbol(modelName));
    if (!fini)
      return error("JIT: " + llvm::toString(fini.takeError()));
    init->toPtr<void (*)()>()();
    parts->finalize = fini->toPtr<void (*)()>();
  }
  for (const FunctionInfo &f : parts->manifest.functions) {
    auto packed = parts->jit->lookup(packedEntrySymbol(modelName, f.name));
    if (!packed)
      return error("JIT: @" + f.name + ": " +
                   llvm::toString(packed.takeError()));
    auto typed = parts->jit->lookup(entrySymbol(modelName, f.name));
    if (!typed)
      return error("JIT: @" + f.name + ": " +
                   llvm::toString(typed.takeError()));
    parts->entries.push_back(packed->toPtr<rt::EntryPoint>());
    parts->cInterfaces.push_back(typed->toPtr<void *>());
  }
  parts->spec = toModelSpec(parts->manifest, parts->storage);
  const rt::ModelSpec &spec = parts->spec;
  const rt::EntryPoint *entries = parts->entries.data();
  return std::unique_ptr<JitModel>(
      new JitModel(std::move(parts), spec, entries));
}

} // namespace estc
