//===- GrpcServer.h - estc-serve: TF Serving's gRPC API over gRPC -------===//
//
// GrpcHandler (GrpcHandler.h) behind gRPC (Debian's libgrpc++): TF
// Serving's tensorflow.serving.PredictionService and ModelService on one
// port (TF Serving's --port), insecure credentials as tensorflow_model_server
// without --ssl_config_file, a request size limit (RESOURCE_EXHAUSTED over
// it). Its handler shares the REST server's Batcher and Metrics when given
// them, so batching spans both APIs.
//
//   serving::GrpcServer grpc(options, models, server.batcher(),
//                            server.metrics());
//   int port = grpc.start();          // options.port 0: any free port
//   ...
//   grpc.stop();                      // lets the calls in flight finish
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_GRPCSERVER_H
#define ESTC_TOOLS_ESTC_SERVE_GRPCSERVER_H

#include "tools/estc-serve/GrpcHandler.h"

#include <functional>
#include <memory>
#include <string>

namespace estc {
namespace serving {

struct GrpcServerOptions {
  std::string host = "0.0.0.0";
  /// 0: a free port the OS picks (start() returns it).
  int port = 8500;
  /// Largest request message; a larger one is RESOURCE_EXHAUSTED.
  int64_t max_request_bytes = 64 << 20;
};

class GrpcServer {
public:
  /// `batcher` may be null; `reload` as GrpcHandler's.
  GrpcServer(GrpcServerOptions options, const ModelManager &models,
             Batcher *batcher, Metrics &metrics,
             std::function<void(std::vector<ModelConfig>)> reload = {});
  ~GrpcServer();
  GrpcServer(const GrpcServer &) = delete;
  GrpcServer &operator=(const GrpcServer &) = delete;

  /// Listens and serves on gRPC's threads; returns the port.
  /// std::runtime_error (one line) when the address cannot be bound.
  int start();
  /// Stops accepting calls and waits for those in flight.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_GRPCSERVER_H
