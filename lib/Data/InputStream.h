//===- InputStream.h - Reading a data file, plain or compressed ---------===//
//
// The byte stream under every file source of the input pipeline
// (TFRecordDataset, TextLineDataset, CsvDataset): a file read through a
// buffer, optionally through zlib ("GZIP": gzip framing, "ZLIB": zlib
// framing, "": none; TF's compression_type strings). Positions are offsets
// in the uncompressed stream, so a reader can report "file: byte N" and an
// iterator can save its position and seek back to it after a restart (a
// compressed file is re-inflated up to the position).
//
// A GZIP file may hold several gzip members one after the other (what
// `cat a.gz b.gz` makes); they read as one stream, as in TF and gzip(1).
// A ZLIB file holds one zlib stream: bytes after its end are an error.
//
// Errors throw DataError with one line: "<file>: <problem>" (cannot open,
// corrupt GZIP data at byte N, truncated GZIP stream, unknown compression
// type, ...). Byte offsets in messages about compressed data count bytes
// of the file (for corrupt data: how far zlib had read when it saw the
// fault); every other offset is in the uncompressed stream.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_INPUTSTREAM_H
#define ESTC_LIB_DATA_INPUTSTREAM_H

#include "lib/Data/Idx.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace estc {
namespace data {

enum class Compression { None, Gzip, Zlib };

/// "" / "NONE" -> None, "GZIP", "ZLIB"; DataError naming anything else.
Compression parse_compression(const std::string &type);
/// "", "GZIP" or "ZLIB": TF's name of a compression.
const char *compression_name(Compression compression);

class InputStream {
public:
  /// Opens `path`; DataError when it cannot be opened. `buffer_size`: bytes
  /// read from the file at a time (TF's buffer_size; 256 KiB by default).
  InputStream(std::string path, Compression compression,
              size_t buffer_size = 256 * 1024);
  ~InputStream();
  InputStream(const InputStream &) = delete;
  InputStream &operator=(const InputStream &) = delete;

  const std::string &path() const { return path_; }
  Compression compression() const { return compression_; }
  /// Offset of the next byte in the uncompressed stream.
  uint64_t offset() const { return offset_; }

  /// Reads up to n bytes into `out` (replacing its contents); returns the
  /// number read: fewer than n only at the end of the stream. `out` grows
  /// with the bytes there are, so a huge n costs nothing by itself.
  size_t read(size_t n, std::string &out);
  /// Reads up to n bytes into dst[0, n); returns the number read: fewer
  /// than n only at the end of the stream.
  size_t read(char *dst, size_t n);
  /// Appends bytes up to and including the next '\n' (or to the end) to
  /// `out`, which it clears first; false at the end of the stream with
  /// nothing read.
  bool read_line(std::string &out);
  /// Moves to uncompressed offset `offset` (forward or back); DataError
  /// when the stream is shorter.
  void seek(uint64_t offset);

  /// The size of the uncompressed stream when it is known without reading
  /// it: a plain file's current size (fstat); nullopt when compressed.
  std::optional<uint64_t> known_size() const;

private:
  /// Refills the (fully consumed) buffer; false at the end of the stream.
  bool fill();
  bool fillPlain();
  bool fillCompressed();
  [[noreturn]] void fail(const std::string &what) const;

  std::string path_;
  Compression compression_;
  size_t bufferSize_;
  uint64_t offset_ = 0; // of buffer_[bufferPos_]
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // Uncompressed bytes: buffer_[bufferPos_, bufferEnd_) are not yet
  // returned.
  std::unique_ptr<char[]> buffer_;
  size_t bufferPos_ = 0;
  size_t bufferEnd_ = 0;
};

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_INPUTSTREAM_H
