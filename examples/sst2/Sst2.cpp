//===- Sst2.cpp - SST-2 sentences, vocabulary, input_fn and models -------===//

#include "examples/sst2/Sst2.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <stdexcept>
#include <utility>

namespace estc {
namespace examples {

namespace fc = feature_column;

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  std::string word;
  auto flush = [&] {
    if (!word.empty())
      tokens.push_back(std::move(word));
    word.clear();
  };
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      flush();
    } else if (std::ispunct(u) && c != '\'') {
      flush();
      tokens.emplace_back(1, c);
    } else {
      word += static_cast<char>(std::tolower(u));
    }
  }
  flush();
  return tokens;
}

Sentences read_sst2(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data::DataError(path + ": no such file");
  Sentences sentences;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    size_t tab = line.rfind('\t');
    std::string where = path + ":" + std::to_string(number);
    if (tab == std::string::npos)
      throw data::DataError(where + ": no tab between sentence and label");
    std::string label = line.substr(tab + 1);
    if (label != "0" && label != "1")
      throw data::DataError(where + ": label '" + label + "' is not 0 or 1");
    Sentence s;
    s.tokens = tokenize(std::string_view(line).substr(0, tab));
    s.label = label == "1" ? 1 : 0;
    sentences.push_back(std::move(s));
  }
  if (sentences.empty())
    throw data::DataError(path + ": no sentences");
  return sentences;
}

std::vector<std::string> build_vocabulary(const Sentences &sentences,
                                          int64_t min_count) {
  std::map<std::string, int64_t> counts;
  for (const Sentence &s : sentences)
    for (const std::string &t : s.tokens)
      ++counts[t];
  std::vector<std::pair<std::string, int64_t>> kept;
  for (const auto &[token, count] : counts)
    if (count >= min_count)
      kept.emplace_back(token, count);
  std::stable_sort(kept.begin(), kept.end(), [](const auto &a, const auto &b) {
    return a.second > b.second;
  });
  std::vector<std::string> vocabulary;
  vocabulary.reserve(kept.size());
  for (auto &[token, count] : kept)
    vocabulary.push_back(std::move(token));
  return vocabulary;
}

data::Dataset sst2_dataset(std::shared_ptr<const Sentences> sentences,
                           int64_t batch_size, std::optional<int64_t> epochs,
                           bool shuffle, uint64_t seed) {
  auto n = static_cast<int64_t>(sentences->size());
  data::Dataset indices = data::Dataset::range(n);
  if (shuffle)
    indices = indices.shuffle(n, seed);
  return indices.repeat(epochs)
      .map([sentences](data::Element e) {
        const Sentence &s = sentences->at(
            static_cast<size_t>(data::tensor(e).values<int64_t>().at(0)));
        std::map<std::string, data::Element> features;
        features.emplace(
            "tokens", data::Element(TensorValue::of_strings(
                          {static_cast<int64_t>(s.tokens.size())}, s.tokens)));
        return data::Element::tuple(
            {data::Element::dict(std::move(features)),
             data::Element(TensorValue::of<int64_t>({}, {s.label}))});
      })
      .padded_batch(batch_size);
}

fc::FeatureColumns token_columns(const std::vector<std::string> &vocabulary,
                                 int64_t embedding_dim) {
  auto tokens = fc::sequence_categorical_column_with_vocabulary_list(
      "tokens", vocabulary, DType::String, /*default_value=*/-1,
      /*num_oov_buckets=*/1);
  return {fc::embedding_column(tokens, embedding_dim)};
}

estimator::ModelFn bilstm_model_fn(fc::FeatureColumns columns,
                                   BiLstmOptions options) {
  using namespace estimator;
  return [columns = std::move(columns),
          options](const TensorMap &features, const Tensor &labels,
                   ModeKeys mode, const Params &, const RunConfig &) {
    bool training = mode == ModeKeys::TRAIN;
    // [batch, T, dim] embeddings and the sentences' lengths [batch].
    fc::SequenceInput in = fc::SequenceFeatures(columns)(features);
    Tensor x = layers::dropout(in.input, options.embedding_dropout, training);
    layers::RecurrentOptions lstm;
    lstm.training = training;
    Tensor h = layers::bidirectional(layers::CellType::LSTM, x,
                                     options.lstm_units, lstm, "concat",
                                     in.sequence_length)
                   .output; // [batch, 2 * units]
    h = layers::dropout(h, options.dropout, training);
    Tensor logits = layers::dense(h, 2);

    EstimatorSpec spec(mode);
    Tensor probabilities = nn::softmax(logits);
    spec.predictions = {{"classes", argmax(logits, 1)},
                        {"probabilities", probabilities},
                        {"logits", logits}};
    Tensor class_ids =
        add(zeros_like(logits, DType::Int32),
            logits.graph().constant(std::vector<double>{0, 1}, {2},
                                    DType::Int32, "class_range"));
    spec.export_outputs = {
        {"serving_default", ClassificationOutput(probabilities, class_ids)},
        {"predict", PredictOutput(spec.predictions)}};
    if (mode == ModeKeys::PREDICT)
      return spec;
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    spec.train_op =
        train::AdamOptimizer(options.learning_rate).minimize(spec.loss);
    spec.eval_metric_ops = {
        {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
    return spec;
  };
}

std::unique_ptr<estimator::Estimator>
make_sst2_estimator(const std::string &model, const fc::FeatureColumns &columns,
                    const BiLstmOptions &options,
                    const estimator::RunConfig &config) {
  using namespace estimator;
  if (model == "bilstm") {
    auto e =
        std::make_unique<Estimator>(bilstm_model_fn(columns, options), config);
    e->set_host_transform(fc::make_host_transform(
        columns, TensorSpec{"labels", DType::Int64, {-1}}));
    return e;
  }
  if (model == "rnn_classifier") {
    RNNOptions o;
    o.units = {options.lstm_units};
    o.cell_type = "lstm";
    o.optimizer = OptimizerSpec("Adam", options.learning_rate);
    RNNClassifierOptions head;
    head.n_classes = 2;
    return std::make_unique<RNNClassifier>(columns, o, head, config);
  }
  throw std::invalid_argument("sst2: unknown model '" + model +
                              "' (bilstm, rnn_classifier)");
}

} // namespace examples
} // namespace estc
