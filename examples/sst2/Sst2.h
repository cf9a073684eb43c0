//===- Sst2.h - SST-2 sentences, vocabulary, input_fn and models ---------===//
//
// The SST-2 sentiment example's pieces (examples/sst2): the TSV files
// (`sentence<TAB>label`, 0 negative / 1 positive), a tokenizer and a
// vocabulary built from the training split, the input pipeline (tf.data:
// shuffle, repeat, padded_batch, so the sequence length is each batch's
// longest sentence), the token feature column (the vocabulary list with
// one OOV bucket, embedded), and the two models:
//
//   bilstm           a custom model_fn: embedding -> Bidirectional(LSTM)
//                    over the valid steps -> dropout -> dense(2), sparse
//                    softmax cross entropy, Adam
//   rnn_classifier   TF's canned RNNClassifier (one LSTM layer) over the
//                    same column
//
// The tokens stay strings up to the feature column: its host half maps
// them to ids (the same on the trainer and in an export, so a served model
// takes tokens, not ids).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_SST2_SST2_H
#define ESTC_EXAMPLES_SST2_SST2_H

#include "estc/canned.h"
#include "estc/data.h"
#include "estc/estimator.h"
#include "estc/feature_column.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace examples {

/// One labelled sentence, tokenized.
struct Sentence {
  std::vector<std::string> tokens;
  int64_t label = 0;
};
using Sentences = std::vector<Sentence>;

/// Lowercase ASCII, then split on whitespace, every ASCII punctuation
/// character a token of its own except an apostrophe inside or at the
/// start of a word (the treebank's "n't", "'s" stay whole). The SST-2
/// files are already lowercase and tokenized; this is for text that is not.
std::vector<std::string> tokenize(std::string_view text);

/// The sentences of an SST-2 TSV file. data::DataError naming the file and
/// line for a missing file, a line without a tab or a label other than 0
/// or 1.
Sentences read_sst2(const std::string &path);

/// The tokens seen at least `min_count` times in `sentences`, most frequent
/// first (ties in byte order): the feature column's vocabulary list.
std::vector<std::string> build_vocabulary(const Sentences &sentences,
                                          int64_t min_count);

/// The input_fn's pipeline: elements ({"tokens": STRING [T]}, label I64)
/// padded_batch'ed to ({"tokens": [batch, T]}, [batch]), T the batch's
/// longest sentence, shorter ones padded with "" (no id: the column's
/// sequence length ends before it). Shuffled from `seed` (a new order each
/// epoch) when `shuffle`; `epochs` nullopt repeats forever.
data::Dataset sst2_dataset(std::shared_ptr<const Sentences> sentences,
                           int64_t batch_size, std::optional<int64_t> epochs,
                           bool shuffle, uint64_t seed);

/// The model's one sequence column, `tokens`: the vocabulary (one OOV
/// bucket) embedded in `embedding_dim` dimensions.
feature_column::FeatureColumns
token_columns(const std::vector<std::string> &vocabulary,
              int64_t embedding_dim);

/// The bilstm model's hyperparameters.
struct BiLstmOptions {
  int64_t lstm_units = 32;
  double embedding_dropout = 0.5;
  double dropout = 0.5;
  double learning_rate = 0.002;
};

/// The bilstm model_fn over `columns` (token_columns): predictions
/// `classes` (I64 [batch]), `probabilities` [batch, 2], `logits`; metric
/// `accuracy`; export outputs: a ClassificationOutput as serving_default
/// (`:classify`) and the predictions as "predict".
estimator::ModelFn bilstm_model_fn(feature_column::FeatureColumns columns,
                                   BiLstmOptions options);

/// An Estimator (JIT) for `model`, "bilstm" (the model_fn above with the
/// columns' host transform) or "rnn_classifier" (RNNClassifier, LSTM of
/// options.lstm_units, Adam at options.learning_rate).
std::unique_ptr<estimator::Estimator> make_sst2_estimator(
    const std::string &model, const feature_column::FeatureColumns &columns,
    const BiLstmOptions &options, const estimator::RunConfig &config);

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_SST2_SST2_H
