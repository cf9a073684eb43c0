//===- fashion_mnist_aot_cuda.cpp - The AOT ConvNet trainer on a GPU -----===//
//
// fashion_mnist_aot on CUDA: the same graph, compiled by estc at build time
// with --target=cuda (estc_add_model TARGET cuda), so every step runs on
// the GPU; the binary links the runtime and the Estimator only, no LLVM,
// MLIR or CUDA library (the runtime opens the driver, cuBLAS and cuDNN when
// the model is first used; docs/design/gpu.md). Flags are fashion_mnist_aot's
// plus --device=cuda[:N] (default cuda:0), the GPU to train on
// (rt::set_cuda_device). Without a GPU it fails with one line
// (rt::DeviceError) and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/Trainer.h"

#include "FashionConvNetCuda.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// The device index of --device=cuda or --device=cuda:N, or -1.
int parseDevice(const std::string &value) {
  if (value == "cuda")
    return 0;
  const std::string prefix = "cuda:";
  if (value.compare(0, prefix.size(), prefix) != 0 ||
      value.size() == prefix.size() || value.size() > prefix.size() + 4)
    return -1;
  for (size_t i = prefix.size(); i < value.size(); ++i)
    if (value[i] < '0' || value[i] > '9')
      return -1;
  return std::atoi(value.c_str() + prefix.size());
}

} // namespace

int main(int argc, char **argv) {
  using namespace estc;
  const char *program = "fashion_mnist_aot_cuda";
  // --device is this trainer's own flag; the rest go to the shared trainer.
  int device = 0;
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const char *flag = "--device=";
    if (std::strncmp(argv[i], flag, std::strlen(flag)) != 0) {
      rest.push_back(argv[i]);
      continue;
    }
    std::string value = argv[i] + std::strlen(flag);
    device = parseDevice(value);
    if (device < 0) {
      std::cerr << program << ": error: --device=" << value
                << ": must be cuda or cuda:N\n";
      return 2;
    }
  }
  rest.push_back(nullptr);
  rt::set_cuda_device(device);
  return examples::run_trainer(
      program, static_cast<int>(rest.size()) - 1, rest.data(),
      [](const estimator::RunConfig &config) {
        return std::make_unique<estimator::Estimator>(
            std::make_unique<FashionConvNetCuda>(), config);
      });
}
