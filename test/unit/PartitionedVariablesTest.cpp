//===- PartitionedVariablesTest.cpp - TF's partitioned variables --------===//
//
// The partitioners and the parts' names and shapes against the numbers TF
// 2.15 gives (tf.compat.v1.get_variable(..., partitioner=p) in graph mode;
// the comments quote them), embedding_lookup over the parts with "mod" and
// "div" (the reference evaluator and the JIT against TF's values), training
// through a lookup (only the rows looked up move), the errors, and the
// parts in TF checkpoints (slices of the full name, restored from it).
//
//===----------------------------------------------------------------------===//
#include "lib/Graph/PartitionedVariables.h"
#include "lib/Checkpoint/Partitions.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/FileTesting.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

std::vector<int64_t> partsOf(const Partitioner &p, const Dims &shape,
                             DType dtype = DType::Float32) {
  return p(shape, dtype);
}

// TF 2.15: p(shape=..., dtype=...) for each case.
TEST(PartitionedVariables, PartitionCountsMatchTf) {
  // fixed_size_partitioner(3), [10, 4] -> [3, 1]
  EXPECT_EQ(partsOf(fixed_size_partitioner(3), {10, 4}),
            (std::vector<int64_t>{3, 1}));
  // fixed_size_partitioner(4, axis=1), [3, 10] -> [1, 4]
  EXPECT_EQ(partsOf(fixed_size_partitioner(4, 1), {3, 10}),
            (std::vector<int64_t>{1, 4}));
  // fixed_size_partitioner(20), [7, 2] -> [7, 1]
  EXPECT_EQ(partsOf(fixed_size_partitioner(20), {7, 2}),
            (std::vector<int64_t>{7, 1}));
  // min_max_variable_partitioner(max_partitions=8, min_slice_size=1000),
  // [100, 10] f32 -> [4, 1]
  EXPECT_EQ(partsOf(min_max_variable_partitioner(8, 0, 1000), {100, 10}),
            (std::vector<int64_t>{4, 1}));
  // min_max_variable_partitioner(max_partitions=4), [1000, 100] -> [2, 1]
  EXPECT_EQ(partsOf(min_max_variable_partitioner(4), {1000, 100}),
            (std::vector<int64_t>{2, 1}));
  // min_max_variable_partitioner(5, min_slice_size=300), [20, 3] string
  // -> [4, 1]
  EXPECT_EQ(
      partsOf(min_max_variable_partitioner(5, 0, 300), {20, 3}, DType::String),
      (std::vector<int64_t>{4, 1}));
  // variable_axis_size_partitioner(max_shard_bytes=1000), [100, 10] f32
  // -> [4, 1]
  EXPECT_EQ(partsOf(variable_axis_size_partitioner(1000), {100, 10}),
            (std::vector<int64_t>{4, 1}));
  // ... max_shards=3 -> [3, 1]
  EXPECT_EQ(partsOf(variable_axis_size_partitioner(1000, 0, 16, 3), {100, 10}),
            (std::vector<int64_t>{3, 1}));
  // variable_axis_size_partitioner(10), [6, 4] f64 -> [6, 1]
  EXPECT_EQ(partsOf(variable_axis_size_partitioner(10), {6, 4}, DType::Float64),
            (std::vector<int64_t>{6, 1}));
  // variable_axis_size_partitioner(64, axis=1), [4, 9] i64 -> [1, 5]
  EXPECT_EQ(
      partsOf(variable_axis_size_partitioner(64, 1), {4, 9}, DType::Int64),
      (std::vector<int64_t>{1, 5}));
}

/// The names and shapes of a partitioned variable's parts.
std::vector<std::pair<std::string, Dims>>
partShapes(const std::string &name, const Dims &shape, const Partitioner &p,
           DType dtype = DType::Float32) {
  Graph graph;
  auto m = graph.mode_scope(ModeKeys::TRAIN);
  PartitionedVariable v =
      get_variable(graph, name, dtype, shape, p, zeros_initializer());
  std::vector<std::pair<std::string, Dims>> out;
  for (const Variable &part : v.parts())
    out.emplace_back(part.name(), part.shape());
  return out;
}

TEST(PartitionedVariables, PartNamesAndShapesMatchTf) {
  using Parts = std::vector<std::pair<std::string, Dims>>;
  // fixed3/part_0 [4, 4], part_1 [3, 4], part_2 [3, 4]
  EXPECT_EQ(partShapes("fixed3", {10, 4}, fixed_size_partitioner(3)),
            (Parts{{"fixed3/part_0", {4, 4}},
                   {"fixed3/part_1", {3, 4}},
                   {"fixed3/part_2", {3, 4}}}));
  // fixed4_axis1: [3, 3], [3, 3], [3, 2], [3, 2]
  EXPECT_EQ(partShapes("f", {3, 10}, fixed_size_partitioner(4, 1)),
            (Parts{{"f/part_0", {3, 3}},
                   {"f/part_1", {3, 3}},
                   {"f/part_2", {3, 2}},
                   {"f/part_3", {3, 2}}}));
  // axis_size_max: [34, 10], [33, 10], [33, 10]
  EXPECT_EQ(partShapes("a", {100, 10},
                       variable_axis_size_partitioner(1000, 0, 16, 3)),
            (Parts{{"a/part_0", {34, 10}},
                   {"a/part_1", {33, 10}},
                   {"a/part_2", {33, 10}}}));
  // axis_size_axis1 (i64 [4, 9]): [4, 2] x 4, [4, 1]
  EXPECT_EQ(partShapes("b", {4, 9}, variable_axis_size_partitioner(64, 1),
                       DType::Int64),
            (Parts{{"b/part_0", {4, 2}},
                   {"b/part_1", {4, 2}},
                   {"b/part_2", {4, 2}},
                   {"b/part_3", {4, 2}},
                   {"b/part_4", {4, 1}}}));
  // One partition is still "<name>/part_0" (TF).
  EXPECT_EQ(partShapes("one", {5, 2}, min_max_variable_partitioner(1)),
            (Parts{{"one/part_0", {5, 2}}}));
}

TEST(PartitionedVariables, ScopeFullShapeAndConcat) {
  Graph graph;
  auto m = graph.mode_scope(ModeKeys::TRAIN);
  auto s = graph.name_scope("block");
  PartitionedVariable v =
      get_variable(graph, "w", DType::Float32, {5, 3},
                   fixed_size_partitioner(2), ones_initializer());
  EXPECT_EQ(v.name(), "block/w");
  EXPECT_EQ(v.shape(), (Dims{5, 3}));
  EXPECT_EQ(v.axis(), 0);
  ASSERT_EQ(v.parts().size(), 2u);
  EXPECT_EQ(v.parts()[1].name(), "block/w/part_1");
  EXPECT_EQ(v.offset(1), 3);
  Tensor full = v;
  EXPECT_EQ(full.shape(), (Dims{5, 3}));
  // Shared with reuse, in another mode without.
  EXPECT_THROW(get_variable(graph, "w", DType::Float32, {5, 3},
                            fixed_size_partitioner(2)),
               GraphError);
  PartitionedVariable again =
      get_variable(graph, "w", DType::Float32, {5, 3},
                   fixed_size_partitioner(2), ones_initializer(), true, true);
  EXPECT_EQ(again.parts()[0].name(), "block/w/part_0");
}

TEST(PartitionedVariables, Errors) {
  Graph graph;
  auto m = graph.mode_scope(ModeKeys::TRAIN);
  EXPECT_EQ(messageOf<GraphError>([&] {
              get_variable(graph, "s", DType::Float32, {},
                           fixed_size_partitioner(2));
            }),
            "get_variable 's': a partitioner was given for a scalar variable");
  EXPECT_EQ(messageOf<std::invalid_argument>([] { fixed_size_partitioner(0); }),
            "fixed_size_partitioner: num_shards must be at least 1, got 0");
  EXPECT_EQ(messageOf<GraphError>([&] {
              get_variable(graph, "x", DType::Float32, {4, 2},
                           fixed_size_partitioner(2, 2));
            }),
            "get_variable 'x': fixed_size_partitioner: cannot partition a "
            "variable along axis 2 when its shape is only [4,2]");
  EXPECT_EQ(messageOf<GraphError>([&] {
              get_variable(graph, "y", DType::Float32, {4, 2},
                           [](const Dims &, DType) {
                             return std::vector<int64_t>{2, 2};
                           });
            }),
            "get_variable 'y': can only partition a variable along one "
            "dimension, the partitioner asked for [2,2]");
  // Equal parts along axis 1: a TF-format checkpoint could not tell their
  // axis (the uneven [3, 10] into 4 above is fine).
  EXPECT_EQ(messageOf<GraphError>([&] {
              get_variable(graph, "z", DType::Float32, {3, 10},
                           fixed_size_partitioner(2, 1));
            }),
            "get_variable 'z': 2 equal partitions along axis 1 of shape "
            "[3,10] are not supported yet (their TF checkpoint slices would "
            "be written along axis 0): partition along axis 0, or into a "
            "count that does not divide 10");
  EXPECT_THROW(variable_axis_size_partitioner(0), std::invalid_argument);
  EXPECT_THROW(variable_axis_size_partitioner(10, 0, 16, -1),
               std::invalid_argument);
  // TF 2.15: max_shards=0 is no limit ([100, 10] f32, 1000 bytes -> [4, 1]);
  // max_shards=-1 is a ValueError.
  EXPECT_EQ(partsOf(variable_axis_size_partitioner(1000, 0, 16, 0), {100, 10}),
            (std::vector<int64_t>{4, 1}));
  PartitionedVariable v = get_variable(graph, "e", DType::Float32, {4, 2},
                                       fixed_size_partitioner(2));
  Tensor ids = graph.constant({0, 1}, {2}, DType::Int64);
  EXPECT_EQ(
      messageOf<GraphError>([&] { nn::embedding_lookup(v, ids, "range"); }),
      "embedding_lookup 'e': partition_strategy must be \"mod\" or "
      "\"div\", got \"range\"");
}

/// A predict graph: ids (a feature) looked up in "emb" [10, 2] split in 3,
/// with the values TF's rows would have: row r is [2r, 2r + 1].
g::GraphDef lookupGraph(const std::string &strategy) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"ids", DType::Int64, {-1, 3}});
  std::vector<double> values;
  for (int i = 0; i < 20; ++i)
    values.push_back(i);
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               PartitionedVariable emb = get_variable(
                   gr, "emb", DType::Float32, {10, 2},
                   fixed_size_partitioner(3), constant_initializer(values));
               Signature spec;
               spec.predictions = TensorMap{
                   {"rows", nn::embedding_lookup(emb, f["ids"], strategy)},
                   {"full", emb.as_tensor()}};
               return spec;
             });
  return graph.graph_def();
}

// TF 2.15: tf.compat.v1.nn.embedding_lookup(v, ids, partition_strategy=s)
// of ids [[0, 1, 2], [3, 9, 7], [4, 5, 8]] over fixed_size_partitioner(3)
// parts of [10, 2] whose rows are [2r, 2r + 1] of the full variable; column
// 0 of the result:
//   mod [[0, 8, 14], [2, 6, 12], [10, 16, 18]]
//   div [[0, 2, 4], [6, 18, 14], [8, 10, 16]]
const std::map<std::string, std::vector<double>> kTfLookups = {
    {"mod", {0, 8, 14, 2, 6, 12, 10, 16, 18}},
    {"div", {0, 2, 4, 6, 18, 14, 8, 10, 16}}};
const std::vector<double> kIds = {0, 1, 2, 3, 9, 7, 4, 5, 8};

TEST(PartitionedVariables, EmbeddingLookupModAndDivMatchTf) {
  for (const auto &[strategy, want] : kTfLookups) {
    SCOPED_TRACE(strategy);
    g::GraphDef def = lookupGraph(strategy);
    reference::Evaluator reference(def);
    reference.initialize_variables();
    std::map<std::string, reference::Value> out = reference.run(
        "predict", {{"ids", reference::Value(g::DT_INT64, {3, 3}, kIds)}});
    const reference::Value &rows = out.at("predictions/rows");
    ASSERT_EQ(rows.shape, (std::vector<int64_t>{3, 3, 2}));
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rows.data[2 * i], want[i]) << i;
      EXPECT_EQ(rows.data[2 * i + 1], want[i] + 1) << i;
    }
    // The concatenation is the full variable.
    const reference::Value &full = out.at("predictions/full");
    for (int i = 0; i < 20; ++i)
      EXPECT_EQ(full.data[static_cast<size_t>(i)], i);

    // Compiled: the same values; an id out of range stops the step.
    std::unique_ptr<JitModel> model = jitCompileForTest(def, "Lookup");
    ASSERT_TRUE(model);
    model->run("init");
    int fn = model->function_index("predict");
    model->set_batch(3);
    auto *in = static_cast<int64_t *>(
        model->input_data(fn, model->input_index(fn, "features/ids")));
    for (size_t i = 0; i < kIds.size(); ++i)
      in[i] = static_cast<int64_t>(kIds[i]);
    model->run(fn);
    const auto *got = static_cast<const float *>(
        model->output_data(fn, model->output_index(fn, "predictions/rows")));
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(got[2 * i], want[i]) << i;
    in[4] = 10;
    std::string error =
        messageOf<rt::InvalidArgumentError>([&] { model->run(fn); });
    EXPECT_NE(error.find(": id 10 at "), std::string::npos) << error;
    EXPECT_NE(error.find(" is outside [0, 10)"), std::string::npos) << error;
    // node 'predict/embedding_lookup/CheckRange' : id 10 at batch row 1,
    // index [1, 1] is outside [0, 10)
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(PartitionedVariables, SafeEmbeddingLookupSparseOverParts) {
  // Over the parts ("div", TF's default there) as in the full tensor.
  std::vector<double> values;
  for (int i = 0; i < 20; ++i)
    values.push_back(i * 0.5 - 3);
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1}});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &gr, const TensorMap &, const Tensor &, ModeKeys) {
               PartitionedVariable emb = get_variable(
                   gr, "emb", DType::Float32, {10, 2},
                   fixed_size_partitioner(3), constant_initializer(values));
               Tensor full = gr.constant(values, {10, 2});
               SparseIds ids{gr.constant({0, 9, 4, 7, 2, 2}, {6}, DType::Int64),
                             gr.constant({0, 0, 1, 2, 2, 2}, {6}, DType::Int64),
                             gr.constant({2, 1, 3}, {3}, DType::Int64),
                             gr.constant({1, 2, 0.5, 1, 3, 0.25}, {6})};
               Signature spec;
               spec.predictions = TensorMap{
                   {"parts", safe_embedding_lookup_sparse(emb, ids, "sqrtn")},
                   {"full", safe_embedding_lookup_sparse(full, ids, "sqrtn")}};
               return spec;
             });
  reference::Evaluator reference(graph.graph_def());
  reference.initialize_variables();
  std::map<std::string, reference::Value> out = reference.run(
      "predict", {{"x", reference::Value(g::DT_FLOAT, {3}, {0, 0, 0})}});
  EXPECT_EQ(out.at("predictions/parts").data, out.at("predictions/full").data);
  EXPECT_EQ(out.at("predictions/parts").shape, (std::vector<int64_t>{3, 2}));
}

TEST(PartitionedVariables, TrainingMovesOnlyTheRowsLookedUp) {
  // loss = sum(lookup(emb, ids)); SGD and Adagrad move exactly the rows of
  // the ids, in every part, by the gradient (1 per id occurrence).
  for (const std::string strategy : {"mod", "div"}) {
    for (bool adagrad : {false, true}) {
      SCOPED_TRACE(strategy + (adagrad ? " adagrad" : " sgd"));
      Graph graph;
      InputSpec inputs;
      inputs.features.push_back(TensorSpec{"ids", DType::Int64, {-1}});
      build_mode(
          graph, ModeKeys::TRAIN, inputs,
          [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
            PartitionedVariable emb =
                get_variable(gr, "emb", DType::Float32, {7, 2},
                             fixed_size_partitioner(3), zeros_initializer());
            Signature spec;
            spec.loss =
                reduce_sum(nn::embedding_lookup(emb, f["ids"], strategy));
            spec.train_op =
                adagrad
                    ? train::AdagradOptimizer(0.5).minimize(spec.loss)
                    : train::GradientDescentOptimizer(0.5).minimize(spec.loss);
            return spec;
          });
      std::unique_ptr<JitModel> model =
          jitCompileForTest(graph.graph_def(), "Train");
      ASSERT_TRUE(model);
      model->run("init");
      int fn = model->function_index("train");
      // Ids 1 (twice) and 5: parts of rows 3, 2, 2 (sizes 3, 2, 2).
      std::vector<int64_t> ids = {1, 5, 1};
      model->set_batch(3);
      std::memcpy(model->input_data(fn, model->input_index(fn, "features/ids")),
                  ids.data(), ids.size() * sizeof(int64_t));
      model->run(fn);
      // The full variable's rows after the step.
      std::vector<float> full;
      for (int p = 0; p < 3; ++p) {
        int v = model->variable_index("emb/part_" + std::to_string(p));
        ASSERT_GE(v, 0);
        const auto *data = static_cast<const float *>(model->variable_data(v));
        int64_t rows = model->variable_bytes(v) / 8; // 2 floats a row
        // Row r of part p is full row (mod) r * 3 + p, (div) offset + r.
        int64_t offset = p == 0 ? 0 : (p == 1 ? 3 : 5);
        for (int64_t r = 0; r < rows; ++r) {
          int64_t id = strategy == "mod" ? r * 3 + p : offset + r;
          float want = 0;
          if (id == 1 || id == 5) {
            double grad = id == 1 ? 2.0 : 1.0;
            // Adagrad (initial accumulator 0.1): lr g / sqrt(0.1 + g^2).
            want = adagrad ? -static_cast<float>(0.5 * grad /
                                                 std::sqrt(0.1 + grad * grad))
                           : -static_cast<float>(0.5 * grad);
          }
          for (int k = 0; k < 2; ++k)
            EXPECT_NEAR(data[r * 2 + k], want, 1e-6)
                << "part " << p << " row " << r << " (id " << id << ")";
        }
      }
    }
  }
}

TEST(PartitionedVariables, CheckpointLayoutsFromNamesAndShapes) {
  std::map<std::string, VariableSpec> specs = {
      {"emb/part_0", {DType::Float32, {4, 2}}},
      {"emb/part_1", {DType::Float32, {3, 2}}},
      {"emb/part_2", {DType::Float32, {3, 2}}},
      {"emb/part_0/Adagrad", {DType::Float32, {4, 2}}},
      {"emb/part_1/Adagrad", {DType::Float32, {3, 2}}},
      {"emb/part_2/Adagrad", {DType::Float32, {3, 2}}},
      {"w/part_0", {DType::Float32, {3, 3}}},
      {"w/part_1", {DType::Float32, {3, 2}}},
      {"gap/part_0", {DType::Float32, {2}}},
      {"gap/part_2", {DType::Float32, {2}}},
      {"dense/kernel", {DType::Float32, {2, 2}}}};
  std::map<std::string, train::PartLayout> layouts =
      train::partition_layouts(specs);
  EXPECT_EQ(layouts.size(), 8u); // not gap (no part_1), not dense/kernel
  const train::PartLayout &e1 = layouts.at("emb/part_1");
  EXPECT_EQ(e1.full_name, "emb");
  EXPECT_EQ(e1.full_shape, (std::vector<int64_t>{10, 2}));
  EXPECT_EQ(e1.slice.start, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(e1.slice.length, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(layouts.at("emb/part_2/Adagrad").full_name, "emb/Adagrad");
  const train::PartLayout &w1 = layouts.at("w/part_1");
  EXPECT_EQ(w1.full_shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(w1.slice.start, (std::vector<int64_t>{0, 3}));

  // slice_of cuts the parts out of the full tensor.
  std::vector<float> values;
  for (int i = 0; i < 15; ++i)
    values.push_back(static_cast<float>(i));
  TensorValue full = TensorValue::of<float>({3, 5}, values);
  EXPECT_EQ(train::slice_of(full, w1, "test").values<float>(),
            (std::vector<float>{3, 4, 8, 9, 13, 14}));
  EXPECT_THROW(
      train::slice_of(TensorValue::of<float>({15}, values), w1, "test"),
      train::CheckpointError);
}

class PartitionedCheckpoints : public FileTest {
protected:
  PartitionedCheckpoints() : FileTest("partitioned") {}
};

TEST_F(PartitionedCheckpoints, BundleWritesPartsAsSlicesOfTheFullName) {
  std::string prefix = path("model.ckpt-1");
  std::vector<float> p0 = {0, 1, 2, 3, 4, 5, 6, 7}, p1 = {8, 9, 10, 11, 12, 13},
                     p2 = {14, 15, 16, 17, 18, 19};
  train::VariableMap vars = {
      {"emb/part_0", TensorValue::of<float>({4, 2}, p0)},
      {"emb/part_1", TensorValue::of<float>({3, 2}, p1)},
      {"emb/part_2", TensorValue::of<float>({3, 2}, p2)},
      {"bias", TensorValue::of<float>({2}, {0.5f, 1.5f})}};
  train::write_tensor_bundle(prefix, vars);
  train::TensorBundleReader reader(prefix);
  EXPECT_FALSE(reader.has_tensor("emb/part_0"));
  ASSERT_TRUE(reader.has_tensor("emb"));
  EXPECT_EQ(reader.tensors().at("emb").num_slices, 3u);
  TensorValue emb = reader.get_tensor("emb");
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{10, 2}));
  std::vector<float> want;
  for (int i = 0; i < 20; ++i)
    want.push_back(static_cast<float>(i));
  EXPECT_EQ(emb.values<float>(), want);
  EXPECT_TRUE(reader.has_tensor("bias"));
}

} // namespace
} // namespace estc
