//===- estc-serve.cpp - Serve estc exports with TF Serving's APIs --------===//
//
//   estc-serve --model_name=titanic --model_base_path=/models/titanic
//   estc-serve --model_config_file=models.config --enable_batching
//   estc-serve --port=8500 --model_name=titanic --model_base_path=...
//
// tensorflow_model_server for estc's exports (docs/serving.md): its flag
// names, its REST API (--rest_api_port) and, with --port, its gRPC API
// (PredictionService, ModelService), their messages and status codes, so
// that TF Serving clients work unchanged. Unlike tensorflow_model_server,
// gRPC is served only when --port is given. The library (tools/estc-serve)
// does the work; this file reads the flags, loads the models, serves until
// SIGTERM or SIGINT and then lets the requests in flight finish (exit 0).
//
// Errors: a bad command line is one line and exit status 2 (Flags.h); a
// config file that cannot be read, or an address that cannot be bound, is
// one line and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Support/Flags.h"
#include "tools/estc-serve/GrpcServer.h"
#include "tools/estc-serve/SavedModelServable.h"
#include "tools/estc-serve/Server.h"
#include "tools/estc-serve/ServingConfig.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <thread>

using namespace estc;
using namespace estc::serving;

namespace {
int fail(const std::string &message) {
  estc::flags::print_error_line("estc-serve", message);
  return 1;
}

/// Writes the port for a parent process (tests) to read: whole or absent.
bool writePortFile(const std::string &path, int port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (!out.flush())
      return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}
} // namespace

int main(int argc, char **argv) {
  const int cpus =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t rest_api_port = 8501;
  std::string rest_api_host = "0.0.0.0";
  int64_t rest_api_num_threads = 4 * cpus;
  int64_t rest_api_timeout_in_ms = 30000;
  std::string model_name = "default";
  std::string model_base_path;
  std::string model_config_file;
  int64_t file_system_poll_wait_seconds = 1;
  bool enable_batching = false;
  std::string batching_parameters_file;
  int64_t max_request_bytes = 64 << 20;
  std::string port_file;
  int64_t grpc_port = -1;
  std::string grpc_port_file;

  flags::FlagParser parser(
      "estc-serve",
      "Serves estc exports (Estimator::export_saved_model) with TensorFlow "
      "Serving's REST API: /v1/models/NAME[:predict|:classify|:regress], "
      "/v1/models/NAME[/metadata], /monitoring/prometheus/metrics; with "
      "--port, its gRPC API (tensorflow.serving.PredictionService and "
      "ModelService).");
  parser.add(flags::Flag("port", &grpc_port,
                         "the gRPC port (TF Serving's PredictionService and "
                         "ModelService); 0: any free port (see "
                         "--grpc_port_file)")
                 .min(0)
                 .max(65535)
                 .default_text("none, no gRPC API"));
  parser.add(flags::Flag("grpc_port_file", &grpc_port_file,
                         "once the gRPC API listens, write its port to this "
                         "file"));
  parser.add(flags::Flag("rest_api_port", &rest_api_port,
                         "the HTTP port; 0: any free port (see --port_file)")
                 .min(0)
                 .max(65535));
  parser.add(flags::Flag("rest_api_host", &rest_api_host,
                         "the address to listen on (127.0.0.1: this machine "
                         "only)"));
  parser.add(flags::Flag("rest_api_num_threads", &rest_api_num_threads,
                         "threads handling HTTP connections (one per open "
                         "connection)")
                 .min(1)
                 .default_text("4 per CPU"));
  parser.add(flags::Flag("rest_api_timeout_in_ms", &rest_api_timeout_in_ms,
                         "read and write timeout of a connection: a client "
                         "that stalls longer is dropped")
                 .min(1));
  parser.add(flags::Flag("model_name", &model_name,
                         "the model's name in request paths"));
  parser.add(flags::Flag("model_base_path", &model_base_path,
                         "the folder whose all-digit subfolders are the "
                         "model's versions (exports)"));
  parser.add(flags::Flag("model_config_file", &model_config_file,
                         "TF Serving's ModelServerConfig text proto (several "
                         "models, version policies, labels); instead of "
                         "--model_name/--model_base_path"));
  parser.add(flags::Flag("file_system_poll_wait_seconds",
                         &file_system_poll_wait_seconds,
                         "how often to look for new versions; 0: load once")
                 .min(0));
  parser.add(flags::Flag("enable_batching", &enable_batching,
                         "batch concurrent requests into one run"));
  parser.add(flags::Flag("batching_parameters_file", &batching_parameters_file,
                         "TF Serving's BatchingParameters text proto "
                         "(max_batch_size, batch_timeout_micros, "
                         "num_batch_threads, max_enqueued_batches)"));
  parser.add(flags::Flag("max_request_bytes", &max_request_bytes,
                         "the largest request body; larger is HTTP 413")
                 .min(1));
  parser.add(flags::Flag("port_file", &port_file,
                         "once listening, write the port to this file"));
  parser.parse_or_exit(argc, argv);

  if (!model_config_file.empty() && parser.is_set("model_base_path"))
    parser.fail("--model_config_file and --model_base_path are exclusive");
  if (model_config_file.empty() && model_base_path.empty())
    parser.fail("missing --model_base_path (or --model_config_file)");
  if (!grpc_port_file.empty() && grpc_port < 0)
    parser.fail("--grpc_port_file needs --port");
  if (!batching_parameters_file.empty() && !enable_batching)
    parser.fail("--batching_parameters_file needs --enable_batching");

  ServerOptions options;
  options.host = rest_api_host;
  options.port = static_cast<int>(rest_api_port);
  options.num_threads = static_cast<int>(rest_api_num_threads);
  options.timeout_ms = rest_api_timeout_in_ms;
  options.max_request_bytes = max_request_bytes;
  std::vector<ModelConfig> configs;
  try {
    if (!model_config_file.empty()) {
      configs = read_model_config_file(model_config_file);
    } else {
      ModelConfig config;
      config.name = model_name;
      config.base_path = model_base_path;
      configs.push_back(config);
    }
    if (enable_batching)
      options.batching =
          batching_parameters_file.empty()
              ? BatchingOptions{}
              : read_batching_parameters_file(batching_parameters_file);
  } catch (const std::exception &e) {
    return fail(e.what());
  }

  // SIGTERM and SIGINT are taken by one thread with sigwait (a handler
  // could not stop the server safely); every thread started below inherits
  // the mask. A client that disconnects must not kill the server: SIGPIPE
  // is ignored and the write fails instead.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  try {
    ModelManager models(configs, saved_model_loader());
    models.poll();
    models.start_polling(std::chrono::seconds(file_system_poll_wait_seconds));
    Server server(options, models);
    int port = server.bind();
    std::cerr << "estc-serve: REST API at http://" << rest_api_host << ":"
              << port << "/ (" << rest_api_num_threads << " threads"
              << (enable_batching ? ", batching" : "") << ")" << std::endl;
    if (!port_file.empty() && !writePortFile(port_file, port))
      return fail("cannot write --port_file " + port_file);
    std::unique_ptr<GrpcServer> grpc;
    if (grpc_port >= 0) {
      GrpcServerOptions grpcOptions;
      grpcOptions.host = rest_api_host;
      grpcOptions.port = static_cast<int>(grpc_port);
      grpcOptions.max_request_bytes = max_request_bytes;
      grpc = std::make_unique<GrpcServer>(
          grpcOptions, models, server.batcher(), server.metrics(),
          [&models](std::vector<ModelConfig> configs) {
            models.reload(std::move(configs));
          });
      int gport = grpc->start();
      std::cerr << "estc-serve: gRPC API at " << rest_api_host << ":" << gport
                << std::endl;
      if (!grpc_port_file.empty() && !writePortFile(grpc_port_file, gport))
        return fail("cannot write --grpc_port_file " + grpc_port_file);
    }

    std::thread waiter([&] {
      int signal = 0;
      sigwait(&stopSignals, &signal);
      std::cerr << "estc-serve: " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
                << ": finishing the requests in flight" << std::endl;
      if (grpc)
        grpc->stop();
      server.stop();
    });
    server.run();
    // run() returns after stop(), or when listening failed: then the
    // waiter still waits, and a signal of its own ends it.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    models.stop();
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  std::cerr << "estc-serve: stopped" << std::endl;
  return 0;
}
