//===- FeatureColumn.h - tf.feature_column for estc ----------------------===//
//
// TF 2.15's feature columns: immutable descriptions of how a model turns
// raw features (numbers, strings, integer ids, dense or sparse) into the
// dense tensors of its first layer. The functions mirror tf.feature_column
// (names, arguments, defaults, column names, validation); each returns a
// column held by shared_ptr, which other columns and the layers share.
//
// A column has two halves (docs/design/feature-columns.md):
//   - host (Transformer.h): on every batch, strings and raw ids become the
//     model inputs: vocabulary lookups, hash buckets, crosses, identity
//     ranges, weights, numeric casts;
//   - graph (FeatureLayers.h): inside the compiled step: normalizer_fn,
//     bucketize, indicators, embeddings and the linear model.
//
// Column kinds follow TF's class hierarchy: a DenseColumn has a dense value
// per example (variable_shape), a CategoricalColumn sparse ids in
// [0, num_buckets); a bucketized column is both.
//
// Misuse (an empty key, a bad argument, columns that cannot be combined)
// throws std::invalid_argument with one line naming the column or key.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_FEATURECOLUMN_FEATURECOLUMN_H
#define ESTC_LIB_FEATURECOLUMN_FEATURECOLUMN_H

#include "lib/Data/Example.h"
#include "lib/Data/Vocabulary.h"
#include "lib/Graph/GraphBuilder.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace estc {
namespace feature_column {

/// The base of every column.
class FeatureColumn {
public:
  virtual ~FeatureColumn();
  /// TF's name ("age", "age_bucketized", "age_bucketized_X_sex",
  /// "sex_indicator", "sex_embedding"); model inputs, variables and the
  /// order of columns in a layer (sorted by name) follow it.
  virtual std::string name() const = 0;
  /// What tf.io.parse_example needs to produce this column's features.
  virtual data::FeatureSpecs parse_example_spec() const = 0;

protected:
  FeatureColumn() = default;
  FeatureColumn(const FeatureColumn &) = default;
};

/// A column with a dense value per example (TF's DenseColumn).
class DenseColumn : public virtual FeatureColumn {
public:
  /// The shape of one example's value (TF's variable_shape).
  virtual Dims variable_shape() const = 0;
  /// The number of elements of variable_shape().
  int64_t num_elements() const;
};

/// A column of sparse ids (TF's CategoricalColumn).
class CategoricalColumn : public virtual FeatureColumn {
public:
  /// Ids lie in [0, num_buckets()).
  virtual int64_t num_buckets() const = 0;
};

using FeatureColumnPtr = std::shared_ptr<const FeatureColumn>;
using DenseColumnPtr = std::shared_ptr<const DenseColumn>;
using CategoricalColumnPtr = std::shared_ptr<const CategoricalColumn>;
using FeatureColumns = std::vector<FeatureColumnPtr>;

/// numeric_column's normalizer_fn: builds graph ops on the column's F32
/// value inside the compiled step.
using NormalizerFn = std::function<Tensor(const Tensor &)>;

// --- The columns ------------------------------------------------------------
// Built by the functions below, which check the arguments.

class NumericColumn final : public DenseColumn {
public:
  NumericColumn(std::string key, Dims shape, std::vector<double> default_value,
                DType dtype, NormalizerFn normalizer_fn);
  std::string name() const override { return key_; }
  data::FeatureSpecs parse_example_spec() const override;
  Dims variable_shape() const override { return shape_; }
  const std::string &key() const { return key_; }
  const Dims &shape() const { return shape_; }
  /// One value per element of shape, or none (empty).
  const std::vector<double> &default_value() const { return defaultValue_; }
  DType dtype() const { return dtype_; }
  const NormalizerFn &normalizer_fn() const { return normalizer_; }

private:
  std::string key_;
  Dims shape_;
  std::vector<double> defaultValue_;
  DType dtype_;
  NormalizerFn normalizer_;
};

class BucketizedColumn final : public DenseColumn, public CategoricalColumn {
public:
  BucketizedColumn(std::shared_ptr<const NumericColumn> source_column,
                   std::vector<double> boundaries);
  std::string name() const override;
  data::FeatureSpecs parse_example_spec() const override;
  /// source shape + [len(boundaries) + 1] (a one-hot per source element).
  Dims variable_shape() const override;
  /// (len(boundaries) + 1) * source elements: element i of the source
  /// value gets ids i * (len(boundaries) + 1) + bucket.
  int64_t num_buckets() const override;
  const std::shared_ptr<const NumericColumn> &source_column() const {
    return source_;
  }
  const std::vector<double> &boundaries() const { return boundaries_; }

private:
  std::shared_ptr<const NumericColumn> source_;
  std::vector<double> boundaries_;
};

class IdentityCategoricalColumn final : public CategoricalColumn {
public:
  IdentityCategoricalColumn(std::string key, int64_t num_buckets,
                            std::optional<int64_t> default_value);
  std::string name() const override { return key_; }
  data::FeatureSpecs parse_example_spec() const override;
  int64_t num_buckets() const override { return numBuckets_; }
  const std::string &key() const { return key_; }
  const std::optional<int64_t> &default_value() const { return default_; }

private:
  std::string key_;
  int64_t numBuckets_;
  std::optional<int64_t> default_;
};

class HashedCategoricalColumn final : public CategoricalColumn {
public:
  HashedCategoricalColumn(std::string key, int64_t hash_bucket_size,
                          DType dtype);
  std::string name() const override { return key_; }
  data::FeatureSpecs parse_example_spec() const override;
  int64_t num_buckets() const override { return size_; }
  const std::string &key() const { return key_; }
  int64_t hash_bucket_size() const { return size_; }
  DType dtype() const { return dtype_; }

private:
  std::string key_;
  int64_t size_;
  DType dtype_;
};

/// categorical_column_with_vocabulary_list's vocabulary: strings or
/// integers (`{"a", "b"}` or `{1, 2}`).
class VocabularyList {
public:
  VocabularyList(std::initializer_list<std::string> strings)
      : strings_(strings) {}
  VocabularyList(std::vector<std::string> strings)
      : strings_(std::move(strings)) {}
  VocabularyList(std::initializer_list<int64_t> ints)
      : ints_(ints), isInt_(true) {}
  VocabularyList(std::vector<int64_t> ints)
      : ints_(std::move(ints)), isInt_(true) {}
  bool is_int() const { return isInt_; }
  const std::vector<std::string> &strings() const { return strings_; }
  const std::vector<int64_t> &ints() const { return ints_; }
  int64_t size() const {
    return static_cast<int64_t>(isInt_ ? ints_.size() : strings_.size());
  }

private:
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  bool isInt_ = false;
};

/// The list and file vocabulary columns: a key's id is its position in the
/// vocabulary, else an OOV bucket or default_value (lib/Data/Vocabulary.h).
class VocabularyCategoricalColumn : public CategoricalColumn {
public:
  std::string name() const override { return key_; }
  data::FeatureSpecs parse_example_spec() const override;
  int64_t num_buckets() const override { return vocabularySize_ + numOov_; }
  const std::string &key() const { return key_; }
  DType dtype() const { return dtype_; }
  int64_t default_value() const { return default_; }
  int64_t num_oov_buckets() const { return numOov_; }
  const data::VocabularyLookup &lookup() const { return *lookup_; }

protected:
  VocabularyCategoricalColumn(std::string key, DType dtype,
                              int64_t default_value, int64_t num_oov_buckets);
  std::string key_;
  DType dtype_;
  int64_t default_;
  int64_t numOov_;
  int64_t vocabularySize_ = 0;
  std::shared_ptr<const data::VocabularyLookup> lookup_;
};

class VocabularyListCategoricalColumn final
    : public VocabularyCategoricalColumn {
public:
  VocabularyListCategoricalColumn(std::string key,
                                  VocabularyList vocabulary_list,
                                  std::optional<DType> dtype,
                                  int64_t default_value,
                                  int64_t num_oov_buckets);
  const VocabularyList &vocabulary_list() const { return list_; }

private:
  VocabularyList list_;
};

class VocabularyFileCategoricalColumn final
    : public VocabularyCategoricalColumn {
public:
  /// Reads the vocabulary (DataError naming the file when it cannot).
  VocabularyFileCategoricalColumn(std::string key, std::string vocabulary_file,
                                  std::optional<int64_t> vocabulary_size,
                                  DType dtype,
                                  std::optional<int64_t> default_value,
                                  int64_t num_oov_buckets);
  const std::string &vocabulary_file() const { return file_; }
  int64_t vocabulary_size() const { return vocabularySize_; }

private:
  std::string file_;
};

/// One key of crossed_column: a feature key (its raw values are crossed)
/// or a categorical column (its ids are), a bucketized column included.
class CrossKey {
public:
  CrossKey(std::string key) : key_(std::move(key)) {}
  CrossKey(const char *key) : key_(key) {}
  template <typename T, typename = std::enable_if_t<
                            std::is_base_of_v<CategoricalColumn, T>>>
  CrossKey(std::shared_ptr<T> column)
      : column_(CategoricalColumnPtr(std::move(column))) {}

  bool is_column() const { return column_ != nullptr; }
  const std::string &key() const { return key_; }
  const CategoricalColumnPtr &column() const { return column_; }
  /// The key, or the column's name.
  std::string name() const { return column_ ? column_->name() : key_; }

private:
  std::string key_;
  CategoricalColumnPtr column_;
};

class CrossedColumn final : public CategoricalColumn {
public:
  CrossedColumn(std::vector<CrossKey> keys, int64_t hash_bucket_size,
                std::optional<uint64_t> hash_key);
  /// The leaf names, sorted, joined by "_X_".
  std::string name() const override;
  data::FeatureSpecs parse_example_spec() const override;
  int64_t num_buckets() const override { return size_; }
  const std::vector<CrossKey> &keys() const { return keys_; }
  /// The keys with nested crosses expanded (what is crossed, in order).
  std::vector<CrossKey> leaf_keys() const;
  int64_t hash_bucket_size() const { return size_; }
  /// TF's hash_key=None is data::kDefaultCrossHashKey.
  uint64_t hash_key() const { return hashKey_; }

private:
  std::vector<CrossKey> keys_;
  int64_t size_;
  uint64_t hashKey_;
};

class WeightedCategoricalColumn final : public CategoricalColumn {
public:
  WeightedCategoricalColumn(CategoricalColumnPtr categorical_column,
                            std::string weight_feature_key, DType dtype);
  /// "<categorical>_weighted_by_<weight_feature_key>".
  std::string name() const override;
  data::FeatureSpecs parse_example_spec() const override;
  int64_t num_buckets() const override { return cat_->num_buckets(); }
  const CategoricalColumnPtr &categorical_column() const { return cat_; }
  const std::string &weight_feature_key() const { return weightKey_; }
  DType dtype() const { return dtype_; }

private:
  CategoricalColumnPtr cat_;
  std::string weightKey_;
  DType dtype_;
};

class IndicatorColumn final : public DenseColumn {
public:
  explicit IndicatorColumn(CategoricalColumnPtr categorical_column);
  std::string name() const override { return cat_->name() + "_indicator"; }
  data::FeatureSpecs parse_example_spec() const override {
    return cat_->parse_example_spec();
  }
  /// [num_buckets]: per-id counts (or summed weights) of the example.
  Dims variable_shape() const override { return {cat_->num_buckets()}; }
  const CategoricalColumnPtr &categorical_column() const { return cat_; }

private:
  CategoricalColumnPtr cat_;
};

class EmbeddingColumn final : public DenseColumn {
public:
  EmbeddingColumn(CategoricalColumnPtr categorical_column, int64_t dimension,
                  std::string combiner, std::optional<Initializer> initializer,
                  std::optional<double> max_norm, bool trainable);
  std::string name() const override { return cat_->name() + "_embedding"; }
  data::FeatureSpecs parse_example_spec() const override {
    return cat_->parse_example_spec();
  }
  Dims variable_shape() const override { return {dimension_}; }
  const CategoricalColumnPtr &categorical_column() const { return cat_; }
  int64_t dimension() const { return dimension_; }
  const std::string &combiner() const { return combiner_; }
  /// The variable's initializer (TF's default when none was given).
  const Initializer &initializer() const { return initializer_; }
  const std::optional<double> &max_norm() const { return maxNorm_; }
  bool trainable() const { return trainable_; }

private:
  CategoricalColumnPtr cat_;
  int64_t dimension_;
  std::string combiner_;
  Initializer initializer_;
  std::optional<double> maxNorm_;
  bool trainable_;
};

/// What the columns of one shared_embedding_columns call share: the
/// variable [num_buckets, dimension] named shared_embedding_collection_name.
struct SharedEmbeddingState {
  std::string collection_name;
  int64_t num_buckets = 0;
  int64_t dimension = 0;
  Initializer initializer;
  bool trainable = true;
};

class SharedEmbeddingColumn final : public DenseColumn {
public:
  SharedEmbeddingColumn(CategoricalColumnPtr categorical_column,
                        std::shared_ptr<const SharedEmbeddingState> shared,
                        std::string combiner, std::optional<double> max_norm);
  std::string name() const override {
    return cat_->name() + "_shared_embedding";
  }
  data::FeatureSpecs parse_example_spec() const override {
    return cat_->parse_example_spec();
  }
  Dims variable_shape() const override { return {shared_->dimension}; }
  const CategoricalColumnPtr &categorical_column() const { return cat_; }
  const SharedEmbeddingState &shared() const { return *shared_; }
  const std::string &combiner() const { return combiner_; }
  const std::optional<double> &max_norm() const { return maxNorm_; }

private:
  CategoricalColumnPtr cat_;
  std::shared_ptr<const SharedEmbeddingState> shared_;
  std::string combiner_;
  std::optional<double> maxNorm_;
};

/// TF's SequenceCategoricalColumn: the ids of `categorical_column`
/// (identity, hash bucket, vocabulary list or file), one per step of a
/// sequence: a feature [batch, T] (a SparseTensor, or dense with TF's
/// missing values) gives ids [batch, T] and each example's length (its last
/// step with an id, plus one). Used through embedding_column or
/// indicator_column in SequenceFeatures (FeatureLayers.h).
class SequenceCategoricalColumn final : public CategoricalColumn {
public:
  explicit SequenceCategoricalColumn(CategoricalColumnPtr categorical_column);
  /// The wrapped column's name (TF's).
  std::string name() const override { return cat_->name(); }
  data::FeatureSpecs parse_example_spec() const override {
    return cat_->parse_example_spec();
  }
  int64_t num_buckets() const override { return cat_->num_buckets(); }
  const CategoricalColumnPtr &categorical_column() const { return cat_; }
  /// The raw feature the ids come from.
  const std::string &key() const;

private:
  CategoricalColumnPtr cat_;
};

/// TF's SequenceNumericColumn: a value of `shape` per step; the feature is
/// a SparseTensor [batch, T * num_elements] (or [batch, T, num_elements]),
/// missing values become default_value.
class SequenceNumericColumn final : public FeatureColumn {
public:
  SequenceNumericColumn(std::string key, Dims shape, double default_value,
                        DType dtype, NormalizerFn normalizer_fn);
  std::string name() const override { return key_; }
  data::FeatureSpecs parse_example_spec() const override;
  const std::string &key() const { return key_; }
  /// One step's value (TF's variable_shape).
  const Dims &shape() const { return shape_; }
  int64_t num_elements() const;
  double default_value() const { return defaultValue_; }
  DType dtype() const { return dtype_; }
  const NormalizerFn &normalizer_fn() const { return normalizer_; }

private:
  std::string key_;
  Dims shape_;
  double defaultValue_;
  DType dtype_;
  NormalizerFn normalizer_;
};

/// Whether `c` is a sequence column: sequence_numeric_column, a
/// SequenceCategoricalColumn, or an embedding / indicator column of one.
bool is_sequence_column(const FeatureColumn &c);

// --- tf.feature_column ------------------------------------------------------

/// tf.feature_column.numeric_column: a dense feature of `shape` per example
/// (the model input is F32, whatever `dtype`; `dtype` is what
/// parse_example reads). default_value: none (empty), one value (every
/// element) or one per element; used when a tf.Example lacks the feature.
std::shared_ptr<const NumericColumn>
numeric_column(const std::string &key, Dims shape = {1},
               std::vector<double> default_value = {},
               DType dtype = DType::Float32,
               NormalizerFn normalizer_fn = nullptr);

/// tf.feature_column.bucketized_column: bucket = the number of boundaries
/// <= x (boundaries strictly ascending, compared in float32 as TF's
/// Bucketize op); source_column of rank-1 shape.
std::shared_ptr<const BucketizedColumn>
bucketized_column(std::shared_ptr<const NumericColumn> source_column,
                  std::vector<double> boundaries);

/// tf.feature_column.categorical_column_with_identity: the integer value is
/// the id. Ids outside [0, num_buckets) become default_value, or, without
/// one, are a DataError when the ids reach the model (negative ids are
/// missing values, as in TF).
std::shared_ptr<const IdentityCategoricalColumn>
categorical_column_with_identity(const std::string &key, int64_t num_buckets,
                                 std::optional<int64_t> default_value = {});

/// tf.feature_column.categorical_column_with_hash_bucket: Fingerprint64 of
/// the value (an integer as its decimal string) mod hash_bucket_size.
std::shared_ptr<const HashedCategoricalColumn>
categorical_column_with_hash_bucket(const std::string &key,
                                    int64_t hash_bucket_size,
                                    DType dtype = DType::String);

/// tf.feature_column.categorical_column_with_vocabulary_list. dtype: the
/// vocabulary's (String or Int64) when absent; an integer dtype for an int
/// vocabulary, String for strings.
std::shared_ptr<const VocabularyListCategoricalColumn>
categorical_column_with_vocabulary_list(const std::string &key,
                                        VocabularyList vocabulary_list,
                                        std::optional<DType> dtype = {},
                                        int64_t default_value = -1,
                                        int64_t num_oov_buckets = 0);

/// tf.feature_column.categorical_column_with_vocabulary_file: one key per
/// line; vocabulary_size absent: every line of the file. The file is read
/// here, once (DataError naming it when it is missing or too short).
std::shared_ptr<const VocabularyFileCategoricalColumn>
categorical_column_with_vocabulary_file(
    const std::string &key, const std::string &vocabulary_file,
    std::optional<int64_t> vocabulary_size = {}, DType dtype = DType::String,
    std::optional<int64_t> default_value = {}, int64_t num_oov_buckets = 0);

/// tf.feature_column.crossed_column: tf.sparse.cross_hashed of the keys'
/// values (feature keys: raw strings or integers; categorical columns:
/// their ids) mod hash_bucket_size. Not of hash bucket or weighted columns.
std::shared_ptr<const CrossedColumn>
crossed_column(std::vector<CrossKey> keys, int64_t hash_bucket_size,
               std::optional<uint64_t> hash_key = {});

/// tf.feature_column.indicator_column: multi-hot [num_buckets] (counts, or
/// summed weights of a weighted column).
std::shared_ptr<const IndicatorColumn>
indicator_column(CategoricalColumnPtr categorical_column);

/// tf.feature_column.embedding_column: variable `embedding_weights`
/// [num_buckets, dimension]; combiner "mean", "sqrtn" or "sum"; initializer
/// default truncated_normal(0, 1/sqrt(dimension)); max_norm clips each
/// looked-up embedding's L2 norm. ckpt_to_load_from and tensor_name_in_ckpt
/// (both or neither, as TF): the variable starts from that tensor of a
/// checkpoint (a prefix, a file or a model_dir; TF's or estc's), F32
/// [num_buckets, dimension], read when the column is made (TF's
/// init_from_checkpoint: it replaces the initializer; a model_dir's own
/// checkpoint still wins when the Estimator restores). Last here (TF has
/// them before max_norm), so that positional calls keep their meaning.
std::shared_ptr<const EmbeddingColumn>
embedding_column(CategoricalColumnPtr categorical_column, int64_t dimension,
                 const std::string &combiner = "mean",
                 std::optional<Initializer> initializer = {},
                 std::optional<double> max_norm = {}, bool trainable = true,
                 const std::string &ckpt_to_load_from = "",
                 const std::string &tensor_name_in_ckpt = "");

/// tf.compat.v1.feature_column.shared_embedding_columns: one embedding
/// variable for columns of the same kind and num_buckets, named
/// shared_embedding_collection_name (default: the columns' names, sorted,
/// joined by "_", + "_shared_embedding"). Columns in the given order.
std::vector<std::shared_ptr<const SharedEmbeddingColumn>>
shared_embedding_columns(
    const std::vector<CategoricalColumnPtr> &categorical_columns,
    int64_t dimension, const std::string &combiner = "mean",
    std::optional<Initializer> initializer = {},
    const std::string &shared_embedding_collection_name = "",
    std::optional<double> max_norm = {}, bool trainable = true);

/// tf.feature_column.weighted_categorical_column: each id of
/// categorical_column weighted by the value at the same position of
/// weight_feature_key (dtype: what parse_example reads).
std::shared_ptr<const WeightedCategoricalColumn>
weighted_categorical_column(CategoricalColumnPtr categorical_column,
                            const std::string &weight_feature_key,
                            DType dtype = DType::Float32);

// --- tf.feature_column.sequence_* -------------------------------------------
// Arguments, defaults and checks are those of the non-sequence functions
// (TF's sequence functions call them).

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_identity(
    const std::string &key, int64_t num_buckets,
    std::optional<int64_t> default_value = {});

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_hash_bucket(const std::string &key,
                                             int64_t hash_bucket_size,
                                             DType dtype = DType::String);

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_vocabulary_list(
    const std::string &key, VocabularyList vocabulary_list,
    std::optional<DType> dtype = {}, int64_t default_value = -1,
    int64_t num_oov_buckets = 0);

/// TF's argument order: num_oov_buckets before default_value and dtype.
std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_vocabulary_file(
    const std::string &key, const std::string &vocabulary_file,
    std::optional<int64_t> vocabulary_size = {}, int64_t num_oov_buckets = 0,
    std::optional<int64_t> default_value = {}, DType dtype = DType::String);

/// tf.feature_column.sequence_numeric_column: `shape` per step (the model
/// input is F32, whatever `dtype`, which is what parse_example reads);
/// default_value fills the steps and elements a sequence lacks;
/// normalizer_fn runs in the compiled step on the values given (not on
/// the padding), as TF applies it to the SparseTensor's values.
std::shared_ptr<const SequenceNumericColumn> sequence_numeric_column(
    const std::string &key, Dims shape = {1}, double default_value = 0.0,
    DType dtype = DType::Float32, NormalizerFn normalizer_fn = nullptr);

/// tf.feature_column.make_parse_example_spec: every feature the columns
/// read (std::invalid_argument when two columns want different specs of
/// one key).
data::FeatureSpecs
make_parse_example_spec(const FeatureColumns &feature_columns);

/// The columns sorted by name (TF's order in a layer);
/// std::invalid_argument for no columns, a null column or two columns of
/// one name.
FeatureColumns sorted_by_name(const FeatureColumns &feature_columns);

namespace detail {
/// `c` as a T (dynamic_cast), or null.
template <typename T> const T *as(const FeatureColumn *c) {
  return dynamic_cast<const T *>(c);
}
/// std::invalid_argument naming `what` unless `combiner` is one of
/// embedding_column's: "mean", "sqrtn", "sum".
void requireCombiner(const std::string &what, const std::string &combiner);
} // namespace detail

} // namespace feature_column
} // namespace estc

#endif // ESTC_LIB_FEATURECOLUMN_FEATURECOLUMN_H
