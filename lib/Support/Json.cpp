//===- Json.cpp - The small JSON subset a safetensors header needs -------===//

#include "lib/Support/Json.h"

#include <cstdio>
#include <set>

namespace estc {
namespace json {

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
constexpr int kMaxDepth = 32;

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

class Parser {
public:
  explicit Parser(std::string_view s) : s(s) {}

  Value parseDocument() {
    Value v = parseValue(0);
    skipSpace();
    if (pos != s.size())
      fail("unexpected text after the JSON value");
    return v;
  }

private:
  std::string_view s;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string &what) const {
    throw ParseError("at byte " + std::to_string(pos) + ": " + what);
  }

  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool consume(char c) {
    skipSpace();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c))
      fail(pos < s.size()
               ? std::string("expected '") + c + "'"
               : std::string("unexpected end, expected '") + c + "'");
  }

  Value parseValue(int depth) {
    if (depth > kMaxDepth)
      fail("nested too deeply");
    skipSpace();
    if (pos >= s.size())
      fail("unexpected end of text");
    Value v;
    char c = s[pos];
    if (c == '{') {
      ++pos;
      v.kind = Value::Kind::Object;
      std::set<std::string> seen;
      if (consume('}'))
        return v;
      do {
        skipSpace();
        if (pos >= s.size() || s[pos] != '"')
          fail("expected a string key");
        std::string key = parseString();
        if (!seen.insert(key).second)
          fail("duplicate key " + quote(key));
        expect(':');
        v.fields.emplace_back(std::move(key), parseValue(depth + 1));
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos;
      v.kind = Value::Kind::Array;
      if (consume(']'))
        return v;
      do
        v.items.push_back(parseValue(depth + 1));
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::String;
      v.text = parseString();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Kind::Number;
      v.text = parseNumber();
    } else if (s.substr(pos, 4) == "true") {
      pos += 4;
      v.kind = Value::Kind::Bool;
      v.boolean = true;
    } else if (s.substr(pos, 5) == "false") {
      pos += 5;
      v.kind = Value::Kind::Bool;
    } else if (s.substr(pos, 4) == "null") {
      pos += 4;
    } else {
      fail("unexpected character '" + shown(c) + "'");
    }
    return v;
  }

  std::string parseNumber() {
    size_t start = pos;
    auto digits = [&] {
      size_t d = pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
      if (pos == d)
        fail("malformed number");
    };
    if (s[pos] == '-')
      ++pos;
    if (pos < s.size() && s[pos] == '0')
      ++pos;
    else
      digits();
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      digits();
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      digits();
    }
    return std::string(s.substr(start, pos - start));
  }

  unsigned hex4() {
    if (pos + 4 > s.size())
      fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        fail("bad \\u escape");
    }
    return v;
  }

  static void appendUtf8(std::string &out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string parseString() {
    ++pos; // opening quote
    std::string out;
    for (;;) {
      if (pos >= s.size())
        fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s[pos++]);
      if (c == '"')
        return out;
      if (c < 0x20)
        fail("control character in string");
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (pos >= s.size())
        fail("unterminated string");
      char e = s[pos++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00) {
          if (s.substr(pos, 2) != "\\u")
            fail("unpaired surrogate");
          pos += 2;
          unsigned lo = hex4();
          if (lo < 0xDC00 || lo >= 0xE000)
            fail("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          fail("unpaired surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        fail("bad escape '\\" + shown(e) + "'");
      }
    }
  }
};
} // namespace

Value parse(std::string_view text) { return Parser(text).parseDocument(); }

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
