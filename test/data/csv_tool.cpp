//===- csv_tool.cpp - lib/Data's CSV readers, driven by a JSON spec -------===//
//
// The C++ side of test/e2e/tf_csv_compat.py: reads CSV the way a spec (a
// JSON file, argv[1]) says and prints what came out as one JSON object on
// stdout, for the script to compare with TF's answer on the same file.
//
//   {"mode": "dataset", "file": F, "defaults": [...], options...}
//       CsvReader (CsvDataset) row by row
//   {"mode": "decode", "file": F | "records": [...], "defaults": [...], ...}
//       decode_csv on the lines of F (TextLineReader, as
//       TextLineDataset + decode_csv) or on the given records
//   {"mode": "lines", "file": F}           TextLineReader's lines
//   {"mode": "infer", "files": [...], ...} read_csv_header (unless
//       "column_names" is given) + infer_column_defaults
//   {"mode": "bench", ...}                 "dataset" or "decode" (per
//       "reader"), timed, values not printed
//
// A default is {"type": "int32"} (required) or {"type": "int32", "value":
// "5"} (the value as text). Options: field_delim, use_quote_delim,
// na_value, select_cols, exclude_cols, header, buffer_size, compression,
// num_rows_for_inference, column_names, batch (read_batch's size; 0: row
// by row).
//
// Output: {"columns": [[...], ...], "error": null | "message"}: the values
// read before an error are kept, as TF's iterator yields them. Strings are
// hex (bytes need not be UTF-8), floats strings of "%.9g" / "%.17g" (or
// "nan", "inf", "-inf"). An array of specs gives an array of answers.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Csv.h"
#include "lib/Data/TextLine.h"
#include "lib/Support/Json.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace estc;
using namespace estc::data;

namespace {

[[noreturn]] void usage(const std::string &what) {
  std::fprintf(stderr, "csv_tool: %s\n", what.c_str());
  std::exit(2);
}

const json::Value &need(const json::Value &spec, const char *key) {
  const json::Value *v = spec.find(key);
  if (!v)
    usage(std::string("the spec has no \"") + key + "\"");
  return *v;
}

std::string text(const json::Value &spec, const char *key,
                 std::string fallback = "") {
  const json::Value *v = spec.find(key);
  return v ? v->text : fallback;
}

int64_t integer(const json::Value &v) { return std::stoll(v.text); }

int64_t integer(const json::Value &spec, const char *key, int64_t fallback) {
  const json::Value *v = spec.find(key);
  return v ? integer(*v) : fallback;
}

std::vector<int64_t> integers(const json::Value &spec, const char *key) {
  std::vector<int64_t> out;
  if (const json::Value *v = spec.find(key))
    for (const json::Value &item : v->items)
      out.push_back(integer(item));
  return out;
}

std::vector<std::string> strings(const json::Value &spec, const char *key) {
  std::vector<std::string> out;
  if (const json::Value *v = spec.find(key))
    for (const json::Value &item : v->items)
      out.push_back(item.text);
  return out;
}

DType dtypeOf(const std::string &name) {
  if (name == "float32")
    return DType::Float32;
  if (name == "float64")
    return DType::Float64;
  if (name == "int32")
    return DType::Int32;
  if (name == "int64")
    return DType::Int64;
  if (name == "string")
    return DType::String;
  usage("unknown type " + name);
}

std::vector<ColumnDefault> defaultsOf(const json::Value &spec) {
  std::vector<ColumnDefault> out;
  for (const json::Value &d : need(spec, "defaults").items) {
    DType dtype = dtypeOf(need(d, "type").text);
    const json::Value *value = d.find("value");
    if (!value) {
      out.push_back(ColumnDefault::required(dtype));
      continue;
    }
    const std::string &v = value->text;
    switch (dtype) {
    case DType::Float32:
      out.push_back(ColumnDefault::of(std::stof(v)));
      break;
    case DType::Float64:
      out.push_back(ColumnDefault::of(std::stod(v)));
      break;
    case DType::Int32:
      out.push_back(ColumnDefault::of(static_cast<int32_t>(std::stol(v))));
      break;
    case DType::Int64:
      out.push_back(ColumnDefault::of(static_cast<int64_t>(std::stoll(v))));
      break;
    default:
      out.push_back(ColumnDefault::of(v));
      break;
    }
  }
  return out;
}

CsvOptions optionsOf(const json::Value &spec) {
  CsvOptions o;
  std::string delim = text(spec, "field_delim", ",");
  if (delim.size() != 1)
    usage("field_delim must be one character");
  o.field_delim = delim[0];
  if (const json::Value *q = spec.find("use_quote_delim"))
    o.use_quote_delim = q->boolean;
  o.na_value = text(spec, "na_value");
  o.select_cols = integers(spec, "select_cols");
  o.exclude_cols = integers(spec, "exclude_cols");
  if (const json::Value *h = spec.find("header"))
    o.header = h->boolean;
  o.column_names = strings(spec, "column_names");
  return o;
}

std::string hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string number(double v, int precision) {
  if (std::isnan(v))
    return "\"nan\"";
  if (std::isinf(v))
    return v > 0 ? "\"inf\"" : "\"-inf\"";
  // A string, so that "-0" keeps its sign through JSON.
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "\"%.*g\"", precision, v);
  return buffer;
}

/// Element i of a tensor as JSON.
std::string element(const TensorValue &t, size_t i) {
  switch (t.dtype) {
  case DType::Float32:
    return number(t.values<float>()[i], 9);
  case DType::Float64:
    return number(t.values<double>()[i], 17);
  case DType::Int32:
    return std::to_string(t.values<int32_t>()[i]);
  case DType::Int64:
    return std::to_string(t.values<int64_t>()[i]);
  default:
    return "\"" + hex(t.strings[i]) + "\"";
  }
}

/// Values of each column, as JSON arrays' contents.
struct Columns {
  std::vector<std::vector<std::string>> values;
  void add(size_t column, std::string v) {
    if (values.size() <= column)
      values.resize(column + 1);
    values[column].push_back(std::move(v));
  }
  std::string json() const {
    std::string out = "[";
    for (size_t c = 0; c < values.size(); ++c) {
      out += c ? ", [" : "[";
      for (size_t i = 0; i < values[c].size(); ++i)
        out += (i ? "," : "") + values[c][i];
      out += "]";
    }
    return out + "]";
  }
};

std::string fileOf(const json::Value &spec) { return need(spec, "file").text; }

Compression compressionOf(const json::Value &spec) {
  return parse_compression(text(spec, "compression"));
}

size_t bufferOf(const json::Value &spec) {
  return static_cast<size_t>(integer(spec, "buffer_size", 256 * 1024));
}

/// CsvDataset: every row, or batches of "batch" rows.
void readDataset(const json::Value &spec, Columns &out, int64_t &count,
                 bool keep) {
  std::vector<ColumnDefault> defaults = defaultsOf(spec);
  out.values.resize(defaults.size());
  CsvReader reader(fileOf(spec), defaults, optionsOf(spec), compressionOf(spec),
                   bufferOf(spec));
  int64_t batch = integer(spec, "batch", 0);
  if (batch > 0) {
    std::vector<TensorValue> columns;
    while (int64_t n = reader.read_batch(batch, columns)) {
      count += n;
      if (keep)
        for (size_t c = 0; c < columns.size(); ++c)
          for (int64_t i = 0; i < n; ++i)
            out.add(c, element(columns[c], static_cast<size_t>(i)));
    }
    return;
  }
  std::vector<TensorValue> row;
  while (reader.read(row)) {
    ++count;
    if (keep)
      for (size_t c = 0; c < row.size(); ++c)
        out.add(c, element(row[c], 0));
  }
}

/// TextLineDataset + decode_csv: the lines of the file decoded "batch" at
/// a time (0: all at once, as one decode_csv call, so that one bad line
/// fails them all as in TF), or decode_csv on the spec's records.
void readDecode(const json::Value &spec, Columns &out, int64_t &count,
                bool keep) {
  std::vector<ColumnDefault> defaults = defaultsOf(spec);
  CsvOptions options = optionsOf(spec);
  out.values.resize(defaults.size());
  auto decode = [&](const std::vector<std::string_view> &views) {
    std::vector<TensorValue> columns = decode_csv(views, defaults, options);
    count += static_cast<int64_t>(views.size());
    if (keep)
      for (size_t c = 0; c < columns.size(); ++c)
        for (size_t i = 0; i < views.size(); ++i)
          out.add(c, element(columns[c], i));
  };
  std::vector<std::string_view> views;
  if (spec.find("records")) {
    std::vector<std::string> records = strings(spec, "records");
    views.assign(records.begin(), records.end());
    decode(views);
    return;
  }
  size_t batch = static_cast<size_t>(integer(spec, "batch", 0));
  TextLineReader reader(fileOf(spec), compressionOf(spec), bufferOf(spec));
  if (batch == 0) {
    std::vector<std::string> lines;
    std::string line;
    while (reader.read(line))
      lines.push_back(line);
    views.assign(lines.begin(), lines.end());
    decode(views);
    return;
  }
  // The lines' strings are reused from batch to batch, as a pipeline's
  // buffers would be.
  std::vector<std::string> lines(batch);
  for (;;) {
    size_t n = 0;
    while (n < batch && reader.read(lines[n]))
      ++n;
    if (n == 0)
      return;
    views.assign(lines.begin(), lines.begin() + n);
    decode(views);
    if (n < batch)
      return;
  }
}

void readLines(const json::Value &spec, Columns &out) {
  TextLineReader reader(fileOf(spec), compressionOf(spec), bufferOf(spec));
  std::string line;
  out.values.resize(1);
  while (reader.read(line))
    out.add(0, "\"" + hex(line) + "\"");
}

std::string infer(const json::Value &spec) {
  std::vector<std::string> files = strings(spec, "files");
  CsvOptions options = optionsOf(spec);
  std::vector<std::string> names = options.column_names;
  if (names.empty())
    names = read_csv_header(files, options, compressionOf(spec));
  std::vector<ColumnDefault> defaults = infer_column_defaults(
      files, names, integer(spec, "num_rows_for_inference", 100), options,
      compressionOf(spec));
  std::string out = "{\"names\": [";
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", \"" : "\"") + hex(names[i]) + "\"";
  out += "], \"dtypes\": [";
  for (size_t i = 0; i < defaults.size(); ++i)
    out += std::string(i ? ", \"" : "\"") + tf_name(defaults[i].dtype) + "\"";
  return out + "], \"error\": null}";
}

void run(const json::Value &spec);

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    usage("usage: csv_tool SPEC.json");
  std::ifstream in(argv[1], std::ios::binary);
  if (!in)
    usage(std::string("cannot open ") + argv[1]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  json::Value spec;
  try {
    spec = json::parse(buffer.str());
  } catch (const json::ParseError &e) {
    usage(std::string(argv[1]) + ": " + e.what());
  }
  // An array of specs: one answer each, in one process.
  if (spec.isArray()) {
    std::cout << "[";
    for (size_t i = 0; i < spec.items.size(); ++i) {
      std::cout << (i ? ",\n" : "");
      run(spec.items[i]);
    }
    std::cout << "]\n";
    return 0;
  }
  run(spec);
  return 0;
}

namespace {

void run(const json::Value &spec) {
  std::string mode = need(spec, "mode").text;
  Columns columns;
  int64_t count = 0;
  std::string error;
  try {
    if (mode == "infer") {
      std::cout << infer(spec) << "\n";
      return;
    }
    if (mode == "bench") {
      auto start = std::chrono::steady_clock::now();
      if (text(spec, "reader") == "decode")
        readDecode(spec, columns, count, false);
      else
        readDataset(spec, columns, count, false);
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      std::cout << "{\"records\": " << count << ", \"seconds\": " << seconds
                << "}\n";
      return;
    }
    if (mode == "dataset")
      readDataset(spec, columns, count, true);
    else if (mode == "decode")
      readDecode(spec, columns, count, true);
    else if (mode == "lines")
      readLines(spec, columns);
    else
      usage("unknown mode " + mode);
  } catch (const DataError &e) {
    error = e.what();
  } catch (const std::invalid_argument &e) {
    error = std::string("invalid argument: ") + e.what();
  }
  std::cout << "{\"columns\": " << columns.json()
            << ", \"error\": " << (error.empty() ? "null" : json::quote(error))
            << "}\n";
}

} // namespace
