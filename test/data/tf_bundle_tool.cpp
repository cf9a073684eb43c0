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
//   tf_bundle_tool warm_start SETTINGS
//       estimator::warm_start from the JSON file SETTINGS:
//       {"ckpt_to_initialize_from", "vars_to_warm_start" (a regex, or a
//       list of them: vars_to_warm_start_list),
//       "var_name_to_prev_var_name": {NEW: OLD}, "var_name_to_vocab_info":
//       {NAME: {"new_vocab", "new_vocab_size", "num_oov_buckets",
//       "old_vocab", "old_vocab_size", "backup_initializer", "axis"}},
//       "current": {NAME: {"dtype": TF's name, "shape": [...]}}}; prints
//       {"tensors": {NAME: tensor as dump prints it}}, the variables it
//       warm-started
//
// An error is one line on stderr, "tf_bundle_tool: error: ...", exit 1 (2
// for a bad command line).
//
//===----------------------------------------------------------------------===//

#include "estimator/WarmStart.h"
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

int warmStart(const std::string &settingsFile) {
  json::Value spec = json::parse(fileio::readFile(settingsFile));
  auto text = [&](const json::Value &v, const char *key,
                  const std::string &what) -> std::string {
    const json::Value *f = v.find(key);
    if (!f || !f->isString())
      die(what + ": no string '" + key + "'");
    return f->text;
  };
  auto number = [&](const json::Value &v, const char *key, double otherwise) {
    const json::Value *f = v.find(key);
    return f ? std::stod(f->text) : otherwise;
  };
  estimator::WarmStartSettings settings;
  settings.ckpt_to_initialize_from =
      text(spec, "ckpt_to_initialize_from", "settings");
  if (const json::Value *v = spec.find("vars_to_warm_start")) {
    if (v->isArray())
      for (const json::Value &item : v->items)
        settings.vars_to_warm_start_list.push_back(item.text);
    else
      settings.vars_to_warm_start =
          text(spec, "vars_to_warm_start", "settings");
  }
  if (const json::Value *renames = spec.find("var_name_to_prev_var_name"))
    for (const auto &[name, v] : renames->fields)
      settings.var_name_to_prev_var_name[name] = v.text;
  if (const json::Value *infos = spec.find("var_name_to_vocab_info"))
    for (const auto &[name, v] : infos->fields) {
      std::string what = "vocab info of '" + name + "'";
      estimator::VocabInfo info;
      info.new_vocab = text(v, "new_vocab", what);
      info.new_vocab_size =
          static_cast<int64_t>(number(v, "new_vocab_size", 0));
      info.num_oov_buckets =
          static_cast<int64_t>(number(v, "num_oov_buckets", 0));
      info.old_vocab = text(v, "old_vocab", what);
      info.old_vocab_size =
          static_cast<int64_t>(number(v, "old_vocab_size", -1));
      info.backup_initializer = number(v, "backup_initializer", 0);
      info.axis = static_cast<int64_t>(number(v, "axis", 0));
      settings.var_name_to_vocab_info[name] = info;
    }
  std::map<std::string, VariableSpec> current;
  if (const json::Value *vars = spec.find("current"))
    for (const auto &[name, v] : vars->fields) {
      std::string what = "current variable '" + name + "'";
      std::vector<int64_t> shape = intList(v.find("shape"), what + ": shape");
      std::optional<DType> dt;
      for (DType d : {DType::Float32, DType::Float64, DType::Int32,
                      DType::Int64, DType::Bool})
        if (text(v, "dtype", what) == tf_name(d))
          dt = d;
      if (!dt)
        die(what + ": unknown dtype");
      current[name] = VariableSpec{*dt, shape};
    }
  train::VariableMap values = estimator::warm_start(settings, current);
  std::string out = "{\"tensors\":{";
  bool first = true;
  for (const auto &[name, t] : values) {
    out +=
        std::string(first ? "" : ",") + json::quote(name) + ":" + tensorJson(t);
    first = false;
  }
  std::cout << out << "}}\n";
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
    if (argc == 3 && std::strcmp(argv[1], "warm_start") == 0)
      return warmStart(argv[2]);
    if (argc == 3 && std::strcmp(argv[1], "dump") == 0)
      return dump(argv[2]);
    if (argc == 4 && std::strcmp(argv[1], "write") == 0)
      return write(argv[2], argv[3]);
  } catch (const std::exception &e) {
    die(e.what());
  }
  die("usage: tf_bundle_tool dump CKPT | tf_bundle_tool write SPEC PREFIX | "
      "tf_bundle_tool save SPEC MODEL_DIR STEP | tf_bundle_tool objects CKPT "
      "[PATH | VAR OPTIMIZER SLOT] | tf_bundle_tool warm_start SETTINGS",
      2);
}
