//===- FeatureLayersTest.cpp - The graph half of feature columns ----------===//
//
// input_layer, DenseFeatures and linear_model built over the Transformer's
// model inputs and run by the reference evaluator with chosen variable
// values, against values worked out by hand from TF's definitions; the
// variable names TF gives. test/e2e/tf_feature_column_compat.py --layers
// compares the same layers with TF itself.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/FeatureColumn/Transformer.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace estc;
using namespace estc::feature_column;
using estc::testing::messageOf;

namespace {

using LayerFn = std::function<Tensor(const TensorMap &)>;

/// The PREDICT graph of `layer` over the Transformer's inputs.
graph::GraphDef layerGraph(const Transformer &t, const LayerFn &layer) {
  InputSpec spec;
  spec.features = t.input_specs();
  Graph g;
  build_mode(g, ModeKeys::PREDICT, spec,
             [&](Graph &, const TensorMap &features, const Tensor &, ModeKeys) {
               Signature sig;
               sig.predictions.set("out", layer(features));
               return sig;
             });
  return g.graph_def();
}

std::vector<std::string> variableNames(const graph::GraphDef &def) {
  std::vector<std::string> out;
  for (const auto &v : def.variable())
    out.push_back(v.name());
  return out;
}

/// Runs the layer on one batch; variables: `values` by name, the others
/// their initializers'.
reference::Value run(const FeatureColumns &columns, const LayerFn &layer,
                     const std::map<std::string, TensorValue> &features,
                     const std::map<std::string, std::vector<double>> &values) {
  Transformer t(columns);
  reference::Evaluator eval(layerGraph(t, layer));
  eval.initialize_variables();
  for (const auto &[name, v] : values) {
    EXPECT_EQ(eval.variables().count(name), 1u) << name;
    EXPECT_EQ(eval.variables().at(name).data.size(), v.size()) << name;
    eval.variables().at(name).data = v;
  }
  std::map<std::string, reference::Value> feeds;
  for (const auto &[key, tv] : t.transform(features)) {
    std::vector<double> d(static_cast<size_t>(tv.num_elements()));
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = tv.element(static_cast<int64_t>(i));
    feeds[key] = reference::Value(to_proto(tv.dtype), tv.shape, d);
  }
  return eval.run("predict", feeds).at("predictions/out");
}

void expectNear(const reference::Value &got, const std::vector<int64_t> &shape,
                const std::vector<double> &want) {
  EXPECT_EQ(got.shape, shape);
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data[i], want[i], 1e-5) << "element " << i;
}

LayerFn inputLayer(const FeatureColumns &columns) {
  return [columns](const TensorMap &f) { return input_layer(f, columns); };
}

// The batch of most tests: 3 rows.
std::map<std::string, TensorValue> batch() {
  return {{"age", TensorValue::of<float>({3}, {10, 30, 70})},
          {"sex", TensorValue::of_strings({3, 1}, {"f", "m", "q"})},
          {"ids", TensorValue::of<int64_t>({3, 2}, {0, 2, 1, -1, -1, -1})},
          {"wt", TensorValue::of<float>({3, 2}, {2, 0.5, 3, 0, 0, 0})}};
}

} // namespace

TEST(FeatureLayersTest, InputLayerDenseColumnsInNameOrder) {
  auto age = numeric_column("age", {1}, {}, DType::Float32,
                            [](const Tensor &x) { return x / 10.0; });
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  // Sorted: age (normalized), age_bucketized (one-hot of the normalized
  // value), sex_indicator.
  FeatureColumns cols = {indicator_column(sex),
                         bucketized_column(age, {2.5, 5}), age};
  reference::Value out = run(cols, inputLayer(cols), batch(), {});
  expectNear(out, {3, 6},
             {1, 1, 0, 0, 0, 1,   // 1: bucket 0; f
              3, 0, 1, 0, 1, 0,   // 3: bucket 1; m
              7, 0, 0, 1, 0, 0}); // 7: bucket 2; q is OOV
}

TEST(FeatureLayersTest, EmbeddingCombinersAndWeights) {
  auto ids = categorical_column_with_identity("ids", 3);
  std::vector<double> table = {1, 10, 2, 20, 4, 40}; // rows 0, 1, 2
  for (const char *combiner : {"sum", "mean", "sqrtn"}) {
    FeatureColumns cols = {embedding_column(ids, 2, combiner)};
    reference::Value out =
        run(cols, inputLayer(cols), batch(),
            {{"input_layer/ids_embedding/embedding_weights", table}});
    std::string c = combiner;
    // Row 0: ids 0, 2; row 1: id 1; row 2: none (zeros).
    double d0 = c == "sum" ? 1 : c == "mean" ? 2 : std::sqrt(2.0);
    expectNear(out, {3, 2}, {5 / d0, 50 / d0, 2, 20, 0, 0});
  }
  // Weighted: sum(w e) / sum(w) for mean.
  FeatureColumns cols = {
      embedding_column(weighted_categorical_column(ids, "wt"), 2)};
  reference::Value out = run(
      cols, inputLayer(cols), batch(),
      {{"input_layer/ids_weighted_by_wt_embedding/embedding_weights", table}});
  expectNear(out, {3, 2},
             {(2 * 1 + 0.5 * 4) / 2.5, (2 * 10 + 0.5 * 40) / 2.5, 2, 20, 0, 0});
  // Indicator of a weighted column: summed weights.
  cols = {indicator_column(weighted_categorical_column(ids, "wt"))};
  expectNear(run(cols, inputLayer(cols), batch(), {}), {3, 3},
             {2, 0, 0.5, 0, 3, 0, 0, 0, 0});
}

TEST(FeatureLayersTest, BucketizedEmbeddingAndMaxNorm) {
  auto two = numeric_column("two", {2});
  auto b = bucketized_column(two, {0});
  std::map<std::string, TensorValue> f = {
      {"two", TensorValue::of<float>({2, 2}, {-1, 1, 1, 1})}};
  // Ids: element 0's bucket, element 1's bucket + 2.
  std::vector<double> table = {3, 0, 0, 4, 6, 8, 0, 1};
  FeatureColumns cols = {embedding_column(b, 2, "mean")};
  expectNear(
      run(cols, inputLayer(cols), f,
          {{"input_layer/two_bucketized_embedding/embedding_weights", table}}),
      {2, 2}, {(3 + 0) / 2.0, (0 + 1) / 2.0, (0 + 0) / 2.0, (4 + 1) / 2.0});
  // max_norm 5: row 2 (6, 8), norm 10, becomes (3, 4).
  cols = {embedding_column(b, 2, "sum", {}, 5.0)};
  f["two"] = TensorValue::of<float>({1, 2}, {-1, -1});
  expectNear(
      run(cols, inputLayer(cols), f,
          {{"input_layer/two_bucketized_embedding/embedding_weights", table}}),
      {1, 2}, {3 + 3, 0 + 4});
  // The same through the sparse path: a crossed-free categorical column.
  auto ids = categorical_column_with_identity("ids", 4);
  cols = {embedding_column(ids, 2, "sum", {}, 5.0)};
  expectNear(run(cols, inputLayer(cols),
                 {{"ids", TensorValue::of<int64_t>({1, 2}, {0, 2})}},
                 {{"input_layer/ids_embedding/embedding_weights", table}}),
             {1, 2}, {3 + 3, 0 + 4});
}

TEST(FeatureLayersTest, SharedEmbeddingsShareOneTable) {
  auto a = categorical_column_with_vocabulary_list("a", {"x", "y"});
  auto b = categorical_column_with_vocabulary_list("b", {"p", "q"});
  auto shared = shared_embedding_columns({b, a}, 1, "sum");
  FeatureColumns cols = {shared[0], shared[1]};
  Transformer t(cols);
  graph::GraphDef def = layerGraph(t, inputLayer(cols));
  EXPECT_EQ(variableNames(def),
            std::vector<std::string>{
                "input_layer/a_b_shared_embedding/embedding_weights"});
  std::map<std::string, TensorValue> f = {
      {"a", TensorValue::of_strings({1}, {"y"})},
      {"b", TensorValue::of_strings({1}, {"p"})}};
  expectNear(
      run(cols, inputLayer(cols), f,
          {{"input_layer/a_b_shared_embedding/embedding_weights", {5, 7}}}),
      {1, 2}, {7, 5}); // a_shared_embedding (y), b_shared_embedding (p)
}

TEST(FeatureLayersTest, VariableNamesAsTf) {
  auto age = numeric_column("age");
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  Transformer t({age, embedding_column(sex, 2)});
  // The canned DNN's scopes.
  graph::GraphDef dnn = layerGraph(t, [&](const TensorMap &f) {
    Graph &g = f.begin()->second.graph();
    Scope s1 = g.name_scope("dnn");
    Scope s2 = g.name_scope("input_from_feature_columns");
    return input_layer(f, {age, embedding_column(sex, 2)});
  });
  EXPECT_EQ(variableNames(dnn),
            std::vector<std::string>{"dnn/input_from_feature_columns/"
                                     "input_layer/sex_embedding/"
                                     "embedding_weights"});
  // Two input layers: input_layer, input_layer_1.
  graph::GraphDef two = layerGraph(t, [&](const TensorMap &f) {
    Tensor a = input_layer(f, {embedding_column(sex, 2)});
    return a + input_layer(f, {embedding_column(sex, 2)});
  });
  EXPECT_EQ(variableNames(two),
            (std::vector<std::string>{
                "input_layer/sex_embedding/embedding_weights",
                "input_layer_1/sex_embedding/embedding_weights"}));
  // DenseFeatures: its name, one set of variables for every call.
  DenseFeatures layer({embedding_column(sex, 2), age}, true, "input_layer");
  graph::GraphDef df =
      layerGraph(t, [&](const TensorMap &f) { return layer(f) + layer(f); });
  EXPECT_EQ(
      variableNames(df),
      std::vector<std::string>{"input_layer/sex_embedding/embedding_weights"});
  // The canned LinearClassifier's: linear/linear_model/<column>/weights.
  graph::GraphDef lin = layerGraph(t, [&](const TensorMap &f) {
    Scope s = f.begin()->second.graph().name_scope("linear");
    return linear_model(f, {sex, age});
  });
  EXPECT_EQ(variableNames(lin),
            (std::vector<std::string>{"linear/linear_model/age/weights",
                                      "linear/linear_model/sex/weights",
                                      "linear/linear_model/bias_weights"}));
  EXPECT_EQ(lin.variable(1).shape().dim_size(), 2); // [2 buckets, 1 unit]
  // trainable=false, and an embedding's own trainable.
  graph::GraphDef frozen = layerGraph(t, [&](const TensorMap &f) {
    Tensor a =
        input_layer(f, {embedding_column(sex, 2, "mean", {}, {}, false)});
    Tensor b = input_layer(f, {embedding_column(sex, 2)}, false);
    return a + b + input_layer(f, {embedding_column(sex, 2)});
  });
  EXPECT_FALSE(frozen.variable(0).trainable());
  EXPECT_FALSE(frozen.variable(1).trainable());
  EXPECT_TRUE(frozen.variable(2).trainable());
}

TEST(FeatureLayersTest, PartitionedTablesAsTf) {
  // TF 1's input_layer_partitioner / LinearClassifier's partitioner: the
  // tables are partitioned variables ("div" parts: ids 0-1, 2), and the
  // layers compute what they do over whole tables.
  auto age = numeric_column("age");
  auto ids = categorical_column_with_identity("ids", 3);
  Partitioner two = fixed_size_partitioner(2);
  FeatureColumns cols = {embedding_column(ids, 2, "sum"), age};
  Transformer t(cols);
  graph::GraphDef dnn = layerGraph(
      t, [&](const TensorMap &f) { return input_layer(f, cols, true, two); });
  EXPECT_EQ(variableNames(dnn),
            (std::vector<std::string>{
                "input_layer/ids_embedding/embedding_weights/part_0",
                "input_layer/ids_embedding/embedding_weights/part_1"}));
  reference::Value out = run(
      cols, [&](const TensorMap &f) { return input_layer(f, cols, true, two); },
      batch(),
      {{"input_layer/ids_embedding/embedding_weights/part_0", {1, 10, 2, 20}},
       {"input_layer/ids_embedding/embedding_weights/part_1", {4, 40}}});
  // Row 0: ids 0, 2 summed; row 1: id 1; row 2: none.
  expectNear(out, {3, 3}, {10, 5, 50, 30, 2, 20, 70, 0, 0});

  FeatureColumns lin = {ids, age};
  graph::GraphDef linear = layerGraph(t, [&](const TensorMap &f) {
    return linear_model(f, lin, 1, "sum", true, two);
  });
  EXPECT_EQ(variableNames(linear),
            (std::vector<std::string>{"linear_model/age/weights/part_0",
                                      "linear_model/ids/weights/part_0",
                                      "linear_model/ids/weights/part_1",
                                      "linear_model/bias_weights/part_0"}));
  out = run(lin,
            [&](const TensorMap &f) {
              return linear_model(f, lin, 1, "sum", true, two);
            },
            batch(),
            {{"linear_model/age/weights/part_0", {0.5}},
             {"linear_model/ids/weights/part_0", {1, 2}},
             {"linear_model/ids/weights/part_1", {4}},
             {"linear_model/bias_weights/part_0", {100}}});
  expectNear(out, {3, 1}, {100 + 5 + 1 + 4, 100 + 15 + 2, 100 + 35});
}

TEST(FeatureLayersTest, LinearModelWeightedSums) {
  auto age = numeric_column("age");
  auto agb = bucketized_column(age, {20, 50});
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto ids = categorical_column_with_identity("ids", 3);
  FeatureColumns cols = {age, agb, sex, weighted_categorical_column(ids, "wt")};
  std::map<std::string, std::vector<double>> w = {
      {"linear_model/age/weights", {0.5, -1}},
      {"linear_model/age_bucketized/weights", {1, 10, 2, 20, 3, 30}},
      {"linear_model/sex/weights", {100, 200, 300, 400}},
      {"linear_model/ids_weighted_by_wt/weights", {1, 0, 0, 1, 5, 5}},
      {"linear_model/bias_weights", {0.25, -0.25}}};
  for (const char *combiner : {"sum", "mean", "sqrtn"}) {
    reference::Value out = run(
        cols,
        [&](const TensorMap &f) { return linear_model(f, cols, 2, combiner); },
        batch(), w);
    std::string c = combiner;
    // ids row 0: ids 0 (w 2), 2 (w 0.5); sum (2 + 2.5, 0 + 2.5).
    double norm = c == "sum" ? 1 : c == "mean" ? 2.5 : std::sqrt(4.25);
    std::vector<double> want = {
        // age 10: bucket 0; f: sex row 1; ids row 0.
        5 + 1 + 300 + 4.5 / norm + 0.25, -10 + 10 + 400 + 2.5 / norm - 0.25,
        // age 30: bucket 1; m; ids row 1: id 1 weight 3.
        15 + 2 + 100 + 0.25, -30 + 20 + 200 + (c == "sum" ? 3 : 1) - 0.25,
        // age 70: bucket 2; q: no id; no ids.
        35 + 3 + 0.25, -70 + 30 - 0.25};
    expectNear(out, {3, 2}, want);
  }
}

namespace {
/// Columns of kinds the library does not know.
struct ForeignDense final : DenseColumn {
  std::string name() const override { return "foreign"; }
  data::FeatureSpecs parse_example_spec() const override { return {}; }
  Dims variable_shape() const override { return {1}; }
};
struct ForeignColumn final : FeatureColumn {
  std::string name() const override { return "alien"; }
  data::FeatureSpecs parse_example_spec() const override { return {}; }
};
} // namespace

TEST(FeatureLayersTest, ForeignColumnsAndInputs) {
  auto age = numeric_column("age");
  Transformer t({age});
  auto foreign = std::make_shared<const ForeignDense>();
  auto alien = std::make_shared<const ForeignColumn>();
  EXPECT_NE(messageOf<std::invalid_argument>([&] {
              layerGraph(t, [&](const TensorMap &f) {
                return input_layer(f, {age, foreign});
              });
            }).find("'foreign'"),
            std::string::npos);
  EXPECT_NE(messageOf<std::invalid_argument>([&] {
              layerGraph(t, [&](const TensorMap &f) {
                return linear_model(f, {age, alien});
              });
            }).find("'alien'"),
            std::string::npos);
  // A numeric input that is not the Transformer's F32.
  InputSpec spec;
  spec.features.push_back({"age", DType::Int64, {-1, 1}});
  Graph g;
  EXPECT_NE(messageOf<GraphError>([&] {
              build_mode(
                  g, ModeKeys::PREDICT, spec,
                  [&](Graph &, const TensorMap &f, const Tensor &, ModeKeys) {
                    Signature sig;
                    sig.predictions.set("out", input_layer(f, {age}));
                    return sig;
                  });
            }).find("f32"),
            std::string::npos);
}

TEST(FeatureLayersTest, Errors) {
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto age = numeric_column("age");
  Transformer t({age, embedding_column(sex, 2)});
  auto build = [&](const LayerFn &fn) { return layerGraph(t, fn); };
  EXPECT_NE(messageOf<std::invalid_argument>([&] {
              build([&](const TensorMap &f) { return input_layer(f, {sex}); });
            }).find("'sex'"),
            std::string::npos);
  EXPECT_THROW(
      build([&](const TensorMap &f) { return linear_model(f, {age}, 0); }),
      std::invalid_argument);
  EXPECT_THROW(build([&](const TensorMap &f) {
                 return linear_model(f, {age}, 1, "max");
               }),
               std::invalid_argument);
  EXPECT_THROW(input_layer(TensorMap(), {age}), std::invalid_argument);
  EXPECT_THROW(DenseFeatures({}), std::invalid_argument);
  // An input the Transformer does not make.
  auto other = categorical_column_with_hash_bucket("occ", 5);
  EXPECT_NE(messageOf<GraphError>([&] {
              build([&](const TensorMap &f) {
                return input_layer(f, {indicator_column(other)});
              });
            }).find("occ/ids"),
            std::string::npos);
  EXPECT_NE(messageOf<GraphError>([&] {
              build([&](const TensorMap &f) {
                return input_layer(f, {numeric_column("height")});
              });
            }).find("'height'"),
            std::string::npos);
}
