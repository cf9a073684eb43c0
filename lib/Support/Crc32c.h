//===- Crc32c.h - CRC-32C (Castagnoli) and TensorFlow's masked CRC ------===//
//
// CRC-32C as used by TFRecord/event files and by estc checkpoints: the
// reflected Castagnoli polynomial 0x82F63B78, initial value and final xor
// 0xFFFFFFFF ("123456789" -> 0xE3069283). Hardware CRC32 instructions are
// used when the CPU has SSE4.2, slice-by-8 tables otherwise; both give the
// same values.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_CRC32C_H
#define ESTC_LIB_SUPPORT_CRC32C_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace estc {
namespace crc32c {

/// The CRC-32C of data[0, n) appended to data whose CRC-32C is `crc`
/// (extend(0, ...) is the CRC of the data alone), like TF's crc32c::Extend.
uint32_t extend(uint32_t crc, const void *data, size_t n);

/// The CRC-32C of data[0, n).
inline uint32_t value(const void *data, size_t n) { return extend(0, data, n); }
inline uint32_t value(std::string_view bytes) {
  return extend(0, bytes.data(), bytes.size());
}

/// extend() with the portable slice-by-8 tables only (for tests).
uint32_t extendPortable(uint32_t crc, const void *data, size_t n);

/// TensorFlow's masked CRC, stored in TFRecord framing so that a CRC of
/// data that itself holds CRCs stays well distributed.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr uint32_t mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}
constexpr uint32_t unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

/// A checksum as errors print it: eight lowercase hex digits.
inline std::string hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

} // namespace crc32c
} // namespace estc

#endif // ESTC_LIB_SUPPORT_CRC32C_H
