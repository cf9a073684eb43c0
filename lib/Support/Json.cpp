//===- Json.cpp - json::Value read by RapidJSON's SAX reader --------------===//
//
// rapidjson::Reader checks the syntax and the UTF-8 of the text and keeps
// each number's literal (kParseNumbersAsStringsFlag); Builder, its handler,
// makes the json::Value and adds what RapidJSON does not check: duplicate
// keys, the nesting limit and lone low surrogates (\uDC00..\uDFFF, which
// RapidJSON 1.1.0 decodes to invalid UTF-8). A RapidJSON error becomes the
// message and byte offset that estc's own parser (which this replaced)
// reported, read from the text at RapidJSON's offset.
//
//===----------------------------------------------------------------------===//

#include "lib/Support/Json.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstdio>
#include <set>

namespace estc {
namespace json {

Value::Value() = default;

std::optional<int64_t> Value::asNonNegativeInt() const {
  if (kind != Kind::Number || text.empty() || text.size() > 18)
    return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

const Value *Value::find(std::string_view key) const {
  for (const auto &f : fields)
    if (f.first == key)
      return &f.second;
  return nullptr;
}

namespace {
constexpr size_t kMaxDepth = 32;

[[noreturn]] void fail(size_t at, const std::string &what) {
  throw ParseError("at byte " + std::to_string(at) + ": " + what);
}

// A character of the text in an error: itself when printable, else \xHH,
// so that the error stays one line.
std::string shown(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u != 0x7f)
    return std::string(1, c);
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", u);
  return buf;
}

size_t skipSpace(std::string_view s, size_t p) {
  while (p < s.size() &&
         (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r'))
    ++p;
  return p;
}

int hexDigit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

// The four hex digits at `p` as a number, or -1.
long hex4(std::string_view s, size_t p) {
  if (p + 4 > s.size())
    return -1;
  long v = 0;
  for (size_t i = p; i < p + 4; ++i) {
    if (hexDigit(s[i]) < 0)
      return -1;
    v = v * 16 + hexDigit(s[i]);
  }
  return v;
}

// Where the string opened by the quote at `quote` has its first \u escape
// of a lone low surrogate (the offset after its digits), among the escapes
// that start before `limit`; npos if none.
size_t loneLowSurrogate(std::string_view s, size_t quote, size_t limit) {
  if (quote == std::string_view::npos)
    return quote;
  for (size_t p = quote + 1; p < limit && p < s.size() && s[p] != '"';) {
    if (s[p] != '\\') {
      ++p;
    } else if (s.substr(p + 1, 1) != "u") {
      p += 2;
    } else {
      long cp = hex4(s, p + 2); // valid, as it starts before `limit`
      if (cp >= 0xDC00 && cp < 0xE000)
        return p + 6;
      p += cp >= 0xD800 && cp < 0xDC00 ? 12 : 6; // a pair, or one
    }
  }
  return std::string_view::npos;
}

// RapidJSON's handler: builds the value. A refusal (false) leaves the error
// in `failAt` and `failure`.
class Builder
    : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
public:
  Builder(std::string_view text, const rapidjson::MemoryStream &in)
      : text(text), in(in) {}

  Value root;
  size_t failAt = 0;
  std::string failure;
  // The offset after the last token handled: a string that fails starts at
  // the first quote from here.
  size_t end = 0;

  bool Default() { return false; } // Int, Double...: not with raw numbers
  bool Null() { return add(Value{}); }
  bool Bool(bool b) {
    Value v;
    v.kind = Value::Kind::Bool;
    v.boolean = b;
    return add(std::move(v));
  }
  bool RawNumber(const char *s, rapidjson::SizeType n, bool) {
    Value v;
    v.kind = Value::Kind::Number;
    v.text.assign(s, n);
    return add(std::move(v));
  }
  bool String(const char *s, rapidjson::SizeType n, bool) {
    Value v;
    v.kind = Value::Kind::String;
    v.text.assign(s, n);
    return decoded(v.text) && add(std::move(v));
  }
  bool StartObject() { return open(Value::Kind::Object); }
  bool Key(const char *s, rapidjson::SizeType n, bool) {
    std::string key(s, n);
    if (!decoded(key))
      return false;
    Frame &f = stack.back();
    if (!f.seen.insert(key).second)
      return refuse(in.Tell(), "duplicate key " + quote(key));
    f.key = std::move(key);
    end = in.Tell();
    // The value of a key at the deepest level would be nested too deeply
    // (a missing ':' is RapidJSON's error).
    size_t p = skipSpace(text, end);
    if (stack.size() > kMaxDepth && p < text.size() && text[p] == ':')
      return refuse(p + 1, "nested too deeply");
    return true;
  }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool StartArray() {
    if (!open(Value::Kind::Array))
      return false;
    size_t p = skipSpace(text, end);
    if (stack.size() > kMaxDepth && (p == text.size() || text[p] != ']'))
      return refuse(p, "nested too deeply");
    return true;
  }
  bool EndArray(rapidjson::SizeType) { return close(); }

private:
  struct Frame {
    Value value;
    std::string key; // Object: the key of the next value
    std::set<std::string> seen;
  };
  std::string_view text;
  const rapidjson::MemoryStream &in;
  std::vector<Frame> stack; // the open arrays and objects

  bool refuse(size_t at, std::string what) {
    failAt = at;
    failure = std::move(what);
    return false;
  }

  // A decoded string or key: refused if it has a lone low surrogate
  // (U+DC00..U+DFFF as UTF-8: ED B0..BF).
  bool decoded(const std::string &s) {
    for (size_t i = 0; i + 1 < s.size(); ++i)
      if (static_cast<unsigned char>(s[i]) == 0xED &&
          (static_cast<unsigned char>(s[i + 1]) & 0xF0) == 0xB0) {
        size_t at = loneLowSurrogate(text, text.find('"', end), in.Tell());
        return refuse(at == std::string_view::npos ? in.Tell() : at,
                      "unpaired surrogate");
      }
    return true;
  }

  bool open(Value::Kind kind) {
    end = in.Tell();
    stack.emplace_back();
    stack.back().value.kind = kind;
    return true;
  }

  bool close() {
    Value v = std::move(stack.back().value);
    stack.pop_back();
    return add(std::move(v));
  }

  bool add(Value v) {
    end = in.Tell();
    if (stack.empty())
      root = std::move(v);
    else if (stack.back().value.isArray())
      stack.back().value.items.push_back(std::move(v));
    else
      stack.back().value.fields.emplace_back(std::move(stack.back().key),
                                             std::move(v));
    return true;
  }
};

bool isLower(char c) { return c >= 'a' && c <= 'z'; }

// Throws RapidJSON's error at byte `o` of `s` as estc's parser reported it.
[[noreturn]] void report(std::string_view s, rapidjson::ParseErrorCode code,
                         size_t o, const Builder &b) {
  using namespace rapidjson;
  const bool atEnd = o >= s.size();
  switch (code) {
  case kParseErrorTermination:
    fail(b.failAt, b.failure);
  case kParseErrorValueInvalid:
    if (o > 0 && s[o - 1] == '-')
      fail(o, "malformed number");
    if (o > 0 && isLower(s[o - 1])) { // in true, false or null
      size_t start = o - 1;
      while (start > 0 && isLower(s[start - 1]))
        --start;
      fail(start, "unexpected character '" + shown(s[start]) + "'");
    }
    [[fallthrough]];
  case kParseErrorDocumentEmpty:
    if (atEnd)
      fail(o, "unexpected end of text");
    fail(o, "unexpected character '" + shown(s[o]) + "'");
  case kParseErrorObjectMissName:
    fail(o, "expected a string key");
  case kParseErrorObjectMissColon:
    fail(o, atEnd ? "unexpected end, expected ':'" : "expected ':'");
  case kParseErrorObjectMissCommaOrCurlyBracket:
    fail(o, atEnd ? "unexpected end, expected '}'" : "expected '}'");
  case kParseErrorArrayMissCommaOrSquareBracket:
    fail(o, atEnd ? "unexpected end, expected ']'" : "expected ']'");
  case kParseErrorNumberMissFraction:
  case kParseErrorNumberMissExponent:
    fail(o, "malformed number");
  case kParseErrorNumberTooBig:
    fail(o, "number too large");
  default:
    break;
  }
  // An error in a string: a lone low surrogate before it comes first.
  size_t lone = loneLowSurrogate(s, s.find('"', b.end), o);
  if (lone != std::string_view::npos)
    fail(lone, "unpaired surrogate");
  switch (code) {
  case kParseErrorStringMissQuotationMark: // the end, or a NUL byte
    if (atEnd)
      fail(o, "unterminated string");
    fail(o + 1, "control character in string");
  case kParseErrorStringEscapeInvalid: // at '\', or a control character
    if (s[o] != '\\')
      fail(o + 1, "control character in string");
    if (o + 1 == s.size())
      fail(o + 1, "unterminated string");
    fail(o + 2, "bad escape '\\" + shown(s[o + 1]) + "'");
  case kParseErrorStringUnicodeEscapeInvalidHex: { // at '\' of \uXXXX[\uXXXX]
    size_t p = hex4(s, o + 2) < 0 ? o + 2 : o + 8; // the first, or a low half
    if (p + 4 > s.size())
      fail(p, "truncated \\u escape");
    while (hexDigit(s[p]) >= 0)
      ++p;
    fail(p + 1, "bad \\u escape");
  }
  case kParseErrorStringUnicodeSurrogateInvalid: // at '\' of a high one
    fail(s.substr(o + 6, 2) == "\\u" ? o + 12 : o + 6, "unpaired surrogate");
  case kParseErrorStringInvalidEncoding:
    fail(o, "invalid UTF-8 in string");
  default:
    fail(o, "invalid JSON");
  }
}
} // namespace

Value parse(std::string_view text) {
  constexpr unsigned kFlags = rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseStopWhenDoneFlag;
  rapidjson::MemoryStream in(text.data(), text.size());
  Builder builder(text, in);
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = reader.Parse<kFlags>(in, builder);
  if (!ok)
    report(text, ok.Code(), ok.Offset(), builder);
  size_t after = skipSpace(text, in.Tell());
  if (after != text.size())
    fail(after, "unexpected text after the JSON value");
  return std::move(builder.root);
}

// RapidJSON's Writer escapes differently (\b, \f, upper-case hex): the
// files estc writes keep their bytes.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}

} // namespace json
} // namespace estc
