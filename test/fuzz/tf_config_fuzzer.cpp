//===- tf_config_fuzzer.cpp - TF_CONFIG (estimator/RunConfig) ------------===//
//
// RunConfig::from_tf_config reads TF_CONFIG (JSON) as RunConfig's
// constructor reads the environment variable. The documented failure is
// std::invalid_argument, one line "RunConfig: ..."; no other exception may
// escape.
// A configuration that reads must be consistent: the task is a job of the
// cluster (its index in range) unless it is an evaluator or local.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "estimator/RunConfig.h"

#include <stdexcept>

using namespace estc;
using namespace estc::fuzz;
using estimator::RunConfig;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(bytesOf(data, size));
  std::optional<RunConfig> config;
  try {
    config = RunConfig::from_tf_config(text);
  } catch (const std::invalid_argument &e) {
    std::string what = e.what();
    if (what.rfind("RunConfig: ", 0) != 0)
      die("error not from RunConfig: " + what);
    if (what.find_first_of("\n\r") != std::string::npos)
      die("error is not one line: " + what);
    return 0;
  }
  const estimator::ClusterSpec &cluster = config->cluster_spec();
  if (config->task_id() < 0 || config->num_ps_replicas() < 0 ||
      config->num_worker_replicas() < 0)
    die("negative task index or replica count");
  if (!cluster.empty()) {
    auto job = cluster.find(config->task_type());
    if (job == cluster.end() ||
        config->task_id() >= static_cast<int64_t>(job->second.size()))
      die("task " + config->task_type() + ":" +
          std::to_string(config->task_id()) + " is not in the cluster");
    if (!config->global_id_in_cluster())
      die("a task of the cluster has no global id");
  }
  return 0;
}
