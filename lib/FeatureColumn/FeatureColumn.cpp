//===- FeatureColumn.cpp - tf.feature_column for estc --------------------===//

#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Data/Hashing.h"
#include "lib/Data/TextLine.h"
#include "lib/Tensor/TensorValue.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <typeinfo>

namespace estc {
namespace feature_column {

void detail::requireCombiner(const std::string &what,
                             const std::string &combiner) {
  if (combiner != "mean" && combiner != "sqrtn" && combiner != "sum")
    throw std::invalid_argument(what +
                                ": combiner must be 'mean', 'sqrtn' or "
                                "'sum', not '" +
                                combiner + "'");
}
using detail::requireCombiner;

namespace {

void requireKey(const std::string &fn, const std::string &key) {
  if (key.empty())
    throw std::invalid_argument(fn + ": key must be a non-empty string");
}

void requireStringOrInt(const std::string &what, DType dtype) {
  if (dtype != DType::String && !is_integer(dtype))
    throw std::invalid_argument(
        what + ": dtype must be string or integer, not " + tf_name(dtype));
}

/// A FixedLenFeature default of `dtype` and `shape` from doubles.
TensorValue defaultTensor(DType dtype, const Dims &shape,
                          const std::vector<double> &v) {
  switch (dtype) {
  case DType::Float32:
    return TensorValue::of<float>(shape,
                                  std::vector<float>(v.begin(), v.end()));
  case DType::Float64:
    return TensorValue::of<double>(shape, v);
  case DType::Int32: {
    std::vector<int32_t> i;
    for (double x : v)
      i.push_back(static_cast<int32_t>(x));
    return TensorValue::of<int32_t>(shape, i);
  }
  default: {
    std::vector<int64_t> i;
    for (double x : v)
      i.push_back(static_cast<int64_t>(x));
    return TensorValue::of<int64_t>(shape, i);
  }
  }
}

bool sameTensor(const std::optional<TensorValue> &a,
                const std::optional<TensorValue> &b) {
  if (a.has_value() != b.has_value())
    return false;
  return !a || (a->dtype == b->dtype && a->shape == b->shape &&
                a->data == b->data && a->strings == b->strings);
}

bool sameSpec(const data::FeatureSpec &a, const data::FeatureSpec &b) {
  if (a.index() != b.index())
    return false;
  if (const auto *f = std::get_if<data::FixedLenFeature>(&a)) {
    const auto &g = std::get<data::FixedLenFeature>(b);
    return f->shape == g.shape && f->dtype == g.dtype &&
           sameTensor(f->default_value, g.default_value);
  }
  if (const auto *f = std::get_if<data::VarLenFeature>(&a))
    return f->dtype == std::get<data::VarLenFeature>(b).dtype;
  const auto &f = std::get<data::FixedLenSequenceFeature>(a);
  const auto &g = std::get<data::FixedLenSequenceFeature>(b);
  return f.shape == g.shape && f.dtype == g.dtype &&
         f.allow_missing == g.allow_missing &&
         sameTensor(f.default_value, g.default_value);
}

std::string specStr(const data::FeatureSpec &s) {
  if (const auto *f = std::get_if<data::FixedLenFeature>(&s))
    return std::string("FixedLenFeature(") + shape_string(f->shape) + ", " +
           tf_name(f->dtype) + (f->default_value ? ", default" : "") + ")";
  if (const auto *f = std::get_if<data::VarLenFeature>(&s))
    return std::string("VarLenFeature(") + tf_name(f->dtype) + ")";
  return "FixedLenSequenceFeature";
}

void requireMaxNorm(const std::string &what, const std::optional<double> &m) {
  if (m && !(*m > 0))
    throw std::invalid_argument(what + ": max_norm must be > 0, not " +
                                std::to_string(*m));
}

Initializer defaultEmbeddingInitializer(int64_t dimension) {
  return truncated_normal_initializer(
      0.0, 1.0 / std::sqrt(static_cast<double>(dimension)));
}

/// A weighted column's categorical column (TF unwraps these when it
/// compares shared embedding columns).
const CategoricalColumn &unweighted(const CategoricalColumn &c) {
  if (const auto *w = dynamic_cast<const WeightedCategoricalColumn *>(&c))
    return unweighted(*w->categorical_column());
  return c;
}

} // namespace

FeatureColumn::~FeatureColumn() = default;

int64_t DenseColumn::num_elements() const {
  int64_t n = 1;
  for (int64_t d : variable_shape())
    n *= d;
  return n;
}

// --- numeric / bucketized ---------------------------------------------------

NumericColumn::NumericColumn(std::string key, Dims shape,
                             std::vector<double> default_value, DType dtype,
                             NormalizerFn normalizer_fn)
    : key_(std::move(key)), shape_(std::move(shape)), dtype_(dtype),
      normalizer_(std::move(normalizer_fn)) {
  requireKey("numeric_column", key_);
  std::string what = "numeric_column '" + key_ + "'";
  if (shape_.empty())
    throw std::invalid_argument(what + ": shape must have a dimension");
  int64_t n = 1;
  for (int64_t d : shape_) {
    if (d < 1)
      throw std::invalid_argument(what +
                                  ": shape dimensions must be greater "
                                  "than 0, not " +
                                  shape_string(shape_));
    n *= d;
  }
  if (!is_integer(dtype_) && !is_floating(dtype_))
    throw std::invalid_argument(what +
                                ": dtype must be convertible to float, "
                                "not " +
                                tf_name(dtype_));
  if (!default_value.empty()) {
    if (default_value.size() != 1 &&
        static_cast<int64_t>(default_value.size()) != n)
      throw std::invalid_argument(
          what + ": default_value has " + std::to_string(default_value.size()) +
          " values, expected 1 or " + std::to_string(n) + " for shape " +
          shape_string(shape_));
    for (double v : default_value)
      if (is_integer(dtype_) && v != std::floor(v))
        throw std::invalid_argument(what + ": default_value " +
                                    std::to_string(v) +
                                    " is not an integer "
                                    "of dtype " +
                                    tf_name(dtype_));
    defaultValue_ =
        default_value.size() == 1
            ? std::vector<double>(static_cast<size_t>(n), default_value[0])
            : std::move(default_value);
  }
}

data::FeatureSpecs NumericColumn::parse_example_spec() const {
  data::FixedLenFeature f;
  f.shape = shape_;
  f.dtype = dtype_;
  if (!defaultValue_.empty())
    f.default_value = defaultTensor(dtype_, shape_, defaultValue_);
  return {{key_, f}};
}

BucketizedColumn::BucketizedColumn(
    std::shared_ptr<const NumericColumn> source_column,
    std::vector<double> boundaries)
    : source_(std::move(source_column)), boundaries_(std::move(boundaries)) {
  if (!source_)
    throw std::invalid_argument("bucketized_column: source_column must be a "
                                "column generated with numeric_column()");
  std::string what = "bucketized_column '" + name() + "'";
  if (source_->shape().size() != 1)
    throw std::invalid_argument(what +
                                ": source_column must be "
                                "one-dimensional, not of shape " +
                                shape_string(source_->shape()));
  if (boundaries_.empty())
    throw std::invalid_argument(what + ": boundaries must not be empty");
  for (size_t i = 0; i + 1 < boundaries_.size(); ++i)
    if (!(boundaries_[i] < boundaries_[i + 1]))
      throw std::invalid_argument(what + ": boundaries must be a sorted list "
                                         "(strictly ascending)");
}

std::string BucketizedColumn::name() const {
  return source_->name() + "_bucketized";
}

data::FeatureSpecs BucketizedColumn::parse_example_spec() const {
  return source_->parse_example_spec();
}

Dims BucketizedColumn::variable_shape() const {
  Dims s = source_->shape();
  s.push_back(static_cast<int64_t>(boundaries_.size()) + 1);
  return s;
}

int64_t BucketizedColumn::num_buckets() const {
  return (static_cast<int64_t>(boundaries_.size()) + 1) * source_->shape()[0];
}

// --- identity / hash / vocabulary -------------------------------------------

IdentityCategoricalColumn::IdentityCategoricalColumn(
    std::string key, int64_t num_buckets, std::optional<int64_t> default_value)
    : key_(std::move(key)), numBuckets_(num_buckets), default_(default_value) {
  requireKey("categorical_column_with_identity", key_);
  std::string what = "categorical_column_with_identity '" + key_ + "'";
  if (numBuckets_ < 1)
    throw std::invalid_argument(what + ": num_buckets " +
                                std::to_string(numBuckets_) + " < 1");
  if (default_ && (*default_ < 0 || *default_ >= numBuckets_))
    throw std::invalid_argument(
        what + ": default_value " + std::to_string(*default_) +
        " not in range [0, " + std::to_string(numBuckets_) + ")");
}

data::FeatureSpecs IdentityCategoricalColumn::parse_example_spec() const {
  return {{key_, data::VarLenFeature{DType::Int64}}};
}

HashedCategoricalColumn::HashedCategoricalColumn(std::string key,
                                                 int64_t hash_bucket_size,
                                                 DType dtype)
    : key_(std::move(key)), size_(hash_bucket_size), dtype_(dtype) {
  requireKey("categorical_column_with_hash_bucket", key_);
  std::string what = "categorical_column_with_hash_bucket '" + key_ + "'";
  if (size_ < 1)
    throw std::invalid_argument(what +
                                ": hash_bucket_size must be at least "
                                "1, not " +
                                std::to_string(size_));
  requireStringOrInt(what, dtype_);
}

data::FeatureSpecs HashedCategoricalColumn::parse_example_spec() const {
  return {{key_, data::VarLenFeature{dtype_}}};
}

VocabularyCategoricalColumn::VocabularyCategoricalColumn(
    std::string key, DType dtype, int64_t default_value,
    int64_t num_oov_buckets)
    : key_(std::move(key)), dtype_(dtype), default_(default_value),
      numOov_(num_oov_buckets) {}

data::FeatureSpecs VocabularyCategoricalColumn::parse_example_spec() const {
  return {{key_, data::VarLenFeature{dtype_}}};
}

namespace {
void checkOov(const std::string &what, int64_t num_oov_buckets,
              bool hasDefault) {
  if (num_oov_buckets < 0)
    throw std::invalid_argument(what + ": invalid num_oov_buckets " +
                                std::to_string(num_oov_buckets));
  if (num_oov_buckets > 0 && hasDefault)
    throw std::invalid_argument(what + ": can't specify both num_oov_buckets "
                                       "and default_value");
}
} // namespace

VocabularyListCategoricalColumn::VocabularyListCategoricalColumn(
    std::string key, VocabularyList vocabulary_list, std::optional<DType> dtype,
    int64_t default_value, int64_t num_oov_buckets)
    : VocabularyCategoricalColumn(std::move(key), DType::String, default_value,
                                  num_oov_buckets),
      list_(std::move(vocabulary_list)) {
  requireKey("categorical_column_with_vocabulary_list", key_);
  std::string what = "categorical_column_with_vocabulary_list '" + key_ + "'";
  if (list_.size() < 1)
    throw std::invalid_argument(what + ": vocabulary_list must be non-empty");
  checkOov(what, numOov_, default_ != -1);
  DType vocabDtype = list_.is_int() ? DType::Int64 : DType::String;
  dtype_ = dtype.value_or(vocabDtype);
  requireStringOrInt(what, dtype_);
  if (is_integer(dtype_) != list_.is_int())
    throw std::invalid_argument(what + ": dtype " + tf_name(dtype_) +
                                " and vocabulary dtype " + tf_name(vocabDtype) +
                                " do not match");
  try {
    lookup_ = std::make_shared<const data::VocabularyLookup>(
        list_.is_int()
            ? data::VocabularyLookup::of_ints(list_.ints(), numOov_, default_)
            : data::VocabularyLookup(list_.strings(), numOov_, default_));
  } catch (const std::invalid_argument &e) {
    // A duplicated key (the other problems were checked above).
    std::string msg = e.what();
    throw std::invalid_argument(what + ": " + msg.substr(msg.find(": ") + 2));
  }
  vocabularySize_ = list_.size();
}

VocabularyFileCategoricalColumn::VocabularyFileCategoricalColumn(
    std::string key, std::string vocabulary_file,
    std::optional<int64_t> vocabulary_size, DType dtype,
    std::optional<int64_t> default_value, int64_t num_oov_buckets)
    : VocabularyCategoricalColumn(std::move(key), dtype,
                                  default_value.value_or(-1), num_oov_buckets),
      file_(std::move(vocabulary_file)) {
  requireKey("categorical_column_with_vocabulary_file", key_);
  std::string what = "categorical_column_with_vocabulary_file '" + key_ + "'";
  if (file_.empty())
    throw std::invalid_argument(what + ": missing vocabulary_file");
  if (vocabulary_size && *vocabulary_size < 1)
    throw std::invalid_argument(what + ": invalid vocabulary_size " +
                                std::to_string(*vocabulary_size));
  checkOov(what, numOov_, default_value.has_value());
  requireStringOrInt(what, dtype_);
  lookup_ = std::make_shared<const data::VocabularyLookup>(
      data::VocabularyLookup::from_file(file_, vocabulary_size.value_or(-1),
                                        numOov_, default_, is_integer(dtype_)));
  vocabularySize_ = lookup_->size();
  // TF's table initializer refuses an empty line among the keys it reads;
  // VocabularyLookup takes it as the key "".
  data::TextLineReader reader(file_);
  std::string line;
  while (reader.line_number() < vocabularySize_ && reader.read(line))
    if (line.empty())
      throw data::DataError(file_ + ":" + std::to_string(reader.line_number()) +
                            ": empty line (" + what +
                            "; TF refuses empty vocabulary keys)");
}

// --- crossed / weighted -----------------------------------------------------

CrossedColumn::CrossedColumn(std::vector<CrossKey> keys,
                             int64_t hash_bucket_size,
                             std::optional<uint64_t> hash_key)
    : keys_(std::move(keys)), size_(hash_bucket_size),
      hashKey_(hash_key.value_or(data::kDefaultCrossHashKey)) {
  if (size_ < 1)
    throw std::invalid_argument("crossed_column: hash_bucket_size must be >= "
                                "1, not " +
                                std::to_string(size_));
  if (keys_.size() < 2)
    throw std::invalid_argument("crossed_column: keys must be a list with "
                                "length > 1, not " +
                                std::to_string(keys_.size()));
  for (const CrossKey &k : keys_) {
    if (!k.is_column()) {
      if (k.key().empty())
        throw std::invalid_argument("crossed_column: a key must be a "
                                    "non-empty string or a categorical "
                                    "column");
      continue;
    }
    if (dynamic_cast<const HashedCategoricalColumn *>(k.column().get()))
      throw std::invalid_argument(
          "crossed_column: categorical_column_with_hash_bucket '" +
          k.column()->name() +
          "' is not supported for crossing (hashing before crossing "
          "increases collisions; cross the feature key instead)");
    if (dynamic_cast<const WeightedCategoricalColumn *>(k.column().get()))
      throw std::invalid_argument("crossed_column: weighted column '" +
                                  k.column()->name() +
                                  "' is not supported for crossing (a cross "
                                  "has no weights)");
  }
}

std::vector<CrossKey> CrossedColumn::leaf_keys() const {
  std::vector<CrossKey> out;
  for (const CrossKey &k : keys_) {
    if (const auto *c = dynamic_cast<const CrossedColumn *>(k.column().get())) {
      std::vector<CrossKey> inner = c->leaf_keys();
      out.insert(out.end(), inner.begin(), inner.end());
    } else {
      out.push_back(k);
    }
  }
  return out;
}

std::string CrossedColumn::name() const {
  std::vector<std::string> names;
  for (const CrossKey &k : leaf_keys())
    names.push_back(k.name());
  std::sort(names.begin(), names.end());
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? "_X_" : "") + names[i];
  return s;
}

data::FeatureSpecs CrossedColumn::parse_example_spec() const {
  data::FeatureSpecs out;
  for (const CrossKey &k : keys_) {
    if (k.is_column()) {
      for (auto &[key, spec] : k.column()->parse_example_spec())
        out.insert_or_assign(key, spec);
    } else {
      out.insert_or_assign(k.key(), data::VarLenFeature{DType::String});
    }
  }
  return out;
}

WeightedCategoricalColumn::WeightedCategoricalColumn(
    CategoricalColumnPtr categorical_column, std::string weight_feature_key,
    DType dtype)
    : cat_(std::move(categorical_column)),
      weightKey_(std::move(weight_feature_key)), dtype_(dtype) {
  if (!cat_)
    throw std::invalid_argument("weighted_categorical_column: "
                                "categorical_column must be a categorical "
                                "column");
  if (weightKey_.empty())
    throw std::invalid_argument("weighted_categorical_column '" + cat_->name() +
                                "': weight_feature_key must be a non-empty "
                                "string");
  if (!is_integer(dtype_) && !is_floating(dtype_))
    throw std::invalid_argument("weighted_categorical_column '" + name() +
                                "': dtype " + tf_name(dtype_) +
                                " is not convertible to float");
}

std::string WeightedCategoricalColumn::name() const {
  return cat_->name() + "_weighted_by_" + weightKey_;
}

data::FeatureSpecs WeightedCategoricalColumn::parse_example_spec() const {
  data::FeatureSpecs specs = cat_->parse_example_spec();
  if (specs.count(weightKey_))
    throw std::invalid_argument(
        "weighted_categorical_column '" + name() + "': parse config " +
        specStr(specs[weightKey_]) + " already exists for " + weightKey_);
  specs.emplace(weightKey_, data::VarLenFeature{dtype_});
  return specs;
}

// --- indicator / embedding --------------------------------------------------

IndicatorColumn::IndicatorColumn(CategoricalColumnPtr categorical_column)
    : cat_(std::move(categorical_column)) {
  if (!cat_)
    throw std::invalid_argument("indicator_column: the input must be a "
                                "categorical column");
}

EmbeddingColumn::EmbeddingColumn(CategoricalColumnPtr categorical_column,
                                 int64_t dimension, std::string combiner,
                                 std::optional<Initializer> initializer,
                                 std::optional<double> max_norm, bool trainable)
    : cat_(std::move(categorical_column)), dimension_(dimension),
      combiner_(std::move(combiner)), maxNorm_(max_norm),
      trainable_(trainable) {
  if (!cat_)
    throw std::invalid_argument("embedding_column: categorical_column must "
                                "be a categorical column");
  std::string what = "embedding_column '" + name() + "'";
  if (dimension_ < 1)
    throw std::invalid_argument(what + ": invalid dimension " +
                                std::to_string(dimension_));
  requireCombiner(what, combiner_);
  requireMaxNorm(what, maxNorm_);
  initializer_ =
      initializer ? *initializer : defaultEmbeddingInitializer(dimension_);
}

SharedEmbeddingColumn::SharedEmbeddingColumn(
    CategoricalColumnPtr categorical_column,
    std::shared_ptr<const SharedEmbeddingState> shared, std::string combiner,
    std::optional<double> max_norm)
    : cat_(std::move(categorical_column)), shared_(std::move(shared)),
      combiner_(std::move(combiner)), maxNorm_(max_norm) {
  if (!cat_ || !shared_)
    throw std::invalid_argument("shared embedding column: a categorical "
                                "column and its shared state are required");
  std::string what = "shared_embedding_columns '" + name() + "'";
  requireCombiner(what, combiner_);
  requireMaxNorm(what, maxNorm_);
}

// --- sequence columns -------------------------------------------------------

SequenceCategoricalColumn::SequenceCategoricalColumn(
    CategoricalColumnPtr categorical_column)
    : cat_(std::move(categorical_column)) {
  const FeatureColumn *c = cat_.get();
  if (!dynamic_cast<const IdentityCategoricalColumn *>(c) &&
      !dynamic_cast<const HashedCategoricalColumn *>(c) &&
      !dynamic_cast<const VocabularyCategoricalColumn *>(c))
    throw std::invalid_argument(
        "sequence categorical column: categorical_column must be an identity, "
        "hash bucket or vocabulary column" +
        (cat_ ? ", not '" + cat_->name() + "'" : std::string()));
}

const std::string &SequenceCategoricalColumn::key() const {
  const FeatureColumn *c = cat_.get();
  if (const auto *i = dynamic_cast<const IdentityCategoricalColumn *>(c))
    return i->key();
  if (const auto *h = dynamic_cast<const HashedCategoricalColumn *>(c))
    return h->key();
  return dynamic_cast<const VocabularyCategoricalColumn &>(*c).key();
}

SequenceNumericColumn::SequenceNumericColumn(std::string key, Dims shape,
                                             double default_value, DType dtype,
                                             NormalizerFn normalizer_fn)
    : key_(std::move(key)), shape_(std::move(shape)),
      defaultValue_(default_value), dtype_(dtype),
      normalizer_(std::move(normalizer_fn)) {
  requireKey("sequence_numeric_column", key_);
  std::string what = "sequence_numeric_column '" + key_ + "'";
  if (shape_.empty())
    throw std::invalid_argument(what + ": shape must have a dimension");
  for (int64_t d : shape_)
    if (d < 1)
      throw std::invalid_argument(what +
                                  ": shape dimensions must be greater "
                                  "than 0, not " +
                                  shape_string(shape_));
  if (!is_integer(dtype_) && !is_floating(dtype_))
    throw std::invalid_argument(what +
                                ": dtype must be convertible to float, "
                                "not " +
                                tf_name(dtype_));
}

int64_t SequenceNumericColumn::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

data::FeatureSpecs SequenceNumericColumn::parse_example_spec() const {
  return {{key_, data::VarLenFeature{dtype_}}};
}

bool is_sequence_column(const FeatureColumn &c) {
  if (dynamic_cast<const SequenceNumericColumn *>(&c) ||
      dynamic_cast<const SequenceCategoricalColumn *>(&c))
    return true;
  if (const auto *e = dynamic_cast<const EmbeddingColumn *>(&c))
    return is_sequence_column(*e->categorical_column());
  if (const auto *i = dynamic_cast<const IndicatorColumn *>(&c))
    return is_sequence_column(*i->categorical_column());
  return false;
}

// --- the functions
// ------------------------------------------------------------

std::shared_ptr<const NumericColumn>
numeric_column(const std::string &key, Dims shape,
               std::vector<double> default_value, DType dtype,
               NormalizerFn normalizer_fn) {
  return std::make_shared<const NumericColumn>(key, std::move(shape),
                                               std::move(default_value), dtype,
                                               std::move(normalizer_fn));
}

std::shared_ptr<const BucketizedColumn>
bucketized_column(std::shared_ptr<const NumericColumn> source_column,
                  std::vector<double> boundaries) {
  return std::make_shared<const BucketizedColumn>(std::move(source_column),
                                                  std::move(boundaries));
}

std::shared_ptr<const IdentityCategoricalColumn>
categorical_column_with_identity(const std::string &key, int64_t num_buckets,
                                 std::optional<int64_t> default_value) {
  return std::make_shared<const IdentityCategoricalColumn>(key, num_buckets,
                                                           default_value);
}

std::shared_ptr<const HashedCategoricalColumn>
categorical_column_with_hash_bucket(const std::string &key,
                                    int64_t hash_bucket_size, DType dtype) {
  return std::make_shared<const HashedCategoricalColumn>(key, hash_bucket_size,
                                                         dtype);
}

std::shared_ptr<const VocabularyListCategoricalColumn>
categorical_column_with_vocabulary_list(const std::string &key,
                                        VocabularyList vocabulary_list,
                                        std::optional<DType> dtype,
                                        int64_t default_value,
                                        int64_t num_oov_buckets) {
  return std::make_shared<const VocabularyListCategoricalColumn>(
      key, std::move(vocabulary_list), dtype, default_value, num_oov_buckets);
}

std::shared_ptr<const VocabularyFileCategoricalColumn>
categorical_column_with_vocabulary_file(const std::string &key,
                                        const std::string &vocabulary_file,
                                        std::optional<int64_t> vocabulary_size,
                                        DType dtype,
                                        std::optional<int64_t> default_value,
                                        int64_t num_oov_buckets) {
  return std::make_shared<const VocabularyFileCategoricalColumn>(
      key, vocabulary_file, vocabulary_size, dtype, default_value,
      num_oov_buckets);
}

std::shared_ptr<const CrossedColumn>
crossed_column(std::vector<CrossKey> keys, int64_t hash_bucket_size,
               std::optional<uint64_t> hash_key) {
  return std::make_shared<const CrossedColumn>(std::move(keys),
                                               hash_bucket_size, hash_key);
}

std::shared_ptr<const IndicatorColumn>
indicator_column(CategoricalColumnPtr categorical_column) {
  return std::make_shared<const IndicatorColumn>(std::move(categorical_column));
}

std::shared_ptr<const EmbeddingColumn>
embedding_column(CategoricalColumnPtr categorical_column, int64_t dimension,
                 const std::string &combiner,
                 std::optional<Initializer> initializer,
                 std::optional<double> max_norm, bool trainable,
                 const std::string &ckpt_to_load_from,
                 const std::string &tensor_name_in_ckpt) {
  if (ckpt_to_load_from.empty() != tensor_name_in_ckpt.empty())
    throw std::invalid_argument(
        "embedding_column: Must specify both `ckpt_to_load_from` and "
        "`tensor_name_in_ckpt` or none of them.");
  if (!ckpt_to_load_from.empty() && categorical_column && dimension > 0) {
    TensorValue t =
        train::load_variable(ckpt_to_load_from, tensor_name_in_ckpt);
    VariableSpec want{DType::Float32,
                      {categorical_column->num_buckets(), dimension}};
    VariableSpec got{t.dtype, t.shape};
    if (!(got == want))
      throw std::invalid_argument(
          "embedding_column: tensor_name_in_ckpt '" + tensor_name_in_ckpt +
          "' of " + ckpt_to_load_from + " is " + got.str() + ", not the " +
          want.str() + " of the embedding of '" + categorical_column->name() +
          "'");
    std::vector<float> values = t.values<float>();
    initializer =
        constant_initializer(std::vector<double>(values.begin(), values.end()));
  }
  return std::make_shared<const EmbeddingColumn>(
      std::move(categorical_column), dimension, combiner,
      std::move(initializer), max_norm, trainable);
}

std::vector<std::shared_ptr<const SharedEmbeddingColumn>>
shared_embedding_columns(
    const std::vector<CategoricalColumnPtr> &categorical_columns,
    int64_t dimension, const std::string &combiner,
    std::optional<Initializer> initializer,
    const std::string &shared_embedding_collection_name,
    std::optional<double> max_norm, bool trainable) {
  if (categorical_columns.empty())
    throw std::invalid_argument("shared_embedding_columns: "
                                "categorical_columns must not be empty");
  for (const CategoricalColumnPtr &c : categorical_columns)
    if (!c)
      throw std::invalid_argument("shared_embedding_columns: every item "
                                  "must be a categorical column");
  if (dimension < 1)
    throw std::invalid_argument("shared_embedding_columns: invalid dimension " +
                                std::to_string(dimension));
  // Sorted, so that the default collection name does not depend on the
  // order the columns come in.
  std::vector<CategoricalColumnPtr> sorted = categorical_columns;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const CategoricalColumnPtr &a, const CategoricalColumnPtr &b) {
        return a->name() < b->name();
      });
  const CategoricalColumn &c0 = unweighted(*sorted[0]);
  for (size_t i = 1; i < sorted.size(); ++i) {
    const CategoricalColumn &c = unweighted(*sorted[i]);
    if (typeid(c) != typeid(c0))
      throw std::invalid_argument(
          "shared_embedding_columns: all categorical_columns must have the "
          "same type (or be weighted columns of the same type); '" +
          sorted[i]->name() + "' does not match '" + sorted[0]->name() + "'");
    if (sorted[i]->num_buckets() != sorted[0]->num_buckets())
      throw std::invalid_argument(
          "shared_embedding_columns: all categorical_columns must have the "
          "same number of buckets; '" +
          sorted[i]->name() + "' has " +
          std::to_string(sorted[i]->num_buckets()) + ", '" + sorted[0]->name() +
          "' " + std::to_string(sorted[0]->num_buckets()));
  }
  auto state = std::make_shared<SharedEmbeddingState>();
  state->collection_name = shared_embedding_collection_name;
  if (state->collection_name.empty()) {
    for (size_t i = 0; i < sorted.size(); ++i)
      state->collection_name += (i ? "_" : "") + sorted[i]->name();
    state->collection_name += "_shared_embedding";
  }
  state->num_buckets = sorted[0]->num_buckets();
  state->dimension = dimension;
  state->initializer =
      initializer ? *initializer : defaultEmbeddingInitializer(dimension);
  state->trainable = trainable;
  std::vector<std::shared_ptr<const SharedEmbeddingColumn>> out;
  for (const CategoricalColumnPtr &c : categorical_columns)
    out.push_back(std::make_shared<const SharedEmbeddingColumn>(
        c, state, combiner, max_norm));
  return out;
}

std::shared_ptr<const WeightedCategoricalColumn>
weighted_categorical_column(CategoricalColumnPtr categorical_column,
                            const std::string &weight_feature_key,
                            DType dtype) {
  return std::make_shared<const WeightedCategoricalColumn>(
      std::move(categorical_column), weight_feature_key, dtype);
}

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_identity(
    const std::string &key, int64_t num_buckets,
    std::optional<int64_t> default_value) {
  return std::make_shared<const SequenceCategoricalColumn>(
      categorical_column_with_identity(key, num_buckets, default_value));
}

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_hash_bucket(const std::string &key,
                                             int64_t hash_bucket_size,
                                             DType dtype) {
  return std::make_shared<const SequenceCategoricalColumn>(
      categorical_column_with_hash_bucket(key, hash_bucket_size, dtype));
}

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_vocabulary_list(const std::string &key,
                                                 VocabularyList vocabulary_list,
                                                 std::optional<DType> dtype,
                                                 int64_t default_value,
                                                 int64_t num_oov_buckets) {
  return std::make_shared<const SequenceCategoricalColumn>(
      categorical_column_with_vocabulary_list(key, std::move(vocabulary_list),
                                              dtype, default_value,
                                              num_oov_buckets));
}

std::shared_ptr<const SequenceCategoricalColumn>
sequence_categorical_column_with_vocabulary_file(
    const std::string &key, const std::string &vocabulary_file,
    std::optional<int64_t> vocabulary_size, int64_t num_oov_buckets,
    std::optional<int64_t> default_value, DType dtype) {
  return std::make_shared<const SequenceCategoricalColumn>(
      categorical_column_with_vocabulary_file(key, vocabulary_file,
                                              vocabulary_size, dtype,
                                              default_value, num_oov_buckets));
}

std::shared_ptr<const SequenceNumericColumn>
sequence_numeric_column(const std::string &key, Dims shape,
                        double default_value, DType dtype,
                        NormalizerFn normalizer_fn) {
  return std::make_shared<const SequenceNumericColumn>(
      key, std::move(shape), default_value, dtype, std::move(normalizer_fn));
}

data::FeatureSpecs
make_parse_example_spec(const FeatureColumns &feature_columns) {
  data::FeatureSpecs out;
  for (const FeatureColumnPtr &c : feature_columns) {
    if (!c)
      throw std::invalid_argument("make_parse_example_spec: a null column");
    for (auto &[key, spec] : c->parse_example_spec()) {
      auto it = out.find(key);
      if (it != out.end() && !sameSpec(it->second, spec))
        throw std::invalid_argument(
            "make_parse_example_spec: feature_columns contain different "
            "parse_spec for key '" +
            key + "': " + specStr(spec) + " (column '" + c->name() + "') and " +
            specStr(it->second));
      out.insert_or_assign(key, spec);
    }
  }
  return out;
}

FeatureColumns sorted_by_name(const FeatureColumns &feature_columns) {
  if (feature_columns.empty())
    throw std::invalid_argument("feature_columns must not be empty");
  std::map<std::string, FeatureColumnPtr> byName;
  for (const FeatureColumnPtr &c : feature_columns) {
    if (!c)
      throw std::invalid_argument("feature_columns: a null column");
    if (!byName.emplace(c->name(), c).second)
      throw std::invalid_argument("feature_columns: duplicate feature column "
                                  "name '" +
                                  c->name() +
                                  "' (columns that read the same feature "
                                  "the same way)");
  }
  FeatureColumns out;
  for (auto &[name, c] : byName)
    out.push_back(c);
  return out;
}

} // namespace feature_column
} // namespace estc
