//===- GrpcServer.cpp - estc-serve: TF Serving's gRPC API over gRPC -----===//

#include "tools/estc-serve/GrpcServer.h"

#include "tools/estc-serve/tf_serving_apis.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace estc {
namespace serving {

namespace {

grpc::Status toGrpc(const GrpcHandler::Status &s) {
  if (s.ok())
    return grpc::Status::OK;
  // TF's codes are gRPC's (absl::StatusCode numbers).
  return grpc::Status(static_cast<grpc::StatusCode>(s.code), s.message);
}

class PredictionService final : public tfs::PredictionService::Service {
public:
  explicit PredictionService(GrpcHandler &handler) : handler_(handler) {}
  grpc::Status Classify(grpc::ServerContext *,
                        const tfs::ClassificationRequest *request,
                        tfs::ClassificationResponse *response) override {
    return toGrpc(handler_.classify(*request, response));
  }
  grpc::Status Regress(grpc::ServerContext *,
                       const tfs::RegressionRequest *request,
                       tfs::RegressionResponse *response) override {
    return toGrpc(handler_.regress(*request, response));
  }
  grpc::Status Predict(grpc::ServerContext *,
                       const tfs::PredictRequest *request,
                       tfs::PredictResponse *response) override {
    return toGrpc(handler_.predict(*request, response));
  }
  grpc::Status MultiInference(grpc::ServerContext *,
                              const tfs::MultiInferenceRequest *request,
                              tfs::MultiInferenceResponse *response) override {
    return toGrpc(handler_.multi_inference(*request, response));
  }
  grpc::Status
  GetModelMetadata(grpc::ServerContext *,
                   const tfs::GetModelMetadataRequest *request,
                   tfs::GetModelMetadataResponse *response) override {
    return toGrpc(handler_.get_model_metadata(*request, response));
  }

private:
  GrpcHandler &handler_;
};

class ModelService final : public tfs::ModelService::Service {
public:
  explicit ModelService(GrpcHandler &handler) : handler_(handler) {}
  grpc::Status GetModelStatus(grpc::ServerContext *,
                              const tfs::GetModelStatusRequest *request,
                              tfs::GetModelStatusResponse *response) override {
    return toGrpc(handler_.get_model_status(*request, response));
  }
  grpc::Status
  HandleReloadConfigRequest(grpc::ServerContext *,
                            const tfs::ReloadConfigRequest *request,
                            tfs::ReloadConfigResponse *response) override {
    return toGrpc(handler_.reload_config(*request, response));
  }

private:
  GrpcHandler &handler_;
};

} // namespace

struct GrpcServer::Impl {
  Impl(GrpcServerOptions o, const ModelManager &models, Batcher *batcher,
       Metrics &metrics, std::function<void(std::vector<ModelConfig>)> reload)
      : options(std::move(o)),
        handler(models, batcher, metrics, std::move(reload)),
        prediction(handler), model(handler) {}
  GrpcServerOptions options;
  GrpcHandler handler;
  PredictionService prediction;
  ModelService model;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(GrpcServerOptions options, const ModelManager &models,
                       Batcher *batcher, Metrics &metrics,
                       std::function<void(std::vector<ModelConfig>)> reload)
    : impl_(std::make_unique<Impl>(std::move(options), models, batcher, metrics,
                                   std::move(reload))) {}

GrpcServer::~GrpcServer() { stop(); }

int GrpcServer::start() {
  const GrpcServerOptions &o = impl_->options;
  // An IPv6 literal needs its brackets in a gRPC address.
  std::string host =
      o.host.find(':') != std::string::npos && o.host.front() != '['
          ? "[" + o.host + "]"
          : o.host;
  std::string address = host + ":" + std::to_string(o.port);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&impl_->prediction);
  builder.RegisterService(&impl_->model);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(o.max_request_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0)
    throw std::runtime_error("cannot serve gRPC on " + address);
  return port;
}

void GrpcServer::stop() {
  if (impl_->server) {
    // Calls in flight get 30 seconds to finish, then are cancelled.
    impl_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::seconds(30));
    impl_->server->Wait();
    impl_->server.reset();
  }
}

} // namespace serving
} // namespace estc
