//===- titanic.cpp - Canned estimators on the Titanic CSVs ---------------===//
//
// Trains a LinearClassifier or a DNNLinearCombinedClassifier (the JIT
// Estimator) over the Titanic CSVs with the columns of TF's linear-model
// tutorial (Titanic.h), evaluates it on test.csv with the head's metrics and
// prints one JSON line (what bench/tf_canned_peer.py prints for TF 2.15),
// then the first predictions (TitanicTrainer.h). titanic_aot is the same
// program over the graphs estc compiled at build time.
//
//   titanic --data_dir=../shared/data/titanic [--model=linear|
//           dnn_linear_combined] [--epochs=40] [--batch_size=32] [--seed=1]
//
//===----------------------------------------------------------------------===//

#include "examples/titanic/Titanic.h"
#include "examples/titanic/TitanicTrainer.h"

using namespace estc;

int main(int argc, char **argv) {
  return examples::run_titanic(
      "titanic", argc, argv,
      [](const std::string &kind, bool default_rates,
         const estimator::RunConfig &config) {
        return std::make_unique<estimator::CannedEstimator>(
            examples::titanic_model(kind, !default_rates), config);
      });
}
