//===- Json.h - JSON values read with RapidJSON (internal) ----------------===//
//
// json::parse reads a safetensors header or TF_CONFIG with RapidJSON's SAX
// reader: strict RFC 8259, UTF-8 checked; objects keep their key order;
// duplicate keys are an error; nesting is limited to 32 levels. Numbers keep
// their text so that 64-bit offsets are read exactly. json::quote writes a
// string literal.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_JSON_H
#define ESTC_LIB_SUPPORT_JSON_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace estc {
namespace json {

/// A parse error; what() is "at byte N: <problem>".
class ParseError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;         // String: the decoded string; Number: the literal
  std::vector<Value> items; // Array
  std::vector<std::pair<std::string, Value>> fields; // Object, in file order

  // Out of line: clang with libstdc++ 12 refuses an implicit one (it checks
  // std::pair<std::string, Value> while that is incomplete).
  Value();

  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }
  bool isString() const { return kind == Kind::String; }
  /// The value of a non-negative integer literal that fits in int64.
  std::optional<int64_t> asNonNegativeInt() const;
  /// A field of an object, or nullptr.
  const Value *find(std::string_view key) const;
};

/// Parses one JSON value (surrounding whitespace allowed).
Value parse(std::string_view text);

/// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

} // namespace json
} // namespace estc

#endif // ESTC_LIB_SUPPORT_JSON_H
