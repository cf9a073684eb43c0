//===- estc.cpp - The estc compiler driver ------------------------------===//
//
//   estc model.pb [--emit=mlir] [--compile-to=<stage>] [-o FILE]
//        [--name NAME] [--target=cpu] [--mcpu=CPU] [--mattr=FEATURES]
//
// Reads a model graph (binary .pb or text .pbtxt), imports it into the `est`
// dialect, runs the pipeline up to the requested stage and emits the result.
// Every user error (bad file, bad graph, bad flag) is one line on stderr,
// "estc: error: ...", with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Pipelines/Registration.h"
#include "lib/Graph/GraphIO.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace cl = llvm::cl;

namespace {

enum class Emit { MLIR, LLVM, Asm, Obj, Lib };

cl::OptionCategory estcCategory("estc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model graph file>"),
                               cl::Required, cl::cat(estcCategory));

cl::opt<std::string> emitFlag(
    "emit",
    cl::desc("What to produce: mlir (MLIR after the chosen stage), llvm "
             "(LLVM IR), asm (native assembly), obj (object file and "
             "header), lib (static library and header)"),
    cl::init("mlir"), cl::cat(estcCategory));

cl::opt<std::string> compileTo(
    "compile-to",
    cl::desc("Stop after this pipeline stage (import, est); default: the "
             "last stage"),
    cl::init(""), cl::cat(estcCategory));

cl::opt<std::string> outputFile("o", cl::desc("Output file (default stdout)"),
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
  return std::nullopt;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) ||
                     s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
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
      return userError("--compile-to=" + compileTo + ": unknown stage (one of " +
                       estc::allStageNames() + ")");
  }
  if (target != "cpu")
    return userError("--target=" + target +
                     ": unknown or unavailable target (this build supports: "
                     "cpu)");
  if (!isIdentifier(modelName))
    return userError("--name=" + modelName + ": not a C++ identifier");
  std::optional<Emit> emit = parseEmit(emitFlag);
  if (!emit)
    return userError("--emit=" + emitFlag +
                     ": unknown output kind (one of mlir, llvm, asm, obj, lib)");
  if (*emit != Emit::MLIR)
    return userError("--emit=" + emitFlag +
                     ": native code generation is not part of this build "
                     "yet; use --emit=mlir");

  // Read and import the graph.
  estc::graph::GraphDef graph;
  std::string error;
  if (!estc::graph::readGraph(inputFile, graph, error))
    return userError(error);

  mlir::DialectRegistry registry;
  estc::registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      estc::importGraph(graph, context, inputFile, error);
  if (!module)
    return userError(error);

  // Run the pipeline; pass failures are reported as one line too.
  std::string passError;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
        passError.empty())
      passError = estc::formatImportDiagnostic(diag, inputFile);
    return mlir::success();
  });
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return userError("invalid pass manager options");
  estc::buildPipeline(pm, *lastStage);
  if (mlir::failed(pm.run(*module)))
    return userError(passError.empty() ? inputFile + ": compilation failed"
                                       : passError);

  std::string openError;
  auto output = mlir::openOutputFile(outputFile, &openError);
  if (!output)
    return userError(outputFile + ": " + openError);
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
