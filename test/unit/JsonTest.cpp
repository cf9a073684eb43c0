//===- JsonTest.cpp - The strict JSON parser's errors --------------------===//

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

} // namespace
