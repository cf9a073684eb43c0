//===- records_tool.cpp - TFRecord/Example reader and writer for tests ---===//
//
// The C++ side of test/e2e/tf_records_compat.py, which checks estc's
// TFRecord files and tf.train.Example parsing against TensorFlow's:
//
//   records_tool --mode=read --compression=GZIP --spec=JSON FILE
//       reads every record of FILE and parses them as one batch
//       (parse_example); prints the values as JSON on stdout.
//   records_tool --mode=write --compression=ZLIB --examples=JSON FILE
//       writes the Examples (ExampleBuilder) as a TFRecord file.
//   records_tool --mode=bench --spec=JSON --batch_size=B FILE
//       parses FILE's records in batches of B, repeatedly for about
//       --seconds; prints records per second.
//   records_tool --mode=read_sequence --spec=JSON --sequence_spec=JSON
//                [--single] FILE
//       FILE's records as tf.train.SequenceExamples, context features
//       --spec and sequence features --sequence_spec: one batch
//       (parse_sequence_example: {"context", "feature_lists", "lengths"}),
//       or with --single each record alone (parse_single_sequence_example),
//       one JSON object a line.
//   records_tool --mode=bucket --bucket=JSON
//       Dataset::bucket_by_sequence_length over elements of the lengths
//       "lengths" (element i: {"length": L, "tokens": I64[n] 1000*i+k,
//       "feats": F32[n,2] (i+k/4, -k), "name": STRING[] "e<i>"}, n = L
//       clamped to [0, 64]; its length is L), with "boundaries", "batch_sizes",
//       "pad_to_bucket_boundary", "no_padding", "drop_remainder" and "padding"
//       (padded_shapes
//       [-1]/[-1,2]/[] and padding values -1/0.5/"pad"); one batch a line.
//
// --spec: {"name": {"kind": "fixed"|"var"|"seq", "dtype":
// "float"|"int64"|"string", "shape": [..], "default": value or list,
// "allow_missing": bool}, ...}. --examples: [{"name": {"float": [..]} |
// {"int64": [..]} | {"bytes_hex": ["6869", ..]}}, ...]. Bytes are hex in
// and out (they need not be UTF-8). Output: {"name": {"dtype", "shape",
// "values"} or {"dtype", "indices", "values", "dense_shape"}}.
// Data errors: "records_tool: error: <message>" and exit 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Dataset.h"
#include "lib/Data/Example.h"
#include "lib/Data/SequenceExample.h"
#include "lib/Data/TFRecord.h"
#include "lib/Support/Flags.h"
#include "lib/Support/Json.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

using namespace estc;
using namespace estc::data;

namespace {

[[noreturn]] void usageError(const std::string &what) {
  throw std::invalid_argument(what);
}

std::string hex(const std::string &bytes) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string unhex(const std::string &text) {
  if (text.size() % 2)
    usageError("odd-length hex string '" + text + "'");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

DType dtypeNamed(const std::string &name) {
  if (name == "float")
    return DType::Float32;
  if (name == "int64")
    return DType::Int64;
  if (name == "string")
    return DType::String;
  usageError("unknown dtype '" + name + "'");
}

std::vector<int64_t> shapeOf(const json::Value *v) {
  std::vector<int64_t> shape;
  if (v)
    for (const json::Value &d : v->items)
      shape.push_back(std::stoll(d.text));
  return shape;
}

/// A default value: a JSON scalar or list, as a tensor of `shape`.
TensorValue tensorOf(const json::Value &v, DType dtype,
                     std::vector<int64_t> shape) {
  std::vector<const json::Value *> items;
  if (v.isArray())
    for (const json::Value &i : v.items)
      items.push_back(&i);
  else
    items.push_back(&v);
  if (dtype == DType::String) {
    std::vector<std::string> s;
    for (const json::Value *i : items)
      s.push_back(i->text);
    return TensorValue::of_strings(std::move(shape), s);
  }
  if (dtype == DType::Float32) {
    std::vector<float> f;
    for (const json::Value *i : items)
      f.push_back(std::strtof(i->text.c_str(), nullptr));
    return TensorValue::of<float>(std::move(shape), f);
  }
  std::vector<int64_t> n;
  for (const json::Value *i : items)
    n.push_back(std::stoll(i->text));
  return TensorValue::of<int64_t>(std::move(shape), n);
}

FeatureSpecs specsOf(const std::string &text) {
  json::Value root = json::parse(text);
  FeatureSpecs specs;
  for (const auto &[name, s] : root.fields) {
    const json::Value *kind = s.find("kind");
    const json::Value *dtypeField = s.find("dtype");
    if (!kind || !dtypeField)
      usageError("spec of '" + name + "' needs kind and dtype");
    DType dtype = dtypeNamed(dtypeField->text);
    std::vector<int64_t> shape = shapeOf(s.find("shape"));
    const json::Value *dflt = s.find("default");
    if (kind->text == "fixed") {
      FixedLenFeature f{shape, dtype, {}};
      if (dflt)
        f.default_value = tensorOf(*dflt, dtype, shape);
      specs[name] = f;
    } else if (kind->text == "var") {
      specs[name] = VarLenFeature{dtype};
    } else if (kind->text == "seq") {
      const json::Value *allow = s.find("allow_missing");
      FixedLenSequenceFeature f{shape, dtype, allow && allow->boolean, {}};
      if (dflt)
        f.default_value = tensorOf(*dflt, dtype, {});
      specs[name] = f;
    } else {
      usageError("unknown kind '" + kind->text + "'");
    }
  }
  return specs;
}

std::string number(float f) {
  if (std::isnan(f))
    return "\"nan\"";
  if (std::isinf(f))
    return f > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  return buf;
}

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string valuesJson(const TensorValue &t) {
  std::string s = "[";
  int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (i)
      s += ",";
    if (t.dtype == DType::String)
      s += "\"" + hex(t.strings[static_cast<size_t>(i)]) + "\"";
    else if (t.dtype == DType::Float32)
      s += number(t.values<float>()[static_cast<size_t>(i)]);
    else
      s += std::to_string(t.values<int64_t>()[static_cast<size_t>(i)]);
  }
  return s + "]";
}

std::string elementJson(const Element &e) {
  std::string s = "{";
  bool first = true;
  for (const auto &[name, leaf] : e.fields()) {
    s += (first ? "" : ",\n ") + json::quote(name) + ": ";
    first = false;
    const Value &v = leaf.leaf();
    if (const auto *t = std::get_if<TensorValue>(&v)) {
      s += "{\"dtype\": \"" + std::string(dtype_name(t->dtype)) +
           "\", \"shape\": " + shapeJson(t->shape) +
           ", \"values\": " + valuesJson(*t) + "}";
    } else {
      const SparseTensor &sp = std::get<SparseTensor>(v);
      std::vector<int64_t> idx = sp.index_values();
      std::string indices = "[";
      for (int64_t k = 0; k < sp.nnz(); ++k) {
        indices += k ? ",[" : "[";
        for (int64_t r = 0; r < sp.rank(); ++r)
          indices +=
              (r ? "," : "") +
              std::to_string(idx[static_cast<size_t>(k * sp.rank() + r)]);
        indices += "]";
      }
      indices += "]";
      s += "{\"dtype\": \"" + std::string(dtype_name(sp.values.dtype)) +
           "\", \"indices\": " + indices +
           ", \"values\": " + valuesJson(sp.values) +
           ", \"dense_shape\": " + shapeJson(sp.dense_shape) + "}";
    }
  }
  return s + "}";
}

std::vector<std::string> readRecords(const std::string &path, Compression c) {
  std::vector<std::string> records;
  TFRecordReader reader(path, c);
  std::string record;
  while (reader.read(record))
    records.push_back(record);
  return records;
}

void writeExamples(const std::string &path, Compression c,
                   const std::string &text) {
  json::Value root = json::parse(text);
  TFRecordWriter writer(path, c);
  for (const json::Value &ex : root.items) {
    ExampleBuilder b;
    for (const auto &[name, feature] : ex.fields) {
      if (const json::Value *f = feature.find("float")) {
        std::vector<float> v;
        for (const json::Value &x : f->items)
          v.push_back(std::strtof(x.text.c_str(), nullptr));
        b.add_float(name, v);
      } else if (const json::Value *i = feature.find("int64")) {
        std::vector<int64_t> v;
        for (const json::Value &x : i->items)
          v.push_back(std::stoll(x.text));
        b.add_int64(name, v);
      } else if (const json::Value *h = feature.find("bytes_hex")) {
        std::vector<std::string> v;
        for (const json::Value &x : h->items)
          v.push_back(unhex(x.text));
        b.add_bytes(name, v);
      } else {
        usageError("feature '" + name + "' needs float, int64 or bytes_hex");
      }
    }
    writer.write(b.serialize());
  }
  writer.close();
}

void bench(const std::vector<std::string> &records, const FeatureSpecs &specs,
           int64_t batch, double seconds) {
  ExampleParser parser(specs);
  std::vector<std::vector<std::string_view>> batches;
  for (size_t i = 0; i < records.size(); i += static_cast<size_t>(batch)) {
    std::vector<std::string_view> b;
    for (size_t j = i; j < std::min(records.size(), i + batch); ++j)
      b.push_back(records[j]);
    batches.push_back(b);
  }
  using Clock = std::chrono::steady_clock;
  int64_t parsed = 0;
  auto start = Clock::now();
  double elapsed = 0;
  do {
    for (const auto &b : batches) {
      Element e = parser.parse_example(b);
      parsed += static_cast<int64_t>(b.size());
    }
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  std::printf("{\"records\": %lld, \"seconds\": %.3f, \"records_per_s\": "
              "%.0f}\n",
              static_cast<long long>(parsed), elapsed, parsed / elapsed);
}

void readSequence(const std::vector<std::string> &records,
                  const FeatureSpecs &context, const FeatureSpecs &sequence,
                  bool single) {
  SequenceExampleParser parser(context, sequence);
  if (single) {
    for (const std::string &r : records) {
      Element e = parser.parse_single_sequence_example(r);
      std::string line = "{\"context\": " + elementJson(e[0]) +
                         ", \"feature_lists\": " + elementJson(e[1]) + "}";
      std::replace(line.begin(), line.end(), '\n', ' ');
      std::cout << line << "\n";
    }
    return;
  }
  std::vector<std::string_view> views(records.begin(), records.end());
  Element e = parser.parse_sequence_example(views);
  std::cout << "{\"context\": " << elementJson(e[0])
            << ", \"feature_lists\": " << elementJson(e[1])
            << ", \"lengths\": " << elementJson(e[2]) << "}\n";
}

void bucket(const std::string &text) {
  json::Value root = json::parse(text);
  auto ints = [&](const char *name) {
    std::vector<int64_t> v;
    if (const json::Value *a = root.find(name))
      for (const json::Value &x : a->items)
        v.push_back(std::stoll(x.text));
    return v;
  };
  auto flag = [&](const char *name) {
    const json::Value *b = root.find(name);
    return b && b->boolean;
  };
  std::vector<Element> elements;
  std::vector<int64_t> lengths = ints("lengths");
  for (size_t i = 0; i < lengths.size(); ++i) {
    int64_t n = std::clamp<int64_t>(lengths[i], 0, 64);
    std::vector<int64_t> tokens;
    std::vector<float> feats;
    for (int64_t k = 0; k < n; ++k) {
      tokens.push_back(1000 * static_cast<int64_t>(i) + k);
      feats.push_back(static_cast<float>(i) + static_cast<float>(k) / 4);
      feats.push_back(-static_cast<float>(k));
    }
    std::map<std::string, Element> e;
    e.emplace("tokens", Element(TensorValue::of<int64_t>({n}, tokens)));
    e.emplace("feats", Element(TensorValue::of<float>({n, 2}, feats)));
    e.emplace("name",
              Element(TensorValue::of_strings({}, {"e" + std::to_string(i)})));
    e.emplace("length", Element(TensorValue::of<int64_t>({}, {lengths[i]})));
    elements.push_back(Element::dict(std::move(e)));
  }
  Dataset::Padding padding;
  if (flag("padding")) {
    std::map<std::string, Nest<std::vector<int64_t>>> shapes{
        {"tokens", Nest<std::vector<int64_t>>(std::vector<int64_t>{-1})},
        {"feats", Nest<std::vector<int64_t>>(std::vector<int64_t>{-1, 2})},
        {"name", Nest<std::vector<int64_t>>(std::vector<int64_t>{})},
        {"length", Nest<std::vector<int64_t>>(std::vector<int64_t>{})}};
    padding.padded_shapes = Nest<std::vector<int64_t>>::dict(shapes);
    std::map<std::string, Element> values;
    values.emplace("tokens", Element(TensorValue::of<int64_t>({}, {-1})));
    values.emplace("feats", Element(TensorValue::of<float>({}, {0.5f})));
    values.emplace("name", Element(TensorValue::of_strings({}, {"pad"})));
    values.emplace("length", Element(TensorValue::of<int64_t>({}, {0})));
    padding.padding_values = Element::dict(std::move(values));
  }
  // Elements one by one from a generator: the dataset's order is theirs.
  auto shared = std::make_shared<std::vector<Element>>(std::move(elements));
  Dataset ds = Dataset::from_generator([shared]() -> Dataset::Generator {
    auto pos = std::make_shared<size_t>(0);
    return [shared, pos]() -> std::optional<Element> {
      if (*pos == shared->size())
        return std::nullopt;
      return (*shared)[(*pos)++];
    };
  });
  Dataset bucketed = ds.bucket_by_sequence_length(
      [](const Element &e) { return tensor(e["length"]).values<int64_t>()[0]; },
      ints("boundaries"), ints("batch_sizes"), padding,
      flag("pad_to_bucket_boundary"), flag("no_padding"),
      flag("drop_remainder"));
  Iterator it = bucketed.make_iterator();
  while (std::optional<Element> batch = it.next()) {
    std::string line = elementJson(*batch);
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::cout << line << std::endl;
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string mode, compression, spec, examples, file, sequenceSpec, bucketJson;
  bool single = false;
  int64_t batch = 256;
  double seconds = 2;
  flags::FlagParser parser("records_tool",
                           "TFRecord files and tf.train.Examples for the TF "
                           "compatibility test.");
  parser.add(flags::Flag("mode", &mode, "what to do")
                 .choices({"read", "write", "bench", "read_sequence", "bucket"})
                 .required());
  parser.add(
      flags::Flag("compression", &compression, "\"\", NONE, GZIP or ZLIB"));
  parser.add(flags::Flag("spec", &spec, "the feature spec (JSON)"));
  parser.add(flags::Flag("examples", &examples, "the Examples (JSON)"));
  parser.add(flags::Flag("sequence_spec", &sequenceSpec,
                         "read_sequence: the sequence features (JSON)"));
  parser.add(
      flags::Flag("single", &single, "read_sequence: each record alone"));
  parser.add(flags::Flag("bucket", &bucketJson,
                         "bucket: lengths and arguments (JSON)"));
  parser.add(
      flags::Flag("batch_size", &batch, "bench: records per batch").min(1));
  parser.add(flags::Flag("seconds", &seconds, "bench: how long").positive());
  parser.positional("FILE", &file, "the TFRecord file", /*required=*/false);
  parser.parse_or_exit(argc, argv);
  try {
    Compression c = parse_compression(compression);
    if (mode == "bucket") {
      bucket(bucketJson);
      return 0;
    }
    if (mode == "write") {
      writeExamples(file, c, examples);
      return 0;
    }
    std::vector<std::string> records = readRecords(file, c);
    if (mode == "bench") {
      bench(records, specsOf(spec), batch, seconds);
      return 0;
    }
    if (mode == "read_sequence") {
      readSequence(records, specsOf(spec.empty() ? "{}" : spec),
                   specsOf(sequenceSpec.empty() ? "{}" : sequenceSpec), single);
      return 0;
    }
    std::vector<std::string_view> views(records.begin(), records.end());
    std::cout << elementJson(parse_example(views, specsOf(spec))) << "\n";
    return 0;
  } catch (const DataError &e) {
    std::cerr << "records_tool: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "records_tool: error: " << e.what() << "\n";
    return 2;
  }
}
