//===- fashion_mnist_resnet.cpp - The ResNet-style model, in process ----===//
//
// The example trainer (Trainer.h: data, train_and_evaluate, the report) on
// examples/fashion_mnist/ResNetModel.h, compiled in process:
//
//   fashion_mnist_resnet --epochs=15 --model_dir=/tmp/resnet
//
// Its own flags set the model (--width, --blocks_per_stage,
// --weight_decay, --momentum, --lr_boundaries, --lr_values).
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/ResNetModel.h"
#include "examples/fashion_mnist/Trainer.h"

#include <sstream>
#include <stdexcept>

namespace {

std::vector<double> parseList(const std::string &flag,
                              const std::string &text) {
  std::vector<double> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw std::invalid_argument("--" + flag + "=" + text + ": '" + item +
                                  "' is not a number");
    values.push_back(v);
  }
  return values;
}

} // namespace

int main(int argc, char **argv) {
  using namespace estc;
  examples::ResNetOptions options;
  std::string boundaries = "3752,5628", values = "0.1,0.01,0.001";
  auto modelFlags = [&](flags::FlagParser &parser) {
    using flags::Flag;
    parser.add(
        Flag("width", &options.width, "channels of the first stage").min(1));
    parser.add(Flag("blocks_per_stage", &options.blocks_per_stage,
                    "basic blocks in each of the 3 stages")
                   .min(1));
    parser.add(Flag("weight_decay", &options.weight_decay,
                    "times the kernels' l2_loss, added to the loss")
                   .min(0));
    parser.add(
        Flag("momentum", &options.momentum, "the optimizer's momentum").min(0));
    parser.add(Flag("lr_boundaries", &boundaries,
                    "the schedule's step boundaries, comma-separated"));
    parser.add(Flag("lr_values", &values,
                    "its learning rates (one more than boundaries)"));
  };
  return examples::run_trainer(
      "fashion_mnist_resnet", argc, argv,
      [&](const estimator::RunConfig &config) {
        options.lr_boundaries = parseList("lr_boundaries", boundaries);
        options.lr_values = parseList("lr_values", values);
        return std::make_unique<estimator::Estimator>(
            examples::resnet_model_fn(options), config);
      },
      "cpu", modelFlags);
}
