//===- Server.cpp - estc-serve: TF Serving's REST API over HTTP ---------===//

#include "tools/estc-serve/Server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <chrono>
#include <stdexcept>

namespace estc {
namespace serving {

RestHandler::RestHandler(const ModelManager &models, Batcher *batcher,
                         Metrics &metrics)
    : runner_(models, batcher), metrics_(metrics) {}

std::string RestHandler::answer(const Route &route, std::string_view body) {
  switch (route.method) {
  case RestMethod::ModelStatus:
    return write_model_status(
        runner_.models().status(route.model_name, route.version, route.label));
  case RestMethod::Metadata: {
    ModelManager::Handle h =
        runner_.get(route.model_name, route.version, route.label);
    return write_model_metadata(h.model, h.version, h.servable->signatures());
  }
  case RestMethod::Predict: {
    ModelManager::Handle h =
        runner_.get(route.model_name, route.version, route.label);
    PredictRequest request =
        parse_predict_request(body, h.servable->signatures());
    TensorMap outputs = runner_.run(h, request.signature_name, request.inputs);
    return write_predict_response(outputs, request.format);
  }
  case RestMethod::Classify:
  case RestMethod::Regress: {
    ModelManager::Handle h =
        runner_.get(route.model_name, route.version, route.label);
    ExamplesRequest request = parse_examples_request(body);
    TensorMap outputs = runner_.run_examples(
        h, route.method, request.signature_name, request.examples);
    auto n = static_cast<int64_t>(request.examples.size());
    return route.method == RestMethod::Classify
               ? write_classify_response(outputs, n)
               : write_regress_response(outputs, n);
  }
  }
  throw RestError(Code::Internal, "unknown method");
}

RestHandler::Response RestHandler::handle(std::string_view http_method,
                                          std::string_view path,
                                          std::string_view body) {
  auto start = std::chrono::steady_clock::now();
  std::string model, method = "unknown";
  Response response;
  Code code = Code::Ok;
  try {
    Route route = parse_route(http_method, path);
    model = route.model_name;
    method = method_name(route.method);
    response.body = answer(route, body);
  } catch (const RestError &e) {
    code = e.code();
    response.body = write_error(e.what());
  } catch (const std::exception &e) {
    code = Code::Internal;
    response.body = write_error(e.what());
  }
  response.status = http_status(code);
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  metrics_.record_request(model, method, code_name(code), us);
  return response;
}

struct Server::Http {
  httplib::Server server;
  /// The listening socket, seen when httplib creates it (-1: none yet).
  socket_t listenSocket = -1;
};

Server::Server(ServerOptions options, const ModelManager &models)
    : options_(std::move(options)),
      batcher_(options_.batching
                   ? std::make_unique<Batcher>(*options_.batching, &metrics_)
                   : nullptr),
      handler_(models, batcher_.get(), metrics_),
      http_(std::make_unique<Http>()) {
  if (options_.num_threads < 1)
    throw std::invalid_argument("--rest_api_num_threads must be at least 1");
  httplib::Server &s = http_->server;
  const size_t threads = static_cast<size_t>(options_.num_threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  auto timeout = std::chrono::milliseconds(options_.timeout_ms);
  s.set_read_timeout(timeout);
  s.set_write_timeout(timeout);
  // An idle keep-alive connection holds a pool thread; two seconds is long
  // enough for a client's next request and bounds a graceful shutdown.
  s.set_keep_alive_timeout(2);
  s.set_keep_alive_max_count(1000);
  s.set_payload_max_length(static_cast<size_t>(options_.max_request_bytes));
  // Small JSON answers must not wait for the client's delayed ACK: with
  // Nagle's algorithm on (Debian's libcpp-httplib default), a keep-alive
  // response's second segment waits ~40 ms on loopback.
  s.set_tcp_nodelay(true);
  // Debian's httplib is a compiled library that listens with a backlog of
  // 5 (CPPHTTPLIB_LISTEN_BACKLOG cannot change it): 64 clients connecting
  // at once overflow it and each dropped SYN is retried a second later
  // (bench/serving.sh: p99 1.1 s and timeouts at 64 connections). bind()
  // listens again on the socket seen here with the system's backlog.
  s.set_socket_options([http = http_.get()](socket_t sock) {
    httplib::default_socket_options(sock);
    http->listenSocket = sock;
  });

  // Every request with a body is read by a content reader (readBody), never
  // by httplib's regular handlers: those form-decode an
  // application/x-www-form-urlencoded body (curl -d's default, which TF
  // Serving's examples use) and answer one over 8 KiB with 413
  // (CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, compiled into Debian's
  // libcpp-httplib: defining it here would change nothing). TF Serving
  // reads the body as JSON whatever its Content-Type; so does estc-serve,
  // up to --max_request_bytes.
  const size_t maxBody = static_cast<size_t>(options_.max_request_bytes);
  auto readBody = [maxBody](const httplib::Request &req, httplib::Response &res,
                            const httplib::ContentReader &reader,
                            std::string &body) {
    bool tooLarge = false;
    bool ok;
    if (req.is_multipart_form_data()) {
      // httplib parses a multipart/form-data body into its parts whatever
      // the receivers: they are dropped and the body is empty, as with
      // httplib's regular handlers.
      ok = reader([](const httplib::MultipartFormData &) { return true; },
                  [](const char *, size_t) { return true; });
    } else {
      ok = reader([&](const char *data, size_t n) {
        // httplib checks a Content-Length against the limit; this checks
        // the body as received (chunked, or decompressed). Past the limit
        // the rest is read and dropped, as httplib skips a body whose
        // Content-Length is over it: the answer is a 413, not a reset.
        if (tooLarge || n > maxBody - body.size()) {
          tooLarge = true;
          std::string().swap(body);
          return true;
        }
        body.append(data, n);
        return true;
      });
    }
    if (ok && tooLarge) {
      res.status = 413;
      return false;
    }
    // A failed read: httplib set its status (413 over the limit, 400 for a
    // malformed body); the error handler writes the body.
    return ok;
  };
  auto respond = [this](const httplib::Request &req, httplib::Response &res,
                        std::string_view body) {
    // The path as sent (percent-encoded): parse_route decodes the model
    // name and label once, as TF Serving does.
    std::string path = req.target.substr(0, req.target.find('?'));
    RestHandler::Response r = handler_.handle(req.method, path, body);
    res.status = r.status;
    res.set_content(r.body, "application/json");
  };
  s.Get(R"(/v1/.*)",
        [respond](const httplib::Request &req, httplib::Response &res) {
          respond(req, res, "");
        });
  auto rest = [respond, readBody](const httplib::Request &req,
                                  httplib::Response &res,
                                  const httplib::ContentReader &reader) {
    std::string body;
    if (readBody(req, res, reader, body))
      respond(req, res, body);
  };
  s.Post(R"(/v1/.*)", rest);
  auto notAllowed = [readBody](const httplib::Request &req,
                               httplib::Response &res,
                               const httplib::ContentReader &reader) {
    std::string body;
    if (!readBody(req, res, reader, body))
      return;
    res.status = 405;
    res.set_header("Allow", "GET, POST");
    res.set_content(write_error("Method " + req.method +
                                " not allowed: the REST API takes GET and "
                                "POST"),
                    "application/json");
  };
  s.Put(R"(/v1/.*)", notAllowed);
  s.Delete(R"(/v1/.*)", notAllowed);
  s.Patch(R"(/v1/.*)", notAllowed);
  // Any other path with a body: read, then httplib's 404.
  auto notFound = [readBody](const httplib::Request &req,
                             httplib::Response &res,
                             const httplib::ContentReader &reader) {
    std::string body;
    if (readBody(req, res, reader, body))
      res.status = 404;
  };
  s.Post(".*", notFound);
  s.Put(".*", notFound);
  s.Delete(".*", notFound);
  s.Patch(".*", notFound);
  s.Get("/monitoring/prometheus/metrics", [this](const httplib::Request &,
                                                 httplib::Response &res) {
    res.set_content(metrics_.prometheus_text(), "text/plain; version=0.0.4");
  });
  // httplib's own answers (404 for an unknown path, 413 for a body over
  // the limit, 400 for a malformed request) get a JSON error body too.
  httplib::Server::HandlerWithResponse errors =
      [this](const httplib::Request &req, httplib::Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        // A 413 whose body was read whole is httplib's form-urlencoded
        // limit (a method no content reader takes, such as PRI), not
        // --max_request_bytes: httplib's 400 for such a method.
        if (res.status == 413 && !req.body.empty())
          res.status = 400;
        std::string message;
        if (res.status == 413)
          message = "Request body is larger than --max_request_bytes=" +
                    std::to_string(options_.max_request_bytes);
        else if (res.status == 404)
          message = "Not found: " + req.method + " " + req.path;
        else
          message = "HTTP status " + std::to_string(res.status) + " for " +
                    req.method + " " + req.path;
        res.set_content(write_error(message), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      };
  s.set_error_handler(errors);
}

Server::~Server() { stop(); }

int Server::bind() {
  httplib::Server &s = http_->server;
  int port =
      options_.port == 0
          ? s.bind_to_any_port(options_.host)
          : (s.bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0)
    throw std::runtime_error("cannot listen on " + options_.host + ":" +
                             std::to_string(options_.port));
  // Linux takes a new backlog for a socket that is listening already.
  if (http_->listenSocket >= 0)
    ::listen(http_->listenSocket, SOMAXCONN);
  return port;
}

void Server::run() { http_->server.listen_after_bind(); }

void Server::stop() {
  // Batches run at once from now on: a request waiting for its batch to
  // fill does not hold the shutdown for batch_timeout_micros.
  if (batcher_)
    batcher_->flush();
  http_->server.stop();
}

} // namespace serving
} // namespace estc
