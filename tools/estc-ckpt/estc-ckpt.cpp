//===- estc-ckpt.cpp - Inspect and convert checkpoints --------------------===//
//
//   estc-ckpt FILE_OR_DIR               every tensor: dtype, shape, min, max,
//                                       mean, std, NaN and Inf counts (a
//                                       string tensor: its element count and
//                                       lengths)
//   estc-ckpt --tensor NAME FILE_OR_DIR one tensor's values
//   estc-ckpt --verify FILE_OR_DIR      check the header and every CRC32C
//   estc-ckpt --convert OUT FILE_OR_DIR write the checkpoint in the other
//                                       format: OUT ending in .safetensors is
//                                       an estc checkpoint file, any other OUT
//                                       a TF checkpoint's prefix
//                                       (OUT.index, OUT.data-0000K-of-0000N;
//                                       --num_shards data files)
//
// FILE_OR_DIR is an estc checkpoint file, its prefix (model_dir/
// model.ckpt-200), a TF checkpoint's prefix or .index file, or a model_dir
// (its latest valid checkpoint, in either format), as TF's
// inspect_checkpoint takes them. A TF checkpoint's tensors of dtypes estc
// has no DType for (int8, uint8, ...) are listed with TF's dtype name and
// CRC-checked; they cannot be printed or converted. Every mode first checks
// the header and every tensor's CRC32C, and prints nothing else for a
// corrupt file but one line on stdout, "CORRUPT: <file>: <what is wrong>",
// with exit status 1. Every other error is one line on stderr: exit status 2
// for a bad command line (lib/Support/Flags.h), 1 for a checkpoint that
// cannot be read (missing, an I/O error), an unknown tensor or one that
// cannot be converted.
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Support/Flags.h"
#include "lib/Support/Printable.h"

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

void printStringStats(const std::string &name, const TensorValue &t) {
  std::cout << name << " " << t.spec().str() << " count=" << t.strings.size();
  if (!t.strings.empty()) {
    size_t lo = SIZE_MAX, hi = 0, total = 0;
    for (const std::string &s : t.strings) {
      lo = std::min(lo, s.size());
      hi = std::max(hi, s.size());
      total += s.size();
    }
    std::cout << " min_len=" << lo << " max_len=" << hi << " bytes=" << total;
  }
  std::cout << "\n";
}

void printStats(const std::string &name, const TensorValue &t) {
  if (t.dtype == DType::String) {
    printStringStats(name, t);
    return;
  }
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
  if (t.dtype == DType::String) {
    // One element per line, quoted, control and non-ASCII bytes escaped.
    for (const std::string &s : t.strings)
      std::cout << "\"" << escape_control_chars(s, true) << "\"\n";
    if (t.strings.empty())
      std::cout << "(no elements)\n";
    return;
  }
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
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Writes every tensor of `reader` to `out` in the format its name says.
void convert(const CheckpointReader &reader, const std::string &out,
             int numShards) {
  if (const TensorBundleReader *bundle = reader.tensor_bundle())
    for (const auto &[name, info] : bundle->tensors())
      if (!dtype_from_tf_number(info.tf_dtype))
        throw CheckpointError(reader.path() + ": tensor '" + name +
                              "': dtype " +
                              tf_dtype_number_name(info.tf_dtype) +
                              " has no estc DType; cannot convert it");
  VariableMap all = reader.read_all();
  if (endsWith(out, kCheckpointSuffix)) {
    for (const auto &[name, t] : all)
      if (t.dtype == DType::String)
        throw CheckpointError(reader.path() + ": tensor '" + name +
                              "' holds strings, which estc's safetensors "
                              "checkpoints cannot; convert to a TF "
                              "checkpoint instead");
    write_checkpoint(out, all, reader.global_step());
    std::cout << "converted " << reader.path() << " (" << all.size()
              << " tensors) to " << out << "\n";
    return;
  }
  // TF keeps the step in a variable: a safetensors checkpoint's step in its
  // metadata becomes one.
  if (!all.count("global_step"))
    all["global_step"] = TensorValue::of<int64_t>({}, {reader.global_step()});
  write_tensor_bundle(out, all, {.num_shards = numShards});
  std::cout << "converted " << reader.path() << " (" << all.size()
            << " tensors) to the TF checkpoint " << out << " ("
            << bundle_index_file(out) << ", " << numShards << " data file"
            << (numShards == 1 ? "" : "s") << ")\n";
}
} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  bool verify = false;
  std::optional<std::string> tensor, convertTo;
  int numShards = 1;
  std::string input;
  estc::flags::FlagParser parser(
      "estc-ckpt",
      "Lists, prints, verifies or converts an estc or TF checkpoint (with no "
      "flag: every tensor with dtype, shape and statistics).");
  parser.add(
      Flag("tensor", &tensor, "print one tensor's values").value_name("NAME"));
  parser.add(
      Flag("verify", &verify,
           "check the header and every tensor's CRC32C (every mode does;\n"
           "this prints OK or CORRUPT and nothing else)"));
  parser.add(Flag("convert", &convertTo,
                  "write the checkpoint to OUT: an estc checkpoint file when\n"
                  "OUT ends in .safetensors, else a TF checkpoint (prefix)")
                 .value_name("OUT"));
  parser.add(Flag("num_shards", &numShards,
                  "data files of a TF checkpoint written by --convert")
                 .min(1)
                 .max(99999));
  parser.positional("FILE_OR_DIR", &input,
                    "a checkpoint file or prefix (estc's or TF's), or a "
                    "model_dir");
  parser.parse_or_exit(argc, argv);
  if (verify && tensor)
    parser.fail("--verify and --tensor cannot be combined");
  if (convertTo && (verify || tensor))
    parser.fail("--convert cannot be combined with --verify or --tensor");
  if (convertTo && convertTo->empty())
    parser.fail("--convert needs a file or prefix");

  try {
    auto warn = [](const std::string &line) {
      std::cerr << "estc-ckpt: warning: " << line << "\n";
    };
    CheckpointReader reader(resolve_checkpoint(input, warn));
    // Everything is checked before anything is printed (one tensor in
    // memory at a time).
    reader.verify();
    if (verify) {
      std::cout << "OK: " << reader.path() << ": "
                << (reader.tensor_bundle()
                        ? reader.tensor_bundle()->tensors().size()
                        : reader.variables().size())
                << " tensors, header and CRC32C verified\n";
      return 0;
    }
    if (tensor) {
      printValues(*tensor, reader.get_tensor(*tensor));
      return 0;
    }
    if (convertTo) {
      convert(reader, *convertTo, numShards);
      return 0;
    }
    const TensorBundleReader *bundle = reader.tensor_bundle();
    std::cout << "checkpoint: " << reader.path() << "\n";
    if (bundle)
      std::cout << "format: TF tensor bundle, " << bundle->num_shards()
                << " data file" << (bundle->num_shards() == 1 ? "" : "s")
                << "\n";
    std::cout << "global_step: " << reader.global_step() << "\n"
              << "tensors: "
              << (bundle ? bundle->tensors().size() : reader.variables().size())
              << "\n";
    if (bundle) {
      for (const auto &[name, info] : bundle->tensors()) {
        if (dtype_from_tf_number(info.tf_dtype))
          printStats(name, reader.get_tensor(name));
        else
          std::cout << name << " " << tf_dtype_number_name(info.tf_dtype)
                    << shape_string(info.shape)
                    << " (a TF dtype estc has no DType for: not read)\n";
      }
      return 0;
    }
    for (const auto &entry : reader.variables())
      printStats(entry.first, reader.get_tensor(entry.first));
  } catch (const DataLossError &e) {
    std::cout << "CORRUPT: " << e.what() << "\n";
    return 1;
  } catch (const CheckpointError &e) {
    return fail(e.what());
  } catch (const std::invalid_argument &e) {
    return fail(e.what());
  }
  return 0;
}
