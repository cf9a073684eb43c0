//===- Crc32cTest.cpp - CRC-32C known answers and TF's masking ----------===//

#include "lib/Support/Crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace estc;

TEST(Crc32c, KnownAnswers) {
  EXPECT_EQ(crc32c::value("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c::value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c::value(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(crc32c::value(""), 0u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c::value(ascending), 0x46DD794Eu);  // RFC 3720 B.4
  EXPECT_EQ(crc32c::value(descending), 0x113FDB5Cu); // RFC 3720 B.4
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "hello world, this is a longer string for slicing";
  for (size_t cut = 0; cut <= s.size(); ++cut)
    EXPECT_EQ(crc32c::extend(crc32c::value(s.data(), cut), s.data() + cut,
                             s.size() - cut),
              crc32c::value(s));
}

TEST(Crc32c, HardwareMatchesPortable) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 1000, 4099}) {
    std::string s(n, '\0');
    for (char &c : s)
      c = static_cast<char>(rng());
    for (size_t offset = 0; offset < std::min<size_t>(n, 8); ++offset)
      EXPECT_EQ(crc32c::extend(0, s.data() + offset, n - offset),
                crc32c::extendPortable(0, s.data() + offset, n - offset));
  }
}

TEST(Crc32c, Mask) {
  uint32_t crc = crc32c::value("foo");
  EXPECT_NE(crc32c::mask(crc), crc);
  EXPECT_NE(crc32c::mask(crc32c::mask(crc)), crc);
  EXPECT_EQ(crc32c::unmask(crc32c::mask(crc)), crc);
  EXPECT_EQ(crc32c::unmask(crc32c::unmask(crc32c::mask(crc32c::mask(crc)))),
            crc);
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8, as TensorFlow defines it.
  EXPECT_EQ(crc32c::mask(0), 0xa282ead8u);
  EXPECT_EQ(crc32c::mask(0x00008000u), 0xa282ead9u);
  EXPECT_EQ(crc32c::mask(0xE3069283u),
            ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
}
