//===- FeatureLayers.h - The graph half of feature columns ----------------===//
//
// Inside a model_fn: the dense tensors and the linear model of feature
// columns, built as est ops from the model inputs the Transformer
// (Transformer.h) feeds: `features` holds the placeholders of
// Transformer::input_specs() (a numeric column's key, a categorical
// column's `<name>/ids`, `/rows`, `/row_lengths`, `/weights`).
//
// What runs here (compiled): normalizer_fn, bucketize, one-hot and
// indicator sums, embedding lookups with their combiners and max_norm, the
// linear model's weighted sums. Columns are taken in TF's order (sorted by
// name) and their variables named as TF names them, under the current name
// scope:
//   input_layer    input_layer[_N]/<column>/embedding_weights
//                  input_layer[_N]/<collection>/embedding_weights (shared)
//   DenseFeatures  <name>/<column>/embedding_weights
//   linear_model   linear_model[_N]/<column>/weights,
//                  linear_model[_N]/bias_weights
// so a canned estimator's scopes give TF's checkpoint names
// ("linear/linear_model/age/weights",
// "dnn/input_from_feature_columns/input_layer/sex_embedding/embedding_weights").
// (TF 2's DenseFeatures puts a shared embedding at the top level, under
// the collection name alone; here it is under the layer, as in TF 1.)
//
// Sequence columns go to SequenceFeatures only (input_layer,
// DenseFeatures and linear_model refuse them, as TF's do):
//   SequenceFeatures <name>/<column>/embedding_weights
//
// Misuse (a categorical column where a dense one is needed, a missing
// input, bad units or combiner) throws std::invalid_argument or GraphError
// naming the column or input.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_FEATURECOLUMN_FEATURELAYERS_H
#define ESTC_LIB_FEATURECOLUMN_FEATURELAYERS_H

#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/PartitionedVariables.h"

#include <cstdint>
#include <string>

namespace estc {
namespace feature_column {

/// tf.compat.v1.feature_column.input_layer: the dense columns' values,
/// [batch, sum of their num_elements()], concatenated in name order.
/// Variables under a new scope "input_layer" ("input_layer_1", ...).
/// With a `partitioner` (TF 1's variable_scope partitioner around it: a
/// canned estimator's input_layer_partitioner), each embedding table is a
/// partitioned variable, "<column>/embedding_weights/part_<i>", looked up
/// with the "div" strategy as TF's embedding columns do.
Tensor input_layer(const TensorMap &features,
                   const FeatureColumns &feature_columns, bool trainable = true,
                   const Partitioner &partitioner = nullptr);

/// tf.keras.layers.DenseFeatures (tf.compat.v1's, as canned estimators use
/// it): input_layer as a layer object whose variables live under `name`
/// and are shared by every call (and every mode).
class DenseFeatures {
public:
  explicit DenseFeatures(FeatureColumns feature_columns, bool trainable = true,
                         std::string name = "dense_features");
  Tensor operator()(const TensorMap &features) const;
  const std::string &name() const { return name_; }

private:
  FeatureColumns columns_;
  bool trainable_;
  std::string name_;
};

/// tf.compat.v1.feature_column.linear_model: [batch, units] =
/// sum over columns of their weighted sums + bias_weights. A dense column
/// multiplies its value by `weights` [num_elements, units]; a categorical
/// column (a bucketized one too) combines the rows of `weights`
/// [num_buckets, units] of its ids with sparse_combiner ("sum", "mean",
/// "sqrtn"). Every weight starts at zero. Variables under a new scope
/// "linear_model" ("linear_model_1", ...). With a `partitioner` (TF 1's
/// LinearClassifier `partitioner`), every variable is a partitioned one
/// ("<column>/weights/part_<i>", "bias_weights/part_0"), the categorical
/// columns' weights looked up with the "div" strategy.
Tensor linear_model(const TensorMap &features,
                    const FeatureColumns &feature_columns, int64_t units = 1,
                    const std::string &sparse_combiner = "sum",
                    bool trainable = true,
                    const Partitioner &partitioner = nullptr);

/// What SequenceFeatures gives: the columns' values, [batch, T, sum of
/// their per-step sizes], and each example's length, I64 [batch].
struct SequenceInput {
  Tensor input;
  Tensor sequence_length;
};

/// tf.keras.experimental.SequenceFeatures: the sequence columns'
/// (sequence_numeric_column; embedding_column and indicator_column of a
/// sequence_categorical_column_*) values per step, concatenated in name
/// order along the last axis, and the sequence lengths (equal for every
/// column: the Transformer refuses a batch where they differ, where TF's
/// layer asserts at run time). An embedding looks up each step's id
/// (`<name>/<column>/embedding_weights`, shared by every call); a step
/// without an id is zeros, as an indicator is. std::invalid_argument for a
/// column that is not a sequence column.
class SequenceFeatures {
public:
  explicit SequenceFeatures(FeatureColumns feature_columns,
                            bool trainable = true,
                            std::string name = "sequence_features");
  SequenceInput operator()(const TensorMap &features) const;
  const std::string &name() const { return name_; }

private:
  FeatureColumns columns_;
  bool trainable_;
  std::string name_;
};

/// TF's concatenate_context_input: context [batch, d] repeated at every
/// step after the sequence input's features: [batch, T, F + d].
/// std::invalid_argument for ranks other than 3 and 2.
Tensor concatenate_context_input(const Tensor &context_input,
                                 const Tensor &sequence_input);

/// The model inputs of a categorical column whose ids the host computes
/// (GraphError naming the missing input).
SparseIds sparse_ids(const TensorMap &features,
                     const CategoricalColumn &categorical_column);

} // namespace feature_column
} // namespace estc

#endif // ESTC_LIB_FEATURECOLUMN_FEATURELAYERS_H
