//===- flags_fuzzer.cpp - Command-line flags (lib/Support/Flags) ---------===//
//
// FlagParser::parse, the non-exiting entry point under parse_or_exit (which
// every estc program calls), on an argv made of the input's NUL-separated
// pieces. One flag of every kind the parser supports, with the checks
// programs use (range, choices, required) and positional arguments. The
// documented failure is FlagError; --help returns false. --help's text,
// which shows the current values, is rendered after each parse.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Support/Flags.h"

using namespace estc;
using namespace estc::fuzz;
using flags::Flag;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // argv[0], then the input split at NUL bytes (at most 64 arguments).
  std::vector<std::string> args{"prog"};
  std::string_view rest = bytesOf(data, size);
  while (!rest.empty() && args.size() <= 64) {
    size_t end = rest.find('\0');
    args.emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
  }
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());

  bool verbose = false;
  int threads = 1;
  int64_t batch_size = 128;
  double learning_rate = 0.01;
  std::string model = "mlp", data_dir = "/tmp";
  std::optional<int64_t> max_steps;
  std::optional<double> min_accuracy;
  std::optional<std::string> output;
  std::string input, extra;
  flags::FlagParser parser("prog", "A program with one flag of each kind.");
  parser.add(Flag("verbose", &verbose, "log every step"));
  parser.add(Flag("threads", &threads, "threads").min(1).max(256));
  parser.add(Flag("batch_size", &batch_size, "examples per step").positive());
  parser.add(Flag("learning_rate", &learning_rate, "step size").min(0));
  parser.add(Flag("model", &model, "the model").choices({"mlp", "convnet"}));
  parser.add(Flag("data_dir", &data_dir, "data").value_name("DIR"));
  parser.add(Flag("max_steps", &max_steps, "stop after N steps"));
  parser.add(Flag("min_accuracy", &min_accuracy, "fail below").max(1));
  parser.add(Flag("o", &output, "output file").required());
  parser.positional("INPUT", &input, "the input");
  parser.positional("EXTRA", &extra, "more", /*required=*/false);

  try {
    parser.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const flags::FlagError &e) {
    if (std::string(e.what()).empty())
      die("FlagError without a message");
  }
  if (parser.help().empty())
    die("empty --help");
  return 0;
}
