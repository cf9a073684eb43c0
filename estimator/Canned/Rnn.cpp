//===- Rnn.cpp - TF 2.15's RNN canned model (no LLVM) --------------------===//
//
// TF's canned/rnn.py: RNNModel and _get_rnn_estimator_spec as rnn_model()'s
// CannedModel. The JIT classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Rnn.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Recurrent.h"

#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;
using namespace detail;

namespace {

// TF's _DEFAULT_LEARNING_RATE and _DEFAULT_CLIP_NORM.
constexpr double kDefaultLearningRate = 0.05;
constexpr double kDefaultClipNorm = 5.0;

layers::CellType cellOf(const std::string &who, const std::string &type) {
  if (type == "simple_rnn")
    return layers::CellType::SimpleRNN;
  if (type == "lstm")
    return layers::CellType::LSTM;
  if (type == "gru")
    return layers::CellType::GRU;
  throw std::invalid_argument(who +
                              ": cell_type must be one of "
                              "'simple_rnn', 'lstm', 'gru', not '" +
                              type + "'");
}

void checkColumns(const std::string &who, const FeatureColumns &sequence,
                  const FeatureColumns &context) {
  if (sequence.empty())
    throw std::invalid_argument(who +
                                ": sequence_feature_columns must not be empty");
  for (const fc::FeatureColumnPtr &c : sequence) {
    if (!c)
      throw std::invalid_argument(who + ": a sequence feature column is null");
    if (!fc::is_sequence_column(*c) ||
        dynamic_cast<const fc::SequenceCategoricalColumn *>(c.get()))
      throw std::invalid_argument(
          who + ": sequence feature column '" + c->name() +
          "' is not a sequence dense column (sequence_numeric_column, or "
          "embedding_column / indicator_column of a "
          "sequence_categorical_column_*)");
  }
  for (const fc::FeatureColumnPtr &c : context) {
    if (!c)
      throw std::invalid_argument(who + ": a context feature column is null");
    if (fc::is_sequence_column(*c) ||
        !dynamic_cast<const fc::DenseColumn *>(c.get()))
      throw std::invalid_argument(
          who + ": context feature column '" + c->name() +
          "' must be a dense, non-sequence column (numeric_column, "
          "embedding_column, indicator_column, ...)");
  }
  FeatureColumns all = sequence;
  all.insert(all.end(), context.begin(), context.end());
  check_feature_columns(who, all);
}

/// TF's RNNModel.call: the logits [batch, units].
Tensor rnnLogits(const TensorMap &features, const FeatureColumns &sequence,
                 const FeatureColumns &context, const RNNOptions &o,
                 int64_t logitsDimension) {
  Graph &g = get_default_graph();
  fc::SequenceInput in = fc::SequenceFeatures(sequence)(features);
  Tensor x = in.input;
  if (!context.empty())
    x = fc::concatenate_context_input(
        fc::DenseFeatures(context, true, "dense_features")(features), x);
  Scope model = g.name_scope("rnn_model");
  layers::CellType cell = cellOf("RNNEstimator", o.cell_type);
  const std::string base = o.cell_type + "_cell";
  for (size_t i = 0; i < o.units.size(); ++i) {
    layers::RecurrentOptions r;
    r.name = "rnn";
    r.return_sequences = i + 1 < o.units.size();
    if (o.units.size() > 1)
      r.cell_name = "stacked_rnn_cells/" + base +
                    (i ? "_" + std::to_string(i) : std::string());
    if (cell == layers::CellType::LSTM)
      x = layers::lstm(x, o.units[i], r, in.sequence_length).output;
    else if (cell == layers::CellType::GRU)
      x = layers::gru(x, o.units[i], r, in.sequence_length).output;
    else
      x = layers::simple_rnn(x, o.units[i], r, in.sequence_length).output;
  }
  return layers::dense(x, logitsDimension, nullptr, true,
                       glorot_uniform_initializer(), zeros_initializer(),
                       "logits");
}

} // namespace

CannedModel rnn_model(std::shared_ptr<const Head> head,
                      FeatureColumns sequence_feature_columns,
                      RNNOptions options) {
  const std::string who = "RNNEstimator";
  checkHead(who, head);
  if (options.return_sequences)
    throw std::invalid_argument(
        who + ": return_sequences needs a sequential head (TF's "
              "SequentialHeadWrapper), which estc does not have");
  checkColumns(who, sequence_feature_columns, options.context_feature_columns);
  if (options.units.empty())
    throw std::invalid_argument(who + ": units must be given (one number "
                                      "per stacked layer)");
  for (int64_t u : options.units)
    if (u < 1)
      throw std::invalid_argument(who + ": units must be positive, got " +
                                  std::to_string(u));
  cellOf(who, options.cell_type);
  options.optimizer.get(kDefaultLearningRate); // checks the name
  FeatureColumns all = sequence_feature_columns;
  all.insert(all.end(), options.context_feature_columns.begin(),
             options.context_feature_columns.end());
  ModelFn fn = [head, sequence = std::move(sequence_feature_columns),
                options](const TensorMap &features, const Tensor &labels,
                         ModeKeys mode, const Params &, const RunConfig &) {
    Tensor logits =
        rnnLogits(features, sequence, options.context_feature_columns, options,
                  head->logits_dimension());
    std::optional<train::Optimizer> optimizer;
    if (mode == ModeKeys::TRAIN) {
      optimizer = options.optimizer.get(kDefaultLearningRate);
      if (options.optimizer.is_name())
        optimizer = optimizer->clip_gradients_by_norm(kDefaultClipNorm);
    }
    return head->create_estimator_spec(features, mode, logits, labels,
                                       optimizer);
  };
  return makeModel(std::move(head), std::move(fn), std::move(all));
}

} // namespace estimator
} // namespace estc
