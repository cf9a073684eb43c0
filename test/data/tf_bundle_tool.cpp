//===- tf_bundle_tool.cpp - lib/Checkpoint's TF bundles, for TF ----------===//
//
// The C++ side of test/e2e/tf_checkpoint_compat.py, which writes checkpoints
// with TensorFlow 2.15 and reads estc's back with it:
//
//   tf_bundle_tool dump CKPT
//       reads CKPT (a TF checkpoint's prefix, a model_dir, ...) with
//       load_checkpoint and verify(), and prints one JSON object on stdout:
//       {"format", "global_step", "tensors": {NAME: {"dtype": TF's name,
//       "shape": [...], "b64": base64 of the little-endian bytes} or, for a
//       string tensor, {"dtype": "string", "shape", "strings": [base64,
//       ...]}}}
//   tf_bundle_tool write SPEC PREFIX
//       writes the TF checkpoint PREFIX with BundleWriter from the JSON file
//       SPEC: {"num_shards": N, "tensors": {NAME: tensor as dump prints
//       it}, "slices": [{"name", "full_shape", "start", "length", "tensor":
//       the slice's value}]} (length -1: the whole dimension)
//   tf_bundle_tool save SPEC MODEL_DIR STEP
//       saves SPEC's "tensors" as checkpoint STEP of MODEL_DIR with
//       train::Saver (its state file, its GC), in SPEC's "format": "tf"
//       (CheckpointFormat::TensorBundle) or "auto" (the model_dir's), with
//       SPEC's "num_shards"
//   tf_bundle_tool objects CKPT [PATH | VAR OPTIMIZER SLOT]
//       an object-based checkpoint's ObjectGraph: with no more arguments,
//       {"variables": {PATH: KEY}} as JSON; with PATH, the checkpoint key
//       of that object's VARIABLE_VALUE; with three, the key of the slot
//       SLOT the optimizer at OPTIMIZER keeps for the variable at VAR ("none"
//       when there is none)
//
// An error is one line on stderr, "tf_bundle_tool: error: ...", exit 1 (2
// for a bad command line).
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"
#include "lib/Support/Text.h"

#include <cstring>
#include <iostream>
#include <stdexcept>

using namespace estc;
using namespace estc::train;

namespace {
[[noreturn]] void die(const std::string &message, int status = 1) {
  std::cerr << "tf_bundle_tool: error: " << message << "\n";
  std::exit(status);
}

std::string tensorJson(const TensorValue &t) {
  std::string out =
      "{\"dtype\":" + json::quote(tf_name(t.dtype)) + ",\"shape\":[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(t.shape[i]);
  out += "]";
  if (t.dtype == DType::String) {
    out += ",\"strings\":[";
    for (size_t i = 0; i < t.strings.size(); ++i)
      out += (i ? "," : "") + json::quote(text::base64_encode(t.strings[i]));
    out += "]";
  } else {
    out += ",\"b64\":" + json::quote(text::base64_encode(t.data));
  }
  return out + "}";
}

std::vector<int64_t> intList(const json::Value *v, const std::string &what) {
  if (!v || !v->isArray())
    die(what + " is not a list");
  std::vector<int64_t> out;
  for (const json::Value &item : v->items)
    out.push_back(std::stoll(item.text));
  return out;
}

std::string base64(const json::Value &v, const std::string &what) {
  auto bytes = v.isString() ? text::base64_decode(v.text) : std::nullopt;
  if (!bytes)
    die(what + " is not base64");
  return *bytes;
}

TensorValue tensorOf(const json::Value &v, const std::string &what) {
  const json::Value *dtype = v.find("dtype");
  if (!dtype || !dtype->isString())
    die(what + ": no dtype");
  std::optional<DType> dt;
  for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Int64,
                  DType::Bool, DType::Float16, DType::BFloat16, DType::String})
    if (dtype->text == tf_name(d))
      dt = d;
  if (!dt)
    die(what + ": unknown dtype '" + dtype->text + "'");
  std::vector<int64_t> shape = intList(v.find("shape"), what + ": shape");
  if (*dt == DType::String) {
    const json::Value *strings = v.find("strings");
    if (!strings || !strings->isArray())
      die(what + ": no strings");
    std::vector<std::string> values;
    for (const json::Value &s : strings->items)
      values.push_back(base64(s, what + ": a string"));
    return TensorValue::of_strings(shape, values);
  }
  const json::Value *b64 = v.find("b64");
  if (!b64)
    die(what + ": no b64");
  return TensorValue::from_bytes(*dt, shape, base64(*b64, what + ": b64"));
}

int dump(const std::string &ckpt) {
  CheckpointReader reader = load_checkpoint(ckpt);
  reader.verify();
  std::string out =
      "{\"format\":" + json::quote(reader.metadata().at("format")) +
      ",\"global_step\":" + std::to_string(reader.global_step()) +
      ",\"tensors\":{";
  bool first = true;
  for (const auto &entry : reader.variables()) {
    out += std::string(first ? "" : ",") + json::quote(entry.first) + ":" +
           tensorJson(reader.get_tensor(entry.first));
    first = false;
  }
  std::cout << out << "}}\n";
  return 0;
}

int write(const std::string &specFile, const std::string &prefix) {
  json::Value spec = json::parse(fileio::readFile(specFile));
  BundleWriterOptions options;
  if (const json::Value *n = spec.find("num_shards"))
    options.num_shards = static_cast<int>(n->asNonNegativeInt().value_or(0));
  BundleWriter writer(prefix, options);
  if (const json::Value *tensors = spec.find("tensors"))
    for (const auto &[name, v] : tensors->fields)
      writer.add(name, tensorOf(v, "tensor '" + name + "'"));
  if (const json::Value *slices = spec.find("slices"))
    for (const json::Value &s : slices->items) {
      const json::Value *name = s.find("name");
      const json::Value *tensor = s.find("tensor");
      if (!name || !tensor)
        die("a slice needs name and tensor");
      TensorSlice slice{intList(s.find("start"), "start"),
                        intList(s.find("length"), "length")};
      writer.add_slice(name->text, intList(s.find("full_shape"), "full_shape"),
                       slice, tensorOf(*tensor, "slice of " + name->text));
    }
  writer.finish();
  return 0;
}
} // namespace

int save(const std::string &specFile, const std::string &modelDir,
         const std::string &step) {
  json::Value spec = json::parse(fileio::readFile(specFile));
  SaverOptions options;
  const json::Value *format = spec.find("format");
  options.format = format && format->text == "auto"
                       ? CheckpointFormat::Auto
                       : CheckpointFormat::TensorBundle;
  if (const json::Value *n = spec.find("num_shards"))
    options.num_shards = static_cast<int>(n->asNonNegativeInt().value_or(0));
  VariableMap vars;
  if (const json::Value *tensors = spec.find("tensors"))
    for (const auto &[name, v] : tensors->fields)
      vars[name] = tensorOf(v, "tensor '" + name + "'");
  Saver saver(modelDir, options);
  std::cout << saver.save(vars, std::stoll(step)) << "\n";
  return 0;
}

int objects(int argc, char **argv) {
  TensorBundleReader reader(argv[2]);
  ObjectGraph graph(reader);
  if (argc == 3) {
    std::string out = "{\"variables\":{";
    bool first = true;
    for (const auto &[path, key] : graph.variables()) {
      out += std::string(first ? "" : ",") + json::quote(path) + ":" +
             json::quote(key);
      first = false;
    }
    std::cout << out << "}}\n";
    return 0;
  }
  std::optional<std::string> key =
      argc == 4 ? graph.checkpoint_key(argv[3])
                : graph.slot_checkpoint_key(argv[3], argv[4], argv[5]);
  std::cout << key.value_or("none") << "\n";
  return 0;
}

int main(int argc, char **argv) {
  try {
    if ((argc == 3 || argc == 4 || argc == 6) &&
        std::strcmp(argv[1], "objects") == 0)
      return objects(argc, argv);
    if (argc == 5 && std::strcmp(argv[1], "save") == 0)
      return save(argv[2], argv[3], argv[4]);
    if (argc == 3 && std::strcmp(argv[1], "dump") == 0)
      return dump(argv[2]);
    if (argc == 4 && std::strcmp(argv[1], "write") == 0)
      return write(argv[2], argv[3]);
  } catch (const std::exception &e) {
    die(e.what());
  }
  die("usage: tf_bundle_tool dump CKPT | tf_bundle_tool write SPEC PREFIX | "
      "tf_bundle_tool save SPEC MODEL_DIR STEP | tf_bundle_tool objects CKPT "
      "[PATH | VAR OPTIMIZER SLOT]",
      2);
}
