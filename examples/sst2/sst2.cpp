//===- sst2.cpp - Sentiment of SST-2 sentences with a BiLSTM -------------===//
//
// Trains a bidirectional LSTM (a custom model_fn), TF's canned
// RNNClassifier or a BERT-style encoder trained from scratch (Bert.h, with
// BERT's AdamWeightDecay) on the SST-2 sentences with the JIT Estimator's
// train_and_evaluate (the dev split evaluated in memory after each epoch),
// evaluates the test split, prints one JSON line and the first test
// predictions, and exports the serving model (a parsing receiver: JSON
// tf.Examples with a "tokens" list of strings, for estc-serve's :classify;
// bert: a raw receiver of "input_ids" and "lengths").
//
//   sst2 --data_dir=../shared/data/sst2 [--model=bilstm|rnn_classifier|bert]
//        [--epochs=3] [--train_steps=N] [--batch_size=32] [--export_dir=DIR]
//
//===----------------------------------------------------------------------===//

#include "examples/sst2/Sst2.h"
#include "examples/sst2/Bert.h"

#include "estc/flags.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>

using namespace estc;
using namespace estc::estimator;

namespace {

using SteadyClock = std::chrono::steady_clock;

double secondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

/// The training loss: the mean of the first and of the last `window` steps.
class LossHook : public SessionRunHook {
public:
  explicit LossHook(size_t window) : window_(window) {}
  SessionRunArgs before_run(SessionRunContext &) override { return {{"loss"}}; }
  void after_run(SessionRunContext &, const SessionRunValues &values) override {
    losses_.push_back(values.results.at("loss").values<float>().at(0));
  }
  double first() const { return mean(0); }
  double last() const {
    return mean(losses_.size() > window_ ? losses_.size() - window_ : 0);
  }

private:
  double mean(size_t from) const {
    double sum = 0;
    size_t n = 0;
    for (size_t i = from; i < losses_.size() && n < window_; ++i, ++n)
      sum += losses_[i];
    return n ? sum / static_cast<double>(n) : 0;
  }
  size_t window_;
  std::vector<float> losses_;
};

/// The seconds spent in evaluations (train_and_evaluate's dev runs), to
/// leave out of the training steps per second.
class EvalTimeHook : public SessionRunHook {
public:
  void begin() override { start_ = SteadyClock::now(); }
  void end(Session &) override { seconds += secondsSince(start_); }
  double seconds = 0;

private:
  SteadyClock::time_point start_;
};

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  const char *program = "sst2";
  std::string dataDir, model = "bilstm", modelDir, exportDir;
  int64_t epochs = 3, batchSize = 32, embeddingDim = 128, minCount = 2,
          seed = 1, threads = 2, predictions = 3;
  std::optional<int64_t> trainSteps;
  examples::BiLstmOptions o;
  examples::BertOptions bert;
  double warmup = 0.1;
  flags::FlagParser parser(
      program, "Trains a sentiment classifier on SST-2 (train.tsv, dev.tsv, "
               "test.tsv: sentence<TAB>label), evaluating dev after each "
               "epoch and test at the end; prints the metrics as JSON.");
  parser.add(
      Flag("data_dir", &dataDir, "folder of train.tsv, dev.tsv, test.tsv")
          .value_name("DIR")
          .required());
  parser.add(Flag("model", &model, "the model")
                 .choices({"bilstm", "rnn_classifier", "bert"}));
  parser.add(Flag("epochs", &epochs, "passes over train.tsv").positive());
  parser.add(Flag("train_steps", &trainSteps,
                  "train this many steps instead of --epochs")
                 .positive());
  parser.add(Flag("batch_size", &batchSize, "sentences per step").positive());
  parser.add(Flag("embedding_dim", &embeddingDim, "embedding size").positive());
  parser.add(
      Flag("lstm_units", &o.lstm_units, "LSTM units per direction").positive());
  parser.add(Flag("embedding_dropout", &o.embedding_dropout,
                  "bilstm: dropout rate of the embeddings")
                 .min(0)
                 .max(0.99));
  parser.add(
      Flag("dropout", &o.dropout, "bilstm: dropout rate before the logits")
          .min(0)
          .max(0.99));
  parser.add(Flag("learning_rate", &o.learning_rate, "Adam's learning rate")
                 .positive());
  parser.add(Flag("bert_hidden_size", &bert.hidden_size,
                  "bert: hidden size (BERT-mini: 256)")
                 .positive());
  parser.add(
      Flag("bert_layers", &bert.num_layers, "bert: encoder layers").positive());
  parser.add(
      Flag("bert_heads", &bert.num_heads, "bert: attention heads").positive());
  parser.add(Flag("bert_seq_length", &bert.seq_length,
                  "bert: tokens per sentence, [CLS] included (longer ones "
                  "are cut)")
                 .positive());
  parser.add(Flag("bert_learning_rate", &bert.learning_rate,
                  "bert: AdamWeightDecay's peak learning rate")
                 .positive());
  parser.add(Flag("bert_dropout", &bert.hidden_dropout,
                  "bert: hidden and attention dropout rate")
                 .min(0)
                 .max(0.99));
  parser.add(Flag("bert_warmup", &warmup,
                  "bert: the warmup's share of the training steps")
                 .min(0)
                 .max(1));
  parser.add(Flag("min_count", &minCount,
                  "a token's occurrences in train.tsv to be in the "
                  "vocabulary (others share one OOV id)")
                 .positive());
  parser.add(Flag("seed", &seed, "graph seed and shuffle seed"));
  parser.add(Flag("threads", &threads, "runtime threads").positive());
  parser.add(Flag("model_dir", &modelDir,
                  "checkpoints and summaries (default: a temporary folder)"));
  parser.add(Flag("export_dir", &exportDir,
                  "after training, export the serving model (a parsing "
                  "receiver: tf.Example with a 'tokens' string list) here"));
  parser.add(
      Flag("predictions", &predictions, "test sentences to print").min(0));
  parser.parse_or_exit(argc, argv);
  try {
    namespace fs = std::filesystem;
    auto read = [&](const char *name) {
      return std::make_shared<const examples::Sentences>(
          examples::read_sst2((fs::path(dataDir) / name).string()));
    };
    auto train = read("train.tsv"), dev = read("dev.tsv"),
         test = read("test.tsv");
    std::vector<std::string> vocabulary =
        examples::build_vocabulary(*train, minCount);
    feature_column::FeatureColumns columns =
        examples::token_columns(vocabulary, embeddingDim);

    RunConfigOptions ro;
    if (!modelDir.empty())
      ro.model_dir = modelDir;
    ro.tf_random_seed = seed;
    ro.intra_op_parallelism_threads = static_cast<int>(threads);
    ro.log_step_count_steps = 100;
    ro.save_summary_steps = 0;
    int64_t stepsPerEpoch =
        (static_cast<int64_t>(train->size()) + batchSize - 1) / batchSize;
    int64_t maxSteps = trainSteps ? *trainSteps : epochs * stepsPerEpoch;
    auto u64 = static_cast<uint64_t>(seed);
    bool isBert = model == "bert";
    std::unique_ptr<Estimator> estimator;
    if (isBert) {
      bert.vocab_size =
          examples::kBertFirstWordId + static_cast<int64_t>(vocabulary.size());
      bert.attention_dropout = bert.hidden_dropout;
      bert.intermediate_size = 4 * bert.hidden_size;
      bert.max_position_embeddings = std::max<int64_t>(128, bert.seq_length);
      bert.num_train_steps = maxSteps;
      bert.num_warmup_steps =
          static_cast<int64_t>(warmup * static_cast<double>(maxSteps));
      estimator = std::make_unique<Estimator>(examples::bert_model_fn(bert),
                                              RunConfig(ro));
    } else {
      estimator =
          examples::make_sst2_estimator(model, columns, o, RunConfig(ro));
    }
    // The input pipeline of a split: tokens for the bilstm and the canned
    // RNNClassifier (their feature column maps them to ids), fixed-length
    // ids for bert.
    auto input = [&](std::shared_ptr<const examples::Sentences> split,
                     int64_t batch, std::optional<int64_t> epochs, bool shuffle,
                     uint64_t shuffleSeed) {
      return isBert
                 ? examples::bert_dataset(split, vocabulary, bert.seq_length,
                                          batch, epochs, shuffle, shuffleSeed)
                 : sst2_dataset(split, batch, epochs, shuffle, shuffleSeed);
    };
    auto loss = std::make_shared<LossHook>(50);
    auto evalTime = std::make_shared<EvalTimeHook>();
    TrainSpec trainSpec{
        [&] { return input(train, batchSize, std::nullopt, true, u64); },
        maxSteps,
        {loss}};
    EvalSpec evalSpec;
    evalSpec.input_fn = [&] { return input(dev, 256, 1, false, 0); };
    evalSpec.steps = std::nullopt;
    evalSpec.name = "dev";
    evalSpec.every_n_steps = std::min(stepsPerEpoch, maxSteps);
    evalSpec.hooks = {evalTime};
    auto start = SteadyClock::now();
    TrainAndEvaluateResult devResult =
        train_and_evaluate(*estimator, trainSpec, evalSpec);
    double seconds = secondsSince(start);
    EvalResults r = estimator->evaluate(
        [&] { return input(test, 256, 1, false, 0); }, {.name = "test"});
    int64_t steps = r.at("global_step");
    std::printf(
        "{\"model\": \"%s\", \"seed\": %lld, \"vocabulary\": %zu, "
        "\"steps\": %lld, \"train_and_evaluate_seconds\": %.1f, "
        "\"steps_per_sec\": %.2f, \"first_loss\": %.4f, \"final_loss\": "
        "%.4f, \"dev_accuracy\": %.4f, \"test_accuracy\": %.4f, "
        "\"test_loss\": %.4f}\n",
        model.c_str(), static_cast<long long>(seed), vocabulary.size(),
        static_cast<long long>(steps), seconds,
        static_cast<double>(steps) / (seconds - evalTime->seconds),
        loss->first(), loss->last(), devResult.eval_result.at("accuracy"),
        r.at("accuracy"), r.at("loss"));
    int64_t shown = 0;
    for (const Prediction &p :
         estimator->predict([&] { return input(test, 256, 1, false, 0); })) {
      if (shown >= predictions)
        break;
      std::printf(
          "prediction %lld: positive %.4f\n", static_cast<long long>(shown),
          static_cast<double>(p.at("probabilities").values<float>().at(1)));
      ++shown;
    }
    if (!exportDir.empty()) {
      ServingInputReceiverFn receiver;
      if (isBert) {
        std::vector<TensorSpec> inputs(2);
        inputs[0].key = "input_ids";
        inputs[0].dtype = DType::Int64;
        inputs[0].shape = {-1, bert.seq_length};
        inputs[1].key = "lengths";
        inputs[1].dtype = DType::Int64;
        inputs[1].shape = {-1};
        receiver = build_raw_serving_input_receiver_fn(std::move(inputs));
      } else {
        receiver = build_parsing_serving_input_receiver_fn(
            feature_column::make_parse_example_spec(columns));
      }
      std::string dir = estimator->export_saved_model(exportDir, receiver);
      std::printf("exported: %s\n", dir.c_str());
    }
  } catch (const std::exception &e) {
    flags::print_error_line(program, e.what());
    return 1;
  }
  return 0;
}
