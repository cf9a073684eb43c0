//===- Models.cpp - The seed-model registry -----------------------------===//

#include "lib/Models/Models.h"

namespace estc {
namespace models {

const std::vector<ModelEntry> &model_registry() {
  static const std::vector<ModelEntry> registry = {
      {"mlp", "MNIST MLP 784-256-256-10 (relu), Adam",
       [](int64_t seed) { return build_mlp(seed); }},
      {"convnet",
       "MNIST ConvNet: conv 20 5x5, pool, conv 40 5x5, pool, dense 256 x2 "
       "with dropout, dense 10; Adam",
       [](int64_t seed) { return build_convnet(seed); }},
      {"iris", "iris-sized MLP 4-10-10-3 (relu), Adam",
       [](int64_t seed) { return build_mlp(seed, iris_params()); }},
      {"linear",
       "logistic regression over numeric features (age, fare, pclass), FTRL",
       [](int64_t seed) { return build_linear(seed); }},
  };
  return registry;
}

const ModelEntry *find_model(const std::string &name) {
  for (const ModelEntry &m : model_registry())
    if (m.name == name)
      return &m;
  return nullptr;
}

} // namespace models
} // namespace estc
