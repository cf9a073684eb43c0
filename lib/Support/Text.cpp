//===- Text.cpp - Generic text utilities: UTF-8, base64, decimals, URLs --===//

#include "lib/Support/Text.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace estc {
namespace text {

bool is_valid_utf8(std::string_view bytes) {
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size(), i = 0;
  auto continuation = [&](size_t k, unsigned char lo = 0x80,
                          unsigned char hi = 0xBF) {
    return i + k < n && p[i + k] >= lo && p[i + k] <= hi;
  };
  while (i < n) {
    unsigned char c = p[i];
    size_t len = 0;
    if (c < 0x80)
      len = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      len = continuation(1) ? 2 : 0;
    else if (c >= 0xE0 && c <= 0xEF)
      // E0: no overlong form (A0..BF); ED: no surrogate (80..9F).
      len = continuation(1, c == 0xE0 ? 0xA0 : 0x80, c == 0xED ? 0x9F : 0xBF) &&
                    continuation(2)
                ? 3
                : 0;
    else if (c >= 0xF0 && c <= 0xF4)
      // F0: no overlong form (90..BF); F4: nothing above U+10FFFF (80..8F).
      len = continuation(1, c == 0xF0 ? 0x90 : 0x80, c == 0xF4 ? 0x8F : 0xBF) &&
                    continuation(2) && continuation(3)
                ? 4
                : 0;
    if (len == 0)
      return false;
    i += len;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) |
                 (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2)
      n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  // Padding: none, or up to a multiple of 4 with at most two '='.
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=')
    ++pad;
  if (pad && text.size() % 4 != 0)
    return std::nullopt;
  std::string_view body = text.substr(0, text.size() - pad);
  if (body.size() % 4 == 1)
    return std::nullopt;
  std::string out;
  out.reserve(body.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : body) {
    int v = value(c);
    if (v < 0)
      return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  // The bits left over must be zero (a canonical encoding).
  if (bits && (acc & ((1u << bits) - 1)) != 0)
    return std::nullopt;
  return out;
}

namespace {
template <typename T> std::string formatFloating(T value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return std::signbit(value) ? "-Infinity" : "Infinity";
  // Six significant digits (absl::StrCat's), the full precision when those
  // do not round-trip.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(value));
  T back;
  if constexpr (std::is_same_v<T, float>)
    back = std::strtof(buf, nullptr);
  else
    back = std::strtod(buf, nullptr);
  if (back != value)
    std::snprintf(buf, sizeof buf, "%.*g", std::numeric_limits<T>::max_digits10,
                  static_cast<double>(value));
  std::string s = buf;
  if (s.find('.') == std::string::npos && s.find('e') == std::string::npos)
    s += ".0";
  return s;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

char asciiLower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
} // namespace

std::string format_decimal(float value) { return formatFloating(value); }
std::string format_decimal(double value) { return formatFloating(value); }

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < s.size() && (hi = hexValue(s[i + 1])) >= 0 &&
        (lo = hexValue(s[i + 2])) >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (asciiLower(a[i]) != asciiLower(b[i]))
      return false;
  return true;
}

} // namespace text
} // namespace estc
