//===- GrpcHandler.h - estc-serve: TF Serving's gRPC API, no network ----===//
//
// GrpcHandler answers one call of TF Serving's PredictionService (Predict,
// Classify, Regress, MultiInference, GetModelMetadata) or ModelService
// (GetModelStatus, HandleReloadConfigRequest) from its request message,
// with no network: the same Runner as the REST API's RestHandler (versions,
// labels, the Batcher, a bad request's InvalidArgument) and the same
// checks of classify and regress outputs (classify_results,
// regress_results), so both APIs answer a request alike. It records the
// metrics as RestHandler does. GrpcServer (GrpcServer.h) puts it behind
// gRPC; tests call it directly.
//
// A call's status is TF's code (the same numbers as gRPC's status codes)
// and one line: NotFound for an unknown model or version, InvalidArgument
// for a bad tensor or shape, FailedPrecondition for a signature of the
// wrong kind, Unavailable before a model has a version loaded.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_GRPCHANDLER_H
#define ESTC_TOOLS_ESTC_SERVE_GRPCHANDLER_H

#include "tools/estc-serve/GrpcCodec.h"
#include "tools/estc-serve/Metrics.h"
#include "tools/estc-serve/Runner.h"

#include <functional>
#include <string>

namespace estc {
namespace serving {

class GrpcHandler {
public:
  /// `batcher` may be null (no batching). `reload` applies a new model
  /// config (HandleReloadConfigRequest); null: reloading is Unimplemented.
  GrpcHandler(const ModelManager &models, Batcher *batcher, Metrics &metrics,
              std::function<void(std::vector<ModelConfig>)> reload = {});

  struct Status {
    Code code = Code::Ok;
    std::string message;
    bool ok() const { return code == Code::Ok; }
  };

  /// Each never throws: an error is the Status, the response then unset.
  Status predict(const tfs::PredictRequest &request,
                 tfs::PredictResponse *response);
  Status classify(const tfs::ClassificationRequest &request,
                  tfs::ClassificationResponse *response);
  Status regress(const tfs::RegressionRequest &request,
                 tfs::RegressionResponse *response);
  Status multi_inference(const tfs::MultiInferenceRequest &request,
                         tfs::MultiInferenceResponse *response);
  Status get_model_metadata(const tfs::GetModelMetadataRequest &request,
                            tfs::GetModelMetadataResponse *response);
  Status get_model_status(const tfs::GetModelStatusRequest &request,
                          tfs::GetModelStatusResponse *response);
  Status reload_config(const tfs::ReloadConfigRequest &request,
                       tfs::ReloadConfigResponse *response);

private:
  /// Runs `body`, turning its exceptions into the Status, and records the
  /// request's metrics under `method`; `model` is set by body.
  Status call(const char *method,
              const std::function<void(std::string &)> &body);
  void examples(RestMethod method, const tfs::ModelSpec &spec, bool has_spec,
                const tfs::Input &input, bool has_input, tfs::ModelSpec *out,
                std::string &model,
                const std::function<void(const TensorMap &, int64_t)> &write);

  Runner runner_;
  Metrics &metrics_;
  std::function<void(std::vector<ModelConfig>)> reload_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_GRPCHANDLER_H
