//===- Runner.h - What a request runs, for the REST and gRPC APIs -------===//
//
// The part of answering a request that does not depend on how it came in:
// the served version it names (ModelManager), the signature run directly or
// through the Batcher, the run's exceptions as RestError (a bad request is
// InvalidArgument), and the classify / regress signatures' checks on
// serialized tf.Example records. RestHandler (Server.h) and GrpcHandler
// (GrpcHandler.h) both answer through one Runner, so the two APIs give the
// same answers and the same errors.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_RUNNER_H
#define ESTC_TOOLS_ESTC_SERVE_RUNNER_H

#include "tools/estc-serve/Batcher.h"
#include "tools/estc-serve/ModelManager.h"

#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace serving {

/// The signature key a request's signature name means (empty:
/// serving_default).
std::string signature_key(const std::string &signature_name);

class Runner {
public:
  /// `batcher` may be null (no batching).
  Runner(const ModelManager &models, Batcher *batcher)
      : models_(models), batcher_(batcher) {}

  const ModelManager &models() const { return models_; }

  /// ModelManager::get (RestError NotFound, InvalidArgument, Unavailable).
  ModelManager::Handle get(const std::string &model,
                           std::optional<int64_t> version,
                           const std::optional<std::string> &label) const {
    return models_.get(model, version, label);
  }

  /// Runs signature `signature_name` (empty: serving_default) of a served
  /// version, batched when batching is on. A bad request (unknown input,
  /// wrong dtype or shape, a failed run-time check) is RestError
  /// InvalidArgument with the run's message.
  TensorMap run(const ModelManager::Handle &handle,
                const std::string &signature_name, const TensorMap &inputs,
                const std::vector<std::string> &output_filter = {}) const;

  /// Classify (`method` Classify) or Regress: checks that the signature is
  /// one (examples_signature) and runs it on the records.
  TensorMap run_examples(const ModelManager::Handle &handle, RestMethod method,
                         const std::string &signature_name,
                         const std::vector<std::string> &examples) const;

private:
  const ModelManager &models_;
  Batcher *batcher_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_RUNNER_H
