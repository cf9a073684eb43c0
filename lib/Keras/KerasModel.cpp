//===- KerasModel.cpp - Keras model and weights files, read and written --===//
//
// The reading half: the container (zip or HDF5, by content), the configs
// (RapidJSON) and the weights in one of two layouts: the legacy one, which
// names its weights (layer_names, weight_names), and Keras 3's, which
// stores each object's variables by index (layers/dense/vars/0) and which
// WeightLayout below names from the model's config as Keras names them.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasModel.h"

#include "lib/Keras/Hdf5File.h"
#include "lib/Keras/KerasJson.h"
#include "lib/Keras/ZipArchive.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Printable.h"

#include <rapidjson/error/en.h>

#include <algorithm>
#include <map>
#include <optional>

namespace estc {
namespace keras {

namespace rj = rapidjson;

const char *format_name(FileFormat format) {
  switch (format) {
  case FileFormat::KerasArchive:
    return "keras";
  case FileFormat::H5Model:
    return "h5";
  case FileFormat::WeightsH5:
    return "weights.h5";
  case FileFormat::LegacyWeightsH5:
    return "legacy_weights.h5";
  }
  return "unknown";
}

std::string to_snake_case(std::string_view name) {
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  // re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
  std::string a;
  for (size_t i = 0; i < name.size();) {
    if (name[i] != '\n' && i + 2 < name.size() && upper(name[i + 1]) &&
        lower(name[i + 2])) {
      size_t end = i + 2;
      while (end < name.size() && lower(name[end]))
        ++end;
      a += name[i];
      a += '_';
      a.append(name.substr(i + 1, end - i - 1));
      i = end;
    } else {
      a += name[i++];
    }
  }
  // re.sub("([a-z])([A-Z])", r"\1_\2", ...).lower()
  std::string b;
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && lower(a[i]) && upper(a[i + 1])) {
      b += a[i];
      b += '_';
      b += a[i + 1];
      i += 2;
    } else {
      b += a[i++];
    }
  }
  for (char &c : b)
    if (upper(c))
      c = static_cast<char>(c - 'A' + 'a');
  if (!b.empty() && b[0] == '_')
    return "private" + b;
  return b;
}

namespace {
// Models in models, wrappers of wrappers: deeper is refused (a bound on
// the reader's recursion for untrusted configs).
constexpr int kMaxNesting = 64;
constexpr size_t kMaxGroups = 100000;

constexpr unsigned kParseFlags = rj::kParseIterativeFlag |
                                 rj::kParseFullPrecisionFlag |
                                 rj::kParseNanAndInfFlag;

std::string shown(std::string_view s) { return escape_control_chars(s); }

// A string member of a JSON object; `fallback` when absent or not a string.
std::string stringField(const rj::Value &v, const char *key,
                        std::string fallback = "") {
  if (!v.IsObject())
    return fallback;
  auto it = v.FindMember(key);
  if (it == v.MemberEnd() || !it->value.IsString())
    return fallback;
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

bool boolField(const rj::Value &v, const char *key, bool fallback) {
  if (!v.IsObject())
    return fallback;
  auto it = v.FindMember(key);
  if (it == v.MemberEnd() || !it->value.IsBool())
    return fallback;
  return it->value.GetBool();
}

using json::member;
// A layer of a config: {"class_name": ..., "config": {"name": ...}, ...}.
struct LayerRef {
  std::string name;
  std::string className;
  const rj::Value *config = nullptr; // the layer's "config" object
};

std::optional<LayerRef> layerRef(const rj::Value &layer) {
  if (!layer.IsObject())
    return std::nullopt;
  LayerRef r;
  r.className = stringField(layer, "class_name");
  r.config = member(layer, "config");
  r.name = stringField(layer, "name");
  if (r.config && r.name.empty())
    r.name = stringField(*r.config, "name");
  if (r.className.empty())
    return std::nullopt;
  return r;
}

bool isModelClass(const std::string &c) {
  return c == "Functional" || c == "Sequential" || c == "Model";
}

// The layers of a model config ("layers" of its "config"), in model.layers'
// order: a Sequential model's InputLayer is not one of them.
std::vector<LayerRef> modelLayers(const LayerRef &model) {
  std::vector<LayerRef> out;
  const rj::Value *layers =
      model.config ? member(*model.config, "layers") : nullptr;
  if (!layers || !layers->IsArray())
    return out;
  for (const auto &l : layers->GetArray()) {
    std::optional<LayerRef> r = layerRef(l);
    if (!r)
      continue;
    if (model.className == "Sequential" && r->className == "InputLayer")
      continue;
    out.push_back(std::move(*r));
  }
  return out;
}

class Reader {
public:
  Reader(const std::string &name, KerasModel &model)
      : name_(name), model_(model) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw KerasError(shown(name_) + ": " + what);
  }

  void read(std::string_view bytes, const rj::Value *config);

private:
  void readArchive(std::string_view bytes);
  void readHdf5(std::string_view bytes, const rj::Value *config);
  void readLegacyLayers(const Hdf5File &h5, const std::string &root,
                        const std::string &where);
  void readKeras3Layout(const Hdf5File &h5, const rj::Value *config,
                        const std::string &where);
  void checkAgainstConfig();

  // Keras 3's layout: the weights of one object (a layer, a model) at
  // `group`, named `prefix` + Keras's variable name.
  void collect(const Hdf5File &h5, const LayerRef &layer,
               const std::string &group, const std::string &prefix,
               std::vector<Weight> &out, const std::string &where,
               int depth = 0);
  void ownVars(const Hdf5File &h5, const LayerRef &layer,
               const std::string &group, const std::string &prefix,
               const std::vector<std::string> &names, std::vector<Weight> &out,
               const std::string &where);
  void genericVars(const Hdf5File &h5, const std::string &group,
                   const std::string &prefix, std::vector<Weight> &out,
                   const std::string &where, int depth = 0);
  size_t countVars(const Hdf5File &h5, const std::string &group) const;
  std::string legacyName(const std::string &w, const LayerWeights &layer) const;

  TensorValue dataset(const Hdf5File &h5, const std::string &path,
                      const std::string &where) const {
    try {
      return h5.readDataset(path);
    } catch (const Hdf5Error &e) {
      fail(where + e.what());
    }
  }

  std::string name_;
  KerasModel &model_;
  // Written by Keras 3, whose names differ from tf.keras's in places
  // (DepthwiseConv2D's "kernel", Bidirectional's copies).
  bool keras3_ = false;
  // Groups walked without a config: bounded, as links can make cycles.
  size_t groupsWalked_ = 0;
  void countGroup(const std::string &where) {
    if (++groupsWalked_ > kMaxGroups)
      fail(where + "more than " + std::to_string(kMaxGroups) +
           " groups of variables (do links make a cycle?)");
  }
};

// Whether a config was written by Keras 3, when no keras_version says so:
// its InputLayers have "batch_shape" (tf.keras: "batch_input_shape").
bool looksLikeKeras3(const rj::Value &config) {
  const rj::Value *inner = member(config, "config");
  const rj::Value *layers = inner ? member(*inner, "layers") : nullptr;
  if (!layers || !layers->IsArray())
    return false;
  for (const auto &l : layers->GetArray()) {
    const rj::Value *c = member(l, "config");
    if (stringField(l, "class_name") == "InputLayer" && c)
      return member(*c, "batch_shape") != nullptr;
  }
  return false;
}

void Reader::read(std::string_view bytes, const rj::Value *config) {
  if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4) ||
      bytes.substr(0, 4) == std::string_view("PK\x05\x06", 4)) {
    readArchive(bytes);
  } else if (isHdf5(bytes)) {
    readHdf5(bytes, config);
  } else {
    fail("not a Keras model or weights file (neither a zip archive nor "
         "HDF5)");
  }
  checkAgainstConfig();
}

void Reader::readArchive(std::string_view bytes) {
  model_.format = FileFormat::KerasArchive;
  ZipEntries entries;
  try {
    entries = readZip(bytes);
  } catch (const ZipError &e) {
    fail(e.what());
  }
  auto find = [&](const char *entry) -> const std::string * {
    for (const auto &[n, data] : entries)
      if (n == entry)
        return &data;
    return nullptr;
  };
  const std::string *config = find("config.json");
  if (!config)
    fail("the archive has no config.json (not a .keras model)");
  model_.config = parse_config_json(*config, name_ + ": config.json");
  if (const rj::Value *cc = member(model_.config, "compile_config");
      cc && cc->IsObject() && cc->MemberCount() > 0)
    model_.training_config.CopyFrom(*cc, model_.training_config.GetAllocator());
  if (const std::string *meta = find("metadata.json")) {
    rj::Document m = parse_config_json(*meta, name_ + ": metadata.json");
    model_.keras_version = stringField(m, "keras_version");
    model_.backend = stringField(m, "backend");
  }
  keras3_ = model_.keras_version.empty() ? looksLikeKeras3(model_.config)
                                         : model_.keras_version[0] == '3';
  const std::string *weights = find("model.weights.h5");
  if (!weights) {
    if (find("model.weights.npz"))
      fail("the archive's weights are model.weights.npz, which estc does "
           "not read (save with Keras's default, model.weights.h5)");
    fail("the archive has no model.weights.h5");
  }
  try {
    Hdf5File h5(*weights, false);
    readKeras3Layout(h5, &model_.config, "model.weights.h5: ");
  } catch (const Hdf5Error &e) {
    fail(std::string("model.weights.h5: ") + e.what());
  }
}

void Reader::readHdf5(std::string_view bytes, const rj::Value *config) {
  try {
    Hdf5File h5(bytes, false);
    auto attr = [&](const char *n) {
      return h5.stringAttribute("", n).value_or("");
    };
    if (h5.hasAttribute("", "model_config")) {
      model_.format = FileFormat::H5Model;
      model_.config =
          parse_config_json(attr("model_config"), name_ + ": model_config");
      if (h5.hasAttribute("", "training_config"))
        model_.training_config = parse_config_json(attr("training_config"),
                                                   name_ + ": training_config");
      model_.keras_version = attr("keras_version");
      model_.backend = attr("backend");
      if (h5.kind("model_weights") != Hdf5File::Kind::Group)
        fail("the file has a model_config but no model_weights group (a "
             "model saved without weights?)");
      readLegacyLayers(h5, "model_weights", "");
    } else if (h5.hasAttribute("", "layer_names")) {
      model_.format = FileFormat::LegacyWeightsH5;
      model_.keras_version = attr("keras_version");
      model_.backend = attr("backend");
      if (config)
        model_.config.CopyFrom(*config, model_.config.GetAllocator());
      readLegacyLayers(h5, "", "");
    } else if (h5.kind("layers") == Hdf5File::Kind::Group ||
               h5.kind("vars") == Hdf5File::Kind::Group) {
      model_.format = FileFormat::WeightsH5;
      if (config)
        model_.config.CopyFrom(*config, model_.config.GetAllocator());
      keras3_ = config && looksLikeKeras3(*config);
      readKeras3Layout(h5, config, "");
    } else if (h5.kind("model_weights") == Hdf5File::Kind::Group) {
      fail("HDF5 file without a model config: it has model_weights but no "
           "model_config attribute");
    } else {
      fail("an HDF5 file that is not a Keras model or weights file (no "
           "model_config, layer_names or layers)");
    }
  } catch (const Hdf5Error &e) {
    fail(e.what());
  }
}

void Reader::readLegacyLayers(const Hdf5File &h5, const std::string &root,
                              const std::string &where) {
  std::string rootShown = root.empty() ? "the root" : "'" + shown(root) + "'";
  std::optional<std::vector<std::string>> names =
      h5.stringListAttribute(root, "layer_names");
  if (!names)
    fail(where + rootShown + " has no layer_names attribute");
  // Class names from the config, where there is one.
  std::map<std::string, std::string> classes;
  if (model_.has_config())
    if (std::optional<LayerRef> top = layerRef(model_.config))
      for (const LayerRef &l : modelLayers(*top))
        classes[l.name] = l.className;
  for (const std::string &layer : *names) {
    std::string group = root.empty() ? layer : root + "/" + layer;
    if (layer.empty() || h5.kind(group) != Hdf5File::Kind::Group)
      fail(where + "layer_names lists '" + shown(layer) + "', but '" +
           shown(group) + "' is not a group");
    std::optional<std::vector<std::string>> weightNames =
        h5.stringListAttribute(group, "weight_names");
    if (!weightNames)
      fail(where + "layer '" + shown(layer) +
           "' has no weight_names attribute");
    LayerWeights lw;
    lw.layer = layer;
    if (auto it = classes.find(layer); it != classes.end())
      lw.class_name = it->second;
    for (const std::string &w : *weightNames) {
      std::string path = group + "/" + w;
      if (w.empty() || h5.kind(path) != Hdf5File::Kind::Dataset)
        fail(where + "weight_names of layer '" + shown(layer) + "' lists '" +
             shown(w) + "', but '" + shown(path) + "' is not a dataset");
      lw.weights.push_back({legacyName(w, lw), path, dataset(h5, path, where)});
    }
    model_.layers.push_back(std::move(lw));
  }
}

// A weight_names entry as tf.keras names the variable. Keras 3 writes its
// variables' paths ("inner/inner_dense/kernel" in a nested model "inner",
// "dense/kernel"; Keras 3.15 "seq_mlp/dense/kernel" in a Sequential model
// "seq_mlp"): tf.keras's name drops the models' own names and ends in
// ":0". A name without the layer's ("mean:0": tf.keras names so
// the variables of a Normalization adapted before it was called, two such
// layers alike) gets it, as the layer's other variables have it.
std::string Reader::legacyName(const std::string &w,
                               const LayerWeights &layer) const {
  std::string name = w;
  if (model_.keras_version.rfind("3.", 0) == 0 &&
      !(w.size() >= 2 && w.compare(w.size() - 2, 2, ":0") == 0)) {
    std::string prefix = layer.layer + "/";
    // Keras 3.15 puts a Sequential model's own name first
    // ("seq_mlp/s1/kernel"): the path from the layer's name on.
    if (name.rfind(prefix, 0) != 0)
      if (size_t at = name.find("/" + prefix); at != std::string::npos)
        name = name.substr(at + 1);
    if (isModelClass(layer.class_name) && name.rfind(prefix, 0) == 0)
      name = name.substr(prefix.size());
    name += ":0";
  }
  if (name.find('/') == std::string::npos)
    name = layer.layer + "/" + name;
  return name;
}

size_t Reader::countVars(const Hdf5File &h5, const std::string &group) const {
  std::string vars = group.empty() ? "vars" : group + "/vars";
  if (h5.kind(vars) != Hdf5File::Kind::Group)
    return 0;
  size_t n = 0;
  while (h5.kind(vars + "/" + std::to_string(n)) == Hdf5File::Kind::Dataset)
    ++n;
  if (n != h5.members(vars).size())
    fail("'" + shown(vars) + "' holds " +
         std::to_string(h5.members(vars).size()) + " entries, but only 0.." +
         std::to_string(static_cast<long>(n) - 1) + " are variables");
  return n;
}

void Reader::ownVars(const Hdf5File &h5, const LayerRef &layer,
                     const std::string &group, const std::string &prefix,
                     const std::vector<std::string> &names,
                     std::vector<Weight> &out, const std::string &where) {
  size_t n = countVars(h5, group);
  if (n != names.size()) {
    std::string list;
    for (const auto &v : names)
      list += (list.empty() ? "" : ", ") + v;
    fail(where + "layer '" + shown(layer.name) + "' (" +
         shown(layer.className) + "): '" + shown(group) + "/vars' holds " +
         std::to_string(n) + " variables, but its config gives " +
         std::to_string(names.size()) +
         (list.empty() ? "" : " (" + list + ")"));
  }
  for (size_t i = 0; i < n; ++i) {
    std::string path = group + "/vars/" + std::to_string(i);
    out.push_back({prefix + names[i] + ":0", path, dataset(h5, path, where)});
  }
}

void Reader::genericVars(const Hdf5File &h5, const std::string &group,
                         const std::string &prefix, std::vector<Weight> &out,
                         const std::string &where, int depth) {
  // HDF5 groups can link to their ancestors: the depth is bounded.
  if (depth > kMaxNesting)
    fail(where + "groups nested deeper than " + std::to_string(kMaxNesting) +
         " at '" + shown(group) + "'");
  countGroup(where);
  size_t n = countVars(h5, group);
  for (size_t i = 0; i < n; ++i) {
    std::string path =
        (group.empty() ? "" : group + "/") + "vars/" + std::to_string(i);
    out.push_back(
        {prefix + "vars/" + std::to_string(i), path, dataset(h5, path, where)});
  }
  if (h5.kind(group) != Hdf5File::Kind::Group)
    return;
  // Keras's walk (saving_lib._walk_trackable): attributes in reverse
  // alphabetical order.
  std::vector<std::string> children = h5.members(group);
  std::sort(children.rbegin(), children.rend());
  for (const std::string &c : children) {
    std::string child = group.empty() ? c : group + "/" + c;
    if (c != "vars" && h5.kind(child) == Hdf5File::Kind::Group)
      genericVars(h5, child, prefix + c + "/", out, where, depth + 1);
  }
}

// Keras's variables of a layer class in their creation order
// (trainable, then non-trainable, as Layer.save_own_variables stores them);
// nullopt for a class not listed.
std::optional<std::vector<std::string>> ownVariableNames(const LayerRef &l,
                                                         bool keras3) {
  static const rj::Value kEmpty;
  const rj::Value &cfg = l.config ? *l.config : kEmpty;
  const std::string &c = l.className;
  bool useBias = boolField(cfg, "use_bias", true);
  auto withBias = [&](std::vector<std::string> v) {
    if (useBias)
      v.push_back("bias");
    return v;
  };
  static const char *kConv[] = {"Conv1D",
                                "Conv2D",
                                "Conv3D",
                                "Conv1DTranspose",
                                "Conv2DTranspose",
                                "Conv3DTranspose",
                                "Convolution1D",
                                "Convolution2D",
                                "Convolution3D",
                                "Convolution2DTranspose",
                                "Convolution3DTranspose"};
  if (c == "Dense" ||
      std::find(std::begin(kConv), std::end(kConv), c) != std::end(kConv))
    return withBias({"kernel"});
  if (c == "EinsumDense") {
    const rj::Value *axes = member(cfg, "bias_axes");
    std::vector<std::string> v{"kernel"};
    if (axes && axes->IsString())
      v.push_back("bias");
    return v;
  }
  if (c == "DepthwiseConv1D" || c == "DepthwiseConv2D")
    return withBias({keras3 ? "kernel" : "depthwise_kernel"});
  if (c == "SeparableConv1D" || c == "SeparableConv2D" ||
      c == "SeparableConvolution1D" || c == "SeparableConvolution2D")
    return withBias({"depthwise_kernel", "pointwise_kernel"});
  if (c == "BatchNormalization" || c == "SyncBatchNormalization") {
    std::vector<std::string> v;
    if (boolField(cfg, "scale", true))
      v.push_back("gamma");
    if (boolField(cfg, "center", true))
      v.push_back("beta");
    v.push_back("moving_mean");
    v.push_back("moving_variance");
    return v;
  }
  if (c == "LayerNormalization" || c == "GroupNormalization") {
    std::vector<std::string> v;
    if (boolField(cfg, "scale", true))
      v.push_back("gamma");
    if (boolField(cfg, "center", true))
      v.push_back("beta");
    return v;
  }
  if (c == "Embedding")
    return std::vector<std::string>{"embeddings"};
  if (c == "Normalization") {
    // Adapted statistics, unless the config gives mean and variance.
    const rj::Value *mean = member(cfg, "mean");
    if (mean && !mean->IsNull())
      return std::vector<std::string>{};
    return std::vector<std::string>{"mean", "variance", "count"};
  }
  if (c == "PReLU")
    return std::vector<std::string>{"alpha"};
  return std::nullopt;
}

void Reader::collect(const Hdf5File &h5, const LayerRef &layer,
                     const std::string &group, const std::string &prefix,
                     std::vector<Weight> &out, const std::string &where,
                     int depth) {
  if (depth > kMaxNesting)
    fail(where + "layer '" + shown(layer.name) + "': models and wrappers " +
         "nested deeper than " + std::to_string(kMaxNesting));
  const std::string &c = layer.className;
  static const rj::Value kEmpty;
  const rj::Value &cfg = layer.config ? *layer.config : kEmpty;
  if (isModelClass(c)) {
    // _save_container_state: each layer under its class's snake_case name,
    // "_1", "_2", ... for the second and later of a class.
    std::map<std::string, int> used;
    for (const LayerRef &sub : modelLayers(layer)) {
      std::string snake = to_snake_case(sub.className);
      int n = used.count(snake) ? ++used[snake] : (used[snake] = 0);
      std::string path = (group.empty() ? "" : group + "/") + "layers/" +
                         snake + (n ? "_" + std::to_string(n) : "");
      collect(h5, sub, path, sub.name + "/", out, where, depth + 1);
    }
    return;
  }
  if (c == "SimpleRNN" || c == "LSTM" || c == "GRU") {
    std::vector<std::string> names{"kernel", "recurrent_kernel"};
    if (boolField(cfg, "use_bias", true))
      names.push_back("bias");
    ownVars(h5, layer, group + "/cell", prefix + to_snake_case(c) + "_cell/",
            names, out, where);
    return;
  }
  if (c == "Bidirectional") {
    const rj::Value *inner = member(cfg, "layer");
    std::optional<LayerRef> fwd = inner ? layerRef(*inner) : std::nullopt;
    if (!fwd)
      fail(where + "layer '" + shown(layer.name) +
           "' (Bidirectional) has no wrapped layer in its config");
    // The names Bidirectional.__init__ gives its copies: tf.keras prefixes
    // "forward_" / "backward_" to the wrapped (or given backward) layer's
    // name; Keras 3 stores both copies, already named, and prefixes only a
    // name without the prefix.
    auto removePrefix = [](const std::string &n, const std::string &p) {
      return n.rfind(p, 0) == 0 ? n.substr(p.size()) : n;
    };
    std::optional<LayerRef> given;
    if (const rj::Value *b = member(cfg, "backward_layer"))
      given = layerRef(*b);
    bool keras3 = keras3_;
    LayerRef bwd = given ? *given : *fwd;
    std::string fwdName, bwdName;
    if (keras3) {
      fwdName = "forward_" + removePrefix(fwd->name, "forward_");
      bwdName = given ? given->name
                      : "backward_" + removePrefix(fwd->name, "backward_");
    } else {
      fwdName = "forward_" + fwd->name;
      bwdName = "backward_" + (given ? given->name : fwd->name);
    }
    collect(h5, *fwd, group + "/forward_layer", prefix + fwdName + "/", out,
            where, depth + 1);
    collect(h5, bwd, group + "/backward_layer", prefix + bwdName + "/", out,
            where, depth + 1);
    return;
  }
  if (c == "MultiHeadAttention") {
    // tf.keras's attributes are _query_dense, ...; Keras 3's query_dense.
    static const std::pair<const char *, const char *> kParts[] = {
        {"query_dense", "query"},
        {"key_dense", "key"},
        {"value_dense", "value"},
        {"output_dense", "attention_output"}};
    std::vector<std::string> names{"kernel"};
    if (boolField(cfg, "use_bias", true))
      names.push_back("bias");
    for (const auto &[attr, name] : kParts) {
      std::string sub = group + "/_" + attr;
      if (h5.kind(sub) != Hdf5File::Kind::Group)
        sub = group + "/" + attr;
      LayerRef part{layer.name + "/" + name, "EinsumDense", nullptr};
      ownVars(h5, part, sub, prefix + name + "/", names, out, where);
    }
    return;
  }
  if (std::optional<std::vector<std::string>> names =
          ownVariableNames(layer, keras3_)) {
    ownVars(h5, layer, group, prefix, *names, out, where);
    return;
  }
  // A class without a table: its variables as Keras's walk finds them,
  // named by their path.
  genericVars(h5, group, prefix, out, where);
}

void Reader::readKeras3Layout(const Hdf5File &h5, const rj::Value *config,
                              const std::string &where) {
  std::optional<LayerRef> top =
      config && config->IsObject() ? layerRef(*config) : std::nullopt;
  if (top && isModelClass(top->className)) {
    std::map<std::string, int> used;
    for (const LayerRef &sub : modelLayers(*top)) {
      std::string snake = to_snake_case(sub.className);
      int n = used.count(snake) ? ++used[snake] : (used[snake] = 0);
      std::string path = "layers/" + snake + (n ? "_" + std::to_string(n) : "");
      LayerWeights lw;
      lw.layer = sub.name;
      lw.class_name = sub.className;
      collect(h5, sub, path, sub.name + "/", lw.weights, where);
      model_.layers.push_back(std::move(lw));
    }
    return;
  }
  // No config (or a class estc does not know as a model): every object
  // with variables under layers/ is a layer named by its path.
  std::vector<std::pair<std::string, std::string>> todo; // group, name
  if (h5.kind("layers") == Hdf5File::Kind::Group)
    for (const std::string &m : h5.members("layers"))
      todo.push_back({"layers/" + m, m});
  for (size_t i = 0; i < todo.size(); ++i) {
    auto [group, name] = todo[i];
    // HDF5 groups can link to their ancestors: the depth is bounded.
    if (std::count(group.begin(), group.end(), '/') > kMaxNesting)
      fail(where + "groups nested deeper than " + std::to_string(kMaxNesting) +
           " under 'layers'");
    countGroup(where);
    if (h5.kind(group) != Hdf5File::Kind::Group)
      continue;
    if (size_t n = countVars(h5, group)) {
      LayerWeights lw;
      lw.layer = name;
      for (size_t v = 0; v < n; ++v) {
        std::string path = group + "/vars/" + std::to_string(v);
        lw.weights.push_back({path, path, dataset(h5, path, where)});
      }
      model_.layers.push_back(std::move(lw));
    }
    for (const std::string &m : h5.members(group))
      if (m != "vars")
        todo.push_back({group + "/" + m, name + "/" + m});
  }
}

std::string shapeText(const std::vector<int64_t> &s) { return shape_string(s); }

int64_t intField(const rj::Value &v, const char *key) {
  const rj::Value *m = member(v, key);
  return m && m->IsInt64() ? m->GetInt64() : -1;
}

// The shapes the config implies, for the classes whose shapes it fixes.
void Reader::checkAgainstConfig() {
  if (!model_.has_config())
    return;
  std::optional<LayerRef> top = layerRef(model_.config);
  if (!top || !isModelClass(top->className))
    return;
  std::map<std::string, LayerRef> byName;
  for (const LayerRef &l : modelLayers(*top))
    byName[l.name] = l;
  for (const LayerWeights &lw : model_.layers) {
    auto it = byName.find(lw.layer);
    if (it == byName.end() || !it->second.config)
      continue;
    const LayerRef &l = it->second;
    auto bad = [&](const Weight &w, const std::string &why) {
      fail("layer '" + shown(l.name) + "' (" + shown(l.className) +
           "): weight '" + shown(w.name) + "' has shape " +
           shapeText(w.value.shape) + ", but " + why);
    };
    auto last = [](const Weight &w) {
      return w.value.shape.empty() ? int64_t(-2) : w.value.shape.back();
    };
    std::string c = l.className;
    int64_t units = -1;
    if (c == "Dense")
      units = intField(*l.config, "units");
    else if (c == "Conv1D" || c == "Conv2D" || c == "Conv3D")
      units = intField(*l.config, "filters");
    if (units >= 0 && lw.weights.size() <= 2) {
      const char *what = c == "Dense" ? "units" : "filters";
      for (size_t i = 0; i < lw.weights.size(); ++i) {
        const Weight &w = lw.weights[i];
        size_t rank = i == 0 ? (c == "Dense"    ? 2
                                : c == "Conv1D" ? 3
                                : c == "Conv2D" ? 4
                                                : 5)
                             : 1;
        if (w.value.shape.size() != rank || last(w) != units)
          bad(w, std::string("its config's ") + what + " is " +
                     std::to_string(units));
      }
    }
    if (c == "Embedding" && lw.weights.size() == 1) {
      int64_t in = intField(*l.config, "input_dim");
      int64_t outDim = intField(*l.config, "output_dim");
      if (in >= 0 && outDim >= 0 &&
          lw.weights[0].value.shape != std::vector<int64_t>{in, outDim})
        bad(lw.weights[0], "its config's input_dim and output_dim are " +
                               std::to_string(in) + " and " +
                               std::to_string(outDim));
    }
    if (c == "BatchNormalization" && !lw.weights.empty())
      for (const Weight &w : lw.weights)
        if (w.value.shape != lw.weights.back().value.shape)
          bad(w, "'" + shown(lw.weights.back().name) + "' has shape " +
                     shapeText(lw.weights.back().value.shape));
  }
}
} // namespace

rj::Document parse_config_json(std::string_view text, const std::string &name) {
  rj::Document d;
  d.Parse<kParseFlags>(text.data(), text.size());
  if (d.HasParseError())
    throw KerasError(shown(name) + ": not valid JSON at byte " +
                     std::to_string(d.GetErrorOffset()) + ": " +
                     rj::GetParseError_En(d.GetParseError()));
  if (!d.IsObject())
    throw KerasError(shown(name) + ": not a JSON object");
  return d;
}

std::string KerasModel::class_name() const {
  return has_config() ? stringField(config, "class_name") : "";
}

const LayerWeights *KerasModel::find_layer(std::string_view name) const {
  for (const auto &l : layers)
    if (l.layer == name)
      return &l;
  return nullptr;
}
LayerWeights *KerasModel::find_layer(std::string_view name) {
  return const_cast<LayerWeights *>(
      static_cast<const KerasModel *>(this)->find_layer(name));
}
const Weight *KerasModel::find_weight(std::string_view name) const {
  for (const auto &l : layers)
    for (const auto &w : l.weights)
      if (w.name == name)
        return &w;
  return nullptr;
}
Weight *KerasModel::find_weight(std::string_view name) {
  return const_cast<Weight *>(
      static_cast<const KerasModel *>(this)->find_weight(name));
}
const rj::Value *KerasModel::layer_config(std::string_view name) const {
  if (!has_config())
    return nullptr;
  const rj::Value *inner = member(config, "config");
  const rj::Value *layers = inner ? member(*inner, "layers") : nullptr;
  if (!layers || !layers->IsArray())
    return nullptr;
  for (const auto &l : layers->GetArray())
    if (std::optional<LayerRef> r = layerRef(l); r && r->name == name)
      return &l;
  return nullptr;
}

std::vector<const Weight *> KerasModel::weights() const {
  std::vector<const Weight *> out;
  for (const auto &l : layers)
    for (const auto &w : l.weights)
      out.push_back(&w);
  return out;
}

KerasModel read_keras_bytes(std::string_view bytes, const std::string &name,
                            const rj::Value *config) {
  KerasModel model;
  model.file = name;
  Reader(name, model).read(bytes, config);
  model.original_bytes.assign(bytes.data(), bytes.size());
  return model;
}

KerasModel read_keras_file(const std::string &path, const rj::Value *config) {
  std::string bytes;
  try {
    bytes = fileio::readFile(path);
  } catch (const FileError &e) {
    throw KerasError(e.what());
  }
  return read_keras_bytes(bytes, path, config);
}

KerasModel load_model(const std::string &path) {
  KerasModel m = read_keras_file(path);
  if (!m.has_config())
    throw KerasError(shown(path) + ": a weights-only file (" +
                     format_name(m.format) +
                     "), not a model: it has no model config");
  return m;
}

namespace {
std::string rewriteWeights(const KerasModel &model, std::string_view h5bytes,
                           const std::string &where) {
  try {
    Hdf5File h5(h5bytes, true);
    for (const Weight *w : model.weights()) {
      try {
        h5.writeDataset(w->path, w->value);
      } catch (const Hdf5Error &e) {
        throw KerasError(shown(model.file) + ": " + where + "weight '" +
                         shown(w->name) + "': " + e.what());
      }
    }
    return h5.image();
  } catch (const Hdf5Error &e) {
    throw KerasError(shown(model.file) + ": " + where + e.what());
  }
}
} // namespace

std::string serialize_keras_file(const KerasModel &model) {
  if (model.original_bytes.empty())
    throw KerasError(shown(model.file) +
                     ": no bytes as read to write back (not read by "
                     "read_keras_file)");
  if (model.format != FileFormat::KerasArchive)
    return rewriteWeights(model, model.original_bytes, "");
  try {
    ZipEntries entries = readZip(model.original_bytes);
    for (auto &[n, data] : entries)
      if (n == "model.weights.h5")
        data = rewriteWeights(model, data, "model.weights.h5: ");
    return writeZip(entries);
  } catch (const ZipError &e) {
    throw KerasError(shown(model.file) + ": " + e.what());
  }
}

void write_keras_file(const KerasModel &model, const std::string &path) {
  std::string bytes = serialize_keras_file(model);
  try {
    fileio::writeFileAtomically(path, bytes);
  } catch (const FileError &e) {
    throw KerasError(e.what());
  }
}

} // namespace keras
} // namespace estc
