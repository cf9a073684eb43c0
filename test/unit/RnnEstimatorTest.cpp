//===- RnnEstimatorTest.cpp - RNNClassifier / RNNEstimator's model -------===//
//
// rnn_model's graph (no LLVM): TF 2.15's variable names and shapes (those
// of tf.estimator.experimental.RNNClassifier's checkpoints for the same
// columns), and every argument error as one line. Training against TF's
// is test/e2e/tf_rnn_estimator_compat.py.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Rnn.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <map>

using namespace estc;
using namespace estc::estimator;
namespace fc = estc::feature_column;
using estc::testing::messageOf;

namespace {

FeatureColumns sequenceColumns() {
  return {fc::embedding_column(
              fc::sequence_categorical_column_with_identity("tok", 7), 3),
          fc::sequence_numeric_column("x")};
}

/// The trainable variables of the model's graph and their shapes.
std::map<std::string, Dims> variables(const CannedModel &model) {
  std::map<std::string, Dims> out;
  graph::GraphDef def = model.graph_def();
  for (const graph::VariableDef &v : def.variable()) {
    if (!v.trainable())
      continue;
    Dims shape;
    for (const auto &d : v.shape().dim())
      shape.push_back(d);
    out[v.name()] = shape;
  }
  return out;
}

RNNOptions options(std::vector<int64_t> units, std::string cell) {
  RNNOptions o;
  o.context_feature_columns = {fc::numeric_column("age")};
  o.units = std::move(units);
  o.cell_type = std::move(cell);
  return o;
}

} // namespace

TEST(RnnEstimatorTest, VariablesAsTf) {
  // TF 2.15: RNNClassifier(units=[4], cell_type='lstm', n_classes=3) over
  // these columns, tf.train.list_variables of its checkpoint.
  auto one = variables(rnn_model(classifier_head(3, "", {}, {}),
                                 sequenceColumns(), options({4}, "lstm")));
  EXPECT_EQ(
      one, (std::map<std::string, Dims>{
               {"rnn_model/logits/bias", {3}},
               {"rnn_model/logits/kernel", {4, 3}},
               {"rnn_model/rnn/lstm_cell/bias", {16}},
               {"rnn_model/rnn/lstm_cell/kernel", {5, 16}},
               {"rnn_model/rnn/lstm_cell/recurrent_kernel", {4, 16}},
               {"sequence_features/tok_embedding/embedding_weights", {7, 3}}}));
  // units=[4, 3], cell_type='gru': Keras's StackedRNNCells.
  auto stacked =
      variables(rnn_model(classifier_head(3, "", {}, {}), sequenceColumns(),
                          options({4, 3}, "gru")));
  EXPECT_EQ(
      stacked,
      (std::map<std::string, Dims>{
          {"rnn_model/logits/bias", {3}},
          {"rnn_model/logits/kernel", {3, 3}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell/bias", {2, 12}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell/kernel", {5, 12}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell/recurrent_kernel",
           {4, 12}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell_1/bias", {2, 9}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell_1/kernel", {4, 9}},
          {"rnn_model/rnn/stacked_rnn_cells/gru_cell_1/recurrent_kernel",
           {3, 9}},
          {"sequence_features/tok_embedding/embedding_weights", {7, 3}}}));
  // The binary head's one logit; simple_rnn (TF's default cell).
  auto simple =
      variables(rnn_model(classifier_head(2, "", {}, {}), sequenceColumns(),
                          options({2, 2}, "simple_rnn")));
  EXPECT_EQ(simple.at("rnn_model/logits/kernel"), (Dims{2, 1}));
  EXPECT_EQ(
      simple.at("rnn_model/rnn/stacked_rnn_cells/simple_rnn_cell_1/kernel"),
      (Dims{2, 2}));
  EXPECT_EQ(RNNOptions().cell_type, "simple_rnn");
}

TEST(RnnEstimatorTest, ArgumentErrorsAreOneLine) {
  auto error = [](RNNOptions o, FeatureColumns sequence = sequenceColumns(),
                  std::shared_ptr<const Head> head =
                      classifier_head(2, "", {}, {})) {
    std::string m =
        messageOf<std::invalid_argument>([&] { rnn_model(head, sequence, o); });
    EXPECT_NE(m, "");
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  };
  auto has = [](const std::string &m, const std::string &part) {
    return m.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(error(options({}, "lstm")), "units must be given"));
  EXPECT_TRUE(has(error(options({4, 0}, "lstm")), "units must be positive"));
  EXPECT_TRUE(has(error(options({4}, "cudnn")),
                  "cell_type must be one of 'simple_rnn', 'lstm', 'gru', not "
                  "'cudnn'"));
  EXPECT_TRUE(has(error(options({4}, "lstm"), {}),
                  "sequence_feature_columns must not be empty"));
  EXPECT_TRUE(has(error(options({4}, "lstm"), {fc::numeric_column("age2")}),
                  "sequence feature column 'age2' is not a sequence dense "
                  "column"));
  EXPECT_TRUE(
      has(error(options({4}, "lstm"),
                {fc::sequence_categorical_column_with_identity("t", 3)}),
          "'t' is not a sequence dense column"));
  RNNOptions context = options({4}, "lstm");
  context.context_feature_columns = {fc::sequence_numeric_column("y")};
  EXPECT_TRUE(has(error(context), "context feature column 'y' must be a "
                                  "dense, non-sequence column"));
  RNNOptions optimizer = options({4}, "lstm");
  optimizer.optimizer = "Adadelta";
  EXPECT_TRUE(has(error(optimizer), "optimizer 'Adadelta'"));
  RNNOptions sequences = options({4}, "lstm");
  sequences.return_sequences = true;
  EXPECT_TRUE(
      has(error(sequences), "return_sequences needs a sequential head"));
  EXPECT_TRUE(has(error(options({4}, "lstm"), sequenceColumns(), nullptr),
                  "head is null"));
  EXPECT_TRUE(has(
      messageOf<std::invalid_argument>([] { classifier_head(1, "", {}, {}); }),
      "n_classes must be > 1"));
  RNNOptions twice = options({4}, "lstm");
  twice.context_feature_columns = {fc::numeric_column("x")};
  EXPECT_TRUE(has(error(twice), "duplicate feature column name 'x'"));
}
