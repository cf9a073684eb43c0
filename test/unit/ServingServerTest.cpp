//===- ServingServerTest.cpp - estc-serve's server over loopback HTTP ---===//
//
// The server library (tools/estc-serve: Server, ModelManager, Batcher,
// Metrics) in process, on a free loopback port, talked to with httplib's
// client and raw sockets. What it serves is ScaleModel (ScaleServable.h),
// loaded from a version folder holding a "scale" file (no "scale": a
// corrupt version, LoadError): y = scale * x, so answers are known exactly
// and a version swap is visible in them. Versions are found by
// serving::list_versions, as estc-serve finds exports.
//
//===----------------------------------------------------------------------===//

#include "test/unit/ScaleServable.h"
#include "tools/estc-serve/Server.h"
#include "tools/estc-serve/ServingConfig.h"

#include "lib/Data/Example.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

using namespace estc;
using namespace estc::serving;
using estc::serving::testing::ScaleModel;
namespace fs = std::filesystem;

namespace {

Loader scaleLoader() {
  Loader loader;
  loader.list_versions = [](const std::string &base) {
    return list_versions(base);
  };
  loader.load = [](const std::string &dir) -> std::shared_ptr<const Servable> {
    std::ifstream in(dir + "/scale");
    float scale;
    if (!(in >> scale))
      throw LoadError(dir + ": no scale file");
    int delay = 0;
    std::ifstream d(dir + "/delay_ms");
    d >> delay;
    return std::make_shared<ScaleModel>(scale, delay);
  };
  return loader;
}

/// A version folder written whole and renamed in, as export_saved_model
/// writes one.
void addVersion(const fs::path &base, int64_t version, const char *scale,
                int delayMs = 0) {
  fs::path tmp = base / ("temp-" + std::to_string(version));
  fs::create_directories(tmp);
  if (scale)
    std::ofstream(tmp / "scale") << scale;
  if (delayMs)
    std::ofstream(tmp / "delay_ms") << delayMs;
  fs::rename(tmp, base / std::to_string(version));
}

class ServingServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("estc-serve-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "m");
  }
  void TearDown() override {
    stop();
    fs::remove_all(base_);
  }

  void start(ServerOptions options = {}, VersionPolicy policy = {}) {
    ModelConfig config;
    config.name = "m";
    config.base_path = (base_ / "m").string();
    config.policy = policy;
    config.version_labels["stable"] = 1;
    config.version_labels["gone"] = 99;
    models_ = std::make_unique<ModelManager>(
        std::vector<ModelConfig>{config}, scaleLoader(),
        [this](const std::string &line) {
          std::lock_guard<std::mutex> lock(logMutex_);
          log_ += line + "\n";
        });
    models_->poll();
    options.host = "127.0.0.1";
    options.port = 0;
    options.num_threads = 16;
    server_ = std::make_unique<Server>(options, *models_);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  void stop() {
    if (server_) {
      server_->stop();
      thread_.join();
      server_.reset();
    }
    models_.reset();
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    return c;
  }
  httplib::Result post(const std::string &path, const std::string &body) {
    return client().Post(path.c_str(), body, "application/json");
  }
  std::string log() {
    std::lock_guard<std::mutex> lock(logMutex_);
    return log_;
  }

  fs::path base_;
  std::unique_ptr<ModelManager> models_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex logMutex_;
  std::string log_;
};

const char *kPredict = R"({"instances": [[1, 2], [3, -4]]})";

} // namespace

TEST_F(ServingServerTest, PredictEqualsTheServableRunInProcess) {
  addVersion(base_ / "m", 1, "2");
  start();
  auto res = post("/v1/models/m:predict", kPredict);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  // The same request parsed and run in process, written the same way.
  ModelManager::Handle h = models_->get("m", std::nullopt, std::nullopt);
  PredictRequest req =
      parse_predict_request(kPredict, h.servable->signatures());
  TensorMap expected = h.servable->run("serving_default", req.inputs, {});
  EXPECT_EQ(res->body, write_predict_response(expected, PredictFormat::Row));
  EXPECT_EQ(
      res->body,
      R"({"predictions":[{"scale":2.0,"y":[2.0,4.0]},{"scale":2.0,"y":[6.0,-8.0]}]})");
  res =
      post("/v1/models/m/versions/1:predict", R"({"inputs": {"x": [[1, 2]]}})");
  EXPECT_EQ(res->body, R"({"outputs":{"scale":[2.0],"y":[[2.0,4.0]]}})");
  res = post("/v1/models/m/labels/stable:predict", R"({"inputs": [[1, 2]]})");
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(ServingServerTest, ClassifyAndRegress) {
  addVersion(base_ / "m", 1, "0.5");
  start();
  auto res = post(
      "/v1/models/m:classify",
      R"({"signature_name": "classify", "examples": [{"x": 1.0}, {"x": 0.5}]})");
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(
      res->body,
      R"({"results":[[["neg",0.5],["pos",0.5]],[["neg",0.75],["pos",0.25]]]})");
  res = post(
      "/v1/models/m:regress",
      R"({"signature_name": "regress", "context": {"x": 4.0}, "examples": [{}, {"x": 2.0}]})");
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, R"({"results":[2.0,1.0]})");
  // A bad tf.Example is the servable's DataError: 400.
  res = post("/v1/models/m:regress",
             R"({"signature_name": "regress", "examples": [{"y": 1}]})");
  EXPECT_EQ(res->status, 400) << res->body;
  // The default signature is a predict signature.
  res = post("/v1/models/m:classify", R"({"examples": [{"x": 1.0}]})");
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("Expected classification signature"),
            std::string::npos);
}

TEST_F(ServingServerTest, StatusAndMetadata) {
  addVersion(base_ / "m", 1, "1");
  addVersion(base_ / "m", 2, "1");
  start({}, {VersionPolicy::Kind::All, 1, {}});
  auto res = client().Get("/v1/models/m");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(
      res->body,
      R"({"model_version_status":[{"version":"2","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}},{"version":"1","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})");
  res = client().Get("/v1/models/m/versions/1");
  EXPECT_NE(res->body.find(R"("version":"1")"), std::string::npos);
  res = client().Get("/v1/models/m/metadata");
  EXPECT_EQ(res->status, 200);
  rapidjson::Document doc;
  doc.Parse(res->body.c_str());
  ASSERT_FALSE(doc.HasParseError()) << res->body;
  EXPECT_STREQ(doc["model_spec"]["version"].GetString(), "2");
  EXPECT_STREQ(doc["metadata"]["signature_def"]["signature_def"]["regress"]
                  ["method_name"]
                      .GetString(),
               kRegressMethodName);
}

TEST_F(ServingServerTest, ErrorsWithTfServingsStatusCodes) {
  ServerOptions options;
  options.max_request_bytes = 1000;
  addVersion(base_ / "m", 1, "1");
  start(options);
  auto expect = [&](httplib::Result res, int status, const std::string &text) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    EXPECT_NE(res->body.find(text), std::string::npos) << res->body;
    rapidjson::Document doc;
    doc.Parse(res->body.c_str());
    EXPECT_TRUE(!doc.HasParseError() && doc.IsObject() &&
                doc.HasMember("error"))
        << res->body;
  };
  expect(post("/v1/models/nope:predict", kPredict), 404,
         "Servable not found for request: Latest(nope)");
  expect(post("/v1/models/m/versions/7:predict", kPredict), 404,
         "Servable not found for request: Specific(m, 7)");
  expect(post("/v1/models/m/labels/nope:predict", kPredict), 400,
         "Unrecognized servable version label: nope");
  expect(post("/v1/models/m/labels/gone:predict", kPredict), 404,
         "Specific(m, 99)");
  expect(client().Get("/v1/models/nope"), 404,
         "Could not find any versions of model nope");
  expect(post("/v1/models/m:predict", "{"), 400, "JSON Parse error");
  expect(post("/v1/models/m:predict", R"({"instances": [["a", "b"]]})"), 400,
         "is not of expected type: float");
  // Shape errors from the servable's run: 400.
  expect(post("/v1/models/m:predict", R"({"inputs": {"x": 3}})"), 400,
         "x must be F32 [batch, ...]");
  expect(client().Get("/v1/models/m:predict"), 400, "Malformed request");
  expect(client().Put("/v1/models/m", "{}", "application/json"), 405,
         "not allowed");
  expect(client().Get("/v2/models/m"), 404, "Not found");
  expect(post("/v1/models/m:predict", std::string(2000, ' ')), 413,
         "--max_request_bytes=1000");
  // The server still serves after all of these.
  auto res = post("/v1/models/m:predict", kPredict);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

namespace {
int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  return fd;
}
} // namespace

// TF Serving reads the body as JSON whatever its Content-Type: curl -d
// sends application/x-www-form-urlencoded, which httplib's regular handlers
// form-decode and refuse over 8 KiB with 413 (its
// CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH). Bodies of any type are
// served up to --max_request_bytes, and 413 means only that limit, with a
// Content-Length or chunked.
TEST_F(ServingServerTest, JsonBodyOfAnyContentTypeUpToTheLimit) {
  ServerOptions options;
  options.max_request_bytes = 100000;
  addVersion(base_ / "m", 1, "2");
  start(options);
  std::string big = R"({"instances": [)";
  for (int i = 0; i < 1000; ++i)
    big += (i ? ", [" : "[") + std::to_string(i) + ", " + std::to_string(i) +
           ".5]";
  big += "]}";
  ASSERT_GT(big.size(), 8192u);
  ASSERT_LT(big.size(), 100000u);
  ModelManager::Handle h = models_->get("m", std::nullopt, std::nullopt);
  PredictRequest req = parse_predict_request(big, h.servable->signatures());
  const std::string expected = write_predict_response(
      h.servable->run("serving_default", req.inputs, {}), PredictFormat::Row);
  for (const char *type : {"application/x-www-form-urlencoded", "text/plain",
                           "application/octet-stream", "application/json"}) {
    auto res = client().Post("/v1/models/m:predict", big, type);
    ASSERT_TRUE(res) << type;
    EXPECT_EQ(res->status, 200) << type << ": " << res->body.substr(0, 200);
    EXPECT_EQ(res->body, expected) << type;
  }
  // Chunked (no Content-Length): the same answer.
  auto chunked = [&](const std::string &body, const char *type) {
    return client().Post(
        "/v1/models/m:predict",
        [&body](size_t offset, httplib::DataSink &sink) {
          size_t n = std::min<size_t>(4096, body.size() - offset);
          sink.write(body.data() + offset, n);
          if (offset + n == body.size())
            sink.done();
          return true;
        },
        type);
  };
  auto res = chunked(big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body.substr(0, 200);
  EXPECT_EQ(res->body, expected);
  // A form-urlencoded body that is not JSON: the JSON error, not 413.
  res = client().Post("/v1/models/m:predict", std::string(9000, 'a') + "=b",
                      "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("JSON Parse error"), std::string::npos) << res->body;
  // Over the limit, whatever the type and framing: 413 with the limit.
  const std::string tooBig = big + std::string(100000, ' ');
  const std::string limit =
      R"({"error":"Request body is larger than --max_request_bytes=100000"})";
  for (const char *type : {"application/x-www-form-urlencoded",
                           "application/json", "text/plain"}) {
    res = client().Post("/v1/models/m:predict", tooBig, type);
    ASSERT_TRUE(res) << type;
    EXPECT_EQ(res->status, 413) << type;
    EXPECT_EQ(res->body, limit) << type;
  }
  res = chunked(tooBig, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(res->body, limit);
  // Other methods and paths read their body the same way.
  res = client().Put("/v1/models/m", big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405) << res->body;
  res = client().Post("/v2/m", big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
  // A method no handler reads (PRI) with a big form body: httplib's 400,
  // not a 413 that names the limit.
  int fd = connectTo(port_);
  std::string pri = "PRI /v1/models/m HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: 9000\r\nConnection: close\r\n\r\n" +
                    std::string(9000, 'a');
  ASSERT_EQ(::send(fd, pri.data(), pri.size(), 0),
            static_cast<ssize_t>(pri.size()));
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 ", 0), 0u) << answer;
  // The server still serves.
  res = post("/v1/models/m:predict", kPredict);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServingServerTest, NoVersionLoadedIs503) {
  start();
  auto res = post("/v1/models/m:predict", kPredict);
  EXPECT_EQ(res->status, 503) << res->body;
}

TEST_F(ServingServerTest, VersionSwapUnderLoadFailsNoRequest) {
  addVersion(base_ / "m", 1, "1");
  start();
  models_->start_polling(std::chrono::milliseconds(20));
  std::atomic<bool> done{false};
  std::atomic<int> ok{0}, failed{0}, sawTwo{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      httplib::Client c = client();
      while (!done) {
        auto res = c.Post("/v1/models/m:predict", kPredict, "application/json");
        if (res && res->status == 200) {
          ++ok;
          if (res->body.find(R"("scale":3.0)") != std::string::npos)
            ++sawTwo;
        } else {
          ++failed;
        }
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  addVersion(base_ / "m", 2, "3");
  for (int i = 0;
       i < 200 && models_->served_versions("m") != std::vector<int64_t>{2}; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  done = true;
  for (auto &t : clients)
    t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_GT(ok, 20);
  EXPECT_GT(sawTwo, 0);
  EXPECT_EQ(models_->served_versions("m"), std::vector<int64_t>{2});
  // Version 1 is unloaded: no request holds it any more.
  EXPECT_EQ(ScaleModel::liveModels, 1);
  EXPECT_NE(log().find("loaded version 2"), std::string::npos);
  EXPECT_NE(log().find("unloading version 1"), std::string::npos);
}

TEST_F(ServingServerTest, CorruptNewVersionKeepsThePreviousServing) {
  addVersion(base_ / "m", 1, "1");
  start();
  addVersion(base_ / "m", 2, nullptr);
  models_->poll();
  models_->poll();
  EXPECT_EQ(models_->served_versions("m"), std::vector<int64_t>{1});
  auto res = post("/v1/models/m:predict", kPredict);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find(R"("scale":1.0)"), std::string::npos);
  // One log line for the failure, however many polls see it.
  std::string text = log();
  size_t first = text.find("version 2 failed to load: ");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("version 2 failed to load", first + 1),
            std::string::npos);
  res = client().Get("/v1/models/m");
  EXPECT_NE(
      res->body.find(
          R"({"version":"2","state":"END","status":{"error_code":"UNKNOWN","error_message":")"),
      std::string::npos)
      << res->body;
}

TEST_F(ServingServerTest, BatchingGivesTheUnbatchedResults) {
  addVersion(base_ / "m", 1, "1.5", /*delayMs=*/20);
  ServerOptions options;
  options.batching = BatchingOptions{8, 50000, 10, 2};
  start(options);
  // Requests of 1..3 rows, two of another trailing shape (their own
  // queue), one bad one (fails alone).
  std::vector<std::string> bodies;
  for (int i = 0; i < 12; ++i) {
    std::string rows;
    for (int r = 0; r <= i % 3; ++r)
      rows += (r ? "," : "") + std::string("[") + std::to_string(i) + "," +
              std::to_string(r) + "]";
    bodies.push_back(R"({"instances": [)" + rows + "]}");
  }
  bodies.push_back(R"({"instances": [[1, 2, 3]]})");
  bodies.push_back(R"({"instances": [[4, 5, 6]]})");
  std::vector<std::string> expected;
  for (const auto &b : bodies) {
    ModelManager::Handle h = models_->get("m", std::nullopt, std::nullopt);
    PredictRequest req = parse_predict_request(b, h.servable->signatures());
    expected.push_back(write_predict_response(
        h.servable->run("serving_default", req.inputs, {}), req.format));
  }
  ScaleModel::runs = 0;
  std::vector<std::string> got(bodies.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i)
    threads.emplace_back([&, i] {
      auto res = post("/v1/models/m:predict", bodies[i]);
      got[i] = res ? std::to_string(res->status) + res->body : "no response";
    });
  for (auto &t : threads)
    t.join();
  for (size_t i = 0; i < bodies.size(); ++i)
    EXPECT_EQ(got[i], "200" + expected[i]) << bodies[i];
  // 14 requests, far fewer runs.
  EXPECT_LT(ScaleModel::runs, 10);
  std::string metrics = client().Get("/monitoring/prometheus/metrics")->body;
  EXPECT_NE(metrics.find(
                ":tensorflow:serving:batching_session:processed_batch_size_"
                "count{model_name=\"m\",signature_name=\"serving_default\"}"),
            std::string::npos)
      << metrics;
}

TEST(BatcherTest, OneBadRequestFailsAlone) {
  auto model = std::make_shared<ScaleModel>(2.0f, 10);
  Batcher batcher(BatchingOptions{16, 100000, 10, 1});
  TensorMap good;
  good["x"] = TensorValue::of<float>({1, 2}, {1, 2});
  TensorMap bad;
  bad["x"] = TensorValue::of<int64_t>({1, 2}, {1, 2});
  std::exception_ptr badError;
  TensorMap goodOut;
  std::thread a(
      [&] { goodOut = batcher.run(model, "m", "serving_default", good); });
  std::thread b([&] {
    try {
      batcher.run(model, "m", "serving_default", bad);
    } catch (...) {
      badError = std::current_exception();
    }
  });
  a.join();
  b.join();
  EXPECT_EQ(goodOut.at("y").values<float>(), (std::vector<float>{2, 4}));
  EXPECT_TRUE(badError);
}

TEST(BatcherTest, ConcatAndSliceRows) {
  TensorValue a = TensorValue::of<int32_t>({1, 2}, {1, 2});
  TensorValue b = TensorValue::of<int32_t>({2, 2}, {3, 4, 5, 6});
  TensorValue ab = concat_rows({&a, &b});
  EXPECT_EQ(ab.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(slice_rows(ab, 1, 3).values<int32_t>(),
            (std::vector<int32_t>{3, 4, 5, 6}));
  TensorValue s = TensorValue::of_strings({2}, {"a", "b"});
  EXPECT_EQ(slice_rows(concat_rows({&s, &s}), 1, 3).strings,
            (std::vector<std::string>{"b", "a"}));
  TensorValue c = TensorValue::of<int32_t>({1, 3}, {1, 2, 3});
  EXPECT_THROW(concat_rows({&a, &c}), std::invalid_argument);
  EXPECT_THROW(Batcher(BatchingOptions{0, 0, 1, 1}), std::invalid_argument);
}

TEST_F(ServingServerTest, StopLetsTheRequestsInFlightFinish) {
  addVersion(base_ / "m", 1, "1", /*delayMs=*/300);
  start();
  std::string answer;
  std::thread t([&] {
    auto res = post("/v1/models/m:predict", kPredict);
    answer = res ? std::to_string(res->status) : "no response";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto begin = std::chrono::steady_clock::now();
  stop();
  t.join();
  EXPECT_EQ(answer, "200");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

TEST_F(ServingServerTest, StalledClientTimesOutAndDisconnectsAreHarmless) {
  addVersion(base_ / "m", 1, "1", /*delayMs=*/100);
  ServerOptions options;
  options.timeout_ms = 300;
  start(options);
  // Headers promise a body that never comes: dropped after the timeout.
  int stalled = connectTo(port_);
  std::string head = "POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 100\r\n\r\n{\"inst";
  ASSERT_EQ(::send(stalled, head.data(), head.size(), 0),
            static_cast<ssize_t>(head.size()));
  // Without the server's timeout recv would wait for this one (5 s).
  timeval wait{5, 0};
  ::setsockopt(stalled, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  auto begin = std::chrono::steady_clock::now();
  char buf[512];
  while (::recv(stalled, buf, sizeof buf, 0) > 0) {
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(3));
  ::close(stalled);
  // A client that sends a request and leaves before the answer.
  for (int i = 0; i < 4; ++i) {
    int gone = connectTo(port_);
    std::string req =
        std::string("POST /v1/models/m:predict HTTP/1.1\r\n") +
        "Host: x\r\nContent-Length: " + std::to_string(std::strlen(kPredict)) +
        "\r\n\r\n" + kPredict;
    ::send(gone, req.data(), req.size(), 0);
    ::close(gone);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto res = post("/v1/models/m:predict", kPredict);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServingServerTest, MetricsCountRequestsByModelMethodAndStatus) {
  addVersion(base_ / "m", 1, "1");
  start();
  post("/v1/models/m:predict", kPredict);
  post("/v1/models/m:predict", kPredict);
  post("/v1/models/m:predict", "{");
  auto res = client().Get("/monitoring/prometheus/metrics");
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find(":tensorflow:serving:request_count{model_name=\"m\","
                           "method=\"predict\",status=\"OK\"} 2\n"),
            std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("status=\"INVALID_ARGUMENT\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      res->body.find(":tensorflow:serving:request_latency_count{model_name="
                     "\"m\",API=\"predict\",entrypoint=\"REST\"} 3\n"),
      std::string::npos);
  EXPECT_NE(
      res->body.find("# TYPE :tensorflow:serving:request_latency histogram"),
      std::string::npos);
}

TEST(ServingConfigTest, TfServingsTextProtos) {
  auto models = parse_model_server_config(R"(
    model_config_list {
      config {
        name: "a" base_path: "/models/a" model_platform: "tensorflow"
        model_version_policy { specific { versions: 3 versions: 5 } }
        version_labels { key: "stable" value: 3 }
      }
      config { name: "b" base_path: "/models/b"
               model_version_policy { latest { num_versions: 2 } } }
      config { name: "c" base_path: "/models/c" model_version_policy { all {} } }
    })",
                                          "models.config");
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].policy.kind, VersionPolicy::Kind::Specific);
  EXPECT_EQ(models[0].policy.versions, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(models[0].version_labels.at("stable"), 3);
  EXPECT_EQ(models[1].policy.num_versions, 2);
  EXPECT_EQ(models[2].policy.kind, VersionPolicy::Kind::All);
  auto error = [](const std::string &text) {
    try {
      parse_model_server_config(text, "f.config");
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("model_config_list { config { name: \"a\" } }"),
            "f.config: model 'a': no base_path");
  EXPECT_EQ(error("model_config_list { config { nme: \"a\" } }")
                .rfind("f.config: line 1:", 0),
            0u);
  EXPECT_EQ(error("model_config_list { config { name: \"a\" base_path: \"/x\" "
                  "model_platform: \"pytorch\" } }"),
            "f.config: model 'a': model_platform 'pytorch' (estc-serve serves "
            "estc exports: \"tensorflow\" or \"estc\")");
  BatchingOptions b = parse_batching_parameters(
      "max_batch_size { value: 64 } batch_timeout_micros { value: 2000 } "
      "num_batch_threads { value: 3 } max_enqueued_batches { value: 7 }",
      "batching.config");
  EXPECT_EQ(b.max_batch_size, 64);
  EXPECT_EQ(b.batch_timeout_micros, 2000);
  EXPECT_EQ(b.num_batch_threads, 3);
  EXPECT_EQ(b.max_enqueued_batches, 7);
  EXPECT_THROW(parse_batching_parameters("max_batch_size { value: 0 }", "f"),
               std::invalid_argument);
}

TEST(ModelManagerTest, PoliciesPickVersions) {
  fs::path base = fs::temp_directory_path() /
                  ("estc-serve-policy-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  for (int v : {1, 2, 3, 4})
    addVersion(base, v, "1");
  addVersion(base, 5, nullptr);
  auto served = [&](VersionPolicy policy) {
    ModelManager m({{"m", base.string(), policy, {}}}, scaleLoader(),
                   [](const std::string &) {});
    m.poll();
    return m.served_versions("m");
  };
  // The newest two that load: 5 is corrupt.
  EXPECT_EQ(served({VersionPolicy::Kind::Latest, 2, {}}),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(served({VersionPolicy::Kind::All, 1, {}}),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(served({VersionPolicy::Kind::Specific, 1, {1, 3, 9}}),
            (std::vector<int64_t>{1, 3}));
  fs::remove_all(base);
  EXPECT_THROW(ModelManager({{"", "/x", {}, {}}}, scaleLoader()),
               std::invalid_argument);
}
