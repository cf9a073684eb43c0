//===- JsonTest.cpp - json::parse (RapidJSON) and json::quote ------------===//

#include "lib/Support/Json.h"

#include <gtest/gtest.h>

using namespace estc;

namespace {

std::string errorOf(std::string_view text) {
  try {
    json::parse(text);
  } catch (const json::ParseError &e) {
    return e.what();
  }
  return "";
}

TEST(JsonTest, ParsesValuesInOrder) {
  json::Value v = json::parse(R"({"b": [1, "x\u00e9"], "a": null})");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.fields.size(), 2u);
  EXPECT_EQ(v.fields[0].first, "b");
  EXPECT_EQ(v.fields[0].second.items[1].text, "x\xc3\xa9");
  EXPECT_EQ(v.fields[0].second.items[0].asNonNegativeInt(), 1);
}

// Found by fuzzing (test/fuzz/regressions/json): the character at fault
// was quoted raw, so a newline after a backslash made the error two lines.
TEST(JsonTest, ErrorsShowControlCharactersEscaped) {
  // The backslash, then the newline after it.
  EXPECT_EQ(errorOf("\"\\\n\""), "at byte 3: bad escape '\\\\x0a'");
  EXPECT_EQ(errorOf("\x01"), "at byte 0: unexpected character '\\x01'");
  EXPECT_EQ(errorOf("\"\\q\""), "at byte 3: bad escape '\\q'");
}

// The messages and offsets of estc's own parser, which RapidJSON replaced
// (callers and files quote them).
TEST(JsonTest, ErrorsNameTheByteAndTheProblem) {
  EXPECT_EQ(errorOf(""), "at byte 0: unexpected end of text");
  EXPECT_EQ(errorOf("{not json"), "at byte 1: expected a string key");
  EXPECT_EQ(errorOf("{\"a\":1,}"), "at byte 7: expected a string key");
  EXPECT_EQ(errorOf("{\"a\" 1}"), "at byte 5: expected ':'");
  EXPECT_EQ(errorOf("{\"a\":1"), "at byte 6: unexpected end, expected '}'");
  EXPECT_EQ(errorOf("[1 2]"), "at byte 3: expected ']'");
  EXPECT_EQ(errorOf("[1,]"), "at byte 3: unexpected character ']'");
  EXPECT_EQ(errorOf("{} x"), "at byte 3: unexpected text after the JSON value");
  EXPECT_EQ(errorOf("tru"), "at byte 0: unexpected character 't'");
  EXPECT_EQ(errorOf("-x"), "at byte 1: malformed number");
  EXPECT_EQ(errorOf("1."), "at byte 2: malformed number");
  EXPECT_EQ(errorOf("1e+"), "at byte 3: malformed number");
  EXPECT_EQ(errorOf("\"abc"), "at byte 4: unterminated string");
  EXPECT_EQ(errorOf(std::string("\"a\0\"", 4)),
            "at byte 3: control character in string");
  EXPECT_EQ(errorOf("\"\\u12"), "at byte 3: truncated \\u escape");
  EXPECT_EQ(errorOf("\"\\u12x4\""), "at byte 6: bad \\u escape");
  EXPECT_EQ(errorOf("\"\\ud800\""), "at byte 7: unpaired surrogate");
  EXPECT_EQ(errorOf("\"\\ud800\\u0041\""), "at byte 13: unpaired surrogate");
  EXPECT_EQ(errorOf("{\"a\":1,\"a\":2}"), "at byte 10: duplicate key \"a\"");
}

// What RapidJSON 1.1.0 accepts and estc refuses: a lone low surrogate (it
// decodes to invalid UTF-8), the first error of its string; nesting deeper
// than 32 levels.
TEST(JsonTest, RefusesLoneSurrogatesAndDeepNesting) {
  EXPECT_EQ(errorOf("\"a\\udc00\\q\""), "at byte 8: unpaired surrogate");
  EXPECT_EQ(errorOf("{\"\\udc00\":1}"), "at byte 8: unpaired surrogate");
  std::string deep(33, '[');
  EXPECT_EQ(errorOf(deep + "1"), "at byte 33: nested too deeply");
  EXPECT_EQ(errorOf(deep + std::string(33, ']')), "");
  std::string object;
  for (int i = 0; i < 33; ++i)
    object += "{\"k\": ";
  EXPECT_EQ(errorOf(object + "1"), "at byte 197: nested too deeply");
}

// RapidJSON checks UTF-8 (estc's parser passed any byte through).
TEST(JsonTest, RefusesInvalidUtf8) {
  EXPECT_EQ(errorOf("[\"ok\", \"a\xff\"]"),
            "at byte 9: invalid UTF-8 in string");
  EXPECT_EQ(json::parse("\"\xf0\x9f\x98\x80\"").text, "\xf0\x9f\x98\x80");
}

// Numbers keep their literal: 64-bit offsets are exact.
TEST(JsonTest, NumbersKeepTheirText) {
  json::Value v =
      json::parse("[9007199254740993, 1.50, -0, 1E+2, 18446744073709551616]");
  ASSERT_EQ(v.items.size(), 5u);
  EXPECT_EQ(v.items[0].asNonNegativeInt(), 9007199254740993);
  EXPECT_EQ(v.items[1].text, "1.50");
  EXPECT_EQ(v.items[2].text, "-0");
  EXPECT_EQ(v.items[3].text, "1E+2");
  EXPECT_EQ(v.items[4].text, "18446744073709551616");
  EXPECT_EQ(v.items[4].asNonNegativeInt(), std::nullopt);
  // RapidJSON's limit (estc's parser took any literal).
  EXPECT_EQ(errorOf("[1e400]"), "at byte 1: number too large");
}

// quote's bytes are those of the files estc wrote before RapidJSON.
TEST(JsonTest, QuoteEscapesAsBefore) {
  EXPECT_EQ(json::quote("\b\f\x1f\"\\\n\x7f\xc3\xa9"),
            "\"\\u0008\\u000c\\u001f\\\"\\\\\\n\x7f\xc3\xa9\"");
  EXPECT_EQ(json::parse(json::quote(std::string("a\0b", 3))).text,
            std::string("a\0b", 3));
}

} // namespace
