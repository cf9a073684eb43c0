//===- Example.h - tf.train.Example: parsing and building -------------===//
//
// tf.io.parse_example and tf.io.parse_single_example for C++: serialized
// tf.train.Example records (example.proto) parsed into an element dict, one
// value per feature of a spec, with TF's semantics:
//
//   FixedLenFeature(shape, dtype, default_value)
//       dense [B, shape...]; a record without the feature gets
//       default_value (any shape with as many elements), else it is an error.
//   VarLenFeature(dtype)
//       SparseTensor of dense_shape [B, max count], indices (record, i).
//   FixedLenSequenceFeature(shape, dtype, allow_missing, default_value)
//       dense [B, max steps, shape...]: a record's values are steps of
//       shape; shorter records are padded with default_value (a scalar;
//       0 or "" without one). A record without the feature has no steps
//       when allow_missing, else it is an error. (TF refuses
//       allow_missing=False in parse_example; here it means "required".)
//
// dtype is Float32 (float_list), Int64 (int64_list) or String (bytes_list).
// A feature whose Feature message has no list set counts as missing, as in
// TF. Where a record names a feature twice, the last entry is the one (the
// protobuf message's value; TF's fast path keeps the first and logs it).
//
// The parser reads the wire format straight into the output tensors, only
// for the features of the spec and without building protobuf messages
// (TF's example_proto_fast_parsing does the same), but it accepts exactly
// the records protobuf's own parser accepts, with the same values: the
// generated classes of example.proto are its oracle in tests and in the
// `example` fuzz target.
//
// Errors with the data throw DataError, one line naming the record (its
// index in the batch) and the feature:
//   "record 3: feature 'age' is required but missing (no default_value)"
//   "record 3: feature 'age' is a float_list, expected int64_list"
//   "record 3: feature 'px' has 5 values, expected 6 for shape [2,3]"
//   "record 3: not a valid tf.train.Example (truncated varint at byte 17)"
// A bad spec (dtype, negative dimension, default_value that does not fit)
// is std::invalid_argument.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_EXAMPLE_H
#define ESTC_LIB_DATA_EXAMPLE_H

#include "lib/Data/Value.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace estc {
namespace data {

namespace proto {
class Example;
} // namespace proto

/// tf.io.FixedLenFeature.
struct FixedLenFeature {
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  std::optional<TensorValue> default_value;
};

/// tf.io.VarLenFeature.
struct VarLenFeature {
  DType dtype = DType::Float32;
};

/// tf.io.FixedLenSequenceFeature.
struct FixedLenSequenceFeature {
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  bool allow_missing = false;
  std::optional<TensorValue> default_value;
};

using FeatureSpec =
    std::variant<FixedLenFeature, VarLenFeature, FixedLenSequenceFeature>;
using FeatureSpecs = std::map<std::string, FeatureSpec>;

/// A spec checked and prepared once, for parsing many batches (a dataset's
/// map function). Parsing is const and thread-safe.
class ExampleParser {
public:
  /// std::invalid_argument for a bad spec.
  explicit ExampleParser(FeatureSpecs specs);
  ~ExampleParser();
  ExampleParser(ExampleParser &&) noexcept;
  ExampleParser &operator=(ExampleParser &&) noexcept;

  /// tf.io.parse_example: a dict with one value per feature, batched.
  Element parse_example(const std::vector<std::string_view> &serialized) const;
  /// The same of a String tensor of shape [B].
  Element parse_example(const TensorValue &serialized) const;
  /// tf.io.parse_single_example: FixedLen [shape...], VarLen a rank-1
  /// SparseTensor, FixedLenSequence [steps, shape...]; errors name
  /// "record 0".
  Element parse_single_example(std::string_view serialized) const;
  /// The spec of what parse_example (batched) or parse_single_example
  /// returns; -1 for the dimensions that vary.
  ElementSpec element_spec(bool batched) const;
  const FeatureSpecs &specs() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Element parse_example(const std::vector<std::string_view> &serialized,
                      const FeatureSpecs &specs);
Element parse_example(const TensorValue &serialized, const FeatureSpecs &specs);
Element parse_single_example(std::string_view serialized,
                             const FeatureSpecs &specs);

/// Builds a tf.train.Example (through example.proto's generated classes).
/// Adding a name again replaces its list, as assigning a key of the
/// feature dict does in Python.
class ExampleBuilder {
public:
  ExampleBuilder();
  ~ExampleBuilder();
  ExampleBuilder(const ExampleBuilder &other);
  ExampleBuilder &operator=(const ExampleBuilder &other);

  ExampleBuilder &add_float(const std::string &name, std::vector<float> values);
  ExampleBuilder &add_int64(const std::string &name,
                            std::vector<int64_t> values);
  ExampleBuilder &add_bytes(const std::string &name,
                            std::vector<std::string> values);
  /// The serialized Example; deterministic (features sorted by name).
  std::string serialize() const;
  /// The message itself (lib/Data/example.pb.h).
  const proto::Example &example() const { return *example_; }

private:
  std::unique_ptr<proto::Example> example_;
};

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_EXAMPLE_H
