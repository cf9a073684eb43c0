//===- feature_column_json_fuzzer.cpp - Columns and parse specs as JSON --===//
//
// An export's feature columns and parse spec (lib/FeatureColumn/
// Serialization.h) are read from saved_model.json, untrusted. The same
// bytes go to feature_columns_from_json and parse_spec_from_json; the
// documented failure is std::invalid_argument, one line starting with
// "feature_columns" or "parse_spec". What reads back must write back, and
// that text must read and write to itself again; the columns must answer
// name(), and a Transformer, make_parse_example_spec and an ExampleParser
// built from them may refuse them only with std::invalid_argument.
//
// Vocabulary assets: "vocab.txt" (strings) and "ivocab.txt" (integers) are
// files of the scratch directory; any other name is a missing file (a
// loader confines names to the export's assets/ the same way).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/Example.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"

#include <stdexcept>

using namespace estc;
using namespace estc::fuzz;

namespace {

const std::string &assetDir() {
  static const std::string dir = [] {
    scratch().write("vocab.txt", "apple\nbanana\ncherry\n");
    scratch().write("ivocab.txt", "42\n7\n13\n99\n");
    return scratch().path();
  }();
  return dir;
}

std::string assetPath(const std::string &name) {
  if (name == "vocab.txt" || name == "ivocab.txt")
    return assetDir() + "/" + name;
  return assetDir() + "/missing";
}

std::string addAsset(const std::string &path) {
  std::string prefix = assetDir() + "/";
  if (path.rfind(prefix, 0) != 0)
    die("a column read back names a file outside the assets: " + path);
  return path.substr(prefix.size());
}

void checkMessage(const std::string &what, const std::string &prefix) {
  if (what.rfind(prefix, 0) != 0)
    die("error does not start with '" + prefix + "': " + what);
  if (what.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + what);
}

void columns(std::string_view text) {
  feature_column::FeatureColumns cs;
  try {
    cs = feature_column::feature_columns_from_json(text, assetPath);
  } catch (const std::invalid_argument &e) {
    checkMessage(e.what(), "feature_columns");
    return;
  }
  for (const auto &c : cs) {
    if (!c)
      die("a null column read");
    (void)c->name();
  }
  std::string once = feature_column::feature_columns_to_json(cs, addAsset);
  std::string twice;
  try {
    twice = feature_column::feature_columns_to_json(
        feature_column::feature_columns_from_json(once, assetPath), addAsset);
  } catch (const std::invalid_argument &e) {
    die("columns written back do not read: " + std::string(e.what()));
  }
  if (once != twice)
    die("columns change when written back: " + once + " vs " + twice);
  try {
    feature_column::Transformer t(cs);
    (void)t.input_specs();
  } catch (const std::invalid_argument &) {
  }
  try {
    data::ExampleParser parser(feature_column::make_parse_example_spec(cs));
  } catch (const std::invalid_argument &) {
  }
}

void parseSpec(std::string_view text) {
  data::FeatureSpecs specs;
  try {
    specs = feature_column::parse_spec_from_json(text);
  } catch (const std::invalid_argument &e) {
    checkMessage(e.what(), "parse_spec");
    return;
  }
  std::string once = feature_column::parse_spec_to_json(specs);
  std::string twice;
  try {
    twice = feature_column::parse_spec_to_json(
        feature_column::parse_spec_from_json(once));
  } catch (const std::invalid_argument &e) {
    die("a parse spec written back does not read: " + std::string(e.what()));
  }
  if (once != twice)
    die("a parse spec changes when written back: " + once + " vs " + twice);
  try {
    data::ExampleParser parser(specs);
  } catch (const std::invalid_argument &) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text = bytesOf(data, size);
  columns(text);
  parseSpec(text);
  return 0;
}
