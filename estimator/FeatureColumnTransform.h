//===- FeatureColumnTransform.h - Feature columns as the host half --------===//
//
// The Transformer (Transformer.h) in the shape the Estimator takes
// (estimator/Input.h's HostTransform): every element of an input_fn, a
// features dict or a (features dict, labels) tuple, becomes a Batch of the
// columns' model inputs, the ids, rows and weights marked as values
// features; the labels pass through. A custom model_fn over feature
// columns installs it:
//
//   estimator.set_host_transform(feature_column::make_host_transform(columns));
//
// and builds its layers (FeatureLayers.h) on the placeholders this spec
// names. Canned estimators wrap it with their head's label handling.
// Library EstcEstimator (the feature columns themselves link
// no Estimator).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_FEATURECOLUMNTRANSFORM_H
#define ESTC_ESTIMATOR_FEATURECOLUMNTRANSFORM_H

#include "estimator/Input.h"
#include "lib/FeatureColumn/Transformer.h"

#include <memory>
#include <optional>

namespace estc {
namespace feature_column {

class FeatureColumnHostTransform : public estimator::HostTransform {
public:
  /// `labels`: the labels' spec when known (input_spec(true) needs it).
  explicit FeatureColumnHostTransform(FeatureColumns feature_columns,
                                      std::optional<TensorSpec> labels = {});

  /// DataError for bad data (Transformer::transform's) and for an element
  /// that is neither a dict nor a (dict, dense labels) tuple.
  estimator::Batch transform_input(const data::Element &element) const override;
  /// The Transformer's input_specs(); with labels, nullopt unless their
  /// spec was given.
  std::optional<estimator::ElementSpec>
  input_spec(bool with_labels) const override;
  /// The Transformer's feature_keys().
  std::optional<std::set<std::string>> feature_keys() const override {
    return transformer_.feature_keys();
  }
  /// {"feature_columns": [...]} (Serialization.h), for an export.
  std::optional<std::string>
  serving_config(const AddAssetFn &add_asset) const override;
  const Transformer &transformer() const { return transformer_; }

private:
  Transformer transformer_;
  std::optional<TensorSpec> labels_;
};

std::shared_ptr<const FeatureColumnHostTransform>
make_host_transform(FeatureColumns feature_columns,
                    std::optional<TensorSpec> labels = {});

} // namespace feature_column
} // namespace estc

#endif // ESTC_ESTIMATOR_FEATURECOLUMNTRANSFORM_H
