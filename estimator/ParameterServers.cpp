//===- ParameterServers.cpp - Parameter-server training's side of train() -===//

#include "estimator/ParameterServers.h"

#include "estimator/Logging.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "runtime/CompiledModel.h"
#include "runtime/ParameterClient.h"
#include "runtime/binding/TensorBinding.h"
#include "runtime/ps/Client.h"
#include "runtime/ps/Server.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

namespace {

/// A ps task's variables and their update: the model est-ps-task compiled
/// for the task, whose @train takes the workers' pushes as inputs.
class ModelShard final : public ps::Shard {
public:
  ModelShard(rt::CompiledModel &m, int task)
      : m_(m), task_(task), fn_(m.function_index("train")),
        globalStep_(m.find_variable("global_step")) {
    m_.set_batch(1);
  }

  std::vector<Variable> variables() override {
    std::vector<Variable> out;
    const rt::ModelSpec &spec = m_.spec();
    for (int i = 0; i < spec.numVariables; ++i) {
      const rt::VariableSpec &v = spec.variables[i];
      // Another task's global_step is a copy the pushes set (for the rules
      // that read it), not served and not saved.
      if (v.local || (i == globalStep_ && task_ != 0))
        continue;
      out.push_back({v.name, v.dtype,
                     std::vector<int64_t>(v.shape, v.shape + v.rank),
                     m_.variable_data(i)});
    }
    return out;
  }

  std::vector<ps::InputSpec> inputs() override {
    std::vector<ps::InputSpec> out;
    const rt::FunctionSpec &fn = m_.spec().functions[fn_];
    for (int i = 0; i < fn.numInputs; ++i) {
      const rt::TensorSpec &t = fn.inputs[i];
      out.push_back(
          {t.key, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.rank)});
    }
    return out;
  }

  void apply(const std::map<std::string, ps::HostTensor> &inputs,
             int64_t step) override {
    if (task_ != 0 && globalStep_ >= 0)
      std::memcpy(m_.variable_data(globalStep_), &step, sizeof step);
    const rt::FunctionSpec &fn = m_.spec().functions[fn_];
    for (int i = 0; i < fn.numInputs; ++i) {
      const rt::TensorSpec &t = fn.inputs[i];
      auto it = inputs.find(t.key);
      if (it == inputs.end())
        throw std::invalid_argument(std::string("ps:") + std::to_string(task_) +
                                    ": no input '" + t.key + "' in the push");
      if (t.rank > 0 && t.shape[0] == rt::kValuesDim)
        m_.set_values(fn_, i,
                      it->second.shape.empty() ? 0 : it->second.shape[0]);
      std::memcpy(m_.input_data(fn_, i), it->second.bytes.data(),
                  it->second.bytes.size());
    }
    m_.run(fn_);
  }

  int64_t global_step() override {
    if (task_ != 0 || globalStep_ < 0)
      return -1;
    int64_t step;
    std::memcpy(&step, m_.variable_data(globalStep_), sizeof step);
    return step;
  }

  void save(const std::string &prefix, int, int, bool sync) override {
    // The variables where they live (no copy): a task's share of a table
    // may be most of its memory.
    train::BundleWriter writer(prefix, {.num_shards = 1, .sync = sync});
    for (const Variable &v : variables()) {
      int64_t n = 1;
      for (int64_t d : v.shape)
        n *= d;
      writer.add(
          v.name, binding::toHostDType(v.dtype, "variable '" + v.name + "'"),
          v.shape,
          std::string_view(static_cast<const char *>(v.data),
                           static_cast<size_t>(n) * rt::dtypeBytes(v.dtype)));
    }
    writer.finish();
  }

private:
  rt::CompiledModel &m_;
  int task_, fn_, globalStep_;
};

/// The job's identity for its tasks (ServerOptions / ClientOptions::
/// cluster): a hash of TF_CONFIG's chief, worker and ps jobs' addresses, so
/// a task left from another job at a reused port is told apart.
std::string clusterIdentity(const RunConfig &config) {
  std::string text;
  for (const auto &[job, tasks] : config.cluster_spec())
    if (job != TaskType::EVALUATOR)
      for (const std::string &address : tasks)
        text += job + "=" + address + ";";
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

const std::vector<std::string> &psAddresses(const RunConfig &config) {
  static const std::vector<std::string> none;
  auto it = config.cluster_spec().find(TaskType::PS);
  return it == config.cluster_spec().end() ? none : it->second;
}

} // namespace

bool psTraining(const RunConfig &config) {
  return config.task_type() == TaskType::PS ||
         config.cluster_spec().count(TaskType::PS) > 0;
}

void checkPsCluster(const RunConfig &config, const std::string &who) {
  const ClusterSpec &cluster = config.cluster_spec();
  if (psAddresses(config).empty())
    throw std::invalid_argument(who + ": TF_CONFIG's task is a ps task, but "
                                      "its cluster has no 'ps' job");
  if (config.train_distribute())
    throw std::invalid_argument(
        who + ": TF_CONFIG has a 'ps' job and RunConfig has train_distribute "
              "(MultiWorkerMirroredStrategy): parameter-server training and "
              "all-reduce training are two ways to train a cluster; remove "
              "the ps job or train_distribute");
  if (!cluster.count(TaskType::CHIEF) && !cluster.count(TaskType::MASTER) &&
      !cluster.count(TaskType::WORKER))
    throw std::invalid_argument(
        who + ": TF_CONFIG has a 'ps' job but no 'chief' or 'worker' job: "
              "nothing would train");
  for (const auto &[job, tasks] : cluster)
    if (job != TaskType::CHIEF && job != TaskType::MASTER &&
        job != TaskType::WORKER && job != TaskType::PS)
      throw std::invalid_argument(
          who + ": TF_CONFIG has a job '" + job +
          "': parameter-server training has 'chief', 'worker' and 'ps' jobs "
          "('evaluator' tasks are not part of the cluster)");
  std::map<std::string, std::string> seen;
  for (const auto &[job, tasks] : cluster)
    for (size_t i = 0; i < tasks.size(); ++i) {
      std::string task = job + ":" + std::to_string(i);
      auto [it, fresh] = seen.emplace(tasks[i], task);
      if (!fresh)
        throw std::invalid_argument(who + ": TF_CONFIG gives tasks " +
                                    it->second + " and " + task +
                                    " the same address " + tasks[i]);
    }
}

void serveParameters(const RunConfig &config, rt::CompiledModel &m,
                     int64_t step) {
  int task = static_cast<int>(config.task_id());
  const std::vector<std::string> &addresses = psAddresses(config);
  if (task < 0 || task >= static_cast<int>(addresses.size()))
    throw std::invalid_argument("ps:" + std::to_string(task) +
                                ": not a task of the cluster's ps job");
  ModelShard shard(m, task);
  ps::ServerOptions options;
  options.address = addresses[task];
  options.task_index = task;
  options.num_tasks = static_cast<int>(addresses.size());
  options.replicas_to_aggregate = m.spec().psReplicasToAggregate;
  options.total_num_replicas = m.spec().psTotalNumReplicas;
  options.start_step = step;
  options.cluster = clusterIdentity(config);
  ps::Server server(shard, options);
  server.start();
  log_info("Serving the variables of ps:" + std::to_string(task) + " at " +
           addresses[task] + " until the chief ends the job (" +
           (options.replicas_to_aggregate > 0
                ? "synchronous: the mean of " +
                      std::to_string(options.replicas_to_aggregate) +
                      " workers' gradients a step"
                : std::string("asynchronous")) +
           ").");
  server.serve();
  log_info("ps:" + std::to_string(task) + ": the chief ended the job.");
}

PsWorker::PsWorker(const RunConfig &config, rt::CompiledModel &m)
    : m_(m), globalStep_(m.find_variable("global_step")) {
  ps::ClientOptions options;
  options.addresses = psAddresses(config);
  options.worker = static_cast<int>(config.global_id_in_cluster().value_or(0));
  options.cluster = clusterIdentity(config);
  tasks_ = options.addresses.size();
  client_ = std::make_unique<ps::Client>(options, m.spec());
  client_->connect();
  rt::setParameterClient(client_.get());
}

PsWorker::~PsWorker() { rt::setParameterClient(nullptr); }

void PsWorker::pull() { client_->pull_dense(m_); }

void PsWorker::push(int64_t step) {
  client_->flush(step);
  if (globalStep_ >= 0) {
    int64_t now = client_->step_after_flush();
    std::memcpy(m_.variable_data(globalStep_), &now, sizeof now);
  }
}

train::VariableMap PsWorker::variables() {
  train::VariableMap out;
  for (auto &[name, t] : client_->pull_all()) {
    TensorValue v;
    v.dtype = binding::toHostDType(t.dtype, "variable '" + name + "'");
    v.shape = t.shape;
    v.data.assign(t.bytes.data(), t.bytes.size());
    out.emplace(name, std::move(v));
  }
  return out;
}

int PsWorker::num_tasks() const { return static_cast<int>(tasks_); }

void PsWorker::save(const std::vector<std::string> &parts, int numParts,
                    bool sync) {
  client_->save(parts, numParts, sync);
}

void PsWorker::end_job() { client_->shutdown(); }

bool PsWorker::job_ended() const { return client_->job_ended(); }

} // namespace detail
} // namespace estimator
} // namespace estc
