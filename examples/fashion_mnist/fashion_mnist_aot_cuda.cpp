//===- fashion_mnist_aot_cuda.cpp - The AOT ConvNet trainer on a GPU -----===//
//
// fashion_mnist_aot on CUDA: the same graph, compiled by estc at build time
// with --target=cuda (estc_add_model TARGET cuda), so every step runs on
// the GPU; the binary links the runtime and the Estimator only, no LLVM,
// MLIR or CUDA library (the runtime opens the driver, cuBLAS and cuDNN when
// the model is first used; docs/design/gpu.md). Flags are fashion_mnist_aot's;
// --device=cuda:N (default cuda:0) is the GPU to train on: the factory
// selects it (rt::set_cuda_device) before constructing the model, whose
// buffers then live there. Without a GPU it fails with one line
// (rt::DeviceError) and exit status 1; --device=cpu is refused with one line
// (the model is compiled for CUDA).
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/Trainer.h"

#include "FashionConvNetCuda.h"

int main(int argc, char **argv) {
  using namespace estc;
  return examples::run_trainer(
      "fashion_mnist_aot_cuda", argc, argv,
      [](const estimator::RunConfig &config) {
        if (config.on_cuda())
          rt::set_cuda_device(config.cuda_device_index());
        return std::make_unique<estimator::Estimator>(
            std::make_unique<FashionConvNetCuda>(), config);
      },
      "cuda:0");
}
