//===- Server.h - estc-serve: TF Serving's REST API over HTTP -----------===//
//
// RestHandler answers one request, (method, path, body) -> (HTTP status,
// JSON), with no network: it parses the body (RestApi.h, RestCodec.h), runs
// the request through a Runner (the served version, the Batcher; the gRPC
// API's GrpcHandler runs through one too) and writes the JSON; it records
// the metrics. Server
// puts it behind cpp-httplib: a thread pool of --rest_api_num_threads,
// HTTP/1.1 keep-alive, read and write timeouts (a stalled client is
// dropped), a body limit (413; a body of any Content-Type is read whole as
// JSON, as TF Serving reads it), /monitoring/prometheus/metrics, and a
// stop() that closes the listening socket and lets the requests in flight
// finish.
//
//   serving::ModelManager models(configs, saved_model_loader());
//   models.poll();
//   serving::Server server(options, models);
//   int port = server.bind();          // options.port 0: any free port
//   std::thread t([&] { server.run(); });
//   ...
//   server.stop(); t.join();
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_SERVER_H
#define ESTC_ESTIMATOR_SERVING_SERVER_H

#include "tools/estc-serve/Batcher.h"
#include "tools/estc-serve/Metrics.h"
#include "tools/estc-serve/ModelManager.h"
#include "tools/estc-serve/Runner.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace estc {
namespace serving {

class RestHandler {
public:
  /// `batcher` may be null (no batching).
  RestHandler(const ModelManager &models, Batcher *batcher, Metrics &metrics);

  struct Response {
    int status = 200;
    std::string body;
  };
  /// Any request under /v1/: TF Serving's answer (errors as
  /// {"error": "..."} with their status). Never throws.
  Response handle(std::string_view http_method, std::string_view path,
                  std::string_view body);

private:
  std::string answer(const Route &route, std::string_view body);

  Runner runner_;
  Metrics &metrics_;
};

struct ServerOptions {
  std::string host = "0.0.0.0";
  /// 0: a free port the OS picks (bind() returns it).
  int port = 8501;
  /// Threads handling connections (TF Serving: 4 per CPU).
  int num_threads = 16;
  /// Read and write timeout of a connection.
  int64_t timeout_ms = 30000;
  /// Largest request body; a larger one is 413.
  int64_t max_request_bytes = 64 << 20;
  /// Batching (null: none).
  std::optional<BatchingOptions> batching;
};

class Server {
public:
  Server(ServerOptions options, const ModelManager &models);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  /// Binds the listening socket; returns the port. std::runtime_error
  /// (one line) when the address cannot be bound.
  int bind();
  /// Serves until stop(); returns once the requests in flight finished.
  void run();
  /// Stops accepting connections; run() returns after the requests being
  /// handled are answered. Safe from any thread (not from a signal
  /// handler).
  void stop();

  Metrics &metrics() { return metrics_; }
  /// The batcher (null without batching), which the gRPC server shares.
  Batcher *batcher() { return batcher_.get(); }

private:
  struct Http;
  ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<Batcher> batcher_;
  RestHandler handler_;
  std::unique_ptr<Http> http_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_SERVER_H
