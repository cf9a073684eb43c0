//===- json_fuzzer.cpp - json::parse on RapidJSON (lib/Support/Json) ------===//
//
// json::parse reads safetensors headers and TF_CONFIG. The documented
// failure is json::ParseError, one line "at byte N: <problem>". A value that
// parses must write back (strings through json::quote) to text that parses to
// the same value, and asNonNegativeInt must agree with the number's text.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Support/Json.h"

using namespace estc;
using namespace estc::fuzz;

namespace {
std::string write(const json::Value &v) {
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
    std::string out = "[";
    for (size_t i = 0; i < v.items.size(); ++i)
      out += (i ? "," : "") + write(v.items[i]);
    return out + "]";
  }
  case json::Value::Kind::Object: {
    std::string out = "{";
    for (size_t i = 0; i < v.fields.size(); ++i)
      out += (i ? "," : "") + json::quote(v.fields[i].first) + ":" +
             write(v.fields[i].second);
    return out + "}";
  }
  }
  die("unknown JSON kind");
}

bool same(const json::Value &a, const json::Value &b) {
  if (a.kind != b.kind || a.boolean != b.boolean || a.text != b.text ||
      a.items.size() != b.items.size() || a.fields.size() != b.fields.size())
    return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!same(a.items[i], b.items[i]))
      return false;
  for (size_t i = 0; i < a.fields.size(); ++i)
    if (a.fields[i].first != b.fields[i].first ||
        !same(a.fields[i].second, b.fields[i].second))
      return false;
  return true;
}

void checkNumbers(const json::Value &v) {
  // A JSON integer has no leading zeros: its value prints as its text.
  if (std::optional<int64_t> n = v.asNonNegativeInt())
    if (*n < 0 || std::to_string(*n) != v.text)
      die("asNonNegativeInt(" + v.text + ") = " + std::to_string(*n));
  for (const json::Value &item : v.items)
    checkNumbers(item);
  for (const auto &field : v.fields)
    checkNumbers(field.second);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text = bytesOf(data, size);
  json::Value value;
  try {
    value = json::parse(text);
  } catch (const json::ParseError &e) {
    std::string what = e.what();
    if (what.rfind("at byte ", 0) != 0)
      die("ParseError without its position: " + what);
    if (what.find_first_of("\n\r") != std::string::npos)
      die("ParseError is not one line: " + what);
    return 0;
  }
  checkNumbers(value);
  std::string written = write(value);
  try {
    if (!same(json::parse(written), value))
      die("a JSON value changes when written back: " + written);
  } catch (const json::ParseError &e) {
    die("a JSON value written back does not parse: " + std::string(e.what()) +
        ": " + written);
  }
  return 0;
}
