//===- grpc_bench.cpp - TF Serving's gRPC API under closed-loop load ------===//
//
// The gRPC half of bench/serving.sh (issue 32): estc-serve's --port under
// load from N concurrent clients, each on a TCP connection of its own (a
// channel with its own subchannel pool) and a thread calling the RPC again
// as soon as the answer arrives (wrk's closed loop, as the REST runs).
//
//   grpc_bench --target=127.0.0.1:PORT --model=mlp --input=x
//              --instance_json=DIR/mlp_predict.json [--connections=1,8]
//              [--seconds=5] [--status]
//
// Predict sends the one instance of --instance_json (serving_bench's
// {"instances": [[...]]}, the REST run's request) as the f32 tensor
// --input [1, n] to --model's serving_default. --status calls ModelService.
// GetModelStatus instead: gRPC's floor (no tensor decoded, no model run),
// beside the REST run's GET of the status. Every answer is checked (a
// failed call counts as an error and stops the run). Prints one JSON line
// per concurrency, as serving.sh's wrk lines:
//   GRPC {"p50_us", "p99_us", "requests", "duration_us", "errors"}
//
//===----------------------------------------------------------------------===//

#include "lib/Support/Flags.h"
#include "tools/estc-serve/tf_serving_apis.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tfs = ::tensorflow::serving;
using Clock = std::chrono::steady_clock;

namespace {

/// The floats of the first instance of a {"instances": [[...]]} file.
std::vector<float> readInstance(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument(path + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("instances") ||
      !doc["instances"].IsArray() || doc["instances"].Empty() ||
      !doc["instances"][0].IsArray())
    throw std::invalid_argument(path + ": not {\"instances\": [[numbers]]}");
  std::vector<float> out;
  for (const rapidjson::Value &v : doc["instances"][0].GetArray()) {
    if (!v.IsNumber())
      throw std::invalid_argument(path + ": an instance value is not a number");
    out.push_back(static_cast<float>(v.GetDouble()));
  }
  return out;
}

struct Run {
  std::vector<int64_t> latenciesNs;
  int64_t errors = 0;
  std::string firstError;
};

/// One client: its own connection, calls until `stop`.
void client(const std::string &target, const tfs::PredictRequest &predict,
            const tfs::GetModelStatusRequest &status, bool statusOnly,
            const std::atomic<bool> &stop, Run &run) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args);
  auto predictions = tfs::PredictionService::NewStub(channel);
  auto models = tfs::ModelService::NewStub(channel);
  tfs::PredictResponse predicted;
  tfs::GetModelStatusResponse statusOut;
  while (!stop.load(std::memory_order_relaxed)) {
    grpc::ClientContext ctx;
    auto t0 = Clock::now();
    grpc::Status s = statusOnly
                         ? models->GetModelStatus(&ctx, status, &statusOut)
                         : predictions->Predict(&ctx, predict, &predicted);
    auto t1 = Clock::now();
    if (!s.ok()) {
      if (run.errors++ == 0)
        run.firstError = s.error_message();
      return;
    }
    if (!statusOnly && predicted.outputs().empty()) {
      if (run.errors++ == 0)
        run.firstError = "an answer without outputs";
      return;
    }
    run.latenciesNs.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string target, model = "mlp", input = "x", instanceJson,
                      connections = "1";
  double seconds = 5;
  bool statusOnly = false;
  estc::flags::FlagParser parser("grpc_bench",
                                 "TF Serving's gRPC API under closed-loop load "
                                 "(bench/serving.sh).");
  parser.add(
      estc::flags::Flag("target", &target, "host:port of estc-serve's --port"));
  parser.add(estc::flags::Flag("model", &model, "the model to call"));
  parser.add(estc::flags::Flag("input", &input, "the signature's input key"));
  parser.add(estc::flags::Flag("instance_json", &instanceJson,
                               "{\"instances\": [[...]]}: the instance sent"));
  parser.add(estc::flags::Flag("connections", &connections,
                               "concurrencies, comma-separated"));
  parser.add(estc::flags::Flag("seconds", &seconds, "each run's duration"));
  parser.add(estc::flags::Flag("status", &statusOnly,
                               "call GetModelStatus (the floor)"));
  parser.parse_or_exit(argc, argv);
  try {
    if (target.empty())
      throw std::invalid_argument("--target is required");
    if (seconds <= 0)
      throw std::invalid_argument("--seconds must be positive");
    tfs::PredictRequest predict;
    predict.mutable_model_spec()->set_name(model);
    predict.mutable_model_spec()->set_signature_name("serving_default");
    if (!statusOnly) {
      if (instanceJson.empty())
        throw std::invalid_argument(
            "--instance_json is required (or --status)");
      std::vector<float> values = readInstance(instanceJson);
      tensorflow::TensorProto &t = (*predict.mutable_inputs())[input];
      t.set_dtype(tensorflow::DT_FLOAT);
      t.mutable_tensor_shape()->add_dim()->set_size(1);
      t.mutable_tensor_shape()->add_dim()->set_size(
          static_cast<int64_t>(values.size()));
      t.set_tensor_content(values.data(), values.size() * sizeof(float));
    }
    tfs::GetModelStatusRequest status;
    status.mutable_model_spec()->set_name(model);

    std::stringstream list(connections);
    for (std::string item; std::getline(list, item, ',');) {
      int n = std::stoi(item);
      if (n < 1)
        throw std::invalid_argument("--connections: " + item);
      std::vector<Run> runs(static_cast<size_t>(n));
      std::atomic<bool> stop{false};
      std::vector<std::thread> threads;
      auto start = Clock::now();
      for (int i = 0; i < n; ++i)
        threads.emplace_back(client, target, std::cref(predict),
                             std::cref(status), statusOnly, std::cref(stop),
                             std::ref(runs[static_cast<size_t>(i)]));
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      stop = true;
      for (std::thread &t : threads)
        t.join();
      auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
                          Clock::now() - start)
                          .count();
      std::vector<int64_t> all;
      int64_t errors = 0;
      std::string firstError;
      for (const Run &r : runs) {
        all.insert(all.end(), r.latenciesNs.begin(), r.latenciesNs.end());
        errors += r.errors;
        if (firstError.empty())
          firstError = r.firstError;
      }
      if (errors)
        throw std::runtime_error("a call failed: " + firstError);
      if (all.empty())
        throw std::runtime_error("no call completed");
      std::sort(all.begin(), all.end());
      auto pct = [&](double p) {
        return all[std::min(
                   all.size() - 1,
                   static_cast<size_t>(p * static_cast<double>(all.size())))] /
               1000;
      };
      std::printf(
          "GRPC {\"p50_us\": %lld, \"p99_us\": %lld, \"requests\": %zu, "
          "\"duration_us\": %lld, \"errors\": 0}\n",
          static_cast<long long>(pct(0.5)), static_cast<long long>(pct(0.99)),
          all.size(), static_cast<long long>(duration));
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "grpc_bench: error: " << e.what() << "\n";
    return 1;
  }
}
