//===- GrpcHandler.cpp - estc-serve: TF Serving's gRPC API, no network --===//
//
// The methods of TF Serving's prediction_service_impl.cc and
// model_service_impl.cc (with classifier.cc, regressor.cc and
// multi_inference.cc's checks) over a Runner.
//
//===----------------------------------------------------------------------===//

#include "tools/estc-serve/GrpcHandler.h"

#include "tools/estc-serve/ServingConfig.h"

#include <chrono>
#include <set>

namespace estc {
namespace serving {

GrpcHandler::GrpcHandler(const ModelManager &models, Batcher *batcher,
                         Metrics &metrics,
                         std::function<void(std::vector<ModelConfig>)> reload)
    : runner_(models, batcher), metrics_(metrics), reload_(std::move(reload)) {}

GrpcHandler::Status
GrpcHandler::call(const char *method,
                  const std::function<void(std::string &)> &body) {
  auto start = std::chrono::steady_clock::now();
  std::string model;
  Status status;
  try {
    body(model);
  } catch (const RestError &e) {
    status = {e.code(), e.what()};
  } catch (const std::exception &e) {
    status = {Code::Internal, escape_control_chars(e.what())};
  }
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  metrics_.record_request(model, method, code_name(status.code), us);
  return status;
}

GrpcHandler::Status GrpcHandler::predict(const tfs::PredictRequest &request,
                                         tfs::PredictResponse *response) {
  return call("predict", [&](std::string &model) {
    ModelSpecRef spec =
        model_spec_of(request.has_model_spec(), request.model_spec());
    model = spec.name;
    ModelManager::Handle h = runner_.get(spec.name, spec.version, spec.label);
    GrpcPredictRequest decoded =
        decode_predict_request(request, h.servable->signatures());
    TensorMap outputs = runner_.run(h, spec.signature_name, decoded.inputs,
                                    decoded.output_filter);
    write_predict_outputs(outputs, decoded.output_filter, response);
    set_model_spec(response->mutable_model_spec(), h.model, h.version,
                   signature_key(spec.signature_name));
  });
}

void GrpcHandler::examples(
    RestMethod method, const tfs::ModelSpec &spec_proto, bool has_spec,
    const tfs::Input &input, bool has_input, tfs::ModelSpec *out,
    std::string &model,
    const std::function<void(const TensorMap &, int64_t)> &write) {
  ModelSpecRef spec = model_spec_of(has_spec, spec_proto);
  model = spec.name;
  ModelManager::Handle h = runner_.get(spec.name, spec.version, spec.label);
  std::vector<std::string> records = input_examples(has_input, input);
  TensorMap outputs =
      runner_.run_examples(h, method, spec.signature_name, records);
  write(outputs, static_cast<int64_t>(records.size()));
  set_model_spec(out, h.model, h.version, signature_key(spec.signature_name));
}

GrpcHandler::Status
GrpcHandler::classify(const tfs::ClassificationRequest &request,
                      tfs::ClassificationResponse *response) {
  return call("classify", [&](std::string &model) {
    examples(RestMethod::Classify, request.model_spec(),
             request.has_model_spec(), request.input(), request.has_input(),
             response->mutable_model_spec(), model,
             [&](const TensorMap &outputs, int64_t n) {
               write_classification_result(classify_results(outputs, n),
                                           response->mutable_result());
             });
  });
}

GrpcHandler::Status GrpcHandler::regress(const tfs::RegressionRequest &request,
                                         tfs::RegressionResponse *response) {
  return call("regress", [&](std::string &model) {
    examples(RestMethod::Regress, request.model_spec(),
             request.has_model_spec(), request.input(), request.has_input(),
             response->mutable_model_spec(), model,
             [&](const TensorMap &outputs, int64_t n) {
               write_regression_result(regress_results(outputs, n),
                                       response->mutable_result());
             });
  });
}

GrpcHandler::Status
GrpcHandler::multi_inference(const tfs::MultiInferenceRequest &request,
                             tfs::MultiInferenceResponse *response) {
  return call("multi_inference", [&](std::string &model) {
    if (request.tasks().empty())
      throw RestError(Code::InvalidArgument, "Tasks field is empty.");
    // TF Serving's multi_inference.cc: one model, its version from the
    // first task, each signature once, classify and regress only.
    std::set<std::string> signatures;
    for (const tfs::InferenceTask &task : request.tasks()) {
      ModelSpecRef spec =
          model_spec_of(task.has_model_spec(), task.model_spec());
      if (spec.name != request.tasks(0).model_spec().name())
        throw RestError(Code::InvalidArgument,
                        "All ModelSpecs in a MultiInferenceRequest must "
                        "access the same model name.");
      if (!signatures.insert(signature_key(spec.signature_name)).second)
        throw RestError(Code::InvalidArgument,
                        "Duplicate evaluation of signature: " +
                            signature_key(spec.signature_name));
      if (task.method_name() != kClassifyMethodName &&
          task.method_name() != kRegressMethodName)
        throw RestError(Code::Unimplemented,
                        "Unsupported signature method_name: " +
                            task.method_name());
    }
    ModelSpecRef first = model_spec_of(request.tasks(0).has_model_spec(),
                                       request.tasks(0).model_spec());
    model = first.name;
    ModelManager::Handle h =
        runner_.get(first.name, first.version, first.label);
    std::vector<std::string> records =
        input_examples(request.has_input(), request.input());
    const auto n = static_cast<int64_t>(records.size());
    for (const tfs::InferenceTask &task : request.tasks()) {
      const std::string &sig = task.model_spec().signature_name();
      const bool classify = task.method_name() == kClassifyMethodName;
      TensorMap outputs = runner_.run_examples(
          h, classify ? RestMethod::Classify : RestMethod::Regress, sig,
          records);
      tfs::InferenceResult *result = response->add_results();
      if (classify)
        write_classification_result(classify_results(outputs, n),
                                    result->mutable_classification_result());
      else
        write_regression_result(regress_results(outputs, n),
                                result->mutable_regression_result());
      set_model_spec(result->mutable_model_spec(), h.model, h.version,
                     signature_key(sig));
    }
  });
}

GrpcHandler::Status
GrpcHandler::get_model_metadata(const tfs::GetModelMetadataRequest &request,
                                tfs::GetModelMetadataResponse *response) {
  return call("metadata", [&](std::string &model) {
    ModelSpecRef spec =
        model_spec_of(request.has_model_spec(), request.model_spec());
    model = spec.name;
    if (request.metadata_field().empty())
      throw RestError(Code::InvalidArgument,
                      "GetModelMetadataRequest must specify at least one "
                      "metadata_field");
    for (const std::string &field : request.metadata_field())
      if (field != "signature_def")
        throw RestError(Code::InvalidArgument,
                        "Metadata field " + field + " is not supported");
    ModelManager::Handle h = runner_.get(spec.name, spec.version, spec.label);
    tfs::SignatureDefMap map;
    write_signature_def_map(h.servable->signatures(), &map);
    (*response->mutable_metadata())["signature_def"].PackFrom(map);
    set_model_spec(response->mutable_model_spec(), h.model, h.version, "");
  });
}

GrpcHandler::Status
GrpcHandler::get_model_status(const tfs::GetModelStatusRequest &request,
                              tfs::GetModelStatusResponse *response) {
  return call("status", [&](std::string &model) {
    ModelSpecRef spec =
        model_spec_of(request.has_model_spec(), request.model_spec());
    model = spec.name;
    write_model_status(
        runner_.models().status(spec.name, spec.version, spec.label), response);
  });
}

GrpcHandler::Status
GrpcHandler::reload_config(const tfs::ReloadConfigRequest &request,
                           tfs::ReloadConfigResponse *response) {
  return call("reload_config", [&](std::string &) {
    if (!reload_)
      throw RestError(Code::Unimplemented,
                      "HandleReloadConfigRequest: this server does not "
                      "reload its model config");
    if (request.config().config_case() !=
        proto::ModelServerConfig::kModelConfigList)
      throw RestError(Code::InvalidArgument,
                      "ServerCore::ReloadConfig: the config has no "
                      "model_config_list");
    std::vector<ModelConfig> configs;
    try {
      configs = model_configs_of(request.config(), "ReloadConfigRequest");
    } catch (const std::invalid_argument &e) {
      throw RestError(Code::InvalidArgument, e.what());
    }
    reload_(std::move(configs));
    response->mutable_status()->set_error_code(0);
  });
}

} // namespace serving
} // namespace estc
