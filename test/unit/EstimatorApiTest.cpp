//===- EstimatorApiTest.cpp - EstimatorSpec, Params, RunConfig, input ----===//

#include "estimator/EstimatorSpec.h"
#include "estimator/Input.h"
#include "estimator/RunConfig.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <gtest/gtest.h>

#include <functional>

namespace estc {
namespace estimator {
namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "no error";
}

// --- EstimatorSpec -----------------------------------------------------------

class SpecTest : public ::testing::Test {
protected:
  void SetUp() override {
    scope_.emplace(g_.mode_scope(ModeKeys::TRAIN));
    x_ = g_.placeholder("x", DType::Float32, {-1, 4});
    y_ = g_.placeholder("labels", DType::Int64, {-1});
    logits_ = layers::dense(x_, 3);
    loss_ = losses::sparse_softmax_cross_entropy(y_, logits_);
  }
  Graph g_;
  std::optional<Scope> scope_;
  Tensor x_, y_, logits_, loss_;
};

TEST_F(SpecTest, TfValidationRules) {
  EstimatorSpec train(ModeKeys::TRAIN);
  EXPECT_EQ(errorOf([&] { train.validate(); }),
            "EstimatorSpec (mode train): Missing loss");
  train.loss = loss_;
  EXPECT_EQ(errorOf([&] { train.validate(); }),
            "EstimatorSpec (mode train): Missing train_op");
  train.train_op = train::GradientDescentOptimizer(0.1).minimize(loss_);
  EXPECT_EQ(errorOf([&] { train.validate(); }), "no error");

  EstimatorSpec eval(ModeKeys::EVAL);
  EXPECT_EQ(errorOf([&] { eval.validate(); }),
            "EstimatorSpec (mode eval): Missing loss");
  eval.loss = logits_;
  EXPECT_EQ(errorOf([&] { eval.validate(); }),
            "EstimatorSpec (mode eval): Loss must be scalar, given: "
            "'train/dense/BiasAdd' of shape [?,3]");
  eval.loss = loss_;
  EXPECT_EQ(errorOf([&] { eval.validate(); }), "no error");
  Tensor classes = argmax(logits_, 1);
  eval.eval_metric_ops = {{"loss", metrics::accuracy(y_, classes)}};
  EXPECT_EQ(errorOf([&] { eval.validate(); }),
            "EstimatorSpec (mode eval): metric name 'loss' is reserved (the "
            "evaluation reports it); rename the metric");
  eval.eval_metric_ops = {{"global_step", metrics::mean(loss_)}};
  EXPECT_EQ(errorOf([&] { eval.validate(); }),
            "EstimatorSpec (mode eval): metric name 'global_step' is reserved "
            "(the evaluation reports it); rename the metric");
  eval.eval_metric_ops = {{"acc", metrics::accuracy(y_, classes, {}, "a1")},
                          {"acc", metrics::accuracy(y_, classes, {}, "a2")}};
  EXPECT_EQ(errorOf([&] { eval.validate(); }),
            "EstimatorSpec (mode eval): metric 'acc' is given twice");

  EstimatorSpec predict(ModeKeys::PREDICT);
  EXPECT_EQ(errorOf([&] { predict.validate(); }),
            "EstimatorSpec (mode predict): Missing predictions");
  predict.predictions = {{"classes", classes}};
  EXPECT_EQ(errorOf([&] { predict.validate(); }), "no error");
  predict.export_outputs["serving_default"] = ExportOutput();
  EXPECT_EQ(errorOf([&] { predict.validate(); }),
            "EstimatorSpec (mode predict): export output 'serving_default' has "
            "no tensors");

  Tensor intLoss = cast(loss_, DType::Int32);
  EstimatorSpec intSpec(ModeKeys::EVAL);
  intSpec.loss = intLoss;
  EXPECT_NE(errorOf([&] { intSpec.validate(); }).find("must be a float"),
            std::string::npos);
}

TEST_F(SpecTest, SignatureRoundTrip) {
  EstimatorSpec spec(ModeKeys::TRAIN);
  spec.loss = loss_;
  spec.predictions = {{"logits", logits_}};
  Signature sig = spec.signature();
  EXPECT_EQ(sig.loss.name(), loss_.name());
  EstimatorSpec back = EstimatorSpec::from_signature(ModeKeys::TRAIN, sig);
  EXPECT_EQ(back.loss.name(), loss_.name());
  EXPECT_TRUE(back.predictions.contains("logits"));
}

TEST_F(SpecTest, ModeSignatureKeepsWhatTheModeComputes) {
  for (ModeKeys mode : {ModeKeys::TRAIN, ModeKeys::EVAL, ModeKeys::PREDICT}) {
    EstimatorSpec spec(mode);
    spec.loss = loss_;
    spec.predictions = {{"logits", logits_}};
    Signature sig = spec.mode_signature();
    SCOPED_TRACE(mode_key(mode));
    EXPECT_EQ(sig.predictions.empty(), mode != ModeKeys::PREDICT);
    EXPECT_EQ(sig.loss.valid(), mode != ModeKeys::PREDICT);
  }
}

TEST(DefaultGraphTest, OutsideAModelFn) {
  EXPECT_THROW(get_default_graph(), std::logic_error);
}

// --- Params ------------------------------------------------------------------

TEST(ParamsTest, TypedAccessAndErrors) {
  Params p{{"units", 32},
           {"lr", 0.1},
           {"name", "mlp"},
           {"hidden", std::vector<int64_t>{256, 128}},
           {"dropout", true}};
  EXPECT_EQ(p.get<int64_t>("units"), 32);
  EXPECT_EQ(p.get<int>("units"), 32);
  EXPECT_DOUBLE_EQ(p.get<double>("units"), 32.0); // an int converts
  EXPECT_DOUBLE_EQ(p.get<double>("lr"), 0.1);
  EXPECT_EQ(p.get<std::string>("name"), "mlp");
  EXPECT_EQ(p.get<std::vector<int64_t>>("hidden"),
            (std::vector<int64_t>{256, 128}));
  EXPECT_TRUE(p.get<bool>("dropout"));
  EXPECT_EQ(p.get<int64_t>("missing", 7), 7);
  EXPECT_EQ(errorOf([&] { p.get<double>("missing"); }), "params: no 'missing'");
  EXPECT_EQ(errorOf([&] { p.get<int64_t>("lr"); }),
            "params: 'lr' is a double, not a int");
  EXPECT_EQ(errorOf([&] { p.get<std::string>("units"); }),
            "params: 'units' is a int, not a string");
  p.set("units", 64);
  EXPECT_EQ(p.get<int>("units"), 64);
}

// --- RunConfig ---------------------------------------------------------------

TEST(RunConfigTest, DefaultsAreTfs) {
  RunConfig c = RunConfig::from_tf_config("");
  EXPECT_EQ(c.model_dir(), "");
  EXPECT_FALSE(c.tf_random_seed());
  EXPECT_EQ(c.save_summary_steps(), 100);
  EXPECT_EQ(c.save_checkpoints_steps(), 0);
  EXPECT_EQ(c.save_checkpoints_secs(), 600);
  EXPECT_EQ(c.keep_checkpoint_max(), 5);
  EXPECT_EQ(c.keep_checkpoint_every_n_hours(), 10000);
  EXPECT_EQ(c.log_step_count_steps(), 100);
  EXPECT_EQ(c.intra_op_parallelism_threads(), 0);
  EXPECT_EQ(c.device(), "cpu");
  EXPECT_FALSE(c.on_cuda());
  EXPECT_EQ(c.cuda_device_index(), -1);
  EXPECT_TRUE(c.is_chief());
  EXPECT_EQ(c.task_type(), "worker");
  EXPECT_EQ(c.task_id(), 0);
  EXPECT_EQ(c.num_worker_replicas(), 1);
  EXPECT_EQ(c.num_ps_replicas(), 0);
  EXPECT_EQ(c.master(), "");
  EXPECT_TRUE(c.cluster_spec().empty());
}

TEST(RunConfigTest, CheckpointStepsAndSecsExcludeEachOther) {
  RunConfigOptions steps;
  steps.save_checkpoints_steps = 100;
  RunConfig a = RunConfig::from_tf_config("", steps);
  EXPECT_EQ(a.save_checkpoints_steps(), 100);
  EXPECT_EQ(a.save_checkpoints_secs(), 0);

  RunConfigOptions both = steps;
  both.save_checkpoints_secs = 60;
  EXPECT_EQ(errorOf([&] { RunConfig::from_tf_config("", both); }),
            "RunConfig: save_checkpoints_steps and save_checkpoints_secs "
            "cannot be both set");

  // replace() of one turns the other off.
  RunConfigOptions secs;
  secs.save_checkpoints_secs = 30;
  RunConfig b = a.replace(secs);
  EXPECT_EQ(b.save_checkpoints_secs(), 30);
  EXPECT_EQ(b.save_checkpoints_steps(), 0);
  RunConfig c = b.replace(steps);
  EXPECT_EQ(c.save_checkpoints_steps(), 100);
  EXPECT_EQ(c.save_checkpoints_secs(), 0);
  EXPECT_EQ(errorOf([&] { c.replace(both); }),
            "RunConfig: save_checkpoints_steps and save_checkpoints_secs "
            "cannot be both set");
  // Both off is allowed (no checkpoints).
  RunConfigOptions off;
  off.save_checkpoints_secs = 0;
  off.save_checkpoints_steps = 0;
  RunConfig d = c.replace(off);
  EXPECT_EQ(d.save_checkpoints_steps(), 0);
  EXPECT_EQ(d.save_checkpoints_secs(), 0);
}

TEST(RunConfigTest, ReplaceKeepsOtherFieldsAndValidates) {
  RunConfigOptions o;
  o.model_dir = "/tmp/m";
  o.tf_random_seed = 42;
  o.keep_checkpoint_max = 3;
  RunConfig a = RunConfig::from_tf_config("", o);
  RunConfigOptions r;
  r.save_summary_steps = 10;
  RunConfig b = a.replace(r);
  EXPECT_EQ(b.model_dir(), "/tmp/m");
  EXPECT_EQ(b.tf_random_seed(), 42);
  EXPECT_EQ(b.keep_checkpoint_max(), 3);
  EXPECT_EQ(b.save_summary_steps(), 10);
  EXPECT_EQ(a.save_summary_steps(), 100); // immutable

  auto bad = [&](auto set) {
    RunConfigOptions x;
    set(x);
    return errorOf([&] { a.replace(x); });
  };
  EXPECT_EQ(bad([](RunConfigOptions &x) { x.model_dir = ""; }),
            "RunConfig: model_dir should be non-empty");
  EXPECT_EQ(bad([](RunConfigOptions &x) { x.save_summary_steps = -1; }),
            "RunConfig: save_summary_steps should be >= 0");
  EXPECT_EQ(bad([](RunConfigOptions &x) { x.save_checkpoints_steps = -1; }),
            "RunConfig: save_checkpoints_steps should be >= 0");
  EXPECT_EQ(bad([](RunConfigOptions &x) { x.keep_checkpoint_max = -1; }),
            "RunConfig: keep_checkpoint_max should be >= 0");
  EXPECT_EQ(
      bad([](RunConfigOptions &x) { x.keep_checkpoint_every_n_hours = 0; }),
      "RunConfig: keep_checkpoint_every_n_hours should be > 0");
  EXPECT_EQ(bad([](RunConfigOptions &x) { x.log_step_count_steps = 0; }),
            "RunConfig: log_step_count_steps should be > 0");
  EXPECT_EQ(
      bad([](RunConfigOptions &x) { x.intra_op_parallelism_threads = -2; }),
      "RunConfig: intra_op_parallelism_threads should be >= 0");
  for (const char *device : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU",
                             "cuda:123456", "/device:GPU:0"})
    EXPECT_EQ(bad([&](RunConfigOptions &x) { x.device = device; }),
              std::string("RunConfig: device '") + device +
                  "' should be \"cpu\", \"cuda\" or \"cuda:N\"")
        << device;
}

TEST(RunConfigTest, CheckpointFormat) {
  RunConfig a = RunConfig::from_tf_config("");
  EXPECT_EQ(a.checkpoint_format(), "auto");
  for (const char *format : {"tf", "safetensors", "auto"}) {
    RunConfigOptions o;
    o.checkpoint_format = format;
    EXPECT_EQ(RunConfig::from_tf_config("", o).checkpoint_format(), format);
  }
  RunConfigOptions tf;
  tf.checkpoint_format = "tf";
  RunConfig b = a.replace(tf);
  EXPECT_EQ(b.checkpoint_format(), "tf");
  RunConfigOptions other;
  other.keep_checkpoint_max = 2;
  EXPECT_EQ(b.replace(other).checkpoint_format(), "tf"); // kept
  for (const char *format : {"", "TF", "tensorflow", "bundle", "h5"}) {
    RunConfigOptions o;
    o.checkpoint_format = format;
    EXPECT_EQ(errorOf([&] { b.replace(o); }),
              std::string("RunConfig: checkpoint_format '") + format +
                  "' should be \"tf\", \"safetensors\" or \"auto\"")
        << format;
  }
}

TEST(RunConfigTest, PsStrategy) {
  RunConfig a = RunConfig::from_tf_config("");
  EXPECT_EQ(a.ps_strategy(), "round_robin");
  RunConfigOptions greedy;
  greedy.ps_strategy = "greedy";
  RunConfig b = a.replace(greedy);
  EXPECT_EQ(b.ps_strategy(), "greedy");
  EXPECT_EQ(b.replace(RunConfigOptions{}).ps_strategy(), "greedy"); // kept
  RunConfigOptions bad;
  bad.ps_strategy = "GreedyLoadBalancingStrategy";
  EXPECT_EQ(errorOf([&] { a.replace(bad); }),
            "RunConfig: ps_strategy 'GreedyLoadBalancingStrategy' should be "
            "\"round_robin\" or \"greedy\"");
}

TEST(RunConfigTest, SyncCheckpoints) {
  // Synced by default (a checkpoint survives a power loss); false as TF's
  // Saver; replace() keeps it unless it is given.
  RunConfig a = RunConfig::from_tf_config("", {});
  EXPECT_TRUE(a.sync_checkpoints());
  RunConfigOptions unsynced;
  unsynced.sync_checkpoints = false;
  RunConfig b = a.replace(unsynced);
  EXPECT_FALSE(b.sync_checkpoints());
  RunConfigOptions other;
  other.keep_checkpoint_max = 2;
  EXPECT_FALSE(b.replace(other).sync_checkpoints());
}

TEST(RunConfigTest, Device) {
  RunConfigOptions o;
  o.device = "cuda";
  RunConfig cuda = RunConfig::from_tf_config("", o);
  EXPECT_EQ(cuda.device(), "cuda:0");
  EXPECT_TRUE(cuda.on_cuda());
  EXPECT_EQ(cuda.cuda_device_index(), 0);
  o.device = "cuda:3";
  RunConfig third = cuda.replace(o);
  EXPECT_EQ(third.device(), "cuda:3");
  EXPECT_EQ(third.cuda_device_index(), 3);
  EXPECT_EQ(cuda.device(), "cuda:0"); // immutable
  o.device = "cpu";
  RunConfig cpu = third.replace(o);
  EXPECT_FALSE(cpu.on_cuda());
  EXPECT_EQ(cpu.cuda_device_index(), -1);
  RunConfigOptions other;
  other.save_summary_steps = 5;
  EXPECT_EQ(third.replace(other).device(), "cuda:3"); // kept by replace()
}

const char *kCluster =
    R"("cluster": {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
                   "worker": ["host3:2222", "host4:2222", "host5:2222"]})";

RunConfig fromTask(const std::string &type, int index) {
  return RunConfig::from_tf_config(
      std::string("{") + kCluster + R"(, "task": {"type": ")" + type +
      R"(", "index": )" + std::to_string(index) + "}}");
}

TEST(RunConfigTest, TfConfigWorkerChiefEvaluatorPs) {
  RunConfig worker = fromTask("worker", 1);
  EXPECT_EQ(worker.master(), "grpc://host4:2222");
  EXPECT_EQ(worker.task_type(), "worker");
  EXPECT_EQ(worker.task_id(), 1);
  EXPECT_EQ(worker.num_ps_replicas(), 2);
  EXPECT_EQ(worker.num_worker_replicas(), 4);
  EXPECT_FALSE(worker.is_chief());
  EXPECT_EQ(worker.cluster_spec().at("worker").size(), 3u);
  EXPECT_EQ(worker.global_id_in_cluster(), 2); // chief 0, workers 1..3

  RunConfig chief = fromTask("chief", 0);
  EXPECT_EQ(chief.master(), "grpc://host0:2222");
  EXPECT_TRUE(chief.is_chief());
  EXPECT_EQ(chief.num_worker_replicas(), 4);
  EXPECT_EQ(chief.global_id_in_cluster(), 0);

  RunConfig ps = fromTask("ps", 1);
  EXPECT_FALSE(ps.is_chief());
  EXPECT_EQ(ps.master(), "grpc://host2:2222");
  EXPECT_EQ(ps.global_id_in_cluster(), 5); // ps last

  RunConfig evaluator = fromTask("evaluator", 0);
  EXPECT_EQ(evaluator.master(), "");
  EXPECT_EQ(evaluator.task_type(), "evaluator");
  EXPECT_EQ(evaluator.num_ps_replicas(), 0);
  EXPECT_EQ(evaluator.num_worker_replicas(), 0);
  EXPECT_TRUE(evaluator.cluster_spec().empty());
  EXPECT_FALSE(evaluator.is_chief());
  EXPECT_FALSE(evaluator.global_id_in_cluster());

  // A one-node cluster runs locally; session_master wins.
  RunConfig single = RunConfig::from_tf_config(
      R"({"cluster": {"chief": ["h:1"]}, "task": {"type": "chief", "index": 0}})");
  EXPECT_EQ(single.master(), "");
  EXPECT_TRUE(single.is_chief());
  RunConfig withMaster = RunConfig::from_tf_config(
      std::string("{") + kCluster +
      R"(, "task": {"type": "worker", "index": "2"}, "session_master": "grpc://m:1"})");
  EXPECT_EQ(withMaster.master(), "grpc://m:1");
  EXPECT_EQ(withMaster.task_id(), 2);

  // Legacy "master" job.
  RunConfig legacy = RunConfig::from_tf_config(
      R"({"cluster": {"master": ["m:1"], "worker": ["w:1"]},
          "task": {"type": "master", "index": 0}})");
  EXPECT_TRUE(legacy.is_chief());
  EXPECT_EQ(legacy.num_worker_replicas(), 2);

  // model_dir from TF_CONFIG.
  RunConfig dir = RunConfig::from_tf_config(R"({"model_dir": "/tmp/tf"})");
  EXPECT_EQ(dir.model_dir(), "/tmp/tf");
}

TEST(RunConfigTest, TfConfigErrorsAreTfs) {
  auto err = [](const std::string &json) {
    return errorOf([&] { RunConfig::from_tf_config(json); });
  };
  EXPECT_EQ(err(R"({"task": {"type": "ps", "index": 0}})"),
            "RunConfig: If \"cluster\" is not set in TF_CONFIG, task type must "
            "be WORKER");
  EXPECT_EQ(err(R"({"task": {"type": "worker", "index": 1}})"),
            "RunConfig: If \"cluster\" is not set in TF_CONFIG, task index "
            "must be 0");
  EXPECT_EQ(
      err(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})"),
      "RunConfig: If \"cluster\" is set in TF_CONFIG, it must have one "
      "\"chief\" node");
  EXPECT_EQ(
      err(R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})"),
      "RunConfig: The \"cluster\" in TF_CONFIG must have only one "
      "\"chief\" node");
  EXPECT_EQ(err(std::string("{") + kCluster + "}"),
            "RunConfig: If \"cluster\" is set in TF_CONFIG, task type must be "
            "set");
  EXPECT_EQ(
      err(std::string("{") + kCluster + R"(, "task": {"type": "worker"}})"),
      "RunConfig: If \"cluster\" is set in TF_CONFIG, task index must "
      "be set");
  EXPECT_EQ(err(std::string("{") + kCluster +
                R"(, "task": {"type": "worker", "index": -1}})"),
            "RunConfig: Task index must be non-negative number (TF_CONFIG task "
            "index -1)");
  EXPECT_EQ(err(std::string("{") + kCluster +
                R"(, "task": {"type": "trainer", "index": 0}})"),
            "RunConfig: trainer is not a valid task_type in the cluster_spec "
            "(jobs: chief, ps, worker; from TF_CONFIG)");
  EXPECT_EQ(err(std::string("{") + kCluster +
                R"(, "task": {"type": "worker", "index": 3}})"),
            "RunConfig: 3 is not a valid task_id for task_type worker in the "
            "cluster_spec (3 worker tasks; from TF_CONFIG)");
  EXPECT_EQ(
      err(R"({"cluster": {"master": ["m:1"], "chief": ["c:1"]}, "task": {"type": "master", "index": 0}})"),
      "RunConfig: If `master` node exists in `cluster`, job `chief` is "
      "not supported");
  EXPECT_EQ(err("{not json"),
            "RunConfig: TF_CONFIG is not valid JSON: at byte 1: expected a "
            "string key");
  RunConfigOptions o;
  o.model_dir = "/a";
  EXPECT_EQ(
      errorOf([&] { RunConfig::from_tf_config(R"({"model_dir": "/b"})", o); }),
      "RunConfig: model_dir provided in RunConfig construct, if set, "
      "must have the same value as the model_dir in TF_CONFIG "
      "(model_dir: /a, TF_CONFIG model_dir: /b)");
  // Found by fuzzing (test/fuzz/regressions/tf_config): a name from
  // TF_CONFIG with a newline made the error two lines.
  EXPECT_EQ(
      err(R"({"cluster": {"chief": ["h:1"]}, "task": {"type": "x\ny", "index": 0}})"),
      "RunConfig: x\\ny is not a valid task_type in the cluster_spec (jobs: "
      "chief; from TF_CONFIG)");
}

TEST(RunConfigTest, ReadsTheEnvironment) {
  ::setenv("TF_CONFIG", R"({"task": {"type": "ps", "index": 0}})", 1);
  EXPECT_THROW(RunConfig(), std::invalid_argument);
  ::setenv("TF_CONFIG",
           R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]},
               "task": {"type": "worker", "index": 0}})",
           1);
  RunConfig c;
  EXPECT_FALSE(c.is_chief());
  EXPECT_EQ(c.master(), "grpc://w:1");
  ::unsetenv("TF_CONFIG");
  EXPECT_TRUE(RunConfig().is_chief());
}

TEST(RunConfigTest, TrainDistribute) {
  RunConfigOptions o;
  o.train_distribute = MultiWorkerMirroredStrategy{};
  const char *tf = R"({"cluster": {"chief": ["c:1"], "worker": ["w:1", "v:1"]},
                       "task": {"type": "worker", "index": 1}})";
  RunConfig w = RunConfig::from_tf_config(tf, o);
  EXPECT_TRUE(w.distributed());
  EXPECT_EQ(w.num_worker_replicas(), 3);
  EXPECT_EQ(w.global_id_in_cluster(), 2);
  EXPECT_EQ(w.train_distribute()->communication, "auto");
  // Without a cluster, or without the strategy: not distributed.
  EXPECT_FALSE(RunConfig::from_tf_config("", o).distributed());
  EXPECT_FALSE(RunConfig::from_tf_config(tf).distributed());

  auto message = [](const std::function<void()> &fn) -> std::string {
    try {
      fn();
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
    return "no error";
  };
  RunConfigOptions bad;
  bad.train_distribute = MultiWorkerMirroredStrategy{"nccl"};
  EXPECT_EQ(message([&] { RunConfig::from_tf_config("", bad); }),
            "RunConfig: train_distribute: communication 'nccl' should be "
            "\"auto\", \"gloo\" or \"mpi\"");
  bad.train_distribute = MultiWorkerMirroredStrategy{"gloo", 0};
  EXPECT_EQ(message([&] { RunConfig::from_tf_config("", bad); }),
            "RunConfig: train_distribute: timeout_secs should be > 0, given: "
            "0.000000");
}

TEST(RunConfigTest, MpirunRanksMakeTheCluster) {
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  RunConfigOptions o;
  o.train_distribute = MultiWorkerMirroredStrategy{"mpi"};
  RunConfig c = RunConfig::from_tf_config("", o);
  EXPECT_TRUE(c.distributed());
  EXPECT_EQ(c.task_type(), "worker");
  EXPECT_EQ(c.task_id(), 1);
  EXPECT_FALSE(c.is_chief());
  EXPECT_EQ(c.num_worker_replicas(), 4);
  EXPECT_EQ(c.global_id_in_cluster(), 2);
  // Gloo ignores mpirun's variables; so does a config without the strategy.
  o.train_distribute = MultiWorkerMirroredStrategy{"gloo"};
  EXPECT_FALSE(RunConfig::from_tf_config("", o).distributed());
  EXPECT_EQ(RunConfig::from_tf_config("").num_worker_replicas(), 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  o.train_distribute = MultiWorkerMirroredStrategy{};
  EXPECT_TRUE(RunConfig::from_tf_config("", o).is_chief());
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST(DatasetTest, ShardTakesEveryNthBatch) {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i);
  Features x{{"x", TensorValue::of<float>({10, 1}, v)}};
  auto firstOfBatches = [](Dataset d) {
    std::vector<float> out;
    while (std::optional<Batch> b = d.next())
      out.push_back(b->features.at("x").values<float>()[0]);
    return out;
  };
  InputFn input = numpy_input_fn(x, std::nullopt, {2, 1, false, 0});
  EXPECT_EQ(firstOfBatches(input().shard(2, 1)), (std::vector<float>{2, 6}));
  EXPECT_EQ(firstOfBatches(input().shard(3, 0)), (std::vector<float>{0, 6}));
  EXPECT_EQ(firstOfBatches(input().shard(1, 0)),
            (std::vector<float>{0, 2, 4, 6, 8}));
  int calls = 0;
  Dataset gen = Dataset::from_generator([&]() -> std::optional<Batch> {
    if (calls == 5)
      return std::nullopt;
    Batch b;
    b.features["x"] = TensorValue::of<float>({1, 1}, {float(calls++)});
    return b;
  });
  EXPECT_EQ(firstOfBatches(std::move(gen).shard(2, 0)),
            (std::vector<float>{0, 2, 4}));
  EXPECT_THROW(input().shard(2, 2), std::invalid_argument);
}

// Dataset::map on the batches of in-memory arrays: each (features, labels)
// batch through the function, the arrays' order and position kept (a
// position saved after two batches continues with the third, mapped).
TEST(DatasetTest, MapTransformsEveryBatchAndKeepsThePosition) {
  std::vector<float> v(6);
  std::vector<int64_t> y(6);
  for (int i = 0; i < 6; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(i);
    y[static_cast<size_t>(i)] = i;
  }
  InputFn input =
      numpy_input_fn({{"x", TensorValue::of<float>({6, 1}, v)}},
                     TensorValue::of<int64_t>({6}, y), {2, 1, true, 3});
  auto doubled = [](data::Element e) {
    auto &x = std::get<TensorValue>(e.items()[0].fields().at("x").leaf());
    std::vector<float> values = x.values<float>();
    for (float &f : values)
      f *= 2;
    x = TensorValue::of<float>(x.shape, values);
    return e;
  };
  std::vector<float> plain, mapped;
  std::vector<int64_t> plainLabels, mappedLabels;
  Dataset a = input();
  while (std::optional<Batch> b = a.next()) {
    for (float f : b->features.at("x").values<float>())
      plain.push_back(2 * f);
    for (int64_t l : b->labels->values<int64_t>())
      plainLabels.push_back(l);
  }
  Dataset m = input().map(doubled);
  std::optional<std::string> after2;
  for (int i = 0; std::optional<Batch> b = m.next(); ++i) {
    for (float f : b->features.at("x").values<float>())
      mapped.push_back(f);
    for (int64_t l : b->labels->values<int64_t>())
      mappedLabels.push_back(l);
    if (i == 1)
      after2 = m.save_state();
  }
  EXPECT_EQ(mapped, plain); // shuffled as the unmapped batches, doubled
  EXPECT_EQ(mappedLabels, plainLabels);
  ASSERT_TRUE(after2);
  Dataset resumed = input().map(doubled);
  ASSERT_TRUE(resumed.restore_state(*after2));
  std::optional<Batch> third = resumed.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->features.at("x").values<float>(),
            (std::vector<float>(plain.begin() + 4, plain.end())));

  // A mapping that throws stops the input with its error.
  Dataset failing = input().map([](data::Element) -> data::Element {
    throw data::DataError("decode_raw: an image of 3 bytes");
  });
  EXPECT_THROW(failing.next(), data::DataError);
  // Before any batch only, on a pipeline only.
  Dataset read = input();
  read.next();
  EXPECT_THROW(std::move(read).map(doubled), std::logic_error);
  Dataset gen = Dataset::from_generator(
      []() -> std::optional<Batch> { return std::nullopt; });
  EXPECT_THROW(std::move(gen).map(doubled), std::logic_error);
  EXPECT_THROW(input().map(nullptr), std::invalid_argument);
}

// --- Input -------------------------------------------------------------------

Features range(int64_t n) {
  std::vector<float> v(n * 2);
  for (int64_t i = 0; i < n; ++i)
    v[2 * i] = v[2 * i + 1] = static_cast<float>(i);
  return {{"x", TensorValue::of<float>({n, 2}, v)}};
}

std::vector<std::vector<float>> firstColumn(Dataset d) {
  std::vector<std::vector<float>> out;
  while (std::optional<Batch> b = d.next()) {
    std::vector<float> v = b->features.at("x").values<float>();
    std::vector<float> col;
    for (size_t i = 0; i < v.size(); i += 2)
      col.push_back(v[i]);
    out.push_back(col);
  }
  return out;
}

TEST(InputTest, ArraysBatchesEpochsPartialBatch) {
  Dataset::ArrayOptions o;
  o.batch_size = 4;
  o.num_epochs = 2;
  auto batches = firstColumn(Dataset::from_arrays(range(5), std::nullopt, o));
  std::vector<std::vector<float>> want = {{0, 1, 2, 3}, {4, 0, 1, 2}, {3, 4}};
  EXPECT_EQ(batches, want);

  // Shuffled: each epoch a permutation, the same for the same seed.
  o.shuffle = true;
  o.seed = 3;
  o.num_epochs = 1;
  o.batch_size = 100;
  auto a = firstColumn(Dataset::from_arrays(range(50), std::nullopt, o));
  auto b = firstColumn(Dataset::from_arrays(range(50), std::nullopt, o));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 1u);
  std::vector<float> sorted = a[0];
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sorted[i], i);
  EXPECT_NE(a[0], sorted);
  o.seed = 4;
  EXPECT_NE(firstColumn(Dataset::from_arrays(range(50), std::nullopt, o)), a);

  // Forever.
  o.num_epochs = std::nullopt;
  o.batch_size = 3;
  Dataset forever = Dataset::from_arrays(range(2), std::nullopt, o);
  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(forever.next());
}

TEST(InputTest, LabelsFollowTheirRowsAndSpec) {
  Dataset::ArrayOptions o;
  o.batch_size = 3;
  o.shuffle = true;
  std::vector<int64_t> y = {0, 1, 2, 3, 4, 5, 6};
  Dataset d =
      Dataset::from_arrays(range(7), TensorValue::of<int64_t>({7}, y), o);
  std::optional<ElementSpec> spec = d.element_spec();
  ASSERT_TRUE(spec);
  ASSERT_EQ(spec->features.size(), 1u);
  EXPECT_EQ(spec->features[0].key, "x");
  EXPECT_EQ(spec->features[0].shape, (Dims{-1, 2}));
  ASSERT_TRUE(spec->labels);
  EXPECT_EQ(spec->labels->dtype, DType::Int64);
  EXPECT_EQ(spec->labels->shape, (Dims{-1}));
  int64_t total = 0;
  while (std::optional<Batch> b = d.next()) {
    std::vector<float> x = b->features.at("x").values<float>();
    std::vector<int64_t> l = b->labels->values<int64_t>();
    for (size_t i = 0; i < l.size(); ++i)
      EXPECT_EQ(static_cast<int64_t>(x[2 * i]), l[i]);
    total += b->size();
  }
  EXPECT_EQ(total, 7);
}

TEST(InputTest, GeneratorSpecFromFirstBatchIsKept) {
  int calls = 0;
  Dataset d = Dataset::from_generator([&]() -> std::optional<Batch> {
    if (calls++ == 2)
      return std::nullopt;
    Batch b;
    b.features = range(3);
    return b;
  });
  std::optional<ElementSpec> spec = d.element_spec();
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->labels);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(d.next()); // the peeked batch
  EXPECT_TRUE(d.next());
  EXPECT_FALSE(d.next());
  EXPECT_EQ(calls, 3);

  Dataset empty =
      Dataset::from_generator([]() -> std::optional<Batch> { return {}; });
  EXPECT_FALSE(empty.element_spec());
}

TEST(InputTest, BadArraysAreOneLine) {
  Dataset::ArrayOptions o;
  EXPECT_EQ(errorOf([&] { numpy_input_fn({}, std::nullopt, o); }),
            "numpy_input_fn: no features");
  o.batch_size = 0;
  EXPECT_EQ(errorOf([&] { numpy_input_fn(range(3), std::nullopt, o); }),
            "numpy_input_fn: batch_size must be >= 1, got 0");
  o.batch_size = 2;
  o.num_epochs = 0;
  EXPECT_EQ(errorOf([&] { numpy_input_fn(range(3), std::nullopt, o); }),
            "numpy_input_fn: num_epochs must be >= 1 (or unset: forever), got "
            "0");
  o.num_epochs = 1;
  Features two = range(3);
  two["z"] = TensorValue::of<float>({2}, {1, 2});
  EXPECT_EQ(errorOf([&] { numpy_input_fn(two, std::nullopt, o); }),
            "input: feature 'z' has 2 examples [2] but feature 'x' has 3");
  EXPECT_EQ(errorOf([&] {
              numpy_input_fn(range(3), TensorValue::of<int64_t>({2}, {1, 2}),
                             o);
            }),
            "input: labels [2] do not have 3 examples like feature 'x'");
  Features scalar{{"s", TensorValue::of<float>({}, {1})}};
  EXPECT_EQ(errorOf([&] { numpy_input_fn(scalar, std::nullopt, o); }),
            "input: feature 's' is a scalar; features need a batch dimension");
}

} // namespace
} // namespace estimator
} // namespace estc
