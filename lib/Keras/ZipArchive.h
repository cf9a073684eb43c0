//===- ZipArchive.h - Zip archives in memory, through libzip (internal) --===//
//
// A `.keras` file is a zip archive (config.json, metadata.json,
// model.weights.h5, stored uncompressed by Keras). readZip() reads every
// entry of an archive held in memory with libzip (Debian's libzip-dev;
// docs/design/keras.md says why libzip), checking each entry's CRC-32;
// writeZip() makes an archive of entries, stored as Keras stores them.
// Errors are ZipError, one line without the file name (the caller adds it).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_ZIPARCHIVE_H
#define ESTC_LIB_KERAS_ZIPARCHIVE_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace estc {
namespace keras {

/// A corrupt or truncated archive, or one libzip cannot read or write.
class ZipError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An archive's entries in their order: (name, uncompressed bytes).
using ZipEntries = std::vector<std::pair<std::string, std::string>>;

/// Every entry of the archive `bytes`. An entry larger than `maxEntryBytes`
/// uncompressed is refused (a bound for untrusted archives).
ZipEntries readZip(std::string_view bytes, uint64_t maxEntryBytes = uint64_t(1)
                                                                    << 36);

/// The bytes of an archive holding `entries` in order, stored (method 0).
std::string writeZip(const ZipEntries &entries);

} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_ZIPARCHIVE_H
