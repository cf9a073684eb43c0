//===- RunConfig.h - tf.estimator.RunConfig -----------------------------===//
//
// Where an Estimator writes (model_dir), how often it saves checkpoints and
// summaries and logs, its random seed and thread count, and the cluster it
// is part of (TF_CONFIG). Immutable like TF's: construct one from
// RunConfigOptions, derive others with replace().
//
//   estimator::RunConfigOptions o;
//   o.model_dir = "/tmp/mnist";
//   o.save_checkpoints_steps = 500;        // save_checkpoints_secs off
//   estimator::RunConfig config(o);
//   estimator::RunConfigOptions more;
//   more.tf_random_seed = 42;
//   estimator::RunConfig seeded = config.replace(more);
//
// TF's None is 0 here for save_summary_steps, save_checkpoints_steps,
// save_checkpoints_secs and keep_checkpoint_max (off / keep all).
// Checkpoints: save_checkpoints_secs = 600 unless save_checkpoints_steps is
// given; giving both (non-zero) is an error, and replace() of one turns the
// other off, exactly as TF's RunConfig.
//
// TF_CONFIG (the environment variable, JSON) follows TF's rules:
//   {"cluster": {"chief": ["host0:2222"], "worker": [...], "ps": [...]},
//    "task": {"type": "worker", "index": 1}, "model_dir": "..."}
// Without "cluster": task type must be "worker" and index 0 (the defaults);
// is_chief, one worker replica, no ps, master "" (or "session_master").
// With "cluster": exactly one "chief" node; the task's type and index are
// required; type must be a job of the cluster (or "evaluator", which is not
// part of the training cluster: no replicas, master "", not chief); index in
// range; master "grpc://<address>" ("" for a one-node cluster);
// num_worker_replicas counts chief + workers; is_chief only for the chief.
// A "master" job (legacy) takes the chief's place and excludes "chief".
// Every violation throws std::invalid_argument with TF's message.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_RUNCONFIG_H
#define ESTC_ESTIMATOR_RUNCONFIG_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

/// tf.estimator.RunConfig.TaskType.
namespace TaskType {
inline constexpr const char *MASTER = "master";
inline constexpr const char *PS = "ps";
inline constexpr const char *WORKER = "worker";
inline constexpr const char *CHIEF = "chief";
inline constexpr const char *EVALUATOR = "evaluator";
} // namespace TaskType

/// tf.distribute.MultiWorkerMirroredStrategy, for RunConfig's
/// train_distribute (docs/design/distributed.md): synchronous data-parallel
/// training over the chief and workers of TF_CONFIG (or the processes of
/// mpirun). Every worker runs the same steps on its own share of the input;
/// the compiled step averages the gradients over the workers before the
/// optimizer applies them, so N workers with batch B train as one with batch
/// N*B; the chief starts everyone from its variables and alone writes
/// checkpoints and summaries.
struct MultiWorkerMirroredStrategy {
  /// The collective engine: "gloo" (TCP; rendezvous at the chief's TF_CONFIG
  /// address), "mpi" (the processes of mpirun) or "auto" (MPI when mpirun
  /// started this process, else Gloo): TF's CommunicationImplementation.
  std::string communication = "auto";
  /// Bound on joining the group and on every collective: a lost or
  /// unreachable worker stops the others within it, with one line naming it.
  double timeout_secs = 60;
  /// Each worker reads every num_worker_replicas-th element of input_fn's
  /// dataset, starting at its global_id_in_cluster (tf.data's AutoShardPolicy
  /// DATA, applied to the batches). false: input_fn shards the input itself.
  bool auto_shard = true;
};

/// The replaceable fields of a RunConfig; unset fields keep their value
/// (the defaults, for a new RunConfig).
struct RunConfigOptions {
  std::optional<std::string> model_dir;
  std::optional<int64_t> tf_random_seed;
  std::optional<int64_t> save_summary_steps;           // default 100; 0: off
  std::optional<int64_t> save_checkpoints_steps;       // default off
  std::optional<double> save_checkpoints_secs;         // default 600; 0: off
  std::optional<int> keep_checkpoint_max;              // default 5; 0: all
  std::optional<double> keep_checkpoint_every_n_hours; // default 10000
  /// The format of the checkpoints train() writes (docs/checkpoint-format.md):
  /// "tf" (TF's tensor bundle, model.ckpt-N.index + .data-00000-of-00001,
  /// what a TF Estimator, tf.train.load_checkpoint and a TF Saver read),
  /// "safetensors" (estc's one-file format), or "auto" (the default): the
  /// format of the newest checkpoint model_dir's state file lists, so a TF
  /// Estimator's model_dir is continued in TF's format, else safetensors
  /// (TF's in parameter-server training, whose checkpoints are sharded
  /// saves: each ps task writes its share). TF's RunConfig has no such field
  /// (its Estimator writes only its own).
  std::optional<std::string> checkpoint_format;
  /// Parameter-server training: how the variables are placed on the ps
  /// tasks, as tf.compat.v1.train.replica_device_setter's ps_strategy (TF's
  /// RunConfig takes it as a device_fn): "round_robin" (the default, TF's)
  /// or "greedy" (GreedyLoadBalancingStrategy with byte_size_load_fn: each
  /// variable on the task holding the fewest bytes so far).
  std::optional<std::string> ps_strategy;
  /// Whether train() fsyncs every checkpoint's files and model_dir before
  /// the state file lists it (default true: a checkpoint survives an OS
  /// crash or a power loss, at the disk's speed). false: written and
  /// renamed only, as TF's Saver does (a killed process still loses
  /// nothing; the OS writes the bytes back later). estc's own (TF's
  /// RunConfig has none).
  std::optional<bool> sync_checkpoints;
  std::optional<int64_t> log_step_count_steps; // default 100
  /// TF's session_config.intra_op_parallelism_threads: the runtime's thread
  /// pool size (estc_runtime_set_num_threads); 0 leaves it as it is.
  std::optional<int> intra_op_parallelism_threads;
  /// Where the model runs (docs/design/gpu.md): "cpu" (the default),
  /// "cuda" (= "cuda:0") or "cuda:N", the N-th CUDA device. A JIT Estimator
  /// compiles model_fn for it; an AOT model must have been compiled for it.
  std::optional<std::string> device;
  /// TPUEstimator's iterations_per_loop, on the CPU: train() runs up to N
  /// training steps per call of the compiled model (`train_loop`, N
  /// batches staged in one buffer) and calls the hooks once per loop, at
  /// its boundaries (the global step then advances by the loop's steps).
  /// The last loop is cut short at max_steps / steps, when the input runs
  /// out or when the batch size changes. Results are those of N single
  /// steps. Default 1 (a step a call); must be > 0.
  std::optional<int64_t> iterations_per_loop;
  /// TF's train_distribute: train() (and train_and_evaluate's chief and
  /// workers) run as replicas of one synchronous job. Unset, a TF_CONFIG
  /// cluster with workers is refused. Under mpirun (communication "auto" or
  /// "mpi") and without a TF_CONFIG cluster, rank 0 is the chief and rank r
  /// the worker r - 1.
  std::optional<MultiWorkerMirroredStrategy> train_distribute;
};

/// tf.train.ClusterSpec as a plain map: job name -> task addresses.
using ClusterSpec = std::map<std::string, std::vector<std::string>>;

class RunConfig {
public:
  /// Defaults, then `options`, then TF_CONFIG from the environment.
  explicit RunConfig(const RunConfigOptions &options = {});
  /// As above with `tf_config` (JSON text; "" = none) instead of the
  /// environment variable.
  static RunConfig from_tf_config(const std::string &tf_config,
                                  const RunConfigOptions &options = {});

  /// A copy with the fields `changes` sets replaced (TF's replace()).
  RunConfig replace(const RunConfigOptions &changes) const;

  const std::string &model_dir() const { return model_dir_; }
  std::optional<int64_t> tf_random_seed() const { return tf_random_seed_; }
  int64_t save_summary_steps() const { return save_summary_steps_; }
  int64_t save_checkpoints_steps() const { return save_checkpoints_steps_; }
  double save_checkpoints_secs() const { return save_checkpoints_secs_; }
  int keep_checkpoint_max() const { return keep_checkpoint_max_; }
  double keep_checkpoint_every_n_hours() const {
    return keep_checkpoint_every_n_hours_;
  }
  int64_t log_step_count_steps() const { return log_step_count_steps_; }
  /// "auto", "tf" or "safetensors" (RunConfigOptions::checkpoint_format).
  const std::string &checkpoint_format() const { return checkpoint_format_; }
  /// RunConfigOptions::sync_checkpoints.
  bool sync_checkpoints() const { return sync_checkpoints_; }
  int intra_op_parallelism_threads() const { return intra_op_threads_; }
  /// "cpu" or "cuda:N" (a plain "cuda" is stored as "cuda:0").
  const std::string &device() const { return device_; }
  bool on_cuda() const { return device_ != "cpu"; }
  /// N of "cuda:N"; -1 on the CPU.
  int cuda_device_index() const { return cudaIndex_; }
  int64_t iterations_per_loop() const { return iterations_per_loop_; }
  const std::optional<MultiWorkerMirroredStrategy> &train_distribute() const {
    return train_distribute_;
  }
  /// Whether train() runs as one of several replicas: train_distribute set
  /// and more than one worker replica (chief included).
  bool distributed() const {
    return train_distribute_.has_value() && num_worker_replicas_ > 1;
  }

  // --- Cluster (TF_CONFIG) ---------------------------------------------------
  const ClusterSpec &cluster_spec() const { return cluster_spec_; }
  const std::string &task_type() const { return task_type_; }
  int64_t task_id() const { return task_id_; }
  bool is_chief() const { return is_chief_; }
  const std::string &master() const { return master_; }
  const std::string &evaluation_master() const { return evaluation_master_; }
  int64_t num_ps_replicas() const { return num_ps_replicas_; }
  /// "round_robin" or "greedy" (RunConfigOptions::ps_strategy).
  const std::string &ps_strategy() const { return ps_strategy_; }
  int64_t num_worker_replicas() const { return num_worker_replicas_; }
  /// nullopt for an evaluator (not part of the training cluster).
  std::optional<int64_t> global_id_in_cluster() const {
    return global_id_in_cluster_;
  }

private:
  RunConfig(const RunConfigOptions &options, const std::string &tf_config);
  void apply(const RunConfigOptions &changes, bool constructing);
  void parseTfConfig(const std::string &tf_config);
  /// The chief and workers of mpirun's processes, when train_distribute
  /// may use MPI and TF_CONFIG has no cluster.
  void applyMpiWorld();

  std::string model_dir_;
  std::optional<int64_t> tf_random_seed_;
  int64_t save_summary_steps_ = 100;
  int64_t save_checkpoints_steps_ = 0;
  double save_checkpoints_secs_ = 600;
  int keep_checkpoint_max_ = 5;
  double keep_checkpoint_every_n_hours_ = 10000;
  int64_t log_step_count_steps_ = 100;
  std::string checkpoint_format_ = "auto";
  bool sync_checkpoints_ = true;
  int intra_op_threads_ = 0;
  std::string device_ = "cpu";
  int cudaIndex_ = -1;
  int64_t iterations_per_loop_ = 1;
  std::optional<MultiWorkerMirroredStrategy> train_distribute_;

  ClusterSpec cluster_spec_;
  std::string task_type_ = TaskType::WORKER;
  int64_t task_id_ = 0;
  bool is_chief_ = true;
  std::string master_;
  std::string evaluation_master_;
  int64_t num_ps_replicas_ = 0;
  std::string ps_strategy_ = "round_robin";
  int64_t num_worker_replicas_ = 1;
  std::optional<int64_t> global_id_in_cluster_ = 0;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_RUNCONFIG_H
