//===- SparseInputsTest.cpp - Inputs sized by a number of values ----------===//
//
// A feature column's ids reach compiled code as inputs whose dimension 0 is
// a run-time number of values, not the batch (docs/design/
// feature-columns.md): the placeholder's `values_dim`, the function
// argument's `est.values_dim`, an arena of S + P * batch + V * values
// bytes, rt::kValuesDim in the manifest, CompiledModel::set_values. Here a
// bag-of-embeddings model (gather the ids' rows, scatter-add them into
// their batch rows) runs at several batch sizes and numbers of values,
// including none and more values than examples, against a sum on the host.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Ops.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace estc {
namespace {

using testing::jitCompileForTest;

constexpr int64_t kRows = 6, kDim = 3;

/// predict: pooled[b] = x[b, :] * 0 + sum of table[ids[i]] for rows[i] == b;
/// count = the number of ids (a scalar from the values alone).
graph::GraphDef bagOfEmbeddings() {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, kDim}});
  inputs.features.push_back({"ids", DType::Int64, {-1}, /*values_dim=*/true});
  inputs.features.push_back({"rows", DType::Int64, {-1}, /*values_dim=*/true});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [](Graph &g, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable table =
                   g.get_variable("table", DType::Float32, {kRows, kDim},
                                  random_uniform_initializer(-1, 1, 3));
               Tensor rows = g.read_variable(table);
               Tensor embedded = gather(rows, f["ids"]);
               Tensor pooled =
                   scatter_add(zeros_like(f["x"]), f["rows"], embedded);
               Signature s;
               s.predictions = {{"pooled", pooled},
                                {"count", reduce_sum(ones_like(f["ids"]))}};
               return s;
             });
  return graph.graph_def();
}

TEST(SparseInputsTest, ArenaAndBuffersFollowTheNumberOfValues) {
  graph::GraphDef def = bagOfEmbeddings();
  std::unique_ptr<JitModel> model = jitCompileForTest(def, "Bag");
  ASSERT_TRUE(model);
  int fn = model->function_index("predict");
  int x = model->input_index(fn, "features/x");
  int ids = model->input_index(fn, "features/ids");
  int rows = model->input_index(fn, "features/rows");
  const rt::FunctionSpec &spec = model->spec().functions[fn];
  EXPECT_EQ(spec.inputs[ids].shape[0], rt::kValuesDim);
  EXPECT_EQ(spec.inputs[x].shape[0], rt::kBatchDim);
  EXPECT_GT(spec.arenaPerValue, 0); // the gathered rows: n x 3 floats

  std::vector<float> table(kRows * kDim);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = 0.25f * static_cast<float>(i) - 1.0f;
  std::memcpy(model->variable_data(model->variable_index("table")),
              table.data(), table.size() * sizeof(float));

  struct Case {
    int64_t batch;
    std::vector<int64_t> ids, rows;
  };
  // More values than examples, none at all, one row left empty, and a
  // number of values that grows the arena after a smaller one.
  std::vector<Case> cases = {
      {2, {0, 5, 5, 1, 2}, {0, 0, 0, 1, 1}},
      {3, {}, {}},
      {4, {3, 4}, {0, 3}},
      {1, std::vector<int64_t>(200, 2), std::vector<int64_t>(200, 0)},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE("batch " + std::to_string(c.batch) + ", " +
                 std::to_string(c.ids.size()) + " values");
    int64_t n = static_cast<int64_t>(c.ids.size());
    model->set_batch(c.batch);
    model->set_values(fn, ids, n);
    model->set_values(fn, rows, n);
    EXPECT_EQ(model->values(fn, ids), n);
    std::vector<float> xs(c.batch * kDim, 1.0f);
    std::memcpy(model->input_data(fn, x), xs.data(), xs.size() * 4);
    if (n) {
      std::memcpy(model->input_data(fn, ids), c.ids.data(), n * 8);
      std::memcpy(model->input_data(fn, rows), c.rows.data(), n * 8);
    }
    model->run(fn);
    std::vector<float> want(c.batch * kDim, 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t d = 0; d < kDim; ++d)
        want[c.rows[i] * kDim + d] += table[c.ids[i] * kDim + d];
    const float *got = static_cast<const float *>(
        model->output_data(fn, model->output_index(fn, "predictions/pooled")));
    for (int64_t i = 0; i < c.batch * kDim; ++i)
      EXPECT_FLOAT_EQ(got[i], want[i]) << "element " << i;
    const int64_t *count = static_cast<const int64_t *>(
        model->output_data(fn, model->output_index(fn, "predictions/count")));
    EXPECT_EQ(*count, n);
  }
}

TEST(SparseInputsTest, SetValuesErrorsNameTheInput) {
  std::unique_ptr<JitModel> model = jitCompileForTest(bagOfEmbeddings(), "Bag");
  ASSERT_TRUE(model);
  int fn = model->function_index("predict");
  int x = model->input_index(fn, "features/x");
  int ids = model->input_index(fn, "features/ids");
  try {
    model->set_values(fn, x, 3);
    FAIL() << "set_values on a batch input accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "Bag: predict: input 'features/x' is not sparse "
                           "(its dimension 0 is not a number of values)");
  }
  try {
    model->set_values(fn, ids, -1);
    FAIL() << "a negative number of values accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "Bag: predict: input 'features/ids': -1 values");
  }
  // A bound buffer brings its number of values.
  model->set_batch(1);
  int64_t boundIds[4] = {0, 1, 2, 3};
  model->bind_input(fn, ids, boundIds, {4});
  EXPECT_EQ(model->values(fn, ids), 4);
}

TEST(SparseInputsTest, ValuesDimNeedsAnUnknownFirstDimension) {
  Graph graph;
  auto scope = graph.mode_scope(ModeKeys::PREDICT);
  try {
    graph.placeholder("ids", DType::Int64, {4}, /*values_dim=*/true);
    FAIL() << "a static values_dim accepted";
  } catch (const GraphError &e) {
    EXPECT_STREQ(e.what(), "placeholder 'predict/ids': a values_dim input "
                           "needs shape [-1, ...], not [4]");
  }
}

} // namespace
} // namespace estc
