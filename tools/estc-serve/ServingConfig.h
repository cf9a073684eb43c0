//===- ServingConfig.h - TF Serving's config files for estc-serve -------===//
//
// --model_config_file (a ModelServerConfig) and --batching_parameters_file
// (a BatchingParameters), TF Serving's text protos (serving_config.proto
// declares the messages with TF Serving's names and numbers):
//
//   model_config_list {
//     config {
//       name: "titanic"  base_path: "/models/titanic"
//       model_platform: "tensorflow"
//       model_version_policy { latest { num_versions: 2 } }
//       version_labels { key: "stable" value: 1764150000 }
//     }
//   }
//
//   max_batch_size { value: 64 }  batch_timeout_micros { value: 2000 }
//   num_batch_threads { value: 4 }  max_enqueued_batches { value: 100 }
//
// A file that cannot be read or parsed, or a value out of range, is
// std::invalid_argument with one line "<file>: line L:C: <what>".
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_SERVINGCONFIG_H
#define ESTC_ESTIMATOR_SERVING_SERVINGCONFIG_H

#include "tools/estc-serve/Batcher.h"
#include "tools/estc-serve/ModelManager.h"
#include "tools/estc-serve/serving_config.pb.h"

#include <string>
#include <vector>

namespace estc {
namespace serving {

std::vector<ModelConfig> parse_model_server_config(const std::string &text,
                                                   const std::string &file);
std::vector<ModelConfig> read_model_config_file(const std::string &path);
/// The models of a parsed ModelServerConfig (the file's and gRPC's
/// HandleReloadConfigRequest's); `file` names it in errors.
std::vector<ModelConfig>
model_configs_of(const proto::ModelServerConfig &config,
                 const std::string &file);

BatchingOptions parse_batching_parameters(const std::string &text,
                                          const std::string &file);
BatchingOptions read_batching_parameters_file(const std::string &path);

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_SERVINGCONFIG_H
