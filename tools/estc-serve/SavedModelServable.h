//===- SavedModelServable.h - serving::SavedModel as estc-serve's servable
//-===//
//
// The Loader estc-serve serves exports with: versions are
// serving::list_versions' all-digit folders, each loaded with
// serving::SavedModel::load (a LoadError is the one line the manager logs).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_SAVEDMODELSERVABLE_H
#define ESTC_ESTIMATOR_SERVING_SAVEDMODELSERVABLE_H

#include "runtime/serving/SavedModel.h"
#include "tools/estc-serve/ModelManager.h"

namespace estc {
namespace serving {

/// A loaded SavedModel behind the Servable interface.
class SavedModelServable : public Servable {
public:
  explicit SavedModelServable(std::shared_ptr<const SavedModel> model)
      : model_(std::move(model)) {}
  const std::map<std::string, SignatureDef> &signatures() const override {
    return model_->signatures();
  }
  TensorMap run(const std::string &signature, const TensorMap &inputs,
                const std::vector<std::string> &output_filter) const override {
    return model_->run(signature, inputs, output_filter);
  }
  const SavedModel &saved_model() const { return *model_; }

private:
  std::shared_ptr<const SavedModel> model_;
};

/// list_versions + SavedModel::load(dir, options).
Loader saved_model_loader(LoadOptions options = {});

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_SAVEDMODELSERVABLE_H
