//===- estc-opt.cpp - est optimizer driver ----------------------------===//
//
// mlir-opt for estc: parses, runs passes, prints. Registers the est dialect,
// the upstream dialects the pipeline lowers through, and the pipeline's
// passes (compiler/Pipelines/Registration.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  estc::registerCompilerPasses();
  mlir::DialectRegistry registry;
  estc::registerCompilerDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "estc optimizer driver\n", registry));
}
