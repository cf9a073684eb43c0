//===- Pipelines.cpp - The estc compilation pipeline, stage by stage ----===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace estc {

namespace {
constexpr Stage kAllStages[] = {Stage::Import, Stage::Est};
} // namespace

llvm::StringRef stageName(Stage stage) {
  switch (stage) {
  case Stage::Import:
    return "import";
  case Stage::Est:
    return "est";
  }
  return "";
}

std::optional<Stage> parseStage(llvm::StringRef name) {
  for (Stage stage : kAllStages)
    if (stageName(stage) == name)
      return stage;
  return std::nullopt;
}

std::string allStageNames() {
  std::string names;
  for (Stage stage : kAllStages)
    names += (names.empty() ? "" : ", ") + stageName(stage).str();
  return names;
}

void addEstOptimizationPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::est::createShapeInferencePass());
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
  funcPm.addPass(mlir::est::createDCEPass());
}

void buildPipeline(mlir::OpPassManager &pm, Stage last) {
  if (last == Stage::Import)
    return;
  addEstOptimizationPasses(pm);
}

} // namespace estc
