//===- DistributedStepTest.cpp - Compiled steps of data-parallel replicas -===//
//
// A model JIT-compiled for N replicas (JitOptions::replicas; estc
// --replicas) averages its gradients and its loss over them through the
// runtime's collectives (docs/design/distributed.md, "Compiler"). Here the
// replicas are threads of one process (distribute::make_local_group, each
// installed with rt::setThreadCollective), each running its own JitModel
// on its shard of every global batch, and:
//   (a) every replica ends with the same variables, bit for bit;
//   (b) N replicas of batch B end within kBound (per variable: max |a - b|
//       over max |b|) of one replica of batch N*B fed the shards
//       concatenated -- what float32 rounding of the other summation order
//       leaves;
//   (c) a model compiled without replicas makes no collective call, and one
//       compiled for replicas runs alone exactly as without;
//   (d) the loss every replica returns is the global batch's;
//   (e) train_loop (iterations_per_loop) under replicas is its single steps,
//       bit for bit;
//   (e') the seed MLP compiled ahead of time for 2 replicas
//       (estc_add_model(... REPLICAS 2)) trains as the JIT's, bit for bit;
//   (f) the one-line errors: replicas on CUDA, a bad count, sparse inputs
//       whose gathered rows do not fit (every replica fails, none hangs).
// Models: an MLP (sgd, momentum, adam, clipping, two optimizers, f32 and
// f64 gradients: dense gradients only), an embedding of one id per example
// (a sparse gradient; adagrad, momentum, adam) and a bag of ids per example
// (values_dim inputs; the replicas must have as many ids each).
//
//===----------------------------------------------------------------------===//

#include "MlpReplicas.h"
#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "runtime/Collective.h"
#include "runtime/distribute/Distribute.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace estc {
namespace {

using testing::jitCompileForTest;

/// (b)'s bound: the largest per-variable relative difference between N
/// replicas and one replica of the concatenated batch after kSteps steps.
/// Measured (x86-64, this test's output): at most 4.7e-7 over every model,
/// optimizer and replica count here.
constexpr double kBound = 1e-5;
constexpr int kSteps = 4;
constexpr int64_t kBatch = 6; // per replica

// --- Models
// ------------------------------------------------------------------

constexpr int64_t kVocab = 10, kDim = 4;

graph::GraphDef mlp(const train::Optimizer &opt) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, 4}});
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Tensor hidden = layers::dense(f["x"], 8, nn::relu);
               Tensor logits = layers::dense(hidden, 3);
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = opt.minimize(s.loss);
               return s;
             });
  return graph.graph_def();
}

/// One id per example: the table's gradient is sparse (its gathered rows).
graph::GraphDef embedding(const train::Optimizer &opt) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, 2}});
  inputs.features.push_back({"id", DType::Int64, {-1}});
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Variable table =
                   g.get_variable("table", DType::Float32, {kVocab, kDim},
                                  random_uniform_initializer(-1, 1, 5));
               Tensor rows = gather(g.read_variable(table), f["id"]);
               Tensor logits = layers::dense(concat({f["x"], rows}, 1), 3);
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = opt.minimize(s.loss);
               return s;
             });
  return graph.graph_def();
}

/// A bag of ids per example (values_dim inputs: `ids` and the batch row of
/// each), summed: a sparse gradient with a number of rows of its own.
graph::GraphDef bag(const train::Optimizer &opt) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, kDim}});
  inputs.features.push_back({"ids", DType::Int64, {-1}, /*values_dim=*/true});
  inputs.features.push_back({"rows", DType::Int64, {-1}, /*values_dim=*/true});
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Variable table =
                   g.get_variable("table", DType::Float32, {kVocab, kDim},
                                  random_uniform_initializer(-1, 1, 7));
               Tensor pooled = unsorted_segment_sum(
                   gather(g.read_variable(table), f["ids"]), f["rows"], f["x"]);
               Tensor logits = layers::dense(add(f["x"], pooled), 3);
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = opt.minimize(s.loss);
               return s;
             });
  return graph.graph_def();
}

/// The MLP with its first layer trained by `first` and the other by
/// `second`: two est.apply_gradients in one step (DNNLinearCombined's
/// group of two minimizes), whose gradients est-insert-collectives reduces
/// in one buffer before the first update.
graph::GraphDef mlpTwoOptimizers(const train::Optimizer &first,
                                 const train::Optimizer &second) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, 4}});
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Tensor hidden = layers::dense(f["x"], 8, nn::relu);
               size_t firstLayer = g.trainable_variables().size();
               Tensor logits = layers::dense(hidden, 3);
               std::vector<Variable> vars = g.trainable_variables();
               std::vector<Variable> a(vars.begin(), vars.begin() + firstLayer),
                   b(vars.begin() + firstLayer, vars.end());
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = group(
                   {first.minimize(s.loss, a), second.minimize(s.loss, b)});
               return s;
             });
  return graph.graph_def();
}

/// Logits from an f32 layer plus an f64 one: gradients of two element
/// types, one fused buffer each (the loss rides in the f32 one).
graph::GraphDef mlpF32AndF64(const train::Optimizer &opt) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back({"x", DType::Float32, {-1, 4}});
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Variable w =
                   g.get_variable("w64", DType::Float64, {4, 3},
                                  random_uniform_initializer(-1, 1, 9));
               Tensor wide =
                   matmul(cast(f["x"], DType::Float64), g.read_variable(w));
               Tensor logits =
                   add(layers::dense(f["x"], 3), cast(wide, DType::Float32));
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = opt.minimize(s.loss);
               return s;
             });
  return graph.graph_def();
}

// --- Data
// --------------------------------------------------------------------

/// One input of a replica's batch: `width` values per example (per id for a
/// values_dim input).
struct Column {
  std::string key;
  bool isFloat = true;
  int64_t width = 1;
  bool perValue = false; // a values_dim input: set_values
  bool batchRow = false; // its values are batch rows (offset when merged)
  std::vector<double> values;
};
struct Batch {
  int64_t batch = 0;
  std::vector<Column> columns;
};

/// The batches of `replicas` shards for kSteps steps: [step][replica].
/// `idsPerExample(replica)` ids per example for the bag model.
using Shards = std::vector<std::vector<Batch>>;

Shards makeShards(const std::string &model, int replicas, uint32_t seed,
                  const std::function<int(int)> &idsPerExample = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  auto f32 = [&] { return static_cast<double>(static_cast<float>(u(rng))); };
  Shards shards(kSteps);
  for (int s = 0; s < kSteps; ++s)
    for (int r = 0; r < replicas; ++r) {
      Batch b;
      b.batch = kBatch;
      int64_t xWidth = model == "embedding" ? 2 : model == "bag" ? kDim : 4;
      Column x{"features/x", true, xWidth, false, false, {}};
      for (int64_t i = 0; i < kBatch * xWidth; ++i)
        x.values.push_back(f32());
      b.columns.push_back(x);
      if (model == "embedding") {
        Column id{"features/id", false, 1, false, false, {}};
        for (int64_t i = 0; i < kBatch; ++i)
          id.values.push_back(static_cast<double>(rng() % kVocab));
        b.columns.push_back(id);
      }
      if (model == "bag") {
        Column ids{"features/ids", false, 1, true, false, {}};
        Column rows{"features/rows", false, 1, true, true, {}};
        for (int64_t i = 0; i < kBatch; ++i)
          for (int k = 0; k < idsPerExample(r); ++k) {
            ids.values.push_back(static_cast<double>(rng() % kVocab));
            rows.values.push_back(static_cast<double>(i));
          }
        b.columns.push_back(ids);
        b.columns.push_back(rows);
      }
      Column labels{"labels", false, 1, false, false, {}};
      for (int64_t i = 0; i < kBatch; ++i)
        labels.values.push_back(static_cast<double>(rng() % 3));
      b.columns.push_back(labels);
      shards[s].push_back(std::move(b));
    }
  return shards;
}

/// The replicas' batches of one step as one batch (rank order).
Batch concatenate(const std::vector<Batch> &shards) {
  Batch all = shards.front();
  for (Column &c : all.columns)
    c.values.clear();
  all.batch = 0;
  for (const Batch &b : shards) {
    for (size_t k = 0; k < b.columns.size(); ++k)
      for (double v : b.columns[k].values)
        all.columns[k].values.push_back(
            b.columns[k].batchRow ? v + static_cast<double>(all.batch) : v);
    all.batch += b.batch;
  }
  return all;
}

void feed(rt::CompiledModel &m, int fn, const Batch &b) {
  m.set_batch(b.batch);
  for (const Column &c : b.columns) {
    int in = m.input_index(fn, c.key);
    int64_t n = static_cast<int64_t>(c.values.size()) / c.width;
    if (c.perValue)
      m.set_values(fn, in, n);
    void *data = m.input_data(fn, in);
    for (size_t i = 0; i < c.values.size(); ++i) {
      if (c.isFloat)
        static_cast<float *>(data)[i] = static_cast<float>(c.values[i]);
      else
        static_cast<int64_t *>(data)[i] = static_cast<int64_t>(c.values[i]);
    }
  }
}

float lossOf(rt::CompiledModel &m, int fn) {
  float loss;
  std::memcpy(&loss, m.output_data(fn, m.output_index(fn, "loss")),
              sizeof(float));
  return loss;
}

/// Every variable's bytes, by name.
std::map<std::string, std::string> variables(rt::CompiledModel &m) {
  std::map<std::string, std::string> out;
  for (int i = 0; i < m.spec().numVariables; ++i)
    out[m.spec().variables[i].name] =
        std::string(static_cast<const char *>(m.variable_data(i)),
                    static_cast<size_t>(m.variable_bytes(i)));
  return out;
}

/// The largest, over the float variables (f32, f64), of max |a - b| /
/// max |b|; the other variables (global_step) must be equal.
double maxRelativeDifference(rt::CompiledModel &a, rt::CompiledModel &b,
                             std::string &where) {
  double worst = 0;
  for (int i = 0; i < b.spec().numVariables; ++i) {
    const rt::VariableSpec &v = b.spec().variables[i];
    int j = a.variable_index(v.name);
    if (v.dtype != rt::DType::F32 && v.dtype != rt::DType::F64) {
      EXPECT_EQ(std::memcmp(a.variable_data(j), b.variable_data(i),
                            static_cast<size_t>(b.variable_bytes(i))),
                0)
          << v.name;
      continue;
    }
    auto at = [&](rt::CompiledModel &m, int index, int64_t k) {
      if (v.dtype == rt::DType::F64)
        return static_cast<const double *>(m.variable_data(index))[k];
      return double(static_cast<const float *>(m.variable_data(index))[k]);
    };
    double diff = 0, scale = 0;
    int64_t n =
        b.variable_bytes(i) / static_cast<int64_t>(rt::dtypeBytes(v.dtype));
    for (int64_t k = 0; k < n; ++k) {
      diff = std::max(diff, std::abs(at(a, j, k) - at(b, i, k)));
      scale = std::max(scale, std::abs(at(b, i, k)));
    }
    double rel = scale > 0 ? diff / scale : diff;
    if (rel >= worst) {
      worst = rel;
      where = v.name;
    }
  }
  return worst;
}

// --- Replicas as threads
// ------------------------------------------------------

/// Runs fn(rank) on `size` threads with a local group installed; failures
/// (exceptions) come back as strings, one per replica ("" when none).
std::vector<std::string>
onReplicas(int size, const std::function<void(int)> &fn,
           std::vector<rt::CollectiveStats> *stats = nullptr) {
  auto group = rt::distribute::make_local_group(size);
  std::vector<std::string> errors(static_cast<size_t>(size));
  if (stats)
    stats->assign(static_cast<size_t>(size), {});
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      rt::setThreadCollective(group[static_cast<size_t>(r)].get());
      try {
        fn(r);
      } catch (const std::exception &e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
      if (stats)
        (*stats)[static_cast<size_t>(r)] = rt::collectiveStats();
      rt::setThreadCollective(nullptr);
    });
  for (std::thread &t : threads)
    t.join();
  return errors;
}

/// N JitModels compiled with `options` (every one initialized by @init).
std::vector<std::unique_ptr<JitModel>>
compileReplicas(const graph::GraphDef &def, int n, JitOptions options) {
  std::vector<std::unique_ptr<JitModel>> models;
  for (int r = 0; r < n; ++r) {
    models.push_back(jitCompileForTest(def, "Model", options));
    if (!models.back())
      return {};
    models.back()->run("init");
  }
  return models;
}

/// (a), (b), (d): `replicas` replicas against one replica of the
/// concatenated batches; with `callsPerStep` >= 0, also the collectives
/// each replica's step made.
void checkAgainstOneReplica(const graph::GraphDef &def, int replicas,
                            const Shards &shards, int callsPerStep = -1) {
  JitOptions options;
  options.replicas = replicas;
  auto models = compileReplicas(def, replicas, options);
  std::unique_ptr<JitModel> one = jitCompileForTest(def, "Model");
  ASSERT_TRUE(!models.empty() && one);
  EXPECT_EQ(models[0]->spec().replicas, replicas);
  EXPECT_EQ(one->spec().replicas, 0);
  one->run("init");
  ASSERT_EQ(variables(*models[0]), variables(*one)); // the same @init

  std::vector<std::vector<float>> losses(replicas);
  std::vector<rt::CollectiveStats> stats;
  std::vector<std::string> errors = onReplicas(
      replicas,
      [&](int r) {
        JitModel &m = *models[static_cast<size_t>(r)];
        int fn = m.function_index("train");
        for (int s = 0; s < kSteps; ++s) {
          feed(m, fn, shards[s][static_cast<size_t>(r)]);
          m.run(fn);
          losses[static_cast<size_t>(r)].push_back(lossOf(m, fn));
        }
      },
      &stats);
  for (int r = 0; r < replicas; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "replica " << r;
    if (callsPerStep >= 0) {
      EXPECT_EQ(stats[static_cast<size_t>(r)].calls, callsPerStep * kSteps)
          << "replica " << r;
    }
  }

  std::vector<float> oneLosses;
  int fn = one->function_index("train");
  for (int s = 0; s < kSteps; ++s) {
    feed(*one, fn, concatenate(shards[s]));
    one->run(fn);
    oneLosses.push_back(lossOf(*one, fn));
  }

  // (a) the same bits everywhere: variables and the loss.
  for (int r = 1; r < replicas; ++r) {
    EXPECT_EQ(variables(*models[static_cast<size_t>(r)]), variables(*models[0]))
        << "replica " << r << " differs from replica 0";
    EXPECT_EQ(losses[static_cast<size_t>(r)], losses[0]) << "replica " << r;
  }
  // (d) the loss is the global batch's: at the first step (the same
  // variables) up to the order of the mean's sums, later within kBound.
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(losses[0][s], oneLosses[s],
                (s == 0 ? 1e-6 : kBound) * std::max(1.0f, oneLosses[s]))
        << "step " << s;
  // (b)
  std::string where;
  double rel = maxRelativeDifference(*models[0], *one, where);
  std::printf("[ measured ] %d replicas of batch %lld vs 1 of %lld after %d "
              "steps: max relative difference %.3g (%s)\n",
              replicas, static_cast<long long>(kBatch),
              static_cast<long long>(kBatch * replicas), kSteps, rel,
              where.c_str());
  EXPECT_LT(rel, kBound) << where;
  // Training moved the variables (the comparison is not of initial values).
  EXPECT_NE(variables(*one), variables(*jitCompileForTest(def, "Model")))
      << "nothing trained";
}

TEST(DistributedStep, MlpSgd2And3Replicas) {
  graph::GraphDef def = mlp(train::GradientDescentOptimizer(0.5));
  for (int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " replicas");
    checkAgainstOneReplica(def, n, makeShards("mlp", n, 1));
  }
}

TEST(DistributedStep, MlpMomentum) {
  checkAgainstOneReplica(mlp(train::MomentumOptimizer(0.2, 0.9)), 2,
                         makeShards("mlp", 2, 2));
}

TEST(DistributedStep, MlpAdam3Replicas) {
  checkAgainstOneReplica(mlp(train::AdamOptimizer(0.05)), 3,
                         makeShards("mlp", 3, 3));
}

TEST(DistributedStep, MlpClippedGradients) {
  // Clipping by the global norm sees the averaged gradients.
  checkAgainstOneReplica(
      mlp(train::GradientDescentOptimizer(0.5).clip_gradients_by_global_norm(
          0.05)),
      2, makeShards("mlp", 2, 4));
}

TEST(DistributedStep, TwoOptimizersOneBuffer) {
  // sgd on the first layer, adagrad on the other: both optimizers'
  // gradients and the loss in one collective a step.
  checkAgainstOneReplica(mlpTwoOptimizers(train::GradientDescentOptimizer(0.5),
                                          train::AdagradOptimizer(0.3)),
                         2, makeShards("mlp", 2, 15), /*callsPerStep=*/1);
}

TEST(DistributedStep, F32AndF64GradientsOneBufferEach) {
  checkAgainstOneReplica(mlpF32AndF64(train::AdamOptimizer(0.05)), 2,
                         makeShards("mlp", 2, 16), /*callsPerStep=*/2);
}

TEST(DistributedStep, EmbeddingAdagrad2And3Replicas) {
  graph::GraphDef def = embedding(train::AdagradOptimizer(0.3));
  for (int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " replicas");
    checkAgainstOneReplica(def, n, makeShards("embedding", n, 5));
  }
}

TEST(DistributedStep, EmbeddingMomentum) {
  checkAgainstOneReplica(embedding(train::MomentumOptimizer(0.2, 0.9)), 2,
                         makeShards("embedding", 2, 6));
}

TEST(DistributedStep, EmbeddingAdam) {
  // adam densifies the sparse gradient (TF 1.x): gathered, then scattered.
  checkAgainstOneReplica(embedding(train::AdamOptimizer(0.05)), 2,
                         makeShards("embedding", 2, 7));
}

TEST(DistributedStep, BagOfIdsEqualCounts) {
  checkAgainstOneReplica(bag(train::AdagradOptimizer(0.3)), 2,
                         makeShards("bag", 2, 8, [](int) { return 3; }));
}

TEST(DistributedStep, BagOfIdsUnequalCountsFailOnEveryReplica) {
  // Each replica's step holds replicas x its own rows of the gathered
  // gradient: a replica with fewer ids than the mean cannot hold them
  // (docs/design/distributed.md, "Compiler"). Replica 2 has 6 ids, the
  // others 12: 30 in all, more than replica 2's 3 x 6. Replicas 0 and 1
  // could hold them, and fail too instead of waiting for replica 2 in the
  // gather.
  graph::GraphDef def = bag(train::AdagradOptimizer(0.3));
  JitOptions options;
  options.replicas = 3;
  auto models = compileReplicas(def, 3, options);
  ASSERT_FALSE(models.empty());
  Shards shards = makeShards("bag", 3, 9, [](int r) { return r == 2 ? 1 : 2; });
  std::vector<std::string> errors = onReplicas(3, [&](int r) {
    JitModel &m = *models[static_cast<size_t>(r)];
    feed(m, m.function_index("train"), shards[0][static_cast<size_t>(r)]);
    m.run("train");
  });
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              "all_gather: the replicas' sparse gradients have 30 rows in all, "
              "more than the 18 (replicas x its own 6) replica 2's step "
              "holds: the replicas' sparse inputs differ in size")
        << "replica " << r;
}

// --- (c) Without the option, and alone
// -----------------------------------------

TEST(DistributedStep, WithoutReplicasNoCollectiveIsCalled) {
  graph::GraphDef def = embedding(train::AdagradOptimizer(0.3));
  auto inGroup = compileReplicas(def, 2, {});
  auto alone = compileReplicas(def, 2, {});
  ASSERT_TRUE(!inGroup.empty() && !alone.empty());
  Shards shards = makeShards("embedding", 2, 10);
  std::vector<rt::CollectiveStats> stats;
  std::vector<std::string> errors = onReplicas(
      2,
      [&](int r) {
        JitModel &m = *inGroup[static_cast<size_t>(r)];
        for (int s = 0; s < kSteps; ++s) {
          feed(m, m.function_index("train"), shards[s][static_cast<size_t>(r)]);
          m.run("train");
        }
      },
      &stats);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "");
    EXPECT_EQ(stats[static_cast<size_t>(r)].calls, 0) << "replica " << r;
    JitModel &m = *alone[static_cast<size_t>(r)];
    for (int s = 0; s < kSteps; ++s) {
      feed(m, m.function_index("train"), shards[s][static_cast<size_t>(r)]);
      m.run("train");
    }
    // Each trained on its own shard, as if alone.
    EXPECT_EQ(variables(*inGroup[static_cast<size_t>(r)]), variables(m));
  }
  EXPECT_NE(variables(*alone[0]), variables(*alone[1]));
}

TEST(DistributedStep, CompiledForReplicasRunsAloneAsOneReplica) {
  for (const graph::GraphDef &def : {mlp(train::AdamOptimizer(0.05)),
                                     embedding(train::AdagradOptimizer(0.3))}) {
    JitOptions options;
    options.replicas = 2;
    auto replica = compileReplicas(def, 1, options);
    auto plain = compileReplicas(def, 1, {});
    ASSERT_TRUE(!replica.empty() && !plain.empty());
    bool isMlp = replica[0]->find_input(replica[0]->function_index("train"),
                                        "features/id") < 0;
    Shards shards = makeShards(isMlp ? "mlp" : "embedding", 1, 11);
    rt::resetCollectiveStats();
    for (int s = 0; s < kSteps; ++s)
      for (JitModel *m : {replica[0].get(), plain[0].get()}) {
        feed(*m, m->function_index("train"), shards[s][0]);
        m->run("train");
      }
    EXPECT_EQ(variables(*replica[0]), variables(*plain[0]));
    EXPECT_EQ(lossOf(*replica[0], replica[0]->function_index("train")),
              lossOf(*plain[0], plain[0]->function_index("train")));
    EXPECT_EQ(rt::collectiveStats().calls, 0);
  }
}

// --- (e) train_loop
// ------------------------------------------------------------

TEST(DistributedStep, TrainLoopIsItsSingleSteps) {
  graph::GraphDef def = mlp(train::MomentumOptimizer(0.2, 0.9));
  constexpr int n = 2;
  JitOptions options;
  options.replicas = n;
  auto single = compileReplicas(def, n, options);
  options.trainLoop = true;
  auto looped = compileReplicas(def, n, options);
  ASSERT_TRUE(!single.empty() && !looped.empty());
  ASSERT_GE(looped[0]->find_function("train_loop"), 0);
  Shards shards = makeShards("mlp", n, 12);
  std::vector<float> singleLoss(n), loopLoss(n);
  std::vector<rt::CollectiveStats> singleStats, loopStats;
  auto errors = onReplicas(
      n,
      [&](int r) {
        JitModel &m = *single[static_cast<size_t>(r)];
        int fn = m.function_index("train");
        for (int s = 0; s < kSteps; ++s) {
          feed(m, fn, shards[s][static_cast<size_t>(r)]);
          m.run(fn);
        }
        singleLoss[static_cast<size_t>(r)] = lossOf(m, fn);
      },
      &singleStats);
  auto loopErrors = onReplicas(
      n,
      [&](int r) {
        JitModel &m = *looped[static_cast<size_t>(r)];
        int loop = m.function_index("train_loop");
        m.set_batch(kBatch);
        m.set_steps(loop, kSteps);
        // Stage every step's shard: inputs [steps, batch, ...].
        for (int s = 0; s < kSteps; ++s)
          for (const Column &c : shards[s][static_cast<size_t>(r)].columns) {
            int in = m.input_index(loop, c.key);
            size_t per = c.values.size();
            for (size_t i = 0; i < per; ++i) {
              size_t at = static_cast<size_t>(s) * per + i;
              if (c.isFloat)
                static_cast<float *>(m.input_data(loop, in))[at] =
                    static_cast<float>(c.values[i]);
              else
                static_cast<int64_t *>(m.input_data(loop, in))[at] =
                    static_cast<int64_t>(c.values[i]);
            }
          }
        m.run(loop);
        loopLoss[static_cast<size_t>(r)] = lossOf(m, loop);
      },
      &loopStats);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "");
    ASSERT_EQ(loopErrors[static_cast<size_t>(r)], "");
    EXPECT_EQ(variables(*looped[static_cast<size_t>(r)]),
              variables(*single[static_cast<size_t>(r)]))
        << "replica " << r;
    EXPECT_EQ(loopLoss[static_cast<size_t>(r)],
              singleLoss[static_cast<size_t>(r)]);
    // Each step of the loop reduced: as many collectives as single steps
    // (the gradients and the loss in one buffer: 1 a step).
    EXPECT_EQ(loopStats[static_cast<size_t>(r)].calls, kSteps);
    EXPECT_EQ(singleStats[static_cast<size_t>(r)].calls, kSteps);
  }
}

// --- Ahead of time
// -------------------------------------------------------------

TEST(DistributedStep, AotReplicasAreTheJitsBitForBit) {
  // estc_add_model(estc_test_mlp_replicas ... REPLICAS 2): the generated
  // ModelSpec records the count, and the generated step calls the same
  // collectives as the JIT's (the same CPU: what estc_add_model compiles
  // for).
  EXPECT_EQ(MlpReplicas::model_spec().replicas, 2);
  graph::GraphDef def;
  std::string error;
  ASSERT_TRUE(graph::readGraph(ESTC_MLP_GRAPH, def, error)) << error;
  JitOptions options;
  options.replicas = 2;
  options.target.cpu = "x86-64-v2";
  auto jit = compileReplicas(def, 2, options);
  ASSERT_FALSE(jit.empty());
  MlpReplicas aot[2];
  std::mt19937 rng(14);
  std::uniform_real_distribution<double> u(0, 1);
  Shards shards(2);
  for (auto &step : shards)
    for (int r = 0; r < 2; ++r) {
      Batch b;
      b.batch = 4;
      Column x{"features/x", true, 784, false, false, {}};
      Column labels{"labels", false, 1, false, false, {}};
      for (int i = 0; i < 4 * 784; ++i)
        x.values.push_back(static_cast<float>(u(rng)));
      for (int i = 0; i < 4; ++i)
        labels.values.push_back(static_cast<double>(rng() % 10));
      b.columns = {x, labels};
      step.push_back(b);
    }
  for (MlpReplicas &m : aot)
    m.run("init");
  std::map<std::string, std::string> initial = variables(aot[0]);
  ASSERT_EQ(initial, variables(*jit[0]));
  for (bool ahead : {true, false}) {
    auto errors = onReplicas(2, [&](int r) {
      rt::CompiledModel &m = ahead ? static_cast<rt::CompiledModel &>(aot[r])
                                   : *jit[static_cast<size_t>(r)];
      for (const auto &step : shards) {
        feed(m, m.function_index("train"), step[static_cast<size_t>(r)]);
        m.run("train");
      }
    });
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(errors[static_cast<size_t>(r)], "");
  }
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(variables(aot[r]), variables(*jit[static_cast<size_t>(r)]))
        << "replica " << r;
  EXPECT_EQ(variables(aot[0]), variables(aot[1]));
  EXPECT_NE(variables(aot[0]), initial) << "nothing trained";
}

// --- (f) Errors
// ----------------------------------------------------------------

std::string compileError(const graph::GraphDef &def, JitOptions options) {
  options.useCache = false;
  JitCompiler jit(options);
  auto model = jitCompileGraph(jit, def, "Model", [](llvm::StringRef) {});
  if (model)
    return "(compiled)";
  return llvm::toString(model.takeError());
}

TEST(DistributedStep, ReplicasOnCudaIsOneLine) {
  JitOptions options;
  options.replicas = 2;
  options.target.device = Device::Cuda;
  options.target.gpuArch = "sm_90";
  EXPECT_EQ(compileError(mlp(train::GradientDescentOptimizer(0.1)), options),
            "Model: JitOptions::replicas = 2: only for the CPU target (NCCL "
            "for CUDA replicas is not built yet)");
}

TEST(DistributedStep, NegativeReplicasIsOneLine) {
  JitOptions options;
  options.replicas = -2;
  EXPECT_EQ(compileError(mlp(train::GradientDescentOptimizer(0.1)), options),
            "Model: JitOptions::replicas = -2: not in 0..1048576");
}

TEST(DistributedStep, GatheredRowsThatDoNotFitFailOnEveryReplica) {
  // Replica 0 has 1 id per example, replica 1 has 3: replica 0's step holds
  // 2 x 6 gathered rows, the replicas have 24. Every replica fails with the
  // same line (replica 1, which could hold them, does not wait for replica
  // 0 in the gather).
  graph::GraphDef def = bag(train::AdagradOptimizer(0.3));
  JitOptions options;
  options.replicas = 2;
  auto models = compileReplicas(def, 2, options);
  ASSERT_FALSE(models.empty());
  Shards shards = makeShards("bag", 2, 13, [](int r) { return 1 + 2 * r; });
  std::vector<std::string> errors = onReplicas(2, [&](int r) {
    JitModel &m = *models[static_cast<size_t>(r)];
    feed(m, m.function_index("train"), shards[0][static_cast<size_t>(r)]);
    m.run("train");
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              "all_gather: the replicas' sparse gradients have 24 rows in all, "
              "more than the 12 (replicas x its own 6) replica 0's step "
              "holds: the replicas' sparse inputs differ in size")
        << "replica " << r;
}

} // namespace
} // namespace estc
