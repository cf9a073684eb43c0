//===- Distributed.cpp - MultiWorkerMirroredStrategy's side of train() ---===//

#include "estimator/Distributed.h"

#include "estimator/Input.h"
#include "estimator/Logging.h"
#include "runtime/CompiledModel.h"
#include "runtime/distribute/Distribute.h"

#include <cstring>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

namespace {

/// The chief's job name: "chief", or the legacy "master".
std::string chiefJob(const ClusterSpec &cluster) {
  return cluster.count(TaskType::MASTER) ? TaskType::MASTER : TaskType::CHIEF;
}

/// "host" of "host:port" ("[::1]:2222" gives "::1").
std::string hostOf(const std::string &address) {
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close != std::string::npos)
      return address.substr(1, close - 1);
  }
  size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

} // namespace

void checkTrainingCluster(const RunConfig &config, const std::string &who) {
  const ClusterSpec &cluster = config.cluster_spec();
  if (cluster.empty() || config.num_worker_replicas() <= 1)
    return;
  std::string chief = chiefJob(cluster);
  for (const auto &[job, tasks] : cluster)
    if (job != chief && job != TaskType::WORKER)
      throw std::invalid_argument(
          who + ": TF_CONFIG has a job '" + job +
          "': MultiWorkerMirroredStrategy trains with 'chief' and 'worker' "
          "jobs only ('evaluator' tasks are not part of the cluster)");
  if (!config.train_distribute())
    throw std::invalid_argument(
        who + ": TF_CONFIG has " +
        std::to_string(config.num_worker_replicas()) +
        " training tasks (chief and workers), but RunConfig has no "
        "train_distribute: set RunConfigOptions::train_distribute = "
        "MultiWorkerMirroredStrategy{} to train them as one job");
}

ReplicaGroup::ReplicaGroup(const RunConfig &config) {
  const MultiWorkerMirroredStrategy &strategy = *config.train_distribute();
  const ClusterSpec &cluster = config.cluster_spec();
  std::string chief = chiefJob(cluster);
  int size = static_cast<int>(config.num_worker_replicas());
  int rank = static_cast<int>(config.global_id_in_cluster().value_or(0));
  // Ranks: the chief, then the workers by index (RunConfig's global ids).
  std::vector<std::string> addresses;
  names_.push_back(chief + ":0");
  addresses.push_back(cluster.at(chief).at(0));
  if (auto w = cluster.find(TaskType::WORKER); w != cluster.end())
    for (size_t i = 0; i < w->second.size(); ++i) {
      names_.push_back(std::string(TaskType::WORKER) + ":" + std::to_string(i));
      addresses.push_back(w->second[i]);
    }
  bool mpi =
      strategy.communication == "mpi" || (strategy.communication == "auto" &&
                                          rt::distribute::launched_by_mpirun());
  if (mpi) {
    collective_ = rt::distribute::connect_mpi(strategy.timeout_secs);
    if (collective_->size() != size || collective_->rank() != rank)
      throw std::invalid_argument(
          "train_distribute: mpirun started " +
          std::to_string(collective_->size()) + " processes and this is rank " +
          std::to_string(collective_->rank()) + ", but TF_CONFIG makes it " +
          names_.at(rank) + " (rank " + std::to_string(rank) + ") of " +
          std::to_string(size) + " replicas");
  } else {
    rt::distribute::GlooOptions o;
    o.rank = rank;
    o.size = size;
    o.rendezvous = addresses.at(0);
    o.host = hostOf(addresses.at(rank));
    o.task_names = names_;
    o.addresses = addresses;
    o.timeout_secs = strategy.timeout_secs;
    collective_ = rt::distribute::connect_gloo(o);
  }
  log_info("MultiWorkerMirroredStrategy: " + names_.at(rank) + " joined " +
           std::to_string(size) + " replicas (" + collective_->engine() + ")");
}

ReplicaGroup::~ReplicaGroup() {
  if (rt::collective() == collective_.get())
    rt::setCollective(nullptr);
}

void ReplicaGroup::broadcast_variables(rt::CompiledModel &m) {
  for (int i = 0; i < m.spec().numVariables; ++i) {
    if (m.spec().variables[i].local)
      continue;
    collective_->broadcast(m.variable_data(i),
                           static_cast<size_t>(m.variable_bytes(i)), 0);
  }
}

std::vector<std::string> ReplicaGroup::all_gather(const std::string &mine) {
  size_t n = static_cast<size_t>(size());
  std::vector<int64_t> lengths(n, 0);
  lengths[static_cast<size_t>(rank())] = static_cast<int64_t>(mine.size());
  collective_->allReduceSum(lengths.data(), n);
  std::vector<size_t> bytes(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r)
    total += bytes[r] = static_cast<size_t>(lengths[r]);
  std::string all(total, '\0');
  collective_->allGatherV(mine.data(), all.data(), bytes.data());
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    out.push_back(all.substr(at, bytes[r]));
    at += bytes[r];
  }
  return out;
}

std::string
ReplicaGroup::broadcast_input_states(const std::map<int, std::string> &states) {
  size_t n = static_cast<size_t>(size());
  // Every replica's length (0: none), then the states back to back, in
  // rank order (the map's).
  std::vector<int64_t> lengths(n, 0);
  std::string all;
  if (rank() == 0)
    for (const auto &[r, state] : states)
      if (r >= 0 && static_cast<size_t>(r) < n) {
        lengths[static_cast<size_t>(r)] = static_cast<int64_t>(state.size());
        all += state;
      }
  collective_->broadcast(lengths.data(), n * sizeof(int64_t), 0);
  size_t total = 0, at = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == static_cast<size_t>(rank()))
      at = total;
    total += static_cast<size_t>(lengths[r]);
  }
  all.resize(total);
  collective_->broadcast(all.data(), total, 0);
  return all.substr(at,
                    static_cast<size_t>(lengths[static_cast<size_t>(rank())]));
}

std::string replicaInputStateTensor(int rank) {
  return rank == 0 ? std::string(kInputStateTensor)
                   : std::string(kInputStateTensor) + "/replica_" +
                         std::to_string(rank);
}

} // namespace detail
} // namespace estimator
} // namespace estc
