//===- SequenceExample.h - tf.train.SequenceExample: parsing, building ---===//
//
// tf.io.parse_sequence_example and tf.io.parse_single_sequence_example for
// C++: serialized tf.train.SequenceExample records (example.proto: a
// `context` of Features and `feature_lists`, one FeatureList of per-step
// Features per name) parsed with TF 2.15's semantics (its
// ParseSequenceExampleV2 kernel, checked against TF in
// test/e2e/tf_sequence_example_compat.py).
//
// context_features (FixedLenFeature, VarLenFeature), per record:
//   FixedLenFeature(shape, dtype, default_value)
//       dense [B, shape...]. An absent name gets default_value, else it is an
//       error. A present name must have exactly the shape's count of values:
//       unlike parse_example, a Feature with no list set counts as present
//       with 0 values (TF's sequence kernel), so it does not take the default.
//   VarLenFeature(dtype)
//       SparseTensor, dense_shape [B, max count], indices (record, i).
// sequence_features (FixedLenSequenceFeature, VarLenFeature), per step:
//   FixedLenSequenceFeature(shape, dtype, allow_missing)
//       dense [B, max steps, shape...], every step exactly the shape's count
//       of values, shorter records padded with 0 or "". An absent feature
//       list has no steps when allow_missing, else it is an error. TF
//       refuses a default_value here (std::invalid_argument); the lengths
//       output gives each record's step count, I64 [B].
//   VarLenFeature(dtype)
//       SparseTensor, dense_shape [B, max steps, max count per step],
//       indices (record, step, i); an absent list has no steps.
// A step's Feature with no list set has 0 values; a list of another kind
// is an error even when empty. The same name may be both a context and a
// sequence feature (they are separate maps).
//
// parse_sequence_example returns the tuple (context, feature_lists,
// lengths) of dicts, as TF: `lengths` has one I64 [B] entry per
// FixedLenSequenceFeature. parse_single_sequence_example returns
// (context, feature_lists) without the batch dimension: dense [shape...]
// and [steps, shape...], sparse indices (i) and (step, i).
//
// Records are read with protobuf's parser (example.proto's generated
// classes), so "not a valid tf.train.SequenceExample" is exactly protobuf
// refusing it; a name repeated in a map is its last entry, as protobuf
// has it. Errors with the data throw DataError, one line naming the record
// (its index in the batch) and the feature, and nothing is returned:
//   "record 3: context feature 'age' is required but missing (no
//   default_value)" "record 3: feature list 'tokens' is required but missing
//   (allow_missing is false)" "record 3: feature list 'tokens' step 2 is a
//   float_list, expected int64_list" "record 3: feature list 'tokens' step 2
//   has 3 values, expected 2 for shape [2]" "record 3: not a valid
//   tf.train.SequenceExample"
// A bad spec (no features at all, a kind that does not belong in its dict,
// a dtype other than F32/I64/STRING, a shape with no elements for a
// sequence feature, a default_value that does not fit) is
// std::invalid_argument naming the feature.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_SEQUENCEEXAMPLE_H
#define ESTC_LIB_DATA_SEQUENCEEXAMPLE_H

#include "lib/Data/Example.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace data {

namespace proto {
class SequenceExample;
} // namespace proto

/// A pair of specs checked and prepared once, for parsing many batches (a
/// dataset's map function). Parsing is const and thread-safe.
class SequenceExampleParser {
public:
  /// std::invalid_argument for a bad spec.
  SequenceExampleParser(FeatureSpecs context_features,
                        FeatureSpecs sequence_features);
  ~SequenceExampleParser();
  SequenceExampleParser(SequenceExampleParser &&) noexcept;
  SequenceExampleParser &operator=(SequenceExampleParser &&) noexcept;

  /// tf.io.parse_sequence_example: (context, feature_lists, lengths).
  Element
  parse_sequence_example(const std::vector<std::string_view> &serialized) const;
  /// The same of a String tensor of shape [B].
  Element parse_sequence_example(const TensorValue &serialized) const;
  /// tf.io.parse_single_sequence_example: (context, feature_lists); errors
  /// name "record 0".
  Element parse_single_sequence_example(std::string_view serialized) const;
  /// The spec of what parse_sequence_example (batched, with lengths) or
  /// parse_single_sequence_example returns; -1 for the dimensions that
  /// vary. Its shapes, taken as padded_shapes, are TF's static shapes
  /// (bucket_by_sequence_length with pad_to_bucket_boundary).
  ElementSpec element_spec(bool batched) const;
  const FeatureSpecs &context_features() const;
  const FeatureSpecs &sequence_features() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Element parse_sequence_example(const std::vector<std::string_view> &serialized,
                               const FeatureSpecs &context_features,
                               const FeatureSpecs &sequence_features);
Element parse_single_sequence_example(std::string_view serialized,
                                      const FeatureSpecs &context_features,
                                      const FeatureSpecs &sequence_features);

/// Builds a tf.train.SequenceExample (through example.proto's generated
/// classes). Adding a name again replaces it.
class SequenceExampleBuilder {
public:
  SequenceExampleBuilder();
  ~SequenceExampleBuilder();
  SequenceExampleBuilder(const SequenceExampleBuilder &other);
  SequenceExampleBuilder &operator=(const SequenceExampleBuilder &other);

  SequenceExampleBuilder &add_context_float(const std::string &name,
                                            std::vector<float> values);
  SequenceExampleBuilder &add_context_int64(const std::string &name,
                                            std::vector<int64_t> values);
  SequenceExampleBuilder &add_context_bytes(const std::string &name,
                                            std::vector<std::string> values);
  /// A feature list: one Feature per step.
  SequenceExampleBuilder &
  add_feature_list_float(const std::string &name,
                         const std::vector<std::vector<float>> &steps);
  SequenceExampleBuilder &
  add_feature_list_int64(const std::string &name,
                         const std::vector<std::vector<int64_t>> &steps);
  SequenceExampleBuilder &
  add_feature_list_bytes(const std::string &name,
                         const std::vector<std::vector<std::string>> &steps);
  /// The serialized SequenceExample; deterministic (names sorted).
  std::string serialize() const;
  /// The message itself (lib/Data/example.pb.h).
  const proto::SequenceExample &sequence_example() const { return *message_; }

private:
  std::unique_ptr<proto::SequenceExample> message_;
};

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_SEQUENCEEXAMPLE_H
