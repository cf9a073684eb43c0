//===- Serialization.cpp - Feature columns and parse specs as JSON ------===//
//
// The JSON (RapidJSON; docs/feature-columns.md, "Saving columns with an
// export"): a column is an object whose "kind" is its tf.feature_column
// function and whose fields are that function's arguments. Nested columns
// are written inline the first time and as {"ref": k} after that, k
// counting the column objects in the order they end (children before their
// parent), so a column used twice (a vocabulary column under an indicator
// and an embedding) reads back as one object, which the Transformer needs.
//
// Reading trusts nothing: every field is checked for its JSON type and its
// range before a column is built, sizes are bounded (kMax* below) so that no
// input allocates more than it holds, and nesting (through refs, a DAG can
// expand exponentially) is bounded in depth, in crossed leaves and in name
// length.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/Serialization.h"
#include "lib/Data/Idx.h"
#include "lib/Tensor/TensorValue.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

namespace estc {
namespace feature_column {

namespace {

namespace rj = rapidjson;

/// Columns nested deeper than this are refused (a real model nests 3 or 4).
constexpr int kMaxDepth = 32;
/// The most elements of a shape (numeric columns, parse specs).
constexpr int64_t kMaxElements = int64_t(1) << 24;
/// The largest num_buckets, hash_bucket_size, dimension, vocabulary_size or
/// num_oov_buckets: far above real models, far below int64 overflow when
/// the columns add or multiply them.
constexpr int64_t kMaxSize = int64_t(1) << 40;
/// The most feature keys and columns one crossed column crosses (its nested
/// crosses expanded).
constexpr int64_t kMaxCrossLeaves = 1024;
/// The longest column name (a cross's is its leaves' names joined).
constexpr int64_t kMaxNameLength = int64_t(1) << 16;

// NaN and infinities (a boundary or default may be one) as JSON5 and
// Python's json module write them; integers keep every bit.
using Writer = rj::Writer<rj::StringBuffer, rj::UTF8<>, rj::UTF8<>,
                          rj::CrtAllocator, rj::kWriteNanAndInfFlag>;
constexpr unsigned kParseFlags = rj::kParseIterativeFlag |
                                 rj::kParseFullPrecisionFlag |
                                 rj::kParseNanAndInfFlag;

const char *const kDTypeNames = "F32, F64, I32, I64, BOOL, F16, BF16 or STRING";

/// A string from the input, fit for a one-line message: control bytes
/// escaped, at most 80 bytes.
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      const char *hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80)
    out += "...";
  return out;
}

/// A message (a column constructor's names keys the input gave) as one line.
std::string oneLine(std::string_view s) {
  std::string out;
  for (char c : s)
    out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

std::string str(const rj::Value &v) {
  return std::string(v.GetString(), v.GetStringLength());
}

/// A number of the input in a message ("1e+300", "0.1").
std::string numberStr(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

/// Whether NumericColumn's parse spec (and the Transformer) can convert x
/// to dtype without undefined behaviour: their static_casts.
bool fitsDType(double x, DType dtype) {
  switch (dtype) {
  case DType::Float64:
    return true;
  case DType::Float32:
    return std::isnan(x) || std::isinf(x) || std::fabs(x) <= FLT_MAX;
  case DType::Int32:
    return x >= -2147483648.0 && x <= 2147483647.0;
  default:
    return x >= -9223372036854775808.0 && x < 9223372036854775808.0;
  }
}

// --- Reading ----------------------------------------------------------------

/// One JSON object of the input: checks it is an object of known, distinct
/// fields, and reads them by type; every error names `where` and the field.
class Fields {
public:
  Fields(const rj::Value &v, std::string where,
         std::initializer_list<const char *> known)
      : v_(v), where_(std::move(where)) {
    if (!v.IsObject())
      fail("must be a JSON object");
    std::set<std::string> seen;
    for (const auto &m : v.GetObject()) {
      std::string name = str(m.name);
      bool ok = false;
      for (const char *k : known)
        ok = ok || name == k;
      if (!ok)
        fail("unknown field '" + printable(name) + "'");
      if (!seen.insert(name).second)
        fail("field '" + printable(name) + "' appears twice");
    }
  }

  /// Names what is read in the messages from now on.
  void label(const std::string &what) { where_ += " (" + what + ")"; }
  const std::string &where() const { return where_; }

  [[noreturn]] void fail(const std::string &what) const {
    throw std::invalid_argument(where_ + ": " + what);
  }
  [[noreturn]] void fail(const char *field, const std::string &what) const {
    fail(std::string("field '") + field + "': " + what);
  }

  const rj::Value *find(const char *field) const {
    auto it = v_.FindMember(field);
    return it == v_.MemberEnd() ? nullptr : &it->value;
  }
  const rj::Value &get(const char *field) const {
    if (const rj::Value *f = find(field))
      return *f;
    fail("missing field '" + std::string(field) + "'");
  }

  std::string string(const char *field, bool nonEmpty = true) const {
    const rj::Value &f = get(field);
    if (!f.IsString())
      fail(field, "must be a string");
    if (nonEmpty && f.GetStringLength() == 0)
      fail(field, "must not be empty");
    return str(f);
  }
  int64_t integer(const char *field, int64_t min, int64_t max) const {
    return integerOf(get(field), field, min, max);
  }
  int64_t integerOf(const rj::Value &f, const char *field, int64_t min,
                    int64_t max) const {
    if (!f.IsInt64())
      fail(field, "must be an integer");
    int64_t n = f.GetInt64();
    if (n < min || n > max)
      fail(field, std::to_string(n) + " is outside [" + std::to_string(min) +
                      ", " + std::to_string(max) + "]");
    return n;
  }
  std::optional<int64_t> optionalInteger(const char *field, int64_t min,
                                         int64_t max) const {
    if (!find(field))
      return std::nullopt;
    return integer(field, min, max);
  }
  double number(const char *field) const {
    const rj::Value &f = get(field);
    if (!f.IsNumber())
      fail(field, "must be a number");
    return f.GetDouble();
  }
  bool boolean(const char *field) const {
    const rj::Value &f = get(field);
    if (!f.IsBool())
      fail(field, "must be true or false");
    return f.GetBool();
  }
  DType dtype(const char *field) const {
    const rj::Value &f = get(field);
    if (!f.IsString())
      fail(field, std::string("must be a dtype name (") + kDTypeNames + ")");
    std::optional<DType> d = dtype_from_name(str(f));
    if (!d)
      fail(field,
           "unknown dtype '" + printable(str(f)) + "' (" + kDTypeNames + ")");
    return *d;
  }
  rj::Value::ConstArray array(const char *field) const {
    const rj::Value &f = get(field);
    if (!f.IsArray())
      fail(field, "must be an array");
    return f.GetArray();
  }
  /// A shape of dimensions >= minDim with at most kMaxElements elements.
  Dims shape(const char *field, int64_t minDim) const {
    Dims out;
    int64_t n = 1;
    for (const rj::Value &d : array(field)) {
      int64_t x = integerOf(d, field, minDim, kMaxElements);
      // Both factors are <= 2^24: no overflow before the check.
      n *= x > 0 ? x : 1;
      if (n > kMaxElements)
        fail(field, "more than " + std::to_string(kMaxElements) + " elements");
      out.push_back(x);
    }
    return out;
  }

private:
  const rj::Value &v_;
  std::string where_;
};

/// Parses the text; one line naming `what` and the byte of a syntax error.
void parseJson(rj::Document &doc, std::string_view json, const char *what) {
  doc.Parse<kParseFlags>(json.data(), json.size());
  if (doc.HasParseError())
    throw std::invalid_argument(std::string(what) +
                                ": not valid JSON at byte " +
                                std::to_string(doc.GetErrorOffset()) + ": " +
                                rj::GetParseError_En(doc.GetParseError()));
}

/// A TensorValue {"dtype", "shape", "values"} (a parse spec's default).
TensorValue readTensor(const rj::Value &v, const std::string &where) {
  Fields f(v, where, {"dtype", "shape", "values"});
  TensorValue t;
  t.dtype = f.dtype("dtype");
  t.shape = f.shape("shape", 0);
  int64_t n = 1;
  for (int64_t d : t.shape)
    n *= d;
  const auto values = f.array("values");
  if (static_cast<int64_t>(values.Size()) != n)
    f.fail("values", std::to_string(values.Size()) + " values for shape " +
                         shape_string(t.shape));
  auto asDouble = [&](const rj::Value &x) {
    if (!x.IsNumber())
      f.fail("values", "must be numbers");
    return x.GetDouble();
  };
  auto asFloat = [&](const rj::Value &x) {
    double d = asDouble(x);
    if (!fitsDType(d, DType::Float32))
      f.fail("values", numberStr(d) + " is outside float32's range");
    return static_cast<float>(d);
  };
  auto put = [&](const auto &x) {
    t.data.append(reinterpret_cast<const char *>(&x), sizeof(x));
  };
  for (const rj::Value &x : values) {
    switch (t.dtype) {
    case DType::String:
      if (!x.IsString())
        f.fail("values", "must be strings");
      t.strings.push_back(str(x));
      break;
    case DType::Float32:
      put(asFloat(x));
      break;
    case DType::Float64:
      put(asDouble(x));
      break;
    case DType::Float16:
      put(float_to_half(asFloat(x)));
      break;
    case DType::BFloat16:
      put(float_to_bfloat16(asFloat(x)));
      break;
    case DType::Int32:
      put(static_cast<int32_t>(f.integerOf(x, "values", INT32_MIN, INT32_MAX)));
      break;
    case DType::Int64:
      put(f.integerOf(x, "values", INT64_MIN, INT64_MAX));
      break;
    case DType::Bool:
      if (!x.IsBool())
        f.fail("values", "must be true or false");
      t.data.push_back(x.GetBool() ? 1 : 0);
      break;
    case DType::Invalid:
      f.fail("dtype", "must not be INVALID");
    }
  }
  return t;
}

data::FeatureSpec readSpec(const rj::Value &v, const std::string &where) {
  Fields f(v, where,
           {"kind", "shape", "dtype", "allow_missing", "default_value"});
  std::string kind = f.string("kind");
  auto defaultValue = [&]() -> std::optional<TensorValue> {
    if (const rj::Value *d = f.find("default_value"))
      return readTensor(*d, f.where() + ".default_value");
    return std::nullopt;
  };
  if (kind == "VarLenFeature") {
    if (f.find("shape") || f.find("allow_missing") || f.find("default_value"))
      f.fail("a VarLenFeature has only a dtype");
    return data::VarLenFeature{f.dtype("dtype")};
  }
  if (kind == "FixedLenFeature") {
    if (f.find("allow_missing"))
      f.fail("a FixedLenFeature has no allow_missing");
    data::FixedLenFeature out;
    out.shape = f.shape("shape", 0);
    out.dtype = f.dtype("dtype");
    out.default_value = defaultValue();
    return out;
  }
  if (kind == "FixedLenSequenceFeature") {
    data::FixedLenSequenceFeature out;
    out.shape = f.shape("shape", 0);
    out.dtype = f.dtype("dtype");
    out.allow_missing = f.boolean("allow_missing");
    out.default_value = defaultValue();
    return out;
  }
  f.fail("kind", "unknown kind '" + printable(kind) +
                     "' (FixedLenFeature, VarLenFeature or "
                     "FixedLenSequenceFeature)");
}

/// A column read, with what bounds the columns built on it.
struct Entry {
  FeatureColumnPtr column;
  /// Crossed leaves (1 for any other column).
  int64_t leaves = 1;
  /// The length of column->name(), computed without building the name.
  int64_t nameLength = 0;
};

class ColumnReader {
public:
  explicit ColumnReader(const AssetPathFn &assetPath) : assetPath_(assetPath) {}

  Entry read(const rj::Value &v, const std::string &where, int depth);

private:
  Entry readObject(Fields &f, const std::string &kind, int depth);
  std::shared_ptr<const NumericColumn>
  numeric(const rj::Value &v, const std::string &where, int depth, Entry &e);
  CategoricalColumnPtr categorical(const rj::Value &v, const std::string &where,
                                   int depth, Entry &e);
  /// The Transformer bucketizes a crossed or weighted bucketized column on
  /// the host, which a normalized source forbids (its normalizer_fn runs
  /// compiled, and the column read back has none).
  void requireHostIds(const Fields &f, const CategoricalColumn &c) const;

  const AssetPathFn &assetPath_;
  std::vector<Entry> table_;
  std::set<const NumericColumn *> normalized_;
  std::map<std::string, std::shared_ptr<const SharedEmbeddingState>> shared_;
};

Entry ColumnReader::read(const rj::Value &v, const std::string &where,
                         int depth) {
  if (depth > kMaxDepth)
    throw std::invalid_argument(where + ": columns nested deeper than " +
                                std::to_string(kMaxDepth));
  if (v.IsObject() && v.HasMember("ref")) {
    Fields f(v, where, {"ref"});
    int64_t last = static_cast<int64_t>(table_.size()) - 1;
    const rj::Value &r = f.get("ref");
    if (!r.IsInt64() || r.GetInt64() < 0 || r.GetInt64() > last)
      f.fail("ref", "must be the number of a column written before (0.." +
                        std::to_string(last) + ")");
    return table_[static_cast<size_t>(r.GetInt64())];
  }
  Fields f(v, where,
           {"kind",
            "key",
            "shape",
            "default_value",
            "dtype",
            "normalizer_fn",
            "source_column",
            "boundaries",
            "num_buckets",
            "hash_bucket_size",
            "vocabulary_list",
            "vocabulary_file",
            "vocabulary_size",
            "num_oov_buckets",
            "keys",
            "hash_key",
            "categorical_column",
            "weight_feature_key",
            "dimension",
            "combiner",
            "max_norm",
            "trainable",
            "shared_embedding_collection_name"});
  std::string kind = f.string("kind");
  Entry e;
  try {
    e = readObject(f, kind, depth);
  } catch (const data::DataError &err) {
    // A vocabulary file that is missing or does not hold what it held.
    f.fail(err.what());
  }
  if (e.nameLength > kMaxNameLength)
    f.fail("its name would be longer than " + std::to_string(kMaxNameLength) +
           " bytes");
  table_.push_back(e);
  return e;
}

std::shared_ptr<const NumericColumn>
ColumnReader::numeric(const rj::Value &v, const std::string &where, int depth,
                      Entry &e) {
  Entry child = read(v, where, depth + 1);
  auto n = std::dynamic_pointer_cast<const NumericColumn>(child.column);
  if (!n)
    throw std::invalid_argument(where + ": '" +
                                printable(child.column->name()) +
                                "' is not a numeric_column");
  e.nameLength = child.nameLength;
  return n;
}

CategoricalColumnPtr ColumnReader::categorical(const rj::Value &v,
                                               const std::string &where,
                                               int depth, Entry &e) {
  Entry child = read(v, where, depth + 1);
  auto c = std::dynamic_pointer_cast<const CategoricalColumn>(child.column);
  if (!c)
    throw std::invalid_argument(where + ": '" +
                                printable(child.column->name()) +
                                "' is not a categorical column");
  e.leaves = child.leaves;
  e.nameLength = child.nameLength;
  return c;
}

void ColumnReader::requireHostIds(const Fields &f,
                                  const CategoricalColumn &c) const {
  if (const auto *b = dynamic_cast<const BucketizedColumn *>(&c))
    if (normalized_.count(b->source_column().get()))
      f.fail("'" + printable(b->name()) +
             "' is bucketized on the host here, but its source had a "
             "normalizer_fn, which runs compiled and is not kept");
}

/// Builds a column, naming the field at fault in the input (the
/// constructors' own checks name the column).
template <typename Build>
auto construct(const Fields &f, Build build) -> decltype(build()) {
  try {
    return build();
  } catch (const std::invalid_argument &e) {
    f.fail(e.what());
  }
}

Entry ColumnReader::readObject(Fields &f, const std::string &kind, int depth) {
  Entry e;
  auto keyed = [&]() {
    std::string key = f.string("key");
    f.label(kind + " '" + printable(key) + "'");
    e.nameLength = static_cast<int64_t>(key.size());
    return key;
  };
  const std::string at = f.where(); // the children's paths
  if (kind == "numeric_column") {
    std::string key = keyed();
    Dims shape = f.shape("shape", 1);
    DType dtype = f.dtype("dtype");
    std::vector<double> defaults;
    if (f.find("default_value")) {
      // One per element, as written (numeric_column's single value would
      // let a few bytes allocate kMaxElements).
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      if (static_cast<int64_t>(f.array("default_value").Size()) != n)
        f.fail("default_value",
               std::to_string(f.array("default_value").Size()) +
                   " values, expected " + std::to_string(n) + " for shape " +
                   shape_string(shape));
      for (const rj::Value &x : f.array("default_value")) {
        if (!x.IsNumber())
          f.fail("default_value", "must be numbers");
        if (!fitsDType(x.GetDouble(), dtype))
          f.fail("default_value", numberStr(x.GetDouble()) +
                                      " does not fit dtype " +
                                      dtype_name(dtype));
        defaults.push_back(x.GetDouble());
      }
    }
    bool normalized = f.find("normalizer_fn") && f.boolean("normalizer_fn");
    auto c = construct(f, [&] {
      return numeric_column(key, shape, defaults, dtype, nullptr);
    });
    if (normalized)
      normalized_.insert(c.get());
    e.column = c;
  } else if (kind == "sequence_numeric_column") {
    std::string key = keyed();
    Dims shape = f.shape("shape", 1);
    DType dtype = f.dtype("dtype");
    double defaultValue = f.number("default_value");
    // The host half only needs to know there is one (it feeds the mask
    // of the given values then); the compiled code holds the function.
    NormalizerFn normalizer;
    if (f.find("normalizer_fn") && f.boolean("normalizer_fn"))
      normalizer = [](const Tensor &x) { return x; };
    e.column = construct(f, [&] {
      return sequence_numeric_column(key, shape, defaultValue, dtype,
                                     normalizer);
    });
  } else if (kind == "sequence_categorical_column") {
    f.label(kind);
    auto c = categorical(f.get("categorical_column"),
                         at + ".categorical_column", depth, e);
    e.column = construct(f, [&] {
      return std::make_shared<const SequenceCategoricalColumn>(c);
    });
  } else if (kind == "bucketized_column") {
    f.label(kind);
    auto src = numeric(f.get("source_column"), at + ".source_column", depth, e);
    e.nameLength += 11; // "_bucketized"
    std::vector<double> bounds;
    for (const rj::Value &x : f.array("boundaries")) {
      if (!x.IsNumber())
        f.fail("boundaries", "must be numbers");
      // Compared in float32 (the Transformer casts them).
      if (!fitsDType(x.GetDouble(), DType::Float32))
        f.fail("boundaries",
               numberStr(x.GetDouble()) + " is outside float32's range");
      bounds.push_back(x.GetDouble());
    }
    e.column = construct(f, [&] { return bucketized_column(src, bounds); });
  } else if (kind == "categorical_column_with_identity") {
    std::string key = keyed();
    int64_t n = f.integer("num_buckets", 1, kMaxSize);
    std::optional<int64_t> d = f.optionalInteger("default_value", 0, n - 1);
    e.column = construct(
        f, [&] { return categorical_column_with_identity(key, n, d); });
  } else if (kind == "categorical_column_with_hash_bucket") {
    std::string key = keyed();
    int64_t n = f.integer("hash_bucket_size", 1, kMaxSize);
    DType dtype = f.dtype("dtype");
    e.column = construct(
        f, [&] { return categorical_column_with_hash_bucket(key, n, dtype); });
  } else if (kind == "categorical_column_with_vocabulary_list") {
    std::string key = keyed();
    std::vector<std::string> strings;
    std::vector<int64_t> ints;
    const auto list = f.array("vocabulary_list");
    bool isInt = !list.Empty() && list[0].IsInt64();
    for (const rj::Value &x : list) {
      if (isInt && x.IsInt64())
        ints.push_back(x.GetInt64());
      else if (!isInt && x.IsString())
        strings.push_back(str(x));
      else
        f.fail("vocabulary_list", "must be all strings or all integers");
    }
    DType dtype = f.dtype("dtype");
    int64_t d = f.integer("default_value", -1, kMaxSize);
    int64_t oov = f.integer("num_oov_buckets", 0, kMaxSize);
    e.column = construct(f, [&] {
      return categorical_column_with_vocabulary_list(
          key,
          isInt ? VocabularyList(std::move(ints))
                : VocabularyList(std::move(strings)),
          dtype, d, oov);
    });
  } else if (kind == "categorical_column_with_vocabulary_file") {
    std::string key = keyed();
    std::string asset = f.string("vocabulary_file");
    int64_t size = f.integer("vocabulary_size", 1, kMaxSize);
    DType dtype = f.dtype("dtype");
    int64_t d = f.integer("default_value", -1, kMaxSize);
    int64_t oov = f.integer("num_oov_buckets", 0, kMaxSize);
    std::string path = assetPath_ ? assetPath_(asset) : asset;
    // -1 is no default_value (the constructor refuses one with OOV buckets).
    e.column = construct(f, [&] {
      return categorical_column_with_vocabulary_file(
          key, path, size, dtype,
          d == -1 ? std::nullopt : std::optional<int64_t>(d), oov);
    });
  } else if (kind == "crossed_column") {
    f.label(kind);
    std::vector<CrossKey> keys;
    e.leaves = 0;
    e.nameLength = 0;
    const auto list = f.array("keys");
    for (rj::SizeType i = 0; i < list.Size(); ++i) {
      const rj::Value &k = list[i];
      if (i > 0)
        e.nameLength += 3; // "_X_"
      if (k.IsString()) {
        keys.emplace_back(str(k));
        e.leaves += 1;
        e.nameLength += k.GetStringLength();
      } else {
        Entry child;
        CategoricalColumnPtr c = categorical(
            k, at + ".keys[" + std::to_string(i) + "]", depth, child);
        requireHostIds(f, *c);
        keys.emplace_back(c);
        e.leaves += child.leaves;
        e.nameLength += child.nameLength;
      }
      if (e.leaves > kMaxCrossLeaves)
        f.fail("keys", "more than " + std::to_string(kMaxCrossLeaves) +
                           " keys crossed");
    }
    int64_t n = f.integer("hash_bucket_size", 1, kMaxSize);
    const rj::Value &h = f.get("hash_key");
    if (!h.IsUint64())
      f.fail("hash_key", "must be an unsigned 64-bit integer");
    e.column =
        construct(f, [&] { return crossed_column(keys, n, h.GetUint64()); });
  } else if (kind == "weighted_categorical_column") {
    f.label(kind);
    auto c = categorical(f.get("categorical_column"),
                         at + ".categorical_column", depth, e);
    requireHostIds(f, *c);
    std::string weight = f.string("weight_feature_key");
    DType dtype = f.dtype("dtype");
    e.leaves = 1;
    e.nameLength += 13 + static_cast<int64_t>(weight.size());
    e.column = construct(
        f, [&] { return weighted_categorical_column(c, weight, dtype); });
  } else if (kind == "indicator_column") {
    f.label(kind);
    auto c = categorical(f.get("categorical_column"),
                         at + ".categorical_column", depth, e);
    e.leaves = 1;
    e.nameLength += 10; // "_indicator"
    e.column = construct(f, [&] { return indicator_column(c); });
  } else if (kind == "embedding_column") {
    f.label(kind);
    auto c = categorical(f.get("categorical_column"),
                         at + ".categorical_column", depth, e);
    e.leaves = 1;
    e.nameLength += 10; // "_embedding"
    int64_t dimension = f.integer("dimension", 1, kMaxSize);
    std::string combiner = f.string("combiner");
    std::optional<double> maxNorm;
    if (f.find("max_norm"))
      maxNorm = f.number("max_norm");
    bool trainable = f.boolean("trainable");
    e.column = construct(f, [&] {
      return embedding_column(c, dimension, combiner, std::nullopt, maxNorm,
                              trainable);
    });
  } else if (kind == "shared_embedding_column") {
    f.label(kind);
    auto c = categorical(f.get("categorical_column"),
                         at + ".categorical_column", depth, e);
    e.leaves = 1;
    e.nameLength += 17; // "_shared_embedding"
    std::string name = f.string("shared_embedding_collection_name");
    std::string combiner = f.string("combiner");
    std::optional<double> maxNorm;
    if (f.find("max_norm"))
      maxNorm = f.number("max_norm");
    auto &state = shared_[name];
    if (!state) {
      // The first column of the collection holds its state.
      auto s = std::make_shared<SharedEmbeddingState>();
      s->collection_name = name;
      s->num_buckets = c->num_buckets();
      s->dimension = f.integer("dimension", 1, kMaxSize);
      s->trainable = f.boolean("trainable");
      // Not kept (the variable's value is in the export): TF's default.
      s->initializer = truncated_normal_initializer(
          0.0, 1.0 / std::sqrt(static_cast<double>(s->dimension)));
      state = s;
    } else {
      if (f.find("dimension") &&
          f.integer("dimension", 1, kMaxSize) != state->dimension)
        f.fail("dimension", "differs from the collection's");
      if (f.find("trainable") && f.boolean("trainable") != state->trainable)
        f.fail("trainable", "differs from the collection's");
      if (c->num_buckets() != state->num_buckets)
        f.fail("categorical_column", "has " + std::to_string(c->num_buckets()) +
                                         " buckets, the collection " +
                                         std::to_string(state->num_buckets));
    }
    e.column = construct(f, [&] {
      return std::make_shared<const SharedEmbeddingColumn>(c, state, combiner,
                                                           maxNorm);
    });
  } else {
    f.fail("kind", "unknown kind '" + printable(kind) + "'");
  }
  return e;
}

// --- Writing ----------------------------------------------------------------

class ColumnWriter {
public:
  ColumnWriter(Writer &w, const AddAssetFn &addAsset)
      : w_(w), addAsset_(addAsset) {}
  void write(const FeatureColumn &c);

private:
  void key(const char *field, const std::string &value) {
    w_.Key(field);
    w_.String(value.data(), static_cast<rj::SizeType>(value.size()));
  }
  void dtype(DType d) { key("dtype", dtype_name(d)); }
  void integer(const char *field, int64_t value) {
    w_.Key(field);
    w_.Int64(value);
  }
  void numbers(const char *field, const std::vector<double> &values) {
    w_.Key(field);
    w_.StartArray();
    for (double x : values)
      w_.Double(x);
    w_.EndArray();
  }
  void maxNorm(const std::optional<double> &m) {
    if (m) {
      w_.Key("max_norm");
      w_.Double(*m);
    }
  }
  void child(const char *field, const FeatureColumn &c) {
    w_.Key(field);
    write(c);
  }
  /// Columns whose ids the Transformer computes on the host: a bucketized
  /// one must not lose a normalizer_fn (see ColumnReader::requireHostIds).
  void requireHostIds(const FeatureColumn &user, const CategoricalColumn &c) {
    if (const auto *b = dynamic_cast<const BucketizedColumn *>(&c))
      if (b->source_column()->normalizer_fn())
        throw std::invalid_argument(
            "feature_columns_to_json: '" + user.name() +
            "' needs the ids of '" + b->name() +
            "' on the host, but its source has a normalizer_fn "
            "(which runs compiled; the Transformer refuses it too)");
  }

  Writer &w_;
  const AddAssetFn &addAsset_;
  std::map<const FeatureColumn *, int64_t> ids_;
  std::map<std::string, const SharedEmbeddingState *> shared_;
};

void ColumnWriter::write(const FeatureColumn &c) {
  auto it = ids_.find(&c);
  if (it != ids_.end()) {
    w_.StartObject();
    integer("ref", it->second);
    w_.EndObject();
    return;
  }
  w_.StartObject();
  if (const auto *n = dynamic_cast<const NumericColumn *>(&c)) {
    key("kind", "numeric_column");
    key("key", n->key());
    w_.Key("shape");
    w_.StartArray();
    for (int64_t d : n->shape())
      w_.Int64(d);
    w_.EndArray();
    if (!n->default_value().empty())
      numbers("default_value", n->default_value());
    dtype(n->dtype());
    if (n->normalizer_fn()) {
      w_.Key("normalizer_fn");
      w_.Bool(true);
    }
  } else if (const auto *q = dynamic_cast<const SequenceNumericColumn *>(&c)) {
    key("kind", "sequence_numeric_column");
    key("key", q->key());
    w_.Key("shape");
    w_.StartArray();
    for (int64_t d : q->shape())
      w_.Int64(d);
    w_.EndArray();
    w_.Key("default_value");
    w_.Double(q->default_value());
    dtype(q->dtype());
    if (q->normalizer_fn()) {
      w_.Key("normalizer_fn");
      w_.Bool(true);
    }
  } else if (const auto *sc =
                 dynamic_cast<const SequenceCategoricalColumn *>(&c)) {
    key("kind", "sequence_categorical_column");
    child("categorical_column", *sc->categorical_column());
  } else if (const auto *b = dynamic_cast<const BucketizedColumn *>(&c)) {
    key("kind", "bucketized_column");
    child("source_column", *b->source_column());
    numbers("boundaries", b->boundaries());
  } else if (const auto *i =
                 dynamic_cast<const IdentityCategoricalColumn *>(&c)) {
    key("kind", "categorical_column_with_identity");
    key("key", i->key());
    integer("num_buckets", i->num_buckets());
    if (i->default_value())
      integer("default_value", *i->default_value());
  } else if (const auto *h =
                 dynamic_cast<const HashedCategoricalColumn *>(&c)) {
    key("kind", "categorical_column_with_hash_bucket");
    key("key", h->key());
    integer("hash_bucket_size", h->hash_bucket_size());
    dtype(h->dtype());
  } else if (const auto *l =
                 dynamic_cast<const VocabularyListCategoricalColumn *>(&c)) {
    key("kind", "categorical_column_with_vocabulary_list");
    key("key", l->key());
    w_.Key("vocabulary_list");
    w_.StartArray();
    if (l->vocabulary_list().is_int())
      for (int64_t x : l->vocabulary_list().ints())
        w_.Int64(x);
    else
      for (const std::string &s : l->vocabulary_list().strings())
        w_.String(s.data(), static_cast<rj::SizeType>(s.size()));
    w_.EndArray();
    dtype(l->dtype());
    integer("default_value", l->default_value());
    integer("num_oov_buckets", l->num_oov_buckets());
  } else if (const auto *v =
                 dynamic_cast<const VocabularyFileCategoricalColumn *>(&c)) {
    key("kind", "categorical_column_with_vocabulary_file");
    key("key", v->key());
    key("vocabulary_file",
        addAsset_ ? addAsset_(v->vocabulary_file()) : v->vocabulary_file());
    integer("vocabulary_size", v->vocabulary_size());
    dtype(v->dtype());
    integer("default_value", v->default_value());
    integer("num_oov_buckets", v->num_oov_buckets());
  } else if (const auto *x = dynamic_cast<const CrossedColumn *>(&c)) {
    key("kind", "crossed_column");
    w_.Key("keys");
    w_.StartArray();
    for (const CrossKey &k : x->keys()) {
      if (k.is_column()) {
        requireHostIds(c, *k.column());
        write(*k.column());
      } else {
        w_.String(k.key().data(), static_cast<rj::SizeType>(k.key().size()));
      }
    }
    w_.EndArray();
    integer("hash_bucket_size", x->hash_bucket_size());
    w_.Key("hash_key");
    w_.Uint64(x->hash_key());
  } else if (const auto *wc =
                 dynamic_cast<const WeightedCategoricalColumn *>(&c)) {
    key("kind", "weighted_categorical_column");
    requireHostIds(c, *wc->categorical_column());
    child("categorical_column", *wc->categorical_column());
    key("weight_feature_key", wc->weight_feature_key());
    dtype(wc->dtype());
  } else if (const auto *ind = dynamic_cast<const IndicatorColumn *>(&c)) {
    key("kind", "indicator_column");
    child("categorical_column", *ind->categorical_column());
  } else if (const auto *e = dynamic_cast<const EmbeddingColumn *>(&c)) {
    key("kind", "embedding_column");
    child("categorical_column", *e->categorical_column());
    integer("dimension", e->dimension());
    key("combiner", e->combiner());
    maxNorm(e->max_norm());
    w_.Key("trainable");
    w_.Bool(e->trainable());
  } else if (const auto *s = dynamic_cast<const SharedEmbeddingColumn *>(&c)) {
    key("kind", "shared_embedding_column");
    child("categorical_column", *s->categorical_column());
    const SharedEmbeddingState &state = s->shared();
    key("shared_embedding_collection_name", state.collection_name);
    auto [seen, fresh] = shared_.emplace(state.collection_name, &state);
    if (fresh) {
      integer("dimension", state.dimension);
      w_.Key("trainable");
      w_.Bool(state.trainable);
    } else if (seen->second != &state) {
      throw std::invalid_argument(
          "feature_columns_to_json: two shared embedding collections named '" +
          state.collection_name + "'");
    }
    key("combiner", s->combiner());
    maxNorm(s->max_norm());
  } else {
    throw std::invalid_argument("feature_columns_to_json: column '" + c.name() +
                                "' is of a kind this cannot write");
  }
  w_.EndObject();
  int64_t id = static_cast<int64_t>(ids_.size());
  ids_.emplace(&c, id);
}

void writeTensor(Writer &w, const TensorValue &t) {
  w.StartObject();
  w.Key("dtype");
  w.String(dtype_name(t.dtype));
  w.Key("shape");
  w.StartArray();
  for (int64_t d : t.shape)
    w.Int64(d);
  w.EndArray();
  w.Key("values");
  w.StartArray();
  int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    auto at = [&](auto x) {
      std::memcpy(&x, t.data.data() + i * sizeof(x), sizeof(x));
      return x;
    };
    switch (t.dtype) {
    case DType::String: {
      const std::string &s = t.strings.at(static_cast<size_t>(i));
      w.String(s.data(), static_cast<rj::SizeType>(s.size()));
      break;
    }
    case DType::Float32:
      w.Double(at(float()));
      break;
    case DType::Float64:
      w.Double(at(double()));
      break;
    case DType::Float16:
      w.Double(half_to_float(at(uint16_t())));
      break;
    case DType::BFloat16:
      w.Double(bfloat16_to_float(at(uint16_t())));
      break;
    case DType::Int32:
      w.Int(at(int32_t()));
      break;
    case DType::Int64:
      w.Int64(at(int64_t()));
      break;
    case DType::Bool:
      w.Bool(at(uint8_t()) != 0);
      break;
    case DType::Invalid:
      throw std::invalid_argument("parse_spec_to_json: a default_value of "
                                  "dtype INVALID");
    }
  }
  w.EndArray();
  w.EndObject();
}

} // namespace

std::string feature_columns_to_json(const FeatureColumns &columns,
                                    const AddAssetFn &add_asset) {
  rj::StringBuffer buffer;
  Writer w(buffer);
  ColumnWriter writer(w, add_asset);
  w.StartArray();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!columns[i])
      throw std::invalid_argument("feature_columns_to_json: column " +
                                  std::to_string(i) + " is null");
    writer.write(*columns[i]);
  }
  w.EndArray();
  return std::string(buffer.GetString(), buffer.GetSize());
}

FeatureColumns feature_columns_from_json(std::string_view json,
                                         const AssetPathFn &asset_path) {
  try {
    rj::Document doc;
    parseJson(doc, json, "feature_columns");
    if (!doc.IsArray())
      throw std::invalid_argument("feature_columns: must be a JSON array");
    ColumnReader reader(asset_path);
    FeatureColumns out;
    for (rj::SizeType i = 0; i < doc.Size(); ++i)
      out.push_back(
          reader.read(doc[i], "feature_columns[" + std::to_string(i) + "]", 0)
              .column);
    return out;
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(oneLine(e.what()));
  }
}

std::string parse_spec_to_json(const data::FeatureSpecs &specs) {
  rj::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  for (const auto &[name, spec] : specs) {
    w.Key(name.data(), static_cast<rj::SizeType>(name.size()));
    w.StartObject();
    auto common = [&](const char *kind, const Dims &shape, DType dtype) {
      w.Key("kind");
      w.String(kind);
      w.Key("shape");
      w.StartArray();
      for (int64_t d : shape)
        w.Int64(d);
      w.EndArray();
      w.Key("dtype");
      w.String(dtype_name(dtype));
    };
    if (const auto *f = std::get_if<data::FixedLenFeature>(&spec)) {
      common("FixedLenFeature", f->shape, f->dtype);
      if (f->default_value) {
        w.Key("default_value");
        writeTensor(w, *f->default_value);
      }
    } else if (const auto *v = std::get_if<data::VarLenFeature>(&spec)) {
      w.Key("kind");
      w.String("VarLenFeature");
      w.Key("dtype");
      w.String(dtype_name(v->dtype));
    } else {
      const auto &s = std::get<data::FixedLenSequenceFeature>(spec);
      common("FixedLenSequenceFeature", s.shape, s.dtype);
      w.Key("allow_missing");
      w.Bool(s.allow_missing);
      if (s.default_value) {
        w.Key("default_value");
        writeTensor(w, *s.default_value);
      }
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

data::FeatureSpecs parse_spec_from_json(std::string_view json) {
  try {
    rj::Document doc;
    parseJson(doc, json, "parse_spec");
    if (!doc.IsObject())
      throw std::invalid_argument("parse_spec: must be a JSON object");
    data::FeatureSpecs out;
    for (const auto &m : doc.GetObject()) {
      std::string name = str(m.name);
      std::string where = "parse_spec['" + printable(name) + "']";
      if (out.count(name))
        throw std::invalid_argument(where + ": the feature appears twice");
      out.emplace(name, readSpec(m.value, where));
    }
    return out;
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(oneLine(e.what()));
  }
}

} // namespace feature_column
} // namespace estc
