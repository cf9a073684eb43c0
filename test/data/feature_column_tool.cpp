//===- feature_column_tool.cpp - Feature columns for tf_feature_column_compat.py
//
// Reads requests from stdin, one JSON object per line, and answers one JSON
// line each:
//   {"columns": [COLUMN...], "features": {KEY: FEATURE...},
//    "layer": "none" | "input_layer" | "linear_model",
//    "units": U, "sparse_combiner": C, "variables": {NAME: [VALUES...]}}
// -> {"inputs": {KEY: {"dtype": D, "shape": [...], "values": [...]}},
//     "output": {"shape": [...], "values": [...]}}   (output: with a layer)
//    or {"error": "<what() of the exception>"}.
// COLUMN: {"type": "numeric", "key", "shape"} | {"type": "bucketized",
//   "source", "boundaries"} | {"type": "identity", "key", "num_buckets",
//   "default_value"?} | {"type": "hash", "key", "hash_bucket_size",
//   "dtype"} | {"type": "vocab_list", "key", "vocabulary_list", "dtype"?,
//   "default_value", "num_oov_buckets"} | {"type": "vocab_file", "key",
//   "vocabulary_file", "vocabulary_size"?, "dtype", "default_value"?,
//   "num_oov_buckets"} | {"type": "crossed", "keys": [KEY or COLUMN],
//   "hash_bucket_size", "hash_key"?} | {"type": "weighted", "categorical",
//   "weight_feature_key"} | {"type": "indicator", "categorical"} |
//   {"type": "embedding", "categorical", "dimension", "combiner",
//   "max_norm"?} | {"type": "shared", "categoricals", "dimension",
//   "combiner"} (one column per categorical) | {"type": "seq_<T>", ...}: a
//   sequence_categorical_column_with_* of the categorical type T (identity,
//   hash, vocab_list, vocab_file; T's fields) | {"type": "seq_numeric",
//   "key", "shape", "default_value", "normalizer": "times3"?}. Equal
//   COLUMN texts are one column object.
// FEATURE: {"dtype": "string"|"int64"|"int32"|"float32"|"float64",
//   "shape": [...], "values": [...]} (dense) or the same with "indices":
//   [[...]...] (sparse; shape is its dense_shape).
// With a layer, the PREDICT graph of input_layer / linear_model /
// sequence_features (SequenceFeatures: "output" and "sequence_length")
// over the Transformer's inputs is evaluated by the reference evaluator
// with the given variable values.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/FeatureColumn/Transformer.h"
#include "lib/Support/Json.h"
#include "test/reference/ReferenceEvaluator.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

using namespace estc;
using namespace estc::feature_column;

namespace {

const json::Value &field(const json::Value &v, const char *key) {
  const json::Value *f = v.find(key);
  if (!f)
    throw std::invalid_argument(std::string("request: no field '") + key + "'");
  return *f;
}
bool has(const json::Value &v, const char *key) {
  const json::Value *f = v.find(key);
  return f && f->kind != json::Value::Kind::Null;
}
int64_t integer(const json::Value &v) { return std::stoll(v.text); }
double number(const json::Value &v) { return std::stod(v.text); }
std::string str(const json::Value &v) { return v.text; }
std::vector<int64_t> ints(const json::Value &v) {
  std::vector<int64_t> out;
  for (const json::Value &i : v.items)
    out.push_back(integer(i));
  return out;
}
std::vector<double> numbers(const json::Value &v) {
  std::vector<double> out;
  for (const json::Value &i : v.items)
    out.push_back(number(i));
  return out;
}
DType dtypeOf(const std::string &name) {
  if (name == "string")
    return DType::String;
  if (name == "int64")
    return DType::Int64;
  if (name == "int32")
    return DType::Int32;
  if (name == "float64")
    return DType::Float64;
  if (name == "float32")
    return DType::Float32;
  throw std::invalid_argument("request: unknown dtype '" + name + "'");
}

/// Canonical text of a JSON value (for one column object per spec).
std::string canonical(const json::Value &v) {
  switch (v.kind) {
  case json::Value::Kind::Null:
    return "null";
  case json::Value::Kind::Bool:
    return v.boolean ? "true" : "false";
  case json::Value::Kind::Number:
    return v.text;
  case json::Value::Kind::String:
    return json::quote(v.text);
  case json::Value::Kind::Array: {
    std::string s = "[";
    for (const json::Value &i : v.items)
      s += canonical(i) + ",";
    return s + "]";
  }
  case json::Value::Kind::Object: {
    std::string s = "{";
    for (const auto &[k, i] : v.fields)
      s += json::quote(k) + ":" + canonical(i) + ",";
    return s + "}";
  }
  }
  return "";
}

class Columns {
public:
  FeatureColumnPtr column(const json::Value &v) {
    std::string key = canonical(v);
    auto it = cache_.find(key);
    if (it != cache_.end())
      return it->second;
    FeatureColumnPtr c = build(v);
    cache_.emplace(key, c);
    return c;
  }
  CategoricalColumnPtr categorical(const json::Value &v) {
    auto c = std::dynamic_pointer_cast<const CategoricalColumn>(column(v));
    if (!c)
      throw std::invalid_argument("request: not a categorical column");
    return c;
  }
  /// The columns of a "shared" spec.
  std::vector<FeatureColumnPtr> shared(const json::Value &v) {
    std::vector<CategoricalColumnPtr> cats;
    for (const json::Value &c : field(v, "categoricals").items)
      cats.push_back(categorical(c));
    std::vector<FeatureColumnPtr> out;
    for (auto &c : shared_embedding_columns(
             cats, integer(field(v, "dimension")), str(field(v, "combiner")),
             constant_initializer(0.0)))
      out.push_back(c);
    return out;
  }

private:
  FeatureColumnPtr build(const json::Value &v) {
    std::string type = str(field(v, "type"));
    auto optInt = [&](const char *k) -> std::optional<int64_t> {
      if (has(v, k))
        return integer(field(v, k));
      return std::nullopt;
    };
    if (type == "numeric")
      return numeric_column(str(field(v, "key")), ints(field(v, "shape")));
    if (type == "seq_numeric") {
      NormalizerFn normalizer;
      if (has(v, "normalizer"))
        normalizer = [](const Tensor &x) { return x * 3.0; };
      return sequence_numeric_column(
          str(field(v, "key")), ints(field(v, "shape")),
          number(field(v, "default_value")), DType::Float32, normalizer);
    }
    if (type.rfind("seq_", 0) == 0) {
      json::Value inner = v;
      for (auto &[k, f] : inner.fields)
        if (k == "type")
          f.text = type.substr(4);
      return std::make_shared<const SequenceCategoricalColumn>(
          categorical(inner));
    }
    if (type == "bucketized")
      return bucketized_column(std::dynamic_pointer_cast<const NumericColumn>(
                                   column(field(v, "source"))),
                               numbers(field(v, "boundaries")));
    if (type == "identity")
      return categorical_column_with_identity(str(field(v, "key")),
                                              integer(field(v, "num_buckets")),
                                              optInt("default_value"));
    if (type == "hash")
      return categorical_column_with_hash_bucket(
          str(field(v, "key")), integer(field(v, "hash_bucket_size")),
          dtypeOf(str(field(v, "dtype"))));
    if (type == "vocab_list") {
      const json::Value &list = field(v, "vocabulary_list");
      bool isInt = !list.items.empty() &&
                   list.items[0].kind == json::Value::Kind::Number;
      std::vector<std::string> words;
      for (const json::Value &w : list.items)
        words.push_back(w.text);
      VocabularyList vocab =
          isInt ? VocabularyList(ints(list)) : VocabularyList(words);
      std::optional<DType> dtype;
      if (has(v, "dtype"))
        dtype = dtypeOf(str(field(v, "dtype")));
      return categorical_column_with_vocabulary_list(
          str(field(v, "key")), vocab, dtype,
          integer(field(v, "default_value")),
          integer(field(v, "num_oov_buckets")));
    }
    if (type == "vocab_file")
      return categorical_column_with_vocabulary_file(
          str(field(v, "key")), str(field(v, "vocabulary_file")),
          optInt("vocabulary_size"), dtypeOf(str(field(v, "dtype"))),
          optInt("default_value"), integer(field(v, "num_oov_buckets")));
    if (type == "crossed") {
      std::vector<CrossKey> keys;
      for (const json::Value &k : field(v, "keys").items) {
        if (k.isString())
          keys.emplace_back(k.text);
        else
          keys.emplace_back(categorical(k));
      }
      std::optional<uint64_t> hashKey;
      if (has(v, "hash_key"))
        hashKey = std::stoull(field(v, "hash_key").text);
      return crossed_column(keys, integer(field(v, "hash_bucket_size")),
                            hashKey);
    }
    if (type == "weighted")
      return weighted_categorical_column(categorical(field(v, "categorical")),
                                         str(field(v, "weight_feature_key")));
    if (type == "indicator")
      return indicator_column(categorical(field(v, "categorical")));
    if (type == "embedding") {
      std::optional<double> maxNorm;
      if (has(v, "max_norm"))
        maxNorm = number(field(v, "max_norm"));
      return embedding_column(
          categorical(field(v, "categorical")), integer(field(v, "dimension")),
          str(field(v, "combiner")), constant_initializer(0.0), maxNorm);
    }
    throw std::invalid_argument("request: unknown column type '" + type + "'");
  }

  std::map<std::string, FeatureColumnPtr> cache_;
};

data::Value feature(const json::Value &v) {
  DType dtype = dtypeOf(str(field(v, "dtype")));
  std::vector<int64_t> shape = ints(field(v, "shape"));
  const json::Value &values = field(v, "values");
  auto n = static_cast<int64_t>(values.items.size());
  TensorValue t;
  if (dtype == DType::String) {
    std::vector<std::string> s;
    for (const json::Value &x : values.items)
      s.push_back(x.text);
    t = TensorValue::of_strings({n}, s);
  } else if (dtype == DType::Int64) {
    t = TensorValue::of<int64_t>({n}, ints(values));
  } else if (dtype == DType::Int32) {
    std::vector<int32_t> i;
    for (int64_t x : ints(values))
      i.push_back(static_cast<int32_t>(x));
    t = TensorValue::of<int32_t>({n}, i);
  } else if (dtype == DType::Float64) {
    t = TensorValue::of<double>({n}, numbers(values));
  } else {
    std::vector<double> d = numbers(values);
    t = TensorValue::of<float>({n}, std::vector<float>(d.begin(), d.end()));
  }
  if (!has(v, "indices")) {
    t.shape = shape;
    return t;
  }
  std::vector<int64_t> indices;
  for (const json::Value &i : field(v, "indices").items)
    for (int64_t x : ints(i))
      indices.push_back(x);
  return data::SparseTensor::make(std::move(indices), std::move(t), shape);
}

std::string valuesJson(const TensorValue &t) {
  std::ostringstream o;
  o.precision(9);
  o << "{\"dtype\":\"" << tf_name(t.dtype) << "\",\"shape\":[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    o << (i ? "," : "") << t.shape[i];
  o << "],\"values\":[";
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    o << (i ? "," : "");
    if (t.dtype == DType::Int64)
      o << t.values<int64_t>()[static_cast<size_t>(i)];
    else
      o << t.element(i);
  }
  o << "]}";
  return o.str();
}

reference::Value refValue(const TensorValue &t) {
  std::vector<double> d(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = t.element(static_cast<int64_t>(i));
  return reference::Value(to_proto(t.dtype), t.shape, d);
}

std::string answer(const json::Value &request) {
  Columns columns;
  FeatureColumns cols;
  for (const json::Value &c : field(request, "columns").items) {
    if (str(field(c, "type")) == "shared") {
      for (auto &s : columns.shared(c))
        cols.push_back(s);
    } else {
      cols.push_back(columns.column(c));
    }
  }
  std::map<std::string, data::Element> fields;
  for (const auto &[key, f] : field(request, "features").fields)
    fields.emplace(key, feature(f));
  Transformer transformer(cols);
  ModelInputs inputs =
      transformer.transform(data::Element::dict(std::move(fields)));
  std::string out = "{\"inputs\":{";
  bool first = true;
  for (const auto &[key, t] : inputs) {
    out += (first ? "" : ",") + json::quote(key) + ":" + valuesJson(t);
    first = false;
  }
  out += "}";
  std::string layer =
      has(request, "layer") ? str(field(request, "layer")) : "none";
  if (layer != "none") {
    InputSpec spec;
    spec.features = transformer.input_specs();
    int64_t units =
        has(request, "units") ? integer(field(request, "units")) : 1;
    std::string combiner = has(request, "sparse_combiner")
                               ? str(field(request, "sparse_combiner"))
                               : "sum";
    Graph g;
    build_mode(
        g, ModeKeys::PREDICT, spec,
        [&](Graph &, const TensorMap &features, const Tensor &, ModeKeys) {
          Signature sig;
          if (layer == "sequence_features") {
            SequenceInput in = SequenceFeatures(cols)(features);
            sig.predictions.set("output", in.input);
            sig.predictions.set("sequence_length", in.sequence_length);
          } else {
            sig.predictions.set(
                "output", layer == "input_layer"
                              ? input_layer(features, cols)
                              : linear_model(features, cols, units, combiner));
          }
          return sig;
        });
    reference::Evaluator eval(g.graph_def());
    eval.initialize_variables();
    if (has(request, "variables"))
      for (const auto &[name, values] : field(request, "variables").fields) {
        reference::Value &v = eval.variables().at(name);
        v.data = numbers(values);
      }
    std::map<std::string, reference::Value> feeds;
    for (const auto &[key, t] : inputs)
      feeds[key] = refValue(t);
    auto results = eval.run("predict", feeds);
    std::ostringstream s;
    s.precision(9);
    for (const char *name : {"output", "sequence_length"}) {
      auto it = results.find(std::string("predictions/") + name);
      if (it == results.end())
        continue;
      const reference::Value &o = it->second;
      s << ",\"" << name << "\":{\"shape\":[";
      for (size_t i = 0; i < o.shape.size(); ++i)
        s << (i ? "," : "") << o.shape[i];
      s << "],\"values\":[";
      for (size_t i = 0; i < o.data.size(); ++i)
        s << (i ? "," : "") << o.data[i];
      s << "]}";
    }
    out += s.str();
  }
  return out + "}";
}

} // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << answer(json::parse(line)) << "\n";
    } catch (const std::exception &e) {
      std::cout << "{\"error\":" << json::quote(e.what()) << "}\n";
    }
    std::cout.flush();
  }
  return 0;
}
