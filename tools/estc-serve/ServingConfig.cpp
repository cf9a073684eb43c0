//===- ServingConfig.cpp - TF Serving's config files for estc-serve -----===//

#include "tools/estc-serve/ServingConfig.h"

#include "lib/Support/FileIO.h"
#include "lib/Support/TextProto.h"
#include "tools/estc-serve/serving_config.pb.h"

#include <stdexcept>

namespace estc {
namespace serving {

namespace {
void parse(const std::string &text, const std::string &file,
           google::protobuf::Message &message) {
  std::string error;
  if (!parseTextProto(text, message, error))
    throw std::invalid_argument(file + ": " + error);
}

std::string readOrThrow(const std::string &path) {
  try {
    return fileio::readFile(path);
  } catch (const std::exception &e) {
    throw std::invalid_argument(e.what());
  }
}
} // namespace

std::vector<ModelConfig> parse_model_server_config(const std::string &text,
                                                   const std::string &file) {
  proto::ModelServerConfig config;
  parse(text, file, config);
  return model_configs_of(config, file);
}

std::vector<ModelConfig>
model_configs_of(const proto::ModelServerConfig &config,
                 const std::string &file) {
  if (!config.has_model_config_list())
    throw std::invalid_argument(file + ": no model_config_list");
  std::vector<ModelConfig> models;
  for (const auto &c : config.model_config_list().config()) {
    const std::string at = file + ": model '" + c.name() + "': ";
    if (c.name().empty())
      throw std::invalid_argument(file + ": a config without a name");
    if (c.base_path().empty())
      throw std::invalid_argument(at + "no base_path");
    if (!c.model_platform().empty() && c.model_platform() != "tensorflow" &&
        c.model_platform() != "estc")
      throw std::invalid_argument(at + "model_platform '" + c.model_platform() +
                                  "' (estc-serve serves estc exports: "
                                  "\"tensorflow\" or \"estc\")");
    ModelConfig m;
    m.name = c.name();
    m.base_path = c.base_path();
    const auto &policy = c.model_version_policy();
    if (policy.has_all()) {
      m.policy.kind = VersionPolicy::Kind::All;
    } else if (policy.has_specific()) {
      m.policy.kind = VersionPolicy::Kind::Specific;
      m.policy.versions.assign(policy.specific().versions().begin(),
                               policy.specific().versions().end());
      if (m.policy.versions.empty())
        throw std::invalid_argument(at + "specific version policy lists no "
                                         "versions");
    } else if (policy.has_latest() && policy.latest().num_versions() > 0) {
      m.policy.num_versions = policy.latest().num_versions();
    }
    for (const auto &[label, version] : c.version_labels())
      m.version_labels[label] = version;
    models.push_back(std::move(m));
  }
  if (models.empty())
    throw std::invalid_argument(file + ": model_config_list has no config");
  return models;
}

std::vector<ModelConfig> read_model_config_file(const std::string &path) {
  return parse_model_server_config(readOrThrow(path), path);
}

BatchingOptions parse_batching_parameters(const std::string &text,
                                          const std::string &file) {
  proto::BatchingParameters params;
  parse(text, file, params);
  BatchingOptions options;
  auto take = [&](bool has, int64_t value, int64_t &dst, const char *name,
                  int64_t lo) {
    if (!has)
      return;
    if (value < lo)
      throw std::invalid_argument(file + ": " + name + " is " +
                                  std::to_string(value) +
                                  ", must be at least " + std::to_string(lo));
    dst = value;
  };
  take(params.has_max_batch_size(), params.max_batch_size().value(),
       options.max_batch_size, "max_batch_size", 1);
  take(params.has_batch_timeout_micros(), params.batch_timeout_micros().value(),
       options.batch_timeout_micros, "batch_timeout_micros", 0);
  take(params.has_max_enqueued_batches(), params.max_enqueued_batches().value(),
       options.max_enqueued_batches, "max_enqueued_batches", 1);
  take(params.has_num_batch_threads(), params.num_batch_threads().value(),
       options.num_batch_threads, "num_batch_threads", 1);
  return options;
}

BatchingOptions read_batching_parameters_file(const std::string &path) {
  return parse_batching_parameters(readOrThrow(path), path);
}

} // namespace serving
} // namespace estc
