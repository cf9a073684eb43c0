//===- titanic_aot.cpp - The Titanic canned estimators, ahead of time ----===//
//
// titanic (TitanicTrainer.h) over the graphs estc compiled at build time
// (estc_add_model on what titanic_graph writes, graph seed 1): the
// LinearClassifier (TitanicLinear), the DNNLinearCombinedClassifier with
// the tuned rates (TitanicDnnLinearCombined) and with TF's default ones
// (TitanicDnnLinearCombinedDefault). Each runs in the AOT Estimator with
// the canned model's host transform (the columns' Transformer and the
// head's labels): this binary links no LLVM or MLIR (test
// titanic.aot_links_no_llvm). --seed seeds the input shuffling only.
//
//===----------------------------------------------------------------------===//

#include "examples/titanic/Titanic.h"
#include "examples/titanic/TitanicTrainer.h"

#include "TitanicDnnLinearCombined.h"
#include "TitanicDnnLinearCombinedDefault.h"
#include "TitanicLinear.h"

using namespace estc;

namespace {

std::unique_ptr<rt::CompiledModel> compiledModel(const std::string &kind,
                                                 bool default_rates) {
  if (kind == "linear")
    return std::make_unique<TitanicLinear>();
  if (default_rates)
    return std::make_unique<TitanicDnnLinearCombinedDefault>();
  return std::make_unique<TitanicDnnLinearCombined>();
}

} // namespace

int main(int argc, char **argv) {
  return examples::run_titanic(
      "titanic_aot", argc, argv,
      [](const std::string &kind, bool default_rates,
         const estimator::RunConfig &config) {
        auto estimator = std::make_unique<estimator::Estimator>(
            compiledModel(kind, default_rates), config);
        estimator->set_host_transform(
            examples::titanic_model(kind, !default_rates).transform);
        return estimator;
      },
      " (the graph's initial weights are seed 1's, fixed at build time)");
}
