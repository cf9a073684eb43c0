//===- FeatureLayers.cpp - The graph half of feature columns --------------===//
//
// A bucketized column is bucketized here, from its source's dense input;
// as a categorical column (embedded, in a linear model) each example has
// exactly source-elements ids of weight 1 (id i * (len(boundaries) + 1) +
// bucket), so its lookup is a multi-hot [batch, num_buckets] times the
// table, divided by the id count for "mean" and its square root for
// "sqrtn": the same sums TF's sparse lookup makes, without a sparse input.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/FeatureLayers.h"

#include "lib/FeatureColumn/Transformer.h"
#include "lib/Graph/PartitionedVariables.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace estc {
namespace feature_column {

using detail::as;
using detail::requireCombiner;

namespace {

/// TF's _sanitize_column_name_for_variable_scope.
std::string scopeName(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
          c == '-'))
      c = '_';
  return s;
}

Graph &graphOf(const TensorMap &features, const char *fn) {
  if (features.empty())
    throw std::invalid_argument(std::string(fn) + ": no features");
  return features.begin()->second.graph();
}

/// Builds the columns' tensors of one layer call.
class Builder {
public:
  Builder(const TensorMap &features, bool trainable, bool reuse,
          Partitioner partitioner = nullptr)
      : features_(features), trainable_(trainable), reuse_(reuse),
        partitioner_(std::move(partitioner)) {}

  /// A dense column's value, [batch] + variable_shape.
  Tensor dense(const DenseColumn &c);
  /// A sequence column's value, [batch, T, per-step size], and its lengths.
  Tensor sequence(const FeatureColumn &c, Tensor &length);
  /// The `combiner` of the rows of params [num_buckets, dim] that the ids
  /// of `c` select: [batch, dim].
  Tensor lookup(const Tensor &params, const CategoricalColumn &c,
                const std::string &combiner, double maxNorm);
  /// An embedding table [num_buckets, dim] of `c` and the `combiner` of the
  /// rows its ids select: one variable, or with the layer's partitioner
  /// the parts "<name>/part_<i>" of a partitioned one, looked up with TF's
  /// "div" strategy (TF 1's variable_scope partitioner: canned
  /// estimators' input_layer_partitioner).
  Tensor embed(const std::string &name, const Dims &shape,
               const Initializer &init, bool trainable, bool reuse,
               const CategoricalColumn &c, const std::string &combiner,
               double maxNorm);
  /// A weight of the layer, zeros at first: one variable, or with the
  /// layer's partitioner its parts' values concatenated.
  Tensor weights(const std::string &name, const Dims &shape);

private:
  Tensor input(const std::string &key, const FeatureColumn &c);
  Tensor numeric(const NumericColumn &c);
  /// [batch, num_buckets]: one-hot of each source element's bucket.
  Tensor bucketMultiHot(const BucketizedColumn &c);
  Variable variable(const std::string &name, const Dims &shape,
                    const Initializer &init, bool trainable, bool reuse);
  /// variable() as the parts of a partitioned variable (partitioner_).
  PartitionedVariable parts(const std::string &name, const Dims &shape,
                            const Initializer &init, bool trainable,
                            bool reuse);

  const TensorMap &features_;
  bool trainable_;
  bool reuse_;
  Partitioner partitioner_;
};

Tensor Builder::input(const std::string &key, const FeatureColumn &c) {
  if (!features_.contains(key))
    throw GraphError("feature column '" + c.name() + "': no model input '" +
                     key +
                     "' among the features (feed the Transformer's "
                     "input_specs())");
  return features_.at(key);
}

Tensor Builder::numeric(const NumericColumn &c) {
  Tensor x = input(c.key(), c);
  if (x.dtype() != DType::Float32)
    throw GraphError("numeric_column '" + c.name() + "': model input '" +
                     c.key() + "' is " + to_string(x.dtype()) +
                     ", expected f32 (the Transformer's)");
  return c.normalizer_fn() ? c.normalizer_fn()(x) : x;
}

Tensor Builder::bucketMultiHot(const BucketizedColumn &c) {
  Tensor b = bucketize(numeric(*c.source_column()), c.boundaries());
  auto depth = static_cast<int64_t>(c.boundaries().size()) + 1;
  // [batch, k, depth] -> [batch, k * depth]: element i's bucket at
  // i * depth + bucket, the bucketized column's ids.
  return reshape(one_hot(b, depth), {-1, c.num_buckets()});
}

Variable Builder::variable(const std::string &name, const Dims &shape,
                           const Initializer &init, bool trainable,
                           bool reuse) {
  Graph &g = graphOf(features_, "feature columns");
  return g.get_variable(name, DType::Float32, shape, init,
                        trainable && trainable_, reuse || reuse_);
}

PartitionedVariable Builder::parts(const std::string &name, const Dims &shape,
                                   const Initializer &init, bool trainable,
                                   bool reuse) {
  Graph &g = graphOf(features_, "feature columns");
  return get_variable(g, name, DType::Float32, shape, partitioner_, init,
                      trainable && trainable_, reuse || reuse_);
}

Tensor Builder::weights(const std::string &name, const Dims &shape) {
  if (partitioner_)
    return parts(name, shape, zeros_initializer(), true, false);
  return variable(name, shape, zeros_initializer(), true, false);
}

Tensor Builder::embed(const std::string &name, const Dims &shape,
                      const Initializer &init, bool trainable, bool reuse,
                      const CategoricalColumn &c, const std::string &combiner,
                      double maxNorm) {
  if (!partitioner_)
    return lookup(variable(name, shape, init, trainable, reuse), c, combiner,
                  maxNorm);
  PartitionedVariable table = parts(name, shape, init, trainable, reuse);
  if (as<BucketizedColumn>(&c))
    return lookup(table.as_tensor(), c, combiner, maxNorm);
  return safe_embedding_lookup_sparse(table, sparse_ids(features_, c), combiner,
                                      maxNorm, "div");
}

Tensor Builder::lookup(const Tensor &params, const CategoricalColumn &c,
                       const std::string &combiner, double maxNorm) {
  if (const auto *b = as<BucketizedColumn>(&c)) {
    Tensor table = params;
    if (maxNorm > 0) {
      // tf.clip_by_norm of every row (each looked-up embedding).
      Tensor norm = sqrt(reduce_sum(square(table), Dims{1}, true));
      table = table * (maxNorm / maximum(norm, maxNorm));
    }
    Tensor sum = matmul(bucketMultiHot(*b), table);
    auto k = static_cast<double>(b->source_column()->num_elements());
    if (combiner == "mean")
      return sum / k;
    if (combiner == "sqrtn")
      return sum / std::sqrt(k);
    return sum;
  }
  return safe_embedding_lookup_sparse(params, sparse_ids(features_, c),
                                      combiner, maxNorm);
}

Tensor Builder::dense(const DenseColumn &c) {
  if (const auto *n = as<NumericColumn>(&c))
    return numeric(*n);
  if (const auto *b = as<BucketizedColumn>(&c))
    return one_hot(bucketize(numeric(*b->source_column()), b->boundaries()),
                   static_cast<int64_t>(b->boundaries().size()) + 1);
  if (const auto *i = as<IndicatorColumn>(&c)) {
    const CategoricalColumn &cat = *i->categorical_column();
    if (const auto *b = as<BucketizedColumn>(&cat))
      return bucketMultiHot(*b);
    return sparse_to_indicator(sparse_ids(features_, cat), cat.num_buckets());
  }
  if (const auto *e = as<EmbeddingColumn>(&c))
    return embed("embedding_weights",
                 {e->categorical_column()->num_buckets(), e->dimension()},
                 e->initializer(), e->trainable(), false,
                 *e->categorical_column(), e->combiner(),
                 e->max_norm().value_or(0));
  if (const auto *s = as<SharedEmbeddingColumn>(&c)) {
    // The first column of the collection creates the table, the others
    // share it.
    const SharedEmbeddingState &st = s->shared();
    return embed("embedding_weights", {st.num_buckets, st.dimension},
                 st.initializer, st.trainable, true, *s->categorical_column(),
                 s->combiner(), s->max_norm().value_or(0));
  }
  throw std::invalid_argument("feature column '" + c.name() +
                              "' has no dense value");
}

Tensor Builder::sequence(const FeatureColumn &c, Tensor &length) {
  if (const auto *n = as<SequenceNumericColumn>(&c)) {
    length = input(sequence_length_key(n->key()), c);
    Tensor x = input(n->key(), c);
    if (n->normalizer_fn()) {
      // TF normalizes the SparseTensor's values; the padding keeps
      // default_value.
      Tensor given = greater(input(mask_key(n->key()), c), 0.5);
      x = where(given, n->normalizer_fn()(x), x);
    }
    return x;
  }
  const CategoricalColumn *cat = nullptr;
  if (const auto *e = as<EmbeddingColumn>(&c))
    cat = e->categorical_column().get();
  else if (const auto *i = as<IndicatorColumn>(&c))
    cat = i->categorical_column().get();
  const auto *seq = as<SequenceCategoricalColumn>(cat);
  if (!seq)
    throw std::invalid_argument(
        "SequenceFeatures: feature column '" + c.name() +
        "' is not a sequence column (sequence_numeric_column, or "
        "embedding_column / indicator_column of a "
        "sequence_categorical_column_*)");
  length = input(sequence_length_key(seq->name()), c);
  Tensor ids = input(ids_key(seq->name()), c);
  if (as<IndicatorColumn>(&c))
    return one_hot(ids, seq->num_buckets()); // -1: a row of zeros
  const auto &e = dynamic_cast<const EmbeddingColumn &>(c);
  Variable table =
      variable("embedding_weights", {seq->num_buckets(), e.dimension()},
               e.initializer(), e.trainable(), false);
  // One id per step: every combiner gives its embedding; a step without
  // an id (-1) gives zeros, as safe_embedding_lookup_sparse does.
  Tensor valid = greater_equal(ids, 0.0);
  Tensor rows = gather(table, where(valid, ids, 0.0));
  if (e.max_norm()) {
    double m = *e.max_norm();
    Tensor norm = sqrt(reduce_sum(square(rows), Dims{2}, true));
    rows = rows * (m / maximum(norm, m));
  }
  return rows * expand_dims(cast(valid, DType::Float32), 2);
}

/// The variable scope of a column in a layer (TF's _var_scope_name).
std::string columnScope(const FeatureColumn &c) {
  if (const auto *s = as<SharedEmbeddingColumn>(&c))
    return scopeName(s->shared().collection_name);
  return scopeName(c.name());
}

Tensor denseLayer(const TensorMap &features, const FeatureColumns &columns,
                  bool trainable, const std::string &scope, bool reuse,
                  const char *fn, const Partitioner &partitioner = nullptr) {
  Graph &g = graphOf(features, fn);
  FeatureColumns sorted = sorted_by_name(columns);
  for (const FeatureColumnPtr &c : sorted)
    if (is_sequence_column(*c))
      throw std::invalid_argument(
          std::string(fn) + ": feature column '" + c->name() +
          "' is a sequence column; use SequenceFeatures for it");
  for (const FeatureColumnPtr &c : sorted)
    if (!as<DenseColumn>(c.get()))
      throw std::invalid_argument(
          std::string(fn) +
          ": items of feature_columns must be dense "
          "columns; wrap the categorical column '" +
          c->name() + "' in an embedding_column or indicator_column");
  Scope layer = g.name_scope(scope);
  Builder builder(features, trainable, reuse, partitioner);
  std::vector<Tensor> outputs;
  for (const FeatureColumnPtr &c : sorted) {
    const auto &d = dynamic_cast<const DenseColumn &>(*c);
    Scope column = g.name_scope(columnScope(d));
    outputs.push_back(reshape(builder.dense(d), {-1, d.num_elements()}));
  }
  return outputs.size() == 1 ? outputs[0] : concat(outputs, 1);
}

} // namespace

SparseIds sparse_ids(const TensorMap &features,
                     const CategoricalColumn &categorical_column) {
  std::string name = categorical_column.name();
  auto get = [&](const std::string &key) {
    if (!features.contains(key))
      throw GraphError("feature column '" + name + "': no model input '" + key +
                       "' among the features (feed the Transformer's "
                       "input_specs())");
    return features.at(key);
  };
  SparseIds ids;
  ids.ids = get(ids_key(name));
  ids.rows = get(rows_key(name));
  ids.row_lengths = get(row_lengths_key(name));
  if (as<WeightedCategoricalColumn>(&categorical_column))
    ids.weights = get(weights_key(name));
  return ids;
}

Tensor input_layer(const TensorMap &features,
                   const FeatureColumns &feature_columns, bool trainable,
                   const Partitioner &partitioner) {
  Graph &g = graphOf(features, "input_layer");
  return denseLayer(features, feature_columns, trainable,
                    g.unique_layer_name("input_layer"), false, "input_layer",
                    partitioner);
}

DenseFeatures::DenseFeatures(FeatureColumns feature_columns, bool trainable,
                             std::string name)
    : columns_(std::move(feature_columns)), trainable_(trainable),
      name_(std::move(name)) {
  sorted_by_name(columns_); // checks: not empty, no nulls, unique names
}

Tensor DenseFeatures::operator()(const TensorMap &features) const {
  return denseLayer(features, columns_, trainable_, name_, true,
                    "DenseFeatures");
}

Tensor linear_model(const TensorMap &features,
                    const FeatureColumns &feature_columns, int64_t units,
                    const std::string &sparse_combiner, bool trainable,
                    const Partitioner &partitioner) {
  Graph &g = graphOf(features, "linear_model");
  if (units < 1)
    throw std::invalid_argument("linear_model: units must be >= 1, not " +
                                std::to_string(units));
  requireCombiner("linear_model: sparse_combiner", sparse_combiner);
  FeatureColumns sorted = sorted_by_name(feature_columns);
  for (const FeatureColumnPtr &c : sorted)
    if (is_sequence_column(*c))
      throw std::invalid_argument(
          "linear_model: feature column '" + c->name() +
          "' is a sequence column; use SequenceFeatures for it");
  for (const FeatureColumnPtr &c : sorted)
    if (!as<DenseColumn>(c.get()) && !as<CategoricalColumn>(c.get()))
      throw std::invalid_argument("linear_model: feature column '" + c->name() +
                                  "' is neither dense nor categorical");
  Scope layer = g.name_scope(g.unique_layer_name("linear_model"));
  // Every variable of the model, with a partitioner its parts (TF 1's
  // variable_scope partitioner: LinearClassifier's `partitioner`).
  Builder builder(features, trainable, false, partitioner);
  Tensor sum;
  for (const FeatureColumnPtr &c : sorted) {
    Scope column = g.name_scope(columnScope(*c));
    Tensor part;
    if (const auto *cat = dynamic_cast<const CategoricalColumn *>(c.get())) {
      part = builder.embed("weights", {cat->num_buckets(), units},
                           zeros_initializer(), true, false, *cat,
                           sparse_combiner, 0);
    } else {
      const auto &d = dynamic_cast<const DenseColumn &>(*c);
      part = matmul(reshape(builder.dense(d), {-1, d.num_elements()}),
                    builder.weights("weights", {d.num_elements(), units}),
                    false, false, "weighted_sum");
    }
    sum = sum.valid() ? add(sum, part) : part;
  }
  return nn::bias_add(sum, builder.weights("bias_weights", {units}),
                      "weighted_sum");
}

SequenceFeatures::SequenceFeatures(FeatureColumns feature_columns,
                                   bool trainable, std::string name)
    : columns_(sorted_by_name(feature_columns)), trainable_(trainable),
      name_(std::move(name)) {
  for (const FeatureColumnPtr &c : columns_)
    if (!is_sequence_column(*c) || as<SequenceCategoricalColumn>(c.get()))
      throw std::invalid_argument(
          "SequenceFeatures: feature column '" + c->name() +
          "' is not a sequence dense column (sequence_numeric_column, or "
          "embedding_column / indicator_column of a "
          "sequence_categorical_column_*)");
}

SequenceInput SequenceFeatures::operator()(const TensorMap &features) const {
  Graph &g = graphOf(features, "SequenceFeatures");
  Scope layer = g.name_scope(name_);
  Builder builder(features, trainable_, true);
  std::vector<Tensor> outputs;
  SequenceInput out;
  for (const FeatureColumnPtr &c : columns_) {
    Scope column = g.name_scope(columnScope(*c));
    Tensor length;
    outputs.push_back(builder.sequence(*c, length));
    if (!out.sequence_length.valid())
      out.sequence_length = length;
  }
  out.input = outputs.size() == 1 ? outputs[0] : concat(outputs, 2);
  return out;
}

Tensor concatenate_context_input(const Tensor &context_input,
                                 const Tensor &sequence_input) {
  if (sequence_input.rank() != 3)
    throw std::invalid_argument(
        "concatenate_context_input: sequence_input must have rank 3, got " +
        std::to_string(sequence_input.rank()));
  if (context_input.rank() != 2)
    throw std::invalid_argument(
        "concatenate_context_input: context_input must have rank 2, got " +
        std::to_string(context_input.rank()));
  if (context_input.dtype() != DType::Float32 ||
      sequence_input.dtype() != DType::Float32)
    throw std::invalid_argument("concatenate_context_input: inputs must be "
                                "float32");
  // [batch, d] -> [batch, T, d]: zeros of the sequence's [batch, T, 1]
  // plus the context.
  Tensor steps = zeros_like(slice(sequence_input, {0, 0, 0}, {-1, -1, 1}));
  Tensor tiled = steps + expand_dims(context_input, 1);
  return concat({sequence_input, tiled}, 2);
}

} // namespace feature_column
} // namespace estc
