//===- rnn_torch_bench.cpp - The SST-2-shaped LSTM in libtorch -----------===//
//
//   rnn_torch_bench --data=FILE [--threads=1,2] [--warmup=20] [--steps=200]
//
// libtorch's side of bench/rnn.sh (issue 27): bench/RnnModels.h's sst2
// model with libtorch's C++ frontend, torch::nn::Embedding(16384, 128)
// (uniform +-0.05), torch::nn::LSTM(128, 128) batch first,
// torch::nn::Linear(128, 2), cross_entropy, optim::Adam(0.002), trained on
// the same padded batches of bench/make_sst2_like.py's FILE, in two forms
// of the masking:
//   packed  pack_padded_sequence(x, lengths, enforce_sorted=false): the
//           LSTM runs each step on the sequences still running (PyTorch's
//           way to mask; fewer FLOPs than a padded batch)
//   padded  the LSTM over the whole padded batch, the output at step
//           length - 1 of each sequence gathered (the same h as a masked
//           LSTM's final state, the FLOPs of estc's and TF's)
// Each thread count runs in a child process pinned to `threads` cores with
// torch::set_num_threads(threads); steps/s between the end of step `warmup`
// and the end of the last (a bare loop: no Estimator, no input pipeline),
// and the process's CPU time per step.
// Prints one JSON line per (form, threads) ({"peer": "libtorch", ...}).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/PinnedChild.h"
#include "bench/RnnModels.h"
#include "lib/Support/Flags.h"

#include <torch/torch.h>

#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Sst2Impl : torch::nn::Module {
  explicit Sst2Impl(int64_t vocab)
      : embedding(
            register_module("embedding", torch::nn::Embedding(vocab, 128))),
        lstm(register_module(
            "lstm", torch::nn::LSTM(
                        torch::nn::LSTMOptions(128, 128).batch_first(true)))),
        dense(register_module("dense", torch::nn::Linear(128, 2))) {
    torch::NoGradGuard noGrad;
    embedding->weight.uniform_(-0.05, 0.05);
  }
  torch::Tensor forward(const torch::Tensor &ids, const torch::Tensor &lengths,
                        bool packed) {
    torch::Tensor x = embedding->forward(ids);
    torch::Tensor h;
    if (packed) {
      auto input = torch::nn::utils::rnn::pack_padded_sequence(
          x, lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
      h = std::get<0>(std::get<1>(lstm->forward_with_packed_input(input)))[0];
    } else {
      torch::Tensor out = std::get<0>(lstm->forward(x)); // [b, T, 128]
      torch::Tensor last =
          (lengths - 1).view({-1, 1, 1}).expand({out.size(0), 1, out.size(2)});
      h = out.gather(1, last).squeeze(1);
    }
    return dense->forward(h);
  }
  torch::nn::Embedding embedding;
  torch::nn::LSTM lstm;
  torch::nn::Linear dense;
};
TORCH_MODULE(Sst2);

std::string runOne(const std::string &file, int threads, bool packed,
                   int64_t warmup, int64_t steps) {
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  estc::bench::TokenData data = estc::bench::readTokenData(file);
  std::vector<estc::bench::TokenBatch> raw =
      estc::bench::paddedBatches(data, 64);
  struct Batch {
    torch::Tensor ids, lengths, labels;
  };
  std::vector<Batch> batches;
  for (auto &b : raw)
    batches.push_back(
        {torch::tensor(b.ids, torch::kLong).view({b.batch, b.length}),
         torch::tensor(b.lengths, torch::kLong),
         torch::tensor(b.labels, torch::kLong)});
  Sst2 model(data.vocab);
  torch::optim::Adam adam(model->parameters(),
                          torch::optim::AdamOptions(0.002));
  std::vector<std::chrono::steady_clock::time_point> times;
  std::vector<double> cpu; // the process's CPU seconds
  auto cpuNow = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) +
           1e-9 * static_cast<double>(t.tv_nsec);
  };
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const Batch &b = batches[s % batches.size()];
    adam.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        model->forward(b.ids, b.lengths, packed), b.labels);
    loss.backward();
    adam.step();
    times.push_back(std::chrono::steady_clock::now());
    cpu.push_back(cpuNow());
  }
  double seconds =
      std::chrono::duration<double>(times.back() - times[warmup - 1]).count();
  double perSec = static_cast<double>(steps) / seconds;
  struct rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::ostringstream json;
  json << "{\"peer\": \"libtorch\", \"torch\": \"" << TORCH_VERSION
       << "\", \"part\": \"sst2\", \"form\": \""
       << (packed ? "packed" : "padded") << "\", \"threads\": " << threads
       << ", \"batch\": 64, \"steps_per_sec\": " << perSec
       << ", \"us_per_step\": " << 1e6 / perSec << ", \"cpu_ms_per_step\": "
       << (cpu.back() - cpu[warmup - 1]) / static_cast<double>(steps) * 1e3
       << ", \"peak_rss_mib\": " << usage.ru_maxrss / 1024.0 << "}";
  return json.str();
}

} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string file, threadList = "1,2", forms = "packed,padded";
  int64_t warmup = 20, steps = 200;
  estc::flags::FlagParser parser("rnn_torch_bench",
                                 "The SST-2-shaped LSTM trained with libtorch "
                                 "(issue 27's peer): steps/s.");
  parser.add(
      Flag("data", &file, "bench/make_sst2_like.py's file").value_name("FILE"));
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("forms", &forms, "packed, padded, or both")
                 .value_name("packed,padded"));
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("steps", &steps, "timed steps").positive());
  parser.parse_or_exit(argc, argv);
  if (file.empty())
    parser.fail("--data=FILE is required (bench/make_sst2_like.py)");
  std::vector<int> threads = estc::bench::parseThreadList(parser, threadList);
  std::vector<bool> packedForms;
  for (const std::string &f : estc::bench::splitList(forms)) {
    if (f != "packed" && f != "padded")
      parser.fail("--forms=" + forms + ": '" + f + "' (packed, padded)");
    packedForms.push_back(f == "packed");
  }
  std::printf("CPU: %s\n", estc::bench::cpuName().c_str());
  std::fflush(stdout);
  bool failed = false;
  for (bool packed : packedForms)
    for (int t : threads) {
      std::string json;
      try {
        json = estc::bench::runPinnedChild(
            t, [&] { return runOne(file, t, packed, warmup, steps); },
            "rnn_torch_bench: error: ");
      } catch (const std::runtime_error &) {
        return 1; // no pipe
      }
      if (json.empty()) {
        failed = true;
        continue;
      }
      std::printf("%s\n", json.c_str());
      std::fflush(stdout);
    }
  return failed ? 1 : 0;
}
