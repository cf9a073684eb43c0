//===- classifier_jit.cpp - The classifier, compiled in process ----------===//

#include "TinyModel.h"

int main() {
  using estc::estimator::Estimator;
  return classifier::train_and_check(
      "classifier_jit", [](const estc::estimator::RunConfig &config) {
        return std::make_unique<Estimator>(classifier::model_fn, config);
      });
}
