//===- fashion_mnist_jit.cpp - The ConvNet example, compiled in process --===//
//
// The Estimator calls convnet_model_fn for each mode and compiles the graph
// with the in-process pipeline (cached on disk: a second run skips code
// generation). Links the compiler (EstcEstimatorJit).
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/ConvNetModel.h"
#include "examples/fashion_mnist/Trainer.h"

int main(int argc, char **argv) {
  using namespace estc;
  return examples::run_trainer("fashion_mnist_jit", argc, argv,
                               [](const estimator::RunConfig &config) {
                                 return std::make_unique<estimator::Estimator>(
                                     examples::convnet_model_fn, config);
                               });
}
