//===- SequenceServingTest.cpp - Sequences through the Estimator, served --===//
//
// The sequence model of SequenceTestModel.h with a classification head,
// trained by the Estimator (JIT) on padded batches whose length changes
// from batch to batch, exported with a raw receiver of its two sequence
// inputs, loaded by serving::SavedModel and served by estc-serve's server
// over loopback HTTP: every request brings its own length (two lengths
// answered by one compiled model), and a bad one (two inputs of different
// lengths, one over the declared maximum) is one line, a 400 over REST.
//
//===----------------------------------------------------------------------===//

#include "runtime/serving/SavedModel.h"
#include "test/unit/SequenceTestModel.h"
#include "test/unit/TinyClassifier.h"
#include "tools/estc-serve/SavedModelServable.h"
#include "tools/estc-serve/Server.h"

#include "estimator/Export.h"
#include "lib/Graph/Train.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;
using tiny::errorOf;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new tiny::JitCacheEnvironment("estc-sequence-serving-test-"));

EstimatorSpec sequenceFn(const TensorMap &features, const Tensor &labels,
                         ModeKeys mode, const Params &, const RunConfig &) {
  TensorMap predictions = sequence_model::predictions(features);
  EstimatorSpec spec(mode);
  spec.predictions = predictions;
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss =
      losses::sparse_softmax_cross_entropy(labels, predictions["logits"]);
  spec.train_op = train::GradientDescentOptimizer(0.1).minimize(spec.loss);
  return spec;
}

/// A padded batch: `batch` sequences of `length` steps (weights of a
/// second length when `weightsLength` is set).
Batch paddedBatch(int64_t batch, int64_t length, uint32_t seed,
                  int64_t weightsLength = -1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  if (weightsLength < 0)
    weightsLength = length;
  std::vector<float> tokens(batch * length * sequence_model::kFeatures);
  std::vector<float> weights(batch * weightsLength);
  std::vector<int64_t> labels(batch);
  for (float &v : tokens)
    v = u(rng);
  for (float &v : weights)
    v = u(rng) > -0.5f ? 1.0f : 0.0f; // mostly steps, some padding
  for (int64_t &l : labels)
    l = static_cast<int64_t>(rng() % sequence_model::kClasses);
  Batch b;
  b.features["tokens"] = TensorValue::of<float>(
      {batch, length, sequence_model::kFeatures}, tokens);
  b.features["weights"] =
      TensorValue::of<float>({batch, weightsLength}, weights);
  b.labels = TensorValue::of<int64_t>({batch}, labels);
  return b;
}

ElementSpec sequenceSpec() {
  ElementSpec spec = sequence_model::inputs();
  spec.labels = TensorSpec{"labels", DType::Int64, {-1}};
  return spec;
}

/// `n` batches of 4, of lengths 3, 7, 1, 12, 3, ...
InputFn trainInput(int n) {
  return [n] {
    auto i = std::make_shared<int>(0);
    return Dataset::from_generator(
        [i, n]() -> std::optional<Batch> {
          if (*i >= n)
            return std::nullopt;
          int64_t lengths[] = {3, 7, 1, 12};
          int k = (*i)++;
          return paddedBatch(4, lengths[k % 4], 100 + k);
        },
        sequenceSpec());
  };
}

InputFn oneBatch(Batch b) {
  return [b] {
    auto done = std::make_shared<bool>(false);
    return Dataset::from_generator(
        [b, done]() -> std::optional<Batch> {
          if (*done)
            return std::nullopt;
          *done = true;
          return b;
        },
        sequenceSpec());
  };
}

class SequenceServingTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() /
            ("estc-sequence-serving-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    RunConfigOptions o;
    o.model_dir = (root_ / "model").string();
    o.tf_random_seed = 1;
    o.save_summary_steps = 0;
    o.log_step_count_steps = 1000000;
    estimator_ = std::make_unique<Estimator>(sequenceFn,
                                             RunConfig::from_tf_config("", o));
    estimator_->train(trainInput(8));
    TensorSpec tokens = sequence_model::inputs().features[0];
    TensorSpec weights = sequence_model::inputs().features[1];
    exported_ = estimator_->export_saved_model(
        (root_ / "export").string(),
        build_raw_serving_input_receiver_fn({tokens, weights}));
  }
  static void TearDownTestSuite() {
    estimator_.reset();
    fs::remove_all(root_);
  }

  static fs::path root_;
  static std::unique_ptr<Estimator> estimator_;
  static std::string exported_;
};
fs::path SequenceServingTest::root_;
std::unique_ptr<Estimator> SequenceServingTest::estimator_;
std::string SequenceServingTest::exported_;

TEST_F(SequenceServingTest, EstimatorTrainsOnChangingLengthsAndRefusesBadOnes) {
  EXPECT_EQ(estimator_->get_variable_value("global_step").values<int64_t>(),
            std::vector<int64_t>{8});
  EXPECT_EQ(errorOf([] {
              SequenceServingTest::estimator_->train(
                  oneBatch(paddedBatch(2, 5, 1, /*weightsLength=*/4)),
                  {.steps = 1});
            }),
            "Estimator.train: inputs 'features/tokens' and 'features/weights' "
            "have sequence lengths 5 and 4 (the sequence inputs of one call "
            "must have the same length)");
  EXPECT_EQ(errorOf([] {
              SequenceServingTest::estimator_->train(
                  oneBatch(paddedBatch(1, 70, 1)), {.steps = 1});
            }),
            "Estimator.train: input 'features/tokens': sequence length 70 "
            "exceeds the maximum 64 the model declares");
  EXPECT_EQ(estimator_->get_variable_value("global_step").values<int64_t>(),
            std::vector<int64_t>{8});
}

TEST_F(SequenceServingTest, SavedModelAnswersTwoLengthsAsPredictDoes) {
  auto model = serving::SavedModel::load(exported_);
  const serving::SignatureDef &sig = model->signature("serving_default");
  EXPECT_EQ(sig.inputs.at("tokens").shape,
            (std::vector<int64_t>{-1, -1, sequence_model::kFeatures}));
  EXPECT_EQ(sig.outputs.at("steps").shape,
            (std::vector<int64_t>{-1, -1, sequence_model::kUnits}));
  for (int64_t length : {3, 11}) {
    SCOPED_TRACE("length " + std::to_string(length));
    Batch b = paddedBatch(2, length, 7);
    serving::TensorMap out =
        model->run("serving_default", {{"tokens", b.features.at("tokens")},
                                       {"weights", b.features.at("weights")}});
    std::vector<Prediction> expected;
    b.labels.reset();
    for (const Prediction &p :
         estimator_->predict(oneBatch(b), {.yield_single_examples = false}))
      expected.push_back(p);
    ASSERT_EQ(expected.size(), 1u);
    EXPECT_EQ(out.at("steps").shape,
              (std::vector<int64_t>{2, length, sequence_model::kUnits}));
    EXPECT_EQ(out.at("steps").data, expected[0].at("steps").data);
    EXPECT_EQ(out.at("logits").data, expected[0].at("logits").data);
  }
  Batch bad = paddedBatch(2, 5, 3, /*weightsLength=*/6);
  EXPECT_EQ(errorOf([&] {
              model->run("serving_default",
                         {{"tokens", bad.features.at("tokens")},
                          {"weights", bad.features.at("weights")}});
            }),
            "inputs 'features/tokens' and 'features/weights' have sequence "
            "lengths 5 and 6 (the sequence inputs of one call must have the "
            "same length)");
}

/// A predict request of `batch` instances of `length` steps (weights of
/// `weightsLength`).
std::string predictBody(int64_t batch, int64_t length, int64_t weightsLength) {
  std::string body = "{\"instances\": [";
  for (int64_t b = 0; b < batch; ++b) {
    body += b ? ", {" : "{";
    body += "\"tokens\": [";
    for (int64_t t = 0; t < length; ++t)
      body += std::string(t ? ", " : "") + "[0.5, -0.25, 0.125, 1]";
    body += "], \"weights\": [";
    for (int64_t t = 0; t < weightsLength; ++t)
      body += std::string(t ? ", " : "") + "1";
    body += "]}";
  }
  return body + "]}";
}

TEST_F(SequenceServingTest, EstcServeAnswersEachRequestAtItsLength) {
  serving::ModelConfig config;
  config.name = "seq";
  config.base_path = (root_ / "export").string();
  serving::ModelManager models({config}, serving::saved_model_loader(),
                               [](const std::string &) {});
  models.poll();
  serving::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.num_threads = 4;
  serving::Server server(options, models);
  int port = server.bind();
  std::thread thread([&] { server.run(); });
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  auto post = [&](const std::string &body) {
    return client.Post("/v1/models/seq:predict", body, "application/json");
  };
  for (int64_t length : {2, 9}) {
    SCOPED_TRACE("length " + std::to_string(length));
    auto res = post(predictBody(3, length, length));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    rapidjson::Document doc;
    doc.Parse(res->body.c_str());
    ASSERT_TRUE(doc.IsObject() && doc.HasMember("predictions")) << res->body;
    const rapidjson::Value &predictions = doc["predictions"];
    ASSERT_EQ(predictions.Size(), 3u);
    EXPECT_EQ(predictions[0]["steps"].Size(), static_cast<unsigned>(length));
    EXPECT_EQ(predictions[0]["logits"].Size(), 3u);
  }
  auto mismatched = post(predictBody(1, 4, 3));
  ASSERT_TRUE(mismatched);
  EXPECT_EQ(mismatched->status, 400);
  EXPECT_NE(mismatched->body.find("inputs 'features/tokens' and "
                                  "'features/weights' have sequence lengths "
                                  "4 and 3"),
            std::string::npos)
      << mismatched->body;
  auto tooLong = post(predictBody(1, 65, 65));
  ASSERT_TRUE(tooLong);
  EXPECT_EQ(tooLong->status, 400);
  EXPECT_NE(tooLong->body.find("input 'features/tokens': sequence length 65 "
                               "exceeds the maximum 64 the model declares"),
            std::string::npos)
      << tooLong->body;
  server.stop();
  thread.join();
}

} // namespace
} // namespace estimator
} // namespace estc
