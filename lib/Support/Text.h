//===- Text.h - Generic text utilities: UTF-8, base64, decimals, URLs ----===//
//
// Byte-string helpers with no dependency: RFC 3629 UTF-8 validation (the
// graph files' proto3 strings, estc-serve's JSON strings), RFC 4648 base64
// (estc-serve's {"b64": ...}), floats as the fewest decimal digits that
// round-trip (TF Serving's JSON numbers), %XX decoding and ASCII
// case-insensitive comparison (estc-serve's paths).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_TEXT_H
#define ESTC_LIB_SUPPORT_TEXT_H

#include <optional>
#include <string>
#include <string_view>

namespace estc {
namespace text {

/// Whether `bytes` is well-formed UTF-8 (RFC 3629, as protobuf checks
/// proto3 strings): no overlong forms, no surrogates (U+D800..U+DFFF),
/// nothing above U+10FFFF, no truncated sequence. NUL is valid.
bool is_valid_utf8(std::string_view bytes);

/// RFC 4648 base64 (standard alphabet, "=" padding).
std::string base64_encode(std::string_view bytes);
/// Accepts input with or without "=" padding (as absl::Base64Unescape) and
/// returns nullopt on anything else: a character outside the alphabet, a
/// length no encoding has, nonzero bits after the last byte.
std::optional<std::string> base64_decode(std::string_view text);

/// A float in decimal: six significant digits ("%g", absl::StrCat's) when
/// they round-trip, the fewest that always do (max_digits10) otherwise; a
/// whole number without an exponent gets ".0". "0.5", "3.0", "1e+06",
/// "0.333333343"; "NaN", "Infinity", "-Infinity" (JavaScript's spelling).
std::string format_decimal(float value);
std::string format_decimal(double value);

/// `s` with every "%XX" (two hex digits) replaced by its byte; nothing else
/// changes ("+" stays "+", a lone "%" stays), as curl_easy_unescape.
std::string percent_decode(std::string_view s);

/// ASCII case-insensitive equality (other bytes compare exactly).
bool equals_ignore_case(std::string_view a, std::string_view b);

} // namespace text
} // namespace estc

#endif // ESTC_LIB_SUPPORT_TEXT_H
