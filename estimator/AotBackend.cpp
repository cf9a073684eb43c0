//===- AotBackend.cpp - The Estimator's backend of an AOT model --------===//
//
// detail::makeAotBackend (EstimatorBackend.h): the Estimator over one model
// estc compiled ahead of time. It has only what was compiled into it: no
// model_fn, no graph fetches beyond its "tensors/<name>" outputs.
//
//===----------------------------------------------------------------------===//

#include "estimator/EstimatorBackend.h"
#include "runtime/CompiledModel.h"

#include <stdexcept>

namespace estc {
namespace estimator {

namespace {

std::string functionName(ModeKeys mode) { return mode_key(mode); }

class AotBackend : public detail::Backend {
public:
  explicit AotBackend(std::unique_ptr<rt::CompiledModel> model)
      : model_(std::move(model)) {
    if (!model_)
      throw std::invalid_argument("Estimator: null compiled model");
  }
  void prepare(ModeKeys mode, const ElementSpec &spec) override {
    (void)spec;
    if (model_->find_function(functionName(mode)) < 0)
      throw std::invalid_argument(
          "Estimator: the compiled model " + std::string(model_->spec().name) +
          " has no " + functionName(mode) + " function");
  }
  rt::CompiledModel &model(ModeKeys mode,
                           const std::vector<std::string> &fetches) override {
    int fn = model_->find_function(functionName(mode));
    for (const std::string &node : fetches)
      if (fn < 0 || model_->find_output(fn, "tensors/" + node) < 0)
        throw std::invalid_argument(
            "Estimator: hook graph fetch '" + node +
            "' is not an output "
            "'tensors/" +
            node + "' of the compiled model " + model_->spec().name + "'s " +
            functionName(mode) +
            " function (an AOT model has only what estc compiled into it)");
    return *model_;
  }
  rt::CompiledModel *current() override { return model_.get(); }

private:
  std::unique_ptr<rt::CompiledModel> model_;
};

} // namespace

std::unique_ptr<detail::Backend>
detail::makeAotBackend(std::unique_ptr<rt::CompiledModel> model) {
  return std::make_unique<AotBackend>(std::move(model));
}

} // namespace estimator
} // namespace estc
