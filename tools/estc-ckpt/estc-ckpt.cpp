//===- estc-ckpt.cpp - Inspect estc checkpoints ---------------------------===//
//
//   estc-ckpt FILE_OR_DIR               every tensor: dtype, shape, min, max,
//                                       mean, std, NaN and Inf counts
//   estc-ckpt --tensor NAME FILE_OR_DIR one tensor's values
//   estc-ckpt --verify FILE_OR_DIR      check the header and every CRC32C
//
// FILE_OR_DIR is a checkpoint file, its prefix (model_dir/model.ckpt-200), or
// a model_dir (its latest valid checkpoint). Every mode first checks the
// header and every tensor's CRC32C, and prints nothing else for a corrupt
// file but one line on stdout, "CORRUPT: <file>: <what is wrong>", with exit
// status 1. Every other error is one line on stderr: exit status 2 for a bad
// command line (lib/Support/Flags.h), 1 for a checkpoint that cannot be read
// (missing, an I/O error) or an unknown tensor.
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Support/Flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

using namespace estc;
using namespace estc::train;

namespace {
int fail(const std::string &message) {
  estc::flags::print_error_line("estc-ckpt", message);
  return 1;
}

std::string formatValue(const TensorValue &t, int64_t i) {
  double v = t.element(i);
  char buf[64];
  switch (t.dtype) {
  case DType::Bool:
    return v != 0 ? "true" : "false";
  case DType::Int32:
    return std::to_string(static_cast<long long>(v));
  case DType::Int64: {
    int64_t x;
    std::memcpy(&x, t.data.data() + i * 8, 8);
    return std::to_string(x);
  }
  case DType::Float64:
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  default:
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
  }
}

std::string formatStat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void printStats(const std::string &name, const TensorValue &t) {
  int64_t n = t.num_elements(), nan = 0, inf = 0, finite = 0;
  double lo = INFINITY, hi = -INFINITY, sum = 0, sumSq = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.element(i);
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++inf;
    } else {
      ++finite;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
  }
  std::cout << name << " " << t.spec().str();
  if (finite == 0) {
    std::cout << " min=- max=- mean=- std=-";
  } else {
    double mean = sum / finite;
    for (int64_t i = 0; i < n; ++i) {
      double v = t.element(i);
      if (std::isfinite(v))
        sumSq += (v - mean) * (v - mean);
    }
    std::cout << " min=" << formatStat(lo) << " max=" << formatStat(hi)
              << " mean=" << formatStat(mean)
              << " std=" << formatStat(std::sqrt(sumSq / finite));
  }
  std::cout << " nan=" << nan << " inf=" << inf << "\n";
}

void printValues(const std::string &name, const TensorValue &t) {
  std::cout << name << " " << t.spec().str() << "\n";
  int64_t n = t.num_elements();
  if (t.shape.empty()) {
    std::cout << formatValue(t, 0) << "\n";
    return;
  }
  int64_t row = t.shape.back();
  if (n == 0 || row == 0) {
    std::cout << "(no elements)\n";
    return;
  }
  for (int64_t start = 0; start < n; start += row) {
    if (t.shape.size() > 1) {
      // The index of this row: all dimensions but the last.
      std::string index = "[";
      int64_t rest = start / row;
      std::vector<int64_t> idx(t.shape.size() - 1);
      for (size_t d = idx.size(); d-- > 0;) {
        idx[d] = rest % t.shape[d];
        rest /= t.shape[d];
      }
      for (int64_t i : idx)
        index += std::to_string(i) + ",";
      std::cout << index << ":] ";
    }
    for (int64_t i = 0; i < row; ++i)
      std::cout << (i ? " " : "") << formatValue(t, start + i);
    std::cout << "\n";
  }
}
} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  bool verify = false;
  std::optional<std::string> tensor;
  std::string input;
  estc::flags::FlagParser parser(
      "estc-ckpt", "Lists, prints or verifies an estc checkpoint (with no "
                   "flag: every tensor with dtype, shape and statistics).");
  parser.add(
      Flag("tensor", &tensor, "print one tensor's values").value_name("NAME"));
  parser.add(
      Flag("verify", &verify,
           "check the header and every tensor's CRC32C (every mode does;\n"
           "this prints OK or CORRUPT and nothing else)"));
  parser.positional("FILE_OR_DIR", &input,
                    "a checkpoint file, its prefix, or a model_dir");
  parser.parse_or_exit(argc, argv);
  if (verify && tensor)
    parser.fail("--verify and --tensor cannot be combined");

  try {
    auto warn = [](const std::string &line) {
      std::cerr << "estc-ckpt: warning: " << line << "\n";
    };
    CheckpointReader reader(resolve_checkpoint(input, warn));
    // Everything is checked before anything is printed (one tensor in
    // memory at a time).
    reader.verify();
    if (verify) {
      std::cout << "OK: " << reader.path() << ": " << reader.variables().size()
                << " tensors, header and CRC32C verified\n";
      return 0;
    }
    if (tensor) {
      printValues(*tensor, reader.get_tensor(*tensor));
      return 0;
    }
    std::cout << "checkpoint: " << reader.path() << "\n"
              << "global_step: " << reader.global_step() << "\n"
              << "tensors: " << reader.variables().size() << "\n";
    for (const auto &entry : reader.variables())
      printStats(entry.first, reader.get_tensor(entry.first));
  } catch (const DataLossError &e) {
    std::cout << "CORRUPT: " << e.what() << "\n";
    return 1;
  } catch (const CheckpointError &e) {
    return fail(e.what());
  }
  return 0;
}
