//===- HostTransform.cpp - Feature columns as the Estimator's host half ---===//

#include "estimator/FeatureColumnTransform.h"
#include "lib/FeatureColumn/Serialization.h"

namespace estc {
namespace feature_column {

FeatureColumnHostTransform::FeatureColumnHostTransform(
    FeatureColumns feature_columns, std::optional<TensorSpec> labels)
    : transformer_(std::move(feature_columns)), labels_(std::move(labels)) {
  if (labels_)
    labels_->key = "labels";
}

estimator::Batch FeatureColumnHostTransform::transform_input(
    const data::Element &element) const {
  const data::Element *features = &element;
  const data::Element *labels = nullptr;
  if (element.is_tuple()) {
    if (element.size() != 2 || !element[0].is_dict() || !element[1].is_leaf())
      throw data::DataError("feature columns: an input element must be a "
                            "features dict or a (features dict, labels) "
                            "tuple");
    features = &element[0];
    labels = &element[1];
  } else if (!element.is_dict()) {
    throw data::DataError("feature columns: an input element must be a "
                          "features dict or a (features dict, labels) tuple");
  }
  estimator::Batch batch;
  batch.features = transformer_.transform(*features);
  batch.values_features = transformer_.values_inputs();
  batch.sequence_features = transformer_.sequence_inputs();
  if (labels) {
    const auto *t = std::get_if<TensorValue>(&labels->leaf());
    if (!t)
      throw data::DataError("feature columns: the labels are a SparseTensor; "
                            "labels must be dense");
    batch.labels = *t;
  }
  return batch;
}

std::optional<estimator::ElementSpec>
FeatureColumnHostTransform::input_spec(bool with_labels) const {
  if (with_labels && !labels_)
    return std::nullopt;
  estimator::ElementSpec spec;
  spec.features = transformer_.input_specs();
  if (with_labels)
    spec.labels = labels_;
  return spec;
}

std::shared_ptr<const FeatureColumnHostTransform>
make_host_transform(FeatureColumns feature_columns,
                    std::optional<TensorSpec> labels) {
  return std::make_shared<const FeatureColumnHostTransform>(
      std::move(feature_columns), std::move(labels));
}

std::optional<std::string>
FeatureColumnHostTransform::serving_config(const AddAssetFn &add_asset) const {
  return "{\"feature_columns\":" +
         feature_columns_to_json(transformer_.feature_columns(), add_asset) +
         "}";
}

} // namespace feature_column
} // namespace estc
