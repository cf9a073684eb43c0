//===- Transformer.h - The host half of feature columns -------------------===//
//
// Turns a batch's raw features into the inputs of a compiled model that
// uses feature columns (docs/design/feature-columns.md, "What compiled
// code receives"):
//
//   numeric_column (and the source of a bucketized column used directly):
//       <key>                F32 [batch] + shape
//   a categorical column (identity, hash bucket, vocabulary, crossed,
//   weighted), under its name:
//       <name>/ids           I64 [n]      ids in [0, num_buckets)
//       <name>/rows          I64 [n]      batch row of each id, ascending
//       <name>/row_lengths   I64 [batch]  ids per row
//       <name>/weights       F32 [n]      weighted_categorical_column only
//
//   a sequence column (docs/feature-columns.md, "Sequence columns"), padded
//   to the batch's longest sequence T (a run-time sequence dimension, the
//   same T for every sequence column of the batch):
//       <name>/ids              I64 [batch, T]     -1 where a step has no id
//       <key>                   F32 [batch, T, k]  sequence_numeric_column:
//                                                  k values per step
//       <key>/mask              F32 [batch, T, k]  1 where a value was given
//                                                  (with a normalizer_fn)
//       <name>/sequence_length  I64 [batch]
//
// n varies from batch to batch (values_inputs()). The ids are TF's for the
// same data, bit for bit: hash buckets and crosses (lib/Data/Hashing.h),
// vocabularies with OOV buckets or default_value, identity ranges, crosses
// of bucketized and vocabulary columns. Negative ids are pruned, as
// tf.nn.safe_embedding_lookup_sparse prunes them.
//
// Raw features (a data::Element dict) are dense tensors [batch] or
// [batch, k, ...] of numbers or strings, or SparseTensors [batch, ...].
// Missing values follow TF's feature columns: in a dense tensor, "" (string)
// and -1 (integer) are missing for a categorical column, and 0 is a missing
// weight; in a SparseTensor only the absent entries are missing (there ""
// is a value). The raw values of a crossed column's feature keys are all
// crossed, "" included, as tf.sparse.cross_hashed does.
//
// Bad data throws data::DataError, one line naming the column and the
// feature, and the batch row when one row is at fault:
//   "categorical_column_with_identity 'item': id 12 at batch row 3 is
//    outside [0, 10) (no default_value)"
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_FEATURECOLUMN_TRANSFORMER_H
#define ESTC_LIB_FEATURECOLUMN_TRANSFORMER_H

#include "lib/Data/Value.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/Graph/GraphBuilder.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace estc {
namespace feature_column {

/// The model-input keys of a categorical column's ids.
std::string ids_key(const std::string &column_name);
std::string rows_key(const std::string &column_name);
std::string row_lengths_key(const std::string &column_name);
std::string weights_key(const std::string &column_name);
std::string sequence_length_key(const std::string &column_name);
std::string mask_key(const std::string &column_name);

/// The model inputs, by key.
using ModelInputs = std::map<std::string, TensorValue>;

class Transformer {
public:
  /// The columns a model uses (those given to input_layer / linear_model /
  /// a canned estimator). std::invalid_argument for no columns, duplicate
  /// names, two columns that need one input key differently, or a cross of
  /// a bucketized column with a normalizer_fn (which runs compiled).
  explicit Transformer(FeatureColumns feature_columns);

  /// The model inputs of one batch of raw features (a dict; other fields
  /// are ignored). DataError for bad or missing data.
  ModelInputs transform(const data::Element &features) const;
  ModelInputs
  transform(const std::map<std::string, TensorValue> &features) const;

  /// Every model input: key, dtype, shape with -1 for the batch, for the
  /// number of values n (those `values_dim`) and for the sequence length T
  /// (those `sequence_dim`). In key order.
  std::vector<TensorSpec> input_specs() const;
  /// The keys whose first dimension is n, not the batch (ids, rows,
  /// weights): the `values_dim` ones (Batch::values_features).
  const std::set<std::string> &values_inputs() const;
  /// The keys whose second dimension is the sequence length T (the
  /// `sequence_dim` ones: Batch::sequence_features).
  const std::set<std::string> &sequence_inputs() const;
  /// The raw feature keys the columns read.
  std::set<std::string> feature_keys() const;
  const FeatureColumns &feature_columns() const;

  struct Impl;

private:
  // Immutable after construction: copies share it, and transform() may run
  // on several threads at once.
  std::shared_ptr<const Impl> impl_;
};

} // namespace feature_column
} // namespace estc

#endif // ESTC_LIB_FEATURECOLUMN_TRANSFORMER_H
