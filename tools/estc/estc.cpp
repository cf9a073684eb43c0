//===- estc.cpp - The estc compiler driver ------------------------------===//
//
//   estc model.pb [--emit=mlir|llvm|asm|obj|lib|header|ptx]
//        [--compile-to=<stage>] [-o FILE|DIR] [--name NAME]
//        [--target=cpu|cuda] [--gpu-arch=sm_XX] [--mcpu=CPU]
//        [--mattr=FEATURES] [--train-loop]
//
// Reads a model graph (binary .pb or text .pbtxt) or an MLIR module (.mlir:
// `est` level, or already in the LLVM dialect), imports it into the `est`
// dialect, runs the pipeline and emits the result:
//
//   mlir    the module after --compile-to (default: the last stage)
//   llvm    optimized LLVM IR (text; -o FILE or stdout)
//   asm     native assembly (text; -o FILE or stdout)
//   obj     -o DIR (default .): NAME.o, NAME.h, NAME.manifest.json
//   lib     -o DIR: libNAME.a, NAME.h, NAME.manifest.json
//   header  -o DIR: NAME.h and NAME.manifest.json only (no code generation;
//           arena sizes 0)
//   ptx     --target=cuda: the PTX of every kernel (text; -o FILE or stdout)
//
// --target=cuda (docs/design/gpu.md) compiles the loops to GPU kernels for
// --gpu-arch (sm_90 by default) with the toolkit at $ESTC_CUDA_PATH, else
// /usr/local/cuda; the host code is still compiled for --mcpu/--mattr.
//
// --train-loop adds `train_loop`, RunConfig::iterations_per_loop's N
// training steps in one call (docs/design/codegen-abi.md, "Multi-step
// loops").
//
// The manifest (compiler/Target/Manifest.h) is read from the `est`-level
// module before lowering and attached to it as `estc.manifest` (JSON), so a
// module dumped with --compile-to=llvm can be compiled again on its own.
// Every user error is one line on stderr, "estc: error: ...": exit code 2 for
// a bad command line (as every estc program, lib/Support/Flags.h), 1 for a
// bad file or graph. --help lists estc's own options; the MLIR debugging
// flags (--mlir-print-ir-after-all, ...) work too (--help-hidden).
//
// Compile time: LLVM's optimizer runs on --compile-threads threads (the
// functions in groups, compiler/Target/SplitCodegen.h); --time-phases
// prints the wall and CPU seconds of each phase (import, est, lower,
// translate, split, optimize, link, codegen) to stderr; --mlir-timing
// breaks the MLIR passes down and --time-passes LLVM's.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Pipelines/Registration.h"
#include "compiler/Target/HeaderGenerator.h"
#include "compiler/Target/Manifest.h"
#include "compiler/Target/ObjectEmitter.h"
#include "compiler/Target/SplitCodegen.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Support/Flags.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace cl = llvm::cl;

namespace {

enum class Emit { MLIR, LLVM, Asm, Obj, Lib, Header, PTX };

cl::OptionCategory estcCategory("estc options");

/// The first bad --emit value, reported as one line by main (LLVM's parser
/// would print its own message).
std::string emitError;

/// --emit's parser: an unknown value names the valid ones.
struct EmitParser : cl::parser<Emit> {
  using cl::parser<Emit>::parser;
  bool parse(cl::Option &, llvm::StringRef, llvm::StringRef arg, Emit &value) {
    std::string names;
    for (const auto &v : Values) {
      if (v.Name == arg) {
        value = v.V.getValue();
        return false;
      }
      names += (names.empty() ? "" : ", ") + v.Name.str();
    }
    if (emitError.empty())
      emitError = "--emit=" + arg.str() + ": unknown output kind (one of " +
                  names + ")";
    return true;
  }
};

cl::opt<std::string> inputFile(cl::Positional,
                               cl::desc("<model graph: .pb, .pbtxt or .mlir>"),
                               cl::Required, cl::cat(estcCategory));

cl::opt<Emit, false, EmitParser> emit(
    "emit", cl::desc("What to produce (default: mlir)"),
    cl::values(clEnumValN(Emit::MLIR, "mlir",
                          "MLIR after the --compile-to stage"),
               clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR (-o FILE)"),
               clEnumValN(Emit::Asm, "asm", "native assembly (-o FILE)"),
               clEnumValN(Emit::Obj, "obj",
                          "NAME.o, NAME.h, NAME.manifest.json (-o DIR)"),
               clEnumValN(Emit::Lib, "lib",
                          "libNAME.a, NAME.h, NAME.manifest.json (-o DIR)"),
               clEnumValN(Emit::Header, "header",
                          "NAME.h and NAME.manifest.json only (-o DIR)"),
               clEnumValN(Emit::PTX, "ptx",
                          "--target=cuda: every kernel's PTX (-o FILE)")),
    cl::init(Emit::MLIR), cl::cat(estcCategory));

// Its help, which names the stages, is set in main.
cl::opt<std::string> compileTo("compile-to", cl::value_desc("stage"),
                               cl::init(""), cl::cat(estcCategory));

cl::opt<std::string> outputFile("o",
                                cl::desc("Output file (mlir, llvm, asm; "
                                         "default stdout) or directory (obj, "
                                         "lib, header; default .)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(estcCategory));

cl::opt<std::string>
    modelName("name",
              cl::desc("C++ class and symbol prefix of the compiled model "
                       "(default: Model)"),
              cl::value_desc("NAME"), cl::init("Model"), cl::cat(estcCategory));

cl::opt<std::string> target("target",
                            cl::desc("Code generation target: cpu (default) "
                                     "or cuda (GPU kernels; the host code for "
                                     "--mcpu)"),
                            cl::value_desc("cpu|cuda"), cl::init("cpu"),
                            cl::cat(estcCategory));

cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("With --target=cuda: the GPU architecture (default "
                     "sm_90; sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100)"),
            cl::value_desc("sm_XX"), cl::init(""), cl::cat(estcCategory));

cl::opt<std::string>
    mcpu("mcpu", cl::desc("Target CPU (default: native; x86-64-v2, ...)"),
         cl::value_desc("cpu"), cl::init("native"), cl::cat(estcCategory));

cl::opt<bool> runtimeChecks(
    "runtime-checks", cl::init(true),
    cl::desc("Check labels and indices at run time: a label or id out of "
             "range stops the step with an error (default true; false: ids "
             "are clamped, labels unchecked)"),
    cl::cat(estcCategory));
cl::opt<bool> timePhases(
    "time-phases", cl::init(false),
    cl::desc("Print the wall and CPU seconds of each compile phase to stderr "
             "(--mlir-timing: each MLIR pass; --time-passes: each LLVM pass)"),
    cl::cat(estcCategory));
cl::opt<unsigned> compileThreads(
    "compile-threads", cl::init(0),
    cl::desc("Threads LLVM's optimizer may use (the functions in groups, "
             "one per thread; default 0: $ESTC_COMPILE_THREADS, else one per "
             "core)"),
    cl::value_desc("N"), cl::cat(estcCategory));
cl::opt<bool> verifyEach(
    "verify-each", cl::init(false),
    cl::desc("Verify the module after every pass (default: once, after the "
             "last; with assertions: after every pass)"),
    cl::cat(estcCategory));
cl::opt<bool> trainLoop(
    "train-loop", cl::init(false),
    cl::desc("Also compile train_loop: N training steps in one call over N "
             "staged batches (RunConfig::iterations_per_loop; the CPU only, "
             "dense inputs only)"),
    cl::cat(estcCategory));
cl::opt<int> replicas(
    "replicas", cl::init(0),
    cl::desc("Compile the training step for N data-parallel replicas: its "
             "gradients and loss are averaged over them through the runtime's "
             "collectives (RunConfig's train_distribute; the CPU only)"),
    cl::value_desc("N"), cl::cat(estcCategory));
cl::opt<std::string> mattr("mattr",
                           cl::desc("Target features (+avx512f,-avx2,...)"),
                           cl::value_desc("features"), cl::init(""),
                           cl::cat(estcCategory));

/// A bad file or graph: one line, exit code 1.
int userError(const std::string &message) {
  llvm::errs() << "estc: error: " << message << "\n";
  return 1;
}

/// A bad command line: one line, exit code 2.
int flagError(const std::string &message) {
  userError(message);
  return estc::flags::kExitBadCommandLine;
}

const char *emitName(Emit kind) {
  switch (kind) {
  case Emit::MLIR:
    return "mlir";
  case Emit::LLVM:
    return "llvm";
  case Emit::Asm:
    return "asm";
  case Emit::Obj:
    return "obj";
  case Emit::Lib:
    return "lib";
  case Emit::Header:
    return "header";
  case Emit::PTX:
    return "ptx";
  }
  return "?";
}

bool isIdentifier(const std::string &s) {
  if (s.empty() ||
      !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

/// Whether `op` is ready for translation: in the LLVM dialect, or a CUDA
/// module's serialized kernels.
bool isTranslatable(mlir::Operation &op) {
  return llvm::isa<mlir::gpu::BinaryOp>(op) ||
         (op.getDialect() && op.getDialect()->getNamespace() == "llvm");
}

/// True when every op of the module is in the LLVM dialect (ready for
/// translation).
bool isLLVMDialect(mlir::ModuleOp module) {
  for (mlir::Operation &op : module.getBody()->getOperations())
    if (!isTranslatable(op))
      return false;
  return true;
}

/// "@predict: 'est.matmul' was not lowered to the LLVM dialect" for the first
/// op outside the LLVM dialect.
std::string describeUnlowered(mlir::ModuleOp module) {
  for (mlir::Operation &op : module.getBody()->getOperations()) {
    if (isTranslatable(op))
      continue;
    std::string where, what = op.getName().getStringRef().str();
    if (auto func = llvm::dyn_cast<mlir::func::FuncOp>(op)) {
      where = "@" + func.getSymName().str() + ": ";
      func.walk([&](mlir::Operation *inner) {
        if (inner != func.getOperation() && inner->getDialect() &&
            inner->getDialect()->getNamespace() != "func") {
          what = inner->getName().getStringRef().str();
          return mlir::WalkResult::interrupt();
        }
        return mlir::WalkResult::advance();
      });
    }
    return where + "'" + what + "' was not lowered to the LLVM dialect";
  }
  return "the module is not in the LLVM dialect";
}

void printWarning(llvm::StringRef message) {
  llvm::errs() << "estc: warning: " << message << "\n";
}

bool writeFile(const std::string &path, llvm::StringRef contents,
               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = path + ": " + ec.message();
    return false;
  }
  os << contents;
  os.close();
  if (os.has_error()) {
    error = path + ": " + os.error().message();
    os.clear_error();
    return false;
  }
  return true;
}

std::string join(const std::string &dir, const std::string &file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  // --help shows estc's options only (LLVM's and MLIR's stay usable).
  cl::HideUnrelatedOptions(estcCategory);
  static const std::string compileToHelp =
      "With --emit=mlir: stop after this pipeline stage (" +
      estc::allStageNames() + "; default: the last)";
  compileTo.setDescription(compileToHelp);

  // Flag errors: one line, not LLVM's multi-line report.
  std::string flagErrors;
  llvm::raw_string_ostream flagErrorStream(flagErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "compiles model graphs to the est dialect and native code\n\n"
          "  estc model.pb                             est MLIR\n"
          "  estc model.pb --emit=obj --name=Mlp -o out/\n"
          "                                            out/Mlp.o, Mlp.h, "
          "Mlp.manifest.json\n\n"
          "MLIR's debugging flags work too (--mlir-print-ir-after-all, ...; "
          "see --help-hidden).\n"
          "Exit code 2 for a bad command line, 1 for a bad file or graph.\n",
          &flagErrorStream)) {
    if (!emitError.empty())
      return flagError(emitError);
    llvm::StringRef first = llvm::StringRef(flagErrors).split('\n').first;
    first.consume_front("estc: ");
    if (first.starts_with("Not enough positional"))
      return flagError("no model graph given (usage: estc [options] "
                       "MODEL.pb|MODEL.pbtxt|MODULE.mlir; see --help)");
    return flagError(first.trim().str());
  }

  // Validate every flag before touching the input.
  std::optional<estc::Stage> lastStage = estc::Stage::Est;
  if (!compileTo.empty()) {
    lastStage = estc::parseStage(compileTo);
    if (!lastStage)
      return flagError("--compile-to=" + compileTo +
                       ": unknown stage (one of " + estc::allStageNames() +
                       ")");
  }
  std::optional<estc::Device> device = estc::parseDevice(target);
  if (!device)
    return flagError("--target=" + target +
                     ": unknown target (one of cpu, "
                     "cuda)");
  bool cuda = *device == estc::Device::Cuda;
  if (!cuda && !gpuArch.empty())
    return flagError("--gpu-arch=" + gpuArch + ": only with --target=cuda");
  if (cuda && !gpuArch.empty()) {
    std::string problem = estc::checkGpuArch(gpuArch);
    if (!problem.empty())
      return flagError(problem);
  }
  if (replicas < 0 || replicas > (1 << 20))
    return flagError("--replicas=" + std::to_string(replicas) +
                     ": not in 0..1048576");
  if (cuda && replicas > 1)
    return flagError("--replicas: only with --target=cpu (NCCL for CUDA "
                     "replicas is not built yet)");
  if (cuda && trainLoop)
    return flagError("--train-loop: only with --target=cpu (a CUDA model "
                     "runs one step a call)");
  if (!cuda && emit == Emit::PTX)
    return flagError("--emit=ptx: only with --target=cuda (the CPU target "
                     "has no kernels)");
  if (lastStage == estc::Stage::LLVM && !compileTo.empty() &&
      compileTo != estc::stageName(estc::Stage::LLVM, *device))
    return flagError("--compile-to=" + compileTo +
                     ": the last stage of "
                     "--target=" +
                     target + " is " +
                     estc::stageName(estc::Stage::LLVM, *device).str());
  if (!isIdentifier(modelName))
    return flagError("--name=" + modelName + ": not a C++ identifier");
  if (emit != Emit::MLIR && !compileTo.empty())
    return flagError("--compile-to=" + compileTo +
                     ": only with --emit=mlir (the other outputs need the "
                     "whole pipeline)");
  // mlir, llvm and asm write one file; a directory is what obj, lib and
  // header write into.
  bool textOutput = emit == Emit::MLIR || emit == Emit::LLVM ||
                    emit == Emit::Asm || emit == Emit::PTX;
  if (textOutput && outputFile != "-" &&
      (llvm::sys::fs::is_directory(outputFile.getValue()) ||
       llvm::StringRef(outputFile).ends_with("/")))
    return flagError(
        "-o " + outputFile + ": a directory, but --emit=" + emitName(emit) +
        " writes one file; add --emit=obj (or lib, header) to write " +
        modelName + ".o, " + modelName + ".h and " + modelName +
        ".manifest.json into it");
  llvm::Expected<unsigned> threads = estc::compileThreadCount(compileThreads);
  if (!threads)
    return flagError(llvm::toString(threads.takeError()));
  estc::TargetOptions targetOptions;
  targetOptions.cpu = mcpu;
  targetOptions.features = mattr;
  targetOptions.device = *device;
  if (!gpuArch.empty())
    targetOptions.gpuArch = gpuArch;
  estc::PipelineOptions pipelineOptions = targetOptions.pipelineOptions();
  if (emit == Emit::PTX)
    pipelineOptions.gpuFormat = "isa";
  if (emit == Emit::LLVM || emit == Emit::Asm || emit == Emit::Obj ||
      emit == Emit::Lib || emit == Emit::PTX) {
    auto machine = estc::createTargetMachine(targetOptions);
    if (!machine)
      return flagError(llvm::toString(machine.takeError()));
  }

  // Read the input: a graph to import, or an MLIR module.
  estc::CompileTimer timer;
  estc::CompileTimer *phaseTimer = timePhases ? &timer : nullptr;
  std::string error;
  mlir::DialectRegistry registry;
  estc::registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (llvm::StringRef(inputFile).ends_with(".mlir")) {
    std::string parseError;
    mlir::ScopedDiagnosticHandler parseHandler(
        &context, [&](mlir::Diagnostic &diag) {
          if (parseError.empty())
            parseError = estc::formatImportDiagnostic(diag, inputFile);
          return mlir::success();
        });
    llvm::SourceMgr sourceMgr;
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
    if (!buffer)
      return userError(inputFile + ": " + buffer.getError().message());
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return userError(parseError.empty() ? inputFile + ": invalid MLIR"
                                          : parseError);
  } else {
    estc::graph::GraphDef graph;
    if (!estc::graph::readGraph(inputFile, graph, error))
      return userError(error);
    estc::CompileTimer::Scope phase(phaseTimer, "import");
    module = estc::importGraph(graph, context, inputFile, error);
    if (!module)
      return userError(error);
  }
  bool lowered = isLLVMDialect(*module);
  if (!runtimeChecks)
    estc::disableRuntimeChecks(*module);
  estc::setReplicas(*module, replicas);

  // Run the pipeline; pass failures are reported as one line too.
  // Pipeline failures are one line too (estc::runStages).
  auto runPipeline = [&](estc::Stage last) -> llvm::Error {
    return estc::runStages(*module, last, inputFile, /*applyCLOptions=*/true,
                           pipelineOptions, verifyEach);
  };
  auto writeText = [&](llvm::StringRef text) {
    std::string openError;
    auto output = mlir::openOutputFile(outputFile, &openError);
    if (!output)
      return userError(outputFile + ": " + openError);
    output->os() << text;
    output->keep();
    return 0;
  };

  if (emit == Emit::MLIR) {
    // Past the autodiff stage a @train it could not expand is dropped, as the
    // code generating outputs do.
    if (!lowered && *lastStage > estc::Stage::Autodiff) {
      if (llvm::Error e = runPipeline(estc::Stage::Autodiff))
        return userError(llvm::toString(std::move(e)));
      estc::dropUncompilableTrain(*module, printWarning);
    }
    if (!lowered)
      if (llvm::Error e = runPipeline(*lastStage))
        return userError(llvm::toString(std::move(e)));
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return writeText(text);
  }

  // The manifest (slot variables included): after the autodiff stage, or
  // from the `estc.manifest` attribute of an already lowered module.
  std::optional<estc::Manifest> manifest;
  if (!lowered) {
    auto prepared = [&] {
      estc::CompileTimer::Scope phase(phaseTimer, "est");
      return estc::prepareForLowering(*module, modelName, inputFile,
                                      printWarning, /*applyCLOptions=*/true,
                                      verifyEach);
    }();
    if (!prepared)
      return userError(llvm::toString(prepared.takeError()));
    manifest = std::move(*prepared);
    estc::setManifestDevice(*module, *manifest, pipelineOptions);
  } else if (auto json =
                 (*module)->getAttrOfType<mlir::StringAttr>("estc.manifest")) {
    auto parsed = estc::manifestFromJson(json.getValue());
    if (!parsed)
      return userError(
          inputFile + ": estc.manifest: " + llvm::toString(parsed.takeError()));
    manifest = std::move(*parsed);
    manifest->name = modelName;
  } else if (emit == Emit::Obj || emit == Emit::Lib || emit == Emit::Header) {
    return userError(inputFile +
                     ": no estc.manifest attribute: the header needs the "
                     "manifest (compile the graph or the est-level module)");
  }

  std::string outDir =
      outputFile == "-" ? std::string(".") : outputFile.getValue();
  auto writeHeaderAndManifest = [&]() {
    if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
      error = outDir + ": " + ec.message();
      return false;
    }
    return writeFile(join(outDir, modelName + ".h"),
                     estc::generateHeader(*manifest), error) &&
           writeFile(join(outDir, modelName + ".manifest.json"),
                     estc::toJson(*manifest), error);
  };
  // --train-loop: train_loop, after the arena sizes it copies from train;
  // the manifest attribute lists it for the translation, which builds it.
  auto addTrainLoop = [&]() -> llvm::Error {
    if (!trainLoop || !manifest || manifest->findFunction("train_loop"))
      return llvm::Error::success();
    if (llvm::Error e = estc::addStepLoop(*manifest, "train"))
      return e;
    (*module)->setAttr("estc.manifest", mlir::StringAttr::get(
                                            &context, estc::toJson(*manifest)));
    return llvm::Error::success();
  };
  if (emit == Emit::Header) {
    if (llvm::Error e = addTrainLoop())
      return userError(inputFile + ": " + llvm::toString(std::move(e)));
    return writeHeaderAndManifest() ? 0 : userError(error);
  }

  // Lower to the LLVM dialect.
  if (!lowered) {
    estc::CompileTimer::Scope phase(phaseTimer, "lower");
    if (llvm::Error e = runPipeline(estc::Stage::LLVM))
      return userError(llvm::toString(std::move(e)));
    if (!isLLVMDialect(*module))
      return userError(
          inputFile + ": " + describeUnlowered(*module) +
          " (pipeline stages in this build: " + estc::allStageNames() +
          "); --emit=header writes the header and manifest "
          "only");
  }

  if (emit == Emit::PTX) {
    auto ptx = estc::kernelAssembly(*module);
    if (!ptx)
      return userError(inputFile + ": " + llvm::toString(ptx.takeError()));
    return writeText(*ptx);
  }

  std::vector<std::string> functions;
  if (manifest) {
    if (llvm::Error e = estc::readArenaSizes(*module, *manifest))
      return userError(inputFile + ": " + llvm::toString(std::move(e)));
    if (llvm::Error e = addTrainLoop())
      return userError(inputFile + ": " + llvm::toString(std::move(e)));
    for (const estc::FunctionInfo &f : manifest->functions)
      functions.push_back(f.name);
  } else {
    // A hand-lowered module without a manifest: every C interface function.
    llvm::LLVMContext llvmContext;
    auto llvmModule = estc::translateToLLVMIR(*module, llvmContext);
    if (!llvmModule)
      return userError(inputFile + ": " +
                       llvm::toString(llvmModule.takeError()));
    functions = estc::cInterfaceFunctions(**llvmModule);
  }

  estc::CodeKind kind = emit == Emit::LLVM  ? estc::CodeKind::LLVMIR
                        : emit == Emit::Asm ? estc::CodeKind::Assembly
                                            : estc::CodeKind::Object;
  auto code = estc::compileModuleOnThreads(
      *module, modelName, functions, targetOptions, kind, *threads, phaseTimer);
  if (!code)
    return userError(inputFile + ": " + llvm::toString(code.takeError()));
  if (phaseTimer) {
    llvm::errs() << "estc: compile phases (wall, process CPU):\n";
    timer.print(llvm::errs());
  }
  if (emit == Emit::LLVM || emit == Emit::Asm)
    return writeText(*code);

  if (!writeHeaderAndManifest())
    return userError(error);
  if (emit == Emit::Obj)
    return writeFile(join(outDir, modelName + ".o"), *code, error)
               ? 0
               : userError(error);
  auto library = estc::makeStaticLibrary(modelName + ".o", *code);
  if (!library)
    return userError(llvm::toString(library.takeError()));
  return writeFile(join(outDir, "lib" + modelName + ".a"), *library, error)
             ? 0
             : userError(error);
}
