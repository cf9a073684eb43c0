//===- estc-opt.cpp - est optimizer driver ----------------------------===//
//
// mlir-opt for the est dialect: parses, runs passes, prints. Registers only
// the est and func dialects and the passes the est pipeline uses.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::est::registerEstPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::est::EstDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "estc optimizer driver\n", registry));
}
