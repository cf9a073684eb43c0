//===- TorchModels.h - The seed models in libtorch, the peer to beat -----===//
//
// The same architectures as examples/models (MLP 784-256-256-10 and the
// MNIST ConvNet), written with libtorch's C++ frontend, for side-by-side
// benchmarks. NHWC inputs are permuted to libtorch's NCHW inside forward so
// both sides take the same input tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_TORCHMODELS_H
#define ESTC_BENCH_TORCHMODELS_H

#include <torch/torch.h>

namespace estc {
namespace bench {

struct TorchMlpImpl : torch::nn::Module {
  TorchMlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 256))),
        fc2(register_module("fc2", torch::nn::Linear(256, 256))),
        fc3(register_module("fc3", torch::nn::Linear(256, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(TorchMlp);

struct TorchConvNetImpl : torch::nn::Module {
  TorchConvNetImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(1, 20, 5))),
        conv2(register_module("conv2", torch::nn::Conv2d(20, 40, 5))),
        fc1(register_module("fc1", torch::nn::Linear(640, 256))),
        fc2(register_module("fc2", torch::nn::Linear(256, 256))),
        fc3(register_module("fc3", torch::nn::Linear(256, 10))),
        dropout(register_module("dropout", torch::nn::Dropout(0.5))) {}
  /// x: [N, 28, 28, 1] (NHWC, like the estc model).
  torch::Tensor forward(torch::Tensor x) {
    x = x.permute({0, 3, 1, 2});
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = x.permute({0, 2, 3, 1}).reshape({x.size(0), 640});
    x = dropout->forward(torch::relu(fc1->forward(x)));
    x = dropout->forward(torch::relu(fc2->forward(x)));
    return fc3->forward(x);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
  torch::nn::Dropout dropout;
};
TORCH_MODULE(TorchConvNet);

/// Multiply-adds x2 of one forward pass at `batch`.
inline double mlpForwardFlops(int64_t batch) {
  return 2.0 * batch * (784 * 256 + 256 * 256 + 256 * 10);
}
inline double convNetForwardFlops(int64_t batch) {
  double conv1 = 24.0 * 24 * 20 * 5 * 5 * 1;
  double conv2 = 8.0 * 8 * 40 * 5 * 5 * 20;
  double dense = 640.0 * 256 + 256 * 256 + 256 * 10;
  return 2.0 * batch * (conv1 + conv2 + dense);
}

/// Multiply-adds x2 of one training step at `batch`: the forward pass, then
/// for every layer the gradient of its weights (as many FLOPs as its forward)
/// and of its input (the same again), except the first layer's input, which
/// needs no gradient.
inline double mlpTrainFlops(int64_t batch) {
  return 3 * mlpForwardFlops(batch) - 2.0 * batch * 784 * 256;
}
inline double convNetTrainFlops(int64_t batch) {
  return 3 * convNetForwardFlops(batch) - 2.0 * batch * 24 * 24 * 20 * 5 * 5;
}

/// One training step of `module` as estc's @train does it: forward (dropout
/// active), sparse softmax cross-entropy averaged over the batch, backward,
/// Adam (TF's defaults: beta1 0.9, beta2 0.999, epsilon 1e-8).
template <typename Module> class TorchTrainer {
public:
  TorchTrainer(Module module, double learningRate)
      : module_(std::move(module)),
        adam_(module_->parameters(), torch::optim::AdamOptions(learningRate)
                                         .betas({0.9, 0.999})
                                         .eps(1e-8)) {
    module_->train();
  }
  /// Returns the loss.
  torch::Tensor step(const torch::Tensor &x, const torch::Tensor &labels) {
    adam_.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(module_->forward(x), labels);
    loss.backward();
    adam_.step();
    return loss;
  }

private:
  Module module_;
  torch::optim::Adam adam_;
};

} // namespace bench
} // namespace estc

#endif // ESTC_BENCH_TORCHMODELS_H
