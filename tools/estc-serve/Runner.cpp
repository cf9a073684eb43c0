//===- Runner.cpp - What a request runs, for the REST and gRPC APIs -----===//

#include "tools/estc-serve/Runner.h"

#include "lib/Data/Idx.h"

#include <stdexcept>

namespace estc {
namespace serving {

std::string signature_key(const std::string &signature_name) {
  return signature_name.empty() ? std::string(kDefaultServingSignatureDefKey)
                                : signature_name;
}

TensorMap Runner::run(const ModelManager::Handle &handle,
                      const std::string &signature_name,
                      const TensorMap &inputs,
                      const std::vector<std::string> &output_filter) const {
  const std::string sig = signature_key(signature_name);
  try {
    return batcher_ ? batcher_->run(handle.servable, handle.model, sig, inputs,
                                    output_filter)
                    : handle.servable->run(sig, inputs, output_filter);
  } catch (const RestError &) {
    throw;
  } catch (const std::invalid_argument &e) {
    // A bad request: unknown input, wrong dtype or shape, a run-time
    // check of the compiled code (rt::InvalidArgumentError).
    throw RestError(Code::InvalidArgument, e.what());
  } catch (const data::DataError &e) {
    throw RestError(Code::InvalidArgument, e.what());
  }
}

TensorMap Runner::run_examples(const ModelManager::Handle &handle,
                               RestMethod method,
                               const std::string &signature_name,
                               const std::vector<std::string> &examples) const {
  const SignatureDef &sig =
      examples_signature(method, signature_name, handle.servable->signatures());
  ExamplesRequest request;
  request.signature_name = signature_name;
  request.examples = examples;
  return run(handle, signature_name, examples_inputs(sig, request));
}

} // namespace serving
} // namespace estc
