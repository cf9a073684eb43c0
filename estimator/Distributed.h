//===- Distributed.h - MultiWorkerMirroredStrategy's side of train() -----===//
//
// Internal to the Estimator (docs/design/distributed.md). What train() does
// differently as one replica of a synchronous job: it joins the group once
// per Estimator (the engine RunConfig's train_distribute names), starts
// from the chief's variables, agrees with the other replicas before every
// step on whether to run it, and hands the chief every replica's input
// position for its checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_DISTRIBUTED_H
#define ESTC_ESTIMATOR_DISTRIBUTED_H

#include "estimator/RunConfig.h"
#include "runtime/Collective.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace estc {
namespace rt {
class CompiledModel;
} // namespace rt

namespace estimator {
namespace detail {

/// Refuses, with one std::invalid_argument line naming what is at fault, a
/// cluster without a ps job (ParameterServers.h's) train() cannot run: a
/// job other than chief and worker under train_distribute, several workers
/// without train_distribute. `who` starts the message ("Estimator.train").
void checkTrainingCluster(const RunConfig &config, const std::string &who);

/// This process's connection to the other replicas of its job.
class ReplicaGroup {
public:
  /// Joins the group RunConfig describes (blocks until every replica has
  /// joined); rt::CollectiveError (one line) when it cannot within the
  /// strategy's timeout.
  explicit ReplicaGroup(const RunConfig &config);
  ~ReplicaGroup();

  rt::Collective &collective() { return *collective_; }
  int rank() const { return collective_->rank(); }
  int size() const { return collective_->size(); }
  /// "chief:0", "worker:1", ...
  const std::string &task_name(int rank) const { return names_.at(rank); }

  /// Every replica's variables (all but the local ones: weights, optimizer
  /// slots, global_step) := the chief's.
  void broadcast_variables(rt::CompiledModel &m);

  /// `states` (replica rank -> input position) from the chief to everyone;
  /// returns this replica's ("" when the chief has none for it).
  std::string broadcast_input_states(const std::map<int, std::string> &states);

  /// Every replica's `mine`, gathered on every replica, by rank.
  std::vector<std::string> all_gather(const std::string &mine);

private:
  std::unique_ptr<rt::Collective> collective_;
  std::vector<std::string> names_;
};

/// The checkpoint tensor of replica `rank`'s input position (the chief's is
/// kInputStateTensor itself).
std::string replicaInputStateTensor(int rank);

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_DISTRIBUTED_H
