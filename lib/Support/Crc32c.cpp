//===- Crc32c.cpp - CRC-32C (Castagnoli) ---------------------------------===//

#include "lib/Support/Crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ESTC_CRC32C_HW 1
#include <nmmintrin.h>
#endif

namespace estc {
namespace crc32c {

namespace {
constexpr uint32_t kPoly = 0x82F63B78u; // reflected Castagnoli polynomial

using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables makeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (int s = 1; s < 8; ++s)
    for (uint32_t i = 0; i < 256; ++i)
      t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

const Tables &tables() {
  static const Tables t = makeTables();
  return t;
}

uint32_t loadLE32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

// Raw (not pre/post-inverted) slice-by-8 update.
uint32_t updatePortable(uint32_t l, const uint8_t *p, size_t n) {
  const Tables &t = tables();
  while (n >= 8) {
    uint32_t a = loadLE32(p) ^ l;
    uint32_t b = loadLE32(p + 4);
    l = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^
        t[4][a >> 24] ^ t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^
        t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
    p += 8;
    n -= 8;
  }
  while (n--)
    l = t[0][(l ^ *p++) & 0xff] ^ (l >> 8);
  return l;
}

#ifdef ESTC_CRC32C_HW
__attribute__((target("sse4.2")))
uint32_t updateHardware(uint32_t l, const uint8_t *p, size_t n) {
  uint64_t l64 = l;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    l64 = _mm_crc32_u64(l64, v);
    p += 8;
    n -= 8;
  }
  uint32_t l32 = static_cast<uint32_t>(l64);
  while (n--)
    l32 = _mm_crc32_u8(l32, *p++);
  return l32;
}

bool hasHardware() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif
} // namespace

uint32_t extendPortable(uint32_t crc, const void *data, size_t n) {
  return ~updatePortable(~crc, static_cast<const uint8_t *>(data), n);
}

uint32_t extend(uint32_t crc, const void *data, size_t n) {
#ifdef ESTC_CRC32C_HW
  if (hasHardware())
    return ~updateHardware(~crc, static_cast<const uint8_t *>(data), n);
#endif
  return extendPortable(crc, data, n);
}

} // namespace crc32c
} // namespace estc
