//===- Transformer.cpp - The host half of feature columns -----------------===//
//
// Each categorical column's ids are first computed as TF's get_sparse_tensors
// has them (unpruned: a cross hashes a vocabulary column's -1 like any id),
// as COO entries in row-major order; the ids that reach the model are then
// pruned and range-checked.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/Transformer.h"
#include "lib/Data/Hashing.h"
#include "lib/Tensor/TensorValue.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <typeinfo>

namespace estc {
namespace feature_column {

std::string ids_key(const std::string &column_name) {
  return column_name + "/ids";
}
std::string rows_key(const std::string &column_name) {
  return column_name + "/rows";
}
std::string row_lengths_key(const std::string &column_name) {
  return column_name + "/row_lengths";
}
std::string weights_key(const std::string &column_name) {
  return column_name + "/weights";
}
std::string sequence_length_key(const std::string &column_name) {
  return column_name + "/sequence_length";
}
std::string mask_key(const std::string &column_name) {
  return column_name + "/mask";
}

using detail::as;

namespace {

using data::DataError;

/// "categorical_column_with_identity 'item'": how errors name a column.
std::string describe(const FeatureColumn &c) {
  const FeatureColumn *p = &c;
  const char *fn =
      as<NumericColumn>(p)               ? "numeric_column"
      : as<BucketizedColumn>(p)          ? "bucketized_column"
      : as<IdentityCategoricalColumn>(p) ? "categorical_column_with_identity"
      : as<HashedCategoricalColumn>(p)   ? "categorical_column_with_hash_bucket"
      : as<VocabularyListCategoricalColumn>(p)
          ? "categorical_column_with_vocabulary_list"
      : as<VocabularyFileCategoricalColumn>(p)
          ? "categorical_column_with_vocabulary_file"
      : as<CrossedColumn>(p)             ? "crossed_column"
      : as<WeightedCategoricalColumn>(p) ? "weighted_categorical_column"
      : as<SequenceNumericColumn>(p)     ? "sequence_numeric_column"
                                         : "feature column";
  if (const auto *q = as<SequenceCategoricalColumn>(p))
    return "sequence_" + describe(*q->categorical_column());
  return std::string(fn) + " '" + c.name() + "'";
}

/// One raw feature seen as a 2-D table [batch, width]: every cell of a
/// dense tensor (row-major; its rows and columns implicit), or a sparse
/// tensor's entries (its dimensions after the first flattened into the
/// column).
struct Raw {
  bool sparse = false;
  int64_t batch = 0;
  int64_t width = 0;
  /// The dense tensor's shape, or the sparse tensor's dense_shape.
  Dims shape;
  /// A sparse tensor's entries' rows and columns.
  std::vector<int64_t> rows, cols;
  /// The feature's values (flat, row-major), in the batch's features.
  const TensorValue *values = nullptr;
  DType dtype() const { return values->dtype; }
  size_t size() const {
    return sparse ? rows.size() : static_cast<size_t>(batch * width);
  }
  int64_t row(size_t i) const {
    return sparse ? rows[i] : static_cast<int64_t>(i) / width;
  }
  int64_t col(size_t i) const {
    return sparse ? cols[i] : static_cast<int64_t>(i) % width;
  }
};

int64_t intAt(const TensorValue &t, size_t i) {
  if (t.dtype == DType::Int32) {
    int32_t v;
    std::memcpy(&v, t.data.data() + 4 * i, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.data.data() + 8 * i, 8);
  return v;
}

/// TF's cast of a number to float32 (exact conversions per source type).
float floatAt(const TensorValue &t, size_t i) {
  switch (t.dtype) {
  case DType::Int32:
  case DType::Int64:
    return static_cast<float>(intAt(t, i));
  case DType::Float64: {
    double v;
    std::memcpy(&v, t.data.data() + 8 * i, 8);
    return static_cast<float>(v);
  }
  default:
    return static_cast<float>(t.element(static_cast<int64_t>(i)));
  }
}

bool isNumber(DType d) {
  return is_integer(d) || is_floating(d) || d == DType::Bool;
}

/// The ids of a categorical column for one batch, COO in row-major order.
struct Ids {
  int64_t batch = 0;
  int64_t width = 0;
  std::vector<int64_t> rows, cols, ids;
  std::vector<float> weights; // weighted columns only
  bool weighted = false;
};

/// The row offsets of `n` entries of rows `rows(i)` (non-decreasing)
/// in a batch of `batch` rows: batch + 1 entries, as data::CrossInput.
template <typename RowOf>
std::vector<int64_t> rowOffsets(int64_t batch, size_t n, RowOf rows) {
  std::vector<int64_t> offsets(static_cast<size_t>(batch) + 1, 0);
  for (size_t i = 0; i < n; ++i)
    ++offsets[static_cast<size_t>(rows(i)) + 1];
  for (size_t r = 1; r < offsets.size(); ++r)
    offsets[r] += offsets[r - 1];
  return offsets;
}

/// An I64 [n] tensor of `values`, written in place (no vector copy).
TensorValue int64Tensor(const std::vector<int64_t> &values) {
  TensorValue t;
  t.dtype = DType::Int64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.data.assign(reinterpret_cast<const char *>(values.data()),
                values.size() * sizeof(int64_t));
  return t;
}

} // namespace

// --- The plan
// ------------------------------------------------------------------

struct Transformer::Impl {
  FeatureColumns columns;
  /// Dense inputs by key (numeric columns, bucketized sources).
  std::map<std::string, std::shared_ptr<const NumericColumn>> dense;
  /// Categorical inputs by column name.
  std::map<std::string, CategoricalColumnPtr> sparse;
  /// Sequence columns: categorical by name, numeric by key.
  std::map<std::string, std::shared_ptr<const SequenceCategoricalColumn>>
      sequenceIds;
  std::map<std::string, std::shared_ptr<const SequenceNumericColumn>>
      sequenceValues;
  /// Every model-input key, sorted (transform() fills the map in this
  /// order, each insertion at the end).
  std::vector<std::string> outputKeys;
  /// Where each dense input and each categorical column's inputs (ids,
  /// rows, row_lengths, weights: -1 when unweighted) are in outputKeys.
  std::map<std::string, size_t> denseSlot;
  struct SparseKeys {
    size_t ids, rows, rowLengths;
    std::optional<size_t> weights;
  };
  std::map<std::string, SparseKeys> sparseKeys;
  std::set<std::string> featureKeys;
  std::set<std::string> valuesInputs;
  std::set<std::string> sequenceInputs;

  void need(const FeatureColumnPtr &c);
  void needCategorical(const CategoricalColumnPtr &c);
  void needDense(const std::shared_ptr<const NumericColumn> &c);
  void needSequence(const std::shared_ptr<const SequenceNumericColumn> &c);
  void checkHost(const CategoricalColumn &c, const std::string &user);
  void collectKeys(const FeatureColumn &c);
  /// Transformer::input_specs().
  std::vector<TensorSpec> specs() const;

  /// State of one transform() call.
  struct Batch {
    const data::Element &features;
    std::map<std::string, Raw> raws;
    std::map<const CategoricalColumn *, Ids> ids;
    std::string batchKey;
    int64_t batch = -1;
  };
  const Raw &raw(Batch &b, const FeatureColumn &user,
                 const std::string &key) const;
  const Ids &idsOf(Batch &b, const CategoricalColumn &c) const;
  Ids computeIds(Batch &b, const CategoricalColumn &c) const;
  TensorValue numeric(Batch &b, const NumericColumn &c) const;
  void emit(Batch &b, const CategoricalColumn &c, const SparseKeys &keys,
            std::vector<TensorValue> &out) const;

  /// One sequence column of a batch: its values at (row, position in the
  /// row) before padding, the row's length, the padded length it needs.
  struct Sequence {
    std::string name;
    const FeatureColumn *column = nullptr;
    int64_t steps = 0;
    int64_t width = 1; // values per step
    std::vector<int64_t> rows, cols, ids;
    std::vector<float> values;
    std::vector<int64_t> lengths;
  };
  Sequence sequenceIdsOf(Batch &b, const SequenceCategoricalColumn &c) const;
  Sequence sequenceValuesOf(Batch &b, const SequenceNumericColumn &c) const;
  /// Every sequence column's inputs, padded to one length.
  void emitSequences(Batch &b, ModelInputs &out) const;
};

void Transformer::Impl::needDense(
    const std::shared_ptr<const NumericColumn> &c) {
  auto [it, fresh] = dense.emplace(c->key(), c);
  if (!fresh && it->second->shape() != c->shape())
    throw std::invalid_argument(
        "feature columns: numeric columns of key '" + c->key() +
        "' with different shapes need one model input '" + c->key() + "'");
}

void Transformer::Impl::needSequence(
    const std::shared_ptr<const SequenceNumericColumn> &c) {
  auto [it, fresh] = sequenceValues.emplace(c->key(), c);
  if (!fresh && it->second != c)
    throw std::invalid_argument(
        "feature columns: two different sequence_numeric_columns of key '" +
        c->key() + "' need the model input '" + c->key() +
        "' (use one column object for both)");
}

void Transformer::Impl::needCategorical(const CategoricalColumnPtr &c) {
  if (auto q = std::dynamic_pointer_cast<const SequenceCategoricalColumn>(c)) {
    auto [it, fresh] = sequenceIds.emplace(q->name(), q);
    if (!fresh && it->second != q)
      throw std::invalid_argument(
          "feature columns: two different sequence columns named '" +
          q->name() + "' need the model input '" + ids_key(q->name()) +
          "' (use one column object for both)");
    return;
  }
  if (const auto *b = as<BucketizedColumn>(c.get())) {
    // Bucketized in the compiled step, from the source's dense input.
    needDense(b->source_column());
    return;
  }
  checkHost(*c, c->name());
  auto [it, fresh] = sparse.emplace(c->name(), c);
  if (!fresh && it->second != c)
    throw std::invalid_argument(
        "feature columns: two different columns named '" + c->name() +
        "' need the model input '" + ids_key(c->name()) +
        "' (use one column object for both)");
}

void Transformer::Impl::checkHost(const CategoricalColumn &c,
                                  const std::string &user) {
  if (const auto *b = as<BucketizedColumn>(&c)) {
    if (b->source_column()->normalizer_fn())
      throw std::invalid_argument(
          "feature columns: '" + user + "' needs the ids of '" + b->name() +
          "' on the host, but its source '" + b->source_column()->name() +
          "' has a normalizer_fn, which runs in the compiled step");
  } else if (const auto *x = as<CrossedColumn>(&c)) {
    for (const CrossKey &k : x->leaf_keys())
      if (k.is_column())
        checkHost(*k.column(), user);
  } else if (const auto *w = as<WeightedCategoricalColumn>(&c)) {
    checkHost(*w->categorical_column(), user);
  }
}

void Transformer::Impl::need(const FeatureColumnPtr &c) {
  if (!c)
    throw std::invalid_argument("Transformer: a null feature column");
  const FeatureColumn *p = c.get();
  if (as<NumericColumn>(p))
    needDense(std::dynamic_pointer_cast<const NumericColumn>(c));
  else if (as<SequenceNumericColumn>(p))
    needSequence(std::dynamic_pointer_cast<const SequenceNumericColumn>(c));
  else if (const auto *b = as<BucketizedColumn>(p))
    needDense(b->source_column());
  else if (const auto *i = as<IndicatorColumn>(p))
    needCategorical(i->categorical_column());
  else if (const auto *e = as<EmbeddingColumn>(p))
    needCategorical(e->categorical_column());
  else if (const auto *s = as<SharedEmbeddingColumn>(p))
    needCategorical(s->categorical_column());
  else if (auto cat = std::dynamic_pointer_cast<const CategoricalColumn>(c))
    needCategorical(cat);
  else
    throw std::invalid_argument("Transformer: unsupported feature column '" +
                                c->name() + "'");
  collectKeys(*c);
}

void Transformer::Impl::collectKeys(const FeatureColumn &c) {
  for (const auto &[key, spec] : c.parse_example_spec())
    featureKeys.insert(key);
}

Transformer::Transformer(FeatureColumns feature_columns) {
  if (feature_columns.empty())
    throw std::invalid_argument("Transformer: feature_columns must not be "
                                "empty");
  auto impl = std::make_shared<Impl>();
  std::map<std::string, FeatureColumnPtr> byName;
  for (const FeatureColumnPtr &c : feature_columns) {
    if (!c)
      throw std::invalid_argument("Transformer: a null feature column");
    auto [it, fresh] = byName.emplace(c->name(), c);
    if (!fresh && it->second != c)
      throw std::invalid_argument("Transformer: duplicate feature column "
                                  "name '" +
                                  c->name() + "'");
    if (fresh) {
      impl->columns.push_back(c);
      impl->need(c);
    }
  }
  // The output keys in map order, and where each input's value goes.
  Impl &plan = *impl;
  for (const TensorSpec &spec : plan.specs()) {
    if (!plan.outputKeys.empty() && plan.outputKeys.back() == spec.key)
      throw std::invalid_argument("feature columns: two columns need the "
                                  "model input '" +
                                  spec.key +
                                  "' (a sequence and a non-sequence column "
                                  "of one name)");
    plan.outputKeys.push_back(spec.key);
  }
  auto slot = [&](const std::string &key) {
    return static_cast<size_t>(
        std::lower_bound(plan.outputKeys.begin(), plan.outputKeys.end(), key) -
        plan.outputKeys.begin());
  };
  for (const auto &[key, c] : plan.dense)
    plan.denseSlot[key] = slot(key);
  for (const auto &[name, c] : plan.sparse) {
    bool weighted = as<WeightedCategoricalColumn>(c.get()) != nullptr;
    plan.sparseKeys[name] = {
        slot(ids_key(name)), slot(rows_key(name)), slot(row_lengths_key(name)),
        weighted ? std::optional<size_t>(slot(weights_key(name)))
                 : std::nullopt};
    plan.valuesInputs.insert(ids_key(name));
    plan.valuesInputs.insert(rows_key(name));
    if (weighted)
      plan.valuesInputs.insert(weights_key(name));
  }
  for (const TensorSpec &spec : plan.specs())
    if (spec.sequence_dim)
      plan.sequenceInputs.insert(spec.key);
  impl_ = std::move(impl);
}

const FeatureColumns &Transformer::feature_columns() const {
  return impl_->columns;
}

std::set<std::string> Transformer::feature_keys() const {
  return impl_->featureKeys;
}

std::vector<TensorSpec> Transformer::input_specs() const {
  return impl_->specs();
}

std::vector<TensorSpec> Transformer::Impl::specs() const {
  std::vector<TensorSpec> out;
  for (const auto &[key, c] : dense) {
    Dims shape = {-1};
    shape.insert(shape.end(), c->shape().begin(), c->shape().end());
    out.push_back({key, DType::Float32, shape});
  }
  for (const auto &[name, c] : sparse) {
    out.push_back({ids_key(name), DType::Int64, {-1}, true});
    out.push_back({rows_key(name), DType::Int64, {-1}, true});
    out.push_back({row_lengths_key(name), DType::Int64, {-1}, false});
    if (as<WeightedCategoricalColumn>(c.get()))
      out.push_back({weights_key(name), DType::Float32, {-1}, true});
  }
  for (const auto &[name, c] : sequenceIds) {
    out.push_back({ids_key(name), DType::Int64, {-1, -1}, false, true});
    out.push_back({sequence_length_key(name), DType::Int64, {-1}});
  }
  for (const auto &[key, c] : sequenceValues) {
    Dims shape = {-1, -1, c->num_elements()};
    out.push_back({key, DType::Float32, shape, false, true});
    out.push_back({sequence_length_key(key), DType::Int64, {-1}});
    if (c->normalizer_fn())
      out.push_back({mask_key(key), DType::Float32, shape, false, true});
  }
  std::sort(
      out.begin(), out.end(),
      [](const TensorSpec &a, const TensorSpec &b) { return a.key < b.key; });
  return out;
}

const std::set<std::string> &Transformer::values_inputs() const {
  return impl_->valuesInputs;
}

const std::set<std::string> &Transformer::sequence_inputs() const {
  return impl_->sequenceInputs;
}

// --- One batch
// ----------------------------------------------------------------

const Raw &Transformer::Impl::raw(Batch &b, const FeatureColumn &user,
                                  const std::string &key) const {
  auto cached = b.raws.find(key);
  if (cached != b.raws.end())
    return cached->second;
  // The column's description only when an error needs it.
  auto what = [&] { return describe(user); };
  if (!b.features.is_dict())
    throw DataError(what() + ": the features are not a dict");
  auto field = b.features.fields().find(key);
  if (field == b.features.fields().end()) {
    std::string keys;
    for (const auto &[k, v] : b.features.fields())
      keys += (keys.empty() ? "" : ", ") + k;
    throw DataError(what() + ": feature '" + key +
                    "' is missing from the batch (features: " + keys + ")");
  }
  const data::Element &leaf = field->second;
  if (!leaf.is_leaf())
    throw DataError(what() + ": feature '" + key + "' is not a tensor");
  Raw r;
  if (const auto *t = std::get_if<TensorValue>(&leaf.leaf())) {
    if (t->shape.empty())
      throw DataError(what() + ": feature '" + key + "' is a scalar (" +
                      t->spec().str() + "); features need a batch dimension");
    r.batch = t->shape[0];
    r.shape = t->shape;
    r.width = 1;
    for (size_t d = 1; d < t->shape.size(); ++d)
      r.width *= t->shape[d];
    r.values = t;
  } else {
    const data::SparseTensor &s = std::get<data::SparseTensor>(leaf.leaf());
    s.validate(what() + ": feature '" + key + "'");
    if (s.rank() < 1)
      throw DataError(what() + ": feature '" + key +
                      "' is a sparse scalar; features need a batch dimension");
    r.sparse = true;
    r.batch = s.dense_shape[0];
    r.shape = s.dense_shape;
    r.width = 1;
    for (int64_t d = 1; d < s.rank(); ++d)
      r.width *= s.dense_shape[d];
    r.values = &s.values;
    std::vector<int64_t> idx = s.index_values();
    int64_t rank = s.rank();
    for (int64_t v = 0; v < s.nnz(); ++v) {
      int64_t row = idx[v * rank], col = 0;
      for (int64_t d = 1; d < rank; ++d)
        col = col * s.dense_shape[d] + idx[v * rank + d];
      if (v > 0 && (row < r.rows.back() ||
                    (row == r.rows.back() && col <= r.cols.back())))
        throw DataError(what() + ": feature '" + key +
                        "': sparse indices are not in row-major order (value " +
                        std::to_string(v) + " at batch row " +
                        std::to_string(row) + ")");
      r.rows.push_back(row);
      r.cols.push_back(col);
    }
  }
  if (b.batch < 0) {
    b.batch = r.batch;
    b.batchKey = key;
  } else if (r.batch != b.batch) {
    throw DataError(what() + ": feature '" + key + "' has batch size " +
                    std::to_string(r.batch) + " but feature '" + b.batchKey +
                    "' has " + std::to_string(b.batch));
  }
  return b.raws.emplace(key, std::move(r)).first->second;
}

TensorValue Transformer::Impl::numeric(Batch &b, const NumericColumn &c) const {
  auto what = [&] { return describe(c); };
  const Raw &r = raw(b, c, c.key());
  if (r.sparse)
    throw DataError(what() + ": feature '" + c.key() +
                    "' is a SparseTensor; a numeric column takes a dense "
                    "tensor");
  if (!isNumber(r.dtype()))
    throw DataError(what() + ": feature '" + c.key() + "' holds " +
                    dtype_name(r.dtype()) +
                    " values; a numeric column takes numbers");
  if (r.width != c.num_elements())
    throw DataError(what() + ": feature '" + c.key() + "' has " +
                    std::to_string(r.width) + " values per example, expected " +
                    std::to_string(c.num_elements()) + " for shape " +
                    shape_string(c.shape()));
  TensorValue out;
  out.dtype = DType::Float32;
  out.shape = {r.batch};
  out.shape.insert(out.shape.end(), c.shape().begin(), c.shape().end());
  if (r.dtype() == DType::Float32) {
    out.data = r.values->data;
    return out;
  }
  out.data.resize(r.size() * sizeof(float));
  for (size_t i = 0; i < r.size(); ++i) {
    float v = floatAt(*r.values, i);
    std::memcpy(&out.data[i * sizeof(float)], &v, sizeof(float));
  }
  return out;
}

const Ids &Transformer::Impl::idsOf(Batch &b,
                                    const CategoricalColumn &c) const {
  auto it = b.ids.find(&c);
  if (it != b.ids.end())
    return it->second;
  Ids ids = computeIds(b, c);
  return b.ids.emplace(&c, std::move(ids)).first->second;
}

Ids Transformer::Impl::computeIds(Batch &b, const CategoricalColumn &c) const {
  // The column's description only when an error needs it.
  auto what = [&] { return describe(c); };
  Ids out;

  // The raw values of `key`, with TF's missing values of a dense tensor
  // ("" and -1) dropped; `lookup` gives an entry's id.
  auto fromRaw = [&](const std::string &key, bool wantInt, auto lookup) {
    const Raw &r = raw(b, c, key);
    bool isInt = is_integer(r.dtype());
    if (r.dtype() != DType::String && !isInt)
      throw DataError(what() + ": feature '" + key + "' holds " +
                      dtype_name(r.dtype()) +
                      " values; a categorical column takes " +
                      (wantInt ? "integers" : "strings"));
    if (isInt != wantInt)
      throw DataError(what() + ": feature '" + key + "' holds " +
                      dtype_name(r.dtype()) +
                      " values but the column's dtype "
                      "is " +
                      (wantInt ? "an integer" : "string"));
    out.batch = r.batch;
    out.width = r.width;
    size_t n = r.size();
    out.rows.reserve(n);
    out.cols.reserve(n);
    out.ids.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!r.sparse &&
          (isInt ? intAt(*r.values, i) == -1 : r.values->strings[i].empty()))
        continue;
      out.rows.push_back(r.row(i));
      out.cols.push_back(r.col(i));
      out.ids.push_back(lookup(r, i));
    }
  };

  if (const auto *id = as<IdentityCategoricalColumn>(&c)) {
    int64_t n = id->num_buckets();
    std::optional<int64_t> def = id->default_value();
    fromRaw(id->key(), true, [&](const Raw &r, size_t i) {
      int64_t v = intAt(*r.values, i);
      return def && (v < 0 || v >= n) ? *def : v;
    });
  } else if (const auto *h = as<HashedCategoricalColumn>(&c)) {
    auto size = static_cast<uint64_t>(h->hash_bucket_size());
    fromRaw(h->key(), is_integer(h->dtype()), [&](const Raw &r, size_t i) {
      uint64_t fp =
          r.dtype() == DType::String
              ? data::fingerprint64(r.values->strings[i])
              : data::fingerprint64(std::to_string(intAt(*r.values, i)));
      return static_cast<int64_t>(fp % size);
    });
  } else if (const auto *v = as<VocabularyCategoricalColumn>(&c)) {
    const data::VocabularyLookup &table = v->lookup();
    fromRaw(v->key(), is_integer(v->dtype()), [&](const Raw &r, size_t i) {
      return r.dtype() == DType::String ? table.id_of(r.values->strings[i])
                                        : table.id_of(intAt(*r.values, i));
    });
  } else if (const auto *bk = as<BucketizedColumn>(&c)) {
    // Inside a cross or a weighted column: bucketized here, as TF's
    // Bucketize does it (float32 value against float32 boundaries).
    const NumericColumn &src = *bk->source_column();
    TensorValue x = numeric(b, src);
    std::vector<float> bounds(bk->boundaries().begin(), bk->boundaries().end());
    auto nb = static_cast<int64_t>(bounds.size()) + 1;
    int64_t k = src.num_elements();
    std::vector<float> xs = x.values<float>();
    out.batch = x.shape[0];
    out.width = k;
    out.rows.reserve(xs.size());
    out.cols.reserve(xs.size());
    out.ids.reserve(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      auto col = static_cast<int64_t>(i) % k;
      int64_t bucket = std::upper_bound(bounds.begin(), bounds.end(), xs[i]) -
                       bounds.begin();
      out.rows.push_back(static_cast<int64_t>(i) / k);
      out.cols.push_back(col);
      out.ids.push_back(bucket + nb * col);
    }
  } else if (const auto *x = as<CrossedColumn>(&c)) {
    // tf.sparse.cross_hashed crosses its sparse inputs first, then its
    // dense ones (the op takes them as two lists): a raw key given as a
    // dense tensor goes after the SparseTensors and the columns' ids. Each
    // input as its values' hashes, row by row (data::CrossInput): a
    // column's ids (unpruned, as TF crosses them) and raw int64 values are
    // their own hashes, strings their Fingerprint64.
    std::vector<data::CrossInput> sparseInputs, denseInputs;
    int64_t batch = -1;
    for (const CrossKey &k : x->leaf_keys()) {
      data::CrossInput in;
      if (k.is_column()) {
        const Ids &ids = idsOf(b, *k.column());
        batch = ids.batch;
        in.offsets = rowOffsets(ids.batch, ids.ids.size(),
                                [&](size_t i) { return ids.rows[i]; });
        in.hashes.assign(ids.ids.begin(), ids.ids.end());
        sparseInputs.push_back(std::move(in));
        continue;
      }
      const Raw &r = raw(b, c, k.key());
      if (r.dtype() != DType::String && !is_integer(r.dtype()))
        throw DataError(what() + ": feature '" + k.key() + "' holds " +
                        dtype_name(r.dtype()) +
                        " values; crosses take strings or integers");
      batch = r.batch;
      in.offsets =
          rowOffsets(r.batch, r.size(), [&](size_t i) { return r.row(i); });
      in.hashes.resize(r.size());
      for (size_t i = 0; i < r.size(); ++i)
        in.hashes[i] = r.dtype() == DType::String
                           ? data::fingerprint64(r.values->strings[i])
                           : static_cast<uint64_t>(intAt(*r.values, i));
      (r.sparse ? sparseInputs : denseInputs).push_back(std::move(in));
    }
    std::vector<data::CrossInput> inputs = std::move(sparseInputs);
    for (data::CrossInput &in : denseInputs)
      inputs.push_back(std::move(in));
    out.batch = batch;
    out.width = data::cross_hashed(inputs, batch, x->hash_bucket_size(),
                                   x->hash_key(), out.rows, out.cols, out.ids);
  } else if (const auto *w = as<WeightedCategoricalColumn>(&c)) {
    out = idsOf(b, *w->categorical_column());
    const Raw &r = raw(b, c, w->weight_feature_key());
    if (!isNumber(r.dtype()))
      throw DataError(what() + ": weight feature '" + w->weight_feature_key() +
                      "' holds " + dtype_name(r.dtype()) +
                      " values; weights are numbers");
    // TF drops a dense weight tensor's zeros; the weights left must sit
    // where the ids are.
    std::vector<int64_t> rows, cols;
    std::vector<float> weights;
    for (size_t i = 0; i < r.size(); ++i) {
      float v = floatAt(*r.values, i);
      if (!r.sparse && v == 0.0f)
        continue;
      rows.push_back(r.row(i));
      cols.push_back(r.col(i));
      weights.push_back(v);
    }
    size_t n = std::min(rows.size(), out.rows.size());
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; ++i)
      if (rows[i] != out.rows[i] || cols[i] != out.cols[i])
        bad = i;
    if (bad < n || rows.size() != out.rows.size()) {
      int64_t row = bad < n           ? std::min(rows[bad], out.rows[bad])
                    : rows.size() > n ? rows[n]
                                      : out.rows[n];
      throw DataError(
          what() + ": the weights of feature '" + w->weight_feature_key() +
          "' do not line up with the ids at batch row " + std::to_string(row) +
          " (a weight is needed at each id's position; a dense "
          "weight of 0 counts as missing)");
    }
    out.weights = std::move(weights);
    out.weighted = true;
  } else {
    throw std::invalid_argument(
        "Transformer: unsupported categorical column '" + c.name() + "'");
  }
  return out;
}

void Transformer::Impl::emit(Batch &b, const CategoricalColumn &c,
                             const SparseKeys &keys,
                             std::vector<TensorValue> &out) const {
  const Ids &ids = idsOf(b, c);
  int64_t numBuckets = c.num_buckets();
  std::vector<int64_t> kept, rows, lengths(static_cast<size_t>(ids.batch), 0);
  std::vector<float> weights;
  kept.reserve(ids.ids.size());
  rows.reserve(ids.ids.size());
  for (size_t i = 0; i < ids.ids.size(); ++i) {
    int64_t id = ids.ids[i];
    if (id < 0)
      continue;
    if (id >= numBuckets) {
      // An identity column without default_value, or a vocabulary's
      // default_value outside the buckets (TF's lookups fail on these).
      const CategoricalColumn *inner = &c;
      while (const auto *w = as<WeightedCategoricalColumn>(inner))
        inner = w->categorical_column().get();
      const auto *identity = as<IdentityCategoricalColumn>(inner);
      throw DataError(describe(*inner) + ": id " + std::to_string(id) +
                      " at batch row " + std::to_string(ids.rows[i]) +
                      " is outside [0, " + std::to_string(numBuckets) + ")" +
                      (identity ? " (no default_value)" : ""));
    }
    kept.push_back(id);
    rows.push_back(ids.rows[i]);
    ++lengths[static_cast<size_t>(ids.rows[i])];
    if (ids.weighted)
      weights.push_back(ids.weights[i]);
  }
  out[keys.ids] = int64Tensor(kept);
  out[keys.rows] = int64Tensor(rows);
  out[keys.rowLengths] = int64Tensor(lengths);
  if (keys.weights)
    out[*keys.weights] =
        TensorValue::of<float>({static_cast<int64_t>(weights.size())}, weights);
}

// --- Sequences
// ----------------------------------------------------------------

Transformer::Impl::Sequence
Transformer::Impl::sequenceIdsOf(Batch &b,
                                 const SequenceCategoricalColumn &c) const {
  auto what = [&] { return describe(c); };
  const Ids &ids = idsOf(b, *c.categorical_column());
  const Raw &r = raw(b, c, c.key());
  Sequence s;
  s.name = c.name();
  s.column = &c;
  s.steps = r.shape.size() >= 2 ? r.shape[1] : 1;
  if (s.steps > 0 && r.width != s.steps)
    throw DataError(what() + ": feature '" + c.key() + "' of shape " +
                    shape_string(r.shape) + " has " +
                    std::to_string(r.width / s.steps) +
                    " ids per step; a sequence column takes one id per step, "
                    "[batch, T]");
  s.lengths.assign(static_cast<size_t>(ids.batch), 0);
  int64_t numBuckets = c.num_buckets();
  for (size_t i = 0; i < ids.ids.size(); ++i) {
    int64_t id = ids.ids[i];
    if (id >= numBuckets) {
      const auto *identity =
          as<IdentityCategoricalColumn>(c.categorical_column().get());
      throw DataError(what() + ": id " + std::to_string(id) + " at batch row " +
                      std::to_string(ids.rows[i]) + " is outside [0, " +
                      std::to_string(numBuckets) + ")" +
                      (identity ? " (no default_value)" : ""));
    }
    // Pruned ids (< 0) still count for the length, as TF's sequence
    // length is taken from the ids' SparseTensor before the lookup prunes.
    s.rows.push_back(ids.rows[i]);
    s.cols.push_back(ids.cols[i]);
    s.ids.push_back(id < 0 ? -1 : id);
    auto row = static_cast<size_t>(ids.rows[i]);
    s.lengths[row] = std::max(s.lengths[row], ids.cols[i] + 1);
  }
  return s;
}

Transformer::Impl::Sequence
Transformer::Impl::sequenceValuesOf(Batch &b,
                                    const SequenceNumericColumn &c) const {
  auto what = [&] { return describe(c); };
  const Raw &r = raw(b, c, c.key());
  if (!r.sparse)
    throw DataError(what() + ": feature '" + c.key() +
                    "' is a dense tensor; a sequence_numeric_column takes a "
                    "SparseTensor (as TF's)");
  if (!isNumber(r.dtype()))
    throw DataError(what() + ": feature '" + c.key() + "' holds " +
                    dtype_name(r.dtype()) +
                    " values; a numeric column takes numbers");
  if (r.shape.size() < 2)
    throw DataError(what() + ": feature '" + c.key() + "' of dense_shape " +
                    shape_string(r.shape) + " has no step dimension");
  Sequence s;
  s.name = c.key();
  s.column = &c;
  s.width = c.num_elements();
  // [batch, T * k] or [batch, T, k]: the row's position p is step p / k,
  // element p % k either way.
  int64_t steps = r.shape.size() == 2 ? r.width / s.width : r.shape[1];
  if (steps * s.width != r.width)
    throw DataError(what() + ": feature '" + c.key() + "' of dense_shape " +
                    shape_string(r.shape) + " does not hold whole steps of " +
                    std::to_string(s.width) + " values (shape " +
                    shape_string(c.shape()) + ")");
  s.steps = steps;
  s.lengths.assign(static_cast<size_t>(r.batch), 0);
  for (size_t i = 0; i < r.size(); ++i) {
    s.rows.push_back(r.row(i));
    s.cols.push_back(r.col(i));
    s.values.push_back(floatAt(*r.values, i));
    auto row = static_cast<size_t>(r.row(i));
    s.lengths[row] = std::max(s.lengths[row], r.col(i) / s.width + 1);
  }
  return s;
}

void Transformer::Impl::emitSequences(Batch &b, ModelInputs &out) const {
  if (sequenceIds.empty() && sequenceValues.empty())
    return;
  std::vector<Sequence> seqs;
  for (const auto &[name, c] : sequenceIds)
    seqs.push_back(sequenceIdsOf(b, *c));
  for (const auto &[key, c] : sequenceValues)
    seqs.push_back(sequenceValuesOf(b, *c));
  // One padded length for every sequence input of the step (at least 1:
  // a compiled step needs one), and one length per example.
  int64_t steps = 1;
  for (const Sequence &s : seqs)
    steps = std::max(steps, s.steps);
  const Sequence &first = seqs[0];
  for (const Sequence &s : seqs)
    for (size_t row = 0; row < s.lengths.size(); ++row)
      if (s.lengths[row] != first.lengths[row])
        throw DataError(
            "sequence feature columns: '" + first.name + "' and '" + s.name +
            "' have different sequence lengths at batch row " +
            std::to_string(row) + " (" + std::to_string(first.lengths[row]) +
            " and " + std::to_string(s.lengths[row]) +
            "); the sequence columns of a model must have equal lengths");
  for (Sequence &s : seqs) {
    auto batch = static_cast<int64_t>(s.lengths.size());
    out[sequence_length_key(s.name)] = int64Tensor(s.lengths);
    int64_t rowSize = steps * s.width;
    auto at = [&](size_t i) {
      return static_cast<size_t>(s.rows[i] * rowSize + s.cols[i]);
    };
    if (const auto *n = as<SequenceNumericColumn>(s.column)) {
      std::vector<float> values(static_cast<size_t>(batch * rowSize),
                                static_cast<float>(n->default_value()));
      std::vector<float> mask;
      if (n->normalizer_fn())
        mask.assign(values.size(), 0.0f);
      for (size_t i = 0; i < s.values.size(); ++i) {
        values[at(i)] = s.values[i];
        if (!mask.empty())
          mask[at(i)] = 1.0f;
      }
      out[s.name] = TensorValue::of<float>({batch, steps, s.width}, values);
      if (!mask.empty())
        out[mask_key(s.name)] =
            TensorValue::of<float>({batch, steps, s.width}, mask);
      continue;
    }
    std::vector<int64_t> ids(static_cast<size_t>(batch * rowSize), -1);
    for (size_t i = 0; i < s.ids.size(); ++i)
      ids[at(i)] = s.ids[i];
    TensorValue t = int64Tensor(ids);
    t.shape = {batch, steps};
    out[ids_key(s.name)] = std::move(t);
  }
}

ModelInputs Transformer::transform(const data::Element &features) const {
  Impl::Batch b{features, {}, {}, {}, -1};
  std::vector<TensorValue> values(impl_->outputKeys.size());
  for (const auto &[key, c] : impl_->dense)
    values[impl_->denseSlot.at(key)] = impl_->numeric(b, *c);
  for (const auto &[name, c] : impl_->sparse)
    impl_->emit(b, *c, impl_->sparseKeys.at(name), values);
  ModelInputs out;
  for (size_t i = 0; i < values.size(); ++i)
    if (!values[i].shape.empty())
      out.emplace_hint(out.end(), impl_->outputKeys[i], std::move(values[i]));
  impl_->emitSequences(b, out);
  return out;
}

ModelInputs Transformer::transform(
    const std::map<std::string, TensorValue> &features) const {
  std::map<std::string, data::Element> fields;
  for (const auto &[key, t] : features)
    fields.emplace(key, data::Element(t));
  return transform(data::Element::dict(std::move(fields)));
}

} // namespace feature_column
} // namespace estc
