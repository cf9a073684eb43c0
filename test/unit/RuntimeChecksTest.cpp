//===- RuntimeChecksTest.cpp - Labels and ids checked inside compiled steps
//===//
//
// A label outside [0, classes) or an id outside an embedding table stops the
// compiled step before any variable update (est-insert-runtime-checks,
// est-lower-runtime-checks), with one line naming the node, the value and
// its position; compiled without checks, the same step runs (ids clamped).
// Through the Estimator, the failed step leaves model_dir as it was.
//
//===----------------------------------------------------------------------===//

#include "ModelTesting.h"
#include "TinyClassifier.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Models/Models.h"
#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace estc {
namespace {

namespace fs = std::filesystem;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new estimator::tiny::JitCacheEnvironment("estc-runtime-checks-cache-"));

/// Every variable's bytes.
std::vector<std::string> variables(rt::CompiledModel &model) {
  std::vector<std::string> out;
  for (int i = 0; i < model.spec().numVariables; ++i)
    out.emplace_back(static_cast<const char *>(model.variable_data(i)),
                     model.variable_bytes(i));
  return out;
}

template <typename T>
void setInput(rt::CompiledModel &model, const std::string &function,
              const std::string &key, const std::vector<T> &values) {
  int f = model.function_index(function);
  std::memcpy(model.input_data(f, model.input_index(f, key)), values.data(),
              values.size() * sizeof(T));
}

/// The message `model.run(function)` throws as rt::InvalidArgumentError.
std::string checkFailure(rt::CompiledModel &model,
                         const std::string &function) {
  try {
    model.run(function);
  } catch (const rt::InvalidArgumentError &e) {
    return e.what();
  }
  return "(no error)";
}

/// The seed MLP with 3 classes and one small hidden layer.
graph::GraphDef threeClassMlp() {
  models::MlpParams params;
  params.hidden_units = {8};
  params.n_classes = 3;
  params.learning_rate = 0.1;
  return models::build_mlp(7, params);
}

std::unique_ptr<JitModel> compile(const graph::GraphDef &graph,
                                  bool runtimeChecks = true) {
  JitOptions options;
  options.runtimeChecks = runtimeChecks;
  return testing::jitCompileForTest(graph, "Checked", options);
}

TEST(RuntimeChecksTest, LabelOutOfRangeStopsTheStepBeforeAnyUpdate) {
  std::unique_ptr<JitModel> model = compile(threeClassMlp());
  ASSERT_TRUE(model);
  model->run("init");
  model->set_batch(4);
  setInput(*model, "train", "features/x", std::vector<float>(4 * 784, 0.25f));
  setInput<int64_t>(*model, "train", "labels", {0, 1, 2, 0});
  model->run("train");
  std::vector<std::string> before = variables(*model);

  setInput<int64_t>(*model, "train", "labels", {0, 3, 1, 2});
  EXPECT_EQ(checkFailure(*model, "train"),
            "node 'train/sparse_softmax_cross_entropy_loss/"
            "SparseSoftmaxCrossEntropy' : label 3 at batch row 1 is outside "
            "[0, 3)");
  EXPECT_EQ(variables(*model), before) << "the failed step updated variables";

  // The first offending row is reported; negative labels too.
  setInput<int64_t>(*model, "train", "labels", {0, 1, -1, 7});
  EXPECT_EQ(checkFailure(*model, "train"),
            "node 'train/sparse_softmax_cross_entropy_loss/"
            "SparseSoftmaxCrossEntropy' : label -1 at batch row 2 is outside "
            "[0, 3)");
  EXPECT_EQ(variables(*model), before);

  // @eval checks its labels as well, before updating the metrics' state.
  setInput(*model, "eval", "features/x", std::vector<float>(4 * 784, 0.5f));
  setInput<int64_t>(*model, "eval", "labels", {5, 0, 0, 0});
  EXPECT_EQ(checkFailure(*model, "eval"),
            "node 'eval/sparse_softmax_cross_entropy_loss/"
            "SparseSoftmaxCrossEntropy' : label 5 at batch row 0 is outside "
            "[0, 3)");
  EXPECT_EQ(variables(*model), before);

  // A good step after a failed one runs and trains.
  setInput<int64_t>(*model, "train", "labels", {2, 1, 0, 1});
  model->run("train");
  EXPECT_NE(variables(*model), before);
}

/// ids [B] -> a [10, 4] embedding table -> 3 classes.
Signature embeddingModel(Graph &g, const TensorMap &features,
                         const Tensor &labels, ModeKeys mode) {
  Variable table = g.get_variable("embedding", DType::Float32, {10, 4});
  Tensor embedded = gather(table.read(), features["ids"]);
  return models::multi_class_head(layers::dense(embedded, 3), labels, mode,
                                  0.1);
}

graph::GraphDef embeddingGraph() {
  return build_graph_def(InputSpec{{{"ids", DType::Int64, {-1}}},
                                   TensorSpec{"labels", DType::Int64, {-1}}},
                         embeddingModel, 3);
}

TEST(RuntimeChecksTest, EmbeddingIdOutOfRangeIsAnError) {
  std::unique_ptr<JitModel> model = compile(embeddingGraph());
  ASSERT_TRUE(model);
  model->run("init");
  model->set_batch(4);
  setInput<int64_t>(*model, "train", "labels", {0, 1, 2, 0});
  setInput<int64_t>(*model, "train", "features/ids", {1, 9, 0, 4});
  model->run("train");
  std::vector<std::string> before = variables(*model);

  setInput<int64_t>(*model, "train", "features/ids", {1, 2, 10, 4});
  std::string error = checkFailure(*model, "train");
  EXPECT_NE(error.find("' : id 10 at batch row 2 is outside [0, 10)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.rfind("node 'train/", 0), 0u) << error;
  EXPECT_EQ(variables(*model), before);

  setInput<int64_t>(*model, "predict", "features/ids", {-3, 0, 0, 0});
  error = checkFailure(*model, "predict");
  EXPECT_NE(error.find("' : id -3 at batch row 0 is outside [0, 10)"),
            std::string::npos)
      << error;
}

TEST(RuntimeChecksTest, WithoutChecksTheStepRunsAndIdsAreClamped) {
  std::unique_ptr<JitModel> model = compile(embeddingGraph(), false);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->spec().numChecks, 0);
  for (int f = 0; f < model->spec().numFunctions; ++f)
    EXPECT_FALSE(model->spec().functions[f].hasChecks);
  model->run("init");
  model->set_batch(2);
  // Id 10 reads row 9 and id -1 row 0, as before run-time checks.
  setInput<int64_t>(*model, "predict", "features/ids", {10, -1});
  model->run("predict");
  int p = model->function_index("predict");
  const float *probs = static_cast<const float *>(model->output_data(
      p, model->output_index(p, "predictions/probabilities")));
  setInput<int64_t>(*model, "predict", "features/ids", {9, 0});
  std::vector<float> clamped(probs, probs + 6);
  model->run("predict");
  EXPECT_EQ(std::vector<float>(probs, probs + 6), clamped);
}

TEST(RuntimeChecksTest, MessagesNameThePositionInTheTensor) {
  int64_t batchShape[] = {rt::kBatchDim, 3};
  rt::CheckSpec check{"lookup", "id", 0, 100, 2, batchShape};
  EXPECT_EQ(rt::checkFailureMessage(check, 7, 100, 4),
            "node 'lookup' : id 100 at batch row 2, index [2, 1] is outside "
            "[0, 100)");
  int64_t staticShape[] = {5};
  rt::CheckSpec fixed{"", "label", 0, 2, 1, staticShape};
  EXPECT_EQ(rt::checkFailureMessage(fixed, 4, 2, 0),
            "node '<unnamed>' : label 2 at index 4 is outside [0, 2)");
}

/// Every file under `dir` but the event files, with its bytes.
std::map<std::string, std::string> filesOf(const fs::path &dir) {
  std::map<std::string, std::string> files;
  for (const auto &entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() ||
        entry.path().filename().string().rfind("events.", 0) == 0)
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    files[fs::relative(entry.path(), dir).string()] = bytes.str();
  }
  return files;
}

/// Snapshots model_dir before the step after `step`.
class SnapshotHook : public estimator::SessionRunHook {
public:
  SnapshotHook(fs::path dir, int64_t step,
               std::map<std::string, std::string> *out)
      : dir_(std::move(dir)), step_(step), out_(out) {}
  estimator::SessionRunArgs
  before_run(estimator::SessionRunContext &context) override {
    if (context.session().global_step() == step_)
      *out_ = filesOf(dir_);
    return {};
  }

private:
  fs::path dir_;
  int64_t step_;
  std::map<std::string, std::string> *out_;
};

TEST(RuntimeChecksTest, EstimatorTrainingStopsOnTheFirstBadBatch) {
  using namespace estimator;
  fs::path dir = fs::temp_directory_path() /
                 ("estc-runtime-checks-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunConfigOptions o;
  o.model_dir = dir.string();
  o.tf_random_seed = 42;
  o.save_checkpoints_steps = 1;
  Estimator est(tiny::classifier_fn, RunConfig::from_tf_config("", o),
                Params{{"hidden", 8}});
  tiny::Data d = tiny::makeData(12, 1);
  std::vector<int64_t> labels = d.y.values<int64_t>();
  labels[9] = 3; // row 1 of the third batch of 4
  TensorValue bad = TensorValue::of<int64_t>({12}, labels);
  std::map<std::string, std::string> beforeFailedStep;
  auto hook = std::make_shared<SnapshotHook>(dir, 2, &beforeFailedStep);
  try {
    est.train(numpy_input_fn(d.x, bad, {4, 1, false, 0}),
              {.hooks = {hook}, .steps = 10});
    FAIL() << "no error";
  } catch (const rt::InvalidArgumentError &e) {
    EXPECT_STREQ(e.what(), "node 'train/sparse_softmax_cross_entropy_loss/"
                           "SparseSoftmaxCrossEntropy' : label 3 at batch "
                           "row 1 is outside [0, 3)");
  }
  ASSERT_FALSE(beforeFailedStep.empty());
  EXPECT_EQ(filesOf(dir), beforeFailedStep)
      << "the failed step wrote to model_dir";
  auto state = train::get_checkpoint_state(est.model_dir());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->model_checkpoint_path, "model.ckpt-2");
  fs::remove_all(dir);
}

} // namespace
} // namespace estc
