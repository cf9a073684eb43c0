//===- fashion_mnist_aot.cpp - The ConvNet example, compiled ahead of time ===//
//
// The same model_fn, compiled by estc at build time (estc_add_model on the
// graph fashion_mnist_graph writes): this binary links the runtime and the
// Estimator only, no LLVM or MLIR. Its graph seed is the one the graph was
// built with (--seed does not change the initial weights; it still seeds
// the input shuffling).
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/Trainer.h"

#include "FashionConvNet.h"

int main(int argc, char **argv) {
  using namespace estc;
  return examples::run_trainer(
      "fashion_mnist_aot", argc, argv, [](const estimator::RunConfig &config) {
        return std::make_unique<estimator::Estimator>(
            std::make_unique<FashionConvNet>(), config);
      });
}
