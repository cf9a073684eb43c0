//===- RunConfig.cpp - tf.estimator.RunConfig ----------------------------===//

#include "estimator/RunConfig.h"

#include "estimator/Logging.h"
#include "lib/Support/Json.h"
#include "runtime/distribute/Launcher.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace {

// The error names TF_CONFIG's keys and values; their control characters
// are escaped (\n, \x01) so that it stays one line.
[[noreturn]] void fail(const std::string &message) {
  std::string line = "RunConfig: ";
  for (unsigned char c : message) {
    if (c == '\n') {
      line += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      line += buf;
    } else {
      line += static_cast<char>(c);
    }
  }
  throw std::invalid_argument(line);
}

const char *kSaveCkptError =
    "save_checkpoints_steps and save_checkpoints_secs cannot be both set";

std::string jobList(const ClusterSpec &cluster) {
  std::string out;
  for (const auto &job : cluster)
    out += (out.empty() ? "" : ", ") + job.first;
  return out;
}

/// TF_CONFIG's task index: a non-negative integer, or a string holding one.
int64_t taskIndex(const json::Value &value) {
  std::string text = value.text;
  if (value.kind == json::Value::Kind::Number ||
      value.kind == json::Value::Kind::String) {
    if (!text.empty() && text[0] == '-')
      fail("Task index must be non-negative number (TF_CONFIG task index " +
           text + ")");
    json::Value number;
    number.kind = json::Value::Kind::Number;
    number.text = text;
    if (std::optional<int64_t> n = number.asNonNegativeInt();
        n && !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
          return c >= '0' && c <= '9';
        }))
      return *n;
  }
  fail("TF_CONFIG task index must be an integer");
}

} // namespace

RunConfig::RunConfig(const RunConfigOptions &options)
    : RunConfig(options, [] {
        const char *env = std::getenv("TF_CONFIG");
        return std::string(env ? env : "");
      }()) {}

RunConfig RunConfig::from_tf_config(const std::string &tf_config,
                                    const RunConfigOptions &options) {
  return RunConfig(options, tf_config);
}

RunConfig::RunConfig(const RunConfigOptions &options,
                     const std::string &tf_config) {
  apply(options, /*constructing=*/true);
  parseTfConfig(tf_config);
  applyMpiWorld();
}

RunConfig RunConfig::replace(const RunConfigOptions &changes) const {
  RunConfig copy = *this;
  copy.apply(changes, /*constructing=*/false);
  return copy;
}

void RunConfig::apply(const RunConfigOptions &o, bool constructing) {
  if (o.model_dir) {
    if (o.model_dir->empty())
      fail("model_dir should be non-empty");
    model_dir_ = *o.model_dir;
  }
  if (o.tf_random_seed)
    tf_random_seed_ = o.tf_random_seed;
  if (o.save_summary_steps) {
    if (*o.save_summary_steps < 0)
      fail("save_summary_steps should be >= 0");
    save_summary_steps_ = *o.save_summary_steps;
  }
  if (o.save_checkpoints_steps && *o.save_checkpoints_steps < 0)
    fail("save_checkpoints_steps should be >= 0");
  if (o.save_checkpoints_secs && *o.save_checkpoints_secs < 0)
    fail("save_checkpoints_secs should be >= 0");
  // TF: in the constructor, the default (600 s) applies only when neither
  // is given; in replace(), setting one (non-zero) turns the other off.
  bool steps = o.save_checkpoints_steps.has_value();
  bool secs = o.save_checkpoints_secs.has_value();
  if (steps && secs) {
    if (*o.save_checkpoints_steps != 0 && *o.save_checkpoints_secs != 0)
      fail(kSaveCkptError);
    save_checkpoints_steps_ = *o.save_checkpoints_steps;
    save_checkpoints_secs_ = *o.save_checkpoints_secs;
  } else if (steps) {
    save_checkpoints_steps_ = *o.save_checkpoints_steps;
    if (constructing || save_checkpoints_steps_ != 0)
      save_checkpoints_secs_ = 0;
  } else if (secs) {
    save_checkpoints_secs_ = *o.save_checkpoints_secs;
    if (constructing || save_checkpoints_secs_ != 0)
      save_checkpoints_steps_ = 0;
  }
  if (o.keep_checkpoint_max) {
    if (*o.keep_checkpoint_max < 0)
      fail("keep_checkpoint_max should be >= 0");
    keep_checkpoint_max_ = *o.keep_checkpoint_max;
  }
  if (o.keep_checkpoint_every_n_hours) {
    if (!(*o.keep_checkpoint_every_n_hours > 0))
      fail("keep_checkpoint_every_n_hours should be > 0");
    keep_checkpoint_every_n_hours_ = *o.keep_checkpoint_every_n_hours;
  }
  if (o.checkpoint_format) {
    const std::string &f = *o.checkpoint_format;
    if (f != "auto" && f != "tf" && f != "safetensors")
      fail("checkpoint_format '" + f +
           "' should be \"tf\", \"safetensors\" or \"auto\"");
    checkpoint_format_ = f;
  }
  if (o.ps_strategy) {
    if (*o.ps_strategy != "round_robin" && *o.ps_strategy != "greedy")
      fail("ps_strategy '" + *o.ps_strategy +
           "' should be \"round_robin\" or \"greedy\"");
    ps_strategy_ = *o.ps_strategy;
  }
  if (o.sync_checkpoints)
    sync_checkpoints_ = *o.sync_checkpoints;
  if (o.log_step_count_steps) {
    if (*o.log_step_count_steps <= 0)
      fail("log_step_count_steps should be > 0");
    log_step_count_steps_ = *o.log_step_count_steps;
  }
  if (o.intra_op_parallelism_threads) {
    if (*o.intra_op_parallelism_threads < 0)
      fail("intra_op_parallelism_threads should be >= 0");
    intra_op_threads_ = *o.intra_op_parallelism_threads;
  }
  if (o.iterations_per_loop) {
    if (*o.iterations_per_loop <= 0)
      fail("iterations_per_loop should be > 0, given: " +
           std::to_string(*o.iterations_per_loop));
    iterations_per_loop_ = *o.iterations_per_loop;
  }
  if (o.train_distribute) {
    const MultiWorkerMirroredStrategy &d = *o.train_distribute;
    if (d.communication != "auto" && d.communication != "gloo" &&
        d.communication != "mpi")
      fail("train_distribute: communication '" + d.communication +
           "' should be \"auto\", \"gloo\" or \"mpi\"");
    if (!(d.timeout_secs > 0))
      fail("train_distribute: timeout_secs should be > 0, given: " +
           std::to_string(d.timeout_secs));
    train_distribute_ = d;
    if (!constructing)
      applyMpiWorld();
  }
  if (o.device) {
    const std::string &d = *o.device;
    const std::string prefix = "cuda:";
    bool digits = d.size() > prefix.size() && d.size() <= prefix.size() + 4 &&
                  d.compare(0, prefix.size(), prefix) == 0 &&
                  std::all_of(d.begin() + prefix.size(), d.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (d == "cpu") {
      device_ = d;
      cudaIndex_ = -1;
    } else if (d == "cuda" || digits) {
      cudaIndex_ = d == "cuda" ? 0 : std::stoi(d.substr(prefix.size()));
      device_ = prefix + std::to_string(cudaIndex_);
    } else {
      fail("device '" + d + "' should be \"cpu\", \"cuda\" or \"cuda:N\"");
    }
  }
}

void RunConfig::applyMpiWorld() {
  if (!train_distribute_ || train_distribute_->communication == "gloo" ||
      !cluster_spec_.empty() || task_type_ == TaskType::EVALUATOR)
    return;
  // What the launcher put in the environment, as the MPI engine reads it.
  int64_t rank = rt::distribute::mpi_rank_from_env();
  int64_t size = rt::distribute::mpi_size_from_env();
  if (rank < 0 || size <= 1 || rank >= size)
    return;
  cluster_spec_.clear();
  cluster_spec_[TaskType::CHIEF] = {"mpi:0"};
  for (int64_t r = 1; r < size; ++r)
    cluster_spec_[TaskType::WORKER].push_back("mpi:" + std::to_string(r));
  task_type_ = rank == 0 ? TaskType::CHIEF : TaskType::WORKER;
  task_id_ = rank == 0 ? 0 : rank - 1;
  is_chief_ = rank == 0;
  num_worker_replicas_ = size;
  num_ps_replicas_ = 0;
  global_id_in_cluster_ = rank;
  master_.clear();
}

void RunConfig::parseTfConfig(const std::string &text) {
  bool blank = std::all_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  });
  if (blank)
    return;
  json::Value config;
  try {
    config = json::parse(text);
  } catch (const json::ParseError &e) {
    fail(std::string("TF_CONFIG is not valid JSON: ") + e.what());
  }
  if (!config.isObject())
    fail("TF_CONFIG must be a JSON object");

  if (const json::Value *dir = config.find("model_dir")) {
    if (!dir->isString() || dir->text.empty())
      fail("TF_CONFIG model_dir must be a non-empty string");
    if (!model_dir_.empty() && model_dir_ != dir->text)
      fail("model_dir provided in RunConfig construct, if set, must have the "
           "same value as the model_dir in TF_CONFIG (model_dir: " +
           model_dir_ + ", TF_CONFIG model_dir: " + dir->text + ")");
    model_dir_ = dir->text;
  }
  if (const json::Value *service = config.find("service");
      service && !service->isObject())
    fail("If \"service\" is set in TF_CONFIG, it must be a dict");

  std::string sessionMaster, evalSessionMaster;
  bool hasSessionMaster = false;
  if (const json::Value *m = config.find("session_master")) {
    if (!m->isString())
      fail("TF_CONFIG session_master must be a string");
    sessionMaster = m->text;
    hasSessionMaster = true;
  }
  if (const json::Value *m = config.find("eval_session_master")) {
    if (!m->isString())
      fail("TF_CONFIG eval_session_master must be a string");
    evalSessionMaster = m->text;
  }

  ClusterSpec cluster;
  if (const json::Value *c = config.find("cluster")) {
    if (!c->isObject())
      fail("TF_CONFIG cluster must be an object of job name -> addresses");
    for (const auto &[job, tasks] : c->fields) {
      if (!tasks.isArray())
        fail("TF_CONFIG cluster job '" + job + "' must be a list of addresses");
      std::vector<std::string> addresses;
      for (const json::Value &a : tasks.items) {
        if (!a.isString())
          fail("TF_CONFIG cluster job '" + job +
               "' must be a list of address strings");
        addresses.push_back(a.text);
      }
      if (!addresses.empty())
        cluster[job] = std::move(addresses);
    }
  }
  std::optional<std::string> taskType;
  std::optional<int64_t> taskId;
  if (const json::Value *task = config.find("task")) {
    if (!task->isObject())
      fail("TF_CONFIG task must be an object with type and index");
    if (const json::Value *t = task->find("type")) {
      if (!t->isString())
        fail("TF_CONFIG task type must be a string");
      if (!t->text.empty())
        taskType = t->text;
    }
    if (const json::Value *i = task->find("index"))
      taskId = taskIndex(*i);
  }

  if (cluster.empty()) {
    // Local mode.
    task_type_ = taskType.value_or(TaskType::WORKER);
    task_id_ = taskId.value_or(0);
    if (task_type_ != TaskType::WORKER)
      fail("If \"cluster\" is not set in TF_CONFIG, task type must be WORKER");
    if (task_id_ != 0)
      fail("If \"cluster\" is not set in TF_CONFIG, task index must be 0");
    master_ = sessionMaster;
    evaluation_master_ = evalSessionMaster;
    is_chief_ = true;
    num_ps_replicas_ = 0;
    num_worker_replicas_ = 1;
    global_id_in_cluster_ = 0;
    return;
  }

  // Distributed mode: a "chief" (or the legacy "master") job of one node.
  std::string chief = TaskType::CHIEF;
  if (cluster.count(TaskType::MASTER)) {
    if (cluster.count(TaskType::CHIEF))
      fail("If `master` node exists in `cluster`, job `chief` is not "
           "supported");
    chief = TaskType::MASTER;
  }
  if (!cluster.count(chief))
    fail("If \"cluster\" is set in TF_CONFIG, it must have one \"" + chief +
         "\" node");
  if (cluster.at(chief).size() > 1)
    fail("The \"cluster\" in TF_CONFIG must have only one \"" + chief +
         "\" node");
  if (!taskType)
    fail("If \"cluster\" is set in TF_CONFIG, task type must be set");
  if (!taskId)
    fail("If \"cluster\" is set in TF_CONFIG, task index must be set");
  task_type_ = *taskType;
  task_id_ = *taskId;
  if (task_type_ == TaskType::EVALUATOR) {
    if (chief == TaskType::MASTER)
      fail("If `master` node exists in `cluster`, task_type `evaluator` is "
           "not supported");
    // Not part of the training cluster.
    cluster_spec_.clear();
    master_.clear();
    evaluation_master_ = evalSessionMaster;
    num_ps_replicas_ = 0;
    num_worker_replicas_ = 0;
    global_id_in_cluster_.reset();
    is_chief_ = false;
    return;
  }
  auto job = cluster.find(task_type_);
  if (job == cluster.end())
    fail(task_type_ + " is not a valid task_type in the cluster_spec (jobs: " +
         jobList(cluster) + "; from TF_CONFIG)");
  if (task_id_ >= static_cast<int64_t>(job->second.size()))
    fail(std::to_string(task_id_) + " is not a valid task_id for task_type " +
         task_type_ + " in the cluster_spec (" +
         std::to_string(job->second.size()) + " " + task_type_ +
         " tasks; from TF_CONFIG)");

  cluster_spec_ = cluster;
  if (hasSessionMaster)
    master_ = sessionMaster;
  else if (cluster.size() == 1 && cluster.begin()->second.size() == 1)
    master_.clear(); // a one-node cluster runs locally
  else
    master_ = "grpc://" + job->second[task_id_];
  evaluation_master_.clear();
  auto count = [&](const std::string &name) -> int64_t {
    auto it = cluster.find(name);
    return it == cluster.end() ? 0 : static_cast<int64_t>(it->second.size());
  };
  num_ps_replicas_ = count(TaskType::PS);
  num_worker_replicas_ = count(TaskType::WORKER) + count(chief);
  // Global ids: the chief first, then the other jobs by name, ps last.
  std::vector<std::string> order{chief};
  for (const auto &entry : cluster)
    if (entry.first != chief && entry.first != TaskType::PS)
      order.push_back(entry.first);
  if (cluster.count(TaskType::PS))
    order.push_back(TaskType::PS);
  int64_t next = 0;
  for (const std::string &name : order) {
    if (name == task_type_) {
      global_id_in_cluster_ = next + task_id_;
      break;
    }
    next += count(name);
  }
  is_chief_ = task_type_ == chief;
}

} // namespace estimator
} // namespace estc
