//===- TextTest.cpp - lib/Support/Text.h: UTF-8, base64, decimals, URLs --===//

#include "lib/Support/Text.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

using namespace estc;

namespace {
std::string bytes(std::initializer_list<unsigned> list) {
  std::string s;
  for (unsigned b : list)
    s += static_cast<char>(b);
  return s;
}
} // namespace

// RFC 3629, as protobuf checks proto3 strings (GraphIO) and estc-serve
// decides whether a string output is written as text or {"b64": ...}.
TEST(TextTest, Utf8AcceptsExactlyRfc3629) {
  using text::is_valid_utf8;
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8(std::string("a\0b", 3)));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  // The first and last code point of each length.
  for (const std::string &s :
       {bytes({0x7f}), bytes({0xc2, 0x80}), bytes({0xdf, 0xbf}),
        bytes({0xe0, 0xa0, 0x80}), bytes({0xed, 0x9f, 0xbf}),
        bytes({0xee, 0x80, 0x80}), bytes({0xef, 0xbf, 0xbf}),
        bytes({0xf0, 0x90, 0x80, 0x80}), bytes({0xf4, 0x8f, 0xbf, 0xbf})})
    EXPECT_TRUE(is_valid_utf8(s));
  for (const std::string &s : {
           bytes({0x80}),                   // a lone continuation byte
           bytes({0xc0, 0x80}),             // overlong NUL
           bytes({0xc1, 0xbf}),             // overlong
           bytes({0xe0, 0x9f, 0xbf}),       // overlong
           bytes({0xf0, 0x8f, 0xbf, 0xbf}), // overlong
           bytes({0xed, 0xa0, 0x80}),       // surrogate U+D800
           bytes({0xed, 0xbf, 0xbf}),       // surrogate U+DFFF
           bytes({0xf4, 0x90, 0x80, 0x80}), // U+110000
           bytes({0xf5, 0x80, 0x80, 0x80}),
           bytes({0xff}),
           bytes({0xc3}),             // truncated
           bytes({0xe2, 0x82}),       // truncated
           bytes({0xf0, 0x9f, 0x98}), // truncated
           bytes({0xc3, 0x41}),       // not a continuation
           bytes({'o', 'k', 0xe2, 0x28, 0xa1}),
       })
    EXPECT_FALSE(is_valid_utf8(s)) << testing::PrintToString(s);
}

TEST(TextTest, Base64) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    std::string enc = text::base64_encode(s);
    EXPECT_EQ(text::base64_decode(enc), s);
    // Without padding too, as absl::Base64Unescape.
    while (!enc.empty() && enc.back() == '=')
      enc.pop_back();
    EXPECT_EQ(text::base64_decode(enc), s);
  }
  EXPECT_EQ(text::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(text::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(text::base64_encode(bytes({0xff, 0xfe})), "//4=");
  EXPECT_FALSE(text::base64_decode("Zm9v!"));
  EXPECT_FALSE(text::base64_decode("Z"));
  EXPECT_FALSE(text::base64_decode("Zm8==="));
  EXPECT_FALSE(text::base64_decode("Zm9=")); // nonzero bits after "fo"
}

TEST(TextTest, DecimalsRoundTripWithTheFewestDigits) {
  using text::format_decimal;
  EXPECT_EQ(format_decimal(0.5f), "0.5");
  EXPECT_EQ(format_decimal(3.0f), "3.0");
  EXPECT_EQ(format_decimal(0.1f), "0.1");
  EXPECT_EQ(format_decimal(1.0f / 3), "0.333333343");
  EXPECT_EQ(format_decimal(1.0 / 3), "0.33333333333333331");
  EXPECT_EQ(format_decimal(9000000.0f), "9e+06");
  EXPECT_EQ(format_decimal(std::numeric_limits<float>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_decimal(-std::numeric_limits<float>::infinity()),
            "-Infinity");
  EXPECT_EQ(format_decimal(std::numeric_limits<double>::infinity()),
            "Infinity");
}

TEST(TextTest, PercentDecodeAndCaseInsensitiveEquality) {
  EXPECT_EQ(text::percent_decode("a%20b%2Fc%2fd"), "a b/c/d");
  // Nothing else changes: '+', a lone or short '%', a bad hex digit.
  EXPECT_EQ(text::percent_decode("a+b%"), "a+b%");
  EXPECT_EQ(text::percent_decode("%4"), "%4");
  EXPECT_EQ(text::percent_decode("%4g%41"), "%4gA");
  EXPECT_EQ(text::percent_decode("%00"), std::string(1, '\0'));
  EXPECT_TRUE(text::equals_ignore_case("PrEdIcT", "predict"));
  EXPECT_FALSE(text::equals_ignore_case("predict", "predic"));
  EXPECT_FALSE(text::equals_ignore_case("caf\xc3\xa9", "CAF\xc3\x89"));
}
