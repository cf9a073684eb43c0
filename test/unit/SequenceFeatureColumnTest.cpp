//===- SequenceFeatureColumnTest.cpp - Sequence columns, host and graph ---===//
//
// tf.feature_column.sequence_* and SequenceFeatures: names, parse specs,
// the Transformer's padded ids, values and lengths, the layer's values
// (through the reference evaluator), serialization, and every error as one
// line naming what is at fault. The expected values are TF 2.15's for the
// same features (tf.keras.experimental.SequenceFeatures); the random
// comparison is test/e2e/tf_sequence_feature_column_compat.py.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::feature_column;
using estc::data::DataError;
using estc::testing::messageOf;

namespace {

/// Rows 0 and 2 have ids (row 2 only at step 1), rows 1 and 3 none:
/// dense_shape [4, 5].
data::Element sparseIds() {
  return data::Element(data::SparseTensor::make(
      {0, 0, 0, 1, 0, 2, 2, 1}, TensorValue::of<int64_t>({4}, {1, 2, 3, 0}),
      {4, 5}));
}

data::Element dict(std::map<std::string, data::Element> fields) {
  return data::Element::dict(std::move(fields));
}

std::string oneLine(const std::string &message) {
  EXPECT_NE(message, "");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

reference::Value refValue(const TensorValue &t) {
  std::vector<double> d(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = t.element(static_cast<int64_t>(i));
  return reference::Value(to_proto(t.dtype), t.shape, d);
}

} // namespace

TEST(SequenceFeatureColumnTest, NamesAndSpecsAsTf) {
  auto ids = sequence_categorical_column_with_identity("tok", 5);
  EXPECT_EQ(ids->name(), "tok");
  EXPECT_EQ(ids->num_buckets(), 5);
  EXPECT_EQ(embedding_column(ids, 2)->name(), "tok_embedding");
  EXPECT_EQ(indicator_column(ids)->name(), "tok_indicator");
  auto words = sequence_categorical_column_with_vocabulary_list("w", {"a", "b"},
                                                                {}, -1, 3);
  EXPECT_EQ(words->num_buckets(), 5);
  auto x = sequence_numeric_column("x", {2});
  EXPECT_EQ(x->name(), "x");
  EXPECT_EQ(x->num_elements(), 2);
  data::FeatureSpecs spec = make_parse_example_spec({x, ids});
  ASSERT_TRUE(std::holds_alternative<data::VarLenFeature>(spec.at("x")));
  EXPECT_EQ(std::get<data::VarLenFeature>(spec.at("x")).dtype, DType::Float32);
  EXPECT_EQ(std::get<data::VarLenFeature>(spec.at("tok")).dtype, DType::Int64);
  EXPECT_TRUE(is_sequence_column(*embedding_column(ids, 2)));
  EXPECT_TRUE(is_sequence_column(*x));
  EXPECT_FALSE(is_sequence_column(*numeric_column("x")));
  EXPECT_FALSE(is_sequence_column(
      *embedding_column(categorical_column_with_identity("i", 3), 2)));
}

TEST(SequenceFeatureColumnTest, TransformerPadsIdsAndCountsLengths) {
  auto tok = sequence_categorical_column_with_identity("tok", 5);
  Transformer t({embedding_column(tok, 2)});
  std::vector<TensorSpec> specs = t.input_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].key, "tok/ids");
  EXPECT_EQ(specs[0].shape, (Dims{-1, -1}));
  EXPECT_TRUE(specs[0].sequence_dim);
  EXPECT_EQ(specs[1].key, "tok/sequence_length");
  EXPECT_FALSE(specs[1].sequence_dim);
  EXPECT_EQ(t.sequence_inputs(), (std::set<std::string>{"tok/ids"}));
  ModelInputs in = t.transform(dict({{"tok", sparseIds()}}));
  EXPECT_EQ(in.at("tok/ids").shape, (Dims{4, 5}));
  // TF: a step without an id looks up zeros; lengths [3, 0, 2, 0].
  EXPECT_EQ(in.at("tok/ids").values<int64_t>(),
            (std::vector<int64_t>{1,  2, 3,  -1, -1, -1, -1, -1, -1, -1,
                                  -1, 0, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(in.at("tok/sequence_length").values<int64_t>(),
            (std::vector<int64_t>{3, 0, 2, 0}));

  // Dense input: TF's missing values (-1, "") are dropped, the length is
  // the last step with a value plus one.
  ModelInputs dense = t.transform(
      dict({{"tok", TensorValue::of<int64_t>({2, 3}, {1, 2, -1, -1, 3, -1})}}));
  EXPECT_EQ(dense.at("tok/ids").values<int64_t>(),
            (std::vector<int64_t>{1, 2, -1, -1, 3, -1}));
  EXPECT_EQ(dense.at("tok/sequence_length").values<int64_t>(),
            (std::vector<int64_t>{2, 2}));
}

TEST(SequenceFeatureColumnTest, NumericValuesPerStep) {
  // TF: sequence_numeric_column("x", shape=(2,), default_value=-1.) of a
  // SparseTensor [3, 6]: steps of two values, lengths ceil(n / 2).
  auto x = sequence_numeric_column("x", {2}, -1.0);
  Transformer t({x});
  ModelInputs in = t.transform(dict(
      {{"x",
        data::Element(data::SparseTensor::make(
            {0, 0, 0, 1, 0, 2, 0, 3, 1, 0, 1, 1, 1, 2},
            TensorValue::of<float>({7}, {0, 1, 2, 3, 4, 5, 6}), {3, 6}))}}));
  EXPECT_EQ(in.at("x").shape, (Dims{3, 3, 2}));
  EXPECT_EQ(in.at("x").values<float>(),
            (std::vector<float>{0, 1, 2, 3, -1, -1, 4, 5, 6, -1, -1, -1, -1, -1,
                                -1, -1, -1, -1}));
  EXPECT_EQ(in.at("x/sequence_length").values<int64_t>(),
            (std::vector<int64_t>{2, 2, 0}));
  EXPECT_FALSE(in.contains("x/mask"));
}

TEST(SequenceFeatureColumnTest, SequenceFeaturesAsTf) {
  // TF 2.15, the features of sparseIds() and the table arange(10) [5, 2]:
  // SequenceFeatures([embedding(tok, 2), indicator(tok)]) gives the
  // embedding then the indicator at every step; a normalizer_fn applies to
  // the given values only.
  auto tok = sequence_categorical_column_with_identity("tok", 5);
  auto x = sequence_numeric_column("x", {1}, -1.0, DType::Float32,
                                   [](const Tensor &v) { return v * 10.0; });
  FeatureColumns cols = {indicator_column(tok), embedding_column(tok, 2), x};
  Transformer t(cols);
  ModelInputs in = t.transform(dict(
      {{"tok", sparseIds()},
       {"x", data::Element(data::SparseTensor::make(
                 {0, 0, 0, 1, 0, 2, 2, 0, 2, 1},
                 TensorValue::of<float>({5}, {1, 2, 3, 4, 5}), {4, 5}))}}));
  EXPECT_TRUE(in.contains("x/mask"));
  InputSpec spec;
  spec.features = t.input_specs();
  Graph g;
  build_mode(g, ModeKeys::PREDICT, spec,
             [&](Graph &, const TensorMap &features, const Tensor &, ModeKeys) {
               SequenceInput s = SequenceFeatures(cols)(features);
               Signature sig;
               sig.predictions.set("input", s.input);
               sig.predictions.set("length", s.sequence_length);
               return sig;
             });
  reference::Evaluator eval(g.graph_def());
  eval.initialize_variables();
  reference::Value &table =
      eval.variables().at("sequence_features/tok_embedding/embedding_weights");
  for (size_t i = 0; i < table.data.size(); ++i)
    table.data[i] = static_cast<double>(i);
  std::map<std::string, reference::Value> feeds;
  for (const auto &[key, v] : in)
    feeds[key] = refValue(v);
  auto out = eval.run("predict", feeds);
  const reference::Value &input = out.at("predictions/input");
  ASSERT_EQ(input.shape, (Dims{4, 5, 8}));
  // Row 0, steps 0..2: embedding rows 1, 2, 3, one-hot ids, x * 10.
  std::vector<double> row0 = {2, 3, 0, 1, 0, 0, 0, 10, //
                              4, 5, 0, 0, 1, 0, 0, 20, //
                              6, 7, 0, 0, 0, 1, 0, 30};
  EXPECT_EQ(std::vector<double>(input.data.begin(), input.data.begin() + 24),
            row0);
  // Row 0, step 3: padding; x keeps its default_value un-normalized.
  EXPECT_EQ(
      std::vector<double>(input.data.begin() + 24, input.data.begin() + 32),
      (std::vector<double>{0, 0, 0, 0, 0, 0, 0, -1}));
  EXPECT_EQ(out.at("predictions/length").data,
            (std::vector<double>{3, 0, 2, 0}));
}

TEST(SequenceFeatureColumnTest, ArgumentErrorsAreOneLine) {
  auto msg = [](auto fn) {
    return oneLine(messageOf<std::invalid_argument>(fn));
  };
  EXPECT_TRUE(contains(msg([] { sequence_numeric_column(""); }), "key"));
  EXPECT_TRUE(contains(msg([] { sequence_numeric_column("x", {0}); }), "'x'"));
  EXPECT_TRUE(
      contains(msg([] { sequence_numeric_column("x", {1}, 0, DType::String); }),
               "dtype"));
  EXPECT_TRUE(
      contains(msg([] { sequence_categorical_column_with_identity("i", 0); }),
               "categorical_column_with_identity 'i'"));
  EXPECT_TRUE(contains(
      msg([] { sequence_categorical_column_with_hash_bucket("h", 0); }),
      "'h'"));
  EXPECT_TRUE(contains(msg([] {
                         std::make_shared<const SequenceCategoricalColumn>(
                             crossed_column({"a", "b"}, 10));
                       }),
                       "'a_X_b'"));
  auto tok = sequence_categorical_column_with_identity("tok", 5);
  // Sequence columns go to SequenceFeatures, the others not.
  EXPECT_TRUE(contains(msg([&] { SequenceFeatures({numeric_column("age")}); }),
                       "'age' is not a sequence"));
  EXPECT_TRUE(contains(msg([&] { SequenceFeatures({tok}); }), "'tok'"));
  Graph g;
  TensorMap features;
  features.set("tok/ids", g.placeholder("tok/ids", DType::Int64, {-1, -1},
                                        {.sequence_dim = true}));
  EXPECT_TRUE(
      contains(msg([&] { input_layer(features, {embedding_column(tok, 2)}); }),
               "'tok_embedding' is a sequence column; use SequenceFeatures"));
  EXPECT_TRUE(contains(msg([&] { linear_model(features, {tok}); }),
                       "'tok' is a sequence column"));
  // A sequence and a non-sequence column of one name.
  EXPECT_TRUE(contains(msg([&] {
                         Transformer({sequence_numeric_column("x"),
                                      numeric_column("x")});
                       }),
                       "'x'"));
}

TEST(SequenceFeatureColumnTest, DataErrorsAreOneLine) {
  auto msg = [](auto fn) { return oneLine(messageOf<DataError>(fn)); };
  auto tok = sequence_categorical_column_with_identity("tok", 3);
  Transformer ids({indicator_column(tok)});
  EXPECT_TRUE(
      contains(msg([&] { ids.transform(dict({{"tok", sparseIds()}})); }),
               "sequence_categorical_column_with_identity 'tok': id 3 "
               "at batch row 0 is outside [0, 3) (no default_value)"));
  EXPECT_TRUE(contains(
      msg([&] {
        ids.transform(
            dict({{"tok", TensorValue::of<int64_t>({1, 2, 2}, {0, 1, 2, 0})}}));
      }),
      "2 ids per step"));
  auto x = sequence_numeric_column("x", {2});
  Transformer values({x});
  EXPECT_TRUE(contains(
      msg([&] {
        values.transform(dict({{"x", TensorValue::of<float>({1, 2}, {1, 2})}}));
      }),
      "feature 'x' is a dense tensor; a sequence_numeric_column takes a "
      "SparseTensor"));
  EXPECT_TRUE(contains(
      msg([&] {
        values.transform(dict(
            {{"x", data::Element(data::SparseTensor::make(
                       {0, 0}, TensorValue::of<float>({1}, {1}), {1, 3}))}}));
      }),
      "does not hold whole steps of 2 values"));
  // TF's SequenceFeatures asserts the columns' lengths are equal.
  Transformer both({indicator_column(tok), sequence_numeric_column("y")});
  EXPECT_EQ(
      msg([&] {
        both.transform(dict(
            {{"tok", TensorValue::of<int64_t>({2, 2}, {0, 1, 2, -1})},
             {"y", data::Element(data::SparseTensor::make(
                       {0, 0, 0, 1, 1, 0, 1, 1},
                       TensorValue::of<float>({4}, {1, 2, 3, 4}), {2, 2}))}}));
      }),
      "sequence feature columns: 'tok' and 'y' have different sequence "
      "lengths at batch row 1 (1 and 2); the sequence columns of a model "
      "must have equal lengths");
}

TEST(SequenceFeatureColumnTest, JsonRoundTripKeepsTheInputs) {
  auto words = sequence_categorical_column_with_vocabulary_list("w", {"a", "b"},
                                                                {}, -1, 2);
  auto x = sequence_numeric_column("x", {1}, 0.5, DType::Float32,
                                   [](const Tensor &v) { return v * 2.0; });
  FeatureColumns cols = {embedding_column(words, 3), x};
  FeatureColumns back = feature_columns_from_json(
      feature_columns_to_json(cols, nullptr), nullptr);
  data::Element features =
      dict({{"w", TensorValue::of_strings({2, 2}, {"a", "zz", "b", ""})},
            {"x", data::Element(data::SparseTensor::make(
                      {0, 0, 0, 1, 1, 0},
                      TensorValue::of<float>({3}, {1, 2, 3}), {2, 2}))}});
  ModelInputs a = Transformer(cols).transform(features);
  ModelInputs b = Transformer(back).transform(features);
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[key, t] : a) {
    ASSERT_TRUE(b.contains(key)) << key;
    EXPECT_EQ(t.shape, b.at(key).shape) << key;
    EXPECT_EQ(t.data, b.at(key).data) << key;
  }
  EXPECT_TRUE(a.contains("x/mask"));
}
