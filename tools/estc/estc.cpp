//===- estc.cpp - The estc compiler driver ------------------------------===//
//
//   estc model.pb [--emit=mlir|llvm|asm|obj|lib|header] [--compile-to=<stage>]
//        [-o FILE|DIR] [--name NAME] [--target=cpu] [--mcpu=CPU]
//        [--mattr=FEATURES]
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
//
// The manifest (compiler/Target/Manifest.h) is read from the `est`-level
// module before lowering and attached to it as `estc.manifest` (JSON), so a
// module dumped with --compile-to=llvm can be compiled again on its own.
// Every user error (bad file, bad graph, bad flag) is one line on stderr,
// "estc: error: ...", with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Pipelines/Registration.h"
#include "compiler/Target/HeaderGenerator.h"
#include "compiler/Target/Manifest.h"
#include "compiler/Target/ObjectEmitter.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Graph/GraphIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

enum class Emit { MLIR, LLVM, Asm, Obj, Lib, Header };

cl::OptionCategory estcCategory("estc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model graph file>"),
                               cl::Required, cl::cat(estcCategory));

cl::opt<std::string> emitFlag(
    "emit",
    cl::desc("What to produce: mlir (MLIR after the chosen stage), llvm "
             "(LLVM IR), asm (native assembly), obj (object file and "
             "header), lib (static library and header), header (header and "
             "manifest only)"),
    cl::init("mlir"), cl::cat(estcCategory));

cl::opt<std::string> compileTo(
    "compile-to",
    cl::desc("Stop after this pipeline stage (import, est); default: the "
             "last stage"),
    cl::init(""), cl::cat(estcCategory));

cl::opt<std::string> outputFile("o",
                                cl::desc("Output file (mlir, llvm, asm; "
                                         "default stdout) or directory (obj, "
                                         "lib, header; default .)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(estcCategory));

cl::opt<std::string> modelName("name",
                               cl::desc("C++ name of the compiled model class"),
                               cl::init("Model"), cl::cat(estcCategory));

cl::opt<std::string> target("target", cl::desc("Code generation target"),
                            cl::init("cpu"), cl::cat(estcCategory));

cl::opt<std::string> mcpu("mcpu", cl::desc("Target CPU (e.g. native)"),
                          cl::init("native"), cl::cat(estcCategory));

cl::opt<std::string> mattr("mattr", cl::desc("Target features (+avx512f,...)"),
                           cl::init(""), cl::cat(estcCategory));

int userError(const std::string &message) {
  llvm::errs() << "estc: error: " << message << "\n";
  return 1;
}

std::optional<Emit> parseEmit(const std::string &name) {
  if (name == "mlir")
    return Emit::MLIR;
  if (name == "llvm")
    return Emit::LLVM;
  if (name == "asm")
    return Emit::Asm;
  if (name == "obj")
    return Emit::Obj;
  if (name == "lib")
    return Emit::Lib;
  if (name == "header")
    return Emit::Header;
  return std::nullopt;
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

/// True when every op of the module is in the LLVM dialect (ready for
/// translation).
bool isLLVMDialect(mlir::ModuleOp module) {
  for (mlir::Operation &op : module.getBody()->getOperations())
    if (op.getDialect() == nullptr || op.getDialect()->getNamespace() != "llvm")
      return false;
  return true;
}

/// "@predict: 'est.matmul' was not lowered to the LLVM dialect" for the first
/// op outside the LLVM dialect.
std::string describeUnlowered(mlir::ModuleOp module) {
  for (mlir::Operation &op : module.getBody()->getOperations()) {
    if (op.getDialect() && op.getDialect()->getNamespace() == "llvm")
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
  cl::HideUnrelatedOptions({&estcCategory, &cl::getGeneralCategory()});

  // Flag errors: one line, not LLVM's multi-line report.
  std::string flagErrors;
  llvm::raw_string_ostream flagErrorStream(flagErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "estc: compiles model graphs to the est dialect and native code\n",
          &flagErrorStream)) {
    llvm::StringRef first = llvm::StringRef(flagErrors).split('\n').first;
    first.consume_front("estc: ");
    return userError(first.trim().str());
  }

  // Validate every flag before touching the input.
  std::optional<estc::Stage> lastStage = estc::Stage::Est;
  if (!compileTo.empty()) {
    lastStage = estc::parseStage(compileTo);
    if (!lastStage)
      return userError("--compile-to=" + compileTo +
                       ": unknown stage (one of " + estc::allStageNames() +
                       ")");
  }
  if (target != "cpu")
    return userError("--target=" + target +
                     ": unknown or unavailable target (this build supports: "
                     "cpu)");
  if (!isIdentifier(modelName))
    return userError("--name=" + modelName + ": not a C++ identifier");
  std::optional<Emit> emit = parseEmit(emitFlag);
  if (!emit)
    return userError(
        "--emit=" + emitFlag +
        ": unknown output kind (one of mlir, llvm, asm, obj, lib, header)");
  if (*emit != Emit::MLIR && !compileTo.empty())
    return userError("--compile-to=" + compileTo +
                     ": only with --emit=mlir (the other outputs need the "
                     "whole pipeline)");
  estc::TargetOptions targetOptions;
  targetOptions.cpu = mcpu;
  targetOptions.features = mattr;
  if (*emit == Emit::LLVM || *emit == Emit::Asm || *emit == Emit::Obj ||
      *emit == Emit::Lib) {
    auto machine = estc::createTargetMachine(targetOptions);
    if (!machine)
      return userError(llvm::toString(machine.takeError()));
  }

  // Read the input: a graph to import, or an MLIR module.
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
    module = estc::importGraph(graph, context, inputFile, error);
    if (!module)
      return userError(error);
  }
  bool lowered = isLLVMDialect(*module);

  // Run the pipeline; pass failures are reported as one line too.
  // Pipeline failures are one line too (estc::runStages).
  auto runPipeline = [&](estc::Stage last) -> llvm::Error {
    return estc::runStages(*module, last, inputFile, /*applyCLOptions=*/true);
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

  if (*emit == Emit::MLIR) {
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
    auto prepared =
        estc::prepareForLowering(*module, modelName, inputFile, printWarning,
                                 /*applyCLOptions=*/true);
    if (!prepared)
      return userError(llvm::toString(prepared.takeError()));
    manifest = std::move(*prepared);
  } else if (auto json =
                 (*module)->getAttrOfType<mlir::StringAttr>("estc.manifest")) {
    auto parsed = estc::manifestFromJson(json.getValue());
    if (!parsed)
      return userError(
          inputFile + ": estc.manifest: " + llvm::toString(parsed.takeError()));
    manifest = std::move(*parsed);
    manifest->name = modelName;
  } else if (*emit == Emit::Obj || *emit == Emit::Lib ||
             *emit == Emit::Header) {
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
  if (*emit == Emit::Header)
    return writeHeaderAndManifest() ? 0 : userError(error);

  // Lower to the LLVM dialect.
  if (!lowered) {
    if (llvm::Error e = runPipeline(estc::Stage::LLVM))
      return userError(llvm::toString(std::move(e)));
    if (!isLLVMDialect(*module))
      return userError(
          inputFile + ": " + describeUnlowered(*module) +
          " (pipeline stages in this build: " + estc::allStageNames() +
          "); --emit=header writes the header and manifest "
          "only");
  }

  std::vector<std::string> functions;
  if (manifest) {
    if (llvm::Error e = estc::readArenaSizes(*module, *manifest))
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

  estc::CodeKind kind = *emit == Emit::LLVM  ? estc::CodeKind::LLVMIR
                        : *emit == Emit::Asm ? estc::CodeKind::Assembly
                                             : estc::CodeKind::Object;
  auto code =
      estc::compileModule(*module, modelName, functions, targetOptions, kind);
  if (!code)
    return userError(inputFile + ": " + llvm::toString(code.takeError()));
  if (*emit == Emit::LLVM || *emit == Emit::Asm)
    return writeText(*code);

  if (!writeHeaderAndManifest())
    return userError(error);
  if (*emit == Emit::Obj)
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
