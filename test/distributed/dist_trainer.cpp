//===- dist_trainer.cpp - A trainer the distributed tests launch ---------===//
//
// One replica of a MultiWorkerMirroredStrategy job (TF_CONFIG from the
// environment, or mpirun's rank) training a canned DNNClassifier on a
// synthetic, seeded data set: --model=mlp (dense features only) or
// --model=embedding (plus an embedding of a categorical id: a sparse
// gradient). test/e2e/distributed.py launches it as the chief, workers and
// evaluator of jobs on loopback addresses; run without TF_CONFIG it trains
// alone (the single-replica reference). With a `ps` job in TF_CONFIG (and
// --no_distribute) it is a chief, worker or ps task of parameter-server
// training (test/e2e/parameter_servers.py). --dump writes this replica's final
// variables (name, dtype, shape, bytes), so the driver can compare replicas
// bit for bit and against the reference.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"
#include "estimator/Training.h"
#include "lib/Support/Flags.h"
#include "runtime/Collective.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

using namespace estc;
using namespace estc::estimator;
namespace fc = estc::feature_column;

namespace {

struct Options {
  std::string model = "mlp";
  std::string model_dir;
  std::string distribute = "auto";
  std::string dump;
  std::string optimizer = "SGD";
  int64_t batch_size = 16;
  int64_t train_steps = 20;
  int64_t save_checkpoints_steps = 5;
  std::string checkpoint_format = "auto";
  int64_t iterations_per_loop = 1;
  int64_t examples = 4096;
  int64_t seed = 7;
  int64_t step_sleep_ms = 0;
  double timeout_secs = 30;
  int64_t sync_replicas = 0;
  bool lr_decay = false;
  bool train_and_evaluate = false;
  bool no_distribute = false;
  int64_t ids = 50;
  int64_t embedding_dim = 8;
  int64_t partitions = 0;
  bool constant_embedding = false;
  std::string export_dir;
  int64_t predict = 0;
  int64_t dump_eval = 0;
  bool no_sync_checkpoints = false;
  std::string ps_strategy = "round_robin";
};

constexpr int64_t kFeatures = 16, kClasses = 4;

/// x ~ a seeded hash in [-1, 1), id in [0, ids), and a label that both
/// predict (so the loss falls).
Features features(int64_t n, int64_t seed, int64_t kIds, TensorValue *labels) {
  std::vector<float> x(static_cast<size_t>(n * kFeatures));
  std::vector<int64_t> id(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  uint64_t s = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&s] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int64_t i = 0; i < n; ++i) {
    double score = 0;
    for (int64_t j = 0; j < kFeatures; ++j) {
      float v = static_cast<float>(next() % 2000000) / 1e6f - 1.0f;
      x[static_cast<size_t>(i * kFeatures + j)] = v;
      score += (j % 3 == 0 ? 1.0 : -0.5) * v;
    }
    id[static_cast<size_t>(i)] = static_cast<int64_t>(next() % kIds);
    int64_t c = (score > 0 ? 1 : 0) + 2 * (id[static_cast<size_t>(i)] % 2);
    y[static_cast<size_t>(i)] = c;
  }
  *labels = TensorValue::of<int64_t>({n}, y);
  return {{"x", TensorValue::of<float>({n, kFeatures}, x)},
          {"id", TensorValue::of<int64_t>({n, 1}, id)}};
}

/// Writes the session's variables at the end of train().
class DumpHook : public SessionRunHook {
public:
  explicit DumpHook(std::string path) : path_(std::move(path)) {}
  void end(Session &session) override {
    std::ofstream out(path_, std::ios::binary);
    for (const std::string &name : session.variable_names()) {
      TensorValue v = session.variable_value(name);
      out << name << " " << dtype_name(v.dtype) << " [";
      for (size_t d = 0; d < v.shape.size(); ++d)
        out << (d ? "," : "") << v.shape[d];
      out << "] " << v.data.size() << "\n";
      out.write(reinterpret_cast<const char *>(v.data.data()),
                static_cast<std::streamsize>(v.data.size()));
      out << "\n";
    }
    if (!out)
      throw std::runtime_error("--dump=" + path_ + ": cannot write");
  }

private:
  std::string path_;
};

/// Sleeps after every step: gives the fault tests a window to kill in.
class SleepHook : public SessionRunHook {
public:
  explicit SleepHook(int64_t ms) : ms_(ms) {}
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
  }

private:
  int64_t ms_;
};

/// The first `n` evaluation examples as JSON :predict instances.
void dumpEval(const Options &o, int64_t n) {
  TensorValue labels;
  Features x = features(n, o.seed + 1, o.ids, &labels);
  std::vector<float> xs = x.at("x").values<float>();
  std::vector<int64_t> ids = x.at("id").values<int64_t>();
  std::cout << "[";
  for (int64_t i = 0; i < n; ++i) {
    std::cout << (i ? ", " : "") << "{\"x\": [";
    for (int64_t j = 0; j < kFeatures; ++j) {
      char v[32];
      std::snprintf(
          v, sizeof v, "%.9g",
          static_cast<double>(xs[static_cast<size_t>(i * kFeatures + j)]));
      std::cout << (j ? ", " : "") << v;
    }
    std::cout << "], \"id\": [" << ids[static_cast<size_t>(i)] << "]}";
  }
  std::cout << "]" << std::endl;
}

int run(const Options &o) {
  if (o.dump_eval > 0) {
    dumpEval(o, o.dump_eval);
    return 0;
  }
  RunConfigOptions c;
  c.model_dir = o.model_dir;
  c.tf_random_seed = o.seed;
  c.save_checkpoints_steps = o.save_checkpoints_steps;
  c.checkpoint_format = o.checkpoint_format;
  if (o.no_sync_checkpoints)
    c.sync_checkpoints = false;
  c.ps_strategy = o.ps_strategy;
  c.save_summary_steps = 1;
  c.log_step_count_steps = 5;
  c.intra_op_parallelism_threads = 1;
  c.iterations_per_loop = o.iterations_per_loop;
  if (!o.no_distribute) {
    MultiWorkerMirroredStrategy strategy;
    strategy.communication = o.distribute;
    strategy.timeout_secs = o.timeout_secs;
    c.train_distribute = strategy;
  }
  RunConfig config(c); // TF_CONFIG from the environment

  fc::FeatureColumns columns{fc::numeric_column("x", {kFeatures})};
  auto ids = fc::categorical_column_with_identity("id", o.ids);
  if (o.model != "mlp") {
    std::optional<Initializer> init;
    if (o.constant_embedding)
      init = constant_initializer(0.05);
    columns.push_back(fc::embedding_column(ids, o.embedding_dim, "mean", init));
  }
  // The embedding table (and the linear part's weights) split into
  // --partitions parts along its rows (TF 1's input_layer_partitioner).
  Partitioner partitioner =
      o.partitions > 0 ? fixed_size_partitioner(o.partitions) : nullptr;
  ClassifierOptions head;
  head.n_classes = kClasses;
  std::unique_ptr<Estimator> made;
  if (o.model == "wide_deep") {
    // Two optimizers in one step (the linear part's FTRL over the id's
    // sparse weights, the DNN's): one fused reduction, two gathers.
    DNNLinearCombinedOptions wd;
    wd.linear_feature_columns = {ids};
    wd.linear_optimizer = OptimizerSpec("Ftrl", 0.05);
    wd.dnn_feature_columns = columns;
    wd.dnn_hidden_units = {32, 16};
    wd.dnn_optimizer = OptimizerSpec(o.optimizer, 0.05);
    wd.input_layer_partitioner = partitioner;
    wd.linear_partitioner = partitioner;
    if (o.lr_decay)
      // A learning rate the step computes from global_step.
      wd.dnn_optimizer = OptimizerSpec(o.optimizer, [](const Tensor &step) {
        return train::exponential_decay(0.05, step, 5, 0.9);
      });
    made = std::make_unique<DNNLinearCombinedClassifier>(wd, head, config);
  } else {
    DNNOptions dnn;
    dnn.hidden_units = {32, 16};
    dnn.optimizer = OptimizerSpec(o.optimizer, 0.05);
    dnn.input_layer_partitioner = partitioner;
    if (o.sync_replicas > 0) {
      // An optimizer object (TF 1's slot names) wrapped for synchronous
      // parameter-server training.
      train::Optimizer base =
          o.optimizer == "Adagrad" ? train::AdagradOptimizer(0.05)
          : o.optimizer == "Adam"  ? train::AdamOptimizer(0.05)
                                   : train::GradientDescentOptimizer(0.05);
      dnn.optimizer =
          OptimizerSpec(train::SyncReplicasOptimizer(base, o.sync_replicas));
    }
    made = std::make_unique<DNNClassifier>(columns, dnn, head, config);
  }
  Estimator &estimator = *made;

  TensorValue labels;
  Features x = features(o.examples, o.seed, o.ids, &labels);
  Dataset::ArrayOptions input;
  input.batch_size = o.batch_size;
  input.num_epochs = std::nullopt;
  input.shuffle = true;
  input.seed = static_cast<uint64_t>(o.seed);
  InputFn input_fn = numpy_input_fn(x, labels, input);

  if (!o.export_dir.empty()) {
    // No training: the model_dir's latest checkpoint, exported for serving
    // (raw features "x" and "id"), and its predictions for the first
    // --predict evaluation examples, which the served model must give.
    TensorValue evalLabels;
    Features evalX = features(std::max<int64_t>(o.predict, 1), o.seed + 1,
                              o.ids, &evalLabels);
    Dataset::ArrayOptions in;
    in.batch_size = 64;
    in.num_epochs = 1;
    in.shuffle = false;
    int64_t shown = 0;
    for (const Prediction &p :
         estimator.predict(numpy_input_fn(evalX, {}, in))) {
      if (shown >= o.predict)
        break;
      std::cout << "prediction " << shown++ << ":";
      for (float v : p.at("probabilities").values<float>())
        std::cout << " " << v;
      std::cout << "\n";
    }
    std::string dir = estimator.export_saved_model(
        o.export_dir, build_raw_serving_input_receiver_fn(
                          {{"x", DType::Float32, {-1, kFeatures}},
                           {"id", DType::Int64, {-1, 1}}}));
    std::cout << "exported: " << dir << std::endl;
    return 0;
  }

  Hooks hooks;
  if (!o.dump.empty())
    hooks.push_back(std::make_shared<DumpHook>(o.dump));
  if (o.step_sleep_ms > 0)
    hooks.push_back(std::make_shared<SleepHook>(o.step_sleep_ms));

  if (o.train_and_evaluate || config.task_type() == TaskType::EVALUATOR) {
    TrainSpec train;
    train.input_fn = input_fn;
    train.max_steps = o.train_steps;
    train.hooks = hooks;
    EvalSpec eval;
    Dataset::ArrayOptions evalInput;
    evalInput.batch_size = 256;
    TensorValue evalLabels;
    Features evalX = features(1024, o.seed + 1, o.ids, &evalLabels);
    eval.input_fn = numpy_input_fn(evalX, evalLabels, evalInput);
    eval.throttle_secs = 0;
    eval.start_delay_secs = 0;
    TrainAndEvaluateResult r = train_and_evaluate(estimator, train, eval);
    if (!r.eval_result.empty())
      std::cout << "evaluation: accuracy = " << r.eval_result.at("accuracy")
                << " global_step = " << r.eval_result.at("global_step")
                << std::endl;
  } else {
    estimator.train(input_fn, {.hooks = hooks, .max_steps = o.train_steps});
  }
  rt::CollectiveStats stats = rt::collectiveStats();
  std::cout << "done: " << config.task_type() << ":" << config.task_id()
            << " collectives " << stats.calls << std::endl;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  Options o;
  flags::FlagParser parser(
      "dist_trainer", "One replica of a distributed DNNClassifier job (the "
                      "distributed tests' trainer; TF_CONFIG from the "
                      "environment).");
  parser.add(Flag("model", &o.model, "mlp, embedding or wide_deep")
                 .choices({"mlp", "embedding", "wide_deep"}));
  parser.add(Flag("model_dir", &o.model_dir, "checkpoints").value_name("DIR"));
  parser.add(Flag("distribute", &o.distribute,
                  "MultiWorkerMirroredStrategy's communication")
                 .choices({"auto", "gloo", "mpi"}));
  parser.add(Flag("no_distribute", &o.no_distribute,
                  "leave RunConfig's train_distribute unset"));
  parser.add(
      Flag("timeout_secs", &o.timeout_secs, "the strategy's timeout").min(0.1));
  parser.add(Flag("dump", &o.dump, "write the final variables to FILE")
                 .value_name("FILE"));
  parser.add(Flag("optimizer", &o.optimizer, "SGD, Adagrad, Adam, ..."));
  parser.add(Flag("batch_size", &o.batch_size, "per replica").min(1));
  parser.add(Flag("train_steps", &o.train_steps, "max_steps").min(1));
  parser.add(Flag("save_checkpoints_steps", &o.save_checkpoints_steps,
                  "checkpoint every N steps")
                 .min(1));
  parser.add(Flag("checkpoint_format", &o.checkpoint_format,
                  "RunConfig.checkpoint_format")
                 .choices({"auto", "tf", "safetensors"}));
  parser.add(Flag("iterations_per_loop", &o.iterations_per_loop,
                  "RunConfig.iterations_per_loop")
                 .min(1));
  parser.add(Flag("examples", &o.examples, "synthetic examples").min(1));
  parser.add(Flag("seed", &o.seed, "data and tf_random_seed").min(0));
  parser.add(
      Flag("step_sleep_ms", &o.step_sleep_ms, "sleep after every step").min(0));
  parser.add(Flag("sync_replicas", &o.sync_replicas,
                  "wrap the DNN's optimizer (SGD, Adagrad or Adam) in "
                  "SyncReplicasOptimizer(replicas_to_aggregate=N)")
                 .min(0));
  parser.add(Flag("lr_decay", &o.lr_decay,
                  "wide_deep: the DNN's learning rate decays with global_step "
                  "(exponential_decay(0.05, step, 5, 0.9))"));
  parser.add(Flag("train_and_evaluate", &o.train_and_evaluate,
                  "train_and_evaluate instead of train"));
  parser.add(Flag("ids", &o.ids, "the categorical id's vocabulary").min(2));
  parser.add(
      Flag("embedding_dim", &o.embedding_dim, "the id's embedding").min(1));
  parser.add(Flag("partitions", &o.partitions,
                  "split the embedding table (and wide_deep's linear "
                  "weights) into N parts: fixed_size_partitioner(N)")
                 .min(0));
  parser.add(Flag("export_dir", &o.export_dir,
                  "export the model_dir's latest checkpoint under DIR (no "
                  "training)")
                 .value_name("DIR"));
  parser.add(Flag("predict", &o.predict,
                  "with --export_dir: print the predictions of the first N "
                  "evaluation examples")
                 .min(0));
  parser.add(Flag("ps_strategy", &o.ps_strategy, "RunConfig.ps_strategy")
                 .choices({"round_robin", "greedy"}));
  parser.add(Flag("no_sync_checkpoints", &o.no_sync_checkpoints,
                  "RunConfig.sync_checkpoints = false"));
  parser.add(Flag("dump_eval", &o.dump_eval,
                  "print the first N evaluation examples as JSON :predict "
                  "instances and exit")
                 .min(0));
  parser.add(Flag("constant_embedding", &o.constant_embedding,
                  "initialize the embedding table to 0.05 (partitioned and "
                  "whole tables then start equal)"));
  parser.parse_or_exit(argc, argv);
  if (o.model_dir.empty())
    parser.fail("--model_dir is required");
  try {
    return run(o);
  } catch (const std::exception &e) {
    estc::flags::print_error_line("dist_trainer", e.what());
    return 1;
  }
}
